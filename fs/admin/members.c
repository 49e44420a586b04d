/*
 * members.c: the disks of an open filesystem changing (fs/SCHEMA.md,
 * "Adding and removing disks"): a disk added, a disk detached once it
 * holds no section, the store moved to another disk (offline), and the
 * store's disk records brought in line with the superblocks.
 *
 * The superblocks of the highest generation say which disks are members
 * (diskset.c).  A change writes every member's superblock with the next
 * generation; the first of those writes is the commit point, so a crash
 * leaves either the old disk set or the new one, some superblocks merely
 * behind (rewritten at the next read-write open: members_reconcile).  The
 * store's `K` records and the disk count in `M fs` follow the superblocks;
 * a disk's `E` record (its error counters, devstats.c) goes with its `K`
 * record, and one left in a slot a disk takes goes too.
 *
 * One change at a time, and none while a section moves: fs->move_lock.
 * The per-disk state of a disk added while mounted (its sections fd, its
 * lock) is in place before its path is published (ds->paths[d], then
 * ds->ndisks, both with release stores; diskset_present reads them with
 * acquire).  A detached disk's path and fd stay allocated until fs_close,
 * so that a thread that read them just before still holds valid ones.
 */
#include "engine.h"
#include "admin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the store's disk records ---- */

static int disk_record(struct store_batch *b, const struct lsmfs_diskset *ds, uint32_t d)
{
	uint8_t k[KEY_MAX], v[DISK_REC_MAX];
	size_t vl = disk_rec_encode(ds->sb.disk_uuids[d], ds->paths[d], v);
	return vl ? store_batch_put(b, k, key_disk(k, d), v, vl) : -ENAMETOOLONG;
}

static int info_record(struct store_batch *b, const struct fs_info *fi)
{
	uint8_t k[KEY_MAX], v[FS_INFO_MAX];
	return store_batch_put(b, k, key_meta(k, META_FS), v, fs_info_encode(fi, v));
}

int members_reconcile(struct fs *fs)
{
	struct lsmfs_diskset *ds = fs->ds;
	char err[1024] = "";
	if (ds->stale) {
		uint64_t stale = ds->stale;
		int rc = diskset_write_supers(ds, stale, err, sizeof(err));
		if (rc) /* a superblock left behind is still read right */
			fs_logf(fs, "%s", err);
		else
			fs_logf(fs, "superblocks of disk set generation %" PRIu64
			" written where a change to the disks was cut short (disks %#" PRIx64 ")",
			ds->sb.generation, stale);
	}
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	int rc = 0, changes = 0;
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS && !rc; d++) {
		uint8_t k[KEY_MAX];
		size_t kl = key_disk(k, d);
		void *v;
		size_t vl;
		int got = store_get(fs->st, NULL, k, kl, &v, &vl);
		if (got < 0 && got != -ENOENT) {
			rc = got;
			break;
		}
		bool present = diskset_present(ds, d);
		if (!present && (ds->missing >> d & 1)) { /* a degraded mount: kept as it is */
			if (got == 0)
				free(v);
			continue;
		}
		uint8_t want[DISK_REC_MAX];
		size_t wl = present ? disk_rec_encode(ds->sb.disk_uuids[d], ds->paths[d], want) : 0;
		bool same = got == 0 && wl && vl == wl && !memcmp(v, want, wl);
		if (got == 0)
			free(v);
		if (present && !same) {
			rc = disk_record(b, ds, d);
			changes++;
		} else if (!present && got == 0) {
			rc = store_batch_delete(b, k, kl);
			changes++;
		}
	}
	if (!rc && fs->info.ndisks != ds->ndisks) {
		fs->info.ndisks = ds->ndisks;
		rc = info_record(b, &fs->info);
		changes++;
	}
	if (!rc && changes)
		rc = store_write(fs->st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	return rc;
}

/* Write the superblocks of the disks in mask from ds->sb, each marked
 * stale until written (and left so when it fails: no section moves then,
 * move_section).  *none: not one was written, as far as we know. */
