/*
 * worker.c: one load-test worker process (load.h): its operations; its
 * model and the checks against it are in model.c (worker_int.h).
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
#include "worker_int.h"
#include "fstest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- operations ---- */

static void write_at(struct wk *w, int ino, int fd, const char *path, size_t off, size_t len,
		     bool append)
{
	struct minode *m = &w->ino[ino];
	if (append)
		off = m->size;
	wk_fill(w, w->wbuf, len);
	wk_begin(w, OP_WRITE, path);
	ssize_t n = append ? write(fd, w->wbuf, len) : pwrite(fd, w->wbuf, len, (off_t)off);
	wk_end(w);
	if (n < 0)
		wk_fail(w, "write", path, errno, "%s of %zu bytes at offset %zu", append ? "append" : "pwrite",
		     len, off);
	if ((size_t)n != len)
		wk_fail(w, "write", path, 0, "short write: %zd of %zu bytes at offset %zu", n, len, off);
	model_write(m, off, w->wbuf, len);
}

static void op_unlink(struct wk *w);

static void op_create(struct wk *w)
{
	int where = pick_where(w, true);
	int num = (int)wk_rnd(w, (uint64_t)pool_size(where));
	char path[PATHCAP];
	name_path(w, where, num, path);
	if (find_name(w, where, num) >= 0) {
		wk_begin(w, OP_CREATE, path);
		int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
		int e = errno;
		wk_end(w);
		if (fd >= 0)
			wk_fail(w, "create", path, 0, "O_EXCL create of an existing name succeeded");
		if (e != EEXIST)
			wk_fail(w, "create", path, e, "O_EXCL create of an existing name: want EEXIST");
		return;
	}
	int ino = free_slot_ino(w);
	if (ino < 0 || free_slot_name(w) < 0) {
		op_unlink(w);
		return;
	}
	wk_begin(w, OP_CREATE, path);
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
	wk_end(w);
	if (fd < 0)
		wk_fail(w, "create", path, errno, "O_CREAT|O_EXCL");
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
	if (m->fd < 0 && wk_chance(w, 15)) {
		int fd = do_open(w, path, O_WRONLY | O_APPEND);
		size_t len = 1 + wk_rnd(w, wk_chance(w, 50) ? 512 : 2 * CHUNK);
		if (m->size + len > MAXFILE)
			len = m->size < MAXFILE ? MAXFILE - m->size : 0;
		if (len)
			write_at(w, ino, fd, path, 0, len, true);
		do_close(w, fd, path);
		return;
	}
	bool opened;
	int fd = get_fd(w, ino, path, &opened);
	unsigned r = (unsigned)wk_rnd(w, 100);
	size_t off, len = gen_len(w);
	if (r < 35) {                   /* overwrite */
		off = wk_rnd(w, m->size + 1);
	} else if (r < 60) {            /* append */
		off = m->size;
	} else if (r < 75) {            /* sparse: a hole, then data */
		off = m->size + 1 + wk_rnd(w, 3 * CHUNK);
	} else if (r < 90) {            /* across a chunk boundary */
		size_t k = 1 + wk_rnd(w, m->size / CHUNK + 2);
		off = k * CHUNK - 1 - wk_rnd(w, 512);
		len = 2 + wk_rnd(w, 1024);
	} else {                        /* page-aligned run (O_DIRECT path) */
		off = wk_rnd(w, MAXFILE / 4096 / 2) * 4096;
		len = 4096 * (1 + wk_rnd(w, 32));
	}
	if (off >= MAXFILE)
		off = wk_rnd(w, MAXFILE / 2);
	if (off + len > MAXFILE)
		len = MAXFILE - off;
	if (len)
		write_at(w, ino, fd, path, off, len, false);
	if (len && wk_chance(w, 25))
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
	if (wk_chance(w, 60))
		read_check(w, ino, fd, path, 0, m->size + 1); /* +1: EOF is where it should be */
	else
		read_check(w, ino, fd, path, wk_rnd(w, m->size + CHUNK), gen_len(w) + 1);
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
	bool data = wk_chance(w, 50);
	wk_begin(w, data ? OP_FDATASYNC : OP_FSYNC, path);
	int rc = data ? fdatasync(fd) : fsync(fd);
	wk_end(w);
	if (rc)
		wk_fail(w, data ? "fdatasync" : "fsync", path, errno, "sync");
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
	unsigned r = (unsigned)wk_rnd(w, 100);
	size_t size;
	if (r < 25)
		size = wk_rnd(w, m->size + 1);
	else if (r < 40)
		size = 0;
	else if (r < 65)
		size = m->size + wk_rnd(w, 2 * CHUNK);
	else if (r < 80)
		size = INLINE - 4 + wk_rnd(w, 9);
	else
		size = (1 + wk_rnd(w, 8)) * CHUNK - 3 + wk_rnd(w, 7);
	if (size > MAXFILE)
		size = MAXFILE;
	bool by_fd = m->fd >= 0 && wk_chance(w, 50);
	wk_begin(w, OP_TRUNCATE, path);
	int rc = by_fd ? ftruncate(m->fd, (off_t)size) : truncate(path, (off_t)size);
	wk_end(w);
	if (rc)
		wk_fail(w, "truncate", path, errno, "%s to %zu (from %zu)", by_fd ? "ftruncate" : "truncate",
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
	wk_begin(w, OP_RENAME, from);
	int rc = rename(from, to);
	wk_end(w);
	if (rc)
		wk_fail(w, "rename", from, errno, "directory to %s", to);
	w->sub[j] = w->sub[k];
	memset(&w->sub[k], 0, sizeof(w->sub[k]));
	for (int i = 0; i < MAXNAME; i++)
		if (w->name[i].used && w->name[i].where == 1 + k)
			w->name[i].where = 1 + j;
}

static void op_rename(struct wk *w)
{
	if (wk_chance(w, 8)) {
		op_rename_sub(w);
		return;
	}
	int s = pick_name(w, "fl");
	if (s < 0)
		return;
	char from[PATHCAP], to[PATHCAP];
	name_path(w, w->name[s].where, w->name[s].num, from);
	int where = pick_where(w, true);
	int num = (int)wk_rnd(w, (uint64_t)pool_size(where));
	int t = find_name(w, where, num);
	name_path(w, where, num, to);
	if (t >= 0 && t != s && wk_chance(w, 15)) {
		wk_begin(w, where == w->name[s].where ? OP_RENAME : OP_RENAME_X, from);
		int rc = renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
		int e = errno;
		wk_end(w);
		if (rc == 0)
			wk_fail(w, "rename", from, 0, "RENAME_NOREPLACE over %s succeeded", to);
		if (e != EEXIST)
			wk_fail(w, "rename", from, e, "RENAME_NOREPLACE over %s: want EEXIST", to);
		return;
	}
	wk_begin(w, where == w->name[s].where ? OP_RENAME : OP_RENAME_X, from);
	int rc = rename(from, to);
	wk_end(w);
	if (rc)
		wk_fail(w, "rename", from, errno, "to %s%s", to, t >= 0 ? " (over an existing name)" : "");
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
	int num = (int)wk_rnd(w, (uint64_t)pool_size(where));
	name_path(w, where, num, to);
	bool exists = find_name(w, where, num) >= 0;
	if (!exists && (free_slot_name(w) < 0 || w->ino[ino].nlink >= 6))
		return;
	wk_begin(w, OP_LINK, to);
	int rc = link(from, to);
	int e = errno;
	wk_end(w);
	if (exists) {
		if (rc == 0)
			wk_fail(w, "link", to, 0, "link from %s over an existing name succeeded", from);
		if (e != EEXIST)
			wk_fail(w, "link", to, e, "link from %s over an existing name: want EEXIST", from);
		return;
	}
	if (rc)
		wk_fail(w, "link", to, e, "from %s", from);
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
	wk_begin(w, OP_UNLINK, path);
	int rc = unlink(path);
	wk_end(w);
	if (rc)
		wk_fail(w, "unlink", path, errno, "unlink");
	struct mname *n = &w->name[i];
	n->used = false;
	if (n->type == 'f')
		drop_link(w, n->ino, path);
	if (wk_chance(w, 30)) {
		struct stat st;
		wk_begin(w, OP_STAT, path);
		rc = lstat(path, &st);
		int e = errno;
		wk_end(w);
		if (rc == 0 || e != ENOENT)
			wk_fail(w, "stat", path, rc ? e : 0, "after unlink: want ENOENT");
	}
}

static void op_mkdir(struct wk *w)
{
	int k = (int)wk_rnd(w, NSUB);
	char path[PATHCAP];
	dir_path(w, 1 + k, path);
	wk_begin(w, OP_MKDIR, path);
	int rc = mkdir(path, 0755);
	int e = errno;
	wk_end(w);
	if (w->sub[k].used) {
		if (rc == 0 || e != EEXIST)
			wk_fail(w, "mkdir", path, rc ? e : 0, "existing directory: want EEXIST");
		return;
	}
	if (rc)
		wk_fail(w, "mkdir", path, e, "mkdir");
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
	wk_begin(w, OP_RMDIR, path);
	int rc = rmdir(path);
	int e = errno;
	wk_end(w);
	if (!empty) {
		if (rc == 0 || e != ENOTEMPTY)
			wk_fail(w, "rmdir", path, rc ? e : 0, "directory with %d entries: want ENOTEMPTY",
			     entries_in(w, 1 + k));
		return;
	}
	if (rc)
		wk_fail(w, "rmdir", path, e, "empty directory");
	w->sub[k].used = false;
}

static void op_readdir(struct wk *w)
{
	unsigned r = (unsigned)wk_rnd(w, 100);
	int where = 0;
	if (r < 25)
		where = SHARED;
	else if (r < 50 && pick_sub(w, true) >= 0)
		where = 1 + pick_sub(w, true);
	check_dir(w, where);
}

static void op_stat(struct wk *w)
{
	if (wk_chance(w, 15)) {
		int where = pick_where(w, true), num = (int)wk_rnd(w, (uint64_t)pool_size(where));
		if (find_name(w, where, num) < 0) {
			char path[PATHCAP];
			name_path(w, where, num, path);
			struct stat st;
			wk_begin(w, OP_STAT, path);
			int rc = lstat(path, &st);
			int e = errno;
			wk_end(w);
			if (rc == 0 || e != ENOENT)
				wk_fail(w, "stat", path, rc ? e : 0, "a name the model does not have: want ENOENT");
			return;
		}
	}
	if (wk_chance(w, 10)) {
		int k = pick_sub(w, true);
		if (k >= 0) {
			char path[PATHCAP];
			dir_path(w, 1 + k, path);
			struct stat st;
			wk_begin(w, OP_STAT, path);
			int rc = lstat(path, &st);
			wk_end(w);
			if (rc || !S_ISDIR(st.st_mode))
				wk_fail(w, "stat", path, rc ? errno : 0, "want a directory");
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
	int k = wk_chance(w, 25) ? pick_sub(w, true) : -1;
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
	int k = (int)wk_rnd(w, NX);
	fst_fmt(xn, sizeof(xn), "user.load%d", k);
	if (x->set[k] && wk_chance(w, 20)) {
		wk_begin(w, OP_SETXATTR, path);
		int rc = removexattr(path, xn);
		wk_end(w);
		if (rc)
			wk_fail(w, "removexattr", path, errno, "%s", xn);
		x->set[k] = false;
		return;
	}
	uint8_t len = (uint8_t)(1 + wk_rnd(w, XMAX));
	char val[XMAX];
	wk_fill(w, (uint8_t *)val, len);
	wk_begin(w, OP_SETXATTR, path);
	int rc = setxattr(path, xn, val, len, 0);
	wk_end(w);
	if (rc)
		wk_fail(w, "setxattr", path, errno, "%s (%u bytes)", xn, len);
	x->set[k] = true;
	x->len[k] = len;
	memcpy(x->val[k], val, len);
}

static void op_getxattr(struct wk *w)
{
	char path[PATHCAP];
	struct xattrs *x = pick_xattr_target(w, path);
	if (x)
		check_xattr(w, path, x, (int)wk_rnd(w, NX));
}

static void op_symlink(struct wk *w)
{
	int where = pick_where(w, false);
	int num = (int)wk_rnd(w, NPOOL);
	char path[PATHCAP], target[TARGETMAX + 1];
	name_path(w, where, num, path);
	size_t len = 1 + wk_rnd(w, wk_chance(w, 80) ? 40 : TARGETMAX);
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789._-/";
	for (size_t i = 0; i < len; i++)
		target[i] = chars[wk_rnd(w, sizeof(chars) - 1)];
	target[len] = 0;
	bool exists = find_name(w, where, num) >= 0;
	if (!exists && free_slot_name(w) < 0)
		return;
	wk_begin(w, OP_SYMLINK, path);
	int rc = symlink(target, path);
	int e = errno;
	wk_end(w);
	if (exists) {
		if (rc == 0 || e != EEXIST)
			wk_fail(w, "symlink", path, rc ? e : 0, "over an existing name: want EEXIST");
		return;
	}
	if (rc)
		wk_fail(w, "symlink", path, e, "to a %zu-byte target", len);
	name_add(w, where, num, 'l', -1, target);
}

static void op_readlink(struct wk *w)
{
	int i = pick_name(w, "l");
	if (i >= 0)
		check_link(w, i);
}

static void op_close(struct wk *w)
{
	int start = (int)wk_rnd(w, MAXINO);
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
	unsigned r = (unsigned)wk_rnd(w, total);
	for (size_t i = 0; i < sizeof(mix) / sizeof(mix[0]); i++) {
		if (r < mix[i].weight) {
			mix[i].fn(w);
			return;
		}
		r -= mix[i].weight;
	}
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
		wk_fail(&w, "start", "-", ENOMEM, "buffers");
	char path[PATHCAP];
	dir_path(&w, 0, path);
	wk_begin(&w, OP_MKDIR, path);
	if (mkdir(path, 0755) != 0)
		wk_fail(&w, "mkdir", path, errno, "the worker's directory");
	wk_end(&w);
	while (lat_now() < c->end_ns) {
		w.opno++;
		one_op(&w);
	}
	if (c->selftest && !flip_model(&w))
		wk_fail(&w, "selftest", "-", 0, "no file has a byte to change");
	w.phase_name = "final check";
	verify_all(&w);
	int rc = lat_save(&w.lat, c->lat_path);
	if (rc)
		wk_fail(&w, "save", c->lat_path, -rc, "latency samples");
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
