/*
 * test_salvage: store_salvage on damaged tables (suite "store").
 *
 * A store is built with a known history (puts, overwrites, deletes,
 * flushes, a compaction), closed, copied and damaged by flipping bytes in
 * one table.  Then:
 *   - store_verify says -EUCLEAN; store_salvage returns 0; store_verify
 *     then says 0, and a second salvage finds nothing to do;
 *   - after opening, every key reads as the model says (its newest value,
 *     or absent when deleted), except keys inside a range salvage reported
 *     lost; a full scan agrees too.  So nothing is lost without being named.
 * The level-0 case: three overlapping level-0 tables, the oldest damaged.
 * The newer tables hold every key, so every key must still read its newest
 * value: a salvaged table renumbered above the newer ones would bring old
 * values back.
 *
 * The commit-log case: writes left in the log (no flush), a byte flipped
 * in its middle.  Salvage keeps every whole record around the damage: the
 * keys that read wrong must be one run of consecutive writes no longer
 * than the two 32 KiB blocks the damage can take.
 *
 * Environment: LSMFS_SEED.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "testutil.h"

#define NKEYS 4000
#define MAX_LOST 64

struct range {
	char from[32], to[32]; /* "" = open end */
	bool has_from, has_to;
};

struct salvage_run {
	struct tu_log log; /* first: the report callback's ctx is the run */
	struct range lost[MAX_LOST];
	int nlost;
};

static int model[NKEYS]; /* newest round that wrote key i, or -1: absent */

static size_t key_of(char *buf, int i)
{
	return (size_t)sprintf(buf, "k%06d", i);
}

static size_t val_of(char *buf, int round, int i)
{
	return (size_t)sprintf(buf, "round %d key %d %.*s", round, i, 20 + i % 30,
			       "................................................");
}

static void on_loss(void *ctx, const struct store_salvage_loss *l)
{
	struct salvage_run *r = ctx;
	ck_assert_msg(r->nlost < MAX_LOST, "too many lost ranges");
	struct range *g = &r->lost[r->nlost++];
	memset(g, 0, sizeof(*g));
	if (l->from) {
		g->has_from = true;
		memcpy(g->from, l->from, l->from_len < 31 ? l->from_len : 31);
	}
	if (l->to) {
		g->has_to = true;
		memcpy(g->to, l->to, l->to_len < 31 ? l->to_len : 31);
	}
	ck_assert_ptr_nonnull(l->why);
	ck_assert_msg(strstr(l->why, l->level < 0 ? ".log" : ".sst") != NULL,
		      "loss not naming its file: %s", l->why);
}

static bool in_lost(const struct salvage_run *r, const char *key)
{
	for (int i = 0; i < r->nlost; i++) {
		const struct range *g = &r->lost[i];
		if ((!g->has_from || strcmp(g->from, key) <= 0) &&
		    (!g->has_to || strcmp(key, g->to) <= 0))
			return true;
	}
	return false;
}

static void opts(struct store_options *o, int l0_trigger)
{
	store_options_init(o);
	/* kind 1 wants one table per round: a buffer larger than a round. */
	o->write_buffer_size = l0_trigger == 100 ? 4 << 20 : 64 << 10;
	o->block_size = 512;
	o->target_file_size = 16 << 10;
	o->l0_compaction_trigger = l0_trigger;
	o->l0_slowdown_trigger = l0_trigger + 10;
	o->l0_stop_trigger = l0_trigger + 20;
}

static void put_round(struct store *st, int round, int every, int del_every)
{
	char k[32], v[128];
	for (int i = 0; i < NKEYS; i++) {
		if (del_every && i % del_every == 0) {
			ck_assert_int_eq(store_delete(st, k, key_of(k, i), 0), 0);
			model[i] = -1;
		} else if (i % every == 0) {
			ck_assert_int_eq(store_put(st, k, key_of(k, i), v, val_of(v, round, i), 0), 0);
			model[i] = round;
		}
	}
	ck_assert_int_eq(store_flush(st), 0);
}

/* kind 0: tables on several levels; kind 1: three overlapping L0 tables. */
static char *build(int kind)
{
	char *dir = tu_mkdtemp("salvage");
	struct store_options o;
	opts(&o, kind == 0 ? 4 : 100);
	struct store *st;
	ck_assert_int_eq(store_open(dir, &o, &st), 0);
	for (int i = 0; i < NKEYS; i++)
		model[i] = -1;
	if (kind == 0) {
		put_round(st, 1, 1, 0);
		ck_assert_int_eq(store_compact_range(st, NULL, 0, NULL, 0), 0);
		put_round(st, 2, 3, 0);
		put_round(st, 3, 5, 7);
	} else {
		/* Rounds 1 and 2 go below level 0 (nothing overlaps them
		 * there yet); 3, 4 and 5 stay in level 0, oldest first. */
		for (int round = 1; round <= 4; round++)
			put_round(st, round, 1, 0);
		put_round(st, 5, 2, 0);
	}
	ck_assert_int_eq(store_close(st), 0);
	return dir;
}

