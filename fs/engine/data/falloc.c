/*
 * falloc.c: fallocate: allocation (mode 0 and FALLOC_FL_KEEP_SIZE) and
 * punching holes (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE), under the
 * inode's stripe lock (SCHEMA.md, "Data").
 *
 * Costs follow what exists, never the byte range a caller names: a punch
 * visits the chunk records inside the range (a range scan) and removes
 * the chunks it covers whole; an allocation is refused with ENOSPC before
 * any work when a backing disk cannot hold the chunks of the range that
 * hash to it (space.c), and one that fails part
 * way gives back the chunks it created.  With KEEP_SIZE nothing is
 * allocated past the chunk that holds the end of the file: chunks past
 * the size are never read (growing a file drops them), so keeping them
 * would only hold space that fsck reports.
 */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/falloc.h>

/* punch: the chunk records inside the range, visited by chunk_scan. */
struct punch {
	struct fs *fs;
	struct fs_inode *in;
	uint64_t off, end;
	uint64_t *whole; /* chunks the range covers entirely */
	size_t nwhole, capwhole;
};

static int punch_chunk(void *ctx, uint64_t chunk, uint64_t durable,
		       const struct chunk_place *place)
{
	(void)durable;
	(void)place; /* opened by chunk_open */
	struct punch *p = ctx;
	uint64_t cs = p->fs->info.chunk_size;
	uint64_t start = chunk * cs;
	uint64_t lo = p->off > start ? p->off - start : 0;
	uint64_t hi = p->end - start < cs ? p->end - start : cs;
	if (lo == 0 && hi == cs) {
		if (p->nwhole == p->capwhole) {
			size_t nc = p->capwhole ? p->capwhole * 2 : 16;
			uint64_t *g = realloc(p->whole, nc * sizeof(*g));
			if (!g)
				return -ENOMEM;
			p->whole = g;
			p->capwhole = nc;
		}
		p->whole[p->nwhole++] = chunk;
		return 0;
	}
	struct chunk_fd *c;
	int mark = section_mark();
	int rc = chunk_open(p->fs, p->in, chunk, CHUNK_WRITE, &c, NULL);
	if (rc == 0)
		rc = sums_change(p->fs, p->in->ino, c, lo, hi, true);
	if (rc == 0)
		rc = copies_fallocate(p->fs, p->in->ino, c, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      lo, hi - lo);
	if (rc == 0) {
		chunk_account(p->in, c);
		(void)chunk_mark_dirty(p->in, chunk); /* ENOMEM: fsync still syncs the store */
	}
	section_release(p->fs, mark);
	return rc == -ENOENT ? 0 : rc;
}

int data_punch(struct fs *fs, struct fs_inode *in, uint64_t off, uint64_t end)
{
	struct inode_rec *r = &in->rec;
	if (off >= r->size)
		return 0;
	if (end > r->size)
		end = r->size;
	if (!(r->flags & INODE_FLAG_CHUNKED)) {
		char *data;
		size_t len;
		int rc = data_inline_get(fs, in->ino, &data, &len);
		if (rc)
			return rc;
		if (len > off) {
			size_t zend = end < len ? (size_t)end : len;
			memset(data + off, 0, zend - off);
			uint8_t k[KEY_MAX];
			size_t kl = key_data(k, in->ino);
			rc = store_put(fs->st, k, kl, data, len, 0);
		}
		free(data);
		return rc;
	}
	uint64_t cs = fs->info.chunk_size;
	struct punch p = {.fs = fs, .in = in, .off = off, .end = end};
	int rc = chunk_scan(fs, in->ino, off / cs, (end + cs - 1) / cs, punch_chunk, &p);
	/* Chunks covered whole go entirely, in runs. */
	for (size_t i = 0; !rc && i < p.nwhole;) {
		size_t j = i + 1;
		while (j < p.nwhole && p.whole[j] == p.whole[j - 1] + 1)
			j++;
		rc = chunk_drop(fs, in, p.whole[i], p.whole[j - 1] + 1, UINT64_MAX);
		i = j;
	}
	free(p.whole);
	return rc;
}

/* Space for one piece of the range in its chunk, made when missing
 * (*created). */
static int allocate_piece(struct fs *fs, struct fs_inode *in, const struct chunk_iter *it,
			  bool *created)
{
	struct chunk_fd *c;
	*created = false; /* chunk_open may fail before it sets it */
	int mark = section_mark();
	int rc = chunk_open(fs, in, it->chunk, CHUNK_CREATE, &c, created);
	if (rc)
		goto out;
	rc = copies_fallocate(fs, in->ino, c, FALLOC_FL_KEEP_SIZE, it->within, it->n);
	if (!rc)
		space_keep(fs, c, it->n);
	chunk_account(in, c);
	if (!rc)
		(void)chunk_mark_dirty(in, it->chunk); /* ENOMEM: fsync still syncs the store */
out:
	section_release(fs, mark);
	return rc;
}

