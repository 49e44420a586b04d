/*
 * fault_env: an in-memory store_env with fault injection and a power-cut
 * model (contract in fault_env.h; prose in store/format-parts/env.md).
 *
 * Objects:
 *  - struct mfile is an inode: current bytes and durable bytes, refcounted
 *    by every directory entry (current or durable) and every open handle
 *    that names it.  It is freed when the last reference goes.
 *  - struct mdir is a directory: a full normalized path ("/db", "/db/sub"),
 *    its current entries and its durable entries (name -> mfile).  "/" and
 *    "" (the parent of relative names) always exist.  Directories are a flat
 *    set created by mkdir and never removed; a directory's own existence is
 *    durable at mkdir (a simplification: real systems need an fsync of the
 *    parent).  list_dir shows subdirectories as names too.
 *
 * Invariants:
 *  - f->same <= min(f->cur_len, f->dur_len) and cur[0..same) ==
 *    dur[0..same): sync and power cut copy only the differing tail, so
 *    syncing a growing log costs O(appended), not O(file).
 *  - A handle remembers the epoch it was opened in; fault_env_power_cut()
 *    starts a new epoch, so handles of the dead "process" fail with -EIO
 *    (they stay closable and freeable).  The same holds for locks: the cut
 *    empties the lock table, and unlocking a dead lock only frees it.
 *
 * Writes land in the current bytes immediately (no user-space buffer), so
 * flush only checks faults.  Faults: each mutating op (open_writable,
 * append, flush, sync, rename, unlink, truncate, mkdir, sync_dir) counts
 * one; after `after` of them the armed fault becomes active with the next
 * one.  An active FAULT_POWER_CUT fails every op, mutating or not, with
 * -EIO; the others fail only their class of op (append+flush, append,
 * sync+sync_dir).  fault_env_struck() becomes true when an active fault
 * first fails an op, and stays true until the next arm.
 *
 * Locking: one mutex (fe->mu) guards everything, including handle ops, so
 * concurrent preads are safe.
 */
#include "fault_env.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct mfile {
	unsigned refs;
	uint8_t *cur;
	size_t cur_len, cur_cap;
	uint8_t *dur;
	size_t dur_len, dur_cap;
	size_t same; /* cur and dur agree on [0, same) */
};

struct entry {
	char *name;
	struct mfile *file;
};

struct entries {
	struct entry *v;
	size_t n, cap;
};

struct mdir {
	char *path;
	struct entries cur, dur;
};

struct fault_env {
	struct store_env env; /* first: fault_env_env() hands out &fe->env */
	pthread_mutex_t mu;
	struct mdir **dirs;
	size_t ndirs, dirs_cap;
	char **locks; /* held lock paths, normalized */
	size_t nlocks, locks_cap;
	uint64_t epoch;
	uint64_t ops;
	enum fault_kind kind;
	uint64_t countdown;
	bool active;     /* the armed fault is in force */
	bool struck;     /* it has failed an op */
	bool short_done; /* FAULT_ENOSPC did its short write */
	uint64_t capacity; /* 0: unlimited; else bytes the files may hold */
	uint64_t nospace;  /* appends refused for want of capacity */
};

struct env_wfile {
	struct fault_env *fe;
	struct mfile *file;
	uint64_t epoch;
};

struct env_rfile {
	struct fault_env *fe;
	struct mfile *file;
	uint64_t epoch;
};

struct env_lock {
	struct fault_env *fe;
	char *path;
	uint64_t epoch;
};

enum op_class {
	OP_OTHER,  /* not counted: reads, lookups, close, lock */
	OP_META,   /* open_writable, rename, unlink, truncate, mkdir */
	OP_FLUSH,
	OP_APPEND,
	OP_SYNC,   /* sync, sync_dir */
};

static struct fault_env *fe_of(struct store_env *env)
{
	return (struct fault_env *)env;
}

/* ---- the fault gate ---- */

