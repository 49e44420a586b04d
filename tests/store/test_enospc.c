/*
 * test_enospc: a full disk does not wedge the store (suite "store";
 * store.h "Errors that pass and errors that stay", FORMAT.md "Full disk").
 *
 * On fault_env, with a capacity (a real full disk: appends fail part way,
 * freeing space lets them through again) or with FAULT_ENOSPC /
 * FAULT_EIO_WRITE armed at seeded points:
 *   - log: writes fail with -ENOSPC while the disk is full, and succeed
 *     again once it has room, without reopening; every acknowledged write
 *     is there, before and after a reopen, and no failed write is;
 *   - faults: a fault striking anywhere (commit log, flush, compaction,
 *     MANIFEST: each is seen to be hit) passes once cleared: a put + sync
 *     succeeds within a few seconds, close returns 0, and the reopened store
 *     holds every acknowledged write;
 *   - reserve: on a full disk, STORE_WRITE_RESERVE deletions succeed (the
 *     RESERVE file shrinks), ordinary puts fail with -ENOSPC, and once
 *     there is room the reserve is whole again and puts succeed;
 *   - delay_where: records of puts not synced wait in memory (log_delay_us)
 *     only with the reserve whole, go out at a sync, and the flusher
 *     writes them after the delay;
 *   - reopen_full: a store whose disk is full opens read-write, replays its
 *     logs into memory, takes reserve deletions, closes and opens again on
 *     the still-full disk, and flushes once the disk has room;
 *   - reopen_reserve: with a reserve that can hold them, recovery's writes
 *     on a full disk draw on it and the replayed writes go to a table.
 *
 * Environment: LSMFS_SEED, LSMFS_ENOSPC_POINTS (fault points per kind).
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_env.h"
#include "store.h"
#include "testutil.h"

static uint64_t base_seed;

#define DIR "/db"
#define VLEN 150

struct rig {
	struct fault_env *fe;
	struct tu_log log;
	struct store_options opt;
	struct store *st;
	struct tu_dm *dm;
	uint32_t nkeys;
	struct tu_rng rng;
};

static void rig_init(struct rig *r, uint32_t nkeys, size_t wbs, uint64_t reserve,
		     uint64_t seed)
{
	memset(r, 0, sizeof(*r));
	r->fe = fault_env_new();
	ck_assert_ptr_nonnull(r->fe);
	tu_log_init(&r->log, false);
	store_options_init(&r->opt);
	r->opt.write_buffer_size = wbs;
	r->opt.target_file_size = 16 * 1024;
	r->opt.level_base_bytes = 64 * 1024;
	r->opt.block_size = 1024;
	r->opt.l0_compaction_trigger = 2;
	r->opt.reserve_bytes = reserve;
	r->opt.env = fault_env_env(r->fe);
	r->opt.log = tu_log_fn;
	r->opt.log_ctx = &r->log;
	r->dm = tu_dm_new(nkeys);
	r->nkeys = nkeys;
	tu_rng_init(&r->rng, seed);
}

static void rig_open(struct rig *r)
{
	int rc = store_open(DIR, &r->opt, &r->st);
	if (rc)
		tu_log_dump(&r->log, "  store log: ");
	ck_assert_msg(rc == 0, "store_open: %d (%s)", rc, strerror(-rc));
}

static int rig_close(struct rig *r)
{
	int rc = store_close(r->st);
	r->st = NULL;
	return rc;
}

static void rig_free(struct rig *r)
{
	if (r->st)
		(void)rig_close(r); /* a failed check left it open */
	tu_dm_free(r->dm);
	tu_log_free(&r->log);
	fault_env_free(r->fe);
}

/* One put of key k through the model; returns the store's answer. */
static int put_key(struct rig *r, uint32_t k, unsigned flags)
{
	int32_t vlen = VLEN;
	uint64_t id = tu_dm_issue(r->dm, 1, &k, &vlen);
	uint8_t key[TU_KEY_MAX], val[VLEN];
	size_t kl = tu_key(key, k);
	tu_val_make(val, id, 0, VLEN);
	int rc = store_put(r->st, key, kl, val, VLEN, flags);
	if (rc == 0)
		tu_dm_ack(r->dm, id, (flags & STORE_WRITE_SYNC) != 0);
	else
		tu_dm_fail(r->dm, id);
	return rc;
}

