/*
 * test_model: model-based randomized test of the store (suite "model").
 *
 * The store is driven by a random mix of put, delete, batch, get, snapshot
 * take/release (+ reads through snapshots), iterator sessions (bounds,
 * seek, seek_for_prev, seek_first/last, next/prev), flush, compact_range
 * and close + reopen, and every answer is compared with an in-memory
 * reference model.
 *
 * The model: the key space is fixed (NKEYS keys from tu_key(), sorted once),
 * so the reference map is an array indexed by the key's rank in that order,
 * holding a refcounted immutable value or NULL.  A snapshot of the model is
 * a copy of that array (values shared by refcount).  Probe keys outside the
 * space are located by binary search.
 *
 * Options are small so that a run goes through many flushes and compactions
 * on several levels; each case uses a different compression / bloom /
 * restart-interval / cache mix.
 *
 * Environment: LSMFS_SEED (base seed; each case derives its own),
 * LSMFS_MODEL_OPS (ops per case), LSMFS_MODEL_CASE (run only that case),
 * LSMFS_SOAK=1 (8x the ops).
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "testutil.h"

/* The run's base seed (LSMFS_SEED or the clock), printed once. */
static uint64_t base_seed;

#define NCASES 4
#define NKEYS 20000
#define MAX_VALUE 2000
#define MAX_SNAPS 4

/* ---- reference values ---- */

struct val {
	unsigned refs;
	size_t len;
	uint8_t data[];
};

static struct val *val_new(struct tu_rng *r)
{
	size_t len = tu_value_len(r, MAX_VALUE);
	struct val *v = malloc(sizeof(*v) + len + 1);
	ck_assert_ptr_nonnull(v);
	v->refs = 1;
	v->len = len;
	tu_fill(v->data, len, tu_rng_next(r));
	return v;
}

static struct val *val_ref(struct val *v)
{
	if (v)
		v->refs++;
	return v;
}

static void val_unref(struct val *v)
{
	if (v && --v->refs == 0)
		free(v);
}

/* ---- the key space ---- */

struct keyspace {
	size_t n;
	uint8_t **key; /* by rank */
	size_t *len;
};

struct kref {
	uint8_t *k;
	size_t len;
};

static int kref_cmp(const void *a, const void *b)
{
	const struct kref *x = a, *y = b;
	return tu_keycmp(x->k, x->len, y->k, y->len);
}

static void ks_init(struct keyspace *ks, size_t n)
{
	struct kref *refs = calloc(n, sizeof(*refs));
	ck_assert_ptr_nonnull(refs);
	for (size_t i = 0; i < n; i++) {
		uint8_t buf[TU_KEY_MAX];
		refs[i].len = tu_key(buf, i);
		refs[i].k = malloc(refs[i].len + 1);
		ck_assert_ptr_nonnull(refs[i].k);
		memcpy(refs[i].k, buf, refs[i].len);
	}
	qsort(refs, n, sizeof(*refs), kref_cmp);
	ks->n = n;
	ks->key = calloc(n, sizeof(*ks->key));
	ks->len = calloc(n, sizeof(*ks->len));
	ck_assert_ptr_nonnull(ks->key);
	ck_assert_ptr_nonnull(ks->len);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			ck_assert_msg(kref_cmp(&refs[i - 1], &refs[i]) < 0,
				      "key generator made duplicate keys");
		ks->key[i] = refs[i].k;
		ks->len[i] = refs[i].len;
	}
	free(refs);
}

static void ks_free(struct keyspace *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		free(ks->key[i]);
	free(ks->key);
	free(ks->len);
}

