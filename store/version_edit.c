/*
 * version_edit: one step from a version to the next (files added and
 * deleted per level, counters, compaction pointers) and its encoding as a
 * MANIFEST record.  FORMAT.md "MANIFEST".
 *
 * A record is a sequence of tagged fields, each a varint32 tag then its
 * payload:
 *
 *   1 log_number       varint64
 *   2 next_file        varint64
 *   3 last_sequence    varint64
 *   4 compact_pointer  varint32 level, lenbytes internal key
 *   5 deleted_file     varint32 level, varint64 number
 *   6 new_file         varint32 level, varint64 number, varint64 size,
 *                      lenbytes smallest, lenbytes largest (internal keys)
 *   7 write_totals     varint64 user, log, flush, compaction, manifest
 *                      bytes written over the store's life so far
 *
 * The decoder checks every length against the record's end, every level
 * against NUM_LEVELS, and every key for a whole tag; anything else is
 * -EUCLEAN.
 *
 * Allocation failure in the void setters: the edit is "poisoned" (the
 * array that failed to grow is replaced by a sentinel and its count set to
 * 0); version_edit_encode() then marks its output buffer out of memory and
 * version_set_log_and_apply() refuses the edit with -ENOMEM, so an edit
 * missing a deletion can never reach the MANIFEST.  No locking: an edit
 * belongs to one thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbformat.h"
#include "version.h"
#include "version_int.h"

enum {
	TAG_LOG_NUMBER = 1,
	TAG_NEXT_FILE = 2,
	TAG_LAST_SEQUENCE = 3,
	TAG_COMPACT_POINTER = 4,
	TAG_DELETED_FILE = 5,
	TAG_NEW_FILE = 6,
	TAG_WRITE_TOTALS = 7,
};

/* Tag 7 holds the five TOTAL counters of store.h's STORE_COUNTERS, in their
 * order: another one there is a change of format (FORMAT.md). */
_Static_assert(sizeof(struct store_totals) == 5 * sizeof(uint64_t),
	       "struct store_totals is not the five totals of tag 7");

/* The sentinel a poisoned array points at; never written through. */
static const char edit_poison;
#define POISON ((void *)&edit_poison)

bool version_edit_poisoned(const struct version_edit *e)
{
	if ((const void *)e->compact_pointers == POISON ||
	    (const void *)e->deleted == POISON ||
	    (const void *)e->added == POISON)
		return true;
	for (size_t i = 0; i < e->ncompact_pointers; i++)
		if (e->compact_pointers[i].key.oom)
			return true;
	return false;
}

/*
 * Make room for one more element in an array whose capacity is implied by
 * its count (the next power of two), so the edit needs no capacity fields.
 * Returns the (possibly moved) array or NULL.
 */
static void *grow(void *arr, size_t n, size_t elem)
{
	if (arr == POISON)
		return NULL;
	if (n && (n & (n - 1)) != 0)
		return arr; /* not a power of two: room is left */
	size_t cap = n ? 2 * n : 4;
	if (n && n < 4)
		return arr; /* 1..3 fit in the first allocation of 4 */
	return realloc(arr, cap * elem);
}

void version_edit_init(struct version_edit *e)
{
	memset(e, 0, sizeof(*e));
}

struct file_meta *file_meta_new(uint64_t number, uint64_t size,
				const uint8_t *smallest, size_t slen,
				const uint8_t *largest, size_t llen)
{
	struct file_meta *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->number = number;
	f->size = size;
	buf_init(&f->smallest);
	buf_init(&f->largest);
	buf_append(&f->smallest, smallest, slen);
	buf_append(&f->largest, largest, llen);
	if (buf_ok(&f->smallest) || buf_ok(&f->largest)) {
		file_meta_free(f);
		return NULL;
	}
	return f;
}

void file_meta_free(struct file_meta *f)
{
	if (!f)
		return;
	buf_free(&f->smallest);
	buf_free(&f->largest);
	free(f);
}

void version_edit_free(struct version_edit *e)
{
	if ((void *)e->compact_pointers != POISON) {
		for (size_t i = 0; i < e->ncompact_pointers; i++)
			buf_free(&e->compact_pointers[i].key);
		free(e->compact_pointers);
	}
	if ((void *)e->deleted != POISON)
		free(e->deleted);
	if ((void *)e->added != POISON) {
		for (size_t i = 0; i < e->nadded; i++)
			file_meta_free(e->added[i].meta);
		free(e->added);
	}
	version_edit_init(e);
}

