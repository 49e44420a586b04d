/*
 * stats.c: `lsmfs-disk stats`, each disk's error counters as `btrfs
 * device stats` prints them (fs/SCHEMA.md "Error counters"), one line
 * per disk and counter:
 *
 *   [/srv/disk1].read_io_errs    0
 *
 * from the `devstats` control request; -z asks `devstats reset`, which
 * zeroes each counter as it reads it, so the lines show what was reset.
 */
#include "disk.h"
#include "jsonread.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s on stdout, control bytes as \xNN (a path keeps to its line). */
static void put_path(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

/* One disk of the answer. */
struct row {
	uint64_t index;
	char *path;             /* "" for a missing disk of unknown path */
	bool missing;
	uint64_t count[DEVSTAT_KINDS];
};

/* The answer into rows[] (*n of them; each path the caller's to free): 0,
 * or -1 when it is not what this program understands. */
static int parse(const char *json, struct row *rows, size_t *n)
{
	struct jv *j;
	char err[256];
	*n = 0;
	if (jv_parse(json, strlen(json), &j, err, sizeof(err)))
		return -1;
	const struct jv *disks = jv_get(j, "disks");
	int rc = disks && disks->type == JV_ARRAY ? 0 : -1;
	for (const struct jv *d = rc ? NULL : disks->kids; d; d = d->next) {
		struct row *r = &rows[*n];
		const struct jv *path = jv_get(d, "path"), *missing = jv_get(d, "missing");
		if (*n == LSMFS_MAX_DISKS || jv_u64(jv_get(d, "index"), &r->index) || !path ||
		    path->type != JV_STRING || memchr(path->str, 0, path->len) ||
		    status_errors(jv_get(d, "errors"), r->count) ||
		    !(r->path = strndup(path->str, path->len))) {
			rc = -1;
			break;
		}
		r->missing = missing && missing->type == JV_BOOL && missing->b;
		(*n)++;
	}
	jv_free(j);
	return rc;
}

/* As btrfs prints them: "[PATH].NAME VALUE". */
static void print_rows(const struct row *rows, size_t n)
{
	for (size_t d = 0; d < n; d++)
		for (int i = 0; i < DEVSTAT_KINDS; i++) {
			putchar('[');
			if (rows[d].path[0])
				put_path(rows[d].path, strlen(rows[d].path));
			else
				printf("disk %" PRIu64, rows[d].index);
			printf("].%-14s %" PRIu64 "%s\n", devstat_names[i], rows[d].count[i],
			       rows[d].missing && i == 0 ? "  (disk missing)" : "");
		}
}

int cmd_stats(struct session *s, bool reset, bool check, bool json)
{
	char *answer = NULL;
	char err[1200];
	int rc = session_ask(s, reset ? "devstats reset" : "devstats", session_first_line, &answer, err,
			     sizeof(err));
	/* Shown even when the reset could not be stored: the counters are
	 * zero in the daemon's memory now, and these are the only record. */
	struct row rows[LSMFS_MAX_DISKS];
	size_t n = 0;
	bool bad = answer && parse(answer, rows, &n) != 0, nonzero = false;
	if (answer && !bad) {
		if (json)
			printf("%s\n", answer);
		else
			print_rows(rows, n);
		for (size_t d = 0; d < n; d++)
			for (int i = 0; i < DEVSTAT_KINDS; i++)
				nonzero |= rows[d].count[i] != 0;
	}
	for (size_t d = 0; d < n; d++)
		free(rows[d].path);
	free(answer);
	if (rc) {
		fprintf(stderr, PROG ": %s: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	if (!answer || bad) {
		fprintf(stderr, PROG ": %s: the error counters are not what this " PROG
			" understands\n", s->where);
		return EXIT_FAILED;
	}
	return check && nonzero ? EXIT_NONZERO : EXIT_DONE;
}
