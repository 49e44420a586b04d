/*
 * test_copies: a store kept in two directories (store_options.copies,
 * FORMAT.md "Copies"), on real files (suite "store").
 *
 *   - both copies hold everything; each opens alone with every key;
 *   - a flipped byte in one copy's table is read from the other, logged,
 *     and the table rewritten (the copies' files equal again);
 *   - a flipped byte in one copy's commit log (mid-file) and a torn tail
 *     in the other: recovery takes the whole log, rewrites the bad one;
 *   - a wiped copy is filled again at open;
 *   - a stale copy (left out of an open that wrote) is never read: marked
 *     stale or not, the newer state wins, and the stale copy is brought
 *     up to date;
 *   - a copy whose directory goes while the store is open is dropped
 *     (copy_failed called before the write that found it returns), writes
 *     go on, and the other copy alone has everything; a copy_failed that
 *     fails fails the write.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "testutil.h"

#define NKEYS 3000

struct fixture {
	char *root;
	char a[512], b[512];
	const char *copies[1];
	struct tu_log log;
	struct store_options o;
	int failed_calls;
	size_t failed_copy;
	int failed_ret;
};

static int on_failed(void *ctx, size_t copy, int err, const char *what)
{
	struct fixture *f = ctx;
	(void)err;
	(void)what;
	f->failed_calls++;
	f->failed_copy = copy;
	return f->failed_ret;
}

static void fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->root = tu_mkdtemp("copies");
	ck_assert_ptr_nonnull(f->root);
	snprintf(f->a, sizeof(f->a), "%s/a", f->root);
	snprintf(f->b, sizeof(f->b), "%s/b", f->root);
	f->copies[0] = f->b;
	tu_log_init(&f->log, false);
	store_options_init(&f->o);
	f->o.write_buffer_size = 64 * 1024;
	f->o.target_file_size = 32 * 1024;
	f->o.block_size = 1024;
	f->o.log = tu_log_fn;
	f->o.log_ctx = &f->log;
	f->o.copies = f->copies;
	f->o.ncopies = 1;
	f->o.copy_failed = on_failed;
	f->o.copy_ctx = f;
}

static void fx_free(struct fixture *f)
{
	tu_rmrf(f->root);
	free(f->root);
	tu_log_free(&f->log);
}

static void put_keys(struct store *st, int from, int to, const char *tag)
{
	for (int i = from; i < to; i++) {
		char k[32], v[64];
		snprintf(k, sizeof(k), "key%06d", i);
		snprintf(v, sizeof(v), "%s-value-%06d-padding-padding", tag, i);
		ck_assert_int_eq(store_put(st, k, strlen(k), v, strlen(v), 0), 0);
	}
}

/* Every key in [from, to) has tag's value. */
static void check_keys(struct store *st, int from, int to, const char *tag)
{
	for (int i = from; i < to; i++) {
		char k[32], v[64];
		snprintf(k, sizeof(k), "key%06d", i);
		snprintf(v, sizeof(v), "%s-value-%06d-padding-padding", tag, i);
		void *got = NULL;
		size_t len = 0;
		int rc = store_get(st, NULL, k, strlen(k), &got, &len);
		ck_assert_msg(rc == 0, "%s: get: %d", k, rc);
		ck_assert_msg(len == strlen(v) && memcmp(got, v, len) == 0, "%s: wrong value %.*s",
			      k, (int)len, (char *)got);
		free(got);
	}
}

/* Open one copy alone, read-only, and check. */
static void check_alone(struct fixture *f, const char *dir, int from, int to, const char *tag)
{
	struct store_options o = f->o;
	o.copies = NULL;
	o.ncopies = 0;
	o.read_only = true;
	struct store *st;
	int rc = store_open(dir, &o, &st);
	if (rc)
		tu_log_dump(&f->log, "  log: ");
	ck_assert_msg(rc == 0, "%s alone: open: %d", dir, rc);
	check_keys(st, from, to, tag);
	ck_assert_int_eq(store_close(st), 0);
}

