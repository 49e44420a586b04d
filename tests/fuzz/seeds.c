/*
 * fuzz_seeds: the seed corpora of the harnesses, made at test time from
 * files the real code writes (nothing binary is committed).
 *
 *   fuzz_seeds OUTDIR MKFS
 *
 * 1. A filesystem: MKFS (mkfs.lsmfs) over two disk directories, then the
 *    filesystem opened without a mount (fs_open, as the daemon does),
 *    given a directory, files inline and in chunks, a symlink and an
 *    xattr, and closed (its store flushed, its stats.json written).
 * 2. A plain store with small blocks: keys flushed to a table (LZ4 and
 *    Bloom filter on), a second table uncompressed, more keys and
 *    deletions left in the commit log.
 * Then each file is cut into what each harness reads, into OUTDIR/<name>/:
 *   wal: every commit log and MANIFEST; sst: every table; block: every
 *   uncompressed block payload of every table; bloom: every filter with
 *   the table's user keys; version_edit: every MANIFEST record; batch:
 *   every commit-log record; store: each store directory as fuzz_store's
 *   chunks; super: every superblock; schema: every key and value of the
 *   metadata store; stats: stats.json and the stats xattr's JSON.
 * Exit 0, or 1 with a line naming what failed.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "block.h"
#include "coding.h"
#include "dbformat.h"
#include "fs.h"
#include "engine.h"
#include "schema.h"
#include "filter.h"
#include "sst.h"
#include "store.h"
#include "wal.h"

#define PROG "fuzz_seeds"

static const char *outdir;
static int nseeds;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void seed(const char *harness, const void *data, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", outdir, harness);
	if (mkdir(path, 0755) && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s/seed-%04d", outdir, harness, nseeds++);
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f))
		die("writing %s: %s", path, strerror(errno));
}

static int read_file(const char *path, uint8_t **data, size_t *len)
{
	return env_read_file(store_env_posix(), path, data, len);
}

/* ---- per-file cutting ---- */

static void store_chunk(struct buf *b, int kind, uint64_t number, const uint8_t *p, size_t n)
{
	while (true) {
		size_t part = n > 65535 ? 65535 : n;
		uint8_t h[4] = {(uint8_t)kind, (uint8_t)number, (uint8_t)part, (uint8_t)(part >> 8)};
		buf_append(b, h, 4);
		buf_append(b, p, part);
		p += part;
		n -= part;
		if (!n)
			break;
	}
}

/* Every record of a log-framed file: to harness `each`, and as chunks. */
static void cut_log(const char *path, const char *each, struct buf *chunks, int kind,
		    uint64_t number)
{
	struct wal_reader *r;
	if (wal_reader_open(store_env_posix(), path, &r))
		die("%s: cannot open", path);
	const uint8_t *rec;
	size_t len;
	int rc;
	while ((rc = wal_read_record(r, &rec, &len)) == 1) {
		seed(each, rec, len);
		store_chunk(chunks, kind, number, rec, len);
	}
	if (rc)
		die("%s: %s", path, wal_reader_error(r)->msg);
	wal_reader_close(r);
}

static void cut_table(const char *path, uint8_t *d, size_t n)
{
	if (n < SST_FOOTER_SIZE)
		die("%s: too short for a table", path);
	const uint8_t *f = d + n - SST_FOOTER_SIZE, *limit = f + 40;
	struct block_handle filter, index;
	const uint8_t *p = block_handle_decode(f, limit, &filter);
	if (!p || !block_handle_decode(p, limit, &index))
		die("%s: bad footer", path);
	struct block b;
	if (d[index.offset + index.size] != BLOCK_TYPE_NONE ||
	    block_init(&b, d + index.offset, (size_t)index.size))
		die("%s: index block", path);
	seed("block", d + index.offset, (size_t)index.size);

	/* Format 2: the filter block is a descriptor; seed its first part. */
	struct filter_desc fd;
	if (filter.size && get_le32(f + 40) >= 2 &&
	    !filter_desc_decode(d + filter.offset, (size_t)filter.size, filter.offset, &fd) &&
	    fd.nparts)
		filter = fd.parts[0];
	struct buf bloom;
	buf_init(&bloom);
	if (filter.size) {
		uint8_t h[3] = {(uint8_t)filter.size, (uint8_t)(filter.size >> 8), 10};
		buf_append(&bloom, h, 3);
		buf_append(&bloom, d + filter.offset, (size_t)filter.size);
	}
	struct block_iter ii;
	block_iter_init(&ii, ikey_compare);
	block_iter_reset(&ii, &b);
	for (block_iter_seek_first(&ii); block_iter_valid(&ii); block_iter_next(&ii)) {
		struct block_handle h;
		if (!block_handle_decode(ii.val, ii.val + ii.vlen, &h))
			die("%s: index entry", path);
		if (d[h.offset + h.size] != BLOCK_TYPE_NONE)
			continue; /* LZ4: the table seed has it */
		seed("block", d + h.offset, (size_t)h.size);
		struct block db;
		if (block_init(&db, d + h.offset, (size_t)h.size))
			die("%s: data block at %llu", path, (unsigned long long)h.offset);
		struct block_iter di;
		block_iter_init(&di, ikey_compare);
		block_iter_reset(&di, &db);
		for (block_iter_seek_first(&di); block_iter_valid(&di); block_iter_next(&di)) {
			if (di.klen >= 8 && bloom.len) {
				buf_append(&bloom, di.key, di.klen - 8);
				buf_put_u8(&bloom, 0xff);
			}
		}
		block_iter_release(&di);
	}
	block_iter_release(&ii);
	if (bloom.len)
		seed("bloom", bloom.data, bloom.len);
	buf_free(&bloom);
}

