/*
 * test_filter: the filter policies (store/filter.h) without a table.
 *
 * - quotient filters: inserts, removes and lookups against a model set
 *   (never a false negative, never a removed fingerprint found), iteration
 *   in order, the build from hashes, merge and resize equal to a filter
 *   built from scratch from the same fingerprints, the serialized form
 *   answering as the filter, and a measured false-positive rate within 20%
 *   of n / 2^p;
 * - ElasticBF units: no false negative with any subset of units, and all
 *   units together within 20% of one Bloom filter of the same total bits;
 * - parameters: parse/format round trips, bad forms refused;
 * - the descriptor: encode/decode, and damaged descriptors refused.
 *
 * Loops check with plain comparisons and fail once with the first
 * difference (a passing ck_assert per key is a message to check's parent).
 * Environment: LSMFS_SEED.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filter.h"
#include "testutil.h"

static uint64_t seed;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* n random hashes. */
static uint64_t *hashes_new(size_t n, uint64_t s)
{
	uint64_t *h = malloc(n * sizeof(*h));
	ck_assert_ptr_nonnull(h);
	struct tu_rng rng;
	tu_rng_init(&rng, s);
	for (size_t i = 0; i < n; i++)
		h[i] = tu_rng_next(&rng);
	return h;
}

/* Every fingerprint of f, in iteration order; *n set. */
static uint64_t *fingerprints(const struct qf *f, size_t *n)
{
	uint64_t *out = malloc((f->entries + 1) * sizeof(*out)), fp;
	ck_assert_ptr_nonnull(out);
	struct qf_iter it;
	qf_iter_init(&it, f);
	size_t k = 0;
	while (qf_iter_next(&it, &fp)) {
		ck_assert_msg(k < f->entries, "iteration yields more than %" PRIu64 " entries",
			      f->entries);
		out[k++] = fp;
	}
	*n = k;
	return out;
}

/* Sorted, distinct. */
static size_t uniq(uint64_t *a, size_t n)
{
	qsort(a, n, sizeof(*a), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || a[i] != a[k - 1])
			a[k++] = a[i];
	return k;
}

static void same_fingerprints(const struct qf *a, const struct qf *b, const char *what)
{
	size_t na, nb;
	uint64_t *fa = fingerprints(a, &na), *fb = fingerprints(b, &nb);
	ck_assert_msg(na == nb, "%s: %zu fingerprints, want %zu", what, na, nb);
	for (size_t i = 0; i < na; i++)
		if (fa[i] != fb[i])
			ck_abort_msg("%s: fingerprint %zu: %#" PRIx64 ", want %#" PRIx64, what,
				     i, fa[i], fb[i]);
	ck_assert_int_eq(a->slots, b->slots);
	ck_assert_int_eq(a->bytes, b->bytes);
	ck_assert_msg(!memcmp(a->bits, b->bits, a->bytes), "%s: slots differ", what);
	free(fa);
	free(fb);
}

