/*
 * block: building and reading prefix-compressed blocks.  FORMAT.md
 * "SSTable" ("Block payload"); the byte layout is also summarised in block.h.
 *
 * The iterator follows LevelDB's Block::Iter: seek binary-searches the
 * restart points (whose keys are stored whole) and then scans linearly;
 * prev rescans from the restart point before the current entry.
 * Invariant of the iterator: current < restarts iff it is valid; on
 * corruption status becomes -EUCLEAN, the iterator invalid, and every
 * later positioning call a no-op until block_iter_reset.
 * No locking (see block.h).
 */
#include "block.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- handles ---- */

void block_handle_encode(struct buf *b, const struct block_handle *h)
{
	buf_put_varint64(b, h->offset);
	buf_put_varint64(b, h->size);
}

const uint8_t *block_handle_decode(const uint8_t *p, const uint8_t *limit,
				   struct block_handle *h)
{
	p = get_varint64(p, limit, &h->offset);
	if (!p)
		return NULL;
	return get_varint64(p, limit, &h->size);
}

/* ---- builder ---- */

void block_builder_init(struct block_builder *b, size_t restart_interval)
{
	buf_init(&b->data);
	buf_init(&b->restarts);
	buf_init(&b->last_key);
	b->interval = restart_interval ? restart_interval : 1;
	block_builder_reset(b);
}

void block_builder_free(struct block_builder *b)
{
	buf_free(&b->data);
	buf_free(&b->restarts);
	buf_free(&b->last_key);
}

void block_builder_reset(struct block_builder *b)
{
	buf_clear(&b->data);
	buf_clear(&b->restarts);
	buf_clear(&b->last_key);
	buf_put_le32(&b->restarts, 0); /* the first entry is a restart point */
	b->nrestarts = 1;
	b->counter = 0;
	b->entries = 0;
	b->finished = false;
}

int block_builder_ok(const struct block_builder *b)
{
	int rc = buf_ok(&b->data);
	if (!rc)
		rc = buf_ok(&b->restarts);
	if (!rc)
		rc = buf_ok(&b->last_key);
	return rc;
}

void block_builder_add(struct block_builder *b, const uint8_t *key,
		       size_t klen, const uint8_t *val, size_t vlen)
{
	size_t shared = 0;
	if (b->counter < b->interval) {
		size_t n = b->last_key.len < klen ? b->last_key.len : klen;
		while (shared < n && b->last_key.data[shared] == key[shared])
			shared++;
	} else {
		buf_put_le32(&b->restarts, (uint32_t)b->data.len);
		b->nrestarts++;
		b->counter = 0;
	}
	size_t non_shared = klen - shared;

	uint8_t hdr[3 * 5];
	uint8_t *p = put_varint32(hdr, (uint32_t)shared);
	p = put_varint32(p, (uint32_t)non_shared);
	p = put_varint32(p, (uint32_t)vlen);
	if (buf_reserve(&b->data, (size_t)(p - hdr) + non_shared + vlen) == 0) {
		buf_append(&b->data, hdr, (size_t)(p - hdr));
		buf_append(&b->data, key + shared, non_shared);
		buf_append(&b->data, val, vlen);
	}

	b->last_key.len = shared < b->last_key.len ? shared : b->last_key.len;
	buf_append(&b->last_key, key + shared, non_shared);
	b->counter++;
	b->entries++;
}

struct buf *block_builder_finish(struct block_builder *b)
{
	buf_append(&b->data, b->restarts.data, b->restarts.len);
	buf_put_le32(&b->data, b->nrestarts);
	b->finished = true;
	return &b->data;
}

/* ---- decoded block ---- */