/* Count the op and decide whether it fails.  Called with fe->mu held. */
static int gate(struct fault_env *fe, enum op_class cls)
{
	if (cls != OP_OTHER) {
		fe->ops++;
		if (fe->kind != FAULT_NONE && !fe->active) {
			if (fe->countdown == 0)
				fe->active = true;
			else
				fe->countdown--;
		}
	}
	if (!fe->active)
		return 0;
	int rc = 0;
	switch (fe->kind) {
	case FAULT_POWER_CUT:
		rc = -EIO;
		break;
	case FAULT_EIO_WRITE:
		if (cls == OP_APPEND || cls == OP_FLUSH)
			rc = -EIO;
		break;
	case FAULT_ENOSPC:
		if (cls == OP_APPEND)
			rc = -ENOSPC;
		break;
	case FAULT_EIO_SYNC:
		if (cls == OP_SYNC)
			rc = -EIO;
		break;
	case FAULT_NONE:
		break;
	}
	if (rc)
		fe->struck = true;
	return rc;
}

/* ---- files ---- */

static int grow(uint8_t **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 256;
	while (ncap < need)
		ncap *= 2;
	uint8_t *n = realloc(*p, ncap);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = ncap;
	return 0;
}

static struct mfile *mfile_new(void)
{
	return calloc(1, sizeof(struct mfile));
}

static void mfile_unref(struct mfile *f)
{
	if (--f->refs)
		return;
	free(f->cur);
	free(f->dur);
	free(f);
}

static int mfile_write(struct mfile *f, const void *data, size_t len)
{
	int rc = grow(&f->cur, &f->cur_cap, f->cur_len + len);
	if (rc)
		return rc;
	if (len)
		memcpy(f->cur + f->cur_len, data, len);
	f->cur_len += len;
	return 0;
}

static int mfile_resize(struct mfile *f, size_t size)
{
	if (size > f->cur_len) {
		int rc = grow(&f->cur, &f->cur_cap, size);
		if (rc)
			return rc;
		memset(f->cur + f->cur_len, 0, size - f->cur_len);
	}
	f->cur_len = size;
	if (f->same > size)
		f->same = size;
	return 0;
}

/* current -> durable */
static int mfile_sync(struct mfile *f)
{
	int rc = grow(&f->dur, &f->dur_cap, f->cur_len);
	if (rc)
		return rc;
	if (f->cur_len > f->same)
		memcpy(f->dur + f->same, f->cur + f->same, f->cur_len - f->same);
	f->dur_len = f->cur_len;
	f->same = f->cur_len;
	return 0;
}

/* durable -> current (the power cut) */
static void mfile_revert(struct mfile *f)
{
	/* Never reallocates: the durable length was once the current length
	 * and buffers never shrink.  Should it fail anyway, keep the agreed
	 * prefix rather than crash. */
	if (grow(&f->cur, &f->cur_cap, f->dur_len)) {
		f->cur_len = f->dur_len = f->same;
		return;
	}
	if (f->dur_len > f->same)
		memcpy(f->cur + f->same, f->dur + f->same, f->dur_len - f->same);
	f->cur_len = f->dur_len;
	f->same = f->dur_len;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- directory entries ---- */

static struct entry *entries_find(struct entries *e, const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(e->v[i].name, name))
			return &e->v[i];
	return NULL;
}

/* Point name at file (replacing any old target). */
static int entries_set(struct entries *e, const char *name, struct mfile *file)
{
	struct entry *old = entries_find(e, name);
	if (old) {
		file->refs++;
		mfile_unref(old->file);
		old->file = file;
		return 0;
	}
	if (e->n == e->cap) {
		size_t ncap = e->cap ? e->cap * 2 : 16;
		struct entry *v = realloc(e->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->v = v;
		e->cap = ncap;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	file->refs++;
	e->v[e->n].name = copy;
	e->v[e->n].file = file;
	e->n++;
	return 0;
}

static void entries_remove(struct entries *e, struct entry *victim)
{
	free(victim->name);
	mfile_unref(victim->file);
	*victim = e->v[--e->n];
}

static void entries_clear(struct entries *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->v[i].name);
		mfile_unref(e->v[i].file);
	}
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
}

/* dst := src.  References are taken before the old ones are dropped, so a
 * file named in both stays alive. */
