/*
 * ipath.c: the path of an inode, found in the metadata store, for
 * messages that must name a file (the chunks `lsmfs-disk remove
 * --evacuate` could not read).  Only directories know their parent (the
 * inode record's parent field), so the names of the other inodes come
 * from one scan of every directory entry; each directory on the way up
 * is then named by a scan of its parent's entries.  Work proportional to
 * the directory entries: for rare reports, never on a hot path.
 */
#include "names.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct named {
	uint64_t ino, parent;
	char *name; /* NULL: not found yet */
};

static int cmp_named(const void *a, const void *b)
{
	uint64_t x = ((const struct named *)a)->ino, y = ((const struct named *)b)->ino;
	return x < y ? -1 : x > y;
}

static struct named *find(struct named *v, size_t n, uint64_t ino)
{
	struct named key = {.ino = ino};
	return bsearch(&key, v, n, sizeof(*v), cmp_named);
}

/* Scan the entries in [lo, hi); each whose inode is in want (sorted) and
 * still unnamed gets its parent and name. */
static int scan(struct fs *fs, const uint8_t *lo, size_t ll, const uint8_t *hi, size_t hl,
		struct named *want, size_t n)
{
	struct store_iter_options io = {.lower = lo, .lower_len = ll, .upper = hi, .upper_len = hl};
	struct store_iter *it;
	int rc = store_iter_new(fs->st, &io, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it) && !rc; store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		uint64_t child;
		uint8_t type;
		if (kl <= 17 || kl > 17 + NAME_MAX_BYTES || dirent_val_decode(v, vl, &child, &type))
			continue; /* damage: fsck.lsmfs reports it */
		struct named *w = find(want, n, child);
		if (!w || w->name)
			continue;
		if (!(w->name = strndup((const char *)k + 17, kl - 17)))
			rc = -ENOMEM;
		w->parent = get_be64(k + 1);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

/* Name directory dir (its parent from its inode record, its name from the
 * parent's entries) into *out, which holds dir and no name. */
static int name_dir(struct fs *fs, uint64_t dir, struct named *out)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_inode(k, dir);
	void *v;
	size_t vl;
	int rc = store_get(fs->st, NULL, k, kl, &v, &vl);
	if (rc)
		return rc;
	struct inode_rec r;
	rc = inode_rec_decode(v, vl, &r);
	free(v);
	if (rc)
		return rc;
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	size_t ll = key_dirent_prefix(lo, r.parent), hl = key_dirent_prefix(hi, r.parent + 1);
	return scan(fs, lo, ll, hi, hl, out, 1);
}

/* The path of w, built backwards into buf; dirs caches named directories. */
static char *build(struct fs *fs, const struct named *w, struct named **dirs, size_t *ndirs)
{
	char buf[4096];
	size_t at = sizeof(buf) - 1;
	buf[at] = '\0';
	const struct named *cur = w;
	for (int depth = 0; cur && cur->ino != LSMFS_ROOT_INO; depth++) {
		size_t len = cur->name ? strlen(cur->name) : 0;
		if (!cur->name || depth > 1024 || len + 1 > at) {
			char msg[128];
			snprintf(msg, sizeof(msg), "inode %" PRIu64 " (%s)", w->ino,
				 cur->name ? "its path is too long" : "no path from the root found");
			return strdup(msg);
		}
		at -= len;
		memcpy(buf + at, cur->name, len);
		buf[--at] = '/';
		uint64_t up = cur->parent;
		cur = NULL;
		if (up == LSMFS_ROOT_INO)
			break;
		for (size_t i = 0; i < *ndirs; i++)
			if ((*dirs)[i].ino == up)
				cur = &(*dirs)[i];
		if (!cur) {
			struct named *g = realloc(*dirs, (*ndirs + 1) * sizeof(**dirs));
			if (!g)
				return NULL;
			*dirs = g;
			struct named *d = &g[(*ndirs)++];
			*d = (struct named){.ino = up};
			if (name_dir(fs, up, d)) {
				free(d->name); /* a scan cut short: no name */
				d->name = NULL;
			}
			cur = d;
		}
	}
	if (at == sizeof(buf) - 1)
		buf[--at] = '/';
	return strdup(buf + at);
}

int ipath_find(struct fs *fs, const uint64_t *inos, size_t n, char **paths)
{
	for (size_t i = 0; i < n; i++)
		paths[i] = NULL;
	if (!n)
		return 0;
	struct named *want = calloc(n, sizeof(*want)), *dirs = NULL;
	size_t ndirs = 0, nw = 0;
	if (!want)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		want[i].ino = inos[i];
	qsort(want, n, sizeof(*want), cmp_named);
	for (size_t i = 0; i < n; i++) /* each inode once */
		if (!nw || want[nw - 1].ino != want[i].ino)
			want[nw++] = want[i];
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	lo[0] = KEY_DIRENT;
	hi[0] = KEY_DIRENT + 1;
	int rc = scan(fs, lo, 1, hi, 1, want, nw);
	for (size_t i = 0; i < n && !rc; i++) {
		struct named *w = find(want, nw, inos[i]);
		struct named root = {.ino = LSMFS_ROOT_INO};
		if (!(paths[i] = build(fs, inos[i] == LSMFS_ROOT_INO ? &root : w, &dirs, &ndirs)))
			rc = -ENOMEM;
	}
	for (size_t i = 0; i < nw; i++)
		free(want[i].name);
	for (size_t i = 0; i < ndirs; i++)
		free(dirs[i].name);
	free(want);
	free(dirs);
	if (rc)
		for (size_t i = 0; i < n; i++) {
			free(paths[i]);
			paths[i] = NULL;
		}
	return rc;
}
