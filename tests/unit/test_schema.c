/*
 * test_schema: fs/format/schema.c's key table and key_parse, the `E` value
 * codec, section.c's `P` value codec and sums.c's chunk record value
 * (suite "schema").
 *
 * The table names every KEY_* once; each encoder's key parses back to its
 * type and fields; a key one byte short or long of its type's layout, or
 * of an unknown type, does not parse (fs/SCHEMA.md "Keys of the metadata
 * store").  lsmfs-inspect's help, man page and completion are checked
 * against the same table by tests/doc.  The `C` value (SCHEMA.md "Chunk
 * lengths", "Chunk checksums"): every form chunk_value_put writes parses
 * back to what was put, byte for byte where SCHEMA.md lays it out, a
 * section named or not; a length rewritten keeps the section; the section
 * a value gives is the one it names, else the hash, and one past the count
 * is damage.  The `M scrub` value (SCHEMA.md "Scrub"): every field and the
 * files named round trip at the offsets SCHEMA.md gives; another version,
 * a state out of range, a file cut short or more files named than it
 * counts do not decode.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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

/* put then parse: the same fields back, the sums where SCHEMA.md puts
 * them (after the section when one is named). */
static void round_trip(uint8_t flags, uint32_t section, unsigned shift, uint32_t nsums)
{
	uint32_t sums[8];
	uint8_t v[CHUNK_PLACED_HDR + 4 * 8];
	for (uint32_t i = 0; i < nsums; i++)
		sums[i] = 0x01020304u * (i + 1);
	size_t vl = chunk_value_put(0x1122334455667788ull, flags, 0xdeadbeefu, section, shift, sums,
				    nsums, v);
	bool placed = section != CHUNK_HASHED, summed = flags & CHUNK_SUMS;
	size_t hdr = placed ? CHUNK_PLACED_HDR : CHUNK_SUMS_HDR;
	ck_assert_uint_eq(vl, hdr + (summed ? 4 * (size_t)nsums : 0));
	ck_assert_uint_eq(v[0], 0x88);
	ck_assert_uint_eq(v[7], 0x11);
	ck_assert_uint_eq(v[8] & CHUNK_PLACED, placed ? CHUNK_PLACED : 0);
	ck_assert_uint_eq(v[9], 0xef);
	ck_assert_uint_eq(v[13], summed ? shift : 0);
	if (placed) {
		ck_assert_uint_eq(v[14], section & 0xff);
		ck_assert_uint_eq(v[17], section >> 24);
	}
	if (summed && nsums) {
		ck_assert_uint_eq(v[hdr], 0x04);
		ck_assert_uint_eq(v[hdr + 3], 0x01);
	}
	struct chunk_value cv;
	ck_assert_int_eq(chunk_value_parse(v, vl, &cv), 0);
	ck_assert_uint_eq(cv.durable, 0x1122334455667788ull);
	ck_assert_uint_eq(cv.flags, (flags & ~CHUNK_PLACED) | (placed ? CHUNK_PLACED : 0));
	ck_assert_uint_eq(cv.gen, 0xdeadbeefu);
	ck_assert_uint_eq(cv.shift, summed ? shift : 0);
	ck_assert_uint_eq(cv.section, section);
	ck_assert_uint_eq(cv.nsums, summed ? nsums : 0);
	for (uint32_t i = 0; i < cv.nsums; i++)
		ck_assert_uint_eq(chunk_value_sum(&cv, i), sums[i]);
	ck_assert_uint_eq(chunk_value_sum(&cv, cv.nsums), 0); /* past them: not known */
	uint64_t durable = 0;
	ck_assert_int_eq(chunk_value_decode(v, vl, &durable), 0);
	ck_assert_uint_eq(durable, 0x1122334455667788ull);
	ck_assert(!chunk_value_lost(v, vl));
	/* One byte short of the header or of a sum: damaged. */
	ck_assert_int_eq(chunk_value_parse(v, hdr - 1, &cv), -EUCLEAN);
	if (summed && nsums)
		ck_assert_int_eq(chunk_value_parse(v, vl - 1, &cv), -EUCLEAN);
	/* A length rewritten: the section kept, nothing else. */
	uint8_t r[CHUNK_PLACED_HDR];
	size_t rl = chunk_value_relength(v, vl, 4096, r);
	ck_assert_uint_eq(rl, placed ? CHUNK_PLACED_HDR : CHUNK_VAL_LEN);
	ck_assert_int_eq(chunk_value_parse(r, rl, &cv), 0);
	ck_assert_uint_eq(cv.durable, 4096);
	ck_assert_uint_eq(cv.section, section);
	ck_assert_uint_eq(cv.flags, placed ? CHUNK_PLACED : 0);
	ck_assert_uint_eq(cv.nsums, 0);
}

