/*
 * batch: the write batch, which is also the commit-log record payload.
 *   rep := le64 sequence | le32 count | op*
 *   op  := u8 type (KTYPE_VALUE or KTYPE_DELETE) | lenbytes key
 *          [| lenbytes value, for KTYPE_VALUE]
 * lenbytes is a varint32 length followed by the bytes.  The n-th op gets
 * sequence + n.  FORMAT.md "Write batch".
 */
#ifndef LSMFS_STORE_BATCH_H
#define LSMFS_STORE_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coding.h"
#include "store.h"

#define BATCH_HEADER_SIZE 12

struct store_batch {
	struct buf rep;   /* always holds at least the header */
	uint64_t user_bytes; /* keys + values, for statistics */
};

void batch_set_sequence(struct store_batch *b, uint64_t seq);
uint64_t batch_sequence(const struct store_batch *b);
uint32_t batch_count(const struct store_batch *b);
/* Append src's ops to dst. */
int batch_append(struct store_batch *dst, const struct store_batch *src);

/* Where a batch stood: batch_rollback() takes it back there, dropping the
 * ops appended since (and a failed append's out-of-memory mark). */
struct batch_mark {
	size_t len;
	uint32_t count;
	uint64_t user_bytes;
};
void batch_save(const struct store_batch *b, struct batch_mark *m);
void batch_rollback(struct store_batch *b, const struct batch_mark *m);
/* Make b a copy of the encoded rep (from the commit log). */
int batch_set_rep(struct store_batch *b, const uint8_t *rep, size_t len);

/* Called for each op in order; return 0 to go on or a negative errno. */
typedef int (*batch_op_fn)(void *ctx, uint64_t seq, int type,
			   const uint8_t *key, size_t klen,
			   const uint8_t *val, size_t vlen);
/* Walk an encoded rep; -EUCLEAN if it is malformed or its count is wrong. */
int batch_iterate(const uint8_t *rep, size_t len, batch_op_fn fn, void *ctx);

/*
 * A log link, the other commit-log record payload (FORMAT.md "Log link"):
 * the first record of a log started by a memtable switch, naming the log
 * before it and that log's size when it was left:
 *   le64 0 | le32 0xffffffff | le64 previous log number | le64 its size
 * The count no batch has tells it from a batch.
 */
#define BATCH_LINK_SIZE 28
void batch_link_encode(uint8_t out[BATCH_LINK_SIZE], uint64_t prev, uint64_t size);
/* true (and the two numbers) if rep is a log link. */
bool batch_link_decode(const uint8_t *rep, size_t len, uint64_t *prev,
		       uint64_t *size);

#endif
