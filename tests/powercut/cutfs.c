/*
 * cutfs.c: a test-only FUSE filesystem that remembers what a power cut
 * could leave behind (issue 14, "power cuts through the whole filesystem").
 *
 * Every file and directory lives in memory.  Each operation that changes
 * state is appended to an operation log (oplog.h) whose record index is a
 * global sequence number; fsync, fdatasync and fsyncdir are logged too.
 * cutfs itself only keeps the current ("volatile") state and serves it;
 * replay.c rebuilds, from the log, what is durable at any point and what a
 * disk might hold after a power cut there.
 *
 * Usage: cutfs LOG MOUNTPOINT [fuse options]   (run with -f -s)
 *   getxattr user.cutfs.seq on any path: the number of records logged so
 *   far, in decimal (a power cut at that point keeps all of them);
 *   setxattr user.cutfs.mark = TEXT: logs a MARK record (a note).
 * statfs reports 1 TiB free; flock is left to the kernel (no .flock op, so
 * the kernel keeps the locks locally, which is all one host needs); links
 * and renames work, symlinks and special files do not (lsmfs makes none on
 * its disks).  Writes reach us synchronously: libfuse's high-level API
 * without writeback_cache, so the kernel holds no dirty pages of ours and
 * the log order is the order the daemon's syscalls completed in.
 *
 * Single-threaded (-s): no locking.  Inodes are never freed (a test run is
 * small), so an unlinked file still open keeps working through its handle.
 */
#define FUSE_USE_VERSION 35
#include "oplog.h"

#include <errno.h>
#include <fuse.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>

#define SEQ_XATTR "user.cutfs.seq"
#define MARK_XATTR "user.cutfs.mark"

struct entry {
	char *name;
	uint64_t ino;
};

struct node {
	int kind; /* OPLOG_FILE or OPLOG_DIR */
	mode_t mode;
	nlink_t nlink;
	struct timespec mtime, ctime;
	uint8_t *data; /* files */
	size_t size, cap;
	struct entry *ents; /* directories */
	size_t nents, capents;
};

struct cutfs {
	FILE *log;
	uint64_t seq;
	struct node **nodes; /* by inode number; 0 unused */
	size_t nnodes, capnodes;
};

static struct cutfs *cfs(void)
{
	return fuse_get_context()->private_data;
}

/* A log that cannot be written makes every later check meaningless. */
static void logrec(const struct oplog_rec *r)
{
	struct cutfs *c = cfs();
	if (oplog_put(c->log, r) != 0) {
		fprintf(stderr, "cutfs: writing the operation log: %s\n", strerror(errno));
		abort();
	}
	c->seq++;
}

static void now(struct node *n)
{
	clock_gettime(CLOCK_REALTIME, &n->mtime);
	n->ctime = n->mtime;
}

static uint64_t node_new(struct cutfs *c, int kind, mode_t mode)
{
	if (c->nnodes == c->capnodes) {
		c->capnodes = c->capnodes ? c->capnodes * 2 : 1024;
		c->nodes = realloc(c->nodes, c->capnodes * sizeof(*c->nodes));
		if (!c->nodes)
			abort(); /* test tool: out of memory is fatal */
	}
	struct node *n = calloc(1, sizeof(*n));
	if (!n)
		abort();
	n->kind = kind;
	n->mode = mode;
	now(n);
	uint64_t ino = c->nnodes;
	c->nodes[c->nnodes++] = n;
	return ino;
}

static struct node *node_of(uint64_t ino)
{
	struct cutfs *c = cfs();
	return ino && ino < c->nnodes ? c->nodes[ino] : NULL;
}

static struct entry *dir_find(struct node *d, const char *name, size_t len)
{
	for (size_t i = 0; i < d->nents; i++)
		if (strlen(d->ents[i].name) == len && memcmp(d->ents[i].name, name, len) == 0)
			return &d->ents[i];
	return NULL;
}

/* Resolve path; on success *ino is its inode.  With parent_out, resolve
 * the parent instead and point *leaf at the last component. */
