/*
 * repair.c: the store edits repairs are made of.  Each is one batch written
 * with a sync, so a repair interrupted by a crash is either done or not.
 */
#include "fsck.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_batch(struct fsck *f, struct store_batch *b)
{
	int rc = store_write(f->st, b, STORE_WRITE_SYNC);
	store_batch_free(b);
	return rc;
}

int fsck_put_inode(struct fsck *f, const struct fsck_inode *in)
{
	uint8_t k[KEY_MAX], v[INODE_REC_LEN];
	size_t kl = key_inode(k, in->ino);
	inode_rec_encode(&in->rec, v);
	return store_put(f->st, k, kl, v, sizeof(v), STORE_WRITE_SYNC);
}

int fsck_del_key(struct fsck *f, const uint8_t *k, size_t kl)
{
	return store_delete(f->st, k, kl, STORE_WRITE_SYNC);
}

int fsck_put_chunk_len(struct fsck *f, uint64_t ino, uint64_t chunk, uint64_t len)
{
	uint8_t k[KEY_MAX], v[CHUNK_COPIES_HDR];
	size_t kl = key_chunk(k, ino, chunk);
	void *old = NULL;
	size_t oldlen = 0;
	int rc = store_get(f->st, NULL, k, kl, &old, &oldlen);
	if (rc && rc != -ENOENT)
		return rc;
	/* The section the record names stays: the file is there. */
	size_t vl = chunk_value_relength(old, oldlen, len, v);
	free(old);
	return store_put(f->st, k, kl, v, vl, STORE_WRITE_SYNC);
}

/* Value cv again at place, under key k. */
static int put_placed(struct fsck *f, const uint8_t *k, size_t kl, const struct chunk_value *cv,
		      const struct chunk_place *place)
{
	uint8_t *v = malloc(CHUNK_COPIES_HDR + 4 * (size_t)cv->nsums);
	uint32_t *sums = malloc((cv->nsums ? cv->nsums : 1) * sizeof(*sums));
	int rc = v && sums ? 0 : -ENOMEM;
	for (uint32_t i = 0; !rc && i < cv->nsums; i++)
		sums[i] = chunk_value_sum(cv, i);
	if (!rc)
		rc = store_put(f->st, k, kl, v,
			       chunk_value_put_place(cv->durable, cv->flags, cv->gen, place, cv->shift,
						     sums, cv->nsums, v),
			       STORE_WRITE_SYNC);
	free(sums);
	free(v);
	return rc;
}

/* Chunk (ino, chunk)'s record again at place, or (place NULL) at its own
 * place naming section. */
static int replace_place(struct fsck *f, uint64_t ino, uint64_t chunk, uint32_t section,
			 const struct chunk_place *place)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_chunk(k, ino, chunk);
	void *old;
	size_t oldlen;
	int rc = store_get(f->st, NULL, k, kl, &old, &oldlen);
	if (rc)
		return rc;
	struct chunk_value cv;
	if (chunk_value_parse(old, oldlen, &cv) || (cv.flags & CHUNK_LOST)) {
		rc = -EUCLEAN; /* not what pass 5 saw: left for the next run */
	} else {
		struct chunk_place pl = {.section = section, .copies = cv.copies, .stale = cv.stale};
		rc = put_placed(f, k, kl, &cv, place ? place : &pl);
	}
	free(old);
	return rc;
}

int fsck_put_chunk_section(struct fsck *f, uint64_t ino, uint64_t chunk, uint32_t section)
{
	return replace_place(f, ino, chunk, section, NULL);
}

int fsck_put_chunk_place(struct fsck *f, uint64_t ino, uint64_t chunk,
			 const struct chunk_place *place)
{
	return replace_place(f, ino, chunk, place->section, place);
}

int fsck_put_entry(struct fsck *f, uint64_t parent, const char *name, uint64_t ino,
		   uint8_t type)
{
	uint8_t k[KEY_MAX], v[DIRENT_VAL_LEN];
	size_t kl = key_dirent(k, parent, name, strlen(name));
	dirent_val_encode(ino, type, v);
	return store_put(f->st, k, kl, v, sizeof(v), STORE_WRITE_SYNC);
}

/* The entry's own key: under the hash it is stored with, which may be the
 * wrong one. */
static int entry_key(const struct fsck_entry *e, uint8_t k[KEY_MAX], size_t *kl)
{
	size_t nlen = strlen(e->name);
	*kl = key_dirent_pos(k, e->parent, e->hash);
	if (*kl + nlen > KEY_MAX)
		return -ENAMETOOLONG;
	memcpy(k + *kl, e->name, nlen);
	*kl += nlen;
	return 0;
}