static int write_supers(struct lsmfs_diskset *ds, uint64_t mask, bool *none, char *err,
			size_t errlen)
{
	ds->stale |= mask;
	int rc = diskset_write_supers(ds, mask, err, errlen);
	*none = (ds->stale & mask) == mask;
	return rc;
}

/* ---- adding a disk ---- */

/* Empty directories under <disk>/.lsmfs/sections go (a disk removed
 * earlier, an addition cut short); anything else there is refused. */
static int clear_sections(const char *disk, char *err, size_t errlen)
{
	char dir[PATH_MAX + 64];
	section_disk_dir(disk, dir, sizeof(dir));
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : fs_set_err(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0)
			rc = fs_set_err(err, errlen, -ENOTEMPTY,
				     "%s/%s: holds files of this filesystem from before (%s): remove "
				     "them first", dir, e->d_name, strerror(errno));
	}
	closedir(d);
	return rc;
}

/* An addition cut short before its superblock: .lsmfs holds at most an
 * empty sections directory, a lock file and a superblock's temp file. */
static bool add_leftover(const char *path)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", path, LSMFS_DIR);
	DIR *d = opendir(p);
	if (!d)
		return false;
	struct dirent *e;
	bool ok = true;
	while (ok && (e = readdir(d)))
		ok = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		     !strcmp(e->d_name, LSMFS_SECTIONS_DIR) || !strcmp(e->d_name, LSMFS_LOCK_FILE) ||
		     !strcmp(e->d_name, LSMFS_SUPER_FILE ".tmp");
	closedir(d);
	if (!ok)
		return false;
	section_disk_dir(path, p, sizeof(p));
	d = opendir(p);
	if (!d)
		return errno == ENOENT;
	while (ok && (e = readdir(d)))
		ok = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return ok;
}

/* May path become a disk of fs?  Empty (but for lost+found, as an ext4
 * mount point has), or with force anything but another filesystem's or a
 * member's .lsmfs.  A former member's leftover section directories go,
 * unless dry. */
static int check_new_disk(struct fs *fs, const char *path, bool force, bool dry, char *err,
			  size_t errlen)
{
	DIR *d = opendir(path);
	if (!d)
		return fs_set_err(err, errlen, -errno, "%s: %s", path, strerror(errno));
	struct dirent *e;
	char other[NAME_MAX + 1] = "";
	bool lsmfs = false;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, "lost+found"))
			continue;
		if (!strcmp(e->d_name, LSMFS_DIR))
			lsmfs = true;
		else if (!other[0])
			snprintf(other, sizeof(other), "%s", e->d_name);
	}
	closedir(d);
	if (lsmfs) {
		struct lsmfs_super sb;
		char why[1024];
		int rc = super_read(path, &sb, why, sizeof(why));
		char fsu[37];
		if (rc == -ENOENT) {
			/* An addition cut short before its superblock: taken again. */
			if (!add_leftover(path))
				return fs_set_err(err, errlen, -ENOTEMPTY, "%s: has a %s directory but "
					       "no superblock: remove %s/%s first", path, LSMFS_DIR,
					       path, LSMFS_DIR);
			goto contents;
		}
		if (rc)
			return fs_set_err(err, errlen, rc, "%s (remove %s/%s if it is no longer wanted)",
				       why, path, LSMFS_DIR);
		lsmfs_uuid_format(sb.fs_uuid, fsu);
		if (memcmp(sb.fs_uuid, fs->ds->sb.fs_uuid, 16))
			return fs_set_err(err, errlen, -EXDEV, "%s: is disk %u of another lsmfs "
				       "filesystem (%s): remove it from that one first, or delete "
				       "%s/%s if that filesystem is gone", path, sb.disk_index, fsu,
				       path, LSMFS_DIR);
		for (uint32_t i = 0; i < fs->ds->ndisks; i++)
			if (!super_slot_empty(&fs->ds->sb, i) &&
			    !memcmp(fs->ds->sb.disk_uuids[i], sb.disk_uuid, 16))
				return fs_set_err(err, errlen, -EEXIST, "%s: is already disk %u of "
					       "this filesystem", path, i);
		/* This filesystem's, no longer a member: removed earlier, or
		 * an addition cut short.  Taken again. */
		rc = dry ? 0 : clear_sections(path, err, errlen);
		if (rc)
			return rc;
	}
