/*
 * db_read: point reads, snapshots, iterators' construction and counters.
 *
 * A read takes, under mu, references on the memtable, the immutable
 * memtable and the current version and the sequence to read at; the search
 * itself runs without mu: memtable, then immutable memtable, then level-0
 * tables newest first, then at most one table per deeper level (the one
 * whose key range holds the key).  Each table consults its Bloom filter
 * before reading any data block.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "filter.h"
#include "dbformat.h"

uint64_t db_smallest_snapshot(struct store *st)
{
	if (st->snapshots.next != &st->snapshots)
		return st->snapshots.next->seq;
	return version_set_last_sequence(st->vs);
}

struct get_state {
	const uint8_t *ukey;
	size_t ulen;
	int found; /* MEMTABLE_* */
	void *val;
	size_t vlen;
	int err;
};

static void get_saver(void *ctx, const uint8_t *ikey, size_t klen,
		      const uint8_t *val, size_t vlen)
{
	struct get_state *g = ctx;
	struct parsed_ikey p;
	if (ikey_parse(ikey, klen, &p)) {
		g->err = -EUCLEAN;
		return;
	}
	if (ukey_compare(p.ukey, p.ulen, g->ukey, g->ulen) != 0)
		return;
	if (p.type == KTYPE_DELETE) {
		g->found = MEMTABLE_DELETED;
		return;
	}
	g->val = malloc(vlen + 1);
	if (!g->val) {
		g->err = -ENOMEM;
		return;
	}
	memcpy(g->val, val, vlen);
	((char *)g->val)[vlen] = '\0';
	g->vlen = vlen;
	g->found = MEMTABLE_FOUND;
}

static int table_get(struct store *st, struct file_meta *f,
		     const uint8_t *ikey, size_t ilen, struct get_state *g)
{
	struct sst_reader *r;
	char *msg = NULL;
	int rc = table_cache_get(st->tables, f->number, f->size, &r, &msg);
	if (rc == 0) {
		rc = sst_get(r, ikey, ilen, get_saver, g, &msg);
		table_cache_release(st->tables, r);
	}
	if (rc == 0)
		rc = g->err;
	if (rc) {
		if (msg)
			db_report(st, "%s", msg);
		else
			db_report(st, "%s: table %06llu: read failed: %s",
				  st->dir, (unsigned long long)f->number,
				  strerror(-rc));
	}
	free(msg);
	return rc;
}

/* Does f's user-key range hold ukey? */
static bool file_holds(const struct file_meta *f, const uint8_t *ukey, size_t ulen)
{
	size_t sl = f->smallest.len - IKEY_TAG_LEN, ll = f->largest.len - IKEY_TAG_LEN;
	return ukey_compare(ukey, ulen, f->smallest.data, sl) >= 0 &&
	       ukey_compare(ukey, ulen, f->largest.data, ll) <= 0;
}

int db_version_get(struct store *st, struct version *v, const uint8_t *ukey,
		   size_t ulen, uint64_t seq, int *found, void **val,
		   size_t *vlen)
{
	struct buf ik;
	uint8_t space[256];
	ik.data = space;
	ik.cap = sizeof(space);
	ik.len = 0;
	ik.oom = 0;
	if (ulen + IKEY_TAG_LEN > sizeof(space)) {
		ik.data = NULL;
		ik.cap = 0;
	}
	ikey_append(&ik, ukey, ulen, seq, KTYPE_SEEK);
	int rc = buf_ok(&ik);
	struct get_state g = { .ukey = ukey, .ulen = ulen };
	*found = MEMTABLE_MISSING;
	if (rc)
		goto out;
	/* Level 0: files may overlap; newest (first in the list) wins. */
	for (size_t i = 0; i < v->nfiles[0] && rc == 0; i++) {
		struct file_meta *f = v->files[0][i];
		if (!file_holds(f, ukey, ulen))
			continue;
		rc = table_get(st, f, ik.data, ik.len, &g);
		if (g.found != MEMTABLE_MISSING)
			goto done;
	}
	for (int level = 1; level < NUM_LEVELS && rc == 0; level++) {
		if (v->nfiles[level] == 0)
			continue;
		size_t i = version_find_file(v, level, ik.data, ik.len);
		if (i >= v->nfiles[level])
			continue;
		struct file_meta *f = v->files[level][i];
		if (ukey_compare(ukey, ulen, f->smallest.data,
				 f->smallest.len - IKEY_TAG_LEN) < 0)
			continue;
		rc = table_get(st, f, ik.data, ik.len, &g);
		if (g.found != MEMTABLE_MISSING)
			goto done;
	}
done:
	*found = g.found;
	*val = g.val;
	*vlen = g.vlen;
out:
	if (ik.data != space)
		free(ik.data);
	if (rc && g.val) {
		free(g.val);
		*val = NULL;
	}
	return rc;
}

