/*
 * fuzz_store: a whole store directory as the store opens it (store/db.c,
 * version.c, version_edit.c, wal.c, batch.c, sst_*.c; FORMAT.md
 * "Directory", "MANIFEST", "Recovery"), and as the offline tools read it
 * (store_verify, store_dump, store_list_tables).
 *
 * The input is a list of chunks, each `u8 kind | u8 number | le16 length |
 * bytes`:
 *   kind % 4 == 0  one record of MANIFEST-<m>, framed by the real
 *                  commit-log writer (m: the number of the first such chunk);
 *   kind % 4 == 1  one record of <number>.log, framed likewise;
 *   kind % 4 == 2  raw bytes appended to <number>.sst;
 *   kind % 4 == 3  raw bytes put after the MANIFEST's records (unframed
 *                  damage, a torn tail).
 * CURRENT names the MANIFEST.  Framing the records here keeps the commit
 * log's checksums right, so that the fuzzer reaches the version edits and
 * write batches behind them (fuzz_wal covers the framing itself).
 *
 * Promises checked: store_open, read-only, answers 0 or a negative errno
 * and never crashes, leaks or hangs; an -EUCLEAN is reported through
 * options.log; an opened store iterates both ways with a status of 0 or
 * -EUCLEAN; the tools give 0 or an errno.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coding.h"
#include "env.h"
#include "fuzz_util.h"
#include "store.h"
#include "wal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 8

struct file {
	int kind; /* 0 MANIFEST, 1 log, 2 table */
	unsigned number;
	struct wal_writer *w; /* framed files */
	FILE *raw;            /* tables */
};

struct files {
	struct file f[MAX_FILES];
	int n;
	unsigned manifest;
	bool have_manifest;
	struct buf tail; /* kind 3: after the MANIFEST's records */
};

static struct file *file_of(struct files *fs, int kind, unsigned number)
{
	for (int i = 0; i < fs->n; i++)
		if (fs->f[i].kind == kind && fs->f[i].number == number)
			return &fs->f[i];
	if (fs->n == MAX_FILES)
		return NULL;
	struct file *f = &fs->f[fs->n++];
	f->kind = kind;
	f->number = number;
	f->w = NULL;
	f->raw = NULL;
	char path[PATH_MAX];
	if (kind == 0)
		snprintf(path, sizeof(path), "%s/MANIFEST-%06u", fuzz_dir(), number);
	else if (kind == 1)
		snprintf(path, sizeof(path), "%s/%06u.log", fuzz_dir(), number);
	else
		snprintf(path, sizeof(path), "%s/%06u.sst", fuzz_dir(), number);
	if (kind == 2) {
		f->raw = fopen(path, "wb");
		fuzz_check(f->raw != NULL, "fopen %s", path);
	} else {
		int rc = wal_writer_open(store_env_posix(), path, &f->w);
		fuzz_check(rc == 0, "wal_writer_open %s: %d", path, rc);
	}
	return f;
}

static void close_files(struct files *fs)
{
	for (int i = 0; i < fs->n; i++) {
		if (fs->f[i].w)
			fuzz_check(wal_writer_close(fs->f[i].w) == 0, "wal_writer_close");
		if (fs->f[i].raw)
			fclose(fs->f[i].raw);
	}
}

static void build(const uint8_t *data, size_t size)
{
	struct files fs = {0};
	buf_init(&fs.tail);
	const uint8_t *p = data, *end = data + size;
	while (end - p >= 4) {
		int kind = p[0] % 4;
		unsigned number = p[1];
		size_t len = (size_t)p[2] | (size_t)p[3] << 8;
		p += 4;
		if (len > (size_t)(end - p))
			len = (size_t)(end - p);
		if ((kind == 0 || kind == 3) && !fs.have_manifest) {
			fs.manifest = number;
			fs.have_manifest = true;
		}
		struct file *f = file_of(&fs, kind == 3 ? 0 : kind,
					 kind == 3 || kind == 0 ? fs.manifest : number);
		if (f) {
			if (kind == 3) {
				buf_append(&fs.tail, p, len);
			} else if (kind == 2) {
				fwrite(p, 1, len, f->raw);
			} else {
				fuzz_check(wal_add_record(f->w, p, len) == 0, "wal_add_record");
			}
		}
		p += len;
	}
	close_files(&fs);
	if (fs.tail.len) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/MANIFEST-%06u", fuzz_dir(), fs.manifest);
		FILE *o = fopen(path, "ab");
		fuzz_check(o != NULL, "fopen %s", path);
		fwrite(fs.tail.data, 1, fs.tail.len, o);
		fclose(o);
	}
	buf_free(&fs.tail);
	char cur[64];
	int n = snprintf(cur, sizeof(cur), "MANIFEST-%06u\n", fs.have_manifest ? fs.manifest : 1);
	char path[PATH_MAX];
	fuzz_write_file("CURRENT", cur, (size_t)n, path);
}

