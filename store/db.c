/*
 * db: opening, recovering and closing a store.  FORMAT.md "Directory" and
 * "Recovery"; the directory's files are named, and the obsolete ones
 * deleted, by db_files.c.
 *
 * Directory: LOCK, CURRENT, MANIFEST-NNNNNN, NNNNNN.log (commit logs),
 * NNNNNN.sst (tables).  Open = lock, read CURRENT/MANIFEST, replay every
 * commit log numbered >= the MANIFEST's log number in order, write what was
 * replayed to level-0 tables, start a new log, record all of it in one
 * MANIFEST edit, then delete what that edit made obsolete.  Nothing is
 * deleted before the edit that makes it obsolete is durable.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "filter.h"
#include "dbformat.h"

void store_options_init(struct store_options *o)
{
	memset(o, 0, sizeof(*o));
	o->create_if_missing = true;
	o->write_buffer_size = 8u << 20;
	o->block_size = 4096;
	o->block_restart_interval = 16;
	o->block_cache_bytes = 8u << 20;
	store_filter_default(&o->filter);
	o->compression = STORE_COMPRESSION_LZ4;
	o->max_open_files = 1000;
	o->target_file_size = 4u << 20;
	o->level_base_bytes = 16u << 20;
	o->level_multiplier = 10;
	o->l0_compaction_trigger = 4;
	o->l0_slowdown_trigger = 8;
	o->l0_stop_trigger = 12;
}

static int check_options(const struct store_options *o)
{
	if (o->write_buffer_size < 4096 || o->block_size < 64 ||
	    o->block_restart_interval < 1 || store_filter_check(&o->filter) || o->max_open_files < 1 ||
	    o->target_file_size < 1024 || o->level_base_bytes < 1024 ||
	    o->level_multiplier < 2 || o->l0_compaction_trigger < 1 ||
	    o->l0_slowdown_trigger < o->l0_compaction_trigger ||
	    o->l0_stop_trigger < o->l0_slowdown_trigger ||
	    (o->compression != STORE_COMPRESSION_NONE &&
	     o->compression != STORE_COMPRESSION_LZ4))
		return -EINVAL;
	return 0;
}

/* sst_counters.report: damage met under an iterator. */
static void table_report(void *ctx, const char *msg)
{
	db_report(ctx, "%s", msg);
}

struct replay_ctx {
	struct store *st;
	struct memtable *mem;
	uint64_t max_seq;
	bool defer; /* keep everything in memory: the disk is full */
	/* The logs replayed before the current one (for log links): */
	const uint64_t *logs;
	uint64_t *ends; /* where each one's replay stopped (bytes) */
	size_t i;       /* the current log's index in logs */
};

bool db_log_link_whole(const uint64_t *logs, const uint64_t *ends, size_t i,
		       uint64_t min_log, uint64_t prev, uint64_t size)
{
	if (prev < min_log)
		return true; /* its writes are in tables */
	for (size_t j = 0; j < i; j++)
		if (logs[j] == prev)
			return ends[j] >= size;
	return false; /* gone, though its writes are in no table */
}

static int replay_op(void *ctx, uint64_t seq, int type, const uint8_t *key,
		     size_t klen, const uint8_t *val, size_t vlen)
{
	struct replay_ctx *rc = ctx;
	if (seq > rc->max_seq)
		rc->max_seq = seq;
	return memtable_add(rc->mem, seq, type, key, klen, val, vlen);
}

/*
 * Replay one commit log into rc->mem, flushing to level-0 tables (added to
 * edit) whenever the memtable fills.  A torn tail ends the replay: *cut is
 * set to the end of the last whole record (it is left as it is here:
 * recover() drops the later logs first), else to UINT64_MAX.
 */
