/*
 * table_cache: a bounded LRU map from table number to open sst_reader,
 * with reference counts (the block cache's design, for readers).
 *
 * An entry is cached (in the hash table) or detached (evicted while in
 * use).  refs counts the table's reference while cached plus one per
 * user; a cached entry with refs == 1 is idle and sits on the LRU list.
 * When more than max_open entries are cached, idle ones are evicted
 * oldest first; readers in use are never closed: a detached entry's reader
 * is closed at its last release.  The reader points back at its entry
 * (sst_reader_owner) so a release is O(1).
 *
 * Locking: one mutex guards the table, the list and every refs field.
 * Tables are opened and readers closed outside it, so a slow open blocks
 * nobody; two threads missing the same table may both open it, and the
 * loser closes its copy.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "sst.h"

struct tc_entry {
	uint64_t number;
	struct sst_reader *reader;
	unsigned refs;
	bool in_cache;
	struct tc_entry *hash_next;
	struct tc_entry *lru_prev, *lru_next; /* only while cached and idle */
};

struct table_cache {
	struct store_env *env;
	char *dir;
	size_t max_open;
	struct block_cache *cache;
	struct sst_counters *counters;
	pthread_mutex_t mu;
	struct tc_entry **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;    /* cached entries */
	struct tc_entry lru; /* sentinel: lru.lru_next is the oldest */
};

void sst_file_name(char *out, size_t len, const char *dir, uint64_t number)
{
	snprintf(out, len, "%s/%06llu.sst", dir, (unsigned long long)number);
}

struct table_cache *table_cache_new(struct store_env *env, const char *dir,
				    int max_open, struct block_cache *cache,
				    struct sst_counters *counters)
{
	struct table_cache *tc = calloc(1, sizeof(*tc));
	if (!tc)
		return NULL;
	tc->env = env;
	tc->max_open = max_open >= 1 ? (size_t)max_open : 1;
	tc->cache = cache;
	tc->counters = counters;
	tc->lru.lru_next = tc->lru.lru_prev = &tc->lru;
	tc->nbuckets = 16;
	while (tc->nbuckets < tc->max_open && tc->nbuckets < (1u << 16))
		tc->nbuckets *= 2;
	tc->buckets = calloc(tc->nbuckets, sizeof(*tc->buckets));
	tc->dir = strdup(dir);
	if (!tc->buckets || !tc->dir || pthread_mutex_init(&tc->mu, NULL)) {
		free(tc->buckets);
		free(tc->dir);
		free(tc);
		return NULL;
	}
	return tc;
}

/* ---- table and list (mu held) ---- */

static struct tc_entry **find(struct table_cache *tc, uint64_t number)
{
	/* Fibonacci hashing spreads consecutive file numbers. */
	size_t b = (size_t)((number * UINT64_C(0x9e3779b97f4a7c15)) >> 32) &
		   (tc->nbuckets - 1);
	struct tc_entry **p = &tc->buckets[b];
	while (*p && (*p)->number != number)
		p = &(*p)->hash_next;
	return p;
}

