/*
 * test_crash: process-crash recovery (suite "crash").
 *
 * Each round forks a child that opens the store (a real directory, reused
 * across rounds, so recovery of a recovered store is exercised) and writes
 * in a loop: puts, deletes and batches.  Before each call it sends an
 * "intent" record over a pipe (op id, keys, value lengths), after the call
 * returned 0 an "ack".  With options.sync = false it also calls store_sync()
 * now and then and reports "synced up to op N".  The parent SIGKILLs the
 * child after a random 5-200 ms, reopens the store and checks it.
 *
 * Values are self-describing: le64 op id | le32 sub-op | le32 length |
 * bytes derived from (op id, sub-op), so every value read back names the
 * write that produced it and garbage is detected.
 *
 * What must hold: the recovered state equals the state after some prefix
 * of the issued ops (the log is replayed in order and a batch is one
 * record, so all of it or none), and that prefix includes every op that
 * was durable: with sync = true every acked op, with sync = false every op
 * acked before the last successful store_sync().  The ops after it (acked
 * or only intended) may or may not be there.  The check walks the prefixes
 * from the durable point to the last intent, keeping a count of keys where
 * prefix state and observed state differ.
 *
 * Variants: sync; nosync; delayed (nosync with options.log_delay_us = 3 ms:
 * acknowledged records wait in memory, and a kill may take them).
 *
 * Environment: LSMFS_SEED, LSMFS_CRASH_ROUNDS (per variant), LSMFS_SOAK=1.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store.h"
#include "testutil.h"

/* The run's base seed (LSMFS_SEED or the clock), printed once. */
static uint64_t base_seed;

#define NKEYS 2000
#define MAX_SUB 16
#define MAX_VALUE 1000

enum wire_kind { W_OPENED = 1, W_INTENT, W_ACK, W_SYNCED, W_FAIL };

struct wire {
	uint32_t kind;
	uint32_t nsub;
	uint64_t opid;
	int32_t rc; /* W_FAIL */
	uint32_t pad;
	struct {
		uint32_t key;
		int32_t vlen; /* -1: delete */
	} sub[MAX_SUB];
};

/* What one key holds: absent, or the value written by (opid, sub). */
struct kv {
	bool present;
	uint32_t sub;
	uint32_t vlen;
	uint64_t opid;
};

static bool kv_eq(const struct kv *a, const struct kv *b)
{
	if (a->present != b->present)
		return false;
	return !a->present || (a->opid == b->opid && a->sub == b->sub &&
			       a->vlen == b->vlen);
}

/* Decode a value read back; false if it is not one we could have written. */
static bool decode_value(const void *v, size_t len, struct kv *out)
{
	if (len > MAX_VALUE || !tu_val_decode(v, len, &out->opid, &out->sub) ||
	    out->sub >= MAX_SUB)
		return false;
	out->present = true;
	out->vlen = (uint32_t)len;
	return true;
}

struct variant {
	const char *name;
	bool sync;
	uint64_t log_delay_us; /* options.log_delay_us of the writer */
};

static const struct variant variants[] = {
	{ "sync", true, 0 },
	{ "nosync", false, 0 },
	/* Records kept in memory up to 3 ms: a kill loses more of what
	 * was not synced, never the order nor anything synced. */
	{ "delayed", false, 3000 },
};

static void set_options(struct store_options *o, bool sync, uint64_t delay,
			struct tu_log *log)
{
	store_options_init(o);
	o->sync = sync;
	o->log_delay_us = delay;
	o->reserve_bytes = delay ? 256 * 1024 : 0; /* delays need one */
	o->write_buffer_size = 32 * 1024;
	o->target_file_size = 32 * 1024;
	o->level_base_bytes = 128 * 1024;
	o->block_size = 1024;
	o->l0_compaction_trigger = 2;
	if (log) {
		o->log = tu_log_fn;
		o->log_ctx = log;
	}
}

/* ---- the child ---- */

static void send_wire(int fd, const struct wire *w)
{
	const char *p = (const char *)w;
	size_t left = sizeof(*w);
	while (left) {
		ssize_t n = write(fd, p, left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(3);
		}
		p += n;
		left -= (size_t)n;
	}
}

static void child_fail(int fd, uint64_t opid, int rc)
{
	struct wire w;
	memset(&w, 0, sizeof(w));
	w.kind = W_FAIL;
	w.opid = opid;
	w.rc = rc;
	send_wire(fd, &w);
	_exit(2);
}

