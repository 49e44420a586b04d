/*
 * background.h: the engine's threads (fs/ARCHITECTURE.md): the reclaim of
 * unlinked inodes, the sweep of chunk files a crash left, the disk
 * watcher, the namer of files in log lines.  Uses every part below it.
 */
#ifndef LSMFS_ENGINE_BACKGROUND_H
#define LSMFS_ENGINE_BACKGROUND_H

#include "names.h"

/* reclaim.c: the background thread that deletes unlinked inodes. */
int reclaim_start(struct fs *fs);
/* Delete everything of an inode whose nlink is 0 (orphan reclaim). */
int reclaim_inode(struct fs *fs, uint64_t ino);
/* inode_ops.orphaned: queue ino for the reclaim thread, or, when that
 * fails (no thread, no memory), reclaim it here and now. */
int reclaim_orphaned(struct fs *fs, uint64_t ino);
/* Hand ino (nlink 0, forgotten by the kernel) to the thread; -ESRCH when
 * it is not running (then reclaim it yourself). */
int reclaim_queue(struct fs *fs, uint64_t ino);
/* Queue every orphan key of the store (at mount). */
int reclaim_orphans(struct fs *fs);
/* Wait until the queue is empty and the thread idle. */
void reclaim_wait_idle(struct fs *fs);
/* Let a sweep under way end, drain the queue, stop the thread (no-op
 * when not started). */
void reclaim_stop(struct fs *fs);

/* namer.c: the thread that logs fs_log_named's messages with the file's
 * path (start: at mount; stop: at unmount, after logging what is queued). */
int namer_start(struct fs *fs);
void namer_stop(struct fs *fs);

/* sweep.c: the chunk files a crash left without record. */
/* At a read-write mount: note a crash (`M mounted` found), or store it. */
int sweep_arm(struct fs *fs);
/* In the reclaim thread: remove them, unless the unmount comes first. */
void sweep_run(struct fs *fs);
/* At a clean unmount, after the disks are synced: delete `M mounted`
 * unless a sweep is left to do. */
int sweep_finish(struct fs *fs);

/* diskwatch.c: a thread that notices a disk replaced under its path. */
int diskwatch_start(struct fs *fs);

void diskwatch_stop(struct fs *fs);

#endif
