/*
 * db_int: the store object shared by db.c (open, recovery, close), db_write.c
 * (group commit), db_read.c (point reads, snapshots, stats), db_iter.c (user
 * iterators) and db_compact.c (the background thread: flushes and
 * compactions), and the helpers they all call: db_files.c (the directory's
 * files) and db_error.c (reports and the background error), two leaves
 * that call no other db*.c file.
 *
 * Locking: st->mu guards everything below marked (mu).  The head of the
 * writer queue appends to the commit log and inserts into st->mem without
 * holding mu (it is the only thread that touches the log and the only
 * memtable writer); readers of st->mem need no lock (memtable.h).  One
 * background thread does every flush and compaction, so at most one
 * version_set_log_and_apply runs at a time after open.
 */
#ifndef LSMFS_STORE_DB_INT_H
#define LSMFS_STORE_DB_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "batch.h"
#include "env.h"
#include "memtable.h"
#include "sst.h"
#include "store.h"
#include "version.h"
#include "wal.h"

struct writer {
	const struct store_batch *batch; /* NULL: sync-only or force-flush */
	bool sync;
	bool reserve;     /* STORE_WRITE_RESERVE */
	bool force_flush;
	bool done;
	int status;
	pthread_cond_t cv;
	struct writer *next;
};

struct store_snapshot {
	uint64_t seq;
	struct store_snapshot *prev, *next; /* list ordered by seq (mu) */
};

struct manual_compaction {
	int level;
	const uint8_t *begin, *end; /* user keys; NULL = open */
	size_t blen, elen;
	bool done;
	int status;
};

struct store {
	char *dir;
	struct store_options opt;
	struct store_env *env;
	struct store_env *mirror; /* == env when the store has copies, else NULL */
	struct env_lock *lock;

	pthread_mutex_t mu;
	pthread_cond_t bg_cv;   /* background work finished or error (mu) */
	pthread_cond_t work_cv; /* wakes the background thread (mu) */

	struct memtable *mem;   /* (mu for the pointer) */
	struct memtable *imm;   /* being flushed, or NULL (mu) */
	atomic_bool has_imm;
	struct wal_writer *log; /* owned by the writer-queue head; NULL after
				 * a failed append until the next write opens
				 * a new log */
	uint64_t log_number;    /* of st->log (mu) */
	struct wal_writer *old_log; /* the log before st->log, not yet synced:
				 * its writes are st->imm's.  A sync write
				 * syncs it before st->log, so that no synced
				 * record follows an unsynced one (FORMAT.md
				 * "Recovery").  Closed once synced or once
				 * imm is in a table (writer-queue head;
				 * imm's state under mu) */
	uint64_t old_log_number; /* of old_log, 0 when none: not deleted as
				  * obsolete while a sync of it may run (mu) */
	uint64_t mem_log_number; /* the oldest log holding writes of st->mem:
				  * older logs hold only imm's (mu) */
	bool log_dir_unsynced;  /* st->log's directory entry is not yet
				 * durable (a switch leaves that to the first
				 * sync: its link covers the loss; writer-queue
				 * head) */
	uint64_t reserve_have;  /* bytes in RESERVE now (writer-queue head) */
	bool log_failing;       /* a log write failed, none succeeded since:
				 * report once per episode (writer-queue head) */

	struct version_set *vs;
	struct table_cache *tables;
	struct block_cache *cache;
	struct filter_cache *filters;
	struct sst_counters counters;

	struct writer *writers_head, *writers_tail; /* (mu) */
	struct store_batch *group; /* the head's scratch batch */
	/* Delayed log writes (opt.log_delay_us): the records of acknowledged
	 * groups not yet handed to st->log, as one batch (their sequences
	 * follow each other), all of them in st->mem (writer-queue head). */
	struct store_batch *pend;
	uint64_t pend_since;    /* CLOCK_MONOTONIC us when pend stopped being
				 * empty; 0: empty (mu) */
	bool pend_restarted;    /* pend went out since the head last set
				 * pend_since (writer-queue head) */
	pthread_cond_t flush_cv; /* wakes the log flusher (mu; CLOCK_MONOTONIC) */
	pthread_t flusher;
	bool flusher_started;