static int read_file(const char *path, uint8_t **data, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return -1;
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	*data = malloc((size_t)n + 1);
	*len = fread(*data, 1, (size_t)n, fp);
	fclose(fp);
	return 0;
}

static bool same_file(const char *x, const char *y)
{
	uint8_t *a = NULL, *b = NULL;
	size_t al = 0, bl = 0;
	bool same = read_file(x, &a, &al) == 0 && read_file(y, &b, &bl) == 0 && al == bl &&
		    memcmp(a, b, al) == 0;
	free(a);
	free(b);
	return same;
}

static void flip(const char *path, long off)
{
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	uint8_t c;
	ck_assert_int_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

/* A byte flipped in a data block of every table in dir; how many. */
static int flip_tables(const char *dir)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	int tables = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l > 4 && strcmp(de->d_name + l - 4, ".sst") == 0) {
			char p[1024];
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			flip(p, 100);
			tables++;
		}
	}
	closedir(d);
	return tables;
}

/* The first file in dir ending in suffix (name into out). */
static bool find_file(const char *dir, const char *suffix, char *out, size_t cap)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	bool found = false;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), s = strlen(suffix);
		if (l > s && strcmp(de->d_name + l - s, suffix) == 0) {
			snprintf(out, cap, "%s", de->d_name);
			found = true;
			break;
		}
	}
	closedir(d);
	return found;
}

START_TEST(test_both_whole)
{
	struct fixture f;
	fx_init(&f);
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	ck_assert_uint_eq(store_copy_count(st), 2);
	put_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_flush(st), 0);
	put_keys(st, 0, 100, "two");
	ck_assert_int_eq(store_sync(st), 0);
	ck_assert_int_eq(store_close(st), 0);
	ck_assert_int_eq(f.failed_calls, 0);
	check_alone(&f, f.a, 100, NKEYS, "one");
	check_alone(&f, f.b, 100, NKEYS, "one");
	check_alone(&f, f.a, 0, 100, "two");
	check_alone(&f, f.b, 0, 100, "two");
	char name[64], pa[1024], pb[1024];
	ck_assert(find_file(f.a, ".sst", name, sizeof(name)));
	snprintf(pa, sizeof(pa), "%s/%s", f.a, name);
	snprintf(pb, sizeof(pb), "%s/%s", f.b, name);
	ck_assert(same_file(pa, pb));
	fx_free(&f);
}
END_TEST

START_TEST(test_table_flip_healed)
{
	struct fixture f;
	fx_init(&f);
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	put_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_close(st), 0);
	/* Damage every table of copy a, the one read first, in a data block
	 * (copy b's damage is found by a scrub: fsck). */
	const char *bad = f.a, *good = f.b;
	int tables = flip_tables(bad);
	ck_assert_int_gt(tables, 0);
	tu_log_clear(&f.log);
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	check_keys(st, 0, NKEYS, "one");
	struct store_copy_info ci;
	ck_assert_int_eq(store_copy_info(st, 0, &ci), 0);
	ck_assert(ci.live);
	ck_assert_uint_eq(ci.healed, (uint64_t)tables);
	ck_assert(tu_log_contains(&f.log, "fail their checksum"));
	ck_assert(tu_log_contains(&f.log, "rewritten from"));
	ck_assert_int_eq(store_close(st), 0);
	ck_assert_int_eq(f.failed_calls, 0);
	/* The bad copy's tables are whole again. */
	DIR *d = opendir(bad);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l > 4 && strcmp(de->d_name + l - 4, ".sst") == 0) {
			char p[1024], q[1024];
			snprintf(p, sizeof(p), "%s/%s", bad, de->d_name);
			snprintf(q, sizeof(q), "%s/%s", good, de->d_name);
			ck_assert_msg(same_file(p, q), "%s not healed", p);
		}
	}
	closedir(d);
	check_alone(&f, bad, 0, NKEYS, "one");
	fx_free(&f);
}
END_TEST

