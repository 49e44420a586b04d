/*
 * data.c: file contents (SCHEMA.md, "Data").
 *
 * Small files keep their bytes inline in the store (key F); a file that
 * grows past the inline limit moves to chunk files, one per chunk index,
 * in the section directory of the disk its section maps to.  A chunk
 * record (key C) is written before its chunk file is created, and a chunk
 * whose record is absent reads as a hole whatever lies on the disk, so
 * files a crash left behind can never leak into a file.  Bytes past a
 * file's size are never read: growing a file over a region that was not
 * written zeroes that region first (data_zero_gap).
 *
 * Locking.  Every operation here takes the inode's stripe lock, and a
 * file's layout (its size, its chunks, inline or chunked) changes only
 * under it with no chunk I/O under way (iogate_drain).  The system calls
 * on chunk files are the exception: reads and writes let the lock go for
 * each chunk's read(2) or write(2) (iogate.c), inside the gate of the
 * chunk's section (gate.c), and the writes of a file go out in offset
 * order (order.c); the protocol is stated once, above struct write_op.
 * nopen changes under fs->itab_lock; the O_DIRECT bounce buffers have
 * their own lock.
 *
 * Reads are read.c's, attribute changes (fs_setattr) setattr.c's.
 *
 * Unsynced writes are remembered per inode (dirty chunks, sections with
 * new chunk files) so that fsync makes exactly those durable before
 * syncing the store.
 */
#include "acl.h"
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
#include <linux/falloc.h>

int data_inline_get(struct fs *fs, uint64_t ino, char **buf, size_t *len)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_data(k, ino);
	void *v;
	int rc = store_get(fs->st, NULL, k, kl, &v, len);
	if (rc == -ENOENT) {
		*buf = NULL;
		*len = 0;
		return 0;
	}
	if (rc == 0)
		*buf = v;
	return rc;
}

/* Move an inline file's bytes to chunk 0 and flag it chunked. */
int data_to_chunked(struct fs *fs, struct fs_inode *in)
{
	char *buf;
	size_t len;
	int rc = data_inline_get(fs, in->ino, &buf, &len);
	if (rc)
		return rc;
	if (len > in->rec.size)
		len = in->rec.size;
	if (len) {
		struct chunk_fd *c;
		int mark = section_mark();
		rc = chunk_open(fs, in, 0, CHUNK_CREATE, &c, NULL);
		if (!rc)
			rc = sums_write_begin(fs, in->ino, c, 0, len);
		if (!rc) {
			/* At most the inline limit, below the chunk size. */
			uint32_t nb = sums_blocks_of(c, 0, len);
			uint32_t *sums = malloc((nb ? nb : 1) * sizeof(*sums));
			rc = copies_pwrite(fs, in->ino, c, buf, len, 0);
			if (sums)
				sums_compute(in->ino, c, rc ? NULL : buf, 0, len, sums);
			sums_write_end(c, 0, len, sums);
			free(sums);
		}
		if (!rc) {
			stats_write(fs, section_disk_of(fs, c->section), c, 0, len);
			chunk_account(in, c);
			rc = chunk_mark_dirty(in, 0);
		}
		section_release(fs, mark);
	}
	free(buf);
	if (rc)
		return rc;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	struct inode_rec r = in->rec;
	r.flags |= INODE_FLAG_CHUNKED;
	uint8_t k[KEY_MAX];
	size_t kl = key_data(k, in->ino);
	store_batch_delete(b, k, kl);
	inode_rec_put(b, in->ino, &r);
	rc = store_write(fs->st, b, 0);
	store_batch_free(b);
	if (!rc) {
		in->rec = r;
		in->dirty = false;
	}
	return rc;
}

/*
 * Make [from, to) of a chunked file read as zeros, where from is the
 * current size: cut the chunk holding `from` back to it and drop every
 * later chunk that starts before `to`.
 */
