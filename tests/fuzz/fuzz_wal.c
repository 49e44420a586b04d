/*
 * fuzz_wal: the commit-log reader (store/wal.c, FORMAT.md "Commit log"),
 * which reads both the commit logs and the MANIFEST.  The input is the
 * whole file.  Reads every record as recovery does; after a corruption
 * error, resyncs as salvage does (bounded), and decodes every record read
 * both as a write batch (a commit log's payload) and as a version edit (a
 * MANIFEST's), as the store would.
 *
 * Promises checked: an -EUCLEAN comes with a message and an offset inside
 * the file; the good offset never passes the end of the file; records
 * handed out lie inside the input or the reader's own buffer (ASan).
 */
#include <errno.h>
#include <string.h>

#include "batch.h"
#include "fuzz_util.h"
#include "version.h"
#include "wal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_op(void *ctx, uint64_t seq, int type, const uint8_t *key,
		    size_t klen, const uint8_t *val, size_t vlen)
{
	(void)seq;
	(void)type;
	/* Touch every byte so ASan sees an out-of-bounds key or value. */
	unsigned *sum = ctx;
	for (size_t i = 0; i < klen; i++)
		*sum += key[i];
	for (size_t i = 0; i < vlen; i++)
		*sum += val[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	struct fuzz_memenv m;
	fuzz_memenv_init(&m, data, size);
	struct wal_reader *r;
	int rc = wal_reader_open(&m.env, "fuzz.log", &r);
	fuzz_check(rc == 0, "wal_reader_open: %d", rc);
	unsigned sum = 0;
	int resyncs = 0;
	for (int records = 0; records < 100000; records++) {
		const uint8_t *rec;
		size_t len;
		rc = wal_read_record(r, &rec, &len);
		fuzz_check(wal_reader_good_offset(r) <= size, "good offset %llu past %zu",
			   (unsigned long long)wal_reader_good_offset(r), size);
		if (rc == 1) {
			fuzz_check(rec != NULL, "a record without bytes");
			(void)batch_iterate(rec, len, count_op, &sum); /* any answer is fine */
			struct version_edit e;
			version_edit_init(&e);
			(void)version_edit_decode(&e, rec, len);
			version_edit_free(&e);
			continue;
		}
		if (rc == 0)
			break;
		fuzz_check(rc == -EUCLEAN, "wal_read_record: unexpected %d", rc);
		const struct wal_error *err = wal_reader_error(r);
		fuzz_check(err->msg[0] != '\0', "corruption without a message");
		fuzz_check(err->offset <= size, "error offset %llu past the end %zu",
			   (unsigned long long)err->offset, size);
		if (++resyncs > 64)
			break;
		rc = wal_reader_resync(r);
		fuzz_check(rc == 0, "wal_reader_resync: %d", rc);
	}
	wal_reader_close(r);
	return 0;
}
