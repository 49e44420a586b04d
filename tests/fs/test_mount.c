/*
 * test_mount.c: what the lsmfs daemon refuses to mount, and how it mounts.
 *
 * Refusals: a missing disk, a disk of another filesystem, a disk given twice
 * (same path, or the same directory by two paths), a disk of the filesystem
 * left out of the list, a store already in use by another daemon, a
 * directory that is not an lsmfs disk.  Each must end the daemon with exit
 * status 1 and exactly one line of output that names the disk.
 * Mounting: a clean unmount makes the daemon exit 0 and leaves the disks
 * unlocked and the data there at the next mount; -o ro gives EROFS on every
 * kind of write; common -o options are accepted; without -f the daemon
 * detaches (the parent exits 0 once the mount is in place).
 *
 * The daemon is always started with a time limit: one that mounts where it
 * should have refused is unmounted and reported, never left hanging.
 */
#include "fstest.h"

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define RUN_MOUNTED (-2)   /* run_daemon: it mounted instead of exiting */
#define RUN_TIMEOUT (-3)   /* run_daemon: neither exited nor mounted in time */

static const char *bin(const char *var)
{
	const char *b = getenv(var);
	ck_assert_msg(b && *b, "%s not set", var);
	return b;
}

static bool is_mounted(const char *mnt)
{
	char parent[PATH_MAX];
	struct stat a, b;
	snprintf(parent, sizeof(parent), "%s/..", mnt);
	if (stat(mnt, &a) != 0 || stat(parent, &b) != 0)
		return false;
	return a.st_dev != b.st_dev;
}

static void detach(const char *mnt)
{
	const char *argv[] = {"fusermount3", "-u", "-z", mnt, NULL};
	(void)fst_run(argv, NULL, 0); /* best effort: the test already failed */
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Run argv with stdout+stderr captured into out, for at most secs seconds.
 * Returns its exit status (128+signal when killed), RUN_MOUNTED when
 * watch_mnt became a mount point while it ran in the foreground (it is then
 * unmounted and killed), or RUN_TIMEOUT.  Does not wait for the pipe to
 * close: a detached daemon may keep it open.
 */
static int run_daemon(const char *const *argv, const char *watch_mnt, char *out, size_t cap,
		      int secs)
{
	int pfd[2];
	ck_assert(pipe(pfd) == 0);
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	size_t used = 0;
	int result = RUN_TIMEOUT;
	long long deadline = now_ms() + secs * 1000LL;
	bool exited = false;
	while (now_ms() < deadline) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		(void)poll(&p, 1, 20);
		for (;;) {
			char sink[512];
			ssize_t n = used + 1 < cap ? read(pfd[0], out + used, cap - 1 - used)
						   : read(pfd[0], sink, sizeof(sink));
			if (n <= 0)
				break;
			if (used + 1 < cap)
				used += (size_t)n;
		}
		int st;
		if (!exited && waitpid(pid, &st, WNOHANG) == pid) {
			exited = true;
			result = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			deadline = now_ms() + 200; /* collect what is still in the pipe */
			continue;
		}
		if (!exited && watch_mnt && is_mounted(watch_mnt)) {
			result = RUN_MOUNTED;
			detach(watch_mnt);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			exited = true;
			break;
		}
	}
	if (!exited) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (watch_mnt && is_mounted(watch_mnt))
			detach(watch_mnt);
	}
	close(pfd[0]);
	out[used] = 0;
	return result;
}

static const char *describe(int rc)
{
	static char buf[64];
	if (rc == RUN_MOUNTED)
		return "it mounted the filesystem";
	if (rc == RUN_TIMEOUT)
		return "it neither exited nor mounted within the time limit";
	snprintf(buf, sizeof(buf), "exit status %d", rc);
	return buf;
}

static bool contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return false;
}

/*
 * Start `lsmfs -f [-o opts] spec mnt` and require a refusal: exit status 1
 * and exactly one line of output containing one of the names (NULL-ended).
 */
