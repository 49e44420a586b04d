/*
 * reclaim.c: deleting the data of inodes whose last name is gone, in a
 * background thread (SCHEMA.md, "Orphans").
 *
 * Unlinking the last name of an inode writes its orphan key `O` ino in
 * the batch that sets nlink to 0 (dir.c), unless the inode goes in that
 * batch itself (a small file nobody has open: dir.c purgeable).  When the kernel lets go of it
 * (no lookups, no open files), inode.c hands the number to this thread;
 * at mount, so does every orphan key a crash left.  The thread removes
 * the chunk files and their records in runs of RECLAIM_RUN, then the
 * inode's record, inline data, xattrs, in-flux mark and orphan key in one
 * batch (reclaim_inode).  It takes no filesystem-wide lock: nothing can
 * reach an inode without names that the kernel has forgotten, so a rm of
 * a file with a million chunks, or a backing disk that stalls while its
 * chunk files go, holds up no other operation.  A crash part way leaves
 * the orphan key, and the next mount goes on from there.
 *
 * Unmount drains the queue (fs_close -> reclaim_stop), so that a clean
 * unmount leaves no orphan behind.  Locking: fs->reclaim.lock guards the
 * queue and the flags only.
 */
#include "background.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void *reclaimer(void *arg)
{
	struct fs *fs = arg;
	struct reclaim *r = &fs->reclaim;
	sweep_run(fs); /* after a crash, before the orphans (sweep.c) */
	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (r->n == 0 && !r->stopping)
			pthread_cond_wait(&r->cv, &r->lock);
		if (r->n == 0)
			break; /* stopping, and nothing left */
		uint64_t ino = r->queue[--r->n];
		r->busy = true;
		pthread_mutex_unlock(&r->lock);
		int rc = reclaim_inode(fs, ino);
		if (rc)
			fs_logf(fs, "inode %llu: reclaiming: %s (left as an orphan for the next mount)",
				(unsigned long long)ino, strerror(-rc));
		pthread_mutex_lock(&r->lock);
		r->busy = false;
		r->done++;
		pthread_cond_broadcast(&r->idle);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int reclaim_start(struct fs *fs)
{
	struct reclaim *r = &fs->reclaim;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cv, NULL);
	pthread_cond_init(&r->idle, NULL);
	r->initialized = true;
	int rc = pthread_create(&r->thread, NULL, reclaimer, fs);
	if (rc)
		return -rc;
	r->running = true;
	return 0;
}