int block_init(struct block *b, const uint8_t *data, size_t size)
{
	if (size < 8 || size > UINT32_MAX)
		return -EUCLEAN;
	uint32_t n = get_le32(data + size - 4);
	if (n == 0 || n > (size - 4) / 4)
		return -EUCLEAN;
	uint32_t restarts = (uint32_t)(size - 4 - 4 * (size_t)n);
	/* Restart offsets: the first is 0, they increase, and each starts an
	 * entry inside [0, restarts) -- except that an empty block has the
	 * single restart point 0 == restarts. */
	const uint8_t *r = data + restarts;
	uint32_t prev = get_le32(r);
	if (prev != 0 || (restarts == 0 && n != 1))
		return -EUCLEAN;
	for (uint32_t i = 1; i < n; i++) {
		uint32_t off = get_le32(r + 4 * (size_t)i);
		if (off <= prev || off >= restarts)
			return -EUCLEAN;
		prev = off;
	}
	b->data = data;
	b->size = size;
	b->restarts = restarts;
	b->num_restarts = n;
	return 0;
}

/* ---- iterator ---- */

static const struct iter_ops block_iter_ops;

static inline const uint8_t *decode_entry(const uint8_t *p, const uint8_t *limit,
					  uint32_t *shared, uint32_t *non_shared,
					  uint32_t *value_len);

/*
 * block_init checks only that restart offsets rise inside the entries; the
 * iterators' seeks and backward steps start parsing at them, so one that is
 * not an entry's first byte, or names an entry that shares a prefix, reads
 * as corruption (or as a phantom entry) only when a seek or a step back
 * lands on it, while a forward walk reads the block whole.  This walks the
 * entries once and checks every restart point against them (FORMAT.md
 * "Block payload"), for sst_verify.
 */
int block_check_restarts(const struct block *b)
{
	const uint8_t *base = b->data, *limit = b->data + b->restarts;
	const uint8_t *r = b->data + b->restarts;
	uint32_t j = 0, off = 0;
	while (off < b->restarts) {
		uint32_t shared, non_shared, value_len;
		const uint8_t *p = decode_entry(base + off, limit, &shared, &non_shared,
						&value_len);
		if (!p)
			return -EUCLEAN;
		uint32_t rp = j < b->num_restarts ? get_le32(r + 4 * (size_t)j) : UINT32_MAX;
		if (rp < off)
			return -EUCLEAN; /* inside the previous entry */
		if (rp == off) {
			if (shared)
				return -EUCLEAN;
			j++;
		}
		off = (uint32_t)(p + non_shared + value_len - base);
	}
	/* An empty block's one restart point is its end. */
	return j == b->num_restarts || (b->restarts == 0 && b->num_restarts == 1) ? 0 : -EUCLEAN;
}

void block_iter_init(struct block_iter *it, key_cmp_fn cmp)
{
	memset(it, 0, offsetof(struct block_iter, inline_key));
	it->base.ops = &block_iter_ops;
	it->cmp = cmp;
}

void block_iter_reset(struct block_iter *it, const struct block *b)
{
	it->data = b ? b->data : NULL;
	it->restarts = b ? b->restarts : 0;
	it->num_restarts = b ? b->num_restarts : 0;
	it->current = it->restarts;
	it->next = it->restarts;
	it->status = 0;
	it->key = it->val = NULL;
	it->klen = it->vlen = 0;
}

void block_iter_release(struct block_iter *it)
{
	free(it->heap_key);
	it->heap_key = NULL;
	it->heap_cap = 0;
	it->key = NULL;
	it->klen = 0;
}

static inline uint32_t restart_point(const struct block_iter *it, uint32_t i)
{
	return get_le32(it->data + it->restarts + 4 * (size_t)i);
}

static void mark_invalid(struct block_iter *it)
{
	it->current = it->restarts;
	it->next = it->restarts;
	it->key = it->val = NULL;
	it->klen = it->vlen = 0;
}

static void corrupt(struct block_iter *it)
{
	mark_invalid(it);
	it->status = -EUCLEAN;
}

/*
 * Decode the entry header at p: the three varints, checking that key delta
 * and value fit before limit.  NULL if they do not.
 */
static inline const uint8_t *decode_entry(const uint8_t *p,
					  const uint8_t *limit,
					  uint32_t *shared, uint32_t *non_shared,
					  uint32_t *value_len)
{
	if (limit - p < 3)
		return NULL;
	*shared = p[0];
	*non_shared = p[1];
	*value_len = p[2];
	if ((*shared | *non_shared | *value_len) < 128) {
		p += 3; /* the common case: three one-byte varints */
	} else {
		if (!(p = get_varint32(p, limit, shared)) ||
		    !(p = get_varint32(p, limit, non_shared)) ||
		    !(p = get_varint32(p, limit, value_len)))
			return NULL;
	}
	if ((size_t)(limit - p) < (size_t)*non_shared + *value_len)
		return NULL;
	return p;
}

