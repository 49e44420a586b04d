/*
 * wal: the commit-log record format, shared by the commit log (*.log) and
 * the MANIFEST.  The file is a sequence of 32 KiB blocks; a record is cut
 * into fragments that never span a block boundary, each with a 7-byte
 * header: checksum (le32, checksum32 over type byte + payload), length
 * (le16), type (FULL=1, FIRST=2, MIDDLE=3, LAST=4).  A block tail too short
 * for a header is zero-filled.  FORMAT.md "Commit log".
 *
 * A writer belongs to one thread at a time (the store serializes writers).
 */
#ifndef LSMFS_STORE_WAL_H
#define LSMFS_STORE_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "env.h"

#define WAL_BLOCK_SIZE 32768
#define WAL_HEADER_SIZE 7

struct wal_writer;

/* Create path (truncating it) and return a writer. */
int wal_writer_open(struct store_env *env, const char *path,
		    struct wal_writer **out);
/* Append one record (buffered: not yet visible to the OS). */
int wal_add_record(struct wal_writer *w, const void *data, size_t len);
/* Hand buffered records to the OS (survives a process crash). */
int wal_flush(struct wal_writer *w);
/* flush + fsync (survives a power cut). */
int wal_sync(struct wal_writer *w);
/* Bytes written to the file so far, headers and padding included. */
uint64_t wal_writer_size(const struct wal_writer *w);
/* Flush and close; the writer is freed even on error. */
int wal_writer_close(struct wal_writer *w);

struct wal_reader;

int wal_reader_open(struct store_env *env, const char *path,
		    struct wal_reader **out);
/*
 * Read the next whole record: returns 1 with *rec and *len (valid until the next
 * call), 0 at a clean end of file, or -EUCLEAN when a fragment is bad
 * (checksum, length, type or order) or the file ends inside a record.
 * After -EUCLEAN, wal_reader_error() describes it; reading further is
 * undefined.  -EIO etc. for read errors.
 */
int wal_read_record(struct wal_reader *r, const uint8_t **rec, size_t *len);

struct wal_error {
	uint64_t offset;   /* file offset of the first bad byte/fragment */
	bool tail;         /* nothing valid follows: a torn tail */
	char msg[160];     /* what was wrong, without the file name */
};
const struct wal_error *wal_reader_error(const struct wal_reader *r);
/* After -EUCLEAN: go on reading at the next block boundary after the bad
 * fragment (salvage).  A record that began in the damaged span is lost
 * with it; its continuation fragments are reported as errors again.  0, or
 * the sticky error when it is not a corruption. */
int wal_reader_resync(struct wal_reader *r);
/* File offset just past the last whole record returned: where a torn tail
 * is cut. */
uint64_t wal_reader_good_offset(const struct wal_reader *r);
void wal_reader_close(struct wal_reader *r);

#endif
