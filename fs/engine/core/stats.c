/*
 * stats.c: accounting of what the daemon sends to its backing disks
 * (fs/SCHEMA.md, "Statistics"): per disk the bytes written to chunk files,
 * the write calls, the fsyncs, and how many writes continued at the end of
 * the previous write to the same chunk file (sequential); the bytes
 * applications wrote; and the store's own bytes by file kind.  Counters are
 * relaxed atomics: a reader sees each exact, not all at one instant.
 * Read as JSON through the root's `user.lsmfs.stats` xattr (xattr.c), and
 * from <store>/stats.json, which a writer thread refreshes every
 * FS_STATS_INTERVAL_S seconds while a counter moves and once more at
 * unmount, for lsmfs-inspect and anyone without the mount.  The same
 * thread stores the disks' error counters when they moved (devstats.c).
 *
 * Locking: stats_lock and stats_cv only carry the stop request to the
 * writer thread; the counters need no lock.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The temporary name must not end in ".tmp": the store takes every such
 * file in its directory for one of its own leftovers and deletes it
 * (db_delete_obsolete_files), which could race with our rename. */
#define STATS_FILE_NEW FS_STATS_FILE ".new"

int stats_init(struct fs *fs)
{
	fs->dstats = calloc(LSMFS_MAX_DISKS, sizeof(*fs->dstats));
	return fs->dstats ? 0 : -ENOMEM;
}

void stats_free(struct fs *fs)
{
	free(fs->dstats);
	fs->dstats = NULL;
}

void stats_write(struct fs *fs, uint32_t disk, struct chunk_fd *c, uint64_t off, size_t n)
{
	if (!fs->dstats || disk >= LSMFS_MAX_DISKS)
		return;
	struct fs_disk_stats *s = &fs->dstats[disk];
	atomic_fetch_add_explicit(&s->bytes, n, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->writes, 1, memory_order_relaxed);
	if (off == c->next_off)
		atomic_fetch_add_explicit(&s->sequential, 1, memory_order_relaxed);
	c->next_off = off + n;
}

void stats_fsync(struct fs *fs, uint32_t disk)
{
	if (fs->dstats && disk < LSMFS_MAX_DISKS)
		atomic_fetch_add_explicit(&fs->dstats[disk].fsyncs, 1, memory_order_relaxed);
}

/* "name":{...}: the store's bytes written by kind (the TOTAL counters of
 * store.h's STORE_COUNTERS, by their keys) since the mount, or over the
 * store's whole life. */
static void put_totals(struct json_out *o, const char *name, const struct store_stats *ss,
		       bool lifetime)
{
	const char *sep = "";
	json_put(o, "\"%s\":{", name);
#define PUT(kind, field, key, word)                                                \
	STORE_IF_TOTAL(kind, json_put(o, "%s\"%s\":%" PRIu64, sep, key,             \
				      lifetime ? ss->lifetime.field : ss->field);   \
		       sep = ",";)
	STORE_COUNTERS(PUT)
#undef PUT
	json_put(o, "}");
}

/* The snapshot, stamped with when it was taken and by whom; mounted is
 * false only for the last one, written at unmount. */
