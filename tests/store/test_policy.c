/*
 * test_policy: a store's filter policies on real tables (suite "policy").
 *
 * One store written under three policies in turn (bloom, then quotient,
 * then elastic, through store_set_filter): every key is found and absent
 * keys are not, before and after a full compaction (which rewrites every
 * table with the last policy), and after a reopen with a filter memory
 * budget too small for every filter; then a table's filter part is
 * damaged on disk: the reopened store reports it and still finds every
 * key.  The tables' policies are read back with sst_describe_filter.
 * Also store_wait_compactions: levels within their targets once it returns.
 *
 * Environment: LSMFS_SEED.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filter.h"
#include "sst.h"
#include "store.h"
#include "testutil.h"

#define NKEYS 60000

static size_t key_of(char *k, unsigned i, bool absent)
{
	return (size_t)snprintf(k, 32, "key/%08u%s", i, absent ? "x" : "");
}

static void value_of(char *v, unsigned i, unsigned round)
{
	snprintf(v, 64, "value %u round %u", i, round);
}

static struct store *open_store(const char *dir, const struct store_filter *f, uint64_t budget,
				struct tu_log *log)
{
	struct store_options o;
	store_options_init(&o);
	o.write_buffer_size = 256 * 1024;
	o.target_file_size = 128 * 1024;
	/* No compaction while the policies change: each flush's tables stay. */
	o.l0_compaction_trigger = 20;
	o.l0_slowdown_trigger = 30;
	o.l0_stop_trigger = 40;
	o.filter = *f;
	o.filter_memory = budget;
	o.log = tu_log_fn;
	o.log_ctx = log;
	struct store *st;
	int rc = store_open(dir, &o, &st);
	ck_assert_msg(rc == 0, "store_open: %d", rc);
	return st;
}

/* Every key i < n has its value of its last round; absent keys are absent. */
static void check_all(struct store *st, unsigned n, const unsigned *round, const char *when)
{
	char k[32], want[64];
	unsigned bad = 0, first = 0;
	for (unsigned i = 0; i < n; i++) {
		void *v;
		size_t vl;
		int rc = store_get(st, NULL, k, key_of(k, i, false), &v, &vl);
		value_of(want, i, round[i]);
		if (rc || vl != strlen(want) || memcmp(v, want, vl)) {
			if (!bad++)
				first = i;
		}
		if (!rc)
			free(v);
		rc = store_get(st, NULL, k, key_of(k, i, true), &v, &vl);
		if (rc != -ENOENT) {
			if (!bad++)
				first = i;
			if (!rc)
				free(v);
		}
	}
	ck_assert_msg(!bad, "%s: %u wrong answers, the first for key %u", when, bad, first);
}

