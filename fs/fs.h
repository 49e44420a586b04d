/*
 * fs.h: the public face of the lsmfs filesystem module for the daemon's
 * command line, mkfs.lsmfs and the offline tools (fsck, inspect).
 *
 * Three parts:
 *   - superblocks: one checksummed file per backing disk, <disk>/.lsmfs/super
 *     (format in fs/SCHEMA.md, "Superblock");
 *   - disk sets: the disks of one filesystem, checked against each other,
 *     ordered by disk index, optionally locked against a second user;
 *   - formatting: the initial contents of the metadata store.
 * The FUSE side (struct fs and its operations) is internal: fs_int.h.
 *
 * Every function returns 0 or a negative errno.  Those that take an
 * (err, errlen) pair write a one-line reason there on failure, naming the
 * disk or file, ready to print after "prog: ".
 */
#ifndef LSMFS_FS_H
#define LSMFS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	 * (<disk>/.lsmfs/copies, fs/copies.c), set by diskset_open. */
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
/* fsync a directory by path (its entries made durable): 0 or -errno. */
int lsmfs_fsync_dir(const char *path);
/* 0 if the directory path holds nothing, -ENOTEMPTY if it holds anything,
 * else -errno (not a directory, unreadable). */
int lsmfs_dir_empty(const char *path);
/* dir/name = data, atomically and durably (dir/name.tmp written and
 * synced, renamed over, dir synced): 0 or -errno. */
int lsmfs_write_file(const char *dir, const char *name, const void *data, size_t len);
/* Format a UUID as 36 characters plus NUL into out[37]; parse one back. */
void lsmfs_uuid_format(const uint8_t uuid[16], char out[37]);
int lsmfs_uuid_parse(const char *s, uint8_t uuid[16]);
/* The version line of every program, on stdout (release.c): "PROG RELEASE
 * (format N)", or "PROG RELEASE (format N, EXTRA)" when extra is not NULL. */
void lsmfs_print_version(const char *prog, const char *extra);
/* 16 random bytes shaped as a version 4 UUID (getrandom). */
int lsmfs_uuid_generate(uint8_t uuid[16]);

/* An opened set of disks: every disk of one filesystem, each exactly once. */
struct lsmfs_diskset {
	uint32_t ndisks;
	char *paths[LSMFS_MAX_DISKS];    /* by disk index, as given (realpath) */
	/* The reference superblock (the highest generation given), as the
	 * first disk present's. */
	struct lsmfs_super sb;
	/* The store's copies (sb.meta), resolved: each one's directory, and
	 * bit i of meta_absent when copy i is not there (its disk missing,
	 * its directory gone, or another filesystem's).  meta_dir: the copy
	 * the store is opened by, meta_primary: its index, the first copy
	 * there that is not stale. */
	char meta_paths[LSMFS_MAX_META_COPIES][LSMFS_META_PATH_MAX + 64];
	uint32_t meta_absent;
	uint32_t meta_primary;
	/* The copy states' epoch (copies.c): sb.meta[].flags came from the
	 * files of this epoch. */
	uint64_t copies_epoch;
	/* Copies that diverged (copies.c): bit i for a copy written by a
	 * mount without another that was written by a mount without it;
	 * both are stale until one is chosen (copies_choose).  diverged_with
	 * [i]: the copies i parted from. */
	uint32_t copies_diverged;
	uint32_t diverged_with[LSMFS_MAX_META_COPIES];
	/* DISKSET_FORCE: a read-write open may take the copies here for the
	 * newest although a missing one may hold writes they lack. */
	bool force;
	char meta_dir[LSMFS_META_PATH_MAX + 64];
	int lock_fds[LSMFS_MAX_DISKS];   /* -1 when not locked */
	/* DISKSET_TOLERANT: bit i set when disk i's superblock is damaged
	 * (or gone); sb then holds what it must say, rebuilt from the other
	 * disks' copies, for super_write to put back (fsck). */
	uint64_t super_damaged;
	/* DISKSET_CLASH: two disks whose superblocks both say they are disk
	 * clash_index (one a copy of the other's), and clash_spare, the one
	 * index no superblock claims.  paths[clash_index] and
	 * paths[clash_spare] hold the two in an order that is only a guess
	 * (the one holding the metadata store at 0 when the store is disk
	 * 0's); fsck tells which is which (diskset_swap) and rewrites the
	 * superblock of the disk at clash_spare.  clash false: no such pair. */
	bool clash;
	uint32_t clash_index, clash_spare;
	/* Bit d: disk d's superblock is of an older generation than sb (a
	 * crash came between the writes of a change to the disk set);
	 * diskset_write_supers brings it up to date. */
	uint64_t stale;
	/* DISKSET_LOCK_SHARED: the locks are shared (a read-only mount):
	 * nothing is written into the lock files. */
	bool shared;
	/* DISKSET_DEGRADED: bit d for a member (a non-empty slot) that was
	 * not given; paths[d] is NULL as for an empty slot. */
	uint64_t missing;
};
/* Disk d is a member and present: a non-empty slot below ndisks.  Safe
 * against a daemon adding or removing a disk meanwhile (the path is
 * published last, taken away first). */
