/*
 * test_powercut.c: power cuts through the whole filesystem (issue 14).
 *
 * lsmfs's two disks live on cutfs (cutfs.c), which logs every write, sync
 * and directory change the daemon (and mkfs) makes.  A seeded random
 * workload runs on a real lsmfs mount: create, write (sizes from a byte to
 * several chunks, sparse offsets), rename (over existing names too), link,
 * unlink, truncate (grow and shrink), fsync, fdatasync, fsync of
 * directories, mkdir, rmdir; file descriptors stay open across operations
 * so the writeback cache holds dirty pages.  It records what each
 * acknowledged sync promises, stamped with cutfs's sequence number:
 *  - fsync/fdatasync of path P: P holds exactly these bytes (README: "fsync
 *    of a file makes its chunk files and the store's commit log durable",
 *    so P's name is durable too), until the workload next changes the
 *    file's bytes or the name P;
 *  - fsync of directory D: D lists exactly these names, until the workload
 *    next changes D.
 * Then, for 1,000+ cut points k spread over the log (every sync, just
 * before and just after it, plus random points), replay.c materialises
 * what a power cut at k may leave (replay.h: only synced state, or that
 * plus a random subset of unsynced operations, or everything), lsmfs is
 * mounted on the result (must succeed), every promise valid at k is
 * checked, every file must read whole without an error, lsmfs is
 * unmounted cleanly and `fsck.lsmfs -n` must exit 0.
 * This runs with the writeback cache on and off (-o no_writeback).
 * Every mount's log (the daemon's stderr, in the mode's directory) must
 * not say "checksum mismatch": nothing a power cut leaves is damage
 * (SCHEMA.md "Chunk checksums", the crash rule).
 * With LSMFS_POWERCUT_COPIES=2 (meson test powercut-copies) the root gets
 * user.lsmfs.copies=2 right after mkfs's mount, synced before the
 * workload, so that every chunk has a copy on each disk; after the
 * workload's clean unmount every chunk file must be on both disks.
 *
 * A failure prints the seed, the mode, the cut point and what broke, and
 * keeps the image (and the log) under the scratch directory.
 * Environment: LSMFS_SEED replays a workload (the daemon's timing still
 * varies the log); LSMFS_POWERCUT_POINTS sets the random cut points per
 * mode (on top of those around every sync);
 * LSMFS_POWERCUT_OPS the workload's operations per mode; LSMFS_SOAK=1 runs
 * more of everything; LSMFS_POWERCUT_MAXFAIL stops a mode after that many
 * failing points (5); LSMFS_POWERCUT_ALLOW=NNNN[,NNNN...] tolerates a cut
 * point whose fsck complaints all carry listed codes (a knob for chasing
 * one bug with others open; no test sets it); LSMFS_POWERCUT_BREAK=1 is
 * the checker's self-test:
 * the replay forgets every file sync, and the test passes only if it
 * catches acknowledged fsyncs lost (mount and fsck verdicts ignored).
 * Scratch space is on /dev/shm when TMPDIR is not set.
 */
#include "fstest.h"
#include "oplog.h"
#include "replay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 10
#define MAX_NAMES 24
#define NDIRS 3 /* "", "d0", "d1": the root and two that come and go */
#define CHUNK (64 * 1024)

/* ---- the workload's model of the lsmfs tree ---- */

struct mfile {
	uint8_t *data;
	size_t size, cap;
	int nlink;
	int fd; /* open on lsmfs, or -1 */
	bool used;
};

struct mname {
	char path[64]; /* relative to the mount */
	int file;
	int dir;
};

enum { FACT_FILE, FACT_DIR };

struct fact {
	int kind;
	uint64_t from, until; /* valid for cut points in [from, until) */
	char path[64];        /* the file, or the directory ("" for the root) */
	int file;             /* FACT_FILE: the model file it promises */
	uint8_t *data;        /* FACT_FILE: its bytes */
	size_t size;
	char **names;         /* FACT_DIR: its entries */
	int nnames;
	const char *what;     /* "fsync", "fdatasync", "fsyncdir" */
};

struct run {
	uint64_t rng;
	const char *opts;      /* lsmfs mount options */
	char base[512];        /* this mode's scratch dir */
	char cut[600], log[600];
	char dlog[600];        /* the daemon's log, per mount (base/daemon.log) */
	struct fst f;          /* disks on cutfs */
	pid_t cutfs;
	struct mfile files[MAX_FILES];
	struct mname names[MAX_NAMES];
	int nnames;
	bool dir_exists[NDIRS];
	struct fact *facts;
	size_t nfacts, capfacts;
	uint64_t mkfs_seq, ops;
	int failures;
	bool checked; /* the workload ran and its log was replayed */
};

static const char *dir_path(int d)
{
	static const char *const p[NDIRS] = {"", "d0", "d1"};
	return p[d];
}

static uint64_t seq_of(struct run *r)
{
	char v[32];
	ssize_t n = getxattr(r->cut, "user.cutfs.seq", v, sizeof(v) - 1);
	if (n <= 0) {
		fprintf(stderr, "powercut: getxattr %s user.cutfs.seq: %s\n", r->cut, strerror(errno));
		exit(1);
	}
	v[n] = 0;
	return strtoull(v, NULL, 10);
}

