/*
 * test_acl.c: fs/engine/attr/acl.c's codec and rules without a mount: the kernel's
 * xattr encoding round-trips, every kind of garbage is EINVAL with a
 * reason, random bytes never crash the decoder (seed printed), and the
 * mode rules (equivalent mode, chmod, create from a default ACL) give
 * what the kernel's posix_acl.c gives for the same input.
 */
#include "acl.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Build an xattr value: entries as (tag, perm, id) triples. */
static size_t build(uint8_t *out, uint32_t version, const uint32_t (*e)[3], size_t n)
{
	put_le32(out, version);
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = out + 4 + i * 8;
		p[0] = (uint8_t)e[i][0];
		p[1] = (uint8_t)(e[i][0] >> 8);
		p[2] = (uint8_t)e[i][1];
		p[3] = (uint8_t)(e[i][1] >> 8);
		put_le32(p + 4, e[i][2]);
	}
	return 4 + n * 8;
}

#define U ACL_ID_UNDEFINED

static int decode_entries(const uint32_t (*e)[3], size_t n, struct acl **out, char *why)
{
	uint8_t buf[4 + 16 * 8];
	size_t len = build(buf, ACL_XATTR_VERSION, e, n);
	return acl_decode(buf, len, out, why, 96);
}

START_TEST(test_roundtrip)
{
	/* What the kernel sent for setfacl -m u:nobody:--- on a 0644 file. */
	static const uint32_t e[][3] = {{ACL_TAG_USER_OBJ, 6, U}, {ACL_TAG_USER, 0, 65534},
					{ACL_TAG_GROUP_OBJ, 4, U}, {ACL_TAG_MASK, 4, U},
					{ACL_TAG_OTHER, 4, U}};
	uint8_t buf[64];
	size_t len = build(buf, 2, e, 5);
	struct acl *acl;
	char why[96] = "";
	ck_assert_int_eq(acl_decode(buf, len, &acl, why, sizeof(why)), 0);
	ck_assert_uint_eq(acl->count, 5);
	ck_assert_uint_eq(acl->entry[1].id, 65534);
	ck_assert_uint_eq(acl_encoded_len(acl), len);
	uint8_t again[64];
	acl_encode(acl, again);
	ck_assert_mem_eq(buf, again, len);
	free(acl);
	/* A bare header is "no ACL". */
	ck_assert_int_eq(acl_decode(buf, 4, &acl, why, sizeof(why)), 0);
	ck_assert_uint_eq(acl->count, 0);
	free(acl);
}
END_TEST

