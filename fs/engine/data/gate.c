/*
 * gate.c: section gates, so that a section's chunk files can move to
 * another disk while files are read and written (SCHEMA.md, "Moving a
 * section"; the mover is move.c).
 *
 * Every use of a chunk file, from resolving its path to the end of the
 * read, write, truncate or removal, happens inside the gate of its
 * section: section_enter counts the thread in, section_release counts it
 * out.  The mover freezes one section at a time (section_freeze): new
 * entries wait, and the freeze returns once every thread inside has left.
 * While frozen, the mover finishes the copy and switches the map entry;
 * bumping the section's generation makes every chunk fd cached on the old
 * copy stale (chunk.c compares it at each chunk_open).
 *
 * While a section moves, every change to one of its chunk files is
 * recorded with (ino, chunk): counted busy from its entry to its release,
 * and dirty from then on, so that the mover copies again exactly the
 * chunks changed since it copied them, and only once nobody is changing
 * them.
 *
 * Entering is lock-free unless the section is frozen: an atomic count per
 * section, checked against the one frozen section (sequentially consistent
 * on both sides, so either the entering thread sees the freeze or the
 * freezer sees the count).  A thread may enter a section it is already
 * in: the gates it holds are on a thread-local stack, and re-entering
 * counts nothing.  Gates are the
 * innermost lock: nothing that waits for an inode lock or a gate is done
 * while holding one, except entering another section's gate (only one is
 * ever frozen, and its holders do not wait for the freezer).
 */
#include "data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HELD_MAX 64

struct held {
	struct fs *fs;
	uint32_t section;
	bool counted;   /* this entry added to inflight (the first for its section) */
	bool change;    /* (ino, chunk) is busy in the move's change set */
	uint64_t ino, chunk;
};

static _Thread_local struct {
	struct held h[HELD_MAX];
	int n;
} held;

int gate_init(struct fs *fs)
{
	struct section_gates *g = &fs->gates;
	uint32_t n = fs->info.sections;
	g->inflight = calloc(n, sizeof(*g->inflight));
	g->gen = calloc(n, sizeof(*g->gen));
	if (!g->inflight || !g->gen)
		return -ENOMEM;
	g->frozen = UINT32_MAX;
	g->moving = UINT32_MAX;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->initialized = true;
	return 0;
}

static void changes_clear(struct section_gates *g)
{
	for (size_t i = 0; i < GATE_BUCKETS; i++) {
		struct gate_change *c = g->bucket[i];
		while (c) {
			struct gate_change *next = c->next;
			free(c);
			c = next;
		}
		g->bucket[i] = NULL;
	}
	g->nchanges = 0;
}

void gate_free(struct fs *fs)
{
	struct section_gates *g = &fs->gates;
	if (g->initialized) {
		changes_clear(g);
		pthread_mutex_destroy(&g->lock);
		pthread_cond_destroy(&g->cv);
	}
	free(g->inflight);
	free(g->gen);
}

static size_t bucket_of(uint64_t ino, uint64_t chunk)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ chunk * 0xc2b2ae3d27d4eb4full;
	return (size_t)(h >> 40) % GATE_BUCKETS;
}

/* Under g->lock: the entry of (ino, chunk), or NULL. */
static struct gate_change *change_find(struct section_gates *g, uint64_t ino, uint64_t chunk)
{
	for (struct gate_change *c = g->bucket[bucket_of(ino, chunk)]; c; c = c->next)
		if (c->ino == ino && c->chunk == chunk)
			return c;
	return NULL;
}

/* Under g->lock: the entry of (ino, chunk), made when missing (NULL: out
 * of memory, which the mover learns through g->lost). */
static struct gate_change *change_of(struct section_gates *g, uint64_t ino, uint64_t chunk)
{
	struct gate_change *c = change_find(g, ino, chunk);
	if (c)
		return c;
	size_t b = bucket_of(ino, chunk);
	c = calloc(1, sizeof(*c));
	if (!c) {
		g->lost = true;
		return NULL;
	}
	c->ino = ino;
	c->chunk = chunk;
	c->next = g->bucket[b];
	g->bucket[b] = c;
	g->nchanges++;
	return c;
}

static bool holds(struct fs *fs, uint32_t section)
{
	for (int i = 0; i < held.n; i++)
		if (held.h[i].fs == fs && held.h[i].section == section)
			return true;
	return false;
}

