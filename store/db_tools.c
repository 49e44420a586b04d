/*
 * db_tools: offline verification and dumping for store-tool and fsck.
 * Both read CURRENT, the MANIFEST, the tables and the commit logs through
 * the env, and never write a byte.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "dbformat.h"

static void tool_log(void *ctx, const char *msg)
{
	struct db_offline *t = ctx;
	t->report(t->ctx, msg);
}

static void reportf(struct db_offline *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void reportf(struct db_offline *t, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	t->report(t->ctx, line);
}

void db_offline_close(struct db_offline *t)
{
	if (t->vs)
		version_set_free(t->vs);
	if (t->tables)
		table_cache_free(t->tables);
	if (t->cache)
		block_cache_free(t->cache);
	pthread_mutex_destroy(&t->mu);
}

int db_offline_open(struct db_offline *t, const char *dir, const struct store_options *opt,
		    bool writable, store_report_fn report, void *ctx)
{
	memset(t, 0, sizeof(*t));
	if (opt)
		t->opt = *opt;
	else
		store_options_init(&t->opt);
	t->opt.read_only = !writable;
	t->opt.log = tool_log;
	t->opt.log_ctx = t;
	t->env = t->opt.env ? t->opt.env : store_env_posix();
	t->dir = dir;
	t->report = report;
	t->ctx = ctx;
	pthread_mutex_init(&t->mu, NULL);
	t->cache = block_cache_new(t->opt.block_cache_bytes);
	t->tables = t->cache ? table_cache_new(t->env, dir, 64, t->cache,
					       &t->counters)
			     : NULL;
	struct version_set_options vo = {
		.env = t->env, .dir = dir, .opt = &t->opt, .tables = t->tables,
		.manifest_bytes = &t->manifest_bytes, .log = tool_log,
		.log_ctx = t,
	};
	t->vs = t->tables ? version_set_new(&vo) : NULL;
	if (!t->vs) {
		db_offline_close(t);
		return -ENOMEM;
	}
	pthread_mutex_lock(&t->mu);
	int rc = version_set_recover(t->vs);
	pthread_mutex_unlock(&t->mu);
	if (rc == -ENOENT)
		reportf(t, "%s: no store here (no CURRENT)", dir);
	if (rc) {
		db_offline_close(t);
		return rc;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Commit logs at or after the MANIFEST's log number, ascending. */
static int live_logs(struct db_offline *t, uint64_t **out, size_t *n)
{
	char **names;
	size_t count;
	int rc = t->env->ops->list_dir(t->env, t->dir, &names, &count);
	if (rc)
		return rc;
	uint64_t *logs = calloc(count + 1, sizeof(*logs));
	size_t k = 0;
	uint64_t min = version_set_log_number(t->vs);
	for (size_t i = 0; logs && i < count; i++) {
		char *end;
		uint64_t num = strtoull(names[i], &end, 10);
		if (end != names[i] && strcmp(end, ".log") == 0 && num >= min)
			logs[k++] = num;
	}
	env_free_names(names, count);
	if (!logs)
		return -ENOMEM;
	qsort(logs, k, sizeof(*logs), cmp_u64);
	*out = logs;
	*n = k;
	return 0;
}

struct log_dump {
	struct db_offline *t;
	bool print;
};

static void escape(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			out[o++] = (char)p[i];
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", p[i]);
	}
	if (o + 5 >= cap && cap > 4)
		memcpy(out + cap - 4, "...", 4), o = cap - 1;
	out[o] = '\0';
}

static int log_op(void *ctx, uint64_t seq, int type, const uint8_t *key,
		  size_t klen, const uint8_t *val, size_t vlen)
{
	struct log_dump *d = ctx;
	(void)val;
	if (d->print) {
		char k[200];
		escape(k, sizeof(k), key, klen);
		reportf(d->t, "  seq %" PRIu64 " %s '%s'%s", seq,
			type == KTYPE_VALUE ? "put" : "del", k, "");
		if (type == KTYPE_VALUE)
			reportf(d->t, "    value %zu bytes", vlen);
	}
	return 0;
}

