/*
 * batch: store_batch_* and the batch record codec.  FORMAT.md "Write batch".
 * A batch belongs to one thread at a time.
 */
#include "batch.h"

#include <errno.h>
#include <stdlib.h>

#include "dbformat.h"

static void batch_reset(struct store_batch *b)
{
	buf_clear(&b->rep);
	uint8_t hdr[BATCH_HEADER_SIZE] = { 0 };
	buf_append(&b->rep, hdr, sizeof(hdr));
	b->user_bytes = 0;
}

struct store_batch *store_batch_new(void)
{
	struct store_batch *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	buf_init(&b->rep);
	batch_reset(b);
	if (buf_ok(&b->rep)) {
		store_batch_free(b);
		return NULL;
	}
	return b;
}

void store_batch_free(struct store_batch *b)
{
	if (!b)
		return;
	buf_free(&b->rep);
	free(b);
}

void store_batch_clear(struct store_batch *b)
{
	b->rep.oom = 0;
	batch_reset(b);
}

uint32_t batch_count(const struct store_batch *b)
{
	return get_le32(b->rep.data + 8);
}

size_t store_batch_count(const struct store_batch *b)
{
	return batch_count(b);
}

void batch_set_sequence(struct store_batch *b, uint64_t seq)
{
	put_le64(b->rep.data, seq);
}

uint64_t batch_sequence(const struct store_batch *b)
{
	return get_le64(b->rep.data);
}

/* The count of a log link: no batch reaches it. */
#define LINK_COUNT 0xffffffffu

static int add_op(struct store_batch *b, int type, const void *key, size_t klen,
		  const void *val, size_t vlen)
{
	if (klen > UINT32_MAX || vlen > UINT32_MAX)
		return -EINVAL;
	if (batch_count(b) >= LINK_COUNT - 1)
		return -E2BIG;
	size_t old = b->rep.len;
	if (buf_reserve(&b->rep, 1 + 2 * VARINT_MAX + klen + vlen))
		return -ENOMEM;
	buf_put_u8(&b->rep, (uint8_t)type);
	buf_put_lenbytes(&b->rep, key, klen);
	if (type == KTYPE_VALUE)
		buf_put_lenbytes(&b->rep, val, vlen);
	if (buf_ok(&b->rep)) {
		b->rep.len = old;
		return -ENOMEM;
	}
	put_le32(b->rep.data + 8, batch_count(b) + 1);
	b->user_bytes += klen + vlen;
	return 0;
}

int store_batch_put(struct store_batch *b, const void *key, size_t klen,
		    const void *val, size_t vlen)
{
	return add_op(b, KTYPE_VALUE, key, klen, val, vlen);
}

int store_batch_delete(struct store_batch *b, const void *key, size_t klen)
{
	return add_op(b, KTYPE_DELETE, key, klen, NULL, 0);
}

int batch_append(struct store_batch *dst, const struct store_batch *src)
{
	size_t n = src->rep.len - BATCH_HEADER_SIZE;
	if ((uint64_t)batch_count(dst) + batch_count(src) >= LINK_COUNT)
		return -E2BIG;
	if (buf_reserve(&dst->rep, n))
		return -ENOMEM;
	buf_append(&dst->rep, src->rep.data + BATCH_HEADER_SIZE, n);
	put_le32(dst->rep.data + 8, batch_count(dst) + batch_count(src));
	dst->user_bytes += src->user_bytes;
	return 0;
}

void batch_save(const struct store_batch *b, struct batch_mark *m)
{
	m->len = b->rep.len;
	m->count = batch_count(b);
	m->user_bytes = b->user_bytes;
}

void batch_rollback(struct store_batch *b, const struct batch_mark *m)
{
	b->rep.oom = 0; /* a failed realloc left the bytes as they were */
	b->rep.len = m->len;
	put_le32(b->rep.data + 8, m->count);
	b->user_bytes = m->user_bytes;
}

int batch_set_rep(struct store_batch *b, const uint8_t *rep, size_t len)
{
	if (len < BATCH_HEADER_SIZE)
		return -EUCLEAN;
	buf_clear(&b->rep);
	buf_append(&b->rep, rep, len);
	return buf_ok(&b->rep);
}

int batch_iterate(const uint8_t *rep, size_t len, batch_op_fn fn, void *ctx)
{
	if (len < BATCH_HEADER_SIZE)
		return -EUCLEAN;
	uint64_t seq = get_le64(rep);
	uint32_t count = get_le32(rep + 8);
	const uint8_t *p = rep + BATCH_HEADER_SIZE, *limit = rep + len;
	uint32_t found = 0;
	while (p < limit) {
		int type = *p++;
		const uint8_t *key, *val = NULL;
		size_t klen, vlen = 0;
		if (type != KTYPE_VALUE && type != KTYPE_DELETE)
			return -EUCLEAN;
		p = get_lenbytes(p, limit, &key, &klen);
		if (p && type == KTYPE_VALUE)
			p = get_lenbytes(p, limit, &val, &vlen);
		if (!p)
			return -EUCLEAN;
		int rc = fn(ctx, seq + found, type, key, klen, val, vlen);
		if (rc)
			return rc;
		found++;
	}
	return found == count ? 0 : -EUCLEAN;
}

void batch_link_encode(uint8_t out[BATCH_LINK_SIZE], uint64_t prev, uint64_t size)
{
	put_le64(out, 0);
	put_le32(out + 8, LINK_COUNT);
	put_le64(out + 12, prev);
	put_le64(out + 20, size);
}

bool batch_link_decode(const uint8_t *rep, size_t len, uint64_t *prev,
		       uint64_t *size)
{
	if (len != BATCH_LINK_SIZE || get_le64(rep) != 0 ||
	    get_le32(rep + 8) != LINK_COUNT)
		return false;
	*prev = get_le64(rep + 12);
	*size = get_le64(rep + 20);
	return true;
}
