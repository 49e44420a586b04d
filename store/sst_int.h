/*
 * sst_int: what the files of the table reader share, behind the contract
 * of sst.h.  FORMAT.md "SSTable".
 *
 *   sst_read.c     block I/O: read a block, check it, decode it; the block
 *                  cache; readahead ("Reading rules")
 *   sst_open.c     open and close: footer, filter, index ("Footer",
 *                  "Filter block", "Index block")
 *   sst_get.c      point lookups: filter, index, one data block
 *   sst_iter.c     the two-level iterator (index block over data blocks)
 *   sst_verify.c   verification: every block read again and checked
 *   sst_salvage.c  salvage (fsck): keep what reads, name what does not
 *
 * A reader is immutable once sst_open has returned it, except for the
 * iterator message kept under mu (sst_iter.c); so the functions below need
 * no lock.  Corruption is -EUCLEAN with a message "path: <what> at offset
 * N: <why>" (sst_msgf), handed back through a char **msg that may be NULL.
 *
 * Internal header: for store/sst_*.c only.
 */
#ifndef LSMFS_STORE_SST_INT_H
#define LSMFS_STORE_SST_INT_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "block.h"
#include "dbformat.h"
#include "filter.h"
#include "sst.h"

/* Block memory: a struct block, then the payload (one allocation, freed
 * with free(); also the block cache's value). */
#define BLOCK_HEAD ((sizeof(struct block) + 15) & ~(size_t)15)

struct sst_reader {
	struct store_env *env;
	struct env_rfile *file;
	char *path;
	uint64_t number;
	uint64_t size;
	struct block_cache *cache;
	struct sst_counters *counters;
	struct block_handle index_handle;
	struct block_handle filter_handle;
	struct block *index;   /* BLOCK_HEAD memory */
	unsigned version;      /* the footer's format version */
	struct table_filter filter;
	uint64_t data_end; /* data blocks lie in [0, data_end) */
	uint64_t data_blocks;
	void *owner;
	pthread_mutex_t mu;
	char *iter_errmsg;
};

/* ---- messages and counters ---- */

/* A malloc'd message (NULL when out of memory). */
char *sst_msgf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Hand message m (owned) to *errmsg, or free it when errmsg is NULL. */
static inline void give_msg(char **errmsg, char *m)
{
	if (errmsg)
		*errmsg = m;
	else
		free(m);
}

/* Bump a shared counter (counters may be NULL). */
#define COUNT(r, field)                                                      \
	do {                                                                 \
		if ((r)->counters)                                           \
			atomic_fetch_add_explicit(&(r)->counters->field, 1,  \
						  memory_order_relaxed);     \
	} while (0)

/* ---- handles ---- */

/* Is h a block (payload + trailer) inside [0, end)? */
static inline bool handle_within(const struct block_handle *h, uint64_t end)
{
	return h->size <= end && end - h->size >= BLOCK_TRAILER_SIZE &&
	       h->offset <= end - h->size - BLOCK_TRAILER_SIZE;
}

/* The data block handle of the index entry ii points at. */
static inline int index_value_handle(struct sst_reader *r, const struct block_iter *ii,
				     struct block_handle *h, char **msg)
{
	/* check_index (sst_open.c) vetted every entry; this guards against
	 * nothing but a bug, cheaply. */
	if (!block_handle_decode(ii->val, ii->val + ii->vlen, h) ||
	    !handle_within(h, r->data_end)) {
		give_msg(msg, sst_msgf("%s: index block at offset %" PRIu64
				       ": bad block handle", r->path,
				       r->index_handle.offset));
		return -EUCLEAN;
	}
	return 0;
}

/* A format 1 table's filter, described as format 2 describes one: a
 * single Bloom part, the footer's filter block (bits not recorded). */
static inline struct filter_desc format1_desc(const struct sst_reader *r)
{
	return (struct filter_desc){.params = {STORE_FILTER_BLOOM, 0, 1}, .nparts = 1,
				    .parts = {r->filter_handle}};
}

/* ---- block I/O (sst_read.c) ---- */

/*
 * Readahead state, one per iterator: the file's bytes [off, off + buf.len)
 * read ahead of a sequential scan, and how the scan has gone so far.
 * After RA_AFTER blocks in a row, each starting where the last ended, the
 * next are read in one pread of RA_MIN bytes, doubling up to RA_MAX.
 */
#define RA_AFTER 2
#define RA_MIN (16 * 1024)
#define RA_MAX (256 * 1024)

struct sst_readahead {
	struct buf buf;
	uint64_t off;
	uint64_t next_off; /* where the last block read from the file ended */
	unsigned in_a_row; /* blocks read from the file, each at next_off */
	size_t size;       /* the next readahead's length */
};

void sst_readahead_init(struct sst_readahead *ra);
void sst_readahead_free(struct sst_readahead *ra);

/* Is the block at offset the next of a sequential scan (readahead under
 * way, this block next)? */
static inline bool sst_readahead_scanning(const struct sst_readahead *ra,
					  uint64_t offset)
{
	return ra->in_a_row >= RA_AFTER && offset == ra->next_off;
}

/*
 * Read block h (what names it in messages: "block", "index block",
 * "filter part 3", ...) into a new allocation: BLOCK_HEAD bytes of room,
 * then the (decompressed) payload at *data, *len bytes.  *mem is the
 * allocation (free it); NULL on error.
 */
int sst_read_block_alloc(struct sst_reader *r, const char *what,
			 const struct block_handle *h, void **mem,
			 const uint8_t **data, size_t *len, char **msg);
/* Read data block h into the reusable buffers io (raw) and plain
 * (decompressed), from the readahead bytes of ra when they hold it, else
 * from the file; the block cache is not touched. */
int sst_read_block_scratch(struct sst_reader *r, struct sst_readahead *ra,
			   const struct block_handle *h, struct buf *io,
			   struct buf *plain, const uint8_t **data, size_t *len,
			   char **msg);
/*
 * The data block h, from the cache or the file (or the readahead bytes
 * of ra, if not NULL), put in the cache when read.  It is pinned by
 * *handle (cache) or owned through *owned (free it); exactly one is set.
 */
int sst_get_block(struct sst_reader *r, const struct block_handle *h,
		  struct sst_readahead *ra, const struct block **out,
		  struct cache_handle **handle, void **owned, char **msg);
/* -EUCLEAN, with the message for a block that block_init refuses. */
int sst_bad_block(struct sst_reader *r, const char *what,
		  const struct block_handle *h, char **msg);

#endif
