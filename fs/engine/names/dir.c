/*
 * dir.c: the namespace: lookup, making inodes (files, directories,
 * symlinks, devices), links, unlink/rmdir, rename and readdir
 * (SCHEMA.md, "Directory entries").
 *
 * Every change holds fs->ns_lock for its whole check-then-act and commits
 * its keys in one store batch, so a crash leaves either the old or the new
 * namespace.  Records of the inodes it changes are updated in memory under
 * their stripe locks (up to four, each once, in address order: lockset)
 * and written whole into the same batch.  inode_put() may reclaim an inode
 * and take ns_lock: call it only after unlocking.  struct ns_change does
 * this for every change, in one place.
 */
#include "acl.h"
#include "names.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>

int fs_check_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0)
		return -ENOENT;
	if (n > NAME_MAX_BYTES)
		return -ENAMETOOLONG;
	return 0;
}

static uint8_t dtype_of(mode_t mode)
{
	return (uint8_t)((mode & S_IFMT) >> 12); /* DT_* == S_IFMT >> 12 on Linux */
}

/* The entry (parent, name), or -ENOENT: from the dcache, else from the
 * store (and then kept in the dcache, its absence included). */
static int dirent_get(struct fs *fs, uint64_t parent, const char *name, uint64_t *ino,
		      uint8_t *type)
{
	if (dcache_get(&fs->dcache, parent, name, ino, type))
		return *ino ? 0 : -ENOENT;
	uint64_t stamp = dcache_stamp(&fs->dcache, parent, name);
	uint8_t k[KEY_MAX];
	size_t kl = key_dirent(k, parent, name, strlen(name));
	void *v;
	size_t vl;
	int rc = store_get(fs->st, NULL, k, kl, &v, &vl);
	if (rc == -ENOENT)
		dcache_fill(&fs->dcache, stamp, parent, name, 0, 0);
	if (rc)
		return rc;
	rc = dirent_val_decode(v, vl, ino, type);
	free(v);
	if (rc)
		fs_logf(fs, "directory %llu: damaged entry \"%s\"", (unsigned long long)parent, name);
	else
		dcache_fill(&fs->dcache, stamp, parent, name, *ino, *type);
	return rc;
}

/* After the write of a batch that put (ino != 0) or deleted (ino 0) the
 * entry (parent, name), with the write's result rc: the dcache follows
 * the store, or forgets the name when the write failed (the store may
 * hold either state then).  ns_lock held. */
static void dirent_done(struct fs *fs, int rc, uint64_t parent, const char *name,
			uint64_t ino, uint8_t type)
{
	if (!rc)
		dcache_set(&fs->dcache, parent, name, ino, type);
	else
		dcache_forget(&fs->dcache, parent, name);
}

static void dirent_put(struct store_batch *b, uint64_t parent, const char *name, uint64_t ino,
		       uint8_t type)
{
	uint8_t k[KEY_MAX], v[DIRENT_VAL_LEN];
	size_t kl = key_dirent(k, parent, name, strlen(name));
	dirent_val_encode(ino, type, v);
	(void)store_batch_put(b, k, kl, v, sizeof(v)); /* only ENOMEM, caught by store_write */
}

static void dirent_del(struct store_batch *b, uint64_t parent, const char *name)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_dirent(k, parent, name, strlen(name));
	(void)store_batch_delete(b, k, kl);
}

/* After the write (result rc) of a batch that added (delta 1) or removed
 * (-1) an entry of directory d: its count follows, or is no longer known
 * when the write failed (the store may hold either state then).  ns_lock
 * held. */
static void count_entries(struct fs_inode *d, int rc, int delta)
{
	if (rc || d->nentries < 0 || d->nentries + delta < 0)
		d->nentries = -1;
	else
		d->nentries += delta;
}

static void orphan_put(struct store_batch *b, uint64_t ino)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_orphan(k, ino);
	(void)store_batch_put(b, k, kl, "", 0);
}

/* Lock the stripes of up to four inodes, each once, in address order. */
struct lockset {
	pthread_mutex_t *m[4];
	int n;
};

