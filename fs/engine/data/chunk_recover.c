/*
 * chunk_recover.c: at a read-write mount, before any request, the repair
 * of every inode a crash left in flux (its `G` mark in the store; SCHEMA.md
 * "Chunks in flux"): chunk records past its size dropped with their files,
 * records whose file is missing inside the size reported.  Takes no
 * inode's lock: nothing else runs yet.
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

/* chunk_recover: one marked inode. */
struct recover {
	struct fs *fs;
	uint64_t ino, keep; /* chunks [0, keep) lie inside the size */
	struct store_batch *b;
	uint64_t dropped, missing;
};

static int recover_chunk(void *ctx, uint64_t chunk, uint64_t durable,
			 const struct chunk_place *place)
{
	struct recover *r = ctx;
	struct fs *fs = r->fs;
	char rel[96];
	uint8_t k[KEY_MAX];
	size_t kl = key_chunk(k, r->ino, chunk);
	uint32_t section = place->section;
	if (chunk >= r->keep) {
		/* Past the size: every copy's file goes (SCHEMA.md "Copies"). */
		for (unsigned i = 0; i < place->copies; i++) {
			section = section_of_copy(place->section, i, fs->info.sections);
			if (i > 0 && !disk_usable(fs, section_disk_of(fs, section)))
				continue; /* for the sweep of a mount that has it */
			section_chunk_name(r->ino, chunk, section, rel, sizeof(rel));
			if (unlinkat(chunk_dirfd(fs, section), rel, 0) != 0 && errno != ENOENT) {
				chunk_log_error(fs, section, DEVSTAT_WRITE, rel, "removing ", errno);
				return -errno;
			}
			chunk_section_changed(fs, section);
		}
		r->dropped++;
		return store_batch_delete(r->b, k, kl);
	}
	/* Inside the size: a copy that is not stale has its file. */
	int err = 0;
	for (unsigned i = 0; i < place->copies; i++) {
		if (place->stale >> i & 1)
			continue;
		section = section_of_copy(place->section, i, fs->info.sections);
		if (i > 0 && !disk_usable(fs, section_disk_of(fs, section)))
			continue;
		section_chunk_name(r->ino, chunk, section, rel, sizeof(rel));
		struct stat st;
		if (fstatat(chunk_dirfd(fs, section), rel, &st, 0) == 0)
			return 0;
		if (errno != ENOENT && !err) {
			err = -errno;
			chunk_log_error(fs, section, DEVSTAT_READ, rel, "", errno);
		}
	}
	if (err)
		return err;
	section_chunk_name(r->ino, chunk, place->section, rel, sizeof(rel));
	section = place->section;
	if (durable) {
		/* fsync had made bytes durable there: real damage, for
		 * fsck to report by path, never repaired in silence. */
		chunk_log_error(fs, section, DEVSTAT_READ, rel, "missing chunk file whose record "
				"says it held data (run fsck.lsmfs): ", ENOENT);
		return 0;
	}
	r->missing++;
	return store_batch_delete(r->b, k, kl);
}

static int recover_one(struct fs *fs, uint64_t ino, uint64_t *dropped, uint64_t *missing)
{
	struct inode_rec rec;
	int rc = inode_load_rec(fs, ino, &rec);
	if (rc && rc != -ENOENT)
		return rc;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	/* Without a record (an orphan's reclaim was cut short), or with no
	 * name left (an orphan), the orphan key says what to do: the reclaim
	 * removes everything.  The mark just goes. */
	if (!rc && S_ISREG(rec.mode) && rec.nlink > 0) {
		uint64_t cs = fs->info.chunk_size;
		struct recover r = {.fs = fs, .ino = ino, .b = b,
				    .keep = (rec.flags & INODE_FLAG_CHUNKED) ? rec.size / cs + (rec.size % cs != 0) : 0};
		rc = chunk_scan(fs, ino, 0, UINT64_MAX, recover_chunk, &r);
		*dropped += r.dropped;
		*missing += r.missing;
	}
	rc = rc == -ENOENT ? 0 : rc;
	if (!rc) {
		uint8_t k[KEY_MAX];
		store_batch_delete(b, k, key_flux(k, ino));
		rc = store_write(fs->st, b, STORE_WRITE_RESERVE); /* crash repair: frees space */
	}
	store_batch_free(b);
	return rc;
}

struct ino_list {
	uint64_t *v;
	size_t n, cap;
};

static int collect_ino(struct fs *fs, uint64_t ino, void *ctx)
{
	struct ino_list *l = ctx; /* keys are unique: no search, unlike push_u64 */
	return chunk_list_append(&l->v, &l->n, &l->cap, ino);
}

int chunk_recover(struct fs *fs)
{
	/* Collected first: the repair writes where the scan reads. */
	struct ino_list l = {0};
	int rc = fs_each_ino_key(fs, KEY_FLUX, collect_ino, &l);
	uint64_t *inos = l.v;
	size_t n = l.n;
	uint64_t dropped = 0, missing = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		/* One inode that cannot be repaired keeps its mark (the next
		 * mount tries again; fsck reports it) and stops no mount. */
		int r = recover_one(fs, inos[i], &dropped, &missing);
		if (r == -ENOMEM)
			rc = r;
		else if (r)
			fs_logf(fs, "recovery: inode %" PRIu64 ": %s (left for fsck.lsmfs)", inos[i],
				strerror(-r));
	}
	if (!rc && (dropped || missing))
		fs_logf(fs, "recovery: %zu file%s changing at the crash: %" PRIu64
			" chunk%s past the stored size removed, %" PRIu64
			" record%s of chunk files never created (or already removed) dropped",
			n, n == 1 ? "" : "s", dropped, dropped == 1 ? "" : "s", missing,
			missing == 1 ? "" : "s");
	free(inos);
	return rc;
}
