/* mdscale: the client side of tools/bench/md-scale.sh, run against any
 * directory (an lsmfs mount, a plain ext4 directory).  Not installed; the
 * script builds it with gcc.
 *
 * Layout: ROOT/d<k> for k in [0, D), file i (i in [0, N)) is ROOT/d<i mod D>/f<i>,
 * so consecutive creates go to different directories, as in a mail spool or
 * a hashed object store, and every directory grows all the time.
 *
 * Contents: file i is SIZE bytes whose first RANDPCT percent are
 * pseudo-random bytes seeded by i and the rest repeats them (db_bench's
 * --compression_ratio idea: RANDPCT 50 compresses about 2:1 with LZ4,
 * 100 not at all).  Reads check every byte against that.
 *
 * Commands (each prints result lines on stdout, errors as one line
 * "mdscale: what: why" on stderr, exit 0 done, 1 failed, 2 usage):
 *   mdscale create ROOT N D SIZE RANDPCT SLICE
 *       mkdir the D directories (line "mkdir D SECONDS RATE"), then create
 *       and write the N files in index order, one open(O_CREAT|O_EXCL) +
 *       write + close each; after every SLICE files (and at the end) a line
 *       "slice K FIRST END SECONDS RATE" (files [FIRST, END)), then
 *       "create N SECONDS RATE".
 *   mdscale stat ROOT N D SIZE COUNT SEED
 *       stat COUNT files chosen uniformly at random (seeded), checking each
 *       is a regular file of SIZE bytes: "stat COUNT SECONDS RATE P50_US P99_US".
 *   mdscale read ROOT N D SIZE RANDPCT COUNT SEED
 *       open, read whole (to end of file), close COUNT random files,
 *       checking the bytes: "read COUNT SECONDS RATE P50_US P99_US".
 * Single-threaded: one process, one request in flight, as a shell user.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* splitmix64: a full-period 64-bit generator, one word of state. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The SIZE bytes of file i: RANDPCT percent random, the rest a repeat. */
static void file_bytes(unsigned char *buf, size_t size, long i, int randpct)
{
	uint64_t state = (uint64_t)i * 0x2545f4914f6cdd1dULL + 1;
	size_t nrand = size * (size_t)randpct / 100, k;

	if (nrand == 0 && size > 0)
		nrand = 1;
	for (k = 0; k < nrand; k += 8) {
		uint64_t r = next_random(&state);
		size_t n = nrand - k < 8 ? nrand - k : 8;

		memcpy(buf + k, &r, n);
	}
	for (k = nrand; k < size; k++)
		buf[k] = buf[k % nrand];
}

static void file_path(char *out, size_t cap, const char *root, long i, long ndirs)
{
	snprintf(out, cap, "%s/d%ld/f%ld", root, i % ndirs, i);
}

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "mdscale: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted latencies, in microseconds. */
static double percentile_us(const double *sorted, long n, double p)
{
	long rank = (long)(p * (double)n + 0.999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1] * 1e6;
}

static void report_latency(const char *phase, long count, double seconds, double *lat)
{
	qsort(lat, (size_t)count, sizeof *lat, cmp_double);
	printf("%s %ld %.3f %.0f %.1f %.1f\n", phase, count, seconds,
	       (double)count / seconds, percentile_us(lat, count, 0.50),
	       percentile_us(lat, count, 0.99));
}

static int cmd_create(const char *root, long n, long ndirs, size_t size, int randpct,
		      long slice)
{
	unsigned char *buf = malloc(size + 1);
	char path[4096];
	double t0, ts;
	long i, k, first = 0;

	if (!buf)
		return fail("malloc", "");
	t0 = now();
	for (k = 0; k < ndirs; k++) {
		snprintf(path, sizeof path, "%s/d%ld", root, k);
		if (mkdir(path, 0755))
			return fail("mkdir", path);
	}
	ts = now() - t0;
	printf("mkdir %ld %.3f %.0f\n", ndirs, ts, (double)ndirs / ts);
	fflush(stdout);
	t0 = ts = now();
	for (i = 0; i < n; i++) {
		int fd;

		file_path(path, sizeof path, root, i, ndirs);
		file_bytes(buf, size, i, randpct);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			return fail("create", path);
		if (size && write(fd, buf, size) != (ssize_t)size)
			return fail("write", path);
		if (close(fd))
			return fail("close", path);
		if (i + 1 - first == slice || i + 1 == n) {
			double t = now();

			printf("slice %ld %ld %ld %.3f %.0f\n", first / slice, first, i + 1,
			       t - ts, (double)(i + 1 - first) / (t - ts));
			fflush(stdout);
			first = i + 1;
			ts = t;
		}
	}
	ts = now() - t0;
	printf("create %ld %.3f %.0f\n", n, ts, (double)n / ts);
	free(buf);
	return 0;
}

