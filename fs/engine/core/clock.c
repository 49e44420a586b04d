/*
 * clock.c: the time the daemon stamps inode times with (SCHEMA.md,
 * "Inode times").
 *
 * Two parties stamp a file's times: the daemon (a create, a namespace
 * change, a setattr it is asked to stamp) and the kernel, which sets mtime
 * and ctime itself on a write through the writeback cache and sends them
 * with the next setattr.  The kernel's time for a FUSE inode is
 * current_time(): the coarse clock (the last tick), which since Linux 6.13
 * is raised to the latest fine-grained time the kernel has handed out to a
 * file on a filesystem with fine-grained timestamps (ext4, xfs, btrfs,
 * tmpfs), and user space cannot read that figure.  With its own clock (the
 * fine one, or the coarse one) the daemon's stamps and the kernel's do not
 * keep the order of the calls: a file written after another was made could
 * carry an earlier mtime (xfstests generic/423), or the reverse.
 *
 * So the daemon asks the kernel: it changes the ctime of an unnamed file
 * (O_TMPFILE) in the metadata store's directory and reads it back.  The
 * kernel hands out that time from the same clock as a FUSE inode's, and on
 * a filesystem with fine-grained timestamps it is a fine one that raises
 * the kernel's floor, so any time the kernel stamps later is not earlier.
 * Without such a file (a read-only mount, a store filesystem without
 * O_TMPFILE or keeping whole seconds), or when it fails, the coarse clock
 * is read: the kernel's clock before 6.13.  One operation stamps once
 * (inode_touch_as): a fchmod and a fstat, a few microseconds.
 *
 * Thread safe: the file is shared; a stamp read back may be a concurrent
 * caller's, which is as good (it was handed out during the call).
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The ctime of fd after changing it, or -errno. */
static int kernel_time(int fd, struct timespec *ts)
{
	struct stat st;
	if (fchmod(fd, 0600) != 0 || fstat(fd, &st) != 0)
		return -errno;
	*ts = st.st_ctim;
	return 0;
}

void clock_open(struct fs *fs)
{
	fs->clock_fd = -1;
	if (fs->opt.read_only)
		return;
	/* Beside the store, which every change waits for anyway: a data
	 * disk that stalls or fails holds up no stamp. */
	int fd = open(fs->ds->meta_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	/* Whole seconds only (an ext4 with small inodes): no better than
	 * the coarse clock, and earlier than the kernel's. */
	struct timespec ts = {0, 0};
	for (int i = 0; i < 3 && ts.tv_nsec == 0; i++)
		if (kernel_time(fd, &ts) != 0)
			break;
	if (ts.tv_nsec != 0)
		fs->clock_fd = fd;
	else
		close(fd);
}

void clock_close(struct fs *fs)
{
	if (fs->clock_fd >= 0)
		close(fs->clock_fd);
	fs->clock_fd = -1;
}

void fs_now(struct fs *fs, int64_t *sec, uint32_t *nsec)
{
	struct timespec ts;
	if (fs->clock_fd < 0 || kernel_time(fs->clock_fd, &ts) != 0)
		clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	*sec = ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

uint64_t fs_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