static void expect_refusal(const char *what, const char *opts, const char *spec,
			   const char *mnt, const char *const *names)
{
	const char *argv[8];
	int n = 0;
	argv[n++] = bin("LSMFS_BIN");
	argv[n++] = "-f";
	if (opts) {
		argv[n++] = "-o";
		argv[n++] = opts;
	}
	argv[n++] = spec;
	argv[n++] = mnt;
	argv[n] = NULL;
	char out[4096];
	int rc = run_daemon(argv, mnt, out, sizeof(out), 30);
	ck_assert_msg(rc == 1, "%s: `lsmfs -f %s %s`: expected exit status 1, got %s; "
		      "output: %s", what, spec, mnt, describe(rc), out);
	size_t len = strlen(out);
	char *nl = strchr(out, '\n');
	ck_assert_msg(len > 0, "%s: lsmfs refused without printing why", what);
	ck_assert_msg(nl && nl == out + len - 1,
		      "%s: expected exactly one line of output, got: <<%s>>", what, out);
	bool named = false;
	for (int i = 0; names[i]; i++)
		named |= strstr(out, names[i]) != NULL;
	ck_assert_msg(named, "%s: the message does not name the disk (%s%s): %s", what,
		      names[0], names[1] ? " or another accepted name" : "", out);
	ck_assert_msg(!strstr(out, "(null)"), "%s: the message prints a NULL string: %s",
		      what, out);
	ck_assert_msg(!is_mounted(mnt), "%s: %s is mounted after the refusal", what, mnt);
	fprintf(stderr, "  %-28s -> %s", what, out);
}

static char *pathf(char *buf, const char *a, const char *b)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", a, b);
	ck_assert(n > 0 && n < PATH_MAX);
	return buf;
}

static void setup_fs(struct fst *f, const char *tag, int ndisks)
{
	ck_assert_msg(fst_init(f, tag, ndisks) == 0, "%s: scratch directories", tag);
	ck_assert_msg(fst_mkfs(f, NULL) == 0, "%s: mkfs.lsmfs failed", tag);
}

static char *join2(char *buf, size_t cap, const char *a, const char *b)
{
	int n = snprintf(buf, cap, "%s:%s", a, b);
	ck_assert(n > 0 && (size_t)n < cap);
	return buf;
}

/* Cases run in forked children: each records the scratch trees it makes in
 * this file, so that the parent can detach and remove them even when the
 * case died half-way with daemons still mounted. */
static char roots_file[PATH_MAX];

static void remember(const struct fst *f)
{
	FILE *fp = fopen(roots_file, "a");
	if (fp) {
		fprintf(fp, "%s\n", f->root);
		fclose(fp);
	}
}

static void roots_setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(roots_file, sizeof(roots_file), "%s/lsmfs-mount-roots.%d",
		 tmp && *tmp ? tmp : "/tmp", (int)getpid());
	unlink(roots_file);
}

static void roots_teardown(void)
{
	FILE *fp = fopen(roots_file, "r");
	char line[PATH_MAX];
	while (fp && fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		char m[PATH_MAX + 8];
		snprintf(m, sizeof(m), "%s/mnt", line);
		if (is_mounted(m))
			detach(m);
		snprintf(m, sizeof(m), "%s/mnt2", line);
		if (is_mounted(m))
			detach(m);
		(void)fst_rmtree(line); /* best effort */
	}
	if (fp)
		fclose(fp);
	unlink(roots_file);
}

#define NEW_FS(f, tag, n) do { setup_fs((f), (tag), (n)); remember(f); } while (0)

/* ---- refusals --------------------------------------------------------- */