static int copy_value(const uint8_t *v, size_t n, void **val, size_t *vlen)
{
	char *p = malloc(n + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, v, n);
	p[n] = '\0';
	*val = p;
	*vlen = n;
	return 0;
}

int store_get(struct store *st, const struct store_snapshot *snap,
	      const void *key, size_t klen, void **val, size_t *vlen)
{
	pthread_mutex_lock(&st->mu);
	uint64_t seq = snap ? snap->seq : version_set_last_sequence(st->vs);
	struct memtable *mem = st->mem, *imm = st->imm;
	struct version *v = version_set_current(st->vs);
	memtable_ref(mem);
	if (imm)
		memtable_ref(imm);
	version_ref(v);
	pthread_mutex_unlock(&st->mu);

	const uint8_t *mv;
	size_t mlen;
	int rc;
	enum memtable_lookup r = memtable_get(mem, key, klen, seq, &mv, &mlen);
	if (r == MEMTABLE_MISSING && imm)
		r = memtable_get(imm, key, klen, seq, &mv, &mlen);
	if (r == MEMTABLE_FOUND) {
		rc = copy_value(mv, mlen, val, vlen);
	} else if (r == MEMTABLE_DELETED) {
		rc = -ENOENT;
	} else {
		int found;
		rc = db_version_get(st, v, key, klen, seq, &found, val, vlen);
		if (rc == 0 && found != MEMTABLE_FOUND)
			rc = -ENOENT;
	}

	memtable_unref(mem);
	if (imm)
		memtable_unref(imm);
	pthread_mutex_lock(&st->mu);
	version_unref(v);
	pthread_mutex_unlock(&st->mu);
	return rc;
}

const struct store_snapshot *store_snapshot_new(struct store *st)
{
	struct store_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_lock(&st->mu);
	s->seq = version_set_last_sequence(st->vs);
	/* Newest at the tail: sequences only grow. */
	s->prev = st->snapshots.prev;
	s->next = &st->snapshots;
	s->prev->next = s;
	st->snapshots.prev = s;
	pthread_mutex_unlock(&st->mu);
	return s;
}

void store_snapshot_release(struct store *st, const struct store_snapshot *snap)
{
	struct store_snapshot *s = (struct store_snapshot *)snap;
	if (!s)
		return;
	pthread_mutex_lock(&st->mu);
	s->prev->next = s->next;
	s->next->prev = s->prev;
	pthread_mutex_unlock(&st->mu);
	free(s);
}

uint64_t store_snapshot_seq(const struct store_snapshot *snap)
{
	return snap->seq;
}

struct iter_refs {
	struct memtable *mem, *imm;
	struct version *v;
};

static void iter_cleanup(struct store *st, void *arg)
{
	struct iter_refs *r = arg;
	memtable_unref(r->mem);
	if (r->imm)
		memtable_unref(r->imm);
	pthread_mutex_lock(&st->mu);
	version_unref(r->v);
	pthread_mutex_unlock(&st->mu);
	free(r);
}

int store_iter_new(struct store *st, const struct store_iter_options *opt,
		   struct store_iter **out)
{
	struct iter_refs *refs = calloc(1, sizeof(*refs));
	struct iter **its = NULL;
	size_t n = 0;
	if (!refs)
		return -ENOMEM;
	pthread_mutex_lock(&st->mu);
	uint64_t seq = opt && opt->snap ? opt->snap->seq
					: version_set_last_sequence(st->vs);
	refs->mem = st->mem;
	refs->imm = st->imm;
	refs->v = version_set_current(st->vs);
	memtable_ref(refs->mem);
	if (refs->imm)
		memtable_ref(refs->imm);
	version_ref(refs->v);
	pthread_mutex_unlock(&st->mu);

