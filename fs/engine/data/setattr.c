/*
 * setattr.c: changing a file's attributes (fs_setattr: mode, owner, times,
 * and its size through data.c's data_set_size), under the inode's stripe
 * lock with no chunk I/O under way (iogate_drain).
 */
#include "acl.h"
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fs_setattr(struct fs *fs, uint64_t ino, const struct stat *a, int to_set,
	       const struct fs_caller *caller, struct stat *out)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	struct inode_rec *r = &in->rec;
	/* The clock only when something takes it (fs_now costs a system
	 * call or two: clock.c); a setattr that only writes back the
	 * kernel's times needs none. */
	int64_t now_s = 0;
	uint32_t now_ns = 0;
	if (!(to_set & FUSE_SET_ATTR_CTIME) ||
	    (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)))
		fs_now(fs, &now_s, &now_ns);
	/* An inode that went with its last name (dir.c purgeable) still
	 * gets the kernel's writeback of its times, in memory only (persist
	 * skips it); a truncate that raced with the unlink comes after it. */
	if (in->gone && (to_set & FUSE_SET_ATTR_SIZE)) {
		rc = -ESTALE;
		goto out;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (S_ISDIR(r->mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (!S_ISREG(r->mode)) {
			rc = -EINVAL;
			goto out;
		}
		if (a->st_size < 0) {
			rc = -EINVAL;
			goto out;
		}
		in->write_failed = false; /* the size is the caller's now */
		if ((uint64_t)a->st_size != r->size) {
			if ((rc = data_set_size(fs, in, (uint64_t)a->st_size)))
				goto out;
			r->mtime_sec = now_s;
			r->mtime_nsec = now_ns;
		}
	}
	if (to_set & FUSE_SET_ATTR_MODE)
		r->mode = (r->mode & S_IFMT) | (a->st_mode & 07777);
	/* FATTR_KILL_SUIDGID (KILLPRIV_V2): a chown, or a truncate by a
	 * caller without CAP_FSETID. */
	if (to_set & FUSE_SET_ATTR_KILL_SUID) {
		inode_kill_suidgid(r, caller);
		if ((rc = xattr_drop_capability(fs, in)))
			goto out;
	}
	if (to_set & FUSE_SET_ATTR_UID)
		r->uid = a->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		r->gid = a->st_gid;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		r->atime_sec = now_s;
		r->atime_nsec = now_ns;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		r->atime_sec = a->st_atim.tv_sec;
		r->atime_nsec = (uint32_t)a->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		r->mtime_sec = now_s;
		r->mtime_nsec = now_ns;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		r->mtime_sec = a->st_mtim.tv_sec;
		r->mtime_nsec = (uint32_t)a->st_mtim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		r->ctime_sec = a->st_ctim.tv_sec;
		r->ctime_nsec = (uint32_t)a->st_ctim.tv_nsec;
	} else {
		r->ctime_sec = now_s;
		r->ctime_nsec = now_ns;
	}
	in->dirty = true;
	/* chmod rewrites an access ACL, with the record, in one batch. */
	rc = (to_set & FUSE_SET_ATTR_MODE) ? acl_fs_chmod(fs, in) : 0;
	if (!rc)
		rc = inode_persist(fs, in, false);
out:
	if (!rc)
		inode_stat(fs, in, out);
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}
