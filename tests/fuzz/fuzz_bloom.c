/*
 * fuzz_bloom: the Bloom filter reader (store/bloom.c, FORMAT.md "Filter").
 * Input: le16 filter length | u8 bits per key | filter | keys.  The filter
 * is a filter block's payload, which the table reader hands to
 * bloom_may_contain checked only by its block checksum; the keys (the
 * rest, cut at each 0xff) are probed against it.  A filter is also built
 * over those keys with the bits per key given.
 *
 * Promises checked: probing any bytes never reads outside the filter
 * (ASan); a filter built over keys contains every one of them (no false
 * negative), whatever the key bytes and bits per key.
 */
#include <stdlib.h>

#include "coding.h"
#include "fuzz_util.h"
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
	for (size_t i = 0; i < n; i++) {
		(void)bloom_may_contain(filter, flen, keys[i], lens[i]);
		(void)bloom_may_contain_hash(filter, flen, bloom_hash(keys[i], lens[i]));
	}

	struct buf built;
	buf_init(&built);
	bloom_build(&built, keys, lens, n, bits);
	fuzz_check(buf_ok(&built) == 0, "bloom_build: out of memory");
	for (size_t i = 0; i < n; i++)
		fuzz_check(bloom_may_contain(built.data, built.len, keys[i], lens[i]),
			   "key %zu of %zu (%zu bytes) missing from a filter of %zu bytes at %d bits",
			   i, n, lens[i], built.len, bits);
	buf_free(&built);
	return 0;
}