int fsck_del_entry(struct fsck *f, const struct fsck_entry *e)
{
	uint8_t k[KEY_MAX];
	size_t kl;
	int rc = entry_key(e, k, &kl);
	struct store_batch *b = rc ? NULL : store_batch_new();
	if (!b)
		return rc ? rc : -ENOMEM;
	store_batch_delete(b, k, kl);
	return write_batch(f, b);
}

int fsck_rehash_entry(struct fsck *f, struct fsck_entry *e)
{
	uint8_t k[KEY_MAX], nk[KEY_MAX], v[DIRENT_VAL_LEN];
	size_t kl;
	int rc = entry_key(e, k, &kl);
	struct store_batch *b = rc ? NULL : store_batch_new();
	if (!b)
		return rc ? rc : -ENOMEM;
	size_t nlen = strlen(e->name);
	dirent_val_encode(e->ino, e->type, v);
	store_batch_delete(b, k, kl);
	store_batch_put(b, nk, key_dirent(nk, e->parent, e->name, nlen), v, sizeof(v));
	rc = write_batch(f, b);
	if (!rc)
		e->hash = dirent_hash(e->name, nlen);
	return rc;
}

int fsck_trim_inline(struct fsck *f, uint64_t ino, uint64_t size)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_data(k, ino);
	void *v;
	size_t vl;
	int rc = store_get(f->st, NULL, k, kl, &v, &vl);
	if (rc)
		return rc;
	rc = store_put(f->st, k, kl, v, vl < size ? vl : (size_t)size, STORE_WRITE_SYNC);
	free(v);
	return rc;
}

int fsck_put_info(struct fsck *f)
{
	const struct lsmfs_super *sb = &f->ds->sb;
	struct fs_info fi = {
		.version = LSMFS_VERSION, .sections = sb->sections, .chunk_size = sb->chunk_size,
		.inline_max = sb->inline_max, .ndisks = sb->disk_count, .created = sb->created,
	};
	memcpy(fi.fs_uuid, sb->fs_uuid, 16);
	snprintf(fi.label, sizeof(fi.label), "%s", sb->label);
	uint8_t k[KEY_MAX], v[FS_INFO_MAX];
	size_t kl = key_meta(k, META_FS);
	int rc = store_put(f->st, k, kl, v, fs_info_encode(&fi, v), STORE_WRITE_SYNC);
	if (rc == 0) {
		f->info = fi;
		f->info_ok = true;
	}
	return rc;
}

int fsck_put_disk_record(struct fsck *f, uint32_t disk)
{
	uint8_t k[KEY_MAX], *v = malloc(DISK_REC_MAX);
	if (!v)
		return -ENOMEM;
	size_t vl = disk_rec_encode(f->ds->sb.disk_uuids[disk], f->ds->paths[disk], v);
	int rc = vl ? store_put(f->st, k, key_disk(k, disk), v, vl, STORE_WRITE_SYNC)
		    : -ENAMETOOLONG;
	free(v);
	return rc;
}

int fsck_put_section(struct fsck *f, uint32_t section, uint32_t disk)
{
	uint8_t k[KEY_MAX], v[SECTION_VAL_LEN];
	section_value_encode(disk, v);
	int rc = store_put(f->st, k, key_section(k, section), v, SECTION_VAL_LEN, STORE_WRITE_SYNC);
	if (rc == 0)
		f->section_disk[section] = disk;
	return rc;
}

int fsck_put_next_ino(struct fsck *f, uint64_t next)
{
	uint8_t k[KEY_MAX], v[8];
	put_le64(v, next);
	int rc = store_put(f->st, k, key_meta(k, META_NEXT_INO), v, 8, STORE_WRITE_SYNC);
	if (rc == 0)
		f->next_ino = next;
	return rc;
}

/* Every X key of ino into batch b. */
static int batch_del_xattrs(struct fsck *f, struct store_batch *b, uint64_t ino)
{
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	struct store_iter_options io = {.lower = lo, .lower_len = key_xattr_prefix(lo, ino),
					.upper = hi, .upper_len = key_xattr_prefix(hi, ino + 1)};
	struct store_iter *it;
	int rc = store_iter_new(f->st, &io, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it) && rc == 0; store_iter_next(it)) {
		size_t kl;
		const void *k = store_iter_key(it, &kl);
		rc = store_batch_delete(b, k, kl);
	}
	if (rc == 0)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

