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
 * guessed at.  Each entry also says since which epoch the copy has its
 * state; two files that each call the other's copy stale without having
 * known of the other's word mark copies that diverged (any epochs): both
 * stay stale until fsck.lsmfs --use-copy keeps one (copies_choose).  A
 * read-write mount with a disk missing takes the copies here for the
 * newest only when the states show the missing ones behind, or when told
 * (force_degraded; copies_prepare).  It is a file of its own, not the
 * superblock, so that a copy can be marked stale at any moment (from the
 * store's write path) without racing a change to the disk set, which
 * writes superblocks in several steps with a store write between them.
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

#define COPIES_MAGIC "LSMFS-C2"
#define COPIES_MAGIC_V1 "LSMFS-CP" /* entries without `since`: read forever */
#define COPIES_FILE "copies"
#define COPIES_HEAD 36 /* magic, fs UUID, epoch, count */
#define COPIES_ENTRY 24 /* le32 disk, le32 flags, le64 XXH3 of the directory, le64 since */
#define COPIES_ENTRY_V1 16
#define COPIES_MAX (COPIES_HEAD + COPIES_ENTRY * LSMFS_MAX_META_COPIES + 8)

/* ---- the copy states file (SCHEMA.md "Store copies") ---- */

/* Where a copy is, as the file names it. */
static uint64_t where_hash(const struct lsmfs_meta_copy *c)
{
	return c->disk == LSMFS_META_ON_DIR ? XXH3_64bits(c->dir, strlen(c->dir)) : 0;
}

/* The file for epoch; since[i]: copy i's since in it. */
static size_t states_encode(const struct lsmfs_diskset *ds, uint64_t epoch, const uint64_t *since,
			    uint8_t *buf)
{
	memcpy(buf, COPIES_MAGIC, 8);
	memcpy(buf + 8, ds->sb.fs_uuid, 16);
	put_le64(buf + 24, epoch);
	put_le32(buf + 32, ds->sb.meta_count);
	size_t off = COPIES_HEAD;
	for (uint32_t i = 0; i < ds->sb.meta_count; i++, off += COPIES_ENTRY) {
		put_le32(buf + off, ds->sb.meta[i].disk);
		put_le32(buf + off + 4, ds->sb.meta[i].flags & LSMFS_META_STALE);
		put_le64(buf + off + 8, where_hash(&ds->sb.meta[i]));
		put_le64(buf + off + 16, since[i]);
	}
	put_le64(buf + off, XXH3_64bits(buf, off));
	return off + 8;
}

/* One disk's file, as read. */
struct states {
	uint64_t epoch;
	uint32_t flags[LSMFS_MAX_META_COPIES]; /* for each copy of sb */
	uint64_t since[LSMFS_MAX_META_COPIES];
};

/* One disk's file: 0 with *st (a copy the file does not name: stale
 * since epoch 0), -ENOENT when there is none, -EUCLEAN when it is damaged
 * or another filesystem's (ignored: the other disks' files, or none, say
 * the same or more). */
static int states_read(const char *disk, const struct lsmfs_super *sb, struct states *st)
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
	if (len < COPIES_HEAD + 8 || memcmp(buf + 8, sb->fs_uuid, 16))
		return -EUCLEAN;
	size_t entry = !memcmp(buf, COPIES_MAGIC, 8)	  ? COPIES_ENTRY
		       : !memcmp(buf, COPIES_MAGIC_V1, 8) ? COPIES_ENTRY_V1
							   : 0;
	uint32_t count = get_le32(buf + 32);
	if (!entry || count > LSMFS_MAX_META_COPIES || len != COPIES_HEAD + entry * count + 8 ||
	    get_le64(buf + len - 8) != XXH3_64bits(buf, len - 8))
		return -EUCLEAN;
	st->epoch = get_le64(buf + 24);
	for (uint32_t i = 0; i < sb->meta_count; i++) {
		st->flags[i] = LSMFS_META_STALE;
		st->since[i] = 0;
		for (uint32_t e = 0; e < count; e++) {
			const uint8_t *p = buf + COPIES_HEAD + entry * e;
			if (get_le32(p) == sb->meta[i].disk &&
			    get_le64(p + 8) == where_hash(&sb->meta[i])) {
				st->flags[i] = get_le32(p + 4) & LSMFS_META_STALE;
				st->since[i] = entry == COPIES_ENTRY ? get_le64(p + 16) : 0;
			}
		}
	}
	return 0;
}

/* Did copies x and y part: does a calls x current and y stale, b calls y
 * current and x stale, and neither know of the other's word (the epoch
 * since which a calls x current is older than the one since which b
 * calls it stale, and the other way round)?  Then a mount without y
 * wrote x and one without x wrote y: each holds writes the other lacks. */
static bool parted(const struct states *a, const struct states *b, uint32_t x, uint32_t y)
{
	return !a->flags[x] && a->flags[y] && !b->flags[y] && b->flags[x] &&
	       a->since[x] < b->since[x] && b->since[y] < a->since[y];
}

