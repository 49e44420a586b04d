/*
 * test_plan.c: tools/disk/plan.c, lsmfs-disk's rebalance and drain plans,
 * on disk sets made up here (no mount, no daemon).
 *
 * Every plan is checked as run_moves would carry it out: a move names the
 * section's disk as `from`, another disk of weight > 0 as `to`, its bytes,
 * and no section twice; and the bytes it copies onto each backing
 * filesystem (disks of one `device` share it) are within what that
 * filesystem has free less a chunk, since a move copies before it removes
 * and the plan credits nothing for what leaves (plan.c, "Room").  Then the cases: a
 * disk full of other files that its weight says should take more than it
 * has room for, a drain whose neediest disk is full, a drain that fits
 * nowhere (-ENOSPC), two disks on one filesystem, and random disk sets
 * (the seed is printed; LSMFS_SEED replays it).
 */
#include "disk.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1ull << 20)

static void set_make(struct status *st, uint32_t sections)
{
	memset(st, 0, sizeof(*st));
	st->sections = sections;
	st->chunk_size = MIB;
	st->section_disk = calloc(sections, sizeof(*st->section_disk));
	st->section_bytes = calloc(sections, sizeof(*st->section_bytes));
	ck_assert(st->section_disk && st->section_bytes);
}

static void set_free(struct status *st)
{
	free(st->section_disk);
	free(st->section_bytes);
}

/* A disk of index `index` on backing filesystem `device`, `available`
 * bytes free there. */
static void add_disk(struct status *st, uint32_t index, uint64_t device, uint64_t available)
{
	struct disk_info *d = &st->disk[st->ndisks++];
	d->index = index;
	d->device = device;
	d->available = available;
	d->capacity = 1ull << 40;
	d->usable = true;
}

/* Section sec on disk d, holding bytes. */
static void put(struct status *st, uint32_t sec, uint32_t d, uint64_t bytes)
{
	st->section_disk[sec] = d;
	st->section_bytes[sec] = bytes;
}

/* The plan as run_moves takes it; into[d]: the bytes it copies onto disk d. */
static void check_plan(const struct status *st, const double *weight, const struct plan *p,
		       uint64_t *into, const char *what)
{
	memset(into, 0, LSMFS_MAX_DISKS * sizeof(*into));
	bool *seen = calloc(st->sections, sizeof(*seen));
	ck_assert(seen);
	uint64_t sum = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct move *m = &p->moves[i];
		ck_assert_msg(m->section < st->sections && !seen[m->section],
			      "%s: move %zu: section %u out of range or twice", what, i, m->section);
		seen[m->section] = true;
		ck_assert_msg(m->from == st->section_disk[m->section] && m->to != m->from &&
				      m->bytes == st->section_bytes[m->section],
			      "%s: move %zu: section %u from %u to %u (%llu bytes): not as it is", what,
			      i, m->section, m->from, m->to, (unsigned long long)m->bytes);
		ck_assert_msg(status_disk(st, m->to) >= 0 && weight[m->to] > 0,
			      "%s: move %zu: to disk %u, which may take nothing", what, i, m->to);
		into[m->to] += m->bytes;
		sum += m->bytes;
	}
	ck_assert_uint_eq(p->bytes, sum);
	/* Each backing filesystem: what comes onto it within the least free
	 * space its disks saw, less a chunk. */
	for (uint32_t i = 0; i < st->ndisks; i++) {
		uint64_t in = 0, room = UINT64_MAX;
		for (uint32_t j = 0; j < st->ndisks; j++)
			if (st->disk[j].device == st->disk[i].device) {
				in += into[st->disk[j].index];
				if (st->disk[j].available < room)
					room = st->disk[j].available;
			}
		room = room > st->chunk_size ? room - st->chunk_size : 0;
		ck_assert_msg(in <= room, "%s: %llu bytes onto device %llu (disk %u), %llu free", what,
			      (unsigned long long)in, (unsigned long long)st->disk[i].device,
			      st->disk[i].index, (unsigned long long)room);
	}
	free(seen);
}

