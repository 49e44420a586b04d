/*
 * test_coding: store/coding.{h,c} (suite "coding").
 *
 * Fixed-width encoders write little-endian (or, _be, big-endian) bytes and
 * round-trip; varints
 * round-trip at every 7-bit boundary and report their length; decoders
 * return NULL on truncated, overlong or overflowing input and on a length
 * prefix that runs past the limit; struct buf grows and keeps its bytes;
 * checksum32 is the low half of XXH3-64 and checksum32_2 equals checksum32
 * of the concatenation.  FORMAT.md "Encoding".
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "coding.h"

START_TEST(test_fixed_le)
{
	uint8_t b[8];
	put_le16(b, 0x1234);
	ck_assert_uint_eq(b[0], 0x34);
	ck_assert_uint_eq(b[1], 0x12);
	ck_assert_uint_eq(get_le16(b), 0x1234);

	put_le32(b, 0x89abcdefu);
	ck_assert_uint_eq(b[0], 0xef);
	ck_assert_uint_eq(b[3], 0x89);
	ck_assert_uint_eq(get_le32(b), 0x89abcdefu);

	put_le64(b, 0x0123456789abcdefull);
	ck_assert_uint_eq(b[0], 0xef);
	ck_assert_uint_eq(b[7], 0x01);
	ck_assert_uint_eq(get_le64(b), 0x0123456789abcdefull);

	const uint64_t vals[] = { 0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff,
				  0x10000, 0xffffffffu, 0x100000000ull,
				  UINT64_MAX, UINT64_MAX - 1, 1ull << 63 };
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint64_t v = vals[i];
		put_le16(b, (uint16_t)v);
		ck_assert_uint_eq(get_le16(b), (uint16_t)v);
		put_le32(b, (uint32_t)v);
		ck_assert_uint_eq(get_le32(b), (uint32_t)v);
		put_le64(b, v);
		ck_assert_uint_eq(get_le64(b), v);
	}
}
END_TEST

START_TEST(test_fixed_be)
{
	uint8_t b[8];
	put_be32(b, 0x89abcdefu);
	ck_assert_uint_eq(b[0], 0x89);
	ck_assert_uint_eq(b[3], 0xef);
	ck_assert_uint_eq(get_be32(b), 0x89abcdefu);

	put_be64(b, 0x0123456789abcdefull);
	ck_assert_uint_eq(b[0], 0x01);
	ck_assert_uint_eq(b[7], 0xef);
	ck_assert_uint_eq(get_be64(b), 0x0123456789abcdefull);

	/* Byte order is numeric order: what the keys rely on. */
	const uint64_t vals[] = { 0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff,
				  0x10000, 0xffffffffu, 0x100000000ull,
				  UINT64_MAX - 1, UINT64_MAX, 1ull << 63 };
	uint8_t prev[8];
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint64_t v = vals[i];
		put_be32(b, (uint32_t)v);
		ck_assert_uint_eq(get_be32(b), (uint32_t)v);
		put_be64(b, v);
		ck_assert_uint_eq(get_be64(b), v);
		if (i && vals[i - 1] < v)
			ck_assert_int_lt(memcmp(prev, b, 8), 0);
		memcpy(prev, b, 8);
	}
}
END_TEST

/* Every 7-bit boundary (2^k - 1, 2^k, 2^k + 1) plus the extremes. */
static size_t boundary_values(uint64_t *out)
{
	size_t n = 0;
	out[n++] = 0;
	out[n++] = 1;
	for (int k = 7; k < 64; k += 7) {
		out[n++] = (1ull << k) - 1;
		out[n++] = 1ull << k;
		out[n++] = (1ull << k) + 1;
	}
	out[n++] = UINT32_MAX;
	out[n++] = (uint64_t)UINT32_MAX + 1;
	out[n++] = 1ull << 63;
	out[n++] = UINT64_MAX - 1;
	out[n++] = UINT64_MAX;
	return n;
}

