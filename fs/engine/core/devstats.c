/*
 * devstats.c: each disk's error counters, as `btrfs device stats` keeps
 * them (fs/SCHEMA.md "Error counters"): failed reads and writes of its
 * chunk files, checksum mismatches, repairs.  Kept across mounts in the
 * store's `E` records: loaded at open, stored by the statistics thread
 * (stats.c) when they moved, at a read-only remount and at unmount,
 * deleted with their disk.
 *
 * Any engine thread counts, holding what it holds: a count is a relaxed
 * atomic add and a flag set, nothing more.  fs->devstats_lock serialises
 * the writers of the records (devstats_store, devstats_drop), so that an
 * older snapshot of a disk's counters never lands after a newer one; no
 * thread that counts ever takes it, and it is the innermost lock.
 */
#include "core.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int devstats_init(struct fs *fs)
{
	fs->devstats = calloc(LSMFS_MAX_DISKS, sizeof(*fs->devstats));
	if (!fs->devstats)
		return -ENOMEM;
	pthread_mutex_init(&fs->devstats_lock, NULL);
	return 0;
}

void devstats_free(struct fs *fs)
{
	if (!fs->devstats)
		return;
	pthread_mutex_destroy(&fs->devstats_lock);
	free(fs->devstats);
	fs->devstats = NULL;
}

/* A slot the superblocks give a disk: there, or missing from a degraded
 * mount (its counters are kept as they are). */
static bool member(const struct fs *fs, uint32_t d)
{
	return diskset_present(fs->ds, d) ||
	       (d < LSMFS_MAX_DISKS && (__atomic_load_n(&fs->ds->missing, __ATOMIC_ACQUIRE) >> d & 1));
}

void devstats_count(struct fs *fs, uint32_t disk, enum devstat kind)
{
	if (!fs->devstats || disk >= LSMFS_MAX_DISKS || (unsigned)kind >= DEVSTAT_KINDS)
		return;
	struct devstats_disk *s = &fs->devstats[disk];
	atomic_fetch_add_explicit(&s->count[kind], 1, memory_order_relaxed);
	atomic_store_explicit(&s->dirty, true, memory_order_release);
	atomic_fetch_add_explicit(&fs->devstats_moves, 1, memory_order_relaxed);
}

bool devstats_disk_fault(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
	case ENOSPC: /* full: the disk did what it could */
	case EDQUOT:
	case ENOMEM: /* the daemon short of something, not the disk */
	case EMFILE:
	case ENFILE:
	case EINTR:
	case EAGAIN:
		return false;
	}
	return true;
}

void devstats_count_error(struct fs *fs, uint32_t disk, enum devstat kind, int err)
{
	if (!devstats_disk_fault(err))
		return;
	/* A disk missing or found replaced: its chunks fail without
	 * reaching it (chunk_open), and nothing of it is there to blame. */
	if (!disk_usable(fs, disk))
		return;
	devstats_count(fs, disk, kind);
}

void devstats_get(struct fs *fs, uint32_t disk, uint64_t count[DEVSTAT_KINDS], bool reset)
{
	memset(count, 0, DEVSTAT_KINDS * sizeof(*count));
	if (!fs->devstats || disk >= LSMFS_MAX_DISKS)
		return;
	struct devstats_disk *s = &fs->devstats[disk];
	for (int i = 0; i < DEVSTAT_KINDS; i++)
		/* An exchange: a count between the read and the zeroing
		 * stays for the next reader. */
		count[i] = reset ? atomic_exchange_explicit(&s->count[i], 0, memory_order_relaxed)
				 : atomic_load_explicit(&s->count[i], memory_order_relaxed);
	if (reset) {
		atomic_store_explicit(&s->dirty, true, memory_order_release);
		atomic_fetch_add_explicit(&fs->devstats_moves, 1, memory_order_relaxed);
	}
}

uint64_t devstats_moves(struct fs *fs)
{
	return atomic_load_explicit(&fs->devstats_moves, memory_order_relaxed);
}

void devstats_json(struct fs *fs, uint32_t disk, struct json_out *o)
{
	uint64_t c[DEVSTAT_KINDS];
	devstats_get(fs, disk, c, false);
	json_put(o, "\"errors\":{");
	for (int i = 0; i < DEVSTAT_KINDS; i++)
		json_put(o, "%s\"%s\":%" PRIu64, i ? "," : "", devstat_names[i], c[i]);
	json_put(o, "}");
}

/* One record's text for the log: "read_io_errs 1, write_io_errs 0, ...". */
static void describe(const uint64_t c[DEVSTAT_KINDS], char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (int i = 0; i < DEVSTAT_KINDS && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%s %" PRIu64, i ? ", " : "",
				      devstat_names[i], c[i]);
}

