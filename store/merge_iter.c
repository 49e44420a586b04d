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
 * Errors: a child that reports a status makes the merge invalid with that
 * status, for good (the first error met wins), so a reader or a compaction
 * never runs on with a child's data silently missing.  n is small (<= ~12),
 * so children are scanned linearly rather than kept in a heap.
 * No locking: an iterator belongs to one thread.
 */
#include <stdlib.h>

#include "iter.h"

enum direction { FORWARD, REVERSE };

struct merge_iter {
	struct iter base;
	key_cmp_fn cmp;
	struct iter **children;
	size_t n;
	struct iter *current;
	enum direction dir;
	int err;
};

static struct merge_iter *mi(struct iter *it)
{
	return (struct merge_iter *)it;
}

/* Record the first child error; true if the merge has failed. */
static bool check_children(struct merge_iter *m)
{
	for (size_t i = 0; i < m->n && !m->err; i++)
		if (!iter_valid(m->children[i]))
			m->err = iter_status(m->children[i]);
	if (m->err)
		m->current = NULL;
	return m->err != 0;
}

static void find_smallest(struct merge_iter *m)
{
	struct iter *best = NULL;
	const uint8_t *bk = NULL;
	size_t bl = 0;
	if (check_children(m))
		return;
	for (size_t i = 0; i < m->n; i++) {
		struct iter *c = m->children[i];
		if (!iter_valid(c))
			continue;
		size_t kl;
		const uint8_t *k = iter_key(c, &kl);
		if (!best || m->cmp(k, kl, bk, bl) < 0) {
			best = c;
			bk = k;
			bl = kl;
		}
	}
	m->current = best;
}

static void find_largest(struct merge_iter *m)
{
	struct iter *best = NULL;
	const uint8_t *bk = NULL;
	size_t bl = 0;
	if (check_children(m))
		return;
	/* Scan backwards so that, among equal keys, the reverse order is the
	 * mirror of the forward one. */
	for (size_t i = m->n; i-- > 0;) {
		struct iter *c = m->children[i];
		if (!iter_valid(c))
			continue;
		size_t kl;
		const uint8_t *k = iter_key(c, &kl);
		if (!best || m->cmp(k, kl, bk, bl) > 0) {
			best = c;
			bk = k;
			bl = kl;
		}
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
		iter_seek_first(m->children[i]);
	m->dir = FORWARD;
	find_smallest(m);
}

static void m_seek_last(struct iter *it)
{
	struct merge_iter *m = mi(it);
	if (m->err)
		return;
	for (size_t i = 0; i < m->n; i++)
		iter_seek_last(m->children[i]);
	m->dir = REVERSE;
	find_largest(m);
}

static void m_seek(struct iter *it, const uint8_t *t, size_t len)
{
	struct merge_iter *m = mi(it);
	if (m->err)
		return;
	for (size_t i = 0; i < m->n; i++)
		iter_seek(m->children[i], t, len);
	m->dir = FORWARD;
	find_smallest(m);
}

static void m_next(struct iter *it)
{
	struct merge_iter *m = mi(it);
	if (!m->current)
		return;
	if (m->dir != FORWARD) {
		/* Put every other child just past key(): its first entry
		 * > key() (the current child already is at key()). */
		size_t kl;
		const uint8_t *k = iter_key(m->current, &kl);
		for (size_t i = 0; i < m->n; i++) {
			struct iter *c = m->children[i];
			if (c == m->current)
				continue;
			iter_seek(c, k, kl);
			if (iter_valid(c)) {
				size_t cl;
				const uint8_t *ck = iter_key(c, &cl);
				if (m->cmp(ck, cl, k, kl) == 0)
					iter_next(c);
			}
		}
		m->dir = FORWARD;
	}
	iter_next(m->current);
	find_smallest(m);
}

static void m_prev(struct iter *it)
{
	struct merge_iter *m = mi(it);
	if (!m->current)
		return;
	if (m->dir != REVERSE) {
		/* Put every other child at its last entry < key(). */
		size_t kl;
		const uint8_t *k = iter_key(m->current, &kl);
		for (size_t i = 0; i < m->n; i++) {
			struct iter *c = m->children[i];
			if (c == m->current)
				continue;
			iter_seek(c, k, kl);
			if (iter_valid(c))
				iter_prev(c); /* first entry >= key: step before */
			else if (iter_status(c) == 0)
				iter_seek_last(c); /* all its entries are < key */
		}
		m->dir = REVERSE;
	}
	iter_prev(m->current);
	find_largest(m);
}

static const uint8_t *m_key(struct iter *it, size_t *len)
{
	return iter_key(mi(it)->current, len);
}

static const uint8_t *m_value(struct iter *it, size_t *len)
{
	return iter_value(mi(it)->current, len);
}

static int m_status(struct iter *it)
{
	struct merge_iter *m = mi(it);
	if (m->err)
		return m->err;
	for (size_t i = 0; i < m->n; i++) {
		int s = iter_status(m->children[i]);
		if (s)
			return s;
	}
	return 0;
}

static void m_destroy(struct iter *it)
{
	struct merge_iter *m = mi(it);
	for (size_t i = 0; i < m->n; i++)
		iter_destroy(m->children[i]);
	free(m->children);
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
struct iter *merge_iter_new(key_cmp_fn cmp, struct iter **children, size_t n)
{
	if (n == 1)
		return children[0];
	struct merge_iter *m = NULL;
	if (n == 0) {
		struct iter *e = iter_new_error(0);
		return e;
	}
	m = calloc(1, sizeof(*m));
	struct iter **kids = m ? malloc(n * sizeof(*kids)) : NULL;
	if (!kids) {
		free(m);
		for (size_t i = 0; i < n; i++)
			iter_destroy(children[i]);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		kids[i] = children[i];
	m->base.ops = &merge_iter_ops;
	m->cmp = cmp;
	m->children = kids;
	m->n = n;
	m->dir = FORWARD;
	return &m->base;
}
