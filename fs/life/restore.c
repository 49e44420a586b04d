/*
 * restore.c: putting a backup's metadata store back, offline (SCHEMA.md
 * "Backups"; `lsmfs-disk DISKS restore DIR`).
 *
 * Nothing is touched until the whole backup verifies (backup_verify: its
 * mark, superblock, disks, every checksum of its store, the filesystem
 * info).  Then, in the copy of the store that takes it (the primary, or
 * the copy a restore cut short left its mark in), the steps are:
 *   1. save: the copy's store files hard-linked into LSMFS_RESTORE_PART,
 *      synced, renamed to LSMFS_RESTORE_SAVED (the store itself
 *      untouched: a crash here leaves it as it was, and the part left
 *      goes at the next read-write open, backup_remove_parts);
 *   2. the mark LSMFS_RESTORING, synced: from here until step 5 no mount
 *      takes the store ("cut short: run it again");
 *   3. every copy marked stale, the copy's store files replaced by the
 *      backup's, the copy marked current alone;
 *   4. the filesystem opened as a mount would (backup_settle, the crash
 *      repair; the other copies brought up to date from this one), closed;
 *   5. the mark removed, then the saved files.
 * A step of 3-4 that fails puts the saved files back (roll_back: the copy
 * current alone, the others stale, filled from it at the next read-write
 * open), then removes the mark: the store as it was, mountable.  A
 * restore killed in 3-4 leaves the mark and the saved files: run again,
 * it verifies the backup and goes on from step 3, or, when the backup no
 * longer verifies, rolls back.  Invariant: the mark is there only with a
 * whole saved copy beside it.
 */
#include "engine.h"
#include "life.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The copy a restore cut short left its mark in, or UINT32_MAX. */
static uint32_t marked_copy(const struct lsmfs_diskset *ds)
{
	for (uint32_t i = 0; i < ds->sb.meta_count; i++) {
		char mark[sizeof(ds->meta_paths[0]) + 16];
		struct stat st;
		snprintf(mark, sizeof(mark), "%s/" LSMFS_RESTORING, ds->meta_paths[i]);
		if (!(ds->meta_absent & (1u << i)) && stat(mark, &st) == 0)
			return i;
	}
	return UINT32_MAX;
}

static void saved_path(const struct lsmfs_diskset *ds, uint32_t p, const char *suffix, char *out,
		       size_t cap)
{
	snprintf(out, cap, "%s/" LSMFS_RESTORE_SAVED "%s", ds->meta_paths[p], suffix);
}

/* Step 1: the copy's store files linked into the saved directory. */
static int save(const struct lsmfs_diskset *ds, uint32_t p, char *err, size_t errlen)
{
	const char *dir = ds->meta_paths[p];
	char tmp[sizeof(ds->meta_paths[0]) + 32], done[sizeof(tmp)];
	snprintf(tmp, sizeof(tmp), "%s/" LSMFS_RESTORE_PART, dir);
	saved_path(ds, p, "", done, sizeof(done));
	/* A restore's leftovers, its mark gone (parts in the other copies go
	 * at the read-write open of step 4: copies_prepare). */
	int rc = fs_remove_flat(tmp);
	if (!rc)
		rc = fs_remove_flat(done);
	if (rc)
		return fs_set_err(err, errlen, rc, "%s: %s", tmp, strerror(-rc));
	if (mkdir(tmp, 0700) != 0)
		return fs_set_err(err, errlen, -errno, "%s: %s", tmp, strerror(errno));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 || tfd < 0 ? NULL : fdopendir(dup(dfd));
	if (!d) {
		rc = fs_set_err(err, errlen, -errno, "%s: %s", dir, strerror(errno));
		goto out;
	}
	struct dirent *e;
	while (!rc && (e = readdir(d)))
		if (copies_store_file(e->d_name) && linkat(dfd, e->d_name, tfd, e->d_name, 0) != 0)
			rc = fs_set_err(err, errlen, -errno, "%s/%s: saving it: %s", dir, e->d_name,
				     strerror(errno));
	closedir(d);
	if (!rc && fsync(tfd) != 0)
		rc = fs_set_err(err, errlen, -errno, "%s: fsync: %s", tmp, strerror(errno));
	if (!rc && rename(tmp, done) != 0)
		rc = fs_set_err(err, errlen, -errno, "%s: %s", done, strerror(errno));
	if (!rc && (rc = lsmfs_fsync_dir(dir)))
		fs_set_err(err, errlen, rc, "%s: fsync: %s", dir, strerror(-rc));
out:
	if (dfd >= 0)
		close(dfd);
	if (tfd >= 0)
		close(tfd);
	if (rc)
		(void)fs_remove_flat(tmp); /* the store is as it was; the rest is the error */
	return rc;
}

/* Step 5, or the end of a roll-back: the mark goes first (the store is
 * whole without the saved files), then the saved files. */
static int finish(const struct lsmfs_diskset *ds, uint32_t p, char *err, size_t errlen)
{
	char mark[sizeof(ds->meta_paths[0]) + 16], saved[sizeof(ds->meta_paths[0]) + 32];
	snprintf(mark, sizeof(mark), "%s/" LSMFS_RESTORING, ds->meta_paths[p]);
	saved_path(ds, p, "", saved, sizeof(saved));
	int rc = unlink(mark) == 0 || errno == ENOENT ? lsmfs_fsync_dir(ds->meta_paths[p]) : -errno;
	if (rc)
		return fs_set_err(err, errlen, rc, "%s: %s", mark, strerror(-rc));
	/* A leftover is no harm to the store; the next restore removes it. */
	(void)fs_remove_flat(saved);
	return 0;
}

