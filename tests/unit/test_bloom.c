/*
 * test_bloom: the Bloom filter (suite "bloom") and the block cache (suite
 * "cache"), both declared in store/sst.h.
 *
 * Bloom: no false negatives, a false-positive rate within 20% of the
 * theoretical (1 - e^{-kn/m})^k, and "maybe" for malformed filters.
 * Cache: LRU order, pinning, replacement, capacity 0 and a multithreaded
 * hammer whose deleter counts prove every value is freed exactly once.
 * The cache is sharded; tests that need exact LRU order first find keys
 * that share a shard by probing a cache with one byte per shard.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coding.h"
#include "filter.h"
#include "sst.h"

/* ---- Bloom filter ---- */

#define NKEYS 100000
/* The FPR is measured on many more absent keys than NKEYS: at 16 bits per
 * key only ~46 of 100k absent keys are false positives, and a 20% bound
 * would then be ~1.4 standard deviations of pure sampling noise. */
#define NPROBES 1000000

static size_t key_of(char *out, const char *prefix, size_t i)
{
	return (size_t)snprintf(out, 32, "%s%09zu", prefix, i);
}

static const int bits_per_key_cases[] = { 5, 10, 16 };

START_TEST(test_bloom_fpr)
{
	int bpk = bits_per_key_cases[_i];
	char k[32];
	uint64_t *hashes = malloc(NKEYS * sizeof(*hashes));
	ck_assert_ptr_nonnull(hashes);
	for (size_t i = 0; i < NKEYS; i++) {
		size_t len = key_of(k, "key/", i);
		hashes[i] = bloom_hash(k, len);
	}
	struct buf f;
	buf_init(&f);
	bloom_build_hashes(&f, hashes, NKEYS, bpk);
	ck_assert_int_eq(buf_ok(&f), 0);
	ck_assert_uint_eq(f.len, (size_t)NKEYS * (size_t)bpk / 8 + 1);
	int kprobes = f.data[f.len - 1];
	ck_assert_int_eq(kprobes, (int)lround(log(2.0) * bpk));

	for (size_t i = 0; i < NKEYS; i++) {
		size_t len = key_of(k, "key/", i);
		ck_assert_msg(bloom_may_contain(f.data, f.len, k, len),
			      "false negative for %s", k);
	}

	size_t fp = 0, fp_first = 0;
	for (size_t i = 0; i < NPROBES; i++) {
		size_t len = key_of(k, "other/", i);
		if (bloom_may_contain(f.data, f.len, k, len)) {
			fp++;
			if (i < NKEYS)
				fp_first++;
		}
	}
	double m = (double)(f.len - 1) * 8;
	double theory = pow(1 - exp(-(double)kprobes * NKEYS / m), kprobes);
	double fpr = (double)fp / NPROBES;
	printf("bloom: bits_per_key %2d k %2d: fpr %.5f (first 100k keys "
	       "%.5f), theory %.5f, ratio %.3f\n",
	       bpk, kprobes, fpr, (double)fp_first / NKEYS, theory,
	       fpr / theory);
	ck_assert_msg(fabs(fpr - theory) <= 0.2 * theory,
		      "bits_per_key %d: fpr %g vs theory %g", bpk, fpr, theory);
	buf_free(&f);
	free(hashes);
}
END_TEST

/* bloom_build and bloom_build_hashes produce the same bytes, and append. */
START_TEST(test_bloom_build_forms_agree)
{
	enum { N = 1000 };
	char store[N][32];
	const uint8_t *keys[N];
	size_t lens[N];
	uint64_t hashes[N];
	for (size_t i = 0; i < N; i++) {
		lens[i] = key_of(store[i], "k", i);
		keys[i] = (const uint8_t *)store[i];
		hashes[i] = bloom_hash(store[i], lens[i]);
	}
	struct buf a, b;
	buf_init(&a);
	buf_init(&b);
	buf_append(&a, "prefix", 6);
	bloom_build(&a, keys, lens, N, 10);
	bloom_build_hashes(&b, hashes, N, 10);
	ck_assert_int_eq(buf_ok(&a), 0);
	ck_assert_int_eq(buf_ok(&b), 0);
	ck_assert_uint_eq(a.len, b.len + 6);
	ck_assert_int_eq(memcmp(a.data, "prefix", 6), 0);
	ck_assert_int_eq(memcmp(a.data + 6, b.data, b.len), 0);
	for (size_t i = 0; i < N; i++)
		ck_assert(bloom_may_contain_hash(b.data, b.len, hashes[i]));
	buf_free(&a);
	buf_free(&b);
}
END_TEST

