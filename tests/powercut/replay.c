/*
 * replay.c: rebuild from a cutfs log the state a power cut may leave
 * (the model is in replay.h).
 *
 * Per inode we keep the current state, the durable state (a copy taken at
 * its last sync) and the indexes of the records since that sync.  A cut
 * image is the durable state plus a random subset of those records.
 * Directory entry names point into the log's buffer: nothing to free.
 * Single-threaded.
 */
#include "replay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIECE 4096

struct image {
	uint8_t *buf;
	size_t size, cap;
};

struct dent {
	const char *name;
	uint16_t len;
	uint64_t ino;
};

struct dents {
	struct dent *v;
	size_t n, cap;
};

struct rnode {
	int kind; /* 0: not made yet */
	struct image cur, dur;
	struct dents curents, durents;
	size_t *pend;
	size_t npend, cappend;
};

struct replay {
	const struct oplog *log;
	size_t at;
	bool break_fsync;
	struct rnode *nodes;
	size_t nnodes;
	/* per materialisation: the first path of each inode reached */
	char **seen;
	size_t nseen;
	struct image scratch;
	uint8_t *frozen; /* per 4 KiB page: a write to it was dropped */
	size_t nfrozen;
	struct dents scratch_ents;
};

static void *xrealloc(void *p, size_t n)
{
	void *g = realloc(p, n ? n : 1);
	if (!g) {
		fprintf(stderr, "replay: out of memory (%zu bytes)\n", n);
		abort(); /* test tool */
	}
	return g;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool keep(uint64_t *rng, unsigned pct)
{
	if (pct >= 100)
		return true;
	if (pct == 0)
		return false;
	return rng_next(rng) % 100 < pct;
}

static void image_reserve(struct image *im, size_t n)
{
	if (n <= im->cap)
		return;
	size_t nc = im->cap ? im->cap : 4096;
	while (nc < n)
		nc *= 2;
	im->buf = xrealloc(im->buf, nc);
	im->cap = nc;
}

static void image_resize(struct image *im, size_t size)
{
	image_reserve(im, size);
	if (size > im->size)
		memset(im->buf + im->size, 0, size - im->size);
	im->size = size;
}

static void image_write(struct image *im, uint64_t off, const uint8_t *p, size_t len)
{
	if (off + len > im->size)
		image_resize(im, (size_t)off + len);
	memcpy(im->buf + off, p, len);
}

static void image_punch(struct image *im, uint64_t off, uint64_t len)
{
	if (off >= im->size)
		return;
	if (len > im->size - off)
		len = im->size - off;
	memset(im->buf + off, 0, (size_t)len);
}

static void image_copy(struct image *to, const struct image *from)
{
	image_reserve(to, from->size);
	if (from->size)
		memcpy(to->buf, from->buf, from->size);
	to->size = from->size;
}

static struct dent *dents_find(struct dents *d, const char *name, uint16_t len)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].len == len && memcmp(d->v[i].name, name, len) == 0)
			return &d->v[i];
	return NULL;
}

static void dents_link(struct dents *d, const char *name, uint16_t len, uint64_t ino)
{
	struct dent *e = dents_find(d, name, len);
	if (e) {
		e->ino = ino;
		return;
	}
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		d->v = xrealloc(d->v, d->cap * sizeof(*d->v));
	}
	d->v[d->n++] = (struct dent){name, len, ino};
}

static void dents_unlink(struct dents *d, const char *name, uint16_t len)
{
	struct dent *e = dents_find(d, name, len);
	if (e)
		*e = d->v[--d->n];
}

static void dents_rename(struct dents *d, const struct oplog_rec *r)
{
	struct dent *e = dents_find(d, r->name1, r->len1);
	if (!e)
		return; /* its link was dropped by the cut */
	uint64_t ino = e->ino;
	dents_unlink(d, r->name1, r->len1);
	dents_link(d, r->name2, r->len2, ino);
}

static void dents_copy(struct dents *to, const struct dents *from)
{
	if (to->cap < from->n) {
		to->cap = from->n;
		to->v = xrealloc(to->v, to->cap * sizeof(*to->v));
	}
	if (from->n)
		memcpy(to->v, from->v, from->n * sizeof(*to->v));
	to->n = from->n;
}

struct replay *replay_new(const struct oplog *log)
{
	struct replay *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->log = log;
	r->nnodes = OPLOG_ROOT_INO + 1;
	r->nodes = calloc(r->nnodes, sizeof(*r->nodes));
	if (!r->nodes) {
		free(r);
		return NULL;
	}
	r->nodes[OPLOG_ROOT_INO].kind = OPLOG_DIR;
	return r;
}

