/*
 * schema.h: encoders and decoders for the keys and records of the metadata
 * store, exactly as fs/SCHEMA.md ("Keys of the metadata store") lays them
 * out.  Shared by the daemon, mkfs (fs_format) and the offline tools.
 * Pure functions, no locking.  Decoders take (p, len) and return -EUCLEAN
 * on a short or malformed input.
 */
#ifndef LSMFS_SCHEMA_H
#define LSMFS_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coding.h" /* put_le32, get_be64, ...: the byte codecs */
#include "store.h"  /* struct store_filter */

/* Key types (first byte). */
#define KEY_META 'M'
#define KEY_DISK 'K'
#define KEY_DEVSTATS 'E'
#define KEY_SECTION 'P'
#define KEY_INODE 'I'
#define KEY_DIRENT 'D'
#define KEY_XATTR 'X'
#define KEY_DATA 'F'
#define KEY_CHUNK 'C'
#define KEY_ORPHAN 'O'
#define KEY_FLUX 'G'

#define META_FS "fs"
#define META_NEXT_INO "next_ino"
#define META_MOUNTED "mounted" /* fs/engine/background/sweep.c: mounted read-write, or a crash */
#define META_MOVE "move"       /* fs/admin/move.c: a section move in progress */
#define META_FILTER "filter"   /* the store's table filter policy, as text */
#define META_SCRUB "scrub"     /* fs/admin/scrub.c: the last scrub, as it stood */
#define META_REPLACE "replace" /* fs/admin/replace.c: a disk being replaced */

#define NAME_MAX_BYTES 255
/* Longest key: type, be64 parent, be64 hash, 255-byte name. */
#define KEY_MAX (1 + 8 + 8 + NAME_MAX_BYTES)

/*
 * The key types, one entry each, in the order lsmfs-inspect's help lists
 * them (SCHEMA.md "Keys of the metadata store" is this table in prose).
 * A key is its letter, then a big-endian number of id_len bytes (what id
 * says it is), then sub_len bytes of a second big-endian number (D: the
 * name's hash; C: the chunk), then a name of tail_min..tail_max bytes.
 * lsmfs-inspect's help, man page and completion are checked against it
 * (tests/doc), so a type added here and not there fails a test.
 */
enum key_id { KEY_ID_NONE, KEY_ID_INODE, KEY_ID_SECTION, KEY_ID_DISK };
struct key_type_info {
	char letter;        /* the first byte: KEY_* */
	const char *name;   /* "inode record" */
	const char *layout; /* its fields, as SCHEMA.md writes them */
	const char *about;  /* what it is, in a line */
	enum key_id id;     /* what the number after the letter names */
	uint8_t id_len;     /* 0, 4 or 8 */
	uint8_t sub_len;    /* 0 or 8 */
	size_t tail_min, tail_max;
};
extern const struct key_type_info key_types[];
extern const size_t key_types_count;
/* The type of that first byte, or NULL. */
const struct key_type_info *key_type_find(int letter);

/* A key taken apart.  tail points into the key. */
struct key_parts {
	const struct key_type_info *type;
	uint64_t id;         /* inode, section or disk; 0 for M */
	uint64_t sub;        /* D: the name's hash; C: the chunk; else 0 */
	const uint8_t *tail; /* D, X: the name; M: the record's name */
	size_t tail_len;
};
/* 0 and *kp when k has one of the types' layouts; else -EUCLEAN. */
int key_parse(const uint8_t *k, size_t kl, struct key_parts *kp);

/* Keys: each writes into out (KEY_MAX bytes) and returns the key length. */
size_t key_meta(uint8_t *out, const char *name);
size_t key_disk(uint8_t *out, uint32_t index);
size_t key_devstats(uint8_t *out, uint32_t disk);
size_t key_section(uint8_t *out, uint32_t section);
size_t key_inode(uint8_t *out, uint64_t ino);
/* Full dirent key; name is nlen bytes (1..255). */
size_t key_dirent(uint8_t *out, uint64_t parent, const char *name, size_t nlen);
/* Dirent key without the name: the position of hash in parent's listing. */
size_t key_dirent_pos(uint8_t *out, uint64_t parent, uint64_t hash);
/* Prefix of every key of parent's entries (9 bytes). */
size_t key_dirent_prefix(uint8_t *out, uint64_t parent);
size_t key_xattr(uint8_t *out, uint64_t ino, const char *name, size_t nlen);
size_t key_xattr_prefix(uint8_t *out, uint64_t ino);
size_t key_data(uint8_t *out, uint64_t ino);
size_t key_chunk(uint8_t *out, uint64_t ino, uint64_t chunk);
size_t key_chunk_prefix(uint8_t *out, uint64_t ino);
size_t key_orphan(uint8_t *out, uint64_t ino);
size_t key_flux(uint8_t *out, uint64_t ino);

