/*
 * tree.h: walking a quiescent directory tree and checking that it is
 * consistent, for the crash and concurrency tests of the 'fs' suite.
 *
 * tree_check() lstat()s every entry a readdir() lists, reads every regular
 * file to its end, readlink()s every symlink, and checks:
 *   - a readdir lists no name twice, and every listed name can be lstat()ed;
 *   - the d_type readdir gives (when not DT_UNKNOWN) agrees with lstat;
 *   - reading a regular file yields exactly st_size bytes, without error;
 *   - readlink of a symlink yields st_size bytes;
 *   - a directory's st_nlink is 2 + the number of its subdirectories;
 *   - an inode reached under k names has st_nlink == k (so pass the root of
 *     the mount: names outside the walked tree would count as missing).
 * Every problem is printed to stderr as "<tag>: <path>: <what>".
 * Not thread safe (uses static scratch state); single-threaded tests only.
 */
#ifndef LSMFS_TREE_H
#define LSMFS_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct tree_stats {
	long files, dirs, symlinks, others;
	long long bytes;
};

/* Called for each regular file with its path relative to the root and its
 * whole content.  Returns the number of problems it found (and printed). */
typedef int (*tree_file_fn)(void *arg, const char *rel, const struct stat *st,
			    const unsigned char *data, size_t len);

/* Walk root as above; fn may be NULL, stats may be NULL.  Returns the
 * number of problems found (0: consistent). */
int tree_check(const char *root, const char *tag, tree_file_fn fn, void *arg,
	       struct tree_stats *stats);

/* 64-bit FNV-1a of n bytes: the checksum the tests report and compare. */
uint64_t tree_hash(const void *p, size_t n);

#endif
