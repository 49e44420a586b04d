/*
 * version: versions (the live tables per level), the builder that applies
 * edits to a version, the MANIFEST that logs the edits, and the iterators
 * over a version's levels.  LevelDB's Version, VersionSet and
 * VersionSet::Builder.  FORMAT.md "MANIFEST".
 *
 * Invariants of a version: level 0 is ordered newest first (highest file
 * number first) and its files may overlap; every deeper level is ordered by
 * smallest key and its files do not overlap (each file's largest internal
 * key is below the next file's smallest).  A recovered MANIFEST that breaks
 * this is corruption; an edit that would break it is refused.
 *
 * Ownership: file_metas are shared by every version that lists them and
 * counted in file_meta.refs; a version is counted in version.refs, the set
 * holding one reference to the current version.  Both counts are changed
 * only under the store mutex.
 *
 * MANIFEST life cycle: recovery replays the MANIFEST named by CURRENT and
 * leaves it closed; the next log_and_apply starts a new MANIFEST (a snapshot
 * edit of the whole state, then the edit), syncs it and its directory,
 * and points CURRENT at it.  Later edits are appended to it and synced.  A write that fails makes
 * the MANIFEST unusable: the next edit starts another one, and until it has
 * the set is "in doubt" (the failed edit may have reached the disk).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbformat.h"
#include "version.h"
#include "version_int.h"
#include "wal.h"

#define PATH_LEN 4096

void version_set_logf(struct version_set *vs, const char *fmt, ...)
{
	if (!vs->log)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	vs->log(vs->log_ctx, line);
}

double version_max_bytes_for_level(const struct store_options *opt, int level)
{
	double r = (double)opt->level_base_bytes;
	for (int l = 1; l < level; l++)
		r *= opt->level_multiplier;
	return r;
}

/* ---- versions ---- */

static struct version *version_alloc(struct version_set *vs)
{
	struct version *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->vset = vs;
	v->compaction_level = -1;
	return v;
}

static void file_meta_unref(struct file_meta *f)
{
	if (--f->refs <= 0)
		file_meta_free(f);
}

static void version_destroy(struct version *v)
{
	if (v->prev) {
		v->prev->next = v->next;
		v->next->prev = v->prev;
	}
	for (int l = 0; l < NUM_LEVELS; l++) {
		for (size_t i = 0; i < v->nfiles[l]; i++)
			file_meta_unref(v->files[l][i]);
		free(v->files[l]);
	}
	free(v);
}

void version_ref(struct version *v)
{
	v->refs++;
}

void version_unref(struct version *v)
{
	if (--v->refs <= 0)
		version_destroy(v);
}

uint64_t version_level_bytes(struct version *v, int level)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < v->nfiles[level]; i++)
		sum += v->files[level][i]->size;
	return sum;
}

/* Compute the level most in need of compaction (LevelDB's Finalize). */
static void finalize(struct version_set *vs, struct version *v)
{
	double best = -1;
	int best_level = -1;
	if (!vs->opt) {
		v->compaction_score = 0;
		v->compaction_level = -1;
		return;
	}
	for (int level = 0; level < NUM_LEVELS - 1; level++) {
		double score;
		if (level == 0) {
			/* Count files, not bytes: every L0 file costs a read
			 * and small write buffers would otherwise trigger too
			 * many L0 compactions. */
			int trig = vs->opt->l0_compaction_trigger > 0
					   ? vs->opt->l0_compaction_trigger
					   : 1;
			score = (double)v->nfiles[0] / trig;
		} else {
			score = (double)version_level_bytes(v, level) /
				version_max_bytes_for_level(vs->opt, level);
		}
		if (score > best) {
			best = score;
			best_level = level;
		}
	}
	v->compaction_score = best;
	v->compaction_level = best_level;
}

/* Make v the current version; the set takes over the caller's reference. */
static void install(struct version_set *vs, struct version *v)
{
	finalize(vs, v);
	v->refs = 1;
	v->prev = vs->live.prev;
	v->next = &vs->live;
	vs->live.prev->next = v;
	vs->live.prev = v;
	struct version *old = vs->current;
	vs->current = v;
	if (old)
		version_unref(old);
}

/* ---- builder: a version plus edits (LevelDB's VersionSet::Builder) ---- */

/*
 * The files of the version being built, in a hash table keyed by file
 * number, so that replaying a long MANIFEST costs O(1) per added or deleted
 * file; sorting happens once, in builder_save().
 */
struct slot {
	uint64_t number;
	struct file_meta *meta;
	int level;
	uint8_t state; /* SLOT_EMPTY, SLOT_USED, SLOT_GONE */
	bool owned;    /* made by the builder, in no version yet */
};
enum { SLOT_EMPTY = 0, SLOT_USED, SLOT_GONE };

