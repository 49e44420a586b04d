/*
 * storecopy.c: the copies of the metadata store a command adds, removes
 * or moves off a disk (fs/SCHEMA.md "Store copies"; control requests
 * copy-add and copy-remove), as copy, remove, remove --lost and replace
 * ask them.
 */
#include "disk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int storecopy_add(struct session *s, uint32_t d, int *why)
{
	char req[32], err[1200];
	snprintf(req, sizeof(req), "copy-add %u", d);
	*why = session_ask(s, req, NULL, NULL, err, sizeof(err));
	if (*why) {
		fprintf(stderr, PROG ": a copy of the metadata store on disk %u: %s\n", d, err);
		return EXIT_FAILED;
	}
	printf("a new copy of the metadata store on disk %u, up to date\n", d);
	return EXIT_DONE;
}

int storecopy_remove(struct session *s, uint32_t c)
{
	char req[32], err[1200];
	snprintf(req, sizeof(req), "copy-remove %u", c);
	if (session_ask(s, req, NULL, NULL, err, sizeof(err))) {
		fprintf(stderr, PROG ": removing copy %u of the metadata store: %s\n", c, err);
		return EXIT_FAILED;
	}
	printf("removed copy %u of the metadata store\n", c);
	return EXIT_DONE;
}

int storecopy_move_off(struct session *s, const struct status *st, uint32_t idx, uint32_t prefer)
{
	uint32_t c = UINT32_MAX;
	for (uint32_t i = 0; i < st->ncopies; i++)
		if (st->copy[i].disk == (int64_t)idx)
			c = i;
	if (c == UINT32_MAX)
		return EXIT_DONE;
	/* A move to prefer cut short after its copy was added there (a
	 * replace run again): only the removal is left. */
	if (prefer < LSMFS_MAX_DISKS && (st->store_disks & (1ull << prefer)))
		return storecopy_remove(s, c);
	/* prefer, then the disks without a copy, the most room first; the
	 * daemon refuses one without room for the store. */
	uint64_t tried = 1ull << idx;
	for (;;) {
		uint32_t to = UINT32_MAX;
		uint64_t best = 0;
		int pa = prefer < LSMFS_MAX_DISKS ? status_disk(st, prefer) : -1;
		bool preferred = pa >= 0 && st->disk[pa].usable && !(tried & (1ull << prefer)) &&
				 !(st->store_disks & (1ull << prefer));
		if (preferred)
			to = prefer;
		for (uint32_t i = 0; i < st->ndisks && !preferred; i++) {
			uint32_t di = st->disk[i].index;
			if (!(tried & (1ull << di)) && st->disk[i].usable &&
			    !(st->store_disks & (1ull << di)) &&
			    (to == UINT32_MAX || st->disk[i].available > best)) {
				to = di;
				best = st->disk[i].available;
			}
		}
		if (to == UINT32_MAX) {
			printf("no other disk without a copy of the metadata store has room for one: "
			       "it keeps %u cop%s\n", st->ncopies - 1, st->ncopies - 1 == 1 ? "y" : "ies");
			break;
		}
		tried |= 1ull << to;
		int why;
		int rc = storecopy_add(s, to, &why);
		if (rc == EXIT_DONE)
			break;
		if (why != -ENOSPC)
			return rc;
	}
	return storecopy_remove(s, c);
}

int storecopy_off_disk(struct session *s, struct status *st, uint32_t idx, uint32_t prefer)
{
	char err[1200];
	/* The highest number first: a removal renumbers those after it. */
	for (int c = (int)st->ncopies - 1; c >= 0; c--) {
		if (st->copy[c].disk != (int64_t)idx)
			continue;
		int rc = storecopy_move_off(s, st, idx, prefer);
		if (rc != EXIT_DONE)
			return rc;
		status_free(st);
		if (status_read(s, st, err, sizeof(err))) {
			fprintf(stderr, PROG ": %s: %s\n", s->where, err);
			return EXIT_FAILED;
		}
		c = (int)st->ncopies;
	}
	return EXIT_DONE;
}
