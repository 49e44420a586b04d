/*
 * copies.c: what the daemon does about the metadata store's copies
 * (fs/SCHEMA.md "Store copies"): a copy that is missing at mount, comes
 * back, fails under a write, or is added or removed online.  The copy
 * states file itself is copystate.c's.
 *
 * A read-write mount with a disk missing takes the copies here for the
 * newest only when the states show the missing ones behind, or when told
 * (force_degraded; copies_prepare).
 *
 * Runtime: the store calls copies_failed (store_options.copy_failed)
 * before a write that a dropped copy lacks is acknowledged; it marks the
 * copy stale on the disks, so that the next mount never takes it for
 * current.  fs->copies_lock serialises those writes; it is never held
 * across a store call that may fail a copy (the store calls
 * copies_failed with its mirror's lock held: that order, never the other).
 */
#include "engine.h"
#include "admin.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <dirent.h>
#include <unistd.h>
#include <xxhash.h>

#include "schema.h"

/* ---- the daemon ---- */

int copies_failed(void *ctx, size_t k, int err, const char *what)
{
	struct fs *fs = ctx;
	struct lsmfs_diskset *ds = fs->ds;
	char e[PATH_MAX + 128] = "";
	pthread_mutex_lock(&fs->copies_lock);
	uint32_t c = fs_sb_copy(fs, k);
	if (c == UINT32_MAX) {
		/* Being removed (copies_remove marked it stale first). */
		pthread_mutex_unlock(&fs->copies_lock);
		return 0;
	}
	uint32_t before = ds->sb.meta[c].flags;
	ds->sb.meta[c].flags |= LSMFS_META_STALE;
	int rc = copies_write(ds, e, sizeof(e));
	if (rc)
		ds->sb.meta[c].flags = before;
	pthread_mutex_unlock(&fs->copies_lock);
	if (!rc) /* else not dropped yet: the store retries, or keeps it (a full disk) */
		__atomic_store_n(&fs->copies_degraded, true, __ATOMIC_RELEASE);
	if (rc)
		fs_logf(fs, "metadata store copy %u (%s) failed (%s: %s) and cannot be marked stale "
			"(%s)", c, ds->meta_paths[c], what, strerror(-err), e);
	else
		fs_logf(fs, "metadata store copy %u (%s) failed (%s: %s): marked stale; the "
			"filesystem goes on DEGRADED with the other copies (lsmfs-disk restores the "
			"copy count)", c, ds->meta_paths[c], what, strerror(-err));
	return rc;
}

/* backup_remove_parts: what it found, logged. */
static void part_removed(void *ctx, const char *path, int err)
{
	struct fs *fs = ctx;
	if (err)
		fs_logf(fs, "%s: left by a restore killed while it saved the store aside; cannot "
			"remove it (%s): remove it by hand", path, strerror(-err));
	else
		fs_logf(fs, "%s: left by a restore killed while it saved the store aside: removed",
			path);
}

