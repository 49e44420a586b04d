/*
 * passes.c: the checks, over the model load.c built and over the disks.
 *   1 store: checksums of every table, manifest and commit log;
 *   2 inodes: records sane for their type, data keys agree with them;
 *   3 directories: root, dangling entries, one parent per directory,
 *     reachability from the root;
 *   4 link counts;
 *   5 data and disks: section map, disk records, chunk files.
 */
#include "fsck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct lines {
	char *buf;
	size_t len;
};

/* store_verify tells findings and counts alike; they are shown together,
 * under one problem when it says the store is damaged. */
static void store_line(void *ctx, const char *line)
{
	struct lines *l = ctx;
	size_t n = strlen(line);
	char *g = realloc(l->buf, l->len + n + 8);
	if (!g)
		return;
	l->buf = g;
	l->len += (size_t)sprintf(l->buf + l->len, "    %s\n", line);
}

static void salvage_loss(void *ctx, const struct store_salvage_loss *l)
{
	(void)ctx;
	char from[400], to[400];
	fsck_key_describe(l->from, l->from_len, from, sizeof(from));
	fsck_key_describe(l->to, l->to_len, to, sizeof(to));
	printf("    lost: keys from %s to %s (%s)\n", from, to, l->why);
}

static void salvage_line(void *ctx, const char *line)
{
	(void)ctx;
	printf("    %s\n", line);
}

static void quiet_line(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

int fsck_pass1_store(struct fsck *f)
{
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	struct lines l = {0};
	int rc = store_verify(f->ds->meta_dir, &so, store_line, &l);
	if (rc == -EUCLEAN) {
		if (fsck_problem(f, PR_STORE_DAMAGED,
				 "%s: the metadata store is damaged:\n%s    Salvage what reads",
				 f->ds->meta_dir, l.buf ? l.buf : "")) {
			/* Every entry that reads is kept; each range lost is
			 * named, and the passes below mend what its loss
			 * left behind (dangling entries, unattached inodes,
			 * ownerless chunks). */
			int s = store_salvage(f->ds->meta_dir, &so, salvage_loss, salvage_line, f);
			fsck_repaired(f, s);
			if (s == 0) {
				rc = store_verify(f->ds->meta_dir, &so, quiet_line, NULL);
				if (rc == -EUCLEAN)
					fsck_problem(f, PR_STORE_UNREADABLE,
						     "%s: still damaged after salvage (a damaged commit log is not salvaged)",
						     f->ds->meta_dir);
			}
		}
	} else if (rc) {
		fsck_problem(f, PR_STORE_UNREADABLE, "%s: verifying the metadata store: %s",
			     f->ds->meta_dir, strerror(-rc));
	} else if (f->verbose && l.buf) {
		fputs(l.buf, stdout);
	}
	free(l.buf);
	return rc;
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	default: return "inode of no known type";
	}
}

static bool valid_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return true;
	default:
		return false;
	}
}

