/*
 * inode.c: the in-memory inode table and inode records.
 *
 * The table maps inode numbers to struct fs_inode while the kernel holds
 * lookups on them, files are open, or a handler uses them (core.h).  A
 * record is read from the store once and then served from memory; changes
 * that need not be durable at once (size and times of writes) mark it dirty
 * and reach the store on release, fsync, setattr or unmount.
 */
#include "core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

static size_t slot(const struct fs *fs, uint64_t ino)
{
	return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 20) & (fs->itab_size - 1);
}

static void itab_grow(struct fs *fs)
{
	size_t nsize = fs->itab_size * 2;
	struct fs_inode **n = calloc(nsize, sizeof(*n));
	if (!n)
		return; /* keep the longer chains; correctness does not depend on it */
	struct fs_inode **old = fs->itab;
	size_t osize = fs->itab_size;
	fs->itab = n;
	fs->itab_size = nsize;
	for (size_t i = 0; i < osize; i++) {
		struct fs_inode *in = old[i];
		while (in) {
			struct fs_inode *next = in->hnext;
			size_t s = slot(fs, in->ino);
			in->hnext = n[s];
			n[s] = in;
			in = next;
		}
	}
	free(old);
}

static struct fs_inode *itab_find(struct fs *fs, uint64_t ino)
{
	for (struct fs_inode *in = fs->itab[slot(fs, ino)]; in; in = in->hnext)
		if (in->ino == ino)
			return in;
	return NULL;
}

static void itab_insert(struct fs *fs, struct fs_inode *in)
{
	if (fs->itab_count >= fs->itab_size)
		itab_grow(fs);
	size_t s = slot(fs, in->ino);
	in->hnext = fs->itab[s];
	fs->itab[s] = in;
	fs->itab_count++;
}

static void itab_remove(struct fs *fs, struct fs_inode *in)
{
	struct fs_inode **pp = &fs->itab[slot(fs, in->ino)];
	while (*pp && *pp != in)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = in->hnext;
		fs->itab_count--;
	}
}

struct fs_inode *inode_peek(struct fs *fs, uint64_t ino)
{
	pthread_mutex_lock(&fs->itab_lock);
	struct fs_inode *in = itab_find(fs, ino);
	pthread_mutex_unlock(&fs->itab_lock);
	return in;
}

int inode_load_rec(struct fs *fs, uint64_t ino, struct inode_rec *rec)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_inode(k, ino);
	void *val;
	size_t vl;
	int rc = store_get(fs->st, NULL, k, kl, &val, &vl);
	if (rc)
		return rc;
	rc = inode_rec_decode(val, vl, rec);
	free(val);
	if (rc)
		fs_logf(fs, "inode %llu: damaged inode record (%zu bytes)",
			(unsigned long long)ino, vl);
	return rc;
}

void inode_rec_put(struct store_batch *b, uint64_t ino, const struct inode_rec *rec)
{
	uint8_t k[KEY_MAX], v[INODE_REC_LEN];
	size_t kl = key_inode(k, ino);
	inode_rec_encode(rec, v);
	(void)store_batch_put(b, k, kl, v, sizeof(v)); /* batches grow; only ENOMEM */
}

void inode_keys_delete(struct store_batch *b, uint64_t ino)
{
	uint8_t k[KEY_MAX];
	(void)store_batch_delete(b, k, key_inode(k, ino)); /* only ENOMEM, caught by store_write */
	(void)store_batch_delete(b, k, key_data(k, ino));
	(void)store_batch_delete(b, k, key_flux(k, ino));
}

/*
 * The inode for ino with a handler reference, loading its record if
 * needed.  Returns NULL with *err = -ENOENT when it does not exist.
 * The record is read outside itab_lock; two racing loaders keep the first.
 */
struct fs_inode *inode_get(struct fs *fs, uint64_t ino, int *err)
{
	pthread_mutex_lock(&fs->itab_lock);
	struct fs_inode *in = itab_find(fs, ino);
	if (in) {
		in->refs++;
		pthread_mutex_unlock(&fs->itab_lock);
		return in;
	}
	pthread_mutex_unlock(&fs->itab_lock);

