/*
 * env_mirror: a store_env that keeps the store's directory whole in several
 * directories, its copies (FORMAT.md "Copies").  The store names its files
 * under the first directory; every path under it is mapped to the same name
 * in each copy.
 *
 * Writes (create, append, flush, sync, rename, unlink, truncate, mkdir, the
 * directory sync, the lock) go to every live copy, in order, and succeed
 * when every live copy did.  A copy that fails where another succeeds
 * (EIO, a vanished directory, a file removed under an open handle) is
 * dropped: written no more, reported through the failed() hook, which
 * records it durably (the daemon marks it stale in the superblocks) before
 * the operation returns, so nothing that copy lacks is acknowledged before
 * the copy is known to lack it.  So is a copy whose disk is full (ENOSPC,
 * EDQUOT) while another took the operation: one full disk stops no write
 * the others can take (the copy is brought up to date at the next open).
 * A resource error (ENOMEM, EMFILE) fails the operation instead, as a
 * full disk does in every copy: the store handles those as it does with
 * one copy (it cuts a log back, retries a flush), and dropping a copy for
 * a transient shortage would give away redundancy for nothing.  An error
 * every live copy returns is the operation's error, and drops nothing.
 * The last live copy is never dropped.
 *
 * Reads use the first live copy that has the file.  A read error, a file
 * missing in one copy, or bytes that fail the reader's check
 * (pread_checked: block and footer checksums) are answered from another
 * copy; the bad copy's file is then rewritten from the good one (healed,
 * reported) when it is an immutable table.  A copy whose heal fails, or
 * that gives MIRROR_MAX_READ_ERRORS read errors, is dropped.
 *
 * Locking: `failed` is atomic.  `mu` serialises drops (and so the failed()
 * hook) and heals; it is never held while the caller holds a store lock
 * that the hook could need (the store does no I/O under its own mutex).
 * A readable file is shared by threads: its current copy is atomic and its
 * per-copy handles are opened once under the file's mutex.
 */
#include "env.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIRROR_MAX_READ_ERRORS 16
#define HEAL_SUFFIX ".heal"

struct mirror {
	struct store_env env; /* first: the store's handle is &m->env */
	struct store_env_ops ops; /* mirror_ops, less what the inner env lacks */
	struct store_env *inner;
	atomic_size_t n;    /* grows when a copy joins (its slot filled first) */
	char *dirs[STORE_MAX_COPIES];
	size_t dlen0; /* strlen(dirs[0]): the prefix the store uses */
	atomic_uint failed; /* bit i: copy i dropped */
	atomic_uint noread; /* bit i: copy i stale, written but never read */
	atomic_uint joining; /* bit i: copy i joining: a name it lacks (ENOENT)
			      * is no failure, and files open before it joined
			      * are not written to it */
	unsigned unrecorded; /* dropped, but failed() failed: every write fails
			      * until it is recorded (mu) */
	struct env_lock *join_lock[STORE_MAX_COPIES]; /* a joined copy's LOCK */
	atomic_uint_least64_t healed[STORE_MAX_COPIES];
	atomic_uint_least64_t read_errors[STORE_MAX_COPIES];
	pthread_mutex_t mu;
	struct env_mirror_hooks hooks;
	/* Files to read from a given copy first (env_mirror_prefer): a
	 * read-only open of copies that differ.  Set before use, then only
	 * read. */
	struct prefer {
		char *path;
		unsigned copy;
	} *prefer;
	size_t nprefer;
};

struct env_wfile {
	struct mirror *m;
	char *path; /* as the store named it */
	struct env_wfile *f[STORE_MAX_COPIES]; /* NULL: not open there */
};

/* The handles of the inner env have its own (opaque) types of the same
 * names: they are only passed back to it. */
struct env_rfile {
	struct mirror *m;
	char *path;
	atomic_uint cur;           /* the copy reads go to */
	atomic_uint bad;           /* copies that failed this file */
	pthread_mutex_t mu;        /* opening f[] */
	struct env_rfile *_Atomic f[STORE_MAX_COPIES];
};

struct env_lock {
	struct mirror *m;
	struct env_lock *l[STORE_MAX_COPIES];
};

static struct mirror *M(struct store_env *env)
{
	return (struct mirror *)env;
}

static bool live(const struct mirror *m, size_t i)
{
	return !(atomic_load(&m->failed) & (1u << i));
}

/* Is copy i one the store may rely on: live, current (not stale), not
 * joining?  Only these count as survivors. */
