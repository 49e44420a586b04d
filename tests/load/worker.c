/*
 * worker.c: one load-test worker process (load.h).
 *
 * Worker W owns <mnt>/wW (names n0..n31 and subdirectories d0..d3, which
 * hold names n0..n31 too) and the names wW_0..wW_15 of <mnt>/shared, where
 * every worker's names meet.  Nobody else touches them, so its model is
 * the truth: per inode the exact bytes, nlink, an open fd (at most 4 kept
 * across operations) and user.loadK xattrs; per name its directory, type
 * and inode or symlink target.  Every operation's result is checked
 * against the model, byte for byte for reads; an expected error (EEXIST,
 * ENOTEMPTY, ENOENT, ENODATA) must be exactly that error.  Any other
 * outcome prints the operation, path, errno, worker and seed, and exits 1.
 *
 * The mix, by weight: write 14 (overwrites, appends, O_APPEND, sparse
 * writes past the end, writes across chunk boundaries, page-aligned
 * runs), read 14, stat 10, create 8, rename 8 (within its directories,
 * into and out of shared, over an existing name, RENAME_NOREPLACE,
 * whole subdirectories), unlink 7 (an unlinked file still open is read
 * through its fd before the close), truncate 5, readdir 5, fsync and
 * fdatasync 4, link 4, setxattr (set and remove) 4, getxattr 4,
 * symlink 3, readlink 3, close 3, mkdir 2, rmdir 2.  File sizes cross the
 * inline limit (4 KiB) and the test's 64 KiB chunks, up to 1 MiB.
 *
 * Each operation's system calls are timed (lat.c): one sample per call.
 * At the deadline the worker closes its fds and checks every name it
 * holds (stat, content, link target, xattrs, directory listings), saves
 * its samples and reports W_DONE; after the parent's remount it checks
 * everything again on command.
 */
#include "load.h"
#include "fstest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAXINO 24        /* inodes a worker holds at once */
#define MAXNAME 40       /* names a worker holds at once */
#define NPOOL 32         /* n0..n31 per directory */
#define NSHARED 16       /* wW_0..wW_15 in shared */
#define NSUB 4           /* d0..d3 */
#define NX 4             /* user.load0..3 */
#define XMAX 64
#define MAXFDS 4
#define MAXFILE (1u << 20)
#define CHUNK (64u * 1024) /* test_load.c's mkfs --chunk-size */
#define INLINE 4096u       /* mkfs's default inline limit */
#define PIECE (128u * 1024) /* bytes per read call */
#define PATHCAP 512
#define TARGETMAX 200

#define SHARED (-1)      /* where: shared; 0 own dir; 1 + k subdir dk */

struct xattrs {
	bool set[NX];
	uint8_t len[NX];
	char val[NX][XMAX];
};

struct minode {
	bool used;
	uint8_t *data;
	size_t size, cap;
	unsigned nlink;
	int fd;                 /* -1, or kept open O_RDWR */
	struct xattrs x;
};

struct mname {
	bool used;
	int where;
	int num;
	char type;              /* 'f' file, 'l' symlink */
	int ino;                /* 'f' */
	char target[TARGETMAX + 1]; /* 'l' */
};

struct msub {
	bool used;
	struct xattrs x;
};

struct wk {
	const struct worker_cfg *c;
	uint64_t rng;
	struct lat lat;
	bool timing;            /* false while verifying at the end */
	uint64_t opno;
	enum load_op cur;
	const char *phase_name;
	uint64_t t0;
	struct minode ino[MAXINO];
	struct mname name[MAXNAME];
	struct msub sub[NSUB];
	int nfds;
	uint8_t *wbuf, *rbuf;
};

/* ---- failing ---- */

static void fail(struct wk *w, const char *op, const char *path, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6), noreturn));

static void fail(struct wk *w, const char *op, const char *path, int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	char why[128] = "";
	if (err)
		fst_fmt(why, sizeof(why), " (%s, errno %d)", strerror(err), err);
	fprintf(stderr, "test_load: FAIL worker %d (seed %lu, %s op #%llu): %s %s: %s%s\n",
		w->c->id, w->c->seed, w->phase_name, (unsigned long long)w->opno, op, path, msg, why);
	fst_fmt(w->c->status->failed, sizeof(w->c->status->failed), "%s", op);
	w->c->status->phase = W_FAILED;
	_exit(1);
}

/* ---- timing ---- */

static void begin(struct wk *w, enum load_op op, const char *path)
{
	struct wstatus *s = w->c->status;
	fst_fmt(s->op, sizeof(s->op), "%s", load_op_name[op]);
	fst_fmt(s->path, sizeof(s->path), "%s", path);
	w->cur = op;
	w->t0 = lat_now();
	s->since_ns = w->t0;
}

static void end(struct wk *w)
{
	uint64_t dt = lat_now() - w->t0;
	w->c->status->ops++;
	if (w->timing && lat_add(&w->lat, w->cur, dt))
		fail(w, load_op_name[w->cur], "-", ENOMEM, "cannot keep the latency sample");
}

/* ---- names and paths ---- */

static uint64_t rnd(struct wk *w, uint64_t n)
{
	return fst_rand_below(&w->rng, n);
}

static bool chance(struct wk *w, unsigned pct)
{
	return fst_chance(&w->rng, pct);
}

