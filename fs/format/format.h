/*
 * format.h: what lsmfs puts on its disks, outside the metadata store's
 * keys (those are schema.h's): the names inside a backing disk, the
 * superblock (one checksummed file per disk, <disk>/.lsmfs/super;
 * fs/SCHEMA.md "Superblock"), the formatter of a new filesystem, the
 * filesystem information record as a mount reads it, and the sections
 * (where chunk files live, the section map).  Used by mkfs.lsmfs, the
 * tools and every layer of fs/ above base (fs/ARCHITECTURE.md).
 *
 * Every function returns 0 or a negative errno.  Those that take an
 * (err, errlen) pair write a one-line reason there on failure, naming the
 * disk or file, ready to print after "prog: ".
 */
#ifndef LSMFS_FORMAT_H
#define LSMFS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "store.h" /* struct store_filter */

#define LSMFS_VERSION 1              /* on-disk format version (store) */
#define LSMFS_SUPER_VERSION 3        /* superblock version written (1 and 2 are read) */
#define LSMFS_MAX_DISKS 64
#define LSMFS_LABEL_MAX 16           /* bytes, like ext4's volume label */
#define LSMFS_META_PATH_MAX 1024
#define LSMFS_DEFAULT_SECTIONS 1024
#define LSMFS_MAX_SECTIONS (1u << 20)     /* the section map is read whole at mount */
#define LSMFS_DEFAULT_CHUNK_SIZE (4u << 20)
#define LSMFS_DEFAULT_INLINE_MAX 4096u
/* The daemon's accounting (SCHEMA.md, "Statistics"), one JSON object: the
 * root's virtual xattr while mounted, and a file in the store's directory
 * that it refreshes while mounted and writes last at unmount. */
#define FS_STATS_XATTR "user.lsmfs.stats"
#define FS_STATS_FILE "stats.json"
#define LSMFS_ROOT_INO 1
#define LSMFS_LOST_FOUND_INO 2
/* The version line of every program, on stdout (release.c): "PROG RELEASE
 * (format N)", or "PROG RELEASE (format N, EXTRA)" when extra is not NULL. */
void lsmfs_print_version(const char *prog, const char *extra);

/* Names of things inside a backing disk. */
#define LSMFS_DIR ".lsmfs"               /* <disk>/.lsmfs/ */
#define LSMFS_SUPER_FILE "super"         /* <disk>/.lsmfs/super */
#define LSMFS_LOCK_FILE "lock"           /* <disk>/.lsmfs/lock (flock) */
#define LSMFS_META_DIR "meta"            /* default store: <disk0>/.lsmfs/meta */
#define LSMFS_SECTIONS_DIR "sections"    /* <disk>/.lsmfs/sections/<s>/ */
#define LSMFS_EVACUATED_DIR "evacuated"  /* <disk>/.lsmfs/evacuated/: kept by an evacuation */
#define LSMFS_META_MARK "lsmfs-meta"     /* file in a --meta directory */

/* One copy of the metadata store (SCHEMA.md "Store copies"). */
#define LSMFS_MAX_META_COPIES 4
#define LSMFS_META_ON_DIR UINT32_MAX /* a directory of its own (mkfs --meta) */
#define LSMFS_META_STALE 1u          /* behind the others: never read */
struct lsmfs_meta_copy {
	uint32_t disk;                   /* in <disk>/.lsmfs/meta, or LSMFS_META_ON_DIR */
	/* LSMFS_META_STALE: not in the superblock but in the copy states
	 * (<disk>/.lsmfs/copies, fs/disks/copystate.c), set by diskset_open. */
	uint32_t flags;
	/* Also of the copy states only: the epoch since which the copy has
	 * its state (stale or not, as since_flags says; copies_write moves
	 * it on when flags differ). */
	uint64_t since;
	uint32_t since_flags;
	char dir[LSMFS_META_PATH_MAX];   /* LSMFS_META_ON_DIR: absolute path; else "" */
};