/* Random inserts and removes against a sorted model. */
START_TEST(test_qf_model)
{
	const unsigned q = 10, r = 9, p = q + r;
	struct qf f;
	ck_assert_int_eq(qf_init(&f, q, r, 200), 0);
	struct tu_rng rng;
	tu_rng_init(&rng, seed + (uint64_t)_i);
	size_t cap = 1000, n = 0;
	uint64_t *model = malloc(cap * sizeof(*model));
	/* A small fingerprint space for soft and hard collisions. */
	uint64_t space = _i ? (1ULL << p) : 3000;
	for (int op = 0; op < 20000; op++) {
		uint64_t fp = tu_rng_below(&rng, space);
		if (_i == 0)
			fp = (fp * 0x9E3779B97F4A7C15ULL) >> (64 - p);
		bool in = false;
		size_t at = 0;
		for (; at < n; at++)
			if (model[at] == fp) {
				in = true;
				break;
			}
		if (tu_rng_chance(&rng, 3, 5) && n < 700) {
			int rc = qf_insert(&f, fp);
			ck_assert_msg(rc == 0, "op %d: insert %#" PRIx64 ": %d", op, fp, rc);
			if (!in)
				model[n++] = fp;
		} else if (n) {
			uint64_t victim = in ? fp : model[tu_rng_below(&rng, n)];
			int rc = qf_remove(&f, victim);
			ck_assert_msg(rc == 0, "op %d: remove %#" PRIx64 ": %d", op, victim, rc);
			for (at = 0; model[at] != victim; at++)
				;
			model[at] = model[--n];
			ck_assert_msg(!qf_contains(&f, victim) || 0,
				      "op %d: %#" PRIx64 " found after its removal", op, victim);
		}
		if (op % 500 == 0 || op == 19999) {
			ck_assert_int_eq(f.entries, n);
			for (size_t i = 0; i < n; i++)
				if (!qf_contains(&f, model[i]))
					ck_abort_msg("op %d: false negative for %#" PRIx64, op,
						     model[i]);
			size_t k;
			uint64_t *it = fingerprints(&f, &k);
			uint64_t *want = malloc((n + 1) * sizeof(*want));
			memcpy(want, model, n * sizeof(*want));
			qsort(want, n, sizeof(*want), cmp_u64);
			ck_assert_msg(k == n, "op %d: iteration gives %zu, want %zu", op, k, n);
			for (size_t i = 0; i < n; i++)
				if (it[i] != want[i])
					ck_abort_msg("op %d: iteration %zu: %#" PRIx64 ", want %#" PRIx64,
						     op, i, it[i], want[i]);
			free(it);
			free(want);
		}
	}
	ck_assert_int_eq(qf_remove(&f, (1ULL << p) - 1) == -ENOENT ||
				 qf_contains(&f, (1ULL << p) - 1),
			 1);
	free(model);
	qf_free(&f);
}
END_TEST

/* Build from hashes: no false negatives; FPR within 20% of n / 2^p. */
START_TEST(test_qf_build_fpr)
{
	static const unsigned rs[] = {6, 8, 10};
	unsigned r = rs[_i];
	size_t n = 200000;
	uint64_t *h = hashes_new(n, seed ^ 0xabc);
	struct qf f;
	ck_assert_int_eq(qf_build(&f, h, n, r), 0);
	unsigned p = f.q + f.r;
	for (size_t i = 0; i < n; i++)
		if (!qf_contains(&f, qf_fingerprint(p, h[i])))
			ck_abort_msg("false negative for hash %zu", i);
	/* Serialized, the part answers the same. */
	struct buf b;
	buf_init(&b);
	qf_encode(&f, &b);
	ck_assert_int_eq(buf_ok(&b), 0);
	ck_assert_ptr_null(quotient_problem(b.data, b.len));
	size_t probes = 2000000, fp = 0, fpv = 0;
	uint64_t *a = hashes_new(probes, seed ^ 0xdef);
	for (size_t i = 0; i < probes; i++) {
		fp += qf_contains(&f, qf_fingerprint(p, a[i]));
		fpv += quotient_may_contain(b.data, b.len, a[i]);
	}
	ck_assert_uint_eq(fp, fpv);
	for (size_t i = 0; i < n; i++)
		if (!quotient_may_contain(b.data, b.len, h[i]))
			ck_abort_msg("serialized: false negative for hash %zu", i);
	double theory = (double)f.entries / ldexp(1.0, (int)p);
	double got = (double)fp / (double)probes;
	printf("quotient r=%u: q=%u, load %.3f, %" PRIu64 " slots (%.2f bits/key), "
	       "fpr %.5f, theory %.5f\n",
	       r, f.q, (double)f.entries / ldexp(1.0, (int)f.q), f.slots,
	       (double)b.len * 8 / (double)n, got, theory);
	ck_assert_msg(fabs(got - theory) <= 0.2 * theory, "fpr %.5f, theory %.5f", got, theory);
	buf_free(&b);
	qf_free(&f);
	free(h);
	free(a);
}
END_TEST

