/*
 * replay.h: what a power cut at point k of a cutfs log leaves on disk.
 *
 * The model (stricter than ext4, on purpose: it finds more bugs):
 *  - a file's bytes and size are durable as of its last FSYNC record
 *    (fsync and fdatasync alike) before the cut; a file never synced is
 *    empty;
 *  - a directory's entries are durable as of its last FSYNCDIR before the
 *    cut; a directory never synced is empty.  Creating a file and fsyncing
 *    the file does not make its name durable, nor does a rename: only
 *    fsyncing the directory does.  A rename within one directory is atomic;
 *    across directories it is a link in the target and an unlink in the
 *    source, each made durable by its own directory's fsync (so a cut may
 *    leave both names, or neither);
 *  - on top of that, each operation after an object's last sync and before
 *    the cut may or may not have reached the disk, independently, with
 *    probability keep_pct: writes torn into 4 KiB-aligned pieces (pages),
 *    truncates, hole punches, directory entries.  Kept operations apply in
 *    log order.  Pages are written back whole and in any order, so each
 *    page ends up as it was after some prefix of its unsynced writes: once
 *    a write to a page is dropped, the later writes to that page are too,
 *    while other pages (before or after it) may be newer.  keep_pct 0 is
 *    "only what was synced", 100 is "everything the daemon wrote" (a
 *    process crash).
 * Hard links come out as hard links.  A directory reachable twice (only a
 * cross-directory rename of a directory could do that) is materialised
 * once.
 */
#ifndef LSMFS_REPLAY_H
#define LSMFS_REPLAY_H

#include "oplog.h"

#include <stdint.h>

struct replay;

/* A replayer at point 0 over log (which must outlive it). */
struct replay *replay_new(const struct oplog *log);
void replay_free(struct replay *r);
/* Self-test of the checker: forget every file sync (fsync and fdatasync
 * records make nothing durable), so acknowledged fsyncs are lost. */
void replay_break_fsync(struct replay *r);
/* Apply records up to (not including) k; k never moves backwards.
 * Returns 0, or -EUCLEAN naming the record that makes no sense. */
int replay_advance(struct replay *r, size_t k);
/* Write the state a cut at the current point may leave into dir (which
 * must exist and be empty), drawing the kept volatile operations from
 * *rng with keep_pct.  Returns 0 or -errno after printing why. */
int replay_materialise(struct replay *r, const char *dir, unsigned keep_pct, uint64_t *rng);

#endif