START_TEST(test_log_flip)
{
	struct fixture f;
	fx_init(&f);
	f.o.write_buffer_size = 8 << 20; /* everything stays in the log */
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	put_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_sync(st), 0);
	/* Leave the log as a crash would: no close. */
	char name[64], pa[1024], pb[1024];
	ck_assert(find_file(f.a, ".log", name, sizeof(name)));
	snprintf(pa, sizeof(pa), "%s/%s", f.a, name);
	snprintf(pb, sizeof(pb), "%s/%s", f.b, name);
	ck_assert_int_eq(store_close(st), 0); /* the log stays: close flushes nothing */
	const char *tag = "one";
	struct stat sa;
	ck_assert_int_eq(stat(pa, &sa), 0);
	ck_assert_int_gt(sa.st_size, 40000);
	flip(pa, 1000);                 /* mid-file: damage */
	ck_assert_int_eq(truncate(pb, sa.st_size - 10), 0); /* a torn tail */
	tu_log_clear(&f.log);
	int rc = store_open(f.a, &f.o, &st);
	if (rc)
		tu_log_dump(&f.log, "  log: ");
	ck_assert_int_eq(rc, 0);
	check_keys(st, 0, NKEYS - 1, tag);
	ck_assert(tu_log_contains(&f.log, "rewritten from"));
	ck_assert_int_eq(store_close(st), 0);
	ck_assert_int_eq(f.failed_calls, 0);
	check_alone(&f, f.a, 0, NKEYS - 1, tag);
	fx_free(&f);
}
END_TEST

START_TEST(test_wiped_copy_filled)
{
	struct fixture f;
	fx_init(&f);
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	put_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_close(st), 0);
	ck_assert_int_eq(tu_rmrf(_i ? f.a : f.b), 0);
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	check_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_close(st), 0);
	check_alone(&f, _i ? f.a : f.b, 0, NKEYS, "one");
	fx_free(&f);
}
END_TEST

/* _i: 0 the stale copy is marked (copies_stale), 1 it is not. */
START_TEST(test_stale_copy)
{
	struct fixture f;
	fx_init(&f);
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	put_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_close(st), 0);
	/* b is away: a alone moves on (new values, a flush, new logs). */
	struct store_options alone = f.o;
	alone.copies = NULL;
	alone.ncopies = 0;
	ck_assert_int_eq(store_open(f.a, &alone, &st), 0);
	put_keys(st, 0, NKEYS, "two");
	ck_assert_int_eq(store_flush(st), 0);
	put_keys(st, 0, NKEYS / 2, "three");
	ck_assert_int_eq(store_close(st), 0);
	/* b comes back; the caller lists it first (it is copy 0). */
	struct store_options o = f.o;
	const char *copies[1] = { f.a };
	o.copies = copies;
	o.copies_stale = _i ? 0 : 1u;
	tu_log_clear(&f.log);
	ck_assert_int_eq(store_open(f.b, &o, &st), 0);
	check_keys(st, 0, NKEYS / 2, "three");
	check_keys(st, NKEYS / 2, NKEYS, "two");
	ck_assert_int_eq(store_close(st), 0);
	/* b was brought up to date. */
	check_alone(&f, f.b, 0, NKEYS / 2, "three");
	check_alone(&f, f.b, NKEYS / 2, NKEYS, "two");
	fx_free(&f);
}
END_TEST

