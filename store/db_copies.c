/*
 * db_copies: a store kept whole in several directories (FORMAT.md
 * "Copies"): at open, before recovery reads anything, the copies are
 * brought to one state; after the MANIFEST is read, every live table is
 * checked in every copy.  The mirror env (env_mirror.c) keeps them equal
 * from then on.
 *
 * Which version of a file is right.  Every copy is written with the same
 * bytes in the same order and synced before anything is acknowledged, so
 * copies differ only by (a) what a crash left unsynced, (b) damage, (c)
 * files an interrupted open or delete left in one copy, or (d) everything
 * after a copy was dropped (a stale copy, which the caller names in
 * options.copies_stale: such a copy is only ever written to, never read).
 * So, among the copies that are not stale:
 *   - CURRENT: the one naming the highest MANIFEST (a new MANIFEST is
 *     synced in every copy before any CURRENT names it);
 *   - the MANIFEST it names and every commit log: the version read whole
 *     (no mid-file damage), then with the most records, then the longest
 *     good prefix;
 *   - each live table: a copy whose file has the size the MANIFEST gives.
 * A copy whose version differs is rewritten from the chosen one (reported)
 * when the store opens read-write; read-only, the chosen copy is only read
 * first (env_mirror_prefer).  Leftover *.heal files go.
 *
 * Runs single-threaded at open; mu is not needed (the store is not
 * shared yet).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"

struct scan {
	bool present;
	int end;          /* 0 clean, 1 torn tail, 2 damage, 3 read error */
	uint64_t records;
	uint64_t good;    /* end of the last whole record */
	uint64_t size;
};

static void scan_log(struct store_env *inner, const char *path, struct scan *s)
{
	memset(s, 0, sizeof(*s));
	if (inner->ops->file_size(inner, path, &s->size))
		return;
	struct wal_reader *r;
	if (wal_reader_open(inner, path, &r)) {
		s->end = 3;
		s->present = true;
		return;
	}
	s->present = true;
	for (;;) {
		const uint8_t *rec;
		size_t len;
		int n = wal_read_record(r, &rec, &len);
		if (n == 1) {
			s->records++;
			continue;
		}
		if (n == -EUCLEAN)
			s->end = wal_reader_error(r)->tail ? 1 : 2;
		else if (n < 0)
			s->end = 3;
		break;
	}
	s->good = wal_reader_good_offset(r);
	wal_reader_close(r);
}

/* Is a better than b? */
static bool scan_better(const struct scan *a, const struct scan *b)
{
	if (a->present != b->present)
		return a->present;
	bool aw = a->end <= 1, bw = b->end <= 1;
	if (aw != bw)
		return aw;
	if (a->records != b->records)
		return a->records > b->records;
	return a->good > b->good;
}

static bool scan_same(const struct scan *a, const struct scan *b)
{
	return a->present == b->present && a->end == b->end && a->records == b->records &&
	       a->good == b->good && a->size == b->size;
}

/* Copies that may be read from: live and not stale. */
static bool source(struct store *st, size_t i)
{
	return env_mirror_live(st->env, i) && !(st->opt.copies_stale & (1u << i));
}

/* Make name in every live copy the same as in copy `best`. */
static int align(struct store *st, const char *name, size_t best, const bool *differs,
		 const char *why)
{
	size_t n = env_mirror_count(st->env);
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", st->dir, name);
	if (st->opt.read_only)
		return env_mirror_prefer(st->env, path, best);
	for (size_t i = 0; i < n; i++) {
		if (i == best || !differs[i] || !env_mirror_live(st->env, i))
			continue;
		int rc = env_mirror_heal(st->env, best, i, path);
		if (rc) {
			char what[600];
			snprintf(what, sizeof(what), "%s: rewriting it from %s failed", name,
				 env_mirror_dir(st->env, best));
			rc = env_mirror_drop(st->env, i, rc, what);
			if (rc)
				return rc;
			continue;
		}
		if (!(st->opt.copies_stale & (1u << i)))
			db_report(st, "%s/%s: %s; rewritten from %s", env_mirror_dir(st->env, i), name,
				  why, env_mirror_dir(st->env, best));
	}
	return 0;
}