	struct store_snapshot snapshots; /* sentinel of the list (mu) */

	pthread_t bg_thread;
	bool bg_started;
	bool shutting_down;     /* (mu) */
	bool bg_busy;           /* (mu) */
	int bg_error;           /* hard, sticky; writes fail with it (mu) */
	int bg_soft_error;      /* the last background attempt failed with
				 * this; retried at bg_retry_at (mu) */
	struct timespec bg_retry_at; /* CLOCK_REALTIME, for timedwait (mu) */
	unsigned bg_backoff_ms; /* (mu) */
	uint64_t bg_attempts;   /* units of background work done (mu) */
	struct manual_compaction *manual; /* (mu) */
	/* db_copies.c asks for a new MANIFEST (1); the background thread
	 * writes it and leaves its status here (2 + status: done). (mu) */
	int manifest_roll;
	int manifest_roll_status;
	bool roll_log;          /* a forced flush of an empty memtable still
				 * starts a new commit log (mu) */
	uint64_t *pending_outputs; /* files being written (mu) */
	size_t npending, cap_pending;

	pthread_mutex_t errmu;  /* guards errmsg only: reports come from
				 * threads that may or may not hold mu */
	char errmsg[512];       /* last error (errmu) */

	/* statistics (mu unless atomic) */
	atomic_uint_least64_t user_bytes;
	atomic_uint_least64_t wal_bytes;
	atomic_uint_least64_t wal_syncs;
	uint64_t flush_bytes;
	uint64_t compaction_read;
	uint64_t compaction_written;
	uint64_t manifest_bytes;
	uint64_t flushes;
	uint64_t compactions;
	uint64_t stall_micros;
};

/* db_error.c (a leaf) */
/* Format a message, send it to opt.log and keep it for store_errmsg.
 * Callable with or without mu. */
