/*
 * space.c: free space as the placement of chunks sees it (SCHEMA.md, "Free
 * space"): what statfs reports and what fallocate checks before any work.
 *
 * A chunk's disk is fixed by a hash (SCHEMA.md, "Sharding"), not chosen by
 * free space: once one disk is full, every chunk hashed to it fails with
 * ENOSPC however much room the others have.  So the room for data is not
 * the sum of the disks' free space.  Disks are taken in groups, one per
 * backing filesystem (disks that are directories of one filesystem share
 * its space), each with the share of the sections it holds:
 *
 *   - statfs's f_bavail is the most a new file (or files) can take before
 *     one group fills, with a margin for the spread of a hash: n chunks put
 *     a number of them on a group holding share p of the sections that
 *     varies by sqrt(n p (1 - p)); f_bavail is the largest n with
 *     n p + 3 sqrt(n p (1 - p)) chunks fitting each group's free space
 *     (all of it for a single disk).  f_blocks and f_bfree are the disks'
 *     own, so that df's "used" is what the disks hold.
 *   - fallocate knows its chunks: each group must have room for the bytes
 *     of the range that hash to it (less what the file holds already).
 *
 * Disks not present hold no room; sections on them are not counted (their
 * chunks fail with EIO whatever the space).  Reads the section map with
 * section_disk_of (atomics): a move under way makes the figure approximate.
 */
#include "data.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

/* The spread a statfs figure leaves room for, in standard deviations. */
#define SPACE_SIGMAS 3.0

struct space_group {
	dev_t dev;
	uint64_t blocks, bfree, bavail; /* bytes */
	uint64_t sections;
};

struct space {
	struct space_group g[LSMFS_MAX_DISKS];
	uint32_t n;
	uint32_t group_of[LSMFS_MAX_DISKS]; /* disk -> group, UINT32_MAX: not present */
};

static int space_read(struct fs *fs, struct space *sp)
{
	memset(sp, 0, sizeof(*sp));
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++)
		sp->group_of[d] = UINT32_MAX;
	for (uint32_t d = 0; d < fs->ds->ndisks && d < LSMFS_MAX_DISKS; d++) {
		if (!diskset_present(fs->ds, d))
			continue;
		struct stat st;
		if (fstat(fs->sections_fd[d], &st) != 0)
			return -errno;
		uint32_t i = 0;
		while (i < sp->n && sp->g[i].dev != st.st_dev)
			i++;
		sp->group_of[d] = i;
		if (i < sp->n)
			continue;
		struct statvfs sv;
		if (fstatvfs(fs->sections_fd[d], &sv) != 0)
			return -errno;
		struct space_group *g = &sp->g[sp->n++];
		g->dev = st.st_dev;
		g->blocks = (uint64_t)sv.f_blocks * sv.f_frsize;
		g->bfree = (uint64_t)sv.f_bfree * sv.f_frsize;
		g->bavail = (uint64_t)sv.f_bavail * sv.f_frsize;
	}
	for (uint32_t s = 0; s < fs->info.sections; s++) {
		uint32_t d = section_disk_of(fs, s);
		if (d < LSMFS_MAX_DISKS && sp->group_of[d] != UINT32_MAX)
			sp->g[sp->group_of[d]].sections++;
	}
	return 0;
}

/* The most chunks n with n p + SIGMAS sqrt(n p (1 - p)) <= f: a quadratic
 * in sqrt(n). */
static double chunks_that_fit(double f, double p)
{
	if (p >= 1.0)
		return f;
	double s = SPACE_SIGMAS * sqrt(p * (1.0 - p));
	double x = (-s + sqrt(s * s + 4.0 * p * f)) / (2.0 * p);
	return x * x;
}

int fs_statfs(struct fs *fs, struct statvfs *out)
{
	memset(out, 0, sizeof(*out));
	const uint64_t bs = 4096;
	struct space sp;
	int rc = space_read(fs, &sp);
	if (rc)
		return rc;
	uint64_t blocks = 0, bfree = 0, bavail = 0;
	double cs = (double)fs->info.chunk_size, fit = -1.0;
	for (uint32_t i = 0; i < sp.n; i++) {
		blocks += sp.g[i].blocks;
		bfree += sp.g[i].bfree;
		bavail += sp.g[i].bavail;
		if (!sp.g[i].sections)
			continue; /* no chunk goes there */
		double n = chunks_that_fit((double)sp.g[i].bavail / cs,
					   (double)sp.g[i].sections / fs->info.sections);
		if (fit < 0 || n < fit)
			fit = n;
	}
	/* Placement can only lower the figure; with no group holding a
	 * section (every disk missing) there is no room for data. */
	double placed = fit < 0 ? 0.0 : fit * cs;
	if (placed < (double)bavail)
		bavail = (uint64_t)placed;
	out->f_bsize = bs;
	out->f_frsize = bs;
	out->f_blocks = blocks / bs;
	out->f_bfree = bfree / bs;
	out->f_bavail = bavail / bs;
	pthread_mutex_lock(&fs->ino_lock);
	uint64_t used = fs->next_ino;
	pthread_mutex_unlock(&fs->ino_lock);
	/* Inodes are keys: the limit is space, shown as a large pool. */
	out->f_files = (fsfilcnt_t)1 << 32;
	out->f_ffree = used < out->f_files ? out->f_files - used : 0;
	out->f_favail = out->f_ffree;
	out->f_namemax = NAME_MAX_BYTES;
	out->f_fsid = get_le64(fs->info.fs_uuid);
	return 0;
}

int space_check(struct fs *fs, uint64_t ino, uint64_t off, uint64_t end, uint64_t have)
{
	struct space sp;
	int rc = space_read(fs, &sp);
	if (rc)
		return rc;
	uint64_t need[LSMFS_MAX_DISKS] = {0}, avail = 0;
	for (uint32_t i = 0; i < sp.n; i++)
		avail += sp.g[i].bavail;
	/* More than all the disks hold: no need to look at each chunk (and
	 * the loop below is as long as the allocation's own). */
	if (end - off > avail + have)
		return -ENOSPC;
	struct chunk_iter it;
	for (chunk_iter_init(&it, fs->info.chunk_size, off, end); chunk_iter_valid(&it);
	     chunk_iter_next(&it)) {
		uint32_t d = section_disk_of(fs, chunk_section(ino, it.chunk, fs->info.sections));
		if (d < LSMFS_MAX_DISKS && sp.group_of[d] != UINT32_MAX)
			need[sp.group_of[d]] += it.n;
	}
	for (uint32_t i = 0; i < sp.n; i++)
		if (need[i] > sp.g[i].bavail + have)
			return -ENOSPC;
	return 0;
}
