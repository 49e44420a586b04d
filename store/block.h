/*
 * block: the prefix-compressed sorted blocks that SSTables are made of
 * (data blocks and the index block), and a few table internals shared by
 * sst_build.c, the reader (sst_read.c and its neighbours) and
 * table_cache.c.  FORMAT.md "SSTable".
 *
 * Block payload:
 *   entry* | le32 restart[num_restarts] | le32 num_restarts
 *   entry := varint32 shared | varint32 non_shared | varint32 value_len |
 *            key[shared..shared+non_shared) | value
 * Every restart_interval-th entry (the first one included) is a restart
 * point: it stores its whole key (shared == 0) and restart[] holds its
 * offset.  An empty block is the 8 bytes le32 0 | le32 1.
 *
 * The decoder trusts nothing: block_init() checks the restart array and the
 * iterator checks every entry against the block's bounds; a malformed block
 * makes the iterator invalid with status -EUCLEAN (sticky), never an
 * over-read.
 *
 * Internal header: not for use outside store/.  No locking: a builder or an
 * iterator belongs to one thread; a struct block is immutable once built
 * and may be read by many iterators at once.
 */
#ifndef LSMFS_STORE_BLOCK_H
#define LSMFS_STORE_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coding.h"
#include "iter.h"

/* On disk every block is followed by u8 type | le32 checksum32(payload+type). */
#define BLOCK_TRAILER_SIZE 5
#define BLOCK_TYPE_NONE 0
#define BLOCK_TYPE_LZ4 1

/* Where a block lives: its payload's offset and size (trailer excluded). */
struct block_handle {
	uint64_t offset;
	uint64_t size;
};

/* varint64 offset | varint64 size. */
void block_handle_encode(struct buf *b, const struct block_handle *h);
/* NULL if [p, limit) does not start with a handle. */
const uint8_t *block_handle_decode(const uint8_t *p, const uint8_t *limit,
				   struct block_handle *h);

/* ---- builder ---- */

struct block_builder {
	struct buf data;     /* entries so far; the finished block after finish */
	struct buf restarts; /* le32 restart offsets */
	struct buf last_key;
	size_t interval;
	size_t counter;      /* entries since the last restart point */
	uint32_t nrestarts;
	uint64_t entries;
	bool finished;
};

/* restart_interval 0 is taken as 1. */
void block_builder_init(struct block_builder *b, size_t restart_interval);
void block_builder_free(struct block_builder *b);
/* Start a new empty block (keeps the buffers' memory). */
void block_builder_reset(struct block_builder *b);
/* REQUIRES: !finished; key > every key added since the reset (in the
 * block's order); klen and vlen < 2^32.  Allocation failure is sticky
 * (block_builder_ok). */
void block_builder_add(struct block_builder *b, const uint8_t *key,
		       size_t klen, const uint8_t *val, size_t vlen);
/* Payload bytes the block would have if finished now. */
static inline size_t block_builder_size(const struct block_builder *b)
{
	return b->data.len + b->restarts.len + 4;
}
static inline bool block_builder_empty(const struct block_builder *b)
{
	return b->entries == 0;
}
/* 0 or -ENOMEM. */
int block_builder_ok(const struct block_builder *b);
/* Append the restart array and return the payload: &b->data, which the
 * caller may extend (with the trailer) until the next reset. */
struct buf *block_builder_finish(struct block_builder *b);

/* ---- decoded block ---- */

struct block {
	const uint8_t *data; /* payload, not owned */
	size_t size;
	uint32_t restarts;     /* offset of the restart array = end of entries */
	uint32_t num_restarts;
};

/* Check the restart array of the payload [data, data + size) and describe
 * it in *b.  0 or -EUCLEAN. */
int block_init(struct block *b, const uint8_t *data, size_t size);

/* Check that every restart point is the first byte of an entry that stores
 * its whole key (shared == 0), walking every entry: what block_init does
 * not look at, and a seek or a backward step relies on.  0 or -EUCLEAN.
 * O(entries); sst_verify calls it, the read path does not. */
int block_check_restarts(const struct block *b);

/* ---- iterator ---- */

#define BLOCK_ITER_INLINE_KEY 128

/*
 * An iterator over one block (LevelDB's Block::Iter).  It can be embedded
 * (block_iter_init, then block_iter_reset per block, block_iter_release at
 * the end) or allocated as a struct iter (block_iter_new).  Keys stored
 * whole (shared == 0: every restart point, every index entry) are returned
 * in place; others are rebuilt in a key buffer that lives inline for keys
 * up to BLOCK_ITER_INLINE_KEY bytes, so iterating allocates nothing.
 * An embedded iterator must not be moved in memory once used.
 */
struct block_iter {
	struct iter base;
	key_cmp_fn cmp;
	const uint8_t *data;
	uint32_t restarts;
	uint32_t num_restarts;
	uint32_t current;       /* offset of the entry; restarts if invalid */
	uint32_t next;          /* offset just past the entry */
	int status;
	const uint8_t *key;
	size_t klen;
	const uint8_t *val;
	size_t vlen;
	uint8_t *heap_key; /* NULL: the key buffer is inline_key */
	size_t heap_cap;
	uint8_t inline_key[BLOCK_ITER_INLINE_KEY];
};

/* An iterator over no block (invalid, status 0). */
void block_iter_init(struct block_iter *it, key_cmp_fn cmp);
/* Point it at block b (NULL: no block), unpositioned.  Clears the status. */
void block_iter_reset(struct block_iter *it, const struct block *b);
/* Free the key buffer (it may be reset and used again after this). */
void block_iter_release(struct block_iter *it);

/* A heap iterator over b (which must outlive it); NULL on ENOMEM. */
struct iter *block_iter_new(const struct block *b, key_cmp_fn cmp);

/* Direct calls (the same as through it->base.ops). */
static inline bool block_iter_valid(const struct block_iter *it)
{
	return it->current < it->restarts;
}
void block_iter_seek_first(struct block_iter *it);
void block_iter_seek_last(struct block_iter *it);
void block_iter_seek(struct block_iter *it, const uint8_t *target, size_t len);
/* REQUIRES: valid. */
void block_iter_next(struct block_iter *it);
void block_iter_prev(struct block_iter *it);

/* ---- table internals (sst_open.c, sst_iter.c), for table_cache.c ---- */

struct sst_reader;
/* A slot for the table cache's bookkeeping (NULL until set). */
void sst_reader_set_owner(struct sst_reader *r, void *owner);
void *sst_reader_owner(const struct sst_reader *r);
/* Run done(a, b) when the table iterator it (from sst_iter_new) is
 * destroyed, after it has let go of its blocks and reader. */
void sst_iter_on_destroy(struct iter *it, void (*done)(void *a, void *b),
			 void *a, void *b);

#endif