START_TEST(test_chunk_value)
{
	round_trip(CHUNK_SUMS, CHUNK_HASHED, 12, 3);
	round_trip(CHUNK_SUMS | CHUNK_INWRITE, 5, 16, 8);
	round_trip(CHUNK_SUMS, 0, 12, 0);
	round_trip(CHUNK_INWRITE, CHUNK_HASHED, 12, 2); /* no sums: no shift, none written */
	round_trip(CHUNK_INWRITE, 0xfffffffeu, 0, 0);
	round_trip(0, 7, 0, 0);
	/* CHUNK_PLACED is the section's to set: asked for without one, it is
	 * not written. */
	round_trip(CHUNK_PLACED | CHUNK_SUMS, CHUNK_HASHED, 13, 1);

	/* Two copies, the second stale: given after the section, and kept
	 * (with the section) when the length is rewritten. */
	{
		const uint32_t sums[2] = {7, 9};
		const struct chunk_place pl = {.section = 6, .copies = 2, .stale = 2};
		uint8_t w[CHUNK_COPIES_HDR + 8], r[CHUNK_COPIES_HDR];
		struct chunk_value cv;
		size_t wl = chunk_value_put_place(123, CHUNK_SUMS, 4, &pl, 12, sums, 2, w);
		ck_assert_uint_eq(wl, CHUNK_COPIES_HDR + 8);
		ck_assert_uint_eq(w[CHUNK_PLACED_HDR], 2);
		ck_assert_uint_eq(w[CHUNK_PLACED_HDR + 1], 2);
		ck_assert_int_eq(chunk_value_parse(w, wl, &cv), 0);
		ck_assert_uint_eq(cv.section, 6);
		ck_assert_uint_eq(cv.copies, 2);
		ck_assert_uint_eq(cv.stale, 2);
		ck_assert_uint_eq(chunk_value_sum(&cv, 1), 9);
		size_t rl = chunk_value_relength(w, wl, 55, r);
		ck_assert_uint_eq(rl, CHUNK_COPIES_HDR);
		ck_assert_int_eq(chunk_value_parse(r, rl, &cv), 0);
		ck_assert_uint_eq(cv.durable, 55);
		ck_assert_uint_eq(cv.section, 6);
		ck_assert_uint_eq(cv.copies, 2);
		ck_assert_uint_eq(cv.stale, 2);
		ck_assert_uint_eq(cv.nsums, 0);
	}

	/* The older forms: empty, a length, lost; none names a section. */
	struct chunk_value cv;
	uint8_t v[CHUNK_PLACED_HDR + 8], r[CHUNK_PLACED_HDR];
	ck_assert_int_eq(chunk_value_parse(v, 0, &cv), 0);
	ck_assert_uint_eq(cv.durable, 0);
	ck_assert_uint_eq(cv.section, CHUNK_HASHED);
	ck_assert_uint_eq(chunk_value_relength(v, 0, 77, r), CHUNK_VAL_LEN);
	ck_assert_int_eq(chunk_value_parse(r, CHUNK_VAL_LEN, &cv), 0);
	ck_assert_uint_eq(cv.durable, 77);
	ck_assert_uint_eq(cv.section, CHUNK_HASHED);
	chunk_value_encode_lost(99, v);
	ck_assert(chunk_value_lost(v, CHUNK_LOST_LEN));
	ck_assert_int_eq(chunk_value_parse(v, CHUNK_LOST_LEN, &cv), 0);
	ck_assert_uint_eq(cv.durable, 99);
	ck_assert_uint_eq(cv.section, CHUNK_HASHED);
	ck_assert_uint_eq(chunk_value_relength(v, CHUNK_LOST_LEN, 5, r), CHUNK_VAL_LEN);

	/* Damaged: a flag no one knows, a shift without sums, a named
	 * section that is CHUNK_HASHED, a header cut short.  A length
	 * rewritten from one names no section. */
	size_t vl = chunk_value_put(10, 0, 1, 3, 0, NULL, 0, v);
	v[8] |= 0x80;
	ck_assert_int_eq(chunk_value_parse(v, vl, &cv), -EUCLEAN);
	ck_assert_uint_eq(chunk_value_relength(v, vl, 5, r), CHUNK_VAL_LEN);
	vl = chunk_value_put(10, 0, 1, 3, 0, NULL, 0, v);
	v[13] = 12;
	ck_assert_int_eq(chunk_value_parse(v, vl, &cv), -EUCLEAN);
	vl = chunk_value_put(10, 0, 1, 3, 0, NULL, 0, v);
	memset(v + CHUNK_SUMS_HDR, 0xff, 4);
	ck_assert_int_eq(chunk_value_parse(v, vl, &cv), -EUCLEAN);
	ck_assert_int_eq(chunk_value_parse(v, CHUNK_SUMS_HDR, &cv), -EUCLEAN); /* PLACED, no section */
	ck_assert_int_eq(chunk_value_parse(v, CHUNK_VAL_LEN - 1, &cv), -EUCLEAN);
}
END_TEST