/* Make the key buffer hold need bytes, keeping its first keep bytes. */
static int key_reserve(struct block_iter *it, size_t need, size_t keep)
{
	if (need <= BLOCK_ITER_INLINE_KEY && !it->heap_key)
		return 0;
	if (need <= it->heap_cap)
		return 0;
	size_t cap = it->heap_cap ? it->heap_cap : 2 * BLOCK_ITER_INLINE_KEY;
	while (cap < need)
		cap *= 2;
	uint8_t *k = malloc(cap);
	if (!k)
		return -ENOMEM;
	const uint8_t *old = it->heap_key ? it->heap_key : it->inline_key;
	if (keep)
		memcpy(k, old, keep);
	if (it->key == old)
		it->key = k;
	free(it->heap_key);
	it->heap_key = k;
	it->heap_cap = cap;
	return 0;
}

static inline uint8_t *key_buf(struct block_iter *it)
{
	return it->heap_key ? it->heap_key : it->inline_key;
}

static inline size_t key_buf_cap(const struct block_iter *it)
{
	return it->heap_key ? it->heap_cap : BLOCK_ITER_INLINE_KEY;
}

/* Build in the key buffer the key of an entry that shares `shared` bytes
 * with the key before it and goes on with delta[0, non_shared); delta
 * lies before limit.  false (status -ENOMEM) when the buffer cannot grow. */
static inline bool build_key(struct block_iter *it, uint32_t shared,
			     const uint8_t *delta, uint32_t non_shared,
			     const uint8_t *limit)
{
	size_t klen = (size_t)shared + non_shared;
	bool in_buf = it->key == key_buf(it);
	/* The previous key is in the buffer (keep its prefix) or in the
	 * block (copy its prefix in). */
	if (key_reserve(it, klen, in_buf ? shared : 0)) {
		it->status = -ENOMEM;
		mark_invalid(it);
		return false;
	}
	uint8_t *kb = key_buf(it);
	if (!in_buf)
		memcpy(kb, it->key, shared);
	/* A delta is mostly short: when the block and the buffer have room,
	 * copy a fixed 32 bytes (a move or two, no call); the bytes past
	 * the delta are never read as key. */
	if (non_shared <= 32 && limit - delta >= 32 && shared + 32 <= key_buf_cap(it))
		memcpy(kb + shared, delta, 32);
	else
		memcpy(kb + shared, delta, non_shared);
	it->key = kb;
	it->klen = klen;
	return true;
}

/* Decode the entry at it->next into key/val.  false at the end of the
 * entries or on corruption (status set). */
static bool parse_next(struct block_iter *it)
{
	it->current = it->next;
	if (it->current >= it->restarts) {
		mark_invalid(it);
		return false;
	}
	const uint8_t *limit = it->data + it->restarts;
	uint32_t shared, non_shared, value_len;
	const uint8_t *p = decode_entry(it->data + it->current, limit, &shared,
					&non_shared, &value_len);
	if (!p || shared > it->klen) {
		corrupt(it);
		return false;
	}
	if (shared == 0) {
		it->key = p; /* stored whole: no copy */
		it->klen = non_shared;
	} else if (!build_key(it, shared, p, non_shared, limit)) {
		return false;
	}
	it->val = p + non_shared;
	it->vlen = value_len;
	it->next = (uint32_t)(it->val + value_len - it->data);
	return true;
}

static void seek_to_restart(struct block_iter *it, uint32_t index)
{
	it->klen = 0;
	it->key = NULL;
	it->next = restart_point(it, index);
}

void block_iter_seek_first(struct block_iter *it)
{
	if (it->status || it->num_restarts == 0)
		return;
	seek_to_restart(it, 0);
	parse_next(it);
}