void replay_free(struct replay *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nnodes; i++) {
		struct rnode *n = &r->nodes[i];
		free(n->cur.buf);
		free(n->dur.buf);
		free(n->curents.v);
		free(n->durents.v);
		free(n->pend);
	}
	for (size_t i = 0; i < r->nseen; i++)
		free(r->seen[i]);
	free(r->seen);
	free(r->nodes);
	free(r->scratch.buf);
	free(r->frozen);
	free(r->scratch_ents.v);
	free(r);
}

static struct rnode *node(struct replay *r, uint64_t ino, int kind)
{
	if (ino >= r->nnodes || r->nodes[ino].kind != kind)
		return NULL;
	return &r->nodes[ino];
}

static void pend(struct rnode *n, size_t idx)
{
	if (n->npend == n->cappend) {
		n->cappend = n->cappend ? n->cappend * 2 : 16;
		n->pend = xrealloc(n->pend, n->cappend * sizeof(*n->pend));
	}
	n->pend[n->npend++] = idx;
}

static int apply(struct replay *r, size_t idx)
{
	const struct oplog_rec *rec = &r->log->recs[idx];
	struct rnode *n;
	switch (rec->type) {
	case OPLOG_MKNODE:
		if (rec->a < r->nnodes && r->nodes[rec->a].kind)
			goto bad;
		if (rec->a >= r->nnodes) {
			size_t nn = r->nnodes;
			while (nn <= rec->a)
				nn *= 2;
			r->nodes = xrealloc(r->nodes, nn * sizeof(*r->nodes));
			memset(r->nodes + r->nnodes, 0, (nn - r->nnodes) * sizeof(*r->nodes));
			r->nnodes = nn;
		}
		if (rec->b != OPLOG_FILE && rec->b != OPLOG_DIR)
			goto bad;
		r->nodes[rec->a].kind = (int)rec->b;
		return 0;
	case OPLOG_LINK:
		if (!(n = node(r, rec->a, OPLOG_DIR)) || rec->b >= r->nnodes || !r->nodes[rec->b].kind)
			goto bad;
		dents_link(&n->curents, rec->name1, rec->len1, rec->b);
		break;
	case OPLOG_UNLINK:
		if (!(n = node(r, rec->a, OPLOG_DIR)))
			goto bad;
		dents_unlink(&n->curents, rec->name1, rec->len1);
		break;
	case OPLOG_RENAME:
		if (!(n = node(r, rec->a, OPLOG_DIR)))
			goto bad;
		dents_rename(&n->curents, rec);
		break;
	case OPLOG_WRITE:
		if (!(n = node(r, rec->a, OPLOG_FILE)))
			goto bad;
		image_write(&n->cur, rec->b, rec->data, rec->dlen);
		break;
	case OPLOG_TRUNC:
		if (!(n = node(r, rec->a, OPLOG_FILE)))
			goto bad;
		image_resize(&n->cur, (size_t)rec->b);
		break;
	case OPLOG_PUNCH:
		if (!(n = node(r, rec->a, OPLOG_FILE)))
			goto bad;
		image_punch(&n->cur, rec->b, rec->c);
		break;
	case OPLOG_FSYNC:
		if (!(n = node(r, rec->a, OPLOG_FILE)))
			goto bad;
		if (r->break_fsync)
			return 0;
		image_copy(&n->dur, &n->cur);
		n->npend = 0;
		return 0;
	case OPLOG_FSYNCDIR:
		if (!(n = node(r, rec->a, OPLOG_DIR)))
			goto bad;
		dents_copy(&n->durents, &n->curents);
		n->npend = 0;
		return 0;
	case OPLOG_MARK:
		return 0;
	default:
		goto bad;
	}
	pend(n, idx);
	return 0;
bad:;
	char what[200];
	oplog_describe(rec, what, sizeof(what));
	fprintf(stderr, "replay: record %zu (%s) makes no sense here\n", idx, what);
	return -EUCLEAN;
}

void replay_break_fsync(struct replay *r)
{
	r->break_fsync = true;
}

int replay_advance(struct replay *r, size_t k)
{
	if (k > r->log->n)
		k = r->log->n;
	for (; r->at < k; r->at++) {
		int rc = apply(r, r->at);
		if (rc)
			return rc;
	}
	return 0;
}

