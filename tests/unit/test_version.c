/*
 * test_version: version edits and their encoding (store/version_edit.c),
 * the version set and its MANIFEST/CURRENT (store/version.c), compaction
 * picking (store/compaction_pick.c) and the level iterator, on the POSIX
 * env in a temporary directory.  FORMAT.md "MANIFEST".
 *
 * Most cases use made-up table metadata (no table files); the iterator
 * case builds real tables.  Randomized cases print their seed; set
 * LSMFS_SEED to replay one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dbformat.h"
#include "env.h"
#include "fault_env.h"
#include "iter.h"
#include "sst.h"
#include "store.h"
#include "version.h"
#include "wal.h"

/* ---- helpers ---- */

struct ik {
	uint8_t d[64];
	size_t n;
};

static struct ik IK(const char *u, uint64_t seq)
{
	struct ik k;
	size_t l = strlen(u);
	ck_assert_uint_le(l, sizeof(k.d) - 8);
	memcpy(k.d, u, l);
	put_le64(k.d + l, ikey_pack_tag(seq, KTYPE_VALUE));
	k.n = l + 8;
	return k;
}

static void add_seq(struct version_edit *e, int level, uint64_t number,
		    uint64_t size, const char *s, uint64_t sseq, const char *l,
		    uint64_t lseq)
{
	struct ik a = IK(s, sseq), b = IK(l, lseq);
	ck_assert_int_eq(version_edit_add_file(e, level, number, size, a.d, a.n,
					       b.d, b.n), 0);
}

static void add(struct version_edit *e, int level, uint64_t number,
		uint64_t size, const char *s, const char *l)
{
	add_seq(e, level, number, size, s, 100, l, 100);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return remove(p);
}

struct logcap {
	int count;
	char last[1024];
	char all[8192];
};

static void log_fn(void *ctx, const char *msg)
{
	struct logcap *l = ctx;
	l->count++;
	snprintf(l->last, sizeof(l->last), "%s", msg);
	size_t n = strlen(l->all);
	snprintf(l->all + n, sizeof(l->all) - n, "%s\n", msg);
}

struct fx {
	char dir[64];
	struct store_options opt;
	pthread_mutex_t mu;
	uint64_t manifest_bytes;
	struct table_cache *tables;
	struct sst_counters counters;
	struct version_set *vs;
	struct logcap log;
};

static struct version_set *fx_vs(struct fx *f)
{
	struct version_set_options o = {
		.env = store_env_posix(), .dir = f->dir, .opt = &f->opt,
		.tables = f->tables, .manifest_bytes = &f->manifest_bytes,
		.log = log_fn, .log_ctx = &f->log,
	};
	struct version_set *vs = version_set_new(&o);
	ck_assert_ptr_nonnull(vs);
	return vs;
}

static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/lsmfs_test_version_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	f->opt.target_file_size = 100;
	f->opt.level_base_bytes = 1000;
	f->opt.level_multiplier = 10;
	f->opt.l0_compaction_trigger = 4;
	f->opt.l0_slowdown_trigger = 8;
	f->opt.l0_stop_trigger = 12;
	pthread_mutex_init(&f->mu, NULL);
	f->vs = fx_vs(f);
	pthread_mutex_lock(&f->mu);
	ck_assert_int_eq(version_set_recover(f->vs), -ENOENT);
	ck_assert_int_eq(version_set_create(f->vs), 0);
}

static void fx_fini(struct fx *f)
{
	version_set_free(f->vs);
	pthread_mutex_unlock(&f->mu);
	pthread_mutex_destroy(&f->mu);
	if (f->tables)
		table_cache_free(f->tables);
	ck_assert_int_eq(nftw(f->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS), 0);
}

static int apply(struct fx *f, struct version_edit *e)
{
	int rc = version_set_log_and_apply(f->vs, e, &f->mu);
	version_edit_free(e);
	version_edit_init(e);
	return rc;
}

/* "L0:4,3 L1:5/120[a..c]" style description of the current version. */
static void describe(struct version_set *vs, char *out, size_t len)
{
	struct version *v = version_set_current(vs);
	size_t n = 0;
	out[0] = '\0';
	for (int l = 0; l < NUM_LEVELS; l++) {
		if (!v->nfiles[l])
			continue;
		n += (size_t)snprintf(out + n, len - n, "L%d:", l);
		for (size_t i = 0; i < v->nfiles[l]; i++) {
			const struct file_meta *f = v->files[l][i];
			n += (size_t)snprintf(out + n, len - n,
					      "%s%" PRIu64 "/%" PRIu64 "[%.*s..%.*s]",
					      i ? "," : "", f->number, f->size,
					      (int)(f->smallest.len - 8),
					      (const char *)f->smallest.data,
					      (int)(f->largest.len - 8),
					      (const char *)f->largest.data);
		}
		n += (size_t)snprintf(out + n, len - n, " ");
	}
}

static void read_current(const char *dir, char *out, size_t len)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/CURRENT", dir);
	FILE *fp = fopen(p, "r");
	ck_assert_ptr_nonnull(fp);
	size_t n = fread(out, 1, len - 1, fp);
	out[n] = '\0';
	fclose(fp);
}

static uint64_t test_seed(void)
{
	const char *e = getenv("LSMFS_SEED");
	uint64_t seed = e ? strtoull(e, NULL, 0)
			  : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
	printf("test_version: seed %" PRIu64 " (LSMFS_SEED=%" PRIu64
	       " to replay)\n", seed, seed);
	fflush(stdout);
	return seed;
}

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- edits ---- */

static void full_edit(struct version_edit *e)
{
	version_edit_init(e);
	version_edit_set_log_number(e, 7);
	version_edit_set_next_file(e, 1000000000000ull);
	version_edit_set_last_sequence(e, 123456789);
	struct ik cp = IK("pointer", 5);
	version_edit_set_compact_pointer(e, 2, cp.d, cp.n);
	version_edit_delete_file(e, 1, 17);
	version_edit_delete_file(e, 6, 18);
	for (int i = 0; i < 9; i++)
		add(e, i % NUM_LEVELS, 20 + (uint64_t)i, 4096 * (uint64_t)i,
		    "aaa", "zzz");
}

