/*
 * loop.c: the daemon's FUSE request loop.
 *
 * Two things set it apart from libfuse's multi-threaded loop.
 *
 * One thread serves a serial client.  libfuse keeps every idle worker
 * blocked in read(2) of /dev/fuse, and the kernel wakes the one that has
 * waited longest: a client doing one thing at a time has each request
 * served by another thread.  The scheduler sees a task that wakes a
 * different task every time and stops placing the wakee beside it
 * (wake_wide), so every request pays a cross-CPU wakeup.  Served by one
 * thread, mdbench's create phase ran 5-22% faster (3 interleaved runs of
 * 50,000 files, 3 rounds, the same build with one worker and with ten).
 * So one thread, the primary, reads and serves requests; the others, the
 * helpers, are parked on a condition variable and read only when they are
 * needed:
 *   - when nobody has taken a request for LOOP_STALL_NS and nobody is
 *     reading: every reader is held up (a slow disk, a stalled store, a
 *     request that waits for another), and the requests behind them wait;
 *   - when the primary was busy for LOOP_BUSY_PERCENT of the last
 *     LOOP_WINDOW_NS: more requests come than one thread serves (parallel
 *     clients).
 * A watcher thread looks every LOOP_STALL_NS while requests come, and
 * sleeps after LOOP_IDLE_NS without one (the next request wakes it).  A
 * helper it releases reads and serves requests until LOOP_HELP_NS after
 * the last time the watcher found helpers needed, then parks again.  Helpers are started as needed, up
 * to max_workers threads in all; they never end before the loop does.
 * So no request waits behind a slow one for much longer than
 * LOOP_STALL_NS while a helper is free, as in libfuse's loop, where a new
 * thread is started when none is idle.
 *
 * The primary spins before it sleeps.  A request to a thread asleep on an
 * idle CPU pays the wakeup of that CPU, and so does its reply to the
 * client, which went to sleep on its own: on the 2-CPU virtual machine
 * we measure on, a stat that reaches the daemon took 43 us that way and
 * 11 us with client and daemon pinned to one CPU; ceilingfs, whose
 * thread the scheduler happens to put beside the client about half the
 * time, 23 us.  So after a reply the primary polls /dev/fuse for up to
 * spin_ns (-o spin_us) before it blocks in read(2), yielding the CPU to
 * anything else runnable there, but only while requests come close
 * together: when the last one came later than spin_ns after the reply
 * before it, a spin would have been in vain, and the primary blocks at
 * once.  A client that makes one request after another then finds the
 * daemon awake (stat: 48,000 a second against 23,000 with -o spin_us=0,
 * cold du of 100,000 files 2.6-3.1 s against 5.5-5.7); an idle mount
 * costs one spin after its last request.
 *
 * Where a request lands in memory.  libfuse reads each request into a
 * malloc'd buffer, so a WRITE's data, which follows 80 bytes of headers
 * (struct fuse_in_header, struct fuse_write_in), starts 80 bytes past an
 * arbitrary address.  O_DIRECT wants it page-aligned, so data.c copied
 * every chunk write into an aligned bounce buffer first: a memcpy per
 * byte, under the inode's lock, between one disk write and the next.
 * Here each worker's buffer starts LOOP_WRITE_HEADERS bytes before a page
 * boundary: a WRITE's data starts on the boundary and goes from the
 * request to the disk as it is.  (libfuse reads into a buffer it is
 * given, fuse_session_receive_buf, and processes it in place,
 * fuse_session_process_buf.)  Splicing, the other way around the copy, is
 * not on offer: wire.c's read hook needs the request in memory.
 *
 * The end: unmount makes every read(2) fail (ENODEV), a signal's handler
 * marks the session exited and wakes the main thread; either way the main
 * thread wakes the parked workers, interrupts those blocked in read(2)
 * with LOOP_WAKE_SIGNAL (a handler that does nothing, installed without
 * SA_RESTART: the read fails with EINTR and the worker sees the session
 * exited), again every LOOP_JOIN_NS until each has ended, and joins them.
 * A worker busy with a request is never interrupted: it ends after its
 * reply.  (Not pthread_cancel, as libfuse does: cancelling unwinds through
 * our frames, which AddressSanitizer then reports at the thread's end.)
 */
#include "ops.h"

