/*
 * model.c: a load-test worker's model of what it made, and the checks of
 * the filesystem against it (worker_int.h; the design is in worker.c).
 * Failures name the operation, path, errno, worker and seed, and exit.
 */
#include "worker_int.h"
#include "fstest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- failing ---- */

void wk_fail(struct wk *w, const char *op, const char *path, int err, const char *fmt, ...)
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

void wk_begin(struct wk *w, enum load_op op, const char *path)
{
	struct wstatus *s = w->c->status;
	fst_fmt(s->op, sizeof(s->op), "%s", load_op_name[op]);
	fst_fmt(s->path, sizeof(s->path), "%s", path);
	w->cur = op;
	w->t0 = lat_now();
	s->since_ns = w->t0;
}

void wk_end(struct wk *w)
{
	uint64_t dt = lat_now() - w->t0;
	w->c->status->ops++;
	if (w->timing && lat_add(&w->lat, w->cur, dt))
		wk_fail(w, load_op_name[w->cur], "-", ENOMEM, "cannot keep the latency sample");
}

/* ---- names and paths ---- */

uint64_t wk_rnd(struct wk *w, uint64_t n)
{
	return fst_rand_below(&w->rng, n);
}

bool wk_chance(struct wk *w, unsigned pct)
{
	return fst_chance(&w->rng, pct);
}

void dir_path(struct wk *w, int where, char *out)
{
	if (where == SHARED)
		fst_fmt(out, PATHCAP, "%s/shared", w->c->mnt);
	else if (where == 0)
		fst_fmt(out, PATHCAP, "%s/w%d", w->c->mnt, w->c->id);
	else
		fst_fmt(out, PATHCAP, "%s/w%d/d%d", w->c->mnt, w->c->id, where - 1);
}

void entry_name(struct wk *w, int where, int num, char *out, size_t cap)
{
	if (where == SHARED)
		fst_fmt(out, cap, "w%d_%d", w->c->id, num);
	else
		fst_fmt(out, cap, "n%d", num);
}

void name_path(struct wk *w, int where, int num, char *out)
{
	char d[PATHCAP], n[64];
	dir_path(w, where, d);
	entry_name(w, where, num, n, sizeof(n));
	fst_fmt(out, PATHCAP, "%s/%s", d, n);
}

int pool_size(int where)
{
	return where == SHARED ? NSHARED : NPOOL;
}

int find_name(struct wk *w, int where, int num)
{
	for (int i = 0; i < MAXNAME; i++)
		if (w->name[i].used && w->name[i].where == where && w->name[i].num == num)
			return i;
	return -1;
}

/* A random used name whose type is in types ("f", "l", "fl"), or -1. */
int pick_name(struct wk *w, const char *types)
{
	int start = (int)wk_rnd(w, MAXNAME);
	for (int k = 0; k < MAXNAME; k++) {
		int i = (start + k) % MAXNAME;
		if (w->name[i].used && strchr(types, w->name[i].type))
			return i;
	}
	return -1;
}

int free_slot_name(struct wk *w)
{
	for (int i = 0; i < MAXNAME; i++)
		if (!w->name[i].used)
			return i;
	return -1;
}

int free_slot_ino(struct wk *w)
{
	for (int i = 0; i < MAXINO; i++)
		if (!w->ino[i].used)
			return i;
	return -1;
}

int pick_sub(struct wk *w, bool used)
{
	int start = (int)wk_rnd(w, NSUB);
	for (int k = 0; k < NSUB; k++) {
		int s = (start + k) % NSUB;
		if (w->sub[s].used == used)
			return s;
	}
	return -1;
}

/* Own directory most often, a subdirectory, or shared. */
int pick_where(struct wk *w, bool shared_ok)
{
	unsigned r = (unsigned)wk_rnd(w, 100);
	if (shared_ok && r < 20)
		return SHARED;
	if (r < 45) {
		int s = pick_sub(w, true);
		if (s >= 0)
			return 1 + s;
	}
	return 0;
}

int name_add(struct wk *w, int where, int num, char type, int ino, const char *target)
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

int entries_in(struct wk *w, int where)
{
	int n = 0;
	for (int i = 0; i < MAXNAME; i++)
		n += w->name[i].used && w->name[i].where == where;
	return n;
}

/* ---- contents ---- */

void wk_fill(struct wk *w, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = fst_rand(&w->rng);
		size_t k = n - i < 8 ? n - i : 8;
		memcpy(p + i, &v, k);
	}
}

/* A length: tiny, around the inline limit, within a chunk, across
 * chunks. */
