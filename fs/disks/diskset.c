/*
 * diskset.c: opening the disks of one filesystem (fs.h, "disk sets";
 * fs/SCHEMA.md, "Backing disks").
 *
 * The user names the disks in any order; every superblock names the
 * filesystem and lists the UUIDs of all its disks by index.  A set is
 * accepted only if each disk appears once, all agree with each other, and
 * none is missing, so the daemon never mounts half a filesystem or mixes
 * two.  fsck alone may ask for leniency: one damaged superblock
 * (DISKSET_TOLERANT) or two disks with one superblock (DISKSET_CLASH), the
 * disk that must be rewritten placed at the one index nobody claims.  The
 * optional lock is an flock on <disk>/.lsmfs/lock holding the owner's pid:
 * the kernel drops it when the owner dies, so a crash never leaves a stale
 * lock, and the pid is only there to name the culprit.
 * No shared state; a diskset belongs to its opener.
 */
#include "disks.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

/* What we learn about one disk of the spec before ordering them. */
struct given {
	char *path;                 /* realpath */
	dev_t dev;
	ino_t ino;
	struct lsmfs_super sb;
};

static int look_at_disk(const char *name, struct given *g, char *err,
			size_t errlen)
{
	struct stat st;
	if (stat(name, &st) != 0) {
		int rc = -errno;
		(void)fs_set_err(err, errlen, 0, "%s: %s", name, strerror(-rc));
		return rc == -ENOTDIR ? -ENOENT : rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		(void)fs_set_err(err, errlen, 0, "%s: not a directory", name);
		return -ENOENT;
	}
	g->dev = st.st_dev;
	g->ino = st.st_ino;
	g->path = realpath(name, NULL);
	if (!g->path) {
		int rc = -errno;
		(void)fs_set_err(err, errlen, 0, "%s: %s", name, strerror(-rc));
		return rc;
	}
	return 0;
}

/* Two names of one directory: as given, or through links and bind mounts
 * (same device and inode). */
static int check_not_twice(const char *name, const struct given *g,
			   const struct given *seen, uint32_t nseen,
			   char *err, size_t errlen)
{
	for (uint32_t j = 0; j < nseen; j++) {
		if (strcmp(seen[j].path, g->path) == 0 ||
		    (seen[j].dev == g->dev && seen[j].ino == g->ino)) {
			(void)fs_set_err(err, errlen, 0, "%s: given twice (same directory as %s)",
				name, seen[j].path);
			return -EEXIST;
		}
	}
	return 0;
}

/* Every disk must describe the same filesystem as ref, the superblock of
 * the highest generation given.  One of an older generation is a member
 * whose superblock a crash left behind (a disk added or removed, the store
 * moved: SCHEMA.md "Adding and removing disks") only while ref still lists
 * it at its index; *stale then says so. */
static int check_agrees(const char *name, const struct lsmfs_super *a,
			const struct lsmfs_super *ref, const char *ref_name,
			bool *stale, char *err, size_t errlen)
{
	char ua[37], ub[37];
	*stale = false;
	if (memcmp(a->fs_uuid, ref->fs_uuid, 16) != 0) {
		lsmfs_uuid_format(a->fs_uuid, ua);
		lsmfs_uuid_format(ref->fs_uuid, ub);
		(void)fs_set_err(err, errlen, 0, "%s: belongs to another filesystem (UUID %s, "
			"not %s as %s)", name, ua, ub, ref_name);
		return -EXDEV;
	}
	const char *what = NULL;
	if (a->sections != ref->sections)
		what = "section count";
	else if (a->chunk_size != ref->chunk_size)
		what = "chunk size";
	else if (a->inline_max != ref->inline_max)
		what = "inline limit";
	else if (memcmp(a->disk_uuid, a->disk_uuids[a->disk_index], 16) != 0)
		what = "its own disk UUID";
	else if (a->generation < ref->generation) {
		if (a->disk_index >= ref->disk_count ||
		    memcmp(ref->disk_uuids[a->disk_index], a->disk_uuid, 16) != 0) {
			(void)fs_set_err(err, errlen, 0, "%s: no longer a disk of this filesystem (removed: the "
				"disk list of generation %llu, on %s, does not have it; its own "
				"superblock is of generation %llu)", name,
				(unsigned long long)ref->generation, ref_name,
				(unsigned long long)a->generation);
			return -EXDEV;
		}
		*stale = true;
	} else if (a->disk_count != ref->disk_count)
		what = "disk count";
	else if (!super_copies_equal(a, ref))
		what = "metadata store's copies";
	else if (memcmp(a->disk_uuids, ref->disk_uuids, 16u * a->disk_count) != 0)
		what = "list of disk UUIDs";
	if (what) {
		(void)fs_set_err(err, errlen, 0, "%s: disagrees with %s on the %s "
			"(same filesystem UUID, different filesystem)",
			name, ref_name, what);
		return -EXDEV;
	}
	return 0;
}

