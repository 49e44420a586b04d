/*
 * mount.c: opening a filesystem for the daemon: the store, the filesystem
 * info checked against the superblocks, the section map cached in memory,
 * a directory fd per disk, inode number reservation, and the repairs a
 * crash calls for: chunks in flux (chunk.c), orphans (reclaim.c) and chunk
 * files without record (sweep.c).
 */
#include "engine.h"
#include "life.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int get_u64(struct fs *fs, const char *name, uint64_t *v)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, name);
	void *val;
	size_t vl;
	int rc = store_get(fs->st, NULL, k, kl, &val, &vl);
	if (rc)
		return rc;
	rc = vl == 8 ? 0 : -EUCLEAN;
	if (!rc)
		*v = get_le64(val);
	free(val);
	return rc;
}

/* The store's table filter from `M filter` (SCHEMA.md "Metadata store
 * options"); absent (a filesystem made before it): the store's default. */
static int load_filter(struct fs *fs, char *err, size_t errlen)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, META_FILTER);
	void *val;
	size_t vl;
	int rc = store_get(fs->st, NULL, k, kl, &val, &vl);
	if (rc == -ENOENT)
		return 0;
	if (rc) {
		snprintf(err, errlen, "%s: the table filter record: %s", fs->ds->meta_dir,
			 strerror(-rc));
		return rc;
	}
	char text[64];
	struct store_filter f;
	rc = filter_record_decode(val, vl, &f, text);
	free(val);
	if (rc) {
		snprintf(err, errlen, "%s: the table filter record '%s' is not a filter policy "
			 "(fsck.lsmfs reports it)", fs->ds->meta_dir, text);
		return -EUCLEAN;
	}
	return store_set_filter(fs->st, &f);
}

/* A `P` entry that is malformed or names a section past N. */
static int bad_section_entry(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	(void)k, (void)v;
	struct fs *fs = ctx;
	fs_logf(fs, "%s: damaged section map entry (key of %zu bytes, value of %zu bytes%s)",
		fs->ds->meta_dir, kl, vl,
		kl == 5 ? ", or a section past the section count" : "");
	return -EUCLEAN;
}

static int load_sections(struct fs *fs, char *err, size_t errlen)
{
	uint32_t n = fs->info.sections;
	fs->section_disk = malloc(n * sizeof(uint32_t));
	fs->section_changed = calloc(n / 8 + 1, 1);
	if (!fs->section_disk || !fs->section_changed)
		return -ENOMEM;
	int rc = section_map_read(fs->st, n, fs->section_disk, bad_section_entry, fs);
	if (rc == -EUCLEAN)
		snprintf(err, errlen, "%s: damaged section map (run fsck.lsmfs)", fs->ds->meta_dir);
	for (uint32_t d = 0; !rc && d < fs->ds->ndisks && d < 64; d++)
		if (fs->ds->missing >> d & 1)
			fs_logf(fs, "DEGRADED: disk %u is missing (mount -o degraded): its chunks fail "
				"with EIO; lsmfs-disk remove --lost drops it for good", d);
	for (uint32_t s = 0; !rc && s < n; s++) {
		uint32_t d = fs->section_disk[s];
		if (d == UINT32_MAX) {
			snprintf(err, errlen, "%s: section %u has no disk in the section map",
				 fs->ds->meta_dir, s);
			rc = -EUCLEAN;
		} else if (!diskset_present(fs->ds, d) && !(d < 64 && fs->ds->missing >> d & 1)) {
			snprintf(err, errlen, "%s: damaged section map entry (section %u, disk %u)",
				 fs->ds->meta_dir, s, d);
			rc = -EUCLEAN;
		}
	}
	return rc;
}