	int rc = -ENOMEM;
	its = malloc(2 * sizeof(*its));
	if (!its)
		goto fail;
	its[n] = memtable_iter_new(refs->mem);
	if (!its[n])
		goto fail;
	n++;
	if (refs->imm) {
		its[n] = memtable_iter_new(refs->imm);
		if (!its[n])
			goto fail;
		n++;
	}
	rc = version_add_iterators(refs->v, true, &its, &n);
	if (rc)
		goto fail;
	struct iter *merged = merge_iter_new(ikey_compare, ikey_prefix, its, n);
	free(its);
	its = NULL;
	n = 0;
	if (!merged) {
		rc = -ENOMEM;
		goto fail;
	}
	*out = db_iter_new(st, merged, seq, opt, iter_cleanup, refs);
	if (!*out) {
		/* db_iter_new destroyed merged and ran the cleanup. */
		return -ENOMEM;
	}
	return 0;
fail:
	for (size_t i = 0; i < n; i++)
		iter_destroy(its[i]);
	free(its);
	iter_cleanup(st, refs);
	return rc;
}

/* Bytes written since open, for the lifetime totals every MANIFEST edit
 * carries.  mu held. */
void db_session_totals(void *ctx, struct store_totals *out)
{
	struct store *st = ctx;
	out->user_bytes_written = atomic_load(&st->user_bytes);
	out->wal_bytes_written = atomic_load(&st->wal_bytes);
	out->flush_bytes_written = st->flush_bytes;
	out->compaction_bytes_written = st->compaction_written;
	out->manifest_bytes_written = st->manifest_bytes;
}

void store_get_stats(struct store *st, struct store_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->user_bytes_written = atomic_load(&st->user_bytes);
	s->wal_bytes_written = atomic_load(&st->wal_bytes);
	s->wal_syncs = atomic_load(&st->wal_syncs);
	s->bloom_checked = atomic_load(&st->counters.bloom_checked);
	s->bloom_useful = atomic_load(&st->counters.bloom_useful);
	s->bloom_false_positive = atomic_load(&st->counters.bloom_false_positive);
	s->data_block_reads = atomic_load(&st->counters.block_reads);
	struct filter_cache_stats fs;
	filter_cache_stats(st->filters, &fs);
	s->filter_bytes = fs.bytes;
	s->filter_budget = fs.budget;
	s->filter_loads = fs.loads;
	s->filter_drops = fs.drops;
	block_cache_stats(st->cache, &s->block_cache_hits, &s->block_cache_misses,
			  &s->block_cache_bytes);
	pthread_mutex_lock(&st->mu);
	s->flush_bytes_written = st->flush_bytes;
	s->compaction_bytes_read = st->compaction_read;
	s->compaction_bytes_written = st->compaction_written;
	s->manifest_bytes_written = st->manifest_bytes;
	s->flushes = st->flushes;
	s->compactions = st->compactions;
	s->write_stall_micros = st->stall_micros;
	s->memtable_bytes = memtable_memory_usage(st->mem) +
			    (st->imm ? memtable_memory_usage(st->imm) : 0);
	s->last_sequence = version_set_last_sequence(st->vs);
	struct store_totals base, now;
	version_set_base_totals(st->vs, &base);
	db_session_totals(st, &now);
#define ADD(kind, field, key, word) \
	STORE_IF_TOTAL(kind, s->lifetime.field = base.field + now.field;)
	STORE_COUNTERS(ADD)
#undef ADD
	struct version *v = version_set_current(st->vs);
	for (int l = 0; l < NUM_LEVELS; l++) {
		s->level_files[l] = v->nfiles[l];
		s->level_bytes[l] = version_level_bytes(v, l);
	}
	pthread_mutex_unlock(&st->mu);
}

double store_totals_write_amp(const struct store_totals *t)
{
	if (t->user_bytes_written == 0)
		return 0.0;
	return (double)(t->wal_bytes_written + t->flush_bytes_written +
			t->compaction_bytes_written + t->manifest_bytes_written) /
	       (double)t->user_bytes_written;
}

double store_stats_write_amp(const struct store_stats *s)
{
	if (s->user_bytes_written == 0)
		return 0.0;
	return (double)(s->wal_bytes_written + s->flush_bytes_written +
			s->compaction_bytes_written + s->manifest_bytes_written) /
	       (double)s->user_bytes_written;
}