/* The copy's directory goes while the store is open. */
START_TEST(test_copy_dropped)
{
	struct fixture f;
	fx_init(&f);
	f.failed_ret = _i ? -EIO : 0;
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	put_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_sync(st), 0);
	/* The background thread may make a file in it meanwhile (ENOTEMPTY). */
	int gone = -1;
	for (int t = 0; t < 100 && gone; t++)
		gone = tu_rmrf(f.b);
	ck_assert_int_eq(gone, 0);
	int rc = store_put(st, "x", 1, "y", 1, STORE_WRITE_SYNC);
	/* Once; or, while it cannot be recorded, again before every write
	 * (background ones too). */
	ck_assert_int_ge(f.failed_calls, 1);
	if (!_i)
		ck_assert_int_eq(f.failed_calls, 1);
	ck_assert_uint_eq(f.failed_copy, 1);
	struct store_copy_info ci;
	ck_assert_int_eq(store_copy_info(st, 1, &ci), 0);
	ck_assert(!ci.live);
	if (_i) {
		/* The drop could not be recorded: the write is not acknowledged,
		 * nor is any later one while it cannot be. */
		ck_assert_int_ne(rc, 0);
		ck_assert_int_ne(store_put(st, "x2", 2, "y", 1, 0), 0);
		(void)store_close(st);
	} else {
		ck_assert_int_eq(rc, 0);
		put_keys(st, 0, NKEYS, "two");
		ck_assert_int_eq(store_flush(st), 0);
		ck_assert_int_eq(store_sync(st), 0);
		ck_assert_int_eq(store_close(st), 0);
		check_alone(&f, f.a, 0, NKEYS, "two");
	}
	fx_free(&f);
}
END_TEST

struct writer_arg {
	struct store *st;
	volatile bool stop;
	int written;
};

static void *writer_main(void *p)
{
	struct writer_arg *w = p;
	while (!w->stop && w->written < 200000) {
		char k[32], v[64];
		snprintf(k, sizeof(k), "w%08d", w->written);
		snprintf(v, sizeof(v), "value-%08d-padding-padding-padding", w->written);
		if (store_put(w->st, k, strlen(k), v, strlen(v), (w->written % 50) ? 0 : STORE_WRITE_SYNC))
			break;
		w->written++;
	}
	return NULL;
}

/* A copy added while the store is written to, then the first removed:
 * the new copy alone has everything. */
START_TEST(test_copy_added_online)
{
	struct fixture f;
	fx_init(&f);
	struct store_options one = f.o;
	one.copies = NULL;
	one.ncopies = 0;
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &one, &st), 0);
	put_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_flush(st), 0);
	struct writer_arg w = { .st = st };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, writer_main, &w), 0);
	while (w.written < 2000)
		usleep(1000);
	size_t k = 0;
	int rc = store_copy_add(st, f.b, &k);
	if (rc)
		tu_log_dump(&f.log, "  log: ");
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(k, 1);
	ck_assert_uint_eq(store_copy_count(st), 2);
	int at_add = w.written;
	while (w.written < at_add + 2000)
		usleep(1000);
	if (_i)
		ck_assert_int_eq(store_copy_remove(st, 0), 0);
	ck_assert_int_eq(store_copy_remove(st, _i ? 1 : 1), _i ? -EBUSY : 0);
	int at_remove = w.written;
	while (w.written < at_remove + 1000)
		usleep(1000);
	w.stop = true;
	pthread_join(t, NULL);
	ck_assert_int_eq(store_close(st), 0);
	ck_assert_int_eq(f.failed_calls, 0);
	/* _i: b alone has everything; else a alone does (b was removed). */
	const char *dir = _i ? f.b : f.a;
	struct store_options o = f.o;
	o.copies = NULL;
	o.ncopies = 0;
	o.read_only = true;
	ck_assert_int_eq(store_open(dir, &o, &st), 0);
	check_keys(st, 0, NKEYS, "one");
	for (int i = 0; i < w.written; i++) {
		char key[32], v[64];
		snprintf(key, sizeof(key), "w%08d", i);
		snprintf(v, sizeof(v), "value-%08d-padding-padding-padding", i);
		void *got = NULL;
		size_t len = 0;
		ck_assert_msg(store_get(st, NULL, key, strlen(key), &got, &len) == 0, "%s: %s missing",
			      dir, key);
		ck_assert(len == strlen(v) && !memcmp(got, v, len));
		free(got);
	}
	ck_assert_int_eq(store_close(st), 0);
	fx_free(&f);
}
END_TEST

/* A checkpoint taken while a thread writes (store_checkpoint): it opens
 * alone and holds every write acknowledged before the call, and the
 * writer's keys it holds are a prefix (a consistent cut); into a
 * directory that is not empty it is refused. */