contents:
	if (other[0] && !force)
		return fs_set_err(err, errlen, -ENOTEMPTY, "%s: not empty (it has '%s'); give -f to "
			       "add it anyway (what is there stays, unseen by lsmfs)", path, other);
	return 0;
}

static bool locked_set(const struct lsmfs_diskset *ds)
{
	for (uint32_t d = 0; d < ds->ndisks; d++)
		if (diskset_present(ds, d) && ds->lock_fds[d] >= 0)
			return true;
	return false;
}

/* Keep a detached (or replaced) disk's path and fd until fs_close. */
static void keep_gone(struct fs *fs, char *path, int fd)
{
	void *n = realloc(fs->gone, (fs->ngone + 1) * sizeof(*fs->gone));
	if (n) {
		fs->gone = n;
		fs->gone[fs->ngone].path = path;
		fs->gone[fs->ngone].fd = fd;
		fs->ngone++;
	} /* else a leak of one path and fd: never a dangling pointer */
}

/* The addition itself, inside members_change_begin/end, check_outside
 * done; dry: only its checks, *index the slot it would take. */
static int add_locked(struct fs *fs, const char *given, bool force, const uint8_t *uuid, bool dry,
		      uint32_t *index, char *err, size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	char *path = realpath(given, NULL);
	if (!path)
		return fs_set_err(err, errlen, -errno, "%s: %s", given, strerror(errno));
	int rc = 0, sfd = -1;
	bool wrote_super = false;
	struct stat st;
	if (stat(path, &st) != 0) {
		rc = fs_set_err(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = fs_set_err(err, errlen, -ENOTDIR, "%s: not a directory", path);
		goto fail;
	}
	for (uint32_t d = 0; d < ds->ndisks; d++) {
		struct stat o;
		if (diskset_present(ds, d) && stat(ds->paths[d], &o) == 0 && o.st_dev == st.st_dev &&
		    o.st_ino == st.st_ino) {
			rc = fs_set_err(err, errlen, -EEXIST, "%s: is already disk %u of this filesystem",
				     path, d);
			goto fail;
		}
	}
	if ((rc = check_new_disk(fs, path, force, dry, err, errlen)))
		goto fail;

	/* The lowest empty slot: a removed disk's index is taken again only
	 * with a new UUID, which its retired superblock does not carry. */
	uint32_t k = 0;
	while (k < ds->ndisks && !super_slot_empty(&ds->sb, k))
		k++;
	if (k >= LSMFS_MAX_DISKS) {
		rc = fs_set_err(err, errlen, -ENOSPC, "the filesystem has %d disks, the most it can have",
			     LSMFS_MAX_DISKS);
		goto fail;
	}
	if (dry) {
		*index = k;
		free(path);
		return 0;
	}
	struct lsmfs_super nsb = ds->sb, dsb;
	nsb.generation++;
	if (uuid)
		memcpy(nsb.disk_uuids[k], uuid, 16);
	else if ((rc = lsmfs_uuid_generate(nsb.disk_uuids[k])))
		goto fail;
	if (k >= nsb.disk_count)
		nsb.disk_count = k + 1;
	dsb = nsb;
	dsb.disk_index = k;
	dsb.flags = 0;
	memcpy(dsb.disk_uuid, nsb.disk_uuids[k], 16);
	/* 1. The new disk's sections directory, then its superblock, of
	 *    the next generation (its write syncs .lsmfs/): not a member
	 *    until the others say so, or it is given. */
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", path, LSMFS_DIR);
	if (mkdir(p, 0700) != 0 && errno != EEXIST) {
		rc = fs_set_err(err, errlen, -errno, "%s: %s", p, strerror(errno));
		goto fail;
	}
	section_disk_dir(path, p, sizeof(p));
	if (mkdir(p, 0700) != 0 && errno != EEXIST) {
		rc = fs_set_err(err, errlen, -errno, "%s: %s", p, strerror(errno));
		goto fail;
	}
	sfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0 || fsync(sfd) != 0) {
		rc = fs_set_err(err, errlen, -errno, "%s: %s", p, strerror(errno));
		goto fail;
	}
	if ((rc = super_write(path, &dsb, err, errlen)))
		goto fail;
	wrote_super = true;
	if ((rc = lsmfs_fsync_dir(path))) { /* .lsmfs's entry, made now or by an attempt cut short */
		fs_set_err(err, errlen, rc, "%s: fsync: %s", path, strerror(-rc));
		goto fail;
	}
	if (locked_set(ds) && (rc = diskset_lock_disk(ds, k, path, 0, err, errlen)))
		goto fail;

	/* 2. The store: its disk record and count. */
	struct lsmfs_super old = ds->sb;
	if (fs->sections_fd[k] >= 0)
		keep_gone(fs, NULL, fs->sections_fd[k]);
	fs->sections_fd[k] = sfd;
	sfd = -1;
	__atomic_store_n(&fs->no_direct[k], fs->opt.direct ? 0 : 1, __ATOMIC_RELAXED);
	__atomic_store_n(&fs->disk_lost[k], 0, __ATOMIC_RELEASE);
	memcpy(ds->sb.disk_uuids[k], nsb.disk_uuids[k], 16);
	ds->sb.disk_count = nsb.disk_count;
	ds->sb.generation = nsb.generation;
	__atomic_store_n(&ds->paths[k], path, __ATOMIC_RELEASE);
	if (k >= ds->ndisks)
		__atomic_store_n(&ds->ndisks, k + 1, __ATOMIC_RELEASE);
	struct fs_info fi = fs->info;
	fi.ndisks = ds->ndisks;
	struct store_batch *b = store_batch_new();
	rc = b ? disk_record(b, ds, k) : -ENOMEM;
	if (!rc)
		rc = info_record(b, &fi);
	if (!rc) /* counters a disk that had the slot may have left */
		rc = devstats_drop(fs, k, b);
	if (!rc)
		rc = store_write(fs->st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	if (rc) {
		/* Not committed: the disk goes again. */
		__atomic_store_n(&ds->paths[k], NULL, __ATOMIC_RELEASE);
		ds->ndisks = old.disk_count;
		ds->sb = old;
		keep_gone(fs, path, ds->lock_fds[k]); /* diskset_mark may hold it: closed at fs_close */
		path = NULL;
		ds->lock_fds[k] = -1;
		fs_set_err(err, errlen, rc, "%s: cannot record the new disk in the metadata store: %s",
			ds->meta_dir, strerror(-rc));
		goto fail;
	}
	__atomic_store_n(&fs->info.ndisks, fi.ndisks, __ATOMIC_RELAXED);
	/* 3. Every other member's superblock.  One left behind keeps its
	 *    stale bit, and no section moves until it is rewritten (a disk
	 *    the old list lacks must hold none: move_section). */
	*index = k;
	bool none;
	int r = write_supers(ds, diskset_members(ds) & ~(1ull << k), &none, err, errlen);
	if (r) {
		fs_logf(fs, "disk %u (%s) added, but %s: no section moves until that superblock is "
			"rewritten (at the next mount)", k, path, err);
		return fs_set_err(err, errlen, r, "disk %u added, but the superblock of another disk "
			       "could not be written (see the daemon's log): no section moves until "
			       "the next mount rewrites it", k);
	}
	return 0;
fail:
	if (sfd >= 0)
		close(sfd);
	if (wrote_super && path) {
		/* Best effort, synced: a leftover of our own is taken again
		 * (check_new_disk). */
		char sp[PATH_MAX + 64];
		snprintf(sp, sizeof(sp), "%s/%s/%s", path, LSMFS_DIR, LSMFS_SUPER_FILE);
		(void)unlink(sp);
		snprintf(sp, sizeof(sp), "%s/%s", path, LSMFS_DIR);
		(void)lsmfs_fsync_dir(sp);
	}
	free(path);
	return rc;
}

int members_change_begin(struct fs *fs, char *err, size_t errlen)
{
	if (pthread_mutex_trylock(&fs->move_lock) != 0)
		return fs_set_err(err, errlen, -EBUSY, "a section is moving");
	if (!fs_writable(fs)) {
		pthread_mutex_unlock(&fs->move_lock);
		return fs_set_err(err, errlen, -EROFS, "mounted read-only");
	}
	return 0;
}

void members_change_end(struct fs *fs)
{
	pthread_mutex_unlock(&fs->move_lock);
}

/* Is the directory fd, or one of its ancestors, (dev, ino)?  Walked up by
 * "..", so neither symlinks nor ".." in the path given lead around it. */
static bool below(int fd, dev_t dev, ino_t ino)
{
	int cur = dup(fd);
	bool found = false;
	while (cur >= 0 && !found) {
		struct stat st, up;
		int parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fstat(cur, &st) != 0 || parent < 0 || fstat(parent, &up) != 0) {
			if (parent >= 0)
				close(parent);
			break;
		}
		found = st.st_dev == dev && st.st_ino == ino;
		close(cur);
		cur = parent;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino) /* the root */
			break;
	}
	if (cur >= 0)
		close(cur);
	return found;
}