START_TEST(t_missing_disk)
{
	struct fst f;
	NEW_FS(&f, "mount-missing", 2);
	char spec[2 * PATH_MAX], gone[PATH_MAX];
	pathf(gone, f.root, "no-such-disk");
	join2(spec, sizeof(spec), f.disks[0], gone);
	expect_refusal("missing disk", NULL, spec, f.mnt, (const char *[]){gone, NULL});
	/* A path that is a file, not a directory. */
	char file[PATH_MAX];
	pathf(file, f.root, "plain-file");
	int fd = open(file, O_CREAT | O_WRONLY, 0644);
	ck_assert(fd >= 0);
	close(fd);
	join2(spec, sizeof(spec), f.disks[0], file);
	expect_refusal("disk that is a file", NULL, spec, f.mnt, (const char *[]){file, NULL});
	/* The same refusal without -f: the parent reports it. */
	join2(spec, sizeof(spec), f.disks[0], gone);
	const char *argv[] = {bin("LSMFS_BIN"), spec, f.mnt, NULL};
	char out[4096];
	int rc = run_daemon(argv, NULL, out, sizeof(out), 30);
	ck_assert_msg(rc == 1, "missing disk without -f: expected exit status 1, got %s: %s",
		      describe(rc), out);
	ck_assert_msg(strstr(out, gone) && strchr(out, '\n') == out + strlen(out) - 1,
		      "missing disk without -f: expected one line naming %s, got: <<%s>>",
		      gone, out);
	ck_assert_msg(!is_mounted(f.mnt), "%s mounted after a refusal", f.mnt);
	fst_cleanup(&f);
}
END_TEST

START_TEST(t_foreign_disk)
{
	struct fst a, b;
	NEW_FS(&a, "mount-fsa", 2);
	NEW_FS(&b, "mount-fsb", 2);
	char spec[2 * PATH_MAX];
	join2(spec, sizeof(spec), a.disks[0], b.disks[1]);
	expect_refusal("disk of another filesystem", NULL, spec, a.mnt,
		       (const char *[]){b.disks[1], a.disks[0], NULL});
	join2(spec, sizeof(spec), b.disks[1], a.disks[0]);
	expect_refusal("disk of another fs (order)", NULL, spec, a.mnt,
		       (const char *[]){b.disks[1], a.disks[0], NULL});
	fst_cleanup(&a);
	fst_cleanup(&b);
}
END_TEST

START_TEST(t_disk_twice)
{
	struct fst f;
	NEW_FS(&f, "mount-twice", 2);
	char spec[3 * PATH_MAX + 8], link[PATH_MAX], real[PATH_MAX];
	snprintf(spec, sizeof(spec), "%s:%s:%s", f.disks[0], f.disks[0], f.disks[1]);
	expect_refusal("disk given twice", NULL, spec, f.mnt,
		       (const char *[]){f.disks[0], NULL});
	/* The same directory by another path: a symlink to it. */
	pathf(link, f.root, "alias");
	ck_assert(symlink(f.disks[0], link) == 0);
	snprintf(spec, sizeof(spec), "%s:%s:%s", f.disks[0], f.disks[1], link);
	ck_assert(realpath(f.disks[0], real));
	expect_refusal("same disk via a symlink", NULL, spec, f.mnt,
		       (const char *[]){link, f.disks[0], real, NULL});
	/* And with a trailing slash / dot component. */
	snprintf(spec, sizeof(spec), "%s/.:%s:%s", f.disks[1], f.disks[0], f.disks[1]);
	expect_refusal("same disk via 'disk/.'", NULL, spec, f.mnt,
		       (const char *[]){f.disks[1], NULL});
	fst_cleanup(&f);
}
END_TEST

/* Disk UUID of <disk>/.lsmfs/super, formatted (SCHEMA.md, offset 32). */
static void disk_uuid(const char *disk, char out[37])
{
	char p[PATH_MAX];
	unsigned char sb[48];
	snprintf(p, sizeof(p), "%s/.lsmfs/super", disk);
	int fd = open(p, O_RDONLY);
	ck_assert_msg(fd >= 0 && pread(fd, sb, sizeof(sb), 0) == (ssize_t)sizeof(sb),
		      "%s: cannot read the superblock", p);
	close(fd);
	const unsigned char *u = sb + 32;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6],
		 u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

START_TEST(t_disk_left_out)
{
	struct fst f;
	NEW_FS(&f, "mount-leftout", 3);
	char spec[2 * PATH_MAX], uuid[37], upper[37];
	disk_uuid(f.disks[2], uuid);
	for (int i = 0; i < 37; i++)
		upper[i] = (char)toupper((unsigned char)uuid[i]);
	join2(spec, sizeof(spec), f.disks[0], f.disks[1]);
	expect_refusal("disk missing from the list", NULL, spec, f.mnt,
		       (const char *[]){f.disks[2], uuid, upper, "disk 2", NULL});
	join2(spec, sizeof(spec), f.disks[2], f.disks[0]);
	disk_uuid(f.disks[1], uuid);
	for (int i = 0; i < 37; i++)
		upper[i] = (char)toupper((unsigned char)uuid[i]);
	expect_refusal("disk 1 missing from the list", NULL, spec, f.mnt,
		       (const char *[]){f.disks[1], uuid, upper, "disk 1", NULL});
	fst_cleanup(&f);
}
END_TEST