static int resolve(const char *path, uint64_t *ino, const char **leaf)
{
	uint64_t cur = OPLOG_ROOT_INO;
	const char *p = path;
	while (*p == '/')
		p++;
	for (;;) {
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 0)
			break;
		if (leaf && !end) {
			*leaf = p;
			break;
		}
		struct node *d = node_of(cur);
		if (!d || d->kind != OPLOG_DIR)
			return -ENOTDIR;
		struct entry *e = dir_find(d, p, len);
		if (!e)
			return -ENOENT;
		cur = e->ino;
		p += len;
		while (*p == '/')
			p++;
		if (!*p)
			break;
	}
	*ino = cur;
	return 0;
}

static int lookup(const char *path, const struct fuse_file_info *fi, uint64_t *ino)
{
	if (fi && fi->fh) {
		*ino = fi->fh;
		return 0;
	}
	if (!path)
		return -EBADF;
	return resolve(path, ino, NULL);
}

static void dir_add(struct node *d, const char *name, uint64_t ino)
{
	if (d->nents == d->capents) {
		d->capents = d->capents ? d->capents * 2 : 16;
		d->ents = realloc(d->ents, d->capents * sizeof(*d->ents));
		if (!d->ents)
			abort();
	}
	d->ents[d->nents].name = strdup(name);
	d->ents[d->nents].ino = ino;
	if (!d->ents[d->nents].name)
		abort();
	d->nents++;
	now(d);
}

static void dir_del(struct node *d, struct entry *e)
{
	free(e->name);
	*e = d->ents[--d->nents];
	now(d);
}

static void log_link(uint64_t dir, const char *name, uint64_t ino)
{
	logrec(&(struct oplog_rec){.type = OPLOG_LINK, .a = dir, .b = ino,
				   .name1 = name, .len1 = (uint16_t)strlen(name)});
}

static void log_unlink(uint64_t dir, const char *name)
{
	logrec(&(struct oplog_rec){.type = OPLOG_UNLINK, .a = dir,
				   .name1 = name, .len1 = (uint16_t)strlen(name)});
}

static int cut_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	uint64_t ino;
	int rc = lookup(path, fi, &ino);
	if (rc)
		return rc;
	struct node *n = node_of(ino);
	if (!n)
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = n->mode | (n->kind == OPLOG_DIR ? S_IFDIR : S_IFREG);
	st->st_nlink = n->kind == OPLOG_DIR ? 2 : n->nlink;
	st->st_size = n->kind == OPLOG_DIR ? 4096 : (off_t)n->size;
	st->st_blksize = 4096;
	st->st_blocks = (st->st_size + 511) / 512;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
	st->st_atim = n->mtime;
	return 0;
}

/* Make a new inode named path (whose name must be free). */
static int make(const char *path, int kind, mode_t mode, uint64_t *out)
{
	uint64_t dir;
	const char *leaf = NULL;
	int rc = resolve(path, &dir, &leaf);
	if (rc)
		return rc;
	struct node *d = node_of(dir);
	if (!leaf || !d || d->kind != OPLOG_DIR)
		return -ENOTDIR;
	if (strlen(leaf) > 255)
		return -ENAMETOOLONG;
	if (dir_find(d, leaf, strlen(leaf)))
		return -EEXIST;
	uint64_t ino = node_new(cfs(), kind, mode & 07777);
	d = node_of(dir); /* node_new may have moved the table, not the nodes */
	node_of(ino)->nlink = 1;
	logrec(&(struct oplog_rec){.type = OPLOG_MKNODE, .a = ino, .b = (uint64_t)kind});
	dir_add(d, leaf, ino);
	log_link(dir, leaf, ino);
	*out = ino;
	return 0;
}

static int cut_mkdir(const char *path, mode_t mode)
{
	uint64_t ino;
	return make(path, OPLOG_DIR, mode, &ino);
}

static int trunc_to(uint64_t ino, struct node *n, size_t size)
{
	if (size > n->cap) {
		size_t nc = n->cap ? n->cap : 4096;
		while (nc < size)
			nc *= 2;
		uint8_t *g = realloc(n->data, nc);
		if (!g)
			return -ENOMEM;
		n->data = g;
		n->cap = nc;
	}
	if (size > n->size)
		memset(n->data + n->size, 0, size - n->size);
	n->size = size;
	now(n);
	logrec(&(struct oplog_rec){.type = OPLOG_TRUNC, .a = ino, .b = size});
	return 0;
}

