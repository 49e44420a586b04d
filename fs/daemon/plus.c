/*
 * plus.c: whether a listing (READDIRPLUS) carries the attributes of its
 * entries, learnt per reader from what it does next.
 *
 * The kernel's own choice (its auto mode) asks for attributes with the
 * first batch of a listing and with any batch after the program looked a
 * name of that directory up.  Programs that read a whole directory before
 * they look at any name never get them: du (fts) and ls -R sorted by
 * anything but name sent one LOOKUP per name after the listing, about
 * 28 us each on our 2-CPU virtual machine (cold `du -s` of 100,000 files
 * in 100 directories: 2.7-3.0 s; with attributes in every listing 0.7 s).
 * Sending them always costs programs that never look (find, ls): an inode
 * loaded and a kernel inode made per name (the same find: 0.08 against
 * 0.47-0.51 s).  So the daemon takes every listing as READDIRPLUS (ops.c
 * turns the auto mode off) and chooses here, per reader (the thread that
 * lists, the request's pid):
 *   - a reader not known to look: the first reply of a listing holds at
 *     most PLUS_FIRST_BYTES, with attributes (a small directory costs no
 *     more), the second PLUS_LOOKS entries that are not directories,
 *     without (the kernel sends no request for what it got with
 *     attributes, so these are what tells), the rest none;
 *   - a reader that looked up PLUS_LOOKS names that are not directories
 *     of the directory it last listed that way is known to look: all its
 *     replies carry attributes, from the next one on (`ls -l` of a large
 *     directory: 8 lookups).  Looking up directories is what a walk does
 *     to descend: find does it, and never looks at the files;
 *   - every PLUS_PROBE-th listing of a reader known to look is listed the
 *     other way again, and its lookups decide anew, so that a reader whose
 *     pattern changed (a reused pid, a shell) stops paying for attributes
 *     nobody reads; a reader not seen for PLUS_FORGET_NS is unknown again.
 * The attributes of an inode the kernel already holds are never sent
 * (fs_kernel_has_attrs), whatever this says.
 *
 * PLUS_READERS slots, the reader's pid modulo that: two readers that
 * collide share a slot and take it from each other (a guess, never a
 * wrong answer: either way the kernel gets what it asks for).  One lock;
 * held for a few loads and stores.  One table per process: a daemon serves
 * one mount.
 */
#include "ops.h"

#include <pthread.h>

#define PLUS_READERS 64
#define PLUS_PROBE 64
#define PLUS_FORGET_NS 10000000000ull /* 10 s */

struct reader {
	pid_t pid;          /* 0: free */
	bool looks;         /* known to look up what it lists */
	uint32_t looked;    /* names looked up in dir since its listing */
	uint32_t replies;   /* replies of the listing of dir so far */
	uint32_t listings;  /* listings since it was found to look */
	uint64_t dir;       /* the directory it last listed without attributes */
	uint64_t seen_ns;   /* its last listing or lookup */
};

static struct reader readers[PLUS_READERS];
static pthread_mutex_t plus_lock = PTHREAD_MUTEX_INITIALIZER;

/* pid's slot, taken over (as unknown) when another reader held it or pid
 * was away too long.  plus_lock held. */
static struct reader *slot_of(pid_t pid, uint64_t now)
{
	struct reader *r = &readers[(unsigned)pid % PLUS_READERS];
	if (r->pid != pid || now - r->seen_ns > PLUS_FORGET_NS)
		*r = (struct reader){.pid = pid};
	r->seen_ns = now;
	return r;
}

enum plus_mode plus_listing(pid_t pid, uint64_t dir, uint64_t off)
{
	uint64_t now = fs_mono_ns();
	pthread_mutex_lock(&plus_lock);
	struct reader *r = slot_of(pid, now);
	if (r->looks && off == 0 && ++r->listings % PLUS_PROBE == 0)
		r->looks = false; /* a probe: this listing decides again */
	enum plus_mode m = PLUS_ALL;
	if (!r->looks) {
		if (off == 0 || r->dir != dir) {
			r->dir = dir;
			r->looked = 0;
			r->replies = 0;
		}
		r->replies++;
		m = r->replies == 1 && off == 0 ? PLUS_FIRST : r->replies <= 2 ? PLUS_ASK : PLUS_PLAIN;
	}
	pthread_mutex_unlock(&plus_lock);
	return m;
}

void plus_looked(pid_t pid, uint64_t parent, bool is_dir)
{
	if (is_dir)
		return;
	uint64_t now = fs_mono_ns();
	pthread_mutex_lock(&plus_lock);
	struct reader *r = &readers[(unsigned)pid % PLUS_READERS];
	if (r->pid == pid && !r->looks && r->dir == parent && ++r->looked >= PLUS_LOOKS) {
		r->looks = true;
		r->listings = 0;
	}
	if (r->pid == pid)
		r->seen_ns = now;
	pthread_mutex_unlock(&plus_lock);
}