static void child_run(const char *dir, bool sync, uint64_t delay, uint64_t seed,
		      uint64_t first_opid, int fd)
{
	struct tu_rng rng;
	tu_rng_init(&rng, seed);
	struct store_options o;
	set_options(&o, sync, delay, NULL);
	struct store *st;
	int rc = store_open(dir, &o, &st);
	if (rc)
		child_fail(fd, first_opid, rc);
	struct wire w;
	memset(&w, 0, sizeof(w));
	w.kind = W_OPENED;
	send_wire(fd, &w);
	struct store_batch *b = store_batch_new();
	if (!b)
		child_fail(fd, first_opid, -ENOMEM);
	uint8_t key[TU_KEY_MAX];
	uint8_t val[MAX_VALUE];
	for (uint64_t opid = first_opid;; opid++) {
		memset(&w, 0, sizeof(w));
		w.kind = W_INTENT;
		w.opid = opid;
		uint64_t k = tu_rng_below(&rng, 10);
		w.nsub = k < 5 ? 1 : k < 7 ? 1 : (uint32_t)tu_rng_range(&rng, 2, MAX_SUB);
		bool single_delete = k >= 5 && k < 7;
		for (uint32_t i = 0; i < w.nsub; i++) {
			/* Batches sometimes hit the same key twice. */
			if (i > 0 && tu_rng_chance(&rng, 1, 8))
				w.sub[i].key = w.sub[tu_rng_below(&rng, i)].key;
			else
				w.sub[i].key = (uint32_t)tu_rng_below(&rng, NKEYS);
			bool del = single_delete || (w.nsub > 1 && tu_rng_chance(&rng, 1, 4));
			w.sub[i].vlen = del ? -1
				: (int32_t)(TU_VAL_HDR + tu_value_len(&rng, MAX_VALUE - TU_VAL_HDR));
		}
		send_wire(fd, &w);
		if (w.nsub == 1 && !single_delete) {
			size_t kl = tu_key(key, w.sub[0].key);
			tu_val_make(val, opid, 0, (uint32_t)w.sub[0].vlen);
			rc = store_put(st, key, kl, val, (size_t)w.sub[0].vlen, 0);
		} else if (single_delete) {
			size_t kl = tu_key(key, w.sub[0].key);
			rc = store_delete(st, key, kl, 0);
		} else {
			store_batch_clear(b);
			rc = 0;
			for (uint32_t i = 0; i < w.nsub && !rc; i++) {
				size_t kl = tu_key(key, w.sub[i].key);
				if (w.sub[i].vlen < 0) {
					rc = store_batch_delete(b, key, kl);
				} else {
					tu_val_make(val, opid, i, (uint32_t)w.sub[i].vlen);
					rc = store_batch_put(b, key, kl, val,
							     (size_t)w.sub[i].vlen);
				}
			}
			if (!rc)
				rc = store_write(st, b, 0);
		}
		if (rc)
			child_fail(fd, opid, rc);
		w.kind = W_ACK;
		send_wire(fd, &w);
		if (!sync && tu_rng_chance(&rng, 1, 16)) {
			rc = store_sync(st);
			if (rc)
				child_fail(fd, opid, rc);
			memset(&w, 0, sizeof(w));
			w.kind = W_SYNCED;
			w.opid = opid;
			send_wire(fd, &w);
		}
		if (tu_rng_chance(&rng, 1, 300)) {
			rc = store_flush(st);
			if (rc)
				child_fail(fd, opid, rc);
		}
		if (tu_rng_chance(&rng, 1, 2000)) {
			rc = store_compact_range(st, NULL, 0, NULL, 0);
			if (rc)
				child_fail(fd, opid, rc);
		}
	}
}

/* ---- the parent ---- */

struct op {
	struct wire w;
	bool acked;
};

struct round_log {
	struct op *ops;
	size_t n, cap;
	bool opened;
	bool failed;
	int fail_rc;
	uint64_t fail_opid;
	int64_t synced_opid; /* -1: none */
	uint8_t buf[sizeof(struct wire)];
	size_t buffered;
};

