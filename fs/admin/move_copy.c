/*
 * move_copy.c: the parts of a section move (move.c) that work on one chunk
 * file: copying it to the target disk with its holes kept (copy_file_range,
 * or plain reads when evacuating, so that a failing read is known), and,
 * evacuating a failing disk, what could not be read: recorded lost, its
 * file kept aside in <disk>/.lsmfs/evacuated/ (SCHEMA.md "Evacuating").
 * Also the mover's messages and progress reports.  Runs in the mover's
 * thread, inside the section's gate tracking (gate.c); takes no lock.
 */
#include "engine.h"
#include "admin.h"
#include "move_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


static struct move_lost *lost_find(struct mover *mv, uint64_t ino, uint64_t chunk)
{
	for (size_t i = 0; i < mv->nlost; i++)
		if (mv->lost[i].ino == ino && mv->lost[i].chunk == chunk)
			return &mv->lost[i];
	return NULL;
}

/* A chunk read again (or gone) is no longer lost. */
static void lost_drop(struct mover *mv, const char *name)
{
	uint64_t ino, chunk;
	struct move_lost *l;
	if (mv->nlost && section_chunk_parse(name, &ino, &chunk) && (l = lost_find(mv, ino, chunk))) {
		move_unkeep(mv, l);
		*l = mv->lost[--mv->nlost];
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void move_say(struct mover *mv, bool always)
{
	uint64_t t = now_ns();
	if (!mv->report || mv->frozen || (!always && t - mv->last_report_ns < 200000000u))
		return;
	mv->last_report_ns = t;
	mv->report(mv->ctx, &mv->p);
}

void move_set_err(struct mover *mv, const char *fmt, ...)
{
	if (!mv->err || mv->err[0])
		return; /* the first reason stands */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(mv->err, mv->errlen, fmt, ap);
	va_end(ap);
}

/* <disk>/.lsmfs/sections/<s> of section s on disk d, for messages. */
void move_dir_path(struct fs *fs, uint32_t d, uint32_t s, char *out, size_t cap)
{
	char root[LSMFS_META_PATH_MAX + 64], name[SECTION_NAME_MAX];
	section_disk_dir(fs->ds->paths[d], root, sizeof(root));
	section_dir_name(s, name);
	snprintf(out, cap, "%s/%s", root, name);
}

/* "disk D: <what> <its copy of chunk file name>: <err>" into mv->err. */
void move_file_err(struct mover *mv, uint32_t d, const char *what, const char *name, int err)
{
	char dir[LSMFS_META_PATH_MAX + 128];
	move_dir_path(mv->fs, d, mv->m.section, dir, sizeof(dir));
	move_set_err(mv, "disk %u: %s %s/%s: %s", d, what, dir, name, strerror(err));
}

/* Copy [from, to) of in to out at the same offsets; *reading says a
 * failure was the source's (only known for plain copies: copy_file_range
 * does not say, and evacuating copies plainly). */
static int copy_range(struct mover *mv, int in, int out, off_t from, off_t to, bool *reading)
{
	bool plain = mv->evacuate;
	*reading = false;
	while (from < to) {
		if (__atomic_load_n(&mv->fs->move_cancel, __ATOMIC_ACQUIRE))
			return -ECANCELED;
		size_t want = (size_t)(to - from);
		ssize_t n;
		if (!plain) {
			loff_t a = from, b = from;
			n = copy_file_range(in, &a, out, &b, want, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
				      errno == EOPNOTSUPP || errno == EBADF)) {
				plain = true; /* across filesystems on older kernels */
				continue;
			}
		} else {
			if (want > COPY_BUF)
				want = COPY_BUF;
			n = pread(in, mv->buf, want, from);
			*reading = n < 0;
			if (n > 0) {
				ssize_t w = 0;
				while (w < n) {
					ssize_t k = pwrite(out, mv->buf + w, (size_t)(n - w), from + w);
					if (k < 0 && errno == EINTR)
						continue;
					if (k <= 0)
						return k < 0 ? -errno : -EIO;
					w += k;
				}
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* the file got shorter meanwhile: a change, copied again */
		from += n;
		mv->p.bytes_done += (uint64_t)n;
		move_say(mv, false);
	}
	return 0;
}

/*
 * The space fallocate reserved in in (unwritten extents, which SEEK_DATA
 * skips as holes) reserved alike in out, so that a write a preallocation
 * promised room for finds it after the move too.  Where the source cannot
 * say (no FIEMAP: tmpfs, FUSE) nothing is done; only space is at stake,
 * never bytes.  0, or out's fallocate error.
 */
static int keep_unwritten(int in, int out)
{
	enum { EXTENTS = 32 };
	uint64_t buf[(sizeof(struct fiemap) + EXTENTS * sizeof(struct fiemap_extent)) / 8 + 1];
	struct fiemap *fm = (struct fiemap *)buf;
	uint64_t start = 0;
	for (;;) {
		memset(buf, 0, sizeof(buf));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_extent_count = EXTENTS;
		if (ioctl(in, FS_IOC_FIEMAP, fm) != 0 || !fm->fm_mapped_extents)
			return 0;
		for (uint32_t i = 0; i < fm->fm_mapped_extents; i++) {
			const struct fiemap_extent *e = &fm->fm_extents[i];
			if ((e->fe_flags & FIEMAP_EXTENT_UNWRITTEN) &&
			    fallocate(out, FALLOC_FL_KEEP_SIZE, (off_t)e->fe_logical,
				      (off_t)e->fe_length) != 0)
				return errno == EOPNOTSUPP ? 0 : -errno; /* a target without it */
			uint64_t next = e->fe_logical + e->fe_length;
			if ((e->fe_flags & FIEMAP_EXTENT_LAST) || next <= start)
				return 0;
			start = next;
		}
	}
}

/* Open the source's copy of chunk file name: through the section's
 * directory, or, when that could not be opened (evacuating), by path. */
static int open_source(struct mover *mv, const char *name)
{
	int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC;
	if (mv->src_dir >= 0)
		return openat(mv->src_dir, name, flags);
	char rel[SECTION_NAME_MAX + 64], dir[SECTION_NAME_MAX];
	section_dir_name(mv->m.section, dir);
	snprintf(rel, sizeof(rel), "%s/%s", dir, name);
	return openat(mv->fs->sections_fd[mv->m.from], rel, flags);
}

/* An error of the medium (or of the filesystem or server behind it), which
 * an evacuation takes as the chunk lost; any other (no fds, no memory) is
 * this process's, and fails the move as always. */
bool move_media_error(int err)
{
	switch (err) {
	case EIO: case EUCLEAN: case EBADMSG: case ENODATA: case ESTALE: case ENOTCONN:
	case EREMOTEIO: case ETIMEDOUT: case EHOSTDOWN: case EHOSTUNREACH:
		return true;
	default:
		return false;
	}
}

/*
 * Evacuating: the source's copy of chunk file name cannot be read (err).
 * What the target has of it goes, and the chunk is listed as lost with
 * size bytes (0: not known, the whole chunk).  0, or the target's error.
 */
static int unreadable(struct mover *mv, const char *name, uint64_t size, int err)
{
	uint64_t ino, chunk;
	if (unlinkat(mv->dst_dir, name, 0) != 0 && errno != ENOENT) {
		int rc = -errno;
		move_file_err(mv, mv->m.to, "removing", name, -rc);
		return rc;
	}
	char dir[LSMFS_META_PATH_MAX + 128];
	move_dir_path(mv->fs, mv->m.from, mv->m.section, dir, sizeof(dir));
	fs_logf(mv->fs, "disk %u: reading %s/%s: %s (evacuating: the chunk is lost)", mv->m.from,
		dir, name, strerror(err));
	if (!section_chunk_parse(name, &ino, &chunk))
		return 0; /* names come from the listing: cannot happen */
	struct move_lost *l = lost_find(mv, ino, chunk);
	if (!l) {
		if (mv->nlost == mv->caplost) {
			size_t nc = mv->caplost ? mv->caplost * 2 : 16;
			struct move_lost *g = realloc(mv->lost, nc * sizeof(*g));
			if (!g) {
				move_set_err(mv, "out of memory listing the chunks that cannot be read");
				return -ENOMEM;
			}
			mv->lost = g;
			mv->caplost = nc;
		}
		l = &mv->lost[mv->nlost++];
	}
	*l = (struct move_lost){.ino = ino, .chunk = chunk, .err = err,
				.bytes = size ? size : mv->fs->info.chunk_size};
	return 0;
}

/*
 * Copy chunk file name from the source directory to the target, holes and preallocated space kept,
 * durably with sync (else its writeback is started, and sync_copies makes
 * it durable).  1 when the source is gone (the target's copy is removed too),
 * 0 when copied (or, evacuating, found unreadable), or a negative errno (the
 * message in mv->err names the file and says which side failed).
 */
/*
 * A move onto the disk of the section's partner would put both copies of
 * a chunk that has two live ones on one disk (SCHEMA.md "Copies"): such a
 * move is refused, -EXDEV (rolled back), and lsmfs-disk leaves the
 * section where it is.  0 when name is not such a chunk's file.
 */
static int refuse_double(struct mover *mv, const char *name)
{
	struct fs *fs = mv->fs;
	uint64_t ino, chunk;
	struct chunk_place pl;
	if (!section_chunk_parse(name, &ino, &chunk) || chunk_where(fs, ino, chunk, &pl, NULL) != 1 ||
	    pl.copies < 2 || pl.stale)
		return 0;
	move_set_err(mv, "section %" PRIu32 " holds a copy of inode %" PRIu64 " chunk %" PRIu64
		     " whose other copy is on disk %" PRIu32 " (its partner section's): the two "
		     "copies would be on one disk", mv->m.section, ino, chunk, mv->m.to);
	return -EXDEV;
}

int move_copy_chunk(struct mover *mv, const char *name, bool sync)
{
	struct fs *fs = mv->fs;
	if (mv->doubles) {
		int r = refuse_double(mv, name);
		if (r)
			return r;
	}
	int in = open_source(mv, name);
	if (in < 0 && errno == ENOENT) {
		if (unlinkat(mv->dst_dir, name, 0) != 0 && errno != ENOENT) {
			int rc = -errno;
			move_file_err(mv, mv->m.to, "removing", name, -rc);
			return rc;
		}
		lost_drop(mv, name);
		/* Evacuating, a file whose record says it held bytes (a
		 * damaged directory, or a list from the records) is lost,
		 * and said so. */
		uint64_t ino, chunk, durable = 0;
		bool gone = false; /* lost with an earlier disk: said then, and marked */
		if (mv->evacuate && section_chunk_parse(name, &ino, &chunk) &&
		    chunk_record_get(fs, ino, chunk, &durable, &gone) == 1 && durable && !gone)
			return unreadable(mv, name, durable, ENOENT);
		return 1;
	}
	if (in < 0) {
		int rc = -errno;
		if (mv->evacuate && move_media_error(-rc))
			return unreadable(mv, name, 0, -rc);
		move_file_err(mv, mv->m.from, "opening", name, -rc);
		return rc;
	}
	int rc = 0;
	struct stat st;
	int out = -1;
	bool reading = true;
	if (fstat(in, &st) != 0) {
		rc = -errno;
		st.st_size = 0;
		goto src_fail;
	}
	out = openat(mv->dst_dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto dst_fail;
	}
	off_t pos = 0;
	while (pos < st.st_size) {
		reading = true;
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* a hole to the end */
		if (data < 0) {
			rc = -errno;
			goto src_fail;
		}
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0) {
			rc = -errno;
			goto src_fail;
		}
		if ((rc = copy_range(mv, in, out, data, hole, &reading))) {
			if (mv->evacuate && rc != -ECANCELED)
				goto src_fail; /* plain copies: the side is known */
			goto either_fail;
		}
		pos = hole;
	}
	if (ftruncate(out, st.st_size) != 0 || (rc = keep_unwritten(in, out)) ||
	    (sync && fdatasync(out) != 0)) {
		rc = rc ? rc : -errno;
		goto dst_fail;
	}
	if (sync)
		stats_fsync(fs, mv->m.to);
	else
		(void)sync_file_range(out, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint only */
	close(out);
	close(in);
	mv->p.files_done++;
	lost_drop(mv, name);
	return 0;
src_fail:
	if (!reading)
		goto dst_fail;
	if (mv->evacuate && move_media_error(-rc)) {
		if (out >= 0)
			close(out);
		close(in);
		mv->p.files_done++;
		return unreadable(mv, name, (uint64_t)st.st_size, -rc);
	}
	move_file_err(mv, mv->m.from, "reading", name, -rc);
	goto out;
dst_fail:
	move_file_err(mv, mv->m.to, "writing", name, -rc);
	goto out;
either_fail: {
	char path[LSMFS_META_PATH_MAX + 128];
	move_dir_path(fs, mv->m.from, mv->m.section, path, sizeof(path));
	move_set_err(mv, "copying %s/%s to disk %u (%s): %s", path, name, mv->m.to,
		fs->ds->paths[mv->m.to], strerror(-rc));
}
out:
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

/* <disk d>/.lsmfs/evacuated, made if it is not there: an fd, or -errno. */
static int evacuated_open(struct fs *fs, uint32_t d)
{
	char path[LSMFS_META_PATH_MAX + 64];
	section_evacuated_dir(fs->ds->paths[d], path, sizeof(path));
	if (mkdir(path, 0700) == 0) {
		char top[LSMFS_META_PATH_MAX + 64];
		snprintf(top, sizeof(top), "%s/%s", fs->ds->paths[d], LSMFS_DIR);
		int rc = lsmfs_fsync_dir(top);
		if (rc)
			return rc;
	} else if (errno != EEXIST) {
		return -errno;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Whether name in directory fd and rel under the sections directory of
 * disk d are the same file. */
static bool same_file(int fd, const char *name, struct fs *fs, uint32_t d, const char *rel)
{
	struct stat a, b;
	return fstatat(fd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 &&
	       fstatat(fs->sections_fd[d], rel, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* Evacuating, before the switch: each file of a chunk that could not be
 * read gets a second name, synced, in the failing disk's
 * .lsmfs/evacuated/ (a hard link: the section keeps its own until its old
 * copy goes, whenever that is, crash or not), kept for whoever tries to
 * recover it and out of fsck's way: <ino>.<chunk>, or <ino>.<chunk>.<n>
 * when an earlier evacuation kept another file under that name.  A file
 * that cannot be linked goes with the old copy. */
void move_keep_lost(struct mover *mv)
{
	bool any = false;
	for (size_t i = 0; i < mv->nlost && !any; i++)
		any = !mv->lost[i].kept;
	int fd = any ? evacuated_open(mv->fs, mv->m.from) : -1;
	bool made = false;
	for (size_t i = 0; fd >= 0 && i < mv->nlost; i++) {
		struct move_lost *l = &mv->lost[i];
		if (l->kept)
			continue;
		char rel[96];
		section_chunk_name(l->ino, l->chunk, mv->m.section, rel, sizeof(rel));
		for (int n = 0; n < 10 && !l->kept; n++) {
			if (n)
				snprintf(l->name, sizeof(l->name), "%s.%d", strchr(rel, '/') + 1, n);
			else
				snprintf(l->name, sizeof(l->name), "%s", strchr(rel, '/') + 1);
			if (linkat(mv->fs->sections_fd[mv->m.from], rel, fd, l->name, 0) == 0)
				l->kept = made = true;
			else if (errno != EEXIST)
				break;
			else /* ours already (an earlier round), or another's: kept */
				l->kept = same_file(fd, l->name, mv->fs, mv->m.from, rel);
		}
	}
	if (made && fsync(fd) != 0)
		for (size_t i = 0; i < mv->nlost; i++)
			mv->lost[i].kept = false; /* not durable: said so */
	if (fd >= 0)
		close(fd);
}

/* A chunk no longer lost (read after all, or gone), or a move rolled
 * back: the second name keep_lost gave its file goes, if it is still
 * that file's. */
void move_unkeep(struct mover *mv, struct move_lost *l)
{
	if (!l->kept)
		return;
	char path[LSMFS_META_PATH_MAX + 64], rel[96];
	section_evacuated_dir(mv->fs->ds->paths[mv->m.from], path, sizeof(path));
	section_chunk_name(l->ino, l->chunk, mv->m.section, rel, sizeof(rel));
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && same_file(fd, l->name, mv->fs, mv->m.from, rel))
		(void)unlinkat(fd, l->name, 0);
	if (fd >= 0)
		close(fd);
	l->kept = false;
}

/* Evacuating: the old copy of section s on the failing disk d could not
 * be removed (err): the directory goes to .lsmfs/evacuated/<s> (one
 * rename), out of fsck's way; if even that fails, it stays, logged. */
void move_put_aside(struct fs *fs, uint32_t d, uint32_t s, int err)
{
	char name[SECTION_NAME_MAX];
	section_dir_name(s, name);
	int fd = evacuated_open(fs, d);
	int rc = fd < 0 ? fd : renameat(fs->sections_fd[d], name, fd, name) ? -errno : 0;
	if (!rc) {
		(void)fsync(fd);
		(void)fsync(fs->sections_fd[d]);
		fs_logf(fs, "disk %u (leaving): the old copy of section %u could not be removed (%s); "
			"it is in %s/%s/%s/%s", d, s, strerror(-err), fs->ds->paths[d], LSMFS_DIR,
			LSMFS_EVACUATED_DIR, name);
	} else {
		fs_logf(fs, "disk %u (leaving): the old copy of section %u could not be removed (%s) "
			"nor put aside (%s): fsck.lsmfs reports its files while the disk is a member",
			d, s, strerror(-err), strerror(-rc));
	}
	if (fd >= 0)
		close(fd);
}
