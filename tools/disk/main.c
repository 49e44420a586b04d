/*
 * lsmfs-disk: the disks of an lsmfs filesystem, online or not, as
 * `btrfs device` and `btrfs balance` are for btrfs.
 *
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT status|list [--json]
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT stats [-z|--reset] [-c|--check] [--json]
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT rebalance [--dry-run] [--weight INDEX=W ...]
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT move SECTION DISK-INDEX
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT add NEWDISK [-f] [--weight W] [--no-balance]
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT remove DISK [--dry-run] [--evacuate]
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT remove --lost DISK|missing
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT replace OLD|missing NEWDISK [-f] [-n] [--lost|--evacuate]
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT backup DIR
 *   lsmfs-disk DISK[:DISK...] restore DIR
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT scrub start|resume [-r RATE] [-B] [--json]
 *   lsmfs-disk DISK[:DISK...]|MOUNTPOINT scrub status [--json] | scrub cancel
 *
 * With a daemon mounted on the disks, the daemon does the moves (its
 * control socket, fs/SCHEMA.md "Control requests"); without one, this
 * program does them itself, holding the disks' locks.  Each section move
 * is crash-safe on its own (fs/SCHEMA.md "Moving a section"); SIGINT or
 * SIGTERM stops after the section under way, and running the command
 * again goes on from there.
 */
#include "disk.h"
#include "jsonread.h"
#include "sizes.h"

#include <errno.h>
#include <ftw.h>
#include <sys/xattr.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_asked;

static void on_signal(int sig)
{
	(void)sig;
	stop_asked = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " DISK[:DISK...]|MOUNTPOINT COMMAND [OPTIONS]\n"
		"\n"
		"Commands:\n"
		"  status, list       every disk: index, UUID, path, capacity, used, sections\n"
		"                     and bytes held, its error counters when not all 0; a\n"
		"                     section move under way\n"
		"  stats              every disk's error counters, kept across mounts (as\n"
		"                     btrfs device stats): read_io_errs, write_io_errs,\n"
		"                     checksum_errs, repaired_errs\n"
		"  rebalance          move sections so that every disk holds bytes (and\n"
		"                     sections) in proportion to its weight, none onto a\n"
		"                     disk without the room for it\n"
		"  move SECTION DISK  move one section to the disk of that index\n"
		"  add NEWDISK        make the directory NEWDISK a disk of the filesystem,\n"
		"                     then rebalance onto it\n"
		"  remove DISK        move every section off DISK (an index or a path), and\n"
		"                     its copy of the metadata store to a disk without one,\n"
		"                     then detach it: it keeps only a retired superblock\n"
		"  replace OLD NEWDISK\n"
		"                     the new directory NEWDISK takes the place of disk OLD\n"
		"                     (an index, a path, or `missing`): added, then OLD's\n"
		"                     sections moved straight onto it and its copy of the\n"
		"                     metadata store too, then OLD detached as remove does;\n"
		"                     OLD gone (missing from a degraded mount, or --lost):\n"
		"                     its sections go to NEWDISK, every chunk with another\n"
		"                     copy gets its copy back there, and the files whose\n"
		"                     bytes were only on OLD are listed (\"lost: PATH ...\")\n"
		"  copy add DISK      a new copy of the metadata store on DISK, filled while\n"
		"                     in use (restores the copy count after a copy failed)\n"
		"  copy remove N      remove copy N of the metadata store (not the last)\n"
		"  copy move N DISK   copy add DISK, then copy remove N\n"
		"  backup DIR         a consistent copy of the metadata store in DIR (new or\n"
		"                     empty), taken while mounted; chunk files are not in it\n"
		"  convert [--copies K] [--placement P] [PATH]\n"
		"                     (mounted) the tree at PATH (default: all of it) to K\n"
		"                     copies of file data and placement P: each directory's\n"
		"                     and file's user.lsmfs.copies and user.lsmfs.placement,\n"
		"                     and the chunks already written, online, one chunk at\n"
		"                     a time (crash-safe: run it again)\n"
		"  restore DIR        (unmounted) put backup DIR's metadata store back onto\n"
		"                     the disks it was taken with, which hold the chunk\n"
		"                     files; files whose chunk files went since are listed\n"
		"                     (\"lost: PATH ...\") and read as EIO there\n"
		"  scrub start        read every copy of every chunk, check it against its\n"
		"                     checksums, rewrite a bad copy from a good one and\n"
		"                     rebuild stale or missing copies, online, in the\n"
		"                     background (offline: in the foreground)\n"
		"  scrub status       the scrub running, or the last one: bytes scrubbed,\n"
		"                     rate, errors found, corrected, uncorrectable, the\n"
		"                     files with errors left\n"
		"  scrub cancel       stop the scrub running, after the chunk under way\n"
		"  scrub resume       go on with a scrub cancelled or interrupted (by an\n"
		"                     unmount or a crash) from where it stopped\n"
		"\n");
	fprintf(f,
		"Options:\n"
		"      --json         status, stats, scrub status, scrub start -B: one JSON\n"
		"                     object, as the daemon reports it\n"
		"  -z, --reset        stats: print the counters, then zero them (each as it\n"
		"                     is read: no error counted between is lost)\n"
		"  -c, --check        stats: exit 64 when a counter (before -z) is not 0\n"
		"  -n, --dry-run      rebalance, remove, replace: print the plan (moves,\n"
		"                     bytes, an estimate of the time), change nothing\n"
		"      --weight I=W   rebalance: disk I weighs W (default: the room lsmfs can\n"
		"                     have on it, in GiB: its free space plus what lsmfs\n"
		"                     holds there; 0: move everything off it); may be\n"
		"                     repeated\n"
		"      --weight W     add: the new disk weighs W in the rebalance after it\n"
		"  -f, --force        add, replace: take NEWDISK even when it is not empty\n"
		"      --no-balance   add: only add the disk, move nothing\n"
		"      --evacuate     remove, replace: the disk is failing: what cannot be\n"
		"                     read is listed by path (\"unreadable: PATH: bytes\n"
		"                     A..B ...\"), not copied (it reads as EIO until\n"
		"                     fsck.lsmfs -y makes it a hole), and stops nothing;\n"
		"                     exit 0 once the disk is removed, whatever was lost\n"
		"                     (the list says)\n"
		"      --lost         remove, replace: the disk is dead for good and gone\n"
		"                     (mounted without it, lsmfs -o degraded; DISK may be\n"
		"                     `missing`): its sections go, empty, to the other disks\n"
		"                     (replace: to NEWDISK); a chunk with a copy elsewhere\n"
		"                     gets its copy back, the files that had bytes only on\n"
		"                     it are listed (\"lost: PATH ...\") and read as EIO\n"
		"                     there until truncated below them or removed; its\n"
		"                     copy of the metadata store is replaced\n"
		"      --copies K     convert: 1 or 2 copies of file data\n"
		"      --placement P  convert: spread (each chunk in its hash section, over\n"
		"                     every disk) or together (every chunk of a file in\n"
		"                     the section of its first, on one disk)\n"
		"  -r, --rate RATE    scrub start, resume: read at most RATE bytes per second\n"
		"                     (K, M, G, T: binary units, as 50M; 0: no limit, the\n"
		"                     default; resume keeps the last run's without it)\n"
		"  -B                 scrub start, resume: wait for the scrub to end, print\n"
		"                     its status; SIGINT cancels it\n"
		"  -h, --help         this text\n"
		"  -V, --version      the version\n"
		"\n"
		"With a daemon mounted on the disks (or given its mount point), the daemon\n"
		"moves the sections, online; that takes root.  Otherwise " PROG " opens the\n"
		"disks itself, locked.  SIGINT stops after the section under way; run the\n"
		"command again to go on.\n"
		"\n"
		"Exit status: 0 done, 1 stopped with work left (run again to resume; a\n"
		"scrub: scrub resume), 4 (scrub -B) errors left uncorrected, 8 operational\n"
		"error, 16 usage error, 64 (stats --check) a counter is not 0.\n");
}