/* The bytes a cut leaves in file n. */
static const struct image *file_image(struct replay *r, struct rnode *n, unsigned pct,
				      uint64_t *rng)
{
	if (n->npend == 0 || pct == 0)
		return &n->dur;
	if (pct >= 100)
		return &n->cur;
	struct image *im = &r->scratch;
	image_copy(im, &n->dur);
	/* A page the cut left at an older version keeps it: once one of its
	 * writes is dropped, so are the later ones (the page cache writes a
	 * page whole, as it is at writeback time). */
	size_t pages = 0;
	for (size_t i = 0; i < n->npend; i++) {
		const struct oplog_rec *rec = &r->log->recs[n->pend[i]];
		if (rec->type == OPLOG_WRITE && (rec->b + rec->dlen) / PIECE + 1 > pages)
			pages = (size_t)((rec->b + rec->dlen) / PIECE + 1);
	}
	if (pages > r->nfrozen) {
		r->frozen = xrealloc(r->frozen, pages);
		r->nfrozen = pages;
	}
	memset(r->frozen, 0, pages);
	for (size_t i = 0; i < n->npend; i++) {
		const struct oplog_rec *rec = &r->log->recs[n->pend[i]];
		if (rec->type == OPLOG_TRUNC) {
			if (keep(rng, pct))
				image_resize(im, (size_t)rec->b);
		} else if (rec->type == OPLOG_PUNCH) {
			if (keep(rng, pct))
				image_punch(im, rec->b, rec->c);
		} else {
			/* A write tears at 4 KiB boundaries. */
			uint64_t off = rec->b, end = rec->b + rec->dlen;
			while (off < end) {
				uint64_t next = (off / PIECE + 1) * PIECE;
				if (next > end)
					next = end;
				size_t page = (size_t)(off / PIECE);
				if (!r->frozen[page] && keep(rng, pct))
					image_write(im, off, rec->data + (off - rec->b),
						    (size_t)(next - off));
				else
					r->frozen[page] = 1;
				off = next;
			}
		}
	}
	return im;
}

/* The entries a cut leaves in directory n, in a fresh array the caller
 * frees (the walk recurses, so no shared scratch). */
static struct dents dir_image(struct replay *r, struct rnode *n, unsigned pct, uint64_t *rng)
{
	struct dents d = {0};
	const struct dents *base = pct >= 100 ? &n->curents : &n->durents;
	dents_copy(&d, base);
	if (pct == 0 || pct >= 100)
		return d;
	for (size_t i = 0; i < n->npend; i++) {
		const struct oplog_rec *rec = &r->log->recs[n->pend[i]];
		if (!keep(rng, pct))
			continue;
		if (rec->type == OPLOG_LINK)
			dents_link(&d, rec->name1, rec->len1, rec->b);
		else if (rec->type == OPLOG_UNLINK)
			dents_unlink(&d, rec->name1, rec->len1);
		else
			dents_rename(&d, rec);
	}
	return d;
}

static int write_file(const char *path, const struct image *im)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	size_t done = 0;
	while (done < im->size) {
		ssize_t w = write(fd, im->buf + done, im->size - done);
		if (w <= 0) {
			close(fd);
			goto fail;
		}
		done += (size_t)w;
	}
	if (close(fd) != 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "replay: writing %s: %s\n", path, strerror(errno));
	return -errno;
}

static int walk(struct replay *r, uint64_t ino, const char *path, unsigned pct, uint64_t *rng)
{
	struct dents d = dir_image(r, &r->nodes[ino], pct, rng);
	int rc = 0;
	for (size_t i = 0; !rc && i < d.n; i++) {
		char sub[4096];
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%.*s", path, (int)d.v[i].len,
				     d.v[i].name) >= sizeof(sub)) {
			fprintf(stderr, "replay: path too long under %s\n", path);
			rc = -ENAMETOOLONG;
			break;
		}
		uint64_t child = d.v[i].ino;
		struct rnode *c = &r->nodes[child];
		if (r->seen[child]) {
			if (c->kind == OPLOG_FILE && link(r->seen[child], sub) != 0) {
				rc = -errno;
				fprintf(stderr, "replay: link %s %s: %s\n", r->seen[child], sub,
					strerror(errno));
			}
			continue; /* a directory reached twice is made once */
		}
		r->seen[child] = strdup(sub);
		if (!r->seen[child]) {
			rc = -ENOMEM;
			break;
		}
		if (c->kind == OPLOG_DIR) {
			if (mkdir(sub, 0755) != 0) {
				rc = -errno;
				fprintf(stderr, "replay: mkdir %s: %s\n", sub, strerror(errno));
			} else {
				rc = walk(r, child, sub, pct, rng);
			}
		} else {
			rc = write_file(sub, file_image(r, c, pct, rng));
		}
	}
	free(d.v);
	return rc;
}

int replay_materialise(struct replay *r, const char *dir, unsigned keep_pct, uint64_t *rng)
{
	for (size_t i = 0; i < r->nseen; i++)
		free(r->seen[i]);
	free(r->seen);
	r->nseen = r->nnodes;
	r->seen = calloc(r->nseen, sizeof(*r->seen));
	if (!r->seen)
		return -ENOMEM;
	return walk(r, OPLOG_ROOT_INO, dir, keep_pct, rng);
}