/* First rank whose key is >= k (n if none). */
static size_t ks_lower_bound(const struct keyspace *ks, const void *k, size_t len)
{
	size_t lo = 0, hi = ks->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tu_keycmp(ks->key[mid], ks->len[mid], k, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First rank whose key is > k. */
static size_t ks_upper_bound(const struct keyspace *ks, const void *k, size_t len)
{
	size_t r = ks_lower_bound(ks, k, len);
	if (r < ks->n && tu_keycmp(ks->key[r], ks->len[r], k, len) == 0)
		r++;
	return r;
}

/* Rank of k, or -1 if k is not in the space. */
static long ks_find(const struct keyspace *ks, const void *k, size_t len)
{
	size_t r = ks_lower_bound(ks, k, len);
	if (r < ks->n && tu_keycmp(ks->key[r], ks->len[r], k, len) == 0)
		return (long)r;
	return -1;
}

/* ---- the test context ---- */

struct snap {
	const struct store_snapshot *s;
	struct val **view; /* model copy at snapshot time */
	uint64_t taken_at; /* op index */
};

struct ctx {
	int tcase;
	uint64_t seed;
	uint64_t op; /* current op index */
	const char *opname;
	struct tu_rng rng;
	struct keyspace ks;
	struct val **model; /* by rank */
	size_t live; /* keys present */
	struct snap snaps[MAX_SNAPS];
	int nsnaps;
	char *dir;
	struct store_options opt;
	struct store *st;
	struct tu_log log;
	/* counters for the summary */
	uint64_t n_put, n_del, n_batch, n_get, n_iter_steps, n_flush,
		n_compact, n_reopen, n_snap;
};

#define CHECK(c, cond, fmt, ...)                                              \
	ck_assert_msg(cond, "seed=%" PRIu64 " case=%d op=%" PRIu64 " (%s): " fmt, \
		      (c)->seed, (c)->tcase, (c)->op, (c)->opname, ##__VA_ARGS__)

static char *fmt_rank(struct ctx *c, size_t r, char *buf, size_t cap)
{
	return tu_fmtkey(buf, cap, c->ks.key[r], c->ks.len[r]);
}

static void model_set(struct ctx *c, size_t r, struct val *v)
{
	if (c->model[r] && !v)
		c->live--;
	else if (!c->model[r] && v)
		c->live++;
	val_unref(c->model[r]);
	c->model[r] = v;
}

static struct val **view_copy(struct ctx *c)
{
	struct val **v = malloc(c->ks.n * sizeof(*v));
	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < c->ks.n; i++)
		v[i] = val_ref(c->model[i]);
	return v;
}

static void view_free(struct ctx *c, struct val **v)
{
	for (size_t i = 0; i < c->ks.n; i++)
		val_unref(v[i]);
	free(v);
}

static void ctx_open(struct ctx *c)
{
	int rc = store_open(c->dir, &c->opt, &c->st);
	if (rc)
		tu_log_dump(&c->log, "  store log: ");
	CHECK(c, rc == 0, "store_open: %d", rc);
}

static void ctx_close(struct ctx *c)
{
	for (int i = 0; i < c->nsnaps; i++) {
		store_snapshot_release(c->st, c->snaps[i].s);
		view_free(c, c->snaps[i].view);
	}
	c->nsnaps = 0;
	int rc = store_close(c->st);
	c->st = NULL;
	CHECK(c, rc == 0, "store_close: %d", rc);
}

/* Compare a store answer for rank r (rc, val) with the model view. */
static void check_get_result(struct ctx *c, struct val **view, size_t r, int rc,
			     void *got, size_t glen, const char *through)
{
	char kb[512];
	struct val *want = view[r];
	if (!want) {
		CHECK(c, rc == -ENOENT,
		      "get%s %s: rc=%d (len %zu), model says absent", through,
		      fmt_rank(c, r, kb, sizeof(kb)), rc, glen);
		return;
	}
	CHECK(c, rc == 0, "get%s %s: rc=%d, model has a %zu-byte value", through,
	      fmt_rank(c, r, kb, sizeof(kb)), rc, want->len);
	CHECK(c, glen == want->len && (glen == 0 || memcmp(got, want->data, glen) == 0),
	      "get%s %s: value differs: got %zu bytes hash %016" PRIx64
	      ", want %zu bytes hash %016" PRIx64,
	      through, fmt_rank(c, r, kb, sizeof(kb)), glen, tu_hash(got, glen),
	      want->len, tu_hash(want->data, want->len));
	CHECK(c, ((uint8_t *)got)[glen] == 0, "get%s: value not NUL-terminated",
	      through);
}

static void do_get(struct ctx *c, struct snap *sn)
{
	uint8_t probe[TU_KEY_MAX];
	size_t plen;
	long r;
	if (tu_rng_chance(&c->rng, 1, 5)) {
		plen = tu_probe_key(&c->rng, probe, NKEYS);
		r = ks_find(&c->ks, probe, plen);
	} else {
		r = (long)tu_rng_below(&c->rng, c->ks.n);
		plen = c->ks.len[r];
		memcpy(probe, c->ks.key[r], plen);
	}
	void *got = NULL;
	size_t glen = 0;
	int rc = store_get(c->st, sn ? sn->s : NULL, probe, plen, &got, &glen);
	if (r < 0) {
		char kb[512];
		CHECK(c, rc == -ENOENT, "get of key %s outside the space: rc=%d",
		      tu_fmtkey(kb, sizeof(kb), probe, plen), rc);
	} else {
		check_get_result(c, sn ? sn->view : c->model, (size_t)r, rc, got,
				 glen, sn ? " (snapshot)" : "");
	}
	if (rc == 0)
		free(got);
	c->n_get++;
}

static struct val *random_write(struct ctx *c, size_t *rank, bool *is_put)
{
	*rank = (size_t)tu_rng_below(&c->rng, c->ks.n);
	*is_put = tu_rng_below(&c->rng, 4) != 0;
	return *is_put ? val_new(&c->rng) : NULL;
}

static unsigned write_flags(struct ctx *c)
{
	return tu_rng_chance(&c->rng, 1, 50) ? STORE_WRITE_SYNC : 0;
}

static void do_put(struct ctx *c)
{
	size_t r = (size_t)tu_rng_below(&c->rng, c->ks.n);
	struct val *v = val_new(&c->rng);
	int rc = store_put(c->st, c->ks.key[r], c->ks.len[r], v->data, v->len,
			   write_flags(c));
	CHECK(c, rc == 0, "put: %d", rc);
	model_set(c, r, v);
	c->n_put++;
}

static void do_delete(struct ctx *c)
{
	size_t r;
	/* Prefer deleting something that exists. */
	r = (size_t)tu_rng_below(&c->rng, c->ks.n);
	for (int tries = 0; tries < 4 && !c->model[r]; tries++)
		r = (size_t)tu_rng_below(&c->rng, c->ks.n);
	int rc = store_delete(c->st, c->ks.key[r], c->ks.len[r], write_flags(c));
	CHECK(c, rc == 0, "delete: %d", rc);
	model_set(c, r, NULL);
	c->n_del++;
}

static void do_batch(struct ctx *c)
{
	struct store_batch *b = store_batch_new();
	CHECK(c, b != NULL, "store_batch_new");
	size_t nops = (size_t)tu_rng_range(&c->rng, 1, 20);
	size_t ranks[20];
	struct val *vals[20];
	for (size_t i = 0; i < nops; i++) {
		bool is_put;
		/* Sometimes the same key again within the batch. */
		if (i > 0 && tu_rng_chance(&c->rng, 1, 6)) {
			ranks[i] = ranks[tu_rng_below(&c->rng, i)];
			is_put = tu_rng_chance(&c->rng, 1, 2);
			vals[i] = is_put ? val_new(&c->rng) : NULL;
		} else {
			vals[i] = random_write(c, &ranks[i], &is_put);
		}
		size_t r = ranks[i];
		int rc = vals[i] ? store_batch_put(b, c->ks.key[r], c->ks.len[r],
						   vals[i]->data, vals[i]->len)
				 : store_batch_delete(b, c->ks.key[r], c->ks.len[r]);
		CHECK(c, rc == 0, "batch add: %d", rc);
	}
	CHECK(c, store_batch_count(b) == nops, "batch count %zu, want %zu",
	      store_batch_count(b), nops);
	int rc = store_write(c->st, b, write_flags(c));
	CHECK(c, rc == 0, "store_write: %d", rc);
	for (size_t i = 0; i < nops; i++)
		model_set(c, ranks[i], vals[i]);
	store_batch_free(b);
	c->n_batch++;
}

static void do_snapshot_new(struct ctx *c)
{
	if (c->nsnaps == MAX_SNAPS)
		return;
	const struct store_snapshot *s = store_snapshot_new(c->st);
	CHECK(c, s != NULL, "store_snapshot_new returned NULL");
	struct snap *sn = &c->snaps[c->nsnaps++];
	sn->s = s;
	sn->view = view_copy(c);
	sn->taken_at = c->op;
	c->n_snap++;
}

static void do_snapshot_release(struct ctx *c)
{
	if (c->nsnaps == 0)
		return;
	int i = (int)tu_rng_below(&c->rng, (uint64_t)c->nsnaps);
	store_snapshot_release(c->st, c->snaps[i].s);
	view_free(c, c->snaps[i].view);
	c->snaps[i] = c->snaps[--c->nsnaps];
}

/* ---- iterators ---- */

struct miter {
	struct val **view;
	size_t lo, hi; /* the bounds as ranks: keys in [lo, hi) */
	long pos;      /* rank, or -1: not valid */
};

static long mi_next_from(const struct miter *m, size_t r)
{
	for (; r < m->hi; r++)
		if (m->view[r])
			return (long)r;
	return -1;
}

/* Last present rank <= r within the bounds (r may be -1). */
static long mi_prev_from(const struct miter *m, long r)
{
	if (m->hi == 0)
		return -1;
	if (r > (long)m->hi - 1)
		r = (long)m->hi - 1;
	for (; r >= (long)m->lo; r--)
		if (m->view[r])
			return r;
	return -1;
}

static void check_iter_pos(struct ctx *c, struct store_iter *it,
			   const struct miter *m, const char *move, int step)
{
	char kb[512], kb2[512];
	int st = store_iter_status(it);
	CHECK(c, st == 0, "iterator status %d after %s (step %d)", st, move, step);
	bool valid = store_iter_valid(it);
	if (m->pos < 0) {
		if (valid) {
			size_t kl;
			const void *k = store_iter_key(it, &kl);
			CHECK(c, 0, "after %s (step %d): iterator at %s, model says "
			      "not valid (bounds ranks [%zu,%zu))", move, step,
			      tu_fmtkey(kb, sizeof(kb), k, kl), m->lo, m->hi);
		}
		return;
	}
	CHECK(c, valid, "after %s (step %d): iterator not valid, model at %s", move,
	      step, fmt_rank(c, (size_t)m->pos, kb, sizeof(kb)));
	size_t kl, vl;
	const void *k = store_iter_key(it, &kl);
	const void *v = store_iter_value(it, &vl);
	size_t r = (size_t)m->pos;
	CHECK(c, tu_keycmp(k, kl, c->ks.key[r], c->ks.len[r]) == 0,
	      "after %s (step %d): iterator at key %s, model at %s", move, step,
	      tu_fmtkey(kb, sizeof(kb), k, kl), fmt_rank(c, r, kb2, sizeof(kb2)));
	struct val *want = m->view[r];
	/* (An empty value may come back as a NULL pointer.) */
	CHECK(c, vl == want->len && (vl == 0 || memcmp(v, want->data, vl) == 0),
	      "after %s (step %d): key %s: value %zu bytes hash %016" PRIx64
	      ", want %zu bytes hash %016" PRIx64,
	      move, step, fmt_rank(c, r, kb, sizeof(kb)), vl, tu_hash(v, vl),
	      want->len, tu_hash(want->data, want->len));
}

/*
 * One iterator session: a view (the latest state or a snapshot), random
 * bounds, then a random walk of moves, each checked against the model.
 * In some sessions the store is written during the walk: the iterator must
 * keep seeing the state it was created on.
 */
static void do_iter_session(struct ctx *c, bool full_scan)
{
	struct snap *sn = NULL;
	if (c->nsnaps && tu_rng_chance(&c->rng, 1, 3))
		sn = &c->snaps[tu_rng_below(&c->rng, (uint64_t)c->nsnaps)];
	bool write_during = !sn && !full_scan && tu_rng_chance(&c->rng, 1, 4);
	struct miter m;
	struct val **owned = NULL;
	if (sn)
		m.view = sn->view;
	else if (write_during)
		m.view = owned = view_copy(c);
	else
		m.view = c->model;

	struct store_iter_options io;
	memset(&io, 0, sizeof(io));
	io.snap = sn ? sn->s : NULL;
	uint8_t lower[TU_KEY_MAX], upper[TU_KEY_MAX];
	size_t llen = 0, ulen = 0;
	m.lo = 0;
	m.hi = c->ks.n;
	if (!full_scan && tu_rng_chance(&c->rng, 1, 2)) {
		llen = tu_probe_key(&c->rng, lower, NKEYS);
		io.lower = lower;
		io.lower_len = llen;
		m.lo = ks_lower_bound(&c->ks, lower, llen);
	}
	if (!full_scan && tu_rng_chance(&c->rng, 1, 2)) {
		ulen = tu_probe_key(&c->rng, upper, NKEYS);
		io.upper = upper;
		io.upper_len = ulen;
		m.hi = ks_lower_bound(&c->ks, upper, ulen);
	}
	if (m.hi < m.lo)
		m.hi = m.lo; /* lower > upper: an empty range */
	m.pos = -1;

	struct store_iter *it = NULL;
	int rc = store_iter_new(c->st, &io, &it);
	CHECK(c, rc == 0, "store_iter_new: %d", rc);
	/* The bound bytes are copied: scribble over ours. */
	memset(lower, 0x5a, sizeof(lower));
	memset(upper, 0xa5, sizeof(upper));

	if (full_scan) {
		/* Forward over everything, then backward. */
		store_iter_seek_first(it);
		m.pos = mi_next_from(&m, m.lo);
		int step = 0;
		check_iter_pos(c, it, &m, "seek_first", step);
		while (m.pos >= 0) {
			store_iter_next(it);
			m.pos = mi_next_from(&m, (size_t)m.pos + 1);
			check_iter_pos(c, it, &m, "next (full scan)", ++step);
		}
		store_iter_seek_last(it);
		m.pos = mi_prev_from(&m, (long)m.hi - 1);
		check_iter_pos(c, it, &m, "seek_last", ++step);
		while (m.pos >= 0) {
			store_iter_prev(it);
			m.pos = mi_prev_from(&m, m.pos - 1);
			check_iter_pos(c, it, &m, "prev (full scan)", ++step);
		}
		c->n_iter_steps += (uint64_t)step;
		store_iter_free(it);
		return;
	}

	int nmoves = (int)tu_rng_range(&c->rng, 1, 60);
	for (int step = 0; step < nmoves; step++) {
		const char *move;
		uint64_t k = tu_rng_below(&c->rng, 100);
		if (m.pos >= 0 && k < 35) {
			move = "next";
			store_iter_next(it);
			m.pos = mi_next_from(&m, (size_t)m.pos + 1);
		} else if (m.pos >= 0 && k < 60) {
			move = "prev";
			store_iter_prev(it);
			m.pos = mi_prev_from(&m, m.pos - 1);
		} else if (k < 75) {
			uint8_t p[TU_KEY_MAX];
			size_t pl = tu_probe_key(&c->rng, p, NKEYS);
			move = "seek";
			store_iter_seek(it, p, pl);
			size_t start = ks_lower_bound(&c->ks, p, pl);
			if (start < m.lo)
				start = m.lo;
			m.pos = mi_next_from(&m, start);
		} else if (k < 88) {
			uint8_t p[TU_KEY_MAX];
			size_t pl = tu_probe_key(&c->rng, p, NKEYS);
			move = "seek_for_prev";
			store_iter_seek_for_prev(it, p, pl);
			long end = (long)ks_upper_bound(&c->ks, p, pl) - 1;
			m.pos = mi_prev_from(&m, end);
		} else if (k < 94) {
			move = "seek_first";
			store_iter_seek_first(it);
			m.pos = mi_next_from(&m, m.lo);
		} else {
			move = "seek_last";
			store_iter_seek_last(it);
			m.pos = mi_prev_from(&m, (long)m.hi - 1);
		}
		check_iter_pos(c, it, &m, move, step);
		if (write_during && tu_rng_chance(&c->rng, 1, 4)) {
			if (tu_rng_chance(&c->rng, 1, 3))
				do_delete(c);
			else
				do_put(c);
			if (tu_rng_chance(&c->rng, 1, 20)) {
				rc = store_flush(c->st);
				CHECK(c, rc == 0, "flush during iteration: %d", rc);
			}
		}
	}
	c->n_iter_steps += (uint64_t)nmoves;
	store_iter_free(it);
	if (owned)
		view_free(c, owned);
}

static void do_compact(struct ctx *c)
{
	uint8_t b[TU_KEY_MAX], e[TU_KEY_MAX];
	size_t bl = 0, el = 0;
	const void *bp = NULL, *ep = NULL;
	if (tu_rng_chance(&c->rng, 3, 4)) {
		bl = tu_probe_key(&c->rng, b, NKEYS);
		bp = b;
	}
	if (tu_rng_chance(&c->rng, 3, 4)) {
		el = tu_probe_key(&c->rng, e, NKEYS);
		ep = e;
	}
	if (bp && ep && tu_keycmp(b, bl, e, el) > 0) {
		uint8_t t[TU_KEY_MAX];
		size_t tl = bl;
		memcpy(t, b, bl);
		memcpy(b, e, el);
		bl = el;
		memcpy(e, t, tl);
		el = tl;
	}
	int rc = store_compact_range(c->st, bp, bl, ep, el);
	CHECK(c, rc == 0, "compact_range: %d", rc);
	c->n_compact++;
}

static void verify_all(struct ctx *c)
{
	const char *saved = c->opname;
	c->opname = "verify all";
	for (size_t r = 0; r < c->ks.n; r++) {
		void *got = NULL;
		size_t glen = 0;
		int rc = store_get(c->st, NULL, c->ks.key[r], c->ks.len[r], &got,
				   &glen);
		check_get_result(c, c->model, r, rc, got, glen, " (verify)");
		if (rc == 0)
			free(got);
	}
	do_iter_session(c, true);
	c->opname = saved;
}

static void do_reopen(struct ctx *c)
{
	ctx_close(c);
	ctx_open(c);
	c->n_reopen++;
	c->opname = "reopen";
	do_iter_session(c, true);
}

static void configure(struct ctx *c)
{
	store_options_init(&c->opt);
	c->opt.write_buffer_size = 64 * 1024;
	c->opt.target_file_size = 64 * 1024;
	c->opt.level_base_bytes = 256 * 1024;
	c->opt.block_size = 1024;
	switch (c->tcase) {
	case 0:
		c->opt.compression = STORE_COMPRESSION_NONE;
		c->opt.filter.kind = STORE_FILTER_NONE;
		break;
	case 1:
		c->opt.compression = STORE_COMPRESSION_LZ4;
		c->opt.filter = (struct store_filter){STORE_FILTER_BLOOM, 10, 1};
		c->opt.block_cache_bytes = 64 * 1024; /* lots of eviction */
		break;
	case 2:
		c->opt.compression = STORE_COMPRESSION_NONE;
		c->opt.filter = (struct store_filter){STORE_FILTER_QUOTIENT, 8, 1};
		c->opt.block_restart_interval = 1;
		break;
	default:
		c->opt.compression = STORE_COMPRESSION_LZ4;
		c->opt.filter = (struct store_filter){STORE_FILTER_ELASTIC, 3, 4};
		c->opt.block_restart_interval = 4;
		c->opt.max_open_files = 20; /* table cache eviction */
		break;
	}
	c->opt.log = tu_log_fn;
	c->opt.log_ctx = &c->log;
}

START_TEST(test_model)
{
	uint64_t only = tu_env_u64("LSMFS_MODEL_CASE", UINT64_MAX);
	if (only != UINT64_MAX && only != (uint64_t)_i)
		return;
	uint64_t nops = tu_env_u64("LSMFS_MODEL_OPS", 250000);
	if (tu_soak())
		nops *= 8;

	struct ctx *c = calloc(1, sizeof(*c));
	ck_assert_ptr_nonnull(c);
	c->tcase = _i;
	uint64_t base = base_seed;
	c->seed = tu_mix64(base + (uint64_t)_i);
	fprintf(stderr, "model case %d: seed=%" PRIu64 " (base %" PRIu64
		", replay: LSMFS_SEED=%" PRIu64 " LSMFS_MODEL_CASE=%d), %" PRIu64
		" ops\n", _i, c->seed, base, base, _i, nops);
	tu_rng_init(&c->rng, c->seed);
	ks_init(&c->ks, NKEYS);
	c->model = calloc(c->ks.n, sizeof(*c->model));
	ck_assert_ptr_nonnull(c->model);
	tu_log_init(&c->log, false);
	c->dir = tu_mkdtemp("model");
	configure(c);
	c->opname = "open";
	ctx_open(c);
	uint64_t t0 = tu_now_ms();

	for (c->op = 0; c->op < nops; c->op++) {
		uint64_t k = tu_rng_below(&c->rng, 10000);
		if (k < 3000) {
			c->opname = "put";
			do_put(c);
		} else if (k < 4000) {
			c->opname = "delete";
			do_delete(c);
		} else if (k < 4600) {
			c->opname = "batch";
			do_batch(c);
		} else if (k < 7600) {
			c->opname = "get";
			do_get(c, NULL);
		} else if (k < 8200) {
			c->opname = "snapshot get";
			if (c->nsnaps)
				do_get(c, &c->snaps[tu_rng_below(&c->rng, (uint64_t)c->nsnaps)]);
		} else if (k < 8300) {
			c->opname = "snapshot new";
			do_snapshot_new(c);
		} else if (k < 8400) {
			c->opname = "snapshot release";
			do_snapshot_release(c);
		} else if (k < 9950) {
			c->opname = "iterate";
			do_iter_session(c, false);
		} else if (k < 9970) {
			c->opname = "flush";
			int rc = store_flush(c->st);
			CHECK(c, rc == 0, "flush: %d", rc);
			c->n_flush++;
		} else if (k < 9980) {
			c->opname = "compact_range";
			do_compact(c);
		} else if (k < 9982) {
			c->opname = "reopen";
			do_reopen(c);
		} else if (k < 9984) {
			c->opname = "full scan";
			do_iter_session(c, true);
		} else {
			/* Snapshot reads survive flushes and compactions: read
			 * through the oldest snapshot after one. */
			c->opname = "get after flush";
			if (c->nsnaps) {
				int rc = store_flush(c->st);
				CHECK(c, rc == 0, "flush: %d", rc);
				for (int i = 0; i < 20; i++)
					do_get(c, &c->snaps[0]);
			}
		}
	}
	struct store_stats s;
	store_get_stats(c->st, &s);
	fprintf(stderr,
		"model case %d: %" PRIu64 " ops in %.1f s: put %" PRIu64 " del %" PRIu64
		" batch %" PRIu64 " get %" PRIu64 " iter steps %" PRIu64
		" flush %" PRIu64 " compact %" PRIu64 " reopen %" PRIu64
		" snaps %" PRIu64 "; live keys %zu; store: flushes %" PRIu64
		" compactions %" PRIu64 " wamp %.2f levels",
		_i, nops, (double)(tu_now_ms() - t0) / 1000.0, c->n_put, c->n_del,
		c->n_batch, c->n_get, c->n_iter_steps, c->n_flush, c->n_compact,
		c->n_reopen, c->n_snap, c->live, s.flushes, s.compactions,
		store_stats_write_amp(&s));
	for (int l = 0; l < STORE_MAX_LEVELS; l++)
		fprintf(stderr, " %" PRIu64, s.level_files[l]);
	fprintf(stderr, "\n");

	verify_all(c);
	c->opname = "final reopen";
	do_reopen(c);
	verify_all(c);
	/* A final full compaction and the same again. */
	c->opname = "final compaction";
	int rc = store_compact_range(c->st, NULL, 0, NULL, 0);
	CHECK(c, rc == 0, "compact_range: %d", rc);
	verify_all(c);

	ctx_close(c);
	for (size_t r = 0; r < c->ks.n; r++)
		val_unref(c->model[r]);
	free(c->model);
	ks_free(&c->ks);
	tu_log_free(&c->log);
	tu_rmrf(c->dir);
	free(c->dir);
	free(c);
}
END_TEST

static Suite *model_suite(void)
{
	Suite *s = suite_create("model");
	TCase *tc = tcase_create("model");
	tcase_set_timeout(tc, tu_soak() ? 36000 : 1200);
	tcase_add_loop_test(tc, test_model, 0, NCASES);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* One base seed for every case (the cases run in forked children). */
	base_seed = tu_seed("model");
	SRunner *sr = srunner_create(model_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
