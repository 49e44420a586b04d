/*
 * db_write: the write path.  Writers queue up under mu; the head of the
 * queue gathers the batches behind it into one group (group commit),
 * appends the group to the commit log as one record, flushes or fsyncs it
 * once for all of them, inserts it into the memtable (without mu: it is the
 * only memtable writer), publishes the new last sequence, and wakes the
 * writers it served.  FORMAT.md "Commit log", "Write batch".
 *
 * Errors (store.h, FORMAT.md "Full disk"): a failed append or flush
 * fails the group's writes only.  The log's tail past the last whole record
 * is unknown then, so the log is cut back there (durably) and closed, and
 * the next write opens a new one (roll_log, open_log); the active memtable
 * keeps going, spanning both logs (st->mem_log_number).  A failed fsync of
 * the log, a cut that fails, or a group that reached the log but not the
 * memtable is a sticky background error: every later write fails with it.
 * Writes are not mixed in a group across STORE_WRITE_RESERVE, so that a
 * deletion's retry on the reserve never carries an ordinary write (but
 * delayed records, at most PEND_LIMIT bytes of them, go out first).
 *
 * Delayed log writes (opt.log_delay_us, FORMAT.md "Delayed log writes"):
 * the record of a group that is not synced is kept in st->pend, after
 * those of the groups before it, and the write returns once it is in the
 * memtable.  st->pend goes to the log as one record, before anything
 * after it, when a synced write or store_sync() comes, when it reaches
 * PEND_LIMIT bytes, before the memtable is switched or a write waits for
 * room, at close, and otherwise when the flusher thread sees it older
 * than log_delay_us.  A failed write-out leaves it in st->pend (the log
 * is cut back as for any failed append) for the next try, at the next
 * write (which is not delayed while the log is failing) or the flusher's
 * 100 ms later; the group that would have gone after it fails.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db_int.h"
#include "dbformat.h"
#include "env.h"

/* Delayed records go out before they exceed this: with their framing
 * they fill at most one env buffer, one write(2) per copy. */
#define PEND_LIMIT (ENV_WRITE_UNIT - 1024)