void section_enter(struct fs *fs, uint32_t section, uint64_t ino, uint64_t chunk, bool change)
{
	struct section_gates *g = &fs->gates;
	if (held.n == HELD_MAX) {
		/* A bug: a loop that never releases.  Going on uncounted
		 * could let a move miss a write: stop here, and say why. */
		fs_logf(fs, "internal: more than %d section gates held by one thread", HELD_MAX);
		abort();
	}
	bool counted = !holds(fs, section);
	while (counted) {
		__atomic_fetch_add(&g->inflight[section], 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&g->frozen, __ATOMIC_SEQ_CST) != section)
			break;
		/* Frozen: step out, wait for the thaw, try again. */
		if (__atomic_sub_fetch(&g->inflight[section], 1, __ATOMIC_SEQ_CST) == 0) {
			pthread_mutex_lock(&g->lock);
			pthread_cond_broadcast(&g->cv);
			pthread_mutex_unlock(&g->lock);
		}
		pthread_mutex_lock(&g->lock);
		while (__atomic_load_n(&g->frozen, __ATOMIC_SEQ_CST) == section)
			pthread_cond_wait(&g->cv, &g->lock);
		pthread_mutex_unlock(&g->lock);
	}
	struct held *h = &held.h[held.n++];
	*h = (struct held){.fs = fs, .section = section, .counted = counted, .ino = ino,
			   .chunk = chunk};
	if (change && __atomic_load_n(&g->moving, __ATOMIC_SEQ_CST) == section) {
		pthread_mutex_lock(&g->lock);
		struct gate_change *c = change_of(g, ino, chunk);
		if (c) {
			c->busy++;
			c->dirty = true;
			h->change = true;
		}
		pthread_mutex_unlock(&g->lock);
	}
}

int section_mark(void)
{
	return held.n;
}

void section_release(struct fs *fs, int mark)
{
	struct section_gates *g = &fs->gates;
	while (held.n > mark) {
		struct held *h = &held.h[--held.n];
		if (h->change) {
			pthread_mutex_lock(&g->lock);
			struct gate_change *c = change_find(g, h->ino, h->chunk);
			if (c && c->busy)
				c->busy--;
			pthread_mutex_unlock(&g->lock);
		}
		if (h->counted &&
		    __atomic_sub_fetch(&g->inflight[h->section], 1, __ATOMIC_SEQ_CST) == 0 &&
		    __atomic_load_n(&g->frozen, __ATOMIC_SEQ_CST) == h->section) {
			pthread_mutex_lock(&g->lock);
			pthread_cond_broadcast(&g->cv);
			pthread_mutex_unlock(&g->lock);
		}
	}
}

uint32_t section_gen(struct fs *fs, uint32_t section)
{
	return __atomic_load_n(&fs->gates.gen[section], __ATOMIC_ACQUIRE);
}

void section_freeze(struct fs *fs, uint32_t section)
{
	struct section_gates *g = &fs->gates;
	pthread_mutex_lock(&g->lock);
	__atomic_store_n(&g->frozen, section, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&g->inflight[section], __ATOMIC_SEQ_CST) != 0)
		pthread_cond_wait(&g->cv, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

void section_thaw(struct fs *fs)
{
	struct section_gates *g = &fs->gates;
	pthread_mutex_lock(&g->lock);
	__atomic_store_n(&g->frozen, UINT32_MAX, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->lock);
}

void section_switch(struct fs *fs, uint32_t section, uint32_t disk)
{
	/* Frozen: nobody inside to see the change half made. */
	__atomic_store_n(&fs->section_disk[section], disk, __ATOMIC_RELEASE);
	__atomic_add_fetch(&fs->gates.gen[section], 1, __ATOMIC_RELEASE);
}

void section_track(struct fs *fs, uint32_t section)
{
	struct section_gates *g = &fs->gates;
	/* Frozen while it starts, so that every change made from here on
	 * is seen: a thread inside the gate now could have looked at
	 * `moving` before it was set. */
	section_freeze(fs, section);
	pthread_mutex_lock(&g->lock);
	changes_clear(g);
	g->lost = false;
	__atomic_store_n(&g->moving, section, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&g->lock);
	section_thaw(fs);
}

void section_untrack(struct fs *fs)
{
	struct section_gates *g = &fs->gates;
	pthread_mutex_lock(&g->lock);
	__atomic_store_n(&g->moving, UINT32_MAX, __ATOMIC_SEQ_CST);
	changes_clear(g);
	pthread_mutex_unlock(&g->lock);
}

int section_take_changes(struct fs *fs, struct gate_chunk **out, size_t *n, bool *lost)
{
	struct section_gates *g = &fs->gates;
	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&g->lock);
	*lost = g->lost;
	g->lost = false;
	struct gate_chunk *v = g->nchanges ? malloc(g->nchanges * sizeof(*v)) : NULL;
	if (g->nchanges && !v) {
		pthread_mutex_unlock(&g->lock);
		return -ENOMEM;
	}
	for (size_t b = 0; b < GATE_BUCKETS; b++) {
		struct gate_change **pp = &g->bucket[b];
		while (*pp) {
			struct gate_change *c = *pp;
			if (c->busy || !c->dirty) {
				pp = &c->next;
				continue;
			}
			v[(*n)++] = (struct gate_chunk){.ino = c->ino, .chunk = c->chunk};
			*pp = c->next;
			free(c);
			g->nchanges--;
		}
	}
	size_t busy = g->nchanges;
	pthread_mutex_unlock(&g->lock);
	*out = v;
	return busy > 0;
}