static void lockset_lock(struct fs *fs, struct lockset *ls, const uint64_t *inos, int n)
{
	ls->n = 0;
	for (int i = 0; i < n; i++) {
		if (!inos[i])
			continue;
		pthread_mutex_t *m = inode_lock_of(fs, inos[i]);
		bool dup = false;
		for (int j = 0; j < ls->n; j++)
			dup |= ls->m[j] == m;
		if (!dup)
			ls->m[ls->n++] = m;
	}
	for (int i = 1; i < ls->n; i++) /* insertion sort: n <= 4 */
		for (int j = i; j > 0 && ls->m[j] < ls->m[j - 1]; j--) {
			pthread_mutex_t *t = ls->m[j];
			ls->m[j] = ls->m[j - 1];
			ls->m[j - 1] = t;
		}
	for (int i = 0; i < ls->n; i++)
		pthread_mutex_lock(ls->m[i]);
}

static void lockset_unlock(struct lockset *ls)
{
	for (int i = ls->n - 1; i >= 0; i--)
		pthread_mutex_unlock(ls->m[i]);
}

/* The parent of a namespace change: an existing, live directory. */
static struct fs_inode *get_dir(struct fs *fs, uint64_t ino, int *rc)
{
	struct fs_inode *d = inode_get(fs, ino, rc);
	if (!d)
		return NULL;
	if (!S_ISDIR(d->rec.mode)) {
		*rc = -ENOTDIR;
	} else if (d->rec.nlink == 0 || d->gone) {
		*rc = -ENOENT; /* a removed directory takes no new entries */
	} else {
		return d;
	}
	inode_put(fs, d);
	return NULL;
}

/*
 * A namespace change, begun, committed and ended the same way by every
 * operation that makes, links, removes or renames a name:
 *
 *	int rc = fs_check_name(name);             (and the operation's own checks)
 *	if (rc)
 *		return rc;
 *	struct ns_change c;
 *	if ((rc = ns_begin(&c, fs, parent)))     a batch, ns_lock, the parent
 *		goto out;
 *	... look, check; ns_get the inodes it changes ...
 *	ns_lock_inodes(&c, inos, n);              their stripes
 *	... copies of their records changed; into the batch with ns_put_rec,
 *	    ns_put_name, ns_del_name, ns_count ...
 *	rc = ns_commit(&c, wflags);
 *	ns_unlock_inodes(&c);
 *  out:
 *	ns_end(&c);
 *
 * ns_commit writes the batch in one store write; then the dcache follows
 * each name put or deleted, each directory's count of entries its change,
 * and each record given to ns_put_rec (or ns_set_rec) becomes its inode's.
 * When the write fails the store may hold either state: the names are
 * forgotten, the counts unknown, and the records in memory stay as they
 * were.  ns_end lets go of everything still held, in reverse: the stripes,
 * ns_lock, then the inodes (inode_put may reclaim and take ns_lock), and
 * frees the batch; it may follow a failed ns_begin.
 */
struct ns_change {
	struct fs *fs;
	struct store_batch *b;
	bool ns_locked;
	struct fs_inode *dir;       /* the parent (a rename's: the source's) */
	struct fs_inode *held[4];   /* the inodes it got, put at the end */
	int nheld;
	struct lockset stripes;     /* n 0: none locked */
	struct ns_name {            /* entries put (ino != 0) or deleted */
		uint64_t parent, ino;
		const char *name;
		uint8_t type;
	} names[2];
	int nnames;
	struct ns_count {           /* entries added (1) to or removed (-1) from dir */
		struct fs_inode *dir;
		int delta;
	} counts[2];
	int ncounts;
	struct ns_rec {             /* records that become their inode's */
		struct fs_inode *in;
		const struct inode_rec *rec;
	} recs[4];
	int nrecs;
};

/* in (may be NULL) is put by ns_end. */
static struct fs_inode *ns_hold(struct ns_change *c, struct fs_inode *in)
{
	if (in)
		c->held[c->nheld++] = in;
	return in;
}

static struct fs_inode *ns_get(struct ns_change *c, uint64_t ino, int *rc)
{
	return ns_hold(c, inode_get(c->fs, ino, rc));
}