int data_zero_gap(struct fs *fs, struct fs_inode *in, uint64_t from, uint64_t to)
{
	uint64_t cs = fs->info.chunk_size;
	uint64_t first = from / cs;
	if (from % cs) {
		struct chunk_fd *c;
		int mark = section_mark();
		int rc = chunk_open(fs, in, first, CHUNK_WRITE, &c, NULL);
		if (rc == 0) {
			struct stat st;
			int fc = copies_first(c);
			if (fc >= 0 && fstat(c->copy[fc].fd, &st) == 0 &&
			    (uint64_t)st.st_size > from % cs) {
				rc = chunk_record_lower(fs, c, in->ino, from % cs);
				if (!rc)
					rc = sums_change(fs, in->ino, c, from % cs, cs, true);
				if (!rc)
					rc = copies_truncate(fs, in->ino, c, from % cs);
				if (!rc) {
					c->next_off = from % cs;
					chunk_account(in, c);
					/* the cut must reach the disk at the next fsync */
					rc = chunk_mark_dirty(in, first);
				}
			}
		}
		section_release(fs, mark);
		if (rc && rc != -ENOENT)
			return rc;
		first++;
	}
	uint64_t end = (to + cs - 1) / cs;
	if (first >= end)
		return 0;
	return chunk_drop(fs, in, first, end, UINT64_MAX);
}

static int inline_write(struct fs *fs, struct fs_inode *in, const char *buf, size_t size,
			uint64_t off)
{
	/* The bytes kept from before the write: none to read when the file
	 * is empty (every new small file's first write) or when the write
	 * covers them all. */
	char *old = NULL;
	size_t olen = 0;
	int rc;
	if (in->rec.size > 0 && !(off == 0 && size >= in->rec.size) &&
	    (rc = data_inline_get(fs, in->ino, &old, &olen)))
		return rc;
	if (olen > in->rec.size)
		olen = in->rec.size;
	size_t nlen = off + size > olen ? off + size : olen;
	char *nb = malloc(nlen ? nlen : 1);
	if (!nb) {
		free(old);
		return -ENOMEM;
	}
	memcpy(nb, old ? old : "", olen);
	if (off > olen)
		memset(nb + olen, 0, off - olen);
	memcpy(nb + off, buf, size);
	free(old);
	struct inode_rec r = in->rec;
	if (nlen > r.size)
		r.size = nlen;
	inode_touch(fs, &r, true, true);
	struct store_batch *b = store_batch_new();
	if (!b) {
		free(nb);
		return -ENOMEM;
	}
	uint8_t k[KEY_MAX];
	size_t kl = key_data(k, in->ino);
	store_batch_put(b, k, kl, nb, nlen);
	inode_rec_put(b, in->ino, &r);
	rc = store_write(fs->st, b, 0);
	store_batch_free(b);
	free(nb);
	if (!rc) {
		in->rec = r;
		in->dirty = false;
	}
	return rc;
}

static void *bounce_get(struct fs *fs)
{
	void *b = NULL;
	pthread_mutex_lock(&fs->bounce_lock);
	if (fs->nbounce)
		b = fs->bounce[--fs->nbounce];
	pthread_mutex_unlock(&fs->bounce_lock);
	if (!b && posix_memalign(&b, DIRECT_ALIGN, BOUNCE_SIZE) != 0)
		b = NULL;
	return b;
}

static void bounce_put(struct fs *fs, void *b)
{
	pthread_mutex_lock(&fs->bounce_lock);
	if (fs->nbounce < BOUNCE_KEEP) {
		fs->bounce[fs->nbounce++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&fs->bounce_lock);
	free(b);
}

/*
 * The O_DIRECT fds of chunk slot c's live copies, opened on first use
 * (under the lock), each left -1 when its disk does not take O_DIRECT.
 * Direct writes skip the backing page cache: the data was already cached
 * once, in the kernel's FUSE page cache, and a second copy costs a memcpy
 * into fresh pages per byte.
 */
static void direct_fds(struct fs *fs, struct fs_inode *in, struct chunk_fd *c)
{
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++) {
		if (!copies_live(c, i) || c->copy[i].dfd >= 0)
			continue;
		uint32_t section = c->copy[i].section;
		uint32_t disk = section_disk_of(fs, section); /* inside its gate (chunk_open) */
		if (__atomic_load_n(&fs->no_direct[disk], __ATOMIC_RELAXED))
			continue;
		char rel[96];
		section_chunk_name(in->ino, c->chunk, section, rel, sizeof(rel));
		int fd = openat(chunk_dirfd(fs, section), rel, O_WRONLY | O_DIRECT | O_CLOEXEC);
		if (fd < 0 && errno == EINVAL) {
			__atomic_store_n(&fs->no_direct[disk], 1, __ATOMIC_RELAXED);
			fs_logf(fs, "disk %u: %s does not take O_DIRECT; writing through its page cache",
				disk, fs->ds->paths[disk]);
		}
		c->copy[i].dfd = fd < 0 ? -1 : fd;
	}
}

