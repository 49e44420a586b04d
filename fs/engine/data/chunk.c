/*
 * chunk.c: chunk files and their records (SCHEMA.md, "Data" and "Chunks
 * in flux").
 *
 * Chunk c of inode i is the file <sections>/<s>/<i>.<c> on the disk that
 * section s maps to, and it exists only while the record `C` i c does: the
 * record is written before the file is created and deleted after the file
 * is removed.  The record names s (SCHEMA.md "Placement"; one of the
 * older kind, chunk_section's), chosen when the chunk is made
 * (space_place), and never changes after.  Every place that names a chunk
 * file goes through section_chunk_name() (section.c).
 *
 * Chunks in flux: between a chunk record's creation and the next store
 * write of the inode's record, a crash could leave a chunk past the size
 * the store holds (the size grows in memory first), and a removal that
 * was cut short a record whose file is gone.  So the first chunk change
 * after the inode record was stored puts `G` ino (in the batch of the
 * chunk record, or before the first file is removed); storing the inode
 * record deletes it (inode_persist), and the mount repairs what a crash
 * left of every inode still marked (chunk_recover.c).  Making chunks
 * durable and recording their lengths is chunk_sync.c's.
 *
 * An open inode keeps a few chunk fds (CHUNK_FDS), opened read-only for
 * reads, so that a chunk file the administrator made read-only or
 * immutable still reads; a slot pinned for I/O outside the inode's lock
 * (iogate.c) is neither evicted nor reopened.
 *
 * Locking: what works on an inode's chunks, fds and lists (chunk_open,
 * chunk_drop, the accounting) runs under its stripe lock, and every use of a
 * chunk file's name inside its section's gate (gate.c; chunk_open enters
 * it).  Reading records (chunk_record_get, chunk_scan, chunk_any) takes no
 * lock of ours.  The reclaim drops a dead inode's chunks
 * (data_drop_chunks) holding none: nothing else reaches that inode
 * (reclaim.c).
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


/* Where a record's value puts the chunk, a damaged one logged (and taken
 * for one copy in chunk_section's). */
static struct chunk_place value_place(struct fs *fs, uint64_t ino, uint64_t chunk,
				      const void *val, size_t vl)
{
	struct chunk_place pl;
	if (chunk_value_place(val, vl, ino, chunk, fs->info.sections, &pl)) {
		fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": damaged record (%zu bytes); "
			"its file is looked for in section %" PRIu32 " (run fsck.lsmfs)", ino, chunk,
			vl, pl.section);
		pl.copies = 1;
		pl.stale = 0;
	}
	return pl;
}

int chunk_where(struct fs *fs, uint64_t ino, uint64_t chunk, struct chunk_place *place,
		bool *crashed)
{
	void *val;
	size_t vl;
	uint8_t k[KEY_MAX];
	size_t kl = key_chunk(k, ino, chunk);
	if (crashed)
		*crashed = false;
	int rc = store_get(fs->st, NULL, k, kl, &val, &vl);
	if (rc == -ENOENT) {
		*place = (struct chunk_place){.section = chunk_section(ino, chunk, fs->info.sections),
					      .copies = 1};
		return 0;
	}
	if (rc)
		return rc;
	*place = value_place(fs, ino, chunk, val, vl);
	struct chunk_value cv;
	if (crashed && chunk_value_parse(val, vl, &cv) == 0)
		*crashed = (cv.flags & CHUNK_INWRITE) && cv.gen != fs->mount_gen;
	free(val);
	return 1;
}

struct inode_data *chunk_data_of(struct fs_inode *in)
{
	if (!in->data) {
		in->data = calloc(1, sizeof(*in->data));
		if (in->data)
			for (int i = 0; i < CHUNK_FDS; i++)
				for (int j = 0; j < CHUNK_MAX_COPIES; j++)
					in->data->fds[i].copy[j].fd = in->data->fds[i].copy[j].dfd = -1;
	}
	return in->data;
}

/* Append v to the growing array *a. */
int chunk_list_append(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		uint64_t *g = realloc(*a, nc * sizeof(**a));
		if (!g)
			return -ENOMEM;
		*a = g;
		*cap = nc;
	}
	(*a)[(*n)++] = v;
	return 0;
}

/* Add v to the set *a, unless it is there already. */
static int push_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n && (*a)[*n - 1] == v)
		return 0; /* the common case: sequential writes to one chunk */
	for (size_t i = 0; i < *n; i++)
		if ((*a)[i] == v)
			return 0;
	return chunk_list_append(a, n, cap, v);
}

int chunk_mark_dirty(struct fs_inode *in, uint64_t chunk)
{
	struct inode_data *d = in->data;
	return push_u64(&d->dirty, &d->ndirty, &d->capdirty, chunk);
}

/* The slot's chunk goes (its sums with it). */
static void slot_close(struct fs *fs, struct chunk_fd *c)
{
	space_unpromise(fs, c, false);
	copies_close(c);
	c->used = false;
	c->failed = 0;
	sums_detach(c);
}

/* The slot is let go while its chunk stays: its changed sums go into the
 * record first (sums.c). */
