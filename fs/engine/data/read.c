/*
 * read.c: reading a file (SCHEMA.md "Data"): inline bytes from the store,
 * or chunk by chunk from the chunk files, a hole (no record, or a record
 * without file) as zeros, and bytes a record says were durable but the
 * file no longer holds as EIO, never as zeros (chunk_came_short).
 *
 * Locking, as data.c states it: the inode's stripe lock, let go for each
 * chunk's pread (iogate_begin_read, iogate_out/back), inside the chunk's
 * section gate.
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

/* [off, off + size) of an inline file, inside its size, into buf. */
static int read_inline(struct fs *fs, uint64_t ino, char *buf, size_t size, uint64_t off)
{
	char *data;
	size_t len;
	int rc = data_inline_get(fs, ino, &data, &len);
	if (rc)
		return rc;
	size_t have = len > off ? len - off : 0;
	if (have > size)
		have = size;
	if (have)
		memcpy(buf, data + off, have);
	memset(buf + have, 0, size - have);
	free(data);
	return 0;
}

/* A chunk file shorter than what fsync made durable of it: said, -EIO. */
static int chunk_came_short(struct fs *fs, uint64_t ino, uint64_t chunk, uint32_t section,
			    uint64_t has, uint64_t durable)
{
	char rel[96];
	section_chunk_name(ino, chunk, section, rel, sizeof(rel));
	devstats_count_error(fs, section_disk_of(fs, section), DEVSTAT_READ, EIO);
	fs_logf(fs, "inode %llu: chunk file %s/%s/%s/%s holds %llu bytes, its record "
		"says %llu: data lost (run fsck.lsmfs)", (unsigned long long)ino,
		fs->ds->paths[section_disk_of(fs, section)], LSMFS_DIR,
		LSMFS_SECTIONS_DIR, rel, (unsigned long long)has,
		(unsigned long long)durable);
	return -EIO;
}

/*
 * The piece's bytes of chunk c into to (*got of them before the file's
 * end), each block they touch verified against its sum (sums.c): a read
 * that starts or ends inside a block reads the whole of it into a bounce
 * buffer.  A mismatch: -EIO and *got SIZE_MAX.
 */
static int read_verified(struct fs *fs, uint64_t ino, const struct chunk_fd *c, char *to,
			 const struct chunk_iter *it, size_t *got)
{
	uint64_t bs = sums_block_size(c);
	uint64_t lo = it->within / bs * bs;
	uint64_t hi = (it->within + it->n + bs - 1) / bs * bs;
	if (hi > it->cs)
		hi = it->cs;
	char *buf = to;
	if (lo != it->within || hi != it->within + it->n) {
		buf = malloc((size_t)(hi - lo));
		if (!buf)
			return -ENOMEM;
	}
	size_t all = 0;
	int rc = lsmfs_pread_full(c->fd, buf, (size_t)(hi - lo), (off_t)lo, &all);
	/* A file shorter than its durable length is said as such by the
	 * caller (chunk_came_short), before any block is checked. */
	bool cut = lo + all < hi && lo + all < c->durable;
	if (!rc && !cut && sums_verify(fs, ino, c, buf, lo, hi - lo, all)) {
		rc = -EIO;
		*got = SIZE_MAX;
	} else {
		uint64_t skip = it->within - lo;
		*got = all > skip ? (size_t)(all - skip) : 0;
		if (*got > it->n)
			*got = (size_t)it->n;
		if (buf != to && *got)
			memcpy(to, buf + skip, *got);
	}
	if (buf != to)
		free(buf);
	return rc;
}

/*
 * One piece of a chunked file into to: its chunk's bytes, read with the
 * lock let go inside the section's gate (as write_piece writes), and zeros
 * where the chunk has none (a hole, or past its end).
 */
static int read_piece(struct fs *fs, struct fs_inode *in, char *to, const struct chunk_iter *it)
{
	size_t got = 0;
	struct chunk_fd *c;
	int mark = section_mark();
	int rc = chunk_open(fs, in, it->chunk, CHUNK_READ, &c, NULL);
	if (rc == 0) {
		uint32_t section = c->section;
		iogate_out(fs, in, c);
		rc = read_verified(fs, in->ino, c, to, it, &got);
		section_release(fs, mark); /* the innermost lock (gate.c) */
		iogate_back(fs, in, c);
		if (rc == -EIO && got == SIZE_MAX) {
			got = 0; /* a checksum mismatch: said and counted by sums.c */
		} else if (rc) {
			devstats_count_error(fs, section_disk_of(fs, section), DEVSTAT_READ, rc);
			fs_logf(fs, "inode %llu: reading chunk %llu: %s", (unsigned long long)in->ino,
				(unsigned long long)it->chunk, strerror(-rc));
		} else if (got < it->n && it->within + got < c->durable) {
			/* fsync had made these bytes durable: the chunk
			 * file lost them (truncated behind our back). */
			rc = chunk_came_short(fs, in->ino, it->chunk, section, it->within + got,
					      c->durable);
		}
	} else if (rc == -ENOENT) {
		rc = 0; /* a hole */
	}
	section_release(fs, mark); /* chunk_open enters the gate whatever it returns */
	if (!rc)
		memset(to + got, 0, (size_t)it->n - got); /* hole or short chunk: zeros */
	return rc;
}

int fs_read(struct fs *fs, uint64_t ino, char *buf, size_t size, off_t soff, size_t *got)
{
	*got = 0;
	if (soff < 0)
		return -EINVAL;
	uint64_t off = (uint64_t)soff;
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	rc = 0;
	inode_lock(fs, in);
	/* No write, truncate or other change of the layout until iogate_end,
	 * and each chunk's read(2) with the lock let go (iogate.c). */
	iogate_begin_read(fs, in);
	if (off >= in->rec.size)
		goto out;
	if (size > in->rec.size - off)
		size = (size_t)(in->rec.size - off);
	if (!(in->rec.flags & INODE_FLAG_CHUNKED)) {
		rc = read_inline(fs, ino, buf, size, off);
	} else {
		struct chunk_iter it;
		for (chunk_iter_init(&it, fs->info.chunk_size, off, off + size); chunk_iter_valid(&it);
		     chunk_iter_next(&it))
			if ((rc = read_piece(fs, in, buf + (it.pos - off), &it)))
				break;
	}
	if (!rc)
		*got = size;
out:
	iogate_end(fs, in, false);
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}
