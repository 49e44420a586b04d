/*
 * pass3.c: pass 3, the namespace: the root and /lost+found, every entry
 * against its inode (dangling, wrong type, wrong hash), one entry per
 * directory and its parent pointer, and reachability from the root (a
 * breadth-first walk; the unreachable go to /lost+found).  What it counts
 * per inode (entries, subdirectories, reached) is pass 4's input.
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

static uint8_t dt_of(uint32_t mode)
{
	return (uint8_t)((mode & S_IFMT) >> 12); /* DT_* values are S_IF* >> 12 */
}

static int cmp_parent(const void *a, const void *b)
{
	const struct fsck_entry *x = a, *y = b;
	return x->parent < y->parent ? -1 : x->parent > y->parent;
}

/* Mark everything reachable from directory start (itself already marked),
 * breadth first through the entries (sorted by parent). */
static void walk_from(struct fsck *f, uint64_t start)
{
	size_t qcap = 1024, qh = 0, qt = 0;
	uint64_t *q = malloc(qcap * sizeof(*q));
	if (!q)
		return;
	q[qt++] = start;
	while (qh < qt && !fsck_cancelled(f)) {
		uint64_t d = q[qh++];
		for (size_t i = fsck_first_child(f, d); i < f->nentries && f->entries[i].parent == d; i++) {
			struct fsck_inode *c = fsck_inode(f, f->entries[i].ino);
			if (!c || !c->rec_ok || c->reached)
				continue;
			c->reached = true;
			if (!S_ISDIR(c->rec.mode))
				continue;
			if (qt == qcap) {
				uint64_t *g = realloc(q, 2 * qcap * sizeof(*q));
				if (!g)
					break;
				q = g;
				qcap *= 2;
			}
			q[qt++] = c->ino;
		}
	}
	free(q);
}

/* Give unattached inode in the name #ino in /lost+found, as e2fsck does.
 * The record changes too for a directory (its parent); link counts are
 * pass 4's. */
static int reconnect(struct fsck *f, struct fsck_inode *in, struct fsck_inode *lf)
{
	char name[32];
	snprintf(name, sizeof(name), "#%" PRIu64, in->ino);
	int rc = fsck_put_entry(f, LSMFS_LOST_FOUND_INO, name, in->ino, dt_of(in->rec.mode));
	if (rc)
		return rc;
	in->entries++;
	in->reached = true;
	if (S_ISDIR(in->rec.mode)) {
		lf->subdirs++;
		in->entry_parent = LSMFS_LOST_FOUND_INO;
		in->rec.parent = LSMFS_LOST_FOUND_INO;
		rc = fsck_put_inode(f, in);
		walk_from(f, in->ino);
	}
	return rc;
}

/* A directory named twice: the entry in the directory its record calls
 * its parent stays, the other goes (e is the one met second; the first was
 * counted already). */
static int drop_second_entry(struct fsck *f, struct fsck_entry *e, struct fsck_inode *p,
			     struct fsck_inode *c)
{
	struct fsck_entry *drop = e;
	struct fsck_inode *from = p;
	if (e->parent == c->rec.parent && c->entry_parent != c->rec.parent) {
		for (size_t i = 0; i < f->nentries; i++) {
			struct fsck_entry *o = &f->entries[i];
			if (o != e && o->ino == c->ino && o->parent == c->entry_parent) {
				drop = o;
				break;
			}
		}
		if (drop == e)
			return -ENOENT;
		from = fsck_inode(f, c->entry_parent);
		c->entry_parent = e->parent;
	}
	int rc = fsck_del_entry(f, drop);
	if (rc)
		return rc;
	drop->ino = 0;
	fsck_entries_changed(f);
	c->entries--;
	if (from && from->subdirs)
		from->subdirs--;
	return 0;
}

/* A new, empty directory's record, as the daemon's mkdir makes it. */
static void new_dir(struct fsck_inode *in, uint32_t perm, uint64_t parent)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	memset(&in->rec, 0, sizeof(in->rec));
	in->rec.mode = S_IFDIR | perm;
	in->rec.nlink = 2;
	in->rec.generation = 1;
	in->rec.parent = parent;
	in->rec.atime_sec = in->rec.mtime_sec = in->rec.ctime_sec = in->rec.btime_sec = now.tv_sec;
	in->rec.atime_nsec = in->rec.mtime_nsec = in->rec.ctime_nsec = in->rec.btime_nsec =
		(uint32_t)now.tv_nsec;
	in->rec_ok = true;
}