/*
 * Write up to n bytes (pos and n aligned) with O_DIRECT.  Returns how many
 * went: what is left (all of it when the disk wants other alignments,
 * EINVAL) the caller writes through the page cache.  Other errors are
 * returned as they are.
 */
static ssize_t put_direct(struct fs *fs, int dfd, const char *buf, struct fuse_bufvec *src,
			  size_t n, off_t pos)
{
	if (src) {
		/* Whole pages of the FUSE page cache, by reference: the disk
		 * reads them from there. */
		struct fuse_bufvec dst = FUSE_BUFVEC_INIT(n);
		dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY;
		dst.buf[0].fd = dfd;
		dst.buf[0].pos = pos;
		ssize_t w = fuse_buf_copy(&dst, src, 0);
		return w == -EINVAL ? 0 : w;
	}
	void *bounce = NULL;
	size_t off = 0;
	ssize_t rc = 0;
	while (off < n) {
		const char *from = buf + off;
		size_t k = n - off;
		if ((uintptr_t)from % DIRECT_ALIGN) {
			/* not from a request buffer of loop.c (which puts a
			 * WRITE's data on a page boundary): a copy */
			if (!bounce && !(bounce = bounce_get(fs)))
				break;
			if (k > BOUNCE_SIZE)
				k = BOUNCE_SIZE;
			memcpy(bounce, from, k);
			from = bounce;
		}
		ssize_t w = pwrite(dfd, from, k, pos + (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = errno == EINVAL ? 0 : -errno;
			break;
		}
		off += (size_t)w;
		if ((size_t)w < k)
			break; /* short (full disk?): the page cache path says why */
	}
	if (bounce)
		bounce_put(fs, bounce);
	return rc < 0 ? rc : (ssize_t)off;
}

/* Write n bytes of the source at pos of fd: a memory buffer, or the
 * request's buffer vector (a pipe when the kernel spliced the request, so
 * the pages go from the FUSE page cache to the chunk file without passing
 * through our memory). */
static int put_bytes(int fd, const char *buf, struct fuse_bufvec *src, size_t done, size_t n,
		     off_t pos)
{
	if (!src)
		return lsmfs_pwrite_full(fd, buf + done, n, pos);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(n);
	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY;
	dst.buf[0].fd = fd;
	dst.buf[0].pos = pos;
	ssize_t w = fuse_buf_copy(&dst, src, 0);
	if (w < 0)
		return (int)w;
	return (size_t)w == n ? 0 : -EIO;
}

/* Change the size of a regular file (under its lock); rec updated in memory. */
int data_set_size(struct fs *fs, struct fs_inode *in, uint64_t nsize)
{
	iogate_drain(fs, in);
	uint64_t osize = in->rec.size;
	uint64_t cs = fs->info.chunk_size;
	int rc = 0;
	if (nsize > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (!(in->rec.flags & INODE_FLAG_CHUNKED)) {
		if (nsize > fs->info.inline_max) {
			if ((rc = data_to_chunked(fs, in)))
				return rc;
		} else {
			if (nsize < osize) {
				char *data;
				size_t len;
				if ((rc = data_inline_get(fs, in->ino, &data, &len)))
					return rc;
				if (len > nsize) {
					uint8_t k[KEY_MAX];
					size_t kl = key_data(k, in->ino);
					rc = nsize ? store_put(fs->st, k, kl, data, nsize, 0)
						   : store_delete(fs->st, k, kl, 0);
				}
				free(data);
			}
			if (!rc) {
				in->rec.size = nsize;
				in->dirty = true;
			}
			return rc;
		}
	}
	if (nsize > osize) {
		rc = data_zero_gap(fs, in, osize, nsize);
	} else if (nsize < osize) {
		uint64_t keep = (nsize + cs - 1) / cs; /* chunks [0, keep) stay */
		rc = chunk_drop(fs, in, keep, UINT64_MAX, nsize); /* the size first, durably */
		if (!rc && nsize % cs) {
			struct chunk_fd *c;
			int mark = section_mark();
			rc = chunk_open(fs, in, nsize / cs, CHUNK_WRITE, &c, NULL);
			if (rc == 0) {
				struct stat st;
				int fc = copies_first(c);
				if (fc >= 0 && fstat(c->copy[fc].fd, &st) == 0 &&
				    (uint64_t)st.st_size > nsize % cs) {
					rc = chunk_record_lower(fs, c, in->ino, nsize % cs);
					if (!rc)
						rc = sums_change(fs, in->ino, c, nsize % cs, cs, true);
					if (!rc)
						rc = copies_truncate(fs, in->ino, c, nsize % cs);
					if (!rc) {
						chunk_account(in, c);
						/* the cut reaches the disk at the next fsync */
						rc = chunk_mark_dirty(in, nsize / cs);
					}
				}
			} else if (rc == -ENOENT) {
				rc = 0;
			} else if (rc == -EIO) {
				/* lost with its disk: what is left of it stays lost */
				int r = chunk_lost_cut(fs, in->ino, nsize / cs, nsize % cs);
				rc = r == 1 ? 0 : r < 0 ? r : rc;
			}
			section_release(fs, mark);
		}
		if (!rc && nsize == 0) {
			in->rec.flags &= (uint8_t)~INODE_FLAG_CHUNKED;
			in->rec.blocks = 0;
		}
	}
	if (!rc) {
		in->rec.size = nsize;
		in->dirty = true;
	}
	return rc;
}

/*
 * After a write of [from, to) failed at from (a full or failing disk),
 * under the lock, drained.  When it would have made the file longer than
 * size_before, the size it had when the write began, the file ends where
 * the failure left it, max(from, size_before), as on ext4: what writes
 * under way with it put past that point goes (they succeeded out of
 * order: the kernel writes a file back several requests at a time), and
 * until a truncate or the last close every write that reaches past it
 * fails with err (write_admit), so that no later write makes the file
 * longer over a hole that would read as zeros.  A failed overwrite inside
 * the file changes no size: the kernel reports the error at fsync or
 * close, and the bytes there are what the disk holds.
 */
static void write_failed(struct fs *fs, struct fs_inode *in, uint64_t from, uint64_t to,
			 uint64_t size_before, bool made_past, int err)
{
	if (to <= size_before)
		return;
	uint64_t end = from > size_before ? from : size_before;
	if (!in->write_failed || end < in->write_floor)
		in->write_floor = end;
	in->write_failed = true;
	in->write_err = err;
	int r = 0;
	if (in->rec.size > end) {
		r = data_set_size(fs, in, end);
	} else if (made_past) {
		/* No chunk past the size it reached: such a chunk is never
		 * read, and fsck would report it. */
		uint64_t cs = fs->info.chunk_size;
		uint64_t keep = in->rec.size / cs + (in->rec.size % cs != 0);
		r = chunk_drop(fs, in, keep, UINT64_MAX, UINT64_MAX);
	}
	if (r)
		fs_logf(fs, "inode %llu: ending the file at %llu after a failed write: %s",
			(unsigned long long)in->ino, (unsigned long long)end, strerror(-r));
}

/*
 * A write.  Inline data goes to the store under the inode's lock.  Chunk
 * data goes out of the lock (iogate.c): each chunk opened (or made) under
 * it, then the lock let go for the write(2), so that a disk that holds the
 * write up holds up nothing else, and the writes of one file reach its
 * chunk files several at a time.
 *
 * What a write holds, in the order it takes them:
 *   1. its order slot (order.c), taken first, holding nothing, so that the
 *      kernel's train of writes to a file is registered before they race
 *      for the inode's lock; left when its first piece goes out to its
 *      chunk file (the next write of the train may go), else at the end,
 *      and always under the stripe lock, so that no order_wait misses the
 *      wakeup;
 *   2. the inode's stripe lock, for all but the system calls on chunk
 *      files; under it the write first waits for its predecessor in the
 *      train (order_wait);
 *   3. its count in io_wwait (iogate.c), from then until it begins: new
 *      reads wait for their turn meanwhile, so that a stream of reads
 *      cannot hold it off;
 *   4. the I/O gate, from iogate_try_begin to iogate_end: reads and
 *      changes of the file's layout wait for it.  It begins once the file
 *      is chunked and any gap between the file's end and the write is
 *      zeroed.  A write past the end waits for the I/O under way first
 *      (iogate_drain), unless it starts at or below the end of the writes
 *      under way (in->io_end: the next write of a sequential stream);
 *   5. for each piece, the gate of its chunk's section (gate.c), entered
 *      by chunk_open under the lock and left right after the write(2),
 *      before the lock is taken again (gates are the innermost lock); the
 *      chunk's fd slot stays pinned while the lock is let go (iogate_out
 *      to iogate_back).
 * write_enter takes 1 to 3, write_admit 4 (and lets go of 3), write_piece
 * takes and leaves 5, write_chunks ends 4, write_leave lets go of what is
 * left of 1 to 3.  An inline write holds 1 to 3 only: its bytes go to the
 * store under the lock, and an inline file has no I/O out.
 */
struct write_op {
	struct fs *fs;
	uint64_t ino;
	struct fs_inode *in;
	const char *buf;         /* the data in memory, */
	struct fuse_bufvec *src; /* or the request's buffer vector (buf NULL) */
	uint64_t off;
	size_t size;
	int slot;                /* the order slot; -1: none, or left */
	bool waiting;            /* counted in io_wwait, not yet begun */
};

/* Takes 1 to 3: 0, or -errno (nothing held then). */
static int write_enter(struct write_op *w)
{
	struct fs *fs = w->fs;
	int rc;
	w->slot = order_enter(fs, w->ino, w->off, w->size);
	w->in = inode_get(fs, w->ino, &rc);
	if (!w->in) {
		/* Under the stripe lock, so that no waiter misses the wakeup. */
		pthread_mutex_lock(inode_lock_of(fs, w->ino));
		order_leave(fs, w->slot, w->ino);
		pthread_mutex_unlock(inode_lock_of(fs, w->ino));
		return rc;
	}
	inode_lock(fs, w->in);
	order_wait(fs, w->ino, w->off);
	w->in->io_wwait++;
	w->waiting = true;
	return 0;
}

/* With FUSE_HANDLE_KILLPRIV_V2 the kernel leaves these to us. */
static int drop_privileges(struct fs *fs, struct fs_inode *in, const struct fs_caller *kill)
{
	if (kill) {
		inode_kill_suidgid(&in->rec, kill);
		in->dirty = true;
	}
	if (__atomic_load_n(&fs->killpriv_v2, __ATOMIC_ACQUIRE))
		return xattr_drop_capability(fs, in);
	return 0;
}

enum { WRITE_INLINE = 1, WRITE_BEGUN };

/*
 * Takes 4: WRITE_INLINE when the file is inline and stays so (write_inline
 * follows, still counted in io_wwait); WRITE_BEGUN when the write is
 * under way in the I/O gate (write_chunks follows); or -errno.
 */
static int write_admit(struct write_op *w)
{
	struct fs *fs = w->fs;
	struct fs_inode *in = w->in;
	int rc;
	for (;;) {
		if (in->gone)
			return -EIO;
		if (in->write_failed && w->off + w->size > in->write_floor)
			return in->write_err; /* the file ends there (write_failed) */
		/* An inline file has no I/O out: its reads never let the lock
		 * go, and only a drained truncate makes a file inline again. */
		if (!(in->rec.flags & INODE_FLAG_CHUNKED)) {
			if (w->off + w->size <= fs->info.inline_max)
				return WRITE_INLINE;
			if ((rc = data_to_chunked(fs, in)))
				return rc;
		}
		if (w->off > in->rec.size && w->off > in->io_end) {
			iogate_drain(fs, in);
			if (w->off > in->rec.size && (rc = data_zero_gap(fs, in, in->rec.size, w->off)))
				return rc;
		}
		if (iogate_try_begin(fs, in, true)) {
			iogate_unwait(fs, in);
			w->waiting = false;
			return WRITE_BEGUN;
		}
		/* Reads under way, or a truncate, say, waiting for the I/O
		 * under way: this write looks again after them. */
		iogate_wait(fs, in);
	}
}

/* The write into an inline file, under the lock: the bytes written, or
 * -errno. */
static int write_inline(struct write_op *w)
{
	const char *buf = w->buf;
	char *copy = NULL;
	int rc;
	if (w->src) { /* inline data goes to the store: bring it to memory */
		copy = malloc(w->size ? w->size : 1);
		if (!copy)
			return -ENOMEM;
		struct fuse_bufvec dst = FUSE_BUFVEC_INIT(w->size);
		dst.buf[0].mem = copy;
		ssize_t got = fuse_buf_copy(&dst, w->src, 0);
		if (got != (ssize_t)w->size) {
			rc = got < 0 ? (int)got : -EIO;
			goto out;
		}
		buf = copy;
	}
	rc = inline_write(w->fs, w->in, buf, w->size, w->off);
	if (!rc)
		rc = (int)w->size;
out:
	free(copy);
	return rc;
}

/* One copy's part of a piece: O_DIRECT where it can (dfd >= 0), through
 * the page cache for the rest; from buf (the piece's bytes) or src. */
static int put_copy(struct fs *fs, int fd, int dfd, const char *buf, struct fuse_bufvec *src,
		    size_t n, off_t pos)
{
	size_t went = 0;
	if (dfd >= 0) {
		ssize_t k = put_direct(fs, dfd, buf, src, n, pos);
		if (k < 0)
			return (int)k;
		went = (size_t)k;
	}
	return went < n ? put_bytes(fd, buf, src, went, n - went, pos + (off_t)went) : 0;
}

/*
 * The system calls of a piece, with the lock let go, into every live copy
 * of its chunk (chunk_copies.c: one that fails while another takes it is
 * flagged, and stale once settled; a full disk fails the write).  A
 * request spliced from a pipe is read once into memory when it goes to
 * two copies.  *blocks: the chunk files' st_blocks after the write
 * (UINT64_MAX: not known).
 */
static int put_piece(struct write_op *w, const struct chunk_iter *it, struct chunk_fd *c,
		     bool direct, uint64_t *blocks)
{
	size_t done = (size_t)(it->pos - w->off), n = (size_t)it->n;
	const char *buf = w->buf ? w->buf + done : NULL;
	struct fuse_bufvec *src = w->buf ? NULL : w->src;
	char *mem = NULL;
	if (!buf && copies_count_live(c) > 1) {
		struct fuse_bufvec dst = FUSE_BUFVEC_INIT(n);
		if (!(mem = malloc(n)))
			return -ENOMEM;
		dst.buf[0].mem = mem;
		ssize_t got = fuse_buf_copy(&dst, src, 0);
		if (got != (ssize_t)n) {
			free(mem);
			return got < 0 ? (int)got : -EIO;
		}
		buf = mem;
		src = NULL;
	}
	int rcs[CHUNK_MAX_COPIES] = {0}, first_err = 0, full = 0;
	unsigned ok = 0;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++) {
		if (!copies_live(c, i))
			continue;
		rcs[i] = put_copy(w->fs, c->copy[i].fd, direct ? c->copy[i].dfd : -1, buf, src, n,
				  (off_t)it->within);
		if (!rcs[i])
			ok++;
		else if (!first_err)
			first_err = rcs[i];
		if (rcs[i] == -ENOSPC || rcs[i] == -EDQUOT)
			full = rcs[i];
	}
	free(mem);
	if (!ok)
		return first_err ? first_err : -EIO;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		if (rcs[i])
			copies_fail(w->fs, w->ino, c, i, "writing ", rcs[i]);
	if (full)
		return full;
	*blocks = copies_blocks(c);
	/* A chunk written to its end goes to the disk now, in order,
	 * rather than all at once at fsync or under memory pressure. */
	if (it->within + n == it->cs)
		copies_writeback(c);
	return 0;
}

/* The sums of a piece's blocks (up to 1 MiB of 4 KiB blocks) on the stack. */
#define SUMS_STACK 264

/*
 * One piece, inside 5: its chunk opened (made) under the lock, its bytes
 * written with the lock let go, then counted under the lock again.
 * *made_past: the piece made a chunk past the file's size.
 */
static int write_piece(struct write_op *w, const struct chunk_iter *it, bool *made_past)
{
	struct fs *fs = w->fs;
	struct fs_inode *in = w->in;
	struct chunk_fd *c;
	bool created;
	int mark = section_mark();
	int rc = chunk_open(fs, in, it->chunk, CHUNK_CREATE, &c, &created);
	if (rc) {
		section_release(fs, mark); /* chunk_open enters the gate whatever it returns */
		return rc;
	}
	*made_past |= created && it->chunk * it->cs >= in->rec.size;
	bool direct = it->within % DIRECT_ALIGN == 0 && it->n % DIRECT_ALIGN == 0;
	if (direct)
		direct_fds(fs, in, c);
	uint32_t disk = section_disk_of(fs, c->section); /* inside its gate */
	/* On its way: the next write of a sequential stream may go. */
	order_leave(fs, w->slot, w->ino);
	w->slot = -1;
	uint64_t blocks = UINT64_MAX;
	/* The blocks' sums: not known while the write is under way, then
	 * those it covered whole from its buffer (sums.c). */
	if ((rc = sums_write_begin(fs, in->ino, c, it->within, it->n))) {
		section_release(fs, mark);
		return rc;
	}
	uint32_t nb = sums_blocks_of(c, it->within, it->n), stack[SUMS_STACK];
	uint32_t *sums = nb <= SUMS_STACK ? stack : malloc(nb * sizeof(*sums));
	iogate_out(fs, in, c);
	rc = put_piece(w, it, c, direct, &blocks);
	if (rc)
		devstats_count_error(fs, disk, DEVSTAT_WRITE, rc);
	section_release(fs, mark); /* the innermost lock (gate.c) */
	if (sums)
		sums_compute(in->ino, c, rc || !w->buf ? NULL : w->buf + (it->pos - w->off),
			     it->within, it->n, sums);
	iogate_back(fs, in, c);
	sums_write_end(c, it->within, it->n, sums);
	if (sums != stack)
		free(sums);
	if (rc)
		return rc;
	stats_write(fs, disk, c, it->within, it->n);
	space_keep(fs, c, it->n); /* on the disks now: no longer promised */
	if (blocks != UINT64_MAX)
		chunk_account_blocks(in, c, blocks);
	return chunk_mark_dirty(in, it->chunk);
}

/*
 * Every piece in order (write_piece); then what reached the disks goes into
 * the inode (its size, its times) and the write ends in the I/O gate.  A
 * write cut short (a full or failing disk) returns what reached the disk
 * and ends the file where it failed (write_failed); the kernel takes a
 * short writeback (cached) as done, so that one gets the error.
 */
static int write_chunks(struct write_op *w, bool cached)
{
	struct fs *fs = w->fs;
	struct fs_inode *in = w->in;
	uint64_t size_before = in->rec.size, end = w->off + w->size;
	if (end > in->io_end)
		in->io_end = end;
	bool made_past = false; /* this write created a chunk past the size */
	int rc = 0;
	struct chunk_iter it;
	for (chunk_iter_init(&it, fs->info.chunk_size, w->off, end); chunk_iter_valid(&it);
	     chunk_iter_next(&it))
		if ((rc = write_piece(w, &it, &made_past)))
			break;
	size_t done = (size_t)(it.pos - w->off);
	int err = done < w->size ? rc : 0;
	if (done) {
		if (w->off + done > in->rec.size)
			in->rec.size = w->off + done;
		inode_touch(fs, &in->rec, true, true);
		in->dirty = true;
		rc = (int)done; /* a short write reports what reached the disk */
	}
	iogate_end(fs, in, true);
	if (done < w->size) {
		iogate_drain(fs, in);
		write_failed(fs, in, w->off + done, end, size_before, made_past, err);
		if (cached)
			rc = err;
	}
	return rc;
}

/* Lets go of what is left of 1 to 3, and of the inode. */
static void write_leave(struct write_op *w)
{
	if (w->waiting)
		iogate_unwait(w->fs, w->in);
	order_leave(w->fs, w->slot, w->ino);
	inode_unlock(w->fs, w->in);
	inode_put(w->fs, w->in);
}

static int write_common(struct fs *fs, uint64_t ino, const char *buf, struct fuse_bufvec *src,
			size_t size, off_t soff, const struct fs_caller *kill, bool cached)
{
	if (soff < 0)
		return -EINVAL;
	struct write_op w = {.fs = fs, .ino = ino, .buf = buf, .src = src, .off = (uint64_t)soff,
			     .size = size};
	if (w.off + size > (uint64_t)INT64_MAX)
		return -EFBIG;
	int rc = write_enter(&w);
	if (rc)
		return rc;
	rc = drop_privileges(fs, w.in, kill);
	if (!rc)
		rc = write_admit(&w);
	if (rc == WRITE_INLINE)
		rc = write_inline(&w);
	else if (rc == WRITE_BEGUN)
		rc = write_chunks(&w, cached);
	write_leave(&w);
	if (rc > 0)
		atomic_fetch_add_explicit(&fs->app_bytes, (uint64_t)rc, memory_order_relaxed);
	return rc;
}

int fs_write(struct fs *fs, uint64_t ino, const char *buf, size_t size, off_t off,
	     const struct fs_caller *kill, bool cached)
{
	return write_common(fs, ino, buf, NULL, size, off, kill, cached);
}

int fs_write_bufv(struct fs *fs, uint64_t ino, struct fuse_bufvec *src, off_t off,
		  const struct fs_caller *kill, bool cached)
{
	/* Without splice the request arrives in one memory buffer. */
	if (src->count == 1 && src->idx == 0 && src->off == 0 &&
	    !(src->buf[0].flags & FUSE_BUF_IS_FD))
		return write_common(fs, ino, src->buf[0].mem, NULL, src->buf[0].size, off, kill,
				    cached);
	return write_common(fs, ino, NULL, src, fuse_buf_size(src), off, kill, cached);
}

int fs_fsync(struct fs *fs, uint64_t ino, bool datasync)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	/* A write under way may be making a chunk longer: the length fsync
	 * records as durable must be one fdatasync covered. */
	iogate_drain(fs, in);
	rc = chunk_fsync(fs, in);
	if (!rc) {
		(void)datasync; /* the record carries the size: always written */
		rc = inode_persist(fs, in, true);
	}
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}

