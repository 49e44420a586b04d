/* ops.h: the FUSE operation table of the lsmfs daemon (ops.c). */
#ifndef LSMFS_OPS_H
#define LSMFS_OPS_H

#include "engine.h"
#include "life.h"

extern const struct fuse_lowlevel_ops lsmfs_ops;

/* plus.c: what a reply to a listing by thread tid (its process is the
 * reader) of dir from off holds:
 * every entry's attributes (ALL); attributes, in at most PLUS_FIRST_BYTES
 * (FIRST); no attributes, PLUS_LOOKS entries that are not directories at
 * most (ASK); none (PLAIN).  And what a lookup by thread tid of a name in
 * parent tells. */
#define PLUS_FIRST_BYTES 4096
#define PLUS_LOOKS 8
enum plus_mode { PLUS_ALL, PLUS_FIRST, PLUS_ASK, PLUS_PLAIN };
enum plus_mode plus_listing(pid_t tid, uint64_t dir, uint64_t off);
void plus_looked(pid_t tid, uint64_t parent, bool is_dir);
/* The ASK reply to tid's listing of dir held PLUS_LOOKS files: what it
 * does next tells. */
void plus_asked(pid_t tid, uint64_t dir);

/* dircache.c: does the kernel keep the listing of dir (its record, as
 * loaded at opendir) once read? */
bool dircache_keep(struct fs *fs, const struct inode_rec *dir);

/* wire.c */
int fs_wire_attach(struct fs *fs, struct fuse_session *se);

/* loop.c: serve se's requests on up to max_workers threads until unmount
 * or a signal; 0 or a negative errno.  A WRITE's data lands page-aligned
 * in memory; between requests that come close together the first thread
 * polls for up to spin_ns before it sleeps (0: never; see loop.c). */
int fs_loop(struct fuse_session *se, int max_workers, uint64_t spin_ns);

#endif