int reclaim_queue(struct fs *fs, uint64_t ino)
{
	struct reclaim *r = &fs->reclaim;
	if (!r->running)
		return -ESRCH;
	pthread_mutex_lock(&r->lock);
	int rc = 0;
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 64;
		uint64_t *g = realloc(r->queue, nc * sizeof(*g));
		if (g) {
			r->queue = g;
			r->cap = nc;
		} else {
			rc = -ENOMEM;
		}
	}
	if (!rc) {
		r->queue[r->n++] = ino;
		pthread_cond_signal(&r->cv);
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

void reclaim_wait_idle(struct fs *fs)
{
	struct reclaim *r = &fs->reclaim;
	if (!r->running)
		return;
	pthread_mutex_lock(&r->lock);
	while (r->n || r->busy)
		pthread_cond_wait(&r->idle, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

void reclaim_stop(struct fs *fs)
{
	struct reclaim *r = &fs->reclaim;
	if (r->running) {
		pthread_mutex_lock(&r->lock);
		__atomic_store_n(&r->stopping, true, __ATOMIC_RELEASE);
		pthread_cond_signal(&r->cv);
		pthread_mutex_unlock(&r->lock);
		pthread_join(r->thread, NULL); /* after the queue is empty */
		r->running = false;
	}
	if (r->initialized) {
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->cv);
		pthread_cond_destroy(&r->idle);
		r->initialized = false;
	}
	free(r->queue);
	r->queue = NULL;
	r->n = r->cap = 0;
}

static int queue_orphan(struct fs *fs, uint64_t ino, void *ctx)
{
	int rc = reclaim_queue(fs, ino);
	if (rc == -ESRCH)
		rc = reclaim_inode(fs, ino); /* no thread: here and now */
	if (!rc)
		(*(size_t *)ctx)++;
	return rc;
}

int reclaim_orphans(struct fs *fs)
{
	size_t n = 0;
	int rc = fs_each_ino_key(fs, KEY_ORPHAN, queue_orphan, &n);
	if (!rc && n)
		fs_logf(fs, "reclaiming %zu orphan inode%s left by a crash", n, n == 1 ? "" : "s");
	return rc;
}

/* Chunks removed per store batch while reclaiming: bounds the batch. */
#define RECLAIM_RUN 4096

/*
 * Delete an inode whose last name is gone: its chunk files and their
 * records, RECLAIM_RUN at a time, then in one batch its record, inline
 * data, xattrs, in-flux mark and orphan key.  Takes no filesystem-wide
 * lock (reclaim.c says why).  A crash in between leaves the orphan key,
 * and the next mount goes on: never a name to a half-deleted inode.
 */
int reclaim_inode(struct fs *fs, uint64_t ino)
{
	struct inode_rec rec;
	int rc = inode_load_rec(fs, ino, &rec);
	bool known = rc == 0;
	if (rc && rc != -ENOENT)
		return rc;
	/* The unlink that made it an orphan must be durable before any of
	 * its files goes: a power cut must not bring back a name whose data
	 * is gone.  Only when it has chunk files: what goes from the store
	 * alone goes after the unlink in the one commit log, so no crash
	 * keeps the later deletion without the earlier unlink.  (In the
	 * background, but a sync holds up the writers queued behind it: one
	 * per inline file deleted halved unlink rates, twice with two store
	 * copies.) */
	int chunks = chunk_any(fs, ino);
	if (chunks < 0)
		return chunks;
	if (chunks && (rc = store_sync(fs->st)))
		return rc;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	/* Every chunk record, whatever the flags say: a crash can leave the
	 * record of a file's first chunk without the chunked flag, which is
	 * stored after it (data_to_chunked).  The scan above looked at them
	 * all: with none found (every inline file) there is nothing to drop,
	 * and nothing adds a chunk to an inode nobody has open. */
	for (uint64_t from = chunks ? 0 : UINT64_MAX; from != UINT64_MAX;) {
		uint64_t freed = 0;
		rc = data_drop_chunks(fs, ino, from, RECLAIM_RUN, b, &freed, &from);
		if (!rc && store_batch_count(b))
			rc = store_write(fs->st, b, STORE_WRITE_RESERVE); /* frees space */
		if (rc)
			goto out;
		store_batch_clear(b);
	}
	uint8_t k[KEY_MAX], lo[KEY_MAX], hi[KEY_MAX];
	inode_keys_delete(b, ino);
	store_batch_delete(b, k, key_orphan(k, ino));
	if (!known || (rec.flags & INODE_FLAG_XATTR)) {
		size_t ll = key_xattr_prefix(lo, ino), hl = key_xattr_prefix(hi, ino + 1);
		struct store_iter_options io = {.lower = lo, .lower_len = ll, .upper = hi,
						.upper_len = hl};
		struct store_iter *it;
		rc = store_iter_new(fs->st, &io, &it);
		if (rc)
			goto out;
		for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
			size_t xl;
			const void *xk = store_iter_key(it, &xl);
			store_batch_delete(b, xk, xl);
		}
		rc = store_iter_status(it);
		store_iter_free(it);
	}
	if (!rc) /* a deletion: it may use the store's reserve */
		rc = store_write(fs->st, b, STORE_WRITE_RESERVE);
	if (!rc)
		inode_mark_gone(fs, ino);
out:
	store_batch_free(b);
	return rc;
}

int reclaim_orphaned(struct fs *fs, uint64_t ino)
{
	int rc = reclaim_queue(fs, ino);
	return rc ? reclaim_inode(fs, ino) : 0;
}