void block_iter_seek_last(struct block_iter *it)
{
	if (it->status || it->num_restarts == 0)
		return;
	seek_to_restart(it, it->num_restarts - 1);
	while (parse_next(it) && it->next < it->restarts)
		;
}

void block_iter_seek(struct block_iter *it, const uint8_t *target, size_t len)
{
	if (it->status || it->num_restarts == 0)
		return;
	/* The last restart point whose key is < target (or the first). */
	uint32_t left = 0, right = it->num_restarts - 1;
	const uint8_t *limit = it->data + it->restarts;
	while (left < right) {
		uint32_t mid = left + (right - left + 1) / 2;
		uint32_t shared, non_shared, value_len;
		const uint8_t *p = decode_entry(it->data + restart_point(it, mid),
						limit, &shared, &non_shared,
						&value_len);
		if (!p || shared != 0) {
			corrupt(it);
			return;
		}
		if (it->cmp(p, non_shared, target, len) < 0)
			left = mid;
		else
			right = mid - 1;
	}
	seek_to_restart(it, left);
	while (parse_next(it)) {
		if (it->cmp(it->key, it->klen, target, len) >= 0)
			return;
	}
}

void block_iter_next(struct block_iter *it)
{
	if (it->status || it->current >= it->restarts)
		return;
	parse_next(it);
}

void block_iter_prev(struct block_iter *it)
{
	if (it->status || it->current >= it->restarts)
		return;
	uint32_t original = it->current;
	/* The last restart point before the current entry (restart points
	 * rise: block_init): a binary search here rather than one kept up to
	 * date by every forward step, which are far more common. */
	if (restart_point(it, 0) >= original) {
		mark_invalid(it); /* before the first entry */
		return;
	}
	uint32_t left = 0, right = it->num_restarts - 1;
	while (left < right) {
		uint32_t mid = left + (right - left + 1) / 2;
		if (restart_point(it, mid) < original)
			left = mid;
		else
			right = mid - 1;
	}
	seek_to_restart(it, left);
	do {
		if (!parse_next(it))
			return;
	} while (it->next < original);
	/* A restart point in the middle of an entry ends the scan elsewhere. */
	if (it->next != original)
		corrupt(it);
}

/* ---- struct iter glue ---- */

static bool bi_valid(struct iter *it)
{
	return block_iter_valid((struct block_iter *)it);
}

static void bi_seek_first(struct iter *it)
{
	block_iter_seek_first((struct block_iter *)it);
}

static void bi_seek_last(struct iter *it)
{
	block_iter_seek_last((struct block_iter *)it);
}

static void bi_seek(struct iter *it, const uint8_t *t, size_t n)
{
	block_iter_seek((struct block_iter *)it, t, n);
}

static void bi_next(struct iter *it)
{
	block_iter_next((struct block_iter *)it);
}

static void bi_prev(struct iter *it)
{
	block_iter_prev((struct block_iter *)it);
}

static const uint8_t *bi_key(struct iter *it, size_t *n)
{
	struct block_iter *b = (struct block_iter *)it;
	*n = b->klen;
	return b->key;
}

static const uint8_t *bi_value(struct iter *it, size_t *n)
{
	struct block_iter *b = (struct block_iter *)it;
	*n = b->vlen;
	return b->val;
}

static int bi_status(struct iter *it)
{
	return ((struct block_iter *)it)->status;
}

static void bi_destroy(struct iter *it)
{
	block_iter_release((struct block_iter *)it);
	free(it);
}

static const struct iter_ops block_iter_ops = {
	.valid = bi_valid,
	.seek_first = bi_seek_first,
	.seek_last = bi_seek_last,
	.seek = bi_seek,
	.next = bi_next,
	.prev = bi_prev,
	.key = bi_key,
	.value = bi_value,
	.status = bi_status,
	.destroy = bi_destroy,
};

struct iter *block_iter_new(const struct block *b, key_cmp_fn cmp)
{
	struct block_iter *it = malloc(sizeof(*it));
	if (!it)
		return NULL;
	block_iter_init(it, cmp);
	block_iter_reset(it, b);
	return &it->base;
}
