/*
 * tree.c: consistency walk of a quiescent tree (see tree.h).
 * Recursion is by path; inode link counts are checked after the walk by
 * sorting every (ino, nlink) seen under a name that is not a directory.
 */
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* snprintf that may truncate (paths are bounded by the tests' namespaces);
 * the result is the length it wanted, as snprintf's. */
static int fmt(char *out, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));

static int fmt(char *out, size_t cap, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(out, cap, f, ap);
	va_end(ap);
	return n;
}

struct seen {
	ino_t ino;
	nlink_t nlink;
	char *path;
};

struct walk {
	const char *root;
	const char *tag;
	tree_file_fn fn;
	void *arg;
	struct tree_stats st;
	int problems;
	struct seen *seen;
	size_t nseen, capseen;
	unsigned char *buf;
	size_t cap;
};

uint64_t tree_hash(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void problem(struct walk *w, const char *rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void problem(struct walk *w, const char *rel, const char *fmt, ...)
{
	w->problems++;
	if (w->problems > 50)
		return;
	fprintf(stderr, "%s: %s/%s: ", w->tag, w->root, rel);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_seen(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void remember(struct walk *w, const char *rel, const struct stat *st)
{
	if (w->nseen == w->capseen) {
		w->capseen = w->capseen ? w->capseen * 2 : 256;
		w->seen = realloc(w->seen, w->capseen * sizeof(*w->seen));
		if (!w->seen)
			abort();
	}
	w->seen[w->nseen++] = (struct seen){st->st_ino, st->st_nlink, strdup(rel)};
}

/* Read the whole file into w->buf; check the byte count against st_size. */
static void check_file(struct walk *w, const char *path, const char *rel, const struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0) {
		problem(w, rel, "open fails: %s", strerror(errno));
		return;
	}
	size_t len = 0;
	for (;;) {
		if (len == w->cap) {
			w->cap = w->cap ? w->cap * 2 : (1u << 20);
			w->buf = realloc(w->buf, w->cap);
			if (!w->buf)
				abort();
		}
		ssize_t n = read(fd, w->buf + len, w->cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			problem(w, rel, "read fails at byte %zu: %s", len, strerror(errno));
			close(fd);
			return;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (close(fd) != 0)
		problem(w, rel, "close fails: %s", strerror(errno));
	if ((long long)len != (long long)st->st_size)
		problem(w, rel, "read %zu bytes but st_size is %lld", len, (long long)st->st_size);
	w->st.bytes += (long long)len;
	if (w->fn)
		w->problems += w->fn(w->arg, rel, st, w->buf, len);
}

static void walk_dir(struct walk *w, const char *rel, const struct stat *dst, int depth)
{
	char path[8192];
	fmt(path, sizeof(path), "%s%s%s", w->root, *rel ? "/" : "", rel);
	DIR *d = opendir(path);
	if (!d) {
		problem(w, rel, "opendir fails: %s", strerror(errno));
		return;
	}
	char **names = NULL;
	unsigned char *types = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			types = realloc(types, cap);
			if (!names || !types)
				abort();
		}
		types[n] = de->d_type;
		names[n++] = strdup(de->d_name);
		errno = 0;
	}
	if (errno)
		problem(w, rel, "readdir fails: %s", strerror(errno));
	closedir(d);

	/* d_type goes with its name through the sort: sort pairs by index. */
	size_t *order = malloc((n + 1) * sizeof(*order));
	char **sorted = malloc((n + 1) * sizeof(*sorted));
	if (!order || !sorted)
		abort();
	if (n) {
		memcpy(sorted, names, n * sizeof(*names));
		qsort(sorted, n, sizeof(*sorted), cmp_names);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (names[j] == sorted[i]) {
				order[i] = j;
				break;
			}

	long subdirs = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = sorted[i];
		unsigned char dt = types[order[i]];
		char crel[8192], cpath[8192];
		fmt(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "", name);
		fmt(cpath, sizeof(cpath), "%s/%s", w->root, crel);
		if (i > 0 && !strcmp(sorted[i - 1], name))
			problem(w, crel, "readdir lists this name twice");
		struct stat st;
		if (lstat(cpath, &st) != 0) {
			problem(w, crel, "listed by readdir but lstat fails: %s", strerror(errno));
			continue;
		}
		if (dt != DT_UNKNOWN && dt != IFTODT(st.st_mode))
			problem(w, crel, "readdir d_type %u but lstat type %u", dt,
				(unsigned)IFTODT(st.st_mode));
		if (S_ISDIR(st.st_mode)) {
			subdirs++;
			w->st.dirs++;
			if (depth < 64)
				walk_dir(w, crel, &st, depth + 1);
			else
				problem(w, crel, "directories nest deeper than 64");
			continue;
		}
		remember(w, crel, &st);
		if (S_ISREG(st.st_mode)) {
			w->st.files++;
			check_file(w, cpath, crel, &st);
		} else if (S_ISLNK(st.st_mode)) {
			w->st.symlinks++;
			char target[8192];
			ssize_t len = readlink(cpath, target, sizeof(target));
			if (len < 0)
				problem(w, crel, "readlink fails: %s", strerror(errno));
			else if (len != st.st_size)
				problem(w, crel, "readlink gives %zd bytes but st_size is %lld", len,
					(long long)st.st_size);
		} else {
			w->st.others++;
		}
	}
	if ((long long)dst->st_nlink != 2 + subdirs)
		problem(w, rel, "directory st_nlink %lld, expected 2 + %ld subdirectories",
			(long long)dst->st_nlink, subdirs);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(types);
	free(order);
	free(sorted);
}

int tree_check(const char *root, const char *tag, tree_file_fn fn, void *arg,
	       struct tree_stats *stats)
{
	struct walk w = {.root = root, .tag = tag, .fn = fn, .arg = arg};
	struct stat st;
	if (lstat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: %s: not a directory (errno %d)\n", tag, root, errno);
		return 1;
	}
	w.st.dirs = 1;
	walk_dir(&w, "", &st, 0);

	/* An empty tree (a crash before the first file) has no array: qsort
	 * takes no null pointer, even for no elements (UBSan). */
	if (w.nseen)
		qsort(w.seen, w.nseen, sizeof(*w.seen), cmp_seen);
	for (size_t i = 0; i < w.nseen;) {
		size_t j = i;
		while (j < w.nseen && w.seen[j].ino == w.seen[i].ino)
			j++;
		long long names = (long long)(j - i);
		for (size_t k = i; k < j; k++)
			if ((long long)w.seen[k].nlink != names)
				problem(&w, w.seen[k].path, "st_nlink %lld but %lld names found",
					(long long)w.seen[k].nlink, names);
		i = j;
	}
	for (size_t i = 0; i < w.nseen; i++)
		free(w.seen[i].path);
	free(w.seen);
	free(w.buf);
	if (w.problems > 50)
		fprintf(stderr, "%s: ... %d problems in all\n", tag, w.problems);
	if (stats)
		*stats = w.st;
	return w.problems;
}