START_TEST(test_varint64_roundtrip)
{
	uint64_t vals[64];
	size_t n = boundary_values(vals);
	for (size_t i = 0; i < n; i++) {
		uint8_t b[VARINT_MAX + 4];
		memset(b, 0xee, sizeof(b));
		uint8_t *end = put_varint64(b, vals[i]);
		int len = (int)(end - b);
		ck_assert_int_le(len, VARINT_MAX);
		ck_assert_int_eq(len, varint_len(vals[i]));
		ck_assert_uint_eq(b[len], 0xee); /* nothing written past the end */
		uint64_t v = 0;
		/* Decoding with slack after the varint stops at its end. */
		ck_assert_ptr_eq(get_varint64(b, b + sizeof(b), &v), end);
		ck_assert_uint_eq(v, vals[i]);
		/* And with the exact limit. */
		ck_assert_ptr_eq(get_varint64(b, end, &v), end);
		ck_assert_uint_eq(v, vals[i]);
	}
	/* Lengths at the boundaries. */
	ck_assert_int_eq(varint_len(0), 1);
	ck_assert_int_eq(varint_len(127), 1);
	ck_assert_int_eq(varint_len(128), 2);
	ck_assert_int_eq(varint_len(16383), 2);
	ck_assert_int_eq(varint_len(16384), 3);
	ck_assert_int_eq(varint_len(UINT32_MAX), 5);
	ck_assert_int_eq(varint_len(UINT64_MAX), 10);

	/* A pseudo-random sweep (fixed seed: deterministic). */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t val = x >> (i % 64);
		uint8_t b[VARINT_MAX];
		uint8_t *end = put_varint64(b, val);
		uint64_t v = 0;
		if (get_varint64(b, end, &v) != end || v != val)
			ck_abort_msg("varint64 %llu decoded as %llu",
				     (unsigned long long)val,
				     (unsigned long long)v);
	}
}
END_TEST

START_TEST(test_varint32_roundtrip)
{
	const uint32_t vals[] = { 0, 1, 127, 128, 129, 16383, 16384,
				  (1u << 21) - 1, 1u << 21, (1u << 28) - 1,
				  1u << 28, UINT32_MAX - 1, UINT32_MAX };
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint8_t b[VARINT_MAX];
		uint8_t *end = put_varint32(b, vals[i]);
		ck_assert_int_le(end - b, 5);
		ck_assert_int_eq(end - b, varint_len(vals[i]));
		uint32_t v = 0;
		ck_assert_ptr_eq(get_varint32(b, end, &v), end);
		ck_assert_uint_eq(v, vals[i]);
		/* A varint32 is a valid varint64 of the same value. */
		uint64_t v64 = 0;
		ck_assert_ptr_eq(get_varint64(b, end, &v64), end);
		ck_assert_uint_eq(v64, vals[i]);
	}
}
END_TEST

START_TEST(test_varint_truncated)
{
	uint64_t vals[64];
	size_t n = boundary_values(vals);
	for (size_t i = 0; i < n; i++) {
		uint8_t b[VARINT_MAX];
		uint8_t *end = put_varint64(b, vals[i]);
		size_t len = (size_t)(end - b);
		for (size_t cut = 0; cut < len; cut++) {
			uint64_t v64;
			ck_assert_ptr_null(get_varint64(b, b + cut, &v64));
			if (vals[i] <= UINT32_MAX) {
				uint32_t v32;
				ck_assert_ptr_null(get_varint32(b, b + cut, &v32));
			}
		}
	}
	/* Empty input. */
	uint8_t z = 0;
	uint64_t v64;
	uint32_t v32;
	ck_assert_ptr_null(get_varint64(&z, &z, &v64));
	ck_assert_ptr_null(get_varint32(&z, &z, &v32));
}
END_TEST

