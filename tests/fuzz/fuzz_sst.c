/*
 * fuzz_sst: the SSTable reader (store/sst_*.c, block.c, bloom.c;
 * FORMAT.md "SSTable", "Footer", "Reading rules").  The input is a whole
 * .sst file, read through the store's env (an in-memory one) as the table
 * cache would.  It is opened twice: as given, and with the checksums of
 * the blocks its footer and index name recomputed, so that mutations of
 * the footer, index, filter and data blocks reach their parsers instead of
 * stopping at a checksum.  An opened table is iterated both ways, sought,
 * looked up (sst_get, through the filter and the block cache), verified,
 * salvaged and described: everything the store, store-tool and fsck do
 * with a table.
 *
 * Promises checked: every -EUCLEAN comes with a message naming the file;
 * a table sst_verify passes iterates both ways without error, in strictly
 * ascending order, and salvage loses nothing from it; salvage keeps only
 * ascending keys; iterators report through the counters' report hook
 * whenever they fail.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "dbformat.h"
#include "fuzz_util.h"
#include "sst.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PATH "fuzz/000007.sst"
#define MAX_STEPS 20000

static unsigned touch(const uint8_t *p, size_t n)
{
	unsigned s = 0;
	for (size_t i = 0; i < n; i++)
		s += p[i];
	return s;
}

static void on_report(void *ctx, const char *msg)
{
	int *reports = ctx;
	fuzz_check(msg && msg[0], "an empty report");
	(*reports)++;
}

static void check_msg(int rc, char *msg, const char *what)
{
	if (rc == -EUCLEAN) {
		fuzz_check(msg && strstr(msg, PATH), "%s: -EUCLEAN with message '%s'", what,
			   msg ? msg : "(none)");
	}
	free(msg);
}

static void on_verify(void *ctx, const char *line)
{
	on_report(ctx, line);
}

struct salvage_seen {
	struct buf last;
	uint64_t kept;
	unsigned sum;
};

static int on_keep(void *ctx, const uint8_t *ikey, size_t klen, const uint8_t *val,
		   size_t vlen)
{
	struct salvage_seen *s = ctx;
	fuzz_check(klen >= IKEY_TAG_LEN, "salvage kept a %zu-byte key", klen);
	fuzz_check(s->kept == 0 || ikey_compare(s->last.data, s->last.len, ikey, klen) < 0,
		   "salvage kept keys out of order");
	buf_clear(&s->last);
	buf_append(&s->last, ikey, klen);
	s->kept++;
	s->sum += touch(val, vlen);
	return 0;
}

static void on_lost(void *ctx, uint64_t offset, const uint8_t *from, size_t flen,
		    const uint8_t *to, size_t tlen, const char *why)
{
	struct salvage_seen *s = ctx;
	(void)offset;
	s->sum += touch(from, flen) + touch(to, tlen);
	fuzz_check(why && strstr(why, PATH), "a loss without its file: '%s'", why ? why : "");
}

static void saver(void *ctx, const uint8_t *ikey, size_t klen, const uint8_t *val,
		  size_t vlen)
{
	unsigned *sum = ctx;
	*sum += touch(ikey, klen) + touch(val, vlen);
}

/* Walk the whole table one way; its status, and whether it ascended. */
static int walk(struct sst_reader *r, bool forward, bool *ascending, unsigned *sum)
{
	struct iter *it = sst_iter_new(r, true);
	fuzz_check(it != NULL, "sst_iter_new");
	struct buf last;
	buf_init(&last);
	*ascending = true;
	int steps = 0;
	forward ? iter_seek_first(it) : iter_seek_last(it);
	while (iter_valid(it) && steps++ < MAX_STEPS) {
		size_t kl, vl;
		const uint8_t *k = iter_key(it, &kl);
		const uint8_t *v = iter_value(it, &vl);
		*sum += touch(k, kl) + touch(v, vl);
		if (last.len || steps > 1) {
			int c = ikey_compare(last.data, last.len, k, kl);
			if (forward ? c >= 0 : c <= 0)
				*ascending = false;
		}
		buf_clear(&last);
		buf_append(&last, k, kl);
		forward ? iter_next(it) : iter_prev(it);
	}
	int rc = iter_status(it);
	iter_destroy(it);
	buf_free(&last);
	return rc;
}

