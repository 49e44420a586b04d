/*
 * space.c: where a new chunk goes, and free space as that placement sees it
 * (SCHEMA.md, "Placement" and "Free space"): the section of a new chunk,
 * what statfs reports, what fallocate checks before any work.
 *
 * A new chunk goes to its hash section (SCHEMA.md, "Sharding") when that
 * section's disk is usable and has room for a whole chunk; else to a
 * section of the usable disk with the most room, so that one full or
 * missing disk stops no write while another has room.  A file whose
 * policy is `together` (policy.c) puts every chunk in the section of its
 * first chunk record (the first one in the disk with the most room), and
 * when that disk cannot take one, the chunk goes where a spread file's
 * would (a spill, logged once per file and mount).  Its record names
 * the section it got, for good (chunk.c).  So the room for data is the
 * sum of the free space of the disks that hold sections, each backing
 * filesystem counted once (disks that are directories of one filesystem
 * share its space):
 *
 *   - statfs's f_bavail is that sum, each group's rounded down to whole
 *     chunks (what new chunks can take), for data in the root's copies
 *     (space_for_copies); f_blocks and f_bfree are the disks' own, so
 *     that df's "used" is what the disks hold.
 *   - fallocate must fit the range in the file's copies (less what the
 *     file holds already).
 *
 * Disks that are missing or found replaced hold no room.  A disk with
 * less than a chunk free takes no new chunk: the chunks it has may still
 * grow into what is left, and a write that finds it full fails with
 * ENOSPC (so writes succeed until the pool is full within about a chunk
 * per disk).  The section map is read with section_disk_of (atomics): a
 * move under way makes the figures approximate.  Free space is asked of
 * the disks (fstatvfs) at each placement: one call per chunk made, none
 * per write.
 */
#include "data.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

struct space_group {
	dev_t dev;
	uint64_t blocks, bfree, bavail; /* bytes */
	uint64_t sections;
	uint32_t disks; /* usable disks holding a section */
};

struct space {
	struct space_group g[LSMFS_MAX_DISKS];
	uint32_t n;
	uint32_t group_of[LSMFS_MAX_DISKS]; /* disk -> group, UINT32_MAX: not usable */
};

static int space_read(struct fs *fs, struct space *sp)
{
	memset(sp, 0, sizeof(*sp));
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++)
		sp->group_of[d] = UINT32_MAX;
	for (uint32_t d = 0; d < fs->ds->ndisks && d < LSMFS_MAX_DISKS; d++) {
		if (!disk_usable(fs, d))
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
	uint64_t holds = 0; /* disks holding a section, by bit */
	for (uint32_t s = 0; s < fs->info.sections; s++) {
		uint32_t d = section_disk_of(fs, s);
		if (d < LSMFS_MAX_DISKS && sp->group_of[d] != UINT32_MAX) {
			sp->g[sp->group_of[d]].sections++;
			if (!(holds >> d & 1))
				sp->g[sp->group_of[d]].disks++;
			holds |= 1ull << d;
		}
	}
	return 0;
}

/* What new chunks can take: the whole chunks the free space of each group
 * holding sections has room for (a disk takes a new chunk only with room
 * for all of it: space_place). */
static uint64_t space_for_data(const struct space *sp, uint64_t chunk_size)
{
	uint64_t avail = 0;
	for (uint32_t i = 0; i < sp->n; i++)
		if (sp->g[i].sections)
			avail += sp->g[i].bavail / chunk_size * chunk_size;
	return avail;
}

/* What new data kept in `copies` copies can take (each byte on `copies`
 * disks): for two, as btrfs's raid1 reports it, half the room, and no
 * more than the room outside the group with the most, whose chunks need
 * their other copy elsewhere, unless that group has two disks that can
 * hold both (disks that are directories of one filesystem).  With room
 * for a chunk in one disk alone, placement gives new chunks one copy (the
 * other stale: space_place): that room, as for one copy. */
static uint64_t space_for_copies(const struct space *sp, uint64_t chunk_size, unsigned copies)
{
	uint64_t all = space_for_data(sp, chunk_size);
	if (copies < 2)
		return all;
	uint64_t most = 0;
	uint32_t most_disks = 0, with_room = 0;
	for (uint32_t i = 0; i < sp->n; i++) {
		uint64_t a = sp->g[i].sections ? sp->g[i].bavail / chunk_size * chunk_size : 0;
		with_room += a > 0;
		if (a > most) {
			most = a;
			most_disks = sp->g[i].disks;
		}
	}
	if (with_room < 2 && most_disks < 2)
		return all; /* one copy is what new chunks get */
	uint64_t half = all / 2 / chunk_size * chunk_size;
	return most_disks >= 2 || all - most >= half ? half : all - most;
}