static int delete_key(struct rig *r, uint32_t k, unsigned flags)
{
	int32_t vlen = -1;
	uint64_t id = tu_dm_issue(r->dm, 1, &k, &vlen);
	uint8_t key[TU_KEY_MAX];
	size_t kl = tu_key(key, k);
	int rc = store_delete(r->st, key, kl, flags);
	if (rc == 0)
		tu_dm_ack(r->dm, id, (flags & STORE_WRITE_SYNC) != 0);
	else
		tu_dm_fail(r->dm, id);
	return rc;
}

static void verify(struct rig *r, const char *when)
{
	char err[512];
	int rc = tu_dm_verify(r->dm, r->st, true, err, sizeof(err));
	if (rc)
		tu_log_dump(&r->log, "  store log: ");
	ck_assert_msg(rc == 0, "%s (seed=%" PRIu64 "): %s", when, base_seed, err);
}

/* Puts until one succeeds, for at most ms (the background thread retries
 * a failed flush after a back-off).  The last result. */
static int put_until_ok(struct rig *r, uint32_t k, unsigned flags, uint64_t ms)
{
	uint64_t t0 = tu_now_ms();
	for (;;) {
		int rc = put_key(r, k, flags);
		if (rc == 0 || tu_now_ms() - t0 > ms)
			return rc;
		ck_assert_msg(rc == -ENOSPC || rc == -EIO,
			      "put while recovering: %d (%s)", rc, strerror(-rc));
		usleep(10 * 1000);
	}
}

/* The log and reserve cases run with every write's record handed to the
 * OS at once, and delayed (options.log_delay_us; _i picks).  Records are
 * delayed only with a reserve that can take them (FORMAT.md "Delayed log
 * writes"): the delayed runs have one of DELAY_RESERVE bytes. */
static const uint64_t log_delays[] = { 0, 2000 };
#define DELAY_RESERVE (256 * 1024)

/* The disk fills under a stream of puts and empties again. */
START_TEST(test_log_full_then_room)
{
	struct rig r;
	rig_init(&r, 400, 16 * 1024, _i ? DELAY_RESERVE : 0, base_seed);
	r.opt.log_delay_us = log_delays[_i];
	rig_open(&r);
	for (uint32_t i = 0; i < 200; i++)
		ck_assert_int_eq(put_key(&r, i, 0), 0);
	/* Room for a few dozen more records: flushes and the log fill it. */
	fault_env_set_capacity(r.fe, fault_env_used(r.fe) + 24 * 1024);
	unsigned failed = 0, ok = 0;
	for (uint32_t i = 0; i < 2000 && failed < 50; i++) {
		int rc = put_key(&r, (uint32_t)tu_rng_below(&r.rng, r.nkeys), 0);
		ck_assert_msg(rc == 0 || rc == -ENOSPC, "put on a full disk: %d (%s)",
			      rc, strerror(-rc));
		if (rc)
			failed++;
		else
			ok++;
	}
	ck_assert_msg(failed >= 50, "the disk never filled (%u puts ok)", ok);
	ck_assert_uint_gt(fault_env_nospace(r.fe), 0);
	/* Reads still work, and store_sync has nothing it cannot do. */
	verify(&r, "while full");

	fault_env_set_capacity(r.fe, 0);
	uint64_t t0 = tu_now_ms();
	int rc = put_until_ok(&r, 1, STORE_WRITE_SYNC, 10000);
	ck_assert_msg(rc == 0, "a put still fails with %d 10 s after space came "
		      "back: the error is sticky", rc);
	fprintf(stderr, "enospc log: %u puts failed on the full disk, %u went "
		"through; writes pass again %" PRIu64 " ms after space came back\n",
		failed, ok, tu_now_ms() - t0);
	for (uint32_t i = 0; i < 300; i++) {
		rc = put_until_ok(&r, (uint32_t)tu_rng_below(&r.rng, r.nkeys), 0, 5000);
		ck_assert_msg(rc == 0, "put %u after space came back: %d", i, rc);
	}
	ck_assert_int_eq(store_flush(r.st), 0);
	ck_assert_int_eq(store_sync(r.st), 0);
	verify(&r, "after space came back");
	ck_assert_int_eq(rig_close(&r), 0);
	/* Every failed write was cut from its log: a strict model. */
	tu_log_clear(&r.log);
	rig_open(&r);
	verify(&r, "after reopen");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_free(&r);
}
END_TEST