static void take_wire(struct round_log *rl, const struct wire *w,
		      uint64_t seed, int round)
{
	switch (w->kind) {
	case W_OPENED:
		rl->opened = true;
		break;
	case W_INTENT:
		if (rl->n == rl->cap) {
			rl->cap = rl->cap ? rl->cap * 2 : 256;
			rl->ops = realloc(rl->ops, rl->cap * sizeof(*rl->ops));
			ck_assert_ptr_nonnull(rl->ops);
		}
		ck_assert_msg(rl->n == 0 || rl->ops[rl->n - 1].acked,
			      "seed=%" PRIu64 " round %d: intent before the last ack",
			      seed, round);
		rl->ops[rl->n].w = *w;
		rl->ops[rl->n].acked = false;
		rl->n++;
		break;
	case W_ACK:
		ck_assert_msg(rl->n > 0 && rl->ops[rl->n - 1].w.opid == w->opid,
			      "seed=%" PRIu64 " round %d: stray ack", seed, round);
		rl->ops[rl->n - 1].acked = true;
		break;
	case W_SYNCED:
		rl->synced_opid = (int64_t)w->opid;
		break;
	case W_FAIL:
		rl->failed = true;
		rl->fail_rc = w->rc;
		rl->fail_opid = w->opid;
		break;
	default:
		ck_abort_msg("seed=%" PRIu64 " round %d: bad wire kind %u", seed,
			     round, w->kind);
	}
}

/* Read what is available on fd; false at EOF. */
static bool pump(int fd, struct round_log *rl, uint64_t seed, int round)
{
	uint8_t tmp[65536];
	ssize_t n = read(fd, tmp, sizeof(tmp));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	for (ssize_t i = 0; i < n;) {
		size_t want = sizeof(struct wire) - rl->buffered;
		size_t take = (size_t)(n - i) < want ? (size_t)(n - i) : want;
		memcpy(rl->buf + rl->buffered, tmp + i, take);
		rl->buffered += take;
		i += (ssize_t)take;
		if (rl->buffered == sizeof(struct wire)) {
			struct wire w;
			memcpy(&w, rl->buf, sizeof(w));
			take_wire(rl, &w, seed, round);
			rl->buffered = 0;
		}
	}
	return true;
}

static void apply_sub(struct kv *state, const struct wire *w, uint32_t i)
{
	struct kv *s = &state[w->sub[i].key];
	if (w->sub[i].vlen < 0) {
		memset(s, 0, sizeof(*s));
	} else {
		s->present = true;
		s->opid = w->opid;
		s->sub = i;
		s->vlen = (uint32_t)w->sub[i].vlen;
	}
}

static char *fmt_kv(char *buf, size_t cap, const struct kv *v)
{
	if (!v->present)
		snprintf(buf, cap, "absent");
	else
		snprintf(buf, cap, "op %" PRIu64 "/%u (%u bytes)", v->opid, v->sub,
			 v->vlen);
	return buf;
}

struct crash_ctx {
	const struct variant *var;
	uint64_t seed;
	char *dir;
	struct kv *model; /* state after the previous round */
	uint64_t next_opid;
	struct tu_log log;
	/* stats */
	uint64_t total_acked, total_lost_acked, total_inflight_applied;
};

