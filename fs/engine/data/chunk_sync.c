/*
 * chunk_sync.c: making chunk data durable and its length known (SCHEMA.md
 * "Chunk lengths"): the fsync of a file's chunks (chunk_sync_dirty), the
 * chunks of inodes let go from memory before their lengths were recorded
 * (the kept set fs->unsynced, recorded at fsync, remount read-only,
 * unmount or when full), and the sync of every disk at unmount
 * (chunk_sync_all).
 *
 * Locking: chunk_sync_dirty and chunk_keep_unsynced (the crash sweep) run
 * under the inode's stripe lock.  The kept set has fs->unsynced_lock, and
 * chunk_record_unsynced takes each inode's lock in turn.  chunk_sync_all
 * (unmount, remount read-only) takes no inode's lock.
 */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* syncfs of every usable disk (errors logged): before many fdatasyncs,
 * one journal commit that leaves them little to do. */
static void sync_all_disks(struct fs *fs)
{
	for (uint32_t d = 0; d < fs->ds->ndisks; d++)
		if (disk_usable(fs, d)) {
			stats_fsync(fs, d);
			if (syncfs(fs->sections_fd[d]) != 0)
				fs_logf(fs, "disk %u (%s): syncfs: %s", d, fs->ds->paths[d],
					strerror(errno));
		}
}

/* At most this many chunk files are open at once for one fsync. */
#define SYNC_WINDOW 64

/* Where chunk's files are: its open slot's place (stale copies settled),
 * else its record's; the slot (NULL: none).  0 when it has no record
 * (dropped since it was written).  *crashed from the record either way: a
 * slot opened by a read since the crash (the sweep's sync may come after
 * it) knows nothing of it, and its copies may still differ. */
static int sync_where(struct fs *fs, uint64_t ino, struct fs_inode *in, uint64_t chunk,
		      struct chunk_place *place, bool *crashed, struct chunk_fd **slot)
{
	*slot = NULL;
	*crashed = false;
	for (int i = 0; in && in->data && i < CHUNK_FDS; i++)
		if (in->data->fds[i].used && in->data->fds[i].chunk == chunk) {
			*slot = &in->data->fds[i];
			copies_settle(*slot);
			*place = (*slot)->place;
			if ((*slot)->place.copies < 2)
				return 1; /* nothing to bring in step */
			struct chunk_place rec;
			int rc = chunk_where(fs, ino, chunk, &rec, crashed);
			return rc < 0 ? rc : 1;
		}
	return chunk_where(fs, ino, chunk, place, crashed);
}

/* Copy i of a chunk a crash left in write, whose file is missing while
 * nothing of it was durable (no fsync reached it, so its creation need not
 * have either): made empty, its directory synced (copies_resync fills
 * it); its fd (read-only, as the sync's others), or -1 when it is not made
 * (it is stale then).  A file missing whose record says bytes were durable
 * is damage, not a crash's: left stale, for a scrub or fsck. */
static int make_missing(struct fs *fs, uint64_t ino, uint64_t chunk, const struct chunk_place *pl,
			unsigned i)
{
	uint64_t durable = 1;
	if (chunk_record_get(fs, ino, chunk, &durable, NULL) != 1 || durable)
		return -1;
	uint32_t section = section_of_copy(pl->section, i, fs->info.sections);
	char rel[96], sdir[SECTION_NAME_MAX];
	section_chunk_name(ino, chunk, section, rel, sizeof(rel));
	section_dir_name(section, sdir);
	int mark = section_mark();
	section_enter(fs, section, ino, chunk, false);
	int fd = -1, dfd = -1, e = 0;
	if (!disk_usable(fs, section_disk_of(fs, section)))
		e = EIO;
	else if ((fd = openat(chunk_dirfd(fs, section), rel, O_RDONLY | O_CREAT | O_CLOEXEC,
			      0600)) < 0 ||
		 (dfd = openat(chunk_dirfd(fs, section), sdir, O_RDONLY | O_DIRECTORY |
			       O_CLOEXEC)) < 0 ||
		 fsync(dfd) != 0)
		e = errno;
	section_release(fs, mark);
	if (dfd >= 0)
		close(dfd);
	if (e) {
		chunk_log_error(fs, section, DEVSTAT_WRITE, rel, "making again a copy a crash left "
				"without file ", e);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	chunk_section_changed(fs, section);
	fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": copy %u's file never reached its disk "
		"before a crash: made again", ino, chunk, i);
	return fd;
}