static bool trusted(const struct mirror *m, size_t i)
{
	return !((atomic_load(&m->failed) | atomic_load(&m->noread) | atomic_load(&m->joining)) &
		 (1u << i));
}

/* May copy i be read from? */
static bool readable(const struct mirror *m, size_t i)
{
	return !((atomic_load(&m->failed) | atomic_load(&m->noread)) & (1u << i));
}

static void logf_(struct mirror *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct mirror *m, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (m->hooks.log)
		m->hooks.log(m->hooks.ctx, msg);
}

/* path in copy i: the store's prefix replaced by dirs[i]; a path outside
 * the store's directory is returned as it is.  NULL when out of memory. */
static char *copy_path(const struct mirror *m, size_t i, const char *path)
{
	const char *rest = path;
	const char *base = "";
	if (strncmp(path, m->dirs[0], m->dlen0) == 0 &&
	    (path[m->dlen0] == '/' || path[m->dlen0] == 0)) {
		base = m->dirs[i];
		rest = path + m->dlen0;
	}
	size_t bl = strlen(base), rl = strlen(rest);
	char *p = malloc(bl + rl + 1);
	if (p) {
		memcpy(p, base, bl);
		memcpy(p + bl, rest, rl + 1);
	}
	return p;
}

/* Does err say something about the copy (its disk, its directory), rather
 * than about space or resources that may come back? */
static bool copy_error(int err)
{
	switch (-err) {
	case ENOSPC:
	case EDQUOT:
	case ENOMEM:
	case EMFILE:
	case ENFILE:
	case EAGAIN:
	case EINTR:
	case EFBIG:
	case EBUSY:
		return false;
	default:
		return err != 0;
	}
}

/* Is err a full disk?  Alone it fails the operation (the store's "Full
 * disk"); while another copy took the operation, the full copy is
 * dropped, so that one full disk stops no write the others can take. */