/* Faults at seeded points; each must pass once cleared. */
START_TEST(test_faults_pass)
{
	const enum fault_kind kinds[] = { FAULT_ENOSPC, FAULT_EIO_WRITE };
	const char *names[] = { "enospc", "eio-write" };
	enum fault_kind kind = kinds[_i];
	int err = kind == FAULT_ENOSPC ? -ENOSPC : -EIO;
	uint64_t npoints = tu_env_u64("LSMFS_ENOSPC_POINTS", 60);
	if (tu_soak())
		npoints *= 10;
	/* What the faults hit, from the store's reports. */
	const char *sites[] = { "commit log write failed", "flush failed",
				"compaction of level", "cannot write MANIFEST" };
	unsigned hit[4] = { 0 };
	struct tu_rng pick;
	tu_rng_init(&pick, base_seed ^ (uint64_t)_i);
	uint64_t total = 0;
	uint64_t p;
	/* Past npoints, go on (up to 10x) until every site was hit: a fault
	 * in the MANIFEST is rare among random points. */
	for (p = 0; p <= npoints || (p <= 10 * npoints &&
				     (!hit[0] || !hit[1] || !hit[2] || !hit[3])); p++) {
		/* Point 0 is a fault-free run that measures the env ops. */
		uint64_t after = p ? tu_rng_below(&pick, total + 1) : UINT64_MAX;
		struct tu_log log;
		tu_log_init(&log, false);
		struct fault_env *fe = fault_env_new();
		struct tu_wl_config cfg;
		memset(&cfg, 0, sizeof(cfg));
		cfg.seed = tu_mix64(base_seed + p);
		cfg.nkeys = 300;
		cfg.max_value = 300;
		cfg.sync_write_pct = 10;
		cfg.store_sync_permille = 30;
		cfg.flush_permille = 10;
		cfg.compact_permille = 5;
		cfg.dir = DIR;
		store_options_init(&cfg.opt);
		cfg.opt.write_buffer_size = 16 * 1024;
		cfg.opt.target_file_size = 16 * 1024;
		cfg.opt.level_base_bytes = 64 * 1024;
		cfg.opt.block_size = 1024;
		cfg.opt.l0_compaction_trigger = 2;
		cfg.opt.env = fault_env_env(fe);
		cfg.opt.log = tu_log_fn;
		cfg.opt.log_ctx = &log;
		struct tu_wl wl;
		tu_wl_init(&wl, &cfg);
		if (after != UINT64_MAX)
			fault_env_arm(fe, kind, after);
		uint64_t struck_at = 0;
		while (wl.steps < 1200) {
			int rc = tu_wl_step(&wl);
			ck_assert_msg(rc == 0 || rc == err || rc == -ENOSPC,
				      "%s seed=%" PRIu64 " after=%" PRIu64 ": step %" PRIu64
				      " (%s): %d", names[_i], base_seed, after, wl.steps,
				      wl.last_op, rc);
			if (fault_env_struck(fe) && !struck_at)
				struck_at = wl.steps;
			if (struck_at && wl.steps >= struck_at + 20)
				break;
		}
		if (after == UINT64_MAX)
			total = fault_env_ops(fe);
		fault_env_clear(fe);
		for (size_t s = 0; s < 4; s++)
			hit[s] += tu_log_contains(&log, sites[s]);
		ck_assert_int_eq(tu_wl_open(&wl), 0);
		/* The disk works again: within a few seconds (the back-off),
		 * a synced write goes through without a reopen. */
		uint64_t t0 = tu_now_ms();
		int rc;
		for (;;) {
			uint32_t k = 0;
			int32_t vlen = 64;
			uint64_t id = tu_dm_issue(wl.dm, 1, &k, &vlen);
			uint8_t key[TU_KEY_MAX], val[64];
			size_t kl = tu_key(key, k);
			tu_val_make(val, id, 0, 64);
			rc = store_put(wl.st, key, kl, val, 64, STORE_WRITE_SYNC);
			if (rc == 0) {
				tu_dm_ack(wl.dm, id, true);
				rc = store_flush(wl.st);
			} else {
				tu_dm_fail(wl.dm, id);
			}
			if (rc == 0 || tu_now_ms() - t0 > 10000)
				break;
			usleep(20 * 1000);
		}
		if (rc)
			tu_log_dump(&log, "  store log: ");
		ck_assert_msg(rc == 0, "%s seed=%" PRIu64 " after=%" PRIu64 ": a put + "
			      "flush still fails with %d 10 s after the fault cleared",
			      names[_i], base_seed, after, rc);
		rc = tu_wl_close(&wl);
		ck_assert_msg(rc == 0, "%s after=%" PRIu64 ": close: %d", names[_i],
			      after, rc);
		struct store *st = NULL;
		rc = store_open(DIR, &cfg.opt, &st);
		ck_assert_msg(rc == 0, "%s after=%" PRIu64 ": reopen: %d", names[_i],
			      after, rc);
		char msg[512];
		rc = tu_dm_verify(wl.dm, st, true, msg, sizeof(msg));
		if (rc)
			tu_log_dump(&log, "  store log: ");
		ck_assert_msg(rc == 0, "%s seed=%" PRIu64 " after=%" PRIu64 ": %s",
			      names[_i], base_seed, after, msg);
		ck_assert_int_eq(store_close(st), 0);
		tu_wl_free(&wl);
		tu_log_free(&log);
		fault_env_free(fe);
	}
	fprintf(stderr, "enospc faults %s: seed=%" PRIu64 ", %" PRIu64 " points; runs "
		"that hit the log %u, a flush %u, a compaction %u, the MANIFEST %u\n",
		names[_i], base_seed, p - 1, hit[0], hit[1], hit[2], hit[3]);
	for (size_t s = 0; s < 4; s++)
		ck_assert_msg(hit[s] > 0, "%s: no fault point hit '%s' (seed=%" PRIu64
			      "): raise LSMFS_ENOSPC_POINTS", names[_i], sites[s],
			      base_seed);
}
END_TEST

