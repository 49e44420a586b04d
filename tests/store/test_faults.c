/*
 * test_faults: I/O errors (suite "faults").
 *
 * FAULT_ENOSPC, FAULT_EIO_WRITE and FAULT_EIO_SYNC are armed at points
 * spread over a seeded workload (tu_wl on fault_env; small buffers so
 * flushes and compactions run in the background).  The workload goes on
 * after errors.  Checks:
 *   - nothing fails before the fault strikes;
 *   - every error a call returns is the fault's errno (-ENOSPC for
 *     FAULT_ENOSPC, -EIO for the others), whether the call met it itself or
 *     a background flush/compaction met it first (a sticky error);
 *   - once the fault has struck, a put + store_sync fails: an error is
 *     never swallowed;
 *   - after fault_env_clear() a few more steps run: each succeeds or fails
 *     with the fault's errno (a sticky error), then store_close;
 *   - the store reopens, and holds every write it acknowledged (variant
 *     "close": no power lost, so every acked write must be there) or every
 *     durable write (variant "cut": fault_env_power_cut() after the close,
 *     so only SYNC writes and writes before a successful store_sync count);
 *     values are never garbage and no batch is half applied;
 *   - the reopened store takes a put + get and closes cleanly.
 *
 * Environment: LSMFS_SEED, LSMFS_FAULTS_POINTS (per kind and variant),
 * LSMFS_FAULTS_OPS, LSMFS_FAULTS_AFTER (replay one fault point),
 * LSMFS_SOAK=1.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_env.h"
#include "store.h"
#include "testutil.h"

/* The run's base seed (LSMFS_SEED or the clock), printed once. */
static uint64_t base_seed;

#define DIR "/db"

struct fcase {
	const char *name;
	enum fault_kind kind;
	int err;      /* the errno callers must see */
	bool cut;     /* power cut after the close */
};

static const struct fcase cases[] = {
	{ "enospc/close", FAULT_ENOSPC, -ENOSPC, false },
	{ "eio-write/close", FAULT_EIO_WRITE, -EIO, false },
	{ "eio-sync/close", FAULT_EIO_SYNC, -EIO, false },
	{ "enospc/cut", FAULT_ENOSPC, -ENOSPC, true },
	{ "eio-write/cut", FAULT_EIO_WRITE, -EIO, true },
	{ "eio-sync/cut", FAULT_EIO_SYNC, -EIO, true },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void configure(struct tu_wl_config *cfg, uint64_t seed,
		      struct fault_env *fe, struct tu_log *log)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = seed;
	cfg->nkeys = 400;
	cfg->max_value = 400;
	cfg->sync_write_pct = 10;
	cfg->store_sync_permille = 30;
	cfg->flush_permille = 10;
	cfg->compact_permille = 5;
	cfg->reopen_permille = 3;
	cfg->dir = DIR;
	store_options_init(&cfg->opt);
	cfg->opt.write_buffer_size = 16 * 1024;
	cfg->opt.target_file_size = 16 * 1024;
	cfg->opt.level_base_bytes = 64 * 1024;
	cfg->opt.block_size = 1024;
	cfg->opt.l0_compaction_trigger = 2;
	cfg->opt.env = fault_env_env(fe);
	cfg->opt.log = tu_log_fn;
	cfg->opt.log_ctx = log;
}

#define FMSG "faults %s seed=%" PRIu64 " after=%" PRIu64 ": "
#define FARGS c->name, seed, after

struct outcome {
	uint64_t env_ops;
	bool struck;
	bool error_seen;
};