/*
 * fdatasync the chunks of ino in dirty[] (repeats allowed), record the
 * length each now has durably, then fsync the section directories in
 * new_sections[] that got new chunk files.  in, when given, is ino in
 * memory: its cached slots learn the lengths.  Under ino's lock.
 *
 * A copy on a disk found gone (diskwatch.c) does not open: it is stale in
 * the record written here, and the directory of its section, which can no
 * longer be synced, needs no sync when no copy synced here is in it; the
 * fsync succeeds on the other copy.
 */
static int sync_inode_chunks(struct fs *fs, uint64_t ino, struct fs_inode *in,
			     const uint64_t *dirty, size_t ndirty, const uint64_t *new_sections,
			     size_t nnew, unsigned wflags, bool keep_mark)
{
	keep_mark = keep_mark && in && in->data;
	int rc = 0;
	struct store_batch *lens = store_batch_new();
	uint8_t *val = malloc(CHUNK_VALUE_MAX(fs->info.chunk_size));
	/* The sections holding a copy synced here, by bit. */
	uint8_t *synced = calloc(fs->info.sections / 8 + 1, 1);
	if (!lens || !val || !synced) {
		store_batch_free(lens);
		free(val);
		free(synced);
		return -ENOMEM;
	}
	/* Windows of SYNC_WINDOW files: writeback of a window starts first,
	 * so that the blocks of its files are allocated in one journal
	 * transaction; the fdatasyncs then mostly wait.  However many chunks
	 * are dirty, the descriptors in use stay bounded. */
	for (size_t base = 0; base < ndirty && !rc; base += SYNC_WINDOW) {
		size_t n = ndirty - base < SYNC_WINDOW ? ndirty - base : SYNC_WINDOW;
		int fds[SYNC_WINDOW][CHUNK_MAX_COPIES];
		int err[SYNC_WINDOW];
		struct chunk_place pl[SYNC_WINDOW];
		struct chunk_fd *slot[SYNC_WINDOW];
		for (size_t i = 0; i < n; i++) {
			uint64_t chunk = dirty[base + i];
			bool crashed;
			for (unsigned j = 0; j < CHUNK_MAX_COPIES; j++)
				fds[i][j] = -1;
			int has = sync_where(fs, ino, in, chunk, &pl[i], &crashed, &slot[i]);
			err[i] = has < 0 ? has : has == 0 ? -ENOENT : 0;
			if (err[i])
				continue;
			/* Every copy that is not stale.  The gate only while
			 * the name resolves: a move that switches the section
			 * later made the copy durable on its new disk first,
			 * so syncing the old one then loses nothing (gate.c). */
			unsigned opened = 0, first = CHUNK_MAX_COPIES;
			int e = 0;
			bool missing[CHUNK_MAX_COPIES] = {false};
			for (unsigned j = 0; j < pl[i].copies; j++) {
				if (pl[i].stale >> j & 1)
					continue;
				uint32_t section = section_of_copy(pl[i].section, j, fs->info.sections);
				char rel[96];
				section_chunk_name(ino, chunk, section, rel, sizeof(rel));
				int mark = section_mark();
				section_enter(fs, section, ino, chunk, false);
				int fd;
				if (!disk_usable(fs, section_disk_of(fs, section)))
					fd = -EIO;
				else if ((fd = openat(chunk_dirfd(fs, section), rel, O_RDONLY | O_CLOEXEC)) < 0)
					fd = -errno;
				section_release(fs, mark);
				if (fd >= 0) {
					fds[i][j] = fd;
					opened++;
					first = first < j ? first : j;
					if (ndirty > 1)
						(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint only */
				} else if (!e || e == -ENOENT) {
					e = fd;
				}
				missing[j] = fd == -ENOENT;
				if (fd < 0 && fd != -ENOENT) {
					uint32_t disk = section_disk_of(fs, section);
					devstats_count_error(fs, disk, DEVSTAT_WRITE, fd);
					fs_logf(fs, "inode %" PRIu64 ": opening chunk %" PRIu64 " (copy %u, "
						"disk %" PRIu32 ") for fsync: %s", ino, chunk, j, disk,
						strerror(-fd));
				}
			}
			if (!opened) {
				err[i] = e ? e : -EIO;
				continue;
			}
			/* After a crash, a copy whose file never reached its
			 * disk while the other's did: made, to be brought in
			 * step below like one that differs. */
			for (unsigned j = 0; crashed && j < pl[i].copies; j++)
				if (missing[j] && !(pl[i].stale >> j & 1) &&
				    (fds[i][j] = make_missing(fs, ino, chunk, &pl[i], j)) >= 0)
					opened++;
			/* A copy that could not be opened while another was:
			 * stale from now on (said in the record written below). */
			for (unsigned j = 0; j < pl[i].copies; j++)
				if (!(pl[i].stale >> j & 1) && fds[i][j] < 0)
					pl[i].stale |= (uint8_t)(1u << j);
			if (crashed && opened > 1) {
				/* Inside the copies' gates, entered as a change:
				 * a move of either section under way copies the
				 * chunk again after this writes it (gate.c). */
				int mark = section_mark();
				chunk_enter(fs, &pl[i], ino, chunk, true);
				err[i] = copies_resync(fs, ino, chunk, &pl[i], fds[i], first);
				section_release(fs, mark);
			}
		}
		for (size_t i = 0; i < n; i++) {
			uint64_t chunk = dirty[base + i];
			if (err[i] == -ENOENT) /* dropped since it was written */
				continue;
			if (err[i] < 0) {
				if (!rc)
					rc = err[i];
				goto close_them;
			}
			int good = -1, last = -EIO;
			for (unsigned j = 0; j < pl[i].copies; j++) {
				if (fds[i][j] < 0)
					continue;
				uint32_t disk = section_disk_of(fs, section_of_copy(pl[i].section, j,
										   fs->info.sections));
				stats_fsync(fs, disk);
				if (!rc && fdatasync(fds[i][j]) != 0) {
					int e = -errno;
					devstats_count_error(fs, disk, DEVSTAT_WRITE, e);
					fs_logf(fs, "inode %" PRIu64 ": fsync of chunk %" PRIu64 " (copy %u, disk "
						"%" PRIu32 "): %s", ino, chunk, j, disk, strerror(-e));
					pl[i].stale |= (uint8_t)(1u << j);
					close(fds[i][j]);
					fds[i][j] = -1;
					last = e;
					if (!devstats_disk_fault(e) && !rc)
						rc = e; /* a full disk: the caller must know */
				} else {
					uint32_t s = section_of_copy(pl[i].section, j, fs->info.sections);
					synced[s / 8] |= (uint8_t)(1u << s % 8);
					if (good < 0)
						good = (int)j;
				}
			}
			if (!rc && good < 0)
				rc = last; /* no copy made it */
			struct stat st;
			if (!rc && fstat(fds[i][good], &st) == 0) {
				/* What is durable now: its length goes into the
				 * record, so that a chunk file found shorter
				 * later is known to have lost data, with its
				 * blocks' sums (sums.c) and the copies that are
				 * stale (every other one has it all). */
				if (slot[i])
					slot[i]->place.stale |= pl[i].stale;
				uint8_t k[KEY_MAX];
				size_t vl;
				rc = sums_final(fs, ino, chunk, &pl[i], in, fds[i][good], (uint64_t)st.st_size,
						keep_mark, val, &vl);
				if (rc)
					fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": reading it back "
						"for its checksums: %s", ino, chunk, strerror(-rc));
				else
					rc = store_batch_put(lens, k, key_chunk(k, ino, chunk), val, vl);
				if (!rc && in)
					chunk_set_durable(in, chunk, (uint64_t)st.st_size);
			}
close_them:
			for (unsigned j = 0; j < CHUNK_MAX_COPIES; j++)
				if (fds[i][j] >= 0)
					close(fds[i][j]);
		}
	}
	/* New chunk files need their directory entries durable too. */
	for (size_t i = 0; !rc && i < nnew; i++) {
		uint32_t section = (uint32_t)new_sections[i];
		char sdir[SECTION_NAME_MAX];
		section_dir_name(section, sdir);
		int mark = section_mark();
		section_enter(fs, section, ino, 0, false);
		uint32_t disk = section_disk_of(fs, section);
		int fd = -1;
		if (!disk_usable(fs, disk)) {
			section_release(fs, mark);
			if (!(synced[section / 8] >> section % 8 & 1))
				continue; /* its copies there are stale now */
			errno = EIO; /* gone after a copy there was synced */
		} else {
			fd = openat(chunk_dirfd(fs, section), sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			section_release(fs, mark);
		}
		stats_fsync(fs, disk);
		if (fd < 0 && errno == ENOENT)
			continue; /* moved away, its new directory synced by the move */
		if (fd < 0 || fsync(fd) != 0)
			rc = -errno;
		if (rc)
			devstats_count_error(fs, disk, DEVSTAT_WRITE, rc);
		if (fd >= 0)
			close(fd);
	}
	/* The lengths reach the store before the caller syncs its log. */
	if (!rc && store_batch_count(lens))
		rc = store_write(fs->st, lens, wflags);
	/* The slots' sums are the records' now, with the mark or without. */
	for (size_t i = 0; !rc && in && i < ndirty; i++) {
		sums_recorded(in, dirty[i], keep_mark);
		struct inode_data *d = in->data;
		if (keep_mark && (rc = chunk_list_append(&d->marked, &d->nmarked, &d->capmarked,
							 dirty[i])))
			break; /* ENOMEM: the fsync fails, the mark stays (safe) */
	}
	store_batch_free(lens);
	free(val);
	free(synced);
	return rc;
}

/*
 * Chunk lengths (SCHEMA.md "Chunk lengths"): every chunk written is on its
 * inode's dirty list until an fsync, a remount read-only or the unmount
 * fdatasyncs it and records its length.  An inode dropped from memory
 * before that leaves its lists here (fs->unsynced), so that the fsync that
 * follows its return, or the unmount, still covers them; past
 * UNSYNCED_MAX inodes or UNSYNCED_CHUNKS_MAX chunks they are recorded at
 * once.  An entry is taken out, synced and recorded under its inode's
 * lock, so no truncate or removal of its chunks runs beside it, and the
 * unlink that leads to a reclaim drops it under that lock too.
 */
static void unsynced_free(struct unsynced_inode *u)
{
	free(u->dirty);
	free(u->new_sections);
}

/* Add u's lists to the entry of u->ino, made when it has none (the lists
 * then move, without a copy): the set owns them after.  Sets *full when
 * the set is past its bound.  -ENOMEM leaves u as it was. */
static int keep_unsynced(struct fs *fs, struct unsynced_inode *u, bool *full)
{
	int rc = 0;
	pthread_mutex_lock(&fs->unsynced_lock);
	struct unsynced_inode *e = NULL;
	for (size_t i = 0; i < fs->nunsynced && !e; i++)
		if (fs->unsynced[i].ino == u->ino)
			e = &fs->unsynced[i];
	if (e) {
		/* Dropped twice before a sync: add to what it left. */
		size_t n = e->ndirty, nn = e->nnew;
		for (size_t i = 0; i < u->ndirty && !rc; i++)
			rc = chunk_list_append(&e->dirty, &e->ndirty, &e->capdirty, u->dirty[i]);
		for (size_t i = 0; i < u->nnew && !rc; i++)
			rc = chunk_list_append(&e->new_sections, &e->nnew, &e->capnew, u->new_sections[i]);
		if (rc) {
			e->ndirty = n; /* as it was */
			e->nnew = nn;
		} else {
			unsynced_free(u);
		}
	} else {
		if (fs->nunsynced == fs->capunsynced) {
			size_t nc = fs->capunsynced ? fs->capunsynced * 2 : 64;
			struct unsynced_inode *g = realloc(fs->unsynced, nc * sizeof(*g));
			if (!g)
				rc = -ENOMEM;
			else {
				fs->unsynced = g;
				fs->capunsynced = nc;
			}
		}
		if (!rc)
			fs->unsynced[fs->nunsynced++] = *u;
	}
	if (!rc)
		fs->unsynced_chunks += u->ndirty;
	*full = fs->nunsynced >= UNSYNCED_MAX || fs->unsynced_chunks >= UNSYNCED_CHUNKS_MAX;
	pthread_mutex_unlock(&fs->unsynced_lock);
	return rc;
}

bool chunk_remember_unsynced(struct fs *fs, struct fs_inode *in)
{
	struct inode_data *d = in->data;
	if (!d || (!d->ndirty && !d->nnew))
		return false;
	struct unsynced_inode u = {
		.ino = in->ino,
		.dirty = d->dirty, .ndirty = d->ndirty, .capdirty = d->capdirty,
		.new_sections = d->new_sections, .nnew = d->nnew, .capnew = d->capnew,
	};
	bool full = false;
	if (keep_unsynced(fs, &u, &full) == 0) {
		d->dirty = d->new_sections = NULL;
		d->ndirty = d->capdirty = d->nnew = d->capnew = 0;
		return full;
	}
	/* No memory to keep them: synced and recorded now, under the lock
	 * the caller holds. */
	fs_logf(fs, "inode %" PRIu64 ": out of memory keeping the chunks written since its last "
		"fsync: syncing them now", in->ino);
	if (sync_inode_chunks(fs, in->ino, in, d->dirty, d->ndirty, d->new_sections, d->nnew, 0,
			      false))
		fs_logf(fs, "inode %" PRIu64 ": syncing its chunks failed; their lengths stay "
			"unrecorded", in->ino);
	d->ndirty = d->nnew = 0;
	return false;
}

bool chunk_keep_unsynced(struct fs *fs, uint64_t ino, uint64_t chunk)
{
	struct unsynced_inode u = {
		.ino = ino, .dirty = malloc(sizeof(uint64_t)), .ndirty = 1, .capdirty = 1,
	};
	bool full = false;
	if (u.dirty)
		u.dirty[0] = chunk;
	if (!u.dirty || keep_unsynced(fs, &u, &full)) {
		free(u.dirty);
		fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": out of memory: its length stays "
			"unrecorded", ino, chunk);
	}
	return full;
}

