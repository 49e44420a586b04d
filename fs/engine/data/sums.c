/*
 * sums.c: the checksums of chunk data (SCHEMA.md "Chunk checksums").
 *
 * Every block of a chunk file has a sum in the chunk's record (`C`), put
 * there when the chunk's length is (fsync, remount read-only, unmount:
 * chunk_sync.c, sums_final).  In between, an open chunk's slot keeps them
 * in memory (struct chunk_sums): loaded from the record when it can be
 * trusted, set from the buffer of each write that covers whole blocks,
 * "not known" (0) for a block a write covered in part, a splice wrote, or
 * two writes under way covered at once; sums_final reads back the blocks
 * not known when the length is recorded.  Every read verifies the blocks
 * whose sums are known (sums_verify): a mismatch is EIO, logged, never
 * data.
 *
 * The crash rule.  A chunk file changes on its disk whenever the kernel
 * writes it back, its record only when the store's log is synced.  So
 * before the first change of a chunk since its sums were recorded, its
 * record gets the mark CHUNK_INWRITE, synced (sums_mark_inwrite): a crash
 * then finds the mark wherever the file may disagree with its sums, and
 * the crash sweep has those chunks' sums recomputed (sweep.c); until then
 * their blocks are not verified.  The mark goes with the record that
 * carries the new sums, written after the file's fdatasync.  A slot let go
 * before that writes its sums into the record with the mark still on
 * (sums_retire) and this mount's number (fs->mount_gen): this mount
 * trusts them, the next one recomputes.
 *
 * Locking: under the inode's lock, but sums_verify and sums_compute,
 * which run while the slot is pinned for a read or a write (iogate.c:
 * reads and writes of a file never overlap, and a change of its layout
 * drains them first).
 */
#include "data.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define BUSY_TAINT 0x80u /* two writes were under way over the block at once */

struct chunk_sums {
	uint32_t n;      /* blocks in a chunk */
	uint8_t shift;
	bool inwrite;    /* the record's CHUNK_INWRITE is in the store (this mount) */
	bool dirty;      /* sums changed since the record last got them */
	bool record_sums; /* the record holds sums with the mark (sums_retire's) */
	uint32_t zero;   /* the sum of a block of zeros */
	uint32_t *sum;   /* per block; 0: not known */
	uint8_t *busy;   /* writes under way over the block (| BUSY_TAINT) */
};

void sums_init_mount(struct fs *fs)
{
	uint32_t g = 0;
	while (g == 0)
		if (getrandom(&g, sizeof(g), 0) != (ssize_t)sizeof(g))
			g = (uint32_t)getpid() ^ (uint32_t)(uintptr_t)fs;
	fs->mount_gen = g;
}

/* The record of (ino, chunk), parsed into *cv (pointing into *val, which
 * the caller frees): 1, 0 when there is none, or -errno. */
static int record_fetch(struct fs *fs, uint64_t ino, uint64_t chunk, void **val,
			struct chunk_value *cv)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_chunk(k, ino, chunk), vl;
	*val = NULL;
	int rc = store_get(fs->st, NULL, k, kl, val, &vl);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (chunk_value_parse(*val, vl, cv)) {
		memset(cv, 0, sizeof(*cv)); /* damaged: nothing trusted (fsck reports it) */
		cv->section = CHUNK_HASHED;
	}
	return 1;
}

/* Sums of a record this mount may trust: written at a sync (the file has
 * not changed since), or let go of by this mount's own slot. */
static bool record_trusted(const struct fs *fs, const struct chunk_value *cv)
{
	return (cv->flags & CHUNK_SUMS) && cv->shift == sums_block_shift(fs->info.chunk_size) &&
	       (!(cv->flags & CHUNK_INWRITE) || cv->gen == fs->mount_gen);
}

