/*
 * test_posix.c: does lsmfs behave like a POSIX (Linux) filesystem?
 *
 * Every case runs in a fresh directory of its own under a base directory:
 *   mode A (default, under meson): mkfs two disks with 64 KiB chunks and a
 *     4096-byte inline limit, so that chunk boundaries and the inline ->
 *     chunked move are exercised; mount; base = <mnt>/t; at the end the
 *     unmount must succeed and the daemon must exit 0.
 *   mode B (env FSTEST_DIR=/some/dir): the same cases in a plain directory
 *     without mounting anything.  Every case must pass there on ext4/tmpfs:
 *     that is how we know the tests encode real Linux behaviour and not our
 *     wishes.  The persistence case needs a remount and only runs in mode A.
 *
 * Failures name the path, the call, and the expected versus actual errno.
 * Randomized cases print their seed (replay with LSMFS_SEED).
 * Needs root (chown, device nodes, trusted.* xattrs).
 */
#include "fstest.h"

#include <check.h>
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536        /* --chunk-size of the mode A filesystem */
#define INLINE_MAX 4096    /* --inline-max */
#define KIB 1024
#define MIB (1024 * 1024)
#define GIB (1024LL * 1024 * 1024)

static const char *const mkfs_args[] = {
	"--chunk-size", "65536", "--inline-max", "4096", NULL,
};

/* Set once in main() before any case runs (cases run in forked children). */
static char base[PATH_MAX];
static bool mode_a;

/* ---- helpers ---------------------------------------------------------- */

static const char *ename(int e)
{
	const char *n = e ? strerrorname_np(e) : "0";
	return n ? n : "unknown errno";
}

/* The call must not return -1; evaluates to its result. */
#define OK(call, path) __extension__ ({ \
	errno = 0; \
	long long ok_rc_ = (long long)(call); \
	ck_assert_msg(ok_rc_ != -1, "%s: %s: expected success, got %s (%s)", \
		      (path), #call, ename(errno), strerror(errno)); \
	ok_rc_; })

/* The call must fail with errno want. */
#define ERR(call, want, path) do { \
	errno = 0; \
	long long err_rc_ = (long long)(call); \
	int err_e_ = errno; \
	ck_assert_msg(err_rc_ == -1 && err_e_ == (want), \
		      "%s: %s: expected %s, got %s", (path), #call, ename(want), \
		      err_rc_ == -1 ? ename(err_e_) : "success"); \
} while (0)

/* An integer field must have the expected value. */
#define EQ(got, want, path, what) do { \
	errno = 0; \
	long long eq_g_ = (long long)(got), eq_w_ = (long long)(want); \
	int eq_e_ = errno; \
	ck_assert_msg(eq_g_ == eq_w_, "%s: %s: expected %lld, got %lld%s%s", \
		      (path), (what), eq_w_, eq_g_, eq_g_ == -1 ? " errno " : "", \
		      eq_g_ == -1 ? ename(eq_e_) : ""); \
} while (0)

static char *pj(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);
	ck_assert_msg(n > 0 && n < PATH_MAX, "%s/%s: path too long", dir, name);
	return buf;
}

/* dir/<prefix><i, 5 digits> */
static char *pjn(char *buf, const char *dir, const char *prefix, int i)
{
	char name[NAME_MAX + 1];
	int n = snprintf(name, sizeof(name), "%s%05d", prefix, i);
	ck_assert(n > 0 && n < (int)sizeof(name));
	return pj(buf, dir, name);
}

/* A fresh directory for the case, named after it. */
static void case_dir(char *out, const char *name)
{
	pj(out, base, name);
	OK(mkdir(out, 0755), out);
}
#define CASE_DIR(d) char d[PATH_MAX]; case_dir(d, __func__)

/* Deterministic content: byte at file offset off for a given seed; never 0,
 * so that data replaced by zeros is always noticed. */
static uint8_t pat(uint64_t off, unsigned seed)
{
	uint64_t x = (off + 1 + (uint64_t)seed * 0x100000001b3ULL) * 0x9E3779B97F4A7C15ULL;
	uint8_t b = (uint8_t)(x >> 37);
	return b ? b : 0x5a;
}

static void fill(uint8_t *buf, size_t n, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = pat(off + i, seed);
}

static void write_all(int fd, const void *buf, size_t n, off_t off, const char *path)
{
	size_t done = 0;
	while (done < n) {
		errno = 0;
		ssize_t w = pwrite(fd, (const char *)buf + done, n - done, off + (off_t)done);
		ck_assert_msg(w > 0, "%s: pwrite(%zu bytes at %lld): expected success, got %s",
			      path, n - done, (long long)(off + (off_t)done),
			      w < 0 ? ename(errno) : "0 bytes written");
		done += (size_t)w;
	}
}

static void read_exact(int fd, void *buf, size_t n, off_t off, const char *path)
{
	size_t done = 0;
	while (done < n) {
		errno = 0;
		ssize_t r = pread(fd, (char *)buf + done, n - done, off + (off_t)done);
		ck_assert_msg(r > 0, "%s: pread(%zu bytes at %lld): expected data, got %s",
			      path, n - done, (long long)(off + (off_t)done),
			      r < 0 ? ename(errno) : "EOF");
		done += (size_t)r;
	}
}

/* One check per buffer, not per byte: each passing ck_assert is a message
 * to check's parent process, and millions of them took minutes. */
static void expect_mem(const char *path, const uint8_t *got, const uint8_t *want,
		       size_t n, off_t off)
{
	if (!memcmp(got, want, n))
		return;
	size_t i = 0;
	while (got[i] == want[i])
		i++;
	ck_abort_msg("%s: byte at offset %lld: expected 0x%02x, got 0x%02x", path,
		     (long long)(off + (off_t)i), want[i], got[i]);
}

/* Bytes [off, off+n) must be pat(.., seed), or zeros when seed < 0. */
static void expect_range(const char *path, int fd, off_t off, size_t n, int seed)
{
	size_t piece = MIB;
	uint8_t *got = malloc(piece), *want = malloc(piece);
	ck_assert(got && want);
	while (n) {
		size_t k = n < piece ? n : piece;
		read_exact(fd, got, k, off, path);
		if (seed < 0)
			memset(want, 0, k);
		else
			fill(want, k, (uint64_t)off, (unsigned)seed);
		expect_mem(path, got, want, k, off);
		off += (off_t)k;
		n -= k;
	}
	free(got);
	free(want);
}
#define ZEROS (-1)

/* Push the page cache out so that the next reads come from the filesystem. */
static void drop_cache(int fd, const char *path)
{
	OK(fsync(fd), path);
	OK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? 0 : -1, path);
}

/* st_size, following symlinks. */
static off_t fsize(const char *path)
{
	struct stat st;
	OK(stat(path, &st), path);
	return st.st_size;
}

static void make_file(const char *path, off_t len, int seed)
{
	int fd = (int)OK(open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644), path);
	if (len) {
		uint8_t *buf = malloc((size_t)len);
		ck_assert(buf);
		if (seed < 0)
			memset(buf, 0, (size_t)len);
		else
			fill(buf, (size_t)len, 0, (unsigned)seed);
		write_all(fd, buf, (size_t)len, 0, path);
		free(buf);
	}
	OK(close(fd), path);
}

/* The whole file must be pat(seed) over [0, len) and exactly len long. */
static void expect_file(const char *path, off_t len, int seed)
{
	EQ(fsize(path), len, path, "st_size");
	int fd = (int)OK(open(path, O_RDONLY), path);
	expect_range(path, fd, 0, (size_t)len, seed);
	char c;
	EQ(pread(fd, &c, 1, len), 0, path, "read at EOF");
	OK(close(fd), path);
}

static void write_str(const char *path, const char *s)
{
	int fd = (int)OK(open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644), path);
	EQ(write(fd, s, strlen(s)), (long long)strlen(s), path, "write length");
	OK(close(fd), path);
}

static void expect_str(const char *path, const char *s)
{
	char buf[8192];
	int fd = (int)OK(open(path, O_RDONLY), path);
	ssize_t n = OK(read(fd, buf, sizeof(buf) - 1), path);
	buf[n] = 0;
	ck_assert_msg(strcmp(buf, s) == 0, "%s: content: expected \"%s\", got \"%s\"",
		      path, s, buf);
	OK(close(fd), path);
}

static struct stat st_of(const char *path)
{
	struct stat st;
	OK(lstat(path, &st), path);
	return st;
}

/* Names of a directory except . and .., via readdir; returns the count and
 * checks that . and .. come exactly once. */
static int count_entries(const char *dir, const char *must_have)
{
	DIR *dp = opendir(dir);
	ck_assert_msg(dp, "%s: opendir: %s", dir, ename(errno));
	int n = 0, dots = 0, dotdots = 0;
	bool found = must_have == NULL;
	struct dirent *de;
	while ((de = readdir(dp))) {
		if (strcmp(de->d_name, ".") == 0)
			dots++;
		else if (strcmp(de->d_name, "..") == 0)
			dotdots++;
		else {
			n++;
			if (must_have && strcmp(de->d_name, must_have) == 0)
				found = true;
		}
	}
	closedir(dp);
	EQ(dots, 1, dir, "count of '.' entries");
	EQ(dotdots, 1, dir, "count of '..' entries");
	ck_assert_msg(found, "%s: readdir: entry %s missing", dir, must_have);
	return n;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int ts_cmp(struct timespec a, struct timespec b)
{
	if (a.tv_sec != b.tv_sec)
		return a.tv_sec < b.tv_sec ? -1 : 1;
	if (a.tv_nsec != b.tv_nsec)
		return a.tv_nsec < b.tv_nsec ? -1 : 1;
	return 0;
}

#define TS_EQ(got, want_sec, want_nsec, path, what) \
	ck_assert_msg((got).tv_sec == (want_sec) && (got).tv_nsec == (want_nsec), \
		      "%s: %s: expected %lld.%09ld, got %lld.%09ld", (path), (what), \
		      (long long)(want_sec), (long)(want_nsec), \
		      (long long)(got).tv_sec, (long)(got).tv_nsec)

/* Small PRNG for the randomized cases (xorshift64*). */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* ---- files: create, open, read, write --------------------------------- */

START_TEST(t_create_open_rw)
{
	CASE_DIR(d);
	char p[PATH_MAX], q[PATH_MAX];
	pj(p, d, "f");
	int fd = (int)OK(open(p, O_CREAT | O_WRONLY, 0666), p);
	struct stat st;
	OK(fstat(fd, &st), p);
	ck_assert_msg(S_ISREG(st.st_mode), "%s: not a regular file (mode %o)", p, st.st_mode);
	EQ(st.st_mode & 07777, 0644, p, "permission bits after create 0666 with umask 022");
	EQ(st.st_size, 0, p, "st_size of a new file");
	EQ(st.st_nlink, 1, p, "st_nlink of a new file");
	EQ(st.st_uid, geteuid(), p, "st_uid");
	EQ(write(fd, "hello ", 6), 6, p, "write length");
	EQ(write(fd, "world", 5), 5, p, "write length");
	EQ(lseek(fd, 0, SEEK_CUR), 11, p, "file offset after two writes");
	char buf[64];
	ERR(read(fd, buf, 1), EBADF, p);
	OK(close(fd), p);

	fd = (int)OK(open(p, O_RDONLY), p);
	EQ(read(fd, buf, sizeof(buf)), 11, p, "read length");
	ck_assert_msg(memcmp(buf, "hello world", 11) == 0, "%s: content differs", p);
	EQ(read(fd, buf, sizeof(buf)), 0, p, "read at EOF");
	ERR(write(fd, "x", 1), EBADF, p);
	OK(close(fd), p);

	fd = (int)OK(open(p, O_RDWR), p);
	EQ(pwrite(fd, "J", 1, 0), 1, p, "pwrite length");
	EQ(pread(fd, buf, sizeof(buf), 0), 11, p, "pread length");
	ck_assert_msg(memcmp(buf, "Jello world", 11) == 0, "%s: content after pwrite", p);
	OK(close(fd), p);
	EQ(fsize(p), 11, p, "st_size");

	ERR(open(pj(q, d, "missing"), O_RDONLY), ENOENT, q);
	ERR(open(d, O_WRONLY), EISDIR, d);
	ERR(open(d, O_RDWR), EISDIR, d);
	ERR(open(p, O_RDONLY | O_DIRECTORY), ENOTDIR, p);
	ERR(open(pj(q, p, "x"), O_CREAT | O_WRONLY, 0644), ENOTDIR, q);
	ERR(open(pj(q, d, "nodir/x"), O_CREAT | O_WRONLY, 0644), ENOENT, q);
	EQ(count_entries(d, "f"), 1, d, "entries");
}
END_TEST

START_TEST(t_excl)
{
	CASE_DIR(d);
	char p[PATH_MAX], q[PATH_MAX], l[PATH_MAX];
	pj(p, d, "f");
	int fd = (int)OK(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644), p);
	OK(close(fd), p);
	ERR(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST, p);
	ERR(open(p, O_CREAT | O_EXCL | O_RDONLY, 0644), EEXIST, p);
	ERR(open(d, O_CREAT | O_EXCL | O_RDONLY, 0644), EEXIST, d);
	/* O_EXCL does not follow symlinks, even a dangling one. */
	OK(symlink("nowhere", pj(l, d, "dangling")), l);
	ERR(open(l, O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST, l);
	ERR(access(pj(q, d, "nowhere"), F_OK), ENOENT, q);
	/* O_CREAT without O_EXCL opens the existing file without truncating. */
	write_str(p, "keep");
	fd = (int)OK(open(p, O_CREAT | O_WRONLY, 0644), p);
	OK(close(fd), p);
	expect_str(p, "keep");
}
END_TEST

START_TEST(t_append)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	pj(p, d, "f");
	write_str(p, "0123456789");
	int fd = (int)OK(open(p, O_WRONLY | O_APPEND), p);
	OK(lseek(fd, 0, SEEK_SET), p);
	EQ(write(fd, "abc", 3), 3, p, "write length");
	EQ(lseek(fd, 0, SEEK_CUR), 13, p, "offset after O_APPEND write");
	/* Another descriptor extends the file; O_APPEND still writes at the end. */
	int fd2 = (int)OK(open(p, O_WRONLY), p);
	EQ(pwrite(fd2, "XY", 2, 20), 2, p, "pwrite length");
	OK(close(fd2), p);
	EQ(write(fd, "def", 3), 3, p, "write length");
	OK(close(fd), p);
	EQ(fsize(p), 25, p, "st_size");
	char buf[32];
	fd = (int)OK(open(p, O_RDONLY), p);
	EQ(read(fd, buf, sizeof(buf)), 25, p, "read length");
	OK(close(fd), p);
	ck_assert_msg(memcmp(buf, "0123456789abc\0\0\0\0\0\0\0XYdef", 25) == 0,
		      "%s: content after appends differs", p);

	/* Appending across the inline limit. */
	char q[PATH_MAX];
	pj(q, d, "g");
	make_file(q, 4000, 3);
	uint8_t more[300];
	fill(more, sizeof(more), 4000, 3);
	fd = (int)OK(open(q, O_WRONLY | O_APPEND), q);
	EQ(write(fd, more, sizeof(more)), (long long)sizeof(more), q, "write length");
	OK(close(fd), q);
	expect_file(q, 4300, 3);
}
END_TEST

