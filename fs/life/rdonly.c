/*
 * rdonly.c: following `mount -o remount,ro` and `remount,rw` while
 * mounted.
 *
 * The kernel switches a FUSE superblock between read-only and read-write
 * on its own (mount(2) with MS_REMOUNT, which main.c's remount mode
 * makes), refusing every write system call while it is read-only, and
 * writes back the dirty pages before.  What it does not do is tell the
 * daemon.  So whoever remounts sends the daemon SIGUSR1 (its pid is in
 * the disks' lock files), and this thread then reads the superblock's
 * state from /proc/self/mountinfo.  Going read-only, it makes everything
 * durable that the filesystem holds, as ext4 does at a read-only remount:
 * pending reclaims finish, every inode record and the disks' error
 * counters are stored, the store is flushed and each backing filesystem
 * synced; then the lock files say DISKSET_READ_ONLY, which is what the
 * remounting process waits for.
 * While read-only the daemon refuses writes of its own too (EROFS).
 *
 * The signal handler only writes a byte to a pipe; the work happens here,
 * in a thread of its own.
 */
#include "engine.h"
#include "life.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The write end of the pipe: a signal handler reaches no struct fs, so
 * this one descriptor is process-wide (one filesystem per daemon). */
static int wake_fd = -1;

static void on_sigusr1(int sig)
{
	(void)sig;
	int e = errno;
	if (wake_fd >= 0 && write(wake_fd, "r", 1) < 0)
		(void)0; /* a full pipe already holds a wakeup */
	errno = e;
}

/* 1 when the superblock mounted at mnt is read-only, 0 when read-write,
 * negative when it is not found. */
static int mounted_ro(const char *mnt)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char line[8192];
	int rc = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char point[4096];
		if (sscanf(line, "%*u %*u %*u:%*u %*s %4095s", point) != 1 || strcmp(point, mnt))
			continue;
		/* ... - fstype source superblock-options */
		char *dash = strstr(line, " - ");
		char *opts = dash ? strrchr(dash, ' ') : NULL;
		if (opts)
			rc = strncmp(opts + 1, "ro", 2) == 0 && (opts[3] == ',' || opts[3] == '\n');
	}
	fclose(f);
	return rc;
}

/* Everything the filesystem holds, made durable. */
static int settle(struct fs *fs)
{
	reclaim_wait_idle(fs);
	int rc = fs_persist_all(fs);
	int r4 = devstats_store(fs, 0);
	if (!rc)
		rc = r4;
	int r2 = store_flush(fs->st);
	if (!rc)
		rc = r2;
	int r3 = chunk_sync_all(fs);
	if (!rc)
		rc = r3;
	return rc;
}

static void *watcher(void *arg)
{
	struct fs *fs = arg;
	char b[16];
	for (;;) {
		ssize_t n = read(fs->rdonly_pipe[0], b, sizeof(b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || fs->rdonly_stopping)
			break;
		int ro = mounted_ro(fs->mountpoint);
		if (ro < 0) {
			fs_logf(fs, "remount: %s not found in /proc/self/mountinfo", fs->mountpoint);
			continue;
		}
		bool was = __atomic_load_n(&fs->remounted_ro, __ATOMIC_ACQUIRE);
		if (ro && !was) {
			__atomic_store_n(&fs->remounted_ro, true, __ATOMIC_RELEASE);
			int rc = settle(fs);
			if (rc)
				fs_logf(fs, "remount read-only: making the filesystem durable: %s",
					strerror(-rc));
			else
				diskset_mark(fs->ds, DISKSET_READ_ONLY);
			fs_logf(fs, "remounted read-only%s", rc ? " (not all of it is durable)" : "");
		} else if (!ro && was) {
			__atomic_store_n(&fs->remounted_ro, false, __ATOMIC_RELEASE);
			diskset_mark(fs->ds, NULL);
			fs_logf(fs, "remounted read-write");
		} else {
			diskset_mark(fs->ds, ro ? DISKSET_READ_ONLY : NULL); /* answer again */
		}
	}
	return NULL;
}

int rdonly_start(struct fs *fs, const char *mountpoint)
{
	fs->mountpoint = strdup(mountpoint);
	if (!fs->mountpoint)
		return -ENOMEM;
	if (pipe2(fs->rdonly_pipe, O_CLOEXEC) != 0)
		return -errno;
	fcntl(fs->rdonly_pipe[1], F_SETFL, O_NONBLOCK);
	int rc = pthread_create(&fs->rdonly_thread, NULL, watcher, fs);
	if (rc)
		return -rc;
	fs->rdonly_running = true;
	wake_fd = fs->rdonly_pipe[1];
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGUSR1, &sa, NULL) ? -errno : 0;
}

void rdonly_stop(struct fs *fs)
{
	if (fs->rdonly_running) {
		signal(SIGUSR1, SIG_IGN);
		wake_fd = -1;
		fs->rdonly_stopping = true;
		if (write(fs->rdonly_pipe[1], "q", 1) < 0)
			(void)0; /* the pipe is full of wakeups: the thread is awake anyway */
		pthread_join(fs->rdonly_thread, NULL);
		fs->rdonly_running = false;
	}
	for (int i = 0; i < 2; i++)
		if (fs->rdonly_pipe[i] >= 0)
			close(fs->rdonly_pipe[i]);
	fs->rdonly_pipe[0] = fs->rdonly_pipe[1] = -1;
	free(fs->mountpoint);
	fs->mountpoint = NULL;
}