int sums_attach(struct fs *fs, uint64_t ino, struct chunk_fd *c, const void *val, size_t vl,
		bool created)
{
	struct chunk_sums *s = c->sums;
	if (!s) {
		unsigned shift = sums_block_shift(fs->info.chunk_size);
		uint32_t n = (uint32_t)(fs->info.chunk_size >> shift);
		s = calloc(1, sizeof(*s));
		if (s) {
			s->sum = malloc(n * sizeof(*s->sum));
			s->busy = calloc(n, 1);
		}
		if (!s || !s->sum || !s->busy) {
			if (s) {
				free(s->sum);
				free(s->busy);
			}
			free(s);
			return -ENOMEM;
		}
		s->n = n;
		s->shift = (uint8_t)shift;
		c->sums = s;
	}
	s->zero = sums_block(NULL, 0, (size_t)1 << s->shift, ino, c->chunk);
	s->dirty = false;
	memset(s->busy, 0, s->n);
	struct chunk_value cv;
	if (created || (val && chunk_value_parse(val, vl, &cv) == 0 && record_trusted(fs, &cv))) {
		/* Blocks past what the record covers lie past the file's end
		 * (a record without the mark has the file's length), or the
		 * file is new: zeros. */
		for (uint32_t i = 0; i < s->n; i++)
			s->sum[i] = created ? s->zero
				  : i < cv.nsums ? chunk_value_sum(&cv, i)
				  : (cv.flags & CHUNK_INWRITE) ? 0 : s->zero;
		s->inwrite = created || (cv.flags & CHUNK_INWRITE);
		s->record_sums = !created && (cv.flags & CHUNK_INWRITE);
	} else {
		/* No sums (made before them), or ones a crash may have left
		 * behind the file: nothing verified until recomputed. */
		memset(s->sum, 0, s->n * sizeof(*s->sum));
		s->inwrite = s->record_sums = false;
	}
	return 0;
}

void sums_detach(struct chunk_fd *c)
{
	if (!c->sums)
		return;
	free(c->sums->sum);
	free(c->sums->busy);
	free(c->sums);
	c->sums = NULL;
}

/* Write the record of c as flags with the slot's sums (or none): its
 * length as the store has it.  wflags: store_write's. */
static int record_put(struct fs *fs, uint64_t ino, struct chunk_fd *c, uint8_t flags,
		      unsigned wflags)
{
	void *old;
	struct chunk_value cv;
	int rc = record_fetch(fs, ino, c->chunk, &old, &cv);
	if (rc <= 0)
		return rc; /* no record: the chunk went (nothing to mark) */
	uint64_t durable = cv.durable;
	bool lost = cv.flags & CHUNK_LOST;
	free(old);
	if (lost)
		return 0; /* it reads and writes EIO: nothing to mark */
	struct chunk_sums *s = c->sums;
	uint8_t *v = malloc(CHUNK_VALUE_MAX(fs->info.chunk_size));
	if (!v)
		return -ENOMEM;
	copies_settle(c); /* the copies that failed are stale from now on */
	size_t vl = chunk_value_put_place(durable, flags, fs->mount_gen, &c->place, s->shift, s->sum,
					  s->n, v);
	uint8_t k[KEY_MAX];
	rc = store_put(fs->st, k, key_chunk(k, ino, c->chunk), v, vl, wflags);
	free(v);
	return rc;
}

int sums_retire(struct fs *fs, uint64_t ino, struct chunk_fd *c)
{
	int rc = 0;
	if (c->sums && c->sums->dirty && c->sums->inwrite) {
		/* The mark is in the store already: this write needs no sync. */
		rc = record_put(fs, ino, c, CHUNK_INWRITE | CHUNK_SUMS, 0);
		if (rc)
			fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 ": keeping its checksums: %s; "
				"recomputed at its next sync", ino, c->chunk, strerror(-rc));
	}
	sums_detach(c);
	return rc;
}

int sums_mark_inwrite(struct fs *fs, uint64_t ino, struct chunk_fd *c)
{
	struct chunk_sums *s = c->sums;
	if (!s || (s->inwrite && !s->record_sums))
		return 0;
	/* Sums a retire left in the record would be stale once this change
	 * is made (and read by whoever opens the chunk next): they go
	 * first.  The mark is in the store already: no sync. */
	int rc = record_put(fs, ino, c, CHUNK_INWRITE, s->inwrite ? 0 : STORE_WRITE_SYNC);
	if (!rc)
		s->inwrite = true, s->record_sums = false;
	return rc;
}

void sums_inwrite_set(struct chunk_fd *c)
{
	if (c->sums)
		c->sums->inwrite = true;
}

/* The blocks [*lo, *hi) that [off, off + n) of the chunk touches. */
static void block_range(const struct chunk_sums *s, uint64_t off, uint64_t n, uint32_t *lo,
			uint32_t *hi)
{
	uint64_t bs = (uint64_t)1 << s->shift;
	*lo = (uint32_t)(off >> s->shift);
	uint64_t h = (off + n + bs - 1) >> s->shift;
	*hi = (uint32_t)(h < s->n ? h : s->n);
}