static int replay_log(struct store *st, uint64_t number,
		      struct replay_ctx *rc, struct version_edit *edit,
		      uint64_t *cut)
{
	char path[4096];
	db_log_file_name(path, sizeof(path), st->dir, number);
	*cut = UINT64_MAX;
	struct wal_reader *r;
	int rc_ = wal_reader_open(st->env, path, &r);
	if (rc_) {
		db_report(st, "%s: cannot open commit log: %s", path,
			  strerror(-rc_));
		return rc_;
	}
	const uint8_t *rec;
	size_t len;
	int ret = 0;
	for (;;) {
		uint64_t at = wal_reader_good_offset(r);
		int n = wal_read_record(r, &rec, &len);
		if (n == 0)
			break;
		if (n < 0) {
			const struct wal_error *e = wal_reader_error(r);
			if (n == -EUCLEAN && e->tail && !st->opt.paranoid_checks) {
				uint64_t good = wal_reader_good_offset(r);
				uint64_t size = 0;
				(void)st->env->ops->file_size(st->env, path, &size);
				/* Read-only (beside a running writer, as
				 * lsmfs-inspect and fsck -n are): the tail may
				 * be a write in progress; it is left alone. */
				db_report(st, "%s: torn tail at offset %" PRIu64
					  " (%s): %s %" PRIu64 " bytes",
					  path, e->offset, e->msg,
					  st->opt.read_only ? "ignored" : "cut",
					  size - good);
				*cut = good;
			} else if (n == -EUCLEAN) {
				db_report(st, "%s: offset %" PRIu64 ": %s",
					  path, e->offset, e->msg);
				ret = -EUCLEAN;
			} else {
				db_report(st, "%s: read error: %s", path,
					  strerror(-n));
				ret = n;
			}
			break;
		}
		uint64_t prev, size;
		if (batch_link_decode(rec, len, &prev, &size)) {
			if (db_log_link_whole(rc->logs, rc->ends, rc->i,
					      version_set_log_number(st->vs),
					      prev, size))
				continue;
			bool paranoid = st->opt.paranoid_checks;
			db_report(st, "%s: offset %" PRIu64 ": links to %06" PRIu64
				  ".log of %" PRIu64 " bytes, which the crash cut "
				  "short: the writes from here on followed writes "
				  "it lost; %s", path, at, prev, size,
				  paranoid ? "an error (paranoid_checks)" :
				  st->opt.read_only ? "not replayed" : "dropped");
			if (paranoid)
				ret = -EUCLEAN;
			else
				*cut = at;
			break;
		}
		ret = batch_iterate(rec, len, replay_op, rc);
		if (ret == -EUCLEAN) {
			db_report(st, "%s: record ending at offset %" PRIu64
				  " is not a valid write batch",
				  path, wal_reader_good_offset(r));
			break;
		}
		if (ret)
			break;
		if (!st->opt.read_only && !rc->defer &&
		    memtable_memory_usage(rc->mem) > st->opt.write_buffer_size) {
			ret = db_write_level0_table(st, rc->mem, edit, NULL);
			memtable_unref(rc->mem);
			rc->mem = memtable_new();
			if (!rc->mem)
				ret = ret ? ret : -ENOMEM;
			if (ret)
				break;
		}
	}
	rc->ends[rc->i] = wal_reader_good_offset(r);
	wal_reader_close(r);
	return ret;
}

/*
 * The replay of logs[i] ended early at `good` (a torn tail, or a link to a
 * log the crash cut short): cut it there, and drop every later log
 * (FORMAT.md "Recovery": a log is synced before any write in a later one
 * is acknowledged as durable, so nothing in them was; replaying them past
 * the lost writes would break the order of writes).  The later logs go first, durably, so that a crash in between
 * leaves the torn log to be found again.  Read-only: nothing is changed;
 * the later logs are only left unread.  0 or the error.
 */