/* Copy i of the store: its directory, which must exist and, when it lives
 * outside the disks, carry this filesystem's mark (a stale --meta path
 * must not lead the daemon into another filesystem's store).  0, or the
 * reason in err. */
static int check_copy(struct lsmfs_diskset *ds, uint32_t i, char *err, size_t errlen)
{
	const struct lsmfs_super *sb = &ds->sb;
	const struct lsmfs_meta_copy *c = &sb->meta[i];
	char *path = ds->meta_paths[i];
	size_t cap = sizeof(ds->meta_paths[i]);
	char want[37];
	lsmfs_uuid_format(sb->fs_uuid, want);
	int n;
	if (c->disk != LSMFS_META_ON_DIR) {
		if (!ds->paths[c->disk]) {
			(void)fs_set_err(err, errlen, 0, "copy %u of the metadata store: its disk %u is missing",
				i, c->disk);
			path[0] = 0;
			return -ENOENT;
		}
		n = snprintf(path, cap, "%s/" LSMFS_DIR "/" LSMFS_META_DIR, ds->paths[c->disk]);
	} else {
		size_t l = strnlen(c->dir, sizeof(c->dir)); /* < LSMFS_META_PATH_MAX < cap */
		memcpy(path, c->dir, l);
		path[l] = 0;
		n = (int)l;
	}
	if (n < 0 || (size_t)n >= cap) {
		(void)fs_set_err(err, errlen, 0, "copy %u of the metadata store: path too long", i);
		path[0] = 0;
		return -ENAMETOOLONG;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		(void)fs_set_err(err, errlen, 0, "%s: metadata store of filesystem %s is missing", path, want);
		return -ENOENT;
	}
	if (c->disk != LSMFS_META_ON_DIR)
		return 0;
	char mark[sizeof(ds->meta_paths[i]) + sizeof(LSMFS_META_MARK) + 1];
	snprintf(mark, sizeof(mark), "%s/" LSMFS_META_MARK, path);
	FILE *f = fopen(mark, "re");
	if (!f) {
		int rc = -errno;
		(void)fs_set_err(err, errlen, 0, "%s: %s (metadata store of filesystem %s)",
			mark, strerror(-rc), want);
		return rc;
	}
	char line[64] = "";
	bool got = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	uint8_t uuid[16];
	if (!got || lsmfs_uuid_parse(line, uuid) != 0 ||
	    memcmp(uuid, sb->fs_uuid, 16) != 0) {
		(void)fs_set_err(err, errlen, 0, "%s: holds the metadata of another "
			"filesystem ('%s', not %s)", path, line, want);
		return -EXDEV;
	}
	return 0;
}

/* Every copy of the store: which are there (meta_absent), and the one
 * the store is opened by (meta_dir): the first there that is not stale.
 * Without one, the reason for the first copy that is not stale. */
