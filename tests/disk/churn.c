/*
 * churn: what an application does to files while their sections move
 * (tests/disk/test_disk.sh).  Each mode runs until STOPFILE exists, then
 * checks every byte it wrote and exits 0, or 1 naming the first error.
 *
 *   churn append FILE STOPFILE     append 4 KiB records, fsync after each;
 *                                  every record read back at the end
 *   churn randwrite FILE STOPFILE  one fd held open from start to end:
 *                                  4 KiB writes at random offsets of 16 MiB,
 *                                  checked through the same fd as it goes
 *                                  and through a new one at the end
 *   churn read FILE STOPFILE       read FILE (which must not change) again
 *                                  and again, each pass checked against the
 *                                  first; prints the bytes/s of the passes
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REC 4096
#define SPAN (16u << 20)

static int stop_file(const char *p)
{
	return access(p, F_OK) == 0;
}

static void fill(unsigned char *b, uint64_t tag)
{
	for (size_t i = 0; i < REC; i += 8)
		memcpy(b + i, &tag, 8), tag = tag * 6364136223846793005ull + 1442695040888963407ull;
}

static int full_pread(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

static int append(const char *file, const char *stop)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (fd < 0) {
		perror(file);
		return 1;
	}
	unsigned char b[REC];
	uint64_t n = 0;
	while (!stop_file(stop)) {
		fill(b, n + 1);
		if (write(fd, b, REC) != REC || fsync(fd) != 0) {
			fprintf(stderr, "churn append: %s: record %llu: %s\n", file,
				(unsigned long long)n, strerror(errno));
			return 1;
		}
		n++;
	}
	close(fd);
	fd = open(file, O_RDONLY);
	unsigned char r[REC];
	for (uint64_t i = 0; i < n; i++) {
		fill(b, i + 1);
		if (fd < 0 || full_pread(fd, r, REC, (off_t)(i * REC)) || memcmp(r, b, REC)) {
			fprintf(stderr, "churn append: %s: record %llu of %llu reads back wrong\n", file,
				(unsigned long long)i, (unsigned long long)n);
			return 1;
		}
	}
	printf("churn append: %llu records\n", (unsigned long long)n);
	return 0;
}

static int check_all(int fd, const uint64_t *tags, const char *file, const char *how)
{
	unsigned char b[REC], r[REC];
	for (uint32_t i = 0; i < SPAN / REC; i++) {
		fill(b, tags[i]);
		if (full_pread(fd, r, REC, (off_t)i * REC) || memcmp(r, b, REC)) {
			fprintf(stderr, "churn randwrite: %s: block %u reads back wrong (%s)\n", file, i,
				how);
			return 1;
		}
	}
	return 0;
}

static int randwrite_with(const char *file, const char *stop, uint64_t *tags);

static int randwrite(const char *file, const char *stop)
{
	uint64_t *tags = calloc(SPAN / REC, sizeof(*tags));
	if (!tags)
		return 1;
	int rc = randwrite_with(file, stop, tags);
	free(tags);
	return rc;
}

static int randwrite_with(const char *file, const char *stop, uint64_t *tags)
{
	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(file);
		return 1;
	}
	unsigned char b[REC], r[REC];
	for (uint32_t i = 0; i < SPAN / REC; i++) {
		tags[i] = i + 1;
		fill(b, tags[i]);
		if (pwrite(fd, b, REC, (off_t)i * REC) != REC) {
			perror(file);
			return 1;
		}
	}
	uint64_t seed = (uint64_t)getpid() * 2654435761u, n = 0;
	while (!stop_file(stop)) {
		seed = seed * 6364136223846793005ull + 1;
		uint32_t i = (uint32_t)(seed >> 33) % (SPAN / REC);
		tags[i] = seed | 1;
		fill(b, tags[i]);
		if (pwrite(fd, b, REC, (off_t)i * REC) != REC) {
			fprintf(stderr, "churn randwrite: %s: write %llu: %s\n", file,
				(unsigned long long)n, strerror(errno));
			return 1;
		}
		n++;
		uint32_t j = (uint32_t)(seed >> 13) % (SPAN / REC);
		fill(b, tags[j]);
		if (full_pread(fd, r, REC, (off_t)j * REC) || memcmp(r, b, REC)) {
			fprintf(stderr, "churn randwrite: %s: block %u reads back wrong after %llu writes\n",
				file, j, (unsigned long long)n);
			return 1;
		}
		if (n % 256 == 0 && fsync(fd) != 0) {
			fprintf(stderr, "churn randwrite: %s: fsync: %s\n", file, strerror(errno));
			return 1;
		}
	}
	if (fsync(fd) != 0 || check_all(fd, tags, file, "same fd"))
		return 1;
	close(fd);
	fd = open(file, O_RDONLY);
	if (fd < 0 || check_all(fd, tags, file, "reopened"))
		return 1;
	printf("churn randwrite: %llu writes\n", (unsigned long long)n);
	return 0;
}

static uint64_t hash_file(int fd, uint64_t *bytes)
{
	static unsigned char buf[1 << 20];
	uint64_t h = 1469598103934665603ull;
	off_t off = 0;
	*bytes = 0;
	for (;;) {
		ssize_t k = pread(fd, buf, sizeof(buf), off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return 0;
		if (k == 0)
			break;
		for (ssize_t i = 0; i < k; i += 64)
			h = (h ^ buf[i]) * 1099511628211ull;
		h ^= (uint64_t)k;
		off += k;
		*bytes += (uint64_t)k;
	}
	return h;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int reader(const char *file, const char *stop)
{
	int fd = open(file, O_RDONLY);
	if (fd < 0) {
		perror(file);
		return 1;
	}
	uint64_t bytes, total = 0;
	uint64_t want = hash_file(fd, &bytes);
	double t0 = now();
	unsigned passes = 0;
	while (!stop_file(stop) || passes == 0) {
		uint64_t got = hash_file(fd, &bytes);
		if (got != want) {
			fprintf(stderr, "churn read: %s: pass %u reads other bytes than the first\n", file,
				passes);
			return 1;
		}
		total += bytes;
		passes++;
	}
	double t = now() - t0;
	printf("churn read: %u passes, %.0f bytes/s\n", passes, t > 0 ? (double)total / t : 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: churn append|randwrite|read FILE STOPFILE\n");
		return 2;
	}
	if (!strcmp(argv[1], "append"))
		return append(argv[2], argv[3]);
	if (!strcmp(argv[1], "randwrite"))
		return randwrite(argv[2], argv[3]);
	if (!strcmp(argv[1], "read"))
		return reader(argv[2], argv[3]);
	fprintf(stderr, "churn: unknown mode %s\n", argv[1]);
	return 2;
}