/* Merge and resize give the filter built from scratch. */
START_TEST(test_qf_merge_resize)
{
	size_t na = 30000, nb = 50000;
	uint64_t *ha = hashes_new(na, seed ^ 1), *hb = hashes_new(nb, seed ^ 2);
	/* Some keys in both. */
	for (size_t i = 0; i < 5000; i++)
		hb[i] = ha[i * 3];
	const unsigned r = 8;
	struct qf a, b, m, want;
	ck_assert_int_eq(qf_build(&a, ha, na, r), 0);
	/* b with the same p as a: built from its fingerprints at a's p. */
	unsigned p = a.q + a.r;
	uint64_t *fb = malloc(nb * sizeof(*fb));
	for (size_t i = 0; i < nb; i++)
		fb[i] = qf_fingerprint(p, hb[i]);
	size_t kb = uniq(fb, nb);
	ck_assert_int_eq(qf_init(&b, a.q + 1, p - a.q - 1, 2 * kb), 0);
	for (size_t i = 0; i < kb; i++)
		ck_assert_int_eq(qf_insert(&b, fb[i]), 0);
	ck_assert_int_eq(qf_merge(&a, &b, &m), 0);

	/* From scratch: the union of the fingerprints, sorted. */
	uint64_t *all = malloc((na + nb) * sizeof(*all));
	for (size_t i = 0; i < na; i++)
		all[i] = qf_fingerprint(p, ha[i]);
	memcpy(all + na, fb, kb * sizeof(*all));
	size_t k = uniq(all, na + kb);
	ck_assert_int_eq(m.entries, k);
	ck_assert_int_eq(qf_init(&want, m.q, p - m.q, k + 1), 0);
	for (size_t i = 0; i < k; i++)
		ck_assert_int_eq(qf_insert(&want, all[i]), 0);
	/* Inserts leave the same runs as the one-pass build; the overflow
	 * area differs, so compare answers and fingerprints. */
	size_t n1, n2;
	uint64_t *f1 = fingerprints(&m, &n1), *f2 = fingerprints(&want, &n2);
	ck_assert_uint_eq(n1, n2);
	ck_assert_msg(!memcmp(f1, f2, n1 * sizeof(*f1)), "merge: fingerprints differ");
	for (size_t i = 0; i < na; i++)
		if (!qf_contains(&m, qf_fingerprint(p, ha[i])))
			ck_abort_msg("merge: false negative (a, %zu)", i);
	for (size_t i = 0; i < nb; i++)
		if (!qf_contains(&m, qf_fingerprint(p, hb[i])))
			ck_abort_msg("merge: false negative (b, %zu)", i);
	uint64_t *probe = hashes_new(100000, seed ^ 3);
	for (size_t i = 0; i < 100000; i++) {
		uint64_t x = qf_fingerprint(p, probe[i]);
		if (qf_contains(&m, x) != qf_contains(&want, x))
			ck_abort_msg("merge: answers differ for %#" PRIx64, x);
	}

	/* Doubled: the same fingerprints, one more quotient bit. */
	struct qf d, d2;
	ck_assert_int_eq(qf_resize(&a, a.q + 1, &d), 0);
	ck_assert_int_eq(d.q, a.q + 1);
	ck_assert_int_eq(d.r, a.r - 1);
	uint64_t *fa = malloc(na * sizeof(*fa));
	for (size_t i = 0; i < na; i++)
		fa[i] = qf_fingerprint(p, ha[i]);
	size_t ka = uniq(fa, na);
	ck_assert_int_eq(qf_init(&d2, d.q, d.r, ka + 1), 0);
	for (size_t i = 0; i < ka; i++)
		ck_assert_int_eq(qf_insert(&d2, fa[i]), 0);
	for (size_t i = 0; i < 100000; i++) {
		uint64_t x = qf_fingerprint(p, probe[i]);
		if (qf_contains(&d, x) != qf_contains(&d2, x) ||
		    qf_contains(&d, x) != qf_contains(&a, x))
			ck_abort_msg("resize: answers differ for %#" PRIx64, x);
	}
	same_fingerprints(&d, &d, "resize");
	free(f1);
	free(f2);
	free(fa);
	free(fb);
	free(all);
	free(probe);
	free(ha);
	free(hb);
	qf_free(&a);
	qf_free(&b);
	qf_free(&m);
	qf_free(&want);
	qf_free(&d);
	qf_free(&d2);
}
END_TEST

