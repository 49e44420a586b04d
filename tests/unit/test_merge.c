/*
 * test_merge: the merging iterator (store/merge_iter.c) over k sorted
 * array-backed iterators, checked step by step against one sorted
 * reference array: forward, backward, direction switches, seeks, empty
 * children, and error status propagation; with and without a key
 * prefix (iter.h key_prefix_fn); ikey_compare against a plain
 * reference, and ikey_prefix against ikey_compare.
 *
 * Randomized cases print their seed; set LSMFS_SEED to replay one.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dbformat.h"
#include "iter.h"

/* ---- an iterator over a sorted array of NUL-terminated keys ---- */

struct array_iter {
	struct iter base;
	char **keys; /* owned */
	size_t n;
	size_t pos;  /* n: invalid */
	long fail_after; /* < 0: never; else moves left before -EIO */
	int err;
	int *destroyed; /* incremented at destroy, if set */
};

static struct array_iter *ai(struct iter *it)
{
	return (struct array_iter *)it;
}

/* Count one move; the failing move leaves the iterator in error. */
static bool ai_move(struct array_iter *a)
{
	if (a->err)
		return false;
	if (a->fail_after == 0) {
		a->err = -EIO;
		a->pos = a->n;
		return false;
	}
	if (a->fail_after > 0)
		a->fail_after--;
	return true;
}

static bool ai_valid(struct iter *it)
{
	return !ai(it)->err && ai(it)->pos < ai(it)->n;
}

static void ai_seek_first(struct iter *it)
{
	if (ai_move(ai(it)))
		ai(it)->pos = 0;
}

static void ai_seek_last(struct iter *it)
{
	struct array_iter *a = ai(it);
	if (ai_move(a))
		a->pos = a->n ? a->n - 1 : a->n;
}

static void ai_seek(struct iter *it, const uint8_t *t, size_t len)
{
	struct array_iter *a = ai(it);
	if (!ai_move(a))
		return;
	size_t i = 0;
	while (i < a->n && ukey_compare((const uint8_t *)a->keys[i],
					strlen(a->keys[i]), t, len) < 0)
		i++;
	a->pos = i;
}

static void ai_next(struct iter *it)
{
	struct array_iter *a = ai(it);
	ck_assert(ai_valid(it));
	if (ai_move(a))
		a->pos++;
}

static void ai_prev(struct iter *it)
{
	struct array_iter *a = ai(it);
	ck_assert(ai_valid(it));
	if (ai_move(a))
		a->pos = a->pos == 0 ? a->n : a->pos - 1;
}

static const uint8_t *ai_key(struct iter *it, size_t *len)
{
	ck_assert(ai_valid(it));
	*len = strlen(ai(it)->keys[ai(it)->pos]);
	return (const uint8_t *)ai(it)->keys[ai(it)->pos];
}

static const uint8_t *ai_value(struct iter *it, size_t *len)
{
	/* The value is the key: enough to check that value() follows the
	 * current child. */
	return ai_key(it, len);
}

static int ai_status(struct iter *it)
{
	return ai(it)->err;
}

static void ai_destroy(struct iter *it)
{
	struct array_iter *a = ai(it);
	if (a->destroyed)
		(*a->destroyed)++;
	for (size_t i = 0; i < a->n; i++)
		free(a->keys[i]);
	free(a->keys);
	free(a);
}

static const struct iter_ops array_iter_ops = {
	.valid = ai_valid,
	.seek_first = ai_seek_first,
	.seek_last = ai_seek_last,
	.seek = ai_seek,
	.next = ai_next,
	.prev = ai_prev,
	.key = ai_key,
	.value = ai_value,
	.status = ai_status,
	.destroy = ai_destroy,
};

static int cmp_str(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	return ukey_compare((const uint8_t *)x, strlen(x), (const uint8_t *)y,
			    strlen(y));
}

/* Takes copies of keys[0..n) and sorts them. */
static struct array_iter *array_iter_new(const char *const *keys, size_t n)
{
	struct array_iter *a = calloc(1, sizeof(*a));
	ck_assert_ptr_nonnull(a);
	a->base.ops = &array_iter_ops;
	a->keys = calloc(n ? n : 1, sizeof(char *));
	ck_assert_ptr_nonnull(a->keys);
	for (size_t i = 0; i < n; i++)
		a->keys[i] = strdup(keys[i]);
	qsort(a->keys, n, sizeof(char *), cmp_str);
	a->n = n;
	a->pos = n;
	a->fail_after = -1;
	return a;
}

