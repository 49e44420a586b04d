/*
 * chunk_scrub.c: scrubbing one chunk (SCHEMA.md "Scrub"), and changing its
 * copies (SCHEMA.md "Copies", chunk_convert below).  Scrub: every copy read
 * whole from its disk and each block checked against its sum; a block
 * that fails in one copy rewritten from a copy where it is good; a copy
 * that is stale, missing, shorter than its durable length or unreadable
 * made again whole from a good one when its disk is usable and is not the
 * good copy's, then no longer stale in the record.
 *
 * Locking.  Under the inode's lock, alone in the file's I/O gate
 * (iogate_drain_read), the chunk's cached slot is let go (its changed
 * sums into the record first), so that the record is the chunk's whole
 * truth, and the record is read.  Then the scrub is a read under way
 * (iogate.c): writes, truncations and fsyncs of the file wait for it,
 * reads go on beside it, and its I/O runs with the inode's lock let go
 * (no other inode of the lock's stripe waits for a disk), inside the gates
 * of the copies' sections, entered as a change so that a section move
 * copies the chunk again after it.  The lock is taken again to clear the
 * stale bits of the copies rebuilt.  A writer of the file waits for at
 * most one chunk's scrub.  Reads beside it may find a block bad before the
 * scrub rewrote it, and heal it as well: the same good bytes.
 *
 * Which sums it trusts: those a read trusts (sums.c): a record's not in
 * write, or in write by this mount (its slot let go).  A chunk in write
 * since another mount (a crash the sweep has not yet repaired) has none
 * to trust: skipped and counted; so are lost and damaged records and
 * chunks none of whose copies is on a usable disk.  A record without sums
 * (made before them): its copies are read and rebuilt, not checked.
 *
 * Counts (struct scrub_count, data.h): an error is damage found in one
 * copy: a block failing its sum, or the copy missing, shorter than its
 * durable length or unreadable.  Each error is repaired (the block
 * rewritten, or the copy rebuilt) or left (unrepaired), so errors =
 * repaired + unrepaired.  A copy its record says is stale is no error:
 * rebuilt or unrebuilt, as is every copy that needed making whole.
 * Reads go through the page cache, dropped before and after (as
 * fsck.lsmfs --scrub): the bytes checked are the disk's, and a scrub does
 * not fill the cache.  Memory: one buffer of SCRUB_PIECE per copy.
 */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define SCRUB_PIECE (1u << 20)

struct scrub_copy {
	uint32_t section, disk;
	int fd;          /* read-only; -1: none */
	uint64_t size;
	bool usable;     /* its disk takes I/O */
	bool stale;      /* its record says it lacks data */
	bool rebuild;    /* stale, missing, short or unopenable: made from a good one */
	bool failed;     /* a read or a rewrite of it failed: made from a good one */
	uint64_t errors; /* its errors that only its rebuild repairs */
	char rel[96];
};

/* One chunk's scrub. */
struct scrub_chunk {
	struct fs *fs;
	uint64_t ino, chunk, durable;
	struct chunk_value cv;  /* points into the record's value */
	struct chunk_place pl;
	bool sums;              /* the record's sums are trusted */
	struct scrub_copy cp[CHUNK_MAX_COPIES];
	char *buf[CHUNK_MAX_COPIES];
	struct scrub_count *sc;
	bool unrepaired;        /* an error left */
};

/* Copy c is damaged: an error that its rebuild repairs, or leaves. */
static void copy_damaged(struct scrub_chunk *k, struct scrub_copy *c, const char *what, int err)
{
	chunk_log_error(k->fs, c->section, DEVSTAT_READ, c->rel, what, err);
	k->sc->errors++;
	c->errors++;
	c->rebuild = true;
}

/* Open every copy that should hold data; decide which are to be rebuilt.
 * 0, or 1 when the chunk is a hole (no copy has a file and nothing was
 * made durable) or none of its copies is on a usable disk. */