static int entries_copy(struct entries *dst, const struct entries *src)
{
	struct entries n = { NULL, 0, 0 };
	if (src->n) {
		n.v = malloc(src->n * sizeof(*n.v));
		if (!n.v)
			return -ENOMEM;
		n.cap = src->n;
	}
	for (size_t i = 0; i < src->n; i++) {
		char *name = strdup(src->v[i].name);
		if (!name) {
			entries_clear(&n);
			return -ENOMEM;
		}
		src->v[i].file->refs++;
		n.v[n.n].name = name;
		n.v[n.n].file = src->v[i].file;
		n.n++;
	}
	entries_clear(dst);
	*dst = n;
	return 0;
}

/* ---- paths and directories ---- */

/* A path split into its directory and its last component. */
struct fpath {
	char *full; /* normalized: no "//", no trailing '/' (except "/") */
	char *dir;  /* "/" for "/x", "" for "x" */
	const char *name; /* points into full; "" for "/" */
};

static void fpath_free(struct fpath *p)
{
	free(p->full);
	free(p->dir);
}

static int fpath_parse(const char *path, struct fpath *p)
{
	size_t len = strlen(path);
	p->full = malloc(len + 1);
	p->dir = NULL;
	if (!p->full)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (path[i] == '/' && o > 0 && p->full[o - 1] == '/')
			continue;
		p->full[o++] = path[i];
	}
	if (o > 1 && p->full[o - 1] == '/')
		o--;
	p->full[o] = 0;
	char *slash = strrchr(p->full, '/');
	if (!slash) {
		p->dir = strdup("");
		p->name = p->full;
	} else if (slash == p->full) {
		p->dir = strdup("/");
		p->name = slash + 1;
	} else {
		p->dir = strndup(p->full, (size_t)(slash - p->full));
		p->name = slash + 1;
	}
	if (!p->dir) {
		free(p->full);
		return -ENOMEM;
	}
	return 0;
}

static struct mdir *find_dir(struct fault_env *fe, const char *path)
{
	for (size_t i = 0; i < fe->ndirs; i++)
		if (!strcmp(fe->dirs[i]->path, path))
			return fe->dirs[i];
	return NULL;
}

static int add_dir(struct fault_env *fe, const char *path)
{
	if (fe->ndirs == fe->dirs_cap) {
		size_t ncap = fe->dirs_cap ? fe->dirs_cap * 2 : 8;
		struct mdir **v = realloc(fe->dirs, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		fe->dirs = v;
		fe->dirs_cap = ncap;
	}
	struct mdir *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->path = strdup(path);
	if (!d->path) {
		free(d);
		return -ENOMEM;
	}
	fe->dirs[fe->ndirs++] = d;
	return 0;
}

static void free_dir(struct mdir *d)
{
	entries_clear(&d->cur);
	entries_clear(&d->dur);
	free(d->path);
	free(d);
}

/*
 * Resolve path to a file named in the current entries: 0 and *dir / *ent,
 * -ENOENT if its directory or the name is missing, -EISDIR for a directory.
 */
static int lookup(struct fault_env *fe, const struct fpath *p,
		  struct mdir **dir, struct entry **ent)
{
	if (find_dir(fe, p->full))
		return -EISDIR;
	struct mdir *d = find_dir(fe, p->dir);
	if (!d)
		return -ENOENT;
	*dir = d;
	*ent = entries_find(&d->cur, p->name);
	return *ent ? 0 : -ENOENT;
}

/* ---- capacity ---- */

/* Bytes held by the files named in the current entries (a file in two
 * directories is counted twice: the store never links).  fe->mu held. */
static uint64_t used_bytes(struct fault_env *fe)
{
	uint64_t used = 0;
	for (size_t i = 0; i < fe->ndirs; i++) {
		struct mdir *d = fe->dirs[i];
		for (size_t j = 0; j < d->cur.n; j++)
			used += d->cur.v[j].file->cur_len;
	}
	return used;
}

/* How many of len more bytes fit.  fe->mu held. */
static size_t room_for(struct fault_env *fe, size_t len)
{
	if (!fe->capacity)
		return len;
	uint64_t used = used_bytes(fe);
	uint64_t room = used >= fe->capacity ? 0 : fe->capacity - used;
	return room < len ? (size_t)room : len;
}

/* ---- env ops ---- */

static int fe_open_writable(struct store_env *env, const char *path,
			    struct env_wfile **out)
{
	struct fault_env *fe = fe_of(env);
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	struct env_wfile *h = calloc(1, sizeof(*h));
	struct mfile *fresh = NULL;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_META);
	if (rc)
		goto out;
	if (!h) {
		rc = -ENOMEM;
		goto out;
	}
	struct mdir *d = NULL;
	struct entry *e = NULL;
	rc = lookup(fe, &p, &d, &e);
	if (rc == -ENOENT && find_dir(fe, p.dir)) {
		fresh = mfile_new();
		if (!fresh) {
			rc = -ENOMEM;
			goto out;
		}
		fresh->refs = 1; /* ours until the entry and handle hold it */
		rc = entries_set(&d->cur, p.name, fresh);
		if (rc)
			goto out;
		h->file = fresh;
	} else if (rc) {
		goto out;
	} else {
		/* O_TRUNC: the same inode, cut to zero. */
		(void)mfile_resize(e->file, 0); /* shrinking cannot fail */
		h->file = e->file;
	}
	h->file->refs++;
	h->fe = fe;
	h->epoch = fe->epoch;
	*out = h;
	h = NULL;
out:
	if (fresh)
		mfile_unref(fresh);
	pthread_mutex_unlock(&fe->mu);
	free(h);
	fpath_free(&p);
	return rc;
}

