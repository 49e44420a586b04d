/*
 * coding: endian-explicit fixed-width encoders (little-endian; big-endian
 * for keys that sort numerically), varints, the checksum used by every
 * on-disk record and block, and a growable byte buffer.
 *
 * Decoders take (p, limit) and return NULL on overrun so that a corrupt
 * length can never walk past the end of a buffer.  See FORMAT.md "Encoding".
 * No locking: pure functions; a struct buf belongs to one thread.
 */
#ifndef LSMFS_STORE_CODING_H
#define LSMFS_STORE_CODING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | ((uint64_t)get_le32(p + 4) << 32);
}

/* Big-endian, for keys whose byte order must be numeric order (the
 * filesystem's keys, fs/SCHEMA.md "Keys of the metadata store"). */
static inline void put_be32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
	       (uint32_t)p[3];
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return ((uint64_t)get_be32(p) << 32) | (uint64_t)get_be32(p + 4);
}

/* Longest varint64 encoding. */
#define VARINT_MAX 10

/* Write v as a LEB128 varint at p; return the byte after it. */
uint8_t *put_varint32(uint8_t *p, uint32_t v);
uint8_t *put_varint64(uint8_t *p, uint64_t v);
/* Number of bytes put_varint64(v) writes. */
int varint_len(uint64_t v);
/* Decode a varint from [p, limit); NULL if it is truncated or too long. */
const uint8_t *get_varint32(const uint8_t *p, const uint8_t *limit, uint32_t *v);
const uint8_t *get_varint64(const uint8_t *p, const uint8_t *limit, uint64_t *v);

/* The 32-bit checksum of records and blocks: the low half of XXH3-64. */
uint32_t checksum32(const void *data, size_t len);
/* Checksum of two adjacent logical pieces (type byte + payload, ...). */
uint32_t checksum32_2(const void *a, size_t alen, const void *b, size_t blen);

/*
 * A growable byte buffer.  Allocation failure is sticky: buf->oom is set, the
 * buffer stops growing, and the owner checks buf_ok() once at the end.
 */
struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int oom;
};

static inline void buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}
void buf_free(struct buf *b);
static inline void buf_clear(struct buf *b)
{
	b->len = 0;
}
static inline int buf_ok(const struct buf *b)
{
	return b->oom ? -12 /* -ENOMEM */ : 0;
}
/* Make room for n more bytes; 0 or -ENOMEM. */
int buf_reserve(struct buf *b, size_t n);
void buf_append(struct buf *b, const void *p, size_t n);
void buf_put_u8(struct buf *b, uint8_t v);
void buf_put_le32(struct buf *b, uint32_t v);
void buf_put_le64(struct buf *b, uint64_t v);
void buf_put_varint32(struct buf *b, uint32_t v);
void buf_put_varint64(struct buf *b, uint64_t v);
/* varint32 length followed by the bytes. */
void buf_put_lenbytes(struct buf *b, const void *p, size_t n);
/* Decode a varint32-length-prefixed slice from [p, limit); NULL on overrun. */
const uint8_t *get_lenbytes(const uint8_t *p, const uint8_t *limit,
			    const uint8_t **out, size_t *len);

#endif