int fs_open_file(struct fs *fs, uint64_t ino, int flags)
{
	(void)flags;
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	/* An open that raced with the unlink of the file's last name, when
	 * the inode went with the name (dir.c purgeable), or of a file
	 * handle of it: ESTALE, as ext4 answers for a deleted inode (a path
	 * walk that meets it is retried by the kernel and ends in ENOENT,
	 * as if it came after the unlink).  Under the inode's lock, which the unlink holds from its
	 * look at nopen to setting gone, so one of the two sees the other. */
	inode_lock(fs, in);
	pthread_mutex_lock(&fs->itab_lock);
	rc = in->gone ? -ESTALE : 0;
	if (!rc)
		in->nopen++;
	pthread_mutex_unlock(&fs->itab_lock);
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}

int fs_release(struct fs *fs, uint64_t ino)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	rc = in->gone ? 0 : inode_persist(fs, in, false);
	inode_unlock(fs, in);
	pthread_mutex_lock(&fs->itab_lock);
	if (in->nopen)
		in->nopen--;
	bool last = in->nopen == 0;
	pthread_mutex_unlock(&fs->itab_lock);
	if (last) {
		inode_lock(fs, in);
		if (in->nopen == 0) { /* not reopened meanwhile */
			data_close_fds(fs, in);
			in->write_failed = false; /* no writeback after the last close */
		}
		inode_unlock(fs, in);
	}
	inode_put(fs, in);
	return rc;
}
