/*
 * db_salvage: rebuild damaged tables from what still reads (fsck -y).
 * FORMAT.md "Salvage".
 *
 * A table whose blocks fail their checks is rewritten under a new number
 * from every entry that reads whole; each block (or rest of a block) that
 * does not is reported with the key range it covered.  A table that does
 * not open at all (footer or index damaged, or missing) is dropped whole
 * and reported with the range the MANIFEST gives it.  One MANIFEST edit
 * swaps the old tables for the new ones; until that edit is durable the
 * store is exactly as it was (the new files are unreferenced garbage that
 * the next open deletes), and the old files go only after it.
 *
 * Level 0 is ordered by file number, newest first, and a newer table must
 * win over an older one.  A salvaged L0 table gets a new, higher number,
 * so every L0 table newer than it is copied to a still higher number in
 * the same order: the relative order of level 0 is kept.
 *
 * A commit log with damage other than a torn tail is rewritten from its whole records, each damaged span skipped to the next
 * 32 KiB block (where a fragment header must start), and renamed over the
 * old one.  The caller holds the store's directory to itself; this takes
 * the store's LOCK as store_open does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "batch.h"
#include "dbformat.h"
#include "wal.h"

struct salv {
	struct db_offline off; /* first: its report ctx is the salv */
	const char *dir;
	struct store_env *env;
	store_loss_fn lost;
	store_report_fn report;
	void *ctx;
	/* the table being salvaged */
	int level;
	uint64_t number;
	struct sst_builder *builder;
	struct buf smallest, largest;
	uint64_t lost_ranges;
};

static void salv_log(void *ctx, const char *msg)
{
	struct salv *s = ctx;
	s->report(s->ctx, msg);
}

__attribute__((format(printf, 2, 3)))
static void reportf(struct salv *s, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->report(s->ctx, line);
}

static void tell_loss(struct salv *s, uint64_t table, int level, uint64_t offset,
		      const uint8_t *from, size_t flen, const uint8_t *to, size_t tlen,
		      const char *why)
{
	struct store_salvage_loss l = {
		.table = table, .level = level, .offset = offset, .why = why,
	};
	/* Internal keys to user keys: the tag is no use to the caller. */
	if (from && flen >= IKEY_TAG_LEN) {
		l.from = from;
		l.from_len = flen - IKEY_TAG_LEN;
	}
	if (to && tlen >= IKEY_TAG_LEN) {
		l.to = to;
		l.to_len = tlen - IKEY_TAG_LEN;
	}
	s->lost_ranges++;
	s->lost(s->ctx, &l);
}

static int keep(void *ctx, const uint8_t *ikey, size_t klen, const uint8_t *val,
		size_t vlen)
{
	struct salv *s = ctx;
	if (!s->smallest.len)
		buf_append(&s->smallest, ikey, klen);
	buf_clear(&s->largest);
	buf_append(&s->largest, ikey, klen);
	int rc = buf_ok(&s->smallest) ? buf_ok(&s->smallest) : buf_ok(&s->largest);
	return rc ? rc : sst_builder_add(s->builder, ikey, klen, val, vlen);
}

static void lost(void *ctx, uint64_t offset, const uint8_t *from, size_t flen,
		 const uint8_t *to, size_t tlen, const char *why)
{
	struct salv *s = ctx;
	tell_loss(s, s->number, s->level, offset, from, flen, to, tlen, why);
}

static const struct sst_salvage_ops salvage_ops = { .keep = keep, .lost = lost };

static void salv_close(struct salv *s)
{
	buf_free(&s->smallest);
	buf_free(&s->largest);
}

/* sst_verify's findings: the caller has seen them (store_verify), and
 * each loss is told through lost() with its range. */
static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

/* Does table f check whole?  0 yes, -EUCLEAN no (r stays open for the
 * salvage, NULL when it does not even open), other errors as they come. */

static int open_table(struct salv *s, struct file_meta *f, struct sst_reader **r)
{
	char path[4096];
	sst_file_name(path, sizeof(path), s->dir, f->number);
	char *msg = NULL;
	*r = NULL;
	int rc = sst_open(s->env, path, f->number, f->size, NULL, &s->off.counters, r, &msg);
	if (rc == -ENOMEM) {
		free(msg);
		return rc;
	}
	if (rc) {
		char why[1200];
		snprintf(why, sizeof(why), "%s; the whole table is lost",
			 msg ? msg : strerror(-rc));
		free(msg);
		tell_loss(s, f->number, s->level, 0, f->smallest.data, f->smallest.len,
			  f->largest.data, f->largest.len, why);
		reportf(s, "%s/%06" PRIu64 ".sst (level %d): does not open; dropped", s->dir,
			f->number, s->level);
		return -EUCLEAN;
	}
	rc = sst_verify(*r, quiet, NULL);
	return rc;
}