/* The section a record gives: the one it names, else the hash; one past
 * the count, or a value that does not parse, is -EUCLEAN with the hash. */
START_TEST(test_chunk_value_section)
{
	const uint32_t n = 64;
	const uint64_t ino = 4711, chunk = 3;
	const uint32_t hash = chunk_section(ino, chunk, n);
	uint8_t v[CHUNK_PLACED_HDR];
	uint32_t s = 12345;
	ck_assert_int_eq(chunk_value_section(NULL, 0, ino, chunk, n, &s), 0);
	ck_assert_uint_eq(s, hash);
	ck_assert_int_eq(chunk_value_section(v, 0, ino, chunk, n, &s), 0);
	ck_assert_uint_eq(s, hash);
	size_t vl = chunk_value_put(1, CHUNK_INWRITE, 9, CHUNK_HASHED, 0, NULL, 0, v);
	ck_assert_int_eq(chunk_value_section(v, vl, ino, chunk, n, &s), 0);
	ck_assert_uint_eq(s, hash);
	for (uint32_t named = 0; named < n; named += 21) {
		vl = chunk_value_put(1, 0, 9, named, 0, NULL, 0, v);
		ck_assert_int_eq(chunk_value_section(v, vl, ino, chunk, n, &s), 0);
		ck_assert_uint_eq(s, named);
	}
	vl = chunk_value_put(1, 0, 9, n - 1, 0, NULL, 0, v);
	ck_assert_int_eq(chunk_value_section(v, vl, ino, chunk, n, &s), 0);
	ck_assert_uint_eq(s, n - 1);
	vl = chunk_value_put(1, 0, 9, n, 0, NULL, 0, v);
	s = 12345;
	ck_assert_int_eq(chunk_value_section(v, vl, ino, chunk, n, &s), -EUCLEAN);
	ck_assert_uint_eq(s, hash);
	/* The same value in a filesystem of more sections is good. */
	ck_assert_int_eq(chunk_value_section(v, vl, ino, chunk, n + 1, &s), 0);
	ck_assert_uint_eq(s, n);
	ck_assert_int_eq(chunk_value_section(v, 3, ino, chunk, n, &s), -EUCLEAN);
	ck_assert_uint_eq(s, hash);
}
END_TEST