size_t gen_len(struct wk *w)
{
	unsigned r = (unsigned)wk_rnd(w, 100);
	if (r < 15)
		return wk_rnd(w, 300);
	if (r < 35)
		return 300 + wk_rnd(w, INLINE - 300 + 1);
	if (r < 45)
		return INLINE - 2 + wk_rnd(w, 4);
	if (r < 65)
		return INLINE + wk_rnd(w, CHUNK - INLINE);
	if (r < 85)
		return CHUNK + wk_rnd(w, 3 * CHUNK);
	return 4 * CHUNK + wk_rnd(w, MAXFILE / 2 - 4 * CHUNK);
}

void model_resize(struct minode *m, size_t size)
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

void model_write(struct minode *m, size_t off, const uint8_t *p, size_t len)
{
	if (len == 0)
		return;
	if (off + len > m->size)
		model_resize(m, off + len);
	memcpy(m->data + off, p, len);
}

/* Read [off, off + len) through fd and compare with the model: exactly
 * the bytes the model has there (none past its end). */
void read_check(struct wk *w, int ino, int fd, const char *path, size_t off, size_t len)
{
	struct minode *m = &w->ino[ino];
	size_t want = off >= m->size ? 0 : (len < m->size - off ? len : m->size - off);
	size_t got = 0;
	for (;;) {
		size_t n = len - got < PIECE ? len - got : PIECE;
		if (n == 0)
			break;
		wk_begin(w, OP_READ, path);
		ssize_t r = pread(fd, w->rbuf + got, n, (off_t)(off + got));
		wk_end(w);
		if (r < 0)
			wk_fail(w, "read", path, errno, "pread of %zu bytes at offset %zu", n, off + got);
		if (r == 0)
			break;
		got += (size_t)r;
		if (got > want)
			break;
	}
	if (got != want)
		wk_fail(w, "read", path, 0,
		     "read %zu bytes at offset %zu of a %zu-byte file: got %zu, want %zu", len, off,
		     m->size, got, want);
	if (want > 0 && memcmp(w->rbuf, m->data + off, want) != 0) {
		size_t i = 0;
		while (w->rbuf[i] == m->data[off + i])
			i++;
		size_t j = i;
		while (j < want && w->rbuf[j] != m->data[off + j])
			j++;
		wk_fail(w, "read", path, 0,
		     "content differs at offset %zu (byte 0x%02x, want 0x%02x; %zu bytes differ "
		     "from there) of a %zu-byte file",
		     off + i, w->rbuf[i], m->data[off + i], j - i, m->size);
	}
}

void check_size(struct wk *w, int ino, int fd, const char *path)
{
	struct stat st;
	wk_begin(w, OP_STAT, path);
	int rc = fstat(fd, &st);
	wk_end(w);
	if (rc)
		wk_fail(w, "fstat", path, errno, "fstat");
	if ((size_t)st.st_size != w->ino[ino].size)
		wk_fail(w, "fstat", path, 0, "size %lld, want %zu", (long long)st.st_size,
		     w->ino[ino].size);
}

/* ---- fds ---- */

int do_open(struct wk *w, const char *path, int flags)
{
	wk_begin(w, OP_OPEN, path);
	int fd = open(path, flags | O_CLOEXEC);
	wk_end(w);
	if (fd < 0)
		wk_fail(w, "open", path, errno, "open flags 0%o", flags);
	return fd;
}

void do_close(struct wk *w, int fd, const char *path)
{
	wk_begin(w, OP_CLOSE, path);
	int rc = close(fd);
	wk_end(w);
	if (rc)
		wk_fail(w, "close", path, errno, "close");
}

/* The inode's kept fd, or a new O_RDWR one (*opened). */
int get_fd(struct wk *w, int ino, const char *path, bool *opened)
{
	*opened = w->ino[ino].fd < 0;
	return *opened ? do_open(w, path, O_RDWR) : w->ino[ino].fd;
}

/* Keep a fd get_fd opened (sometimes), or close it. */
void put_fd(struct wk *w, int ino, int fd, bool opened, const char *path)
{
	if (!opened)
		return;
	if (w->nfds < MAXFDS && wk_chance(w, 25)) {
		w->ino[ino].fd = fd;
		w->nfds++;
		return;
	}
	do_close(w, fd, path);
}

/* One link of ino is gone; at the last, an fd still open must still read
 * the whole content before it closes. */
