/*
 * convert.c: changing the copies and the placement of a file's chunks
 * already written (`lsmfs-disk convert`, control request `convert <ino>
 * <copies> <placement>`; SCHEMA.md "Copies", "Converting the
 * placement"), online, one chunk at a time under its inode's lock
 * (chunk_convert): readers and writers of the file wait for at most one
 * chunk's copy.  Crash-safe per chunk (see chunk_scrub.c); a conversion
 * cut short is finished by running it again, and a chunk left with a
 * stale copy by a scrub.  lsmfs-disk walks the tree and sets the policy
 * attributes itself; the daemon converts each file it is given.
 */
#include "engine.h"
#include "admin.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct chunk_list {
	uint64_t *v;
	size_t n, cap;
};

static int collect(void *ctx, uint64_t chunk, uint64_t durable, const struct chunk_place *place)
{
	(void)durable;
	(void)place;
	struct chunk_list *l = ctx;
	return chunk_list_append(&l->v, &l->n, &l->cap, chunk);
}

int convert_file(struct fs *fs, uint64_t ino, unsigned copies, int placement,
		 int (*out)(void *ctx, const char *line), void *ctx, char *err, size_t errlen)
{
	if (copies > CHUNK_MAX_COPIES)
		return fs_set_err(err, errlen, -EINVAL, "copies %u: 1 to %d (0: as they are)", copies,
				  CHUNK_MAX_COPIES);
	if (!fs_writable(fs))
		return fs_set_err(err, errlen, -EROFS, "mounted read-only");
	/* The chunks first (a scan of its records, no lock), then each under
	 * the inode's lock: one that went meanwhile is passed over. */
	struct chunk_list l = {0};
	int rc = chunk_scan(fs, ino, 0, UINT64_MAX, collect, &l);
	if (rc) {
		free(l.v);
		return fs_set_err(err, errlen, rc, "inode %" PRIu64 ": reading its chunk records: %s",
				  ino, strerror(-rc));
	}
	struct scrub_count sc = {0};
	uint64_t done = 0, left = 0, busy = 0;
	for (size_t i = 0; !rc && i < l.n; i++) {
		int outcome;
		rc = chunk_convert(fs, ino, l.v[i], copies, placement, &sc, &outcome);
		done += outcome == CONVERT_DONE;
		left += outcome == CONVERT_LEFT;
		busy += outcome == CONVERT_BUSY;
	}
	free(l.v);
	if (rc)
		return fs_set_err(err, errlen, rc, "inode %" PRIu64 ": converting its chunks: %s", ino,
				  strerror(-rc));
	char line[256];
	snprintf(line, sizeof(line), "converted {\"ino\":%" PRIu64 ",\"chunks\":%zu,\"changed\":%"
		 PRIu64 ",\"left\":%" PRIu64 ",\"busy\":%" PRIu64 ",\"bytes\":%" PRIu64
		 ",\"unrebuilt\":%" PRIu64 "}", ino, l.n, done, left, busy, sc.bytes, sc.unrebuilt);
	(void)out(ctx, line);
	return 0;
}