static int cut_torn_log(struct store *st, const uint64_t *logs, size_t nlogs,
			size_t i, uint64_t good)
{
	char path[4096], torn[4096];
	db_log_file_name(torn, sizeof(torn), st->dir, logs[i]);
	int rc = 0;
	bool dropped = false;
	for (size_t j = i + 1; j < nlogs && rc == 0; j++) {
		uint64_t size = 0;
		db_log_file_name(path, sizeof(path), st->dir, logs[j]);
		(void)st->env->ops->file_size(st->env, path, &size);
		db_report(st, "%s: %s (%" PRIu64 " bytes): written after writes "
			  "the crash took (%s), so never synced", path,
			  st->opt.read_only ? "not replayed" : "dropped", size, torn);
		if (st->opt.read_only)
			continue;
		rc = st->env->ops->unlink(st->env, path);
		dropped = true;
	}
	if (rc == 0 && dropped)
		rc = st->env->ops->sync_dir(st->env, st->dir);
	if (rc == 0 && !st->opt.read_only)
		rc = st->env->ops->truncate(st->env, torn, good);
	if (rc)
		db_report(st, "%s: cannot cut the torn tail: %s", torn,
			  strerror(-rc));
	return rc;
}

/* Replay logs[0..*nlogs) in order; a torn tail ends the replay (the later
 * logs dropped, *nlogs cut to the logs that remain). */
static int replay_logs(struct store *st, const uint64_t *logs, size_t *nlogs,
		       struct replay_ctx *rctx, struct version_edit *edit)
{
	uint64_t *ends = calloc(*nlogs + 1, sizeof(*ends));
	if (!ends)
		return -ENOMEM;
	rctx->logs = logs;
	rctx->ends = ends;
	int rc = 0;
	for (size_t i = 0; i < *nlogs && rc == 0; i++) {
		uint64_t cut;
		rctx->i = i;
		rc = replay_log(st, logs[i], rctx, edit, &cut);
		if (rc == 0 && cut != UINT64_MAX) {
			rc = cut_torn_log(st, logs, *nlogs, i, cut);
			*nlogs = i + 1;
		}
	}
	rctx->ends = NULL;
	free(ends);
	return rc;
}

static int new_log(struct store *st, uint64_t number)
{
	char path[4096];
	db_log_file_name(path, sizeof(path), st->dir, number);
	return wal_writer_open(st->env, path, &st->log);
}

/* Every table the MANIFEST names must be in the directory: a missing one
 * is damage (and reads would otherwise see its keys as absent).  mu held. */
static int check_live_tables(struct store *st, char **names, size_t count)
{
	uint64_t *live = NULL, *have = calloc(count + 1, sizeof(*have));
	size_t nlive = 0, nhave = 0;
	int rc = have ? version_set_live_files(st->vs, &live, &nlive) : -ENOMEM;
	if (rc)
		goto out;
	for (size_t i = 0; i < count; i++) {
		uint64_t number;
		if (db_parse_file_name(names[i], &number) == FK_SST)
			have[nhave++] = number;
	}
	qsort(have, nhave, sizeof(*have), db_cmp_file_numbers);
	size_t missing = 0;
	uint64_t first = 0;
	for (size_t i = 0; i < nlive; i++) {
		if (!bsearch(&live[i], have, nhave, sizeof(*have), db_cmp_file_numbers)) {
			if (!missing++)
				first = live[i];
		}
	}
	if (missing) {
		db_report(st, "%s/%06" PRIu64 ".sst: missing (named by the MANIFEST); "
			  "%zu tables missing in all",
			  st->dir, first, missing);
		rc = -EUCLEAN;
	}
out:
	free(live);
	free(have);
	return rc;
}

/*
 * Recovery could not write (the replayed writes to a table, the new log,
 * or the MANIFEST edit: err, a full disk): keep every replayed write in the
 * memtable instead, in the logs it came from, and write nothing but a new
 * empty log (FORMAT.md "Recovery").  The tables written so far are in no
 * version and go with the obsolete files.  The memtable may outgrow
 * write_buffer_size by what the logs hold; the first write switches it out
 * and the background thread flushes it when space comes back.  mu held.
 */