/* Rewrite what reads of table f (open as r) into a new table; add it to
 * the edit unless nothing was kept. */
static int rebuild_table(struct salv *s, struct file_meta *f, struct sst_reader *r,
			 struct version_edit *e)
{
	char path[4096];
	uint64_t number = version_set_new_file_number(s->off.vs);
	sst_file_name(path, sizeof(path), s->dir, number);
	struct sst_builder_options bo = {
		.block_size = s->off.opt.block_size,
		.restart_interval = s->off.opt.block_restart_interval,
		.filter = s->off.opt.filter,
		.compression = s->off.opt.compression,
	};
	buf_clear(&s->smallest);
	buf_clear(&s->largest);
	int rc = sst_builder_new(s->env, path, &bo, &s->builder);
	if (rc)
		return rc;
	uint64_t kept = 0, lost_blocks = 0, size = 0;
	rc = sst_salvage(r, &salvage_ops, s, &kept, &lost_blocks);
	if (rc || kept == 0) {
		sst_builder_abandon(s->builder);
		s->builder = NULL;
		(void)s->env->ops->unlink(s->env, path); /* empty or failed: garbage */
		if (rc)
			return rc;
		reportf(s, "%s/%06" PRIu64 ".sst (level %d): nothing readable; dropped",
			s->dir, f->number, s->level);
		return 0;
	}
	rc = sst_builder_finish(s->builder, &size);
	s->builder = NULL;
	if (rc) {
		(void)s->env->ops->unlink(s->env, path);
		return rc;
	}
	reportf(s, "%s/%06" PRIu64 ".sst (level %d): %" PRIu64 " entries kept in %06"
		PRIu64 ".sst, %" PRIu64 " damaged block%s lost", s->dir, f->number, s->level,
		kept, number, lost_blocks, lost_blocks == 1 ? "" : "s");
	return version_edit_add_file(e, s->level, number, size, s->smallest.data,
				     s->smallest.len, s->largest.data, s->largest.len);
}

/* Copy a whole table to a new number (level 0 order, see the top). */
static int copy_table(struct salv *s, struct file_meta *f, struct version_edit *e)
{
	char from[4096], to[4096];
	uint64_t number = version_set_new_file_number(s->off.vs);
	sst_file_name(from, sizeof(from), s->dir, f->number);
	sst_file_name(to, sizeof(to), s->dir, number);
	struct env_rfile *in = NULL;
	struct env_wfile *out = NULL;
	uint8_t *buf = malloc(1u << 20);
	int rc = buf ? s->env->ops->open_readable(s->env, from, &in) : -ENOMEM;
	if (rc == 0)
		rc = s->env->ops->open_writable(s->env, to, &out);
	for (uint64_t off = 0; rc == 0 && off < f->size;) {
		size_t got;
		size_t want = f->size - off < (1u << 20) ? (size_t)(f->size - off) : 1u << 20;
		rc = s->env->ops->pread(in, buf, want, off, &got);
		if (rc == 0 && got != want)
			rc = -EIO; /* shorter than the MANIFEST says: it checked whole */
		if (rc == 0)
			rc = s->env->ops->append(out, buf, got);
		off += got;
	}
	if (rc == 0)
		rc = s->env->ops->sync(out);
	if (out) {
		int c = s->env->ops->close_writable(out);
		rc = rc ? rc : c;
	}
	if (in)
		s->env->ops->close_readable(in);
	free(buf);
	if (rc) {
		(void)s->env->ops->unlink(s->env, to);
		return rc;
	}
	reportf(s, "%s/%06" PRIu64 ".sst (level 0): whole; copied to %06" PRIu64
		".sst to stay newer than the salvaged table", s->dir, f->number, number);
	return version_edit_add_file(e, 0, number, f->size, f->smallest.data, f->smallest.len,
				     f->largest.data, f->largest.len);
}

static int cmp_oldest_first(const void *pa, const void *pb)
{
	const struct file_meta *a = *(struct file_meta *const *)pa;
	const struct file_meta *b = *(struct file_meta *const *)pb;
	return a->number < b->number ? -1 : a->number > b->number;
}