static bool space_error(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

static int drop_locked(struct mirror *m, size_t i, int err, const char *what)
{
	if (!live(m, i))
		return __atomic_load_n(&m->unrecorded, __ATOMIC_SEQ_CST) & (1u << i) ? err : 0;
	unsigned left = 0;
	for (size_t j = 0; j < m->n; j++)
		left += trusted(m, j) && j != i;
	if (!left)
		return err; /* the last current copy: its error is the store's */
	if (space_error(err)) {
		/* A full disk: recorded first, while the copy is still
		 * written (a stale copy written more loses nothing).  When
		 * even that record finds no room, the copy stays and the
		 * operation fails as with one copy (the store's "Full disk"
		 * handling), rather than every write after it failing until
		 * the drop can be recorded. */
		int rc = m->hooks.failed ? m->hooks.failed(m->hooks.ctx, i, err, what) : 0;
		if (rc) {
			logf_(m, "%s: %s: %s; this copy of the store cannot be dropped (recording it: "
			      "%s): the operation fails", m->dirs[i], what, strerror(-err),
			      strerror(-rc));
			return err;
		}
		atomic_fetch_or(&m->failed, 1u << i);
		logf_(m, "%s: %s: %s; this copy of the store is dropped, %u left", m->dirs[i],
		      what, strerror(-err), left);
		return 0;
	}
	/* Unrecorded from the moment it is written no more: a write on
	 * another thread that skips it waits in recorded() for the hook. */
	__atomic_or_fetch(&m->unrecorded, 1u << i, __ATOMIC_SEQ_CST);
	atomic_fetch_or(&m->failed, 1u << i);
	logf_(m, "%s: %s: %s; this copy of the store is dropped, %u left", m->dirs[i],
	      what, strerror(-err), left);
	int rc = 0;
	if (m->hooks.failed)
		rc = m->hooks.failed(m->hooks.ctx, i, err, what);
	if (rc)
		logf_(m, "%s: recording the dropped copy: %s; writes fail until it is recorded",
		      m->dirs[i], strerror(-rc));
	else
		__atomic_and_fetch(&m->unrecorded, ~(1u << i), __ATOMIC_SEQ_CST);
	return rc ? err : 0;
}

/* Before a write: every drop recorded (failed() tried again).  0, or the
 * error that keeps a write from being acknowledged. */
static int recorded(struct mirror *m)
{
	if (!__atomic_load_n(&m->unrecorded, __ATOMIC_SEQ_CST))
		return 0;
	pthread_mutex_lock(&m->mu); /* waits for a drop's hook under way */
	int rc = 0;
	for (size_t i = 0; i < m->n && !rc; i++) {
		if (!(__atomic_load_n(&m->unrecorded, __ATOMIC_SEQ_CST) & (1u << i)))
			continue;
		rc = m->hooks.failed ? m->hooks.failed(m->hooks.ctx, i, -EIO, "dropped earlier") : 0;
		if (!rc)
			__atomic_and_fetch(&m->unrecorded, ~(1u << i), __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&m->mu);
	return rc ? -EIO : 0;
}

/* Drop copy i (its error err in `what`).  0 when the others go on; else
 * the error to return (the last copy, or the drop could not be recorded). */
static int drop(struct mirror *m, size_t i, int err, const char *what)
{
	pthread_mutex_lock(&m->mu);
	int rc = drop_locked(m, i, err, what);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/*
 * Fold per-copy results: rcs[i] for every live copy i in mask.  Every one
 * failed: their first error, nothing dropped.  A resource error: that
 * error (copies that failed otherwise are dropped all the same).  Else
 * the failed copies (a full disk's too) are dropped and the operation
 * succeeds.
 */
static int settle(struct mirror *m, int *rcs, unsigned mask, const char *path,
		  const char *op)
{
	int first = 0, soft = 0;
	bool any_ok = false;
	unsigned joining = atomic_load(&m->joining);
	/* A name a joining copy lacks is one it gets when it is filled; a
	 * write or sync failing in it is a failure like any. */
	bool names = strcmp(op, "write") && strcmp(op, "sync") && strcmp(op, "create") &&
		     strcmp(op, "lock");
	if (!mask)
		return -EIO; /* no live copy: nothing can be done */
	for (size_t i = 0; i < m->n; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (names && rcs[i] == -ENOENT && (joining & (1u << i)))
			rcs[i] = 0; /* not there yet: copied in before it joins */
		if (rcs[i] == 0 && trusted(m, i))
			any_ok = true;
		else if (!first)
			first = rcs[i];
		if (rcs[i] && !copy_error(rcs[i]) && !space_error(rcs[i]) && !soft)
			soft = rcs[i];
	}
	if (!first)
		return 0;
	if (!any_ok)
		return first;
	int ret = soft;
	for (size_t i = 0; i < m->n; i++) {
		if (!(mask & (1u << i)) || !rcs[i] || (!copy_error(rcs[i]) && !space_error(rcs[i])))
			continue;
		char what[600];
		const char *slash = strrchr(path, '/');
		snprintf(what, sizeof(what), "%s: %s failed", slash ? slash + 1 : path, op);
		int r = drop(m, i, rcs[i], what);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

static unsigned live_mask(const struct mirror *m)
{
	return ((1u << m->n) - 1) & ~atomic_load(&m->failed);
}

/* ---- writable files ---- */

static void wfile_free(struct env_wfile *w)
{
	free(w->path);
	free(w);
}

static int mirror_open_writable(struct store_env *env, const char *path, struct env_wfile **out)
{
	struct mirror *m = M(env);
	struct env_wfile *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		return -ENOMEM;
	}
	w->m = m;
	int rcs[STORE_MAX_COPIES] = { 0 };
	int rr = recorded(m);
	if (rr) {
		wfile_free(w);
		return rr;
	}
	unsigned mask = live_mask(m);
	for (size_t i = 0; i < m->n; i++) {
		if (!(mask & (1u << i)))
			continue;
		char *p = copy_path(m, i, path);
		rcs[i] = p ? m->inner->ops->open_writable(m->inner, p, &w->f[i]) : -ENOMEM;
		if (rcs[i])
			w->f[i] = NULL;
		free(p);
	}
	int rc = settle(m, rcs, mask, path, "create");
	if (!rc)
		rc = recorded(m);
	if (rc) {
		for (size_t i = 0; i < m->n; i++)
			if (w->f[i])
				(void)m->inner->ops->close_writable(w->f[i]); /* failing anyway */
		wfile_free(w);
		return rc;
	}
	*out = w;
	return 0;
}


enum wop { W_APPEND, W_FLUSH, W_SYNC };

/* Run one operation on every live copy w is open in. */
static int each_w(struct env_wfile *w, enum wop op, const void *d, size_t n)
{
	struct mirror *m = w->m;
	const struct store_env_ops *o = m->inner->ops;
	int rcs[STORE_MAX_COPIES] = { 0 };
	unsigned mask = 0;
	int rr = recorded(m);
	if (rr)
		return rr;
	for (size_t i = 0; i < m->n; i++) {
		if (!w->f[i] || !live(m, i))
			continue;
		mask |= 1u << i;
		rcs[i] = op == W_APPEND ? o->append(w->f[i], d, n)
			 : op == W_FLUSH ? o->flush(w->f[i])
					 : o->sync(w->f[i]);
	}
	if (!mask)
		return -EIO; /* every copy it was open in is gone */
	int rc = settle(m, rcs, mask, w->path,
			op == W_APPEND ? "write" : op == W_FLUSH ? "write" : "sync");
	/* A copy another thread dropped meanwhile was skipped: this succeeds
	 * only once that drop is recorded (recorded() waits for its hook). */
	return rc ? rc : recorded(m);
}

static int mirror_append(struct env_wfile *w, const void *data, size_t len)
{
	return each_w(w, W_APPEND, data, len);
}

static int mirror_flush(struct env_wfile *w)
{
	return each_w(w, W_FLUSH, NULL, 0);
}

static int mirror_sync(struct env_wfile *w)
{
	return each_w(w, W_SYNC, NULL, 0);
}

static int mirror_close_writable(struct env_wfile *w)
{
	struct mirror *m = w->m;
	int rcs[STORE_MAX_COPIES] = { 0 };
	unsigned mask = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (!w->f[i])
			continue;
		int rc = m->inner->ops->close_writable(w->f[i]);
		if (live(m, i)) {
			mask |= 1u << i;
			rcs[i] = rc;
		}
	}
	int rc = mask ? settle(m, rcs, mask, w->path, "write") : 0;
	wfile_free(w);
	return rc;
}

/* ---- readable files ---- */

static void rfile_free(struct env_rfile *r)
{
	for (size_t i = 0; i < STORE_MAX_COPIES; i++) {
		struct env_rfile *f = atomic_load(&r->f[i]);
		if (f)
			r->m->inner->ops->close_readable(f);
	}
	pthread_mutex_destroy(&r->mu);
	free(r->path);
	free(r);
}

/* r's handle in copy i, opened on first use.  0 or an errno. */
static int rfile_in(struct env_rfile *r, size_t i, struct env_rfile **out)
{
	struct env_rfile *f = atomic_load(&r->f[i]);
	if (f) {
		*out = f;
		return 0;
	}
	struct mirror *m = r->m;
	pthread_mutex_lock(&r->mu);
	f = atomic_load(&r->f[i]);
	int rc = 0;
	if (!f) {
		char *p = copy_path(m, i, r->path);
		rc = p ? m->inner->ops->open_readable(m->inner, p, &f) : -ENOMEM;
		free(p);
		if (rc == 0)
			atomic_store(&r->f[i], f);
	}
	pthread_mutex_unlock(&r->mu);
	*out = f;
	return rc;
}

static bool is_table(const char *path)
{
	size_t n = strlen(path);
	return n > 4 && strcmp(path + n - 4, ".sst") == 0;
}

/*
 * Rewrite path in copy `bad` from copy `good`: written beside it as
 * NAME.heal, synced, renamed over it, the directory synced.  Only tables
 * (immutable) are healed while the store runs.  mu held.
 */
static int heal_locked(struct mirror *m, size_t good, size_t bad, const char *path)
{
	char *from = copy_path(m, good, path), *to = copy_path(m, bad, path);
	int rc = from && to ? env_copy_file(m->inner, from, to) : -ENOMEM;
	free(from);
	free(to);
	return rc;
}

/*
 * Copy `bad` failed r (err: what it said, why: which check).  Heal it from
 * copy `good` when r is a table; count the error; drop the copy when the
 * heal fails or it keeps failing.
 */
static void copy_failed_read(struct env_rfile *r, size_t bad, size_t good, int err, const char *why)
{
	struct mirror *m = r->m;
	const char *slash = strrchr(r->path, '/');
	const char *name = slash ? slash + 1 : r->path;
	uint64_t n = atomic_fetch_add(&m->read_errors[bad], 1) + 1;
	pthread_mutex_lock(&m->mu);
	if (!live(m, bad)) {
		pthread_mutex_unlock(&m->mu);
		return;
	}
	if (!is_table(r->path) || m->hooks.read_only) {
		logf_(m, "%s/%s: %s; read from %s", m->dirs[bad], name, why, m->dirs[good]);
	} else {
		int rc = heal_locked(m, good, bad, r->path);
		if (rc == 0) {
			atomic_fetch_add(&m->healed[bad], 1);
			logf_(m, "%s/%s: %s; read from %s, and rewritten from it", m->dirs[bad], name,
			      why, m->dirs[good]);
		} else {
			char what[600];
			snprintf(what, sizeof(what), "%s: %s, and rewriting it from %s failed (%s)", name,
				 why, m->dirs[good], strerror(-rc));
			(void)drop_locked(m, bad, err ? err : -EIO, what);
		}
	}
	if (n >= MIRROR_MAX_READ_ERRORS && live(m, bad)) {
		char what[600];
		snprintf(what, sizeof(what), "%" PRIu64 " read errors, the last %s: %s", n, name, why);
		(void)drop_locked(m, bad, err ? err : -EIO, what);
	}
	pthread_mutex_unlock(&m->mu);
}

static int mirror_open_readable(struct store_env *env, const char *path, struct env_rfile **out)
{
	struct mirror *m = M(env);
	struct env_rfile *r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return -ENOMEM;
	}
	r->m = m;
	pthread_mutex_init(&r->mu, NULL);
	int first = 0;
	size_t firsti = 0, start = 0;
	for (size_t k = 0; k < m->nprefer; k++)
		if (strcmp(m->prefer[k].path, path) == 0)
			start = m->prefer[k].copy;
	for (size_t k = 0; k < m->n; k++) {
		size_t i = (start + k) % m->n;
		if (!readable(m, i))
			continue;
		struct env_rfile *f;
		int rc = rfile_in(r, i, &f);
		if (rc == 0) {
			atomic_store(&r->cur, (unsigned)i);
			if (first && copy_error(first)) {
				char why[96];
				snprintf(why, sizeof(why), "cannot open: %s", strerror(-first));
				copy_failed_read(r, firsti, i, first, why);
			}
			*out = r;
			return 0;
		}
		if (!first) {
			first = rc;
			firsti = i;
		}
	}
	rfile_free(r);
	return first ? first : -EIO;
}

/* Read from copy i; then check.  *err: the read's errno, or 0 when the
 * bytes failed check (why names it). */
static int read_one(struct env_rfile *r, size_t i, void *buf, size_t len, uint64_t off, size_t *got,
		    int (*check)(void *, const void *, size_t), void *ctx, char *why, size_t whylen)
{
	struct env_rfile *f;
	int rc = rfile_in(r, i, &f);
	if (rc) {
		snprintf(why, whylen, "cannot open: %s", strerror(-rc));
		return rc;
	}
	rc = r->m->inner->ops->pread(f, buf, len, off, got);
	if (rc) {
		snprintf(why, whylen, "read of %zu bytes at offset %" PRIu64 " failed: %s", len, off,
			 strerror(-rc));
		return rc;
	}
	if (check && (rc = check(ctx, buf, *got))) {
		snprintf(why, whylen, "%zu bytes at offset %" PRIu64 " fail their checksum", len,
			 off);
		return rc;
	}
	return 0;
}

static int mirror_pread_checked(struct env_rfile *r, void *buf, size_t len, uint64_t off,
				size_t *got, int (*check)(void *, const void *, size_t), void *ctx)
{
	struct mirror *m = r->m;
	size_t cur = atomic_load(&r->cur);
	char why[200];
	int rc = read_one(r, cur, buf, len, off, got, check, ctx, why, sizeof(why));
	if (rc == 0 || !(rc == -EUCLEAN || copy_error(rc)))
		return rc;
	/* Try the other copies, in order; the first good one serves from now on. */
	int first = rc;
	size_t badi = cur;
	char badwhy[200];
	snprintf(badwhy, sizeof(badwhy), "%s", why);
	atomic_fetch_or(&r->bad, 1u << cur);
	for (size_t i = 0; i < m->n; i++) {
		if (i == cur || !readable(m, i) || (atomic_load(&r->bad) & (1u << i)))
			continue;
		rc = read_one(r, i, buf, len, off, got, check, ctx, why, sizeof(why));
		if (rc == 0) {
			atomic_store(&r->cur, (unsigned)i);
			copy_failed_read(r, badi, i, first == -EUCLEAN ? 0 : first, badwhy);
			return 0;
		}
		atomic_fetch_or(&r->bad, 1u << i);
	}
	/* No copy reads: the first answer stands (and this read, read again,
	 * gives what it gave). */
	atomic_store(&r->bad, 0u);
	return read_one(r, cur, buf, len, off, got, check, ctx, why, sizeof(why));
}

static int mirror_pread(struct env_rfile *r, void *buf, size_t len, uint64_t off, size_t *got)
{
	return mirror_pread_checked(r, buf, len, off, got, NULL, NULL);
}

static void mirror_close_readable(struct env_rfile *r)
{
	rfile_free(r);
}

/* ---- names ---- */

/* The first live copy's answer that is not an error of the copy. */
static int mirror_file_size(struct store_env *env, const char *path, uint64_t *size)
{
	struct mirror *m = M(env);
	int first = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (!readable(m, i))
			continue;
		char *p = copy_path(m, i, path);
		int rc = p ? m->inner->ops->file_size(m->inner, p, size) : -ENOMEM;
		free(p);
		if (rc == 0)
			return 0;
		if (!first)
			first = rc;
	}
	return first ? first : -EIO;
}

static int mirror_exists(struct store_env *env, const char *path)
{
	struct mirror *m = M(env);
	int first = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (!readable(m, i))
			continue;
		char *p = copy_path(m, i, path);
		int rc = p ? m->inner->ops->exists(m->inner, p) : -ENOMEM;
		free(p);
		if (rc == 0)
			return 0;
		if (!first)
			first = rc;
	}
	return first ? first : -EIO;
}