/* Every file of a store directory. */
static void cut_store(const char *dir)
{
	char **names;
	size_t n;
	if (store_env_posix()->ops->list_dir(store_env_posix(), dir, &names, &n))
		die("%s: cannot list", dir);
	struct buf chunks;
	buf_init(&chunks);
	/* The MANIFEST first: fuzz_store names CURRENT after the first. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			unsigned long long num = 0;
			bool manifest = sscanf(names[i], "MANIFEST-%llu", &num) == 1;
			if (pass == 0 && manifest) {
				uint8_t *d;
				size_t len;
				if (read_file(path, &d, &len))
					die("%s: cannot read", path);
				seed("wal", d, len);
				free(d);
				cut_log(path, "version_edit", &chunks, 0, num);
			} else if (pass == 1 && !manifest && strstr(names[i], ".log") &&
				   sscanf(names[i], "%llu", &num) == 1) {
				uint8_t *d;
				size_t len;
				if (read_file(path, &d, &len))
					die("%s: cannot read", path);
				seed("wal", d, len);
				free(d);
				cut_log(path, "batch", &chunks, 1, num);
			} else if (pass == 1 && strstr(names[i], ".sst") &&
				   sscanf(names[i], "%llu", &num) == 1) {
				uint8_t *d;
				size_t len;
				if (read_file(path, &d, &len))
					die("%s: cannot read", path);
				seed("sst", d, len);
				cut_table(path, d, len);
				store_chunk(&chunks, 2, num, d, len);
				free(d);
			}
		}
	}
	env_free_names(names, n);
	if (buf_ok(&chunks))
		die("out of memory");
	seed("store", chunks.data, chunks.len);
	buf_free(&chunks);
}

/* ---- the filesystem ---- */

static void run_mkfs(const char *mkfs, const char *d0, const char *d1)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		execl(mkfs, mkfs, "-q", "-L", "fuzzseed", "--sections", "8", "--chunk-size", "4096",
		      "--inline-max", "256", d0, d1, (char *)NULL);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		die("%s %s %s: failed", mkfs, d0, d1);
}