START_TEST(t_trunc_flag)
{
	CASE_DIR(d);
	char p[PATH_MAX], q[PATH_MAX];
	pj(p, d, "chunked");
	make_file(p, 3 * CHUNK + 10, 4);
	int fd = (int)OK(open(p, O_WRONLY | O_TRUNC), p);
	struct stat st;
	OK(fstat(fd, &st), p);
	EQ(st.st_size, 0, p, "st_size after O_TRUNC");
	EQ(write(fd, "tiny", 4), 4, p, "write length");
	OK(close(fd), p);
	expect_str(p, "tiny");
	/* The old bytes must not come back when the file grows again. */
	OK(truncate(p, 3 * CHUNK + 10), p);
	fd = (int)OK(open(p, O_RDONLY), p);
	expect_range(p, fd, 4, 3 * CHUNK + 6, ZEROS);
	OK(close(fd), p);

	pj(q, d, "inline");
	make_file(q, 1000, 5);
	fd = (int)OK(open(q, O_RDWR | O_TRUNC), q);
	OK(close(fd), q);
	EQ(fsize(q), 0, q, "st_size after O_TRUNC");
	OK(truncate(q, 1000), q);
	expect_file(q, 1000, ZEROS);
}
END_TEST

START_TEST(t_read_eof)
{
	CASE_DIR(d);
	char p[PATH_MAX], buf[256];
	pj(p, d, "f");
	make_file(p, 100, 6);
	int fd = (int)OK(open(p, O_RDONLY), p);
	EQ(pread(fd, buf, sizeof(buf), 100), 0, p, "pread at EOF");
	EQ(pread(fd, buf, sizeof(buf), 1000), 0, p, "pread past EOF");
	EQ(pread(fd, buf, sizeof(buf), 50), 50, p, "pread spanning EOF");
	uint8_t want[50];
	fill(want, 50, 50, 6);
	expect_mem(p, (uint8_t *)buf, want, 50, 50);
	OK(lseek(fd, 5000, SEEK_SET), p);
	EQ(read(fd, buf, sizeof(buf)), 0, p, "read past EOF");
	OK(close(fd), p);

	/* A chunked file that ends exactly at a chunk boundary. */
	pj(p, d, "g");
	make_file(p, 2 * CHUNK, 7);
	fd = (int)OK(open(p, O_RDONLY), p);
	drop_cache(fd, p);
	EQ(pread(fd, buf, sizeof(buf), 2 * CHUNK), 0, p, "pread at EOF (chunk boundary)");
	EQ(pread(fd, buf, sizeof(buf), 2 * CHUNK - 10), 10, p, "pread spanning EOF");
	EQ(pread(fd, buf, sizeof(buf), 10 * CHUNK), 0, p, "pread far past EOF");
	OK(close(fd), p);
}
END_TEST

/* ---- data: chunks, random writes, sparse files, inline -> chunked ---- */

static void model_write(uint8_t *model, off_t *size, int fd, const char *p,
			off_t off, size_t n, unsigned seed)
{
	uint8_t *buf = malloc(n);
	ck_assert(buf);
	fill(buf, n, (uint64_t)off * 7 + seed, seed);
	write_all(fd, buf, n, off, p);
	memcpy(model + off, buf, n);
	if (off + (off_t)n > *size)
		*size = off + (off_t)n;
	free(buf);
}

static void model_check(const uint8_t *model, off_t size, int fd, const char *p,
			const char *when)
{
	struct stat st;
	OK(fstat(fd, &st), p);
	ck_assert_msg(st.st_size == size, "%s (%s): st_size: expected %lld, got %lld",
		      p, when, (long long)size, (long long)st.st_size);
	drop_cache(fd, p);
	uint8_t *got = malloc((size_t)size + 1);
	ck_assert(got);
	if (size)
		read_exact(fd, got, (size_t)size, 0, p);
	EQ(pread(fd, got, 1, size), 0, p, "read at EOF");
	char what[PATH_MAX + 160];
	snprintf(what, sizeof(what), "%s (%s)", p, when);
	expect_mem(what, got, model, (size_t)size, 0);
	free(got);
}

START_TEST(t_chunk_boundaries)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	pj(p, d, "f");
	off_t cap = 8 * CHUNK, size = 0;
	uint8_t *model = calloc(1, (size_t)cap);
	ck_assert(model);
	int fd = (int)OK(open(p, O_CREAT | O_RDWR, 0644), p);
	/* One write spanning five boundaries, then writes right at boundaries. */
	model_write(model, &size, fd, p, CHUNK - 100, 5 * CHUNK + 1234, 1);
	model_write(model, &size, fd, p, 2 * CHUNK - 1, 1, 2);
	model_write(model, &size, fd, p, 3 * CHUNK - 1, 2, 3);
	model_write(model, &size, fd, p, 4 * CHUNK, CHUNK, 4);
	model_write(model, &size, fd, p, 0, 10, 5);
	model_write(model, &size, fd, p, 7 * CHUNK - 3, 3, 6);   /* after a hole */
	model_write(model, &size, fd, p, 5 * CHUNK + 1, CHUNK - 2, 7);
	model_check(model, size, fd, p, "after boundary writes");
	OK(close(fd), p);
	fd = (int)OK(open(p, O_RDONLY), p);
	model_check(model, size, fd, p, "after reopen");
	OK(close(fd), p);
	free(model);
}
END_TEST

START_TEST(t_random_writes)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	pj(p, d, "f");
	unsigned long seed = fst_seed("posix random writes");
	uint64_t s = seed * 2 + 1;
	const off_t cap = 1536 * KIB;
	uint8_t *model = calloc(1, (size_t)cap);
	ck_assert(model);
	off_t size = 0;
	int fd = (int)OK(open(p, O_CREAT | O_RDWR, 0644), p);
	char when[128];
	for (int op = 1; op <= 400; op++) {
		uint64_t kind = rnd(&s) % 10;
		if (kind < 8) {
			off_t off;
			size_t n;
			if (kind < 3) { /* near a chunk boundary */
				off = (off_t)(rnd(&s) % 20) * CHUNK + (off_t)(rnd(&s) % 64) - 32;
				if (off < 0)
					off = 0;
			} else {
				off = (off_t)(rnd(&s) % (1200 * KIB));
			}
			n = rnd(&s) % 4 == 0 ? 1 + rnd(&s) % 100 : 1 + rnd(&s) % 150000;
			if (off + (off_t)n > cap)
				n = (size_t)(cap - off);
			model_write(model, &size, fd, p, off, n, (unsigned)op);
		} else {
			off_t ns = (off_t)(rnd(&s) % (uint64_t)cap);
			if (rnd(&s) % 3 == 0)
				ns = ns / CHUNK * CHUNK;
			OK(ftruncate(fd, ns), p);
			if (ns < size)
				memset(model + ns, 0, (size_t)(size - ns));
			size = ns;
		}
		if (op % 50 == 0) {
			snprintf(when, sizeof(when), "seed %lu, after op %d", seed, op);
			model_check(model, size, fd, p, when);
		}
	}
	OK(close(fd), p);
	fd = (int)OK(open(p, O_RDONLY), p);
	snprintf(when, sizeof(when), "seed %lu, after reopen", seed);
	model_check(model, size, fd, p, when);
	OK(close(fd), p);
	free(model);
}
END_TEST

START_TEST(t_sparse)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	pj(p, d, "f");
	int fd = (int)OK(open(p, O_CREAT | O_RDWR, 0644), p);
	const off_t far = 10 * MIB;
	EQ(pwrite(fd, "x", 1, far), 1, p, "pwrite length");
	OK(fsync(fd), p);
	struct stat st;
	OK(fstat(fd, &st), p);
	EQ(st.st_size, far + 1, p, "st_size of a sparse file");
	ck_assert_msg((off_t)st.st_blocks * 512 < MIB,
		      "%s: sparse file of %lld bytes: st_blocks %lld is not small",
		      p, (long long)st.st_size, (long long)st.st_blocks);
	drop_cache(fd, p);
	expect_range(p, fd, 0, (size_t)far, ZEROS);
	char c;
	read_exact(fd, &c, 1, far, p);
	ck_assert_msg(c == 'x', "%s: byte at %lld: expected 'x'", p, (long long)far);

	/* Data written, then a hole inside a chunk before later data. */
	uint8_t buf[1000];
	fill(buf, sizeof(buf), 0, 8);
	write_all(fd, buf, sizeof(buf), 0, p);
	write_all(fd, buf, 50, 3 * CHUNK + 100, p);
	OK(fsync(fd), p);
	OK(fstat(fd, &st), p);
	ck_assert_msg(st.st_blocks > 0, "%s: st_blocks is 0 after writing data", p);
	drop_cache(fd, p);
	expect_range(p, fd, 0, sizeof(buf), 8);
	expect_range(p, fd, sizeof(buf), 3 * CHUNK + 100 - sizeof(buf), ZEROS);
	uint8_t got[50];
	read_exact(fd, got, 50, 3 * CHUNK + 100, p);
	expect_mem(p, got, buf, 50, 3 * CHUNK + 100);
	expect_range(p, fd, 3 * CHUNK + 150, (size_t)(far - (3 * CHUNK + 150)), ZEROS);
	OK(close(fd), p);
}
END_TEST

START_TEST(t_inline_to_chunked)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	pj(p, d, "f");
	int fd = (int)OK(open(p, O_CREAT | O_RDWR, 0644), p);
	uint8_t buf[6000];
	fill(buf, sizeof(buf), 0, 9);
	write_all(fd, buf, 3000, 0, p);
	EQ(fsize(p), 3000, p, "st_size");
	expect_range(p, fd, 0, 3000, 9);
	/* Past the inline limit. */
	write_all(fd, buf + 3000, 3000, 3000, p);
	EQ(fsize(p), 6000, p, "st_size after growing past the inline limit");
	drop_cache(fd, p);
	expect_range(p, fd, 0, 6000, 9);
	/* Far beyond: zeros in between. */
	write_all(fd, buf, 100, 200000, p);
	EQ(fsize(p), 200100, p, "st_size");
	drop_cache(fd, p);
	expect_range(p, fd, 0, 6000, 9);
	expect_range(p, fd, 6000, 200000 - 6000, ZEROS);
	/* Truncate back under the limit, then grow: old bytes must not return. */
	OK(ftruncate(fd, 2000), p);
	EQ(fsize(p), 2000, p, "st_size after truncating back");
	drop_cache(fd, p);
	expect_range(p, fd, 0, 2000, 9);
	OK(ftruncate(fd, 150000), p);
	drop_cache(fd, p);
	expect_range(p, fd, 0, 2000, 9);
	expect_range(p, fd, 2000, 150000 - 2000, ZEROS);
	/* Empty, then small again. */
	OK(ftruncate(fd, 0), p);
	write_all(fd, buf, 100, 0, p);
	OK(close(fd), p);
	expect_file(p, 100, 9);

	/* Exactly at the limit, then one byte more. */
	pj(p, d, "edge");
	make_file(p, INLINE_MAX, 10);
	expect_file(p, INLINE_MAX, 10);
	fd = (int)OK(open(p, O_WRONLY | O_APPEND), p);
	uint8_t one = pat(INLINE_MAX, 10);
	EQ(write(fd, &one, 1), 1, p, "write length");
	OK(close(fd), p);
	expect_file(p, INLINE_MAX + 1, 10);
	OK(truncate(p, INLINE_MAX - 1), p);
	expect_file(p, INLINE_MAX - 1, 10);
}
END_TEST

