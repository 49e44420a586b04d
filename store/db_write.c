/*
 * db_write: the write path.  Writers queue up under mu; the head of the
 * queue gathers the batches behind it into one group (group commit),
 * appends the group to the commit log as one record, flushes or fsyncs it
 * once for all of them, inserts it into the memtable (without mu: it is the
 * only memtable writer), publishes the new last sequence, and wakes the
 * writers it served.  FORMAT.md "Commit log", "Write batch".
 *
 * A failed append or sync leaves the log in an unknown state: it becomes a
 * sticky background error and every later write fails with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db_int.h"
#include "dbformat.h"

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
 * Make sure the memtable has room (or, with force, switch it out even if
 * it has).  mu held; may wait.  Only the writer-queue head calls this.
 */
static int make_room_for_write(struct store *st, bool force)
{
	bool allow_delay = !force;
	for (;;) {
		if (st->bg_error)
			return st->bg_error;
		size_t l0 = l0_files(st);
		if (allow_delay && l0 >= (size_t)st->opt.l0_slowdown_trigger) {
			/* Give compaction some CPU, once per write, rather than
			 * stopping hard later. */
			uint64_t t = now_micros();
			pthread_mutex_unlock(&st->mu);
			usleep(1000);
			pthread_mutex_lock(&st->mu);
			st->stall_micros += now_micros() - t;
			allow_delay = false;
		} else if (!force && memtable_memory_usage(st->mem) <=
					     st->opt.write_buffer_size) {
			return 0;
		} else if (force && !st->imm && memtable_count(st->mem) == 0) {
			return 0; /* nothing to flush */
		} else if (st->imm) {
			uint64_t t = now_micros();
			pthread_cond_wait(&st->bg_cv, &st->mu);
			st->stall_micros += now_micros() - t;
		} else if (l0 >= (size_t)st->opt.l0_stop_trigger) {
			uint64_t t = now_micros();
			pthread_cond_broadcast(&st->work_cv);
			pthread_cond_wait(&st->bg_cv, &st->mu);
			st->stall_micros += now_micros() - t;
		} else {
			/* Switch to a new memtable and log.  The old log is
			 * synced first so that store_sync() only ever has to
			 * sync the current one. */
			uint64_t number = version_set_new_file_number(st->vs);
			char path[4096];
			db_log_file_name(path, sizeof(path), st->dir, number);
			struct wal_writer *w;
			struct memtable *m = memtable_new();
			if (!m)
				return -ENOMEM;
			int rc = wal_sync(st->log);
			if (rc == 0)
				rc = wal_writer_open(st->env, path, &w);
			if (rc == 0) {
				/* A synced record in a log whose directory entry
				 * is not durable would be lost with the file. */
				rc = st->env->ops->sync_dir(st->env, st->dir);
				if (rc)
					(void)wal_writer_close(w); /* failing anyway */
			}
			if (rc) {
				memtable_unref(m);
				version_set_reuse_file_number(st->vs, number);
				db_report(st, "%s: cannot start commit log: %s",
					  path, strerror(-rc));
				db_set_bg_error(st, rc);
				return rc;
			}
			atomic_fetch_add(&st->wal_syncs, 1);
			rc = wal_writer_close(st->log);
			st->log = w;
			st->log_number = number;
			st->imm = st->mem;
			atomic_store(&st->has_imm, true);
			st->mem = m;
			force = false;
			pthread_cond_broadcast(&st->work_cv);
			if (rc) {
				db_set_bg_error(st, rc);
				return rc;
			}
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
		    bool sync, bool force_flush)
{
	struct writer w = { .batch = batch, .sync = sync,
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
		rc = make_room_for_write(st, force_flush);
	else if (st->bg_error)
		rc = st->bg_error;

	if (rc == 0 && batch && batch_count(batch) > 0) {
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

		uint64_t before = wal_writer_size(st->log);
		rc = wal_add_record(st->log, group->rep.data, group->rep.len);
		if (rc == 0)
			rc = sync ? wal_sync(st->log) : wal_flush(st->log);
		atomic_fetch_add(&st->wal_bytes, wal_writer_size(st->log) - before);
		if (sync && rc == 0)
			atomic_fetch_add(&st->wal_syncs, 1);
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
		} else {
			db_report(st, "%s: commit log write failed: %s",
				  st->dir, strerror(-rc));
			/* The log or memtable may hold part of the group: no
			 * further write may be acknowledged on top of it. */
			db_set_bg_error(st, log_failed ? rc : -EIO);
		}
		if (group == st->group)
			store_batch_clear(st->group);
	} else if (rc == 0 && sync && !force_flush) {
		/* store_sync, or an empty synced batch: the head syncs the
		 * current log for everyone queued so far. */
		pthread_mutex_unlock(&st->mu);
		rc = wal_sync(st->log);
		pthread_mutex_lock(&st->mu);
		if (rc) {
			db_report(st, "%s: commit log sync failed: %s",
				  st->dir, strerror(-rc));
			db_set_bg_error(st, rc);
		} else {
			atomic_fetch_add(&st->wal_syncs, 1);
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
	return do_write(st, b, want_sync(st, flags), false);
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
	return do_write(st, NULL, true, false);
}

int store_flush(struct store *st)
{
	int rc = do_write(st, NULL, false, true);
	if (rc)
		return rc;
	/* Wait until the memtable switched out above is in a table. */
	pthread_mutex_lock(&st->mu);
	while (st->imm && !st->bg_error)
		pthread_cond_wait(&st->bg_cv, &st->mu);
	rc = st->bg_error;
	pthread_mutex_unlock(&st->mu);
	return rc;
}