static void check_inode(struct fsck *f, struct fsck_inode *in)
{
	uint64_t ino = in->ino;
	if (!in->rec_ok) {
		/* a stub: keys name an inode that has no record (or a bad one,
		 * reported while loading) */
		if (in->inline_len >= 0 || in->nchunks || in->xattrs || in->orphan)
			fsck_problem(f, PR_KEY_NO_INODE,
				     "inode %" PRIu64 ": data, chunk, xattr or orphan keys without an inode record",
				     ino);
		return;
	}
	const struct inode_rec *r = &in->rec;
	const char *tn = type_name(r->mode);
	if (!valid_type(r->mode))
		fsck_problem(f, PR_INODE_BAD_TYPE, "inode %" PRIu64 ": mode %o has no valid file type",
			     ino, (unsigned)r->mode);
	if (r->flags & ~(uint8_t)(INODE_FLAG_CHUNKED | INODE_FLAG_XATTR))
		fsck_problem(f, PR_INODE_BAD_FLAGS, "inode %" PRIu64 ": unknown flags %#x", ino,
			     (unsigned)r->flags);
	if (in->xattrs && !(r->flags & INODE_FLAG_XATTR) &&
	    fsck_problem(f, PR_XATTR_FLAG, "inode %" PRIu64 " (%s) has xattrs but not the xattr flag",
			 ino, tn)) {
		in->rec.flags |= INODE_FLAG_XATTR;
		fsck_repaired(f, fsck_put_inode(f, in));
	}
	if (S_ISREG(r->mode)) {
		f->files++;
		f->bytes += r->size;
		if (r->flags & INODE_FLAG_CHUNKED) {
			if (in->inline_len >= 0)
				fsck_problem(f, PR_INLINE_AND_CHUNKS,
					     "inode %" PRIu64 ": chunked file with inline data as well", ino);
		} else {
			if (in->nchunks)
				fsck_problem(f, PR_INLINE_AND_CHUNKS,
					     "inode %" PRIu64 ": inline file with %" PRIu64 " chunk records",
					     ino, in->nchunks);
			if (in->inline_len > (int64_t)r->size &&
			    fsck_problem(f, PR_INLINE_TOO_LONG,
					 "inode %" PRIu64 ": size %" PRIu64 " but %" PRId64
					 " bytes of inline data", ino, r->size, in->inline_len)) {
				/* bytes past the size are never read: cut them */
				fsck_repaired(f, fsck_trim_inline(f, ino, r->size));
				in->inline_len = (int64_t)r->size;
			}
			if (r->size > f->info.inline_max)
				fsck_problem(f, PR_INLINE_OVER_LIMIT,
					     "inode %" PRIu64 ": inline file of %" PRIu64
					     " bytes, over the inline limit %u", ino, r->size,
					     f->info.inline_max);
		}
	} else if (S_ISLNK(r->mode)) {
		f->others++;
		if (in->inline_len != (int64_t)r->size || r->size == 0)
			fsck_problem(f, PR_SYMLINK_TARGET,
				     "inode %" PRIu64 ": symlink of size %" PRIu64 " with a %" PRId64
				     "-byte target", ino, r->size, in->inline_len);
		if (in->nchunks)
			fsck_problem(f, PR_DATA_ON_NONFILE, "inode %" PRIu64 " (%s) has chunk records",
				     ino, tn);
	} else {
		if (S_ISDIR(r->mode))
			f->dirs++;
		else
			f->others++;
		if (in->inline_len >= 0 || in->nchunks)
			fsck_problem(f, PR_DATA_ON_NONFILE, "inode %" PRIu64 " (%s) has data keys", ino,
				     tn);
	}
	if (in->orphan && r->nlink > 0) {
		if (fsck_problem(f, PR_ORPHAN_LINKED,
				 "inode %" PRIu64 " is on the orphan list but has %u links", ino,
				 r->nlink)) {
			uint8_t k[KEY_MAX];
			fsck_repaired(f, fsck_del_key(f, k, key_orphan(k, ino)));
			in->orphan = false;
		}
	} else if (in->orphan)
		fsck_problem(f, PR_ORPHAN_PENDING,
			     "inode %" PRIu64 " (%s) is an orphan a crash left behind; the next mount reclaims it",
			     ino, tn);
}

/* The inode counter must lie above every inode in use, or the daemon
 * would hand out a number twice. */
static void check_counter(struct fsck *f)
{
	uint64_t max = LSMFS_LOST_FOUND_INO;
	for (size_t i = 0; i < f->icap; i++)
		if (f->inodes[i].ino > max)
			max = f->inodes[i].ino;
	bool fix;
	if (!f->next_ino)
		fix = fsck_problem(f, PR_INODE_ABOVE_COUNTER,
				   "the inode counter (key M next_ino) is missing; set it to %" PRIu64,
				   max + 1);
	else if (max >= f->next_ino)
		fix = fsck_problem(f, PR_INODE_ABOVE_COUNTER,
				   "inode %" PRIu64 " is at or above the inode counter %" PRIu64
				   "; raise the counter to %" PRIu64, max, f->next_ino, max + 1);
	else
		return;
	if (fix)
		fsck_repaired(f, fsck_put_next_ino(f, max + 1));
}

void fsck_pass2_inodes(struct fsck *f)
{
	uint64_t done = 0;
	check_counter(f);
	for (size_t i = 0; i < f->icap && !fsck_cancelled(f); i++) {
		if (!f->inodes[i].ino)
			continue;
		check_inode(f, &f->inodes[i]);
		if (++done % 65536 == 0)
			fsck_progress(f, 2, done, f->icount);
	}
	/* Chunks past the end of their file: chunk c holds bytes from c x size. */
	for (size_t i = 0; i < f->nchunks; i++) {
		struct fsck_inode *in = fsck_inode(f, f->chunks[i].ino);
		if (!in || !in->rec_ok || !S_ISREG(in->rec.mode))
			continue;
		uint64_t first = f->chunks[i].chunk * f->info.chunk_size;
		if (first >= in->rec.size)
			fsck_problem(f, PR_CHUNK_PAST_EOF,
				     "inode %" PRIu64 ": chunk %" PRIu64 " lies past the file's size %" PRIu64,
				     in->ino, f->chunks[i].chunk, in->rec.size);
	}
}

static uint8_t dt_of(uint32_t mode)
{
	return (uint8_t)((mode & S_IFMT) >> 12); /* DT_* values are S_IF* >> 12 */
}

static int cmp_parent(const void *a, const void *b)
{
	const struct fsck_entry *x = a, *y = b;
	return x->parent < y->parent ? -1 : x->parent > y->parent;
}

/* Mark everything reachable from directory start (itself already marked),
 * breadth first through the entries (sorted by parent). */
