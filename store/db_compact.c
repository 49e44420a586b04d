/*
 * db_compact: the background thread.  It flushes the immutable memtable to
 * a table (always first: writers may be waiting for it), then runs manual
 * and size-triggered compactions one at a time.  FORMAT.md "Compaction".
 *
 * A compaction merges its inputs in internal-key order and drops an entry
 * when a newer entry of the same user key is visible to every live
 * snapshot, and a deletion when, in addition, no deeper level can hold the
 * key.  Outputs are cut at target_file_size or where they would overlap
 * too much of the level below.  The new version is written to the MANIFEST
 * (and synced) before any input file is deleted.
 *
 * Locking: runs with mu held except during table I/O.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db_int.h"
#include "dbformat.h"

#define BACKOFF_FIRST_MS 50
#define BACKOFF_MAX_MS 2000

void db_bg_failed(struct store *st, int err)
{
	if (!err)
		return;
	if (!db_error_is_soft(err)) {
		db_set_bg_error(st, err);
		return;
	}
	/* Nothing acknowledged depends on the step that failed (its outputs
	 * are not in any version, its inputs are still live): try again
	 * later, when space may be back. */
	if (!st->bg_soft_error)
		db_report(st, "%s: background work failed (%s); retrying until it "
			  "succeeds", st->dir, strerror(-err));
	st->bg_soft_error = err;
	st->bg_backoff_ms = st->bg_backoff_ms ? st->bg_backoff_ms * 2 : BACKOFF_FIRST_MS;
	if (st->bg_backoff_ms > BACKOFF_MAX_MS)
		st->bg_backoff_ms = BACKOFF_MAX_MS;
	clock_gettime(CLOCK_REALTIME, &st->bg_retry_at);
	uint64_t ns = (uint64_t)st->bg_retry_at.tv_nsec +
		      (uint64_t)st->bg_backoff_ms * 1000000u;
	st->bg_retry_at.tv_sec += (time_t)(ns / 1000000000u);
	st->bg_retry_at.tv_nsec = (long)(ns % 1000000000u);
	pthread_cond_broadcast(&st->bg_cv);
}

/* A background step succeeded: the disk takes writes again. */
static void bg_succeeded(struct store *st)
{
	if (st->bg_soft_error)
		db_report(st, "%s: background work succeeds again", st->dir);
	st->bg_soft_error = 0;
	st->bg_backoff_ms = 0;
}

static bool retry_due(struct store *st)
{
	if (!st->bg_soft_error)
		return true;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec > st->bg_retry_at.tv_sec ||
	       (now.tv_sec == st->bg_retry_at.tv_sec &&
		now.tv_nsec >= st->bg_retry_at.tv_nsec);
}

/* The options of a new table; mu not held (store_set_filter changes the
 * filter policy under it). */
static struct sst_builder_options builder_options(struct store *st)
{
	pthread_mutex_lock(&st->mu);
	struct sst_builder_options o = {
		.block_size = st->opt.block_size,
		.restart_interval = st->opt.block_restart_interval,
		.filter = st->opt.filter,
		.compression = st->opt.compression,
	};
	pthread_mutex_unlock(&st->mu);
	return o;
}

int store_set_filter(struct store *st, const struct store_filter *f)
{
	if (store_filter_check(f))
		return -EINVAL;
	pthread_mutex_lock(&st->mu);
	st->opt.filter = *f;
	pthread_mutex_unlock(&st->mu);
	return 0;
}

/* Highest level (<= 2) a flushed table can go to without overlapping
 * anything above it or too much below it (LevelDB's rule): sequential
 * loads then skip level-0 compactions altogether.  mu held. */
static int pick_level_for_output(struct store *st, struct version *v,
				 const uint8_t *small, size_t slen,
				 const uint8_t *large, size_t llen)
{
	int level = 0;
	struct file_meta **fs = NULL;
	size_t n = 0;
	if (version_overlapping_files(v, 0, small, slen, large, llen, &fs, &n) ||
	    n > 0) {
		free(fs);
		return 0;
	}
	free(fs);
	while (level < 2) {
		fs = NULL;
		n = 0;
		if (version_overlapping_files(v, level + 1, small, slen, large,
					      llen, &fs, &n) || n > 0) {
			free(fs);
			break;
		}
		free(fs);
		if (level + 2 < NUM_LEVELS) {
			fs = NULL;
			n = 0;
			if (version_overlapping_files(v, level + 2, small, slen,
						      large, llen, &fs, &n)) {
				free(fs);
				break;
			}
			uint64_t bytes = 0;
			for (size_t i = 0; i < n; i++)
				bytes += fs[i]->size;
			free(fs);
			if (bytes > 10 * st->opt.target_file_size)
				break;
		}
		level++;
	}
	return level;
}

