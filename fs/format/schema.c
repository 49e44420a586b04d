/*
 * schema.c: the key types (their table, key_parse) and the key and record
 * codecs of fs/SCHEMA.md ("Keys of the metadata store", "Inode record",
 * "Filesystem info", "Error counters").
 */
#include "schema.h"
#include "format.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

const struct key_type_info key_types[] = {
	{KEY_META, "filesystem info", "M name", "the filesystem's own records: fs, next_ino, "
	 "mounted, move, filter", KEY_ID_NONE, 0, 0, 0, SIZE_MAX},
	{KEY_DISK, "disk record", "K be32(disk)", "a disk's UUID and its path when last mounted",
	 KEY_ID_DISK, 4, 0, 0, 0},
	{KEY_DEVSTATS, "error counters", "E be32(disk)",
	 "a disk's error counters: read, write, checksum, repaired", KEY_ID_DISK, 4, 0, 0, 0},
	{KEY_SECTION, "section map entry", "P be32(section)", "the disk that holds a section",
	 KEY_ID_SECTION, 4, 0, 0, 0},
	{KEY_INODE, "inode record", "I be64(ino)", "an inode's attributes", KEY_ID_INODE, 8, 0, 0,
	 0},
	{KEY_DIRENT, "directory entry", "D be64(parent) be64(hash) name",
	 "a name in a directory, and the inode and type it names", KEY_ID_INODE, 8, 8, 1,
	 NAME_MAX_BYTES},
	{KEY_XATTR, "extended attribute", "X be64(ino) name", "an extended attribute's value",
	 KEY_ID_INODE, 8, 0, 1, SIZE_MAX},
	{KEY_DATA, "inline data", "F be64(ino)", "a small file's bytes, or a symlink's target",
	 KEY_ID_INODE, 8, 0, 0, 0},
	{KEY_CHUNK, "chunk record", "C be64(ino) be64(chunk)",
	 "a chunk file that may exist, and its durable length", KEY_ID_INODE, 8, 8, 0, 0},
	{KEY_ORPHAN, "orphan", "O be64(ino)", "an inode unlinked while still open", KEY_ID_INODE, 8,
	 0, 0, 0},
	{KEY_FLUX, "chunks in flux", "G be64(ino)",
	 "an inode whose chunk records changed since its record was stored", KEY_ID_INODE, 8, 0, 0,
	 0},
};
const size_t key_types_count = sizeof(key_types) / sizeof(key_types[0]);

const struct key_type_info *key_type_find(int letter)
{
	for (size_t i = 0; i < key_types_count; i++)
		if (key_types[i].letter == letter)
			return &key_types[i];
	return NULL;
}

static uint64_t get_be(const uint8_t *p, uint8_t len)
{
	return len == 8 ? get_be64(p) : len == 4 ? get_be32(p) : 0;
}

int key_parse(const uint8_t *k, size_t kl, struct key_parts *kp)
{
	const struct key_type_info *t = kl ? key_type_find(k[0]) : NULL;
	if (!t)
		return -EUCLEAN;
	size_t fixed = 1 + (size_t)t->id_len + t->sub_len;
	if (kl < fixed || kl - fixed < t->tail_min || kl - fixed > t->tail_max)
		return -EUCLEAN;
	kp->type = t;
	kp->id = get_be(k + 1, t->id_len);
	kp->sub = get_be(k + 1 + t->id_len, t->sub_len);
	kp->tail = k + fixed;
	kp->tail_len = kl - fixed;
	return 0;
}

size_t key_meta(uint8_t *out, const char *name)
{
	size_t n = strlen(name);
	out[0] = KEY_META;
	memcpy(out + 1, name, n);
	return 1 + n;
}

size_t key_disk(uint8_t *out, uint32_t index)
{
	out[0] = KEY_DISK;
	put_be32(out + 1, index);
	return 5;
}

size_t key_devstats(uint8_t *out, uint32_t disk)
{
	out[0] = KEY_DEVSTATS;
	put_be32(out + 1, disk);
	return 5;
}

size_t key_section(uint8_t *out, uint32_t section)
{
	out[0] = KEY_SECTION;
	put_be32(out + 1, section);
	return 5;
}

static size_t key_ino(uint8_t *out, uint8_t type, uint64_t ino)
{
	out[0] = type;
	put_be64(out + 1, ino);
	return 9;
}

size_t key_inode(uint8_t *out, uint64_t ino)
{
	return key_ino(out, KEY_INODE, ino);
}

uint64_t dirent_hash(const char *name, size_t nlen)
{
	/* Two top bits clear: offset h + 1 still fits a signed off_t. */
	uint64_t h = XXH3_64bits(name, nlen) >> 2;
	return h < 3 ? 3 : h;
}