/* Deletions go on with the disk full; ordinary writes wait for room. */
START_TEST(test_reserve)
{
	struct rig r;
	const uint64_t reserve = _i ? DELAY_RESERVE : 64 * 1024;
	rig_init(&r, 600, 64 * 1024, reserve, base_seed);
	r.opt.log_delay_us = log_delays[_i];
	rig_open(&r);
	uint64_t have = 0;
	ck_assert_int_eq(fault_env_file_size(r.fe, DIR "/RESERVE", &have), 0);
	ck_assert_uint_eq(have, reserve);
	for (uint32_t i = 0; i < r.nkeys; i++)
		ck_assert_int_eq(put_key(&r, i, 0), 0);
	ck_assert_int_eq(store_flush(&*r.st), 0);
	/* Full: not a byte left. */
	fault_env_set_capacity(r.fe, fault_env_used(r.fe));
	if (log_delays[_i]) {
		/* Delayed with the reserve whole, this put is acknowledged;
		 * its record goes out with the reserve's space. */
		ck_assert_int_eq(put_key(&r, 0, 0), 0);
		ck_assert_int_eq(store_sync(r.st), 0);
		ck_assert(tu_log_contains(&r.log, "given back for a deletion"));
	}
	ck_assert_int_eq(put_key(&r, 0, 0), -ENOSPC);
	for (uint32_t i = 0; i < r.nkeys; i += 2) {
		int rc = delete_key(&r, i, STORE_WRITE_RESERVE);
		if (rc)
			tu_log_dump(&r.log, "  store log: ");
		ck_assert_msg(rc == 0, "reserve delete %u of %u on a full disk: %d (%s)",
			      i / 2, r.nkeys / 2, rc, strerror(-rc));
		if (i % 64 == 0) {
			/* Ordinary writes may not eat what the deletes freed. */
			rc = put_key(&r, i + 1, 0);
			ck_assert_msg(rc == -ENOSPC, "ordinary put on a full disk: %d", rc);
		}
	}
	ck_assert_int_eq(fault_env_file_size(r.fe, DIR "/RESERVE", &have), 0);
	ck_assert_msg(have < reserve, "RESERVE still %" PRIu64 " bytes", have);
	ck_assert(tu_log_contains(&r.log, "given back for a deletion"));
	verify(&r, "deletes on a full disk");

	fault_env_set_capacity(r.fe, 0);
	int rc = put_until_ok(&r, 1, STORE_WRITE_SYNC, 10000);
	ck_assert_msg(rc == 0, "put after space came back: %d", rc);
	ck_assert_int_eq(fault_env_file_size(r.fe, DIR "/RESERVE", &have), 0);
	ck_assert_uint_eq(have, reserve); /* whole again */
	ck_assert_int_eq(store_flush(r.st), 0);
	verify(&r, "after space came back");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_open(&r);
	verify(&r, "after reopen");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_free(&r);
}
END_TEST