static int fe_append(struct env_wfile *h, const void *data, size_t len)
{
	struct fault_env *fe = h->fe;
	pthread_mutex_lock(&fe->mu);
	int rc = -EIO;
	if (h->epoch != fe->epoch)
		goto out;
	rc = gate(fe, OP_APPEND);
	if (rc == -ENOSPC && !fe->short_done) {
		/* The disk fills up in the middle of the write. */
		fe->short_done = true;
		(void)mfile_write(h->file, data, len / 2); /* already failing */
	}
	if (rc == 0) {
		size_t fits = room_for(fe, len);
		rc = mfile_write(h->file, data, fits);
		if (rc == 0 && fits < len) {
			fe->nospace++;
			rc = -ENOSPC; /* the disk filled part way: a short write */
		}
	}
out:
	pthread_mutex_unlock(&fe->mu);
	return rc;
}

static int fe_flush(struct env_wfile *h)
{
	struct fault_env *fe = h->fe;
	pthread_mutex_lock(&fe->mu);
	int rc = h->epoch != fe->epoch ? -EIO : gate(fe, OP_FLUSH);
	pthread_mutex_unlock(&fe->mu);
	return rc;
}

static int fe_sync(struct env_wfile *h)
{
	struct fault_env *fe = h->fe;
	pthread_mutex_lock(&fe->mu);
	int rc = h->epoch != fe->epoch ? -EIO : gate(fe, OP_SYNC);
	if (rc == 0)
		rc = mfile_sync(h->file);
	pthread_mutex_unlock(&fe->mu);
	return rc;
}

static int fe_close_writable(struct env_wfile *h)
{
	struct fault_env *fe = h->fe;
	pthread_mutex_lock(&fe->mu);
	/* Nothing is buffered, so only a dead machine makes close fail. */
	int rc = h->epoch != fe->epoch ? -EIO : gate(fe, OP_OTHER);
	mfile_unref(h->file);
	pthread_mutex_unlock(&fe->mu);
	free(h);
	return rc;
}

static int fe_open_readable(struct store_env *env, const char *path,
			    struct env_rfile **out)
{
	struct fault_env *fe = fe_of(env);
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	struct env_rfile *h = calloc(1, sizeof(*h));
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_OTHER);
	if (rc)
		goto out;
	if (!h) {
		rc = -ENOMEM;
		goto out;
	}
	struct mdir *d = NULL;
	struct entry *e = NULL;
	rc = lookup(fe, &p, &d, &e);
	if (rc)
		goto out;
	h->fe = fe;
	h->file = e->file;
	h->file->refs++;
	h->epoch = fe->epoch;
	*out = h;
	h = NULL;
out:
	pthread_mutex_unlock(&fe->mu);
	free(h);
	fpath_free(&p);
	return rc;
}

static int fe_pread(struct env_rfile *h, void *buf, size_t len, uint64_t off,
		    size_t *got)
{
	struct fault_env *fe = h->fe;
	*got = 0;
	pthread_mutex_lock(&fe->mu);
	int rc = h->epoch != fe->epoch ? -EIO : gate(fe, OP_OTHER);
	if (rc == 0 && off < h->file->cur_len) {
		size_t avail = h->file->cur_len - (size_t)off;
		size_t n = len < avail ? len : avail;
		memcpy(buf, h->file->cur + off, n);
		*got = n;
	}
	pthread_mutex_unlock(&fe->mu);
	return rc;
}

