/*
 * eiofs: a passthrough FUSE filesystem that mirrors SOURCE at MOUNTPOINT
 * and makes chosen files fail like a failing disk, for the tests that
 * evacuate a failing backing disk (tests/disk/).
 *
 *   eiofs SOURCE MOUNTPOINT RULEFILE [fuse options...]
 *
 * SOURCE and RULEFILE are made absolute at start (fuse_main without -f
 * changes to /).  MOUNTPOINT and the options go to fuse_main.
 *
 * RULEFILE holds one rule per line, a path relative to SOURCE with no
 * leading slash; empty lines and lines starting with '#' are ignored:
 *
 *   .lsmfs/sections/5/17.0     read() of this file fails with EIO; open,
 *                              getattr, lseek and write still work (a bad
 *                              sector)
 *   .lsmfs/sections/5/         a directory (trailing '/'): opendir and
 *                              readdir of it and of any directory below it
 *                              fail with EIO, and so does read() of any
 *                              file below it
 *   .lsmfs/sections/5/+        a directory whose listing is damaged:
 *                              opendir works, readdir fails with EIO;
 *                              its files read as usual
 *
 *   stall .lsmfs/sections/5/17.0
 *                              read() of this file blocks for as long as
 *                              the rule is there (a disk that stopped
 *                              answering), then reads as usual
 *   stall statfs               statfs() blocks for as long as the rule is
 *                              there
 *   stall-write .lsmfs/sections/5/17.0
 *                              write() of this file blocks for as long as
 *                              the rule is there, then writes as usual
 *   write .lsmfs/sections/5/17.0
 *                              write() and fsync() of this file fail with
 *                              EIO (a disk that no longer takes writes)
 *
 * RULEFILE may be missing (no rules) and may change while mounted: it is
 * stat()ed at each read and opendir and read again when its inode, size,
 * mtime or ctime changed.  Replacing it with rename() is the cleanest.
 * Writes pass through (held up only by stall-write), but for the files
 * of write rules.
 *
 * Every read reaches the daemon (direct_io, no attribute or entry cache),
 * so a rule applies from the next read on.  O_DIRECT is dropped when the
 * backing file is opened: the buffers libfuse hands over are not aligned,
 * and direct_io already keeps the mount out of the page cache.  Extended
 * attributes go through SOURCE's full path (there are no *at() calls for
 * them); everything else goes through a dirfd of SOURCE and the *at()
 * calls.
 */
#define FUSE_USE_VERSION 31
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The FUSE ops have fixed signatures; not every op uses every argument. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static int src_fd = -1;          /* dirfd of SOURCE */
static char *src_path;           /* SOURCE, absolute */

/* ---- rules ---- */

