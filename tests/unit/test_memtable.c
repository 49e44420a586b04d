/*
 * test_memtable: the memtable (suite "memtable"), against a model.
 *
 * Random entries (short keys over a tiny alphabet that includes 0x00 and
 * 0xff, so user keys repeat and share prefixes around the two 8-byte
 * cached prefixes) are inserted and compared with a sorted reference array:
 * forward and backward iteration, seeks to random targets, and
 * memtable_get at random snapshots.  Also: visibility by sequence, empty
 * keys and values, 1 MiB values, memory accounting, and one writer racing
 * two lock-free readers.  Randomized tests print their seed; set
 * LSMFS_TEST_SEED to replay one.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coding.h"
#include "dbformat.h"
#include "memtable.h"

/* ---- helpers ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t seed_rng(const char *test)
{
	const char *env = getenv("LSMFS_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0)
			    : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
	if (!seed)
		seed = 1;
	rng_state = seed;
	printf("%s: seed %llu (LSMFS_TEST_SEED to replay)\n", test,
	       (unsigned long long)seed);
	fflush(stdout);
	return seed;
}

struct ref {
	uint8_t ikey[32]; /* user key (<= 22) + tag */
	size_t ilen;
	uint8_t val[32];
	size_t vlen;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	return ikey_compare(x->ikey, x->ilen, y->ikey, y->ilen);
}

static const uint8_t alphabet[] = { 0x00, 0x01, 'a', 0xff };

static size_t random_ukey(uint8_t *k)
{
	/* Lengths 0..22 straddle the two 8-byte prefixes the skiplist
	 * caches; half the keys start with 14 bytes of 'a', so that keys
	 * share the first prefix and part or all of the second. */
	size_t len = rnd() % 23;
	size_t same = rnd() % 2 ? 14 : 0;
	for (size_t i = 0; i < len; i++)
		k[i] = i < same ? 'a' : alphabet[rnd() % sizeof(alphabet)];
	return len;
}

static void make_ikey(uint8_t *out, size_t *olen, const uint8_t *uk, size_t ulen,
		      uint64_t seq, int type)
{
	if (ulen)
		memcpy(out, uk, ulen);
	put_le64(out + ulen, ikey_pack_tag(seq, type));
	*olen = ulen + IKEY_TAG_LEN;
}

