/*
 * order.c: writes to one file reach its chunk files in offset order.
 *
 * With the writeback cache the kernel writes a file back as a train of
 * WRITE requests in offset order, many in flight at once.  Our worker
 * threads take them off /dev/fuse in that order but then race for the
 * inode's lock, and the loser of each race lands behind its successor:
 * a sequential stream reached the backing disks as a shuffled one (about
 * half of the writes out of order, measured with lsmfs-bench).
 *
 * So each write registers (inode, offset, length) as soon as its handler
 * starts, before it can contend for anything, and once it holds the
 * inode's lock it yields to a registered write to the same inode that
 * starts below it and ends at most ORDER_WINDOW before it (its predecessor
 * in the train, give or take a few clean pages), waiting on the stripe's
 * condition variable.  A write leaves when its data goes out to its chunk
 * file (data.c lets the inode's lock go for the write(2), iogate.c), or at
 * its end, so that the train goes out in order, several writes at a time.
 * Streams further apart in one file (a log and its data region) do not
 * wait for each other.  The registered write with
 * the lowest offset never waits, so someone always makes progress; a wait
 * is still bounded (ORDER_WAIT_MS, fs->order.wait_ms) because a registered write may be held
 * up elsewhere (a stalled disk) and order is an optimisation, not a rule.
 * A single writer never waits: nothing else is registered.
 *
 * Locking: fs->order.lock guards the slots; it is taken alone
 * (order_enter) or inside the inode stripe lock, never the other way
 * round.  Waits are on fs->order.cv[stripe] with the stripe lock, and
 * order_leave is called under it (data.c, above struct write_op).
 */
#include "core.h"

#include <errno.h>
#include <time.h>

#define ORDER_WAIT_MS 20
#define ORDER_WINDOW (8u << 20)

int order_init(struct fs *fs)
{
	struct write_order *o = &fs->order;
	pthread_condattr_t ca;
	if (pthread_mutex_init(&o->lock, NULL))
		return -ENOMEM;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (int i = 0; i < ILOCKS; i++)
		pthread_cond_init(&o->cv[i], &ca);
	pthread_condattr_destroy(&ca);
	for (int i = 0; i < ORDER_SLOTS; i++)
		o->slot[i].ino = 0;
	o->wait_ms = ORDER_WAIT_MS;
	return 0;
}

void order_free(struct fs *fs)
{
	for (int i = 0; i < ILOCKS; i++)
		pthread_cond_destroy(&fs->order.cv[i]);
	pthread_mutex_destroy(&fs->order.lock);
}

int order_enter(struct fs *fs, uint64_t ino, uint64_t off, uint64_t len)
{
	struct write_order *o = &fs->order;
	int slot = -1;
	pthread_mutex_lock(&o->lock);
	for (int i = 0; i < ORDER_SLOTS; i++)
		if (!o->slot[i].ino) {
			o->slot[i].ino = ino;
			o->slot[i].off = off;
			o->slot[i].len = len;
			slot = i;
			break;
		}
	pthread_mutex_unlock(&o->lock);
	return slot; /* all slots taken: this write just goes unordered */
}

/* Is a registered write to INO just before OFF (its predecessor)? */
static bool earlier_pending(struct write_order *o, uint64_t ino, uint64_t off)
{
	bool found = false;
	pthread_mutex_lock(&o->lock);
	for (int i = 0; i < ORDER_SLOTS && !found; i++)
		found = o->slot[i].ino == ino && o->slot[i].off < off &&
			o->slot[i].off + o->slot[i].len + ORDER_WINDOW >= off;
	pthread_mutex_unlock(&o->lock);
	return found;
}

void order_wait(struct fs *fs, uint64_t ino, uint64_t off)
{
	struct write_order *o = &fs->order;
	struct timespec until;
	/* Nothing comes before offset 0: no look at the slots, the lock
	 * included (every small file's one write). */
	if (off == 0 || !earlier_pending(o, ino, off))
		return;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += o->wait_ms / 1000;
	until.tv_nsec += (long)(o->wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	do {
		if (pthread_cond_timedwait(&o->cv[ino % ILOCKS], inode_lock_of(fs, ino), &until) ==
		    ETIMEDOUT)
			break;
	} while (earlier_pending(o, ino, off));
}

void order_leave(struct fs *fs, int slot, uint64_t ino)
{
	struct write_order *o = &fs->order;
	if (slot < 0)
		return;
	pthread_mutex_lock(&o->lock);
	o->slot[slot].ino = 0;
	pthread_mutex_unlock(&o->lock);
	pthread_cond_broadcast(&o->cv[ino % ILOCKS]);
}