static void dir_path(struct wk *w, int where, char *out)
{
	if (where == SHARED)
		fst_fmt(out, PATHCAP, "%s/shared", w->c->mnt);
	else if (where == 0)
		fst_fmt(out, PATHCAP, "%s/w%d", w->c->mnt, w->c->id);
	else
		fst_fmt(out, PATHCAP, "%s/w%d/d%d", w->c->mnt, w->c->id, where - 1);
}

static void entry_name(struct wk *w, int where, int num, char *out, size_t cap)
{
	if (where == SHARED)
		fst_fmt(out, cap, "w%d_%d", w->c->id, num);
	else
		fst_fmt(out, cap, "n%d", num);
}

static void name_path(struct wk *w, int where, int num, char *out)
{
	char d[PATHCAP], n[64];
	dir_path(w, where, d);
	entry_name(w, where, num, n, sizeof(n));
	fst_fmt(out, PATHCAP, "%s/%s", d, n);
}

static int pool_size(int where)
{
	return where == SHARED ? NSHARED : NPOOL;
}

static int find_name(struct wk *w, int where, int num)
{
	for (int i = 0; i < MAXNAME; i++)
		if (w->name[i].used && w->name[i].where == where && w->name[i].num == num)
			return i;
	return -1;
}

/* A random used name whose type is in types ("f", "l", "fl"), or -1. */
static int pick_name(struct wk *w, const char *types)
{
	int start = (int)rnd(w, MAXNAME);
	for (int k = 0; k < MAXNAME; k++) {
		int i = (start + k) % MAXNAME;
		if (w->name[i].used && strchr(types, w->name[i].type))
			return i;
	}
	return -1;
}

static int free_slot_name(struct wk *w)
{
	for (int i = 0; i < MAXNAME; i++)
		if (!w->name[i].used)
			return i;
	return -1;
}

static int free_slot_ino(struct wk *w)
{
	for (int i = 0; i < MAXINO; i++)
		if (!w->ino[i].used)
			return i;
	return -1;
}

static int pick_sub(struct wk *w, bool used)
{
	int start = (int)rnd(w, NSUB);
	for (int k = 0; k < NSUB; k++) {
		int s = (start + k) % NSUB;
		if (w->sub[s].used == used)
			return s;
	}
	return -1;
}

/* Own directory most often, a subdirectory, or shared. */
static int pick_where(struct wk *w, bool shared_ok)
{
	unsigned r = (unsigned)rnd(w, 100);
	if (shared_ok && r < 20)
		return SHARED;
	if (r < 45) {
		int s = pick_sub(w, true);
		if (s >= 0)
			return 1 + s;
	}
	return 0;
}

static int name_add(struct wk *w, int where, int num, char type, int ino, const char *target)
{
	int i = free_slot_name(w);
	struct mname *n = &w->name[i];
	memset(n, 0, sizeof(*n));
	n->used = true;
	n->where = where;
	n->num = num;
	n->type = type;
	n->ino = ino;
	if (target)
		fst_fmt(n->target, sizeof(n->target), "%s", target);
	return i;
}

static int entries_in(struct wk *w, int where)
{
	int n = 0;
	for (int i = 0; i < MAXNAME; i++)
		n += w->name[i].used && w->name[i].where == where;
	return n;
}

/* ---- contents ---- */

static void fill(struct wk *w, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = fst_rand(&w->rng);
		size_t k = n - i < 8 ? n - i : 8;
		memcpy(p + i, &v, k);
	}
}

/* A length: tiny, around the inline limit, within a chunk, across
 * chunks. */
static size_t gen_len(struct wk *w)
{
	unsigned r = (unsigned)rnd(w, 100);
	if (r < 15)
		return rnd(w, 300);
	if (r < 35)
		return 300 + rnd(w, INLINE - 300 + 1);
	if (r < 45)
		return INLINE - 2 + rnd(w, 4);
	if (r < 65)
		return INLINE + rnd(w, CHUNK - INLINE);
	if (r < 85)
		return CHUNK + rnd(w, 3 * CHUNK);
	return 4 * CHUNK + rnd(w, MAXFILE / 2 - 4 * CHUNK);
}

static void model_resize(struct minode *m, size_t size)
{
	if (size > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;
		while (cap < size)
			cap *= 2;
		uint8_t *d = realloc(m->data, cap);
		if (!d) {
			fprintf(stderr, "test_load: out of memory for a %zu-byte model\n", cap);
			_exit(1);
		}
		m->data = d;
		m->cap = cap;
	}
	if (size > m->size)
		memset(m->data + m->size, 0, size - m->size);
	m->size = size;
}

static void model_write(struct minode *m, size_t off, const uint8_t *p, size_t len)
{
	if (off + len > m->size)
		model_resize(m, off + len);
	memcpy(m->data + off, p, len);
}

/* Read [off, off + len) through fd and compare with the model: exactly
 * the bytes the model has there (none past its end). */