static int open_disks(struct fs *fs, char *err, size_t errlen)
{
	/* Every slot: a disk added while mounted takes one (members.c). */
	fs->sections_fd = malloc(LSMFS_MAX_DISKS * sizeof(int));
	fs->no_direct = calloc(LSMFS_MAX_DISKS, 1);
	fs->disk_lost = calloc(LSMFS_MAX_DISKS, 1);
	if (!fs->sections_fd || !fs->no_direct || !fs->disk_lost || stats_init(fs) ||
	    devstats_init(fs))
		return -ENOMEM;
	if (!fs->opt.direct)
		memset(fs->no_direct, 1, LSMFS_MAX_DISKS);
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++)
		fs->sections_fd[d] = -1;
	for (uint32_t d = 0; d < fs->ds->ndisks; d++) {
		if (!diskset_present(fs->ds, d))
			continue;
		char p[LSMFS_META_PATH_MAX + 64];
		snprintf(p, sizeof(p), "%s/%s/%s", fs->ds->paths[d], LSMFS_DIR, LSMFS_SECTIONS_DIR);
		if (!fs->opt.read_only)
			(void)mkdir(p, 0700); /* made by mkfs; recreate if someone removed it */
		fs->sections_fd[d] = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fs->sections_fd[d] < 0) {
			int e = errno;
			snprintf(err, errlen, "%s: %s", p, strerror(e));
			return -e;
		}
	}
	return 0;
}

static void store_log(void *ctx, const char *msg)
{
	struct fs *fs = ctx;
	fs_logf(fs, "store: %s", msg);
}

/* The data path and the reclaim, as the inode table calls them. */
static const struct inode_ops engine_inode_ops = {
	.close_fds = data_close_fds,
	.free = data_free,
	.keep_unsynced = chunk_remember_unsynced,
	.forget_unsynced = chunk_forget_unsynced,
	.record_unsynced = chunk_record_unsynced,
	.sync_dirty = chunk_sync_dirty,
	.orphaned = reclaim_orphaned,
};