/* The readdir hash of a name (SCHEMA.md, "Directory entries"): >= 3. */
uint64_t dirent_hash(const char *name, size_t nlen);

/* Section of a chunk: XXH3-64(le64(ino) || le64(chunk)) mod sections. */
uint32_t chunk_section(uint64_t ino, uint64_t chunk, uint32_t sections);

/* Inode record (SCHEMA.md, "Inode record"). */
#define INODE_REC_LEN 106
#define INODE_FLAG_CHUNKED 1u
#define INODE_FLAG_XATTR 2u   /* has (or had) extended attributes */
struct inode_rec {
	uint8_t flags;
	uint32_t mode, uid, gid, nlink;
	uint64_t size, blocks, rdev, generation;
	uint64_t parent;        /* directories: the parent's inode; else 0 */
	int64_t atime_sec, mtime_sec, ctime_sec, btime_sec;
	uint32_t atime_nsec, mtime_nsec, ctime_nsec, btime_nsec;
};
void inode_rec_encode(const struct inode_rec *r, uint8_t out[INODE_REC_LEN]);
int inode_rec_decode(const uint8_t *p, size_t len, struct inode_rec *r);

/* Directory entry value: le64 ino, u8 type. */
#define DIRENT_VAL_LEN 9
void dirent_val_encode(uint64_t ino, uint8_t type, uint8_t out[DIRENT_VAL_LEN]);
int dirent_val_decode(const uint8_t *p, size_t len, uint64_t *ino,
		      uint8_t *type);

/* Chunk record value (SCHEMA.md, "Chunk lengths", "Chunk checksums" and
 * "Placement"): empty (length not known) or le64, the bytes of the chunk
 * file made durable; or CHUNK_LOST_LEN bytes, le64 length then u8 flags
 * CHUNK_LOST: bytes lost with their disk (`lsmfs-disk remove --lost`,
 * SCHEMA.md "A disk lost"); or le64 length, u8 flags (CHUNK_SUMS,
 * CHUNK_INWRITE, CHUNK_PLACED), le32 the mount that wrote it, u8 block
 * shift (0 without sums), with CHUNK_PLACED le32 the section that holds
 * the file (its first copy), with CHUNK_COPIES (and CHUNK_PLACED) u8 the
 * number of copies and u8 the mask of those that are stale, then with
 * CHUNK_SUMS one le32 sum per block.  A value without CHUNK_PLACED has its
 * file in chunk_section's section; one without CHUNK_COPIES, one copy. */
#define CHUNK_VAL_LEN 8
#define CHUNK_LOST_LEN 9
#define CHUNK_LOST 1u
#define CHUNK_SUMS 2u     /* the value carries the blocks' sums */
#define CHUNK_INWRITE 4u  /* the file may have changed since those sums (a crash: recomputed) */
#define CHUNK_PLACED 8u   /* the value names the chunk's section */
#define CHUNK_COPIES 16u  /* the value gives its copies and the stale ones */
#define CHUNK_SUMS_HDR 14
#define CHUNK_PLACED_HDR 18
#define CHUNK_COPIES_HDR 20
#define CHUNK_MAX_COPIES 2 /* copy 1 in the first copy's partner section */
#define CHUNK_HASHED UINT32_MAX /* a section not named: chunk_section's */
/* sums.c: blocks of 2^shift bytes, 4 KiB up to 64 KiB, at most
 * SUMS_MAX_BLOCKS per chunk where the chunk size allows. */
#define SUMS_MIN_SHIFT 12
#define SUMS_MAX_SHIFT 16
#define SUMS_MAX_BLOCKS 1024
#define CHUNK_VALUE_MAX(chunk_size) \
	(CHUNK_COPIES_HDR + 4 * (size_t)((chunk_size) >> sums_block_shift(chunk_size)))
unsigned sums_block_shift(uint64_t chunk_size);
/* The sum of one block of bsize bytes of chunk (ino, chunk): p holds the
 * first len of them, the rest are zeros.  Never 0. */
