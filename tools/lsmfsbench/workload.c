/*
 * workload.c: the writers of one run, and its clock.
 *
 * The run writes W->size bytes in W->files files, each written from its
 * start to its end in W->bs blocks with pwrite.  File i lives in
 * T->dirs[i % T->ndirs]: the mount point for lsmfs and mergerfs, the disks
 * round-robin for raw.  W->jobs threads share the files: with at least as
 * many files as jobs, job j writes files j, j + jobs, ... one after the
 * other; with more jobs than files, each file is cut into
 * ceil(jobs / files) contiguous parts and the parts are dealt out the same
 * way, so every job still writes one sequential stream at a time.
 *
 * The fsync policy applies per stream: at its end, or after every N writes
 * or N bytes.  Each fsync is timed.  Blocks are random bytes, so no
 * filesystem's per-block compression shrinks them; they repeat from block
 * to block but for the offset stamped in each 512-byte sector, so a
 * deduplicating one could.
 *
 * The clock: the first write starts it, the last job's last fsync and
 * close stop it (close matters: with the writeback cache a FUSE close
 * writes back the file's dirty pages).  The caller's thread samples the
 * bytes written every second for the timeline and the progress line.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct stream {
	int file;
	uint64_t off, len;
};

struct shared {
	const struct workload *w;
	const struct target *t;
	atomic_uint_fast64_t bytes;
	atomic_int stop;
	atomic_int done;
};

struct job {
	struct shared *sh;
	pthread_t thread;
	struct stream *streams;
	int nstreams;
	uint64_t *lat; /* fsync latencies, ns */
	size_t nlat, cap;
	double end; /* when its last close returned */
	int err; /* negative errno of its first failure */
	char what[PATH_MAX + 64];
};

static void file_path(const struct target *t, int file, char *buf, size_t len)
{
	snprintf(buf, len, "%s/f%05d", t->dirs[file % t->ndirs], file);
}

static int timed_fsync(struct job *j, int fd)
{
	double a = bench_now();
	if (fsync(fd))
		return -errno;
	if (j->nlat == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 256;
		uint64_t *g = realloc(j->lat, cap * sizeof(*g));
		if (!g)
			return -ENOMEM;
		j->lat = g;
		j->cap = cap;
	}
	j->lat[j->nlat++] = (uint64_t)((bench_now() - a) * 1e9);
	return 0;
}

static int write_stream(struct job *j, const struct stream *s, uint8_t *buf, char *path)
{
	const struct workload *w = j->sh->w;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(j->what, sizeof(j->what), "open %s", path);
		return -errno;
	}
	uint64_t nwrites = 0, since = 0;
	int rc = 0;
	for (uint64_t off = s->off; off < s->off + s->len; off += w->bs) {
		if (bench_interrupted || atomic_load(&j->sh->stop)) {
			rc = -EINTR;
			break;
		}
		size_t n = (size_t)(s->off + s->len - off < w->bs ? s->off + s->len - off : w->bs);
		for (size_t k = 0; k + sizeof(off) <= n; k += 512) {
			uint64_t stamp = off + k;
			memcpy(buf + k, &stamp, sizeof(stamp));
		}
		for (size_t done = 0; done < n;) {
			ssize_t k = pwrite(fd, buf + done, n - done, (off_t)(off + done));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				rc = k < 0 ? -errno : -EIO;
				snprintf(j->what, sizeof(j->what), "write %s at offset %llu", path,
					 (unsigned long long)(off + done));
				goto out;
			}
			done += (size_t)k;
		}
		atomic_fetch_add_explicit(&j->sh->bytes, n, memory_order_relaxed);
		nwrites++;
		since += n;
		if ((w->fsync.kind == FSYNC_EVERY_WRITES && nwrites % w->fsync.n == 0) ||
		    (w->fsync.kind == FSYNC_EVERY_BYTES && since >= w->fsync.n)) {
			since = 0;
			if ((rc = timed_fsync(j, fd))) {
				snprintf(j->what, sizeof(j->what), "fsync %s", path);
				goto out;
			}
		}
	}
	if (!rc && w->fsync.kind == FSYNC_END && (rc = timed_fsync(j, fd)))
		snprintf(j->what, sizeof(j->what), "fsync %s", path);
out:
	if (close(fd) && !rc) {
		rc = -errno;
		snprintf(j->what, sizeof(j->what), "close %s", path);
	}
	return rc;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	const struct workload *w = j->sh->w;
	uint8_t *buf = NULL;
	char path[PATH_MAX];
	if (posix_memalign((void **)&buf, 4096, (size_t)w->bs)) {
		j->err = -ENOMEM;
		snprintf(j->what, sizeof(j->what), "a %llu-byte buffer", (unsigned long long)w->bs);
		goto out;
	}
	/* xorshift64: random enough that nothing compresses it. */
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)j;
	for (uint64_t i = 0; i + 8 <= w->bs; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
	for (int i = 0; i < j->nstreams && !j->err; i++) {
		file_path(j->sh->t, j->streams[i].file, path, sizeof(path));
		j->err = write_stream(j, &j->streams[i], buf, path);
	}
out:
	if (j->err)
		atomic_store(&j->sh->stop, 1);
	j->end = bench_now();
	free(buf);
	atomic_fetch_add(&j->sh->done, 1);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile P of the sorted V[0..n). */
static double percentile_ms(const uint64_t *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);
	return (double)v[rank ? rank - 1 : 0] / 1e6;
}

