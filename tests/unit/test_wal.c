/*
 * test_wal: the commit-log record format (store/wal.c, FORMAT.md "Commit
 * log") on the POSIX env: round trips across blocks, block tails, torn tails
 * cut at every byte, and corruption in the middle and at the end.
 *
 * Writer errors and power cuts use tests/lib/fault_env.
 * Randomized cases print their seed; set LSMFS_SEED to replay one.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "coding.h"
#include "env.h"
#include "fault_env.h"
#include "testutil.h"
#include "wal.h"

#define BLOCK WAL_BLOCK_SIZE
#define HDR WAL_HEADER_SIZE

static char *dir;
static char path[256];
static struct store_env *env;

static void setup(void)
{
	dir = tu_mkdtemp("wal");
	snprintf(path, sizeof(path), "%s/000001.log", dir);
	env = store_env_posix();
}

static void teardown(void)
{
	ck_assert_int_eq(tu_rmrf(dir), 0);
	free(dir);
}

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Test records: record i has length len[i] and bytes fill(i). */
struct recs {
	size_t n;
	size_t *len;
	uint64_t *end; /* wal_writer_size() after record i */
	uint64_t salt;
};

static void fill(const struct recs *rs, size_t i, uint8_t *p)
{
	uint64_t s = rs->salt * 1000003u + i;
	for (size_t j = 0; j < rs->len[i]; j++) {
		if (j % 8 == 0)
			(void)rng_next(&s);
		p[j] = (uint8_t)(s >> (8 * (j % 8)));
	}
}

static void recs_init(struct recs *rs, size_t n, uint64_t salt)
{
	rs->n = n;
	rs->len = calloc(n, sizeof(*rs->len));
	rs->end = calloc(n, sizeof(*rs->end));
	rs->salt = salt;
	ck_assert(rs->len && rs->end);
}

static void recs_free(struct recs *rs)
{
	free(rs->len);
	free(rs->end);
}

static uint64_t rec_start(const struct recs *rs, size_t i)
{
	return i ? rs->end[i - 1] : 0;
}

/* Write all records to path, noting where each ends, flushing after
 * every flush_every-th. */
static void write_recs_flushing(struct recs *rs, size_t flush_every)
{
	struct wal_writer *w;
	ck_assert_int_eq(wal_writer_open(env, path, &w), 0);
	size_t max = 1;
	for (size_t i = 0; i < rs->n; i++)
		max = rs->len[i] > max ? rs->len[i] : max;
	uint8_t *tmp = malloc(max);
	ck_assert_ptr_nonnull(tmp);
	for (size_t i = 0; i < rs->n; i++) {
		fill(rs, i, tmp);
		ck_assert_int_eq(wal_add_record(w, tmp, rs->len[i]), 0);
		rs->end[i] = wal_writer_size(w);
		if (i % flush_every == 0)
			ck_assert_int_eq(wal_flush(w), 0);
	}
	ck_assert_int_eq(wal_sync(w), 0);
	ck_assert_int_eq(wal_writer_close(w), 0);
	free(tmp);
	uint64_t size;
	ck_assert_int_eq(env->ops->file_size(env, path, &size), 0);
	ck_assert_uint_eq(size, rs->n ? rs->end[rs->n - 1] : 0);
}

static void write_recs(struct recs *rs)
{
	write_recs_flushing(rs, 17);
}

/*
 * Read path, expecting the first `expect` records of rs in order, then
 * return code `last_rc`.  Returns the reader (for error checks); the caller
 * closes it.
 */
static struct wal_reader *read_expect(const struct recs *rs, size_t expect,
				      int last_rc)
{
	struct wal_reader *r;
	ck_assert_int_eq(wal_reader_open(env, path, &r), 0);
	size_t max = 1;
	for (size_t i = 0; i < expect; i++)
		max = rs->len[i] > max ? rs->len[i] : max;
	uint8_t *tmp = malloc(max);
	ck_assert_ptr_nonnull(tmp);
	for (size_t i = 0; i < expect; i++) {
		const uint8_t *rec;
		size_t len;
		int rc = wal_read_record(r, &rec, &len);
		if (rc != 1)
			ck_abort_msg("record %zu of %zu: rc %d (%s at %llu)", i,
				     expect, rc, wal_reader_error(r)->msg,
				     (unsigned long long)wal_reader_error(r)->offset);
		ck_assert_uint_eq(len, rs->len[i]);
		fill(rs, i, tmp);
		ck_assert_msg(len == 0 || memcmp(rec, tmp, len) == 0,
			      "record %zu differs", i);
		ck_assert_uint_eq(wal_reader_good_offset(r), rs->end[i]);
	}
	free(tmp);
	const uint8_t *rec;
	size_t len;
	int rc = wal_read_record(r, &rec, &len);
	ck_assert_msg(rc == last_rc, "after %zu records: rc %d, want %d (%s)",
		      expect, rc, last_rc, rc < 0 ? wal_reader_error(r)->msg : "");
	ck_assert_uint_eq(wal_reader_good_offset(r),
			  expect ? rs->end[expect - 1] : 0);
	if (rc == 0) /* a clean end stays one */
		ck_assert_int_eq(wal_read_record(r, &rec, &len), 0);
	return r;
}