int sums_write_begin(struct fs *fs, uint64_t ino, struct chunk_fd *c, uint64_t off, uint64_t n)
{
	struct chunk_sums *s = c->sums;
	if (!s || !n)
		return 0;
	int rc = sums_mark_inwrite(fs, ino, c);
	if (rc)
		return rc;
	uint32_t lo, hi;
	block_range(s, off, n, &lo, &hi);
	for (uint32_t i = lo; i < hi; i++) {
		if (s->busy[i] & ~BUSY_TAINT)
			s->busy[i] |= BUSY_TAINT;
		if ((s->busy[i] & ~BUSY_TAINT) < 0x7f)
			s->busy[i]++;
		s->sum[i] = 0;
	}
	s->dirty = true;
	return 0;
}

uint32_t sums_blocks_of(const struct chunk_fd *c, uint64_t off, uint64_t n)
{
	if (!c->sums)
		return 0;
	uint32_t lo, hi;
	block_range(c->sums, off, n, &lo, &hi);
	return hi - lo;
}

void sums_compute(uint64_t ino, const struct chunk_fd *c, const char *buf, uint64_t off,
		  uint64_t n, uint32_t *out)
{
	const struct chunk_sums *s = c->sums;
	if (!s)
		return;
	uint64_t bs = (uint64_t)1 << s->shift;
	uint32_t lo, hi;
	block_range(s, off, n, &lo, &hi);
	for (uint32_t i = lo; i < hi; i++) {
		uint64_t b = (uint64_t)i << s->shift;
		out[i - lo] = buf && b >= off && b + bs <= off + n
				      ? sums_block(buf + (b - off), bs, bs, ino, c->chunk)
				      : 0;
	}
}

void sums_write_end(struct chunk_fd *c, uint64_t off, uint64_t n, const uint32_t *computed)
{
	struct chunk_sums *s = c->sums;
	if (!s || !n)
		return;
	uint32_t lo, hi;
	block_range(s, off, n, &lo, &hi);
	for (uint32_t i = lo; i < hi; i++) {
		bool alone = !(s->busy[i] & BUSY_TAINT);
		if (s->busy[i] & ~BUSY_TAINT)
			s->busy[i]--;
		if (!(s->busy[i] & ~BUSY_TAINT))
			s->busy[i] = 0; /* none under way: the taint goes */
		s->sum[i] = alone && computed ? computed[i - lo] : 0;
	}
}

int sums_change(struct fs *fs, uint64_t ino, struct chunk_fd *c, uint64_t from, uint64_t to,
		bool zero)
{
	struct chunk_sums *s = c->sums;
	if (!s)
		return 0;
	int rc = sums_mark_inwrite(fs, ino, c);
	if (rc)
		return rc;
	uint64_t bs = (uint64_t)1 << s->shift;
	if (to > (uint64_t)s->n << s->shift)
		to = (uint64_t)s->n << s->shift;
	if (from >= to)
		return 0;
	uint32_t lo, hi;
	block_range(s, from, to - from, &lo, &hi);
	for (uint32_t i = lo; i < hi; i++) {
		uint64_t b = (uint64_t)i << s->shift;
		s->sum[i] = zero && b >= from && b + bs <= to ? s->zero : 0;
	}
	s->dirty = true;
	return 0;
}

/* Blocks already said to fail (a reader retrying one says nothing new). */
#define SAID_MAX 256
static struct {
	pthread_mutex_t lock;
	uint64_t ino[SAID_MAX], chunk[SAID_MAX];
	uint32_t block[SAID_MAX];
	unsigned next, n;
} said = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool said_before(uint64_t ino, uint64_t chunk, uint32_t block)
{
	pthread_mutex_lock(&said.lock);
	bool found = false;
	for (unsigned i = 0; i < said.n && !found; i++)
		found = said.ino[i] == ino && said.chunk[i] == chunk && said.block[i] == block;
	if (!found) {
		said.ino[said.next] = ino;
		said.chunk[said.next] = chunk;
		said.block[said.next] = block;
		said.next = (said.next + 1) % SAID_MAX;
		if (said.n < SAID_MAX)
			said.n++;
	}
	pthread_mutex_unlock(&said.lock);
	return found;
}

