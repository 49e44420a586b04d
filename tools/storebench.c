/*
 * storebench: a work-alike of LevelDB/RocksDB db_bench for the lsmfs store,
 * written against store.h alone.  Flags, key format, value generator and
 * result lines follow RocksDB 7.8's db_bench so the two can be run side by
 * side (tools/bench/store-vs-rocksdb.sh) and their output parsed alike.
 *
 * db_bench semantics kept here:
 *  - Every benchmark runs on --threads threads and EACH thread performs the
 *    benchmark's full count: --num writes (fill*, overwrite, deleterandom)
 *    or --reads reads (readrandom, seekrandom; readseq/readreverse stop at
 *    --reads entries or the end).  So --threads=4 --num=N does 4N ops.
 *    fillseq on several threads therefore writes keys 0..N-1 once per thread.
 *  - fillseq, fillrandom and fillsync want a fresh database: the store is
 *    closed, its files removed and the store reopened; with
 *    --use_existing_db=1 they are skipped.  Without --use_existing_db the
 *    database is destroyed once at start, too.
 *  - fillsync does --num/1000 synced writes over keys [0, num/1000).
 *  - compact compacts every key down to the bottom level, the memtable
 *    first (store_compact_range over all keys, db_bench's CompactRange
 *    over all); waitforcompaction only waits for the background work.
 *  - Random keys are rand() % num per operation (fillrandom and overwrite
 *    may repeat keys).  As in db_bench, every thread of every benchmark gets
 *    its own seed, --seed plus the number of threads started before it, so
 *    readrandom does not replay fillrandom's keys (about 63% are found
 *    after a one-thread fillrandom of the same --num).
 *  - Keys: the number big-endian in the first min(key_size, 8) bytes, then
 *    '0' characters up to key_size (GenerateKeyFromInt, keys_per_prefix 0),
 *    so sequential numbers sort in key order.
 *  - Values come from a 1 MiB buffer built like db_bench's RandomGenerator
 *    (Park-Miller Random(301), CompressibleString pieces of 100 bytes), so
 *    they compress to about --compression_ratio.
 *  - Result line (RocksDB 7.8):
 *      name : micros/op ops/sec seconds operations; MB/s (message)
 *    micros/op sums the threads' times; ops/sec and MB/s use wall time
 *    from the first thread's start to the last thread's end.  MB/s counts
 *    key + value bytes written (fill*, overwrite) or read (readrandom of
 *    found keys, readseq, readreverse).  "(F of N found)" sums all threads
 *    (db_bench prints only the first thread's counts).
 *
 * Additions: after each write benchmark a write-amplification line and a
 * per-level table, from store_get_stats() deltas over that benchmark
 * (compaction still running in the background when it ends is not in it);
 * the "stats" benchmark prints every counter, cumulative since open.
 *
 * Exit codes: 0 ok, 1 a store call failed ("storebench: <op>: <strerror>"),
 * 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define PROG "storebench"
#define MIB (1024.0 * 1024.0)

/* ---- flags ---- */

struct flags {
	const char *benchmarks;
	int64_t num;
	int64_t reads;              /* -1: num */
	int64_t key_size;
	int64_t value_size;
	const char *compression_type;
	double compression_ratio;
	int64_t bloom_bits;         /* -1: store default */
	const char *filter;         /* NULL: from bloom_bits */
	int64_t filter_memory;      /* -1: store default (no bound) */
	const char *read_dist;      /* uniform | zipf:THETA */
	double absent_ratio;        /* share of readrandom lookups for absent keys */
	int64_t cache_size;         /* -1: store default */
	int64_t write_buffer_size;  /* -1: store default */
	bool sync;
	int64_t threads;
	const char *db;
	bool use_existing_db;
	int64_t seed;               /* 0: from the clock, as db_bench */
	bool histogram;
	int64_t max_open_files;
	int64_t target_file_size_base;
	int64_t max_bytes_for_level_base;
	int64_t level0_file_num_compaction_trigger;
	int64_t level0_slowdown_writes_trigger;
	int64_t level0_stop_writes_trigger;
	int64_t block_size;
};

enum flag_type { F_I64, F_DBL, F_BOOL, F_STR };

struct flag_def {
	const char *name;
	enum flag_type type;
	size_t offset;
	const char *help;
};