static int allocate(struct fs *fs, struct fs_inode *in, int mode, uint64_t off, uint64_t end)
{
	struct inode_rec *r = &in->rec;
	uint64_t cs = fs->info.chunk_size;
	bool keep = mode & FALLOC_FL_KEEP_SIZE;
	int rc;
	if (keep) {
		/* Nothing past the chunk holding the end of the file. */
		uint64_t limit = (r->size + cs - 1) / cs * cs;
		if (!(r->flags & INODE_FLAG_CHUNKED))
			limit = r->size;
		if (end > limit)
			end = limit;
		if (off >= end)
			return 0;
	}
	if (!(r->flags & INODE_FLAG_CHUNKED)) {
		if (end <= fs->info.inline_max) {
			if (!keep && end > r->size)
				r->size = end;
			return 0;
		}
		if ((rc = data_to_chunked(fs, in)))
			return rc;
	}
	/* What the file holds already may be in the range: only the rest
	 * must fit. */
	if ((rc = space_check(fs, in, off, end, r->blocks * 512)))
		return rc;
	if (!keep && end > r->size && (rc = data_zero_gap(fs, in, r->size, end)))
		return rc;
	uint64_t *made = NULL;
	size_t nmade = 0, capmade = 0;
	struct chunk_iter it;
	for (chunk_iter_init(&it, cs, off, end); chunk_iter_valid(&it); chunk_iter_next(&it)) {
		if (nmade == capmade) { /* room first: a made chunk is always listed */
			size_t nc = capmade ? capmade * 2 : 16;
			uint64_t *g = realloc(made, nc * sizeof(*g));
			if (!g) {
				rc = -ENOMEM;
				break;
			}
			made = g;
			capmade = nc;
		}
		bool created;
		rc = allocate_piece(fs, in, &it, &created);
		if (created)
			made[nmade++] = it.chunk;
		if (rc)
			break;
	}
	if (rc) {
		/* Give back the chunks this call made; what it added to
		 * chunks that were there stays (inside the file's size). */
		for (size_t i = 0; i < nmade; i++) {
			int r2 = chunk_drop(fs, in, made[i], made[i] + 1, UINT64_MAX);
			if (r2)
				fs_logf(fs, "inode %llu: giving back chunk %llu after a failed fallocate: %s",
					(unsigned long long)in->ino, (unsigned long long)made[i],
					strerror(-r2));
		}
		if (!keep && end > r->size) {
			/* and anything past the size a created chunk left */
			uint64_t from = (r->size + cs - 1) / cs;
			(void)chunk_drop(fs, in, from, UINT64_MAX, UINT64_MAX);
		}
		free(made);
		return rc;
	}
	free(made);
	if (!keep && end > r->size)
		r->size = end;
	return 0;
}

int fs_fallocate(struct fs *fs, uint64_t ino, int mode, off_t soff, off_t slen,
		 const struct fs_caller *caller)
{
	if (soff < 0 || slen <= 0)
		return -EINVAL;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	uint64_t off = (uint64_t)soff, end = off + (uint64_t)slen;
	if (end > (uint64_t)INT64_MAX)
		return -EFBIG;
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	iogate_drain(fs, in); /* no I/O under way while the layout changes */
	struct inode_rec *r = &in->rec;
	if (!S_ISREG(r->mode)) {
		rc = S_ISDIR(r->mode) ? -EISDIR : -ENODEV;
		goto out;
	}
	if (in->gone) {
		rc = -EIO;
		goto out;
	}
	if (mode & FALLOC_FL_PUNCH_HOLE)
		rc = data_punch(fs, in, off, end);
	else
		rc = allocate(fs, in, mode, off, end);
	if (rc)
		goto out;
	/* A change of contents, as a write: an unprivileged caller loses
	 * setuid (and setgid as the VFS decides). */
	if (caller && caller->uid != 0)
		inode_kill_suidgid(r, caller);
	/* File capabilities go for any caller, as on ext4. */
	if ((rc = xattr_drop_capability(fs, in)))
		goto out;
	inode_touch(fs, r, !(mode & FALLOC_FL_KEEP_SIZE) || (mode & FALLOC_FL_PUNCH_HOLE), true);
	in->dirty = true;
	rc = inode_persist(fs, in, false);
out:
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}