START_TEST(test_varint_overlong)
{
	uint8_t b[16];
	uint64_t v64;
	uint32_t v32;

	/* 11 bytes: more than any varint64 may have. */
	memset(b, 0x80, sizeof(b));
	b[10] = 0x00;
	ck_assert_ptr_null(get_varint64(b, b + 11, &v64));
	/* Continuation bits forever. */
	memset(b, 0xff, sizeof(b));
	ck_assert_ptr_null(get_varint64(b, b + sizeof(b), &v64));
	ck_assert_ptr_null(get_varint32(b, b + sizeof(b), &v32));

	/* 10 bytes whose last carries more than bit 63: overflow. */
	memset(b, 0xff, 9);
	b[9] = 0x02;
	ck_assert_ptr_null(get_varint64(b, b + 10, &v64));
	b[9] = 0x7f;
	ck_assert_ptr_null(get_varint64(b, b + 10, &v64));
	b[9] = 0x01; /* exactly UINT64_MAX */
	ck_assert_ptr_eq(get_varint64(b, b + 10, &v64), b + 10);
	ck_assert_uint_eq(v64, UINT64_MAX);

	/* varint32 of a value above UINT32_MAX. */
	uint8_t *end = put_varint64(b, (uint64_t)UINT32_MAX + 1);
	ck_assert_ptr_null(get_varint32(b, end, &v32));
	end = put_varint64(b, UINT64_MAX);
	ck_assert_ptr_null(get_varint32(b, end, &v32));
	/* Five bytes whose last has bits above 2^32. */
	memset(b, 0xff, 4);
	b[4] = 0x10;
	ck_assert_ptr_null(get_varint32(b, b + 5, &v32));
	b[4] = 0x0f;
	ck_assert_ptr_eq(get_varint32(b, b + 5, &v32), b + 5);
	ck_assert_uint_eq(v32, UINT32_MAX);
}
END_TEST