size_t key_dirent_prefix(uint8_t *out, uint64_t parent)
{
	return key_ino(out, KEY_DIRENT, parent);
}

size_t key_dirent_pos(uint8_t *out, uint64_t parent, uint64_t hash)
{
	key_ino(out, KEY_DIRENT, parent);
	put_be64(out + 9, hash);
	return 17;
}

size_t key_dirent(uint8_t *out, uint64_t parent, const char *name, size_t nlen)
{
	key_dirent_pos(out, parent, dirent_hash(name, nlen));
	memcpy(out + 17, name, nlen);
	return 17 + nlen;
}

size_t key_xattr_prefix(uint8_t *out, uint64_t ino)
{
	return key_ino(out, KEY_XATTR, ino);
}

size_t key_xattr(uint8_t *out, uint64_t ino, const char *name, size_t nlen)
{
	key_ino(out, KEY_XATTR, ino);
	memcpy(out + 9, name, nlen);
	return 9 + nlen;
}

size_t key_data(uint8_t *out, uint64_t ino)
{
	return key_ino(out, KEY_DATA, ino);
}

size_t key_chunk_prefix(uint8_t *out, uint64_t ino)
{
	return key_ino(out, KEY_CHUNK, ino);
}

size_t key_chunk(uint8_t *out, uint64_t ino, uint64_t chunk)
{
	key_ino(out, KEY_CHUNK, ino);
	put_be64(out + 9, chunk);
	return 17;
}

size_t key_orphan(uint8_t *out, uint64_t ino)
{
	return key_ino(out, KEY_ORPHAN, ino);
}

size_t disk_rec_encode(const uint8_t uuid[16], const char *path, uint8_t out[DISK_REC_MAX])
{
	size_t plen = strlen(path);
	if (plen > DISK_REC_MAX - 16)
		return 0;
	memcpy(out, uuid, 16);
	memcpy(out + 16, path, plen);
	return 16 + plen;
}

const char *const devstat_names[DEVSTAT_KINDS] = {
	[DEVSTAT_READ] = "read_io_errs",
	[DEVSTAT_WRITE] = "write_io_errs",
	[DEVSTAT_CHECKSUM] = "checksum_errs",
	[DEVSTAT_REPAIRED] = "repaired_errs",
};

void devstats_rec_encode(const uint64_t count[DEVSTAT_KINDS], uint8_t out[DEVSTATS_REC_LEN])
{
	for (int i = 0; i < DEVSTAT_KINDS; i++)
		put_le64(out + 8 * i, count[i]);
}

int devstats_rec_decode(const uint8_t *p, size_t len, uint64_t count[DEVSTAT_KINDS])
{
	/* Newer versions may only append counters (ignored here). */
	if (len < DEVSTATS_REC_LEN)
		return -EUCLEAN;
	for (int i = 0; i < DEVSTAT_KINDS; i++)
		count[i] = get_le64(p + 8 * i);
	return 0;
}

void chunk_value_encode_lost(uint64_t len, uint8_t out[CHUNK_LOST_LEN])
{
	put_le64(out, len);
	out[8] = CHUNK_LOST;
}

size_t chunk_value_relength(const uint8_t *old, size_t oldlen, uint64_t len, uint8_t *out)
{
	struct chunk_value cv;
	if (chunk_value_parse(old, oldlen, &cv) || cv.section == CHUNK_HASHED) {
		put_le64(out, len);
		return CHUNK_VAL_LEN;
	}
	struct chunk_place pl = {.section = cv.section, .copies = cv.copies, .stale = cv.stale};
	return chunk_value_put_place(len, 0, 0, &pl, 0, NULL, 0, out);
}

int chunk_value_decode(const uint8_t *p, size_t len, uint64_t *durable)
{
	struct chunk_value cv;
	int rc = chunk_value_parse(p, len, &cv);
	if (rc)
		return rc;
	*durable = cv.durable;
	return 0;
}

bool chunk_value_lost(const uint8_t *p, size_t len)
{
	return len == CHUNK_LOST_LEN && p[8] == CHUNK_LOST;
}

size_t key_flux(uint8_t *out, uint64_t ino)
{
	return key_ino(out, KEY_FLUX, ino);
}

uint32_t chunk_section(uint64_t ino, uint64_t chunk, uint32_t sections)
{
	uint8_t b[16];
	put_le64(b, ino);
	put_le64(b + 8, chunk);
	return (uint32_t)(XXH3_64bits(b, sizeof(b)) % sections);
}

static void put_time(uint8_t *p, int64_t sec, uint32_t nsec)
{
	put_le64(p, (uint64_t)sec);
	put_le32(p + 8, nsec);
}

static void get_time(const uint8_t *p, int64_t *sec, uint32_t *nsec)
{
	*sec = (int64_t)get_le64(p);
	*nsec = get_le32(p + 8);
}

