/*
 * copies.c: pass 5's check of a chunk's copies (fs/SCHEMA.md "Copies").
 *
 * A chunk has one copy, or two: copy 0 in the section its record names,
 * copy 1 in that section's partner (section_of_copy), which the section
 * map keeps on another disk.  A copy the record marks stale lacks data:
 * nothing reads it, and a file of it, if there, is left alone.  So for
 * every chunk record, each copy that is not stale must have its file, at
 * least as long as the record's durable length:
 *   - a copy whose file is missing or short while another is whole is
 *     made again from the whole one (LSMFS-0517);
 *   - with no whole copy, the chunk's bytes are lost as with one copy:
 *     missing (0504), short (050E), or a hole when nothing was durable;
 *   - a stale copy (the chunk under-replicated) is made again from a
 *     whole copy on its own disk, and the record marks it whole (0518);
 *   - with --scrub, the copies are read and verified (scrub.c) before
 *     any is made from another, so that a copy is made from verified
 *     bytes (a bad block in the source rewritten from the other first);
 *   - a section and its partner on one disk put both copies of their
 *     two-copy chunks there (0519): counted per pair, said after every
 *     chunk; fsck does not move sections;
 *   - a record giving two copies to a section with no partner (0516's
 *     kin, 051A) is told before the disks are walked.
 * A copy is made durable before the record says so: the new file is
 * written beside its place, synced, renamed into place and its directory
 * synced; only then is a stale bit cleared (one synced store write), so
 * a crash between leaves a whole copy still marked stale.  Single-
 * threaded, as fsck is.
 */
#include "fsck.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fsck_copy_in(const struct fsck *f, const struct fsck_chunk *c, uint32_t s)
{
	for (unsigned i = 0; i < c->copies; i++)
		if (section_of_copy(c->section, i, f->info.sections) == s)
			return (int)i;
	return -1;
}

int fsck_unlink_chunk(struct fsck *f, const struct fsck_chunk *c)
{
	for (unsigned i = 0; i < c->copies; i++) {
		char file[LSMFS_META_PATH_MAX + 160];
		uint32_t s = section_of_copy(c->section, i, f->info.sections);
		if (fsck_chunk_file(f, c->ino, c->chunk, s, file, sizeof(file)) == 0 && unlink(file) &&
		    errno != ENOENT)
			return -errno;
	}
	return 0;
}

int fsck_copy_file(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		int e = -errno;
		close(in);
		return e;
	}
	int rc = 0;
	char *buf = malloc(1 << 20);
	if (!buf)
		rc = -ENOMEM;
	for (;;) {
		ssize_t n = rc ? 0 : read(in, buf, 1 << 20);
		if (n < 0)
			rc = -errno;
		if (n <= 0)
			break;
		for (ssize_t done = 0; done < n && !rc;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0)
				rc = -errno;
			else
				done += w;
		}
	}
	free(buf);
	if (!rc && fsync(out))
		rc = -errno;
	close(out);
	close(in);
	if (rc)
		unlink(dst);
	return rc;
}

/* Make copy t whole from copy g: a durable copy of g's file beside t's
 * place, renamed over it (a short or stale file there is replaced at
 * once), its section directory made if need be and synced. */
static int remake(struct fsck *f, const struct fsck_copy *g, const struct fsck_copy *t)
{
	char root[LSMFS_META_PATH_MAX + 64], dir[LSMFS_META_PATH_MAX + 100];
	char tmp[sizeof(t->file) + 16], name[SECTION_NAME_MAX];
	section_disk_dir(f->ds->paths[t->disk], root, sizeof(root));
	section_dir_name(t->section, name);
	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	if (mkdir(dir, 0700) == 0) {
		int rc = lsmfs_fsync_dir(root); /* a new section directory: rare */
		if (rc)
			return rc;
	} else if (errno != EEXIST) {
		return -errno;
	}
	snprintf(tmp, sizeof(tmp), "%s.fsck-tmp", t->file);
	(void)unlink(tmp); /* one a run cut short left: ours */
	int rc = fsck_copy_file(g->file, tmp);
	if (!rc && rename(tmp, t->file))
		rc = -errno;
	if (!rc)
		rc = lsmfs_fsync_dir(dir);
	if (rc)
		unlink(tmp);
	return rc;
}

/* Copy i of chunk c as it is on its disk. */
static void find_copy(struct fsck *f, const struct fsck_chunk *c, unsigned i, struct fsck_copy *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->index = i;
	cp->section = section_of_copy(c->section, i, f->info.sections);
	cp->disk = cp->section < f->info.sections ? f->section_disk[cp->section] : UINT32_MAX;
	cp->here = diskset_present(f->ds, cp->disk);
	cp->stale = c->stale >> i & 1;
	if (!cp->here)
		return;
	fsck_chunk_file(f, c->ino, c->chunk, cp->section, cp->file, sizeof(cp->file));
	struct stat st;
	if (stat(cp->file, &st) == 0) {
		cp->exists = true;
		cp->size = (uint64_t)st.st_size;
	} else if (errno != ENOENT && !cp->stale) {
		problem_fix(f, PR_CHUNK_UNREADABLE, &(struct problem_ctx){.file = cp->file, .err = errno});
	}
	cp->good = !cp->stale && cp->exists && cp->size >= c->durable;
}

