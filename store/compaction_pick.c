/*
 * compaction_pick: which tables to compact next, and the per-compaction
 * helpers the merge loop asks (LevelDB's PickCompaction, CompactRange,
 * SetupOtherInputs and Compaction).  FORMAT.md "Compaction".
 *
 * A size compaction takes the level with the highest score (computed when
 * a version is installed; >= 1 means over target) and, round-robin over the
 * key space, the first table after the level's compaction pointer; level 0
 * widens that to every level-0 table it overlaps.  Then the overlapping
 * tables of level + 1 join, inputs[0] grows if that does not pull in more of
 * level + 1 and stays under 25 target files, and the tables of level + 2
 * under the range become the grandparents that bound each output's future
 * overlap.  "Boundary" tables are always added: when a user key is split
 * across two tables of a level, moving only the first down would let the
 * older entries left above shadow newer ones below.
 *
 * Every chosen table is marked being_compacted until compaction_free().
 * Locking: all of it runs under the store mutex, except the
 * compaction_should_stop_before / compaction_is_base_level_for_key calls,
 * which only read the compaction and its referenced input version.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbformat.h"
#include "version.h"
#include "version_int.h"

static uint64_t total_size(struct file_meta *const *files, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += files[i]->size;
	return s;
}

static uint64_t max_grandparent_overlap(const struct version_set *vs)
{
	return 10 * vs->opt->target_file_size;
}

static uint64_t expanded_compaction_limit(const struct version_set *vs)
{
	return 25 * vs->opt->target_file_size;
}

/* Smallest and largest internal keys of two file lists (b may be empty). */
static void get_range(struct file_meta *const *a, size_t na,
		      struct file_meta *const *b, size_t nb,
		      const struct buf **smallest, const struct buf **largest)
{
	*smallest = *largest = NULL;
	for (size_t i = 0; i < na + nb; i++) {
		const struct file_meta *f = i < na ? a[i] : b[i - na];
		if (!*smallest || ikey_compare(f->smallest.data, f->smallest.len,
					       (*smallest)->data,
					       (*smallest)->len) < 0)
			*smallest = &f->smallest;
		if (!*largest || ikey_compare(f->largest.data, f->largest.len,
					      (*largest)->data,
					      (*largest)->len) > 0)
			*largest = &f->largest;
	}
}

static int overlapping(struct version *v, int level, const struct buf *small,
		       const struct buf *large, struct file_meta ***out,
		       size_t *n)
{
	return version_overlapping_files(v, level, small->data,
					 small->len - IKEY_TAG_LEN, large->data,
					 large->len - IKEY_TAG_LEN, out, n);
}

/*
 * Add to *files the tables of the level that hold older entries of the user
 * key the chosen set ends with (LevelDB's AddBoundaryInputs): a table whose
 * smallest key has the same user key as the set's largest key, but a
 * smaller sequence.  Repeat until none is left.
 */
