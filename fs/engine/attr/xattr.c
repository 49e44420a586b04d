/*
 * xattr.c: extended attributes, one store key per attribute
 * (SCHEMA.md: X ino name; "Extended attributes").
 *
 * Namespace rules are ext4's (compared on a 6.18 kernel): user.,
 * trusted. and security. need a non-empty suffix (EINVAL); system. takes
 * only the two POSIX ACL names (acl.c keeps the mode in step with them);
 * any other name is EOPNOTSUPP, on set, get and remove alike.  trusted.*
 * is for callers with CAP_SYS_ADMIN: hidden from listxattr for others,
 * ENODATA on get and EPERM on set and remove for them (the VFS refuses
 * the latter two first; we do not rely on it).  A new name is refused
 * with ENOSPC when the name list would pass 64 KiB, the most listxattr
 * can return.  The root's user.lsmfs.stats is virtual and root's only;
 * user.lsmfs.placement takes only the values policy.c knows.
 * security.selinux is EOPNOTSUPP, and left out of listxattr, on a mount
 * that keeps no SELinux labels (fs_options.selinux_xattr): ls -l asks
 * for it on every file, which the kernel sends here every time, and
 * takes EOPNOTSUPP as the filesystem's answer for all its files.
 * Locking: a change holds the inode's stripe lock.
 */
#include "acl.h"
#include "attr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#define XATTR_NAME_MAX_BYTES 255
#define XATTR_SIZE_MAX_BYTES 65536
#define XATTR_LIST_MAX_BYTES 65536
#define CAP_SYS_ADMIN_BIT 21

#define SELINUX_XATTR "security.selinux"

static int check_name(const struct fs *fs, const char *name, size_t *nlen)
{
	if (!fs->opt.selinux_xattr && strcmp(name, SELINUX_XATTR) == 0)
		return -EOPNOTSUPP;
	static const char *const prefixes[] = {"user.", "trusted.", "security."};
	*nlen = strlen(name);
	if (*nlen == 0)
		return -EINVAL;
	if (*nlen > XATTR_NAME_MAX_BYTES)
		return -ERANGE;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);
		if (strncmp(name, prefixes[i], pl) == 0)
			return *nlen == pl ? -EINVAL : 0;
	}
	return acl_is_xattr(name) ? 0 : -EOPNOTSUPP;
}

static bool is_trusted(const char *name)
{
	return strncmp(name, "trusted.", 8) == 0;
}

/*
 * CAP_SYS_ADMIN, as ext4 asks for trusted.*: the effective set in
 * /proc/PID/status of the calling thread (one small read, on xattr
 * requests only), or uid 0 when it cannot be read (the caller is gone,
 * or lives in a pid namespace the daemon does not see).  NULL: the
 * daemon itself.
 */
static bool caller_admin(const struct fs_caller *c)
{
	if (!c)
		return true;
	if (c->pid > 0) {
		char path[48], line[256];
		snprintf(path, sizeof(path), "/proc/%d/status", (int)c->pid);
		FILE *f = fopen(path, "re");
		if (f) {
			unsigned long long caps = 0;
			bool found = false;
			while (!found && fgets(line, sizeof(line), f))
				found = sscanf(line, "CapEff: %llx", &caps) == 1;
			fclose(f);
			if (found)
				return (caps >> CAP_SYS_ADMIN_BIT) & 1;
		}
	}
	return c->uid == 0;
}

/* The NUL-separated names of ino's attributes (trusted.* only when
 * with_trusted); list NULL: only their length. */
static int list_names(struct fs *fs, uint64_t ino, bool with_trusted, char **list, size_t *len)
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
		if (!with_trusted && nl >= 8 && memcmp(k + 9, "trusted.", 8) == 0)
			continue;
		if (!fs->opt.selinux_xattr && nl == sizeof(SELINUX_XATTR) - 1 &&
		    memcmp(k + 9, SELINUX_XATTR, nl) == 0)
			continue;
		if (list && used + nl + 1 > cap) {
			cap = (used + nl + 1) * 2;
			char *g = realloc(buf, cap);
			if (!g) {
				rc = -ENOMEM;
				break;
			}
			buf = g;
		}
		if (list) {
			memcpy(buf + used, k + 9, nl);
			buf[used + nl] = 0;
		}
		used += nl + 1;
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	if (rc) {
		free(buf);
		return rc;
	}
	if (list)
		*list = buf;
	*len = used;
	return 0;
}

/*
 * Set (val != NULL) or remove one attribute of ino, with the ctime change
 * (and for an ACL the mode), in one batch.  flags are setxattr's; removal
 * of a missing name is ENODATA, except for an ACL (as ext4).
 */
