/*
 * sst_read: reading the blocks of a table: read the stored bytes, check
 * them, decode them; the block cache; readahead.  FORMAT.md "SSTable"
 * ("File layout" for the block trailer, "LZ4 payloads", "Reading rules").
 * The reader's other parts (sst_int.h) read every block through here.
 *
 * A block is read whole with env pread (env_pread_checked: a store with
 * copies judges a copy by the same check) and is accepted only when all of
 * it was read, its checksum is right, its type is known and, for LZ4, its
 * stated length is possible and exactly reproduced.  Data blocks are put,
 * unless the caller says otherwise, in the block cache under (file number,
 * block offset) with the block's memory (BLOCK_HEAD layout) as value: a
 * cache hit is a hash lookup and a pin, no copy.  Readahead bytes are only
 * a faster source: a block taken from them is checked the same way and one
 * that fails is read again directly.
 *
 * Corruption is -EUCLEAN with a message "path: <what> at offset N: <why>".
 *
 * Locking: none of its own; the reader is immutable, the block cache
 * locks itself, and a struct sst_readahead belongs to one iterator.
 */
#include <errno.h>
#include <inttypes.h>
#include <lz4.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "dbformat.h"
#include "filter.h"
#include "sst.h"
#include "sst_int.h"

/* ---- messages and counters ---- */

char *sst_msgf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/* ---- block reading ---- */

/* A stored block is whole: all of it read, its checksum right (the check
 * a copy of the store is judged by, env_pread_checked). */
static int raw_check(void *ctx, const void *buf, size_t got)
{
	const struct block_handle *h = ctx;
	const uint8_t *p = buf;
	if (got != (size_t)h->size + BLOCK_TRAILER_SIZE ||
	    get_le32(p + h->size + 1) != checksum32(p, (size_t)h->size + 1))
		return -EUCLEAN;
	return 0;
}

/*
 * Read the stored block h (payload + trailer) into dst and check it.  On
 * success *type is its compression type.
 */
static int read_raw(struct sst_reader *r, const char *what,
		    const struct block_handle *h, uint8_t *dst, uint8_t *type,
		    char **msg)
{
	size_t n = (size_t)h->size + BLOCK_TRAILER_SIZE;
	size_t got = 0;
	int rc = env_pread_checked(r->env, r->file, dst, n, h->offset, &got, raw_check,
				   (void *)h);
	if (rc && rc != -EUCLEAN) {
		give_msg(msg, sst_msgf("%s: %s at offset %" PRIu64 ": read failed: %s",
				       r->path, what, h->offset, strerror(-rc)));
		return rc;
	}
	if (got != n) {
		give_msg(msg, sst_msgf("%s: %s at offset %" PRIu64
				       ": short read (%zu of %zu bytes)",
				       r->path, what, h->offset, got, n));
		return -EUCLEAN;
	}
	if (rc) {
		give_msg(msg, sst_msgf("%s: %s at offset %" PRIu64 ": checksum mismatch",
				       r->path, what, h->offset));
		return -EUCLEAN;
	}
	*type = dst[h->size];
	if (*type != BLOCK_TYPE_NONE && *type != BLOCK_TYPE_LZ4) {
		give_msg(msg, sst_msgf("%s: %s at offset %" PRIu64
				       ": unknown compression type %u",
				       r->path, what, h->offset, *type));
		return -EUCLEAN;
	}
	return 0;
}

/* The uncompressed length and the LZ4 data of an LZ4 payload. */
static int lz4_header(struct sst_reader *r, const char *what,
		      const struct block_handle *h, const uint8_t *p,
		      uint32_t *ulen, const uint8_t **src, size_t *slen,
		      char **msg)
{
	const uint8_t *limit = p + h->size;
	const uint8_t *q = get_varint32(p, limit, ulen);
	/* LZ4 cannot expand data more than 255 times. */
	if (!q || (uint64_t)*ulen > 255 * (uint64_t)(limit - q) + 64 ||
	    *ulen > LZ4_MAX_INPUT_SIZE) {
		give_msg(msg, sst_msgf("%s: %s at offset %" PRIu64
				       ": bad compressed length", r->path, what,
				       h->offset));
		return -EUCLEAN;
	}
	*src = q;
	*slen = (size_t)(limit - q);
	return 0;
}

