/*
 * main.c: lsmfs-bench's command line and its matrix of runs.
 *
 * Every cell of the matrix (block size x files x jobs x fsync policy) is
 * written into every system: a fresh scratch lsmfs, raw directories on the
 * same disks, and mergerfs over them when installed.  The machine's disks
 * are shared and noisy, and interference only ever slows a run down, so
 * with --rounds N each cell runs N times with the systems in a new random
 * order each round; a system's figure is its best round (the least
 * disturbed), with the median of its rounds beside it.
 *
 * Cleanup: SIGINT and SIGTERM only set bench_interrupted; the writers and
 * the waits stop at it, and the one cleanup path (scratch_close) unmounts
 * and removes everything, on success, error and interruption alike.
 */
#include "bench.h"
#include "fs.h" /* lsmfs_print_version */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t bench_interrupted;

void bench_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs(BENCH_PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " BENCH_PROG " seqwrite [DIR...] [OPTIONS]\n"
		"How sequential writes reach the backing disks: writes the same workload\n"
		"into a scratch lsmfs made over the disks, into plain directories on them\n"
		"(raw: files round-robin) and into mergerfs over them (when installed),\n"
		"and reports throughput, bytes and share per disk, sequential fraction,\n"
		"write amplification, fsync latency, daemon CPU and block-device traffic.\n"
		"\n"
		"DIR...             one directory per backing disk (each gets a private\n"
		"                   subdirectory, removed at the end); default: --disks\n"
		"                   fresh directories under $TMPDIR or /var/tmp\n"
		"  --disks N        number of disks when no DIR is given (default 2)\n"
		"  --size SIZE      bytes per run, over all its files (default 4G)\n"
		"  --bs LIST        block sizes (default 4k,64k,1M)\n"
		"  --files LIST     numbers of files (default 1,16)\n"
		"  --jobs LIST      numbers of writer threads (default 1,4); with more\n"
		"                   jobs than files each file is cut into contiguous parts\n"
		"  --fsync LIST     end: fsync each file at its end (default); every:N:\n"
		"                   after every N writes, every:SIZE (e.g. every:64M):\n"
		"                   after every SIZE bytes; none\n"
		"  --compare LIST   raw, mergerfs, or none (default raw,mergerfs; mergerfs\n"
		"                   is skipped with a note when not installed)\n"
		"  --rounds N       runs of each cell per system, in a new random order\n"
		"                   each round; the best is reported, the median beside it\n"
		"                   (default 1)\n"
		"  --out DIR        where results.csv, results.json, report.svg and the\n"
		"                   daemons' logs go (default ./lsmfs-bench-DATE-TIME)\n"
		"  -o OPTS          mount options for lsmfs (e.g. no_writeback)\n"
		"  --mkfs-opts STR  options for mkfs.lsmfs (e.g. \"--chunk-size 1048576\")\n"
		"  --no-drop-caches do not write back and drop the page cache before a run\n"
		"                   (done by default when root, so no run pays for the\n"
		"                   previous one's dirty pages)\n"
		"  -h, --help       this help\n"
		"  -V, --version    the version\n"
		"SIZE takes k, M, G, T (powers of 1024).  Exit status: 0 done, 1 a run\n"
		"failed (the error names the file), 2 usage error, 130 interrupted.\n"
		"Needs /dev/fuse and root or user_allow_other.\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -EINVAL;
	uint64_t m = 1;
	switch (*end) {
	case 'k': case 'K': m = 1ull << 10; end++; break;
	case 'm': case 'M': m = 1ull << 20; end++; break;
	case 'g': case 'G': m = 1ull << 30; end++; break;
	case 't': case 'T': m = 1ull << 40; end++; break;
	default: break;
	}
	if (!strcmp(end, "iB") || !strcmp(end, "B"))
		end += strlen(end);
	if (*end || v * (double)m >= 1.8e19)
		return -EINVAL;
	*out = (uint64_t)(v * (double)m);
	return *out ? 0 : -EINVAL;
}

/* Split a comma list; each item parsed by ONE into an array of SIZE-byte elements. */
static int parse_list(const char *arg, void **out, int *n, size_t size,
		      int (*one)(const char *, void *))
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		return -ENOMEM;
	*n = 0;
	int rc = 0;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char *g = realloc(*out, (size_t)(*n + 1) * size);
		if (!g) {
			rc = -ENOMEM;
			break;
		}
		*out = g;
		if ((rc = one(w, g + (size_t)*n * size)))
			break;
		(*n)++;
	}
	free(copy);
	return rc ? rc : *n ? 0 : -EINVAL;
}