static int cmd_status(struct session *s, bool json)
{
	struct status st;
	char err[1200];
	int rc = status_read(s, &st, err, sizeof(err));
	if (rc) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	if (json) {
		printf("%s\n", st.json);
		status_free(&st);
		return EXIT_DONE;
	}
	printf("filesystem %s, %u sections of chunk size %" PRIu64 ", %s\n", st.fs_uuid,
	       st.sections, st.chunk_size, st.online ? "mounted" : "not mounted");
	printf("%-5s %-36s %10s %10s %8s %10s  %s\n", "index", "uuid", "capacity", "used",
	       "sections", "bytes", "path");
	for (uint32_t i = 0; i < st.ndisks; i++) {
		struct disk_info *d = &st.disk[i];
		char cap[32], used[32], held[32];
		size_format(d->capacity, cap, sizeof(cap));
		size_format(d->used, used, sizeof(used));
		size_format(d->bytes, held, sizeof(held));
		printf("%-5u %-36s %10s %10s %8" PRIu64 " %10s  %s%s\n", d->index, d->uuid, cap, used,
		       d->sections, held, d->path,
		       d->missing ? " MISSING (its chunks fail with EIO; " PROG " remove --lost drops it)"
		       : d->usable ? "" : " (replaced or gone: unusable)");
	}
	/* The error counters only where they are not all 0: four columns of
	 * zeros would push the paths off an 80-column terminal, and a line
	 * of its own makes a failing disk stand out (stats lists them all). */
	bool errors = false;
	for (uint32_t i = 0; i < st.ndisks; i++) {
		const struct disk_info *d = &st.disk[i];
		bool any = false;
		for (int k = 0; k < DEVSTAT_KINDS; k++)
			any |= d->errors[k] != 0;
		if (!any)
			continue;
		errors = true;
		printf("disk %u errors:", d->index);
		for (int k = 0; k < DEVSTAT_KINDS; k++)
			printf("%s %s %" PRIu64, k ? "," : "", devstat_names[k], d->errors[k]);
		printf("\n");
	}
	printf("error counters: %s\n", errors ? "not all 0 (above; " PROG " stats -z resets them)"
						: "all 0");
	bool copy_down = false;
	for (uint32_t c = 0; c < st.ncopies; c++)
		copy_down |= strcmp(st.copy[c].state, "in-sync") != 0;
	if (st.degraded && !copy_down)
		printf("DEGRADED: a disk is missing or unusable (above)\n");
	if (st.data_copies) {
		printf("file data: %u cop%s of each chunk, placement %s (the root's; directories "
		       "may ask otherwise)\n", st.data_copies, st.data_copies == 1 ? "y" : "ies",
		       st.placement[0] ? st.placement : "spread");
		if (st.usable_disks < st.data_copies)
			printf("UNDER-REPLICATED: %u copies asked, %u usable disk%s: new chunks get %u "
			       "copy each until a disk is added (a scrub then makes the others)\n",
			       st.data_copies, st.usable_disks, st.usable_disks == 1 ? "" : "s",
			       st.usable_disks);
	}
	printf("metadata store: %u cop%s%s\n", st.ncopies, st.ncopies == 1 ? "y" : "ies",
	       copy_down ? ", DEGRADED (restore the count: " PROG " ... copy add DISK)" : "");
	for (uint32_t c = 0; c < st.ncopies; c++) {
		char where[32] = "";
		if (st.copy[c].disk >= 0)
			snprintf(where, sizeof(where), "disk %" PRId64 ", ", st.copy[c].disk);
		/* A copy whose disk is missing has no path from the daemon:
		 * its disk's last known one, or none. */
		int d = st.copy[c].disk >= 0 ? status_disk(&st, (uint32_t)st.copy[c].disk) : -1;
		if (st.copy[c].path[0])
			printf("  copy %u: %s%s: %s\n", c, where, st.copy[c].path, st.copy[c].state);
		else if (d >= 0 && st.disk[d].path && st.disk[d].path[0])
			printf("  copy %u: %s%s/" LSMFS_DIR "/" LSMFS_META_DIR ": %s\n", c, where, st.disk[d].path,
			       st.copy[c].state);
		else
			printf("  copy %u: %s(its path unknown): %s\n", c, where, st.copy[c].state);
	}
	if (st.replacing && st.replace_old_member && st.replace_new >= 0) {
		int n = status_disk(&st, (uint32_t)st.replace_new);
		const char *np = n >= 0 ? st.disk[n].path : "NEWDISK";
		printf("disk %u is being replaced by disk %" PRId64 " (%s): unless that runs now, "
		       "replace %u %s again goes on\n", st.replace_old, st.replace_new, np,
		       st.replace_old, np);
	}
	if (st.moving) {
		char done[32], total[32];
		size_format(st.move_done, done, sizeof(done));
		size_format(st.move_total, total, sizeof(total));
		if (!strcmp(st.move_state, "interrupted"))
			printf("move of section %u from disk %u to disk %u interrupted by a crash: the "
			       "next mount (or " PROG ") finishes it or rolls it back\n",
			       st.move_section, st.move_from, st.move_to);
		else
			printf("moving section %u from disk %u to disk %u: %s of %s\n", st.move_section,
			       st.move_from, st.move_to, done, total);
	}
	status_free(&st);
	return EXIT_DONE;
}