static void slot_retire(struct fs *fs, uint64_t ino, struct chunk_fd *c)
{
	if (c->used)
		(void)sums_retire(fs, ino, c); /* logged */
	slot_close(fs, c);
}

void data_close_fds(struct fs *fs, struct fs_inode *in)
{
	if (!in->data)
		return;
	iogate_drain(fs, in); /* none under way when nothing holds in */
	int rc = sums_unmark(fs, in);
	if (rc)
		fs_logf(fs, "inode %" PRIu64 ": clearing the in-write marks its last fsync left: %s "
			"(its chunks' checksums are recomputed after a crash)", in->ino, strerror(-rc));
	for (int i = 0; i < CHUNK_FDS; i++)
		slot_retire(fs, in->ino, &in->data->fds[i]);
}

void data_free(struct fs *fs, struct fs_inode *in)
{
	if (!in->data)
		return;
	data_close_fds(fs, in);
	free(in->data->dirty);
	free(in->data->new_sections);
	free(in->data->marked);
	free(in->data);
	in->data = NULL;
}

/* The cached slot of chunk learns its new durable length. */
void chunk_set_durable(struct fs_inode *in, uint64_t chunk, uint64_t len)
{
	for (int i = 0; in->data && i < CHUNK_FDS; i++)
		if (in->data->fds[i].used && in->data->fds[i].chunk == chunk)
			in->data->fds[i].durable = len;
}

void chunk_let_go(struct fs *fs, struct fs_inode *in, uint64_t chunk)
{
	for (int i = 0; in->data && i < CHUNK_FDS; i++) {
		struct chunk_fd *c = &in->data->fds[i];
		if (c->used && c->chunk == chunk && !c->pins)
			slot_retire(fs, in->ino, c);
	}
}

static void forget_fd(struct fs *fs, struct fs_inode *in, uint64_t chunk)
{
	if (!in || !in->data)
		return;
	for (int i = 0; i < CHUNK_FDS; i++) {
		struct chunk_fd *c = &in->data->fds[i];
		if (c->used && c->chunk == chunk)
			slot_close(fs, c);
	}
}

int chunk_mark_flux(struct fs *fs, struct fs_inode *in, struct store_batch *b)
{
	if (in->in_flux)
		return 0;
	uint8_t k[KEY_MAX];
	size_t kl = key_flux(k, in->ino);
	int rc = b ? store_batch_put(b, k, kl, "", 0) : store_put(fs->st, k, kl, "", 0, 0);
	if (!rc && !b)
		in->in_flux = true; /* with a batch: once the caller wrote it */
	return rc;
}


int chunk_record_fetch(struct fs *fs, uint64_t ino, uint64_t chunk, void **val, size_t *vl,
		       uint64_t *durable, bool *lost)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_chunk(k, ino, chunk);
	*val = NULL;
	*vl = 0;
	int rc = store_get(fs->st, NULL, k, kl, val, vl);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	*durable = 0;
	if (chunk_value_decode(*val, *vl, durable))
		fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": damaged record (%zu bytes); "
			"its length is not checked", ino, chunk, *vl);
	*lost = chunk_value_lost(*val, *vl);
	return 1;
}

int chunk_record_get(struct fs *fs, uint64_t ino, uint64_t chunk, uint64_t *durable, bool *lost)
{
	void *v;
	size_t vl;
	bool l = false;
	int rc = chunk_record_fetch(fs, ino, chunk, &v, &vl, durable, &l);
	free(v);
	if (rc == 1 && lost)
		*lost = l;
	return rc;
}

int chunk_lost_cut(struct fs *fs, uint64_t ino, uint64_t chunk, uint64_t len)
{
	uint64_t durable;
	bool lost = false;
	int rc = chunk_record_get(fs, ino, chunk, &durable, &lost);
	if (rc <= 0 || !lost)
		return rc < 0 ? rc : 0;
	if (durable <= len)
		return 1;
	uint8_t k[KEY_MAX], v[CHUNK_LOST_LEN];
	size_t kl = key_chunk(k, ino, chunk);
	chunk_value_encode_lost(len, v);
	rc = store_put(fs->st, k, kl, v, sizeof(v), STORE_WRITE_SYNC);
	return rc ? rc : 1;
}

int chunk_record_lower(struct fs *fs, struct chunk_fd *c, uint64_t ino, uint64_t len)
{
	if (c->durable <= len) {
		/* The slot may be behind the record: the lengths of an inode
		 * let go of from memory are recorded without it
		 * (chunk_record_unsynced). */
		uint64_t durable = 0;
		int r = chunk_record_get(fs, ino, c->chunk, &durable, NULL);
		if (r < 0)
			return r;
		if (durable <= len)
			return 0;
		c->durable = durable;
	}
	uint8_t k[KEY_MAX], v[CHUNK_COPIES_HDR];
	size_t kl = key_chunk(k, ino, c->chunk);
	/* The file is about to change: marked so (sums.c). */
	copies_settle(c);
	size_t vl = chunk_value_put_place(len, CHUNK_INWRITE, fs->mount_gen, &c->place, 0, NULL, 0, v);
	/* Durable before the file shrinks: a crash between must not leave a
	 * record longer than the file, which reads as lost data. */
	int rc = store_put(fs->st, k, kl, v, vl, STORE_WRITE_SYNC);
	if (!rc) {
		c->durable = len;
		sums_inwrite_set(c);
	}
	return rc;
}

