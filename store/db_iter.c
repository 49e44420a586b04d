/*
 * db_iter: the user iterator.  It walks a merge of the memtables' and
 * tables' internal iterators and shows, for each user key, the newest entry
 * with sequence <= the iterator's sequence, hiding keys whose newest such
 * entry is a deletion, within [lower, upper).
 *
 * Invariant (LevelDB's DBIter): moving forward, the internal iterator sits
 * on the entry shown; moving backward, it sits just before every entry of
 * the key shown, whose key and value are then copied in saved_key and
 * saved_value.  Errors are sticky: the iterator becomes invalid and
 * store_iter_status() reports the first one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "dbformat.h"

enum direction { FORWARD, REVERSE };

struct store_iter {
	struct store *st;
	struct iter *in;
	uint64_t seq;
	enum direction dir;
	bool valid;
	int status;
	/* FORWARD and valid: the user key shown, in the internal iterator's
	 * memory (good until it moves), so that key() and next() need not
	 * ask the merge for it again. */
	const uint8_t *ukey;
	size_t ulen;
	struct buf saved_key;
	struct buf saved_value;
	struct buf lower, upper;
	bool has_lower, has_upper;
	struct buf scratch; /* seek targets */
	void (*cleanup)(struct store *, void *);
	void *cleanup_arg;
};

/* Make b a copy of [p, p + n); false when out of memory (b's error is
 * then sticky).  Called for every entry a scan steps past, so a key that
 * fits the buffer (every one after the first, mostly) is one memcpy. */
static inline bool set_buf(struct buf *b, const void *p, size_t n)
{
	if (n <= b->cap && !b->oom) {
		if (n)
			memcpy(b->data, p, n);
		b->len = n;
		return true;
	}
	buf_clear(b);
	buf_append(b, p, n);
	return buf_ok(b) == 0;
}

/* Out of memory: the iterator stops with -ENOMEM. */
static void fail_nomem(struct store_iter *it)
{
	it->status = -ENOMEM;
	it->valid = false;
}

/* Parse the internal iterator's key; on corruption stop with -EUCLEAN. */
static bool parse_current(struct store_iter *it, struct parsed_ikey *p)
{
	size_t n;
	const uint8_t *k = iter_key(it->in, &n);
	if (ikey_parse(k, n, p)) {
		it->status = -EUCLEAN;
		it->valid = false;
		return false;
	}
	return true;
}

static bool above_upper(struct store_iter *it, const uint8_t *k, size_t n)
{
	return it->has_upper &&
	       ukey_compare(k, n, it->upper.data, it->upper.len) >= 0;
}

static bool below_lower(struct store_iter *it, const uint8_t *k, size_t n)
{
	return it->has_lower &&
	       ukey_compare(k, n, it->lower.data, it->lower.len) < 0;
}

static void check_status(struct store_iter *it)
{
	int s = iter_status(it->in);
	if (s && !it->status)
		it->status = s;
	if (it->status)
		it->valid = false;
}

static void find_next_user_entry(struct store_iter *it, bool skipping)
{
	/* it->saved_key holds the key to skip past when skipping. */
	while (iter_valid(it->in)) {
		struct parsed_ikey p;
		if (!parse_current(it, &p))
			return;
		if (p.seq <= it->seq) {
			if (p.type == KTYPE_DELETE) {
				/* The key to skip past: without it the older
				 * entries of a deleted key would show. */
				if (!set_buf(&it->saved_key, p.ukey, p.ulen)) {
					fail_nomem(it);
					return;
				}
				skipping = true;
			} else if (skipping &&
				   ukey_compare(p.ukey, p.ulen, it->saved_key.data,
						it->saved_key.len) <= 0) {
				/* hidden by a newer entry */
			} else {
				if (above_upper(it, p.ukey, p.ulen))
					break;
				it->valid = true;
				it->ukey = p.ukey;
				it->ulen = p.ulen;
				buf_clear(&it->saved_key);
				return;
			}
		}
		iter_next(it->in);
	}
	it->valid = false;
	buf_clear(&it->saved_key);
	check_status(it);
}