static int cmd_stat(const char *root, long n, long ndirs, size_t size, long count,
		    uint64_t seed)
{
	double *lat = malloc((size_t)count * sizeof *lat), t0;
	char path[4096];
	struct stat st;
	long c;

	if (!lat)
		return fail("malloc", "");
	t0 = now();
	for (c = 0; c < count; c++) {
		long i = (long)(next_random(&seed) % (uint64_t)n);
		double t = now();

		file_path(path, sizeof path, root, i, ndirs);
		if (stat(path, &st))
			return fail("stat", path);
		lat[c] = now() - t;
		if (!S_ISREG(st.st_mode) || (size_t)st.st_size != size) {
			fprintf(stderr, "mdscale: stat %s: mode %o size %jd, want a file of %zu\n",
				path, (unsigned)st.st_mode, (intmax_t)st.st_size, size);
			return 1;
		}
	}
	report_latency("stat", count, now() - t0, lat);
	free(lat);
	return 0;
}

static int cmd_read(const char *root, long n, long ndirs, size_t size, int randpct,
		    long count, uint64_t seed)
{
	double *lat = malloc((size_t)count * sizeof *lat), t0;
	unsigned char *want = malloc(size + 1), *got = malloc(size + 4096);
	char path[4096];
	long c;

	if (!lat || !want || !got)
		return fail("malloc", "");
	t0 = now();
	for (c = 0; c < count; c++) {
		long i = (long)(next_random(&seed) % (uint64_t)n);
		size_t have = 0;
		ssize_t r;
		double t = now();
		int fd;

		file_path(path, sizeof path, root, i, ndirs);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return fail("open", path);
		while ((r = read(fd, got + have, size + 4096 - have)) > 0)
			have += (size_t)r;
		if (r < 0)
			return fail("read", path);
		close(fd);
		lat[c] = now() - t;
		file_bytes(want, size, i, randpct);
		if (have != size || memcmp(got, want, size)) {
			fprintf(stderr, "mdscale: read %s: %zu bytes, not the %zu written\n",
				path, have, size);
			return 1;
		}
	}
	report_latency("read", count, now() - t0, lat);
	free(lat);
	free(want);
	free(got);
	return 0;
}

/* A positive decimal argument, or -1. */
static long arg_long(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: mdscale create ROOT N D SIZE RANDPCT SLICE\n"
		"       mdscale stat ROOT N D SIZE COUNT SEED\n"
		"       mdscale read ROOT N D SIZE RANDPCT COUNT SEED\n";
	long v[6] = {0};
	int i, want;

	if (argc < 2)
		goto bad;
	want = !strcmp(argv[1], "create") ? 8 : !strcmp(argv[1], "stat") ? 8
	     : !strcmp(argv[1], "read") ? 9 : 0;
	if (argc != want)
		goto bad;
	for (i = 3; i < argc; i++)
		if ((v[i - 3] = arg_long(argv[i])) < 0)
			goto bad;
	/* v: N D SIZE then per command. */
	if (v[0] < 1 || v[1] < 1 || v[2] > (1L << 30))
		goto bad;
	if (!strcmp(argv[1], "create")) {
		if (v[3] > 100 || v[4] < 1)
			goto bad;
		return cmd_create(argv[2], v[0], v[1], (size_t)v[2], (int)v[3], v[4]);
	}
	if (!strcmp(argv[1], "stat")) {
		if (v[3] < 1)
			goto bad;
		return cmd_stat(argv[2], v[0], v[1], (size_t)v[2], v[3], (uint64_t)v[4]);
	}
	if (v[3] > 100 || v[4] < 1)
		goto bad;
	return cmd_read(argv[2], v[0], v[1], (size_t)v[2], (int)v[3], v[4], (uint64_t)v[5]);
bad:
	fputs(usage, stderr);
	return 2;
}
