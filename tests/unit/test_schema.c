/*
 * test_schema: fs/format/schema.c's key table and key_parse, the `E` value
 * codec, and section.c's `P` value codec (suite "schema").
 *
 * The table names every KEY_* once; each encoder's key parses back to its
 * type and fields; a key one byte short or long of its type's layout, or
 * of an unknown type, does not parse (fs/SCHEMA.md "Keys of the metadata
 * store").  lsmfs-inspect's help, man page and completion are checked
 * against the same table by tests/doc.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fs.h"
#include "schema.h"

START_TEST(test_table)
{
	static const char all[] = {KEY_META,  KEY_DISK,  KEY_DEVSTATS, KEY_SECTION,
				   KEY_INODE, KEY_DIRENT, KEY_XATTR,   KEY_DATA,
				   KEY_CHUNK, KEY_ORPHAN, KEY_FLUX};
	ck_assert_uint_eq(key_types_count, sizeof(all));
	for (size_t i = 0; i < sizeof(all); i++) {
		const struct key_type_info *t = key_type_find(all[i]);
		ck_assert_ptr_nonnull(t);
		ck_assert_int_eq(t->letter, all[i]);
		ck_assert_ptr_nonnull(t->name);
		ck_assert_ptr_nonnull(t->about);
		/* The layout starts with the letter, as SCHEMA.md writes it. */
		ck_assert_int_eq(t->layout[0], all[i]);
		ck_assert(t->id_len == 0 || t->id_len == 4 || t->id_len == 8);
		ck_assert((t->id == KEY_ID_NONE) == (t->id_len == 0));
		ck_assert(t->tail_min <= t->tail_max);
		for (size_t j = 0; j < i; j++)
			ck_assert_int_ne(key_types[j].letter, key_types[i].letter);
	}
	ck_assert_ptr_null(key_type_find('Z'));
	ck_assert_ptr_null(key_type_find(0));
}
END_TEST

/* k parses as type with id, sub and tail; for a type without a name, one
 * byte less or more does not. */
static void parses(const uint8_t *k, size_t kl, char type, uint64_t id, uint64_t sub,
		   const char *tail)
{
	struct key_parts kp;
	ck_assert_int_eq(key_parse(k, kl, &kp), 0);
	ck_assert_int_eq(kp.type->letter, type);
	ck_assert_uint_eq(kp.id, id);
	ck_assert_uint_eq(kp.sub, sub);
	ck_assert_uint_eq(kp.tail_len, strlen(tail));
	ck_assert(!memcmp(kp.tail, tail, kp.tail_len));
	if (kp.type->tail_max == 0) {
		ck_assert_int_eq(key_parse(k, kl - 1, &kp), -EUCLEAN);
		uint8_t longer[KEY_MAX + 1];
		memcpy(longer, k, kl);
		longer[kl] = 0;
		ck_assert_int_eq(key_parse(longer, kl + 1, &kp), -EUCLEAN);
	}
}

START_TEST(test_parse_encoders)
{
	uint8_t k[KEY_MAX];
	const uint64_t big = 0x0123456789abcdefull;
	parses(k, key_meta(k, META_NEXT_INO), KEY_META, 0, 0, META_NEXT_INO);
	parses(k, key_meta(k, ""), KEY_META, 0, 0, "");
	parses(k, key_disk(k, 7), KEY_DISK, 7, 0, "");
	parses(k, key_devstats(k, 63), KEY_DEVSTATS, 63, 0, "");
	parses(k, key_section(k, 0xfffffffeu), KEY_SECTION, 0xfffffffeu, 0, "");
	parses(k, key_inode(k, big), KEY_INODE, big, 0, "");
	parses(k, key_dirent(k, 1, "lost+found", 10), KEY_DIRENT, 1,
	       dirent_hash("lost+found", 10), "lost+found");
	parses(k, key_xattr(k, big, "user.x", 6), KEY_XATTR, big, 0, "user.x");
	parses(k, key_data(k, 12), KEY_DATA, 12, 0, "");
	parses(k, key_chunk(k, 12, big), KEY_CHUNK, 12, big, "");
	parses(k, key_orphan(k, 5), KEY_ORPHAN, 5, 0, "");
	parses(k, key_flux(k, 5), KEY_FLUX, 5, 0, "");
}
END_TEST

