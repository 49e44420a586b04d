/*
 * super.c: the per-disk superblock, <disk>/.lsmfs/super (fs/SCHEMA.md,
 * "Superblock").
 *
 * The superblock is small, written once by mkfs and replaced only as a
 * whole: a temp file is written and fsynced, renamed over the old one and
 * the directory fsynced, so a reader sees either the old or the new block,
 * never a mix.  Its XXH3-64 trailer covers every byte before it; a reader
 * trusts no field until the magic, version, length and checksum agree.
 * Pure functions plus file I/O; no shared state, no locking.
 */
#include "format.h"
#include "schema.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define SUPER_MAGIC "LSMFS-SB"
/* Bytes before the metadata path: version 1 had no generation, flags or
 * store disk (SCHEMA.md, "Superblock"); it is read, never written. */
#define SUPER_FIXED_V1 98
#define SUPER_FIXED 114
#define SUPER_CSUM_LEN 8

/* Offsets of SCHEMA.md "Superblock"; decode messages name them. */
#define OFF_VERSION 8
#define OFF_LENGTH 12
#define OFF_FS_UUID 16
#define OFF_DISK_UUID 32
#define OFF_INDEX 48
#define OFF_COUNT 52
#define OFF_SECTIONS 56
#define OFF_INLINE 60
#define OFF_CHUNK 64
#define OFF_CREATED 72
#define OFF_LABEL 80
#define OFF_GEN 96         /* version 2 on */
#define OFF_FLAGS 104
#define OFF_META_DISK 108  /* version 2 */
#define OFF_META_LEN 112   /* 96 in version 1; version 1 and 2 */
#define OFF_COPIES 108     /* version 3 on: the store's copies */
#define COPY_HEAD 6        /* le32 disk, le16 path length */

/* Bytes the copy list takes in a version 3 superblock; 0 when a copy is
 * out of range. */
static size_t copies_len(const struct lsmfs_super *sb)
{
	if (sb->meta_count == 0 || sb->meta_count > LSMFS_MAX_META_COPIES)
		return 0;
	size_t n = 4;
	for (uint32_t i = 0; i < sb->meta_count; i++) {
		const struct lsmfs_meta_copy *c = &sb->meta[i];
		size_t ml = strnlen(c->dir, sizeof(c->dir));
		if (ml >= sizeof(c->dir) || (c->disk == LSMFS_META_ON_DIR) != (ml > 0) ||
		    (c->disk != LSMFS_META_ON_DIR && c->disk >= sb->disk_count))
			return 0;
		n += COPY_HEAD + ml;
	}
	return n;
}

int super_encode(const struct lsmfs_super *sb, uint8_t *buf, size_t cap,
		 size_t *len)
{
	size_t llen = strnlen(sb->label, LSMFS_LABEL_MAX);
	size_t clen = copies_len(sb);
	if (sb->disk_count == 0 || sb->disk_count > LSMFS_MAX_DISKS ||
	    sb->disk_index >= sb->disk_count || !clen)
		return -EINVAL;
	size_t total = OFF_COPIES + clen + 16u * sb->disk_count + SUPER_CSUM_LEN;
	if (total > cap)
		return -ENOSPC;

	memset(buf, 0, total);
	memcpy(buf, SUPER_MAGIC, 8);
	put_le32(buf + OFF_VERSION, LSMFS_SUPER_VERSION);
	put_le32(buf + OFF_LENGTH, (uint32_t)total);
	memcpy(buf + OFF_FS_UUID, sb->fs_uuid, 16);
	memcpy(buf + OFF_DISK_UUID, sb->disk_uuid, 16);
	put_le32(buf + OFF_INDEX, sb->disk_index);
	put_le32(buf + OFF_COUNT, sb->disk_count);
	put_le32(buf + OFF_SECTIONS, sb->sections);
	put_le32(buf + OFF_INLINE, sb->inline_max);
	put_le64(buf + OFF_CHUNK, sb->chunk_size);
	put_le64(buf + OFF_CREATED, sb->created);
	memcpy(buf + OFF_LABEL, sb->label, llen); /* rest stays NUL */
	put_le64(buf + OFF_GEN, sb->generation);
	put_le32(buf + OFF_FLAGS, sb->flags);
	uint8_t *p = buf + OFF_COPIES;
	put_le32(p, sb->meta_count);
	p += 4;
	for (uint32_t i = 0; i < sb->meta_count; i++) {
		const struct lsmfs_meta_copy *c = &sb->meta[i];
		size_t ml = strlen(c->dir);
		put_le32(p, c->disk);
		p[4] = (uint8_t)ml;
		p[5] = (uint8_t)(ml >> 8);
		memcpy(p + COPY_HEAD, c->dir, ml);
		p += COPY_HEAD + ml;
	}
	memcpy(p, sb->disk_uuids, 16u * sb->disk_count);
	put_le64(buf + total - SUPER_CSUM_LEN,
		    XXH3_64bits(buf, total - SUPER_CSUM_LEN));
	*len = total;
	return 0;
}