START_TEST(test_edit_roundtrip)
{
	struct version_edit e, d;
	full_edit(&e);
	struct buf b, b2;
	buf_init(&b);
	buf_init(&b2);
	version_edit_encode(&e, &b);
	ck_assert_int_eq(buf_ok(&b), 0);
	ck_assert_int_eq(version_edit_decode(&d, b.data, b.len), 0);
	ck_assert(d.has_log_number && d.log_number == 7);
	ck_assert(d.has_next_file && d.next_file_number == 1000000000000ull);
	ck_assert(d.has_last_sequence && d.last_sequence == 123456789);
	ck_assert_uint_eq(d.ncompact_pointers, 1);
	ck_assert_int_eq(d.compact_pointers[0].level, 2);
	ck_assert_uint_eq(d.ndeleted, 2);
	ck_assert(d.deleted[1].level == 6 && d.deleted[1].number == 18);
	ck_assert_uint_eq(d.nadded, 9);
	for (size_t i = 0; i < 9; i++) {
		ck_assert_int_eq(d.added[i].level, (int)i % NUM_LEVELS);
		ck_assert_uint_eq(d.added[i].meta->number, 20 + i);
		ck_assert_uint_eq(d.added[i].meta->size, 4096 * i);
		ck_assert_uint_eq(d.added[i].meta->smallest.len, 11);
	}
	version_edit_encode(&d, &b2);
	ck_assert_uint_eq(b.len, b2.len);
	ck_assert_mem_eq(b.data, b2.data, b.len);
	version_edit_free(&d);
	version_edit_free(&e);

	/* An empty edit encodes to nothing and decodes back. */
	buf_clear(&b);
	version_edit_init(&e);
	version_edit_encode(&e, &b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(version_edit_decode(&d, b.data, 0), 0);
	ck_assert_uint_eq(d.nadded + d.ndeleted + d.ncompact_pointers, 0);
	version_edit_free(&d);
	buf_free(&b);
	buf_free(&b2);
}
END_TEST

/* Lifetime write totals: tag 7 round-trips, and a store reopened keeps
 * counting from where it was (store_get_stats and store_list_tables). */
START_TEST(test_write_totals)
{
	struct version_edit e, d;
	version_edit_init(&e);
	e.has_totals = true;
	e.totals = (struct store_totals){1, 2, 3, 1ull << 40, 5};
	struct buf b;
	buf_init(&b);
	version_edit_encode(&e, &b);
	ck_assert_int_eq(version_edit_decode(&d, b.data, b.len), 0);
	ck_assert(d.has_totals);
	ck_assert(d.totals.user_bytes_written == 1 && d.totals.wal_bytes_written == 2 &&
		  d.totals.flush_bytes_written == 3 && d.totals.compaction_bytes_written == 1ull << 40 &&
		  d.totals.manifest_bytes_written == 5);
	version_edit_free(&d);
	version_edit_free(&e);
	buf_free(&b);

	char dir[] = "/tmp/lsmfs-totals-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct store_options o;
	store_options_init(&o);
	uint64_t before = 0;
	char v[1000];
	memset(v, 'v', sizeof(v));
	for (int round = 0; round < 3; round++) {
		struct store *st;
		ck_assert_int_eq(store_open(dir, &o, &st), 0);
		for (int i = 0; i < 200; i++) {
			char k[32];
			int kl = snprintf(k, sizeof(k), "r%d-k%d", round, i);
			ck_assert_int_eq(store_put(st, k, (size_t)kl, v, sizeof(v), 0), 0);
		}
		ck_assert_int_eq(store_flush(st), 0);
		struct store_stats ss;
		store_get_stats(st, &ss);
		ck_assert_uint_ge(ss.lifetime.user_bytes_written, before + 200 * sizeof(v));
		ck_assert_uint_gt(ss.lifetime.flush_bytes_written, 0);
		before = ss.lifetime.user_bytes_written;
		ck_assert_int_eq(store_close(st), 0);

		struct store_table_info *t;
		size_t n;
		struct store_totals tot;
		ck_assert_int_eq(store_list_tables(dir, &o, &t, &n, &tot), 0);
		ck_assert_uint_ge(n, 1);
		/* as of the flush's edit: every put of this round was in it */
		ck_assert_uint_eq(tot.user_bytes_written, before);
		ck_assert(store_totals_write_amp(&tot) > 1.0);
		store_tables_free(t, n);
	}
	ck_assert_uint_ge(before, 3 * 200 * sizeof(v));
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_edit_corrupt)
{
	struct version_edit e, d;
	full_edit(&e);
	struct buf b;
	buf_init(&b);
	version_edit_encode(&e, &b);
	version_edit_free(&e);

	/* Every truncation either stops at a field boundary (a shorter valid
	 * edit) or is -EUCLEAN; most must be -EUCLEAN. */
	int bad = 0;
	for (size_t n = 0; n < b.len; n++) {
		int rc = version_edit_decode(&d, b.data, n);
		ck_assert(rc == 0 || rc == -EUCLEAN);
		bad += rc == -EUCLEAN;
		version_edit_free(&d);
	}
	ck_assert_int_gt(bad, (int)b.len / 2);

	/* Hand-made bad records. */
	uint8_t rec[64];
	uint8_t *p;
	/* unknown tag */
	p = put_varint32(rec, 99);
	ck_assert_int_eq(version_edit_decode(&d, rec, (size_t)(p - rec)), -EUCLEAN);
	/* level out of range */
	p = put_varint32(rec, 5);
	p = put_varint32(p, NUM_LEVELS);
	p = put_varint64(p, 3);
	ck_assert_int_eq(version_edit_decode(&d, rec, (size_t)(p - rec)), -EUCLEAN);
	/* key length past the end */
	p = put_varint32(rec, 4);
	p = put_varint32(p, 1);
	p = put_varint32(p, 40);
	memset(p, 'k', 10);
	p += 10;
	ck_assert_int_eq(version_edit_decode(&d, rec, (size_t)(p - rec)), -EUCLEAN);
	/* key shorter than a tag */
	p = put_varint32(rec, 4);
	p = put_varint32(p, 1);
	p = put_varint32(p, 3);
	memcpy(p, "abc", 3);
	p += 3;
	ck_assert_int_eq(version_edit_decode(&d, rec, (size_t)(p - rec)), -EUCLEAN);
	/* new file with smallest > largest, otherwise well formed */
	{
		struct ik s = IK("zz", 1), l = IK("aa", 1);
		struct buf r;
		buf_init(&r);
		buf_put_varint32(&r, 6);
		buf_put_varint32(&r, 1);
		buf_put_varint64(&r, 9);
		buf_put_varint64(&r, 100);
		buf_put_lenbytes(&r, s.d, s.n);
		buf_put_lenbytes(&r, l.d, l.n);
		ck_assert_int_eq(version_edit_decode(&d, r.data, r.len), -EUCLEAN);
		/* and the same record the right way round is fine */
		buf_clear(&r);
		buf_put_varint32(&r, 6);
		buf_put_varint32(&r, 1);
		buf_put_varint64(&r, 9);
		buf_put_varint64(&r, 100);
		buf_put_lenbytes(&r, l.d, l.n);
		buf_put_lenbytes(&r, s.d, s.n);
		ck_assert_int_eq(version_edit_decode(&d, r.data, r.len), 0);
		ck_assert_uint_eq(d.nadded, 1);
		version_edit_free(&d);
		buf_free(&r);
	}
	/* an overlong varint */
	memset(rec, 0xff, 12);
	rec[0] = 1;
	ck_assert_int_eq(version_edit_decode(&d, rec, 12), -EUCLEAN);

	/* Random damage never crashes or leaks (ASan) and is 0 or -EUCLEAN. */
	uint64_t seed = test_seed(), s = seed;
	uint8_t *copy = malloc(b.len);
	for (int round = 0; round < 2000; round++) {
		memcpy(copy, b.data, b.len);
		int flips = 1 + (int)(rng(&s) % 4);
		for (int i = 0; i < flips; i++)
			copy[rng(&s) % b.len] ^= (uint8_t)(1 + rng(&s) % 255);
		size_t n = b.len - (size_t)(rng(&s) % 4);
		int rc = version_edit_decode(&d, copy, n);
		ck_assert_msg(rc == 0 || rc == -EUCLEAN, "seed %" PRIu64, seed);
		if (rc == 0)
			for (size_t i = 0; i < d.nadded; i++)
				ck_assert_int_lt(d.added[i].level, NUM_LEVELS);
		version_edit_free(&d);
	}
	free(copy);
	buf_free(&b);
}
END_TEST

/* ---- MANIFEST ---- */

static uint64_t manifest_number_from_current(const char *dir)
{
	char cur[64];
	read_current(dir, cur, sizeof(cur));
	ck_assert_msg(strncmp(cur, "MANIFEST-", 9) == 0, "CURRENT: %s", cur);
	ck_assert(cur[strlen(cur) - 1] == '\n');
	return strtoull(cur + 9, NULL, 10);
}

/* Apply a fixed history; returns the description of the result. */
static void build_history(struct fx *f, char *desc, size_t len)
{
	struct version_edit e;
	version_edit_init(&e);
	version_edit_set_log_number(&e, version_set_new_file_number(f->vs));
	add(&e, 0, 10, 100, "a", "m");
	add(&e, 0, 11, 110, "c", "p");
	ck_assert_int_eq(apply(f, &e), 0);
	/* L0 newest first */
	struct version *v = version_set_current(f->vs);
	ck_assert_uint_eq(v->nfiles[0], 2);
	ck_assert_uint_eq(v->files[0][0]->number, 11);

	add(&e, 1, 13, 130, "n", "r");
	add(&e, 1, 12, 120, "a", "f");
	version_edit_delete_file(&e, 0, 10);
	ck_assert_int_eq(apply(f, &e), 0);

	/* a trivial move of 13 from L1 to L2, with a compact pointer */
	struct ik cp = IK("f", 100);
	version_edit_set_compact_pointer(&e, 1, cp.d, cp.n);
	version_edit_delete_file(&e, 1, 13);
	add(&e, 2, 13, 130, "n", "r");
	add(&e, 1, 14, 140, "g", "h");
	ck_assert_int_eq(apply(f, &e), 0);
	version_set_set_last_sequence(f->vs, 4242);
	version_edit_set_log_number(&e, 30);
	add(&e, 3, 15, 150, "x", "z");
	ck_assert_int_eq(apply(f, &e), 0);
	describe(f->vs, desc, len);
	ck_assert_str_eq(desc, "L0:11/110[c..p] L1:12/120[a..f],14/140[g..h] "
			       "L2:13/130[n..r] L3:15/150[x..z] ");
}

START_TEST(test_manifest_roundtrip)
{
	struct fx f;
	fx_init(&f);
	char before[1024], after[1024];
	build_history(&f, before, sizeof(before));
	uint64_t m1 = version_set_manifest_number(f.vs);
	ck_assert_uint_eq(manifest_number_from_current(f.dir), m1);
	ck_assert_uint_gt(f.manifest_bytes, 0);
	ck_assert_uint_eq(version_set_log_number(f.vs), 30);
	uint64_t next = version_set_new_file_number(f.vs);
	version_set_reuse_file_number(f.vs, next);

	/* Recover into a new set. */
	version_set_free(f.vs);
	f.vs = fx_vs(&f);
	ck_assert_int_eq(version_set_recover(f.vs), 0);
	describe(f.vs, after, sizeof(after));
	ck_assert_str_eq(before, after);
	ck_assert_uint_eq(version_set_log_number(f.vs), 30);
	ck_assert_uint_eq(version_set_last_sequence(f.vs), 4242);
	ck_assert_uint_eq(version_set_manifest_number(f.vs), m1);
	ck_assert_uint_ge(version_set_new_file_number(f.vs), next);

	/* The next edit starts a new MANIFEST and CURRENT follows it. */
	struct version_edit e;
	version_edit_init(&e);
	version_edit_delete_file(&e, 3, 15);
	ck_assert_int_eq(apply(&f, &e), 0);
	uint64_t m2 = version_set_manifest_number(f.vs);
	ck_assert_uint_gt(m2, m1);
	ck_assert_uint_eq(manifest_number_from_current(f.dir), m2);
	describe(f.vs, before, sizeof(before));
	/* A second edit appends to it. */
	add(&e, 4, 40, 400, "k", "l");
	ck_assert_int_eq(apply(&f, &e), 0);
	ck_assert_uint_eq(version_set_manifest_number(f.vs), m2);
	describe(f.vs, before, sizeof(before));

	version_set_free(f.vs);
	f.vs = fx_vs(&f);
	ck_assert_int_eq(version_set_recover(f.vs), 0);
	describe(f.vs, after, sizeof(after));
	ck_assert_str_eq(before, after);
	ck_assert_str_eq(after, "L0:11/110[c..p] L1:12/120[a..f],14/140[g..h] "
				"L2:13/130[n..r] L4:40/400[k..l] ");
	ck_assert_uint_gt(version_set_new_file_number(f.vs), 40);
	ck_assert_int_eq(f.log.count, 0);
	fx_fini(&f);
}
END_TEST

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
	fclose(fp);
}

