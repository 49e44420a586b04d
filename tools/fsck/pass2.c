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

/* The type an inode's other keys say it has: its entries' type (when they
 * agree), else a regular file when it has data, a directory when it has
 * entries, else 0 (nothing tells). */
static uint32_t evident_type(struct fsck *f, const struct fsck_inode *in)
{
	uint32_t m = (uint32_t)fsck_entries_type(f, in->ino) << 12; /* DT_* are S_IF* >> 12 */
	if (m && valid_type(m))
		return m;
	if (in->nchunks || in->inline_len >= 0)
		return S_IFREG;
	return fsck_has_children(f, in->ino) ? S_IFDIR : 0;
}

/* A chunked file's size from its last chunk file; without it, the end of
 * its last chunk. */
static uint64_t size_from_chunks(struct fsck *f, uint64_t ino)
{
	uint64_t last = 0;
	uint32_t section = 0;
	for (size_t i = 0; i < f->nchunks; i++)
		if (f->chunks[i].ino == ino && f->chunks[i].chunk >= last) {
			const struct fsck_chunk *c = &f->chunks[i];
			last = c->chunk;
			/* its first copy that holds data */
			unsigned copy = c->copies > 1 && (c->stale & 1) ? 1 : 0;
			section = section_of_copy(c->section, copy, f->info.sections);
		}
	char file[LSMFS_META_PATH_MAX + 160];
	struct stat st;
	uint64_t cs = f->info.chunk_size;
	if (fsck_chunk_file(f, ino, last, section, file, sizeof(file)) == 0 && stat(file, &st) == 0 &&
	    (uint64_t)st.st_size <= cs)
		return last * cs + (uint64_t)st.st_size;
	return (last + 1) * cs;
}

/* Keys of an inode that has no record (lost with a damaged table, say):
 * a new record of the type they show, owned by root and private, that
 * passes 3 and 4 then name and count.  With nothing to show a type (only
 * xattrs, or only an orphan mark), the keys go. */
static int rebuild_inode(struct fsck *f, struct fsck_inode *in)
{
	uint32_t type = evident_type(f, in);
	if (!type || (type == S_IFLNK && in->inline_len <= 0))
		return fsck_clear_inode(f, in);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct inode_rec *r = &in->rec;
	memset(r, 0, sizeof(*r));
	r->mode = type | (type == S_IFDIR ? 0700 : 0600);
	r->nlink = type == S_IFDIR ? 2 : 1;
	r->generation = 1;
	r->atime_sec = r->mtime_sec = r->ctime_sec = r->btime_sec = now.tv_sec;
	if (in->xattrs)
		r->flags |= INODE_FLAG_XATTR;
	if (S_ISREG(type) && in->nchunks) {
		r->flags |= INODE_FLAG_CHUNKED;
		r->size = size_from_chunks(f, in->ino);
	} else if ((S_ISREG(type) || S_ISLNK(type)) && in->inline_len > 0) {
		r->size = (uint64_t)in->inline_len;
	}
	r->blocks = (r->size + 511) / 512;
	in->rec_ok = true;
	in->rec_bad = false;
	int rc = fsck_put_inode(f, in);
	if (rc)
		in->rec_ok = false;
	return rc;
}

