/*
 * fuzz_super: the superblock decoder (fs/format/super.c super_decode; fs/SCHEMA.md
 * "Superblock").  The input is a whole <disk>/.lsmfs/super file.  It is
 * decoded as given, and again with its length field and XXH3-64 trailer
 * made right, so that mutations reach the field checks behind them.
 *
 * Promises checked: a rejection is -EUCLEAN with a message naming a byte
 * offset; an accepted block has its fields in range (disk index below the
 * count, count 1..LSMFS_MAX_DISKS, sections 1..LSMFS_MAX_SECTIONS (a mount reads
 * the whole map), chunk size a power of
 * two >= 4096, an absolute or empty NUL-terminated metadata path, a
 * NUL-terminated label) and re-encodes to a block that decodes to the
 * same fields.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fs.h"
#include "fuzz_util.h"
#include "schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const uint8_t *data, size_t size)
{
	struct lsmfs_super sb, again;
	char err[256] = "";
	int rc = super_decode(data, size, &sb, err, sizeof(err));
	if (rc) {
		fuzz_check(rc == -EUCLEAN, "super_decode: unexpected %d", rc);
		fuzz_check(strncmp(err, "offset ", 7) == 0, "a rejection without its offset: '%s'",
			   err);
		return;
	}
	fuzz_check(sb.disk_count >= 1 && sb.disk_count <= LSMFS_MAX_DISKS, "disk count %u",
		   sb.disk_count);
	fuzz_check(sb.disk_index < sb.disk_count, "disk index %u of %u", sb.disk_index,
		   sb.disk_count);
	fuzz_check(sb.sections >= 1 && sb.sections <= LSMFS_MAX_SECTIONS, "%u sections", sb.sections);
	fuzz_check(sb.chunk_size >= 4096 && !(sb.chunk_size & (sb.chunk_size - 1)),
		   "chunk size %llu", (unsigned long long)sb.chunk_size);
	fuzz_check(memchr(sb.label, 0, sizeof(sb.label)) != NULL, "label not terminated");
	fuzz_check(sb.meta_count >= 1 && sb.meta_count <= LSMFS_MAX_META_COPIES, "%u store copies",
		   sb.meta_count);
	for (uint32_t c = 0; c < sb.meta_count; c++) {
		size_t mlen = strnlen(sb.meta[c].dir, sizeof(sb.meta[c].dir));
		fuzz_check(mlen < sizeof(sb.meta[c].dir), "metadata path not terminated");
		fuzz_check(mlen == 0 || sb.meta[c].dir[0] == '/', "relative metadata path");
		fuzz_check((mlen > 0) == (sb.meta[c].disk == LSMFS_META_ON_DIR),
			   "a copy both on a disk and in a directory");
		fuzz_check(sb.meta[c].disk == LSMFS_META_ON_DIR || sb.meta[c].disk < sb.disk_count,
			   "a copy on disk %u of %u", sb.meta[c].disk, sb.disk_count);
	}

	uint8_t *buf = malloc(LSMFS_SUPER_MAX);
	fuzz_check(buf != NULL, "malloc");
	size_t len;
	rc = super_encode(&sb, buf, LSMFS_SUPER_MAX, &len);
	fuzz_check(rc == 0, "a decoded superblock does not encode: %d", rc);
	rc = super_decode(buf, len, &again, err, sizeof(err));
	fuzz_check(rc == 0, "a re-encoded superblock does not decode: %s", err);
	/* Versions 1 and 2 are read, version 3 written: the fields carry over. */
	fuzz_check(again.version == LSMFS_SUPER_VERSION && again.disk_index == sb.disk_index &&
			   again.generation == sb.generation && again.flags == sb.flags &&
			   super_copies_equal(&again, &sb) &&
			   again.disk_count == sb.disk_count && again.sections == sb.sections &&
			   again.chunk_size == sb.chunk_size && again.inline_max == sb.inline_max &&
			   again.created == sb.created && !strcmp(again.label, sb.label) &&
			   !memcmp(again.fs_uuid, sb.fs_uuid, 16) &&
			   !memcmp(again.disk_uuid, sb.disk_uuid, 16) &&
			   !memcmp(again.disk_uuids, sb.disk_uuids, 16u * sb.disk_count),
		   "re-encoding changed the superblock");
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	decode(data, size);
	/* Length field (offset 12) and checksum trailer made right. */
	if (size < 16 + 8 || size > UINT32_MAX)
		return 0;
	uint8_t *fixed = malloc(size);
	fuzz_check(fixed != NULL, "malloc");
	memcpy(fixed, data, size);
	put_le32(fixed + 12, (uint32_t)size);
	put_le64(fixed + size - 8, XXH3_64bits(fixed, size - 8));
	decode(fixed, size);
	free(fixed);
	return 0;
}
