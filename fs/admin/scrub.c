/*
 * scrub.c: the online scrub (SCHEMA.md "Scrub"; `lsmfs-disk scrub`, as
 * `btrfs scrub`): a thread of the daemon that walks every chunk record in
 * key order (inode, then chunk) and scrubs each one (chunk_scrub: every
 * copy read from its disk and checked against its sums, a bad block
 * rewritten from a good copy, a stale or damaged copy rebuilt), no faster
 * than a rate when one is asked for, keeping its progress in `M scrub`.
 *
 * The walk takes SCRUB_BATCH keys at a time with an iterator it frees
 * before it scrubs them: no iterator, nor the snapshot it pins, is held
 * across the scrub's I/O or its sleeps.  The position is the key after the
 * last chunk done; with the counts it is stored every SCRUB_SAVE_MS (not
 * synced) and at the end (synced).  A cancel, an unmount (interrupted) or
 * a remount read-only stops the thread after the chunk under way, and a
 * resume goes on from the position saved, keeping the counts; after a
 * crash it goes on from the last save, so the chunks scrubbed since are
 * scrubbed (and counted) again.  The files with errors left are named
 * (ipath_find, a scan of the directory entries) at each save and status:
 * the record keeps the first SCRUB_NAMED_BYTES of their paths, the log
 * every one at the end.
 *
 * The rate: bytes read (every copy) per second since the run began; the
 * thread sleeps between chunks, holding nothing, until the bytes read are
 * due.  Cancel and unmount wake it.
 *
 * Locking: s->lock guards the progress (rec, the files, stop); s->op
 * makes start, cancel and the stop at unmount one at a time (they join
 * the thread).  fs->scrub is made by the first request (under
 * fs->ctl.lock) and freed by scrub_stop at fs_close.  A section move, a
 * disk added or dropped may run beside a scrub: chunk_scrub works inside
 * the chunk's section gates, as a write does, so a move copies the chunk
 * again after it, and a record marked lost meanwhile is left alone.
 */
#include "engine.h"
#include "admin.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SCRUB_BATCH 1024           /* chunk keys per iterator */
#define SCRUB_SAVE_MS 5000         /* progress stored this often */
#define SCRUB_NAMED_BYTES 65536    /* of paths in the record */
#define SCRUB_FILES_MAX 65536      /* files with errors left kept in memory */
#define SCRUB_FAILS_MAX 16         /* chunks failing in a row: the scrub stops */

struct scrub {
	pthread_mutex_t op;         /* start, cancel, stop: one at a time */
	pthread_mutex_t lock;       /* the rest */
	pthread_cond_t cv;          /* (monotonic) the thread's sleeps */
	pthread_t thread;
	bool joinable;              /* started and not joined yet (op) */
	bool running;               /* the thread scrubs */
	bool stop;                  /* asked to stop, as stop_as */
	uint8_t stop_as;
	bool have;                  /* rec is this mount's; else the store's */
	struct scrub_record rec;    /* the progress (rec.named unused) */
	uint64_t *bad;              /* files with errors left, as found */
	char **bad_path;            /* their paths once named, or NULL */
	size_t nbad, capbad;
	uint64_t run_start;         /* monotonic ms: this run began */
	uint64_t run_bytes;         /* read in this run */
	uint64_t elapsed_before;    /* ms of the runs before */
	bool save_failed;           /* said once in the log */
};

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static uint64_t wall_now(void)
{
	return (uint64_t)time(NULL);
}

/* fs->scrub, made at the first request; NULL without memory. */
static struct scrub *scrub_of(struct fs *fs)
{
	pthread_mutex_lock(&fs->ctl.lock);
	struct scrub *s = fs->scrub;
	if (!s && (s = calloc(1, sizeof(*s)))) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->cv, &ca);
		pthread_condattr_destroy(&ca);
		pthread_mutex_init(&s->op, NULL);
		pthread_mutex_init(&s->lock, NULL);
		fs->scrub = s;
	}
	pthread_mutex_unlock(&fs->ctl.lock);
	return s;
}

static void forget_files(struct scrub *s)
{
	for (size_t i = 0; i < s->nbad; i++)
		free(s->bad_path[i]);
	free(s->bad);
	free(s->bad_path);
	s->bad = NULL;
	s->bad_path = NULL;
	s->nbad = s->capbad = 0;
}

/* A file with errors left (lock): listed once, the first SCRUB_FILES_MAX
 * of them; path (may be NULL) is taken. */