static void fe_close_readable(struct env_rfile *h)
{
	struct fault_env *fe = h->fe;
	pthread_mutex_lock(&fe->mu);
	mfile_unref(h->file);
	pthread_mutex_unlock(&fe->mu);
	free(h);
}

static int fe_file_size(struct store_env *env, const char *path,
			uint64_t *size)
{
	struct fault_env *fe = fe_of(env);
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_OTHER);
	struct mdir *d = NULL;
	struct entry *e = NULL;
	if (rc == 0)
		rc = lookup(fe, &p, &d, &e);
	if (rc == 0)
		*size = e->file->cur_len;
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}

static int fe_exists(struct store_env *env, const char *path)
{
	struct fault_env *fe = fe_of(env);
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_OTHER);
	struct mdir *d = NULL;
	struct entry *e = NULL;
	if (rc == 0) {
		rc = lookup(fe, &p, &d, &e);
		if (rc == -EISDIR)
			rc = 0;
	}
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}

static int fe_rename(struct store_env *env, const char *from, const char *to)
{
	struct fault_env *fe = fe_of(env);
	struct fpath pf, pt;
	int rc = fpath_parse(from, &pf);
	if (rc)
		return rc;
	rc = fpath_parse(to, &pt);
	if (rc) {
		fpath_free(&pf);
		return rc;
	}
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_META);
	if (rc)
		goto out;
	struct mdir *df = NULL, *dt = NULL;
	struct entry *ef = NULL, *et = NULL;
	rc = lookup(fe, &pf, &df, &ef);
	if (rc == -EISDIR)
		rc = -EINVAL; /* renaming directories is not modelled */
	if (rc)
		goto out;
	rc = lookup(fe, &pt, &dt, &et);
	if (rc == -ENOENT && find_dir(fe, pt.dir))
		rc = 0; /* a new name */
	if (rc)
		goto out;
	if (!strcmp(pf.full, pt.full))
		goto out; /* POSIX: renaming a file to itself does nothing */
	struct mfile *f = ef->file;
	f->refs++; /* keep it alive between unlinking and relinking */
	rc = entries_set(&dt->cur, pt.name, f);
	if (rc == 0) {
		/* entries_set may have moved the array: look the source up again. */
		entries_remove(&df->cur, entries_find(&df->cur, pf.name));
	}
	mfile_unref(f);
out:
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&pf);
	fpath_free(&pt);
	return rc;
}

static int fe_unlink(struct store_env *env, const char *path)
{
	struct fault_env *fe = fe_of(env);
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_META);
	struct mdir *d = NULL;
	struct entry *e = NULL;
	if (rc == 0)
		rc = lookup(fe, &p, &d, &e);
	if (rc == 0)
		entries_remove(&d->cur, e);
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}

static int fe_truncate(struct store_env *env, const char *path, uint64_t size)
{
	struct fault_env *fe = fe_of(env);
	if (size > SIZE_MAX)
		return -EFBIG;
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_META);
	struct mdir *d = NULL;
	struct entry *e = NULL;
	if (rc == 0)
		rc = lookup(fe, &p, &d, &e);
	if (rc == 0 && size > e->file->cur_len &&
	    room_for(fe, (size_t)size - e->file->cur_len) < (size_t)size - e->file->cur_len)
		rc = -ENOSPC;
	if (rc == 0)
		rc = mfile_resize(e->file, (size_t)size);
	/* ftruncate + fdatasync, as env.h asks: the file as it now is is
	 * durable. */
	if (rc == 0)
		rc = mfile_sync(e->file);
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}