static int recover_in_memory(struct store *st, const uint64_t *logs, size_t nlogs,
			     struct replay_ctx *rctx, int err)
{
	db_report(st, "%s: cannot write during recovery (%s): the replayed writes "
		  "stay in memory and in their commit logs until the disk has room",
		  st->dir, strerror(-err));
	memtable_unref(rctx->mem);
	rctx->mem = memtable_new();
	if (!rctx->mem)
		return -ENOMEM;
	rctx->defer = true;
	struct version_edit unused;
	version_edit_init(&unused);
	int rc = replay_logs(st, logs, &nlogs, rctx, &unused);
	version_edit_free(&unused);
	if (rc)
		return rc;
	/* The logs stay live under the new one, whose sync writes must not
	 * follow writes a power cut can still take (after a kill -9 their
	 * tails may be in the page cache only): each is synced (a cut to its
	 * own size is an fdatasync, env.h). */
	for (size_t i = 0; i < nlogs && rc == 0; i++) {
		char path[4096];
		uint64_t size = 0;
		db_log_file_name(path, sizeof(path), st->dir, logs[i]);
		rc = st->env->ops->file_size(st->env, path, &size);
		if (rc == 0)
			rc = st->env->ops->truncate(st->env, path, size);
		if (rc)
			db_report(st, "%s: cannot sync the commit log: %s", path,
				  strerror(-rc));
	}
	if (rc)
		return rc;
	version_set_set_last_sequence(st->vs, rctx->max_seq);
	st->mem = rctx->mem;
	rctx->mem = NULL;
	/* Every log from the MANIFEST's on holds writes of st->mem. */
	st->mem_log_number = version_set_log_number(st->vs);
	if (!st->log) {
		uint64_t number = version_set_new_file_number(st->vs);
		rc = new_log(st, number);
		if (rc) {
			db_report(st, "%s: cannot create commit log: %s", st->dir,
				  strerror(-rc));
			return rc;
		}
		st->log_number = number;
	}
	/* No MANIFEST edit names the new log: recovery finds logs by listing
	 * the directory, so its entry must be durable before it is used. */
	rc = st->env->ops->sync_dir(st->env, st->dir);
	if (rc)
		db_report(st, "%s: cannot sync the directory: %s", st->dir,
			  strerror(-rc));
	return rc;
}

/* Make the reserve at open; a full disk only reports it (the next ordinary
 * write tries again).  mu held, the store not yet shared. */
static void reserve_open(struct store *st)
{
	int rc = db_reserve_make(st);
	if (rc)
		db_report(st, "%s/RESERVE: cannot reserve %llu bytes: %s; ordinary "
			  "writes fail until it can", st->dir,
			  (unsigned long long)st->opt.reserve_bytes, strerror(-rc));
}