int fs_open(struct lsmfs_diskset *ds, const struct fs_options *opt,
	    void (*log)(void *, const char *), void *log_ctx, struct fs **out,
	    char *err, size_t errlen)
{
	struct fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->inode_ops = &engine_inode_ops;
	sums_init_mount(fs);
	fs->ds = ds;
	fs->opt = *opt;
	if (!fs->opt.inode_cache)
		fs->opt.inode_cache = FS_INODE_CACHE;
	fs->rdonly_pipe[0] = fs->rdonly_pipe[1] = -1;
	fs->clock_fd = -1;
	for (int i = 0; i < STORE_MAX_COPIES; i++) {
		fs->meta_fd[i] = -1;
		fs->store_which[i] = UINT32_MAX;
	}
	fs->log = log;
	fs->log_ctx = log_ctx;
	pthread_mutex_init(&fs->ns_lock, NULL);
	pthread_mutex_init(&fs->itab_lock, NULL);
	pthread_mutex_init(&fs->ino_lock, NULL);
	pthread_mutex_init(&fs->bounce_lock, NULL);
	pthread_mutex_init(&fs->unsynced_lock, NULL);
	pthread_mutex_init(&fs->space_lock, NULL);
	pthread_mutex_init(&fs->move_lock, NULL);
	pthread_mutex_init(&fs->ctl.lock, NULL);
	pthread_cond_init(&fs->ctl.cv, NULL);
	fs->ctl.listen_fd = fs->ctl.stop_pipe[0] = fs->ctl.stop_pipe[1] = fs->ctl.next_fd = -1;
	for (int i = 0; i < ILOCKS; i++) {
		pthread_mutex_init(&fs->ilock[i], NULL);
		pthread_cond_init(&fs->iocv[i], NULL);
	}
	if (order_init(fs)) {
		free(fs);
		return -ENOMEM;
	}
	fs->itab_size = 1024;
	fs->itab = calloc(fs->itab_size, sizeof(*fs->itab));
	if (!fs->itab) {
		order_free(fs);
		free(fs);
		return -ENOMEM;
	}
	/* As many names as inodes kept; without memory for it, no cache. */
	(void)dcache_init(&fs->dcache, fs->opt.inode_cache);

	struct store_options so;
	store_options_init(&so);
	so.create_if_missing = false;
	so.read_only = opt->read_only;
	if (opt->cache_bytes)
		so.block_cache_bytes = opt->cache_bytes;
	so.log = store_log;
	so.log_ctx = fs;
	so.reserve_bytes = FS_STORE_RESERVE;
	so.log_delay_us = opt->log_delay_us;
	const char *dirs[LSMFS_MAX_META_COPIES];
	int rc = copies_prepare(fs, &so, dirs, err, errlen);
	if (rc)
		goto fail;
	rc = store_open(dirs[0], &so, &fs->st);
	if (rc) {
		snprintf(err, errlen, "%s: cannot open the metadata store: %s", ds->meta_dir,
			 strerror(-rc));
		fs->st = NULL;
		goto fail;
	}
	copies_opened(fs);
	if ((rc = fs_info_load(fs->st, &ds->sb, ds->meta_dir, &fs->info, err, errlen)) ||
	    (rc = load_filter(fs, err, errlen)) || (rc = load_sections(fs, err, errlen)) ||
	    (rc = gate_init(fs)) || (rc = open_disks(fs, err, errlen)))
		goto fail;
	clock_open(fs);
	rc = get_u64(fs, META_NEXT_INO, &fs->next_ino);
	if (rc) {
		snprintf(err, errlen, "%s: inode counter unreadable: %s", ds->meta_dir, strerror(-rc));
		goto fail;
	}
	if (fs->ino_branch)
		/* Apart from any a mount of the missing copies hands out from
		 * the same counter: each copy has a run of 2^40 of its own. */
		fs->next_ino += (uint64_t)fs->ino_branch << INO_BRANCH_SHIFT;
	fs->reserved_to = fs->next_ino;
	int64_t sec;
	uint32_t nsec;
	fs_now(fs, &sec, &nsec);
	fs->generation = (uint64_t)sec;
	/* A restore: what the backup's store says of the chunk files set
	 * right before any repair acts on it. */
	if (opt->restoring && !opt->read_only && (rc = backup_settle(fs, err, errlen)))
		goto fail;
	/* A change to the disk set a crash cut short: its superblocks and the
	 * store's disk records brought in line. */
	if (!opt->read_only && (rc = members_reconcile(fs))) {
		snprintf(err, errlen, "%s: recording the disks in the metadata store: %s",
			 ds->meta_dir, strerror(-rc));
		goto fail;
	}
	/* The disks' error counters, for the disks the set now has, before
	 * the repairs below may count. */
	if ((rc = devstats_load(fs))) {
		snprintf(err, errlen, "%s: loading the disks' error counters: %s", ds->meta_dir,
			 strerror(-rc));
		goto fail;
	}
	/* A section move a crash cut short: finished or rolled back before
	 * anything else looks at chunk files. */
	if (!opt->read_only && (rc = move_recover(fs, UINT32_MAX))) {
		snprintf(err, errlen, "%s: finishing a section move a crash interrupted: %s",
			 ds->meta_dir, strerror(-rc));
		goto fail;
	}
	/* Before the reclaim thread starts: an orphan's files must not go
	 * while the repair looks at them. */
	if (!opt->read_only && (rc = chunk_recover(fs))) {
		snprintf(err, errlen, "%s: repairing the chunks of files a crash interrupted: %s",
			 ds->meta_dir, strerror(-rc));
		goto fail;
	}
	/* Before the reclaim thread starts: it sweeps after a crash. */
	if (!opt->read_only && (rc = sweep_arm(fs))) {
		snprintf(err, errlen, "%s: marking the filesystem mounted: %s", ds->meta_dir,
			 strerror(-rc));
		goto fail;
	}
	if ((rc = diskwatch_start(fs)))
		fs_logf(fs, "cannot start the thread that watches the disks: %s", strerror(-rc));
	if ((rc = namer_start(fs)))
		fs_logf(fs, "cannot start the thread that names files in the log (they are named "
			"by inode number): %s", strerror(-rc));
	/* Orphans a crash left go in the background, as later unlinks do. */
	if (!opt->read_only && (rc = reclaim_start(fs)))
		fs_logf(fs, "cannot start the reclaim thread (%s): unlinked files are deleted in the foreground",
			strerror(-rc));
	if (!opt->read_only && (rc = reclaim_orphans(fs))) {
		snprintf(err, errlen, "%s: reclaiming orphan inodes: %s", ds->meta_dir, strerror(-rc));
		goto fail;
	}
	/* The statistics file; a read-only mount writes nothing anywhere.
	 * Without it the filesystem works all the same. */
	if (!opt->read_only && (rc = stats_start(fs)))
		fs_logf(fs, "statistics: cannot start the thread that writes %s/%s: %s",
			ds->meta_dir, FS_STATS_FILE, strerror(-rc));
	*out = fs;
	return 0;
fail:
	fs_close(fs);
	return rc;
}