void db_report(struct store *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Record a hard background error (mu held) and wake everyone. */
void db_set_bg_error(struct store *st, int err);
/* May a failed write or background step with this error be tried again
 * (it left nothing half done)?  Everything but corruption. */
bool db_error_is_soft(int err);

/* db_files.c (a leaf): the files of the store's directory. */
void db_log_file_name(char *out, size_t len, const char *dir, uint64_t number);
/* The kind of a name in a store directory, and its number. */
enum file_kind { FK_OTHER, FK_LOG, FK_SST, FK_MANIFEST, FK_TEMP };
enum file_kind db_parse_file_name(const char *name, uint64_t *number);
/* qsort/bsearch order of file numbers (uint64_t). */
int db_cmp_file_numbers(const void *a, const void *b);
int db_pending_add(struct store *st, uint64_t number); /* mu held */
void db_pending_remove(struct store *st, uint64_t number); /* mu held */
/* Delete files no live version or pending output needs.  mu held (dropped
 * while unlinking). */
void db_delete_obsolete_files(struct store *st);

/* db.c */
/*
 * A log link (batch.h) read in logs[i] names log prev, `size` bytes long
 * when it was left.  true if the logs read before it hold all of prev
 * (ends[j]: where the reading of logs[j], j < i, stopped) or prev is older
 * than min_log (the MANIFEST's: its writes are in tables).  false: the
 * crash took writes from prev's end (or all of prev), and every write from
 * the link on followed them (FORMAT.md "Recovery").
 */
bool db_log_link_whole(const uint64_t *logs, const uint64_t *ends, size_t i,
		       uint64_t min_log, uint64_t prev, uint64_t size);

/* db_tools.c: a store's MANIFEST and tables opened without opening the
 * store (no commit-log replay, no background thread), for the offline
 * tools and salvage.  writable: version_set_log_and_apply may be used (the
 * caller holds the store's LOCK).  Reports go to report(ctx, line). */
struct db_offline {
	struct store_env *env;
	const char *dir;
	struct store_options opt;
	pthread_mutex_t mu;
	struct block_cache *cache;
	struct sst_counters counters;
	struct table_cache *tables;
	struct version_set *vs;
	uint64_t manifest_bytes;
	store_report_fn report;
	void *ctx;
	int problems;
};
int db_offline_open(struct db_offline *t, const char *dir, const struct store_options *opt,
		    bool writable, store_report_fn report, void *ctx);
void db_offline_close(struct db_offline *t);

/* db_copies.c (FORMAT.md "Copies"); only with copies, at open. */
/* Bring the copies to one state before recovery reads them. */
int db_copies_reconcile(struct store *st);
/* Every live table whole in every copy (after the MANIFEST is read). */
int db_copies_check_tables(struct store *st);
/* Recovery is done: stale copies are now up to date. */
void db_copies_opened(struct store *st);
/* The background thread's part of a copy joining: a new MANIFEST.  mu
 * held. */
void db_copies_roll_manifest(struct store *st);

/* db_write.c: delayed log writes (opt.log_delay_us). */
/* Start the log flusher, at open (read-write, recovered); 0 or -errno. */
int db_log_flusher_start(struct store *st);
/* Stop it, at close (shutting_down set); then write out what is still
 * delayed.  0 or the error.  mu not held; no writer may be queued. */
int db_log_flusher_stop(struct store *st);

/* db_compact.c */
void *db_bg_main(void *arg);
/* Write mem to a new table; add it to edit at the level chosen for it.
 * base may be NULL (level 0).  mu held (dropped during I/O). */
int db_write_level0_table(struct store *st, struct memtable *mem,
			  struct version_edit *edit, struct version *base);
/* A background step failed with err: hard (corruption) or soft (retried
 * after a back-off).  mu held. */
void db_bg_failed(struct store *st, int err);

/* db_reserve.c (FORMAT.md "Full disk"); writer-queue head or open/close. */
/* Make RESERVE reserve_bytes long; 0 when it is (or no reserve is set). */
int db_reserve_make(struct store *st);
/* Give back part of RESERVE (at least want bytes when it has them) for
 * `what` (named in the report): 0 when something was freed, -ENOSPC when
 * it is empty. */
int db_reserve_release(struct store *st, uint64_t want, const char *what);
/* A write of recovery failed with err: 0 when err is a full disk and part
 * of RESERVE (as found, at open) was given back, so the write is worth
 * trying again; else err.  Recovery only (mu held, not yet shared). */
int db_reserve_draw_for_recovery(struct store *st, int err);
/* Is the reserve drawn on (shorter than asked)? */
bool db_reserve_short(const struct store *st);
/* Is there a reserve, whole (reserve_bytes of it to give back)? */
bool db_reserve_whole(const struct store *st);

/* db_read.c */
/* The oldest sequence any snapshot can see (mu held). */
uint64_t db_smallest_snapshot(struct store *st);
/* Bytes written since open, for the lifetime totals every MANIFEST edit
 * carries (version_set_options.session_totals).  mu held. */
void db_session_totals(void *ctx, struct store_totals *out);
/* Look ukey up at seq in the version's tables.  Returns 0 with *found set
 * to MEMTABLE_FOUND (value in *val, malloc'd), MEMTABLE_DELETED or
 * MEMTABLE_MISSING; or a negative errno. */
int db_version_get(struct store *st, struct version *v, const uint8_t *ukey,
		   size_t ulen, uint64_t seq, int *found, void **val,
		   size_t *vlen);

/* db_iter.c */
/* A user iterator over internal iterator `internal` at sequence seq.
 * Takes ownership of internal; cleanup(st, arg) runs at free. */
struct store_iter *db_iter_new(struct store *st, struct iter *internal,
			       uint64_t seq, const struct store_iter_options *o,
			       void (*cleanup)(struct store *, void *),
			       void *cleanup_arg);

#endif