/* mu held. */
static int recover(struct store *st)
{
	int rc = version_set_recover(st->vs);
	if (rc == -ENOENT) {
		if (!st->opt.create_if_missing) {
			db_report(st, "%s: no store here (CURRENT missing)",
				  st->dir);
			return -ENOENT;
		}
		if (st->opt.read_only)
			return -ENOENT;
		rc = version_set_create(st->vs);
	} else if (rc == 0 && st->opt.error_if_exists) {
		db_report(st, "%s: store exists", st->dir);
		return -EEXIST;
	}
	if (rc)
		return rc;

	/* Find the commit logs to replay. */
	char **names = NULL;
	size_t count = 0;
	rc = st->env->ops->list_dir(st->env, st->dir, &names, &count);
	if (rc)
		return rc;
	uint64_t *logs = calloc(count + 1, sizeof(*logs));
	size_t nlogs = 0;
	if (!logs) {
		env_free_names(names, count);
		return -ENOMEM;
	}
	uint64_t min_log = version_set_log_number(st->vs);
	for (size_t i = 0; i < count; i++) {
		uint64_t number;
		enum file_kind k = db_parse_file_name(names[i], &number);
		if (k == FK_LOG || k == FK_SST || k == FK_MANIFEST)
			version_set_mark_file_number_used(st->vs, number);
		if (k == FK_LOG && number >= min_log)
			logs[nlogs++] = number;
	}
	rc = check_live_tables(st, names, count);
	env_free_names(names, count);
	if (rc == 0 && st->opt.ncopies)
		rc = db_copies_check_tables(st);
	if (rc) {
		free(logs);
		return rc;
	}
	qsort(logs, nlogs, sizeof(*logs), db_cmp_file_numbers);

	struct version_edit edit;
	version_edit_init(&edit);
	struct replay_ctx rctx = { .st = st, .mem = memtable_new(),
				   .max_seq = version_set_last_sequence(st->vs) };
	if (!rctx.mem) {
		rc = -ENOMEM;
		goto out;
	}
	rc = replay_logs(st, logs, &nlogs, &rctx, &edit);
	if (rc && !(db_error_is_soft(rc) && !st->opt.read_only))
		goto out;
	version_set_set_last_sequence(st->vs, rctx.max_seq);

	if (st->opt.read_only) {
		/* Serve the replayed writes from memory; write nothing. */
		st->mem = rctx.mem;
		rctx.mem = NULL;
		goto out;
	}
	/* Each write that meets a full disk draws on RESERVE and is tried
	 * again, until RESERVE is empty (db_reserve.c).  A failed step
	 * leaves nothing behind: no table, no MANIFEST, the edit as it was
	 * (an empty log file is harmless). */
	if (rc == 0 && memtable_count(rctx.mem) > 0) {
		do
			rc = db_write_level0_table(st, rctx.mem, &edit, NULL);
		while (rc && db_reserve_draw_for_recovery(st, rc) == 0);
	}
	uint64_t log_number = 0;
	if (rc == 0) {
		do {
			log_number = version_set_new_file_number(st->vs);
			rc = new_log(st, log_number);
		} while (rc && db_reserve_draw_for_recovery(st, rc) == 0);
		if (rc)
			db_report(st, "%s: cannot create commit log: %s", st->dir,
				  strerror(-rc));
	}
	if (rc == 0) {
		st->log_number = st->mem_log_number = log_number;
		version_edit_set_log_number(&edit, log_number);
		do
			rc = version_set_log_and_apply(st->vs, &edit, &st->mu);
		while (rc && db_reserve_draw_for_recovery(st, rc) == 0);
	}
	if (rc == 0) {
		st->mem = memtable_new();
		if (!st->mem) {
			rc = -ENOMEM;
			goto out;
		}
	} else if (db_error_is_soft(rc)) {
		rc = recover_in_memory(st, logs, nlogs, &rctx, rc);
		if (rc)
			goto out;
	} else {
		goto out;
	}
	db_delete_obsolete_files(st);
	reserve_open(st);
out:
	if (rctx.mem)
		memtable_unref(rctx.mem);
	version_edit_free(&edit);
	free(logs);
	return rc;
}

/* The mirror env's hooks (env_mirror.c). */
static int copy_failed(void *ctx, size_t copy, int err, const char *what)
{
	struct store *st = ctx;
	return st->opt.copy_failed ? st->opt.copy_failed(st->opt.copy_ctx, copy, err, what) : 0;
}

static void copy_log(void *ctx, const char *msg)
{
	db_report(ctx, "%s", msg);
}

size_t store_copy_count(struct store *st)
{
	return st->mirror ? env_mirror_count(st->mirror) : 1;
}

int store_copy_info(struct store *st, size_t copy, struct store_copy_info *out)
{
	memset(out, 0, sizeof(*out));
	if (copy >= store_copy_count(st))
		return -EINVAL;
	if (!st->mirror) {
		out->dir = st->dir;
		out->live = true;
		return 0;
	}
	out->dir = env_mirror_dir(st->mirror, copy);
	out->live = env_mirror_live(st->mirror, copy);
	env_mirror_counts(st->mirror, copy, &out->healed, &out->read_errors);
	return 0;
}

int store_copy_drop(struct store *st, size_t copy, int err, const char *why)
{
	if (!st->mirror || copy >= env_mirror_count(st->mirror))
		return err;
	return env_mirror_drop(st->mirror, copy, err, why);
}