static struct {
	pthread_mutex_t lock;
	char *path;              /* RULEFILE, absolute */
	bool loaded;             /* st describes the file the rules came from */
	struct stat st;
	char **v;                /* the rules, as written */
	size_t n;
} rules = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void rules_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void rules_set(char **v, size_t n)
{
	rules_free(rules.v, rules.n);
	rules.v = v;
	rules.n = n;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* One line of RULEFILE: the rule it holds, or NULL for none. */
static char *rule_of(char *line)
{
	size_t len = strlen(line);

	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	while (*line == '/')
		line++;
	if (!*line || *line == '#')
		return NULL;
	return strdup(line);
}

/* Parse f into the rules; keeps the old ones when memory runs out. */
static void rules_parse(FILE *f)
{
	char *line = NULL, **v = NULL, *r;
	size_t cap = 0, n = 0, vcap = 0;

	while (getline(&line, &cap, f) >= 0) {
		r = rule_of(line);
		if (!r)
			continue;
		if (n == vcap) {
			char **nv = realloc(v, (vcap = vcap * 2 + 8) * sizeof(*v));

			if (!nv)
				goto fail;
			v = nv;
		}
		v[n++] = r;
	}
	free(line);
	rules_set(v, n);
	return;
fail:
	free(r);
	free(line);
	rules_free(v, n);
}

/* Called with rules.lock held: load RULEFILE again if it changed. */
static void rules_refresh(void)
{
	struct stat st;
	FILE *f;

	if (stat(rules.path, &st) != 0) {
		rules.loaded = false;
		rules_set(NULL, 0);
		return;
	}
	if (rules.loaded && same_file(&st, &rules.st))
		return;
	f = fopen(rules.path, "re");
	if (!f || fstat(fileno(f), &rules.st) != 0) {
		if (f)
			fclose(f);
		rules.loaded = false;
		rules_set(NULL, 0);
		return;
	}
	rules.loaded = true;
	rules_parse(f);
	fclose(f);
}

/* rel is the directory rule dir ("d/", len n) or below it. */
static bool under(const char *rel, const char *dir, size_t n)
{
	return strncmp(rel, dir, n - 1) == 0 &&
	       (rel[n - 1] == '\0' || rel[n - 1] == '/');
}

/* What is done to rel, for rules_fail. */
enum doing { READ, OPENDIR, READDIR, STALL, STALL_WRITE, WRITE };

/* Whether doing that to rel (relative to SOURCE) fails. */
static bool rules_fail(const char *rel, enum doing what)
{
	bool dir = what != READ && what != WRITE;
	bool bad = false;

	pthread_mutex_lock(&rules.lock);
	rules_refresh();
	for (size_t i = 0; i < rules.n && !bad; i++) {
		const char *r = rules.v[i];
		size_t n = strlen(r);

		if (!strncmp(r, "stall ", 6))
			bad = what == STALL && !strcmp(rel, r + 6);
		else if (!strncmp(r, "stall-write ", 12))
			bad = what == STALL_WRITE && !strcmp(rel, r + 12);
		else if (!strncmp(r, "write ", 6))
			bad = what == WRITE && !strcmp(rel, r + 6);
		else if (what == STALL || what == STALL_WRITE || what == WRITE)
			bad = false;
		else if (n >= 2 && !strcmp(r + n - 2, "/+"))
			bad = what == READDIR && strlen(rel) == n - 2 &&
			      !strncmp(rel, r, n - 2);
		else if (r[n - 1] != '/')
			bad = !dir && strcmp(rel, r) == 0;
		else if (dir)
			bad = under(rel, r, n);
		else
			bad = strncmp(rel, r, n) == 0;
	}
	pthread_mutex_unlock(&rules.lock);
	return bad;
}

/* ---- helpers ---- */

/* The FUSE path relative to SOURCE, for the *at() calls. */
static const char *rel(const char *path)
{
	return path[1] ? path + 1 : ".";
}

static int err(int r)
{
	return r < 0 ? -errno : 0;
}

/* Give an entry just created the caller's ownership; root keeps its own. */
static int own(const char *p)
{
	struct fuse_context *c = fuse_get_context();

	if (c->uid == 0)
		return 0;
	return err(fchownat(src_fd, p, c->uid, c->gid, AT_SYMLINK_NOFOLLOW));
}

/* SOURCE/path in buf, for the calls that have no *at() form. */
static int full(char *buf, const char *path)
{
	int n = snprintf(buf, PATH_MAX, "%s%s", src_path, path);

	return n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* ---- attributes ---- */

static int eio_getattr(const char *path, struct stat *st,
		       struct fuse_file_info *fi)
{
	if (fi)
		return err(fstat(fi->fh, st));
	return err(fstatat(src_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int eio_access(const char *path, int mask)
{
	return err(faccessat(src_fd, rel(path), mask, 0));
}

static int eio_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(src_fd, rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int eio_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (fi)
		return err(fchmod(fi->fh, mode));
	return err(fchmodat(src_fd, rel(path), mode, 0));
}

static int eio_chown(const char *path, uid_t uid, gid_t gid,
		     struct fuse_file_info *fi)
{
	if (fi)
		return err(fchown(fi->fh, uid, gid));
	return err(fchownat(src_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

static int eio_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, r;

	if (fi)
		return err(ftruncate(fi->fh, size));
	fd = openat(src_fd, rel(path), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = err(ftruncate(fd, size));
	close(fd);
	return r;
}

static int eio_utimens(const char *path, const struct timespec ts[2],
		       struct fuse_file_info *fi)
{
	if (fi)
		return err(futimens(fi->fh, ts));
	return err(utimensat(src_fd, rel(path), ts, AT_SYMLINK_NOFOLLOW));
}

static int eio_statfs(const char *path, struct statvfs *sv)
{
	while (rules_fail("statfs", STALL)) /* "stall statfs" */
		usleep(20000);
	return err(fstatvfs(src_fd, sv));
}

/* ---- names ---- */

static int eio_mknod(const char *path, mode_t mode, dev_t rdev)
{
	const char *p = rel(path);
	int r;

	if (S_ISFIFO(mode))
		r = err(mkfifoat(src_fd, p, mode));
	else
		r = err(mknodat(src_fd, p, mode, rdev));
	return r ? r : own(p);
}

static int eio_mkdir(const char *path, mode_t mode)
{
	int r = err(mkdirat(src_fd, rel(path), mode));

	return r ? r : own(rel(path));
}

static int eio_symlink(const char *target, const char *path)
{
	int r = err(symlinkat(target, src_fd, rel(path)));

	return r ? r : own(rel(path));
}

static int eio_unlink(const char *path)
{
	return err(unlinkat(src_fd, rel(path), 0));
}

static int eio_rmdir(const char *path)
{
	return err(unlinkat(src_fd, rel(path), AT_REMOVEDIR));
}

static int eio_rename(const char *from, const char *to, unsigned int flags)
{
	return err(renameat2(src_fd, rel(from), src_fd, rel(to), flags));
}

static int eio_link(const char *from, const char *to)
{
	return err(linkat(src_fd, rel(from), src_fd, rel(to), 0));
}

/* ---- files ---- */

static int open_flags(const struct fuse_file_info *fi)
{
	return (fi->flags & ~O_DIRECT) | O_CLOEXEC;
}

static int eio_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(src_fd, rel(path), open_flags(fi));

	if (fd < 0)
		return -errno;
	fi->fh = fd;
	return 0;
}

static int eio_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_context *c = fuse_get_context();
	int fd = openat(src_fd, rel(path), open_flags(fi) | O_CREAT, mode);

	if (fd < 0)
		return -errno;
	if (c->uid != 0 && fchown(fd, c->uid, c->gid) != 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	fi->fh = fd;
	return 0;
}

static int eio_read(const char *path, char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	ssize_t n;

	/* path is NULL once the file was unlinked: no rule can name it */
	if (path && rules_fail(rel(path), READ))
		return -EIO;
	while (path && rules_fail(rel(path), STALL))
		usleep(20000);
	n = pread(fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int eio_write(const char *path, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	while (path && rules_fail(rel(path), STALL_WRITE))
		usleep(20000);
	if (path && rules_fail(rel(path), WRITE))
		return -EIO;
	ssize_t n = pwrite(fi->fh, buf, size, off);

	return n < 0 ? -errno : (int)n;
}

static int eio_flush(const char *path, struct fuse_file_info *fi)
{
	return err(close(dup(fi->fh)));
}

static int eio_release(const char *path, struct fuse_file_info *fi)
{
	close(fi->fh);
	return 0;
}

static int eio_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	if (path && rules_fail(rel(path), WRITE))
		return -EIO;
	return err(datasync ? fdatasync(fi->fh) : fsync(fi->fh));
}

static int eio_fallocate(const char *path, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	return err(fallocate(fi->fh, mode, off, len));
}

static off_t eio_lseek(const char *path, off_t off, int whence,
		       struct fuse_file_info *fi)
{
	off_t r = lseek(fi->fh, off, whence);

	return r < 0 ? -errno : r;
}

/* ---- directories ---- */

struct edir {
	DIR *dp;
	struct dirent *ent;      /* read but not yet taken by the filler */
	off_t off;               /* where dp stands, as telldir() gives it */
};

static struct edir *edir_of(const struct fuse_file_info *fi)
{
	return (struct edir *)(uintptr_t)fi->fh;
}

static int eio_opendir(const char *path, struct fuse_file_info *fi)
{
	struct edir *d;
	int fd;

	if (rules_fail(rel(path), OPENDIR))
		return -EIO;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	fd = openat(src_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d->dp = fdopendir(fd))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		free(d);
		return -e;
	}
	fi->fh = (uintptr_t)d;
	return 0;
}

static int eio_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		       off_t off, struct fuse_file_info *fi,
		       enum fuse_readdir_flags flags)
{
	struct edir *d = edir_of(fi);

	if (path && rules_fail(rel(path), READDIR))
		return -EIO;
	if (off != d->off) {
		seekdir(d->dp, off);
		d->ent = NULL;
		d->off = off;
	}
	for (;;) {
		struct stat st = { 0 };
		off_t next;

		if (!d->ent) {
			errno = 0;
			d->ent = readdir(d->dp);
			if (!d->ent)
				return -errno;
		}
		st.st_ino = d->ent->d_ino;
		st.st_mode = DTTOIF(d->ent->d_type);
		next = telldir(d->dp);
		if (filler(buf, d->ent->d_name, &st, next, 0))
			return 0;
		d->ent = NULL;
		d->off = next;
	}
}

static int eio_releasedir(const char *path, struct fuse_file_info *fi)
{
	struct edir *d = edir_of(fi);

	closedir(d->dp);
	free(d);
	return 0;
}

static int eio_fsyncdir(const char *path, int datasync,
			struct fuse_file_info *fi)
{
	int fd = dirfd(edir_of(fi)->dp);

	return err(datasync ? fdatasync(fd) : fsync(fd));
}

/* ---- extended attributes ---- */

static int eio_setxattr(const char *path, const char *name, const char *val,
			size_t size, int flags)
{
	char p[PATH_MAX];
	int r = full(p, path);

	return r ? r : err(lsetxattr(p, name, val, size, flags));
}

static int eio_getxattr(const char *path, const char *name, char *val,
			size_t size)
{
	char p[PATH_MAX];
	int r = full(p, path);
	ssize_t n;

	if (r)
		return r;
	n = lgetxattr(p, name, val, size);
	return n < 0 ? -errno : (int)n;
}

static int eio_listxattr(const char *path, char *list, size_t size)
{
	char p[PATH_MAX];
	int r = full(p, path);
	ssize_t n;

	if (r)
		return r;
	n = llistxattr(p, list, size);
	return n < 0 ? -errno : (int)n;
}

static int eio_removexattr(const char *path, const char *name)
{
	char p[PATH_MAX];
	int r = full(p, path);

	return r ? r : err(lremovexattr(p, name));
}

/* ---- setup ---- */

static void *eio_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;
	cfg->direct_io = 1;
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->hard_remove = 1;
	return NULL;
}

static const struct fuse_operations eio_ops = {
	.init        = eio_init,
	.getattr     = eio_getattr,
	.access      = eio_access,
	.readlink    = eio_readlink,
	.mknod       = eio_mknod,
	.mkdir       = eio_mkdir,
	.symlink     = eio_symlink,
	.unlink      = eio_unlink,
	.rmdir       = eio_rmdir,
	.rename      = eio_rename,
	.link        = eio_link,
	.chmod       = eio_chmod,
	.chown       = eio_chown,
	.truncate    = eio_truncate,
	.utimens     = eio_utimens,
	.open        = eio_open,
	.create      = eio_create,
	.read        = eio_read,
	.write       = eio_write,
	.statfs      = eio_statfs,
	.flush       = eio_flush,
	.release     = eio_release,
	.fsync       = eio_fsync,
	.opendir     = eio_opendir,
	.readdir     = eio_readdir,
	.releasedir  = eio_releasedir,
	.fsyncdir    = eio_fsyncdir,
	.fallocate   = eio_fallocate,
	.lseek       = eio_lseek,
	.setxattr    = eio_setxattr,
	.getxattr    = eio_getxattr,
	.listxattr   = eio_listxattr,
	.removexattr = eio_removexattr,
};

/* p made absolute without resolving it (it need not exist yet). */
static char *absolute(const char *p)
{
	char cwd[PATH_MAX], *r;

	if (p[0] == '/')
		return strdup(p);
	if (!getcwd(cwd, sizeof(cwd)) || asprintf(&r, "%s/%s", cwd, p) < 0)
		return NULL;
	return r;
}

int main(int argc, char **argv)
{
	char **fargv;

	if (argc < 4) {
		fprintf(stderr, "usage: %s SOURCE MOUNTPOINT RULEFILE [fuse options...]\n",
			argv[0]);
		return 2;
	}
	src_path = realpath(argv[1], NULL);
	rules.path = absolute(argv[3]);
	if (!src_path || !rules.path) {
		perror(argv[1]);
		return 1;
	}
	src_fd = open(src_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src_fd < 0) {
		perror(src_path);
		return 1;
	}
	/* argv[0] MOUNTPOINT options..., and the NULL */
	fargv = calloc(argc - 1, sizeof(*fargv));
	if (!fargv)
		return 1;
	fargv[0] = argv[0];
	fargv[1] = argv[2];
	for (int i = 4; i < argc; i++)
		fargv[i - 2] = argv[i];
	umask(0);
	return fuse_main(argc - 2, fargv, &eio_ops, NULL);
}