/* A metadata directory path at off: absolute, no NUL. */
static bool meta_path_ok(const uint8_t *p, size_t ml)
{
	return ml == 0 || (p[0] == '/' && !memchr(p, 0, ml));
}

/* Version 3's copy list, from OFF_COPIES; *end: where the disk list starts. */
static int decode_copies(const uint8_t *buf, size_t total, struct lsmfs_super *sb, size_t *end,
			 char *err, size_t errlen)
{
	size_t off = OFF_COPIES, limit = total - SUPER_CSUM_LEN;
	if (off + 4 > limit) {
		(void)fs_set_err(err, errlen, 0, "offset %d: superblock truncated in the copy list", OFF_COPIES);
		return -EUCLEAN;
	}
	sb->meta_count = get_le32(buf + off);
	if (sb->meta_count == 0 || sb->meta_count > LSMFS_MAX_META_COPIES) {
		(void)fs_set_err(err, errlen, 0, "offset %d: store copy count %u out of range 1..%d", OFF_COPIES,
			sb->meta_count, LSMFS_MAX_META_COPIES);
		return -EUCLEAN;
	}
	off += 4;
	for (uint32_t i = 0; i < sb->meta_count; i++) {
		struct lsmfs_meta_copy *c = &sb->meta[i];
		if (off + COPY_HEAD > limit) {
			(void)fs_set_err(err, errlen, 0, "offset %zu: superblock truncated in store copy %u", off, i);
			return -EUCLEAN;
		}
		c->disk = get_le32(buf + off);
		size_t ml = (size_t)buf[off + 4] | (size_t)buf[off + 5] << 8;
		if (ml >= LSMFS_META_PATH_MAX || off + COPY_HEAD + ml > limit ||
		    (c->disk == LSMFS_META_ON_DIR) != (ml > 0) ||
		    !meta_path_ok(buf + off + COPY_HEAD, ml)) {
			(void)fs_set_err(err, errlen, 0, "offset %zu: store copy %u: bad directory (length %zu)",
				off + 4, i, ml);
			return -EUCLEAN;
		}
		memcpy(c->dir, buf + off + COPY_HEAD, ml);
		c->dir[ml] = 0;
		off += COPY_HEAD + ml;
	}
	*end = off;
	return 0;
}