	struct inode_rec rec;
	int rc = inode_load_rec(fs, ino, &rec);
	if (rc) {
		*err = rc;
		return NULL;
	}
	struct fs_inode *fresh = calloc(1, sizeof(*fresh));
	if (!fresh) {
		*err = -ENOMEM;
		return NULL;
	}
	fresh->ino = ino;
	fresh->rec = rec;
	fresh->loaded = true;
	fresh->refs = 1;
	fresh->nentries = -1;
	pthread_mutex_lock(&fs->itab_lock);
	in = itab_find(fs, ino);
	if (in) {
		in->refs++;
		free(fresh);
	} else {
		/* Let go with the kernel's references kept aside: back. */
		fresh->nlookup = kref_take(&fs->kref, ino, &fresh->cached_until_ns);
		itab_insert(fs, fresh);
		in = fresh;
	}
	pthread_mutex_unlock(&fs->itab_lock);
	return in;
}

struct fs_inode *inode_new(struct fs *fs, uint64_t ino, const struct inode_rec *rec)
{
	struct fs_inode *in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	in->ino = ino;
	in->rec = *rec;
	in->loaded = true;
	in->refs = 1;
	in->nentries = -1;
	pthread_mutex_lock(&fs->itab_lock);
	in->nlookup = kref_take(&fs->kref, ino, &in->cached_until_ns); /* 0: a new inode */
	itab_insert(fs, in);
	pthread_mutex_unlock(&fs->itab_lock);
	return in;
}

struct fs_inode *inode_ref(struct fs *fs, struct fs_inode *in)
{
	pthread_mutex_lock(&fs->itab_lock);
	in->refs++;
	pthread_mutex_unlock(&fs->itab_lock);
	return in;
}

/* Drop an inode nobody references: persist what is dirty, or reclaim it
 * when its last name is gone. */
static void drop(struct fs *fs, struct fs_inode *in)
{
	if (in->rec.nlink == 0 && !in->gone && !fs->opt.read_only) {
		/* The data goes in the background (the orphaned hook: reclaim.c), holding no
		 * lock that other operations need. */
		fs->inode_ops->close_fds(fs, in);
		/* Chunks kept from an earlier drop go with the data; under
		 * the lock, so that chunk_record_unsynced is not recording
		 * them as the reclaim removes them. */
		inode_lock(fs, in);
		fs->inode_ops->forget_unsynced(fs, in->ino);
		inode_unlock(fs, in);
		int rc = fs->inode_ops->orphaned(fs, in->ino);
		if (rc)
			fs_logf(fs, "inode %llu: reclaiming: %s (left as an orphan for the next mount)",
				(unsigned long long)in->ino, strerror(-rc));
	} else {
		inode_lock(fs, in);
		int rc = in->gone ? 0 : inode_persist(fs, in, false);
		fs->inode_ops->close_fds(fs, in);
		/* Chunks written since their lengths were recorded outlive
		 * the inode in memory: a later fsync, or the unmount, still
		 * covers them (chunk.c). */
		bool full = !in->gone && fs->inode_ops->keep_unsynced(fs, in);
		inode_unlock(fs, in);
		if (rc)
			fs_logf(fs, "inode %llu: writing its record: %s",
				(unsigned long long)in->ino, strerror(-rc));
		if (full && (rc = fs->inode_ops->record_unsynced(fs, 0)))
			fs_logf(fs, "recording the lengths of chunks written without fsync: %s",
				strerror(-rc));
	}
	fs->inode_ops->free(fs, in);
	free(in);
}

/* Nothing in memory but the record, which the store has as it is: the
 * inode can be let go while the kernel still knows it (kref.c).  A file
 * this mount made loses its `fresh` mark with it (its unlink then looks for
 * chunk records, as for any other). */
static bool can_let_go(const struct fs_inode *in)
{
	return in->loaded && !in->dirty && !in->in_flux && !in->gone &&
	       !in->data && in->rec.nlink > 0;
}

static void unref_locked_maybe_drop(struct fs *fs, struct fs_inode *in)
{
	if (in->refs == 0 && in->nlookup == 0 && in->nopen == 0) {
		itab_remove(fs, in);
		pthread_mutex_unlock(&fs->itab_lock);
		drop(fs, in);
		return;
	}
	if (in->refs == 0 && in->nopen == 0 && fs->itab_count > fs->opt.inode_cache &&
	    can_let_go(in) && kref_add(&fs->kref, in->ino, in->nlookup, in->cached_until_ns) == 0) {
		itab_remove(fs, in);
		pthread_mutex_unlock(&fs->itab_lock);
		free(in);
		return;
	}
	pthread_mutex_unlock(&fs->itab_lock);
}