static void progress_line(const struct progress *p, uint64_t done, uint64_t total, double rate)
{
	if (!p || !p->tty)
		return;
	char a[32], b[32];
	size_format(done, a, sizeof(a));
	size_format(total, b, sizeof(b));
	fprintf(stderr, "\r\033[K[%d/%d] %s: %s of %s, %.0f MiB/s", p->index, p->total, p->label, a, b,
		rate);
	fflush(stderr);
}

/* Deal the streams of W out to the jobs. */
static int plan(const struct workload *w, struct job *jobs)
{
	int parts = w->jobs > w->files ? (w->jobs + w->files - 1) / w->files : 1;
	uint64_t per_file = w->size / (uint64_t)w->files / w->bs * w->bs;
	if (per_file < w->bs * (uint64_t)parts)
		per_file = w->bs * (uint64_t)parts;
	uint64_t per_part = per_file / (uint64_t)parts / w->bs * w->bs;
	for (int part = 0, s = 0; part < parts; part++)
		for (int f = 0; f < w->files; f++, s++) {
			struct job *j = &jobs[s % w->jobs];
			struct stream *g = realloc(j->streams, (size_t)(j->nstreams + 1) * sizeof(*g));
			if (!g)
				return -ENOMEM;
			j->streams = g;
			uint64_t off = per_part * (uint64_t)part;
			g[j->nstreams++] = (struct stream){
				.file = f, .off = off, .len = part == parts - 1 ? per_file - off : per_part};
		}
	return 0;
}

static void timeline_add(struct run_result *r, double mib_s)
{
	double *g = realloc(r->timeline, (size_t)(r->ntimeline + 1) * sizeof(*g));
	if (g) { /* a sample less, on no memory: the mean still holds */
		r->timeline = g;
		g[r->ntimeline++] = mib_s;
	}
}

/* Sample the bytes written every second until the STARTED jobs are done;
 * the last sample (to the run's end) is workload_run's to take. */
static void sample(struct shared *sh, int started, double t0, uint64_t total,
		   const struct progress *p, struct run_result *r, uint64_t *last, double *last_t)
{
	*last = 0;
	*last_t = t0;
	while (atomic_load(&sh->done) < started) {
		double next = *last_t + 1.0;
		while (atomic_load(&sh->done) < started && bench_now() < next)
			usleep(5000);
		if (atomic_load(&sh->done) >= started)
			break;
		uint64_t b = atomic_load(&sh->bytes);
		double now = bench_now(), rate = (double)(b - *last) / (now - *last_t) / 1048576.0;
		timeline_add(r, rate);
		progress_line(p, b, total, rate);
		*last = b;
		*last_t = now;
	}
}

/* fsync p50 and p99 over every job's fsyncs (-1 when none). */
static void fsync_figures(const struct job *jobs, int njobs, struct run_result *r)
{
	size_t nlat = 0;
	for (int i = 0; i < njobs; i++)
		nlat += jobs[i].nlat;
	r->nfsync = nlat;
	r->fsync_p50_ms = r->fsync_p99_ms = -1;
	uint64_t *all = nlat ? malloc(nlat * sizeof(*all)) : NULL;
	if (!all)
		return;
	size_t k = 0;
	for (int i = 0; i < njobs; i++) {
		memcpy(all + k, jobs[i].lat, jobs[i].nlat * sizeof(*all));
		k += jobs[i].nlat;
	}
	qsort(all, nlat, sizeof(*all), cmp_u64);
	r->fsync_p50_ms = percentile_ms(all, nlat, 50);
	r->fsync_p99_ms = percentile_ms(all, nlat, 99);
	free(all);
}

int workload_run(const struct workload *w, const struct target *t, const struct progress *p,
		 struct run_result *r)
{
	struct shared sh = {.w = w, .t = t};
	struct job *jobs = calloc((size_t)w->jobs, sizeof(*jobs));
	uint64_t total = 0, last;
	double last_t;
	int rc = jobs ? plan(w, jobs) : -ENOMEM, started = 0;
	if (rc)
		goto out;
	for (int i = 0; i < w->jobs; i++)
		for (int k = 0; k < jobs[i].nstreams; k++)
			total += jobs[i].streams[k].len;
	double t0 = bench_now();
	for (; started < w->jobs; started++) {
		jobs[started].sh = &sh;
		if ((rc = -pthread_create(&jobs[started].thread, NULL, job_main, &jobs[started]))) {
			atomic_store(&sh.stop, 1);
			break;
		}
	}
	sample(&sh, started, t0, total, p, r, &last, &last_t);
	double end = t0;
	for (int i = 0; i < started; i++) {
		pthread_join(jobs[i].thread, NULL);
		if (jobs[i].end > end)
			end = jobs[i].end;
		if (jobs[i].err && !rc) {
			rc = jobs[i].err;
			if (rc != -EINTR)
				bench_err("%s: %s", jobs[i].what, strerror(-rc));
		}
	}
	if (p && p->tty)
		fprintf(stderr, "\r\033[K");
	uint64_t b = atomic_load(&sh.bytes);
	/* The last part-second, when it is long enough to mean something
	 * or is all the run had. */
	if (end > last_t && (end - last_t >= 0.1 || !r->ntimeline))
		timeline_add(r, (double)(b - last) / (end - last_t) / 1048576.0);
	r->seconds = end - t0;
	r->app_bytes = b;
	r->mib_s = r->seconds > 0 ? (double)b / r->seconds / 1048576.0 : 0;
	fsync_figures(jobs, w->jobs, r);
out:
	if (jobs)
		for (int i = 0; i < w->jobs; i++) {
			free(jobs[i].streams);
			free(jobs[i].lat);
		}
	free(jobs);
	return rc;
}