static int cut_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	uint64_t ino;
	int rc = resolve(path, &ino, NULL);
	if (rc == 0) {
		if (fi->flags & O_EXCL)
			return -EEXIST;
		struct node *n = node_of(ino);
		if (n->kind == OPLOG_DIR)
			return -EISDIR;
		if ((fi->flags & O_TRUNC) && n->size)
			rc = trunc_to(ino, n, 0);
		fi->fh = ino;
		return rc;
	}
	rc = make(path, OPLOG_FILE, mode, &ino);
	fi->fh = ino;
	return rc;
}

static int cut_open(const char *path, struct fuse_file_info *fi)
{
	uint64_t ino;
	int rc = resolve(path, &ino, NULL);
	if (rc)
		return rc;
	struct node *n = node_of(ino);
	if (n->kind == OPLOG_DIR && (fi->flags & O_ACCMODE) != O_RDONLY)
		return -EISDIR;
	if ((fi->flags & O_TRUNC) && n->kind == OPLOG_FILE && n->size)
		rc = trunc_to(ino, n, 0);
	fi->fh = ino;
	return rc;
}

static int remove_name(const char *path, bool want_dir)
{
	uint64_t dir;
	const char *leaf = NULL;
	int rc = resolve(path, &dir, &leaf);
	if (rc)
		return rc;
	struct node *d = node_of(dir);
	struct entry *e = leaf ? dir_find(d, leaf, strlen(leaf)) : NULL;
	if (!e)
		return -ENOENT;
	struct node *n = node_of(e->ino);
	if (want_dir && n->kind != OPLOG_DIR)
		return -ENOTDIR;
	if (!want_dir && n->kind == OPLOG_DIR)
		return -EISDIR;
	if (want_dir && n->nents)
		return -ENOTEMPTY;
	n->nlink--;
	n->ctime = d->mtime;
	dir_del(d, e);
	log_unlink(dir, leaf);
	return 0;
}

static int cut_unlink(const char *path)
{
	return remove_name(path, false);
}

static int cut_rmdir(const char *path)
{
	return remove_name(path, true);
}

static int cut_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags & ~(unsigned)RENAME_NOREPLACE)
		return -EINVAL;
	uint64_t fdir, tdir;
	const char *fleaf = NULL, *tleaf = NULL;
	int rc = resolve(from, &fdir, &fleaf);
	if (!rc)
		rc = resolve(to, &tdir, &tleaf);
	if (rc)
		return rc;
	struct node *fd = node_of(fdir), *td = node_of(tdir);
	struct entry *fe = fleaf ? dir_find(fd, fleaf, strlen(fleaf)) : NULL;
	if (!fe || !tleaf || td->kind != OPLOG_DIR)
		return -ENOENT;
	uint64_t ino = fe->ino;
	struct entry *te = dir_find(td, tleaf, strlen(tleaf));
	if (te && te->ino == ino)
		return 0;
	if (te && (flags & RENAME_NOREPLACE))
		return -EEXIST;
	if (te) {
		struct node *old = node_of(te->ino);
		if (old->kind == OPLOG_DIR && old->nents)
			return -ENOTEMPTY;
		if ((old->kind == OPLOG_DIR) != (node_of(ino)->kind == OPLOG_DIR))
			return old->kind == OPLOG_DIR ? -EISDIR : -ENOTDIR;
		old->nlink--;
		dir_del(td, te);
	}
	fe = dir_find(fd, fleaf, strlen(fleaf)); /* dir_del may have moved it */
	dir_del(fd, fe);
	dir_add(td, tleaf, ino);
	if (fdir == tdir) {
		logrec(&(struct oplog_rec){.type = OPLOG_RENAME, .a = fdir,
					   .name1 = fleaf, .len1 = (uint16_t)strlen(fleaf),
					   .name2 = tleaf, .len2 = (uint16_t)strlen(tleaf)});
	} else {
		log_link(tdir, tleaf, ino);
		log_unlink(fdir, fleaf);
	}
	return 0;
}