void drop_link(struct wk *w, int ino, const char *path)
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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The listing of a directory (only this worker's names in shared) must be
 * the model's: same names, no name twice, the right d_type. */
void check_dir(struct wk *w, int where)
{
	char path[PATHCAP], prefix[32];
	dir_path(w, where, path);
	fst_fmt(prefix, sizeof(prefix), "w%d_", w->c->id);
	char *got[MAXNAME + NSUB + 8], *want[MAXNAME + NSUB];
	char got_type[MAXNAME + NSUB + 8];
	int ngot = 0, nwant = 0;
	wk_begin(w, OP_READDIR, path);
	DIR *d = opendir(path);
	if (!d)
		wk_fail(w, "readdir", path, errno, "opendir");
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (where == SHARED && strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (ngot == MAXNAME + NSUB + 8)
			wk_fail(w, "readdir", path, 0, "more than %d entries", ngot);
		got_type[ngot] = (char)de->d_type;
		got[ngot++] = strdup(de->d_name);
	}
	int e = errno;
	closedir(d);
	wk_end(w);
	if (e)
		wk_fail(w, "readdir", path, e, "readdir");
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
			wk_fail(w, "readdir", path, 0, "%s has d_type %d, want %d", got[i], got_type[i],
			     want_type);
	}
	qsort(got, (size_t)ngot, sizeof(char *), cmp_str);
	qsort(want, (size_t)nwant, sizeof(char *), cmp_str);
	for (int i = 1; i < ngot; i++)
		if (!strcmp(got[i], got[i - 1]))
			wk_fail(w, "readdir", path, 0, "%s listed twice", got[i]);
	int a = 0, b = 0;
	while (a < ngot || b < nwant) {
		int c = a == ngot ? 1 : b == nwant ? -1 : strcmp(got[a], want[b]);
		if (c < 0)
			wk_fail(w, "readdir", path, 0, "lists %s, which the model does not have (%d listed, %d expected)",
			     got[a], ngot, nwant);
		if (c > 0)
			wk_fail(w, "readdir", path, 0, "misses %s (%d listed, %d expected)", want[b], ngot,
			     nwant);
		a++;
		b++;
	}
	for (int i = 0; i < ngot; i++)
		free(got[i]);
	for (int i = 0; i < nwant; i++)
		free(want[i]);
}

void check_name(struct wk *w, int i)
{
	struct mname *n = &w->name[i];
	char path[PATHCAP];
	name_path(w, n->where, n->num, path);
	struct stat st;
	wk_begin(w, OP_STAT, path);
	int rc = lstat(path, &st);
	wk_end(w);
	if (rc)
		wk_fail(w, "stat", path, errno, "lstat of a %s the model has",
		     n->type == 'f' ? "file" : "symlink");
	if (n->type == 'f') {
		struct minode *m = &w->ino[n->ino];
		if (!S_ISREG(st.st_mode) || (size_t)st.st_size != m->size || st.st_nlink != m->nlink)
			wk_fail(w, "stat", path, 0, "mode 0%o size %lld nlink %lu, want a file of %zu bytes, nlink %u",
			     st.st_mode, (long long)st.st_size, (unsigned long)st.st_nlink, m->size,
			     m->nlink);
	} else if (!S_ISLNK(st.st_mode) || (size_t)st.st_size != strlen(n->target)) {
		wk_fail(w, "stat", path, 0, "mode 0%o size %lld, want a symlink of %zu bytes", st.st_mode,
		     (long long)st.st_size, strlen(n->target));
	}
}

void check_xattr(struct wk *w, const char *path, const struct xattrs *x, int k)
{
	char xn[32], val[256];
	fst_fmt(xn, sizeof(xn), "user.load%d", k);
	wk_begin(w, OP_GETXATTR, path);
	ssize_t n = getxattr(path, xn, val, sizeof(val));
	int e = errno;
	wk_end(w);
	if (!x->set[k]) {
		if (n >= 0 || e != ENODATA)
			wk_fail(w, "getxattr", path, n < 0 ? e : 0, "%s was never set or was removed: want ENODATA",
			     xn);
		return;
	}
	if (n < 0)
		wk_fail(w, "getxattr", path, e, "%s", xn);
	if ((size_t)n != x->len[k] || memcmp(val, x->val[k], x->len[k]) != 0)
		wk_fail(w, "getxattr", path, 0, "%s: %zd bytes, want %u (or the bytes differ)", xn, n,
		     x->len[k]);
}

void check_link(struct wk *w, int i)
{
	char path[PATHCAP], buf[TARGETMAX + 2];
	name_path(w, w->name[i].where, w->name[i].num, path);
	wk_begin(w, OP_READLINK, path);
	ssize_t n = readlink(path, buf, sizeof(buf));
	wk_end(w);
	if (n < 0)
		wk_fail(w, "readlink", path, errno, "readlink");
	if ((size_t)n != strlen(w->name[i].target) || memcmp(buf, w->name[i].target, (size_t)n))
		wk_fail(w, "readlink", path, 0, "'%.*s', want '%s'", (int)n, buf, w->name[i].target);
}

/* ---- the whole model, checked ---- */

void verify_all(struct wk *w)
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
bool flip_model(struct wk *w)
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
