/*
 * kref: the kernel's lookup counts of inodes that are not in the inode
 * table (inode.c).  The table keeps at most fs_options.inode_cache inodes
 * that no request, open file or unwritten change holds; past that, such an
 * inode is let go when its last request ends, and only its count stays,
 * here, with how long the kernel keeps the name and attributes it was last
 * given (fs_inode.cached_until_ns, for fs_kernel_has_attrs: a listing
 * sends such an inode without its attributes, and does not load it): 24
 * bytes against about 190 for the inode, so the daemon's memory no longer
 * grows with every inode the kernel keeps in its caches (a `du` over 10
 * million files held 1.9 GB of inodes).  The next request for it loads its
 * record again and takes both back; a forget lowers the count here.
 *
 * Open addressing with linear probing and backward-shift deletion; inode 0
 * marks an empty slot (no inode has number 0).  The caller holds
 * fs->itab_lock.
 */
#include <errno.h>
#include <stdlib.h>

#include "core.h"

static size_t home(const struct kref_table *t, uint64_t ino)
{
	return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 17) & (t->cap - 1);
}

static struct kref_slot *find(const struct kref_table *t, uint64_t ino)
{
	if (!t->cap)
		return NULL;
	for (size_t i = home(t, ino);; i = (i + 1) & (t->cap - 1)) {
		if (t->v[i].ino == ino)
			return &t->v[i];
		if (t->v[i].ino == 0)
			return NULL;
	}
}

static int grow(struct kref_table *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	struct kref_slot *nv = calloc(ncap, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	struct kref_table n = { .v = nv, .cap = ncap, .count = t->count };
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->v[i].ino)
			continue;
		size_t j = home(&n, t->v[i].ino);
		while (nv[j].ino)
			j = (j + 1) & (ncap - 1);
		nv[j] = t->v[i];
	}
	free(t->v);
	*t = n;
	return 0;
}

int kref_add(struct kref_table *t, uint64_t ino, uint64_t n, uint64_t until)
{
	struct kref_slot *s = find(t, ino);
	if (s) {
		s->n += n;
		s->until = until > s->until ? until : s->until;
		return 0;
	}
	/* At most 3/4 full: probes stay short. */
	if ((t->count + 1) * 4 > t->cap * 3 && grow(t))
		return -ENOMEM;
	size_t i = home(t, ino);
	while (t->v[i].ino)
		i = (i + 1) & (t->cap - 1);
	t->v[i].ino = ino;
	t->v[i].n = n;
	t->v[i].until = until;
	t->count++;
	return 0;
}

/* Empty slot s, moving back each later entry of the run that may not stay
 * past the hole (its home is not between the hole and it). */
static void remove_slot(struct kref_table *t, struct kref_slot *s)
{
	size_t mask = t->cap - 1, hole = (size_t)(s - t->v);
	for (size_t i = (hole + 1) & mask; t->v[i].ino; i = (i + 1) & mask) {
		size_t h = home(t, t->v[i].ino);
		/* i stays if its home lies cyclically in (hole, i]. */
		if (((i - h) & mask) < ((i - hole) & mask))
			continue;
		t->v[hole] = t->v[i];
		hole = i;
	}
	t->v[hole].ino = 0;
	t->v[hole].n = 0;
	t->v[hole].until = 0;
	t->count--;
}

uint64_t kref_take(struct kref_table *t, uint64_t ino, uint64_t *until)
{
	struct kref_slot *s = find(t, ino);
	*until = s ? s->until : 0;
	if (!s)
		return 0;
	uint64_t n = s->n;
	remove_slot(t, s);
	return n;
}

uint64_t kref_until(const struct kref_table *t, uint64_t ino)
{
	const struct kref_slot *s = find(t, ino);
	return s && s->n ? s->until : 0;
}

bool kref_forget(struct kref_table *t, uint64_t ino, uint64_t n)
{
	struct kref_slot *s = find(t, ino);
	if (!s)
		return false;
	if (s->n > n)
		s->n -= n;
	else
		remove_slot(t, s);
	return true;
}

size_t kref_count(const struct kref_table *t)
{
	return t->count;
}

void kref_free(struct kref_table *t)
{
	free(t->v);
	t->v = NULL;
	t->cap = t->count = 0;
}