enum nop { N_UNLINK, N_TRUNCATE, N_PREALLOCATE, N_MKDIR, N_SYNC_DIR };

/* One name operation on every live copy.  ENOENT from unlink and EEXIST
 * from mkdir in some copies only is the state the operation wanted. */
static int each_n(struct store_env *env, enum nop op, const char *path, uint64_t size)
{
	static const char *const names[] = { "unlink", "truncate", "preallocate", "mkdir",
					     "directory sync" };
	struct mirror *m = M(env);
	const struct store_env_ops *o = m->inner->ops;
	int rcs[STORE_MAX_COPIES] = { 0 };
	int rr = op == N_SYNC_DIR || op == N_MKDIR ? recorded(m) : 0;
	if (rr)
		return rr;
	unsigned mask = live_mask(m);
	for (size_t i = 0; i < m->n; i++) {
		if (!(mask & (1u << i)))
			continue;
		char *p = copy_path(m, i, path);
		if (!p) {
			rcs[i] = -ENOMEM;
			continue;
		}
		switch (op) {
		case N_UNLINK: rcs[i] = o->unlink(m->inner, p); break;
		case N_TRUNCATE: rcs[i] = o->truncate(m->inner, p, size); break;
		case N_PREALLOCATE: rcs[i] = o->preallocate(m->inner, p, size); break;
		case N_MKDIR: rcs[i] = o->mkdir(m->inner, p); break;
		case N_SYNC_DIR: rcs[i] = o->sync_dir(m->inner, p); break;
		}
		free(p);
	}
	int benign = op == N_UNLINK ? -ENOENT : op == N_MKDIR ? -EEXIST : 1;
	bool all_benign = mask != 0;
	for (size_t i = 0; i < m->n; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (rcs[i] != benign)
			all_benign = false;
	}
	if (all_benign)
		return benign;
	for (size_t i = 0; i < m->n; i++)
		if (rcs[i] == benign)
			rcs[i] = 0;
	int rc = settle(m, rcs, mask, path, names[op]);
	return rc ? rc : recorded(m);
}