static int cut_link(const char *from, const char *to)
{
	uint64_t ino, dir;
	const char *leaf = NULL;
	int rc = resolve(from, &ino, NULL);
	if (!rc)
		rc = resolve(to, &dir, &leaf);
	if (rc)
		return rc;
	struct node *n = node_of(ino), *d = node_of(dir);
	if (n->kind == OPLOG_DIR)
		return -EPERM;
	if (!leaf || d->kind != OPLOG_DIR)
		return -ENOENT;
	if (dir_find(d, leaf, strlen(leaf)))
		return -EEXIST;
	n->nlink++;
	dir_add(d, leaf, ino);
	log_link(dir, leaf, ino);
	return 0;
}

static int cut_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	uint64_t ino;
	int rc = lookup(path, fi, &ino);
	if (rc)
		return rc;
	struct node *n = node_of(ino);
	if (n->kind == OPLOG_DIR)
		return -EISDIR;
	if (size < 0)
		return -EINVAL;
	return trunc_to(ino, n, (size_t)size);
}

static int cut_read(const char *path, char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	struct node *n = node_of(fi->fh);
	if (!n || n->kind != OPLOG_FILE)
		return -EBADF;
	if ((size_t)off >= n->size)
		return 0;
	if (len > n->size - (size_t)off)
		len = n->size - (size_t)off;
	memcpy(buf, n->data + off, len);
	return (int)len;
}

static int cut_write(const char *path, const char *buf, size_t len, off_t off,
		     struct fuse_file_info *fi)
{
	uint64_t ino = fi->fh;
	struct node *n = node_of(ino);
	if (!n || n->kind != OPLOG_FILE)
		return -EBADF;
	size_t end = (size_t)off + len;
	if (end > n->cap) {
		size_t nc = n->cap ? n->cap : 4096;
		while (nc < end)
			nc *= 2;
		uint8_t *g = realloc(n->data, nc);
		if (!g)
			return -ENOMEM;
		n->data = g;
		n->cap = nc;
	}
	if ((size_t)off > n->size)
		memset(n->data + n->size, 0, (size_t)off - n->size);
	memcpy(n->data + off, buf, len);
	if (end > n->size)
		n->size = end;
	now(n);
	logrec(&(struct oplog_rec){.type = OPLOG_WRITE, .a = ino, .b = (uint64_t)off,
				   .data = (const uint8_t *)buf, .dlen = (uint32_t)len});
	return (int)len;
}

static int cut_fallocate(const char *path, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	uint64_t ino = fi->fh;
	struct node *n = node_of(ino);
	if (!n || n->kind != OPLOG_FILE)
		return -EBADF;
	if (mode == 0) {
		if ((size_t)(off + len) > n->size)
			return trunc_to(ino, n, (size_t)(off + len));
		return 0;
	}
	if (mode == FALLOC_FL_KEEP_SIZE)
		return 0; /* preallocation: nothing a reader can see */
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
		if ((size_t)off >= n->size)
			return 0;
		size_t l = (size_t)len;
		if (l > n->size - (size_t)off)
			l = n->size - (size_t)off;
		memset(n->data + off, 0, l);
		now(n);
		logrec(&(struct oplog_rec){.type = OPLOG_PUNCH, .a = ino, .b = (uint64_t)off,
					   .c = l});
		return 0;
	}
	return -EOPNOTSUPP;
}

static int cut_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	logrec(&(struct oplog_rec){.type = OPLOG_FSYNC, .a = fi->fh, .b = datasync != 0});
	return 0;
}

static int cut_opendir(const char *path, struct fuse_file_info *fi)
{
	uint64_t ino;
	int rc = resolve(path, &ino, NULL);
	if (rc)
		return rc;
	if (node_of(ino)->kind != OPLOG_DIR)
		return -ENOTDIR;
	fi->fh = ino;
	return 0;
}

static int cut_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	logrec(&(struct oplog_rec){.type = OPLOG_FSYNCDIR, .a = fi->fh});
	return 0;
}

static int cut_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct node *d = node_of(fi->fh);
	if (!d || d->kind != OPLOG_DIR)
		return -ENOTDIR;
	/* Offsets are entry indexes + 1; "." and ".." first. */
	if (off == 0 && fill(buf, ".", NULL, 1, 0))
		return 0;
	if (off <= 1 && fill(buf, "..", NULL, 2, 0))
		return 0;
	for (size_t i = off > 2 ? (size_t)off - 2 : 0; i < d->nents; i++) {
		struct stat st = {.st_ino = d->ents[i].ino};
		st.st_mode = node_of(d->ents[i].ino)->kind == OPLOG_DIR ? S_IFDIR : S_IFREG;
		if (fill(buf, d->ents[i].name, &st, (off_t)i + 3, 0))
			break;
	}
	return 0;
}