static int add_boundary_inputs(struct file_meta *const *level_files,
			       size_t nlevel, struct file_meta ***files,
			       size_t *n)
{
	const struct buf *smallest, *largest;
	get_range(*files, *n, NULL, 0, &smallest, &largest);
	if (!largest)
		return 0;
	for (;;) {
		struct file_meta *best = NULL;
		for (size_t i = 0; i < nlevel; i++) {
			struct file_meta *f = level_files[i];
			if (ikey_compare(f->smallest.data, f->smallest.len,
					 largest->data, largest->len) > 0 &&
			    ukey_compare(f->smallest.data,
					 f->smallest.len - IKEY_TAG_LEN,
					 largest->data,
					 largest->len - IKEY_TAG_LEN) == 0 &&
			    (!best || ikey_compare(f->smallest.data,
						   f->smallest.len,
						   best->smallest.data,
						   best->smallest.len) < 0))
				best = f;
		}
		if (!best)
			return 0;
		struct file_meta **p = realloc(*files, (*n + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		p[(*n)++] = best;
		*files = p;
		largest = &best->largest;
	}
}

static struct compaction *compaction_new(struct version_set *vs, int level)
{
	struct compaction *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->level = level;
	c->input_version = vs->current;
	version_ref(c->input_version);
	c->max_output_file_size = vs->opt->target_file_size;
	version_edit_init(&c->edit);
	return c;
}

/* Free c; clear being_compacted on its inputs only if it set them. */
static void compaction_destroy(struct compaction *c, bool clear_marks)
{
	for (int w = 0; w < 2; w++) {
		for (size_t i = 0; clear_marks && i < c->ninputs[w]; i++)
			c->inputs[w][i]->being_compacted = false;
		free(c->inputs[w]);
	}
	free(c->grandparents);
	version_edit_free(&c->edit);
	version_unref(c->input_version);
	free(c);
}

void compaction_free(struct compaction *c)
{
	if (c)
		compaction_destroy(c, true);
}

/* LevelDB's SetupOtherInputs: inputs[1], expansion, grandparents and the
 * compaction pointer. */
static int setup_other_inputs(struct version_set *vs, struct compaction *c)
{
	struct version *v = c->input_version;
	int level = c->level;
	const struct buf *smallest, *largest, *all_start, *all_limit;
	int rc = add_boundary_inputs(v->files[level], v->nfiles[level],
				     &c->inputs[0], &c->ninputs[0]);
	if (rc)
		return rc;
	get_range(c->inputs[0], c->ninputs[0], NULL, 0, &smallest, &largest);
	rc = overlapping(v, level + 1, smallest, largest, &c->inputs[1],
			 &c->ninputs[1]);
	if (rc == 0)
		rc = add_boundary_inputs(v->files[level + 1], v->nfiles[level + 1],
					 &c->inputs[1], &c->ninputs[1]);
	if (rc)
		return rc;
	get_range(c->inputs[0], c->ninputs[0], c->inputs[1], c->ninputs[1],
		  &all_start, &all_limit);

	/* Grow inputs[0] if that does not change inputs[1]. */
	if (c->ninputs[1] > 0) {
		struct file_meta **e0 = NULL, **e1 = NULL;
		size_t n0 = 0, n1 = 0;
		rc = overlapping(v, level, all_start, all_limit, &e0, &n0);
		if (rc == 0)
			rc = add_boundary_inputs(v->files[level], v->nfiles[level],
						 &e0, &n0);
		uint64_t in1 = total_size(c->inputs[1], c->ninputs[1]);
		uint64_t ex0 = total_size(e0, n0);
		if (rc == 0 && n0 > c->ninputs[0] &&
		    in1 + ex0 < expanded_compaction_limit(vs)) {
			const struct buf *ns, *nl;
			get_range(e0, n0, NULL, 0, &ns, &nl);
			rc = overlapping(v, level + 1, ns, nl, &e1, &n1);
			if (rc == 0)
				rc = add_boundary_inputs(v->files[level + 1],
							 v->nfiles[level + 1],
							 &e1, &n1);
			if (rc == 0 && n1 == c->ninputs[1]) {
				free(c->inputs[0]);
				free(c->inputs[1]);
				c->inputs[0] = e0;
				c->ninputs[0] = n0;
				c->inputs[1] = e1;
				c->ninputs[1] = n1;
				e0 = e1 = NULL;
				largest = nl;
				get_range(c->inputs[0], c->ninputs[0], c->inputs[1],
					  c->ninputs[1], &all_start, &all_limit);
			}
		}
		free(e0);
		free(e1);
		if (rc)
			return rc;
	}

	if (level + 2 < NUM_LEVELS) {
		rc = overlapping(v, level + 2, all_start, all_limit,
				 &c->grandparents, &c->ngrandparents);
		if (rc)
			return rc;
	}

	/* Move the pointer now rather than when the edit is applied, so that
	 * a compaction that fails lets the next one try another range. */
	struct buf *cp = &vs->compact_pointer[level];
	buf_clear(cp);
	buf_append(cp, largest->data, largest->len);
	if (buf_ok(cp))
		buf_free(cp); /* a hint only: restart at the level's start */
	version_edit_set_compact_pointer(&c->edit, level, largest->data,
					 largest->len);
	return 0;
}

/* Finish a picked compaction: other inputs, the busy check, the marks. */
static struct compaction *complete(struct version_set *vs, struct compaction *c)
{
	if (setup_other_inputs(vs, c)) {
		compaction_destroy(c, false);
		return NULL;
	}
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < c->ninputs[w]; i++)
			if (c->inputs[w][i]->being_compacted) {
				compaction_destroy(c, false);
				return NULL;
			}
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < c->ninputs[w]; i++)
			c->inputs[w][i]->being_compacted = true;
	return c;
}

struct compaction *version_set_pick_compaction(struct version_set *vs)
{
	struct version *v = vs->current;
	if (v->compaction_score < 1 || v->compaction_level < 0)
		return NULL;
	int level = v->compaction_level;
	size_t n = v->nfiles[level];
	if (n == 0)
		return NULL;
	/* One level-0 compaction at a time: two could each take an older
	 * and a newer entry of one key and install them in the wrong order. */
	for (size_t i = 0; level == 0 && i < n; i++)
		if (v->files[0][i]->being_compacted)
			return NULL;