static void find_prev_user_entry(struct store_iter *it)
{
	int value_type = KTYPE_DELETE;
	while (iter_valid(it->in)) {
		struct parsed_ikey p;
		if (!parse_current(it, &p))
			return;
		if (p.seq <= it->seq) {
			if (value_type != KTYPE_DELETE &&
			    ukey_compare(p.ukey, p.ulen, it->saved_key.data,
					 it->saved_key.len) < 0)
				break; /* saved_key's newest visible entry found */
			value_type = p.type;
			if (p.type == KTYPE_DELETE) {
				buf_clear(&it->saved_key);
				buf_clear(&it->saved_value);
			} else {
				size_t vn;
				const uint8_t *v = iter_value(it->in, &vn);
				/* Checked once the scan ends (buf_ok below). */
				(void)set_buf(&it->saved_key, p.ukey, p.ulen);
				(void)set_buf(&it->saved_value, v, vn);
			}
		}
		iter_prev(it->in);
	}
	check_status(it);
	if (it->status)
		return;
	if (buf_ok(&it->saved_key) || buf_ok(&it->saved_value)) {
		it->status = -ENOMEM;
		it->valid = false;
		return;
	}
	if (value_type == KTYPE_DELETE ||
	    below_lower(it, it->saved_key.data, it->saved_key.len)) {
		it->valid = false;
		buf_clear(&it->saved_key);
		buf_clear(&it->saved_value);
		it->dir = FORWARD;
	} else {
		it->valid = true;
	}
}

static void seek_internal(struct store_iter *it, const void *ukey, size_t n,
			  uint64_t seq, int type)
{
	buf_clear(&it->scratch);
	ikey_append(&it->scratch, ukey, n, seq, type);
	if (buf_ok(&it->scratch)) {
		it->status = -ENOMEM;
		it->valid = false;
		return;
	}
	iter_seek(it->in, it->scratch.data, it->scratch.len);
}

void store_iter_seek(struct store_iter *it, const void *key, size_t klen)
{
	if (it->status)
		return;
	it->dir = FORWARD;
	buf_clear(&it->saved_value);
	buf_clear(&it->saved_key);
	if (below_lower(it, key, klen)) {
		key = it->lower.data;
		klen = it->lower.len;
	}
	seek_internal(it, key, klen, it->seq, KTYPE_SEEK);
	if (it->status)
		return;
	find_next_user_entry(it, false);
}

void store_iter_seek_first(struct store_iter *it)
{
	if (it->has_lower) {
		store_iter_seek(it, it->lower.data, it->lower.len);
		return;
	}
	if (it->status)
		return;
	it->dir = FORWARD;
	buf_clear(&it->saved_value);
	buf_clear(&it->saved_key);
	iter_seek_first(it->in);
	find_next_user_entry(it, false);
}

/* Position the internal iterator on the last entry with user key < ukey
 * (strictly_before) or <= ukey, then find the user entry backward. */
static void seek_before(struct store_iter *it, const void *ukey, size_t n,
			bool strictly_before)
{
	it->dir = REVERSE;
	buf_clear(&it->saved_value);
	buf_clear(&it->saved_key);
	/* (k, SEQ_MAX) is the first entry of k; (k, 0, DELETE) its last. */
	if (strictly_before)
		seek_internal(it, ukey, n, SEQ_MAX, KTYPE_SEEK);
	else
		seek_internal(it, ukey, n, 0, KTYPE_DELETE);
	if (it->status)
		return;
	if (iter_valid(it->in)) {
		struct parsed_ikey p;
		if (!parse_current(it, &p))
			return;
		/* In the <= case an entry (k, 0, DELETE) found is k's last
		 * entry: start from it. */
		if (strictly_before ||
		    ukey_compare(p.ukey, p.ulen, ukey, n) != 0)
			iter_prev(it->in);
	} else {
		iter_seek_last(it->in);
	}
	find_prev_user_entry(it);
}

void store_iter_seek_last(struct store_iter *it)
{
	if (it->status)
		return;
	if (it->has_upper) {
		seek_before(it, it->upper.data, it->upper.len, true);
		return;
	}
	it->dir = REVERSE;
	buf_clear(&it->saved_value);
	buf_clear(&it->saved_key);
	iter_seek_last(it->in);
	find_prev_user_entry(it);
}