START_TEST(t_in_use)
{
	struct fst f;
	NEW_FS(&f, "mount-inuse", 2);
	ck_assert_msg(fst_mount(&f, NULL) == 0, "first mount of %s failed", f.spec);
	char m2[PATH_MAX];
	pathf(m2, f.root, "mnt2");
	ck_assert(mkdir(m2, 0755) == 0);
	const char *argv[] = {bin("LSMFS_BIN"), "-f", f.spec, m2, NULL};
	char out[4096];
	int rc = run_daemon(argv, m2, out, sizeof(out), 30);
	ck_assert_msg(rc == 1, "second daemon on %s: expected exit status 1, got %s; output: %s",
		      f.spec, describe(rc), out);
	ck_assert_msg(strchr(out, '\n') && strchr(out, '\n') == out + strlen(out) - 1,
		      "second daemon: expected exactly one line, got: <<%s>>", out);
	ck_assert_msg(strstr(out, f.disks[0]) || strstr(out, f.disks[1]),
		      "second daemon: the message does not name a disk: %s", out);
	ck_assert_msg(contains_ci(out, "lock") || contains_ci(out, "in use") ||
		      contains_ci(out, "busy"),
		      "second daemon: the message does not mention the lock / in use: %s", out);
	fprintf(stderr, "  %-28s -> %s", "store in use", out);
	/* The first daemon is unharmed. */
	char p[PATH_MAX];
	pathf(p, f.mnt, "still-works");
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	ck_assert_msg(fd >= 0 && write(fd, "ok", 2) == 2, "%s: write after the refused "
		      "second daemon: %s", p, strerrorname_np(errno));
	close(fd);
	/* In the background form too. */
	const char *argv2[] = {bin("LSMFS_BIN"), f.spec, m2, NULL};
	rc = run_daemon(argv2, NULL, out, sizeof(out), 30);
	ck_assert_msg(rc == 1, "second daemon without -f: expected exit status 1, got %s: %s",
		      describe(rc), out);
	ck_assert_msg(!is_mounted(m2), "%s mounted by a second daemon", m2);
	ck_assert_msg(fst_umount(&f) == 0, "unmount of the first daemon failed or it did "
		      "not exit 0");
	fst_cleanup(&f);
}
END_TEST

START_TEST(t_not_lsmfs)
{
	struct fst f;
	NEW_FS(&f, "mount-notlsmfs", 2);
	char plain[PATH_MAX], p[PATH_MAX], spec[2 * PATH_MAX];
	pathf(plain, f.root, "plain");
	ck_assert(mkdir(plain, 0755) == 0);
	expect_refusal("empty non-lsmfs directory", NULL, plain, f.mnt,
		       (const char *[]){plain, NULL});
	int fd = open(pathf(p, plain, "somefile"), O_CREAT | O_WRONLY, 0644);
	ck_assert(fd >= 0);
	close(fd);
	join2(spec, sizeof(spec), f.disks[0], plain);
	expect_refusal("non-lsmfs dir among disks", NULL, spec, f.mnt,
		       (const char *[]){plain, NULL});
	/* A .lsmfs directory without a superblock is no better. */
	ck_assert(mkdir(pathf(p, plain, ".lsmfs"), 0755) == 0);
	join2(spec, sizeof(spec), plain, f.disks[1]);
	expect_refusal("dir with empty .lsmfs", NULL, spec, f.mnt,
		       (const char *[]){plain, NULL});
	fst_cleanup(&f);
}
END_TEST

/* ---- mounting --------------------------------------------------------- */

/* Every disk's lock can be taken: no daemon holds the store. */
static void expect_unlocked(const struct fst *f)
{
	for (int i = 0; i < f->ndisks; i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/.lsmfs/lock", f->disks[i]);
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue; /* no lock file: nothing holds it */
		ck_assert_msg(flock(fd, LOCK_EX | LOCK_NB) == 0,
			      "%s: still locked after the daemon exited", p);
		close(fd);
	}
}

