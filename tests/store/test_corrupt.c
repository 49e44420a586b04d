/*
 * test_corrupt: damaged files (suite "corrupt").
 *
 * A store is built in a real directory with tables on several levels, a
 * MANIFEST, CURRENT and a commit log holding unflushed writes, and closed.
 * Then, for every file of every kind (.sst, .log, MANIFEST-*, CURRENT) and
 * a set of damages (a byte flipped at the start, middle, end and random
 * places; truncation to 0, half and all but one byte), a copy of the
 * directory is damaged and:
 *
 *   - store_open either succeeds or fails with -EUCLEAN / -EINVAL / -ENOENT
 *     / -EIO and a log line naming the damaged file;
 *   - if it opened, every key is read and everything is scanned: each call
 *     returns 0, -ENOENT or -EUCLEAN (an -EUCLEAN read comes with a log line
 *     and store_errmsg), and never returns a wrong value.  Only damage to
 *     the commit log may lose writes (its torn tail is cut); damage anywhere
 *     else must never make a key vanish or show an older value silently;
 *   - store_verify returns -EUCLEAN naming the file for damage to a table,
 *     to CURRENT and at the start or middle of the MANIFEST or the log; a
 *     damaged last record of the newest log is a torn tail: open succeeds
 *     and reports the cut through options.log, store_verify reports it and
 *     returns 0, and with paranoid_checks open fails with -EUCLEAN.
 *
 * Findings are collected and printed; the test fails at the end if there
 * were any, so one run shows every problem.
 *
 * Environment: LSMFS_SEED, LSMFS_CORRUPT_VERBOSE=1 (print every outcome).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "testutil.h"

#define NKEYS 3000
#define NEW_IN_LOG 100 /* keys first written after the last flush */
#define HIST_MAX 16

/* What each key went through: every op id written, the last wins. */
struct history {
	uint64_t ops[HIST_MAX];
	int n;
	bool only_in_log; /* first written after the last flush */
};

struct ctx {
	uint64_t seed;
	struct tu_rng rng;
	char *src;   /* the pristine store */
	char *work;  /* the damaged copy */
	struct history *hist;
	uint32_t nkeys;
	uint64_t next_op;
	int problems;
	int cases;
	/* the current case */
	char file[256];
	char what[128];
	const char *name; /* the damaged file */
	bool verbose;     /* LSMFS_CORRUPT_VERBOSE=1: print every outcome */
	struct tu_log log;
};