int fs_statfs(struct fs *fs, struct statvfs *out)
{
	memset(out, 0, sizeof(*out));
	const uint64_t bs = 4096;
	struct space sp;
	int rc = space_read(fs, &sp);
	if (rc)
		return rc;
	uint64_t blocks = 0, bfree = 0;
	for (uint32_t i = 0; i < sp.n; i++) {
		blocks += sp.g[i].blocks;
		bfree += sp.g[i].bfree;
	}
	out->f_bsize = bs;
	out->f_frsize = bs;
	out->f_blocks = blocks / bs;
	out->f_bfree = bfree / bs;
	/* As the root's copies ask (the filesystem's default): a tree that
	 * asks for other copies uses the room at its own rate. */
	unsigned copies = 1;
	if ((rc = policy_root_copies(fs, &copies)))
		return rc;
	out->f_bavail = space_for_copies(&sp, fs->info.chunk_size, copies) / bs;
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

int space_check(struct fs *fs, struct fs_inode *in, uint64_t off, uint64_t end, uint64_t have)
{
	struct space sp;
	unsigned copies;
	int rc = space_read(fs, &sp);
	if (!rc)
		rc = policy_copies(fs, in, &copies);
	if (rc)
		return rc;
	/* have: what the file holds, on every copy's disk. */
	return end - off > space_for_copies(&sp, fs->info.chunk_size, copies) + have / copies
		       ? -ENOSPC : 0;
}

/* Bytes free on disk d for new chunk files (0 when it cannot be asked):
 * its free space less what chunks made lately were promised and have not
 * written yet, so that chunks made together (a file written by several
 * threads, or several files) do not all count the same room. */
static uint64_t disk_room(struct fs *fs, uint32_t d)
{
	struct statvfs sv;
	if (fstatvfs(fs->sections_fd[d], &sv) != 0)
		return 0;
	uint64_t free = (uint64_t)sv.f_bavail * sv.f_frsize;
	uint64_t promised = __atomic_load_n(&fs->space_promised[d], __ATOMIC_RELAXED);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	pthread_mutex_lock(&fs->space_lock);
	for (size_t i = 0; i < sizeof(fs->space_late) / sizeof(fs->space_late[0]); i++)
		if (fs->space_late[i].bytes && fs->space_late[i].disk == d &&
		    fs->space_late[i].until_ns > t)
			promised += fs->space_late[i].bytes;
	pthread_mutex_unlock(&fs->space_lock);
	return free > promised ? free - promised : 0;
}

/* A promise whose slot went before its chunk was written whole: kept for
 * SPACE_LATE_NS more (the writes of the chunk go on through a slot opened
 * again, which has none), in the oldest place of the ring. */
#define SPACE_LATE_NS 3000000000u
static void promise_late(struct fs *fs, uint32_t d, uint64_t bytes)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	pthread_mutex_lock(&fs->space_lock);
	size_t oldest = 0;
	for (size_t i = 0; i < sizeof(fs->space_late) / sizeof(fs->space_late[0]); i++)
		if (fs->space_late[i].until_ns < fs->space_late[oldest].until_ns)
			oldest = i;
	fs->space_late[oldest] = (struct space_late){.disk = d, .bytes = bytes,
						     .until_ns = t + SPACE_LATE_NS};
	pthread_mutex_unlock(&fs->space_lock);
}

void space_promise(struct fs *fs, struct chunk_fd *c)
{
	c->promised = fs->info.chunk_size;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++) {
		c->promised_disk[i] = UINT32_MAX;
		if (!copies_live(c, i))
			continue;
		uint32_t d = section_disk_of(fs, c->copy[i].section);
		if (d >= LSMFS_MAX_DISKS)
			continue;
		c->promised_disk[i] = d;
		__atomic_add_fetch(&fs->space_promised[d], c->promised, __ATOMIC_RELAXED);
	}
}

void space_unpromise(struct fs *fs, struct chunk_fd *c, bool late)
{
	uint64_t left = c->promised;
	space_keep(fs, c, UINT64_MAX);
	for (unsigned i = 0; late && left && i < CHUNK_MAX_COPIES; i++)
		if (c->promised_disk[i] != UINT32_MAX)
			promise_late(fs, c->promised_disk[i], left);
}

