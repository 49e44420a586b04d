/*
 * pass5.c: pass 5, data and disks: the superblocks (superblocks.c), the
 * section map, the disk records and the filesystem information against the
 * superblocks, every chunk file on every disk against the chunk records
 * (ownerless, misplaced, stray), and every chunk record against its
 * copies' files (copies.c: missing, short, too long, stale, two on one
 * disk; read and verified with --scrub, scrub.c).
 *
 * A chunk's file belongs in the section its record names, else in
 * chunk_section's (fs/SCHEMA.md "Sharding", "Chunk checksums"): the record
 * is the only truth of where, so a file is found, moved home and given a
 * record by that section, never by the hash alone.  A record that names
 * a section past the count names nowhere (LSMFS-0516).  A chunk with two
 * copies has a file in that section and one in its partner (s ^ 1): a
 * file in either is the chunk's, not misplaced.
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

static void sections_dir(const struct fsck *f, uint32_t disk, char *out, size_t cap)
{
	section_disk_dir(f->ds->paths[disk], out, cap);
}

int fsck_chunk_file(const struct fsck *f, uint64_t ino, uint64_t chunk, uint32_t s, char *out,
		    size_t cap)
{
	if (s >= f->info.sections)
		return -ENOENT;
	uint32_t d = f->section_disk[s];
	if (!diskset_present(f->ds, d))
		return -ENOENT;
	char root[LSMFS_META_PATH_MAX + 64];
	sections_dir(f, d, root, sizeof(root));
	char rel[96];
	section_chunk_name(ino, chunk, s, rel, sizeof(rel));
	snprintf(out, cap, "%s/%s", root, rel);
	return 0;
}

static int fsync_parent(const char *path)
{
	char dir[LSMFS_META_PATH_MAX + 700];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return lsmfs_fsync_dir(dir);
}

/* Put a misplaced chunk file in section s on disk d (where its record
 * says): a rename on the same filesystem, else a durable copy renamed
 * into place before the original goes.  A file already at the
 * destination is left to a person. */
static int move_chunk(struct fsck *f, const char *src, uint32_t s, uint32_t d, uint64_t ino,
		      uint64_t chunk)
{
	char root[LSMFS_META_PATH_MAX + 64], dir[LSMFS_META_PATH_MAX + 100];
	char dst[LSMFS_META_PATH_MAX + 200], tmp[LSMFS_META_PATH_MAX + 220];
	char name[SECTION_NAME_MAX];
	section_dir_name(s, name);
	sections_dir(f, d, root, sizeof(root));
	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (fsck_chunk_file(f, ino, chunk, s, dst, sizeof(dst)))
		return -ENOENT;
	if (access(dst, F_OK) == 0)
		return -EEXIST;
	if (rename(src, dst) == 0) {
		int rc = lsmfs_fsync_dir(dir);
		int r2 = fsync_parent(src);
		return rc ? rc : r2;
	}
	if (errno != EXDEV)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.fsck-tmp", dst);
	int rc = fsck_copy_file(src, tmp);
	if (!rc && rename(tmp, dst))
		rc = -errno;
	if (!rc)
		rc = lsmfs_fsync_dir(dir);
	if (rc) {
		unlink(tmp);
		return rc;
	}
	if (unlink(src))
		return -errno;
	return fsync_parent(src);
}

/* The record of a chunk whose file is in section s: one that names it,
 * as the daemon's placement writes (SCHEMA.md "Chunk checksums"), with no
 * length known and no sums.  Into v (CHUNK_PLACED_HDR bytes); its length. */
static size_t placed_record(uint32_t s, uint8_t *v)
{
	return chunk_value_put(0, 0, 0, s, 0, NULL, 0, v);
}

/* An ownerless chunk file (or a stray file no bigger than a chunk) becomes
 * a file of its own, /lost+found/name, with a new inode whose chunk 0 it
 * is.  A file in a section (here; CHUNK_HASHED for one beside the section
 * directories) stays in it, renamed, and its record names that section;
 * one in none goes to the new inode's chunk_section.  The records go
 * first, in one batch with the raised inode counter; the file is moved
 * after, so a crash between leaves a hole and the file still ownerless,
 * for the next run.  An empty file holds nothing and is just removed. */
