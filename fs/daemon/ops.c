/*
 * ops.c: the fuse_lowlevel_ops table and thin handlers.  Each handler
 * unpacks the request, calls the fs_* operation below it, and replies
 * exactly once; errors are negative errnos converted here only.
 */
#include "ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static struct fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* A filesystem remounted read-only takes no change (the kernel refuses
 * them first; this holds for anything that slips past, e.g. a request in
 * flight at the switch). */
static bool refused(fuse_req_t req)
{
	if (fs_writable(fs_of(req)))
		return false;
	fuse_reply_err(req, EROFS);
	return true;
}

static void reply_entry(fuse_req_t req, struct fs *fs, const struct stat *st)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = st->st_ino;
	e.generation = fs_generation(fs, st->st_ino);
	e.attr = *st;
	e.attr_timeout = fs->opt.attr_timeout;
	e.entry_timeout = fs->opt.entry_timeout;
	fuse_reply_entry(req, &e);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	if (fs->opt.writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	/* Entries with their attributes when the program looks the names
	 * up (ls -l, du), without them when it does not (ls, find): every
	 * listing is READDIRPLUS, and plus.c chooses, not the kernel's auto
	 * mode (libfuse asks for it unless told not to). */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC; /* the kernel sends setattr(size) */
	/* File handles (name_to_handle_at, NFS export) that outlive the
	 * kernel's cache and remounts: the kernel looks up "." and ".."
	 * of an inode number it no longer has (fs_lookup). */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* POSIX ACLs, enforced by the kernel, kept by acl.c; the umask is
	 * then ours to apply (a default ACL replaces it). */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		fs->posix_acl = true;
	}
	/* Not v1 (a setuid check per write on our side); wire.c asks for
	 * v2, which libfuse cannot name. */
	conn->want &= ~(unsigned)FUSE_CAP_HANDLE_KILLPRIV;
	/* Large writes could arrive as pipes of page references, but
	 * libfuse offers that only without a custom read hook, which wire.c
	 * is: loop.c puts a WRITE's data page-aligned in memory instead, for
	 * O_DIRECT without a copy. */
	if (conn->capable & FUSE_CAP_SPLICE_READ)
		conn->want |= FUSE_CAP_SPLICE_READ;
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	struct stat st;
	int rc = fs_lookup(fs, parent, name, &st);
	if (rc == -ENOENT) {
		/* A negative entry the kernel may cache: we see every create. */
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->opt.entry_timeout;
		fuse_reply_entry(req, &e);
	} else if (rc) {
		fuse_reply_err(req, -rc);
	} else {
		plus_looked(fuse_req_ctx(req)->pid, parent, S_ISDIR(st.st_mode)); /* req ends at the reply */
		reply_entry(req, fs, &st);
	}
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_forget(fs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		fs_forget(fs_of(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct fs *fs = fs_of(req);
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in) {
		fuse_reply_err(req, -rc);
		return;
	}
	struct stat st;
	inode_lock(fs, in);
	inode_stat(fs, in, &st);
	inode_unlock(fs, in);
	inode_put(fs, in);
	fuse_reply_attr(req, &st, fs->opt.attr_timeout);
}

/* The caller's uid, gid and pid: enough for the privileged xattrs
 * (xattr.c reads CAP_SYS_ADMIN itself, and only for trusted.*). */
static const struct fs_caller *caller_ids(fuse_req_t req, struct fs_caller *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	c->uid = ctx->uid;
	c->gid = ctx->gid;
	c->pid = ctx->pid;
	c->ngroups = 0;
	return c;
}

/* The caller's ids with its supplementary groups, for the setgid rule of
 * FUSE_HANDLE_KILLPRIV_V2 and ACLs.  libfuse reads the groups from
 * /proc/PID/status (an open, a read and a close per request), so only
 * the requests that may change a mode or an ACL ask for them; the
 * GETXATTR of security.capability that comes with every first write of
 * a file does not. */
static const struct fs_caller *caller_of(fuse_req_t req, struct fs_caller *c)
{
	caller_ids(req, c);
	int n = fuse_req_getgroups(req, 32, c->groups);
	c->ngroups = n < 0 ? 0 : (n > 32 ? 32 : n);
	return c;
}

/* A write cleared setuid/setgid: nothing in the WRITE reply tells the
 * kernel, whose cached mode would keep the bits until attr_timeout.  Only
 * attributes are invalidated (offset -1), which takes no page locks and is
 * safe from inside a request. */
static void mode_changed(struct fs *fs, fuse_ino_t ino)
{
	if (fs->se)
		(void)fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	if (refused(req))
		return;
	(void)fi;
	struct fs *fs = fs_of(req);
	struct stat st;
	struct fs_caller c;
	int rc = fs_setattr(fs, ino, attr, to_set,
			    (to_set & FUSE_SET_ATTR_KILL_SUID) ? caller_of(req, &c) : NULL, &st);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, fs->opt.attr_timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char *target;
	int rc = fs_readlink(fs_of(req), ino, &target);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fuse_reply_readlink(req, target);
	free(target);
}

static void make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
		 const char *target)
{
	struct fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct stat st;
	int rc = fs_mknod(fs, parent, name, mode, rdev, ctx->uid, ctx->gid, ctx->umask, target,
			  &st);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry(req, fs, &st);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	if (refused(req))
		return;
	if (!S_ISREG(mode) && !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISFIFO(mode) &&
	    !S_ISSOCK(mode)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	make(req, parent, name, mode, rdev, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	if (refused(req))
		return;
	make(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	if (refused(req))
		return;
	make(req, parent, name, S_IFLNK | 0777, 0, link);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (refused(req))
		return;
	fuse_reply_err(req, -fs_unlink(fs_of(req), parent, name, false));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (refused(req))
		return;
	fuse_reply_err(req, -fs_unlink(fs_of(req), parent, name, true));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	if (refused(req))
		return;
	fuse_reply_err(req, -fs_rename(fs_of(req), parent, name, newparent, newname, flags));
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	if (refused(req))
		return;
	struct fs *fs = fs_of(req);
	struct stat st;
	int rc = fs_link(fs, ino, newparent, newname, &st);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry(req, fs, &st);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = fs_open_file(fs_of(req), ino, fi->flags);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->keep_cache = 1; /* every change passes through this kernel */
	if (fuse_reply_open(req, fi) == -ENOENT)
		(void)fs_release(fs_of(req), ino); /* interrupted: nobody will release it */
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	if (refused(req))
		return;
	struct fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct stat st;
	int rc = fs_mknod(fs, parent, name, S_IFREG | (mode & 07777), 0, ctx->uid, ctx->gid,
			  ctx->umask, NULL, &st);
	if (!rc)
		rc = fs_open_file(fs, st.st_ino, fi->flags);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = st.st_ino;
	e.generation = fs_generation(fs, st.st_ino);
	e.attr = st;
	e.attr_timeout = fs->opt.attr_timeout;
	e.entry_timeout = fs->opt.entry_timeout;
	fi->keep_cache = 1;
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		(void)fs_release(fs, st.st_ino);
		fs_forget(fs, st.st_ino, 1);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t got;
	int rc = fs_read(fs_of(req), ino, buf, size, off, &got);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, got);
	free(buf);
}

/*
 * An O_DIRECT write (asynchronous above all), with or without the
 * writeback cache: a buffered read that raced it may have put the old
 * bytes back in the cache, where they would stay.  The range is dropped from the cache before the writer
 * hears back, so that after the write is acknowledged every reader sees
 * it.  Never for the cache's own writeback (fi->writepage): its folios are
 * under writeback, and invalidating them would wait on ourselves.
 */
static void direct_written(struct fs *fs, fuse_ino_t ino, const struct fuse_file_info *fi,
			   off_t off, int written)
{
	if (written > 0 && fs->se && fi && !fi->writepage && (fi->flags & O_DIRECT))
		(void)fuse_lowlevel_notify_inval_inode(fs->se, ino, off, written);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	if (refused(req))
		return;
	struct fs *fs = fs_of(req);
	struct fs_caller c;
	bool kill = fi && (fi->flags & WIRE_WRITE_KILL_SUIDGID);
	int rc = fs_write(fs, ino, buf, size, off, kill ? caller_of(req, &c) : NULL,
			  fi && fi->writepage);
	direct_written(fs, ino, fi, off, rc);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, (size_t)rc);
	if (kill)
		mode_changed(fs, ino);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	if (refused(req))
		return;
	struct fs *fs = fs_of(req);
	struct fs_caller c;
	bool kill = fi && (fi->flags & WIRE_WRITE_KILL_SUIDGID);
	int rc = fs_write_bufv(fs, ino, bufv, off, kill ? caller_of(req, &c) : NULL,
			       fi && fi->writepage);
	direct_written(fs, ino, fi, off, rc);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, (size_t)rc);
	if (kill)
		mode_changed(fs, ino);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, -fs_release(fs_of(req), ino));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, -fs_fsync(fs_of(req), ino, datasync != 0));
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	int rc;
	struct fs_inode *in = inode_get(fs, ino, &rc);
	if (!in) {
		fuse_reply_err(req, -rc);
		return;
	}
	inode_lock(fs, in);
	bool dir = S_ISDIR(in->rec.mode);
	bool keep = dir && dircache_keep(fs, &in->rec);
	inode_unlock(fs, in);
	inode_put(fs, in);
	if (!dir) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fi->cache_readdir = keep;
	fi->keep_cache = keep; /* a copy already kept stays (the kernel checks it) */
	fuse_reply_open(req, fi);
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	size_t run_start;   /* where the entries sharing last_off begin */
	uint64_t last_off;
};