static void add_file(struct scrub *s, uint64_t ino, char *path)
{
	for (size_t i = s->nbad; i-- > 0;)
		if (s->bad[i] == ino) {
			free(path);
			return;
		}
	s->rec.files++;
	if (s->nbad == s->capbad && s->nbad < SCRUB_FILES_MAX) {
		size_t nc = s->capbad ? s->capbad * 2 : 16;
		uint64_t *b = realloc(s->bad, nc * sizeof(*b));
		if (b)
			s->bad = b;
		char **p = b ? realloc(s->bad_path, nc * sizeof(*p)) : NULL;
		if (p)
			s->bad_path = p;
		if (b && p)
			s->capbad = nc;
	}
	if (s->nbad == s->capbad) {
		free(path); /* counted, not listed */
		return;
	}
	s->bad[s->nbad] = ino;
	s->bad_path[s->nbad++] = path;
}

/* Name the files with errors left that have no path yet (a scan of the
 * directory entries, with the lock let go). */
static void name_files(struct fs *fs, struct scrub *s)
{
	pthread_mutex_lock(&s->lock);
	size_t n = 0;
	uint64_t *inos = NULL;
	for (size_t i = 0; i < s->nbad; i++)
		n += !s->bad_path[i];
	if (n && (inos = malloc(n * sizeof(*inos)))) {
		n = 0;
		for (size_t i = 0; i < s->nbad; i++)
			if (!s->bad_path[i])
				inos[n++] = s->bad[i];
	}
	pthread_mutex_unlock(&s->lock);
	if (!inos)
		return;
	char **paths = calloc(n, sizeof(*paths));
	int rc = paths ? ipath_find(fs, inos, n, paths) : -ENOMEM;
	if (rc)
		fs_logf(fs, "scrub: naming the files with errors left: %s (named later)", strerror(-rc));
	pthread_mutex_lock(&s->lock);
	for (size_t j = 0, i = 0; !rc && j < n; j++) {
		while (i < s->nbad && s->bad[i] != inos[j])
			i++;
		if (i < s->nbad && !s->bad_path[i]) {
			s->bad_path[i] = paths[j];
			paths[j] = NULL;
		}
	}
	pthread_mutex_unlock(&s->lock);
	for (size_t j = 0; paths && j < n; j++)
		free(paths[j]);
	free(paths);
	free(inos);
}

/* A copy of the progress (lock), its files named as far as they are, the
 * first SCRUB_NAMED_BYTES of their paths: free with scrub_record_free. */
static void snapshot(struct scrub *s, struct scrub_record *r)
{
	*r = s->rec;
	r->named = NULL;
	r->nnamed = 0;
	if (s->running)
		r->elapsed_ms = s->elapsed_before + (now_ms() - s->run_start);
	size_t named = 0, bytes = 0;
	for (size_t i = 0; i < s->nbad; i++)
		if (s->bad_path[i] && (bytes += strlen(s->bad_path[i])) <= SCRUB_NAMED_BYTES)
			named++;
	r->named = named ? calloc(named, sizeof(*r->named)) : NULL;
	for (size_t i = 0; r->named && r->nnamed < named && i < s->nbad; i++) {
		if (!s->bad_path[i])
			continue;
		char *p = strdup(s->bad_path[i]);
		if (!p)
			break;
		r->named[r->nnamed++] = (struct scrub_file){.ino = s->bad[i], .path = p};
	}
}

/* Store the progress: 0 or -errno (logged once). */
static int save(struct fs *fs, struct scrub *s, bool sync)
{
	name_files(fs, s);
	struct scrub_record r;
	pthread_mutex_lock(&s->lock);
	s->rec.updated = wall_now();
	snapshot(s, &r);
	pthread_mutex_unlock(&s->lock);
	uint8_t *v, k[KEY_MAX];
	size_t vl;
	int rc = scrub_record_encode(&r, &v, &vl);
	scrub_record_free(&r);
	if (!rc) {
		rc = store_put(fs->st, k, key_meta(k, META_SCRUB), v, vl, sync ? STORE_WRITE_SYNC : 0);
		free(v);
	}
	pthread_mutex_lock(&s->lock);
	bool said = s->save_failed;
	s->save_failed = rc != 0;
	pthread_mutex_unlock(&s->lock);
	if (rc && !said)
		fs_logf(fs, "scrub: storing its progress (" "M " META_SCRUB "): %s (tried again every %d s)",
			strerror(-rc), SCRUB_SAVE_MS / 1000);
	return rc;
}