static void problem(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void problem(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "PROBLEM seed=%" PRIu64 " %s, %s: ", c->seed, c->file,
		c->what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	c->problems++;
}

static void opts(struct store_options *o, struct tu_log *log)
{
	store_options_init(o);
	o->write_buffer_size = 32 * 1024;
	o->target_file_size = 32 * 1024;
	o->level_base_bytes = 128 * 1024;
	o->block_size = 1024;
	store_filter_default(&o->filter);
	o->compression = STORE_COMPRESSION_NONE;
	o->block_cache_bytes = 0; /* every read goes to the file */
	if (log) {
		o->log = tu_log_fn;
		o->log_ctx = log;
	}
}

/*
 * The offset where the last record of a file in the commit-log framing
 * (FORMAT.md "Commit log": 32 KiB blocks of fragments, each a 7-byte header
 * checksum le32 | length le16 | type u8, then the payload; a block tail
 * shorter than a header is padding) starts: the last FULL or FIRST
 * fragment.  Read from the pristine file.
 */
static uint64_t last_record_start(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	long flen = ftell(f);
	ck_assert_int_ge(flen, 0);
	uint64_t len = (uint64_t)flen;
	uint8_t *buf = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(buf);
	rewind(f);
	ck_assert_uint_eq(fread(buf, 1, len, f), len);
	fclose(f);
	uint64_t off = 0, last = 0;
	while (off + 7 <= len) {
		uint64_t in_block = 32768 - off % 32768;
		if (in_block < 7) {
			off += in_block;
			continue;
		}
		uint32_t flen16 = (uint32_t)buf[off + 4] | (uint32_t)buf[off + 5] << 8;
		uint8_t type = buf[off + 6];
		if (type == 1 || type == 2) /* FULL, FIRST */
			last = off;
		off += 7 + flen16;
	}
	free(buf);
	return last;
}

static void put_key(struct ctx *c, struct store *st, uint32_t k)
{
	uint8_t key[TU_KEY_MAX], val[400];
	if (c->hist[k].n == HIST_MAX)
		return; /* overwritten often enough already */
	size_t kl = tu_key(key, k);
	uint32_t vlen = (uint32_t)tu_rng_range(&c->rng, 60, 300);
	uint64_t id = c->next_op++;
	tu_val_make(val, id, 0, vlen);
	ck_assert_int_eq(store_put(st, key, kl, val, vlen, 0), 0);
	struct history *h = &c->hist[k];
	h->ops[h->n++] = id;
}

/* Build the pristine store: levels, tables, a log with unflushed writes. */
static void build(struct ctx *c)
{
	struct store_options o;
	opts(&o, NULL);
	struct store *st;
	ck_assert_int_eq(store_open(c->src, &o, &st), 0);
	uint32_t base = NKEYS - NEW_IN_LOG;
	for (uint32_t k = 0; k < base; k++)
		put_key(c, st, k);
	ck_assert_int_eq(store_compact_range(st, NULL, 0, NULL, 0), 0);
	/* Overwrite a third: new tables above the bottom level. */
	for (uint32_t i = 0; i < base / 3; i++)
		put_key(c, st, (uint32_t)tu_rng_below(&c->rng, base));
	ck_assert_int_eq(store_flush(st), 0);
	/* A few more in level 0. */
	for (uint32_t i = 0; i < 150; i++)
		put_key(c, st, (uint32_t)tu_rng_below(&c->rng, base));
	ck_assert_int_eq(store_flush(st), 0);
	/* Unflushed: overwrites and new keys, only in the commit log.  A large
	 * write buffer for this part keeps them all in one log. */
	ck_assert_int_eq(store_close(st), 0);
	o.write_buffer_size = 4u << 20;
	ck_assert_int_eq(store_open(c->src, &o, &st), 0);
	for (uint32_t i = 0; i < 100; i++)
		put_key(c, st, (uint32_t)tu_rng_below(&c->rng, base));
	for (uint32_t k = base; k < NKEYS; k++) {
		c->hist[k].only_in_log = true;
		put_key(c, st, k);
	}
	struct store_stats s;
	store_get_stats(st, &s);
	int levels = 0;
	fprintf(stderr, "corrupt: tables per level:");
	for (int l = 0; l < STORE_MAX_LEVELS; l++) {
		fprintf(stderr, " %" PRIu64, s.level_files[l]);
		levels += s.level_files[l] > 0;
	}
	fprintf(stderr, "\n");
	ck_assert_msg(levels >= 2, "the store should have tables on 2+ levels");
	ck_assert_int_eq(store_close(st), 0);
}

enum kind { K_SST, K_LOG, K_MANIFEST, K_CURRENT, K_OTHER };

static enum kind kind_of(const char *name)
{
	size_t n = strlen(name);
	if (n > 4 && strcmp(name + n - 4, ".sst") == 0)
		return K_SST;
	if (n > 4 && strcmp(name + n - 4, ".log") == 0)
		return K_LOG;
	if (strncmp(name, "MANIFEST-", 9) == 0)
		return K_MANIFEST;
	if (strcmp(name, "CURRENT") == 0)
		return K_CURRENT;
	return K_OTHER;
}

struct damage {
	bool truncate;
	uint64_t pos;   /* flip: offset; truncate: new length */
	uint8_t mask;
	const char *label;
};

static void apply_damage(struct ctx *c, const char *name, const struct damage *d)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", c->work, name);
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	if (d->truncate) {
		ck_assert_int_eq(ftruncate(fd, (off_t)d->pos), 0);
	} else {
		uint8_t b;
		ck_assert_int_eq(pread(fd, &b, 1, (off_t)d->pos), 1);
		b ^= d->mask;
		ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)d->pos), 1);
	}
	close(fd);
}

static void fresh_copy(struct ctx *c)
{
	tu_rmrf(c->work);
	ck_assert_int_eq(tu_copy_dir(c->src, c->work), 0);
}

static bool rc_ok_read(int rc)
{
	return rc == 0 || rc == -ENOENT || rc == -EUCLEAN;
}

