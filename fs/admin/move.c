/*
 * move.c: moving a section's chunk files to another disk while the
 * filesystem is in use (SCHEMA.md, "Moving a section").
 *
 *   1. `M move` = (section, from, to), synced: the intent.
 *   2. The section's changes are recorded from here on (gate.c); its chunk
 *      files are copied to <to>/.lsmfs/sections/<s>/, holes kept, each
 *      fdatasynced; then, in rounds, the chunks changed meanwhile are
 *      copied again (or removed from the target when they went).
 *   3. Frozen (no thread inside the section's gate): the last changes
 *      are copied, the target directory fsynced, the map entry `P` s set
 *      to `to` in one synced store write, and the section's generation
 *      bumped so that every chunk fd cached on the old copy is reopened
 *      (chunk.c).  Thawed: reads and writes go to the new copy.
 *   4. The old copy is removed (files, directory, each fsynced), then the
 *      intent deleted.
 *
 * A crash leaves the intent: the next read-write mount (move_recover)
 * removes the target's copy when the map still says `from`, and the old
 * copy when it says `to`.  One move at a time (fs->move_lock).
 *
 * Evacuating (a failing source disk, `lsmfs-disk remove --evacuate`): a
 * chunk file that cannot be read is not copied and does not stop the
 * move.  Its record gets a durable length (at least the bytes it held) in
 * the switch's batch, so that its bytes read as EIO and fsck.lsmfs reports
 * them (LSMFS-0504, `-y` makes them a hole), and the caller hears of it.
 * A section directory that cannot be listed is listed from the store's
 * chunk records instead; an old copy that cannot be removed is left.
 *
 * Copying one chunk file, and what an evacuation keeps of the chunks it
 * could not read, are move_copy.c's (struct mover: move_int.h).
 */
#include "engine.h"
#include "admin.h"
#include "move_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Catch-up rounds before freezing: a round that finds at most
 * FREEZE_BELOW chunks to copy again is the last one outside the freeze. */
#define ROUNDS_MAX 8
#define FREEZE_BELOW 16

/* The next entry of dir; NULL at the end, or on an error, into *rc (a
 * listing cut short by an error must never pass for a whole one). */
static struct dirent *next_entry(DIR *dir, int *rc)
{
	errno = 0;
	struct dirent *de = readdir(dir);
	if (!de && errno)
		*rc = -errno;
	return de;
}

/* Remove every chunk file of the section's directory on disk d, fsync it,
 * remove it and fsync the sections directory.  Anything else found there
 * (not a chunk file name) is left, logged, with the directory. */
static int wipe_copy(struct fs *fs, uint32_t d, uint32_t s)
{
	char name[SECTION_NAME_MAX], path[LSMFS_META_PATH_MAX + 128];
	section_dir_name(s, name);
	move_dir_path(fs, d, s, path, sizeof(path));
	int fd = openat(fs->sections_fd[d], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	int rc = 0;
	uint64_t left = 0;
	struct dirent *de;
	while (!rc && (de = next_entry(dir, &rc))) {
		uint64_t ino, chunk;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* Any chunk's file: chunks are placed in any section
		 * (SCHEMA.md "Placement"), and the copy took every one. */
		if (!section_chunk_parse(de->d_name, &ino, &chunk)) {
			left++;
			continue;
		}
		if (unlinkat(dirfd(dir), de->d_name, 0) != 0 && errno != ENOENT) {
			rc = -errno;
			fs_logf(fs, "disk %u: removing %s/%s: %s", d, path, de->d_name, strerror(errno));
			break;
		}
	}
	if (!rc && fsync(dirfd(dir)) != 0)
		rc = -errno;
	closedir(dir);
	if (rc)
		return rc;
	if (left) {
		fs_logf(fs, "disk %u: %s keeps %" PRIu64 " file%s that %s no chunk file (for fsck.lsmfs)",
			d, path, left, left == 1 ? "" : "s", left == 1 ? "is" : "are");
		return 0;
	}
	if (unlinkat(fs->sections_fd[d], name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		return -errno;
	return fsync(fs->sections_fd[d]) != 0 ? -errno : 0;
}

static int put_intent(struct fs *fs, const struct section_move *m)
{
	uint8_t k[KEY_MAX], v[SECTION_MOVE_LEN];
	size_t kl = key_meta(k, META_MOVE);
	section_move_encode(m, v);
	return store_put(fs->st, k, kl, v, sizeof(v), STORE_WRITE_SYNC);
}

static int clear_intent(struct fs *fs)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, META_MOVE);
	/* Not synced: an intent a crash brings back finds nothing left to
	 * remove (move_recover is idempotent). */
	return store_delete(fs->st, k, kl, STORE_WRITE_RESERVE);
}

/* Bring the target up to date with the chunks changed since the last
 * call.  Sets *busy when changes are still under way; *copied how many
 * chunks it copied (or removed). */
static int catch_up(struct mover *mv, bool *busy, size_t *copied)
{
	struct gate_chunk *v;
	size_t n;
	bool lost;
	int r = section_take_changes(mv->fs, &v, &n, &lost);
	if (r < 0)
		return r;
	*busy = r > 0;
	*copied = n;
	if (lost) {
		free(v);
		move_set_err(mv, "out of memory recording the changes made during the move");
		return -ENOMEM;
	}
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		char rel[96];
		section_chunk_name(v[i].ino, v[i].chunk, mv->m.section, rel, sizeof(rel));
		const char *base = strchr(rel, '/') + 1;
		rc = move_copy_chunk(mv, base, true);
		rc = rc > 0 ? 0 : rc;
	}
	free(v);
	return rc;
}

