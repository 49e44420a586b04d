/*
 * sst_read: reading an SSTable: open (footer, index, filter), point
 * lookups, the two-level iterator, verification.  FORMAT.md "SSTable".
 *
 * A reader keeps the index block and the filter in memory for its whole
 * life; sst_open checks the footer and the index block's checksum and walks
 * the whole index once, so every data block handle used later is known to
 * lie inside the data area.  A filter block or part that does not read is
 * reported (counters->report) and left out: the table is read without it.  Data blocks are read with env pread, checked
 * (checksum, type, LZ4 length) and, unless the caller says otherwise, put
 * in the block cache under (file number, block offset) with the block's
 * memory as value: a cache hit is a hash lookup and a pin, no copy.
 *
 * Corruption is -EUCLEAN with a message "path: <what> at offset N: <why>".
 * Iterators have no message channel: their message is kept in the reader
 * (first one wins) and their status is -EUCLEAN.
 *
 * Thread safety: a reader is immutable after open, except for the kept
 * iterator message (mu); many threads may get and iterate at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <lz4.h>
#include <pthread.h>
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
	uint8_t *raw = malloc(BLOCK_HEAD + h->size + BLOCK_TRAILER_SIZE);
	if (!raw)
		return -ENOMEM;
	uint8_t type;
	int rc = read_raw(r, what, h, raw + BLOCK_HEAD, &type, msg);
	if (rc) {
		free(raw);
		return rc;
	}
	if (type == BLOCK_TYPE_NONE) {
		*mem = raw;
		*data = raw + BLOCK_HEAD;
		*len = h->size;
		return 0;
	}
	void *plain = NULL;
	uint8_t *d = NULL;
	rc = decode_block(r, what, h, raw + BLOCK_HEAD, type, room_alloc, &plain, &d,
			  len, msg);
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

/* ---- open / close ---- */

static int check_index(struct sst_reader *r, char **msg)
{
	struct block_iter it;
	block_iter_init(&it, ikey_compare);
	block_iter_reset(&it, r->index);
	uint64_t n = 0, next_off = 0;
	int rc = 0;
	for (block_iter_seek_first(&it); block_iter_valid(&it);
	     block_iter_next(&it)) {
		struct block_handle h;
		const uint8_t *end = block_handle_decode(it.val, it.val + it.vlen, &h);
		/* Blocks follow each other in key order. */
		if (!end || end != it.val + it.vlen || it.klen < IKEY_TAG_LEN ||
		    !handle_within(&h, r->data_end) || h.offset < next_off) {
			rc = -EUCLEAN;
			break;
		}
		next_off = h.offset + h.size + BLOCK_TRAILER_SIZE;
		n++;
	}
	if (rc == 0)
		rc = it.status;
	block_iter_release(&it);
	if (rc == -EUCLEAN)
		give_msg(msg, sst_msgf("%s: index block at offset %" PRIu64
				       ": bad entry %" PRIu64, r->path,
				       r->index_handle.offset, n));
	/* Lookups binary-search the index's restart points: each must start
	 * a whole-key entry (one walk of the index, once per open). */
	if (rc == 0 && block_check_restarts(r->index)) {
		give_msg(msg, sst_msgf("%s: index block at offset %" PRIu64
				       ": a restart point is not the start of a whole-key entry",
				       r->path, r->index_handle.offset));
		rc = -EUCLEAN;
	}
	r->data_blocks = n;
	return rc;
}

/* What is wrong with the footer f (got bytes read), or NULL; fills r's
 * handles. */
static const char *footer_problem(struct sst_reader *r, const uint8_t *f, size_t got)
{
	uint64_t foot = r->size - SST_FOOTER_SIZE;
	const char *why = NULL;
	const uint8_t *p = f, *limit = f + 40;
	if (got != SST_FOOTER_SIZE)
		why = "short read (file truncated?)";
	else if (get_le32(f + 44) != SST_MAGIC)
		why = "bad magic number";
	else if (get_le32(f + 40) < 1 || get_le32(f + 40) > SST_FORMAT_VERSION)
		why = "unsupported format version";
	else if (!(p = block_handle_decode(p, limit, &r->filter_handle)) ||
		 !(p = block_handle_decode(p, limit, &r->index_handle)))
		why = "bad block handles";
	if (!why) {
		while (p < limit && *p == 0)
			p++;
		if (p != limit)
			why = "nonzero padding";
	}
	if (!why && !handle_within(&r->index_handle, foot))
		why = "index handle out of range";
	if (!why && r->filter_handle.size == 0 && r->filter_handle.offset != 0)
		why = "bad filter handle";
	if (!why && r->filter_handle.size &&
	    !handle_within(&r->filter_handle, r->index_handle.offset))
		why = "filter handle out of range";
	/* Blocks follow each other without gaps: the filter block ends
	 * where the index block starts.  A damaged filter block is read
	 * around; a damaged handle to it is damage to the footer. */
	if (!why && r->filter_handle.size &&
	    r->filter_handle.offset + r->filter_handle.size + BLOCK_TRAILER_SIZE !=
		    r->index_handle.offset)
		why = "the filter block does not end at the index block";
	if (!why)
		r->version = get_le32(f + 40);
	return why;
}

