/*
 * dir.c: the namespace: lookup, making inodes (files, directories,
 * symlinks, devices), links, unlink/rmdir, rename and readdir
 * (SCHEMA.md, "Directory entries").
 *
 * Every change holds fs->ns_lock for its whole check-then-act and commits
 * its keys in one store batch, so a crash leaves either the old or the new
 * namespace.  Records of the inodes it changes are updated in memory under
 * their stripe locks and written whole into the same batch.  inode_put()
 * may reclaim an inode and take ns_lock: call it only after unlocking.
 */
#include "acl.h"
#include "engine.h"

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
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in) {
		if (rc == -ENOENT)
			fs_logf(fs, "directory %llu: entry \"%s\" names missing inode %llu",
				(unsigned long long)parent, name, (unsigned long long)ino);
		return rc == -ENOENT ? -EUCLEAN : rc;
	}
	inode_lock(fs, in);
	inode_stat(fs, in, st);
	inode_unlock(fs, in);
	fs_lookup_ref(fs, in, 1);
	inode_put(fs, in);
	return 0;
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
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	struct fs_inode *in = NULL;
	pthread_mutex_lock(&fs->ns_lock);
	struct fs_inode *dir = get_dir(fs, parent, &rc);
	if (!dir)
		goto unlock;
	uint64_t ino;
	uint8_t type;
	rc = dirent_get(fs, parent, name, &ino, &type);
	if (rc != -ENOENT) {
		rc = rc ? rc : -EEXIST;
		goto unlock;
	}
	if ((rc = fs_alloc_ino(fs, &ino)))
		goto unlock;

	struct inode_rec r;
	memset(&r, 0, sizeof(r));
	r.mode = mode;
	r.uid = uid;
	r.gid = gid;
	if (dir->rec.mode & S_ISGID) { /* BSD group semantics, as ext4 */
		r.gid = dir->rec.gid;
		if (S_ISDIR(mode))
			r.mode |= S_ISGID;
	}
	r.nlink = S_ISDIR(mode) ? 2 : 1;
	r.rdev = (S_ISCHR(mode) || S_ISBLK(mode)) ? rdev : 0;
	r.generation = fs->generation;
	r.parent = S_ISDIR(mode) ? parent : 0;
	r.size = tlen;
	fs_now(fs, &r.atime_sec, &r.atime_nsec);
	r.mtime_sec = r.ctime_sec = r.btime_sec = r.atime_sec;
	r.mtime_nsec = r.ctime_nsec = r.btime_nsec = r.atime_nsec;
	/* Permission bits from the parent's default ACL or the umask. */
	if ((rc = acl_fs_inherit(fs, dir, ino, &r, umask, b)))
		goto unlock;

	inode_rec_put(b, ino, &r);
	dirent_put(b, parent, name, ino, dtype_of(mode));
	if (link_target) {
		uint8_t k[KEY_MAX];
		size_t kl = key_data(k, ino);
		store_batch_put(b, k, kl, link_target, tlen);
	}
	inode_lock(fs, dir);
	struct inode_rec dr = dir->rec;
	if (S_ISDIR(mode))
		dr.nlink++;
	dr.mtime_sec = dr.ctime_sec = r.mtime_sec;
	dr.mtime_nsec = dr.ctime_nsec = r.mtime_nsec;
	inode_rec_put(b, parent, &dr);
	rc = store_write(fs->st, b, 0);
	dirent_done(fs, rc, parent, name, ino, dtype_of(mode));
	count_entries(dir, rc, 1);
	if (!rc) {
		dir->rec = dr;
		dir->dirty = false;
	}
	inode_unlock(fs, dir);
	if (rc)
		goto unlock;
	in = inode_new(fs, ino, &r);
	if (!in) {
		rc = -ENOMEM;
		goto unlock;
	}
	if (S_ISDIR(mode)) {
		in->nentries = 0;
		dcache_dir_made(&fs->dcache, ino);
	}
	inode_stat(fs, in, st);
	in->nlookup = 1; /* not yet visible to anyone else: no lock needed */
	in->fresh = true;
unlock:
	pthread_mutex_unlock(&fs->ns_lock);
	if (in)
		inode_put(fs, in);
	if (dir)
		inode_put(fs, dir);
	store_batch_free(b);
	return rc;
}