/* Why the thread should stop now (SCRUB_NONE: it goes on). */
static uint8_t stopping(struct fs *fs, struct scrub *s)
{
	pthread_mutex_lock(&s->lock);
	uint8_t why = s->stop ? s->stop_as : SCRUB_NONE;
	pthread_mutex_unlock(&s->lock);
	if (!why && !fs_writable(fs))
		why = SCRUB_INTERRUPTED;
	return why;
}

/* An estimate of the work, into rec: every chunk record, and the bytes of
 * its copies that hold data (its durable length each, or as far as its
 * sums reach). */
static void count_total(struct fs *fs, struct scrub *s)
{
	struct store_iter *it;
	uint64_t chunks = 0, bytes = 0;
	int rc = chunk_records_from(fs, 0, 0, &it);
	if (rc)
		return;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		(void)store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		struct chunk_value cv;
		if (kl != 17)
			continue;
		if (!(++chunks % 65536) && stopping(fs, s))
			break;
		if (chunk_value_parse(v, vl, &cv) || (cv.flags & CHUNK_LOST))
			continue;
		/* In write, the sums reach past the durable length. */
		uint64_t len = cv.durable, summed = (uint64_t)cv.nsums << cv.shift;
		if (summed > len)
			len = summed < fs->info.chunk_size ? summed : fs->info.chunk_size;
		bytes += len * (uint64_t)(cv.copies - __builtin_popcount(cv.stale));
	}
	store_iter_free(it);
	pthread_mutex_lock(&s->lock);
	s->rec.total_chunks = chunks;
	s->rec.total_bytes = bytes;
	pthread_mutex_unlock(&s->lock);
}

/* Up to SCRUB_BATCH chunk keys from (ino, chunk) on, into keys (ino,
 * chunk pairs), *n of them: 0 or -errno. */
static int next_batch(struct fs *fs, uint64_t ino, uint64_t chunk, uint64_t (*keys)[2], size_t *n)
{
	struct store_iter *it;
	*n = 0;
	int rc = chunk_records_from(fs, ino, chunk, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it) && *n < SCRUB_BATCH; store_iter_next(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);
		if (kl != 17)
			continue; /* fsck's to report */
		keys[*n][0] = get_be64(k + 1);
		keys[*n][1] = get_be64(k + 9);
		(*n)++;
	}
	rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

/* A chunk done: its counts, the position after it, its file if it has
 * errors left. */
static void account(struct scrub *s, uint64_t ino, uint64_t chunk, const struct scrub_count *c,
		    bool unrepaired)
{
	pthread_mutex_lock(&s->lock);
	struct scrub_count *t = &s->rec.count;
	t->chunks += c->chunks;
	t->bytes += c->bytes;
	t->errors += c->errors;
	t->repaired += c->repaired;
	t->unrepaired += c->unrepaired;
	t->rebuilt += c->rebuilt;
	t->unrebuilt += c->unrebuilt;
	t->skipped += c->skipped;
	s->run_bytes += c->bytes;
	s->rec.ino = chunk == UINT64_MAX ? ino + 1 : ino;
	s->rec.chunk = chunk == UINT64_MAX ? 0 : chunk + 1;
	if (unrepaired)
		add_file(s, ino, NULL);
	pthread_mutex_unlock(&s->lock);
}

/* Sleep until the bytes read in this run are due at the rate, or a stop. */
static void pace(struct scrub *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->rec.rate) {
		uint64_t due = s->run_start + (uint64_t)((double)s->run_bytes * 1000.0 /
							 (double)s->rec.rate);
		while (!s->stop && now_ms() < due) {
			struct timespec t = {.tv_sec = (time_t)(due / 1000),
					     .tv_nsec = (long)(due % 1000) * 1000000};
			pthread_cond_timedwait(&s->cv, &s->lock, &t);
		}
	}
	pthread_mutex_unlock(&s->lock);
}

