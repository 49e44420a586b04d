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

/* What reading one copy came to. */
struct copy_read {
	int rc;        /* a read error (counted, logged) */
	bool cut;      /* shorter than its durable length */
	bool bad;      /* a block failed its sum: the first is block */
	uint32_t block;
	size_t all;    /* bytes it had */
};

/* Read [lo, hi) of copy i of c into buf and check it. */
static bool read_copy(struct fs *fs, uint64_t ino, struct chunk_fd *c, unsigned i, char *buf,
		      uint64_t lo, uint64_t hi, struct copy_read *r)
{
	*r = (struct copy_read){0};
	r->rc = lsmfs_pread_full(c->copy[i].fd, buf, (size_t)(hi - lo), (off_t)lo, &r->all);
	if (r->rc) {
		devstats_count_error(fs, section_disk_of(fs, c->copy[i].section), DEVSTAT_READ, r->rc);
		return false;
	}
	/* A file shorter than its durable length: said as such (by the
	 * caller, chunk_came_short, with one copy), before any block is
	 * checked. */
	r->cut = lo + r->all < hi && lo + r->all < c->durable;
	if (r->cut)
		return false;
	r->bad = sums_check(ino, c, buf, lo, hi - lo, r->all, &r->block) != 0;
	return !r->bad;
}

/* Copy j failed as r said and copy i had the bytes (buf, r_good->all at
 * lo): said, and copy j rewritten from them (SCHEMA.md "Copies"). */
static void heal(struct fs *fs, uint64_t ino, struct chunk_fd *c, unsigned j,
		 const struct copy_read *r, unsigned i, const char *buf, size_t all, uint64_t lo)
{
	int rc = copies_heal(fs, ino, c, j, buf, all, lo);
	uint32_t gd = section_disk_of(fs, c->copy[i].section);
	char outcome[160];
	snprintf(outcome, sizeof(outcome), rc ? "answered from the copy on disk %u; rewriting this "
		 "one failed, it is stale from now on" : "answered from the copy on disk %u, and "
		 "rewritten from it", gd);
	if (r->bad) {
		sums_report(fs, ino, c, j, r->block, false, outcome);
	} else {
		char rel[96];
		section_chunk_name(ino, c->chunk, c->copy[j].section, rel, sizeof(rel));
		fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": copy %u (%s): %s: %s", ino, c->chunk,
			j, rel, r->rc ? strerror(-r->rc) : "shorter than its durable length",
			outcome);
	}
	if (rc)
		copies_fail(fs, ino, c, j, "rewriting from the other copy ", rc);
}

/*
 * The piece's bytes of chunk c into to (*got of them before the file's
 * end), each block they touch verified against its sum (sums.c): a read
 * that starts or ends inside a block reads the whole of it into a bounce
 * buffer.  From the first live copy; when it fails (a read error, a file
 * shorter than its durable length, a block that fails its sum), from the
 * next, and a good one answers and rewrites those that failed (SCHEMA.md
 * "Copies").  With one copy: a mismatch is -EIO and *got SIZE_MAX (said),
 * a read error returned as it is, a short file *got short (the caller
 * says both).  With more, none good: each failure said, -EIO and *got
 * SIZE_MAX.
 */
static int read_verified(struct fs *fs, uint64_t ino, struct chunk_fd *c, char *to,
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
	struct copy_read r[CHUNK_MAX_COPIES];
	unsigned tried[CHUNK_MAX_COPIES], ntried = 0;
	int good = -1, rc = 0;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES && good < 0; i++) {
		if (!copies_live(c, i))
			continue;
		if (read_copy(fs, ino, c, i, buf, lo, hi, &r[i]))
			good = (int)i;
		else
			tried[ntried++] = i;
	}
	uint64_t skip = it->within - lo;
	if (good >= 0) {
		for (unsigned k = 0; k < ntried; k++)
			heal(fs, ino, c, tried[k], &r[tried[k]], (unsigned)good, buf, r[good].all, lo);
		*got = r[good].all > skip ? (size_t)(r[good].all - skip) : 0;
	} else if (ntried == 1) {
		const struct copy_read *f = &r[tried[0]];
		if (f->bad) {
			sums_report(fs, ino, c, tried[0], f->block, true, "read as EIO (no other copy)");
			rc = -EIO;
			*got = SIZE_MAX;
		} else {
			rc = f->rc; /* counted; the caller says it */
			*got = f->all > skip ? (size_t)(f->all - skip) : 0;
		}
	} else {
		/* No good copy: each said, and the read fails. */
		for (unsigned k = 0; k < ntried; k++) {
			const struct copy_read *f = &r[tried[k]];
			if (f->bad) {
				sums_report(fs, ino, c, tried[k], f->block, true,
					    "read as EIO (no good copy)");
			} else {
				char rel[96];
				section_chunk_name(ino, c->chunk, c->copy[tried[k]].section, rel,
						   sizeof(rel));
				fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": copy %u (%s): %s; no "
					"good copy: read as EIO", ino, c->chunk, tried[k], rel,
					f->rc ? strerror(-f->rc) : "shorter than its durable length");
			}
		}
		rc = -EIO; /* also when no copy could be read at all */
		*got = SIZE_MAX;
	}
	if (!rc && *got > it->n)
		*got = (size_t)it->n;
	if (!rc && buf != to && *got)
		memcpy(to, buf + skip, *got);
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
		int first = copies_first(c);
		uint32_t section = first >= 0 ? c->copy[first].section : c->section;
		iogate_out(fs, in, c);
		rc = read_verified(fs, in->ino, c, to, it, &got);
		section_release(fs, mark); /* the innermost lock (gate.c) */
		iogate_back(fs, in, c);
		if (rc == -EIO && got == SIZE_MAX) {
			got = 0; /* a checksum mismatch: said and counted by sums.c */
		} else if (rc) {
			/* counted by read_copy */
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
