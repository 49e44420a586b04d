/*
 * fuzz_schema: every decoder of the metadata store's keys and values
 * (fs/format/schema.c: inode_rec_decode, dirent_val_decode, fs_info_decode,
 * devstats_rec_decode;
 * fs/SCHEMA.md "Keys of the metadata store") and the tools' describers of
 * any key and value (tools/inspect/describe.c insp_describe and
 * insp_key_words, the lines of `lsmfs-inspect keys`), which must print
 * damaged records in hex and never crash.
 *
 * Input: u8 n | key[n] | value (the rest); every decoder also gets the
 * whole input as a value.
 *
 * Promises checked: decoders answer 0 or -EUCLEAN; what decodes encodes to
 * bytes that decode to the same encoding; describers write a terminated
 * line that fits their buffer, for any key and value (ASan).
 */
#include <errno.h>
#include <string.h>

#include "fuzz_util.h"
#include "inspect.h"
#include "schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void values(const uint8_t *v, size_t vl)
{
	struct inode_rec r, r2;
	int rc = inode_rec_decode(v, vl, &r);
	fuzz_check(rc == 0 || rc == -EUCLEAN, "inode_rec_decode: %d", rc);
	if (rc == 0) {
		uint8_t a[INODE_REC_LEN], b[INODE_REC_LEN];
		inode_rec_encode(&r, a);
		fuzz_check(inode_rec_decode(a, sizeof(a), &r2) == 0, "re-encoded inode record");
		inode_rec_encode(&r2, b);
		fuzz_check(!memcmp(a, b, sizeof(a)), "inode record changed by re-encoding");
	}

	uint64_t ino;
	uint8_t type;
	rc = dirent_val_decode(v, vl, &ino, &type);
	fuzz_check(rc == 0 || rc == -EUCLEAN, "dirent_val_decode: %d", rc);
	fuzz_check(rc || ino != 0, "an entry to inode 0");

	struct fs_info fi, fi2;
	rc = fs_info_decode(v, vl, &fi);
	fuzz_check(rc == 0 || rc == -EUCLEAN, "fs_info_decode: %d", rc);
	if (rc == 0) {
		fuzz_check(memchr(fi.label, 0, sizeof(fi.label)) != NULL, "label not terminated");
		uint8_t a[FS_INFO_MAX], b[FS_INFO_MAX];
		size_t al = fs_info_encode(&fi, a);
		fuzz_check(fs_info_decode(a, al, &fi2) == 0, "re-encoded fs info");
		size_t bl = fs_info_encode(&fi2, b);
		fuzz_check(al == bl && !memcmp(a, b, al), "fs info changed by re-encoding");
	}

	uint64_t c[DEVSTAT_KINDS], c2[DEVSTAT_KINDS];
	rc = devstats_rec_decode(v, vl, c);
	fuzz_check(rc == 0 || rc == -EUCLEAN, "devstats_rec_decode: %d", rc);
	if (rc == 0) {
		uint8_t a[DEVSTATS_REC_LEN];
		devstats_rec_encode(c, a);
		fuzz_check(!memcmp(a, v, sizeof(a)), "error counters changed by re-encoding");
		fuzz_check(devstats_rec_decode(a, sizeof(a), c2) == 0 && !memcmp(c, c2, sizeof(c)),
			   "re-encoded error counters");
	}
}

static void line_ok(const char *out, size_t cap, const char *who)
{
	fuzz_check(memchr(out, 0, cap) != NULL, "%s: line not terminated", who);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	values(data, size);
	if (size < 1)
		return 0;
	size_t kl = data[0] < size - 1 ? data[0] : size - 1;
	const uint8_t *k = data + 1, *v = data + 1 + kl;
	size_t vl = size - 1 - kl;
	values(v, vl);

	char out[2048];
	memset(out, 'x', sizeof(out));
	insp_describe(NULL, k, kl, v, vl, out, sizeof(out));
	line_ok(out, sizeof(out), "insp_describe");
	/* With a section map, as lsmfs-inspect has once the store opened. */
	uint32_t map[7] = {0, 1, UINT32_MAX, 2, 0, 1, UINT32_MAX};
	struct insp in = {0};
	in.info.sections = 7;
	in.section_disk = map;
	insp_describe(&in, k, kl, v, vl, out, sizeof(out));
	line_ok(out, sizeof(out), "insp_describe");
	char small[24];
	insp_describe(&in, k, kl, v, vl, small, sizeof(small));
	line_ok(small, sizeof(small), "insp_describe (short buffer)");
	insp_key_words(k, kl, out, sizeof(out));
	line_ok(out, sizeof(out), "insp_key_words");
	return 0;
}