/* The log's account of a run that ended. */
static void log_end(struct fs *fs, struct scrub *s)
{
	pthread_mutex_lock(&s->lock);
	struct scrub_record r = s->rec;
	size_t n = s->nbad;
	char **paths = n ? calloc(n, sizeof(*paths)) : NULL;
	for (size_t i = 0; paths && i < n; i++)
		paths[i] = s->bad_path[i] ? strdup(s->bad_path[i]) : NULL;
	uint64_t *inos = n ? malloc(n * sizeof(*inos)) : NULL;
	if (inos)
		memcpy(inos, s->bad, n * sizeof(*inos));
	pthread_mutex_unlock(&s->lock);
	const struct scrub_count *c = &r.count;
	double secs = (double)r.elapsed_ms / 1000.0;
	char why[160] = "";
	if (r.state == SCRUB_FAILED)
		snprintf(why, sizeof(why), " by an error (%s)", strerror((int)r.error));
	else if (r.state != SCRUB_FINISHED)
		snprintf(why, sizeof(why), " at inode %" PRIu64 " chunk %" PRIu64 " (lsmfs-disk scrub "
			 "resume goes on from there)", r.ino, r.chunk);
	fs_logf(fs, "scrub %s%s: %" PRIu64 " chunks scrubbed, %" PRIu64 " skipped, %" PRIu64
		" bytes read in %.1f s (%.1f MiB/s): %" PRIu64 " errors found, %" PRIu64 " repaired, %"
		PRIu64 " left; %" PRIu64 " copies rebuilt, %" PRIu64 " not", scrub_state_names[r.state],
		why, c->chunks, c->skipped, c->bytes, secs,
		secs > 0 ? (double)c->bytes / secs / 1048576.0 : 0.0, c->errors, c->repaired,
		c->unrepaired, c->rebuilt, c->unrebuilt);
	for (size_t i = 0; i < n; i++) {
		char ino[40];
		snprintf(ino, sizeof(ino), "inode %" PRIu64, inos ? inos[i] : 0);
		fs_logf(fs, "scrub: errors left in %s (bytes no copy holds good, or a copy that could "
			"not be made whole: the lines above say which)",
			paths && paths[i] ? paths[i] : ino);
	}
	if (r.files > n)
		fs_logf(fs, "scrub: errors left in %" PRIu64 " more files (their chunks are named "
			"above)", (uint64_t)(r.files - n));
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
	free(inos);
}

static void *scrub_main(void *arg)
{
	struct fs *fs = arg;
	struct scrub *s = fs->scrub;
	uint8_t end = SCRUB_FINISHED;
	int err = 0, fails = 0;
	count_total(fs, s);
	pthread_mutex_lock(&s->lock);
	uint64_t ino = s->rec.ino, chunk = s->rec.chunk;
	pthread_mutex_unlock(&s->lock);
	uint64_t saved = now_ms();
	uint64_t (*keys)[2] = malloc(SCRUB_BATCH * sizeof(*keys));
	if (!keys) {
		end = SCRUB_FAILED;
		err = ENOMEM;
	}
	while (keys && end == SCRUB_FINISHED) {
		size_t n;
		int rc = next_batch(fs, ino, chunk, keys, &n);
		if (rc) {
			fs_logf(fs, "scrub: reading the chunk records from inode %" PRIu64 " chunk %"
				PRIu64 ": %s", ino, chunk, strerror(-rc));
			end = SCRUB_FAILED;
			err = -rc;
		}
		if (rc || !n)
			break;
		for (size_t i = 0; i < n && end == SCRUB_FINISHED; i++) {
			uint8_t why = stopping(fs, s);
			if (why) {
				end = why;
				break;
			}
			struct scrub_count c = {0};
			bool unrepaired = false;
			rc = chunk_scrub(fs, keys[i][0], keys[i][1], &c, &unrepaired);
			if (rc == -EROFS) {
				end = SCRUB_INTERRUPTED; /* the chunk is done again at resume */
				break;
			}
			if (rc) {
				fs_logf(fs, "scrub: inode %" PRIu64 " chunk %" PRIu64 ": %s (counted skipped)",
					keys[i][0], keys[i][1], strerror(-rc));
				if (!c.chunks && !c.skipped)
					c.skipped = 1;
				if (++fails == SCRUB_FAILS_MAX) {
					end = SCRUB_FAILED;
					err = -rc;
				}
			} else {
				fails = 0;
			}
			account(s, keys[i][0], keys[i][1], &c, unrepaired);
			pace(s);
			if (now_ms() - saved >= SCRUB_SAVE_MS) {
				(void)save(fs, s, false); /* logged; tried again */
				saved = now_ms();
			}
		}
		ino = keys[n - 1][0];
		chunk = keys[n - 1][1] + 1;
		if (!chunk)
			ino++;
	}
	free(keys);
	pthread_mutex_lock(&s->lock);
	s->rec.state = end;
	s->rec.error = (uint32_t)err;
	s->rec.elapsed_ms = s->elapsed_before + (now_ms() - s->run_start);
	s->running = false;
	pthread_mutex_unlock(&s->lock);
	/* Read-only now: nothing more is written; the record says running,
	 * which a status shows as interrupted. */
	if (fs_writable(fs))
		(void)save(fs, s, true); /* logged */
	else
		name_files(fs, s);
	log_end(fs, s);
	return NULL;
}

