/*
 * session.c: where lsmfs-disk's requests go.  A mounted filesystem is
 * asked through its daemon's control socket (<store>/control, fs/SCHEMA.md
 * "Control requests"); an unmounted one is opened here, with the disks
 * locked, and asked through fs_control: the same requests, the same
 * answers.
 */
#include "disk.h"
#include "jsonread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define FUSE_SUPER_MAGIC 0x65735546

/* Connect to <dir>/control: the socket, or -errno. */
static int connect_dir(const char *dir)
{
	struct sockaddr_un sa;
	int dfd;
	int rc = fs_control_address(dir, &sa, &dfd);
	if (rc)
		return rc;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		rc = -errno;
	if (dfd >= 0)
		close(dfd);
	if (rc) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	return fd;
}

/* The store's directory of the lsmfs mounted at mnt, from the daemon's
 * statistics (fs/SCHEMA.md "Statistics": root only). */
static int store_of_mount(const char *mnt, char *out, size_t cap)
{
	char buf[65536];
	ssize_t n = getxattr(mnt, FS_STATS_XATTR, buf, sizeof(buf) - 1);
	if (n < 0) {
		int e = errno;
		if (e == EPERM || e == EACCES)
			fprintf(stderr, PROG ": %s: only root may manage the disks of a mounted lsmfs\n",
				mnt);
		else
			fprintf(stderr, PROG ": %s: not an lsmfs mount (%s)\n", mnt, strerror(e));
		return EXIT_FAILED;
	}
	struct jv *j;
	char err[256];
	if (jv_parse(buf, (size_t)n, &j, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: the daemon's statistics do not parse: %s\n", mnt, err);
		return EXIT_FAILED;
	}
	const struct jv *dir = jv_get(jv_get(j, "store"), "dir");
	int rc = 0;
	if (!dir || dir->type != JV_STRING || dir->len >= cap || memchr(dir->str, 0, dir->len)) {
		fprintf(stderr, PROG ": %s: the daemon's statistics name no store\n", mnt);
		rc = EXIT_FAILED;
	} else {
		memcpy(out, dir->str, dir->len);
		out[dir->len] = '\0';
	}
	jv_free(j);
	return rc;
}

/* Where the daemon serving target keeps its socket now. */
static int daemon_home(struct session *s, char *out, size_t cap)
{
	if (s->mounted)
		return store_of_mount(s->target, out, cap);
	char err[1200];
	struct lsmfs_diskset *ds;
	if (diskset_open(s->target, 0, &ds, err, sizeof(err)))
		return -1;
	snprintf(out, cap, "%s", ds->meta_dir);
	diskset_close(ds);
	return 0;
}

static void log_stderr(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, PROG ": %s\n", msg);
}

static int online(struct session *s, const char *dir)
{
	int fd = connect_dir(dir);
	if (fd == -EACCES || fd == -EPERM) {
		fprintf(stderr, PROG ": %s/%s: only root may manage the disks of a mounted lsmfs\n",
			dir, FS_CONTROL_SOCKET);
		return EXIT_FAILED;
	}
	if (fd < 0)
		return fd;
	s->sock = fd;
	snprintf(s->where, sizeof(s->where), "%s", dir);
	return 0;
}

int session_open(struct session *s, const char *target, bool writable, bool degraded)
{
	unsigned lenient = degraded ? DISKSET_DEGRADED : 0;
	memset(s, 0, sizeof(*s));
	s->sock = -1;
	snprintf(s->target, sizeof(s->target), "%s", target);
	struct statfs sf;
	struct stat st;
	char dir[1100];
	if (!strchr(target, ':') && statfs(target, &sf) == 0 && sf.f_type == FUSE_SUPER_MAGIC &&
	    stat(target, &st) == 0 && st.st_ino == 1) {
		/* A mount point (the root of a FUSE mount). */
		s->mounted = true;
		int rc = store_of_mount(target, dir, sizeof(dir));
		if (rc)
			return rc;
		rc = online(s, dir);
		if (rc < 0) {
			fprintf(stderr, PROG ": %s: the daemon does not answer on %s/%s: %s\n", target,
				dir, FS_CONTROL_SOCKET, strerror(-rc));
			return EXIT_FAILED;
		}
		return rc;
	}
	char err[1200];
	struct lsmfs_diskset *ds;
	int rc = diskset_open(target, lenient, &ds, err, sizeof(err));
	if (rc) {
		fprintf(stderr, PROG ": %s\n", err);
		return EXIT_FAILED;
	}
	snprintf(dir, sizeof(dir), "%s", ds->meta_dir);
	diskset_close(ds);
	rc = online(s, dir);
	if (rc >= 0)
		return rc;
	/* No daemon answers: offline, with the disks locked to change them. */
	/* remove --lost says the disk is dead for good: its copy of the store,
	 * if any, is not waited for (fs/SCHEMA.md "Store copies"). */
	rc = diskset_open(target, lenient | (writable ? DISKSET_LOCK | DISKSET_LOCK_WAIT : 0) |
				  (writable && degraded ? DISKSET_FORCE : 0), &s->ds,
			  err, sizeof(err));
	if (rc) {
		fprintf(stderr, PROG ": %s%s\n", err,
			rc == -EBUSY ? " (a daemon without a control socket, or fsck.lsmfs)" : "");
		return EXIT_FAILED;
	}
	rc = fs_offline_open(s->ds, !writable, log_stderr, NULL, &s->fs, err, sizeof(err));
	if (rc) {
		fprintf(stderr, PROG ": %s\n", err);
		diskset_close(s->ds);
		s->ds = NULL;
		return EXIT_FAILED;
	}
	snprintf(s->where, sizeof(s->where), "%s", dir);
	return 0;
}


