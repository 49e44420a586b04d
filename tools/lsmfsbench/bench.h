/*
 * bench.h: lsmfs-bench, how sequential writes reach the backing disks.
 *
 * One run writes a workload (block size, files, jobs, fsync policy) into
 * one system (a scratch lsmfs, raw directories, mergerfs) and measures it.
 * The modules:
 *   main.c      the command line, the matrix of runs, rounds and order
 *   scratch.c   scratch directories, mkfs, daemons, mounts, cleanup
 *   workload.c  the writer threads, the timeline sampler, fsync latencies
 *   probe.c     what the kernel and the daemon say: /proc/PID/stat,
 *               /proc/diskstats, the daemon's user.lsmfs.stats
 *   report.c    the table, results.csv, results.json, report.svg
 * Everything returns 0 or a negative errno and prints its own one-line
 * error ("lsmfs-bench: what: why") where it knows the file.
 */
#ifndef LSMFS_BENCH_H
#define LSMFS_BENCH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sizes.h"

#define BENCH_PROG "lsmfs-bench"

/* Set by SIGINT/SIGTERM (main.c); every loop that can take long checks it. */
extern volatile sig_atomic_t bench_interrupted;

enum bench_system { SYS_LSMFS, SYS_RAW, SYS_MERGERFS, SYS_COUNT };
const char *bench_system_name(enum bench_system s);

enum fsync_kind { FSYNC_NONE, FSYNC_END, FSYNC_EVERY_WRITES, FSYNC_EVERY_BYTES };
struct fsync_mode {
	enum fsync_kind kind;
	uint64_t n; /* writes or bytes between fsyncs (EVERY_*) */
	char label[32];
};

/* One cell of the matrix: what is written. */
struct workload {
	uint64_t size; /* bytes in all, split over the files */
	uint64_t bs;
	int files, jobs;
	struct fsync_mode fsync;
};

/* A system ready to be written: where file i goes. */
struct target {
	enum bench_system sys;
	int ndirs;
	char **dirs; /* file i goes to dirs[i % ndirs] */
	pid_t daemon; /* 0 for raw */
	const char *mnt; /* the mount point (lsmfs, mergerfs) or NULL */
	char *mntv[1];
};

/* ---- probe.c ---- */
struct disk_counters {
	uint64_t bytes, writes, fsyncs, sequential;
};
struct lsmfs_counters {
	uint64_t app_bytes;
	int ndisks;
	struct disk_counters *disk; /* by disk index */
	uint64_t log, flush, compaction, manifest; /* store, since mount */
	bool mounted; /* from stats.json: false once the daemon closed */
};
void probe_counters_free(struct lsmfs_counters *c);
/* The daemon's accounting from the root xattr of MNT. */
int probe_lsmfs_xattr(const char *mnt, struct lsmfs_counters *out, char **store_dir);
/* The accounting the daemon left in STORE_DIR/stats.json at unmount;
 * -ENOENT when that daemon does not write it. */
int probe_lsmfs_file(const char *store_dir, struct lsmfs_counters *out);
/* utime + stime of PID, in seconds. */
int probe_cpu_seconds(pid_t pid, double *out);

struct dev_counters {
	unsigned major, minor;
	char name[64];
	uint64_t writes, sectors; /* completed writes, 512-byte sectors written */
};
/* The distinct block devices under DIRS (at most ndirs), named from
 * /proc/diskstats; a directory on a device it does not list (tmpfs, NFS,
 * overlay) is left out.  *n = 0 is no error. */
int probe_devices(char **dirs, int ndirs, struct dev_counters *devs, int *n);
/* Fill in writes and sectors of each device from /proc/diskstats. */
int probe_diskstats(struct dev_counters *devs, int n);

/* ---- workload.c ---- */
struct run_result {
	enum bench_system sys;
	struct workload w;
	int round;
	bool ok;
	double seconds; /* first write to last fsync/close */
	uint64_t app_bytes;
	double mib_s;
	double *timeline; /* MiB/s in each second */
	int ntimeline;
	double fsync_p50_ms, fsync_p99_ms; /* < 0: no fsync */
	uint64_t nfsync;
	/* Per backing disk (dirs of the matrix, in order). */
	int ndisks;
	uint64_t *disk_bytes;
	double *disk_seq; /* sequential fraction; < 0: not known (raw, mergerfs) */
	uint64_t *disk_writes;
	uint64_t meta_bytes; /* lsmfs: store bytes since mount (log+flush+compaction+MANIFEST) */
	uint64_t meta_log, meta_flush, meta_compaction, meta_manifest;
	double cpu_seconds; /* daemon, first write to exit; < 0 for raw */
	int ndev;
	struct dev_counters dev[8]; /* deltas over the run, sync included */
	/* Over all rounds of this system and cell (main.c fills). */
	int nrounds;
	double mib_s_median;
	double *round_mib_s;
};
void run_result_free(struct run_result *r);

/* Progress on a terminal: "[3/24] lsmfs bs=1M ...: 1.2/4.0 GiB 850 MiB/s". */
struct progress {
	bool tty;
	int index, total;
	const char *label;
};

/* Write W into T; fills seconds, app_bytes, mib_s, timeline, fsync figures. */
int workload_run(const struct workload *w, const struct target *t, const struct progress *p,
		 struct run_result *r);

/* ---- scratch.c ---- */
struct bench_opts;
struct scratch;
int scratch_open(const struct bench_opts *o, struct scratch **out);
/* Every mount made and directory created so far goes; safe to call twice. */
void scratch_close(struct scratch *s);
/* The backing disks' directories (each one's private subdirectory). */
char **scratch_disks(struct scratch *s, int *n);
/* Make a fresh system of kind SYS ready to be written. */
int scratch_setup(struct scratch *s, enum bench_system sys, struct target *t);
/* Bytes in the run's files on each disk (raw, mergerfs), from st_size. */
int scratch_usage(struct scratch *s, uint64_t *bytes);
/* Unmount T's system and wait for its daemon (lsmfs: its store closed);
 * *cpu gets the daemon's CPU seconds over its life (user + system). */
int scratch_unmount(struct scratch *s, struct target *t, double *cpu);
/* Remove T's files from every disk. */
void scratch_remove(struct scratch *s, struct target *t);

/* ---- main.c: the options every module reads ---- */
struct bench_opts {
	int ndisks;
	char **dirs; /* given DIRs, or NULL: fresh ones under TMPDIR or /var/tmp */
	int ndirs;
	uint64_t size;
	uint64_t *bs;
	int nbs;
	int *files, nfiles;
	int *jobs, njobs;
	struct fsync_mode *fsync;
	int nfsync;
	bool sys[SYS_COUNT];
	int rounds;
	bool drop_caches;
	const char *out;
	const char *mount_opts, *mkfs_opts;
	char lsmfs_bin[4096], mkfs_bin[4096], mergerfs_bin[4096];
	char out_default[64]; /* lsmfs-bench-DATE-TIME */
};

/* ---- report.c ---- */
int report_write(const struct bench_opts *o, struct run_result *rs, int n, char **disks);
void report_table(FILE *f, const struct bench_opts *o, struct run_result *rs, int n);

/* Helpers shared by the modules (main.c). */
void bench_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double bench_now(void);

#endif
