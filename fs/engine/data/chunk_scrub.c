/*
 * chunk_scrub.c: scrubbing one chunk, and changing its copies (SCHEMA.md
 * "Copies").  Scrub: every
 * copy read whole and each block checked against its sum; a block that
 * fails in one copy rewritten from a copy where it is good; a stale copy
 * (or one whose file is gone) rebuilt from a good one when its disk is
 * usable and is not the good copy's, then no longer stale in the record.
 *
 * Under the inode's lock, with nothing of the inode's I/O under way
 * (iogate_drain): a reader or writer of the file waits for at most one
 * chunk's scrub.  The chunk's cached slot, if any, is let go first (its
 * sums are the record's then), and reopened by its next use with the
 * record's copies.  A chunk in write (its record marked: written since
 * its sums were recorded, or left so by a crash the sweep has not yet
 * repaired) has no sums to trust: skipped and counted.  So is a record
 * without sums (made before them): its copies are rebuilt but not
 * checked.  Memory: two buffers of SCRUB_PIECE, whatever the chunk size.
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
	bool rebuild;    /* stale, or its file gone: to be made from a good one */
	bool failed;     /* could not be read or rewritten: left bad */
	char rel[96];
};

/* Rewrite n bytes at off of copy c from buf. */
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

/* Make copy t whole from copy f (good, size bytes): a new file, synced,
 * its directory synced. */
