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
 * written zeroes that region first (zero_gap).
 *
 * Everything here runs under the inode's stripe lock.  Unsynced writes are
 * remembered per inode (dirty chunks, sections with new chunk files) so
 * that fsync makes exactly those durable before syncing the store.
 */
#include "fs_int.h"

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

static void chunk_rel(uint64_t ino, uint64_t chunk, uint32_t section, char *out, size_t cap)
{
	snprintf(out, cap, "%" PRIu32 "/%" PRIu64 ".%" PRIu64, section, ino, chunk);
}

static int section_dirfd(struct fs *fs, uint32_t section)
{
	return fs->sections_fd[fs->section_disk[section]];
}

static struct inode_data *data_of(struct fs_inode *in)
{
	if (!in->data) {
		in->data = calloc(1, sizeof(*in->data));
		if (in->data)
			for (int i = 0; i < CHUNK_FDS; i++) {
				in->data->fds[i].fd = -1;
				in->data->fds[i].dfd = -1;
			}
	}
	return in->data;
}

static int push_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n && (*a)[*n - 1] == v)
		return 0; /* the common case: sequential writes to one chunk */
	for (size_t i = 0; i < *n; i++)
		if ((*a)[i] == v)
			return 0;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		uint64_t *g = realloc(*a, nc * sizeof(**a));
		if (!g)
			return -ENOMEM;
		*a = g;
		*cap = nc;
	}
	(*a)[(*n)++] = v;
	return 0;
}

/* Remember that chunk was written since the last fsync. */
static int mark_dirty(struct fs_inode *in, uint64_t chunk)
{
	struct inode_data *d = in->data;
	return push_u64(&d->dirty, &d->ndirty, &d->capdirty, chunk);
}

static void slot_close(struct chunk_fd *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->dfd >= 0)
		close(c->dfd);
	c->fd = -1;
	c->dfd = -1;
}

void data_close_fds(struct fs *fs, struct fs_inode *in)
{
	(void)fs;
	if (!in->data)
		return;
	for (int i = 0; i < CHUNK_FDS; i++)
		slot_close(&in->data->fds[i]);
}

void data_free(struct fs *fs, struct fs_inode *in)
{
	if (!in->data)
		return;
	data_close_fds(fs, in);
	free(in->data->dirty);
	free(in->data->new_sections);
	free(in->data);
	in->data = NULL;
}

static void forget_fd(struct fs_inode *in, uint64_t chunk)
{
	if (!in || !in->data)
		return;
	for (int i = 0; i < CHUNK_FDS; i++) {
		struct chunk_fd *c = &in->data->fds[i];
		if (c->fd >= 0 && c->chunk == chunk)
			slot_close(c);
	}
}

/*
 * The fd of chunk `chunk` of in, from the inode's small cache or opened.
 * With create, a missing chunk gets its record and then a fresh, empty
 * file; without, a chunk without record (or file) is -ENOENT: a hole.
 */
static uint32_t disk_of_chunk(const struct fs *fs, uint64_t ino, uint64_t chunk)
{
	return fs->section_disk[chunk_section(ino, chunk, fs->info.sections)];
}