/*
 * How much loss a damage may legitimately cause when the store opens:
 * LOSS_NONE: none (a table, CURRENT, the MANIFEST's body: the store must
 * report -EUCLEAN, never answer with less);
 * LOSS_LOG: the cut tail of the commit log: writes only in the log may be
 * gone (older values, or absent for keys first written there);
 * LOSS_ANY: a cut MANIFEST tail looks like a crash during a MANIFEST write,
 * so the store may fall back to the previous version: older values or
 * absent keys are possible, garbage is not.
 */
enum loss { LOSS_NONE, LOSS_LOG, LOSS_ANY };

/* Is (rc, value) an acceptable answer for key k? */
static void check_answer(struct ctx *c, uint32_t k, int rc, const void *v,
			 size_t vl, enum loss lossy, const char *how)
{
	const struct history *h = &c->hist[k];
	if (!rc_ok_read(rc)) {
		problem(c, "%s key #%u: rc %d", how, k, rc);
		return;
	}
	if (rc == -EUCLEAN)
		return;
	if (rc == -ENOENT) {
		if (!(lossy == LOSS_ANY || (lossy == LOSS_LOG && h->only_in_log)))
			problem(c, "%s key #%u: -ENOENT, the key must be there "
				"(silent data loss)", how, k);
		return;
	}
	uint64_t op;
	uint32_t sub;
	if (!tu_val_decode(v, vl, &op, &sub)) {
		problem(c, "%s key #%u: garbage value (%zu bytes)", how, k, vl);
		return;
	}
	if (op == h->ops[h->n - 1])
		return;
	for (int i = 0; i < h->n - 1; i++) {
		if (op == h->ops[i]) {
			if (!lossy)
				problem(c, "%s key #%u: an older value (op %" PRIu64
					", latest %" PRIu64 "), silently", how, k, op,
					h->ops[h->n - 1]);
			return;
		}
	}
	problem(c, "%s key #%u: a value (op %" PRIu64 ") never written to it",
		how, k, op);
}

/* Map a scanned key back to its index: a table of (hash, index) sorted by
 * hash, searched by bisection. */
struct keyhash {
	uint64_t hash;
	uint32_t idx;
};

struct keyidx {
	struct keyhash *v;
	uint32_t n;
};