static int popcount_bytes(const uint8_t *p, size_t n)
{
	int c = 0;
	for (size_t i = 0; i < n; i++)
		c += __builtin_popcount(p[i]);
	return c;
}

/* With m = 64 (a power of two) and odd h2, the k probes of a key are k
 * distinct bits: double hashing must not degenerate. */
START_TEST(test_bloom_probes_distinct)
{
	for (uint64_t i = 0; i < 2000; i++) {
		struct buf f;
		buf_init(&f);
		uint64_t h = bloom_hash(&i, sizeof(i));
		if (i == 0)
			h = 0; /* h2 == 0 before forcing it odd */
		else if (i == 1)
			h = (uint64_t)64 << 32; /* h2 a multiple of m */
		bloom_build_hashes(&f, &h, 1, 16);
		ck_assert_uint_eq(f.len, 9);
		ck_assert_int_eq(f.data[8], 11);
		ck_assert_int_eq(popcount_bytes(f.data, 8), 11);
		ck_assert(bloom_may_contain_hash(f.data, f.len, h));
		buf_free(&f);
	}
}
END_TEST

START_TEST(test_bloom_empty)
{
	struct buf f;
	buf_init(&f);
	bloom_build(&f, NULL, NULL, 0, 10);
	ck_assert_uint_eq(f.len, 64 / 8 + 1);
	ck_assert_int_eq(f.data[f.len - 1], 7);
	char k[32];
	for (size_t i = 0; i < 1000; i++) {
		size_t len = key_of(k, "x", i);
		ck_assert(!bloom_may_contain(f.data, f.len, k, len));
	}
	ck_assert(!bloom_may_contain(f.data, f.len, "", 0));
	buf_free(&f);

	buf_init(&f);
	bloom_build_hashes(&f, NULL, 0, 16);
	ck_assert_uint_eq(f.len, 9);
	ck_assert(!bloom_may_contain_hash(f.data, f.len, 12345));
	buf_free(&f);
}
END_TEST

START_TEST(test_bloom_small_bits_per_key)
{
	/* bits_per_key 1 (and a nonsensical 0) still build a usable filter
	 * with k = 1. */
	for (int bpk = 0; bpk <= 1; bpk++) {
		uint64_t h[100];
		for (size_t i = 0; i < 100; i++)
			h[i] = bloom_hash(&i, sizeof(i));
		struct buf f;
		buf_init(&f);
		bloom_build_hashes(&f, h, 100, bpk);
		ck_assert_int_eq(f.data[f.len - 1], 1);
		for (size_t i = 0; i < 100; i++)
			ck_assert(bloom_may_contain_hash(f.data, f.len, h[i]));
		buf_free(&f);
	}
	/* A huge bits_per_key is clamped to 30 probes. */
	struct buf f;
	buf_init(&f);
	uint64_t h = 42;
	bloom_build_hashes(&f, &h, 1, 100);
	ck_assert_int_eq(f.data[f.len - 1], 30);
	ck_assert(bloom_may_contain_hash(f.data, f.len, h));
	buf_free(&f);
}
END_TEST

START_TEST(test_bloom_malformed)
{
	uint8_t zeros[16] = { 0 };
	/* Too short to hold bits and k. */
	ck_assert(bloom_may_contain(NULL, 0, "a", 1));
	ck_assert(bloom_may_contain(zeros, 0, "a", 1));
	ck_assert(bloom_may_contain(zeros, 1, "a", 1));
	ck_assert(bloom_may_contain_hash(zeros, 1, 7));
	/* k out of range: every key "may" be present even though no bit is
	 * set. */
	uint8_t bad[9] = { 0 };
	for (int k = 31; k <= 255; k++) {
		bad[8] = (uint8_t)k;
		ck_assert(bloom_may_contain(bad, sizeof(bad), "a", 1));
		ck_assert(bloom_may_contain_hash(bad, sizeof(bad), 99));
	}
	/* A well-formed all-zero filter answers no. */
	bad[8] = 30;
	ck_assert(!bloom_may_contain(bad, sizeof(bad), "a", 1));
	/* The smallest readable filter: one byte of bits. */
	uint8_t tiny[2] = { 0, 3 };
	ck_assert(!bloom_may_contain(tiny, 2, "a", 1));
	tiny[0] = 0xff;
	ck_assert(bloom_may_contain(tiny, 2, "a", 1));
}
END_TEST

