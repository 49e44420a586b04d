/*
 * test_batch: the write-batch API (store_batch_*) through a real store in a
 * temporary directory (suite "batch").
 *
 * Covers: puts and deletes applied together, count, clear and reuse, an
 * empty batch, the same key twice in one batch (the last op wins), that
 * store_write leaves the batch unchanged (it can be written again), that a
 * batch survives close + reopen (it went through the commit log) and a
 * flush, and sync writes; batch_save/batch_rollback (the store's delayed
 * log records) drop exactly what was appended since the save.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "store.h"
#include "testutil.h"

struct fixture {
	char *dir;
	struct store_options opt;
	struct store *st;
};

static void fx_open(struct fixture *fx)
{
	ck_assert_int_eq(store_open(fx->dir, &fx->opt, &fx->st), 0);
	ck_assert_ptr_nonnull(fx->st);
}

static void fx_init(struct fixture *fx)
{
	fx->dir = tu_mkdtemp("batch");
	store_options_init(&fx->opt);
	fx->opt.write_buffer_size = 64 * 1024;
	fx_open(fx);
}

static void fx_reopen(struct fixture *fx)
{
	ck_assert_int_eq(store_close(fx->st), 0);
	fx->st = NULL;
	fx_open(fx);
}

static void fx_done(struct fixture *fx)
{
	if (fx->st)
		ck_assert_int_eq(store_close(fx->st), 0);
	tu_rmrf(fx->dir);
	free(fx->dir);
}

static void expect_val(struct store *st, const char *k, const char *v)
{
	void *val = NULL;
	size_t vlen = 0;
	int rc = store_get(st, NULL, k, strlen(k), &val, &vlen);
	ck_assert_msg(rc == 0, "get %s: %d, want value %s", k, rc, v);
	ck_assert_msg(vlen == strlen(v) && memcmp(val, v, vlen) == 0,
		      "get %s: got %.*s, want %s", k, (int)vlen, (char *)val, v);
	ck_assert_msg(((char *)val)[vlen] == 0, "value not NUL-terminated");
	free(val);
}

static void expect_absent(struct store *st, const char *k)
{
	void *val = NULL;
	size_t vlen = 0;
	int rc = store_get(st, NULL, k, strlen(k), &val, &vlen);
	ck_assert_msg(rc == -ENOENT, "get %s: %d, want -ENOENT", k, rc);
	free(val);
}

static int bput(struct store_batch *b, const char *k, const char *v)
{
	return store_batch_put(b, k, strlen(k), v, strlen(v));
}

static int bdel(struct store_batch *b, const char *k)
{
	return store_batch_delete(b, k, strlen(k));
}

static size_t count_keys(struct store *st)
{
	struct store_iter *it;
	ck_assert_int_eq(store_iter_new(st, NULL, &it), 0);
	size_t n = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
		n++;
	ck_assert_int_eq(store_iter_status(it), 0);
	store_iter_free(it);
	return n;
}

static int count_op(void *ctx, uint64_t seq, int type, const uint8_t *key,
		    size_t klen, const uint8_t *val, size_t vlen)
{
	(void)seq, (void)type, (void)key, (void)klen, (void)val, (void)vlen;
	++*(int *)ctx;
	return 0;
}

START_TEST(test_rollback)
{
	struct store_batch *a = store_batch_new(), *b = store_batch_new();
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(bput(a, "k1", "v1"), 0);
	ck_assert_int_eq(bput(b, "k2", "v2"), 0);
	ck_assert_int_eq(store_batch_delete(b, "k3", 2), 0);
	struct batch_mark empty, one;
	batch_save(a, &one);
	struct store_batch *c = store_batch_new();
	batch_save(c, &empty);
	ck_assert_int_eq(batch_append(c, b), 0);
	ck_assert_uint_eq(batch_count(c), 2);
	batch_rollback(c, &empty);
	ck_assert_uint_eq(batch_count(c), 0);
	ck_assert_uint_eq(c->rep.len, empty.len);
	size_t len = a->rep.len;
	uint64_t ub = a->user_bytes;
	ck_assert_int_eq(batch_append(a, b), 0);
	ck_assert_uint_eq(batch_count(a), 3);
	batch_rollback(a, &one);
	ck_assert_uint_eq(batch_count(a), 1);
	ck_assert_uint_eq(a->rep.len, len);
	ck_assert_uint_eq(a->user_bytes, ub);
	int n = 0;
	ck_assert_int_eq(batch_iterate(a->rep.data, a->rep.len, count_op, &n), 0);
	ck_assert_int_eq(n, 1);
	/* And it takes appends again, as if the dropped ones never were. */
	ck_assert_int_eq(batch_append(a, b), 0);
	n = 0;
	ck_assert_int_eq(batch_iterate(a->rep.data, a->rep.len, count_op, &n), 0);
	ck_assert_int_eq(n, 3);
	store_batch_free(a);
	store_batch_free(b);
	store_batch_free(c);
}
END_TEST

