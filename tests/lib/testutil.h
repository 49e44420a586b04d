/*
 * testutil: small helpers shared by the store test suites.
 *
 * - temporary directories (mkdtemp under /tmp) and rm -rf;
 * - a seeded PRNG (splitmix64), seeded from LSMFS_SEED or the clock; the
 *   seed is always printed ("seed=N") so a failure can be replayed with
 *   LSMFS_SEED=N;
 * - deterministic key and value generators;
 * - the soak flag (LSMFS_SOAK=1: run long soaks) and size scaling;
 * - a thread-safe collector for store_options.log / store_report_fn lines.
 *
 * Nothing here is thread safe unless said so; a PRNG belongs to one thread.
 */
#ifndef LSMFS_TESTS_TESTUTIL_H
#define LSMFS_TESTS_TESTUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- environment ---- */

/* true if LSMFS_SOAK is set to something other than "" or "0". */
bool tu_soak(void);
/* The value of an unsigned integer environment variable, or def. */
uint64_t tu_env_u64(const char *name, uint64_t def);
/*
 * The base seed of this run: LSMFS_SEED if set, else derived from the clock
 * and pid.  Printed once per process as "<what>: seed=N" (what may be NULL).
 */
uint64_t tu_seed(const char *what);
/* Monotonic clock in milliseconds. */
uint64_t tu_now_ms(void);

/* ---- directories ---- */

/* mkdtemp("/tmp/lsmfs-<tag>-XXXXXX"); malloc'd path; aborts on failure. */
char *tu_mkdtemp(const char *tag);
/* rm -rf path (no error if it is absent).  0 or a negative errno. */
int tu_rmrf(const char *path);
/* Copy every regular file of directory src into dst (created if missing). */
int tu_copy_dir(const char *src, const char *dst);

/* ---- PRNG (splitmix64) ---- */

struct tu_rng {
	uint64_t s;
};