int copies_prepare(struct fs *fs, struct store_options *so, const char **dirs, char *err,
		   size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	bool rw = !so->read_only;
	pthread_mutex_init(&fs->copies_lock, NULL);
	fs->copies_lock_init = true;
	uint32_t marked = 0;
	for (uint32_t i = 0; rw && i < ds->sb.meta_count; i++) {
		if (!(ds->meta_absent & (1u << i)))
			continue;
		const struct lsmfs_meta_copy *c = &ds->sb.meta[i];
		/* A disk's copy whose directory is gone (the disk replaced,
		 * or the directory removed): made again, empty, and filled
		 * as a stale copy is. */
		if (c->disk != LSMFS_META_ON_DIR && ds->meta_paths[i][0] &&
		    (mkdir(ds->meta_paths[i], 0700) == 0 || errno == EEXIST)) {
			ds->meta_absent &= ~(1u << i);
			if (!(c->flags & LSMFS_META_STALE)) {
				ds->sb.meta[i].flags |= LSMFS_META_STALE;
				marked |= 1u << i;
			}
			fs_logf(fs, "metadata store copy %u: %s was missing: made again, and filled "
				"from the other copies", i, ds->meta_paths[i]);
			continue;
		}
		if (!(c->flags & LSMFS_META_STALE)) {
			ds->sb.meta[i].flags |= LSMFS_META_STALE;
			marked |= 1u << i;
		}
	}
	/* A copy missing that the states here do not call stale may have
	 * moved on without these copies: a mount of it alone, on disks not
	 * given here, writes its states there only.  (With every disk here,
	 * any such mount wrote them where copies_load read them.)  Taking
	 * the copies here for the newest is the user's word to give. */
	uint32_t unsure = ds->missing ? marked & ds->meta_absent : 0;
	if (unsure && !ds->force) {
		for (uint32_t i = 0; i < ds->sb.meta_count; i++)
			if (marked & (1u << i))
				ds->sb.meta[i].flags &= ~LSMFS_META_STALE;
		uint32_t i = (uint32_t)__builtin_ctz(unsure);
		char where[sizeof(ds->sb.meta[0].dir) + 32];
		if (ds->sb.meta[i].disk == LSMFS_META_ON_DIR)
			snprintf(where, sizeof(where), "%s", ds->sb.meta[i].dir);
		else
			snprintf(where, sizeof(where), "on disk %u", ds->sb.meta[i].disk);
		snprintf(err, errlen, "copy %u of the metadata store (%s, missing) is not known "
			 "to be behind the copies here: a mount of it without them may have written "
			 "what they lack.  Mount read-only (-o degraded,ro), bring its disk back, or "
			 "take the copies here for the newest (-o degraded,force_degraded: the two "
			 "then diverge, and fsck.lsmfs --use-copy keeps one)", i, where);
		return -EROFS;
	}
	if (unsure)
		/* The numbers this mount hands out must not meet those a mount of
		 * the missing copy may hand out: both start from the same counter
		 * (fs_mount moves it on, SCHEMA.md "Store copies"). */
		fs->ino_branch = 1 + (ds->meta_primary < ds->sb.meta_count ? ds->meta_primary : 0);
	if (marked) {
		/* Before the store writes anything those copies lack. */
		char e[PATH_MAX + 128] = "";
		int rc = copies_write(ds, e, sizeof(e));
		if (rc) {
			snprintf(err, errlen, "metadata store copies missing (%#x) cannot be marked "
				 "stale: %s", marked, e);
			return rc;
		}
	}
	if (rw)
		backup_remove_parts(ds, part_removed, fs);
	uint32_t n = 0;
	unsigned stale = 0;
	int rc = diskset_store_copies(ds, dirs, fs->store_which, &n, &stale);
	if (rc) {
		snprintf(err, errlen, "no copy of the metadata store that is up to date is there");
		return rc;
	}
	fs->store_ncopies = n;
	for (uint32_t i = 0; i < ds->sb.meta_count; i++)
		if (ds->meta_absent & (1u << i))
			fs_logf(fs, "metadata store copy %u (%s) is missing: the filesystem is "
				"DEGRADED (%u of %u copies)", i,
				ds->meta_paths[i][0] ? ds->meta_paths[i] : "its disk is missing", n,
				ds->sb.meta_count);
	if (unsure)
		fs_logf(fs, "the copies of the metadata store here are taken for the newest "
			"(force_degraded): copies %#x, missing, are marked stale, and whatever a mount "
			"of them alone wrote is lost unless fsck.lsmfs --use-copy keeps it", unsure);
	if (!rw)
		for (uint32_t i = 0; i < ds->sb.meta_count; i++)
			if ((ds->meta_absent & (1u << i)) && ds->missing &&
			    !(ds->sb.meta[i].flags & LSMFS_META_STALE))
				fs_logf(fs, "read-only: metadata store copy %u, missing, is not known to "
					"be behind the copies here, which may be older than it", i);
	if (n < ds->sb.meta_count)
		__atomic_store_n(&fs->copies_degraded, true, __ATOMIC_RELEASE);
	if (rw) {
		/* Also with one copy: one added later may fail. */
		so->copy_failed = copies_failed;
		so->copy_ctx = fs;
	}
	if (n > 1) {
		so->copies = dirs + 1;
		so->ncopies = n - 1;
		so->copies_stale = stale;
	}
	return 0;
}

