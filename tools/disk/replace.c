/*
 * replace.c: `lsmfs-disk DISKS|MNT replace OLD NEWDISK` (fs/SCHEMA.md
 * "Replacing a disk"), as `btrfs replace start`: NEWDISK takes OLD's
 * place, OLD's data going straight onto it once, where `add` then
 * `remove` would move it twice and spread it over every disk.
 *
 *   1. `replace OLD PATH`: the daemon records the replace and adds NEWDISK
 *      (no rebalance);
 *   2. OLD there: each of its sections moved to NEWDISK (`move`, or
 *      `evacuate` with --evacuate), as remove moves them (moves.c);
 *   3. OLD's copy of the store, if it has one, moved to NEWDISK
 *      (storecopy.c);
 *   4. `replace-end OLD`: OLD detached as remove detaches it; or, OLD gone
 *      (missing from a degraded mount, or --lost), dropped as remove --lost
 *      drops it, its sections given to NEWDISK and every chunk left with
 *      one copy given its second there; files with bytes only on OLD are
 *      listed "lost: PATH".
 * Each step is crash-safe on its own; the record ties them together, so
 * that running the command again (after SIGINT, or a crash of this
 * program or of the daemon) goes on where it stopped.
 */
#include "disk.h"
#include "jsonread.h"
#include "sizes.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* The daemon's `replace {json}` line (SCHEMA.md "Control requests"). */
struct begun {
	bool got, resumed, done;
	uint64_t disk;
};

static void begun_line(void *ctx, const char *text)
{
	struct begun *b = ctx;
	struct jv *j;
	char err[128];
	if (strncmp(text, "replace ", 8) || jv_parse(text + 8, strlen(text + 8), &j, err, sizeof(err)))
		return;
	const struct jv *r = jv_get(j, "resumed"), *d = jv_get(j, "done");
	if (!jv_u64(jv_get(j, "new"), &b->disk) && b->disk < LSMFS_MAX_DISKS && r &&
	    r->type == JV_BOOL && d && d->type == JV_BOOL) {
		b->got = true;
		b->resumed = r->b;
		b->done = d->b;
	}
	jv_free(j);
}

/* The end: `lost` lines listed, `dropped {json}`'s counts kept. */
struct ended {
	uint64_t sections, files, rebuilt, stale;
	bool dropped;
};

static void ended_line(void *ctx, const char *text)
{
	struct ended *e = ctx;
	if (!strncmp(text, "lost ", 5)) {
		moves_lost_file(NULL, text);
		return;
	}
	struct jv *j;
	char err[128];
	if (strncmp(text, "dropped ", 8) || jv_parse(text + 8, strlen(text + 8), &j, err, sizeof(err)))
		return;
	e->dropped = true;
	(void)jv_u64(jv_get(j, "sections"), &e->sections); /* 0 when absent */
	(void)jv_u64(jv_get(j, "files"), &e->files);
	(void)jv_u64(jv_get(j, "copies_rebuilt"), &e->rebuilt);
	(void)jv_u64(jv_get(j, "copies_stale"), &e->stale);
	jv_free(j);
}

/* Step 4, and what it did said. */
static int finish(struct session *s, uint32_t old, const char *old_path, uint32_t n,
		  const char *path, bool lost)
{
	char req[48], err[1200];
	struct ended e = {0};
	snprintf(req, sizeof(req), "replace-end %u%s", old, lost ? " lost" : "");
	if (session_ask(s, req, ended_line, &e, err, sizeof(err))) {
		fprintf(stderr, PROG ": replacing disk %u: %s\n", old, err);
		return EXIT_FAILED;
	}
	if (e.dropped) {
		printf("disk %u was gone: its %" PRIu64 " section%s went to disk %u, %" PRIu64
		       " cop%s of chunks rebuilt there", old, e.sections, e.sections == 1 ? "" : "s",
		       n, e.rebuilt, e.rebuilt == 1 ? "y" : "ies");
		if (e.stale)
			printf(", %" PRIu64 " left stale (a scrub rebuilds them once the disks allow)",
			       e.stale);
		if (e.files)
			printf("; the %" PRIu64 " file%s listed above read as EIO where their bytes "
			       "were on it", e.files, e.files == 1 ? "" : "s");
		printf("\n");
	}
	printf("replaced disk %u (%s) by disk %u (%s)%s\n", old, old_path, n, path,
	       e.dropped ? "" : ": its superblock is marked retired");
	return EXIT_DONE;
}