START_TEST(t_truncate)
{
	CASE_DIR(d);
	char p[PATH_MAX], q[PATH_MAX];
	pj(p, d, "f");
	make_file(p, 5 * CHUNK + 17, 11);
	int fd = (int)OK(open(p, O_RDWR), p);
	OK(ftruncate(fd, 2 * CHUNK), p);               /* down to a boundary */
	EQ(fsize(p), 2 * CHUNK, p, "st_size after ftruncate down");
	OK(ftruncate(fd, 4 * CHUNK + 5), p);           /* up again */
	drop_cache(fd, p);
	expect_range(p, fd, 0, 2 * CHUNK, 11);
	expect_range(p, fd, 2 * CHUNK, 2 * CHUNK + 5, ZEROS);
	OK(truncate(p, CHUNK / 2), p);                 /* by path, mid-chunk */
	EQ(fsize(p), CHUNK / 2, p, "st_size after truncate down");
	OK(truncate(p, 3 * CHUNK), p);
	drop_cache(fd, p);
	expect_range(p, fd, 0, CHUNK / 2, 11);
	expect_range(p, fd, CHUNK / 2, 3 * CHUNK - CHUNK / 2, ZEROS);
	OK(truncate(p, 3 * CHUNK), p);                 /* same size: no change */
	EQ(fsize(p), 3 * CHUNK, p, "st_size");
	ERR(truncate(p, -1), EINVAL, p);
	ERR(ftruncate(fd, -1), EINVAL, p);
	EQ(fsize(p), 3 * CHUNK, p, "st_size after failed truncates");
	OK(close(fd), p);
	fd = (int)OK(open(p, O_RDONLY), p);
	ERR(ftruncate(fd, 0), EINVAL, p);              /* not open for writing */
	OK(close(fd), p);
	ERR(truncate(d, 0), EISDIR, d);
	ERR(truncate(pj(q, d, "missing"), 0), ENOENT, q);
	OK(truncate(p, 0), p);
	expect_file(p, 0, 11);
}
END_TEST

START_TEST(t_fallocate)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	/* Mode 0 grows the file; new bytes read as zeros. */
	pj(p, d, "grow");
	int fd = (int)OK(open(p, O_CREAT | O_RDWR, 0644), p);
	OK(fallocate(fd, 0, 0, 100000), p);
	EQ(fsize(p), 100000, p, "st_size after fallocate mode 0");
	drop_cache(fd, p);
	expect_range(p, fd, 0, 100000, ZEROS);
	ERR(fallocate(fd, 0, 0, 0), EINVAL, p);
	OK(close(fd), p);

	/* Mode 0 inside and past existing data keeps the data. */
	pj(p, d, "data");
	make_file(p, 3 * CHUNK, 12);
	fd = (int)OK(open(p, O_RDWR), p);
	OK(fallocate(fd, 0, 1000, CHUNK), p);
	EQ(fsize(p), 3 * CHUNK, p, "st_size after fallocate inside the file");
	OK(fallocate(fd, 0, 4 * CHUNK, 1000), p);
	EQ(fsize(p), 4 * CHUNK + 1000, p, "st_size after fallocate past EOF");
	drop_cache(fd, p);
	expect_range(p, fd, 0, 3 * CHUNK, 12);
	expect_range(p, fd, 3 * CHUNK, CHUNK + 1000, ZEROS);
	OK(close(fd), p);

	/* KEEP_SIZE leaves the size alone. */
	pj(p, d, "keep");
	make_file(p, 5000, 13);
	fd = (int)OK(open(p, O_RDWR), p);
	OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 300000), p);
	EQ(fsize(p), 5000, p, "st_size after FALLOC_FL_KEEP_SIZE");
	drop_cache(fd, p);
	expect_range(p, fd, 0, 5000, 13);
	char c;
	EQ(pread(fd, &c, 1, 5000), 0, p, "read at EOF after FALLOC_FL_KEEP_SIZE");
	OK(close(fd), p);

	/* Punch a hole across chunk boundaries. */
	pj(p, d, "punch");
	make_file(p, 5 * CHUNK, 14);
	fd = (int)OK(open(p, O_RDWR), p);
	const off_t ho = CHUNK - 1000, hl = 2 * CHUNK + 3000;
	OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, ho, hl), p);
	EQ(fsize(p), 5 * CHUNK, p, "st_size after punching a hole");
	drop_cache(fd, p);
	expect_range(p, fd, 0, (size_t)ho, 14);
	expect_range(p, fd, ho, (size_t)hl, ZEROS);
	expect_range(p, fd, ho + hl, (size_t)(5 * CHUNK - ho - hl), 14);
	/* Punching past EOF changes nothing. */
	OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 5 * CHUNK - 10, CHUNK), p);
	EQ(fsize(p), 5 * CHUNK, p, "st_size after punching past EOF");
	expect_range(p, fd, 5 * CHUNK - 10, 10, ZEROS);
	expect_range(p, fd, ho + hl, (size_t)(5 * CHUNK - 10 - ho - hl), 14);
	/* PUNCH_HOLE must come with KEEP_SIZE. */
	ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10), EOPNOTSUPP, p);
	OK(close(fd), p);

	/* Punch inside a small (inline) file. */
	pj(p, d, "small");
	make_file(p, 3000, 15);
	fd = (int)OK(open(p, O_RDWR), p);
	OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 200), p);
	EQ(fsize(p), 3000, p, "st_size");
	drop_cache(fd, p);
	expect_range(p, fd, 0, 100, 15);
	expect_range(p, fd, 100, 200, ZEROS);
	expect_range(p, fd, 300, 2700, 15);
	OK(close(fd), p);
}
END_TEST

/* ---- directories ------------------------------------------------------ */

START_TEST(t_mkdir)
{
	CASE_DIR(d);
	char a[PATH_MAX], f[PATH_MAX], q[PATH_MAX];
	pj(a, d, "a");
	OK(mkdir(a, 0777), a);
	struct stat st = st_of(a);
	ck_assert_msg(S_ISDIR(st.st_mode), "%s: not a directory", a);
	EQ(st.st_mode & 07777, 0755, a, "permission bits after mkdir 0777 with umask 022");
	EQ(st.st_nlink, 2, a, "st_nlink of a new directory");
	EQ(count_entries(a, NULL), 0, a, "entries of a new directory");
	EQ(st_of(pj(q, a, ".")).st_ino, st.st_ino, q, "st_ino of '.'");
	EQ(st_of(pj(q, a, "..")).st_ino, st_of(d).st_ino, q, "st_ino of '..'");
	ERR(mkdir(a, 0755), EEXIST, a);
	make_file(pj(f, d, "file"), 10, 1);
	ERR(mkdir(f, 0755), EEXIST, f);
	ERR(mkdir(pj(q, d, "no/x"), 0755), ENOENT, q);
	ERR(mkdir(pj(q, f, "x"), 0755), ENOTDIR, q);
	OK(mkdir(pj(q, a, "b"), 0700), q);
	EQ(st_of(q).st_mode & 07777, 0700, q, "permission bits");
}
END_TEST

START_TEST(t_rmdir)
{
	CASE_DIR(d);
	char a[PATH_MAX], q[PATH_MAX];
	pj(a, d, "a");
	OK(mkdir(a, 0755), a);
	make_file(pj(q, a, "f"), 1, 1);
	ERR(rmdir(a), ENOTEMPTY, a);
	OK(unlink(q), q);
	OK(mkdir(pj(q, a, "sub"), 0755), q);
	ERR(rmdir(a), ENOTEMPTY, a);
	OK(rmdir(q), q);
	EQ(st_of(a).st_nlink, 2, a, "st_nlink after removing the subdirectory");
	ERR(rmdir(pj(q, a, ".")), EINVAL, q);
	make_file(pj(q, d, "file"), 1, 1);
	ERR(rmdir(q), ENOTDIR, q);
	ERR(rmdir(pj(q, d, "missing")), ENOENT, q);
	nlink_t before = st_of(d).st_nlink;
	OK(rmdir(a), a);
	ERR(access(a, F_OK), ENOENT, a);
	EQ(st_of(d).st_nlink, before - 1, d, "parent st_nlink after rmdir");
	EQ(count_entries(d, "file"), 1, d, "entries after rmdir");
}
END_TEST

START_TEST(t_unlink)
{
	CASE_DIR(d);
	char f[PATH_MAX], q[PATH_MAX], l[PATH_MAX];
	make_file(pj(f, d, "f"), 100, 1);
	OK(symlink("f", pj(l, d, "l")), l);
	OK(unlink(l), l);
	ERR(lstat(l, &(struct stat){0}), ENOENT, l);
	EQ(fsize(f), 100, f, "symlink target survives unlink of the link");
	OK(unlink(f), f);
	ERR(access(f, F_OK), ENOENT, f);
	ERR(unlink(f), ENOENT, f);
	OK(mkdir(pj(q, d, "dir"), 0755), q);
	ERR(unlink(q), EISDIR, q);
	make_file(f, 1, 1);
	ERR(unlink(pj(q, f, "x")), ENOTDIR, q);
	/* A chunked file goes away with its data. */
	make_file(pj(q, d, "big"), 3 * CHUNK, 2);
	OK(unlink(q), q);
	EQ(count_entries(d, "f"), 2, d, "entries after unlinks");
}
END_TEST

START_TEST(t_dir_nlink)
{
	CASE_DIR(d);
	char a[PATH_MAX], b[PATH_MAX], q[PATH_MAX], r[PATH_MAX];
	pj(a, d, "a");
	pj(b, d, "b");
	OK(mkdir(a, 0755), a);
	OK(mkdir(b, 0755), b);
	EQ(st_of(d).st_nlink, 4, d, "st_nlink with 2 subdirectories");
	for (int i = 0; i < 3; i++) {
		pjn(q, a, "s", i);
		OK(mkdir(q, 0755), q);
	}
	make_file(pj(q, a, "file1"), 1, 1);
	make_file(pj(q, a, "file2"), 1, 1);
	EQ(st_of(a).st_nlink, 5, a, "st_nlink with 3 subdirectories and 2 files");
	OK(rmdir(pj(q, a, "s00000")), q);
	EQ(st_of(a).st_nlink, 4, a, "st_nlink after rmdir");
	OK(rename(pj(q, a, "s00001"), pj(r, b, "s1")), q);
	EQ(st_of(a).st_nlink, 3, a, "st_nlink of the old parent after moving a subdirectory");
	EQ(st_of(b).st_nlink, 3, b, "st_nlink of the new parent after moving a subdirectory");
	OK(rename(pj(q, a, "s00002"), pj(r, a, "s2b")), q);
	EQ(st_of(a).st_nlink, 3, a, "st_nlink after renaming within the directory");
}
END_TEST

START_TEST(t_unlink_open)
{
	CASE_DIR(d);
	char sub[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
	pj(sub, d, "sub");
	OK(mkdir(sub, 0755), sub);
	pj(p, sub, "f");
	make_file(p, 100000, 16);
	int fd = (int)OK(open(p, O_RDWR), p);
	OK(unlink(p), p);
	ERR(stat(p, &(struct stat){0}), ENOENT, p);
	struct stat st;
	OK(fstat(fd, &st), p);
	EQ(st.st_nlink, 0, p, "st_nlink of an unlinked open file");
	EQ(st.st_size, 100000, p, "st_size of an unlinked open file");
	EQ(count_entries(sub, NULL), 0, sub, "entries after unlink");
	drop_cache(fd, p);
	expect_range(p, fd, 0, 100000, 16);
	uint8_t buf[5000];
	fill(buf, sizeof(buf), 200000, 16);
	write_all(fd, buf, sizeof(buf), 200000, p);
	drop_cache(fd, p);
	OK(fstat(fd, &st), p);
	EQ(st.st_size, 205000, p, "st_size after writing to an unlinked file");
	expect_range(p, fd, 0, 100000, 16);
	expect_range(p, fd, 100000, 100000, ZEROS);
	expect_range(p, fd, 200000, 5000, 16);
	OK(ftruncate(fd, 50), p);
	OK(fstat(fd, &st), p);
	EQ(st.st_size, 50, p, "st_size after ftruncate of an unlinked file");
	/* Its directory is empty and can go while the file is open. */
	OK(rmdir(sub), sub);
	expect_range(p, fd, 0, 50, 16);
	OK(close(fd), p);

	/* With a second link, unlinking one name leaves nlink 1. */
	make_file(pj(p, d, "g"), 10, 17);
	OK(link(p, pj(q, d, "g2")), q);
	fd = (int)OK(open(p, O_RDONLY), p);
	OK(unlink(p), p);
	OK(fstat(fd, &st), p);
	EQ(st.st_nlink, 1, p, "st_nlink after unlinking one of two names");
	OK(close(fd), p);
	expect_file(q, 10, 17);
}
END_TEST

/* ---- rename ----------------------------------------------------------- */

START_TEST(t_rename_plain)
{
	CASE_DIR(d);
	char a[PATH_MAX], b[PATH_MAX], o[PATH_MAX], c[PATH_MAX];
	make_file(pj(a, d, "a"), 3 * CHUNK + 5, 18);
	ino_t ino = st_of(a).st_ino;
	OK(rename(a, pj(b, d, "b")), a);
	ERR(access(a, F_OK), ENOENT, a);
	EQ(st_of(b).st_ino, ino, b, "st_ino after rename");
	expect_file(b, 3 * CHUNK + 5, 18);
	OK(mkdir(pj(o, d, "other"), 0755), o);
	OK(rename(b, pj(c, o, "c")), b);
	ERR(access(b, F_OK), ENOENT, b);
	expect_file(c, 3 * CHUNK + 5, 18);
	EQ(count_entries(d, "other"), 1, d, "entries after moving the file out");
	EQ(count_entries(o, "c"), 1, o, "entries after moving the file in");
}
END_TEST

START_TEST(t_rename_replace)
{
	CASE_DIR(d);
	char a[PATH_MAX], b[PATH_MAX];
	make_file(pj(a, d, "a"), 5000, 19);
	make_file(pj(b, d, "b"), 2 * CHUNK, 20);
	ino_t ia = st_of(a).st_ino;
	int fdb = (int)OK(open(b, O_RDONLY), b);
	OK(rename(a, b), a);
	ERR(access(a, F_OK), ENOENT, a);
	EQ(st_of(b).st_ino, ia, b, "st_ino after rename over a file");
	expect_file(b, 5000, 19);
	struct stat st;
	OK(fstat(fdb, &st), b);
	EQ(st.st_nlink, 0, b, "st_nlink of the replaced file (still open)");
	expect_range(b, fdb, 0, 2 * CHUNK, 20);
	OK(close(fdb), b);
	EQ(count_entries(d, "b"), 1, d, "entries after rename over a file");
}
END_TEST

START_TEST(t_rename_noreplace)
{
	CASE_DIR(d);
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
	write_str(pj(a, d, "a"), "A");
	write_str(pj(b, d, "b"), "B");
	ERR(renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_NOREPLACE), EEXIST, a);
	expect_str(a, "A");
	expect_str(b, "B");
	OK(mkdir(pj(c, d, "dir"), 0755), c);
	ERR(renameat2(AT_FDCWD, a, AT_FDCWD, c, RENAME_NOREPLACE), EEXIST, a);
	OK(renameat2(AT_FDCWD, a, AT_FDCWD, pj(c, d, "c"), RENAME_NOREPLACE), a);
	ERR(access(a, F_OK), ENOENT, a);
	expect_str(c, "A");
}
END_TEST