static void read_check(struct wk *w, int ino, int fd, const char *path, size_t off, size_t len)
{
	struct minode *m = &w->ino[ino];
	size_t want = off >= m->size ? 0 : (len < m->size - off ? len : m->size - off);
	size_t got = 0;
	for (;;) {
		size_t n = len - got < PIECE ? len - got : PIECE;
		if (n == 0)
			break;
		begin(w, OP_READ, path);
		ssize_t r = pread(fd, w->rbuf + got, n, (off_t)(off + got));
		end(w);
		if (r < 0)
			fail(w, "read", path, errno, "pread of %zu bytes at offset %zu", n, off + got);
		if (r == 0)
			break;
		got += (size_t)r;
		if (got > want)
			break;
	}
	if (got != want)
		fail(w, "read", path, 0,
		     "read %zu bytes at offset %zu of a %zu-byte file: got %zu, want %zu", len, off,
		     m->size, got, want);
	if (memcmp(w->rbuf, m->data + off, want) != 0) {
		size_t i = 0;
		while (w->rbuf[i] == m->data[off + i])
			i++;
		size_t j = i;
		while (j < want && w->rbuf[j] != m->data[off + j])
			j++;
		fail(w, "read", path, 0,
		     "content differs at offset %zu (byte 0x%02x, want 0x%02x; %zu bytes differ "
		     "from there) of a %zu-byte file",
		     off + i, w->rbuf[i], m->data[off + i], j - i, m->size);
	}
}

static void check_size(struct wk *w, int ino, int fd, const char *path)
{
	struct stat st;
	begin(w, OP_STAT, path);
	int rc = fstat(fd, &st);
	end(w);
	if (rc)
		fail(w, "fstat", path, errno, "fstat");
	if ((size_t)st.st_size != w->ino[ino].size)
		fail(w, "fstat", path, 0, "size %lld, want %zu", (long long)st.st_size,
		     w->ino[ino].size);
}

/* ---- fds ---- */

static int do_open(struct wk *w, const char *path, int flags)
{
	begin(w, OP_OPEN, path);
	int fd = open(path, flags | O_CLOEXEC);
	end(w);
	if (fd < 0)
		fail(w, "open", path, errno, "open flags 0%o", flags);
	return fd;
}

static void do_close(struct wk *w, int fd, const char *path)
{
	begin(w, OP_CLOSE, path);
	int rc = close(fd);
	end(w);
	if (rc)
		fail(w, "close", path, errno, "close");
}

/* The inode's kept fd, or a new O_RDWR one (*opened). */
static int get_fd(struct wk *w, int ino, const char *path, bool *opened)
{
	*opened = w->ino[ino].fd < 0;
	return *opened ? do_open(w, path, O_RDWR) : w->ino[ino].fd;
}

/* Keep a fd get_fd opened (sometimes), or close it. */
static void put_fd(struct wk *w, int ino, int fd, bool opened, const char *path)
{
	if (!opened)
		return;
	if (w->nfds < MAXFDS && chance(w, 25)) {
		w->ino[ino].fd = fd;
		w->nfds++;
		return;
	}
	do_close(w, fd, path);
}

/* One link of ino is gone; at the last, an fd still open must still read
 * the whole content before it closes. */
static void drop_link(struct wk *w, int ino, const char *path)
{
	struct minode *m = &w->ino[ino];
	if (--m->nlink > 0)
		return;
	if (m->fd >= 0) {
		check_size(w, ino, m->fd, path);
		read_check(w, ino, m->fd, path, 0, m->size + 1);
		do_close(w, m->fd, path);
		w->nfds--;
	}
	free(m->data);
	memset(m, 0, sizeof(*m));
	m->fd = -1;
}

/* ---- operations ---- */

static void write_at(struct wk *w, int ino, int fd, const char *path, size_t off, size_t len,
		     bool append)
{
	struct minode *m = &w->ino[ino];
	if (append)
		off = m->size;
	fill(w, w->wbuf, len);
	begin(w, OP_WRITE, path);
	ssize_t n = append ? write(fd, w->wbuf, len) : pwrite(fd, w->wbuf, len, (off_t)off);
	end(w);
	if (n < 0)
		fail(w, "write", path, errno, "%s of %zu bytes at offset %zu", append ? "append" : "pwrite",
		     len, off);
	if ((size_t)n != len)
		fail(w, "write", path, 0, "short write: %zd of %zu bytes at offset %zu", n, len, off);
	model_write(m, off, w->wbuf, len);
}

static void op_unlink(struct wk *w);

static void op_create(struct wk *w)
{
	int where = pick_where(w, true);
	int num = (int)rnd(w, (uint64_t)pool_size(where));
	char path[PATHCAP];
	name_path(w, where, num, path);
	if (find_name(w, where, num) >= 0) {
		begin(w, OP_CREATE, path);
		int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
		int e = errno;
		end(w);
		if (fd >= 0)
			fail(w, "create", path, 0, "O_EXCL create of an existing name succeeded");
		if (e != EEXIST)
			fail(w, "create", path, e, "O_EXCL create of an existing name: want EEXIST");
		return;
	}
	int ino = free_slot_ino(w);
	if (ino < 0 || free_slot_name(w) < 0) {
		op_unlink(w);
		return;
	}
	begin(w, OP_CREATE, path);
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
	end(w);
	if (fd < 0)
		fail(w, "create", path, errno, "O_CREAT|O_EXCL");
	struct minode *m = &w->ino[ino];
	memset(m, 0, sizeof(*m));
	m->used = true;
	m->nlink = 1;
	m->fd = -1;
	name_add(w, where, num, 'f', ino, NULL);
	size_t len = gen_len(w);
	if (len)
		write_at(w, ino, fd, path, 0, len, false);
	put_fd(w, ino, fd, true, path);
}