static void check_inode(struct fsck *f, struct fsck_inode *in)
{
	uint64_t ino = in->ino;
	if (!in->rec_ok) {
		/* No record, or one that does not decode: what the inode's
		 * other keys show decides (see rebuild_inode). */
		bool keys = in->inline_len >= 0 || in->nchunks || in->xattrs || in->orphan;
		const char *act = evident_type(f, in) ? "make a new record from what its keys show"
						      : "remove it and its keys";
		if (in->rec_bad) {
			if (problem_fix(f, PR_INODE_BAD_RECORD,
					&(struct problem_ctx){.ino = ino, .str = act}))
				fsck_repaired(f, rebuild_inode(f, in));
		} else if (keys && problem_fix(f, PR_KEY_NO_INODE,
					       &(struct problem_ctx){.ino = ino, .str = act})) {
			fsck_repaired(f, rebuild_inode(f, in));
		}
		if (!in->rec_ok)
			return;
	}
	struct inode_rec *r = &in->rec;
	if (!valid_type(r->mode)) {
		uint32_t t = evident_type(f, in);
		char what[64];
		snprintf(what, sizeof(what), t ? "make it a %s" : "nothing shows its type: clear it",
			 fsck_type_name(t));
		if (problem_fix(f, PR_INODE_BAD_TYPE,
				&(struct problem_ctx){.ino = ino, .num = r->mode, .str = what})) {
			if (t) {
				r->mode = t | (r->mode & 07777);
				fsck_repaired(f, fsck_put_inode(f, in));
			} else {
				fsck_repaired(f, fsck_clear_inode(f, in));
				return;
			}
		}
	}
	struct problem_ctx pc = {.ino = ino, .mode = r->mode};
	if ((r->flags & ~(uint8_t)(INODE_FLAG_CHUNKED | INODE_FLAG_XATTR)) &&
	    problem_fix(f, PR_INODE_BAD_FLAGS, &(struct problem_ctx){.ino = ino, .num = r->flags})) {
		r->flags &= INODE_FLAG_CHUNKED | INODE_FLAG_XATTR;
		fsck_repaired(f, fsck_put_inode(f, in));
	}
	if (in->xattrs && !(r->flags & INODE_FLAG_XATTR) && problem_fix(f, PR_XATTR_FLAG, &pc)) {
		in->rec.flags |= INODE_FLAG_XATTR;
		fsck_repaired(f, fsck_put_inode(f, in));
	}
	if (in->orphan && r->nlink == 0) {
		/* As the daemon's mount would: nobody holds it open now. */
		if (problem_fix(f, PR_ORPHAN_PENDING, &pc))
			fsck_repaired(f, fsck_clear_inode(f, in));
		if (!in->rec_ok)
			return;
	}
	if (S_ISREG(r->mode)) {
		f->files++;
		f->bytes += r->size;
		if (r->flags & INODE_FLAG_CHUNKED) {
			/* the flag says where the bytes are: inline data is never read */
			if (in->inline_len >= 0 &&
			    problem_fix(f, PR_INLINE_AND_CHUNKS,
					&(struct problem_ctx){.ino = ino, .str = "chunked",
							      .str2 = "inline data"}))
				fsck_repaired(f, fsck_drop_data(f, in, true, false));
		} else {
			if (in->nchunks &&
			    problem_fix(f, PR_INLINE_AND_CHUNKS,
					&(struct problem_ctx){.ino = ino, .str = "inline",
							      .str2 = "chunk records (their files go to /lost+found)"}))
				fsck_repaired(f, fsck_drop_data(f, in, false, true));
			if (in->inline_len > (int64_t)r->size &&
			    problem_fix(f, PR_INLINE_TOO_LONG,
					&(struct problem_ctx){.ino = ino, .num = r->size,
							      .snum = in->inline_len})) {
				/* bytes past the size are never read: cut them */
				fsck_repaired(f, fsck_trim_inline(f, ino, r->size));
				in->inline_len = (int64_t)r->size;
			}
			if (r->size > f->info.inline_max &&
			    problem_fix(f, PR_INLINE_OVER_LIMIT,
					&(struct problem_ctx){.ino = ino, .num = r->size,
							      .num2 = f->info.inline_max}))
				fsck_repaired(f, fsck_inline_to_chunks(f, in));
		}
	} else if (S_ISLNK(r->mode)) {
		f->others++;
		if ((in->inline_len != (int64_t)r->size || r->size == 0)) {
			bool target = in->inline_len > 0;
			if (problem_fix(f, PR_SYMLINK_TARGET,
					&(struct problem_ctx){.ino = ino, .num = r->size,
							      .snum = in->inline_len,
							      .str = target ? "set the size to the target's"
									    : "clear it"})) {
				if (target) {
					r->size = (uint64_t)in->inline_len;
					fsck_repaired(f, fsck_put_inode(f, in));
				} else {
					fsck_repaired(f, fsck_clear_inode(f, in));
					return;
				}
			}
		}
		if (in->nchunks &&
		    problem_fix(f, PR_DATA_ON_NONFILE,
				&(struct problem_ctx){.ino = ino, .mode = r->mode, .str = "chunk records"}))
			fsck_repaired(f, fsck_drop_data(f, in, false, true));
	} else {
		if (S_ISDIR(r->mode))
			f->dirs++;
		else
			f->others++;
		if ((in->inline_len >= 0 || in->nchunks) &&
		    problem_fix(f, PR_DATA_ON_NONFILE,
				&(struct problem_ctx){.ino = ino, .mode = r->mode, .str = "data keys"}))
			fsck_repaired(f, fsck_drop_data(f, in, true, true));
	}
	if (in->orphan && r->nlink > 0 &&
	    problem_fix(f, PR_ORPHAN_LINKED, &(struct problem_ctx){.ino = ino, .num = r->nlink})) {
		uint8_t k[KEY_MAX];
		fsck_repaired(f, fsck_del_key(f, k, key_orphan(k, ino)));
		in->orphan = false;
	}
}

/* The inode counter must lie above every inode in use, or the daemon
 * would hand out a number twice. */
static void check_counter(struct fsck *f)
{
	uint64_t max = LSMFS_LOST_FOUND_INO;
	for (size_t i = 0; i < f->icap; i++)
		if (f->inodes[i].ino > max)
			max = f->inodes[i].ino;
	if (f->next_ino && max < f->next_ino)
		return;
	if (problem_fix(f, PR_INODE_ABOVE_COUNTER,
			&(struct problem_ctx){.str = f->next_ino ? "too low" : "missing", .ino = max,
					      .num = f->next_ino, .num2 = max + 1}))
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
		uint64_t c = f->chunks[i].chunk, first = c * f->info.chunk_size;
		if (first < in->rec.size ||
		    !problem_fix(f, PR_CHUNK_PAST_EOF,
				 &(struct problem_ctx){.ino = in->ino, .chunk = c, .num = in->rec.size}))
			continue;
		/* the file, then its record: a crash between leaves a missing
		 * chunk past EOF, which the next run drops too */
		uint8_t k[KEY_MAX];
		int rc = fsck_unlink_chunk(f, &f->chunks[i]);
		if (rc == 0)
			rc = fsck_del_key(f, k, key_chunk(k, in->ino, c));
		fsck_repaired(f, rc);
		if (rc == 0) {
			f->chunks[i--] = f->chunks[--f->nchunks]; /* re-sorted in pass 5 */
			in->nchunks--;
		}
	}
}