/* The chunk files of the source directory: names and the sum of sizes. */
struct listing {
	char **names;
	size_t n, cap;
	uint64_t bytes;
};

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
}

static int listing_add(struct listing *l, const char *name, uint64_t bytes)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 256;
		char **g = realloc(l->names, nc * sizeof(*g));
		if (!g)
			return -ENOMEM;
		l->names = g;
		l->cap = nc;
	}
	if (!(l->names[l->n] = strdup(name)))
		return -ENOMEM;
	l->n++;
	l->bytes += bytes;
	return 0;
}

static int list_source(struct mover *mv, struct listing *l)
{
	int fd = dup(mv->src_dir);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(dir);
	int rc = 0;
	struct dirent *de;
	while (!rc && (de = next_entry(dir, &rc))) {
		uint64_t ino, chunk;
		/* Every chunk's file goes with the section (chunks are placed
		 * in any section: SCHEMA.md "Placement"); one its record puts
		 * elsewhere goes too, for fsck to report where it lands. */
		if (!section_chunk_parse(de->d_name, &ino, &chunk))
			continue; /* not a chunk file: left for fsck with the directory */
		struct stat st;
		if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue; /* removed meanwhile: a change, caught up */
			if (!mv->evacuate) {
				rc = -errno;
				move_file_err(mv, mv->m.from, "reading", de->d_name, -rc);
				break;
			}
			st = (struct stat){.st_mode = S_IFREG}; /* copy_chunk finds out */
		}
		if (S_ISREG(st.st_mode))
			rc = listing_add(l, de->d_name, (uint64_t)st.st_size);
	}
	closedir(dir);
	return rc;
}

/* Evacuating, the source directory cannot be listed: every chunk record of
 * the section names a file to try. */
