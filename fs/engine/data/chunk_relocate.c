/*
 * chunk_relocate.c: a chunk's files moved to another section, for the
 * placement of a file already written (`lsmfs-disk convert --placement`,
 * SCHEMA.md "Placement"): its copies go to the same copies of the target
 * section (space_relocation chooses it), one chunk at a time.
 *
 * Crash-safe by order: every live copy is made in the target section
 * first (a hard link when the target is on the copy's own disk, else a
 * copy of the bytes), synced with its directory; then the record names
 * the target (synced); then the old files go.  A crash before the record
 * leaves new files its record does not name, beside the old ones it
 * does; a crash after, the old ones beside the new: in either case a
 * file in a section that is none of its record's copies', while every
 * live copy the record names has its file, is a leftover, which the
 * crash sweep removes (sweep.c) and fsck.lsmfs reports (LSMFS-051C).
 * A stale copy is not made (the record keeps it stale, for a scrub to
 * rebuild in its new section) and its old file goes with the others.
 *
 * The caller (chunk_convert) holds the inode's lock, the file drained
 * (readers and writers wait for this one chunk), its slot let go and its
 * record not in write; the gates of the old and new sections are entered
 * here as a change (a move of either copies the chunk again after it).
 * The bytes are copied as they are, not checked: their sums go with the
 * record, so damage stays found where it was.  Holes stay holes; space
 * fallocate reserved past the data is not carried (only space is at
 * stake: a later write there may find the disk full).
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

#define RELOCATE_PIECE (1u << 20)

/* Sync section's directory on its disk (a name made or removed there). */
static int sync_section_dir(struct fs *fs, uint32_t section)
{
	char name[SECTION_NAME_MAX];
	section_dir_name(section, name);
	int fd = openat(chunk_dirfd(fs, section), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd < 0 || fsync(fd) != 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The bytes of from's file into a new file at to's name (truncating a
 * leftover), synced.  *src_failed: the error was the source's. */
static int copy_file(struct fs *fs, uint32_t from, const char *frel, uint32_t to, const char *trel,
		     char *buf, uint64_t *bytes, bool *src_failed)
{
	*src_failed = true;
	int in = openat(chunk_dirfd(fs, from), frel, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	struct stat st;
	int rc = fstat(in, &st) ? -errno : 0;
	int out = -1;
	if (!rc) {
		*src_failed = false;
		out = openat(chunk_dirfd(fs, to), trel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		rc = out < 0 ? -errno : 0;
	}
	if (!rc)
		rc = copies_copy_body(in, out, (uint64_t)st.st_size, buf, RELOCATE_PIECE, false, true,
				      src_failed);
	if (!rc && fdatasync(out) != 0)
		rc = -errno;
	if (!rc)
		*bytes += (uint64_t)st.st_size;
	if (out >= 0) {
		(void)posix_fadvise(out, 0, 0, POSIX_FADV_DONTNEED); /* synced: clean pages */
		close(out);
	}
	(void)posix_fadvise(in, 0, 0, POSIX_FADV_DONTNEED);
	close(in);
	return rc;
}

/* Copy i of the chunk, in section from, made in section to: a link on one
 * disk, else a copy.  0 or -errno (logged against the disk at fault). */
static int make_at(struct fs *fs, uint64_t ino, uint64_t chunk, uint32_t from, uint32_t to,
		   char *buf, uint64_t *bytes)
{
	char frel[96], trel[96], name[SECTION_NAME_MAX];
	section_chunk_name(ino, chunk, from, frel, sizeof(frel));
	section_chunk_name(ino, chunk, to, trel, sizeof(trel));
	int tdir = chunk_dirfd(fs, to);
	section_dir_name(to, name);
	if (mkdirat(tdir, name, 0700) == 0)
		(void)fsync(tdir); /* a new section directory: rare; a failure shows below */
	int rc = -EXDEV;
	bool src_failed = false;
	if (section_disk_of(fs, from) == section_disk_of(fs, to)) {
		(void)unlinkat(tdir, trel, 0); /* a leftover of a relocation cut short */
		rc = linkat(chunk_dirfd(fs, from), frel, tdir, trel, 0) == 0 ? 0 : -errno;
		src_failed = rc == -ENOENT || rc == -EIO;
	}
	/* Disks that are not one filesystem, or one without hard links. */
	if (rc == -EXDEV || rc == -EPERM || rc == -EMLINK || rc == -EOPNOTSUPP)
		rc = copy_file(fs, from, frel, to, trel, buf, bytes, &src_failed);
	if (!rc)
		rc = sync_section_dir(fs, to);
	if (rc) {
		chunk_log_error(fs, src_failed ? from : to, src_failed ? DEVSTAT_READ : DEVSTAT_WRITE,
				src_failed ? frel : trel, "relocating its chunk ", -rc);
		(void)unlinkat(tdir, trel, 0); /* what was made of it, if anything */
	}
	return rc;
}

int chunk_relocate(struct fs *fs, struct fs_inode *in, uint64_t chunk,
		   const struct chunk_place *pl, uint32_t target, uint64_t *bytes)
{
	uint32_t n = fs->info.sections;
	struct chunk_place np = {.section = target, .copies = pl->copies, .stale = pl->stale};
	chunk_enter(fs, pl, in->ino, chunk, true);
	chunk_enter(fs, &np, in->ino, chunk, true);
	/* Chosen from the map outside the gates: a move may have put the
	 * target pair on one disk since (nothing of this chunk there to
	 * refuse it).  Inside both gates it stays where it is. */
	if (!chunk_copies_apart(fs, &np))
		return -ENOSPC;
	char *buf = malloc(RELOCATE_PIECE);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	uint8_t made = 0;
	for (unsigned i = 0; !rc && i < pl->copies; i++) {
		if (pl->stale >> i & 1)
			continue;
		rc = make_at(fs, in->ino, chunk, section_of_copy(pl->section, i, n),
			     section_of_copy(target, i, n), buf, bytes);
		if (!rc)
			made |= (uint8_t)(1u << i);
	}
	free(buf);
	if (!rc) {
		rc = chunk_set_place(fs, in, chunk, &np);
		if (rc) {
			/* The record may or may not be written: both files
			 * stay, and whichever it names is the chunk's (the
			 * other a leftover for the sweep or fsck). */
			fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": recording its new section %"
				PRIu32 ": %s", in->ino, chunk, target, strerror(-rc));
			return rc;
		}
		for (unsigned i = 0; i < pl->copies; i++)
			chunk_file_remove(fs, in->ino, chunk, section_of_copy(pl->section, i, n),
					  "removing a relocated chunk's old file ");
		return 0;
	}
	/* Not moved: what was made goes, the record still names the old. */
	for (unsigned i = 0; i < pl->copies; i++)
		if (made >> i & 1)
			chunk_file_remove(fs, in->ino, chunk, section_of_copy(target, i, n),
					  "removing a relocation's unused new file ");
	return rc;
}