static int open_copies(struct scrub_chunk *k)
{
	struct fs *fs = k->fs;
	unsigned missing = 0, present = 0, usable = 0;
	for (unsigned i = 0; i < k->pl.copies; i++) {
		struct scrub_copy *c = &k->cp[i];
		c->section = section_of_copy(k->pl.section, i, fs->info.sections);
		c->disk = section_disk_of(fs, c->section);
		c->usable = disk_usable(fs, c->disk);
		section_chunk_name(k->ino, k->chunk, c->section, c->rel, sizeof(c->rel));
		c->stale = c->rebuild = k->pl.stale >> i & 1;
		usable += c->usable;
		if (!c->usable || c->stale)
			continue;
		c->fd = openat(chunk_dirfd(fs, c->section), c->rel, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (c->fd < 0 && errno == ENOENT) {
			missing |= 1u << i;
			continue;
		}
		if (c->fd < 0 || fstat(c->fd, &st) != 0) {
			int e = errno;
			if (c->fd >= 0)
				close(c->fd);
			c->fd = -1;
			copy_damaged(k, c, "scrub: opening ", e);
			continue;
		}
		present++;
		c->size = (uint64_t)st.st_size;
		if (c->size < k->durable) {
			close(c->fd);
			c->fd = -1;
			copy_damaged(k, c, "scrub: shorter than the length its record says was made "
				     "durable: ", EIO);
			continue;
		}
		/* The disk's bytes, not the cache's. */
		(void)posix_fadvise(c->fd, 0, 0, POSIX_FADV_DONTNEED); /* a hint */
		(void)posix_fadvise(c->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	if (!usable)
		return 1;
	if (missing && !present && !k->durable) {
		bool damaged = false;
		for (unsigned i = 0; i < k->pl.copies; i++)
			damaged |= k->cp[i].errors != 0;
		if (!damaged)
			return 1; /* a hole: nothing was written there */
	}
	for (unsigned i = 0; i < k->pl.copies; i++)
		if (missing >> i & 1)
			copy_damaged(k, &k->cp[i], "scrub: missing ", ENOENT);
	return 0;
}

/* Can copy c be read now? */
static bool readable(const struct scrub_copy *c)
{
	return c->fd >= 0 && !c->rebuild && !c->failed;
}

/* Rewrite n bytes at off of copy c from buf, synced. */
static int rewrite(struct fs *fs, struct scrub_copy *c, const char *buf, size_t n, uint64_t off)
{
	int fd = openat(chunk_dirfd(fs, c->section), c->rel, O_WRONLY | O_CLOEXEC);
	int rc = fd < 0 ? -errno : lsmfs_pwrite_full(fd, buf, n, (off_t)off);
	if (!rc && fdatasync(fd) != 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc)
		chunk_log_error(fs, c->section, DEVSTAT_WRITE, c->rel, "scrub: rewriting ", -rc);
	return rc;
}

/* Check the piece [off, off + n) of every readable copy (copy i's bytes
 * in buf[i], got[i] of them from its file, the rest zeros), rewriting a
 * block bad in one from one where it is good. */
static void check_piece(struct scrub_chunk *k, const size_t *got, uint64_t off, size_t n)
{
	struct fs *fs = k->fs;
	struct scrub_count *sc = k->sc;
	unsigned shift = k->cv.shift;
	uint64_t bs = (uint64_t)1 << shift;
	for (uint64_t b = 0; b < n; b += bs) {
		uint32_t want = chunk_value_sum(&k->cv, (uint32_t)((off + b) >> shift));
		if (!want)
			continue; /* not known: nothing to check */
		int good = -1;
		bool bad[CHUNK_MAX_COPIES] = {false};
		size_t have[CHUNK_MAX_COPIES] = {0};
		for (unsigned i = 0; i < k->pl.copies; i++) {
			if (!readable(&k->cp[i]))
				continue;
			have[i] = got[i] > b ? got[i] - b : 0;
			if (have[i] > bs)
				have[i] = bs;
			if (sums_block(k->buf[i] + b, have[i], (size_t)bs, k->ino, k->chunk) != want)
				bad[i] = true;
			else if (good < 0)
				good = (int)i;
		}
		uint64_t pos = k->chunk * fs->info.chunk_size + off + b;
		for (unsigned i = 0; i < k->pl.copies; i++) {
			struct scrub_copy *c = &k->cp[i];
			if (!bad[i])
				continue;
			sc->errors++;
			devstats_count(fs, c->disk, DEVSTAT_CHECKSUM);
			if (good < 0) {
				sc->unrepaired++;
				k->unrepaired = true;
				fs_log_named(fs, k->ino, "bytes %" PRIu64 "..%" PRIu64 " of the file (offset %"
					     PRIu64 " of chunk file %s on disk %" PRIu32 "): checksum "
					     "mismatch, no good copy: scrub left it", pos, pos + bs - 1,
					     off + b, c->rel, c->disk);
				continue;
			}
			if (rewrite(fs, c, k->buf[good] + b, have[good], off + b)) {
				c->failed = true; /* made again whole, if it can be */
				c->errors++;
				continue;
			}
			sc->repaired++;
			devstats_count(fs, c->disk, DEVSTAT_REPAIRED);
			fs_log_named(fs, k->ino, "bytes %" PRIu64 "..%" PRIu64 " of the file (offset %"
				     PRIu64 " of chunk file %s on disk %" PRIu32 "): checksum mismatch, "
				     "rewritten by scrub from the copy on disk %" PRIu32, pos,
				     pos + bs - 1, off + b, c->rel, c->disk, k->cp[good].disk);
		}
	}
}

/* Every readable copy read whole, piece by piece, and checked. */
static void read_copies(struct scrub_chunk *k)
{
	uint64_t size = 0;
	for (unsigned i = 0; i < k->pl.copies; i++)
		if (readable(&k->cp[i]) && k->cp[i].size > size)
			size = k->cp[i].size;
	for (uint64_t off = 0; off < size; off += SCRUB_PIECE) {
		size_t n = size - off < SCRUB_PIECE ? (size_t)(size - off) : SCRUB_PIECE;
		size_t got[CHUNK_MAX_COPIES] = {0};
		for (unsigned i = 0; i < k->pl.copies; i++) {
			struct scrub_copy *c = &k->cp[i];
			if (!readable(c))
				continue;
			int r = lsmfs_pread_full(c->fd, k->buf[i], n, (off_t)off, &got[i]);
			k->sc->bytes += got[i];
			if (r) {
				c->failed = true;
				copy_damaged(k, c, "scrub: reading ", -r);
			} else if (got[i] < n) {
				memset(k->buf[i] + got[i], 0, n - got[i]); /* as the sums count them */
			}
		}
		if (k->sums)
			check_piece(k, got, off, n);
	}
}

/* Make copy t whole from copy f (good, f->size bytes): a new file,
 * synced, its directory synced. */
static int rebuild(struct fs *fs, struct scrub_copy *f, struct scrub_copy *t, char *buf)
{
	int dirfd = chunk_dirfd(fs, t->section);
	char sdir[SECTION_NAME_MAX];
	section_dir_name(t->section, sdir);
	if (mkdirat(dirfd, sdir, 0700) == 0)
		(void)fsync(dirfd); /* a new section directory: rare; a failure shows below */
	int fd = openat(dirfd, t->rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd < 0 ? -errno : 0;
	bool src_failed;
	if (!rc)
		rc = copies_copy_body(f->fd, fd, f->size, buf, SCRUB_PIECE, false, true, &src_failed);
	if (!rc && fdatasync(fd) != 0)
		rc = -errno;
	if (fd >= 0) {
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* synced: clean pages */
		close(fd);
	}
	if (!rc) {
		int sfd = openat(dirfd, sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sfd < 0 || fsync(sfd) != 0)
			rc = -errno;
		if (sfd >= 0)
			close(sfd);
	}
	if (rc)
		chunk_log_error(fs, t->section, DEVSTAT_WRITE, t->rel, "scrub: rebuilding ", -rc);
	chunk_section_changed(fs, t->section);
	return rc;
}

/* Every copy to be made whole, made from a good one (read whole, not
 * failed: its bad blocks, if any, were rewritten from another, or no copy
 * had them good).  Returns the stale copies rebuilt, as a mask. */
static uint8_t rebuild_copies(struct scrub_chunk *k)
{
	struct fs *fs = k->fs;
	struct scrub_count *sc = k->sc;
	int good = -1;
	for (unsigned i = 0; i < k->pl.copies && good < 0; i++)
		if (readable(&k->cp[i]))
			good = (int)i;
	uint8_t fixed = 0;
	for (unsigned i = 0; i < k->pl.copies; i++) {
		struct scrub_copy *c = &k->cp[i];
		if (!c->rebuild && !c->failed)
			continue;
		/* No disk for it now, no good copy, or only on the good
		 * copy's disk (never two copies on one disk). */
		if (!c->usable || good < 0 || c->disk == k->cp[good].disk ||
		    rebuild(fs, &k->cp[good], c, k->buf[i])) {
			sc->unrebuilt++;
			sc->unrepaired += c->errors;
			k->unrepaired |= c->errors != 0;
			continue;
		}
		sc->rebuilt++;
		sc->repaired += c->errors;
		if (c->errors)
			devstats_count(fs, c->disk, DEVSTAT_REPAIRED);
		if (c->stale)
			fixed |= (uint8_t)(1u << i);
		fs_log_named(fs, k->ino, "chunk %" PRIu64 ": copy %u (%s on disk %" PRIu32 ") %s by "
			     "scrub from the copy on disk %" PRIu32, k->chunk, i, c->rel, c->disk,
			     c->stale ? "was stale: rebuilt" : "rebuilt", k->cp[good].disk);
	}
	return fixed;
}

/* The record read (under the lock): 1 to scrub it, 0 when there is
 * nothing to scrub (gone, or skipped and counted), or -errno. */
static int load(struct scrub_chunk *k, void **val)
{
	struct fs *fs = k->fs;
	size_t vl;
	bool lost = false;
	int rc = chunk_record_fetch(fs, k->ino, k->chunk, val, &vl, &k->durable, &lost);
	if (rc <= 0)
		return rc; /* gone meanwhile */
	if (lost || chunk_value_parse(*val, vl, &k->cv) ||
	    chunk_value_place(*val, vl, k->ino, k->chunk, fs->info.sections, &k->pl)) {
		k->sc->skipped++; /* lost with its disk, or damaged: fsck's */
		return 0;
	}
	if ((k->cv.flags & CHUNK_INWRITE) && k->cv.gen != fs->mount_gen) {
		k->sc->skipped++; /* in write since a crash: no sums to trust yet */
		return 0;
	}
	k->sums = (k->cv.flags & CHUNK_SUMS) && k->cv.shift == sums_block_shift(fs->info.chunk_size);
	return 1;
}

/* The I/O, outside the inode's lock, inside the sections' gates: the
 * stale copies rebuilt, as a mask, into *fixed. */
static int scrub_copies(struct scrub_chunk *k, uint8_t *fixed)
{
	*fixed = 0;
	for (unsigned i = 0; i < k->pl.copies; i++)
		if (!(k->buf[i] = malloc(SCRUB_PIECE)))
			return -ENOMEM;
	if (open_copies(k)) {
		k->sc->skipped++; /* a hole, or no copy on a usable disk */
		return 0;
	}
	k->sc->chunks++;
	read_copies(k);
	*fixed = rebuild_copies(k);
	return 0;
}

/* A chunk's scrub done: its descriptors (the pages it read dropped) and
 * buffers go. */
static void scrub_done(struct scrub_chunk *k, void *val)
{
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++) {
		if (k->cp[i].fd >= 0) {
			(void)posix_fadvise(k->cp[i].fd, 0, 0, POSIX_FADV_DONTNEED); /* a hint */
			close(k->cp[i].fd);
		}
		free(k->buf[i]);
	}
	free(val);
}

int chunk_scrub(struct fs *fs, uint64_t ino, uint64_t chunk, struct scrub_count *sc,
		bool *unrepaired)
{
	*unrepaired = false;
	if (!fs_writable(fs))
		return -EROFS;
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc == -ENOENT ? 0 : rc; /* gone meanwhile */
	inode_lock(fs, in);
	if (in->gone) {
		inode_unlock(fs, in);
		inode_put(fs, in);
		return 0;
	}
	iogate_drain_read(fs, in);
	/* Alone in the gate: its cached slot goes (its changed sums into the
	 * record first), so that the record is the chunk's whole truth. */
	chunk_let_go(fs, in, chunk);
	struct scrub_chunk k = {.fs = fs, .ino = ino, .chunk = chunk, .sc = sc};
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		k.cp[i].fd = -1;
	void *val = NULL;
	rc = load(&k, &val);
	uint8_t fixed = 0;
	if (rc > 0) {
		inode_unlock(fs, in);
		int mark = section_mark();
		chunk_enter(fs, &k.pl, ino, chunk, true);
		rc = scrub_copies(&k, &fixed);
		section_release(fs, mark); /* the innermost lock (gate.c) */
		inode_lock(fs, in);
	}
	if (rc >= 0 && fixed) {
		/* Slots reads opened meanwhile (read-only: a write reopens from
		 * the record) go, to be reopened with the copies rebuilt; one a
		 * read has pinned learns the change (chunk_restale). */
		chunk_let_go(fs, in, chunk);
		rc = chunk_restale(fs, in, chunk, 0, fixed, NULL);
	}
	iogate_end(fs, in, false);
	inode_unlock(fs, in);
	inode_put(fs, in);
	scrub_done(&k, val);
	*unrepaired = k.unrepaired;
	return rc < 0 ? rc : 0;
}

/* chunk_convert's scrub: the same, with in's lock held throughout (the
 * caller drained the file, let its slot go and entered the sections'
 * gates): the copy it just marked stale is made. */
static int scrub_locked(struct fs *fs, struct fs_inode *in, uint64_t chunk,
			struct scrub_count *sc, bool *unrepaired)
{
	struct scrub_chunk k = {.fs = fs, .ino = in->ino, .chunk = chunk, .sc = sc};
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		k.cp[i].fd = -1;
	void *val = NULL;
	uint8_t fixed = 0;
	int rc = load(&k, &val);
	if (rc > 0)
		rc = scrub_copies(&k, &fixed);
	if (rc >= 0 && fixed)
		rc = chunk_restale(fs, in, chunk, 0, fixed, NULL);
	scrub_done(&k, val);
	*unrepaired = k.unrepaired;
	return rc < 0 ? rc : 0;
}


/* The section of chunk's copy i (name into rel), and whether its disk
 * takes I/O. */
/*
 * One copy to two: the record says two copies, the new one stale (synced),
 * then the scrub makes it (and clears the mark).  A crash between leaves a
 * stale copy, made again by a scrub.  Only where the chunk's section and
 * its partner are on two usable disks and the partner's has room.
 */
static int raise_copies(struct fs *fs, struct fs_inode *in, uint64_t chunk,
			const struct chunk_place *pl, uint64_t durable, struct scrub_count *sc,
			int *outcome)
{
	uint32_t p = section_of_copy(pl->section, 1, fs->info.sections);
	uint32_t d0 = section_disk_of(fs, pl->section), d1 = p == UINT32_MAX ? UINT32_MAX
									   : section_disk_of(fs, p);
	struct statvfs sv;
	if (p == UINT32_MAX || d0 == d1 || !disk_usable(fs, d1) ||
	    fstatvfs(fs->sections_fd[d1], &sv) != 0 ||
	    (uint64_t)sv.f_bavail * sv.f_frsize < durable + fs->info.chunk_size) {
		*outcome = CONVERT_LEFT; /* no second disk for it (rebalance, add a disk) */
		return 0;
	}
	struct chunk_place np = {.section = pl->section, .copies = 2, .stale = 2};
	int rc = chunk_set_place(fs, in, chunk, &np);
	bool unrepaired;
	if (!rc)
		rc = scrub_locked(fs, in, chunk, sc, &unrepaired);
	*outcome = CONVERT_DONE;
	return rc;
}

/*
 * Two copies to one: the copy that goes is marked stale first (synced),
 * its file removed, then the record says one copy: a crash anywhere leaves
 * a record whose copies are all where it says, a stale one with or without
 * its file.  The good copy stays (copy 1 when copy 0 is the stale one: the
 * record then names copy 1's section).
 */
static int lower_copies(struct fs *fs, struct fs_inode *in, uint64_t chunk,
			const struct chunk_place *pl, int *outcome)
{
	unsigned keep = (pl->stale & 1) ? 1 : 0, drop = 1 - keep;
	int rc = 0;
	if (!(pl->stale >> drop & 1))
		rc = chunk_restale(fs, in, chunk, (uint8_t)(1u << drop), 0, NULL);
	if (rc)
		return rc;
	chunk_file_remove(fs, in->ino, chunk, section_of_copy(pl->section, drop, fs->info.sections),
			  "removing a dropped copy ");
	struct chunk_place np = {.section = section_of_copy(pl->section, keep, fs->info.sections),
				 .copies = 1};
	rc = chunk_set_place(fs, in, chunk, &np);
	*outcome = CONVERT_DONE;
	return rc;
}

/* chunk, with no copies to change, moved where placement p puts it
 * (space_relocation, chunk_relocate).  *outcome: SAME, DONE or LEFT. */
static int relocate(struct fs *fs, struct fs_inode *in, uint64_t chunk, enum placement p,
		    struct scrub_count *sc, int *outcome)
{
	*outcome = CONVERT_SAME;
	void *val;
	size_t vl;
	uint64_t durable = 0;
	bool lost = false;
	int rc = chunk_record_fetch(fs, in->ino, chunk, &val, &vl, &durable, &lost);
	if (rc <= 0)
		return rc;
	struct chunk_value cv;
	struct chunk_place pl;
	uint32_t target;
	if (lost || chunk_value_parse(val, vl, &cv) ||
	    chunk_value_place(val, vl, in->ino, chunk, fs->info.sections, &pl)) {
		*outcome = CONVERT_LEFT; /* lost, or damaged: fsck's */
		rc = 0;
	} else if ((rc = space_relocation(fs, in, chunk, p, &pl, &target)) == -ENOSPC) {
		*outcome = CONVERT_LEFT; /* no room, or no disk, for it there now */
		rc = 0;
	} else if (rc == 0) {
		rc = chunk_relocate(fs, in, chunk, &pl, target, &sc->bytes);
		*outcome = rc ? CONVERT_LEFT : CONVERT_DONE;
		if (rc != -EROFS && rc != -ENOMEM)
			rc = 0; /* a chunk file that failed (logged), or the target
				 * pair no longer on two disks: left where it is */
	} else if (rc == 1) {
		rc = 0;
	}
	free(val);
	return rc;
}

int chunk_convert(struct fs *fs, uint64_t ino, uint64_t chunk, unsigned copies, int placement,
		  struct scrub_count *sc, int *outcome)
{
	*outcome = CONVERT_SAME;
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc == -ENOENT ? 0 : rc;
	inode_lock(fs, in);
	if (in->gone) {
		inode_unlock(fs, in);
		inode_put(fs, in);
		return 0;
	}
	iogate_drain(fs, in);
	/* As chunk_scrub: what it wrote made durable first (no longer in
	 * write), its cached slot let go. */
	rc = chunk_sync_dirty(fs, in, 0);
	if (rc)
		fs_logf(fs, "convert: inode %" PRIu64 ": syncing what it wrote: %s (its chunks in write "
			"are left)", ino, strerror(-rc));
	chunk_let_go(fs, in, chunk);
	int mark = section_mark();
	void *val;
	size_t vl;
	uint64_t durable = 0;
	bool lost = false;
	rc = chunk_record_fetch(fs, ino, chunk, &val, &vl, &durable, &lost);
	struct chunk_value cv;
	struct chunk_place pl;
	if (rc > 0 && (lost || chunk_value_parse(val, vl, &cv) ||
		       chunk_value_place(val, vl, ino, chunk, fs->info.sections, &pl))) {
		rc = 0;
		*outcome = CONVERT_LEFT; /* lost, or damaged: fsck's */
	} else if (rc > 0 && (cv.flags & CHUNK_INWRITE)) {
		rc = 0;
		*outcome = CONVERT_BUSY; /* in write: its sums to come; again later */
	} else if (rc > 0 && !copies) {
		rc = 0;
	} else if (rc > 0 && pl.copies == copies && pl.stale) {
		/* As many copies already, one of them stale (a conversion cut
		 * short, a disk that failed): made again where it can be. */
		chunk_enter(fs, &pl, ino, chunk, true);
		uint64_t before = sc->unrebuilt;
		bool unrepaired;
		rc = scrub_locked(fs, in, chunk, sc, &unrepaired);
		*outcome = sc->unrebuilt > before ? CONVERT_LEFT : CONVERT_DONE;
	} else if (rc > 0 && pl.copies != copies) {
		/* Both sections' gates: the pair's (a move waits for it). */
		struct chunk_place both = {.section = pl.section & ~1u, .copies = 2};
		if (section_of_copy(both.section, 1, fs->info.sections) == UINT32_MAX)
			both.copies = 1;
		chunk_enter(fs, &both, ino, chunk, true);
		rc = copies > pl.copies ? raise_copies(fs, in, chunk, &pl, durable, sc, outcome)
					: lower_copies(fs, in, chunk, &pl, outcome);
	} else if (rc > 0) {
		rc = 0;
	}
	free(val);
	if (!rc && placement >= 0 && (*outcome == CONVERT_SAME || *outcome == CONVERT_DONE)) {
		int moved;
		rc = relocate(fs, in, chunk, (enum placement)placement, sc, &moved);
		if (moved != CONVERT_SAME)
			*outcome = moved;
	}
	section_release(fs, mark);
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc < 0 ? rc : 0;
}