static int reopen(struct fx *f)
{
	version_set_free(f->vs);
	f->vs = fx_vs(f);
	memset(&f->log, 0, sizeof(f->log));
	return version_set_recover(f->vs);
}

/* Write a MANIFEST of raw records and point CURRENT at it. */
static void write_manifest(struct fx *f, uint64_t number, struct buf *recs,
			   size_t n)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/MANIFEST-%06" PRIu64, f->dir, number);
	struct wal_writer *w;
	ck_assert_int_eq(wal_writer_open(store_env_posix(), p, &w), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(wal_add_record(w, recs[i].data, recs[i].len), 0);
	ck_assert_int_eq(wal_writer_close(w), 0);
	char cur[64];
	int cn = snprintf(cur, sizeof(cur), "MANIFEST-%06" PRIu64 "\n", number);
	snprintf(p, sizeof(p), "%s/CURRENT", f->dir);
	write_file(p, cur, (size_t)cn);
}

START_TEST(test_manifest_corrupt)
{
	struct fx f;
	fx_init(&f);
	char good[1024], got[1024], mpath[128];
	build_history(&f, good, sizeof(good));
	uint64_t m = version_set_manifest_number(f.vs);
	snprintf(mpath, sizeof(mpath), "%s/MANIFEST-%06" PRIu64, f.dir, m);

	/* A torn tail (the last edit cut short) is ignored and reported. */
	FILE *fp = fopen(mpath, "r+");
	ck_assert_ptr_nonnull(fp);
	fseek(fp, 0, SEEK_END);
	long size = ftell(fp);
	fclose(fp);
	ck_assert_int_eq(truncate(mpath, size - 3), 0);
	ck_assert_int_eq(reopen(&f), 0);
	ck_assert_int_eq(f.log.count, 1);
	ck_assert_msg(strstr(f.log.last, mpath) && strstr(f.log.last, "torn"),
		      "%s", f.log.last);
	describe(f.vs, got, sizeof(got));
	/* The last edit (L3 file 15, log 30) is gone. */
	ck_assert_ptr_null(strstr(got, "L3:"));
	ck_assert_uint_ne(version_set_log_number(f.vs), 30);
	/* paranoid_checks: the same tail is an error */
	f.opt.paranoid_checks = true;
	ck_assert_int_eq(reopen(&f), -EUCLEAN);
	f.opt.paranoid_checks = false;

	/* Damage in the middle: -EUCLEAN, naming the file and an offset. */
	ck_assert_int_eq(reopen(&f), 0);
	int fd = open(mpath, O_RDWR);
	ck_assert_int_ge(fd, 0);
	uint8_t byte;
	ck_assert_int_eq(pread(fd, &byte, 1, 12), 1);
	byte ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &byte, 1, 12), 1);
	close(fd);
	ck_assert_int_eq(reopen(&f), -EUCLEAN);
	ck_assert_msg(strstr(f.log.last, mpath) && strstr(f.log.last, "offset "),
		      "%s", f.log.last);

	/* CURRENT problems. */
	char cpath[128];
	snprintf(cpath, sizeof(cpath), "%s/CURRENT", f.dir);
	unlink(cpath);
	ck_assert_int_eq(reopen(&f), -ENOENT);
	write_file(cpath, "garbage\n", 8);
	ck_assert_int_eq(reopen(&f), -EUCLEAN);
	ck_assert_msg(strstr(f.log.last, "CURRENT"), "%s", f.log.last);
	write_file(cpath, "MANIFEST-000999\n", 16);
	ck_assert_int_eq(reopen(&f), -EUCLEAN);
	ck_assert_msg(strstr(f.log.last, "does not exist"), "%s", f.log.last);
	write_file(cpath, "MANIFEST-12x\n", 13);
	ck_assert_int_eq(reopen(&f), -EUCLEAN);

	/* A record that is not an edit. */
	struct buf recs[3];
	for (int i = 0; i < 3; i++)
		buf_init(&recs[i]);
	struct version_edit e;
	version_edit_init(&e);
	version_edit_set_log_number(&e, 1);
	version_edit_set_next_file(&e, 100);
	version_edit_set_last_sequence(&e, 5);
	add(&e, 1, 50, 10, "a", "c");
	version_edit_encode(&e, &recs[0]);
	version_edit_free(&e);
	buf_put_varint32(&recs[1], 77); /* unknown tag */
	write_manifest(&f, 200, recs, 2);
	ck_assert_int_eq(reopen(&f), -EUCLEAN);
	ck_assert_msg(strstr(f.log.last, "MANIFEST-000200") &&
			      strstr(f.log.last, "offset"),
		      "%s", f.log.last);

	/* Well-formed edits that make level 1 overlap. */
	buf_clear(&recs[1]);
	version_edit_init(&e);
	add(&e, 1, 51, 10, "b", "d");
	version_edit_encode(&e, &recs[1]);
	version_edit_free(&e);
	write_manifest(&f, 201, recs, 2);
	ck_assert_int_eq(reopen(&f), -EUCLEAN);
	ck_assert_msg(strstr(f.log.last, "overlap"), "%s", f.log.last);

	/* Missing counters. */
	buf_clear(&recs[1]);
	version_edit_init(&e);
	add(&e, 2, 52, 10, "b", "d");
	version_edit_encode(&e, &recs[1]);
	version_edit_free(&e);
	write_manifest(&f, 202, &recs[1], 1);
	ck_assert_int_eq(reopen(&f), -EUCLEAN);
	ck_assert_msg(strstr(f.log.last, "no next_file"), "%s", f.log.last);
	/* ... and with them it is fine */
	write_manifest(&f, 203, recs, 2);
	ck_assert_int_eq(reopen(&f), 0);
	describe(f.vs, got, sizeof(got));
	ck_assert_str_eq(got, "L1:50/10[a..c] L2:52/10[b..d] ");
	ck_assert_uint_ge(version_set_new_file_number(f.vs), 204);

	for (int i = 0; i < 3; i++)
		buf_free(&recs[i]);
	fx_fini(&f);
}
END_TEST

