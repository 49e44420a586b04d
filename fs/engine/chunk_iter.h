/*
 * chunk_iter.h: a byte range of a file cut at chunk boundaries
 * (SCHEMA.md, "Data": chunk c holds bytes [c x size, (c+1) x size) of
 * the file).
 *
 * Every piece lies in one chunk: the first starts at the range's start,
 * each ends at its chunk's end or at the range's.  The walk, as reads,
 * writes, fallocate and its space check go:
 *
 *	struct chunk_iter it;
 *	for (chunk_iter_init(&it, cs, off, end); chunk_iter_valid(&it); chunk_iter_next(&it))
 *		... it.chunk, it.within, it.n (it.pos - off bytes of the range before) ...
 *
 * A break leaves it.pos at the start of the piece it broke in, so that
 * it.pos - off is what the pieces before it covered.  No allocation, no
 * lock: the hot paths call it for every request.
 */
#ifndef LSMFS_CHUNK_ITER_H
#define LSMFS_CHUNK_ITER_H

#include <stdbool.h>
#include <stdint.h>

struct chunk_iter {
	uint64_t cs;     /* the chunk size */
	uint64_t end;    /* where the range ends */
	uint64_t pos;    /* where the piece starts in the file */
	uint64_t chunk;  /* the chunk it lies in */
	uint64_t within; /* where it starts in that chunk */
	uint64_t n;      /* its length, at least 1 while valid */
};

static inline void chunk_iter_piece(struct chunk_iter *it)
{
	if (it->pos >= it->end)
		return;
	it->chunk = it->pos / it->cs;
	it->within = it->pos % it->cs;
	it->n = it->end - it->pos < it->cs - it->within ? it->end - it->pos : it->cs - it->within;
}

/* The range [off, end), chunk size cs: positioned on its first piece. */
static inline void chunk_iter_init(struct chunk_iter *it, uint64_t cs, uint64_t off, uint64_t end)
{
	*it = (struct chunk_iter){.cs = cs, .end = end, .pos = off};
	chunk_iter_piece(it);
}

static inline bool chunk_iter_valid(const struct chunk_iter *it)
{
	return it->pos < it->end;
}

/* REQUIRES: chunk_iter_valid(it). */
static inline void chunk_iter_next(struct chunk_iter *it)
{
	it->pos += it->n;
	chunk_iter_piece(it);
}

#endif