int fs_offline_open(struct lsmfs_diskset *ds, bool read_only, void (*log)(void *, const char *),
		    void *log_ctx, struct fs **out, char *err, size_t errlen)
{
	struct fs_options opt = {.read_only = read_only, .direct = true, .attr_timeout = 1,
				 .entry_timeout = 1, .selinux_xattr = true};
	return fs_open(ds, &opt, log, log_ctx, out, err, errlen);
}

int fs_offline_close(struct fs *fs)
{
	return fs_close(fs);
}

int fs_close(struct fs *fs)
{
	int rc = 0;
	control_stop(fs); /* a move under way rolls back first */
	scrub_stop(fs);   /* saved as interrupted: a resume goes on */
	rdonly_stop(fs);
	diskwatch_stop(fs);
	namer_stop(fs); /* what it holds is logged first */
	reclaim_stop(fs); /* drains the queue: no orphan outlives a clean unmount */
	if (fs->st && !fs->opt.read_only) {
		/* Chunk data and the chunk files' directory entries (new ones,
		 * removed ones) that no fsync asked for reach the disks before
		 * the store's last flush: after a clean unmount a power cut
		 * loses nothing. */
		bool synced = chunk_sync_all(fs) == 0;
		rc = fs_persist_all(fs);
		/* Counts since the statistics thread last stored them: a
		 * few bytes, with the reserve as the inode records. */
		(void)devstats_store(fs, STORE_WRITE_RESERVE); /* a failure is logged; they are lost */
		/* Every chunk file's removal or record durable now: no crash
		 * is left to sweep after (sweep.c). */
		int rs = synced && !rc ? sweep_finish(fs) : 0;
		if (rs)
			fs_logf(fs, "unmount: %s: cannot mark the filesystem unmounted (%s): the next "
				"mount sweeps as after a crash", fs->ds->meta_dir, strerror(-rs));
		int r2 = store_flush(fs->st);
		if (r2 == -ENOSPC || r2 == -EDQUOT) {
			/* Not an unclean unmount: the writes stay in the
			 * store's commit log, replayed at the next mount. */
			fs_logf(fs, "%s: no room to flush the metadata store at unmount: "
				"its commit log keeps the writes", fs->ds->meta_dir);
			r2 = 0;
		}
		if (!rc)
			rc = r2;
	}
	if (__atomic_load_n(&fs->meta_lost, __ATOMIC_ACQUIRE) && !rc)
		rc = -EIO; /* its last writes went to a store nobody can see */
	if (fs->stats_running) {
		/* After the last flush, so the file keeps the final figures. */
		stats_stop(fs);
		stats_write_final(fs);
	}
	if (fs->st) {
		int r3 = store_close(fs->st);
		if (!rc)
			rc = r3;
	}
	for (size_t i = 0; i < fs->itab_size; i++) {
		struct fs_inode *in = fs->itab[i];
		while (in) {
			struct fs_inode *next = in->hnext;
			data_free(fs, in);
			free(in);
			in = next;
		}
	}
	free(fs->itab);
	kref_free(&fs->kref);
	dcache_free(&fs->dcache);
	for (int i = 0; i < fs->nbounce; i++)
		free(fs->bounce[i]);
	clock_close(fs);
	if (fs->sections_fd)
		for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++)
			if (fs->sections_fd[d] >= 0)
				close(fs->sections_fd[d]);
	free(fs->sections_fd);
	members_free(fs);
	free(fs->no_direct);
	free(fs->disk_lost);
	for (size_t i = 0; i < fs->nunsynced; i++) {
		free(fs->unsynced[i].dirty);
		free(fs->unsynced[i].new_sections);
	}
	free(fs->unsynced);
	stats_free(fs);
	devstats_free(fs);
	order_free(fs);
	gate_free(fs);
	free(fs->section_disk);
	free(fs->section_changed);
	free(fs);
	return rc;
}
