/*
 * memtable: the in-memory sorted buffer of recent writes, a skiplist of
 * internal keys allocated from an arena (memory is freed all at once when
 * the last reference goes).  Entry encoding in the arena:
 *   varint32 ikey_len | ikey (user key + tag) | varint32 val_len | value
 *
 * Concurrency: one writer at a time (the caller serializes adds), any number
 * of concurrent readers and iterators without locks (nodes are published
 * with release stores, read with acquire loads).  Reference counted.
 */
#ifndef LSMFS_STORE_MEMTABLE_H
#define LSMFS_STORE_MEMTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "iter.h"

struct memtable;

/* NULL on allocation failure.  Starts with one reference. */
struct memtable *memtable_new(void);
void memtable_ref(struct memtable *m);
void memtable_unref(struct memtable *m);

/* Insert (key, seq, type) -> val.  (key, seq) must be new.  0 or -ENOMEM. */
int memtable_add(struct memtable *m, uint64_t seq, int type, const void *key,
		 size_t klen, const void *val, size_t vlen);

enum memtable_lookup {
	MEMTABLE_MISSING = 0, /* no entry of key with sequence <= seq */
	MEMTABLE_FOUND = 1,   /* newest such entry is a value: *val, *vlen */
	MEMTABLE_DELETED = 2, /* newest such entry is a deletion */
};
/* *val points into the memtable: valid while the caller holds a reference. */
enum memtable_lookup memtable_get(struct memtable *m, const void *key,
				  size_t klen, uint64_t seq,
				  const uint8_t **val, size_t *vlen);

/* Bytes allocated (arena), for the write-buffer trigger. */
size_t memtable_memory_usage(const struct memtable *m);
uint64_t memtable_count(const struct memtable *m);

/* Iterator over internal keys; holds a reference on m until destroyed. */
struct iter *memtable_iter_new(struct memtable *m);

#endif
