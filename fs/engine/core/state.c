/*
 * state.c: the short questions about the filesystem's state that every
 * part of the engine asks (struct fs, core.h), each answered once here
 * rather than in the module that happens to change the state: whether it
 * may be written, which disk holds a section, whether a disk is usable,
 * the inode stripe locks, where the daemon's home copy of the store is,
 * the store's keys by inode, and the inode counter.
 *
 * Locking: the atomics named beside each field of struct fs; fs->ino_lock
 * for the inode counter; fs->copies_lock for the home copy's directory.
 */
#include "core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

bool fs_writable(struct fs *fs)
{
	return !fs->opt.read_only && !__atomic_load_n(&fs->remounted_ro, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&fs->meta_lost, __ATOMIC_ACQUIRE);
}

bool disk_usable(struct fs *fs, uint32_t disk)
{
	return diskset_present(fs->ds, disk) && !__atomic_load_n(&fs->disk_lost[disk], __ATOMIC_ACQUIRE);
}

uint32_t section_disk_of(struct fs *fs, uint32_t section)
{
	return __atomic_load_n(&fs->section_disk[section], __ATOMIC_ACQUIRE);
}

pthread_mutex_t *inode_lock_of(struct fs *fs, uint64_t ino)
{
	return &fs->ilock[ino % ILOCKS];
}

void inode_lock(struct fs *fs, struct fs_inode *in)
{
	pthread_mutex_lock(inode_lock_of(fs, in->ino));
}

void inode_unlock(struct fs *fs, struct fs_inode *in)
{
	pthread_mutex_unlock(inode_lock_of(fs, in->ino));
}

int fs_key_exists(struct fs *fs, const uint8_t *key, size_t klen)
{
	void *v;
	size_t vl;
	int rc = store_get(fs->st, NULL, key, klen, &v, &vl);
	if (rc == 0) {
		free(v);
		return 1;
	}
	return rc == -ENOENT ? 0 : rc;
}

int fs_each_ino_key(struct fs *fs, uint8_t type, int (*fn)(struct fs *fs, uint64_t ino, void *ctx),
		    void *ctx)
{
	uint8_t lo[1] = {type}, hi[1] = {(uint8_t)(type + 1)};
	struct store_iter_options io = {.lower = lo, .lower_len = 1, .upper = hi, .upper_len = 1};
	struct store_iter *it;
	int rc = store_iter_new(fs->st, &io, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); !rc && store_iter_valid(it); store_iter_next(it)) {
		size_t kl;
		const uint8_t *key = store_iter_key(it, &kl);
		if (kl == 9)
			rc = fn(fs, get_be64(key + 1), ctx);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

/* Inode numbers are handed out from a run reserved in the store first, so
 * every number in use is below the stored counter (SCHEMA.md). */
int fs_alloc_ino(struct fs *fs, uint64_t *ino)
{
	int rc = 0;
	pthread_mutex_lock(&fs->ino_lock);
	if (fs->next_ino >= fs->reserved_to) {
		uint8_t k[KEY_MAX], v[8];
		size_t kl = key_meta(k, META_NEXT_INO);
		put_le64(v, fs->next_ino + INO_RESERVE);
		rc = store_put(fs->st, k, kl, v, 8, 0);
		if (!rc)
			fs->reserved_to = fs->next_ino + INO_RESERVE;
	}
	if (!rc)
		*ino = fs->next_ino++;
	pthread_mutex_unlock(&fs->ino_lock);
	return rc;
}

void copies_home(struct fs *fs, char *out, size_t cap)
{
	if (fs->copies_lock_init)
		pthread_mutex_lock(&fs->copies_lock);
	snprintf(out, cap, "%s", fs->ds->meta_dir);
	if (fs->copies_lock_init)
		pthread_mutex_unlock(&fs->copies_lock);
}

bool copies_degraded(struct fs *fs)
{
	return __atomic_load_n(&fs->copies_degraded, __ATOMIC_ACQUIRE);
}

/* Store copy k (store_options numbering) is the superblock's copy... */
uint32_t fs_sb_copy(const struct fs *fs, size_t k)
{
	return k < fs->store_ncopies ? fs->store_which[k] : UINT32_MAX;
}