/* Take ino's entry out of the kept set into *out; false when it has none. */
static bool take_unsynced(struct fs *fs, uint64_t ino, struct unsynced_inode *out)
{
	bool found = false;
	pthread_mutex_lock(&fs->unsynced_lock);
	for (size_t i = 0; i < fs->nunsynced; i++)
		if (fs->unsynced[i].ino == ino) {
			*out = fs->unsynced[i];
			fs->unsynced[i] = fs->unsynced[--fs->nunsynced];
			fs->unsynced_chunks -= out->ndirty < fs->unsynced_chunks ? out->ndirty
										  : fs->unsynced_chunks;
			found = true;
			break;
		}
	pthread_mutex_unlock(&fs->unsynced_lock);
	return found;
}

void chunk_forget_unsynced(struct fs *fs, uint64_t ino)
{
	struct unsynced_inode u;
	if (take_unsynced(fs, ino, &u))
		unsynced_free(&u);
}

int chunk_record_unsynced(struct fs *fs, unsigned wflags)
{
	/* The inode numbers first, then each entry under its inode's lock:
	 * the lock comes before unsynced_lock, as in drop(). */
	pthread_mutex_lock(&fs->unsynced_lock);
	size_t n = fs->nunsynced;
	uint64_t *inos = malloc((n ? n : 1) * sizeof(*inos));
	for (size_t i = 0; inos && i < n; i++)
		inos[i] = fs->unsynced[i].ino;
	pthread_mutex_unlock(&fs->unsynced_lock);
	if (!inos)
		return -ENOMEM;
	if (n > 1)
		sync_all_disks(fs); /* one journal commit, then each fdatasync is quick */
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_t *lock = inode_lock_of(fs, inos[i]);
		pthread_mutex_lock(lock);
		struct unsynced_inode u;
		if (take_unsynced(fs, inos[i], &u)) {
			/* Back in memory since, maybe: its slots' sums are
			 * the ones that count. */
			int r = sync_inode_chunks(fs, u.ino, inode_peek(fs, u.ino), u.dirty, u.ndirty,
						  u.new_sections, u.nnew, wflags, false);
			unsynced_free(&u);
			if (r && !rc)
				rc = r;
		}
		pthread_mutex_unlock(lock);
	}
	free(inos);
	return rc;
}

