/*
 * copies.c: the metadata store's copies (fs/SCHEMA.md "Store copies"):
 * which are up to date, kept in the copy states file on every disk, and
 * what the daemon does about a copy that is missing, comes back, or fails.
 *
 * The superblocks say where the copies are; <disk>/.lsmfs/copies says
 * which of them are stale (behind the others: their disk was away, or a
 * write to them failed).  A stale copy is never read (the store is told,
 * store_options.copies_stale); a read-write open brings it up to date from
 * the others, after which it is marked up to date again.  The states file
 * has its own counter (epoch), raised by every change and written to
 * every disk present; the highest epoch among the disks given is the
 * truth, and where two files of that epoch disagree (two mounts, each
 * without the other's disk), every copy either calls stale is stale: a
 * filesystem with no up-to-date copy left is refused rather than
 * guessed at.  It is a file of its own, not the superblock, so that a
 * copy can be marked stale at any moment (from the store's write path)
 * without racing a change to the disk set, which writes superblocks in
 * several steps with a store write between them.
 *
 * Runtime: the store calls copies_failed (store_options.copy_failed)
 * before a write that a dropped copy lacks is acknowledged; it marks the
 * copy stale on the disks, so that the next mount never takes it for
 * current.  fs->copies_lock serialises those writes; it is never held
 * across a store call that may fail a copy (the store calls
 * copies_failed with its mirror's lock held: that order, never the other).
 */
#include "fs_int.h"

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

#define COPIES_MAGIC "LSMFS-CP"
#define COPIES_FILE "copies"
#define COPIES_HEAD 36 /* magic, fs UUID, epoch, count */
#define COPIES_ENTRY 16 /* le32 disk, le32 flags, le64 XXH3 of the directory */
#define COPIES_MAX (COPIES_HEAD + COPIES_ENTRY * LSMFS_MAX_META_COPIES + 8)

/* ---- the copy states file (SCHEMA.md "Store copies") ---- */

/* Where a copy is, as the file names it. */
static uint64_t where_hash(const struct lsmfs_meta_copy *c)
{
	return c->disk == LSMFS_META_ON_DIR ? XXH3_64bits(c->dir, strlen(c->dir)) : 0;
}

static size_t states_encode(const struct lsmfs_diskset *ds, uint64_t epoch, uint8_t *buf)
{
	memcpy(buf, COPIES_MAGIC, 8);
	memcpy(buf + 8, ds->sb.fs_uuid, 16);
	sc_put_le64(buf + 24, epoch);
	sc_put_le32(buf + 32, ds->sb.meta_count);
	size_t off = COPIES_HEAD;
	for (uint32_t i = 0; i < ds->sb.meta_count; i++, off += COPIES_ENTRY) {
		sc_put_le32(buf + off, ds->sb.meta[i].disk);
		sc_put_le32(buf + off + 4, ds->sb.meta[i].flags & LSMFS_META_STALE);
		sc_put_le64(buf + off + 8, where_hash(&ds->sb.meta[i]));
	}
	sc_put_le64(buf + off, XXH3_64bits(buf, off));
	return off + 8;
}

/* One disk's file: 0 with *epoch and, for each copy of sb, its flags (a
 * copy the file does not name: stale), -ENOENT when there is none,
 * -EUCLEAN when it is damaged or another filesystem's (ignored: the other
 * disks' files, or none, say the same or more). */
