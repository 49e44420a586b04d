/*
 * modes.c: who may read what lsmfs keeps on the backing disks (fs/SCHEMA.md
 * "Who may read the disks").
 *
 * Everything under <disk>/.lsmfs and in the store's directories is the
 * owner's alone (root's, normally): the store holds every name and the
 * bytes of small files, chunk files the rest, and a lock another user
 * could open is one that user could hold against a mount.  New files are
 * made 0600 and directories 0700 where they are made; this file narrows
 * what an older version made 0644 and 0755, whenever the disks are taken
 * for writing (diskset_open with an exclusive lock: a read-write mount,
 * fsck repairing, lsmfs-disk offline).  Narrowing .lsmfs/ itself closes
 * everything under it to new lookups by others; its entries and the
 * store's files are narrowed too, for whoever kept a directory open.
 * Section directories (mkfs made them 0755) are narrowed one by one, a
 * few thousand at most; chunk files were always 0600 and are not walked
 * (there may be millions).  Lock files are left to
 * store_lockfile, which replaces them rather than chmod them: a chmod
 * leaves a descriptor opened before it able to lock.
 *
 * Best effort: a mode that cannot be changed (a backing filesystem
 * without modes) changes nothing the filesystem keeps, so it fails
 * nothing.  No state, no locking beyond the caller's exclusive locks.
 */
#include "disks.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The owner's bits only, for one file or directory (symlinks, sockets
 * and the like left alone). */
static void narrow_at(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) || !(st.st_mode & 077))
		return;
	(void)fchmodat(dfd, name, st.st_mode & 07700, 0); /* best effort, above */
}

/* dir and every entry directly in it but its lock files; with sections,
 * the entries of the sections directory in it too. */
static void narrow_dir(const char *dir, bool sections)
{
	narrow_at(AT_FDCWD, dir);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, LSMFS_LOCK_FILE) || !strcmp(de->d_name, "LOCK"))
			continue;
		narrow_at(dirfd(d), de->d_name);
		if (sections && !strcmp(de->d_name, LSMFS_SECTIONS_DIR)) {
			char sub[PATH_MAX + 64];
			snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
			narrow_dir(sub, false);
		}
	}
	closedir(d);
}

void modes_narrow(const struct lsmfs_diskset *ds)
{
	for (uint32_t i = 0; i < ds->ndisks; i++) {
		if (!ds->paths[i])
			continue;
		char dir[PATH_MAX + 64];
		snprintf(dir, sizeof(dir), "%s/" LSMFS_DIR, ds->paths[i]);
		narrow_dir(dir, true);
	}
	for (uint32_t i = 0; i < ds->sb.meta_count; i++)
		if (!(ds->meta_absent & (1u << i)) && ds->meta_paths[i][0])
			narrow_dir(ds->meta_paths[i], false);
}
