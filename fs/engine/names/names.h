/*
 * names.h: the engine's names (fs/ARCHITECTURE.md): directory entries and
 * every namespace change (dir.c), paths of inodes for messages (ipath.c).
 * Uses the parts below it.
 */
#ifndef LSMFS_ENGINE_NAMES_H
#define LSMFS_ENGINE_NAMES_H

#include "data.h"

/* dir.c */
/* The generation the kernel is told for ino (file handles check it). */
uint64_t fs_generation(struct fs *fs, uint64_t ino);
/* "." and ".." name the inode itself and a directory's parent. */
int fs_lookup(struct fs *fs, uint64_t parent, const char *name,
	      struct stat *st);
/* The attributes of ino, and one more lookup the kernel holds of it (as
 * fs_lookup, for an entry READDIRPLUS hands out; fs_forget gives it
 * back): 0, or -ENOENT and the like. */
int fs_entry_ref(struct fs *fs, uint64_t ino, struct stat *st);
/* umask: the creator's, applied unless the parent has a default ACL. */
int fs_mknod(struct fs *fs, uint64_t parent, const char *name, mode_t mode,
	     dev_t rdev, uid_t uid, gid_t gid, mode_t umask,
	     const char *link_target, struct stat *st);
int fs_link(struct fs *fs, uint64_t ino, uint64_t parent, const char *name,
	    struct stat *st);
int fs_unlink(struct fs *fs, uint64_t parent, const char *name, bool dir);
int fs_rename(struct fs *fs, uint64_t parent, const char *name,
	      uint64_t newparent, const char *newname, unsigned flags);
int fs_readlink(struct fs *fs, uint64_t ino, char **target);
/* Call fill for each entry from offset off; fill returns non-zero when the
 * reply buffer is full (the entry was not taken). */
typedef int (*fs_fill_fn)(void *ctx, const char *name, uint64_t ino,
			  uint8_t type, uint64_t next_off);
int fs_readdir(struct fs *fs, uint64_t ino, uint64_t off, fs_fill_fn fill,
	       void *ctx);
int fs_check_name(const char *name);

int fs_fsyncdir(struct fs *fs, uint64_t ino);

/* ipath.c: the paths (malloc'd, into paths[n]) of inodes inos[n], from
 * the store's directory entries; an inode no path reaches gets a
 * description instead.  For messages: it scans every directory entry. */
int ipath_find(struct fs *fs, const uint64_t *inos, size_t n, char **paths);

#endif