void sums_report(struct fs *fs, uint64_t ino, const struct chunk_fd *c, unsigned copy,
		 uint32_t block, bool once, const char *outcome)
{
	uint32_t section = c->copy[copy].section;
	uint32_t disk = section_disk_of(fs, section);
	if (once && said_before(ino, c->chunk, block))
		return;
	/* Counted once per block, as it is said (btrfs counts per read). */
	devstats_count(fs, disk, DEVSTAT_CHECKSUM);
	unsigned shift = c->sums->shift;
	char rel[96];
	section_chunk_name(ino, c->chunk, section, rel, sizeof(rel));
	uint64_t within = (uint64_t)block << shift;
	const char *path = __atomic_load_n(&fs->ds->paths[disk], __ATOMIC_ACQUIRE);
	fs_log_named(fs, ino, "bytes %" PRIu64 "..%" PRIu64 " of the file (offset %" PRIu64
		" of chunk file %s/%s/%s/%s on disk %u): checksum mismatch, %s",
		c->chunk * fs->info.chunk_size + within,
		c->chunk * fs->info.chunk_size + within + ((uint64_t)1 << shift) - 1, within,
		path ? path : "(missing disk)", LSMFS_DIR, LSMFS_SECTIONS_DIR, rel, disk, outcome);
}

int sums_check(uint64_t ino, const struct chunk_fd *c, const char *buf, uint64_t off, uint64_t n,
	       uint64_t got, uint32_t *bad)
{
	const struct chunk_sums *s = c->sums;
	if (!s)
		return 0;
	uint64_t bs = (uint64_t)1 << s->shift;
	uint32_t lo, hi;
	block_range(s, off, n, &lo, &hi);
	for (uint32_t i = lo; i < hi; i++) {
		if (!s->sum[i])
			continue;
		uint64_t b = ((uint64_t)i << s->shift) - off; /* off is block-aligned */
		uint64_t have = got > b ? got - b : 0;
		if (have > bs)
			have = bs;
		if (sums_block(buf + b, (size_t)have, (size_t)bs, ino, c->chunk) != s->sum[i]) {
			*bad = i;
			return -EIO;
		}
	}
	return 0;
}

uint64_t sums_block_size(const struct chunk_fd *c)
{
	return c->sums ? (uint64_t)1 << c->sums->shift : 1;
}

#define READBACK (1u << 20)

/* The sums of chunk's slot in in's cache, or NULL. */
static struct chunk_sums *slot_sums(struct fs_inode *in, uint64_t chunk)
{
	for (int i = 0; in && in->data && i < CHUNK_FDS; i++)
		if (in->data->fds[i].used && in->data->fds[i].chunk == chunk)
			return in->data->fds[i].sums;
	return NULL;
}

int sums_final(struct fs *fs, uint64_t ino, uint64_t chunk, const struct chunk_place *place,
	       struct fs_inode *in, int fd, uint64_t size, bool keep_mark, uint8_t *out,
	       size_t *outlen)
{
	unsigned shift = sums_block_shift(fs->info.chunk_size);
	uint64_t bs = (uint64_t)1 << shift;
	uint32_t n = (uint32_t)(fs->info.chunk_size >> shift);
	uint32_t nb = (uint32_t)((size + bs - 1) >> shift);
	if (nb > n)
		nb = n;
	uint32_t *sum = calloc(n ? n : 1, sizeof(*sum));
	if (!sum)
		return -ENOMEM;
	struct chunk_sums *s = slot_sums(in, chunk);
	if (s) {
		memcpy(sum, s->sum, n * sizeof(*sum));
	} else {
		void *old;
		struct chunk_value cv;
		int rc = record_fetch(fs, ino, chunk, &old, &cv);
		if (rc > 0 && record_trusted(fs, &cv)) {
			uint32_t zero = sums_block(NULL, 0, (size_t)bs, ino, chunk);
			for (uint32_t i = 0; i < nb; i++)
				sum[i] = i < cv.nsums ? chunk_value_sum(&cv, i)
					 : (cv.flags & CHUNK_INWRITE) ? 0 : zero;
		}
		free(old);
		if (rc < 0) {
			free(sum);
			return rc;
		}
	}
	/* The blocks not known, read back: runs of them at a time. */
	char *buf = NULL;
	int rc = 0;
	for (uint32_t i = 0; i < nb && !rc; i++) {
		if (sum[i])
			continue;
		uint32_t j = i;
		while (j < nb && !sum[j] && ((uint64_t)(j - i + 1) << shift) <= READBACK)
			j++;
		if (!buf && !(buf = malloc(READBACK))) {
			rc = -ENOMEM;
			break;
		}
		size_t want = (size_t)(j - i) << shift, got = 0;
		rc = lsmfs_pread_full(fd, buf, want, (off_t)((uint64_t)i << shift), &got);
		for (uint32_t b = i; !rc && b < j; b++) {
			size_t at = (size_t)(b - i) << shift;
			size_t have = got > at ? got - at : 0;
			sum[b] = sums_block(buf + at, have < bs ? have : (size_t)bs, (size_t)bs, ino, chunk);
		}
		i = j - 1;
	}
	free(buf);
	if (!rc && keep_mark && s) {
		/* An fsync of a chunk still open: the mark stays, and the
		 * sums stay in the slot (written when it is let go, or when
		 * the mark goes): a few bytes per fsync, not the chunk's
		 * every sum. */
		memcpy(s->sum, sum, nb * sizeof(*sum));
		*outlen = chunk_value_put_place(size, CHUNK_INWRITE, fs->mount_gen, place, 0, NULL, 0, out);
	} else if (!rc) {
		*outlen = chunk_value_put_place(size, CHUNK_SUMS | (keep_mark ? CHUNK_INWRITE : 0),
						fs->mount_gen, place, shift, sum, nb, out);
	}
	free(sum);
	return rc;
}