START_TEST(test_put_delete_atomic)
{
	struct fixture fx;
	fx_init(&fx);
	ck_assert_int_eq(store_put(fx.st, "a", 1, "old-a", 5, 0), 0);
	ck_assert_int_eq(store_put(fx.st, "b", 1, "old-b", 5, 0), 0);
	ck_assert_int_eq(store_put(fx.st, "c", 1, "old-c", 5, 0), 0);

	struct store_batch *b = store_batch_new();
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(store_batch_count(b), 0);
	ck_assert_int_eq(bput(b, "a", "new-a"), 0);
	ck_assert_int_eq(bdel(b, "b"), 0);
	ck_assert_int_eq(bput(b, "d", "new-d"), 0);
	ck_assert_int_eq(bdel(b, "zz-never-existed"), 0);
	ck_assert_uint_eq(store_batch_count(b), 4);

	/* A snapshot before the batch sees none of it; the store sees all. */
	const struct store_snapshot *snap = store_snapshot_new(fx.st);
	ck_assert_ptr_nonnull(snap);
	ck_assert_int_eq(store_write(fx.st, b, 0), 0);
	ck_assert_uint_eq(store_batch_count(b), 4);
	expect_val(fx.st, "a", "new-a");
	expect_absent(fx.st, "b");
	expect_val(fx.st, "c", "old-c");
	expect_val(fx.st, "d", "new-d");
	expect_absent(fx.st, "zz-never-existed");

	void *v;
	size_t vl;
	ck_assert_int_eq(store_get(fx.st, snap, "a", 1, &v, &vl), 0);
	ck_assert_mem_eq(v, "old-a", 5);
	free(v);
	ck_assert_int_eq(store_get(fx.st, snap, "b", 1, &v, &vl), 0);
	ck_assert_mem_eq(v, "old-b", 5);
	free(v);
	ck_assert_int_eq(store_get(fx.st, snap, "d", 1, &v, &vl), -ENOENT);
	/* The batch's ops got consecutive sequence numbers after the snap. */
	const struct store_snapshot *snap2 = store_snapshot_new(fx.st);
	ck_assert_ptr_nonnull(snap2);
	ck_assert_uint_ge(store_snapshot_seq(snap2), store_snapshot_seq(snap) + 4);
	store_snapshot_release(fx.st, snap2);
	store_snapshot_release(fx.st, snap);
	ck_assert_uint_eq(count_keys(fx.st), 3);

	/* It went through the commit log: reopen, and flush + reopen. */
	fx_reopen(&fx);
	expect_val(fx.st, "a", "new-a");
	expect_absent(fx.st, "b");
	expect_val(fx.st, "d", "new-d");
	ck_assert_int_eq(store_flush(fx.st), 0);
	fx_reopen(&fx);
	expect_val(fx.st, "a", "new-a");
	expect_absent(fx.st, "b");
	expect_val(fx.st, "c", "old-c");
	expect_val(fx.st, "d", "new-d");
	ck_assert_uint_eq(count_keys(fx.st), 3);

	store_batch_free(b);
	fx_done(&fx);
}
END_TEST