static uint64_t now_micros(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static size_t l0_files(struct store *st)
{
	return version_set_current(st->vs)->nfiles[0];
}

/*
 * Open a new commit log for st->log (after roll_log, or when a switch
 * could not).  prev: the log a memtable switch leaves, unsynced (its
 * number is st->log_number): the new log starts with a link naming it and
 * its size, by which recovery knows whether the crash took writes from its
 * end (FORMAT.md "Log link").  0, or the error (soft: the next write tries
 * again).  mu held; only the writer-queue head calls this.
 */
static int open_log(struct store *st, bool same, struct wal_writer *prev)
{
	/* same: the rolled log was cut back to nothing; start it again rather
	 * than leave one empty log per write failed on a full disk. */
	uint64_t number = same ? st->log_number : version_set_new_file_number(st->vs);
	char path[4096];
	db_log_file_name(path, sizeof(path), st->dir, number);
	struct wal_writer *w = NULL;
	int rc = wal_writer_open(st->env, path, &w);
	if (rc == 0 && prev) {
		/* Written out now: a failed first write cuts the log back to
		 * the end of the link (roll_log), which must be in the file. */
		uint8_t link[BATCH_LINK_SIZE];
		batch_link_encode(link, st->log_number, wal_writer_size(prev));
		rc = wal_add_record(w, link, sizeof(link));
		if (rc == 0)
			rc = wal_flush(w);
	}
	/* A synced record in a log whose directory entry is not durable would
	 * be lost with the file.  After a switch the first sync write syncs
	 * the directory (sync_before): until then the log holds nothing
	 * acknowledged as durable, and should it vanish, the link of the log
	 * after it (if any) tells recovery (db_log_link_whole). */
	if (rc == 0 && !prev)
		rc = st->env->ops->sync_dir(st->env, st->dir);
	if (rc) {
		if (w) {
			(void)wal_writer_close(w); /* failing anyway */
			(void)st->env->ops->unlink(st->env, path); /* empty */
		}
		if (!same)
			version_set_reuse_file_number(st->vs, number);
		db_report(st, "%s: cannot start commit log: %s", path, strerror(-rc));
		return rc;
	}
	st->log = w;
	st->log_number = number;
	st->log_dir_unsynced = prev != NULL;
	return 0;
}

/*
 * An append or flush to st->log failed: the bytes past good (the end of
 * the last whole record, all handed to the OS) are unknown.  Close the log
 * and cut it back to good, durably, so that recovery reads it to a clean
 * end before the next log.  0, or a hard error (recorded).  mu held; only
 * the writer-queue head calls this.
 */
static int roll_log(struct store *st, uint64_t good)
{
	char path[4096];
	db_log_file_name(path, sizeof(path), st->dir, st->log_number);
	(void)wal_writer_close(st->log); /* its error is the one being handled */
	st->log = NULL;
	int rc = st->env->ops->truncate(st->env, path, good);
	if (rc) {
		db_report(st, "%s: cannot cut the commit log back to offset %llu after "
			  "a failed write: %s", path, (unsigned long long)good,
			  strerror(-rc));
		db_set_bg_error(st, rc);
	}
	return rc;
}

static bool is_nospace(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

/*
 * Close st->old_log if nothing needs it: imm, whose writes it holds, is in
 * a table.  The close's error is of no interest then (nor after the log
 * was synced): nothing reads the log again.  mu held; only the
 * writer-queue head calls this.
 */
static void retire_old_log(struct store *st)
{
	if (!st->old_log || st->imm)
		return;
	(void)wal_writer_close(st->old_log);
	st->old_log = NULL;
	st->old_log_number = 0;
}

/* The first half of sync_before. */
static int sync_old_log(struct store *st)
{
	pthread_mutex_lock(&st->mu);
	retire_old_log(st);
	struct wal_writer *old = st->old_log;
	pthread_mutex_unlock(&st->mu);
	if (!old)
		return 0;
	int rc = wal_sync(old);
	pthread_mutex_lock(&st->mu);
	if (rc && st->imm) {
		/* fsyncgate: sticky (store.h). */
		db_report(st, "%s: commit log sync failed: %s", st->dir,
			  strerror(-rc));
		db_set_bg_error(st, rc);
	} else {
		/* Synced; or imm went into a table meanwhile (only the head
		 * makes a new imm) and the log may be deleted already (the
		 * sync of a removed file fails: env.h): not needed either
		 * way. */
		if (!rc)
			atomic_fetch_add(&st->wal_syncs, 1);
		rc = 0;
		(void)wal_writer_close(old);
		st->old_log = NULL;
		st->old_log_number = 0;
	}
	pthread_mutex_unlock(&st->mu);
	return rc;
}

/*
 * Before a sync of st->log: sync the log before it, if imm still needs it,
 * so that a synced record never follows an unsynced one (recovery cuts a
 * torn log and drops every later log: FORMAT.md "Recovery"), and make
 * st->log's directory entry durable.  0, or the error (sticky, recorded).
 * mu NOT held; only the writer-queue head calls this (the background
 * thread never touches old_log; it only flushes imm).
 */
static int sync_before(struct store *st)
{
	int rc = sync_old_log(st);
	if (rc || !st->log_dir_unsynced)
		return rc;
	rc = st->env->ops->sync_dir(st->env, st->dir);
	if (rc) {
		pthread_mutex_lock(&st->mu);
		db_report(st, "%s: cannot sync the directory: %s", st->dir,
			  strerror(-rc));
		db_set_bg_error(st, rc);
		pthread_mutex_unlock(&st->mu);
		return rc;
	}
	st->log_dir_unsynced = false;
	return 0;
}

/*
 * Append the group's record to the log and flush (or sync) it.  After a
 * failed append or flush the log is rolled, and a reserve write short of
 * space is retried on a new log with part of the reserve given back, while
 * the reserve has any left.
 * 0, or the error (a sticky one is recorded as st->bg_error).  mu NOT
 * held.
 */
static int log_group(struct store *st, const uint8_t *rec, size_t len,
		     bool sync, bool reserve, bool *written)
{
	for (;;) {
		struct wal_writer *w = st->log;
		uint64_t before = wal_writer_size(w);
		int rc = wal_add_record(w, rec, len);
		if (rc == 0)
			rc = wal_flush(w);
		atomic_fetch_add(&st->wal_bytes, wal_writer_size(w) - before);
		if (written)
			*written = rc == 0; /* in the log, whatever a sync says */
		if (rc == 0 && sync) {
			rc = sync_before(st);
			if (rc)
				return rc;
			rc = wal_sync(w);
			if (rc) {
				/* The data reached the OS; the fsync failed: the
				 * kernel may have dropped acknowledged pages.
				 * Never trust this log again (fsyncgate). */
				pthread_mutex_lock(&st->mu);
				db_report(st, "%s: commit log sync failed: %s",
					  st->dir, strerror(-rc));
				db_set_bg_error(st, rc);
				pthread_mutex_unlock(&st->mu);
				return rc;
			}
			atomic_fetch_add(&st->wal_syncs, 1);
		}
		if (rc == 0) {
			if (st->log_failing)
				db_report(st, "%s: commit log writes succeed again",
					  st->dir);
			st->log_failing = false;
			return 0;
		}
		pthread_mutex_lock(&st->mu);
		/* Once per episode: a full disk fails every write. */
		if (!st->log_failing)
			db_report(st, "%s: commit log write failed: %s (reported once "
				  "until a write succeeds)", st->dir, strerror(-rc));
		st->log_failing = true;
		int rrc = roll_log(st, before);
		bool retry = false;
		/* Ends: each retry shrinks the reserve, which then runs out. */
		if (rrc == 0 && reserve && is_nospace(rc) &&
		    db_reserve_release(st, len + 2 * WAL_BLOCK_SIZE, "a deletion") == 0)
			retry = true;
		if (rrc) {
			pthread_mutex_unlock(&st->mu);
			return rc;
		}
		/* Soft if it fails: st->log stays NULL and the next write
		 * tries again. */
		(void)open_log(st, before == 0, NULL);
		retry = retry && st->log;
		pthread_mutex_unlock(&st->mu);
		if (!retry)
			return rc;
	}
}

/* Open a log if the last was rolled after an error.  mu NOT held. */
static int ensure_log(struct store *st)
{
	if (st->log)
		return 0;
	pthread_mutex_lock(&st->mu);
	int rc = st->log ? 0 : open_log(st, false, NULL);
	pthread_mutex_unlock(&st->mu);
	return rc;
}

static bool pend_empty(const struct store *st)
{
	return batch_count(st->pend) == 0;
}

/*
 * May a group's record be delayed?  Only while the reserve is whole and
 * can take the delayed records: they are acknowledged, so on a disk that
 * filled meanwhile they are written with the reserve's space.
 */
static bool may_delay(const struct store *st, const struct store_batch *group, bool sync)
{
	return st->opt.log_delay_us && !sync && group->rep.len < PEND_LIMIT &&
	       !st->log_failing && /* until a write succeeds, each goes itself */
	       st->opt.reserve_bytes >= PEND_LIMIT + 2 * WAL_BLOCK_SIZE && db_reserve_whole(st);
}

/*
 * Write the delayed records out (and sync the log, with sync), drawing on
 * the reserve if the disk is full (may_delay).  0 or the error; st->pend
 * is empty unless the records did not reach the log (a failed sync leaves
 * them there: not written twice).  mu NOT held; only the writer-queue
 * head, or close, calls this.
 */
static int pend_out(struct store *st, bool sync)
{
	if (pend_empty(st))
		return 0;
	bool written = false;
	int rc = ensure_log(st);
	if (rc == 0)
		rc = log_group(st, st->pend->rep.data, st->pend->rep.len, sync, true,
			       &written);
	if (written) {
		store_batch_clear(st->pend);
		st->pend_restarted = true;
	}
	return rc;
}

/* pend_out for the head holding mu: dropped meanwhile. */
static int pend_out_locked(struct store *st)
{
	pthread_mutex_unlock(&st->mu);
	int rc = pend_out(st, false);
	pthread_mutex_lock(&st->mu);
	return rc;
}

/* Where a delayed group starts in st->pend. */
struct pend_mark {
	bool delayed;
	struct batch_mark at;
};

/*
 * Log a group: delayed, behind the delayed records (those go out first
 * when the group would take them past PEND_LIMIT); or straight to the log,
 * flushed (or synced), after the delayed records.  On failure the group is
 * neither in the log nor delayed, and the delayed records stay.  mu NOT
 * held.
 */
static int log_records(struct store *st, const struct store_batch *group,
		       bool sync, bool reserve, struct pend_mark *mark)
{
	mark->delayed = false;
	bool delay = may_delay(st, group, sync);
	if (!pend_empty(st) &&
	    (!delay || st->pend->rep.len + group->rep.len - BATCH_HEADER_SIZE > PEND_LIMIT)) {
		int rc = pend_out(st, false);
		if (rc)
			return rc;
	}
	if (!delay)
		return log_group(st, group->rep.data, group->rep.len, sync, reserve, NULL);
	batch_save(st->pend, &mark->at);
	int rc = batch_append(st->pend, group);
	if (rc) {
		batch_rollback(st->pend, &mark->at);
		return rc;
	}
	if (mark->at.count == 0) /* the first: the batch starts at its sequence */
		batch_set_sequence(st->pend, batch_sequence(group));
	mark->delayed = true;
	return 0;
}

/* Take a delayed group back out of st->pend (its memtable insert failed). */
static void pend_cut(struct store *st, const struct pend_mark *mark)
{
	if (mark->delayed)
		batch_rollback(st->pend, &mark->at);
}

/*
 * Make sure the memtable has room (or, with force, switch it out even if
 * it has).  reserve: a STORE_WRITE_RESERVE write, which may overfill the
 * memtable rather than fail when the flush it needs is failing.  mu held;
 * may wait.  Only the writer-queue head calls this.
 */
static int make_room_for_write(struct store *st, bool force, bool reserve)
{
	bool allow_delay = !force;
	for (;;) {
		if (st->bg_error)
			return st->bg_error;
		size_t l0 = l0_files(st);
		size_t usage = memtable_memory_usage(st->mem);
		if (!force && reserve && (st->imm || st->bg_soft_error) &&
		    usage <= 2 * st->opt.write_buffer_size) {
			/* The flush that would make room is failing or queued:
			 * a deletion goes into memory (at most one more
			 * write buffer) rather than wait or fail. */
			return 0;
		}
		bool slow = allow_delay && l0 >= (size_t)st->opt.l0_slowdown_trigger &&
			    !st->bg_soft_error;
		if (!slow && !force && usage <= st->opt.write_buffer_size)
			return 0;
		if (!pend_empty(st)) {
			/* Delayed records belong in the log of the memtable
			 * they are in, and wait for nothing. */
			int rc = pend_out_locked(st);
			if (rc)
				return rc;
			continue;
		}
		if (slow) {
			/* Give compaction some CPU, once per write, rather than
			 * stopping hard later. */
			uint64_t t = now_micros();
			pthread_mutex_unlock(&st->mu);
			usleep(1000);
			pthread_mutex_lock(&st->mu);
			st->stall_micros += now_micros() - t;
			allow_delay = false;
		} else if (!force && usage <= st->opt.write_buffer_size) {
			return 0;
		} else if (force && !st->imm && memtable_count(st->mem) == 0 && st->roll_log) {
			/* Nothing to flush, but a copy joining needs a log
			 * started after it joined: the empty memtable's
			 * writes go to the new one. */
			retire_old_log(st);
			struct wal_writer *old = st->log;
			/* Every write in the old log is in a table, but recovery
			 * reads it until a flush moves log_number past it, and
			 * a torn tail there would drop the new log: synced, and
			 * no link.  A rare path (a copy joining). */
			int rc = old ? wal_sync(old) : 0;
			if (rc) {
				db_report(st, "%s: commit log sync failed: %s",
					  st->dir, strerror(-rc));
				db_set_bg_error(st, rc);
				return rc;
			}
			st->log = NULL;
			rc = open_log(st, false, NULL);
			if (rc) {
				st->log = old;
				return rc;
			}
			int crc = old ? wal_writer_close(old) : 0;
			st->mem_log_number = st->log_number;
			st->roll_log = false;
			return crc;
		} else if (force && !st->imm && memtable_count(st->mem) == 0) {
			return 0; /* nothing to flush */
		} else if (st->imm) {
			/* The flush is failing (full disk): fail now rather
			 * than wait for space that may never come. */
			if (st->bg_soft_error)
				return st->bg_soft_error;
			uint64_t t = now_micros();
			pthread_cond_wait(&st->bg_cv, &st->mu);
			st->stall_micros += now_micros() - t;
		} else if (l0 >= (size_t)st->opt.l0_stop_trigger) {
			if (st->bg_soft_error)
				return st->bg_soft_error;
			uint64_t t = now_micros();
			pthread_cond_broadcast(&st->work_cv);
			pthread_cond_wait(&st->bg_cv, &st->mu);
			st->stall_micros += now_micros() - t;
		} else {
			/* Switch to a new memtable and log.  The old log is
			 * not synced here (an fdatasync per switch would cost
			 * the writer as much as all its other work): the next
			 * sync write syncs it first (sync_before), and once
			 * imm is in a table nothing reads it. */
			retire_old_log(st);
			struct memtable *m = memtable_new();
			if (!m)
				return -ENOMEM;
			struct wal_writer *old = st->log;
			uint64_t old_number = st->log_number;
			st->log = NULL;
			int rc = open_log(st, false, old);
			if (rc) {
				st->log = old; /* whole: keep using it */
				memtable_unref(m);
				return rc;
			}
			st->old_log = old;
			st->old_log_number = old ? old_number : 0;
			st->mem_log_number = st->log_number;
			st->imm = st->mem;
			atomic_store(&st->has_imm, true);
			st->mem = m;
			force = false;
			pthread_cond_broadcast(&st->work_cv);
		}
	}
}

/*
 * Gather the head's batch and those of the writers behind it into
 * st->group.  Returns the last writer included.  mu held.
 */
static struct writer *build_group(struct store *st, struct writer *head,
				  const struct store_batch **out)
{
	const struct store_batch *first = head->batch;
	size_t size = first->rep.len;
	/* Keep a small write from waiting behind a huge group. */
	size_t max = size <= (128u << 10) ? size + (128u << 10) : (1u << 20);
	struct writer *last = head;
	bool copied = false;
	for (struct writer *w = head->next; w; w = w->next) {
		if (w->sync && !head->sync)
			break; /* a sync write must not ride a non-sync group */
		if (w->reserve != head->reserve)
			break; /* a retry on the reserve is for deletions only */
		if (!w->batch || w->force_flush)
			break;
		size += w->batch->rep.len - BATCH_HEADER_SIZE;
		if (size > max)
			break;
		if (!copied) {
			store_batch_clear(st->group);
			if (batch_append(st->group, first))
				break;
			copied = true;
		}
		if (batch_append(st->group, w->batch))
			break;
		last = w;
	}
	*out = copied ? st->group : first;
	return last;
}

struct insert_ctx {
	struct memtable *mem;
};

static int insert_op(void *ctx, uint64_t seq, int type, const uint8_t *key,
		     size_t klen, const uint8_t *val, size_t vlen)
{
	struct insert_ctx *ic = ctx;
	return memtable_add(ic->mem, seq, type, key, klen, val, vlen);
}

static int do_write(struct store *st, const struct store_batch *batch,
		    bool sync, bool reserve, bool force_flush, bool flush_log)
{
	struct writer w = { .batch = batch, .sync = sync, .reserve = reserve,
			    .force_flush = force_flush };
	pthread_cond_init(&w.cv, NULL);
	pthread_mutex_lock(&st->mu);
	if (st->writers_tail)
		st->writers_tail->next = &w;
	else
		st->writers_head = &w;
	st->writers_tail = &w;
	while (!w.done && st->writers_head != &w)
		pthread_cond_wait(&w.cv, &st->mu);
	if (w.done) {
		pthread_mutex_unlock(&st->mu);
		pthread_cond_destroy(&w.cv);
		return w.status;
	}

	int rc = 0;
	struct writer *last = &w;
	if (st->opt.read_only)
		rc = -EROFS;
	else if (batch || force_flush)
		rc = make_room_for_write(st, force_flush, reserve);
	else if (st->bg_error)
		rc = st->bg_error;

	bool writes = batch && batch_count(batch) > 0;
	if (rc == 0 && writes && !reserve && db_reserve_short(st)) {
		/* Ordinary writes go on only with the reserve whole: the space a
		 * deletion freed from it must not go to them.  (I/O under mu:
		 * only while the disk is, or was, full.) */
		rc = db_reserve_make(st);
	}
	if (rc == 0 && writes && !st->log)
		rc = open_log(st, false, NULL); /* the last was rolled after an error */

	if (rc == 0 && writes) {
		const struct store_batch *group;
		last = build_group(st, &w, &group);
		uint64_t seq = version_set_last_sequence(st->vs) + 1;
		/* The group's rep is written with its sequence; const only to
		 * callers, the header is ours to stamp. */
		batch_set_sequence((struct store_batch *)group, seq);
		uint64_t user_bytes = 0;
		for (struct writer *x = &w;; x = x->next) {
			user_bytes += x->batch->user_bytes;
			if (x == last)
				break;
		}
		struct memtable *mem = st->mem;
		pthread_mutex_unlock(&st->mu);

		struct pend_mark mark;
		rc = log_records(st, group, sync, reserve, &mark);
		bool log_failed = rc != 0;
		if (rc == 0) {
			struct insert_ctx ic = { .mem = mem };
			rc = batch_iterate(group->rep.data, group->rep.len,
					   insert_op, &ic);
		}
		atomic_fetch_add(&st->user_bytes, user_bytes);

		pthread_mutex_lock(&st->mu);
		if (rc == 0) {
			version_set_set_last_sequence(st->vs,
						      seq + batch_count(group) - 1);
		} else if (!log_failed) {
			pend_cut(st, &mark); /* never to reach the log */
			db_report(st, "%s: memtable insert failed: %s",
				  st->dir, strerror(-rc));
			/* The log and the memtable may hold part of the group:
			 * no further write may be acknowledged on top of it. */
			db_set_bg_error(st, -EIO);
		}
		if (group == st->group)
			store_batch_clear(st->group);
	} else if (rc == 0 && !sync && flush_log) {
		rc = pend_out_locked(st); /* the flusher */
	} else if (rc == 0 && sync && !force_flush && !pend_empty(st)) {
		pthread_mutex_unlock(&st->mu);
		rc = pend_out(st, true); /* reports and records its error */
		pthread_mutex_lock(&st->mu);
	} else if (rc == 0 && sync && !force_flush) {
		/* store_sync, or an empty synced batch: the head syncs the
		 * current log for everyone queued so far. */
		pthread_mutex_unlock(&st->mu);
		rc = sync_before(st); /* reports and records its error */
		int src = 0;
		/* No log: the last was cut back and synced by roll_log. */
		if (rc == 0)
			src = st->log ? wal_sync(st->log) : 0;
		pthread_mutex_lock(&st->mu);
		if (rc) {
			/* recorded */
		} else if ((rc = src) != 0) {
			db_report(st, "%s: commit log sync failed: %s",
				  st->dir, strerror(-rc));
			db_set_bg_error(st, rc);
		} else {
			atomic_fetch_add(&st->wal_syncs, 1);
		}
	}

	if (st->opt.log_delay_us) {
		if (st->pend_restarted) /* the oldest record is a new one */
			st->pend_since = 0;
		st->pend_restarted = false;
		if (pend_empty(st)) {
			st->pend_since = 0;
		} else if (!st->pend_since) {
			st->pend_since = now_micros() | 1;
			pthread_cond_signal(&st->flush_cv);
		}
	}

	/* Wake the writers served and the next head. */
	for (;;) {
		struct writer *x = st->writers_head;
		st->writers_head = x->next;
		if (!st->writers_head)
			st->writers_tail = NULL;
		if (x != &w) {
			x->status = rc;
			x->done = true;
			pthread_cond_signal(&x->cv);
		}
		if (x == last)
			break;
	}
	if (st->writers_head)
		pthread_cond_signal(&st->writers_head->cv);
	pthread_mutex_unlock(&st->mu);
	pthread_cond_destroy(&w.cv);
	return rc;
}

static bool want_sync(struct store *st, unsigned flags)
{
	return st->opt.sync || (flags & STORE_WRITE_SYNC);
}

int store_write(struct store *st, const struct store_batch *b, unsigned flags)
{
	if (!b)
		return -EINVAL;
	return do_write(st, b, want_sync(st, flags),
			(flags & STORE_WRITE_RESERVE) != 0, false, false);
}

int store_put(struct store *st, const void *key, size_t klen, const void *val,
	      size_t vlen, unsigned flags)
{
	/* A stack batch for one op avoids two mallocs per put. */
	uint8_t space[512];
	struct store_batch b;
	b.rep.data = space;
	b.rep.cap = sizeof(space);
	b.rep.len = 0;
	b.rep.oom = 0;
	b.user_bytes = 0;
	size_t need = BATCH_HEADER_SIZE + 1 + 2 * VARINT_MAX + klen + vlen;
	if (need > sizeof(space)) {
		b.rep.data = NULL;
		b.rep.cap = 0;
	}
	uint8_t hdr[BATCH_HEADER_SIZE] = { 0 };
	buf_append(&b.rep, hdr, sizeof(hdr));
	int rc = buf_ok(&b.rep) ? -ENOMEM : store_batch_put(&b, key, klen, val, vlen);
	if (rc == 0)
		rc = store_write(st, &b, flags);
	if (b.rep.data != space)
		free(b.rep.data);
	return rc;
}

int store_delete(struct store *st, const void *key, size_t klen, unsigned flags)
{
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	int rc = store_batch_delete(b, key, klen);
	if (rc == 0)
		rc = store_write(st, b, flags);
	store_batch_free(b);
	return rc;
}

int store_sync(struct store *st)
{
	return do_write(st, NULL, true, false, false, false);
}

int store_flush(struct store *st)
{
	int rc = do_write(st, NULL, false, false, true, false);
	if (rc)
		return rc;
	/* Wait until the memtable switched out above is in a table, or the
	 * background thread failed to write it (soft: it stays in its logs
	 * and is retried). */
	pthread_mutex_lock(&st->mu);
	uint64_t attempts = st->bg_attempts;
	while (st->imm && !st->bg_error &&
	       !(st->bg_soft_error && st->bg_attempts != attempts))
		pthread_cond_wait(&st->bg_cv, &st->mu);
	rc = st->bg_error ? st->bg_error : st->imm ? st->bg_soft_error : 0;
	pthread_mutex_unlock(&st->mu);
	return rc;
}

/*
 * The log flusher: writes the delayed records out once the oldest has
 * waited log_delay_us, through the writer queue (only its head touches the
 * log).  After a failure (a full disk) it tries again 100 ms later, or
 * sooner if a write comes.
 */
static void wait_until(struct store *st, uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000u),
			       .tv_nsec = (long)(us % 1000000u) * 1000 };
	pthread_cond_timedwait(&st->flush_cv, &st->mu, &ts);
}