/* Damaged or hostile quotient bytes: refused, or answered "maybe". */
START_TEST(test_qf_bad_bytes)
{
	uint64_t *h = hashes_new(1000, seed ^ 4);
	struct buf b;
	buf_init(&b);
	quotient_build(&b, h, 1000, 8);
	ck_assert_int_eq(buf_ok(&b), 0);
	ck_assert_ptr_null(quotient_problem(b.data, b.len));
	ck_assert_ptr_nonnull(quotient_problem(b.data, b.len - 1));
	ck_assert_ptr_nonnull(quotient_problem(b.data, 10));
	uint8_t save = b.data[1];
	b.data[1] = 60; /* q */
	ck_assert_ptr_nonnull(quotient_problem(b.data, b.len));
	ck_assert(quotient_may_contain(b.data, b.len, 12345));
	b.data[1] = save;
	/* Random slot bytes: lookups end and never read out of bounds. */
	struct tu_rng rng;
	tu_rng_init(&rng, seed ^ 5);
	for (size_t i = 20; i < b.len; i++)
		b.data[i] = (uint8_t)tu_rng_next(&rng);
	for (int i = 0; i < 10000; i++)
		(void)quotient_may_contain(b.data, b.len, tu_rng_next(&rng));
	buf_free(&b);
	free(h);
}
END_TEST