START_TEST(t_rename_exchange)
{
	CASE_DIR(d);
	char a[PATH_MAX], b[PATH_MAX], p1[PATH_MAX], p2[PATH_MAX], x[PATH_MAX], y[PATH_MAX],
	     q[PATH_MAX];
	/* Two files. */
	write_str(pj(a, d, "a"), "A");
	make_file(pj(b, d, "b"), 2 * CHUNK, 21);
	ino_t ia = st_of(a).st_ino, ib = st_of(b).st_ino;
	OK(renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE), a);
	EQ(st_of(a).st_ino, ib, a, "st_ino after RENAME_EXCHANGE");
	EQ(st_of(b).st_ino, ia, b, "st_ino after RENAME_EXCHANGE");
	expect_file(a, 2 * CHUNK, 21);
	expect_str(b, "A");
	ERR(renameat2(AT_FDCWD, a, AT_FDCWD, pj(q, d, "missing"), RENAME_EXCHANGE), ENOENT, q);

	/* Two directories in different parents: contents and '..' follow. */
	OK(mkdir(pj(p1, d, "p1"), 0755), p1);
	OK(mkdir(pj(p2, d, "p2"), 0755), p2);
	OK(mkdir(pj(x, p1, "x"), 0755), x);
	OK(mkdir(pj(y, p2, "y"), 0755), y);
	write_str(pj(q, x, "in_x"), "x");
	write_str(pj(q, y, "in_y"), "y");
	OK(renameat2(AT_FDCWD, x, AT_FDCWD, y, RENAME_EXCHANGE), x);
	expect_str(pj(q, x, "in_y"), "y");
	expect_str(pj(q, y, "in_x"), "x");
	EQ(st_of(pj(q, x, "..")).st_ino, st_of(p1).st_ino, q, "st_ino of '..' after exchange");
	EQ(st_of(pj(q, y, "..")).st_ino, st_of(p2).st_ino, q, "st_ino of '..' after exchange");
	EQ(st_of(p1).st_nlink, 3, p1, "st_nlink after exchanging two directories");
	EQ(st_of(p2).st_nlink, 3, p2, "st_nlink after exchanging two directories");

	/* A directory with a file across parents: the parents' nlink moves. */
	write_str(pj(q, p2, "file"), "F");
	OK(renameat2(AT_FDCWD, x, AT_FDCWD, q, RENAME_EXCHANGE), x);
	ck_assert_msg(S_ISREG(st_of(x).st_mode), "%s: expected a file after exchange", x);
	expect_str(x, "F");
	ck_assert_msg(S_ISDIR(st_of(q).st_mode), "%s: expected a directory after exchange", q);
	char r[PATH_MAX];
	expect_str(pj(r, q, "in_y"), "y");
	EQ(st_of(pj(r, q, "..")).st_ino, st_of(p2).st_ino, r, "st_ino of '..' after exchange");
	EQ(st_of(p1).st_nlink, 2, p1, "st_nlink of the parent that got the file");
	EQ(st_of(p2).st_nlink, 4, p2, "st_nlink of the parent that got the directory");
}
END_TEST

START_TEST(t_rename_errors)
{
	CASE_DIR(d);
	char a[PATH_MAX], b[PATH_MAX], f[PATH_MAX], g[PATH_MAX], q[PATH_MAX], r[PATH_MAX];
	OK(mkdir(pj(a, d, "a"), 0755), a);
	OK(mkdir(pj(b, d, "b"), 0755), b);
	OK(mkdir(pj(q, a, "sub"), 0755), q);
	OK(mkdir(pj(q, a, "sub/deeper"), 0755), q);
	write_str(pj(q, b, "inside"), "i");
	write_str(pj(f, d, "f"), "F");
	write_str(pj(g, d, "g"), "G");
	ERR(rename(a, b), ENOTEMPTY, a);                 /* dir over non-empty dir */
	ERR(rename(f, a), EISDIR, f);                    /* file over dir */
	ERR(rename(a, f), ENOTDIR, a);                   /* dir over file */
	ERR(rename(a, pj(q, a, "sub/x")), EINVAL, q);    /* into its own subtree */
	ERR(rename(a, pj(q, a, "sub/deeper/x")), EINVAL, q);
	ERR(rename(pj(q, d, "missing"), pj(r, d, "x")), ENOENT, q);
	ERR(rename(f, pj(q, d, "nodir/x")), ENOENT, q);
	ERR(rename(f, pj(q, g, "x")), ENOTDIR, q);
	/* Nothing moved. */
	expect_str(f, "F");
	expect_str(pj(q, b, "inside"), "i");
	ck_assert_msg(S_ISDIR(st_of(pj(q, a, "sub/deeper")).st_mode), "%s: gone", q);
	/* Renaming to itself is a no-op, for files, dirs and two links of one file. */
	OK(rename(f, f), f);
	expect_str(f, "F");
	OK(rename(a, a), a);
	ck_assert_msg(S_ISDIR(st_of(a).st_mode), "%s: gone after rename to itself", a);
	OK(link(f, pj(q, d, "f2")), q);
	OK(rename(f, q), f);
	expect_str(f, "F");
	expect_str(q, "F");
	EQ(st_of(f).st_nlink, 2, f, "st_nlink after rename between links of one file");
	/* A directory over an empty directory replaces it. */
	nlink_t before = st_of(d).st_nlink;
	OK(mkdir(pj(q, d, "empty"), 0755), q);
	OK(rename(a, q), a);
	ERR(access(a, F_OK), ENOENT, a);
	ck_assert_msg(S_ISDIR(st_of(pj(r, q, "sub/deeper")).st_mode), "%s: missing", r);
	EQ(st_of(d).st_nlink, before, d, "st_nlink after a directory replaced another");
	/* A file over a file in another directory (and out of it). */
	OK(rename(g, pj(q, b, "inside")), g);
	expect_str(q, "G");
}
END_TEST

START_TEST(t_rename_subtree)
{
	CASE_DIR(d);
	char a[PATH_MAX], x[PATH_MAX], n[PATH_MAX], q[PATH_MAX], r[PATH_MAX];
	OK(mkdir(pj(a, d, "a"), 0755), a);
	OK(mkdir(pj(q, a, "b"), 0755), q);
	OK(mkdir(pj(q, a, "b/c"), 0755), q);
	make_file(pj(q, a, "b/c/file"), 2 * CHUNK + 1, 22);
	OK(symlink("c/file", pj(q, a, "b/link")), q);
	OK(mkdir(pj(x, d, "x"), 0755), x);
	ino_t ia = st_of(a).st_ino;
	nlink_t dn = st_of(d).st_nlink, xn = st_of(x).st_nlink;
	OK(rename(a, pj(n, x, "a2")), a);
	ERR(access(a, F_OK), ENOENT, a);
	EQ(st_of(n).st_ino, ia, n, "st_ino of the moved directory");
	expect_file(pj(q, n, "b/c/file"), 2 * CHUNK + 1, 22);
	expect_file(pj(q, n, "b/link"), 2 * CHUNK + 1, 22);
	EQ(st_of(pj(q, n, "..")).st_ino, st_of(x).st_ino, q, "st_ino of '..' of the moved dir");
	EQ(st_of(pj(q, n, "b/..")).st_ino, ia, q, "st_ino of '..' below the moved dir");
	EQ(st_of(d).st_nlink, dn - 1, d, "st_nlink of the old parent");
	EQ(st_of(x).st_nlink, xn + 1, x, "st_nlink of the new parent");
	EQ(count_entries(x, "a2"), 1, x, "entries of the new parent");
	/* Move a deeper part up to the top: '..' resolves by the new place. */
	OK(rename(pj(q, n, "b"), pj(r, d, "b2")), q);
	expect_file(pj(q, r, "c/file"), 2 * CHUNK + 1, 22);
	EQ(st_of(pj(q, r, "..")).st_ino, st_of(d).st_ino, q, "st_ino of '..' after moving up");
	EQ(st_of(pj(q, r, "c/../..")).st_ino, st_of(d).st_ino, q, "st_ino of 'c/../..'");
	EQ(count_entries(n, NULL), 0, n, "entries of the directory that lost its child");
	EQ(st_of(n).st_nlink, 2, n, "st_nlink of the directory that lost its child");
	/* And the path through an open directory fd keeps working. */
	int dfd = (int)OK(open(r, O_RDONLY | O_DIRECTORY), r);
	OK(rename(r, pj(q, x, "b3")), r);
	int fd = (int)OK(openat(dfd, "c/file", O_RDONLY), "b3/c/file via dirfd");
	expect_range(q, fd, 0, 2 * CHUNK + 1, 22);
	OK(close(fd), q);
	OK(close(dfd), r);
}
END_TEST

/* ---- links ------------------------------------------------------------ */

START_TEST(t_hardlink)
{
	CASE_DIR(d);
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], q[PATH_MAX], s[PATH_MAX];
	make_file(pj(a, d, "a"), 5000, 23);
	OK(mkdir(pj(q, d, "sub"), 0755), q);
	OK(link(a, pj(b, d, "b")), b);
	OK(link(a, pj(c, q, "c")), c);
	EQ(st_of(a).st_nlink, 3, a, "st_nlink after two links");
	EQ(st_of(b).st_nlink, 3, b, "st_nlink after two links");
	EQ(st_of(b).st_ino, st_of(a).st_ino, b, "st_ino of a hard link");
	/* Content is shared. */
	int fd = (int)OK(open(b, O_WRONLY), b);
	uint8_t buf[3 * CHUNK];
	fill(buf, sizeof(buf), 0, 24);
	write_all(fd, buf, sizeof(buf), 0, b);
	OK(close(fd), b);
	expect_file(a, 3 * CHUNK, 24);
	expect_file(c, 3 * CHUNK, 24);
	OK(unlink(a), a);
	EQ(st_of(b).st_nlink, 2, b, "st_nlink after unlinking one name");
	OK(unlink(c), c);
	EQ(st_of(b).st_nlink, 1, b, "st_nlink after unlinking two names");
	expect_file(b, 3 * CHUNK, 24);
	/* Errors. */
	ERR(link(q, pj(s, d, "dirlink")), EPERM, q);
	ERR(link(b, b), EEXIST, b);
	ERR(link(pj(s, d, "missing"), pj(q, d, "x")), ENOENT, s);
	ERR(link(b, pj(q, d, "nodir/x")), ENOENT, q);
	/* link() on a symlink links the symlink itself. */
	OK(symlink("b", pj(s, d, "sym")), s);
	OK(link(s, pj(q, d, "sym2")), q);
	struct stat st = st_of(q);
	ck_assert_msg(S_ISLNK(st.st_mode), "%s: expected a symlink", q);
	EQ(st.st_nlink, 2, q, "st_nlink of a hard-linked symlink");
	EQ(st_of(b).st_nlink, 1, b, "st_nlink of the symlink target");
}
END_TEST