void inode_put(struct fs *fs, struct fs_inode *in)
{
	pthread_mutex_lock(&fs->itab_lock);
	in->refs--;
	unref_locked_maybe_drop(fs, in);
}

void fs_forget(struct fs *fs, uint64_t ino, uint64_t n)
{
	pthread_mutex_lock(&fs->itab_lock);
	struct fs_inode *in = itab_find(fs, ino);
	if (!in) {
		(void)kref_forget(&fs->kref, ino, n); /* let go, or unknown */
		pthread_mutex_unlock(&fs->itab_lock);
		return;
	}
	in->nlookup = in->nlookup > n ? in->nlookup - n : 0;
	unref_locked_maybe_drop(fs, in);
}

void fs_lookup_given(struct fs *fs, struct fs_inode *in)
{
	double t = fs->opt.attr_timeout < fs->opt.entry_timeout ? fs->opt.attr_timeout
								: fs->opt.entry_timeout;
	uint64_t until = t > 0 ? fs_mono_ns() + (uint64_t)(t * 1e9) : 0;
	pthread_mutex_lock(&fs->itab_lock);
	in->nlookup++;
	in->cached_until_ns = until;
	pthread_mutex_unlock(&fs->itab_lock);
}

bool fs_kernel_has_attrs(struct fs *fs, uint64_t ino)
{
	uint64_t now = fs_mono_ns();
	pthread_mutex_lock(&fs->itab_lock);
	struct fs_inode *in = itab_find(fs, ino);
	bool has = in ? in->nlookup > 0 && now < in->cached_until_ns
		      : now < kref_until(&fs->kref, ino);
	pthread_mutex_unlock(&fs->itab_lock);
	return has;
}

static int persist(struct fs *fs, struct fs_inode *in, unsigned flags)
{
	bool sync = flags & STORE_WRITE_SYNC;
	if (in->gone) /* deleted: nothing of it is written again */
		in->dirty = false;
	if ((!in->dirty && !in->in_flux) || in->gone)
		return sync ? store_sync(fs->st) : 0;
	if (in->rec.nlink == 0) {
		/* Unlinked (the orphan list has it): its record is deleted at
		 * the last close, or at the next mount after a crash, so new
		 * times or sizes would be written only to be dropped. */
		in->dirty = false;
		return sync ? store_sync(fs->st) : 0;
	}
	/* The record and, when chunks were changing, the end of their `G`
	 * mark (chunk.c): the stored size now covers every chunk. */
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	inode_rec_put(b, in->ino, &in->rec);
	if (in->in_flux) {
		uint8_t k[KEY_MAX];
		store_batch_delete(b, k, key_flux(k, in->ino));
	}
	int rc = store_write(fs->st, b, flags);
	store_batch_free(b);
	if (!rc)
		in->dirty = in->in_flux = false;
	return rc;
}

int inode_persist(struct fs *fs, struct fs_inode *in, bool sync)
{
	return persist(fs, in, sync ? STORE_WRITE_SYNC : 0);
}

int fs_persist_all(struct fs *fs)
{
	/* The dirty inodes, each with a reference, gathered under itab_lock;
	 * then each persisted under its own lock with itab_lock released:
	 * requests take an inode's lock before itab_lock (fs_open_file, the
	 * unlink's purge), and a remount read-only calls this with requests
	 * in flight (rdonly.c). */
	pthread_mutex_lock(&fs->itab_lock);
	size_t n = 0;
	struct fs_inode **dirty = calloc(fs->itab_count ? fs->itab_count : 1, sizeof(*dirty));
	if (!dirty) {
		pthread_mutex_unlock(&fs->itab_lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < fs->itab_size; i++)
		for (struct fs_inode *in = fs->itab[i]; in; in = in->hnext)
			if (in->dirty || in->in_flux ||
			    (in->data && (in->data->ndirty || in->data->nnew || in->data->nmarked))) {
				in->refs++;
				dirty[n++] = in;
			}
	pthread_mutex_unlock(&fs->itab_lock);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		struct fs_inode *in = dirty[i];
		inode_lock(fs, in);
		/* Unmount: the lengths of chunks written since the last fsync
		 * and an overwrite of a record of fixed size, which may use
		 * the store's reserve so that they reach the store on a full
		 * disk (SCHEMA.md "Chunk lengths"). */
		int r = 0;
		if (!in->gone && in->rec.nlink > 0 && in->data) {
			iogate_drain(fs, in);
			r = fs->inode_ops->sync_dirty(fs, in, STORE_WRITE_RESERVE);
		}
		if (r)
			fs_logf(fs, "inode %llu: recording its chunks' lengths: %s",
				(unsigned long long)in->ino, strerror(-r));
		int r2 = persist(fs, in, STORE_WRITE_RESERVE);
		if (!r)
			r = r2;
		inode_unlock(fs, in);
		if (r && !rc)
			rc = r;
		inode_put(fs, in);
	}
	free(dirty);
	/* Then those of inodes no longer in memory. */
	int r = fs->inode_ops->record_unsynced(fs, STORE_WRITE_RESERVE);
	if (r)
		fs_logf(fs, "recording the lengths of chunks written without fsync: %s",
			strerror(-r));
	return rc ? rc : r;
}