int fs_link(struct fs *fs, uint64_t ino, uint64_t parent, const char *name, struct stat *st)
{
	int rc = fs_check_name(name);
	if (rc)
		return rc;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	struct fs_inode *in = NULL;
	pthread_mutex_lock(&fs->ns_lock);
	struct fs_inode *dir = get_dir(fs, parent, &rc);
	if (!dir)
		goto unlock;
	in = inode_get(fs, ino, &rc);
	if (!in)
		goto unlock;
	if (S_ISDIR(in->rec.mode)) {
		rc = -EPERM;
		goto unlock;
	}
	if (in->rec.nlink == 0 || in->gone) {
		rc = -ENOENT;
		goto unlock;
	}
	if (in->rec.nlink >= 65000) {
		rc = -EMLINK;
		goto unlock;
	}
	uint64_t other;
	uint8_t type;
	rc = dirent_get(fs, parent, name, &other, &type);
	if (rc != -ENOENT) {
		rc = rc ? rc : -EEXIST;
		goto unlock;
	}
	struct lockset ls;
	uint64_t inos[2] = {ino, parent};
	lockset_lock(fs, &ls, inos, 2);
	struct inode_rec r = in->rec, dr = dir->rec;
	r.nlink++;
	inode_touch(fs, &r, false, true);
	inode_touch_as(&dr, &r, true, true);
	dirent_put(b, parent, name, ino, dtype_of(r.mode));
	inode_rec_put(b, ino, &r);
	inode_rec_put(b, parent, &dr);
	rc = store_write(fs->st, b, 0);
	dirent_done(fs, rc, parent, name, ino, dtype_of(r.mode));
	count_entries(dir, rc, 1);
	if (!rc) {
		in->rec = r;
		dir->rec = dr;
		in->dirty = dir->dirty = false;
		inode_stat(fs, in, st);
	}
	lockset_unlock(&ls);
	if (!rc)
		fs_lookup_ref(fs, in, 1);
unlock:
	pthread_mutex_unlock(&fs->ns_lock);
	if (in)
		inode_put(fs, in);
	if (dir)
		inode_put(fs, dir);
	store_batch_free(b);
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

/* Drop one name of in (already checked) into batch b: nlink and orphan;
 * its ctime is the operation's, stamped on `stamp`. */
static void drop_name(struct store_batch *b, struct fs_inode *in, struct inode_rec *r,
		      const struct inode_rec *stamp)
{
	if (S_ISDIR(r->mode))
		r->nlink = 0;
	else if (r->nlink > 0)
		r->nlink--;
	inode_touch_as(r, stamp, false, true);
	if (r->nlink == 0)
		orphan_put(b, in->ino);
	inode_rec_put(b, in->ino, r);
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
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	struct fs_inode *in = NULL;
	pthread_mutex_lock(&fs->ns_lock);
	struct fs_inode *dir = get_dir(fs, parent, &rc);
	if (!dir)
		goto unlock;
	uint64_t ino;
	uint8_t type;
	if ((rc = dirent_get(fs, parent, name, &ino, &type)))
		goto unlock;
	in = inode_get(fs, ino, &rc);
	if (!in)
		goto unlock;
	bool isdir = S_ISDIR(in->rec.mode);
	if (is_rmdir && !isdir) {
		rc = -ENOTDIR;
		goto unlock;
	}
	if (!is_rmdir && isdir) {
		rc = -EISDIR;
		goto unlock;
	}
	if (isdir && (rc = dir_is_empty(fs, in)))
		goto unlock;
	struct lockset ls;
	uint64_t inos[2] = {ino, parent};
	lockset_lock(fs, &ls, inos, 2);
	struct inode_rec r = in->rec, dr = dir->rec;
	int purge = purgeable(fs, in);
	if (purge < 0) {
		rc = purge;
		lockset_unlock(&ls);
		goto unlock;
	}
	dirent_del(b, parent, name);
	inode_touch(fs, &dr, true, true); /* the operation's time, once */
	if (purge) {
		r.nlink = 0;
		inode_touch_as(&r, &dr, false, true);
		inode_keys_delete(b, ino);
	} else {
		drop_name(b, in, &r, &dr);
	}
	if (isdir && dr.nlink > 2)
		dr.nlink--;
	inode_rec_put(b, parent, &dr);
	/* A removal frees metadata: it may use the store's reserve (a full
	 * metadata disk must not stop rm). */
	rc = store_write(fs->st, b, STORE_WRITE_RESERVE);
	dirent_done(fs, rc, parent, name, 0, 0);
	count_entries(dir, rc, -1);
	if (!rc) {
		in->rec = r;
		dir->rec = dr;
		in->dirty = dir->dirty = false;
		if (purge) { /* under itab_lock, as reclaim_inode sets it */
			pthread_mutex_lock(&fs->itab_lock);
			in->gone = true;
			pthread_mutex_unlock(&fs->itab_lock);
		}
	}
	lockset_unlock(&ls);
unlock:
	pthread_mutex_unlock(&fs->ns_lock);
	if (in)
		inode_put(fs, in);
	if (dir)
		inode_put(fs, dir);
	store_batch_free(b);
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
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	struct fs_inode *sdir = NULL, *ddir = NULL, *src = NULL, *dst = NULL;
	pthread_mutex_lock(&fs->ns_lock);
	sdir = get_dir(fs, parent, &rc);
	if (!sdir)
		goto unlock;
	ddir = get_dir(fs, newparent, &rc);
	if (!ddir)
		goto unlock;
	uint64_t sino, dino = 0;
	uint8_t stype, dtype;
	if ((rc = dirent_get(fs, parent, name, &sino, &stype)))
		goto unlock;
	rc = dirent_get(fs, newparent, newname, &dino, &dtype);
	if (rc && rc != -ENOENT)
		goto unlock;
	rc = 0;
	if ((flags & RENAME_EXCHANGE) && !dino) {
		rc = -ENOENT;
		goto unlock;
	}
	if ((flags & RENAME_NOREPLACE) && dino) {
		rc = -EEXIST;
		goto unlock;
	}
	if (dino == sino)
		goto unlock; /* two names of one inode: POSIX says do nothing */
	if (!(src = inode_get(fs, sino, &rc)))
		goto unlock;
	if (dino && !(dst = inode_get(fs, dino, &rc)))
		goto unlock;
	bool sisdir = S_ISDIR(src->rec.mode), disdir = dst && S_ISDIR(dst->rec.mode);
	if (dst && !(flags & RENAME_EXCHANGE)) {
		if (sisdir && !disdir) {
			rc = -ENOTDIR;
			goto unlock;
		}
		if (!sisdir && disdir) {
			rc = -EISDIR;
			goto unlock;
		}
		if (disdir && (rc = dir_is_empty(fs, dst)))
			goto unlock;
	}
	/* A directory may not move below itself (the kernel checks this
	 * too; the store must never hold a cycle even if it did not). */
	if (parent != newparent) {
		if (sisdir && (rc = is_ancestor(fs, sino, newparent)) != 0) {
			rc = rc > 0 ? -EINVAL : rc;
			goto unlock;
		}
		if ((flags & RENAME_EXCHANGE) && disdir &&
		    (rc = is_ancestor(fs, dino, parent)) != 0) {
			rc = rc > 0 ? -EINVAL : rc;
			goto unlock;
		}
	}

	struct lockset ls;
	uint64_t inos[4] = {parent, newparent, sino, dino};
	lockset_lock(fs, &ls, inos, 4);
	/* Work on copies; the two parents may be one inode. */
	struct inode_rec sr = src->rec, dr = dst ? dst->rec : src->rec;
	struct inode_rec spr = sdir->rec, other_parent = ddir->rec;
	struct inode_rec *dpr = parent == newparent ? &spr : &other_parent;
	inode_touch(fs, &sr, false, true); /* the operation's time, once */
	if (flags & RENAME_EXCHANGE) {
		dirent_put(b, parent, name, dino, dtype);
		dirent_put(b, newparent, newname, sino, stype);
		if (parent != newparent) {
			if (sisdir) {
				sr.parent = newparent;
				spr.nlink--;
				dpr->nlink++;
			}
			if (disdir) {
				dr.parent = parent;
				dpr->nlink--;
				spr.nlink++;
			}
		}
		inode_touch_as(&dr, &sr, false, true);
	} else {
		dirent_del(b, parent, name);
		dirent_put(b, newparent, newname, sino, stype);
		if (dst) {
			drop_name(b, dst, &dr, &sr);
			if (disdir)
				dpr->nlink--; /* the replaced directory's ".." */
		}
		if (sisdir && parent != newparent) {
			sr.parent = newparent;
			spr.nlink--;
			dpr->nlink++;
		}
	}
	inode_touch_as(&spr, &sr, true, true);
	inode_touch_as(dpr, &sr, true, true);
	inode_rec_put(b, sino, &sr);
	if (dst && (flags & RENAME_EXCHANGE))
		inode_rec_put(b, dino, &dr);
	inode_rec_put(b, parent, &spr);
	if (parent != newparent)
		inode_rec_put(b, newparent, dpr);
	/* A rename keeps (or, over a target, shrinks) the metadata: it may
	 * use the store's reserve. */
	rc = store_write(fs->st, b, STORE_WRITE_RESERVE);
	if (flags & RENAME_EXCHANGE)
		dirent_done(fs, rc, parent, name, dino, dtype);
	else
		dirent_done(fs, rc, parent, name, 0, 0);
	dirent_done(fs, rc, newparent, newname, sino, stype);
	/* An exchange keeps both counts; one directory nets 0 or -1. */
	bool exchange = flags & RENAME_EXCHANGE;
	count_entries(sdir, rc, exchange ? 0 : -1);
	count_entries(ddir, rc, exchange || dst ? 0 : 1);
	if (!rc) {
		src->rec = sr;
		src->dirty = false;
		if (dst) {
			dst->rec = dr;
			dst->dirty = false;
		}
		sdir->rec = spr;
		sdir->dirty = false;
		if (parent != newparent) {
			ddir->rec = *dpr;
			ddir->dirty = false;
		}
	}
	lockset_unlock(&ls);
unlock:
	pthread_mutex_unlock(&fs->ns_lock);
	if (dst)
		inode_put(fs, dst);
	if (src)
		inode_put(fs, src);
	if (ddir)
		inode_put(fs, ddir);
	if (sdir)
		inode_put(fs, sdir);
	store_batch_free(b);
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
