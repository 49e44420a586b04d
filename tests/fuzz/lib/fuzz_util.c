/*
 * fuzz_util.c: the in-memory read env, the harness assertion and the
 * scratch directory (fuzz_util.h).
 */
#include "fuzz_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;
	dprintf(2, "%s:%d: fuzz check failed: %s: ", file, line, cond);
	va_start(ap, fmt);
	vdprintf(2, fmt, ap);
	va_end(ap);
	dprintf(2, "\n");
	abort();
}

/* ---- the in-memory env ---- */

struct env_rfile {
	struct fuzz_memenv *m;
};

static struct fuzz_memenv *mem_of(struct store_env *env)
{
	return (struct fuzz_memenv *)env; /* env is the first member */
}

static int mem_open_readable(struct store_env *env, const char *path,
			     struct env_rfile **out)
{
	(void)path; /* every path is the one buffer */
	struct env_rfile *f = malloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->m = mem_of(env);
	*out = f;
	return 0;
}

static int mem_pread(struct env_rfile *f, void *buf, size_t len, uint64_t off,
		     size_t *got)
{
	size_t size = f->m->size;
	size_t n = off >= size ? 0 : (size - (size_t)off < len ? size - (size_t)off : len);
	if (n)
		memcpy(buf, f->m->data + off, n);
	*got = n;
	return 0;
}

static void mem_close_readable(struct env_rfile *f)
{
	free(f);
}

static int mem_file_size(struct store_env *env, const char *path, uint64_t *size)
{
	(void)path;
	*size = mem_of(env)->size;
	return 0;
}

static int mem_exists(struct store_env *env, const char *path)
{
	(void)env;
	(void)path;
	return 0;
}

static int mem_open_writable(struct store_env *env, const char *path,
			     struct env_wfile **out)
{
	(void)env;
	(void)path;
	(void)out;
	return -ENOSYS;
}

static const struct store_env_ops mem_ops = {
	.open_writable = mem_open_writable,
	.open_readable = mem_open_readable,
	.pread = mem_pread,
	.close_readable = mem_close_readable,
	.file_size = mem_file_size,
	.exists = mem_exists,
};

void fuzz_memenv_init(struct fuzz_memenv *m, const uint8_t *data, size_t size)
{
	m->env.ops = &mem_ops;
	m->data = data;
	m->size = size;
}

/* ---- the scratch directory ---- */

static char dir_path[PATH_MAX];

static void dir_remove(void)
{
	fuzz_dir_clear();
	(void)rmdir(dir_path); /* best effort at exit */
}

const char *fuzz_dir(void)
{
	if (dir_path[0])
		return dir_path;
	const char *base = getenv("TMPDIR");
	if (!base || !*base) {
		struct stat st;
		base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	}
	snprintf(dir_path, sizeof(dir_path), "%s/lsmfs-fuzz-XXXXXX", base);
	if (!mkdtemp(dir_path)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(dir_remove);
	return dir_path;
}

void fuzz_dir_clear(void)
{
	const char *d = fuzz_dir();
	DIR *dir = opendir(d);
	if (!dir) {
		perror("fuzz: opendir");
		abort();
	}
	struct dirent *e;
	char p[PATH_MAX];
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", d, e->d_name);
		(void)unlink(p); /* best effort: a leftover only costs space */
	}
	closedir(dir);
}

void fuzz_write_file(const char *name, const void *data, size_t len, char *path)
{
	snprintf(path, PATH_MAX, "%s/%s", fuzz_dir(), name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(path);
		abort();
	}
	const uint8_t *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w <= 0) {
			perror(path);
			abort();
		}
		p += w;
		len -= (size_t)w;
	}
	close(fd);
}