static void walk_from(struct fsck *f, uint64_t start)
{
	size_t qcap = 1024, qh = 0, qt = 0;
	uint64_t *q = malloc(qcap * sizeof(*q));
	if (!q)
		return;
	q[qt++] = start;
	while (qh < qt && !fsck_cancelled(f)) {
		uint64_t d = q[qh++];
		size_t lo = 0, hi = f->nentries;
		while (lo < hi) { /* d's first entry */
			size_t mid = (lo + hi) / 2;
			if (f->entries[mid].parent < d)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < f->nentries && f->entries[i].parent == d; i++) {
			struct fsck_inode *c = fsck_inode(f, f->entries[i].ino);
			if (!c || !c->rec_ok || c->reached)
				continue;
			c->reached = true;
			if (!S_ISDIR(c->rec.mode))
				continue;
			if (qt == qcap) {
				uint64_t *g = realloc(q, 2 * qcap * sizeof(*q));
				if (!g)
					break;
				q = g;
				qcap *= 2;
			}
			q[qt++] = c->ino;
		}
	}
	free(q);
}

/* Give unattached inode in the name #ino in /lost+found, as e2fsck does.
 * The record changes too for a directory (its parent); link counts are
 * pass 4's. */
static int reconnect(struct fsck *f, struct fsck_inode *in, struct fsck_inode *lf)
{
	char name[32];
	snprintf(name, sizeof(name), "#%" PRIu64, in->ino);
	int rc = fsck_put_entry(f, LSMFS_LOST_FOUND_INO, name, in->ino, dt_of(in->rec.mode));
	if (rc)
		return rc;
	in->entries++;
	in->reached = true;
	if (S_ISDIR(in->rec.mode)) {
		lf->subdirs++;
		in->entry_parent = LSMFS_LOST_FOUND_INO;
		in->rec.parent = LSMFS_LOST_FOUND_INO;
		rc = fsck_put_inode(f, in);
		walk_from(f, in->ino);
	}
	return rc;
}

/* A directory named twice: the entry in the directory its record calls
 * its parent stays, the other goes (e is the one met second; the first was
 * counted already). */
static int drop_second_entry(struct fsck *f, struct fsck_entry *e, struct fsck_inode *p,
			     struct fsck_inode *c)
{
	struct fsck_entry *drop = e;
	struct fsck_inode *from = p;
	if (e->parent == c->rec.parent && c->entry_parent != c->rec.parent) {
		for (size_t i = 0; i < f->nentries; i++) {
			struct fsck_entry *o = &f->entries[i];
			if (o != e && o->ino == c->ino && o->parent == c->entry_parent) {
				drop = o;
				break;
			}
		}
		if (drop == e)
			return -ENOENT;
		from = fsck_inode(f, c->entry_parent);
		c->entry_parent = e->parent;
	}
	int rc = fsck_del_entry(f, drop);
	if (rc)
		return rc;
	drop->ino = 0;
	c->entries--;
	if (from && from->subdirs)
		from->subdirs--;
	return 0;
}

/* A new, empty directory's record, as the daemon's mkdir makes it. */
static void new_dir(struct fsck_inode *in, uint32_t perm, uint64_t parent)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	memset(&in->rec, 0, sizeof(in->rec));
	in->rec.mode = S_IFDIR | perm;
	in->rec.nlink = 2;
	in->rec.generation = 1;
	in->rec.parent = parent;
	in->rec.atime_sec = in->rec.mtime_sec = in->rec.ctime_sec = in->rec.btime_sec = now.tv_sec;
	in->rec.atime_nsec = in->rec.mtime_nsec = in->rec.ctime_nsec = in->rec.btime_nsec =
		(uint32_t)now.tv_nsec;
	in->rec_ok = true;
}

/* The root lost (its record, say with a damaged table) or not a directory:
 * a new empty root record.  Its entries are keys of their own, so its
 * contents come back with it. */
static int make_root(struct fsck *f)
{
	struct fsck_inode *root = fsck_inode_add(f, LSMFS_ROOT_INO);
	if (!root)
		return -ENOMEM;
	new_dir(root, 0755, LSMFS_ROOT_INO);
	return fsck_put_inode(f, root);
}

/* /lost+found missing or unreachable: a new one (inode 2) named from the
 * root, or the old one named again. */