static void op_write(struct wk *w)
{
	int i = pick_name(w, "f");
	if (i < 0) {
		op_create(w);
		return;
	}
	int ino = w->name[i].ino;
	struct minode *m = &w->ino[ino];
	char path[PATHCAP];
	name_path(w, w->name[i].where, w->name[i].num, path);
	if (m->fd < 0 && chance(w, 15)) {
		int fd = do_open(w, path, O_WRONLY | O_APPEND);
		size_t len = 1 + rnd(w, chance(w, 50) ? 512 : 2 * CHUNK);
		if (m->size + len > MAXFILE)
			len = m->size < MAXFILE ? MAXFILE - m->size : 0;
		if (len)
			write_at(w, ino, fd, path, 0, len, true);
		do_close(w, fd, path);
		return;
	}
	bool opened;
	int fd = get_fd(w, ino, path, &opened);
	unsigned r = (unsigned)rnd(w, 100);
	size_t off, len = gen_len(w);
	if (r < 35) {                   /* overwrite */
		off = rnd(w, m->size + 1);
	} else if (r < 60) {            /* append */
		off = m->size;
	} else if (r < 75) {            /* sparse: a hole, then data */
		off = m->size + 1 + rnd(w, 3 * CHUNK);
	} else if (r < 90) {            /* across a chunk boundary */
		size_t k = 1 + rnd(w, m->size / CHUNK + 2);
		off = k * CHUNK - 1 - rnd(w, 512);
		len = 2 + rnd(w, 1024);
	} else {                        /* page-aligned run (O_DIRECT path) */
		off = rnd(w, MAXFILE / 4096 / 2) * 4096;
		len = 4096 * (1 + rnd(w, 32));
	}
	if (off >= MAXFILE)
		off = rnd(w, MAXFILE / 2);
	if (off + len > MAXFILE)
		len = MAXFILE - off;
	if (len)
		write_at(w, ino, fd, path, off, len, false);
	if (len && chance(w, 25))
		read_check(w, ino, fd, path, off, len);
	put_fd(w, ino, fd, opened, path);
}

static void op_read(struct wk *w)
{
	int i = pick_name(w, "f");
	if (i < 0)
		return;
	int ino = w->name[i].ino;
	struct minode *m = &w->ino[ino];
	char path[PATHCAP];
	name_path(w, w->name[i].where, w->name[i].num, path);
	bool opened = m->fd < 0;
	int fd = opened ? do_open(w, path, O_RDONLY) : m->fd;
	check_size(w, ino, fd, path);
	if (chance(w, 60))
		read_check(w, ino, fd, path, 0, m->size + 1); /* +1: EOF is where it should be */
	else
		read_check(w, ino, fd, path, rnd(w, m->size + CHUNK), gen_len(w) + 1);
	if (opened)
		do_close(w, fd, path);
}

static void op_sync(struct wk *w)
{
	int i = pick_name(w, "f");
	if (i < 0)
		return;
	int ino = w->name[i].ino;
	char path[PATHCAP];
	name_path(w, w->name[i].where, w->name[i].num, path);
	bool opened;
	int fd = get_fd(w, ino, path, &opened);
	bool data = chance(w, 50);
	begin(w, data ? OP_FDATASYNC : OP_FSYNC, path);
	int rc = data ? fdatasync(fd) : fsync(fd);
	end(w);
	if (rc)
		fail(w, data ? "fdatasync" : "fsync", path, errno, "sync");
	put_fd(w, ino, fd, opened, path);
}

static void op_truncate(struct wk *w)
{
	int i = pick_name(w, "f");
	if (i < 0)
		return;
	int ino = w->name[i].ino;
	struct minode *m = &w->ino[ino];
	char path[PATHCAP];
	name_path(w, w->name[i].where, w->name[i].num, path);
	unsigned r = (unsigned)rnd(w, 100);
	size_t size;
	if (r < 25)
		size = rnd(w, m->size + 1);
	else if (r < 40)
		size = 0;
	else if (r < 65)
		size = m->size + rnd(w, 2 * CHUNK);
	else if (r < 80)
		size = INLINE - 4 + rnd(w, 9);
	else
		size = (1 + rnd(w, 8)) * CHUNK - 3 + rnd(w, 7);
	if (size > MAXFILE)
		size = MAXFILE;
	bool by_fd = m->fd >= 0 && chance(w, 50);
	begin(w, OP_TRUNCATE, path);
	int rc = by_fd ? ftruncate(m->fd, (off_t)size) : truncate(path, (off_t)size);
	end(w);
	if (rc)
		fail(w, "truncate", path, errno, "%s to %zu (from %zu)", by_fd ? "ftruncate" : "truncate",
		     size, m->size);
	if (size < m->size)
		m->size = size;
	else
		model_resize(m, size);
}