#define FLAG(n, t, h) { #n, t, offsetof(struct flags, n), h }
static const struct flag_def flag_defs[] = {
	FLAG(benchmarks, F_STR, "comma list, run in order (default fillseq,fillrandom,overwrite,readrandom,readseq)"),
	FLAG(num, F_I64, "number of keys (default 1000000)"),
	FLAG(reads, F_I64, "reads per thread (default: num)"),
	FLAG(key_size, F_I64, "key bytes (default 16)"),
	FLAG(value_size, F_I64, "value bytes (default 100)"),
	FLAG(compression_type, F_STR, "lz4 | none (default lz4)"),
	FLAG(compression_ratio, F_DBL, "value compressibility (default 0.5)"),
	FLAG(bloom_bits, F_I64, "Bloom bits per key, 0 none, -1 store default (default 10)"),
	FLAG(filter, F_STR, "table filter: none | bloom[:BITS] | elastic[:UNITSxBITS] | "
			    "quotient[:BITS] (default: bloom, --bloom_bits per key)"),
	FLAG(filter_memory, F_I64, "bytes of table filters held in memory, 0 no bound "
				   "(default: store default)"),
	FLAG(read_dist, F_STR, "readrandom keys: uniform | zipf:THETA, rank r is key r "
			       "(default uniform)"),
	FLAG(absent_ratio, F_DBL, "share of readrandom lookups for absent keys, each just "
				  "after a present one in key order (default 0)"),
	FLAG(cache_size, F_I64, "block cache bytes (default: store default)"),
	FLAG(write_buffer_size, F_I64, "memtable bytes (default: store default)"),
	FLAG(sync, F_BOOL, "sync every write (default 0)"),
	FLAG(threads, F_I64, "threads, each doing the full count (default 1)"),
	FLAG(db, F_STR, "database directory (default /tmp/storebench)"),
	FLAG(use_existing_db, F_BOOL, "keep the database; skip fill benchmarks (default 0)"),
	FLAG(seed, F_I64, "random seed, 0 = from the clock (default 0)"),
	FLAG(histogram, F_BOOL, "print per-op latency histograms (default 0)"),
	FLAG(max_open_files, F_I64, "table cache bound (default: store default)"),
	FLAG(target_file_size_base, F_I64, "SSTable size (default: store default)"),
	FLAG(max_bytes_for_level_base, F_I64, "L1 target bytes (default: store default)"),
	FLAG(level0_file_num_compaction_trigger, F_I64, "(default: store default)"),
	FLAG(level0_slowdown_writes_trigger, F_I64, "(default: store default)"),
	FLAG(level0_stop_writes_trigger, F_I64, "(default: store default)"),
	FLAG(block_size, F_I64, "data block bytes (default: store default)"),
};
#undef FLAG

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [--flag=value ...]\n"
		"A db_bench work-alike for the lsmfs store.\n"
		"Benchmarks: fillseq fillrandom overwrite readrandom readseq seekrandom\n"
		"            deleterandom readreverse fillsync stats waitforcompaction compact\n"
		"Each of --threads threads performs the full --num (writes) or --reads\n"
		"(reads) operations, as db_bench does.\n\nFlags:\n");
	for (size_t i = 0; i < sizeof(flag_defs) / sizeof(flag_defs[0]); i++)
		fprintf(f, "  --%-36s %s\n", flag_defs[i].name, flag_defs[i].help);
	fprintf(f, "\nExit: 0 ok, 1 a store call failed, 2 usage.\n");
}

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* A usage error: one line on stderr, exit 2. */
static void usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static bool parse_i64(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || end == s || *end)
		return false;
	*out = v;
	return true;
}

static void parse_flags(int argc, char **argv, struct flags *f)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			exit(0);
		}
		if (strncmp(arg, "--", 2) != 0)
			usage_error("unexpected argument '%s'", arg);
		const char *name = arg + 2;
		const char *eq = strchr(name, '=');
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
		const struct flag_def *d = NULL;
		for (size_t k = 0; k < sizeof(flag_defs) / sizeof(flag_defs[0]); k++) {
			if (strlen(flag_defs[k].name) == nlen &&
			    !strncmp(flag_defs[k].name, name, nlen)) {
				d = &flag_defs[k];
				break;
			}
		}
		if (!d) {
			fprintf(stderr, PROG ": unknown flag --%.*s\n", (int)nlen, name);
			exit(2);
		}
		const char *val = eq ? eq + 1 : NULL;
		if (!val && d->type != F_BOOL)
			usage_error("--%s needs a value", d->name);
		void *p = (char *)f + d->offset;
		switch (d->type) {
		case F_I64:
			if (!parse_i64(val, (int64_t *)p))
				usage_error("--%s: invalid number '%s'", d->name, val);
			break;
		case F_DBL: {
			char *end;
			errno = 0;
			*(double *)p = strtod(val, &end);
			if (errno || end == val || *end)
				usage_error("--%s: invalid number '%s'", d->name, val);
			break;
		}
		case F_BOOL:
			if (!val || !strcmp(val, "1") || !strcmp(val, "true"))
				*(bool *)p = true;
			else if (!strcmp(val, "0") || !strcmp(val, "false"))
				*(bool *)p = false;
			else
				usage_error("--%s: invalid boolean '%s'", d->name, val);
			break;
		case F_STR:
			*(const char **)p = val;
			break;
		}
	}
}

/* ---- random numbers and values ---- */

/* LevelDB's Park-Miller generator, for the value data only, so values match
 * db_bench's byte for byte. */
static uint32_t park_miller_next(uint32_t *seed)
{
	const uint32_t m = 2147483647u;
	uint64_t product = (uint64_t)*seed * 16807u;
	*seed = (uint32_t)((product >> 31) + (product & m));
	if (*seed > m)
		*seed -= m;
	return *seed;
}

/* Per-thread key generator (splitmix64). */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct value_data {
	char *data;
	size_t len;
};

/* db_bench's RandomGenerator: 100-byte pieces, each a random printable
 * string of 100*ratio bytes repeated to fill the piece. */
static int value_data_init(struct value_data *vd, double ratio, size_t value_size)
{
	size_t target = value_size > 1048576 ? value_size : 1048576;
	vd->len = 0;
	vd->data = malloc(target + 100);
	if (!vd->data)
		return -ENOMEM;
	uint32_t seed = 301;
	int raw = (int)(100 * ratio);
	if (raw < 1)
		raw = 1;
	if (raw > 100)
		raw = 100;
	char piece[100];
	while (vd->len < target) {
		for (int i = 0; i < raw; i++)
			piece[i] = (char)(' ' + park_miller_next(&seed) % 95);
		for (int i = raw; i < 100; i++)
			piece[i] = piece[i % raw];
		memcpy(vd->data + vd->len, piece, 100);
		vd->len += 100;
	}
	return 0;
}

static const char *value_next(const struct value_data *vd, size_t *pos, size_t len)
{
	if (*pos + len > vd->len)
		*pos = 0;
	*pos += len;
	return vd->data + *pos - len;
}

