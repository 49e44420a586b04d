/*
 * replace_record.c: the record of a disk being replaced, `M replace`
 * (SCHEMA.md "Replacing a disk"), which fs/admin/replace.c writes before
 * the new disk is added and deletes once the old one is gone.  Layout,
 * little-endian, 37 bytes:
 *
 *   0 u8 version (1)   1 le32 the old disk's index
 *   5 16 bytes: the old disk's UUID   21 16 bytes: the new disk's UUID
 *
 * By UUID, not by index alone: a slot a detached disk left may be taken by
 * another disk, which the record must not take for either of its own.
 */
#include "format.h"
#include "schema.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void replace_record_encode(const struct replace_record *r, uint8_t out[REPLACE_RECORD_LEN])
{
	out[0] = REPLACE_RECORD_VERSION;
	put_le32(out + 1, r->old);
	memcpy(out + 5, r->old_uuid, 16);
	memcpy(out + 21, r->new_uuid, 16);
}

int replace_record_decode(const uint8_t *v, size_t vl, struct replace_record *r)
{
	static const uint8_t zero[16];
	if (vl != REPLACE_RECORD_LEN || v[0] != REPLACE_RECORD_VERSION)
		return -EUCLEAN;
	r->old = get_le32(v + 1);
	memcpy(r->old_uuid, v + 5, 16);
	memcpy(r->new_uuid, v + 21, 16);
	if (r->old >= LSMFS_MAX_DISKS || !memcmp(r->old_uuid, zero, 16) ||
	    !memcmp(r->new_uuid, zero, 16) || !memcmp(r->old_uuid, r->new_uuid, 16))
		return -EUCLEAN;
	return 0;
}

int replace_record_get(struct store *st, struct replace_record *r)
{
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	int rc = store_get(st, NULL, k, key_meta(k, META_REPLACE), &v, &vl);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	rc = replace_record_decode(v, vl, r);
	free(v);
	return rc ? rc : 1;
}