static void run_one(const struct fcase *c, uint64_t seed, uint64_t nops,
		    uint64_t after, struct outcome *res)
{
	struct fault_env *fe = fault_env_new();
	ck_assert_ptr_nonnull(fe);
	struct tu_log log;
	tu_log_init(&log, false);
	struct tu_wl_config cfg;
	configure(&cfg, seed, fe, &log);
	struct tu_wl wl;
	tu_wl_init(&wl, &cfg);
	if (after != UINT64_MAX)
		fault_env_arm(fe, c->kind, after);

	uint64_t struck_at = 0;
	bool probed = false;
	while (wl.steps < nops) {
		bool was_struck = fault_env_struck(fe);
		int rc = tu_wl_step(&wl);
		ck_assert_msg(!wl.mismatch[0], FMSG "%s", FARGS, wl.mismatch);
		if (rc) {
			ck_assert_msg(was_struck || fault_env_struck(fe),
				      FMSG "step %" PRIu64 " (%s) failed with %d "
				      "before any fault", FARGS, wl.steps,
				      wl.last_op, rc);
			ck_assert_msg(rc == c->err,
				      FMSG "step %" PRIu64 " (%s) failed with %d, "
				      "want %d", FARGS, wl.steps, wl.last_op, rc,
				      c->err);
		}
		if (fault_env_struck(fe) && !struck_at)
			struck_at = wl.steps;
		/* Some steps after the fault struck: stop, and probe. */
		if (struck_at && wl.steps >= struck_at + 20)
			break;
	}
	res->env_ops = fault_env_ops(fe);
	if (after == UINT64_MAX && wl.st) {
		struct store_stats ss;
		store_get_stats(wl.st, &ss);
		fprintf(stderr, "  fault-free run: %" PRIu64 " flushes, %" PRIu64
			" compactions since the last open; tables per level:",
			ss.flushes, ss.compactions);
		for (int l = 0; l < STORE_MAX_LEVELS; l++)
			fprintf(stderr, " %" PRIu64, ss.level_files[l]);
		fprintf(stderr, "\n");
	}
	res->struck = fault_env_struck(fe);
	if (res->struck && wl.st) {
		/* The fault is still in force: a write made durable must fail.
		 * The probe is a model write like any other. */
		uint32_t k = 0;
		int32_t vlen = 100;
		uint64_t id = tu_dm_issue(wl.dm, 1, &k, &vlen);
		uint8_t key[TU_KEY_MAX], val[100];
		size_t kl = tu_key(key, k);
		tu_val_make(val, id, 0, (uint32_t)vlen);
		int rc = store_put(wl.st, key, kl, val, (size_t)vlen, 0);
		if (rc == 0) {
			tu_dm_ack(wl.dm, id, false);
			rc = store_sync(wl.st);
			if (rc == 0)
				tu_dm_sync_all(wl.dm);
		} else {
			tu_dm_fail(wl.dm, id);
		}
		ck_assert_msg(rc != 0, FMSG "put + sync succeeded while the "
			      "fault is in force", FARGS);
		ck_assert_msg(rc == c->err, FMSG "put + sync failed with %d, "
			      "want %d", FARGS, rc, c->err);
		probed = true;
	}
	res->error_seen = wl.nerrors > 0 || probed;

	/* The disk works again.  Writes may still fail (sticky error). */
	fault_env_clear(fe);
	for (int i = 0; i < 10; i++) {
		int rc = tu_wl_step(&wl);
		ck_assert_msg(rc == 0 || rc == c->err,
			      FMSG "after clear: step %" PRIu64 " (%s) failed "
			      "with %d", FARGS, wl.steps, wl.last_op, rc);
	}
	int crc = tu_wl_close(&wl);
	/* A background flush or compaction may meet the fault after the loop
	 * looked (res->struck stays what the loop saw, for the check that a
	 * call reported it); only a fault that never struck at all must leave
	 * close clean. */
	if (!fault_env_struck(fe))
		ck_assert_msg(crc == 0, FMSG "close: %d", FARGS, crc);
	if (c->cut) {
		fault_env_power_cut(fe);
		tu_dm_power_cut(wl.dm);
	}

	tu_log_clear(&log);
	struct store *st = NULL;
	int rc = store_open(DIR, &cfg.opt, &st);
	if (rc)
		tu_log_dump(&log, "  store log: ");
	ck_assert_msg(rc == 0, FMSG "reopen: %d", FARGS, rc);
	char err[512];
	rc = tu_dm_verify(wl.dm, st, !c->cut, err, sizeof(err));
	if (rc)
		tu_log_dump(&log, "  store log: ");
	ck_assert_msg(rc == 0, FMSG "after reopen (replay: LSMFS_SEED=<base> "
		      "LSMFS_FAULTS_AFTER=%" PRIu64 "): %s", FARGS, after, err);

	rc = store_put(st, "after-fault", 11, "ok", 2, STORE_WRITE_SYNC);
	ck_assert_msg(rc == 0, FMSG "put after reopen: %d", FARGS, rc);
	void *val = NULL;
	size_t vlen = 0;
	rc = store_get(st, NULL, "after-fault", 11, &val, &vlen);
	ck_assert_msg(rc == 0 && vlen == 2 && memcmp(val, "ok", 2) == 0,
		      FMSG "get after reopen: %d", FARGS, rc);
	free(val);
	rc = store_close(st);
	ck_assert_msg(rc == 0, FMSG "close after reopen: %d", FARGS, rc);
	tu_wl_free(&wl);
	tu_log_free(&log);
	fault_env_free(fe);
}

START_TEST(test_faults)
{
	const struct fcase *c = &cases[_i];
	uint64_t base = base_seed;
	uint64_t seed = tu_mix64(base + (uint64_t)_i);
	uint64_t nops = tu_env_u64("LSMFS_FAULTS_OPS", 1500);
	uint64_t npoints = tu_env_u64("LSMFS_FAULTS_POINTS", 300);
	if (tu_soak()) {
		nops *= 4;
		npoints *= 10;
	}
	uint64_t t0 = tu_now_ms();
	struct outcome o;
	run_one(c, seed, nops, UINT64_MAX, &o);
	uint64_t total = o.env_ops;
	fprintf(stderr, "faults %s: seed=%" PRIu64 " (base %" PRIu64 "), %" PRIu64
		" env ops without faults\n", c->name, seed, base, total);
	struct tu_rng rng;
	tu_rng_init(&rng, seed ^ 0x4321);
	uint64_t only = tu_env_u64("LSMFS_FAULTS_AFTER", UINT64_MAX);
	uint64_t runs = 0, struck = 0;
	for (uint64_t i = 0; i < npoints; i++) {
		uint64_t after;
		if (only != UINT64_MAX) {
			if (i > 0)
				break;
			after = only;
		} else if (i < 5) {
			after = i; /* while creating the store */
		} else {
			after = tu_rng_below(&rng, total + 1);
		}
		run_one(c, seed, nops, after, &o);
		runs++;
		struck += o.struck;
		if (o.struck)
			ck_assert_msg(o.error_seen, "faults %s seed=%" PRIu64
				      " after=%" PRIu64 ": the fault struck but no "
				      "call returned an error", c->name, seed, after);
	}
	fprintf(stderr, "faults %s: %" PRIu64 " runs (%" PRIu64 " struck) in %.1f s\n",
		c->name, runs, struck, (double)(tu_now_ms() - t0) / 1000.0);
}
END_TEST

static Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");
	tcase_set_timeout(tc, tu_soak() ? 36000 : 1200);
	tcase_add_loop_test(tc, test_faults, 0, (int)NCASES);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* One base seed for every case (the cases run in forked children). */
	base_seed = tu_seed("faults");
	SRunner *sr = srunner_create(faults_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
