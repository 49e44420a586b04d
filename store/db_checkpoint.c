/*
 * db_checkpoint: a copy of the store as it stands, taken while it is in
 * use (FORMAT.md "Checkpoints"; RocksDB's Checkpoint, LevelDB has none).
 *
 * The memtable is flushed, so that every write acknowledged before the
 * call is in a table; then, under mu, the whole state is taken as one
 * version edit and the current version pinned, so that compaction cannot
 * delete its tables while they are copied.  The tables are copied (read
 * from the store's own directory, each written as NAME.heal, synced,
 * renamed), then a MANIFEST holding that one edit, then CURRENT: a
 * directory without CURRENT is no checkpoint.  No commit log is copied:
 * the checkpoint holds exactly the writes of the flushed memtable and
 * before, a prefix of the store's writes, as a crash that lost the tail
 * would.  Memory: one copy buffer and the edit (a few dozen bytes per
 * table), whatever the number of keys.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db_int.h"
#include "version.h"
#include "wal.h"

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

/* Is the table at path whole (its size, then every block's checksum)? */
static int table_whole(struct store_env *env, const char *path, const struct file_meta *fm)
{
	uint64_t size = 0;
	int rc = env->ops->file_size(env, path, &size);
	if (rc == 0 && size != fm->size)
		rc = -EUCLEAN;
	struct sst_reader *r = NULL;
	if (rc == 0)
		rc = sst_open(env, path, fm->number, fm->size, NULL, NULL, &r, NULL);
	if (rc == 0) {
		rc = sst_verify(r, quiet, NULL);
		sst_close(r);
	}
	return rc;
}

/* Table path (as named in the store's directory) into to, from the first
 * live, up-to-date copy that holds it whole; each copy checked whole
 * after the copy (a damaged table in one copy is taken from another). */
static int copy_table(struct store *st, struct store_env *env, const char *path, const char *to,
		      const struct file_meta *fm)
{
	int rc = -ENOENT;
	for (size_t i = 0; i < env_mirror_count(st->env); i++) {
		if (!env_mirror_live(st->env, i) || (st->opt.copies_stale & (1u << i)))
			continue;
		char *from = env_mirror_path(st->env, i, path);
		if (!from)
			return -ENOMEM;
		int r = env_copy_file(env, from, to);
		if (r == 0)
			r = table_whole(env, to, fm);
		if (r)
			db_report(st, "checkpoint: %s: %s%s", from, strerror(-r),
				  r == -EUCLEAN ? " (size or checksum): taken from another copy" : "");
		free(from);
		if ((rc = r) == 0)
			return 0;
		(void)env->ops->unlink(env, to);
	}
	return rc;
}

int store_checkpoint(struct store *st, const char *dir, struct store_checkpoint_info *info)
{
	memset(info, 0, sizeof(*info));
	struct store_env *env = env_mirror_inner(st->env);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	char **names = NULL;
	size_t nnames = 0;
	int rc = env->ops->list_dir(env, dir, &names, &nnames);
	if (rc)
		return rc;
	size_t others = 0;
	for (size_t i = 0; i < nnames; i++)
		others += strcmp(names[i], ".") && strcmp(names[i], "..");
	env_free_names(names, nnames);
	if (others)
		return -ENOTEMPTY;
	if (!st->opt.read_only && (rc = store_flush(st)))
		return rc;
	struct buf snap;
	buf_init(&snap);
	struct version *v = NULL;
	pthread_mutex_lock(&st->mu);
	rc = version_set_snapshot(st->vs, &snap, &v);
	info->sequence = version_set_last_sequence(st->vs);
	pthread_mutex_unlock(&st->mu);
	if (rc) {
		buf_free(&snap);
		return rc;
	}
	char from[4096], to[4096];
	for (int l = 0; l < STORE_MAX_LEVELS && rc == 0; l++)
		for (size_t f = 0; f < v->nfiles[l] && rc == 0; f++) {
			const struct file_meta *fm = v->files[l][f];
			snprintf(from, sizeof(from), "%s/%06" PRIu64 ".sst", st->dir, fm->number);
			snprintf(to, sizeof(to), "%s/%06" PRIu64 ".sst", dir, fm->number);
			rc = copy_table(st, env, from, to, fm);
			info->tables++;
			info->bytes += fm->size;
		}
	if (rc == 0) {
		struct wal_writer *w;
		snprintf(to, sizeof(to), "%s/MANIFEST-000001", dir);
		rc = wal_writer_open(env, to, &w);
		if (rc == 0) {
			rc = wal_add_record(w, snap.data, snap.len);
			if (rc == 0)
				rc = wal_sync(w);
			int r2 = wal_writer_close(w);
			rc = rc ? rc : r2;
		}
		if (rc == 0)
			rc = env->ops->sync_dir(env, dir);
		if (rc == 0)
			rc = env_write_file_atomic(env, dir, "CURRENT", "MANIFEST-000001\n", 16);
		if (rc)
			db_report(st, "checkpoint: %s: %s", dir, strerror(-rc));
	}
	pthread_mutex_lock(&st->mu);
	version_unref(v);
	pthread_mutex_unlock(&st->mu);
	buf_free(&snap);
	return rc;
}