/* Stop the background thread (shutting down: the flusher sees it too). */
static void stop_bg(struct store *st)
{
	pthread_mutex_lock(&st->mu);
	st->shutting_down = true;
	pthread_cond_broadcast(&st->work_cv);
	pthread_mutex_unlock(&st->mu);
	if (st->bg_started)
		pthread_join(st->bg_thread, NULL);
	st->bg_started = false;
}

static void store_free(struct store *st)
{
	if (st->old_log)
		(void)wal_writer_close(st->old_log); /* as st->log */
	if (st->log)
		(void)wal_writer_close(st->log); /* close reports via its caller */
	if (st->mem)
		memtable_unref(st->mem);
	if (st->imm)
		memtable_unref(st->imm);
	if (st->vs)
		version_set_free(st->vs);
	if (st->tables)
		table_cache_free(st->tables);
	if (st->cache)
		block_cache_free(st->cache);
	filter_cache_free(st->filters); /* after the tables: they detach */
	if (st->lock)
		st->env->ops->unlock(st->lock);
	env_mirror_free(st->mirror);
	store_batch_free(st->group);
	store_batch_free(st->pend);
	pthread_cond_destroy(&st->flush_cv);
	pthread_mutex_destroy(&st->mu);
	pthread_mutex_destroy(&st->errmu);
	pthread_cond_destroy(&st->bg_cv);
	pthread_cond_destroy(&st->work_cv);
	free(st->pending_outputs);
	free(st->dir);
	free(st);
}