static int make_lost_found(struct fsck *f)
{
	struct fsck_inode *lf = fsck_inode(f, LSMFS_LOST_FOUND_INO);
	if (lf && lf->rec_ok && !S_ISDIR(lf->rec.mode))
		return -EOPNOTSUPP; /* inode 2 is something else: left to the user */
	if (lf && lf->entry_parent && lf->entry_parent != LSMFS_ROOT_INO)
		return -EOPNOTSUPP; /* named elsewhere: reconnected below, if anywhere */
	for (size_t i = 0; i < f->nentries; i++) {
		const struct fsck_entry *e = &f->entries[i];
		if (e->parent == LSMFS_ROOT_INO && e->ino && e->ino != LSMFS_LOST_FOUND_INO &&
		    strcmp(e->name, "lost+found") == 0)
			return -EEXIST; /* the name is taken by another inode */
	}
	int rc = 0;
	if (!lf || !lf->rec_ok) {
		if (!(lf = fsck_inode_add(f, LSMFS_LOST_FOUND_INO)))
			return -ENOMEM;
		new_dir(lf, 0700, LSMFS_ROOT_INO);
		rc = fsck_put_inode(f, lf);
	}
	if (rc == 0 && !lf->entry_parent) {
		rc = fsck_put_entry(f, LSMFS_ROOT_INO, "lost+found", LSMFS_LOST_FOUND_INO, DT_DIR);
		if (rc == 0) {
			lf->entries++;
			lf->entry_parent = LSMFS_ROOT_INO;
			fsck_inode(f, LSMFS_ROOT_INO)->subdirs++;
		}
	}
	if (rc == 0 && lf->rec.parent != LSMFS_ROOT_INO) {
		lf->rec.parent = LSMFS_ROOT_INO;
		rc = fsck_put_inode(f, lf);
	}
	if (rc == 0) {
		lf->reached = true;
		walk_from(f, LSMFS_LOST_FOUND_INO);
	}
	return rc;
}

void fsck_pass3_dirs(struct fsck *f)
{
	struct fsck_inode *root = fsck_inode(f, LSMFS_ROOT_INO);
	if ((!root || !root->rec_ok || !S_ISDIR(root->rec.mode)) &&
	    fsck_problem(f, PR_ROOT_MISSING, "the root directory (inode 1) is %s; make a new one",
			 !root || !root->rec_ok ? "missing" : "not a directory"))
		fsck_repaired(f, make_root(f));
	root = fsck_inode(f, LSMFS_ROOT_INO);
	/* Entries grouped by parent (the store's order already is, but keep
	 * it explicit). */
	qsort(f->entries, f->nentries, sizeof(*f->entries), cmp_parent);
	char path[4096];
	for (size_t i = 0; i < f->nentries && !fsck_cancelled(f); i++) {
		struct fsck_entry *e = &f->entries[i];
		struct fsck_inode *p = fsck_inode(f, e->parent);
		struct fsck_inode *c = fsck_inode(f, e->ino);
		size_t nlen = strlen(e->name);
		if (dirent_hash(e->name, nlen) != e->hash &&
		    fsck_problem(f, PR_ENTRY_BAD_HASH,
				 "entry '%s' in directory %" PRIu64 " is stored under the wrong hash",
				 e->name, e->parent)) {
			int rc = fsck_rehash_entry(f, e);
			fsck_repaired(f, rc);
		}
		if (!p || !p->rec_ok || !S_ISDIR(p->rec.mode)) {
			fsck_problem(f, PR_ENTRY_IN_NONDIR,
				     "entry '%s' -> inode %" PRIu64 " belongs to inode %" PRIu64
				     ", which is not a directory", e->name, e->ino, e->parent);
			continue;
		}
		if (!c || !c->rec_ok) {
			fsck_entry_path(f, e, path, sizeof(path));
			if (fsck_problem(f, PR_ENTRY_DANGLING,
					 "entry %s -> inode %" PRIu64 ": no such inode", path, e->ino)) {
				fsck_repaired(f, fsck_del_entry(f, e));
				e->ino = 0; /* gone: the walk skips it */
			}
			continue;
		}
		if (e->type != dt_of(c->rec.mode)) {
			fsck_entry_path(f, e, path, sizeof(path));
			if (fsck_problem(f, PR_ENTRY_BAD_TYPE,
					 "entry %s says type %u, inode %" PRIu64 " is a %s", path, e->type,
					 e->ino, type_name(c->rec.mode))) {
				/* rewritten in place: under its own hash */
				int rc = e->hash == dirent_hash(e->name, nlen)
						 ? fsck_put_entry(f, e->parent, e->name, e->ino,
								  dt_of(c->rec.mode))
						 : -EUCLEAN;
				fsck_repaired(f, rc);
			}
		}
		c->entries++;
		if (S_ISDIR(c->rec.mode)) {
			p->subdirs++;
			if (c->entry_parent) {
				fsck_entry_path(f, e, path, sizeof(path));
				if (fsck_problem(f, PR_DIR_MULTIPLY_LINKED,
						 "directory inode %" PRIu64 " has a second entry %s",
						 e->ino, path))
					fsck_repaired(f, drop_second_entry(f, e, p, c));
			} else {
				c->entry_parent = e->parent;
			}
		}
	}
	if (root && root->rec_ok) {
		root->reached = true;
		walk_from(f, LSMFS_ROOT_INO);
	}
	struct fsck_inode *lf = fsck_inode(f, LSMFS_LOST_FOUND_INO);
	bool lf_ok = lf && lf->rec_ok && S_ISDIR(lf->rec.mode) && lf->reached;
	if (!lf_ok && root && root->rec_ok &&
	    fsck_problem(f, PR_LOST_FOUND_MISSING, "/lost+found (inode 2) is %s; make it again",
			 !lf || !lf->rec_ok ? "missing" :
			 !S_ISDIR(lf->rec.mode) ? "not a directory" : "not reachable from the root")) {
		int rc = make_lost_found(f);
		fsck_repaired(f, rc);
		lf = fsck_inode(f, LSMFS_LOST_FOUND_INO);
		lf_ok = rc == 0;
	}
	for (size_t i = 0; i < f->icap; i++) {
		struct fsck_inode *in = &f->inodes[i];
		if (!in->ino || !in->rec_ok || !S_ISDIR(in->rec.mode) || in->ino == LSMFS_ROOT_INO ||
		    !in->entry_parent || in->rec.parent == in->entry_parent)
			continue;
		if (fsck_problem(f, PR_DIR_BAD_PARENT,
				 "directory inode %" PRIu64 " records parent %" PRIu64
				 " but is named in directory %" PRIu64, in->ino, in->rec.parent,
				 in->entry_parent)) {
			in->rec.parent = in->entry_parent;
			fsck_repaired(f, fsck_put_inode(f, in));
		}
	}
	/* Unattached: directories no entry names first, so that reconnecting
	 * one brings its whole subtree back with it; then the rest. */
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < f->icap; i++) {
			struct fsck_inode *in = &f->inodes[i];
			if (!in->ino || !in->rec_ok || in->reached || in->rec.nlink == 0 || in->orphan)
				continue;
			bool top = in->entries == 0;
			bool topdir = S_ISDIR(in->rec.mode) && top;
			if (round == 0 ? !topdir : topdir)
				continue; /* round 0: top directories; round 1: the rest */
			bool fix = fsck_problem(f, PR_INODE_UNATTACHED,
						"inode %" PRIu64 " (%s, %" PRIu64
						" bytes) is not reachable from the root",
						in->ino, type_name(in->rec.mode), in->rec.size);
			if (!fix)
				continue;
			/* Only an inode no entry names can go to lost+found
			 * without making a second name for it. */
			fsck_repaired(f, lf_ok && top ? reconnect(f, in, lf) : -EOPNOTSUPP);
		}
	}
}

