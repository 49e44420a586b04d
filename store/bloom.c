/*
 * bloom: Bloom filters over user-key hashes: the standard per-table filter
 * (policy STORE_FILTER_BLOOM) and ElasticBF's units.  FORMAT.md "Bloom filter
 * bytes", FILTERS.md "Bloom" and "ElasticBF".
 *
 * Layout: m/8 bytes of bit array (bit b is byte b/8, mask 1 << (b % 8)),
 * then one byte k, the number of probes.  m = max(n * bits_per_key, 64)
 * rounded up to a whole byte, so m is always a multiple of 8.
 *
 * Hashing: one h = XXH3_64bits(key) per key; h1 = low 32 bits, h2 = high
 * 32 bits with the lowest bit forced to 1.  Probe i (0 <= i < k) sets or
 * tests bit (h1 + i * h2) mod m, computed exactly in 64 bits.  Because m is
 * a multiple of 8 and h2 is odd, h2 mod m is never 0, so the probes of a
 * key never collapse onto a single bit.  k = round(ln 2 * bits_per_key)
 * clamped to [1, 30].
 *
 * Seeds: seed 0 probes from h itself (the standard filter); seed s > 0
 * probes from fmix64(h + s * 0x9E3779B97F4A7C15), the 64-bit finalizer of
 * MurmurHash3, so the units of one ElasticBF table probe independent bits.
 *
 * A filter that cannot be read (shorter than 2 bytes, or k > 30) answers
 * "maybe" to every query: a damaged filter costs reads, never correctness.
 * No locking: pure functions over caller-owned memory.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "coding.h"
#include "filter.h"
#include "sst.h"

#define BLOOM_MIN_BITS 64
#define BLOOM_MAX_PROBES 30

uint64_t bloom_hash(const void *key, size_t len)
{
	return filter_hash(key, len);
}

static uint64_t seeded(uint64_t h, unsigned seed)
{
	if (!seed)
		return h;
	h += (uint64_t)seed * 0x9E3779B97F4A7C15ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static int probes_for(int bits_per_key)
{
	/* ln 2 * bits_per_key minimises the false-positive rate. */
	int k = (int)((double)bits_per_key * 0.69314718055994531 + 0.5);
	if (k < 1)
		k = 1;
	if (k > BLOOM_MAX_PROBES)
		k = BLOOM_MAX_PROBES;
	return k;
}

/*
 * Walk the k probes of h over m bits.  (h1 + i*h2) mod m is computed
 * incrementally as pos += h2 mod m (mod m), which is the same value and
 * needs only one division per key.
 */
static void set_bits(uint8_t *bits, uint64_t m, int k, uint64_t h)
{
	uint64_t pos = (uint32_t)h % m;
	uint64_t step = ((uint32_t)(h >> 32) | 1u) % m;
	for (int i = 0; i < k; i++) {
		bits[pos >> 3] |= (uint8_t)(1u << (pos & 7));
		pos += step;
		if (pos >= m)
			pos -= m;
	}
}

static bool test_bits(const uint8_t *bits, uint64_t m, int k, uint64_t h)
{
	uint64_t pos = (uint32_t)h % m;
	uint64_t step = ((uint32_t)(h >> 32) | 1u) % m;
	for (int i = 0; i < k; i++) {
		if (!(bits[pos >> 3] & (1u << (pos & 7))))
			return false;
		pos += step;
		if (pos >= m)
			pos -= m;
	}
	return true;
}

/*
 * Append a zeroed filter sized for n keys to out; return its bit array
 * (NULL if out ran out of memory) and set *m and *k.
 */
static uint8_t *filter_start(struct buf *out, size_t n, unsigned bits_per_key,
			     uint64_t *m, int *k)
{
	if (bits_per_key < 1)
		bits_per_key = 1;
	uint64_t nbits = (uint64_t)n * (uint64_t)bits_per_key;
	if (nbits < BLOOM_MIN_BITS)
		nbits = BLOOM_MIN_BITS;
	size_t bytes = (size_t)((nbits + 7) / 8);
	if (buf_reserve(out, bytes + 1))
		return NULL;
	uint8_t *bits = out->data + out->len;
	memset(bits, 0, bytes);
	*k = probes_for((int)bits_per_key);
	bits[bytes] = (uint8_t)*k;
	out->len += bytes + 1;
	*m = (uint64_t)bytes * 8;
	return bits;
}

void bloom_build_seeded(struct buf *out, const uint64_t *hashes, size_t n,
			unsigned bits_per_key, unsigned seed)
{
	uint64_t m;
	int k;
	uint8_t *bits = filter_start(out, n, bits_per_key, &m, &k);
	if (!bits)
		return; /* out->oom is set; the owner checks buf_ok() */
	for (size_t i = 0; i < n; i++)
		set_bits(bits, m, k, seeded(hashes[i], seed));
}

void bloom_build_hashes(struct buf *out, const uint64_t *hashes, size_t n,
			int bits_per_key)
{
	bloom_build_seeded(out, hashes, n, bits_per_key < 1 ? 1u : (unsigned)bits_per_key, 0);
}

void bloom_build(struct buf *out, const uint8_t *const *keys,
		 const size_t *lens, size_t n, int bits_per_key)
{
	uint64_t m;
	int k;
	uint8_t *bits = filter_start(out, n, bits_per_key < 1 ? 1u : (unsigned)bits_per_key,
				     &m, &k);
	if (!bits)
		return;
	for (size_t i = 0; i < n; i++)
		set_bits(bits, m, k, bloom_hash(keys[i], lens[i]));
}

const char *bloom_problem(const uint8_t *filter, size_t flen)
{
	if (!filter || flen < 2)
		return "shorter than 2 bytes";
	if (filter[flen - 1] > BLOOM_MAX_PROBES)
		return "more than 30 probes";
	if (filter[flen - 1] == 0)
		return "no probes";
	return NULL;
}

bool bloom_test_seeded(const uint8_t *filter, size_t flen, uint64_t h,
		       unsigned seed)
{
	if (bloom_problem(filter, flen))
		return true;
	return test_bits(filter, (uint64_t)(flen - 1) * 8, filter[flen - 1],
			 seeded(h, seed));
}

bool bloom_may_contain_hash(const uint8_t *filter, size_t flen, uint64_t h)
{
	return bloom_test_seeded(filter, flen, h, 0);
}

bool bloom_may_contain(const uint8_t *filter, size_t flen, const void *key,
		       size_t klen)
{
	return bloom_may_contain_hash(filter, flen, bloom_hash(key, klen));
}

double bloom_fpr(double bits_per_key)
{
	/* k probes over m = n * bits bits: (1 - e^(-k/bits))^k. */
	if (bits_per_key <= 0)
		return 1.0;
	int k = probes_for((int)bits_per_key);
	return pow(1.0 - exp(-(double)k / bits_per_key), (double)k);
}