START_TEST(test_clear_reuse)
{
	struct fixture fx;
	fx_init(&fx);
	struct store_batch *b = store_batch_new();
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(bput(b, "x", "1"), 0);
	ck_assert_int_eq(bput(b, "y", "1"), 0);
	ck_assert_uint_eq(store_batch_count(b), 2);
	store_batch_clear(b);
	ck_assert_uint_eq(store_batch_count(b), 0);
	/* A cleared batch writes nothing. */
	ck_assert_int_eq(store_write(fx.st, b, 0), 0);
	expect_absent(fx.st, "x");
	expect_absent(fx.st, "y");

	ck_assert_int_eq(bput(b, "y", "2"), 0);
	ck_assert_uint_eq(store_batch_count(b), 1);
	ck_assert_int_eq(store_write(fx.st, b, STORE_WRITE_SYNC), 0);
	expect_absent(fx.st, "x");
	expect_val(fx.st, "y", "2");

	/* Reuse many times with growing content. */
	char k[32], val[32];
	for (int round = 0; round < 50; round++) {
		store_batch_clear(b);
		for (int i = 0; i <= round; i++) {
			snprintf(k, sizeof(k), "r%02d", i);
			snprintf(val, sizeof(val), "v%d-%d", round, i);
			ck_assert_int_eq(bput(b, k, val), 0);
		}
		if (round > 0) {
			snprintf(k, sizeof(k), "r%02d", round - 1);
			ck_assert_int_eq(bdel(b, k), 0);
		}
		ck_assert_uint_eq(store_batch_count(b), (size_t)round + 1 + (round > 0));
		ck_assert_int_eq(store_write(fx.st, b, 0), 0);
	}
	for (int i = 0; i < 50; i++) {
		snprintf(k, sizeof(k), "r%02d", i);
		snprintf(val, sizeof(val), "v49-%d", i);
		if (i == 48)
			expect_absent(fx.st, k);
		else
			expect_val(fx.st, k, val);
	}
	/* Writing the same (unchanged) batch twice is fine. */
	ck_assert_int_eq(store_write(fx.st, b, 0), 0);
	ck_assert_uint_eq(store_batch_count(b), 51);
	fx_reopen(&fx);
	expect_val(fx.st, "r49", "v49-49");
	expect_absent(fx.st, "r48");
	store_batch_free(b);
	fx_done(&fx);
}
END_TEST

START_TEST(test_empty_batch)
{
	struct fixture fx;
	fx_init(&fx);
	struct store_batch *b = store_batch_new();
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(store_batch_count(b), 0);
	ck_assert_int_eq(store_put(fx.st, "k", 1, "v", 1, 0), 0);
	ck_assert_int_eq(store_write(fx.st, b, 0), 0);
	ck_assert_int_eq(store_write(fx.st, b, STORE_WRITE_SYNC), 0);
	expect_val(fx.st, "k", "v");
	ck_assert_uint_eq(count_keys(fx.st), 1);
	fx_reopen(&fx);
	expect_val(fx.st, "k", "v");
	ck_assert_uint_eq(count_keys(fx.st), 1);
	store_batch_free(b);
	store_batch_free(NULL); /* like free(NULL) */
	fx_done(&fx);
}
END_TEST