/* Index of the first ref >= key, n if none. */
static size_t lower_bound(const struct ref *r, size_t n, const uint8_t *k, size_t klen)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ikey_compare(r[mid].ikey, r[mid].ilen, k, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void check_at(struct iter *it, const struct ref *r)
{
	ck_assert(iter_valid(it));
	size_t kn, vn;
	const uint8_t *k = iter_key(it, &kn);
	const uint8_t *v = iter_value(it, &vn);
	ck_assert_uint_eq(kn, r->ilen);
	ck_assert(memcmp(k, r->ikey, kn) == 0);
	ck_assert_uint_eq(vn, r->vlen);
	ck_assert(vn == 0 || memcmp(v, r->val, vn) == 0);
}

/* ---- tests ---- */

#define NRANDOM 20000

START_TEST(test_random_model)
{
	seed_rng("test_random_model");
	struct memtable *m = memtable_new();
	ck_assert_ptr_nonnull(m);
	struct ref *refs = calloc(NRANDOM, sizeof(*refs));
	ck_assert_ptr_nonnull(refs);

	/* Unique sequences (1..N in random order) make (key, seq) unique. */
	uint64_t *seqs = malloc(NRANDOM * sizeof(*seqs));
	ck_assert_ptr_nonnull(seqs);
	for (size_t i = 0; i < NRANDOM; i++)
		seqs[i] = i + 1;
	for (size_t i = NRANDOM - 1; i > 0; i--) {
		size_t j = rnd() % (i + 1);
		uint64_t t = seqs[i];
		seqs[i] = seqs[j];
		seqs[j] = t;
	}
	for (size_t i = 0; i < NRANDOM; i++) {
		struct ref *r = &refs[i];
		uint8_t uk[24];
		size_t ulen = random_ukey(uk);
		int type = rnd() % 4 ? KTYPE_VALUE : KTYPE_DELETE;
		make_ikey(r->ikey, &r->ilen, uk, ulen, seqs[i], type);
		r->vlen = type == KTYPE_VALUE ? rnd() % sizeof(r->val) : 0;
		for (size_t j = 0; j < r->vlen; j++)
			r->val[j] = (uint8_t)rnd();
	}
	/* Loop 1 adds ascending runs (the skiplist's splice: each add after
	 * the last starts from it), of 1 to 300 entries, and loop 2 one
	 * ascending run of all, between random ones. */
	for (size_t i = 0; _i && i < NRANDOM;) {
		size_t run = _i == 2 ? NRANDOM : 1 + rnd() % 300;
		if (run > NRANDOM - i)
			run = NRANDOM - i;
		qsort(&refs[i], run, sizeof(*refs), ref_cmp);
		i += run;
	}
	for (size_t i = 0; i < NRANDOM; i++) {
		struct ref *r = &refs[i];
		size_t ulen = r->ilen - IKEY_TAG_LEN;
		uint64_t tag = get_le64(r->ikey + ulen);
		ck_assert_int_eq(memtable_add(m, tag >> 8, (int)(tag & 0xff), r->ikey,
					      ulen, r->val, r->vlen), 0);
	}
	ck_assert_uint_eq(memtable_count(m), NRANDOM);
	qsort(refs, NRANDOM, sizeof(*refs), ref_cmp);

	struct iter *it = memtable_iter_new(m);
	ck_assert_ptr_nonnull(it);
	/* The iterator's reference keeps the memtable alive on its own. */
	memtable_unref(m);

	size_t i = 0;
	for (iter_seek_first(it); iter_valid(it); iter_next(it))
		check_at(it, &refs[i++]);
	ck_assert_uint_eq(i, NRANDOM);
	ck_assert_int_eq(iter_status(it), 0);

	i = NRANDOM;
	for (iter_seek_last(it); iter_valid(it); iter_prev(it))
		check_at(it, &refs[--i]);
	ck_assert_uint_eq(i, 0);

	for (int t = 0; t < 5000; t++) {
		uint8_t uk[24], target[32];
		size_t ulen = random_ukey(uk), tlen;
		make_ikey(target, &tlen, uk, ulen, rnd() % (NRANDOM + 2),
			  (int)(rnd() % 2));
		if (t % 50 == 0)
			tlen = rnd() % IKEY_TAG_LEN; /* a short target */
		size_t want = lower_bound(refs, NRANDOM, target, tlen);
		iter_seek(it, target, tlen);
		if (want == NRANDOM) {
			ck_assert(!iter_valid(it));
			continue;
		}
		check_at(it, &refs[want]);
		/* A few steps either way from a seek. */
		int steps = (int)(rnd() % 4);
		size_t pos = want;
		for (int s = 0; s < steps && pos + 1 < NRANDOM; s++) {
			iter_next(it);
			check_at(it, &refs[++pos]);
		}
		for (int s = 0; s < steps + 1; s++) {
			iter_prev(it);
			if (pos == 0) {
				ck_assert(!iter_valid(it));
				break;
			}
			check_at(it, &refs[--pos]);
		}
	}

	iter_destroy(it);
	free(seqs);
	free(refs);
}
END_TEST

START_TEST(test_random_get)
{
	seed_rng("test_random_get");
	struct memtable *m = memtable_new();
	ck_assert_ptr_nonnull(m);
	struct ref *refs = calloc(NRANDOM, sizeof(*refs));
	ck_assert_ptr_nonnull(refs);
	for (size_t i = 0; i < NRANDOM; i++) {
		struct ref *r = &refs[i];
		uint8_t uk[24];
		size_t ulen = random_ukey(uk);
		int type = rnd() % 3 ? KTYPE_VALUE : KTYPE_DELETE;
		/* Sequences in insertion order, as the store assigns them. */
		make_ikey(r->ikey, &r->ilen, uk, ulen, i + 1, type);
		r->vlen = type == KTYPE_VALUE ? rnd() % sizeof(r->val) : 0;
		for (size_t j = 0; j < r->vlen; j++)
			r->val[j] = (uint8_t)rnd();
		ck_assert_int_eq(memtable_add(m, i + 1, type, uk, ulen, r->val,
					      r->vlen), 0);
	}
	qsort(refs, NRANDOM, sizeof(*refs), ref_cmp);

	for (int t = 0; t < 20000; t++) {
		uint8_t uk[24];
		size_t ulen = random_ukey(uk);
		uint64_t snap = rnd() % (NRANDOM + 2);
		uint8_t target[32];
		size_t tlen;
		make_ikey(target, &tlen, uk, ulen, snap, KTYPE_SEEK);
		size_t w = lower_bound(refs, NRANDOM, target, tlen);
		enum memtable_lookup want = MEMTABLE_MISSING;
		if (w < NRANDOM && refs[w].ilen == tlen &&
		    (ulen == 0 || memcmp(refs[w].ikey, uk, ulen) == 0)) {
			struct parsed_ikey p;
			ck_assert_int_eq(ikey_parse(refs[w].ikey, refs[w].ilen, &p), 0);
			ck_assert_uint_le(p.seq, snap);
			want = p.type == KTYPE_VALUE ? MEMTABLE_FOUND : MEMTABLE_DELETED;
		}
		const uint8_t *v = NULL;
		size_t vn = 0;
		enum memtable_lookup got = memtable_get(m, uk, ulen, snap, &v, &vn);
		ck_assert_int_eq(got, want);
		if (got == MEMTABLE_FOUND) {
			ck_assert_uint_eq(vn, refs[w].vlen);
			ck_assert(vn == 0 || memcmp(v, refs[w].val, vn) == 0);
		}
	}
	memtable_unref(m);
	free(refs);
}
END_TEST

static enum memtable_lookup get_str(struct memtable *m, const char *k, uint64_t seq,
				    char *out)
{
	const uint8_t *v;
	size_t vn;
	enum memtable_lookup r = memtable_get(m, k, strlen(k), seq, &v, &vn);
	out[0] = 0;
	if (r == MEMTABLE_FOUND) {
		memcpy(out, v, vn);
		out[vn] = 0;
	}
	return r;
}

START_TEST(test_visibility)
{
	struct memtable *m = memtable_new();
	ck_assert_ptr_nonnull(m);
	char buf[64];
	ck_assert_int_eq(get_str(m, "k", SEQ_MAX, buf), MEMTABLE_MISSING);
	/* Out of sequence order on purpose: the list orders, not the caller. */
	ck_assert_int_eq(memtable_add(m, 20, KTYPE_VALUE, "k", 1, "v20", 3), 0);
	ck_assert_int_eq(memtable_add(m, 10, KTYPE_VALUE, "k", 1, "v10", 3), 0);
	ck_assert_int_eq(memtable_add(m, 30, KTYPE_DELETE, "k", 1, NULL, 0), 0);
	ck_assert_int_eq(memtable_add(m, 40, KTYPE_VALUE, "k", 1, "v40", 3), 0);
	ck_assert_int_eq(memtable_add(m, 15, KTYPE_VALUE, "j", 1, "j15", 3), 0);
	ck_assert_int_eq(memtable_add(m, 16, KTYPE_VALUE, "kk", 2, "kk16", 4), 0);
	ck_assert_uint_eq(memtable_count(m), 6);

	ck_assert_int_eq(get_str(m, "k", 9, buf), MEMTABLE_MISSING);
	ck_assert_int_eq(get_str(m, "k", 10, buf), MEMTABLE_FOUND);
	ck_assert_str_eq(buf, "v10");
	ck_assert_int_eq(get_str(m, "k", 19, buf), MEMTABLE_FOUND);
	ck_assert_str_eq(buf, "v10");
	ck_assert_int_eq(get_str(m, "k", 20, buf), MEMTABLE_FOUND);
	ck_assert_str_eq(buf, "v20");
	ck_assert_int_eq(get_str(m, "k", 29, buf), MEMTABLE_FOUND);
	ck_assert_str_eq(buf, "v20");
	ck_assert_int_eq(get_str(m, "k", 30, buf), MEMTABLE_DELETED);
	ck_assert_int_eq(get_str(m, "k", 39, buf), MEMTABLE_DELETED);
	ck_assert_int_eq(get_str(m, "k", 40, buf), MEMTABLE_FOUND);
	ck_assert_str_eq(buf, "v40");
	ck_assert_int_eq(get_str(m, "k", SEQ_MAX, buf), MEMTABLE_FOUND);
	ck_assert_str_eq(buf, "v40");
	/* Neighbours do not leak into each other. */
	ck_assert_int_eq(get_str(m, "j", 14, buf), MEMTABLE_MISSING);
	ck_assert_int_eq(get_str(m, "j", 15, buf), MEMTABLE_FOUND);
	ck_assert_str_eq(buf, "j15");
	ck_assert_int_eq(get_str(m, "kk", 15, buf), MEMTABLE_MISSING);
	ck_assert_int_eq(get_str(m, "kk", 16, buf), MEMTABLE_FOUND);
	ck_assert_int_eq(get_str(m, "", SEQ_MAX, buf), MEMTABLE_MISSING);
	ck_assert_int_eq(get_str(m, "ka", SEQ_MAX, buf), MEMTABLE_MISSING);
	ck_assert_int_eq(get_str(m, "l", SEQ_MAX, buf), MEMTABLE_MISSING);

	/* Iteration order: j, k@40, k@30, k@20, k@10, kk. */
	static const struct {
		const char *k;
		uint64_t seq;
		int type;
	} want[] = { { "j", 15, 1 },  { "k", 40, 1 }, { "k", 30, 0 },
		     { "k", 20, 1 },  { "k", 10, 1 }, { "kk", 16, 1 } };
	struct iter *it = memtable_iter_new(m);
	ck_assert_ptr_nonnull(it);
	size_t i = 0;
	for (iter_seek_first(it); iter_valid(it); iter_next(it), i++) {
		size_t kn;
		const uint8_t *k = iter_key(it, &kn);
		struct parsed_ikey p;
		ck_assert_int_eq(ikey_parse(k, kn, &p), 0);
		ck_assert_uint_eq(p.ulen, strlen(want[i].k));
		ck_assert(memcmp(p.ukey, want[i].k, p.ulen) == 0);
		ck_assert_uint_eq(p.seq, want[i].seq);
		ck_assert_int_eq(p.type, want[i].type);
	}
	ck_assert_uint_eq(i, 6);
	/* Seeking to (k, 25) lands on k@20. */
	uint8_t t[16];
	size_t tn;
	make_ikey(t, &tn, (const uint8_t *)"k", 1, 25, KTYPE_SEEK);
	iter_seek(it, t, tn);
	ck_assert(iter_valid(it));
	size_t vn;
	const uint8_t *v = iter_value(it, &vn);
	ck_assert_uint_eq(vn, 3);
	ck_assert(memcmp(v, "v20", 3) == 0);
	iter_destroy(it);
	memtable_unref(m);
}
END_TEST

START_TEST(test_empty)
{
	struct memtable *m = memtable_new();
	ck_assert_ptr_nonnull(m);
	struct iter *it = memtable_iter_new(m);
	ck_assert_ptr_nonnull(it);
	iter_seek_first(it);
	ck_assert(!iter_valid(it));
	iter_seek_last(it);
	ck_assert(!iter_valid(it));
	iter_seek(it, (const uint8_t *)"", 0);
	ck_assert(!iter_valid(it));
	ck_assert_int_eq(iter_status(it), 0);

	/* An empty key and an empty value. */
	ck_assert_int_eq(memtable_add(m, 1, KTYPE_VALUE, "", 0, "", 0), 0);
	ck_assert_int_eq(memtable_add(m, 2, KTYPE_VALUE, NULL, 0, "x", 1), 0);
	ck_assert_int_eq(memtable_add(m, 3, KTYPE_VALUE, "a", 1, NULL, 0), 0);
	const uint8_t *v;
	size_t vn;
	ck_assert_int_eq(memtable_get(m, "", 0, SEQ_MAX, &v, &vn), MEMTABLE_FOUND);
	ck_assert_uint_eq(vn, 1);
	ck_assert_int_eq(v[0], 'x');
	ck_assert_int_eq(memtable_get(m, "", 0, 1, &v, &vn), MEMTABLE_FOUND);
	ck_assert_uint_eq(vn, 0);
	ck_assert_int_eq(memtable_get(m, "a", 1, 3, &v, &vn), MEMTABLE_FOUND);
	ck_assert_uint_eq(vn, 0);
	ck_assert_int_eq(memtable_get(m, "a", 1, 2, &v, &vn), MEMTABLE_MISSING);

	iter_seek_first(it);
	ck_assert(iter_valid(it));
	size_t kn;
	iter_key(it, &kn);
	ck_assert_uint_eq(kn, IKEY_TAG_LEN);
	iter_seek_last(it);
	ck_assert(iter_valid(it));
	const uint8_t *k = iter_key(it, &kn);
	ck_assert_uint_eq(kn, 1 + IKEY_TAG_LEN);
	ck_assert_int_eq(k[0], 'a');
	iter_value(it, &vn);
	ck_assert_uint_eq(vn, 0);
	iter_destroy(it);
	memtable_unref(m);
}
END_TEST

START_TEST(test_large_values)
{
	const size_t big = 1 << 20;
	uint8_t *val = malloc(big);
	ck_assert_ptr_nonnull(val);
	struct memtable *m = memtable_new();
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(memtable_add(m, 1, KTYPE_VALUE, "small", 5, "s", 1), 0);
	for (int i = 0; i < 4; i++) {
		memset(val, 'A' + i, big);
		char key[16];
		snprintf(key, sizeof(key), "big%d", i);
		size_t before = memtable_memory_usage(m);
		ck_assert_int_eq(memtable_add(m, 10 + (uint64_t)i, KTYPE_VALUE, key,
					      4, val, big), 0);
		size_t grew = memtable_memory_usage(m) - before;
		ck_assert_uint_ge(grew, big);
		ck_assert_uint_le(grew, big + 4096);
		/* Small entries still fit in the current block around them. */
		snprintf(key, sizeof(key), "sm%d", i);
		before = memtable_memory_usage(m);
		ck_assert_int_eq(memtable_add(m, 20 + (uint64_t)i, KTYPE_VALUE, key,
					      3, "t", 1), 0);
		ck_assert_uint_eq(memtable_memory_usage(m), before);
	}
	for (int i = 0; i < 4; i++) {
		char key[16];
		snprintf(key, sizeof(key), "big%d", i);
		const uint8_t *v;
		size_t vn;
		ck_assert_int_eq(memtable_get(m, key, 4, SEQ_MAX, &v, &vn),
				 MEMTABLE_FOUND);
		ck_assert_uint_eq(vn, big);
		ck_assert_int_eq(v[0], 'A' + i);
		ck_assert_int_eq(v[big - 1], 'A' + i);
	}
	const uint8_t *v;
	size_t vn;
	ck_assert_int_eq(memtable_get(m, "small", 5, SEQ_MAX, &v, &vn),
			 MEMTABLE_FOUND);
	ck_assert_uint_eq(vn, 1);
	memtable_unref(m);
	free(val);
}
END_TEST

START_TEST(test_memory_usage)
{
	struct memtable *m = memtable_new();
	ck_assert_ptr_nonnull(m);
	size_t start = memtable_memory_usage(m);
	ck_assert_uint_lt(start, 64 * 1024);
	size_t payload = 0, last = start;
	const int n = 50000;
	for (int i = 0; i < n; i++) {
		char key[32], val[100];
		int kn = snprintf(key, sizeof(key), "key%012d", (i * 7919) % n);
		memset(val, 'v', sizeof(val));
		ck_assert_int_eq(memtable_add(m, (uint64_t)i + 1, KTYPE_VALUE, key,
					      (size_t)kn, val, sizeof(val)), 0);
		payload += (size_t)kn + IKEY_TAG_LEN + sizeof(val);
		size_t now = memtable_memory_usage(m);
		ck_assert_uint_ge(now, last); /* never shrinks */
		last = now;
	}
	size_t used = memtable_memory_usage(m) - start;
	/* At least the payload; at most payload plus per-node overhead
	 * (header, ~1.33 pointers, varints; < 64 bytes) and a block of slack. */
	ck_assert_uint_ge(used, payload);
	ck_assert_uint_le(used, payload + (size_t)n * 64 + 2 * 64 * 1024);
	ck_assert_uint_eq(memtable_count(m), (uint64_t)n);
	memtable_unref(m);
}
END_TEST

START_TEST(test_refcount)
{
	struct memtable *m = memtable_new();
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(memtable_add(m, 1, KTYPE_VALUE, "a", 1, "1", 1), 0);
	memtable_ref(m);
	struct iter *it = memtable_iter_new(m);
	ck_assert_ptr_nonnull(it);
	memtable_unref(m);
	memtable_unref(m);
	/* Only the iterator's reference is left; ASan catches a use after free. */
	iter_seek_first(it);
	ck_assert(iter_valid(it));
	size_t vn;
	const uint8_t *v = iter_value(it, &vn);
	ck_assert_uint_eq(vn, 1);
	ck_assert_int_eq(v[0], '1');
	iter_destroy(it);
}
END_TEST

/* ---- one writer, two lock-free readers ---- */

#define CONC_KEYS 60000

struct conc {
	struct memtable *m;
	atomic_bool done;
	atomic_uint_fast64_t written; /* keys [0, written) are in */
	uint64_t seed;
	atomic_int failed; /* set by a reader, checked after the joins */
	char why[160];
};

/* Key i: "c" + 12 digits of a permutation, so inserts are in random order.
 * Its value is derived from the key, so a reader can check it. */
static size_t conc_key(char *out, uint64_t i)
{
	uint64_t p = (i * 2654435761ULL) % 1000000007ULL;
	return (size_t)snprintf(out, 32, "c%012llu", (unsigned long long)p);
}

static size_t conc_val(uint8_t *out, const uint8_t *k, size_t kn)
{
	size_t n = 1 + (k[kn - 1] % 40);
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(k[(i % kn)] ^ i);
	return n;
}

static void *conc_writer(void *arg)
{
	struct conc *c = arg;
	for (uint64_t i = 0; i < CONC_KEYS; i++) {
		char k[32];
		uint8_t v[64];
		size_t kn = conc_key(k, i);
		size_t vn = conc_val(v, (const uint8_t *)k, kn);
		if (memtable_add(c->m, i + 1, KTYPE_VALUE, k, kn, v, vn))
			abort();
		atomic_store_explicit(&c->written, i + 1, memory_order_release);
	}
	atomic_store(&c->done, true);
	return NULL;
}

static void conc_fail(struct conc *c, const char *why)
{
	int expected = 0;
	if (atomic_compare_exchange_strong(&c->failed, &expected, 1)) {
		snprintf(c->why, sizeof(c->why), "%s", why);
	}
}

/* Well-formed entry whose value matches its key. */
static int conc_entry_ok(struct iter *it)
{
	size_t kn, vn;
	const uint8_t *k = iter_key(it, &kn);
	const uint8_t *v = iter_value(it, &vn);
	struct parsed_ikey p;
	if (ikey_parse(k, kn, &p) || p.ulen != 13 || p.ukey[0] != 'c' ||
	    p.type != KTYPE_VALUE || p.seq == 0 || p.seq > CONC_KEYS)
		return 0;
	char want[32];
	if (conc_key(want, p.seq - 1) != p.ulen || memcmp(want, p.ukey, p.ulen))
		return 0;
	uint8_t wv[64];
	size_t wn = conc_val(wv, p.ukey, p.ulen);
	return wn == vn && memcmp(wv, v, vn) == 0;
}

static void *conc_reader(void *arg)
{
	struct conc *c = arg;
	/* Each reader its own stream. */
	uint64_t r = (c->seed ^ (uint64_t)(uintptr_t)&arg) | 1;
	struct iter *it = memtable_iter_new(c->m);
	if (!it) {
		conc_fail(c, "iter_new");
		return NULL;
	}
	uint64_t last_count = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		bool finished = atomic_load(&c->done);
		uint64_t before = atomic_load_explicit(&c->written, memory_order_acquire);
		/* A full forward scan: strictly increasing, well formed, and
		 * at least every key published before it started. */
		uint64_t n = 0;
		uint8_t prev[32];
		size_t prevn = 0;
		for (iter_seek_first(it); iter_valid(it); iter_next(it), n++) {
			if (!conc_entry_ok(it)) {
				conc_fail(c, "malformed entry in scan");
				goto out;
			}
			size_t kn;
			const uint8_t *k = iter_key(it, &kn);
			if (n && ikey_compare(prev, prevn, k, kn) >= 0) {
				conc_fail(c, "scan out of order");
				goto out;
			}
			memcpy(prev, k, kn);
			prevn = kn;
		}
		if (n < before || n < last_count) {
			conc_fail(c, "scan missed published keys");
			goto out;
		}
		last_count = n;
		/* Point lookups and short backward walks around random seeks. */
		for (int q = 0; q < 200; q++) {
			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			uint64_t w = atomic_load_explicit(&c->written, memory_order_acquire);
			if (!w)
				break;
			uint64_t i = r % w;
			char k[32];
			size_t kn = conc_key(k, i);
			const uint8_t *v;
			size_t vn;
			if (memtable_get(c->m, k, kn, SEQ_MAX, &v, &vn) != MEMTABLE_FOUND) {
				conc_fail(c, "published key not found");
				goto out;
			}
			uint8_t t[32];
			memcpy(t, k, kn);
			put_le64(t + kn, ikey_pack_tag(SEQ_MAX, KTYPE_SEEK));
			iter_seek(it, t, kn + IKEY_TAG_LEN);
			if (!iter_valid(it) || !conc_entry_ok(it)) {
				conc_fail(c, "seek to published key");
				goto out;
			}
			size_t cn;
			const uint8_t *cur = iter_key(it, &cn);
			memcpy(prev, cur, cn);
			prevn = cn;
			for (int s = 0; s < 3; s++) {
				iter_prev(it);
				if (!iter_valid(it))
					break;
				size_t pn;
				const uint8_t *pk = iter_key(it, &pn);
				if (!conc_entry_ok(it) || ikey_compare(pk, pn, prev, prevn) >= 0) {
					conc_fail(c, "prev out of order");
					goto out;
				}
				memcpy(prev, pk, pn);
				prevn = pn;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (finished || t1.tv_sec - t0.tv_sec > 3)
			break;
	}
out:
	iter_destroy(it);
	return NULL;
}

START_TEST(test_concurrent_readers)
{
	struct conc c;
	memset(&c, 0, sizeof(c));
	c.seed = seed_rng("test_concurrent_readers");
	c.m = memtable_new();
	ck_assert_ptr_nonnull(c.m);
	atomic_init(&c.failed, 0);
	atomic_init(&c.done, false);
	atomic_init(&c.written, 0);
	pthread_t w, r1, r2;
	ck_assert_int_eq(pthread_create(&r1, NULL, conc_reader, &c), 0);
	ck_assert_int_eq(pthread_create(&w, NULL, conc_writer, &c), 0);
	ck_assert_int_eq(pthread_create(&r2, NULL, conc_reader, &c), 0);
	pthread_join(w, NULL);
	pthread_join(r1, NULL);
	pthread_join(r2, NULL);
	ck_assert_msg(!atomic_load(&c.failed), "reader: %s", c.why);
	ck_assert_uint_eq(memtable_count(c.m), CONC_KEYS);
	memtable_unref(c.m);
}
END_TEST

static Suite *memtable_suite(void)
{
	Suite *s = suite_create("memtable");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_random_model, 0, 3);
	tcase_add_test(tc, test_random_get);
	tcase_add_test(tc, test_visibility);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_large_values);
	tcase_add_test(tc, test_memory_usage);
	tcase_add_test(tc, test_refcount);
	tcase_add_test(tc, test_concurrent_readers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(memtable_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