/* One disk's superblock, decoded (SCHEMA.md, "Superblock"). */
struct lsmfs_super {
	uint32_t version;
	uint8_t fs_uuid[16];
	uint8_t disk_uuid[16];
	uint32_t disk_index;             /* 0 .. disk_count-1 */
	uint32_t disk_count;             /* slots in disk_uuids (some may be empty) */
	uint32_t sections;               /* N, fixed at mkfs */
	uint64_t chunk_size;             /* bytes, a power of two >= 4096 */
	uint32_t inline_max;             /* bytes */
	uint64_t created;                /* seconds since the epoch */
	char label[LSMFS_LABEL_MAX + 1]; /* NUL-terminated */
	/* Where the metadata store is kept: meta_count copies, each whole
	 * (SCHEMA.md "Store copies"); version 1 and 2: one. */
	uint32_t meta_count;
	struct lsmfs_meta_copy meta[LSMFS_MAX_META_COPIES];
	/* The disk set's generation: raised by every change of the disk list
	 * or the store's disk (SCHEMA.md, "Adding and removing disks"); the
	 * highest among a filesystem's disks is the truth. */
	uint64_t generation;
	uint32_t flags;                  /* SUPER_RETIRED */
	/* Every disk, by index; all zero: an empty slot (a removed disk). */
	uint8_t disk_uuids[LSMFS_MAX_DISKS][16];
};
/* A disk removed from the filesystem: it holds nothing of it but this
 * superblock, kept so that the directory is never taken for a member. */
#define SUPER_RETIRED 1u

/* Encode into buf (cap bytes); *len is the encoded size.  -ENOSPC if cap is
 * too small (LSMFS_SUPER_MAX is always enough). */
#define LSMFS_SUPER_MAX 8192
int super_encode(const struct lsmfs_super *sb, uint8_t *buf, size_t cap,
		 size_t *len);
/* Decode and verify magic, version and checksum.  -EUCLEAN on damage, with
 * the reason (naming the byte offset) in err. */
int super_decode(const uint8_t *buf, size_t len, struct lsmfs_super *sb,
		 char *err, size_t errlen);
/* Read <disk>/.lsmfs/super.  -ENOENT if the disk has no superblock (not an
 * lsmfs disk; an empty directory is said to be one, as the mount point of
 * a disk that did not mount), -EUCLEAN if it is damaged. */
int super_read(const char *disk, struct lsmfs_super *sb, char *err,
	       size_t errlen);
/* Write <disk>/.lsmfs/super atomically and durably (temp file, fsync,
 * rename, fsync the directory).  Creates <disk>/.lsmfs if needed. */
int super_write(const char *disk, const struct lsmfs_super *sb, char *err,
		size_t errlen);
/* The same copies of the store, in the same places. */
bool super_copies_equal(const struct lsmfs_super *a, const struct lsmfs_super *b);
/* Slot d of sb's disk list is empty (or past its count). */
bool super_slot_empty(const struct lsmfs_super *sb, uint32_t d);

/* Parameters of a new filesystem, for fs_format. */
struct fs_format_params {
	uint8_t fs_uuid[16];
	uint32_t sections;
	uint64_t chunk_size;
	uint32_t inline_max;
	uint32_t ndisks;
	const char *disk_paths[LSMFS_MAX_DISKS];
	uint8_t disk_uuids[LSMFS_MAX_DISKS][16];
	const char *label;
	uint64_t created;
	/* Further copies of the store (SCHEMA.md "Store copies"), made
	 * along with store_dir's, every one whole. */
	const char *store_copies[LSMFS_MAX_META_COPIES - 1];
	uint32_t nstore_copies;
	/* The store's table filter, kept in `M filter` (SCHEMA.md). */
	struct store_filter filter;
	/* The root's data policy (SCHEMA.md "Placement", "Copies"), which
	 * what is made below inherits: copies of each chunk (0: one), and
	 * "spread" or "together" (NULL: spread). */
	uint32_t data_copies;
	const char *placement;
};