static int build_json(struct fs *fs, bool mounted, char **json, size_t *len)
{
	struct json_out o = {0};
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	json_put(&o,
	    "{\"version\":1,\"written_at\":%lld.%09ld,\"mounted\":%s,\"daemon_pid\":%ld,"
	    "\"app_bytes_written\":%" PRIu64,
	    (long long)now.tv_sec, (long)now.tv_nsec, mounted ? "true" : "false",
	    (long)getpid(), atomic_load_explicit(&fs->app_bytes, memory_order_relaxed));
	pthread_mutex_lock(&fs->itab_lock);
	size_t in_memory = fs->itab_count, let_go = kref_count(&fs->kref);
	pthread_mutex_unlock(&fs->itab_lock);
	json_put(&o, ",\"inodes\":{\"in_memory\":%zu,\"let_go\":%zu},\"disks\":[",
		 in_memory, let_go);
	bool first = true;
	for (uint32_t d = 0; d < fs->ds->ndisks; d++) {
		const char *path = __atomic_load_n(&fs->ds->paths[d], __ATOMIC_ACQUIRE);
		if (!path || !diskset_present(fs->ds, d))
			continue;
		const struct fs_disk_stats *s = &fs->dstats[d];
		json_put(&o, "%s{\"index\":%u,\"path\":", first ? "" : ",", d);
		first = false;
		json_put_str(&o, path);
		json_put(&o,
		    ",\"bytes\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"fsyncs\":%" PRIu64
		    ",\"sequential_writes\":%" PRIu64 ",",
		    atomic_load_explicit(&s->bytes, memory_order_relaxed),
		    atomic_load_explicit(&s->writes, memory_order_relaxed),
		    atomic_load_explicit(&s->fsyncs, memory_order_relaxed),
		    atomic_load_explicit(&s->sequential, memory_order_relaxed));
		devstats_json(fs, d, &o);
		json_put(&o, "}");
	}
	struct store_stats ss;
	store_get_stats(fs->st, &ss);
	char home[sizeof(fs->ds->meta_dir)];
	copies_home(fs, home, sizeof(home));
	json_put(&o, "],\"store\":{\"dir\":");
	json_put_str(&o, home);
	json_put(&o, ",");
	stats_copies_json(fs, &o);
	json_put(&o, ",");
	put_totals(&o, "since_mount", &ss, false);
	json_put(&o, ",");
	put_totals(&o, "lifetime", &ss, true);
	/* The other counters that have a key (log_syncs). */
#define PUT(kind, field, key, word)                                       \
	if (STORE_COUNTER_##kind != STORE_COUNTER_TOTAL && key[0])         \
		json_put(&o, ",\"%s\":%" PRIu64, key, ss.field);
	STORE_COUNTERS(PUT)
#undef PUT
	json_put(&o, "}}\n");
	if (o.err) {
		free(o.buf);
		return o.err;
	}
	*json = o.buf;
	*len = o.len;
	return 0;
}

int stats_json(struct fs *fs, char **json, size_t *len)
{
	return build_json(fs, true, json, len);
}

/* Every counter the file shows, added up: they only grow, so the sum
 * moves exactly when one of them does (the error counters, which a reset
 * takes down, by devstats_moves, which grows at every change). */
static uint64_t counters_sum(struct fs *fs)
{
	uint64_t sum = atomic_load_explicit(&fs->app_bytes, memory_order_relaxed) +
		       devstats_moves(fs);
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++) {
		const struct fs_disk_stats *s = &fs->dstats[d];
		sum += atomic_load_explicit(&s->bytes, memory_order_relaxed) +
		       atomic_load_explicit(&s->writes, memory_order_relaxed) +
		       atomic_load_explicit(&s->fsyncs, memory_order_relaxed) +
		       atomic_load_explicit(&s->sequential, memory_order_relaxed);
	}
	struct store_stats ss;
	store_get_stats(fs->st, &ss);
	/* The store's: those with a key (since the mount; a lifetime total
	 * moves with its since-mount counterpart). */
#define ADD(kind, field, key, word) \
	if (key[0])                 \
		sum += ss.field;
	STORE_COUNTERS(ADD)
#undef ADD
	return sum;
}

/* Write json to <store>/stats.json by a rename over it, so a reader sees
 * the old file or the new one, never a part.  No fsync: this is a report,
 * not data; a crash may lose or empty it, and nothing depends on it.  On
 * failure *failed names the path that failed. */
static int write_file(struct fs *fs, const char *json, size_t len, char *failed, size_t cap)
{
	char home[sizeof(fs->ds->meta_dir)];
	copies_home(fs, home, sizeof(home));
	char tmp[sizeof(fs->ds->meta_dir) + 32], dst[sizeof(fs->ds->meta_dir) + 32];
	snprintf(tmp, sizeof(tmp), "%s/" STATS_FILE_NEW, home);
	snprintf(dst, sizeof(dst), "%s/" FS_STATS_FILE, home);
	snprintf(failed, cap, "%s", tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = 0;
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, json + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, dst)) {
		rc = -errno;
		snprintf(failed, cap, "%s", dst);
	}
	if (rc)
		(void)unlink(tmp); /* best effort: a leftover is overwritten next time */
	return rc;
}

/* Write the file if a counter moved since the last write (always when
 * !mounted: the file must say the daemon is gone).  A failure is logged
 * once and otherwise ignored: the filesystem does not depend on it. */
static void refresh(struct fs *fs, bool mounted)
{
	uint64_t sum = counters_sum(fs); /* before the snapshot: a later change shows next time */
	if (mounted && fs->stats_written && sum == fs->stats_sum)
		return;
	char *json = NULL, failed[sizeof(fs->ds->meta_dir) + 32] = "";
	size_t len = 0;
	int rc = build_json(fs, mounted, &json, &len);
	if (!rc)
		rc = write_file(fs, json, len, failed, sizeof(failed));
	free(json);
	if (!rc) {
		fs->stats_written = true;
		fs->stats_sum = sum;
	} else if (!fs->stats_write_failed) {
		fs->stats_write_failed = true;
		fs_logf(fs, "statistics: %s: %s (the filesystem is not affected; not said again)",
			failed[0] ? failed : fs->ds->meta_dir, strerror(-rc));
	}
}