int db_write_level0_table(struct store *st, struct memtable *mem,
			  struct version_edit *edit, struct version *base)
{
	uint64_t number = version_set_new_file_number(st->vs);
	int rc = db_pending_add(st, number);
	if (rc)
		return rc;
	/* A retry after a soft error says nothing new: quiet. */
	bool quiet = st->bg_soft_error != 0;
	if (base)
		version_ref(base);
	memtable_ref(mem);
	pthread_mutex_unlock(&st->mu);

	char path[4096];
	sst_file_name(path, sizeof(path), st->dir, number);
	struct sst_builder_options bo = builder_options(st);
	struct sst_builder *b = NULL;
	struct iter *it = memtable_iter_new(mem);
	struct buf smallest, largest;
	buf_init(&smallest);
	buf_init(&largest);
	uint64_t size = 0;
	rc = it ? sst_builder_new(st->env, path, &bo, &b) : -ENOMEM;
	if (rc == 0) {
		iter_seek_first(it);
		bool first = true;
		for (; iter_valid(it); iter_next(it)) {
			size_t kn, vn;
			const uint8_t *k = iter_key(it, &kn);
			const uint8_t *v = iter_value(it, &vn);
			if (first) {
				buf_append(&smallest, k, kn);
				first = false;
			}
			rc = sst_builder_add(b, k, kn, v, vn);
			if (rc)
				break;
			buf_clear(&largest);
			buf_append(&largest, k, kn);
		}
		if (rc == 0)
			rc = iter_status(it);
		if (rc == 0)
			rc = buf_ok(&smallest) ? buf_ok(&smallest) : buf_ok(&largest);
		if (rc == 0 && !first) {
			rc = sst_builder_finish(b, &size);
			b = NULL;
			if (rc) /* partial: a retry on a full disk needs its space */
				(void)st->env->ops->unlink(st->env, path);
		} else {
			sst_builder_abandon(b);
			b = NULL;
			(void)st->env->ops->unlink(st->env, path); /* partial or empty */
		}
	}
	iter_destroy(it);
	if (rc && !quiet)
		db_report(st, "%s: flush failed: %s", path, strerror(-rc));
	memtable_unref(mem);

	pthread_mutex_lock(&st->mu);
	db_pending_remove(st, number);
	if (rc == 0 && size > 0) {
		int level = base ? pick_level_for_output(st, base, smallest.data,
							 smallest.len - IKEY_TAG_LEN,
							 largest.data,
							 largest.len - IKEY_TAG_LEN)
				 : 0;
		rc = version_edit_add_file(edit, level, number, size,
					   smallest.data, smallest.len,
					   largest.data, largest.len);
		st->flush_bytes += size;
		st->flushes++;
	}
	if (base)
		version_unref(base);
	buf_free(&smallest);
	buf_free(&largest);
	return rc;
}

/*
 * Flush st->imm.  deeper: the table may skip to level 1 or 2 when it
 * overlaps nothing; not while a compaction runs, whose output could land
 * in the same key gap of that level.  mu held.
 */
static int compact_memtable(struct store *st, bool deeper)
{
	struct version_edit edit;
	version_edit_init(&edit);
	struct version *base = deeper ? version_set_current(st->vs) : NULL;
	if (base)
		version_ref(base);
	int rc = db_write_level0_table(st, st->imm, &edit, base);
	if (base)
		version_unref(base);
	if (rc == 0) {
		/* Logs older than the first of the active memtable's now live
		 * in tables. */
		version_edit_set_log_number(&edit, st->mem_log_number);
		rc = version_set_log_and_apply(st->vs, &edit, &st->mu);
	}
	version_edit_free(&edit);
	if (rc) {
		db_bg_failed(st, rc);
		/* The table written, if any, is in no version: free its space. */
		db_delete_obsolete_files(st);
		return rc;
	}
	memtable_unref(st->imm);
	st->imm = NULL;
	atomic_store(&st->has_imm, false);
	db_delete_obsolete_files(st);
	return 0;
}

