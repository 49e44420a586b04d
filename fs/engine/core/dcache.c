/*
 * dcache: directory entries the daemon read or wrote lately, in memory, so
 * that an unlink, rename or link finds the inode of a name the kernel
 * just looked up without a store read (which for a name whose key has
 * left the memtable is a search of every level that may hold it: a
 * quarter of the daemon's instructions per unlink).
 *
 * What it holds is what the store holds: an entry (parent, name) -> (ino,
 * type) is put here only after the store had it.  Every change of a name
 * (dir.c, under ns_lock) sets or forgets its entry once its batch is
 * written, or forgets it when the write failed (the store may hold either
 * state then).  A reader outside ns_lock (a lookup) fills from a store
 * read, which a change may overtake: it takes dcache_stamp() before the
 * read, and dcache_fill() drops the result if a change to a name of the
 * same stripe came in between, so it cannot put back a name a change
 * removed.  A name the store does not have is kept too, as inode 0 (no
 * inode has that number): the kernel's lookup of a new name comes just
 * before its create, whose check that the name is free then needs no
 * second store read.
 *
 * A directory made by this mount starts empty, and every name it gets
 * passes through here: until one of its names is evicted (or a change of
 * one failed), the cache holds all of them, and a name it does not hold
 * is absent without a store read (the kernel's lookup before each create
 * in a new directory).  COMPLETE directories at most are known so.
 *
 * Set-associative: a name hashes to a set of WAYS slots; a new entry takes
 * a free slot of its set or the one used longest ago.  Capacity is fixed
 * at init (the inode cache's size): about 48 bytes a slot and the name.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define WAYS 8
#define STRIPES 64
#define COMPLETE 1024 /* directories whose every entry is here, at most */

struct dcache_slot {
	uint64_t hash;   /* 0: empty */
	uint64_t parent, ino;
	char *name;
	uint32_t used;   /* dc->tick when last found or filled */
	uint16_t nlen;
	uint8_t type;
};

static uint64_t hash_of(uint64_t parent, const char *name, size_t nlen)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (parent * 0x9E3779B97F4A7C15ull);
	for (size_t i = 0; i < nlen; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
	h ^= h >> 29;
	return h ? h : 1; /* 0 marks an empty slot */
}

int dcache_init(struct dcache *dc, size_t capacity)
{
	memset(dc, 0, sizeof(*dc));
	size_t sets = 1;
	while (sets * WAYS < capacity && sets <= SIZE_MAX / WAYS / 4)
		sets <<= 1;
	dc->slots = calloc(sets * WAYS, sizeof(*dc->slots));
	dc->stripe = calloc(STRIPES, sizeof(*dc->stripe));
	dc->complete = calloc(COMPLETE, sizeof(*dc->complete));
	if (!dc->slots || !dc->stripe || !dc->complete) {
		free(dc->slots);
		free(dc->stripe);
		free(dc->complete);
		dc->slots = NULL;
		dc->stripe = NULL;
		dc->complete = NULL;
		return -ENOMEM;
	}
	dc->nsets = sets;
	pthread_mutex_init(&dc->lock, NULL);
	return 0;
}

void dcache_free(struct dcache *dc)
{
	if (!dc->slots)
		return;
	for (size_t i = 0; i < dc->nsets * WAYS; i++)
		free(dc->slots[i].name);
	free(dc->slots);
	free(dc->stripe);
	free(dc->complete);
	pthread_mutex_destroy(&dc->lock);
	dc->slots = NULL;
}

/* The slot a directory's completeness would take: one per directory,
 * and a directory that finds its slot taken is simply not complete. */
static uint64_t *complete_slot(const struct dcache *dc, uint64_t dir)
{
	return &dc->complete[(dir * 0x9E3779B97F4A7C15ull) >> 54]; /* COMPLETE = 2^10 */
}

/* Directory dir may have entries the cache does not hold. */
static void incomplete(struct dcache *dc, uint64_t dir)
{
	uint64_t *c = complete_slot(dc, dir);
	if (*c == dir)
		*c = 0;
}

static struct dcache_slot *set_of(const struct dcache *dc, uint64_t h)
{
	return &dc->slots[((size_t)(h >> 7) & (dc->nsets - 1)) * WAYS];
}

static struct dcache_slot *find(const struct dcache *dc, uint64_t h, uint64_t parent,
				const char *name, size_t nlen)
{
	struct dcache_slot *s = set_of(dc, h);
	for (int i = 0; i < WAYS; i++)
		if (s[i].hash == h && s[i].parent == parent && s[i].nlen == nlen &&
		    memcmp(s[i].name, name, nlen) == 0)
			return &s[i];
	return NULL;
}