void space_keep(struct fs *fs, struct chunk_fd *c, uint64_t written)
{
	uint64_t less = written < c->promised ? written : c->promised;
	if (!less)
		return;
	c->promised -= less;
	for (unsigned i = 0; i < CHUNK_MAX_COPIES; i++)
		if (c->promised_disk[i] != UINT32_MAX) {
			__atomic_sub_fetch(&fs->space_promised[c->promised_disk[i]], less,
					   __ATOMIC_RELAXED);
		}
}

/*
 * A section of the usable disk with the most room for a chunk (not skip):
 * its first section after h, so that such chunks spread over its sections
 * as the hash spreads them.  The walk of the map stops once every disk
 * with room has been met: a few steps, at most one pass (a disk that holds
 * no section, just added or emptied, is passed over).
 */
static int most_room(struct fs *fs, uint32_t h, uint32_t skip, uint32_t *section)
{
	uint32_t n = fs->info.sections;
	uint64_t room[LSMFS_MAX_DISKS] = {0}, want = 0;
	uint32_t first[LSMFS_MAX_DISKS];
	for (uint32_t d = 0; d < fs->ds->ndisks && d < LSMFS_MAX_DISKS; d++) {
		if (d == skip || !disk_usable(fs, d))
			continue;
		room[d] = disk_room(fs, d);
		if (room[d] >= fs->info.chunk_size)
			want |= 1ull << d;
	}
	/* Disks that share a filesystem have the same room: the first met
	 * after h wins, so that the choice differs from chunk to chunk. */
	uint64_t met = 0;
	uint32_t best = UINT32_MAX;
	for (uint32_t i = 1; (met & want) != want && i <= n; i++) {
		uint32_t s = (uint32_t)(((uint64_t)h + i) % n);
		uint32_t d = section_disk_of(fs, s);
		if (d < LSMFS_MAX_DISKS && (want & ~met & (1ull << d))) {
			first[d] = s;
			met |= 1ull << d;
			if (best == UINT32_MAX || room[d] > room[best])
				best = d;
		}
	}
	if (best == UINT32_MAX)
		return -ENOSPC;
	*section = first[best];
	return 0;
}

/* Can section s's disk take a new chunk?  Its disk index, or UINT32_MAX. */
static uint32_t takes_chunk(struct fs *fs, uint32_t s)
{
	uint32_t d = section_disk_of(fs, s);
	return d < fs->ds->ndisks && disk_usable(fs, d) && disk_room(fs, d) >= fs->info.chunk_size
		       ? d : UINT32_MAX;
}

/* The section of in's first chunk record (its home, for `together`):
 * 1 and *section, 0 when it has none, or -errno.  One store seek. */