struct builder {
	struct slot *slots;
	size_t cap;  /* power of two */
	size_t used; /* USED + GONE */
	size_t live; /* USED */
};

static size_t slot_hash(uint64_t n, size_t cap)
{
	return (size_t)((n * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
}

static struct slot *builder_find(struct builder *b, uint64_t number)
{
	for (size_t i = slot_hash(number, b->cap);; i = (i + 1) & (b->cap - 1)) {
		struct slot *s = &b->slots[i];
		if (s->state == SLOT_EMPTY)
			return NULL;
		if (s->state == SLOT_USED && s->number == number)
			return s;
	}
}

static int builder_grow(struct builder *b)
{
	size_t cap = b->cap ? b->cap : 64;
	while (cap < 4 * (b->live + 1))
		cap *= 2;
	struct slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < b->cap; i++) {
		if (b->slots[i].state != SLOT_USED)
			continue;
		size_t j = slot_hash(b->slots[i].number, cap);
		while (slots[j].state != SLOT_EMPTY)
			j = (j + 1) & (cap - 1);
		slots[j] = b->slots[i];
	}
	free(b->slots);
	b->slots = slots;
	b->cap = cap;
	b->used = b->live;
	return 0;
}

static void slot_remove(struct builder *b, struct slot *s)
{
	if (s->owned)
		file_meta_free(s->meta);
	s->meta = NULL;
	s->state = SLOT_GONE;
	b->live--;
}

/* Insert (replacing any file of that number).  On failure an owned meta is
 * freed. */
static int builder_put(struct builder *b, int level, struct file_meta *f,
		       bool owned)
{
	struct slot *s = b->cap ? builder_find(b, f->number) : NULL;
	if (s)
		slot_remove(b, s);
	if (2 * (b->used + 1) > b->cap) {
		int rc = builder_grow(b);
		if (rc) {
			if (owned)
				file_meta_free(f);
			return rc;
		}
	}
	size_t i = slot_hash(f->number, b->cap);
	while (b->slots[i].state == SLOT_USED)
		i = (i + 1) & (b->cap - 1);
	if (b->slots[i].state == SLOT_EMPTY)
		b->used++;
	b->slots[i] = (struct slot){ .number = f->number, .meta = f,
				     .level = level, .state = SLOT_USED,
				     .owned = owned };
	b->live++;
	return 0;
}

static void builder_free(struct builder *b)
{
	for (size_t i = 0; i < b->cap; i++)
		if (b->slots[i].state == SLOT_USED && b->slots[i].owned)
			file_meta_free(b->slots[i].meta);
	free(b->slots);
	memset(b, 0, sizeof(*b));
}

static int builder_init(struct builder *b, struct version *base)
{
	memset(b, 0, sizeof(*b));
	for (int l = 0; l < NUM_LEVELS; l++)
		for (size_t i = 0; i < base->nfiles[l]; i++) {
			int rc = builder_put(b, l, base->files[l][i], false);
			if (rc) {
				builder_free(b);
				return rc;
			}
		}
	return 0;
}

static int builder_apply(struct builder *b, const struct version_edit *e)
{
	for (size_t i = 0; i < e->ndeleted; i++) {
		struct slot *s = b->cap ? builder_find(b, e->deleted[i].number)
					: NULL;
		/* Deleting what is not there is harmless (LevelDB ignores it). */
		if (s && s->level == e->deleted[i].level)
			slot_remove(b, s);
	}
	for (size_t i = 0; i < e->nadded; i++) {
		const struct file_meta *a = e->added[i].meta;
		struct file_meta *f = file_meta_new(a->number, a->size,
						    a->smallest.data,
						    a->smallest.len,
						    a->largest.data, a->largest.len);
		if (!f)
			return -ENOMEM;
		int rc = builder_put(b, e->added[i].level, f, true);
		if (rc)
			return rc;
	}
	return 0;
}

static int cmp_newest_first(const void *pa, const void *pb)
{
	const struct file_meta *a = *(struct file_meta *const *)pa;
	const struct file_meta *b = *(struct file_meta *const *)pb;
	return a->number > b->number ? -1 : a->number < b->number;
}

static int cmp_by_smallest(const void *pa, const void *pb)
{
	const struct file_meta *a = *(struct file_meta *const *)pa;
	const struct file_meta *b = *(struct file_meta *const *)pb;
	int r = ikey_compare(a->smallest.data, a->smallest.len, b->smallest.data,
			     b->smallest.len);
	if (r)
		return r;
	return a->number < b->number ? -1 : a->number > b->number;
}

/* The built version (refs 0, not live), or NULL on allocation failure. */
static struct version *builder_save(struct version_set *vs, struct builder *b)
{
	struct version *v = version_alloc(vs);
	if (!v)
		return NULL;
	size_t count[NUM_LEVELS] = { 0 };
	for (size_t i = 0; i < b->cap; i++)
		if (b->slots[i].state == SLOT_USED)
			count[b->slots[i].level]++;
	for (int l = 0; l < NUM_LEVELS; l++) {
		if (!count[l])
			continue;
		v->files[l] = malloc(count[l] * sizeof(*v->files[l]));
		if (!v->files[l]) {
			version_destroy(v); /* lists no file yet */
			return NULL;
		}
	}
	/* Nothing can fail from here on. */
	for (size_t i = 0; i < b->cap; i++) {
		struct slot *s = &b->slots[i];
		if (s->state != SLOT_USED)
			continue;
		s->meta->refs++;
		s->owned = false;
		v->files[s->level][v->nfiles[s->level]++] = s->meta;
	}
	for (int l = 0; l < NUM_LEVELS; l++)
		if (v->nfiles[l] > 1)
			qsort(v->files[l], v->nfiles[l], sizeof(*v->files[l]),
			      l == 0 ? cmp_newest_first : cmp_by_smallest);
	return v;
}

/* 0, or -EUCLEAN (reported, prefixed by what) if a sorted level overlaps. */
static int check_version(struct version_set *vs, struct version *v,
			 const char *what)
{
	for (int l = 1; l < NUM_LEVELS; l++)
		for (size_t i = 1; i < v->nfiles[l]; i++) {
			const struct file_meta *a = v->files[l][i - 1];
			const struct file_meta *b = v->files[l][i];
			if (ikey_compare(a->largest.data, a->largest.len,
					 b->smallest.data, b->smallest.len) >= 0) {
				version_set_logf(vs,
						 "%s: level %d: tables %06" PRIu64
						 " and %06" PRIu64 " overlap",
						 what, l, a->number, b->number);
				return -EUCLEAN;
			}
		}
	return 0;
}

/* ---- the version set ---- */

struct version_set *version_set_new(const struct version_set_options *o)
{
	struct version_set *vs = calloc(1, sizeof(*vs));
	if (!vs)
		return NULL;
	vs->env = o->env;
	vs->dir = strdup(o->dir);
	vs->opt = o->opt;
	vs->tables = o->tables;
	vs->manifest_bytes = o->manifest_bytes;
	vs->log = o->log;
	vs->log_ctx = o->log_ctx;
	vs->session_totals = o->session_totals;
	vs->totals_ctx = o->totals_ctx;
	vs->next_file = 1;
	vs->live.prev = vs->live.next = &vs->live;
	for (int l = 0; l < NUM_LEVELS; l++)
		buf_init(&vs->compact_pointer[l]);
	struct version *v = vs->dir ? version_alloc(vs) : NULL;
	if (!v) {
		free(vs->dir);
		free(vs);
		return NULL;
	}
	install(vs, v);
	return vs;
}

void version_set_free(struct version_set *vs)
{
	if (!vs)
		return;
	if (vs->manifest)
		/* Every record in it was synced by log_and_apply. */
		(void)wal_writer_close(vs->manifest);
	if (vs->current)
		version_unref(vs->current);
	/* Versions still referenced now are the caller's leak: free them so
	 * their tables' metadata does not outlive the set. */
	while (vs->live.next != &vs->live)
		version_destroy(vs->live.next);
	for (int l = 0; l < NUM_LEVELS; l++)
		buf_free(&vs->compact_pointer[l]);
	free(vs->dir);
	free(vs);
}

int version_set_create(struct version_set *vs)
{
	struct version *v = version_alloc(vs);
	if (!v)
		return -ENOMEM;
	install(vs, v);
	vs->log_number = 0;
	vs->last_sequence = 0;
	vs->manifest_number = 0;
	for (int l = 0; l < NUM_LEVELS; l++)
		buf_clear(&vs->compact_pointer[l]);
	return 0;
}

void version_set_totals(const struct version_set *vs, struct store_totals *out)
{
	*out = vs->totals;
}

void version_set_base_totals(const struct version_set *vs, struct store_totals *out)
{
	*out = vs->base;
}

struct version *version_set_current(struct version_set *vs)
{
	return vs->current;
}

uint64_t version_set_new_file_number(struct version_set *vs)
{
	return vs->next_file++;
}

void version_set_reuse_file_number(struct version_set *vs, uint64_t n)
{
	if (vs->next_file == n + 1)
		vs->next_file = n;
}

uint64_t version_set_last_sequence(const struct version_set *vs)
{
	return vs->last_sequence;
}

void version_set_set_last_sequence(struct version_set *vs, uint64_t s)
{
	vs->last_sequence = s;
}

uint64_t version_set_log_number(const struct version_set *vs)
{
	return vs->log_number;
}

bool version_set_manifest_in_doubt(const struct version_set *vs)
{
	return vs->manifest_in_doubt;
}

uint64_t version_set_manifest_number(const struct version_set *vs)
{
	return vs->manifest_number;
}

void version_set_mark_file_number_used(struct version_set *vs, uint64_t n)
{
	if (vs->next_file <= n)
		vs->next_file = n + 1;
}

int version_set_live_files(struct version_set *vs, uint64_t **nums, size_t *n)
{
	size_t add = 0;
	for (struct version *v = vs->live.next; v != &vs->live; v = v->next)
		for (int l = 0; l < NUM_LEVELS; l++)
			add += v->nfiles[l];
	uint64_t *p = realloc(*nums, (*n + add + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*nums = p;
	for (struct version *v = vs->live.next; v != &vs->live; v = v->next)
		for (int l = 0; l < NUM_LEVELS; l++)
			for (size_t i = 0; i < v->nfiles[l]; i++)
				p[(*n)++] = v->files[l][i]->number;
	return 0;
}

/* ---- recovery ---- */

/* Parse "MANIFEST-NNNNNN\n". */
static bool parse_current(const uint8_t *data, size_t len, uint64_t *number)
{
	static const char prefix[] = "MANIFEST-";
	size_t pl = sizeof(prefix) - 1;
	if (len < pl + 2 || len > pl + 21 || memcmp(data, prefix, pl) != 0 ||
	    data[len - 1] != '\n')
		return false;
	uint64_t n = 0;
	for (size_t i = pl; i < len - 1; i++) {
		if (data[i] < '0' || data[i] > '9')
			return false;
		uint64_t d = (uint64_t)(data[i] - '0');
		if (n > (UINT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*number = n;
	return true;
}

static int manifest_path(char *out, const char *dir, uint64_t number)
{
	int n = snprintf(out, PATH_LEN, "%s/MANIFEST-%06" PRIu64, dir, number);
	return n < 0 || n >= PATH_LEN ? -ENAMETOOLONG : 0;
}

struct replay {
	bool has_totals;
	struct store_totals totals;
	bool has_log_number, has_next_file, has_last_sequence;
	uint64_t log_number, next_file, last_sequence;
	struct buf compact_pointer[NUM_LEVELS];
	uint64_t max_number; /* largest table number named */
};

static int replay_edit(struct replay *r, struct builder *b,
		       const struct version_edit *e)
{
	if (e->has_totals) {
		r->has_totals = true;
		r->totals = e->totals;
	}
	if (e->has_log_number) {
		r->has_log_number = true;
		r->log_number = e->log_number;
	}
	if (e->has_next_file) {
		r->has_next_file = true;
		r->next_file = e->next_file_number;
	}
	if (e->has_last_sequence) {
		r->has_last_sequence = true;
		r->last_sequence = e->last_sequence;
	}
	for (size_t i = 0; i < e->ncompact_pointers; i++) {
		struct buf *cp = &r->compact_pointer[e->compact_pointers[i].level];
		buf_clear(cp);
		buf_append(cp, e->compact_pointers[i].key.data,
			   e->compact_pointers[i].key.len);
		if (buf_ok(cp))
			return -ENOMEM;
	}
	for (size_t i = 0; i < e->nadded; i++)
		if (e->added[i].meta->number > r->max_number)
			r->max_number = e->added[i].meta->number;
	return builder_apply(b, e);
}

int version_set_recover(struct version_set *vs)
{
	char path[PATH_LEN], mpath[PATH_LEN];
	uint8_t *data = NULL;
	size_t len = 0;
	uint64_t number;
	struct wal_reader *r = NULL;
	struct builder b;
	struct replay rp;
	struct version *v = NULL;
	int rc;

	memset(&b, 0, sizeof(b));
	memset(&rp, 0, sizeof(rp));
	for (int l = 0; l < NUM_LEVELS; l++)
		buf_init(&rp.compact_pointer[l]);

	int n = snprintf(path, sizeof(path), "%s/CURRENT", vs->dir);
	if (n < 0 || n >= (int)sizeof(path))
		return -ENAMETOOLONG;
	rc = env_read_file(vs->env, path, &data, &len);
	if (rc == -ENOENT)
		return rc;
	if (rc) {
		version_set_logf(vs, "%s: cannot read: %s", path, strerror(-rc));
		return rc;
	}
	if (!parse_current(data, len, &number)) {
		version_set_logf(vs, "%s: offset 0: not \"MANIFEST-NNNNNN\\n\"",
				 path);
		free(data);
		return -EUCLEAN;
	}
	free(data);
	rc = manifest_path(mpath, vs->dir, number);
	if (rc)
		return rc;
	rc = wal_reader_open(vs->env, mpath, &r);
	if (rc == -ENOENT) {
		version_set_logf(vs, "%s: names MANIFEST-%06" PRIu64
				 ", which does not exist", path, number);
		return -EUCLEAN;
	}
	if (rc) {
		version_set_logf(vs, "%s: cannot open: %s", mpath, strerror(-rc));
		return rc;
	}

	rc = builder_init(&b, vs->current);
	for (;;) {
		if (rc)
			break;
		uint64_t start = wal_reader_good_offset(r);
		const uint8_t *rec;
		size_t rlen;
		int got = wal_read_record(r, &rec, &rlen);
		if (got == 0)
			break;
		if (got < 0) {
			const struct wal_error *we = wal_reader_error(r);
			if (got != -EUCLEAN) {
				version_set_logf(vs, "%s: read error: %s", mpath,
						 strerror(-got));
				rc = got;
			} else if (we->tail && !vs->opt->paranoid_checks) {
				/* The record of an edit whose sync never
				 * finished: that edit was reported failed, so
				 * the state before it is the right one. */
				version_set_logf(vs,
						 "%s: offset %" PRIu64
						 ": torn tail (%s) ignored",
						 mpath, we->offset, we->msg);
			} else {
				version_set_logf(vs, "%s: offset %" PRIu64 ": %s",
						 mpath, we->offset, we->msg);
				rc = -EUCLEAN;
			}
			break;
		}
		struct version_edit e;
		rc = version_edit_decode(&e, rec, rlen);
		if (rc == -EUCLEAN) {
			version_set_logf(vs,
					 "%s: offset %" PRIu64
					 ": malformed version edit (%zu bytes)",
					 mpath, start, rlen);
			break;
		}
		if (rc)
			break;
		rc = replay_edit(&rp, &b, &e);
		version_edit_free(&e);
	}
	if (rc)
		goto out;

	const char *missing = !rp.has_next_file	    ? "next_file"
			      : !rp.has_log_number    ? "log_number"
			      : !rp.has_last_sequence ? "last_sequence"
						      : NULL;
	if (missing) {
		version_set_logf(vs, "%s: offset %" PRIu64 ": no %s entry", mpath,
				 wal_reader_good_offset(r), missing);
		rc = -EUCLEAN;
		goto out;
	}
	v = builder_save(vs, &b);
	if (!v) {
		rc = -ENOMEM;
		goto out;
	}
	rc = check_version(vs, v, mpath);
	if (rc)
		goto out;

	install(vs, v);
	v = NULL;
	vs->log_number = rp.log_number;
	vs->last_sequence = rp.last_sequence;
	vs->has_totals = rp.has_totals;
	vs->totals = vs->base = rp.totals;
	vs->manifest_number = number;
	vs->next_file = rp.next_file;
	version_set_mark_file_number_used(vs, number);
	version_set_mark_file_number_used(vs, rp.log_number);
	version_set_mark_file_number_used(vs, rp.max_number);
	for (int l = 0; l < NUM_LEVELS; l++) {
		struct buf t = vs->compact_pointer[l];
		vs->compact_pointer[l] = rp.compact_pointer[l];
		rp.compact_pointer[l] = t;
	}
	if (vs->manifest) {
		(void)wal_writer_close(vs->manifest); /* synced already */
		vs->manifest = NULL;
	}
out:
	if (v)
		version_destroy(v);
	builder_free(&b);
	for (int l = 0; l < NUM_LEVELS; l++)
		buf_free(&rp.compact_pointer[l]);
	wal_reader_close(r);
	return rc;
}

/* ---- log_and_apply ---- */

/* The whole state of the set as one edit (the head of a new MANIFEST). */
static int snapshot_edit(struct version_set *vs, struct buf *out)
{
	struct version_edit e;
	version_edit_init(&e);
	int rc = 0;
	/* Counters too, so the snapshot alone describes the state. */
	version_edit_set_log_number(&e, vs->log_number);
	version_edit_set_next_file(&e, vs->next_file);
	version_edit_set_last_sequence(&e, vs->last_sequence);
	e.has_totals = vs->has_totals;
	e.totals = vs->totals;
	for (int l = 0; l < NUM_LEVELS; l++)
		if (vs->compact_pointer[l].len)
			version_edit_set_compact_pointer(&e, l,
							 vs->compact_pointer[l].data,
							 vs->compact_pointer[l].len);
	struct version *v = vs->current;
	for (int l = 0; l < NUM_LEVELS && rc == 0; l++)
		for (size_t i = 0; i < v->nfiles[l] && rc == 0; i++) {
			const struct file_meta *f = v->files[l][i];
			rc = version_edit_add_file(&e, l, f->number, f->size,
						   f->smallest.data, f->smallest.len,
						   f->largest.data, f->largest.len);
		}
	if (rc == 0) {
		version_edit_encode(&e, out);
		rc = buf_ok(out);
	}
	version_edit_free(&e);
	return rc;
}

/* Does CURRENT name MANIFEST-number?  false also when it cannot be read
 * (the caller then keeps what it would have removed). */
static bool current_names(struct version_set *vs, uint64_t number, bool *known)
{
	char path[PATH_LEN];
	uint8_t *data = NULL;
	size_t len = 0;
	uint64_t named = 0;
	*known = false;
	int n = snprintf(path, sizeof(path), "%s/CURRENT", vs->dir);
	if (n < 0 || n >= (int)sizeof(path) || env_read_file(vs->env, path, &data, &len))
		return false;
	*known = parse_current(data, len, &named);
	free(data);
	return *known && named == number;
}

int version_set_snapshot(struct version_set *vs, struct buf *out, struct version **pinned)
{
	int rc = snapshot_edit(vs, out);
	if (rc == 0) {
		*pinned = vs->current;
		version_ref(*pinned);
	}
	return rc;
}

static int write_current(struct version_set *vs, uint64_t number)
{
	char line[40];
	int n = snprintf(line, sizeof(line), "MANIFEST-%06" PRIu64 "\n", number);
	return env_write_file_atomic(vs->env, vs->dir, "CURRENT", line, (size_t)n);
}

int version_set_new_manifest(struct version_set *vs, pthread_mutex_t *mu)
{
	if (vs->manifest) {
		(void)wal_writer_close(vs->manifest); /* every edit in it is synced */
		vs->manifest = NULL;
	}
	struct version_edit e;
	version_edit_init(&e);
	int rc = version_set_log_and_apply(vs, &e, mu);
	version_edit_free(&e);
	return rc;
}

int version_set_log_and_apply(struct version_set *vs, struct version_edit *e,
			      pthread_mutex_t *mu)
{
	struct builder b;
	struct buf rec, snap;
	struct version *v = NULL;
	char mpath[PATH_LEN];
	int rc;

	buf_init(&rec);
	buf_init(&snap);
	memset(&b, 0, sizeof(b));
	if (version_edit_poisoned(e))
		return -ENOMEM;

	if (!e->has_log_number)
		version_edit_set_log_number(e, vs->log_number);
	/* The tables an edit adds, and the commit log it names, must not be
	 * lost from the directory once the edit is durable: sync the
	 * directory before the record is written. */
	bool sync_dir = e->nadded > 0 || e->log_number != vs->log_number;
	version_edit_set_last_sequence(e, vs->last_sequence);
	if (vs->session_totals) {
		struct store_totals now;
		vs->session_totals(vs->totals_ctx, &now);
		e->has_totals = true;
#define ADD(kind, field, key, word) \
		STORE_IF_TOTAL(kind, e->totals.field = vs->base.field + now.field;)
		STORE_COUNTERS(ADD)
#undef ADD
	}
	bool new_manifest = vs->manifest == NULL;
	uint64_t mnum = new_manifest ? version_set_new_file_number(vs)
				     : vs->manifest_number;
	version_edit_set_next_file(e, vs->next_file);
	rc = manifest_path(mpath, vs->dir, mnum);
	if (rc)
		return rc;

	/* Build the new version and the records under mu: they read the
	 * current version and the counters. */
	rc = builder_init(&b, vs->current);
	if (rc == 0)
		rc = builder_apply(&b, e);
	if (rc == 0) {
		v = builder_save(vs, &b);
		rc = v ? 0 : -ENOMEM;
	}
	if (rc == 0)
		rc = check_version(vs, v, "refused version edit");
	if (rc == 0) {
		version_edit_encode(e, &rec);
		rc = buf_ok(&rec);
	}
	if (rc == 0 && new_manifest)
		rc = snapshot_edit(vs, &snap);
	builder_free(&b);
	if (rc)
		goto out;

	if (mu)
		pthread_mutex_unlock(mu);
	/* Only this thread touches vs->manifest while mu is dropped. */
	struct wal_writer *w = vs->manifest;
	uint64_t before = w ? wal_writer_size(w) : 0;
	bool current_touched = false;
	if (sync_dir)
		rc = vs->env->ops->sync_dir(vs->env, vs->dir);
	if (rc == 0 && new_manifest) {
		rc = wal_writer_open(vs->env, mpath, &w);
		if (rc == 0)
			rc = wal_add_record(w, snap.data, snap.len);
	}
	if (rc == 0)
		rc = wal_add_record(w, rec.data, rec.len);
	if (rc == 0)
		rc = wal_sync(w);
	/* The new MANIFEST's name durable before CURRENT names it: a
	 * filesystem may write directory changes in any order, and a
	 * CURRENT that names a missing MANIFEST opens nothing. */
	if (rc == 0 && new_manifest)
		rc = vs->env->ops->sync_dir(vs->env, vs->dir);
	if (rc == 0 && new_manifest) {
		current_touched = true;
		rc = write_current(vs, mnum);
	}
	uint64_t written = w ? wal_writer_size(w) - before : 0;
	if (rc) {
		version_set_logf(vs, "%s: cannot write %s: %s", mpath,
				 current_touched ? "CURRENT" : "MANIFEST",
				 strerror(-rc));
		if (w)
			(void)wal_writer_close(w); /* already failing */
		w = NULL;
		/* A new MANIFEST that CURRENT does not name is garbage (a full
		 * disk would otherwise leave one per retry); one that CURRENT
		 * may name must stay. */
		bool known = false;
		if (new_manifest &&
		    (!current_touched || (!current_names(vs, mnum, &known) && known)))
			(void)vs->env->ops->unlink(vs->env, mpath);
	}
	vs->manifest = w;
	if (mu)
		pthread_mutex_lock(mu);
	if (rc)
		vs->manifest_in_doubt = true;
	else if (new_manifest)
		vs->manifest_in_doubt = false; /* CURRENT names a whole snapshot */

	if (vs->manifest_bytes)
		*vs->manifest_bytes += written;
	if (rc)
		goto out;
	install(vs, v);
	v = NULL;
	if (new_manifest)
		vs->manifest_number = mnum;
	vs->log_number = e->log_number;
	if (e->has_totals) {
		vs->has_totals = true;
		vs->totals = e->totals;
	}
	for (size_t i = 0; i < e->ncompact_pointers; i++) {
		struct buf *cp = &vs->compact_pointer[e->compact_pointers[i].level];
		buf_clear(cp);
		buf_append(cp, e->compact_pointers[i].key.data,
			   e->compact_pointers[i].key.len);
		if (buf_ok(cp)) {
			/* Only a hint for round robin: start over at the
			 * level's beginning. */
			buf_free(cp);
		}
	}
out:
	if (v)
		version_destroy(v);
	buf_free(&rec);
	buf_free(&snap);
	return rc;
}

/* ---- queries ---- */

static size_t find_in(struct file_meta *const *files, size_t n,
		      const uint8_t *ikey, size_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct file_meta *f = files[mid];
		if (ikey_compare(f->largest.data, f->largest.len, ikey, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t version_find_file(struct version *v, int level, const uint8_t *ikey,
			 size_t len)
{
	return find_in(v->files[level], v->nfiles[level], ikey, len);
}

int version_overlapping_files(struct version *v, int level,
			      const uint8_t *begin, size_t blen,
			      const uint8_t *end, size_t elen,
			      struct file_meta ***out, size_t *n)
{
	struct file_meta **files = v->files[level];
	size_t nfiles = v->nfiles[level];
	struct file_meta **res = NULL;
	size_t k = 0;
	*out = NULL;
	*n = 0;
	if (nfiles) {
		res = malloc(nfiles * sizeof(*res));
		if (!res)
			return -ENOMEM;
	}
	for (size_t i = 0; i < nfiles;) {
		struct file_meta *f = files[i++];
		const uint8_t *fs = f->smallest.data, *fl = f->largest.data;
		size_t fsl = f->smallest.len - IKEY_TAG_LEN;
		size_t fll = f->largest.len - IKEY_TAG_LEN;
		if (begin && ukey_compare(fl, fll, begin, blen) < 0)
			continue; /* entirely before the range */
		if (end && ukey_compare(fs, fsl, end, elen) > 0)
			continue; /* entirely after the range */
		res[k++] = f;
		if (level != 0)
			continue;
		/* Level-0 files may overlap each other: if this one widens
		 * the range, start over with the wider range. */
		if (begin && ukey_compare(fs, fsl, begin, blen) < 0) {
			begin = fs;
			blen = fsl;
			k = 0;
			i = 0;
		} else if (end && ukey_compare(fl, fll, end, elen) > 0) {
			end = fl;
			elen = fll;
			k = 0;
			i = 0;
		}
	}
	if (k == 0) {
		free(res);
		res = NULL;
	}
	*out = res;
	*n = k;
	return 0;
}

/* ---- level iterator: the concatenation of a sorted level's tables ---- */

struct level_iter {
	struct iter base;
	struct table_cache *tables;
	struct file_meta *const *files;
	size_t n;
	bool fill_cache;
	size_t index;      /* file data iterates; n: none */
	struct iter *data; /* NULL when index == n */
	int err;           /* sticky */
};

static void li_set_file(struct level_iter *li, size_t index)
{
	if (li->data && index == li->index)
		return;
	iter_destroy(li->data);
	li->data = NULL;
	li->index = index;
	if (index >= li->n) {
		li->index = li->n;
		return;
	}
	const struct file_meta *f = li->files[index];
	li->data = table_cache_iter(li->tables, f->number, f->size,
				    li->fill_cache);
	if (!li->data)
		li->err = -ENOMEM;
}

/* Step over exhausted (or empty) tables forwards; stop on an error. */
static void li_skip_forward(struct level_iter *li)
{
	while (!li->err && li->data && !iter_valid(li->data)) {
		int s = iter_status(li->data);
		if (s) {
			li->err = s;
			return;
		}
		li_set_file(li, li->index + 1);
		if (li->data)
			iter_seek_first(li->data);
	}
}

static void li_skip_backward(struct level_iter *li)
{
	while (!li->err && li->data && !iter_valid(li->data)) {
		int s = iter_status(li->data);
		if (s) {
			li->err = s;
			return;
		}
		li_set_file(li, li->index == 0 ? li->n : li->index - 1);
		if (li->data)
			iter_seek_last(li->data);
	}
}

static bool li_valid(struct iter *it)
{
	struct level_iter *li = (struct level_iter *)it;
	return !li->err && li->data && iter_valid(li->data);
}

static void li_seek_first(struct iter *it)
{
	struct level_iter *li = (struct level_iter *)it;
	if (li->err)
		return;
	li_set_file(li, 0);
	if (li->data)
		iter_seek_first(li->data);
	li_skip_forward(li);
}

static void li_seek_last(struct iter *it)
{
	struct level_iter *li = (struct level_iter *)it;
	if (li->err)
		return;
	li_set_file(li, li->n ? li->n - 1 : 0);
	if (li->data)
		iter_seek_last(li->data);
	li_skip_backward(li);
}

static void li_seek(struct iter *it, const uint8_t *t, size_t len)
{
	struct level_iter *li = (struct level_iter *)it;
	if (li->err)
		return;
	li_set_file(li, find_in(li->files, li->n, t, len));
	if (li->data)
		iter_seek(li->data, t, len);
	li_skip_forward(li);
}

static void li_next(struct iter *it)
{
	struct level_iter *li = (struct level_iter *)it;
	if (!li_valid(it))
		return;
	iter_next(li->data);
	/* Mostly still inside the table: no call to skip. */
	if (!iter_valid(li->data))
		li_skip_forward(li);
}

static void li_prev(struct iter *it)
{
	struct level_iter *li = (struct level_iter *)it;
	if (!li_valid(it))
		return;
	iter_prev(li->data);
	li_skip_backward(li);
}

static const uint8_t *li_key(struct iter *it, size_t *len)
{
	return iter_key(((struct level_iter *)it)->data, len);
}

static const uint8_t *li_value(struct iter *it, size_t *len)
{
	return iter_value(((struct level_iter *)it)->data, len);
}

static int li_status(struct iter *it)
{
	struct level_iter *li = (struct level_iter *)it;
	if (li->err)
		return li->err;
	return li->data ? iter_status(li->data) : 0;
}

static void li_destroy(struct iter *it)
{
	struct level_iter *li = (struct level_iter *)it;
	iter_destroy(li->data);
	free(li);
}

static const struct iter_ops level_iter_ops = {
	.valid = li_valid,
	.seek_first = li_seek_first,
	.seek_last = li_seek_last,
	.seek = li_seek,
	.next = li_next,
	.prev = li_prev,
	.key = li_key,
	.value = li_value,
	.status = li_status,
	.destroy = li_destroy,
};

/* The file list must outlive the iterator (the caller holds the version). */
static struct iter *level_iter_new(struct table_cache *tables,
				   struct file_meta *const *files, size_t n,
				   bool fill_cache)
{
	struct level_iter *li = calloc(1, sizeof(*li));
	if (!li)
		return NULL;
	li->base.ops = &level_iter_ops;
	li->tables = tables;
	li->files = files;
	li->n = n;
	li->fill_cache = fill_cache;
	li->index = n;
	return &li->base;
}

int version_add_iterators(struct version *v, bool fill_cache,
			  struct iter ***its, size_t *n)
{
	struct table_cache *tc = v->vset->tables;
	size_t add = v->nfiles[0];
	for (int l = 1; l < NUM_LEVELS; l++)
		add += v->nfiles[l] > 0;
	if (add == 0)
		return 0;
	struct iter **p = realloc(*its, (*n + add) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*its = p;
	/* On failure what was appended is counted in *n: the caller destroys
	 * it with the rest. */
	for (size_t i = 0; i < v->nfiles[0]; i++) {
		const struct file_meta *f = v->files[0][i];
		struct iter *it = table_cache_iter(tc, f->number, f->size,
						   fill_cache);
		if (!it)
			return -ENOMEM;
		p[(*n)++] = it;
	}
	for (int l = 1; l < NUM_LEVELS; l++) {
		if (!v->nfiles[l])
			continue;
		struct iter *it = level_iter_new(tc, v->files[l], v->nfiles[l],
						 fill_cache);
		if (!it)
			return -ENOMEM;
		p[(*n)++] = it;
	}
	return 0;
}
