/*
 * sums.c: the checksums of chunk data (SCHEMA.md "Chunk checksums") and the
 * chunk record's value that carries them: one 32-bit sum per block of a
 * chunk file, the block 4 KiB (larger only for chunks past 4 MiB, so that
 * a chunk has at most SUMS_MAX_BLOCKS of them, up to 64 KiB), the sum the
 * XXH3-64 of the block's bytes (those past the file's end counted as
 * zeros) seeded by the chunk's identity, folded to 32 bits, never 0 (0
 * stands for "not known").
 */
#include "schema.h"

#include <errno.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
#ifdef LSMFS_XXH_DISPATCH
#include <xxh_x86dispatch.h>
#define block_hash XXH3_64bits_withSeed_dispatch /* AVX2 where there is */
#else
#define block_hash XXH3_64bits_withSeed
#endif

#include "coding.h"

unsigned sums_block_shift(uint64_t chunk_size)
{
	unsigned shift = SUMS_MIN_SHIFT;
	while (shift < SUMS_MAX_SHIFT && (chunk_size >> shift) > SUMS_MAX_BLOCKS)
		shift++;
	return shift;
}

/* A chunk's blocks hash differently from another chunk's: a chunk file
 * put in another's place (a misdirected copy) does not verify. */
static uint64_t seed_of(uint64_t ino, uint64_t chunk)
{
	return ino * 0x9E3779B97F4A7C15ull ^ (chunk + 0x632BE59BD9B4E019ull);
}

static uint32_t fold(uint64_t h)
{
	uint32_t s = (uint32_t)(h ^ (h >> 32));
	return s ? s : 1;
}

static const uint8_t zeros[1u << SUMS_MAX_SHIFT];

uint32_t sums_block(const void *p, size_t len, size_t bsize, uint64_t ino, uint64_t chunk)
{
	uint64_t seed = seed_of(ino, chunk);
	if (len >= bsize)
		return fold(block_hash(p, bsize, seed));
	/* libxxhash 0.8.1 (Debian 12) reads the seed the state last had to
	 * decide whether to make its secret again: a state on the stack must
	 * start with seed 0 (XXH3_INITSTATE), or it keeps another's secret. */
	XXH3_state_t st;
	XXH3_INITSTATE(&st);
	XXH3_64bits_reset_withSeed(&st, seed);
	if (len)
		XXH3_64bits_update(&st, p, len);
	XXH3_64bits_update(&st, zeros, bsize - len);
	return fold(XXH3_64bits_digest(&st));
}

int chunk_value_parse(const uint8_t *p, size_t len, struct chunk_value *cv)
{
	memset(cv, 0, sizeof(*cv));
	cv->section = CHUNK_HASHED;
	cv->copies = 1;
	if (len == 0)
		return 0;
	if (len < CHUNK_VAL_LEN)
		return -EUCLEAN;
	cv->durable = get_le64(p);
	if (len == CHUNK_VAL_LEN)
		return 0;
	cv->flags = p[8];
	if (cv->flags & ~(CHUNK_LOST | CHUNK_SUMS | CHUNK_INWRITE | CHUNK_PLACED | CHUNK_COPIES))
		return -EUCLEAN;
	if (cv->flags & CHUNK_LOST)
		return len == CHUNK_LOST_LEN && cv->flags == CHUNK_LOST ? 0 : -EUCLEAN;
	if ((cv->flags & CHUNK_COPIES) && !(cv->flags & CHUNK_PLACED))
		return -EUCLEAN;
	size_t hdr = cv->flags & CHUNK_COPIES ? CHUNK_COPIES_HDR
		     : cv->flags & CHUNK_PLACED ? CHUNK_PLACED_HDR : CHUNK_SUMS_HDR;
	if (len < hdr)
		return -EUCLEAN;
	cv->gen = get_le32(p + 9);
	cv->shift = p[13];
	if (cv->flags & CHUNK_PLACED) {
		cv->section = get_le32(p + CHUNK_SUMS_HDR);
		if (cv->section == CHUNK_HASHED)
			return -EUCLEAN;
	}
	if (cv->flags & CHUNK_COPIES) {
		cv->copies = p[CHUNK_PLACED_HDR];
		cv->stale = p[CHUNK_PLACED_HDR + 1];
		/* At least one copy that is not stale. */
		if (cv->copies < 1 || cv->copies > CHUNK_MAX_COPIES ||
		    cv->stale >= (1u << cv->copies) - 1)
			return -EUCLEAN;
	}
	if (!(cv->flags & CHUNK_SUMS))
		return len == hdr && cv->shift == 0 ? 0 : -EUCLEAN;
	if (cv->shift < SUMS_MIN_SHIFT || cv->shift > SUMS_MAX_SHIFT || (len - hdr) % 4 != 0)
		return -EUCLEAN;
	cv->nsums = (uint32_t)((len - hdr) / 4);
	cv->sums = p + hdr;
	return 0;
}

size_t chunk_value_put_place(uint64_t durable, uint8_t flags, uint32_t gen,
			     const struct chunk_place *place, unsigned shift, const uint32_t *sums,
			     uint32_t nsums, uint8_t *out)
{
	flags &= (uint8_t)~(CHUNK_PLACED | CHUNK_COPIES);
	if (place->section != CHUNK_HASHED)
		flags |= CHUNK_PLACED;
	if ((flags & CHUNK_PLACED) && (place->copies > 1 || place->stale))
		flags |= CHUNK_COPIES;
	put_le64(out, durable);
	out[8] = flags;
	put_le32(out + 9, gen);
	out[13] = (flags & CHUNK_SUMS) ? (uint8_t)shift : 0;
	size_t hdr = CHUNK_SUMS_HDR;
	if (flags & CHUNK_PLACED) {
		put_le32(out + hdr, place->section);
		hdr = CHUNK_PLACED_HDR;
	}
	if (flags & CHUNK_COPIES) {
		out[hdr] = place->copies;
		out[hdr + 1] = place->stale;
		hdr = CHUNK_COPIES_HDR;
	}
	if (!(flags & CHUNK_SUMS))
		return hdr;
	for (uint32_t i = 0; i < nsums; i++)
		put_le32(out + hdr + 4 * (size_t)i, sums[i]);
	return hdr + 4 * (size_t)nsums;
}

size_t chunk_value_put(uint64_t durable, uint8_t flags, uint32_t gen, uint32_t section,
		       unsigned shift, const uint32_t *sums, uint32_t nsums, uint8_t *out)
{
	struct chunk_place pl = {.section = section, .copies = 1};
	return chunk_value_put_place(durable, flags, gen, &pl, shift, sums, nsums, out);
}

uint32_t chunk_value_sum(const struct chunk_value *cv, uint32_t i)
{
	return i < cv->nsums ? get_le32(cv->sums + 4 * (size_t)i) : 0;
}
