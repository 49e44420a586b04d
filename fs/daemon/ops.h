/* ops.h: the FUSE operation table of the lsmfs daemon (ops.c). */
#ifndef LSMFS_OPS_H
#define LSMFS_OPS_H

#include "engine.h"
#include "life.h"

extern const struct fuse_lowlevel_ops lsmfs_ops;

/* wire.c */
int fs_wire_attach(struct fs *fs, struct fuse_session *se);

/* loop.c: serve se's requests on up to max_workers threads until unmount
 * or a signal; 0 or a negative errno.  A WRITE's data lands page-aligned
 * in memory; between requests that come close together the first thread
 * polls for up to spin_ns before it sleeps (0: never; see loop.c). */
int fs_loop(struct fuse_session *se, int max_workers, uint64_t spin_ns);

#endif