static uint64_t wal_bytes(struct rig *r)
{
	struct store_stats s;
	store_get_stats(r->st, &s);
	return s.wal_bytes_written;
}

/*
 * Delayed log writes hold records only where FORMAT.md says: with the
 * reserve whole, a put that is not synced reaches no log until a sync (or
 * the delay); without a reserve that can take them, nothing is delayed;
 * the flusher writes them out once the delay has passed.
 */
START_TEST(test_delay_where)
{
	struct rig r;
	rig_init(&r, 100, 64 * 1024, DELAY_RESERVE, base_seed);
	r.opt.log_delay_us = 600000000; /* no flusher in this test's time */
	rig_open(&r);
	uint64_t w0 = wal_bytes(&r);
	for (uint32_t i = 0; i < 20; i++)
		ck_assert_int_eq(put_key(&r, i, 0), 0);
	ck_assert_msg(wal_bytes(&r) == w0, "20 puts not synced wrote %" PRIu64
		      " log bytes with a 600 s delay", wal_bytes(&r) - w0);
	verify(&r, "delayed puts, read back");
	ck_assert_int_eq(store_sync(r.st), 0);
	ck_assert_msg(wal_bytes(&r) > w0 + 20 * VLEN, "store_sync wrote %" PRIu64
		      " log bytes for 20 delayed puts", wal_bytes(&r) - w0);
	uint64_t w1 = wal_bytes(&r);
	ck_assert_int_eq(put_key(&r, 1, STORE_WRITE_SYNC), 0);
	ck_assert_msg(wal_bytes(&r) > w1, "a synced put was delayed");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_open(&r);
	verify(&r, "after reopen");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_free(&r);

	/* No reserve: nothing waits. */
	rig_init(&r, 100, 64 * 1024, 0, base_seed);
	r.opt.log_delay_us = 600000000;
	rig_open(&r);
	w0 = wal_bytes(&r);
	ck_assert_int_eq(put_key(&r, 0, 0), 0);
	ck_assert_msg(wal_bytes(&r) > w0, "a put was delayed with no reserve to take it");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_free(&r);

	/* The flusher: out within the delay (2 ms), give or take a
	 * scheduler (up to 5 s here). */
	rig_init(&r, 100, 64 * 1024, DELAY_RESERVE, base_seed);
	r.opt.log_delay_us = 2000;
	rig_open(&r);
	w0 = wal_bytes(&r);
	ck_assert_int_eq(put_key(&r, 0, 0), 0);
	uint64_t t0 = tu_now_ms();
	while (wal_bytes(&r) == w0 && tu_now_ms() - t0 < 5000)
		usleep(1000);
	ck_assert_msg(wal_bytes(&r) > w0, "a delayed put not in the log 5 s later");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_free(&r);
}
END_TEST

