/*
 * scrub.c: fsck.lsmfs --scrub, reading every byte of every chunk file, as
 * e2fsck -c reads a disk for bad blocks and btrfs scrub reads its data.
 *
 * Pass 5 checks what can be seen without reading: a chunk file missing or
 * shorter than its record's durable length.  A scrub also reads each chunk
 * file whole from its disk, so that bytes a disk can no longer return (a
 * bad sector, a failing network filesystem) are found before a program
 * needs them, each named by the file's path in the filesystem and the
 * offset.  Clean cached pages are dropped first (posix_fadvise), so that
 * the reads reach the disk, and again after, so that a scrub does not
 * evict what the machine had cached.  A read error cannot be repaired
 * here: the problem (LSMFS-050F) is reported and left.  Each block whose
 * record holds its sum (fs/SCHEMA.md "Chunk checksums") is verified, so
 * that silent damage is found too (LSMFS-0515); a record marked in write
 * (a crash the mount has not recovered from yet) is not trusted.
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
	problem_fix(f, PR_CHUNK_READ_ERROR,
		    &(struct problem_ctx){.ino = c->ino, .chunk = c->chunk, .file = file, .num = off,
					  .err = err,
					  .path = fsck_path_of(f, c->ino, path, sizeof(path))});
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

/* The blocks of [off, off + n) read into buf, n short only at the file's
 * end, against their sums. */
static void verify(struct fsck *f, const struct fsck_chunk *c, const char *file,
		   const struct chunk_value *cv, const uint8_t *buf, uint64_t off, uint64_t n)
{
	uint64_t bs = (uint64_t)1 << cv->shift;
	for (uint64_t b = off; b < off + n; b += bs) {
		uint32_t i = (uint32_t)(b >> cv->shift), want = chunk_value_sum(cv, i);
		uint64_t have = off + n - b < bs ? off + n - b : bs;
		if (!want || sums_block(buf + (b - off), (size_t)have, (size_t)bs, c->ino, c->chunk) == want)
			continue;
		f->scrub_bad++;
		char path[4096];
		problem_fix(f, PR_CHUNK_CHECKSUM,
			    &(struct problem_ctx){.ino = c->ino, .chunk = c->chunk, .file = file,
						  .num = b, .num2 = bs,
						  .path = fsck_path_of(f, c->ino, path, sizeof(path))});
	}
}

void fsck_scrub_chunk(struct fsck *f, const struct fsck_chunk *c, const char *file)
{
	if (!f->scrub_buf && !(f->scrub_buf = malloc(SCRUB_READ))) {
		read_error(f, c, file, 0, ENOMEM);
		return;
	}
	uint64_t t0 = now_ns();
	/* O_NONBLOCK: a FIFO put there must not hang the check. */
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		read_error(f, c, file, 0, errno);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		read_error(f, c, file, 0, S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
		close(fd);
		return;
	}
	/* Bytes past a chunk are never read (pass 5 reports them). */
	uint64_t size = (uint64_t)st.st_size < f->info.chunk_size ? (uint64_t)st.st_size
								   : f->info.chunk_size;
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	void *val;
	struct chunk_value cv;
	bool summed = chunk_sums(f, c, &val, &cv);
	uint64_t off = 0;
	while (off < size && !fsck_cancelled(f)) {
		size_t want = size - off < SCRUB_READ ? (size_t)(size - off) : SCRUB_READ;
		ssize_t n = pread(fd, f->scrub_buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			read_error(f, c, file, off, errno);
			/* Go on past the bad range, as badblocks does. */
			off = (off / SCRUB_READ + 1) * SCRUB_READ;
			continue;
		}
		if (n == 0)
			break; /* cut shorter meanwhile: pass 5's business */
		if (summed)
			verify(f, c, file, &cv, f->scrub_buf, off, (uint64_t)n);
		off += (uint64_t)n;
		f->scrub_bytes += (uint64_t)n;
	}
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	free(val);
	f->scrub_files++;
	f->scrub_summed += summed;
	f->scrub_ns += now_ns() - t0;
}

void fsck_scrub_report(struct fsck *f)
{
	double s = (double)f->scrub_ns / 1e9;
	printf("Scrub: read %" PRIu64 " bytes of %" PRIu64 " chunk files in %.1f s (%.1f MiB/s); "
	       "%" PRIu64 " of them with checksums, %" PRIu64 " blocks failed them\n",
	       f->scrub_bytes, f->scrub_files, s,
	       s > 0 ? (double)f->scrub_bytes / 1048576.0 / s : 0.0, f->scrub_summed, f->scrub_bad);
	free(f->scrub_buf);
	f->scrub_buf = NULL;
}
