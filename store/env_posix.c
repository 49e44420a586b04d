/*
 * env_posix: the real store_env, on POSIX files, plus the env helpers that
 * work on any env (env_free_names, env_write_file_atomic, env_read_file).
 *
 * Writable files keep a 64 KiB user-space buffer: append copies into it and
 * write(2)s it out when it is full; an append larger than the buffer goes
 * straight to the file after the buffer is flushed.  Short writes and EINTR
 * are retried; bytes that did reach the file are removed from the buffer,
 * so a failed flush never writes a byte twice when retried.
 * flush = write the buffer out; sync = flush + fdatasync.
 *
 * Locks are flock(2) locks on an open descriptor, of owner-only files
 * (store_lockfile, lockfile.c).  flock locks belong to the open file
 * description, so two opens of LOCK in one process conflict too: a second
 * store_open of the same directory gets -EBUSY.  Files are made mode 0600
 * and directories 0700: the store holds the filesystem's metadata and
 * small files' bytes, root's alone (fs/SCHEMA.md "Who may read the disks").
 *
 * The env object is static and stateless.  Locking: none here; a writable
 * file is used by one thread at a time (env.h), pread is pread(2) and
 * therefore safe concurrently.  Every descriptor is opened O_CLOEXEC.
 * Everything returns 0 or a negative errno.
 */
#include "env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define WFILE_BUF_SIZE ENV_WRITE_UNIT

struct env_wfile {
	int fd;
	size_t used; /* bytes buffered in buf */
	uint8_t buf[WFILE_BUF_SIZE];
};

struct env_rfile {
	int fd;
};

struct env_lock {
	int fd;
};

/* errno as a negative value; never 0 even if a libc call forgot to set it. */
static int neg_errno(void)
{
	return errno ? -errno : -EIO;
}

/* Write all of [data, data+len); *done gets the bytes that reached the file
 * even when an error cuts the write short. */
static int write_all(int fd, const uint8_t *data, size_t len, size_t *done)
{
	size_t off = 0;
	int rc = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = neg_errno();
			break;
		}
		if (n == 0) { /* should not happen for a regular file */
			rc = -EIO;
			break;
		}
		off += (size_t)n;
	}
	*done = off;
	return rc;
}

static int wfile_flush_buffer(struct env_wfile *f)
{
	if (f->used == 0)
		return 0;
	size_t done;
	int rc = write_all(f->fd, f->buf, f->used, &done);
	if (done < f->used)
		memmove(f->buf, f->buf + done, f->used - done);
	f->used -= done;
	return rc;
}

static int posix_open_writable(struct store_env *env, const char *path,
			       struct env_wfile **out)
{
	(void)env; /* stateless */
	struct env_wfile *f = malloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (f->fd < 0) {
		int rc = neg_errno();
		free(f);
		return rc;
	}
	f->used = 0;
	*out = f;
	return 0;
}

static int posix_append(struct env_wfile *f, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t room = WFILE_BUF_SIZE - f->used;
	size_t copy = len < room ? len : room;
	if (copy) {
		memcpy(f->buf + f->used, p, copy);
		f->used += copy;
		p += copy;
		len -= copy;
	}
	if (len == 0)
		return 0;
	/* The buffer is full and more data follows. */
	int rc = wfile_flush_buffer(f);
	if (rc)
		return rc;
	if (len < WFILE_BUF_SIZE) {
		memcpy(f->buf, p, len);
		f->used = len;
		return 0;
	}
	size_t done;
	return write_all(f->fd, p, len, &done);
}

static int posix_flush(struct env_wfile *f)
{
	return wfile_flush_buffer(f);
}

static int posix_sync(struct env_wfile *f)
{
	int rc = wfile_flush_buffer(f);
	if (rc)
		return rc;
	while (fdatasync(f->fd) < 0) {
		if (errno != EINTR)
			return neg_errno();
	}
	/* A file removed while open takes its synced bytes with it at the
	 * last close: what was "made durable" is in no directory. */
	struct stat sb;
	if (fstat(f->fd, &sb) == 0 && sb.st_nlink == 0)
		return -ENOENT;
	return 0;
}