START_TEST(test_garbage)
{
	struct acl *acl;
	char why[96];
	uint8_t buf[64];
	static const uint32_t ok[][3] = {{1, 7, U}, {4, 5, U}, {0x20, 5, U}};
	size_t len = build(buf, 2, ok, 3);
	ck_assert_int_eq(acl_decode(buf, 3, &acl, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_null(acl);
	ck_assert_int_eq(acl_decode(buf, len - 1, &acl, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "length"));
	build(buf, 1, ok, 3);
	ck_assert_int_eq(acl_decode(buf, len, &acl, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "version 1"));

	static const struct {
		uint32_t e[6][3];
		size_t n;
		const char *why;
	} bad[] = {
		{{{1, 8, U}, {4, 5, U}, {0x20, 5, U}}, 3, "offset 4: permission bits 0x8"},
		{{{1, 7, U}, {0x40, 5, U}, {0x20, 5, U}}, 3, "offset 12: unknown tag 0x40"},
		{{{4, 7, U}, {1, 5, U}, {0x20, 5, U}}, 3, "offset 12: tag 0x1 out of order"},
		{{{1, 7, U}, {1, 7, U}, {4, 5, U}, {0x20, 5, U}}, 4, "offset 12: tag 0x1 twice"},
		{{{1, 7, U}, {2, 7, 5}, {2, 7, 5}, {4, 5, U}, {0x10, 7, U}, {0x20, 5, U}}, 6,
		 "offset 20: id 5 out of order or repeated"},
		{{{1, 7, U}, {2, 7, 9}, {2, 7, 5}, {4, 5, U}, {0x10, 7, U}, {0x20, 5, U}}, 6,
		 "offset 20: id 5 out of order or repeated"},
		{{{4, 5, U}, {0x20, 5, U}}, 2, "no owner (USER_OBJ) entry"},
		{{{1, 7, U}, {0x20, 5, U}}, 2, "no group (GROUP_OBJ) entry"},
		{{{1, 7, U}, {4, 5, U}}, 2, "no other (OTHER) entry"},
		{{{1, 7, U}, {8, 7, 3}, {4, 5, U}, {0x20, 5, U}}, 4, "offset 20: tag 0x4 out of order"},
		{{{1, 7, U}, {4, 5, U}, {8, 7, 3}, {0x20, 5, U}}, 4, "named entries without a mask entry"},
		{{{1, 7, U}, {4, 5, U}, {0x10, 7, U}, {0x10, 7, U}, {0x20, 5, U}}, 5,
		 "offset 28: tag 0x10 twice"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		ck_assert_int_eq(decode_entries(bad[i].e, bad[i].n, &acl, why), -EINVAL);
		ck_assert_msg(strcmp(why, bad[i].why) == 0, "case %zu: \"%s\", want \"%s\"", i, why,
			      bad[i].why);
	}
}
END_TEST

/* Random bytes: 0 or -EINVAL, never a crash; what decodes re-encodes to
 * something that decodes the same. */
START_TEST(test_random)
{
	const char *env = getenv("LSMFS_SEED");
	unsigned long seed = env ? strtoul(env, NULL, 0) : (unsigned long)time(NULL);
	fprintf(stderr, "test_acl: random: seed %lu (LSMFS_SEED=%lu replays)\n", seed, seed);
	uint64_t s = seed;
	int decoded = 0;
	for (int round = 0; round < 200000; round++) {
		uint8_t buf[4 + 8 * 8];
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = (size_t)(s >> 60) % 7; /* entries */
		size_t len = 4 + n * 8 + ((s >> 40) % 8 == 0 ? (s >> 20) % 8 : 0);
		if (len > sizeof(buf))
			len = sizeof(buf);
		put_le32(buf, (s >> 33) % 16 ? 2 : (uint32_t)(s >> 13));
		/* Mostly plausible entries, so that the rules, not only the
		 * tags, get exercised. */
		static const uint16_t tags[] = {1, 2, 4, 8, 0x10, 0x20};
		for (size_t i = 4; i + 8 <= len; i += 8) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			uint16_t tag = (s >> 61) < 7 ? tags[(s >> 50) % 6] : (uint16_t)(s >> 7);
			uint16_t perm = (s >> 45) % 16 ? (uint16_t)((s >> 30) % 8) : (uint16_t)(s >> 9);
			buf[i] = (uint8_t)tag;
			buf[i + 1] = (uint8_t)(tag >> 8);
			buf[i + 2] = (uint8_t)perm;
			buf[i + 3] = (uint8_t)(perm >> 8);
			put_le32(buf + i + 4, (uint32_t)(s >> 20) % 4);
		}
		struct acl *acl;
		int rc = acl_decode(buf, len, &acl, NULL, 0);
		ck_assert_msg(rc == 0 || rc == -EINVAL, "seed %lu round %d: rc %d", seed, round, rc);
		if (rc)
			continue;
		decoded++;
		uint8_t out[sizeof(buf)];
		ck_assert_uint_eq(acl_encoded_len(acl), len);
		acl_encode(acl, out);
		struct acl *again;
		ck_assert_int_eq(acl_decode(out, len, &again, NULL, 0), 0);
		ck_assert_mem_eq(acl->entry, again->entry, acl->count * sizeof(acl->entry[0]));
		free(again);
		free(acl);
	}
	ck_assert_msg(decoded > 100, "seed %lu: only %d random ACLs were valid", seed, decoded);
}
END_TEST

START_TEST(test_mode_rules)
{
	struct acl *acl;
	char why[96];
	/* Minimal: the mode says it all. */
	static const uint32_t min[][3] = {{1, 7, U}, {4, 5, U}, {0x20, 1, U}};
	ck_assert_int_eq(decode_entries(min, 3, &acl, why), 0);
	mode_t mode = S_IFREG | S_ISGID | 0777;
	ck_assert_int_eq(acl_equiv_mode(acl, &mode), 0);
	ck_assert_uint_eq(mode, S_IFREG | S_ISGID | 0751);
	acl_chmod(acl, 0640); /* no mask: the group entry follows */
	ck_assert_uint_eq(acl->entry[0].perm, 6);
	ck_assert_uint_eq(acl->entry[1].perm, 4);
	ck_assert_uint_eq(acl->entry[2].perm, 0);
	free(acl);

	/* With a mask: the group class bits are the mask's. */
	static const uint32_t ext[][3] = {{1, 6, U}, {2, 7, 65534}, {4, 7, U},
					  {0x10, 4, U}, {0x20, 4, U}};
	ck_assert_int_eq(decode_entries(ext, 5, &acl, why), 0);
	mode = S_IFREG;
	ck_assert_int_eq(acl_equiv_mode(acl, &mode), 1);
	ck_assert_uint_eq(mode, S_IFREG | 0644);
	acl_chmod(acl, 0604); /* the mask follows, GROUP_OBJ keeps rwx */
	ck_assert_uint_eq(acl->entry[2].perm, 7);
	ck_assert_uint_eq(acl->entry[3].perm, 0);
	ck_assert_uint_eq(acl->entry[4].perm, 4);
	ck_assert_uint_eq(acl->entry[0].perm, 6);
	free(acl);

	/* Create: default u::rwx u:65534:rwx g::r-x m::rwx o::--- and open(0666)
	 * give u::rw- u:65534:rwx g::r-x m::rw- o::--- and mode 0660 (ext4). */
	static const uint32_t def[][3] = {{1, 7, U}, {2, 7, 65534}, {4, 5, U},
					  {0x10, 7, U}, {0x20, 0, U}};
	ck_assert_int_eq(decode_entries(def, 5, &acl, why), 0);
	mode = S_IFREG | 0666;
	ck_assert_int_eq(acl_create_masq(acl, &mode), 1);
	ck_assert_uint_eq(mode, S_IFREG | 0660);
	ck_assert_uint_eq(acl->entry[0].perm, 6);
	ck_assert_uint_eq(acl->entry[1].perm, 7);
	ck_assert_uint_eq(acl->entry[2].perm, 5);
	ck_assert_uint_eq(acl->entry[3].perm, 6);
	ck_assert_uint_eq(acl->entry[4].perm, 0);
	free(acl);

	/* Without a mask, GROUP_OBJ takes the group bits; equivalent. */
	static const uint32_t plain[][3] = {{1, 7, U}, {4, 5, U}, {0x20, 5, U}};
	ck_assert_int_eq(decode_entries(plain, 3, &acl, why), 0);
	mode = S_IFDIR | S_ISGID | 0700;
	ck_assert_int_eq(acl_create_masq(acl, &mode), 0);
	ck_assert_uint_eq(mode, S_IFDIR | S_ISGID | 0700);
	ck_assert_uint_eq(acl->entry[1].perm, 0);
	ck_assert_uint_eq(acl->entry[2].perm, 0);
	free(acl);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acl");
	TCase *tc = tcase_create("acl");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_mode_rules);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