static int memcmp_keys(const uint8_t *a, size_t alen, const uint8_t *b,
		       size_t blen)
{
	return ukey_compare(a, alen, b, blen);
}

/* Prefixes that agree with memcmp_keys: the first byte, then the second
 * (most keys below share them, so the merge falls back on the comparator
 * often) and the first sixteen, zero-padded (as ikey_prefix does for user
 * keys). */
static struct key_prefix two_byte_prefix(const uint8_t *k, size_t len)
{
	return (struct key_prefix){ { len > 0 ? k[0] : 0, len > 1 ? k[1] : 0 } };
}

static struct key_prefix padded_prefix(const uint8_t *k, size_t len)
{
	struct key_prefix p = { { 0, 0 } };
	for (size_t i = 0; i < 16; i++)
		p.w[i / 8] = p.w[i / 8] << 8 | (i < len ? k[i] : 0);
	return p;
}

/* ---- randomized comparison against a sorted reference ---- */

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t test_seed(void)
{
	const char *e = getenv("LSMFS_SEED");
	uint64_t seed = e ? strtoull(e, NULL, 0)
			  : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
	printf("test_merge: seed %" PRIu64 " (LSMFS_SEED=%" PRIu64 " to replay)\n",
	       seed, seed);
	fflush(stdout);
	return seed;
}

static void check_at(struct iter *m, char **ref, size_t nref, size_t pos,
		     uint64_t seed, int step)
{
	if (pos >= nref) {
		ck_assert_msg(!iter_valid(m), "seed %" PRIu64 " step %d: valid "
			      "past the end", seed, step);
		return;
	}
	ck_assert_msg(iter_valid(m), "seed %" PRIu64 " step %d: invalid at %zu",
		      seed, step, pos);
	size_t kl, vl;
	const uint8_t *k = iter_key(m, &kl);
	const uint8_t *v = iter_value(m, &vl);
	ck_assert_msg(kl == strlen(ref[pos]) && memcmp(k, ref[pos], kl) == 0,
		      "seed %" PRIu64 " step %d: key %.*s, expected %s", seed,
		      step, (int)kl, (const char *)k, ref[pos]);
	ck_assert(vl == kl && memcmp(v, k, kl) == 0);
}

START_TEST(test_random)
{
	uint64_t seed = test_seed();
	uint64_t s = seed;
	for (int round = 0; round < 200; round++) {
		size_t k = (size_t)(rng(&s) % 9); /* 0..8 children */
		size_t nkeys = (size_t)(rng(&s) % 200);
		char **all = calloc(nkeys + 1, sizeof(char *));
		const char ***per = calloc(k + 1, sizeof(*per));
		size_t *nper = calloc(k + 1, sizeof(*nper));
		size_t nref = 0;
		/* Unique keys: stride through a key space, sometimes with
		 * keys that are prefixes of others. */
		for (size_t i = 0; i < nkeys && k > 0; i++) {
			char buf[32];
			snprintf(buf, sizeof(buf), "%04zu%s", i * 3,
				 rng(&s) % 5 == 0 ? "x" : "");
			all[nref++] = strdup(buf);
		}
		for (size_t c = 0; c < k; c++)
			per[c] = calloc(nref + 1, sizeof(char *));
		for (size_t i = 0; i < nref; i++) {
			size_t c = (size_t)(rng(&s) % k);
			per[c][nper[c]++] = all[i];
		}
		struct iter **kids = calloc(k + 1, sizeof(*kids));
		for (size_t c = 0; c < k; c++)
			kids[c] = &array_iter_new(per[c], nper[c])->base;
		key_prefix_fn prefixes[] = { NULL, two_byte_prefix, padded_prefix };
		struct iter *m = merge_iter_new(memcmp_keys, prefixes[round % 3], kids, k);
		ck_assert_ptr_nonnull(m);
		free(kids);
		qsort(all, nref, sizeof(char *), cmp_str);

		size_t pos = nref; /* reference position; nref: invalid */
		for (int step = 0; step < 400; step++) {
			unsigned op = (unsigned)(rng(&s) % 10);
			bool valid = pos < nref;
			if (op == 0) {
				iter_seek_first(m);
				pos = 0;
			} else if (op == 1) {
				iter_seek_last(m);
				pos = nref ? nref - 1 : nref;
			} else if (op == 2) {
				char t[32];
				snprintf(t, sizeof(t), "%04u",
					 (unsigned)(rng(&s) % (nkeys * 3 + 5)));
				if (rng(&s) % 3 == 0)
					strcat(t, rng(&s) % 2 ? "x" : "a");
				iter_seek(m, (const uint8_t *)t, strlen(t));
				pos = 0;
				while (pos < nref &&
				       cmp_str(&all[pos], &(char *){ t }) < 0)
					pos++;
			} else if (op < 6 && valid) {
				iter_next(m);
				pos++;
			} else if (valid) {
				iter_prev(m);
				pos = pos == 0 ? nref : pos - 1;
			}
			check_at(m, all, nref, pos, seed, step);
		}
		ck_assert_int_eq(iter_status(m), 0);
		iter_destroy(m);
		for (size_t i = 0; i < nref; i++)
			free(all[i]);
		for (size_t c = 0; c < k; c++)
			free(per[c]);
		free(all);
		free(per);
		free(nper);
	}
}
END_TEST