/* OLD's sections, each to disk n (the order of the map). */
static int plan_of(const struct status *st, uint32_t old, uint32_t n, struct plan *pl)
{
	*pl = (struct plan){0};
	for (uint32_t s = 0; s < st->sections; s++)
		if (st->section_disk[s] == old)
			pl->n++;
	pl->moves = calloc(pl->n ? pl->n : 1, sizeof(*pl->moves));
	if (!pl->moves)
		return -ENOMEM;
	size_t i = 0;
	for (uint32_t s = 0; s < st->sections; s++)
		if (st->section_disk[s] == old) {
			pl->moves[i++] = (struct move){.section = s, .from = old, .to = n,
						       .bytes = st->section_bytes[s]};
			pl->bytes += st->section_bytes[s];
		}
	return 0;
}

static void print_plan(const struct status *st, const struct disk_info *o, uint32_t n,
		       const char *path, bool gone, bool resumed)
{
	printf("plan: disk %u (%s) replaced by %s as disk %u%s\n", o->index, o->path, path, n,
	       resumed ? " (a replace under way: it goes on)" : "");
	struct plan pl;
	if (plan_of(st, o->index, n, &pl)) {
		fprintf(stderr, PROG ": out of memory\n");
		return;
	}
	char b[32];
	if (gone) {
		printf("disk %u is gone: its %zu section%s go to disk %u, empty; every chunk with a "
		       "copy on another disk gets its copy back on disk %u; the files with bytes only "
		       "on disk %u are listed (\"lost: PATH\")\n", o->index, pl.n,
		       pl.n == 1 ? "" : "s", n, n, o->index);
	} else {
		size_format(pl.bytes, b, sizeof(b));
		/* An estimate at 100 MiB/s, a plain disk's sequential rate. */
		double secs = (double)pl.bytes / (100.0 * 1024 * 1024);
		printf("%zu section move%s, %s, about %d:%02d at 100 MiB/s\n", pl.n,
		       pl.n == 1 ? "" : "s", b, (int)secs / 60, (int)secs % 60);
		for (size_t i = 0; i < pl.n; i++) {
			size_format(pl.moves[i].bytes, b, sizeof(b));
			printf("move section %u from disk %u to disk %u (%s)\n", pl.moves[i].section,
			       o->index, n, b);
		}
	}
	if (st->store_disks & (1ull << o->index))
		printf("the copy of the metadata store on disk %u %s disk %u\n", o->index,
		       gone ? "is made again on" : "moves to", n);
	printf("then disk %u is %s\n", o->index, gone ? "dropped (lost)" : "detached (its superblock "
	       "retired)");
	plan_free(&pl);
}

/* A present OLD: NEWDISK (not on OLD's filesystem) must have the room
 * for what OLD holds.  0, or an exit code said. */
static int check_room(const struct disk_info *o, const char *path)
{
	struct statvfs sv;
	struct stat sb;
	if (statvfs(path, &sv) != 0 || stat(path, &sb) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return EXIT_FAILED;
	}
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if ((uint64_t)sb.st_dev == o->device || o->bytes <= avail)
		return 0;
	char need[32], have[32];
	size_format(o->bytes, need, sizeof(need));
	size_format(avail, have, sizeof(have));
	fprintf(stderr, PROG ": disk %u (%s) holds %s, %s has %s free: nothing done\n", o->index,
		o->path, need, path, have);
	return EXIT_FAILED;
}