/*
 * Create the metadata store in store_dir (which must not hold one) and
 * write the initial keys: filesystem info, inode counter, disk table,
 * section map (section s on disk s mod ndisks), the root directory and
 * /lost+found.  Also creates <disk>/.lsmfs/sections/<s>/ for every section
 * on the disk it maps to.  Durable when it returns 0.
 */
int fs_format(const char *store_dir, const struct fs_format_params *p,
	      char *err, size_t errlen);

struct fs_info;
/* The filesystem info (`M fs`) of the store st, decoded into fi: -EUCLEAN
 * when missing or damaged, -EXDEV when it disagrees with sb (UUID,
 * sections, chunk size); err names where (the store's directory). */
int fs_info_load(struct store *st, const struct lsmfs_super *sb, const char *where,
		 struct fs_info *fi, char *err, size_t errlen);

/* ---- Sections (section.c; SCHEMA.md "Sharding", "Moving a section") ----
 * The one place that names section directories and chunk files, reads the
 * section map and places sections on disks. */
#define SECTION_NAME_MAX 16              /* "<s>" with its NUL */
#define SECTION_VAL_LEN 4                /* `P` value: le32 disk index */
#define SECTION_MOVE_LEN 12              /* `M move` value */
/* The section of copy i of a chunk whose first copy is in section s: s,
 * then its partner s ^ 1 (SCHEMA.md "Copies": partners are never on one
 * disk while there are two); UINT32_MAX when that is past the count. */
uint32_t section_of_copy(uint32_t s, unsigned i, uint32_t sections);
/* The disk mkfs gives section s among ndisks: s mod ndisks. */
uint32_t section_first_disk(uint32_t section, uint32_t ndisks);
/* "<s>/<ino>.<chunk>", relative to a disk's sections directory. */
void section_chunk_name(uint64_t ino, uint64_t chunk, uint32_t section, char *out, size_t cap);
/* "<s>": a section's directory, relative to the sections directory. */
void section_dir_name(uint32_t section, char out[SECTION_NAME_MAX]);
/* <disk>/.lsmfs/sections */
void section_disk_dir(const char *disk, char *out, size_t cap);
/* <disk>/.lsmfs/evacuated: what an evacuation of the disk kept there
 * (SCHEMA.md "Evacuating"); no tool looks inside. */
void section_evacuated_dir(const char *disk, char *out, size_t cap);
/* 1 and the section when name is a section directory's name exactly as
 * section_dir_name writes it, below sections; else 0. */
int section_dir_parse(const char *name, uint32_t sections, uint32_t *section);
/* 1 and (ino, chunk) when name is "<ino>.<chunk>" exactly as
 * section_chunk_name writes it; else 0. */
int section_chunk_parse(const char *name, uint64_t *ino, uint64_t *chunk);
void section_value_encode(uint32_t disk, uint8_t out[SECTION_VAL_LEN]);
/* A `P` value: 0 and *disk (any number: whether that disk is one of the
 * filesystem's is the caller's question), or -EUCLEAN when malformed. */
int section_value_decode(const uint8_t *v, size_t vl, uint32_t *disk);
/* A `P` key and value: 0, or -EUCLEAN when malformed. */
int section_entry_decode(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
			 uint32_t *section, uint32_t *disk);
/* The map into disk_of[sections] (UINT32_MAX: no entry).  A malformed
 * entry or one past the section count goes to bad (NULL: -EUCLEAN), whose
 * non-zero return stops the read and is returned. */
int section_map_read(struct store *st, uint32_t sections, uint32_t *disk_of,
		     int (*bad)(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl),
		     void *ctx);
/* The move in progress (`M move`, SCHEMA.md "Moving a section"). */
struct section_move {
	uint32_t section, from, to;
};
void section_move_encode(const struct section_move *m, uint8_t out[SECTION_MOVE_LEN]);
int section_move_decode(const uint8_t *v, size_t vl, struct section_move *m);
/* 1 and *m when a move is recorded, 0 when none, or a negative errno
 * (-EUCLEAN: the record is damaged). */
int section_move_get(struct store *st, struct section_move *m);

#endif