int super_decode(const uint8_t *buf, size_t len, struct lsmfs_super *sb,
		 char *err, size_t errlen)
{
	memset(sb, 0, sizeof(*sb));
	/* Order matters: the version decides the layout, the length decides
	 * where the checksum is, and only a verified block has fields worth
	 * range-checking. */
	if (len < 8 || memcmp(buf, SUPER_MAGIC, 8) != 0) {
		(void)fs_set_err(err, errlen, 0, "offset 0: bad magic (not an lsmfs superblock)");
		return -EUCLEAN;
	}
	if (len < SUPER_FIXED_V1 + SUPER_CSUM_LEN) {
		(void)fs_set_err(err, errlen, 0, "offset %zu: superblock truncated (%zu bytes)",
			len, len);
		return -EUCLEAN;
	}
	uint32_t version = get_le32(buf + OFF_VERSION);
	if (version < 1 || version > LSMFS_SUPER_VERSION) {
		(void)fs_set_err(err, errlen, 0, "offset %d: unsupported format version %u",
			OFF_VERSION, version);
		return -EUCLEAN;
	}
	size_t fixed = version == 1 ? SUPER_FIXED_V1 : version == 2 ? SUPER_FIXED : OFF_COPIES + 4;
	size_t off_mlen = fixed - 2;
	if (len < fixed + SUPER_CSUM_LEN) {
		(void)fs_set_err(err, errlen, 0, "offset %zu: superblock truncated (%zu bytes)",
			len, len);
		return -EUCLEAN;
	}
	uint32_t total = get_le32(buf + OFF_LENGTH);
	if (total != len) {
		(void)fs_set_err(err, errlen, 0, "offset %d: length %u disagrees with the "
			"file size %zu", OFF_LENGTH, total, len);
		return -EUCLEAN;
	}
	uint64_t stored = get_le64(buf + total - SUPER_CSUM_LEN);
	uint64_t actual = XXH3_64bits(buf, total - SUPER_CSUM_LEN);
	if (stored != actual) {
		(void)fs_set_err(err, errlen, 0, "offset %u: checksum mismatch (stored %016llx, "
			"computed %016llx)", total - SUPER_CSUM_LEN,
			(unsigned long long)stored, (unsigned long long)actual);
		return -EUCLEAN;
	}

	sb->version = version;
	memcpy(sb->fs_uuid, buf + OFF_FS_UUID, 16);
	memcpy(sb->disk_uuid, buf + OFF_DISK_UUID, 16);
	sb->disk_index = get_le32(buf + OFF_INDEX);
	sb->disk_count = get_le32(buf + OFF_COUNT);
	sb->sections = get_le32(buf + OFF_SECTIONS);
	sb->inline_max = get_le32(buf + OFF_INLINE);
	sb->chunk_size = get_le64(buf + OFF_CHUNK);
	sb->created = get_le64(buf + OFF_CREATED);
	memcpy(sb->label, buf + OFF_LABEL, LSMFS_LABEL_MAX);
	sb->label[LSMFS_LABEL_MAX] = 0;
	if (version >= 2) {
		sb->generation = get_le64(buf + OFF_GEN);
		sb->flags = get_le32(buf + OFF_FLAGS);
	}

	if (sb->disk_count == 0 || sb->disk_count > LSMFS_MAX_DISKS) {
		(void)fs_set_err(err, errlen, 0, "offset %d: disk count %u out of range 1..%d",
			OFF_COUNT, sb->disk_count, LSMFS_MAX_DISKS);
		return -EUCLEAN;
	}
	if (sb->disk_index >= sb->disk_count) {
		(void)fs_set_err(err, errlen, 0, "offset %d: disk index %u not below the disk "
			"count %u", OFF_INDEX, sb->disk_index, sb->disk_count);
		return -EUCLEAN;
	}
	if (sb->sections == 0 || sb->sections > LSMFS_MAX_SECTIONS) {
		(void)fs_set_err(err, errlen, 0, "offset %d: section count %u is not in 1..%u", OFF_SECTIONS,
			sb->sections, LSMFS_MAX_SECTIONS);
		return -EUCLEAN;
	}
	if (sb->chunk_size < 4096 || (sb->chunk_size & (sb->chunk_size - 1))) {
		(void)fs_set_err(err, errlen, 0, "offset %d: chunk size %llu is not a power of "
			"two >= 4096", OFF_CHUNK, (unsigned long long)sb->chunk_size);
		return -EUCLEAN;
	}
	if (sb->flags & ~(uint32_t)SUPER_RETIRED) {
		(void)fs_set_err(err, errlen, 0, "offset %d: unknown flags %#x", OFF_FLAGS, sb->flags);
		return -EUCLEAN;
	}
	size_t list; /* where the disk list starts */
	if (version >= 3) {
		int rc = decode_copies(buf, total, sb, &list, err, errlen);
		if (rc)
			return rc;
	} else {
		/* One copy: on the store disk (version 1: disk 0), or in a
		 * directory of its own. */
		struct lsmfs_meta_copy *c = &sb->meta[0];
		sb->meta_count = 1;
		c->disk = version >= 2 ? get_le32(buf + OFF_META_DISK) : 0;
		size_t mlen = (size_t)buf[off_mlen] | (size_t)buf[off_mlen + 1] << 8;
		if (mlen >= LSMFS_META_PATH_MAX ||
		    fixed + mlen + 16u * sb->disk_count + SUPER_CSUM_LEN != total) {
			(void)fs_set_err(err, errlen, 0, "offset %zu: metadata path length %zu does not "
				"fit the superblock length %u", off_mlen, mlen, total);
			return -EUCLEAN;
		}
		if (!meta_path_ok(buf + fixed, mlen)) {
			(void)fs_set_err(err, errlen, 0, "offset %zu: metadata path is not an absolute "
				"path", fixed);
			return -EUCLEAN;
		}
		memcpy(c->dir, buf + fixed, mlen);
		c->dir[mlen] = 0;
		if (mlen)
			c->disk = LSMFS_META_ON_DIR;
		list = fixed + mlen;
	}
	if (list + 16u * sb->disk_count + SUPER_CSUM_LEN != total) {
		(void)fs_set_err(err, errlen, 0, "offset %zu: the disk list (%u disks) does not fit the "
			"superblock length %u", list, sb->disk_count, total);
		return -EUCLEAN;
	}
	memcpy(sb->disk_uuids, buf + list, 16u * sb->disk_count);
	for (uint32_t i = 0; i < sb->meta_count; i++) {
		const struct lsmfs_meta_copy *c = &sb->meta[i];
		if ((c->disk == LSMFS_META_ON_DIR) != (c->dir[0] != 0)) {
			/* Version 2: a store disk of 0xffffffff with no path. */
			(void)fs_set_err(err, errlen, 0, "offset %d: the store's copy %u is on disk %u, past the "
				"disk count", version >= 3 ? OFF_COPIES : OFF_META_DISK, i, c->disk);
			return -EUCLEAN;
		}
		if (c->disk == LSMFS_META_ON_DIR)
			continue;
		if (c->disk >= sb->disk_count || super_slot_empty(sb, c->disk)) {
			(void)fs_set_err(err, errlen, 0, "offset %d: the store's copy %u is on disk %u, %s",
				version >= 3 ? OFF_COPIES : OFF_META_DISK, i, c->disk,
				c->disk >= sb->disk_count ? "past the disk count"
							  : "an empty slot in the disk list");
			return -EUCLEAN;
		}
		for (uint32_t j = 0; j < i; j++)
			if (sb->meta[j].disk == c->disk) {
				(void)fs_set_err(err, errlen, 0, "offset %d: store copies %u and %u are both on "
					"disk %u", OFF_COPIES, j, i, c->disk);
				return -EUCLEAN;
			}
	}
	if (super_slot_empty(sb, sb->disk_index)) {
		(void)fs_set_err(err, errlen, 0, "offset %zu: this disk's slot (%u) in the disk list is empty",
			list + 16u * sb->disk_index, sb->disk_index);
		return -EUCLEAN;
	}
	return 0;
}