static int remake_dir(struct fsck *f, uint64_t ino, uint64_t parent)
{
	struct fsck_inode *in = fsck_inode_add(f, ino);
	if (!in)
		return -ENOMEM;
	new_dir(in, 0700, parent);
	int rc = fsck_put_inode(f, in);
	if (rc)
		in->rec_ok = false;
	return rc;
}

/* The root lost (its record, say with a damaged table) or not a directory:
 * a new empty root record.  Its entries are keys of their own, so its
 * contents come back with it. */
static int make_root(struct fsck *f)
{
	struct fsck_inode *root = fsck_inode_add(f, LSMFS_ROOT_INO);
	if (!root)
		return -ENOMEM;
	new_dir(root, 0755, LSMFS_ROOT_INO);
	return fsck_put_inode(f, root);
}

/* /lost+found missing or unreachable: a new one (inode 2) named from the
 * root, or the old one named again. */
static int make_lost_found(struct fsck *f)
{
	struct fsck_inode *lf = fsck_inode(f, LSMFS_LOST_FOUND_INO);
	if (lf && lf->rec_ok && !S_ISDIR(lf->rec.mode))
		return -EOPNOTSUPP; /* inode 2 is something else: left to the user */
	if (lf && lf->entry_parent && lf->entry_parent != LSMFS_ROOT_INO)
		return -EOPNOTSUPP; /* named elsewhere: reconnected below, if anywhere */
	for (size_t i = 0; i < f->nentries; i++) {
		const struct fsck_entry *e = &f->entries[i];
		if (e->parent == LSMFS_ROOT_INO && e->ino && e->ino != LSMFS_LOST_FOUND_INO &&
		    strcmp(e->name, "lost+found") == 0)
			return -EEXIST; /* the name is taken by another inode */
	}
	int rc = 0;
	if (!lf || !lf->rec_ok) {
		if (!(lf = fsck_inode_add(f, LSMFS_LOST_FOUND_INO)))
			return -ENOMEM;
		new_dir(lf, 0700, LSMFS_ROOT_INO);
		rc = fsck_put_inode(f, lf);
	}
	if (rc == 0 && !lf->entry_parent) {
		rc = fsck_put_entry(f, LSMFS_ROOT_INO, "lost+found", LSMFS_LOST_FOUND_INO, DT_DIR);
		if (rc == 0) {
			lf->entries++;
			lf->entry_parent = LSMFS_ROOT_INO;
			fsck_inode(f, LSMFS_ROOT_INO)->subdirs++;
		}
	}
	if (rc == 0 && lf->rec.parent != LSMFS_ROOT_INO) {
		lf->rec.parent = LSMFS_ROOT_INO;
		rc = fsck_put_inode(f, lf);
	}
	if (rc == 0) {
		lf->reached = true;
		walk_from(f, LSMFS_LOST_FOUND_INO);
	}
	return rc;
}