static int lz4_decode(struct sst_reader *r, const char *what,
		      const struct block_handle *h, const uint8_t *src,
		      size_t slen, uint8_t *dst, uint32_t ulen, char **msg)
{
	int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)slen,
				    (int)ulen);
	if (n < 0 || (uint32_t)n != ulen) {
		give_msg(msg, sst_msgf("%s: %s at offset %" PRIu64
				       ": bad LZ4 data", r->path, what, h->offset));
		return -EUCLEAN;
	}
	return 0;
}

/*
 * The payload of the stored block p (checked, type NONE or LZ4) copied or
 * decompressed into room(ctx, n), which gives n bytes (NULL: out of
 * memory); *out is where it went, *len its length.
 */
static int decode_block(struct sst_reader *r, const char *what,
			const struct block_handle *h, const uint8_t *p, uint8_t type,
			uint8_t *(*room)(void *ctx, size_t n), void *ctx,
			uint8_t **out, size_t *len, char **msg)
{
	if (type == BLOCK_TYPE_NONE) {
		uint8_t *d = room(ctx, h->size);
		if (!d)
			return -ENOMEM;
		memcpy(d, p, h->size);
		*out = d;
		*len = h->size;
		return 0;
	}
	uint32_t ulen;
	const uint8_t *src;
	size_t slen;
	int rc = lz4_header(r, what, h, p, &ulen, &src, &slen, msg);
	if (rc)
		return rc;
	uint8_t *d = room(ctx, ulen);
	if (!d)
		return -ENOMEM;
	rc = lz4_decode(r, what, h, src, slen, d, ulen, msg);
	if (rc)
		return rc;
	*out = d;
	*len = ulen;
	return 0;
}

/* decode_block's room: a new allocation, BLOCK_HEAD bytes before the
 * payload (*ctx: the allocation, NULL when none was made). */
static uint8_t *room_alloc(void *ctx, size_t n)
{
	uint8_t *b = malloc(BLOCK_HEAD + n);
	*(void **)ctx = b;
	return b ? b + BLOCK_HEAD : NULL;
}

/* decode_block's room: a reusable buffer. */
static uint8_t *room_buf(void *ctx, size_t n)
{
	struct buf *b = ctx;
	buf_clear(b);
	return buf_reserve(b, n ? n : 1) ? NULL : b->data;
}

/* Stored blocks up to this size (payload + trailer) are read onto the
 * stack: a data block (4 KiB before compression) read for a lookup would
 * otherwise cost an allocation and a free besides the one it keeps. */
#define RAW_ON_STACK 8192

/*
 * Read block h into a new allocation: BLOCK_HEAD bytes of room, then the
 * (decompressed) payload at *data, *len bytes.
 */
int sst_read_block_alloc(struct sst_reader *r, const char *what,
			 const struct block_handle *h, void **mem,
			 const uint8_t **data, size_t *len, char **msg)
{
	*mem = NULL;
	if (h->size > SIZE_MAX / 2) {
		give_msg(msg, sst_msgf("%s: %s at offset %" PRIu64 ": too large",
				       r->path, what, h->offset));
		return -EUCLEAN;
	}
	size_t stored = (size_t)h->size + BLOCK_TRAILER_SIZE;
	uint8_t stack[RAW_ON_STACK];
	/* A large block is read straight into what becomes the block, if
	 * it turns out not to be compressed. */
	uint8_t *raw = stored <= sizeof(stack) ? NULL : malloc(BLOCK_HEAD + stored);
	if (stored > sizeof(stack) && !raw)
		return -ENOMEM;
	uint8_t *p = raw ? raw + BLOCK_HEAD : stack;
	uint8_t type;
	int rc = read_raw(r, what, h, p, &type, msg);
	if (rc) {
		free(raw);
		return rc;
	}
	if (type == BLOCK_TYPE_NONE) {
		if (!raw) {
			raw = malloc(BLOCK_HEAD + h->size + 1); /* + 1: h->size may be 0 */
			if (!raw)
				return -ENOMEM;
			memcpy(raw + BLOCK_HEAD, p, h->size);
		}
		*mem = raw;
		*data = raw + BLOCK_HEAD;
		*len = h->size;
		return 0;
	}
	void *plain = NULL;
	uint8_t *d = NULL;
	rc = decode_block(r, what, h, p, type, room_alloc, &plain, &d, len, msg);
	free(raw);
	if (rc) {
		free(plain);
		return rc;
	}
	*mem = plain;
	*data = d;
	return 0;
}