/* A new disk must lie outside the filesystem and its own files: not on
 * the mount (its chunk files would be files of the filesystem itself,
 * each write waiting on the daemon making it: a deadlock), not inside a
 * member's .lsmfs (its sections, the store) nor inside a copy of the
 * store (a --meta directory).  Checked before the new disk is locked and
 * before anything is written: only the resolved path is looked at. */
static int check_outside(struct fs *fs, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st, o;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return fs_set_err(err, errlen, -e, "%s: %s", path, strerror(e));
	}
	int rc = 0;
	/* Everything on the mount has the FUSE connection's device. */
	if (fs->se && fs->mountpoint && stat(fs->mountpoint, &o) == 0 && o.st_dev == st.st_dev)
		rc = fs_set_err(err, errlen, -EINVAL, "%s: is on the filesystem's own mount (%s): "
			     "a disk must lie outside it", path, fs->mountpoint);
	for (uint32_t d = 0; !rc && d < fs->ds->ndisks; d++) {
		char dir[PATH_MAX + 16];
		if (!diskset_present(fs->ds, d))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", fs->ds->paths[d], LSMFS_DIR);
		if (stat(dir, &o) == 0 && below(fd, o.st_dev, o.st_ino))
			rc = fs_set_err(err, errlen, -EINVAL, "%s: is inside %s (disk %u's own files): a "
				     "disk must lie outside every member's %s", path, dir, d,
				     LSMFS_DIR);
	}
	for (uint32_t c = 0; !rc && c < fs->ds->sb.meta_count; c++)
		if (!(fs->ds->meta_absent & (1u << c)) && stat(fs->ds->meta_paths[c], &o) == 0 &&
		    below(fd, o.st_dev, o.st_ino))
			rc = fs_set_err(err, errlen, -EINVAL, "%s: is inside %s (copy %u of the metadata "
				     "store): a disk must lie outside it", path,
				     fs->ds->meta_paths[c], c);
	close(fd);
	return rc;
}