/* The space is modelled as zero bytes (the file grows to size). */
static int fe_preallocate(struct store_env *env, const char *path, uint64_t size)
{
	struct fault_env *fe = fe_of(env);
	if (size > SIZE_MAX)
		return -EFBIG;
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_APPEND);
	struct mdir *d = NULL;
	struct entry *e = NULL;
	if (rc == 0) {
		rc = lookup(fe, &p, &d, &e);
		if (rc == -ENOENT && find_dir(fe, p.dir)) {
			struct mfile *f = mfile_new();
			if (!f) {
				rc = -ENOMEM;
				goto out;
			}
			f->refs = 1; /* ours until the entry holds it */
			rc = entries_set(&d->cur, p.name, f);
			mfile_unref(f);
			if (rc == 0)
				rc = lookup(fe, &p, &d, &e);
		}
	}
	if (rc == 0 && size > e->file->cur_len) {
		size_t more = (size_t)size - e->file->cur_len;
		if (room_for(fe, more) < more) {
			fe->nospace++;
			rc = -ENOSPC;
		} else {
			rc = mfile_resize(e->file, (size_t)size);
		}
	}
out:
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}

static int fe_mkdir(struct store_env *env, const char *path)
{
	struct fault_env *fe = fe_of(env);
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_META);
	if (rc)
		goto out;
	struct mdir *parent = find_dir(fe, p.dir);
	if (find_dir(fe, p.full) ||
	    (parent && entries_find(&parent->cur, p.name)))
		rc = -EEXIST;
	else if (!parent)
		rc = -ENOENT;
	else
		rc = add_dir(fe, p.full);
out:
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}

static int push_name(char ***names, size_t *n, size_t *cap, const char *name)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		char **v = realloc(*names, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		*names = v;
		*cap = ncap;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	(*names)[(*n)++] = copy;
	return 0;
}

static int fe_list_dir(struct store_env *env, const char *dir,
		       char ***names_out, size_t *count_out)
{
	struct fault_env *fe = fe_of(env);
	struct fpath p;
	int rc = fpath_parse(dir, &p);
	if (rc)
		return rc;
	char **names = NULL;
	size_t n = 0, cap = 0;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_OTHER);
	if (rc)
		goto out;
	struct mdir *d = find_dir(fe, p.full);
	if (!d) {
		rc = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < d->cur.n && rc == 0; i++)
		rc = push_name(&names, &n, &cap, d->cur.v[i].name);
	/* Subdirectories: directories whose parent is d. */
	for (size_t i = 0; i < fe->ndirs && rc == 0; i++) {
		struct mdir *sub = fe->dirs[i];
		if (sub == d)
			continue;
		struct fpath sp;
		rc = fpath_parse(sub->path, &sp);
		if (rc)
			break;
		if (!strcmp(sp.dir, d->path) && sp.name[0])
			rc = push_name(&names, &n, &cap, sp.name);
		fpath_free(&sp);
	}
out:
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	if (rc) {
		env_free_names(names, n);
		return rc;
	}
	*names_out = names;
	*count_out = n;
	return 0;
}

static int fe_sync_dir(struct store_env *env, const char *dir)
{
	struct fault_env *fe = fe_of(env);
	struct fpath p;
	int rc = fpath_parse(dir, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_SYNC);
	if (rc == 0) {
		struct mdir *d = find_dir(fe, p.full);
		rc = d ? entries_copy(&d->dur, &d->cur) : -ENOENT;
	}
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}

static int fe_lock(struct store_env *env, const char *path,
		   struct env_lock **out)
{
	struct fault_env *fe = fe_of(env);
	struct env_lock *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc) {
		free(l);
		return rc;
	}
	pthread_mutex_lock(&fe->mu);
	rc = gate(fe, OP_OTHER);
	if (rc)
		goto out;
	for (size_t i = 0; i < fe->nlocks; i++) {
		if (!strcmp(fe->locks[i], p.full)) {
			rc = -EBUSY;
			goto out;
		}
	}
	/* Like open(O_CREAT): the file appears (not durably) if missing. */
	struct mdir *d = NULL;
	struct entry *e = NULL;
	rc = lookup(fe, &p, &d, &e);
	if (rc == -ENOENT && find_dir(fe, p.dir)) {
		struct mfile *f = mfile_new();
		if (!f) {
			rc = -ENOMEM;
			goto out;
		}
		f->refs = 1;
		rc = entries_set(&d->cur, p.name, f);
		mfile_unref(f);
	}
	if (rc)
		goto out;
	if (fe->nlocks == fe->locks_cap) {
		size_t ncap = fe->locks_cap ? fe->locks_cap * 2 : 4;
		char **v = realloc(fe->locks, ncap * sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		fe->locks = v;
		fe->locks_cap = ncap;
	}
	l->path = p.full;
	p.full = NULL; /* the lock owns it; fe->locks borrows it */
	l->fe = fe;
	l->epoch = fe->epoch;
	fe->locks[fe->nlocks++] = l->path;
	*out = l;
	l = NULL;
out:
	pthread_mutex_unlock(&fe->mu);
	free(l);
	fpath_free(&p);
	return rc;
}

