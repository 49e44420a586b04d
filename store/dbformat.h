/*
 * dbformat: internal keys.  An internal key is the user key followed by an
 * 8-byte little-endian tag (sequence << 8 | type).  Internal keys order by
 * user key ascending (memcmp, shorter first), then tag descending, so the
 * newest version of a key comes first.  FORMAT.md "Internal keys".
 */
#ifndef LSMFS_STORE_DBFORMAT_H
#define LSMFS_STORE_DBFORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "coding.h"

enum key_type {
	KTYPE_DELETE = 0,
	KTYPE_VALUE = 1,
};
/* The type used when seeking: with tag descending, (seq, VALUE) sorts
 * before (seq, DELETE), so seeking to (k, seq, KTYPE_SEEK) finds every
 * entry of k with sequence <= seq. */
#define KTYPE_SEEK KTYPE_VALUE

#define SEQ_MAX ((UINT64_C(1) << 56) - 1)
#define IKEY_TAG_LEN 8

static inline uint64_t ikey_pack_tag(uint64_t seq, int type)
{
	return (seq << 8) | (uint64_t)type;
}

/* memcmp order, shorter first.  Keys that differ in their first 8 bytes
 * (most, in a lookup or a merge of random keys) are settled by one
 * comparison of two integers without a call to memcmp. */
static inline int ukey_compare(const uint8_t *a, size_t alen, const uint8_t *b,
			       size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	size_t from = 0;
	if (n >= 8) {
		uint64_t x = get_be64(a), y = get_be64(b);
		if (x != y)
			return x < y ? -1 : 1;
		from = 8;
	}
	int r = n > from ? memcmp(a + from, b + from, n - from) : 0;
	if (r)
		return r;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

struct parsed_ikey {
	const uint8_t *ukey;
	size_t ulen;
	uint64_t seq;
	int type;
};

/* 0, or -EUCLEAN if the key is shorter than a tag or has an unknown type. */
static inline int ikey_parse(const uint8_t *k, size_t len, struct parsed_ikey *p)
{
	if (len < IKEY_TAG_LEN)
		return -117; /* -EUCLEAN */
	uint64_t tag = get_le64(k + len - IKEY_TAG_LEN);
	p->ukey = k;
	p->ulen = len - IKEY_TAG_LEN;
	p->seq = tag >> 8;
	p->type = (int)(tag & 0xff);
	if (p->type > KTYPE_VALUE)
		return -117;
	return 0;
}

/* The comparator of internal keys (a key_cmp_fn). */
int ikey_compare(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/*
 * The key_prefix_fn of ikey_compare (iter.h): the user key's first 16
 * bytes, zero-padded when it is shorter, as two big-endian words.  It
 * agrees with the order: at the first byte where two padded prefixes
 * differ, either both user keys have that byte, or the one that ended
 * there is a prefix of the other and so sorts first.
 */
struct key_prefix;
struct key_prefix ikey_prefix(const uint8_t *k, size_t len);

/* Append user key + tag to b. */
static inline void ikey_append(struct buf *b, const void *ukey, size_t ulen,
			       uint64_t seq, int type)
{
	buf_append(b, ukey, ulen);
	buf_put_le64(b, ikey_pack_tag(seq, type));
}

#endif