static int footer_check(void *ctx, const void *buf, size_t got)
{
	return footer_problem(ctx, buf, got) ? -EUCLEAN : 0;
}

static int read_footer(struct sst_reader *r, char **msg)
{
	if (r->size < SST_FOOTER_SIZE) {
		give_msg(msg, sst_msgf("%s: %" PRIu64 " bytes: too short for a table",
				       r->path, r->size));
		return -EUCLEAN;
	}
	uint64_t foot = r->size - SST_FOOTER_SIZE;
	uint8_t f[SST_FOOTER_SIZE];
	size_t got = 0;
	int rc = env_pread_checked(r->env, r->file, f, sizeof(f), foot, &got, footer_check, r);
	if (rc && rc != -EUCLEAN) {
		give_msg(msg, sst_msgf("%s: footer at offset %" PRIu64 ": read failed: %s",
				       r->path, foot, strerror(-rc)));
		return rc;
	}
	const char *why = footer_problem(r, f, got);
	if (why) {
		give_msg(msg, sst_msgf("%s: footer at offset %" PRIu64 ": %s", r->path,
				       foot, why));
		return -EUCLEAN;
	}
	r->data_end = r->filter_handle.size ? r->filter_handle.offset
					    : r->index_handle.offset;
	return 0;
}

/* Damage that does not fail the open: reported, one line. */
__attribute__((format(printf, 2, 3)))
static void report_damage(struct sst_reader *r, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (r->counters && r->counters->report)
		r->counters->report(r->counters->report_ctx, s);
	free(s);
}

/* Read part i of the filter into memory, or report why not (a damaged
 * part is left out: only a lack of memory fails). */
static int part_loader(void *ctx, unsigned i, void **mem, const uint8_t **data, size_t *len);
static int load_part(struct sst_reader *r, unsigned i)
{
	void *mem;
	const uint8_t *data;
	size_t len;
	int rc = part_loader(r, i, &mem, &data, &len);
	if (rc == -ENOMEM)
		return rc;
	if (!rc)
		table_filter_keep(&r->filter, i, mem, data, len);
	return 0;
}

/* filter_cache's loader: part i's bytes, checked; damage is reported and
 * is an error (the cache never tries that part again). */
static int part_loader(void *ctx, unsigned i, void **mem, const uint8_t **data, size_t *len)
{
	struct sst_reader *r = ctx;
	const struct block_handle *h = &r->filter.desc.parts[i];
	char *msg = NULL, what[32];
	if (r->version == 1)
		snprintf(what, sizeof(what), "filter block");
	else
		snprintf(what, sizeof(what), "filter part %u", i);
	int rc = sst_read_block_alloc(r, what, h, mem, data, len, &msg);
	if (rc == -ENOMEM)
		return rc;
	const char *why = rc ? NULL : filter_part_problem(&r->filter.desc.params, i, *data, *len);
	if (rc || why) {
		if (why)
			report_damage(r, "%s: filter part %u at offset %" PRIu64 ": %s; the table "
				      "is read without it", r->path, i, h->offset, why);
		else
			report_damage(r, "%s; the table is read without this filter part",
				      msg ? msg : r->path);
		free(msg);
		if (!rc)
			free(*mem);
		*mem = NULL;
		return -EUCLEAN;
	}
	return 0;
}

/* The parts go in memory: through the store's filter cache (which loads
 * what its budget allows), or all of them now. */
