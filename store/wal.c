/*
 * wal: the commit-log record format (FORMAT.md "Commit log"), used by the
 * commit logs (*.log) and the MANIFEST.
 *
 * A file is a sequence of 32 KiB blocks; only the last may be short.  A
 * record is cut into one or more fragments, none of which crosses a block
 * boundary.  Each fragment is a 7-byte header followed by its payload:
 *
 *   checksum  le32  checksum32() of the type byte followed by the payload
 *   length    le16  payload bytes (0 .. 32761)
 *   type      u8    FULL=1 (a whole record), FIRST=2, MIDDLE=3, LAST=4
 *
 * When fewer than 7 bytes remain in a block the writer fills them with
 * zeros and starts the next fragment at the next block.  Exactly 7 bytes
 * left still take a header: a zero-length FIRST (or a zero-length FULL for
 * an empty record).  So every block starts with a fragment header, which is
 * what lets the reader find valid data past a damaged fragment.
 *
 * Reading stops at the first bad fragment with -EUCLEAN.  It is a torn tail
 * (wal_error.tail) when nothing valid follows it: no block after it holds a
 * FULL or FIRST fragment whose length and checksum check out, and, since a
 * damaged length hides where the next fragment starts, no byte after its
 * header in its own block starts valid fragments that run to the block's
 * end.  A file whose
 * remainder is all zeros (a cut inside block padding, or a zero-filled end
 * left by a crash) ends cleanly.  Zeros where a fragment header belongs are
 * a tail whatever follows, and so is a bad fragment that reaches into a
 * stale page (stale_page_in): pages of an unsynced tail reach the disk in
 * any order, each as the disk last saw it, so a power cut can leave a
 * stale page before valid data, and since a sync covers every byte before
 * its end, nothing after it was synced.
 *
 * Locking: none; a writer or reader belongs to one thread at a time.
 */
#include "wal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coding.h"

enum {
	FRAG_ZERO = 0, /* never written: only seen in zero-filled space */
	FRAG_FULL = 1,
	FRAG_FIRST = 2,
	FRAG_MIDDLE = 3,
	FRAG_LAST = 4,
};

/*
 * Fragments up to this size are staged with their header (and any block
 * padding before them) so that the checksum is one-shot over contiguous
 * bytes and the env sees one append.  Larger ones are checksummed in two
 * pieces and appended in two calls, avoiding the copy.
 */
#define SMALL_FRAGMENT 1024

struct wal_writer {
	struct store_env *env;
	struct env_wfile *file;
	uint64_t size; /* bytes appended; size % WAL_BLOCK_SIZE is the block offset */
	int error;     /* sticky: once an append fails, the file's tail is unknown */
	uint8_t stage[WAL_HEADER_SIZE - 1 + WAL_HEADER_SIZE + SMALL_FRAGMENT];
};

int wal_writer_open(struct store_env *env, const char *path,
		    struct wal_writer **out)
{
	struct wal_writer *w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	int rc = env->ops->open_writable(env, path, &w->file);
	if (rc) {
		free(w);
		return rc;
	}
	w->env = env;
	w->size = 0;
	w->error = 0;
	*out = w;
	return 0;
}

static int append(struct wal_writer *w, const void *data, size_t len)
{
	int rc = w->env->ops->append(w->file, data, len);
	if (rc) {
		w->error = rc;
		return rc;
	}
	w->size += len;
	return 0;
}

/* Write pad zero bytes (the rest of the block), then one fragment. */
static int emit_fragment(struct wal_writer *w, size_t pad, uint8_t type,
			 const uint8_t *p, size_t n)
{
	uint8_t *s = w->stage;
	memset(s, 0, pad);
	uint8_t *h = s + pad;
	put_le16(h + 4, (uint16_t)n);
	h[6] = type;
	if (n <= SMALL_FRAGMENT) {
		if (n)
			memcpy(h + WAL_HEADER_SIZE, p, n);
		put_le32(h, checksum32(h + 6, 1 + n));
		return append(w, s, pad + WAL_HEADER_SIZE + n);
	}
	put_le32(h, checksum32_2(h + 6, 1, p, n));
	int rc = append(w, s, pad + WAL_HEADER_SIZE);
	return rc ? rc : append(w, p, n);
}

