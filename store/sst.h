/*
 * sst: sorted string tables (SSTables), their Bloom filters, the LRU block
 * cache and the table cache.  FORMAT.md "SSTable".
 *
 * Table layout: data blocks | filter block | index block | footer.
 * Keys in a table are internal keys in ikey_compare order.  Data blocks use
 * prefix compression with restart points; each block is stored as
 *   payload | compression type (1 byte: 0 none, 1 lz4) | le32 checksum32
 * (checksum over payload + type byte); LZ4 is used only when it saves at
 * least 1/8 of the block.  The filter (filter.h) is built by the store's
 * filter policy from one XXH3-64 hash per distinct user key, as one or more
 * part blocks and a descriptor block naming them; a damaged filter is
 * reported and read as "maybe".  The index block maps a
 * separator key >= every key of block i and < every key of block i+1 to the
 * block's handle (varint64 offset, varint64 size).  The fixed 48-byte
 * footer: filter (descriptor) handle, index handle (padded to 40 bytes),
 * le32 format version, le32 magic.
 *
 * Thread safety: a builder belongs to one thread; a reader, the block cache
 * and the table cache may be used from many threads at once.
 */
#ifndef LSMFS_STORE_SST_H
#define LSMFS_STORE_SST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "env.h"
#include "iter.h"
#include "store.h"

#define SST_MAGIC 0x4c534d54u /* "TMSL" little-endian */
#define SST_FORMAT_VERSION 2u
#define SST_FOOTER_SIZE 48

/* Counters shared by every table of a store (relaxed atomics). */
struct sst_counters {
	atomic_uint_least64_t bloom_checked;
	atomic_uint_least64_t bloom_useful;
	atomic_uint_least64_t bloom_false_positive;
	atomic_uint_least64_t block_reads; /* data blocks read from the file */
	/* Damage met where no message can be returned (iterators, tables
	 * that fail to open under an iterator) is reported here, one line
	 * naming file and offset.  NULL: dropped.  Set before first use. */
	void (*report)(void *ctx, const char *msg);
	void *report_ctx;
	/* The store's filter memory (filter.h); NULL: each table keeps
	 * its whole filter in memory, unmanaged. */
	struct filter_cache *filters;
};

/* ---- block cache (cache.c): LRU over decoded data blocks ---- */

/*
 * A sharded LRU cache of immutable values keyed by (file number, block
 * offset), bounded by the sum of the values' charges.  A looked-up or
 * inserted entry is pinned by its handle until released; an entry evicted
 * or replaced while pinned is freed (deleter) at its last release.
 */
struct block_cache;
struct cache_handle;

struct block_cache *block_cache_new(size_t capacity_bytes);
/* REQUIRES: no handle outstanding. */
void block_cache_free(struct block_cache *c);
/* A pinned handle, or NULL on a miss (counts hits and misses). */
struct cache_handle *block_cache_lookup(struct block_cache *c, uint64_t file,
					uint64_t offset);
/* Insert value (ownership passes to the cache; deleter(value) frees it)
 * and return it pinned.  NULL only on allocation failure, in which case
 * deleter has NOT been called and the caller still owns value. */
struct cache_handle *block_cache_insert(struct block_cache *c, uint64_t file,
					uint64_t offset, void *value,
					size_t charge,
					void (*deleter)(void *value));
void *block_cache_value(struct cache_handle *h);
void block_cache_release(struct block_cache *c, struct cache_handle *h);
void block_cache_stats(struct block_cache *c, uint64_t *hits, uint64_t *misses,
		       uint64_t *bytes_in_use);

/* ---- builder (sst_build.c) ---- */

struct sst_builder_options {
	size_t block_size;
	size_t restart_interval;
	struct store_filter filter; /* kind STORE_FILTER_NONE: no filter */
	enum store_compression compression;
	/* 0: SST_FORMAT_VERSION.  1: the first format (a Bloom filter block
	 * or none, no descriptor), written only to test that it still reads. */
	unsigned format_version;
};

struct sst_builder;
int sst_builder_new(struct store_env *env, const char *path,
		    const struct sst_builder_options *opt,
		    struct sst_builder **out);
/* Keys must be strictly increasing in ikey_compare order. */
int sst_builder_add(struct sst_builder *b, const uint8_t *ikey, size_t klen,
		    const uint8_t *val, size_t vlen);
/* Bytes the file will have if finished now (approximately). */
uint64_t sst_builder_file_size(const struct sst_builder *b);
uint64_t sst_builder_entries(const struct sst_builder *b);
/* Write filter, index and footer, fsync, close and free the builder. */
int sst_builder_finish(struct sst_builder *b, uint64_t *file_size);
/* Close and free without finishing (the caller unlinks the file). */
void sst_builder_abandon(struct sst_builder *b);

