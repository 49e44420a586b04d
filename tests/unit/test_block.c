/*
 * test_block: the prefix-compressed block builder and iterator (suite
 * "block"), store/block.h.
 *
 * Random sorted keys are built into blocks with restart intervals 1, 2 and
 * 16 and read back against the sorted reference: forward, backward, seek
 * (present and absent targets) and prev after seek.  Long keys exercise the
 * heap key buffer.  Damaged blocks (random byte flips, truncations) must
 * never crash or read out of bounds (ASan) and either fail block_init, end
 * with status -EUCLEAN, or yield keys and values inside the block.
 * Randomized tests print their seed; LSMFS_SEED=n replays one.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block.h"
#include "dbformat.h"


/* check's ck_assert_* record every passing assertion (a write per call);
 * hot loops use these, which only call into check on failure. */
#define REQUIRE(c)                                                           \
	do {                                                                 \
		if (!(c))                                                    \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c);   \
	} while (0)
#define REQUIRE_MSG(c, ...)                                                  \
	do {                                                                 \
		if (!(c))                                                    \
			ck_abort_msg(__VA_ARGS__);                           \
	} while (0)
#define REQUIRE_EQ(a, b)                                                     \
	do {                                                                 \
		long long a_ = (long long)(a), b_ = (long long)(b);          \
		if (a_ != b_)                                                \
			ck_abort_msg("%s:%d: %s == %s: %lld != %lld",        \
				     __FILE__, __LINE__, #a, #b, a_, b_);    \
	} while (0)
static unsigned long long rng_state;

static unsigned long long rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static unsigned long long seed_for(const char *test)
{
	const char *env = getenv("LSMFS_SEED");
	unsigned long long s = env ? strtoull(env, NULL, 0)
				   : (unsigned long long)time(NULL) ^
					     (unsigned long long)clock();
	if (s == 0)
		s = 1;
	printf("%s: seed %llu\n", test, s);
	fflush(stdout);
	rng_state = s;
	return s;
}

static int bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b,
		     size_t blen)
{
	return ukey_compare(a, alen, b, blen);
}

struct kv {
	uint8_t *k;
	size_t klen;
	uint8_t *v;
	size_t vlen;
};

static int kv_sort_cmp(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	return bytes_cmp(x->k, x->klen, y->k, y->klen);
}

/* n random distinct keys with shared prefixes, sorted. */
static struct kv *random_kvs(size_t n, size_t maxklen, size_t *out_n)
{
	struct kv *kv = calloc(n, sizeof(*kv));
	ck_assert_ptr_nonnull(kv);
	static const char *prefixes[] = { "", "a", "apple/", "apple/pie/",
					  "b/very/long/common/prefix/" };
	for (size_t i = 0; i < n; i++) {
		const char *pre = prefixes[rng() % 5];
		size_t pl = strlen(pre);
		size_t extra = 1 + rng() % maxklen;
		kv[i].klen = pl + extra;
		kv[i].k = malloc(kv[i].klen);
		memcpy(kv[i].k, pre, pl);
		for (size_t j = 0; j < extra; j++)
			kv[i].k[pl + j] = (uint8_t)(rng() % 4 == 0 ? rng() : 'a' + rng() % 4);
		kv[i].vlen = rng() % 3 == 0 ? 0 : rng() % 200;
		kv[i].v = malloc(kv[i].vlen + 1);
		for (size_t j = 0; j < kv[i].vlen; j++)
			kv[i].v[j] = (uint8_t)rng();
	}
	qsort(kv, n, sizeof(*kv), kv_sort_cmp);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && bytes_cmp(kv[m - 1].k, kv[m - 1].klen, kv[i].k,
				   kv[i].klen) == 0) {
			free(kv[i].k);
			free(kv[i].v);
			continue;
		}
		kv[m++] = kv[i];
	}
	*out_n = m;
	return kv;
}