static int states_read(const char *disk, const struct lsmfs_super *sb, uint64_t *epoch,
		       uint32_t *flags)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/" LSMFS_DIR "/" COPIES_FILE, disk);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	uint8_t buf[COPIES_MAX + 1];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return -EIO;
	size_t len = (size_t)n;
	if (len < COPIES_HEAD + 8 || memcmp(buf, COPIES_MAGIC, 8) ||
	    memcmp(buf + 8, sb->fs_uuid, 16))
		return -EUCLEAN;
	uint32_t count = sc_get_le32(buf + 32);
	if (count > LSMFS_MAX_META_COPIES || len != COPIES_HEAD + COPIES_ENTRY * count + 8 ||
	    sc_get_le64(buf + len - 8) != XXH3_64bits(buf, len - 8))
		return -EUCLEAN;
	*epoch = sc_get_le64(buf + 24);
	for (uint32_t i = 0; i < sb->meta_count; i++) {
		flags[i] = LSMFS_META_STALE;
		for (uint32_t e = 0; e < count; e++) {
			const uint8_t *p = buf + COPIES_HEAD + COPIES_ENTRY * e;
			if (sc_get_le32(p) == sb->meta[i].disk &&
			    sc_get_le64(p + 8) == where_hash(&sb->meta[i]))
				flags[i] = sc_get_le32(p + 4) & LSMFS_META_STALE;
		}
	}
	return 0;
}

void copies_load(struct lsmfs_diskset *ds)
{
	uint64_t best = 0;
	uint32_t stale = 0;
	for (uint32_t d = 0; d < ds->ndisks && d < LSMFS_MAX_DISKS; d++) {
		uint64_t epoch;
		uint32_t flags[LSMFS_MAX_META_COPIES];
		if (!ds->paths[d] || states_read(ds->paths[d], &ds->sb, &epoch, flags))
			continue;
		uint32_t mask = 0;
		for (uint32_t i = 0; i < ds->sb.meta_count; i++)
			if (flags[i])
				mask |= 1u << i;
		if (epoch > best) {
			best = epoch;
			stale = mask;
		} else if (epoch == best) {
			stale |= mask; /* two stories of one epoch: believe both */
		}
	}
	ds->copies_epoch = best;
	for (uint32_t i = 0; i < ds->sb.meta_count; i++)
		ds->sb.meta[i].flags = (stale >> i) & 1 ? LSMFS_META_STALE : 0;
}

/* Write one disk's file atomically (temp, fsync, rename, fsync .lsmfs). */
static int states_write_disk(const char *disk, const uint8_t *buf, size_t len)
{
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/" LSMFS_DIR, disk);
	return lsmfs_write_file(dir, COPIES_FILE, buf, len);
}

int copies_write(struct lsmfs_diskset *ds, char *err, size_t errlen)
{
	uint8_t buf[COPIES_MAX];
	size_t len = states_encode(ds, ds->copies_epoch + 1, buf);
	int first = 0, written = 0;
	for (uint32_t d = 0; d < ds->ndisks && d < LSMFS_MAX_DISKS; d++) {
		const char *p = __atomic_load_n(&ds->paths[d], __ATOMIC_ACQUIRE);
		if (!p || !diskset_present(ds, d))
			continue;
		int rc = states_write_disk(p, buf, len);
		if (rc == 0) {
			written++;
		} else if (!first) {
			first = rc;
			snprintf(err, errlen, "%s/" LSMFS_DIR "/" COPIES_FILE ": %s", p,
				 strerror(-rc));
		}
	}
	if (!written)
		return first ? first : -ENODEV;
	ds->copies_epoch++;
	return 0;
}

void copies_forget(const char *disk)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/" LSMFS_DIR "/" COPIES_FILE, disk);
	(void)unlink(path); /* best effort: a leftover is another filesystem's to ignore */
}

/* ---- the daemon ---- */

/* Store copy k (store_options numbering) is the superblock's copy... */
static uint32_t sb_copy(const struct fs *fs, size_t k)
{
	return k < fs->store_ncopies ? fs->store_which[k] : UINT32_MAX;
}