/* Make chunk file rel in section's directory (the directory too when
 * missing): its fd, or -errno (logged). */
static int make_file(struct fs *fs, uint32_t section, const char *rel, int flags)
{
	int dirfd = chunk_dirfd(fs, section);
	/* O_TRUNC: a file without record is a leftover of a crash. */
	int fd = openat(dirfd, rel, flags | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 && errno == ENOENT) {
		char sdir[SECTION_NAME_MAX];
		section_dir_name(section, sdir);
		/* EEXIST from a racing mkdir is fine.  A new section directory
		 * is made durable at once (rare): no fsync of the chunks in it
		 * covers its own name. */
		if (mkdirat(dirfd, sdir, 0700) == 0 && fsync(dirfd) != 0)
			chunk_log_error(fs, section, DEVSTAT_WRITE, "",
					"syncing the new section directory in ", errno);
		fd = openat(dirfd, rel, flags | O_CREAT | O_TRUNC, 0600);
	}
	if (fd < 0) {
		int e = errno;
		chunk_log_error(fs, section, DEVSTAT_WRITE, rel, "creating ", e);
		return -e;
	}
	return fd;
}

/* A new chunk file made in section: fsync covers its directory entry. */
static void made_in(struct fs *fs, struct fs_inode *in, uint32_t section)
{
	chunk_section_changed(fs, section);
	struct inode_data *d = in->data;
	if (push_u64(&d->new_sections, &d->nnew, &d->capnew, section))
		fs_logf(fs, "out of memory tracking new chunk files; fsync may miss a directory");
}

/* A new chunk at *place: its record (with the in-flux mark) first, then a
 * fresh, empty file per copy into fds[].  If copy 0's cannot be made, the
 * record goes again; a later copy that cannot be made is stale (the
 * record rewritten so).  Copies whose disks are not usable are stale in
 * *place already (space_place). */
static int create_chunk(struct fs *fs, struct fs_inode *in, uint64_t chunk,
			struct chunk_place *place, int flags, int fds[CHUNK_MAX_COPIES])
{
	uint8_t ck[KEY_MAX];
	size_t ckl = key_chunk(ck, in->ino, chunk);
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	bool marking = !in->in_flux;
	in->fresh = false; /* before the record can exist */
	/* Marked in write from the start: a crash that keeps the record
	 * has the file's sums computed (sums.c). */
	uint8_t cv[CHUNK_COPIES_HDR];
	store_batch_put(b, ck, ckl, cv,
			chunk_value_put_place(0, CHUNK_INWRITE, fs->mount_gen, place, 0, NULL, 0, cv));
	int rc = chunk_mark_flux(fs, in, b);
	if (!rc)
		rc = store_write(fs->st, b, 0);
	store_batch_free(b);
	if (rc)
		return rc;
	if (marking)
		in->in_flux = true;
	char rel[96];
	uint8_t failed = 0;
	for (unsigned i = 0; i < place->copies; i++) {
		fds[i] = -1;
		if (place->stale >> i & 1)
			continue;
		uint32_t section = section_of_copy(place->section, i, fs->info.sections);
		section_chunk_name(in->ino, chunk, section, rel, sizeof(rel));
		int fd = make_file(fs, section, rel, flags);
		if (fd < 0 && (failed | place->stale | 1u << i) == (1u << place->copies) - 1) {
			/* No copy made, so no record: a record without file
			 * inside the size would read as a hole that fsck
			 * reports as lost. */
			for (unsigned j = 0; j < i; j++)
				if (fds[j] >= 0)
					close(fds[j]);
			if (store_delete(fs->st, ck, ckl, 0))
				fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 " keeps a record without "
					"file (the next mount drops it)", in->ino, chunk);
			return fd;
		}
		if (fd < 0) {
			failed |= (uint8_t)(1u << i);
			continue;
		}
		fds[i] = fd;
		made_in(fs, in, section);
	}
	if (failed) {
		place->stale |= failed;
		store_put(fs->st, ck, ckl, cv,
			  chunk_value_put_place(0, CHUNK_INWRITE, fs->mount_gen, place, 0, NULL, 0, cv), 0);
	}
	return 0;
}

/* Copy i of an existing chunk, opened (or made: CHUNK_CREATE of a record
 * without file, nothing synced) for access: its fd, -ENOENT when it has
 * no file and held nothing durable, or -errno (logged). */