START_TEST(t_symlink)
{
	CASE_DIR(d);
	char t[PATH_MAX], l[PATH_MAX], q[PATH_MAX], buf[PATH_MAX];
	make_file(pj(t, d, "target"), 1234, 25);
	/* Relative. */
	OK(symlink("target", pj(l, d, "rel")), l);
	EQ(readlink(l, buf, sizeof(buf)), 6, l, "readlink length");
	ck_assert_msg(memcmp(buf, "target", 6) == 0, "%s: readlink content", l);
	struct stat ls = st_of(l), ss;
	ck_assert_msg(S_ISLNK(ls.st_mode), "%s: lstat: not a symlink", l);
	EQ(ls.st_size, 6, l, "lstat st_size of a symlink");
	OK(stat(l, &ss), l);
	ck_assert_msg(S_ISREG(ss.st_mode), "%s: stat: does not follow to the file", l);
	EQ(ss.st_size, 1234, l, "stat st_size through the symlink");
	EQ(ss.st_ino, st_of(t).st_ino, l, "stat st_ino through the symlink");
	expect_file(l, 1234, 25);
	/* Absolute. */
	OK(symlink(t, pj(l, d, "abs")), l);
	EQ(readlink(l, buf, sizeof(buf)), (long long)strlen(t), l, "readlink length");
	ck_assert_msg(memcmp(buf, t, strlen(t)) == 0, "%s: readlink content", l);
	expect_file(l, 1234, 25);
	const char *elsewhere = "/nonexistent/absolute/target";
	OK(symlink(elsewhere, pj(l, d, "abs2")), l);
	EQ(readlink(l, buf, sizeof(buf)), (long long)strlen(elsewhere), l, "readlink length");
	ck_assert_msg(memcmp(buf, elsewhere, strlen(elsewhere)) == 0, "%s: readlink content", l);
	ERR(stat(l, &ss), ENOENT, l);
	/* A 4000-byte target. */
	char *lt = malloc(4001);
	ck_assert(lt);
	for (int i = 0; i < 4000; i++)
		lt[i] = i % 50 == 49 ? '/' : (char)('a' + i % 26);
	lt[4000] = 0;
	OK(symlink(lt, pj(l, d, "long")), l);
	EQ(st_of(l).st_size, 4000, l, "lstat st_size of a long symlink");
	EQ(readlink(l, buf, sizeof(buf)), 4000, l, "readlink length of a long symlink");
	ck_assert_msg(memcmp(buf, lt, 4000) == 0, "%s: readlink content of a long symlink", l);
	free(lt);
	/* Errors. */
	ERR(symlink("x", t), EEXIST, t);
	ERR(readlink(t, buf, sizeof(buf)), EINVAL, t);
	ERR(readlink(pj(q, d, "missing"), buf, sizeof(buf)), ENOENT, q);
	/* A symlink to a directory: paths go through it, lstat does not. */
	OK(mkdir(pj(q, d, "dir"), 0755), q);
	write_str(pj(q, d, "dir/in"), "in");
	OK(symlink("dir", pj(l, d, "dirlink")), l);
	expect_str(pj(q, d, "dirlink/in"), "in");
	ck_assert_msg(S_ISLNK(st_of(l).st_mode), "%s: lstat: not a symlink", l);
}
END_TEST

/* ---- special files ---------------------------------------------------- */

START_TEST(t_mknod)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	struct stat st;
	OK(mknod(pj(p, d, "fifo"), S_IFIFO | 0644, 0), p);
	st = st_of(p);
	ck_assert_msg(S_ISFIFO(st.st_mode), "%s: not a FIFO (mode %o)", p, st.st_mode);
	EQ(st.st_mode & 07777, 0644, p, "permission bits");
	int fd = (int)OK(open(p, O_RDWR | O_NONBLOCK), p);
	EQ(write(fd, "ping", 4), 4, p, "write to FIFO");
	char buf[8];
	EQ(read(fd, buf, sizeof(buf)), 4, p, "read from FIFO");
	OK(close(fd), p);
	ERR(mknod(p, S_IFIFO | 0644, 0), EEXIST, p);

	OK(mknod(pj(p, d, "sock"), S_IFSOCK | 0600, 0), p);
	st = st_of(p);
	ck_assert_msg(S_ISSOCK(st.st_mode), "%s: not a socket (mode %o)", p, st.st_mode);
	EQ(st.st_mode & 07777, 0600, p, "permission bits");

	OK(mknod(pj(p, d, "chr"), S_IFCHR | 0600, makedev(1, 3)), p);
	st = st_of(p);
	ck_assert_msg(S_ISCHR(st.st_mode), "%s: not a char device (mode %o)", p, st.st_mode);
	EQ(major(st.st_rdev), 1, p, "major(st_rdev)");
	EQ(minor(st.st_rdev), 3, p, "minor(st_rdev)");

	OK(mknod(pj(p, d, "blk"), S_IFBLK | 0600, makedev(259, 70000)), p);
	st = st_of(p);
	ck_assert_msg(S_ISBLK(st.st_mode), "%s: not a block device (mode %o)", p, st.st_mode);
	EQ(major(st.st_rdev), 259, p, "major(st_rdev)");
	EQ(minor(st.st_rdev), 70000, p, "minor(st_rdev)");

	OK(mknod(pj(p, d, "reg"), S_IFREG | 0640, 0), p);
	st = st_of(p);
	ck_assert_msg(S_ISREG(st.st_mode), "%s: not a regular file", p);
	EQ(st.st_size, 0, p, "st_size");
	EQ(count_entries(d, "blk"), 5, d, "entries");
}
END_TEST

/* ---- attributes ------------------------------------------------------- */

START_TEST(t_chmod_chown)
{
	CASE_DIR(d);
	char f[PATH_MAX], l[PATH_MAX], q[PATH_MAX];
	make_file(pj(f, d, "f"), 10, 26);
	struct stat a = st_of(f);
	sleep_ms(30);
	OK(chmod(f, 0600), f);
	struct stat b = st_of(f);
	EQ(b.st_mode & 07777, 0600, f, "permission bits after chmod");
	ck_assert_msg(S_ISREG(b.st_mode), "%s: chmod changed the file type", f);
	ck_assert_msg(ts_cmp(b.st_ctim, a.st_ctim) > 0,
		      "%s: ctime did not advance on chmod (%lld.%09ld -> %lld.%09ld)", f,
		      (long long)a.st_ctim.tv_sec, a.st_ctim.tv_nsec,
		      (long long)b.st_ctim.tv_sec, b.st_ctim.tv_nsec);
	ck_assert_msg(ts_cmp(b.st_mtim, a.st_mtim) == 0, "%s: mtime changed on chmod", f);
	OK(chmod(f, 04755), f);
	EQ(st_of(f).st_mode & 07777, 04755, f, "permission bits with setuid");
	int fd = (int)OK(open(f, O_RDONLY), f);
	OK(fchmod(fd, 0444), f);
	EQ(st_of(f).st_mode & 07777, 0444, f, "permission bits after fchmod");
	OK(mkdir(pj(q, d, "dir"), 0755), q);
	OK(chmod(q, 01777), q);
	struct stat ds = st_of(q);
	EQ(ds.st_mode & 07777, 01777, q, "permission bits with sticky bit");
	ck_assert_msg(S_ISDIR(ds.st_mode), "%s: chmod changed the file type", q);

	OK(chown(f, 1234, 5678), f);
	b = st_of(f);
	EQ(b.st_uid, 1234, f, "st_uid after chown");
	EQ(b.st_gid, 5678, f, "st_gid after chown");
	OK(chown(f, (uid_t)-1, 42), f);
	b = st_of(f);
	EQ(b.st_uid, 1234, f, "st_uid after chown(-1, 42)");
	EQ(b.st_gid, 42, f, "st_gid after chown(-1, 42)");
	OK(fchown(fd, 7, 8), f);
	b = st_of(f);
	EQ(b.st_uid, 7, f, "st_uid after fchown");
	EQ(b.st_gid, 8, f, "st_gid after fchown");
	OK(close(fd), f);
	/* lchown changes the link, not its target. */
	OK(symlink("f", pj(l, d, "l")), l);
	OK(lchown(l, 99, 98), l);
	EQ(st_of(l).st_uid, 99, l, "st_uid of the symlink after lchown");
	EQ(st_of(f).st_uid, 7, f, "st_uid of the target after lchown of the link");
	OK(chown(l, 55, 56), l);
	EQ(st_of(f).st_uid, 55, f, "st_uid of the target after chown through the link");
	EQ(st_of(l).st_uid, 99, l, "st_uid of the symlink after chown through it");
	ERR(chmod(pj(q, d, "missing"), 0644), ENOENT, q);
}
END_TEST