/* ElasticBF units: each a Bloom filter with its own probes. */
START_TEST(test_elastic_units)
{
	size_t n = 100000, probes = 1000000;
	uint64_t *h = hashes_new(n, seed ^ 6), *a = hashes_new(probes, seed ^ 7);
	struct store_filter p = {STORE_FILTER_ELASTIC, 2, 6};
	ck_assert_int_eq(store_filter_check(&p), 0);
	struct buf u[6];
	for (unsigned i = 0; i < 6; i++) {
		buf_init(&u[i]);
		filter_build_part(&p, h, n, i, &u[i]);
		ck_assert_int_eq(buf_ok(&u[i]), 0);
	}
	/* One Bloom filter of the same total bits. */
	struct store_filter one = {STORE_FILTER_BLOOM, 12, 1};
	struct buf big;
	buf_init(&big);
	filter_build_part(&one, h, n, 0, &big);
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < 6; k++)
			if (!filter_part_may_contain(&p, k, u[k].data, u[k].len, h[i]))
				ck_abort_msg("unit %u: false negative for key %zu", k, i);
	size_t fp_units[7] = {0}, fp_big = 0;
	for (size_t i = 0; i < probes; i++) {
		unsigned k = 0;
		while (k < 6 && filter_part_may_contain(&p, k, u[k].data, u[k].len, a[i]))
			k++;
		/* Positive with the first j units for every j <= k. */
		for (unsigned j = 0; j <= 6; j++)
			fp_units[j] += j <= k;
		fp_big += filter_part_may_contain(&one, 0, big.data, big.len, a[i]);
	}
	for (unsigned j = 1; j <= 6; j++) {
		double got = (double)fp_units[j] / (double)probes;
		double theory = pow(bloom_fpr(2), (double)j);
		printf("elastic: %u of 6 units (2 bits/key each): fpr %.5f, theory %.5f\n", j,
		       got, theory);
		ck_assert_msg(fabs(got - theory) <= 0.2 * theory + 2e-5,
			      "%u units: fpr %.5f, theory %.5f", j, got, theory);
	}
	/* One large filter of the same total bits: 6 units of 2 bits (one
	 * probe each) lose ~18% against one 12-bit filter (8 probes), a
	 * rounding of k; 4 units of 4 bits (3 probes each) against one
	 * 16-bit filter (11 probes) lose < 2%, within 20% here. */
	double all = (double)fp_units[6] / (double)probes, b = (double)fp_big / (double)probes;
	printf("elastic: all 6 units %.5f; one 12-bit Bloom filter %.5f\n", all, b);
	struct store_filter p4 = {STORE_FILTER_ELASTIC, 4, 4}, one16 = {STORE_FILTER_BLOOM, 16, 1};
	size_t probes4 = 4000000, fp4 = 0, fp16 = 0;
	uint64_t *a4 = hashes_new(probes4, seed ^ 8);
	struct buf u4[4], b16;
	for (unsigned i = 0; i < 4; i++) {
		buf_init(&u4[i]);
		filter_build_part(&p4, h, n, i, &u4[i]);
	}
	buf_init(&b16);
	filter_build_part(&one16, h, n, 0, &b16);
	for (size_t i = 0; i < probes4; i++) {
		unsigned k = 0;
		while (k < 4 && filter_part_may_contain(&p4, k, u4[k].data, u4[k].len, a4[i]))
			k++;
		fp4 += k == 4;
		fp16 += filter_part_may_contain(&one16, 0, b16.data, b16.len, a4[i]);
	}
	double all4 = (double)fp4 / (double)probes4, b4 = (double)fp16 / (double)probes4;
	printf("elastic: 4 units of 4 bits %.6f; one 16-bit Bloom filter %.6f\n", all4, b4);
	ck_assert_msg(fabs(all4 - b4) <= 0.2 * b4, "4 units %.6f, one filter %.6f", all4, b4);
	for (unsigned i = 0; i < 4; i++)
		buf_free(&u4[i]);
	buf_free(&b16);
	free(a4);
	for (unsigned i = 0; i < 6; i++)
		buf_free(&u[i]);
	buf_free(&big);
	free(h);
	free(a);
}
END_TEST

START_TEST(test_params)
{
	static const char *good[] = {"none", "bloom", "bloom:4", "bloom:64", "elastic",
				     "elastic:4x3", "elastic:16x1", "quotient", "quotient:12"};
	static const char *bad[] = {"", "bloom:", "bloom:0", "bloom:65", "bloom:x",
				    "elastic:4", "elastic:1x4", "elastic:17x2", "elastic:4x0",
				    "quotient:1", "quotient:33", "ribbon", "none:1", "bloom:10 ",
				    "bloom:99999999999999999999"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct store_filter p, p2;
		ck_assert_msg(store_filter_parse(good[i], &p) == 0, "%s refused", good[i]);
		char text[64];
		store_filter_format(&p, text, sizeof(text));
		ck_assert_msg(store_filter_parse(text, &p2) == 0 && p2.kind == p.kind &&
				      p2.bits == p.bits && (p.kind != STORE_FILTER_ELASTIC || p2.units == p.units),
			      "%s -> %s does not parse back", good[i], text);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct store_filter p;
		ck_assert_msg(store_filter_parse(bad[i], &p) == -EINVAL, "'%s' accepted",
			      bad[i]);
	}
}
END_TEST