/* ---- block cache ---- */

#define VAL_MAGIC 0x5ca1ab1eu

struct tval {
	unsigned magic;
	uint64_t file;
	uint64_t offset;
	int id;
	atomic_int *deleted;
};

static struct tval *tval_new(atomic_int *deleted, uint64_t file,
			     uint64_t offset, int id)
{
	struct tval *v = malloc(sizeof(*v));
	ck_assert_ptr_nonnull(v);
	v->magic = VAL_MAGIC;
	v->file = file;
	v->offset = offset;
	v->id = id;
	v->deleted = deleted;
	return v;
}

static void tval_delete(void *p)
{
	struct tval *v = p;
	if (v->magic != VAL_MAGIC)
		abort(); /* freed twice or corrupted; ASan reports the rest */
	v->magic = 0;
	atomic_fetch_add(v->deleted, 1);
	free(v);
}

/* Insert a fresh value and release it at once. */
static void put(struct block_cache *c, atomic_int *deleted, uint64_t file,
		uint64_t offset, int id, size_t charge)
{
	struct cache_handle *h = block_cache_insert(
		c, file, offset, tval_new(deleted, file, offset, id), charge,
		tval_delete);
	ck_assert_ptr_nonnull(h);
	block_cache_release(c, h);
}

/* The id cached under (file, offset), or -1 on a miss. */
static int get(struct block_cache *c, uint64_t file, uint64_t offset)
{
	struct cache_handle *h = block_cache_lookup(c, file, offset);
	if (!h)
		return -1;
	struct tval *v = block_cache_value(h);
	ck_assert_uint_eq(v->magic, VAL_MAGIC);
	ck_assert_uint_eq(v->file, file);
	ck_assert_uint_eq(v->offset, offset);
	int id = v->id;
	block_cache_release(c, h);
	return id;
}

static uint64_t in_use(struct block_cache *c)
{
	uint64_t bytes;
	block_cache_stats(c, NULL, NULL, &bytes);
	return bytes;
}

#define SHARD_FILE 7

/*
 * Fill offs[0..n) with block offsets of file SHARD_FILE that land in the
 * same shard as offset 0 (offs[0] = 0).  With capacity 16 every shard holds
 * one byte, so inserting a key of charge 1 evicts offset 0 exactly when it
 * shares its shard.
 */
static void same_shard_offsets(uint64_t *offs, int n)
{
	atomic_int deleted = 0;
	struct block_cache *c = block_cache_new(16);
	ck_assert_ptr_nonnull(c);
	put(c, &deleted, SHARD_FILE, 0, 0, 1);
	offs[0] = 0;
	int found = 1;
	for (uint64_t off = 4096; found < n; off += 4096) {
		ck_assert_uint_lt(off, (uint64_t)1 << 32);
		put(c, &deleted, SHARD_FILE, off, 0, 1);
		if (get(c, SHARD_FILE, 0) < 0) {
			offs[found++] = off;
			put(c, &deleted, SHARD_FILE, 0, 0, 1);
		}
	}
	block_cache_free(c);
}

START_TEST(test_cache_basic)
{
	atomic_int deleted = 0;
	struct block_cache *c = block_cache_new(1 << 20);
	ck_assert_ptr_nonnull(c);
	struct tval *a = tval_new(&deleted, 1, 0, 10);
	struct cache_handle *h = block_cache_insert(c, 1, 0, a, 100, tval_delete);
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_eq(block_cache_value(h), a);
	block_cache_release(c, h);

	ck_assert_int_eq(get(c, 1, 0), 10);
	ck_assert_int_eq(get(c, 1, 4096), -1);
	ck_assert_int_eq(get(c, 2, 0), -1);
	put(c, &deleted, 2, 0, 20, 50);
	ck_assert_int_eq(get(c, 2, 0), 20);
	ck_assert_int_eq(get(c, 1, 0), 10);

	/* Two handles on one entry at once. */
	struct cache_handle *h1 = block_cache_lookup(c, 1, 0);
	struct cache_handle *h2 = block_cache_lookup(c, 1, 0);
	ck_assert_ptr_nonnull(h1);
	ck_assert_ptr_eq(block_cache_value(h1), block_cache_value(h2));
	block_cache_release(c, h1);
	block_cache_release(c, h2);

	uint64_t hits, misses, bytes;
	block_cache_stats(c, &hits, &misses, &bytes);
	ck_assert_uint_eq(hits, 5);
	ck_assert_uint_eq(misses, 2);
	ck_assert_uint_eq(bytes, 150);
	ck_assert_int_eq(deleted, 0);
	block_cache_free(c);
	ck_assert_int_eq(deleted, 2);
}
END_TEST