/* A parent of the change: an existing, live directory (get_dir). */
static struct fs_inode *ns_get_dir(struct ns_change *c, uint64_t ino, int *rc)
{
	return ns_hold(c, get_dir(c->fs, ino, rc));
}

/* A batch, ns_lock, and c->dir, the parent: 0 or -errno. */
static int ns_begin(struct ns_change *c, struct fs *fs, uint64_t parent)
{
	*c = (struct ns_change){.fs = fs};
	if (!(c->b = store_batch_new()))
		return -ENOMEM;
	pthread_mutex_lock(&fs->ns_lock);
	c->ns_locked = true;
	int rc;
	c->dir = ns_get_dir(c, parent, &rc);
	return c->dir ? 0 : rc;
}

/* The stripes of up to four inodes (0: none), for the records' change
 * and the commit. */
static void ns_lock_inodes(struct ns_change *c, const uint64_t *inos, int n)
{
	lockset_lock(c->fs, &c->stripes, inos, n);
}

static void ns_unlock_inodes(struct ns_change *c)
{
	lockset_unlock(&c->stripes);
	c->stripes.n = 0;
}

static void ns_put_name(struct ns_change *c, uint64_t parent, const char *name, uint64_t ino,
			uint8_t type)
{
	dirent_put(c->b, parent, name, ino, type);
	c->names[c->nnames++] = (struct ns_name){.parent = parent, .name = name, .ino = ino,
						       .type = type};
}

static void ns_del_name(struct ns_change *c, uint64_t parent, const char *name)
{
	dirent_del(c->b, parent, name);
	c->names[c->nnames++] = (struct ns_name){.parent = parent, .name = name};
}

/* Directory d gains (1) or loses (-1) an entry, or neither (0), with the
 * commit. */
static void ns_count(struct ns_change *c, struct fs_inode *d, int delta)
{
	c->counts[c->ncounts++] = (struct ns_count){.dir = d, .delta = delta};
}

/* *rec (which must live until ns_commit) becomes in's record with the
 * commit; ns_put_rec also puts it into the batch. */
static void ns_set_rec(struct ns_change *c, struct fs_inode *in, const struct inode_rec *rec)
{
	c->recs[c->nrecs++] = (struct ns_rec){.in = in, .rec = rec};
}

static void ns_put_rec(struct ns_change *c, struct fs_inode *in, const struct inode_rec *rec)
{
	inode_rec_put(c->b, in->ino, rec);
	ns_set_rec(c, in, rec);
}

static int ns_commit(struct ns_change *c, unsigned wflags)
{
	int rc = store_write(c->fs->st, c->b, wflags);
	for (int i = 0; i < c->nnames; i++)
		dirent_done(c->fs, rc, c->names[i].parent, c->names[i].name, c->names[i].ino,
			    c->names[i].type);
	for (int i = 0; i < c->ncounts; i++)
		count_entries(c->counts[i].dir, rc, c->counts[i].delta);
	for (int i = 0; !rc && i < c->nrecs; i++) {
		c->recs[i].in->rec = *c->recs[i].rec;
		c->recs[i].in->dirty = false;
	}
	return rc;
}

static void ns_end(struct ns_change *c)
{
	ns_unlock_inodes(c);
	if (c->ns_locked)
		pthread_mutex_unlock(&c->fs->ns_lock);
	while (c->nheld)
		inode_put(c->fs, c->held[--c->nheld]);
	store_batch_free(c->b);
}

uint64_t fs_generation(struct fs *fs, uint64_t ino)
{
	if (ino == LSMFS_ROOT_INO)
		return 0; /* the kernel makes the root's inode with generation 0 */
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return 0;
	uint64_t g = in->rec.generation;
	inode_put(fs, in);
	return g;
}

/* "." and "..": the kernel asks for them by inode number to turn a file
 * handle back into an inode (FUSE_CAP_EXPORT_SUPPORT).  An inode whose
 * last name is gone is stale. */
static int lookup_dot(struct fs *fs, uint64_t ino, bool dotdot, uint64_t *out)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	rc = 0; /* inode_get sets it only on failure */
	inode_lock(fs, in); /* the record may be changing under a rename */
	if (in->rec.nlink == 0 || in->gone)
		rc = -ENOENT;
	else if (dotdot && !S_ISDIR(in->rec.mode))
		rc = -ENOTDIR;
	*out = dotdot ? in->rec.parent : ino;
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}