/* GenerateKeyFromInt with keys_per_prefix = 0. */
static void make_key(char *key, size_t key_size, uint64_t v)
{
	size_t fill = key_size < 8 ? key_size : 8;
	for (size_t i = 0; i < fill; i++)
		key[i] = (char)((v >> ((fill - i - 1) * 8)) & 0xff);
	if (key_size > fill)
		memset(key + fill, '0', key_size - fill);
}

/* ---- latency histogram (LevelDB's buckets, microseconds) ---- */

static const double bucket_limit[] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30, 35, 40, 45,
	50, 60, 70, 80, 90, 100, 120, 140, 160, 180, 200, 250, 300, 350, 400,
	450, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500,
	3000, 3500, 4000, 4500, 5000, 6000, 7000, 8000, 9000, 10000, 12000,
	14000, 16000, 18000, 20000, 25000, 30000, 35000, 40000, 45000, 50000,
	60000, 70000, 80000, 90000, 100000, 120000, 140000, 160000, 180000,
	200000, 250000, 300000, 350000, 400000, 450000, 500000, 600000, 700000,
	800000, 900000, 1000000, 1200000, 1400000, 1600000, 1800000, 2000000,
	2500000, 3000000, 3500000, 4000000, 4500000, 5000000, 6000000, 7000000,
	8000000, 9000000, 10000000, 12000000, 14000000, 16000000, 18000000,
	20000000, 25000000, 30000000, 35000000, 40000000, 45000000, 50000000,
	60000000, 70000000, 80000000, 90000000, 100000000, 120000000, 140000000,
	160000000, 180000000, 200000000, 250000000, 300000000, 350000000,
	400000000, 450000000, 500000000, 600000000, 700000000, 800000000,
	900000000, 1000000000, 1200000000, 1400000000, 1600000000, 1800000000,
	2000000000, 2500000000, 3000000000, 3500000000, 4000000000, 4500000000,
	5000000000, 6000000000, 7000000000, 8000000000, 9000000000, 1e10, 1e200,
};
#define NBUCKETS (sizeof(bucket_limit) / sizeof(bucket_limit[0]))

struct histogram {
	double min, max, num, sum, sum_squares;
	double buckets[NBUCKETS];
};

static void hist_clear(struct histogram *h)
{
	memset(h, 0, sizeof(*h));
	h->min = bucket_limit[NBUCKETS - 1];
}

static void hist_add(struct histogram *h, double v)
{
	size_t b = 0;
	while (b < NBUCKETS - 1 && bucket_limit[b] <= v)
		b++;
	h->buckets[b] += 1.0;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->num++;
	h->sum += v;
	h->sum_squares += v * v;
}

static void hist_merge(struct histogram *h, const struct histogram *o)
{
	if (o->min < h->min)
		h->min = o->min;
	if (o->max > h->max)
		h->max = o->max;
	h->num += o->num;
	h->sum += o->sum;
	h->sum_squares += o->sum_squares;
	for (size_t b = 0; b < NBUCKETS; b++)
		h->buckets[b] += o->buckets[b];
}

static double hist_percentile(const struct histogram *h, double p)
{
	double threshold = h->num * (p / 100.0), sum = 0;
	for (size_t b = 0; b < NBUCKETS; b++) {
		sum += h->buckets[b];
		if (sum >= threshold && h->buckets[b] > 0) {
			double left = b == 0 ? 0 : bucket_limit[b - 1];
			double right = bucket_limit[b];
			double left_sum = sum - h->buckets[b];
			double pos = (threshold - left_sum) / h->buckets[b];
			double r = left + (right - left) * pos;
			if (r < h->min)
				r = h->min;
			if (r > h->max)
				r = h->max;
			return r;
		}
	}
	return h->max;
}

/* Square root by Newton's method: the store library does not pull in libm
 * and tools/meson.build is not ours to change. */
static double newton_sqrt(double x)
{
	if (x <= 0)
		return 0;
	double r = x > 1 ? x : 1;
	for (int i = 0; i < 200; i++) {
		double next = 0.5 * (r + x / r);
		if (next >= r)
			break;
		r = next;
	}
	return r;
}

static void hist_print(const struct histogram *h, const char *what)
{
	if (h->num == 0)
		return;
	double avg = h->sum / h->num;
	double var = h->sum_squares / h->num - avg * avg;
	printf("Microseconds per %s:\n", what);
	printf("Count: %.0f  Average: %.4f  StdDev: %.2f\n", h->num, avg,
	       newton_sqrt(var));
	printf("Min: %.4f  Median: %.4f  Max: %.4f\n", h->min,
	       hist_percentile(h, 50), h->max);
	printf("Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n",
	       hist_percentile(h, 50), hist_percentile(h, 75),
	       hist_percentile(h, 99), hist_percentile(h, 99.9),
	       hist_percentile(h, 99.99));
	printf("------------------------------------------------------\n");
	double mult = 100.0 / h->num, cum = 0;
	for (size_t b = 0; b < NBUCKETS; b++) {
		if (h->buckets[b] <= 0)
			continue;
		cum += h->buckets[b];
		printf("[ %7.0f, %7.0f ) %7.0f %7.3f%% %7.3f%% ",
		       b == 0 ? 0.0 : bucket_limit[b - 1], bucket_limit[b],
		       h->buckets[b], mult * h->buckets[b], mult * cum);
		int marks = (int)(20 * (h->buckets[b] / h->num) + 0.5);
		for (int i = 0; i < marks; i++)
			putchar('#');
		putchar('\n');
	}
	putchar('\n');
}

/* ---- benchmarks ---- */