/* The store as it was before the restore, back in copy p: current alone
 * (the others, which the restore may have filled, are stale: brought up
 * to date from it at the next read-write open). */
static int roll_back(struct lsmfs_diskset *ds, uint32_t p, char *err, size_t errlen)
{
	char saved[sizeof(ds->meta_paths[0]) + 32];
	saved_path(ds, p, "", saved, sizeof(saved));
	int rc = copies_replace_files(saved, ds->meta_paths[p], err, errlen);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < ds->sb.meta_count; i++)
		ds->sb.meta[i].flags |= LSMFS_META_STALE;
	ds->sb.meta[p].flags &= ~LSMFS_META_STALE;
	ds->meta_primary = p;
	snprintf(ds->meta_dir, sizeof(ds->meta_dir), "%s", ds->meta_paths[p]);
	if ((rc = copies_write(ds, err, errlen)))
		return rc;
	return finish(ds, p, err, errlen);
}

/* Steps 2 and 3. */
static int put_back(struct lsmfs_diskset *ds, uint32_t p, const char *src, char *err,
		    size_t errlen)
{
	char mark[sizeof(ds->meta_paths[0]) + 16];
	snprintf(mark, sizeof(mark), "%s/" LSMFS_RESTORING, ds->meta_paths[p]);
	int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	int rc = fd >= 0 && fsync(fd) == 0 ? lsmfs_fsync_dir(ds->meta_paths[p]) : -errno;
	if (fd >= 0)
		close(fd);
	if (rc)
		return fs_set_err(err, errlen, rc, "%s: %s", mark, strerror(-rc));
	for (uint32_t i = 0; i < ds->sb.meta_count; i++)
		ds->sb.meta[i].flags |= LSMFS_META_STALE;
	if ((rc = copies_write(ds, err, errlen)) ||
	    (rc = copies_replace_files(src, ds->meta_paths[p], err, errlen)))
		return rc;
	ds->sb.meta[p].flags &= ~LSMFS_META_STALE;
	ds->meta_primary = p;
	snprintf(ds->meta_dir, sizeof(ds->meta_dir), "%s", ds->meta_paths[p]);
	return copies_write(ds, err, errlen);
}

/* Step 4: opened as a mount would be, with backup_settle first. */
static int settle(struct lsmfs_diskset *ds, void (*log)(void *, const char *), void *log_ctx,
		  int (*out)(void *ctx, const char *line), void *ctx, char *err, size_t errlen)
{
	struct fs_options opt = {.direct = true, .attr_timeout = 1, .entry_timeout = 1,
				 .selinux_xattr = true, .restoring = out, .restoring_ctx = ctx};
	struct fs *fs;
	int rc = fs_open(ds, &opt, log, log_ctx, &fs, err, errlen);
	if (!rc && (rc = fs_close(fs)))
		fs_set_err(err, errlen, rc, "closing the restored filesystem: %s", strerror(-rc));
	return rc;
}

/* err gets what failed, then what became of the store. */
static int failed(struct lsmfs_diskset *ds, uint32_t p, int rc, char *err, size_t errlen)
{
	char why[1024], back[1024] = "";
	snprintf(why, sizeof(why), "%s", err);
	int r = roll_back(ds, p, back, sizeof(back));
	if (r)
		snprintf(err, errlen, "%s; putting the store as it was back failed too: %s (run the "
			 "restore again)", why, back);
	else
		snprintf(err, errlen, "%s; the metadata store is as it was before the restore", why);
	return rc;
}

int fs_restore(struct lsmfs_diskset *ds, const char *dir, void (*log)(void *, const char *),
	       void *log_ctx, int (*out)(void *ctx, const char *line), void *ctx, char *err,
	       size_t errlen)
{
	uint32_t p = marked_copy(ds);
	struct lsmfs_super bsb;
	char store[LSMFS_META_PATH_MAX + 32];
	int rc = backup_verify(dir, &ds->sb, &bsb, store, sizeof(store), log, log_ctx, err, errlen);
	if (rc) {
		if (p == UINT32_MAX) {
			char why[1024];
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "%s: refused, nothing changed", why);
			return rc;
		}
		/* A restore cut short, run again from a backup that does
		 * not verify: the store as it was comes back. */
		return failed(ds, p, rc, err, errlen);
	}
	if (p == UINT32_MAX) {
		p = ds->meta_primary;
		if (p == UINT32_MAX || (ds->meta_absent & (1u << p)))
			return fs_set_err(err, errlen, -ENOENT, "no copy of the metadata store is there "
				       "to restore into");
		if ((rc = save(ds, p, err, errlen)))
			return rc;
	}
	if ((rc = put_back(ds, p, store, err, errlen)) ||
	    (rc = settle(ds, log, log_ctx, out, ctx, err, errlen)))
		return failed(ds, p, rc, err, errlen);
	if ((rc = finish(ds, p, err, errlen)))
		return rc;
	(void)out(ctx, "restored");
	return 0;
}
