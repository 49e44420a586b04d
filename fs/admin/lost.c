/*
 * lost.c: a disk dead for good, dropped from the filesystem (SCHEMA.md
 * "A disk lost"; `lsmfs-disk remove --lost`, as `btrfs device remove
 * missing`).
 *
 * The disk is missing from a degraded mount (or was found replaced while
 * mounted, diskwatch.c), so none of its chunk files can be read, written,
 * created or removed: every chunk operation on its sections fails with EIO
 * before it touches a record.  That keeps the records of its sections
 * still while they are marked:
 *   1. one scan of every chunk record; each one in a section of the disk
 *      that lies inside its file's size (read under the inode's lock)
 *      becomes "lost", with the length of the file it covered; synced.
 *      A record past the size is left as it is (a chunk in flux, which
 *      the mount's repair or the next truncate settles).  A chunk without
 *      record was a hole and stays one.
 *   2. every section of the disk goes, empty, to the other usable disks
 *      (the one holding the fewest sections first; or all to the one
 *      disk a replace names, replace.c): its directory made
 *      there (a leftover of an old move emptied first) and synced, then
 *      every `P` entry in one synced batch (with `M move` when a move
 *      from or to the disk was recorded), then the map in memory, each
 *      section frozen for its switch so that cached fds go stale.
 *   3. a chunk with two copies, one of them on the disk, is not lost: in
 *      step 1 that copy is marked stale (the record kept), each section
 *      in step 2 goes to a disk other than its partner's where there is
 *      one, and then every chunk left with a stale copy gets it rebuilt
 *      from the good one on its section's new disk (chunk_scrub): the
 *      copy count restored, online; those with no disk for it yet stay
 *      stale, counted, for a scrub after a disk is added;
 *   4. the disk is detached (members.c), without writing to it.
 * A crash between the steps leaves a disk that is still a member, with
 * some or all of its records marked: running it again finishes.  A lost
 * record reads (and writes) as EIO; truncating below it, or removing the
 * file, makes it go; fsck.lsmfs counts such records without calling
 * them damage.
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
#include <unistd.h>

#define LOST_BATCH 4096   /* records per store write while marking */
#define LOST_NAMES 65536  /* files named per scan of the directory entries */

struct lost_file {
	uint64_t ino, chunks, bytes;
};

struct dropper {
	struct fs *fs;
	uint32_t disk;
	/* by section: its new disk, UINT32_MAX when not lost; NULL: a
	 * restore, where a chunk whose file is missing is lost */
	const uint32_t *target;
	uint64_t chunks;        /* records marked */
	struct lost_file *files;
	size_t nfiles, capfiles;
	/* the inode whose records are being collected */
	uint64_t ino;
	uint64_t *chunk;
	uint8_t *gone;          /* by chunk: the copies gone, when another is left (0: lost) */
	size_t nchunk, capchunk, capgone;
	uint64_t staled;        /* copies marked stale, their chunks kept */
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	void *g = realloc(*v, nc * size);
	if (!g)
		return -ENOMEM;
	*v = g;
	*cap = nc;
	return 0;
}

/* Step 1 for one inode: its records collected in dr->chunk. */
static int mark_inode(struct dropper *dr)
{
	struct fs *fs = dr->fs;
	if (!dr->nchunk)
		return 0;
	int rc;
	struct fs_inode *in = inode_get(fs, dr->ino, &rc);
	if (!in) /* reclaimed meanwhile: its records went with it */
		return rc == -ENOENT ? 0 : rc;
	uint64_t cs = fs->info.chunk_size, n = 0, bytes = 0;
	struct store_batch *b = store_batch_new();
	rc = b ? 0 : -ENOMEM;
	inode_lock(fs, in);
	uint64_t size = (in->rec.flags & INODE_FLAG_CHUNKED) ? in->rec.size : 0;
	for (size_t i = 0; !rc && i < dr->nchunk; i++) {
		uint64_t c = dr->chunk[i];
		if (dr->gone[i]) {
			/* Another copy has the data: this one is stale, rebuilt
			 * once its section is on another disk (SCHEMA.md
			 * "Copies"), the chunk kept. */
			rc = chunk_restale(fs, in, c, dr->gone[i], 0, b);
			if (rc == -ENODATA)
				rc = 0; /* the other copy was stale too: lost below */
			else {
				dr->staled += !rc;
				continue;
			}
		}
		if (c >= size / cs + (size % cs != 0))
			continue; /* past the size: in flux, not data */
		uint64_t len = size - c * cs < cs ? size - c * cs : cs;
		uint8_t k[KEY_MAX], v[CHUNK_LOST_LEN];
		chunk_value_encode_lost(len, v);
		rc = store_batch_put(b, k, key_chunk(k, dr->ino, c), v, sizeof(v));
		n++;
		bytes += len;
		if (!rc && store_batch_count(b) >= LOST_BATCH) {
			rc = store_write(fs->st, b, STORE_WRITE_RESERVE);
			store_batch_clear(b);
		}
	}
	if (!rc && store_batch_count(b))
		rc = store_write(fs->st, b, STORE_WRITE_RESERVE);
	inode_unlock(fs, in);
	inode_put(fs, in);
	store_batch_free(b);
	if (rc || !n)
		return rc;
	if ((rc = grow((void **)&dr->files, &dr->capfiles, dr->nfiles, sizeof(*dr->files))))
		return rc;
	dr->files[dr->nfiles++] = (struct lost_file){.ino = dr->ino, .chunks = n, .bytes = bytes};
	dr->chunks += n;
	return 0;
}