static int sync_dirty(struct fs *fs, struct fs_inode *in, unsigned wflags, bool keep_mark);

int chunk_sync_dirty(struct fs *fs, struct fs_inode *in, unsigned wflags)
{
	int rc = sync_dirty(fs, in, wflags, false);
	return rc ? rc : sums_unmark(fs, in);
}

int chunk_fsync(struct fs *fs, struct fs_inode *in)
{
	return sync_dirty(fs, in, 0, true);
}

static int sync_dirty(struct fs *fs, struct fs_inode *in, unsigned wflags, bool keep_mark)
{
	/* What it wrote before it was last dropped from memory first. */
	struct unsynced_inode u;
	if (__atomic_load_n(&fs->nunsynced, __ATOMIC_RELAXED) && take_unsynced(fs, in->ino, &u)) {
		int rc = sync_inode_chunks(fs, in->ino, in, u.dirty, u.ndirty, u.new_sections, u.nnew,
					   wflags, keep_mark);
		if (rc) {
			/* Kept for the next fsync or the unmount. */
			bool full;
			if (keep_unsynced(fs, &u, &full))
				unsynced_free(&u); /* ENOMEM: fsync fails anyway */
			return rc;
		}
		unsynced_free(&u);
	}
	struct inode_data *d = in->data;
	if (!d)
		return 0;
	int rc = sync_inode_chunks(fs, in->ino, in, d->dirty, d->ndirty, d->new_sections, d->nnew,
				   wflags, keep_mark);
	if (!rc) {
		d->ndirty = 0;
		d->nnew = 0;
	}
	return rc;
}