static int chunk_fd(struct fs *fs, struct fs_inode *in, uint64_t chunk, bool create,
		    struct chunk_fd **out)
{
	struct inode_data *d = data_of(in);
	if (!d)
		return -ENOMEM;
	struct chunk_fd *victim = &d->fds[0];
	for (int i = 0; i < CHUNK_FDS; i++) {
		struct chunk_fd *c = &d->fds[i];
		if (c->fd >= 0 && c->chunk == chunk) {
			c->stamp = ++d->stamp;
			*out = c;
			return 0;
		}
		if (c->fd < 0 || (victim->fd >= 0 && c->stamp < victim->stamp))
			victim = c;
	}
	uint32_t section = chunk_section(in->ino, chunk, fs->info.sections);
	int dirfd = section_dirfd(fs, section);
	char rel[96];
	chunk_rel(in->ino, chunk, section, rel, sizeof(rel));
	uint8_t ck[KEY_MAX];
	int exists = fs_key_exists(fs, ck, key_chunk(ck, in->ino, chunk));
	if (exists < 0)
		return exists;
	int flags = (fs->opt.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	int fd;
	if (exists) {
		fd = openat(dirfd, rel, flags);
		if (fd < 0 && errno == ENOENT && create)
			fd = openat(dirfd, rel, flags | O_CREAT, 0600);
	} else if (!create) {
		return -ENOENT;
	} else {
		int rc = store_put(fs->st, ck, key_chunk(ck, in->ino, chunk), "", 0, 0);
		if (rc)
			return rc;
		/* O_TRUNC: a file without record is a leftover of a crash. */
		fd = openat(dirfd, rel, flags | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 && errno == ENOENT) {
			char sdir[16];
			snprintf(sdir, sizeof(sdir), "%" PRIu32, section);
			(void)mkdirat(dirfd, sdir, 0700); /* EEXIST from a racing mkdir is fine */
			fd = openat(dirfd, rel, flags | O_CREAT | O_TRUNC, 0600);
		}
		if (fd >= 0 && push_u64(&d->new_sections, &d->nnew, &d->capnew, section))
			fs_logf(fs, "out of memory tracking new chunk files; fsync may miss a directory");
	}
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT && !create)
			return -ENOENT;
		fs_logf(fs, "disk %u: %s/%s/%s/%s: %s", fs->section_disk[section],
			fs->ds->paths[fs->section_disk[section]], LSMFS_DIR, LSMFS_SECTIONS_DIR, rel,
			strerror(e));
		return -e;
	}
	slot_close(victim);
	struct stat st;
	victim->fd = fd;
	victim->chunk = chunk;
	bool known = fstat(fd, &st) == 0;
	victim->blocks = known ? (uint64_t)st.st_blocks : 0;
	victim->next_off = known ? (uint64_t)st.st_size : 0; /* appends are sequential */
	victim->stamp = ++d->stamp;
	*out = victim;
	return 0;
}

/* Keep rec.blocks in step with what the chunk file holds now. */
static void account_blocks(struct fs_inode *in, struct chunk_fd *c)
{
	struct stat st;
	if (fstat(c->fd, &st) != 0)
		return;
	uint64_t now = (uint64_t)st.st_blocks;
	in->rec.blocks = in->rec.blocks + now >= c->blocks ? in->rec.blocks + now - c->blocks : 0;
	c->blocks = now;
}