void copies_opened(struct fs *fs)
{
	struct lsmfs_diskset *ds = fs->ds;
	if (fs->opt.read_only)
		return;
	pthread_mutex_lock(&fs->copies_lock);
	uint32_t cleared = 0;
	for (size_t k = 0; k < fs->store_ncopies; k++) {
		uint32_t c = fs_sb_copy(fs, k);
		struct store_copy_info ci;
		if (!(ds->sb.meta[c].flags & LSMFS_META_STALE) || store_copy_info(fs->st, k, &ci) ||
		    !ci.live)
			continue;
		ds->sb.meta[c].flags &= ~LSMFS_META_STALE;
		cleared |= 1u << c;
	}
	if (cleared) {
		char e[PATH_MAX + 128] = "";
		int rc = copies_write(ds, e, sizeof(e));
		if (rc) {
			for (uint32_t c = 0; c < ds->sb.meta_count; c++)
				if (cleared & (1u << c))
					ds->sb.meta[c].flags |= LSMFS_META_STALE;
			fs_logf(fs, "metadata store copies brought up to date (%#x), but they stay "
				"marked stale: %s", cleared, e);
		} else {
			for (uint32_t c = 0; c < ds->sb.meta_count; c++)
				if (cleared & (1u << c))
					fs_logf(fs, "metadata store copy %u (%s) was stale: brought up to "
						"date", c, ds->meta_paths[c]);
		}
	}
	pthread_mutex_unlock(&fs->copies_lock);
}

/* ---- adding and removing copies (online, or offline through fs_control) ---- */

/* Is a copy missing, stale or dropped?  copies_lock held. */
static bool degraded_now(struct fs *fs)
{
	struct lsmfs_diskset *ds = fs->ds;
	for (uint32_t c = 0; c < ds->sb.meta_count; c++)
		if ((ds->meta_absent & (1u << c)) || (ds->sb.meta[c].flags & LSMFS_META_STALE))
			return true;
	for (uint32_t k = 0; k < fs->store_ncopies; k++) {
		struct store_copy_info ci;
		if (fs->store_which[k] != UINT32_MAX && store_copy_info(fs->st, k, &ci) == 0 &&
		    !ci.live)
			return true;
	}
	return false;
}

/* The superblocks with ds->sb's copy list, next generation.  0 when at
 * least one was written (the commit). */
static int write_supers(struct fs *fs, char *err, size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	ds->sb.generation++;
	uint64_t all = diskset_members(ds);
	ds->stale |= all;
	int rc = diskset_write_supers(ds, all, err, errlen);
	if (rc && (ds->stale & all) != all) {
		fs_logf(fs, "metadata store copies changed, but %s: that superblock is rewritten at "
			"the next mount", err);
		rc = 0;
	}
	return rc;
}

/* Bytes in the store's files (the primary copy's). */
static uint64_t store_bytes(struct fs *fs)
{
	char home[sizeof(fs->ds->meta_dir)];
	copies_home(fs, home, sizeof(home));
	DIR *d = opendir(home);
	uint64_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			n += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	return n;
}