static int resolve_meta(struct lsmfs_diskset *ds, char *err, size_t errlen)
{
	const struct lsmfs_super *sb = &ds->sb;
	int first = 0;
	char why[sizeof(ds->meta_paths[0]) + 256] = "";
	ds->meta_absent = 0;
	ds->meta_primary = UINT32_MAX;
	for (uint32_t i = 0; i < sb->meta_count; i++) {
		char e[sizeof(why)];
		int rc = check_copy(ds, i, e, sizeof(e));
		if (rc) {
			ds->meta_absent |= 1u << i;
			if (!first && !(sb->meta[i].flags & LSMFS_META_STALE)) {
				first = rc;
				snprintf(why, sizeof(why), "%s", e);
			}
			continue;
		}
		if (ds->meta_primary == UINT32_MAX && !(sb->meta[i].flags & LSMFS_META_STALE))
			ds->meta_primary = i;
	}
	if (ds->meta_primary == UINT32_MAX && ds->copies_diverged) {
		/* Name them: which parted from which, and where each is. */
		char list[2 * sizeof(ds->meta_paths[0]) + 256] = "";
		size_t len = 0;
		for (uint32_t i = 0; i < sb->meta_count && len < sizeof(list); i++)
			if (ds->copies_diverged & (1u << i))
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%scopy %u (%s)",
							len ? " and " : "", i,
							ds->meta_paths[i][0] ? ds->meta_paths[i]
									     : "its disk is missing");
		(void)fs_set_err(err, errlen, 0, "the copies of the metadata store diverged: %s were each written "
			"by a mount without the other (-o degraded,force_degraded); keep one with "
			"fsck.lsmfs -y --use-copy N (what the others hold that it lacks is lost; -n "
			"--use-copy N says what)", list);
		return -EUCLEAN;
	}
	if (ds->meta_primary == UINT32_MAX) {
		if (!why[0]) {
			/* Every copy there is stale: name them. */
			size_t len = 0;
			for (uint32_t i = 0; i < sb->meta_count && len < sizeof(why); i++)
				if (!(ds->meta_absent & (1u << i)))
					len += (size_t)snprintf(why + len, sizeof(why) - len, "%scopy %u "
								"(%s)", len ? ", " : "", i,
								ds->meta_paths[i]);
			if (len < sizeof(why))
				snprintf(why + len, sizeof(why) - len, "%s of the metadata store %s stale",
					 len ? "" : "no copy", len ? "marked" : "is there");
		}
		(void)fs_set_err(err, errlen, 0, "%s%s", why,
			sb->meta_count > 1 ? " (and no other copy of the store that is up to "
					     "date is there)" : "");
		return first ? first : -ENOENT;
	}
	snprintf(ds->meta_dir, sizeof(ds->meta_dir), "%s", ds->meta_paths[ds->meta_primary]);
	return 0;
}

const char *diskset_store_options(const struct lsmfs_diskset *ds, struct store_options *so,
				  const char **dirs)
{
	uint32_t which[LSMFS_MAX_META_COPIES], n = 0;
	unsigned stale = 0;
	if (diskset_store_copies(ds, dirs, which, &n, &stale))
		return ds->meta_dir;
	so->copies = n > 1 ? dirs + 1 : NULL;
	so->ncopies = n - 1;
	so->copies_stale = stale;
	return dirs[0];
}

int diskset_store_copies(const struct lsmfs_diskset *ds, const char **dirs, uint32_t *which,
			 uint32_t *n, unsigned *stale)
{
	const struct lsmfs_super *sb = &ds->sb;
	*n = 0;
	*stale = 0;
	if (ds->meta_primary >= sb->meta_count)
		return -ENOENT;
	dirs[0] = ds->meta_paths[ds->meta_primary];
	which[0] = ds->meta_primary;
	*n = 1;
	for (uint32_t i = 0; i < sb->meta_count; i++) {
		if (i == ds->meta_primary || (ds->meta_absent & (1u << i)))
			continue;
		if (sb->meta[i].flags & LSMFS_META_STALE)
			*stale |= 1u << *n;
		dirs[*n] = ds->meta_paths[i];
		which[(*n)++] = i;
	}
	return 0;
}

