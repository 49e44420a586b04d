/*
 * lat.c: latency samples per operation type (load.h).
 *
 * Every sample is kept (8 bytes each: a 10-minute run of 128 workers
 * makes a few million), so percentiles are exact nearest-rank values,
 * not histogram buckets.  A worker saves its samples to a file of this
 * format, little-endian, which the parent merges:
 *     for each operation type in enum order: le64 count, count x le64 ns
 * One process owns a struct lat; no locking.
 */
#include "load.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const load_op_name[NOPS] = {
	[OP_CREATE] = "create", [OP_OPEN] = "open", [OP_CLOSE] = "close",
	[OP_WRITE] = "write", [OP_READ] = "read", [OP_FSYNC] = "fsync",
	[OP_FDATASYNC] = "fdatasync", [OP_TRUNCATE] = "truncate",
	[OP_RENAME] = "rename", [OP_RENAME_X] = "rename-x", [OP_LINK] = "link", [OP_UNLINK] = "unlink",
	[OP_MKDIR] = "mkdir", [OP_RMDIR] = "rmdir", [OP_READDIR] = "readdir",
	[OP_STAT] = "stat", [OP_SETXATTR] = "setxattr", [OP_GETXATTR] = "getxattr",
	[OP_SYMLINK] = "symlink", [OP_READLINK] = "readlink",
};

uint64_t lat_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int reserve(struct lat *l, enum load_op op, size_t more)
{
	if (l->n[op] + more <= l->cap[op])
		return 0;
	size_t cap = l->cap[op] ? l->cap[op] : 1024;
	while (cap < l->n[op] + more)
		cap *= 2;
	uint64_t *v = realloc(l->v[op], cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v[op] = v;
	l->cap[op] = cap;
	return 0;
}

int lat_add(struct lat *l, enum load_op op, uint64_t ns)
{
	int rc = reserve(l, op, 1);
	if (!rc)
		l->v[op][l->n[op]++] = ns;
	return rc;
}

void lat_free(struct lat *l)
{
	for (int op = 0; op < NOPS; op++)
		free(l->v[op]);
	memset(l, 0, sizeof(*l));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int lat_save(const struct lat *l, const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -errno;
	int rc = 0;
	uint8_t b[8];
	for (int op = 0; op < NOPS && !rc; op++) {
		put_le64(b, l->n[op]);
		if (fwrite(b, 8, 1, f) != 1)
			rc = -EIO;
		for (size_t i = 0; i < l->n[op] && !rc; i++) {
			put_le64(b, l->v[op][i]);
			if (fwrite(b, 8, 1, f) != 1)
				rc = -EIO;
		}
	}
	if (fclose(f) != 0 && !rc)
		rc = -EIO;
	return rc;
}

int lat_merge_file(struct lat *into, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	int rc = 0;
	uint8_t b[8];
	long off = 0;
	for (int op = 0; op < NOPS && !rc; op++) {
		if (fread(b, 8, 1, f) != 1) {
			snprintf(err, errlen, "%s: offset %ld: truncated (no count for %s)", path, off,
				 load_op_name[op]);
			rc = -EUCLEAN;
			break;
		}
		off += 8;
		uint64_t n = get_le64(b);
		if (n > (1ull << 32)) {
			snprintf(err, errlen, "%s: offset %ld: count %llu for %s is not plausible",
				 path, off - 8, (unsigned long long)n, load_op_name[op]);
			rc = -EUCLEAN;
			break;
		}
		if ((rc = reserve(into, (enum load_op)op, (size_t)n))) {
			snprintf(err, errlen, "%s: out of memory for %llu samples", path,
				 (unsigned long long)n);
			break;
		}
		for (uint64_t i = 0; i < n; i++) {
			if (fread(b, 8, 1, f) != 1) {
				snprintf(err, errlen, "%s: offset %ld: truncated in the %s samples",
					 path, off, load_op_name[op]);
				rc = -EUCLEAN;
				break;
			}
			off += 8;
			into->v[op][into->n[op]++] = get_le64(b);
		}
	}
	if (!rc && fread(b, 1, 1, f) != 0) {
		snprintf(err, errlen, "%s: offset %ld: bytes after the last sample", path, off);
		rc = -EUCLEAN;
	}
	fclose(f);
	return rc;
}

uint64_t lat_rank(const uint64_t *v, size_t n, unsigned p)
{
	if (n == 0)
		return 0;
	/* ceil(p/100 * n) without overflow: the hundreds of n, then the rest */
	size_t rank = (n / 100) * p + ((n % 100) * p + 99) / 100;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t lat_print(struct lat *l, double seconds, FILE *out)
{
	uint64_t total = 0;
	fprintf(out, "  %-10s %10s %9s %10s %10s %10s\n", "op", "count", "ops/s", "p50 us",
		"p99 us", "max us");
	for (int op = 0; op < NOPS; op++) {
		size_t n = l->n[op];
		total += n;
		if (n)
			qsort(l->v[op], n, sizeof(uint64_t), cmp_u64);
		fprintf(out, "  %-10s %10zu %9.1f %10.1f %10.1f %10.1f\n", load_op_name[op], n,
			seconds > 0 ? (double)n / seconds : 0.0,
			(double)lat_rank(l->v[op], n, 50) / 1e3,
			(double)lat_rank(l->v[op], n, 99) / 1e3,
			(double)lat_rank(l->v[op], n, 100) / 1e3);
	}
	fprintf(out, "  %-10s %10llu %9.1f\n", "all", (unsigned long long)total,
		seconds > 0 ? (double)total / seconds : 0.0);
	return total;
}