static void mark(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mark(struct run *r, const char *fmt, ...)
{
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	(void)setxattr(r->cut, "user.cutfs.mark", text, strlen(text), 0); /* a note only */
}

static void mnt_path(struct run *r, const char *rel, char *out, size_t cap)
{
	fst_fmt(out, cap, "%s/%s", r->f.mnt, rel);
}

static void cutfs_abandon(struct run *r);

/* The workload cannot go on: say why, leave no mount behind. */
static void die(struct run *r, const char *what, const char *path)
{
	fprintf(stderr, "powercut: workload: %s %s: %s (seq %llu)\n", what, path, strerror(errno),
		(unsigned long long)seq_of(r));
	(void)fst_kill(&r->f);
	cutfs_abandon(r);
	exit(1);
}

/* Facts that a change to model file `file` (its bytes) or to the name
 * `path` ends, and the directory fact of path's parent. */
static void invalidate(struct run *r, uint64_t s, int file, const char *path, int dir)
{
	for (size_t i = 0; i < r->nfacts; i++) {
		struct fact *ft = &r->facts[i];
		if (ft->until != UINT64_MAX)
			continue;
		if (ft->kind == FACT_FILE &&
		    ((file >= 0 && ft->file == file) || (path && strcmp(ft->path, path) == 0)))
			ft->until = s;
		if (ft->kind == FACT_DIR && dir >= 0 && strcmp(ft->path, dir_path(dir)) == 0)
			ft->until = s;
	}
}

static struct fact *fact_new(struct run *r)
{
	if (r->nfacts == r->capfacts) {
		r->capfacts = r->capfacts ? r->capfacts * 2 : 256;
		r->facts = realloc(r->facts, r->capfacts * sizeof(*r->facts));
		if (!r->facts)
			abort();
	}
	struct fact *ft = &r->facts[r->nfacts++];
	memset(ft, 0, sizeof(*ft));
	ft->until = UINT64_MAX;
	return ft;
}

static int name_find(struct run *r, const char *path)
{
	for (int i = 0; i < r->nnames; i++)
		if (strcmp(r->names[i].path, path) == 0)
			return i;
	return -1;
}

static int file_fd(struct run *r, int file, const char *path)
{
	struct mfile *m = &r->files[file];
	if (m->fd < 0) {
		char p[400];
		mnt_path(r, path, p, sizeof(p));
		m->fd = open(p, O_RDWR | O_CLOEXEC);
		if (m->fd < 0)
			die(r, "open", p);
	}
	return m->fd;
}

static void file_close(struct run *r, int file)
{
	struct mfile *m = &r->files[file];
	if (m->fd >= 0 && close(m->fd) != 0)
		die(r, "close", "(file)");
	m->fd = -1;
}

static void model_resize(struct mfile *m, size_t size)
{
	if (size > m->cap) {
		m->cap = size + CHUNK;
		m->data = realloc(m->data, m->cap);
		if (!m->data)
			abort();
	}
	if (size > m->size)
		memset(m->data + m->size, 0, size - m->size);
	m->size = size;
}

/* Drop name index n from the model (the file keeps its other names). */
static void name_drop(struct run *r, int n)
{
	struct mfile *m = &r->files[r->names[n].file];
	if (--m->nlink == 0) {
		/* The last name: the workload forgets the file (its fd stays
		 * open a while sometimes: an open unlinked file). */
		if (m->fd >= 0 && fst_chance(&r->rng, 50))
			file_close(r, r->names[n].file);
		if (m->fd < 0)
			m->used = false;
	}
	r->names[n] = r->names[--r->nnames];
}

static void random_name(struct run *r, char *out, size_t cap, int *dir)
{
	int d;
	do
		d = (int)fst_rand_below(&r->rng, NDIRS);
	while (!r->dir_exists[d]);
	*dir = d;
	int k = (int)fst_rand_below(&r->rng, 10);
	if (d == 0)
		fst_fmt(out, cap, "f%d", k);
	else
		fst_fmt(out, cap, "%s/f%d", dir_path(d), k);
}

static void fill(struct run *r, uint8_t *p, size_t n)
{
	uint64_t x = fst_rand(&r->rng);
	for (size_t i = 0; i < n; i++) {
		if (i % 8 == 0)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

static void op_create(struct run *r, uint64_t s)
{
	int file = -1;
	for (int i = 0; i < MAX_FILES; i++)
		if (!r->files[i].used) {
			file = i;
			break;
		}
	char path[64];
	int dir;
	random_name(r, path, sizeof(path), &dir);
	if (file < 0 || name_find(r, path) >= 0 || r->nnames == MAX_NAMES)
		return;
	invalidate(r, s, -1, path, dir);
	char p[400];
	mnt_path(r, path, p, sizeof(p));
	int fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		die(r, "create", p);
	struct mfile *m = &r->files[file];
	m->used = true;
	m->size = 0;
	m->nlink = 1;
	m->fd = fd;
	r->names[r->nnames++] = (struct mname){.file = file, .dir = dir};
	snprintf(r->names[r->nnames - 1].path, 64, "%s", path);
}

static void op_write(struct run *r, uint64_t s, int n)
{
	int file = r->names[n].file;
	struct mfile *m = &r->files[file];
	size_t len;
	switch (fst_rand_below(&r->rng, 4)) {
	case 0: len = 1 + fst_rand_below(&r->rng, 100); break;
	case 1: len = 1 + fst_rand_below(&r->rng, 8192); break;
	case 2: len = 1 + fst_rand_below(&r->rng, CHUNK); break;
	default: len = 1 + fst_rand_below(&r->rng, 3 * CHUNK); break;
	}
	size_t off;
	switch (fst_rand_below(&r->rng, 4)) {
	case 0: off = m->size; break;                                    /* append */
	case 1: off = m->size + fst_rand_below(&r->rng, 2 * CHUNK); break; /* sparse */
	case 2: /* at or just below a chunk boundary */
		off = (size_t)fst_rand_below(&r->rng, 6) * CHUNK;
		off -= off && fst_chance(&r->rng, 50) ? 100 : 0;
		break;
	default: off = fst_rand_below(&r->rng, m->size + 1); break;
	}
	if (off + len > 8 * CHUNK) /* keep files small: the log is replayed often */
		return;
	invalidate(r, s, file, NULL, -1);
	size_t old = m->size;
	model_resize(m, off + len > old ? off + len : old);
	fill(r, m->data + off, len);
	int fd = file_fd(r, file, r->names[n].path);
	if (pwrite(fd, m->data + off, len, (off_t)off) != (ssize_t)len)
		die(r, "pwrite", r->names[n].path);
}

static void op_truncate(struct run *r, uint64_t s, int n)
{
	int file = r->names[n].file;
	struct mfile *m = &r->files[file];
	size_t size = fst_chance(&r->rng, 50) ? fst_rand_below(&r->rng, m->size + 1)
					       : m->size + fst_rand_below(&r->rng, 2 * CHUNK);
	invalidate(r, s, file, NULL, -1);
	model_resize(m, size);
	char p[400];
	mnt_path(r, r->names[n].path, p, sizeof(p));
	if (fst_chance(&r->rng, 50) ? ftruncate(file_fd(r, file, r->names[n].path), (off_t)size)
				    : truncate(p, (off_t)size))
		die(r, "truncate", p);
}

static void op_sync(struct run *r, int n)
{
	int file = r->names[n].file;
	bool data = fst_chance(&r->rng, 50);
	int fd = file_fd(r, file, r->names[n].path);
	if ((data ? fdatasync(fd) : fsync(fd)) != 0)
		die(r, data ? "fdatasync" : "fsync", r->names[n].path);
	struct mfile *m = &r->files[file];
	struct fact *ft = fact_new(r);
	ft->kind = FACT_FILE;
	ft->what = data ? "fdatasync" : "fsync";
	ft->from = seq_of(r);
	snprintf(ft->path, sizeof(ft->path), "%s", r->names[n].path);
	ft->file = file;
	ft->size = m->size;
	ft->data = malloc(m->size ? m->size : 1);
	if (!ft->data)
		abort();
	if (m->size) /* data is NULL for a file never written */
		memcpy(ft->data, m->data, m->size);
	mark(r, "%s %s acked", ft->what, ft->path);
}

static void op_syncdir(struct run *r, int d)
{
	char p[400];
	mnt_path(r, dir_path(d), p, sizeof(p));
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0)
		die(r, "fsync of directory", p);
	close(fd);
	struct fact *ft = fact_new(r);
	ft->kind = FACT_DIR;
	ft->what = "fsyncdir";
	ft->from = seq_of(r);
	snprintf(ft->path, sizeof(ft->path), "%s", dir_path(d));
	ft->names = calloc(MAX_NAMES + NDIRS, sizeof(char *));
	if (!ft->names)
		abort();
	for (int i = 0; i < r->nnames; i++)
		if (r->names[i].dir == d) {
			const char *slash = strrchr(r->names[i].path, '/');
			ft->names[ft->nnames++] = strdup(slash ? slash + 1 : r->names[i].path);
		}
	for (int i = 1; d == 0 && i < NDIRS; i++)
		if (r->dir_exists[i])
			ft->names[ft->nnames++] = strdup(dir_path(i));
	mark(r, "fsyncdir /%s acked", ft->path);
}

static void op_rename(struct run *r, uint64_t s, int n)
{
	char from[64], to[64];
	int dir;
	random_name(r, to, sizeof(to), &dir);
	snprintf(from, sizeof(from), "%s", r->names[n].path);
	if (strcmp(to, from) == 0)
		return;
	int t = name_find(r, to);
	if (t >= 0 && r->names[t].file == r->names[n].file)
		return; /* POSIX: renaming onto another link of itself does nothing */
	invalidate(r, s, -1, from, r->names[n].dir);
	invalidate(r, s, -1, to, dir);
	char a[400], b[400];
	mnt_path(r, from, a, sizeof(a));
	mnt_path(r, to, b, sizeof(b));
	if (rename(a, b) != 0)
		die(r, "rename", a);
	if (t >= 0)
		name_drop(r, t); /* moves the last name into slot t */
	n = name_find(r, from);
	snprintf(r->names[n].path, sizeof(r->names[n].path), "%s", to);
	r->names[n].dir = dir;
}

static void op_link(struct run *r, uint64_t s, int n)
{
	char to[64];
	int dir;
	random_name(r, to, sizeof(to), &dir);
	if (name_find(r, to) >= 0 || r->nnames == MAX_NAMES)
		return;
	invalidate(r, s, -1, to, dir);
	char a[400], b[400];
	mnt_path(r, r->names[n].path, a, sizeof(a));
	mnt_path(r, to, b, sizeof(b));
	if (link(a, b) != 0)
		die(r, "link", a);
	r->files[r->names[n].file].nlink++;
	r->names[r->nnames++] = (struct mname){.file = r->names[n].file, .dir = dir};
	snprintf(r->names[r->nnames - 1].path, 64, "%s", to);
}

static void op_unlink(struct run *r, uint64_t s, int n)
{
	invalidate(r, s, -1, r->names[n].path, r->names[n].dir);
	char p[400];
	mnt_path(r, r->names[n].path, p, sizeof(p));
	if (unlink(p) != 0)
		die(r, "unlink", p);
	name_drop(r, n);
}

static void op_mkdir_rmdir(struct run *r, uint64_t s)
{
	int d = 1 + (int)fst_rand_below(&r->rng, NDIRS - 1);
	char p[400];
	mnt_path(r, dir_path(d), p, sizeof(p));
	if (!r->dir_exists[d]) {
		invalidate(r, s, -1, dir_path(d), 0);
		if (mkdir(p, 0755) != 0)
			die(r, "mkdir", p);
		r->dir_exists[d] = true;
		return;
	}
	for (int i = 0; i < r->nnames; i++)
		if (r->names[i].dir == d)
			return; /* not empty */
	invalidate(r, s, -1, dir_path(d), 0);
	invalidate(r, s, -1, NULL, d);
	if (rmdir(p) != 0)
		die(r, "rmdir", p);
	r->dir_exists[d] = false;
}

static void workload(struct run *r, uint64_t nops)
{
	r->dir_exists[0] = true;
	for (int i = 0; i < MAX_FILES; i++)
		r->files[i].fd = -1;
	for (uint64_t i = 0; i < nops; i++) {
		uint64_t s = seq_of(r);
		unsigned pick = (unsigned)fst_rand_below(&r->rng, 100);
		int n = r->nnames ? (int)fst_rand_below(&r->rng, (uint64_t)r->nnames) : -1;
		if (n < 0 || pick < 12)
			op_create(r, s);
		else if (pick < 40)
			op_write(r, s, n);
		else if (pick < 48)
			op_truncate(r, s, n);
		else if (pick < 62)
			op_sync(r, n);
		else if (pick < 70) {
			int d;
			do
				d = (int)fst_rand_below(&r->rng, NDIRS);
			while (!r->dir_exists[d]);
			op_syncdir(r, d);
		} else if (pick < 77)
			op_rename(r, s, n);
		else if (pick < 82)
			op_link(r, s, n);
		else if (pick < 89)
			op_unlink(r, s, n);
		else if (pick < 94)
			op_mkdir_rmdir(r, s);
		else
			for (int f = 0; f < MAX_FILES; f++) /* let the kernel flush */
				if (r->files[f].fd >= 0 && fst_chance(&r->rng, 30)) {
					file_close(r, f);
					if (r->files[f].nlink == 0)
						r->files[f].used = false;
				}
	}
	for (int f = 0; f < MAX_FILES; f++) {
		file_close(r, f);
		if (r->files[f].nlink == 0)
			r->files[f].used = false;
	}
}

/* The workload's own model against the live mount: a model bug would make
 * every later verdict worthless. */
static int verify_live(struct run *r)
{
	int bad = 0;
	for (int i = 0; i < r->nnames; i++) {
		struct mfile *m = &r->files[r->names[i].file];
		char p[400];
		mnt_path(r, r->names[i].path, p, sizeof(p));
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		uint8_t *buf = malloc(m->size + 1);
		ssize_t got = fd >= 0 ? pread(fd, buf, m->size + 1, 0) : -1;
		if (got != (ssize_t)m->size || (m->size && memcmp(buf, m->data, m->size) != 0)) {
			fprintf(stderr, "powercut: live check: %s: %zd bytes, model %zu%s\n", p, got,
				m->size, got == (ssize_t)m->size ? " (bytes differ)" : "");
			bad++;
		}
		free(buf);
		if (fd >= 0)
			close(fd);
	}
	return bad;
}

/* ---- cutfs ---- */

static int cutfs_start(struct run *r)
{
	const char *bin = getenv("CUTFS_BIN");
	char err[700];
	fst_fmt(err, sizeof(err), "%s/cutfs.err", r->base);
	if (mkdir(r->cut, 0755) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(bin, bin, r->log, r->cut, "-f", "-s", (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	struct stat a, b;
	for (int i = 0; i < 2000; i++) {
		if (stat(r->base, &a) == 0 && stat(r->cut, &b) == 0 && a.st_dev != b.st_dev) {
			r->cutfs = pid;
			return 0;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		usleep(10000);
	}
	fprintf(stderr, "powercut: cutfs did not mount %s (see %s)\n", r->cut, err);
	return -1;
}

static int cutfs_stop(struct run *r)
{
	const char *argv[] = {"fusermount3", "-u", r->cut, NULL};
	char out[1024];
	if (fst_run(argv, out, sizeof(out)) != 0) {
		fprintf(stderr, "powercut: fusermount3 -u %s: %s\n", r->cut, out);
		return -1;
	}
	int st;
	waitpid(r->cutfs, &st, 0);
	r->cutfs = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "powercut: cutfs exited with status %d\n", st);
		return -1;
	}
	return 0;
}

/* Detach cutfs after a failure (its log no longer matters). */
static void cutfs_abandon(struct run *r)
{
	if (!r->cutfs)
		return;
	const char *argv[] = {"fusermount3", "-u", "-z", r->cut, NULL};
	(void)fst_run(argv, NULL, 0); /* best effort: the run already failed */
	waitpid(r->cutfs, NULL, 0);
	r->cutfs = 0;
}

/* ---- checking one cut point ---- */

struct point {
	size_t k;
	unsigned pct;
	uint64_t rng;
};

static int cmp_point(const void *a, const void *b)
{
	const struct point *x = a, *y = b;
	return x->k < y->k ? -1 : x->k > y->k;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The promise ft, checked on the mount at mnt.  Returns 0 or -1 with why. */
static int check_fact(const struct fact *ft, const char *mnt, char *why, size_t cap)
{
	char p[700];
	fst_fmt(p, sizeof(p), "%s/%s", mnt, ft->path);
	if (ft->kind == FACT_FILE) {
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fst_fmt(why, cap, "%s /%s (acked at seq %llu): open: %s", ft->what, ft->path,
				(unsigned long long)ft->from, strerror(errno));
			return -1;
		}
		uint8_t *buf = malloc(ft->size + 65536);
		size_t got = 0;
		ssize_t n;
		while ((n = read(fd, buf + got, ft->size + 65536 - got)) > 0)
			got += (size_t)n;
		close(fd);
		int rc = 0;
		if (n < 0) {
			fst_fmt(why, cap, "%s /%s: read: %s", ft->what, ft->path, strerror(errno));
			rc = -1;
		} else if (got != ft->size) {
			fst_fmt(why, cap, "%s /%s (acked at seq %llu): size %zu, synced %zu", ft->what,
				ft->path, (unsigned long long)ft->from, got, ft->size);
			rc = -1;
		} else {
			for (size_t i = 0; i < got; i++)
				if (buf[i] != ft->data[i]) {
					fst_fmt(why, cap, "%s /%s (acked at seq %llu): byte %zu is %u, "
						"synced %u (size %zu)", ft->what, ft->path,
						(unsigned long long)ft->from, i, buf[i], ft->data[i], got);
					rc = -1;
					break;
				}
		}
		free(buf);
		return rc;
	}
	DIR *d = opendir(p);
	if (!d) {
		fst_fmt(why, cap, "fsyncdir /%s (acked at seq %llu): opendir: %s", ft->path,
			(unsigned long long)ft->from, strerror(errno));
		return -1;
	}
	char *have[MAX_NAMES + NDIRS + 8];
	int nhave = 0;
	bool extra = false;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (!ft->path[0] && !strcmp(e->d_name, "lost+found")))
			continue;
		if (nhave < (int)(sizeof(have) / sizeof(have[0])))
			have[nhave++] = strdup(e->d_name);
		else
			extra = true;
	}
	closedir(d);
	char *want[MAX_NAMES + NDIRS];
	memcpy(want, ft->names, (size_t)ft->nnames * sizeof(char *));
	qsort(want, (size_t)ft->nnames, sizeof(char *), cmp_str);
	qsort(have, (size_t)nhave, sizeof(char *), cmp_str);
	int rc = 0;
	if (extra || nhave != ft->nnames)
		rc = -1;
	for (int i = 0; !rc && i < nhave; i++)
		if (strcmp(have[i], want[i]) != 0)
			rc = -1;
	if (rc) {
		size_t used = (size_t)fst_fmt(why, cap, "fsyncdir /%s (acked at seq %llu): lists",
					      ft->path, (unsigned long long)ft->from);
		for (int i = 0; i < nhave && used < cap; i++)
			used += (size_t)fst_fmt(why + used, cap - used, " %s", have[i]);
		if (used < cap)
			used += (size_t)fst_fmt(why + used, cap - used, "; synced:");
		for (int i = 0; i < ft->nnames && used < cap; i++)
			used += (size_t)fst_fmt(why + used, cap - used, " %s", want[i]);
	}
	for (int i = 0; i < nhave; i++)
		free(have[i]);
	return rc;
}

/* Read every file under dir whole: after a power cut each must read
 * (unsynced bytes may be anything, but an error is not a state any disk
 * could have left).  Returns the number of failures, the first in why. */
static int read_all(const char *dir, char *why, size_t cap)
{
	DIR *d = opendir(dir);
	if (!d) {
		fst_fmt(why, cap, "opendir %s: %s", dir, strerror(errno));
		return 1;
	}
	int bad = 0;
	struct dirent *e;
	static char buf[1 << 16];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[1024];
		fst_fmt(p, sizeof(p), "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(p, &st) != 0) {
			if (!bad++)
				fst_fmt(why, cap, "stat %s: %s", p, strerror(errno));
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			bad += read_all(p, why + (bad ? strlen(why) : 0), bad ? 0 : cap);
			continue;
		}
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : 0;
		off_t total = 0;
		while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
			total += n;
		if (n < 0 && !bad++)
			fst_fmt(why, cap, "reading %s (size %lld) at offset %lld: %s", p,
				(long long)st.st_size, (long long)total, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return bad;
}

/* Whether every complaint in fsck's output carries a code listed in
 * LSMFS_POWERCUT_ALLOW (comma-separated, e.g. "0208"). */
static bool only_allowed(const char *out)
{
	const char *allow = getenv("LSMFS_POWERCUT_ALLOW");
	if (!allow || !*allow)
		return false;
	int n = 0;
	for (const char *p = strstr(out, "LSMFS-"); p; p = strstr(p + 1, "LSMFS-")) {
		char code[5];
		memcpy(code, p + 6, 4);
		code[4] = 0;
		const char *hit = strstr(allow, code);
		if (strlen(p) < 10 || !hit || (hit != allow && hit[-1] != ',') ||
		    (hit[4] && hit[4] != ','))
			return false;
		n++;
	}
	return n > 0;
}

static void context(const struct oplog *log, size_t k)
{
	/* The workload's last note before k, and the records around k. */
	for (size_t i = k; i-- > 0;)
		if (log->recs[i].type == OPLOG_MARK) {
			fprintf(stderr, "  last workload note before the cut: seq %zu '%.*s'\n", i,
				(int)log->recs[i].len1, log->recs[i].name1);
			break;
		}
	for (size_t i = k > 3 ? k - 3 : 0; i < k + 2 && i < log->n; i++) {
		char what[256];
		oplog_describe(&log->recs[i], what, sizeof(what));
		fprintf(stderr, "  %s seq %zu: %s\n", i < k ? "kept   " : "cut off", i, what);
	}
}

/* LSMFS_POWERCUT_COPIES: the copies of every chunk (user.lsmfs.copies on the
 * root), 1 or 2. */
static unsigned copies = 1;

/* Lines of the daemon's log at path saying a checksum mismatch, into why
 * (up to cap); how many. */
static int log_mismatches(const char *path, char *why, size_t cap)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return 0;
	char line[1024];
	int n = 0;
	size_t used = 0;
	while (fgets(line, sizeof(line), fp))
		if (strstr(line, "checksum mismatch")) {
			if (used < cap)
				used += (size_t)fst_fmt(why + used, cap - used, "%s%s",
							n ? "" : "the daemon's log says: ", line);
			n++;
		}
	fclose(fp);
	return n;
}

/* The last lines of the daemon's log at path, into why (cap bytes). */
static void log_tail(const char *path, char *why, size_t cap)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return;
	char buf[2048];
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	if (n == sizeof(buf) - 1) { /* only the last part */
		(void)fseek(fp, -(long)(sizeof(buf) - 1), SEEK_END);
		n = fread(buf, 1, sizeof(buf) - 1, fp);
	}
	buf[n] = 0;
	fclose(fp);
	fst_fmt(why, cap, "; its log ends: %s", buf);
}

static int tolerated;
/* LSMFS_POWERCUT_BREAK=1: the checker's self-test (replay_break_fsync); only
 * broken promises count, mount and fsck verdicts are not looked at. */
static bool breaking;
static int broken_promises; /* cut points where an acknowledged sync was lost */
static bool workload_failed;
/* How many failing cut points each fsck code showed up in, for the summary. */
static int code_count[0x10000];

static void tally_codes(const char *out)
{
	static bool seen[0x10000];
	memset(seen, 0, sizeof(seen));
	for (const char *p = strstr(out, "LSMFS-"); p; p = strstr(p + 1, "LSMFS-")) {
		unsigned code;
		if (sscanf(p, "LSMFS-%4X", &code) == 1 && code < 0x10000 && !seen[code]) {
			seen[code] = true;
			code_count[code]++;
		}
	}
}

static int check_point(struct run *r, struct replay *rp, const struct oplog *log,
		       const struct point *pt, const char *mode, unsigned long seed)
{
	char img[700], why[4096] = "";
	fst_fmt(img, sizeof(img), "%s/img", r->base);
	(void)fst_rmtree(img); /* the previous point's image, if any */
	if (mkdir(img, 0755) != 0)
		return -1;
	uint64_t rng = pt->rng;
	if (replay_advance(rp, pt->k) != 0 || replay_materialise(rp, img, pt->pct, &rng) != 0) {
		fst_fmt(why, sizeof(why), "the log does not replay");
		goto fail;
	}
	struct fst g;
	memset(&g, 0, sizeof(g));
	g.ndisks = 2;
	for (int i = 0; i < 2; i++)
		fst_fmt(g.disks[i], sizeof(g.disks[i]), "%s/disk%d", img, i);
	fst_fmt(g.spec, sizeof(g.spec), "%s:%s", g.disks[0], g.disks[1]);
	fst_fmt(g.mnt, sizeof(g.mnt), "%s/mnt2", r->base);
	(void)mkdir(g.mnt, 0755); /* exists after the first point */
	(void)unlink(r->dlog); /* the previous point's */
	if (fst_mount_log(&g, r->opts, r->dlog) != 0) {
		if (breaking)
			return 0;
		size_t used = (size_t)fst_fmt(why, sizeof(why), "lsmfs does not mount the image");
		log_tail(r->dlog, why + used, sizeof(why) - used);
		goto fail;
	}
	int bad = 0;
	for (size_t i = 0; i < r->nfacts; i++) {
		const struct fact *ft = &r->facts[i];
		if (ft->from > pt->k || pt->k >= ft->until)
			continue;
		size_t used = strlen(why);
		if (check_fact(ft, g.mnt, why + used + (used ? 1 : 0),
			       sizeof(why) - used - 1) != 0) {
			if (used)
				why[used] = '\n';
			bad++;
		} else {
			why[used] = 0;
		}
	}
	if (!breaking) {
		size_t used = strlen(why);
		char *w = why + used + (used ? 1 : 0);
		int unreadable = read_all(g.mnt, w, sizeof(why) - used - 1);
		if (unreadable) {
			if (used)
				why[used] = '\n';
			bad++;
		} else {
			why[used] = 0;
		}
	}
	if (fst_umount(&g) != 0) {
		(void)fst_kill(&g);
		fst_fmt(why + strlen(why), sizeof(why) - strlen(why), "%sunmount failed",
			bad ? "\n" : "");
		log_tail(r->dlog, why + strlen(why), sizeof(why) - strlen(why));
		goto fail;
	}
	if (!breaking) {
		/* Reading every file (read_all, the promises) verified every
		 * block it returned: none may have failed its sum. */
		size_t used = strlen(why);
		if (log_mismatches(r->dlog, why + used + (used ? 1 : 0),
				   sizeof(why) - used - 1)) {
			if (used)
				why[used] = '\n';
			bad++;
		}
	}
	if (bad) {
		broken_promises++;
		goto fail;
	}
	if (breaking)
		return 0;
	char out[65536];
	const char *argv[] = {getenv("FSCK_BIN"), "-n", g.spec, NULL};
	int rc = fst_run(argv, out, sizeof(out));
	if (rc != 0) {
		if (only_allowed(out)) {
			tolerated++;
			return 0;
		}
		tally_codes(out);
		fst_fmt(why, sizeof(why), "fsck.lsmfs -n exited %d:\n%s", rc, out);
		goto fail;
	}
	return 0;
fail:;
	char keep[800];
	fst_fmt(keep, sizeof(keep), "%s/failed-%s-%zu-%u", r->base, mode, pt->k, pt->pct);
	if (r->failures < 10)
		(void)rename(img, keep); /* keep the first images for inspection */
	else
		fst_fmt(keep, sizeof(keep), "(not kept: only the first 10 are)");
	fprintf(stderr, "powercut: FAIL seed %lu, %s, cut point %zu of %zu, keeping %u%% of "
		"unsynced operations (image rng %llu):\n%s\n  image kept in %s, log in %s\n",
		seed, mode, pt->k, log->n, pt->pct, (unsigned long long)pt->rng, why, keep,
		r->log);
	context(log, pt->k);
	r->failures++;
	return -1;
}

/* Cut points: just before and just after every sync after mkfs, the end
 * of mkfs, the end of the log (after the clean unmount), and nrandom more
 * anywhere in between.  Each gets its own keep percentage: a quarter only
 * the synced state, a quarter everything, the rest a random share. */
static size_t pick_points(struct run *r, const struct oplog *log, size_t nrandom,
			  struct point **out)
{
	size_t lo = r->mkfs_seq, n = log->n, np = 0, cap = nrandom + 2;
	for (size_t i = lo; i < n; i++)
		if (log->recs[i].type == OPLOG_FSYNC || log->recs[i].type == OPLOG_FSYNCDIR)
			cap += 2;
	struct point *pts = calloc(cap, sizeof(*pts));
	if (!pts)
		abort();
	for (size_t i = lo; i < n; i++)
		if (log->recs[i].type == OPLOG_FSYNC || log->recs[i].type == OPLOG_FSYNCDIR) {
			pts[np++].k = i;
			pts[np++].k = i + 1;
		}
	pts[np++].k = lo;
	pts[np++].k = n;
	for (size_t i = 0; i < nrandom; i++)
		pts[np++].k = lo + fst_rand_below(&r->rng, n - lo + 1);
	qsort(pts, np, sizeof(*pts), cmp_point);
	size_t u = 0;
	for (size_t i = 0; i < np; i++)
		if (u == 0 || pts[u - 1].k != pts[i].k)
			pts[u++] = pts[i];
	for (size_t i = 0; i < u; i++) {
		switch (fst_rand_below(&r->rng, 4)) {
		case 0: pts[i].pct = 0; break;
		case 1: pts[i].pct = 100; break;
		default: pts[i].pct = 1 + (unsigned)fst_rand_below(&r->rng, 99); break;
		}
		pts[i].rng = fst_rand(&r->rng);
	}
	*out = pts;
	return u;
}

/* user.lsmfs.copies on the root, made durable (the fsync of the root
 * syncs the store's commit log): every chunk the workload makes has that
 * many copies. */
static int set_copies(struct run *r)
{
	char v[4];
	fst_fmt(v, sizeof(v), "%u", copies);
	int fd = open(r->f.mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsetxattr(fd, "user.lsmfs.copies", v, strlen(v), 0) != 0 || fsync(fd) != 0) {
		fprintf(stderr, "powercut: user.lsmfs.copies=%s on %s: %s\n", v, r->f.mnt,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	mark(r, "copies=%s set and synced", v);
	return 0;
}

/* The chunk file names ("ino.chunk") under disk's sections, sorted, in
 * *out; how many, or -1. */
static int chunk_names(const char *disk, char ***out)
{
	char top[700];
	fst_fmt(top, sizeof(top), "%s/.lsmfs/sections", disk);
	DIR *d = opendir(top);
	if (!d)
		return -1;
	char **names = NULL;
	int n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char sub[1000];
		fst_fmt(sub, sizeof(sub), "%s/%s", top, e->d_name);
		DIR *s = opendir(sub);
		struct dirent *f;
		while (s && (f = readdir(s))) {
			if (f->d_name[0] == '.')
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				names = realloc(names, (size_t)cap * sizeof(*names));
				if (!names)
					abort();
			}
			names[n++] = strdup(f->d_name);
		}
		if (s)
			closedir(s);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(*names), cmp_str);
	*out = names;
	return n;
}

/* After the workload's clean unmount with copies=2: every chunk file on
 * one disk is on the other too (a chunk's copies are in partner sections,
 * on the two disks), and there is at least one. */
static int copies_check(struct run *r)
{
	char **a, **b;
	int na = chunk_names(r->f.disks[0], &a), nb = chunk_names(r->f.disks[1], &b);
	int rc = na < 0 || nb < 0 || na == 0 ? -1 : 0;
	if (rc)
		fprintf(stderr, "powercut: no chunk files to check the copies of (%d, %d)\n", na, nb);
	for (int i = 0, j = 0; !rc && (i < na || j < nb);) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i], b[j]);
		if (c) {
			fprintf(stderr, "powercut: chunk file %s on disk %d only\n",
				c < 0 ? a[i] : b[j], c < 0 ? 0 : 1);
			rc = -1;
		}
		i += c <= 0;
		j += c >= 0;
	}
	if (!rc)
		fprintf(stderr, "powercut: %d chunk files, each on both disks\n", na);
	for (int i = 0; i < na; i++)
		free(a[i]);
	for (int i = 0; i < nb; i++)
		free(b[i]);
	if (na > 0)
		free(a);
	if (nb > 0)
		free(b);
	return rc;
}