void fsck_pass4_links(struct fsck *f)
{
	for (size_t i = 0; i < f->icap && !fsck_cancelled(f); i++) {
		struct fsck_inode *in = &f->inodes[i];
		if (!in->ino || !in->rec_ok || (in->orphan && in->rec.nlink == 0))
			continue;
		if (!in->reached && in->entries == 0)
			continue; /* unattached: pass 3 said so */
		uint64_t want = S_ISDIR(in->rec.mode) ? 2 + (uint64_t)in->subdirs : in->entries;
		if (in->rec.nlink != want &&
		    fsck_problem(f, PR_NLINK, "inode %" PRIu64 " (%s): link count %u, counted %" PRIu64,
				 in->ino, type_name(in->rec.mode), in->rec.nlink, want)) {
			in->rec.nlink = (uint32_t)want;
			fsck_repaired(f, fsck_put_inode(f, in));
		}
	}
}

/* <disk>/.lsmfs/sections */
static void sections_dir(const struct fsck *f, uint32_t disk, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s/%s", f->ds->paths[disk], LSMFS_DIR, LSMFS_SECTIONS_DIR);
}

static int cmp_chunk(const void *a, const void *b)
{
	const struct fsck_chunk *x = a, *y = b;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->chunk < y->chunk ? -1 : x->chunk > y->chunk;
}

static bool has_chunk(const struct fsck *f, uint64_t ino, uint64_t chunk)
{
	struct fsck_chunk key = {.ino = ino, .chunk = chunk};
	return bsearch(&key, f->chunks, f->nchunks, sizeof(key), cmp_chunk) != NULL;
}

static int fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) ? -errno : 0;
	close(fd);
	return rc;
}

static int fsync_parent(const char *path)
{
	char dir[LSMFS_META_PATH_MAX + 700];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return fsync_path(dir);
}

/* Copy src to dst (a new file) and make it durable. */
static int copy_file(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	int rc = 0;
	char *buf = malloc(1 << 20);
	if (!buf)
		rc = -ENOMEM;
	for (;;) {
		ssize_t n = rc ? 0 : read(in, buf, 1 << 20);
		if (n < 0)
			rc = -errno;
		if (n <= 0)
			break;
		for (ssize_t done = 0; done < n && !rc;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0)
				rc = -errno;
			else
				done += w;
		}
	}
	free(buf);
	if (!rc && fsync(out))
		rc = -errno;
	close(out);
	close(in);
	if (rc)
		unlink(dst);
	return rc;
}

/* Put a misplaced chunk file where its section says: a rename on the same
 * filesystem, else a durable copy renamed into place before the original
 * goes.  A file already at the destination is left to a person. */