static inline bool diskset_present(const struct lsmfs_diskset *ds, uint32_t d)
{
	return d < __atomic_load_n(&ds->ndisks, __ATOMIC_ACQUIRE) && d < LSMFS_MAX_DISKS &&
	       __atomic_load_n(&ds->paths[d], __ATOMIC_ACQUIRE) != NULL;
}
/* The copy states file (<disk>/.lsmfs/copies, copies.c): load sets
 * ds->sb.meta[].flags (LSMFS_META_STALE) and ds->copies_epoch from the
 * disks given; write puts ds->sb.meta[].flags on every disk present with
 * the next epoch (0 when at least one disk took it; the first failure
 * named in err). */
void copies_load(struct lsmfs_diskset *ds);
int copies_write(struct lsmfs_diskset *ds, char *err, size_t errlen);
/* Copy n alone current, every other copy stale, each of them since the
 * next epoch (so that no earlier file's word outranks it), written to
 * every disk present; meta_primary and meta_dir become copy n's.  0, or
 * -errno with err. */
int copies_choose(struct lsmfs_diskset *ds, uint32_t n, char *err, size_t errlen);
/* A disk leaving the filesystem: its copy states file goes. */
void copies_forget(const char *disk);
/* Offline (the store closed, the disks locked: fsck): copy `to` made a
 * whole copy of copy `from`: marked stale, its store files replaced by
 * from's (each synced), marked up to date. */
int copies_rewrite_offline(struct lsmfs_diskset *ds, uint32_t from, uint32_t to, char *err,
			   size_t errlen);
/* Offline: the store files of directory dst replaced by src's (the old
 * ones removed first, each new one synced, dst synced). */
int copies_replace_files(const char *src, const char *dst, char *err, size_t errlen);
/* Is name a file of the store proper (what copies must agree on):
 * CURRENT, MANIFEST-*, *.log, *.sst; not LOCK, the socket, statistics. */
bool copies_store_file(const char *name);
/* The same copies of the store, in the same places. */
bool super_copies_equal(const struct lsmfs_super *a, const struct lsmfs_super *b);
/* The store's copies to open, for store_options (store_open(dirs[0]),
 * copies = dirs + 1): the primary first, then every other copy there, in
 * order; which[k]: the superblock's copy index of dirs[k]; stale: bit k
 * for a copy marked stale.  dirs[] point into ds.  -ENOENT: none there. */
int diskset_store_copies(const struct lsmfs_diskset *ds, const char **dirs, uint32_t *which,
			 uint32_t *n, unsigned *stale);
/* The same for a tool opening the store (fsck, lsmfs-inspect): so's
 * copies set; returns the directory to open.  A copy that fails is
 * dropped for that open only (no copy_failed). */
struct store_options;
const char *diskset_store_options(const struct lsmfs_diskset *ds, struct store_options *so,
				  const char **dirs);
/* Slot d of sb's disk list is empty (or past its count). */
bool super_slot_empty(const struct lsmfs_super *sb, uint32_t d);

#define DISKSET_LOCK 1u  /* take every disk's lock (daemon, fsck repair) */
/* fsck: accept one disk whose superblock is damaged (or missing from a
 * directory that has lsmfs sections) when the others' copies tell which
 * disk it is; see super_damaged. */