static void free_kvs(struct kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].k);
		free(kv[i].v);
	}
	free(kv);
}

/* Build kv into a block; return a malloc'd exact-size copy of it. */
static uint8_t *build(const struct kv *kv, size_t n, size_t interval,
		      size_t *len)
{
	struct block_builder bb;
	block_builder_init(&bb, interval);
	for (size_t i = 0; i < n; i++)
		block_builder_add(&bb, kv[i].k, kv[i].klen, kv[i].v, kv[i].vlen);
	ck_assert_uint_eq(bb.entries, n);
	size_t est = block_builder_size(&bb);
	struct buf *out = block_builder_finish(&bb);
	ck_assert_int_eq(block_builder_ok(&bb), 0);
	ck_assert_uint_eq(out->len, est);
	uint8_t *copy = malloc(out->len);
	memcpy(copy, out->data, out->len);
	*len = out->len;
	block_builder_free(&bb);
	return copy;
}

static void expect_at(struct block_iter *it, const struct kv *kv, size_t i)
{
	REQUIRE_MSG(block_iter_valid(it), "entry %zu: iterator invalid", i);
	REQUIRE_EQ(it->klen, kv[i].klen);
	REQUIRE_MSG(memcmp(it->key, kv[i].k, kv[i].klen) == 0,
		      "entry %zu: key differs", i);
	REQUIRE_EQ(it->vlen, kv[i].vlen);
	REQUIRE(kv[i].vlen == 0 || memcmp(it->val, kv[i].v, kv[i].vlen) == 0);
}