int diskset_lock_disk(struct lsmfs_diskset *ds, uint32_t i, const char *disk, unsigned flags,
		      char *err, size_t errlen)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/" LSMFS_DIR "/" LSMFS_LOCK_FILE, disk);
	bool shared = flags & DISKSET_LOCK_SHARED;
	int fd = -1, rc = 0;
	/* A daemon that is closing (its mount already gone, the store still
	 * flushing) says so in the lock file: wait for it, within bounds,
	 * so that "umount; mount" works as it does for other filesystems.
	 * Owner-only lock files (store_lockfile): no other user can hold
	 * one against us. */
	for (int waited_ms = 0, busy_ms = 0;; waited_ms += 20) {
		if (fd >= 0)
			close(fd);
		rc = store_lockfile(path, shared, &fd);
		/* A reader writes nothing: a disk it cannot write (a
		 * read-only or failing backing filesystem, no lock file) is
		 * read unlocked, as it was before readers locked at all; no
		 * writer can lock it either. */
		if (shared && (rc == -EROFS || rc == -EACCES))
			return 0;
		if (rc != -EWOULDBLOCK || !(flags & DISKSET_LOCK_WAIT) ||
		    waited_ms >= DISKSET_LOCK_WAIT_MS)
			break;
		char state[64] = "";
		ssize_t n = pread(fd, state, sizeof(state) - 1, 0);
		state[n > 0 ? n : 0] = 0;
		/* Empty: its holder is between clearing the pid and letting go
		 * (diskset_close), or between locking and writing it; or it
		 * is held by read-only mounts, which write nothing: a shared
		 * lock we can take says so (no writer is letting go), and
		 * waiting would not help. */
		if (!state[0] && !shared && flock(fd, LOCK_SH | LOCK_NB) == 0) {
			close(fd); /* the holder may have just let go: */
			rc = store_lockfile(path, false, &fd);
			break;
		}
		/* A pid without `closing`: a daemon serving, or one whose
		 * mount the kernel has just let go of and which is about to
		 * say `closing` (fuse_session_loop returns after umount(2)
		 * does): a grace of 2 s before it counts as in use. */
		busy_ms = state[0] && !strstr(state, "\n" DISKSET_CLOSING "\n") ? busy_ms + 20 : 0;
		if (busy_ms > 2000)
			break;
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (rc) {
		if (rc == -EWOULDBLOCK) {
			char pid[32] = "";
			ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
			pid[n > 0 ? n : 0] = 0;
			pid[strcspn(pid, "\n")] = 0;
			/* Only readers hold it when a shared lock is ours to
			 * take: the pid is one a killed writer left. */
			bool readers = !shared && flock(fd, LOCK_SH | LOCK_NB) == 0;
			/* A lock file an older version made readable by all,
			 * that store_lockfile could not take: a process of
			 * root's has it open (maybe beside other users'): say
			 * so, and how to find who. */
			struct stat st;
			bool open_to_all = fstat(fd, &st) == 0 && (st.st_mode & 077);
			if (*pid && !readers)
				(void)fs_set_err(err, errlen, 0, "%s: in use by process %s (lock %s)", disk, pid,
					path);
			else if (open_to_all)
				(void)fs_set_err(err, errlen, 0, "%s: in use read-only (a read-only mount or "
					"fsck.lsmfs -n; lock %s, an older version's, open to all: "
					"fuser -v names its holders)", disk, path);
			else
				(void)fs_set_err(err, errlen, 0, "%s: in use read-only (a read-only mount or "
					"fsck.lsmfs -n; lock %s)", disk, path);
			rc = -EBUSY;
		} else {
			(void)fs_set_err(err, errlen, 0, "%s: %s", path, strerror(-rc));
		}
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (shared) { /* the file is the exclusive holder's to write */
		ds->shared = true;
		ds->lock_fds[i] = fd;
		return 0;
	}
	char pid[32];
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	/* The pid only tells others who holds the lock: a full disk (the
	 * file is empty after a clean unmount, and the pid needs a block)
	 * leaves it empty rather than refusing the mount. */
	if ((ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) &&
	    errno != ENOSPC && errno != EDQUOT) {
		rc = -errno;
		(void)fs_set_err(err, errlen, 0, "%s: %s", path, strerror(-rc));
		close(fd);
		return rc;
	}
	ds->lock_fds[i] = fd;
	return 0;
}

/* A superblock fsck may rebuild: present but damaged, or absent from a
 * directory that has lsmfs sections (it was a disk).  A directory with
 * neither is not taken for one. */
static bool damaged_disk(const char *path, int rc)
{
	if (rc == -EUCLEAN)
		return true;
	if (rc != -ENOENT)
		return false;
	char sections[PATH_MAX];
	struct stat st;
	snprintf(sections, sizeof(sections), "%s/%s/%s", path, LSMFS_DIR, LSMFS_SECTIONS_DIR);
	return stat(sections, &st) == 0 && S_ISDIR(st.st_mode);
}

/* How many disk indexes no disk was placed at; *last: the last of them. */
static uint32_t unclaimed(const struct lsmfs_diskset *ds, const struct lsmfs_super *sb,
			  uint32_t *last)
{
	uint32_t n = 0;
	*last = UINT32_MAX;
	for (uint32_t i = 0; i < sb->disk_count; i++)
		if (!ds->paths[i] && !super_slot_empty(sb, i)) {
			*last = i;
			n++;
		}
	return n;
}

/* Damaged disks take the indexes no whole superblock claimed: possible only
 * when exactly one is missing (two damaged disks cannot be told apart). */
static int place_damaged(struct lsmfs_diskset *ds, struct given *given, uint32_t ref,
			 const uint32_t *damaged, uint32_t ndamaged, char *err, size_t errlen)
{
	const struct lsmfs_super *sb = &given[ref].sb;
	uint32_t missing, nmissing = unclaimed(ds, sb, &missing);
	struct given *g = &given[damaged[0]];
	if (ndamaged > 1 || nmissing != 1) {
		(void)fs_set_err(err, errlen, 0, "%s: superblock damaged, and %s", g->path,
			ndamaged > 1 ? "so is another disk's: cannot tell which disk is which"
				     : "no disk of the filesystem is missing from the list for it to be");
		return -EUCLEAN;
	}
	g->sb = *sb;
	g->sb.disk_index = missing;
	memcpy(g->sb.disk_uuid, sb->disk_uuids[missing], 16);
	ds->paths[missing] = g->path;
	g->path = NULL;
	ds->super_damaged |= 1ull << missing;
	return 0;
}

static bool has_meta_store(const char *path)
{
	char meta[PATH_MAX];
	struct stat st;
	snprintf(meta, sizeof(meta), "%s/%s/%s", path, LSMFS_DIR, LSMFS_META_DIR);
	return stat(meta, &st) == 0 && S_ISDIR(st.st_mode);
}

/* DISKSET_CLASH: disk given[second] says it is disk ds->clash_index, as an
 * earlier one does.  Accepted only when it can be the one index no whole
 * superblock claimed, and no superblock is damaged (one unknown at a
 * time).  Which of the two is which stays open (fs.h, clash). */
static int place_clash(struct lsmfs_diskset *ds, struct given *given, uint32_t ref,
		       uint32_t second, uint32_t ndamaged, const char *twice, char *err,
		       size_t errlen)
{
	const struct lsmfs_super *sb = &given[ref].sb;
	uint32_t missing, nmissing = unclaimed(ds, sb, &missing);
	if (ndamaged || nmissing != 1) {
		(void)fs_set_err(err, errlen, 0, "%s, and %s", twice,
			ndamaged ? "another disk's superblock is damaged: cannot tell which disk is which"
				 : nmissing ? "more than one disk of the filesystem is missing from the list"
					    : "no disk of the filesystem is missing from the list for it to be");
		return -EEXIST;
	}
	ds->clash_spare = missing;
	ds->paths[missing] = given[second].path;
	given[second].path = NULL;
	uint32_t a = ds->clash_index, b = missing;
	bool copy_a = false, copy_b = false;
	for (uint32_t c = 0; c < sb->meta_count; c++) {
		copy_a |= sb->meta[c].disk == a;
		copy_b |= sb->meta[c].disk == b;
	}
	if (copy_a != copy_b) {
		uint32_t md = copy_a ? a : b, other = copy_a ? b : a;
		if (!has_meta_store(ds->paths[md]) && has_meta_store(ds->paths[other]))
			diskset_swap(ds, md, other);
	}
	return 0;
}

void diskset_swap(struct lsmfs_diskset *ds, uint32_t a, uint32_t b)
{
	char *p = ds->paths[a];
	ds->paths[a] = ds->paths[b];
	ds->paths[b] = p;
	int fd = ds->lock_fds[a];
	ds->lock_fds[a] = ds->lock_fds[b];
	ds->lock_fds[b] = fd;
}

int diskset_open(const char *spec, unsigned flags,
		 struct lsmfs_diskset **out, char *err, size_t errlen)
{
	*out = NULL;
	char *copy = strdup(spec);
	struct given *given = calloc(LSMFS_MAX_DISKS, sizeof(*given));
	struct lsmfs_diskset *ds = calloc(1, sizeof(*ds));
	uint32_t ngiven = 0;
	int rc = 0;
	if (!copy || !given || !ds) {
		rc = -ENOMEM;
		(void)fs_set_err(err, errlen, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < LSMFS_MAX_DISKS; i++)
		ds->lock_fds[i] = -1;

	/* Split by hand: strtok would hide an empty name ("a::b"). */
	char *name = copy;
	for (;;) {
		char *colon = strchr(name, ':');
		if (colon)
			*colon = 0;
		if (*name == 0) {
			rc = -EINVAL;
			(void)fs_set_err(err, errlen, 0, "%s: empty disk name in the disk list",
				spec);
			goto out;
		}
		if (ngiven == LSMFS_MAX_DISKS) {
			rc = -EINVAL;
			(void)fs_set_err(err, errlen, 0, "more than %d disks given",
				LSMFS_MAX_DISKS);
			goto out;
		}
		struct given *g = &given[ngiven];
		rc = look_at_disk(name, g, err, errlen);
		if (rc == 0)
			rc = check_not_twice(name, g, given, ngiven, err, errlen);
		if (rc) {
			free(g->path);
			g->path = NULL;
			goto out;
		}
		ngiven++;
		if (!colon)
			break;
		name = colon + 1;
	}

	/* Superblocks only after every name is known to be a distinct
	 * directory: "given twice" is the more useful message.  With
	 * DISKSET_TOLERANT a disk whose superblock is damaged waits aside
	 * (damaged[]) until the others tell which disk it must be.  The
	 * superblock of the highest generation is the reference. */
	uint32_t ref = UINT32_MAX; /* the first disk of the highest generation */
	uint32_t damaged[LSMFS_MAX_DISKS], ndamaged = 0;
	bool whole[LSMFS_MAX_DISKS] = {false};
	uint32_t clash_given = UINT32_MAX; /* DISKSET_CLASH: the second claimant */
	char first_err[512] = "", twice[1024] = "";
	for (uint32_t i = 0; i < ngiven; i++) {
		struct given *g = &given[i];
		rc = super_read(g->path, &g->sb, err, errlen);
		if (rc && (flags & DISKSET_TOLERANT) && damaged_disk(g->path, rc)) {
			if (!ndamaged && err)
				snprintf(first_err, sizeof(first_err), "%s", err);
			damaged[ndamaged++] = i;
			continue;
		}
		if (rc == -ENOENT)
			rc = -EMEDIUMTYPE; /* message already says why */
		if (rc)
			goto out;
		if (g->sb.flags & SUPER_RETIRED) {
			char fs[37];
			lsmfs_uuid_format(g->sb.fs_uuid, fs);
			(void)fs_set_err(err, errlen, 0, "%s: removed from filesystem %s (its superblock is "
				"marked retired): it holds none of its data", g->path, fs);
			rc = -EXDEV;
			goto out;
		}
		whole[i] = true;
		if (ref == UINT32_MAX || g->sb.generation > given[ref].sb.generation)
			ref = i;
	}
	const char *ref_path = ref != UINT32_MAX ? given[ref].path : NULL; /* stays valid: moved, not freed */
	for (uint32_t i = 0; i < ngiven && ref != UINT32_MAX; i++) {
		struct given *g = &given[i];
		if (!whole[i])
			continue;
		bool stale;
		rc = check_agrees(g->path, &g->sb, &given[ref].sb, ref_path, &stale, err,
				  errlen);
		if (rc)
			goto out;
		uint32_t idx = g->sb.disk_index;
		if (ds->paths[idx]) {
			rc = -EEXIST;
			(void)fs_set_err(err, errlen, 0, "%s: disk %u of the filesystem given "
				"twice (also %s)", g->path, idx, ds->paths[idx]);
			if (!(flags & DISKSET_CLASH) || ds->clash)
				goto out;
			/* One superblock copied over another disk's: the
			 * pair waits until the others are placed. */
			snprintf(twice, sizeof(twice), "%s", err ? err : "");
			rc = 0;
			ds->clash = true;
			ds->clash_index = idx;
			clash_given = i;
			continue;
		}
		if (stale)
			ds->stale |= 1ull << idx;
		ds->paths[idx] = g->path;
		g->path = NULL; /* now owned by ds */
	}
	if (ref == UINT32_MAX) {
		rc = -EUCLEAN;
		(void)fs_set_err(err, errlen, 0, "%s (and no disk given has a whole superblock to rebuild it from)",
			first_err);
		goto out;
	}
	if (ds->clash) {
		rc = place_clash(ds, given, ref, clash_given, ndamaged, twice, err, errlen);
		if (rc)
			goto out;
	}
	if (ndamaged) {
		rc = place_damaged(ds, given, ref, damaged, ndamaged, err, errlen);
		if (rc)
			goto out;
	}
	if (ref != 0) { /* the rest reads given[0] for the common fields */
		struct given t = given[0];
		given[0] = given[ref];
		given[ref] = t;
	}

	uint32_t count = given[0].sb.disk_count;
	for (uint32_t i = 0; i < count; i++) {
		if (!ds->paths[i] && !super_slot_empty(&given[0].sb, i) &&
		    (flags & DISKSET_DEGRADED)) {
			ds->missing |= 1ull << i;
		} else if (!ds->paths[i] && !super_slot_empty(&given[0].sb, i)) {
			char uuid[37], fs[37];
			lsmfs_uuid_format(given[0].sb.disk_uuids[i], uuid);
			lsmfs_uuid_format(given[0].sb.fs_uuid, fs);
			rc = -ENODEV;
			(void)fs_set_err(err, errlen, 0, "disk %u of %u (UUID %s) of filesystem "
				"%s is missing from the list (to go on without it: lsmfs -o "
				"degraded; to check what is there: fsck.lsmfs -n --degraded; "
				"lsmfs-disk remove --lost drops a disk dead for good)",
				i, count, uuid, fs);
			goto out;
		}
	}
	ds->ndisks = count;
	ds->sb = given[0].sb; /* the reference, or rebuilt as disk 0's */
	for (uint32_t i = 0; i < count; i++)
		if (ds->paths[i]) {
			ds->sb.disk_index = i; /* the first disk present */
			break;
		}
	memcpy(ds->sb.disk_uuid, ds->sb.disk_uuids[ds->sb.disk_index], 16);

	copies_load(ds);
	ds->force = (flags & DISKSET_FORCE) != 0;
	rc = resolve_meta(ds, err, errlen);
	if (rc && (flags & (DISKSET_RESTORE | DISKSET_DIVERGED))) {
		/* A restore cut short left every copy stale: it starts again
		 * from the first copy there.  (Copies that diverged: the
		 * caller chooses one.) */
		rc = 0;
		for (uint32_t i = 0; i < ds->sb.meta_count && ds->meta_primary == UINT32_MAX; i++)
			if (!(ds->meta_absent & (1u << i)))
				ds->meta_primary = i;
		if (ds->meta_primary == UINT32_MAX) {
			rc = -ENOENT;
			(void)fs_set_err(err, errlen, 0, "no copy of the metadata store is there to restore into");
		} else {
			snprintf(ds->meta_dir, sizeof(ds->meta_dir), "%s",
				 ds->meta_paths[ds->meta_primary]);
		}
	}
	for (uint32_t i = 0; !rc && !(flags & DISKSET_RESTORE) && i < ds->sb.meta_count; i++) {
		char mark[sizeof(ds->meta_paths[0]) + 16];
		struct stat st;
		snprintf(mark, sizeof(mark), "%s/" LSMFS_RESTORING, ds->meta_paths[i]);
		if (!(ds->meta_absent & (1u << i)) && stat(mark, &st) == 0) {
			rc = -EBUSY;
			(void)fs_set_err(err, errlen, 0, "%s: a restore of the metadata store (lsmfs-disk restore) was "
				"cut short: run it again", ds->meta_paths[i]);
		}
	}
	if (rc)
		goto out;
	if (flags & DISKSET_LOCK) {
		for (uint32_t i = 0; i < count && rc == 0; i++)
			if (ds->paths[i])
				rc = diskset_lock_disk(ds, i, ds->paths[i], flags, err, errlen);
		if (rc)
			goto out;
		if (!(flags & DISKSET_LOCK_SHARED))
			modes_narrow(ds);
	}
	*out = ds;
	ds = NULL;
out:
	if (given)
		for (uint32_t i = 0; i < ngiven; i++)
			free(given[i].path);
	free(given);
	free(copy);
	if (ds) {
		/* ndisks may still be 0 here: release whatever was taken. */
		ds->ndisks = LSMFS_MAX_DISKS;
		diskset_close(ds);
	}
	return rc;
}

void diskset_mark(struct lsmfs_diskset *ds, const char *state)
{
	char line[64];
	int len = snprintf(line, sizeof(line), "%ld\n%s%s", (long)getpid(), state ? state : "",
			   state ? "\n" : "");
	for (uint32_t i = 0; i < ds->ndisks && !ds->shared; i++) {
		if (ds->lock_fds[i] < 0)
			continue;
		/* only a courtesy to whoever reads it: a failure changes nothing */
		if (pwrite(ds->lock_fds[i], line, (size_t)len, 0) != len ||
		    ftruncate(ds->lock_fds[i], len) != 0)
			(void)0;
	}
}

void diskset_close(struct lsmfs_diskset *ds)
{
	if (!ds)
		return;
	for (uint32_t i = 0; i < ds->ndisks && i < LSMFS_MAX_DISKS; i++) {
		if (ds->lock_fds[i] >= 0) {
			/* Still under our lock: clear the pid so the file never
			 * names a process that has let go.  A failure only
			 * leaves a stale pid, which the next locker replaces. */
			if (!ds->shared && ftruncate(ds->lock_fds[i], 0) != 0)
				errno = 0;
			close(ds->lock_fds[i]);
		}
		free(ds->paths[i]);
	}
	free(ds);
}

void diskset_super_of(const struct lsmfs_diskset *ds, uint32_t d, struct lsmfs_super *out)
{
	*out = ds->sb;
	out->disk_index = d;
	out->flags = 0;
	memcpy(out->disk_uuid, ds->sb.disk_uuids[d], 16);
}

uint64_t diskset_members(const struct lsmfs_diskset *ds)
{
	uint64_t m = 0;
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++)
		if (diskset_present(ds, d))
			m |= 1ull << d;
	return m;
}

int diskset_write_supers(struct lsmfs_diskset *ds, uint64_t only, char *err, size_t errlen)
{
	int rc = 0;
	for (uint32_t d = 0; d < ds->ndisks; d++) {
		if (!diskset_present(ds, d) || !(only >> d & 1))
			continue;
		struct lsmfs_super sb;
		diskset_super_of(ds, d, &sb);
		int r = super_write(ds->paths[d], &sb, rc ? NULL : err, errlen);
		if (r && !rc)
			rc = r;
		if (!r)
			ds->stale &= ~(1ull << d);
	}
	return rc;
}