#include <errno.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOOP_STALL_NS 1000000ull    /* 1 ms */
#define LOOP_WINDOW_NS 8000000ull   /* 8 ms */
#define LOOP_BUSY_PERCENT 90
#define LOOP_HELP_NS 20000000ull    /* 20 ms */
#define LOOP_IDLE_NS 50000000ull    /* 50 ms */
#define LOOP_JOIN_NS 10000000ull    /* 10 ms */
#define LOOP_WAKE_SIGNAL SIGUSR2
#define LOOP_WRITE_HEADERS (sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in))
/* libfuse reads at most its bufsize: max_write (1 MiB, ops.c) plus a
 * 4 KiB header allowance, or before INIT 256 pages plus that allowance.
 * Twice as much leaves room should either grow. */
#define LOOP_BUF_BYTES ((2u << 20) + 8192u)

struct worker {
	struct worker *next;
	pthread_t thread;
	struct loop *loop;
	bool primary;
	atomic_bool in_read;  /* inside fuse_session_receive_buf */
	uint64_t took;        /* when its last request was read (ns) */
	uint64_t replied;     /* when it last finished one (ns) */
	uint64_t gap;         /* from that to the request after it (ns) */
	void *alloc;         /* page-aligned; buf.mem points into it */
	struct fuse_buf buf;
};

struct loop {
	struct fuse_session *se;
	int max_workers;
	uint64_t spin_ns;       /* the primary's spin before read(2) */
	pthread_mutex_t lock;   /* guards what follows, up to the atomics */
	pthread_cond_t park_cv; /* helpers wait here for a release */
	pthread_cond_t watch_cv;
	struct worker *workers; /* every worker, for the end */
	int nworkers;
	int nparked;            /* helpers waiting on park_cv */
	int releases;           /* releases not yet taken by a parked helper */
	bool exiting;
	int error;
	sem_t finish;
	/* Read without the lock by the watcher and the workers. */
	atomic_int nreading;          /* workers inside read(2) */
	/* Helpers go on reading until then (ns); the watcher moves it on
	 * LOOP_HELP_NS past each time it finds them needed. */
	atomic_uint_fast64_t helpers_until;
	atomic_uint_fast64_t last_take;  /* when a read(2) last returned a request */
	atomic_uint_fast64_t busy_ns;    /* the primary's time serving, in all */
	atomic_uint_fast64_t busy_since; /* when its request began; 0: reading */
	/* The watcher waits on watch_cv without a timeout; set and cleared
	 * under lock, read by the primary without it (see watch). */
	atomic_bool watcher_asleep;
	pthread_t watcher;
	bool watcher_started;
};

/* CLOCK_REALTIME ns (< 1 s) from now: a deadline for
 * pthread_cond_timedwait and pthread_timedjoin_np. */
static struct timespec deadline_in(uint64_t ns)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += (long)ns;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static bool is_forget(const struct fuse_buf *b)
{
	const struct fuse_in_header *in = b->mem;
	return in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET;
}

/* Until a request waits on /dev/fuse (or something else does: the end,
 * a signal) or until (ns); the CPU goes to whatever else is runnable. */
static void spin(struct loop *l, uint64_t until)
{
	struct pollfd pf = {.fd = fuse_session_fd(l->se), .events = POLLIN};
	while (poll(&pf, 1, 0) == 0 && fs_mono_ns() < until)
		sched_yield();
}

/* Read one request into w's buffer: > 0, or 0 at the end (the session
 * exited, the filesystem unmounted), or a negative errno. */
static int take(struct worker *w)
{
	struct loop *l = w->loop;
	w->buf.mem = (char *)w->alloc + DIRECT_ALIGN - LOOP_WRITE_HEADERS;
	w->buf.size = LOOP_BUF_BYTES;
	w->buf.flags = 0;
	atomic_fetch_add(&l->nreading, 1);
	atomic_store(&w->in_read, true);
	if (w->primary && w->gap < l->spin_ns)
		spin(l, w->replied + l->spin_ns);
	int res = fuse_session_exited(l->se) ? 0 : fuse_session_receive_buf(l->se, &w->buf);
	atomic_store(&w->in_read, false);
	atomic_fetch_sub(&l->nreading, 1);
	if (res > 0) {
		w->took = fs_mono_ns();
		w->gap = w->took - w->replied;
		if (!is_forget(&w->buf))
			atomic_store(&l->last_take, w->took);
	}
	return res;
}