/* Read block h into the reusable buffers io (raw) and plain
 * (decompressed). */
static int read_block_scratch(struct sst_reader *r, const struct block_handle *h,
			      struct buf *io, struct buf *plain,
			      const uint8_t **data, size_t *len, char **msg)
{
	buf_clear(io);
	if (h->size > SIZE_MAX / 2 ||
	    buf_reserve(io, (size_t)h->size + BLOCK_TRAILER_SIZE))
		return -ENOMEM;
	uint8_t type;
	int rc = read_raw(r, "block", h, io->data, &type, msg);
	if (rc)
		return rc;
	if (type == BLOCK_TYPE_NONE) {
		*data = io->data;
		*len = h->size;
		return 0;
	}
	uint8_t *d = NULL;
	rc = decode_block(r, "block", h, io->data, type, room_buf, plain, &d, len, msg);
	*data = d;
	return rc;
}

int sst_bad_block(struct sst_reader *r, const char *what,
		  const struct block_handle *h, char **msg)
{
	give_msg(msg, sst_msgf("%s: %s at offset %" PRIu64 ": malformed block",
			       r->path, what, h->offset));
	return -EUCLEAN;
}

/* ---- readahead ---- */

/*
 * Readahead: an iterator that has read RA_AFTER blocks in a row from the
 * file, each starting where the last ended, reads the next ones in one
 * pread of RA_MIN bytes, doubling up to RA_MAX as the scan goes on (as
 * RocksDB's iterators do): a forward scan (readseq, readdir, fsck, a
 * compaction's inputs) then makes one system call per RA_MAX bytes
 * rather than one per 4 KiB block.  The bytes are only a faster source:
 * every block taken from them is checked as read_raw checks it, and one
 * that fails (or a pread that fails) is read again the ordinary way, so
 * errors, their messages and the store copies' healing are those of a
 * direct read.
 */

void sst_readahead_init(struct sst_readahead *ra)
{
	buf_init(&ra->buf);
	ra->off = 0;
	ra->next_off = UINT64_MAX;
	ra->in_a_row = 0;
	ra->size = 0;
}

void sst_readahead_free(struct sst_readahead *ra)
{
	buf_free(&ra->buf);
}

/*
 * The stored block h (payload + trailer) from the readahead bytes, read
 * first when the scan is sequential; NULL when it is not there (or fails
 * its check, or has a type read_raw refuses): the caller reads it the
 * ordinary way, which reports what is wrong.  *type is its compression
 * type, NONE or LZ4.
 */