static int mirror_unlink(struct store_env *env, const char *path)
{
	return each_n(env, N_UNLINK, path, 0);
}

static int mirror_truncate(struct store_env *env, const char *path, uint64_t size)
{
	return each_n(env, N_TRUNCATE, path, size);
}

static int mirror_preallocate(struct store_env *env, const char *path, uint64_t size)
{
	return each_n(env, N_PREALLOCATE, path, size);
}

static int mirror_mkdir(struct store_env *env, const char *path)
{
	return each_n(env, N_MKDIR, path, 0);
}

static int mirror_sync_dir(struct store_env *env, const char *path)
{
	return each_n(env, N_SYNC_DIR, path, 0);
}

static int mirror_rename(struct store_env *env, const char *from, const char *to)
{
	struct mirror *m = M(env);
	int rcs[STORE_MAX_COPIES] = { 0 };
	unsigned mask = live_mask(m);
	for (size_t i = 0; i < m->n; i++) {
		if (!(mask & (1u << i)))
			continue;
		char *a = copy_path(m, i, from), *b = copy_path(m, i, to);
		rcs[i] = a && b ? m->inner->ops->rename(m->inner, a, b) : -ENOMEM;
		free(a);
		free(b);
	}
	int rc = settle(m, rcs, mask, to, "rename");
	return rc ? rc : recorded(m);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The union of the live copies' names (a name some copy lacks is still
 * the store's: a leftover to delete, or a file to heal). */
static int mirror_list_dir(struct store_env *env, const char *dir, char ***names, size_t *count)
{
	struct mirror *m = M(env);
	char **all = NULL;
	size_t n = 0;
	int rcs[STORE_MAX_COPIES] = { 0 };
	unsigned mask = live_mask(m) & ~atomic_load(&m->noread);
	for (size_t i = 0; i < m->n; i++) {
		if (!(mask & (1u << i)))
			continue;
		char *p = copy_path(m, i, dir);
		char **nm = NULL;
		size_t c = 0;
		rcs[i] = p ? m->inner->ops->list_dir(m->inner, p, &nm, &c) : -ENOMEM;
		free(p);
		if (rcs[i])
			continue;
		char **grown = realloc(all, (n + c + 1) * sizeof(*grown));
		if (!grown) {
			env_free_names(nm, c);
			env_free_names(all, n);
			return -ENOMEM;
		}
		all = grown;
		memcpy(all + n, nm, c * sizeof(*nm));
		n += c;
		free(nm);
	}
	int rc = settle(m, rcs, mask, dir, "listing");
	if (rc) {
		env_free_names(all, n);
		return rc;
	}
	if (n)
		qsort(all, n, sizeof(*all), cmp_str);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && strcmp(all[k - 1], all[i]) == 0) {
			free(all[i]);
			continue;
		}
		all[k++] = all[i];
	}
	*names = all;
	*count = k;
	return 0;
}