/* The daemon's "disk N" line after an add. */
static void got_index(void *ctx, const char *text)
{
	long *index = ctx;
	long i;
	if (sscanf(text, "disk %ld", &i) == 1)
		*index = i;
}

static int parse_weights(char **list, int n, double *weight, bool *given)
{
	for (int i = 0; i < n; i++) {
		char *eq = strchr(list[i], '='), *end;
		if (!eq)
			return -1;
		errno = 0;
		unsigned long d = strtoul(list[i], &end, 10);
		if (end != eq || d >= LSMFS_MAX_DISKS || errno)
			return -1;
		double w = strtod(eq + 1, &end);
		if (*end || !(w >= 0) || !isfinite(w))
			return -1;
		weight[d] = w;
		given[d] = true;
	}
	return 0;
}

static int cmd_rebalance(struct session *s, bool dry, char **wlist, int nw)
{
	double weight[LSMFS_MAX_DISKS] = {0};
	bool given[LSMFS_MAX_DISKS] = {0};
	if (parse_weights(wlist, nw, weight, given)) {
		fprintf(stderr, PROG ": --weight takes INDEX=WEIGHT (a disk index, a number >= 0)\n");
		return EXIT_USAGE;
	}
	struct status st;
	char err[1200];
	if (status_read(s, &st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	plan_default_weights(&st, weight, given);
	for (uint32_t d = 0; d < LSMFS_MAX_DISKS; d++)
		if (given[d] && status_disk(&st, d) < 0) {
			fprintf(stderr, PROG ": --weight: the filesystem has no disk %u\n", d);
			status_free(&st);
			return EXIT_USAGE;
		}
	struct progress p = {.stop = &stop_asked};
	int rc = moves_plan_and_run(s, &st, weight, UINT32_MAX, dry, &p);
	status_free(&st);
	return rc;
}

/* `add NEWDISK`: the daemon (or fs_control offline) makes it a disk;
 * then a rebalance onto it, the new disk weighing w (< 0: its room, as
 * default_weights). */
static int cmd_add(struct session *s, const char *disk, bool force, double w, bool balance)
{
	char *path = realpath(disk, NULL);
	if (!path) {
		fprintf(stderr, PROG ": %s: %s\n", disk, strerror(errno));
		return EXIT_FAILED;
	}
	char req[PATH_MAX + 16], err[1200];
	int n = snprintf(req, sizeof(req), "add %s%s", force ? "-f " : "", path);
	/* The daemon reads one line of at most 255 bytes, its newline too. */
	if (n < 0 || n > 250 || strchr(path, '\n')) {
		fprintf(stderr, PROG ": %s: path too long for a request (%d bytes at most)\n", path,
			250 - 4 - (force ? 3 : 0));
		free(path);
		return EXIT_FAILED;
	}
	struct { long index; } got = {-1};
	int rc = session_ask(s, req, got_index, &got.index, err, sizeof(err));
	if (rc) {
		fprintf(stderr, PROG ": add %s: %s\n", path, err);
		free(path);
		return EXIT_FAILED;
	}
	printf("added %s as disk %ld\n", path, got.index);
	fflush(stdout);
	free(path);
	if (!balance)
		return EXIT_DONE;
	struct status st;
	if (status_read(s, &st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s (the disk is added; run " PROG " rebalance)\n",
			s->where, err);
		return EXIT_FAILED;
	}
	double weight[LSMFS_MAX_DISKS] = {0};
	bool given[LSMFS_MAX_DISKS] = {0};
	if (w >= 0 && got.index >= 0 && got.index < LSMFS_MAX_DISKS) {
		weight[got.index] = w;
		given[got.index] = true;
	}
	plan_default_weights(&st, weight, given);
	struct progress p = {.stop = &stop_asked};
	rc = moves_plan_and_run(s, &st, weight, UINT32_MAX, false, &p);
	status_free(&st);
	if (rc == EXIT_FAILED)
		fprintf(stderr, PROG ": the disk is added; the rebalance onto it did not finish (run "
			PROG " rebalance)\n");
	return rc;
}

static int cmd_copy(struct session *s, char **pos, int npos)
{
	struct status st;
	char err[1200];
	if (status_read(s, &st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	const char *what = pos[2];
	int rc = EXIT_USAGE;
	char *end = NULL;
	unsigned long n = npos > 3 ? strtoul(pos[3], &end, 10) : 0;
	bool number_ok = npos > 3 && *pos[3] && end && !*end && n < LSMFS_MAX_META_COPIES;
	int at = npos == 4 && !strcmp(what, "add") ? status_find_disk(&st, pos[3])
		 : npos == 5 && !strcmp(what, "move") ? status_find_disk(&st, pos[4]) : 0;
	int why;
	if (at < 0) {
		fprintf(stderr, PROG ": %s: not a disk of this filesystem\n", pos[npos - 1]);
		rc = EXIT_FAILED;
	} else if (!strcmp(what, "add") && npos == 4) {
		rc = storecopy_add(s, st.disk[at].index, &why);
	} else if (!strcmp(what, "remove") && npos == 4 && number_ok) {
		rc = storecopy_remove(s, (uint32_t)n);
	} else if (!strcmp(what, "move") && npos == 5 && number_ok) {
		rc = storecopy_add(s, st.disk[at].index, &why);
		if (rc == EXIT_DONE)
			rc = storecopy_remove(s, (uint32_t)n);
	} else {
		fprintf(stderr, PROG ": copy add DISK | copy remove N | copy move N DISK\n");
	}
	status_free(&st);
	return rc;
}

/* `remove DISK`: every section off it (refused up front when the others
 * lack the room), its copy of the store to another disk, then the daemon
 * (or fs_control) detaches it. */
static int cmd_remove(struct session *s, const char *disk, bool dry, bool evacuate)
{
	struct status st;
	char err[1200];
	if (status_read(s, &st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	int rc = EXIT_FAILED;
	int at = status_find_disk(&st, disk);
	if (at < 0) {
		fprintf(stderr, PROG ": %s: not a disk of this filesystem\n", disk);
		goto out;
	}
	const struct disk_info *d = &st.disk[at];
	uint32_t idx = d->index;
	if (st.ndisks < 2) {
		fprintf(stderr, PROG ": disk %u (%s) is the filesystem's last disk\n", idx, d->path);
		goto out;
	}
	/* Room on the others, each backing filesystem counted once. */
	uint64_t room = 0;
	for (uint32_t i = 0; i < st.ndisks; i++) {
		bool seen = (int)i == at || !st.disk[i].usable;
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = (int)j != at && st.disk[j].usable &&
			       st.disk[j].device == st.disk[i].device;
		if (!seen)
			room += st.disk[i].available;
	}
	if (d->bytes > room) {
		char need[32], have[32];
		size_format(d->bytes, need, sizeof(need));
		size_format(room, have, sizeof(have));
		fprintf(stderr, PROG ": disk %u (%s) holds %s, the other disks have %s free: nothing "
			"moved\n", idx, d->path, need, have);
		goto out;
	}
	bool holds_store = st.store_disks & (1ull << idx);
	double weight[LSMFS_MAX_DISKS] = {0};
	bool given[LSMFS_MAX_DISKS] = {0};
	given[idx] = true;
	plan_default_weights(&st, weight, given);
	if (dry && holds_store)
		printf("the copy of the metadata store would move off disk %u too\n", idx);
	struct progress p = {.evacuate = evacuate, .stop = &stop_asked};
	rc = moves_plan_and_run(s, &st, weight, idx, dry, &p);
	if (p.lost)
		fprintf(stderr, PROG ": %" PRIu64 " chunk%s of disk %u could not be read (listed "
			"above): %s read as EIO until fsck.lsmfs -y makes %s a hole\n", p.lost,
			p.lost == 1 ? "" : "s", idx, p.lost == 1 ? "its bytes" : "their bytes",
			p.lost == 1 ? "it" : "each");
	if (p.failed)
		fprintf(stderr, PROG ": %zu section%s could not be moved off disk %u (said above): "
			"it stays a disk\n", p.failed, p.failed == 1 ? "" : "s", idx);
	if (rc || dry)
		goto out;
	/* Sections that stayed (both copies of some chunks would have been
	 * on one disk) keep the disk a member: the detach would be refused,
	 * so its copy of the store stays too (with no other disk to take
	 * one, moving it off would only drop a copy). */
	if (p.kept) {
		fprintf(stderr, PROG ": %zu section%s of disk %u could only go to the disk of %s "
			"partner, which holds the other copy of some chunks: disk %u stays a member "
			"(its copy of the metadata store too); add a disk, or make room on the others, "
			"and run it again\n",
			p.kept, p.kept == 1 ? "" : "s", idx, p.kept == 1 ? "its" : "their", idx);
		rc = EXIT_FAILED;
		goto out;
	}
	if (stop_asked) {
		fprintf(stderr, PROG ": stopped before detaching disk %u; run the command again\n", idx);
		rc = EXIT_STOPPED;
		goto out;
	}
	if (holds_store && (rc = storecopy_move_off(s, &st, idx, UINT32_MAX)) != EXIT_DONE)
		goto out;
	char req[32];
	snprintf(req, sizeof(req), "detach %u", idx);
	if (session_ask(s, req, NULL, NULL, err, sizeof(err))) {
		fprintf(stderr, PROG ": detaching disk %u: %s\n", idx, err);
		rc = EXIT_FAILED;
		goto out;
	}
	printf("removed disk %u (%s): its superblock is marked retired\n", idx, d->path);
	rc = EXIT_DONE;
out:
	status_free(&st);
	return rc;
}

/* `remove --lost DISK`: a disk dead for good, missing from the mount.
 * Its copies of the store are replaced first (as remove does), then the
 * daemon (or fs_control) gives its sections away and detaches it. */
static int cmd_remove_lost(struct session *s, const char *disk)
{
	struct status st;
	char err[1200];
	if (status_read(s, &st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	int rc = EXIT_FAILED, at = status_find_gone(&st, disk, "remove");
	if (at < 0)
		goto out;
	uint32_t idx = st.disk[at].index;
	/* Each copy of the store it held, replaced. */
	if ((rc = storecopy_off_disk(s, &st, idx, UINT32_MAX)) != EXIT_DONE)
		goto out;
	char req[32];
	snprintf(req, sizeof(req), "drop-lost %u", idx);
	if (session_ask(s, req, moves_lost_file, NULL, err, sizeof(err))) {
		fprintf(stderr, PROG ": dropping disk %u: %s\n", idx, err);
		rc = EXIT_FAILED;
		goto out;
	}
	printf("removed disk %u (lost): the files listed above read as EIO where their bytes "
	       "were on it\n", idx);
	rc = EXIT_DONE;
out:
	status_free(&st);
	return rc;
}

static void backup_line(void *ctx, const char *text)
{
	(void)ctx;
	if (strncmp(text, "backup ", 7)) {
		printf("%s\n", text);
		return;
	}
	struct jv *v = NULL;
	char err[128];
	uint64_t tables = 0, bytes = 0;
	if (jv_parse(text + 7, strlen(text + 7), &v, err, sizeof(err)) == 0 &&
	    !jv_u64(jv_get(v, "tables"), &tables) && !jv_u64(jv_get(v, "bytes"), &bytes)) {
		char sz[32];
		size_format(bytes, sz, sizeof(sz));
		printf("backup of the metadata store: %" PRIu64 " table%s, %s\n", tables,
		       tables == 1 ? "" : "s", sz);
	} else {
		printf("%s\n", text);
	}
	if (v)
		jv_free(v);
}

/* The walk of a convert: nftw has no context argument. */
static struct {
	struct session *s;
	char copies[2];        /* "" when kept */
	const char *placement; /* NULL when kept */
	uint64_t files, chunks, changed, left, busy, bytes, failed;
	dev_t dev;
} conv;

static void convert_line(void *ctx, const char *text)
{
	(void)ctx;
	unsigned long long n[7] = {0};
	if (sscanf(text, "converted {\"ino\":%llu,\"chunks\":%llu,\"changed\":%llu,\"left\":%llu,"
		   "\"busy\":%llu,\"bytes\":%llu,\"unrebuilt\":%llu}", &n[0], &n[1], &n[2], &n[3],
		   &n[4], &n[5], &n[6]) == 7) {
		conv.chunks += n[1];
		conv.changed += n[2];
		conv.left += n[3] + n[6];
		conv.busy += n[4];
		conv.bytes += n[5];
	}
}

static void convert_attr(const char *path, const char *name, const char *value)
{
	if (setxattr(path, name, value, strlen(value), 0) != 0)
		fprintf(stderr, PROG ": %s: setting %s: %s\n", path, name, strerror(errno));
}

static int convert_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (stop_asked)
		return 1;
	if (st->st_dev != conv.dev || (type != FTW_F && type != FTW_D))
		return 0; /* another filesystem below, a symlink, a special file */
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return 0;
	/* What is made or written from now on follows it too. */
	if (conv.copies[0])
		convert_attr(path, "user.lsmfs.copies", conv.copies);
	if (conv.placement)
		convert_attr(path, "user.lsmfs.placement", conv.placement);
	if (!S_ISREG(st->st_mode))
		return 0;
	char req[96], err[1200];
	snprintf(req, sizeof(req), "convert %llu %s %s", (unsigned long long)st->st_ino,
		 conv.copies[0] ? conv.copies : "0", conv.placement ? conv.placement : "-");
	if (session_ask(conv.s, req, convert_line, NULL, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		conv.failed++;
	}
	conv.files++;
	if (isatty(2) && conv.files % 100 == 0)
		fprintf(stderr, "\r%" PRIu64 " files, %" PRIu64 " chunks changed   ", conv.files,
			conv.changed);
	return 0;
}

/* `MNT convert [--copies K] [--placement P] [PATH]`: the tree at PATH
 * (default: all of it) to K copies and placement P: the policy
 * attributes of each directory and file, and the chunks of each file,
 * converted online by the daemon, one at a time. */
static int cmd_convert(struct session *s, const char *path, unsigned copies, const char *placement)
{
	if (!s->mounted || s->sock < 0) {
		fprintf(stderr, PROG ": convert works on a mounted filesystem: give its mount point\n");
		return EXIT_USAGE;
	}
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return EXIT_FAILED;
	}
	conv.s = s;
	conv.copies[0] = copies ? (char)('0' + copies) : '\0';
	conv.placement = placement;
	conv.dev = st.st_dev;
	if (nftw(path, convert_one, 64, FTW_PHYS | FTW_MOUNT) < 0) {
		fprintf(stderr, PROG ": walking %s: %s\n", path, strerror(errno));
		return EXIT_FAILED;
	}
	if (isatty(2))
		fputc('\n', stderr);
	char b[32], to[64];
	size_format(conv.bytes, b, sizeof(b));
	if (copies && placement)
		snprintf(to, sizeof(to), "%u cop%s, %s", copies, copies == 1 ? "y" : "ies", placement);
	else if (copies)
		snprintf(to, sizeof(to), "%u cop%s", copies, copies == 1 ? "y" : "ies");
	else
		snprintf(to, sizeof(to), "%s", placement);
	printf("converted %s to %s: %" PRIu64 " files, %" PRIu64 " of %" PRIu64 " chunks "
	       "changed, %s copied", path, to, conv.files, conv.changed, conv.chunks, b);
	if (conv.left)
		printf("; %" PRIu64 " left as they were (no disk, or no room, for them now: add a "
		       "disk or rebalance, then run it again or scrub)", conv.left);
	if (conv.busy)
		printf("; %" PRIu64 " in write now (run it again)", conv.busy);
	printf("\n");
	if (stop_asked) {
		fprintf(stderr, PROG ": stopped: run the command again to go on\n");
		return EXIT_STOPPED;
	}
	return conv.failed || conv.busy ? EXIT_FAILED : EXIT_DONE;
}

static int cmd_backup(struct session *s, const char *dir)
{
	char abs[PATH_MAX + 2], cwd[PATH_MAX];
	if (dir[0] == '/')
		snprintf(abs, sizeof(abs), "%s", dir);
	else if (getcwd(cwd, sizeof(cwd)))
		snprintf(abs, sizeof(abs), "%s/%s", cwd, dir);
	else
		abs[0] = 0;
	if (!abs[0] || strlen(abs) > 200) {
		fprintf(stderr, PROG ": %s: path too long\n", dir);
		return EXIT_FAILED;
	}
	char req[256], err[1200];
	snprintf(req, sizeof(req), "backup %s", abs);
	if (session_ask(s, req, backup_line, NULL, err, sizeof(err))) {
		fprintf(stderr, PROG ": backup into %s: %s\n", abs, err);
		return EXIT_FAILED;
	}
	printf("backup in %s: restore with " PROG " DISKS restore %s (unmounted)\n", abs, abs);
	return EXIT_DONE;
}

static void restore_log(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": %s\n", msg);
}

static int restore_out(void *ctx, const char *line)
{
	if (!strncmp(line, "lost ", 5))
		moves_lost_file(ctx, line);
	else if (strcmp(line, "restored"))
		printf("%s\n", line);
	return 0;
}

/* `restore DIR`: offline only, the disks locked. */
static int cmd_restore(const char *target, const char *dir)
{
	char err[1200];
	struct lsmfs_diskset *ds;
	int rc = diskset_open(target, DISKSET_LOCK | DISKSET_RESTORE, &ds, err, sizeof(err));
	if (rc) {
		fprintf(stderr, PROG ": %s%s\n", err,
			rc == -EBUSY ? " (unmount it first: a restore is offline)" : "");
		return EXIT_FAILED;
	}
	rc = fs_restore(ds, dir, restore_log, NULL, restore_out, NULL, err, sizeof(err));
	diskset_close(ds);
	if (rc) {
		fprintf(stderr, PROG ": restoring %s: %s\n", dir, err);
		return EXIT_FAILED;
	}
	printf("restored the metadata store from %s\n", dir);
	return EXIT_DONE;
}

static int cmd_move(struct session *s, const char *sec, const char *disk)
{
	char *end;
	errno = 0;
	unsigned long sn = strtoul(sec, &end, 10);
	if (*end || !*sec || errno || sn > UINT32_MAX)
		return EXIT_USAGE;
	unsigned long dn = strtoul(disk, &end, 10);
	if (*end || !*disk || errno || dn >= LSMFS_MAX_DISKS)
		return EXIT_USAGE;
	/* The disk it is on now, for the report: the map as the status has it. */
	struct status st;
	char err[1200];
	if (status_read(s, &st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	if (sn >= st.sections) {
		fprintf(stderr, PROG ": move: the filesystem has no section %lu (it has %u)\n", sn,
			st.sections);
		status_free(&st);
		return EXIT_FAILED;
	}
	struct move m = {.section = (uint32_t)sn, .to = (uint32_t)dn,
			 .from = st.section_disk[sn]};
	status_free(&st);
	struct progress p = {.tty = isatty(2), .count = 1};
	clock_gettime(CLOCK_MONOTONIC, &p.start);
	int rc = moves_one(s, &m, &p);
	/* Refused (both copies of some chunks would be on one disk): a
	 * rebalance goes on without it, but this move was all that was
	 * asked, and it was not made. */
	return rc == EXIT_DONE && p.kept ? EXIT_FAILED : rc;
}

/* A small count (copies): the number, or -1 when text is none. */
static long number_long(const char *text)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	return errno || end == text || *end || v < 0 || v > 64 ? -1 : v;
}

static int number(const char *text, double *out)
{
	char *end;
	double w = strtod(text, &end);
	if (!*text || *end || !(w >= 0) || !isfinite(w))
		return -1;
	*out = w;
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_WEIGHT, OPT_NO_BALANCE, OPT_EVACUATE, OPT_LOST, OPT_COPIES,
	       OPT_PLACEMENT };
	const char *rate_text = NULL;
	bool wait = false;
	static const struct option longopts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"dry-run", no_argument, NULL, 'n'},
		{"weight", required_argument, NULL, OPT_WEIGHT},
		{"force", no_argument, NULL, 'f'},
		{"no-balance", no_argument, NULL, OPT_NO_BALANCE},
		{"evacuate", no_argument, NULL, OPT_EVACUATE},
		{"lost", no_argument, NULL, OPT_LOST},
		{"reset", no_argument, NULL, 'z'},
		{"check", no_argument, NULL, 'c'},
		{"rate", required_argument, NULL, 'r'},
		{"copies", required_argument, NULL, OPT_COPIES},
		{"placement", required_argument, NULL, OPT_PLACEMENT},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	bool json = false, dry = false, force = false, no_balance = false, evacuate = false;
	bool lost = false, reset = false, check = false;
	long copies = 0;
	const char *placement = NULL;
	char *weights[LSMFS_MAX_DISKS];
	int nw = 0, c;
	while ((c = getopt_long(argc, argv, "+nfzcr:BhV", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			json = true;
			break;
		case 'n':
			dry = true;
			break;
		case 'f':
			force = true;
			break;
		case OPT_NO_BALANCE:
			no_balance = true;
			break;
		case OPT_EVACUATE:
			evacuate = true;
			break;
		case OPT_LOST:
			lost = true;
			break;
		case 'z':
			reset = true;
			break;
		case OPT_COPIES:
			copies = number_long(optarg) ? number_long(optarg) : -1;
			break;
		case OPT_PLACEMENT:
			placement = optarg;
			break;
		case 'c':
			check = true;
			break;
		case 'r':
			rate_text = optarg;
			break;
		case 'B':
			wait = true;
			break;
		case OPT_WEIGHT:
			if (nw == LSMFS_MAX_DISKS) {
				fprintf(stderr, PROG ": too many --weight\n");
				return EXIT_USAGE;
			}
			weights[nw++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return EXIT_DONE;
		case 'V':
			lsmfs_print_version(PROG, NULL);
			return EXIT_DONE;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	/* Options may also follow the command (as btrfs takes them). */
	char *pos[5];
	int npos = 0;
	for (int i = optind; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--dry-run") || !strcmp(argv[i], "-n")) {
			dry = true;
		} else if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f")) {
			force = true;
		} else if (!strcmp(argv[i], "--no-balance")) {
			no_balance = true;
		} else if (!strcmp(argv[i], "--evacuate")) {
			evacuate = true;
		} else if (!strcmp(argv[i], "--lost")) {
			lost = true;
		} else if (!strcmp(argv[i], "--reset") || !strcmp(argv[i], "-z")) {
			reset = true;
		} else if (!strcmp(argv[i], "--check") || !strcmp(argv[i], "-c")) {
			check = true;
		} else if ((!strcmp(argv[i], "--rate") || !strcmp(argv[i], "-r")) && i + 1 < argc) {
			rate_text = argv[++i];
		} else if (!strncmp(argv[i], "--rate=", 7)) {
			rate_text = argv[i] + 7;
		} else if (!strcmp(argv[i], "-B")) {
			wait = true;
		} else if (!strcmp(argv[i], "--copies") && i + 1 < argc) {
			copies = number_long(argv[i + 1]) ? number_long(argv[i + 1]) : -1;
			i++;
		} else if (!strncmp(argv[i], "--copies=", 9)) {
			copies = number_long(argv[i] + 9) ? number_long(argv[i] + 9) : -1;
		} else if (!strcmp(argv[i], "--placement") && i + 1 < argc) {
			placement = argv[++i];
		} else if (!strncmp(argv[i], "--placement=", 12)) {
			placement = argv[i] + 12;
		} else if (!strcmp(argv[i], "--weight") && i + 1 < argc && nw < LSMFS_MAX_DISKS) {
			weights[nw++] = argv[++i];
		} else if (!strncmp(argv[i], "--weight=", 9) && nw < LSMFS_MAX_DISKS) {
			weights[nw++] = argv[i] + 9;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, PROG ": unknown option %s\n", argv[i]);
			return EXIT_USAGE;
		} else if (npos < 5) {
			pos[npos++] = argv[i];
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (npos < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = pos[1];
	bool is_status = !strcmp(cmd, "status") || !strcmp(cmd, "list");
	bool is_rebal = !strcmp(cmd, "rebalance"), is_move = !strcmp(cmd, "move");
	bool is_add = !strcmp(cmd, "add"), is_remove = !strcmp(cmd, "remove");
	bool is_copy = !strcmp(cmd, "copy");
	bool is_backup = !strcmp(cmd, "backup"), is_restore = !strcmp(cmd, "restore");
	bool is_stats = !strcmp(cmd, "stats"), is_convert = !strcmp(cmd, "convert");
	bool is_scrub = !strcmp(cmd, "scrub"), is_replace = !strcmp(cmd, "replace");
	bool known = is_status || is_rebal || is_move || is_add || is_remove || is_copy || is_replace ||
		     is_backup || is_restore || is_stats || is_convert || is_scrub;
	int want = is_copy ? (npos >= 4 ? npos : 4) : is_move || is_replace ? 4
		   : is_convert ? (npos == 3 ? 3 : 2)
		   : is_add || is_remove || is_backup || is_restore || is_scrub ? 3 : 2;
	double add_weight = -1;
	/* scrub start and resume take -r and -B; status --json; so does -B. */
	const char *sub = is_scrub && npos == 3 ? pos[2] : "";
	bool scrub_runs = !strcmp(sub, "start") || !strcmp(sub, "resume");
	bool scrub_known = scrub_runs || !strcmp(sub, "status") || !strcmp(sub, "cancel");
	uint64_t rate = 0;
	bool bad_rate = rate_text && scrub_rate_parse(rate_text, &rate);
	bool bad = !known || npos != want || (is_scrub && !scrub_known) ||
		   ((rate_text || wait) && !scrub_runs) || bad_rate ||
		   (json && !is_status && !is_stats && strcmp(sub, "status") && !(scrub_runs && wait)) ||
		   ((reset || check) && !is_stats) ||
		   (dry && !is_rebal && !is_remove && !is_replace) || (nw && !is_rebal && !is_add) ||
		   (force && !is_add && !is_replace) || (no_balance && !is_add) ||
		   (evacuate && !is_remove && !is_replace) ||
		   (lost && (evacuate || (is_remove ? dry : !is_replace))) ||
		   (is_add && (nw > 1 || (nw == 1 && number(weights[0], &add_weight)))) ||
		   ((copies || placement) && !is_convert) ||
		   (is_convert && ((!copies && !placement) || copies < 0 ||
				   copies > CHUNK_MAX_COPIES ||
				   (placement && strcmp(placement, "spread") &&
				    strcmp(placement, "together"))));
	if (bad) {
		if (!known)
			fprintf(stderr, PROG ": unknown command %s\n", cmd);
		else if (is_scrub && !scrub_known)
			fprintf(stderr, PROG ": scrub start|resume [-r RATE] [-B] | status | cancel\n");
		else if (bad_rate)
			fprintf(stderr, PROG ": %s: not a rate (bytes per second, as 50M or 1G)\n",
				rate_text);
		else if (is_add && nw)
			fprintf(stderr, PROG ": add: --weight takes one number >= 0 (the new disk's)\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (is_restore)
		return cmd_restore(pos[0], pos[2]);
	struct session s;
	/* stats without -z only reads, as status (a disk missing is fine). */
	bool reads = is_status || (is_stats && !reset) || (is_scrub && !scrub_runs);
	/* A replace going on offline: its new disk may be a member now. */
	char *spec = is_replace ? replace_target(pos[0], pos[3]) : NULL;
	bool gone = lost || (is_replace && !strcmp(pos[2], "missing"));
	int rc = session_open(&s, spec ? spec : pos[0], !reads && !dry, reads || gone);
	free(spec);
	if (rc)
		return rc;
	if (is_status)
		rc = cmd_status(&s, json);
	else if (is_stats)
		rc = cmd_stats(&s, reset, check, json);
	else if (is_rebal)
		rc = cmd_rebalance(&s, dry, weights, nw);
	else if (is_add)
		rc = cmd_add(&s, pos[2], force, add_weight, !no_balance);
	else if (is_replace)
		rc = cmd_replace(&s, pos[2], pos[3], force, dry, lost, evacuate, &stop_asked);
	else if (is_remove && lost)
		rc = cmd_remove_lost(&s, pos[2]);
	else if (is_remove)
		rc = cmd_remove(&s, pos[2], dry, evacuate);
	else if (is_copy)
		rc = cmd_copy(&s, pos, npos);
	else if (is_backup)
		rc = cmd_backup(&s, pos[2]);
	else if (is_scrub)
		rc = cmd_scrub(&s, sub, rate_text != NULL, rate, wait, json, &stop_asked);
	else if (is_convert)
		rc = cmd_convert(&s, npos == 3 ? pos[2] : pos[0], (unsigned)copies, placement);
	else if ((rc = cmd_move(&s, pos[2], pos[3])) == EXIT_USAGE)
		fprintf(stderr, PROG ": move takes a section number and a disk index\n");
	session_close(&s);
	return rc;
}
