/*
 * iogate.c: chunk reads and writes outside the inode's lock.
 *
 * A read(2) or write(2) of a chunk file waits on its disk for as long as
 * the disk takes: milliseconds on a busy disk, forever on a dead NFS
 * server's.  Held across it, the inode's lock (one stripe of ILOCKS,
 * core.h) would hold up every request on the inodes of that stripe, a
 * stat of the file included, and a namespace change that waited for one
 * of them every namespace change behind ns_lock; and one file's writes
 * would reach its disks one at a time.  So a read or write prepares each
 * chunk's I/O under the lock (the chunk opened, its fd slot pinned), lets
 * the lock go for the system call, and takes it again to account for it.
 *
 * From iogate_begin_read or iogate_try_begin to iogate_end an operation
 * is under way:
 *   - reads go on together, and so do writes (the writes of a file are
 *     ordered by order.c and do not overlap as the kernel sends them);
 *   - reads and writes do not overlap each other, so that a read returns
 *     each write whole or not at all, as under one lock: a read waits
 *     for the writes under way, a write for the reads; when both wait,
 *     they take turns (io_turn_read), so that neither a stream of writes
 *     (the kernel's writeback) nor one of reads holds the other off;
 *   - a change of the file's layout (a truncate, an fallocate, a write
 *     past the end that zeroes the gap first, fsync's durable lengths, the
 *     last release) drains first: it waits, with the lock let go, until
 *     nothing is under way, while nothing new begins.  An operation under
 *     way never waits for a drain or for a waiting operation, so every
 *     wait ends when the operations under way end;
 *   - a chunk's scrub drains, then is a read (iogate_drain_read): alone
 *     for the moment it lets the chunk's slot go, then beside other reads
 *     for its I/O, which writes and layout changes wait for.
 * A pinned slot is neither evicted nor reopened: chunk_open waits for it
 * instead (iogate_wait).
 *
 * Waits are on fs->iocv[stripe] with the stripe's mutex; iogate_end, the
 * end of a drain and the unpinning broadcast on it.  A section's gate
 * (gate.c) is the innermost lock: the I/O lets it go before it takes the
 * inode's lock again.
 */
#include "core.h"

#include <stdbool.h>
#include <unistd.h>

static pthread_cond_t *cv_of(struct fs *fs, uint64_t ino)
{
	return &fs->iocv[ino % ILOCKS];
}

void iogate_wait(struct fs *fs, struct fs_inode *in)
{
	pthread_cond_wait(cv_of(fs, in->ino), inode_lock_of(fs, in->ino));
}

bool iogate_try_begin(struct fs *fs, struct fs_inode *in, bool write)
{
	(void)fs;
	if (in->io_drain)
		return false;
	if (write) {
		if (in->io_ops > in->io_writes || (in->io_rwait && in->io_turn_read))
			return false;
		in->io_turn_read = in->io_rwait > 0; /* reads waiting go next */
	} else {
		if (in->io_writes || (in->io_wwait && !in->io_turn_read))
			return false;
		in->io_turn_read = !in->io_wwait; /* writes waiting go next */
	}
	in->io_ops++;
	in->io_writes += write;
	return true;
}

void iogate_unwait(struct fs *fs, struct fs_inode *in)
{
	if (--in->io_wwait == 0)
		pthread_cond_broadcast(cv_of(fs, in->ino)); /* reads held off */
}

void iogate_begin_read(struct fs *fs, struct fs_inode *in)
{
	if (iogate_try_begin(fs, in, false))
		return;
	in->io_rwait++;
	do
		iogate_wait(fs, in);
	while (!iogate_try_begin(fs, in, false));
	in->io_rwait--;
}

void iogate_end(struct fs *fs, struct fs_inode *in, bool write)
{
	in->io_ops--;
	if (write)
		in->io_writes--;
	if (in->io_ops == 0)
		in->io_end = 0; /* every write under way is in the size now */
	if (in->io_rwait || in->io_wwait || in->io_drain)
		pthread_cond_broadcast(cv_of(fs, in->ino));
}

void iogate_drain(struct fs *fs, struct fs_inode *in)
{
	if (!in->io_ops)
		return;
	in->io_drain++;
	while (in->io_ops)
		iogate_wait(fs, in);
	/* Operations that waited to begin go on once the caller lets the
	 * lock go (the layout change is done under it). */
	if (--in->io_drain == 0)
		pthread_cond_broadcast(cv_of(fs, in->ino));
}

void iogate_drain_read(struct fs *fs, struct fs_inode *in)
{
	iogate_drain(fs, in);
	/* Nothing under way, and nothing began since (the lock is held): a
	 * read now, whatever the turns say.  Writers and drains waiting wait
	 * for it as for any read under way; it never waits for them. */
	in->io_ops++;
}

void iogate_out(struct fs *fs, struct fs_inode *in, struct chunk_fd *c)
{
	c->pins++;
	inode_unlock(fs, in);
	if (fs->io_delay_us) /* tests: a slow disk, so that the races show */
		usleep((useconds_t)fs->io_delay_us);
}

void iogate_back(struct fs *fs, struct fs_inode *in, struct chunk_fd *c)
{
	inode_lock(fs, in);
	if (--c->pins == 0)
		pthread_cond_broadcast(cv_of(fs, in->ino));
}
