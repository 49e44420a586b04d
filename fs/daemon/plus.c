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
 * turns the auto mode off) and chooses here, per reader (the process
 * that lists; see below):
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
 *   - a reader whose last PLUS_BLIND listings that went as far as the
 *     second reply, with PLUS_LOOKS files in it, were not looked at is
 *     known not to look (find, ls; a listing of subdirectories tells
 *     nothing, since only the lookup of a file counts):
 *     its listings carry no attributes, not even in the first reply, which
 *     would load the inodes of its entries for nothing (a cold `find` of a
 *     million files in 1,000 directories read 57 MiB of the store from the
 *     disk, 34 MiB without them: 1.22-1.36 s against 0.93-0.95 s);
 *     lookups of PLUS_LOOKS names of the directory it listed last still
 *     make it one that looks, as they make an unknown reader;
 *   - every PLUS_PROBE-th listing of a reader known to look is listed the
 *     other way again, and its lookups decide anew, so that a reader whose
 *     pattern changed (a reused pid, a shell) stops paying for attributes
 *     nobody reads (one known not to look needs no probe: the kernel sends
 *     its lookups); a reader not seen for PLUS_FORGET_NS is unknown again.
 * The attributes of an inode the kernel already holds are never sent
 * (fs_kernel_has_attrs), whatever this says.
 *
 * A reader is a process: FUSE names the thread that asks, and a program
 * whose threads list and look up apart (Go's runtime runs a goroutine on
 * any of its threads: gdu) is still one reader.  tgid_known and
 * tgid_learn map a thread to its process through /proc/TID/status, read
 * once per thread (PLUS_THREADS remembered); without /proc, each thread is
 * its own reader.
 *
 * PLUS_READERS slots, the reader's pid modulo that: two readers that
 * collide share a slot and take it from each other (a guess, never a
 * wrong answer: either way the kernel gets what it asks for).  One lock;
 * held for a few loads and stores.  One table per process: a daemon serves
 * one mount.
 */
#include "ops.h"

#include <pthread.h>
#include <stdio.h>

#define PLUS_READERS 64
#define PLUS_PROBE 64
#define PLUS_BLIND 2
#define PLUS_FORGET_NS 10000000000ull /* 10 s */
#define PLUS_THREADS 256

struct reader {
	pid_t pid;          /* 0: free */
	bool looks;         /* known to look up what it lists */
	bool asked;         /* the listing of dir had its ASK reply, with
			     * PLUS_LOOKS files in it (plus_asked) */
	uint32_t blind;     /* listings in a row asked and not looked at */
	uint32_t looked;    /* names looked up in dir since its listing */
	uint32_t replies;   /* replies of the listing of dir so far */
	uint32_t listings;  /* listings since it was found to look */
	uint64_t dir;       /* the directory it last listed without attributes */
	uint64_t seen_ns;   /* its last listing or lookup */
};

static struct reader readers[PLUS_READERS];
static pthread_mutex_t plus_lock = PTHREAD_MUTEX_INITIALIZER;

struct thread {
	pid_t tid, tgid;  /* tid 0: free */
	uint64_t seen_ns;
};
static struct thread threads[PLUS_THREADS];

/* The Tgid line of /proc/TID/status; tid itself when it cannot be read. */
static pid_t tgid_read(pid_t tid)
{
	char path[40], line[128];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return tid;
	pid_t tgid = tid;
	int v;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &v) == 1) {
			if (v > 0)
				tgid = v;
			break;
		}
	fclose(f);
	return tgid;
}

/* The process of thread tid into *tgid when remembered: until its slot is
 * taken or it is away PLUS_FORGET_NS (a tid reused in that time by another
 * process gives a wrong guess, never a wrong answer).  plus_lock held. */
static bool tgid_known(pid_t tid, uint64_t now, pid_t *tgid)
{
	struct thread *t = &threads[(unsigned)tid % PLUS_THREADS];
	if (t->tid != tid || now - t->seen_ns > PLUS_FORGET_NS)
		return false;
	t->seen_ns = now;
	*tgid = t->tgid;
	return true;
}

/* The same, read from /proc and remembered.  plus_lock held, and let go
 * during the read (a system call or three). */
static pid_t tgid_learn(pid_t tid, uint64_t now)
{
	pthread_mutex_unlock(&plus_lock);
	pid_t tgid = tgid_read(tid);
	pthread_mutex_lock(&plus_lock);
	threads[(unsigned)tid % PLUS_THREADS] = (struct thread){.tid = tid, .tgid = tgid, .seen_ns = now};
	return tgid;
}

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

/* pid's slot when pid holds it, else NULL (nothing taken over).
 * plus_lock held. */
static struct reader *reader_of(pid_t pid)
{
	struct reader *r = &readers[(unsigned)pid % PLUS_READERS];
	return r->pid == pid ? r : NULL;
}

enum plus_mode plus_listing(pid_t tid, uint64_t dir, uint64_t off)
{
	uint64_t now = fs_mono_ns();
	pid_t pid;
	pthread_mutex_lock(&plus_lock);
	if (!tgid_known(tid, now, &pid))
		pid = tgid_learn(tid, now);
	struct reader *r = slot_of(pid, now);
	if (r->looks && off == 0 && ++r->listings % PLUS_PROBE == 0)
		r->looks = false; /* a probe: this listing decides again */
	enum plus_mode m = PLUS_ALL;
	if (!r->looks) {
		if (off == 0 || r->dir != dir) {
			/* The listing before this one was asked about and not
			 * looked at: one more blind listing. */
			if (r->asked && r->looked < PLUS_LOOKS && r->blind < PLUS_BLIND)
				r->blind++;
			r->dir = dir;
			r->looked = 0;
			r->replies = 0;
			r->asked = false;
		}
		r->replies++;
		/* blind changes only here and when the reader is found to
		 * look: it holds for the whole listing. */
		m = r->blind >= PLUS_BLIND		? PLUS_PLAIN
		    : r->replies == 1 && off == 0 ? PLUS_FIRST
		    : r->replies <= 2		? PLUS_ASK
						: PLUS_PLAIN;
	}
	pthread_mutex_unlock(&plus_lock);
	return m;
}

void plus_asked(pid_t tid, uint64_t dir)
{
	uint64_t now = fs_mono_ns();
	pid_t pid;
	pthread_mutex_lock(&plus_lock);
	if (tgid_known(tid, now, &pid)) { /* plus_listing has just learnt it */
		struct reader *r = reader_of(pid);
		if (r && r->dir == dir)
			r->asked = true;
	}
	pthread_mutex_unlock(&plus_lock);
}

void plus_looked(pid_t tid, uint64_t parent, bool is_dir)
{
	if (is_dir)
		return;
	uint64_t now = fs_mono_ns();
	pid_t pid;
	pthread_mutex_lock(&plus_lock);
	if (!tgid_known(tid, now, &pid)) {
		/* A thread not seen listing: /proc is read only when some
		 * reader waits to learn from lookups in parent. */
		bool learning = false;
		for (size_t i = 0; i < PLUS_READERS && !learning; i++)
			learning = readers[i].pid && !readers[i].looks && readers[i].dir == parent;
		if (!learning) {
			pthread_mutex_unlock(&plus_lock);
			return;
		}
		pid = tgid_learn(tid, now);
	}
	struct reader *r = reader_of(pid);
	if (r && !r->looks && r->dir == parent && ++r->looked >= PLUS_LOOKS) {
		r->looks = true;
		r->blind = 0;
		r->listings = 0;
	}
	if (r)
		r->seen_ns = now;
	pthread_mutex_unlock(&plus_lock);
}