START_TEST(test_cache_lru_order)
{
	uint64_t k[5];
	same_shard_offsets(k, 5);

	atomic_int deleted = 0;
	struct block_cache *c = block_cache_new(16 * 3); /* 3 per shard */
	ck_assert_ptr_nonnull(c);
	put(c, &deleted, SHARD_FILE, k[0], 0, 1);
	put(c, &deleted, SHARD_FILE, k[1], 1, 1);
	put(c, &deleted, SHARD_FILE, k[2], 2, 1);
	/* Using k0 makes it the most recent: order k1 k2 k0. */
	ck_assert_int_eq(get(c, SHARD_FILE, k[0]), 0);
	put(c, &deleted, SHARD_FILE, k[3], 3, 1); /* evicts k1 */
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(get(c, SHARD_FILE, k[1]), -1);
	/* Order is now k2 k0 k3; reading them in this order keeps it. */
	ck_assert_int_eq(get(c, SHARD_FILE, k[2]), 2);
	ck_assert_int_eq(get(c, SHARD_FILE, k[0]), 0);
	ck_assert_int_eq(get(c, SHARD_FILE, k[3]), 3);
	put(c, &deleted, SHARD_FILE, k[4], 4, 1); /* evicts k2 */
	ck_assert_int_eq(deleted, 2);
	ck_assert_int_eq(get(c, SHARD_FILE, k[2]), -1);
	ck_assert_int_eq(get(c, SHARD_FILE, k[0]), 0);
	/* A charge of 2 evicts the two oldest: k3 then k4. */
	put(c, &deleted, SHARD_FILE, k[1], 11, 2);
	ck_assert_int_eq(deleted, 4);
	ck_assert_int_eq(get(c, SHARD_FILE, k[3]), -1);
	ck_assert_int_eq(get(c, SHARD_FILE, k[4]), -1);
	ck_assert_int_eq(get(c, SHARD_FILE, k[0]), 0);
	ck_assert_int_eq(get(c, SHARD_FILE, k[1]), 11);
	ck_assert_uint_eq(in_use(c), 3);
	block_cache_free(c);
	ck_assert_int_eq(deleted, 6);
}
END_TEST

/* Across all shards the cache never holds more than its capacity, and the
 * newest entries are retained. */
START_TEST(test_cache_capacity_bound)
{
	atomic_int deleted = 0;
	struct block_cache *c = block_cache_new(16 * 100);
	ck_assert_ptr_nonnull(c);
	for (int i = 0; i < 5000; i++) {
		put(c, &deleted, 3, (uint64_t)i * 4096, i, 10);
		ck_assert_uint_le(in_use(c), 16 * 100);
	}
	/* 5000 keys over 16 shards fill every shard. */
	ck_assert_uint_eq(in_use(c), 16 * 100);
	ck_assert_int_eq(deleted, 5000 - 160);
	ck_assert_int_eq(get(c, 3, 4999 * 4096), 4999);
	ck_assert_int_eq(get(c, 3, 0), -1);
	block_cache_free(c);
	ck_assert_int_eq(deleted, 5000);
}
END_TEST

START_TEST(test_cache_pinned)
{
	atomic_int deleted = 0;
	struct block_cache *c = block_cache_new(16 * 4);
	ck_assert_ptr_nonnull(c);
	struct tval *p = tval_new(&deleted, 9, 0, 99);
	struct cache_handle *hp = block_cache_insert(c, 9, 0, p, 1, tval_delete);
	ck_assert_ptr_nonnull(hp);
	for (int i = 1; i <= 2000; i++)
		put(c, &deleted, 9, (uint64_t)i * 4096, i, 1);
	/* The pinned entry survived and is still found. */
	ck_assert_uint_eq(p->magic, VAL_MAGIC);
	ck_assert_int_eq(get(c, 9, 0), 99);
	ck_assert_int_eq(deleted, 2000 - (16 * 4 - 1));
	block_cache_release(c, hp);
	ck_assert_int_eq(get(c, 9, 0), 99); /* kept: it fits */
	block_cache_free(c);
	ck_assert_int_eq(deleted, 2001);

	/* Pinned entries may push a shard over capacity; the excess goes as
	 * they are released. */
	uint64_t k[2];
	same_shard_offsets(k, 2);
	deleted = 0;
	c = block_cache_new(16); /* one byte per shard */
	ck_assert_ptr_nonnull(c);
	struct cache_handle *h0 = block_cache_insert(
		c, SHARD_FILE, k[0], tval_new(&deleted, SHARD_FILE, k[0], 0), 1,
		tval_delete);
	struct cache_handle *h1 = block_cache_insert(
		c, SHARD_FILE, k[1], tval_new(&deleted, SHARD_FILE, k[1], 1), 1,
		tval_delete);
	ck_assert_ptr_nonnull(h0);
	ck_assert_ptr_nonnull(h1);
	ck_assert_uint_eq(in_use(c), 2);
	ck_assert_int_eq(get(c, SHARD_FILE, k[0]), 0);
	ck_assert_int_eq(deleted, 0);
	block_cache_release(c, h0); /* over capacity: k0 goes */
	ck_assert_int_eq(deleted, 1);
	ck_assert_uint_eq(in_use(c), 1);
	block_cache_release(c, h1); /* fits: k1 stays */
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(get(c, SHARD_FILE, k[1]), 1);
	block_cache_free(c);
	ck_assert_int_eq(deleted, 2);
}
END_TEST