/* The end of the loop, seen by a worker: a failed read ends it with its
 * error. */
static void ended(struct loop *l, int res)
{
	if (res < 0) {
		fuse_session_exit(l->se);
		l->error = res;
	}
	sem_post(&l->finish);
}

static void wake_watcher(struct loop *l)
{
	pthread_mutex_lock(&l->lock);
	if (atomic_load(&l->watcher_asleep)) {
		atomic_store(&l->watcher_asleep, false);
		pthread_cond_signal(&l->watch_cv);
	}
	pthread_mutex_unlock(&l->lock);
}

/* Take one request and serve it (nothing, when the read was
 * interrupted): false when the loop ends, the end told to the main
 * thread.  The primary's time serving is counted for the watcher. */
static bool serve_one(struct worker *w)
{
	struct loop *l = w->loop;
	int res = take(w);
	if (res == -EINTR)
		return true;
	if (res <= 0) {
		ended(l, res);
		return false;
	}
	if (w->primary) {
		atomic_store(&l->busy_since, w->took);
		if (atomic_load(&l->watcher_asleep))
			wake_watcher(l); /* the first request after a quiet spell */
	}
	fuse_session_process_buf(l->se, &w->buf);
	if (w->primary) {
		w->replied = fs_mono_ns();
		atomic_store(&l->busy_since, 0);
		atomic_fetch_add(&l->busy_ns, w->replied - w->took);
	}
	return true;
}

static void serve_primary(struct worker *w)
{
	while (!fuse_session_exited(w->loop->se))
		if (!serve_one(w))
			return;
	ended(w->loop, 0);
}

static void serve_helper(struct worker *w)
{
	struct loop *l = w->loop;
	for (;;) {
		pthread_mutex_lock(&l->lock);
		l->nparked++;
		while (!l->exiting && !l->releases && !fuse_session_exited(l->se))
			pthread_cond_wait(&l->park_cv, &l->lock);
		l->nparked--;
		bool go = !l->exiting && !fuse_session_exited(l->se);
		if (go)
			l->releases--;
		pthread_mutex_unlock(&l->lock);
		if (!go)
			return;
		/* Released: serve while the watcher wants helpers. */
		do {
			if (!serve_one(w))
				return;
		} while (fs_mono_ns() < atomic_load(&l->helpers_until) && !fuse_session_exited(l->se));
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	if (w->primary)
		serve_primary(w);
	else
		serve_helper(w);
	return NULL;
}

/* Start a thread with the signals that end the daemon blocked: they go
 * to the main thread, which waits for them. */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	int rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}

/* One more worker (l->lock held). */
static int start_worker(struct loop *l, bool primary)
{
	struct worker *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (posix_memalign(&w->alloc, DIRECT_ALIGN, LOOP_BUF_BYTES + DIRECT_ALIGN) != 0) {
		free(w);
		return -ENOMEM;
	}
	w->loop = l;
	w->primary = primary;
	atomic_init(&w->in_read, false);
	int rc = start_thread(&w->thread, work, w);
	if (rc) {
		free(w->alloc);
		free(w);
		return rc;
	}
	w->next = l->workers;
	l->workers = w;
	l->nworkers++;
	return 0;
}

/* Put one more helper to reading (l->lock held): a parked one, else a
 * new one while there may be more. */
static void release_helper(struct loop *l)
{
	if (l->nparked > l->releases) {
		l->releases++;
		pthread_cond_signal(&l->park_cv);
	} else if (l->nworkers < l->max_workers) {
		l->releases++; /* taken by the new helper at its start */
		if (start_worker(l, false))
			l->releases--; /* none: the workers there are serve, as before */
	}
}

