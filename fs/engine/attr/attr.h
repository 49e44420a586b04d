/*
 * attr.h: the engine's attributes (fs/ARCHITECTURE.md): extended
 * attributes (xattr.c) and POSIX ACLs (acl.c, acl.h).  Uses the core only.
 */
#ifndef LSMFS_ENGINE_ATTR_H
#define LSMFS_ENGINE_ATTR_H

#include "core.h"
#include "acl.h"

/* xattr.c: caller decides trusted.* and the stats (NULL: privileged). */
int fs_setxattr(struct fs *fs, uint64_t ino, const char *name,
		const void *val, size_t len, int flags,
		const struct fs_caller *caller);
int fs_getxattr(struct fs *fs, uint64_t ino, const char *name, void **val,
		size_t *len, const struct fs_caller *caller);
int fs_listxattr(struct fs *fs, uint64_t ino, char **list, size_t *len,
		 const struct fs_caller *caller);
int fs_removexattr(struct fs *fs, uint64_t ino, const char *name,
		   const struct fs_caller *caller);
/* policy.c: where a file's chunks go (SCHEMA.md "Placement"), the
 * attribute POLICY_XATTR.  policy_check: 0, or -EINVAL for a value of it
 * that is none of the names.  policy_inherit: a new inode ino (record r)
 * made in dir gets dir's, into b.  policy_placement: in's (under its lock). */
#define POLICY_XATTR "user.lsmfs.placement"
#define POLICY_COPIES_XATTR "user.lsmfs.copies"
enum placement { PLACE_SPREAD, PLACE_TOGETHER };
int policy_check(const char *name, const void *val, size_t len);
int policy_inherit(struct fs *fs, struct fs_inode *dir, uint64_t ino, struct inode_rec *r,
		   struct store_batch *b);
int policy_placement(struct fs *fs, const struct fs_inode *in, enum placement *out);
/* A placement by its name ("spread", "together"): 0, or -EINVAL. */
int policy_parse(const char *name, enum placement *out);
/* The copies in's new chunks get (1, or up to CHUNK_MAX_COPIES). */
int policy_copies(struct fs *fs, const struct fs_inode *in, unsigned *out);
/* The root's copies: the filesystem's default (statfs's f_bavail). */
int policy_root_copies(struct fs *fs, unsigned *out);

/* Under the inode lock: remove security.capability, as a write or an
 * owner change must (the record is left to the caller). */
int xattr_drop_capability(struct fs *fs, struct fs_inode *in);

#endif
