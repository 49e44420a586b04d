/*
 * merge_iter: n sorted child iterators seen as one (LevelDB's
 * MergingIterator).  Used for reads (memtables + one iterator per level-0
 * table + one per deeper level) and for compaction inputs.
 *
 * Invariant: moving forward, every child is positioned at its first entry
 * >= key() and current is the child with the smallest key; moving
 * backward, every child is at its last entry <= key() and current has the
 * largest.  Changing direction repositions every other child around key()
 * first.  Equal keys across children (not expected for internal keys) come
 * out child by child in index order going forward.
 *
 * Each child's validity and key are kept beside it (LevelDB's
 * IteratorWrapper) and refreshed only when that child moves, so choosing
 * the next entry compares cached keys with no call into the children.
 * Going forward the merge also keeps the runner-up, the smallest of the
 * other children: they do not move while current does, so a next() that
 * leaves current still below the runner-up costs one comparison.  In a
 * leveled tree long runs of keys come from one child (after a compaction,
 * most from the last level), so most steps are that one comparison.
 * With the key order's prefix (iter.h key_prefix_fn) beside each cached
 * key, most comparisons are of two integers: with random keys spread
 * over 8 children, about 6 per step, each had been a call to the
 * comparator and to memcmp.
 *
 * Errors: a child that reports a status makes the merge invalid with that
 * status, for good (the first error met wins), so a reader or a compaction
 * never runs on with a child's data silently missing.  A child's status
 * can only change when it moves, and every move refreshes it.  n is small
 * (<= ~12), so children are scanned linearly rather than kept in a heap.
 * No locking: an iterator belongs to one thread.
 */
#include <stdlib.h>

#include "iter.h"

enum direction { FORWARD, REVERSE };

struct child {
	struct iter *it;
	const uint8_t *key; /* when valid */
	size_t klen;
	struct key_prefix prefix; /* when valid: the merge's prefix of key, or 0s */
	bool valid;
};

struct merge_iter {
	struct iter base;
	key_cmp_fn cmp;
	key_prefix_fn prefix; /* NULL: none */
	struct child *kids;
	size_t n;
	struct child *current; /* NULL: not valid */
	struct child *second;  /* FORWARD: smallest other valid child, or NULL */
	enum direction dir;
	int err;
};

static struct merge_iter *mi(struct iter *it)
{
	return (struct merge_iter *)it;
}

/* Read c's position after it moved, its key's prefix too when
 * with_prefix; record its error, if any. */
static inline void refresh_key(struct merge_iter *m, struct child *c,
			       bool with_prefix)
{
	c->valid = iter_valid(c->it);
	if (c->valid) {
		c->key = iter_key(c->it, &c->klen);
		if (with_prefix && m->prefix)
			c->prefix = m->prefix(c->key, c->klen);
	} else if (!m->err) {
		m->err = iter_status(c->it);
	}
}

static void refresh(struct merge_iter *m, struct child *c)
{
	refresh_key(m, c, true);
}

static void refresh_all(struct merge_iter *m)
{
	for (size_t i = 0; i < m->n; i++)
		refresh(m, &m->kids[i]);
}

/* The order of two valid children's keys: the prefixes first, which
 * settle most comparisons without a call. */
static inline int order(const struct merge_iter *m, const struct child *a,
			const struct child *b)
{
	if (a->prefix.w[0] != b->prefix.w[0])
		return a->prefix.w[0] < b->prefix.w[0] ? -1 : 1;
	if (a->prefix.w[1] != b->prefix.w[1])
		return a->prefix.w[1] < b->prefix.w[1] ? -1 : 1;
	return m->cmp(a->key, a->klen, b->key, b->klen);
}

/* Forward order: smaller key first, equal keys in child order. */
static bool before(struct merge_iter *m, const struct child *a,
		   const struct child *b)
{
	int c = order(m, a, b);
	return c < 0 || (c == 0 && a < b);
}

/* The smallest valid child other than skip, or NULL. */
static struct child *smallest_but(struct merge_iter *m, const struct child *skip)
{
	struct child *best = NULL;
	for (size_t i = 0; i < m->n; i++) {
		struct child *c = &m->kids[i];
		if (c != skip && c->valid && (!best || before(m, c, best)))
			best = c;
	}
	return best;
}

static void find_smallest(struct merge_iter *m)
{
	m->second = NULL;
	if (m->err) {
		m->current = NULL;
		return;
	}
	m->current = smallest_but(m, NULL);
	if (m->current)
		m->second = smallest_but(m, m->current);
}

static void find_largest(struct merge_iter *m)
{
	struct child *best = NULL;
	m->second = NULL;
	if (m->err) {
		m->current = NULL;
		return;
	}
	/* Scan backwards so that, among equal keys, the reverse order is the
	 * mirror of the forward one. */
	for (size_t i = m->n; i-- > 0;) {
		struct child *c = &m->kids[i];
		if (c->valid && (!best || order(m, c, best) > 0))
			best = c;
	}
	m->current = best;
}

static bool m_valid(struct iter *it)
{
	return mi(it)->current != NULL;
}