static int one_size(const char *s, void *out)
{
	return parse_size(s, out);
}

static int one_count(const char *s, void *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || end == s || v < 1 || v > 4096)
		return -EINVAL;
	*(int *)out = (int)v;
	return 0;
}

static int one_fsync(const char *s, void *out)
{
	struct fsync_mode *m = out;
	memset(m, 0, sizeof(*m));
	snprintf(m->label, sizeof(m->label), "%s", s);
	if (!strcmp(s, "end")) {
		m->kind = FSYNC_END;
		return 0;
	}
	if (!strcmp(s, "none")) {
		m->kind = FSYNC_NONE;
		return 0;
	}
	if (strncmp(s, "every:", 6))
		return -EINVAL;
	const char *v = s + 6;
	size_t l = strlen(v);
	bool bytes = l && strchr("kKmMgGtT", v[l - 1]);
	if (bytes) {
		m->kind = FSYNC_EVERY_BYTES;
		return parse_size(v, &m->n);
	}
	int n;
	if (one_count(v, &n))
		return -EINVAL;
	m->kind = FSYNC_EVERY_WRITES;
	m->n = (uint64_t)n;
	return 0;
}

/* The lsmfs daemon and mkfs: beside this program in the build tree
 * (build/tools/lsmfsbench -> build/fs, build/mkfs), beside it when
 * installed, else from PATH. */
static void find_tool(const char *name, const char *build_sub, char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *dir = dirname(exe);
		snprintf(out, len, "%s/../../%s/%s", dir, build_sub, name);
		if (!access(out, X_OK))
			return;
		snprintf(out, len, "%s/%s", dir, name);
		if (!access(out, X_OK))
			return;
	}
	snprintf(out, len, "%s", name);
}

/* NAME's path in $PATH into BUF; false when it is not there. */
static bool in_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char *copy = path ? strdup(path) : NULL, *save = NULL;
	bool found = false;
	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, len, "%s/%s", d, name);
		found = !access(buf, X_OK);
	}
	free(copy);
	return found;
}

static void on_signal(int sig)
{
	(void)sig;
	bench_interrupted = 1;
}

static void drop_caches(const struct bench_opts *o)
{
	sync();
	if (!o->drop_caches)
		return;
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "3", 1); /* best effort: a container may refuse */
		close(fd);
	}
}