static void fe_unlock(struct env_lock *l)
{
	struct fault_env *fe = l->fe;
	pthread_mutex_lock(&fe->mu);
	/* A lock of a dead epoch is no longer in the table. */
	if (l->epoch == fe->epoch) {
		for (size_t i = 0; i < fe->nlocks; i++) {
			if (fe->locks[i] == l->path) {
				fe->locks[i] = fe->locks[--fe->nlocks];
				break;
			}
		}
	}
	pthread_mutex_unlock(&fe->mu);
	free(l->path);
	free(l);
}

static const struct store_env_ops fault_ops = {
	.open_writable = fe_open_writable,
	.append = fe_append,
	.flush = fe_flush,
	.sync = fe_sync,
	.close_writable = fe_close_writable,
	.open_readable = fe_open_readable,
	.pread = fe_pread,
	.close_readable = fe_close_readable,
	.file_size = fe_file_size,
	.exists = fe_exists,
	.rename = fe_rename,
	.unlink = fe_unlink,
	.truncate = fe_truncate,
	.preallocate = fe_preallocate,
	.mkdir = fe_mkdir,
	.list_dir = fe_list_dir,
	.sync_dir = fe_sync_dir,
	.lock = fe_lock,
	.unlock = fe_unlock,
};

/* ---- public ---- */

struct fault_env *fault_env_new(void)
{
	struct fault_env *fe = calloc(1, sizeof(*fe));
	if (!fe)
		return NULL;
	fe->env.ops = &fault_ops;
	pthread_mutex_init(&fe->mu, NULL);
	if (add_dir(fe, "/") || add_dir(fe, "")) {
		fault_env_free(fe);
		return NULL;
	}
	return fe;
}

/* REQUIRES: every handle and lock is closed (their memory is theirs). */
void fault_env_free(struct fault_env *fe)
{
	if (!fe)
		return;
	for (size_t i = 0; i < fe->ndirs; i++)
		free_dir(fe->dirs[i]);
	free(fe->dirs);
	free(fe->locks); /* the strings belong to the env_lock objects */
	pthread_mutex_destroy(&fe->mu);
	free(fe);
}

struct store_env *fault_env_env(struct fault_env *fe)
{
	return &fe->env;
}

void fault_env_arm(struct fault_env *fe, enum fault_kind kind, uint64_t after)
{
	pthread_mutex_lock(&fe->mu);
	fe->kind = kind;
	fe->countdown = after;
	fe->active = false;
	fe->struck = false;
	fe->short_done = false;
	pthread_mutex_unlock(&fe->mu);
}

void fault_env_clear(struct fault_env *fe)
{
	pthread_mutex_lock(&fe->mu);
	fe->kind = FAULT_NONE;
	fe->active = false;
	pthread_mutex_unlock(&fe->mu);
}

bool fault_env_struck(struct fault_env *fe)
{
	pthread_mutex_lock(&fe->mu);
	bool s = fe->struck;
	pthread_mutex_unlock(&fe->mu);
	return s;
}

uint64_t fault_env_ops(struct fault_env *fe)
{
	pthread_mutex_lock(&fe->mu);
	uint64_t n = fe->ops;
	pthread_mutex_unlock(&fe->mu);
	return n;
}

void fault_env_power_cut(struct fault_env *fe)
{
	pthread_mutex_lock(&fe->mu);
	for (size_t i = 0; i < fe->ndirs; i++) {
		struct mdir *d = fe->dirs[i];
		/* On -ENOMEM keep the current entries: a test lib in OOM is
		 * beyond saving, and this keeps every reference valid. */
		(void)entries_copy(&d->cur, &d->dur);
	}
	/* Files still named somewhere lose their unsynced bytes; the rest
	 * were freed by entries_copy or are held only by dead handles. */
	for (size_t i = 0; i < fe->ndirs; i++) {
		struct mdir *d = fe->dirs[i];
		for (size_t j = 0; j < d->cur.n; j++)
			mfile_revert(d->cur.v[j].file);
	}
	fe->nlocks = 0; /* the dead process's locks die with it */
	fe->epoch++;
	fe->kind = FAULT_NONE;
	fe->active = false;
	pthread_mutex_unlock(&fe->mu);
}

