/*
 * section.c: the section map and the names of chunk files (SCHEMA.md,
 * "Sharding" and "Moving a section").
 *
 * Everything that names a section's directory or a chunk file, reads the
 * map (`P` keys) or places a section on a disk goes through here: the
 * daemon, mkfs (fs_format), fsck.lsmfs, lsmfs-inspect and lsmfs-disk.
 * The hash that puts a chunk in a section is chunk_section (schema.c): it
 * never changes, whatever the disks do; a chunk record may name another
 * (chunk_value_place: SCHEMA.md "Placement"), and a chunk's second copy is
 * in its section's partner (section_of_copy: "Copies").  Pure functions and store reads;
 * no locking of their own (the daemon's gates are gate.c).
 */
#include "format.h"
#include "schema.h"
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t section_first_disk(uint32_t section, uint32_t ndisks)
{
	return section % ndisks;
}

void section_chunk_name(uint64_t ino, uint64_t chunk, uint32_t section, char *out, size_t cap)
{
	snprintf(out, cap, "%" PRIu32 "/%" PRIu64 ".%" PRIu64, section, ino, chunk);
}

void section_dir_name(uint32_t section, char out[SECTION_NAME_MAX])
{
	snprintf(out, SECTION_NAME_MAX, "%" PRIu32, section);
}

void section_disk_dir(const char *disk, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s/%s", disk, LSMFS_DIR, LSMFS_SECTIONS_DIR);
}

void section_evacuated_dir(const char *disk, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s/%s", disk, LSMFS_DIR, LSMFS_EVACUATED_DIR);
}

/* A decimal number written as section_dir_name / section_chunk_name write
 * it: digits only, no leading zero (but "0"), no sign, no overflow. */
static const char *parse_decimal(const char *s, uint64_t max, uint64_t *v)
{
	if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
		return NULL;
	uint64_t n = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (n > (max - d) / 10)
			return NULL;
		n = n * 10 + d;
	}
	*v = n;
	return s;
}

int section_dir_parse(const char *name, uint32_t sections, uint32_t *section)
{
	uint64_t v;
	const char *end = parse_decimal(name, UINT32_MAX, &v);
	if (!end || *end || v >= sections)
		return 0;
	*section = (uint32_t)v;
	return 1;
}

int section_chunk_parse(const char *name, uint64_t *ino, uint64_t *chunk)
{
	const char *p = parse_decimal(name, UINT64_MAX, ino);
	if (!p || *p != '.')
		return 0;
	p = parse_decimal(p + 1, UINT64_MAX, chunk);
	return p && *p == '\0';
}

void section_value_encode(uint32_t disk, uint8_t out[SECTION_VAL_LEN])
{
	put_le32(out, disk);
}

int section_value_decode(const uint8_t *v, size_t vl, uint32_t *disk)
{
	if (vl != SECTION_VAL_LEN)
		return -EUCLEAN;
	*disk = get_le32(v);
	return 0;
}

int section_entry_decode(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
			 uint32_t *section, uint32_t *disk)
{
	struct key_parts kp;
	if (key_parse(k, kl, &kp) != 0 || kp.type->letter != KEY_SECTION ||
	    section_value_decode(v, vl, disk) != 0)
		return -EUCLEAN;
	*section = (uint32_t)kp.id;
	return 0;
}

int section_map_read(struct store *st, uint32_t sections, uint32_t *disk_of,
		     int (*bad)(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl),
		     void *ctx)
{
	for (uint32_t s = 0; s < sections; s++)
		disk_of[s] = UINT32_MAX;
	uint8_t lo[1] = {KEY_SECTION}, hi[1] = {KEY_SECTION + 1};
	struct store_iter_options io = {.lower = lo, .lower_len = 1, .upper = hi, .upper_len = 1};
	struct store_iter *it;
	int rc = store_iter_new(st, &io, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); !rc && store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		uint32_t s, d;
		if (section_entry_decode(k, kl, v, vl, &s, &d) == 0 && s < sections &&
		    d < LSMFS_MAX_DISKS)
			disk_of[s] = d;
		else if (bad)
			rc = bad(ctx, k, kl, v, vl);
		else
			rc = -EUCLEAN;
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

void section_move_encode(const struct section_move *m, uint8_t out[SECTION_MOVE_LEN])
{
	put_le32(out, m->section);
	put_le32(out + 4, m->from);
	put_le32(out + 8, m->to);
}

int section_move_decode(const uint8_t *v, size_t vl, struct section_move *m)
{
	if (vl != SECTION_MOVE_LEN)
		return -EUCLEAN;
	m->section = get_le32(v);
	m->from = get_le32(v + 4);
	m->to = get_le32(v + 8);
	return m->from == m->to || m->from >= LSMFS_MAX_DISKS || m->to >= LSMFS_MAX_DISKS
		       ? -EUCLEAN
		       : 0;
}

int section_move_get(struct store *st, struct section_move *m)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, META_MOVE);
	void *v;
	size_t vl;
	int rc = store_get(st, NULL, k, kl, &v, &vl);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	rc = section_move_decode(v, vl, m);
	free(v);
	return rc ? rc : 1;
}

uint32_t section_of_copy(uint32_t s, unsigned i, uint32_t sections)
{
	if (i == 0)
		return s;
	uint32_t t = s ^ 1u;
	return i == 1 && t < sections ? t : UINT32_MAX;
}

int chunk_value_place(const uint8_t *p, size_t len, uint64_t ino, uint64_t chunk,
		      uint32_t sections, struct chunk_place *place)
{
	struct chunk_value cv;
	*place = (struct chunk_place){.section = chunk_section(ino, chunk, sections), .copies = 1};
	if (!p)
		return 0;
	if (chunk_value_parse(p, len, &cv))
		return -EUCLEAN;
	if (cv.section != CHUNK_HASHED) {
		if (cv.section >= sections)
			return -EUCLEAN;
		place->section = cv.section;
	}
	for (unsigned i = 1; i < cv.copies; i++)
		if (section_of_copy(place->section, i, sections) == UINT32_MAX)
			return -EUCLEAN;
	place->copies = cv.copies;
	place->stale = cv.stale;
	return 0;
}

int chunk_value_section(const uint8_t *p, size_t len, uint64_t ino, uint64_t chunk,
			uint32_t sections, uint32_t *section)
{
	struct chunk_place pl;
	int rc = chunk_value_place(p, len, ino, chunk, sections, &pl);
	*section = pl.section;
	return rc;
}