int fsck_clear_inode(struct fsck *f, struct fsck_inode *in)
{
	uint64_t ino = in->ino;
	/* Files first: a crash after leaves records of missing chunks (holes
	 * of an inode about to go), never files without an owner. */
	for (size_t i = 0; i < f->nchunks; i++) {
		int rc = f->chunks[i].ino == ino ? fsck_unlink_chunk(f, &f->chunks[i]) : 0;
		if (rc)
			return rc;
	}
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	uint8_t k[KEY_MAX];
	store_batch_delete(b, k, key_inode(k, ino));
	store_batch_delete(b, k, key_data(k, ino));
	store_batch_delete(b, k, key_orphan(k, ino));
	store_batch_delete(b, k, key_flux(k, ino));
	for (size_t i = 0; i < f->nchunks; i++)
		if (f->chunks[i].ino == ino)
			store_batch_delete(b, k, key_chunk(k, ino, f->chunks[i].chunk));
	int rc = batch_del_xattrs(f, b, ino);
	if (rc) {
		store_batch_free(b);
		return rc;
	}
	rc = write_batch(f, b);
	if (rc == 0) {
		fsck_model_drop_chunks(f, ino);
		in->rec_ok = in->rec_bad = in->orphan = in->xattrs = false;
		in->inline_len = -1;
	}
	return rc;
}

int fsck_drop_data(struct fsck *f, struct fsck_inode *in, bool inline_data, bool chunks)
{
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	uint8_t k[KEY_MAX];
	if (inline_data)
		store_batch_delete(b, k, key_data(k, in->ino));
	if (chunks)
		for (size_t i = 0; i < f->nchunks; i++)
			if (f->chunks[i].ino == in->ino)
				store_batch_delete(b, k, key_chunk(k, in->ino, f->chunks[i].chunk));
	int rc = write_batch(f, b);
	if (rc == 0 && inline_data)
		in->inline_len = -1;
	if (rc == 0 && chunks)
		fsck_model_drop_chunks(f, in->ino);
	return rc;
}

/* Write len bytes to a new chunk file at path, durably. */
static int write_chunk_file(const char *path, const uint8_t *p, size_t len)
{
	char dir[LSMFS_META_PATH_MAX + 160];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = 0;
	for (size_t done = 0; done < len && rc == 0;) {
		ssize_t w = write(fd, p + done, len - done);
		if (w < 0)
			rc = -errno;
		else
			done += (size_t)w;
	}
	if (rc == 0 && fsync(fd))
		rc = -errno;
	close(fd);
	if (rc == 0)
		rc = lsmfs_fsync_dir(dir);
	if (rc)
		unlink(path);
	return rc;
}

int fsck_inline_to_chunks(struct fsck *f, struct fsck_inode *in)
{
	uint8_t k[KEY_MAX];
	void *v = NULL;
	size_t vl = 0;
	int rc = store_get(f->st, NULL, k, key_data(k, in->ino), &v, &vl);
	if (rc == -ENOENT)
		rc = 0; /* all zeros: no chunk files at all */
	if (rc)
		return rc;
	uint64_t cs = f->info.chunk_size;
	struct store_batch *b = store_batch_new();
	if (!b)
		rc = -ENOMEM;
	/* The chunk files first, durably; then one batch switches the file
	 * over.  A crash between leaves ownerless chunk files, whose inode
	 * is inline: fsck moves them to /lost+found; the inline data stays.
	 * Each goes to chunk_section's section, which its record (empty)
	 * then means. */
	for (uint64_t c = 0; rc == 0 && c * cs < vl; c++) {
		char file[LSMFS_META_PATH_MAX + 160];
		size_t n = vl - c * cs < cs ? (size_t)(vl - c * cs) : (size_t)cs;
		uint32_t s = chunk_section(in->ino, c, f->info.sections);
		rc = fsck_chunk_file(f, in->ino, c, s, file, sizeof(file));
		if (rc == 0)
			rc = write_chunk_file(file, (const uint8_t *)v + c * cs, n);
		if (rc == 0)
			rc = store_batch_put(b, k, key_chunk(k, in->ino, c), "", 0);
		if (rc == 0)
			rc = fsck_model_add_chunk(f, in->ino, c, s);
		if (rc == 0)
			in->nchunks++;
	}
	free(v);
	if (rc == 0) {
		uint8_t rec[INODE_REC_LEN];
		in->rec.flags |= INODE_FLAG_CHUNKED;
		inode_rec_encode(&in->rec, rec);
		store_batch_delete(b, k, key_data(k, in->ino));
		store_batch_put(b, k, key_inode(k, in->ino), rec, sizeof(rec));
		rc = write_batch(f, b);
		b = NULL;
		if (rc == 0)
			in->inline_len = -1;
	}
	store_batch_free(b);
	return rc;
}