static int open_copy(struct fs *fs, struct fs_inode *in, uint64_t chunk, uint32_t section,
		     enum chunk_access access, uint64_t durable, bool lost)
{
	bool write = access != CHUNK_READ;
	int flags = (write ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	char rel[96];
	section_chunk_name(in->ino, chunk, section, rel, sizeof(rel));
	int fd = openat(chunk_dirfd(fs, section), rel, flags);
	if (fd < 0 && errno == ENOENT && access == CHUNK_CREATE && durable == 0) {
		fd = openat(chunk_dirfd(fs, section), rel, flags | O_CREAT, 0600);
		if (fd >= 0)
			made_in(fs, in, section);
	}
	if (fd >= 0)
		return fd;
	int e = errno;
	if (e == ENOENT && durable == 0)
		return -ENOENT; /* record without file, nothing synced: a hole */
	if (e == ENOENT && lost) {
		fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 " was lost with its disk "
			"(lsmfs-disk remove --lost): EIO until the file is truncated "
			"below it or removed", in->ino, chunk);
		return -EIO;
	}
	if (e == ENOENT) {
		/* fsync made bytes durable there: they are lost */
		chunk_log_error(fs, section, DEVSTAT_READ, rel, "missing chunk file (its "
				"record says it held data): ", e);
		return -EIO;
	}
	chunk_log_error(fs, section, write ? DEVSTAT_WRITE : DEVSTAT_READ, rel, "opening ", e);
	return -e;
}

/*
 * The copies of an existing chunk that can be opened, into fds[] (-1 for
 * the others): 0 when one at least is open.  A copy that fails for a fault
 * of its disk or file is flagged in *failed and left, and so, for a change,
 * is one on a disk not usable or without file while another has one (a
 * read leaves them as they are: nothing changed, and a copy whose file a
 * crash kept from its disk is made again by the sync that follows it,
 * chunk_sync.c); every copy a hole: -ENOENT; else the first error.
 */