/* Reopen, read every key, compare with the prefixes of this round. */
static void verify_round(struct crash_ctx *c, int round, struct round_log *rl)
{
	struct store_options o;
	tu_log_clear(&c->log);
	set_options(&o, false, 0, &c->log);
	struct store *st;
	int rc = store_open(c->dir, &o, &st);
	if (rc)
		tu_log_dump(&c->log, "  store log: ");
	ck_assert_msg(rc == 0, "seed=%" PRIu64 " %s round %d: reopen after kill: %d",
		      c->seed, c->var->name, round, rc);

	struct kv *obs = calloc(NKEYS, sizeof(*obs));
	ck_assert_ptr_nonnull(obs);
	uint8_t key[TU_KEY_MAX];
	char kb[512];
	for (uint32_t k = 0; k < NKEYS; k++) {
		size_t kl = tu_key(key, k);
		void *v = NULL;
		size_t vl = 0;
		rc = store_get(st, NULL, key, kl, &v, &vl);
		ck_assert_msg(rc == 0 || rc == -ENOENT,
			      "seed=%" PRIu64 " %s round %d: get key #%u: %d", c->seed,
			      c->var->name, round, k, rc);
		if (rc == 0) {
			ck_assert_msg(decode_value(v, vl, &obs[k]),
				      "seed=%" PRIu64 " %s round %d: key #%u %s holds "
				      "garbage (%zu bytes)", c->seed, c->var->name,
				      round, k, tu_fmtkey(kb, sizeof(kb), key, kl), vl);
			free(v);
		}
	}
	/* A full scan sees the same, and nothing else. */
	struct store_iter *it;
	ck_assert_int_eq(store_iter_new(st, NULL, &it), 0);
	size_t seen = 0, want_seen = 0;
	for (uint32_t k = 0; k < NKEYS; k++)
		want_seen += obs[k].present;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const void *kp = store_iter_key(it, &kl);
		const void *vp = store_iter_value(it, &vl);
		struct kv d;
		ck_assert_msg(decode_value(vp, vl, &d),
			      "seed=%" PRIu64 " %s round %d: scan: key %s holds garbage",
			      c->seed, c->var->name, round,
			      tu_fmtkey(kb, sizeof(kb), kp, kl));
		seen++;
	}
	ck_assert_int_eq(store_iter_status(it), 0);
	store_iter_free(it);
	ck_assert_msg(seen == want_seen,
		      "seed=%" PRIu64 " %s round %d: scan saw %zu keys, gets found %zu",
		      c->seed, c->var->name, round, seen, want_seen);

	/* The durable prefix: how many of this round's ops must be applied. */
	size_t durable = 0;
	for (size_t i = 0; i < rl->n; i++) {
		bool must = c->var->sync ? rl->ops[i].acked
			: (int64_t)rl->ops[i].w.opid <= rl->synced_opid;
		if (must)
			durable = i + 1;
	}
	size_t acked = 0;
	for (size_t i = 0; i < rl->n; i++)
		acked += rl->ops[i].acked;

	struct kv *state = malloc(NKEYS * sizeof(*state));
	ck_assert_ptr_nonnull(state);
	memcpy(state, c->model, NKEYS * sizeof(*state));
	for (size_t i = 0; i < durable; i++)
		for (uint32_t s = 0; s < rl->ops[i].w.nsub; s++)
			apply_sub(state, &rl->ops[i].w, s);
	size_t mismatch = 0;
	for (uint32_t k = 0; k < NKEYS; k++)
		mismatch += !kv_eq(&state[k], &obs[k]);
	struct kv *at_durable = malloc(NKEYS * sizeof(*at_durable));
	ck_assert_ptr_nonnull(at_durable);
	memcpy(at_durable, state, NKEYS * sizeof(*state));
	/* Walk every prefix from the durable point on; remember the first and
	 * the last that match (ops that change nothing, like deleting an
	 * absent key, make several match). */
	long first = mismatch ? -1 : (long)durable, last = first;
	for (size_t j = durable; j < rl->n; j++) {
		const struct wire *w = &rl->ops[j].w;
		for (uint32_t s = 0; s < w->nsub; s++) {
			uint32_t k = w->sub[s].key;
			mismatch -= !kv_eq(&state[k], &obs[k]);
			apply_sub(state, w, s);
			mismatch += !kv_eq(&state[k], &obs[k]);
		}
		if (!mismatch) {
			if (first < 0)
				first = (long)j + 1;
			last = (long)j + 1;
		}
	}
	if (first < 0) {
		/* Show the differences at the durable point. */
		char b1[64], b2[64];
		int shown = 0;
		for (uint32_t k = 0; k < NKEYS && shown < 8; k++) {
			if (kv_eq(&at_durable[k], &obs[k]))
				continue;
			fprintf(stderr, "  key #%u: durable point has %s, store has %s\n",
				k, fmt_kv(b1, sizeof(b1), &at_durable[k]),
				fmt_kv(b2, sizeof(b2), &obs[k]));
			shown++;
		}
	}
	ck_assert_msg(first >= 0,
		      "seed=%" PRIu64 " %s round %d: recovered state is no prefix of "
		      "the issued ops with at least the %zu durable ones (%zu ops "
		      "issued, %zu acked, synced up to op %" PRId64 "); see the keys "
		      "above",
		      c->seed, c->var->name, round, durable, rl->n, acked,
		      rl->synced_opid);
	free(at_durable);
	size_t j = (size_t)last;
	c->total_acked += acked;
	if (j < acked)
		c->total_lost_acked += acked - j;
	if (j > acked)
		c->total_inflight_applied++;
	memcpy(c->model, obs, NKEYS * sizeof(*obs));
	free(state);
	free(obs);

	/* The recovered store takes writes; round trip one and remove it. */
	rc = store_put(st, "zz-probe", 8, "x", 1, STORE_WRITE_SYNC);
	ck_assert_msg(rc == 0, "seed=%" PRIu64 " round %d: put after recovery: %d",
		      c->seed, round, rc);
	rc = store_delete(st, "zz-probe", 8, 0);
	ck_assert_int_eq(rc, 0);
	rc = store_close(st);
	ck_assert_msg(rc == 0, "seed=%" PRIu64 " round %d: close after recovery: %d",
		      c->seed, round, rc);
}

