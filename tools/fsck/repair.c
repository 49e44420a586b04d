/*
 * repair.c: the store edits repairs are made of.  Each is one batch written
 * with a sync, so a repair interrupted by a crash is either done or not.
 */
#include "fsck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_batch(struct fsck *f, struct store_batch *b)
{
	int rc = store_write(f->st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	return rc;
}

int fsck_put_inode(struct fsck *f, const struct fsck_inode *in)
{
	uint8_t k[KEY_MAX], v[INODE_REC_LEN];
	size_t kl = key_inode(k, in->ino);
	inode_rec_encode(&in->rec, v);
	return store_put(f->st, k, kl, v, sizeof(v), STORE_WRITE_SYNC);
}

int fsck_del_key(struct fsck *f, const uint8_t *k, size_t kl)
{
	return store_delete(f->st, k, kl, STORE_WRITE_SYNC);
}

int fsck_put_entry(struct fsck *f, uint64_t parent, const char *name, uint64_t ino,
		   uint8_t type)
{
	uint8_t k[KEY_MAX], v[DIRENT_VAL_LEN];
	size_t kl = key_dirent(k, parent, name, strlen(name));
	dirent_val_encode(ino, type, v);
	return store_put(f->st, k, kl, v, sizeof(v), STORE_WRITE_SYNC);
}

/* The entry's own key: under the hash it is stored with, which may be the
 * wrong one. */
static int entry_key(const struct fsck_entry *e, uint8_t k[KEY_MAX], size_t *kl)
{
	size_t nlen = strlen(e->name);
	*kl = key_dirent_pos(k, e->parent, e->hash);
	if (*kl + nlen > KEY_MAX)
		return -ENAMETOOLONG;
	memcpy(k + *kl, e->name, nlen);
	*kl += nlen;
	return 0;
}

int fsck_del_entry(struct fsck *f, const struct fsck_entry *e)
{
	uint8_t k[KEY_MAX];
	size_t kl;
	int rc = entry_key(e, k, &kl);
	struct store_batch *b = rc ? NULL : store_batch_new();
	if (!b)
		return rc ? rc : -ENOMEM;
	store_batch_delete(b, k, kl);
	return write_batch(f, b);
}

int fsck_rehash_entry(struct fsck *f, struct fsck_entry *e)
{
	uint8_t k[KEY_MAX], nk[KEY_MAX], v[DIRENT_VAL_LEN];
	size_t kl;
	int rc = entry_key(e, k, &kl);
	struct store_batch *b = rc ? NULL : store_batch_new();
	if (!b)
		return rc ? rc : -ENOMEM;
	size_t nlen = strlen(e->name);
	dirent_val_encode(e->ino, e->type, v);
	store_batch_delete(b, k, kl);
	store_batch_put(b, nk, key_dirent(nk, e->parent, e->name, nlen), v, sizeof(v));
	rc = write_batch(f, b);
	if (!rc)
		e->hash = dirent_hash(e->name, nlen);
	return rc;
}

int fsck_trim_inline(struct fsck *f, uint64_t ino, uint64_t size)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_data(k, ino);
	void *v;
	size_t vl;
	int rc = store_get(f->st, NULL, k, kl, &v, &vl);
	if (rc)
		return rc;
	rc = store_put(f->st, k, kl, v, vl < size ? vl : (size_t)size, STORE_WRITE_SYNC);
	free(v);
	return rc;
}

int fsck_put_info(struct fsck *f)
{
	const struct lsmfs_super *sb = &f->ds->sb;
	struct fs_info fi = {
		.version = sb->version, .sections = sb->sections, .chunk_size = sb->chunk_size,
		.inline_max = sb->inline_max, .ndisks = sb->disk_count, .created = sb->created,
	};
	memcpy(fi.fs_uuid, sb->fs_uuid, 16);
	snprintf(fi.label, sizeof(fi.label), "%s", sb->label);
	uint8_t k[KEY_MAX], v[FS_INFO_MAX];
	size_t kl = key_meta(k, META_FS);
	int rc = store_put(f->st, k, kl, v, fs_info_encode(&fi, v), STORE_WRITE_SYNC);
	if (rc == 0) {
		f->info = fi;
		f->info_ok = true;
	}
	return rc;
}

int fsck_put_disk_record(struct fsck *f, uint32_t disk)
{
	const char *path = f->ds->paths[disk];
	size_t plen = strlen(path);
	uint8_t k[KEY_MAX], *v = malloc(16 + plen);
	if (!v)
		return -ENOMEM;
	memcpy(v, f->ds->sb.disk_uuids[disk], 16);
	memcpy(v + 16, path, plen);
	int rc = store_put(f->st, k, key_disk(k, disk), v, 16 + plen, STORE_WRITE_SYNC);
	free(v);
	return rc;
}

int fsck_put_section(struct fsck *f, uint32_t section, uint32_t disk)
{
	uint8_t k[KEY_MAX], v[4];
	sc_put_le32(v, disk);
	int rc = store_put(f->st, k, key_section(k, section), v, 4, STORE_WRITE_SYNC);
	if (rc == 0)
		f->section_disk[section] = disk;
	return rc;
}

int fsck_put_next_ino(struct fsck *f, uint64_t next)
{
	uint8_t k[KEY_MAX], v[8];
	sc_put_le64(v, next);
	int rc = store_put(f->st, k, key_meta(k, META_NEXT_INO), v, 8, STORE_WRITE_SYNC);
	if (rc == 0)
		f->next_ino = next;
	return rc;
}