START_TEST(test_refuse_overlap)
{
	struct fx f;
	fx_init(&f);
	char a[1024], b[1024];
	struct version_edit e;
	version_edit_init(&e);
	add(&e, 1, 5, 10, "a", "f");
	ck_assert_int_eq(apply(&f, &e), 0);
	describe(f.vs, a, sizeof(a));
	add(&e, 1, 6, 10, "e", "g");
	ck_assert_int_eq(apply(&f, &e), -EUCLEAN);
	describe(f.vs, b, sizeof(b));
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(f.log.count, 1);
	/* Same user key, older sequence in the next file: not an overlap. */
	add_seq(&e, 1, 7, 10, "f", 50, "h", 1);
	ck_assert_int_eq(apply(&f, &e), 0);
	/* Still usable and recoverable. */
	ck_assert_int_eq(reopen(&f), 0);
	describe(f.vs, b, sizeof(b));
	ck_assert_str_eq(b, "L1:5/10[a..f],7/10[f..h] ");
	fx_fini(&f);
}
END_TEST

static bool has_num(const uint64_t *nums, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (nums[i] == x)
			return true;
	return false;
}

START_TEST(test_live_files)
{
	struct fx f;
	fx_init(&f);
	struct version_edit e;
	version_edit_init(&e);
	add(&e, 0, 5, 10, "a", "f");
	add(&e, 0, 6, 10, "b", "c");
	ck_assert_int_eq(apply(&f, &e), 0);
	struct version *old = version_set_current(f.vs);
	version_ref(old);
	version_edit_delete_file(&e, 0, 5);
	add(&e, 1, 7, 10, "a", "f");
	ck_assert_int_eq(apply(&f, &e), 0);
	uint64_t *nums = NULL;
	size_t n = 0;
	ck_assert_int_eq(version_set_live_files(f.vs, &nums, &n), 0);
	ck_assert(has_num(nums, n, 5) && has_num(nums, n, 6) &&
		  has_num(nums, n, 7));
	/* old still lists 5 and shares 6 with the current version */
	ck_assert_ptr_eq(old->files[0][0], version_set_current(f.vs)->files[0][0]);
	ck_assert_int_eq(old->files[0][0]->refs, 2);
	version_unref(old);
	free(nums);
	nums = NULL;
	n = 0;
	ck_assert_int_eq(version_set_live_files(f.vs, &nums, &n), 0);
	ck_assert(!has_num(nums, n, 5) && has_num(nums, n, 6));
	ck_assert_int_eq(version_set_current(f.vs)->files[0][0]->refs, 1);
	free(nums);
	fx_fini(&f);
}
END_TEST