void session_close(struct session *s)
{
	if (s->sock >= 0)
		close(s->sock);
	if (s->fs && fs_offline_close(s->fs))
		fprintf(stderr, PROG ": %s: the metadata store did not close cleanly\n", s->where);
	if (s->ds)
		diskset_close(s->ds);
	s->sock = -1;
	s->fs = NULL;
	s->ds = NULL;
}

struct asked {
	void (*line)(void *, const char *);
	void *ctx;
	char *last; /* held back until the next line shows it was not the verdict */
	bool nomem;
};

/* Every line but the last goes on; the last is kept. */
static int take_line(void *ctx, const char *text)
{
	struct asked *a = ctx;
	if (a->last && a->line)
		a->line(a->ctx, a->last);
	free(a->last);
	a->last = strdup(text);
	a->nomem |= !a->last;
	return 0;
}

static int verdict(struct asked *a, char *err, size_t errlen)
{
	int rc = 0;
	if (a->nomem) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	} else if (!a->last) {
		snprintf(err, errlen, "the daemon closed the connection without an answer");
		rc = -EIO;
	} else if (strcmp(a->last, "ok") != 0) {
		int e, off = 0;
		if (sscanf(a->last, "error %d %n", &e, &off) == 1 && e > 0) {
			snprintf(err, errlen, "%s", a->last + off);
			rc = -e;
		} else if (!strncmp(a->last, "progress ", 9) || !strncmp(a->last, "lost ", 5)) {
			/* A report, not a verdict: the daemon went away mid-request. */
			if (a->line)
				a->line(a->ctx, a->last);
			snprintf(err, errlen, "the daemon closed the connection before it answered (did "
				 "it die? see its log): the request may be half done");
			rc = -EIO;
		} else {
			snprintf(err, errlen, "unexpected answer: %.200s", a->last);
			rc = -EIO;
		}
	}
	free(a->last);
	a->last = NULL;
	return rc;
}

int session_ask(struct session *s, const char *req, void (*line)(void *ctx, const char *text),
		void *ctx, char *err, size_t errlen)
{
	struct asked a = {.line = line, .ctx = ctx};
	if (!s->fs) {
		/* One request per connection: the daemon closes after it. */
		if (s->sock < 0) {
			int fd = connect_dir(s->where);
			char dir[sizeof(s->where)];
			if ((fd == -ENOENT || fd == -ECONNREFUSED) && daemon_home(s, dir, sizeof(dir)) == 0 &&
			    strcmp(dir, s->where)) {
				/* The copy of the store the daemon kept its
				 * socket in was removed: it serves from another. */
				snprintf(s->where, sizeof(s->where), "%s", dir);
				fd = connect_dir(s->where);
			}
			if (fd < 0) {
				snprintf(err, errlen, "%s/%s: %s", s->where, FS_CONTROL_SOCKET,
					 strerror(-fd));
				return fd;
			}
			s->sock = fd;
		}
		char buf[300];
		int n = snprintf(buf, sizeof(buf), "%s\n", req);
		if (send(s->sock, buf, (size_t)n, MSG_NOSIGNAL) != n) {
			snprintf(err, errlen, "%s/%s: %s", s->where, FS_CONTROL_SOCKET, strerror(errno));
			return -EIO;
		}
		/* Lines of any length: the status is one long line. */
		char *acc = NULL;
		size_t len = 0, cap = 0;
		char chunk[65536];
		for (;;) {
			ssize_t k = recv(s->sock, chunk, sizeof(chunk), 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			if (len + (size_t)k + 1 > cap) {
				size_t nc = (len + (size_t)k + 1) * 2;
				char *g = realloc(acc, nc);
				if (!g) {
					free(acc);
					snprintf(err, errlen, "out of memory");
					return -ENOMEM;
				}
				acc = g;
				cap = nc;
			}
			memcpy(acc + len, chunk, (size_t)k);
			len += (size_t)k;
			size_t start = 0;
			for (size_t i = 0; i < len; i++)
				if (acc[i] == '\n') {
					acc[i] = '\0';
					take_line(&a, acc + start);
					start = i + 1;
				}
			memmove(acc, acc + start, len - start);
			len -= start;
		}
		free(acc);
		close(s->sock);
		s->sock = -1;
		return verdict(&a, err, errlen);
	}
	(void)fs_control(s->fs, req, take_line, &a);
	return verdict(&a, err, errlen);
}

void session_first_line(void *ctx, const char *text)
{
	char **first = ctx;
	if (!*first)
		*first = strdup(text);
}