void fault_env_power_cut_any_order(struct fault_env *fe, uint64_t seed)
{
	pthread_mutex_lock(&fe->mu);
	uint64_t s = seed;
	for (size_t i = 0; i < fe->ndirs; i++) {
		struct mdir *d = fe->dirs[i];
		/* Names made or repointed since the last sync_dir. */
		for (size_t j = 0; j < d->cur.n; j++) {
			struct entry *c = &d->cur.v[j];
			struct entry *u = entries_find(&d->dur, c->name);
			if ((!u || u->file != c->file) && (splitmix(&s) & 1))
				(void)entries_set(&d->dur, c->name, c->file);
		}
		/* Names removed since. */
		for (size_t j = 0; j < d->dur.n;) {
			struct entry *u = &d->dur.v[j];
			if (!entries_find(&d->cur, u->name) && (splitmix(&s) & 1)) {
				entries_remove(&d->dur, u);
				continue;
			}
			j++;
		}
	}
	/* Bytes appended since the last sync: the OS wrote back some of
	 * them, each file on its own (a later file can keep its tail while
	 * an earlier one loses its own).  A random prefix of them stays. */
	for (size_t i = 0; i < fe->ndirs; i++) {
		struct mdir *d = fe->dirs[i];
		for (size_t j = 0; j < d->cur.n; j++) {
			struct mfile *f = d->cur.v[j].file;
			if (f->same != f->dur_len || f->cur_len <= f->dur_len ||
			    !(splitmix(&s) & 1))
				continue;
			size_t keep = f->dur_len +
				      (size_t)(splitmix(&s) % (f->cur_len - f->dur_len + 1));
			if (keep == f->dur_len || grow(&f->dur, &f->dur_cap, keep))
				continue;
			memcpy(f->dur + f->dur_len, f->cur + f->dur_len, keep - f->dur_len);
			f->dur_len = f->same = keep;
		}
	}
	pthread_mutex_unlock(&fe->mu);
	fault_env_power_cut(fe);
}

int fault_env_corrupt(struct fault_env *fe, const char *path, uint64_t off,
		      uint8_t xor_mask)
{
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	struct mdir *d = NULL;
	struct entry *e = NULL;
	rc = lookup(fe, &p, &d, &e);
	if (rc == 0 && off >= e->file->cur_len)
		rc = -EINVAL;
	if (rc == 0) {
		struct mfile *f = e->file;
		f->cur[off] ^= xor_mask;
		/* A flipped bit on the medium survives a power cut too. */
		if (off < f->dur_len)
			f->dur[off] ^= xor_mask;
	}
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}

void fault_env_set_capacity(struct fault_env *fe, uint64_t bytes)
{
	pthread_mutex_lock(&fe->mu);
	fe->capacity = bytes;
	pthread_mutex_unlock(&fe->mu);
}

uint64_t fault_env_used(struct fault_env *fe)
{
	pthread_mutex_lock(&fe->mu);
	uint64_t used = used_bytes(fe);
	pthread_mutex_unlock(&fe->mu);
	return used;
}

uint64_t fault_env_nospace(struct fault_env *fe)
{
	pthread_mutex_lock(&fe->mu);
	uint64_t n = fe->nospace;
	pthread_mutex_unlock(&fe->mu);
	return n;
}

int fault_env_file_size(struct fault_env *fe, const char *path, uint64_t *size)
{
	struct fpath p;
	int rc = fpath_parse(path, &p);
	if (rc)
		return rc;
	pthread_mutex_lock(&fe->mu);
	struct mdir *d = NULL;
	struct entry *e = NULL;
	rc = lookup(fe, &p, &d, &e);
	if (rc == 0)
		*size = e->file->cur_len;
	pthread_mutex_unlock(&fe->mu);
	fpath_free(&p);
	return rc;
}
