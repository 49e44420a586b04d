/*
 * test_load.c: many processes on one mount (issue 14, "Load"; load.h).
 *
 * Per round (default: 32 workers, then 128; LOAD_PROCS=32,128 by hand),
 * on a fresh two-disk lsmfs with 64 KiB chunks mounted with cache_mib=64
 * (LOAD_CACHE_MIB):
 *   1. N forked workers (worker.c) run their seeded random mix for D
 *      seconds (30; 600 with LSMFS_SOAK=1; 15 under ASan/UBSan, which
 *      runs everything a few times slower; LOAD_SECONDS by hand), each
 *      checking every result against its model, then check every name
 *      they hold;
 *   2. meanwhile the daemon's VmHWM, VmRSS, threads and the store's table
 *      metadata are sampled every second; a worker still busy 180 s
 *      after the deadline is a hang, reported with the operation and path
 *      it is in;
 *   3. unmount (the daemon must exit 0), fsck.lsmfs -n (must exit 0),
 *      mount again, and every worker checks its whole model once more;
 *   4. the latency table (nearest-rank p50/p99/max per operation type)
 *      and the memory figures are printed, and the daemon's peak RSS
 *      must stay under the bound of mem.c (not enforced under the
 *      sanitizers, whose shadow memory and quarantine the options do not
 *      bound).
 * LOAD_SELFTEST=1 tests the test: worker 0 changes one byte of its model
 * before its final check, which must then fail, alone (exit 0 if so).
 * Exit 0 pass, 1 fail, 77 no FUSE.  The seed is printed; LSMFS_SEED=n
 * replays each worker's sequence of choices (timing still differs).
 */
#include "fstest.h"
#include "load.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define MAXPROCS 1024
#define GRACE_S 180          /* after the deadline, for the final checks */

struct round {
	int nprocs;
	unsigned seconds;
	unsigned cache_mib;
	unsigned long seed;
	int selftest;             /* worker 0 changes its model: must fail */
	bool caught;              /* selftest: worker 0, alone, failed a read */
	const char *fsck;
	struct fst fs;
	struct wstatus *st;
	pid_t pid[MAXPROCS];
	int exited[MAXPROCS];     /* reaped (status in code) */
	struct mem_sample peak;
	uint64_t base_kib;
	char store_dir[1024];
};

static double secs_since(uint64_t t0)
{
	return (double)(lat_now() - t0) / 1e9;
}

static void kill_workers(struct round *r)
{
	for (int i = 0; i < r->nprocs; i++)
		if (r->pid[i] > 0 && !r->exited[i])
			kill(r->pid[i], SIGKILL);
	for (int i = 0; i < r->nprocs; i++)
		if (r->pid[i] > 0 && !r->exited[i]) {
			waitpid(r->pid[i], NULL, 0);
			r->exited[i] = 1;
		}
}

/* Reap workers that exited; -1 if one failed (it printed why). */
static int reap(struct round *r)
{
	int rc = 0;
	for (int i = 0; i < r->nprocs; i++) {
		if (r->exited[i])
			continue;
		int status;
		pid_t p = waitpid(r->pid[i], &status, WNOHANG);
		if (p != r->pid[i])
			continue;
		r->exited[i] = 1;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "test_load: worker %d %s %d\n", i,
				WIFEXITED(status) ? "exited with status" : "was killed by signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			rc = -1;
		} else if (r->st[i].phase < W_DONE) {
			fprintf(stderr, "test_load: worker %d exited before it was done\n", i);
			rc = -1;
		}
	}
	return rc;
}

static int sample(struct round *r)
{
	struct mem_sample s;
	char err[512];
	if (mem_sample(r->fs.daemon, r->store_dir, &s, err, sizeof(err))) {
		fprintf(stderr, "test_load: sampling the daemon's memory: %s\n", err);
		return -1;
	}
	mem_peak(&r->peak, &s);
	return 0;
}

/* Whether the daemon is still running; if not, say how it ended (without
 * reaping it: fst_umount and fst_cleanup still own it).  Workers that
 * meet ENOENT everywhere at once, for instance, met the empty directory
 * under a mount whose daemon exited. */
static bool daemon_alive(struct round *r)
{
	if (!r->fs.daemon)
		return false;
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)r->fs.daemon, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
		return true;
	if (si.si_code == CLD_EXITED)
		fprintf(stderr, "test_load: FAIL (seed %lu): the daemon (pid %d) exited with status %d "
			"while the workers ran: its mount is gone\n", r->seed, (int)r->fs.daemon,
			si.si_status);
	else
		fprintf(stderr, "test_load: FAIL (seed %lu): the daemon (pid %d) was killed by signal %d "
			"(%s) while the workers ran\n", r->seed, (int)r->fs.daemon, si.si_status,
			strsignal(si.si_status));
	return false;
}

/* Wait until every worker reached phase (sampling memory each second
 * while mounted by the first daemon); -1 on a failure or a hang. */