START_TEST(test_lenbytes)
{
	struct buf b;
	buf_init(&b);
	buf_put_lenbytes(&b, "hello", 5);
	buf_put_lenbytes(&b, "", 0);
	char big[300];
	memset(big, 'x', sizeof(big));
	buf_put_lenbytes(&b, big, sizeof(big)); /* two-byte length */
	ck_assert_int_eq(buf_ok(&b), 0);
	ck_assert_uint_eq(b.len, 1 + 5 + 1 + 2 + sizeof(big));

	const uint8_t *p = b.data, *limit = b.data + b.len, *s;
	size_t len;
	p = get_lenbytes(p, limit, &s, &len);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(len, 5);
	ck_assert_mem_eq(s, "hello", 5);
	p = get_lenbytes(p, limit, &s, &len);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(len, 0);
	const uint8_t *third = p;
	p = get_lenbytes(p, limit, &s, &len);
	ck_assert_ptr_eq(p, limit);
	ck_assert_uint_eq(len, sizeof(big));
	ck_assert_mem_eq(s, big, sizeof(big));
	ck_assert_ptr_null(get_lenbytes(p, limit, &s, &len)); /* at the end */

	/* Every truncation of the third slice overruns. */
	for (const uint8_t *cut = third; cut < limit; cut++)
		ck_assert_ptr_null(get_lenbytes(third, cut, &s, &len));

	/* A length far past the limit (and past any sane size). */
	uint8_t evil[8];
	uint8_t *e = put_varint32(evil, UINT32_MAX);
	*e++ = 'a';
	ck_assert_ptr_null(get_lenbytes(evil, e, &s, &len));
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_growth)
{
	struct buf b;
	buf_init(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(buf_ok(&b), 0);
	buf_append(&b, NULL, 0); /* nothing, no allocation needed */
	ck_assert_uint_eq(b.len, 0);

	/* Grow from nothing to ~1 MiB in odd-sized steps. */
	size_t total = 0;
	uint8_t chunk[257];
	for (int i = 0; total < (1u << 20); i++) {
		size_t n = (size_t)(i % 257) + 1;
		for (size_t j = 0; j < n; j++)
			chunk[j] = (uint8_t)(total + j);
		buf_append(&b, chunk, n);
		total += n;
		if (b.len != total || b.cap < b.len)
			ck_abort_msg("len %zu cap %zu, want len %zu", b.len,
				     b.cap, total);
	}
	ck_assert_int_eq(buf_ok(&b), 0);
	for (size_t j = 0; j < total; j++)
		if (b.data[j] != (uint8_t)j) /* plain test: ck_assert is slow */
			ck_abort_msg("byte %zu is %u", j, b.data[j]);

	/* Reserve does not change len; clear keeps the memory. */
	size_t cap = b.cap;
	ck_assert_int_eq(buf_reserve(&b, 10), 0);
	ck_assert_uint_eq(b.len, total);
	buf_clear(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_ge(b.cap, cap);
	ck_assert_int_eq(buf_reserve(&b, cap), 0);
	ck_assert_uint_eq(b.cap, cap); /* fits: no growth */

	/* The typed helpers write the documented encodings. */
	buf_put_u8(&b, 0xab);
	buf_put_le32(&b, 0x01020304u);
	buf_put_le64(&b, 0x1122334455667788ull);
	buf_put_varint32(&b, 300);
	buf_put_varint64(&b, UINT64_MAX);
	ck_assert_int_eq(buf_ok(&b), 0);
	ck_assert_uint_eq(b.len, 1 + 4 + 8 + 2 + 10);
	ck_assert_uint_eq(b.data[0], 0xab);
	ck_assert_uint_eq(get_le32(b.data + 1), 0x01020304u);
	ck_assert_uint_eq(get_le64(b.data + 5), 0x1122334455667788ull);
	uint32_t v32;
	uint64_t v64;
	const uint8_t *p = get_varint32(b.data + 13, b.data + b.len, &v32);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(v32, 300);
	p = get_varint64(p, b.data + b.len, &v64);
	ck_assert_ptr_eq(p, b.data + b.len);
	ck_assert_uint_eq(v64, UINT64_MAX);

	buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
}
END_TEST

START_TEST(test_checksum)
{
	uint8_t data[1000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 131 + 7);
	/* The documented definition: the low 32 bits of XXH3-64. */
	ck_assert_uint_eq(checksum32(data, sizeof(data)),
			  (uint32_t)XXH3_64bits(data, sizeof(data)));
	ck_assert_uint_eq(checksum32("", 0), (uint32_t)XXH3_64bits("", 0));
	ck_assert_uint_ne(checksum32(data, 100), checksum32(data, 101));

	/* Every split of several lengths, including empty pieces (the
	 * lengths cross XXH3's 16/128/240-byte internal paths). */
	const size_t lens[] = { 0, 1, 3, 16, 17, 128, 129, 240, 241, 1000 };
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		size_t len = lens[li];
		uint32_t whole = checksum32(data, len);
		for (size_t cut = 0; cut <= len; cut++)
			ck_assert_uint_eq(checksum32_2(data, cut, data + cut,
						       len - cut),
					  whole);
	}
	/* A flipped bit changes the sum. */
	uint32_t before = checksum32(data, sizeof(data));
	data[500] ^= 1;
	ck_assert_uint_ne(checksum32(data, sizeof(data)), before);
}
END_TEST

static Suite *coding_suite(void)
{
	Suite *s = suite_create("coding");
	TCase *tc = tcase_create("coding");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fixed_le);
	tcase_add_test(tc, test_fixed_be);
	tcase_add_test(tc, test_varint64_roundtrip);
	tcase_add_test(tc, test_varint32_roundtrip);
	tcase_add_test(tc, test_varint_truncated);
	tcase_add_test(tc, test_varint_overlong);
	tcase_add_test(tc, test_lenbytes);
	tcase_add_test(tc, test_buf_growth);
	tcase_add_test(tc, test_checksum);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(coding_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
