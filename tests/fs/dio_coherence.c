/*
 * dio_coherence FILE: after a write acknowledged to its writer, every
 * reader sees it, whatever mix of buffered and direct I/O (issue 14,
 * "Coherence").  Rounds on one file: the range is read through the page
 * cache, then overwritten with O_DIRECT, synchronously (pwrite) or
 * asynchronously (io_submit, raw syscalls: no libaio needed), or through a
 * shared mapping; then read again buffered, and must show the new bytes.
 * Exit 0 when every round saw its write, 1 with the round that did not.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LEN (64 * 1024)

static int check(int fd, off_t off, char want, const char *how, int round)
{
	static char buf[LEN];
	ssize_t n = pread(fd, buf, LEN, off);
	if (n != LEN) {
		fprintf(stderr, "dio_coherence: round %d (%s): buffered read: %zd %s\n", round, how, n,
			n < 0 ? strerror(errno) : "");
		return 1;
	}
	for (size_t i = 0; i < LEN; i++)
		if (buf[i] != want) {
			fprintf(stderr, "dio_coherence: round %d (%s): byte %lld reads '%c', the write "
				"before it put '%c' there: stale page cache\n", round, how,
				(long long)off + (long long)i, buf[i], want);
			return 1;
		}
	return 0;
}

/* An asynchronous O_DIRECT write of LEN bytes at off; with reader >= 0,
 * that descriptor reads the range through the page cache while the write
 * is in flight (bringing the old bytes back into the cache). */
static int aio_write(int fd, const void *buf, off_t off, int reader)
{
	aio_context_t ctx = 0;
	if (syscall(SYS_io_setup, 1, &ctx) != 0)
		return -errno;
	struct iocb cb;
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = LEN;
	cb.aio_offset = off;
	struct iocb *list[1] = {&cb};
	int rc = 0;
	if (syscall(SYS_io_submit, ctx, 1, list) != 1) {
		rc = -errno;
	} else {
		static char junk[LEN];
		if (reader >= 0 && pread(reader, junk, LEN, off) < 0)
			rc = -errno;
		struct io_event ev;
		if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1)
			rc = -errno;
		else if (ev.res != LEN)
			rc = ev.res < 0 ? (int)ev.res : -EIO;
	}
	syscall(SYS_io_destroy, ctx);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: dio_coherence FILE\n");
		return 2;
	}
	int fb = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	int fdd = fb < 0 ? -1 : open(argv[1], O_RDWR | O_DIRECT);
	void *dbuf;
	if (fb < 0 || fdd < 0 || posix_memalign(&dbuf, 4096, LEN)) {
		perror("dio_coherence: open");
		return 2;
	}
	char *init = malloc(4 * LEN);
	memset(init, '0', 4 * LEN);
	if (pwrite(fb, init, 4 * LEN, 0) != 4 * LEN || fsync(fb) != 0) {
		perror("dio_coherence: setup");
		return 2;
	}
	int bad = 0;
	for (int round = 0; round < 200 && !bad; round++) {
		off_t off = (off_t)(round % 4) * LEN;
		char c = (char)('A' + round % 26);
		bad |= check(fb, off, round < 4 ? '0' : (char)('A' + (round - 4) % 26), "before", round);
		memset(dbuf, c, LEN);
		const char *how;
		int rc;
		switch (round % 4) {
		case 0:
			how = "O_DIRECT pwrite";
			rc = pwrite(fdd, dbuf, LEN, off) == LEN ? 0 : -errno;
			break;
		case 1:
			how = "O_DIRECT io_submit";
			rc = aio_write(fdd, dbuf, off, -1);
			break;
		case 2:
			how = "O_DIRECT io_submit, read while in flight";
			rc = aio_write(fdd, dbuf, off, fb);
			break;
		default: {
			how = "mmap store + msync";
			char *m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fb, off);
			rc = m == MAP_FAILED ? -errno : 0;
			if (!rc) {
				memset(m, c, LEN);
				rc = msync(m, LEN, MS_SYNC) ? -errno : 0;
				munmap(m, LEN);
			}
		}
		}
		if (rc) {
			fprintf(stderr, "dio_coherence: round %d: %s: %s\n", round, how, strerror(-rc));
			return 1;
		}
		bad |= check(fb, off, c, how, round);
	}
	free(init);
	free(dbuf);
	close(fdd);
	close(fb);
	return bad;
}