START_TEST(test_checkpoint_online)
{
	struct fixture f;
	fx_init(&f);
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	put_keys(st, 0, NKEYS, "one");
	struct writer_arg w = { .st = st };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, writer_main, &w), 0);
	while (w.written < 2000)
		usleep(1000);
	char ck[600];
	snprintf(ck, sizeof(ck), "%s/ck", f.root);
	int before = w.written;
	struct store_checkpoint_info info;
	int rc = store_checkpoint(st, ck, &info);
	if (rc)
		tu_log_dump(&f.log, "  log: ");
	ck_assert_int_eq(rc, 0);
	ck_assert_int_gt(info.tables, 0);
	ck_assert_int_eq(store_checkpoint(st, ck, &info), -ENOTEMPTY);
	w.stop = true;
	pthread_join(t, NULL);
	ck_assert_int_eq(store_close(st), 0);
	struct store_options o = f.o;
	o.copies = NULL;
	o.ncopies = 0;
	o.read_only = true;
	ck_assert_int_eq(store_open(ck, &o, &st), 0);
	check_keys(st, 0, NKEYS, "one");
	int held = 0;
	for (int i = 0; i < w.written; i++) {
		char key[32];
		snprintf(key, sizeof(key), "w%08d", i);
		void *got = NULL;
		size_t len = 0;
		rc = store_get(st, NULL, key, strlen(key), &got, &len);
		ck_assert_msg(rc == 0 || rc == -ENOENT, "%s: %d", key, rc);
		free(got);
		if (rc == 0) {
			ck_assert_msg(held == i, "%s in the checkpoint, w%08d not", key, held);
			held++;
		}
	}
	ck_assert_msg(held >= before, "the checkpoint holds %d writes, %d were acknowledged before",
		      held, before);
	ck_assert_int_eq(store_close(st), 0);
	fx_free(&f);
}
END_TEST

static void no_report(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

/* A checkpoint of a store whose first copy has damaged tables takes them
 * from the other copy (each table checked after it is copied). */
START_TEST(test_checkpoint_damaged_copy)
{
	struct fixture f;
	fx_init(&f);
	struct store *st;
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	put_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_flush(st), 0);
	/* Settled (no compaction left to read, and so heal, the tables), then
	 * damaged while closed. */
	ck_assert_int_eq(store_compact_range(st, NULL, 0, NULL, 0), 0);
	ck_assert_int_eq(store_close(st), 0);
	ck_assert_int_gt(flip_tables(f.a), 0);
	ck_assert_int_eq(store_open(f.a, &f.o, &st), 0);
	char ck[600];
	snprintf(ck, sizeof(ck), "%s/ck", f.root);
	struct store_checkpoint_info info;
	ck_assert_int_eq(store_checkpoint(st, ck, &info), 0);
	ck_assert_int_eq(store_close(st), 0);
	struct store_options o = f.o;
	o.copies = NULL;
	o.ncopies = 0;
	o.read_only = true;
	ck_assert_int_eq(store_verify(ck, &o, no_report, NULL), 0);
	ck_assert_int_eq(store_open(ck, &o, &st), 0);
	check_keys(st, 0, NKEYS, "one");
	ck_assert_int_eq(store_close(st), 0);
	fx_free(&f);
}
END_TEST

static Suite *copies_suite(void)
{
	Suite *s = suite_create("copies");
	TCase *tc = tcase_create("copies");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_both_whole);
	tcase_add_test(tc, test_table_flip_healed);
	tcase_add_test(tc, test_log_flip);
	tcase_add_loop_test(tc, test_wiped_copy_filled, 0, 2);
	tcase_add_loop_test(tc, test_stale_copy, 0, 2);
	tcase_add_loop_test(tc, test_copy_dropped, 0, 2);
	tcase_add_loop_test(tc, test_copy_added_online, 0, 2);
	tcase_add_test(tc, test_checkpoint_online);
	tcase_add_test(tc, test_checkpoint_damaged_copy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(copies_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