/* fsync every section directory changed since the mount. */
static int sync_sections(struct fs *fs)
{
	int rc = 0;
	for (uint32_t s = 0; s < fs->info.sections; s++) {
		if (!(fs->section_changed[s / 8] & (1u << (s % 8))))
			continue;
		int mark = section_mark();
		section_enter(fs, s, 0, 0, false);
		uint32_t disk = section_disk_of(fs, s);
		if (!disk_usable(fs, disk)) {
			section_release(fs, mark);
			rc = -EIO; /* replaced under us: nothing of ours to sync */
			continue;
		}
		char sdir[SECTION_NAME_MAX];
		section_dir_name(s, sdir);
		int fd = openat(chunk_dirfd(fs, s), sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		section_release(fs, mark);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || fsync(fd) != 0) {
			int e = errno;
			devstats_count_error(fs, disk, DEVSTAT_WRITE, e);
			fs_logf(fs, "disk %u: fsync of %s%s/%s/%s: %s", disk, fs->ds->paths[disk],
				LSMFS_DIR, LSMFS_SECTIONS_DIR, sdir, strerror(e));
			rc = -e;
		}
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

int chunk_sync_all(struct fs *fs)
{
	int rc = 0;
	for (uint32_t d = 0; fs->sections_fd && d < fs->ds->ndisks; d++)
		if (diskset_present(fs->ds, d) && fs->sections_fd[d] >= 0 &&
		    syncfs(fs->sections_fd[d]) != 0) {
			int e = errno;
			fs_logf(fs, "disk %u (%s): syncfs: %s", d, fs->ds->paths[d], strerror(e));
			if (!rc)
				rc = -e;
		}
	if (fs->section_changed) {
		int r = sync_sections(fs); /* syncfs may not reach them (FUSE disks) */
		if (!rc)
			rc = r;
	}
	return rc;
}