static int adopt_file(struct fsck *f, const char *file, const char *name, uint32_t here)
{
	struct stat st;
	if (lstat(file, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > f->info.chunk_size)
		return -EOPNOTSUPP; /* not one chunk's worth of bytes: left to a person */
	if (st.st_size == 0)
		return unlink(file) ? -errno : fsync_parent(file);
	struct fsck_inode *lf = fsck_inode(f, LSMFS_LOST_FOUND_INO);
	if (!lf || !lf->rec_ok || !S_ISDIR(lf->rec.mode) || !f->next_ino)
		return -ENOENT;
	uint64_t nino = f->next_ino;
	if (here != CHUNK_HASHED &&
	    (here >= f->info.sections || !diskset_present(f->ds, f->section_disk[here])))
		here = CHUNK_HASHED; /* a section with no disk here: the hash's instead */
	uint32_t s = here != CHUNK_HASHED ? here : chunk_section(nino, 0, f->info.sections);
	uint32_t d = f->section_disk[s];
	if (!diskset_present(f->ds, d))
		return -EUCLEAN;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct inode_rec r = {
		.flags = INODE_FLAG_CHUNKED, .mode = S_IFREG | 0600, .nlink = 1,
		.size = (uint64_t)st.st_size, .blocks = (uint64_t)st.st_blocks,
		.generation = 1,
		.atime_sec = now.tv_sec, .mtime_sec = now.tv_sec, .ctime_sec = now.tv_sec,
		.btime_sec = now.tv_sec,
	};
	for (size_t i = 0; i < f->nentries; i++)
		if (f->entries[i].parent == LSMFS_LOST_FOUND_INO && f->entries[i].ino &&
		    strcmp(f->entries[i].name, name) == 0)
			return -EEXIST;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	uint8_t k[KEY_MAX], v[INODE_REC_LEN > CHUNK_PLACED_HDR ? INODE_REC_LEN : CHUNK_PLACED_HDR];
	uint8_t cnt[8];
	put_le64(cnt, nino + 1);
	store_batch_put(b, k, key_meta(k, META_NEXT_INO), cnt, 8);
	inode_rec_encode(&r, v);
	store_batch_put(b, k, key_inode(k, nino), v, INODE_REC_LEN);
	store_batch_put(b, k, key_chunk(k, nino, 0), v, here != CHUNK_HASHED ? placed_record(s, v) : 0);
	dirent_val_encode(nino, (uint8_t)(S_IFREG >> 12), v);
	store_batch_put(b, k, key_dirent(k, LSMFS_LOST_FOUND_INO, name, strlen(name)), v,
			DIRENT_VAL_LEN);
	int rc = store_write(f->st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	if (rc)
		return rc;
	f->next_ino = nino + 1;
	rc = fsck_model_add_chunk(f, nino, 0, s);
	return rc ? rc : move_chunk(f, file, s, d, nino, 0);
}

static int adopt_stray(struct fsck *f, const char *file, const char *base, uint32_t here)
{
	char name[NAME_MAX_BYTES + 2];
	size_t n = strnlen(base, NAME_MAX_BYTES - 1); /* '#' + name fits an entry */
	name[0] = '#';
	memcpy(name + 1, base, n);
	name[n + 1] = '\0';
	return adopt_file(f, file, name, here);
}

static int adopt_chunk(struct fsck *f, const char *file, uint64_t ino, uint64_t chunk,
		       uint32_t here)
{
	char name[64];
	snprintf(name, sizeof(name), "#%" PRIu64 ".%" PRIu64, ino, chunk); /* its old identity */
	return adopt_file(f, file, name, here);
}

/* An ownerless chunk file whose inode is a chunked regular file reaching
 * that far (its record was lost, say with a damaged table): the file is
 * that inode's data, so it gets its record back, naming the section the
 * file is in (s): where the daemon put it, which the hash need not say. */
static bool can_reattach(struct fsck *f, uint64_t ino, uint64_t chunk)
{
	struct fsck_inode *in = fsck_inode(f, ino);
	return in && in->rec_ok && S_ISREG(in->rec.mode) &&
	       (in->rec.flags & INODE_FLAG_CHUNKED) && in->inline_len < 0 &&
	       f->info.chunk_size && chunk < UINT64_MAX / f->info.chunk_size &&
	       chunk * f->info.chunk_size < in->rec.size;
}

static int reattach_chunk(struct fsck *f, uint64_t ino, uint64_t chunk, uint32_t s)
{
	uint8_t k[KEY_MAX], v[CHUNK_PLACED_HDR];
	int rc = store_put(f->st, k, key_chunk(k, ino, chunk), v, placed_record(s, v),
			   STORE_WRITE_SYNC);
	if (rc)
		return rc;
	fsck_inode(f, ino)->nchunks++;
	return fsck_model_add_chunk(f, ino, chunk, s);
}

/* The section a file of chunk c found in section s belongs in: s when
 * it is a copy's (stale or not: a stale copy's file is left), else the
 * first copy's whose file is not there (copy 0's when all are). */
static uint32_t home_of(const struct fsck *f, const struct fsck_chunk *c, uint32_t s)
{
	if (fsck_copy_in(f, c, s) >= 0)
		return s;
	for (unsigned i = 0; i < c->copies; i++) {
		uint32_t t = section_of_copy(c->section, i, f->info.sections);
		char file[LSMFS_META_PATH_MAX + 160];
		if (fsck_chunk_file(f, c->ino, c->chunk, t, file, sizeof(file)) == 0 &&
		    access(file, F_OK) != 0 && errno == ENOENT)
			return t;
	}
	return c->section;
}

/* Has every copy of c that is not stale its file (on a disk here)?  Then
 * a file of c in another section is a leftover of a relocation cut short
 * (fs/engine/data/chunk_relocate.c): the chunk is whole without it. */
static bool copies_there(const struct fsck *f, const struct fsck_chunk *c)
{
	for (unsigned i = 0; i < c->copies; i++) {
		char file[LSMFS_META_PATH_MAX + 160];
		struct stat st;
		if (!(c->stale >> i & 1) &&
		    (fsck_chunk_file(f, c->ino, c->chunk, section_of_copy(c->section, i, f->info.sections),
				     file, sizeof(file)) ||
		     lstat(file, &st) || !S_ISREG(st.st_mode)))
			return false;
	}
	return true;
}

/* One disk's section directories: every file must be a chunk with a record,
 * in the section its record names (else its hash's), on the disk the map
 * names. */
static void walk_disk(struct fsck *f, uint32_t disk)
{
	char root[LSMFS_META_PATH_MAX + 64];
	sections_dir(f, disk, root, sizeof(root));
	DIR *top = opendir(root);
	if (!top) {
		problem_fix(f, PR_CHUNK_UNREADABLE, &(struct problem_ctx){.file = root, .err = errno});
		return;
	}
	struct dirent *de;
	while ((de = readdir(top)) && !fsck_cancelled(f)) {
		if (de->d_name[0] == '.')
			continue;
		uint32_t s;
		char sdir[LSMFS_META_PATH_MAX + 400];
		snprintf(sdir, sizeof(sdir), "%s/%s", root, de->d_name);
		bool parsed = section_dir_parse(de->d_name, f->info.sections, &s);
		if (parsed && f->has_move && s == f->move.section && s < f->info.sections &&
		    f->section_disk[s] != disk && (disk == f->move.from || disk == f->move.to))
			continue; /* the other copy of a move under way (said at the start) */
		if (!parsed) {
			if (problem_fix(f, PR_STRAY_FILE,
					&(struct problem_ctx){.disk = disk, .file = sdir,
							      .str = "section directory",
							      .str2 = de->d_name}))
				fsck_repaired(f, adopt_stray(f, sdir, de->d_name, CHUNK_HASHED));
			continue;
		}
		DIR *sd = opendir(sdir);
		if (!sd) {
			problem_fix(f, PR_CHUNK_UNREADABLE,
				    &(struct problem_ctx){.file = sdir, .err = errno});
			continue;
		}
		struct dirent *ce;
		while ((ce = readdir(sd))) {
			if (ce->d_name[0] == '.')
				continue;
			uint64_t ino, chunk;
			char file[LSMFS_META_PATH_MAX + 700];
			snprintf(file, sizeof(file), "%s/%s", sdir, ce->d_name);
			if (!section_chunk_parse(ce->d_name, &ino, &chunk)) {
				if (problem_fix(f, PR_STRAY_FILE,
						&(struct problem_ctx){.disk = disk, .file = file,
								      .str = "chunk file name",
								      .str2 = ce->d_name}))
					fsck_repaired(f, adopt_stray(f, file, ce->d_name, s));
				continue;
			}
			if (!fsck_has_chunk(f, ino, chunk)) {
				bool back = can_reattach(f, ino, chunk);
				if (problem_fix(f, PR_CHUNK_OWNERLESS,
						&(struct problem_ctx){
							.disk = disk, .file = file, .chunk = chunk,
							.ino = ino,
							.str = back ? "that file reaches it: give it back a record "
								      "naming the section it is in"
								    : "no owner: move it to /lost+found"}))
					fsck_repaired(f, back ? reattach_chunk(f, ino, chunk, s)
							      : adopt_chunk(f, file, ino, chunk, s));
			}
			const struct fsck_chunk *c = fsck_find_chunk(f, ino, chunk);
			if (!c || c->bad_section != CHUNK_HASHED)
				continue; /* left, gone to /lost+found, or its record names
					   * nowhere (LSMFS-0516, reported before the walk) */
			if (fsck_copy_in(f, c, s) < 0 && copies_there(f, c)) {
				if (problem_fix(f, PR_CHUNK_LEFTOVER,
						&(struct problem_ctx){.disk = disk, .file = file,
								      .ino = ino, .chunk = chunk,
								      .section = c->section}))
					fsck_repaired(f, unlink(file) ? -errno : fsync_parent(file));
				continue;
			}
			uint32_t want = home_of(f, c, s), want_disk = f->section_disk[want];
			if ((want != s || want_disk != disk) && diskset_present(f->ds, want_disk) &&
			    problem_fix(f, PR_CHUNK_MISPLACED,
					&(struct problem_ctx){.disk = disk, .file = file,
							      .section = want, .num = want_disk}))
				fsck_repaired(f, move_chunk(f, file, want, want_disk, ino, chunk));
		}
		closedir(sd);
	}
	closedir(top);
}

/* The disk a section belongs on when the map has lost it: the one disk
 * whose sections/<s> directory holds files (or, with none, exists);
 * mkfs's rule (s mod disks) when no disk or several qualify. */
static uint32_t section_home(struct fsck *f, uint32_t s)
{
	uint32_t with_dir = UINT32_MAX, with_files = UINT32_MAX, ndir = 0, nfiles = 0;
	for (uint32_t d = 0; d < f->ds->ndisks; d++) {
		if (!diskset_present(f->ds, d))
			continue;
		char root[LSMFS_META_PATH_MAX + 64], dir[LSMFS_META_PATH_MAX + 96];
		char name[SECTION_NAME_MAX];
		section_dir_name(s, name);
		sections_dir(f, d, root, sizeof(root));
		snprintf(dir, sizeof(dir), "%s/%s", root, name);
		DIR *dh = opendir(dir);
		if (!dh)
			continue;
		with_dir = d;
		ndir++;
		struct dirent *e;
		while ((e = readdir(dh)))
			if (e->d_name[0] != '.') {
				with_files = d;
				nfiles++;
				break;
			}
		closedir(dh);
	}
	if (nfiles == 1)
		return with_files;
	if (nfiles == 0 && ndir == 1)
		return with_dir;
	/* mkfs's rule, or the next disk present after a removed one's slot */
	uint32_t d = section_first_disk(s, f->ds->ndisks);
	while (!diskset_present(f->ds, d))
		d = (d + 1) % f->ds->ndisks;
	return d;
}

/* Chunk records naming a section past the count (LSMFS-0516): no such
 * section, so no file can be where they say.  Before the walk of the
 * disks, whose findings depend on what the records say.  A file in the
 * section the chunk hashes to (where a record naming none would put it,
 * and the daemon's placement first puts it) is the chunk's: the record
 * names that section, its length and sums kept.
 * Without one, the record goes, as e2fsck clears a block number past the
 * filesystem's end rather than guess which block was meant: a section
 * number that is damage cannot be trusted to say which of the others
 * it was, and the walk that follows finds the file wherever it is and,
 * its inode reaching it, gives it back a record naming where
 * (LSMFS-0507), while its length and sums, of a value known damaged, are
 * not carried over.  With no file at all, the bytes read as a hole. */
static void check_named_sections(struct fsck *f)
{
	for (size_t i = 0; i < f->nchunks && !fsck_cancelled(f); i++) {
		struct fsck_chunk *c = &f->chunks[i];
		if (c->bad_section == CHUNK_HASHED)
			continue;
		char file[LSMFS_META_PATH_MAX + 160], path[4096], why[LSMFS_META_PATH_MAX + 260];
		struct stat st;
		bool home = fsck_chunk_file(f, c->ino, c->chunk, c->section, file, sizeof(file)) == 0 &&
			    stat(file, &st) == 0;
		if (home)
			snprintf(why, sizeof(why), "its file %s is in section %u, the hash's: name that one",
				 file, c->section);
		else
			snprintf(why, sizeof(why), "no file in section %u, the hash's: remove the record",
				 c->section);
		if (!problem_fix(f, PR_CHUNK_BAD_SECTION,
				 &(struct problem_ctx){.ino = c->ino, .chunk = c->chunk,
						       .num = c->bad_section, .num2 = f->info.sections,
						       .path = fsck_path_of(f, c->ino, path, sizeof(path)),
						       .str = why}))
			continue;
		int rc;
		if (home) {
			rc = fsck_put_chunk_section(f, c->ino, c->chunk, c->section);
			if (rc == 0)
				c->bad_section = CHUNK_HASHED;
		} else {
			uint8_t k[KEY_MAX];
			rc = fsck_del_key(f, k, key_chunk(k, c->ino, c->chunk));
			if (rc == 0) {
				fsck_model_drop_chunk(f, c->ino, c->chunk);
				i--; /* the next chunk moved down into slot i */
			}
		}
		fsck_repaired(f, rc);
	}
}

void fsck_pass5_data(struct fsck *f)
{
	uint32_t nd = f->ds->ndisks;
	fsck_check_superblocks(f);
	for (uint32_t s = 0; s < f->info.sections; s++) {
		uint32_t d = f->section_disk[s];
		if (d != UINT32_MAX &&
		    (diskset_present(f->ds, d) || (d < LSMFS_MAX_DISKS && f->ds->missing >> d & 1)))
			continue; /* there, or on a disk missing (--degraded): not checked */
		uint32_t home = section_home(f, s);
		if (problem_fix(f, d == UINT32_MAX ? PR_SECTION_UNMAPPED : PR_SECTION_BAD_DISK,
				&(struct problem_ctx){.section = s, .num = d, .num2 = nd, .disk = home}))
			fsck_repaired(f, fsck_put_section(f, s, home));
	}
	/* Disk records against the superblocks: one for each disk, none for
	 * a removed disk's slot; nor error counters for one. */
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++) {
		uint8_t k[KEY_MAX];
		size_t kl = key_disk(k, d);
		void *v;
		size_t vl;
		if (f->ds->missing >> d & 1)
			continue; /* --degraded: a member, not here */
		int rc = store_get(f->st, NULL, k, kl, &v, &vl);
		if (!diskset_present(f->ds, d)) {
			if (rc == 0) {
				free(v);
				if (problem_fix(f, PR_DISK_RECORD_GONE,
						&(struct problem_ctx){.num = d}))
					fsck_repaired(f, store_delete(f->st, k, kl, STORE_WRITE_SYNC));
			}
			kl = key_devstats(k, d);
			if (store_get(f->st, NULL, k, kl, &v, &vl) == 0) {
				free(v);
				if (problem_fix(f, PR_DEVSTATS_GONE, &(struct problem_ctx){.num = d}))
					fsck_repaired(f, store_delete(f->st, k, kl, STORE_WRITE_SYNC));
			}
			continue;
		}
		if (rc == 0 && vl >= 16 && memcmp(v, f->ds->sb.disk_uuids[d], 16) == 0) {
			free(v);
			continue;
		}
		if (rc == 0)
			free(v);
		if (problem_fix(f, PR_DISK_RECORD,
				&(struct problem_ctx){.disk = d, .str = rc ? "is missing"
									   : "does not carry its UUID"}))
			fsck_repaired(f, fsck_put_disk_record(f, d));
	}
	if (f->info_ok && (memcmp(f->info.fs_uuid, f->ds->sb.fs_uuid, 16) ||
			   f->info.sections != f->ds->sb.sections ||
			   f->info.chunk_size != f->ds->sb.chunk_size) &&
	    problem_fix(f, PR_INFO_BAD,
			&(struct problem_ctx){.str = "at odds with the superblocks"}))
		fsck_repaired(f, fsck_put_info(f));
	else if (f->info_ok && f->info.ndisks != f->ds->sb.disk_count &&
		 problem_fix(f, PR_DISK_COUNT, &(struct problem_ctx){.num = f->info.ndisks,
								   .num2 = f->ds->sb.disk_count}))
		fsck_repaired(f, fsck_put_info(f));

	if (f->nchunks) /* none: no array to sort (qsort wants one) */
		qsort(f->chunks, f->nchunks, sizeof(*f->chunks), fsck_cmp_chunk);
	check_named_sections(f);
	fsck_check_copy_records(f);
	/* The disks first: a misplaced chunk file moved home is no longer a
	 * missing one (whose repair would drop its record). */
	for (uint32_t d = 0; d < nd && !fsck_cancelled(f); d++)
		if (diskset_present(f->ds, d))
			walk_disk(f, d);
	uint64_t last_lost = UINT64_MAX;
	for (size_t i = 0; i < f->nchunks && !fsck_cancelled(f); i++) {
		struct fsck_chunk *c = &f->chunks[i];
		if (c->bad_section != CHUNK_HASHED)
			continue; /* its record names nowhere: reported, left */
		fsck_check_chunk(f, c, &last_lost);
		if (i % 4096 == 0)
			fsck_progress(f, 5, i, f->nchunks);
	}
	fsck_check_copy_disks(f);
	if (f->scrub)
		fsck_scrub_report(f);
}