int copies_failed(void *ctx, size_t k, int err, const char *what)
{
	struct fs *fs = ctx;
	struct lsmfs_diskset *ds = fs->ds;
	char e[PATH_MAX + 128] = "";
	pthread_mutex_lock(&fs->copies_lock);
	uint32_t c = sb_copy(fs, k);
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
	__atomic_store_n(&fs->copies_degraded, true, __ATOMIC_RELEASE);
	if (rc)
		fs_logf(fs, "metadata store copy %u (%s) failed (%s: %s) and cannot be marked stale "
			"(%s): writes fail until it can", c, ds->meta_paths[c], what, strerror(-err),
			e);
	else
		fs_logf(fs, "metadata store copy %u (%s) failed (%s: %s): marked stale; the "
			"filesystem goes on DEGRADED with the other copies (lsmfs-disk restores the "
			"copy count)", c, ds->meta_paths[c], what, strerror(-err));
	return rc;
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
		uint32_t c = sb_copy(fs, k);
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

bool copies_degraded(struct fs *fs)
{
	return __atomic_load_n(&fs->copies_degraded, __ATOMIC_ACQUIRE);
}

void copies_json(struct fs *fs, struct json_out *o)
{
	struct lsmfs_diskset *ds = fs->ds;
	json_put(o, "\"copies\":[");
	if (fs->copies_lock_init)
		pthread_mutex_lock(&fs->copies_lock);
	for (uint32_t c = 0; c < ds->sb.meta_count; c++) {
		const struct lsmfs_meta_copy *mc = &ds->sb.meta[c];
		struct store_copy_info ci = { 0 };
		bool open = false;
		for (size_t k = 0; k < fs->store_ncopies && fs->st; k++)
			if (sb_copy(fs, k) == c && store_copy_info(fs->st, k, &ci) == 0)
				open = true;
		const char *state = !open ? "missing"
				    : !ci.live ? "failed"
				    : (mc->flags & LSMFS_META_STALE) ? "stale"
								     : "in-sync";
		json_put(o, "%s{\"copy\":%" PRIu32 ",\"disk\":", c ? "," : "", c);
		if (mc->disk == LSMFS_META_ON_DIR)
			json_put(o, "null");
		else
			json_put(o, "%" PRIu32, mc->disk);
		json_put(o, ",\"path\":");
		json_put_str(o, ds->meta_paths[c]);
		json_put(o, ",\"state\":\"%s\",\"healed\":%" PRIu64 ",\"read_errors\":%" PRIu64 "}",
			 state, ci.healed, ci.read_errors);
	}
	if (fs->copies_lock_init)
		pthread_mutex_unlock(&fs->copies_lock);
	/* A store copy, or a data disk (mount -o degraded), missing or failed. */
	bool degraded = copies_degraded(fs) || __atomic_load_n(&ds->missing, __ATOMIC_ACQUIRE);
	for (uint32_t d = 0; d < ds->ndisks && !degraded; d++)
		degraded = diskset_present(ds, d) && !disk_usable(fs, d);
	json_put(o, "],\"degraded\":%s", degraded ? "true" : "false");
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

void copies_home(struct fs *fs, char *out, size_t cap)
{
	if (fs->copies_lock_init)
		pthread_mutex_lock(&fs->copies_lock);
	snprintf(out, cap, "%s", fs->ds->meta_dir);
	if (fs->copies_lock_init)
		pthread_mutex_unlock(&fs->copies_lock);
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
	if (moved_home)
		control_rehome(fs);
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

/* ---- offline (fsck) ---- */

bool copies_store_file(const char *name)
{
	size_t n = strlen(name);
	return !strcmp(name, "CURRENT") || !strncmp(name, "MANIFEST-", 9) ||
	       (n > 4 && (!strcmp(name + n - 4, ".log") || !strcmp(name + n - 4, ".sst")));
}

static int copy_one(int sfd, int dfd, const char *name)
{
	int in = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -errno;
	int out = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0) {
		int rc = -errno;
		close(in);
		return rc;
	}
	static __thread char buf[1 << 16];
	int rc = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				rc = w < 0 ? -errno : -EIO;
				break;
			}
			done += w;
		}
		if (rc)
			break;
	}
	if (!rc && fsync(out) != 0)
		rc = -errno;
	close(in);
	if (close(out) != 0 && !rc)
		rc = -errno;
	return rc;
}

