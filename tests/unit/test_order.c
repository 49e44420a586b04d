/*
 * test_order.c: fs/engine/core/order.c, the write ordering of one inode.
 *
 * Writes that registered before contending take the inode's lock in offset
 * order whatever order they reach it in; writes to other inodes, or far
 * from every registered write, do not wait for them; a registered write
 * that never comes holds the others up for a bounded time only; every slot
 * is free again afterwards.
 */
#include "engine.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NW 8

struct world {
	struct fs *fs;
	pthread_barrier_t registered;
	pthread_mutex_t log_lock;
	uint64_t log[NW * 2];
	int nlog;
};

struct writer {
	struct world *w;
	uint64_t ino, off, len;
	int delay_us; /* before taking the lock: the race the order undoes */
};

static struct fs *new_fs(void)
{
	struct fs *fs = calloc(1, sizeof(*fs));
	ck_assert_ptr_nonnull(fs);
	for (int i = 0; i < ILOCKS; i++)
		pthread_mutex_init(&fs->ilock[i], NULL);
	ck_assert_int_eq(order_init(fs), 0);
	/* Long enough that no wait here ends by its bound, however loaded
	 * the machine: the order in the log must come from the ordering. */
	fs->order.wait_ms = 10000;
	return fs;
}

static void free_fs(struct fs *fs)
{
	for (int i = 0; i < ORDER_SLOTS; i++)
		ck_assert_msg(fs->order.slot[i].ino == 0, "slot %d still taken", i);
	order_free(fs);
	for (int i = 0; i < ILOCKS; i++)
		pthread_mutex_destroy(&fs->ilock[i]);
	free(fs);
}

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	struct world *w = wr->w;
	int slot = order_enter(w->fs, wr->ino, wr->off, wr->len);
	pthread_barrier_wait(&w->registered);
	usleep((useconds_t)wr->delay_us);
	pthread_mutex_lock(inode_lock_of(w->fs, wr->ino));
	order_wait(w->fs, wr->ino, wr->off);
	pthread_mutex_lock(&w->log_lock);
	w->log[w->nlog++] = wr->off;
	pthread_mutex_unlock(&w->log_lock);
	order_leave(w->fs, slot, wr->ino);
	pthread_mutex_unlock(inode_lock_of(w->fs, wr->ino));
	return NULL;
}

static void run(struct world *w, struct writer *wr, int n)
{
	pthread_t t[NW * 2];
	pthread_barrier_init(&w->registered, NULL, (unsigned)n);
	pthread_mutex_init(&w->log_lock, NULL);
	for (int i = 0; i < n; i++) {
		wr[i].w = w;
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer_main, &wr[i]), 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&w->registered);
	pthread_mutex_destroy(&w->log_lock);
}

/* A train of 1 MiB writes reaching the lock in reverse order goes in
 * offset order, every time. */
START_TEST(test_train_in_order)
{
	for (int round = 0; round < 20; round++) {
		struct world w = {.fs = new_fs()};
		struct writer wr[NW];
		for (int i = 0; i < NW; i++)
			wr[i] = (struct writer){.ino = 7, .off = (uint64_t)i << 20, .len = 1 << 20,
						.delay_us = (NW - i) * 300};
		run(&w, wr, NW);
		ck_assert_int_eq(w.nlog, NW);
		for (int i = 0; i < NW; i++)
			ck_assert_msg(w.log[i] == (uint64_t)i << 20,
				      "round %d: write %d went at offset %llu", round, i,
				      (unsigned long long)w.log[i]);
		free_fs(w.fs);
	}
}
END_TEST

/* Two trains far apart in one file, and a train in another inode on the
 * same stripe: each keeps its own order, and none waits for the other
 * (the order in the log tells, without timing). */
START_TEST(test_streams_apart)
{
	struct world w = {.fs = new_fs()};
	struct writer wr[NW];
	uint64_t far = 1ull << 30;
	for (int i = 0; i < NW / 2; i++) {
		/* The far stream comes first; the near one later. */
		wr[i] = (struct writer){.ino = 9, .off = far + ((uint64_t)i << 20), .len = 1 << 20,
					.delay_us = 200 * i};
		wr[NW / 2 + i] = (struct writer){.ino = 9, .off = (uint64_t)i << 20, .len = 1 << 20,
						 .delay_us = 200000 + 200 * i};
	}
	run(&w, wr, NW);
	ck_assert_int_eq(w.nlog, NW);
	/* Had the far stream waited for the near one (below it), the near
	 * one would have gone first. */
	ck_assert_msg(w.log[0] == far, "the far stream waited: first write at %llu",
		      (unsigned long long)w.log[0]);
	uint64_t last_near = 0, last_far = far;
	for (int i = 0; i < NW; i++) {
		uint64_t *last = w.log[i] >= far ? &last_far : &last_near;
		ck_assert_msg(w.log[i] >= *last, "a stream went out of order at %llu",
			      (unsigned long long)w.log[i]);
		*last = w.log[i];
	}
	free_fs(w.fs);
}
END_TEST

/* A registered write that never takes the lock holds the next one up for
 * a bounded time, not forever. */
START_TEST(test_bounded_wait)
{
	struct fs *fs = new_fs();
	fs->order.wait_ms = 50;
	int ghost = order_enter(fs, 5, 0, 4096);
	ck_assert_int_ge(ghost, 0);
	pthread_mutex_lock(inode_lock_of(fs, 5));
	order_wait(fs, 5, 4096); /* returns: the test would hang otherwise */
	pthread_mutex_unlock(inode_lock_of(fs, 5));
	pthread_mutex_lock(inode_lock_of(fs, 5));
	order_leave(fs, ghost, 5);
	pthread_mutex_unlock(inode_lock_of(fs, 5));
	/* With every slot taken a write goes unordered (slot -1), and
	 * leaving with -1 is a no-op. */
	int slots[ORDER_SLOTS];
	for (int i = 0; i < ORDER_SLOTS; i++)
		ck_assert_int_ge(slots[i] = order_enter(fs, 100 + (uint64_t)i, 0, 1), 0);
	ck_assert_int_eq(order_enter(fs, 99, 0, 1), -1);
	order_leave(fs, -1, 99);
	for (int i = 0; i < ORDER_SLOTS; i++)
		order_leave(fs, slots[i], 100 + (uint64_t)i);
	free_fs(fs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("order");
	TCase *tc = tcase_create("order");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_train_in_order);
	tcase_add_test(tc, test_streams_apart);
	tcase_add_test(tc, test_bounded_wait);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