START_TEST(test_same_key_twice)
{
	struct fixture fx;
	fx_init(&fx);
	struct store_batch *b = store_batch_new();
	ck_assert_ptr_nonnull(b);
	/* put, put: the second wins */
	ck_assert_int_eq(bput(b, "k1", "first"), 0);
	ck_assert_int_eq(bput(b, "k1", "second"), 0);
	/* put, delete: gone */
	ck_assert_int_eq(bput(b, "k2", "x"), 0);
	ck_assert_int_eq(bdel(b, "k2"), 0);
	/* delete, put: there */
	ck_assert_int_eq(bdel(b, "k3"), 0);
	ck_assert_int_eq(bput(b, "k3", "back"), 0);
	/* put, delete, put */
	ck_assert_int_eq(bput(b, "k4", "a"), 0);
	ck_assert_int_eq(bdel(b, "k4"), 0);
	ck_assert_int_eq(bput(b, "k4", "c"), 0);
	ck_assert_uint_eq(store_batch_count(b), 9);
	ck_assert_int_eq(store_put(fx.st, "k3", 2, "before", 6, 0), 0);
	ck_assert_int_eq(store_write(fx.st, b, 0), 0);

	for (int pass = 0; pass < 3; pass++) {
		expect_val(fx.st, "k1", "second");
		expect_absent(fx.st, "k2");
		expect_val(fx.st, "k3", "back");
		expect_val(fx.st, "k4", "c");
		ck_assert_uint_eq(count_keys(fx.st), 3);
		if (pass == 0)
			fx_reopen(&fx); /* replayed from the commit log */
		else if (pass == 1) {
			ck_assert_int_eq(store_flush(fx.st), 0); /* from a table */
			ck_assert_int_eq(store_compact_range(fx.st, NULL, 0, NULL, 0), 0);
		}
	}
	store_batch_free(b);
	fx_done(&fx);
}
END_TEST

START_TEST(test_big_batch)
{
	/* A batch far larger than the write buffer and a log block. */
	struct fixture fx;
	fx_init(&fx);
	struct store_batch *b = store_batch_new();
	ck_assert_ptr_nonnull(b);
	char k[32];
	static char val[1000];
	memset(val, 'v', sizeof(val));
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "big%05d", i);
		ck_assert_int_eq(store_batch_put(b, k, strlen(k), val, sizeof(val)), 0);
	}
	ck_assert_uint_eq(store_batch_count(b), 1000);
	ck_assert_int_eq(store_write(fx.st, b, STORE_WRITE_SYNC), 0);
	ck_assert_uint_eq(count_keys(fx.st), 1000);
	fx_reopen(&fx);
	ck_assert_uint_eq(count_keys(fx.st), 1000);
	void *v;
	size_t vl;
	ck_assert_int_eq(store_get(fx.st, NULL, "big00999", 8, &v, &vl), 0);
	ck_assert_uint_eq(vl, sizeof(val));
	ck_assert_mem_eq(v, val, sizeof(val));
	free(v);
	store_batch_free(b);
	fx_done(&fx);
}
END_TEST

START_TEST(test_binary_and_empty_values)
{
	struct fixture fx;
	fx_init(&fx);
	struct store_batch *b = store_batch_new();
	ck_assert_ptr_nonnull(b);
	const char k1[] = { 'a', 0, 'b' };
	const char v1[] = { 0, 1, 0, (char)0xff };
	ck_assert_int_eq(store_batch_put(b, k1, sizeof(k1), v1, sizeof(v1)), 0);
	ck_assert_int_eq(store_batch_put(b, "e", 1, "", 0), 0);
	ck_assert_int_eq(store_write(fx.st, b, 0), 0);
	for (int pass = 0; pass < 2; pass++) {
		void *v;
		size_t vl;
		ck_assert_int_eq(store_get(fx.st, NULL, k1, sizeof(k1), &v, &vl), 0);
		ck_assert_uint_eq(vl, sizeof(v1));
		ck_assert_mem_eq(v, v1, sizeof(v1));
		free(v);
		ck_assert_int_eq(store_get(fx.st, NULL, k1, 1, &v, &vl), -ENOENT);
		ck_assert_int_eq(store_get(fx.st, NULL, "e", 1, &v, &vl), 0);
		ck_assert_uint_eq(vl, 0);
		ck_assert_ptr_nonnull(v);
		free(v);
		fx_reopen(&fx);
	}
	store_batch_free(b);
	fx_done(&fx);
}
END_TEST

static Suite *batch_suite(void)
{
	Suite *s = suite_create("batch");
	TCase *tc = tcase_create("batch");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_put_delete_atomic);
	tcase_add_test(tc, test_clear_reuse);
	tcase_add_test(tc, test_empty_batch);
	tcase_add_test(tc, test_same_key_twice);
	tcase_add_test(tc, test_big_batch);
	tcase_add_test(tc, test_binary_and_empty_values);
	tcase_add_test(tc, test_rollback);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(batch_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