static int move_chunk(struct fsck *f, const char *src, uint32_t s, uint32_t d, uint64_t ino,
		      uint64_t chunk)
{
	char root[LSMFS_META_PATH_MAX + 64], dir[LSMFS_META_PATH_MAX + 100];
	char dst[LSMFS_META_PATH_MAX + 200], tmp[LSMFS_META_PATH_MAX + 220];
	sections_dir(f, d, root, sizeof(root));
	snprintf(dir, sizeof(dir), "%s/%u", root, s);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(dst, sizeof(dst), "%s/%" PRIu64 ".%" PRIu64, dir, ino, chunk);
	if (access(dst, F_OK) == 0)
		return -EEXIST;
	if (rename(src, dst) == 0) {
		int rc = fsync_path(dir);
		int r2 = fsync_parent(src);
		return rc ? rc : r2;
	}
	if (errno != EXDEV)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.fsck-tmp", dst);
	int rc = copy_file(src, tmp);
	if (!rc && rename(tmp, dst))
		rc = -errno;
	if (!rc)
		rc = fsync_path(dir);
	if (rc) {
		unlink(tmp);
		return rc;
	}
	if (unlink(src))
		return -errno;
	return fsync_parent(src);
}

/* An ownerless chunk file becomes a file of its own, /lost+found/#ino.chunk
 * (its old identity), with a new inode whose chunk 0 it is.  The records
 * go first, in one batch with the raised inode counter; the file is moved
 * after, so a crash between leaves a hole and the file still ownerless,
 * for the next run.  An empty file holds nothing and is just removed. */
/* The model learns a new chunk record, or the walk would meet its file
 * again as ownerless. */
static int model_add_chunk(struct fsck *f, uint64_t ino, uint64_t chunk)
{
	if (f->nchunks == f->capchunks) {
		size_t nc = f->capchunks ? f->capchunks * 2 : 64;
		struct fsck_chunk *g = realloc(f->chunks, nc * sizeof(*g));
		if (!g)
			return -ENOMEM;
		f->chunks = g;
		f->capchunks = nc;
	}
	f->chunks[f->nchunks++] = (struct fsck_chunk){.ino = ino, .chunk = chunk};
	qsort(f->chunks, f->nchunks, sizeof(*f->chunks), cmp_chunk);
	return 0;
}