int fs_lookup(struct fs *fs, uint64_t parent, const char *name, struct stat *st)
{
	int rc = fs_check_name(name);
	if (rc)
		return rc;
	uint64_t ino;
	uint8_t type;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		rc = lookup_dot(fs, parent, name[1] == '.', &ino);
	else
		rc = dirent_get(fs, parent, name, &ino, &type);
	if (rc)
		return rc;
	rc = fs_entry_ref(fs, ino, st);
	if (rc == -ENOENT)
		fs_logf(fs, "directory %llu: entry \"%s\" names missing inode %llu",
			(unsigned long long)parent, name, (unsigned long long)ino);
	return rc == -ENOENT ? -EUCLEAN : rc;
}

int fs_entry_ref(struct fs *fs, uint64_t ino, struct stat *st)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	inode_stat(fs, in, st);
	inode_unlock(fs, in);
	fs_lookup_given(fs, in);
	inode_put(fs, in);
	return 0;
}

/* The record of a new inode in directory dir, made now (its size: a
 * symlink's target length, else 0). */
static void new_rec(struct fs *fs, const struct fs_inode *dir, mode_t mode, dev_t rdev, uid_t uid,
		    gid_t gid, uint64_t size, struct inode_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->mode = mode;
	r->uid = uid;
	r->gid = gid;
	if (dir->rec.mode & S_ISGID) { /* BSD group semantics, as ext4 */
		r->gid = dir->rec.gid;
		if (S_ISDIR(mode))
			r->mode |= S_ISGID;
	}
	r->nlink = S_ISDIR(mode) ? 2 : 1;
	r->rdev = (S_ISCHR(mode) || S_ISBLK(mode)) ? rdev : 0;
	r->generation = fs->generation;
	r->parent = S_ISDIR(mode) ? dir->ino : 0;
	r->size = size;
	fs_now(fs, &r->atime_sec, &r->atime_nsec);
	r->mtime_sec = r->ctime_sec = r->btime_sec = r->atime_sec;
	r->mtime_nsec = r->ctime_nsec = r->btime_nsec = r->atime_nsec;
}

int fs_mknod(struct fs *fs, uint64_t parent, const char *name, mode_t mode, dev_t rdev,
	     uid_t uid, gid_t gid, mode_t umask, const char *link_target, struct stat *st)
{
	int rc = fs_check_name(name);
	if (rc)
		return rc;
	size_t tlen = link_target ? strlen(link_target) : 0;
	if (link_target && (tlen == 0 || tlen >= 4096))
		return tlen ? -ENAMETOOLONG : -ENOENT;
	struct ns_change c;
	if ((rc = ns_begin(&c, fs, parent)))
		goto out;
	struct fs_inode *dir = c.dir;
	uint64_t ino;
	uint8_t type;
	rc = dirent_get(fs, parent, name, &ino, &type);
	if (rc != -ENOENT) {
		rc = rc ? rc : -EEXIST;
		goto out;
	}
	if ((rc = fs_alloc_ino(fs, &ino)))
		goto out;

	struct inode_rec r;
	new_rec(fs, dir, mode, rdev, uid, gid, tlen, &r);
	/* Permission bits from the parent's default ACL or the umask. */
	if ((rc = acl_fs_inherit(fs, dir, ino, &r, umask, c.b)))
		goto out;
	/* Where its chunks go: the directory's policy (SCHEMA.md "Placement"). */
	if ((rc = policy_inherit(fs, dir, ino, &r, c.b)))
		goto out;

	inode_rec_put(c.b, ino, &r);
	ns_put_name(&c, parent, name, ino, dtype_of(mode));
	if (link_target) {
		uint8_t k[KEY_MAX];
		size_t kl = key_data(k, ino);
		store_batch_put(c.b, k, kl, link_target, tlen);
	}
	ns_lock_inodes(&c, &parent, 1);
	struct inode_rec dr = dir->rec;
	if (S_ISDIR(mode))
		dr.nlink++;
	dr.mtime_sec = dr.ctime_sec = r.mtime_sec;
	dr.mtime_nsec = dr.ctime_nsec = r.mtime_nsec;
	ns_put_rec(&c, dir, &dr);
	ns_count(&c, dir, 1);
	rc = ns_commit(&c, 0);
	ns_unlock_inodes(&c);
	if (rc)
		goto out;
	struct fs_inode *in = ns_hold(&c, inode_new(fs, ino, &r));
	if (!in) {
		rc = -ENOMEM;
		goto out;
	}
	if (S_ISDIR(mode)) {
		in->nentries = 0;
		dcache_dir_made(&fs->dcache, ino);
	}
	inode_stat(fs, in, st);
	fs_lookup_given(fs, in); /* the reply hands name and attributes out */
	in->fresh = true;
out:
	ns_end(&c);
	return rc;
}

