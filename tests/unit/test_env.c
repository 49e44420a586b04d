/*
 * test_env: the POSIX env (store/env_posix.c) and the fault-injecting
 * in-memory env (tests/lib/fault_env.c), suite "env".
 *
 * POSIX: in a fresh mkdtemp directory, appends of every size (below, at
 * and above the 64 KiB buffer) read back after flush/sync, pread stops at
 * end of file, rename/unlink/truncate/list_dir/mkdir behave like POSIX,
 * flock conflicts within one process give -EBUSY, and
 * env_write_file_atomic replaces a file and leaves no .tmp.
 * Fault env: the power-cut model (synced bytes and dir-synced names
 * survive, nothing else does), the armed faults strike after their
 * countdown, and handles of the dead "process" fail with -EIO but can
 * still be closed (ASan checks that nothing leaks).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "fault_env.h"

/* ---- helpers ---- */

static char *tmpdir;

static void posix_setup(void)
{
	char tmpl[] = "/tmp/lsmfs-env-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	tmpdir = strdup(tmpl);
	ck_assert_ptr_nonnull(tmpdir);
}

/* Remove tmpdir and whatever the test left in it (one level deep, plus
 * the "sub" directory some tests make). */
static void remove_tree(struct store_env *env, const char *dir)
{
	char **names;
	size_t n;
	if (env->ops->list_dir(env, dir, &names, &n) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (unlink(path) != 0) {
			remove_tree(env, path);
			(void)rmdir(path); /* best effort cleanup */
		}
	}
	env_free_names(names, n);
}

static void posix_teardown(void)
{
	remove_tree(store_env_posix(), tmpdir);
	(void)rmdir(tmpdir); /* best effort cleanup */
	free(tmpdir);
	tmpdir = NULL;
}

static char *path_in(const char *dir, const char *name)
{
	char *p;
	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
	return p;
}

/* Write data to path with one append and sync (+ close). */
static void write_file(struct store_env *env, const char *path,
		       const void *data, size_t len)
{
	struct env_wfile *f;
	ck_assert_int_eq(env->ops->open_writable(env, path, &f), 0);
	ck_assert_int_eq(env->ops->append(f, data, len), 0);
	ck_assert_int_eq(env->ops->sync(f), 0);
	ck_assert_int_eq(env->ops->close_writable(f), 0);
}

/* Assert that path holds exactly data. */
static void expect_file(struct store_env *env, const char *path,
			const void *data, size_t len)
{
	uint8_t *got;
	size_t glen;
	ck_assert_int_eq(env_read_file(env, path, &got, &glen), 0);
	ck_assert_uint_eq(glen, len);
	if (len)
		ck_assert_mem_eq(got, data, len);
	ck_assert_uint_eq(got[glen], 0); /* NUL-terminated */
	free(got);
}