struct compaction_state {
	struct compaction *c;
	uint64_t smallest_snapshot;
	struct sst_builder *builder;
	uint64_t number;
	struct buf smallest, largest;
	uint64_t bytes_written;
	struct {
		uint64_t number, size;
		struct buf smallest, largest;
	} *outputs;
	size_t noutputs;
};

/* Close the open output table.  mu NOT held. */
static int finish_output(struct compaction_state *cs)
{
	uint64_t size = 0;
	int rc = sst_builder_finish(cs->builder, &size);
	cs->builder = NULL;
	if (rc)
		return rc;
	void *p = realloc(cs->outputs, (cs->noutputs + 1) * sizeof(*cs->outputs));
	if (!p)
		return -ENOMEM;
	cs->outputs = p;
	cs->outputs[cs->noutputs].number = cs->number;
	cs->outputs[cs->noutputs].size = size;
	cs->outputs[cs->noutputs].smallest = cs->smallest;
	cs->outputs[cs->noutputs].largest = cs->largest;
	cs->noutputs++;
	buf_init(&cs->smallest);
	buf_init(&cs->largest);
	cs->bytes_written += size;
	return 0;
}

static int open_output(struct store *st, struct compaction_state *cs)
{
	pthread_mutex_lock(&st->mu);
	cs->number = version_set_new_file_number(st->vs);
	int rc = db_pending_add(st, cs->number);
	pthread_mutex_unlock(&st->mu);
	if (rc)
		return rc;
	char path[4096];
	sst_file_name(path, sizeof(path), st->dir, cs->number);
	struct sst_builder_options bo = builder_options(st);
	buf_clear(&cs->smallest);
	buf_clear(&cs->largest);
	return sst_builder_new(st->env, path, &bo, &cs->builder);
}

/* The merge of a compaction's inputs. */
static struct iter *compaction_input(struct store *st, struct compaction *c)
{
	size_t n = c->ninputs[0] + c->ninputs[1];
	struct iter **its = calloc(n ? n : 1, sizeof(*its));
	if (!its)
		return NULL;
	size_t k = 0;
	for (int which = 0; which < 2; which++)
		for (size_t i = 0; i < c->ninputs[which]; i++) {
			struct file_meta *f = c->inputs[which][i];
			its[k++] = table_cache_iter(st->tables, f->number, f->size,
						    false);
		}
	for (size_t i = 0; i < k; i++)
		if (!its[i]) {
			for (size_t j = 0; j < k; j++)
				iter_destroy(its[j]);
			free(its);
			return NULL;
		}
	struct iter *m = merge_iter_new(ikey_compare, ikey_prefix, its, k);
	free(its);
	return m;
}

/* Merge the inputs into new tables at level + 1 and install them.  mu
 * held (dropped while merging). */