static int open_copies(struct fs *fs, struct fs_inode *in, uint64_t chunk,
		       const struct chunk_place *place, enum chunk_access access, uint64_t durable,
		       bool lost, int fds[CHUNK_MAX_COPIES], uint8_t *failed)
{
	int first_err = 0, opened = 0, holes = 0;
	uint8_t bad = 0;
	for (unsigned i = 0; i < place->copies; i++) {
		fds[i] = -1;
		uint32_t section = section_of_copy(place->section, i, fs->info.sections);
		if ((place->stale >> i & 1) || !disk_usable(fs, section_disk_of(fs, section))) {
			if (!(place->stale >> i & 1) && access != CHUNK_READ)
				bad |= (uint8_t)(1u << i); /* missing: a change leaves it behind */
			continue;
		}
		int fd = open_copy(fs, in, chunk, section, access, durable, lost);
		if (fd >= 0) {
			fds[i] = fd;
			opened++;
			continue;
		}
		if (fd == -ENOENT) {
			holes++;
			if (access != CHUNK_READ)
				bad |= (uint8_t)(1u << i);
			continue;
		}
		if (!first_err)
			first_err = fd;
		if (devstats_disk_fault(fd))
			bad |= (uint8_t)(1u << i);
		else
			bad |= 0x80; /* the daemon short of something: no copy goes stale */
	}
	if (opened && !(bad & 0x80)) {
		*failed = bad & (uint8_t)((1u << place->copies) - 1);
		return 0;
	}
	for (unsigned i = 0; i < place->copies; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	if (first_err)
		return first_err;
	if (holes)
		return -ENOENT;
	return -EIO; /* every copy on a disk not usable */
}

bool chunk_copies_apart(struct fs *fs, const struct chunk_place *pl)
{
	if (pl->copies < 2 || pl->stale)
		return true;
	uint32_t p = section_of_copy(pl->section, 1, fs->info.sections);
	return p == UINT32_MAX || section_disk_of(fs, pl->section) != section_disk_of(fs, p);
}

void chunk_enter(struct fs *fs, const struct chunk_place *pl, uint64_t ino, uint64_t chunk,
		 bool write)
{
	uint32_t sec[CHUNK_MAX_COPIES];
	unsigned n = 0;
	for (unsigned i = 0; i < pl->copies; i++)
		sec[n++] = section_of_copy(pl->section, i, fs->info.sections);
	if (n == 2 && sec[1] < sec[0]) {
		uint32_t t = sec[0];
		sec[0] = sec[1];
		sec[1] = t;
	}
	for (unsigned i = 0; i < n; i++)
		section_enter(fs, sec[i], ino, chunk, write);
}

/* Are the open copies of c current: each copy's section not moved since
 * it was opened? */
static bool copies_current(struct fs *fs, const struct chunk_fd *c)
{
	for (unsigned i = 0; i < c->place.copies; i++)
		if (c->copy[i].fd >= 0 && c->copy[i].gen != section_gen(fs, c->copy[i].section))
			return false;
	return true;
}

/* Opened for a change, a two-copy chunk whose record (val) a crash left in
 * write: its open copies brought in step first (copies_resync), as the
 * crash sweep's sync would, for the change marks the record in write for
 * this mount and that sync no longer knows of the crash then (SCHEMA.md
 * "Copies").  0, or -errno with fds[] closed. */
static int crash_in_step(struct fs *fs, uint64_t ino, uint64_t chunk, struct chunk_place *place,
			 const void *val, size_t vl, int fds[CHUNK_MAX_COPIES])
{
	struct chunk_value cv;
	if (place->copies < 2 || chunk_value_parse(val, vl, &cv) ||
	    !(cv.flags & CHUNK_INWRITE) || cv.gen == fs->mount_gen)
		return 0;
	int from = -1, nopen = 0;
	for (unsigned i = 0; i < place->copies; i++)
		if (fds[i] >= 0) {
			nopen++;
			if (from < 0)
				from = (int)i;
		}
	int rc = nopen > 1 ? copies_resync(fs, ino, chunk, place, fds, (unsigned)from) : 0;
	if (rc)
		for (unsigned i = 0; i < place->copies; i++)
			if (fds[i] >= 0) {
				close(fds[i]);
				fds[i] = -1;
			}
	return rc;
}

int chunk_open(struct fs *fs, struct fs_inode *in, uint64_t chunk, enum chunk_access access,
	       struct chunk_fd **out, bool *created)
{
	struct inode_data *d = chunk_data_of(in);
	if (!d)
		return -ENOMEM;
	if (created)
		*created = false;
	bool write = access != CHUNK_READ;
	if (write && !fs_writable(fs))
		return -EROFS;
	int mark = section_mark();
again:;
	/* Where the files are: the cached slot's place, else the record's;
	 * a new chunk's is chosen by free space (space_place).  A record
	 * never changes its section, so it is read outside the gates. */
	struct chunk_fd *cached = NULL;
	for (int i = 0; i < CHUNK_FDS && !cached; i++)
		if (d->fds[i].used && d->fds[i].chunk == chunk)
			cached = &d->fds[i];
	uint64_t durable = 0;
	bool lost = false;
	void *val = NULL;
	size_t vl = 0;
	int exists = 1;
	struct chunk_place place;
	if (cached) {
		copies_settle(cached);
		place = cached->place;
	} else {
		exists = chunk_record_fetch(fs, in->ino, chunk, &val, &vl, &durable, &lost);
		if (exists < 0)
			return exists;
		if (exists)
			place = value_place(fs, in->ino, chunk, val, vl);
		else if (access != CHUNK_CREATE) /* a hole */
			place = (struct chunk_place){
				.section = chunk_section(in->ino, chunk, fs->info.sections), .copies = 1};
		else if ((exists = space_place(fs, in, chunk, &place)) < 0)
			return exists; /* no usable disk has room: -ENOSPC */
	}
	chunk_enter(fs, &place, in->ino, chunk, write);
	if (!exists && access == CHUNK_CREATE && !chunk_copies_apart(fs, &place)) {
		/* Placed from the map outside the gates: a move switched one
		 * of the pair onto the other's disk meanwhile (with nothing of
		 * this chunk there yet to refuse it, move_copy.c).  Inside both
		 * gates the pair stays where it is: placed again. */
		section_release(fs, mark);
		goto again;
	}
	struct chunk_fd *victim = NULL;
	if (cached) {
		if (copies_current(fs, cached) && (!write || cached->writable) &&
		    copies_first(cached) >= 0) {
			cached->stamp = ++d->stamp;
			*out = cached;
			return 0;
		}
		/* moved since it was opened (the old copy is gone or going),
		 * or opened read-only: reopened in its slot */
		victim = cached;
		if (victim->pins) {
			section_release(fs, mark);
			iogate_wait(fs, in);
			goto again;
		}
		exists = chunk_record_fetch(fs, in->ino, chunk, &val, &vl, &durable, &lost);
		if (exists < 0)
			return exists;
	} else {
		for (int i = 0; i < CHUNK_FDS; i++) {
			struct chunk_fd *c = &d->fds[i];
			if (!c->pins && (!victim || !c->used ||
					 (victim->used && c->stamp < victim->stamp)))
				victim = c;
		}
	}
	if (!victim) {
		/* Every slot is in I/O outside the lock (iogate.c): wait for
		 * one, outside the sections' gates. */
		free(val);
		section_release(fs, mark);
		iogate_wait(fs, in);
		goto again;
	}
	int fds[CHUNK_MAX_COPIES] = {-1, -1};
	uint8_t failed = 0;
	int rc;
	if (!exists && access != CHUNK_CREATE) {
		rc = -ENOENT; /* no record: a hole */
	} else if (exists) {
		rc = open_copies(fs, in, chunk, &place, access, durable, lost, fds, &failed);
		if (!rc && write)
			rc = crash_in_step(fs, in->ino, chunk, &place, val, vl, fds);
	} else {
		int flags = O_RDWR | O_CLOEXEC;
		rc = create_chunk(fs, in, chunk, &place, flags, fds);
		if (!rc && created)
			*created = true;
	}
	if (rc) {
		free(val);
		return rc;
	}
	/* The same chunk reopened (moved, or for writing) keeps its sums. */
	struct chunk_sums *keep = NULL;
	if (victim->used && victim->chunk == chunk) {
		keep = victim->sums;
		victim->sums = NULL;
	} else if (victim->used) {
		/* Evicted: its chunk may be written again through another
		 * slot, which has no promise of room for it. */
		space_unpromise(fs, victim, true);
	}
	slot_retire(fs, in->ino, victim);
	victim->used = true;
	victim->chunk = chunk;
	victim->place = place;
	victim->section = place.section;
	victim->failed = failed;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++) {
		victim->copy[i].fd = i < place.copies ? fds[i] : -1;
		victim->copy[i].dfd = -1;
		victim->copy[i].section = i < place.copies
						  ? section_of_copy(place.section, i, fs->info.sections)
						  : UINT32_MAX;
		victim->copy[i].gen = i < place.copies ? section_gen(fs, victim->copy[i].section) : 0;
	}
	/* A change leaves a copy that could not be opened behind: stale from
	 * now on (the record says so with the in-write mark, sums.c). */
	if (write)
		copies_settle(victim);
	victim->promised = 0;
	if (!exists)
		space_promise(fs, victim); /* released as it is written */
	victim->writable = write || !exists;
	victim->durable = durable;
	int first = copies_first(victim);
	struct stat st;
	bool known = first >= 0 && fstat(victim->copy[first].fd, &st) == 0;
	uint64_t blocks = copies_blocks(victim);
	victim->blocks = blocks == UINT64_MAX ? 0 : blocks;
	victim->next_off = known ? (uint64_t)st.st_size : 0; /* appends are sequential */
	victim->stamp = ++d->stamp;
	victim->sums = keep;
	rc = keep ? 0 : sums_attach(fs, in->ino, victim, val, vl, !exists);
	free(val);
	if (rc) {
		slot_close(fs, victim);
		return rc;
	}
	*out = victim;
	return 0;
}


