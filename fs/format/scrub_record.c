/*
 * scrub_record.c: the record of the last scrub, `M scrub` (SCHEMA.md
 * "Scrub"), which the scrub thread (fs/admin/scrub.c) writes every few
 * seconds and at its end, `lsmfs-disk scrub status` shows and a resume
 * goes on from.  Layout, little-endian:
 *
 *   0 u8 version (1)       1 u8 state (enum scrub_state)
 *   2 le64 started         10 le64 updated (unix seconds)
 *   18 le64 elapsed_ms     26 le64 ino, 34 le64 chunk (where it goes on)
 *   42 le64 rate (bytes/s, 0: none)
 *   50 le64 x 8: chunks, bytes, errors, repaired, unrepaired, rebuilt,
 *      unrebuilt, skipped
 *   114 le64 total_chunks  122 le64 total_bytes (estimates)
 *   130 le32 error (errno) 134 le32 files (with errors left)
 *   138 per file named: le64 ino, le32 path length, the path (no NUL)
 */
#include "schema.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const scrub_state_names[SCRUB_STATES] = {
	"none", "running", "finished", "cancelled", "interrupted", "failed",
};

int scrub_record_encode(const struct scrub_record *r, uint8_t **out, size_t *len)
{
	size_t n = SCRUB_RECORD_FIXED;
	for (size_t i = 0; i < r->nnamed; i++)
		n += 12 + strlen(r->named[i].path);
	uint8_t *v = malloc(n);
	if (!v)
		return -ENOMEM;
	v[0] = SCRUB_RECORD_VERSION;
	v[1] = r->state;
	const uint64_t w[] = {r->started, r->updated, r->elapsed_ms, r->ino, r->chunk, r->rate,
			      r->count.chunks, r->count.bytes, r->count.errors, r->count.repaired,
			      r->count.unrepaired, r->count.rebuilt, r->count.unrebuilt,
			      r->count.skipped, r->total_chunks, r->total_bytes};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		put_le64(v + 2 + 8 * i, w[i]);
	put_le32(v + 130, r->error);
	put_le32(v + 134, r->files);
	size_t at = SCRUB_RECORD_FIXED;
	for (size_t i = 0; i < r->nnamed; i++) {
		size_t pl = strlen(r->named[i].path);
		put_le64(v + at, r->named[i].ino);
		put_le32(v + at + 8, (uint32_t)pl);
		memcpy(v + at + 12, r->named[i].path, pl);
		at += 12 + pl;
	}
	*out = v;
	*len = n;
	return 0;
}

void scrub_record_free(struct scrub_record *r)
{
	for (size_t i = 0; i < r->nnamed; i++)
		free(r->named[i].path);
	free(r->named);
	r->named = NULL;
	r->nnamed = 0;
}

int scrub_record_decode(const uint8_t *v, size_t vl, struct scrub_record *r)
{
	memset(r, 0, sizeof(*r));
	if (vl < SCRUB_RECORD_FIXED || v[0] != SCRUB_RECORD_VERSION || v[1] == SCRUB_NONE ||
	    v[1] >= SCRUB_STATES)
		return -EUCLEAN;
	r->state = v[1];
	uint64_t *w[] = {&r->started, &r->updated, &r->elapsed_ms, &r->ino, &r->chunk, &r->rate,
			 &r->count.chunks, &r->count.bytes, &r->count.errors, &r->count.repaired,
			 &r->count.unrepaired, &r->count.rebuilt, &r->count.unrebuilt,
			 &r->count.skipped, &r->total_chunks, &r->total_bytes};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		*w[i] = get_le64(v + 2 + 8 * i);
	r->error = get_le32(v + 130);
	r->files = get_le32(v + 134);
	/* The files named: count them first, then take them. */
	size_t n = 0, at = SCRUB_RECORD_FIXED;
	while (at < vl) {
		if (vl - at < 12 || vl - at - 12 < get_le32(v + at + 8))
			return -EUCLEAN;
		at += 12 + get_le32(v + at + 8);
		n++;
	}
	if (n > r->files)
		return -EUCLEAN;
	r->named = n ? calloc(n, sizeof(*r->named)) : NULL;
	if (n && !r->named)
		return -ENOMEM;
	at = SCRUB_RECORD_FIXED;
	for (size_t i = 0; i < n; i++) {
		uint32_t pl = get_le32(v + at + 8);
		struct scrub_file *f = &r->named[i];
		f->ino = get_le64(v + at);
		int rc = memchr(v + at + 12, 0, pl) ? -EUCLEAN
			 : !(f->path = malloc(pl + 1)) ? -ENOMEM : 0;
		if (rc) {
			r->nnamed = i;
			scrub_record_free(r);
			return rc;
		}
		memcpy(f->path, v + at + 12, pl);
		f->path[pl] = '\0';
		at += 12 + pl;
		r->nnamed = i + 1;
	}
	return 0;
}

int scrub_record_get(struct store *st, struct scrub_record *r)
{
	memset(r, 0, sizeof(*r));
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	int rc = store_get(st, NULL, k, key_meta(k, META_SCRUB), &v, &vl);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	rc = scrub_record_decode(v, vl, r);
	free(v);
	return rc ? rc : 1;
}