/* One level: salvage its damaged tables into e; *changed counts them. */
static int salvage_level(struct salv *s, struct version *v, int level,
			 struct version_edit *e, int *changed)
{
	size_t n = v->nfiles[level];
	struct file_meta **files = malloc((n ? n : 1) * sizeof(*files));
	if (!files)
		return -ENOMEM;
	if (n)
		memcpy(files, v->files[level], n * sizeof(*files));
	if (level == 0)
		qsort(files, n, sizeof(*files), cmp_oldest_first);
	s->level = level;
	bool renumber = false; /* level 0: a newer table was salvaged */
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct file_meta *f = files[i];
		struct sst_reader *r = NULL;
		s->number = f->number;
		rc = open_table(s, f, &r);
		if (rc == 0 && !renumber) {
			sst_close(r);
			continue;
		}
		if (rc == 0) {
			/* Whole, but newer than a salvaged L0 table. */
			sst_close(r);
			rc = copy_table(s, f, e);
		} else if (rc == -EUCLEAN) {
			rc = r ? rebuild_table(s, f, r, e) : 0;
			if (r)
				sst_close(r);
			(*changed)++;
			renumber = level == 0;
		}
		if (rc == 0)
			version_edit_delete_file(e, level, f->number);
	}
	free(files);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int no_op(void *ctx, uint64_t seq, int type, const uint8_t *key, size_t klen,
		 const uint8_t *val, size_t vlen)
{
	(void)ctx, (void)seq, (void)type, (void)key, (void)klen, (void)val, (void)vlen;
	return 0;
}

/* Copy every whole record of log `number` to a new log, skipping each
 * damaged span (to the next block: wal_reader_resync) and each record that
 * is not a valid batch; then replace the log with the copy (rename:
 * atomic).  A torn tail is left to store_open, which cuts it and drops
 * the later logs (db.c recover()); *torn says the logs after this one are
 * not looked at.  *mended is set when the log was replaced. */
static int salvage_log(struct salv *s, uint64_t number, bool *torn, bool *mended,
		       const uint64_t *logs, uint64_t *shrink, size_t i)
{
	char path[4096], tmp[4200];
	db_log_file_name(path, sizeof(path), s->dir, number);
	snprintf(tmp, sizeof(tmp), "%s.salvage.tmp", path);
	*mended = false;
	struct wal_reader *r;
	int rc = wal_reader_open(s->env, path, &r);
	if (rc)
		return rc;
	struct wal_writer *w = NULL;
	rc = wal_writer_open(s->env, tmp, &w);
	uint64_t kept = 0, lost = 0;
	bool damaged = false, relinked = false;
	while (rc == 0) {
		const uint8_t *rec;
		size_t len;
		uint64_t from = wal_reader_good_offset(r);
		int k = wal_read_record(r, &rec, &len);
		if (k == 0)
			break;
		uint64_t prev, size;
		if (k == 1 && batch_link_decode(rec, len, &prev, &size)) {
			/* A log rewritten above is shorter by what it dropped:
			 * the link keeps saying whether the crash cut it. */
			uint8_t link[BATCH_LINK_SIZE];
			for (size_t j = 0; j < i; j++)
				if (logs[j] == prev && shrink[j] && size >= shrink[j]) {
					batch_link_encode(link, prev, size - shrink[j]);
					rec = link;
					relinked = true;
				}
			rc = wal_add_record(w, rec, len);
			kept++;
			continue;
		}
		if (k == 1 && batch_iterate(rec, len, no_op, NULL) == 0) {
			rc = wal_add_record(w, rec, len);
			kept++;
			continue;
		}
		if (k < 0 && k != -EUCLEAN) {
			rc = k;
			break;
		}
		char why[4600];
		uint64_t off = from;
		if (k == 1) {
			snprintf(why, sizeof(why), "%s: record ending at offset %" PRIu64
				 " is not a valid write batch; dropped", path,
				 wal_reader_good_offset(r));
		} else {
			const struct wal_error *e = wal_reader_error(r);
			if (e->tail) {
				*torn = true;
				break; /* store_open cuts it */
			}
			off = e->offset;
			snprintf(why, sizeof(why), "%s: offset %" PRIu64 ": %s; the writes logged "
				 "from there to the next whole record are lost", path, e->offset, e->msg);
			rc = wal_reader_resync(r);
		}
		damaged = true;
		lost++;
		tell_loss(s, number, -1, off, NULL, 0, NULL, 0, why);
	}
	/* Where reading the old log ended (its last whole record; a zero
	 * tail a crash left is not counted), against the copy's end. */
	uint64_t before = wal_reader_good_offset(r);
	wal_reader_close(r);
	shrink[i] = 0;
	if (damaged && w && before > wal_writer_size(w))
		shrink[i] = before - wal_writer_size(w);
	damaged = damaged || relinked;
	if (rc == 0 && damaged)
		rc = wal_sync(w);
	int c = w ? wal_writer_close(w) : 0;
	rc = rc ? rc : c;
	if (rc == 0 && damaged) {
		rc = s->env->ops->rename(s->env, tmp, path);
		if (rc == 0)
			rc = s->env->ops->sync_dir(s->env, s->dir);
		if (rc == 0) {
			*mended = true;
			reportf(s, "%s: %" PRIu64 " records kept, %" PRIu64 " damaged span%s dropped",
				path, kept, lost, lost == 1 ? "" : "s");
			return 0;
		}
	}
	(void)s->env->ops->unlink(s->env, tmp); /* nothing to mend, or failed */
	return rc;
}