static void expect_numbers(struct file_meta **fs, size_t n, const char *want)
{
	char got[256] = "";
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += (size_t)snprintf(got + k, sizeof(got) - k, "%s%" PRIu64,
				      i ? "," : "", fs[i]->number);
	ck_assert_str_eq(got, want);
}

static void overlap(struct version_set *vs, int level, const char *b,
		    const char *e, const char *want)
{
	struct file_meta **fs;
	size_t n;
	ck_assert_int_eq(version_overlapping_files(version_set_current(vs), level,
						   (const uint8_t *)b,
						   b ? strlen(b) : 0,
						   (const uint8_t *)e,
						   e ? strlen(e) : 0, &fs, &n),
			 0);
	expect_numbers(fs, n, want);
	free(fs);
}

START_TEST(test_overlapping_and_find)
{
	struct fx f;
	fx_init(&f);
	struct version_edit e;
	version_edit_init(&e);
	add(&e, 0, 1, 10, "a", "c");
	add(&e, 0, 2, 10, "b", "f");
	add(&e, 0, 3, 10, "e", "g");
	add(&e, 0, 4, 10, "x", "y");
	add(&e, 1, 5, 10, "b", "d");
	add(&e, 1, 6, 10, "f", "h");
	add(&e, 1, 7, 10, "m", "p");
	ck_assert_int_eq(apply(&f, &e), 0);
	/* level 0 widens to the closure */
	overlap(f.vs, 0, "a", "a", "3,2,1");
	overlap(f.vs, 0, "g", "g", "3,2,1");
	overlap(f.vs, 0, "h", "w", "");
	overlap(f.vs, 0, "w", NULL, "4");
	overlap(f.vs, 0, NULL, NULL, "4,3,2,1");
	/* sorted levels do not */
	overlap(f.vs, 1, "a", "a", "");
	overlap(f.vs, 1, "d", "f", "5,6");
	overlap(f.vs, 1, "d", "da", "5");
	overlap(f.vs, 1, NULL, "m", "5,6,7");
	overlap(f.vs, 1, "i", NULL, "7");
	overlap(f.vs, 1, "q", NULL, "");
	overlap(f.vs, 2, NULL, NULL, "");

	struct version *v = version_set_current(f.vs);
	struct ik k = IK("a", 1);
	ck_assert_uint_eq(version_find_file(v, 1, k.d, k.n), 0);
	k = IK("d", 100);
	ck_assert_uint_eq(version_find_file(v, 1, k.d, k.n), 0);
	k = IK("d", 99); /* older than the file's last entry: past it */
	ck_assert_uint_eq(version_find_file(v, 1, k.d, k.n), 1);
	k = IK("i", 1);
	ck_assert_uint_eq(version_find_file(v, 1, k.d, k.n), 2);
	k = IK("z", 1);
	ck_assert_uint_eq(version_find_file(v, 1, k.d, k.n), 3);
	ck_assert_uint_eq(version_find_file(v, 2, k.d, k.n), 0);
	ck_assert_uint_eq(version_level_bytes(v, 1), 30);
	fx_fini(&f);
}
END_TEST

/* ---- picking ---- */

START_TEST(test_pick_level0)
{
	struct fx f;
	fx_init(&f);
	struct version_edit e;
	version_edit_init(&e);
	add(&e, 0, 1, 10, "a", "c");
	add(&e, 0, 2, 10, "b", "d");
	add(&e, 0, 3, 10, "x", "z");
	add(&e, 1, 20, 10, "w", "y");
	add(&e, 1, 21, 10, "e", "f");
	ck_assert_int_eq(apply(&f, &e), 0);
	ck_assert(!version_set_needs_compaction(f.vs));
	ck_assert_ptr_null(version_set_pick_compaction(f.vs));
	add(&e, 0, 4, 10, "y", "zz");
	ck_assert_int_eq(apply(&f, &e), 0);
	struct version *v = version_set_current(f.vs);
	ck_assert(version_set_needs_compaction(f.vs));
	ck_assert_int_eq(v->compaction_level, 0);
	ck_assert(v->compaction_score >= 1.0 && v->compaction_score < 1.01);

	struct compaction *c = version_set_pick_compaction(f.vs);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->level, 0);
	expect_numbers(c->inputs[0], c->ninputs[0], "4,3");
	expect_numbers(c->inputs[1], c->ninputs[1], "20");
	ck_assert(c->inputs[0][0]->being_compacted && c->inputs[1][0]->being_compacted);
	ck_assert_uint_eq(c->max_output_file_size, 100);
	ck_assert(!compaction_is_trivial_move(c));
	/* only one level-0 compaction at a time */
	ck_assert_ptr_null(version_set_pick_compaction(f.vs));

	/* Apply it as the store would: outputs replace the inputs. */
	compaction_add_input_deletions(c);
	add(&c->edit, 1, 30, 25, "w", "zz");
	ck_assert_int_eq(version_set_log_and_apply(f.vs, &c->edit, &f.mu), 0);
	compaction_free(c);
	char d[512];
	describe(f.vs, d, sizeof(d));
	ck_assert_str_eq(d, "L0:2/10[b..d],1/10[a..c] L1:21/10[e..f],30/25[w..zz] ");
	ck_assert(!version_set_needs_compaction(f.vs));
	for (size_t i = 0; i < 2; i++)
		ck_assert(!version_set_current(f.vs)->files[0][i]->being_compacted);
	fx_fini(&f);
}
END_TEST

START_TEST(test_pick_size_round_robin)
{
	struct fx f;
	fx_init(&f);
	struct version_edit e;
	version_edit_init(&e);
	/* L1 target is 1000 bytes: 2500 gives a score of 2.5. */
	add(&e, 1, 1, 500, "a", "b");
	add(&e, 1, 2, 500, "c", "d");
	add(&e, 1, 3, 500, "e", "f");
	add(&e, 1, 4, 500, "g", "h");
	add(&e, 1, 5, 500, "i", "j");
	add(&e, 0, 9, 10, "a", "z");
	/* L2 target 10000: 5000 bytes, score 0.5 */
	add(&e, 2, 6, 5000, "c", "c5");
	ck_assert_int_eq(apply(&f, &e), 0);
	struct version *v = version_set_current(f.vs);
	ck_assert_int_eq(v->compaction_level, 1);
	ck_assert(v->compaction_score > 2.49 && v->compaction_score < 2.51);
	const char *want[] = { "1", "2", "3", "4", "5", "1" };
	const char *want1[] = { "", "6", "", "", "", "" };
	for (int i = 0; i < 6; i++) {
		struct compaction *c = version_set_pick_compaction(f.vs);
		ck_assert_ptr_nonnull(c);
		ck_assert_int_eq(c->level, 1);
		expect_numbers(c->inputs[0], c->ninputs[0], want[i]);
		expect_numbers(c->inputs[1], c->ninputs[1], want1[i]);
		ck_assert_uint_eq(c->edit.ncompact_pointers, 1);
		ck_assert_int_eq(compaction_is_trivial_move(c), want1[i][0] == 0);
		compaction_free(c);
	}
	/* The pointer survives a MANIFEST round trip (snapshot edit). */
	struct compaction *c = version_set_pick_compaction(f.vs);
	expect_numbers(c->inputs[0], c->ninputs[0], "2");
	ck_assert_int_eq(version_set_log_and_apply(f.vs, &c->edit, &f.mu), 0);
	compaction_free(c);
	ck_assert_int_eq(reopen(&f), 0);
	c = version_set_pick_compaction(f.vs);
	expect_numbers(c->inputs[0], c->ninputs[0], "3");
	compaction_free(c);
	fx_fini(&f);
}
END_TEST

