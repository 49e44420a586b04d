/*
 * files.c: durable-file helpers every part of lsmfs uses (the daemon,
 * mkfs.lsmfs, fsck.lsmfs, lsmfs-disk): whether a directory is empty, an
 * fsync of a directory, a small file replaced atomically (temp file,
 * fsync, rename, fsync of the directory), a flat directory removed.
 * No state; plain paths.
 */
#include "base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int lsmfs_dir_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int rc = 0;
	struct dirent *de;
	errno = 0;
	while (!rc && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = -ENOTEMPTY;
	if (!rc && errno)
		rc = -errno;
	closedir(d);
	return rc;
}

int lsmfs_fsync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int lsmfs_write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char tmp[PATH_MAX + 64], path[PATH_MAX + 64];
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (write(fd, data, len) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	else if (fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (!rc)
		rc = lsmfs_fsync_dir(dir);
	if (rc)
		(void)unlink(tmp); /* best effort: the old file stands */
	return rc;
}

int fs_remove_flat(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    unlinkat(dirfd(d), e->d_name, 0) != 0 && !rc)
			rc = -errno;
	closedir(d);
	if (!rc && rmdir(dir) != 0)
		rc = -errno;
	return rc;
}

int lsmfs_pread_full(int fd, void *buf, size_t n, off_t off, size_t *got)
{
	size_t r = 0;
	int rc = 0;
	while (r < n) {
		ssize_t k = pread(fd, (char *)buf + r, n - r, off + (off_t)r);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = -errno;
			break;
		}
		if (k == 0)
			break;
		r += (size_t)k;
	}
	*got = r;
	return rc;
}

int lsmfs_pwrite_full(int fd, const void *buf, size_t n, off_t off)
{
	const char *p = buf;
	while (n) {
		ssize_t w = pwrite(fd, p, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO; /* no progress: not to loop for ever */
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}