/* Each benchmark's loop stays a function of its own, so that a profile
 * can collect that benchmark alone (valgrind --tool=callgrind
 * --toggle-collect=do_read_scan) as with db_bench's Benchmark::ReadSequential;
 * one call per benchmark costs nothing. */
#define NOINLINE __attribute__((noinline))

enum bench_kind {
	B_FILLSEQ, B_FILLRANDOM, B_OVERWRITE, B_READRANDOM, B_READSEQ,
	B_SEEKRANDOM, B_DELETERANDOM, B_READREVERSE, B_FILLSYNC, B_STATS,
	B_WAITFORCOMPACTION, B_COMPACT,
};

static const struct {
	const char *name;
	enum bench_kind kind;
	bool fresh_db;
	bool writes;
} bench_table[] = {
	{ "fillseq", B_FILLSEQ, true, true },
	{ "fillrandom", B_FILLRANDOM, true, true },
	{ "overwrite", B_OVERWRITE, false, true },
	{ "readrandom", B_READRANDOM, false, false },
	{ "readseq", B_READSEQ, false, false },
	{ "seekrandom", B_SEEKRANDOM, false, false },
	{ "deleterandom", B_DELETERANDOM, false, true },
	{ "readreverse", B_READREVERSE, false, false },
	{ "fillsync", B_FILLSYNC, true, true },
	{ "stats", B_STATS, false, false },
	{ "waitforcompaction", B_WAITFORCOMPACTION, false, false },
	{ "compact", B_COMPACT, false, false },
};
#define NBENCH (sizeof(bench_table) / sizeof(bench_table[0]))

/* Everything a run shares; threads only read it, except the failure slot. */
struct bench {
	const struct flags *f;
	struct store_options opt;
	struct store *st;
	struct value_data values;
	uint64_t seed;
	uint64_t threads_started; /* seeds thread i of a run: seed + this */
	/* Per benchmark. */
	enum bench_kind kind;
	int64_t num, reads;
	/* readrandom's key distribution (setup_read_dist). */
	bool zipf;
	double theta, zeta_n, zeta_2, alpha, eta;
	unsigned write_flags;
	pthread_barrier_t barrier;
	/* First failure of any thread. */
	atomic_bool failed;
	pthread_mutex_t fail_mu;
	const char *fail_op;
	int fail_rc;
};

struct thread_state {
	struct bench *b;
	int tid;
	uint64_t rng;
	double start, finish;  /* seconds, CLOCK_MONOTONIC */
	double last_op;
	uint64_t done, bytes, found;
	struct histogram hist;
	pthread_t thread;
};

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void thread_fail(struct thread_state *t, const char *op, int rc)
{
	struct bench *b = t->b;
	pthread_mutex_lock(&b->fail_mu);
	if (!b->fail_op) {
		b->fail_op = op;
		b->fail_rc = rc;
	}
	pthread_mutex_unlock(&b->fail_mu);
	atomic_store(&b->failed, true);
}

static bool stopping(const struct thread_state *t)
{
	return atomic_load_explicit(&t->b->failed, memory_order_relaxed);
}

/* Count one finished operation (and time it with --histogram). */
static void finished_op(struct thread_state *t)
{
	t->done++;
	if (t->b->f->histogram) {
		double now = now_seconds();
		hist_add(&t->hist, (now - t->last_op) * 1e6);
		t->last_op = now;
	}
}

static NOINLINE void do_write(struct thread_state *t, bool sequential)
{
	struct bench *b = t->b;
	size_t ksz = (size_t)b->f->key_size, vsz = (size_t)b->f->value_size;
	char key[ksz ? ksz : 1];
	size_t vpos = 0;
	for (int64_t i = 0; i < b->num && !stopping(t); i++) {
		uint64_t k = sequential ? (uint64_t)i : rng_next(&t->rng) % (uint64_t)b->num;
		make_key(key, ksz, k);
		const char *v = value_next(&b->values, &vpos, vsz);
		int rc = store_put(b->st, key, ksz, v, vsz, b->write_flags);
		if (rc) {
			thread_fail(t, "put", rc);
			return;
		}
		t->bytes += ksz + vsz;
		finished_op(t);
	}
}

static NOINLINE void do_delete(struct thread_state *t)
{
	struct bench *b = t->b;
	size_t ksz = (size_t)b->f->key_size;
	char key[ksz ? ksz : 1];
	for (int64_t i = 0; i < b->num && !stopping(t); i++) {
		make_key(key, ksz, rng_next(&t->rng) % (uint64_t)b->num);
		int rc = store_delete(b->st, key, ksz, b->write_flags);
		if (rc) {
			thread_fail(t, "delete", rc);
			return;
		}
		finished_op(t);
	}
}

/* A uniform double in [0, 1). */
static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

/* zeta(n, theta) = sum of 1 / i^theta for i = 1..n. */
static double zeta(uint64_t n, double theta)
{
	double z = 0;
	for (uint64_t i = 1; i <= n; i++)
		z += 1.0 / pow((double)i, theta);
	return z;
}

/* The readrandom key distribution, from --read_dist: uniform, or
 * zipf:THETA with Gray et al.'s generator (as YCSB's ZipfianGenerator):
 * rank 0 the most frequent, and rank r is key r, so the hot keys are
 * neighbours in key order (and in the same tables). */