START_TEST(test_cache_replace)
{
	atomic_int deleted = 0;
	struct block_cache *c = block_cache_new(1 << 16);
	ck_assert_ptr_nonnull(c);
	/* Unpinned old entry: freed at once. */
	put(c, &deleted, 1, 0, 1, 100);
	put(c, &deleted, 1, 0, 2, 30);
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(get(c, 1, 0), 2);
	ck_assert_uint_eq(in_use(c), 30);

	/* Pinned old entry: still readable, freed at its release. */
	struct cache_handle *old = block_cache_lookup(c, 1, 0);
	ck_assert_ptr_nonnull(old);
	put(c, &deleted, 1, 0, 3, 40);
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(((struct tval *)block_cache_value(old))->id, 2);
	ck_assert_int_eq(get(c, 1, 0), 3);
	ck_assert_uint_eq(in_use(c), 40);
	block_cache_release(c, old);
	ck_assert_int_eq(deleted, 2);
	ck_assert_int_eq(get(c, 1, 0), 3);
	block_cache_free(c);
	ck_assert_int_eq(deleted, 3);
}
END_TEST

START_TEST(test_cache_capacity_zero)
{
	atomic_int deleted = 0;
	struct block_cache *c = block_cache_new(0);
	ck_assert_ptr_nonnull(c);
	struct tval *v = tval_new(&deleted, 1, 0, 5);
	struct cache_handle *h = block_cache_insert(c, 1, 0, v, 0, tval_delete);
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_eq(block_cache_value(h), v);
	ck_assert_int_eq(get(c, 1, 0), -1); /* not retained, even pinned */
	ck_assert_uint_eq(in_use(c), 0);
	ck_assert_int_eq(deleted, 0);
	block_cache_release(c, h);
	ck_assert_int_eq(deleted, 1);
	put(c, &deleted, 1, 0, 6, 4096);
	ck_assert_int_eq(deleted, 2);
	block_cache_free(c);
	ck_assert_int_eq(deleted, 2);

	/* A charge above the shard's capacity is not retained either, and
	 * does not flush the shard. */
	deleted = 0;
	c = block_cache_new(16 * 100);
	ck_assert_ptr_nonnull(c);
	put(c, &deleted, 2, 0, 1, 10);
	h = block_cache_insert(c, 2, 4096, tval_new(&deleted, 2, 4096, 2),
			       1000, tval_delete);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(get(c, 2, 4096), -1);
	block_cache_release(c, h);
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(get(c, 2, 0), 1);
	block_cache_free(c);
	ck_assert_int_eq(deleted, 2);
}
END_TEST

/* ---- multithreaded hammer ---- */

#define HAMMER_THREADS 3
#define HAMMER_HELD 4
#define HAMMER_KEYS 512

struct hammer {
	struct block_cache *c;
	atomic_int deleted;
	atomic_int allocated;
	atomic_int failures;
	double seconds;
};

struct hammer_thread {
	struct hammer *hm;
	uint64_t seed;
	uint64_t ops;
};

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool hammer_check(struct cache_handle *h, uint64_t file, uint64_t off)
{
	struct tval *v = block_cache_value(h);
	return v->magic == VAL_MAGIC && v->file == file && v->offset == off;
}

