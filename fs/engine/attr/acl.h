/*
 * acl.h: POSIX access control lists (acl.c; SCHEMA.md, "POSIX ACLs").
 *
 * The kernel enforces ACLs (FUSE_CAP_POSIX_ACL) from the
 * system.posix_acl_access xattr we return; keeping the mode in step with
 * the ACL, the ACL in step with chmod, and new inodes' ACLs derived from
 * their parent's default ACL is ours.  Codec and rules are pure functions
 * (unit-tested); the acl_fs_* hooks read and write the store and leave
 * every change in the same batch as the inode record it goes with.
 */
#ifndef LSMFS_ACL_H
#define LSMFS_ACL_H

#include "core.h"

#define ACL_XATTR_ACCESS "system.posix_acl_access"
#define ACL_XATTR_DEFAULT "system.posix_acl_default"
#define ACL_XATTR_VERSION 2

/* Tags, as <linux/posix_acl.h>; entries are kept sorted by (tag, id). */
#define ACL_TAG_USER_OBJ 0x01
#define ACL_TAG_USER 0x02
#define ACL_TAG_GROUP_OBJ 0x04
#define ACL_TAG_GROUP 0x08
#define ACL_TAG_MASK 0x10
#define ACL_TAG_OTHER 0x20
#define ACL_ID_UNDEFINED 0xffffffffu

struct acl_entry {
	uint16_t tag;
	uint16_t perm; /* rwx: 4 2 1 */
	uint32_t id;   /* uid or gid for USER and GROUP, else ACL_ID_UNDEFINED */
};

struct acl {
	uint32_t count;
	struct acl_entry entry[]; /* count entries */
};

/* 1 if name is one of the two ACL xattrs, else 0. */
int acl_is_xattr(const char *name);

/*
 * Decode and validate an xattr value (le32 version 2, then le16 tag, le16
 * perm, le32 id per entry): -EINVAL on any garbage (length, version,
 * unknown tag, perm > 7, order, duplicates, a missing USER_OBJ, GROUP_OBJ
 * or OTHER, named entries without a MASK), naming the fault in why
 * (why may be NULL).  A header with no entries decodes to count 0, which
 * callers treat as "no ACL".  *out is malloc'd.
 */
int acl_decode(const void *val, size_t len, struct acl **out, char *why, size_t whylen);
/* Bytes of the encoding of acl, and the encoding itself into buf. */
size_t acl_encoded_len(const struct acl *acl);
void acl_encode(const struct acl *acl, uint8_t *buf);

/* The permission bits an access ACL stands for, into the low 0777 of
 * *mode (other bits kept); returns 1 when the ACL says more than the mode
 * (named entries or a mask), 0 when the mode says it all. */
int acl_equiv_mode(const struct acl *acl, mode_t *mode);
/* chmod: USER_OBJ, OTHER and MASK (or GROUP_OBJ without a mask) follow
 * the new mode's bits. */
void acl_chmod(struct acl *acl, mode_t mode);
/* A new inode's access ACL from its parent's default ACL (a copy, changed
 * in place) and the create mode (changed to match); returns 1 when the
 * ACL must be stored, 0 when the mode says it all (posix_acl_create_masq). */
int acl_create_masq(struct acl *acl, mode_t *mode);

/*
 * Hooks for the filesystem.  All return 0 or a negative errno.
 *
 * acl_fs_inherit: fs_mknod, parent held under ns_lock: set r's permission
 * bits from mode (type and setuid/setgid bits are r's own) and the
 * parent's default ACL, or the umask when it has none; put the child's
 * ACL xattrs in b (ino is the child) and flag r as having xattrs.
 * Symlinks are left alone.
 */
int acl_fs_inherit(struct fs *fs, struct fs_inode *dir, uint64_t ino, struct inode_rec *r,
		   mode_t umask, struct store_batch *b);
/*
 * acl_fs_set: setxattr of an ACL xattr on ino (record r, to be written by
 * the caller in the same batch).  Validates val; for the access ACL sets
 * r's permission bits from it and clears setgid when the caller is
 * neither in the file's group nor root (as posix_acl_update_mode).
 * *drop tells the caller to delete the key instead of storing val (an
 * access ACL the mode says all of, or an empty one).  -EACCES for a
 * default ACL on a non-directory, -EOPNOTSUPP when the kernel did not
 * take ACLs (fs->posix_acl false).
 */
int acl_fs_set(struct fs *fs, uint64_t ino, const char *name, const void *val, size_t len,
	       const struct fs_caller *caller, struct inode_rec *r, bool *drop);
/*
 * acl_fs_chmod: after fs_setattr changed in's mode (under its lock): if
 * in has an access ACL, rewrite it to match and write it with the inode
 * record in one batch (in->dirty cleared).  Nothing to do otherwise.
 */
int acl_fs_chmod(struct fs *fs, struct fs_inode *in);

#endif