static int do_compaction_work(struct store *st, struct compaction *c)
{
	struct compaction_state cs = { .c = c };
	buf_init(&cs.smallest);
	buf_init(&cs.largest);
	cs.smallest_snapshot = db_smallest_snapshot(st);
	bool quiet = st->bg_soft_error != 0; /* a retry: reported already */
	uint64_t bytes_read = 0;
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < c->ninputs[w]; i++)
			bytes_read += c->inputs[w][i]->size;
	pthread_mutex_unlock(&st->mu);

	struct iter *in = compaction_input(st, c);
	int rc = in ? 0 : -ENOMEM;
	struct buf cur_ukey;
	buf_init(&cur_ukey);
	bool has_cur = false;
	uint64_t last_seq_for_key = SEQ_MAX;
	if (in)
		iter_seek_first(in);
	while (rc == 0 && in && iter_valid(in)) {
		/* A waiting flush goes first: writers may be stalled on it. */
		if (atomic_load(&st->has_imm)) {
			pthread_mutex_lock(&st->mu);
			if (st->imm && !st->bg_error)
				rc = compact_memtable(st, false);
			st->bg_attempts++;
			if (rc == 0)
				bg_succeeded(st);
			pthread_cond_broadcast(&st->bg_cv);
			if (st->bg_error)
				rc = st->bg_error;
			pthread_mutex_unlock(&st->mu);
			if (rc)
				break;
		}
		size_t kn, vn;
		const uint8_t *k = iter_key(in, &kn);
		if (cs.builder && compaction_should_stop_before(c, k, kn)) {
			rc = finish_output(&cs);
			if (rc)
				break;
		}
		struct parsed_ikey p;
		if (ikey_parse(k, kn, &p)) {
			rc = -EUCLEAN;
			db_report(st, "%s: compaction met a malformed key in level %d/%d inputs",
				  st->dir, c->level, c->level + 1);
			break;
		}
		bool drop = false;
		if (!has_cur || ukey_compare(p.ukey, p.ulen, cur_ukey.data,
					     cur_ukey.len) != 0) {
			buf_clear(&cur_ukey);
			buf_append(&cur_ukey, p.ukey, p.ulen);
			has_cur = true;
			last_seq_for_key = SEQ_MAX;
		}
		if (last_seq_for_key <= cs.smallest_snapshot) {
			drop = true; /* shadowed for every reader */
		} else if (p.type == KTYPE_DELETE && p.seq <= cs.smallest_snapshot &&
			   compaction_is_base_level_for_key(c, p.ukey, p.ulen)) {
			drop = true; /* nothing below it left to hide */
		}
		last_seq_for_key = p.seq;
		if (!drop) {
			if (!cs.builder) {
				rc = open_output(st, &cs);
				if (rc)
					break;
			}
			if (cs.smallest.len == 0)
				buf_append(&cs.smallest, k, kn);
			buf_clear(&cs.largest);
			buf_append(&cs.largest, k, kn);
			const uint8_t *v = iter_value(in, &vn);
			rc = sst_builder_add(cs.builder, k, kn, v, vn);
			if (rc == 0)
				rc = buf_ok(&cs.smallest) ? -ENOMEM : buf_ok(&cs.largest);
			if (rc == 0 && sst_builder_file_size(cs.builder) >=
					       c->max_output_file_size)
				rc = finish_output(&cs);
		}
		if (rc == 0)
			iter_next(in);
	}
	if (rc == 0 && in)
		rc = iter_status(in);
	if (rc == 0 && cs.builder)
		rc = finish_output(&cs);
	if (cs.builder) {
		sst_builder_abandon(cs.builder);
		cs.builder = NULL;
	}
	iter_destroy(in);
	buf_free(&cur_ukey);
	if (rc && rc != -EUCLEAN && !quiet)
		db_report(st, "%s: compaction of level %d failed: %s",
			  st->dir, c->level, strerror(-rc));

	pthread_mutex_lock(&st->mu);
	if (rc == 0) {
		compaction_add_input_deletions(c);
		for (size_t i = 0; i < cs.noutputs && rc == 0; i++)
			rc = version_edit_add_file(&c->edit, c->level + 1,
						   cs.outputs[i].number,
						   cs.outputs[i].size,
						   cs.outputs[i].smallest.data,
						   cs.outputs[i].smallest.len,
						   cs.outputs[i].largest.data,
						   cs.outputs[i].largest.len);
		if (rc == 0)
			rc = version_set_log_and_apply(st->vs, &c->edit, &st->mu);
	}
	st->compaction_read += bytes_read;
	st->compaction_written += cs.bytes_written;
	st->compactions++;
	for (size_t i = 0; i < cs.noutputs; i++) {
		db_pending_remove(st, cs.outputs[i].number);
		buf_free(&cs.outputs[i].smallest);
		buf_free(&cs.outputs[i].largest);
	}
	if (cs.number)
		db_pending_remove(st, cs.number);
	free(cs.outputs);
	buf_free(&cs.smallest);
	buf_free(&cs.largest);
	return rc;
}

/* One unit of background work; 0 or the error it met (already recorded).
 * mu held. */
static int background_work(struct store *st)
{
	if (st->imm)
		return compact_memtable(st, true); /* records its error */
	if (st->manifest_roll == 1) {
		db_copies_roll_manifest(st);
		return 0; /* its status goes to the asker */
	}
	struct manual_compaction *m = st->manual;
	struct compaction *c;
	if (m) {
		c = version_set_compact_range(st->vs, m->level, m->begin, m->blen,
					      m->end, m->elen);
		if (!c) {
			m->done = true;
			st->manual = NULL;
			return 0;
		}
	} else {
		c = version_set_pick_compaction(st->vs);
		if (!c)
			return 0;
	}
	int rc;
	if (!m && compaction_is_trivial_move(c)) {
		struct file_meta *f = c->inputs[0][0];
		version_edit_delete_file(&c->edit, c->level, f->number);
		rc = version_edit_add_file(&c->edit, c->level + 1, f->number,
					   f->size, f->smallest.data,
					   f->smallest.len, f->largest.data,
					   f->largest.len);
		if (rc == 0)
			rc = version_set_log_and_apply(st->vs, &c->edit, &st->mu);
	} else {
		rc = do_compaction_work(st, c);
	}
	compaction_free(c);
	if (rc) {
		db_bg_failed(st, rc);
		/* The caller may have given up on m (bg error): touch it only
		 * while it is still hooked. */
		if (m && st->manual == m) {
			m->status = rc;
			m->done = true;
			st->manual = NULL;
		}
	}
	/* After a failure too: the abandoned outputs' space comes back. */
	db_delete_obsolete_files(st);
	return rc;
}