START_TEST(t_utimens)
{
	CASE_DIR(d);
	char f[PATH_MAX], l[PATH_MAX], q[PATH_MAX];
	make_file(pj(f, d, "f"), 10, 27);
	struct timespec ts[2] = {{1000000000, 123456789}, {1200000000, 987654321}};
	OK(utimensat(AT_FDCWD, f, ts, 0), f);
	struct stat st = st_of(f);
	TS_EQ(st.st_atim, 1000000000, 123456789, f, "atime");
	TS_EQ(st.st_mtim, 1200000000, 987654321, f, "mtime");
	/* UTIME_OMIT leaves one alone, UTIME_NOW takes the clock. */
	struct timespec before, after;
	clock_gettime(CLOCK_REALTIME, &before);
	struct timespec t2[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
	OK(utimensat(AT_FDCWD, f, t2, 0), f);
	clock_gettime(CLOCK_REALTIME, &after);
	st = st_of(f);
	TS_EQ(st.st_atim, 1000000000, 123456789, f, "atime after UTIME_OMIT");
	ck_assert_msg(st.st_mtim.tv_sec >= before.tv_sec - 1 && st.st_mtim.tv_sec <= after.tv_sec + 1,
		      "%s: mtime after UTIME_NOW: expected about %lld, got %lld", f,
		      (long long)before.tv_sec, (long long)st.st_mtim.tv_sec);
	struct timespec t3[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
	struct timespec mt = st.st_mtim;
	OK(utimensat(AT_FDCWD, f, t3, 0), f);
	st = st_of(f);
	ck_assert_msg(ts_cmp(st.st_mtim, mt) == 0, "%s: mtime changed under UTIME_OMIT", f);
	ck_assert_msg(st.st_atim.tv_sec >= before.tv_sec - 1, "%s: atime after UTIME_NOW: %lld",
		      f, (long long)st.st_atim.tv_sec);
	/* Times before 1970 and futimens. */
	struct timespec t4[2] = {{-1000, 5}, {-86400 * 365LL, 999999999}};
	int fd = (int)OK(open(f, O_RDONLY), f);
	OK(futimens(fd, t4), f);
	OK(close(fd), f);
	st = st_of(f);
	TS_EQ(st.st_atim, -1000, 5, f, "atime before 1970");
	TS_EQ(st.st_mtim, -86400 * 365LL, 999999999, f, "mtime before 1970");
	/* On a symlink itself and on a directory. */
	OK(symlink("f", pj(l, d, "l")), l);
	struct timespec t5[2] = {{1300000000, 1}, {1400000000, 2}};
	OK(utimensat(AT_FDCWD, l, t5, AT_SYMLINK_NOFOLLOW), l);
	st = st_of(l);
	TS_EQ(st.st_mtim, 1400000000, 2, l, "mtime of the symlink");
	TS_EQ(st_of(f).st_mtim, -86400 * 365LL, 999999999, f, "mtime of the target");
	OK(mkdir(pj(q, d, "dir"), 0755), q);
	OK(utimensat(AT_FDCWD, q, t5, 0), q);
	st = st_of(q);
	TS_EQ(st.st_atim, 1300000000, 1, q, "atime of a directory");
	TS_EQ(st.st_mtim, 1400000000, 2, q, "mtime of a directory");
	ERR(utimensat(AT_FDCWD, pj(q, d, "missing"), ts, 0), ENOENT, q);
}
END_TEST

START_TEST(t_times_update)
{
	CASE_DIR(d);
	char f[PATH_MAX], q[PATH_MAX];
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	make_file(pj(f, d, "f"), 10, 28);
	OK(utimensat(AT_FDCWD, f, old, 0), f);
	struct stat a = st_of(f);
	sleep_ms(30);
	int fd = (int)OK(open(f, O_WRONLY), f);
	EQ(pwrite(fd, "x", 1, 5), 1, f, "pwrite length");
	OK(close(fd), f);
	struct stat b = st_of(f);
	ck_assert_msg(b.st_mtim.tv_sec > 1000000000, "%s: mtime not updated by write", f);
	ck_assert_msg(ts_cmp(b.st_ctim, a.st_ctim) > 0, "%s: ctime not updated by write", f);
	OK(utimensat(AT_FDCWD, f, old, 0), f);
	OK(truncate(f, 3), f);
	ck_assert_msg(st_of(f).st_mtim.tv_sec > 1000000000, "%s: mtime not updated by truncate", f);
	/* A directory's mtime moves when entries come and go. */
	OK(utimensat(AT_FDCWD, d, old, 0), d);
	make_file(pj(q, d, "new"), 0, 0);
	ck_assert_msg(st_of(d).st_mtim.tv_sec > 1000000000, "%s: mtime not updated by create", d);
	OK(utimensat(AT_FDCWD, d, old, 0), d);
	OK(unlink(q), q);
	ck_assert_msg(st_of(d).st_mtim.tv_sec > 1000000000, "%s: mtime not updated by unlink", d);
	OK(utimensat(AT_FDCWD, d, old, 0), d);
	OK(rename(f, q), f);
	ck_assert_msg(st_of(d).st_mtim.tv_sec > 1000000000, "%s: mtime not updated by rename", d);
	/* Reading does not change mtime. */
	struct stat c = st_of(q);
	fd = (int)OK(open(q, O_RDONLY), q);
	char buf[4];
	OK(read(fd, buf, sizeof(buf)), q);
	OK(close(fd), q);
	ck_assert_msg(ts_cmp(st_of(q).st_mtim, c.st_mtim) == 0, "%s: mtime changed by a read", q);
}
END_TEST

/* Times stamped by the daemon (a create) and by the kernel (a buffered
 * write, through the writeback cache) keep the order of the calls
 * (xfstests generic/423): a file changed after another was made has times
 * no earlier than its.  Made fails when the daemon reads a finer clock than
 * the kernel's, which lags it by up to a tick. */
START_TEST(t_times_order)
{
	CASE_DIR(d);
	char w[PATH_MAX], a[PATH_MAX];
	int fd = (int)OK(open(pj(w, d, "w"), O_CREAT | O_WRONLY, 0644), w);
	for (int i = 0; i < 300; i++) {
		/* made, then written */
		make_file(pjn(a, d, "a", i), 0, 0);
		struct stat made = st_of(a);
		EQ(pwrite(fd, "x", 1, i), 1, w, "pwrite length");
		struct stat wrote = st_of(w);
		ck_assert_msg(ts_cmp(wrote.st_mtim, made.st_mtim) >= 0,
			      "%s: mtime %lld.%09ld of a write earlier than %lld.%09ld of %s made "
			      "before it (round %d)", w, (long long)wrote.st_mtim.tv_sec,
			      wrote.st_mtim.tv_nsec, (long long)made.st_mtim.tv_sec,
			      made.st_mtim.tv_nsec, a, i);
		ck_assert_msg(ts_cmp(wrote.st_ctim, made.st_ctim) >= 0,
			      "%s: ctime %lld.%09ld of a write earlier than %lld.%09ld of %s made "
			      "before it (round %d)", w, (long long)wrote.st_ctim.tv_sec,
			      wrote.st_ctim.tv_nsec, (long long)made.st_ctim.tv_sec,
			      made.st_ctim.tv_nsec, a, i);
		OK(unlink(a), a);
		/* written, then made */
		EQ(pwrite(fd, "y", 1, i), 1, w, "pwrite length");
		wrote = st_of(w);
		make_file(a, 0, 0);
		made = st_of(a);
		ck_assert_msg(ts_cmp(made.st_mtim, wrote.st_mtim) >= 0 &&
			      ts_cmp(made.st_ctim, wrote.st_ctim) >= 0,
			      "%s: times %lld.%09ld/%lld.%09ld earlier than %lld.%09ld/%lld.%09ld of "
			      "a write to %s before it (round %d)", a, (long long)made.st_mtim.tv_sec,
			      made.st_mtim.tv_nsec, (long long)made.st_ctim.tv_sec,
			      made.st_ctim.tv_nsec, (long long)wrote.st_mtim.tv_sec,
			      wrote.st_mtim.tv_nsec, (long long)wrote.st_ctim.tv_sec,
			      wrote.st_ctim.tv_nsec, w, i);
		OK(unlink(a), a);
	}
	OK(close(fd), w);
}
END_TEST

/* ---- extended attributes ---------------------------------------------- */

static bool list_has(const char *list, ssize_t len, const char *name)
{
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1)
		if (strcmp(list + i, name) == 0)
			return true;
	return false;
}

static void xattr_case(const char *p)
{
	char buf[4096];
	const char *names[] = {"user.alpha", "trusted.beta", "security.gamma"};
	const char *vals[] = {"one", "two-two", "three-three-three"};
	/* Never had one: none to get or list (answered from the record). */
	ERR(getxattr(p, "security.capability", buf, sizeof(buf)), ENODATA, p);
	ERR(getxattr(p, "user.alpha", NULL, 0), ENODATA, p);
	EQ(listxattr(p, NULL, 0), 0, p, "listxattr of a file that never had one");
	EQ(listxattr(p, buf, sizeof(buf)), 0, p, "listxattr of a file that never had one");
	for (int i = 0; i < 3; i++)
		OK(setxattr(p, names[i], vals[i], strlen(vals[i]), 0), p);
	for (int i = 0; i < 3; i++) {
		ssize_t n = OK(getxattr(p, names[i], buf, sizeof(buf)), p);
		ck_assert_msg(n == (ssize_t)strlen(vals[i]) && memcmp(buf, vals[i], (size_t)n) == 0,
			      "%s: getxattr %s: expected \"%s\", got %zd bytes", p, names[i],
			      vals[i], n);
		EQ(getxattr(p, names[i], NULL, 0), (long long)strlen(vals[i]), p,
		   "getxattr size query");
	}
	/* Binary and empty values. */
	uint8_t bin[2000];
	fill(bin, sizeof(bin), 0, 29);
	bin[7] = 0;
	OK(setxattr(p, "user.bin", bin, sizeof(bin), 0), p);
	EQ(getxattr(p, "user.bin", buf, sizeof(buf)), (long long)sizeof(bin), p, "getxattr size");
	expect_mem(p, (uint8_t *)buf, bin, sizeof(bin), 0);
	OK(setxattr(p, "user.empty", "", 0, 0), p);
	EQ(getxattr(p, "user.empty", buf, sizeof(buf)), 0, p, "getxattr of an empty value");
	/* List. */
	ssize_t need = OK(listxattr(p, NULL, 0), p);
	ssize_t len = OK(listxattr(p, buf, sizeof(buf)), p);
	EQ(len, need, p, "listxattr length vs size query");
	for (int i = 0; i < 3; i++)
		ck_assert_msg(list_has(buf, len, names[i]), "%s: listxattr lacks %s", p, names[i]);
	ck_assert_msg(list_has(buf, len, "user.bin") && list_has(buf, len, "user.empty"),
		      "%s: listxattr lacks user.bin or user.empty", p);
	ERR(listxattr(p, buf, 3), ERANGE, p);
	/* Flags. */
	ERR(setxattr(p, "user.alpha", "x", 1, XATTR_CREATE), EEXIST, p);
	ERR(setxattr(p, "user.nothere", "x", 1, XATTR_REPLACE), ENODATA, p);
	ERR(getxattr(p, "user.nothere", buf, sizeof(buf)), ENODATA, p);
	OK(setxattr(p, "user.alpha", "replaced", 8, XATTR_REPLACE), p);
	EQ(getxattr(p, "user.alpha", buf, sizeof(buf)), 8, p, "getxattr length after replace");
	ck_assert_msg(memcmp(buf, "replaced", 8) == 0, "%s: user.alpha not replaced", p);
	OK(setxattr(p, "user.fresh", "f", 1, XATTR_CREATE), p);
	ERR(getxattr(p, "user.alpha", buf, 3), ERANGE, p);
	/* Overwrite with a shorter value. */
	OK(setxattr(p, "user.bin", "ab", 2, 0), p);
	EQ(getxattr(p, "user.bin", buf, sizeof(buf)), 2, p, "getxattr after shrinking");
	/* Remove. */
	OK(removexattr(p, "user.alpha"), p);
	ERR(getxattr(p, "user.alpha", buf, sizeof(buf)), ENODATA, p);
	ERR(removexattr(p, "user.alpha"), ENODATA, p);
	len = OK(listxattr(p, buf, sizeof(buf)), p);
	ck_assert_msg(!list_has(buf, len, "user.alpha"), "%s: removed xattr still listed", p);
	OK(removexattr(p, "trusted.beta"), p);
	OK(removexattr(p, "security.gamma"), p);
	ERR(getxattr(p, "security.gamma", buf, sizeof(buf)), ENODATA, p);
}

START_TEST(t_xattr)
{
	CASE_DIR(d);
	char f[PATH_MAX], q[PATH_MAX], l[PATH_MAX];
	make_file(pj(f, d, "f"), 10, 30);
	xattr_case(f);
	OK(mkdir(pj(q, d, "dir"), 0755), q);
	xattr_case(q);
	/* user.* is not allowed on symlinks; fsetxattr works on an fd. */
	OK(symlink("f", pj(l, d, "l")), l);
	ERR(lsetxattr(l, "user.x", "1", 1, 0), EPERM, l);
	int fd = (int)OK(open(f, O_RDONLY), f);
	OK(fsetxattr(fd, "user.viafd", "v", 1, 0), f);
	char buf[8];
	EQ(fgetxattr(fd, "user.viafd", buf, sizeof(buf)), 1, f, "fgetxattr length");
	OK(close(fd), f);
	ERR(getxattr(pj(q, d, "missing"), "user.x", buf, sizeof(buf)), ENOENT, q);
	/* xattrs go with the inode: rename keeps them, unlink drops them. */
	OK(rename(f, pj(q, d, "g")), f);
	EQ(getxattr(q, "user.viafd", buf, sizeof(buf)), 1, q, "getxattr after rename");
}
END_TEST

/* ---- the filesystem as a whole --------------------------------------- */

START_TEST(t_statfs)
{
	CASE_DIR(d);
	struct statvfs sv;
	OK(statvfs(d, &sv), d);
	ck_assert_msg(sv.f_blocks > 0, "%s: statvfs f_blocks is 0", d);
	ck_assert_msg(sv.f_bsize > 0, "%s: statvfs f_bsize is 0", d);
	ck_assert_msg(sv.f_frsize > 0, "%s: statvfs f_frsize is 0", d);
	ck_assert_msg(sv.f_bfree <= sv.f_blocks && sv.f_bavail <= sv.f_blocks,
		      "%s: statvfs free %llu / avail %llu above total %llu", d,
		      (unsigned long long)sv.f_bfree, (unsigned long long)sv.f_bavail,
		      (unsigned long long)sv.f_blocks);
	EQ(sv.f_namemax, 255, d, "statvfs f_namemax");
}
END_TEST

START_TEST(t_fsync)
{
	CASE_DIR(d);
	char f[PATH_MAX];
	make_file(pj(f, d, "f"), 3 * CHUNK, 31);
	int fd = (int)OK(open(f, O_RDWR), f);
	EQ(pwrite(fd, "abc", 3, 10), 3, f, "pwrite length");
	OK(fsync(fd), f);
	EQ(pwrite(fd, "def", 3, 2 * CHUNK + 10), 3, f, "pwrite length");
	OK(fdatasync(fd), f);
	OK(close(fd), f);
	int dfd = (int)OK(open(d, O_RDONLY | O_DIRECTORY), d);
	OK(fsync(dfd), d);
	OK(fdatasync(dfd), d);
	OK(close(dfd), d);
	fd = (int)OK(open(f, O_RDONLY), f);
	OK(fsync(fd), f); /* fsync on a read-only fd */
	OK(close(fd), f);
	sync();
	dfd = (int)OK(open(d, O_RDONLY | O_DIRECTORY), d);
	OK(syncfs(dfd), d);
	OK(close(dfd), d);
}
END_TEST

START_TEST(t_big_file)
{
	CASE_DIR(d);
	char f[PATH_MAX];
	pj(f, d, "big");
	int fd = (int)OK(open(f, O_CREAT | O_RDWR, 0644), f);
	const off_t at = 5 * GIB;
	EQ(pwrite(fd, "tail!", 5, at), 5, f, "pwrite at 5 GiB");
	EQ(pwrite(fd, "edge", 4, 4 * GIB - 2), 4, f, "pwrite across 4 GiB");
	OK(fsync(fd), f);
	struct stat st;
	OK(fstat(fd, &st), f);
	EQ(st.st_size, at + 5, f, "st_size of a 5 GiB file");
	ck_assert_msg((long long)st.st_blocks * 512 < 16LL * MIB,
		      "%s: st_blocks %lld is not small for a sparse 5 GiB file", f,
		      (long long)st.st_blocks);
	drop_cache(fd, f);
	char buf[16];
	read_exact(fd, buf, 5, at, f);
	ck_assert_msg(memcmp(buf, "tail!", 5) == 0, "%s: bytes at 5 GiB differ", f);
	read_exact(fd, buf, 4, 4 * GIB - 2, f);
	ck_assert_msg(memcmp(buf, "edge", 4) == 0, "%s: bytes across 4 GiB differ", f);
	expect_range(f, fd, 0, MIB, ZEROS);
	expect_range(f, fd, 2 * GIB - 100, 200, ZEROS);
	expect_range(f, fd, 4 * GIB - 100, 98, ZEROS);
	expect_range(f, fd, 4 * GIB + 2, 100, ZEROS);
	expect_range(f, fd, at - CHUNK - 10, CHUNK + 10, ZEROS);
	EQ(pread(fd, buf, sizeof(buf), at), 5, f, "pread spanning EOF at 5 GiB");
	EQ(pread(fd, buf, sizeof(buf), at + 5), 0, f, "pread at EOF at 5 GiB");
	/* Shrink it across 4 GiB. */
	OK(ftruncate(fd, 4 * GIB), f);
	OK(fstat(fd, &st), f);
	EQ(st.st_size, 4 * GIB, f, "st_size after truncating to 4 GiB");
	read_exact(fd, buf, 2, 4 * GIB - 2, f);
	ck_assert_msg(memcmp(buf, "ed", 2) == 0, "%s: bytes below 4 GiB after truncate", f);
	OK(close(fd), f);
	OK(unlink(f), f);
}
END_TEST

START_TEST(t_name_max)
{
	CASE_DIR(d);
	char n255[256], n256[257], p[PATH_MAX], q[PATH_MAX];
	memset(n255, 'a', 255);
	n255[255] = 0;
	memset(n256, 'b', 256);
	n256[256] = 0;
	make_file(pj(p, d, n255), 5, 32);
	EQ(fsize(p), 5, p, "st_size of a file with a 255-byte name");
	EQ(count_entries(d, n255), 1, d, "entries");
	OK(unlink(p), p);
	n255[0] = 'd';
	OK(mkdir(pj(p, d, n255), 0755), p);
	OK(rmdir(p), p);
	n255[0] = 's';
	OK(symlink("x", pj(p, d, n255)), p);

	pj(q, d, n256);
	ERR(open(q, O_CREAT | O_WRONLY, 0644), ENAMETOOLONG, "256-byte name (create)");
	ERR(mkdir(q, 0755), ENAMETOOLONG, "256-byte name (mkdir)");
	ERR(stat(q, &(struct stat){0}), ENAMETOOLONG, "256-byte name (lookup)");
	ERR(symlink("x", q), ENAMETOOLONG, "256-byte name (symlink)");
	ERR(rename(p, q), ENAMETOOLONG, "256-byte name (rename)");
	ERR(link(p, q), ENAMETOOLONG, "256-byte name (link)");
	ERR(mknod(q, S_IFIFO | 0644, 0), ENAMETOOLONG, "256-byte name (mknod)");
	EQ(count_entries(d, n255), 1, d, "entries after failed long-name calls");
}
END_TEST

#define BIGDIR_N 20000

START_TEST(t_bigdir)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	int dfd = (int)OK(open(d, O_RDONLY | O_DIRECTORY), d);
	for (int i = 0; i < BIGDIR_N; i++) {
		char name[32];
		snprintf(name, sizeof(name), "entry-%05d", i);
		int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
		ck_assert_msg(fd >= 0, "%s/%s: create: %s", d, name, ename(errno));
		close(fd);
	}
	OK(close(dfd), d);
	unsigned char *seen = calloc(BIGDIR_N, 1);
	ck_assert(seen);
	DIR *dp = opendir(d);
	ck_assert_msg(dp, "%s: opendir: %s", d, ename(errno));
	struct dirent *de;
	int total = 0, dots = 0;
	while ((errno = 0, de = readdir(dp))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
			dots++;
			continue;
		}
		int idx;
		char tail;
		ck_assert_msg(sscanf(de->d_name, "entry-%5d%c", &idx, &tail) == 1 &&
			      idx >= 0 && idx < BIGDIR_N,
			      "%s: readdir returned an unexpected name \"%s\"", d, de->d_name);
		ck_assert_msg(!seen[idx], "%s: readdir returned %s twice", d, de->d_name);
		ck_assert_msg(de->d_type == DT_REG || de->d_type == DT_UNKNOWN,
			      "%s/%s: d_type %d, expected DT_REG", d, de->d_name, de->d_type);
		seen[idx] = 1;
		total++;
	}
	ck_assert_msg(errno == 0, "%s: readdir: %s", d, ename(errno));
	closedir(dp);
	EQ(dots, 2, d, "count of '.' and '..'");
	for (int i = 0; i < BIGDIR_N; i++)
		ck_assert_msg(seen[i], "%s: readdir missed entry-%05d", d, i);
	EQ(total, BIGDIR_N, d, "entries returned by readdir");
	free(seen);
	/* A lookup of one of them and a removal of all works. */
	EQ(fsize(pj(p, d, "entry-12345")), 0, p, "st_size");
	for (int i = 0; i < BIGDIR_N; i += 2) {
		pjn(p, d, "entry-", i);
		OK(unlink(p), p);
	}
	EQ(count_entries(d, "entry-00001"), BIGDIR_N / 2, d, "entries after removing half");
}
END_TEST

