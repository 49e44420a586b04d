/*
 * copystate.c: the copy states file of the metadata store's copies
 * (fs/SCHEMA.md "Store copies"), read and written without a mounted
 * filesystem: diskset_open loads it (copies_load), fsck chooses a copy
 * (copies_choose) and copies one over another (copies_rewrite_offline).
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
 * stay stale until fsck.lsmfs --use-copy keeps one (copies_choose).  It is
 * a file of its own, not the superblock, so that a copy can be marked
 * stale at any moment (from the store's write path) without racing a
 * change to the disk set, which writes superblocks in several steps with
 * a store write between them.
 *
 * No locking here: the caller serialises (the daemon's copies_lock, or an
 * offline tool that holds the disks' locks).
 */
#include "disks.h"

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
