/*
 * sst_get: point lookups in one table: the filter, then the index, then
 * one data block (LevelDB's Table::InternalGet).  FORMAT.md "Index block"
 * (why one block is enough) and "Filter block" (what a filter answer is
 * worth).
 *
 * The filter is asked with the user key first: an absent answer ends the
 * lookup (bloom_useful); a lookup the filter let through that finds no
 * entry of the user key counts as bloom_false_positive.  The index then
 * names the one block that can hold the first entry >= the key; the saver
 * gets that entry and compares the user keys itself.  The block comes from
 * the block cache or is read and put there (sst_get_block).
 *
 * Locking: none of its own; the reader is immutable (sst_int.h), the
 * filter cache and block cache lock themselves, counters are atomics.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>

#include "sst_int.h"

int sst_get(struct sst_reader *r, const uint8_t *ikey, size_t klen,
	    sst_saver_fn saver, void *ctx, char **errmsg)
{
	if (klen < IKEY_TAG_LEN)
		return -EINVAL;
	bool filtered = false;
	if (r->filter.attached) {
		bool consulted;
		bool may = filter_cache_may_contain(r->counters->filters, &r->filter,
						    filter_hash(ikey, klen - IKEY_TAG_LEN),
						    &consulted);
		if (consulted)
			COUNT(r, bloom_checked);
		if (!may) {
			COUNT(r, bloom_useful);
			return 0;
		}
		filtered = consulted;
	} else if (r->filter.loaded) {
		COUNT(r, bloom_checked);
		if (!table_filter_may_contain(&r->filter,
					      filter_hash(ikey, klen - IKEY_TAG_LEN))) {
			COUNT(r, bloom_useful);
			return 0;
		}
		filtered = true;
	}

	struct block_iter ii, di;
	block_iter_init(&ii, ikey_compare);
	block_iter_init(&di, ikey_compare);
	block_iter_reset(&ii, r->index);
	struct cache_handle *handle = NULL;
	void *owned = NULL;
	bool found = false;
	int rc = 0;

	block_iter_seek(&ii, ikey, klen);
	if (!block_iter_valid(&ii)) {
		if (ii.status) {
			rc = ii.status;
			give_msg(errmsg, sst_msgf("%s: index block at offset %" PRIu64
						  ": corrupt entry", r->path,
						  r->index_handle.offset));
		}
		goto out;
	}
	struct block_handle h;
	rc = index_value_handle(r, &ii, &h, errmsg);
	if (rc)
		goto out;
	const struct block *b;
	rc = sst_get_block(r, &h, NULL, &b, &handle, &owned, errmsg);
	if (rc)
		goto out;
	block_iter_reset(&di, b);
	block_iter_seek(&di, ikey, klen);
	if (block_iter_valid(&di)) {
		found = di.klen >= IKEY_TAG_LEN &&
			ukey_compare(di.key, di.klen - IKEY_TAG_LEN, ikey,
				     klen - IKEY_TAG_LEN) == 0;
		saver(ctx, di.key, di.klen, di.val, di.vlen);
	} else if (di.status) {
		rc = di.status;
		give_msg(errmsg, sst_msgf("%s: block at offset %" PRIu64
					  ": corrupt entry", r->path, h.offset));
	}
out:
	if (rc == 0 && filtered && !found)
		COUNT(r, bloom_false_positive);
	if (handle)
		block_cache_release(r->cache, handle);
	free(owned);
	block_iter_release(&ii);
	block_iter_release(&di);
	return rc;
}