static void write_file(const char *p, const char *s)
{
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	ck_assert_msg(fd >= 0, "%s: create: %s", p, strerrorname_np(errno));
	ck_assert_msg(write(fd, s, strlen(s)) == (ssize_t)strlen(s), "%s: write: %s", p,
		      strerrorname_np(errno));
	ck_assert_msg(close(fd) == 0, "%s: close: %s", p, strerrorname_np(errno));
}

static void expect_content(const char *p, const char *s)
{
	char buf[4096];
	int fd = open(p, O_RDONLY);
	ck_assert_msg(fd >= 0, "%s: open: %s", p, strerrorname_np(errno));
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_msg(n >= 0, "%s: read: %s", p, strerrorname_np(errno));
	buf[n] = 0;
	ck_assert_msg(strcmp(buf, s) == 0, "%s: expected \"%s\", got \"%s\"", p, s, buf);
}

START_TEST(t_clean_unmount)
{
	struct fst f;
	NEW_FS(&f, "mount-clean", 2);
	ck_assert_msg(fst_mount(&f, NULL) == 0, "mount of %s failed", f.spec);
	char p[PATH_MAX], big[PATH_MAX];
	write_file(pathf(p, f.mnt, "kept"), "survives a clean unmount");
	/* Some data without fsync, bigger than the inline limit. */
	pathf(big, f.mnt, "big");
	int fd = open(big, O_CREAT | O_WRONLY, 0644);
	ck_assert(fd >= 0);
	static char chunk[1 << 20];
	memset(chunk, 'q', sizeof(chunk));
	for (int i = 0; i < 8; i++)
		ck_assert_msg(write(fd, chunk, sizeof(chunk)) == (ssize_t)sizeof(chunk),
			      "%s: write: %s", big, strerrorname_np(errno));
	close(fd);
	ck_assert_msg(mkdir(pathf(p, f.mnt, "dir"), 0700) == 0, "mkdir");
	ck_assert_msg(fst_umount(&f) == 0,
		      "fusermount3 -u %s: failed, or the daemon did not exit with status 0",
		      f.mnt);
	ck_assert_msg(!is_mounted(f.mnt), "%s still mounted after unmount", f.mnt);
	expect_unlocked(&f);
	ck_assert_msg(fst_mount(&f, NULL) == 0, "second mount of %s failed", f.spec);
	expect_content(pathf(p, f.mnt, "kept"), "survives a clean unmount");
	struct stat st;
	ck_assert_msg(stat(big, &st) == 0 && st.st_size == 8 << 20,
		      "%s: size after remount: expected %d, got %lld", big, 8 << 20,
		      (long long)st.st_size);
	fd = open(big, O_RDONLY);
	ck_assert(fd >= 0);
	static char got[1 << 20];
	for (int i = 0; i < 8; i++) {
		ck_assert_msg(read(fd, got, sizeof(got)) == (ssize_t)sizeof(got), "%s: read", big);
		ck_assert_msg(memcmp(got, chunk, sizeof(got)) == 0,
			      "%s: MiB %d differs after remount", big, i);
	}
	close(fd);
	ck_assert_msg(stat(pathf(p, f.mnt, "dir"), &st) == 0 && S_ISDIR(st.st_mode) &&
		      (st.st_mode & 07777) == 0700, "%s: directory after remount", p);
	ck_assert_msg(fst_umount(&f) == 0, "second unmount failed or the daemon did not "
		      "exit with status 0");
	expect_unlocked(&f);
	fst_cleanup(&f);
}
END_TEST

