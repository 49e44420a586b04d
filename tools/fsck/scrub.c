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
 * here: the problem (LSMFS-050F) is reported and left.  Without per-block
 * checksums a scrub finds what the disks report, not silent bit rot.
 */
#include "fsck.h"

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
		off += (uint64_t)n;
		f->scrub_bytes += (uint64_t)n;
	}
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	f->scrub_files++;
	f->scrub_ns += now_ns() - t0;
}

void fsck_scrub_report(struct fsck *f)
{
	double s = (double)f->scrub_ns / 1e9;
	printf("Scrub: read %" PRIu64 " bytes of %" PRIu64 " chunk files in %.1f s (%.1f MiB/s)\n",
	       f->scrub_bytes, f->scrub_files, s,
	       s > 0 ? (double)f->scrub_bytes / 1048576.0 / s : 0.0);
	free(f->scrub_buf);
	f->scrub_buf = NULL;
}