static void read_all(const struct recs *rs)
{
	wal_reader_close(read_expect(rs, rs->n, 0));
}

static uint8_t *slurp(size_t *len)
{
	uint8_t *data;
	ck_assert_int_eq(env_read_file(env, path, &data, len), 0);
	return data;
}

static void xor_byte(uint64_t off, uint8_t mask)
{
	FILE *f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, (long)off, SEEK_SET), 0);
	int c = fgetc(f);
	ck_assert_int_ne(c, EOF);
	ck_assert_int_eq(fseek(f, (long)off, SEEK_SET), 0);
	ck_assert_int_ne(fputc(c ^ mask, f), EOF);
	ck_assert_int_eq(fclose(f), 0);
}

static void append_raw(const void *p, size_t n)
{
	FILE *f = fopen(path, "ab");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

/* ---- round trips ---- */

START_TEST(test_empty_file)
{
	struct recs rs;
	recs_init(&rs, 0, 0);
	write_recs(&rs);
	read_all(&rs);
	recs_free(&rs);
}
END_TEST

START_TEST(test_random_round_trip)
{
	uint64_t seed = tu_seed("test_wal");
	uint64_t s = seed;
	struct recs rs;
	recs_init(&rs, 400, seed);
	for (size_t i = 0; i < rs.n; i++) {
		uint64_t x = rng_next(&s);
		switch (x % 4) {
		case 0:
			rs.len[i] = (size_t)(x >> 8) % 16; /* tiny, often 0 */
			break;
		case 1:
			rs.len[i] = (size_t)(x >> 8) % 1100; /* around SMALL */
			break;
		case 2:
			rs.len[i] = (size_t)(x >> 8) % 20000;
			break;
		default:
			rs.len[i] = (size_t)(x >> 8) % (100 * 1024 + 1);
			break;
		}
	}
	write_recs(&rs);
	read_all(&rs);
	recs_free(&rs);
}
END_TEST

START_TEST(test_exact_block_fill)
{
	/* One FULL filling block 0; FIRST+LAST filling blocks 1-2; a record
	 * with one MIDDLE filling blocks 3-5; then small ones. */
	struct recs rs;
	recs_init(&rs, 5, 7);
	rs.len[0] = BLOCK - HDR;
	rs.len[1] = 2 * (BLOCK - HDR);
	rs.len[2] = 3 * (BLOCK - HDR);
	rs.len[3] = 0;
	rs.len[4] = 10;
	write_recs(&rs);
	ck_assert_uint_eq(rs.end[0], BLOCK);
	ck_assert_uint_eq(rs.end[1], 3 * BLOCK);
	ck_assert_uint_eq(rs.end[2], 6 * BLOCK);
	ck_assert_uint_eq(rs.end[3], 6 * BLOCK + HDR);
	ck_assert_uint_eq(rs.end[4], 6 * BLOCK + 2 * HDR + 10);
	read_all(&rs);
	recs_free(&rs);
}
END_TEST

/* Where a record of len bytes written at offset off ends: fragments never
 * cross a block; a block tail under HDR bytes is skipped. */
static uint64_t layout_end(uint64_t off, size_t len)
{
	do {
		size_t left = BLOCK - (size_t)(off % BLOCK);
		if (left < HDR) {
			off += left;
			left = BLOCK;
		}
		size_t n = len < left - HDR ? len : left - HDR;
		off += HDR + n;
		len -= n;
	} while (len > 0);
	return off;
}

/* A first record leaving t bytes in block 0, then a second record. */
START_TEST(test_block_tails)
{
	static const size_t second[] = { 0, 1, 100, 40000 };
	for (size_t t = 0; t <= 8; t++) {
		for (size_t k = 0; k < sizeof(second) / sizeof(second[0]); k++) {
			struct recs rs;
			recs_init(&rs, 3, t * 10 + k);
			rs.len[0] = BLOCK - HDR - t;
			rs.len[1] = second[k];
			rs.len[2] = 5;
			write_recs(&rs);
			ck_assert_uint_eq(rs.end[0], BLOCK - t);
			uint64_t want = layout_end(rs.end[0], second[k]);
			ck_assert_msg(rs.end[1] == want,
				      "tail %zu len %zu: end %llu want %llu", t,
				      second[k], (unsigned long long)rs.end[1],
				      (unsigned long long)want);
			/* Spelled out: a padded tail; a 7-byte tail takes a
			 * zero-length FIRST (or the empty record's FULL). */
			if (t < HDR && second[k] == 100)
				ck_assert_uint_eq(rs.end[1], BLOCK + HDR + 100);
			if (t == HDR && second[k] == 0)
				ck_assert_uint_eq(rs.end[1], BLOCK);
			if (t == HDR && second[k] == 100)
				ck_assert_uint_eq(rs.end[1], BLOCK + HDR + 100);
			if (t > 0 && t < HDR) {
				size_t len;
				uint8_t *data = slurp(&len);
				for (size_t i = BLOCK - t; i < BLOCK; i++)
					ck_assert_int_eq(data[i], 0);
				free(data);
			}
			read_all(&rs);
			recs_free(&rs);
		}
	}
}
END_TEST

/* ---- torn tails ---- */

static bool zero_range(const uint8_t *data, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		if (data[i])
			return false;
	return true;
}

/*
 * Cut the file at positions of the last record's range, from its end down
 * to its start (truncating progressively), and check each.  dense: every
 * byte; otherwise every byte near its start, near block boundaries, and a
 * stride in between.
 */
static void torn_tail_check(struct recs *rs, bool dense)
{
	write_recs(rs);
	size_t flen;
	uint8_t *data = slurp(&flen);
	size_t n = rs->n;
	uint64_t prev = rec_start(rs, n - 1), last = rs->end[n - 1];
	for (uint64_t cut = last + 1; cut-- > prev;) {
		uint64_t in_block = cut % BLOCK;
		bool take = dense || cut - prev < 64 || last - cut < 16 ||
			    in_block < 24 || in_block > BLOCK - 24 ||
			    cut % 211 == 0;
		if (!take)
			continue;
		ck_assert_int_eq(env->ops->truncate(env, path, cut), 0);
		struct wal_reader *r;
		if (cut == last) {
			r = read_expect(rs, n, 0);
		} else if (zero_range(data, prev, cut)) {
			/* At the boundary or inside the padding before it. */
			r = read_expect(rs, n - 1, 0);
		} else {
			r = read_expect(rs, n - 1, -EUCLEAN);
			const struct wal_error *e = wal_reader_error(r);
			ck_assert_msg(e->tail, "cut %llu: not a tail: %s at %llu",
				      (unsigned long long)cut, e->msg,
				      (unsigned long long)e->offset);
			ck_assert_uint_ge(e->offset, prev);
			ck_assert_uint_le(e->offset, cut);
		}
		wal_reader_close(r);
	}
	free(data);
}

START_TEST(test_torn_small_last)
{
	struct recs rs;
	recs_init(&rs, 6, 11);
	static const size_t lens[] = { 10, 0, 3000, 7, 55, 300 };
	memcpy(rs.len, lens, sizeof(lens));
	torn_tail_check(&rs, true);
	recs_free(&rs);
}
END_TEST

START_TEST(test_torn_empty_last)
{
	struct recs rs;
	recs_init(&rs, 3, 12);
	rs.len[0] = 100;
	rs.len[1] = 200;
	rs.len[2] = 0;
	torn_tail_check(&rs, true);
	recs_free(&rs);
}
END_TEST

START_TEST(test_torn_after_padding)
{
	/* The last record starts after 1..7 bytes of block-0 tail. */
	for (size_t t = 1; t <= HDR; t++) {
		struct recs rs;
		recs_init(&rs, 3, 20 + t);
		rs.len[0] = 1000;
		rs.len[1] = BLOCK - HDR - 1000 - HDR - t;
		rs.len[2] = 500;
		torn_tail_check(&rs, true);
		ck_assert_uint_eq(rs.end[1], BLOCK - t);
		recs_free(&rs);
	}
}
END_TEST

START_TEST(test_torn_large_last)
{
	/* The last record spans four blocks: FIRST, MIDDLE, MIDDLE, LAST. */
	struct recs rs;
	recs_init(&rs, 3, 31);
	rs.len[0] = 20000;
	rs.len[1] = 4000;
	rs.len[2] = 3 * BLOCK;
	torn_tail_check(&rs, false);
	recs_free(&rs);
}
END_TEST

START_TEST(test_torn_random)
{
	uint64_t seed = tu_seed("test_wal");
	uint64_t s = seed;
	for (int round = 0; round < 4; round++) {
		struct recs rs;
		size_t n = 2 + rng_next(&s) % 20;
		recs_init(&rs, n, seed + (uint64_t)round);
		for (size_t i = 0; i < n; i++)
			rs.len[i] = rng_next(&s) % 9000;
		rs.len[n - 1] = rng_next(&s) % 70000;
		torn_tail_check(&rs, false);
		recs_free(&rs);
	}
}
END_TEST

/* ---- corruption ---- */

/* Offsets within a FULL/FIRST fragment header worth damaging. */

static const size_t damage_at[] = { 0, 3, 4, 5, 6, 7, 20 };

START_TEST(test_corrupt_mid_file)
{
	/* 200 records of 1000 bytes: about six blocks.  Record 5 is a FULL
	 * fragment in block 0; damage each part of it. */
	for (size_t d = 0; d < sizeof(damage_at) / sizeof(damage_at[0]); d++) {
		struct recs rs;
		recs_init(&rs, 200, 40);
		for (size_t i = 0; i < rs.n; i++)
			rs.len[i] = 1000;
		write_recs(&rs);
		uint64_t frag = rec_start(&rs, 5);
		ck_assert_uint_lt(frag + HDR + 1000, BLOCK);
		/* Length high byte: +32768 runs past the block. */
		xor_byte(frag + damage_at[d], damage_at[d] == 5 ? 0x80 : 0x01);
		struct wal_reader *r = read_expect(&rs, 5, -EUCLEAN);
		const struct wal_error *e = wal_reader_error(r);
		ck_assert_msg(!e->tail, "damage at +%zu: tail (%s)", damage_at[d],
			      e->msg);
		ck_assert_uint_eq(e->offset, frag);
		if (damage_at[d] == 5)
			ck_assert_msg(strstr(e->msg, "runs past block end"), "%s",
				      e->msg);
		else
			ck_assert_msg(strstr(e->msg, "checksum mismatch"), "%s",
				      e->msg);
		wal_reader_close(r);
		recs_free(&rs);
	}
}
END_TEST

START_TEST(test_corrupt_mid_file_no_block_starts)
{
	/* Records of 50000 bytes: every block after the first starts with a
	 * MIDDLE or LAST, so valid records are only found mid-block. */
	struct recs rs;
	recs_init(&rs, 6, 41);
	for (size_t i = 0; i < rs.n; i++)
		rs.len[i] = 50000;
	write_recs(&rs);
	xor_byte(100, 0x10); /* in record 0's FIRST fragment */
	struct wal_reader *r = read_expect(&rs, 0, -EUCLEAN);
	const struct wal_error *e = wal_reader_error(r);
	ck_assert(!e->tail);
	ck_assert_uint_eq(e->offset, 0);
	wal_reader_close(r);

	/* Damage record 4's LAST fragment (in block 7). */
	write_recs(&rs);
	uint64_t start = rec_start(&rs, 4);
	uint64_t last_frag = (rs.end[4] - 1) / BLOCK * BLOCK;
	ck_assert_uint_gt(last_frag, start);
	xor_byte(last_frag + 10, 0x01);
	r = read_expect(&rs, 4, -EUCLEAN);
	e = wal_reader_error(r);
	ck_assert(!e->tail);
	ck_assert_uint_eq(e->offset, last_frag);
	wal_reader_close(r);
	recs_free(&rs);
}
END_TEST

START_TEST(test_corrupt_length_last_block)
{
	/* A length made shorter in the file's last (short) block: the chain
	 * from where the damaged length ends is garbage and no block start
	 * follows, yet whole records do: mid-file damage, not a tail, and a
	 * resync goes on at the next record. */
	struct recs rs;
	recs_init(&rs, 400, 44);
	for (size_t i = 0; i < rs.n; i++)
		rs.len[i] = 100; /* 0x64: ^0x20 makes 68 */
	write_recs(&rs);
	size_t k = rs.n - 20;
	uint64_t frag = rec_start(&rs, k);
	ck_assert_uint_ge(frag, BLOCK); /* in the short last block */
	xor_byte(frag + 4, 0x20);
	struct wal_reader *r = read_expect(&rs, k, -EUCLEAN);
	const struct wal_error *e = wal_reader_error(r);
	ck_assert_msg(!e->tail, "a tail: %s", e->msg);
	ck_assert_uint_eq(e->offset, frag);
	ck_assert_int_eq(wal_reader_resync(r), 0);
	const uint8_t *rec;
	size_t len;
	uint8_t tmp[100];
	for (size_t i = k + 1; i < rs.n; i++) {
		ck_assert_int_eq(wal_read_record(r, &rec, &len), 1);
		ck_assert_uint_eq(len, rs.len[i]);
		fill(&rs, i, tmp);
		ck_assert(memcmp(rec, tmp, len) == 0);
	}
	ck_assert_int_eq(wal_read_record(r, &rec, &len), 0);
	wal_reader_close(r);
	recs_free(&rs);
}
END_TEST

START_TEST(test_corrupt_last_record)
{
	for (size_t d = 0; d < sizeof(damage_at) / sizeof(damage_at[0]); d++) {
		struct recs rs;
		recs_init(&rs, 50, 42);
		for (size_t i = 0; i < rs.n; i++)
			rs.len[i] = 1000;
		write_recs(&rs);
		uint64_t frag = rec_start(&rs, rs.n - 1);
		xor_byte(frag + damage_at[d], 0x04);
		struct wal_reader *r = read_expect(&rs, rs.n - 1, -EUCLEAN);
		const struct wal_error *e = wal_reader_error(r);
		ck_assert_msg(e->tail, "damage at +%zu: %s", damage_at[d], e->msg);
		ck_assert_uint_eq(e->offset, frag);
		wal_reader_close(r);
		recs_free(&rs);
	}

	/* A last record spanning blocks, damaged in its FIRST fragment: the
	 * valid MIDDLE/LAST after it do not make it mid-file. */
	struct recs rs;
	recs_init(&rs, 3, 43);
	rs.len[0] = 100;
	rs.len[1] = 100;
	rs.len[2] = 80000;
	write_recs(&rs);
	uint64_t frag = rec_start(&rs, 2);
	xor_byte(frag + 50, 0x01);
	struct wal_reader *r = read_expect(&rs, 2, -EUCLEAN);
	ck_assert(wal_reader_error(r)->tail);
	ck_assert_uint_eq(wal_reader_error(r)->offset, frag);
	wal_reader_close(r);

	/* ... and in its LAST fragment. */
	write_recs(&rs);
	uint64_t last_frag = (rs.end[2] - 1) / BLOCK * BLOCK;
	xor_byte(rs.end[2] - 1, 0x01);
	r = read_expect(&rs, 2, -EUCLEAN);
	ck_assert(wal_reader_error(r)->tail);
	ck_assert_uint_eq(wal_reader_error(r)->offset, last_frag);
	wal_reader_close(r);
	recs_free(&rs);
}
END_TEST

/* ---- zero-filled ends and regions ---- */

START_TEST(test_zero_filled_end)
{
	static const size_t zeros[] = { 1, 6, 7, 100, 40000, 100000 };
	for (size_t z = 0; z < sizeof(zeros) / sizeof(zeros[0]); z++) {
		struct recs rs;
		recs_init(&rs, 10, 50);
		for (size_t i = 0; i < rs.n; i++)
			rs.len[i] = 3000;
		write_recs(&rs);
		uint8_t *buf = calloc(1, zeros[z]);
		ck_assert_ptr_nonnull(buf);
		append_raw(buf, zeros[z]);
		free(buf);
		read_all(&rs);
		recs_free(&rs);
	}
}
END_TEST

START_TEST(test_zero_region_mid_file)
{
	struct recs rs;
	recs_init(&rs, 100, 51);
	for (size_t i = 0; i < rs.n; i++)
		rs.len[i] = 1000;
	write_recs(&rs);
	/* Zero a 4 KiB page inside block 0, as a power cut does to a page of
	 * an unsynced tail that never reached the disk while later ones did:
	 * a torn tail (FORMAT.md), since nothing after a hole was synced.
	 * Before, this refused the store's open. */
	FILE *f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	static uint8_t page[4096];
	ck_assert_int_eq(fseek(f, 8192, SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(page, 1, sizeof(page), f), sizeof(page));
	ck_assert_int_eq(fclose(f), 0);
	size_t good = 0;
	while (rs.end[good] <= 8192)
		good++;
	struct wal_reader *r = read_expect(&rs, good, -EUCLEAN);
	const struct wal_error *e = wal_reader_error(r);
	ck_assert_msg(e->tail, "a zero page before valid data is not a tail: %s", e->msg);
	ck_assert_uint_eq(e->offset, rec_start(&rs, good));
	wal_reader_close(r);
	recs_free(&rs);
}
END_TEST

/*
 * A power cut leaves each 4 KiB page of the unsynced tail either as it was
 * written last or as the disk last saw it: the bytes of the writes made
 * before that write-back, zeros after.  The store flushes the log after
 * every record, and a write starts at a record's start or 64 KiB
 * (ENV_WRITE_UNIT) after an earlier write's start inside the record.
 * Zero a few random pages past a synced record that way: every synced
 * record must still read back, whatever comes out is a prefix of what was
 * written, and the read ends cleanly or at a torn tail, never with
 * mid-file corruption (it refused the store's open: the power-cut test,
 * seed 21, cut point 898, where a page ended four bytes into a header).
 */
START_TEST(test_stale_pages)
{
	uint64_t seed = tu_seed("test_wal");
	uint64_t s = seed;
	for (int round = 0; round < 300; round++) {
		struct recs rs;
		recs_init(&rs, 40, seed + (uint64_t)round);
		for (size_t i = 0; i < rs.n; i++)
			rs.len[i] = rng_next(&s) % 4 ? rng_next(&s) % 3000
						     : rng_next(&s) % 150000;
		write_recs_flushing(&rs, 1); /* after every record, as the store does */
		uint8_t *tmp = malloc(150000);
		ck_assert_ptr_nonnull(tmp);
		size_t synced = rng_next(&s) % rs.n;
		uint64_t size = rs.end[rs.n - 1];
		/* Where writes started past the synced records. */
		uint64_t starts[4096];
		size_t nstarts = 0;
		for (size_t i = synced; i < rs.n; i++)
			for (uint64_t at = rec_start(&rs, i); at < rs.end[i] && nstarts < 4096;
			     at += ENV_WRITE_UNIT)
				starts[nstarts++] = at;
		if (nstarts == 0)
			goto next;
		int pages = 1 + (int)(rng_next(&s) % 3);
		FILE *f = fopen(path, "r+b");
		ck_assert_ptr_nonnull(f);
		for (int k = 0; k < pages; k++) {
			/* A page the write starting at w reached, left as it was
			 * before that write. */
			uint64_t wstart = starts[rng_next(&s) % nstarts];
			uint64_t wend = wstart + ENV_WRITE_UNIT;
			for (size_t i = synced; i < rs.n; i++)
				if (wstart >= rec_start(&rs, i) && wstart < rs.end[i] && rs.end[i] < wend)
					wend = rs.end[i];
			uint64_t page = (wstart + rng_next(&s) % (wend - wstart)) / 4096 * 4096;
			uint64_t q = page > wstart ? page : wstart;
			uint64_t pend = page + 4096 < size ? page + 4096 : size;
			static uint8_t zeros[4096];
			ck_assert_int_eq(fseek(f, (long)q, SEEK_SET), 0);
			ck_assert_uint_eq(fwrite(zeros, 1, pend - q, f), pend - q);
		}
		ck_assert_int_eq(fclose(f), 0);

		struct wal_reader *r;
		ck_assert_int_eq(wal_reader_open(env, path, &r), 0);
		size_t got = 0;
		int rc;
		const uint8_t *rec;
		size_t len;
		while ((rc = wal_read_record(r, &rec, &len)) == 1) {
			ck_assert_uint_lt(got, rs.n);
			fill(&rs, got, tmp);
			ck_assert_msg(len == rs.len[got] && (len == 0 || memcmp(rec, tmp, len) == 0),
				      "seed %llu round %d: record %zu differs",
				      (unsigned long long)seed, round, got);
			got++;
		}
		ck_assert_msg(got >= synced, "seed %llu round %d: %zu of %zu synced records",
			      (unsigned long long)seed, round, got, synced);
		ck_assert_msg(rc == 0 || (rc == -EUCLEAN && wal_reader_error(r)->tail),
			      "seed %llu round %d: rc %d after %zu records, synced %zu: %s at %llu",
			      (unsigned long long)seed, round, rc, got, synced,
			      wal_reader_error(r)->msg,
			      (unsigned long long)wal_reader_error(r)->offset);
		wal_reader_close(r);
	next:
		free(tmp);
		recs_free(&rs);
	}
}
END_TEST

/*
 * Damage to synced bytes is not a stale page because zeros follow it: a
 * record in the middle whose bytes before a page boundary (not a write's
 * start, not the page's start) were zeroed, with whole records after it,
 * is mid-file corruption.
 */
START_TEST(test_zeros_mid_record_are_damage)
{
	struct recs rs;
	recs_init(&rs, 30, 52);
	for (size_t i = 0; i < rs.n; i++)
		rs.len[i] = 3000;
	write_recs(&rs);
	size_t k = 10;
	while (rec_start(&rs, k) / 4096 == (rs.end[k] - 1) / 4096)
		k++; /* a record that crosses a page boundary */
	uint64_t b = rs.end[k] / 4096 * 4096;
	if (b >= rs.end[k] - 8)
		b -= 4096;
	ck_assert_uint_gt(b - 64, rec_start(&rs, k) + HDR);
	FILE *f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	static uint8_t zeros[64];
	ck_assert_int_eq(fseek(f, (long)(b - 64), SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(zeros, 1, sizeof(zeros), f), sizeof(zeros));
	ck_assert_int_eq(fclose(f), 0);
	struct wal_reader *r = read_expect(&rs, k, -EUCLEAN);
	const struct wal_error *e = wal_reader_error(r);
	ck_assert_msg(!e->tail, "zeros inside a synced record taken for a power cut: %s", e->msg);
	wal_reader_close(r);
	recs_free(&rs);
}
END_TEST

/* ---- writer errors and power cuts (fault_env) ---- */

static struct fault_env *use_fault_env(void)
{
	struct fault_env *fe = fault_env_new();
	ck_assert_ptr_nonnull(fe);
	env = fault_env_env(fe);
	snprintf(path, sizeof(path), "/000001.log");
	return fe;
}

/* The file holds the first ok records of rs, then maybe a torn tail. */
static void expect_records_then_tail(const struct recs *rs, size_t ok)
{
	size_t flen;
	uint8_t *data = slurp(&flen);
	uint64_t good = ok ? rs->end[ok - 1] : 0;
	ck_assert_uint_ge(flen, good);
	if (zero_range(data, good, flen)) {
		wal_reader_close(read_expect(rs, ok, 0));
	} else {
		struct wal_reader *r = read_expect(rs, ok, -EUCLEAN);
		ck_assert_msg(wal_reader_error(r)->tail, "%s",
			      wal_reader_error(r)->msg);
		wal_reader_close(r);
	}
	free(data);
}

START_TEST(test_write_errors_sticky)
{
	static const struct {
		enum fault_kind kind;
		int err;
	} faults[] = {
		{ FAULT_ENOSPC, -ENOSPC },
		{ FAULT_EIO_WRITE, -EIO },
		{ FAULT_EIO_SYNC, -EIO },
	};
	static const size_t lens[] = { 500, 3000, 0, 40000, 1, 70000, 1024, 1025 };
	const size_t nlens = sizeof(lens) / sizeof(lens[0]);
	for (size_t f = 0; f < sizeof(faults) / sizeof(faults[0]); f++) {
		for (uint64_t after = 0; after < 24; after++) {
			struct fault_env *fe = use_fault_env();
			struct recs rs;
			recs_init(&rs, 4 * nlens, 60 + after);
			for (size_t i = 0; i < rs.n; i++)
				rs.len[i] = lens[i % nlens];
			struct wal_writer *w;
			ck_assert_int_eq(wal_writer_open(env, path, &w), 0);
			uint8_t *tmp = malloc(70000);
			ck_assert_ptr_nonnull(tmp);
			fault_env_arm(fe, faults[f].kind, after);
			size_t ok = 0;
			int rc = 0;
			for (size_t i = 0; i < rs.n && rc == 0; i++) {
				fill(&rs, i, tmp);
				rc = wal_add_record(w, tmp, rs.len[i]);
				if (rc)
					break;
				rs.end[i] = wal_writer_size(w);
				ok++;
				rc = i % 2 ? wal_sync(w) : wal_flush(w);
			}
			ck_assert_msg(rc == faults[f].err,
				      "fault %zu after %llu: rc %d", f,
				      (unsigned long long)after, rc);
			/* The writer stays failed after the fault clears. */
			fault_env_clear(fe);
			ck_assert_int_eq(wal_add_record(w, tmp, 10), rc);
			ck_assert_int_eq(wal_flush(w), rc);
			ck_assert_int_eq(wal_sync(w), rc);
			ck_assert_int_eq(wal_writer_close(w), rc);
			free(tmp);
			expect_records_then_tail(&rs, ok);
			recs_free(&rs);
			fault_env_free(fe);
		}
	}
}
END_TEST

START_TEST(test_power_cut)
{
	uint64_t seed = tu_seed("test_wal");
	uint64_t s = seed;
	for (int round = 0; round < 20; round++) {
		struct fault_env *fe = use_fault_env();
		struct recs rs;
		recs_init(&rs, 30, seed + (uint64_t)round);
		for (size_t i = 0; i < rs.n; i++)
			rs.len[i] = rng_next(&s) % 4 ? rng_next(&s) % 3000
						     : rng_next(&s) % 50000;
		size_t synced = rng_next(&s) % rs.n; /* records made durable */
		struct wal_writer *w;
		ck_assert_int_eq(wal_writer_open(env, path, &w), 0);
		ck_assert_int_eq(env->ops->sync_dir(env, "/"), 0);
		uint8_t *tmp = malloc(50000);
		ck_assert_ptr_nonnull(tmp);
		for (size_t i = 0; i < rs.n; i++) {
			fill(&rs, i, tmp);
			ck_assert_int_eq(wal_add_record(w, tmp, rs.len[i]), 0);
			rs.end[i] = wal_writer_size(w);
			ck_assert_int_eq(i + 1 == synced ? wal_sync(w)
							 : wal_flush(w),
					 0);
		}
		free(tmp);
		fault_env_power_cut(fe);
		(void)wal_writer_close(w); /* the dead process's handle: -EIO */
		wal_reader_close(read_expect(&rs, synced, 0));
		recs_free(&rs);
		fault_env_free(fe);
	}
}
END_TEST

/* ---- hand-built fragments ---- */

static size_t frag(uint8_t *p, uint8_t type, const void *data, size_t n)
{
	p[6] = type;
	put_le16(p + 4, (uint16_t)n);
	memcpy(p + HDR, data, n);
	put_le32(p, checksum32(p + 6, 1 + n));
	return HDR + n;
}

static void expect_bad(const uint8_t *file, size_t len, int records,
		       uint64_t offset, bool tail, const char *msg)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(file, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	struct wal_reader *r;
	ck_assert_int_eq(wal_reader_open(env, path, &r), 0);
	const uint8_t *rec;
	size_t rlen;
	for (int i = 0; i < records; i++)
		ck_assert_int_eq(wal_read_record(r, &rec, &rlen), 1);
	ck_assert_int_eq(wal_read_record(r, &rec, &rlen), -EUCLEAN);
	const struct wal_error *e = wal_reader_error(r);
	ck_assert_msg(strstr(e->msg, msg), "got \"%s\", want \"%s\"", e->msg, msg);
	ck_assert_uint_eq(e->offset, offset);
	ck_assert_int_eq(e->tail, tail);
	/* Sticky. */
	ck_assert_int_eq(wal_read_record(r, &rec, &rlen), -EUCLEAN);
	wal_reader_close(r);
}

START_TEST(test_crafted)
{
	static uint8_t file[3 * BLOCK];
	const char *x = "abcdefgh";
	size_t n;

	/* FULL, then an unknown type with a good checksum, at the end. */
	memset(file, 0, sizeof(file));
	n = frag(file, 1, x, 8);
	size_t bad = n;
	n += frag(file + n, 9, x, 3);
	expect_bad(file, n, 1, bad, true, "unknown fragment type 9");

	/* ... and with a valid FULL in the next block: mid-file. */
	size_t m = frag(file + BLOCK, 1, x, 5);
	expect_bad(file, BLOCK + m, 1, bad, false, "unknown fragment type 9");

	/* LAST without FIRST; MIDDLE without FIRST. */
	memset(file, 0, sizeof(file));
	n = frag(file, 4, x, 2);
	expect_bad(file, n, 0, 0, true, "LAST without FIRST");
	n = frag(file, 3, x, 2);
	expect_bad(file, n, 0, 0, true, "MIDDLE without FIRST");

	/* FIRST then FULL: the FULL is valid data after the broken record. */
	n = frag(file, 2, x, 2);
	bad = n;
	n += frag(file + n, 1, x, 2);
	expect_bad(file, n, 0, bad, false, "FULL inside a record");

	/* FIRST, then the file ends on a fragment boundary. */
	memset(file, 0, sizeof(file));
	n = frag(file, 2, x, 2);
	expect_bad(file, n, 0, n, true, "file ends inside a record");

	/* FIRST, then zeros to the end of the file. */
	expect_bad(file, n + 100, 0, n, true, "file ends inside a record");

	/* A length running past the block end, valid FULL in block 1. */
	memset(file, 0, sizeof(file));
	n = frag(file, 1, x, 8);
	file[n + 4] = 0x40; /* 40000 = 0x9c40 */
	file[n + 5] = 0x9c;
	file[n + 6] = 1;
	frag(file + BLOCK, 1, x, 8);
	expect_bad(file, BLOCK + HDR + 8, 1, n, false,
		   "fragment length 40000 runs past block end");

	/* A file ending inside a header. */
	memset(file, 0, sizeof(file));
	n = frag(file, 1, x, 8);
	n += frag(file + n, 1, x, 8);
	expect_bad(file, n - 8 - 3, 1, HDR + 8, true,
		   "file ends inside a fragment header");
	expect_bad(file, n - 4, 1, HDR + 8, true, "file ends inside a record");
}
END_TEST

START_TEST(test_reader_missing_file)
{
	struct wal_reader *r;
	char missing[160];
	snprintf(missing, sizeof(missing), "%s/nope.log", dir);
	ck_assert_int_eq(wal_reader_open(env, missing, &r), -ENOENT);
}
END_TEST

static Suite *wal_suite(void)
{
	Suite *s = suite_create("wal");
	TCase *tc = tcase_create("format");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_empty_file);
	tcase_add_test(tc, test_random_round_trip);
	tcase_add_test(tc, test_exact_block_fill);
	tcase_add_test(tc, test_block_tails);
	tcase_add_test(tc, test_torn_small_last);
	tcase_add_test(tc, test_torn_empty_last);
	tcase_add_test(tc, test_torn_after_padding);
	tcase_add_test(tc, test_torn_large_last);
	tcase_add_test(tc, test_torn_random);
	tcase_add_test(tc, test_corrupt_mid_file);
	tcase_add_test(tc, test_corrupt_mid_file_no_block_starts);
	tcase_add_test(tc, test_corrupt_length_last_block);
	tcase_add_test(tc, test_corrupt_last_record);
	tcase_add_test(tc, test_zero_filled_end);
	tcase_add_test(tc, test_zero_region_mid_file);
	tcase_add_test(tc, test_stale_pages);
	tcase_add_test(tc, test_zeros_mid_record_are_damage);
	tcase_add_test(tc, test_write_errors_sticky);
	tcase_add_test(tc, test_power_cut);
	tcase_add_test(tc, test_crafted);
	tcase_add_test(tc, test_reader_missing_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wal_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