void tu_rng_init(struct tu_rng *r, uint64_t seed);
uint64_t tu_rng_next(struct tu_rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t tu_rng_below(struct tu_rng *r, uint64_t n);
/* Uniform in [lo, hi]. */
uint64_t tu_rng_range(struct tu_rng *r, uint64_t lo, uint64_t hi);
/* true with probability num/den. */
bool tu_rng_chance(struct tu_rng *r, uint64_t num, uint64_t den);
/* One-shot mix of a 64-bit value (splitmix64 finaliser). */
uint64_t tu_mix64(uint64_t x);

/* ---- data ---- */

/* FNV-1a 64 over bytes. */
uint64_t tu_hash(const void *p, size_t len);
/* Fill buf with len deterministic pseudo-random bytes derived from seed. */
void tu_fill(void *buf, size_t len, uint64_t seed);

/*
 * Key number idx of a key space: deterministic, variable length (1..~120
 * bytes), binary (may hold 0x00 and 0xff), and groups of keys share
 * prefixes: for each group g = idx / 4 there is a base b(g) and the keys are
 * b, b + "\x00", b + "a", b + "a" + long tail, so some keys are prefixes of
 * others.  Returns the length; buf must hold TU_KEY_MAX bytes.
 */
#define TU_KEY_MAX 160
size_t tu_key(uint8_t *buf, uint64_t idx);
/* A "random" probe key: a key of the space, or one with a byte appended,
 * dropped or changed (so often not in the space).  Returns the length. */
size_t tu_probe_key(struct tu_rng *r, uint8_t *buf, uint64_t nkeys);

/* Value length 0..max with a skew towards short values. */
size_t tu_value_len(struct tu_rng *r, size_t max);

/* memcmp order, shorter first on a common prefix (the store's order). */
int tu_keycmp(const void *a, size_t alen, const void *b, size_t blen);

/* Printable rendering of a key for messages (hex of non-printables);
 * returns buf. */
char *tu_fmtkey(char *buf, size_t cap, const void *key, size_t len);

/* ---- log collector ---- */

/*
 * Collects lines from store_options.log (tu_log_fn) or a store_report_fn
 * (same signature).  Thread safe.  Optionally echoes to stderr.
 */
struct tu_log {
	pthread_mutex_t mu;
	char **lines;
	size_t n, cap;
	bool echo;
};

void tu_log_init(struct tu_log *l, bool echo);
void tu_log_free(struct tu_log *l);
void tu_log_clear(struct tu_log *l);
void tu_log_fn(void *ctx, const char *msg);
/* true if some line contains needle. */
bool tu_log_contains(struct tu_log *l, const char *needle);
size_t tu_log_count(struct tu_log *l);
/* Print every line to stderr with a prefix. */
void tu_log_dump(struct tu_log *l, const char *prefix);

/* ---- self-describing values ---- */

/*
 * A value that names the write that made it: le64 op id | le32 sub-op |
 * le32 length | bytes derived from (op id, sub-op).  vlen >= TU_VAL_HDR.
 * Decoding fails on anything we could not have written (garbage).
 */
#define TU_VAL_HDR 16
void tu_val_make(uint8_t *buf, uint64_t opid, uint32_t sub, uint32_t vlen);
bool tu_val_decode(const void *v, size_t len, uint64_t *opid, uint32_t *sub);

/* ---- durability model ---- */

/*
 * What a store may hold after a crash, given what it was asked to do.
 * Ops are numbered 0, 1, 2, ... in the order they were issued; op n writes
 * keys (indices into the tu_key() space) with values tu_val_make(n, sub,
 * vlen) or deletes them (vlen < 0).  An op is issued, then either acked
 * (the call returned 0) or failed (it returned an error: it may or may not
 * have been applied).  Durable: an acked op with the durable flag (a SYNC
 * write, or options.sync), or acked before a successful store_sync()
 * (tu_dm_sync_all) and after the last power cut (tu_dm_power_cut), or -
 * when verifying with all_acked_durable - any acked op (no power was lost).
 *
 * tu_dm_verify() reads every key of the space and scans the store, and
 * checks per key: the value is one the key's writes produced (never
 * garbage, never another key's), it is the key's last durable value or a
 * value written after it (acked or failed), and no batch is half applied.
 * After power cuts, also that the store holds a prefix of the ops: of the
 * ops issued between two cuts, every acked one up to the newest op seen.
 */
struct tu_dm;

struct tu_dm *tu_dm_new(uint32_t nkeys);
void tu_dm_free(struct tu_dm *dm);
/* Register op number tu_dm_next_op(dm) writing nsub keys; returns its id. */
uint64_t tu_dm_issue(struct tu_dm *dm, uint32_t nsub, const uint32_t *keys,
		     const int32_t *vlens);
uint64_t tu_dm_next_op(const struct tu_dm *dm);
void tu_dm_ack(struct tu_dm *dm, uint64_t opid, bool durable);
void tu_dm_fail(struct tu_dm *dm, uint64_t opid);
/* A successful store_sync(): every op acked so far (since the last power
 * cut) is durable. */
void tu_dm_sync_all(struct tu_dm *dm);
/* The power was cut: acked ops that were not durable may be lost, and a
 * later store_sync() does not make them durable. */
void tu_dm_power_cut(struct tu_dm *dm);
/* Number of failed ops. */
uint64_t tu_dm_failed(const struct tu_dm *dm);
/* The exact current value of key if no op failed and no power was cut so
 * far: 1 and the op/sub that wrote it, or 0 if absent; -1 if unknown. */
int tu_dm_expected(const struct tu_dm *dm, uint32_t key, uint64_t *opid,
		   uint32_t *sub, uint32_t *vlen);
/* 0 if the store is consistent with the model; else -1 and a message. */
int tu_dm_verify(struct tu_dm *dm, struct store *st, bool all_acked_durable,
		 char *err, size_t errlen);
/* Whether tu_dm_verify checks for a prefix after power cuts (default on). */
void tu_dm_check_prefix(struct tu_dm *dm, bool on);

/* ---- a random workload over the durability model ---- */

/*
 * Drives a store with puts, deletes, batches (some with STORE_WRITE_SYNC),
 * store_sync, gets (checked against the model while no op failed),
 * flushes, compactions and close + reopen, recording every write in a
 * tu_dm.  Deterministic for a seed, up to background timing.
 */
struct tu_wl_config {
	uint64_t seed;
	uint32_t nkeys;
	uint32_t max_value;     /* >= TU_VAL_HDR */
	unsigned sync_write_pct;  /* % of writes with STORE_WRITE_SYNC */
	unsigned store_sync_permille;
	unsigned flush_permille;
	unsigned compact_permille;
	unsigned reopen_permille;
	const char *dir;
	struct store_options opt; /* used for every open */
};

struct tu_wl {
	struct tu_wl_config cfg;
	struct tu_rng rng;
	struct tu_dm *dm;
	struct store *st;   /* NULL when not open */
	uint64_t steps;
	const char *last_op; /* name of the last op run */
	int first_error;     /* first error any op returned (0: none) */
	const char *first_error_op;
	uint64_t nerrors;
	char mismatch[512];  /* a get that disagreed with the model */
};

/* Init (does not open). */
void tu_wl_init(struct tu_wl *wl, const struct tu_wl_config *cfg);
/* Open the store if it is closed; 0 or the error (recorded). */
int tu_wl_open(struct tu_wl *wl);
/* One op (opens first if closed).  Returns what the store call returned. */
int tu_wl_step(struct tu_wl *wl);
/* Close if open; returns store_close()'s result. */
int tu_wl_close(struct tu_wl *wl);
void tu_wl_free(struct tu_wl *wl);

#endif
