/*
 * sst_verify: verification of one table (store-tool verify, fsck pass 1).
 * FORMAT.md "Reading rules" and "Filter block".
 *
 * Every block is read again from the file, never from the block cache or
 * the filter in memory, so a file damaged since it was opened is caught:
 * the index block, the filter block and each of its parts (a damaged
 * filter costs reads, never answers, but it is damage), and every data
 * block the index names.  A data block must decode, hold at least one
 * entry, its keys parseable internal keys in strictly ascending order, all
 * above the previous index key and at most its own, and each restart point
 * the start of a whole-key entry (a check the read path leaves out).  Each
 * problem is one report line naming the file and offset; the walk goes on
 * after it, and the result is -EUCLEAN when there was any.
 *
 * Locking: none; the reader is immutable (sst_int.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sst_int.h"

struct verify {
	struct sst_reader *r;
	void (*report)(void *ctx, const char *line);
	void *ctx;
	int problems;
};

static void verify_report(struct verify *v, char *m)
{
	v->problems++;
	v->report(v->ctx, m ? m : "out of memory formatting a problem");
	free(m);
}

/* Check one data block's entries: parseable internal keys, ascending, all
 * <= the index key and > prev_sep (the previous index key). */
static void verify_entries(struct verify *v, const struct block *b,
			   const struct block_handle *h, const uint8_t *sep,
			   size_t seplen, const struct buf *prev_sep)
{
	struct sst_reader *r = v->r;
	struct block_iter it;
	block_iter_init(&it, ikey_compare);
	block_iter_reset(&it, b);
	struct buf last;
	buf_init(&last);
	const char *why = NULL;
	uint64_t n = 0;
	for (block_iter_seek_first(&it); block_iter_valid(&it);
	     block_iter_next(&it), n++) {
		struct parsed_ikey p;
		if (ikey_parse(it.key, it.klen, &p)) {
			why = "bad internal key";
			break;
		}
		if (n == 0 && prev_sep->len &&
		    ikey_compare(prev_sep->data, prev_sep->len, it.key, it.klen) >= 0) {
			why = "first key not above the previous index key";
			break;
		}
		if (n > 0 && ikey_compare(last.data, last.len, it.key, it.klen) >= 0) {
			why = "keys out of order";
			break;
		}
		if (ikey_compare(it.key, it.klen, sep, seplen) > 0) {
			why = "key above its index key";
			break;
		}
		buf_clear(&last);
		buf_append(&last, it.key, it.klen);
	}
	if (!why && it.status)
		why = it.status == -EUCLEAN ? "corrupt entry" : "out of memory";
	if (!why && n == 0)
		why = "empty data block";
	if (!why && block_check_restarts(b))
		verify_report(v, sst_msgf("%s: block at offset %" PRIu64 ": a restart point is "
					  "not the start of a whole-key entry", r->path,
					  h->offset));
	if (why)
		verify_report(v, sst_msgf("%s: block at offset %" PRIu64 ": entry %"
					  PRIu64 ": %s", r->path, h->offset, n, why));
	buf_free(&last);
	block_iter_release(&it);
}

/* Re-read a whole block from the file and report if it is bad. */
static void verify_block(struct verify *v, const char *what,
			 const struct block_handle *h, bool entries,
			 const uint8_t *sep, size_t seplen,
			 const struct buf *prev_sep)
{
	void *mem;
	const uint8_t *data;
	size_t len;
	char *m = NULL;
	int rc = sst_read_block_alloc(v->r, what, h, &mem, &data, &len, &m);
	if (rc) {
		if (!m)
			m = sst_msgf("%s: %s at offset %" PRIu64 ": %s", v->r->path,
				     what, h->offset, strerror(-rc));
		verify_report(v, m);
		return;
	}
	if (entries) {
		struct block b;
		if (block_init(&b, data, len))
			verify_report(v, sst_msgf("%s: %s at offset %" PRIu64
						  ": malformed block", v->r->path,
						  what, h->offset));
		else
			verify_entries(v, &b, h, sep, seplen, prev_sep);
	}
	free(mem);
}

/* The filter's blocks read whole and parse (a damaged filter costs reads,
 * never answers, but it is damage). */
static void verify_filter(struct verify *v)
{
	struct sst_reader *r = v->r;
	struct filter_desc d;
	if (r->version == 1) {
		d = format1_desc(r);
	} else {
		void *mem;
		const uint8_t *data;
		size_t len;
		char *m = NULL;
		int rc = sst_read_block_alloc(r, "filter block", &r->filter_handle, &mem, &data,
					      &len, &m);
		if (rc) {
			verify_report(v, m ? m : sst_msgf("%s: filter block at offset %" PRIu64
							  ": %s", r->path, r->filter_handle.offset,
							  strerror(-rc)));
			return;
		}
		const char *why = filter_desc_decode(data, len, r->filter_handle.offset, &d);
		free(mem);
		if (why) {
			verify_report(v, sst_msgf("%s: filter block at offset %" PRIu64 ": %s",
						  r->path, r->filter_handle.offset, why));
			return;
		}
	}
	for (unsigned i = 0; i < d.nparts; i++) {
		void *mem;
		const uint8_t *data;
		size_t len;
		char *m = NULL, what[32];
		if (r->version == 1)
			snprintf(what, sizeof(what), "filter block");
		else
			snprintf(what, sizeof(what), "filter part %u", i);
		int rc = sst_read_block_alloc(r, what, &d.parts[i], &mem, &data, &len, &m);
		if (rc) {
			verify_report(v, m ? m : sst_msgf("%s: %s at offset %" PRIu64 ": %s",
							  r->path, what, d.parts[i].offset,
							  strerror(-rc)));
			continue;
		}
		const char *why = filter_part_problem(&d.params, i, data, len);
		if (why)
			verify_report(v, sst_msgf("%s: %s at offset %" PRIu64 ": %s", r->path,
						  what, d.parts[i].offset, why));
		free(mem);
	}
}

int sst_verify(struct sst_reader *r, void (*report)(void *ctx, const char *line),
	       void *ctx)
{
	struct verify v = { .r = r, .report = report, .ctx = ctx };
	/* The index and filter were checked at open; read them again so a
	 * file damaged since then is caught too. */
	verify_block(&v, "index block", &r->index_handle, false, NULL, 0, NULL);
	if (r->filter_handle.size)
		verify_filter(&v);

	struct block_iter ii;
	block_iter_init(&ii, ikey_compare);
	block_iter_reset(&ii, r->index);
	struct buf prev_sep;
	buf_init(&prev_sep);
	for (block_iter_seek_first(&ii); block_iter_valid(&ii);
	     block_iter_next(&ii)) {
		struct block_handle h;
		char *m = NULL;
		if (index_value_handle(r, &ii, &h, &m)) {
			verify_report(&v, m);
			continue;
		}
		verify_block(&v, "block", &h, true, ii.key, ii.klen, &prev_sep);
		buf_clear(&prev_sep);
		buf_append(&prev_sep, ii.key, ii.klen);
	}
	if (ii.status)
		verify_report(&v, sst_msgf("%s: index block at offset %" PRIu64
					   ": corrupt entry", r->path,
					   r->index_handle.offset));
	buf_free(&prev_sep);
	block_iter_release(&ii);
	return v.problems ? -EUCLEAN : 0;
}