START_TEST(test_pick_expand_and_grandparents)
{
	struct fx f;
	fx_init(&f);
	struct version_edit e;
	version_edit_init(&e);
	add(&e, 1, 1, 600, "a", "b");
	add(&e, 1, 2, 600, "c", "d");
	add(&e, 1, 3, 600, "m", "n");
	add(&e, 2, 10, 50, "b", "c");
	add(&e, 2, 11, 50, "x", "y");
	add(&e, 3, 20, 700, "a", "a5");
	add(&e, 3, 21, 700, "c5", "k");
	add(&e, 3, 22, 700, "p", "q");
	ck_assert_int_eq(apply(&f, &e), 0);
	/* Pick 1 [a..b]; L2 overlap is 10 [b..c]; the range a..c pulls in 2
	 * [c..d] from L1, which adds nothing in L2: expanded. */
	struct compaction *c = version_set_pick_compaction(f.vs);
	ck_assert_ptr_nonnull(c);
	expect_numbers(c->inputs[0], c->ninputs[0], "1,2");
	expect_numbers(c->inputs[1], c->ninputs[1], "10");
	expect_numbers(c->grandparents, c->ngrandparents, "20,21");
	struct ik cp = IK("d", 100);
	ck_assert_uint_eq(c->edit.compact_pointers[0].key.len, cp.n);
	ck_assert_mem_eq(c->edit.compact_pointers[0].key.data, cp.d, cp.n);

	/* should_stop_before: grandparents 20 [a..a5] 700, 21 [c5..k] 700;
	 * the limit is 10 x 100 bytes. */
	struct ik k = IK("a", 9);
	ck_assert(!compaction_should_stop_before(c, k.d, k.n));
	k = IK("b", 9);
	ck_assert(!compaction_should_stop_before(c, k.d, k.n)); /* 700 */
	k = IK("l", 9);
	ck_assert(compaction_should_stop_before(c, k.d, k.n)); /* 1400 */
	k = IK("m", 9);
	ck_assert(!compaction_should_stop_before(c, k.d, k.n));

	/* is_base_level_for_key: L3 holds [a..a5], [c5..k], [p..q], L4+
	 * nothing.  Calls in key order. */
	const char *keys[] = { "a", "a6", "c", "d", "k", "l", "pp", "r" };
	bool base[] = { false, true, true, false, false, true, false, true };
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(compaction_is_base_level_for_key(
					 c, (const uint8_t *)keys[i], strlen(keys[i])),
				 base[i]);
	compaction_add_input_deletions(c);
	ck_assert_uint_eq(c->edit.ndeleted, 3);
	ck_assert_int_eq(c->edit.deleted[2].level, 2);
	compaction_free(c);

	/* The pointer is past d now: next comes 3 [m..n], alone. */
	c = version_set_pick_compaction(f.vs);
	ck_assert_ptr_nonnull(c);
	expect_numbers(c->inputs[0], c->ninputs[0], "3");
	ck_assert_uint_eq(c->ninputs[1], 0);
	ck_assert(compaction_is_trivial_move(c));
	compaction_free(c);
	/* Round robin wraps to 1; the expansion is capped at 25 target
	 * files, here 25 x 20 = 500 bytes, so 2 is not pulled in. */
	f.opt.target_file_size = 20;
	c = version_set_pick_compaction(f.vs);
	expect_numbers(c->inputs[0], c->ninputs[0], "1");
	expect_numbers(c->inputs[1], c->ninputs[1], "10");
	ck_assert(!compaction_is_trivial_move(c));
	compaction_free(c);
	fx_fini(&f);
}
END_TEST

START_TEST(test_pick_expansion_limit)
{
	struct fx f;
	fx_init(&f);
	f.opt.target_file_size = 20; /* expansion limit 500 bytes */
	struct version_edit e;
	version_edit_init(&e);
	add(&e, 1, 1, 600, "a", "b");
	add(&e, 1, 2, 600, "c", "d");
	add(&e, 2, 10, 50, "b", "c");
	ck_assert_int_eq(apply(&f, &e), 0);
	struct compaction *c = version_set_pick_compaction(f.vs);
	ck_assert_ptr_nonnull(c);
	expect_numbers(c->inputs[0], c->ninputs[0], "1");
	expect_numbers(c->inputs[1], c->ninputs[1], "10");
	ck_assert_uint_eq(c->max_output_file_size, 20);
	compaction_free(c);
	fx_fini(&f);
}
END_TEST

START_TEST(test_boundary_inputs)
{
	struct fx f;
	fx_init(&f);
	struct version_edit e;
	version_edit_init(&e);
	/* User key b is split across 1 and 2 (b@5 in 1, b@3 in 2), and 2's
	 * last key c@4 continues in 3. */
	add_seq(&e, 1, 1, 900, "a", 9, "b", 5);
	add_seq(&e, 1, 2, 900, "b", 3, "c", 4);
	add_seq(&e, 1, 3, 900, "c", 2, "d", 1);
	add_seq(&e, 1, 4, 900, "e", 2, "f", 1);
	ck_assert_int_eq(apply(&f, &e), 0);
	struct compaction *c = version_set_pick_compaction(f.vs);
	ck_assert_ptr_nonnull(c);
	expect_numbers(c->inputs[0], c->ninputs[0], "1,2,3");
	compaction_free(c);
	fx_fini(&f);
}
END_TEST

START_TEST(test_compact_range)
{
	struct fx f;
	fx_init(&f);
	struct version_edit e;
	version_edit_init(&e);
	add(&e, 0, 1, 10, "a", "c");
	add(&e, 0, 2, 10, "b", "f");
	add(&e, 0, 3, 10, "x", "y");
	add(&e, 1, 4, 60, "a", "b");
	add(&e, 1, 5, 60, "c", "d");
	add(&e, 1, 6, 60, "e", "f");
	add(&e, 1, 7, 60, "g", "h");
	add(&e, 2, 8, 60, "a", "z");
	ck_assert_int_eq(apply(&f, &e), 0);
	ck_assert_ptr_null(version_set_compact_range(f.vs, 0, (const uint8_t *)"m",
						     1, (const uint8_t *)"n", 1));
	ck_assert_ptr_null(version_set_compact_range(f.vs, NUM_LEVELS - 1, NULL,
						     0, NULL, 0));
	struct compaction *c = version_set_compact_range(
		f.vs, 0, (const uint8_t *)"a", 1, (const uint8_t *)"a", 1);
	ck_assert_ptr_nonnull(c);
	expect_numbers(c->inputs[0], c->ninputs[0], "2,1");
	expect_numbers(c->inputs[1], c->ninputs[1], "4,5,6");
	compaction_free(c);
	/* Level 1 in pieces of about one target file (100 bytes). */
	c = version_set_compact_range(f.vs, 1, NULL, 0, NULL, 0);
	ck_assert_ptr_nonnull(c);
	/* 4,5 (120 bytes >= 100) overlap 8 [a..z] in L2, which widens the
	 * range to all of L1 without adding to L2: expanded to 4..7. */
	expect_numbers(c->inputs[0], c->ninputs[0], "4,5,6,7");
	expect_numbers(c->inputs[1], c->ninputs[1], "8");
	ck_assert_ptr_null(c->grandparents);
	compaction_free(c);
	fx_fini(&f);
}
END_TEST

