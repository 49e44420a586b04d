/*
 * sweep.c: removing the chunk files a crash left without record (SCHEMA.md,
 * "Chunk files a crash left").
 *
 * A chunk record goes into the store before its file is created (chunk.c),
 * but only an fsync makes the record durable, while the backing filesystem
 * makes the file's creation durable on its own (ext4 commits every few
 * seconds).  So a crash can leave chunk files whose record never reached
 * the disk: bytes no fsync acknowledged (an fsync makes the record durable
 * first), which no read sees (a chunk without record is a hole, and
 * creating it again truncates the file).  They only take space, and
 * fsck.lsmfs reports them (LSMFS-0507).
 *
 * The key `M` `mounted` says that the filesystem is mounted read-write, or
 * was when it crashed.  A read-write mount that finds it sweeps in the
 * background (in the reclaim thread, before the orphans): every file of a
 * section directory named as section_chunk_name() names chunk files, whose
 * chunk has no record, is removed (a chunk may be placed in any section:
 * SCHEMA.md "Placement"), the check and the removal under the inode's
 * stripe lock, which every chunk creation holds, so that a file being
 * created now is never taken.  A file whose chunk's record names another
 * section is the leftover of a relocation cut short (chunk_relocate.c)
 * when every live copy the record names has its file: removed too; else
 * it is left for fsck, as are files of other names.  A clean unmount deletes the key after
 * the disks are synced, when the sweep finished or none was needed.  An
 * unmount waits for a sweep under way to end (it drains the reclaim
 * thread, as it does the orphans); a remount read-only stops it half way
 * and keeps the key, and the next mount sweeps again.  A clean unmount
 * without a crash before it sweeps nothing: a
 * chunk file without record on a cleanly unmounted filesystem is damage,
 * for fsck to report.  A chunk file whose record has no length (written
 * before the crash, never synced) joins the chunks whose lengths the next
 * sync records (chunk.c), so that after mount and clean unmount every
 * chunk's length is known.
 */
#include "background.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sweep_arm(struct fs *fs)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, META_MOUNTED);
	int rc = fs_key_exists(fs, k, kl);
	if (rc < 0)
		return rc;
	if (rc) {
		fs->sweep.armed = fs->sweep.pending = true; /* a crash: the reclaim thread sweeps */
		return 0;
	}
	/* A few bytes, from the reserve if need be: a mount on a full store
	 * disk must work (SCHEMA.md, "Full metadata disk"). */
	rc = store_put(fs->st, k, kl, "", 0, STORE_WRITE_SYNC | STORE_WRITE_RESERVE);
	if (rc == -ENOSPC || rc == -EDQUOT) {
		fs_logf(fs, "%s: no room to mark the filesystem mounted: after a crash now, the "
			"chunk files it leaves without record are fsck.lsmfs's to find (LSMFS-0507)",
			fs->ds->meta_dir);
		return 0;
	}
	fs->sweep.armed = rc == 0;
	return rc;
}

int sweep_finish(struct fs *fs)
{
	if (fs->sweep.pending && !fs->sweep.ran)
		fs_logf(fs, "the sweep for chunk files a crash left never ran (no reclaim thread): "
			"the next mount sweeps");
	if (!fs->sweep.armed || (fs->sweep.pending && !fs->sweep.done))
		return 0;
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, META_MOUNTED);
	return store_delete(fs->st, k, kl, STORE_WRITE_SYNC | STORE_WRITE_RESERVE); /* frees space */
}

struct sweep_count {
	uint64_t removed, failed;
	uint64_t leftovers; /* of them, files of a relocation cut short */
	char first[600]; /* the first file removed, for the log */
};

/* Open rel ("." or a section) in disk d's sections directory, following
 * no symlink; NULL and *err set (logged) when it cannot be. */
static DIR *open_dir(struct fs *fs, uint32_t d, const char *rel, int *err)
{
	int fd = openat(fs->sections_fd[d], rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		*err = -errno;
		if (fd >= 0)
			close(fd);
		fs_logf(fs, "disk %u: sweeping %s%s/%s/%s: %s", d, fs->ds->paths[d], LSMFS_DIR,
			LSMFS_SECTIONS_DIR, rel, strerror(-*err));
	}
	return dir;
}

