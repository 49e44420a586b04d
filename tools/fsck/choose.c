/*
 * choose.c: --use-copy N, the explicit choice of one copy of the metadata
 * store over the others (fs/SCHEMA.md "Store copies"), for copies that
 * diverged (each written by a mount without the other), which no mount
 * and no other repair takes a side on.  What every other copy there holds
 * is said first (the last write it holds and its inodes, against copy
 * N's); under -y copy N is then marked the one current copy
 * (copies_choose, on every disk present) and pass 1 rewrites the others
 * from it (LSMFS-0107).  Single-threaded, before pass 1.
 */
#include "fsck.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Copy dir on its own, read-only: the last write it holds and how many
 * inode records it has. */
static int copy_summary(const char *dir, uint64_t *seq, uint64_t *inodes)
{
	struct store *st;
	int rc = fsck_copy_open(dir, &st, seq);
	if (rc)
		return rc;
	*inodes = 0;
	uint8_t lo[KEY_MAX], hi[KEY_MAX];
	size_t lol = key_inode(lo, 0), hil = key_inode(hi, UINT64_MAX);
	struct store_iter_options io = {.lower = lo, .lower_len = lol, .upper = hi, .upper_len = hil};
	struct store_iter *it;
	rc = store_iter_new(st, &io, &it);
	if (!rc) {
		for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
			(*inodes)++;
		rc = store_iter_status(it);
		store_iter_free(it);
	}
	(void)store_close(st); /* read-only: nothing of it to lose */
	return rc;
}

int fsck_choose_copy(struct fsck *f, uint32_t n)
{
	struct lsmfs_diskset *ds = f->ds;
	if (n >= ds->sb.meta_count || (ds->meta_absent & (1u << n))) {
		fprintf(stderr, "fsck.lsmfs: --use-copy %u: no such copy of the metadata store here "
			"(%u copies)\n", n, ds->sb.meta_count);
		return -ENOENT;
	}
	uint64_t seq, inodes;
	int rc = copy_summary(ds->meta_paths[n], &seq, &inodes);
	if (rc) {
		fprintf(stderr, "fsck.lsmfs: --use-copy %u: %s: %s\n", n, ds->meta_paths[n],
			strerror(-rc));
		return rc;
	}
	printf("fsck.lsmfs: keeping copy %u of the metadata store (%s): writes up to %" PRIu64
	       ", %" PRIu64 " inodes\n", n, ds->meta_paths[n], seq, inodes);
	for (uint32_t c = 0; c < ds->sb.meta_count; c++) {
		if (c == n || (ds->meta_absent & (1u << c)))
			continue;
		uint64_t s, i;
		if (copy_summary(ds->meta_paths[c], &s, &i) == 0)
			printf("fsck.lsmfs: copy %u (%s)%s: writes up to %" PRIu64 ", %" PRIu64 " inodes: "
			       "what it holds that copy %u lacks is lost (its chunk files, with no "
			       "owner left, go to /lost+found in pass 5)\n", c, ds->meta_paths[c],
			       (ds->diverged_with[n] & (1u << c)) ? ", diverged from it" : "", s, i, n);
		else
			printf("fsck.lsmfs: copy %u (%s): unreadable: it is rewritten from copy %u\n", c,
			       ds->meta_paths[c], n);
	}
	if (f->mode != FSCK_MODE_YES) {
		printf("fsck.lsmfs: --use-copy %u: nothing changed (with -y it is done)\n", n);
		return 1;
	}
	char err[PATH_MAX + 200] = "";
	rc = copies_choose(ds, n, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "fsck.lsmfs: --use-copy %u: %s\n", n, err);
		return rc;
	}
	printf("fsck.lsmfs: copy %u is now the one current copy; the others are rewritten from it\n",
	       n);
	f->fixed++;
	return 0;
}