int members_add_locked(struct fs *fs, const char *path, bool force, const uint8_t *uuid, bool dry,
		       uint32_t *index, char *err, size_t errlen)
{
	char *real = realpath(path, NULL);
	if (!real)
		return fs_set_err(err, errlen, -errno, "%s: %s", path, strerror(errno));
	int rc = check_outside(fs, real, err, errlen);
	free(real);
	return rc ? rc : add_locked(fs, path, force, uuid, dry, index, err, errlen);
}

int members_add(struct fs *fs, const char *path, bool force, uint32_t *index, char *err,
		size_t errlen)
{
	int rc = members_change_begin(fs, err, errlen);
	if (rc)
		return rc;
	rc = members_add_locked(fs, path, force, NULL, false, index, err, errlen);
	members_change_end(fs);
	return rc;
}

/* ---- detaching a disk ---- */

/* What a detached disk keeps: its superblock, marked retired. */
static void retire(struct fs *fs, uint32_t d, const char *path, const struct lsmfs_super *old)
{
	char p[PATH_MAX + 64], why[PATH_MAX + 1200];
	int rc = clear_sections(path, why, sizeof(why));
	section_disk_dir(path, p, sizeof(p));
	if (!rc && rmdir(p) != 0 && errno != ENOENT) {
		snprintf(why, sizeof(why), "%s: %s", p, strerror(errno));
		rc = -errno;
	}
	if (rc)
		fs_logf(fs, "disk %u detached; %s", d, why);
	snprintf(p, sizeof(p), "%s/%s/%s", path, LSMFS_DIR, LSMFS_META_DIR);
	if (strcmp(p, fs->ds->meta_dir) && (rc = fs_remove_flat(p)))
		fs_logf(fs, "disk %u detached; an old copy of the metadata store in %s: %s", d, p,
			strerror(-rc));
	snprintf(p, sizeof(p), "%s/%s/%s", path, LSMFS_DIR, LSMFS_LOCK_FILE);
	(void)unlink(p); /* ours, and no one else's to take now */
	copies_forget(path);
	struct lsmfs_super sb = *old;
	sb.disk_index = d;
	memcpy(sb.disk_uuid, old->disk_uuids[d], 16);
	sb.generation = fs->ds->sb.generation;
	sb.flags = SUPER_RETIRED;
	if (super_write(path, &sb, why, sizeof(why)))
		fs_logf(fs, "disk %u detached, but its superblock could not be marked retired: %s "
			"(it is still refused as a member: the others no longer list it)", d, why);
	snprintf(p, sizeof(p), "%s/%s", path, LSMFS_DIR);
	(void)lsmfs_fsync_dir(p);
}

