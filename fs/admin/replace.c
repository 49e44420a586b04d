/*
 * replace.c: a disk replaced by a new one (SCHEMA.md "Replacing a disk";
 * `lsmfs-disk replace OLD NEWDISK`, as `btrfs replace start`): the new
 * disk added, the old one's sections moved straight onto it (or, the old
 * disk dead, given to it empty and its copies rebuilt there), then the old
 * one detached.  This file owns what holds the steps together, the record
 * `M replace` (format/replace_record.c); the steps are the others': the
 * addition and the detach members.c's, the moves move.c's (asked one by
 * one by lsmfs-disk, as `remove` asks them), the store's copy copies.c's,
 * a dead disk's sections and copies lost.c's.
 *
 *   replace_begin  under the change lock (members_change_begin): `M
 *                  replace` = (old disk, its UUID, a new UUID), synced;
 *                  then the addition, which gives the new disk that UUID.
 *                  A crash in between leaves a record whose new disk is
 *                  no member: void, written anew by the next begin.
 *   (lsmfs-disk)   each of the old disk's sections moved to the new one,
 *                  its copy of the store moved there (copy-add, then
 *                  copy-remove): requests of their own, each crash-safe.
 *   replace_end    under the change lock: the old disk detached (present)
 *                  or dropped as lost with its sections going to the new
 *                  disk (lost_drop_disk_locked: stale copies rebuilt
 *                  there); then the record deleted.  A crash in between
 *                  leaves a record whose old disk is no member: finished.
 *
 * The record names both disks by UUID, so that a slot taken again by
 * another disk is never taken for either.  While its new disk is a member
 * and its old one too, a replace is under way: run again with the same
 * new disk it goes on (begin answers resumed), any other is refused.
 */
#include "engine.h"
#include "admin.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The member slot whose UUID is uuid (present or missing), or UINT32_MAX. */
static uint32_t slot_of(const struct lsmfs_diskset *ds, const uint8_t uuid[16])
{
	for (uint32_t d = 0; d < ds->sb.disk_count && d < LSMFS_MAX_DISKS; d++)
		if (!super_slot_empty(&ds->sb, d) && !memcmp(ds->sb.disk_uuids[d], uuid, 16))
			return d;
	return UINT32_MAX;
}

static bool old_member(const struct lsmfs_diskset *ds, const struct replace_record *r)
{
	return slot_of(ds, r->old_uuid) == r->old;
}

/* Is the directory path the disk the record calls new (its superblock
 * says so)? */
static bool is_new_disk(const struct lsmfs_diskset *ds, const char *path,
			const struct replace_record *r)
{
	struct lsmfs_super sb;
	char why[1024];
	return super_read(path, &sb, why, sizeof(why)) == 0 &&
	       !memcmp(sb.fs_uuid, ds->sb.fs_uuid, 16) && !memcmp(sb.disk_uuid, r->new_uuid, 16);
}

static int record_put(struct fs *fs, const struct replace_record *r)
{
	uint8_t k[KEY_MAX], v[REPLACE_RECORD_LEN];
	replace_record_encode(r, v);
	return store_put(fs->st, k, key_meta(k, META_REPLACE), v, sizeof(v), STORE_WRITE_SYNC);
}

static int record_delete(struct fs *fs)
{
	uint8_t k[KEY_MAX];
	return store_delete(fs->st, k, key_meta(k, META_REPLACE), STORE_WRITE_SYNC);
}

/* The record, or none (0) when it is damaged: said in the log, and taken
 * for none (a begin writes it anew; fsck.lsmfs does not need it). */
static int record_get(struct fs *fs, struct replace_record *r, char *err, size_t errlen)
{
	int rc = replace_record_get(fs->st, r);
	if (rc == -EUCLEAN) {
		fs_logf(fs, "%s: the record of a disk replace (M " META_REPLACE ") is damaged: taken "
			"for none", fs->ds->meta_dir);
		return 0;
	}
	if (rc < 0)
		fs_set_err(err, errlen, rc, "%s: reading the record of a disk replace (M " META_REPLACE
			   "): %s", fs->ds->meta_dir, strerror(-rc));
	return rc;
}

static int answer(int (*out)(void *, const char *), void *ctx, uint32_t old, uint32_t n,
		  bool resumed, bool done, bool dry)
{
	char line[160];
	snprintf(line, sizeof(line), "replace {\"old\":%" PRIu32 ",\"new\":%" PRIu32 ",\"resumed\":%s,"
		 "\"done\":%s,\"dry\":%s}", old, n, resumed ? "true" : "false",
		 done ? "true" : "false", dry ? "true" : "false");
	(void)out(ctx, line); /* an asker gone: the disk stays added, the record says why */
	return 0;
}

