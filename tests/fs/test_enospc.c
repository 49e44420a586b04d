/*
 * test_enospc (suite fs): a full metadata disk does not wedge a mounted
 * lsmfs (issue 14).  The store lives on its own small tmpfs (mkfs --meta);
 * a file written there from outside fills it.  Then, on the real mount:
 *   - creating files fails with ENOSPC (and nothing else);
 *   - rm of many files, rmdir, rename over an existing name and unlink all
 *     succeed (the store's reserve);
 *   - after the filler is deleted, touch, mkdir and rename work again
 *     without a remount;
 *   - filled again, the unmount is clean (exit 0), the mount comes back on
 *     the still-full disk with every change in place, and fsck.lsmfs -n
 *     exits 0;
 *   - part two: a one-disk filesystem on its own small tmpfs, its data
 *     disk filled through the mount and then to the last byte from
 *     outside, mounts again (the lock file, recovery) and reads back.
 * Skipped (77) without /dev/fuse or when tmpfs cannot be mounted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fstest.h"

#define NFILES 300

static struct fst fs;
static char meta[300], filler[340];
static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			failures++;                                            \
			goto out;                                              \
		}                                                              \
	} while (0)

static void path(char *out, size_t cap, const char *name)
{
	fst_fmt(out, cap, "%s/%s", fs.mnt, name);
}

/* Create (O_CREAT|O_EXCL) name in the mount; 0 or -errno. */
static int create(const char *name, const char *content)
{
	char p[600];
	path(p, sizeof(p), name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (content && write(fd, content, strlen(content)) != (ssize_t)strlen(content))
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

/* Write the filler until the metadata tmpfs is full. */
static int fill(void)
{
	int fd = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		return -errno;
	static char buf[1 << 16];
	memset(buf, 0xab, sizeof(buf));
	for (;;) {
		ssize_t n = write(fd, buf, sizeof(buf));
		if (n < 0) {
			int e = errno;
			close(fd);
			return e == ENOSPC ? 0 : -e;
		}
		if (n == 0)
			break;
	}
	close(fd);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool exists(const char *name)
{
	char p[600];
	struct stat st;
	path(p, sizeof(p), name);
	return stat(p, &st) == 0;
}

static int read_small(const char *name, char *buf, size_t cap)
{
	char p[600];
	path(p, sizeof(p), name);
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* Part two: the disk itself (data and store together, as mkfs makes it by
 * default) on a small tmpfs, filled by a file written through the mount,
 * unmounted, filled to the last byte from outside: the next mount must
 * succeed (the lock file's pid and recovery's writes need no room) and the
 * file must read back as written. */
static void full_data_disk(void)
{
	struct fst f2;
	char disk_filler[340], p[600];
	static char buf[1 << 16], back[1 << 16];
	bool mounted_tmpfs = false;
	int fd = -1;
	if (fst_init(&f2, "enospc-data", 1)) {
		failures++;
		return;
	}
	mounted_tmpfs = mount("tmpfs", f2.disks[0], "tmpfs", 0, "size=12m") == 0;
	CHECK(mounted_tmpfs, "mount a tmpfs on %s: %s", f2.disks[0], strerror(errno));
	CHECK(fst_mkfs(&f2, NULL) == 0, "mkfs on %s", f2.disks[0]);
	CHECK(fst_mount(&f2, NULL) == 0, "mount %s", f2.spec);
	fst_fmt(p, sizeof(p), "%s/f", f2.mnt);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0, "create %s: %s", p, strerror(errno));
	memset(buf, 0x5a, sizeof(buf));
	/* Twice the disk: through the writeback cache the error may come
	 * from write(2), fsync(2) or close(2). */
	long long written = 0;
	int e = 0;
	while (!e && written < (24 << 20)) {
		ssize_t n = write(fd, buf, sizeof(buf));
		if (n < 0)
			e = errno;
		else
			written += n;
	}
	if (!e && fsync(fd) != 0)
		e = errno;
	if (close(fd) != 0 && !e)
		e = errno;
	fd = -1;
	CHECK(e == ENOSPC, "writing 24 MiB to %s on a 12 MiB disk: %s", p,
	      e ? strerror(e) : "no error");
	CHECK(fst_umount(&f2) == 0, "unmount with a full data disk is not clean");
	fst_fmt(disk_filler, sizeof(disk_filler), "%s/filler", f2.disks[0]);
	snprintf(filler, sizeof(filler), "%s", disk_filler);
	CHECK(fill() == 0, "fill %s", f2.disks[0]);
	CHECK(fst_mount(&f2, NULL) == 0, "mount with a data disk full to the last byte");
	fd = open(p, O_RDONLY);
	CHECK(fd >= 0, "open %s after the remount: %s", p, strerror(errno));
	ssize_t n = pread(fd, back, sizeof(back), 0);
	CHECK(n == (ssize_t)sizeof(back) && memcmp(back, buf, sizeof(back)) == 0,
	      "%s after the remount: its first 64 KiB differ", p);
	close(fd);
	fd = -1;
	CHECK(fst_umount(&f2) == 0, "unmount after the remount on a full data disk");
	fprintf(stderr, "enospc: a data disk full to the last byte mounts again\n");
out:
	if (fd >= 0)
		close(fd);
	if (f2.daemon)
		(void)fst_umount(&f2);
	if (mounted_tmpfs)
		(void)umount2(f2.disks[0], MNT_DETACH);
	fst_cleanup(&f2);
}

int main(void)
{
	fst_require_fuse();
	if (fst_init(&fs, "enospc", 2))
		return 1;
	fst_fmt(meta, sizeof(meta), "%s/meta", fs.root);
	fst_fmt(filler, sizeof(filler), "%s/filler", meta);
	if (mkdir(meta, 0755) || mount("tmpfs", meta, "tmpfs", 0, "size=24m")) {
		fprintf(stderr, "SKIP: cannot mount a tmpfs on %s: %s\n", meta,
			strerror(errno));
		fst_cleanup(&fs);
		return 77;
	}
	char p[600], q[600], buf[256];
	const char *mkfs_extra[] = { "--meta", meta, NULL };
	CHECK(fst_mkfs(&fs, mkfs_extra) == 0, "mkfs");
	CHECK(fst_mount(&fs, NULL) == 0, "mount");

	path(p, sizeof(p), "many");
	CHECK(mkdir(p, 0755) == 0, "mkdir many: %s", strerror(errno));
	for (int i = 0; i < NFILES; i++) {
		fst_fmt(buf, sizeof(buf), "many/f%03d", i);
		CHECK(create(buf, "x") == 0, "create %s", buf);
	}
	path(p, sizeof(p), "emptydir");
	CHECK(mkdir(p, 0755) == 0, "mkdir emptydir");
	CHECK(create("old", "old content") == 0, "create old");
	CHECK(create("new", "new content") == 0, "create new");
	CHECK(create("doomed", "bye") == 0, "create doomed");

	/* The metadata disk fills up from outside. */
	CHECK(fill() == 0, "fill %s", meta);
	int rc = 0, made = 0;
	for (int i = 0; i < 2000; i++) {
		fst_fmt(buf, sizeof(buf), "full%04d", i);
		rc = create(buf, NULL);
		if (rc)
			break;
		made++;
	}
	CHECK(rc == -ENOSPC, "create on a full metadata disk: %s (after %d creates)",
	      strerror(-rc), made);
	fprintf(stderr, "enospc: full after %d more creates\n", made);

	/* Deletions work on the full disk. */
	for (int i = 0; i < NFILES; i++) {
		fst_fmt(buf, sizeof(buf), "many/f%03d", i);
		path(p, sizeof(p), buf);
		CHECK(unlink(p) == 0, "rm %s on a full metadata disk: %s", buf,
		      strerror(errno));
	}
	path(p, sizeof(p), "many");
	CHECK(rmdir(p) == 0, "rmdir many: %s", strerror(errno));
	path(p, sizeof(p), "emptydir");
	CHECK(rmdir(p) == 0, "rmdir emptydir: %s", strerror(errno));
	path(p, sizeof(p), "new");
	path(q, sizeof(q), "old");
	CHECK(rename(p, q) == 0, "rename new over old: %s", strerror(errno));
	path(p, sizeof(p), "doomed");
	CHECK(unlink(p) == 0, "unlink doomed: %s", strerror(errno));
	for (int i = 0; i < made; i++) {
		fst_fmt(buf, sizeof(buf), "full%04d", i);
		path(p, sizeof(p), buf);
		CHECK(unlink(p) == 0, "rm %s: %s", buf, strerror(errno));
	}
	{
		struct stat rs;
		fst_fmt(p, sizeof(p), "%s/RESERVE", meta);
		CHECK(stat(p, &rs) == 0, "stat %s: %s", p, strerror(errno));
		fprintf(stderr, "enospc: %d deletions, 2 rmdirs, a rename and an unlink "
			"on the full disk left RESERVE at %lld bytes\n", NFILES + made,
			(long long)rs.st_size);
	}
	/* Still full for everything else. */
	rc = create("still", NULL);
	CHECK(rc == -ENOSPC, "create after the deletions on a full disk: %s",
	      strerror(-rc));

	/* Space comes back: no remount needed. */
	CHECK(unlink(filler) == 0, "rm filler");
	uint64_t t0 = now_ms();
	rc = -1;
	for (int i = 0; i < 200 && rc; i++) {
		rc = create("touched", NULL);
		if (rc)
			usleep(50 * 1000);
	}
	CHECK(rc == 0, "touch 10 s after space came back: %s", strerror(-rc));
	fprintf(stderr, "enospc: touch works again %llu ms after the filler went\n",
		(unsigned long long)(now_ms() - t0));
	{
		struct stat rs;
		fst_fmt(p, sizeof(p), "%s/RESERVE", meta);
		CHECK(stat(p, &rs) == 0 && rs.st_size == 2 << 20,
		      "RESERVE not whole again after space came back");
	}
	path(p, sizeof(p), "dir2");
	CHECK(mkdir(p, 0755) == 0, "mkdir after space came back: %s", strerror(errno));
	path(p, sizeof(p), "touched");
	path(q, sizeof(q), "dir2/moved");
	CHECK(rename(p, q) == 0, "rename after space came back: %s", strerror(errno));
	for (int i = 0; i < 50; i++) {
		fst_fmt(buf, sizeof(buf), "dir2/g%02d", i);
		CHECK(create(buf, "y") == 0, "create %s after space came back", buf);
	}

	/* Full again: a clean unmount, and a mount on the full disk. */
	CHECK(fill() == 0, "fill again");
	CHECK(fst_umount(&fs) == 0, "unmount on a full metadata disk is not clean");
	CHECK(fst_mount(&fs, NULL) == 0, "mount on a full metadata disk");
	CHECK(!exists("many") && !exists("emptydir") && !exists("doomed") &&
	      !exists("new") && exists("dir2/moved") && exists("dir2/g49"),
	      "the tree after the remount");
	CHECK(read_small("old", buf, sizeof(buf)) == 0 &&
	      strcmp(buf, "new content") == 0, "old holds '%s'", buf);
	path(p, sizeof(p), "dir2/g00");
	CHECK(unlink(p) == 0, "rm after the remount on a full disk: %s", strerror(errno));
	CHECK(fst_umount(&fs) == 0, "second unmount on a full disk is not clean");

	const char *fsck = getenv("FSCK_BIN");
	if (fsck) {
		char out[8192];
		const char *argv[] = { fsck, "-n", fs.spec, NULL };
		int st = fst_run(argv, out, sizeof(out));
		CHECK(st == 0, "fsck.lsmfs -n exit %d:\n%s", st, out);
	}
	full_data_disk();
	if (!failures)
		fprintf(stderr, "enospc: ok\n");
out:
	if (fs.daemon)
		(void)fst_umount(&fs); /* a failed check: its status is moot */
	(void)umount2(meta, MNT_DETACH); /* the tmpfs */
	fst_cleanup(&fs);
	return failures ? 1 : 0;
}