static void make_fs(const char *root, const char *mkfs)
{
	char d0[PATH_MAX], d1[PATH_MAX], spec[2 * PATH_MAX + 2], err[1024];
	snprintf(d0, sizeof(d0), "%s/d0", root);
	snprintf(d1, sizeof(d1), "%s/d1", root);
	if (mkdir(d0, 0755) || mkdir(d1, 0755))
		die("mkdir under %s: %s", root, strerror(errno));
	run_mkfs(mkfs, d0, d1);
	for (int i = 0; i < 2; i++) {
		char p[PATH_MAX + 32];
		snprintf(p, sizeof(p), "%s/" LSMFS_DIR "/" LSMFS_SUPER_FILE, i ? d1 : d0);
		uint8_t *d;
		size_t len;
		if (read_file(p, &d, &len))
			die("%s: cannot read", p);
		seed("super", d, len);
		free(d);
	}

	snprintf(spec, sizeof(spec), "%s:%s", d0, d1);
	struct lsmfs_diskset *ds;
	if (diskset_open(spec, DISKSET_LOCK, &ds, err, sizeof(err)))
		die("%s", err);
	struct fs_options fo = {.attr_timeout = 1, .entry_timeout = 1, .cache_bytes = 1 << 20};
	struct fs *fs;
	if (fs_open(ds, &fo, NULL, NULL, &fs, err, sizeof(err)))
		die("fs_open: %s", err);
	struct stat st;
	int rc = fs_mknod(fs, LSMFS_ROOT_INO, "dir", S_IFDIR | 0755, 0, 0, 0, 022, NULL, &st);
	uint64_t dir = st.st_ino;
	if (!rc)
		rc = fs_mknod(fs, dir, "small", S_IFREG | 0644, 0, 1000, 1000, 022, NULL, &st);
	uint64_t small = st.st_ino;
	if (!rc) /* fs_write answers the bytes written */
		rc = fs_write(fs, small, "inline data", 11, 0, NULL, false) == 11 ? 0 : -EIO;
	if (!rc)
		rc = fs_mknod(fs, LSMFS_ROOT_INO, "big", S_IFREG | 0600, 0, 0, 0, 022, NULL, &st);
	uint64_t big = st.st_ino;
	static char blob[3 * 4096 + 100];
	memset(blob, 'b', sizeof(blob));
	if (!rc)
		rc = fs_write(fs, big, blob, sizeof(blob), 0, NULL, false) == (int)sizeof(blob) ? 0 : -EIO;
	if (!rc)
		rc = fs_mknod(fs, dir, "link", S_IFLNK | 0777, 0, 0, 0, 0, "../big", &st);
	if (!rc)
		rc = fs_setxattr(fs, big, "user.seed", "value", 5, 0, NULL);
	if (!rc)
		rc = fs_fsync(fs, big, false);
	if (rc)
		die("building the filesystem: %s", strerror(-rc));
	char *json;
	size_t jlen;
	if (stats_json(fs, &json, &jlen) == 0) {
		seed("stats", json, jlen);
		free(json);
	}

	/* Every key and value, as fuzz_schema reads them. */
	struct store_iter *it;
	struct store_iter_options io = {0};
	if (store_iter_new(fs->st, &io, &it))
		die("store_iter_new");
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		struct buf b;
		buf_init(&b);
		buf_put_u8(&b, (uint8_t)(kl > 255 ? 255 : kl));
		buf_append(&b, k, kl > 255 ? 255 : kl);
		buf_append(&b, v, vl);
		seed("schema", b.data, b.len);
		buf_free(&b);
	}
	store_iter_free(it);
	if ((rc = fs_close(fs)))
		die("fs_close: %s", strerror(-rc));
	char meta[sizeof(ds->meta_dir)];
	snprintf(meta, sizeof(meta), "%s", ds->meta_dir);
	diskset_close(ds);

	char p[sizeof(meta) + 32];
	snprintf(p, sizeof(p), "%s/" FS_STATS_FILE, meta);
	uint8_t *d;
	size_t len;
	if (read_file(p, &d, &len))
		die("%s: not written", p);
	seed("stats", d, len);
	free(d);
	cut_store(meta);
}

/* ---- the plain store ---- */

static void make_store(const char *root)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/store", root);
	struct store_options opt;
	store_options_init(&opt);
	opt.block_size = 256;
	opt.block_restart_interval = 4;
	opt.write_buffer_size = 1 << 20;
	struct store *st;
	int rc = store_open(dir, &opt, &st);
	if (rc)
		die("store_open %s: %s", dir, strerror(-rc));
	char k[32], v[64];
	for (int i = 0; i < 120 && !rc; i++) {
		snprintf(k, sizeof(k), "key%05d", i * 7);
		snprintf(v, sizeof(v), "value %d value %d value", i, i);
		rc = store_put(st, k, strlen(k), v, strlen(v), 0);
	}
	if (!rc)
		rc = store_flush(st);
	store_close(st);
	/* A second table, uncompressed, so blocks can be cut from it. */
	opt.compression = STORE_COMPRESSION_NONE;
	if (!rc)
		rc = store_open(dir, &opt, &st);
	for (int i = 0; i < 60 && !rc; i++) {
		snprintf(k, sizeof(k), "key%05d", i * 11);
		snprintf(v, sizeof(v), "v%d", i);
		rc = store_put(st, k, strlen(k), v, strlen(v), 0);
	}
	if (!rc)
		rc = store_flush(st);
	/* Left in the commit log. */
	for (int i = 0; i < 20 && !rc; i++) {
		snprintf(k, sizeof(k), "key%05d", i * 3);
		rc = i % 3 ? store_put(st, k, strlen(k), "late", 4, 0)
			   : store_delete(st, k, strlen(k), 0);
	}
	if (rc)
		die("filling %s: %s", dir, strerror(-rc));
	struct store_batch *b = store_batch_new();
	store_batch_put(b, "batch-a", 7, "1", 1);
	store_batch_delete(b, "batch-b", 7);
	store_batch_put(b, "", 0, "", 0);
	rc = store_write(st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	if (rc)
		die("store_write: %s", strerror(-rc));
	if ((rc = store_close(st)))
		die("store_close: %s", strerror(-rc));
	cut_store(dir);
}

static void remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st))
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
			remove_tree(p);
		}
		if (d)
			closedir(d);
		(void)rmdir(path); /* best effort: a temp dir */
	} else {
		(void)unlink(path);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: " PROG " OUTDIR MKFS\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) && errno != EEXIST)
		die("mkdir %s: %s", outdir, strerror(errno));
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/.work", outdir);
	remove_tree(root);
	if (mkdir(root, 0755))
		die("mkdir %s: %s", root, strerror(errno));
	make_fs(root, argv[2]);
	make_store(root);
	remove_tree(root);
	printf(PROG ": %d seeds in %s\n", nseeds, outdir);
	return 0;
}