static int mirror_lock(struct store_env *env, const char *path, struct env_lock **out)
{
	struct mirror *m = M(env);
	struct env_lock *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->m = m;
	int rcs[STORE_MAX_COPIES] = { 0 };
	unsigned mask = live_mask(m);
	for (size_t i = 0; i < m->n; i++) {
		if (!(mask & (1u << i)))
			continue;
		char *p = copy_path(m, i, path);
		rcs[i] = p ? m->inner->ops->lock(m->inner, p, &l->l[i]) : -ENOMEM;
		if (rcs[i])
			l->l[i] = NULL;
		free(p);
	}
	int rc = 0;
	for (size_t i = 0; i < m->n; i++)
		if (rcs[i] == -EBUSY)
			rc = -EBUSY; /* in use: never a reason to drop a copy */
	if (!rc)
		rc = settle(m, rcs, mask, path, "lock");
	if (rc) {
		for (size_t i = 0; i < m->n; i++)
			if (l->l[i])
				m->inner->ops->unlock(l->l[i]);
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

static void mirror_unlock(struct env_lock *l)
{
	for (size_t i = 0; i < l->m->n; i++)
		if (l->l[i])
			l->m->inner->ops->unlock(l->l[i]);
	free(l);
}

static const struct store_env_ops mirror_ops = {
	.open_writable = mirror_open_writable,
	.append = mirror_append,
	.flush = mirror_flush,
	.sync = mirror_sync,
	.close_writable = mirror_close_writable,
	.open_readable = mirror_open_readable,
	.pread = mirror_pread,
	.pread_checked = mirror_pread_checked,
	.close_readable = mirror_close_readable,
	.file_size = mirror_file_size,
	.exists = mirror_exists,
	.rename = mirror_rename,
	.unlink = mirror_unlink,
	.truncate = mirror_truncate,
	.preallocate = mirror_preallocate,
	.mkdir = mirror_mkdir,
	.list_dir = mirror_list_dir,
	.sync_dir = mirror_sync_dir,
	.lock = mirror_lock,
	.unlock = mirror_unlock,
};



/* ---- the mirror itself ---- */

int env_mirror_new(struct store_env *inner, const char *const *dirs, size_t n,
		   const struct env_mirror_hooks *hooks, struct store_env **out)
{
	if (n < 1 || n > STORE_MAX_COPIES)
		return -EINVAL;
	struct mirror *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->ops = mirror_ops;
	if (!inner->ops->preallocate)
		m->ops.preallocate = NULL; /* env.h: no reserve then */
	m->env.ops = &m->ops;
	m->inner = inner;
	m->n = n;
	if (hooks)
		m->hooks = *hooks;
	pthread_mutex_init(&m->mu, NULL);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(dirs[i]);
		while (l > 1 && dirs[i][l - 1] == '/')
			l--;
		m->dirs[i] = strndup(dirs[i], l);
		if (!m->dirs[i]) {
			env_mirror_free(&m->env);
			return -ENOMEM;
		}
	}
	m->dlen0 = strlen(m->dirs[0]);
	*out = &m->env;
	return 0;
}

void env_mirror_free(struct store_env *env)
{
	if (!env)
		return;
	struct mirror *m = M(env);
	for (size_t i = 0; i < m->n; i++) {
		free(m->dirs[i]);
		if (m->join_lock[i])
			m->inner->ops->unlock(m->join_lock[i]);
	}
	for (size_t k = 0; k < m->nprefer; k++)
		free(m->prefer[k].path);
	free(m->prefer);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

size_t env_mirror_count(struct store_env *env)
{
	return M(env)->n;
}

struct store_env *env_mirror_inner(struct store_env *env)
{
	return M(env)->inner;
}

const char *env_mirror_dir(struct store_env *env, size_t i)
{
	return M(env)->dirs[i];
}

bool env_mirror_live(struct store_env *env, size_t i)
{
	return live(M(env), i);
}

char *env_mirror_path(struct store_env *env, size_t i, const char *path)
{
	return copy_path(M(env), i, path);
}

int env_mirror_drop(struct store_env *env, size_t i, int err, const char *what)
{
	return drop(M(env), i, err, what);
}

int env_mirror_heal(struct store_env *env, size_t good, size_t bad, const char *path)
{
	struct mirror *m = M(env);
	pthread_mutex_lock(&m->mu);
	int rc = live(m, bad) && live(m, good) ? heal_locked(m, good, bad, path) : -EIO;
	if (rc == 0)
		atomic_fetch_add(&m->healed[bad], 1);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void env_mirror_counts(struct store_env *env, size_t i, uint64_t *healed, uint64_t *read_errors)
{
	struct mirror *m = M(env);
	*healed = atomic_load(&m->healed[i]);
	*read_errors = atomic_load(&m->read_errors[i]);
}

int env_mirror_prefer(struct store_env *env, const char *path, size_t copy)
{
	struct mirror *m = M(env);
	struct prefer *p = realloc(m->prefer, (m->nprefer + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	m->prefer = p;
	if (!(p[m->nprefer].path = strdup(path)))
		return -ENOMEM;
	p[m->nprefer++].copy = (unsigned)copy;
	return 0;
}

void env_mirror_set_noread(struct store_env *env, unsigned mask)
{
	atomic_store(&M(env)->noread, mask);
}

int env_mirror_join(struct store_env *env, const char *dir, size_t *k)
{
	struct mirror *m = M(env);
	pthread_mutex_lock(&m->mu);
	size_t i = m->n;
	int rc = i < STORE_MAX_COPIES ? 0 : -ENOSPC;
	char *d = NULL, *lockpath = NULL;
	if (rc == 0 && (!(d = strdup(dir)) || asprintf(&lockpath, "%s/LOCK", dir) < 0)) {
		lockpath = NULL;
		rc = -ENOMEM;
	}
	if (rc == 0) {
		rc = m->inner->ops->mkdir(m->inner, d);
		if (rc == -EEXIST)
			rc = 0;
	}
	if (rc == 0)
		rc = m->inner->ops->lock(m->inner, lockpath, &m->join_lock[i]);
	if (rc == 0)
		rc = m->inner->ops->sync_dir(m->inner, d);
	if (rc) {
		if (m->join_lock[i])
			m->inner->ops->unlock(m->join_lock[i]);
		m->join_lock[i] = NULL;
		free(d);
	} else {
		m->dirs[i] = d;
		atomic_fetch_and(&m->failed, ~(1u << i));
		atomic_fetch_or(&m->noread, 1u << i);
		atomic_fetch_or(&m->joining, 1u << i);
		atomic_store(&m->n, i + 1); /* published last */
		*k = i;
	}
	free(lockpath);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void env_mirror_joined(struct store_env *env, size_t k)
{
	struct mirror *m = M(env);
	atomic_fetch_and(&m->joining, ~(1u << k));
	atomic_fetch_and(&m->noread, ~(1u << k));
}

void env_mirror_retire(struct store_env *env, size_t k)
{
	struct mirror *m = M(env);
	pthread_mutex_lock(&m->mu);
	atomic_fetch_or(&m->failed, 1u << k);
	pthread_mutex_unlock(&m->mu);
}

int env_mirror_retire_unless_last(struct store_env *env, size_t k)
{
	struct mirror *m = M(env);
	pthread_mutex_lock(&m->mu);
	unsigned left = 0;
	for (size_t j = 0; j < m->n; j++)
		left += trusted(m, j) && j != k;
	if (left)
		atomic_fetch_or(&m->failed, 1u << k);
	pthread_mutex_unlock(&m->mu);
	return left ? 0 : -EBUSY;
}