/* The .sst files of dir, ascending by number. */
static int tables(const char *dir, char names[][64], int cap)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < cap) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".sst") == 0)
			snprintf(names[n++], 64, "%s", e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
	return n;
}

static void flip(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	uint8_t b[4];
	ck_assert_int_eq(pread(fd, b, 4, (off_t)off), 4);
	for (int i = 0; i < 4; i++)
		b[i] ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, b, 4, (off_t)off), 4);
	close(fd);
}

static uint64_t file_size(const char *path)
{
	struct stat s;
	ck_assert_int_eq(stat(path, &s), 0);
	return (uint64_t)s.st_size;
}

/* Salvage dir and check every key against the model and the lost ranges.
 * Returns the number of keys that read differently (all inside lost
 * ranges). */
static int salvage_and_check(const char *dir, const char *what, const char *expect)
{
	struct store_options o;
	opts(&o, 100);
	struct tu_log vlog;
	tu_log_init(&vlog, false);
	ck_assert_msg(store_verify(dir, &o, tu_log_fn, &vlog) == -EUCLEAN,
		      "%s: damage not found by store_verify", what);
	tu_log_free(&vlog);

	struct salvage_run r = {0};
	tu_log_init(&r.log, false);
	int rc = store_salvage(dir, &o, on_loss, tu_log_fn, &r);
	if (rc)
		tu_log_dump(&r.log, what);
	ck_assert_msg(rc == 0, "%s: store_salvage: %s", what, strerror(-rc));
	ck_assert_msg(r.nlost > 0, "%s: salvage reported no loss", what);
	ck_assert_msg(tu_log_contains(&r.log, "1 damaged table salvaged"),
		      "%s: no summary line", what);
	if (expect && !tu_log_contains(&r.log, expect)) {
		tu_log_dump(&r.log, what);
		ck_abort_msg("%s: no report line with '%s'", what, expect);
	}

	tu_log_init(&vlog, false);
	rc = store_verify(dir, &o, tu_log_fn, &vlog);
	if (rc)
		tu_log_dump(&vlog, what);
	ck_assert_msg(rc == 0, "%s: still damaged after salvage", what);
	tu_log_free(&vlog);

	struct store *st;
	ck_assert_int_eq(store_open(dir, &o, &st), 0);
	int differ = 0;
	char k[32], v[128];
	for (int i = 0; i < NKEYS; i++) {
		size_t kl = key_of(k, i);
		void *got = NULL;
		size_t gl = 0;
		rc = store_get(st, NULL, k, kl, &got, &gl);
		bool ok;
		if (model[i] < 0) {
			ok = rc == -ENOENT;
		} else {
			size_t vl = val_of(v, model[i], i);
			ok = rc == 0 && gl == vl && memcmp(got, v, vl) == 0;
		}
		ck_assert_msg(rc == 0 || rc == -ENOENT, "%s: %s: get: %s", what, k, strerror(-rc));
		if (!ok) {
			differ++;
			ck_assert_msg(in_lost(&r, k),
				      "%s: %s reads wrong (%s) but no lost range names it", what,
				      k, rc ? "absent" : (char *)got);
		}
		free(got);
	}
	/* A scan sees the same: ascending, and right outside lost ranges. */
	struct store_iter *it;
	ck_assert_int_eq(store_iter_new(st, NULL, &it), 0);
	int last = -1;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const char *kp = store_iter_key(it, &kl);
		ck_assert(kl == 7 && kp[0] == 'k');
		int i = atoi(kp + 1);
		ck_assert_int_gt(i, last);
		last = i;
		memcpy(k, kp, kl);
		k[kl] = 0;
		const void *vp = store_iter_value(it, &vl);
		bool ok = model[i] >= 0 && vl == val_of(v, model[i], i) && memcmp(vp, v, vl) == 0;
		ck_assert_msg(ok || in_lost(&r, k), "%s: scan: %s wrong outside lost ranges",
			      what, k);
	}
	ck_assert_int_eq(store_iter_status(it), 0);
	store_iter_free(it);
	ck_assert_int_eq(store_close(st), 0);

	/* Nothing left to salvage. */
	struct salvage_run again = {0};
	tu_log_init(&again.log, false);
	ck_assert_int_eq(store_salvage(dir, &o, on_loss, tu_log_fn, &again), 0);
	ck_assert_int_eq(again.nlost, 0);
	ck_assert(tu_log_contains(&again.log, "0 damaged tables salvaged"));
	tu_log_free(&again.log);
	tu_log_free(&r.log);
	return differ;
}