static bool has_name(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* ---- POSIX env ---- */

START_TEST(test_posix_append_read)
{
	struct store_env *env = store_env_posix();
	char *path = path_in(tmpdir, "data");
	/* Pieces below, at and above the buffer, so every append path runs. */
	const size_t sizes[] = { 1, 100, 65536 - 101, 1, 65536, 3, 200000,
				 65535, 70000, 0, 7 };
	size_t total = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		total += sizes[i];
	uint8_t *expect = malloc(total);
	ck_assert_ptr_nonnull(expect);
	for (size_t i = 0; i < total; i++)
		expect[i] = (uint8_t)(i * 7 + i / 251);

	struct env_wfile *w;
	ck_assert_int_eq(env->ops->open_writable(env, path, &w), 0);
	size_t off = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ck_assert_int_eq(env->ops->append(w, expect + off, sizes[i]), 0);
		off += sizes[i];
		if (i == 2) {
			/* flush hands everything appended so far to the OS */
			ck_assert_int_eq(env->ops->flush(w), 0);
			uint64_t size;
			ck_assert_int_eq(env->ops->file_size(env, path, &size), 0);
			ck_assert_uint_eq(size, off);
		}
	}
	ck_assert_int_eq(env->ops->sync(w), 0);
	uint64_t size;
	ck_assert_int_eq(env->ops->file_size(env, path, &size), 0);
	ck_assert_uint_eq(size, total);
	ck_assert_int_eq(env->ops->close_writable(w), 0);
	expect_file(env, path, expect, total);

	/* pread: in the middle, across the end, past the end. */
	struct env_rfile *r;
	ck_assert_int_eq(env->ops->open_readable(env, path, &r), 0);
	uint8_t buf[1000];
	size_t got;
	ck_assert_int_eq(env->ops->pread(r, buf, sizeof(buf), 70000, &got), 0);
	ck_assert_uint_eq(got, sizeof(buf));
	ck_assert_mem_eq(buf, expect + 70000, sizeof(buf));
	ck_assert_int_eq(env->ops->pread(r, buf, sizeof(buf), total - 10, &got),
			 0);
	ck_assert_uint_eq(got, 10);
	ck_assert_mem_eq(buf, expect + total - 10, 10);
	ck_assert_int_eq(env->ops->pread(r, buf, sizeof(buf), total + 5, &got),
			 0);
	ck_assert_uint_eq(got, 0);
	env->ops->close_readable(r);

	/* open_writable truncates an existing file. */
	ck_assert_int_eq(env->ops->open_writable(env, path, &w), 0);
	ck_assert_int_eq(env->ops->close_writable(w), 0);
	ck_assert_int_eq(env->ops->file_size(env, path, &size), 0);
	ck_assert_uint_eq(size, 0);

	/* close flushes buffered bytes. */
	ck_assert_int_eq(env->ops->open_writable(env, path, &w), 0);
	ck_assert_int_eq(env->ops->append(w, "tail", 4), 0);
	ck_assert_int_eq(env->ops->close_writable(w), 0);
	expect_file(env, path, "tail", 4);

	free(expect);
	free(path);
}
END_TEST

START_TEST(test_posix_errors)
{
	struct store_env *env = store_env_posix();
	char *missing = path_in(tmpdir, "missing");
	char *nodir = path_in(tmpdir, "nodir/file");
	struct env_rfile *r;
	struct env_wfile *w;
	uint64_t size;
	ck_assert_int_eq(env->ops->open_readable(env, missing, &r), -ENOENT);
	ck_assert_int_eq(env->ops->open_writable(env, nodir, &w), -ENOENT);
	ck_assert_int_eq(env->ops->file_size(env, missing, &size), -ENOENT);
	ck_assert_int_eq(env->ops->exists(env, missing), -ENOENT);
	ck_assert_int_eq(env->ops->unlink(env, missing), -ENOENT);
	ck_assert_int_eq(env->ops->rename(env, missing, nodir), -ENOENT);
	ck_assert_int_eq(env->ops->sync_dir(env, missing), -ENOENT);
	char **names;
	size_t n;
	ck_assert_int_eq(env->ops->list_dir(env, missing, &names, &n), -ENOENT);
	uint8_t *data;
	size_t len;
	ck_assert_int_eq(env_read_file(env, missing, &data, &len), -ENOENT);
	ck_assert_int_eq(env->ops->exists(env, tmpdir), 0);
	ck_assert_int_eq(env->ops->mkdir(env, tmpdir), -EEXIST);
	free(missing);
	free(nodir);
}
END_TEST