static int add_locked(struct fs *fs, uint32_t d, uint32_t *copy, char *err, size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	if (!disk_usable(fs, d))
		return fs_set_err(err, errlen, -ENOENT, "no usable disk %u", d);
	if (ds->sb.meta_count >= LSMFS_MAX_META_COPIES)
		return fs_set_err(err, errlen, -ENOSPC, "the store has %u copies already (at most %d)",
			       ds->sb.meta_count, LSMFS_MAX_META_COPIES);
	for (uint32_t c = 0; c < ds->sb.meta_count; c++)
		if (ds->sb.meta[c].disk == d)
			return fs_set_err(err, errlen, -EEXIST, "disk %u holds copy %u of the store already",
				       d, c);
	if (store_copy_count(fs->st) >= STORE_MAX_COPIES)
		return fs_set_err(err, errlen, -ENOSPC, "too many copies added since the mount: "
			       "remount first");
	char path[sizeof(ds->meta_paths[0])];
	int n = snprintf(path, sizeof(path), "%s/" LSMFS_DIR "/" LSMFS_META_DIR, ds->paths[d]);
	if (n < 0 || (size_t)n >= sizeof(path))
		return fs_set_err(err, errlen, -ENAMETOOLONG, "%s: path too long", ds->paths[d]);
	/* Room for the store as it is, its reserve and a memtable's flush. */
	uint64_t need = store_bytes(fs) + 2 * (uint64_t)FS_STORE_RESERVE + (16u << 20), room = 0;
	struct statvfs sv;
	if (fstatvfs(fs->sections_fd[d], &sv) == 0)
		room = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (room < need)
		return fs_set_err(err, errlen, -ENOSPC, "disk %u has %" PRIu64 " bytes free; a copy of "
			       "the store needs %" PRIu64, d, room, need);
	/* A leftover (a copy removed, or dropped): ours, gone. */
	int rc = fs_remove_flat(path);
	if (rc)
		return fs_set_err(err, errlen, rc, "%s: an old copy cannot be removed: %s", path,
			       strerror(-rc));
	/* 1. The superblocks name it; the copy states do not, so it is stale
	 *    (filled at the next mount) until 3. */
	pthread_mutex_lock(&fs->copies_lock);
	/* The copy states file must exist for "a copy it does not name is
	 * stale" to hold (without one, every copy is current: mkfs). */
	char e0[PATH_MAX + 128] = "";
	if (!ds->copies_epoch && (rc = copies_write(ds, e0, sizeof(e0)))) {
		pthread_mutex_unlock(&fs->copies_lock);
		return fs_set_err(err, errlen, rc, "%s", e0);
	}
	struct lsmfs_super old = ds->sb;
	uint32_t m = ds->sb.meta_count;
	ds->sb.meta[m].disk = d;
	ds->sb.meta[m].dir[0] = 0;
	ds->sb.meta[m].flags = LSMFS_META_STALE;
	ds->sb.meta_count++;
	memcpy(ds->meta_paths[m], path, (size_t)n + 1);
	ds->meta_absent |= 1u << m; /* not open yet */
	rc = write_supers(fs, err, errlen);
	if (rc) {
		ds->sb = old;
		pthread_mutex_unlock(&fs->copies_lock);
		return rc;
	}
	pthread_mutex_unlock(&fs->copies_lock);
	/* 2. Filled while in use. */
	size_t k;
	rc = store_copy_add(fs->st, path, &k);
	if (rc) {
		fs_set_err(err, errlen, rc, "%s: filling the new copy: %s", path, strerror(-rc));
		fs_logf(fs, "%s (it stays listed, stale: the next mount fills it, or remove it)",
			err);
		return rc;
	}
	/* 3. Up to date (unless it failed since). */
	pthread_mutex_lock(&fs->copies_lock);
	struct store_copy_info ci;
	if (k >= STORE_MAX_COPIES || store_copy_info(fs->st, k, &ci) || !ci.live) {
		pthread_mutex_unlock(&fs->copies_lock);
		return fs_set_err(err, errlen, -EIO, "%s: the new copy failed while it was filled (it "
			       "stays listed, stale)", path);
	}
	fs->meta_fd[k] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fs->store_which[k] = m;
	__atomic_store_n(&fs->store_ncopies, (uint32_t)k + 1, __ATOMIC_RELEASE);
	ds->meta_absent &= ~(1u << m);
	ds->sb.meta[m].flags = 0;
	char e[PATH_MAX + 128] = "";
	rc = copies_write(ds, e, sizeof(e));
	if (rc)
		ds->sb.meta[m].flags = LSMFS_META_STALE;
	bool degraded = degraded_now(fs);
	pthread_mutex_unlock(&fs->copies_lock);
	if (rc)
		return fs_set_err(err, errlen, rc, "copy %u is whole but cannot be marked so: %s", m, e);
	__atomic_store_n(&fs->copies_degraded, degraded, __ATOMIC_RELEASE);
	fs_logf(fs, "metadata store copy %u added on disk %u (%s)", m, d, path);
	*copy = m;
	return 0;
}

int copies_add(struct fs *fs, uint32_t d, uint32_t *copy, char *err, size_t errlen)
{
	int rc = members_change_begin(fs, err, errlen);
	if (rc)
		return rc;
	rc = add_locked(fs, d, copy, err, errlen);
	members_change_end(fs);
	return rc;
}