static int load_parts(struct sst_reader *r)
{
	if (r->counters && r->counters->filters) {
		filter_cache_attach(r->counters->filters, &r->filter, part_loader, r);
		return 0;
	}
	for (unsigned i = 0; i < r->filter.desc.nparts; i++) {
		int rc = load_part(r, i);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The filter (FORMAT.md "Filter block"): format 1 has one Bloom filter
 * block; format 2 a descriptor naming the parts, which end the data area.
 * Damage is reported and the table read without what does not read; only
 * a lack of memory fails.
 */
static int load_filter(struct sst_reader *r)
{
	if (!r->filter_handle.size)
		return 0;
	struct table_filter *f = &r->filter;
	if (r->version == 1) {
		f->desc = format1_desc(r);
		f->present = true;
		return load_parts(r);
	}
	void *mem;
	const uint8_t *data;
	size_t len;
	char *msg = NULL;
	int rc = sst_read_block_alloc(r, "filter block", &r->filter_handle, &mem, &data, &len,
				      &msg);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		report_damage(r, "%s; the table is read without its filter", msg ? msg : r->path);
		free(msg);
		return 0;
	}
	const char *why = filter_desc_decode(data, len, r->filter_handle.offset, &f->desc);
	free(mem);
	if (why) {
		report_damage(r, "%s: filter block at offset %" PRIu64 ": %s; the table is read "
		       "without its filter", r->path, r->filter_handle.offset, why);
		memset(&f->desc, 0, sizeof(f->desc));
		return 0;
	}
	f->present = true;
	if (f->desc.nparts)
		r->data_end = f->desc.parts[0].offset;
	return load_parts(r);
}

int sst_open(struct store_env *env, const char *path, uint64_t file_number,
	     uint64_t file_size, struct block_cache *cache,
	     struct sst_counters *counters, struct sst_reader **out,
	     char **errmsg)
{
	*out = NULL;
	struct sst_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->path = strdup(path);
	if (!r->path || pthread_mutex_init(&r->mu, NULL)) {
		free(r->path);
		free(r);
		return -ENOMEM;
	}
	r->env = env;
	r->number = file_number;
	r->size = file_size;
	r->cache = cache;
	r->counters = counters;

	int rc = env->ops->open_readable(env, path, &r->file);
	if (rc == -ENOENT) {
		/* The MANIFEST names this table: its absence is damage, and
		 * must never read as "no such key". */
		give_msg(errmsg, sst_msgf("%s: missing (named by the MANIFEST)", path));
		r->file = NULL;
		rc = -EUCLEAN;
		goto out;
	}
	if (rc) {
		give_msg(errmsg, sst_msgf("%s: cannot open: %s", path, strerror(-rc)));
		r->file = NULL;
		goto out;
	}
	rc = read_footer(r, errmsg);
	if (rc)
		goto out;

	void *mem;
	const uint8_t *data;
	size_t len;
	rc = load_filter(r);
	if (rc)
		goto out;
	rc = sst_read_block_alloc(r, "index block", &r->index_handle, &mem, &data,
				  &len, errmsg);
	if (rc)
		goto out;
	r->index = mem;
	if (block_init(r->index, data, len)) {
		rc = sst_bad_block(r, "index block", &r->index_handle, errmsg);
		goto out;
	}
	rc = check_index(r, errmsg);
	if (rc)
		goto out;
	*out = r;
out:
	if (rc)
		sst_close(r);
	return rc;
}

void sst_close(struct sst_reader *r)
{
	if (!r)
		return;
	if (r->file)
		r->env->ops->close_readable(r->file);
	free(r->index);
	if (r->filter.attached)
		filter_cache_detach(r->counters->filters, &r->filter);
	table_filter_free(&r->filter);
	free(r->iter_errmsg);
	free(r->path);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

void sst_reader_set_owner(struct sst_reader *r, void *owner)
{
	r->owner = owner;
}

void *sst_reader_owner(const struct sst_reader *r)
{
	return r->owner;
}

void sst_describe(struct sst_reader *r, uint64_t *data_blocks,
		  uint64_t *filter_bytes, uint64_t *index_bytes)
{
	if (data_blocks)
		*data_blocks = r->data_blocks;
	if (filter_bytes)
		*filter_bytes = r->filter.bytes;
	if (index_bytes)
		*index_bytes = r->index->size;
}

uint64_t sst_filter_part_offset(struct sst_reader *r, unsigned part)
{
	return part < r->filter.desc.nparts ? r->filter.desc.parts[part].offset : 0;
}

void sst_describe_filter(struct sst_reader *r, unsigned *format_version,
			 struct store_filter *policy, unsigned *parts,
			 unsigned *loaded)
{
	*format_version = r->version;
	*policy = r->filter.desc.params;
	*parts = r->filter.desc.nparts;
	*loaded = (unsigned)__builtin_popcount(r->filter.loaded);
}