static int full_pwrite(int fd, const char *buf, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, buf, n, off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/*
 * Remove the chunks [from, to) of ino that have records: files first, then
 * the records into b.  A crash in between leaves records without files,
 * which read as holes.
 */
static int drop_range(struct fs *fs, struct fs_inode *in, uint64_t ino, uint64_t from,
		      uint64_t to, struct store_batch *b, uint64_t *freed)
{
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	size_t ll = key_chunk(lo, ino, from);
	size_t hl = to == UINT64_MAX ? key_chunk_prefix(hi, ino + 1) : key_chunk(hi, ino, to);
	struct store_iter_options io = {.lower = lo, .lower_len = ll, .upper = hi, .upper_len = hl};
	struct store_iter *it;
	int rc = store_iter_new(fs->st, &io, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);
		if (kl != 17)
			continue;
		uint64_t chunk = sc_get_be64(k + 9);
		uint32_t section = chunk_section(ino, chunk, fs->info.sections);
		char rel[96];
		chunk_rel(ino, chunk, section, rel, sizeof(rel));
		forget_fd(in, chunk);
		struct stat st;
		int dirfd = section_dirfd(fs, section);
		if (fstatat(dirfd, rel, &st, 0) == 0 && freed)
			*freed += (uint64_t)st.st_blocks;
		if (unlinkat(dirfd, rel, 0) != 0 && errno != ENOENT) {
			rc = -errno;
			fs_logf(fs, "disk %u: removing chunk %s: %s", fs->section_disk[section], rel,
				strerror(errno));
			break;
		}
		store_batch_delete(b, k, kl);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

int data_drop_chunks(struct fs *fs, uint64_t ino, uint64_t from_chunk, struct store_batch *b,
		     uint64_t *freed_blocks)
{
	return drop_range(fs, NULL, ino, from_chunk, UINT64_MAX, b, freed_blocks);
}

static int inline_get(struct fs *fs, uint64_t ino, char **buf, size_t *len)
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
static int to_chunked(struct fs *fs, struct fs_inode *in)
{
	char *buf;
	size_t len;
	int rc = inline_get(fs, in->ino, &buf, &len);
	if (rc)
		return rc;
	if (len > in->rec.size)
		len = in->rec.size;
	if (len) {
		struct chunk_fd *c;
		rc = chunk_fd(fs, in, 0, true, &c);
		if (!rc)
			rc = full_pwrite(c->fd, buf, len, 0);
		if (!rc) {
			stats_write(fs, disk_of_chunk(fs, in->ino, 0), c, 0, len);
			account_blocks(in, c);
			rc = mark_dirty(in, 0);
		}
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
static int zero_gap(struct fs *fs, struct fs_inode *in, uint64_t from, uint64_t to)
{
	uint64_t cs = fs->info.chunk_size;
	uint64_t first = from / cs;
	if (from % cs) {
		struct chunk_fd *c;
		int rc = chunk_fd(fs, in, first, false, &c);
		if (rc == 0) {
			struct stat st;
			if (fstat(c->fd, &st) == 0 && (uint64_t)st.st_size > from % cs) {
				if (ftruncate(c->fd, (off_t)(from % cs)) != 0)
					return -errno;
				c->next_off = from % cs;
				account_blocks(in, c);
			}
		} else if (rc != -ENOENT) {
			return rc;
		}
		first++;
	}
	uint64_t end = (to + cs - 1) / cs;
	if (first >= end)
		return 0;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	uint64_t freed = 0;
	int rc = drop_range(fs, in, in->ino, first, end, b, &freed);
	if (!rc && store_batch_count(b))
		rc = store_write(fs->st, b, 0);
	store_batch_free(b);
	in->rec.blocks = in->rec.blocks > freed ? in->rec.blocks - freed : 0;
	return rc;
}

static int inline_write(struct fs *fs, struct fs_inode *in, const char *buf, size_t size,
			uint64_t off)
{
	char *old;
	size_t olen;
	int rc = inline_get(fs, in->ino, &old, &olen);
	if (rc)
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
	inode_touch(&r, true, true);
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
 * The O_DIRECT fd of chunk slot c, opened on first use, or -1 when its disk
 * does not take O_DIRECT.  Direct writes skip the backing page cache: the
 * data was already cached once, in the kernel's FUSE page cache, and a
 * second copy costs a memcpy into fresh pages per byte.
 */
static int direct_fd(struct fs *fs, struct fs_inode *in, struct chunk_fd *c)
{
	if (c->dfd >= 0)
		return c->dfd;
	uint32_t section = chunk_section(in->ino, c->chunk, fs->info.sections);
	uint32_t disk = fs->section_disk[section];
	if (__atomic_load_n(&fs->no_direct[disk], __ATOMIC_RELAXED))
		return -1;
	char rel[96];
	chunk_rel(in->ino, c->chunk, section, rel, sizeof(rel));
	int fd = openat(section_dirfd(fs, section), rel, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EINVAL) {
			__atomic_store_n(&fs->no_direct[disk], 1, __ATOMIC_RELAXED);
			fs_logf(fs, "disk %u: %s does not take O_DIRECT; writing through its page cache",
				disk, fs->ds->paths[disk]);
		}
		return -1;
	}
	c->dfd = fd;
	return fd;
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
			/* libfuse's buffer puts the data 80 bytes past a page */
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
		return full_pwrite(fd, buf + done, n, pos);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(n);
	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY;
	dst.buf[0].fd = fd;
	dst.buf[0].pos = pos;
	ssize_t w = fuse_buf_copy(&dst, src, 0);
	if (w < 0)
		return (int)w;
	return (size_t)w == n ? 0 : -EIO;
}

static int write_common(struct fs *fs, uint64_t ino, const char *buf, struct fuse_bufvec *src,
			size_t size, off_t soff, const struct fs_caller *kill)
{
	if (soff < 0)
		return -EINVAL;
	uint64_t off = (uint64_t)soff;
	if (off + size > (uint64_t)INT64_MAX)
		return -EFBIG;
	int rc, slot = order_enter(fs, ino, off, size);
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in) {
		/* Under the stripe lock, so that no waiter misses the wakeup. */
		pthread_mutex_lock(inode_lock_of(fs, ino));
		order_leave(fs, slot, ino);
		pthread_mutex_unlock(inode_lock_of(fs, ino));
		return rc;
	}
	char *copy = NULL;
	inode_lock(fs, in);
	order_wait(fs, ino, off);
	if (in->gone) {
		rc = -EIO;
		goto out;
	}
	/* With FUSE_HANDLE_KILLPRIV_V2 the kernel leaves these to us. */
	if (kill) {
		inode_kill_suidgid(&in->rec, kill);
		in->dirty = true;
	}
	if (__atomic_load_n(&fs->killpriv_v2, __ATOMIC_ACQUIRE) &&
	    (rc = xattr_drop_capability(fs, in)))
		goto out;
	if (!(in->rec.flags & INODE_FLAG_CHUNKED)) {
		if (off + size <= fs->info.inline_max) {
			if (src) { /* inline data goes to the store: bring it to memory */
				copy = malloc(size ? size : 1);
				if (!copy) {
					rc = -ENOMEM;
					goto out;
				}
				struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
				dst.buf[0].mem = copy;
				ssize_t got = fuse_buf_copy(&dst, src, 0);
				if (got != (ssize_t)size) {
					rc = got < 0 ? (int)got : -EIO;
					goto out;
				}
				buf = copy;
			}
			rc = inline_write(fs, in, buf, size, off);
			if (!rc)
				rc = (int)size;
			goto out;
		}
		if ((rc = to_chunked(fs, in)))
			goto out;
	}
	if (off > in->rec.size && (rc = zero_gap(fs, in, in->rec.size, off)))
		goto out;
	uint64_t cs = fs->info.chunk_size;
	size_t done = 0;
	while (done < size) {
		uint64_t pos = off + done;
		uint64_t chunk = pos / cs, within = pos % cs;
		size_t n = size - done;
		if (n > cs - within)
			n = (size_t)(cs - within);
		struct chunk_fd *c;
		if ((rc = chunk_fd(fs, in, chunk, true, &c)))
			break;
		size_t went = 0;
		if (within % DIRECT_ALIGN == 0 && n % DIRECT_ALIGN == 0) {
			int dfd = direct_fd(fs, in, c);
			if (dfd >= 0) {
				ssize_t w = put_direct(fs, dfd, buf ? buf + done : NULL, src, n,
						       (off_t)within);
				if (w < 0) {
					rc = (int)w;
					break;
				}
				went = (size_t)w;
			}
		}
		if (went < n && (rc = put_bytes(c->fd, buf, src, done + went, n - went,
						(off_t)(within + went))))
			break;
		stats_write(fs, disk_of_chunk(fs, in->ino, chunk), c, within, n);
		account_blocks(in, c);
		if ((rc = mark_dirty(in, chunk)))
			break;
		/* A chunk written to its end goes to the disk now, in order,
		 * rather than all at once at fsync or under memory pressure. */
		if (within + n == cs)
			(void)sync_file_range(c->fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint only */
		done += n;
	}
	if (done) {
		if (off + done > in->rec.size)
			in->rec.size = off + done;
		inode_touch(&in->rec, true, true);
		in->dirty = true;
		rc = (int)done; /* a short write reports what reached the disk */
	}
out:
	order_leave(fs, slot, ino);
	inode_unlock(fs, in);
	inode_put(fs, in);
	free(copy);
	if (rc > 0)
		atomic_fetch_add_explicit(&fs->app_bytes, (uint64_t)rc, memory_order_relaxed);
	return rc;
}

int fs_write(struct fs *fs, uint64_t ino, const char *buf, size_t size, off_t off,
	     const struct fs_caller *kill)
{
	return write_common(fs, ino, buf, NULL, size, off, kill);
}

int fs_write_bufv(struct fs *fs, uint64_t ino, struct fuse_bufvec *src, off_t off,
		  const struct fs_caller *kill)
{
	/* Without splice the request arrives in one memory buffer. */
	if (src->count == 1 && src->idx == 0 && src->off == 0 &&
	    !(src->buf[0].flags & FUSE_BUF_IS_FD))
		return write_common(fs, ino, src->buf[0].mem, NULL, src->buf[0].size, off, kill);
	return write_common(fs, ino, NULL, src, fuse_buf_size(src), off, kill);
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
	if (off >= in->rec.size)
		goto out;
	if (size > in->rec.size - off)
		size = (size_t)(in->rec.size - off);
	if (!(in->rec.flags & INODE_FLAG_CHUNKED)) {
		char *data;
		size_t len;
		if ((rc = inline_get(fs, ino, &data, &len)))
			goto out;
		size_t have = len > off ? len - off : 0;
		if (have > size)
			have = size;
		if (have)
			memcpy(buf, data + off, have);
		memset(buf + have, 0, size - have);
		free(data);
		*got = size;
		goto out;
	}
	uint64_t cs = fs->info.chunk_size;
	size_t done = 0;
	while (done < size) {
		uint64_t pos = off + done;
		uint64_t chunk = pos / cs, within = pos % cs;
		size_t n = size - done;
		if (n > cs - within)
			n = (size_t)(cs - within);
		struct chunk_fd *c;
		rc = chunk_fd(fs, in, chunk, false, &c);
		size_t r = 0;
		if (rc == 0) {
			while (r < n) {
				ssize_t k = pread(c->fd, buf + done + r, n - r, (off_t)(within + r));
				if (k < 0 && errno == EINTR)
					continue;
				if (k < 0) {
					rc = -errno;
					fs_logf(fs, "inode %llu: reading chunk %llu: %s",
						(unsigned long long)ino, (unsigned long long)chunk,
						strerror(errno));
					goto out;
				}
				if (k == 0)
					break;
				r += (size_t)k;
			}
		} else if (rc != -ENOENT) {
			goto out;
		}
		rc = 0;
		memset(buf + done + r, 0, n - r); /* hole or short chunk: zeros */
		done += n;
	}
	*got = done;
out:
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}

/* Change the size of a regular file (under its lock); rec updated in memory. */
static int set_size(struct fs *fs, struct fs_inode *in, uint64_t nsize)
{
	uint64_t osize = in->rec.size;
	uint64_t cs = fs->info.chunk_size;
	int rc = 0;
	if (nsize > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (!(in->rec.flags & INODE_FLAG_CHUNKED)) {
		if (nsize > fs->info.inline_max) {
			if ((rc = to_chunked(fs, in)))
				return rc;
		} else {
			if (nsize < osize) {
				char *data;
				size_t len;
				if ((rc = inline_get(fs, in->ino, &data, &len)))
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
		rc = zero_gap(fs, in, osize, nsize);
	} else if (nsize < osize) {
		uint64_t keep = (nsize + cs - 1) / cs; /* chunks [0, keep) stay */
		struct store_batch *b = store_batch_new();
		if (!b)
			return -ENOMEM;
		uint64_t freed = 0;
		rc = drop_range(fs, in, in->ino, keep, UINT64_MAX, b, &freed);
		if (!rc && store_batch_count(b))
			rc = store_write(fs->st, b, 0);
		store_batch_free(b);
		in->rec.blocks = in->rec.blocks > freed ? in->rec.blocks - freed : 0;
		if (!rc && nsize % cs) {
			struct chunk_fd *c;
			rc = chunk_fd(fs, in, nsize / cs, false, &c);
			if (rc == 0) {
				struct stat st;
				if (fstat(c->fd, &st) == 0 && (uint64_t)st.st_size > nsize % cs) {
					if (ftruncate(c->fd, (off_t)(nsize % cs)) != 0)
						rc = -errno;
					else
						account_blocks(in, c);
				}
			} else if (rc == -ENOENT) {
				rc = 0;
			}
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

int fs_setattr(struct fs *fs, uint64_t ino, const struct stat *a, int to_set,
	       const struct fs_caller *caller, struct stat *out)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	struct inode_rec *r = &in->rec;
	int64_t now_s;
	uint32_t now_ns;
	fs_now(&now_s, &now_ns);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (S_ISDIR(r->mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (!S_ISREG(r->mode)) {
			rc = -EINVAL;
			goto out;
		}
		if (a->st_size < 0) {
			rc = -EINVAL;
			goto out;
		}
		if ((uint64_t)a->st_size != r->size) {
			if ((rc = set_size(fs, in, (uint64_t)a->st_size)))
				goto out;
			r->mtime_sec = now_s;
			r->mtime_nsec = now_ns;
		}
	}
	if (to_set & FUSE_SET_ATTR_MODE)
		r->mode = (r->mode & S_IFMT) | (a->st_mode & 07777);
	/* FATTR_KILL_SUIDGID (KILLPRIV_V2): a chown, or a truncate by a
	 * caller without CAP_FSETID. */
	if (to_set & FUSE_SET_ATTR_KILL_SUID) {
		inode_kill_suidgid(r, caller);
		if ((rc = xattr_drop_capability(fs, in)))
			goto out;
	}
	if (to_set & FUSE_SET_ATTR_UID)
		r->uid = a->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		r->gid = a->st_gid;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		r->atime_sec = now_s;
		r->atime_nsec = now_ns;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		r->atime_sec = a->st_atim.tv_sec;
		r->atime_nsec = (uint32_t)a->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		r->mtime_sec = now_s;
		r->mtime_nsec = now_ns;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		r->mtime_sec = a->st_mtim.tv_sec;
		r->mtime_nsec = (uint32_t)a->st_mtim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		r->ctime_sec = a->st_ctim.tv_sec;
		r->ctime_nsec = (uint32_t)a->st_ctim.tv_nsec;
	} else {
		r->ctime_sec = now_s;
		r->ctime_nsec = now_ns;
	}
	in->dirty = true;
	rc = inode_persist(fs, in, false);
out:
	if (!rc)
		inode_stat(fs, in, out);
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}

int fs_fallocate(struct fs *fs, uint64_t ino, int mode, off_t soff, off_t slen)
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
	struct inode_rec *r = &in->rec;
	uint64_t cs = fs->info.chunk_size;
	if (!S_ISREG(r->mode)) {
		rc = S_ISDIR(r->mode) ? -EISDIR : -ENODEV;
		goto out;
	}
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		if (off >= r->size)
			goto touch;
		if (end > r->size)
			end = r->size;
		if (!(r->flags & INODE_FLAG_CHUNKED)) {
			char *data;
			size_t len;
			if ((rc = inline_get(fs, ino, &data, &len)))
				goto out;
			if (len > off) {
				size_t zend = end < len ? (size_t)end : len;
				memset(data + off, 0, zend - off);
				uint8_t k[KEY_MAX];
				size_t kl = key_data(k, ino);
				rc = store_put(fs->st, k, kl, data, len, 0);
			}
			free(data);
			if (rc)
				goto out;
			goto touch;
		}
		for (uint64_t pos = off; pos < end;) {
			uint64_t chunk = pos / cs, within = pos % cs;
			uint64_t n = end - pos < cs - within ? end - pos : cs - within;
			struct chunk_fd *c;
			rc = chunk_fd(fs, in, chunk, false, &c);
			if (rc == 0) {
				if (fallocate(c->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					      (off_t)within, (off_t)n) != 0) {
					rc = -errno;
					goto out;
				}
				account_blocks(in, c);
				(void)mark_dirty(in, chunk); /* ENOMEM: fsync still syncs the store */
			} else if (rc != -ENOENT) {
				goto out;
			}
			rc = 0;
			pos += n;
		}
		goto touch;
	}
	/* Allocation: mode 0 or KEEP_SIZE. */
	if (!(r->flags & INODE_FLAG_CHUNKED)) {
		if (end <= fs->info.inline_max) {
			if (!(mode & FALLOC_FL_KEEP_SIZE) && end > r->size)
				r->size = end;
			goto touch;
		}
		if ((rc = to_chunked(fs, in)))
			goto out;
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > r->size &&
	    (rc = zero_gap(fs, in, r->size, end)))
		goto out;
	for (uint64_t pos = off; pos < end;) {
		uint64_t chunk = pos / cs, within = pos % cs;
		uint64_t n = end - pos < cs - within ? end - pos : cs - within;
		struct chunk_fd *c;
		if ((rc = chunk_fd(fs, in, chunk, true, &c)))
			goto out;
		if (fallocate(c->fd, FALLOC_FL_KEEP_SIZE, (off_t)within, (off_t)n) != 0) {
			rc = -errno;
			goto out;
		}
		account_blocks(in, c);
		(void)mark_dirty(in, chunk); /* ENOMEM: fsync still syncs the store */
		pos += n;
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > r->size)
		r->size = end;
touch:
	inode_touch(r, !(mode & FALLOC_FL_KEEP_SIZE) || (mode & FALLOC_FL_PUNCH_HOLE), true);
	in->dirty = true;
	rc = inode_persist(fs, in, false);
out:
	inode_unlock(fs, in);
	inode_put(fs, in);
	return rc;
}

int fs_fsync(struct fs *fs, uint64_t ino, bool datasync)
{
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in)
		return rc;
	inode_lock(fs, in);
	struct inode_data *d = in->data;
	rc = 0;
	/* Each dirty chunk file is opened once (its record needs no check: a
	 * dropped chunk's file is gone).  Writeback of all of them starts
	 * first, so their blocks are allocated in one journal transaction and
	 * written together; the fdatasyncs then mostly wait. */
	int *fds = d && d->ndirty ? malloc(d->ndirty * sizeof(int)) : NULL;
	if (d && d->ndirty && !fds)
		rc = -ENOMEM;
	for (size_t i = 0; fds && i < d->ndirty; i++) {
		uint32_t section = chunk_section(ino, d->dirty[i], fs->info.sections);
		char rel[96];
		chunk_rel(ino, d->dirty[i], section, rel, sizeof(rel));
		fds[i] = openat(section_dirfd(fs, section), rel, O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0)
			fds[i] = -errno;
		else if (d->ndirty > 1)
			(void)sync_file_range(fds[i], 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint only */
	}
	for (size_t i = 0; fds && i < d->ndirty; i++) {
		if (fds[i] == -ENOENT) /* dropped since it was written */
			continue;
		if (fds[i] < 0) {
			fs_logf(fs, "inode %llu: opening chunk %llu for fsync: %s",
				(unsigned long long)ino, (unsigned long long)d->dirty[i],
				strerror(-fds[i]));
			if (!rc)
				rc = fds[i];
			continue;
		}
		if (!rc)
			stats_fsync(fs, disk_of_chunk(fs, ino, d->dirty[i]));
		if (!rc && fdatasync(fds[i]) != 0) {
			rc = -errno;
			fs_logf(fs, "inode %llu: fsync of chunk %llu: %s", (unsigned long long)ino,
				(unsigned long long)d->dirty[i], strerror(errno));
		}
		close(fds[i]);
	}
	free(fds);
	/* New chunk files need their directory entries durable too. */
	for (size_t i = 0; d && !rc && i < d->nnew; i++) {
		char sdir[16];
		snprintf(sdir, sizeof(sdir), "%" PRIu64, d->new_sections[i]);
		int fd = openat(section_dirfd(fs, (uint32_t)d->new_sections[i]), sdir,
				O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		stats_fsync(fs, fs->section_disk[d->new_sections[i]]);
		if (fd < 0 || fsync(fd) != 0)
			rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	if (!rc && d) {
		d->ndirty = 0;
		d->nnew = 0;
	}
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
	pthread_mutex_lock(&fs->itab_lock);
	in->nopen++;
	pthread_mutex_unlock(&fs->itab_lock);
	inode_put(fs, in);
	return 0;
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
		if (in->nopen == 0) /* not reopened meanwhile */
			data_close_fds(fs, in);
		inode_unlock(fs, in);
	}
	inode_put(fs, in);
	return rc;
}

int fs_statfs(struct fs *fs, struct statvfs *out)
{
	memset(out, 0, sizeof(*out));
	const uint64_t bs = 4096;
	uint64_t blocks = 0, bfree = 0, bavail = 0;
	for (uint32_t d = 0; d < fs->ds->ndisks; d++) {
		struct statvfs sv;
		if (fstatvfs(fs->sections_fd[d], &sv) != 0)
			return -errno;
		blocks += (uint64_t)sv.f_blocks * sv.f_frsize / bs;
		bfree += (uint64_t)sv.f_bfree * sv.f_frsize / bs;
		bavail += (uint64_t)sv.f_bavail * sv.f_frsize / bs;
	}
	out->f_bsize = bs;
	out->f_frsize = bs;
	out->f_blocks = blocks;
	out->f_bfree = bfree;
	out->f_bavail = bavail;
	pthread_mutex_lock(&fs->ino_lock);
	uint64_t used = fs->next_ino;
	pthread_mutex_unlock(&fs->ino_lock);
	/* Inodes are keys: the limit is space, shown as a large pool. */
	out->f_files = (fsfilcnt_t)1 << 32;
	out->f_ffree = used < out->f_files ? out->f_files - used : 0;
	out->f_favail = out->f_ffree;
	out->f_namemax = NAME_MAX_BYTES;
	out->f_fsid = sc_get_le64(fs->info.fs_uuid);
	return 0;
}
