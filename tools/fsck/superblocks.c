/*
 * superblocks.c: the superblocks (part of pass 5) and which disk is which.
 *
 * Two wrongs a superblock can have, both mended by writing it again from
 * the other disks' copies with the disk's own index and UUID (super_write
 * replaces it atomically; no chunk file or store key is touched):
 *   - damaged or missing (LSMFS-050A): diskset_open (DISKSET_TOLERANT) has
 *     already placed the disk at the one index no whole superblock claims;
 *   - a valid copy of another disk's (LSMFS-050B): two disks claim one
 *     index and one index is unclaimed (DISKSET_CLASH).  Which of the two
 *     is the copy is decided here, after pass 1 and before the store is
 *     opened for writing or any later pass runs, because they find chunk
 *     files by disk index.  The evidence, for each of the two
 *     disks and each of the two indexes:
 *       - its section directories, against the store's section map;
 *       - its path, against the path in the store's disk records (K keys);
 *       - whether it holds the metadata store (when the store is disk 0's).
 *     An order is taken only when the evidence supports it and nothing
 *     contradicts it, and the other order is contradicted; otherwise
 *     LSMFS-050C says why and passes 2-5 are skipped, since checking with
 *     the wrong order would take every chunk file of the two disks for a
 *     misplaced one.
 * Single-threaded, as fsck is; the only state is struct fsck.
 */
#include "fsck.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What the disk at one path says about being disk `as` rather than disk
 * `other` (the other index of the clash). */
struct evidence {
	unsigned sections_as, sections_other; /* its section dirs the map gives to each */
	bool path_as, path_other;             /* a disk record names its path */
	bool meta_as, meta_other;             /* holding the store says it is disk 0 */
};

static bool has_meta_store(const char *disk)
{
	char meta[LSMFS_META_PATH_MAX + 64];
	struct stat st;
	snprintf(meta, sizeof(meta), "%s/%s/%s", disk, LSMFS_DIR, LSMFS_META_DIR);
	return stat(meta, &st) == 0 && S_ISDIR(st.st_mode);
}

/* What the store says about the disks, read before anything is written. */
struct store_view {
	struct store *st;
	uint32_t sections;
	uint32_t *section_disk; /* UINT32_MAX: no (readable) entry */
};

static int skip_entry(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	(void)ctx, (void)k, (void)kl, (void)v, (void)vl;
	return 0;
}

/* The store opened read-only and its section map read.  Before the passes
 * (and before fsck_load opens it for writing): with the disks unknown,
 * nothing may be written, not even what opening a store for writing
 * writes.  A store that does not open leaves only the disks' evidence. */
static void view_open(struct fsck *f, struct store_view *v)
{
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	so.create_if_missing = false;
	v->sections = f->ds->sb.sections;
	v->section_disk = malloc((v->sections ? v->sections : 1) * sizeof(uint32_t));
	const char *dirs[LSMFS_MAX_META_COPIES];
	const char *dir = fsck_store_dir(f, &so, dirs);
	if (!v->section_disk || store_open(dir, &so, &v->st))
		v->st = NULL;
	for (uint32_t s = 0; v->section_disk && s < v->sections; s++)
		v->section_disk[s] = UINT32_MAX;
	/* Damaged entries stay unmapped here: the passes report them. */
	if (v->section_disk && v->st)
		(void)section_map_read(v->st, v->sections, v->section_disk, skip_entry, NULL);
}

static void view_close(struct store_view *v)
{
	if (v->st)
		store_close(v->st);
	free(v->section_disk);
}

/* The path disk record `disk` holds, into out (cap bytes); false when the
 * record is missing or too short to hold one. */
static bool record_path(struct store_view *sv, uint32_t disk, char *out, size_t cap)
{
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	if (!sv->st || store_get(sv->st, NULL, k, key_disk(k, disk), &v, &vl))
		return false;
	bool ok = vl > 16 && vl - 16 < cap;
	if (ok) {
		memcpy(out, (const uint8_t *)v + 16, vl - 16);
		out[vl - 16] = '\0';
	}
	free(v);
	return ok;
}

static struct evidence look(struct fsck *f, struct store_view *sv, const char *disk, uint32_t as,
			    uint32_t other)
{
	struct evidence e = {0};
	char dir[LSMFS_META_PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s/%s/%s", disk, LSMFS_DIR, LSMFS_SECTIONS_DIR);
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char *end;
		unsigned long s = strtoul(de->d_name, &end, 10);
		if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || s >= sv->sections ||
		    !sv->section_disk)
			continue; /* not a section: pass 5 reports it */
		if (sv->section_disk[s] == as)
			e.sections_as++;
		else if (sv->section_disk[s] == other)
			e.sections_other++;
	}
	if (d)
		closedir(d);
	char rec[LSMFS_META_PATH_MAX + 64];
	if (record_path(sv, as, rec, sizeof(rec)) && strcmp(rec, disk) == 0)
		e.path_as = true;
	if (record_path(sv, other, rec, sizeof(rec)) && strcmp(rec, disk) == 0)
		e.path_other = true;
	bool copy_as = false, copy_other = false;
	for (uint32_t c = 0; c < f->ds->sb.meta_count; c++) {
		copy_as |= f->ds->sb.meta[c].disk == as;
		copy_other |= f->ds->sb.meta[c].disk == other;
	}
	if (copy_as != copy_other) {
		bool meta = has_meta_store(disk);
		e.meta_as = meta && copy_as;
		e.meta_other = meta && copy_other;
		/* No store where a copy of it must be contradicts being that
		 * disk. */
		if (!meta && copy_as)
			e.meta_other = true;
	}
	return e;
}

static bool supports(const struct evidence *e)
{
	return e->sections_as || e->path_as || e->meta_as;
}