static void op_rename_sub(struct wk *w)
{
	int k = pick_sub(w, true), j = pick_sub(w, false);
	if (k < 0 || j < 0)
		return;
	char from[PATHCAP], to[PATHCAP];
	dir_path(w, 1 + k, from);
	dir_path(w, 1 + j, to);
	begin(w, OP_RENAME, from);
	int rc = rename(from, to);
	end(w);
	if (rc)
		fail(w, "rename", from, errno, "directory to %s", to);
	w->sub[j] = w->sub[k];
	memset(&w->sub[k], 0, sizeof(w->sub[k]));
	for (int i = 0; i < MAXNAME; i++)
		if (w->name[i].used && w->name[i].where == 1 + k)
			w->name[i].where = 1 + j;
}

static void op_rename(struct wk *w)
{
	if (chance(w, 8)) {
		op_rename_sub(w);
		return;
	}
	int s = pick_name(w, "fl");
	if (s < 0)
		return;
	char from[PATHCAP], to[PATHCAP];
	name_path(w, w->name[s].where, w->name[s].num, from);
	int where = pick_where(w, true);
	int num = (int)rnd(w, (uint64_t)pool_size(where));
	int t = find_name(w, where, num);
	name_path(w, where, num, to);
	if (t >= 0 && t != s && chance(w, 15)) {
		begin(w, where == w->name[s].where ? OP_RENAME : OP_RENAME_X, from);
		int rc = renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
		int e = errno;
		end(w);
		if (rc == 0)
			fail(w, "rename", from, 0, "RENAME_NOREPLACE over %s succeeded", to);
		if (e != EEXIST)
			fail(w, "rename", from, e, "RENAME_NOREPLACE over %s: want EEXIST", to);
		return;
	}
	begin(w, where == w->name[s].where ? OP_RENAME : OP_RENAME_X, from);
	int rc = rename(from, to);
	end(w);
	if (rc)
		fail(w, "rename", from, errno, "to %s%s", to, t >= 0 ? " (over an existing name)" : "");
	if (t == s)
		return; /* to itself */
	if (t >= 0) {
		struct mname *tn = &w->name[t];
		if (tn->type == 'f' && w->name[s].type == 'f' && tn->ino == w->name[s].ino)
			return; /* two links of one file: rename does nothing */
		int tino = tn->type == 'f' ? tn->ino : -1;
		tn->used = false;
		if (tino >= 0)
			drop_link(w, tino, to);
	}
	w->name[s].where = where;
	w->name[s].num = num;
}

static void op_link(struct wk *w)
{
	int s = pick_name(w, "f");
	if (s < 0)
		return;
	int ino = w->name[s].ino;
	char from[PATHCAP], to[PATHCAP];
	name_path(w, w->name[s].where, w->name[s].num, from);
	int where = pick_where(w, true);
	int num = (int)rnd(w, (uint64_t)pool_size(where));
	name_path(w, where, num, to);
	bool exists = find_name(w, where, num) >= 0;
	if (!exists && (free_slot_name(w) < 0 || w->ino[ino].nlink >= 6))
		return;
	begin(w, OP_LINK, to);
	int rc = link(from, to);
	int e = errno;
	end(w);
	if (exists) {
		if (rc == 0)
			fail(w, "link", to, 0, "link from %s over an existing name succeeded", from);
		if (e != EEXIST)
			fail(w, "link", to, e, "link from %s over an existing name: want EEXIST", from);
		return;
	}
	if (rc)
		fail(w, "link", to, e, "from %s", from);
	w->ino[ino].nlink++;
	name_add(w, where, num, 'f', ino, NULL);
}

static void op_unlink(struct wk *w)
{
	int i = pick_name(w, "fl");
	if (i < 0)
		return;
	char path[PATHCAP];
	name_path(w, w->name[i].where, w->name[i].num, path);
	begin(w, OP_UNLINK, path);
	int rc = unlink(path);
	end(w);
	if (rc)
		fail(w, "unlink", path, errno, "unlink");
	struct mname *n = &w->name[i];
	n->used = false;
	if (n->type == 'f')
		drop_link(w, n->ino, path);
	if (chance(w, 30)) {
		struct stat st;
		begin(w, OP_STAT, path);
		rc = lstat(path, &st);
		int e = errno;
		end(w);
		if (rc == 0 || e != ENOENT)
			fail(w, "stat", path, rc ? e : 0, "after unlink: want ENOENT");
	}
}

static void op_mkdir(struct wk *w)
{
	int k = (int)rnd(w, NSUB);
	char path[PATHCAP];
	dir_path(w, 1 + k, path);
	begin(w, OP_MKDIR, path);
	int rc = mkdir(path, 0755);
	int e = errno;
	end(w);
	if (w->sub[k].used) {
		if (rc == 0 || e != EEXIST)
			fail(w, "mkdir", path, rc ? e : 0, "existing directory: want EEXIST");
		return;
	}
	if (rc)
		fail(w, "mkdir", path, e, "mkdir");
	memset(&w->sub[k], 0, sizeof(w->sub[k]));
	w->sub[k].used = true;
}