/* A full forward then backward sweep with every switch point. */
START_TEST(test_switch_directions)
{
	const char *a[] = { "a", "d", "g", "j" };
	const char *b[] = { "b", "e", "h" };
	const char *c[] = { "c", "f", "i", "k", "l" };
	const char *ref[] = { "a", "b", "c", "d", "e", "f", "g",
			      "h", "i", "j", "k", "l" };
	size_t n = 12;
	for (size_t turn = 0; turn < n; turn++) {
		struct iter *kids[3] = { &array_iter_new(a, 4)->base,
					 &array_iter_new(b, 3)->base,
					 &array_iter_new(c, 5)->base };
		struct iter *m = merge_iter_new(memcmp_keys, NULL, kids, 3);
		iter_seek_first(m);
		for (size_t i = 0; i < turn; i++)
			iter_next(m);
		/* Now walk back to the start, then forward to the end. */
		for (size_t i = turn + 1; i-- > 0;) {
			check_at(m, (char **)ref, n, i, 0, (int)i);
			iter_prev(m);
		}
		ck_assert(!iter_valid(m));
		iter_seek(m, (const uint8_t *)ref[turn], 1);
		iter_prev(m);
		if (turn == 0)
			ck_assert(!iter_valid(m));
		else
			check_at(m, (char **)ref, n, turn - 1, 0, 0);
		iter_seek(m, (const uint8_t *)ref[turn], 1);
		for (size_t i = turn; i < n; i++) {
			check_at(m, (char **)ref, n, i, 0, (int)i);
			iter_next(m);
			if (i + 1 < n) {
				/* a quick back-and-forth at every step */
				iter_prev(m);
				check_at(m, (char **)ref, n, i, 0, (int)i);
				iter_next(m);
			}
		}
		ck_assert(!iter_valid(m));
		ck_assert_int_eq(iter_status(m), 0);
		iter_destroy(m);
	}
}
END_TEST

START_TEST(test_empty_and_single)
{
	struct iter *m = merge_iter_new(memcmp_keys, NULL, NULL, 0);
	ck_assert_ptr_nonnull(m);
	iter_seek_first(m);
	ck_assert(!iter_valid(m));
	ck_assert_int_eq(iter_status(m), 0);
	iter_destroy(m);

	const char *a[] = { "x", "y" };
	struct iter *kids[3] = { &array_iter_new(a, 2)->base };
	m = merge_iter_new(memcmp_keys, NULL, kids, 1);
	iter_seek_last(m);
	size_t kl;
	ck_assert(iter_valid(m));
	ck_assert_int_eq(*iter_key(m, &kl), 'y');
	iter_destroy(m);

	/* Children that are all empty. */
	kids[0] = &array_iter_new(NULL, 0)->base;
	kids[1] = &array_iter_new(NULL, 0)->base;
	kids[2] = iter_new_error(0);
	m = merge_iter_new(memcmp_keys, NULL, kids, 3);
	iter_seek_first(m);
	ck_assert(!iter_valid(m));
	iter_seek_last(m);
	ck_assert(!iter_valid(m));
	iter_seek(m, (const uint8_t *)"q", 1);
	ck_assert(!iter_valid(m));
	ck_assert_int_eq(iter_status(m), 0);
	iter_destroy(m);
}
END_TEST