int members_detach_locked(struct fs *fs, uint32_t d, char *err, size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	/* A disk missing from a degraded mount: only once lost.c gave its
	 * sections away. */
	bool missing = d < LSMFS_MAX_DISKS && (ds->missing >> d & 1);
	if (!diskset_present(ds, d) && !missing)
		return fs_set_err(err, errlen, -ENOENT, "no disk %u", d);
	/* Missing, or found replaced (diskwatch.c): whatever its path leads
	 * to now is not this disk, and is left alone. */
	bool gone = missing || !disk_usable(fs, d);
	uint32_t held = 0;
	if (!(diskset_members(ds) & ~(1ull << d)))
		return fs_set_err(err, errlen, -EBUSY, "disk %u is the filesystem's last disk", d);
	for (uint32_t c = 0; c < ds->sb.meta_count; c++)
		if (ds->sb.meta[c].disk == d)
			return fs_set_err(err, errlen, -EBUSY, "disk %u holds a copy of the metadata store "
				       "(%s): it must be moved first, with the filesystem unmounted", d,
				       ds->meta_paths[c]);
	for (uint32_t s = 0; s < fs->info.sections; s++)
		held += section_disk_of(fs, s) == d;
	if (held)
		return fs_set_err(err, errlen, -EBUSY, "disk %u still holds %u section%s: move them "
			       "first (lsmfs-disk remove does)", d, held, held == 1 ? "" : "s");
	/* Only now, for a disk that is leaving: a leftover of its own that
	 * cannot be removed is put aside (move.c) and no longer holds the
	 * detach up. */
	struct section_move m;
	int rc = section_move_get(fs->st, &m);
	if (rc == 1 && (rc = move_recover(fs, d)) == 0)
		rc = section_move_get(fs->st, &m);
	if (rc)
		return fs_set_err(err, errlen, rc < 0 ? rc : -EBUSY, "a section move is still recorded "
			       "(%s): see the daemon's log", rc < 0 ? strerror(-rc) : "its old copy");

	/* 1. Every other member's superblock, without d: the commit. */
	struct lsmfs_super old = ds->sb;
	char *path = ds->paths[d];
	memset(ds->sb.disk_uuids[d], 0, 16);
	ds->sb.generation++;
	while (ds->sb.disk_count > 1 && super_slot_empty(&ds->sb, ds->sb.disk_count - 1))
		ds->sb.disk_count--;
	if (ds->sb.disk_index == d)
		for (uint32_t i = 0; i < ds->sb.disk_count; i++)
			if (!super_slot_empty(&ds->sb, i)) {
				ds->sb.disk_index = i;
				memcpy(ds->sb.disk_uuid, ds->sb.disk_uuids[i], 16);
				break;
			}
	__atomic_store_n(&ds->paths[d], NULL, __ATOMIC_RELEASE);
	bool none;
	rc = write_supers(ds, diskset_members(ds), &none, err, errlen);
	if (rc && none) {
		/* Not one written (as far as we know: a failed fsync after
		 * the rename may still have left one): d stays, and the stale
		 * bits stay set, so no section moves until a mount settles
		 * which list is on the disks. */
		ds->sb = old;
		__atomic_store_n(&ds->paths[d], path, __ATOMIC_RELEASE);
		return rc;
	}
	if (rc)
		fs_logf(fs, "disk %u detached, but %s: that superblock is rewritten at the next "
			"mount", d, err);
	__atomic_and_fetch(&ds->missing, ~(1ull << d), __ATOMIC_RELEASE);
	__atomic_store_n(&ds->ndisks, ds->sb.disk_count, __ATOMIC_RELEASE);
	/* 2. The store follows (members_reconcile would, at the next mount). */
	fs->info.ndisks = ds->ndisks;
	struct store_batch *b = store_batch_new();
	uint8_t k[KEY_MAX];
	int r = b ? store_batch_delete(b, k, key_disk(k, d)) : -ENOMEM;
	if (!r)
		r = info_record(b, &fs->info);
	if (!r) /* its error counters go with it */
		r = devstats_drop(fs, d, b);
	if (!r)
		r = store_write(fs->st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	if (r)
		fs_logf(fs, "disk %u detached; its records in the metadata store go at the next "
			"mount (%s)", d, strerror(-r));
	/* 3. The disk itself: emptied, its superblock retired, let go. */
	if (!gone)
		retire(fs, d, path, &old);
	/* Its lock (on a file retire() unlinked) and path go at fs_close:
	 * diskset_mark may be writing to the fd now.  sections_fd[d] stays
	 * until then too, or until a new disk takes the slot. */
	keep_gone(fs, path, ds->lock_fds[d]);
	ds->lock_fds[d] = -1;
	return 0;
}

int members_detach(struct fs *fs, uint32_t d, char *err, size_t errlen)
{
	int rc = members_change_begin(fs, err, errlen);
	if (rc)
		return rc;
	rc = members_detach_locked(fs, d, err, errlen);
	members_change_end(fs);
	return rc;
}

void members_free(struct fs *fs)
{
	for (size_t i = 0; i < fs->ngone; i++) {
		free(fs->gone[i].path);
		if (fs->gone[i].fd >= 0)
			close(fs->gone[i].fd);
	}
	free(fs->gone);
	fs->gone = NULL;
	fs->ngone = 0;
}