/* First index with key >= t. */
static size_t lower_bound(const struct kv *kv, size_t n, const uint8_t *t,
			  size_t tl)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (bytes_cmp(kv[mid].k, kv[mid].klen, t, tl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void check_block(const struct kv *kv, size_t n, size_t interval)
{
	size_t len;
	uint8_t *data = build(kv, n, interval, &len);
	struct block b;
	REQUIRE_EQ(block_init(&b, data, len), 0);
	REQUIRE_EQ(b.num_restarts, n ? (n + interval - 1) / interval : 1);

	struct block_iter it;
	block_iter_init(&it, bytes_cmp);
	block_iter_reset(&it, &b);

	/* Forward. */
	size_t i = 0;
	for (block_iter_seek_first(&it); block_iter_valid(&it);
	     block_iter_next(&it))
		expect_at(&it, kv, i++);
	REQUIRE_EQ(it.status, 0);
	REQUIRE_EQ(i, n);

	/* Backward. */
	i = n;
	for (block_iter_seek_last(&it); block_iter_valid(&it);
	     block_iter_prev(&it))
		expect_at(&it, kv, --i);
	REQUIRE_EQ(it.status, 0);
	REQUIRE_EQ(i, 0);

	/* Seeks: every key, and random targets, then a few steps each way. */
	for (size_t s = 0; s < 2 * n + 10; s++) {
		uint8_t t[600];
		size_t tl;
		if (s < n && n) {
			size_t j = rng() % n;
			tl = kv[j].klen;
			memcpy(t, kv[j].k, tl);
			if (rng() % 2 && tl < sizeof(t)) /* just after kv[j] */
				t[tl++] = 0;
		} else {
			tl = rng() % 12;
			for (size_t j = 0; j < tl; j++)
				t[j] = (uint8_t)('a' + rng() % 5);
		}
		size_t want = lower_bound(kv, n, t, tl);
		block_iter_seek(&it, t, tl);
		if (want == n) {
			REQUIRE(!block_iter_valid(&it));
			continue;
		}
		expect_at(&it, kv, want);
		if (rng() % 2) {
			size_t j = want;
			for (int k = 0; k < 20 && j > 0; k++) {
				block_iter_prev(&it);
				expect_at(&it, kv, --j);
			}
			if (j == 0) {
				block_iter_prev(&it);
				REQUIRE(!block_iter_valid(&it));
			}
		} else {
			size_t j = want;
			for (int k = 0; k < 20 && j + 1 < n; k++) {
				block_iter_next(&it);
				expect_at(&it, kv, ++j);
			}
		}
	}
	REQUIRE_EQ(it.status, 0);
	block_iter_release(&it);

	/* The same through the struct iter interface. */
	struct iter *gi = block_iter_new(&b, bytes_cmp);
	ck_assert_ptr_nonnull(gi);
	i = 0;
	for (iter_seek_first(gi); iter_valid(gi); iter_next(gi)) {
		size_t kl, vl;
		const uint8_t *k = iter_key(gi, &kl);
		const uint8_t *v = iter_value(gi, &vl);
		REQUIRE_EQ(kl, kv[i].klen);
		REQUIRE(memcmp(k, kv[i].k, kl) == 0);
		REQUIRE_EQ(vl, kv[i].vlen);
		REQUIRE(vl == 0 || memcmp(v, kv[i].v, vl) == 0);
		i++;
	}
	REQUIRE_EQ(i, n);
	REQUIRE_EQ(iter_status(gi), 0);
	iter_destroy(gi);
	free(data);
}

static const size_t intervals[] = { 1, 2, 16 };

START_TEST(test_block_roundtrip)
{
	size_t interval = intervals[_i];
	char name[64];
	snprintf(name, sizeof(name), "block_roundtrip(interval %zu)", interval);
	seed_for(name);
	for (int round = 0; round < 6; round++) {
		size_t n;
		size_t want = round == 0 ? 0 : round == 1 ? 1 : 50 + rng() % 800;
		struct kv *kv = random_kvs(want, round == 5 ? 400 : 24, &n);
		check_block(kv, n, interval);
		free_kvs(kv, n);
	}
}
END_TEST

START_TEST(test_block_empty)
{
	struct block_builder bb;
	block_builder_init(&bb, 16);
	struct buf *out = block_builder_finish(&bb);
	ck_assert_uint_eq(out->len, 8);
	struct block b;
	ck_assert_int_eq(block_init(&b, out->data, out->len), 0);
	struct block_iter it;
	block_iter_init(&it, bytes_cmp);
	block_iter_reset(&it, &b);
	block_iter_seek_first(&it);
	ck_assert(!block_iter_valid(&it));
	block_iter_seek_last(&it);
	ck_assert(!block_iter_valid(&it));
	block_iter_seek(&it, (const uint8_t *)"x", 1);
	ck_assert(!block_iter_valid(&it));
	ck_assert_int_eq(it.status, 0);
	/* An iterator over no block at all. */
	block_iter_reset(&it, NULL);
	block_iter_seek_first(&it);
	ck_assert(!block_iter_valid(&it));
	block_iter_release(&it);

	/* Reuse after reset: a second block from the same builder. */
	block_builder_reset(&bb);
	block_builder_add(&bb, (const uint8_t *)"k", 1, (const uint8_t *)"v", 1);
	out = block_builder_finish(&bb);
	ck_assert_int_eq(block_init(&b, out->data, out->len), 0);
	ck_assert_uint_eq(b.num_restarts, 1);
	block_builder_free(&bb);

	/* Too short, zero restarts, too many restarts. */
	uint8_t junk[8] = { 0 };
	ck_assert_int_eq(block_init(&b, junk, 3), -EUCLEAN);
	ck_assert_int_eq(block_init(&b, junk, 8), -EUCLEAN);
	put_le32(junk + 4, 5);
	ck_assert_int_eq(block_init(&b, junk, 8), -EUCLEAN);
}
END_TEST

/* Walk a (maybe damaged) block every way; keys and values must lie inside
 * the block or the key buffer (ASan would catch an over-read). */
static int exercise(const struct block *b, const struct kv *kv, size_t n)
{
	struct block_iter it;
	block_iter_init(&it, bytes_cmp);
	block_iter_reset(&it, b);
	unsigned long sum = 0;
	size_t steps = 0;
	for (block_iter_seek_first(&it); block_iter_valid(&it) && steps < 100000;
	     block_iter_next(&it), steps++) {
		for (size_t j = 0; j < it.klen; j++)
			sum += it.key[j];
		for (size_t j = 0; j < it.vlen; j++)
			sum += it.val[j];
	}
	int st = it.status;
	block_iter_reset(&it, b);
	steps = 0;
	for (block_iter_seek_last(&it); block_iter_valid(&it) && steps < 100000;
	     block_iter_prev(&it), steps++)
		sum += it.klen ? it.key[0] : 0;
	if (!st)
		st = it.status;
	for (int s = 0; s < 20; s++) {
		block_iter_reset(&it, b);
		size_t j = rng() % n;
		block_iter_seek(&it, kv[j].k, kv[j].klen);
		for (int k = 0; k < 5 && block_iter_valid(&it); k++) {
			sum += it.klen ? it.key[it.klen - 1] : 0;
			if (k % 2)
				block_iter_prev(&it);
			else
				block_iter_next(&it);
		}
		if (!st)
			st = it.status;
	}
	REQUIRE(st == 0 || st == -EUCLEAN);
	block_iter_release(&it);
	(void)sum; /* only touched so ASan checks the bytes */
	return st;
}

START_TEST(test_block_corrupt)
{
	seed_for("block_corrupt");
	for (int round = 0; round < 2; round++) {
		size_t n;
		struct kv *kv = random_kvs(300, round ? 300 : 20, &n);
		size_t len;
		uint8_t *good = build(kv, n, round ? 1 : 16, &len);
		int detected = 0, rejected = 0;
		for (int trial = 0; trial < 1500; trial++) {
			size_t blen = len;
			if (trial % 4 == 3)
				blen = rng() % len; /* truncation */
			uint8_t *bad = malloc(blen ? blen : 1);
			memcpy(bad, good, blen);
			if (trial % 4 != 3) {
				int flips = 1 + (int)(rng() % 4);
				for (int f = 0; f < flips; f++) {
					/* Bias towards the restart array and
					 * entry headers. */
					size_t pos = rng() % 3 == 0
						? blen - 1 - rng() % (blen < 64 ? blen : 64)
						: rng() % blen;
					bad[pos] ^= (uint8_t)(1 + rng() % 255);
				}
			}
			struct block b;
			if (block_init(&b, bad, blen)) {
				rejected++;
			} else if (exercise(&b, kv, n) == -EUCLEAN) {
				detected++;
			}
			free(bad);
		}
		printf("block_corrupt: round %d: %d rejected by block_init, "
		       "%d iterators reported -EUCLEAN\n",
		       round, rejected, detected);
		ck_assert_int_gt(rejected + detected, 0);
		free(good);
		free_kvs(kv, n);
	}
}
END_TEST

START_TEST(test_block_handle)
{
	struct buf b;
	buf_init(&b);
	struct block_handle h = { UINT64_C(1) << 40, 12345 }, g;
	block_handle_encode(&b, &h);
	ck_assert_ptr_eq(block_handle_decode(b.data, b.data + b.len, &g),
			 b.data + b.len);
	ck_assert_uint_eq(g.offset, h.offset);
	ck_assert_uint_eq(g.size, h.size);
	ck_assert_ptr_null(block_handle_decode(b.data, b.data + b.len - 1, &g));
	buf_free(&b);
}
END_TEST

static Suite *block_suite(void)
{
	Suite *s = suite_create("block");
	TCase *tc = tcase_create("block");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_block_roundtrip, 0,
			    (int)(sizeof(intervals) / sizeof(intervals[0])));
	tcase_add_test(tc, test_block_empty);
	tcase_add_test(tc, test_block_corrupt);
	tcase_add_test(tc, test_block_handle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(block_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
