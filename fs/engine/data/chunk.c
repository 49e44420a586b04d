/*
 * chunk.c: chunk files and their records (SCHEMA.md, "Data" and "Chunks
 * in flux").
 *
 * Chunk c of inode i is the file <sections>/<s>/<i>.<c> on the disk that
 * section s = chunk_section(i, c) maps to, and it exists only while the
 * record `C` i c does: the record is written before the file is created
 * and deleted after the file is removed.  Every place that names a chunk
 * file goes through section_chunk_name() (section.c).
 *
 * Chunks in flux: between a chunk record's creation and the next store
 * write of the inode's record, a crash could leave a chunk past the size
 * the store holds (the size grows in memory first), and a removal that
 * was cut short a record whose file is gone.  So the first chunk change
 * after the inode record was stored puts `G` ino (in the batch of the
 * chunk record, or before the first file is removed); storing the inode
 * record deletes it (inode_persist), and the mount repairs what a crash
 * left of every inode still marked (chunk_recover).
 *
 * An open inode keeps a few chunk fds (CHUNK_FDS), opened read-only for
 * reads, so that a chunk file the administrator made read-only or
 * immutable still reads; a slot pinned for I/O outside the inode's lock
 * (iogate.c) is neither evicted nor reopened.
 *
 * Locking: what works on an inode's chunks, fds and lists (chunk_open,
 * chunk_drop, chunk_sync_dirty, the accounting, the crash sweep's
 * chunk_keep_unsynced) runs under its stripe lock, and every use of a
 * chunk file's name inside its section's gate (gate.c; chunk_open enters
 * it).  Reading records (chunk_record_get, chunk_scan, chunk_any) takes no
 * lock of ours.  The reclaim drops a dead inode's chunks
 * (data_drop_chunks) holding none: nothing else reaches that inode
 * (reclaim.c).  The kept set of unsynced chunks has fs->unsynced_lock, and
 * chunk_record_unsynced takes each inode's lock in turn.  chunk_sync_all
 * (unmount, remount read-only) and chunk_recover (at mount, before any
 * request) take no inode's lock.
 */
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int chunk_dirfd(struct fs *fs, uint32_t section)
{
	return fs->sections_fd[section_disk_of(fs, section)];
}

uint32_t chunk_disk(struct fs *fs, uint64_t ino, uint64_t chunk)
{
	return section_disk_of(fs, chunk_section(ino, chunk, fs->info.sections));
}

struct inode_data *chunk_data_of(struct fs_inode *in)
{
	if (!in->data) {
		in->data = calloc(1, sizeof(*in->data));
		if (in->data)
			for (int i = 0; i < CHUNK_FDS; i++) {
				in->data->fds[i].fd = -1;
				in->data->fds[i].dfd = -1;
			}
	}
	return in->data;
}

/* Append v to the growing array *a. */
static int append_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
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
	return append_u64(a, n, cap, v);
}

int chunk_mark_dirty(struct fs_inode *in, uint64_t chunk)
{
	struct inode_data *d = in->data;
	return push_u64(&d->dirty, &d->ndirty, &d->capdirty, chunk);
}

static void slot_close(struct chunk_fd *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->dfd >= 0)
		close(c->dfd);
	c->fd = -1;
	c->dfd = -1;
}

void data_close_fds(struct fs *fs, struct fs_inode *in)
{
	if (!in->data)
		return;
	iogate_drain(fs, in); /* none under way when nothing holds in */
	for (int i = 0; i < CHUNK_FDS; i++)
		slot_close(&in->data->fds[i]);
}

void data_free(struct fs *fs, struct fs_inode *in)
{
	if (!in->data)
		return;
	data_close_fds(fs, in);
	free(in->data->dirty);
	free(in->data->new_sections);
	free(in->data);
	in->data = NULL;
}

/* The cached slot of chunk learns its new durable length. */
static void chunk_set_durable(struct fs_inode *in, uint64_t chunk, uint64_t len)
{
	for (int i = 0; in->data && i < CHUNK_FDS; i++)
		if (in->data->fds[i].fd >= 0 && in->data->fds[i].chunk == chunk)
			in->data->fds[i].durable = len;
}