/* Open, replay and close on a disk with no room at all. */
START_TEST(test_reopen_full)
{
	struct rig r;
	rig_init(&r, 300, 1 << 20, 32 * 1024, base_seed);
	rig_open(&r);
	/* In the log and the memtable only: a reopen must write a table. */
	for (uint32_t i = 0; i < r.nkeys; i++)
		ck_assert_int_eq(put_key(&r, i, 0), 0);
	ck_assert_int_eq(rig_close(&r), 0);
	fault_env_set_capacity(r.fe, fault_env_used(r.fe));

	tu_log_clear(&r.log);
	rig_open(&r);
	ck_assert(tu_log_contains(&r.log, "stay in memory"));
	verify(&r, "opened on a full disk");
	for (uint32_t i = 0; i < 50; i++)
		ck_assert_int_eq(delete_key(&r, i, STORE_WRITE_RESERVE), 0);
	ck_assert_int_eq(put_key(&r, 100, 0), -ENOSPC);
	ck_assert_int_eq(store_sync(r.st), 0);
	ck_assert_int_eq(rig_close(&r), 0);

	/* Still full: opens again, with the deletes. */
	rig_open(&r);
	verify(&r, "reopened on a still-full disk");
	ck_assert_int_eq(rig_close(&r), 0);

	fault_env_set_capacity(r.fe, 0);
	rig_open(&r);
	verify(&r, "opened with room");
	ck_assert_int_eq(put_key(&r, 100, 0), 0);
	ck_assert_int_eq(store_flush(r.st), 0);
	ck_assert_int_eq(rig_close(&r), 0);
	rig_open(&r);
	verify(&r, "after the flush");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_free(&r);
}
END_TEST

/* Recovery's writes (the replayed log's table, the new log, the MANIFEST
 * edit) on a disk with no room draw on RESERVE, as an earlier process
 * left it: the store opens with the writes in a table, not in memory. */
START_TEST(test_reopen_reserve)
{
	struct rig r;
	rig_init(&r, 300, 1 << 20, 256 * 1024, base_seed);
	rig_open(&r);
	for (uint32_t i = 0; i < r.nkeys; i++)
		ck_assert_int_eq(put_key(&r, i, 0), 0);
	ck_assert_int_eq(rig_close(&r), 0);
	uint64_t have = 0;
	ck_assert_int_eq(fault_env_file_size(r.fe, DIR "/RESERVE", &have), 0);
	ck_assert_uint_eq(have, 256 * 1024);
	fault_env_set_capacity(r.fe, fault_env_used(r.fe));

	tu_log_clear(&r.log);
	rig_open(&r);
	if (tu_log_contains(&r.log, "stay in memory") ||
	    !tu_log_contains(&r.log, "given back for recovery"))
		tu_log_dump(&r.log, "  store log: ");
	ck_assert_msg(!tu_log_contains(&r.log, "stay in memory"),
		      "recovery on a full disk kept its writes in memory with RESERVE to draw on");
	ck_assert(tu_log_contains(&r.log, "given back for recovery"));
	verify(&r, "opened on a full disk with a reserve");
	/* The table holds them: a reopen replays nothing and writes nothing. */
	ck_assert_int_eq(rig_close(&r), 0);
	tu_log_clear(&r.log);
	rig_open(&r);
	ck_assert(!tu_log_contains(&r.log, "cannot write"));
	verify(&r, "reopened on the full disk");
	ck_assert_int_eq(rig_close(&r), 0);

	fault_env_set_capacity(r.fe, 0);
	rig_open(&r);
	ck_assert_int_eq(put_key(&r, 0, 0), 0);
	ck_assert_int_eq(fault_env_file_size(r.fe, DIR "/RESERVE", &have), 0);
	ck_assert_uint_eq(have, 256 * 1024); /* whole again */
	verify(&r, "with room");
	ck_assert_int_eq(rig_close(&r), 0);
	rig_free(&r);
}
END_TEST

static Suite *enospc_suite(void)
{
	Suite *s = suite_create("enospc");
	TCase *tc = tcase_create("enospc");
	tcase_set_timeout(tc, tu_soak() ? 36000 : 900);
	tcase_add_loop_test(tc, test_log_full_then_room, 0, 2);
	tcase_add_loop_test(tc, test_reserve, 0, 2);
	tcase_add_test(tc, test_reopen_full);
	tcase_add_test(tc, test_reopen_reserve);
	tcase_add_test(tc, test_delay_where);
	tcase_add_loop_test(tc, test_faults_pass, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	base_seed = tu_seed("enospc");
	SRunner *sr = srunner_create(enospc_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