static int parse_current(const uint8_t *d, size_t len, uint64_t *number)
{
	if (len < 11 || len > 40 || memcmp(d, "MANIFEST-", 9) || d[len - 1] != '\n')
		return -EUCLEAN;
	uint64_t v = 0;
	for (size_t i = 9; i < len - 1; i++) {
		if (d[i] < '0' || d[i] > '9')
			return -EUCLEAN;
		v = v * 10 + (uint64_t)(d[i] - '0');
	}
	*number = v;
	return 0;
}

static int align_current(struct store *st, uint64_t *manifest)
{
	struct store_env *inner = env_mirror_inner(st->env);
	size_t n = env_mirror_count(st->env), best = SIZE_MAX;
	uint64_t num[STORE_MAX_COPIES] = { 0 };
	bool ok[STORE_MAX_COPIES] = { false }, differs[STORE_MAX_COPIES] = { false };
	char path[4096];
	snprintf(path, sizeof(path), "%s/CURRENT", st->dir);
	for (size_t i = 0; i < n; i++) {
		if (!env_mirror_live(st->env, i))
			continue;
		char *p = env_mirror_path(st->env, i, path);
		uint8_t *d = NULL;
		size_t len = 0;
		ok[i] = p && env_read_file(inner, p, &d, &len) == 0 &&
			parse_current(d, len, &num[i]) == 0;
		free(d);
		free(p);
		if (ok[i] && source(st, i) && (best == SIZE_MAX || num[i] > num[best]))
			best = i;
	}
	*manifest = 0;
	if (best == SIZE_MAX)
		return 0; /* no copy has one: a new store (or none: recovery says) */
	*manifest = num[best];
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		differs[i] = env_mirror_live(st->env, i) && (!ok[i] || num[i] != num[best]);
		any |= differs[i];
	}
	if (!any)
		return 0;
	char why[128];
	snprintf(why, sizeof(why), "does not name MANIFEST-%06" PRIu64, num[best]);
	return align(st, "CURRENT", best, differs, why);
}

/* Choose and align one commit log or MANIFEST. */
static int align_log(struct store *st, const char *name)
{
	struct store_env *inner = env_mirror_inner(st->env);
	size_t n = env_mirror_count(st->env), best = SIZE_MAX;
	struct scan sc[STORE_MAX_COPIES];
	bool differs[STORE_MAX_COPIES] = { false };
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", st->dir, name);
	for (size_t i = 0; i < n; i++) {
		memset(&sc[i], 0, sizeof(sc[i]));
		if (!env_mirror_live(st->env, i))
			continue;
		char *p = env_mirror_path(st->env, i, path);
		if (!p)
			return -ENOMEM;
		scan_log(inner, p, &sc[i]);
		free(p);
		if (source(st, i) && sc[i].present && (best == SIZE_MAX || scan_better(&sc[i], &sc[best])))
			best = i;
	}
	if (best == SIZE_MAX)
		return 0; /* only in stale copies: a leftover, for the obsolete-file sweep */
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		differs[i] = env_mirror_live(st->env, i) && !scan_same(&sc[i], &sc[best]);
		any |= differs[i];
	}
	if (!any)
		return 0;
	static const char *const ends[] = { "ends cleanly", "ends in a torn tail",
					    "is damaged", "cannot be read" };
	char why[200] = "";
	/* Say what the first copy that differs held. */
	for (size_t i = 0; i < n; i++) {
		if (!differs[i])
			continue;
		if (!sc[i].present)
			snprintf(why, sizeof(why), "missing");
		else
			snprintf(why, sizeof(why), "%" PRIu64 " whole records, then it %s (%" PRIu64
				 " in the copy kept)", sc[i].records, ends[sc[i].end], sc[best].records);
		break;
	}
	return align(st, name, best, differs, why);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_name(char **names, size_t count, const char *name)
{
	return count && bsearch(&name, names, count, sizeof(*names), cmp_name);
}