void chunk_account_blocks(struct fs_inode *in, struct chunk_fd *c, uint64_t now)
{
	in->rec.blocks = in->rec.blocks + now >= c->blocks ? in->rec.blocks + now - c->blocks : 0;
	c->blocks = now;
}

void chunk_account(struct fs_inode *in, struct chunk_fd *c)
{
	uint64_t blocks = copies_blocks(c);
	if (blocks != UINT64_MAX)
		chunk_account_blocks(in, c, blocks);
}

/* An iterator over the chunk records of ino in [from, to) (to UINT64_MAX:
 * to the last). */
static int range_iter(struct fs *fs, uint64_t ino, uint64_t from, uint64_t to,
		      struct store_iter **it)
{
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	size_t ll = key_chunk(lo, ino, from);
	size_t hl = to == UINT64_MAX ? key_chunk_prefix(hi, ino + 1) : key_chunk(hi, ino, to);
	struct store_iter_options io = {.lower = lo, .lower_len = ll, .upper = hi, .upper_len = hl};
	return store_iter_new(fs->st, &io, it);
}

int chunk_records_from(struct fs *fs, uint64_t ino, uint64_t chunk, struct store_iter **it)
{
	uint8_t lo[KEY_MAX], hi[1] = {KEY_CHUNK + 1};
	size_t ll = key_chunk(lo, ino, chunk);
	/* From the start: every key of the kind, damaged short ones too
	 * (the callers step over them). */
	struct store_iter_options io = {.lower = lo, .lower_len = ino || chunk ? ll : 1,
					.upper = hi, .upper_len = 1};
	return store_iter_new(fs->st, &io, it);
}

/*
 * Remove the chunks [from, to) of ino that have records: files first, then
 * the records into b.  The work is one step per chunk that exists, found
 * by a range scan of the records, never one per chunk index of the range.
 * With in (a live inode), the in-flux mark goes first, so that a crash
 * between a file's removal and its record's leaves something the mount
 * repairs; without (reclaim), the orphan key plays that part.
 */
