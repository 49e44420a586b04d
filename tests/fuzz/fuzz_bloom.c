/*
 * fuzz_bloom: the filter readers (store/bloom.c, quotient.c, filter.c;
 * FORMAT.md "Filter block", "Filter bytes").
 * Input: le16 filter length | u8 bits per key | filter | keys.  The filter
 * is a filter block's payload, which the table reader hands to
 * bloom_may_contain checked only by its block checksum; the keys (the
 * rest, cut at each 0xff) are probed against it.  A filter is also built
 * over those keys with the bits per key given.
 *
 * The same bytes are also probed as a quotient filter part and decoded
 * as a filter descriptor.
 *
 * Promises checked: probing any bytes never reads outside the filter
 * (ASan) and ends; a filter built over keys contains every one of them (no
 * false negative), whatever the key bytes and bits per key, for the Bloom
 * and the quotient filter.
 */
#include <stdlib.h>

#include "coding.h"
#include "fuzz_util.h"
#include "filter.h"
#include "sst.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_KEYS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	if (size < 3)
		return 0;
	size_t flen = (size_t)data[0] | (size_t)data[1] << 8;
	if (flen > size - 3)
		flen = size - 3;
	int bits = data[2] % 40 - 4; /* the builder treats < 1 as 1 */
	const uint8_t *filter = data + 3;
	const uint8_t *rest = filter + flen;
	size_t rlen = size - 3 - flen;

	/* Keys: cut the rest at each byte 0xff. */
	const uint8_t *keys[MAX_KEYS];
	size_t lens[MAX_KEYS];
	size_t n = 0;
	const uint8_t *start = rest;
	for (size_t i = 0; i <= rlen && n < MAX_KEYS; i++) {
		if (i == rlen || rest[i] == 0xff) {
			keys[n] = start;
			lens[n] = (size_t)(rest + i - start);
			n++;
			start = rest + i + 1;
		}
	}
	uint64_t hashes[MAX_KEYS];
	for (size_t i = 0; i < n; i++) {
		hashes[i] = bloom_hash(keys[i], lens[i]);
		(void)bloom_may_contain(filter, flen, keys[i], lens[i]);
		(void)bloom_may_contain_hash(filter, flen, hashes[i]);
		(void)quotient_may_contain(filter, flen, hashes[i]);
	}
	struct filter_desc d;
	(void)filter_desc_decode(filter, flen, 1u << 20, &d);

	struct buf built;
	buf_init(&built);
	bloom_build(&built, keys, lens, n, bits);
	fuzz_check(buf_ok(&built) == 0, "bloom_build: out of memory");
	for (size_t i = 0; i < n; i++)
		fuzz_check(bloom_may_contain(built.data, built.len, keys[i], lens[i]),
			   "key %zu of %zu (%zu bytes) missing from a filter of %zu bytes at %d bits",
			   i, n, lens[i], built.len, bits);
	buf_clear(&built);
	quotient_build(&built, hashes, n, (unsigned)(data[2] % 31) + 2);
	fuzz_check(buf_ok(&built) == 0, "quotient_build: out of memory");
	for (size_t i = 0; i < n; i++)
		fuzz_check(quotient_may_contain(built.data, built.len, hashes[i]),
			   "key %zu of %zu missing from a quotient filter of %zu bytes", i, n,
			   built.len);
	buf_free(&built);
	return 0;
}