static void clear(struct dcache_slot *s)
{
	free(s->name);
	memset(s, 0, sizeof(*s));
}

/* Put (or replace) the entry; dc->lock held.  Out of memory: not kept. */
static void put(struct dcache *dc, uint64_t h, uint64_t parent, const char *name, size_t nlen,
		uint64_t ino, uint8_t type)
{
	struct dcache_slot *s = find(dc, h, parent, name, nlen);
	if (!s) {
		struct dcache_slot *set = set_of(dc, h);
		s = &set[0];
		for (int i = 0; i < WAYS; i++) {
			if (!set[i].hash) {
				s = &set[i];
				break;
			}
			if ((uint32_t)(dc->tick - set[i].used) > (uint32_t)(dc->tick - s->used))
				s = &set[i];
		}
		if (s->hash && s->ino) /* a name its directory has goes */
			incomplete(dc, s->parent);
		char *copy = malloc(nlen + 1);
		if (!copy) {
			if (s->hash)
				clear(s);
			if (ino)
				incomplete(dc, parent);
			return;
		}
		memcpy(copy, name, nlen);
		copy[nlen] = '\0';
		free(s->name);
		s->name = copy;
		s->hash = h;
		s->parent = parent;
		s->nlen = (uint16_t)nlen;
	}
	s->ino = ino;
	s->type = type;
	s->used = ++dc->tick;
}

bool dcache_get(struct dcache *dc, uint64_t parent, const char *name, uint64_t *ino,
		uint8_t *type)
{
	if (!dc->slots)
		return false;
	size_t nlen = strlen(name);
	uint64_t h = hash_of(parent, name, nlen);
	pthread_mutex_lock(&dc->lock);
	struct dcache_slot *s = find(dc, h, parent, name, nlen);
	bool hit = true;
	if (s) {
		*ino = s->ino;
		*type = s->type;
		s->used = ++dc->tick;
	} else if (*complete_slot(dc, parent) == parent) {
		*ino = 0; /* every name the directory has is here: not this one */
		*type = 0;
	} else {
		hit = false;
	}
	pthread_mutex_unlock(&dc->lock);
	return hit;
}

void dcache_dir_made(struct dcache *dc, uint64_t dir)
{
	if (!dc->slots)
		return;
	pthread_mutex_lock(&dc->lock);
	*complete_slot(dc, dir) = dir;
	pthread_mutex_unlock(&dc->lock);
}

uint64_t dcache_stamp(struct dcache *dc, uint64_t parent, const char *name)
{
	if (!dc->slots)
		return 0;
	uint64_t h = hash_of(parent, name, strlen(name));
	pthread_mutex_lock(&dc->lock);
	uint64_t v = dc->stripe[h % STRIPES];
	pthread_mutex_unlock(&dc->lock);
	return v;
}

void dcache_fill(struct dcache *dc, uint64_t stamp, uint64_t parent, const char *name,
		 uint64_t ino, uint8_t type)
{
	if (!dc->slots)
		return;
	size_t nlen = strlen(name);
	uint64_t h = hash_of(parent, name, nlen);
	pthread_mutex_lock(&dc->lock);
	if (dc->stripe[h % STRIPES] == stamp)
		put(dc, h, parent, name, nlen, ino, type);
	pthread_mutex_unlock(&dc->lock);
}

/* A change of (parent, name): lock, and count it on the name's stripe.
 * Returns the name's hash. */
static uint64_t change_begin(struct dcache *dc, uint64_t parent, const char *name,
			     size_t *nlen)
{
	*nlen = strlen(name);
	uint64_t h = hash_of(parent, name, *nlen);
	pthread_mutex_lock(&dc->lock);
	dc->stripe[h % STRIPES]++;
	return h;
}

void dcache_set(struct dcache *dc, uint64_t parent, const char *name, uint64_t ino,
		uint8_t type)
{
	if (!dc->slots)
		return;
	size_t nlen;
	uint64_t h = change_begin(dc, parent, name, &nlen);
	put(dc, h, parent, name, nlen, ino, type);
	pthread_mutex_unlock(&dc->lock);
}

void dcache_forget(struct dcache *dc, uint64_t parent, const char *name)
{
	if (!dc->slots)
		return;
	size_t nlen;
	uint64_t h = change_begin(dc, parent, name, &nlen);
	struct dcache_slot *s = find(dc, h, parent, name, nlen);
	if (s)
		clear(s);
	incomplete(dc, parent); /* the store may have the name */
	pthread_mutex_unlock(&dc->lock);
}
