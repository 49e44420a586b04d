/*
 * pass2.c: pass 2, inodes: each record sane for its type, the data keys
 * (inline data, chunk records, xattrs, orphan marks) agree with it, and the
 * inode counter lies above every inode in use.
 */
#include "fsck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *fsck_type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	default: return "inode of no known type";
	}
}

static bool valid_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return true;
	default:
		return false;
	}
}

static void check_inode(struct fsck *f, struct fsck_inode *in)
{
	uint64_t ino = in->ino;
	if (!in->rec_ok) {
		/* a stub: keys name an inode that has no record (or a bad one,
		 * reported while loading) */
		if (in->inline_len >= 0 || in->nchunks || in->xattrs || in->orphan)
			fsck_problem(f, PR_KEY_NO_INODE,
				     "inode %" PRIu64 ": data, chunk, xattr or orphan keys without an inode record",
				     ino);
		return;
	}
	const struct inode_rec *r = &in->rec;
	const char *tn = fsck_type_name(r->mode);
	if (!valid_type(r->mode))
		fsck_problem(f, PR_INODE_BAD_TYPE, "inode %" PRIu64 ": mode %o has no valid file type",
			     ino, (unsigned)r->mode);
	if (r->flags & ~(uint8_t)(INODE_FLAG_CHUNKED | INODE_FLAG_XATTR))
		fsck_problem(f, PR_INODE_BAD_FLAGS, "inode %" PRIu64 ": unknown flags %#x", ino,
			     (unsigned)r->flags);
	if (in->xattrs && !(r->flags & INODE_FLAG_XATTR) &&
	    fsck_problem(f, PR_XATTR_FLAG, "inode %" PRIu64 " (%s) has xattrs but not the xattr flag",
			 ino, tn)) {
		in->rec.flags |= INODE_FLAG_XATTR;
		fsck_repaired(f, fsck_put_inode(f, in));
	}
	if (S_ISREG(r->mode)) {
		f->files++;
		f->bytes += r->size;
		if (r->flags & INODE_FLAG_CHUNKED) {
			if (in->inline_len >= 0)
				fsck_problem(f, PR_INLINE_AND_CHUNKS,
					     "inode %" PRIu64 ": chunked file with inline data as well", ino);
		} else {
			if (in->nchunks)
				fsck_problem(f, PR_INLINE_AND_CHUNKS,
					     "inode %" PRIu64 ": inline file with %" PRIu64 " chunk records",
					     ino, in->nchunks);
			if (in->inline_len > (int64_t)r->size &&
			    fsck_problem(f, PR_INLINE_TOO_LONG,
					 "inode %" PRIu64 ": size %" PRIu64 " but %" PRId64
					 " bytes of inline data", ino, r->size, in->inline_len)) {
				/* bytes past the size are never read: cut them */
				fsck_repaired(f, fsck_trim_inline(f, ino, r->size));
				in->inline_len = (int64_t)r->size;
			}
			if (r->size > f->info.inline_max)
				fsck_problem(f, PR_INLINE_OVER_LIMIT,
					     "inode %" PRIu64 ": inline file of %" PRIu64
					     " bytes, over the inline limit %u", ino, r->size,
					     f->info.inline_max);
		}
	} else if (S_ISLNK(r->mode)) {
		f->others++;
		if (in->inline_len != (int64_t)r->size || r->size == 0)
			fsck_problem(f, PR_SYMLINK_TARGET,
				     "inode %" PRIu64 ": symlink of size %" PRIu64 " with a %" PRId64
				     "-byte target", ino, r->size, in->inline_len);
		if (in->nchunks)
			fsck_problem(f, PR_DATA_ON_NONFILE, "inode %" PRIu64 " (%s) has chunk records",
				     ino, tn);
	} else {
		if (S_ISDIR(r->mode))
			f->dirs++;
		else
			f->others++;
		if (in->inline_len >= 0 || in->nchunks)
			fsck_problem(f, PR_DATA_ON_NONFILE, "inode %" PRIu64 " (%s) has data keys", ino,
				     tn);
	}
	if (in->orphan && r->nlink > 0) {
		if (fsck_problem(f, PR_ORPHAN_LINKED,
				 "inode %" PRIu64 " is on the orphan list but has %u links", ino,
				 r->nlink)) {
			uint8_t k[KEY_MAX];
			fsck_repaired(f, fsck_del_key(f, k, key_orphan(k, ino)));
			in->orphan = false;
		}
	} else if (in->orphan)
		fsck_problem(f, PR_ORPHAN_PENDING,
			     "inode %" PRIu64 " (%s) is an orphan a crash left behind; the next mount reclaims it",
			     ino, tn);
}

/* The inode counter must lie above every inode in use, or the daemon
 * would hand out a number twice. */
static void check_counter(struct fsck *f)
{
	uint64_t max = LSMFS_LOST_FOUND_INO;
	for (size_t i = 0; i < f->icap; i++)
		if (f->inodes[i].ino > max)
			max = f->inodes[i].ino;
	bool fix;
	if (!f->next_ino)
		fix = fsck_problem(f, PR_INODE_ABOVE_COUNTER,
				   "the inode counter (key M next_ino) is missing; set it to %" PRIu64,
				   max + 1);
	else if (max >= f->next_ino)
		fix = fsck_problem(f, PR_INODE_ABOVE_COUNTER,
				   "inode %" PRIu64 " is at or above the inode counter %" PRIu64
				   "; raise the counter to %" PRIu64, max, f->next_ino, max + 1);
	else
		return;
	if (fix)
		fsck_repaired(f, fsck_put_next_ino(f, max + 1));
}

void fsck_pass2_inodes(struct fsck *f)
{
	uint64_t done = 0;
	check_counter(f);
	for (size_t i = 0; i < f->icap && !fsck_cancelled(f); i++) {
		if (!f->inodes[i].ino)
			continue;
		check_inode(f, &f->inodes[i]);
		if (++done % 65536 == 0)
			fsck_progress(f, 2, done, f->icount);
	}
	/* Chunks past the end of their file: chunk c holds bytes from c x size. */
	for (size_t i = 0; i < f->nchunks; i++) {
		struct fsck_inode *in = fsck_inode(f, f->chunks[i].ino);
		if (!in || !in->rec_ok || !S_ISREG(in->rec.mode))
			continue;
		uint64_t first = f->chunks[i].chunk * f->info.chunk_size;
		if (first >= in->rec.size)
			fsck_problem(f, PR_CHUNK_PAST_EOF,
				     "inode %" PRIu64 ": chunk %" PRIu64 " lies past the file's size %" PRIu64,
				     in->ino, f->chunks[i].chunk, in->rec.size);
	}
}
