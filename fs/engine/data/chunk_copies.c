/*
 * chunk_copies.c: the copies of a chunk file (SCHEMA.md "Copies").
 *
 * A chunk has one copy, or two: copy 0 in the section its record names,
 * copy 1 in that section's partner (section_of_copy), which lives on
 * another disk.  An open chunk slot keeps an fd per copy it could open;
 * a copy that is stale (its record says it lacks data) is never opened.
 *
 * Changes go to every live copy (open, not stale, not failed since): a
 * write, a truncation, an fallocate, a hole punched.  A copy whose change
 * fails while another's succeeds is flagged failed (atomically: writes of
 * one chunk run together outside the inode's lock) and, at the next
 * copies_settle under the lock, becomes stale: never read again, rebuilt
 * from a good copy by a scrub (or `lsmfs-disk remove --lost`).  The record
 * says so at its next write, which an fsync syncs before it answers, so
 * that what an fsync acknowledged is on every copy not marked stale.  A
 * change that fails on every copy fails; one that fails on a full disk
 * (ENOSPC, EDQUOT) fails too, whatever the others did, since the writer
 * must know (the copy that missed it is stale all the same).
 *
 * Reads go to the first live copy, and to the next when it fails or its
 * blocks fail their sums (read.c), which rewrites the bad one from it.
 * After a crash, copies a chunk in write may have left apart are brought
 * in step (copies_resync) before its sums are trusted or it changes.
 *
 * Also here, below chunk.c and sums.c, which use them: the directory a
 * chunk file of a section is in, and the log of a failed use of one.
 */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int chunk_dirfd(struct fs *fs, uint32_t section)
{
	return fs->sections_fd[section_disk_of(fs, section)];
}

void chunk_log_error(struct fs *fs, uint32_t section, enum devstat kind, const char *rel,
		     const char *what, int err)
{
	uint32_t disk = section_disk_of(fs, section);
	devstats_count_error(fs, disk, kind, err);
	const char *path = __atomic_load_n(&fs->ds->paths[disk], __ATOMIC_ACQUIRE);
	fs_logf(fs, "disk %u: %s%s/%s/%s/%s: %s", disk, what, path ? path : "(missing disk)",
		LSMFS_DIR, LSMFS_SECTIONS_DIR, rel, strerror(err));
}

bool copies_live(const struct chunk_fd *c, unsigned i)
{
	uint8_t failed = __atomic_load_n(&c->failed, __ATOMIC_RELAXED);
	return i < c->place.copies && c->copy[i].fd >= 0 && !((c->place.stale | failed) >> i & 1);
}

unsigned copies_count_live(const struct chunk_fd *c)
{
	unsigned n = 0;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		n += copies_live(c, i);
	return n;
}

int copies_first(const struct chunk_fd *c)
{
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		if (copies_live(c, i))
			return (int)i;
	return -1;
}

void copies_close(struct chunk_fd *c)
{
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++) {
		if (c->copy[i].fd >= 0)
			close(c->copy[i].fd);
		if (c->copy[i].dfd >= 0)
			close(c->copy[i].dfd);
		c->copy[i].fd = c->copy[i].dfd = -1;
	}
}

void copies_fail(struct fs *fs, uint64_t ino, struct chunk_fd *c, unsigned i,
			const char *what, int err)
{
	__atomic_fetch_or(&c->failed, (uint8_t)(1u << i), __ATOMIC_RELAXED);
	char rel[96];
	section_chunk_name(ino, c->chunk, c->copy[i].section, rel, sizeof(rel));
	chunk_log_error(fs, c->copy[i].section, DEVSTAT_WRITE, rel, what, -err);
	fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": copy %u is stale from now on (the "
		"other copy has the data; a scrub rebuilds it)", ino, c->chunk, i);
}

