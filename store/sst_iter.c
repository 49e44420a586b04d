/*
 * sst_iter: the two-level iterator over one table: an iterator over the
 * index block picks a data block, an iterator over that block gives the
 * entries (LevelDB's two_level_iterator).  FORMAT.md "Index block" and
 * "Reading rules".
 *
 * Invariants: when the iterator is valid, data is over the block the index
 * iterator points at (have_block, block_offset), pinned in the block cache
 * (handle), owned by the iterator (owned) or held in its scratch buffers;
 * at most one of these.  Empty or exhausted blocks are skipped in the
 * direction of travel.  The status is sticky: once an error is met the
 * iterator is invalid for good.  Iterators have no message channel: each
 * message goes to counters->report, and the reader keeps the first
 * (iter_errmsg, under its mu); the status is -EUCLEAN.
 *
 * Blocks come through sst_read.c: from the cache, or the file (and the
 * cache, when fill_cache), or, during a sequential scan, from the readahead
 * bytes into the iterator's own buffers without touching the cache.
 *
 * Locking: an iterator belongs to one thread; the reader it reads is
 * shared and immutable but for iter_errmsg (mu).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include "sst_int.h"

struct sst_iter {
	struct iter base;
	struct sst_reader *r;
	bool fill_cache;
	int status;
	bool have_block; /* data is over block_offset's block */
	uint64_t block_offset;
	struct cache_handle *handle; /* the block pinned in the cache, or */
	void *owned;                 /* a block read for the iterator alone */
	struct block scratch;        /* ... or one in io/plain */
	struct buf io, plain;
	struct block_iter index;
	struct block_iter data;
	struct sst_readahead ra;
	void (*done)(void *a, void *b);
	void *done_a, *done_b;
};

/* Keep the first iterator error message; take ownership of m. */
static void note_iter_error(struct sst_reader *r, char *m)
{
	if (m && r->counters && r->counters->report)
		r->counters->report(r->counters->report_ctx, m);
	pthread_mutex_lock(&r->mu);
	if (!r->iter_errmsg) {
		r->iter_errmsg = m;
		m = NULL;
	}
	pthread_mutex_unlock(&r->mu);
	free(m);
}

static void release_block(struct sst_iter *it)
{
	if (it->handle) {
		block_cache_release(it->r->cache, it->handle);
		it->handle = NULL;
	}
	free(it->owned);
	it->owned = NULL;
	it->have_block = false;
	block_iter_reset(&it->data, NULL);
}

/* Make the iterator fail with rc; m (owned) goes to the reader. */
static void fail(struct sst_iter *it, int rc, char *m)
{
	release_block(it);
	it->status = rc;
	if (m)
		note_iter_error(it->r, m);
}

static void fail_index(struct sst_iter *it)
{
	fail(it, it->index.status,
	     sst_msgf("%s: index block at offset %" PRIu64 ": corrupt entry",
		      it->r->path, it->r->index_handle.offset));
}

/* Load the block the index iterator points at (if not loaded already). */
static void init_data_block(struct sst_iter *it)
{
	if (!block_iter_valid(&it->index)) {
		if (it->index.status)
			fail_index(it);
		else
			release_block(it);
		return;
	}
	struct block_handle h;
	char *m = NULL;
	int rc = index_value_handle(it->r, &it->index, &h, &m);
	if (rc) {
		fail(it, rc, m);
		return;
	}
	if (it->have_block && it->block_offset == h.offset)
		return;
	release_block(it);

	const struct block *b = NULL;
	struct sst_reader *r = it->r;
	/* A sequential scan (readahead under way, this block next) reads
	 * into the iterator's own buffers and adds nothing to the cache: a
	 * long scan (readdir of a huge directory, fsck, readseq) would
	 * otherwise push the hot blocks out, and pay an allocation, an
	 * insert and an eviction per block for blocks read once. */
	bool scanning = sst_readahead_scanning(&it->ra, h.offset);
	if (it->fill_cache && r->cache && !scanning) {
		rc = sst_get_block(r, &h, &it->ra, &b, &it->handle, &it->owned, &m);
	} else {
		/* Use a cached copy if there is one, but add nothing. */
		if (r->cache)
			it->handle = block_cache_lookup(r->cache, r->number,
							h.offset);
		if (it->handle) {
			b = block_cache_value(it->handle);
		} else {
			const uint8_t *data;
			size_t len;
			rc = sst_read_block_scratch(r, &it->ra, &h, &it->io, &it->plain, &data,
						    &len, &m);
			if (rc == 0 && block_init(&it->scratch, data, len))
				rc = sst_bad_block(r, "block", &h, &m);
			if (rc == 0) {
				COUNT(r, block_reads);
				b = &it->scratch;
			}
		}
	}
	if (rc) {
		fail(it, rc, m);
		return;
	}
	block_iter_reset(&it->data, b);
	it->have_block = true;
	it->block_offset = h.offset;
}

