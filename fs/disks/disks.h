/*
 * disks.h: a filesystem's disks as a set, without a mounted filesystem
 * (fs/ARCHITECTURE.md): opening and locking them, checked against each
 * other and ordered by disk index (diskset.c); the store copies' states
 * file (copystate.c); the owner-only modes of what lies on them
 * (modes.c); and whether a backup may be restored onto them
 * (backupcheck.c).  Used by the daemon's layers above, by mkfs.lsmfs and
 * by the tools.
 */
#ifndef LSMFS_DISKS_H
#define LSMFS_DISKS_H

#include "format.h"
#include "schema.h"

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
	/* The copy states' epoch (copystate.c): sb.meta[].flags came from the
	 * files of this epoch. */
	uint64_t copies_epoch;
	/* Copies that diverged (copystate.c): bit i for a copy written by a
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
/* The copy states file (<disk>/.lsmfs/copies, copystate.c): load sets
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
 * (restore.c); made whole under the name LSMFS_RESTORE_PART first.  Not
 * ".tmp": the store takes every name ending so in its directory for a
 * temporary file of its own, deletes it at open, and fails the copy where
 * that fails (a directory).  LSMFS_RESTORE_PART_V1 is that name, which
 * earlier versions used: a restore removes it as it removes the part. */
#define LSMFS_RESTORE_SAVED "restore.old"
#define LSMFS_RESTORE_PART "restore.old.part"
#define LSMFS_RESTORE_PART_V1 "restore.old.tmp"

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

/* Names inside a backup directory (SCHEMA.md "Backups"). */
#define BACKUP_MARK "lsmfs-backup"
#define BACKUP_SUPER "super"
#define BACKUP_STORE "store"

/* ---- Backups (backupcheck.c; SCHEMA.md "Backups") ----
 * backup_read: a backup directory's superblock (of the disk set when it
 * was taken) and its store's directory (into store[cap]); -ENOENT or
 * -EUCLEAN when it is not a whole backup, -EXDEV when disks (if not NULL)
 * are another filesystem's.  backup_verify: backup_read, the same disks
 * as disks (UUIDs and list), then the whole of it, as fsck.lsmfs -n
 * --backup checks it: every checksum of every table, the MANIFEST and
 * any log (store_verify: what it found goes to log), and the filesystem
 * info as a mount reads it.  0, or why not in err.  Reads only. */
int backup_read(const char *dir, const struct lsmfs_super *disks, struct lsmfs_super *sb,
		char *store, size_t cap, char *err, size_t errlen);
int backup_verify(const char *dir, const struct lsmfs_super *disks, struct lsmfs_super *sb,
		  char *store, size_t cap, void (*log)(void *, const char *), void *log_ctx,
		  char *err, size_t errlen);
/* The part a restore killed while saving the store aside left (its name
 * now or in earlier versions, LSMFS_RESTORE_PART and _V1) removed from
 * every copy there; said(ctx, path, 0 or -errno) hears of each found.  At
 * every read-write open, before the store opens: a part left under the
 * old name would cost the store that copy (it is no file of the store's
 * and cannot be deleted as one). */
void backup_remove_parts(const struct lsmfs_diskset *ds,
			 void (*said)(void *ctx, const char *path, int err), void *ctx);

#endif
