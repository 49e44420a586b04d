/*
 * lockfile.c: lock files no other user can hold (store.h, store_lockfile;
 * fs/SCHEMA.md "Backing disks", "Who may read the disks").
 *
 * A lock is an flock(2) on an open file.  Anyone who can open the file can
 * lock it, and a shared lock held by anyone stops an exclusive one: a lock
 * file another user can open is a lock that user can use to stop a mount.
 * So a lock file is made mode 0600, and one an older version made with
 * looser bits (0644) is replaced once its exclusive lock is ours: a fresh
 * 0600 file, locked, is renamed over it.  A descriptor of the old file that
 * another user opened before then locks an unlinked inode, which no locker
 * looks at; a file that is not an owner-only one is never chmodded instead,
 * as a chmod leaves those descriptors working.
 *
 * Because the file can be replaced, a lock counts only while the path
 * still names the inode locked: after flock the path is looked at again,
 * and a lock on a file renamed over meanwhile is let go and taken anew.
 *
 * No state; every call opens its own descriptor (O_CLOEXEC).
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Retries when the path keeps being replaced under us: each one means a
 * replacement by a holder of the exclusive lock, which happens once. */
#define LOCKFILE_TRIES 16

static int open_lockfile(const char *path, bool shared)
{
	/* A reader needs no write access (a read-only disk can be read);
	 * the file is made on first use by anyone. */
	int fd = shared ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	if (!shared || (fd < 0 && errno == ENOENT))
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	return fd < 0 ? -errno : fd;
}

/* 0 while path names fd's file, -ESTALE once it names another or none. */
static int still_named(const char *path, int fd, struct stat *st)
{
	struct stat named;
	if (fstat(fd, st) != 0)
		return -errno;
	if (lstat(path, &named) != 0)
		return errno == ENOENT ? -ESTALE : -errno;
	return named.st_dev == st->st_dev && named.st_ino == st->st_ino ? 0 : -ESTALE;
}

/* Put an owner-only file, locked exclusively, in place of fd's (which we
 * hold exclusively); *fd becomes the new one.  On failure *fd stays the
 * old one, still locked, and its mode is narrowed as far as a chmod can. */
static void replace_open_file(const char *path, int *fd)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		goto chmod;
	/* A .new a crash left is ours to drop: only an exclusive holder
	 * makes one. */
	if (unlink(tmp) != 0 && errno != ENOENT)
		goto chmod;
	int nfd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (nfd < 0)
		goto chmod;
	if (flock(nfd, LOCK_EX | LOCK_NB) != 0 || rename(tmp, path) != 0) {
		(void)unlink(tmp); /* the old file stands */
		close(nfd);
		goto chmod;
	}
	/* No fsync of the directory: a crash may bring the old file back,
	 * to be replaced at the next exclusive lock. */
	close(*fd);
	*fd = nfd;
	return;
chmod:
	(void)fchmod(*fd, 0600); /* best effort: new opens at least are refused */
}

int store_lockfile(const char *path, bool shared, int *fd_out)
{
	*fd_out = -1;
	for (int tries = 0; tries < LOCKFILE_TRIES; tries++) {
		int fd = open_lockfile(path, shared);
		if (fd < 0)
			return fd;
		int rc;
		while ((rc = flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB)) != 0 && errno == EINTR)
			;
		if (rc != 0) {
			rc = -errno;
			if (rc == -EWOULDBLOCK) {
				*fd_out = fd; /* the caller may read the holder's pid */
				return rc;
			}
			close(fd);
			return rc;
		}
		struct stat st;
		rc = still_named(path, fd, &st);
		if (rc == -ESTALE) {
			close(fd); /* replaced while we locked: take the new one */
			continue;
		}
		if (rc) {
			close(fd);
			return rc;
		}
		if (!shared && (st.st_mode & 077))
			replace_open_file(path, &fd);
		*fd_out = fd;
		return 0;
	}
	return -EBUSY;
}