/* ---- iterators over real tables ---- */

static uint64_t build_table(struct fx *f, uint64_t number, int from, int to,
			    uint64_t seq, struct ik *smallest, struct ik *largest)
{
	char path[256];
	sst_file_name(path, sizeof(path), f->dir, number);
	struct sst_builder_options bo = { .block_size = 256,
					  .restart_interval = 4,
					  .filter = {STORE_FILTER_BLOOM, 10, 1},
					  .compression = STORE_COMPRESSION_NONE };
	struct sst_builder *b;
	ck_assert_int_eq(sst_builder_new(store_env_posix(), path, &bo, &b), 0);
	for (int i = from; i < to; i++) {
		char u[16];
		snprintf(u, sizeof(u), "k%04d", i);
		struct ik k = IK(u, seq);
		if (i == from)
			*smallest = k;
		*largest = k;
		ck_assert_int_eq(sst_builder_add(b, k.d, k.n, k.d, k.n), 0);
	}
	uint64_t size;
	ck_assert_int_eq(sst_builder_finish(b, &size), 0);
	return size;
}

static void add_table(struct fx *f, struct version_edit *e, int level,
		      uint64_t number, int from, int to, uint64_t seq)
{
	struct ik s, l;
	uint64_t size = build_table(f, number, from, to, seq, &s, &l);
	ck_assert_int_eq(version_edit_add_file(e, level, number, size, s.d, s.n,
					       l.d, l.n), 0);
}

static int ikey_cmp_ptr(const void *a, const void *b)
{
	const struct ik *x = a, *y = b;
	return ikey_compare(x->d, x->n, y->d, y->n);
}

START_TEST(test_iterators)
{
	struct fx f;
	fx_init(&f);
	version_set_free(f.vs);
	f.tables = table_cache_new(store_env_posix(), f.dir, 3, NULL,
				   &f.counters);
	ck_assert_ptr_nonnull(f.tables);
	f.vs = fx_vs(&f);
	ck_assert_int_eq(version_set_create(f.vs), 0);

	struct version_edit e;
	version_edit_init(&e);
	add_table(&f, &e, 1, 1, 0, 100, 2);
	add_table(&f, &e, 1, 2, 100, 200, 2);
	add_table(&f, &e, 1, 3, 200, 300, 2);
	add_table(&f, &e, 1, 4, 300, 310, 2);
	add_table(&f, &e, 2, 5, 50, 250, 1);
	{
		/* An empty table at the end of L1 (with a made-up range). */
		struct ik s0, l0;
		uint64_t size = build_table(&f, 8, 0, 0, 2, &s0, &l0);
		s0 = IK("k0400", 2);
		l0 = IK("k0401", 2);
		ck_assert_int_eq(version_edit_add_file(&e, 1, 8, size, s0.d, s0.n,
						       l0.d, l0.n), 0);
	}
	add_table(&f, &e, 0, 6, 40, 60, 3);
	add_table(&f, &e, 0, 7, 55, 65, 4);
	ck_assert_int_eq(apply(&f, &e), 0);

	/* The reference: every entry of every table. */
	size_t nref = 0;
	struct ik *ref = calloc(700, sizeof(*ref));
	const int ranges[][3] = { { 0, 300, 2 },  { 300, 310, 2 }, { 50, 250, 1 },
				  { 40, 60, 3 }, { 55, 65, 4 } };
	for (int r = 0; r < 5; r++)
		for (int i = ranges[r][0]; i < ranges[r][1]; i++) {
			char u[16];
			snprintf(u, sizeof(u), "k%04d", i);
			ref[nref++] = IK(u, (uint64_t)ranges[r][2]);
		}
	qsort(ref, nref, sizeof(*ref), ikey_cmp_ptr);

	struct version *v = version_set_current(f.vs);
	version_ref(v);
	struct iter **its = NULL;
	size_t n = 0;
	ck_assert_int_eq(version_add_iterators(v, true, &its, &n), 0);
	ck_assert_uint_eq(n, 4); /* 2 L0 tables, L1, L2 */
	struct iter *m = merge_iter_new(ikey_compare, ikey_prefix, its, n);
	free(its);
	ck_assert_ptr_nonnull(m);

	uint64_t seed = test_seed(), s = seed;
	size_t pos = nref;
	for (int step = 0; step < 3000; step++) {
		unsigned op = (unsigned)(rng(&s) % 12);
		if (op == 0) {
			iter_seek_first(m);
			pos = 0;
		} else if (op == 1) {
			iter_seek_last(m);
			pos = nref - 1;
		} else if (op == 2) {
			char u[16];
			snprintf(u, sizeof(u), "k%04d", (int)(rng(&s) % 330));
			struct ik t = IK(u, rng(&s) % 6);
			iter_seek(m, t.d, t.n);
			pos = 0;
			while (pos < nref && ikey_cmp_ptr(&ref[pos], &t) < 0)
				pos++;
		} else if (pos < nref && op < 7) {
			iter_next(m);
			pos++;
		} else if (pos < nref) {
			iter_prev(m);
			pos = pos == 0 ? nref : pos - 1;
		}
		if (pos >= nref) {
			ck_assert_msg(!iter_valid(m), "seed %" PRIu64 " step %d",
				      seed, step);
			continue;
		}
		ck_assert_msg(iter_valid(m), "seed %" PRIu64 " step %d", seed,
			      step);
		size_t kl;
		const uint8_t *k = iter_key(m, &kl);
		ck_assert_msg(ikey_compare(k, kl, ref[pos].d, ref[pos].n) == 0,
			      "seed %" PRIu64 " step %d: %.*s", seed, step,
			      (int)kl - 8, (const char *)k);
	}
	ck_assert_int_eq(iter_status(m), 0);
	iter_destroy(m);

	/* A level whose table is missing: the level iterator reports it. */
	version_edit_init(&e);
	struct ik a = IK("z1", 1), b = IK("z2", 1);
	ck_assert_int_eq(version_edit_add_file(&e, 3, 99, 1000, a.d, a.n, b.d,
					       b.n), 0);
	ck_assert_int_eq(apply(&f, &e), 0);
	struct version *v2 = version_set_current(f.vs);
	version_ref(v2);
	its = NULL;
	n = 0;
	ck_assert_int_eq(version_add_iterators(v2, false, &its, &n), 0);
	ck_assert_uint_eq(n, 5);
	struct iter *l3 = its[4];
	iter_seek_first(l3);
	ck_assert(!iter_valid(l3));
	ck_assert_int_ne(iter_status(l3), 0);
	/* L1 alone: a walk backwards across its tables */
	struct iter *l1 = its[2];
	iter_seek_last(l1);
	int count = 0;
	for (; iter_valid(l1); iter_prev(l1))
		count++;
	ck_assert_int_eq(count, 310);
	ck_assert_int_eq(iter_status(l1), 0);
	struct ik t = IK("k0150", 9);
	iter_seek(l1, t.d, t.n);
	ck_assert(iter_valid(l1));
	iter_prev(l1);
	size_t kl;
	ck_assert_mem_eq(iter_key(l1, &kl), "k0149", 5);
	for (size_t i = 0; i < n; i++)
		iter_destroy(its[i]);
	free(its);
	version_unref(v2);
	version_unref(v);
	free(ref);
	fx_fini(&f);
}
END_TEST