static int drop_range(struct fs *fs, struct fs_inode *in, uint64_t ino, uint64_t from,
		      uint64_t to, struct store_batch *b, uint64_t *freed, uint64_t limit,
		      uint64_t *resume)
{
	if (resume)
		*resume = UINT64_MAX;
	struct store_iter *it;
	int rc = range_iter(fs, ino, from, to, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);
		if (kl != 17)
			continue;
		uint64_t chunk = get_be64(k + 9);
		if (limit-- == 0) {
			*resume = chunk;
			break;
		}
		size_t vl;
		const uint8_t *v = store_iter_value(it, &vl);
		struct chunk_place pl = value_place(fs, ino, chunk, v, vl);
		forget_fd(fs, in, chunk);
		int mark = section_mark();
		chunk_enter(fs, &pl, ino, chunk, true);
		/* Every copy's file, stale ones too (they may have one).  A
		 * copy on a disk not usable stays there, for the sweep of the
		 * next mount that has the disk (sweep.c); with every copy so,
		 * the chunk stays. */
		unsigned usable = 0;
		for (unsigned i = 0; i < pl.copies; i++)
			usable += disk_usable(fs, section_disk_of(fs, section_of_copy(pl.section, i,
										    fs->info.sections)));
		if (!usable) {
			section_release(fs, mark);
			rc = -EIO;
			break;
		}
		for (unsigned i = 0; !rc && i < pl.copies; i++) {
			uint32_t section = section_of_copy(pl.section, i, fs->info.sections);
			if (!disk_usable(fs, section_disk_of(fs, section)))
				continue;
			char rel[96];
			section_chunk_name(ino, chunk, section, rel, sizeof(rel));
			struct stat st;
			int dirfd = chunk_dirfd(fs, section);
			if (fstatat(dirfd, rel, &st, 0) == 0 && freed)
				*freed += (uint64_t)st.st_blocks;
			if (unlinkat(dirfd, rel, 0) != 0 && errno != ENOENT) {
				rc = -errno;
				chunk_log_error(fs, section, DEVSTAT_WRITE, rel, "removing ", errno);
				break;
			}
			chunk_section_changed(fs, section);
		}
		section_release(fs, mark);
		if (rc)
			break;
		store_batch_delete(b, k, kl);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

/*
 * Before any chunk file of a live inode goes, one synced batch holds the
 * in-flux mark, every record in [from, to) with its durable length
 * cleared, and (new_size != UINT64_MAX) the inode record with its new
 * size.  Then a power cut that keeps the files' removal but loses the
 * store's unsynced tail leaves records of missing files that read as
 * holes past the new size, which the mount's repair drops, and never a
 * record that claims durable bytes the disk no longer has.  Returns 1
 * when there is nothing in the range (no batch was written).
 */
static int drop_prepare(struct fs *fs, struct fs_inode *in, uint64_t from, uint64_t to,
			uint64_t new_size)
{
	struct store_iter *it;
	int rc = range_iter(fs, in->ino, from, to, &it);
	if (rc)
		return rc;
	struct store_batch *b = store_batch_new();
	if (!b) {
		store_iter_free(it);
		return -ENOMEM;
	}
	size_t found = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		if (kl != 17)
			continue;
		found++;
		/* Length 0, the section kept (the older kind: empty). */
		uint8_t nv[CHUNK_COPIES_HDR];
		size_t nvl = chunk_value_relength(v, vl, 0, nv);
		if (nvl == CHUNK_VAL_LEN)
			nvl = 0;
		if (vl != nvl || memcmp(v, nv, nvl))
			store_batch_put(b, k, kl, nv, nvl);
	}
	rc = store_iter_status(it);
	store_iter_free(it);
	bool marking = !in->in_flux;
	if (!rc && found) {
		rc = chunk_mark_flux(fs, in, b);
		if (!rc && new_size != UINT64_MAX) {
			struct inode_rec r = in->rec;
			r.size = new_size;
			inode_rec_put(b, in->ino, &r);
		}
		if (!rc)
			rc = store_write(fs->st, b, STORE_WRITE_SYNC | STORE_WRITE_RESERVE);
		if (!rc && marking)
			in->in_flux = true;
		if (!rc && new_size != UINT64_MAX)
			in->rec.size = new_size;
	}
	store_batch_free(b);
	return rc ? rc : !found;
}

int chunk_drop(struct fs *fs, struct fs_inode *in, uint64_t from, uint64_t to, uint64_t new_size)
{
	int rc = drop_prepare(fs, in, from, to, new_size);
	if (rc)
		return rc > 0 ? 0 : rc;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	uint64_t freed = 0;
	rc = drop_range(fs, in, in->ino, from, to, b, &freed, UINT64_MAX, NULL);
	/* What was removed goes from the store even when a later file
	 * refused: its records must not outlive its files. */
	if (store_batch_count(b)) {
		int r2 = store_write(fs->st, b, STORE_WRITE_RESERVE); /* frees space */
		if (!rc)
			rc = r2;
	}
	store_batch_free(b);
	in->rec.blocks = in->rec.blocks > freed ? in->rec.blocks - freed : 0;
	return rc;
}

int data_drop_chunks(struct fs *fs, uint64_t ino, uint64_t from_chunk, uint64_t limit,
		     struct store_batch *b, uint64_t *freed_blocks, uint64_t *resume)
{
	return drop_range(fs, NULL, ino, from_chunk, UINT64_MAX, b, freed_blocks, limit, resume);
}