static void setup_read_dist(struct bench *b)
{
	const char *d = b->f->read_dist;
	b->zipf = false;
	if (!strcmp(d, "uniform"))
		return;
	char *end;
	if (strncmp(d, "zipf:", 5) || (b->theta = strtod(d + 5, &end), *end) ||
	    !(b->theta > 0 && b->theta < 1))
		usage_error("--read_dist: '%s' is not uniform or zipf:THETA with 0 < THETA < 1", d);
	uint64_t n = b->num > 0 ? (uint64_t)b->num : 1;
	b->zipf = true;
	b->zeta_n = zeta(n, b->theta);
	b->zeta_2 = zeta(2, b->theta);
	b->alpha = 1.0 / (1.0 - b->theta);
	b->eta = (1 - pow(2.0 / (double)n, 1 - b->theta)) / (1 - b->zeta_2 / b->zeta_n);
}

static uint64_t read_key_number(struct thread_state *t, uint64_t range)
{
	struct bench *b = t->b;
	if (!b->zipf)
		return rng_next(&t->rng) % range;
	double u = rng_unit(&t->rng), uz = u * b->zeta_n;
	if (uz < 1.0)
		return 0;
	if (uz < 1.0 + pow(0.5, b->theta))
		return range > 1 ? 1 : 0;
	uint64_t r = (uint64_t)((double)range * pow(b->eta * u - b->eta + 1, b->alpha));
	return r < range ? r : range - 1;
}

static NOINLINE void do_read_random(struct thread_state *t)
{
	struct bench *b = t->b;
	size_t ksz = (size_t)b->f->key_size;
	char key[ksz ? ksz : 1];
	uint64_t range = b->num > 0 ? (uint64_t)b->num : 1;
	for (int64_t i = 0; i < b->reads && !stopping(t); i++) {
		make_key(key, ksz, read_key_number(t, range));
		/* An absent key: the last byte changed, so it sorts right after
		 * the present one (a key past 8 bytes ends in '0'). */
		if (b->f->absent_ratio > 0 && ksz > 8 && rng_unit(&t->rng) < b->f->absent_ratio)
			key[ksz - 1] = '1';
		void *val = NULL;
		size_t vlen = 0;
		int rc = store_get(b->st, NULL, key, ksz, &val, &vlen);
		if (rc == 0) {
			t->found++;
			t->bytes += ksz + vlen;
			free(val);
		} else if (rc != -ENOENT) {
			thread_fail(t, "get", rc);
			return;
		}
		finished_op(t);
	}
}

static NOINLINE void do_seek_random(struct thread_state *t)
{
	struct bench *b = t->b;
	size_t ksz = (size_t)b->f->key_size;
	char key[ksz ? ksz : 1];
	uint64_t range = b->num > 0 ? (uint64_t)b->num : 1;
	struct store_iter_options io = { 0 };
	struct store_iter *it;
	int rc = store_iter_new(b->st, &io, &it);
	if (rc) {
		thread_fail(t, "iter_new", rc);
		return;
	}
	for (int64_t i = 0; i < b->reads && !stopping(t); i++) {
		make_key(key, ksz, rng_next(&t->rng) % range);
		store_iter_seek(it, key, ksz);
		if (store_iter_valid(it)) {
			size_t klen;
			const void *k = store_iter_key(it, &klen);
			if (klen == ksz && memcmp(k, key, ksz) == 0)
				t->found++;
		}
		finished_op(t);
	}
	rc = store_iter_status(it);
	if (rc)
		thread_fail(t, "seek", rc);
	store_iter_free(it);
}

static NOINLINE void do_read_scan(struct thread_state *t, bool reverse)
{
	struct bench *b = t->b;
	struct store_iter_options io = { 0 };
	struct store_iter *it;
	int rc = store_iter_new(b->st, &io, &it);
	if (rc) {
		thread_fail(t, "iter_new", rc);
		return;
	}
	if (reverse)
		store_iter_seek_last(it);
	else
		store_iter_seek_first(it);
	for (int64_t i = 0; i < b->reads && store_iter_valid(it) && !stopping(t); i++) {
		size_t klen, vlen;
		(void)store_iter_key(it, &klen);
		(void)store_iter_value(it, &vlen);
		t->bytes += klen + vlen;
		finished_op(t);
		if (reverse)
			store_iter_prev(it);
		else
			store_iter_next(it);
	}
	rc = store_iter_status(it);
	if (rc)
		thread_fail(t, reverse ? "readreverse" : "readseq", rc);
	store_iter_free(it);
}

static void *thread_main(void *arg)
{
	struct thread_state *t = arg;
	pthread_barrier_wait(&t->b->barrier);
	t->start = t->last_op = now_seconds();
	switch (t->b->kind) {
	case B_FILLSEQ:
		do_write(t, true);
		break;
	case B_FILLRANDOM:
	case B_OVERWRITE:
	case B_FILLSYNC:
		do_write(t, false);
		break;
	case B_DELETERANDOM:
		do_delete(t);
		break;
	case B_READRANDOM:
		do_read_random(t);
		break;
	case B_SEEKRANDOM:
		do_seek_random(t);
		break;
	case B_READSEQ:
		do_read_scan(t, false);
		break;
	case B_READREVERSE:
		do_read_scan(t, true);
		break;
	case B_STATS:
	case B_WAITFORCOMPACTION:
	case B_COMPACT:
		break;
	}
	t->finish = now_seconds();
	return NULL;
}

/* ---- store handling ---- */

static void die(const char *op, int rc)
{
	fprintf(stderr, PROG ": %s: %s\n", op, strerror(-rc));
	exit(1);
}

static void die_store(struct bench *b, const char *op, int rc)
{
	char msg[512] = "";
	if (b->st && rc == -EUCLEAN)
		store_errmsg(b->st, msg, sizeof(msg));
	if (msg[0])
		fprintf(stderr, PROG ": %s: %s (%s)\n", op, strerror(-rc), msg);
	else
		fprintf(stderr, PROG ": %s: %s\n", op, strerror(-rc));
	exit(1);
}