static void forget_fd(struct fs_inode *in, uint64_t chunk)
{
	if (!in || !in->data)
		return;
	for (int i = 0; i < CHUNK_FDS; i++) {
		struct chunk_fd *c = &in->data->fds[i];
		if (c->fd >= 0 && c->chunk == chunk)
			slot_close(c);
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

static void log_chunk_error(struct fs *fs, uint32_t section, const char *rel, const char *what,
			    int err)
{
	uint32_t disk = section_disk_of(fs, section);
	const char *path = __atomic_load_n(&fs->ds->paths[disk], __ATOMIC_ACQUIRE);
	fs_logf(fs, "disk %u: %s%s/%s/%s/%s: %s", disk, what, path ? path : "(missing disk)",
		LSMFS_DIR, LSMFS_SECTIONS_DIR, rel, strerror(err));
}

int chunk_record_get(struct fs *fs, uint64_t ino, uint64_t chunk, uint64_t *durable, bool *lost)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_chunk(k, ino, chunk);
	void *v;
	size_t vl;
	int rc = store_get(fs->st, NULL, k, kl, &v, &vl);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	*durable = 0;
	if (chunk_value_decode(v, vl, durable))
		fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": damaged record (%zu bytes); "
			"its length is not checked", ino, chunk, vl);
	if (lost)
		*lost = chunk_value_lost(v, vl);
	free(v);
	return 1;
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
	uint8_t k[KEY_MAX], v[CHUNK_VAL_LEN];
	size_t kl = key_chunk(k, ino, c->chunk);
	chunk_value_encode(len, v);
	/* Durable before the file shrinks: a crash between must not leave a
	 * record longer than the file, which reads as lost data. */
	int rc = store_put(fs->st, k, kl, v, sizeof(v), STORE_WRITE_SYNC);
	if (!rc)
		c->durable = len;
	return rc;
}

/* A new chunk: its record (with the in-flux mark) first, then a fresh,
 * empty file.  If the file cannot be made, the record goes again. */
static int create_chunk(struct fs *fs, struct fs_inode *in, uint64_t chunk, uint32_t section,
			const char *rel, int flags)
{
	uint8_t ck[KEY_MAX];
	size_t ckl = key_chunk(ck, in->ino, chunk);
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	bool marking = !in->in_flux;
	in->fresh = false; /* before the record can exist */
	store_batch_put(b, ck, ckl, "", 0);
	int rc = chunk_mark_flux(fs, in, b);
	if (!rc)
		rc = store_write(fs->st, b, 0);
	store_batch_free(b);
	if (rc)
		return rc;
	if (marking)
		in->in_flux = true;
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
			log_chunk_error(fs, section, "", "syncing the new section directory in ",
					errno);
		fd = openat(dirfd, rel, flags | O_CREAT | O_TRUNC, 0600);
	}
	if (fd < 0) {
		int e = errno;
		log_chunk_error(fs, section, rel, "creating ", e);
		/* No file, so no record: a record without file inside the
		 * size would read as a hole that fsck reports as lost. */
		if (store_delete(fs->st, ck, ckl, 0))
			fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 " keeps a record without file "
				"(the next mount drops it)", in->ino, chunk);
		return -e;
	}
	chunk_section_changed(fs, section);
	struct inode_data *d = in->data;
	if (push_u64(&d->new_sections, &d->nnew, &d->capnew, section))
		fs_logf(fs, "out of memory tracking new chunk files; fsync may miss a directory");
	return fd;
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
	uint32_t section = chunk_section(in->ino, chunk, fs->info.sections);
	int mark = section_mark();