static const uint8_t *readahead_block(struct sst_reader *r, struct sst_readahead *ra,
				      const struct block_handle *h, uint8_t *type)
{
	size_t n = (size_t)h->size + BLOCK_TRAILER_SIZE;
	ra->in_a_row = h->offset == ra->next_off ? ra->in_a_row + 1 : 0;
	ra->next_off = h->offset + n;
	bool inside = ra->buf.len && h->offset >= ra->off &&
		      h->offset - ra->off <= ra->buf.len &&
		      n <= ra->buf.len - (h->offset - ra->off);
	if (!inside) {
		if (ra->in_a_row < RA_AFTER)
			return NULL;
		size_t want = ra->size ? ra->size : RA_MIN;
		if (want < n)
			want = n;
		if (want > r->data_end - h->offset)
			want = (size_t)(r->data_end - h->offset);
		buf_clear(&ra->buf);
		size_t got = 0;
		if (buf_reserve(&ra->buf, want) ||
		    r->env->ops->pread(r->file, ra->buf.data, want, h->offset, &got) ||
		    got < n) {
			buf_clear(&ra->buf);
			return NULL;
		}
		ra->buf.len = got;
		ra->off = h->offset;
		ra->size = want * 2 > RA_MAX ? RA_MAX : want * 2;
	}
	const uint8_t *p = ra->buf.data + (h->offset - ra->off);
	if (raw_check((void *)h, p, n) ||
	    (p[h->size] != BLOCK_TYPE_NONE && p[h->size] != BLOCK_TYPE_LZ4))
		return NULL;
	*type = p[h->size];
	return p;
}

/*
 * Block h from the readahead bytes into its own allocation, as
 * sst_read_block_alloc makes it; 1 when they do not hold it (read it the
 * ordinary way).
 */
static int readahead_block_alloc(struct sst_reader *r, struct sst_readahead *ra,
				 const struct block_handle *h, void **mem,
				 const uint8_t **data, size_t *len, char **msg)
{
	uint8_t type;
	const uint8_t *p = readahead_block(r, ra, h, &type);
	if (!p)
		return 1;
	void *b = NULL;
	uint8_t *d = NULL;
	int rc = decode_block(r, "block", h, p, type, room_alloc, &b, &d, len, msg);
	if (rc) {
		free(b);
		return rc;
	}
	*mem = b;
	*data = d;
	return 0;
}

/* ---- data blocks ---- */

int sst_read_block_scratch(struct sst_reader *r, struct sst_readahead *ra,
			   const struct block_handle *h, struct buf *io,
			   struct buf *plain, const uint8_t **data, size_t *len,
			   char **msg)
{
	uint8_t type;
	const uint8_t *p = readahead_block(r, ra, h, &type);
	if (!p)
		return read_block_scratch(r, h, io, plain, data, len, msg);
	uint8_t *d = NULL;
	int rc = decode_block(r, "block", h, p, type, room_buf, plain, &d, len, msg);
	*data = d;
	return rc;
}

/* A data block read into its own allocation (BLOCK_HEAD layout): from
 * the readahead bytes of ra, when it has them, or the file. */
static int read_data_block(struct sst_reader *r, const struct block_handle *h,
			   struct sst_readahead *ra, struct block **out, char **msg)
{
	void *mem = NULL;
	const uint8_t *data;
	size_t len;
	int rc = ra ? readahead_block_alloc(r, ra, h, &mem, &data, &len, msg) : 1;
	if (rc == 1)
		rc = sst_read_block_alloc(r, "block", h, &mem, &data, &len, msg);
	if (rc)
		return rc;
	struct block *b = mem;
	if (block_init(b, data, len)) {
		free(mem);
		return sst_bad_block(r, "block", h, msg);
	}
	*out = b;
	return 0;
}

static void block_deleter(void *value)
{
	free(value);
}

int sst_get_block(struct sst_reader *r, const struct block_handle *h,
		  struct sst_readahead *ra, const struct block **out,
		  struct cache_handle **handle, void **owned, char **msg)
{
	*handle = NULL;
	*owned = NULL;
	if (r->cache) {
		*handle = block_cache_lookup(r->cache, r->number, h->offset);
		if (*handle) {
			*out = block_cache_value(*handle);
			return 0;
		}
	}
	struct block *b = NULL; /* set when rc is 0 (a compiler cannot tell) */
	int rc = read_data_block(r, h, ra, &b, msg);
	if (rc)
		return rc;
	COUNT(r, block_reads);
	if (r->cache)
		*handle = block_cache_insert(r->cache, r->number, h->offset, b,
					     BLOCK_HEAD + b->size, block_deleter);
	if (!*handle)
		*owned = b; /* no cache, or the insert failed */
	*out = b;
	return 0;
}