static void store_log(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": store: %s\n", msg);
}

/*
 * Remove the store in dir, the way LevelDB's DestroyDB does: only files the
 * store names (LOCK, CURRENT, MANIFEST-*, NNNNNN.log/.sst, *.tmp) are
 * removed, then the directory if it is empty.  Anything else is left, so a
 * wrong --db cannot wipe unrelated files.  store.h has no store_destroy().
 */
static int destroy_db(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		size_t len = strlen(n);
		bool ours = !strcmp(n, "LOCK") || !strcmp(n, "CURRENT") ||
			!strncmp(n, "MANIFEST-", 9) ||
			(len > 4 && !strcmp(n + len - 4, ".tmp"));
		if (!ours && n[0] >= '0' && n[0] <= '9' && len > 4) {
			size_t digits = strspn(n, "0123456789");
			ours = !strcmp(n + digits, ".log") || !strcmp(n + digits, ".sst");
		}
		if (!ours)
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", dir, n) >= (int)sizeof(path)) {
			rc = -ENAMETOOLONG;
			continue;
		}
		if (unlink(path) != 0 && errno != ENOENT && !rc)
			rc = -errno;
	}
	closedir(d);
	/* Fails (harmlessly) if anything else lives there. */
	(void)rmdir(dir);
	return rc;
}

static void open_db(struct bench *b)
{
	int rc = store_open(b->f->db, &b->opt, &b->st);
	if (rc) {
		b->st = NULL;
		die("open", rc);
	}
}

static void close_db(struct bench *b)
{
	if (!b->st)
		return;
	int rc = store_close(b->st);
	b->st = NULL;
	if (rc)
		die("close", rc);
}

static void print_levels(const struct store_stats *s)
{
	int deepest = -1;
	for (int l = 0; l < STORE_MAX_LEVELS; l++)
		if (s->level_files[l] || s->level_bytes[l])
			deepest = l;
	if (deepest < 0) {
		printf("  no tables yet (memtable %.1f MiB)\n", s->memtable_bytes / MIB);
		return;
	}
	printf("  %-5s %7s %10s\n", "level", "files", "MiB");
	for (int l = 0; l <= deepest; l++)
		printf("  L%-4d %7" PRIu64 " %10.1f\n", l, s->level_files[l],
		       s->level_bytes[l] / MIB);
}

/* Write amplification of one benchmark: the counters' growth over it. */
static void print_write_amp(const struct store_stats *before,
			    const struct store_stats *after)
{
	struct store_stats d = *after;
#define SUB(kind, field, key, word) STORE_IF_TOTAL(kind, d.field -= before->field;)
	STORE_COUNTERS(SUB)
#undef SUB
	if (d.user_bytes_written)
		printf("  write-amp: %.2f", store_stats_write_amp(&d));
	else
		printf("  write-amp: n/a");
	printf("  (wal %.1f MiB, flush %.1f MiB, compaction %.1f MiB, "
	       "manifest %.1f MiB, user %.1f MiB)\n",
	       d.wal_bytes_written / MIB, d.flush_bytes_written / MIB,
	       d.compaction_bytes_written / MIB, d.manifest_bytes_written / MIB,
	       d.user_bytes_written / MIB);
	print_levels(after);
}

static void print_stats(struct store *st)
{
	struct store_stats s;
	store_get_stats(st, &s);
	uint64_t lookups = s.block_cache_hits + s.block_cache_misses;
	printf("store stats (since open):\n");
#define P(kind, field, key, word) printf("  %-26s %" PRIu64 "\n", #field, s.field);
	STORE_COUNTERS(P)
#undef P
	if (s.user_bytes_written)
		printf("  %-26s %.2f\n", "write_amp", store_stats_write_amp(&s));
	if (lookups)
		printf("  %-26s %.1f%%\n", "block_cache_hit_rate",
		       100.0 * s.block_cache_hits / lookups);
	if (s.bloom_checked)
		printf("  %-26s %.1f%% useful, %.2f%% false positives\n", "bloom",
		       100.0 * s.bloom_useful / s.bloom_checked,
		       100.0 * s.bloom_false_positive / s.bloom_checked);
	print_levels(&s);
}

/* After readrandom: the filters' memory and what they saved, as deltas
 * over the benchmark. */
static void print_filter_report(const struct bench *b, const struct store_stats *x,
				const struct store_stats *y, uint64_t lookups)
{
	char policy[64];
	store_filter_format(&b->opt.filter, policy, sizeof(policy));
	uint64_t checked = y->bloom_checked - x->bloom_checked;
	uint64_t fp = y->bloom_false_positive - x->bloom_false_positive;
	uint64_t useful = y->bloom_useful - x->bloom_useful;
	uint64_t reads = y->data_block_reads - x->data_block_reads;
	printf("filter       : %s, %.2f MiB in memory (budget %s%.2f MiB), %" PRIu64
	       " loads, %" PRIu64 " drops\n",
	       policy, (double)y->filter_bytes / MIB, y->filter_budget ? "" : "none, ",
	       (double)y->filter_budget / MIB, y->filter_loads - x->filter_loads,
	       y->filter_drops - x->filter_drops);
	printf("filter       : %" PRIu64 " checks, %" PRIu64 " said absent, %" PRIu64
	       " false positives (%.3f%% of absent answers' candidates), %.3f data block "
	       "reads per lookup\n",
	       checked, useful, fp, useful + fp ? 100.0 * (double)fp / (double)(useful + fp) : 0.0,
	       lookups ? (double)reads / (double)lookups : 0.0);
}