static int run_mode(struct run *r, const char *root, const char *mode, unsigned long seed,
		    uint64_t nops, size_t npoints)
{
	time_t t0 = time(NULL);
	fst_fmt(r->base, sizeof(r->base), "%s/%s", root, mode);
	fst_fmt(r->cut, sizeof(r->cut), "%s/cut", r->base);
	fst_fmt(r->log, sizeof(r->log), "%s/oplog", r->base);
	fst_fmt(r->dlog, sizeof(r->dlog), "%s/daemon.log", r->base);
	if (mkdir(r->base, 0755) != 0 || cutfs_start(r) != 0)
		return -1;
	memset(&r->f, 0, sizeof(r->f));
	r->f.ndisks = 2;
	for (int i = 0; i < 2; i++) {
		fst_fmt(r->f.disks[i], sizeof(r->f.disks[i]), "%s/disk%d", r->cut, i);
		if (mkdir(r->f.disks[i], 0755) != 0)
			return -1;
	}
	/* The disks' own names are made durable, as an administrator's sync would. */
	int dfd = open(r->cut, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0)
		return -1;
	close(dfd);
	fst_fmt(r->f.spec, sizeof(r->f.spec), "%s:%s", r->f.disks[0], r->f.disks[1]);
	fst_fmt(r->f.mnt, sizeof(r->f.mnt), "%s/mnt", r->base);
	if (mkdir(r->f.mnt, 0755) != 0)
		return -1;
	const char *mkfs_args[] = {"--chunk-size", "64K", "--inline-max", "2K",
				   "--sections", "16", NULL};
	if (fst_mkfs(&r->f, mkfs_args) != 0)
		return -1;
	r->mkfs_seq = seq_of(r);
	mark(r, "mkfs done");
	if (fst_mount_log(&r->f, r->opts, r->dlog) != 0)
		return -1;
	mark(r, "mounted");
	if (copies > 1 && set_copies(r) != 0)
		return -1;
	workload(r, nops);
	int live_bad = verify_live(r);
	mark(r, "unmounting");
	char why[4096] = "";
	if (fst_umount(&r->f) != 0 || live_bad || log_mismatches(r->dlog, why, sizeof(why))) {
		fprintf(stderr, "powercut: %s: the workload itself failed (seed %lu)%s%s\n", mode,
			seed, why[0] ? ": " : "", why);
		return -1;
	}
	if (copies > 1 && copies_check(r) != 0) {
		fprintf(stderr, "powercut: %s: not every chunk in %u copies (seed %lu)\n", mode,
			copies, seed);
		return -1;
	}
	if (cutfs_stop(r) != 0)
		return -1;
	struct oplog log;
	if (oplog_load(r->log, &log) != 0)
		return -1;
	struct point *pts;
	size_t np = pick_points(r, &log, npoints, &pts);
	size_t nsyncs = 0, nfacts_checked = 0;
	for (size_t i = r->mkfs_seq; i < log.n; i++)
		nsyncs += log.recs[i].type == OPLOG_FSYNC || log.recs[i].type == OPLOG_FSYNCDIR;
	fprintf(stderr, "powercut: %s: %llu operations, log of %zu records (%zu syncs, %.1f MiB) "
		"after mkfs at %llu, %zu promises; checking %zu cut points\n", mode,
		(unsigned long long)nops, log.n, nsyncs, (double)log.size / (1 << 20),
		(unsigned long long)r->mkfs_seq, r->nfacts, np);
	struct replay *rp = replay_new(&log);
	if (!rp)
		abort();
	if (breaking)
		replay_break_fsync(rp);
	time_t t1 = time(NULL);
	r->checked = true;
	const char *mf = getenv("LSMFS_POWERCUT_MAXFAIL");
	int maxfail = mf ? atoi(mf) : 5;
	for (size_t i = 0; i < np && r->failures < maxfail; i++) {
		for (size_t j = 0; j < r->nfacts; j++)
			nfacts_checked += r->facts[j].from <= pts[i].k && pts[i].k < r->facts[j].until;
		(void)check_point(r, rp, &log, &pts[i], mode, seed);
	}
	fprintf(stderr, "powercut: %s: %zu cut points, %zu promise checks, %d failures, "
		"workload %lds, cuts %lds\n", mode, np, nfacts_checked, r->failures,
		(long)(t1 - t0), (long)(time(NULL) - t1));
	replay_free(rp);
	free(pts);
	oplog_free(&log);
	if (!r->failures) {
		char img[700];
		fst_fmt(img, sizeof(img), "%s/img", r->base);
		(void)fst_rmtree(img);
	}
	return r->failures ? -1 : 0;
}