static int keyhash_cmp(const void *a, const void *b)
{
	const struct keyhash *x = a, *y = b;
	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static long find_key(const struct keyidx *ki, const void *key, size_t len)
{
	uint64_t h = tu_hash(key, len);
	size_t lo = 0, hi = ki->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ki->v[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ki->n && ki->v[lo].hash == h; lo++) {
		uint8_t buf[TU_KEY_MAX];
		size_t l = tu_key(buf, ki->v[lo].idx);
		if (tu_keycmp(buf, l, key, len) == 0)
			return (long)ki->v[lo].idx;
	}
	return -1;
}

static void check_eclean_logged(struct ctx *c, struct store *st, const char *how)
{
	char msg[512];
	store_errmsg(st, msg, sizeof(msg));
	if (!msg[0])
		problem(c, "%s: -EUCLEAN but store_errmsg is empty", how);
	if (tu_log_count(&c->log) == 0)
		problem(c, "%s: -EUCLEAN but nothing went to options.log", how);
	else if (!tu_log_contains(&c->log, c->name))
		problem(c, "%s: -EUCLEAN but no options.log line names %s", how,
			c->name);
}

static void read_everything(struct ctx *c, struct store *st, enum loss lossy,
			    const struct keyidx *ki)
{
	bool eclean = false;
	for (uint32_t k = 0; k < c->nkeys; k++) {
		uint8_t key[TU_KEY_MAX];
		size_t kl = tu_key(key, k);
		void *v = NULL;
		size_t vl = 0;
		int rc = store_get(st, NULL, key, kl, &v, &vl);
		check_answer(c, k, rc, v, vl, lossy, "get");
		if (rc == 0)
			free(v);
		if (rc == -EUCLEAN && !eclean) {
			eclean = true;
			check_eclean_logged(c, st, "get");
		}
	}
	/* Scan forward, then backward; each checks its own reports. */
	for (int dir = 0; dir < 2; dir++) {
		tu_log_clear(&c->log);
		struct store_iter *it;
		int rc = store_iter_new(st, NULL, &it);
		if (rc) {
			if (rc != -EUCLEAN && rc != -EIO)
				problem(c, "store_iter_new: %d", rc);
			continue;
		}
		size_t seen = 0;
		if (dir == 0)
			store_iter_seek_first(it);
		else
			store_iter_seek_last(it);
		while (store_iter_valid(it)) {
			size_t kl, vl;
			const void *kp = store_iter_key(it, &kl);
			const void *vp = store_iter_value(it, &vl);
			long k = find_key(ki, kp, kl);
			if (k < 0) {
				char kb[256];
				problem(c, "scan: a key never written: %s",
					tu_fmtkey(kb, sizeof(kb), kp, kl));
			} else {
				check_answer(c, (uint32_t)k, 0, vp, vl, lossy, "scan");
			}
			seen++;
			if (dir == 0)
				store_iter_next(it);
			else
				store_iter_prev(it);
		}
		rc = store_iter_status(it);
		if (!rc_ok_read(rc) || rc == -ENOENT)
			problem(c, "scan: status %d", rc);
		if (rc == 0 && lossy == LOSS_NONE && seen != c->nkeys)
			problem(c, "scan %s: %zu keys, want %u, status 0 (silent "
				"data loss)", dir ? "backward" : "forward", seen,
				c->nkeys);
		if (rc == -EUCLEAN)
			check_eclean_logged(c, st, "scan");
		store_iter_free(it);
	}
}

static void one_case(struct ctx *c, const char *name, enum kind kind,
		     uint64_t len, uint64_t last_start, const struct damage *d,
		     bool newest_log, const struct keyidx *ki)
{
	c->cases++;
	c->name = name;
	snprintf(c->file, sizeof(c->file), "%s (%" PRIu64 " bytes)", name, len);
	if (d->truncate)
		snprintf(c->what, sizeof(c->what), "truncated to %" PRIu64 " (%s)",
			 d->pos, d->label);
	else
		snprintf(c->what, sizeof(c->what), "byte %" PRIu64 " ^= 0x%02x (%s)",
			 d->pos, d->mask, d->label);
	/* Damage to the last record of the newest log is a torn tail. */
	enum { TAIL_NO, TAIL_YES } tail = TAIL_NO;
	bool torn = false; /* something of the last record was cut or damaged */
	if (kind == K_LOG && newest_log) {
		if (d->truncate) {
			tail = TAIL_YES; /* a cut anywhere is a torn tail */
			torn = d->pos > last_start;
		} else if (d->pos >= last_start) {
			tail = TAIL_YES;
			torn = true;
		}
	}
	/* The MANIFEST's last record may be treated the same way (a crash
	 * while writing an edit); damage before it must be found. */
	bool manifest_tail = kind == K_MANIFEST &&
		(d->truncate ? d->pos > 0 : d->pos >= last_start);
	bool tail_of_newest_log = tail == TAIL_YES;
	bool must_detect; /* verify must return -EUCLEAN */
	switch (kind) {
	case K_SST:
		must_detect = true;
		break;
	case K_CURRENT:
		/* Dropping or changing the final newline may be tolerated. */
		must_detect = d->pos < len - 1;
		break;
	case K_MANIFEST:
		must_detect = !manifest_tail;
		break;
	case K_LOG:
		must_detect = tail == TAIL_NO;
		break;
	default:
		must_detect = false;
	}
	enum loss lossy = LOSS_NONE;
	if (kind == K_LOG)
		lossy = LOSS_LOG;
	else if (kind == K_MANIFEST && !must_detect)
		lossy = LOSS_ANY;

	/* store_verify. */
	fresh_copy(c);
	apply_damage(c, name, d);
	struct store_options o;
	struct tu_log vlog;
	tu_log_init(&vlog, false);
	opts(&o, NULL);
	int vrc = store_verify(c->work, &o, tu_log_fn, &vlog);
	if (must_detect) {
		if (vrc == 0)
			problem(c, "store_verify returned 0");
		else if (vrc != -EUCLEAN && !(kind == K_CURRENT &&
			 (vrc == -ENOENT || vrc == -EINVAL)))
			problem(c, "store_verify returned %d, want -EUCLEAN", vrc);
		bool named = tu_log_contains(&vlog, name) ||
			(kind == K_CURRENT && tu_log_contains(&vlog, "MANIFEST"));
		if (vrc && !named)
			problem(c, "store_verify's report does not name %s", name);
	} else if (tail_of_newest_log) {
		if (vrc != 0)
			problem(c, "store_verify returned %d for a torn tail of the "
				"newest log, want 0 (reported)", vrc);
		if (torn && !tu_log_contains(&vlog, name))
			problem(c, "store_verify did not report the torn tail");
	} else if (vrc != 0 && vrc != -EUCLEAN) {
		problem(c, "store_verify returned %d", vrc);
	}
	tu_log_free(&vlog);

	/* store_open on the same damaged copy (verify wrote nothing). */
	tu_log_clear(&c->log);
	opts(&o, &c->log);
	struct store *st = NULL;
	int orc = store_open(c->work, &o, &st);
	if (orc) {
		if (orc != -EUCLEAN && orc != -EINVAL && orc != -ENOENT && orc != -EIO)
			problem(c, "store_open returned %d", orc);
		bool named = tu_log_contains(&c->log, name) ||
			(kind == K_CURRENT && tu_log_contains(&c->log, "MANIFEST"));
		if (!named) {
			problem(c, "store_open failed (%d) without a log line naming "
				"%s", orc, name);
			tu_log_dump(&c->log, "    log: ");
		}
		if (tail_of_newest_log)
			problem(c, "store_open failed (%d) on a torn tail of the "
				"newest log", orc);
	} else {
		if (kind == K_LOG && must_detect)
			problem(c, "store_open accepted a damaged commit-log record "
				"that valid records follow (FORMAT.md \"Recovery\": "
				"-EUCLEAN)");
		if (torn && !tu_log_contains(&c->log, name))
			problem(c, "store_open cut a torn tail without reporting it "
				"through options.log");
		read_everything(c, st, lossy, ki);
		int crc = store_close(st);
		if (crc != 0 && crc != -EUCLEAN && crc != -EIO)
			problem(c, "store_close returned %d", crc);
	}

	if (c->verbose)
		fprintf(stderr, "  %s, %s: verify %d, open %d%s\n", c->file, c->what,
			vrc, orc, tail == TAIL_YES || manifest_tail ? " (tail)" : "");

	/* A torn tail with paranoid_checks is an error. */
	if (torn) {
		fresh_copy(c);
		apply_damage(c, name, d);
		tu_log_clear(&c->log);
		opts(&o, &c->log);
		o.paranoid_checks = true;
		orc = store_open(c->work, &o, &st);
		if (orc == 0) {
			problem(c, "paranoid store_open accepted a torn tail");
			store_close(st);
		} else if (orc != -EUCLEAN) {
			problem(c, "paranoid store_open returned %d, want -EUCLEAN", orc);
		}
	}
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

START_TEST(test_corrupt)
{
	struct ctx *c = calloc(1, sizeof(*c));
	ck_assert_ptr_nonnull(c);
	c->seed = tu_seed("corrupt");
	tu_rng_init(&c->rng, c->seed);
	c->verbose = tu_env_u64("LSMFS_CORRUPT_VERBOSE", 0) != 0;
	c->nkeys = NKEYS;
	c->hist = calloc(NKEYS, sizeof(*c->hist));
	ck_assert_ptr_nonnull(c->hist);
	c->src = tu_mkdtemp("corrupt");
	char *workparent = tu_mkdtemp("corrupt-work");
	size_t wl = strlen(workparent) + 8;
	c->work = malloc(wl);
	ck_assert_ptr_nonnull(c->work);
	snprintf(c->work, wl, "%s/db", workparent);
	tu_log_init(&c->log, false);
	uint64_t t0 = tu_now_ms();
	build(c);

	struct keyidx ki;
	ki.n = NKEYS;
	ki.v = calloc(NKEYS, sizeof(*ki.v));
	ck_assert_ptr_nonnull(ki.v);
	for (uint32_t k = 0; k < NKEYS; k++) {
		uint8_t buf[TU_KEY_MAX];
		size_t l = tu_key(buf, k);
		ki.v[k].hash = tu_hash(buf, l);
		ki.v[k].idx = k;
	}
	qsort(ki.v, NKEYS, sizeof(*ki.v), keyhash_cmp);

	/* The pristine copy is whole. */
	snprintf(c->file, sizeof(c->file), "(none)");
	snprintf(c->what, sizeof(c->what), "undamaged");
	struct store_options o;
	opts(&o, NULL);
	struct tu_log vlog;
	tu_log_init(&vlog, false);
	int vrc = store_verify(c->src, &o, tu_log_fn, &vlog);
	if (vrc)
		tu_log_dump(&vlog, "  verify: ");
	ck_assert_int_eq(vrc, 0);
	tu_log_free(&vlog);

	/* The files, sorted; the newest log has the highest number. */
	DIR *dir = opendir(c->src);
	ck_assert_ptr_nonnull(dir);
	char *names[512];
	size_t nnames = 0;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL && nnames < 512) {
		if (kind_of(de->d_name) != K_OTHER)
			names[nnames++] = strdup(de->d_name);
	}
	closedir(dir);
	qsort(names, nnames, sizeof(names[0]), name_cmp);
	const char *newest_log = NULL;
	int counts[5] = { 0 };
	for (size_t i = 0; i < nnames; i++) {
		counts[kind_of(names[i])]++;
		if (kind_of(names[i]) == K_LOG)
			newest_log = names[i];
	}
	fprintf(stderr, "corrupt: %d tables, %d logs, %d manifests, %d CURRENT\n",
		counts[K_SST], counts[K_LOG], counts[K_MANIFEST], counts[K_CURRENT]);
	ck_assert_int_ge(counts[K_SST], 3);
	ck_assert_int_ge(counts[K_LOG], 1);
	ck_assert_int_eq(counts[K_MANIFEST], 1);
	ck_assert_int_eq(counts[K_CURRENT], 1);

	for (size_t i = 0; i < nnames; i++) {
		const char *name = names[i];
		enum kind kind = kind_of(name);
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", c->src, name);
		struct stat sb;
		ck_assert_int_eq(stat(path, &sb), 0);
		uint64_t len = (uint64_t)sb.st_size;
		if (len == 0)
			continue;
		struct damage ds[16];
		int nd = 0;
		ds[nd++] = (struct damage){ false, 0, 0x01, "start" };
		ds[nd++] = (struct damage){ false, len / 2, 0x80, "middle" };
		ds[nd++] = (struct damage){ false, len - 1, 0x10, "end" };
		/* Tables are many: fewer random spots each. */
		int nrand = kind == K_SST ? 2 : 4;
		for (int r = 0; r < nrand; r++)
			ds[nd++] = (struct damage){ false, tu_rng_below(&c->rng, len),
				(uint8_t)(1u << tu_rng_below(&c->rng, 8)), "random" };
		ds[nd++] = (struct damage){ true, 0, 0, "empty" };
		ds[nd++] = (struct damage){ true, len / 2, 0, "half" };
		ds[nd++] = (struct damage){ true, len - 1, 0, "all but one byte" };
		uint64_t last_start = 0;
		if (kind == K_LOG || kind == K_MANIFEST) {
			last_start = last_record_start(path);
			ds[nd++] = (struct damage){ false, tu_rng_range(&c->rng,
				last_start, len - 1), 0x04, "in the last record" };
			if (last_start > 0)
				ds[nd++] = (struct damage){ false, last_start - 1, 0x04,
					"just before the last record" };
			ds[nd++] = (struct damage){ true, tu_rng_range(&c->rng,
				last_start + 1, len - 1), 0, "torn last record" };
		}
		bool newest = newest_log && strcmp(name, newest_log) == 0;
		for (int j = 0; j < nd; j++)
			one_case(c, name, kind, len, last_start, &ds[j], newest, &ki);
	}
	fprintf(stderr, "corrupt: %d cases in %.1f s, %d problems\n", c->cases,
		(double)(tu_now_ms() - t0) / 1000.0, c->problems);

	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(ki.v);
	tu_log_free(&c->log);
	/* The pristine store depends on background timing as well as the
	 * seed: keep it when a case failed. */
	if (c->problems)
		fprintf(stderr, "corrupt: the pristine store is kept at %s\n", c->src);
	else
		tu_rmrf(c->src);
	tu_rmrf(workparent);
	free(workparent);
	free(c->src);
	free(c->work);
	free(c->hist);
	uint64_t seed = c->seed;
	int problems = c->problems;
	free(c);
	ck_assert_msg(problems == 0, "seed=%" PRIu64 ": %d problems (see above)",
		      seed, problems);
}
END_TEST

static Suite *corrupt_suite(void)
{
	Suite *s = suite_create("corrupt");
	TCase *tc = tcase_create("corrupt");
	tcase_set_timeout(tc, 1200);
	tcase_add_test(tc, test_corrupt);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(corrupt_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