static bool full_disk(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

int copies_each(struct fs *fs, uint64_t ino, struct chunk_fd *c, const char *what,
		int (*op)(int fd, int dfd, void *arg), void *arg)
{
	int first_err = 0, full = 0;
	unsigned done = 0;
	int rcs[CHUNK_MAX_COPIES] = {0};
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++) {
		if (!copies_live(c, i))
			continue;
		rcs[i] = op(c->copy[i].fd, c->copy[i].dfd, arg);
		if (!rcs[i]) {
			done++;
			continue;
		}
		if (!first_err)
			first_err = rcs[i];
		if (full_disk(rcs[i]) && !full)
			full = rcs[i];
	}
	if (!done)
		return first_err ? first_err : -EIO;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		if (rcs[i])
			copies_fail(fs, ino, c, i, what, rcs[i]);
	return full;
}

static int do_truncate(int fd, int dfd, void *arg)
{
	(void)dfd;
	return ftruncate(fd, *(off_t *)arg) ? -errno : 0;
}

int copies_truncate(struct fs *fs, uint64_t ino, struct chunk_fd *c, uint64_t len)
{
	off_t l = (off_t)len;
	return copies_each(fs, ino, c, "truncating ", do_truncate, &l);
}

struct falloc_arg {
	int mode;
	off_t off, len;
};

static int do_fallocate(int fd, int dfd, void *arg)
{
	(void)dfd;
	struct falloc_arg *a = arg;
	return fallocate(fd, a->mode, a->off, a->len) ? -errno : 0;
}

int copies_fallocate(struct fs *fs, uint64_t ino, struct chunk_fd *c, int mode, uint64_t off,
		     uint64_t len)
{
	struct falloc_arg a = {.mode = mode, .off = (off_t)off, .len = (off_t)len};
	return copies_each(fs, ino, c, "allocating in ", do_fallocate, &a);
}

struct pwrite_arg {
	const char *buf;
	size_t n;
	off_t off;
};

static int do_pwrite(int fd, int dfd, void *arg)
{
	(void)dfd;
	struct pwrite_arg *a = arg;
	return lsmfs_pwrite_full(fd, a->buf, a->n, a->off);
}

int copies_pwrite(struct fs *fs, uint64_t ino, struct chunk_fd *c, const void *buf, size_t n,
		  uint64_t off)
{
	struct pwrite_arg a = {.buf = buf, .n = n, .off = (off_t)off};
	return copies_each(fs, ino, c, "writing ", do_pwrite, &a);
}

uint64_t copies_blocks(const struct chunk_fd *c)
{
	uint64_t sum = 0;
	bool any = false;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++) {
		struct stat st;
		if (c->copy[i].fd >= 0 && fstat(c->copy[i].fd, &st) == 0) {
			sum += (uint64_t)st.st_blocks;
			any = true;
		}
	}
	return any ? sum : UINT64_MAX;
}

