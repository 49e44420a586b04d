/*
 * dircache.c: whether the kernel keeps a directory's listing.
 *
 * With FOPEN_CACHE_DIR on an open directory, the kernel copies each entry
 * of the listing it reads into the directory's page cache, and serves later
 * listings from there without a request until the directory changes: a
 * change through the mount, or a new mtime, drops the copy (it checks both
 * at the start of each listing).  Every change to a name passes through
 * this kernel (the daemon makes none behind it), so a kept listing is never
 * stale.  Warm `find` over a million files in 1,000 directories: 0.37 s
 * read from the daemon, 0.22 s from the kernel's copy (walk.sh, one run).
 *
 * The copy is not free: the kernel finds and locks a page per entry it
 * adds, 190-230 ns per entry on our 2-CPU machine (a directory listed
 * once, just after it was filled: 1.5-1.8M entries/s with the copy against
 * 1.9-2.7M without).  A directory that just changed is likely to change
 * again, which throws the copy away, so only one left alone for
 * dircache_age seconds (-o dircache_age, default 30) is kept, after NFS's
 * rule of caching longer what changed longer ago.  ctime is the clock:
 * every change of a name in the directory sets it, and no user can set it
 * back (mtime they can, with utimensat).  Now is read off the fine clock
 * (no system call), which no stamp the kernel hands out is ahead of:
 * fs_now's stamp (clock.c) costs a fchmod and a fstat on the store's
 * disk, which this choice need not pay per OPENDIR.
 *
 * The first listing pays for the copy: a cold `find` of the same million
 * files took 0.71 s with it and 0.48 s without (the same run); -o
 * no_dircache keeps none, for a tree walked once per mount.
 */
#include "ops.h"

#include <time.h>

bool dircache_keep(struct fs *fs, const struct inode_rec *dir)
{
	if (!fs->opt.dircache)
		return false;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	double age = (double)(now.tv_sec - dir->ctime_sec) +
		     ((double)now.tv_nsec - (double)dir->ctime_nsec) / 1e9;
	return age >= fs->opt.dircache_age;
}