uint32_t sums_block(const void *p, size_t len, size_t bsize, uint64_t ino, uint64_t chunk);
struct chunk_value {
	uint64_t durable;
	uint8_t flags;          /* CHUNK_LOST, CHUNK_SUMS, CHUNK_INWRITE, CHUNK_PLACED */
	uint32_t gen;           /* with SUMS or INWRITE: the mount that wrote it */
	uint8_t shift;          /* with SUMS: the block shift */
	uint32_t section;       /* with PLACED: the chunk's section; else CHUNK_HASHED */
	uint8_t copies;         /* 1, or with COPIES up to CHUNK_MAX_COPIES */
	uint8_t stale;          /* with COPIES: bit i, copy i lacks data (not read) */
	uint32_t nsums;
	const uint8_t *sums;    /* into the value: le32 x nsums (0: not known) */
};
/* 0 and *cv (pointing into p), or -EUCLEAN. */
int chunk_value_parse(const uint8_t *p, size_t len, struct chunk_value *cv);
uint32_t chunk_value_sum(const struct chunk_value *cv, uint32_t i);
/* Where a chunk's files are (SCHEMA.md "Placement", "Copies"): copy i in
 * section_of_copy(section, i), copies of them, those in stale lacking
 * data. */
struct chunk_place {
	uint32_t section;
	uint8_t copies, stale;
};
/* Into out (CHUNK_VALUE_MAX bytes); its length.  section: CHUNK_HASHED
 * writes no CHUNK_PLACED (the older form); one copy. */
size_t chunk_value_put(uint64_t durable, uint8_t flags, uint32_t gen, uint32_t section,
		       unsigned shift, const uint32_t *sums, uint32_t nsums, uint8_t *out);
/* The same at place (section CHUNK_HASHED: one copy, the older form;
 * more copies or stale ones: CHUNK_COPIES). */
size_t chunk_value_put_place(uint64_t durable, uint8_t flags, uint32_t gen,
			     const struct chunk_place *place, unsigned shift, const uint32_t *sums,
			     uint32_t nsums, uint8_t *out);
/* A value of durable length len and nothing else, naming the place the
 * value old (oldlen bytes; anything, even damaged) names: into out
 * (CHUNK_COPIES_HDR bytes), its length. */
size_t chunk_value_relength(const uint8_t *old, size_t oldlen, uint64_t len, uint8_t *out);
void chunk_value_encode_lost(uint64_t len, uint8_t out[CHUNK_LOST_LEN]);
/* 0 and *durable (0 when unknown), or -EUCLEAN. */
int chunk_value_decode(const uint8_t *p, size_t len, uint64_t *durable);
/* A whole value that says its bytes were lost with their disk. */
bool chunk_value_lost(const uint8_t *p, size_t len);
/* The section that holds chunk (ino, chunk) of a filesystem of `sections`
 * sections, by its record's value (p, len; NULL: no record): the one it
 * names, else chunk_section's.  -EUCLEAN: a value that names one past the
 * count (or cannot be read; *section is then chunk_section's). */
int chunk_value_section(const uint8_t *p, size_t len, uint64_t ino, uint64_t chunk,
			uint32_t sections, uint32_t *section);
/* chunk_value_section's, with the copies: -EUCLEAN also for copies whose
 * section does not exist (place then has one copy). */
int chunk_value_place(const uint8_t *p, size_t len, uint64_t ino, uint64_t chunk,
		      uint32_t sections, struct chunk_place *place);


/* What a scrub found (chunk_scrub, SCHEMA.md "Scrub"): chunks scrubbed,
 * bytes read, errors (damage found, per copy), repaired, unrepaired (left:
 * errors = repaired + unrepaired), copies rebuilt and not rebuilt, chunks
 * skipped. */
struct scrub_count {
	uint64_t chunks, bytes, errors, repaired, unrepaired, rebuilt, unrebuilt, skipped;
};
/* The last scrub (`M scrub`, scrub_record.c; SCHEMA.md "Scrub"). */
enum scrub_state {
	SCRUB_NONE,        /* never scrubbed */
	SCRUB_RUNNING,     /* (stored: running, or a daemon died while it ran) */
	SCRUB_FINISHED,
	SCRUB_CANCELLED,
	SCRUB_INTERRUPTED, /* unmount, remount read-only */
	SCRUB_FAILED,      /* stopped by an error (error) */
	SCRUB_STATES
};
struct scrub_file {
	uint64_t ino;
	char *path;        /* malloc'd */
};
struct scrub_record {
	uint8_t state;
	uint64_t started, updated;     /* unix seconds: the first start, the last save */
	uint64_t elapsed_ms;           /* scrubbing, over every run */
	uint64_t ino, chunk;           /* where it goes on: every chunk before is done */
	uint64_t rate;                 /* bytes/s, 0: no limit */
	struct scrub_count count;
	uint64_t total_chunks, total_bytes; /* an estimate, at the last start */
	uint32_t error;                /* the errno that stopped it (failed) */
	uint32_t files;                /* files with errors left */
	size_t nnamed;                 /* those named below, the first found */
	struct scrub_file *named;      /* malloc'd */
};
#define SCRUB_RECORD_VERSION 1
#define SCRUB_RECORD_FIXED 138      /* the value up to the files */
extern const char *const scrub_state_names[SCRUB_STATES];
/* The value of r, malloc'd into *out (*len bytes): 0 or -ENOMEM. */
int scrub_record_encode(const struct scrub_record *r, uint8_t **out, size_t *len);
/* 0 and *r (its named files malloc'd: scrub_record_free), or -EUCLEAN
 * (a value this version does not read), or -ENOMEM. */