static int rebuild(struct fs *fs, struct scrub_copy *f, struct scrub_copy *t, char *buf)
{
	int dirfd = chunk_dirfd(fs, t->section);
	char sdir[SECTION_NAME_MAX];
	section_dir_name(t->section, sdir);
	if (mkdirat(dirfd, sdir, 0700) == 0)
		(void)fsync(dirfd); /* a new section directory: rare */
	int fd = openat(dirfd, t->rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd < 0 ? -errno : 0;
	for (uint64_t off = 0; !rc && off < f->size; off += SCRUB_PIECE) {
		size_t want = f->size - off < SCRUB_PIECE ? (size_t)(f->size - off) : SCRUB_PIECE, got;
		rc = lsmfs_pread_full(f->fd, buf, want, (off_t)off, &got);
		if (!rc && got < want)
			rc = -EIO; /* the good copy came short under us */
		if (!rc)
			rc = lsmfs_pwrite_full(fd, buf, got, (off_t)off);
	}
	if (!rc && fdatasync(fd) != 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
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

/* Check the piece [off, off + n) of every readable copy, rewriting a
 * block bad in one from one where it is good.  bufs[i]: copy i's bytes. */
static void check_piece(struct fs *fs, uint64_t ino, uint64_t chunk, const struct chunk_value *cv,
			unsigned shift, struct scrub_copy *cp, unsigned ncp, char **bufs,
			size_t *got, uint64_t off, size_t n, struct scrub_count *sc,
			bool *unrepaired)
{
	uint64_t bs = (uint64_t)1 << shift;
	for (uint64_t b = 0; b < n; b += bs) {
		uint32_t block = (uint32_t)((off + b) >> shift);
		uint32_t want = chunk_value_sum(cv, block);
		if (!want)
			continue; /* not known: nothing to check */
		int good = -1;
		bool bad[CHUNK_MAX_COPIES] = {false};
		for (unsigned i = 0; i < ncp; i++) {
			if (cp[i].fd < 0 || cp[i].rebuild || cp[i].failed)
				continue;
			size_t have = got[i] > b ? got[i] - b : 0;
			if (have > bs)
				have = bs;
			if (sums_block(bufs[i] + b, have, (size_t)bs, ino, chunk) == want) {
				if (good < 0)
					good = (int)i;
			} else {
				bad[i] = true;
			}
		}
		for (unsigned i = 0; i < ncp; i++) {
			if (!bad[i])
				continue;
			sc->errors++;
			devstats_count(fs, cp[i].disk, DEVSTAT_CHECKSUM);
			uint64_t pos = chunk * fs->info.chunk_size + off + b;
			if (good < 0) {
				sc->unrepaired++;
				*unrepaired = true;
				fs_log_named(fs, ino, "bytes %" PRIu64 "..%" PRIu64 " of the file (offset %"
					     PRIu64 " of chunk file %s on disk %" PRIu32 "): checksum "
					     "mismatch, no good copy: scrub left it", pos, pos + bs - 1,
					     off + b, cp[i].rel, cp[i].disk);
				continue;
			}
			size_t have = got[good] > b ? got[good] - b : 0;
			if (have > bs)
				have = bs;
			int rc = rewrite(fs, &cp[i], bufs[good] + b, have, off + b);
			if (rc) {
				sc->unrepaired++;
				*unrepaired = true;
				cp[i].failed = true;
				continue;
			}
			sc->repaired++;
			devstats_count(fs, cp[i].disk, DEVSTAT_REPAIRED);
			fs_log_named(fs, ino, "bytes %" PRIu64 "..%" PRIu64 " of the file (offset %" PRIu64
				     " of chunk file %s on disk %" PRIu32 "): checksum mismatch, "
				     "rewritten by scrub from the copy on disk %" PRIu32, pos,
				     pos + bs - 1, off + b, cp[i].rel, cp[i].disk, cp[good].disk);
		}
	}
}

static int scrub_locked(struct fs *fs, struct fs_inode *in, uint64_t chunk,
			struct scrub_count *sc, bool *unrepaired)
{
	uint64_t ino = in->ino;
	void *val;
	size_t vl;
	uint64_t durable = 0;
	bool lost = false;
	int rc = chunk_record_fetch(fs, ino, chunk, &val, &vl, &durable, &lost);
	if (rc <= 0)
		return rc; /* gone meanwhile */
	rc = 0;
	struct chunk_value cv;
	struct chunk_place pl;
	if (lost || chunk_value_parse(val, vl, &cv) ||
	    chunk_value_place(val, vl, ino, chunk, fs->info.sections, &pl)) {
		free(val);
		sc->skipped++; /* lost with its disk, or damaged: fsck's */
		return 0;
	}
	if (cv.flags & CHUNK_INWRITE) {
		free(val);
		sc->skipped++; /* in write: no sums to trust yet */
		return 0;
	}
	bool sums = (cv.flags & CHUNK_SUMS) && cv.shift == sums_block_shift(fs->info.chunk_size);
	struct scrub_copy cp[CHUNK_MAX_COPIES];
	char *bufs[CHUNK_MAX_COPIES] = {NULL, NULL};
	unsigned ncp = pl.copies;
	int good = -1;
	sc->chunks++;
	for (unsigned i = 0; i < ncp; i++) {
		struct scrub_copy *c = &cp[i];
		*c = (struct scrub_copy){.fd = -1};
		c->section = section_of_copy(pl.section, i, fs->info.sections);
		c->disk = section_disk_of(fs, c->section);
		c->usable = disk_usable(fs, c->disk);
		section_chunk_name(ino, chunk, c->section, c->rel, sizeof(c->rel));
		c->rebuild = pl.stale >> i & 1;
		if (!c->usable || c->rebuild)
			continue;
		c->fd = openat(chunk_dirfd(fs, c->section), c->rel, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (c->fd < 0 && errno == ENOENT && durable == 0 && ncp == 1) {
			continue; /* a hole: nothing synced there */
		} else if (c->fd < 0 || fstat(c->fd, &st) != 0) {
			int e = errno;
			chunk_log_error(fs, c->section, DEVSTAT_READ, c->rel, "scrub: opening ", e);
			if (c->fd >= 0)
				close(c->fd);
			c->fd = -1;
			c->rebuild = true; /* gone or unreadable: made again from a good one */
			continue;
		}
		c->size = (uint64_t)st.st_size;
		if (c->size < durable) {
			chunk_log_error(fs, c->section, DEVSTAT_READ, c->rel, "scrub: shorter than its "
					"durable length ", EIO);
			c->rebuild = true;
		}
	}
	for (unsigned i = 0; i < ncp && !rc; i++)
		if (!(bufs[i] = malloc(SCRUB_PIECE)))
			rc = -ENOMEM;
	uint64_t size = 0;
	for (unsigned i = 0; i < ncp; i++)
		if (cp[i].fd >= 0 && !cp[i].rebuild && cp[i].size > size)
			size = cp[i].size;
	for (uint64_t off = 0; !rc && off < size; off += SCRUB_PIECE) {
		size_t n = size - off < SCRUB_PIECE ? (size_t)(size - off) : SCRUB_PIECE, got[CHUNK_MAX_COPIES] = {0};
		for (unsigned i = 0; i < ncp; i++) {
			if (cp[i].fd < 0 || cp[i].rebuild || cp[i].failed)
				continue;
			int r = lsmfs_pread_full(cp[i].fd, bufs[i], n, (off_t)off, &got[i]);
			sc->bytes += got[i];
			if (r) {
				chunk_log_error(fs, cp[i].section, DEVSTAT_READ, cp[i].rel, "scrub: reading ", -r);
				cp[i].failed = true;
				sc->errors++;
			} else if (got[i] < n) {
				memset(bufs[i] + got[i], 0, n - got[i]);
			}
		}
		if (sums)
			check_piece(fs, ino, chunk, &cv, cv.shift, cp, ncp, bufs, got, off, n, sc,
				    unrepaired);
	}
	/* The good copy: read whole and not failed (its bad blocks, if any,
	 * were rewritten from the other). */
	for (unsigned i = 0; i < ncp && good < 0; i++)
		if (cp[i].fd >= 0 && !cp[i].rebuild && !cp[i].failed)
			good = (int)i;
	uint8_t fixed = 0;
	for (unsigned i = 0; !rc && i < ncp; i++) {
		if (!cp[i].rebuild && !cp[i].failed)
			continue;
		if (!cp[i].usable || good < 0 || cp[i].disk == cp[good].disk) {
			if (!cp[i].failed)
				sc->unrebuilt++; /* no disk for it yet, or no good copy */
			continue;
		}
		if (rebuild(fs, &cp[good], &cp[i], bufs[i])) {
			sc->unrebuilt++;
			continue;
		}
		sc->rebuilt++;
		fixed |= (uint8_t)(1u << i);
		fs_log_named(fs, ino, "chunk %" PRIu64 ": copy %u rebuilt by scrub on disk %" PRIu32
			     " from the copy on disk %" PRIu32, chunk, i, cp[i].disk, cp[good].disk);
	}
	if (!rc && (fixed & pl.stale))
		rc = chunk_restale(fs, in, chunk, 0, fixed & pl.stale, NULL);
	for (unsigned i = 0; i < ncp; i++) {
		if (cp[i].fd >= 0)
			close(cp[i].fd);
		free(bufs[i]);
	}
	free(val);
	return rc;
}

int chunk_scrub(struct fs *fs, uint64_t ino, uint64_t chunk, struct scrub_count *sc,
		bool *unrepaired)
{
	*unrepaired = false;
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
	iogate_drain(fs, in);
	/* What the file wrote since its last fsync is made durable and its
	 * sums recorded first (as an fsync would), so that its chunks are no
	 * longer in write; then the chunk's cached slot goes, so that the
	 * record is the chunk's whole truth and the next use opens the copies
	 * as the scrub leaves them. */
	rc = chunk_sync_dirty(fs, in, 0);
	if (rc)
		fs_logf(fs, "scrub: inode %" PRIu64 ": syncing what it wrote: %s (its chunks in write "
			"are left)", ino, strerror(-rc));
	chunk_let_go(fs, in, chunk);
	int mark = section_mark();
	struct chunk_place pl;
	rc = chunk_where(fs, ino, chunk, &pl, NULL);
	if (rc > 0) {
		chunk_enter(fs, &pl, ino, chunk, true);
		rc = scrub_locked(fs, in, chunk, sc, unrepaired);
	}
	section_release(fs, mark);
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc < 0 ? rc : 0;
}

/* The section of chunk's copy i (name into rel), and whether its disk
 * takes I/O. */
static bool copy_at(struct fs *fs, uint64_t ino, uint64_t chunk, const struct chunk_place *pl,
		    unsigned i, uint32_t *section, char *rel, size_t cap)
{
	*section = section_of_copy(pl->section, i, fs->info.sections);
	section_chunk_name(ino, chunk, *section, rel, cap);
	return disk_usable(fs, section_disk_of(fs, *section));
}

/* Remove copy i's file (logged when it fails: the mount's sweep or fsck
 * finds what is left). */
static void remove_copy(struct fs *fs, uint64_t ino, uint64_t chunk, const struct chunk_place *pl,
			unsigned i)
{
	uint32_t section;
	char rel[96];
	if (!copy_at(fs, ino, chunk, pl, i, &section, rel, sizeof(rel)))
		return; /* its disk is not there: left for a mount that has it */
	if (unlinkat(chunk_dirfd(fs, section), rel, 0) != 0 && errno != ENOENT)
		chunk_log_error(fs, section, DEVSTAT_WRITE, rel, "removing a dropped copy ", errno);
	chunk_section_changed(fs, section);
}

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
	remove_copy(fs, in->ino, chunk, pl, drop);
	struct chunk_place np = {.section = section_of_copy(pl->section, keep, fs->info.sections),
				 .copies = 1};
	rc = chunk_set_place(fs, in, chunk, &np);
	*outcome = CONVERT_DONE;
	return rc;
}

int chunk_convert(struct fs *fs, uint64_t ino, uint64_t chunk, unsigned copies,
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
	section_release(fs, mark);
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc < 0 ? rc : 0;
}
