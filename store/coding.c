/*
 * coding: varints, checksums and struct buf.  FORMAT.md "Encoding".
 */
#include "coding.h"

#include <errno.h>
#include <stdlib.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
/* libxxhash picks SSE2, AVX2 or AVX-512 at run time for these (the same
 * hash, about three times faster with AVX2 over a table's blocks). */
#include <xxh_x86dispatch.h>
#endif

uint8_t *put_varint32(uint8_t *p, uint32_t v)
{
	return put_varint64(p, v);
}

uint8_t *put_varint64(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

int varint_len(uint64_t v)
{
	int n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

const uint8_t *get_varint64(const uint8_t *p, const uint8_t *limit, uint64_t *v)
{
	uint64_t r = 0;
	for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
		uint64_t byte = *p++;
		/* The 10th byte holds bit 63 only: more would overflow. */
		if (shift == 63 && byte > 1)
			return NULL;
		r |= (byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*v = r;
			return p;
		}
	}
	return NULL;
}

const uint8_t *get_varint32(const uint8_t *p, const uint8_t *limit, uint32_t *v)
{
	/* Fast path: one byte, the common case for lengths. */
	if (p < limit && !(*p & 0x80)) {
		*v = *p;
		return p + 1;
	}
	uint64_t r;
	const uint8_t *q = get_varint64(p, limit, &r);
	if (!q || r > UINT32_MAX)
		return NULL;
	*v = (uint32_t)r;
	return q;
}

uint32_t checksum32(const void *data, size_t len)
{
	return (uint32_t)XXH3_64bits(data, len);
}

uint32_t checksum32_2(const void *a, size_t alen, const void *b, size_t blen)
{
	XXH3_state_t st;
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, a, alen);
	XXH3_64bits_update(&st, b, blen);
	return (uint32_t)XXH3_64bits_digest(&st);
}

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

int buf_reserve(struct buf *b, size_t n)
{
	if (b->oom)
		return -ENOMEM;
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *d = realloc(b->data, cap);
	if (!d) {
		b->oom = 1;
		return -ENOMEM;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

void buf_append(struct buf *b, const void *p, size_t n)
{
	if (n == 0 || buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void buf_put_u8(struct buf *b, uint8_t v)
{
	buf_append(b, &v, 1);
}

void buf_put_le32(struct buf *b, uint32_t v)
{
	uint8_t t[4];
	put_le32(t, v);
	buf_append(b, t, 4);
}

void buf_put_le64(struct buf *b, uint64_t v)
{
	uint8_t t[8];
	put_le64(t, v);
	buf_append(b, t, 8);
}

void buf_put_varint32(struct buf *b, uint32_t v)
{
	uint8_t t[VARINT_MAX];
	buf_append(b, t, (size_t)(put_varint32(t, v) - t));
}

void buf_put_varint64(struct buf *b, uint64_t v)
{
	uint8_t t[VARINT_MAX];
	buf_append(b, t, (size_t)(put_varint64(t, v) - t));
}

void buf_put_lenbytes(struct buf *b, const void *p, size_t n)
{
	buf_put_varint32(b, (uint32_t)n);
	buf_append(b, p, n);
}

const uint8_t *get_lenbytes(const uint8_t *p, const uint8_t *limit,
			    const uint8_t **out, size_t *len)
{
	uint32_t n;
	p = get_varint32(p, limit, &n);
	if (!p || (size_t)(limit - p) < n)
		return NULL;
	*out = p;
	*len = n;
	return p + n;
}