START_TEST(test_scrub_record)
{
	char p0[] = "/a/b", p1[] = "/c";
	struct scrub_file named[2] = {{.ino = 17, .path = p0}, {.ino = 1ull << 40, .path = p1}};
	struct scrub_record r = {.state = SCRUB_CANCELLED, .started = 1000, .updated = 2000,
				 .elapsed_ms = 3456, .ino = 99, .chunk = 7, .rate = 1 << 20,
				 .count = {1, 2, 3, 4, 5, 6, 7, 8}, .total_chunks = 10,
				 .total_bytes = 11, .error = 0, .files = 3, .nnamed = 2,
				 .named = named};
	uint8_t *v;
	size_t vl;
	ck_assert_int_eq(scrub_record_encode(&r, &v, &vl), 0);
	ck_assert_uint_eq(vl, SCRUB_RECORD_FIXED + 12 + 4 + 12 + 2);
	ck_assert_uint_eq(v[0], 1);
	ck_assert_uint_eq(v[1], SCRUB_CANCELLED);
	ck_assert_uint_eq(get_le64(v + 26), 99);   /* ino */
	ck_assert_uint_eq(get_le64(v + 34), 7);    /* chunk */
	ck_assert_uint_eq(get_le64(v + 50), 1);    /* chunks */
	ck_assert_uint_eq(get_le64(v + 106), 8);   /* skipped */
	ck_assert_uint_eq(get_le32(v + 134), 3);   /* files */
	ck_assert_uint_eq(get_le64(v + 138), 17);
	ck_assert_uint_eq(get_le32(v + 146), 4);
	ck_assert(!memcmp(v + 150, "/a/b", 4));
	struct scrub_record d;
	ck_assert_int_eq(scrub_record_decode(v, vl, &d), 0);
	ck_assert_uint_eq(d.state, SCRUB_CANCELLED);
	ck_assert_uint_eq(d.started, 1000);
	ck_assert_uint_eq(d.updated, 2000);
	ck_assert_uint_eq(d.elapsed_ms, 3456);
	ck_assert_uint_eq(d.rate, 1 << 20);
	ck_assert_uint_eq(d.count.unrepaired, 5);
	ck_assert_uint_eq(d.count.skipped, 8);
	ck_assert_uint_eq(d.total_bytes, 11);
	ck_assert_uint_eq(d.files, 3);
	ck_assert_uint_eq(d.nnamed, 2);
	ck_assert_uint_eq(d.named[1].ino, 1ull << 40);
	ck_assert_str_eq(d.named[0].path, "/a/b");
	ck_assert_str_eq(d.named[1].path, "/c");
	scrub_record_free(&d);
	ck_assert_int_eq(scrub_record_decode(v, SCRUB_RECORD_FIXED, &d), 0);
	ck_assert_uint_eq(d.nnamed, 0);
	/* Cut inside a file, cut in the fixed part. */
	ck_assert_int_eq(scrub_record_decode(v, vl - 1, &d), -EUCLEAN);
	ck_assert_int_eq(scrub_record_decode(v, SCRUB_RECORD_FIXED + 5, &d), -EUCLEAN);
	ck_assert_int_eq(scrub_record_decode(v, SCRUB_RECORD_FIXED - 1, &d), -EUCLEAN);
	/* More files named than counted; a NUL in a path. */
	put_le32(v + 134, 1);
	ck_assert_int_eq(scrub_record_decode(v, vl, &d), -EUCLEAN);
	put_le32(v + 134, 3);
	v[151] = 0;
	ck_assert_int_eq(scrub_record_decode(v, vl, &d), -EUCLEAN);
	v[151] = 'a';
	/* Another version; states none and past the last. */
	v[0] = 2;
	ck_assert_int_eq(scrub_record_decode(v, vl, &d), -EUCLEAN);
	v[0] = 1;
	v[1] = SCRUB_NONE;
	ck_assert_int_eq(scrub_record_decode(v, vl, &d), -EUCLEAN);
	v[1] = SCRUB_STATES;
	ck_assert_int_eq(scrub_record_decode(v, vl, &d), -EUCLEAN);
	free(v);
	for (int i = 0; i < SCRUB_STATES; i++)
		ck_assert_ptr_nonnull(scrub_state_names[i]);
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
	tcase_add_test(tc, test_chunk_value);
	tcase_add_test(tc, test_chunk_value_section);
	tcase_add_test(tc, test_scrub_record);
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