int replace_begin(struct fs *fs, uint32_t old, const char *path, bool force, bool dry,
		  int (*out)(void *ctx, const char *line), void *ctx, char *err, size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	if (path[0] != '/')
		return fs_set_err(err, errlen, -EINVAL, "replace: the new disk's path must be absolute");
	int rc = dry ? 0 : members_change_begin(fs, err, errlen);
	if (rc)
		return rc;
	struct replace_record r;
	int got = record_get(fs, &r, err, errlen);
	if (got < 0) {
		rc = got;
		goto out;
	}
	if (got) {
		uint32_t n = slot_of(ds, r.new_uuid);
		bool live = old_member(ds, &r);
		if (n != UINT32_MAX && is_new_disk(ds, path, &r) && (r.old == old || !live)) {
			/* This replace again: it goes on (or it is over: only
			 * its record is left for replace_end to delete), on
			 * the new disk only when that is there. */
			if (!diskset_present(ds, n) || !disk_usable(fs, n))
				rc = fs_set_err(err, errlen, -ENODEV, "disk %" PRIu32 ", the new disk of "
					     "this replace, is not there: give it with the others",
					     n);
			else
				rc = answer(out, ctx, r.old, n, live, !live, dry);
			goto out;
		}
		if (n != UINT32_MAX && live) {
			rc = fs_set_err(err, errlen, -EBUSY, "disk %" PRIu32 " is being replaced by disk %"
				     PRIu32 " (%s): run lsmfs-disk replace %" PRIu32 " %s again to "
				     "finish that first", r.old, n, ds->paths[n] ? ds->paths[n] : "missing",
				     r.old, ds->paths[n] ? ds->paths[n] : "NEWDISK");
			goto out;
		}
		/* Else void (its new disk never became a member) or over:
		 * written anew below. */
	}
	if (old >= LSMFS_MAX_DISKS || old >= ds->sb.disk_count || super_slot_empty(&ds->sb, old)) {
		rc = fs_set_err(err, errlen, -ENOENT, "no disk %" PRIu32, old);
		goto out;
	}
	uint32_t n;
	if (dry) {
		rc = members_add_locked(fs, path, force, NULL, true, &n, err, errlen);
		if (!rc)
			rc = answer(out, ctx, old, n, false, false, true);
		goto out;
	}
	/* The record first, naming the UUID the new disk gets: whatever a
	 * crash leaves of the addition is then this replace's. */
	struct replace_record nr = {.old = old};
	memcpy(nr.old_uuid, ds->sb.disk_uuids[old], 16);
	if ((rc = lsmfs_uuid_generate(nr.new_uuid))) {
		fs_set_err(err, errlen, rc, "making the new disk's UUID: %s", strerror(-rc));
		goto out;
	}
	if ((rc = record_put(fs, &nr))) {
		fs_set_err(err, errlen, rc, "%s: recording the replace: %s", ds->meta_dir,
			   strerror(-rc));
		goto out;
	}
	rc = members_add_locked(fs, path, force, nr.new_uuid, false, &n, err, errlen);
	if (rc && slot_of(ds, nr.new_uuid) == UINT32_MAX) {
		/* Its new disk no member: the record is void anyway.  (One
		 * that failed after the disk joined keeps it: run again, the
		 * replace goes on.) */
		int r2 = record_delete(fs);
		if (r2)
			fs_logf(fs, "replace of disk %" PRIu32 " refused; its record stays (void): %s",
				old, strerror(-r2));
		goto out;
	}
	if (fs->se)
		fs_logf(fs, "replacing disk %" PRIu32 " by disk %" PRIu32 " (%s), added", old, n,
			ds->paths[n]);
	rc = answer(out, ctx, old, n, false, false, false);
out:
	if (!dry)
		members_change_end(fs);
	return rc;
}

int replace_end(struct fs *fs, uint32_t old, bool lost, int (*out)(void *ctx, const char *line),
		void *ctx, char *err, size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	int rc = members_change_begin(fs, err, errlen);
	if (rc)
		return rc;
	struct replace_record r;
	int got = record_get(fs, &r, err, errlen);
	if (got <= 0 || r.old != old) {
		rc = got < 0 ? got : fs_set_err(err, errlen, -ENOENT, "no replace of disk %" PRIu32
					       " is recorded (lsmfs-disk replace starts one)", old);
		goto out;
	}
	uint32_t n = slot_of(ds, r.new_uuid);
	if (n == UINT32_MAX) {
		rc = fs_set_err(err, errlen, -ENOENT, "the replace of disk %" PRIu32 " never added its "
			     "new disk: start it again (lsmfs-disk replace)", old);
		goto out;
	}
	if (old_member(ds, &r)) {
		/* Present: it holds nothing any more (else detach refuses,
		 * saying what).  Gone: what it held is given to the new disk,
		 * and every copy left with one is rebuilt, there. */
		if (disk_usable(fs, old))
			rc = members_detach_locked(fs, old, err, errlen);
		else if (lost)
			rc = lost_drop_disk_locked(fs, old, n, out, ctx, err, errlen);
		else
			rc = fs_set_err(err, errlen, -ENODEV, "disk %" PRIu32 " is not usable here (missing "
					"or failing): if it is dead for good, say so (lsmfs-disk replace "
					"--lost: what it alone held is lost); else mount with it and run "
					"the replace again", old);
		if (rc)
			goto out;
	}
	int r2 = record_delete(fs);
	if (r2) /* over all the same: a record whose old disk is gone says so */
		fs_logf(fs, "disk %" PRIu32 " replaced; deleting the record of the replace: %s", old,
			strerror(-r2));
	if (fs->se)
		fs_logf(fs, "disk %" PRIu32 " replaced by disk %" PRIu32 " (%s)", old, n, ds->paths[n]);
	char line[96];
	snprintf(line, sizeof(line), "replaced {\"old\":%" PRIu32 ",\"new\":%" PRIu32 "}", old, n);
	(void)out(ctx, line);
out:
	members_change_end(fs);
	return rc;
}

void replace_json(struct fs *fs, struct json_out *o)
{
	struct replace_record r;
	char err[256];
	if (record_get(fs, &r, err, sizeof(err)) != 1) {
		json_put(o, "null");
		return;
	}
	uint32_t n = slot_of(fs->ds, r.new_uuid);
	json_put(o, "{\"old\":%" PRIu32 ",\"old_member\":%s,\"new\":", r.old,
		 old_member(fs->ds, &r) ? "true" : "false");
	if (n == UINT32_MAX)
		json_put(o, "null}");
	else
		json_put(o, "%" PRIu32 "}", n);
}