static void lru_remove(struct tc_entry *e)
{
	e->lru_prev->lru_next = e->lru_next;
	e->lru_next->lru_prev = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_append(struct table_cache *tc, struct tc_entry *e)
{
	e->lru_next = &tc->lru;
	e->lru_prev = tc->lru.lru_prev;
	e->lru_prev->lru_next = e;
	tc->lru.lru_prev = e;
}

/* Drop a reference; an entry at 0 goes on *dead (closed after unlock). */
static void unref(struct table_cache *tc, struct tc_entry *e,
		  struct tc_entry **dead)
{
	e->refs--;
	if (e->refs == 0) {
		e->hash_next = *dead;
		*dead = e;
	} else if (e->in_cache && e->refs == 1) {
		lru_append(tc, e);
	}
}

static void detach(struct table_cache *tc, struct tc_entry **link,
		   struct tc_entry **dead)
{
	struct tc_entry *e = *link;
	*link = e->hash_next;
	e->hash_next = NULL;
	if (e->refs == 1)
		lru_remove(e);
	e->in_cache = false;
	tc->count--;
	unref(tc, e, dead);
}

static void evict(struct table_cache *tc, struct tc_entry **dead)
{
	while (tc->count > tc->max_open && tc->lru.lru_next != &tc->lru) {
		struct tc_entry *e = tc->lru.lru_next;
		detach(tc, find(tc, e->number), dead);
	}
}

static void close_dead(struct tc_entry *dead)
{
	while (dead) {
		struct tc_entry *next = dead->hash_next;
		sst_close(dead->reader);
		free(dead);
		dead = next;
	}
}

/* ---- public API ---- */

void table_cache_free(struct table_cache *tc)
{
	if (!tc)
		return;
	struct tc_entry *dead = NULL;
	for (size_t b = 0; b < tc->nbuckets; b++)
		while (tc->buckets[b]) /* REQUIRES: no reader in use */
			detach(tc, &tc->buckets[b], &dead);
	close_dead(dead);
	pthread_mutex_destroy(&tc->mu);
	free(tc->buckets);
	free(tc->dir);
	free(tc);
}

int table_cache_get(struct table_cache *tc, uint64_t number, uint64_t size,
		    struct sst_reader **out, char **errmsg)
{
	pthread_mutex_lock(&tc->mu);
	struct tc_entry *e = *find(tc, number);
	if (e) {
		if (e->refs == 1)
			lru_remove(e);
		e->refs++;
		pthread_mutex_unlock(&tc->mu);
		*out = e->reader;
		return 0;
	}
	pthread_mutex_unlock(&tc->mu);

	char path[4096];
	sst_file_name(path, sizeof(path), tc->dir, number);
	struct sst_reader *r;
	int rc = sst_open(tc->env, path, number, size, tc->cache, tc->counters,
			  &r, errmsg);
	if (rc)
		return rc;
	struct tc_entry *ne = calloc(1, sizeof(*ne));
	if (!ne) {
		sst_close(r);
		return -ENOMEM;
	}
	ne->number = number;
	ne->reader = r;
	ne->refs = 2; /* the table's and the caller's */
	ne->in_cache = true;
	sst_reader_set_owner(r, ne);

	struct tc_entry *dead = NULL;
	pthread_mutex_lock(&tc->mu);
	struct tc_entry **link = find(tc, number);
	if (*link) {
		/* Another thread opened it meanwhile: use theirs. */
		e = *link;
		if (e->refs == 1)
			lru_remove(e);
		e->refs++;
		ne->refs = 0;
		ne->hash_next = NULL;
		dead = ne;
	} else {
		e = ne;
		*link = e;
		tc->count++;
		evict(tc, &dead);
	}
	pthread_mutex_unlock(&tc->mu);
	close_dead(dead);
	*out = e->reader;
	return 0;
}

void table_cache_release(struct table_cache *tc, struct sst_reader *r)
{
	struct tc_entry *e = sst_reader_owner(r);
	struct tc_entry *dead = NULL;
	pthread_mutex_lock(&tc->mu);
	unref(tc, e, &dead);
	/* Entries in use may have held the table over its bound. */
	evict(tc, &dead);
	pthread_mutex_unlock(&tc->mu);
	close_dead(dead);
}

void table_cache_evict(struct table_cache *tc, uint64_t number)
{
	struct tc_entry *dead = NULL;
	pthread_mutex_lock(&tc->mu);
	struct tc_entry **link = find(tc, number);
	if (*link)
		detach(tc, link, &dead);
	pthread_mutex_unlock(&tc->mu);
	close_dead(dead);
}

static void iter_done(void *a, void *b)
{
	table_cache_release(a, b);
}

struct iter *table_cache_iter(struct table_cache *tc, uint64_t number,
			      uint64_t size, bool fill_cache)
{
	struct sst_reader *r;
	char *msg = NULL;
	int rc = table_cache_get(tc, number, size, &r, &msg);
	/* An iterator has no message channel: report, and let its status
	 * carry the error. */
	if (rc && msg && tc->counters && tc->counters->report)
		tc->counters->report(tc->counters->report_ctx, msg);
	free(msg);
	if (rc)
		return iter_new_error(rc);
	struct iter *it = sst_iter_new(r, fill_cache);
	if (!it) {
		table_cache_release(tc, r);
		return iter_new_error(-ENOMEM);
	}
	sst_iter_on_destroy(it, iter_done, tc, r);
	return it;
}