static int read_all(int fd, uint8_t *buf, size_t cap, size_t *len)
{
	size_t used = 0;
	while (used < cap) {
		ssize_t n = read(fd, buf + used, cap - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		used += (size_t)n;
	}
	*len = used;
	return 0;
}

int super_read(const char *disk, struct lsmfs_super *sb, char *err,
	       size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/" LSMFS_DIR "/" LSMFS_SUPER_FILE, disk);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;
		/* An empty directory is most often the mount point of a disk
		 * that did not mount: say so, not only what it lacks. */
		if (rc == -ENOENT && lsmfs_dir_empty(disk) == 0)
			(void)fs_set_err(err, errlen, 0, "%s: an empty directory, not an lsmfs disk: is the "
				"disk that belongs there not mounted?", disk);
		else if (rc == -ENOENT)
			(void)fs_set_err(err, errlen, 0, "%s: not an lsmfs disk (no superblock)",
				disk);
		else if (rc == -EACCES) /* SCHEMA.md "Backing disks": root's alone */
			(void)fs_set_err(err, errlen, 0, "%s: %s (only root, the disks' owner, may read "
				"them)", path, strerror(-rc));
		else
			(void)fs_set_err(err, errlen, 0, "%s: %s", path, strerror(-rc));
		return rc;
	}
	/* One byte more than the largest superblock tells "too long" apart
	 * from "exactly the maximum". */
	uint8_t buf[LSMFS_SUPER_MAX + 1];
	size_t len = 0;
	int rc = read_all(fd, buf, sizeof(buf), &len);
	close(fd);
	if (rc) {
		(void)fs_set_err(err, errlen, 0, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (len > LSMFS_SUPER_MAX) {
		(void)fs_set_err(err, errlen, 0, "%s: offset %d: superblock longer than %d bytes",
			path, LSMFS_SUPER_MAX, LSMFS_SUPER_MAX);
		return -EUCLEAN;
	}
	char why[256];
	rc = super_decode(buf, len, sb, why, sizeof(why));
	if (rc)
		(void)fs_set_err(err, errlen, 0, "%s: %s", path, why);
	return rc;
}

bool super_copies_equal(const struct lsmfs_super *a, const struct lsmfs_super *b)
{
	if (a->meta_count != b->meta_count)
		return false;
	for (uint32_t i = 0; i < a->meta_count; i++)
		if (a->meta[i].disk != b->meta[i].disk || strcmp(a->meta[i].dir, b->meta[i].dir) != 0)
			return false;
	return true;
}

bool super_slot_empty(const struct lsmfs_super *sb, uint32_t d)
{
	static const uint8_t zero[16];
	return d >= sb->disk_count || memcmp(sb->disk_uuids[d], zero, 16) == 0;
}

int super_write(const char *disk, const struct lsmfs_super *sb, char *err,
		size_t errlen)
{
	uint8_t buf[LSMFS_SUPER_MAX];
	size_t len;
	int rc = super_encode(sb, buf, sizeof(buf), &len);
	if (rc) {
		(void)fs_set_err(err, errlen, 0, "%s: cannot encode the superblock: %s", disk,
			strerror(-rc));
		return rc;
	}

	char dir[4096], tmp[4200], path[4200];
	snprintf(dir, sizeof(dir), "%s/" LSMFS_DIR, disk);
	snprintf(tmp, sizeof(tmp), "%s/" LSMFS_SUPER_FILE ".tmp", dir);
	snprintf(path, sizeof(path), "%s/" LSMFS_SUPER_FILE, dir);
	bool made_dir = false;
	if (mkdir(dir, 0700) == 0) {
		made_dir = true;
	} else if (errno != EEXIST) {
		rc = -errno;
		(void)fs_set_err(err, errlen, 0, "%s: cannot create: %s", dir, strerror(-rc));
		return rc;
	}

	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		(void)fs_set_err(err, errlen, 0, "%s: %s", tmp, strerror(-rc));
		return rc;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		done += (size_t)n;
	}
	if (fsync(fd) < 0)
		rc = -errno;
out:
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc) {
		(void)fs_set_err(err, errlen, 0, "%s: %s", tmp, strerror(-rc));
		(void)unlink(tmp); /* best effort: a stale temp file is harmless */
		return rc;
	}
	if (rename(tmp, path) < 0) {
		rc = -errno;
		(void)fs_set_err(err, errlen, 0, "%s: rename: %s", path, strerror(-rc));
		(void)unlink(tmp); /* best effort, as above */
		return rc;
	}
	/* The rename is durable only once the directory is; a new .lsmfs
	 * needs its own entry in the disk's directory made durable too. */
	rc = lsmfs_fsync_dir(dir);
	if (rc == 0 && made_dir)
		rc = lsmfs_fsync_dir(disk);
	if (rc)
		(void)fs_set_err(err, errlen, 0, "%s: fsync: %s", made_dir ? disk : dir,
			strerror(-rc));
	return rc;
}