static int cut_statfs(const char *path, struct statvfs *sv)
{
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = 4096;
	sv->f_blocks = sv->f_bfree = sv->f_bavail = 1ull << 28; /* 1 TiB */
	sv->f_files = sv->f_ffree = sv->f_favail = 1ull << 24;
	sv->f_namemax = 255;
	return 0;
}

static int cut_getxattr(const char *path, const char *name, char *val, size_t size)
{
	if (strcmp(name, SEQ_XATTR) != 0)
		return -ENODATA;
	char s[32];
	int n = snprintf(s, sizeof(s), "%llu", (unsigned long long)cfs()->seq);
	fflush(cfs()->log); /* a reader may look at the log while we run */
	if (size == 0)
		return n;
	if (size < (size_t)n)
		return -ERANGE;
	memcpy(val, s, (size_t)n);
	return n;
}

static int cut_setxattr(const char *path, const char *name, const char *val, size_t size,
			int flags)
{
	if (strcmp(name, MARK_XATTR) != 0)
		return -ENOTSUP;
	logrec(&(struct oplog_rec){.type = OPLOG_MARK, .name1 = val,
				   .len1 = (uint16_t)(size > 65535 ? 65535 : size)});
	return 0;
}

static int cut_listxattr(const char *path, char *list, size_t size)
{
	return 0;
}

static int cut_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	uint64_t ino;
	int rc = lookup(path, fi, &ino);
	if (!rc)
		node_of(ino)->mode = mode & 07777;
	return rc;
}

static int cut_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	uint64_t ino;
	return lookup(path, fi, &ino); /* owners are not modelled */
}

static int cut_utimens(const char *path, const struct timespec tv[2],
		       struct fuse_file_info *fi)
{
	uint64_t ino;
	return lookup(path, fi, &ino); /* times are not modelled */
}

static void *cut_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;
	cfg->hard_remove = 1; /* no .fuse_hidden renames in the log */
	cfg->nullpath_ok = 1;
	cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;
	cfg->direct_io = 0;
	cfg->kernel_cache = 0;
	return cfs();
}

static void cut_destroy(void *priv)
{
	struct cutfs *c = priv;
	if (fflush(c->log) != 0 || fsync(fileno(c->log)) != 0) {
		fprintf(stderr, "cutfs: flushing the operation log: %s\n", strerror(errno));
		abort();
	}
}

static const struct fuse_operations cut_ops = {
	.init = cut_init,
	.destroy = cut_destroy,
	.getattr = cut_getattr,
	.mkdir = cut_mkdir,
	.unlink = cut_unlink,
	.rmdir = cut_rmdir,
	.rename = cut_rename,
	.link = cut_link,
	.chmod = cut_chmod,
	.chown = cut_chown,
	.truncate = cut_truncate,
	.open = cut_open,
	.create = cut_create,
	.read = cut_read,
	.write = cut_write,
	.statfs = cut_statfs,
	.fsync = cut_fsync,
	.setxattr = cut_setxattr,
	.getxattr = cut_getxattr,
	.listxattr = cut_listxattr,
	.opendir = cut_opendir,
	.readdir = cut_readdir,
	.fsyncdir = cut_fsyncdir,
	.utimens = cut_utimens,
	.fallocate = cut_fallocate,
};

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: cutfs LOG MOUNTPOINT [fuse options]\n");
		return 2;
	}
	static struct cutfs c;
	c.log = fopen(argv[1], "wb");
	if (!c.log) {
		fprintf(stderr, "cutfs: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	setvbuf(c.log, NULL, _IOFBF, 1 << 20);
	fputs(OPLOG_MAGIC, c.log);
	node_new(&c, OPLOG_FILE, 0); /* inode 0: unused */
	node_new(&c, OPLOG_DIR, 0755); /* inode 1: the root, durable from the start */
	c.nodes[OPLOG_ROOT_INO]->nlink = 2;
	argv[1] = argv[0];
	return fuse_main(argc - 1, argv + 1, &cut_ops, &c);
}