START_TEST(test_posix_rename_unlink_truncate)
{
	struct store_env *env = store_env_posix();
	char *a = path_in(tmpdir, "a"), *b = path_in(tmpdir, "b");
	write_file(env, a, "alpha", 5);
	write_file(env, b, "bravo!", 6);
	/* Rename over an existing name replaces it. */
	ck_assert_int_eq(env->ops->rename(env, a, b), 0);
	ck_assert_int_eq(env->ops->exists(env, a), -ENOENT);
	ck_assert_int_eq(env->ops->exists(env, b), 0);
	expect_file(env, b, "alpha", 5);
	ck_assert_int_eq(env->ops->sync_dir(env, tmpdir), 0);

	ck_assert_int_eq(env->ops->truncate(env, b, 2), 0);
	expect_file(env, b, "al", 2);
	ck_assert_int_eq(env->ops->unlink(env, b), 0);
	ck_assert_int_eq(env->ops->exists(env, b), -ENOENT);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_posix_list_dir_mkdir)
{
	struct store_env *env = store_env_posix();
	char **names;
	size_t n;
	ck_assert_int_eq(env->ops->list_dir(env, tmpdir, &names, &n), 0);
	ck_assert_uint_eq(n, 0); /* no "." or ".." */
	env_free_names(names, n);

	const char *want[] = { "000001.log", "CURRENT", "MANIFEST-000002" };
	for (size_t i = 0; i < 3; i++) {
		char *p = path_in(tmpdir, want[i]);
		write_file(env, p, "x", 1);
		free(p);
	}
	char *sub = path_in(tmpdir, "sub");
	ck_assert_int_eq(env->ops->mkdir(env, sub), 0);
	ck_assert_int_eq(env->ops->mkdir(env, sub), -EEXIST);
	ck_assert_int_eq(env->ops->list_dir(env, tmpdir, &names, &n), 0);
	ck_assert_uint_eq(n, 4);
	for (size_t i = 0; i < 3; i++)
		ck_assert(has_name(names, n, want[i]));
	ck_assert(has_name(names, n, "sub"));
	env_free_names(names, n);
	env_free_names(NULL, 0); /* allowed */
	free(sub);
}
END_TEST

START_TEST(test_posix_lock)
{
	struct store_env *env = store_env_posix();
	char *p = path_in(tmpdir, "LOCK");
	struct env_lock *l1, *l2;
	ck_assert_int_eq(env->ops->lock(env, p, &l1), 0);
	ck_assert_int_eq(env->ops->exists(env, p), 0); /* created */
	/* flock conflicts between two opens, even in one process. */
	ck_assert_int_eq(env->ops->lock(env, p, &l2), -EBUSY);
	env->ops->unlock(l1);
	ck_assert_int_eq(env->ops->lock(env, p, &l2), 0);
	env->ops->unlock(l2);
	free(p);
}
END_TEST

START_TEST(test_posix_write_atomic)
{
	struct store_env *env = store_env_posix();
	char *p = path_in(tmpdir, "CURRENT");
	ck_assert_int_eq(env_write_file_atomic(env, tmpdir, "CURRENT",
					       "MANIFEST-000001\n", 16), 0);
	expect_file(env, p, "MANIFEST-000001\n", 16);
	ck_assert_int_eq(env_write_file_atomic(env, tmpdir, "CURRENT",
					       "MANIFEST-000002\n", 16), 0);
	expect_file(env, p, "MANIFEST-000002\n", 16);
	/* An empty file works too. */
	ck_assert_int_eq(env_write_file_atomic(env, tmpdir, "EMPTY", "", 0), 0);
	char *e = path_in(tmpdir, "EMPTY");
	expect_file(env, e, "", 0);

	char **names;
	size_t n;
	ck_assert_int_eq(env->ops->list_dir(env, tmpdir, &names, &n), 0);
	ck_assert_uint_eq(n, 2); /* no CURRENT.tmp left */
	env_free_names(names, n);

	/* A missing directory fails cleanly. */
	char *nodir = path_in(tmpdir, "nodir");
	ck_assert_int_eq(env_write_file_atomic(env, nodir, "CURRENT", "x", 1),
			 -ENOENT);
	free(nodir);
	free(e);
	free(p);
}
END_TEST

/* ---- fault env ---- */

static struct fault_env *fe;
static struct store_env *fenv;

static void fault_setup(void)
{
	fe = fault_env_new();
	ck_assert_ptr_nonnull(fe);
	fenv = fault_env_env(fe);
	ck_assert_int_eq(fenv->ops->mkdir(fenv, "/db"), 0);
}

static void fault_teardown(void)
{
	fault_env_free(fe);
	fe = NULL;
	fenv = NULL;
}

/* Create path with data, sync it and its directory "/db". */
static void fe_durable_file(const char *path, const char *data)
{
	write_file(fenv, path, data, strlen(data));
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db"), 0);
}

static void fe_expect(const char *path, const char *data)
{
	expect_file(fenv, path, data, strlen(data));
}