int store_open(const char *dir, const struct store_options *opt,
	       struct store **out)
{
	struct store_options defaults;
	if (!opt) {
		store_options_init(&defaults);
		opt = &defaults;
	}
	if (check_options(opt)) {
		if (opt->log)
			opt->log(opt->log_ctx, "store_open: invalid options");
		return -EINVAL;
	}
	struct store *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->opt = *opt;
	st->opt.copies = NULL; /* the caller's array: not kept */
	st->env = opt->env ? opt->env : store_env_posix();
	st->dir = strdup(dir);
	pthread_mutex_init(&st->mu, NULL);
	pthread_mutex_init(&st->errmu, NULL);
	st->counters.report = table_report;
	st->counters.report_ctx = st;
	pthread_cond_init(&st->bg_cv, NULL);
	pthread_cond_init(&st->work_cv, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&st->flush_cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	st->snapshots.next = st->snapshots.prev = &st->snapshots;
	st->group = store_batch_new();
	st->pend = store_batch_new();
	st->cache = block_cache_new(opt->block_cache_bytes);
	if (filter_cache_new(opt->filter_memory, &st->filters) == 0)
		st->counters.filters = st->filters;
	if (!st->dir || !st->group || !st->pend || !st->cache || !st->filters) {
		store_free(st);
		return -ENOMEM;
	}
	int rc;
	{
		/* Always through the mirror, so that a copy can join later. */
		const char *dirs[STORE_MAX_COPIES];
		if (opt->ncopies >= STORE_MAX_COPIES || (opt->ncopies && !opt->copies)) {
			store_free(st);
			return -EINVAL;
		}
		dirs[0] = dir;
		for (size_t i = 0; i < opt->ncopies; i++)
			dirs[i + 1] = opt->copies[i];
		struct env_mirror_hooks h = { .failed = copy_failed, .log = copy_log, .ctx = st,
					      .read_only = opt->read_only };
		rc = env_mirror_new(st->env, dirs, opt->ncopies + 1, &h, &st->mirror);
		if (rc) {
			store_free(st);
			return rc;
		}
		st->env = st->mirror;
	}
	if (!opt->read_only && opt->create_if_missing) {
		rc = st->env->ops->mkdir(st->env, dir);
		if (rc && rc != -EEXIST) {
			db_report(st, "%s: cannot create directory: %s", dir,
				  strerror(-rc));
			store_free(st);
			return rc;
		}
	}
	if (!opt->read_only) {
		char lockpath[4096];
		snprintf(lockpath, sizeof(lockpath), "%s/LOCK", dir);
		rc = st->env->ops->lock(st->env, lockpath, &st->lock);
		if (rc) {
			db_report(st, "%s: cannot lock: %s", lockpath,
				  rc == -EBUSY ? "store in use by another process"
					       : strerror(-rc));
			store_free(st);
			return rc;
		}
	}
	/* Keep a few descriptors for logs and the MANIFEST. */
	int tables_open = opt->max_open_files > 20 ? opt->max_open_files - 10
						   : opt->max_open_files;
	st->tables = table_cache_new(st->env, st->dir, tables_open, st->cache,
				     &st->counters);
	struct version_set_options vo = {
		.env = st->env, .dir = st->dir, .opt = &st->opt,
		.tables = st->tables, .manifest_bytes = &st->manifest_bytes,
		.log = opt->log, .log_ctx = opt->log_ctx,
		.session_totals = db_session_totals, .totals_ctx = st,
	};
	st->vs = st->tables ? version_set_new(&vo) : NULL;
	if (!st->vs) {
		store_free(st);
		return -ENOMEM;
	}
	pthread_mutex_lock(&st->mu);
	rc = opt->ncopies ? db_copies_reconcile(st) : 0;
	if (rc == 0)
		rc = recover(st);
	if (rc == 0)
		db_copies_opened(st);
	pthread_mutex_unlock(&st->mu);
	if (rc == 0 && !opt->read_only) {
		if (pthread_create(&st->bg_thread, NULL, db_bg_main, st))
			rc = -EAGAIN;
		else
			st->bg_started = true;
		if (rc == 0 && (rc = db_log_flusher_start(st)) != 0)
			stop_bg(st);
	}
	if (rc) {
		store_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

int store_close(struct store *st)
{
	if (!st)
		return 0;
	stop_bg(st);
	/* Delayed records go to st->log before it is synced below; their
	 * failure does not keep the logs from being synced. */
	int prc = db_log_flusher_stop(st);
	int rc = st->bg_error;
	if (st->old_log) {
		/* Its memtable was not flushed (the background thread stopped
		 * first, or its flush failed): the writes in it were
		 * acknowledged, so it is synced before the newer log. */
		int r = (rc || !st->imm) ? 0 : wal_sync(st->old_log);
		int c = wal_writer_close(st->old_log);
		st->old_log = NULL;
		if (!rc)
			rc = r ? r : c;
	}
	if (st->log) {
		/* A clean close leaves every acknowledged write durable. */
		int r = rc || !st->log_dir_unsynced ? 0 :
			st->env->ops->sync_dir(st->env, st->dir);
		r = rc || r ? r : wal_sync(st->log);
		int c = wal_writer_close(st->log);
		st->log = NULL;
		if (!rc)
			rc = r ? r : c;
	}
	if (!rc)
		rc = prc;
	if (!rc && !st->opt.read_only && st->vs) {
		/* Writes since the last edit count in the lifetime totals too:
		 * one more edit records them (FORMAT.md, tag 7).  Its failure
		 * loses nothing but those counts, so close does not fail. */
		struct store_totals last, base, now;
		version_set_totals(st->vs, &last);
		version_set_base_totals(st->vs, &base);
		pthread_mutex_lock(&st->mu);
		db_session_totals(st, &now);
		if (base.user_bytes_written + now.user_bytes_written != last.user_bytes_written ||
		    base.wal_bytes_written + now.wal_bytes_written != last.wal_bytes_written) {
			struct version_edit e;
			version_edit_init(&e);
			int r = version_set_log_and_apply(st->vs, &e, &st->mu);
			version_edit_free(&e);
			if (r)
				db_report(st, "%s: recording the write totals at close: %s", st->dir,
					  strerror(-r));
		}
		pthread_mutex_unlock(&st->mu);
	}
	if (!st->snapshots.next || st->snapshots.next != &st->snapshots) {
		/* Unreleased snapshots are the caller's leak; free them. */
		struct store_snapshot *s = st->snapshots.next;
		while (s && s != &st->snapshots) {
			struct store_snapshot *n = s->next;
			free(s);
			s = n;
		}
	}
	store_free(st);
	return rc;
}