int chunk_scan(struct fs *fs, uint64_t ino, uint64_t from, uint64_t to,
	       int (*fn)(void *ctx, uint64_t chunk, uint64_t durable,
			 const struct chunk_place *place),
	       void *ctx)
{
	struct store_iter *it;
	int rc = range_iter(fs, ino, from, to, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); !rc && store_iter_valid(it); store_iter_next(it)) {
		size_t kl;
		const uint8_t *k = store_iter_key(it, &kl);
		size_t vl;
		const uint8_t *v = store_iter_value(it, &vl);
		uint64_t durable = 0;
		if (kl != 17)
			continue;
		uint64_t chunk = get_be64(k + 9);
		struct chunk_place pl = value_place(fs, ino, chunk, v, vl);
		rc = fn(ctx, chunk, chunk_value_decode(v, vl, &durable) ? 0 : durable, &pl);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

static int found_one(void *ctx, uint64_t chunk, uint64_t durable,
		     const struct chunk_place *place)
{
	(void)chunk;
	(void)durable;
	(void)place;
	*(bool *)ctx = true;
	return 1; /* one is enough */
}

int chunk_any(struct fs *fs, uint64_t ino)
{
	bool any = false;
	int rc = chunk_scan(fs, ino, 0, UINT64_MAX, found_one, &any);
	return rc < 0 ? rc : any;
}

/* A chunk file was made or removed in section's directory: the unmount
 * fsyncs it (chunk_sync.c sync_sections). */
void chunk_section_changed(struct fs *fs, uint32_t section)
{
	uint8_t bit = (uint8_t)(1u << (section % 8));
	if (!(__atomic_load_n(&fs->section_changed[section / 8], __ATOMIC_RELAXED) & bit))
		__atomic_fetch_or(&fs->section_changed[section / 8], bit, __ATOMIC_RELAXED);
}

void chunk_file_remove(struct fs *fs, uint64_t ino, uint64_t chunk, uint32_t section,
		       const char *what)
{
	if (!disk_usable(fs, section_disk_of(fs, section)))
		return;
	char rel[96];
	section_chunk_name(ino, chunk, section, rel, sizeof(rel));
	if (unlinkat(chunk_dirfd(fs, section), rel, 0) != 0 && errno != ENOENT)
		chunk_log_error(fs, section, DEVSTAT_WRITE, rel, what, errno);
	chunk_section_changed(fs, section);
}

/* chunk's record with its place changed by fn (which may refuse: its
 * error returned, nothing written), the rest of it kept; the cached slot
 * too; into b or (b NULL) synced.  0 for no record or a lost one. */
static int change_place(struct fs *fs, struct fs_inode *in, uint64_t chunk,
			int (*fn)(struct chunk_place *pl, const void *arg), const void *arg,
			struct store_batch *b)
{
	void *val;
	size_t vl;
	uint64_t durable;
	bool lost;
	int rc = chunk_record_fetch(fs, in->ino, chunk, &val, &vl, &durable, &lost);
	if (rc <= 0)
		return rc;
	struct chunk_value cv;
	struct chunk_place pl;
	if (lost || chunk_value_parse(val, vl, &cv) ||
	    chunk_value_place(val, vl, in->ino, chunk, fs->info.sections, &pl)) {
		free(val);
		return lost ? 0 : -EUCLEAN;
	}
	if ((rc = fn(&pl, arg))) {
		free(val);
		return rc;
	}
	uint32_t *sums = malloc((cv.nsums ? cv.nsums : 1) * sizeof(*sums));
	uint8_t *v = malloc(CHUNK_VALUE_MAX(fs->info.chunk_size));
	rc = sums && v ? 0 : -ENOMEM;
	if (!rc) {
		for (uint32_t i = 0; i < cv.nsums; i++)
			sums[i] = chunk_value_sum(&cv, i);
		size_t nl = chunk_value_put_place(cv.durable, cv.flags, cv.gen, &pl, cv.shift, sums,
						  cv.nsums, v);
		uint8_t k[KEY_MAX];
		size_t kl = key_chunk(k, in->ino, chunk);
		rc = b ? store_batch_put(b, k, kl, v, nl) : store_put(fs->st, k, kl, v, nl, STORE_WRITE_SYNC);
	}
	/* The cached slot says the same from now on. */
	for (int i = 0; !rc && in->data && i < CHUNK_FDS; i++) {
		struct chunk_fd *c = &in->data->fds[i];
		if (!c->used || c->chunk != chunk)
			continue;
		/* The same change to its own place (which may know of copies
		 * that failed since the record was written); when its files
		 * move, it goes, reopened where the record says. */
		struct chunk_place sp = c->place;
		if (fn(&sp, arg))
			continue; /* it knows of more failed copies: they stay */
		if (sp.section == c->place.section && sp.copies == c->place.copies)
			c->place = sp;
		else if (!c->pins) /* a caller that moves files drains first */
			slot_close(fs, c);
	}
	free(sums);
	free(v);
	free(val);
	return rc;
}

struct restale {
	uint8_t set, clear;
};

static int restale(struct chunk_place *pl, const void *arg)
{
	const struct restale *r = arg;
	uint8_t all = (uint8_t)((1u << pl->copies) - 1);
	uint8_t stale = (uint8_t)(((pl->stale | r->set) & ~r->clear) & all);
	if (stale == all)
		return -ENODATA; /* no copy would be left */
	pl->stale = stale;
	return 0;
}

int chunk_restale(struct fs *fs, struct fs_inode *in, uint64_t chunk, uint8_t set, uint8_t clear,
		  struct store_batch *b)
{
	struct restale r = {.set = set, .clear = clear};
	return change_place(fs, in, chunk, restale, &r, b);
}

static int replace(struct chunk_place *pl, const void *arg)
{
	*pl = *(const struct chunk_place *)arg;
	return 0;
}

int chunk_set_place(struct fs *fs, struct fs_inode *in, uint64_t chunk,
		    const struct chunk_place *place)
{
	return change_place(fs, in, chunk, replace, place, NULL);
}