START_TEST(test_fault_basic_fs)
{
	struct store_env *env = fenv;
	struct env_wfile *w;
	/* Same POSIX-like surface as the real env. */
	ck_assert_int_eq(env->ops->mkdir(env, "/db"), -EEXIST);
	ck_assert_int_eq(env->ops->mkdir(env, "/nope/sub"), -ENOENT);
	ck_assert_int_eq(env->ops->mkdir(env, "/db/sub"), 0);
	ck_assert_int_eq(env->ops->open_writable(env, "/nope/x", &w), -ENOENT);
	ck_assert_int_eq(env->ops->exists(env, "/db"), 0);
	ck_assert_int_eq(env->ops->exists(env, "/db/x"), -ENOENT);

	write_file(env, "/db/a", "hello", 5);
	write_file(env, "/db//b/", "world", 5); /* normalized to /db/b */
	fe_expect("/db/b", "world");
	char **names;
	size_t n;
	ck_assert_int_eq(env->ops->list_dir(env, "/db", &names, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert(has_name(names, n, "a"));
	ck_assert(has_name(names, n, "b"));
	ck_assert(has_name(names, n, "sub"));
	env_free_names(names, n);
	ck_assert_int_eq(env->ops->list_dir(env, "/db/sub", &names, &n), 0);
	ck_assert_uint_eq(n, 0);
	env_free_names(names, n);

	/* rename over an existing name replaces it */
	ck_assert_int_eq(env->ops->rename(env, "/db/a", "/db/b"), 0);
	ck_assert_int_eq(env->ops->exists(env, "/db/a"), -ENOENT);
	fe_expect("/db/b", "hello");
	ck_assert_int_eq(env->ops->rename(env, "/db/a", "/db/c"), -ENOENT);
	ck_assert_int_eq(env->ops->rename(env, "/db/b", "/db/b"), 0);
	fe_expect("/db/b", "hello");

	/* truncate down and up (zero fill) */
	ck_assert_int_eq(env->ops->truncate(env, "/db/b", 2), 0);
	fe_expect("/db/b", "he");
	ck_assert_int_eq(env->ops->truncate(env, "/db/b", 4), 0);
	expect_file(env, "/db/b", "he\0\0", 4);
	ck_assert_int_eq(env->ops->truncate(env, "/db/zz", 4), -ENOENT);

	/* an open reader keeps an unlinked file's bytes */
	struct env_rfile *r;
	ck_assert_int_eq(env->ops->open_readable(env, "/db/b", &r), 0);
	ck_assert_int_eq(env->ops->unlink(env, "/db/b"), 0);
	ck_assert_int_eq(env->ops->unlink(env, "/db/b"), -ENOENT);
	uint8_t buf[8];
	size_t got;
	ck_assert_int_eq(env->ops->pread(r, buf, sizeof(buf), 0, &got), 0);
	ck_assert_uint_eq(got, 4);
	ck_assert_mem_eq(buf, "he", 2);
	ck_assert_int_eq(env->ops->pread(r, buf, sizeof(buf), 9, &got), 0);
	ck_assert_uint_eq(got, 0);
	env->ops->close_readable(r);

	/* test helpers */
	write_file(env, "/db/c", "abc", 3);
	uint64_t size;
	ck_assert_int_eq(fault_env_file_size(fe, "/db/c", &size), 0);
	ck_assert_uint_eq(size, 3);
	ck_assert_int_eq(fault_env_corrupt(fe, "/db/c", 1, 0x20), 0);
	fe_expect("/db/c", "aBc");
	ck_assert_int_eq(fault_env_corrupt(fe, "/db/c", 3, 1), -EINVAL);
	ck_assert_int_eq(fault_env_corrupt(fe, "/db/none", 0, 1), -ENOENT);

	/* locks */
	struct env_lock *l1, *l2;
	ck_assert_int_eq(env->ops->lock(env, "/db/LOCK", &l1), 0);
	ck_assert_int_eq(env->ops->exists(env, "/db/LOCK"), 0);
	ck_assert_int_eq(env->ops->lock(env, "/db/LOCK", &l2), -EBUSY);
	ck_assert_int_eq(env->ops->lock(env, "/db//LOCK", &l2), -EBUSY);
	env->ops->unlock(l1);
	ck_assert_int_eq(env->ops->lock(env, "/db/LOCK", &l2), 0);
	env->ops->unlock(l2);

	/* env_write_file_atomic works over any env */
	ck_assert_int_eq(env_write_file_atomic(env, "/db", "CURRENT",
					       "MANIFEST-000007\n", 16), 0);
	fe_expect("/db/CURRENT", "MANIFEST-000007\n");
	ck_assert_int_eq(env->ops->exists(env, "/db/CURRENT.tmp"), -ENOENT);
}
END_TEST

START_TEST(test_fault_synced_survives)
{
	struct env_wfile *w;
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/log", &w), 0);
	ck_assert_int_eq(fenv->ops->append(w, "durable", 7), 0);
	ck_assert_int_eq(fenv->ops->sync(w), 0);
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db"), 0);
	/* Flushed but not synced: gone after the cut. */
	ck_assert_int_eq(fenv->ops->append(w, "-lost", 5), 0);
	ck_assert_int_eq(fenv->ops->flush(w), 0);
	fe_expect("/db/log", "durable-lost");

	/* A file named nowhere durable, held only by a handle. */
	struct env_wfile *orphan;
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/orphan", &orphan),
			 0);
	ck_assert_int_eq(fenv->ops->append(orphan, "x", 1), 0);
	ck_assert_int_eq(fenv->ops->sync(orphan), 0);

	fault_env_power_cut(fe);
	fe_expect("/db/log", "durable");
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/orphan"), -ENOENT);
	ck_assert_int_eq(fenv->ops->close_writable(w), -EIO); /* dead handle */
	/* Its last reference: freed here (ASan would report a leak). */
	ck_assert_int_eq(fenv->ops->close_writable(orphan), -EIO);

	/* truncate is durable (env.h: ftruncate + fdatasync). */
	ck_assert_int_eq(fenv->ops->truncate(fenv, "/db/log", 3), 0);
	fe_expect("/db/log", "dur");
	fault_env_power_cut(fe);
	fe_expect("/db/log", "dur");

	/* Truncation by open_writable is not durable before a sync. */
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/log", &w), 0);
	ck_assert_int_eq(fenv->ops->append(w, "new", 3), 0);
	ck_assert_int_eq(fenv->ops->close_writable(w), 0);
	fault_env_power_cut(fe);
	fe_expect("/db/log", "dur");
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/log", &w), 0);
	ck_assert_int_eq(fenv->ops->append(w, "new", 3), 0);
	ck_assert_int_eq(fenv->ops->sync(w), 0);
	ck_assert_int_eq(fenv->ops->close_writable(w), 0);
	fault_env_power_cut(fe);
	fe_expect("/db/log", "new");
}
END_TEST

START_TEST(test_fault_unsynced_dir_entry)
{
	/* The file's bytes are synced but its name never was. */
	write_file(fenv, "/db/new", "data", 4);
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/new"), 0);
	fault_env_power_cut(fe);
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/new"), -ENOENT);

	/* Name synced but bytes not: the file is there, empty. */
	struct env_wfile *w;
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/new", &w), 0);
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db"), 0);
	ck_assert_int_eq(fenv->ops->append(w, "data", 4), 0);
	ck_assert_int_eq(fenv->ops->close_writable(w), 0);
	fault_env_power_cut(fe);
	fe_expect("/db/new", "");

	/* An unlink without sync_dir is undone. */
	fe_durable_file("/db/keep", "kept");
	ck_assert_int_eq(fenv->ops->unlink(fenv, "/db/keep"), 0);
	fault_env_power_cut(fe);
	fe_expect("/db/keep", "kept");
	ck_assert_int_eq(fenv->ops->unlink(fenv, "/db/keep"), 0);
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db"), 0);
	fault_env_power_cut(fe);
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/keep"), -ENOENT);

	/* Directories themselves are durable at mkdir. */
	ck_assert_int_eq(fenv->ops->mkdir(fenv, "/db/sub"), 0);
	fault_env_power_cut(fe);
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/sub"), 0);
}
END_TEST

START_TEST(test_fault_rename)
{
	fe_durable_file("/db/CURRENT", "old");
	write_file(fenv, "/db/CURRENT.tmp", "new", 3);
	ck_assert_int_eq(fenv->ops->rename(fenv, "/db/CURRENT.tmp",
					   "/db/CURRENT"), 0);
	fe_expect("/db/CURRENT", "new");
	/* Not dir-synced: the cut undoes the rename (and the tmp's creation). */
	fault_env_power_cut(fe);
	fe_expect("/db/CURRENT", "old");
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/CURRENT.tmp"), -ENOENT);

	write_file(fenv, "/db/CURRENT.tmp", "new", 3);
	ck_assert_int_eq(fenv->ops->rename(fenv, "/db/CURRENT.tmp",
					   "/db/CURRENT"), 0);
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db"), 0);
	fault_env_power_cut(fe);
	fe_expect("/db/CURRENT", "new");
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/CURRENT.tmp"), -ENOENT);

	/* The atomic helper's result is durable at once. */
	ck_assert_int_eq(env_write_file_atomic(fenv, "/db", "CURRENT", "v3", 2),
			 0);
	fault_env_power_cut(fe);
	fe_expect("/db/CURRENT", "v3");

	/* Renames across directories need both directories synced. */
	ck_assert_int_eq(fenv->ops->mkdir(fenv, "/db/sub"), 0);
	ck_assert_int_eq(fenv->ops->rename(fenv, "/db/CURRENT", "/db/sub/C"),
			 0);
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db/sub"), 0);
	fault_env_power_cut(fe);
	/* Only the target dir was synced: the file now has two names. */
	fe_expect("/db/CURRENT", "v3");
	fe_expect("/db/sub/C", "v3");
}
END_TEST

START_TEST(test_fault_eio_write)
{
	struct env_wfile *w;
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/f", &w), 0);
	uint64_t ops0 = fault_env_ops(fe);
	fault_env_arm(fe, FAULT_EIO_WRITE, 2);
	ck_assert(!fault_env_struck(fe));
	ck_assert_int_eq(fenv->ops->append(w, "a", 1), 0);
	ck_assert_int_eq(fenv->ops->append(w, "b", 1), 0);
	ck_assert(!fault_env_struck(fe));
	ck_assert_int_eq(fenv->ops->append(w, "c", 1), -EIO);
	ck_assert(fault_env_struck(fe));
	ck_assert_int_eq(fenv->ops->flush(w), -EIO);
	ck_assert_int_eq(fenv->ops->append(w, "d", 1), -EIO);
	/* Other ops still work. */
	ck_assert_int_eq(fenv->ops->sync(w), 0);
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/f"), 0);
	ck_assert_uint_eq(fault_env_ops(fe), ops0 + 6);
	fault_env_clear(fe);
	ck_assert(fault_env_struck(fe)); /* stays until the next arm */
	ck_assert_int_eq(fenv->ops->append(w, "e", 1), 0);
	ck_assert_int_eq(fenv->ops->close_writable(w), 0);
	fe_expect("/db/f", "abe");
}
END_TEST

START_TEST(test_fault_enospc)
{
	struct env_wfile *w;
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/f", &w), 0);
	fault_env_arm(fe, FAULT_ENOSPC, 1);
	ck_assert_int_eq(fenv->ops->append(w, "0123", 4), 0);
	ck_assert_int_eq(fenv->ops->append(w, "abcdefghij", 10), -ENOSPC);
	ck_assert(fault_env_struck(fe));
	uint64_t size;
	ck_assert_int_eq(fault_env_file_size(fe, "/db/f", &size), 0);
	ck_assert_uint_eq(size, 9); /* the short write: half landed */
	ck_assert_int_eq(fenv->ops->append(w, "xyz", 3), -ENOSPC);
	ck_assert_int_eq(fault_env_file_size(fe, "/db/f", &size), 0);
	ck_assert_uint_eq(size, 9);
	/* flush and sync have nothing to write: they succeed */
	ck_assert_int_eq(fenv->ops->flush(w), 0);
	ck_assert_int_eq(fenv->ops->sync(w), 0);
	fault_env_clear(fe);
	ck_assert_int_eq(fenv->ops->close_writable(w), 0);
	fe_expect("/db/f", "0123abcde");
}
END_TEST

START_TEST(test_fault_eio_sync)
{
	struct env_wfile *w;
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/f", &w), 0);
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db"), 0);
	fault_env_arm(fe, FAULT_EIO_SYNC, 1);
	ck_assert_int_eq(fenv->ops->append(w, "abc", 3), 0);
	ck_assert(!fault_env_struck(fe));
	ck_assert_int_eq(fenv->ops->sync(w), -EIO);
	ck_assert(fault_env_struck(fe));
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db"), -EIO);
	ck_assert_int_eq(fenv->ops->append(w, "def", 3), 0);
	ck_assert_int_eq(fenv->ops->flush(w), 0);
	ck_assert_int_eq(fenv->ops->close_writable(w), 0);
	fe_expect("/db/f", "abcdef");
	/* A failed sync made nothing durable. */
	fault_env_power_cut(fe);
	fe_expect("/db/f", "");
	/* The cut cleared the fault. */
	write_file(fenv, "/db/f", "ok", 2);
}
END_TEST

START_TEST(test_fault_power_cut_armed)
{
	struct env_wfile *w;
	struct env_rfile *r;
	struct env_lock *lock;
	ck_assert_int_eq(fenv->ops->lock(fenv, "/db/LOCK", &lock), 0);
	fe_durable_file("/db/old", "old");
	ck_assert_int_eq(fenv->ops->open_readable(fenv, "/db/old", &r), 0);
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/log", &w), 0);
	fault_env_arm(fe, FAULT_POWER_CUT, 3);
	ck_assert_int_eq(fenv->ops->append(w, "abc", 3), 0);  /* 1 */
	ck_assert_int_eq(fenv->ops->sync(w), 0);              /* 2 */
	ck_assert_int_eq(fenv->ops->sync_dir(fenv, "/db"), 0); /* 3 */
	ck_assert(!fault_env_struck(fe));
	ck_assert_int_eq(fenv->ops->append(w, "def", 3), -EIO); /* dies */
	ck_assert(fault_env_struck(fe));
	/* Everything fails now, reads included. */
	ck_assert_int_eq(fenv->ops->sync(w), -EIO);
	ck_assert_int_eq(fenv->ops->exists(fenv, "/db/old"), -EIO);
	uint8_t buf[4];
	size_t got;
	ck_assert_int_eq(fenv->ops->pread(r, buf, 3, 0, &got), -EIO);
	ck_assert_int_eq(fenv->ops->unlink(fenv, "/db/old"), -EIO);
	struct env_wfile *w2;
	ck_assert_int_eq(fenv->ops->open_writable(fenv, "/db/x", &w2), -EIO);

	fault_env_power_cut(fe);
	fe_expect("/db/log", "abc");
	fe_expect("/db/old", "old");
	/* Handles of the dead process stay dead. */
	ck_assert_int_eq(fenv->ops->append(w, "x", 1), -EIO);
	ck_assert_int_eq(fenv->ops->flush(w), -EIO);
	ck_assert_int_eq(fenv->ops->sync(w), -EIO);
	ck_assert_int_eq(fenv->ops->pread(r, buf, 3, 0, &got), -EIO);
	/* Its lock died with it: a new process can lock... */
	struct env_lock *lock2, *lock3;
	ck_assert_int_eq(fenv->ops->lock(fenv, "/db/LOCK", &lock2), 0);
	/* ...and the dead lock's release does not free the new one. */
	fenv->ops->unlock(lock);
	ck_assert_int_eq(fenv->ops->lock(fenv, "/db/LOCK", &lock3), -EBUSY);
	fenv->ops->unlock(lock2);
	/* Dead handles can still be closed (leaks would show under ASan). */
	ck_assert_int_eq(fenv->ops->close_writable(w), -EIO);
	fenv->ops->close_readable(r);
}
END_TEST

START_TEST(test_fault_cut_sweep)
{
	/* Every cut point of a small "atomic replace" sequence leaves either
	 * the old or the new content, never anything else. */
	for (uint64_t k = 0;; k++) {
		struct fault_env *f = fault_env_new();
		ck_assert_ptr_nonnull(f);
		struct store_env *env = fault_env_env(f);
		ck_assert_int_eq(env->ops->mkdir(env, "/db"), 0);
		ck_assert_int_eq(env_write_file_atomic(env, "/db", "CURRENT",
						       "old", 3), 0);
		fault_env_arm(f, FAULT_POWER_CUT, k);
		int rc = env_write_file_atomic(env, "/db", "CURRENT", "new", 3);
		bool struck = fault_env_struck(f);
		ck_assert_int_eq(rc, struck ? -EIO : 0);
		fault_env_power_cut(f);
		uint8_t *data;
		size_t len;
		ck_assert_int_eq(env_read_file(env, "/db/CURRENT", &data, &len),
				 0);
		ck_assert_uint_eq(len, 3);
		if (struck)
			ck_assert(!memcmp(data, "old", 3) ||
				  !memcmp(data, "new", 3));
		else
			ck_assert_mem_eq(data, "new", 3);
		free(data);
		fault_env_free(f);
		if (!struck)
			break;
		ck_assert_uint_lt(k, 100);
	}
}
END_TEST

struct writer_arg {
	struct store_env *env;
	int id;
};

static void *writer_thread(void *p)
{
	struct writer_arg *a = p;
	char path[64];
	snprintf(path, sizeof(path), "/db/t%d", a->id);
	struct env_wfile *w;
	if (a->env->ops->open_writable(a->env, path, &w))
		return (void *)1;
	for (int i = 0; i < 2000; i++) {
		uint8_t b = (uint8_t)i;
		if (a->env->ops->append(w, &b, 1))
			return (void *)1;
		if (i % 100 == 0 && (a->env->ops->sync(w) ||
				     a->env->ops->sync_dir(a->env, "/db")))
			return (void *)1;
	}
	return a->env->ops->close_writable(w) ? (void *)1 : NULL;
}

START_TEST(test_fault_threads)
{
	pthread_t t[4];
	struct writer_arg args[4];
	for (int i = 0; i < 4; i++) {
		args[i].env = fenv;
		args[i].id = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer_thread,
						&args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		void *res;
		ck_assert_int_eq(pthread_join(t[i], &res), 0);
		ck_assert_ptr_null(res);
	}
	for (int i = 0; i < 4; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/db/t%d", i);
		uint64_t size;
		ck_assert_int_eq(fault_env_file_size(fe, path, &size), 0);
		ck_assert_uint_eq(size, 2000);
	}
	/* Each file keeps what its last sync covered (after byte i = 1900). */
	fault_env_power_cut(fe);
	uint64_t size;
	ck_assert_int_eq(fault_env_file_size(fe, "/db/t0", &size), 0);
	ck_assert_uint_eq(size, 1901);
}
END_TEST

static Suite *env_suite(void)
{
	Suite *s = suite_create("env");
	TCase *tc = tcase_create("posix");
	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, posix_setup, posix_teardown);
	tcase_add_test(tc, test_posix_append_read);
	tcase_add_test(tc, test_posix_errors);
	tcase_add_test(tc, test_posix_rename_unlink_truncate);
	tcase_add_test(tc, test_posix_list_dir_mkdir);
	tcase_add_test(tc, test_posix_lock);
	tcase_add_test(tc, test_posix_write_atomic);
	suite_add_tcase(s, tc);

	tc = tcase_create("fault");
	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, fault_setup, fault_teardown);
	tcase_add_test(tc, test_fault_basic_fs);
	tcase_add_test(tc, test_fault_synced_survives);
	tcase_add_test(tc, test_fault_unsynced_dir_entry);
	tcase_add_test(tc, test_fault_rename);
	tcase_add_test(tc, test_fault_eio_write);
	tcase_add_test(tc, test_fault_enospc);
	tcase_add_test(tc, test_fault_eio_sync);
	tcase_add_test(tc, test_fault_power_cut_armed);
	tcase_add_test(tc, test_fault_cut_sweep);
	tcase_add_test(tc, test_fault_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(env_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
