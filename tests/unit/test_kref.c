/*
 * test_kref.c: fs/engine/core/kref.c, the lookup counts (and the times
 * until which the kernel keeps names and attributes) of inodes let go from
 * the inode table.
 *
 * What is added is found again with its count and time, through growth of
 * the table and deletions that shift later entries back; a forget lowers
 * a count and removes it at zero; a take removes it; until answers 0 for
 * an inode not held.
 */
#include "engine.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#define N 20000u

static uint64_t ino_of(uint32_t i)
{
	return 1 + (uint64_t)i * 7919u; /* spread over the table's homes */
}

START_TEST(t_add_take_until)
{
	struct kref_table t = {0};
	for (uint32_t i = 0; i < N; i++)
		ck_assert_int_eq(kref_add(&t, ino_of(i), 1 + i % 5, 1000 + i), 0);
	ck_assert_uint_eq(kref_count(&t), N);
	for (uint32_t i = 0; i < N; i++)
		ck_assert_uint_eq(kref_until(&t, ino_of(i)), 1000 + i);
	ck_assert_uint_eq(kref_until(&t, ino_of(N)), 0);
	/* Forget every third one fully, lower every third + 1. */
	for (uint32_t i = 0; i < N; i += 3) {
		ck_assert(kref_forget(&t, ino_of(i), 5));
		ck_assert_uint_eq(kref_until(&t, ino_of(i)), 0);
	}
	for (uint32_t i = 1; i < N; i += 3)
		ck_assert(kref_forget(&t, ino_of(i), 0));
	ck_assert(!kref_forget(&t, ino_of(0), 1));
	/* What stays is found with its own count and time after the shifts. */
	for (uint32_t i = 0; i < N; i++) {
		uint64_t until = 7;
		uint64_t n = kref_take(&t, ino_of(i), &until);
		if (i % 3 == 0) {
			ck_assert_uint_eq(n, 0);
			ck_assert_uint_eq(until, 0);
		} else {
			ck_assert_uint_eq(n, 1 + i % 5);
			ck_assert_uint_eq(until, 1000 + i);
		}
		ck_assert_uint_eq(kref_until(&t, ino_of(i)), 0);
	}
	ck_assert_uint_eq(kref_count(&t), 0);
	kref_free(&t);
}
END_TEST

START_TEST(t_add_again_keeps_later)
{
	struct kref_table t = {0};
	ck_assert_int_eq(kref_add(&t, 42, 1, 500), 0);
	ck_assert_int_eq(kref_add(&t, 42, 2, 300), 0);
	ck_assert_uint_eq(kref_until(&t, 42), 500);
	ck_assert_int_eq(kref_add(&t, 42, 1, 900), 0);
	uint64_t until = 0;
	ck_assert_uint_eq(kref_take(&t, 42, &until), 4);
	ck_assert_uint_eq(until, 900);
	kref_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kref");
	TCase *tc = tcase_create("kref");
	tcase_add_test(tc, t_add_take_until);
	tcase_add_test(tc, t_add_again_keeps_later);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
