/*
 * filter_cache: the store-wide filter memory budget, and ElasticBF's
 * hotness-driven loading of filter parts.  FILTERS.md "Filter memory".
 *
 * Every open table with a filter is attached here.  With no budget (0),
 * every part of every table is loaded at attach and stays: lookups take no
 * lock.  With a budget, parts are loaded and dropped so that the bytes in
 * memory never exceed it:
 *   - at attach, a table gets its first part when it fits;
 *   - each lookup counts an access (two relaxed atomics);
 *   - a background thread folds the accesses into each table's heat,
 *     halved every FILTER_LIFE lookups of the store (seed 003's "expired"
 *     tables are the ones whose heat fell that way), and loads one more
 *     part for a table when the expected false positives it saves,
 *     heat * (fpr(u) - fpr(u + 1)), exceed what dropping parts of colder
 *     tables costs, sum of heat * (fpr(u - 1) - fpr(u)), or when the
 *     budget has room;
 *   - victims come from the multi-queue (one list per number of parts
 *     loaded): the parts whose loss costs the fewest expected false
 *     positives; an ElasticBF table keeps its last unit (a one-part
 *     filter goes whole).
 * Part bytes are read by the thread, outside every lock but the table's
 * own "loading" mark, through the loader the table gave at attach.
 *
 * Locking: mu guards the lists, the byte count and each table's managed
 * state; a table's rwlock guards its loaded parts against the lookups
 * (readers) while the thread changes them (writer).  Order: mu, then a
 * table's rwlock.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filter.h"

#define FILTER_LIFE 100000 /* store lookups per halving of a table's heat */

struct filter_cache {
	uint64_t budget; /* 0: no bound */
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* the thread's wakeup; and a load's end */
	pthread_t thread;
	bool running, stopping;
	struct table_filter *queue[FILTER_MAX_PARTS + 1]; /* by parts loaded */
	uint64_t bytes;         /* of parts in memory */
	atomic_uint_least64_t tick; /* lookups, store-wide */
	atomic_uint_least64_t loads, drops, load_errors;
	uint64_t last_fold;     /* tick of the last heat fold */
};

static unsigned loaded_count(const struct table_filter *f)
{
	return (unsigned)__builtin_popcount(f->loaded);
}

static void queue_remove(struct filter_cache *fc, struct table_filter *f)
{
	unsigned q = loaded_count(f);
	if (f->prev)
		f->prev->next = f->next;
	else
		fc->queue[q] = f->next;
	if (f->next)
		f->next->prev = f->prev;
	f->next = f->prev = NULL;
}

static void queue_add(struct filter_cache *fc, struct table_filter *f)
{
	unsigned q = loaded_count(f);
	f->prev = NULL;
	f->next = fc->queue[q];
	if (f->next)
		f->next->prev = f;
	fc->queue[q] = f;
}

/* The false-positive rate with u of the table's parts loaded. */
static double fpr_with(const struct table_filter *f, unsigned u)
{
	const struct store_filter *p = &f->desc.params;
	if (u == 0)
		return 1.0;
	switch (p->kind) {
	case STORE_FILTER_ELASTIC:
		return pow(bloom_fpr(p->bits), (double)u);
	case STORE_FILTER_BLOOM:
		return bloom_fpr(p->bits ? p->bits : 10);
	case STORE_FILTER_QUOTIENT:
		return ldexp(QF_MAX_LOAD, -(int)p->bits);
	case STORE_FILTER_NONE:
		break;
	}
	return 1.0;
}

/* Part i in memory (mu and the table's write lock held). */
static void publish(struct filter_cache *fc, struct table_filter *f, unsigned i, void *mem,
		    const uint8_t *data, size_t len)
{
	queue_remove(fc, f);
	table_filter_keep(f, i, mem, data, len);
	fc->bytes += len;
	queue_add(fc, f);
}

/* Drop the highest loaded part (mu held; takes the table's write lock). */
static void drop_one(struct filter_cache *fc, struct table_filter *f)
{
	unsigned i = 31u - (unsigned)__builtin_clz(f->loaded);
	pthread_rwlock_wrlock(&f->lock);
	queue_remove(fc, f);
	void *mem = f->mem[i];
	fc->bytes -= f->len[i];
	f->bytes -= f->len[i];
	f->loaded &= ~(1u << i);
	f->mem[i] = NULL;
	f->data[i] = NULL;
	f->len[i] = 0;
	queue_add(fc, f);
	pthread_rwlock_unlock(&f->lock);
	free(mem);
	atomic_fetch_add_explicit(&fc->drops, 1, memory_order_relaxed);
}