/* Has every copy of the chunk at pl that is not stale its file, on a
 * usable disk?  (Inside the copies' gates: a move switching one of them
 * is not half seen.) */
static bool copies_there(struct fs *fs, uint64_t ino, uint64_t chunk, const struct chunk_place *pl)
{
	int mark = section_mark();
	chunk_enter(fs, pl, ino, chunk, false);
	bool all = true;
	for (unsigned i = 0; all && i < pl->copies; i++) {
		uint32_t s = section_of_copy(pl->section, i, fs->info.sections);
		if (pl->stale >> i & 1)
			continue;
		char rel[96];
		struct stat st;
		section_chunk_name(ino, chunk, s, rel, sizeof(rel));
		all = disk_usable(fs, section_disk_of(fs, s)) &&
		      fstatat(chunk_dirfd(fs, s), rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		      S_ISREG(st.st_mode);
	}
	section_release(fs, mark);
	return all;
}

/* One section directory of disk d.  0, 1 when stopped, or an error
 * (logged). */
static int sweep_section(struct fs *fs, uint32_t d, uint32_t section, const char *sname,
			 struct sweep_count *n)
{
	int rc = 0;
	DIR *dir = open_dir(fs, d, sname, &rc);
	if (!dir)
		return rc;
	struct dirent *de;
	errno = 0;
	while (!rc && (de = readdir(dir))) {
		/* A remount read-only stops it: the next mount goes on (an
		 * atomic load).  An unmount waits for it to end, so that
		 * mount + clean unmount after a crash leaves fsck clean. */
		if (!fs_writable(fs)) {
			rc = 1;
			break;
		}
		uint64_t ino, chunk;
		if (!section_chunk_parse(de->d_name, &ino, &chunk))
			continue; /* not a chunk file's name: fsck's */
		struct stat st;
		if (de->d_type != DT_REG &&
		    (de->d_type != DT_UNKNOWN ||
		     fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		     !S_ISREG(st.st_mode)))
			continue; /* the daemon makes only files: fsck's */
		pthread_mutex_t *lock = inode_lock_of(fs, ino);
		pthread_mutex_lock(lock);
		int mark = section_mark();
		section_enter(fs, section, ino, chunk, true);
		uint64_t durable = 0;
		bool lost = false;
		void *val = NULL;
		size_t vl = 0;
		/* A section that moved away meanwhile was swept on its way
		 * (its chunks were copied, then all removed here). */
		int has = section_disk_of(fs, section) != d ? 1
			  : chunk_record_fetch(fs, ino, chunk, &val, &vl, &durable, &lost);
		struct chunk_value cv = {0};
		bool inwrite = val && chunk_value_parse(val, vl, &cv) == 0 &&
			       (cv.flags & CHUNK_INWRITE) && cv.gen != fs->mount_gen;
		/* Its file when a copy of the chunk is in this section. */
		struct chunk_place pl = {.section = section, .copies = 1};
		bool ours = !val;
		bool placed = val && chunk_value_place(val, vl, ino, chunk, fs->info.sections, &pl) == 0;
		for (unsigned i = 0; placed && i < pl.copies; i++)
			ours |= section_of_copy(pl.section, i, fs->info.sections) == section;
		free(val);
		bool leftover = false;
		if (has == 1 && !ours) {
			/* Its record puts the chunk elsewhere: with every
			 * live copy there, a leftover of a relocation cut
			 * short (chunk_relocate.c); else damage, fsck's. */
			leftover = placed && copies_there(fs, ino, chunk, &pl);
			has = leftover ? 0 : 2;
		}
		int e = 0;
		bool full = false;
		if (has == 1 && section_disk_of(fs, section) == d && (durable == 0 || inwrite)) {
			/* Written before the crash and never synced: its
			 * length is recorded at the next sync (chunk.c).
			 * Or changed since its sums were: they are
			 * recomputed then (sums.c). */
			full = chunk_keep_unsynced(fs, ino, chunk);
		}
		if (has < 0) {
			rc = has;
		} else if (has == 0) {
			if (unlinkat(dirfd(dir), de->d_name, 0) == 0) {
				chunk_section_changed(fs, section);
				n->leftovers += leftover;
				if (!n->removed++)
					snprintf(n->first, sizeof(n->first), "%s/%s", sname, de->d_name);
			} else if (errno != ENOENT) {
				e = errno; /* immutable, say: left for fsck, logged */
			}
		}
		section_release(fs, mark);
		pthread_mutex_unlock(lock);
		if (rc < 0 || e)
			fs_logf(fs, "disk %u: sweeping %s%s/%s/%s/%s: %s", d, fs->ds->paths[d],
				LSMFS_DIR, LSMFS_SECTIONS_DIR, sname, de->d_name,
				strerror(rc < 0 ? -rc : e));
		n->failed += e != 0;
		if (full && (e = chunk_record_unsynced(fs, 0)))
			fs_logf(fs, "recording the lengths of chunks a crash left: %s", strerror(-e));
		errno = 0;
	}
	if (!rc && errno) {
		rc = -errno;
		fs_logf(fs, "disk %u: sweeping %s%s/%s/%s: reading the directory: %s", d,
			fs->ds->paths[d], LSMFS_DIR, LSMFS_SECTIONS_DIR, sname, strerror(-rc));
	}
	closedir(dir);
	return rc;
}

void sweep_run(struct fs *fs)
{
	if (!fs->sweep.pending || fs->sweep.done)
		return;
	fs->sweep.ran = true;
	struct sweep_count n = {0};
	int rc = 0;
	for (uint32_t d = 0; d < fs->ds->ndisks && !rc; d++) {
		if (!diskset_present(fs->ds, d))
			continue;
		if (!disk_usable(fs, d)) {
			rc = -EIO;
			break;
		}
		DIR *top = open_dir(fs, d, ".", &rc);
		if (!top)
			break;
		struct dirent *de;
		errno = 0;
		while (!rc && (de = readdir(top))) {
			uint32_t s;
			if (!section_dir_parse(de->d_name, fs->info.sections, &s) ||
			    section_disk_of(fs, s) != d)
				continue; /* not a section of this disk: fsck's */
			rc = sweep_section(fs, d, s, de->d_name, &n);
			errno = 0;
		}
		if (!rc && errno) {
			rc = -errno;
			fs_logf(fs, "disk %u: sweeping %s%s/%s: reading the directory: %s", d,
				fs->ds->paths[d], LSMFS_DIR, LSMFS_SECTIONS_DIR, strerror(-rc));
		}
		closedir(top);
	}
	if (n.removed > n.leftovers)
		fs_logf(fs, "after a crash: removed %" PRIu64 " chunk file%s whose record never "
			"became durable (never synced; the first: %s)", n.removed - n.leftovers,
			n.removed - n.leftovers == 1 ? "" : "s", n.first);
	if (n.leftovers)
		fs_logf(fs, "after a crash: removed %" PRIu64 " chunk file%s left by a relocation "
			"cut short (each chunk whole in the section its record names)", n.leftovers,
			n.leftovers == 1 ? "" : "s");
	if (n.failed)
		fs_logf(fs, "after a crash: %" PRIu64 " chunk file%s without record could not be "
			"removed (logged above; fsck.lsmfs reports them)", n.failed,
			n.failed == 1 ? "" : "s");
	/* The lengths and sums of the chunks the crash left in flux, now:
	 * until then their blocks are not verified. */
	int r = rc == 0 && fs_writable(fs) ? chunk_record_unsynced(fs, 0) : 0;
	if (r)
		fs_logf(fs, "after a crash: recording the lengths and checksums of the chunks it "
			"left in flux: %s (the next sync tries again)", strerror(-r));
	if (rc == 0)
		fs->sweep.done = true;
	else
		fs_logf(fs, "after a crash: the sweep for chunk files without record stopped (%s); "
			"the next mount goes on", rc > 0 ? "remounted read-only" : strerror(-rc));
}
