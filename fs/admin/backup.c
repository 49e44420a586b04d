/*
 * backup.c: online backups of the metadata store, and what a restore of one
 * checks first (SCHEMA.md "Backups"; `lsmfs-disk backup DIR`; restore.c).
 *
 * A backup is a directory:
 *   store/         a checkpoint of the store (store_checkpoint: a prefix of
 *                  its writes, as a crash would leave, tables copied whole)
 *   super          the disk set's superblock as it stood (super_encode)
 *   lsmfs-backup   written last: "lsmfs-backup 1", then fs, time,
 *                  sequence, tables and bytes lines
 * Chunk files are not in it: a restore puts the store back onto disks
 * that still hold them.  Taken while the disk set cannot change
 * (members_change_begin), so the superblock and the store's section map
 * and disk records agree.  Memory: the checkpoint's (a buffer and the
 * table list), whatever the number of files.
 *
 * backupcheck.c says whether a backup may be restored; restore.c puts it
 * back (fs_restore), then opens the
 * filesystem as a mount would, with backup_settle before any crash
 * repair: the section map follows the section directories on the disks
 * (sections moved since), and every chunk record whose file went since
 * the backup is marked lost (lost.c: those bytes read as EIO, never as
 * zeros; the repair of files in flux would have dropped the records of
 * unsynced ones).  Then the crash repair (the backup of a mounted
 * filesystem says it was mounted, so chunk files written since are
 * swept).
 */
#include "engine.h"
#include "admin.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>



int backup_write(struct fs *fs, const char *dir, int (*out)(void *ctx, const char *line), void *ctx,
		 char *err, size_t errlen)
{
	if (dir[0] != '/')
		return fs_set_err(err, errlen, -EINVAL, "backup: the directory must be an absolute path");
	if (strlen(dir) > LSMFS_META_PATH_MAX)
		return fs_set_err(err, errlen, -ENAMETOOLONG, "%s: path too long", dir);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return fs_set_err(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	char store[LSMFS_META_PATH_MAX + 16];
	snprintf(store, sizeof(store), "%s/" BACKUP_STORE, dir);
	struct stat st;
	char mark[LSMFS_META_PATH_MAX + 16];
	snprintf(mark, sizeof(mark), "%s/" BACKUP_MARK, dir);
	if (stat(mark, &st) == 0 || stat(store, &st) == 0)
		return fs_set_err(err, errlen, -EEXIST, "%s: holds a backup already: give an empty "
			       "directory", dir);
	/* New or empty only: files of its own beside the backup would pass
	 * for part of it. */
	int rc = lsmfs_dir_empty(dir);
	if (rc == -ENOTEMPTY)
		return fs_set_err(err, errlen, rc, "%s: not empty: give a new or empty directory", dir);
	if (rc)
		return fs_set_err(err, errlen, rc, "%s: %s", dir, strerror(-rc));
	if ((rc = members_change_begin(fs, err, errlen)))
		return rc;
	uint8_t sb[LSMFS_SUPER_MAX];
	size_t sblen = 0;
	struct store_checkpoint_info info;
	rc = super_encode(&fs->ds->sb, sb, sizeof(sb), &sblen);
	if (!rc && (rc = store_checkpoint(fs->st, store, &info)))
		fs_set_err(err, errlen, rc, "%s: %s (see the log)", store, strerror(-rc));
	members_change_end(fs);
	if (!rc && (rc = lsmfs_write_file(dir, BACKUP_SUPER, sb, sblen)))
		fs_set_err(err, errlen, rc, "%s/" BACKUP_SUPER ": %s", dir, strerror(-rc));
	if (rc)
		return rc;
	char u[37], text[512];
	lsmfs_uuid_format(fs->info.fs_uuid, u);
	int n = snprintf(text, sizeof(text),
			 BACKUP_MARK " 1\nfs %s\ntime %lld\nsequence %" PRIu64 "\ntables %" PRIu64
			 "\nbytes %" PRIu64 "\n", u, (long long)time(NULL), info.sequence,
			 info.tables, info.bytes);
	if ((rc = lsmfs_write_file(dir, BACKUP_MARK, text, (size_t)n)))
		return fs_set_err(err, errlen, rc, "%s: %s", mark, strerror(-rc));
	struct json_out o = {0};
	json_put(&o, "backup {\"tables\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"sequence\":%" PRIu64
		     ",\"dir\":", info.tables, info.bytes, info.sequence);
	json_put_str(&o, dir);
	json_put(&o, "}");
	if (!o.err)
		(void)out(ctx, o.buf);
	free(o.buf);
	fs_logf(fs, "backup of the metadata store in %s: %" PRIu64 " tables, %" PRIu64 " bytes",
		dir, info.tables, info.bytes);
	return 0;
}

/* The section map follows the disks: a section whose directory is not on
 * the disk the map names but on exactly one other (it moved since the
 * backup) is put there. */
static int follow_sections(struct fs *fs, uint64_t *moved)
{
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	int rc = 0;
	uint32_t n = fs->info.sections;
	for (uint32_t s = 0; s < n && !rc; s++) {
		char name[SECTION_NAME_MAX];
		section_dir_name(s, name);
		struct stat st;
		uint32_t at = section_disk_of(fs, s), found = UINT32_MAX, nfound = 0;
		if (disk_usable(fs, at) && fstatat(fs->sections_fd[at], name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		for (uint32_t d = 0; d < fs->ds->ndisks; d++)
			if (d != at && disk_usable(fs, d) &&
			    fstatat(fs->sections_fd[d], name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode)) {
				found = d;
				nfound++;
			}
		if (nfound != 1)
			continue;
		uint8_t k[KEY_MAX], v[SECTION_VAL_LEN];
		section_value_encode(found, v);
		rc = store_batch_put(b, k, key_section(k, s), v, SECTION_VAL_LEN);
		if (!rc) {
			fs_logf(fs, "restore: section %u is on disk %u now (the backup says disk %u)", s,
				found, at);
			section_switch(fs, s, found); /* nothing else runs yet */
			(*moved)++;
		}
	}
	if (!rc && store_batch_count(b))
		rc = store_write(fs->st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	return rc;
}

int backup_settle(struct fs *fs, char *err, size_t errlen)
{
	uint64_t moved = 0, files = 0, chunks = 0;
	int rc = follow_sections(fs, &moved);
	if (rc)
		return fs_set_err(err, errlen, rc, "restore: setting the section map from the disks: %s",
			       strerror(-rc));
	rc = lost_mark_missing(fs, fs->opt.restoring, fs->opt.restoring_ctx, &files, &chunks);
	if (rc)
		return fs_set_err(err, errlen, rc, "restore: marking the chunks gone since the backup: %s",
			       strerror(-rc));
	fs_logf(fs, "restore: %" PRIu64 " section%s followed to their disk, %" PRIu64 " chunk%s of %"
		PRIu64 " file%s gone since the backup marked lost", moved, moved == 1 ? "" : "s",
		chunks, chunks == 1 ? "" : "s", files, files == 1 ? "" : "s");
	return 0;
}