	/* Round robin: the first table past the level's pointer. */
	const struct buf *cp = &vs->compact_pointer[level];
	size_t start = 0;
	if (cp->len) {
		while (start < n &&
		       ikey_compare(v->files[level][start]->largest.data,
				    v->files[level][start]->largest.len,
				    cp->data, cp->len) <= 0)
			start++;
		/* Past the last table: wrap around (the modulo below). */
	}
	struct file_meta *chosen = NULL;
	for (size_t k = 0; k < n && !chosen; k++) {
		struct file_meta *f = v->files[level][(start + k) % n];
		if (!f->being_compacted)
			chosen = f;
	}
	if (!chosen)
		return NULL;

	struct compaction *c = compaction_new(vs, level);
	if (!c)
		return NULL;
	c->inputs[0] = malloc(sizeof(*c->inputs[0]));
	if (!c->inputs[0]) {
		compaction_destroy(c, false);
		return NULL;
	}
	c->inputs[0][0] = chosen;
	c->ninputs[0] = 1;
	if (level == 0) {
		/* Level-0 tables overlap: take every one that overlaps the
		 * chosen one, or the older entries they hold would end up
		 * above newer ones moved down. */
		struct file_meta **all;
		size_t nall;
		if (overlapping(v, 0, &chosen->smallest, &chosen->largest, &all,
				&nall) || nall == 0) {
			compaction_destroy(c, false);
			return NULL;
		}
		free(c->inputs[0]);
		c->inputs[0] = all;
		c->ninputs[0] = nall;
	}
	return complete(vs, c);
}

struct compaction *version_set_compact_range(struct version_set *vs, int level,
					     const uint8_t *begin, size_t blen,
					     const uint8_t *end, size_t elen)
{
	if (level < 0 || level >= NUM_LEVELS - 1)
		return NULL;
	struct version *v = vs->current;
	struct file_meta **files;
	size_t n;
	if (version_overlapping_files(v, level, begin, blen, end, elen, &files,
				      &n) ||
	    n == 0)
		return NULL;
	/* Do a large range a piece at a time (the caller calls again until
	 * nothing is left).  Level-0 tables overlap, so all of them go. */
	if (level > 0) {
		uint64_t total = 0, limit = vs->opt->target_file_size;
		for (size_t i = 0; i < n; i++) {
			total += files[i]->size;
			if (total >= limit) {
				n = i + 1;
				break;
			}
		}
	}
	struct compaction *c = compaction_new(vs, level);
	if (!c) {
		free(files);
		return NULL;
	}
	c->inputs[0] = files;
	c->ninputs[0] = n;
	return complete(vs, c);
}

bool compaction_is_trivial_move(const struct compaction *c)
{
	return c->ninputs[0] == 1 && c->ninputs[1] == 0 &&
	       total_size(c->grandparents, c->ngrandparents) <=
		       max_grandparent_overlap(c->input_version->vset);
}

void compaction_add_input_deletions(struct compaction *c)
{
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < c->ninputs[w]; i++)
			version_edit_delete_file(&c->edit, c->level + w,
						 c->inputs[w][i]->number);
}

bool compaction_is_base_level_for_key(struct compaction *c, const uint8_t *ukey,
				      size_t ulen)
{
	struct version *v = c->input_version;
	for (int l = c->level + 2; l < NUM_LEVELS; l++) {
		struct file_meta *const *files = v->files[l];
		/* Keys come in order, so each level's position only moves on. */
		while (c->level_ptrs[l] < v->nfiles[l]) {
			const struct file_meta *f = files[c->level_ptrs[l]];
			if (ukey_compare(ukey, ulen, f->largest.data,
					 f->largest.len - IKEY_TAG_LEN) <= 0) {
				if (ukey_compare(ukey, ulen, f->smallest.data,
						 f->smallest.len - IKEY_TAG_LEN) >= 0)
					return false;
				break;
			}
			c->level_ptrs[l]++;
		}
	}
	return true;
}

bool compaction_should_stop_before(struct compaction *c, const uint8_t *ikey,
				   size_t len)
{
	while (c->grandparent_index < c->ngrandparents) {
		const struct file_meta *g = c->grandparents[c->grandparent_index];
		if (ikey_compare(ikey, len, g->largest.data, g->largest.len) <= 0)
			break;
		if (c->seen_key)
			c->overlapped_bytes += g->size;
		c->grandparent_index++;
	}
	c->seen_key = true;
	if (c->overlapped_bytes > max_grandparent_overlap(c->input_version->vset)) {
		c->overlapped_bytes = 0;
		return true;
	}
	return false;
}

bool version_set_needs_compaction(struct version_set *vs)
{
	return vs->current->compaction_score >= 1;
}