/* How many live tables of the store have each policy (index: kind). */
static void count_policies(const char *dir, unsigned counts[4])
{
	memset(counts, 0, 4 * sizeof(unsigned));
	struct store_options o;
	store_options_init(&o);
	struct store_table_info *t;
	size_t n;
	ck_assert_int_eq(store_list_tables(dir, &o, &t, &n, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		sst_file_name(path, sizeof(path), dir, t[i].number);
		struct sst_reader *r;
		ck_assert_int_eq(sst_open(store_env_posix(), path, t[i].number, t[i].size, NULL, NULL,
					  &r, NULL),
				 0);
		unsigned version, parts, loaded;
		struct store_filter f;
		sst_describe_filter(r, &version, &f, &parts, &loaded);
		ck_assert_uint_eq(version, SST_FORMAT_VERSION);
		if (f.kind <= 3)
			counts[f.kind]++;
		sst_close(r);
	}
	store_tables_free(t, n);
}

START_TEST(test_switch_policies)
{
	uint64_t seed = tu_seed("policy");
	char *dir = tu_mkdtemp("policy");
	struct tu_log log;
	tu_log_init(&log, false);
	static unsigned round[NKEYS];
	static const struct store_filter policies[3] = {
		{STORE_FILTER_BLOOM, 10, 1}, {STORE_FILTER_QUOTIENT, 8, 1}, {STORE_FILTER_ELASTIC, 3, 4}};
	struct store *st = open_store(dir, &policies[0], 0, &log);
	struct tu_rng rng;
	tu_rng_init(&rng, seed);
	char k[32], v[64];
	for (unsigned p = 0; p < 3; p++) {
		ck_assert_int_eq(store_set_filter(st, &policies[p]), 0);
		/* A third of the keys new, and overwrites of earlier ones. */
		for (unsigned i = p * NKEYS / 3; i < (p + 1) * NKEYS / 3; i++) {
			unsigned j = p && tu_rng_chance(&rng, 1, 4) ? (unsigned)tu_rng_below(&rng, i) : i;
			round[j] = p;
			value_of(v, j, p);
			ck_assert_int_eq(store_put(st, k, key_of(k, j, false), v, strlen(v), 0), 0);
			if (j != i) {
				round[i] = p;
				value_of(v, i, p);
				ck_assert_int_eq(store_put(st, k, key_of(k, i, false), v, strlen(v), 0), 0);
			}
		}
		ck_assert_int_eq(store_flush(st), 0);
	}
	struct store_filter bad = {STORE_FILTER_ELASTIC, 3, 1};
	ck_assert_int_eq(store_set_filter(st, &bad), -EINVAL);
	check_all(st, NKEYS, round, "three policies");
	ck_assert_int_eq(store_close(st), 0);
	unsigned c[4];
	count_policies(dir, c);
	printf("policy: before compaction: %u bloom, %u elastic, %u quotient tables\n", c[1], c[2],
	       c[3]);
	ck_assert_uint_gt(c[1], 0);
	ck_assert_uint_gt(c[2], 0);
	ck_assert_uint_gt(c[3], 0);

	/* Reopened with the last policy, compacted: every table elastic. */
	st = open_store(dir, &policies[2], 0, &log);
	check_all(st, NKEYS, round, "reopened");
	ck_assert_int_eq(store_compact_range(st, NULL, 0, NULL, 0), 0);
	check_all(st, NKEYS, round, "after compaction");
	ck_assert_int_eq(store_close(st), 0);
	count_policies(dir, c);
	printf("policy: after compaction: %u bloom, %u elastic, %u quotient tables\n", c[1], c[2],
	       c[3]);
	ck_assert_uint_eq(c[1] + c[3], 0);
	ck_assert_uint_gt(c[2], 0);

	/* A budget of 8 KiB: most units stay on disk; answers are right. */
	st = open_store(dir, &policies[0], 8192, &log);
	check_all(st, NKEYS, round, "under a filter memory budget");
	struct store_stats s;
	store_get_stats(st, &s);
	ck_assert_uint_le(s.filter_bytes, 8192);
	ck_assert_uint_eq(s.filter_budget, 8192);
	ck_assert_int_eq(store_close(st), 0);

	/* A damaged unit: reported at open, every key still found. */
	struct store_options o;
	store_options_init(&o);
	struct store_table_info *t;
	size_t n;
	ck_assert_int_eq(store_list_tables(dir, &o, &t, &n, NULL), 0);
	char path[4096];
	sst_file_name(path, sizeof(path), dir, t[0].number);
	struct sst_reader *r;
	ck_assert_int_eq(sst_open(store_env_posix(), path, t[0].number, t[0].size, NULL, NULL, &r,
				  NULL),
			 0);
	store_tables_free(t, n);
	uint64_t off = 0;
	{
		/* The second unit's offset, from the descriptor the reader read. */
		unsigned version, parts, loaded;
		struct store_filter f;
		sst_describe_filter(r, &version, &f, &parts, &loaded);
		ck_assert_uint_eq(parts, 4);
		off = sst_filter_part_offset(r, 1);
	}
	sst_close(r);
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	uint8_t byte;
	ck_assert_int_eq(pread(fd, &byte, 1, (off_t)off + 3), 1);
	byte ^= 0x10;
	ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)off + 3), 1);
	close(fd);
	tu_log_clear(&log);
	st = open_store(dir, &policies[2], 0, &log);
	check_all(st, NKEYS, round, "a damaged unit");
	ck_assert_msg(tu_log_contains(&log, "filter part 1 at offset"), "the damaged unit was not reported");
	ck_assert_int_eq(store_close(st), 0);
	tu_log_free(&log);
	tu_rmrf(dir);
	free(dir);
}
END_TEST

/* store_wait_compactions: once it returns, no L0 count or level size is
 * over its trigger or target, and the store's answers are unchanged. */
START_TEST(test_wait_compactions)
{
	char *dir = tu_mkdtemp("policy-wait");
	struct store_options o;
	store_options_init(&o);
	o.write_buffer_size = 64 * 1024;
	o.target_file_size = 32 * 1024;
	o.level_base_bytes = 128 * 1024;
	o.level_multiplier = 4;
	o.l0_compaction_trigger = 2;
	o.l0_slowdown_trigger = 40;
	o.l0_stop_trigger = 60;
	struct store *st;
	ck_assert_int_eq(store_open(dir, &o, &st), 0);
	char k[32], v[64];
	static unsigned round[NKEYS]; /* all 0 */
	for (unsigned i = 0; i < NKEYS; i++) {
		unsigned j = (i * 7919u) % NKEYS; /* every key once, out of order */
		value_of(v, j, 0);
		ck_assert_int_eq(store_put(st, k, key_of(k, j, false), v, strlen(v), 0), 0);
	}
	ck_assert_int_eq(store_wait_compactions(st), 0);
	struct store_stats s;
	store_get_stats(st, &s);
	ck_assert_msg(s.compactions > 0, "the workload made no compaction to wait for");
	ck_assert_uint_lt(s.level_files[0], (uint64_t)o.l0_compaction_trigger);
	uint64_t target = o.level_base_bytes;
	for (int l = 1; l < STORE_MAX_LEVELS - 1; l++, target *= (uint64_t)o.level_multiplier)
		ck_assert_msg(s.level_bytes[l] <= target, "L%d holds %" PRIu64 " bytes, over %" PRIu64,
			      l, s.level_bytes[l], target);
	check_all(st, NKEYS, round, "after the wait");
	ck_assert_int_eq(store_close(st), 0);
	/* A read-only store has no background work: at once. */
	o.read_only = true;
	ck_assert_int_eq(store_open(dir, &o, &st), 0);
	ck_assert_int_eq(store_wait_compactions(st), 0);
	ck_assert_int_eq(store_close(st), 0);
	tu_rmrf(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("policy");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_switch_policies);
	tcase_add_test(tc, test_wait_compactions);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