static int adopt_chunk(struct fsck *f, const char *file, uint64_t ino, uint64_t chunk)
{
	struct stat st;
	if (stat(file, &st))
		return -errno;
	if (st.st_size == 0)
		return unlink(file) ? -errno : fsync_parent(file);
	struct fsck_inode *lf = fsck_inode(f, LSMFS_LOST_FOUND_INO);
	if (!lf || !lf->rec_ok || !S_ISDIR(lf->rec.mode) || !f->next_ino)
		return -ENOENT;
	uint64_t nino = f->next_ino;
	uint32_t s = chunk_section(nino, 0, f->info.sections);
	uint32_t d = f->section_disk[s];
	if (d >= f->ds->ndisks)
		return -EUCLEAN;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct inode_rec r = {
		.flags = INODE_FLAG_CHUNKED, .mode = S_IFREG | 0600, .nlink = 1,
		.size = (uint64_t)st.st_size, .blocks = (uint64_t)st.st_blocks,
		.generation = 1,
		.atime_sec = now.tv_sec, .mtime_sec = now.tv_sec, .ctime_sec = now.tv_sec,
		.btime_sec = now.tv_sec,
	};
	char name[64];
	snprintf(name, sizeof(name), "#%" PRIu64 ".%" PRIu64, ino, chunk);
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	uint8_t k[KEY_MAX], v[INODE_REC_LEN], cnt[8];
	sc_put_le64(cnt, nino + 1);
	store_batch_put(b, k, key_meta(k, META_NEXT_INO), cnt, 8);
	inode_rec_encode(&r, v);
	store_batch_put(b, k, key_inode(k, nino), v, INODE_REC_LEN);
	store_batch_put(b, k, key_chunk(k, nino, 0), "", 0);
	dirent_val_encode(nino, (uint8_t)(S_IFREG >> 12), v);
	store_batch_put(b, k, key_dirent(k, LSMFS_LOST_FOUND_INO, name, strlen(name)), v,
			DIRENT_VAL_LEN);
	int rc = store_write(f->st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	if (rc)
		return rc;
	f->next_ino = nino + 1;
	rc = model_add_chunk(f, nino, 0);
	return rc ? rc : move_chunk(f, file, s, d, nino, 0);
}

/* An ownerless chunk file whose inode is a chunked regular file reaching
 * that far (its record was lost, say with a damaged table): the file is
 * that inode's data, so it gets its record back. */
static bool can_reattach(struct fsck *f, uint64_t ino, uint64_t chunk)
{
	struct fsck_inode *in = fsck_inode(f, ino);
	return in && in->rec_ok && S_ISREG(in->rec.mode) &&
	       (in->rec.flags & INODE_FLAG_CHUNKED) && in->inline_len < 0 &&
	       f->info.chunk_size && chunk < UINT64_MAX / f->info.chunk_size &&
	       chunk * f->info.chunk_size < in->rec.size;
}

static int reattach_chunk(struct fsck *f, uint64_t ino, uint64_t chunk)
{
	uint8_t k[KEY_MAX];
	int rc = store_put(f->st, k, key_chunk(k, ino, chunk), "", 0, STORE_WRITE_SYNC);
	if (rc)
		return rc;
	fsck_inode(f, ino)->nchunks++;
	return model_add_chunk(f, ino, chunk);
}

/* One disk's section directories: every file must be a chunk with a record,
 * in the section its (ino, chunk) hashes to, on the disk the map names. */
static void walk_disk(struct fsck *f, uint32_t disk)
{
	char root[LSMFS_META_PATH_MAX + 64];
	sections_dir(f, disk, root, sizeof(root));
	DIR *top = opendir(root);
	if (!top) {
		fsck_problem(f, PR_CHUNK_UNREADABLE, "disk %u: %s: %s", disk, root, strerror(errno));
		return;
	}
	struct dirent *de;
	while ((de = readdir(top)) && !fsck_cancelled(f)) {
		if (de->d_name[0] == '.')
			continue;
		char *end;
		unsigned long s = strtoul(de->d_name, &end, 10);
		char sdir[LSMFS_META_PATH_MAX + 400];
		snprintf(sdir, sizeof(sdir), "%s/%s", root, de->d_name);
		if (*end || s >= f->info.sections) {
			fsck_problem(f, PR_STRAY_FILE, "disk %u: %s is not a section directory", disk, sdir);
			continue;
		}
		DIR *sd = opendir(sdir);
		if (!sd) {
			fsck_problem(f, PR_CHUNK_UNREADABLE, "disk %u: %s: %s", disk, sdir,
				     strerror(errno));
			continue;
		}
		struct dirent *ce;
		while ((ce = readdir(sd))) {
			if (ce->d_name[0] == '.')
				continue;
			uint64_t ino, chunk;
			char tail;
			char file[LSMFS_META_PATH_MAX + 700];
			snprintf(file, sizeof(file), "%s/%s", sdir, ce->d_name);
			if (sscanf(ce->d_name, "%" SCNu64 ".%" SCNu64 "%c", &ino, &chunk, &tail) != 2) {
				fsck_problem(f, PR_STRAY_FILE, "disk %u: %s is not a chunk file name", disk,
					     file);
				continue;
			}
			uint32_t want = chunk_section(ino, chunk, f->info.sections);
			uint32_t want_disk = f->section_disk[want];
			if (!has_chunk(f, ino, chunk)) {
				if (can_reattach(f, ino, chunk)) {
					if (fsck_problem(f, PR_CHUNK_OWNERLESS,
							 "disk %u: %s: chunk %" PRIu64 " of inode %" PRIu64
							 " has no chunk record, and that file reaches it: give it back its record",
							 disk, file, chunk, ino))
						fsck_repaired(f, reattach_chunk(f, ino, chunk));
				} else if (fsck_problem(f, PR_CHUNK_OWNERLESS,
							"disk %u: %s: chunk %" PRIu64 " of inode %" PRIu64
							" has no chunk record (no owner)", disk, file, chunk,
							ino)) {
					fsck_repaired(f, adopt_chunk(f, file, ino, chunk));
				}
				if (!has_chunk(f, ino, chunk))
					continue; /* left, or gone to /lost+found */
			}
			if ((want != s || want_disk != disk) && want_disk < f->ds->ndisks &&
			    fsck_problem(f, PR_CHUNK_MISPLACED,
					 "disk %u: %s belongs in section %u on disk %u", disk, file,
					 want, want_disk))
				fsck_repaired(f, move_chunk(f, file, want, want_disk, ino, chunk));
		}
		closedir(sd);
	}
	closedir(top);
}

/* The disk a section belongs on when the map has lost it: the one disk
 * whose sections/<s> directory holds files (or, with none, exists);
 * mkfs's rule (s mod disks) when no disk or several qualify. */
static uint32_t section_home(struct fsck *f, uint32_t s)
{
	uint32_t with_dir = UINT32_MAX, with_files = UINT32_MAX, ndir = 0, nfiles = 0;
	for (uint32_t d = 0; d < f->ds->ndisks; d++) {
		char root[LSMFS_META_PATH_MAX + 64], dir[LSMFS_META_PATH_MAX + 96];
		sections_dir(f, d, root, sizeof(root));
		snprintf(dir, sizeof(dir), "%s/%u", root, s);
		DIR *dh = opendir(dir);
		if (!dh)
			continue;
		with_dir = d;
		ndir++;
		struct dirent *e;
		while ((e = readdir(dh)))
			if (e->d_name[0] != '.') {
				with_files = d;
				nfiles++;
				break;
			}
		closedir(dh);
	}
	if (nfiles == 1)
		return with_files;
	if (nfiles == 0 && ndir == 1)
		return with_dir;
	return s % f->ds->ndisks;
}

void fsck_pass5_data(struct fsck *f)
{
	uint32_t nd = f->ds->ndisks;
	for (uint32_t s = 0; s < f->info.sections; s++) {
		uint32_t d = f->section_disk[s];
		if (d != UINT32_MAX && d < nd)
			continue;
		uint32_t home = section_home(f, s);
		bool fix = d == UINT32_MAX
				   ? fsck_problem(f, PR_SECTION_UNMAPPED,
						  "section %u has no disk in the section map; map it to disk %u (%s)",
						  s, home, f->ds->paths[home])
				   : fsck_problem(f, PR_SECTION_BAD_DISK,
						  "section %u maps to disk %u of %u; map it to disk %u (%s)", s,
						  d, nd, home, f->ds->paths[home]);
		if (fix)
			fsck_repaired(f, fsck_put_section(f, s, home));
	}
	/* Disk records against the superblocks. */
	for (uint32_t d = 0; d < nd; d++) {
		uint8_t k[KEY_MAX];
		size_t kl = key_disk(k, d);
		void *v;
		size_t vl;
		int rc = store_get(f->st, NULL, k, kl, &v, &vl);
		if (rc) {
			if (fsck_problem(f, PR_DISK_RECORD,
					 "disk %u (%s): no disk record in the store; rebuild it from the superblock",
					 d, f->ds->paths[d]))
				fsck_repaired(f, fsck_put_disk_record(f, d));
			continue;
		}
		if (vl < 16 || memcmp(v, f->ds->sb.disk_uuids[d], 16)) {
			char a[37];
			lsmfs_uuid_format(f->ds->sb.disk_uuids[d], a);
			if (fsck_problem(f, PR_DISK_RECORD,
					 "disk %u (%s): the store's disk record does not carry its UUID %s",
					 d, f->ds->paths[d], a))
				fsck_repaired(f, fsck_put_disk_record(f, d));
		}
		free(v);
	}
	if (f->info_ok && (memcmp(f->info.fs_uuid, f->ds->sb.fs_uuid, 16) ||
			   f->info.sections != f->ds->sb.sections ||
			   f->info.chunk_size != f->ds->sb.chunk_size ||
			   f->info.ndisks != f->ds->sb.disk_count) &&
	    fsck_problem(f, PR_INFO_BAD,
			 "%s: the store's filesystem information disagrees with the superblocks; rewrite it from them",
			 f->ds->meta_dir))
		fsck_repaired(f, fsck_put_info(f));

	qsort(f->chunks, f->nchunks, sizeof(*f->chunks), cmp_chunk);
	/* The disks first: a misplaced chunk file moved home is no longer a
	 * missing one (whose repair would drop its record). */
	for (uint32_t d = 0; d < nd && !fsck_cancelled(f); d++)
		walk_disk(f, d);
	for (size_t i = 0; i < f->nchunks && !fsck_cancelled(f); i++) {
		const struct fsck_chunk *c = &f->chunks[i];
		uint32_t s = chunk_section(c->ino, c->chunk, f->info.sections);
		uint32_t d = f->section_disk[s];
		if (d >= nd)
			continue; /* reported above */
		f->chunks_per_disk[d]++;
		char root[LSMFS_META_PATH_MAX + 64], file[LSMFS_META_PATH_MAX + 160];
		sections_dir(f, d, root, sizeof(root));
		snprintf(file, sizeof(file), "%s/%u/%" PRIu64 ".%" PRIu64, root, s, c->ino, c->chunk);
		struct stat st;
		if (stat(file, &st) != 0) {
			if (errno == ENOENT) {
				if (fsck_problem(f, PR_CHUNK_MISSING,
						 "inode %" PRIu64 " chunk %" PRIu64
						 ": %s is missing (reads as a hole)", c->ino, c->chunk,
						 file)) {
					/* the record goes; the bytes read as zeros either way */
					uint8_t k[KEY_MAX];
					fsck_repaired(f, fsck_del_key(f, k, key_chunk(k, c->ino, c->chunk)));
				}
			} else
				fsck_problem(f, PR_CHUNK_UNREADABLE, "%s: %s", file, strerror(errno));
		} else if ((uint64_t)st.st_size > f->info.chunk_size &&
			   fsck_problem(f, PR_CHUNK_TOO_LONG,
					"%s: %lld bytes, longer than a chunk (%" PRIu64 ")", file,
					(long long)st.st_size, f->info.chunk_size)) {
			/* bytes past the chunk's end are never read */
			fsck_repaired(f, truncate(file, (off_t)f->info.chunk_size) ? -errno : 0);
		}
		if (i % 4096 == 0)
			fsck_progress(f, 5, i, f->nchunks);
	}
}