void copies_writeback(const struct chunk_fd *c)
{
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		if (copies_live(c, i))
			(void)sync_file_range(c->copy[i].fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint */
}

void copies_settle(struct chunk_fd *c)
{
	uint8_t failed = __atomic_exchange_n(&c->failed, 0, __ATOMIC_RELAXED);
	if (!failed)
		return;
	uint8_t all = (uint8_t)((1u << c->place.copies) - 1);
	if ((c->place.stale | failed) == all)
		return; /* never all: copies_each fails a change that no copy took */
	c->place.stale |= failed;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		if ((failed >> i & 1) && c->copy[i].dfd >= 0) {
			close(c->copy[i].dfd);
			c->copy[i].dfd = -1;
		}
}

int copies_heal(struct fs *fs, uint64_t ino, const struct chunk_fd *c, unsigned i,
		const char *buf, size_t n, uint64_t off)
{
	char rel[96];
	section_chunk_name(ino, c->chunk, c->copy[i].section, rel, sizeof(rel));
	/* Reads open copies read-only: a descriptor of its own to write. */
	int fd = openat(chunk_dirfd(fs, c->copy[i].section), rel, O_WRONLY | O_CLOEXEC);
	int rc = fd < 0 ? -errno : lsmfs_pwrite_full(fd, buf, n, (off_t)off);
	if (fd >= 0)
		close(fd);
	if (rc)
		return rc; /* the caller flags it (copies_fail) */
	devstats_count(fs, section_disk_of(fs, c->copy[i].section), DEVSTAT_REPAIRED);
	return 0;
}

/* [off, end) of in into out at the same offsets. */
static int copy_piece(int in, int out, uint64_t off, uint64_t end, char *buf, size_t piece,
		      bool short_ok, bool *src_failed, bool *at_end)
{
	for (; off < end; off += piece) {
		size_t want = end - off < piece ? (size_t)(end - off) : piece, got = 0;
		int rc = lsmfs_pread_full(in, buf, want, (off_t)off, &got);
		if (!rc && got < want && !short_ok)
			rc = -EIO; /* the source came short under us */
		if (rc) {
			*src_failed = true;
			return rc;
		}
		if ((rc = lsmfs_pwrite_full(out, buf, got, (off_t)off)))
			return rc;
		if (got < want) {
			*at_end = true; /* short_ok: what it has */
			return 0;
		}
	}
	return 0;
}

int copies_copy_body(int in, int out, uint64_t size, char *buf, size_t piece, bool short_ok,
		     bool sparse, bool *src_failed)
{
	*src_failed = false;
	bool at_end = false;
	for (uint64_t off = 0; off < size && !at_end;) {
		uint64_t end = size;
		if (sparse) {
			/* Only the source's data: its holes stay holes in out
			 * (a new file), which the length set below keeps. */
			off_t d = lseek(in, (off_t)off, SEEK_DATA);
			if (d < 0 && errno == ENXIO)
				break; /* a hole to the end */
			if (d >= 0) {
				off = (uint64_t)d;
				off_t h = lseek(in, d, SEEK_HOLE);
				if (h > d && (uint64_t)h < end)
					end = (uint64_t)h;
			} /* else a filesystem that cannot say: all of it */
			if (off >= size)
				break;
		}
		int rc = copy_piece(in, out, off, end, buf, piece, short_ok, src_failed, &at_end);
		if (rc)
			return rc;
		off = end;
	}
	if (sparse && !at_end && ftruncate(out, (off_t)size) != 0)
		return -errno;
	return 0;
}

/* After a crash, the copies of a chunk in write then may differ where no
 * fsync had reached: the first copy that opened is taken for all, copied
 * over the others (the sums are then computed from it): by the sync that
 * recomputes them (chunk_sync.c), or by the first change before it
 * (chunk.c).  A copy that cannot be written is stale.  from is the first
 * open in fds[]. */
int copies_resync(struct fs *fs, uint64_t ino, uint64_t chunk, struct chunk_place *pl,
		  int fds[CHUNK_MAX_COPIES], unsigned from)
{
	char *buf = malloc(1u << 20);
	if (!buf)
		return -ENOMEM;
	struct stat st;
	int rc = fstat(fds[from], &st) ? -errno : 0;
	for (unsigned i = 0; !rc && i < pl->copies; i++) {
		if (i == from || fds[i] < 0)
			continue;
		char rel[96];
		uint32_t section = section_of_copy(pl->section, i, fs->info.sections);
		section_chunk_name(ino, chunk, section, rel, sizeof(rel));
		int out = openat(chunk_dirfd(fs, section), rel, O_WRONLY | O_CLOEXEC);
		int e = out < 0 ? -errno : 0;
		bool src_failed = false;
		if (!e && (e = copies_copy_body(fds[from], out, (uint64_t)st.st_size, buf, 1u << 20,
						true, false, &src_failed)) && src_failed) {
			rc = e; /* the source failing: the chunk's sync fails */
			e = 0;
		}
		if (!e && !rc && ftruncate(out, st.st_size) != 0)
			e = -errno;
		/* Synced here: the caller's fsync goes to the copy it opened,
		 * which a move may have replaced since (this one is by name,
		 * inside the gate). */
		if (!e && !rc && fdatasync(out) != 0)
			e = -errno;
		if (!e && !rc)
			fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": copy %u brought in step with "
				"copy %u after a crash", ino, chunk, i, from);
		if (out >= 0)
			close(out);
		if (e) {
			chunk_log_error(fs, section, DEVSTAT_WRITE, rel, "bringing the copy in step ", -e);
			pl->stale |= (uint8_t)(1u << i);
			close(fds[i]);
			fds[i] = -1;
		}
	}
	free(buf);
	return rc;
}
