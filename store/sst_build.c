/*
 * sst_build: writing an SSTable.  FORMAT.md "SSTable".
 *
 * Entries go into a data block until its estimated payload reaches
 * block_size; the block is then written (LZ4-compressed when that saves at
 * least 1/8) with its 5-byte trailer.  Its index entry is added lazily, when
 * the next key is known, so the separator can be shortened as in LevelDB:
 * a key >= the block's last key and < the next block's first key, with the
 * user key shortened when possible (tag then (SEQ_MAX, KTYPE_SEEK)).  The
 * builder also collects filter_hash() of every distinct user key for the
 * table's filter.  finish() writes the filter's parts and its descriptor
 * (FORMAT.md "Filter block"), the index block (restart interval 1) and the
 * footer, then syncs and closes the file.
 *
 * Errors are sticky: after a failed append every later call returns the
 * same error.  No locking: a builder belongs to one thread.
 */
#include <errno.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "dbformat.h"
#include "filter.h"
#include "sst.h"

struct sst_builder {
	struct store_env *env;
	struct env_wfile *file;
	struct sst_builder_options opt;
	struct block_builder data;
	struct block_builder index;
	struct buf last_key;   /* the last key added */
	struct buf separator;  /* scratch for index keys */
	struct buf compressed; /* scratch for LZ4 output */
	/* One LZ4 state for all blocks: LZ4_compress_default would clear a
	 * fresh 16 KiB table per 4 KiB block; a fast reset keeps blocks
	 * independent at a fraction of the cost. */
	LZ4_stream_t *lz4;
	uint64_t offset;       /* bytes appended to the file */
	uint64_t entries;
	/* The index entry of the last written block waits for the next key. */
	bool pending_index;
	struct block_handle pending;
	uint64_t *hashes; /* filter_hash of each distinct user key */
	size_t nhashes;
	size_t hashes_cap;
	int status;
};

int sst_builder_new(struct store_env *env, const char *path,
		    const struct sst_builder_options *opt,
		    struct sst_builder **out)
{
	*out = NULL;
	if (store_filter_check(&opt->filter) || opt->format_version > SST_FORMAT_VERSION ||
	    (opt->format_version == 1 && opt->filter.kind != STORE_FILTER_NONE &&
	     opt->filter.kind != STORE_FILTER_BLOOM))
		return -EINVAL;
	struct sst_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	int rc = env->ops->open_writable(env, path, &b->file);
	if (rc) {
		free(b);
		return rc;
	}
	b->env = env;
	b->opt = *opt;
	if (b->opt.block_size == 0)
		b->opt.block_size = 1;
	block_builder_init(&b->data, opt->restart_interval);
	block_builder_init(&b->index, 1);
	buf_init(&b->last_key);
	buf_init(&b->separator);
	buf_init(&b->compressed);
	*out = b;
	return 0;
}

static void builder_free(struct sst_builder *b)
{
	block_builder_free(&b->data);
	block_builder_free(&b->index);
	buf_free(&b->last_key);
	buf_free(&b->separator);
	buf_free(&b->compressed);
	if (b->lz4)
		LZ4_freeStream(b->lz4);
	free(b->hashes);
	free(b);
}

void sst_builder_abandon(struct sst_builder *b)
{
	if (!b)
		return;
	/* The file is garbage either way; the caller unlinks it. */
	(void)b->env->ops->close_writable(b->file);
	builder_free(b);
}

/*
 * Write a block payload held in *payload (which gets the trailer appended)
 * and return its handle.  compress: LZ4 allowed for this block.
 */
static int write_block(struct sst_builder *b, struct buf *payload,
		       bool compress, struct block_handle *h)
{
	struct buf *out = payload;
	uint8_t type = BLOCK_TYPE_NONE;
	size_t n = payload->len;
	if (compress && b->opt.compression == STORE_COMPRESSION_LZ4 && n > 0 &&
	    n <= LZ4_MAX_INPUT_SIZE && !b->lz4)
		b->lz4 = LZ4_createStream(); /* NULL: this block goes uncompressed */
	if (compress && b->opt.compression == STORE_COMPRESSION_LZ4 && n > 0 &&
	    n <= LZ4_MAX_INPUT_SIZE && b->lz4) {
		int bound = LZ4_compressBound((int)n);
		buf_clear(&b->compressed);
		if (buf_reserve(&b->compressed, VARINT_MAX + (size_t)bound +
							BLOCK_TRAILER_SIZE) == 0) {
			uint8_t *start = b->compressed.data;
			uint8_t *p = put_varint32(start, (uint32_t)n);
			/* Reset: no earlier block serves as dictionary. */
			LZ4_resetStream_fast(b->lz4);
			int c = LZ4_compress_fast_continue(b->lz4, (const char *)payload->data,
							   (char *)p, (int)n, bound, 1);
			size_t total = (size_t)(p - start) + (size_t)c;
			if (c > 0 && total <= n - n / 8) {
				b->compressed.len = total;
				out = &b->compressed;
				type = BLOCK_TYPE_LZ4;
			}
		}
	}
	h->offset = b->offset;
	h->size = out->len;
	buf_put_u8(out, type);
	buf_put_le32(out, checksum32(out->data, out->len));
	int rc = buf_ok(out);
	if (rc)
		return rc;
	rc = b->env->ops->append(b->file, out->data, out->len);
	if (rc)
		return rc;
	b->offset += out->len;
	return 0;
}