static void exercise(struct sst_reader *r, const uint8_t *data, size_t size,
		     int *reports)
{
	unsigned sum = 0;
	bool up, down;
	int before = *reports;
	int fwd = walk(r, true, &up, &sum);
	fuzz_check(fwd == 0 || fwd == -EUCLEAN, "forward walk: %d", fwd);
	fuzz_check(fwd == 0 || *reports > before, "a forward walk failed unreported");
	before = *reports;
	int back = walk(r, false, &down, &sum);
	fuzz_check(back == 0 || back == -EUCLEAN, "backward walk: %d", back);
	fuzz_check(back == 0 || *reports > before, "a backward walk failed unreported");

	/* Seeks and lookups with keys cut from the input. */
	struct iter *it = sst_iter_new(r, false);
	for (size_t off = 0; off + 1 < size && off < 256; off += 13) {
		size_t len = data[off] % 32;
		if (off + 1 + len > size)
			len = size - off - 1;
		struct buf k;
		buf_init(&k);
		ikey_append(&k, data + off + 1, len, SEQ_MAX, KTYPE_SEEK);
		iter_seek(it, k.data, k.len);
		for (int i = 0; i < 3 && iter_valid(it); i++) {
			size_t kl;
			const uint8_t *kk = iter_key(it, &kl);
			sum += touch(kk, kl);
			(i & 1) ? iter_prev(it) : iter_next(it);
		}
		char *msg = NULL;
		int rc = sst_get(r, k.data, k.len, saver, &sum, &msg);
		fuzz_check(rc == 0 || rc == -EUCLEAN, "sst_get: %d", rc);
		check_msg(rc, msg, "sst_get");
		buf_free(&k);
	}
	iter_destroy(it);

	int vreports = 0;
	int vrc = sst_verify(r, on_verify, &vreports);
	fuzz_check(vrc == 0 || vrc == -EUCLEAN, "sst_verify: %d", vrc);
	fuzz_check((vrc == 0) == (vreports == 0), "verify said %d after %d reports", vrc,
		   vreports);

	struct salvage_seen s = {0};
	buf_init(&s.last);
	struct sst_salvage_ops ops = {.keep = on_keep, .lost = on_lost};
	uint64_t kept, lost;
	int src = sst_salvage(r, &ops, &s, &kept, &lost);
	fuzz_check(src == 0, "sst_salvage: %d", src);
	fuzz_check(kept == s.kept, "salvage counted %llu, kept %llu",
		   (unsigned long long)kept, (unsigned long long)s.kept);
	buf_free(&s.last);

	if (vrc == 0) {
		/* What verify passes, everything else must read. */
		fuzz_check(fwd == 0 && back == 0, "verify passed a table whose walks fail (%d, %d)",
			   fwd, back);
		fuzz_check(up && down, "verify passed a table out of order");
		fuzz_check(lost == 0, "verify passed a table salvage loses %llu blocks of",
			   (unsigned long long)lost);
	}
	uint64_t blocks, fbytes, ibytes;
	sst_describe(r, &blocks, &fbytes, &ibytes);
	(void)sum;
}

static void open_and_exercise(const uint8_t *data, size_t size)
{
	struct fuzz_memenv m;
	fuzz_memenv_init(&m, data, size);
	struct block_cache *cache = block_cache_new(1 << 20);
	fuzz_check(cache != NULL, "block_cache_new");
	int reports = 0;
	struct sst_counters counters = {0};
	counters.report = on_report;
	counters.report_ctx = &reports;
	struct sst_reader *r;
	char *msg = NULL;
	int rc = sst_open(&m.env, PATH, 7, size, cache, &counters, &r, &msg);
	fuzz_check(rc == 0 || rc == -EUCLEAN, "sst_open: %d", rc);
	check_msg(rc, msg, "sst_open");
	if (rc == 0) {
		exercise(r, data, size, &reports);
		sst_close(r);
	}
	block_cache_free(cache);
}

/* Recompute the checksum of block h (payload + type byte) if it lies in
 * the file before the footer. */
static void fix_block(uint8_t *d, size_t size, const struct block_handle *h)
{
	uint64_t end = size - SST_FOOTER_SIZE;
	if (h->size > end || end - h->size < BLOCK_TRAILER_SIZE ||
	    h->offset > end - h->size - BLOCK_TRAILER_SIZE)
		return;
	uint8_t *p = d + h->offset;
	put_le32(p + h->size + 1, checksum32(p, (size_t)h->size + 1));
}

/* Make the checksums of the footer's blocks and the index's data blocks
 * right, so that the fuzzer's changes get past them. */
static void fix_checksums(uint8_t *d, size_t size)
{
	if (size < SST_FOOTER_SIZE)
		return;
	const uint8_t *f = d + size - SST_FOOTER_SIZE, *limit = f + 40;
	struct block_handle filter, index;
	const uint8_t *p = block_handle_decode(f, limit, &filter);
	if (!p || !block_handle_decode(p, limit, &index))
		return;
	fix_block(d, size, &filter);
	fix_block(d, size, &index);
	if (index.size > size || index.offset > size - index.size ||
	    size - index.size - index.offset < SST_FOOTER_SIZE + BLOCK_TRAILER_SIZE ||
	    d[index.offset + index.size] != BLOCK_TYPE_NONE)
		return;
	struct block b;
	if (block_init(&b, d + index.offset, (size_t)index.size))
		return;
	/* Data blocks come before the index: fixing them leaves it alone. */
	struct block_iter it;
	block_iter_init(&it, ikey_compare);
	block_iter_reset(&it, &b);
	int n = 0;
	for (block_iter_seek_first(&it); block_iter_valid(&it) && n < 4096;
	     block_iter_next(&it), n++) {
		struct block_handle h;
		if (block_handle_decode(it.val, it.val + it.vlen, &h) && h.offset < index.offset &&
		    h.size <= index.offset - h.offset &&
		    index.offset - h.offset - h.size >= BLOCK_TRAILER_SIZE)
			fix_block(d, size, &h);
	}
	block_iter_release(&it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	open_and_exercise(data, size);
	uint8_t *fixed = malloc(size ? size : 1);
	fuzz_check(fixed != NULL, "malloc");
	memcpy(fixed, data, size);
	fix_checksums(fixed, size);
	if (memcmp(fixed, data, size))
		open_and_exercise(fixed, size);
	free(fixed);
	return 0;
}
