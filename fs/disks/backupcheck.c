/*
 * backupcheck.c: whether a backup of the metadata store may be restored
 * (SCHEMA.md "Backups"; backup.c writes them, restore.c puts one back):
 * backup_read finds its superblock and store, and that it is of this
 * filesystem with the same disks; backup_verify also checks it whole
 * (every checksum of its store, and the filesystem info read the way a
 * mount reads it).  Nothing here needs a mounted filesystem: fsck.lsmfs
 * --backup and a restore both run it before touching anything.  Also
 * what a restore killed while it saved the store aside left in a copy
 * (backup_remove_parts, at every read-write open).
 */
#include "disks.h"
#include "schema.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int backup_read(const char *dir, const struct lsmfs_super *disks, struct lsmfs_super *sb,
		char *store, size_t cap, char *err, size_t errlen)
{
	char path[LSMFS_META_PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/" BACKUP_MARK, dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return fs_set_err(err, errlen, -errno, "%s: %s (not a whole lsmfs backup)", path,
			       strerror(errno));
	char line[64] = "";
	bool ok = fgets(line, sizeof(line), f) && !strcmp(line, BACKUP_MARK " 1\n");
	fclose(f);
	if (!ok)
		return fs_set_err(err, errlen, -EUCLEAN, "%s: not an lsmfs backup of version 1", path);
	snprintf(path, sizeof(path), "%s/" BACKUP_SUPER, dir);
	uint8_t buf[LSMFS_SUPER_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (got < 0)
		return fs_set_err(err, errlen, -e, "%s: %s", path, strerror(e));
	char why[256];
	int rc = super_decode(buf, (size_t)got, sb, why, sizeof(why));
	if (rc)
		return fs_set_err(err, errlen, rc, "%s: %s", path, why);
	if ((size_t)snprintf(store, cap, "%s/" BACKUP_STORE, dir) >= cap)
		return fs_set_err(err, errlen, -ENAMETOOLONG, "%s: path too long", dir);
	if (disks && memcmp(sb->fs_uuid, disks->fs_uuid, 16))
		return fs_set_err(err, errlen, -EXDEV, "%s: a backup of another filesystem", dir);
	return 0;
}

/* The backup's disks against the disks given: the same filesystem and
 * the same disk list, or the section map and disk records would lie. */
static int same_disks(const struct lsmfs_super *b, const struct lsmfs_super *d, char *err,
		      size_t errlen)
{
	char ub[37], ud[37];
	lsmfs_uuid_format(b->fs_uuid, ub);
	lsmfs_uuid_format(d->fs_uuid, ud);
	if (memcmp(b->fs_uuid, d->fs_uuid, 16))
		return fs_set_err(err, errlen, -EXDEV, "the backup is of filesystem %s, the disks of %s",
			       ub, ud);
	if (b->sections != d->sections || b->chunk_size != d->chunk_size ||
	    b->inline_max != d->inline_max)
		return fs_set_err(err, errlen, -EXDEV, "the backup and the disks disagree on the "
			       "section count, chunk size or inline limit");
	if (b->disk_count != d->disk_count ||
	    memcmp(b->disk_uuids, d->disk_uuids, 16u * b->disk_count))
		return fs_set_err(err, errlen, -EXDEV, "the disks changed since the backup (disk set "
			       "generation %" PRIu64 " then, %" PRIu64 " now): a restore needs the "
			       "disks it was taken with", b->generation, d->generation);
	return 0;
}

/* store_verify's lines, kept to be told only when something is wrong. */
struct findings {
	char *buf;
	size_t len;
	bool cut;
};

static void finding(void *ctx, const char *line)
{
	struct findings *f = ctx;
	size_t n = strlen(line);
	if (f->cut || f->len + n + 2 > 16384) {
		f->cut = true;
		return;
	}
	char *g = realloc(f->buf, f->len + n + 2);
	if (!g) {
		f->cut = true;
		return;
	}
	f->buf = g;
	memcpy(f->buf + f->len, line, n + 1);
	f->len += n + 1;
}

int backup_verify(const char *dir, const struct lsmfs_super *disks, struct lsmfs_super *sb,
		  char *store, size_t cap, void (*log)(void *, const char *), void *log_ctx,
		  char *err, size_t errlen)
{
	int rc = backup_read(dir, disks, sb, store, cap, err, errlen);
	if (rc || (rc = same_disks(sb, disks, err, errlen)))
		return rc;
	/* Every checksum of every table, the MANIFEST and any log, as
	 * fsck.lsmfs -n --backup checks them (pass 1). */
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	so.create_if_missing = false;
	struct findings f = {0};
	rc = store_verify(store, &so, finding, &f);
	if (rc) {
		for (size_t at = 0; log && at < f.len; at += strlen(f.buf + at) + 1)
			log(log_ctx, f.buf + at);
		free(f.buf);
		return fs_set_err(err, errlen, rc, "%s: %s%s", store,
			       rc == -EUCLEAN ? "damaged" : strerror(-rc),
			       rc == -EUCLEAN && log ? " (the findings above)" : "");
	}
	free(f.buf);
	/* The filesystem info, as a mount reads it. */
	struct store *st;
	if ((rc = store_open(store, &so, &st)))
		return fs_set_err(err, errlen, rc, "%s: does not open as a store: %s", store,
			       strerror(-rc));
	struct fs_info fi;
	rc = fs_info_load(st, sb, store, &fi, err, errlen);
	store_close(st);
	return rc;
}

void backup_remove_parts(const struct lsmfs_diskset *ds,
			 void (*said)(void *ctx, const char *path, int err), void *ctx)
{
	static const char *const parts[] = {LSMFS_RESTORE_PART, LSMFS_RESTORE_PART_V1};
	for (uint32_t c = 0; c < ds->sb.meta_count; c++) {
		if ((ds->meta_absent & (1u << c)) || !ds->meta_paths[c][0])
			continue;
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			char path[sizeof(ds->meta_paths[0]) + 32];
			snprintf(path, sizeof(path), "%s/%s", ds->meta_paths[c], parts[i]);
			if (access(path, F_OK) != 0)
				continue;
			said(ctx, path, fs_remove_flat(path));
		}
	}
}