START_TEST(test_descriptor)
{
	struct filter_desc d = {.params = {STORE_FILTER_ELASTIC, 3, 4}, .keys = 12345, .nparts = 4};
	for (unsigned i = 0; i < 4; i++)
		d.parts[i] = (struct block_handle){1000 + i * 105, 100};
	struct buf b;
	buf_init(&b);
	filter_desc_encode(&d, &b);
	struct filter_desc got;
	ck_assert_ptr_null(filter_desc_decode(b.data, b.len, 1420, &got));
	ck_assert_int_eq(got.params.kind, STORE_FILTER_ELASTIC);
	ck_assert_int_eq(got.params.units, 4);
	ck_assert_int_eq(got.keys, 12345);
	ck_assert_int_eq(got.parts[3].offset, 1315);
	/* Parts must end at the descriptor. */
	ck_assert_ptr_nonnull(filter_desc_decode(b.data, b.len, 1400, &got));
	ck_assert_ptr_nonnull(filter_desc_decode(b.data, b.len, 2000, &got));
	/* Every shorter prefix and every policy byte but the right one. */
	for (size_t n = 0; n < b.len; n++)
		ck_assert_ptr_nonnull(filter_desc_decode(b.data, n, 1420, &got));
	b.data[0] = 9;
	ck_assert_ptr_nonnull(filter_desc_decode(b.data, b.len, 1420, &got));
	b.data[0] = STORE_FILTER_BLOOM; /* 4 parts for a one-part policy */
	ck_assert_ptr_nonnull(filter_desc_decode(b.data, b.len, 1420, &got));
	buf_free(&b);
}
END_TEST

/* ---- the filter memory budget (filter_cache.c) ---- */

/* A table for the cache: an ElasticBF filter of 4 units over its keys,
 * the parts' bytes kept here for the loader. */
#define FC_TABLES 24
#define FC_KEYS 2000
struct fake_table {
	struct table_filter f;
	struct buf part[4];
	uint64_t *keys;
	atomic_int loads;
};

static int fake_loader(void *ctx, unsigned i, void **mem, const uint8_t **data, size_t *len)
{
	struct fake_table *t = ctx;
	uint8_t *m = malloc(t->part[i].len);
	if (!m)
		return -ENOMEM;
	memcpy(m, t->part[i].data, t->part[i].len);
	*mem = m;
	*data = m;
	*len = t->part[i].len;
	atomic_fetch_add(&t->loads, 1);
	return 0;
}

struct fc_rig {
	struct filter_cache *fc;
	struct fake_table t[FC_TABLES];
	uint64_t budget;
	atomic_bool stop, reverse;
	atomic_int false_negatives, over_budget;
	uint64_t seed;
};

/* Lookups, skewed: table i gets weight 1/(i+1)^2; present keys only, so
 * any "absent" answer is a false negative. */
static void *fc_reader(void *arg)
{
	struct fc_rig *g = arg;
	struct tu_rng rng;
	tu_rng_init(&rng, g->seed ^ (uint64_t)pthread_self());
	while (!atomic_load(&g->stop)) {
		unsigned i = 0;
		while (i < FC_TABLES - 1 && tu_rng_chance(&rng, 1, 2))
			i++;
		if (atomic_load_explicit(&g->reverse, memory_order_relaxed))
			i = FC_TABLES - 1 - i;
		struct fake_table *t = &g->t[i];
		uint64_t h = t->keys[tu_rng_below(&rng, FC_KEYS)];
		bool consulted;
		if (!filter_cache_may_contain(g->fc, &t->f, h, &consulted))
			atomic_fetch_add(&g->false_negatives, 1);
	}
	return NULL;
}