static int remove_locked(struct fs *fs, uint32_t c, char *err, size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	if (c >= ds->sb.meta_count)
		return fs_set_err(err, errlen, -ENOENT, "no copy %u of the store", c);
	/* Its store number, and whether another whole copy stays. */
	size_t k = SIZE_MAX, others = 0;
	pthread_mutex_lock(&fs->copies_lock);
	for (size_t i = 0; i < fs->store_ncopies; i++) {
		struct store_copy_info ci;
		if (store_copy_info(fs->st, i, &ci) || !ci.live)
			continue;
		if (fs->store_which[i] == c)
			k = i;
		else if (fs->store_which[i] != UINT32_MAX &&
			 !(ds->sb.meta[fs->store_which[i]].flags & LSMFS_META_STALE))
			others++;
	}
	if (!others) {
		pthread_mutex_unlock(&fs->copies_lock);
		return fs_set_err(err, errlen, -EBUSY, "copy %u is the store's last up-to-date copy", c);
	}
	char path[sizeof(ds->meta_paths[0])];
	snprintf(path, sizeof(path), "%s", ds->meta_paths[c]);
	/* 1. Stale first: from the moment it is written no more, a crash must
	 *    not find it taken for current. */
	uint32_t before = ds->sb.meta[c].flags;
	ds->sb.meta[c].flags |= LSMFS_META_STALE;
	char e[PATH_MAX + 128] = "";
	int rc = copies_write(ds, e, sizeof(e));
	if (rc) {
		ds->sb.meta[c].flags = before;
		pthread_mutex_unlock(&fs->copies_lock);
		return fs_set_err(err, errlen, rc, "marking copy %u stale: %s", c, e);
	}
	pthread_mutex_unlock(&fs->copies_lock);
	/* 2. Written no more.  (Outside copies_lock: a copy failing meanwhile
	 * calls copies_failed, which takes it, from inside the store.) */
	rc = k != SIZE_MAX ? store_copy_remove(fs->st, k) : 0;
	pthread_mutex_lock(&fs->copies_lock);
	if (rc) {
		/* The others failed meanwhile: it stays, and stays written. */
		ds->sb.meta[c].flags = before;
		(void)copies_write(ds, e, sizeof(e));
		pthread_mutex_unlock(&fs->copies_lock);
		return fs_set_err(err, errlen, rc, "copy %u is now the store's last up-to-date copy", c);
	}
	/* 3. Out of the superblocks. */
	struct lsmfs_super old = ds->sb;
	char oldpaths[LSMFS_MAX_META_COPIES][sizeof(ds->meta_paths[0])];
	memcpy(oldpaths, ds->meta_paths, sizeof(oldpaths));
	uint32_t oldabsent = ds->meta_absent;
	for (uint32_t i = c; i + 1 < ds->sb.meta_count; i++) {
		ds->sb.meta[i] = ds->sb.meta[i + 1];
		memcpy(ds->meta_paths[i], ds->meta_paths[i + 1], sizeof(ds->meta_paths[i]));
	}
	ds->sb.meta_count--;
	uint32_t low = ds->meta_absent & ((1u << c) - 1), high = ds->meta_absent >> (c + 1);
	ds->meta_absent = low | high << c;
	rc = write_supers(fs, err, errlen);
	if (rc) {
		/* Nothing written: it stays a copy, stale (the next mount
		 * fills it). */
		ds->sb = old;
		memcpy(ds->meta_paths, oldpaths, sizeof(oldpaths));
		ds->meta_absent = oldabsent;
		pthread_mutex_unlock(&fs->copies_lock);
		return rc;
	}
	for (size_t i = 0; i < fs->store_ncopies; i++) {
		if (fs->store_which[i] == c)
			fs->store_which[i] = UINT32_MAX;
		else if (fs->store_which[i] != UINT32_MAX && fs->store_which[i] > c)
			fs->store_which[i]--;
	}
	/* The copy the daemon keeps its socket and statistics in. */
	bool moved_home = c == ds->meta_primary;
	if (ds->meta_primary > c && ds->meta_primary != UINT32_MAX)
		ds->meta_primary--;
	if (moved_home) {
		ds->meta_primary = UINT32_MAX;
		for (uint32_t i = 0; i < ds->sb.meta_count && ds->meta_primary == UINT32_MAX; i++)
			if (!(ds->meta_absent & (1u << i)) && !(ds->sb.meta[i].flags & LSMFS_META_STALE))
				ds->meta_primary = i;
		if (ds->meta_primary == UINT32_MAX) {
			/* None current left to serve from (they failed meanwhile):
			 * the socket and statistics stay where they are. */
			moved_home = false;
			ds->meta_primary = 0;
		} else {
			snprintf(ds->meta_dir, sizeof(ds->meta_dir), "%s",
				 ds->meta_paths[ds->meta_primary]);
		}
	}
	(void)copies_write(ds, e, sizeof(e)); /* its entry goes; nothing depends on it */
	__atomic_store_n(&fs->copies_degraded, degraded_now(fs), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->copies_lock);
	if (moved_home && fs->home_moved)
		fs->home_moved(fs);
	/* 4. Its files go. */
	rc = fs_remove_flat(path);
	if (rc)
		fs_logf(fs, "metadata store copy %u removed; its files in %s stay: %s", c, path,
			strerror(-rc));
	else
		fs_logf(fs, "metadata store copy %u (%s) removed", c, path);
	return 0;
}

int copies_remove(struct fs *fs, uint32_t c, char *err, size_t errlen)
{
	int rc = members_change_begin(fs, err, errlen);
	if (rc)
		return rc;
	rc = remove_locked(fs, c, err, errlen);
	members_change_end(fs);
	return rc;
}