/* No copy holds the chunk's durable bytes: as with one copy, the chunk
 * is lost (as its record says, or missing: 0504), a hole (nothing made
 * durable), or short (050E), judged by its longest copy p, whose record
 * length a repair lowers to what it holds (p is then whole). */
static void no_whole_copy(struct fsck *f, struct fsck_chunk *c, struct fsck_copy *p,
			  uint64_t *last_lost)
{
	char path[4096];
	if (!p->exists) {
		if (c->lost) {
			/* Lost with its disk, as the record says: it reads as EIO,
			 * which is what it must do; counted, no damage. */
			f->lost_files += *last_lost != c->ino; /* sorted by inode */
			*last_lost = c->ino;
			f->lost_chunks++;
		} else if (c->durable && problem_fix(f, PR_CHUNK_MISSING,
						     &(struct problem_ctx){
							     .ino = c->ino, .chunk = c->chunk,
							     .file = p->file, .num = c->durable,
							     .path = fsck_path_of(f, c->ino, path, sizeof(path))})) {
			/* the record goes; the bytes read as zeros either way */
			uint8_t k[KEY_MAX];
			fsck_repaired(f, fsck_del_key(f, k, key_chunk(k, c->ino, c->chunk)));
		}
		/* durable 0: nothing was made durable there: a hole, as the
		 * schema allows (a crash between the record and the file). */
		return;
	}
	if (problem_fix(f, PR_CHUNK_SHORT,
			&(struct problem_ctx){.ino = c->ino, .chunk = c->chunk, .file = p->file,
					      .num = p->size, .num2 = c->durable,
					      .path = fsck_path_of(f, c->ino, path, sizeof(path))})) {
		int rc = fsck_put_chunk_len(f, c->ino, c->chunk, p->size);
		fsck_repaired(f, rc);
		if (rc == 0) {
			c->durable = p->size;
			p->good = true;
		}
	}
}

/* Copy t, whole by its record and missing or short, made again from g
 * (away: g is on a disk not here, --degraded: only said). */
static void remake_missing(struct fsck *f, const struct fsck_chunk *c, const struct fsck_copy *t,
			   const struct fsck_copy *g)
{
	char path[4096], what[96], from[sizeof(g->file) + 64];
	if (t->exists)
		snprintf(what, sizeof(what), "%" PRIu64 " bytes, shorter than the %" PRIu64
			 " its record holds durable", t->size, c->durable);
	else
		snprintf(what, sizeof(what), "missing");
	if (g->here)
		snprintf(from, sizeof(from), "%s", g->file);
	else
		snprintf(from, sizeof(from), "in section %u, on disk %u, missing here", g->section,
			 g->disk);
	if (problem_fix(f, PR_COPY_MISSING,
			&(struct problem_ctx){.ino = c->ino, .chunk = c->chunk, .num = t->index,
					      .num2 = g->index, .file = t->file, .str = what,
					      .str2 = from,
					      .path = fsck_path_of(f, c->ino, path, sizeof(path))}))
		fsck_repaired(f, g->here ? remake(f, g, t) : -ENODEV);
}

/* Stale copy t made again from g on its own disk, then marked whole. */
static void remake_stale(struct fsck *f, struct fsck_chunk *c, const struct fsck_copy *t,
			 const struct fsck_copy *g)
{
	char path[4096];
	if (!problem_fix(f, PR_COPY_STALE,
			 &(struct problem_ctx){.ino = c->ino, .chunk = c->chunk, .num = t->index,
					       .num2 = g->index, .section = t->section,
					       .disk = t->disk, .file = g->file,
					       .path = fsck_path_of(f, c->ino, path, sizeof(path))}))
		return;
	int rc = remake(f, g, t);
	struct chunk_place pl = {.section = c->section, .copies = c->copies,
				 .stale = (uint8_t)(c->stale & ~(1u << t->index))};
	if (rc == 0)
		rc = fsck_put_chunk_place(f, c->ino, c->chunk, &pl);
	if (rc == 0) {
		c->stale = pl.stale;
		f->stale_rebuilt++;
	}
	fsck_repaired(f, rc);
}