static void run_benchmark(struct bench *b, int bi)
{
	const struct flags *f = b->f;
	int n = (int)f->threads;
	const char *name = bench_table[bi].name;

	b->kind = bench_table[bi].kind;
	b->num = f->num;
	b->reads = f->reads < 0 ? f->num : f->reads;
	if (b->kind == B_READRANDOM)
		setup_read_dist(b);
	b->write_flags = f->sync ? STORE_WRITE_SYNC : 0;
	if (b->kind == B_FILLSYNC) {
		b->num /= 1000;
		b->write_flags = STORE_WRITE_SYNC;
	}
	if (b->kind == B_STATS) {
		print_stats(b->st);
		return;
	}
	/* compact: everything down to the bottom level, memtable included,
	 * as db_bench's compact (CompactRange over all keys): reads then see
	 * the shape a read-heavy LevelDB reaches by its seek compactions. */
	if (b->kind == B_WAITFORCOMPACTION || b->kind == B_COMPACT) {
		double t0 = now_seconds();
		int rc = b->kind == B_COMPACT
				 ? store_compact_range(b->st, NULL, 0, NULL, 0)
				 : store_wait_compactions(b->st);
		if (rc)
			die_store(b, b->kind == B_COMPACT ? "compact" : "wait for compactions", rc);
		printf("%-12s : %.3f seconds\n", name, now_seconds() - t0);
		return;
	}
	if (bench_table[bi].fresh_db) {
		if (f->use_existing_db) {
			printf("%-12s : skipped (--use_existing_db is true)\n", name);
			return;
		}
		close_db(b);
		int rc = destroy_db(f->db);
		if (rc)
			die("destroy", rc);
		open_db(b);
	}

	struct store_stats before, after;
	store_get_stats(b->st, &before);

	struct thread_state *ts = calloc((size_t)n, sizeof(*ts));
	if (!ts)
		die("calloc", -ENOMEM);
	pthread_barrier_init(&b->barrier, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		ts[i].b = b;
		ts[i].tid = i;
		ts[i].rng = b->seed + b->threads_started++;
		hist_clear(&ts[i].hist);
		int rc = pthread_create(&ts[i].thread, NULL, thread_main, &ts[i]);
		if (rc)
			die("pthread_create", -rc);
	}
	for (int i = 0; i < n; i++)
		pthread_join(ts[i].thread, NULL);
	pthread_barrier_destroy(&b->barrier);
	if (atomic_load(&b->failed))
		die_store(b, b->fail_op, b->fail_rc);

	double start = ts[0].start, finish = ts[0].finish, seconds = 0;
	uint64_t done = 0, bytes = 0, found = 0;
	struct histogram hist;
	hist_clear(&hist);
	for (int i = 0; i < n; i++) {
		if (ts[i].start < start)
			start = ts[i].start;
		if (ts[i].finish > finish)
			finish = ts[i].finish;
		seconds += ts[i].finish - ts[i].start;
		done += ts[i].done;
		bytes += ts[i].bytes;
		found += ts[i].found;
		hist_merge(&hist, &ts[i].hist);
	}
	free(ts);

	uint64_t ops = done;
	if (done < 1)
		done = 1; /* as db_bench: no division by zero */
	double elapsed = finish - start;
	if (elapsed <= 0)
		elapsed = 1e-9;
	char extra[160] = "";
	size_t used = 0;
	if (bytes > 0)
		used += (size_t)snprintf(extra, sizeof(extra), "%6.1f MB/s",
					 bytes / MIB / elapsed);
	if (b->kind == B_READRANDOM || b->kind == B_SEEKRANDOM)
		snprintf(extra + used, sizeof(extra) - used,
			 "%s(%" PRIu64 " of %" PRIu64 " found)", used ? " " : "",
			 found, (uint64_t)b->reads * (uint64_t)n);
	printf("%-12s : %11.3f micros/op %ld ops/sec %.3f seconds %" PRIu64
	       " operations;%s%s\n",
	       name, seconds * 1e6 / done, (long)(done / elapsed), elapsed, ops,
	       extra[0] ? " " : "", extra);
	if (f->histogram)
		hist_print(&hist, bench_table[bi].writes ? "write" : "read");
	if (b->kind == B_READRANDOM) {
		store_get_stats(b->st, &after);
		print_filter_report(b, &before, &after, ops);
	}
	if (bench_table[bi].writes) {
		store_get_stats(b->st, &after);
		print_write_amp(&before, &after);
	}
	fflush(stdout);
}

static void print_header(const struct bench *b)
{
	const struct flags *f = b->f;
	time_t now = time(NULL);
	char date[64];
	strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", localtime(&now));
	printf("storebench: lsmfs store\n");
	printf("Date:       %s\n", date);
	printf("Keys:       %" PRId64 " bytes each\n", f->key_size);
	printf("Values:     %" PRId64 " bytes each (%d bytes after compression)\n",
	       f->value_size, (int)(f->value_size * f->compression_ratio + 0.5));
	printf("Entries:    %" PRId64 "\n", f->num);
	printf("RawSize:    %.1f MB (estimated)\n",
	       (double)(f->key_size + f->value_size) * f->num / MIB);
	printf("FileSize:   %.1f MB (estimated)\n",
	       (f->key_size + f->value_size * f->compression_ratio) * f->num / MIB);
	printf("Compression: %s\n",
	       b->opt.compression == STORE_COMPRESSION_LZ4 ? "LZ4" : "NoCompression");
	printf("Threads:    %" PRId64 " (each does the full count)\n", f->threads);
	char filter[64];
	store_filter_format(&b->opt.filter, filter, sizeof(filter));
	printf("Options:    write_buffer_size=%zu block_size=%zu block_cache=%zu "
	       "filter=%s\n", b->opt.write_buffer_size, b->opt.block_size,
	       b->opt.block_cache_bytes, filter);
	printf("            target_file_size=%" PRIu64 " level_base_bytes=%" PRIu64
	       " l0 triggers=%d/%d/%d max_open_files=%d sync=%d\n",
	       b->opt.target_file_size, b->opt.level_base_bytes,
	       b->opt.l0_compaction_trigger, b->opt.l0_slowdown_trigger,
	       b->opt.l0_stop_trigger, b->opt.max_open_files, (int)f->sync);
	printf("------------------------------------------------\n");
	printf("DB path: [%s]\n", f->db);
	fflush(stdout);
}