START_TEST(test_salvage_levels)
{
	uint64_t seed = tu_seed("salvage");
	struct tu_rng rng;
	tu_rng_init(&rng, seed);
	char *src = build(0);
	char names[256][64];
	int n = tables(src, names, 256);
	ck_assert_int_gt(n, 3);
	for (int round = 0; round < 24; round++) {
		char *work = tu_mkdtemp("salvage-work");
		ck_assert_int_eq(tu_copy_dir(src, work), 0);
		int t = (int)tu_rng_below(&rng, (uint64_t)n);
		char path[4096], what[256];
		snprintf(path, sizeof(path), "%s/%s", work, names[t]);
		uint64_t size = file_size(path);
		/* Mostly data blocks; now and then the footer or index. */
		uint64_t off = tu_rng_chance(&rng, 1, 6) ? size - 4 - tu_rng_below(&rng, 60)
							 : tu_rng_below(&rng, size / 2);
		flip(path, off);
		snprintf(what, sizeof(what), "seed=%" PRIu64 " %s offset %" PRIu64, seed,
			 names[t], off);
		salvage_and_check(work, what, NULL);
		tu_rmrf(work);
		free(work);
	}
	tu_rmrf(src);
	free(src);
}
END_TEST

START_TEST(test_salvage_level0_order)
{
	char *src = build(1);
	char names[64][64];
	int n = tables(src, names, 64);
	ck_assert_int_eq(n, 5);
	/* The third table is the oldest of level 0 (round 3); rounds 4 and 5
	 * cover every key again, so nothing readable may change. */
	static const char *where[] = {"middle", "footer"};
	for (int c = 0; c < 2; c++) {
		char *work = tu_mkdtemp("salvage-l0");
		ck_assert_int_eq(tu_copy_dir(src, work), 0);
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", work, names[2]);
		uint64_t size = file_size(path);
		flip(path, c == 0 ? size / 3 : size - 8);
		int differ = salvage_and_check(work, where[c], "(level 0)");
		ck_assert_msg(differ == 0, "%s: %d keys lost their newest value", where[c], differ);
		tu_rmrf(work);
		free(work);
	}
	tu_rmrf(src);
	free(src);
}
END_TEST

START_TEST(test_salvage_log)
{
	char *dir = tu_mkdtemp("salvage-log");
	struct store_options o;
	opts(&o, 100); /* a 4 MiB buffer: everything stays in the log */
	struct store *st;
	ck_assert_int_eq(store_open(dir, &o, &st), 0);
	char k[32], v[128];
	for (int i = 0; i < NKEYS; i++)
		ck_assert_int_eq(store_put(st, k, key_of(k, i), v, val_of(v, 1, i), 0), 0);
	ck_assert_int_eq(store_close(st), 0);

	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	char log[4096] = "";
	struct dirent *e;
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".log") && file_size(strcat(strcat(strcpy(log, dir), "/"), e->d_name)) > 100000)
			break;
	closedir(d);
	ck_assert_msg(e != NULL, "no commit log over 100000 bytes");
	flip(log, 70000);

	struct tu_log vlog;
	tu_log_init(&vlog, false);
	ck_assert_int_eq(store_verify(dir, &o, tu_log_fn, &vlog), -EUCLEAN);
	tu_log_free(&vlog);
	struct salvage_run r = {0};
	tu_log_init(&r.log, false);
	ck_assert_int_eq(store_salvage(dir, &o, on_loss, tu_log_fn, &r), 0);
	ck_assert_int_ge(r.nlost, 1);
	if (!tu_log_contains(&r.log, "1 commit log mended") || getenv("SALVAGE_SHOW"))
		tu_log_dump(&r.log, "log salvage");
	ck_assert(tu_log_contains(&r.log, "1 commit log mended"));
	tu_log_free(&r.log);
	tu_log_init(&vlog, false);
	ck_assert_int_eq(store_verify(dir, &o, tu_log_fn, &vlog), 0);
	tu_log_free(&vlog);

	ck_assert_int_eq(store_open(dir, &o, &st), 0);
	int first = -1, last = -1;
	for (int i = 0; i < NKEYS; i++) {
		void *got;
		size_t gl;
		size_t vl = val_of(v, 1, i);
		int rc = store_get(st, NULL, k, key_of(k, i), &got, &gl);
		bool ok = rc == 0 && gl == vl && memcmp(got, v, vl) == 0;
		if (rc == 0)
			free(got);
		ck_assert_msg(ok || rc == -ENOENT, "%s: wrong value, not just lost", k);
		if (!ok) {
			ck_assert_msg(last < 0 || last == i - 1, "lost writes not one run: %d after %d", i,
				      last);
			if (first < 0)
				first = i;
			last = i;
		}
	}
	ck_assert_int_eq(store_close(st), 0);
	ck_assert_msg(first >= 0, "a damaged log lost nothing?");
	/* one record per put, each well over 32 bytes: two blocks hold < 2048 */
	ck_assert_msg(last - first + 1 < 2048, "lost %d writes", last - first + 1);
	tu_rmrf(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("salvage");
	TCase *tc = tcase_create("salvage");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_salvage_levels);
	tcase_add_test(tc, test_salvage_level0_order);
	tcase_add_test(tc, test_salvage_log);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