/* Steps 2 and 3: OLD's sections, then its copies of the store, to n. */
static int move_onto(struct session *s, struct status *st, uint32_t old, uint32_t n, bool gone,
		     bool evacuate, volatile sig_atomic_t *stop)
{
	if (!gone) {
		struct plan pl;
		if (plan_of(st, old, n, &pl)) {
			fprintf(stderr, PROG ": out of memory\n");
			return EXIT_FAILED;
		}
		struct progress p = {.evacuate = evacuate, .stop = stop};
		int rc = pl.n ? moves_run(s, &pl, &p) : EXIT_DONE;
		plan_free(&pl);
		if (p.lost)
			fprintf(stderr, PROG ": %" PRIu64 " chunk%s of disk %u could not be read (listed "
				"above): %s read as EIO until fsck.lsmfs -y makes %s a hole\n", p.lost,
				p.lost == 1 ? "" : "s", old, p.lost == 1 ? "its bytes" : "their bytes",
				p.lost == 1 ? "it" : "each");
		if (rc != EXIT_DONE)
			return rc;
		if (p.failed || p.kept) {
			fprintf(stderr, PROG ": %zu section%s stayed on disk %u (said above): it stays a "
				"disk; run the command again once %s\n", p.failed + p.kept,
				p.failed + p.kept == 1 ? "" : "s", old,
				p.kept ? "the two copies of those chunks can be kept apart"
				       : "the cause is gone");
			return EXIT_FAILED;
		}
	}
	if (*stop) {
		fprintf(stderr, PROG ": stopped before disk %u's copy of the metadata store moved; run "
			"the command again to go on\n", old);
		return EXIT_STOPPED;
	}
	char err[1200];
	status_free(st);
	if (status_read(s, st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	int rc = storecopy_off_disk(s, st, old, n);
	if (rc == EXIT_DONE && *stop) {
		fprintf(stderr, PROG ": stopped before disk %u left; run the command again to go on\n",
			old);
		return EXIT_STOPPED;
	}
	return rc;
}

int cmd_replace(struct session *s, const char *old, const char *newdisk, bool force, bool dry,
		bool lost, bool evacuate, volatile sig_atomic_t *stop)
{
	char *path = realpath(newdisk, NULL);
	if (!path) {
		fprintf(stderr, PROG ": %s: %s\n", newdisk, strerror(errno));
		return EXIT_FAILED;
	}
	struct status st;
	char err[1200], *old_path = NULL;
	int rc = EXIT_FAILED;
	if (status_read(s, &st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		goto out;
	}
	/* The daemon reads one line of at most 255 bytes, its newline too. */
	if (strlen(path) > 200 || strchr(path, '\n')) {
		fprintf(stderr, PROG ": %s: path too long for a request (200 bytes at most)\n", path);
		goto out;
	}
	/* A replace whose old disk left already, but for its record (a crash
	 * came between): the end, again, deletes it. */
	int nat = st.replacing && st.replace_new >= 0 ? status_disk(&st, (uint32_t)st.replace_new)
						       : -1;
	if (nat >= 0 && !st.replace_old_member && !strcmp(st.disk[nat].path, path)) {
		if (dry) {
			printf("disk %u was replaced by disk %u (%s): nothing left but the record\n",
			       st.replace_old, st.disk[nat].index, path);
			rc = EXIT_DONE;
		} else {
			rc = finish(s, st.replace_old, "gone", st.disk[nat].index, path, false);
		}
		goto out;
	}
	int at = lost || !strcmp(old, "missing") ? status_find_gone(&st, old, "replace")
						 : status_find_disk(&st, old);
	if (at < 0) {
		if (!lost && strcmp(old, "missing"))
			fprintf(stderr, PROG ": %s: not a disk of this filesystem\n", old);
		goto out;
	}
	const struct disk_info *o = &st.disk[at];
	uint32_t idx = o->index;
	bool gone = !o->usable;
	/* A disk dead for good is the user's word, as for remove --lost:
	 * one only missing here (or failing) may come back. */
	lost = lost || !strcmp(old, "missing");
	if (gone && !lost) {
		fprintf(stderr, PROG ": disk %u is not usable here (missing or failing): if it is dead "
			"for good, replace --lost %s (what it alone held is lost); else mount with it\n",
			idx, old);
		goto out;
	}
	if (evacuate && gone) {
		fprintf(stderr, PROG ": disk %u is gone: --evacuate is for a failing disk that is "
			"there; what a gone disk held is rebuilt from the other copies (or listed "
			"lost)\n", idx);
		goto out;
	}
	if (!(old_path = strdup(o->path))) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}
	bool under_way = st.replacing && st.replace_old == idx && st.replace_old_member &&
			 nat >= 0 && !strcmp(st.disk[nat].path, path);
	if (!gone && !under_way && (rc = check_room(o, path)))
		goto out;
	/* Step 1 (-n: only its checks). */
	char req[300];
	struct begun b = {0};
	snprintf(req, sizeof(req), "replace %u %s%s%s", idx, dry ? "-n " : "", force ? "-f " : "", path);
	int asked = session_ask(s, req, begun_line, &b, err, sizeof(err));
	if (asked || !b.got) {
		fprintf(stderr, PROG ": replace disk %u by %s: %s\n", idx, path,
			asked ? err : "the daemon did not say which disk it added");
		rc = EXIT_FAILED;
		goto out;
	}
	uint32_t n = (uint32_t)b.disk;
	if (dry) {
		print_plan(&st, o, n, path, gone, b.resumed);
		rc = EXIT_DONE;
		goto out;
	}
	if (b.resumed)
		printf("going on with the replace of disk %u by disk %u (%s)\n", idx, n, path);
	else if (!b.done)
		printf("added %s as disk %u, to replace disk %u\n", path, n, idx);
	fflush(stdout);
	status_free(&st);
	if (status_read(s, &st, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s (disk %u is added: run the command again)\n", s->where,
			err, n);
		rc = EXIT_FAILED;
		goto out;
	}
	at = status_disk(&st, idx);
	gone = at < 0 || !st.disk[at].usable;
	if (gone && !lost) {
		fprintf(stderr, PROG ": disk %u is no longer usable (missing or failing): if it is dead "
			"for good, run it again with --lost; else mount with it and run it again\n",
			idx);
		rc = EXIT_FAILED;
		goto out;
	}
	if (!b.done && (rc = move_onto(s, &st, idx, n, gone, evacuate, stop)) != EXIT_DONE)
		goto out;
	rc = finish(s, idx, old_path, n, path, lost);
out:
	status_free(&st);
	free(old_path);
	free(path);
	return rc;
}

char *replace_target(const char *target, const char *newdisk)
{
	char first[PATH_MAX], why[256];
	const char *colon = strchr(target, ':');
	size_t fl = colon ? (size_t)(colon - target) : strlen(target);
	if (fl >= sizeof(first))
		return NULL;
	memcpy(first, target, fl);
	first[fl] = '\0';
	struct lsmfs_super a, nb;
	if (super_read(first, &a, why, sizeof(why)) || super_read(newdisk, &nb, why, sizeof(why)) ||
	    memcmp(a.fs_uuid, nb.fs_uuid, 16) || (nb.flags & SUPER_RETIRED))
		return NULL;
	/* A member: the first disk's superblock lists it (an addition
	 * committed), or its own, newer, does (one cut short that only it
	 * knows of, which giving it finishes). */
	if (nb.disk_index >= LSMFS_MAX_DISKS ||
	    (memcmp(a.disk_uuids[nb.disk_index], nb.disk_uuid, 16) &&
	     (nb.generation <= a.generation ||
	      memcmp(nb.disk_uuids[nb.disk_index], nb.disk_uuid, 16))))
		return NULL;
	char *real = realpath(newdisk, NULL);
	if (!real)
		return NULL;
	/* Given already? */
	for (const char *p = target; *p;) {
		const char *e = strchr(p, ':');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		char one[PATH_MAX];
		if (l < sizeof(one)) {
			memcpy(one, p, l);
			one[l] = '\0';
			char *r = realpath(one, NULL);
			bool same = r && !strcmp(r, real);
			free(r);
			if (same) {
				free(real);
				return NULL;
			}
		}
		p += l + (e != NULL);
	}
	size_t n = strlen(target) + strlen(real) + 2;
	char *spec = malloc(n);
	if (spec)
		snprintf(spec, n, "%s:%s", target, real);
	free(real);
	return spec;
}