static bool has_work(struct store *st)
{
	return st->imm || st->manual || st->manifest_roll == 1 ||
	       version_set_needs_compaction(st->vs);
}

void *db_bg_main(void *arg)
{
	struct store *st = arg;
	pthread_mutex_lock(&st->mu);
	for (;;) {
		if (st->shutting_down)
			break;
		if (st->bg_error || !has_work(st)) {
			pthread_cond_wait(&st->work_cv, &st->mu);
			continue;
		}
		if (!retry_due(st)) {
			/* A soft error: wait out the back-off (or shutdown). */
			(void)pthread_cond_timedwait(&st->work_cv, &st->mu,
						     &st->bg_retry_at);
			continue;
		}
		st->bg_busy = true;
		int rc = background_work(st);
		st->bg_attempts++;
		if (rc == 0)
			bg_succeeded(st);
		st->bg_busy = false;
		pthread_cond_broadcast(&st->bg_cv);
	}
	/* Fail a manual compaction still waiting. */
	if (st->manual) {
		st->manual->status = -ECANCELED;
		st->manual->done = true;
		st->manual = NULL;
	}
	pthread_cond_broadcast(&st->bg_cv);
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

int store_wait_compactions(struct store *st)
{
	pthread_mutex_lock(&st->mu);
	/* A soft error (a full disk) ends the wait too: the caller gets it
	 * rather than waiting for space. */
	while (st->bg_started && !st->shutting_down && !st->bg_error &&
	       !st->bg_soft_error && (st->bg_busy || has_work(st)))
		pthread_cond_wait(&st->bg_cv, &st->mu);
	int rc = st->bg_error        ? st->bg_error
		 : st->bg_soft_error ? st->bg_soft_error
		 : st->shutting_down ? -ECANCELED
				     : 0;
	pthread_mutex_unlock(&st->mu);
	return rc;
}

int store_compact_range(struct store *st, const void *begin, size_t blen,
			const void *end, size_t elen)
{
	int rc = store_flush(st);
	if (rc)
		return rc;
	pthread_mutex_lock(&st->mu);
	/* Compact each level that has files in the range, top down, to the
	 * deepest level that has files (at least level 1). */
	int max_level = 1;
	for (int level = 0; level < max_level && rc == 0; level++) {
		struct version *v = version_set_current(st->vs);
		for (int l = level + 1; l < NUM_LEVELS; l++)
			if (v->nfiles[l] && l > max_level)
				max_level = l;
		struct manual_compaction m = {
			.level = level, .begin = begin, .blen = blen,
			.end = end, .elen = elen,
		};
		while (st->manual && !st->shutting_down)
			pthread_cond_wait(&st->bg_cv, &st->mu);
		if (st->shutting_down || st->bg_error) {
			rc = st->bg_error ? st->bg_error : -ECANCELED;
			break;
		}
		st->manual = &m;
		pthread_cond_broadcast(&st->work_cv);
		uint64_t attempts = st->bg_attempts;
		/* A soft error met after we queued (a flush ahead of us that
		 * the full disk refuses) ends the wait too: the caller gets it
		 * rather than waiting for space. */
		while (!m.done && !st->bg_error &&
		       !(st->bg_soft_error && st->bg_attempts != attempts))
			pthread_cond_wait(&st->bg_cv, &st->mu);
		if (!m.done) {
			/* bg error: wait until the background thread is out of
			 * its work (it may be using m), then unhook m. */
			while (st->bg_busy)
				pthread_cond_wait(&st->bg_cv, &st->mu);
			if (st->manual == &m)
				st->manual = NULL;
			if (m.done)
				rc = m.status;
			else
				rc = st->bg_error ? st->bg_error : st->bg_soft_error;
			if (!rc && !m.done)
				rc = -EAGAIN; /* the soft error passed meanwhile */
		} else {
			rc = m.status;
		}
	}
	pthread_mutex_unlock(&st->mu);
	return rc;
}