/* The hostile case: disk 0 is a 300 MiB filesystem with 280 MiB of other
 * files (18 MiB free) and no lsmfs bytes, disk 1 holds 60 MiB of lsmfs's
 * in sections of a 4 MiB chunk; weighed by capacity, 1:1, disk 0 is due
 * 30 MiB.  It gets what fits, a chunk kept free (3 sections, 12 MiB), and
 * a plan made after those moves gives it nothing more. */
START_TEST(test_full_disk_gets_what_fits)
{
	struct status st;
	set_make(&st, 64);
	st.chunk_size = 4 * MIB;
	add_disk(&st, 0, 1, 18 * MIB);
	add_disk(&st, 1, 2, 240 * MIB);
	for (uint32_t s = 0; s < 64; s++)
		put(&st, s, s < 32 ? 0 : 1, s >= 32 && s < 47 ? 4 * MIB : 0);
	double weight[LSMFS_MAX_DISKS] = {0.29, 0.29};
	struct plan p;
	uint64_t into[LSMFS_MAX_DISKS];
	ck_assert_int_eq(plan_rebalance(&st, weight, &p), 0);
	check_plan(&st, weight, &p, into, "full disk");
	ck_assert_uint_eq(into[0], 12 * MIB);
	/* Carried out: the next plan finds disk 0 full and moves nothing
	 * onto it. */
	for (size_t i = 0; i < p.n; i++) {
		const struct move *m = &p.moves[i];
		st.section_disk[m->section] = m->to;
		st.disk[m->to].available -= m->bytes;
		st.disk[m->from].available += m->bytes;
	}
	plan_free(&p);
	ck_assert_int_eq(plan_rebalance(&st, weight, &p), 0);
	check_plan(&st, weight, &p, into, "full disk, again");
	ck_assert_uint_eq(into[0], 0);
	plan_free(&p);
	set_free(&st);
}
END_TEST

/* remove: disk 0 drains; disk 1 is furthest below its share but has room
 * for 2 of the 10 sections (and the chunk of 1 MiB it keeps free); the
 * rest go to disk 2. */
START_TEST(test_drain_to_neediest_with_room)
{
	struct status st;
	set_make(&st, 32);
	add_disk(&st, 0, 1, 500 * MIB);
	add_disk(&st, 1, 2, 3 * MIB);
	add_disk(&st, 2, 3, 101 * MIB);
	for (uint32_t s = 0; s < 32; s++)
		put(&st, s, s < 10 ? 0 : 2, s < 10 ? MIB : 0);
	double weight[LSMFS_MAX_DISKS] = {0, 100, 1};
	struct plan p;
	uint64_t into[LSMFS_MAX_DISKS];
	ck_assert_int_eq(plan_drain(&st, weight, 0, &p), 0);
	check_plan(&st, weight, &p, into, "drain");
	ck_assert_uint_eq(p.n, 10);
	ck_assert_uint_eq(into[1], 2 * MIB);
	ck_assert_uint_eq(into[2], 8 * MIB);
	plan_free(&p);
	/* Room for 7 of the 10 on the others: -ENOSPC, no plan. */
	st.disk[2].available = 6 * MIB;
	ck_assert_int_eq(plan_drain(&st, weight, 0, &p), -ENOSPC);
	ck_assert_uint_eq(p.n, 0);
	ck_assert_ptr_null(p.moves);
	/* The biggest first, each where it fits: 3 MiB onto disk 2 (5 free),
	 * then 2 MiB onto disk 1, then 2 MiB onto disk 2. */
	put(&st, 0, 0, 3 * MIB);
	put(&st, 1, 0, 2 * MIB);
	put(&st, 2, 0, 2 * MIB);
	for (uint32_t s = 3; s < 10; s++)
		put(&st, s, 0, 0);
	ck_assert_int_eq(plan_drain(&st, weight, 0, &p), 0);
	check_plan(&st, weight, &p, into, "drain, sizes mixed");
	ck_assert_uint_eq(into[1], 2 * MIB);
	ck_assert_uint_eq(into[2], 5 * MIB);
	plan_free(&p);
	set_free(&st);
}
END_TEST

