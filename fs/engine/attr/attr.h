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
/* Under the inode lock: remove security.capability, as a write or an
 * owner change must (the record is left to the caller). */
int xattr_drop_capability(struct fs *fs, struct fs_inode *in);

#endif
