/*
 * scrub.c: fsck.lsmfs --scrub, reading every byte of every copy of every
 * chunk, as e2fsck -c reads a disk for bad blocks and btrfs scrub reads
 * its data.
 *
 * Pass 5 checks what can be seen without reading: a copy's file missing
 * or shorter than its record's durable length (copies.c).  A scrub also
 * reads each copy's file whole from its disk, so that bytes a disk can no
 * longer return (a bad sector, a failing network filesystem) are found
 * before a program needs them, each named by the file's path in the
 * filesystem and the offset.  Clean cached pages are dropped first
 * (posix_fadvise), so that the reads reach the disk, and again after, so
 * that a scrub does not evict what the machine had cached.  A read error
 * is reported (LSMFS-050F) and left (with another copy, the daemon's
 * read falls back to it and rewrites the bad one).  Each block whose record holds its sum
 * (fs/SCHEMA.md "Chunk checksums") is verified in every copy read, so
 * that silent damage is found too: a block bad in one copy and good in
 * another is rewritten from the good one, synced (LSMFS-051B, -y or -p);
 * one that no copy holds good is left (LSMFS-0515), its file named in the
 * figures at the end.  A stale copy lacks data and is not read.  A record
 * marked in write (a crash the mount has not recovered from yet) is not
 * trusted: its copies are read, not verified.  The copies are read side
 * by side, SCRUB_READ bytes of each at a time.
 */
#include "fsck.h"

#include "coding.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SCRUB_READ (1u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void read_error(struct fsck *f, const struct fsck_chunk *c, const char *file,
		       uint64_t off, int err)
{
	char path[4096];
	f->scrub_errors++;
	problem_fix(f, PR_CHUNK_READ_ERROR,
		    &(struct problem_ctx){.ino = c->ino, .chunk = c->chunk, .file = file, .num = off,
					  .err = err,
					  .path = fsck_path_of(f, c->ino, path, sizeof(path))});
}

/* Chunk c keeps an error the scrub could not repair: its file is named in
 * the figures (chunks come in inode order: each file once). */
static void left(struct fsck *f, const struct fsck_chunk *c)
{
	if (f->scrub_nleft && f->scrub_left_inos[f->scrub_nleft - 1] == c->ino)
		return;
	if (f->scrub_nleft == f->scrub_capleft) {
		size_t nc = f->scrub_capleft ? f->scrub_capleft * 2 : 64;
		uint64_t *g = realloc(f->scrub_left_inos, nc * sizeof(*g));
		if (!g)
			return; /* the count still says it */
		f->scrub_left_inos = g;
		f->scrub_capleft = nc;
	}
	f->scrub_left_inos[f->scrub_nleft++] = c->ino;
}

/* The sums of chunk c that can be trusted, into *cv (pointing into *val,
 * which the caller frees); false when there are none. */
static bool chunk_sums(struct fsck *f, const struct fsck_chunk *c, void **val,
		       struct chunk_value *cv)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_chunk(k, c->ino, c->chunk), vl;
	*val = NULL;
	if (store_get(f->st, NULL, k, kl, val, &vl) != 0)
		return false;
	return chunk_value_parse(*val, vl, cv) == 0 && (cv->flags & CHUNK_SUMS) &&
	       !(cv->flags & CHUNK_INWRITE) && cv->shift == sums_block_shift(f->info.chunk_size);
}

/* One copy being read: its descriptor, and what the piece read gave. */
struct reading {
	int fd;           /* -1: not read (not marked, or it would not open) */
	uint64_t size;    /* up to the chunk size */
	uint8_t *buf;     /* the piece, zeros past what was read */
	size_t got;       /* bytes of the piece read; 0 after an error */
	bool ok;          /* the piece was read */
};

