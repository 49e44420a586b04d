/*
 * cache: the block cache, a sharded LRU of immutable values keyed by
 * (file number, block offset) and bounded by the sum of their charges.
 *
 * Sharding: 16 shards picked by the top bits of a hash of (file, offset);
 * the capacity is split evenly across them (the first capacity % 16 shards
 * get one byte more).  LRU order and eviction are per shard.
 *
 * An entry (struct cache_handle is the entry) is in one of three states:
 *   cached, unpinned:  in the shard's table and on its LRU list; refs == 1
 *   cached, pinned:    in the table, on no list; refs == 1 + handles
 *   detached, pinned:  evicted or replaced while pinned (or never cached:
 *                      capacity 0, or a charge above the shard capacity);
 *                      in no table and no list; refs == handles
 * refs counts the table's reference (while cached) plus one per handle.
 * When refs reaches 0 the deleter runs, always after the shard lock is
 * dropped.  A pinned entry is never evicted or freed.
 *
 * Invariants per shard: usage == sum of charges of cached entries (pinned
 * or not); after any operation either usage <= capacity or the LRU list
 * is empty (only pinned entries hold the excess).  Eviction takes the
 * least recently released entries first.
 *
 * Locking: one mutex per shard guards its table, list, usage and every
 * entry's refs/links.  value, charge and key are immutable after insert,
 * so block_cache_value() needs no lock.  Hit and miss counters are relaxed
 * atomics.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <xxhash.h>

#include "coding.h"
#include "sst.h"

#define CACHE_SHARD_BITS 4
#define CACHE_SHARDS (1u << CACHE_SHARD_BITS)
#define CACHE_INITIAL_BUCKETS 16u

struct cache_handle {
	uint64_t file;
	uint64_t offset;
	uint64_t hash;
	void *value;
	size_t charge;
	void (*deleter)(void *value);
	struct cache_handle *next_hash; /* bucket chain */
	struct cache_handle *lru_prev;  /* LRU list, only while cached+unpinned */
	struct cache_handle *lru_next;
	uint32_t refs;
	bool in_cache;
};

struct shard {
	pthread_mutex_t mu;
	size_t capacity;
	size_t usage;
	struct cache_handle **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;    /* cached entries */
	/* Sentinel of the circular LRU list: lru.lru_next is the oldest. */
	struct cache_handle lru;
};

struct block_cache {
	size_t capacity;
	atomic_uint_least64_t hits;
	atomic_uint_least64_t misses;
	struct shard shards[CACHE_SHARDS];
};

static uint64_t key_hash(uint64_t file, uint64_t offset)
{
	uint8_t k[16];
	put_le64(k, file);
	put_le64(k + 8, offset);
	return XXH3_64bits(k, sizeof(k));
}

static struct shard *shard_of(struct block_cache *c, uint64_t hash)
{
	return &c->shards[hash >> (64 - CACHE_SHARD_BITS)];
}

/* ---- hash table (caller holds the shard lock) ---- */

/* The link that points at the entry with this key, or at the NULL ending
 * its chain. */
static struct cache_handle **table_find(struct shard *s, uint64_t file,
					uint64_t offset, uint64_t hash)
{
	struct cache_handle **p = &s->buckets[hash & (s->nbuckets - 1)];
	while (*p && ((*p)->file != file || (*p)->offset != offset))
		p = &(*p)->next_hash;
	return p;
}

/* Double the bucket array; on allocation failure keep the old one (the
 * chains just get longer). */
static void table_grow(struct shard *s)
{
	size_t n = s->nbuckets * 2;
	struct cache_handle **b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < s->nbuckets; i++) {
		struct cache_handle *e = s->buckets[i];
		while (e) {
			struct cache_handle *next = e->next_hash;
			struct cache_handle **head = &b[e->hash & (n - 1)];
			e->next_hash = *head;
			*head = e;
			e = next;
		}
	}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
}

/* ---- LRU list (caller holds the shard lock) ---- */