int scrub_record_decode(const uint8_t *v, size_t vl, struct scrub_record *r);
void scrub_record_free(struct scrub_record *r);
/* 1 and *r when the store st has one, 0 (and *r of state SCRUB_NONE)
 * when not, or -errno. */
int scrub_record_get(struct store *st, struct scrub_record *r);

/* A disk being replaced (`M replace`, replace_record.c; SCHEMA.md
 * "Replacing a disk"): the old disk by index and UUID, the new one by
 * UUID (its index is the slot that has it). */
struct replace_record {
	uint32_t old;
	uint8_t old_uuid[16], new_uuid[16];
};
#define REPLACE_RECORD_VERSION 1
#define REPLACE_RECORD_LEN 37
void replace_record_encode(const struct replace_record *r, uint8_t out[REPLACE_RECORD_LEN]);
/* 0 and *r, or -EUCLEAN (a value this version does not read, an index
 * past the disks, a UUID of zeros, or the two the same). */
int replace_record_decode(const uint8_t *v, size_t vl, struct replace_record *r);
/* 1 and *r when the store st has one, 0 when not, or -errno. */
int replace_record_get(struct store *st, struct replace_record *r);

/* Disk record value (`K`): the disk's 16-byte UUID, then its path (no
 * NUL).  Into out (DISK_REC_MAX bytes); the length, or 0 when the path is
 * longer than a Linux path may be (PATH_MAX, 4096). */
#define DISK_REC_MAX (16 + 4096)
size_t disk_rec_encode(const uint8_t uuid[16], const char *path, uint8_t out[DISK_REC_MAX]);

/* Error counters of a disk (`E`, SCHEMA.md "Error counters"), as `btrfs
 * device stats` keeps them: one le64 per kind, in this order.  A longer
 * value is a newer version's (counters appended): its first ones read.
 * devstat_names: each kind's name, as `lsmfs-disk stats` prints it and
 * the JSON of the status and the statistics carries it. */
enum devstat {
	DEVSTAT_READ,     /* a read of a chunk file failed (the medium, or the file) */
	DEVSTAT_WRITE,    /* a write, fsync, creation or removal of one failed */
	DEVSTAT_CHECKSUM, /* bytes read did not match their checksum */
	DEVSTAT_REPAIRED, /* a bad copy rewritten from a good one */
	DEVSTAT_KINDS
};
#define DEVSTATS_REC_LEN (8 * DEVSTAT_KINDS)
extern const char *const devstat_names[DEVSTAT_KINDS];
void devstats_rec_encode(const uint64_t count[DEVSTAT_KINDS], uint8_t out[DEVSTATS_REC_LEN]);
/* 0 and count[], or -EUCLEAN (shorter than DEVSTATS_REC_LEN). */
int devstats_rec_decode(const uint8_t *p, size_t len, uint64_t count[DEVSTAT_KINDS]);

/* Filesystem info (`M` `fs`). */
struct fs_info {
	uint32_t version;
	uint8_t fs_uuid[16];
	uint32_t sections;
	uint64_t chunk_size;
	uint32_t inline_max;
	uint32_t ndisks;
	uint64_t created;
	char label[17];
};
#define FS_INFO_MAX (4 + 16 + 4 + 8 + 4 + 4 + 8 + 1 + 16)
size_t fs_info_encode(const struct fs_info *fi, uint8_t out[FS_INFO_MAX]);
int fs_info_decode(const uint8_t *p, size_t len, struct fs_info *fi);
/* The `M filter` record (the store's table filter as text): 0 and *f, or
 * -EUCLEAN when it does not parse; text gets the record, cut to fit, for
 * messages. */
int filter_record_decode(const uint8_t *v, size_t vl, struct store_filter *f, char text[64]);

#endif
