/*
 * iter: the internal iterator interface shared by memtables, blocks,
 * tables, levels and merges (LevelDB's Iterator).  Keys are internal keys
 * (dbformat.h) except inside blocks that index by something else.
 *
 * Contract: seek(t) positions at the first entry >= t; seek_for_prev is not
 * needed internally (the user iterator builds it from seek + prev).  key()
 * and value() require valid() and stay good until the iterator moves.
 * status() is sticky: once an error is met the iterator becomes invalid and
 * keeps reporting it.  destroy() frees the iterator.
 */
#ifndef LSMFS_STORE_ITER_H
#define LSMFS_STORE_ITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct iter;

struct iter_ops {
	bool (*valid)(struct iter *it);
	void (*seek_first)(struct iter *it);
	void (*seek_last)(struct iter *it);
	void (*seek)(struct iter *it, const uint8_t *target, size_t len);
	void (*next)(struct iter *it);
	void (*prev)(struct iter *it);
	const uint8_t *(*key)(struct iter *it, size_t *len);
	const uint8_t *(*value)(struct iter *it, size_t *len);
	int (*status)(struct iter *it);
	void (*destroy)(struct iter *it);
};

/* Embed as the first member of every iterator implementation. */
struct iter {
	const struct iter_ops *ops;
};

static inline bool iter_valid(struct iter *it) { return it->ops->valid(it); }
static inline void iter_seek_first(struct iter *it) { it->ops->seek_first(it); }
static inline void iter_seek_last(struct iter *it) { it->ops->seek_last(it); }
static inline void iter_seek(struct iter *it, const uint8_t *t, size_t n) { it->ops->seek(it, t, n); }
static inline void iter_next(struct iter *it) { it->ops->next(it); }
static inline void iter_prev(struct iter *it) { it->ops->prev(it); }
static inline const uint8_t *iter_key(struct iter *it, size_t *n) { return it->ops->key(it, n); }
static inline const uint8_t *iter_value(struct iter *it, size_t *n) { return it->ops->value(it, n); }
static inline int iter_status(struct iter *it) { return it->ops->status(it); }
static inline void iter_destroy(struct iter *it) { if (it) it->ops->destroy(it); }

/* An iterator that is empty and reports err (0 for plain empty). */
struct iter *iter_new_error(int err);

/* Key order used by a block or a merge. */
typedef int (*key_cmp_fn)(const uint8_t *a, size_t alen, const uint8_t *b,
			  size_t blen);

/*
 * Two numbers made from a key's first bytes whose order (w[0], then w[1])
 * agrees with a key order: prefix(a) < prefix(b) implies cmp(a, b) < 0
 * (equal prefixes tell nothing).  They let a merge settle most
 * comparisons with one or two integer comparisons instead of a call to
 * cmp.  Two, because the filesystem's keys share their first 8 bytes
 * within a directory (type byte and parent inode: fs/SCHEMA.md).
 */
struct key_prefix {
	uint64_t w[2];
};
typedef struct key_prefix (*key_prefix_fn)(const uint8_t *key, size_t len);

/*
 * Merge n child iterators (ownership passes to the merge) ordered by cmp
 * into one.  prefix (NULL: none) must agree with cmp, as above.  Supports
 * both directions, like LevelDB's MergingIterator.
 */
struct iter *merge_iter_new(key_cmp_fn cmp, key_prefix_fn prefix,
			    struct iter **children, size_t n);

#endif