void inode_rec_encode(const struct inode_rec *r, uint8_t out[INODE_REC_LEN])
{
	out[0] = 1;
	out[1] = r->flags;
	put_le32(out + 2, r->mode);
	put_le32(out + 6, r->uid);
	put_le32(out + 10, r->gid);
	put_le32(out + 14, r->nlink);
	put_le64(out + 18, r->size);
	put_le64(out + 26, r->blocks);
	put_le64(out + 34, r->rdev);
	put_le64(out + 42, r->generation);
	put_time(out + 50, r->atime_sec, r->atime_nsec);
	put_time(out + 62, r->mtime_sec, r->mtime_nsec);
	put_time(out + 74, r->ctime_sec, r->ctime_nsec);
	put_time(out + 86, r->btime_sec, r->btime_nsec);
	put_le64(out + 98, r->parent);
}

int inode_rec_decode(const uint8_t *p, size_t len, struct inode_rec *r)
{
	/* Newer record versions may only append fields. */
	if (len < INODE_REC_LEN || p[0] < 1)
		return -EUCLEAN;
	r->flags = p[1];
	r->mode = get_le32(p + 2);
	r->uid = get_le32(p + 6);
	r->gid = get_le32(p + 10);
	r->nlink = get_le32(p + 14);
	r->size = get_le64(p + 18);
	r->blocks = get_le64(p + 26);
	r->rdev = get_le64(p + 34);
	r->generation = get_le64(p + 42);
	get_time(p + 50, &r->atime_sec, &r->atime_nsec);
	get_time(p + 62, &r->mtime_sec, &r->mtime_nsec);
	get_time(p + 74, &r->ctime_sec, &r->ctime_nsec);
	get_time(p + 86, &r->btime_sec, &r->btime_nsec);
	r->parent = get_le64(p + 98);
	if (r->atime_nsec >= 1000000000u || r->mtime_nsec >= 1000000000u ||
	    r->ctime_nsec >= 1000000000u || r->btime_nsec >= 1000000000u)
		return -EUCLEAN;
	return 0;
}

void dirent_val_encode(uint64_t ino, uint8_t type, uint8_t out[DIRENT_VAL_LEN])
{
	put_le64(out, ino);
	out[8] = type;
}

int dirent_val_decode(const uint8_t *p, size_t len, uint64_t *ino,
		      uint8_t *type)
{
	if (len < DIRENT_VAL_LEN)
		return -EUCLEAN;
	*ino = get_le64(p);
	*type = p[8];
	return *ino ? 0 : -EUCLEAN;
}

size_t fs_info_encode(const struct fs_info *fi, uint8_t out[FS_INFO_MAX])
{
	uint8_t *p = out;
	size_t llen = strnlen(fi->label, 16);
	put_le32(p, fi->version), p += 4;
	memcpy(p, fi->fs_uuid, 16), p += 16;
	put_le32(p, fi->sections), p += 4;
	put_le64(p, fi->chunk_size), p += 8;
	put_le32(p, fi->inline_max), p += 4;
	put_le32(p, fi->ndisks), p += 4;
	put_le64(p, fi->created), p += 8;
	*p++ = (uint8_t)llen;
	memcpy(p, fi->label, llen), p += llen;
	return (size_t)(p - out);
}

int filter_record_decode(const uint8_t *v, size_t vl, struct store_filter *f, char text[64])
{
	snprintf(text, 64, "%.*s", (int)(vl < 63 ? vl : 63), (const char *)v);
	return vl < 64 && store_filter_parse(text, f) == 0 ? 0 : -EUCLEAN;
}

int fs_info_decode(const uint8_t *p, size_t len, struct fs_info *fi)
{
	const size_t fixed = FS_INFO_MAX - 16;
	if (len < fixed)
		return -EUCLEAN;
	memset(fi, 0, sizeof(*fi));
	fi->version = get_le32(p);
	memcpy(fi->fs_uuid, p + 4, 16);
	fi->sections = get_le32(p + 20);
	fi->chunk_size = get_le64(p + 24);
	fi->inline_max = get_le32(p + 32);
	fi->ndisks = get_le32(p + 36);
	fi->created = get_le64(p + 40);
	size_t llen = p[48];
	if (llen > 16 || len < fixed + llen)
		return -EUCLEAN;
	memcpy(fi->label, p + 49, llen);
	if (fi->sections == 0 || fi->sections > LSMFS_MAX_SECTIONS || fi->ndisks == 0 ||
	    fi->ndisks > LSMFS_MAX_DISKS || fi->chunk_size < 4096 ||
	    (fi->chunk_size & (fi->chunk_size - 1)))
		return -EUCLEAN;
	return 0;
}