#define STABLE_KEEP 3000
#define STABLE_VICTIMS 1500

START_TEST(t_readdir_stable)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	for (int i = 0; i < STABLE_KEEP; i++) {
		pjn(p, d, "keep-", i);
		make_file(p, 0, 0);
	}
	for (int i = 0; i < STABLE_VICTIMS; i++) {
		pjn(p, d, "victim-", i);
		make_file(p, 0, 0);
	}
	unsigned char keep[STABLE_KEEP] = {0}, victim[STABLE_VICTIMS] = {0};
	enum { NEW_MAX = 2 * STABLE_KEEP };
	unsigned char *fresh = calloc(NEW_MAX, 1);
	ck_assert(fresh);
	int created = 0, deleted = 0, returned = 0;
	DIR *dp = opendir(d);
	ck_assert_msg(dp, "%s: opendir: %s", d, ename(errno));
	struct dirent *de;
	while ((errno = 0, de = readdir(dp))) {
		const char *n = de->d_name;
		int idx;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		if (sscanf(n, "keep-%d", &idx) == 1) {
			ck_assert_msg(idx >= 0 && idx < STABLE_KEEP, "%s: odd name %s", d, n);
			ck_assert_msg(!keep[idx], "%s: readdir returned %s twice while the "
				      "directory changed", d, n);
			keep[idx] = 1;
		} else if (sscanf(n, "victim-%d", &idx) == 1) {
			ck_assert_msg(idx >= 0 && idx < STABLE_VICTIMS, "%s: odd name %s", d, n);
			ck_assert_msg(!victim[idx], "%s: readdir returned %s twice", d, n);
			victim[idx] = 1;
		} else if (sscanf(n, "new-%d", &idx) == 1) {
			ck_assert_msg(idx >= 0 && idx < created, "%s: odd name %s", d, n);
			ck_assert_msg(!fresh[idx], "%s: readdir returned %s twice", d, n);
			fresh[idx] = 1;
		} else {
			ck_abort_msg("%s: readdir returned an unexpected name \"%s\"", d, n);
		}
		/* Every few entries: add one, delete one (order unrelated to readdir's). */
		if (++returned % 3 == 0) {
			if (created < NEW_MAX) {
				pjn(p, d, "new-", created++);
				make_file(p, 0, 0);
			}
			if (deleted < STABLE_VICTIMS) {
				int v = (int)(((unsigned)deleted * 7919u) % STABLE_VICTIMS);
				pjn(p, d, "victim-", v);
				OK(unlink(p), p);
				deleted++;
			}
		}
	}
	ck_assert_msg(errno == 0, "%s: readdir: %s", d, ename(errno));
	closedir(dp);
	for (int i = 0; i < STABLE_KEEP; i++)
		ck_assert_msg(keep[i], "%s: readdir missed keep-%05d (present and untouched "
			      "during the walk; %d created, %d deleted meanwhile)", d, i,
			      created, deleted);
	free(fresh);
	ck_assert_msg(created > 100 && deleted > 100, "%s: too few changes during the walk", d);
}
END_TEST

START_TEST(t_seekdir)
{
	CASE_DIR(d);
	char p[PATH_MAX];
	for (int i = 0; i < 600; i++) {
		pjn(p, d, "e", i);
		make_file(p, 0, 0);
	}
	DIR *dp = opendir(d);
	ck_assert_msg(dp, "%s: opendir: %s", d, ename(errno));
	long start = telldir(dp);
	char first[NAME_MAX + 1];
	struct dirent *de = readdir(dp);
	ck_assert(de);
	snprintf(first, sizeof(first), "%s", de->d_name);
	for (int i = 0; i < 199; i++)
		ck_assert_msg(readdir(dp), "%s: readdir ended early", d);
	long pos = telldir(dp);
	ck_assert_msg(pos != -1, "%s: telldir: %s", d, ename(errno));
	static char a[100][NAME_MAX + 1], b[100][NAME_MAX + 1];
	for (int i = 0; i < 100; i++) {
		de = readdir(dp);
		ck_assert_msg(de, "%s: readdir ended early", d);
		snprintf(a[i], sizeof(a[i]), "%s", de->d_name);
	}
	/* Read further, then jump back. */
	for (int i = 0; i < 150; i++)
		ck_assert_msg(readdir(dp), "%s: readdir ended early", d);
	seekdir(dp, pos);
	for (int i = 0; i < 100; i++) {
		de = readdir(dp);
		ck_assert_msg(de, "%s: readdir ended early after seekdir", d);
		ck_assert_msg(strcmp(a[i], de->d_name) == 0,
			      "%s: after seekdir, entry %d: expected %s, got %s", d, i, a[i],
			      de->d_name);
		snprintf(b[i], sizeof(b[i]), "%s", de->d_name);
	}
	/* Seeking to the start gives the first entry again; rewinddir too. */
	seekdir(dp, start);
	de = readdir(dp);
	ck_assert_msg(de && strcmp(de->d_name, first) == 0,
		      "%s: after seekdir to the start: expected %s, got %s", d, first,
		      de ? de->d_name : "(end)");
	rewinddir(dp);
	int n = 0;
	while (readdir(dp))
		n++;
	EQ(n, 602, d, "entries after rewinddir");
	closedir(dp);
}
END_TEST

/* ---- persistence (mode A only) ---------------------------------------- */

static struct fst persist_fs;

static const char *const persist_paths[] = {
	"p", "p/small", "p/big", "p/sparse", "p/empty", "p/sub", "p/sub/deeper",
	"p/sub/big_link", "p/sub/small_link2", "p/sym", "p/abs", "p/longsym", "p/fifo",
	"p/chr", "p/small_link1",
};
#define NPERSIST (sizeof(persist_paths) / sizeof(persist_paths[0]))

static void persist_build(const char *root)
{
	char p[PATH_MAX], q[PATH_MAX];
	OK(mkdir(pj(p, root, "p"), 0750), p);
	make_file(pj(p, root, "p/small"), 100, 40);
	make_file(pj(p, root, "p/big"), 5 * CHUNK + 777, 41);
	int fd = (int)OK(open(pj(p, root, "p/sparse"), O_CREAT | O_WRONLY, 0600), p);
	EQ(pwrite(fd, "z", 1, 3 * CHUNK + 5), 1, p, "pwrite length");
	OK(close(fd), p);
	make_file(pj(p, root, "p/empty"), 0, 0);
	OK(mkdir(pj(p, root, "p/sub"), 0700), p);
	OK(mkdir(pj(p, root, "p/sub/deeper"), 0755), p);
	OK(link(pj(q, root, "p/big"), pj(p, root, "p/sub/big_link")), p);
	OK(link(pj(q, root, "p/small"), pj(p, root, "p/small_link1")), p);
	OK(link(pj(q, root, "p/small"), pj(p, root, "p/sub/small_link2")), p);
	OK(symlink("small", pj(p, root, "p/sym")), p);
	OK(symlink("/abs/path/target", pj(p, root, "p/abs")), p);
	char lt[4001];
	memset(lt, 'L', 4000);
	lt[4000] = 0;
	OK(symlink(lt, pj(p, root, "p/longsym")), p);
	OK(mknod(pj(p, root, "p/fifo"), S_IFIFO | 0640, 0), p);
	OK(mknod(pj(p, root, "p/chr"), S_IFCHR | 0600, makedev(4, 64)), p);
	OK(chmod(pj(p, root, "p/small"), 0640), p);
	OK(chown(p, 1000, 2000), p);
	OK(setxattr(p, "user.a", "alpha", 5, 0), p);
	OK(setxattr(p, "trusted.t", "tee", 3, 0), p);
	uint8_t bin[300];
	fill(bin, sizeof(bin), 0, 42);
	OK(setxattr(pj(p, root, "p/big"), "user.bin", bin, sizeof(bin), 0), p);
	OK(setxattr(pj(p, root, "p/sub"), "user.dir", "d", 1, 0), p);
	/* Times last, deepest first, so that creating entries does not move them. */
	for (int i = (int)NPERSIST - 1; i >= 0; i--) {
		struct timespec ts[2] = {{1100000000 + i, 100000000 + i},
					 {1200000000 + i, 200000000 + i}};
		OK(utimensat(AT_FDCWD, pj(p, root, persist_paths[i]), ts,
			     AT_SYMLINK_NOFOLLOW), p);
	}
}