void sums_recorded(struct fs_inode *in, uint64_t chunk, bool keep_mark)
{
	struct chunk_sums *s = slot_sums(in, chunk);
	if (!s)
		return;
	/* Kept: the record has the mark and no sums (sums_final), the slot
	 * the sums, to be written when it goes. */
	s->inwrite = keep_mark;
	s->record_sums = false;
	s->dirty = keep_mark;
}

/* Is chunk on the list? */
static bool listed(const uint64_t *a, size_t n, uint64_t chunk)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] == chunk)
			return true;
	return false;
}

int sums_unmark(struct fs *fs, struct fs_inode *in)
{
	struct inode_data *d = in->data;
	if (!d || !d->nmarked)
		return 0;
	struct store_batch *b = store_batch_new();
	if (!b)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < d->nmarked && !rc; i++) {
		uint64_t chunk = d->marked[i];
		if (listed(d->dirty, d->ndirty, chunk))
			continue; /* written since: its next sync records it */
		void *val;
		struct chunk_value cv = {.section = CHUNK_HASHED, .copies = 1};
		rc = record_fetch(fs, in->ino, chunk, &val, &cv);
		struct chunk_sums *s = slot_sums(in, chunk);
		uint8_t k[KEY_MAX];
		size_t kl = key_chunk(k, in->ino, chunk);
		struct chunk_place pl = {.section = cv.section, .copies = cv.copies,
					 .stale = cv.stale};
		if (rc > 0 && s && (cv.flags & CHUNK_INWRITE) && cv.gen == fs->mount_gen &&
		    !(cv.flags & CHUNK_LOST)) {
			/* The file unchanged since its sync: the slot's sums
			 * are its blocks', up to the synced length. */
			uint64_t bs = (uint64_t)1 << s->shift;
			uint32_t nb = (uint32_t)((cv.durable + bs - 1) >> s->shift);
			uint8_t *v = malloc(CHUNK_VALUE_MAX(fs->info.chunk_size));
			if (!v)
				rc = -ENOMEM;
			else
				rc = store_batch_put(b, k, kl, v,
						     chunk_value_put_place(cv.durable, CHUNK_SUMS, fs->mount_gen, &pl,
								     s->shift, s->sum, nb < s->n ? nb : s->n, v));
			free(v);
			if (!rc)
				sums_recorded(in, chunk, false);
		} else if (rc > 0 && (cv.flags & CHUNK_SUMS) && (cv.flags & CHUNK_INWRITE) &&
			   cv.gen == fs->mount_gen) {
			/* Let go of since: its slot wrote the sums into the
			 * record; they stay, without the mark. */
			size_t vl = (cv.flags & CHUNK_COPIES	  ? CHUNK_COPIES_HDR
				     : cv.flags & CHUNK_PLACED ? CHUNK_PLACED_HDR
							       : CHUNK_SUMS_HDR) +
				    4 * (size_t)cv.nsums;
			((uint8_t *)val)[8] &= (uint8_t)~CHUNK_INWRITE;
			rc = store_batch_put(b, k, kl, val, vl);
		}
		free(val);
		rc = rc < 0 ? rc : 0;
	}
	if (!rc && store_batch_count(b))
		rc = store_write(fs->st, b, 0);
	store_batch_free(b);
	if (!rc)
		d->nmarked = 0;
	return rc;
}
