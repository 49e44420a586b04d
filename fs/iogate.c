/*
 * iogate.c: chunk reads outside the inode's lock.
 *
 * A read(2) of a chunk file waits on its disk for as long as the disk
 * takes: milliseconds on a busy disk, forever on a dead NFS server's.  Held
 * across it, the inode's lock (one stripe of ILOCKS, fs_int.h) held up
 * every request on the inodes of that stripe, a stat of the file included,
 * and a namespace change that waited for one of them held up every
 * namespace change behind ns_lock.  So a read prepares each chunk's I/O
 * under the lock (the chunk opened, its fd slot pinned), lets the lock go
 * for the read(2), and takes it again before the next chunk.
 *
 * What such an I/O must not meet meanwhile is its fd closed or its chunk
 * file cut, dropped or replaced.  Slots: a pinned slot is neither evicted
 * nor reopened (chunk_open waits for it instead, iogate_wait).  Files: only
 * a change of the file's layout cuts or drops chunk files or closes every
 * fd (a truncate, an fallocate, a write past the size, the first write
 * that makes an inline file chunked, the last release), and each such
 * change first drains the gate: it waits, with the lock let go, until no
 * operation of the inode is between iogate_begin and iogate_end, while new
 * ones wait in iogate_begin.  An operation never waits for a drain once
 * it began, so a drain ends as soon as the operations under way end.
 *
 * Waits are on fs->iocv[stripe] with the stripe's mutex; iogate_end and
 * the unpinning broadcast on it.  A section's gate (gate.c) is the
 * innermost lock: the I/O lets it go before it takes the inode's lock
 * again.
 */
#include "fs_int.h"

#include <unistd.h>

static pthread_cond_t *cv_of(struct fs *fs, uint64_t ino)
{
	return &fs->iocv[ino % ILOCKS];
}

void iogate_wait(struct fs *fs, struct fs_inode *in)
{
	pthread_cond_wait(cv_of(fs, in->ino), inode_lock_of(fs, in->ino));
}

void iogate_begin(struct fs *fs, struct fs_inode *in)
{
	while (in->io_drain)
		iogate_wait(fs, in);
	in->io_ops++;
}

void iogate_end(struct fs *fs, struct fs_inode *in)
{
	if (--in->io_ops == 0 && in->io_drain)
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