static void *watch(void *arg)
{
	struct loop *l = arg;
	uint64_t window_start = fs_mono_ns(), window_busy = atomic_load(&l->busy_ns);
	pthread_mutex_lock(&l->lock);
	while (!l->exiting) {
		uint64_t now = fs_mono_ns();
		uint64_t last = atomic_load(&l->last_take);
		uint64_t since = atomic_load(&l->busy_since);
		if (!since && now - last >= LOOP_IDLE_NS) {
			/* Quiet: sleep until the primary's next request.  The
			 * primary sets busy_since, then looks at watcher_asleep;
			 * this sets watcher_asleep, then looks at busy_since
			 * again (both sequentially consistent): either it sees
			 * the request, or the primary sees it asleep and wakes
			 * it (under the lock held from here to the wait). */
			atomic_store(&l->watcher_asleep, true);
			if (atomic_load(&l->busy_since) || atomic_load(&l->last_take) != last) {
				atomic_store(&l->watcher_asleep, false);
				continue;
			}
			while (atomic_load(&l->watcher_asleep) && !l->exiting)
				pthread_cond_wait(&l->watch_cv, &l->lock);
			window_start = fs_mono_ns();
			window_busy = atomic_load(&l->busy_ns);
			continue;
		}
		/* Every reader held up, or more requests than one thread serves. */
		bool stalled = atomic_load(&l->nreading) == 0 && now - last >= LOOP_STALL_NS;
		bool saturated = false;
		if (now - window_start >= LOOP_WINDOW_NS) {
			uint64_t busy = atomic_load(&l->busy_ns) - window_busy;
			if (since && since < now)
				busy += now - (since > window_start ? since : window_start);
			saturated = busy * 100 >= (now - window_start) * LOOP_BUSY_PERCENT &&
				    atomic_load(&l->nreading) == 0;
			window_start = now;
			window_busy = atomic_load(&l->busy_ns);
		}
		if (stalled || saturated) {
			atomic_store(&l->helpers_until, now + LOOP_HELP_NS);
			release_helper(l);
		}
		struct timespec until = deadline_in(LOOP_STALL_NS);
		(void)pthread_cond_timedwait(&l->watch_cv, &l->lock, &until);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static void wake_handler(int sig)
{
	(void)sig; /* only to make a blocked read(2) fail with EINTR */
}

/* Join w, interrupting its read(2) until it ends (see the top). */
static void join_worker(struct worker *w)
{
	for (;;) {
		if (atomic_load(&w->in_read))
			pthread_kill(w->thread, LOOP_WAKE_SIGNAL);
		struct timespec until = deadline_in(LOOP_JOIN_NS);
		if (pthread_timedjoin_np(w->thread, NULL, &until) == 0)
			return;
	}
}

int fs_loop(struct fuse_session *se, int max_workers, uint64_t spin_ns)
{
	struct loop l = {.se = se, .max_workers = max_workers > 0 ? max_workers : 1,
			 .spin_ns = spin_ns};
	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.park_cv, NULL);
	pthread_cond_init(&l.watch_cv, NULL);
	sem_init(&l.finish, 0, 0);
	atomic_init(&l.nreading, 0);
	atomic_init(&l.helpers_until, 0);
	atomic_init(&l.last_take, fs_mono_ns());
	atomic_init(&l.busy_ns, 0);
	atomic_init(&l.busy_since, 0);
	atomic_init(&l.watcher_asleep, false);
	struct sigaction sa, old_sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wake_handler; /* no SA_RESTART: read(2) fails */
	sigemptyset(&sa.sa_mask);
	sigaction(LOOP_WAKE_SIGNAL, &sa, &old_sa);
	pthread_mutex_lock(&l.lock);
	int rc = start_worker(&l, true);
	if (!rc && l.max_workers > 1) {
		rc = start_thread(&l.watcher, watch, &l);
		l.watcher_started = rc == 0;
	}
	pthread_mutex_unlock(&l.lock);
	if (!rc) {
		while (!fuse_session_exited(se))
			sem_wait(&l.finish); /* a signal's handler ends it too (EINTR) */
	} else {
		fuse_session_exit(se);
	}
	pthread_mutex_lock(&l.lock);
	l.exiting = true;
	pthread_cond_broadcast(&l.park_cv);
	pthread_cond_broadcast(&l.watch_cv);
	pthread_mutex_unlock(&l.lock);
	if (l.watcher_started)
		pthread_join(l.watcher, NULL);
	while (l.workers) {
		struct worker *w = l.workers;
		join_worker(w);
		l.workers = w->next;
		free(w->alloc);
		free(w);
	}
	if (!rc)
		rc = l.error;
	sigaction(LOOP_WAKE_SIGNAL, &old_sa, NULL);
	sem_destroy(&l.finish);
	pthread_cond_destroy(&l.watch_cv);
	pthread_cond_destroy(&l.park_cv);
	pthread_mutex_destroy(&l.lock);
	fuse_session_reset(se);
	return rc;
}
