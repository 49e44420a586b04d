/*
 * moves.c: sections moved off or between disks, as rebalance, add, remove
 * and replace run them: one control request `move` (or `evacuate`) per
 * section, in the plan's order, with progress on a terminal and a line per
 * section moved otherwise; what an evacuation could not read, and what a
 * disk dropped as lost held, listed by path.
 */
#include "disk.h"
#include "jsonread.h"
#include "sizes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* s on stdout, control bytes as \xNN: a hostile name keeps to its line. */
static void put_name(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

/* `lost {json}`: a chunk an evacuation could not read, listed on stdout
 * by path (fs/SCHEMA.md, "Control requests"). */
static void lost_line(struct progress *p, const char *text)
{
	struct jv *j;
	char err[128];
	if (p->tty)
		fputc('\n', stderr);
	p->lost++;
	if (jv_parse(text, strlen(text), &j, err, sizeof(err))) {
		printf("unreadable: %s\n", text); /* as the daemon said it */
		return;
	}
	uint64_t ino = 0, chunk = 0, off = 0, bytes = 0;
	jv_u64(jv_get(j, "ino"), &ino);
	jv_u64(jv_get(j, "chunk"), &chunk);
	jv_u64(jv_get(j, "offset"), &off);
	jv_u64(jv_get(j, "bytes"), &bytes);
	const struct jv *path = jv_get(j, "path"), *file = jv_get(j, "file"),
			*why = jv_get(j, "error");
	fputs("unreadable: ", stdout);
	put_name(path && path->type == JV_STRING ? path->str : "?");
	printf(": bytes %" PRIu64 "..%" PRIu64 " (inode %" PRIu64 ", chunk %" PRIu64 "): ", off,
	       off + bytes, ino, chunk);
	put_name(file && file->type == JV_STRING ? file->str : "?");
	printf(": %s\n", why && why->type == JV_STRING ? why->str : "?");
	fflush(stdout);
	jv_free(j);
}

static void progress_line(void *ctx, const char *text)
{
	struct progress *p = ctx;
	if (!strncmp(text, "lost ", 5)) {
		lost_line(p, text + 5);
		return;
	}
	uint64_t bytes = 0, files = 0;
	const char *b = strstr(text, "\"bytes_done\":"), *f = strstr(text, "\"files_done\":");
	if (strncmp(text, "progress ", 9) || !b || !f)
		return;
	bytes = strtoull(b + 13, NULL, 10);
	files = strtoull(f + 13, NULL, 10);
	p->last_bytes = bytes;
	p->files = files;
	if (!p->tty)
		return;
	double t = since(&p->start);
	uint64_t done = p->before + bytes;
	double rate = t > 0 ? (double)done / t : 0;
	char d[32], tot[32], r[32];
	size_format(done, d, sizeof(d));
	size_format(p->plan_bytes, tot, sizeof(tot));
	size_format((uint64_t)rate, r, sizeof(r));
	double eta = rate > 0 && p->plan_bytes > done ? (double)(p->plan_bytes - done) / rate : 0;
	fprintf(stderr, "\rsection %zu of %zu: %s of %s moved, %s/s, ETA %d:%02d   ", p->index + 1,
		p->count, d, tot, r, (int)eta / 60, (int)eta % 60);
	fflush(stderr);
}

int moves_one(struct session *s, const struct move *m, struct progress *p)
{
	char req[64], err[1200];
	snprintf(req, sizeof(req), "%s %u %u", p->evacuate ? "evacuate" : "move", m->section, m->to);
	clock_gettime(CLOCK_MONOTONIC, &p->move_start);
	p->last_bytes = 0;
	p->files = 0;
	int rc = session_ask(s, req, progress_line, p, err, sizeof(err));
	if (p->tty)
		fputc('\n', stderr);
	if (rc == -EXDEV) {
		/* It would put both copies of some chunks on one disk: it
		 * stays, and the plan goes on without it. */
		fprintf(stderr, PROG ": section %u stays on disk %u: %s\n", m->section, m->from, err);
		p->kept++;
		return 0;
	}
	if (rc) {
		fprintf(stderr, PROG ": section %u: %s\n", m->section, err);
		return EXIT_FAILED;
	}
	char b[32];
	size_format(p->last_bytes, b, sizeof(b));
	if (!p->tty)
		printf("moved section %u from disk %u to disk %u: %" PRIu64 " file%s, %s in %.2f s\n",
		       m->section, m->from, m->to, p->files, p->files == 1 ? "" : "s", b,
		       since(&p->move_start));
	fflush(stdout);
	return 0;
}

int moves_run(struct session *s, const struct plan *pl, struct progress *p)
{
	p->tty = isatty(2);
	p->count = pl->n;
	p->plan_bytes = pl->bytes;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	for (size_t i = 0; i < pl->n; i++) {
		if (p->stop && *p->stop) {
			fprintf(stderr, PROG ": stopped: %zu of %zu section moves left; run the command "
				"again to go on\n", pl->n - i, pl->n);
			return EXIT_STOPPED;
		}
		p->index = i;
		int rc = moves_one(s, &pl->moves[i], p);
		if (rc && !p->evacuate)
			return rc;
		p->failed += rc != 0;
		p->before += pl->moves[i].bytes;
	}
	if (p->kept)
		printf("%zu section%s stayed: moved, %s would have put both copies of chunks on one "
		       "disk\n", p->kept, p->kept == 1 ? "" : "s", p->kept == 1 ? "it" : "each");
	return p->failed ? EXIT_FAILED : EXIT_DONE;
}

int moves_plan_and_run(struct session *s, const struct status *st, const double *weight,
		       uint32_t drain, bool dry, struct progress *p)
{
	struct plan pl;
	bool even = drain == UINT32_MAX;
	for (uint32_t i = 0; i < st->ndisks; i++)
		if (st->disk[i].missing) {
			fprintf(stderr, PROG ": disk %u is missing (a degraded mount): its sections "
				"cannot move; mount with it, or drop it with remove --lost\n",
				st->disk[i].index);
			return EXIT_FAILED;
		}
	int rc = even ? plan_rebalance(st, weight, &pl) : plan_drain(st, weight, drain, &pl);
	if (rc == -ENOSPC) {
		bool weighed = false;
		for (uint32_t i = 0; i < st->ndisks; i++)
			weighed |= weight[st->disk[i].index] > 0;
		if (!weighed)
			fprintf(stderr, PROG ": no disk may take sections (every weight is 0)\n");
		else if (even)
			fprintf(stderr, PROG ": the disks of weight 0 hold a section that no other "
				"disk has the room for: nothing moved\n");
		else
			fprintf(stderr, PROG ": disk %u holds a section that no other disk has the "
				"room for: nothing moved\n", drain);
		return EXIT_FAILED;
	}
	if (rc) {
		fprintf(stderr, PROG ": %s\n", strerror(-rc));
		return EXIT_FAILED;
	}
	/* Room: a disk must be able to take what the plan gives it (the
	 * planner sees to it; this is the last word before anything moves). */
	uint64_t in[LSMFS_MAX_DISKS] = {0}, out[LSMFS_MAX_DISKS] = {0};
	for (size_t i = 0; i < pl.n; i++) {
		in[pl.moves[i].to] += pl.moves[i].bytes;
		out[pl.moves[i].from] += pl.moves[i].bytes;
	}
	for (uint32_t i = 0; i < st->ndisks; i++) {
		const struct disk_info *d = &st->disk[i];
		/* A move copies before it removes: the whole section must fit. */
		if (in[d->index] > d->available) {
			char need[32], have[32];
			size_format(in[d->index], need, sizeof(need));
			size_format(d->available, have, sizeof(have));
			fprintf(stderr, PROG ": disk %u (%s) would take %s but has %s free: nothing "
				"moved\n", d->index, d->path, need, have);
			plan_free(&pl);
			return EXIT_FAILED;
		}
	}
	if (dry) {
		char b[32];
		size_format(pl.bytes, b, sizeof(b));
		printf("plan: %zu section move%s, %s", pl.n, pl.n == 1 ? "" : "s", b);
		/* An estimate at 100 MiB/s, a plain disk's sequential rate. */
		double secs = (double)pl.bytes / (100.0 * 1024 * 1024);
		printf(", about %d:%02d at 100 MiB/s\n", (int)secs / 60, (int)secs % 60);
		for (size_t i = 0; i < pl.n; i++) {
			size_format(pl.moves[i].bytes, b, sizeof(b));
			printf("move section %u from disk %u to disk %u (%s)\n", pl.moves[i].section,
			       pl.moves[i].from, pl.moves[i].to, b);
		}
		for (uint32_t i = 0; i < st->ndisks; i++) {
			const struct disk_info *d = &st->disk[i];
			char now[32], after[32];
			size_format(d->bytes, now, sizeof(now));
			size_format(d->bytes + in[d->index] - out[d->index], after, sizeof(after));
			printf("disk %u: %s now, %s after (weight %.2f)\n", d->index, now, after,
			       weight[d->index]);
		}
		plan_free(&pl);
		return EXIT_DONE;
	}
	rc = pl.n ? moves_run(s, &pl, p) : EXIT_DONE;
	if (!pl.n && even)
		printf("balanced: nothing to move\n");
	plan_free(&pl);
	return rc;
}

void moves_lost_file(void *ctx, const char *text)
{
	(void)ctx;
	if (strncmp(text, "lost ", 5))
		return;
	struct jv *v = NULL;
	char err[128];
	if (jv_parse(text + 5, strlen(text + 5), &v, err, sizeof(err)))
		v = NULL;
	const struct jv *p = v ? jv_get(v, "path") : NULL;
	uint64_t chunks = 0, bytes = 0;
	const struct jv *c = v ? jv_get(v, "chunks") : NULL, *b = v ? jv_get(v, "bytes") : NULL;
	if (p && p->type == JV_STRING && !jv_u64(c, &chunks) && !jv_u64(b, &bytes)) {
		char sz[32];
		size_format(bytes, sz, sizeof(sz));
		printf("lost: ");
		put_name(p->str);
		printf(": %" PRIu64 " chunk%s, %s (EIO until truncated below them or removed)\n",
		       chunks, chunks == 1 ? "" : "s", sz);
	} else {
		printf("lost: %s\n", text + 5); /* as the daemon said it */
	}
	if (v)
		jv_free(v);
}