again:
	section_enter(fs, section, in->ino, chunk, write);
	if (!disk_usable(fs, section_disk_of(fs, section))) {
		/* Missing (a degraded mount) or found replaced (diskwatch.c):
		 * nothing goes there.  A chunk without record is a hole all
		 * the same (the record comes before the file). */
		uint64_t durable;
		int has = access == CHUNK_CREATE ? 1 : chunk_record_get(fs, in->ino, chunk, &durable, NULL);
		return has == 0 ? -ENOENT : has < 0 ? has : -EIO;
	}
	uint32_t gen = section_gen(fs, section);
	struct chunk_fd *victim = NULL;
	for (int i = 0; i < CHUNK_FDS; i++) {
		struct chunk_fd *c = &d->fds[i];
		if (c->fd >= 0 && c->chunk == chunk) {
			if (c->gen != gen || (write && !c->writable)) {
				/* moved since it was opened (the old copy is
				 * gone or going), or opened read-only */
				victim = c; /* reopen it for writing, in its slot */
				break;
			}
			c->stamp = ++d->stamp;
			*out = c;
			return 0;
		}
		if (!c->pins && (!victim || c->fd < 0 ||
				 (victim->fd >= 0 && c->stamp < victim->stamp)))
			victim = c;
	}
	if (!victim || victim->pins) {
		/* Its slot, or every slot, is in I/O outside the lock
		 * (iogate.c): wait for one, outside the section's gate. */
		section_release(fs, mark);
		iogate_wait(fs, in);
		goto again;
	}
	char rel[96];
	section_chunk_name(in->ino, chunk, section, rel, sizeof(rel));
	uint64_t durable = 0;
	bool lost = false;
	int exists = chunk_record_get(fs, in->ino, chunk, &durable, &lost);
	if (exists < 0)
		return exists;
	int flags = (write ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	int fd;
	if (exists) {
		fd = openat(chunk_dirfd(fs, section), rel, flags);
		if (fd < 0 && errno == ENOENT && access == CHUNK_CREATE && durable == 0)
			fd = openat(chunk_dirfd(fs, section), rel, flags | O_CREAT, 0600);
		if (fd < 0) {
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
				log_chunk_error(fs, section, rel, "missing chunk file (its record says it held "
						"data): ", e);
				return -EIO;
			}
			log_chunk_error(fs, section, rel, "opening ", e);
			return -e;
		}
	} else if (access != CHUNK_CREATE) {
		return -ENOENT;
	} else {
		fd = create_chunk(fs, in, chunk, section, rel, flags);
		if (fd < 0)
			return fd;
		if (created)
			*created = true;
	}
	slot_close(victim);
	struct stat st;
	victim->fd = fd;
	victim->chunk = chunk;
	victim->gen = gen;
	victim->writable = write;
	victim->durable = durable;
	bool known = fstat(fd, &st) == 0;
	victim->blocks = known ? (uint64_t)st.st_blocks : 0;
	victim->next_off = known ? (uint64_t)st.st_size : 0; /* appends are sequential */
	victim->stamp = ++d->stamp;
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
	struct stat st;
	if (fstat(c->fd, &st) == 0)
		chunk_account_blocks(in, c, (uint64_t)st.st_blocks);
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
		uint32_t section = chunk_section(ino, chunk, fs->info.sections);
		char rel[96];
		section_chunk_name(ino, chunk, section, rel, sizeof(rel));
		forget_fd(in, chunk);
		int mark = section_mark();
		section_enter(fs, section, ino, chunk, true);
		if (!disk_usable(fs, section_disk_of(fs, section))) {
			section_release(fs, mark);
			rc = -EIO;
			break;
		}
		struct stat st;
		int dirfd = chunk_dirfd(fs, section);
		if (fstatat(dirfd, rel, &st, 0) == 0 && freed)
			*freed += (uint64_t)st.st_blocks;
		if (unlinkat(dirfd, rel, 0) != 0 && errno != ENOENT) {
			rc = -errno;
			log_chunk_error(fs, section, rel, "removing ", errno);
			section_release(fs, mark);
			break;
		}
		section_release(fs, mark);
		chunk_section_changed(fs, section);
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
		store_iter_value(it, &vl);
		if (kl != 17)
			continue;
		found++;
		if (vl)
			store_batch_put(b, k, kl, "", 0);
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
	       int (*fn)(void *ctx, uint64_t chunk, uint64_t durable), void *ctx)
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
		if (kl == 17)
			rc = fn(ctx, get_be64(k + 9),
				chunk_value_decode(v, vl, &durable) ? 0 : durable);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

static int found_one(void *ctx, uint64_t chunk, uint64_t durable)
{
	(void)chunk;
	(void)durable;
	*(bool *)ctx = true;
	return 1; /* one is enough */
}