struct log_seen {
	int lines;
};

static void on_log(void *ctx, const char *msg)
{
	struct log_seen *l = ctx;
	fuzz_check(msg && msg[0], "an empty log line");
	l->lines++;
}

static void on_report(void *ctx, const char *line)
{
	on_log(ctx, line);
}

static unsigned touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	unsigned s = 0;
	for (size_t i = 0; i < n; i++)
		s += b[i];
	return s;
}

static void read_store(struct store *st)
{
	struct store_iter *it;
	struct store_iter_options io = {0};
	int rc = store_iter_new(st, &io, &it);
	fuzz_check(rc == 0, "store_iter_new: %d", rc);
	unsigned sum = 0;
	int steps = 0;
	for (store_iter_seek_first(it); store_iter_valid(it) && steps < 100000;
	     store_iter_next(it), steps++) {
		size_t kl, vl;
		const void *k = store_iter_key(it, &kl);
		const void *v = store_iter_value(it, &vl);
		sum += touch(k, kl) + touch(v, vl);
		if (steps < 16) {
			void *val;
			size_t len;
			rc = store_get(st, NULL, k, kl, &val, &len);
			fuzz_check(rc == 0 || rc == -ENOENT || rc == -EUCLEAN, "store_get: %d", rc);
			if (rc == 0)
				free(val);
		}
	}
	rc = store_iter_status(it);
	fuzz_check(rc == 0 || rc == -EUCLEAN, "forward iteration: %d", rc);
	steps = 0;
	for (store_iter_seek_last(it); store_iter_valid(it) && steps < 100000;
	     store_iter_prev(it), steps++) {
		size_t kl;
		sum += touch(store_iter_key(it, &kl), kl);
	}
	rc = store_iter_status(it);
	fuzz_check(rc == 0 || rc == -EUCLEAN, "backward iteration: %d", rc);
	store_iter_free(it);
	(void)sum;
}

static bool errno_like(int rc)
{
	return rc <= 0 && rc > -4096;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	fuzz_dir_clear();
	build(data, size);
	const char *dir = fuzz_dir();

	struct log_seen seen = {0};
	struct store_options opt;
	store_options_init(&opt);
	opt.read_only = true;
	opt.create_if_missing = false;
	opt.paranoid_checks = size % 2; /* both ways of taking a torn tail */
	opt.log = on_log;
	opt.log_ctx = &seen;
	struct store *st;
	int rc = store_open(dir, &opt, &st);
	fuzz_check(errno_like(rc), "store_open: %d", rc);
	fuzz_check(rc != -EUCLEAN || seen.lines > 0, "store_open: -EUCLEAN unreported");
	if (rc == 0) {
		read_store(st);
		rc = store_close(st);
		fuzz_check(errno_like(rc), "store_close: %d", rc);
	}

	opt.paranoid_checks = false;
	rc = store_verify(dir, &opt, on_report, &seen);
	fuzz_check(errno_like(rc), "store_verify: %d", rc);
	rc = store_dump(dir, &opt, "manifest", on_report, &seen);
	fuzz_check(errno_like(rc), "store_dump manifest: %d", rc);
	rc = store_dump(dir, &opt, "logs", on_report, &seen);
	fuzz_check(errno_like(rc), "store_dump logs: %d", rc);
	struct store_table_info *tables;
	size_t n;
	struct store_totals totals;
	rc = store_list_tables(dir, &opt, &tables, &n, &totals);
	fuzz_check(errno_like(rc), "store_list_tables: %d", rc);
	if (rc == 0)
		store_tables_free(tables, n);
	return 0;
}