START_TEST(t_sigterm)
{
	struct fst f;
	NEW_FS(&f, "mount-sigterm", 1);
	ck_assert_msg(fst_mount(&f, NULL) == 0, "mount of %s failed", f.spec);
	char p[PATH_MAX];
	write_file(pathf(p, f.mnt, "x"), "before SIGTERM");
	pid_t pid = f.daemon;
	kill(pid, SIGTERM);
	int st = 0;
	long long deadline = now_ms() + 30000;
	pid_t w = 0;
	while (now_ms() < deadline && (w = waitpid(pid, &st, WNOHANG)) == 0)
		usleep(10000);
	if (w != pid) {
		fst_kill(&f);
		ck_abort_msg("lsmfs did not exit within 30 s of SIGTERM");
	}
	f.daemon = 0;
	if (is_mounted(f.mnt))
		detach(f.mnt);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "lsmfs after SIGTERM: expected exit status 0, got %s %d",
		      WIFEXITED(st) ? "status" : "signal",
		      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	expect_unlocked(&f);
	ck_assert_msg(fst_mount(&f, NULL) == 0, "mount after SIGTERM failed");
	expect_content(p, "before SIGTERM");
	ck_assert_msg(fst_umount(&f) == 0, "unmount failed");
	fst_cleanup(&f);
}
END_TEST

START_TEST(t_read_only)
{
	struct fst f;
	NEW_FS(&f, "mount-ro", 2);
	ck_assert_msg(fst_mount(&f, NULL) == 0, "mount of %s failed", f.spec);
	char file[PATH_MAX], dir[PATH_MAX], p[PATH_MAX];
	write_file(pathf(file, f.mnt, "file"), "read-only data");
	ck_assert(mkdir(pathf(dir, f.mnt, "dir"), 0755) == 0);
	ck_assert(setxattr(file, "user.x", "1", 1, 0) == 0);
	ck_assert_msg(fst_umount(&f) == 0, "unmount failed");

	ck_assert_msg(fst_mount(&f, "ro") == 0, "mount -o ro of %s failed", f.spec);
	expect_content(file, "read-only data");
	char buf[8];
	ck_assert_msg(getxattr(file, "user.x", buf, sizeof(buf)) == 1, "%s: getxattr on ro",
		      file);
#define EROFS_CHECK(call, path) do { \
	errno = 0; \
	long long r_ = (long long)(call); \
	int e_ = errno; \
	ck_assert_msg(r_ == -1 && e_ == EROFS, "%s: %s on a read-only mount: expected " \
		      "EROFS, got %s", (path), #call, r_ == -1 ? strerrorname_np(e_) \
		      : "success"); \
} while (0)
	EROFS_CHECK(open(pathf(p, f.mnt, "new"), O_CREAT | O_WRONLY, 0644), p);
	EROFS_CHECK(open(file, O_WRONLY), file);
	EROFS_CHECK(open(file, O_RDWR | O_TRUNC), file);
	EROFS_CHECK(mkdir(pathf(p, f.mnt, "newdir"), 0755), p);
	EROFS_CHECK(unlink(file), file);
	EROFS_CHECK(rmdir(dir), dir);
	EROFS_CHECK(rename(file, pathf(p, f.mnt, "moved")), file);
	EROFS_CHECK(truncate(file, 0), file);
	EROFS_CHECK(chmod(file, 0600), file);
	EROFS_CHECK(chown(file, 1, 1), file);
	EROFS_CHECK(symlink("x", pathf(p, f.mnt, "sym")), p);
	EROFS_CHECK(link(file, pathf(p, f.mnt, "hard")), p);
	EROFS_CHECK(mknod(pathf(p, f.mnt, "fifo"), S_IFIFO | 0644, 0), p);
	EROFS_CHECK(setxattr(file, "user.y", "1", 1, 0), file);
	EROFS_CHECK(removexattr(file, "user.x"), file);
	EROFS_CHECK(utimensat(AT_FDCWD, file, NULL, 0), file);
	ck_assert_msg(fst_umount(&f) == 0, "unmount of the ro mount failed or the daemon "
		      "did not exit 0");
	/* Nothing changed. */
	ck_assert_msg(fst_mount(&f, NULL) == 0, "rw remount failed");
	expect_content(file, "read-only data");
	ck_assert_msg(fst_umount(&f) == 0, "unmount failed");
	fst_cleanup(&f);
}
END_TEST

