/*
 * test_dcache.c: fs/engine/core/dcache.c, the daemon's cache of directory entries.
 *
 * It answers only what was set or filled and not forgotten since (an
 * absent name as inode 0); a set replaces; a fill whose stamp predates a change of its name is dropped,
 * so a reader racing a change never puts back what the change removed;
 * past its capacity it forgets (and never answers wrongly); a directory
 * made by this mount answers "absent" for names it does not hold until
 * one of its names goes; a cache whose init failed holds nothing.
 */
#include "engine.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ABSENT UINT64_MAX
#define WAYS_FOR_TEST 8 /* dcache.c's WAYS: a capacity of one set */ /* expect: cached as a name the store has not */

/* The cache answers (ino, type), or nothing (ino 0), or ABSENT. */
static void expect(struct dcache *dc, uint64_t parent, const char *name, uint64_t ino,
		   uint8_t type)
{
	uint64_t got = 0;
	uint8_t t = 0;
	bool hit = dcache_get(dc, parent, name, &got, &t);
	if (!ino) {
		ck_assert_msg(!hit, "(%llu, %s): found %llu, expected nothing",
			      (unsigned long long)parent, name, (unsigned long long)got);
		return;
	}
	ck_assert_msg(hit, "(%llu, %s): not found", (unsigned long long)parent, name);
	if (ino == ABSENT) {
		ck_assert_msg(got == 0, "(%llu, %s): found %llu, expected absent",
			      (unsigned long long)parent, name, (unsigned long long)got);
		return;
	}
	ck_assert_uint_eq(got, ino);
	ck_assert_uint_eq(t, type);
}

START_TEST(test_set_get_forget)
{
	struct dcache dc;
	ck_assert_int_eq(dcache_init(&dc, 1024), 0);
	expect(&dc, 1, "a", 0, 0);
	dcache_set(&dc, 1, "a", 10, 8);
	dcache_set(&dc, 2, "a", 20, 4);
	dcache_set(&dc, 1, "ab", 30, 8);
	expect(&dc, 1, "a", 10, 8);
	expect(&dc, 2, "a", 20, 4);
	expect(&dc, 1, "ab", 30, 8);
	expect(&dc, 1, "b", 0, 0);
	dcache_set(&dc, 1, "a", 11, 10); /* a rename over it */
	expect(&dc, 1, "a", 11, 10);
	dcache_forget(&dc, 1, "a");
	expect(&dc, 1, "a", 0, 0);
	expect(&dc, 2, "a", 20, 4);
	dcache_forget(&dc, 1, "nothing"); /* forgetting what is absent is harmless */
	/* A name the store has not (an unlink's, a lookup's miss). */
	dcache_set(&dc, 2, "a", 0, 0);
	expect(&dc, 2, "a", ABSENT, 0);
	dcache_set(&dc, 2, "a", 21, 8); /* then a create */
	expect(&dc, 2, "a", 21, 8);
	uint64_t s = dcache_stamp(&dc, 3, "x");
	dcache_fill(&dc, s, 3, "x", 0, 0);
	expect(&dc, 3, "x", ABSENT, 0);
	dcache_free(&dc);
}
END_TEST

START_TEST(test_stale_fill_dropped)
{
	struct dcache dc;
	ck_assert_int_eq(dcache_init(&dc, 1024), 0);
	/* A reader's stamp, then a change of the name, then its fill: dropped. */
	uint64_t s = dcache_stamp(&dc, 5, "f");
	dcache_forget(&dc, 5, "f");
	dcache_fill(&dc, s, 5, "f", 50, 8);
	expect(&dc, 5, "f", 0, 0);
	s = dcache_stamp(&dc, 5, "f");
	dcache_set(&dc, 5, "f", 51, 8);
	dcache_forget(&dc, 5, "f");
	dcache_fill(&dc, s, 5, "f", 51, 8);
	expect(&dc, 5, "f", 0, 0);
	/* An absence read before a create: dropped too. */
	s = dcache_stamp(&dc, 5, "g");
	dcache_set(&dc, 5, "g", 60, 8);
	dcache_fill(&dc, s, 5, "g", 0, 0);
	expect(&dc, 5, "g", 60, 8);
	/* With no change between, the fill is kept. */
	s = dcache_stamp(&dc, 5, "f");
	dcache_fill(&dc, s, 5, "f", 52, 8);
	expect(&dc, 5, "f", 52, 8);
	dcache_free(&dc);
}
END_TEST

START_TEST(test_capacity)
{
	struct dcache dc;
	ck_assert_int_eq(dcache_init(&dc, 256), 0);
	char name[32];
	for (uint64_t i = 1; i <= 10000; i++) {
		snprintf(name, sizeof(name), "f%llu", (unsigned long long)i);
		dcache_set(&dc, 1 + i % 3, name, 1000 + i, 8);
	}
	size_t hits = 0;
	for (uint64_t i = 1; i <= 10000; i++) {
		snprintf(name, sizeof(name), "f%llu", (unsigned long long)i);
		uint64_t ino;
		uint8_t t;
		if (dcache_get(&dc, 1 + i % 3, name, &ino, &t)) {
			ck_assert_uint_eq(ino, 1000 + i); /* never a wrong answer */
			hits++;
		}
	}
	ck_assert_uint_le(hits, 256);
	ck_assert_uint_gt(hits, 64); /* the newest are kept */
	/* The newest entry is always there. */
	expect(&dc, 1 + 10000 % 3, "f10000", 11000, 8);
	dcache_free(&dc);
}
END_TEST