static void *hammer_run(void *arg)
{
	struct hammer_thread *t = arg;
	struct hammer *hm = t->hm;
	struct cache_handle *held[HAMMER_HELD] = { 0 };
	double end = now_seconds() + hm->seconds;
	while ((t->ops & 1023) || now_seconds() < end) {
		t->ops++;
		uint64_t r = xorshift(&t->seed);
		uint64_t file = 1 + r % 3;
		uint64_t off = (r >> 8) % HAMMER_KEYS * 4096;
		struct cache_handle *h = NULL;
		if ((r >> 40) % 16 != 0) /* 1 in 16: insert regardless */
			h = block_cache_lookup(hm->c, file, off);
		if (!h) {
			struct tval *v = malloc(sizeof(*v));
			if (!v)
				abort();
			v->magic = VAL_MAGIC;
			v->file = file;
			v->offset = off;
			v->id = 0;
			v->deleted = &hm->deleted;
			atomic_fetch_add(&hm->allocated, 1);
			h = block_cache_insert(hm->c, file, off, v,
					       1 + (r >> 48) % 16, tval_delete);
			if (!h)
				abort();
		}
		if (!hammer_check(h, file, off))
			atomic_fetch_add(&hm->failures, 1);
		int slot = (int)((r >> 56) % HAMMER_HELD);
		if (held[slot]) {
			struct tval *v = block_cache_value(held[slot]);
			if (v->magic != VAL_MAGIC)
				atomic_fetch_add(&hm->failures, 1);
			block_cache_release(hm->c, held[slot]);
		}
		held[slot] = h;
	}
	for (int i = 0; i < HAMMER_HELD; i++)
		if (held[i])
			block_cache_release(hm->c, held[i]);
	return NULL;
}

START_TEST(test_cache_hammer)
{
	struct hammer hm = { .seconds = 1.5 };
	atomic_init(&hm.deleted, 0);
	atomic_init(&hm.allocated, 0);
	atomic_init(&hm.failures, 0);
	/* About half the working set: hits, misses and evictions all common. */
	hm.c = block_cache_new(16 * 512);
	ck_assert_ptr_nonnull(hm.c);
	pthread_t tid[HAMMER_THREADS];
	struct hammer_thread t[HAMMER_THREADS];
	for (int i = 0; i < HAMMER_THREADS; i++) {
		t[i] = (struct hammer_thread){ &hm, 0x9e3779b97f4a7c15ull * (i + 1), 0 };
		ck_assert_int_eq(pthread_create(&tid[i], NULL, hammer_run, &t[i]), 0);
	}
	uint64_t ops = 0;
	for (int i = 0; i < HAMMER_THREADS; i++) {
		pthread_join(tid[i], NULL);
		ops += t[i].ops;
	}
	ck_assert_int_eq(hm.failures, 0);
	uint64_t hits, misses, bytes;
	block_cache_stats(hm.c, &hits, &misses, &bytes);
	ck_assert_uint_le(bytes, 16 * 512);
	printf("cache hammer: %llu ops, %llu hits, %llu misses, %d values\n",
	       (unsigned long long)ops, (unsigned long long)hits,
	       (unsigned long long)misses, atomic_load(&hm.allocated));
	ck_assert_int_lt(atomic_load(&hm.deleted), atomic_load(&hm.allocated));
	block_cache_free(hm.c);
	ck_assert_int_eq(atomic_load(&hm.deleted), atomic_load(&hm.allocated));
}
END_TEST

static Suite *bloom_suite(void)
{
	Suite *s = suite_create("bloom");
	TCase *tc = tcase_create("bloom");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_bloom_fpr, 0,
			    sizeof(bits_per_key_cases) /
				    sizeof(bits_per_key_cases[0]));
	tcase_add_test(tc, test_bloom_build_forms_agree);
	tcase_add_test(tc, test_bloom_probes_distinct);
	tcase_add_test(tc, test_bloom_empty);
	tcase_add_test(tc, test_bloom_small_bits_per_key);
	tcase_add_test(tc, test_bloom_malformed);
	suite_add_tcase(s, tc);
	return s;
}

static Suite *cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("cache");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cache_basic);
	tcase_add_test(tc, test_cache_lru_order);
	tcase_add_test(tc, test_cache_capacity_bound);
	tcase_add_test(tc, test_cache_pinned);
	tcase_add_test(tc, test_cache_replace);
	tcase_add_test(tc, test_cache_capacity_zero);
	tcase_add_test(tc, test_cache_hammer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bloom_suite());
	srunner_add_suite(sr, cache_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