static int change(struct fs *fs, uint64_t ino, const char *name, size_t nlen, const void *val,
		  size_t len, int flags, const struct fs_caller *caller)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	if (in->gone) { /* its last name went with it (dir.c purgeable) */
		inode_unlock(fs, in);
		inode_put(fs, in);
		return -ESTALE;
	}
	uint8_t k[KEY_MAX + 8];
	size_t kl = key_xattr(k, ino, name, nlen);
	int exists = fs_key_exists(fs, k, kl);
	bool acl = acl_is_xattr(name);
	rc = exists < 0 ? exists : 0;
	if (!rc && exists && (flags & XATTR_CREATE))
		rc = -EEXIST;
	if (!rc && !exists && ((flags & XATTR_REPLACE) || (!val && !acl)))
		rc = -ENODATA;
	struct inode_rec r = in->rec;
	bool drop = !val;
	if (!rc && val && acl)
		rc = acl_fs_set(fs, ino, name, val, len, caller, &r, &drop);
	size_t listed = 0;
	if (!rc && !exists && !drop && !(rc = list_names(fs, ino, true, NULL, &listed)) &&
	    listed + nlen + 1 > XATTR_LIST_MAX_BYTES)
		rc = -ENOSPC; /* as ext4 when its xattr space is full */
	struct store_batch *b = rc ? NULL : store_batch_new();
	if (!rc && !b)
		rc = -ENOMEM;
	if (!rc) {
		inode_touch(fs, &r, false, true);
		if (!drop) {
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
		int flags, const struct fs_caller *caller)
{
	if (ino == LSMFS_ROOT_INO && strcmp(name, FS_STATS_XATTR) == 0)
		return -EPERM; /* read-only: the daemon's counters */
	if (is_trusted(name) && !caller_admin(caller))
		return -EPERM;
	size_t nlen;
	int rc = check_name(fs, name, &nlen);
	if (rc)
		return rc;
	if (len > XATTR_SIZE_MAX_BYTES)
		return -E2BIG;
	if ((rc = policy_check(name, val ? val : "", len)))
		return rc;
	return change(fs, ino, name, nlen, val ? val : "", len, flags, caller);
}

/* 1 when ino's record says it has (or had) attributes, 0 when it never
 * had any (then the store holds none: reclaim and fsck rely on the same
 * flag), or -errno.  The record is in memory for an inode the kernel
 * knows, so the GETXATTR of security.capability that comes with each
 * file's first write costs no store lookup. */
static int may_have_xattrs(struct fs *fs, uint64_t ino)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	bool has = in->rec.flags & INODE_FLAG_XATTR;
	inode_unlock(fs, in);
	inode_put(fs, in);
	return has;
}

int fs_getxattr(struct fs *fs, uint64_t ino, const char *name, void **val, size_t *len,
		const struct fs_caller *caller)
{
	/* The accounting, as a virtual xattr of the root (stats.c); not in
	 * listxattr, so copies of the tree do not carry it.  It names the
	 * disks and the daemon's pid: root's only (EPERM says why). */
	if (ino == LSMFS_ROOT_INO && strcmp(name, FS_STATS_XATTR) == 0)
		return caller_admin(caller) ? stats_json(fs, (char **)val, len) : -EPERM;
	if (is_trusted(name) && !caller_admin(caller))
		return -ENODATA;
	size_t nlen;
	int rc = check_name(fs, name, &nlen);
	if (rc)
		return rc;
	rc = may_have_xattrs(fs, ino);
	if (rc <= 0)
		return rc == 0 || rc == -ENOENT ? -ENODATA : rc;
	uint8_t k[KEY_MAX + 8];
	size_t kl = key_xattr(k, ino, name, nlen);
	rc = store_get(fs->st, NULL, k, kl, val, len);
	return rc == -ENOENT ? -ENODATA : rc;
}

int fs_listxattr(struct fs *fs, uint64_t ino, char **list, size_t *len,
		 const struct fs_caller *caller)
{
	int rc = may_have_xattrs(fs, ino);
	if (rc < 0)
		return rc;
	if (rc == 0) { /* as list_names finding nothing */
		if (list)
			*list = NULL;
		*len = 0;
		return 0;
	}
	return list_names(fs, ino, caller_admin(caller), list, len);
}

int fs_removexattr(struct fs *fs, uint64_t ino, const char *name, const struct fs_caller *caller)
{
	if (ino == LSMFS_ROOT_INO && strcmp(name, FS_STATS_XATTR) == 0)
		return -EPERM;
	if (is_trusted(name) && !caller_admin(caller))
		return -EPERM;
	size_t nlen;
	int rc = check_name(fs, name, &nlen);
	if (rc)
		return rc;
	return change(fs, ino, name, nlen, NULL, 0, 0, caller);
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
