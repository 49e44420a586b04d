/*
 * sst_salvage: salvage (fsck) of one table: keep what reads, name what does
 * not.  FORMAT.md "Salvage" (what store_salvage, db_salvage.c, makes of it)
 * and "Reading rules" (what reading whole means).
 *
 * Every data block the index names is read again from the file and walked
 * in order.  Each entry that parses and ascends (above the last key kept and
 * the previous index key, at most the block's own index key) goes to
 * ops->keep; the first that does not loses the rest of its block, and
 * ops->lost gets the range it covered, from the last key kept (or the
 * previous index key) to the block's index key.  An index entry that does
 * not read loses the rest of the table.  Invariant: the keys kept strictly
 * ascend, so the caller may write them to a new table as they come.
 *
 * Locking: none; the reader is immutable (sst_int.h) and the salvage state
 * lives on the caller's stack.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sst_int.h"

struct salvage {
	struct sst_reader *r;
	const struct sst_salvage_ops *ops;
	void *ctx;
	struct buf last; /* last key kept: what is kept must stay ascending */
	uint64_t kept, lost_blocks;
};

static void salvage_lost(struct salvage *s, uint64_t offset, const struct buf *from,
			 const uint8_t *to, size_t tlen, char *why)
{
	s->lost_blocks++;
	s->ops->lost(s->ctx, offset, from->len ? from->data : NULL, from->len, to,
		     tlen, why ? why : "out of memory");
	free(why);
}

/* One data block: keep its entries while they read, parse and ascend; the
 * first that does not loses the rest of the block, from the last key kept
 * up to the block's index key. */
static int salvage_block(struct salvage *s, const struct block_handle *h,
			 const uint8_t *sep, size_t seplen, const struct buf *prev_sep)
{
	void *mem;
	const uint8_t *data;
	size_t len;
	char *m = NULL;
	int rc = sst_read_block_alloc(s->r, "block", h, &mem, &data, &len, &m);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		salvage_lost(s, h->offset, prev_sep, sep, seplen,
			     m ? m : sst_msgf("%s: block at offset %" PRIu64 ": %s",
					      s->r->path, h->offset, strerror(-rc)));
		return 0;
	}
	struct block b;
	if (block_init(&b, data, len)) {
		salvage_lost(s, h->offset, prev_sep, sep, seplen,
			     sst_msgf("%s: block at offset %" PRIu64 ": malformed block",
				      s->r->path, h->offset));
		free(mem);
		return 0;
	}
	struct block_iter it;
	block_iter_init(&it, ikey_compare);
	block_iter_reset(&it, &b);
	const char *why = NULL;
	uint64_t n = 0;
	for (block_iter_seek_first(&it); block_iter_valid(&it); block_iter_next(&it), n++) {
		struct parsed_ikey p;
		if (ikey_parse(it.key, it.klen, &p)) {
			why = "bad internal key";
			break;
		}
		if ((s->last.len && ikey_compare(s->last.data, s->last.len, it.key, it.klen) >= 0) ||
		    (prev_sep->len && ikey_compare(prev_sep->data, prev_sep->len, it.key, it.klen) >= 0)) {
			why = "keys out of order";
			break;
		}
		if (ikey_compare(it.key, it.klen, sep, seplen) > 0) {
			why = "key above its index key";
			break;
		}
		rc = s->ops->keep(s->ctx, it.key, it.klen, it.val, it.vlen);
		if (rc)
			break;
		s->kept++;
		buf_clear(&s->last);
		buf_append(&s->last, it.key, it.klen);
		if ((rc = buf_ok(&s->last)))
			break;
	}
	if (!rc && !why && it.status)
		why = it.status == -EUCLEAN ? "corrupt entry" : "out of memory";
	if (!rc && why)
		salvage_lost(s, h->offset, n ? &s->last : prev_sep, sep, seplen,
			     sst_msgf("%s: block at offset %" PRIu64 ": entry %" PRIu64 ": %s",
				      s->r->path, h->offset, n, why));
	block_iter_release(&it);
	free(mem);
	return rc;
}

int sst_salvage(struct sst_reader *r, const struct sst_salvage_ops *ops, void *ctx,
		uint64_t *kept, uint64_t *lost_blocks)
{
	struct salvage s = { .r = r, .ops = ops, .ctx = ctx };
	buf_init(&s.last);
	struct block_iter ii;
	block_iter_init(&ii, ikey_compare);
	block_iter_reset(&ii, r->index);
	struct buf prev_sep;
	buf_init(&prev_sep);
	int rc = 0;
	for (block_iter_seek_first(&ii); block_iter_valid(&ii) && rc == 0;
	     block_iter_next(&ii)) {
		struct block_handle h;
		char *m = NULL;
		if (index_value_handle(r, &ii, &h, &m))
			salvage_lost(&s, r->index_handle.offset, &prev_sep, ii.key, ii.klen, m);
		else
			rc = salvage_block(&s, &h, ii.key, ii.klen, &prev_sep);
		buf_clear(&prev_sep);
		buf_append(&prev_sep, ii.key, ii.klen);
		if (rc == 0)
			rc = buf_ok(&prev_sep);
	}
	if (rc == 0 && ii.status)
		salvage_lost(&s, r->index_handle.offset, &prev_sep, NULL, 0,
			     sst_msgf("%s: index block at offset %" PRIu64
				      ": corrupt entry; the rest of the table is lost",
				      r->path, r->index_handle.offset));
	buf_free(&prev_sep);
	buf_free(&s.last);
	block_iter_release(&ii);
	*kept = s.kept;
	*lost_blocks = s.lost_blocks;
	return rc;
}