static int posix_close_writable(struct env_wfile *f)
{
	int rc = wfile_flush_buffer(f);
	/* close(2) must not be retried on EINTR on Linux: the fd is gone. */
	if (close(f->fd) < 0 && rc == 0 && errno != EINTR)
		rc = neg_errno();
	free(f);
	return rc;
}

static int posix_open_readable(struct store_env *env, const char *path,
			       struct env_rfile **out)
{
	(void)env; /* stateless */
	struct env_rfile *f = malloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		int rc = neg_errno();
		free(f);
		return rc;
	}
	*out = f;
	return 0;
}

static int posix_pread(struct env_rfile *f, void *buf, size_t len,
		       uint64_t off, size_t *got)
{
	uint8_t *p = buf;
	size_t done = 0;
	*got = 0;
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return -EINVAL;
	while (done < len) {
		ssize_t n = pread(f->fd, p + done, len - done,
				  (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*got = done;
			return neg_errno();
		}
		if (n == 0)
			break; /* end of file */
		done += (size_t)n;
	}
	*got = done;
	return 0;
}

static void posix_close_readable(struct env_rfile *f)
{
	/* Read-only: a close error cannot lose data. */
	(void)close(f->fd);
	free(f);
}

static int posix_file_size(struct store_env *env, const char *path,
			   uint64_t *size)
{
	(void)env; /* stateless */
	struct stat sb;
	if (stat(path, &sb) < 0)
		return neg_errno();
	*size = (uint64_t)sb.st_size;
	return 0;
}

static int posix_exists(struct store_env *env, const char *path)
{
	(void)env; /* stateless */
	struct stat sb;
	return stat(path, &sb) < 0 ? neg_errno() : 0;
}

static int posix_rename(struct store_env *env, const char *from, const char *to)
{
	(void)env; /* stateless */
	return rename(from, to) < 0 ? neg_errno() : 0;
}

static int posix_unlink(struct store_env *env, const char *path)
{
	(void)env; /* stateless */
	return unlink(path) < 0 ? neg_errno() : 0;
}

/* ftruncate + fdatasync: a cut that a power cut cannot undo (a torn
 * commit-log tail must not come back after the log it ends is followed by
 * a newer one). */
static int posix_truncate(struct store_env *env, const char *path,
			  uint64_t size)
{
	(void)env; /* stateless */
	if (size > (uint64_t)INT64_MAX)
		return -EINVAL;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	int rc = 0;
	while (ftruncate(fd, (off_t)size) < 0) {
		if (errno != EINTR) {
			rc = neg_errno();
			break;
		}
	}
	while (rc == 0 && fdatasync(fd) < 0) {
		if (errno != EINTR)
			rc = neg_errno();
	}
	(void)close(fd); /* nothing buffered: the sync above said all */
	return rc;
}

static int posix_preallocate(struct store_env *env, const char *path,
			     uint64_t size)
{
	(void)env; /* stateless */
	if (size > (uint64_t)INT64_MAX)
		return -EINVAL;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return neg_errno();
	/* posix_fallocate returns the error instead of setting errno; where
	 * the filesystem has no fallocate, glibc writes zeros instead. */
	int rc;
	do
		rc = posix_fallocate(fd, 0, (off_t)size);
	while (rc == EINTR);
	(void)close(fd); /* nothing buffered */
	return -rc;
}

static int posix_mkdir(struct store_env *env, const char *path)
{
	(void)env; /* stateless */
	return mkdir(path, 0700) < 0 ? neg_errno() : 0;
}

static int posix_list_dir(struct store_env *env, const char *dir,
			  char ***names_out, size_t *count_out)
{
	(void)env; /* stateless */
	DIR *d = opendir(dir); /* glibc opens it O_CLOEXEC */
	if (!d)
		return neg_errno();
	char **names = NULL;
	size_t count = 0, cap = 0;
	int rc = 0;
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				rc = -errno;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **n = realloc(names, ncap * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			names = n;
			cap = ncap;
		}
		names[count] = strdup(de->d_name);
		if (!names[count]) {
			rc = -ENOMEM;
			break;
		}
		count++;
	}
	(void)closedir(d); /* read-only directory stream */
	if (rc) {
		env_free_names(names, count);
		return rc;
	}
	*names_out = names;
	*count_out = count;
	return 0;
}