void version_edit_set_log_number(struct version_edit *e, uint64_t n)
{
	e->has_log_number = true;
	e->log_number = n;
}

void version_edit_set_next_file(struct version_edit *e, uint64_t n)
{
	e->has_next_file = true;
	e->next_file_number = n;
}

void version_edit_set_last_sequence(struct version_edit *e, uint64_t s)
{
	e->has_last_sequence = true;
	e->last_sequence = s;
}

void version_edit_set_compact_pointer(struct version_edit *e, int level,
				      const uint8_t *ikey, size_t len)
{
	void *p = grow(e->compact_pointers, e->ncompact_pointers,
		       sizeof(*e->compact_pointers));
	if (!p) {
		if ((void *)e->compact_pointers != POISON) {
			for (size_t i = 0; i < e->ncompact_pointers; i++)
				buf_free(&e->compact_pointers[i].key);
			free(e->compact_pointers);
		}
		e->compact_pointers = POISON;
		e->ncompact_pointers = 0;
		return;
	}
	e->compact_pointers = p;
	size_t i = e->ncompact_pointers++;
	e->compact_pointers[i].level = level;
	buf_init(&e->compact_pointers[i].key);
	/* A failed copy leaves key.oom set, which poisons the edit. */
	buf_append(&e->compact_pointers[i].key, ikey, len);
}

void version_edit_delete_file(struct version_edit *e, int level,
			      uint64_t number)
{
	void *p = grow(e->deleted, e->ndeleted, sizeof(*e->deleted));
	if (!p) {
		if ((void *)e->deleted != POISON)
			free(e->deleted);
		e->deleted = POISON;
		e->ndeleted = 0;
		return;
	}
	e->deleted = p;
	e->deleted[e->ndeleted].level = level;
	e->deleted[e->ndeleted].number = number;
	e->ndeleted++;
}

/* Takes ownership of f (freed on failure). */
static int add_meta(struct version_edit *e, int level, struct file_meta *f)
{
	if ((void *)e->added == POISON) {
		file_meta_free(f);
		return -ENOMEM;
	}
	void *p = grow(e->added, e->nadded, sizeof(*e->added));
	if (!p) {
		file_meta_free(f);
		return -ENOMEM;
	}
	e->added = p;
	e->added[e->nadded].level = level;
	e->added[e->nadded].meta = f;
	e->nadded++;
	return 0;
}

int version_edit_add_file(struct version_edit *e, int level, uint64_t number,
			  uint64_t size, const uint8_t *smallest, size_t slen,
			  const uint8_t *largest, size_t llen)
{
	if (level < 0 || level >= NUM_LEVELS)
		return -EINVAL;
	struct file_meta *f = file_meta_new(number, size, smallest, slen,
					    largest, llen);
	if (!f)
		return -ENOMEM;
	return add_meta(e, level, f);
}

void version_edit_encode(const struct version_edit *e, struct buf *out)
{
	if (version_edit_poisoned(e)) {
		out->oom = 1;
		return;
	}
	if (e->has_log_number) {
		buf_put_varint32(out, TAG_LOG_NUMBER);
		buf_put_varint64(out, e->log_number);
	}
	if (e->has_next_file) {
		buf_put_varint32(out, TAG_NEXT_FILE);
		buf_put_varint64(out, e->next_file_number);
	}
	if (e->has_last_sequence) {
		buf_put_varint32(out, TAG_LAST_SEQUENCE);
		buf_put_varint64(out, e->last_sequence);
	}
	for (size_t i = 0; i < e->ncompact_pointers; i++) {
		buf_put_varint32(out, TAG_COMPACT_POINTER);
		buf_put_varint32(out, (uint32_t)e->compact_pointers[i].level);
		buf_put_lenbytes(out, e->compact_pointers[i].key.data,
				 e->compact_pointers[i].key.len);
	}
	for (size_t i = 0; i < e->ndeleted; i++) {
		buf_put_varint32(out, TAG_DELETED_FILE);
		buf_put_varint32(out, (uint32_t)e->deleted[i].level);
		buf_put_varint64(out, e->deleted[i].number);
	}
	if (e->has_totals) {
		buf_put_varint32(out, TAG_WRITE_TOTALS);
		buf_put_varint64(out, e->totals.user_bytes_written);
		buf_put_varint64(out, e->totals.wal_bytes_written);
		buf_put_varint64(out, e->totals.flush_bytes_written);
		buf_put_varint64(out, e->totals.compaction_bytes_written);
		buf_put_varint64(out, e->totals.manifest_bytes_written);
	}
	for (size_t i = 0; i < e->nadded; i++) {
		const struct file_meta *f = e->added[i].meta;
		buf_put_varint32(out, TAG_NEW_FILE);
		buf_put_varint32(out, (uint32_t)e->added[i].level);
		buf_put_varint64(out, f->number);
		buf_put_varint64(out, f->size);
		buf_put_lenbytes(out, f->smallest.data, f->smallest.len);
		buf_put_lenbytes(out, f->largest.data, f->largest.len);
	}
}