/* Join a thread that ended on its own (op held). */
static void reap(struct scrub *s)
{
	if (s->joinable) {
		pthread_join(s->thread, NULL);
		s->joinable = false;
	}
}

int scrub_start(struct fs *fs, bool resume, bool rate_given, uint64_t rate, char *err,
		size_t errlen)
{
	if (!fs_writable(fs))
		return fs_set_err(err, errlen, -EROFS, "the filesystem is read-only: a scrub repairs, "
				  "so it runs only on a read-write mount");
	struct scrub *s = scrub_of(fs);
	if (!s)
		return fs_set_err(err, errlen, -ENOMEM, "out of memory");
	pthread_mutex_lock(&s->op);
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	bool running = s->running;
	struct scrub_record was = s->rec;
	pthread_mutex_unlock(&s->lock);
	if (running) {
		rc = fs_set_err(err, errlen, -EBUSY, "a scrub is running (at inode %" PRIu64 " chunk %"
				PRIu64 "): lsmfs-disk scrub status shows it, scrub cancel stops it",
				was.ino, was.chunk);
		goto out;
	}
	reap(s);
	struct scrub_record r = {0};
	if (resume) {
		if (s->have) {
			pthread_mutex_lock(&s->lock);
			snapshot(s, &r);
			pthread_mutex_unlock(&s->lock);
		} else if ((rc = scrub_record_get(fs->st, &r)) < 0) {
			rc = fs_set_err(err, errlen, rc, "reading the last scrub's record (M " META_SCRUB
					"): %s", strerror(-rc));
			goto out;
		}
		if (r.state == SCRUB_NONE || r.state == SCRUB_FINISHED) {
			rc = fs_set_err(err, errlen, -ENOENT, r.state == SCRUB_NONE
					? "no scrub to resume: scrub start begins one"
					: "the last scrub finished: nothing to resume (scrub start "
					  "begins a new one)");
			scrub_record_free(&r);
			goto out;
		}
		if (!rate_given)
			rate = r.rate;
	} else {
		r.started = wall_now();
	}
	/* The run's state, and its record stored before the thread starts. */
	pthread_mutex_lock(&s->lock);
	forget_files(s);
	s->rec = r;
	s->rec.named = NULL;
	s->rec.nnamed = 0;
	s->rec.files = 0;
	for (size_t i = 0; i < r.nnamed; i++) {
		add_file(s, r.named[i].ino, r.named[i].path); /* takes the path */
		r.named[i].path = NULL;
	}
	if (r.files > s->rec.files)
		s->rec.files = r.files; /* those the record could not name */
	scrub_record_free(&r);
	s->rec.state = SCRUB_RUNNING;
	s->rec.error = 0;
	s->rec.rate = rate;
	s->have = true;
	s->stop = false;
	s->running = true;
	s->run_start = now_ms();
	s->run_bytes = 0;
	s->elapsed_before = s->rec.elapsed_ms;
	pthread_mutex_unlock(&s->lock);
	rc = save(fs, s, true);
	if (!rc && (rc = -pthread_create(&s->thread, NULL, scrub_main, fs)) == 0)
		s->joinable = true;
	if (rc) {
		pthread_mutex_lock(&s->lock);
		s->running = false;
		s->rec.state = SCRUB_FAILED;
		s->rec.error = (uint32_t)-rc;
		pthread_mutex_unlock(&s->lock);
		rc = fs_set_err(err, errlen, rc, "starting the scrub: %s", strerror(-rc));
		goto out;
	}
	char limit[64] = "no rate limit";
	if (rate)
		snprintf(limit, sizeof(limit), "at most %" PRIu64 " bytes/s", rate);
	if (resume)
		fs_logf(fs, "scrub resumed at inode %" PRIu64 " chunk %" PRIu64 " (%s)", s->rec.ino,
			s->rec.chunk, limit);
	else
		fs_logf(fs, "scrub started (%s)", limit);
out:
	pthread_mutex_unlock(&s->op);
	return rc;
}

