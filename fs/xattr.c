/*
 * xattr.c: extended attributes, one store key per attribute
 * (SCHEMA.md: X ino name).  Namespaces user., trusted., security. and
 * system. are kept as given; the kernel has checked permissions
 * (default_permissions) and the namespace rules before we see a request.
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#define XATTR_NAME_MAX_BYTES 255
#define XATTR_SIZE_MAX_BYTES 65536

static int check_name(const char *name, size_t *nlen)
{
	*nlen = strlen(name);
	if (*nlen == 0)
		return -EINVAL;
	if (*nlen > XATTR_NAME_MAX_BYTES)
		return -ERANGE;
	if (strncmp(name, "user.", 5) && strncmp(name, "trusted.", 8) &&
	    strncmp(name, "security.", 9) && strncmp(name, "system.", 7))
		return -EOPNOTSUPP;
	return 0;
}

/*
 * Set (val != NULL) or remove one attribute of ino, with the ctime change,
 * in one batch.  flags are setxattr's; removal of a missing name is
 * ENODATA.
 */
static int change(struct fs *fs, uint64_t ino, const char *name, size_t nlen, const void *val,
		  size_t len, int flags)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	uint8_t k[KEY_MAX + 8];
	size_t kl = key_xattr(k, ino, name, nlen);
	int exists = fs_key_exists(fs, k, kl);
	rc = exists < 0 ? exists : 0;
	if (!rc && exists && (flags & XATTR_CREATE))
		rc = -EEXIST;
	if (!rc && !exists && ((flags & XATTR_REPLACE) || !val))
		rc = -ENODATA;
	struct store_batch *b = rc ? NULL : store_batch_new();
	if (!rc && !b)
		rc = -ENOMEM;
	if (!rc) {
		struct inode_rec r = in->rec;
		inode_touch(&r, false, true);
		if (val) {
			r.flags |= INODE_FLAG_XATTR; /* lets reclaim skip the xattr scan otherwise */
			store_batch_put(b, k, kl, val, len);
		} else {
			store_batch_delete(b, k, kl);
		}
		inode_rec_put(b, ino, &r);
		rc = store_write(fs->st, b, 0);
		if (!rc) {
			in->rec = r;
			in->dirty = false;
		}
	}
	store_batch_free(b);
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}

int fs_setxattr(struct fs *fs, uint64_t ino, const char *name, const void *val, size_t len,
		int flags)
{
	if (ino == LSMFS_ROOT_INO && strcmp(name, FS_STATS_XATTR) == 0)
		return -EPERM; /* read-only: the daemon's counters */
	size_t nlen;
	int rc = check_name(name, &nlen);
	if (rc)
		return rc;
	if (len > XATTR_SIZE_MAX_BYTES)
		return -E2BIG;
	return change(fs, ino, name, nlen, val ? val : "", len, flags);
}

int fs_getxattr(struct fs *fs, uint64_t ino, const char *name, void **val, size_t *len)
{
	/* The accounting, as a virtual xattr of the root (stats.c); not in
	 * listxattr, so copies of the tree do not carry it. */
	if (ino == LSMFS_ROOT_INO && strcmp(name, FS_STATS_XATTR) == 0)
		return stats_json(fs, (char **)val, len);
	size_t nlen;
	int rc = check_name(name, &nlen);
	if (rc)
		return rc == -EOPNOTSUPP ? -ENODATA : rc;
	uint8_t k[KEY_MAX + 8];
	size_t kl = key_xattr(k, ino, name, nlen);
	rc = store_get(fs->st, NULL, k, kl, val, len);
	return rc == -ENOENT ? -ENODATA : rc;
}

int fs_listxattr(struct fs *fs, uint64_t ino, char **list, size_t *len)
{
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	size_t ll = key_xattr_prefix(lo, ino), hl = key_xattr_prefix(hi, ino + 1);
	struct store_iter_options io = {.lower = lo, .lower_len = ll, .upper = hi, .upper_len = hl};
	struct store_iter *it;
	int rc = store_iter_new(fs->st, &io, &it);
	if (rc)
		return rc;
	char *buf = NULL;
	size_t used = 0, cap = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);
		size_t nl = kl - 9;
		if (used + nl + 1 > cap) {
			cap = (used + nl + 1) * 2;
			char *g = realloc(buf, cap);
			if (!g) {
				rc = -ENOMEM;
				break;
			}
			buf = g;
		}
		memcpy(buf + used, k + 9, nl);
		used += nl;
		buf[used++] = 0;
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	if (rc) {
		free(buf);
		return rc;
	}
	*list = buf;
	*len = used;
	return 0;
}

int fs_removexattr(struct fs *fs, uint64_t ino, const char *name)
{
	if (ino == LSMFS_ROOT_INO && strcmp(name, FS_STATS_XATTR) == 0)
		return -EPERM;
	size_t nlen;
	int rc = check_name(name, &nlen);
	if (rc)
		return rc == -EOPNOTSUPP ? -ENODATA : rc;
	return change(fs, ino, name, nlen, NULL, 0, 0);
}

int xattr_drop_capability(struct fs *fs, struct fs_inode *in)
{
	if (!(in->rec.flags & INODE_FLAG_XATTR))
		return 0;
	static const char name[] = "security.capability";
	uint8_t k[KEY_MAX + 8];
	size_t kl = key_xattr(k, in->ino, name, sizeof(name) - 1);
	int exists = fs_key_exists(fs, k, kl);
	if (exists <= 0)
		return exists;
	return store_delete(fs->st, k, kl, 0);
}