static void lru_remove(struct cache_handle *e)
{
	e->lru_prev->lru_next = e->lru_next;
	e->lru_next->lru_prev = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

/* Append as the most recently used. */
static void lru_append(struct shard *s, struct cache_handle *e)
{
	e->lru_next = &s->lru;
	e->lru_prev = s->lru.lru_prev;
	e->lru_prev->lru_next = e;
	s->lru.lru_prev = e;
}

/* ---- entry lifetime (caller holds the shard lock) ---- */

/*
 * Drop one reference.  An entry that reaches 0 is pushed on *dead for the
 * caller to free after unlocking; a cached entry that becomes unpinned goes
 * to the MRU end of the LRU list.
 */
static void unref(struct shard *s, struct cache_handle *e,
		  struct cache_handle **dead)
{
	assert(e->refs > 0);
	e->refs--;
	if (e->refs == 0) {
		e->next_hash = *dead;
		*dead = e;
	} else if (e->in_cache && e->refs == 1) {
		lru_append(s, e);
	}
}

/* Take a cached entry out of the table (via its link) and the list, and
 * drop the table's reference. */
static void detach(struct shard *s, struct cache_handle **link,
		   struct cache_handle **dead)
{
	struct cache_handle *e = *link;
	*link = e->next_hash;
	e->next_hash = NULL;
	if (e->refs == 1)
		lru_remove(e);
	e->in_cache = false;
	s->count--;
	s->usage -= e->charge;
	unref(s, e, dead);
}

static void evict(struct shard *s, struct cache_handle **dead)
{
	while (s->usage > s->capacity && s->lru.lru_next != &s->lru) {
		struct cache_handle *e = s->lru.lru_next;
		detach(s, table_find(s, e->file, e->offset, e->hash), dead);
	}
}

static void free_dead(struct cache_handle *dead)
{
	while (dead) {
		struct cache_handle *next = dead->next_hash;
		dead->deleter(dead->value);
		free(dead);
		dead = next;
	}
}

/* ---- public API ---- */

struct block_cache *block_cache_new(size_t capacity_bytes)
{
	struct block_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->capacity = capacity_bytes;
	atomic_init(&c->hits, 0);
	atomic_init(&c->misses, 0);
	unsigned i;
	for (i = 0; i < CACHE_SHARDS; i++) {
		struct shard *s = &c->shards[i];
		s->capacity = capacity_bytes / CACHE_SHARDS +
			      (i < capacity_bytes % CACHE_SHARDS ? 1 : 0);
		s->lru.lru_next = s->lru.lru_prev = &s->lru;
		s->nbuckets = CACHE_INITIAL_BUCKETS;
		s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
		if (!s->buckets)
			goto fail;
		if (pthread_mutex_init(&s->mu, NULL)) {
			free(s->buckets);
			goto fail;
		}
	}
	return c;
fail:
	while (i-- > 0) {
		pthread_mutex_destroy(&c->shards[i].mu);
		free(c->shards[i].buckets);
	}
	free(c);
	return NULL;
}

void block_cache_free(struct block_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < CACHE_SHARDS; i++) {
		struct shard *s = &c->shards[i];
		struct cache_handle *dead = NULL;
		for (size_t b = 0; b < s->nbuckets; b++) {
			while (s->buckets[b]) {
				/* REQUIRES: no handle outstanding. */
				assert(s->buckets[b]->refs == 1);
				detach(s, &s->buckets[b], &dead);
			}
		}
		free_dead(dead);
		free(s->buckets);
		pthread_mutex_destroy(&s->mu);
	}
	free(c);
}

struct cache_handle *block_cache_lookup(struct block_cache *c, uint64_t file,
					uint64_t offset)
{
	uint64_t hash = key_hash(file, offset);
	struct shard *s = shard_of(c, hash);
	pthread_mutex_lock(&s->mu);
	struct cache_handle *e = *table_find(s, file, offset, hash);
	if (e) {
		if (e->refs == 1)
			lru_remove(e); /* pinned entries live on no list */
		e->refs++;
	}
	pthread_mutex_unlock(&s->mu);
	atomic_fetch_add_explicit(e ? &c->hits : &c->misses, 1,
				  memory_order_relaxed);
	return e;
}

struct cache_handle *block_cache_insert(struct block_cache *c, uint64_t file,
					uint64_t offset, void *value,
					size_t charge,
					void (*deleter)(void *value))
{
	struct cache_handle *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->file = file;
	e->offset = offset;
	e->hash = key_hash(file, offset);
	e->value = value;
	e->charge = charge;
	e->deleter = deleter;
	e->refs = 1; /* the caller's handle */

	struct shard *s = shard_of(c, e->hash);
	struct cache_handle *dead = NULL;
	pthread_mutex_lock(&s->mu);
	struct cache_handle **link = table_find(s, file, offset, e->hash);
	if (*link)
		detach(s, link, &dead); /* the old entry is stale now */
	/*
	 * Capacity 0 retains nothing; an entry larger than its shard would
	 * only flush the shard and then be evicted at its release, so it is
	 * handed back uncached as well.
	 */
	if (c->capacity > 0 && charge <= s->capacity) {
		e->in_cache = true;
		e->refs++; /* the table's reference */
		link = table_find(s, file, offset, e->hash);
		*link = e;
		s->count++;
		s->usage += charge;
		evict(s, &dead);
		if (s->count > s->nbuckets)
			table_grow(s);
	}
	pthread_mutex_unlock(&s->mu);
	free_dead(dead);
	return e;
}

void *block_cache_value(struct cache_handle *h)
{
	return h->value;
}

void block_cache_release(struct block_cache *c, struct cache_handle *h)
{
	struct shard *s = shard_of(c, h->hash);
	struct cache_handle *dead = NULL;
	pthread_mutex_lock(&s->mu);
	unref(s, h, &dead);
	/* Pinned entries may have held the shard over capacity. */
	evict(s, &dead);
	pthread_mutex_unlock(&s->mu);
	free_dead(dead);
}

void block_cache_stats(struct block_cache *c, uint64_t *hits, uint64_t *misses,
		       uint64_t *bytes_in_use)
{
	if (hits)
		*hits = atomic_load_explicit(&c->hits, memory_order_relaxed);
	if (misses)
		*misses = atomic_load_explicit(&c->misses, memory_order_relaxed);
	if (bytes_in_use) {
		uint64_t total = 0;
		for (unsigned i = 0; i < CACHE_SHARDS; i++) {
			struct shard *s = &c->shards[i];
			pthread_mutex_lock(&s->mu);
			total += s->usage;
			pthread_mutex_unlock(&s->mu);
		}
		*bytes_in_use = total;
	}
}