int wal_add_record(struct wal_writer *w, const void *data, size_t len)
{
	if (w->error)
		return w->error;
	const uint8_t *p = data;
	bool begin = true;
	do {
		size_t offset = (size_t)(w->size % WAL_BLOCK_SIZE);
		size_t left_in_block = WAL_BLOCK_SIZE - offset;
		size_t pad = 0;
		if (left_in_block < WAL_HEADER_SIZE) {
			pad = left_in_block;
			left_in_block = WAL_BLOCK_SIZE;
		}
		size_t avail = left_in_block - WAL_HEADER_SIZE;
		size_t n = len < avail ? len : avail;
		bool end = n == len;
		uint8_t type = begin ? (end ? FRAG_FULL : FRAG_FIRST)
				     : (end ? FRAG_LAST : FRAG_MIDDLE);
		int rc = emit_fragment(w, pad, type, p, n);
		if (rc)
			return rc;
		p += n;
		len -= n;
		begin = false;
	} while (len > 0);
	return 0;
}

int wal_flush(struct wal_writer *w)
{
	if (w->error)
		return w->error;
	int rc = w->env->ops->flush(w->file);
	if (rc)
		w->error = rc;
	return rc;
}

int wal_sync(struct wal_writer *w)
{
	if (w->error)
		return w->error;
	/* A failed fsync may have dropped dirty pages: never retry it. */
	int rc = w->env->ops->sync(w->file);
	if (rc)
		w->error = rc;
	return rc;
}

uint64_t wal_writer_size(const struct wal_writer *w)
{
	return w->size;
}

int wal_writer_close(struct wal_writer *w)
{
	int rc = w->env->ops->close_writable(w->file);
	if (w->error)
		rc = w->error;
	free(w);
	return rc;
}

/* ------------------------------------------------------------------ */

struct wal_reader {
	struct store_env *env;
	struct env_rfile *file;
	uint8_t *block;     /* WAL_BLOCK_SIZE bytes */
	uint8_t *scratch;   /* for the scans after an error; allocated then */
	uint64_t block_off; /* file offset of block[0] */
	size_t block_len;   /* bytes of the file in block; < WAL_BLOCK_SIZE: last */
	size_t pos;         /* next fragment header in block */
	bool loaded;        /* block holds a block of the file */
	bool at_end;        /* a clean end was seen */
	struct buf rec;     /* reassembly of FIRST..LAST */
	uint64_t good;      /* just past the last whole record returned */
	int error;          /* sticky */
	struct wal_error err;
	/* Set with an error whose fragment's own checksum held (a fragment
	 * out of order): where reading can go on (wal_reader_resync); 0 when
	 * the next block is the first place to trust. */
	uint64_t resume;
};

int wal_reader_open(struct store_env *env, const char *path,
		    struct wal_reader **out)
{
	struct wal_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->block = malloc(WAL_BLOCK_SIZE);
	if (!r->block) {
		free(r);
		return -ENOMEM;
	}
	int rc = env->ops->open_readable(env, path, &r->file);
	if (rc) {
		free(r->block);
		free(r);
		return rc;
	}
	r->env = env;
	buf_init(&r->rec);
	*out = r;
	return 0;
}