static void fail_data(struct sst_iter *it)
{
	fail(it, it->data.status,
	     sst_msgf("%s: block at offset %" PRIu64 ": corrupt entry", it->r->path,
		      it->block_offset));
}

/* Move forward past exhausted or empty blocks. */
static void skip_forward(struct sst_iter *it)
{
	while (!it->status) {
		if (it->have_block) {
			if (block_iter_valid(&it->data))
				return;
			if (it->data.status) {
				fail_data(it);
				return;
			}
		}
		if (!block_iter_valid(&it->index)) {
			init_data_block(it); /* releases, or fails */
			return;
		}
		block_iter_next(&it->index);
		init_data_block(it);
		if (it->have_block)
			block_iter_seek_first(&it->data);
	}
}

static void skip_backward(struct sst_iter *it)
{
	while (!it->status) {
		if (it->have_block) {
			if (block_iter_valid(&it->data))
				return;
			if (it->data.status) {
				fail_data(it);
				return;
			}
		}
		if (!block_iter_valid(&it->index)) {
			init_data_block(it);
			return;
		}
		block_iter_prev(&it->index);
		init_data_block(it);
		if (it->have_block)
			block_iter_seek_last(&it->data);
	}
}

static bool si_valid(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;
	return it->have_block && block_iter_valid(&it->data);
}

static void si_seek_first(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;
	if (it->status)
		return;
	block_iter_seek_first(&it->index);
	init_data_block(it);
	if (it->have_block)
		block_iter_seek_first(&it->data);
	skip_forward(it);
}

static void si_seek_last(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;
	if (it->status)
		return;
	block_iter_seek_last(&it->index);
	init_data_block(it);
	if (it->have_block)
		block_iter_seek_last(&it->data);
	skip_backward(it);
}

static void si_seek(struct iter *base, const uint8_t *t, size_t n)
{
	struct sst_iter *it = (struct sst_iter *)base;
	if (it->status)
		return;
	block_iter_seek(&it->index, t, n);
	init_data_block(it);
	if (it->have_block)
		block_iter_seek(&it->data, t, n);
	skip_forward(it);
}

static void si_next(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;
	if (!si_valid(base))
		return;
	block_iter_next(&it->data);
	/* Mostly still inside the block: no call to skip. */
	if (!block_iter_valid(&it->data))
		skip_forward(it);
}

static void si_prev(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;
	if (!si_valid(base))
		return;
	block_iter_prev(&it->data);
	skip_backward(it);
}

static const uint8_t *si_key(struct iter *base, size_t *n)
{
	struct sst_iter *it = (struct sst_iter *)base;
	*n = it->data.klen;
	return it->data.key;
}

static const uint8_t *si_value(struct iter *base, size_t *n)
{
	struct sst_iter *it = (struct sst_iter *)base;
	*n = it->data.vlen;
	return it->data.val;
}

static int si_status(struct iter *base)
{
	return ((struct sst_iter *)base)->status;
}

static void si_destroy(struct iter *base)
{
	struct sst_iter *it = (struct sst_iter *)base;
	release_block(it);
	block_iter_release(&it->index);
	block_iter_release(&it->data);
	buf_free(&it->io);
	buf_free(&it->plain);
	sst_readahead_free(&it->ra);
	if (it->done)
		it->done(it->done_a, it->done_b);
	free(it);
}

static const struct iter_ops sst_iter_ops = {
	.valid = si_valid,
	.seek_first = si_seek_first,
	.seek_last = si_seek_last,
	.seek = si_seek,
	.next = si_next,
	.prev = si_prev,
	.key = si_key,
	.value = si_value,
	.status = si_status,
	.destroy = si_destroy,
};

struct iter *sst_iter_new(struct sst_reader *r, bool fill_cache)
{
	struct sst_iter *it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->base.ops = &sst_iter_ops;
	it->r = r;
	it->fill_cache = fill_cache;
	buf_init(&it->io);
	buf_init(&it->plain);
	sst_readahead_init(&it->ra);
	block_iter_init(&it->index, ikey_compare);
	block_iter_reset(&it->index, r->index);
	block_iter_init(&it->data, ikey_compare);
	return &it->base;
}

void sst_iter_on_destroy(struct iter *base, void (*done)(void *a, void *b),
			 void *a, void *b)
{
	struct sst_iter *it = (struct sst_iter *)base;
	it->done = done;
	it->done_a = a;
	it->done_b = b;
}