static const uint8_t *get_level(const uint8_t *p, const uint8_t *limit,
				int *level)
{
	uint32_t v;
	p = get_varint32(p, limit, &v);
	if (!p || v >= NUM_LEVELS)
		return NULL;
	*level = (int)v;
	return p;
}

/* An internal key: at least a whole tag, and a known type. */
static bool good_ikey(const uint8_t *k, size_t len)
{
	struct parsed_ikey pk;
	return ikey_parse(k, len, &pk) == 0;
}

int version_edit_decode(struct version_edit *e, const uint8_t *p, size_t len)
{
	const uint8_t *limit = p + len;
	version_edit_init(e);
	int rc = 0;
	while (p < limit && rc == 0) {
		uint32_t tag;
		uint64_t a, b;
		int level;
		const uint8_t *k1, *k2;
		size_t l1, l2;
		p = get_varint32(p, limit, &tag);
		if (!p)
			break;
		switch (tag) {
		case TAG_LOG_NUMBER:
			p = get_varint64(p, limit, &a);
			if (p)
				version_edit_set_log_number(e, a);
			break;
		case TAG_NEXT_FILE:
			p = get_varint64(p, limit, &a);
			if (p)
				version_edit_set_next_file(e, a);
			break;
		case TAG_LAST_SEQUENCE:
			p = get_varint64(p, limit, &a);
			if (p)
				version_edit_set_last_sequence(e, a);
			break;
		case TAG_COMPACT_POINTER:
			p = get_level(p, limit, &level);
			if (p)
				p = get_lenbytes(p, limit, &k1, &l1);
			if (p && !good_ikey(k1, l1))
				p = NULL;
			if (p) {
				version_edit_set_compact_pointer(e, level, k1, l1);
				if (version_edit_poisoned(e))
					rc = -ENOMEM;
			}
			break;
		case TAG_DELETED_FILE:
			p = get_level(p, limit, &level);
			if (p)
				p = get_varint64(p, limit, &a);
			if (p) {
				version_edit_delete_file(e, level, a);
				if (version_edit_poisoned(e))
					rc = -ENOMEM;
			}
			break;
		case TAG_NEW_FILE:
			p = get_level(p, limit, &level);
			if (p)
				p = get_varint64(p, limit, &a);
			if (p)
				p = get_varint64(p, limit, &b);
			if (p)
				p = get_lenbytes(p, limit, &k1, &l1);
			if (p)
				p = get_lenbytes(p, limit, &k2, &l2);
			if (p && (!good_ikey(k1, l1) || !good_ikey(k2, l2) ||
				  ikey_compare(k1, l1, k2, l2) > 0))
				p = NULL;
			if (p)
				rc = version_edit_add_file(e, level, a, b, k1, l1,
							   k2, l2);
			break;
		case TAG_WRITE_TOTALS: {
			uint64_t *t[5] = {&e->totals.user_bytes_written, &e->totals.wal_bytes_written,
					  &e->totals.flush_bytes_written,
					  &e->totals.compaction_bytes_written,
					  &e->totals.manifest_bytes_written};
			for (int i = 0; i < 5 && p; i++)
				p = get_varint64(p, limit, t[i]);
			e->has_totals = p != NULL;
			break;
		}
		default:
			p = NULL;
			break;
		}
		if (!p)
			break;
	}
	if (rc == 0 && !p)
		rc = -EUCLEAN;
	if (rc)
		version_edit_free(e);
	return rc;
}