static int home_of(struct fs *fs, uint64_t ino, uint32_t *section)
{
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	size_t ll = key_chunk_prefix(lo, ino), hl = key_chunk_prefix(hi, ino + 1);
	struct store_iter_options io = {.lower = lo, .lower_len = ll, .upper = hi, .upper_len = hl};
	struct store_iter *it;
	int rc = store_iter_new(fs->st, &io, &it);
	if (rc)
		return rc;
	store_iter_seek_first(it);
	int found = 0;
	if (store_iter_valid(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		/* A damaged record: no home (fsck reports it). */
		found = kl == 17 && chunk_value_section(v, vl, ino, get_be64(k + 9),
							fs->info.sections, section) == 0;
	}
	rc = store_iter_status(it);
	store_iter_free(it);
	return rc ? rc : found;
}

/* Can section s and its partner take the two copies of a new chunk: two
 * usable disks, not one, each with room? */
static bool pair_takes(struct fs *fs, uint32_t s)
{
	uint32_t t = section_of_copy(s, 1, fs->info.sections);
	if (t == UINT32_MAX)
		return false;
	uint32_t d = takes_chunk(fs, s);
	return d != UINT32_MAX && section_disk_of(fs, t) != d && takes_chunk(fs, t) != UINT32_MAX;
}

/* Two copies: the pair of want (the home of a `together` file, or the
 * hash section) when it can take them, else the first pair after it in
 * the map that can (at most one pass, and only when want's cannot); none:
 * one copy placed as a spread file's, the other stale (said once per
 * mount: fewer usable disks with room than copies). */
static int place_pair(struct fs *fs, struct fs_inode *in, uint64_t chunk, uint32_t want,
		      uint32_t h, struct chunk_place *place)
{
	uint32_t n = fs->info.sections;
	*place = (struct chunk_place){.copies = 2};
	for (uint32_t i = 0; i <= n; i++) {
		uint32_t s = (uint32_t)(((uint64_t)want + i) % n);
		if (pair_takes(fs, s)) {
			place->section = s;
			return 0;
		}
		if (i == 0 && want != h && pair_takes(fs, h)) {
			place->section = h;
			return 0;
		}
	}
	uint32_t s;
	int rc = takes_chunk(fs, h) != UINT32_MAX ? (s = h, 0)
						  : most_room(fs, h, section_disk_of(fs, h), &s);
	if (rc)
		return rc;
	if (section_of_copy(s, 1, n) == UINT32_MAX) {
		place->copies = 1; /* the last section of an odd count: no partner */
	} else {
		place->stale = 2;
	}
	place->section = s;
	if (!__atomic_exchange_n(&fs->under_copied_said, true, __ATOMIC_RELAXED))
		fs_logf(fs, "inode %" PRIu64 ": chunk %" PRIu64 " gets one copy of the 2 its policy asks "
			"for: no two usable disks have room for it (said once per mount; a scrub makes "
			"the other copy when they do)", in->ino, chunk);
	return 0;
}

int space_place(struct fs *fs, struct fs_inode *in, uint64_t chunk, struct chunk_place *place)
{
	uint32_t h = chunk_section(in->ino, chunk, fs->info.sections);
	enum placement p;
	unsigned copies;
	int rc = policy_placement(fs, in, &p);
	if (!rc)
		rc = policy_copies(fs, in, &copies);
	if (rc)
		return rc;
	*place = (struct chunk_place){.copies = 1};
	uint32_t want = h;
	if (p == PLACE_TOGETHER) {
		/* The section of the file's first chunk record: its home. */
		uint32_t home;
		rc = home_of(fs, in->ino, &home);
		if (rc < 0)
			return rc;
		if (rc == 0) { /* its first chunk: the disk with most room */
			if (copies > 1)
				return place_pair(fs, in, chunk, h, h, place);
			return most_room(fs, h, UINT32_MAX, &place->section);
		}
		want = home;
		if (copies > 1 ? pair_takes(fs, home) : takes_chunk(fs, home) != UINT32_MAX) {
			place->section = home;
			place->copies = (uint8_t)copies;
			return 0;
		}
		/* Its disk is full or missing: the chunk spills, as a spread
		 * file's would go (said once per file and mount). */
		if (!in->spilled) {
			in->spilled = true;
			fs_logf(fs, "inode %" PRIu64 " (placement together): its disk %" PRIu32 " cannot "
				"take chunk %" PRIu64 " (full or missing); it and the file's next such chunks "
				"go to other disks", in->ino, section_disk_of(fs, home), chunk);
		}
		want = h;
	}
	if (copies > 1)
		return place_pair(fs, in, chunk, want, h, place);
	if (takes_chunk(fs, h) != UINT32_MAX) {
		place->section = h; /* the common case: one fstatvfs */
		return 0;
	}
	return most_room(fs, h, section_disk_of(fs, h), &place->section);
}

int space_relocation(struct fs *fs, struct fs_inode *in, uint64_t chunk, enum placement p,
		     const struct chunk_place *pl, uint32_t *target)
{
	uint32_t n = fs->info.sections, want = chunk_section(in->ino, chunk, n);
	if (p == PLACE_TOGETHER) {
		int rc = home_of(fs, in->ino, &want);
		if (rc <= 0)
			return rc < 0 ? rc : 1; /* no record: nothing to put together */
	}
	/* Where it is already: its section, or (two copies) its pair. */
	if (pl->copies == 1 ? pl->section == want : (pl->section ^ want) <= 1)
		return 1;
	if (pl->copies > 1) {
		uint32_t t = section_of_copy(want, 1, n);
		if (t == UINT32_MAX || section_disk_of(fs, want) == section_disk_of(fs, t))
			return -ENOSPC; /* no pair on two disks there (a rebalance may make one) */
	}
	/* Each copy goes to the same copy of want: on its own disk a link,
	 * else onto a disk that can take a new chunk. */
	for (unsigned i = 0; i < pl->copies; i++) {
		uint32_t from = section_of_copy(pl->section, i, n), to = section_of_copy(want, i, n);
		uint32_t d = section_disk_of(fs, to);
		if (!disk_usable(fs, d) ||
		    (!(pl->stale >> i & 1) && !disk_usable(fs, section_disk_of(fs, from))))
			return -ENOSPC; /* a disk missing: later */
		if (d != section_disk_of(fs, from) && takes_chunk(fs, to) == UINT32_MAX)
			return -ENOSPC;
	}
	*target = want;
	return 0;
}