static int posix_sync_dir(struct store_env *env, const char *dir)
{
	(void)env; /* stateless */
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	int rc = 0;
	while (fsync(fd) < 0) {
		if (errno != EINTR) {
			rc = neg_errno();
			break;
		}
	}
	(void)close(fd); /* the fsync result is what matters */
	return rc;
}

static int posix_lock(struct store_env *env, const char *path,
		      struct env_lock **out)
{
	(void)env; /* stateless */
	struct env_lock *l = malloc(sizeof(*l));
	if (!l)
		return -ENOMEM;
	/* Owner-only (store_lockfile): a lock another user could open is
	 * one that user could hold against us. */
	int rc = store_lockfile(path, false, &l->fd);
	if (rc) {
		if (l->fd >= 0)
			(void)close(l->fd); /* held by another: nothing read */
		free(l);
		return rc == -EWOULDBLOCK ? -EBUSY : rc;
	}
	*out = l;
	return 0;
}

static void posix_unlock(struct env_lock *l)
{
	/* Closing the only descriptor releases the flock. */
	(void)close(l->fd);
	free(l);
}

static const struct store_env_ops posix_ops = {
	.open_writable = posix_open_writable,
	.append = posix_append,
	.flush = posix_flush,
	.sync = posix_sync,
	.close_writable = posix_close_writable,
	.open_readable = posix_open_readable,
	.pread = posix_pread,
	.close_readable = posix_close_readable,
	.file_size = posix_file_size,
	.exists = posix_exists,
	.rename = posix_rename,
	.unlink = posix_unlink,
	.truncate = posix_truncate,
	.preallocate = posix_preallocate,
	.mkdir = posix_mkdir,
	.list_dir = posix_list_dir,
	.sync_dir = posix_sync_dir,
	.lock = posix_lock,
	.unlock = posix_unlock,
};

static struct store_env posix_env = { .ops = &posix_ops };

struct store_env *store_env_posix(void)
{
	return &posix_env;
}

/* ---- helpers over any env ---- */

void env_free_names(char **names, size_t count)
{
	if (!names)
		return;
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
}

/*
 * Write tmp = "dir/name.tmp", sync it, rename it over "dir/name" and sync the
 * directory.  A crash at any point leaves either the old file or the new one
 * (plus, perhaps, a stale .tmp that the store deletes at open).  On failure
 * the tmp file is unlinked and the first error returned.
 */
int env_write_file_atomic(struct store_env *env, const char *dir,
			  const char *name, const void *data, size_t len)
{
	char *tmp = NULL, *dst = NULL;
	struct env_wfile *f = NULL;
	int rc;
	if (asprintf(&tmp, "%s/%s.tmp", dir, name) < 0) {
		tmp = NULL;
		rc = -ENOMEM;
		goto out;
	}
	if (asprintf(&dst, "%s/%s", dir, name) < 0) {
		dst = NULL;
		rc = -ENOMEM;
		goto out;
	}
	rc = env->ops->open_writable(env, tmp, &f);
	if (rc)
		goto out;
	rc = env->ops->append(f, data, len);
	if (rc == 0)
		rc = env->ops->sync(f);
	int crc = env->ops->close_writable(f);
	if (rc == 0)
		rc = crc;
	if (rc)
		goto unlink_tmp;
	rc = env->ops->rename(env, tmp, dst);
	if (rc)
		goto unlink_tmp;
	/* The rename happened: the tmp name is gone, nothing to unlink. */
	rc = env->ops->sync_dir(env, dir);
	goto out;
unlink_tmp:
	/* Best effort: a leftover .tmp is removed at the next open anyway. */
	(void)env->ops->unlink(env, tmp);
out:
	free(tmp);
	free(dst);
	return rc;
}