/* The next part a table would load: the lowest not loaded, or -1. */
static int next_part(const struct table_filter *f)
{
	for (unsigned i = 0; i < f->desc.nparts; i++)
		if (!(f->loaded & (1u << i)) && !(f->bad & (1u << i)))
			return (int)i;
	return -1;
}

/* Read part i of f with mu dropped (f->loading keeps f attached), then
 * publish it if it still fits.  Returns with mu held. */
static void load_part(struct filter_cache *fc, struct table_filter *f, unsigned i)
{
	f->loading = true;
	pthread_mutex_unlock(&fc->mu);
	void *mem = NULL;
	const uint8_t *data = NULL;
	size_t len = 0;
	int rc = f->loader(f->loader_ctx, i, &mem, &data, &len);
	pthread_mutex_lock(&fc->mu);
	f->loading = false;
	pthread_cond_broadcast(&fc->cv);
	if (rc) {
		f->bad |= 1u << i; /* reported by the loader; never tried again */
		atomic_fetch_add_explicit(&fc->load_errors, 1, memory_order_relaxed);
		return;
	}
	if (f->detaching || (fc->budget && fc->bytes + len > fc->budget)) {
		free(mem);
		return;
	}
	pthread_rwlock_wrlock(&f->lock);
	publish(fc, f, i, mem, data, len);
	pthread_rwlock_unlock(&f->lock);
	atomic_fetch_add_explicit(&fc->loads, 1, memory_order_relaxed);
}

/* Fold the accesses counted since the last fold into each table's heat. */
static void fold_heat(struct filter_cache *fc)
{
	uint64_t now = atomic_load_explicit(&fc->tick, memory_order_relaxed);
	double decay = pow(0.5, (double)(now - fc->last_fold) / FILTER_LIFE);
	fc->last_fold = now;
	for (unsigned q = 0; q <= FILTER_MAX_PARTS; q++)
		for (struct table_filter *f = fc->queue[q]; f; f = f->next) {
			uint64_t a = atomic_exchange_explicit(&f->accesses, 0, memory_order_relaxed);
			f->heat = f->heat * decay + (double)a;
		}
}

/*
 * Victims for `need` bytes outside `hot`: one part each, the ones whose
 * loss costs the fewest expected false positives (heat * (fpr(u - 1) -
 * fpr(u))) first, searched over the multi-queue from the most parts
 * down; an ElasticBF table keeps its last unit (a one-part filter goes
 * whole).  Their total cost in *cost; false when not enough bytes can be
 * found.
 */
static bool pick_victims(struct filter_cache *fc, const struct table_filter *hot, size_t need,
			 struct table_filter **v, unsigned *nv, double *cost)
{
	*nv = 0;
	*cost = 0;
	size_t got = 0;
	while (got < need && *nv < FILTER_VICTIMS_MAX) {
		struct table_filter *best = NULL;
		double best_cost = 0;
		for (unsigned q = FILTER_MAX_PARTS; q >= 1; q--) {
			for (struct table_filter *f = fc->queue[q]; f; f = f->next) {
				bool taken = false;
				for (unsigned j = 0; j < *nv; j++)
					taken |= v[j] == f;
				if (f == hot || taken || f->loading || (q == 1 && f->desc.nparts > 1))
					continue;
				double c = f->heat * (fpr_with(f, q - 1) - fpr_with(f, q));
				if (!best || c < best_cost) {
					best = f;
					best_cost = c;
				}
			}
		}
		if (!best)
			break;
		unsigned top = 31u - (unsigned)__builtin_clz(best->loaded);
		v[(*nv)++] = best;
		got += best->len[top];
		*cost += best_cost;
	}
	return got >= need;
}

/* One adjustment: the table whose next part saves the most, loaded when
 * it fits or when dropping colder parts pays for it.  false: nothing to do. */
static bool adjust_once(struct filter_cache *fc)
{
	struct table_filter *hot = NULL;
	double gain = 0;
	for (unsigned q = 0; q < FILTER_MAX_PARTS; q++)
		for (struct table_filter *f = fc->queue[q]; f; f = f->next) {
			if (f->loading || f->detaching || next_part(f) < 0)
				continue;
			double g = f->heat * (fpr_with(f, q) - fpr_with(f, q + 1));
			if (g > gain) {
				gain = g;
				hot = f;
			}
		}
	if (!hot)
		return false;
	unsigned i = (unsigned)next_part(hot);
	size_t need = (size_t)hot->desc.parts[i].size;
	if (fc->budget && fc->bytes + need > fc->budget) {
		struct table_filter *v[FILTER_VICTIMS_MAX];
		unsigned nv;
		double cost;
		size_t over = (size_t)(fc->bytes + need - fc->budget);
		if (!pick_victims(fc, hot, over, v, &nv, &cost) || cost >= gain)
			return false;
		for (unsigned j = 0; j < nv; j++)
			drop_one(fc, v[j]);
	}
	load_part(fc, hot, i);
	return true;
}