static void m_seek_first(struct iter *it)
{
	struct merge_iter *m = mi(it);
	if (m->err)
		return;
	for (size_t i = 0; i < m->n; i++)
		iter_seek_first(m->kids[i].it);
	refresh_all(m);
	m->dir = FORWARD;
	find_smallest(m);
}

static void m_seek_last(struct iter *it)
{
	struct merge_iter *m = mi(it);
	if (m->err)
		return;
	for (size_t i = 0; i < m->n; i++)
		iter_seek_last(m->kids[i].it);
	refresh_all(m);
	m->dir = REVERSE;
	find_largest(m);
}

static void m_seek(struct iter *it, const uint8_t *t, size_t len)
{
	struct merge_iter *m = mi(it);
	if (m->err)
		return;
	for (size_t i = 0; i < m->n; i++)
		iter_seek(m->kids[i].it, t, len);
	refresh_all(m);
	m->dir = FORWARD;
	find_smallest(m);
}

static void m_next(struct iter *it)
{
	struct merge_iter *m = mi(it);
	struct child *cur = m->current;
	if (!cur)
		return;
	if (m->dir != FORWARD) {
		/* Put every other child just past key(): its first entry
		 * > key() (the current child already is at key()). */
		for (size_t i = 0; i < m->n; i++) {
			struct child *c = &m->kids[i];
			if (c == cur)
				continue;
			iter_seek(c->it, cur->key, cur->klen);
			refresh(m, c);
			if (c->valid && order(m, c, cur) == 0) {
				iter_next(c->it);
				refresh(m, c);
			}
		}
		m->dir = FORWARD;
		iter_next(cur->it);
		refresh(m, cur);
		find_smallest(m);
		return;
	}
	struct child *second = m->second;
	iter_next(cur->it);
	/* With no runner-up (the others are all exhausted) cur's key is
	 * compared with nothing until a seek or a change of direction, and
	 * each of those refreshes cur before comparing: its prefix is not
	 * worth making (a scan of a compacted tree, one child, is this). */
	refresh_key(m, cur, second != NULL);
	if (m->err) {
		m->current = m->second = NULL;
		return;
	}
	if (!second) {
		/* cur is the only child left, if it is still valid. */
		if (!cur->valid)
			m->current = NULL;
		return;
	}
	if (cur->valid && before(m, cur, second))
		return;
	/* The runner-up takes over; the others did not move. */
	m->current = second;
	m->second = smallest_but(m, second);
}

static void m_prev(struct iter *it)
{
	struct merge_iter *m = mi(it);
	struct child *cur = m->current;
	if (!cur)
		return;
	if (m->dir != REVERSE) {
		/* Put every other child at its last entry < key(). */
		for (size_t i = 0; i < m->n; i++) {
			struct child *c = &m->kids[i];
			if (c == cur)
				continue;
			iter_seek(c->it, cur->key, cur->klen);
			if (iter_valid(c->it))
				iter_prev(c->it); /* first entry >= key: step before */
			else if (iter_status(c->it) == 0)
				iter_seek_last(c->it); /* all its entries are < key */
			refresh(m, c);
		}
		m->dir = REVERSE;
	}
	iter_prev(cur->it);
	refresh(m, cur);
	find_largest(m);
}

static const uint8_t *m_key(struct iter *it, size_t *len)
{
	struct child *c = mi(it)->current;
	*len = c->klen;
	return c->key;
}

static const uint8_t *m_value(struct iter *it, size_t *len)
{
	return iter_value(mi(it)->current->it, len);
}

static int m_status(struct iter *it)
{
	struct merge_iter *m = mi(it);
	if (m->err)
		return m->err;
	for (size_t i = 0; i < m->n; i++) {
		int s = iter_status(m->kids[i].it);
		if (s)
			return s;
	}
	return 0;
}

static void m_destroy(struct iter *it)
{
	struct merge_iter *m = mi(it);
	for (size_t i = 0; i < m->n; i++)
		iter_destroy(m->kids[i].it);
	free(m->kids);
	free(m);
}

static const struct iter_ops merge_iter_ops = {
	.valid = m_valid,
	.seek_first = m_seek_first,
	.seek_last = m_seek_last,
	.seek = m_seek,
	.next = m_next,
	.prev = m_prev,
	.key = m_key,
	.value = m_value,
	.status = m_status,
	.destroy = m_destroy,
};

/* On failure (NULL) the children have been destroyed: ownership passed. */
struct iter *merge_iter_new(key_cmp_fn cmp, key_prefix_fn prefix,
			    struct iter **children, size_t n)
{
	if (n == 1)
		return children[0];
	struct merge_iter *m = NULL;
	if (n == 0) {
		struct iter *e = iter_new_error(0);
		return e;
	}
	m = calloc(1, sizeof(*m));
	struct child *kids = m ? calloc(n, sizeof(*kids)) : NULL;
	if (!kids) {
		free(m);
		for (size_t i = 0; i < n; i++)
			iter_destroy(children[i]);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		kids[i].it = children[i];
	m->base.ops = &merge_iter_ops;
	m->cmp = cmp;
	m->prefix = prefix;
	m->kids = kids;
	m->n = n;
	m->dir = FORWARD;
	return &m->base;
}