/* ---- reader: sst_open.c, sst_get.c, sst_iter.c, sst_verify.c,
 * sst_salvage.c over the block reads of sst_read.c (sst_int.h) ---- */

struct sst_reader;
/*
 * Open a finished table: read and check the footer, index and filter.
 * cache may be NULL.  -EUCLEAN (with *errmsg, a static-lifetime-free
 * malloc'd string naming path and offset, if errmsg != NULL) on corruption.
 */
int sst_open(struct store_env *env, const char *path, uint64_t file_number,
	     uint64_t file_size, struct block_cache *cache,
	     struct sst_counters *counters, struct sst_reader **out,
	     char **errmsg);
void sst_close(struct sst_reader *r);

/* Called by sst_get with the first entry >= the lookup key, if any. */
typedef void (*sst_saver_fn)(void *ctx, const uint8_t *ikey, size_t klen,
			     const uint8_t *val, size_t vlen);
/*
 * Point lookup: ikey is (user key, seq, KTYPE_SEEK).  Consults the filter
 * with the user key first (counting bloom_* counters), then the index and
 * one data block; calls saver with the first entry >= ikey in that block
 * (the saver compares user keys).  0 (saver called or not) or a negative
 * errno (-EUCLEAN names path and offset in *errmsg as for sst_open).
 */
int sst_get(struct sst_reader *r, const uint8_t *ikey, size_t klen,
	    sst_saver_fn saver, void *ctx, char **errmsg);
/* Iterator over the whole table (internal keys).  fill_cache: put blocks
 * read into the block cache (false for compaction inputs).  The iterator
 * must be destroyed before sst_close. */
struct iter *sst_iter_new(struct sst_reader *r, bool fill_cache);
/* Read and check every block; report(ctx, line) per problem found.
 * 0 or -EUCLEAN. */
int sst_verify(struct sst_reader *r, void (*report)(void *ctx, const char *line),
	       void *ctx);
/*
 * Salvage (fsck): walk every data block the index names.  Each entry of a
 * block that reads whole (checksum, decompression, parse) and ascends goes
 * to keep(); each block, or rest of a block, that does not goes to lost()
 * with the internal-key range it covered (from: the last key kept or the
 * previous index key, NULL at the start; to: the block's index key, NULL
 * when the rest of the table is lost) and a message naming the file and
 * offset.  Returns 0, or keep()'s error / -ENOMEM.
 */
struct sst_salvage_ops {
	int (*keep)(void *ctx, const uint8_t *ikey, size_t klen,
		    const uint8_t *val, size_t vlen);
	void (*lost)(void *ctx, uint64_t offset, const uint8_t *from, size_t flen,
		     const uint8_t *to, size_t tlen, const char *why);
};
int sst_salvage(struct sst_reader *r, const struct sst_salvage_ops *ops, void *ctx,
		uint64_t *kept, uint64_t *lost_blocks);
/* Number of entries and data blocks (from the index), for tools. */
void sst_describe(struct sst_reader *r, uint64_t *data_blocks,
		  uint64_t *filter_bytes, uint64_t *index_bytes);
/* The table's format version, its filter's policy (kind NONE: none, or
 * one the reader could not read), parts and parts in memory. */
void sst_describe_filter(struct sst_reader *r, unsigned *format_version,
			 struct store_filter *policy, unsigned *parts,
			 unsigned *loaded);
/* The file offset of filter part `part` (0 if there is none). */
uint64_t sst_filter_part_offset(struct sst_reader *r, unsigned part);

/* ---- table cache (table_cache.c): bounded set of open readers ---- */

struct table_cache;
/* Tables are dir/NNNNNN.sst.  max_open >= 1 readers are kept open (LRU). */
struct table_cache *table_cache_new(struct store_env *env, const char *dir,
				    int max_open, struct block_cache *cache,
				    struct sst_counters *counters);
void table_cache_free(struct table_cache *tc);
/* A referenced reader; release with table_cache_release. */
int table_cache_get(struct table_cache *tc, uint64_t number, uint64_t size,
		    struct sst_reader **out, char **errmsg);
void table_cache_release(struct table_cache *tc, struct sst_reader *r);
/* An iterator over table number that holds the reader until destroyed;
 * on error an error iterator. */
struct iter *table_cache_iter(struct table_cache *tc, uint64_t number,
			      uint64_t size, bool fill_cache);
/* Drop the cached reader of a deleted table. */
void table_cache_evict(struct table_cache *tc, uint64_t number);

/* File name helper: dir/NNNNNN.sst into out (PATH_MAX). */
void sst_file_name(char *out, size_t len, const char *dir, uint64_t number);

#endif