static int run_one(struct scratch *s, const struct bench_opts *o, enum bench_system sys,
		   const struct workload *w, const struct progress *p,
		   const struct dev_counters *devs, int ndev, struct run_result *r)
{
	struct target t = {.sys = sys};
	struct lsmfs_counters c0 = {0}, c1 = {0}, c2 = {0};
	char *store_dir = NULL;
	double cpu0 = 0, cpu1 = 0;
	int rc, rc2;

	r->sys = sys;
	r->w = *w;
	r->ndisks = o->ndisks;
	r->disk_bytes = calloc((size_t)o->ndisks, sizeof(uint64_t));
	r->disk_writes = calloc((size_t)o->ndisks, sizeof(uint64_t));
	r->disk_seq = calloc((size_t)o->ndisks, sizeof(double));
	r->cpu_seconds = -1;
	if (!r->disk_bytes || !r->disk_writes || !r->disk_seq)
		return -ENOMEM;
	for (int d = 0; d < o->ndisks; d++)
		r->disk_seq[d] = -1;

	rc = scratch_setup(s, sys, &t);
	if (rc)
		goto out;
	drop_caches(o);
	r->ndev = ndev;
	memcpy(r->dev, devs, (size_t)ndev * sizeof(*devs));
	(void)probe_diskstats(r->dev, ndev);
	if (sys == SYS_LSMFS && (rc = probe_lsmfs_xattr(t.mnt, &c0, &store_dir)))
		goto out;
	if (t.daemon && probe_cpu_seconds(t.daemon, &cpu0))
		t.daemon = 0;

	rc = workload_run(w, &t, p, r);

	if (!rc && sys == SYS_LSMFS)
		rc = probe_lsmfs_xattr(t.mnt, &c1, NULL);
	if (!rc && sys != SYS_LSMFS)
		rc = scratch_usage(s, r->disk_bytes);
out:
	/* The daemon's CPU from the first write to its exit: its unmount
	 * (the store's last flush) is part of what the writes cost. */
	rc2 = scratch_unmount(s, &t, &cpu1);
	rc = rc ? rc : rc2;
	if (!rc && t.daemon)
		r->cpu_seconds = cpu1 - cpu0;
	if (!rc && sys == SYS_LSMFS) {
		/* The final figures (after the store's last flush; only its closing
		 * MANIFEST edit and log sync come later), when the
		 * daemon left them; else those read before the unmount. */
		const struct lsmfs_counters *end = &c1;
		if (!probe_lsmfs_file(store_dir, &c2) && !c2.mounted && c2.ndisks == c1.ndisks)
			end = &c2;
		if (end->ndisks != o->ndisks || c0.ndisks != o->ndisks) {
			bench_err("the daemon reports %d disks, the run has %d", end->ndisks, o->ndisks);
			rc = -EBADMSG;
		} else {
			for (int d = 0; d < o->ndisks; d++) {
				uint64_t wr = end->disk[d].writes - c0.disk[d].writes;
				r->disk_bytes[d] = end->disk[d].bytes - c0.disk[d].bytes;
				r->disk_writes[d] = wr;
				r->disk_seq[d] = wr ? (double)(end->disk[d].sequential - c0.disk[d].sequential) / (double)wr
						    : -1;
			}
			r->meta_log = end->log - c0.log;
			r->meta_flush = end->flush - c0.flush;
			r->meta_compaction = end->compaction - c0.compaction;
			r->meta_manifest = end->manifest - c0.manifest;
			r->meta_bytes = r->meta_log + r->meta_flush + r->meta_compaction + r->meta_manifest;
		}
	}
	if (!rc) {
		struct dev_counters after[8];
		memcpy(after, r->dev, sizeof(after));
		sync();
		(void)probe_diskstats(after, r->ndev);
		for (int k = 0; k < r->ndev; k++) {
			r->dev[k].writes = after[k].writes - r->dev[k].writes;
			r->dev[k].sectors = after[k].sectors - r->dev[k].sectors;
		}
	}
	scratch_remove(s, &t);
	r->ok = !rc;
	probe_counters_free(&c0);
	probe_counters_free(&c1);
	probe_counters_free(&c2);
	free(store_dir);
	return rc;
}