int fs_link(struct fs *fs, uint64_t ino, uint64_t parent, const char *name, struct stat *st)
{
	int rc = fs_check_name(name);
	if (rc)
		return rc;
	struct ns_change c;
	if ((rc = ns_begin(&c, fs, parent)))
		goto out;
	struct fs_inode *dir = c.dir, *in = ns_get(&c, ino, &rc);
	if (!in)
		goto out;
	if (S_ISDIR(in->rec.mode)) {
		rc = -EPERM;
		goto out;
	}
	if (in->rec.nlink == 0 || in->gone) {
		rc = -ENOENT;
		goto out;
	}
	if (in->rec.nlink >= 65000) {
		rc = -EMLINK;
		goto out;
	}
	uint64_t other;
	uint8_t type;
	rc = dirent_get(fs, parent, name, &other, &type);
	if (rc != -ENOENT) {
		rc = rc ? rc : -EEXIST;
		goto out;
	}
	uint64_t inos[2] = {ino, parent};
	ns_lock_inodes(&c, inos, 2);
	struct inode_rec r = in->rec, dr = dir->rec;
	r.nlink++;
	inode_touch(fs, &r, false, true);
	inode_touch_as(&dr, &r, true, true);
	ns_put_name(&c, parent, name, ino, dtype_of(r.mode));
	ns_put_rec(&c, in, &r);
	ns_put_rec(&c, dir, &dr);
	ns_count(&c, dir, 1);
	if (!(rc = ns_commit(&c, 0)))
		inode_stat(fs, in, st);
	ns_unlock_inodes(&c);
	if (!rc)
		fs_lookup_given(fs, in);
out:
	ns_end(&c);
	return rc;
}

/* 0 when directory d has no entry, else -ENOTEMPTY (or -errno).  From
 * its count when known; else a look at the store, which for a directory
 * whose entries were deleted steps over every deletion the store still
 * holds (a few microseconds each).  ns_lock held. */
static int dir_is_empty(struct fs *fs, struct fs_inode *d)
{
	if (d->nentries >= 0)
		return d->nentries ? -ENOTEMPTY : 0;
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	size_t ll = key_dirent_prefix(lo, d->ino), hl = key_dirent_prefix(hi, d->ino + 1);
	struct store_iter_options io = {.lower = lo, .lower_len = ll, .upper = hi, .upper_len = hl};
	struct store_iter *it;
	int rc = store_iter_new(fs->st, &io, &it);
	if (rc)
		return rc;
	store_iter_seek_first(it);
	rc = store_iter_valid(it) ? -ENOTEMPTY : store_iter_status(it);
	store_iter_free(it);
	if (!rc)
		d->nentries = 0; /* counted from here on */
	return rc;
}

/* Drop one name of in (already checked) into the change: nlink and
 * orphan, into *r, in's record with the commit; its ctime is the
 * operation's, stamped on `stamp`. */
static void drop_name(struct ns_change *c, struct fs_inode *in, struct inode_rec *r,
		      const struct inode_rec *stamp)
{
	if (S_ISDIR(r->mode))
		r->nlink = 0;
	else if (r->nlink > 0)
		r->nlink--;
	inode_touch_as(r, stamp, false, true);
	if (r->nlink == 0)
		orphan_put(c->b, in->ino);
	ns_put_rec(c, in, r);
}