static int flush_data_block(struct sst_builder *b)
{
	if (block_builder_empty(&b->data))
		return 0;
	int rc = block_builder_ok(&b->data);
	if (rc)
		return rc;
	rc = write_block(b, block_builder_finish(&b->data), true, &b->pending);
	if (rc)
		return rc;
	b->pending_index = true;
	block_builder_reset(&b->data);
	return 0;
}

/*
 * LevelDB's FindShortestSeparator over internal keys: into b->separator, a
 * key k with start <= k < limit, as short as the user keys allow.
 */
static void shortest_separator(struct buf *out, const uint8_t *start,
			       size_t slen, const uint8_t *limit, size_t llen)
{
	size_t su = slen - IKEY_TAG_LEN, lu = llen - IKEY_TAG_LEN;
	size_t n = su < lu ? su : lu;
	size_t diff = 0;
	while (diff < n && start[diff] == limit[diff])
		diff++;
	buf_clear(out);
	if (diff < n) {
		uint8_t byte = start[diff];
		/* start[diff] + 1 < limit[diff] leaves a user key strictly
		 * between the two; shorter than start's only if diff + 1 < su. */
		if (byte < 0xff && byte + 1 < limit[diff] && diff + 1 < su) {
			buf_append(out, start, diff);
			buf_put_u8(out, (uint8_t)(byte + 1));
			buf_put_le64(out, ikey_pack_tag(SEQ_MAX, KTYPE_SEEK));
			return;
		}
	}
	buf_append(out, start, slen);
}

/* LevelDB's FindShortSuccessor: a short key >= start (for the last block). */
static void short_successor(struct buf *out, const uint8_t *start, size_t slen)
{
	size_t su = slen - IKEY_TAG_LEN;
	buf_clear(out);
	for (size_t i = 0; i + 1 < su; i++) {
		if (start[i] != 0xff) {
			buf_append(out, start, i);
			buf_put_u8(out, (uint8_t)(start[i] + 1));
			buf_put_le64(out, ikey_pack_tag(SEQ_MAX, KTYPE_SEEK));
			return;
		}
	}
	buf_append(out, start, slen);
}

static int add_pending_index(struct sst_builder *b, const uint8_t *next,
			     size_t nlen)
{
	if (next)
		shortest_separator(&b->separator, b->last_key.data,
				   b->last_key.len, next, nlen);
	else
		short_successor(&b->separator, b->last_key.data,
				b->last_key.len);
	uint8_t h[2 * VARINT_MAX];
	uint8_t *p = put_varint64(h, b->pending.offset);
	p = put_varint64(p, b->pending.size);
	block_builder_add(&b->index, b->separator.data, b->separator.len, h,
			  (size_t)(p - h));
	b->pending_index = false;
	int rc = buf_ok(&b->separator);
	return rc ? rc : block_builder_ok(&b->index);
}