/* A restore: does chunk (ino, chunk)'s file exist (or can it not be
 * told: its disk unusable, a stat error other than ENOENT)? */
static bool file_there(struct fs *fs, uint64_t ino, uint64_t chunk, uint32_t s)
{
	uint32_t d = section_disk_of(fs, s);
	if (!disk_usable(fs, d))
		return true;
	char rel[96];
	section_chunk_name(ino, chunk, s, rel, sizeof(rel));
	struct stat st;
	return fstatat(fs->sections_fd[d], rel, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

/* Step 1: one scan of every chunk record, by inode. */
static int mark_all(struct dropper *dr)
{
	struct fs *fs = dr->fs;
	struct store_iter *it;
	int rc = chunk_records_from(fs, 0, 0, &it);
	if (rc)
		return rc;
	dr->nchunk = 0;
	for (store_iter_seek_first(it); !rc && store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		if (kl != 17)
			continue; /* fsck's to report */
		uint64_t ino = get_be64(k + 1), chunk = get_be64(k + 9);
		/* Where its copies are (SCHEMA.md "Placement", "Copies"). */
		struct chunk_place pl;
		if (chunk_value_place(v, vl, ino, chunk, fs->info.sections, &pl))
			continue; /* damaged: fsck's to report */
		uint8_t gone = 0, have = 0;
		for (unsigned i = 0; i < pl.copies; i++) {
			if (pl.stale >> i & 1)
				continue;
			uint32_t s = section_of_copy(pl.section, i, fs->info.sections);
			bool g = dr->target ? dr->target[s] != UINT32_MAX
					    : !file_there(fs, ino, chunk, s);
			if (g)
				gone |= (uint8_t)(1u << i);
			else
				have |= (uint8_t)(1u << i);
		}
		if (!gone)
			continue;
		if (ino != dr->ino) {
			rc = mark_inode(dr);
			dr->ino = ino;
			dr->nchunk = 0;
		}
		if (!rc && !(rc = grow((void **)&dr->chunk, &dr->capchunk, dr->nchunk,
				       sizeof(*dr->chunk))) &&
		    !(rc = grow((void **)&dr->gone, &dr->capgone, dr->nchunk, sizeof(*dr->gone)))) {
			dr->gone[dr->nchunk] = have ? gone : 0;
			dr->chunk[dr->nchunk++] = chunk;
		}
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	if (!rc)
		rc = mark_inode(dr);
	if (!rc)
		rc = store_sync(fs->st);
	return rc;
}

/* Step 2, on disk: section s's directory on disk t, new and empty. */
static int make_dir(struct fs *fs, uint32_t s, uint32_t t)
{
	char name[SECTION_NAME_MAX], dir[LSMFS_META_PATH_MAX + 128], top[LSMFS_META_PATH_MAX + 64];
	section_dir_name(s, name);
	section_disk_dir(fs->ds->paths[t], top, sizeof(top));
	snprintf(dir, sizeof(dir), "%s/%s", top, name);
	/* A leftover (an old move to t cut short): not this section's data. */
	int rc = fs_remove_flat(dir);
	if (rc)
		return rc;
	if (mkdirat(fs->sections_fd[t], name, 0700) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int switch_all(struct dropper *dr, const struct section_move *m, bool moved)
{
	struct fs *fs = dr->fs;
	uint32_t n = fs->info.sections;
	uint64_t synced = 0;
	int rc = 0;
	for (uint32_t s = 0; s < n && !rc; s++) {
		uint32_t t = dr->target[s];
		if (t == UINT32_MAX)
			continue;
		rc = make_dir(fs, s, t);
		if (rc)
			fs_logf(fs, "dropping disk %u: making section %u's directory on disk %u (%s): %s",
				dr->disk, s, t, fs->ds->paths[t], strerror(-rc));
		if (!rc)
			synced |= 1ull << t;
	}
	for (uint32_t t = 0; !rc && t < LSMFS_MAX_DISKS; t++)
		if ((synced >> t & 1) && fsync(fs->sections_fd[t]) != 0)
			rc = -errno;
	struct store_batch *b = rc ? NULL : store_batch_new();
	if (!rc && !b)
		rc = -ENOMEM;
	for (uint32_t s = 0; s < n && !rc; s++) {
		if (dr->target[s] == UINT32_MAX)
			continue;
		uint8_t k[KEY_MAX], v[SECTION_VAL_LEN];
		section_value_encode(dr->target[s], v);
		rc = store_batch_put(b, k, key_section(k, s), v, SECTION_VAL_LEN);
	}
	if (!rc && moved) {
		uint8_t k[KEY_MAX];
		rc = store_batch_delete(b, k, key_meta(k, META_MOVE));
	}
	if (!rc)
		rc = store_write(fs->st, b, STORE_WRITE_SYNC | STORE_WRITE_RESERVE);
	store_batch_free(b);
	if (rc)
		return rc;
	for (uint32_t s = 0; s < n; s++) {
		if (dr->target[s] == UINT32_MAX)
			continue;
		section_freeze(fs, s);
		section_switch(fs, s, dr->target[s]);
		section_thaw(fs);
	}
	/* A recorded move's other copy, on a disk that stays: not where the
	 * section is now, so it goes (as move_recover would). */
	if (moved)
		for (int i = 0; i < 2; i++) {
			uint32_t x = i ? m->to : m->from;
			if (x == dr->disk || !disk_usable(fs, x) || section_disk_of(fs, m->section) == x)
				continue;
			char name[SECTION_NAME_MAX], dir[LSMFS_META_PATH_MAX + 128],
				top[LSMFS_META_PATH_MAX + 64];
			section_dir_name(m->section, name);
			section_disk_dir(fs->ds->paths[x], top, sizeof(top));
			snprintf(dir, sizeof(dir), "%s/%s", top, name);
			int r = fs_remove_flat(dir);
			if (r)
				fs_logf(fs, "dropping disk %u: the old copy of section %u on disk %u (%s): "
					"%s (fsck.lsmfs reports its files)", dr->disk, m->section, x,
					dir, strerror(-r));
		}
	return 0;
}

/* Step 3: every chunk left with a stale copy whose section is now on a
 * usable disk, not its other copy's, gets the copy back (chunk_scrub
 * rebuilds it from the good one, synced, and clears the mark): the copy
 * count restored where the disks allow. */
static int rebuild_stale(struct dropper *dr, uint64_t *rebuilt, uint64_t *left)
{
	struct fs *fs = dr->fs;
	struct store_iter *it;
	int rc = chunk_records_from(fs, 0, 0, &it);
	if (rc)
		return rc;
	struct scrub_count sc = {0};
	for (store_iter_seek_first(it); !rc && store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		if (kl != 17)
			continue;
		uint64_t ino = get_be64(k + 1), chunk = get_be64(k + 9);
		struct chunk_place pl;
		if (chunk_value_place(v, vl, ino, chunk, fs->info.sections, &pl) || !pl.stale)
			continue;
		bool unrepaired;
		rc = chunk_scrub(fs, ino, chunk, &sc, &unrepaired);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	*rebuilt = sc.rebuilt;
	*left = sc.unrebuilt;
	return rc;
}

/* The files that lost bytes, by path, to out and the log. */
static void report(struct dropper *dr, int (*out)(void *, const char *), void *ctx)
{
	struct fs *fs = dr->fs;
	bool gone = false;
	for (size_t at = 0; at < dr->nfiles; at += LOST_NAMES) {
		size_t n = dr->nfiles - at < LOST_NAMES ? dr->nfiles - at : LOST_NAMES;
		uint64_t *inos = malloc(n * sizeof(*inos));
		char **paths = calloc(n, sizeof(*paths));
		for (size_t i = 0; inos && i < n; i++)
			inos[i] = dr->files[at + i].ino;
		int rc = !inos || !paths ? -ENOMEM : ipath_find(fs, inos, n, paths);
		if (rc)
			fs_logf(fs, "naming the files that lost bytes: %s (their inodes are given)",
				strerror(-rc));
		for (size_t i = 0; i < n; i++) {
			const struct lost_file *f = &dr->files[at + i];
			char ino[32];
			snprintf(ino, sizeof(ino), "inode %" PRIu64, f->ino);
			const char *path = paths && paths[i] ? paths[i] : ino;
			/* The kernel may still cache bytes that came from the
			 * disk before it went: they must fail as they will. */
			if (fs->se)
				(void)fuse_lowlevel_notify_inval_inode(fs->se, f->ino, 0, 0);
			char what[48];
			snprintf(what, sizeof(what), dr->target ? "disk %u lost" : "restored: chunk files "
				 "gone since the backup", dr->disk);
			fs_logf(fs, "%s: %s: %" PRIu64 " chunk%s, %" PRIu64 " bytes read as EIO "
				"until the file is truncated below them or removed", what, path,
				f->chunks, f->chunks == 1 ? "" : "s", f->bytes);
			if (gone)
				continue;
			struct json_out o = {0};
			json_put(&o, "lost {\"ino\":%" PRIu64 ",\"chunks\":%" PRIu64 ",\"bytes\":%" PRIu64
				     ",\"path\":", f->ino, f->chunks, f->bytes);
			json_put_str(&o, path);
			json_put(&o, "}");
			if (o.err || out(ctx, o.buf))
				gone = true;
			free(o.buf);
		}
		for (size_t i = 0; paths && i < n; i++)
			free(paths[i]);
		free(paths);
		free(inos);
	}
}

static int drop_locked(struct fs *fs, uint32_t d, uint32_t to, uint32_t *target,
		       int (*out)(void *, const char *), void *ctx, char *err, size_t errlen)
{
	struct lsmfs_diskset *ds = fs->ds;
	uint32_t n = fs->info.sections;
	if (d >= ds->ndisks || super_slot_empty(&ds->sb, d))
		return fs_set_err(err, errlen, -ENOENT, "no disk %u", d);
	if (disk_usable(fs, d))
		return fs_set_err(err, errlen, -EBUSY, "disk %u (%s) is there: --lost is for a disk that "
			       "is gone (mount -o degraded without it); remove a disk that is there "
			       "with remove (--evacuate when it fails)", d, ds->paths[d]);
	for (uint32_t c = 0; c < ds->sb.meta_count; c++)
		if (ds->sb.meta[c].disk == d)
			return fs_set_err(err, errlen, -EBUSY, "disk %u holds copy %u of the metadata store: "
				       "remove that copy first (lsmfs-disk remove --lost does)", d, c);
	uint32_t held[LSMFS_MAX_DISKS] = {0};
	uint64_t usable = 0;
	for (uint32_t t = 0; t < ds->ndisks; t++)
		if (t != d && disk_usable(fs, t))
			usable |= 1ull << t;
	if (!usable)
		return fs_set_err(err, errlen, -ENOSPC, "no other usable disk to take disk %u's sections",
			       d);
	if (to != UINT32_MAX && (to >= LSMFS_MAX_DISKS || !(usable >> to & 1)))
		return fs_set_err(err, errlen, -EINVAL, "disk %u cannot take disk %u's sections: it is "
			       "%s", to, d, to == d ? "that disk" : "not a usable disk of the filesystem");
	struct section_move m;
	int rc = section_move_get(fs->st, &m);
	if (rc < 0)
		return fs_set_err(err, errlen, rc, "reading the record of a section move: %s",
			       strerror(-rc));
	bool moved = rc == 1;
	if (moved && m.from != d && m.to != d)
		return fs_set_err(err, errlen, -EBUSY, "a move of section %u from disk %u to disk %u is "
			       "recorded: mount with both disks to settle it first", m.section, m.from,
			       m.to);
	/* Step 2's plan, first: the fewest sections first. */
	uint32_t lost = 0;
	for (uint32_t s = 0; s < n; s++)
		held[section_disk_of(fs, s) % LSMFS_MAX_DISKS]++;
	for (uint32_t s = 0; s < n; s++) {
		target[s] = UINT32_MAX;
		if (section_disk_of(fs, s) != d)
			continue;
		/* Not where its partner is (SCHEMA.md "Copies"): a chunk's
		 * copies stay on two disks, but when no other disk is left. */
		uint32_t partner = section_of_copy(s, 1, n);
		uint32_t pd = partner == UINT32_MAX ? UINT32_MAX : section_disk_of(fs, partner);
		uint32_t best = to;
		for (int pass = 0; pass < 2 && best == UINT32_MAX; pass++)
			for (uint32_t t = 0; t < ds->ndisks; t++)
				if ((usable >> t & 1) && (pass || t != pd) &&
				    (best == UINT32_MAX || held[t] < held[best]))
					best = t;
		target[s] = best;
		held[best]++;
		lost++;
	}
	/* A use of the disk's sections that began before it was found gone
	 * (diskwatch.c) may still be adding a record: each section frozen
	 * once, so that every such use has ended before the scan. */
	for (uint32_t s = 0; s < n; s++)
		if (target[s] != UINT32_MAX) {
			section_freeze(fs, s);
			section_thaw(fs);
		}
	struct dropper dr = {.fs = fs, .disk = d, .target = target, .ino = UINT64_MAX};
	rc = mark_all(&dr);
	if (rc) {
		fs_set_err(err, errlen, rc, "marking disk %u's chunks lost: %s (nothing else changed; "
			"run it again)", d, strerror(-rc));
		goto out;
	}
	rc = switch_all(&dr, &m, moved);
	if (rc) {
		fs_set_err(err, errlen, rc, "giving disk %u's %u sections to the other disks: %s (its "
			"chunks are marked lost; run it again)", d, lost, strerror(-rc));
		goto out;
	}
	uint64_t rebuilt = 0, left = 0;
	/* Every stale copy, not only those marked now: a copy on the dead
	 * disk may have gone stale before (a write it missed while the disk
	 * was failing or missing). */
	{
		rc = rebuild_stale(&dr, &rebuilt, &left);
		if (rc)
			fs_logf(fs, "dropping disk %u: rebuilding the copies it held: %s (a scrub "
				"rebuilds them)", d, strerror(-rc));
		rc = 0;
	}
	report(&dr, out, ctx);
	fs_logf(fs, "disk %u dropped as lost: %u section%s given to the other disks, %" PRIu64
		" chunk%s of %zu file%s lost, %" PRIu64 " cop%s it held rebuilt on the others (%"
		PRIu64 " left stale: no disk for them)", d, lost, lost == 1 ? "" : "s", dr.chunks,
		dr.chunks == 1 ? "" : "s", dr.nfiles, dr.nfiles == 1 ? "" : "s", rebuilt,
		rebuilt == 1 ? "y" : "ies", left);
	rc = members_detach_locked(fs, d, err, errlen);
	if (!rc) {
		char line[256];
		snprintf(line, sizeof(line), "dropped {\"disk\":%" PRIu32 ",\"sections\":%" PRIu32
			 ",\"chunks\":%" PRIu64 ",\"files\":%zu,\"copies_rebuilt\":%" PRIu64
			 ",\"copies_stale\":%" PRIu64 "}", d, lost, dr.chunks, dr.nfiles, rebuilt,
			 left);
		(void)out(ctx, line);
	}
out:
	free(dr.files);
	free(dr.chunk);
	free(dr.gone);
	return rc;
}

int lost_mark_missing(struct fs *fs, int (*out)(void *ctx, const char *line), void *ctx,
		      uint64_t *files, uint64_t *chunks)
{
	struct dropper dr = {.fs = fs, .disk = UINT32_MAX, .ino = UINT64_MAX};
	int rc = mark_all(&dr);
	if (!rc)
		report(&dr, out, ctx);
	*files = dr.nfiles;
	*chunks = dr.chunks;
	free(dr.files);
	free(dr.chunk);
	free(dr.gone);
	return rc;
}

int lost_drop_disk_locked(struct fs *fs, uint32_t d, uint32_t to,
			  int (*out)(void *ctx, const char *line), void *ctx, char *err,
			  size_t errlen)
{
	uint32_t *target = malloc(fs->info.sections * sizeof(*target));
	if (!target)
		return fs_set_err(err, errlen, -ENOMEM, "out of memory");
	int rc = drop_locked(fs, d, to, target, out, ctx, err, errlen);
	free(target);
	return rc;
}

int lost_drop_disk(struct fs *fs, uint32_t d, int (*out)(void *ctx, const char *line), void *ctx,
		   char *err, size_t errlen)
{
	int rc = members_change_begin(fs, err, errlen);
	if (!rc) {
		rc = lost_drop_disk_locked(fs, d, UINT32_MAX, out, ctx, err, errlen);
		members_change_end(fs);
	}
	return rc;
}