static void *filter_thread(void *arg)
{
	struct filter_cache *fc = arg;
	pthread_mutex_lock(&fc->mu);
	while (!fc->stopping) {
		fold_heat(fc);
		for (int k = 0; k < 64 && !fc->stopping && adjust_once(fc); k++)
			;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&fc->cv, &fc->mu, &ts);
	}
	pthread_mutex_unlock(&fc->mu);
	return NULL;
}

int filter_cache_new(uint64_t budget, struct filter_cache **out)
{
	*out = NULL;
	struct filter_cache *fc = calloc(1, sizeof(*fc));
	if (!fc)
		return -ENOMEM;
	fc->budget = budget;
	pthread_mutex_init(&fc->mu, NULL);
	pthread_cond_init(&fc->cv, NULL);
	if (budget) {
		int rc = pthread_create(&fc->thread, NULL, filter_thread, fc);
		if (rc) {
			pthread_cond_destroy(&fc->cv);
			pthread_mutex_destroy(&fc->mu);
			free(fc);
			return -rc;
		}
		fc->running = true;
	}
	*out = fc;
	return 0;
}

void filter_cache_free(struct filter_cache *fc)
{
	if (!fc)
		return;
	if (fc->running) {
		pthread_mutex_lock(&fc->mu);
		fc->stopping = true;
		pthread_cond_broadcast(&fc->cv);
		pthread_mutex_unlock(&fc->mu);
		pthread_join(fc->thread, NULL);
	}
	pthread_cond_destroy(&fc->cv);
	pthread_mutex_destroy(&fc->mu);
	free(fc);
}

void filter_cache_attach(struct filter_cache *fc, struct table_filter *f,
			 int (*loader)(void *ctx, unsigned part, void **mem,
				       const uint8_t **data, size_t *len),
			 void *ctx)
{
	f->loader = loader;
	f->loader_ctx = ctx;
	f->managed = fc->budget != 0;
	/* Writers first: lookups of a hot table hold its read lock nearly
	 * all the time, and glibc's default lets them starve the thread
	 * that would load its next part. */
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&f->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_lock(&fc->mu);
	queue_add(fc, f);
	f->attached = true;
	/* No budget: every part now.  A budget: the first part, if it fits. */
	for (unsigned i = 0; i < f->desc.nparts; i++) {
		if (f->managed && (i > 0 || fc->bytes + f->desc.parts[i].size > fc->budget))
			break;
		load_part(fc, f, i);
	}
	pthread_mutex_unlock(&fc->mu);
}

void filter_cache_detach(struct filter_cache *fc, struct table_filter *f)
{
	if (!f->attached)
		return;
	pthread_mutex_lock(&fc->mu);
	f->detaching = true;
	while (f->loading)
		pthread_cond_wait(&fc->cv, &fc->mu);
	queue_remove(fc, f);
	fc->bytes -= f->bytes;
	f->attached = false;
	pthread_mutex_unlock(&fc->mu);
	pthread_rwlock_destroy(&f->lock);
}

bool filter_cache_may_contain(struct filter_cache *fc, struct table_filter *f, uint64_t h,
			      bool *consulted)
{
	if (!f->managed) {
		*consulted = f->loaded != 0;
		return table_filter_may_contain(f, h);
	}
	atomic_fetch_add_explicit(&fc->tick, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&f->accesses, 1, memory_order_relaxed);
	pthread_rwlock_rdlock(&f->lock);
	*consulted = f->loaded != 0;
	bool may = table_filter_may_contain(f, h);
	pthread_rwlock_unlock(&f->lock);
	return may;
}

void filter_cache_stats(struct filter_cache *fc, struct filter_cache_stats *s)
{
	pthread_mutex_lock(&fc->mu);
	s->bytes = fc->bytes;
	s->budget = fc->budget;
	memset(s->tables_by_parts, 0, sizeof(s->tables_by_parts));
	for (unsigned q = 0; q <= FILTER_MAX_PARTS; q++)
		for (struct table_filter *f = fc->queue[q]; f; f = f->next)
			s->tables_by_parts[q]++;
	pthread_mutex_unlock(&fc->mu);
	s->loads = atomic_load(&fc->loads);
	s->drops = atomic_load(&fc->drops);
	s->load_errors = atomic_load(&fc->load_errors);
}