void fsck_pass3_dirs(struct fsck *f)
{
	struct fsck_inode *root = fsck_inode(f, LSMFS_ROOT_INO);
	if ((!root || !root->rec_ok || !S_ISDIR(root->rec.mode)) &&
	    problem_fix(f, PR_ROOT_MISSING,
			&(struct problem_ctx){.str = !root || !root->rec_ok ? "missing"
									    : "not a directory"}))
		fsck_repaired(f, make_root(f));
	root = fsck_inode(f, LSMFS_ROOT_INO);
	/* Entries grouped by parent (the store's order already is, but keep
	 * it explicit). */
	if (f->nentries)
		qsort(f->entries, f->nentries, sizeof(*f->entries), cmp_parent);
	fsck_entries_changed(f);
	char path[4096];
	for (size_t i = 0; i < f->nentries && !fsck_cancelled(f); i++) {
		struct fsck_entry *e = &f->entries[i];
		struct fsck_inode *p = fsck_inode(f, e->parent);
		struct fsck_inode *c = fsck_inode(f, e->ino);
		size_t nlen = strlen(e->name);
		if (dirent_hash(e->name, nlen) != e->hash &&
		    problem_fix(f, PR_ENTRY_BAD_HASH,
				&(struct problem_ctx){.str = e->name, .num = e->parent})) {
			int rc = fsck_rehash_entry(f, e);
			fsck_repaired(f, rc);
		}
		if (!p || !p->rec_ok || !S_ISDIR(p->rec.mode)) {
			problem_fix(f, PR_ENTRY_IN_NONDIR,
				    &(struct problem_ctx){.str = e->name, .ino = e->ino, .num = e->parent});
			continue;
		}
		if ((!c || !c->rec_ok) && fsck_has_children(f, e->ino)) {
			/* Its record is lost (with a damaged table, say) but
			 * entries still call it their directory: a directory
			 * again keeps the subtree where it was. */
			fsck_entry_path(f, e, path, sizeof(path));
			if (!problem_fix(f, PR_ENTRY_DANGLING,
					 &(struct problem_ctx){
						 .path = path, .ino = e->ino,
						 .str = ", but entries name it as their directory; make it a directory again"}))
				continue;
			int rc = remake_dir(f, e->ino, e->parent);
			fsck_repaired(f, rc);
			if (rc)
				continue;
			p = fsck_inode(f, e->parent); /* the model may have moved */
			c = fsck_inode(f, e->ino);
		}
		if (!c || !c->rec_ok) {
			fsck_entry_path(f, e, path, sizeof(path));
			if (problem_fix(f, PR_ENTRY_DANGLING,
					&(struct problem_ctx){.path = path, .ino = e->ino})) {
				fsck_repaired(f, fsck_del_entry(f, e));
				e->ino = 0; /* gone: the walk skips it */
				fsck_entries_changed(f);
			}
			continue;
		}
		if (e->type != dt_of(c->rec.mode)) {
			fsck_entry_path(f, e, path, sizeof(path));
			if (problem_fix(f, PR_ENTRY_BAD_TYPE,
					&(struct problem_ctx){.path = path, .num = e->type, .ino = e->ino,
							      .mode = c->rec.mode})) {
				/* rewritten in place: under its own hash */
				int rc = e->hash == dirent_hash(e->name, nlen)
						 ? fsck_put_entry(f, e->parent, e->name, e->ino,
								  dt_of(c->rec.mode))
						 : -EUCLEAN;
				fsck_repaired(f, rc);
			}
		}
		c->entries++;
		if (S_ISDIR(c->rec.mode)) {
			p->subdirs++;
			if (c->entry_parent) {
				fsck_entry_path(f, e, path, sizeof(path));
				if (problem_fix(f, PR_DIR_MULTIPLY_LINKED,
						&(struct problem_ctx){.ino = e->ino, .path = path}))
					fsck_repaired(f, drop_second_entry(f, e, p, c));
			} else {
				c->entry_parent = e->parent;
			}
		}
	}
	if (root && root->rec_ok) {
		root->reached = true;
		walk_from(f, LSMFS_ROOT_INO);
	}
	struct fsck_inode *lf = fsck_inode(f, LSMFS_LOST_FOUND_INO);
	bool lf_ok = lf && lf->rec_ok && S_ISDIR(lf->rec.mode) && lf->reached;
	if (!lf_ok && root && root->rec_ok &&
	    problem_fix(f, PR_LOST_FOUND_MISSING,
			&(struct problem_ctx){.str = !lf || !lf->rec_ok ? "missing"
						     : !S_ISDIR(lf->rec.mode) ? "not a directory"
									       : "not reachable from the root"})) {
		int rc = make_lost_found(f);
		fsck_repaired(f, rc);
		lf = fsck_inode(f, LSMFS_LOST_FOUND_INO);
		lf_ok = rc == 0;
	}
	for (size_t i = 0; i < f->icap; i++) {
		struct fsck_inode *in = &f->inodes[i];
		if (!in->ino || !in->rec_ok || !S_ISDIR(in->rec.mode) || in->ino == LSMFS_ROOT_INO ||
		    !in->entry_parent || in->rec.parent == in->entry_parent)
			continue;
		if (problem_fix(f, PR_DIR_BAD_PARENT,
				&(struct problem_ctx){.ino = in->ino, .num = in->rec.parent,
						      .num2 = in->entry_parent})) {
			in->rec.parent = in->entry_parent;
			fsck_repaired(f, fsck_put_inode(f, in));
		}
	}
	/* Unattached: directories no entry names first, so that reconnecting
	 * one brings its whole subtree back with it; then the rest. */
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < f->icap; i++) {
			struct fsck_inode *in = &f->inodes[i];
			if (!in->ino || !in->rec_ok || in->reached || in->rec.nlink == 0 || in->orphan)
				continue;
			bool top = in->entries == 0;
			bool topdir = S_ISDIR(in->rec.mode) && top;
			if (round == 0 ? !topdir : topdir)
				continue; /* round 0: top directories; round 1: the rest */
			if (!problem_fix(f, PR_INODE_UNATTACHED,
					 &(struct problem_ctx){.ino = in->ino, .mode = in->rec.mode,
							       .num = in->rec.size}))
				continue;
			/* Only an inode no entry names can go to lost+found
			 * without making a second name for it. */
			fsck_repaired(f, lf_ok && top ? reconnect(f, in, lf) : -EOPNOTSUPP);
		}
	}
}
