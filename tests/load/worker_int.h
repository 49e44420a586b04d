/*
 * worker_int.h: a load-test worker's model and its checks (model.c), shared
 * with its operations (worker.c).  One worker per process: no locking.
 */
#ifndef LSMFS_LOAD_WORKER_INT_H
#define LSMFS_LOAD_WORKER_INT_H

#include "load.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Print what failed (operation, path, errno, worker, seed) and exit 1. */
void wk_fail(struct wk *w, const char *op, const char *path, int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6), noreturn));
/* Time one operation: wk_begin before its system call, wk_end after. */
void wk_begin(struct wk *w, enum load_op op, const char *path);
void wk_end(struct wk *w);
/* The worker's seeded choices. */
uint64_t wk_rnd(struct wk *w, uint64_t n);
bool wk_chance(struct wk *w, unsigned pct);
void wk_fill(struct wk *w, uint8_t *p, size_t n);
/* A length: tiny, around the inline limit, within a chunk, across chunks. */
size_t gen_len(struct wk *w);

/* Names: where is SHARED, 0 (own directory) or 1 + k (subdirectory dk);
 * paths are PATHCAP bytes. */
void dir_path(struct wk *w, int where, char *out);
void entry_name(struct wk *w, int where, int num, char *out, size_t cap);
void name_path(struct wk *w, int where, int num, char *out);
int pool_size(int where);
/* The name's slot, or -1. */
int find_name(struct wk *w, int where, int num);
/* A random used name whose type is in types ("f", "l", "fl"), or -1. */
int pick_name(struct wk *w, const char *types);
int free_slot_name(struct wk *w);
int free_slot_ino(struct wk *w);
/* A random subdirectory that exists (used) or not, or -1. */
int pick_sub(struct wk *w, bool used);
/* Own directory most often, a subdirectory, or shared (if shared_ok). */
int pick_where(struct wk *w, bool shared_ok);
int name_add(struct wk *w, int where, int num, char type, int ino, const char *target);
int entries_in(struct wk *w, int where);

/* File contents in the model. */
void model_resize(struct minode *m, size_t size);
void model_write(struct minode *m, size_t off, const uint8_t *p, size_t len);

/* fds: timed open and close; get_fd returns the inode's kept fd or a new
 * O_RDWR one (*opened), which put_fd keeps (sometimes) or closes. */
int do_open(struct wk *w, const char *path, int flags);
void do_close(struct wk *w, int fd, const char *path);
int get_fd(struct wk *w, int ino, const char *path, bool *opened);
void put_fd(struct wk *w, int ino, int fd, bool opened, const char *path);
/* One link of ino is gone; at the last, an fd still open must still read
 * the whole content before it closes. */
void drop_link(struct wk *w, int ino, const char *path);

/* Checks against the model (each fails the worker on a difference). */
/* [off, off + len) through fd: exactly the model's bytes there. */
void read_check(struct wk *w, int ino, int fd, const char *path, size_t off, size_t len);
void check_size(struct wk *w, int ino, int fd, const char *path);
/* The listing (only this worker's names in shared): same names, none
 * twice, the right d_type. */
void check_dir(struct wk *w, int where);
/* lstat: type, size, nlink. */
void check_name(struct wk *w, int i);
void check_xattr(struct wk *w, const char *path, const struct xattrs *x, int k);
void check_link(struct wk *w, int i);
/* Close every kept fd and check everything the worker holds. */
void verify_all(struct wk *w);
/* Self-test: one byte of a file's model changed, as if the filesystem
 * had changed the file; false when no file has a byte. */
bool flip_model(struct wk *w);

#endif