/* The store files of dst replaced by src's, each synced, dst synced. */
static int replace_files(const char *src, const char *dst, char *err, size_t errlen)
{
	int rc = 0;
	int sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = sfd < 0 || dfd < 0 ? NULL : fdopendir(dup(dfd));
	struct dirent *e;
	if (!d) {
		rc = errno ? -errno : -EIO;
		snprintf(err, errlen, "%s: %s", sfd < 0 ? src : dst, strerror(-rc));
		goto out;
	}
	/* The old files go first: none of them may be taken for the new. */
	while ((e = readdir(d)))
		if (copies_store_file(e->d_name) && unlinkat(dfd, e->d_name, 0) != 0 && !rc) {
			rc = -errno;
			snprintf(err, errlen, "%s/%s: %s", dst, e->d_name, strerror(-rc));
		}
	closedir(d);
	d = rc ? NULL : fdopendir(dup(sfd));
	while (d && !rc && (e = readdir(d))) {
		if (!copies_store_file(e->d_name))
			continue;
		rc = copy_one(sfd, dfd, e->d_name);
		if (rc)
			snprintf(err, errlen, "%s/%s: %s", dst, e->d_name, strerror(-rc));
	}
	if (d)
		closedir(d);
	if (!rc && fsync(dfd) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: fsync: %s", dst, strerror(-rc));
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

int copies_rewrite_offline(struct lsmfs_diskset *ds, uint32_t from, uint32_t to, char *err,
			   size_t errlen)
{
	uint32_t before = ds->sb.meta[to].flags;
	ds->sb.meta[to].flags |= LSMFS_META_STALE;
	int rc = copies_write(ds, err, errlen);
	if (!rc)
		rc = replace_files(ds->meta_paths[from], ds->meta_paths[to], err, errlen);
	if (!rc) {
		ds->sb.meta[to].flags = before & ~LSMFS_META_STALE;
		rc = copies_write(ds, err, errlen);
		if (rc)
			ds->sb.meta[to].flags |= LSMFS_META_STALE; /* as the disks still say */
	}
	return rc;
}

int copies_restore_offline(struct lsmfs_diskset *ds, const char *src, char *err, size_t errlen)
{
	/* Every copy stale first: from here until the end none is current,
	 * and a mount is refused (a restore cut short is run again). */
	uint32_t p = UINT32_MAX;
	for (uint32_t i = 0; i < ds->sb.meta_count; i++) {
		ds->sb.meta[i].flags |= LSMFS_META_STALE;
		if (p == UINT32_MAX && !(ds->meta_absent & (1u << i)))
			p = i;
	}
	if (p == UINT32_MAX) {
		snprintf(err, errlen, "no copy of the metadata store is there to restore into");
		return -ENOENT;
	}
	/* The mark first: until fs_restore removes it, no mount takes the
	 * store (a restore cut short is run again). */
	char mark[sizeof(ds->meta_paths[0]) + 16];
	snprintf(mark, sizeof(mark), "%s/" LSMFS_RESTORING, ds->meta_paths[p]);
	int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	int rc = fd >= 0 && fsync(fd) == 0 ? lsmfs_fsync_dir(ds->meta_paths[p]) : -errno;
	if (fd >= 0)
		close(fd);
	if (rc) {
		snprintf(err, errlen, "%s: %s", mark, strerror(-rc));
		return rc;
	}
	rc = copies_write(ds, err, errlen);
	if (!rc)
		rc = replace_files(src, ds->meta_paths[p], err, errlen);
	if (rc)
		return rc;
	/* It alone is current: the others are brought up to date from it at
	 * the next read-write open. */
	ds->sb.meta[p].flags &= ~LSMFS_META_STALE;
	ds->meta_primary = p;
	snprintf(ds->meta_dir, sizeof(ds->meta_dir), "%s", ds->meta_paths[p]);
	return copies_write(ds, err, errlen);
}