static int read_block(struct wal_reader *r, uint8_t *dst, uint64_t off,
		      size_t *got)
{
	return r->env->ops->pread(r->file, dst, WAL_BLOCK_SIZE, off, got);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int get_scratch(struct wal_reader *r)
{
	if (!r->scratch)
		r->scratch = malloc(WAL_BLOCK_SIZE);
	return r->scratch ? 0 : -ENOMEM;
}

/* Is everything from block[pos] to the end of the file zero?  1, 0 or error. */
static int rest_is_zero(struct wal_reader *r)
{
	if (!all_zero(r->block + r->pos, r->block_len - r->pos))
		return 0;
	if (r->block_len < WAL_BLOCK_SIZE)
		return 1;
	int rc = get_scratch(r);
	if (rc)
		return rc;
	uint64_t off = r->block_off + WAL_BLOCK_SIZE;
	for (;;) {
		size_t got;
		rc = read_block(r, r->scratch, off, &got);
		if (rc)
			return rc;
		if (!all_zero(r->scratch, got))
			return 0;
		if (got < WAL_BLOCK_SIZE)
			return 1;
		off += WAL_BLOCK_SIZE;
	}
}

/*
 * Follow the chain of fragments in b[start..len): true if it holds a FULL
 * or FIRST fragment whose length and checksum check out.  The chain ends at
 * the first fragment that does not check out (its length cannot be trusted).
 */
/* Does a whole fragment with a good checksum stand at b[p] within
 * b[0, len)?  *end: where it ends. */
static bool fragment_ok(const uint8_t *b, size_t len, size_t p, size_t *end)
{
	const uint8_t *h = b + p;
	size_t n = get_le16(h + 4);
	*end = p + WAL_HEADER_SIZE + n;
	return *end <= len && checksum32(h + 6, 1 + n) == get_le32(h);
}

static bool chain_has_record_start(const uint8_t *b, size_t len, size_t start)
{
	size_t p = start;
	while (p + WAL_HEADER_SIZE <= len) {
		const uint8_t *h = b + p;
		size_t end;
		if (!fragment_ok(b, len, p, &end))
			return false;
		if (h[6] == FRAG_FULL || h[6] == FRAG_FIRST)
			return true;
		p = end;
	}
	return false;
}

/*
 * Do valid fragments start at b[p] and run, one after another, to the end
 * of the short last block b[0, len) (or to zeros there), a record's start
 * among them?  What a fragment length damaged so that it runs past the
 * end of the file leaves behind it; a torn last write never does, since
 * the file ends inside the fragment it was writing.
 */
static bool chain_to_end(const uint8_t *b, size_t len, size_t p)
{
	bool start = false;
	while (p + WAL_HEADER_SIZE <= len) {
		const uint8_t *h = b + p;
		size_t end;
		if (h[6] < FRAG_FULL || h[6] > FRAG_LAST || !fragment_ok(b, len, p, &end))
			break;
		start |= h[6] == FRAG_FULL || h[6] == FRAG_FIRST;
		p = end;
	}
	return start && all_zero(b + p, len - p);
}

/*
 * Does a record start anywhere at or after file offset from (a fragment
 * boundary), or at any later block start?  Every later block is walked
 * from its start, since every block starts with a fragment header.
 * 1, 0 or error.
 */
static int valid_data_follows(struct wal_reader *r, uint64_t from)
{
	int rc = get_scratch(r);
	if (rc)
		return rc;
	uint64_t off = from - from % WAL_BLOCK_SIZE;
	size_t start = (size_t)(from - off);
	for (;;) {
		size_t got;
		rc = read_block(r, r->scratch, off, &got);
		if (rc)
			return rc;
		if (chain_has_record_start(r->scratch, got, start))
			return 1;
		if (got < WAL_BLOCK_SIZE)
			return 0;
		off += WAL_BLOCK_SIZE;
		start = 0;
	}
}

/* Record a corruption at file offset off and return -EUCLEAN (or a read
 * error met while deciding tail).  scan_from: where to look for valid data
 * after it; UINT64_MAX if the bad fragment is at the end of the file. */
static int corrupt(struct wal_reader *r, uint64_t off, uint64_t scan_from,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int corrupt(struct wal_reader *r, uint64_t off, uint64_t scan_from,
		   const char *fmt, ...)
{
	bool tail = true;
	if (scan_from != UINT64_MAX) {
		int rc = valid_data_follows(r, scan_from);
		if (rc < 0) {
			r->error = rc;
			return rc;
		}
		tail = rc == 0;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err.msg, sizeof(r->err.msg), fmt, ap);
	va_end(ap);
	r->err.offset = off;
	r->err.tail = tail;
	r->error = -EUCLEAN;
	return -EUCLEAN;
}

/*
 * Does block[from, to) (a fragment of the record that starts at file
 * offset r->good) reach into a page that a power cut left stale?  Pages
 * of an unsynced tail reach the disk in any order, each as the disk last
 * saw it: the bytes of the writes made before that write-back, zeros
 * after.  The log is flushed after every record (db_write.c), so a write
 * starts at a record's start or ENV_WRITE_UNIT bytes after an earlier
 * write's start inside the record (env.h).  So a torn fragment overlaps a
 * file-aligned page that holds zeros from the fragment's last byte in it
 * to the page's end (to the end of the file in the file's last page), and
 * that zero run reaches back to the page's start or to such a write's
 * start.  Damage to synced bytes that a zero run merely follows is not
 * taken for one.
 */
#define WAL_PAGE 4096u
static bool stale_page_in(const struct wal_reader *r, size_t from, size_t to)
{
	if (to > r->block_len)
		to = r->block_len;
	for (size_t p = from / WAL_PAGE * WAL_PAGE; p < to; p += WAL_PAGE) {
		size_t page_end = p + WAL_PAGE < r->block_len ? p + WAL_PAGE : r->block_len;
		size_t last = (to < page_end ? to : page_end) - 1;
		if (!all_zero(r->block + last, page_end - last))
			continue;
		size_t z = last; /* the zero run: [z, page_end) */
		while (z > p && r->block[z - 1] == 0)
			z--;
		if (z == p)
			return true; /* nothing written there reached the disk */
		uint64_t fz = r->block_off + z, fend = r->block_off + page_end, w = r->good;
		if (w < fz)
			w += (fz - w + ENV_WRITE_UNIT - 1) / ENV_WRITE_UNIT * ENV_WRITE_UNIT;
		if (w < fend)
			return true; /* a write starting at w never reached the disk */
	}
	return false;
}

/* The file ends at block[pos] (or only zeros follow). */
static int end_of_file(struct wal_reader *r, bool in_record, uint64_t rec_start)
{
	if (!in_record) {
		r->at_end = true;
		return 0;
	}
	return corrupt(r, r->block_off + r->pos, UINT64_MAX,
		       "file ends inside a record (started at %" PRIu64 ")",
		       rec_start);
}

int wal_reader_resync(struct wal_reader *r)
{
	if (r->error != -EUCLEAN)
		return r->error;
	/* Every block starts with a fragment header: the next block after
	 * the bad fragment is the first place valid data can be found. */
	uint64_t next = r->err.offset - r->err.offset % WAL_BLOCK_SIZE + WAL_BLOCK_SIZE;
	r->error = 0;
	r->at_end = false;
	buf_clear(&r->rec);
	if (r->resume && r->loaded && r->resume >= r->block_off &&
	    r->resume <= r->block_off + r->block_len) {
		/* A fragment whose checksum held but came out of order: its
		 * framing is good, so go on right there. */
		r->pos = (size_t)(r->resume - r->block_off);
		r->resume = 0;
		return 0;
	}
	r->resume = 0;
	r->loaded = true;
	r->block_off = next - WAL_BLOCK_SIZE;
	r->block_len = WAL_BLOCK_SIZE;
	r->pos = WAL_BLOCK_SIZE; /* used up: the next read loads block `next` */
	return 0;
}

int wal_read_record(struct wal_reader *r, const uint8_t **rec, size_t *len)
{
	if (r->error)
		return r->error;
	if (r->at_end)
		return 0;
	bool in_record = false;
	uint64_t rec_start = 0;
	buf_clear(&r->rec);
	for (;;) {
		if (r->pos + WAL_HEADER_SIZE > r->block_len) {
			if (!r->loaded || r->block_len == WAL_BLOCK_SIZE) {
				/* Past the block's zero padding: next block. */
				uint64_t off = r->loaded
						       ? r->block_off + WAL_BLOCK_SIZE
						       : 0;
				int rc = read_block(r, r->block, off,
						    &r->block_len);
				if (rc) {
					r->error = rc;
					return rc;
				}
				r->block_off = off;
				r->pos = 0;
				r->loaded = true;
				continue;
			}
			/* The short last block: the file ends here. */
			if (all_zero(r->block + r->pos, r->block_len - r->pos))
				return end_of_file(r, in_record, rec_start);
			return corrupt(r, r->block_off + r->pos, UINT64_MAX,
				       "file ends inside a fragment header");
		}

		const uint8_t *h = r->block + r->pos;
		uint64_t frag_off = r->block_off + r->pos;
		uint32_t sum = get_le32(h);
		size_t n = get_le16(h + 4);
		uint8_t type = h[6];
		size_t end = r->pos + WAL_HEADER_SIZE + n;
		uint64_t next_block = r->block_off + WAL_BLOCK_SIZE;

		if (type == FRAG_ZERO && n == 0 && sum == 0) {
			int rc = rest_is_zero(r);
			if (rc < 0) {
				r->error = rc;
				return rc;
			}
			if (rc)
				return end_of_file(r, in_record, rec_start);
			/* Zeros where a header belongs are space the writer's
			 * pages never reached: a power cut can keep later pages
			 * of an unsynced tail and lose this one.  A sync covers
			 * every byte before its end, so nothing after such a
			 * hole was synced: the log ends here (a tail). */
			return corrupt(r, frag_off, UINT64_MAX,
				       "zero-filled fragment header before the end of the file");
		}
		/* The writer never writes such a length, and a stale page
		 * only makes one smaller: damage. */
		if (end > WAL_BLOCK_SIZE)
			return corrupt(r, frag_off, next_block,
				       "fragment length %zu runs past block end", n);
		if (end > r->block_len) {
			/* A torn last write, unless valid fragments follow
			 * the header to the end of the file: then the length
			 * was damaged, and the records after it are not a
			 * tail to cut (a scan of at most one block, at
			 * recovery). */
			for (size_t p = r->pos + WAL_HEADER_SIZE; p + WAL_HEADER_SIZE <= r->block_len; p++)
				if (chain_to_end(r->block, r->block_len, p))
					return corrupt(r, frag_off, r->block_off + p,
						       "fragment length %zu runs past the end of the file, and valid records follow",
						       n);
			return corrupt(r, frag_off, UINT64_MAX,
				       "file ends inside a record (fragment of %zu bytes)",
				       n);
		}
		uint64_t after = r->block_off + end;
		if (checksum32(h + 6, 1 + n) != sum) {
			if (stale_page_in(r, r->pos, end))
				return corrupt(r, frag_off, UINT64_MAX, "checksum mismatch");
			/* The length may be what was damaged: then `after`
			 * is no fragment boundary, and the records that follow
			 * in this block are found by trying every byte after
			 * the header for valid fragments that run to the
			 * block's end (a scan of at most one block, at
			 * recovery; a damaged log's last block has no later
			 * block start to find them from).  A salvage resumes
			 * there. */
			for (size_t p = r->pos + WAL_HEADER_SIZE; p + WAL_HEADER_SIZE <= r->block_len; p++)
				if (chain_to_end(r->block, r->block_len, p)) {
					r->resume = r->block_off + p;
					return corrupt(r, frag_off, r->resume,
						       "checksum mismatch, and valid records follow");
				}
			return corrupt(r, frag_off, after, "checksum mismatch");
		}

		const uint8_t *payload = h + WAL_HEADER_SIZE;
		switch (type) {
		case FRAG_FULL:
			if (in_record) {
				r->resume = frag_off; /* a new record starts here */
				return corrupt(r, frag_off, frag_off,
					       "FULL inside a record (started at %" PRIu64 ")",
					       rec_start);
			}
			r->pos = end;
			r->good = after;
			*rec = payload;
			*len = n;
			return 1;
		case FRAG_FIRST:
			if (in_record) {
				r->resume = frag_off;
				return corrupt(r, frag_off, frag_off,
					       "FIRST inside a record (started at %" PRIu64 ")",
					       rec_start);
			}
			in_record = true;
			rec_start = frag_off;
			buf_append(&r->rec, payload, n);
			break;
		case FRAG_MIDDLE:
		case FRAG_LAST:
			if (!in_record) {
				r->resume = after; /* the rest of a record lost before */
				return corrupt(r, frag_off, after, "%s without FIRST",
					       type == FRAG_LAST ? "LAST" : "MIDDLE");
			}
			buf_append(&r->rec, payload, n);
			break;
		default:
			r->resume = after;
			return corrupt(r, frag_off, after,
				       "unknown fragment type %u", type);
		}
		r->pos = end;
		if (type == FRAG_LAST) {
			int rc = buf_ok(&r->rec);
			if (rc) {
				r->error = rc;
				return rc;
			}
			r->good = after;
			/* A record always has a byte unless it is FULL, but
			 * never hand out NULL. */
			*rec = r->rec.data ? r->rec.data : payload;
			*len = r->rec.len;
			return 1;
		}
	}
}

const struct wal_error *wal_reader_error(const struct wal_reader *r)
{
	return &r->err;
}

uint64_t wal_reader_good_offset(const struct wal_reader *r)
{
	return r->good;
}

void wal_reader_close(struct wal_reader *r)
{
	if (!r)
		return;
	r->env->ops->close_readable(r->file);
	buf_free(&r->rec);
	free(r->scratch);
	free(r->block);
	free(r);
}