void run_result_free(struct run_result *r)
{
	free(r->timeline);
	free(r->disk_bytes);
	free(r->disk_writes);
	free(r->disk_seq);
	free(r->round_mib_s);
	memset(r, 0, sizeof(*r));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The DIRs, argv[first..argc): absolute, existing directories, one per
 * disk, without ':' (it separates disks for lsmfs and mergerfs alike). */
static int take_dirs(int argc, char **argv, int first, bool disks_given, struct bench_opts *o)
{
	for (int i = first; i < argc; i++) {
		char **g = realloc(o->dirs, (size_t)(o->ndirs + 1) * sizeof(char *));
		if (!g)
			return -ENOMEM;
		o->dirs = g;
		/* Absolute and without symlinks: they name the disks to mkfs,
		 * the daemon and mergerfs, and are compared with mountinfo. */
		char *real = realpath(argv[i], NULL);
		if (!real) {
			bench_err("%s: %s", argv[i], strerror(errno));
			return -EINVAL;
		}
		o->dirs[o->ndirs++] = real;
	}
	if (o->dirs) {
		if (o->ndirs > 64) {
			bench_err("%d directories given; at most 64 disks", o->ndirs);
			return -EINVAL;
		}
		if (disks_given && o->ndisks != o->ndirs) {
			bench_err("--disks %d but %d directories given", o->ndisks, o->ndirs);
			return -EINVAL;
		}
		o->ndisks = o->ndirs;
		for (int d = 0; d < o->ndirs; d++) {
			struct stat st;
			if (stat(o->dirs[d], &st)) {
				bench_err("%s: %s", o->dirs[d], strerror(errno));
				return -EINVAL;
			}
			if (!S_ISDIR(st.st_mode)) {
				bench_err("%s: not a directory", o->dirs[d]);
				return -EINVAL;
			}
			if (strchr(o->dirs[d], ':')) {
				bench_err("%s: a directory with ':' in its name cannot be a disk", o->dirs[d]);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int parse_lists(const char *bs, const char *files, const char *jobs, const char *fsync,
		       struct bench_opts *o)
{
	bool bs_ok = !parse_list(bs, (void **)&o->bs, &o->nbs, sizeof(uint64_t), one_size);
	for (int i = 0; bs_ok && i < o->nbs; i++)
		bs_ok = o->bs[i] >= 512 && o->bs[i] <= (1ull << 30);
	if (!bs_ok) {
		bench_err("bad --bs: %s (block sizes from 512 bytes to 1G)", bs);
		return -EINVAL;
	}
	if (parse_list(files, (void **)&o->files, &o->nfiles, sizeof(int), one_count)) {
		bench_err("bad --files: %s", files);
		return -EINVAL;
	}
	if (parse_list(jobs, (void **)&o->jobs, &o->njobs, sizeof(int), one_count)) {
		bench_err("bad --jobs: %s", jobs);
		return -EINVAL;
	}
	if (parse_list(fsync, (void **)&o->fsync, &o->nfsync, sizeof(struct fsync_mode), one_fsync)) {
		bench_err("bad --fsync: %s (end, none, every:N or every:SIZE)", fsync);
		return -EINVAL;
	}
	return 0;
}

/* lsmfs always; raw and mergerfs (when installed) as --compare says. */
static int parse_compare(const char *compare, struct bench_opts *o)
{
	o->sys[SYS_LSMFS] = true;
	if (strcmp(compare, "none")) {
		char *copy = strdup(compare), *save = NULL;
		for (char *w = copy ? strtok_r(copy, ",", &save) : NULL; w; w = strtok_r(NULL, ",", &save)) {
			if (!strcmp(w, "raw")) {
				o->sys[SYS_RAW] = true;
			} else if (!strcmp(w, "mergerfs")) {
				o->sys[SYS_MERGERFS] =
					in_path("mergerfs", o->mergerfs_bin, sizeof(o->mergerfs_bin));
				if (!o->sys[SYS_MERGERFS])
					fprintf(stderr, BENCH_PROG ": note: mergerfs is not installed; "
							"it is left out (apt-get install mergerfs)\n");
			} else {
				bench_err("bad --compare: %s (raw, mergerfs or none)", w);
				free(copy);
				return -EINVAL;
			}
		}
		free(copy);
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
	enum { OPT_DISKS = 256, OPT_SIZE, OPT_BS, OPT_FILES, OPT_JOBS, OPT_FSYNC, OPT_COMPARE, OPT_ROUNDS, OPT_OUT,
	       OPT_MKFS, OPT_NODROP };
	static const struct option longs[] = {
		{"disks", 1, NULL, OPT_DISKS},   {"size", 1, NULL, OPT_SIZE},
		{"bs", 1, NULL, OPT_BS},         {"files", 1, NULL, OPT_FILES},
		{"jobs", 1, NULL, OPT_JOBS},     {"fsync", 1, NULL, OPT_FSYNC},
		{"compare", 1, NULL, OPT_COMPARE}, {"rounds", 1, NULL, OPT_ROUNDS},
		{"out", 1, NULL, OPT_OUT},       {"mkfs-opts", 1, NULL, OPT_MKFS},
		{"no-drop-caches", 0, NULL, OPT_NODROP}, {"help", 0, NULL, 'h'}, {"version", 0, NULL, 'V'},
		{0, 0, 0, 0}};
	const char *bs = "4k,64k,1M", *files = "1,16", *jobs = "1,4", *fsync = "end",
		   *compare = "raw,mergerfs";
	bool disks_given = false;
	o->ndisks = 2;
	o->size = 4ull << 30;
	o->rounds = 1;
	o->drop_caches = geteuid() == 0;
	int c;
	while ((c = getopt_long(argc, argv, "ho:V", longs, NULL)) != -1) {
		int n;
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			lsmfs_print_version(BENCH_PROG, NULL);
			exit(0);
		case 'o': o->mount_opts = optarg; break;
		case OPT_DISKS:
			if (one_count(optarg, &o->ndisks) || o->ndisks > 64)
				goto bad;
			disks_given = true;
			break;
		case OPT_SIZE:
			if (parse_size(optarg, &o->size))
				goto bad;
			break;
		case OPT_BS: bs = optarg; break;
		case OPT_FILES: files = optarg; break;
		case OPT_JOBS: jobs = optarg; break;
		case OPT_FSYNC: fsync = optarg; break;
		case OPT_COMPARE: compare = optarg; break;
		case OPT_ROUNDS:
			if (one_count(optarg, &n) || n > 100)
				goto bad;
			o->rounds = n;
			break;
		case OPT_OUT: o->out = optarg; break;
		case OPT_MKFS: o->mkfs_opts = optarg; break;
		case OPT_NODROP: o->drop_caches = false; break;
		default:
			usage(stderr);
			return -EINVAL;
		bad:
			bench_err("bad value for an option: %s", optarg);
			return -EINVAL;
		}
	}
	if (optind >= argc || strcmp(argv[optind], "seqwrite")) {
		bench_err(optind >= argc ? "no workload given (seqwrite)" : "unknown workload: %s",
			  argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	/* getopt moved the operands to the end: the workload, then DIRs. */
	int rc = take_dirs(argc, argv, optind + 1, disks_given, o);
	if (!rc)
		rc = parse_lists(bs, files, jobs, fsync, o);
	if (!rc)
		rc = parse_compare(compare, o);
	if (rc)
		return rc;
	find_tool("lsmfs", "fs", o->lsmfs_bin, sizeof(o->lsmfs_bin));
	find_tool("mkfs.lsmfs", "mkfs", o->mkfs_bin, sizeof(o->mkfs_bin));
	return 0;
}

static void free_opts(struct bench_opts *o)
{
	for (int d = 0; d < o->ndirs; d++)
		free(o->dirs[d]);
	free(o->dirs);
	free(o->bs);
	free(o->files);
	free(o->jobs);
	free(o->fsync);
}

static int bench_main(int argc, char **argv, struct bench_opts *o);

int main(int argc, char **argv)
{
	struct bench_opts o = {0};
	int rc = bench_main(argc, argv, &o); /* o is freed here, whatever happened */
	free_opts(&o);
	return rc;
}

/* Cell CELL of the matrix: block sizes vary fastest, then files, jobs and
 * fsync policies. */
static struct workload cell_workload(const struct bench_opts *o, int cell)
{
	struct workload w = {.size = o->size};
	w.bs = o->bs[cell % o->nbs];
	cell /= o->nbs;
	w.files = o->files[cell % o->nfiles];
	cell /= o->nfiles;
	w.jobs = o->jobs[cell % o->njobs];
	cell /= o->njobs;
	w.fsync = o->fsync[cell];
	return w;
}

/* Fold round ONE into BEST: every round's figure is kept, and the whole of
 * the fastest round.  ONE is consumed. */
static int keep_round(struct run_result *best, struct run_result *one)
{
	int rc = 0;
	double *rounds = best->round_mib_s;
	int nr = best->nrounds;
	best->round_mib_s = NULL;
	if (one->ok) {
		double *g = realloc(rounds, (size_t)(nr + 1) * sizeof(*g));
		if (g) {
			rounds = g;
			rounds[nr++] = one->mib_s;
		} else {
			rc = -ENOMEM;
		}
	}
	if (one->ok && (!best->ok || one->mib_s > best->mib_s)) {
		run_result_free(best);
		*best = *one;
		memset(one, 0, sizeof(*one));
	}
	run_result_free(one);
	best->round_mib_s = rounds;
	best->nrounds = nr;
	return rc;
}

static void set_medians(struct run_result *res, int n)
{
	for (int i = 0; i < n; i++) {
		struct run_result *r = &res[i];
		double *v = r->nrounds ? malloc((size_t)r->nrounds * sizeof(*v)) : NULL;
		if (!v)
			continue;
		memcpy(v, r->round_mib_s, (size_t)r->nrounds * sizeof(*v));
		qsort(v, (size_t)r->nrounds, sizeof(*v), cmp_double);
		r->mib_s_median = r->nrounds % 2 ? v[r->nrounds / 2]
						 : (v[r->nrounds / 2 - 1] + v[r->nrounds / 2]) / 2;
		free(v);
	}
}

/* What a matrix run works with: res[cell * nsys + index in systems]. */
struct matrix {
	const struct bench_opts *o;
	struct scratch *s;
	enum bench_system systems[SYS_COUNT];
	int nsys, ncells;
	struct run_result *res;
	struct dev_counters devs[8];
	int ndev;
};

/* Every cell, every round, every system in a new random order. */
static int run_matrix(struct matrix *m)
{
	const struct bench_opts *o = m->o;
	struct progress p = {.tty = isatty(2), .total = m->ncells * m->nsys * o->rounds};
	int rc = 0;
	for (int cell = 0; cell < m->ncells && !rc && !bench_interrupted; cell++) {
		struct workload w = cell_workload(o, cell);
		for (int round = 0; round < o->rounds && !rc && !bench_interrupted; round++) {
			int order[SYS_COUNT];
			for (int k = 0; k < m->nsys; k++)
				order[k] = k;
			for (int k = m->nsys - 1; k > 0; k--) { /* Fisher-Yates */
				int j = rand() % (k + 1), t = order[k];
				order[k] = order[j];
				order[j] = t;
			}
			for (int k = 0; k < m->nsys && !rc && !bench_interrupted; k++) {
				enum bench_system sys = m->systems[order[k]];
				struct run_result one = {0};
				char label[128], bsz[32];
				size_format(w.bs, bsz, sizeof(bsz));
				snprintf(label, sizeof(label), "%s bs=%s files=%d jobs=%d fsync=%s round %d",
					 bench_system_name(sys), bsz, w.files, w.jobs, w.fsync.label, round + 1);
				p.index++;
				p.label = label;
				rc = run_one(m->s, o, sys, &w, &p, m->devs, m->ndev, &one);
				one.round = round;
				if (one.ok && !p.tty)
					fprintf(stderr, "[%d/%d] %s: %.0f MiB/s\n", p.index, p.total, label,
						one.mib_s);
				int krc = keep_round(&m->res[cell * m->nsys + order[k]], &one);
				rc = rc ? rc : krc;
			}
		}
	}
	return rc;
}

static void install_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A closed pipe on stdout or stderr (| head) stops the bench like a
	 * Ctrl-C, so that it still unmounts and removes what it made. */
	sigaction(SIGPIPE, &sa, NULL);
}

static int bench_main(int argc, char **argv, struct bench_opts *o)
{
	int rc = parse_args(argc, argv, o);
	if (rc)
		return 2;
	/* Before anything is made: the --out directory's existence tells a
	 * caller that a signal from now on is handled (a shell starts a
	 * background job with SIGINT ignored until then). */
	install_signals();
	if (access("/dev/fuse", R_OK | W_OK)) {
		bench_err("/dev/fuse: %s: cannot mount a scratch lsmfs here", strerror(errno));
		return 1;
	}
	if (!o->out) {
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		strftime(o->out_default, sizeof(o->out_default), "lsmfs-bench-%Y%m%d-%H%M%S", &tm);
		o->out = o->out_default;
	}
	if (mkdir(o->out, 0755) && errno != EEXIST) {
		bench_err("cannot make %s: %s", o->out, strerror(errno));
		return 1;
	}
	srand((unsigned)time(NULL) ^ (unsigned)getpid());

	struct matrix m = {.o = o, .ncells = o->nbs * o->nfiles * o->njobs * o->nfsync};
	for (int k = 0; k < SYS_COUNT; k++)
		if (o->sys[k])
			m.systems[m.nsys++] = (enum bench_system)k;
	int n = m.ncells * m.nsys, ndisks = 0;
	m.res = calloc((size_t)n, sizeof(*m.res));
	rc = m.res ? scratch_open(o, &m.s) : -ENOMEM;
	char **disk_dirs = m.s ? scratch_disks(m.s, &ndisks) : NULL;
	if (!rc) {
		(void)probe_devices(disk_dirs, ndisks, m.devs, &m.ndev);
		rc = run_matrix(&m);
	}
	/* The disks' names outlive the scratch directories, for the report. */
	char **labels = calloc((size_t)o->ndisks, sizeof(char *));
	for (int d = 0; labels && d < o->ndisks; d++)
		labels[d] = strdup(o->dirs ? o->dirs[d] : disk_dirs ? disk_dirs[d] : "?");
	scratch_close(m.s);
	if (m.res && labels) {
		/* What finished is reported, also after an error or Ctrl-C. */
		set_medians(m.res, n);
		report_table(stdout, o, m.res, n);
		if (report_write(o, m.res, n, labels) && !rc)
			rc = -EIO;
	}
	for (int i = 0; m.res && i < n; i++)
		run_result_free(&m.res[i]);
	free(m.res);
	for (int d = 0; labels && d < o->ndisks; d++)
		free(labels[d]);
	free(labels);
	if (bench_interrupted) {
		bench_err("interrupted; everything it made is unmounted and removed");
		return 130;
	}
	return rc ? 1 : 0;
}