static int wait_phase(struct round *r, int phase, uint64_t deadline_ns, bool sampling)
{
	uint64_t t0 = lat_now(), last = 0;
	for (;;) {
		bool alive = daemon_alive(r);
		if (!alive || reap(r)) {
			if (alive)
				(void)daemon_alive(r); /* a worker failed: was it the daemon? */
			return -1;
		}
		int behind = 0;
		uint64_t ops = 0;
		for (int i = 0; i < r->nprocs; i++) {
			behind += r->st[i].phase < phase;
			ops += r->st[i].ops;
			if (r->st[i].phase == W_FAILED)
				return -1;
		}
		if (!behind)
			return 0;
		uint64_t now = lat_now();
		if (now - last >= 1000000000u) {
			if (sampling && sample(r))
				return -1;
			if (sampling && (now - t0) / 1000000000u % 10 == 0 && now - t0 > 1000000000u)
				fprintf(stderr, "test_load: %3.0f s: %llu ops, daemon RSS %.1f MiB (peak %.1f), %u threads, %u tables\n",
					secs_since(t0), (unsigned long long)ops,
					(double)r->peak.rss_kib / 1024, (double)r->peak.hwm_kib / 1024,
					r->peak.threads, r->peak.tables);
			last = now;
		}
		if (now > deadline_ns) {
			fprintf(stderr, "test_load: FAIL (seed %lu): %d of %d workers still busy %.0f s after the deadline:\n",
				r->seed, behind, r->nprocs, GRACE_S + 0.0);
			for (int i = 0; i < r->nprocs; i++)
				if (r->st[i].phase < phase)
					fprintf(stderr, "  worker %d: %s %s for %.1f s (%llu ops done)\n", i,
						r->st[i].op, r->st[i].path, secs_since(r->st[i].since_ns),
						(unsigned long long)r->st[i].ops);
			return -1;
		}
		usleep(100000);
	}
}

static int fsck_clean(struct round *r)
{
	const char *argv[] = {r->fsck, "-n", r->fs.spec, NULL};
	static char out[1 << 16];
	int rc = fst_run(argv, out, sizeof(out));
	if (rc != 0) {
		fprintf(stderr, "test_load: FAIL (seed %lu): fsck.lsmfs -n exited %d:\n%s\n", r->seed,
			rc, out);
		return -1;
	}
	return 0;
}

static int merge_latency(struct round *r, struct lat *all)
{
	for (int i = 0; i < r->nprocs; i++) {
		char p[400], err[600];
		fst_fmt(p, sizeof(p), "%s/lat.%d", r->fs.root, i);
		if (lat_merge_file(all, p, err, sizeof(err))) {
			fprintf(stderr, "test_load: worker %d's samples: %s\n", i, err);
			return -1;
		}
	}
	return 0;
}

static int run_round(struct round *r)
{
	fprintf(stderr, "test_load: round: %d processes for %u s (seed %lu, cache_mib=%u)\n",
		r->nprocs, r->seconds, r->seed, r->cache_mib);
	const char *mkfs_args[] = {"--chunk-size", "65536", NULL};
	char opts[64];
	fst_fmt(opts, sizeof(opts), "cache_mib=%u", r->cache_mib);
	if (fst_init(&r->fs, "load", 2) || fst_mkfs(&r->fs, mkfs_args) || fst_mount(&r->fs, opts)) {
		fst_cleanup(&r->fs);
		return -1;
	}
	fst_fmt(r->store_dir, sizeof(r->store_dir), "%s/.lsmfs/meta", r->fs.disks[0]);
	int rc = -1;
	size_t maplen = sizeof(struct wstatus) * (size_t)r->nprocs;
	char shared[400];
	fst_fmt(shared, sizeof(shared), "%s/shared", r->fs.mnt);
	if (mkdir(shared, 0777) != 0) {
		fprintf(stderr, "test_load: mkdir %s: %s\n", shared, strerror(errno));
		goto out;
	}
	if (sample(r))
		goto out;
	r->base_kib = r->peak.rss_kib;

	r->st = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->st == MAP_FAILED) {
		r->st = NULL;
		fprintf(stderr, "test_load: mmap: %s\n", strerror(errno));
		goto out;
	}
	char lat_paths[MAXPROCS][320];
	uint64_t start = lat_now(), end = start + (uint64_t)r->seconds * 1000000000u;
	fflush(NULL);
	for (int i = 0; i < r->nprocs; i++) {
		fst_fmt(lat_paths[i], sizeof(lat_paths[i]), "%s/lat.%d", r->fs.root, i);
		pid_t p = fork();
		if (p < 0) {
			fprintf(stderr, "test_load: fork: %s\n", strerror(errno));
			goto out;
		}
		if (p == 0) {
			struct worker_cfg c = {.id = i, .seed = r->seed, .mnt = r->fs.mnt, .end_ns = end,
					       .status = &r->st[i], .lat_path = lat_paths[i],
					       .selftest = r->selftest && i == 0};
			worker_main(&c);
		}
		r->pid[i] = p;
	}
	if (wait_phase(r, W_DONE, end + GRACE_S * 1000000000ull, true))
		goto out;
	double elapsed = (double)r->seconds;
	if (sample(r)) /* VmHWM: the peak over the whole run */
		goto out;
	if (fst_umount(&r->fs)) {
		fprintf(stderr, "test_load: FAIL (seed %lu): unmount after the run was not clean\n",
			r->seed);
		goto out;
	}
	if (fsck_clean(r) || fst_mount(&r->fs, opts))
		goto out;
	for (int i = 0; i < r->nprocs; i++)
		r->st[i].cmd = 'v';
	if (wait_phase(r, W_VERIFIED, lat_now() + GRACE_S * 1000000000ull, false))
		goto out;
	for (int i = 0; i < r->nprocs; i++)
		r->st[i].cmd = 'q';
	for (int i = 0; i < r->nprocs; i++) {
		int status;
		if (waitpid(r->pid[i], &status, 0) == r->pid[i]) {
			r->exited[i] = 1;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fprintf(stderr, "test_load: worker %d failed at exit\n", i);
				goto out;
			}
		}
	}
	if (fst_umount(&r->fs)) {
		fprintf(stderr, "test_load: FAIL (seed %lu): unmount after the check was not clean\n",
			r->seed);
		goto out;
	}

	struct lat all = {0};
	if (merge_latency(r, &all)) {
		lat_free(&all);
		goto out;
	}
	printf("\nload: %d processes, %u s, seed %lu: every file checked after the run and "
	       "after a remount, fsck clean\n", r->nprocs, r->seconds, r->seed);
	lat_print(&all, elapsed, stdout);
	lat_free(&all);
	uint64_t bound = mem_bound_kib(r->cache_mib, r->base_kib, &r->peak, stdout);
	printf("  daemon peak RSS (VmHWM) %.1f MiB, bound %.1f MiB%s\n",
	       (double)r->peak.hwm_kib / 1024, (double)bound / 1024,
	       SANITIZED ? " (not enforced under ASan/UBSan)" : "");
	fflush(stdout);
	if (!SANITIZED && r->peak.hwm_kib > bound) {
		fprintf(stderr, "test_load: FAIL (seed %lu): the daemon's peak RSS %.1f MiB is over its bound %.1f MiB\n",
			r->seed, (double)r->peak.hwm_kib / 1024, (double)bound / 1024);
		goto out;
	}
	rc = 0;
