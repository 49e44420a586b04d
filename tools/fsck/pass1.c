/*
 * pass1.c: pass 1, the metadata store: store_verify checks the checksums of
 * every table, the MANIFEST and every commit log.  Its repair is salvage
 * (store_salvage): every entry that reads is kept, each range lost is named
 * in the filesystem's terms, and passes 2-5 mend what the loss left.
 */
#include "fsck.h"

#include <dirent.h>
#include <limits.h>
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

/* The first table the copies in a and b both hold with other bytes, into
 * what; false when they agree.  Tables are immutable: equal wherever both
 * have one.  Commit logs and MANIFESTs may differ in a tail a crash left
 * unsynced (store_verify judges each copy's), and a table only one copy
 * has is one a crash cut short (a live one missing is damage, which
 * store_verify reports). */
static bool copies_differ(const char *a, const char *b, char *what, size_t cap)
{
	/* The live tables (a daemon closing may still be writing one that
	 * is not, in one copy before the other). */
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	struct store_table_info *t = NULL;
	size_t n = 0;
	if (store_list_tables(a, &so, &t, &n, NULL))
		return false; /* store_verify says why */
	bool differ = false;
	for (size_t i = 0; i < n && !differ; i++) {
		char pa[PATH_MAX + 300], pb[PATH_MAX + 300];
		snprintf(pa, sizeof(pa), "%s/%06" PRIu64 ".sst", a, t[i].number);
		snprintf(pb, sizeof(pb), "%s/%06" PRIu64 ".sst", b, t[i].number);
		int fa = open(pa, O_RDONLY | O_CLOEXEC), fb = open(pb, O_RDONLY | O_CLOEXEC);
		bool same = true;
		static char ba[1 << 16], bb[1 << 16];
		while (fa >= 0 && fb >= 0) {
			ssize_t na = read(fa, ba, sizeof(ba)), nb = read(fb, bb, sizeof(bb));
			same = na == nb && na >= 0 && !memcmp(ba, bb, (size_t)(na > 0 ? na : 0));
			if (!same || na <= 0)
				break;
		}
		if (fa >= 0)
			close(fa);
		if (fb >= 0)
			close(fb);
		if (!same) {
			snprintf(what, cap, "table %06" PRIu64 ".sst has other bytes", t[i].number);
			differ = true;
		}
	}
	store_tables_free(t, n);
	return differ;
}

int fsck_copy_open(const char *dir, struct store **st, uint64_t *seq)
{
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	int rc = store_open(dir, &so, st);
	if (rc)
		return rc;
	struct store_stats stats;
	store_get_stats(*st, &stats);
	*seq = stats.last_sequence;
	return 0;
}

/* The last write copy dir holds, into *seq, and whether it holds the
 * mounted mark (a crash, or mounted read-write now), into *mounted.  0,
 * or the open's error. */
static int copy_sequence(const char *dir, uint64_t *seq, bool *mounted)
{
	struct store *st;
	int rc = fsck_copy_open(dir, &st, seq);
	if (rc)
		return rc;
	uint8_t k[64];
	size_t kl = key_meta(k, META_MOUNTED);
	void *v = NULL;
	size_t vl;
	int g = store_get(st, NULL, k, kl, &v, &vl);
	free(v);
	*mounted = g == 0;
	(void)store_close(st); /* read-only: nothing of it to lose */
	return g == 0 || g == -ENOENT ? 0 : g;
}

/* A store kept in several copies (fs/SCHEMA.md "Store copies"): each is
 * verified on its own, and the whole ones are compared by the last write
 * each holds: one behind the newest (a commit log cut short, say) would
 * lose acknowledged writes the day it is read alone.  A damaged, stale or disagreeing copy is
 * rewritten from a whole one; only when no copy is whole does the
 * primary go through salvage (and the others are rewritten from it then,
 * at the next run).  0 when a whole copy was found (*done). */
