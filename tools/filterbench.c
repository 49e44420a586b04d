/*
 * filterbench: the filter policies alone, without a store (FILTERS.md).
 *
 *   filterbench [--keys N] [--probes N] [--rounds N] [--seed N]
 *
 * For random 64-bit key hashes it prints, per policy and parameter:
 *   - bytes and bits per key, the measured false-positive rate over
 *     --probes absent hashes and the theory's;
 *   - for quotient filters, the time to build the filter of 2N keys from
 *     their hashes against the time to merge two filters of N keys each
 *     into the same filter (qf_merge), and to double one (qf_resize): best
 *     of --rounds, with the median beside it.
 * Exit 0, or 1 when a built filter misses one of its own keys.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filter.h"

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static uint64_t arg(int argc, char **argv, const char *name, uint64_t def)
{
	size_t n = strlen(name);
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
			return strtoull(argv[i] + n + 1, NULL, 10);
		if (!strcmp(argv[i], name) && i + 1 < argc)
			return strtoull(argv[i + 1], NULL, 10);
	}
	return def;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: filterbench [--keys N] [--probes N] [--rounds N] [--seed N]\n");
			return 0;
		}
	size_t n = arg(argc, argv, "--keys", 1000000);
	size_t probes = arg(argc, argv, "--probes", 4000000);
	int rounds = (int)arg(argc, argv, "--rounds", 5);
	uint64_t s = arg(argc, argv, "--seed", 42);
	if (n < 2 || rounds < 1 || rounds > 99) {
		fprintf(stderr, "filterbench: --keys >= 2, --rounds 1..99\n");
		return 2;
	}
	uint64_t *h = malloc(2 * n * sizeof(*h)), *a = malloc(probes * sizeof(*a));
	if (!h || !a)
		return 1;
	for (size_t i = 0; i < 2 * n; i++)
		h[i] = mix(&s);
	for (size_t i = 0; i < probes; i++)
		a[i] = mix(&s);
	int bad = 0;

	printf("%zu keys, %zu absent probes\n\n", n, probes);
	printf("%-14s %12s %9s %10s %10s\n", "policy", "bytes", "bits/key", "fpr", "theory");
	static const unsigned bloom_bits[] = {4, 8, 10, 16};
	for (size_t b = 0; b < sizeof(bloom_bits) / sizeof(bloom_bits[0]); b++) {
		struct buf f;
		buf_init(&f);
		bloom_build_seeded(&f, h, n, bloom_bits[b], 0);
		for (size_t i = 0; i < n; i++)
			bad |= !bloom_test_seeded(f.data, f.len, h[i], 0);
		size_t fp = 0;
		for (size_t i = 0; i < probes; i++)
			fp += bloom_test_seeded(f.data, f.len, a[i], 0);
		char name[32];
		snprintf(name, sizeof(name), "bloom:%u", bloom_bits[b]);
		printf("%-14s %12zu %9.2f %10.5f %10.5f\n", name, f.len, (double)f.len * 8 / (double)n,
		       (double)fp / (double)probes, bloom_fpr(bloom_bits[b]));
		buf_free(&f);
	}
	static const unsigned qr[] = {5, 6, 7, 8, 10};
	for (size_t r = 0; r < sizeof(qr) / sizeof(qr[0]); r++) {
		struct qf f;
		if (qf_build(&f, h, n, qr[r]))
			return 1;
		unsigned p = f.q + f.r;
		for (size_t i = 0; i < n; i++)
			bad |= !qf_contains(&f, qf_fingerprint(p, h[i]));
		size_t fp = 0;
		for (size_t i = 0; i < probes; i++)
			fp += qf_contains(&f, qf_fingerprint(p, a[i]));
		char name[32];
		snprintf(name, sizeof(name), "quotient:%u", qr[r]);
		size_t bytes = f.bytes + 20;
		printf("%-14s %12zu %9.2f %10.5f %10.5f  (q=%u, load %.3f)\n", name, bytes,
		       (double)bytes * 8 / (double)n, (double)fp / (double)probes,
		       (double)f.entries / ldexp(1.0, (int)p), f.q,
		       (double)f.entries / ldexp(1.0, (int)f.q));
		qf_free(&f);
	}

	/* Merge and resize against a build from the hashes. */
	printf("\nquotient:8, times in ms (best of %d, median):\n", rounds);
	double tb[99], tm[99], td[99];
	for (int k = 0; k < rounds; k++) {
		struct qf hx, hy, m, built, d;
		/* Two filters of n keys with one more remainder bit: their
		 * union has the fingerprint bits of the 2n-key filter. */
		if (qf_build(&hx, h, n, 9) || qf_build(&hy, h + n, n, 9))
			return 1;
		double t0 = now();
		if (qf_build(&built, h, 2 * n, 8))
			return 1;
		double t1 = now();
		if (qf_merge(&hx, &hy, &m))
			return 1;
		double t2 = now();
		if (qf_resize(&hx, hx.q + 1, &d))
			return 1;
		double t3 = now();
		tb[k] = (t1 - t0) * 1e3;
		tm[k] = (t2 - t1) * 1e3;
		td[k] = (t3 - t2) * 1e3;
		/* The merge equals the build: same slots, same answers. */
		if (m.q != built.q || m.r != built.r || m.entries != built.entries ||
		    memcmp(m.bits, built.bits, built.bytes < m.bytes ? built.bytes : m.bytes)) {
			fprintf(stderr, "filterbench: merge differs from the build (q %u/%u, r %u/%u, "
				"%" PRIu64 "/%" PRIu64 " entries)\n", m.q, built.q, m.r, built.r,
				m.entries, built.entries);
			bad = 1;
		}
		qf_free(&hx);
		qf_free(&hy);
		qf_free(&m);
		qf_free(&built);
		qf_free(&d);
	}
	qsort(tb, (size_t)rounds, sizeof(double), cmp_d);
	qsort(tm, (size_t)rounds, sizeof(double), cmp_d);
	qsort(td, (size_t)rounds, sizeof(double), cmp_d);
	int md = rounds / 2;
	printf("  build of %zu keys from their hashes: %8.1f (%8.1f)\n", 2 * n, tb[0], tb[md]);
	printf("  merge of two %zu-key filters:        %8.1f (%8.1f)  %.1fx faster\n", n, tm[0],
	       tm[md], tb[0] / tm[0]);
	printf("  resize (double) of a %zu-key filter:  %8.1f (%8.1f)\n", n, td[0], td[md]);
	free(h);
	free(a);
	if (bad)
		fprintf(stderr, "filterbench: a filter missed one of its own keys\n");
	return bad;
}