static int list_records(struct mover *mv, struct listing *l)
{
	struct store_iter *it;
	int rc = chunk_records_from(mv->fs, 0, 0, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it) && !rc; store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		if (kl != 17)
			continue; /* damage: fsck.lsmfs reports it */
		uint64_t ino = get_be64(k + 1), chunk = get_be64(k + 9);
		uint32_t where;
		if (chunk_value_section(v, vl, ino, chunk, mv->fs->info.sections, &where) ||
		    where != mv->m.section)
			continue; /* damaged (fsck's) or elsewhere */
		char rel[96];
		section_chunk_name(ino, chunk, mv->m.section, rel, sizeof(rel));
		rc = listing_add(l, strchr(rel, '/') + 1, 0);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

/*
 * Make the bulk copies durable: one syncfs of the target disk writes them
 * all back at once, and the fdatasync of each (cheap after it) is what
 * counts where syncfs does not reach (a FUSE-backed disk passes it on to
 * nobody).  A copy that is gone was removed by a change, which catch_up
 * deals with.
 */
static int sync_copies(struct mover *mv, const struct listing *l)
{
	struct fs *fs = mv->fs;
	(void)syncfs(mv->dst_dir); /* a head start only: the fdatasyncs decide */
	for (size_t i = 0; i < l->n; i++) {
		int fd = openat(mv->dst_dir, l->names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || fdatasync(fd) != 0) {
			int rc = -errno;
			move_file_err(mv, mv->m.to, "syncing", l->names[i], -rc);
			if (fd >= 0)
				close(fd);
			return rc;
		}
		close(fd);
	}
	stats_fsync(fs, mv->m.to);
	return 0;
}

static int open_section_dir(struct fs *fs, uint32_t d, uint32_t s, bool create)
{
	char name[SECTION_NAME_MAX];
	section_dir_name(s, name);
	if (create) {
		if (mkdirat(fs->sections_fd[d], name, 0700) == 0) {
			if (fsync(fs->sections_fd[d]) != 0)
				return -errno;
		} else if (errno != EEXIST) {
			return -errno;
		}
	}
	int fd = openat(fs->sections_fd[d], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The switch: `P` s = to, in one synced write; evacuating, with the
 * records of the chunks that could not be read, each given a durable
 * length (at least the bytes it held) so that they read as EIO.  A lost
 * chunk without record held nothing acknowledged (a crash's leftover) and
 * leaves the list. */
static int switch_map(struct mover *mv, bool *tried)
{
	struct fs *fs = mv->fs;
	*tried = false;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	uint8_t k[KEY_MAX], v[CHUNK_COPIES_HDR];
	section_value_encode(mv->m.to, v);
	int rc = store_batch_put(b, k, key_section(k, mv->m.section), v, SECTION_VAL_LEN);
	for (size_t i = 0; i < mv->nlost && !rc;) {
		struct move_lost *l = &mv->lost[i];
		uint64_t durable = 0;
		bool lost;
		void *old;
		size_t oldlen;
		int r = chunk_record_fetch(fs, l->ino, l->chunk, &old, &oldlen, &durable, &lost);
		if (r <= 0) {
			if ((rc = r))
				break;
			*l = mv->lost[--mv->nlost];
			continue;
		}
		if (durable > l->bytes)
			l->bytes = durable;
		size_t vl = chunk_value_relength(old, oldlen, l->bytes, v);
		free(old);
		rc = store_batch_put(b, k, key_chunk(k, l->ino, l->chunk), v, vl);
		i++;
	}
	if (!rc) {
		*tried = true;
		rc = store_write(fs->st, b, STORE_WRITE_SYNC);
	}
	store_batch_free(b);
	return rc;
}

/*
 * What a move holds, in the order it takes them, and who lets go:
 *   - fs->move_lock, one move at a time: tried, never waited for (a second
 *     move is refused), held to the end, and let go at move_section's out:
 *     on every path;
 *   - the intent `M move` (step 1), from move_begin until finish_move or
 *     rollback deletes it, or the next mount does (move_recover) when
 *     whether the switch reached the store is not known;
 *   - the recording of the section's changes (gate.c section_track), from
 *     copy_all until switch_section or rollback;
 *   - the freeze (gate.c section_freeze: no thread inside the section's
 *     gate, new ones wait), from freeze_and_check until switch_section or
 *     rollback; meanwhile no progress is reported (mv->frozen), so that a
 *     slow reader of the reports cannot hold the section frozen.
 * Any failure before the switch rolls back: the target's copy and the
 * intent go, and the section stays where it was.
 */

/* Whether a move may start: the filesystem read-write, its superblocks
 * current, and no earlier move's leftover (settled first when it can
 * be). */
static int may_start(struct mover *mv, uint32_t section, bool evacuate)
{
	struct fs *fs = mv->fs;
	if (!fs_writable(fs)) {
		move_set_err(mv, "mounted read-only");
		return -EROFS;
	}
	/* A disk added while a member's superblock could not be written
	 * must hold no section until it is (members.c): none moves. */
	if (fs->ds->stale) {
		move_set_err(mv, "the superblocks of disks %#llx are behind (a change to the disks "
			"could not write them): remount first", (unsigned long long)fs->ds->stale);
		return -EIO;
	}
	/* A move whose old copy could not be removed yet: that first (its
	 * intent is the only record of the leftover). */
	struct section_move pending;
	int rc = section_move_get(fs->st, &pending);
	if (rc == 1)
		rc = move_recover(fs, evacuate ? section_disk_of(fs, section) : UINT32_MAX);
	if (rc < 0 || (rc == 0 && section_move_get(fs->st, &pending) != 0)) {
		move_set_err(mv, "an earlier move left a copy that cannot be removed yet (%s); see the "
			"daemon's log", rc < 0 ? strerror(-rc) : "still recorded");
		return rc < 0 ? rc : -EBUSY;
	}
	return 0;
}

/* Step 1: both disks still the ones mounted, the copy buffer, the intent
 * recorded (synced).  Nothing to roll back when it fails. */
static int move_begin(struct mover *mv)
{
	uint32_t partner = section_of_copy(mv->m.section, 1, mv->fs->info.sections);
	mv->doubles = partner != UINT32_MAX && section_disk_of(mv->fs, partner) == mv->m.to;
	struct fs *fs = mv->fs;
	uint32_t from = mv->m.from, to = mv->m.to;
	if (!disk_usable(fs, from) || !disk_usable(fs, to)) {
		move_set_err(mv, "disk %u is no longer the disk mounted", disk_usable(fs, to) ? from : to);
		return -EIO;
	}
	mv->buf = malloc(COPY_BUF);
	if (!mv->buf)
		return -ENOMEM;
	int rc = put_intent(fs, &mv->m);
	if (rc)
		move_set_err(mv, "%s: recording the move: %s", fs->ds->meta_dir, strerror(-rc));
	return rc;
}

/* The section's directory on each disk: the source's made when missing,
 * and left closed (mv->src_dir < 0) when evacuating a disk that fails to
 * open it; the target's made. */
static int open_dirs(struct mover *mv)
{
	struct fs *fs = mv->fs;
	uint32_t s = mv->m.section, from = mv->m.from, to = mv->m.to;
	if ((mv->src_dir = open_section_dir(fs, from, s, false)) == -ENOENT)
		mv->src_dir = open_section_dir(fs, from, s, true);
	if (mv->src_dir < 0 && !(mv->evacuate && move_media_error(-mv->src_dir))) {
		move_set_err(mv, "disk %u: opening section %u: %s", from, s, strerror(-mv->src_dir));
		return mv->src_dir;
	}
	if ((mv->dst_dir = open_section_dir(fs, to, s, true)) < 0) {
		move_set_err(mv, "disk %u (%s): making the directory of section %u: %s", to,
			fs->ds->paths[to], s, strerror(-mv->dst_dir));
		return mv->dst_dir;
	}
	return 0;
}

/* The chunk files to copy: the source directory's, or, evacuating a disk
 * that cannot list it, those every chunk record of the section names. */
static int list_chunks(struct mover *mv, struct listing *l)
{
	struct fs *fs = mv->fs;
	uint32_t s = mv->m.section, from = mv->m.from;
	int rc = mv->src_dir >= 0 ? list_source(mv, l) : mv->src_dir;
	if (rc && mv->evacuate && move_media_error(-rc)) {
		char dir[LSMFS_META_PATH_MAX + 128];
		move_dir_path(fs, from, s, dir, sizeof(dir));
		fs_logf(fs, "disk %u: listing %s: %s (evacuating: each chunk record of the section "
			"is tried)", from, dir, strerror(-rc));
		if (mv->err)
			mv->err[0] = '\0';
		listing_free(l);
		*l = (struct listing){0};
		rc = list_records(mv, l);
	}
	if (rc)
		move_set_err(mv, "disk %u: listing section %u: %s", from, s, strerror(-rc));
	return rc;
}

/* Every listed chunk file copied, then made durable together. */
static int copy_listed(struct mover *mv, const struct listing *l)
{
	mv->p.files_total = l->n;
	mv->p.bytes_total = l->bytes;
	move_say(mv, true);
	for (size_t i = 0; i < l->n; i++) {
		if (__atomic_load_n(&mv->fs->move_cancel, __ATOMIC_ACQUIRE)) {
			move_set_err(mv, "the filesystem is being unmounted: section %u stays on disk %u",
				mv->m.section, mv->m.from);
			return -ECANCELED;
		}
		int rc = move_copy_chunk(mv, l->names[i], false);
		if (rc < 0)
			return rc;
	}
	return sync_copies(mv, l);
}

/*
 * Step 2: what an earlier attempt left on the target cleared, the
 * section's changes recorded from here on, every chunk file copied, then
 * rounds of the changes made meanwhile, until few are left or a writer
 * keeps ahead (the last ones are copied frozen).
 */
static int copy_all(struct mover *mv)
{
	struct fs *fs = mv->fs;
	uint32_t s = mv->m.section;
	/* The map says `from`: a copy on the target is not in use. */
	int rc = wipe_copy(fs, mv->m.to, s);
	if (rc) {
		move_set_err(mv, "disk %u: clearing what an earlier move left of section %u: %s",
			mv->m.to, s, strerror(-rc));
		return rc;
	}
	section_track(fs, s);
	mv->tracking = true;
	struct listing l = {0};
	if (!(rc = open_dirs(mv)) && !(rc = list_chunks(mv, &l)))
		rc = copy_listed(mv, &l);
	listing_free(&l);
	for (int round = 0; !rc && round < ROUNDS_MAX; round++) {
		bool busy;
		size_t copied;
		if (!(rc = catch_up(mv, &busy, &copied)) && copied <= FREEZE_BELOW && !busy)
			break;
	}
	return rc;
}

/*
 * Step 3, first half: frozen, the last changes copied, and the target's
 * directory fsynced, unless something changed while it copied that stops
 * the move (an unmount, a remount read-only, a disk replaced under its
 * path).
 */
static int freeze_and_check(struct mover *mv)
{
	struct fs *fs = mv->fs;
	uint32_t s = mv->m.section;
	move_keep_lost(mv); /* metadata on a failing disk: before the freeze */
	section_freeze(fs, s);
	mv->frozen = true;
	bool busy;
	size_t copied;
	int rc = catch_up(mv, &busy, &copied);
	if (rc)
		return rc;
	move_keep_lost(mv); /* any found lost only now (rare) */
	if (__atomic_load_n(&fs->move_cancel, __ATOMIC_ACQUIRE) || !fs_writable(fs) ||
	    !disk_usable(fs, mv->m.from) || !disk_usable(fs, mv->m.to)) {
		rc = !fs_writable(fs) ? -EROFS : __atomic_load_n(&fs->move_cancel, __ATOMIC_ACQUIRE)
								? -ECANCELED : -EIO;
		move_set_err(mv, "section %u stays on disk %u: %s", s, mv->m.from,
			rc == -EROFS ? "the filesystem went read-only"
			: rc == -ECANCELED ? "the filesystem is being unmounted"
					   : "a disk was replaced under its path");
		return rc;
	}
	if (fsync(mv->dst_dir) != 0) {
		rc = -errno;
		move_set_err(mv, "disk %u: fsync of the directory of section %u: %s", mv->m.to, s,
			strerror(-rc));
	}
	return rc;
}

/*
 * Step 3, second half: the map switched in one synced store write, the
 * generation bumped (every fd on the old copy stale), the recording
 * stopped, thawed.  *undecided: the write failed but may have reached the
 * commit log, so that no rollback may follow (below).
 */
static int switch_section(struct mover *mv, bool *undecided)
{
	struct fs *fs = mv->fs;
	uint32_t s = mv->m.section, to = mv->m.to;
	bool tried;
	int rc = switch_map(mv, &tried);
	*undecided = rc && tried;
	if (rc && !tried) {
		move_set_err(mv, "%s: switching section %u to disk %u: %s", fs->ds->meta_dir, s, to,
			strerror(-rc));
		return rc;
	}
	if (rc) {
		/* A failed sync is no proof the write did not reach the
		 * commit log: which disk holds the section is known only
		 * when the store is read again.  Both copies and the intent
		 * stay, and nothing is written any more, so that either copy
		 * is whole; the next mount settles it. */
		move_set_err(mv, "%s: switching section %u to disk %u: %s; the filesystem is read-only "
			"until it is mounted again", fs->ds->meta_dir, s, to, strerror(-rc));
		fs_logf(fs, "%s", mv->err ? mv->err : "switching a section failed");
		__atomic_store_n(&fs->meta_lost, 1, __ATOMIC_RELEASE);
	} else {
		section_switch(fs, s, to);
		chunk_section_changed(fs, s);
	}
	section_untrack(fs);
	mv->tracking = false;
	section_thaw(fs);
	mv->frozen = false;
	return rc;
}

/* Step 4: the chunks lost (evacuating) said; the old copy removed (a
 * failing disk's that cannot be is put aside), then the intent. */
static void finish_move(struct mover *mv, const struct move_opts *o)
{
	struct fs *fs = mv->fs;
	uint32_t s = mv->m.section, from = mv->m.from, to = mv->m.to;
	if (mv->nlost && o->lost)
		o->lost(o->ctx, mv->lost, mv->nlost);
	/* Nobody reads the old copy any more (every fd on it is stale). */
	int w = wipe_copy(fs, from, s);
	if (w && !mv->evacuate) {
		fs_logf(fs, "section %u moved to disk %u; removing its old copy on disk %u: %s (the "
			"next mount tries again)", s, to, from, strerror(-w));
	} else {
		if (w)
			move_put_aside(fs, from, s, w);
		if ((w = clear_intent(fs)))
			fs_logf(fs, "section %u moved to disk %u; clearing the record of the move: %s",
				s, to, strerror(-w));
	}
	move_say(mv, true);
}

/* Before the switch: undone in reverse; the section stays on its disk. */
static void rollback(struct mover *mv)
{
	struct fs *fs = mv->fs;
	for (size_t i = 0; i < mv->nlost; i++)
		move_unkeep(mv, &mv->lost[i]);
	if (mv->tracking)
		section_untrack(fs);
	if (mv->frozen)
		section_thaw(fs);
	int r = wipe_copy(fs, mv->m.to, mv->m.section);
	if (!r)
		r = clear_intent(fs);
	if (r)
		fs_logf(fs, "section %u stays on disk %u; removing the partial copy on disk %u: "
			"%s (the next mount tries again)", mv->m.section, mv->m.from, mv->m.to,
			strerror(-r));
}

int move_section(struct fs *fs, uint32_t section, uint32_t to, const struct move_opts *o,
		 char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	struct mover mv = {.fs = fs, .report = o->report, .ctx = o->ctx, .err = err,
			   .errlen = errlen, .src_dir = -1, .dst_dir = -1, .evacuate = o->evacuate};
	if (section >= fs->info.sections || !diskset_present(fs->ds, to)) {
		move_set_err(&mv, "no section %u or no disk %u", section, to);
		return -EINVAL;
	}
	if (pthread_mutex_trylock(&fs->move_lock) != 0) {
		move_set_err(&mv, "another section is moving");
		return -EBUSY;
	}
	bool undecided = false;
	uint32_t from;
	int rc = may_start(&mv, section, o->evacuate);
	if (rc)
		goto out;
	from = section_disk_of(fs, section);
	mv.m = (struct section_move){.section = section, .from = from, .to = to};
	mv.p = (struct move_progress){.section = section, .from = from, .to = to};
	if (from == to || (rc = move_begin(&mv)))
		goto out;
	/* Steps 2 and 3 (the file's header), or back to where it was. */
	if ((rc = copy_all(&mv)) || (rc = freeze_and_check(&mv)) ||
	    (rc = switch_section(&mv, &undecided))) {
		if (!undecided)
			rollback(&mv);
		goto out;
	}
	finish_move(&mv, o);
out:
	if (mv.src_dir >= 0)
		close(mv.src_dir);
	if (mv.dst_dir >= 0)
		close(mv.dst_dir);
	free(mv.buf);
	free(mv.lost);
	pthread_mutex_unlock(&fs->move_lock);
	if (rc && err && !err[0])
		snprintf(err, errlen, "moving section %u to disk %u: %s", section, to, strerror(-rc));
	return rc;
}

int move_recover(struct fs *fs, uint32_t leaving)
{
	struct section_move m;
	int rc = section_move_get(fs->st, &m);
	if (rc <= 0) {
		if (rc == -EUCLEAN)
			fs_logf(fs, "%s: the record of a section move is damaged (left for fsck.lsmfs)",
				fs->ds->meta_dir);
		return rc == -EUCLEAN ? 0 : rc;
	}
	uint32_t d = m.section < fs->info.sections ? section_disk_of(fs, m.section) : UINT32_MAX;
	if ((d != m.from && d != m.to) || !diskset_present(fs->ds, m.from) ||
	    !diskset_present(fs->ds, m.to)) {
		fs_logf(fs, "%s: a move of section %u from disk %u to disk %u was under way, but the "
			"map puts the section on disk %u (left for fsck.lsmfs)", fs->ds->meta_dir,
			m.section, m.from, m.to, d);
		return 0;
	}
	bool done = d == m.to;
	uint32_t stale = done ? m.from : m.to;
	rc = wipe_copy(fs, stale, m.section);
	if (rc && stale == leaving) {
		move_put_aside(fs, stale, m.section, rc);
		rc = 0;
	}
	if (!rc)
		rc = clear_intent(fs);
	if (rc) {
		/* The section itself is whole where the map says: a leftover
		 * that cannot go yet stops no mount.  The intent stays, so the
		 * next mount (or move) tries again. */
		fs_logf(fs, "a move of section %u from disk %u to disk %u was under way; removing its "
			"%s copy on disk %u: %s (tried again at the next mount)", m.section, m.from,
			m.to, done ? "old" : "partial", stale, strerror(-rc));
		return 0;
	}
	fs_logf(fs, "a move of section %u from disk %u to disk %u was under way: %s", m.section,
		m.from, m.to, done ? "finished (old copy removed)" : "rolled back (partial copy removed)");
	return 0;
}