/* Read every record of every live log, up to the first torn tail (db.c
 * recover(): it is cut at open and the later logs dropped).  Returns
 * -EUCLEAN on damage other than a torn tail. */
static int check_logs(struct db_offline *t, bool print)
{
	uint64_t *logs;
	size_t n;
	int rc = live_logs(t, &logs, &n), ret = 0;
	if (rc)
		return rc;
	bool torn = false;
	uint64_t *ends = calloc(n + 1, sizeof(*ends));
	if (!ends) {
		free(logs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && !torn; i++) {
		char path[4096];
		db_log_file_name(path, sizeof(path), t->dir, logs[i]);
		struct wal_reader *r;
		rc = wal_reader_open(t->env, path, &r);
		if (rc) {
			reportf(t, "%s: cannot open: %s", path, strerror(-rc));
			ret = rc;
			continue;
		}
		uint64_t records = 0;
		const uint8_t *rec;
		size_t len;
		struct log_dump d = { .t = t, .print = print };
		for (;;) {
			uint64_t at = wal_reader_good_offset(r);
			int k = wal_read_record(r, &rec, &len);
			if (k == 0)
				break;
			if (k < 0) {
				const struct wal_error *e = wal_reader_error(r);
				if (k != -EUCLEAN) {
					reportf(t, "%s: read error: %s", path,
						strerror(-k));
					ret = k;
				} else if (e->tail) {
					reportf(t, "%s: torn tail at offset %" PRIu64
						" (%s): would be cut at open%s",
						path, e->offset, e->msg,
						i + 1 < n ? ", and the later logs "
						"dropped (never synced)" : "");
					torn = true;
				} else {
					reportf(t, "%s: offset %" PRIu64 ": %s", path,
						e->offset, e->msg);
					t->problems++;
					ret = -EUCLEAN;
				}
				break;
			}
			uint64_t prev, size;
			if (batch_link_decode(rec, len, &prev, &size)) {
				if (print)
					reportf(t, "%s: link to %06" PRIu64 ".log of %"
						PRIu64 " bytes", path, prev, size);
				if (db_log_link_whole(logs, ends, i,
						      version_set_log_number(t->vs),
						      prev, size))
					continue;
				reportf(t, "%s: offset %" PRIu64 ": links to %06" PRIu64
					".log of %" PRIu64 " bytes, which the crash cut "
					"short: would be cut here at open, and the later "
					"logs dropped (never synced)", path, at, prev, size);
				torn = true;
				break;
			}
			records++;
			if (print && len >= BATCH_HEADER_SIZE)
				reportf(t, "%s: record %" PRIu64 ": seq %" PRIu64
					" ops %u", path, records, get_le64(rec),
					get_le32(rec + 8));
			if (batch_iterate(rec, len, log_op, &d)) {
				reportf(t, "%s: record ending at offset %" PRIu64
					" is not a valid write batch", path,
					wal_reader_good_offset(r));
				t->problems++;
				ret = -EUCLEAN;
				break;
			}
		}
		if (!print)
			reportf(t, "%s: %" PRIu64 " records", path, records);
		ends[i] = wal_reader_good_offset(r);
		wal_reader_close(r);
	}
	free(ends);
	free(logs);
	return ret;
}

static void verify_line(void *ctx, const char *line)
{
	struct db_offline *t = ctx;
	t->problems++;
	t->report(t->ctx, line);
}

int store_verify(const char *dir, const struct store_options *opt,
		 store_report_fn report, void *ctx)
{
	struct db_offline t;
	int rc = db_offline_open(&t, dir, opt, false, report, ctx);
	if (rc)
		return rc == -ENOENT ? rc : rc;
	struct version *v = version_set_current(t.vs);
	int ret = 0;
	uint64_t tables = 0;
	for (int l = 0; l < NUM_LEVELS; l++) {
		for (size_t i = 0; i < v->nfiles[l]; i++) {
			struct file_meta *f = v->files[l][i];
			char path[4096];
			sst_file_name(path, sizeof(path), dir, f->number);
			struct sst_reader *r;
			char *msg = NULL;
			tables++;
			rc = sst_open(t.env, path, f->number, f->size, NULL,
				      &t.counters, &r, &msg);
			if (rc) {
				reportf(&t, "%s", msg ? msg : path);
				if (!msg)
					reportf(&t, "%s: cannot open: %s", path,
						strerror(-rc));
				free(msg);
				t.problems++;
				ret = -EUCLEAN;
				continue;
			}
			if (sst_verify(r, verify_line, &t))
				ret = -EUCLEAN;
			sst_close(r);
		}
	}
	rc = check_logs(&t, false);
	if (rc && !ret)
		ret = rc;
	reportf(&t, "%s: %" PRIu64 " tables checked, %d problems", dir, tables,
		t.problems);
	db_offline_close(&t);
	return ret;
}

static void dump_manifest(struct db_offline *t)
{
	struct version *v = version_set_current(t->vs);
	reportf(t, "manifest: MANIFEST-%06" PRIu64 " log_number %" PRIu64
		" last_sequence %" PRIu64,
		version_set_manifest_number(t->vs), version_set_log_number(t->vs),
		version_set_last_sequence(t->vs));
	for (int l = 0; l < NUM_LEVELS; l++) {
		if (!v->nfiles[l])
			continue;
		reportf(t, "level %d: %zu files, %" PRIu64 " bytes", l, v->nfiles[l],
			version_level_bytes(v, l));
		for (size_t i = 0; i < v->nfiles[l]; i++) {
			struct file_meta *f = v->files[l][i];
			char a[120], b[120];
			struct parsed_ikey ps = { 0 }, pl = { 0 };
			(void)ikey_parse(f->smallest.data, f->smallest.len, &ps);
			(void)ikey_parse(f->largest.data, f->largest.len, &pl);
			escape(a, sizeof(a), ps.ukey, ps.ulen);
			escape(b, sizeof(b), pl.ukey, pl.ulen);
			reportf(t, "  %06" PRIu64 ".sst %" PRIu64 " bytes ['%s' @%" PRIu64
				" .. '%s' @%" PRIu64 "]", f->number, f->size, a,
				ps.seq, b, pl.seq);
		}
	}
}

static void dump_tables(struct db_offline *t)
{
	struct version *v = version_set_current(t->vs);
	for (int l = 0; l < NUM_LEVELS; l++) {
		for (size_t i = 0; i < v->nfiles[l]; i++) {
			struct file_meta *f = v->files[l][i];
			char path[4096];
			sst_file_name(path, sizeof(path), t->dir, f->number);
			struct sst_reader *r;
			char *msg = NULL;
			int rc = sst_open(t->env, path, f->number, f->size, NULL,
					  &t->counters, &r, &msg);
			if (rc) {
				reportf(t, "%s: %s", path, msg ? msg : strerror(-rc));
				free(msg);
				continue;
			}
			uint64_t blocks, fbytes, ibytes, entries = 0;
			sst_describe(r, &blocks, &fbytes, &ibytes);
			struct iter *it = sst_iter_new(r, false);
			int st = -ENOMEM;
			if (it) {
				for (iter_seek_first(it); iter_valid(it); iter_next(it))
					entries++;
				st = iter_status(it);
				iter_destroy(it);
			}
			reportf(t, "%s: level %d, %" PRIu64 " bytes, %" PRIu64
				" entries, %" PRIu64 " data blocks, filter %" PRIu64
				" bytes, index %" PRIu64 " bytes%s",
				path, l, f->size, entries, blocks, fbytes, ibytes,
				st ? " (read error)" : "");
			sst_close(r);
		}
	}
}

static int dump_keys(const char *dir, const struct store_options *opt,
		     store_report_fn report, void *ctx)
{
	struct store_options o;
	if (opt)
		o = *opt;
	else
		store_options_init(&o);
	o.read_only = true;
	o.create_if_missing = false;
	struct store *st;
	int rc = store_open(dir, &o, &st);
	if (rc)
		return rc;
	struct store_iter *it;
	rc = store_iter_new(st, NULL, &it);
	if (rc == 0) {
		char line[1200], k[700], v[400];
		for (store_iter_seek_first(it); store_iter_valid(it);
		     store_iter_next(it)) {
			size_t kn, vn;
			const uint8_t *kp = store_iter_key(it, &kn);
			const uint8_t *vp = store_iter_value(it, &vn);
			escape(k, sizeof(k), kp, kn);
			escape(v, sizeof(v), vp, vn < 64 ? vn : 64);
			snprintf(line, sizeof(line), "'%s' => '%s'%s (%zu bytes)", k,
				 v, vn > 64 ? "..." : "", vn);
			report(ctx, line);
		}
		rc = store_iter_status(it);
		store_iter_free(it);
	}
	int c = store_close(st);
	return rc ? rc : c;
}

int store_dump(const char *dir, const struct store_options *opt,
	       const char *what, store_report_fn report, void *ctx)
{
	if (strcmp(what, "keys") == 0)
		return dump_keys(dir, opt, report, ctx);
	struct db_offline t;
	int rc = db_offline_open(&t, dir, opt, false, report, ctx);
	if (rc)
		return rc;
	if (strcmp(what, "manifest") == 0)
		dump_manifest(&t);
	else if (strcmp(what, "tables") == 0)
		dump_tables(&t);
	else if (strcmp(what, "logs") == 0)
		rc = check_logs(&t, true);
	else
		rc = -EINVAL;
	db_offline_close(&t);
	return rc;
}

/* Reports of a listing go to the caller's opt->log, if any. */
static void list_line(void *ctx, const char *line)
{
	const struct store_options *opt = ctx;
	if (opt && opt->log)
		opt->log(opt->log_ctx, line);
}

int store_list_tables(const char *dir, const struct store_options *opt,
		      struct store_table_info **tables, size_t *n,
		      struct store_totals *totals)
{
	*tables = NULL;
	*n = 0;
	struct db_offline t;
	int rc = db_offline_open(&t, dir, opt, false, list_line, (void *)opt);
	if (rc)
		return rc;
	struct version *v = version_set_current(t.vs);
	size_t count = 0;
	for (int l = 0; l < NUM_LEVELS; l++)
		count += v->nfiles[l];
	struct store_table_info *out = calloc(count ? count : 1, sizeof(*out));
	if (!out)
		rc = -ENOMEM;
	size_t k = 0;
	for (int l = 0; l < NUM_LEVELS && rc == 0; l++) {
		for (size_t i = 0; i < v->nfiles[l] && rc == 0; i++, k++) {
			const struct file_meta *f = v->files[l][i];
			struct store_table_info *ti = &out[k];
			ti->level = l;
			ti->number = f->number;
			ti->size = f->size;
			/* internal keys to user keys: the tag is no use here */
			ti->smallest_len = f->smallest.len - IKEY_TAG_LEN;
			ti->largest_len = f->largest.len - IKEY_TAG_LEN;
			ti->smallest = malloc(ti->smallest_len + 1);
			ti->largest = malloc(ti->largest_len + 1);
			if (!ti->smallest || !ti->largest) {
				rc = -ENOMEM;
				k++;
				break;
			}
			memcpy(ti->smallest, f->smallest.data, ti->smallest_len);
			memcpy(ti->largest, f->largest.data, ti->largest_len);
		}
	}
	if (rc == 0 && totals) {
		version_set_totals(t.vs, totals);
	}
	db_offline_close(&t);
	if (rc) {
		store_tables_free(out, out ? k : 0);
		return rc;
	}
	*tables = out;
	*n = count;
	return 0;
}

void store_tables_free(struct store_table_info *tables, size_t n)
{
	for (size_t i = 0; tables && i < n; i++) {
		free(tables[i].smallest);
		free(tables[i].largest);
	}
	free(tables);
}
