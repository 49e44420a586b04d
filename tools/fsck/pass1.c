/*
 * pass1.c: pass 1, the metadata store: store_verify checks the checksums of
 * every table, the MANIFEST and every commit log.  Its repair is salvage
 * (store_salvage): every entry that reads is kept, each range lost is named
 * in the filesystem's terms, and passes 2-5 mend what the loss left.
 */
#include "fsck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct lines {
	char *buf;
	size_t len;
};

/* store_verify tells findings and counts alike; they are shown together,
 * under one problem when it says the store is damaged. */
static void store_line(void *ctx, const char *line)
{
	struct lines *l = ctx;
	size_t n = strlen(line);
	char *g = realloc(l->buf, l->len + n + 8);
	if (!g)
		return;
	l->buf = g;
	l->len += (size_t)sprintf(l->buf + l->len, "    %s\n", line);
}

static void salvage_loss(void *ctx, const struct store_salvage_loss *l)
{
	(void)ctx;
	char from[400], to[400];
	fsck_key_describe(l->from, l->from_len, from, sizeof(from));
	fsck_key_describe(l->to, l->to_len, to, sizeof(to));
	printf("    lost: keys from %s to %s (%s)\n", from, to, l->why);
}

static void salvage_line(void *ctx, const char *line)
{
	(void)ctx;
	printf("    %s\n", line);
}

static void quiet_line(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

int fsck_pass1_store(struct fsck *f)
{
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	struct lines l = {0};
	int rc = store_verify(f->ds->meta_dir, &so, store_line, &l);
	if (rc == -EUCLEAN) {
		if (problem_fix(f, PR_STORE_DAMAGED, &(struct problem_ctx){.str = l.buf})) {
			/* Every entry that reads is kept; each range lost is
			 * named, and the passes below mend what its loss
			 * left behind (dangling entries, unattached inodes,
			 * ownerless chunks). */
			int s = store_salvage(f->ds->meta_dir, &so, salvage_loss, salvage_line, f);
			fsck_repaired(f, s);
			if (s == 0) {
				rc = store_verify(f->ds->meta_dir, &so, quiet_line, NULL);
				if (rc == -EUCLEAN)
					problem_fix(f, PR_STORE_STILL_DAMAGED, NULL);
			}
		}
	} else if (rc) {
		problem_fix(f, PR_STORE_UNREADABLE,
			    &(struct problem_ctx){.str = "verifying the metadata store", .err = rc});
	} else if (f->verbose && l.buf) {
		fputs(l.buf, stdout);
	}
	free(l.buf);
	return rc;
}