START_TEST(test_parse_rejects)
{
	struct key_parts kp;
	uint8_t k[KEY_MAX + 16] = {0};
	ck_assert_int_eq(key_parse(k, 0, &kp), -EUCLEAN);
	k[0] = 'Z';
	ck_assert_int_eq(key_parse(k, 9, &kp), -EUCLEAN);
	/* Prefixes are not keys: D parent alone, D parent hash. */
	ck_assert_int_eq(key_parse(k, key_dirent_prefix(k, 1), &kp), -EUCLEAN);
	ck_assert_int_eq(key_parse(k, key_dirent_pos(k, 1, 3), &kp), -EUCLEAN);
	ck_assert_int_eq(key_parse(k, key_xattr_prefix(k, 1), &kp), -EUCLEAN);
	ck_assert_int_eq(key_parse(k, key_chunk_prefix(k, 1), &kp), -EUCLEAN);
	/* Names are 1..255 bytes (SCHEMA.md "Directory entries"). */
	char name[NAME_MAX_BYTES + 1];
	memset(name, 'a', sizeof(name));
	ck_assert_int_eq(key_parse(k, key_dirent(k, 1, name, NAME_MAX_BYTES), &kp), 0);
	key_dirent_pos(k, 1, 3);
	memcpy(k + 17, name, NAME_MAX_BYTES + 1);
	ck_assert_int_eq(key_parse(k, 17 + NAME_MAX_BYTES + 1, &kp), -EUCLEAN);
	/* K and P: be32 and nothing after. */
	ck_assert_int_eq(key_parse(k, key_disk(k, 1) + 1, &kp), -EUCLEAN);
	ck_assert_int_eq(key_parse(k, key_section(k, 1) - 1, &kp), -EUCLEAN);
	ck_assert_int_eq(key_parse(k, key_devstats(k, 1) + 1, &kp), -EUCLEAN);
}
END_TEST

/* The `E` value: le64 per kind, in enum order (SCHEMA.md "Error
 * counters"); shorter is damaged, longer a newer version's, its first
 * counters read. */
START_TEST(test_devstats_value)
{
	const uint64_t c[DEVSTAT_KINDS] = {1, 0x0102030405060708ull, 0, UINT64_MAX};
	uint8_t v[DEVSTATS_REC_LEN + 8];
	uint64_t got[DEVSTAT_KINDS];
	ck_assert_uint_eq(DEVSTATS_REC_LEN, 32);
	devstats_rec_encode(c, v);
	/* The bytes, as SCHEMA.md lays them out. */
	ck_assert_uint_eq(v[0], 1);
	ck_assert_uint_eq(v[8], 8);
	ck_assert_uint_eq(v[15], 1);
	ck_assert_uint_eq(v[31], 0xff);
	ck_assert_int_eq(devstats_rec_decode(v, DEVSTATS_REC_LEN, got), 0);
	ck_assert(!memcmp(got, c, sizeof(c)));
	memset(v + DEVSTATS_REC_LEN, 0x5a, 8);
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(devstats_rec_decode(v, DEVSTATS_REC_LEN + 8, got), 0);
	ck_assert(!memcmp(got, c, sizeof(c)));
	ck_assert_int_eq(devstats_rec_decode(v, DEVSTATS_REC_LEN - 1, got), -EUCLEAN);
	ck_assert_int_eq(devstats_rec_decode(v, 0, got), -EUCLEAN);
	/* Every kind has a name, each its own. */
	for (int i = 0; i < DEVSTAT_KINDS; i++) {
		ck_assert_ptr_nonnull(devstat_names[i]);
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(devstat_names[i], devstat_names[j]);
	}
}
END_TEST

/* The `P` value (section.c): le32 disk, any number; 4 bytes or damaged. */
START_TEST(test_section_value)
{
	uint8_t k[KEY_MAX], v[SECTION_VAL_LEN + 1] = {0};
	uint32_t disk = 0, s = 0;
	section_value_encode(65, v);
	ck_assert_int_eq(section_value_decode(v, SECTION_VAL_LEN, &disk), 0);
	ck_assert_uint_eq(disk, 65);
	ck_assert_int_eq(section_value_decode(v, SECTION_VAL_LEN - 1, &disk), -EUCLEAN);
	ck_assert_int_eq(section_value_decode(v, SECTION_VAL_LEN + 1, &disk), -EUCLEAN);
	ck_assert_int_eq(section_entry_decode(k, key_section(k, 9), v, SECTION_VAL_LEN, &s, &disk), 0);
	ck_assert_uint_eq(s, 9);
	ck_assert_uint_eq(disk, 65);
	ck_assert_int_eq(section_entry_decode(k, key_disk(k, 9), v, SECTION_VAL_LEN, &s, &disk),
			 -EUCLEAN);
	ck_assert_int_eq(section_entry_decode(k, key_section(k, 9), v, 0, &s, &disk), -EUCLEAN);
}
END_TEST

static Suite *schema_suite(void)
{
	Suite *s = suite_create("schema");
	TCase *tc = tcase_create("keys");
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_parse_encoders);
	tcase_add_test(tc, test_parse_rejects);
	tcase_add_test(tc, test_section_value);
	tcase_add_test(tc, test_devstats_value);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(schema_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