static void run_round(struct crash_ctx *c, int round, struct tu_rng *rng)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	uint64_t child_seed = tu_rng_next(rng);
	uint64_t delay = tu_rng_range(rng, 5, 200);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		child_run(c->dir, c->var->sync, c->var->log_delay_us, child_seed,
			  c->next_opid, fds[1]);
		_exit(0);
	}
	close(fds[1]);
	struct round_log rl;
	memset(&rl, 0, sizeof(rl));
	rl.synced_opid = -1;
	uint64_t deadline = tu_now_ms() + delay;
	bool eof = false;
	for (;;) {
		uint64_t now = tu_now_ms();
		if (now >= deadline || eof)
			break;
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int pr = poll(&p, 1, (int)(deadline - now));
		if (pr > 0)
			eof = !pump(fds[0], &rl, c->seed, round);
	}
	kill(pid, SIGKILL);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	while (!eof)
		eof = !pump(fds[0], &rl, c->seed, round);
	close(fds[0]);
	ck_assert_msg(!rl.failed,
		      "seed=%" PRIu64 " %s round %d: the child's op %" PRIu64
		      " failed: %d", c->seed, c->var->name, round, rl.fail_opid,
		      rl.fail_rc);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "seed=%" PRIu64 " %s round %d: child ended with status 0x%x",
		      c->seed, c->var->name, round, status);
	ck_assert_msg(rl.buffered == 0, "partial wire record");
	verify_round(c, round, &rl);
	if (rl.n)
		c->next_opid = rl.ops[rl.n - 1].w.opid + 1;
	free(rl.ops);
}

START_TEST(test_crash)
{
	struct crash_ctx c;
	memset(&c, 0, sizeof(c));
	c.var = &variants[_i];
	uint64_t base = base_seed;
	c.seed = tu_mix64(base + (uint64_t)_i);
	uint64_t rounds = tu_env_u64("LSMFS_CRASH_ROUNDS", 100);
	if (tu_soak())
		rounds *= 10;
	fprintf(stderr, "crash %s: seed=%" PRIu64 " (base %" PRIu64 "), %" PRIu64
		" rounds\n", c.var->name, c.seed, base, rounds);
	struct tu_rng rng;
	tu_rng_init(&rng, c.seed);
	c.dir = tu_mkdtemp("crash");
	c.model = calloc(NKEYS, sizeof(*c.model));
	ck_assert_ptr_nonnull(c.model);
	c.next_opid = 1;
	tu_log_init(&c.log, false);
	uint64_t t0 = tu_now_ms();
	for (uint64_t r = 0; r < rounds; r++)
		run_round(&c, (int)r, &rng);
	fprintf(stderr, "crash %s: %" PRIu64 " rounds in %.1f s, %" PRIu64
		" ops acked, %" PRIu64 " acked-but-unsynced ops lost, %" PRIu64
		" in-flight ops found applied\n", c.var->name, rounds,
		(double)(tu_now_ms() - t0) / 1000.0, c.total_acked,
		c.total_lost_acked, c.total_inflight_applied);
	tu_log_free(&c.log);
	free(c.model);
	tu_rmrf(c.dir);
	free(c.dir);
}
END_TEST

static Suite *crash_suite(void)
{
	Suite *s = suite_create("crash");
	TCase *tc = tcase_create("crash");
	tcase_set_timeout(tc, tu_soak() ? 36000 : 1200);
	tcase_add_loop_test(tc, test_crash, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* One base seed for every case (the cases run in forked children). */
	base_seed = tu_seed("crash");
	signal(SIGPIPE, SIG_IGN);
	SRunner *sr = srunner_create(crash_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