out:
	if (r->st) {
		r->caught = r->st[0].phase == W_FAILED && strcmp(r->st[0].failed, "read") == 0;
		for (int i = 1; i < r->nprocs; i++)
			r->caught = r->caught && r->st[i].phase != W_FAILED;
		kill_workers(r);
		munmap(r->st, maplen);
		r->st = NULL;
	}
	fst_cleanup(&r->fs);
	return rc;
}

int main(void)
{
	fst_require_fuse();
	const char *fsck = getenv("FSCK_BIN");
	if (!fsck || !*fsck) {
		fprintf(stderr, "\n*** SKIPPED: FSCK_BIN not set; run through meson test ***\n\n");
		return 77;
	}
	unsigned long seed = fst_seed("test_load");
	unsigned seconds = fst_soak() ? 600 : SANITIZED ? 15 : 30;
	const char *s = getenv("LOAD_SECONDS");
	if (s && *s)
		seconds = (unsigned)strtoul(s, NULL, 10);
	const char *procs = getenv("LOAD_PROCS");
	if (!procs || !*procs)
		procs = "32,128";
	const char *cm = getenv("LOAD_CACHE_MIB");
	unsigned cache_mib = cm && *cm ? (unsigned)strtoul(cm, NULL, 10) : 64;
	const char *st = getenv("LOAD_SELFTEST");
	int selftest = st && !strcmp(st, "1");
	int failed = 0;
	for (const char *p = procs; *p;) {
		char *endp;
		long n = strtol(p, &endp, 10);
		if (endp == p || n < 1 || n > MAXPROCS) {
			fprintf(stderr, "test_load: LOAD_PROCS=%s: want numbers from 1 to %d, comma-separated\n",
				procs, MAXPROCS);
			return 1;
		}
		static struct round r;
		memset(&r, 0, sizeof(r));
		r.nprocs = (int)n;
		r.seconds = seconds;
		r.cache_mib = cache_mib;
		r.seed = seed;
		r.fsck = fsck;
		r.selftest = selftest;
		int rc = run_round(&r);
		if (selftest) {
			/* The test of the test: the changed byte must be found
			 * by the final check, and nothing else may fail. */
			if (rc == 0 || !r.caught) {
				fprintf(stderr, "test_load: SELF-TEST FAILED: a byte changed in worker 0's model was %s\n",
					rc == 0 ? "not detected" : "not what failed");
				return 1;
			}
			fprintf(stderr, "test_load: self-test passed: the changed byte was detected\n");
			return 0;
		}
		if (rc) {
			failed = 1;
			break;
		}
		p = *endp == ',' ? endp + 1 : endp;
	}
	if (failed)
		fprintf(stderr, "test_load: FAIL (replay with LSMFS_SEED=%lu)\n", seed);
	return failed;
}