int db_copies_reconcile(struct store *st)
{
	size_t n = env_mirror_count(st->env);
	struct store_env *inner = env_mirror_inner(st->env);
	char **names[STORE_MAX_COPIES] = { NULL };
	size_t count[STORE_MAX_COPIES] = { 0 };
	int rc = 0;
	unsigned stale = 0;
	bool any_source = false;
	for (size_t i = 0; i < n; i++) {
		any_source |= source(st, i);
		if (st->opt.copies_stale & (1u << i))
			stale |= 1u << i;
	}
	if (!any_source) {
		db_report(st, "%s: no copy of the store that is up to date is present", st->dir);
		return -ESTALE;
	}
	/* A stale copy is never read from; it is brought up to date below
	 * and, after the tables, in db_copies_check_tables. */
	env_mirror_set_noread(st->env, stale);
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!env_mirror_live(st->env, i))
			continue;
		int r = inner->ops->list_dir(inner, env_mirror_dir(st->env, i), &names[i], &count[i]);
		if (r) {
			names[i] = NULL;
			count[i] = 0;
			rc = r == -ENOMEM ? r : env_mirror_drop(st->env, i, r, "cannot list the directory");
			continue;
		}
		if (count[i])
			qsort(names[i], count[i], sizeof(char *), cmp_name);
	}
	uint64_t manifest = 0;
	if (rc == 0)
		rc = align_current(st, &manifest);
	for (size_t i = 0; i < n && rc == 0; i++) {
		for (size_t k = 0; k < count[i] && rc == 0; k++) {
			const char *name = names[i][k];
			bool seen = false, in_source = false;
			for (size_t j = 0; j < n; j++) {
				if (!has_name(names[j], count[j], name))
					continue;
				seen |= j < i;
				in_source |= source(st, j);
			}
			if (seen)
				continue; /* done for an earlier copy */
			size_t l = strlen(name);
			uint64_t number;
			enum file_kind kind = db_parse_file_name(name, &number);
			bool heal_left = l > 5 && strcmp(name + l - 5, ".heal") == 0;
			if (!st->opt.read_only &&
			    (heal_left || (!in_source && kind != FK_OTHER && kind != FK_SST))) {
				/* A heal cut short, or a log or MANIFEST only
				 * stale copies hold: never to be read (a table
				 * stays: immutable, and maybe the last whole
				 * one, db_copies_check_tables). */
				char p[4096];
				snprintf(p, sizeof(p), "%s/%s", st->dir, name);
				(void)st->env->ops->unlink(st->env, p); /* retried next open */
				continue;
			}
			if (kind == FK_LOG || (kind == FK_MANIFEST && number == manifest))
				rc = align_log(st, name);
		}
	}
	for (size_t i = 0; i < n; i++)
		env_free_names(names[i], count[i]);
	return rc;
}

int db_copies_check_tables(struct store *st)
{
	size_t n = env_mirror_count(st->env);
	struct store_env *inner = env_mirror_inner(st->env);
	struct version *v = version_set_current(st->vs);
	for (int l = 0; l < STORE_MAX_LEVELS; l++) {
		for (size_t f = 0; f < v->nfiles[l]; f++) {
			const struct file_meta *fm = v->files[l][f];
			char name[64], path[4096];
			snprintf(name, sizeof(name), "%06" PRIu64 ".sst", fm->number);
			snprintf(path, sizeof(path), "%s/%s", st->dir, name);
			bool differs[STORE_MAX_COPIES] = { false }, any = false;
			size_t good = SIZE_MAX;
			uint64_t size[STORE_MAX_COPIES] = { 0 };
			for (size_t i = 0; i < n; i++) {
				if (!env_mirror_live(st->env, i))
					continue;
				char *p = env_mirror_path(st->env, i, path);
				if (!p)
					return -ENOMEM;
				bool right = inner->ops->file_size(inner, p, &size[i]) == 0 &&
					     size[i] == fm->size;
				free(p);
				differs[i] = !right;
				any |= !right;
				if (right && good == SIZE_MAX && source(st, i))
					good = i;
			}
			/* None current has it right: a stale copy's table of
			 * that number and size is the same table (numbers are
			 * never reused; its blocks' checksums judge it). */
			for (size_t i = 0; i < n && good == SIZE_MAX && any; i++)
				if (env_mirror_live(st->env, i) && !differs[i])
					good = i;
			if (!any || good == SIZE_MAX)
				continue; /* all agree, or none is right: the table's open says */
			int rc = align(st, name, good, differs, "missing, or not the size the MANIFEST gives");
			if (rc)
				return rc;
		}
	}
	return 0;
}

void db_copies_opened(struct store *st)
{
	/* Every stale copy now has what the others have: it may be read. */
	if (!st->opt.read_only)
		env_mirror_set_noread(st->env, 0);
}

void db_copies_roll_manifest(struct store *st)
{
	int rc = version_set_new_manifest(st->vs, &st->mu);
	if (rc)
		db_report(st, "%s: starting a new MANIFEST for a joining copy: %s", st->dir,
			  strerror(-rc));
	st->manifest_roll_status = rc;
	st->manifest_roll = 2;
	db_delete_obsolete_files(st);
}

