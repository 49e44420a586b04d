/*
 * load.h: the load test (issue 14, "Load"): many processes doing mixed
 * metadata and data work on one lsmfs mount.
 *
 *   test_load.c  the run: a fresh filesystem per round, N forked workers
 *                for D seconds, the daemon's memory sampled, then unmount,
 *                fsck.lsmfs -n, a second mount and every worker's model
 *                checked again;
 *   worker.c     one worker: a seeded random mix of operations in its own
 *                directory and the shared one;
 *   model.c      its model of what it made, against which every result
 *                is checked (worker_int.h);
 *   lat.c        latency samples per operation type, and their
 *                nearest-rank p50/p99/max table;
 *   mem.c        the daemon's peak RSS and the bound its options set.
 *
 * Workers are processes (fork), so the kernel sees as many independent
 * callers as the round has workers; they share only struct wstatus (an
 * anonymous shared mapping the parent reads to name a hung worker's
 * operation, and through which it tells them to check again).
 */
#ifndef LSMFS_LOAD_H
#define LSMFS_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- operation types (one latency row each; OP_RENAME within a
 * directory, OP_RENAME_X across two, which the kernel serializes) ---- */
enum load_op {
	OP_CREATE, OP_OPEN, OP_CLOSE, OP_WRITE, OP_READ, OP_FSYNC, OP_FDATASYNC,
	OP_TRUNCATE, OP_RENAME, OP_RENAME_X, OP_LINK, OP_UNLINK, OP_MKDIR, OP_RMDIR,
	OP_READDIR, OP_STAT, OP_SETXATTR, OP_GETXATTR, OP_SYMLINK, OP_READLINK,
	NOPS
};
extern const char *const load_op_name[NOPS];

/* ---- lat.c: nanosecond samples per operation type ---- */
struct lat {
	uint64_t *v[NOPS];
	size_t n[NOPS], cap[NOPS];
};
/* Monotonic clock in nanoseconds. */
uint64_t lat_now(void);
/* Record one sample; 0 or -ENOMEM. */
int lat_add(struct lat *l, enum load_op op, uint64_t ns);
void lat_free(struct lat *l);
/* Write every sample to path (a file of our own format: per operation a
 * le64 count then the samples); 0 or a negative errno. */
int lat_save(const struct lat *l, const char *path);
/* Add the samples of a file lat_save wrote; 0, or a negative errno with
 * why in err (naming the file and offset). */
int lat_merge_file(struct lat *into, const char *path, char *err, size_t errlen);
/* Nearest-rank percentile of the sorted samples v[0..n): the value of
 * rank ceil(p/100 * n); 0 when n is 0. */
uint64_t lat_rank(const uint64_t *v, size_t n, unsigned p);
/* Sort every operation's samples and print the table (count, ops/s over
 * seconds, p50, p99, max in microseconds); returns the total count. */
uint64_t lat_print(struct lat *l, double seconds, FILE *out);

/* ---- mem.c: the daemon's memory ---- */
struct mem_sample {
	uint64_t hwm_kib;      /* VmHWM: peak resident set since start */
	uint64_t rss_kib;      /* VmRSS now */
	unsigned threads;      /* Threads now */
	uint64_t table_bytes;  /* index + filter blocks of every table now */
	unsigned tables;
};
/* Read /proc/pid/status and the store's tables (store_dir/ *.sst
 * footers); 0 or a negative errno with why in err. */
int mem_sample(pid_t pid, const char *store_dir, struct mem_sample *s, char *err,
	       size_t errlen);
/* The largest of each figure over a run. */
void mem_peak(struct mem_sample *peak, const struct mem_sample *s);
/* The bound the daemon's resident set must stay under, in KiB, for a
 * block cache of cache_mib, the tables and threads peak saw and a
 * resident set of base_kib just after mounting; its terms are printed to
 * out.  (mem.c says where each term comes from.) */
uint64_t mem_bound_kib(unsigned cache_mib, uint64_t base_kib, const struct mem_sample *peak,
		       FILE *out);

/* ---- worker.c ---- */
/* What the parent can see of a worker (a shared mapping). */
enum { W_RUNNING, W_DONE, W_VERIFIED, W_FAILED };
struct wstatus {
	volatile int phase;
	volatile int cmd;               /* from the parent: 'v' or 'q' */
	volatile uint64_t ops;          /* operations done */
	volatile uint64_t since_ns;     /* lat_now() when op started */
	char op[16];                    /* operation in progress */
	char failed[16];                /* W_FAILED: the check that failed */
	char path[240];
};

struct worker_cfg {
	int id;
	unsigned long seed;         /* the test's seed (printed on failure) */
	const char *mnt;
	uint64_t end_ns;            /* lat_now() when to stop */
	struct wstatus *status;
	const char *lat_path;       /* where to save the samples */
	int selftest;               /* change one byte of the model before the
				     * final check, which must then fail */
};
/* Run, verify, save samples, report W_DONE, then obey status->cmd: 'v'
 * verify every file again (W_VERIFIED), 'q' exit.
 * Exits the process: 0, or 1 after printing the failure. */
void worker_main(const struct worker_cfg *c) __attribute__((noreturn));

#endif