int scrub_cancel(struct fs *fs, char *err, size_t errlen)
{
	struct scrub *s = scrub_of(fs);
	if (!s)
		return fs_set_err(err, errlen, -ENOMEM, "out of memory");
	pthread_mutex_lock(&s->op);
	pthread_mutex_lock(&s->lock);
	bool running = s->running;
	if (running) {
		s->stop = true;
		s->stop_as = SCRUB_CANCELLED;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->lock);
	reap(s); /* it stops after the chunk under way, saved */
	pthread_mutex_unlock(&s->op);
	return running ? 0 : fs_set_err(err, errlen, -ENOENT, "no scrub is running");
}

void scrub_stop(struct fs *fs)
{
	struct scrub *s = fs->scrub;
	if (!s)
		return;
	pthread_mutex_lock(&s->op);
	pthread_mutex_lock(&s->lock);
	if (s->running) {
		s->stop = true;
		s->stop_as = SCRUB_INTERRUPTED;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->lock);
	reap(s);
	pthread_mutex_unlock(&s->op);
	forget_files(s);
	pthread_mutex_destroy(&s->op);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_lock(&fs->ctl.lock);
	fs->scrub = NULL;
	pthread_mutex_unlock(&fs->ctl.lock);
	free(s);
}

static void put_count(struct json_out *o, const char *name, uint64_t v)
{
	json_put(o, ",\"%s\":%" PRIu64, name, v);
}

int scrub_status(struct fs *fs, int (*out)(void *ctx, const char *line), void *ctx, char *err,
		 size_t errlen)
{
	pthread_mutex_lock(&fs->ctl.lock);
	struct scrub *s = fs->scrub;
	pthread_mutex_unlock(&fs->ctl.lock);
	struct scrub_record r;
	bool here = false;
	if (s) {
		name_files(fs, s);
		pthread_mutex_lock(&s->lock);
		if ((here = s->have))
			snapshot(s, &r);
		pthread_mutex_unlock(&s->lock);
	}
	if (!here) {
		int rc = scrub_record_get(fs->st, &r);
		if (rc < 0)
			return fs_set_err(err, errlen, rc, "reading the last scrub's record (M " META_SCRUB
					  "): %s", strerror(-rc));
		if (r.state == SCRUB_RUNNING)
			r.state = SCRUB_INTERRUPTED; /* by a crash: no thread here runs it */
	}
	const struct scrub_count *c = &r.count;
	double secs = (double)r.elapsed_ms / 1000.0;
	struct json_out o = {0};
	json_put(&o, "{\"version\":1,\"state\":\"%s\",\"started\":%" PRIu64 ",\"ended\":",
		 scrub_state_names[r.state], r.started);
	if (r.state == SCRUB_RUNNING || r.state == SCRUB_NONE)
		json_put(&o, "null");
	else
		json_put(&o, "%" PRIu64, r.updated);
	json_put(&o, ",\"position\":{\"ino\":%" PRIu64 ",\"chunk\":%" PRIu64 "}", r.ino, r.chunk);
	put_count(&o, "chunks", c->chunks);
	put_count(&o, "bytes", c->bytes);
	put_count(&o, "errors", c->errors);
	put_count(&o, "repaired", c->repaired);
	put_count(&o, "unrepaired", c->unrepaired);
	put_count(&o, "rebuilt", c->rebuilt);
	put_count(&o, "unrebuilt", c->unrebuilt);
	put_count(&o, "skipped", c->skipped);
	put_count(&o, "total_chunks", r.total_chunks);
	put_count(&o, "total_bytes", r.total_bytes);
	put_count(&o, "rate", r.rate);
	json_put(&o, ",\"elapsed\":%.3f,\"bytes_per_second\":%" PRIu64 ",\"error\":", secs,
		 secs > 0 ? (uint64_t)((double)c->bytes / secs) : 0);
	if (r.state == SCRUB_FAILED)
		json_put_str(&o, strerror((int)r.error));
	else
		json_put(&o, "null");
	json_put(&o, ",\"unrepaired_files\":[");
	for (size_t i = 0; i < r.nnamed; i++) {
		json_put(&o, "%s", i ? "," : "");
		json_put_str(&o, r.named[i].path);
	}
	json_put(&o, "],\"unrepaired_files_more\":%" PRIu64 "}",
		 (uint64_t)(r.files > r.nnamed ? r.files - r.nnamed : 0));
	scrub_record_free(&r);
	int rc = o.err ? o.err : out(ctx, o.buf);
	free(o.buf);
	return rc;
}
