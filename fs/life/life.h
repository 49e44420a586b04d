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

int fs_open(struct lsmfs_diskset *ds, const struct fs_options *opt,
	    void (*log)(void *, const char *), void *log_ctx, struct fs **out,
	    char *err, size_t errlen);
int fs_close(struct fs *fs);

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