int main(void)
{
	fst_require_fuse();
	if (!getenv("CUTFS_BIN") || !getenv("FSCK_BIN")) {
		fprintf(stderr, "\n*** SKIPPED: CUTFS_BIN/FSCK_BIN not set; run through meson "
			"test ***\n\n");
		return 77;
	}
	if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
		setenv("TMPDIR", "/dev/shm", 1); /* scratch images never touch the root disk */
	const char *brk = getenv("LSMFS_POWERCUT_BREAK");
	breaking = brk && strcmp(brk, "1") == 0;
	unsigned long seed = fst_seed("powercut");
	bool soak = fst_soak();
	const char *np = getenv("LSMFS_POWERCUT_POINTS");
	size_t npoints = np ? strtoul(np, NULL, 10) : soak ? 5000 : 200;
	const char *nc = getenv("LSMFS_POWERCUT_COPIES");
	copies = nc ? (unsigned)strtoul(nc, NULL, 10) : 1;
	if (copies < 1 || copies > 2) {
		fprintf(stderr, "powercut: LSMFS_POWERCUT_COPIES=%s: 1 or 2\n", nc);
		return 1;
	}
	const char *no = getenv("LSMFS_POWERCUT_OPS");
	uint64_t nops = no ? strtoull(no, NULL, 10) : soak ? 5000 : 600;
	char root[512];
	fst_fmt(root, sizeof(root), "%s/lsmfs-powercut.XXXXXX", getenv("TMPDIR"));
	if (!mkdtemp(root)) {
		fprintf(stderr, "powercut: mkdtemp %s: %s\n", root, strerror(errno));
		return 1;
	}
	static const char *const modes[][2] = {{"writeback", ""}, {"no_writeback", "no_writeback"}};
	static const char *const modes2[][2] = {{"copies2-writeback", ""},
						{"copies2-no_writeback", "no_writeback"}};
	int failed = 0;
	for (int m = 0; m < 2; m++) {
		struct run *r = calloc(1, sizeof(*r));
		if (!r)
			abort();
		r->rng = seed * 2 + (uint64_t)m;
		r->opts = copies > 1 ? modes2[m][1] : modes[m][1];
		if (run_mode(r, root, copies > 1 ? modes2[m][0] : modes[m][0], seed, nops, npoints) != 0)
			failed = 1;
		if (!r->checked || !r->nfacts)
			workload_failed = true;
		if (r->f.daemon)
			(void)fst_kill(&r->f);
		cutfs_abandon(r);
		for (size_t i = 0; i < r->nfacts; i++) {
			free(r->facts[i].data);
			for (int j = 0; j < r->facts[i].nnames; j++)
				free(r->facts[i].names[j]);
			free(r->facts[i].names);
		}
		free(r->facts);
		for (int i = 0; i < MAX_FILES; i++)
			free(r->files[i].data);
		free(r);
	}
	if (tolerated)
		fprintf(stderr, "powercut: %d cut points left only fsck codes in "
			"LSMFS_POWERCUT_ALLOW=%s (tolerated)\n", tolerated,
			getenv("LSMFS_POWERCUT_ALLOW"));
	for (unsigned c = 0; c < 0x10000; c++)
		if (code_count[c])
			fprintf(stderr, "powercut: fsck code LSMFS-%04X at %d failing cut points\n", c,
				code_count[c]);
	if (breaking) {
		/* The self-test passes when the checker saw the lost syncs. */
		fprintf(stderr, "powercut: self-test: %d cut points with a lost acknowledged "
			"sync detected%s\n", broken_promises,
			workload_failed ? ", but a workload failed" : "");
		(void)fst_rmtree(root);
		return broken_promises > 0 && !workload_failed ? 0 : 1;
	}
	if (failed) {
		fprintf(stderr, "powercut: FAILED (seed %lu); scratch kept in %s\n", seed, root);
		return 1;
	}
	(void)fst_rmtree(root);
	return 0;
}