static int check_copies(struct fsck *f, bool *done)
{
	struct lsmfs_diskset *ds = f->ds;
	*done = false;
	if (ds->sb.meta_count < 2)
		return 0;
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	bool whole[LSMFS_MAX_META_COPIES] = {false};
	struct lines lines[LSMFS_MAX_META_COPIES];
	memset(lines, 0, sizeof(lines));
	uint64_t seq[LSMFS_MAX_META_COPIES] = {0};
	bool mounted[LSMFS_MAX_META_COPIES] = {false};
	uint32_t ref = UINT32_MAX;
	for (uint32_t c = 0; c < ds->sb.meta_count; c++) {
		if (ds->meta_absent & (1u << c))
			continue;
		bool stale = ds->sb.meta[c].flags & LSMFS_META_STALE;
		if (stale)
			continue; /* behind by design (a crash cut its filling short): not judged */
		int rc = store_verify(ds->meta_paths[c], &so, store_line, &lines[c]);
		whole[c] = rc == 0 && copy_sequence(ds->meta_paths[c], &seq[c], &mounted[c]) == 0;
		/* The reference: the newest whole copy, the primary among equals. */
		if (whole[c] && (ref == UINT32_MAX || seq[c] > seq[ref] ||
				 (seq[c] == seq[ref] && c == ds->meta_primary)))
			ref = c;
	}
	if (ref != UINT32_MAX) {
		*done = true;
		for (uint32_t c = 0; c < ds->sb.meta_count; c++) {
			if (c == ref)
				continue;
			char what[PATH_MAX + 64] = "";
			struct problem_ctx pc = {.num = c, .num2 = ref, .file = ds->meta_paths[c],
						 .path = ds->meta_paths[ref], .str = lines[c].buf};
			if (ds->meta_absent & (1u << c)) {
				/* Its disk is here but the copy is not: made again.
				 * (A disk that is missing is diskset_open's to say.) */
				/* One marked stale is a copy whose filling a crash cut
				 * short (its directory not made yet): stale, as the
				 * others of its kind. */
				/* A directory of its own (--meta) may be a mount
				 * point not mounted, or hold another's files: never
				 * filled (0108 and 0107 would offer to). */
				enum fsck_code mc = ds->sb.meta[c].disk == LSMFS_META_ON_DIR
							    ? PR_STORE_COPY_PLACE_GONE
						    : (ds->sb.meta[c].flags & LSMFS_META_STALE)
							    ? PR_STORE_COPY_STALE : PR_STORE_COPY_MISSING;
				if (!ds->meta_paths[c][0] || !problem_fix(f, mc, &pc))
					continue;
				char err[PATH_MAX + 200] = "";
				int r = mkdir(ds->meta_paths[c], 0700) == 0 || errno == EEXIST ? 0 : -errno;
				if (r)
					snprintf(err, sizeof(err), "%s: %s", ds->meta_paths[c], strerror(-r));
				else
					r = copies_rewrite_offline(ds, ref, c, err, sizeof(err));
				if (r) {
					pc.str = err;
					problem_repair_failed(f, PR_STORE_COPY_MAKE_FAILED, &pc);
				} else {
					ds->meta_absent &= ~(1u << c);
					fsck_repaired(f, 0);
				}
				continue;
			}
			/* Behind a copy that holds the mounted mark: the daemon
			 * died (or runs) between the copies' appends of writes
			 * never acknowledged, and the next open takes the longer
			 * log (store/db_copies.c), as a journal still to replay.
			 * After a clean unmount every copy has every write. */
			if (whole[c] && seq[c] < seq[ref] && mounted[ref]) {
				printf("fsck.lsmfs: copy %u of the metadata store holds writes up to %" PRIu64
				       ", copy %u up to %" PRIu64 ": a crash's unsynced tail, which the "
				       "next mount brings to every copy\n",
				       c, seq[c], ref, seq[ref]);
				continue;
			}
			enum fsck_code code = (ds->sb.meta[c].flags & LSMFS_META_STALE) ? PR_STORE_COPY_STALE
					      : !whole[c] ? PR_STORE_COPY_DAMAGED
					      : seq[c] < seq[ref] ? PR_STORE_COPY_BEHIND
					      : copies_differ(ds->meta_paths[ref], ds->meta_paths[c], what,
							      sizeof(what)) ? PR_STORE_COPY_DIFFERS
									    : 0;
			if (code == PR_STORE_COPY_DIFFERS || code == PR_STORE_COPY_BEHIND)
				pc.str = what;
			if (code == PR_STORE_COPY_BEHIND)
				snprintf(what, sizeof(what), "it holds writes up to %" PRIu64 ", copy %u "
					 "up to %" PRIu64, seq[c], ref, seq[ref]);
			if (!code || !problem_fix(f, code, &pc))
				continue;
			char err[PATH_MAX + 200] = "";
			int r = copies_rewrite_offline(ds, ref, c, err, sizeof(err));
			if (r) {
				pc.str = err;
				problem_repair_failed(f, PR_STORE_COPY_REWRITE_FAILED, &pc);
			} else {
				fsck_repaired(f, 0);
			}
		}
		if (f->verbose && lines[ref].buf)
			fputs(lines[ref].buf, stdout);
	}
	for (uint32_t c = 0; c < LSMFS_MAX_META_COPIES; c++)
		free(lines[c].buf);
	return 0;
}

int fsck_pass1_store(struct fsck *f)
{
	bool done = false;
	int rc = f->backup_store ? 0 : check_copies(f, &done);
	if (rc || done)
		return rc;
	const char *dir = f->backup_store ? f->backup_store : f->ds->meta_dir;
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	struct lines l = {0};
	rc = store_verify(dir, &so, store_line, &l);
	if (rc == -EUCLEAN) {
		if (problem_fix(f, PR_STORE_DAMAGED, &(struct problem_ctx){.str = l.buf})) {
			/* Every entry that reads is kept; each range lost is
			 * named, and the passes below mend what its loss
			 * left behind (dangling entries, unattached inodes,
			 * ownerless chunks). */
			int s = store_salvage(dir, &so, salvage_loss, salvage_line, f);
			fsck_repaired(f, s);
			if (s == 0) {
				rc = store_verify(dir, &so, quiet_line, NULL);
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
