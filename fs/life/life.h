/*
 * life.h: a filesystem's life (fs/ARCHITECTURE.md): opening it (fs_open,
 * the crash repairs in their order, then the background threads),
 * following remounts read-only, closing it with everything durable, and
 * restoring a backup.  The daemon and the offline tools enter fs/ here;
 * struct fs is opaque.
 */
#ifndef LSMFS_LIFE_H
#define LSMFS_LIFE_H

#include "admin.h"

struct fs_options;

/* Open the filesystem on ds (mount.c): the store and its copies, the
 * section map, then the crash repairs in their order (a restore's settle,
 * the disk set, a section move, files in flux, the sweep's mark), then
 * the background threads.  fs_close makes everything durable first. */
int fs_open(struct lsmfs_diskset *ds, const struct fs_options *opt,
	    void (*log)(void *, const char *), void *log_ctx, struct fs **out,
	    char *err, size_t errlen);
int fs_close(struct fs *fs);

/*
 * fs_restore (restore.c; SCHEMA.md "Backups"): put the backup's store
 * back onto ds (opened with DISKSET_LOCK | DISKSET_RESTORE, the disks it
 * was taken with, no store open): refused (nothing changed) unless backup_verify passes; out hears
 * `lost {json}` for every file whose chunk files went since (they read as
 * EIO there), then `restored`.  A restore that fails puts the store as it
 * was back; one cut short (killed) leaves a store no mount takes, and is
 * run again: it goes on, or, when the backup no longer verifies, puts the
 * old store back. */
int fs_restore(struct lsmfs_diskset *ds, const char *dir, void (*log)(void *, const char *),
	       void *log_ctx, int (*out)(void *ctx, const char *line), void *ctx, char *err,
	       size_t errlen);

/* read_only: nothing is written (no crash recovery either); the disks
 * need not be locked. */
int fs_offline_open(struct lsmfs_diskset *ds, bool read_only, void (*log)(void *, const char *),
		    void *log_ctx, struct fs **out, char *err, size_t errlen);
int fs_offline_close(struct fs *fs);

/* rdonly.c: the thread that follows remounts (SIGUSR1 wakes it). */
int rdonly_start(struct fs *fs, const char *mountpoint);
void rdonly_stop(struct fs *fs);

#endif
