/*
 * oplog.h: cutfs's operation log (test only).
 *
 * cutfs (cutfs.c) appends one record per state-changing operation it
 * serves; a record's index in the log is its sequence number, and "a
 * power cut at point k" means records 0..k-1 happened and nothing after.
 * replay.c reads the log back to build the state a disk could hold after
 * such a cut.
 *
 * Record layout (little-endian, no padding, encoded field by field):
 *   u8  type (enum oplog_type)
 *   u64 a, b, c              meaning per type, below
 *   u16 name1 length, u16 name2 length, u32 data length
 *   name1 bytes, name2 bytes, data bytes
 * The file starts with the 8-byte magic "CUTFSLG1".
 *
 *   OPLOG_MKNODE   a=ino b=kind (OPLOG_FILE or OPLOG_DIR): a new inode, unnamed
 *   OPLOG_LINK     a=dir b=ino name1: entry name1 in dir now names ino
 *                  (replacing whatever it named)
 *   OPLOG_UNLINK   a=dir name1: entry removed
 *   OPLOG_RENAME   a=dir name1 -> name2 within one directory, atomically
 *                  (a rename across directories is logged as LINK in the
 *                  target then UNLINK in the source: two records)
 *   OPLOG_WRITE    a=ino b=offset data
 *   OPLOG_TRUNC    a=ino b=new size
 *   OPLOG_PUNCH    a=ino b=offset c=length: zeroes inside the size
 *   OPLOG_FSYNC    a=ino b=1 for fdatasync: the file's bytes and size durable
 *   OPLOG_FSYNCDIR a=dir: the directory's entries durable
 *   OPLOG_MARK     name1: a note from the workload, no effect on state
 */
#ifndef LSMFS_OPLOG_H
#define LSMFS_OPLOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OPLOG_MAGIC "CUTFSLG1"
#define OPLOG_ROOT_INO 1

enum oplog_type {
	OPLOG_MKNODE = 1,
	OPLOG_LINK,
	OPLOG_UNLINK,
	OPLOG_RENAME,
	OPLOG_WRITE,
	OPLOG_TRUNC,
	OPLOG_PUNCH,
	OPLOG_FSYNC,
	OPLOG_FSYNCDIR,
	OPLOG_MARK,
};

enum { OPLOG_FILE = 1, OPLOG_DIR = 2 };

struct oplog_rec {
	uint8_t type;
	uint64_t a, b, c;
	const char *name1, *name2; /* not NUL-terminated */
	uint16_t len1, len2;
	const uint8_t *data;
	uint32_t dlen;
};

/* Append rec to fp.  Returns 0 or -EIO. */
int oplog_put(FILE *fp, const struct oplog_rec *rec);

/* A log read whole into memory. */
struct oplog {
	uint8_t *buf;
	size_t size;
	struct oplog_rec *recs; /* pointing into buf */
	size_t n;
};

/* Read path.  Returns 0, or -EUCLEAN after printing the offset of the
 * first record that does not decode, or -errno. */
int oplog_load(const char *path, struct oplog *log);
void oplog_free(struct oplog *log);
/* "WRITE ino 12 off 4096 len 512" and the like, for failure reports. */
void oplog_describe(const struct oplog_rec *r, char *out, size_t cap);

#endif