START_TEST(test_error_child)
{
	/* A child that is an error from the start. */
	const char *a[] = { "a", "c", "e" };
	int destroyed = 0;
	struct array_iter *x = array_iter_new(a, 3);
	x->destroyed = &destroyed;
	struct iter *kids[2] = { &x->base, iter_new_error(-EIO) };
	struct iter *m = merge_iter_new(memcmp_keys, NULL, kids, 2);
	iter_seek_first(m);
	ck_assert(!iter_valid(m));
	ck_assert_int_eq(iter_status(m), -EIO);
	iter_seek_last(m); /* sticky */
	ck_assert(!iter_valid(m));
	ck_assert_int_eq(iter_status(m), -EIO);
	iter_destroy(m);
	ck_assert_int_eq(destroyed, 1);

	/* A child that fails in the middle of a scan: the merge stops there
	 * rather than go on without its entries. */
	const char *b[] = { "b", "d", "f", "h" };
	struct array_iter *y = array_iter_new(b, 4);
	y->fail_after = 3; /* seek_first, next, next ok; the 4th move fails */
	kids[0] = &array_iter_new(a, 3)->base;
	kids[1] = &y->base;
	m = merge_iter_new(memcmp_keys, NULL, kids, 2);
	iter_seek_first(m);
	int seen = 0;
	while (iter_valid(m)) {
		seen++;
		iter_next(m);
	}
	ck_assert_int_lt(seen, 7);
	ck_assert_int_eq(iter_status(m), -EIO);
	iter_seek_first(m);
	ck_assert(!iter_valid(m));
	ck_assert_int_eq(iter_status(m), -EIO);
	iter_destroy(m);
}
END_TEST

/* ikey_compare as FORMAT.md "Internal keys" states it, plainly. */
static int ikey_compare_reference(const uint8_t *a, size_t alen, const uint8_t *b,
				  size_t blen)
{
	size_t au = alen - IKEY_TAG_LEN, bu = blen - IKEY_TAG_LEN;
	int r = memcmp(a, b, au < bu ? au : bu);
	if (r)
		return r < 0 ? -1 : 1;
	if (au != bu)
		return au < bu ? -1 : 1;
	uint64_t at = get_le64(a + au), bt = get_le64(b + bu);
	return at > bt ? -1 : at < bt ? 1 : 0;
}

/* ikey_compare (and its shortcuts for keys that differ in their first 8
 * or next 8 bytes) against the reference, and ikey_prefix agreeing with
 * it: random internal keys of 0 to 20 user-key bytes from a small alphabet
 * (so that prefixes tie and keys are prefixes of others), every pair. */
START_TEST(test_ikey_prefix)
{
	uint64_t seed = test_seed();
	uint64_t s = seed;
	enum { N = 300 };
	uint8_t keys[N][28];
	size_t lens[N];
	for (int i = 0; i < N; i++) {
		size_t u = (size_t)(rng(&s) % 21);
		for (size_t j = 0; j < u; j++)
			keys[i][j] = (uint8_t)"\0a\xff"[rng(&s) % 3];
		put_le64(keys[i] + u, ikey_pack_tag(rng(&s) % 4, (int)(rng(&s) % 2)));
		lens[i] = u + IKEY_TAG_LEN;
	}
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			struct key_prefix pi = ikey_prefix(keys[i], lens[i]);
			struct key_prefix pj = ikey_prefix(keys[j], lens[j]);
			int po = pi.w[0] != pj.w[0] ? (pi.w[0] < pj.w[0] ? -1 : 1)
				 : pi.w[1] != pj.w[1] ? (pi.w[1] < pj.w[1] ? -1 : 1) : 0;
			int c = ikey_compare(keys[i], lens[i], keys[j], lens[j]);
			int want = ikey_compare_reference(keys[i], lens[i], keys[j], lens[j]);
			ck_assert_msg((c > 0) - (c < 0) == want,
				      "seed %" PRIu64 ": keys %d and %d: ikey_compare %d, "
				      "expected %d", seed, i, j, c, want);
			ck_assert_msg(po == 0 || (po < 0) == (c < 0),
				      "seed %" PRIu64 ": keys %d and %d: prefix order "
				      "disagrees", seed, i, j);
		}
}
END_TEST

static Suite *merge_suite(void)
{
	Suite *s = suite_create("merge");
	TCase *tc = tcase_create("merge");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_switch_directions);
	tcase_add_test(tc, test_empty_and_single);
	tcase_add_test(tc, test_error_child);
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_ikey_prefix);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(merge_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