static void *flusher_main(void *arg)
{
	struct store *st = arg;
	pthread_mutex_lock(&st->mu);
	while (!st->shutting_down) {
		if (!st->pend_since || st->bg_error) {
			pthread_cond_wait(&st->flush_cv, &st->mu);
			continue;
		}
		uint64_t due = st->pend_since + st->opt.log_delay_us;
		if (now_micros() < due) {
			wait_until(st, due);
			continue;
		}
		pthread_mutex_unlock(&st->mu);
		int rc = do_write(st, NULL, false, false, false, true);
		pthread_mutex_lock(&st->mu);
		if (rc && st->pend_since && !st->shutting_down)
			wait_until(st, now_micros() + 100000);
	}
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

int db_log_flusher_start(struct store *st)
{
	if (!st->opt.log_delay_us || st->opt.read_only)
		return 0;
	if (pthread_create(&st->flusher, NULL, flusher_main, st))
		return -EAGAIN;
	st->flusher_started = true;
	return 0;
}

int db_log_flusher_stop(struct store *st)
{
	pthread_mutex_lock(&st->mu);
	pthread_cond_broadcast(&st->flush_cv);
	pthread_mutex_unlock(&st->mu);
	if (st->flusher_started)
		pthread_join(st->flusher, NULL);
	st->flusher_started = false;
	/* Even after a sticky error (a compaction's, say): these writes
	 * were acknowledged; none reached the log (pend_out). */
	return pend_out(st, false);
}