/* ---- durability on the fault-injecting env ---- */

static struct version_set *fe_vs(struct store_env *env,
				 const struct store_options *opt,
				 uint64_t *mbytes, struct logcap *log)
{
	struct version_set_options o = {
		.env = env, .dir = "/db", .opt = opt, .manifest_bytes = mbytes,
		.log = log_fn, .log_ctx = log,
	};
	struct version_set *vs = version_set_new(&o);
	ck_assert_ptr_nonnull(vs);
	return vs;
}

/* A table file written and synced, its directory entry not synced. */
static void fe_table(struct store_env *env, uint64_t number)
{
	char path[64];
	sst_file_name(path, sizeof(path), "/db", number);
	struct env_wfile *w;
	ck_assert_int_eq(env->ops->open_writable(env, path, &w), 0);
	ck_assert_int_eq(env->ops->append(w, "table", 5), 0);
	ck_assert_int_eq(env->ops->sync(w), 0);
	ck_assert_int_eq(env->ops->close_writable(w), 0);
}

START_TEST(test_power_cut_and_faults)
{
	struct fault_env *fe = fault_env_new();
	ck_assert_ptr_nonnull(fe);
	struct store_env *env = fault_env_env(fe);
	ck_assert_int_eq(env->ops->mkdir(env, "/db"), 0);
	ck_assert_int_eq(env->ops->sync_dir(env, "/"), 0);
	struct store_options opt;
	memset(&opt, 0, sizeof(opt));
	opt.target_file_size = 100;
	opt.level_base_bytes = 1000;
	opt.level_multiplier = 10;
	opt.l0_compaction_trigger = 4;
	uint64_t mbytes = 0;
	struct logcap log;
	memset(&log, 0, sizeof(log));
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&mu);

	struct version_set *vs = fe_vs(env, &opt, &mbytes, &log);
	ck_assert_int_eq(version_set_recover(vs), -ENOENT);
	ck_assert_int_eq(version_set_create(vs), 0);
	struct version_edit e;
	version_edit_init(&e);
	fe_table(env, 5);
	add(&e, 0, 5, 5, "a", "b");
	ck_assert_int_eq(version_set_log_and_apply(vs, &e, &mu), 0);
	version_edit_free(&e);
	/* appended to the same MANIFEST */
	fe_table(env, 6);
	version_edit_init(&e);
	add(&e, 0, 6, 5, "c", "d");
	ck_assert_int_eq(version_set_log_and_apply(vs, &e, &mu), 0);
	version_edit_free(&e);

	/* The tables an appended edit names survive a power cut (the
	 * directory was synced before the edit was written). */
	char before[512], after[512];
	describe(vs, before, sizeof(before));
	version_set_free(vs);
	fault_env_power_cut(fe);
	vs = fe_vs(env, &opt, &mbytes, &log);
	ck_assert_int_eq(version_set_recover(vs), 0);
	describe(vs, after, sizeof(after));
	ck_assert_str_eq(before, after);
	for (uint64_t n = 5; n <= 6; n++) {
		char path[64];
		sst_file_name(path, sizeof(path), "/db", n);
		ck_assert_int_eq(env->ops->exists(env, path), 0);
	}
	version_edit_init(&e);
	version_edit_delete_file(&e, 0, 5);
	ck_assert_int_eq(version_set_log_and_apply(vs, &e, &mu), 0);
	version_edit_free(&e);

	/* A failing sync: the edit is refused, the version unchanged. */
	describe(vs, before, sizeof(before));
	fault_env_arm(fe, FAULT_EIO_SYNC, 0);
	version_edit_init(&e);
	add(&e, 1, 7, 5, "x", "y");
	ck_assert_int_eq(version_set_log_and_apply(vs, &e, &mu), -EIO);
	version_edit_free(&e);
	describe(vs, after, sizeof(after));
	ck_assert_str_eq(before, after);
	ck_assert_int_ge(log.count, 1);
	fault_env_clear(fe);
	/* The next edit starts a new MANIFEST. */
	uint64_t m1 = version_set_manifest_number(vs);
	fe_table(env, 8);
	version_edit_init(&e);
	add(&e, 2, 8, 5, "m", "n");
	ck_assert_int_eq(version_set_log_and_apply(vs, &e, &mu), 0);
	version_edit_free(&e);
	ck_assert_uint_gt(version_set_manifest_number(vs), m1);
	describe(vs, before, sizeof(before));
	version_set_free(vs);

	/* Everything the MANIFEST names survives a power cut. */
	fault_env_power_cut(fe);
	vs = fe_vs(env, &opt, &mbytes, &log);
	ck_assert_int_eq(version_set_recover(vs), 0);
	describe(vs, after, sizeof(after));
	ck_assert_str_eq(before, after);
	for (uint64_t n = 6; n <= 8; n += 2) {
		char path[64];
		sst_file_name(path, sizeof(path), "/db", n);
		ck_assert_int_eq(env->ops->exists(env, path), 0);
	}
	version_set_free(vs);
	pthread_mutex_unlock(&mu);
	fault_env_free(fe);
}
END_TEST

static Suite *version_suite(void)
{
	Suite *s = suite_create("version");
	TCase *tc = tcase_create("version");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_edit_roundtrip);
	tcase_add_test(tc, test_write_totals);
	tcase_add_test(tc, test_edit_corrupt);
	tcase_add_test(tc, test_manifest_roundtrip);
	tcase_add_test(tc, test_manifest_corrupt);
	tcase_add_test(tc, test_refuse_overlap);
	tcase_add_test(tc, test_live_files);
	tcase_add_test(tc, test_overlapping_and_find);
	tcase_add_test(tc, test_pick_level0);
	tcase_add_test(tc, test_pick_size_round_robin);
	tcase_add_test(tc, test_pick_expand_and_grandparents);
	tcase_add_test(tc, test_pick_expansion_limit);
	tcase_add_test(tc, test_boundary_inputs);
	tcase_add_test(tc, test_compact_range);
	tcase_add_test(tc, test_iterators);
	tcase_add_test(tc, test_power_cut_and_faults);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(version_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