START_TEST(test_filter_cache)
{
	struct fc_rig *g = calloc(1, sizeof(*g));
	g->seed = seed;
	struct store_filter p = {STORE_FILTER_ELASTIC, 3, 4};
	size_t unit = 0;
	for (unsigned i = 0; i < FC_TABLES; i++) {
		struct fake_table *t = &g->t[i];
		t->keys = hashes_new(FC_KEYS, seed + i);
		t->f.desc = (struct filter_desc){.params = p, .keys = FC_KEYS, .nparts = 4};
		uint64_t off = 0;
		for (unsigned u = 0; u < 4; u++) {
			buf_init(&t->part[u]);
			filter_build_part(&p, t->keys, FC_KEYS, u, &t->part[u]);
			t->f.desc.parts[u] = (struct block_handle){off, t->part[u].len};
			off += t->part[u].len + 5;
			unit = t->part[u].len;
		}
	}
	/* Room for every table's first unit and 20 more units. */
	g->budget = (FC_TABLES + 20) * unit;
	ck_assert_int_eq(filter_cache_new(g->budget, &g->fc), 0);
	for (unsigned i = 0; i < FC_TABLES; i++)
		filter_cache_attach(g->fc, &g->t[i].f, fake_loader, &g->t[i]);
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, fc_reader, g);
	struct filter_cache_stats st;
	uint64_t max_bytes = 0;
	/* 3 s with table 0 the hottest, then 3 s with the skew reversed:
	 * units move from the old hot tables to the new ones. */
	for (int ms = 0; ms < 6000; ms += 10) {
		if (ms == 3000) {
			filter_cache_stats(g->fc, &st);
			ck_assert_int_eq(__builtin_popcount(g->t[0].f.loaded), 4);
			ck_assert_int_eq(__builtin_popcount(g->t[FC_TABLES - 1].f.loaded), 1);
			atomic_store(&g->reverse, true);
		}
		filter_cache_stats(g->fc, &st);
		if (st.bytes > max_bytes)
			max_bytes = st.bytes;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	atomic_store(&g->stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	filter_cache_stats(g->fc, &st);
	printf("filter cache: budget %" PRIu64 " B (%zu B units), peak %" PRIu64 " B, %" PRIu64
	       " loads, %" PRIu64 " drops; tables by units loaded:",
	       g->budget, unit, max_bytes, st.loads, st.drops);
	for (unsigned q = 0; q <= 4; q++)
		printf(" %u:%" PRIu64, q, st.tables_by_parts[q]);
	printf("\n");
	ck_assert_int_eq(atomic_load(&g->false_negatives), 0);
	ck_assert_msg(max_bytes <= g->budget, "peak %" PRIu64 " over the budget %" PRIu64,
		      max_bytes, g->budget);
	/* Every table keeps a unit; the hottest now has all four, and the
	 * units moved to the new hot half (which cold tables gave theirs
	 * up first is a tie: all of them are cold). */
	unsigned old_half = 0, new_half = 0;
	for (unsigned i = 0; i < FC_TABLES; i++) {
		ck_assert_msg(g->t[i].f.loaded != 0, "table %u has no unit", i);
		unsigned u = (unsigned)__builtin_popcount(g->t[i].f.loaded);
		if (i < FC_TABLES / 2)
			old_half += u;
		else
			new_half += u;
	}
	printf("filter cache: units per table after the reversal:");
	for (unsigned i = 0; i < FC_TABLES; i++)
		printf(" %u", (unsigned)__builtin_popcount(g->t[i].f.loaded));
	printf("\n");
	ck_assert_int_eq(__builtin_popcount(g->t[FC_TABLES - 1].f.loaded), 4);
	ck_assert_msg(new_half > old_half + 10, "units: old hot half %u, new hot half %u",
		      old_half, new_half);
	ck_assert_uint_gt(st.drops, 0);
	for (unsigned i = 0; i < FC_TABLES; i++) {
		filter_cache_detach(g->fc, &g->t[i].f);
		table_filter_free(&g->t[i].f);
		for (unsigned u = 0; u < 4; u++)
			buf_free(&g->t[i].part[u]);
		free(g->t[i].keys);
	}
	filter_cache_free(g->fc);
	free(g);
}
END_TEST

static Suite *filter_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *tc = tcase_create("filter");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_qf_model, 0, 2);
	tcase_add_loop_test(tc, test_qf_build_fpr, 0, 3);
	tcase_add_test(tc, test_qf_merge_resize);
	tcase_add_test(tc, test_qf_bad_bytes);
	tcase_add_test(tc, test_elastic_units);
	tcase_add_test(tc, test_params);
	tcase_add_test(tc, test_descriptor);
	tcase_add_test(tc, test_filter_cache);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	seed = tu_seed("filter");
	SRunner *sr = srunner_create(filter_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