/* Write len bytes at off of copy cp's file from p, synced. */
static int rewrite(const struct fsck_copy *cp, const uint8_t *p, size_t len, uint64_t off)
{
	int fd = open(cp->file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = lsmfs_pwrite_full(fd, p, len, (off_t)off);
	if (!rc && fdatasync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

/* The blocks of the piece [off, off + n) of every copy read, against
 * their sums: a block bad in one copy is rewritten from one where it is
 * good, or left when none holds it good. */
static void verify(struct fsck *f, const struct fsck_chunk *c, struct fsck_copy *cp,
		   struct reading *r, unsigned ncp, const struct chunk_value *cv, uint64_t off,
		   size_t n)
{
	uint64_t bs = (uint64_t)1 << cv->shift;
	char path[4096];
	for (uint64_t b = 0; b < n; b += bs) {
		uint32_t want = chunk_value_sum(cv, (uint32_t)((off + b) >> cv->shift));
		if (!want)
			continue; /* not known: nothing to check */
		int good = -1;
		bool bad[CHUNK_MAX_COPIES] = {false};
		for (unsigned i = 0; i < ncp; i++) {
			if (!r[i].ok)
				continue;
			/* A copy shorter than the longest: its bytes past its end
			 * are zeros, as the sum counts them. */
			if (sums_block(r[i].buf + b, (size_t)bs, (size_t)bs, c->ino, c->chunk) == want) {
				if (good < 0)
					good = (int)i;
			} else {
				bad[i] = true;
			}
		}
		for (unsigned i = 0; i < ncp; i++) {
			if (!bad[i])
				continue;
			f->scrub_bad++;
			f->scrub_errors++;
			struct problem_ctx pc = {.ino = c->ino, .chunk = c->chunk, .file = cp[i].file,
						 .num = off + b, .num2 = bs,
						 .path = fsck_path_of(f, c->ino, path, sizeof(path))};
			if (good < 0) {
				problem_fix(f, PR_CHUNK_CHECKSUM, &pc);
				left(f, c);
				continue;
			}
			pc.str2 = cp[good].file;
			if (!problem_fix(f, PR_COPY_CHECKSUM, &pc)) {
				left(f, c);
				continue;
			}
			/* Up to the end of the longer of the two in this block:
			 * the good copy's zeros past its end included. */
			size_t have = 0;
			for (unsigned j = 0; j < ncp; j++)
				if ((int)j == good || j == i) {
					size_t h = r[j].got > b ? (size_t)(r[j].got - b) : 0;
					have = h > have ? h : have;
				}
			if (have > bs)
				have = (size_t)bs;
			int rc = rewrite(&cp[i], r[good].buf + b, have, off + b);
			fsck_repaired(f, rc);
			if (rc) {
				left(f, c);
			} else {
				f->scrub_repaired++;
				memcpy(r[i].buf + b, r[good].buf + b, (size_t)bs);
			}
		}
	}
}

void fsck_scrub_copies(struct fsck *f, const struct fsck_chunk *c, struct fsck_copy *cp,
		       unsigned ncp)
{
	struct reading r[CHUNK_MAX_COPIES];
	if (ncp > CHUNK_MAX_COPIES)
		ncp = CHUNK_MAX_COPIES;
	bool any = false;
	for (unsigned i = 0; i < ncp; i++)
		any |= cp[i].read;
	if (!any)
		return;
	if (!f->scrub_buf && !(f->scrub_buf = malloc((size_t)SCRUB_READ * CHUNK_MAX_COPIES))) {
		for (unsigned i = 0; i < ncp; i++)
			if (cp[i].read) {
				read_error(f, c, cp[i].file, 0, ENOMEM);
				cp[i].failed = true;
				left(f, c);
			}
		return;
	}
	uint64_t t0 = now_ns(), size = 0;
	for (unsigned i = 0; i < ncp; i++) {
		r[i] = (struct reading){.fd = -1, .buf = f->scrub_buf + (size_t)i * SCRUB_READ};
		if (!cp[i].read)
			continue;
		/* O_NONBLOCK: a FIFO put there must not hang the check. */
		int fd = open(cp[i].file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		int err = fd < 0 || fstat(fd, &st) != 0 ? errno
			  : !S_ISREG(st.st_mode) ? (S_ISDIR(st.st_mode) ? EISDIR : EINVAL) : 0;
		if (err) {
			read_error(f, c, cp[i].file, 0, err);
			cp[i].failed = true;
			left(f, c);
			if (fd >= 0)
				close(fd);
			continue;
		}
		/* Bytes past a chunk are never read (pass 5 reports them). */
		r[i].fd = fd;
		r[i].size = (uint64_t)st.st_size < f->info.chunk_size ? (uint64_t)st.st_size
								       : f->info.chunk_size;
		size = r[i].size > size ? r[i].size : size;
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		f->scrub_files++;
	}
	void *val;
	struct chunk_value cv;
	bool summed = chunk_sums(f, c, &val, &cv);
	for (uint64_t off = 0; off < size && !fsck_cancelled(f); off += SCRUB_READ) {
		size_t n = size - off < SCRUB_READ ? (size_t)(size - off) : SCRUB_READ;
		for (unsigned i = 0; i < ncp; i++) {
			r[i].ok = false;
			r[i].got = 0;
			if (r[i].fd < 0)
				continue;
			ssize_t got = 0;
			while (off < r[i].size && (size_t)got < n) {
				ssize_t m = pread(r[i].fd, r[i].buf + got, n - (size_t)got,
						  (off_t)(off + (uint64_t)got));
				if (m < 0 && errno == EINTR)
					continue;
				if (m <= 0) {
					if (m < 0)
						got = -errno;
					break; /* 0: cut shorter meanwhile: pass 5's business */
				}
				got += m;
			}
			if (got < 0) {
				/* Go on past the bad range, as badblocks does. */
				read_error(f, c, cp[i].file, off, (int)-got);
				cp[i].failed = true;
				left(f, c);
				continue;
			}
			/* to the piece's last block's end, at least */
			memset(r[i].buf + got, 0, SCRUB_READ - (size_t)got);
			r[i].got = (size_t)got;
			r[i].ok = true;
			f->scrub_bytes += (uint64_t)got;
		}
		if (summed)
			verify(f, c, cp, r, ncp, &cv, off, n);
	}
	for (unsigned i = 0; i < ncp; i++) {
		if (r[i].fd < 0)
			continue;
		(void)posix_fadvise(r[i].fd, 0, 0, POSIX_FADV_DONTNEED);
		close(r[i].fd);
		f->scrub_summed += summed;
	}
	free(val);
	f->scrub_ns += now_ns() - t0;
}

void fsck_scrub_report(struct fsck *f)
{
	double s = (double)f->scrub_ns / 1e9;
	uint64_t unrepaired = f->scrub_errors - f->scrub_repaired;
	printf("Scrub: read %" PRIu64 " bytes of %" PRIu64 " chunk files in %.1f s (%.1f MiB/s); "
	       "%" PRIu64 " of them with checksums, %" PRIu64 " blocks failed them; errors: %" PRIu64
	       " found, %" PRIu64 " repaired, %" PRIu64 " left%s\n",
	       f->scrub_bytes, f->scrub_files, s,
	       s > 0 ? (double)f->scrub_bytes / 1048576.0 / s : 0.0, f->scrub_summed, f->scrub_bad,
	       f->scrub_errors, f->scrub_repaired, unrepaired,
	       f->scrub_nleft ? ", in these files:" : "");
	for (size_t i = 0; i < f->scrub_nleft; i++) {
		char path[4096];
		printf("Scrub: left: %s\n", fsck_path_of(f, f->scrub_left_inos[i], path, sizeof(path)));
	}
	free(f->scrub_buf);
	f->scrub_buf = NULL;
}