/* Turn the flags into store options; -1 keeps the store's default. */
static void make_options(const struct flags *f, struct store_options *o)
{
	store_options_init(o);
	o->log = store_log;
	if (!strcmp(f->compression_type, "lz4"))
		o->compression = STORE_COMPRESSION_LZ4;
	else if (!strcmp(f->compression_type, "none"))
		o->compression = STORE_COMPRESSION_NONE;
	else
		usage_error("--compression_type: '%s' is not lz4 or none",
			    f->compression_type);
	if (f->bloom_bits == 0)
		o->filter = (struct store_filter){STORE_FILTER_NONE, 0, 0};
	else if (f->bloom_bits > 0)
		o->filter = (struct store_filter){STORE_FILTER_BLOOM, (unsigned)f->bloom_bits, 1};
	if (f->filter_memory >= 0)
		o->filter_memory = (uint64_t)f->filter_memory;
	if (f->filter && store_filter_parse(f->filter, &o->filter))
		usage_error("--filter: '%s' is not none, bloom[:BITS], elastic[:UNITSxBITS] "
			    "or quotient[:BITS]", f->filter);
	if (f->cache_size >= 0)
		o->block_cache_bytes = (size_t)f->cache_size;
	if (f->write_buffer_size > 0)
		o->write_buffer_size = (size_t)f->write_buffer_size;
	if (f->block_size > 0)
		o->block_size = (size_t)f->block_size;
	if (f->max_open_files > 0)
		o->max_open_files = (int)f->max_open_files;
	if (f->target_file_size_base > 0)
		o->target_file_size = (uint64_t)f->target_file_size_base;
	if (f->max_bytes_for_level_base > 0)
		o->level_base_bytes = (uint64_t)f->max_bytes_for_level_base;
	if (f->level0_file_num_compaction_trigger > 0)
		o->l0_compaction_trigger = (int)f->level0_file_num_compaction_trigger;
	if (f->level0_slowdown_writes_trigger > 0)
		o->l0_slowdown_trigger = (int)f->level0_slowdown_writes_trigger;
	if (f->level0_stop_writes_trigger > 0)
		o->l0_stop_trigger = (int)f->level0_stop_writes_trigger;
	o->sync = f->sync;
}

int main(int argc, char **argv)
{
	struct flags f = {
		.benchmarks = "fillseq,fillrandom,overwrite,readrandom,readseq",
		.filter_memory = -1,
		.read_dist = "uniform",
		.num = 1000000,
		.reads = -1,
		.key_size = 16,
		.value_size = 100,
		.compression_type = "lz4",
		.compression_ratio = 0.5,
		.bloom_bits = 10,
		.cache_size = -1,
		.write_buffer_size = -1,
		.threads = 1,
		.db = "/tmp/storebench",
		.seed = 0,
		.max_open_files = -1,
		.target_file_size_base = -1,
		.max_bytes_for_level_base = -1,
		.level0_file_num_compaction_trigger = -1,
		.level0_slowdown_writes_trigger = -1,
		.level0_stop_writes_trigger = -1,
		.block_size = -1,
	};
	parse_flags(argc, argv, &f);
	if (f.num < 0 || f.key_size < 1 || f.key_size > 4096 || f.value_size < 0 ||
	    f.value_size > (64 << 20) || f.threads < 1 || f.threads > 1024)
		usage_error("invalid --num, --key_size, --value_size or --threads");

	/* Check every benchmark name before running any. */
	int list[256], nlist = 0;
	char *names = strdup(f.benchmarks);
	if (!names)
		die("strdup", -ENOMEM);
	for (char *save, *tok = strtok_r(names, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int found = -1;
		for (size_t i = 0; i < NBENCH; i++)
			if (!strcmp(tok, bench_table[i].name))
				found = (int)i;
		if (found < 0)
			usage_error("unknown benchmark '%s'", tok);
		if (nlist == (int)(sizeof(list) / sizeof(list[0])))
			usage_error("too many benchmarks");
		list[nlist++] = found;
	}
	free(names);

	struct bench b = { 0 };
	b.f = &f;
	make_options(&f, &b.opt);
	pthread_mutex_init(&b.fail_mu, NULL);
	if (value_data_init(&b.values, f.compression_ratio, (size_t)f.value_size))
		die("malloc", -ENOMEM);
	if (f.seed == 0) {
		b.seed = (uint64_t)(now_seconds() * 1e6) ^ (uint64_t)getpid();
		printf("Set seed to %" PRIu64 " because --seed was 0\n", b.seed);
	} else {
		b.seed = (uint64_t)f.seed;
	}

	print_header(&b);
	if (!f.use_existing_db) {
		int rc = destroy_db(f.db);
		if (rc)
			die("destroy", rc);
	}
	open_db(&b);
	for (int i = 0; i < nlist; i++)
		run_benchmark(&b, list[i]);
	close_db(&b);
	free(b.values.data);
	return 0;
}
