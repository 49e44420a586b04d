/*
 * disk.h: lsmfs-disk's parts: the session (session.c: a mounted daemon's
 * control socket, or the filesystem opened here), the status it reads
 * (status.c), the rebalance plan (plan.c), the section moves a command
 * runs (moves.c), the store's copies it moves (storecopy.c), a disk
 * replaced (replace.c), the disks' error counters (stats.c) and the scrub
 * (scrub.c).  main.c holds the command line.
 */
#ifndef LSMFS_DISK_TOOL_H
#define LSMFS_DISK_TOOL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

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
	/* A disk replace recorded (`replace`: fs/SCHEMA.md "Replacing a
	 * disk"): its old disk, whether that is a member still, and its new
	 * disk (-1: not a member). */
	bool replacing;
	uint32_t replace_old;
	bool replace_old_member;
	int64_t replace_new;
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
/* The index in st->disk of DISK given as an index or as a path (resolved,
 * matched to a disk's; a missing disk's by the path it had); -1 when
 * none. */
int status_find_disk(const struct status *st, const char *disk);
/* The same for a disk that is gone (--lost): DISK, or `missing` for the
 * one disk missing, which must not be usable; -1 with the reason on
 * stderr (cmd: the command, for it). */
int status_find_gone(const struct status *st, const char *disk, const char *cmd);

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

/* By default a disk weighs the room lsmfs can have on its backing
 * filesystem, in GiB (plan.c): weight[d] for every disk of st whose given
 * [d] is false. */
void plan_default_weights(const struct status *st, double *weight, const bool *given);

/* ---- moves.c: sections moved, with progress ---- */
struct progress {
	bool tty;
	size_t index, count;       /* this move's place in the plan */
	uint64_t plan_bytes, before; /* bytes of the plan, moved before this one */
	struct timespec start;     /* of the whole run */
	struct timespec move_start;
	uint64_t last_bytes;
	uint64_t files;
	bool evacuate;             /* remove --evacuate: a failing disk */
	uint64_t lost;             /* chunks it could not read, listed */
	size_t failed;             /* sections it could not move */
	size_t kept;               /* sections kept apart from their partners' disks */
	/* Set by SIGINT or SIGTERM: stop after the move under way (NULL:
	 * never). */
	volatile sig_atomic_t *stop;
};
/* Move one section (`move`, or `evacuate` when p->evacuate); a move the
 * daemon refuses for keeping two copies of a chunk apart (EXDEV) is
 * counted in p->kept and is no failure.  0 or an exit code, said on
 * stderr. */
int moves_one(struct session *s, const struct move *m, struct progress *p);
/* The plan's moves in order; the first failure stops them, except when
 * evacuating (every section that can be moved is), and *p->stop stops
 * them after the move under way (EXIT_STOPPED).  An exit code. */
int moves_run(struct session *s, const struct plan *pl, struct progress *p);
/* Plan (drain UINT32_MAX: rebalance; else only empty disk `drain`),
 * check the room, then print the plan (dry) or carry it out.  An exit
 * code. */
int moves_plan_and_run(struct session *s, const struct status *st, const double *weight,
		       uint32_t drain, bool dry, struct progress *p);
/* A line callback for session_ask: `lost {json}` of a disk dropped as
 * lost (fs/SCHEMA.md "A disk lost"), printed "lost: PATH: ..." on stdout;
 * other lines are ignored. */
void moves_lost_file(void *ctx, const char *text);

/* ---- storecopy.c: the store's copies, for the commands ---- */
/* A new copy of the store on disk d; *why: the daemon's errno (0 done).
 * An exit code, said on stdout or stderr. */
int storecopy_add(struct session *s, uint32_t d, int *why);
int storecopy_remove(struct session *s, uint32_t c);
/* Disk idx's copy of the store, if it has one, goes to disk prefer when
 * that holds none (UINT32_MAX: no preference), else to the usable disk
 * with the most room that holds none (a disk the daemon refuses for room
 * is skipped); when there is none, the copy count drops.  An exit
 * code. */
int storecopy_move_off(struct session *s, const struct status *st, uint32_t idx, uint32_t prefer);
/* Every copy of the store on disk idx so moved, *st read again after
 * each. */
int storecopy_off_disk(struct session *s, struct status *st, uint32_t idx, uint32_t prefer);

/* `replace OLD NEWDISK` (replace.c; fs/SCHEMA.md "Replacing a disk"): an
 * exit code. */
int cmd_replace(struct session *s, const char *old, const char *newdisk, bool force, bool dry,
		bool lost, bool evacuate, volatile sig_atomic_t *stop);
/* Offline, a replace run again after its new disk was added: target (a
 * DISK[:DISK...] list) with NEWDISK appended, malloc'd, when NEWDISK is a
 * member of target's filesystem by its own superblock and not in the
 * list; else NULL (target as it is). */
char *replace_target(const char *target, const char *newdisk);

#endif