/*
 * Can the last name of in go with the inode itself, in the unlink's own
 * batch (SCHEMA.md "Orphans")?  Only a regular file (a FIFO, socket or
 * device can be open with no OPEN sent to us) that nobody has open, has
 * no attribute and keeps everything it has in its record and inline
 * data: no chunk record, whatever the flags say (a crash can leave a
 * first chunk's record before its flag), which is known without a look
 * for a file this mount made and never gave one (fresh).  Then there
 * is nothing for the reclaim thread to do but delete two keys: no orphan
 * key, no hand-off, no second write.  1, 0, or -errno.  Locks: ns_lock
 * and in's stripe held; nopen is read under itab_lock.
 */
static int purgeable(struct fs *fs, struct fs_inode *in)
{
	const struct inode_rec *r = &in->rec;
	if (!S_ISREG(r->mode) || r->nlink > 1 || in->in_flux ||
	    (r->flags & (INODE_FLAG_CHUNKED | INODE_FLAG_XATTR)) || fs->opt.read_only)
		return 0;
	pthread_mutex_lock(&fs->itab_lock);
	bool open = in->nopen > 0;
	pthread_mutex_unlock(&fs->itab_lock);
	if (open)
		return 0;
	if (in->fresh)
		return 1; /* no chunk record was ever made for it */
	int chunks = chunk_any(fs, in->ino);
	return chunks < 0 ? chunks : !chunks;
}

int fs_unlink(struct fs *fs, uint64_t parent, const char *name, bool is_rmdir)
{
	int rc = fs_check_name(name);
	if (rc)
		return rc;
	struct ns_change c;
	if ((rc = ns_begin(&c, fs, parent)))
		goto out;
	struct fs_inode *dir = c.dir;
	uint64_t ino;
	uint8_t type;
	if ((rc = dirent_get(fs, parent, name, &ino, &type)))
		goto out;
	struct fs_inode *in = ns_get(&c, ino, &rc);
	if (!in)
		goto out;
	bool isdir = S_ISDIR(in->rec.mode);
	if (is_rmdir && !isdir) {
		rc = -ENOTDIR;
		goto out;
	}
	if (!is_rmdir && isdir) {
		rc = -EISDIR;
		goto out;
	}
	if (isdir && (rc = dir_is_empty(fs, in)))
		goto out;
	uint64_t inos[2] = {ino, parent};
	ns_lock_inodes(&c, inos, 2);
	struct inode_rec r = in->rec, dr = dir->rec;
	int purge = purgeable(fs, in);
	if (purge < 0) {
		rc = purge;
		goto out;
	}
	ns_del_name(&c, parent, name);
	inode_touch(fs, &dr, true, true); /* the operation's time, once */
	if (purge) {
		r.nlink = 0;
		inode_touch_as(&r, &dr, false, true);
		inode_keys_delete(c.b, ino);
		ns_set_rec(&c, in, &r);
	} else {
		drop_name(&c, in, &r, &dr);
	}
	if (isdir && dr.nlink > 2)
		dr.nlink--;
	ns_put_rec(&c, dir, &dr);
	ns_count(&c, dir, -1);
	/* A removal frees metadata: it may use the store's reserve (a full
	 * metadata disk must not stop rm). */
	rc = ns_commit(&c, STORE_WRITE_RESERVE);
	if (!rc && purge) { /* under itab_lock, as reclaim_inode sets it */
		pthread_mutex_lock(&fs->itab_lock);
		in->gone = true;
		pthread_mutex_unlock(&fs->itab_lock);
	}
	ns_unlock_inodes(&c);
out:
	ns_end(&c);
	return rc;
}

/* Is anc an ancestor of (or equal to) dir?  Walks parent pointers up, as
 * deep as the tree goes.  Every step goes to a lower depth in a sound
 * store, so the walk ends; a damaged store with a cycle of parents is
 * caught by the step count, which no real path can exceed (each step is a
 * distinct inode, and every inode number is below next_ino). */