/* Every commit log from the MANIFEST's log number on. */
static int salvage_logs(struct salv *s, uint64_t *logs, size_t n, int *mended)
{
	qsort(logs, n, sizeof(*logs), cmp_u64);
	bool torn = false;
	uint64_t *shrink = calloc(n + 1, sizeof(*shrink));
	if (!shrink)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < n && !torn && rc == 0; i++) {
		bool m;
		rc = salvage_log(s, logs[i], &torn, &m, logs, shrink, i);
		*mended += m;
	}
	free(shrink);
	return rc;
}

int store_salvage(const char *dir, const struct store_options *opt,
		  store_loss_fn lost_fn, store_report_fn report, void *ctx)
{
	struct salv s = { .dir = dir, .lost = lost_fn, .report = report, .ctx = ctx };
	s.env = opt && opt->env ? opt->env : store_env_posix();
	buf_init(&s.smallest);
	buf_init(&s.largest);

	char lockpath[4096];
	struct env_lock *lock = NULL;
	snprintf(lockpath, sizeof(lockpath), "%s/LOCK", dir);
	int rc = s.env->ops->lock(s.env, lockpath, &lock);
	if (rc) {
		reportf(&s, "%s: cannot lock: %s", lockpath,
			rc == -EBUSY ? "store in use by another process" : strerror(-rc));
		return rc;
	}
	rc = db_offline_open(&s.off, dir, opt, true, salv_log, &s);
	if (rc) {
		salv_close(&s);
		s.env->ops->unlock(lock);
		return rc;
	}
	/* Commit logs made after the last edit hold numbers the MANIFEST has
	 * not counted yet: new tables must not take them. */
	char **names = NULL;
	size_t count = 0;
	if ((rc = s.env->ops->list_dir(s.env, dir, &names, &count)))
		goto out;
	uint64_t *logs = calloc(count + 1, sizeof(*logs));
	size_t nlogs = 0;
	for (size_t i = 0; i < count && logs; i++) {
		uint64_t number;
		enum file_kind k = db_parse_file_name(names[i], &number);
		if (k == FK_LOG || k == FK_SST || k == FK_MANIFEST)
			version_set_mark_file_number_used(s.off.vs, number);
		if (k == FK_LOG && number >= version_set_log_number(s.off.vs))
			logs[nlogs++] = number;
	}
	env_free_names(names, count);
	int logs_mended = 0;
	rc = logs ? salvage_logs(&s, logs, nlogs, &logs_mended) : -ENOMEM;
	free(logs);
	if (rc)
		goto out;

	struct version_edit e;
	version_edit_init(&e);
	struct version *v = version_set_current(s.off.vs);
	int changed = 0;
	for (int level = 0; level < NUM_LEVELS && rc == 0; level++)
		rc = salvage_level(&s, v, level, &e, &changed);
	if (rc == 0 && changed) {
		pthread_mutex_lock(&s.off.mu);
		rc = version_set_log_and_apply(s.off.vs, &e, &s.off.mu);
		pthread_mutex_unlock(&s.off.mu);
		/* The old tables are garbage now; the next open deletes them
		 * with every other file no version names. */
	}
	version_edit_free(&e);
	if (rc == 0)
		reportf(&s, "%s: %d damaged table%s salvaged, %d commit log%s mended, %" PRIu64
			" range%s lost", dir, changed, changed == 1 ? "" : "s", logs_mended,
			logs_mended == 1 ? "" : "s", s.lost_ranges, s.lost_ranges == 1 ? "" : "s");
out:
	salv_close(&s);
	db_offline_close(&s.off);
	s.env->ops->unlock(lock);
	return rc;
}