int chunk_any(struct fs *fs, uint64_t ino)
{
	bool any = false;
	int rc = chunk_scan(fs, ino, 0, UINT64_MAX, found_one, &any);
	return rc < 0 ? rc : any;
}

/* syncfs of every usable disk (errors logged): before many fdatasyncs,
 * one journal commit that leaves them little to do. */
static void sync_all_disks(struct fs *fs)
{
	for (uint32_t d = 0; d < fs->ds->ndisks; d++)
		if (disk_usable(fs, d)) {
			stats_fsync(fs, d);
			if (syncfs(fs->sections_fd[d]) != 0)
				fs_logf(fs, "disk %u (%s): syncfs: %s", d, fs->ds->paths[d],
					strerror(errno));
		}
}


/* At most this many chunk files are open at once for one fsync. */
#define SYNC_WINDOW 64

/*
 * fdatasync the chunks of ino in dirty[] (repeats allowed), record the
 * length each now has durably, then fsync the section directories in
 * new_sections[] that got new chunk files.  in, when given, is ino in
 * memory: its cached slots learn the lengths.  Under ino's lock.
 */
static int sync_inode_chunks(struct fs *fs, uint64_t ino, struct fs_inode *in,
			     const uint64_t *dirty, size_t ndirty, const uint64_t *new_sections,
			     size_t nnew, unsigned wflags)
{
	int rc = 0;
	struct store_batch *lens = store_batch_new();
	if (!lens)
		return -ENOMEM;
	/* Windows of SYNC_WINDOW files: writeback of a window starts first,
	 * so that the blocks of its files are allocated in one journal
	 * transaction; the fdatasyncs then mostly wait.  However many chunks
	 * are dirty, the descriptors in use stay bounded. */
	for (size_t base = 0; base < ndirty && !rc; base += SYNC_WINDOW) {
		size_t n = ndirty - base < SYNC_WINDOW ? ndirty - base : SYNC_WINDOW;
		int fds[SYNC_WINDOW];
		for (size_t i = 0; i < n; i++) {
			uint64_t chunk = dirty[base + i];
			uint32_t section = chunk_section(ino, chunk, fs->info.sections);
			char rel[96];
			section_chunk_name(ino, chunk, section, rel, sizeof(rel));
			/* The gate only while the name resolves: a move that
			 * switches the section later made the copy durable
			 * on its new disk first, so syncing the old one then
			 * loses nothing (gate.c). */
			int mark = section_mark();
			section_enter(fs, section, ino, chunk, false);
			if (!disk_usable(fs, section_disk_of(fs, section)))
				fds[i] = -EIO;
			else if ((fds[i] = openat(chunk_dirfd(fs, section), rel, O_RDONLY | O_CLOEXEC)) < 0)
				fds[i] = -errno;
			section_release(fs, mark);
			if (fds[i] >= 0 && ndirty > 1)
				(void)sync_file_range(fds[i], 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint only */
		}
		for (size_t i = 0; i < n; i++) {
			uint64_t chunk = dirty[base + i];
			if (fds[i] == -ENOENT) /* dropped since it was written */
				continue;
			if (fds[i] < 0) {
				fs_logf(fs, "inode %" PRIu64 ": opening chunk %" PRIu64 " for fsync: %s",
					ino, chunk, strerror(-fds[i]));
				if (!rc)
					rc = fds[i];
				continue;
			}
			if (!rc)
				stats_fsync(fs, chunk_disk(fs, ino, chunk));
			struct stat st;
			if (!rc && fdatasync(fds[i]) != 0) {
				rc = -errno;
				fs_logf(fs, "inode %" PRIu64 ": fsync of chunk %" PRIu64 ": %s", ino,
					chunk, strerror(errno));
			} else if (!rc && fstat(fds[i], &st) == 0) {
				/* What is durable now: its length goes into the
				 * record, so that a chunk file found shorter
				 * later is known to have lost data. */
				uint8_t k[KEY_MAX], v[CHUNK_VAL_LEN];
				chunk_value_encode((uint64_t)st.st_size, v);
				store_batch_put(lens, k, key_chunk(k, ino, chunk), v, sizeof(v));
				if (in)
					chunk_set_durable(in, chunk, (uint64_t)st.st_size);
			}
			close(fds[i]);
		}
	}
	/* New chunk files need their directory entries durable too. */
	for (size_t i = 0; !rc && i < nnew; i++) {
		uint32_t section = (uint32_t)new_sections[i];
		char sdir[SECTION_NAME_MAX];
		section_dir_name(section, sdir);
		int mark = section_mark();
		section_enter(fs, section, ino, 0, false);
		uint32_t disk = section_disk_of(fs, section);
		int fd = -1;
		if (!disk_usable(fs, disk))
			errno = EIO;
		else
			fd = openat(chunk_dirfd(fs, section), sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		section_release(fs, mark);
		stats_fsync(fs, disk);
		if (fd < 0 && errno == ENOENT)
			continue; /* moved away, its new directory synced by the move */
		if (fd < 0 || fsync(fd) != 0)
			rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	/* The lengths reach the store before the caller syncs its log. */
	if (!rc && store_batch_count(lens))
		rc = store_write(fs->st, lens, wflags);
	store_batch_free(lens);
	return rc;
}


/*
 * Chunk lengths (SCHEMA.md "Chunk lengths"): every chunk written is on its
 * inode's dirty list until an fsync, a remount read-only or the unmount
 * fdatasyncs it and records its length.  An inode dropped from memory
 * before that leaves its lists here (fs->unsynced), so that the fsync that
 * follows its return, or the unmount, still covers them; past
 * UNSYNCED_MAX inodes or UNSYNCED_CHUNKS_MAX chunks they are recorded at
 * once.  An entry is taken out, synced and recorded under its inode's
 * lock, so no truncate or removal of its chunks runs beside it, and the
 * unlink that leads to a reclaim drops it under that lock too.
 */
static void unsynced_free(struct unsynced_inode *u)
{
	free(u->dirty);
	free(u->new_sections);
}

/* Add u's lists to the entry of u->ino, made when it has none (the lists
 * then move, without a copy): the set owns them after.  Sets *full when
 * the set is past its bound.  -ENOMEM leaves u as it was. */
static int keep_unsynced(struct fs *fs, struct unsynced_inode *u, bool *full)
{
	int rc = 0;
	pthread_mutex_lock(&fs->unsynced_lock);
	struct unsynced_inode *e = NULL;
	for (size_t i = 0; i < fs->nunsynced && !e; i++)
		if (fs->unsynced[i].ino == u->ino)
			e = &fs->unsynced[i];
	if (e) {
		/* Dropped twice before a sync: add to what it left. */
		size_t n = e->ndirty, nn = e->nnew;
		for (size_t i = 0; i < u->ndirty && !rc; i++)
			rc = append_u64(&e->dirty, &e->ndirty, &e->capdirty, u->dirty[i]);
		for (size_t i = 0; i < u->nnew && !rc; i++)
			rc = append_u64(&e->new_sections, &e->nnew, &e->capnew, u->new_sections[i]);
		if (rc) {
			e->ndirty = n; /* as it was */
			e->nnew = nn;
		} else {
			unsynced_free(u);
		}
	} else {
		if (fs->nunsynced == fs->capunsynced) {
			size_t nc = fs->capunsynced ? fs->capunsynced * 2 : 64;
			struct unsynced_inode *g = realloc(fs->unsynced, nc * sizeof(*g));
			if (!g)
				rc = -ENOMEM;
			else {
				fs->unsynced = g;
				fs->capunsynced = nc;
			}
		}
		if (!rc)
			fs->unsynced[fs->nunsynced++] = *u;
	}
	if (!rc)
		fs->unsynced_chunks += u->ndirty;
	*full = fs->nunsynced >= UNSYNCED_MAX || fs->unsynced_chunks >= UNSYNCED_CHUNKS_MAX;
	pthread_mutex_unlock(&fs->unsynced_lock);
	return rc;
}

bool chunk_remember_unsynced(struct fs *fs, struct fs_inode *in)
{
	struct inode_data *d = in->data;
	if (!d || (!d->ndirty && !d->nnew))
		return false;
	struct unsynced_inode u = {
		.ino = in->ino,
		.dirty = d->dirty, .ndirty = d->ndirty, .capdirty = d->capdirty,
		.new_sections = d->new_sections, .nnew = d->nnew, .capnew = d->capnew,
	};
	bool full = false;
	if (keep_unsynced(fs, &u, &full) == 0) {
		d->dirty = d->new_sections = NULL;
		d->ndirty = d->capdirty = d->nnew = d->capnew = 0;
		return full;
	}
	/* No memory to keep them: synced and recorded now, under the lock
	 * the caller holds. */
	fs_logf(fs, "inode %" PRIu64 ": out of memory keeping the chunks written since its last "
		"fsync: syncing them now", in->ino);
	if (sync_inode_chunks(fs, in->ino, in, d->dirty, d->ndirty, d->new_sections, d->nnew, 0))
		fs_logf(fs, "inode %" PRIu64 ": syncing its chunks failed; their lengths stay "
			"unrecorded", in->ino);
	d->ndirty = d->nnew = 0;
	return false;
}

bool chunk_keep_unsynced(struct fs *fs, uint64_t ino, uint64_t chunk)
{
	struct unsynced_inode u = {
		.ino = ino, .dirty = malloc(sizeof(uint64_t)), .ndirty = 1, .capdirty = 1,
	};
	bool full = false;
	if (u.dirty)
		u.dirty[0] = chunk;
	if (!u.dirty || keep_unsynced(fs, &u, &full)) {
		free(u.dirty);
		fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": out of memory: its length stays "
			"unrecorded", ino, chunk);
	}
	return full;
}

/* Take ino's entry out of the kept set into *out; false when it has none. */
static bool take_unsynced(struct fs *fs, uint64_t ino, struct unsynced_inode *out)
{
	bool found = false;
	pthread_mutex_lock(&fs->unsynced_lock);
	for (size_t i = 0; i < fs->nunsynced; i++)
		if (fs->unsynced[i].ino == ino) {
			*out = fs->unsynced[i];
			fs->unsynced[i] = fs->unsynced[--fs->nunsynced];
			fs->unsynced_chunks -= out->ndirty < fs->unsynced_chunks ? out->ndirty
										  : fs->unsynced_chunks;
			found = true;
			break;
		}
	pthread_mutex_unlock(&fs->unsynced_lock);
	return found;
}

void chunk_forget_unsynced(struct fs *fs, uint64_t ino)
{
	struct unsynced_inode u;
	if (take_unsynced(fs, ino, &u))
		unsynced_free(&u);
}

int chunk_record_unsynced(struct fs *fs, unsigned wflags)
{
	/* The inode numbers first, then each entry under its inode's lock:
	 * the lock comes before unsynced_lock, as in drop(). */
	pthread_mutex_lock(&fs->unsynced_lock);
	size_t n = fs->nunsynced;
	uint64_t *inos = malloc((n ? n : 1) * sizeof(*inos));
	for (size_t i = 0; inos && i < n; i++)
		inos[i] = fs->unsynced[i].ino;
	pthread_mutex_unlock(&fs->unsynced_lock);
	if (!inos)
		return -ENOMEM;
	if (n > 1)
		sync_all_disks(fs); /* one journal commit, then each fdatasync is quick */
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_t *lock = inode_lock_of(fs, inos[i]);
		pthread_mutex_lock(lock);
		struct unsynced_inode u;
		if (take_unsynced(fs, inos[i], &u)) {
			int r = sync_inode_chunks(fs, u.ino, NULL, u.dirty, u.ndirty, u.new_sections,
						  u.nnew, wflags);
			unsynced_free(&u);
			if (r && !rc)
				rc = r;
		}
		pthread_mutex_unlock(lock);
	}
	free(inos);
	return rc;
}

int chunk_sync_dirty(struct fs *fs, struct fs_inode *in, unsigned wflags)
{
	/* What it wrote before it was last dropped from memory first. */
	struct unsynced_inode u;
	if (__atomic_load_n(&fs->nunsynced, __ATOMIC_RELAXED) && take_unsynced(fs, in->ino, &u)) {
		int rc = sync_inode_chunks(fs, in->ino, in, u.dirty, u.ndirty, u.new_sections, u.nnew, wflags);
		if (rc) {
			/* Kept for the next fsync or the unmount. */
			bool full;
			if (keep_unsynced(fs, &u, &full))
				unsynced_free(&u); /* ENOMEM: fsync fails anyway */
			return rc;
		}
		unsynced_free(&u);
	}
	struct inode_data *d = in->data;
	if (!d)
		return 0;
	int rc = sync_inode_chunks(fs, in->ino, in, d->dirty, d->ndirty, d->new_sections, d->nnew, wflags);
	if (!rc) {
		d->ndirty = 0;
		d->nnew = 0;
	}
	return rc;
}

void chunk_section_changed(struct fs *fs, uint32_t section)
{
	uint8_t bit = (uint8_t)(1u << (section % 8));
	if (!(__atomic_load_n(&fs->section_changed[section / 8], __ATOMIC_RELAXED) & bit))
		__atomic_fetch_or(&fs->section_changed[section / 8], bit, __ATOMIC_RELAXED);
}

/* fsync every section directory changed since the mount. */
static int sync_sections(struct fs *fs)
{
	int rc = 0;
	for (uint32_t s = 0; s < fs->info.sections; s++) {
		if (!(fs->section_changed[s / 8] & (1u << (s % 8))))
			continue;
		int mark = section_mark();
		section_enter(fs, s, 0, 0, false);
		uint32_t disk = section_disk_of(fs, s);
		if (!disk_usable(fs, disk)) {
			section_release(fs, mark);
			rc = -EIO; /* replaced under us: nothing of ours to sync */
			continue;
		}
		char sdir[SECTION_NAME_MAX];
		section_dir_name(s, sdir);
		int fd = openat(chunk_dirfd(fs, s), sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		section_release(fs, mark);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || fsync(fd) != 0) {
			int e = errno;
			fs_logf(fs, "disk %u: fsync of %s%s/%s/%s: %s", disk, fs->ds->paths[disk],
				LSMFS_DIR, LSMFS_SECTIONS_DIR, sdir, strerror(e));
			rc = -e;
		}
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

int chunk_sync_all(struct fs *fs)
{
	int rc = 0;
	for (uint32_t d = 0; fs->sections_fd && d < fs->ds->ndisks; d++)
		if (diskset_present(fs->ds, d) && fs->sections_fd[d] >= 0 &&
		    syncfs(fs->sections_fd[d]) != 0) {
			int e = errno;
			fs_logf(fs, "disk %u (%s): syncfs: %s", d, fs->ds->paths[d], strerror(e));
			if (!rc)
				rc = -e;
		}
	if (fs->section_changed) {
		int r = sync_sections(fs); /* syncfs may not reach them (FUSE disks) */
		if (!rc)
			rc = r;
	}
	return rc;
}

/* chunk_recover: one marked inode. */
struct recover {
	struct fs *fs;
	uint64_t ino, keep; /* chunks [0, keep) lie inside the size */
	struct store_batch *b;
	uint64_t dropped, missing;
};

static int recover_chunk(void *ctx, uint64_t chunk, uint64_t durable)
{
	struct recover *r = ctx;
	struct fs *fs = r->fs;
	uint32_t section = chunk_section(r->ino, chunk, fs->info.sections);
	char rel[96];
	section_chunk_name(r->ino, chunk, section, rel, sizeof(rel));
	uint8_t k[KEY_MAX];
	size_t kl = key_chunk(k, r->ino, chunk);
	if (chunk >= r->keep) {
		if (unlinkat(chunk_dirfd(fs, section), rel, 0) != 0 && errno != ENOENT) {
			log_chunk_error(fs, section, rel, "removing ", errno);
			return -errno;
		}
		chunk_section_changed(fs, section);
		r->dropped++;
		return store_batch_delete(r->b, k, kl);
	}
	struct stat st;
	if (fstatat(chunk_dirfd(fs, section), rel, &st, 0) == 0)
		return 0;
	if (errno != ENOENT) {
		log_chunk_error(fs, section, rel, "", errno);
		return -errno;
	}
	if (durable) {
		/* fsync had made bytes durable there: real damage, for
		 * fsck to report by path, never repaired in silence. */
		log_chunk_error(fs, section, rel, "missing chunk file whose record says it held data "
				"(run fsck.lsmfs): ", ENOENT);
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
	return append_u64(&l->v, &l->n, &l->cap, ino);
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