static int is_ancestor(struct fs *fs, uint64_t anc, uint64_t dir)
{
	pthread_mutex_lock(&fs->ino_lock);
	uint64_t bound = fs->next_ino;
	pthread_mutex_unlock(&fs->ino_lock);
	for (uint64_t steps = 0; steps <= bound; steps++) {
		if (dir == anc)
			return 1;
		if (dir == LSMFS_ROOT_INO || dir == 0)
			return 0;
		int rc;
		struct fs_inode *d = inode_get(fs, dir, &rc);
		if (!d)
			return rc;
		uint64_t up = d->rec.parent;
		inode_put(fs, d);
		if (up == dir)
			return 0;
		dir = up;
	}
	fs_logf(fs, "directory %llu: its parents form a cycle (run fsck.lsmfs)",
		(unsigned long long)dir);
	return -EUCLEAN;
}

/* A rename's operands: the entry (parent, name) names src (sino, stype),
 * and (newparent, newname) names dst (dino, dtype) or nothing (dino 0, dst
 * NULL); sdir and ddir are the two parents, one inode when parent ==
 * newparent. */
struct rename_op {
	uint64_t parent, newparent, sino, dino;
	const char *name, *newname;
	uint8_t stype, dtype;
	bool exchange, noreplace, sisdir, disdir;
	struct fs_inode *sdir, *ddir, *src, *dst;
};

/*
 * The rename's entries and inodes looked up, and whether it may go: the
 * kinds of src and a dst it replaces agree, a directory replaced is
 * empty, and no directory moves below itself.  0 with op->src set; 0 with
 * op->src NULL when there is nothing to do; or -errno.
 */
static int rename_look(struct ns_change *c, struct rename_op *op)
{
	struct fs *fs = c->fs;
	int rc;
	if (!(op->ddir = ns_get_dir(c, op->newparent, &rc)))
		return rc;
	if ((rc = dirent_get(fs, op->parent, op->name, &op->sino, &op->stype)))
		return rc;
	rc = dirent_get(fs, op->newparent, op->newname, &op->dino, &op->dtype);
	if (rc && rc != -ENOENT)
		return rc;
	if (op->exchange && !op->dino)
		return -ENOENT;
	if (op->noreplace && op->dino)
		return -EEXIST;
	if (op->dino == op->sino)
		return 0; /* two names of one inode: POSIX says do nothing */
	if (!(op->src = ns_get(c, op->sino, &rc)))
		return rc;
	if (op->dino && !(op->dst = ns_get(c, op->dino, &rc)))
		return rc;
	op->sisdir = S_ISDIR(op->src->rec.mode);
	op->disdir = op->dst && S_ISDIR(op->dst->rec.mode);
	if (op->dst && !op->exchange) {
		if (op->sisdir && !op->disdir)
			return -ENOTDIR;
		if (!op->sisdir && op->disdir)
			return -EISDIR;
		if (op->disdir && (rc = dir_is_empty(fs, op->dst)))
			return rc;
	}
	/* A directory may not move below itself (the kernel checks this
	 * too; the store must never hold a cycle even if it did not). */
	if (op->parent != op->newparent) {
		if (op->sisdir && (rc = is_ancestor(fs, op->sino, op->newparent)) != 0)
			return rc > 0 ? -EINVAL : rc;
		if (op->exchange && op->disdir && (rc = is_ancestor(fs, op->dino, op->parent)) != 0)
			return rc > 0 ? -EINVAL : rc;
	}
	return 0;
}