bool inode_caller_in_group(const struct fs_caller *c, gid_t gid)
{
	if (!c || c->uid == 0 || c->gid == gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

void inode_kill_suidgid(struct inode_rec *r, const struct fs_caller *caller)
{
	if (S_ISDIR(r->mode))
		return;
	r->mode &= ~(uint32_t)S_ISUID;
	if ((r->mode & S_IXGRP) || !inode_caller_in_group(caller, r->gid))
		r->mode &= ~(uint32_t)S_ISGID;
}

void inode_touch(struct fs *fs, struct inode_rec *r, bool mtime, bool ctime)
{
	int64_t s;
	uint32_t ns;
	fs_now(fs, &s, &ns);
	if (mtime) {
		r->mtime_sec = s;
		r->mtime_nsec = ns;
	}
	if (ctime) {
		r->ctime_sec = s;
		r->ctime_nsec = ns;
	}
}

void inode_touch_as(struct inode_rec *r, const struct inode_rec *stamp, bool mtime, bool ctime)
{
	if (mtime) {
		r->mtime_sec = stamp->ctime_sec;
		r->mtime_nsec = stamp->ctime_nsec;
	}
	if (ctime) {
		r->ctime_sec = stamp->ctime_sec;
		r->ctime_nsec = stamp->ctime_nsec;
	}
}

/* A directory's preferred I/O size: glibc's opendir sizes its getdents
 * buffer by it (32 KiB at least, 1 MiB at most), and the kernel asks for a
 * listing in requests of that size (up to max_pages): 1,000 entries with
 * attributes (about 160 bytes each) come in one request, not six. */
#define DIR_BLKSIZE (256 << 10)

void inode_stat(const struct fs *fs, const struct fs_inode *in, struct stat *st)
{
	const struct inode_rec *r = &in->rec;
	memset(st, 0, sizeof(*st));
	st->st_ino = in->ino;
	st->st_mode = r->mode;
	st->st_nlink = r->nlink;
	st->st_uid = r->uid;
	st->st_gid = r->gid;
	st->st_rdev = r->rdev;
	st->st_size = (off_t)r->size;
	st->st_blksize = 4096;
	if (S_ISDIR(r->mode)) {
		st->st_size = 4096;
		st->st_blksize = DIR_BLKSIZE;
	}
	if (S_ISREG(r->mode) && !(r->flags & INODE_FLAG_CHUNKED))
		st->st_blocks = (blkcnt_t)((r->size + 511) / 512);
	else if (S_ISDIR(r->mode))
		st->st_blocks = 8;
	else
		st->st_blocks = (blkcnt_t)r->blocks;
	if (S_ISREG(r->mode) && (r->flags & INODE_FLAG_CHUNKED))
		st->st_blksize = fs->info.chunk_size < (1u << 20) ? (blksize_t)fs->info.chunk_size
								  : (1 << 20);
	st->st_atim.tv_sec = r->atime_sec;
	st->st_atim.tv_nsec = r->atime_nsec;
	st->st_mtim.tv_sec = r->mtime_sec;
	st->st_mtim.tv_nsec = r->mtime_nsec;
	st->st_ctim.tv_sec = r->ctime_sec;
	st->st_ctim.tv_nsec = r->ctime_nsec;
}

void inode_mark_gone(struct fs *fs, uint64_t ino)
{
	pthread_mutex_lock(&fs->itab_lock);
	struct fs_inode *in = itab_find(fs, ino);
	if (in)
		in->gone = true;
	pthread_mutex_unlock(&fs->itab_lock);
}