void store_iter_seek_for_prev(struct store_iter *it, const void *key, size_t klen)
{
	if (it->status)
		return;
	if (it->has_upper &&
	    ukey_compare(key, klen, it->upper.data, it->upper.len) >= 0) {
		seek_before(it, it->upper.data, it->upper.len, true);
		return;
	}
	seek_before(it, key, klen, false);
}

bool store_iter_valid(const struct store_iter *it)
{
	return it->valid;
}

void store_iter_next(struct store_iter *it)
{
	if (!it->valid)
		return;
	if (it->dir == REVERSE) {
		it->dir = FORWARD;
		/* The internal iterator is just before the entries of the key
		 * shown; step into them and skip past them below. */
		if (!iter_valid(it->in))
			iter_seek_first(it->in);
		else
			iter_next(it->in);
		if (!iter_valid(it->in)) {
			it->valid = false;
			buf_clear(&it->saved_key);
			check_status(it);
			return;
		}
	} else {
		if (!set_buf(&it->saved_key, it->ukey, it->ulen)) {
			fail_nomem(it);
			return;
		}
		iter_next(it->in);
		if (!iter_valid(it->in)) {
			it->valid = false;
			buf_clear(&it->saved_key);
			check_status(it);
			return;
		}
	}
	find_next_user_entry(it, true);
}

void store_iter_prev(struct store_iter *it)
{
	if (!it->valid)
		return;
	if (it->dir == FORWARD) {
		if (!set_buf(&it->saved_key, it->ukey, it->ulen)) {
			fail_nomem(it);
			return;
		}
		for (;;) {
			iter_prev(it->in);
			if (!iter_valid(it->in)) {
				it->valid = false;
				buf_clear(&it->saved_key);
				buf_clear(&it->saved_value);
				check_status(it);
				return;
			}
			struct parsed_ikey p;
			if (!parse_current(it, &p))
				return;
			if (ukey_compare(p.ukey, p.ulen, it->saved_key.data,
					 it->saved_key.len) < 0)
				break;
		}
		it->dir = REVERSE;
	}
	find_prev_user_entry(it);
}

const void *store_iter_key(const struct store_iter *it, size_t *len)
{
	if (it->dir == REVERSE) {
		*len = it->saved_key.len;
		return it->saved_key.data;
	}
	*len = it->ulen;
	return it->ukey;
}

const void *store_iter_value(const struct store_iter *it, size_t *len)
{
	if (it->dir == REVERSE) {
		*len = it->saved_value.len;
		return it->saved_value.data;
	}
	return iter_value(it->in, len);
}

int store_iter_status(const struct store_iter *it)
{
	if (it->status)
		return it->status;
	return iter_status(it->in);
}

void store_iter_free(struct store_iter *it)
{
	if (!it)
		return;
	iter_destroy(it->in);
	if (it->cleanup)
		it->cleanup(it->st, it->cleanup_arg);
	buf_free(&it->saved_key);
	buf_free(&it->saved_value);
	buf_free(&it->lower);
	buf_free(&it->upper);
	buf_free(&it->scratch);
	free(it);
}

struct store_iter *db_iter_new(struct store *st, struct iter *internal,
			       uint64_t seq, const struct store_iter_options *o,
			       void (*cleanup)(struct store *, void *),
			       void *cleanup_arg)
{
	struct store_iter *it = calloc(1, sizeof(*it));
	if (!it) {
		iter_destroy(internal);
		cleanup(st, cleanup_arg);
		return NULL;
	}
	it->st = st;
	it->in = internal;
	it->seq = seq;
	it->cleanup = cleanup;
	it->cleanup_arg = cleanup_arg;
	buf_init(&it->saved_key);
	buf_init(&it->saved_value);
	buf_init(&it->lower);
	buf_init(&it->upper);
	buf_init(&it->scratch);
	if (o && o->lower) {
		it->has_lower = true;
		(void)set_buf(&it->lower, o->lower, o->lower_len); /* checked below */
	}
	if (o && o->upper) {
		it->has_upper = true;
		(void)set_buf(&it->upper, o->upper, o->upper_len); /* checked below */
	}
	if (buf_ok(&it->lower) || buf_ok(&it->upper)) {
		store_iter_free(it);
		return NULL;
	}
	return it;
}