static void persist_check_data(const char *root)
{
	char p[PATH_MAX], buf[8192];
	expect_file(pj(p, root, "p/small"), 100, 40);
	expect_file(pj(p, root, "p/sub/small_link2"), 100, 40);
	expect_file(pj(p, root, "p/big"), 5 * CHUNK + 777, 41);
	int fd = (int)OK(open(pj(p, root, "p/sparse"), O_RDONLY), p);
	expect_range(p, fd, 0, 3 * CHUNK + 5, ZEROS);
	EQ(pread(fd, buf, 10, 3 * CHUNK + 5), 1, p, "pread length");
	ck_assert_msg(buf[0] == 'z', "%s: last byte", p);
	OK(close(fd), p);
	EQ(readlink(pj(p, root, "p/sym"), buf, sizeof(buf)), 5, p, "readlink length");
	ck_assert_msg(memcmp(buf, "small", 5) == 0, "%s: readlink content", p);
	EQ(readlink(pj(p, root, "p/abs"), buf, sizeof(buf)), 16, p, "readlink length");
	ck_assert_msg(memcmp(buf, "/abs/path/target", 16) == 0, "%s: readlink content", p);
	EQ(readlink(pj(p, root, "p/longsym"), buf, sizeof(buf)), 4000, p, "readlink length");
	for (int i = 0; i < 4000; i++)
		ck_assert_msg(buf[i] == 'L', "%s: readlink byte %d", p, i);
	pj(p, root, "p/small");
	EQ(getxattr(p, "user.a", buf, sizeof(buf)), 5, p, "getxattr user.a");
	ck_assert_msg(memcmp(buf, "alpha", 5) == 0, "%s: user.a value", p);
	EQ(getxattr(p, "trusted.t", buf, sizeof(buf)), 3, p, "getxattr trusted.t");
	ck_assert_msg(memcmp(buf, "tee", 3) == 0, "%s: trusted.t value", p);
	uint8_t bin[300];
	fill(bin, sizeof(bin), 0, 42);
	pj(p, root, "p/big");
	EQ(getxattr(p, "user.bin", buf, sizeof(buf)), 300, p, "getxattr user.bin");
	expect_mem(p, (uint8_t *)buf, bin, sizeof(bin), 0);
	pj(p, root, "p/sub");
	EQ(getxattr(p, "user.dir", buf, sizeof(buf)), 1, p, "getxattr user.dir");
	EQ(count_entries(pj(p, root, "p"), "small_link1"), 11, p, "entries of p");
	EQ(count_entries(pj(p, root, "p/sub"), "deeper"), 3, p, "entries of p/sub");
}

static void persist_compare(const char *root, const struct stat *before)
{
	char p[PATH_MAX];
	for (size_t i = 0; i < NPERSIST; i++) {
		struct stat a = before[i], b = st_of(pj(p, root, persist_paths[i]));
		EQ(b.st_ino, a.st_ino, p, "st_ino after remount");
		EQ(b.st_mode, a.st_mode, p, "st_mode after remount");
		EQ(b.st_nlink, a.st_nlink, p, "st_nlink after remount");
		EQ(b.st_uid, a.st_uid, p, "st_uid after remount");
		EQ(b.st_gid, a.st_gid, p, "st_gid after remount");
		EQ(b.st_size, a.st_size, p, "st_size after remount");
		EQ(b.st_rdev, a.st_rdev, p, "st_rdev after remount");
		EQ(b.st_blocks, a.st_blocks, p, "st_blocks after remount");
		TS_EQ(b.st_atim, a.st_atim.tv_sec, a.st_atim.tv_nsec, p, "atime after remount");
		TS_EQ(b.st_mtim, a.st_mtim.tv_sec, a.st_mtim.tv_nsec, p, "mtime after remount");
		TS_EQ(b.st_ctim, a.st_ctim.tv_sec, a.st_ctim.tv_nsec, p, "ctime after remount");
	}
}

static void persist_setup(void)
{
	if (mode_a && fst_init(&persist_fs, "posix-persist", 2) != 0)
		persist_fs.root[0] = 0;
}

/* After a failing case its daemon may still be mounted: detach and remove. */
static void persist_teardown(void)
{
	if (!mode_a || !persist_fs.root[0])
		return;
	struct stat a, b;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/..", persist_fs.mnt);
	if (stat(persist_fs.mnt, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev) {
		const char *argv[] = {"fusermount3", "-u", "-z", persist_fs.mnt, NULL};
		(void)fst_run(argv, NULL, 0); /* best effort: the case already failed */
	}
	persist_fs.daemon = 0; /* not our child: the case's process started it */
	fst_cleanup(&persist_fs);
}

START_TEST(t_persistence)
{
	if (!mode_a) {
		fprintf(stderr, "t_persistence: skipped in mode B (needs a remount)\n");
		return;
	}
	struct fst *f = &persist_fs;
	ck_assert_msg(f->root[0], "persistence: scratch directory not made");
	ck_assert_msg(fst_mkfs(f, mkfs_args) == 0, "persistence: mkfs failed");
	ck_assert_msg(fst_mount(f, NULL) == 0, "persistence: first mount failed");
	persist_build(f->mnt);
	struct stat before[NPERSIST];
	char p[PATH_MAX];
	for (size_t i = 0; i < NPERSIST; i++)
		before[i] = st_of(pj(p, f->mnt, persist_paths[i]));
	ck_assert_msg(fst_umount(f) == 0,
		      "persistence: unmount failed or the daemon did not exit 0");
	ck_assert_msg(fst_mount(f, NULL) == 0, "persistence: second mount failed");
	/* Attributes first: reading data may move atime. */
	persist_compare(f->mnt, before);
	persist_check_data(f->mnt);
	ck_assert_msg(fst_umount(f) == 0,
		      "persistence: second unmount failed or the daemon did not exit 0");
	/* A third mount after only reading: still the same attributes (except
	 * atime, which reads may legitimately have moved). */
	ck_assert_msg(fst_mount(f, NULL) == 0, "persistence: third mount failed");
	for (size_t i = 0; i < NPERSIST; i++) {
		struct stat b = st_of(pj(p, f->mnt, persist_paths[i]));
		EQ(b.st_ino, before[i].st_ino, p, "st_ino after the second remount");
		EQ(b.st_nlink, before[i].st_nlink, p, "st_nlink after the second remount");
		TS_EQ(b.st_mtim, before[i].st_mtim.tv_sec, before[i].st_mtim.tv_nsec, p,
		      "mtime after the second remount");
	}
	persist_check_data(f->mnt);
	ck_assert_msg(fst_umount(f) == 0,
		      "persistence: third unmount failed or the daemon did not exit 0");
}
END_TEST

/* What the kernel does to setuid/setgid bits when a file changes, as ext4
 * does: a write or truncate by an unprivileged user clears setuid, and
 * setgid when group-executable or when the writer is not in the file's
 * group; a chown clears both (setgid when group-executable); root's writes
 * keep them.  lsmfs does this itself (FUSE_HANDLE_KILLPRIV_V2), so this
 * checks it.  The unprivileged side opens as root, then drops to uid 65534
 * (gid as given) and writes or truncates through the fd. */
enum kp_op { KP_WRITE, KP_TRUNCATE };

static void as_user(const char *path, gid_t gid, enum kp_op op)
{
	int fd = (int)OK(open(path, O_WRONLY | O_APPEND), path);
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(gid) || setuid(65534))
			_exit(2);
		int rc = op == KP_WRITE ? (write(fd, "z", 1) == 1 ? 0 : -1) : ftruncate(fd, 1);
		_exit(rc ? 3 : 0);
	}
	int status = 0;
	ck_assert_msg(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			      WEXITSTATUS(status) == 0,
		      "%s: write/truncate as uid 65534 failed (status %#x)", path, status);
	close(fd);
}

static void kp_file(const char *path, mode_t mode)
{
	make_file(path, 10, 3);
	OK(chmod(path, mode), path);
}

START_TEST(t_killpriv)
{
	if (geteuid() != 0) {
		fprintf(stderr, "t_killpriv: skipped (acting as another user needs root)\n");
		return;
	}
	CASE_DIR(d);
	char p[PATH_MAX];
	kp_file(pj(p, d, "root_write"), 04755);
	int fd = (int)OK(open(p, O_WRONLY | O_APPEND), p);
	OK(write(fd, "z", 1), p);
	close(fd);
	EQ(st_of(p).st_mode & 07777, 04755, p, "mode after root's write (CAP_FSETID keeps setuid)");

	/* gid -1: the file's own group (the writer is a member). */
	static const struct {
		const char *name;
		mode_t mode, want;
		long gid;
		enum kp_op op;
		const char *what;
	} cases[] = {
		{"user_write", 04777, 0777, 65534, KP_WRITE, "a user's write to a setuid file"},
		{"user_write_sgid", 06777, 0777, 65534, KP_WRITE,
		 "a user's write to a setuid+setgid g+x file"},
		{"user_trunc_sgid", 02777, 0777, 65534, KP_TRUNCATE,
		 "a user's truncate of a setgid g+x file"},
		{"sgid_nogx_other", 02767, 0767, 65534, KP_WRITE,
		 "a write by a user outside the group to a setgid g-x file"},
		{"sgid_nogx_member", 02767, 02767, -1, KP_WRITE,
		 "a write by a group member to a setgid g-x file (kept)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kp_file(pj(p, d, cases[i].name), cases[i].mode);
		as_user(p, cases[i].gid < 0 ? st_of(p).st_gid : (gid_t)cases[i].gid, cases[i].op);
		EQ(st_of(p).st_mode & 07777, cases[i].want, p, cases[i].what);
	}

	kp_file(pj(p, d, "chown"), 06755);
	OK(chown(p, 65534, (gid_t)-1), p);
	EQ(st_of(p).st_mode & 07777, 0755, p, "mode after chown of a setuid+setgid g+x file");
	EQ(st_of(p).st_uid, 65534, p, "owner after chown");

	/* Contents are unharmed by the detour. */
	struct stat st = st_of(pj(p, d, "user_write"));
	EQ(st.st_size, 11, p, "size after the user's one-byte append");
}
END_TEST

/* ---- suite ------------------------------------------------------------ */

static TCase *tc(Suite *s, const char *name, int timeout)
{
	TCase *t = tcase_create(name);
	tcase_set_timeout(t, timeout);
	suite_add_tcase(s, t);
	return t;
}

static Suite *posix_suite(void)
{
	Suite *s = suite_create("posix");
	TCase *t = tc(s, "files", 300);
	tcase_add_test(t, t_create_open_rw);
	tcase_add_test(t, t_excl);
	tcase_add_test(t, t_append);
	tcase_add_test(t, t_trunc_flag);
	tcase_add_test(t, t_read_eof);
	t = tc(s, "data", 600);
	tcase_add_test(t, t_chunk_boundaries);
	tcase_add_test(t, t_random_writes);
	tcase_add_test(t, t_sparse);
	tcase_add_test(t, t_inline_to_chunked);
	tcase_add_test(t, t_truncate);
	tcase_add_test(t, t_fallocate);
	tcase_add_test(t, t_big_file);
	t = tc(s, "dirs", 300);
	tcase_add_test(t, t_killpriv);
	tcase_add_test(t, t_mkdir);
	tcase_add_test(t, t_rmdir);
	tcase_add_test(t, t_unlink);
	tcase_add_test(t, t_dir_nlink);
	tcase_add_test(t, t_unlink_open);
	t = tc(s, "rename", 300);
	tcase_add_test(t, t_rename_plain);
	tcase_add_test(t, t_rename_replace);
	tcase_add_test(t, t_rename_noreplace);
	tcase_add_test(t, t_rename_exchange);
	tcase_add_test(t, t_rename_errors);
	tcase_add_test(t, t_rename_subtree);
	t = tc(s, "links", 300);
	tcase_add_test(t, t_hardlink);
	tcase_add_test(t, t_symlink);
	tcase_add_test(t, t_mknod);
	t = tc(s, "attrs", 300);
	tcase_add_test(t, t_chmod_chown);
	tcase_add_test(t, t_utimens);
	tcase_add_test(t, t_times_update);
	tcase_add_test(t, t_times_order);
	tcase_add_test(t, t_xattr);
	t = tc(s, "fs", 300);
	tcase_add_test(t, t_statfs);
	tcase_add_test(t, t_fsync);
	tcase_add_test(t, t_name_max);
	t = tc(s, "readdir", 600);
	tcase_add_test(t, t_bigdir);
	tcase_add_test(t, t_readdir_stable);
	tcase_add_test(t, t_seekdir);
	t = tc(s, "persistence", 600);
	tcase_add_unchecked_fixture(t, persist_setup, persist_teardown);
	tcase_add_test(t, t_persistence);
	return s;
}

int main(void)
{
	struct fst fs;
	const char *dir = getenv("FSTEST_DIR");
	umask(022);
	if (dir && *dir) {
		snprintf(base, sizeof(base), "%s/posix.%d", dir, (int)getpid());
		if (mkdir(base, 0755) != 0) {
			fprintf(stderr, "posix: mkdir %s: %s\n", base, strerror(errno));
			return 1;
		}
		fprintf(stderr, "posix: mode B: cases run in %s (no mount)\n", base);
	} else {
		mode_a = true;
		fst_require_fuse();
		if (fst_init(&fs, "posix", 2) != 0)
			return 1;
		if (fst_mkfs(&fs, mkfs_args) != 0) {
			fprintf(stderr, "posix: mkfs.lsmfs failed on %s\n", fs.spec);
			fst_cleanup(&fs);
			return 1;
		}
		/* allow_other: t_killpriv acts as another user */
		if (fst_mount(&fs, geteuid() == 0 ? "allow_other" : NULL) != 0) {
			fprintf(stderr, "posix: mounting %s on %s failed\n", fs.spec, fs.mnt);
			fst_cleanup(&fs);
			return 1;
		}
		snprintf(base, sizeof(base), "%s/t", fs.mnt);
		if (mkdir(base, 0755) != 0) {
			fprintf(stderr, "posix: mkdir %s: %s\n", base, strerror(errno));
			fst_cleanup(&fs);
			return 1;
		}
	}

	SRunner *sr = srunner_create(posix_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);

	if (mode_a) {
		if (fst_umount(&fs) != 0) {
			fprintf(stderr, "posix: FAIL: unmount of %s did not succeed, or the "
				"daemon did not exit with status 0\n", fs.mnt);
			failed++;
		}
		fst_cleanup(&fs);
	} else if (failed == 0) {
		(void)fst_rmtree(base); /* keep it for inspection only when a case failed */
	}
	return failed ? 1 : 0;
}