static bool contradicts(const struct evidence *e)
{
	return e->sections_other || e->path_other || e->meta_other;
}

/* The order "disk at paths[x] is x, at paths[y] is y" holds when something
 * supports it and nothing contradicts it. */
static bool order_holds(const struct evidence *ex, const struct evidence *ey)
{
	return (supports(ex) || supports(ey)) && !contradicts(ex) && !contradicts(ey);
}

/* Why the disk at paths[disk] is that disk, in words, into out. */
static void say_why(const struct evidence *e, uint32_t disk, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	if (e->sections_as)
		o += (size_t)snprintf(out + o, cap - o, "the section map gives its %u section director%s to disk %u",
				      e->sections_as, e->sections_as == 1 ? "y" : "ies", disk);
	if (e->path_as && o < cap)
		o += (size_t)snprintf(out + o, cap - o, "%sthe store's record of disk %u names its path",
				      o ? "; " : "", disk);
	if (e->meta_as && o < cap)
		snprintf(out + o, cap - o, "%sit holds the metadata store", o ? "; " : "");
	if (!e->sections_as && !e->path_as && !e->meta_as)
		snprintf(out, cap, "the other disk is disk %u", disk); /* its evidence decided */
}

int fsck_identify_disks(struct fsck *f)
{
	struct lsmfs_diskset *ds = f->ds;
	if (!ds->clash)
		return 0;
	uint32_t a = ds->clash_index, b = ds->clash_spare;
	/* As given: paths[a] is disk a, paths[b] disk b; swapped: the reverse. */
	struct store_view sv = {0};
	view_open(f, &sv);
	struct evidence aa = look(f, &sv, ds->paths[a], a, b), bb = look(f, &sv, ds->paths[b], b, a);
	struct evidence ab = look(f, &sv, ds->paths[a], b, a), ba = look(f, &sv, ds->paths[b], a, b);
	view_close(&sv);
	bool keep = order_holds(&aa, &bb), swap = order_holds(&ab, &ba);
	if (keep == swap) {
		/* Report the two in the order given, not a half-made guess. */
		problem_fix(f, PR_SUPER_WHICH_DISK,
			    &(struct problem_ctx){
				    .disk = a, .disk2 = b, .num = a, .num2 = b,
				    .str = keep ? "the evidence fits both ways"
					 : supports(&aa) || supports(&bb) || supports(&ab) || supports(&ba)
						 ? "their section directories, the store's disk records and "
						   "where the metadata store is contradict each other"
						 : "no section directory, disk record or metadata store tells them apart"});
		return -EUCLEAN;
	}
	if (swap) {
		diskset_swap(ds, a, b);
		say_why(&ba, b, f->disk_why, sizeof(f->disk_why));
	} else {
		say_why(&bb, b, f->disk_why, sizeof(f->disk_why));
	}
	return 0;
}

/* The repair of disk d's superblock: done (rc 0), or failed for why. */
static void super_written(struct fsck *f, uint32_t d, int rc, const char *why)
{
	if (rc)
		problem_repair_failed(f, PR_SUPER_WRITE_FAILED,
				      &(struct problem_ctx){.disk = d, .str = why});
	else
		fsck_repaired(f, 0);
}

/* A disk whose superblock is damaged (the disk set was opened tolerantly
 * and told which disk it is): written again from the others' copies. */
static void check_damaged(struct fsck *f, uint32_t d)
{
	struct lsmfs_super sb;
	char why[512] = "";
	int rc = super_read(f->ds->paths[d], &sb, why, sizeof(why));
	if (rc == -ENOENT)
		snprintf(why, sizeof(why), "%s/%s/%s: missing", f->ds->paths[d], LSMFS_DIR,
			 LSMFS_SUPER_FILE);
	if (!problem_fix(f, PR_SUPER_DAMAGED, &(struct problem_ctx){.disk = d, .str = why}))
		return;
	diskset_super_of(f->ds, d, &sb);
	rc = super_write(f->ds->paths[d], &sb, why, sizeof(why));
	if (!rc)
		f->ds->super_damaged &= ~(1ull << d);
	super_written(f, d, rc, why);
}

/* A superblock a cut-short change to the disk set left behind. */
static void check_stale(struct fsck *f, uint32_t d)
{
	struct lsmfs_super sb;
	char why[512] = "";
	uint64_t gen = super_read(f->ds->paths[d], &sb, why, sizeof(why)) == 0 ? sb.generation : 0;
	if (!problem_fix(f, PR_SUPER_STALE, &(struct problem_ctx){.disk = d, .num = gen,
								    .num2 = f->ds->sb.generation}))
		return;
	super_written(f, d, diskset_write_supers(f->ds, 1ull << d, why, sizeof(why)), why);
}

void fsck_check_superblocks(struct fsck *f)
{
	struct lsmfs_diskset *ds = f->ds;
	for (uint32_t d = 0; d < ds->ndisks; d++)
		if (ds->super_damaged & (1ull << d))
			check_damaged(f, d);
	for (uint32_t d = 0; d < ds->ndisks; d++)
		if (ds->stale & (1ull << d))
			check_stale(f, d);
	if (!ds->clash)
		return;
	uint32_t d = ds->clash_spare;
	if (!problem_fix(f, PR_SUPER_OTHER_DISK,
			 &(struct problem_ctx){.disk = d, .num = ds->clash_index, .str = f->disk_why}))
		return;
	struct lsmfs_super sb;
	diskset_super_of(ds, d, &sb);
	char why[512] = "";
	int rc = super_write(ds->paths[d], &sb, why, sizeof(why));
	if (!rc)
		ds->clash = false;
	super_written(f, d, rc, why);
}