/* A directory made by this mount: a name not held is absent, until one
 * of its names is evicted or a change of one fails. */
START_TEST(test_complete_dir)
{
	struct dcache dc;
	ck_assert_int_eq(dcache_init(&dc, WAYS_FOR_TEST), 0); /* one set */
	dcache_dir_made(&dc, 10);
	expect(&dc, 10, "x", ABSENT, 0);
	expect(&dc, 11, "x", 0, 0); /* another directory: not known */
	dcache_set(&dc, 10, "a", 100, 8);
	expect(&dc, 10, "a", 100, 8);
	expect(&dc, 10, "b", ABSENT, 0);
	/* Fill the set: the first name goes, and then a name not held is no
	 * longer known absent (it may be the one that went). */
	char name[8];
	for (int i = 0; i < WAYS_FOR_TEST; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		dcache_set(&dc, 10, name, 200 + (uint64_t)i, 8);
	}
	expect(&dc, 10, "a", 0, 0);
	expect(&dc, 10, "b", 0, 0);
	/* Absent names going do not matter. */
	dcache_free(&dc);
	ck_assert_int_eq(dcache_init(&dc, WAYS_FOR_TEST), 0);
	dcache_dir_made(&dc, 20);
	for (int i = 0; i < 2 * WAYS_FOR_TEST; i++) {
		snprintf(name, sizeof(name), "g%d", i);
		dcache_set(&dc, 20, name, 0, 0); /* unlinks */
	}
	expect(&dc, 20, "zz", ABSENT, 0);
	/* A failed change: the store may hold the name. */
	dcache_forget(&dc, 20, "q");
	expect(&dc, 20, "zz", 0, 0);
	dcache_free(&dc);
}
END_TEST

START_TEST(test_no_memory_holds_nothing)
{
	struct dcache dc;
	memset(&dc, 0, sizeof(dc)); /* what a failed init leaves */
	dcache_dir_made(&dc, 1);
	dcache_set(&dc, 1, "a", 2, 8);
	uint64_t s = dcache_stamp(&dc, 1, "a");
	dcache_fill(&dc, s, 1, "a", 2, 8);
	expect(&dc, 1, "a", 0, 0);
	dcache_forget(&dc, 1, "a");
	dcache_free(&dc);
}
END_TEST

/*
 * Readers that fill from a "store" (truth[], under its own lock) race a
 * writer that changes it and then the cache, as dir.c does under ns_lock.
 * Whenever the writer is between changes, every cached name must say what
 * the store says.
 */
#define NN 8
static struct {
	struct dcache dc;
	pthread_mutex_t ns, store;
	uint64_t truth[NN];
	atomic_int stop;
} race;

static void *reader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	char name[8];
	while (!atomic_load(&race.stop)) {
		int i = (int)(rand_r(&seed) % NN);
		snprintf(name, sizeof(name), "n%d", i);
		uint64_t ino;
		uint8_t t;
		if (dcache_get(&race.dc, 1, name, &ino, &t))
			continue;
		uint64_t s = dcache_stamp(&race.dc, 1, name);
		pthread_mutex_lock(&race.store);
		uint64_t v = race.truth[i];
		pthread_mutex_unlock(&race.store);
		if (rand_r(&seed) % 2)
			sched_yield(); /* widen the window a change may fall into */
		dcache_fill(&race.dc, s, 1, name, v, 8); /* v 0: absent */
	}
	return NULL;
}

START_TEST(test_fill_races_change)
{
	ck_assert_int_eq(dcache_init(&race.dc, 64), 0);
	pthread_mutex_init(&race.ns, NULL);
	pthread_mutex_init(&race.store, NULL);
	pthread_t th[3];
	for (uintptr_t i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader, (void *)(i + 1)), 0);
	unsigned seed = 7;
	char name[8];
	for (int round = 0; round < 200000; round++) {
		int i = (int)(rand_r(&seed) % NN);
		snprintf(name, sizeof(name), "n%d", i);
		pthread_mutex_lock(&race.ns);
		uint64_t v = race.truth[i] ? 0 : (uint64_t)round + 100; /* unlink or create */
		pthread_mutex_lock(&race.store);
		race.truth[i] = v;
		pthread_mutex_unlock(&race.store);
		if (v || round % 3)
			dcache_set(&race.dc, 1, name, v, 8); /* a create, an unlink */
		else
			dcache_forget(&race.dc, 1, name); /* a failed write */
		if (round % 64 == 0)
			for (int j = 0; j < NN; j++) {
				char nj[8];
				snprintf(nj, sizeof(nj), "n%d", j);
				uint64_t ino;
				uint8_t t;
				if (dcache_get(&race.dc, 1, nj, &ino, &t))
					ck_assert_msg(ino == race.truth[j],
						      "round %d: n%d cached as %llu, the store says %llu",
						      round, j, (unsigned long long)ino,
						      (unsigned long long)race.truth[j]);
			}
		pthread_mutex_unlock(&race.ns);
	}
	atomic_store(&race.stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	dcache_free(&race.dc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dcache");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_set_get_forget);
	tcase_add_test(tc, test_stale_fill_dropped);
	tcase_add_test(tc, test_capacity);
	tcase_add_test(tc, test_complete_dir);
	tcase_add_test(tc, test_no_memory_holds_nothing);
	tcase_add_test(tc, test_fill_races_change);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