/* The options field of mnt's line in /proc/self/mounts. */
static bool mount_opts(const char *mnt, char *out, size_t cap)
{
	char real[PATH_MAX];
	if (!realpath(mnt, real))
		return false;
	FILE *fp = fopen("/proc/self/mounts", "r");
	if (!fp)
		return false;
	char line[4096];
	bool found = false;
	while (fgets(line, sizeof(line), fp)) {
		char dev[1024], dir[PATH_MAX], type[256], opts[2048];
		if (sscanf(line, "%1023s %4095s %255s %2047s", dev, dir, type, opts) == 4 &&
		    strcmp(dir, real) == 0) {
			snprintf(out, cap, "%s", opts);
			found = true; /* the last one is the top of the stack */
		}
	}
	fclose(fp);
	return found;
}

START_TEST(t_options)
{
	struct fst f;
	NEW_FS(&f, "mount-opts", 2);
	const char *sets[] = {
		"allow_other",
		"allow_other,default_permissions",
		"default_permissions",
		"rw,nosuid,nodev",
		"noatime",
		"noexec,nosuid",
		"fsname=lsmfs-test",
		"rw,allow_other,default_permissions,noatime",
	};
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		ck_assert_msg(fst_mount(&f, sets[i]) == 0, "mount -o %s of %s failed", sets[i],
			      f.spec);
		char opts[2048] = "";
		ck_assert_msg(mount_opts(f.mnt, opts, sizeof(opts)), "%s not in /proc/self/mounts",
			      f.mnt);
		if (strstr(sets[i], "allow_other"))
			ck_assert_msg(strstr(opts, "allow_other"),
				      "-o %s: allow_other missing from the mount options %s",
				      sets[i], opts);
		if (strstr(sets[i], "default_permissions"))
			ck_assert_msg(strstr(opts, "default_permissions"),
				      "-o %s: default_permissions missing from %s", sets[i], opts);
		if (strstr(sets[i], "nosuid"))
			ck_assert_msg(strstr(opts, "nosuid"), "-o %s: nosuid missing from %s",
				      sets[i], opts);
		if (strstr(sets[i], "noexec"))
			ck_assert_msg(strstr(opts, "noexec"), "-o %s: noexec missing from %s",
				      sets[i], opts);
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/opt%zu", f.mnt, i);
		write_file(p, sets[i]);
		expect_content(p, sets[i]);
		ck_assert_msg(fst_umount(&f) == 0, "unmount after -o %s failed or the daemon did "
			      "not exit 0", sets[i]);
	}
	fst_cleanup(&f);
}
END_TEST

/*
 * -o log_delay_ms: a change nobody synced waits in the daemon's memory at
 * most that long.  Well past the delay (default 5 ms, then 50), a SIGKILL
 * keeps it: the flusher wrote it to the commit log.  Values out of range
 * are refused.
 */
START_TEST(t_log_delay)
{
	struct fst f;
	NEW_FS(&f, "mount-logdelay", 2);
	const char *opts[] = {NULL, "log_delay_ms=50", "log_delay_ms=0"};
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		ck_assert_msg(fst_mount(&f, opts[i]) == 0, "mount -o %s failed",
			      opts[i] ? opts[i] : "(defaults)");
		char p[PATH_MAX], name[32];
		snprintf(name, sizeof(name), "f%zu", i);
		write_file(pathf(p, f.mnt, name), name);
		snprintf(name, sizeof(name), "d%zu", i);
		ck_assert_msg(mkdir(pathf(p, f.mnt, name), 0700) == 0, "mkdir %s", p);
		usleep(1000 * 1000);
		ck_assert_msg(fst_kill(&f) == 0, "kill");
		ck_assert_msg(fst_mount(&f, NULL) == 0, "mount after the kill failed");
		for (size_t j = 0; j <= i; j++) {
			struct stat st;
			snprintf(name, sizeof(name), "f%zu", j);
			expect_content(pathf(p, f.mnt, name), name);
			snprintf(name, sizeof(name), "d%zu", j);
			ck_assert_msg(stat(pathf(p, f.mnt, name), &st) == 0 && S_ISDIR(st.st_mode),
				      "%s: lost to a kill 1 s after mkdir (-o %s)", p,
				      opts[i] ? opts[i] : "(defaults)");
		}
		ck_assert_msg(fst_umount(&f) == 0, "unmount");
	}
	const char *bad[] = {"log_delay_ms=-1",  "log_delay_ms=60001", "log_delay_ms=x",
			     "attr_timeout=nan", "attr_timeout=1e30",  "attr_timeout=x",
			     "entry_timeout=-1", "entry_timeout=inf", "spin_us=-1",
			     "spin_us=10001", "dircache_age=-1", "dircache_age=nan",
			     "dircache_age=1e30"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = {bin("LSMFS_BIN"), "-f", "-o", bad[i], f.spec, f.mnt, NULL};
		char out[4096];
		int st = fst_run(argv, out, sizeof(out));
		ck_assert_msg(st != 0 && !is_mounted(f.mnt), "-o %s: accepted (exit %d): %s",
			      bad[i], st, out);
	}
	fst_cleanup(&f);
}
END_TEST