/* Copy every live table copy k lacks (or has at another size) into it,
 * from a copy that may be read.  The version is pinned: none of its
 * tables is deleted meanwhile. */
static int fill_tables(struct store *st, size_t k)
{
	struct store_env *inner = env_mirror_inner(st->env);
	pthread_mutex_lock(&st->mu);
	struct version *v = version_set_current(st->vs);
	version_ref(v);
	pthread_mutex_unlock(&st->mu);
	int rc = 0;
	for (int l = 0; l < STORE_MAX_LEVELS && rc == 0; l++) {
		for (size_t f = 0; f < v->nfiles[l] && rc == 0; f++) {
			const struct file_meta *fm = v->files[l][f];
			char path[4096];
			snprintf(path, sizeof(path), "%s/%06" PRIu64 ".sst", st->dir, fm->number);
			char *to = env_mirror_path(st->env, k, path);
			uint64_t have = 0;
			if (!to) {
				rc = -ENOMEM;
				break;
			}
			if (inner->ops->file_size(inner, to, &have) == 0 && have == fm->size) {
				free(to);
				continue; /* written after it joined */
			}
			rc = -EIO;
			for (size_t i = 0; i < env_mirror_count(st->env) && rc; i++) {
				if (i == k || !env_mirror_live(st->env, i) ||
				    (st->opt.copies_stale & (1u << i)))
					continue;
				char *from = env_mirror_path(st->env, i, path);
				rc = from ? env_copy_file(inner, from, to) : -ENOMEM;
				free(from);
			}
			if (rc)
				db_report(st, "%s: copying into the new copy: %s", to, strerror(-rc));
			free(to);
		}
	}
	pthread_mutex_lock(&st->mu);
	version_unref(v);
	pthread_mutex_unlock(&st->mu);
	return rc;
}

int store_copy_add(struct store *st, const char *dir, size_t *copy)
{
	if (st->opt.read_only)
		return -EROFS;
	size_t k;
	int rc = env_mirror_join(st->env, dir, &k);
	if (rc) {
		db_report(st, "%s: cannot start a copy of the store there: %s", dir, strerror(-rc));
		return rc;
	}
	/* 1. A commit log started after it joined: every write from now on
	 *    is in it (with the memtable's older writes flushed to a table,
	 *    written after it joined too). */
	pthread_mutex_lock(&st->mu);
	st->roll_log = true;
	pthread_mutex_unlock(&st->mu);
	rc = store_flush(st);
	pthread_mutex_lock(&st->mu);
	st->roll_log = false;
	/* 2. A MANIFEST started after it joined, and CURRENT naming it. */
	if (rc == 0) {
		while (st->manifest_roll == 1 && !st->bg_error && !st->shutting_down)
			pthread_cond_wait(&st->bg_cv, &st->mu);
		st->manifest_roll = 1;
		pthread_cond_broadcast(&st->work_cv);
		while (st->manifest_roll == 1 && !st->bg_error && !st->shutting_down)
			pthread_cond_wait(&st->bg_cv, &st->mu);
		rc = st->manifest_roll == 2 ? st->manifest_roll_status
					    : st->bg_error ? st->bg_error : -ECANCELED;
		st->manifest_roll = 0;
	}
	pthread_mutex_unlock(&st->mu);
	/* 3. Every table of the current version, whole. */
	if (rc == 0)
		rc = fill_tables(st, k);
	if (rc == 0) {
		char *p = env_mirror_path(st->env, k, st->dir);
		struct store_env *inner = env_mirror_inner(st->env);
		rc = p ? inner->ops->sync_dir(inner, p) : -ENOMEM;
		free(p);
	}
	if (rc) {
		env_mirror_retire(st->env, k);
		db_report(st, "%s: the new copy of the store is given up: %s", dir, strerror(-rc));
		return rc;
	}
	if (!env_mirror_live(st->env, k)) {
		db_report(st, "%s: the new copy of the store failed while it was filled", dir);
		return -EIO;
	}
	env_mirror_joined(st->env, k);
	db_report(st, "%s: a new copy of the store, up to date", dir);
	*copy = k;
	return 0;
}

int store_copy_remove(struct store *st, size_t copy)
{
	if (copy >= env_mirror_count(st->env))
		return -EINVAL;
	return env_mirror_retire_unless_last(st->env, copy);
}