#define DISKSET_TOLERANT 2u
/* With DISKSET_LOCK: a disk held by a daemon that is closing (it wrote
 * DISKSET_CLOSING in the lock file, diskset_mark) is waited for,
 * up to DISKSET_LOCK_WAIT_MS, instead of refused; one whose holder has
 * not said so is refused after 2 s (the moment between umount(2) and
 * the daemon's mark). */
#define DISKSET_LOCK_WAIT 4u
#define DISKSET_LOCK_WAIT_MS 60000
#define DISKSET_CLOSING "closing"
#define DISKSET_READ_ONLY "read-only" /* remounted read-only, all durable */
/* fsck: accept two disks carrying the same superblock when exactly one disk
 * index is claimed by none and no superblock is damaged; see clash. */
#define DISKSET_CLASH 8u
/* With DISKSET_LOCK: shared locks (a read-only mount).  Any number of
 * readers hold the disks together; a writer (a read-write mount, fsck
 * repairing, lsmfs-disk offline), whose exclusive lock they keep out, is
 * refused: a reader's map of the sections must not change under it. */
#define DISKSET_LOCK_SHARED 16u
/* Accept a set with disks missing (mount -o degraded, lsmfs-disk remove
 * --lost): their bits in missing; their sections fail with EIO. */
#define DISKSET_DEGRADED 32u
/* lsmfs-disk restore: a set whose store copies are all stale (a restore
 * cut short) is accepted, meta_primary then the first copy there.
 * Without it, a copy holding LSMFS_RESTORING refuses the set (-EBUSY). */
#define DISKSET_RESTORE 64u
/* With DISKSET_DEGRADED: a read-write open may take the copies of the
 * store here for the newest although a missing one is not known to be
 * behind them (lsmfs -o force_degraded, lsmfs-disk remove --lost). */
#define DISKSET_FORCE 128u
/* fsck --use-copy: a set whose copies diverged (every one left stale) is
 * accepted, meta_primary then the first copy there; the caller chooses
 * one with copies_choose. */
#define DISKSET_DIVERGED 256u
#define LSMFS_RESTORING "RESTORING" /* in a copy of the store: a restore under way */
/* In that copy: its store files as they were, kept until the restore ends
 * (restore.c); made whole under the name LSMFS_RESTORE_SAVED ".tmp". */
#define LSMFS_RESTORE_SAVED "restore.old"

/*
 * Open the disks named in spec ("DISK[:DISK...]", any order).  Refuses,
 * with a one-line reason naming the disk in err:
 *   -ENOENT   a disk that does not exist or is not a directory;
 *   -EMEDIUMTYPE  a directory without an lsmfs superblock;
 *   -EUCLEAN  a damaged superblock;
 *   -EXDEV    a disk of another filesystem (filesystem UUID differs, or
 *             disagreement on sections, chunk size, disk count);
 *   -EEXIST   a disk given twice (same path, same directory, or same disk
 *             index/UUID; with DISKSET_CLASH, one such pair is accepted
 *             when it can be told apart, see clash);
 *   -ENODEV   a disk of the filesystem missing from the list (unless
 *             DISKSET_DEGRADED);
 *   -EBUSY    (with DISKSET_LOCK) a disk locked by a running daemon or
 *             tool; the lock file holds that process's pid.
 * On success *out is sorted by disk index; close it with diskset_close.
 */
int diskset_open(const char *spec, unsigned flags,
		 struct lsmfs_diskset **out, char *err, size_t errlen);
void diskset_close(struct lsmfs_diskset *ds);
/* Narrow what an older version left readable by all on the disks and in
 * the store's directories to the owner's bits (modes.c); diskset_open
 * does it when it takes the disks exclusively.  Best effort. */
void modes_narrow(const struct lsmfs_diskset *ds);
/* Say the daemon's state in every lock file held, on the line after its
 * pid (NULL: nothing): DISKSET_CLOSING once its unmount has begun (a new
 * mount then waits for it), DISKSET_READ_ONLY once remounted read-only. */
void diskset_mark(struct lsmfs_diskset *ds, const char *state);
/* Take disk i's lock (DISKSET_LOCK, DISKSET_LOCK_WAIT in flags), as
 * diskset_open does for each: a disk added to an open set. */
int diskset_lock_disk(struct lsmfs_diskset *ds, uint32_t i, const char *disk, unsigned flags,
		      char *err, size_t errlen);
/* Disk d's superblock as the set's says it: ds->sb with d's index and
 * UUID. */