/*
 * Read all of path into a malloc'd buffer.  The buffer has one extra NUL
 * byte after *len bytes so small text files (CURRENT) can be parsed as
 * strings.  Reads until end of file, so a file that grows meanwhile is
 * read whole as of the last pread.
 */
int env_read_file(struct store_env *env, const char *path, uint8_t **data,
		  size_t *len)
{
	struct env_rfile *f = NULL;
	uint8_t *buf = NULL;
	uint64_t size = 0;
	int rc = env->ops->file_size(env, path, &size);
	if (rc)
		return rc;
	if (size > SIZE_MAX / 2)
		return -EFBIG;
	rc = env->ops->open_readable(env, path, &f);
	if (rc)
		return rc;
	/* One byte for the NUL and one so that a whole read ends short. */
	size_t cap = (size_t)size + 2, have = 0;
	buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (cap - have < 2) {
			uint8_t *n = realloc(buf, cap * 2);
			if (!n) {
				rc = -ENOMEM;
				goto out;
			}
			buf = n;
			cap *= 2;
		}
		size_t want = cap - have - 1, got = 0;
		rc = env->ops->pread(f, buf + have, want, have, &got);
		if (rc)
			goto out;
		have += got;
		if (got < want)
			break;
	}
	buf[have] = 0;
	*data = buf;
	*len = have;
	buf = NULL;
out:
	free(buf);
	env->ops->close_readable(f);
	return rc;
}

int env_pread_checked(struct store_env *env, struct env_rfile *f, void *buf, size_t len,
		      uint64_t off, size_t *got,
		      int (*check)(void *ctx, const void *buf, size_t got), void *ctx)
{
	if (env->ops->pread_checked)
		return env->ops->pread_checked(f, buf, len, off, got, check, ctx);
	int rc = env->ops->pread(f, buf, len, off, got);
	return rc ? rc : check(ctx, buf, *got);
}

int env_copy_file(struct store_env *env, const char *from, const char *to)
{
	enum { CHUNK = 1 << 20 };
	char *tmp = NULL, *dir = NULL;
	struct env_rfile *in = NULL;
	struct env_wfile *out = NULL;
	uint8_t *buf = malloc(CHUNK);
	int rc = buf ? 0 : -ENOMEM;
	if (rc == 0 && asprintf(&tmp, "%s.heal", to) < 0) {
		tmp = NULL;
		rc = -ENOMEM;
	}
	if (rc == 0 && !(dir = strdup(to)))
		rc = -ENOMEM;
	if (rc)
		goto out;
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = 0;
	else
		strcpy(dir, slash ? "/" : ".");
	if ((rc = env->ops->open_readable(env, from, &in)))
		goto out;
	if ((rc = env->ops->open_writable(env, tmp, &out)))
		goto out;
	for (uint64_t off = 0;;) {
		size_t got = 0;
		if ((rc = env->ops->pread(in, buf, CHUNK, off, &got)))
			break;
		if (got && (rc = env->ops->append(out, buf, got)))
			break;
		off += got;
		if (got < CHUNK)
			break;
	}
	if (rc == 0)
		rc = env->ops->sync(out);
	int c = env->ops->close_writable(out);
	out = NULL;
	if (rc == 0)
		rc = c;
	if (rc == 0)
		rc = env->ops->rename(env, tmp, to);
	if (rc == 0)
		rc = env->ops->sync_dir(env, dir);
	else
		(void)env->ops->unlink(env, tmp); /* best effort: a leftover .heal goes at open */
out:
	if (in)
		env->ops->close_readable(in);
	free(buf);
	free(tmp);
	free(dir);
	return rc;
}