static void *writer_main(void *arg)
{
	struct fs *fs = arg;
	pthread_mutex_lock(&fs->stats_lock);
	while (!fs->stats_stopping) {
		pthread_mutex_unlock(&fs->stats_lock);
		/* The disks' error counters that moved, to the store (not while
		 * remounted read-only: the remount stored them, and unmount or
		 * the next read-write remount stores what came since). */
		if (fs_writable(fs))
			(void)devstats_store(fs, 0); /* a failure is logged, and tried again */
		refresh(fs, true);
		pthread_mutex_lock(&fs->stats_lock);
		/* A timed wait, not a sleep: stats_stop wakes us at once. */
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += FS_STATS_INTERVAL_S;
		while (!fs->stats_stopping &&
		       pthread_cond_timedwait(&fs->stats_cv, &fs->stats_lock, &until) == 0)
			; /* woken early (or spuriously) without a stop: wait on */
	}
	pthread_mutex_unlock(&fs->stats_lock);
	return NULL;
}

int stats_start(struct fs *fs)
{
	pthread_condattr_t ca;
	int rc = pthread_condattr_init(&ca);
	if (rc)
		return -rc;
	/* Monotonic: setting the clock must not stall or hurry the writer. */
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(&fs->stats_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		return -rc;
	pthread_mutex_init(&fs->stats_lock, NULL);
	fs->stats_stopping = false;
	rc = pthread_create(&fs->stats_thread, NULL, writer_main, fs);
	if (rc) {
		pthread_cond_destroy(&fs->stats_cv);
		pthread_mutex_destroy(&fs->stats_lock);
		return -rc;
	}
	fs->stats_running = true;
	return 0;
}

void stats_stop(struct fs *fs)
{
	if (!fs->stats_running)
		return;
	pthread_mutex_lock(&fs->stats_lock);
	fs->stats_stopping = true;
	pthread_cond_signal(&fs->stats_cv);
	pthread_mutex_unlock(&fs->stats_lock);
	pthread_join(fs->stats_thread, NULL);
	pthread_cond_destroy(&fs->stats_cv);
	pthread_mutex_destroy(&fs->stats_lock);
	fs->stats_running = false;
}

void stats_write_final(struct fs *fs)
{
	refresh(fs, false);
}

/* The store copies and whether the filesystem is degraded, as the
 * statistics and `lsmfs-disk status` show them (SCHEMA.md "Statistics"). */
void stats_copies_json(struct fs *fs, struct json_out *o)
{
	struct lsmfs_diskset *ds = fs->ds;
	json_put(o, "\"copies\":[");
	if (fs->copies_lock_init)
		pthread_mutex_lock(&fs->copies_lock);
	for (uint32_t c = 0; c < ds->sb.meta_count; c++) {
		const struct lsmfs_meta_copy *mc = &ds->sb.meta[c];
		struct store_copy_info ci = { 0 };
		bool open = false;
		for (size_t k = 0; k < fs->store_ncopies && fs->st; k++)
			if (fs_sb_copy(fs, k) == c && store_copy_info(fs->st, k, &ci) == 0)
				open = true;
		const char *state = !open ? "missing"
				    : !ci.live ? "failed"
				    : (mc->flags & LSMFS_META_STALE) ? "stale"
								     : "in-sync";
		json_put(o, "%s{\"copy\":%" PRIu32 ",\"disk\":", c ? "," : "", c);
		if (mc->disk == LSMFS_META_ON_DIR)
			json_put(o, "null");
		else
			json_put(o, "%" PRIu32, mc->disk);
		json_put(o, ",\"path\":");
		json_put_str(o, ds->meta_paths[c]);
		json_put(o, ",\"state\":\"%s\",\"healed\":%" PRIu64 ",\"read_errors\":%" PRIu64 "}",
			 state, ci.healed, ci.read_errors);
	}
	if (fs->copies_lock_init)
		pthread_mutex_unlock(&fs->copies_lock);
	/* A store copy, or a data disk (mount -o degraded), missing or failed. */
	bool degraded = copies_degraded(fs) || __atomic_load_n(&ds->missing, __ATOMIC_ACQUIRE);
	for (uint32_t d = 0; d < ds->ndisks && !degraded; d++)
		degraded = diskset_present(ds, d) && !disk_usable(fs, d);
	json_put(o, "],\"degraded\":%s", degraded ? "true" : "false");
}