/*
 * Entries whose names hash alike share one offset; a reply must never end
 * inside such a run, or resuming from that offset would skip the rest.
 * An entry of next_off did not fit: the reply ends before it, and before
 * the rest of its run when the run began in this reply, not at its start
 * (true: the run was dropped).
 */
static bool dir_full(struct dirbuf *d, uint64_t next_off)
{
	if (next_off != d->last_off || d->run_start == 0)
		return false;
	d->used = d->run_start;
	return true;
}

/* An entry of len bytes and next_off was added; true when it begins a run. */
static bool dir_took(struct dirbuf *d, uint64_t next_off, size_t len)
{
	bool first = next_off != d->last_off;
	if (first) {
		d->run_start = d->used;
		d->last_off = next_off;
	}
	d->used += len;
	return first;
}

static int dir_fill(void *ctx, const char *name, uint64_t ino, uint8_t type, uint64_t next_off)
{
	struct dirbuf *d = ctx;
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = (mode_t)type << 12;
	size_t len = fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, name, &st,
				       (off_t)next_off);
	if (len > d->size - d->used) {
		dir_full(d, next_off);
		return 1;
	}
	dir_took(d, next_off, len);
	return 0;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	struct dirbuf d = {.req = req, .size = size, .last_off = UINT64_MAX};
	d.buf = malloc(size ? size : 1);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	int rc = fs_readdir(fs_of(req), ino, (uint64_t)off, dir_fill, &d);
	if (rc && d.used == 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

/*
 * READDIRPLUS: each entry with its attributes, as a lookup would give
 * them, so that `ls -l` or `du` after a readdir sends no LOOKUP per name
 * (the kernel asks for it in its auto mode only when the program looks
 * the names up).  Each entry handed out is a lookup the kernel holds
 * (FORGET gives it back), so one that does not fit, or that a reply
 * ending inside a run of one offset drops again, gives its back here.
 * "." and ".." carry no lookup (node 0: the kernel makes no entry).
 */
struct dirplus {
	struct dirbuf d;
	struct fs *fs;
	bool plain;         /* no attributes: entries without a lookup */
	size_t files_left;  /* entries that are not directories it may still take */
	uint64_t run[64];   /* the lookups taken for the run of last_off */
	size_t nrun;
};

/* Give back the lookups of the run of entries dropped from the reply. */
static void run_forget(struct dirplus *p)
{
	for (size_t i = 0; i < p->nrun; i++)
		fs_forget(p->fs, p->run[i], 1);
	p->nrun = 0;
}

static int dirplus_fill(void *ctx, const char *name, uint64_t ino, uint8_t type, uint64_t next_off)
{
	struct dirplus *p = ctx;
	struct dirbuf *d = &p->d;
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	bool dot = name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
	if (dot || p->plain || fs_kernel_has_attrs(p->fs, ino) ||
	    fs_entry_ref(p->fs, ino, &e.attr) != 0) {
		/* A dot, a listing without attributes (plus.c), an inode
		 * whose attributes the kernel has, not timed out (this mount
		 * keeps them up to date), or one that will not load (the
		 * lookup that follows says why): a plain entry, no lookup
		 * held. */
		memset(&e.attr, 0, sizeof(e.attr));
		e.attr.st_ino = ino;
		e.attr.st_mode = (mode_t)type << 12;
	} else {
		e.ino = ino;
		e.generation = fs_generation(p->fs, ino);
		e.attr_timeout = p->fs->opt.attr_timeout;
		e.entry_timeout = p->fs->opt.entry_timeout;
	}
	size_t room = d->size - d->used;
	if (!p->files_left && type != DT_DIR && !dot)
		room = 0;
	size_t len = fuse_add_direntry_plus(d->req, d->buf + d->used, room, name, &e,
					    (off_t)next_off);
	if (len > room) {
		if (e.ino)
			fs_forget(p->fs, ino, 1);
		if (dir_full(d, next_off))
			run_forget(p); /* the run goes whole to the next reply */
		return 1;
	}
	if (dir_took(d, next_off, len))
		p->nrun = 0;
	if (type != DT_DIR && !dot)
		p->files_left--;
	if (e.ino && p->nrun < sizeof(p->run) / sizeof(p->run[0]))
		p->run[p->nrun++] = ino;
	else if (e.ino)
		d->run_start = 0; /* a run too long to give back: kept whole */
	return 0;
}

/*
 * What each reply holds, plus.c chooses (see there).  A reader not known
 * to look at what it lists gets attributes in the first reply of a
 * listing only, which holds at most PLUS_FIRST_BYTES (about 25 entries): a
 * walk that never looks (find) costs few inode loads per directory, a
 * small directory listed by `ls -l` needs no lookup, and the rest of the
 * listing is not looked up in the inode table entry by entry (a listing
 * of 1,000 names the kernel all held, in one reply with that look: 1.4-1.7
 * million entries a second; in a first reply of 4 KiB and the rest
 * without: 2.5-2.7 million).
 */
static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	enum plus_mode m = plus_listing(fuse_req_ctx(req)->pid, ino, (uint64_t)off);
	if (m == PLUS_FIRST && size > PLUS_FIRST_BYTES)
		size = PLUS_FIRST_BYTES;
	struct dirplus p = {.d = {.req = req, .size = size, .last_off = UINT64_MAX},
			    .fs = fs_of(req), .plain = m == PLUS_ASK || m == PLUS_PLAIN,
			    .files_left = m == PLUS_ASK ? PLUS_LOOKS : SIZE_MAX};
	p.d.buf = malloc(size ? size : 1);
	if (!p.d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	int rc = fs_readdir(p.fs, ino, (uint64_t)off, dirplus_fill, &p);
	if (m == PLUS_ASK && p.files_left == 0)
		plus_asked(fuse_req_ctx(req)->pid, ino);
	if (rc && p.d.used == 0)
		fuse_reply_err(req, -rc);
	else if (fuse_reply_buf(req, p.d.buf, p.d.used) != 0 && p.d.used)
		fs_logf(p.fs, "directory %llu: a READDIRPLUS reply did not reach the kernel: its "
			"entries' lookups stay held until unmount", (unsigned long long)ino);
	free(p.d.buf);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -fs_fsyncdir(fs_of(req), ino));
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct statvfs sv;
	int rc = fs_statfs(fs_of(req), &sv);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_statfs(req, &sv);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	if (refused(req))
		return;
	struct fs_caller c;
	fuse_reply_err(req, -fs_setxattr(fs_of(req), ino, name, value, size, flags,
					 caller_of(req, &c)));
}

static void reply_sized(fuse_req_t req, const void *buf, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	void *val;
	size_t len;
	struct fs_caller c;
	int rc = fs_getxattr(fs_of(req), ino, name, &val, &len, caller_ids(req, &c));
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	reply_sized(req, val, len, size);
	free(val);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *list;
	size_t len;
	struct fs_caller c;
	int rc = fs_listxattr(fs_of(req), ino, &list, &len, caller_ids(req, &c));
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	reply_sized(req, list, len, size);
	free(list);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	if (refused(req))
		return;
	struct fs_caller c;
	fuse_reply_err(req, -fs_removexattr(fs_of(req), ino, name, caller_of(req, &c)));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	if (refused(req))
		return;
	(void)fi;
	struct fs *fs = fs_of(req);
	struct fs_caller c;
	fuse_reply_err(req, -fs_fallocate(fs, ino, mode, offset, length, caller_of(req, &c)));
	mode_changed(fs, ino); /* setuid may have gone */
}

const struct fuse_lowlevel_ops lsmfs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.write_buf = op_write_buf,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
};
