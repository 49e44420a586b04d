/*
 * namer.c: the thread that names files in log lines (core/log.c
 * fs_log_named).  A message about a file must say which file, by path, for
 * the administrator to act on (a block that failed its checksum, say), but
 * only a scan of every directory entry finds a file's names (names/ipath.c):
 * never on the path of a read, never under a lock.  So the message waits
 * here, a bounded queue, and this thread logs it as "PATH: message", or
 * "inode N (no path: ...): message" when none is found (a file unlinked
 * and still open).  Messages queued at unmount are logged before it ends.
 */
#include "background.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void *namer(void *arg)
{
	struct fs *fs = arg;
	pthread_mutex_lock(&fs->namer.lock);
	for (;;) {
		while (fs->namer.n == 0 && !fs->namer.stopping)
			pthread_cond_wait(&fs->namer.cv, &fs->namer.lock);
		if (fs->namer.n == 0)
			break;
		unsigned n = fs->namer.n;
		struct fs_named_msg batch[FS_NAMED_QUEUE];
		memcpy(batch, fs->namer.q, n * sizeof(*batch));
		fs->namer.n = 0;
		pthread_mutex_unlock(&fs->namer.lock);
		uint64_t inos[FS_NAMED_QUEUE];
		char *paths[FS_NAMED_QUEUE] = {NULL};
		for (unsigned i = 0; i < n; i++)
			inos[i] = batch[i].ino;
		int rc = ipath_find(fs, inos, n, paths); /* one scan for the batch */
		for (unsigned i = 0; i < n; i++) {
			if (!rc && paths[i])
				fs_logf(fs, "%s (inode %" PRIu64 "): %s", paths[i], batch[i].ino, batch[i].msg);
			else
				fs_logf(fs, "inode %" PRIu64 " (no path found: %s): %s", batch[i].ino,
					rc ? strerror(-rc) : "no name", batch[i].msg);
			free(paths[i]);
			free(batch[i].msg);
		}
		pthread_mutex_lock(&fs->namer.lock);
	}
	pthread_mutex_unlock(&fs->namer.lock);
	return NULL;
}

int namer_start(struct fs *fs)
{
	pthread_mutex_init(&fs->namer.lock, NULL);
	pthread_cond_init(&fs->namer.cv, NULL);
	fs->namer.initialized = true;
	int rc = pthread_create(&fs->namer.thread, NULL, namer, fs);
	if (rc)
		return -rc;
	pthread_mutex_lock(&fs->namer.lock);
	fs->namer.running = true;
	pthread_mutex_unlock(&fs->namer.lock);
	return 0;
}

void namer_stop(struct fs *fs)
{
	if (!fs->namer.initialized)
		return;
	pthread_mutex_lock(&fs->namer.lock);
	bool running = fs->namer.running;
	fs->namer.stopping = true;
	pthread_cond_signal(&fs->namer.cv);
	pthread_mutex_unlock(&fs->namer.lock);
	if (running)
		pthread_join(fs->namer.thread, NULL);
	pthread_mutex_lock(&fs->namer.lock);
	fs->namer.running = false;
	pthread_mutex_unlock(&fs->namer.lock);
}