static int add_hash(struct sst_builder *b, const uint8_t *ukey, size_t ulen)
{
	if (b->nhashes == b->hashes_cap) {
		size_t cap = b->hashes_cap ? 2 * b->hashes_cap : 1024;
		uint64_t *h = realloc(b->hashes, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		b->hashes = h;
		b->hashes_cap = cap;
	}
	b->hashes[b->nhashes++] = filter_hash(ukey, ulen);
	return 0;
}

int sst_builder_add(struct sst_builder *b, const uint8_t *ikey, size_t klen,
		    const uint8_t *val, size_t vlen)
{
	if (b->status)
		return b->status;
	if (klen < IKEY_TAG_LEN || klen > UINT32_MAX / 2 || vlen > UINT32_MAX / 2)
		return -EINVAL;
	size_t ulen = klen - IKEY_TAG_LEN;
	bool new_ukey = true;
	if (b->entries > 0) {
		/* Keys must strictly increase; equal user keys share one hash. */
		const uint8_t *last = b->last_key.data;
		size_t lu = b->last_key.len - IKEY_TAG_LEN;
		int c = ukey_compare(last, lu, ikey, ulen);
		if (c == 0) {
			if (get_le64(last + lu) <= get_le64(ikey + ulen))
				return -EINVAL;
			new_ukey = false;
		} else if (c > 0) {
			return -EINVAL;
		}
	}

	int rc = 0;
	if (b->pending_index)
		rc = add_pending_index(b, ikey, klen);
	if (rc == 0 && new_ukey && b->opt.filter.kind != STORE_FILTER_NONE)
		rc = add_hash(b, ikey, ulen);
	if (rc)
		goto out;
	buf_clear(&b->last_key);
	buf_append(&b->last_key, ikey, klen);
	rc = buf_ok(&b->last_key);
	if (rc)
		goto out;
	block_builder_add(&b->data, ikey, klen, val, vlen);
	b->entries++;
	if (block_builder_size(&b->data) >= b->opt.block_size)
		rc = flush_data_block(b);
	else
		rc = block_builder_ok(&b->data);
out:
	b->status = rc;
	return rc;
}

uint64_t sst_builder_file_size(const struct sst_builder *b)
{
	uint64_t filter = filter_size_estimate(&b->opt.filter, b->nhashes);
	return b->offset + block_builder_size(&b->data) +
	       block_builder_size(&b->index) + filter + SST_FOOTER_SIZE;
}

uint64_t sst_builder_entries(const struct sst_builder *b)
{
	return b->entries;
}

static unsigned version(const struct sst_builder *b)
{
	return b->opt.format_version ? b->opt.format_version : SST_FORMAT_VERSION;
}

/*
 * The filter: each part a block, then the descriptor naming them, whose
 * handle goes in the footer (FORMAT.md "Filter block").  Format 1: the one
 * Bloom part is the filter block.
 */
static int write_filter(struct sst_builder *b, struct block_handle *fh)
{
	struct filter_desc d = {.params = b->opt.filter, .keys = b->nhashes,
				.nparts = filter_parts(&b->opt.filter)};
	struct buf f;
	buf_init(&f);
	int rc = 0;
	if (version(b) == 1 && d.params.kind != STORE_FILTER_BLOOM)
		return -EINVAL;
	for (unsigned i = 0; i < d.nparts && !rc; i++) {
		buf_clear(&f);
		filter_build_part(&d.params, b->hashes, b->nhashes, i, &f);
		rc = buf_ok(&f);
		if (rc == 0)
			rc = write_block(b, &f, false, &d.parts[i]);
	}
	if (rc == 0 && version(b) == 1) {
		*fh = d.parts[0];
	} else if (rc == 0) {
		buf_clear(&f);
		filter_desc_encode(&d, &f);
		rc = buf_ok(&f);
		if (rc == 0)
			rc = write_block(b, &f, false, fh);
	}
	buf_free(&f);
	return rc;
}

static int write_tail(struct sst_builder *b)
{
	int rc = flush_data_block(b);
	if (rc)
		return rc;

	/* Filter ("no filter": handle (0, 0)). */
	struct block_handle fh = { 0, 0 };
	if (b->opt.filter.kind != STORE_FILTER_NONE) {
		rc = write_filter(b, &fh);
		if (rc)
			return rc;
	}

	if (b->pending_index) {
		rc = add_pending_index(b, NULL, 0);
		if (rc)
			return rc;
	}
	struct block_handle ih;
	rc = write_block(b, block_builder_finish(&b->index), false, &ih);
	if (rc)
		return rc;

	uint8_t footer[SST_FOOTER_SIZE];
	memset(footer, 0, sizeof(footer));
	uint8_t *p = put_varint64(footer, fh.offset);
	p = put_varint64(p, fh.size);
	p = put_varint64(p, ih.offset);
	put_varint64(p, ih.size); /* at most 40 bytes: 4 varints of <= 10 */
	put_le32(footer + 40, version(b));
	put_le32(footer + 44, SST_MAGIC);
	rc = b->env->ops->append(b->file, footer, sizeof(footer));
	if (rc)
		return rc;
	b->offset += sizeof(footer);
	return b->env->ops->sync(b->file);
}

int sst_builder_finish(struct sst_builder *b, uint64_t *file_size)
{
	int rc = b->status;
	if (rc == 0)
		rc = write_tail(b);
	int crc = b->env->ops->close_writable(b->file);
	if (rc == 0)
		rc = crc;
	if (rc == 0 && file_size)
		*file_size = b->offset;
	builder_free(b);
	return rc;
}
