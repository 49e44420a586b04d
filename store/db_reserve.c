/*
 * db_reserve: the space held back for writes that free space (FORMAT.md
 * "Full disk").  RESERVE in the store's directory is a file of
 * opt.reserve_bytes preallocated bytes; nothing reads it.  When a
 * STORE_WRITE_RESERVE write cannot append to the commit log for want of
 * space, db_write.c cuts RESERVE shorter and retries; a write without the
 * flag first makes RESERVE whole again (db_reserve_make) and fails with
 * -ENOSPC while it cannot, so the space given back goes to deletions and
 * not to whatever write came next.  This is ext4's reserved blocks for
 * root, held as a real file so that it also works on filesystems without
 * such a reserve (tmpfs, XFS, NFS).
 *
 * Recovery at open draws on it too (FORMAT.md "Recovery"): a table of the
 * replayed logs, the new log or the MANIFEST edit that meets a full disk
 * cuts RESERVE shorter, as an earlier process left it, and is tried again.
 *
 * Invariants: st->reserve_have is RESERVE's length as this process last
 * set it or, once recovery drew on it, found it (0 when it could not be
 * made at all).  A failed preallocate is cut
 * back to reserve_have, so RESERVE never holds space we do not count.
 *
 * Locking: only the writer-queue head (and store_open before the store is
 * shared) calls these, so reserve_have needs no lock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "db_int.h"

#define RESERVE_NAME "RESERVE"

static void reserve_path(const struct store *st, char *out, size_t len)
{
	snprintf(out, len, "%s/" RESERVE_NAME, st->dir);
}

bool db_reserve_short(const struct store *st)
{
	return st->opt.reserve_bytes && st->env->ops->preallocate &&
	       st->reserve_have < st->opt.reserve_bytes;
}

bool db_reserve_whole(const struct store *st)
{
	return st->opt.reserve_bytes && st->env->ops->preallocate &&
	       st->reserve_have == st->opt.reserve_bytes;
}

int db_reserve_make(struct store *st)
{
	if (!db_reserve_short(st))
		return 0;
	char path[4096];
	reserve_path(st, path, sizeof(path));
	int rc = st->env->ops->preallocate(st->env, path, st->opt.reserve_bytes);
	if (rc == 0) {
		st->reserve_have = st->opt.reserve_bytes;
		return 0;
	}
	/* Part of it may have been allocated: give that back, or ordinary
	 * writes would take the space a deletion was promised. */
	(void)st->env->ops->truncate(st->env, path, st->reserve_have); /* best effort */
	return rc;
}

int db_reserve_draw_for_recovery(struct store *st, int err)
{
	if ((err != -ENOSPC && err != -EDQUOT) || !st->opt.reserve_bytes ||
	    !st->env->ops->preallocate)
		return err;
	/* Nothing made RESERVE in this process yet: what an earlier one
	 * left is there to give back. */
	if (st->reserve_have == 0) {
		char path[4096];
		uint64_t size = 0;
		reserve_path(st, path, sizeof(path));
		if (st->env->ops->file_size(st->env, path, &size) == 0)
			st->reserve_have = size < st->opt.reserve_bytes ? size : st->opt.reserve_bytes;
	}
	return db_reserve_release(st, 0, "recovery") == 0 ? 0 : err;
}

int db_reserve_release(struct store *st, uint64_t want, const char *what)
{
	if (!st->opt.reserve_bytes || !st->env->ops->preallocate ||
	    st->reserve_have == 0)
		return -ENOSPC;
	/* Give back a quarter of the reserve at a time (at least what the
	 * write needs): one full-disk episode then serves many deletions
	 * before the reserve is gone. */
	uint64_t give = st->opt.reserve_bytes / 4;
	if (give < want)
		give = want;
	uint64_t keep = st->reserve_have > give ? st->reserve_have - give : 0;
	char path[4096];
	reserve_path(st, path, sizeof(path));
	int rc = st->env->ops->truncate(st->env, path, keep);
	if (rc) {
		db_report(st, "%s: cannot shrink the reserve: %s", path, strerror(-rc));
		return rc;
	}
	db_report(st, "%s: disk full: %llu reserved bytes given back for %s "
		  "(%llu left)", path, (unsigned long long)(st->reserve_have - keep), what,
		  (unsigned long long)keep);
	st->reserve_have = keep;
	return 0;
}
