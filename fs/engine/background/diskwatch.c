/*
 * diskwatch.c: noticing that a backing disk is no longer the disk the
 * daemon opened.
 *
 * The daemon opens <disk>/.lsmfs/sections once, at mount, and works
 * through that descriptor.  If the disk's filesystem is then unmounted
 * lazily (umount -l) or another filesystem is mounted over the path, the
 * descriptor still works, on a filesystem nobody can see any more: writes
 * and fsyncs would succeed into the void.  A thread compares, every
 * DISKWATCH_INTERVAL_MS, what the path names now with what the descriptor
 * is (device and inode).  A disk that differs is marked lost for good:
 * every chunk operation on its sections fails with EIO (chunk.c asks
 * disk_usable), and the log says so once, naming the disk.  The check runs
 * in its own thread, so a disk whose stat() hangs (a dead NFS server)
 * holds up nothing else.
 *
 * The metadata store's directories (one per copy) are watched the same
 * way.  A copy whose directory goes is dropped (store_copy_drop: marked
 * stale, the filesystem goes on degraded with the others, copies.c); when
 * the last one goes, every write would be lost, so the filesystem turns
 * read-only (EROFS, as ext4 with errors=remount-ro), logged once; what
 * the store holds still reads.
 *
 * fs->disk_lost[d] and fs->meta_lost are read and written with atomics;
 * the thread's state is guarded by fs->watch_lock.
 */
#include "background.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DISKWATCH_INTERVAL_MS 1000

/* Does path still name what fd was opened on?  NULL (also when fd itself
 * cannot be looked at: nothing to say then), or why not. */
static const char *moved(int fd, const char *path)
{
	struct stat now, opened;
	if (fstat(fd, &opened) != 0)
		return NULL;
	if (stat(path, &now) != 0)
		return errno == ENOENT ? "it is gone from its path" : strerror(errno);
	if (now.st_dev != opened.st_dev || now.st_ino != opened.st_ino)
		return "the path now leads to another filesystem or directory";
	return NULL;
}

/* Is disk d still the disk its descriptor was opened on? */
static void check_disk(struct fs *fs, uint32_t d)
{
	/* One load: a disk detached meanwhile (members.c) keeps its path
	 * allocated, and is skipped once it is seen gone. */
	const char *path = __atomic_load_n(&fs->ds->paths[d], __ATOMIC_ACQUIRE);
	if (!path || !disk_usable(fs, d))
		return;
	char p[LSMFS_META_PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s/%s", path, LSMFS_DIR, LSMFS_SECTIONS_DIR);
	const char *why = moved(fs->sections_fd[d], p);
	if (!why || !diskset_present(fs->ds, d))
		return;
	__atomic_store_n(&fs->disk_lost[d], 1, __ATOMIC_RELEASE);
	fs_logf(fs, "disk %u: %s is no longer the disk this filesystem was mounted with (its "
		"sections directory: %s: unmounted, or something mounted over it?); its chunk "
		"files now fail with EIO until a remount", d, path, why);
}

/* Is each copy of the store's directory still the one opened at mount? */
static void check_meta(struct fs *fs)
{
	if (__atomic_load_n(&fs->meta_lost, __ATOMIC_ACQUIRE))
		return;
	for (uint32_t k = 0; k < fs->store_ncopies; k++) {
		struct store_copy_info ci;
		if (fs->meta_fd[k] < 0 || store_copy_info(fs->st, k, &ci) || !ci.live)
			continue;
		const char *why = moved(fs->meta_fd[k], ci.dir);
		if (!why)
			continue;
		char what[256];
		snprintf(what, sizeof(what), "the directory is no longer the one mounted (%s)", why);
		if (fs->store_ncopies > 1 && store_copy_drop(fs->st, k, -ENODEV, what) == 0)
			continue; /* logged by copies_failed */
		__atomic_store_n(&fs->meta_lost, 1, __ATOMIC_RELEASE);
		fs_logf(fs, "%s: the metadata store's directory is no longer the one this "
			"filesystem was mounted with (%s: unmounted, or something mounted over it?); "
			"the filesystem is read-only until a remount, and writes since the last sync "
			"may be lost", ci.dir, why);
		return;
	}
}

static void *watcher(void *arg)
{
	struct fs *fs = arg;
	pthread_mutex_lock(&fs->watch_lock);
	while (!fs->watch_stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += DISKWATCH_INTERVAL_MS % 1000 * 1000000L;
		ts.tv_sec += DISKWATCH_INTERVAL_MS / 1000 + ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&fs->watch_cv, &fs->watch_lock, &ts);
		if (fs->watch_stopping)
			break;
		pthread_mutex_unlock(&fs->watch_lock);
		for (uint32_t d = 0; d < fs->ds->ndisks; d++)
			if (diskset_present(fs->ds, d))
				check_disk(fs, d);
		check_meta(fs);
		pthread_mutex_lock(&fs->watch_lock);
	}
	pthread_mutex_unlock(&fs->watch_lock);
	return NULL;
}

int diskwatch_start(struct fs *fs)
{
	for (uint32_t k = 0; k < fs->store_ncopies; k++) {
		struct store_copy_info ci;
		if (store_copy_info(fs->st, k, &ci) == 0)
			fs->meta_fd[k] = open(ci.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	pthread_mutex_init(&fs->watch_lock, NULL);
	pthread_cond_init(&fs->watch_cv, NULL);
	fs->watch_initialized = true;
	int rc = pthread_create(&fs->watch_thread, NULL, watcher, fs);
	if (rc)
		return -rc;
	fs->watch_running = true;
	return 0;
}

void diskwatch_stop(struct fs *fs)
{
	if (fs->watch_running) {
		pthread_mutex_lock(&fs->watch_lock);
		fs->watch_stopping = true;
		pthread_cond_signal(&fs->watch_cv);
		pthread_mutex_unlock(&fs->watch_lock);
		pthread_join(fs->watch_thread, NULL);
		fs->watch_running = false;
	}
	if (fs->watch_initialized) {
		pthread_mutex_destroy(&fs->watch_lock);
		pthread_cond_destroy(&fs->watch_cv);
		fs->watch_initialized = false;
	}
	for (int k = 0; k < STORE_MAX_COPIES; k++) {
		if (fs->meta_fd[k] >= 0)
			close(fs->meta_fd[k]);
		fs->meta_fd[k] = -1;
	}
}
