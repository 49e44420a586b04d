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
 * batch (inode_reclaim).  It takes no filesystem-wide lock: nothing can
 * reach an inode without names that the kernel has forgotten, so a rm of
 * a file with a million chunks, or a backing disk that stalls while its
 * chunk files go, holds up no other operation.  A crash part way leaves
 * the orphan key, and the next mount goes on from there.
 *
 * Unmount drains the queue (fs_close -> reclaim_stop), so that a clean
 * unmount leaves no orphan behind.  Locking: fs->reclaim.lock guards the
 * queue and the flags only.
 */
#include "fs_int.h"

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
		int rc = inode_reclaim(fs, ino);
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
		rc = inode_reclaim(fs, ino); /* no thread: here and now */
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