/* Disks 1 and 2 are directories of one filesystem with 6 MiB free (one of
 * them saw 5): together they take 4 MiB at most (a chunk kept free),
 * though each is due 13. */
START_TEST(test_shared_filesystem)
{
	struct status st;
	set_make(&st, 60);
	add_disk(&st, 0, 1, 1024 * MIB);
	add_disk(&st, 1, 7, 6 * MIB);
	add_disk(&st, 2, 7, 5 * MIB);
	for (uint32_t s = 0; s < 60; s++)
		put(&st, s, s % 3, s % 3 == 0 ? MIB : 0);
	double weight[LSMFS_MAX_DISKS] = {1, 1, 1};
	struct plan p;
	uint64_t into[LSMFS_MAX_DISKS];
	ck_assert_int_eq(plan_rebalance(&st, weight, &p), 0);
	check_plan(&st, weight, &p, into, "shared");
	ck_assert_uint_eq(into[1] + into[2], 4 * MIB);
	plan_free(&p);
	set_free(&st);
}
END_TEST

/* Random disk sets, weights and room: every plan within the room; a
 * rebalance that succeeds moves every section off the disks of weight 0. */
START_TEST(test_random_sets)
{
	const char *env = getenv("LSMFS_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
	printf("test_plan: random sets: seed %u (replay with LSMFS_SEED)\n", seed);
	srand(seed);
	const double weights[] = {0, 0.5, 1, 3};
	unsigned planned = 0, nospace = 0;
	for (int round = 0; round < 400; round++) {
		struct status st;
		uint32_t n = 16 + (uint32_t)rand() % 240, nd = 2 + (uint32_t)rand() % 5;
		set_make(&st, n);
		uint64_t dev_free[4];
		for (int i = 0; i < 4; i++)
			dev_free[i] = (uint64_t)(rand() % 64) * MIB;
		double weight[LSMFS_MAX_DISKS] = {0};
		for (uint32_t d = 0; d < nd; d++) {
			uint64_t dev = 1 + (uint64_t)rand() % 3;
			/* Disks of one filesystem read its free space at
			 * slightly different moments. */
			add_disk(&st, d, dev, dev_free[dev] + (uint64_t)(rand() % 3) * 4096);
			weight[d] = weights[rand() % 4];
		}
		for (uint32_t s = 0; s < n; s++)
			put(&st, s, (uint32_t)rand() % nd,
			    rand() % 3 ? 0 : (uint64_t)(rand() % 4096) * 1024);
		char what[64];
		snprintf(what, sizeof(what), "seed %u round %d", seed, round);
		struct plan p;
		uint64_t into[LSMFS_MAX_DISKS];
		int rc = plan_rebalance(&st, weight, &p);
		ck_assert_msg(rc == 0 || rc == -ENOSPC, "%s: rebalance %d", what, rc);
		if (rc == 0) {
			check_plan(&st, weight, &p, into, what);
			for (uint32_t s = 0; s < n; s++) {
				bool moved = false;
				for (size_t i = 0; i < p.n; i++)
					moved |= p.moves[i].section == s;
				ck_assert_msg(weight[st.section_disk[s]] > 0 || moved,
					      "%s: section %u stays on disk %u of weight 0", what, s,
					      st.section_disk[s]);
			}
			planned += p.n > 0;
		} else {
			ck_assert_uint_eq(p.n, 0);
			nospace++;
		}
		plan_free(&p);
		uint32_t gone = (uint32_t)rand() % nd;
		weight[gone] = 0;
		rc = plan_drain(&st, weight, gone, &p);
		ck_assert_msg(rc == 0 || rc == -ENOSPC, "%s: drain %d", what, rc);
		if (rc == 0)
			check_plan(&st, weight, &p, into, what);
		plan_free(&p);
		set_free(&st);
	}
	/* Both outcomes came up: the sets test something. */
	ck_assert_uint_gt(planned, 50);
	ck_assert_uint_gt(nospace, 10);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_full_disk_gets_what_fits);
	tcase_add_test(tc, test_drain_to_neediest_with_room);
	tcase_add_test(tc, test_shared_filesystem);
	tcase_add_test(tc, test_random_sets);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
