/*
 * lockfile.c: lock files no other user can hold (store.h, store_lockfile;
 * fs/SCHEMA.md "Backing disks", "Who may read the disks").
 *
 * A lock is an flock(2) on an open file.  Anyone who can open the file can
 * lock it, and a shared lock held by anyone stops an exclusive one: a lock
 * file another user can open is a lock that user can use to stop a mount.
 * So a lock file is made mode 0600, and one an older version made with
 * looser bits (0644) is replaced when taken exclusively: a fresh 0600
 * file, locked, is renamed over it.  A descriptor of the old file that
 * another user opened before then locks an unlinked inode, which no locker
 * looks at; such a file is not chmodded instead (unless it cannot be
 * replaced), as a chmod leaves those descriptors working.  It is replaced
 * even while locked, if no process of ours (root's, or our user's) has it
 * open (/proc/<pid>/fd): then every lock on it is another user's, held
 * since before this version, and guards nothing.  A process of ours that
 * has it open may be a reader of an older version: then the lock stands.
 *
 * Because the file can be replaced, a lock counts only while the path
 * still names the inode locked: after flock the path is looked at again,
 * and a lock on a file renamed over meanwhile is let go and taken anew.
 * Two of us replacing at once are kept apart by the lock of <path>.new.
 *
 * No state; every call opens its own descriptor (O_CLOEXEC).
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Put an owner-only file, locked exclusively, in place of the file old
 * describes (fd's), if path still names it; *fd becomes the new one and
 * true is returned.  <path>.new is made, locked and renamed over path:
 * its lock keeps two of us from replacing at once (the second finds the
 * name gone or path naming another file, and gives up), and no other
 * user can open it (0600, in a directory only we write). */
static bool put_owner_only(const char *path, int *fd, const struct stat *old)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return false;
	int nfd = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (nfd < 0)
		return false;
	struct stat ns, cur;
	if (flock(nfd, LOCK_EX | LOCK_NB) != 0 || still_named(tmp, nfd, &ns) != 0 ||
	    (ns.st_mode & 077) || ns.st_uid != geteuid() || lstat(path, &cur) != 0 ||
	    cur.st_dev != old->st_dev || cur.st_ino != old->st_ino || rename(tmp, path) != 0) {
		close(nfd); /* another of us is at it, or did it: path stands */
		return false;
	}
	/* No fsync of the directory: a crash may bring the old file back,
	 * to be replaced again. */
	close(*fd);
	*fd = nfd;
	return true;
}

/* Whether a process of ours (root's, or our own user's) other than us
 * through fd has the file lk open: a lock only such a process may hold
 * counts.  /proc/<pid>/fd is read for each; a process of ours whose
 * descriptors cannot be read counts as holding it, and so does everything
 * when /proc cannot be read. */
static bool open_by_ours(const struct stat *lk, int fd)
{
	DIR *proc = opendir("/proc");
	if (!proc)
		return true;
	uid_t me = geteuid();
	long self = (long)getpid();
	bool found = false;
	struct dirent *p;
	while (!found && (p = readdir(proc))) {
		char *end;
		long pid = strtol(p->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char dir[64];
		struct stat ps;
		snprintf(dir, sizeof(dir), "/proc/%ld", pid);
		if (stat(dir, &ps) != 0 || (ps.st_uid != 0 && ps.st_uid != me))
			continue; /* gone, or another user's: its lock guards nothing */
		snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
		DIR *fds = opendir(dir);
		if (!fds) {
			found = errno != ENOENT; /* ENOENT: it has just exited */
			continue;
		}
		struct dirent *f;
		while (!found && (f = readdir(fds))) {
			struct stat st;
			if (f->d_name[0] == '.' || (pid == self && atoi(f->d_name) == fd) ||
			    fstatat(dirfd(fds), f->d_name, &st, 0) != 0)
				continue;
			found = st.st_dev == lk->st_dev && st.st_ino == lk->st_ino;
		}
		closedir(fds);
	}
	closedir(proc);
	return found;
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
			struct stat st;
			/* An older version's file, open to all, locked by others
			 * only: their locks guard nothing; take it from them. */
			if (rc == -EWOULDBLOCK && !shared && fstat(fd, &st) == 0 &&
			    (st.st_mode & 077) && !open_by_ours(&st, fd) &&
			    put_owner_only(path, &fd, &st))
				rc = 0;
			if (rc == -EWOULDBLOCK) {
				*fd_out = fd; /* the caller may read the holder's pid */
				return rc;
			}
			if (rc) {
				close(fd);
				return rc;
			}
			*fd_out = fd;
			return 0;
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
		/* Ours alone now: replaced, or narrowed as far as a chmod
		 * can (new opens refused) if it cannot be. */
		if (!shared && (st.st_mode & 077) && !put_owner_only(path, &fd, &st))
			(void)fchmod(fd, 0600);
		*fd_out = fd;
		return 0;
	}
	return -EBUSY;
}
