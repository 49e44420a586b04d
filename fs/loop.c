/*
 * loop.c: the daemon's FUSE request loop.
 *
 * It is libfuse's multi-threaded loop (fuse_loop_mt.c, 3.14) in its
 * behaviour: one worker to begin with; a worker that takes a request
 * while no other worker is idle starts another, up to max_workers; FORGETs
 * count as no work (a burst of them starts no threads); a worker idle
 * beyond LOOP_MAX_IDLE others ends; unmount (ENODEV) or a signal ends the
 * loop, and the workers still blocked reading /dev/fuse are cancelled
 * there (cancellation is enabled only around the read).
 *
 * What it changes is where a request lands in memory.  libfuse reads each
 * request into a malloc'd buffer, so a WRITE's data, which follows 80
 * bytes of headers (struct fuse_in_header, struct fuse_write_in), starts
 * 80 bytes past an arbitrary address.  O_DIRECT wants it page-aligned, so
 * data.c copied every chunk write into an aligned bounce buffer first: a
 * memcpy per byte, under the inode's lock, between one disk write and the
 * next.  Here each worker's buffer starts LOOP_WRITE_HEADERS bytes before
 * a page boundary: a WRITE's data starts on the boundary and goes from the
 * request to the disk as it is.  (libfuse reads into a buffer it is given,
 * fuse_session_receive_buf, and processes it in place,
 * fuse_session_process_buf.)  Splicing, the other way around the copy, is
 * not on offer: wire.c's read hook needs the request in memory.
 */
#include "fs_int.h"

#include <errno.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define LOOP_MAX_IDLE 16
#define LOOP_WRITE_HEADERS (sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in))
/* libfuse reads at most its bufsize: max_write (1 MiB, ops.c) plus a
 * 4 KiB header allowance, or before INIT 256 pages plus that allowance.
 * Twice as much leaves room should either grow. */
#define LOOP_BUF_BYTES ((2u << 20) + 8192u)

struct worker {
	struct worker *next, *prev;
	pthread_t thread;
	struct loop *loop;
	void *alloc;         /* page-aligned; buf.mem points into it */
	struct fuse_buf buf;
};

struct loop {
	struct fuse_session *se;
	pthread_mutex_t lock;   /* guards the list and the counts */
	struct worker workers;  /* list head */
	int nworkers, navail;
	int max_workers;
	bool exiting;           /* the main thread is cancelling the workers */
	int error;
	sem_t finish;
};

static void list_add(struct loop *l, struct worker *w)
{
	w->next = &l->workers;
	w->prev = l->workers.prev;
	w->prev->next = w;
	l->workers.prev = w;
}

static void list_del(struct worker *w)
{
	w->prev->next = w->next;
	w->next->prev = w->prev;
}

static void worker_free(struct worker *w)
{
	free(w->alloc);
	free(w);
}

static bool is_forget(const struct fuse_buf *b)
{
	const struct fuse_in_header *in = b->mem;
	return in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET;
}

static int start_worker(struct loop *l);

static void *work(void *arg)
{
	struct worker *w = arg;
	struct loop *l = w->loop;
	while (!fuse_session_exited(l->se)) {
		w->buf.mem = (char *)w->alloc + DIRECT_ALIGN - LOOP_WRITE_HEADERS;
		w->buf.size = LOOP_BUF_BYTES;
		w->buf.flags = 0;
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		int res = fuse_session_receive_buf(l->se, &w->buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (res == -EINTR)
			continue;
		if (res <= 0) {
			if (res < 0) {
				fuse_session_exit(l->se);
				l->error = res;
			}
			break;
		}
		/* The buffer is ours: libfuse fills a given one, never swaps it. */
		bool forget = !(w->buf.flags & FUSE_BUF_IS_FD) && is_forget(&w->buf);
		pthread_mutex_lock(&l->lock);
		if (l->exiting) {
			pthread_mutex_unlock(&l->lock);
			return NULL;
		}
		if (!forget)
			l->navail--;
		if (l->navail == 0 && l->nworkers < l->max_workers)
			(void)start_worker(l); /* none: the others serve, as before */
		pthread_mutex_unlock(&l->lock);

		fuse_session_process_buf(l->se, &w->buf);

		pthread_mutex_lock(&l->lock);
		if (!forget)
			l->navail++;
		if (l->navail > LOOP_MAX_IDLE && l->nworkers > 1 && !l->exiting) {
			list_del(w);
			l->navail--;
			l->nworkers--;
			pthread_mutex_unlock(&l->lock);
			pthread_detach(w->thread);
			worker_free(w);
			return NULL;
		}
		pthread_mutex_unlock(&l->lock);
	}
	sem_post(&l->finish);
	return NULL;
}

/* One more worker (l->lock held), started with the signals that end the
 * daemon blocked: they go to the main thread, which waits for them. */
static int start_worker(struct loop *l)
{
	struct worker *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (posix_memalign(&w->alloc, DIRECT_ALIGN, LOOP_BUF_BYTES + DIRECT_ALIGN) != 0) {
		free(w);
		return -ENOMEM;
	}
	w->loop = l;
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	int rc = pthread_create(&w->thread, NULL, work, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		worker_free(w);
		return -rc;
	}
	list_add(l, w);
	l->navail++;
	l->nworkers++;
	return 0;
}

int fs_loop(struct fuse_session *se, int max_workers)
{
	struct loop l = {.se = se, .max_workers = max_workers > 0 ? max_workers : 1};
	l.workers.next = l.workers.prev = &l.workers;
	pthread_mutex_init(&l.lock, NULL);
	sem_init(&l.finish, 0, 0);
	pthread_mutex_lock(&l.lock);
	int rc = start_worker(&l);
	pthread_mutex_unlock(&l.lock);
	if (!rc) {
		while (!fuse_session_exited(se))
			sem_wait(&l.finish); /* a signal's handler ends it too (EINTR) */
		pthread_mutex_lock(&l.lock);
		for (struct worker *w = l.workers.next; w != &l.workers; w = w->next)
			pthread_cancel(w->thread);
		l.exiting = true;
		pthread_mutex_unlock(&l.lock);
		while (l.workers.next != &l.workers) {
			struct worker *w = l.workers.next;
			pthread_join(w->thread, NULL);
			pthread_mutex_lock(&l.lock);
			list_del(w);
			pthread_mutex_unlock(&l.lock);
			worker_free(w);
		}
		rc = l.error;
	}
	sem_destroy(&l.finish);
	pthread_mutex_destroy(&l.lock);
	fuse_session_reset(se);
	return rc;
}