void diskset_super_of(const struct lsmfs_diskset *ds, uint32_t d, struct lsmfs_super *out);
/* Bit d set for every disk d present. */
uint64_t diskset_members(const struct lsmfs_diskset *ds);
/* Write the superblock of every present disk whose bit is set in only
 * (~0: all) from ds->sb; clears their stale bits.  Goes on past a failure
 * and returns the first, named in err. */
int diskset_write_supers(struct lsmfs_diskset *ds, uint64_t only, char *err, size_t errlen);
/* Exchange the disks at indexes a and b (their paths and locks): fsck's
 * answer to a clash. */
void diskset_swap(struct lsmfs_diskset *ds, uint32_t a, uint32_t b);

/* ---- Backups (backup.c, restore.c; SCHEMA.md "Backups") ----
 * backup_read: a backup directory's superblock (of the disk set when it
 * was taken) and its store's directory (into store[cap]); -ENOENT or
 * -EUCLEAN when it is not a whole backup, -EXDEV when disks (if not NULL)
 * are another filesystem's.  backup_verify: backup_read, the same disks
 * as disks (UUIDs and list), then the whole of it, as fsck.lsmfs -n
 * --backup checks it: every checksum of every table, the MANIFEST and
 * any log (store_verify: what it found goes to log), and the filesystem
 * info as a mount reads it.  0, or why not in err.  Reads only.
 * fs_restore: put the backup's store back onto ds (opened with
 * DISKSET_LOCK | DISKSET_RESTORE, the disks it was taken with, no store
 * open): refused (nothing changed) unless backup_verify passes; out hears
 * `lost {json}` for every file whose chunk files went since (they read as
 * EIO there), then `restored`.  A restore that fails puts the store as it
 * was back; one cut short (killed) leaves a store no mount takes, and is
 * run again: it goes on, or, when the backup no longer verifies, puts the
 * old store back. */
int backup_read(const char *dir, const struct lsmfs_super *disks, struct lsmfs_super *sb,
		char *store, size_t cap, char *err, size_t errlen);
int backup_verify(const char *dir, const struct lsmfs_super *disks, struct lsmfs_super *sb,
		  char *store, size_t cap, void (*log)(void *, const char *), void *log_ctx,
		  char *err, size_t errlen);
int fs_restore(struct lsmfs_diskset *ds, const char *dir, void (*log)(void *, const char *),
	       void *log_ctx, int (*out)(void *ctx, const char *line), void *ctx, char *err,
	       size_t errlen);

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

/* ---- Disk management (control.c; SCHEMA.md "Control requests") ----
 * A mounted daemon answers lsmfs-disk's requests on the Unix socket
 * <store>/FS_CONTROL_SOCKET (root only); without a daemon, lsmfs-disk
 * opens the filesystem itself (fs_offline_open, holding the disks' locks)
 * and asks fs_control directly.  out(ctx, line) takes each line of the
 * answer (without newline), the last `ok` or `error <errno> <message>`;
 * a non-zero return from it means the asker went away (a move goes on).
 * fs_control returns 0 or the request's negative errno. */
#define FS_CONTROL_SOCKET "control"
struct fs;
struct sockaddr_un;
/* The address of the control socket of the store in store_dir, into *sa:
 * the path, or, when it is too long for sun_path, /proc/self/fd/N/control
 * with *dirfd (else -1) the directory opened for it (close it once bound
 * or connected). */
int fs_control_address(const char *store_dir, struct sockaddr_un *sa, int *dirfd);
/* read_only: nothing is written (no crash recovery either); the disks
 * need not be locked. */
int fs_offline_open(struct lsmfs_diskset *ds, bool read_only, void (*log)(void *, const char *),
		    void *log_ctx, struct fs **out, char *err, size_t errlen);
int fs_offline_close(struct fs *fs);
int fs_control(struct fs *fs, const char *request, int (*out)(void *ctx, const char *line),
	       void *ctx);



/* ---- Sections (section.c; SCHEMA.md "Sharding", "Moving a section") ----
 * The one place that names section directories and chunk files, reads the
 * section map and places sections on disks. */
struct store;
#define SECTION_NAME_MAX 16              /* "<s>" with its NUL */
#define SECTION_VAL_LEN 4                /* `P` value: le32 disk index */
#define SECTION_MOVE_LEN 12              /* `M move` value */
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