int fs_rename(struct fs *fs, uint64_t parent, const char *name, uint64_t newparent,
	      const char *newname, unsigned flags)
{
	int rc = fs_check_name(name);
	if (!rc)
		rc = fs_check_name(newname);
	if (rc)
		return rc;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	struct rename_op op = {.parent = parent, .name = name, .newparent = newparent,
			       .newname = newname, .exchange = flags & RENAME_EXCHANGE,
			       .noreplace = flags & RENAME_NOREPLACE};
	struct ns_change c;
	if ((rc = ns_begin(&c, fs, parent)))
		goto out;
	op.sdir = c.dir;
	if ((rc = rename_look(&c, &op)) || !op.src)
		goto out;

	uint64_t inos[4] = {parent, newparent, op.sino, op.dino};
	ns_lock_inodes(&c, inos, 4);
	/* Work on copies; the two parents may be one inode. */
	struct inode_rec sr = op.src->rec, dr = op.dst ? op.dst->rec : op.src->rec;
	struct inode_rec spr = op.sdir->rec, other_parent = op.ddir->rec;
	struct inode_rec *dpr = parent == newparent ? &spr : &other_parent;
	inode_touch(fs, &sr, false, true); /* the operation's time, once */
	if (op.exchange) {
		ns_put_name(&c, parent, name, op.dino, op.dtype);
		ns_put_name(&c, newparent, newname, op.sino, op.stype);
		if (parent != newparent) {
			if (op.sisdir) {
				sr.parent = newparent;
				spr.nlink--;
				dpr->nlink++;
			}
			if (op.disdir) {
				dr.parent = parent;
				dpr->nlink--;
				spr.nlink++;
			}
		}
		inode_touch_as(&dr, &sr, false, true);
	} else {
		ns_del_name(&c, parent, name);
		ns_put_name(&c, newparent, newname, op.sino, op.stype);
		if (op.dst) {
			drop_name(&c, op.dst, &dr, &sr);
			if (op.disdir)
				dpr->nlink--; /* the replaced directory's ".." */
		}
		if (op.sisdir && parent != newparent) {
			sr.parent = newparent;
			spr.nlink--;
			dpr->nlink++;
		}
	}
	inode_touch_as(&spr, &sr, true, true);
	inode_touch_as(dpr, &sr, true, true);
	ns_put_rec(&c, op.src, &sr);
	if (op.dst && op.exchange)
		ns_put_rec(&c, op.dst, &dr);
	ns_put_rec(&c, op.sdir, &spr);
	if (parent != newparent)
		ns_put_rec(&c, op.ddir, dpr);
	/* An exchange keeps both counts; one directory nets 0 or -1. */
	ns_count(&c, op.sdir, op.exchange ? 0 : -1);
	ns_count(&c, op.ddir, op.exchange || op.dst ? 0 : 1);
	/* A rename keeps (or, over a target, shrinks) the metadata: it may
	 * use the store's reserve. */
	rc = ns_commit(&c, STORE_WRITE_RESERVE);
	ns_unlock_inodes(&c);
out:
	ns_end(&c);
	return rc;
}

int fs_readlink(struct fs *fs, uint64_t ino, char **target)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_data(k, ino);
	void *v;
	size_t vl;
	int rc = store_get(fs->st, NULL, k, kl, &v, &vl);
	if (rc == -ENOENT)
		return -EUCLEAN; /* a symlink always has its target */
	if (rc)
		return rc;
	*target = v; /* store_get NUL-terminates */
	return 0;
}

int fs_readdir(struct fs *fs, uint64_t ino, uint64_t off, fs_fill_fn fill, void *ctx)
{
	int rc;
	struct fs_inode *d = inode_get(fs, ino, &rc);
	if (!d)
		return rc;
	uint64_t up = d->rec.parent ? d->rec.parent : ino;
	bool isdir = S_ISDIR(d->rec.mode);
	inode_put(fs, d);
	if (!isdir)
		return -ENOTDIR;
	if (off == 0 && fill(ctx, ".", ino, DT_DIR, 1))
		return 0;
	if (off <= 1 && fill(ctx, "..", up, DT_DIR, 2))
		return 0;
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	size_t ll = key_dirent_pos(lo, ino, off < 3 ? 3 : off);
	size_t hl = key_dirent_prefix(hi, ino + 1);
	struct store_iter_options io = {.lower = lo, .lower_len = ll, .upper = hi, .upper_len = hl};
	struct store_iter *it;
	if ((rc = store_iter_new(fs->st, &io, &it)))
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		uint64_t child;
		uint8_t type;
		if (kl <= 17 || kl > 17 + NAME_MAX_BYTES || dirent_val_decode(v, vl, &child, &type)) {
			fs_logf(fs, "directory %llu: damaged entry skipped", (unsigned long long)ino);
			continue;
		}
		char name[NAME_MAX_BYTES + 1];
		memcpy(name, k + 17, kl - 17);
		name[kl - 17] = 0;
		if (fill(ctx, name, child, type, get_be64(k + 9) + 1))
			break;
	}
	rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

int fs_fsyncdir(struct fs *fs, uint64_t ino)
{
	(void)ino;
	return store_sync(fs->st);
}