void copies_load(struct lsmfs_diskset *ds)
{
	uint64_t best = 0;
	uint32_t stale = 0;
	uint64_t since[LSMFS_MAX_META_COPIES] = {0};
	struct states all[LSMFS_MAX_DISKS]; /* 64 x 56 bytes */
	uint32_t nall = 0;
	uint32_t m = ds->sb.meta_count;
	for (uint32_t d = 0; d < ds->ndisks && d < LSMFS_MAX_DISKS; d++) {
		struct states st;
		if (!ds->paths[d] || states_read(ds->paths[d], &ds->sb, &st))
			continue;
		all[nall++] = st;
		uint32_t mask = 0;
		for (uint32_t i = 0; i < m; i++)
			if (st.flags[i])
				mask |= 1u << i;
		if (st.epoch > best) {
			best = st.epoch;
			stale = mask;
			memcpy(since, st.since, sizeof(since));
		} else if (st.epoch == best) {
			stale |= mask; /* two stories of one epoch: believe both */
			for (uint32_t i = 0; i < m; i++)
				since[i] = st.since[i] > since[i] ? st.since[i] : since[i];
		}
	}
	/* Copies that parted: neither may be taken for current, whatever the
	 * epochs say (the later epoch is no more than the busier side). */
	ds->copies_diverged = 0;
	memset(ds->diverged_with, 0, sizeof(ds->diverged_with));
	for (uint32_t a = 0; a < nall; a++)
		for (uint32_t b = 0; b < nall; b++)
			for (uint32_t x = 0; x < m; x++)
				for (uint32_t y = 0; y < m; y++)
					if (x != y && parted(&all[a], &all[b], x, y)) {
						ds->copies_diverged |= 1u << x | 1u << y;
						ds->diverged_with[x] |= 1u << y;
						ds->diverged_with[y] |= 1u << x;
					}
	stale |= ds->copies_diverged;
	ds->copies_epoch = best;
	for (uint32_t i = 0; i < m; i++) {
		ds->sb.meta[i].flags = (stale >> i) & 1 ? LSMFS_META_STALE : 0;
		ds->sb.meta[i].since = since[i];
		ds->sb.meta[i].since_flags = ds->sb.meta[i].flags;
	}
}

/* Write one disk's file atomically (temp, fsync, rename, fsync .lsmfs). */
static int states_write_disk(const char *disk, const uint8_t *buf, size_t len)
{
	char dir[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/" LSMFS_DIR, disk);
	return lsmfs_write_file(dir, COPIES_FILE, buf, len);
}

/* Write the states with the next epoch, each copy's since moved on to it
 * where its state changed (every copy's with all). */
static int states_write(struct lsmfs_diskset *ds, bool all, char *err, size_t errlen)
{
	uint8_t buf[COPIES_MAX];
	uint64_t since[LSMFS_MAX_META_COPIES] = {0}, next = ds->copies_epoch + 1;
	for (uint32_t i = 0; i < ds->sb.meta_count; i++) {
		const struct lsmfs_meta_copy *c = &ds->sb.meta[i];
		since[i] = all || (c->flags & LSMFS_META_STALE) != c->since_flags ? next : c->since;
	}
	size_t len = states_encode(ds, next, since, buf);
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
	for (uint32_t i = 0; i < ds->sb.meta_count; i++) {
		ds->sb.meta[i].since = since[i];
		ds->sb.meta[i].since_flags = ds->sb.meta[i].flags & LSMFS_META_STALE;
	}
	return 0;
}

int copies_write(struct lsmfs_diskset *ds, char *err, size_t errlen)
{
	return states_write(ds, false, err, errlen);
}

int copies_choose(struct lsmfs_diskset *ds, uint32_t n, char *err, size_t errlen)
{
	if (n >= ds->sb.meta_count || (ds->meta_absent & (1u << n))) {
		snprintf(err, errlen, "copy %u of the metadata store is not there (%u copies)", n,
			 ds->sb.meta_count);
		return -ENOENT;
	}
	for (uint32_t i = 0; i < ds->sb.meta_count; i++)
		ds->sb.meta[i].flags = i == n ? 0 : LSMFS_META_STALE;
	int rc = states_write(ds, true, err, errlen);
	if (rc)
		return rc;
	ds->copies_diverged = 0;
	memset(ds->diverged_with, 0, sizeof(ds->diverged_with));
	ds->meta_primary = n;
	snprintf(ds->meta_dir, sizeof(ds->meta_dir), "%s", ds->meta_paths[n]);
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
int copies_replace_files(const char *src, const char *dst, char *err, size_t errlen)
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
		rc = copies_replace_files(ds->meta_paths[from], ds->meta_paths[to], err, errlen);
	if (!rc) {
		ds->sb.meta[to].flags = before & ~LSMFS_META_STALE;
		rc = copies_write(ds, err, errlen);
		if (rc)
			ds->sb.meta[to].flags |= LSMFS_META_STALE; /* as the disks still say */
	}
	return rc;
}