static pid_t lock_pid(const struct fst *f)
{
	char p[PATH_MAX], buf[64] = "";
	snprintf(p, sizeof(p), "%s/.lsmfs/lock", f->disks[0]);
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return (pid_t)strtol(buf, NULL, 10);
}

START_TEST(t_daemonize)
{
	struct fst f;
	NEW_FS(&f, "mount-bg", 2);
	const char *argv[] = {bin("LSMFS_BIN"), f.spec, f.mnt, NULL};
	char out[4096];
	long long t0 = now_ms();
	int rc = run_daemon(argv, NULL, out, sizeof(out), 30);
	ck_assert_msg(rc == 0, "lsmfs without -f: expected the parent to exit 0, got %s: %s",
		      describe(rc), out);
	ck_assert_msg(is_mounted(f.mnt), "lsmfs without -f exited 0 (after %lld ms) but %s "
		      "is not mounted", now_ms() - t0, f.mnt);
	pid_t pid = lock_pid(&f);
	char p[PATH_MAX];
	write_file(pathf(p, f.mnt, "bg"), "from the background daemon");
	expect_content(p, "from the background daemon");
	const char *um[] = {"fusermount3", "-u", f.mnt, NULL};
	char umout[1024];
	rc = -1;
	for (int i = 0; i < 100 && rc != 0; i++) {
		rc = fst_run(um, umout, sizeof(umout));
		if (rc)
			usleep(50000);
	}
	ck_assert_msg(rc == 0, "fusermount3 -u %s: %s", f.mnt, umout);
	ck_assert_msg(!is_mounted(f.mnt), "%s still mounted", f.mnt);
	/* The detached daemon goes away and releases the disks. */
	if (pid > 0) {
		long long deadline = now_ms() + 30000;
		while (now_ms() < deadline && kill(pid, 0) == 0)
			usleep(10000);
		ck_assert_msg(kill(pid, 0) != 0, "the detached daemon (pid %d, from the lock "
			      "file) still runs 30 s after the unmount", (int)pid);
	} else {
		sleep(1);
	}
	expect_unlocked(&f);
	/* And its work is there. */
	ck_assert_msg(fst_mount(&f, NULL) == 0, "foreground mount after the background one");
	expect_content(p, "from the background daemon");
	ck_assert_msg(fst_umount(&f) == 0, "unmount failed");
	fst_cleanup(&f);
}
END_TEST

static Suite *mount_suite(void)
{
	Suite *s = suite_create("mount");
	TCase *t = tcase_create("refusals");
	tcase_set_timeout(t, 300);
	tcase_add_unchecked_fixture(t, roots_setup, roots_teardown);
	tcase_add_test(t, t_missing_disk);
	tcase_add_test(t, t_foreign_disk);
	tcase_add_test(t, t_disk_twice);
	tcase_add_test(t, t_disk_left_out);
	tcase_add_test(t, t_in_use);
	tcase_add_test(t, t_not_lsmfs);
	suite_add_tcase(s, t);
	t = tcase_create("mounting");
	tcase_set_timeout(t, 300);
	tcase_add_unchecked_fixture(t, roots_setup, roots_teardown);
	tcase_add_test(t, t_clean_unmount);
	tcase_add_test(t, t_sigterm);
	tcase_add_test(t, t_read_only);
	tcase_add_test(t, t_options);
	tcase_add_test(t, t_daemonize);
	tcase_add_test(t, t_log_delay);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	fst_require_fuse();
	SRunner *sr = srunner_create(mount_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
