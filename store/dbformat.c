/*
 * dbformat: the internal key comparator and the empty/error iterator.
 * FORMAT.md "Internal keys".
 */
#include "dbformat.h"

#include <stdlib.h>

#include "iter.h"

/* ikey_compare in full: user keys (ukey_compare), then tags. */
static __attribute__((noinline)) int compare_whole(const uint8_t *a, size_t alen,
						   const uint8_t *b, size_t blen)
{
	/* Internal keys are never shorter than a tag where this is used; treat
	 * a short one as an empty user key with tag 0 rather than read past it. */
	size_t au = alen >= IKEY_TAG_LEN ? alen - IKEY_TAG_LEN : 0;
	size_t bu = blen >= IKEY_TAG_LEN ? blen - IKEY_TAG_LEN : 0;
	int r = ukey_compare(a, au, b, bu);
	if (r)
		return r;
	uint64_t at = alen >= IKEY_TAG_LEN ? get_le64(a + au) : 0;
	uint64_t bt = blen >= IKEY_TAG_LEN ? get_le64(b + bu) : 0;
	/* Newer (larger tag) first. */
	return at > bt ? -1 : at < bt ? 1 : 0;
}

/* The common case first, apart from compare_whole, so that it needs no
 * stack frame: user keys that differ in their first 8 bytes, or in the
 * next 8 (the filesystem's keys share the first 8 within a directory). */
int ikey_compare(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	if (alen >= IKEY_TAG_LEN + 8 && blen >= IKEY_TAG_LEN + 8) {
		uint64_t x = get_be64(a), y = get_be64(b);
		if (x != y)
			return x < y ? -1 : 1;
		if (alen >= IKEY_TAG_LEN + 16 && blen >= IKEY_TAG_LEN + 16) {
			x = get_be64(a + 8);
			y = get_be64(b + 8);
			if (x != y)
				return x < y ? -1 : 1;
		}
	}
	return compare_whole(a, alen, b, blen);
}

struct key_prefix ikey_prefix(const uint8_t *k, size_t len)
{
	size_t u = len >= IKEY_TAG_LEN ? len - IKEY_TAG_LEN : 0;
	struct key_prefix p = { { 0, 0 } };
	size_t i = 0;
	if (u >= 8) {
		p.w[0] = get_be64(k);
		if (u >= 16) {
			p.w[1] = get_be64(k + 8);
			return p;
		}
		i = 8;
	}
	for (; i < u; i++)
		p.w[i / 8] |= (uint64_t)k[i] << (56 - 8 * (i % 8));
	return p;
}

struct error_iter {
	struct iter base;
	int err;
};

static bool ei_valid(struct iter *it) { (void)it; return false; }
static void ei_nop(struct iter *it) { (void)it; }
static void ei_seek(struct iter *it, const uint8_t *t, size_t n) { (void)it; (void)t; (void)n; }
static const uint8_t *ei_kv(struct iter *it, size_t *n) { (void)it; *n = 0; return NULL; }
static int ei_status(struct iter *it) { return ((struct error_iter *)it)->err; }
static void ei_destroy(struct iter *it) { free(it); }

static const struct iter_ops error_iter_ops = {
	.valid = ei_valid,
	.seek_first = ei_nop,
	.seek_last = ei_nop,
	.seek = ei_seek,
	.next = ei_nop,
	.prev = ei_nop,
	.key = ei_kv,
	.value = ei_kv,
	.status = ei_status,
	.destroy = ei_destroy,
};

struct iter *iter_new_error(int err)
{
	struct error_iter *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->base.ops = &error_iter_ops;
	e->err = err;
	return &e->base;
}