int devstats_load(struct fs *fs)
{
	uint8_t lo[1] = {KEY_DEVSTATS}, hi[1] = {KEY_DEVSTATS + 1};
	struct store_iter_options io = {.lower = lo, .lower_len = 1, .upper = hi, .upper_len = 1};
	struct store_iter *it;
	int rc = store_iter_new(fs->st, &io, &it);
	if (rc)
		return rc;
	struct store_batch *gone = NULL;
	for (store_iter_seek_first(it); !rc && store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		struct key_parts kp;
		uint64_t c[DEVSTAT_KINDS];
		char text[200];
		if (key_parse(k, kl, &kp) != 0 || kp.id >= LSMFS_MAX_DISKS)
			continue; /* fsck.lsmfs reports it (LSMFS-020F) */
		uint32_t d = (uint32_t)kp.id;
		bool whole = devstats_rec_decode(v, vl, c) == 0;
		if (!member(fs, d)) {
			/* A detach a crash cut short between the superblocks
			 * and the store (the `K` record goes the same way,
			 * members_reconcile). */
			if (fs->opt.read_only)
				continue;
			if (whole)
				describe(c, text, sizeof(text));
			else
				snprintf(text, sizeof(text), "%zu bytes that do not decode", vl);
			fs_logf(fs, "disk %" PRIu32 ": no disk holds this slot: its error counters "
				"(%s) deleted", d, text);
			if (!gone && !(gone = store_batch_new())) {
				rc = -ENOMEM;
				break;
			}
			rc = store_batch_delete(gone, k, kl);
			continue;
		}
		if (!whole) {
			/* Said, and (read-write) rewritten by the next store:
			 * counts from 0 are worth more than a record nothing
			 * can read, which fsck.lsmfs reports (LSMFS-020F). */
			fs_logf(fs, "disk %" PRIu32 ": its error counters (key E, %zu bytes) do not "
				"decode: counting from 0%s", d, vl,
				fs->opt.read_only ? "" : " (the record is rewritten)");
			atomic_store_explicit(&fs->devstats[d].dirty, true, memory_order_release);
			continue;
		}
		for (int i = 0; i < DEVSTAT_KINDS; i++)
			atomic_store_explicit(&fs->devstats[d].count[i], c[i], memory_order_relaxed);
		if (c[DEVSTAT_READ] || c[DEVSTAT_WRITE] || c[DEVSTAT_CHECKSUM]) {
			describe(c, text, sizeof(text));
			fs_logf(fs, "disk %" PRIu32 " (%s): error counters %s (lsmfs-disk stats; -z "
				"resets them)", d, fs->ds->paths[d] ? fs->ds->paths[d] : "missing",
				text);
		}
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	if (!rc && gone)
		rc = store_write(fs->st, gone, 0);
	store_batch_free(gone);
	return rc;
}

int devstats_store(struct fs *fs, unsigned wflags)
{
	if (!fs->devstats || !fs->st || fs->opt.read_only ||
	    __atomic_load_n(&fs->meta_lost, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&fs->devstats_lock);
	uint64_t taken = 0; /* bit d: disk d's dirty flag taken */
	struct store_batch *b = store_batch_new();
	int rc = b ? 0 : -ENOMEM;
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS && !rc; d++) {
		struct devstats_disk *s = &fs->devstats[d];
		if (!atomic_load_explicit(&s->dirty, memory_order_acquire))
			continue;
		/* A count after this exchange sets the flag again: it is
		 * stored next time, if not by this write. */
		atomic_store_explicit(&s->dirty, false, memory_order_release);
		if (!member(fs, d))
			continue; /* a late count of a disk detached: nothing to keep */
		taken |= 1ull << d;
		uint64_t c[DEVSTAT_KINDS];
		devstats_get(fs, d, c, false);
		uint8_t k[KEY_MAX], v[DEVSTATS_REC_LEN];
		size_t kl = key_devstats(k, d);
		bool any = false;
		for (int i = 0; i < DEVSTAT_KINDS; i++)
			any |= c[i] != 0;
		if (any) {
			devstats_rec_encode(c, v);
			rc = store_batch_put(b, k, kl, v, sizeof(v));
		} else {
			rc = store_batch_delete(b, k, kl); /* all 0: no record */
		}
	}
	if (!rc && store_batch_count(b))
		rc = store_write(fs->st, b, wflags);
	store_batch_free(b);
	if (rc) {
		for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++)
			if (taken >> d & 1)
				atomic_store_explicit(&fs->devstats[d].dirty, true, memory_order_release);
		if (!fs->devstats_write_failed)
			fs_logf(fs, "%s: storing the disks' error counters: %s (they are kept in "
				"memory and tried again; not said again until it works)",
				fs->ds->meta_dir, strerror(-rc));
		fs->devstats_write_failed = true;
	} else {
		fs->devstats_write_failed = false;
	}
	pthread_mutex_unlock(&fs->devstats_lock);
	return rc;
}

int devstats_drop(struct fs *fs, uint32_t disk, struct store_batch *b)
{
	if (!fs->devstats || disk >= LSMFS_MAX_DISKS)
		return 0;
	pthread_mutex_lock(&fs->devstats_lock);
	struct devstats_disk *s = &fs->devstats[disk];
	for (int i = 0; i < DEVSTAT_KINDS; i++)
		atomic_store_explicit(&s->count[i], 0, memory_order_relaxed);
	atomic_store_explicit(&s->dirty, false, memory_order_release);
	atomic_fetch_add_explicit(&fs->devstats_moves, 1, memory_order_relaxed);
	uint8_t k[KEY_MAX];
	int rc = b ? store_batch_delete(b, k, key_devstats(k, disk)) : 0;
	pthread_mutex_unlock(&fs->devstats_lock);
	return rc;
}