static void op_rmdir(struct wk *w)
{
	int k = pick_sub(w, true);
	if (k < 0)
		return;
	char path[PATHCAP];
	dir_path(w, 1 + k, path);
	bool empty = entries_in(w, 1 + k) == 0;
	begin(w, OP_RMDIR, path);
	int rc = rmdir(path);
	int e = errno;
	end(w);
	if (!empty) {
		if (rc == 0 || e != ENOTEMPTY)
			fail(w, "rmdir", path, rc ? e : 0, "directory with %d entries: want ENOTEMPTY",
			     entries_in(w, 1 + k));
		return;
	}
	if (rc)
		fail(w, "rmdir", path, e, "empty directory");
	w->sub[k].used = false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The listing of a directory (only this worker's names in shared) must be
 * the model's: same names, no name twice, the right d_type. */
static void check_dir(struct wk *w, int where)
{
	char path[PATHCAP], prefix[32];
	dir_path(w, where, path);
	fst_fmt(prefix, sizeof(prefix), "w%d_", w->c->id);
	char *got[MAXNAME + NSUB + 8], *want[MAXNAME + NSUB];
	char got_type[MAXNAME + NSUB + 8];
	int ngot = 0, nwant = 0;
	begin(w, OP_READDIR, path);
	DIR *d = opendir(path);
	if (!d)
		fail(w, "readdir", path, errno, "opendir");
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (where == SHARED && strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (ngot == MAXNAME + NSUB + 8)
			fail(w, "readdir", path, 0, "more than %d entries", ngot);
		got_type[ngot] = (char)de->d_type;
		got[ngot++] = strdup(de->d_name);
	}
	int e = errno;
	closedir(d);
	end(w);
	if (e)
		fail(w, "readdir", path, e, "readdir");
	for (int i = 0; i < MAXNAME; i++) {
		if (w->name[i].used && w->name[i].where == where) {
			char n[64];
			entry_name(w, where, w->name[i].num, n, sizeof(n));
			want[nwant++] = strdup(n);
		}
	}
	if (where == 0)
		for (int k = 0; k < NSUB; k++)
			if (w->sub[k].used) {
				char n[16];
				fst_fmt(n, sizeof(n), "d%d", k);
				want[nwant++] = strdup(n);
			}
	/* d_type: by name, before sorting loses the pairing */
	for (int i = 0; i < ngot; i++) {
		if (got_type[i] == DT_UNKNOWN)
			continue;
		char want_type = DT_UNKNOWN;
		if (got[i][0] == 'd')
			want_type = DT_DIR;
		for (int j = 0; j < MAXNAME; j++) {
			char n[64];
			if (!w->name[j].used || w->name[j].where != where)
				continue;
			entry_name(w, where, w->name[j].num, n, sizeof(n));
			if (!strcmp(n, got[i]))
				want_type = w->name[j].type == 'f' ? DT_REG : DT_LNK;
		}
		if (want_type != DT_UNKNOWN && got_type[i] != want_type)
			fail(w, "readdir", path, 0, "%s has d_type %d, want %d", got[i], got_type[i],
			     want_type);
	}
	qsort(got, (size_t)ngot, sizeof(char *), cmp_str);
	qsort(want, (size_t)nwant, sizeof(char *), cmp_str);
	for (int i = 1; i < ngot; i++)
		if (!strcmp(got[i], got[i - 1]))
			fail(w, "readdir", path, 0, "%s listed twice", got[i]);
	int a = 0, b = 0;
	while (a < ngot || b < nwant) {
		int c = a == ngot ? 1 : b == nwant ? -1 : strcmp(got[a], want[b]);
		if (c < 0)
			fail(w, "readdir", path, 0, "lists %s, which the model does not have (%d listed, %d expected)",
			     got[a], ngot, nwant);
		if (c > 0)
			fail(w, "readdir", path, 0, "misses %s (%d listed, %d expected)", want[b], ngot,
			     nwant);
		a++;
		b++;
	}
	for (int i = 0; i < ngot; i++)
		free(got[i]);
	for (int i = 0; i < nwant; i++)
		free(want[i]);
}

static void op_readdir(struct wk *w)
{
	unsigned r = (unsigned)rnd(w, 100);
	int where = 0;
	if (r < 25)
		where = SHARED;
	else if (r < 50 && pick_sub(w, true) >= 0)
		where = 1 + pick_sub(w, true);
	check_dir(w, where);
}

static void check_name(struct wk *w, int i)
{
	struct mname *n = &w->name[i];
	char path[PATHCAP];
	name_path(w, n->where, n->num, path);
	struct stat st;
	begin(w, OP_STAT, path);
	int rc = lstat(path, &st);
	end(w);
	if (rc)
		fail(w, "stat", path, errno, "lstat of a %s the model has",
		     n->type == 'f' ? "file" : "symlink");
	if (n->type == 'f') {
		struct minode *m = &w->ino[n->ino];
		if (!S_ISREG(st.st_mode) || (size_t)st.st_size != m->size || st.st_nlink != m->nlink)
			fail(w, "stat", path, 0, "mode 0%o size %lld nlink %lu, want a file of %zu bytes, nlink %u",
			     st.st_mode, (long long)st.st_size, (unsigned long)st.st_nlink, m->size,
			     m->nlink);
	} else if (!S_ISLNK(st.st_mode) || (size_t)st.st_size != strlen(n->target)) {
		fail(w, "stat", path, 0, "mode 0%o size %lld, want a symlink of %zu bytes", st.st_mode,
		     (long long)st.st_size, strlen(n->target));
	}
}

static void op_stat(struct wk *w)
{
	if (chance(w, 15)) {
		int where = pick_where(w, true), num = (int)rnd(w, (uint64_t)pool_size(where));
		if (find_name(w, where, num) < 0) {
			char path[PATHCAP];
			name_path(w, where, num, path);
			struct stat st;
			begin(w, OP_STAT, path);
			int rc = lstat(path, &st);
			int e = errno;
			end(w);
			if (rc == 0 || e != ENOENT)
				fail(w, "stat", path, rc ? e : 0, "a name the model does not have: want ENOENT");
			return;
		}
	}
	if (chance(w, 10)) {
		int k = pick_sub(w, true);
		if (k >= 0) {
			char path[PATHCAP];
			dir_path(w, 1 + k, path);
			struct stat st;
			begin(w, OP_STAT, path);
			int rc = lstat(path, &st);
			end(w);
			if (rc || !S_ISDIR(st.st_mode))
				fail(w, "stat", path, rc ? errno : 0, "want a directory");
			return;
		}
	}
	int i = pick_name(w, "fl");
	if (i >= 0)
		check_name(w, i);
}

/* An xattr target: a file (its inode's xattrs) or a subdirectory. */
static struct xattrs *pick_xattr_target(struct wk *w, char *path)
{
	int k = chance(w, 25) ? pick_sub(w, true) : -1;
	if (k >= 0) {
		dir_path(w, 1 + k, path);
		return &w->sub[k].x;
	}
	int i = pick_name(w, "f");
	if (i < 0)
		return NULL;
	name_path(w, w->name[i].where, w->name[i].num, path);
	return &w->ino[w->name[i].ino].x;
}

static void op_setxattr(struct wk *w)
{
	char path[PATHCAP], xn[32];
	struct xattrs *x = pick_xattr_target(w, path);
	if (!x)
		return;
	int k = (int)rnd(w, NX);
	fst_fmt(xn, sizeof(xn), "user.load%d", k);
	if (x->set[k] && chance(w, 20)) {
		begin(w, OP_SETXATTR, path);
		int rc = removexattr(path, xn);
		end(w);
		if (rc)
			fail(w, "removexattr", path, errno, "%s", xn);
		x->set[k] = false;
		return;
	}
	uint8_t len = (uint8_t)(1 + rnd(w, XMAX));
	char val[XMAX];
	fill(w, (uint8_t *)val, len);
	begin(w, OP_SETXATTR, path);
	int rc = setxattr(path, xn, val, len, 0);
	end(w);
	if (rc)
		fail(w, "setxattr", path, errno, "%s (%u bytes)", xn, len);
	x->set[k] = true;
	x->len[k] = len;
	memcpy(x->val[k], val, len);
}

static void check_xattr(struct wk *w, const char *path, const struct xattrs *x, int k)
{
	char xn[32], val[256];
	fst_fmt(xn, sizeof(xn), "user.load%d", k);
	begin(w, OP_GETXATTR, path);
	ssize_t n = getxattr(path, xn, val, sizeof(val));
	int e = errno;
	end(w);
	if (!x->set[k]) {
		if (n >= 0 || e != ENODATA)
			fail(w, "getxattr", path, n < 0 ? e : 0, "%s was never set or was removed: want ENODATA",
			     xn);
		return;
	}
	if (n < 0)
		fail(w, "getxattr", path, e, "%s", xn);
	if ((size_t)n != x->len[k] || memcmp(val, x->val[k], x->len[k]) != 0)
		fail(w, "getxattr", path, 0, "%s: %zd bytes, want %u (or the bytes differ)", xn, n,
		     x->len[k]);
}

static void op_getxattr(struct wk *w)
{
	char path[PATHCAP];
	struct xattrs *x = pick_xattr_target(w, path);
	if (x)
		check_xattr(w, path, x, (int)rnd(w, NX));
}

static void op_symlink(struct wk *w)
{
	int where = pick_where(w, false);
	int num = (int)rnd(w, NPOOL);
	char path[PATHCAP], target[TARGETMAX + 1];
	name_path(w, where, num, path);
	size_t len = 1 + rnd(w, chance(w, 80) ? 40 : TARGETMAX);
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789._-/";
	for (size_t i = 0; i < len; i++)
		target[i] = chars[rnd(w, sizeof(chars) - 1)];
	target[len] = 0;
	bool exists = find_name(w, where, num) >= 0;
	if (!exists && free_slot_name(w) < 0)
		return;
	begin(w, OP_SYMLINK, path);
	int rc = symlink(target, path);
	int e = errno;
	end(w);
	if (exists) {
		if (rc == 0 || e != EEXIST)
			fail(w, "symlink", path, rc ? e : 0, "over an existing name: want EEXIST");
		return;
	}
	if (rc)
		fail(w, "symlink", path, e, "to a %zu-byte target", len);
	name_add(w, where, num, 'l', -1, target);
}

static void check_link(struct wk *w, int i)
{
	char path[PATHCAP], buf[TARGETMAX + 2];
	name_path(w, w->name[i].where, w->name[i].num, path);
	begin(w, OP_READLINK, path);
	ssize_t n = readlink(path, buf, sizeof(buf));
	end(w);
	if (n < 0)
		fail(w, "readlink", path, errno, "readlink");
	if ((size_t)n != strlen(w->name[i].target) || memcmp(buf, w->name[i].target, (size_t)n))
		fail(w, "readlink", path, 0, "'%.*s', want '%s'", (int)n, buf, w->name[i].target);
}

static void op_readlink(struct wk *w)
{
	int i = pick_name(w, "l");
	if (i >= 0)
		check_link(w, i);
}

static void op_close(struct wk *w)
{
	int start = (int)rnd(w, MAXINO);
	for (int k = 0; k < MAXINO; k++) {
		int i = (start + k) % MAXINO;
		if (w->ino[i].used && w->ino[i].fd >= 0) {
			char path[64];
			fst_fmt(path, sizeof(path), "(fd of inode slot %d)", i);
			do_close(w, w->ino[i].fd, path);
			w->ino[i].fd = -1;
			w->nfds--;
			return;
		}
	}
}

static const struct {
	void (*fn)(struct wk *w);
	unsigned weight;
} mix[] = {
	{op_write, 14}, {op_read, 14}, {op_stat, 10}, {op_create, 8}, {op_rename, 8},
	{op_unlink, 7}, {op_truncate, 5}, {op_readdir, 5}, {op_sync, 4}, {op_link, 4},
	{op_setxattr, 4}, {op_getxattr, 4}, {op_symlink, 3}, {op_readlink, 3}, {op_close, 3},
	{op_mkdir, 2}, {op_rmdir, 2},
};

static void one_op(struct wk *w)
{
	unsigned total = 0;
	for (size_t i = 0; i < sizeof(mix) / sizeof(mix[0]); i++)
		total += mix[i].weight;
	unsigned r = (unsigned)rnd(w, total);
	for (size_t i = 0; i < sizeof(mix) / sizeof(mix[0]); i++) {
		if (r < mix[i].weight) {
			mix[i].fn(w);
			return;
		}
		r -= mix[i].weight;
	}
}

/* ---- the whole model, checked ---- */

static void verify_all(struct wk *w)
{
	w->timing = false;
	for (int i = 0; i < MAXINO; i++) {
		if (w->ino[i].used && w->ino[i].fd >= 0) {
			do_close(w, w->ino[i].fd, "(kept fd)");
			w->ino[i].fd = -1;
		}
	}
	w->nfds = 0;
	check_dir(w, 0);
	check_dir(w, SHARED);
	for (int k = 0; k < NSUB; k++) {
		if (!w->sub[k].used)
			continue;
		check_dir(w, 1 + k);
		char path[PATHCAP];
		dir_path(w, 1 + k, path);
		for (int x = 0; x < NX; x++)
			check_xattr(w, path, &w->sub[k].x, x);
	}
	for (int i = 0; i < MAXNAME; i++) {
		if (!w->name[i].used)
			continue;
		check_name(w, i);
		if (w->name[i].type == 'l') {
			check_link(w, i);
			continue;
		}
		char path[PATHCAP];
		name_path(w, w->name[i].where, w->name[i].num, path);
		int ino = w->name[i].ino;
		int fd = do_open(w, path, O_RDONLY);
		read_check(w, ino, fd, path, 0, w->ino[ino].size + 1);
		do_close(w, fd, path);
		for (int x = 0; x < NX; x++)
			check_xattr(w, path, &w->ino[ino].x, x);
	}
}

/* Self-test: one byte of a file's model changed, as if the filesystem
 * had changed the file; the final check must fail.  False when no file
 * has a byte. */
static bool flip_model(struct wk *w)
{
	for (int i = 0; i < MAXINO; i++) {
		struct minode *m = &w->ino[i];
		if (m->used && m->size) {
			m->data[m->size / 2] ^= 0x5a;
			return true;
		}
	}
	return false;
}

void worker_main(const struct worker_cfg *c)
{
	static struct wk w; /* one per process */
	w.c = c;
	w.rng = ((uint64_t)c->seed << 20) ^ (uint64_t)c->id * 0x9e3779b97f4a7c15ull;
	w.timing = true;
	w.phase_name = "run";
	w.wbuf = malloc(MAXFILE);
	w.rbuf = malloc(MAXFILE + PIECE);
	for (int i = 0; i < MAXINO; i++)
		w.ino[i].fd = -1;
	if (!w.wbuf || !w.rbuf)
		fail(&w, "start", "-", ENOMEM, "buffers");
	char path[PATHCAP];
	dir_path(&w, 0, path);
	begin(&w, OP_MKDIR, path);
	if (mkdir(path, 0755) != 0)
		fail(&w, "mkdir", path, errno, "the worker's directory");
	end(&w);
	while (lat_now() < c->end_ns) {
		w.opno++;
		one_op(&w);
	}
	if (c->selftest && !flip_model(&w))
		fail(&w, "selftest", "-", 0, "no file has a byte to change");
	w.phase_name = "final check";
	verify_all(&w);
	int rc = lat_save(&w.lat, c->lat_path);
	if (rc)
		fail(&w, "save", c->lat_path, -rc, "latency samples");
	lat_free(&w.lat);
	c->status->phase = W_DONE;
	/* Commands come through the shared status: 'v' check again, 'q'
	 * exit.  The parent gone (we are reparented) is 'q' too. */
	pid_t parent = getppid();
	int done = 0;
	for (;;) {
		int cmd = c->status->cmd;
		if (cmd == 'q' || getppid() != parent)
			_exit(0);
		if (cmd == 'v' && !done) {
			done = 1;
			w.phase_name = "check after remount";
			verify_all(&w);
			c->status->phase = W_VERIFIED;
		}
		usleep(50000);
	}
}
