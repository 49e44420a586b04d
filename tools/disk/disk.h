/*
 * disk.h: lsmfs-disk's parts: the session (session.c: a mounted daemon's
 * control socket, or the filesystem opened here), the status it reads
 * (status.c), the rebalance plan (plan.c), the disks' error counters
 * (stats.c) and the scrub (scrub.c).  main.c holds the command line.
 */
#ifndef LSMFS_DISK_TOOL_H
#define LSMFS_DISK_TOOL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs.h"

#define PROG "lsmfs-disk"
/* Exit codes (as btrfs/e2fsprogs-style tools: documented in --help). */
#define EXIT_DONE 0
#define EXIT_STOPPED 1   /* stopped with work left; run again to resume */
#define EXIT_ERRORS_LEFT 4 /* scrub -B: errors left uncorrected (as fsck's 4) */
#define EXIT_FAILED 8    /* operational error */
#define EXIT_USAGE 16
#define EXIT_NONZERO 64  /* stats --check: a counter is not 0 (as btrfs device stats -c) */

struct session {
	int sock;                   /* online: connected to the daemon; -1 offline */
	struct lsmfs_diskset *ds;   /* offline: the disks, locked */
	struct fs *fs;              /* offline: the filesystem, opened here */
	char where[1200];           /* the store's directory, for messages */
	char target[1200];          /* as given: where to look for the daemon again
				     * when its socket moved (copy remove) */
	bool mounted;               /* target is a mount point */
};

/* Connect to the daemon that has target (a mount point, or DISK[:DISK...])
 * mounted, or open the disks offline: locked when writable, else read-only
 * and unlocked (status, dry runs); degraded: disks may be missing from
 * the list (status, remove --lost).  0, or an exit code with the reason
 * printed. */
int session_open(struct session *s, const char *target, bool writable, bool degraded);
void session_close(struct session *s);
/* Send one request; line(ctx, text) gets every line of the answer but the
 * last.  0, or the request's negative errno with its message in err. */
int session_ask(struct session *s, const char *req, void (*line)(void *ctx, const char *text),
		void *ctx, char *err, size_t errlen);
/* A line callback for session_ask: the first line of the answer, strdup'd
 * into *(char **)ctx (which starts NULL; the caller frees it). */
void session_first_line(void *ctx, const char *text);



struct disk_info {
	uint32_t index;
	char uuid[37];
	char *path;
	uint64_t capacity, used, available, device, sections, bytes;
	bool usable;
	bool missing;               /* not there (a degraded mount); path: its last */
	uint64_t errors[DEVSTAT_KINDS]; /* its error counters (0 from a daemon without) */
};
struct status {
	char fs_uuid[37];
	bool online;
	uint32_t sections;
	uint64_t chunk_size;
	uint32_t ndisks;
	struct disk_info disk[LSMFS_MAX_DISKS];
	uint32_t *section_disk;     /* by section */
	uint64_t *section_bytes;    /* by section */
	bool moving;
	uint32_t move_section, move_from, move_to;
	uint64_t move_done, move_total;
	char move_state[16];
	char *json;                 /* as the daemon wrote it */
	uint64_t store_disks;       /* bit d: disk d holds a copy of the store */
	bool degraded;              /* a copy of the store is missing or failed */
	uint32_t data_copies;       /* the root's user.lsmfs.copies (0: not said) */
	uint32_t usable_disks;
	char placement[16];
	uint32_t ncopies;           /* the store's copies, by number */
	struct {
		int64_t disk;       /* -1: a directory of its own */
		char path[1100];
		char state[16];     /* in-sync, stale, missing, failed */
	} copy[LSMFS_MAX_META_COPIES];
};
int status_read(struct session *s, struct status *st, char *err, size_t errlen);
/* "errors":{...} of a disk (SCHEMA.md "Error counters") into count: 0
 * (zeros when obj is NULL), or -EINVAL. */
struct jv;
int status_errors(const struct jv *obj, uint64_t count[DEVSTAT_KINDS]);
void status_free(struct status *st);
/* The index in st->disk of disk index d; -1 when none. */
int status_disk(const struct status *st, uint32_t d);

/* `stats`: every disk's error counters, as btrfs device stats prints them
 * (--json: the daemon's line); reset: zeroed as they are read; check: exit
 * EXIT_NONZERO when one was not 0.  An exit code. */
int cmd_stats(struct session *s, bool reset, bool check, bool json);

/* `scrub start|resume|status|cancel` (scrub.c): start and resume with
 * rate (bytes/s, 0: none; rate_given: else the daemon's default, or the
 * last run's for resume), wait (-B): until it ends; offline always.  An
 * exit code. */
int cmd_scrub(struct session *s, const char *what, bool rate_given, uint64_t rate, bool wait,
	      bool json, volatile sig_atomic_t *stop);
/* "50M", "1GiB", "1048576": bytes per second (K, M, G, T binary, with an
 * optional i and B); 0, or -1 when it is not one. */
int scrub_rate_parse(const char *text, uint64_t *rate);

struct move {
	uint32_t section, from, to;
	uint64_t bytes;
};
struct plan {
	struct move *moves;
	size_t n;
	uint64_t bytes;
};
/* Moves that even the bytes per disk in proportion to weight (by disk
 * index; 0: takes nothing), the sections bringing most balance per byte
 * first, then the section counts; only disks with a weight take sections,
 * and every section on a disk of weight 0 moves.  No move goes to a disk
 * whose backing filesystem lacks the room for it: the bytes the plan
 * copies onto a filesystem stay within its `available` less a chunk
 * (plan.c, "Room").
 * 0; -ENOSPC when no disk has a weight, or a section that must move fits
 * on none; -ENOMEM.  On error *p is empty. */
int plan_rebalance(const struct status *st, const double *weight, struct plan *p);
/* Only step 1 of plan_rebalance, for disk alone (of weight 0): every
 * section off it, each to the disk then furthest below its share among
 * those with room for it (remove).  Returns as plan_rebalance. */
int plan_drain(const struct status *st, const double *weight, uint32_t disk, struct plan *p);
void plan_free(struct plan *p);

#endif