void fsck_check_chunk(struct fsck *f, struct fsck_chunk *c, uint64_t *last_lost)
{
	struct fsck_copy cp[CHUNK_MAX_COPIES];
	unsigned n = c->copies <= CHUNK_MAX_COPIES ? c->copies : CHUNK_MAX_COPIES;
	int good = -1, away = -1, longest = -1, first = -1;
	for (unsigned i = 0; i < n; i++) {
		find_copy(f, c, i, &cp[i]);
		if (cp[i].stale) {
			f->stale_copies++;
			continue;
		}
		if (!cp[i].here) {
			if (away < 0)
				away = (int)i; /* it may be whole, unseen */
			continue;
		}
		f->chunks_per_disk[cp[i].disk]++;
		if (first < 0)
			first = (int)i;
		if (cp[i].exists && (longest < 0 || cp[i].size > cp[longest].size))
			longest = (int)i;
		if (good < 0 && cp[i].good)
			good = (int)i;
	}
	/* Two live copies on one disk: counted by section pair, said once
	 * all chunks are seen.  With one of them stale the chunk has one
	 * copy (0518 says it), as the daemon's mover sees it: it moves a
	 * section onto its partner's disk only when no chunk there has two
	 * live copies. */
	if (n == 2 && !c->stale && cp[0].disk == cp[1].disk && cp[0].disk != UINT32_MAX) {
		if (!f->pair_one_disk)
			f->pair_one_disk = calloc(f->info.sections / 2 + 1, sizeof(uint32_t));
		if (f->pair_one_disk)
			f->pair_one_disk[c->section / 2]++;
	}
	if (first < 0)
		return; /* every copy that holds data is on a disk not here */
	if (good < 0 && away < 0) {
		no_whole_copy(f, c, &cp[longest >= 0 ? longest : first], last_lost);
		/* A record length lowered to the longest copy: as long a copy
		 * is whole too. */
		for (unsigned i = 0; i < n; i++) {
			cp[i].good = !cp[i].stale && cp[i].here && cp[i].exists &&
				     cp[i].size >= c->durable;
			if (good < 0 && cp[i].good)
				good = (int)i;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if (cp[i].stale || !cp[i].exists || cp[i].size <= f->info.chunk_size ||
		    !problem_fix(f, PR_CHUNK_TOO_LONG,
				 &(struct problem_ctx){.file = cp[i].file, .num = cp[i].size,
						       .num2 = f->info.chunk_size}))
			continue;
		/* bytes past the chunk's end are never read */
		fsck_repaired(f, truncate(cp[i].file, (off_t)f->info.chunk_size) ? -errno : 0);
	}
	if (f->scrub) {
		/* The whole copies; with none, whatever is there (as one copy
		 * was always read).  A copy to be made again is not read: its
		 * bytes are about to go. */
		for (unsigned i = 0; i < n; i++)
			cp[i].read = cp[i].here && !cp[i].stale && cp[i].exists &&
				     (cp[i].good || good < 0);
		fsck_scrub_copies(f, c, cp, n);
	}
	/* The copy to make others from: whole, and read whole by a scrub. */
	int g = good;
	for (unsigned i = 0; g >= 0 && i < n; i++)
		if (cp[i].good && !cp[i].failed) {
			g = (int)i;
			break;
		}
	int from = g >= 0 ? g : away;
	for (unsigned i = 0; from >= 0 && i < n; i++) {
		if ((int)i == from || cp[i].stale || !cp[i].here || cp[i].good)
			continue;
		if (g < 0 && (!f->degraded || (!cp[i].exists && !c->durable)))
			continue; /* the copy away is not seen: it may be whole (its
				   * section's disk said in the map's problems), or
				   * this one a hole */
		remake_missing(f, c, &cp[i], &cp[from]);
	}
	for (unsigned i = 0; g >= 0 && i < n; i++)
		if (cp[i].stale && cp[i].here && cp[i].disk != cp[g].disk)
			remake_stale(f, c, &cp[i], &cp[g]); /* one disk: 0519 says it */
}

void fsck_check_copy_disks(struct fsck *f)
{
	for (uint32_t p = 0; f->pair_one_disk && p * 2 + 1 < f->info.sections; p++) {
		uint32_t n = f->pair_one_disk[p];
		if (!n)
			continue;
		problem_fix(f, PR_COPIES_ONE_DISK,
			    &(struct problem_ctx){.section = p * 2, .num = p * 2 + 1, .num2 = n,
						  .disk = f->section_disk[p * 2],
						  .str = n == 1 ? "" : "s", .str2 = n == 1 ? "has" : "have"});
	}
}

void fsck_check_copy_records(struct fsck *f)
{
	for (size_t i = 0; i < f->nchunks && !fsck_cancelled(f); i++) {
		struct fsck_chunk *c = &f->chunks[i];
		if (!c->bad_copies)
			continue;
		char path[4096];
		if (!problem_fix(f, PR_CHUNK_BAD_COPIES,
				 &(struct problem_ctx){.ino = c->ino, .chunk = c->chunk,
						       .num = c->bad_copies, .section = c->section,
						       .path = fsck_path_of(f, c->ino, path, sizeof(path))}))
			continue;
		struct chunk_place pl = {.section = c->section, .copies = 1, .stale = 0};
		int rc = fsck_put_chunk_place(f, c->ino, c->chunk, &pl);
		if (rc == 0)
			c->bad_copies = 0;
		fsck_repaired(f, rc);
	}
}
