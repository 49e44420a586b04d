/*
 * repair.c: the store edits repairs are made of.  Each is one batch written
 * with a sync, so a repair interrupted by a crash is either done or not.
 */
#include "fsck.h"

#include <errno.h>
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
int fsck_del_entry(struct fsck *f, const struct fsck_entry *e)
{
	size_t nlen = strlen(e->name);
	uint8_t k[KEY_MAX];
	size_t kl = key_dirent_pos(k, e->parent, e->hash);
	if (kl + nlen > sizeof(k))
		return -ENAMETOOLONG;
	memcpy(k + kl, e->name, nlen);
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	store_batch_delete(b, k, kl + nlen);
	return write_batch(f, b);
}
