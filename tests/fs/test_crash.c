/*
 * test_crash.c: kill the daemon at random moments and check what survives.
 *
 * Rounds (20; 100 with LSMFS_SOAK=1; LSMFS_CRASH_ROUNDS=n) over one
 * filesystem of 3 disks, state accumulating from round to round.  In each
 * round a workload child works in <mnt>/w: creates files of 0..300 KiB,
 * overwrites and truncates them, renames files and directories, makes hard
 * links, unlinks, makes and removes directories, and writes to files it
 * has unlinked while open.  It reports over a pipe, one line per event:
 *
 *   W <ino> <path>                  about to change path (and inode ino, if not 0)
 *   R <from> <to>                   about to rename
 *   F <ino> <size> <hash> <path>    after fsync(file) and fsync(parent dir):
 *                                   path is inode ino with this content
 *   D <path>                        after mkdir + fsync(parent): a directory
 *   N <path>                        after unlink/rmdir/rename + fsync(parent): absent
 *   E <what>                        an unexpected error (a failure if seen
 *                                   before the kill)
 *
 * Intentions are reported before the change, facts after the syncs, so
 * the parent only trusts a path whose last event is a fact.  The parent
 * SIGKILLs the daemon 10..400 ms into the round (fst_kill), then the
 * child, remounts and checks: the mount works; every trusted path is what
 * was reported (same inode, size and FNV-1a hash of the content; a
 * directory; absent); and the whole mount is consistent (tree_check: every
 * entry stat-able and readable without error, directory nlink = 2 +
 * subdirectories, hard-link counts = names found).  At the end the
 * filesystem is unmounted cleanly (daemon exit 0), mounted and checked
 * once more.
 */
#include "fstest.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXFILE (300 * 1024)
#define BUFCAP (1 << 20)
#define PATHCAP 512

static uint64_t rng; /* fst_rand state, seeded from the test seed */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the workload child ---- */

static int report_fd;
static char wroot[PATHCAP];
static unsigned char *cbuf; /* expected content of the file being changed */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line) - 1)
		return;
	line[n++] = '\n';
	/* one write of < PIPE_BUF bytes: lines never interleave or tear */
	if (write(report_fd, line, (size_t)n) != n)
		_exit(0);
}

/* The daemon is gone (the parent killed it): stop quietly. */
static bool gone(int e)
{
	return e == ENOTCONN || e == ECONNABORTED;
}

static void unexpected(const char *what, const char *path, int e)
{
	if (gone(e))
		_exit(0);
	say("E %s %s: %s", what, path, strerror(e));
}

static void full(const char *rel, char *out)
{
	fst_fmt(out, PATHCAP, "%s%s%s", wroot, *rel ? "/" : "", rel);
}

static void parent_of(const char *rel, char *out)
{
	const char *s = strrchr(rel, '/');
	if (!s)
		out[0] = 0;
	else
		fst_fmt(out, PATHCAP, "%.*s", (int)(s - rel), rel);
}

static int fsync_dir(const char *rel)
{
	char p[PATHCAP];
	full(rel, p);
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		unexpected("open dir", rel, errno);
		return -1;
	}
	int rc = fsync(fd);
	if (rc != 0)
		unexpected("fsync dir", rel, errno);
	close(fd);
	return rc;
}

static const char *dirs[] = {"", "d0", "d1", "d2", "d3", "d0/e0", "d0/e1", "d1/e0", "d2/e1"};
#define NDIRS (sizeof(dirs) / sizeof(dirs[0]))

static void pick_file(char *out)
{
	const char *d = dirs[fst_rand_below(&rng, NDIRS)];
	fst_fmt(out, PATHCAP, "%s%sf%d", d, *d ? "/" : "", (int)fst_rand_below(&rng, 12));
}

static void pick_path(char *out)
{
	if (fst_chance(&rng, 80)) {
		pick_file(out);
	} else {
		const char *d = dirs[1 + fst_rand_below(&rng, NDIRS - 1)];
		fst_fmt(out, PATHCAP, "%s", d);
	}
}

static ino_t ino_of(const char *rel)
{
	char p[PATHCAP];
	full(rel, p);
	struct stat st;
	return lstat(p, &st) == 0 ? st.st_ino : 0;
}

static void fill(unsigned char *p, size_t n)
{
	if (fst_chance(&rng, 20)) {
		memset(p, (int)fst_rand_below(&rng, 256), n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)fst_rand(&rng);
}

/* Read the whole file at fd into cbuf; -1 on error. */
static long long read_all(int fd, const char *rel)
{
	long long len = 0;
	for (;;) {
		ssize_t n = pread(fd, cbuf + len, BUFCAP - (size_t)len, len);
		if (n < 0) {
			unexpected("read", rel, errno);
			return -1;
		}
		if (n == 0)
			return len;
		len += n;
		if (len == BUFCAP)
			return len;
	}
}

/* After fsync(fd) and the parent directory's: report the file as it is,
 * first checking that reading it back gives what we expect (when known). */
static void report_synced(int fd, const char *rel, long long expect_len)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		unexpected("fstat", rel, errno);
		return;
	}
	uint64_t h = expect_len >= 0 ? tree_hash(cbuf, (size_t)expect_len) : 0;
	static unsigned char back[BUFCAP];
	long long len = 0;
	for (;;) {
		ssize_t n = pread(fd, back + len, BUFCAP - (size_t)len, len);
		if (n < 0) {
			unexpected("read back", rel, errno);
			return;
		}
		if (n == 0 || len + n == BUFCAP) {
			len += n;
			break;
		}
		len += n;
	}
	if (expect_len >= 0 && (len != expect_len || memcmp(back, cbuf, (size_t)len) != 0)) {
		long long i = 0;
		while (i < len && i < expect_len && back[i] == cbuf[i])
			i++;
		say("E read-back %s: %lld bytes, expected %lld, first difference at %lld", rel, len,
		    expect_len, i);
		return;
	}
	if (len != st.st_size) {
		say("E size %s: read %lld bytes, st_size %lld", rel, len, (long long)st.st_size);
		return;
	}
	if (expect_len < 0)
		h = tree_hash(back, (size_t)len);
	say("F %llu %lld %016llx %s", (unsigned long long)st.st_ino, len, (unsigned long long)h,
	    rel);
}

static void op_create(bool sync)
{
	char rel[PATHCAP], p[PATHCAP], dir[PATHCAP];
	pick_file(rel);
	full(rel, p);
	parent_of(rel, dir);
	say("W %llu %s", (unsigned long long)ino_of(rel), rel);
	int fd = open(p, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0) {
		if (errno != ENOENT && errno != EISDIR && errno != ENOTDIR)
			unexpected("create", rel, errno);
		return;
	}
	size_t size = fst_chance(&rng, 10) ? 0 : fst_chance(&rng, 30) ? fst_rand_below(&rng, 5000) : fst_rand_below(&rng, MAXFILE + 1);
	fill(cbuf, size);
	size_t done = 0;
	while (done < size) {
		size_t n = fst_chance(&rng, 50) ? size - done : 1 + fst_rand_below(&rng, size - done);
		ssize_t w = write(fd, cbuf + done, n);
		if (w != (ssize_t)n) {
			unexpected("write", rel, w < 0 ? errno : EIO);
			close(fd);
			return;
		}
		done += n;
	}
	if (sync) {
		if (fsync(fd) != 0) {
			unexpected("fsync", rel, errno);
		} else if (fsync_dir(dir) == 0) {
			report_synced(fd, rel, (long long)size);
		}
	}
	if (fd >= 0 && close(fd) != 0)
		unexpected("close", rel, errno);
}

static void op_overwrite(bool sync)
{
	char rel[PATHCAP], p[PATHCAP], dir[PATHCAP];
	pick_file(rel);
	full(rel, p);
	parent_of(rel, dir);
	struct stat st;
	if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	int fd = open(p, O_RDWR);
	if (fd < 0) {
		unexpected("open", rel, errno);
		return;
	}
	long long len = read_all(fd, rel);
	if (len < 0) {
		close(fd);
		return;
	}
	say("W %llu %s", (unsigned long long)st.st_ino, rel);
	if (fst_chance(&rng, 25)) {
		long long size = fst_chance(&rng, 50) ? (long long)fst_rand_below(&rng, (uint64_t)len + 1)
					    : len + (long long)fst_rand_below(&rng, 200 * 1024);
		if (size > BUFCAP / 2)
			size = BUFCAP / 2;
		if (size > len)
			memset(cbuf + len, 0, (size_t)(size - len));
		if (ftruncate(fd, size) != 0) {
			unexpected("ftruncate", rel, errno);
			close(fd);
			return;
		}
		len = size;
	} else {
		long long off = (long long)fst_rand_below(&rng, (uint64_t)len + 64 * 1024);
		long long n = 1 + (long long)fst_rand_below(&rng, 100 * 1024);
		if (off + n > BUFCAP / 2)
			off = 0;
		if (off > len)
			memset(cbuf + len, 0, (size_t)(off - len));
		fill(cbuf + off, (size_t)n);
		if (pwrite(fd, cbuf + off, (size_t)n, off) != n) {
			unexpected("pwrite", rel, errno);
			close(fd);
			return;
		}
		if (off + n > len)
			len = off + n;
	}
	if (sync) {
		/* the name may be new and not yet durable: sync the directory too */
		if (fsync(fd) != 0)
			unexpected("fsync", rel, errno);
		else if (fsync_dir(dir) == 0)
			report_synced(fd, rel, len);
	}
	if (close(fd) != 0)
		unexpected("close", rel, errno);
}

static void op_rename(void)
{
	char a[PATHCAP], b[PATHCAP], pa[PATHCAP], pb[PATHCAP], da[PATHCAP], db[PATHCAP];
	pick_path(a);
	pick_path(b);
	full(a, pa);
	full(b, pb);
	struct stat st;
	if (lstat(pa, &st) != 0)
		return;
	say("R %s %s", a, b);
	if (rename(pa, pb) != 0) {
		if (errno != ENOENT && errno != ENOTEMPTY && errno != EISDIR && errno != ENOTDIR &&
		    errno != EINVAL && errno != EEXIST)
			unexpected("rename", a, errno);
		return;
	}
	parent_of(a, da);
	parent_of(b, db);
	if (fsync_dir(da) != 0 || fsync_dir(db) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		say("D %s", b);
	} else {
		int fd = open(pb, O_RDONLY);
		if (fd < 0) {
			unexpected("open renamed", b, errno);
			return;
		}
		if (fsync(fd) != 0)
			unexpected("fsync renamed", b, errno);
		else
			report_synced(fd, b, -1);
		close(fd);
	}
	if (strcmp(a, b) != 0 && ino_of(a) == 0)
		say("N %s", a);
}

static void op_link(void)
{
	char a[PATHCAP], b[PATHCAP], pa[PATHCAP], pb[PATHCAP], db[PATHCAP];
	pick_file(a);
	pick_file(b);
	full(a, pa);
	full(b, pb);
	say("W 0 %s", b);
	if (link(pa, pb) != 0) {
		if (errno != ENOENT && errno != EEXIST && errno != ENOTDIR && errno != EPERM)
			unexpected("link", a, errno); /* EPERM: a is a directory */
		return;
	}
	parent_of(b, db);
	if (fsync_dir(db) != 0)
		return;
	int fd = open(pb, O_RDONLY);
	if (fd < 0) {
		unexpected("open link", b, errno);
		return;
	}
	if (fsync(fd) != 0)
		unexpected("fsync link", b, errno);
	else
		report_synced(fd, b, -1);
	close(fd);
}

static void op_unlink(void)
{
	char rel[PATHCAP], p[PATHCAP], d[PATHCAP];
	pick_file(rel);
	full(rel, p);
	say("W 0 %s", rel);
	if (unlink(p) != 0) {
		if (errno != ENOENT && errno != EISDIR && errno != ENOTDIR)
			unexpected("unlink", rel, errno);
		return;
	}
	parent_of(rel, d);
	if (fsync_dir(d) == 0)
		say("N %s", rel);
}

static void op_mkdir(void)
{
	const char *rel = dirs[1 + fst_rand_below(&rng, NDIRS - 1)];
	char p[PATHCAP], d[PATHCAP];
	full(rel, p);
	say("W 0 %s", rel);
	if (mkdir(p, 0755) != 0) {
		if (errno != ENOENT && errno != EEXIST && errno != ENOTDIR)
			unexpected("mkdir", rel, errno);
		return;
	}
	parent_of(rel, d);
	if (fsync_dir(d) == 0)
		say("D %s", rel);
}

static void op_rmdir(void)
{
	const char *rel = dirs[1 + fst_rand_below(&rng, NDIRS - 1)];
	char p[PATHCAP], d[PATHCAP];
	full(rel, p);
	say("W 0 %s", rel);
	if (rmdir(p) != 0) {
		if (errno != ENOENT && errno != ENOTEMPTY && errno != ENOTDIR)
			unexpected("rmdir", rel, errno);
		return;
	}
	parent_of(rel, d);
	if (fsync_dir(d) == 0)
		say("N %s", rel);
}

/* A file unlinked while open and written after: an orphan for the crash. */
static int orphan_fd = -1;

static void op_orphan(void)
{
	if (orphan_fd >= 0) {
		fill(cbuf, 70000);
		if (pwrite(orphan_fd, cbuf, 70000, (off_t)fst_rand_below(&rng, 300000)) != 70000)
			unexpected("write orphan", "orphan", errno);
		if (fst_chance(&rng, 30) && fsync(orphan_fd) != 0)
			unexpected("fsync orphan", "orphan", errno);
		if (fst_chance(&rng, 20)) {
			close(orphan_fd);
			orphan_fd = -1;
		}
		return;
	}
	char rel[PATHCAP], p[PATHCAP];
	fst_fmt(rel, sizeof(rel), "orphan%d", (int)fst_rand_below(&rng, 1000));
	full(rel, p);
	orphan_fd = open(p, O_CREAT | O_RDWR | O_EXCL, 0600);
	if (orphan_fd < 0) {
		if (errno != EEXIST)
			unexpected("create orphan", rel, errno);
		return;
	}
	fill(cbuf, 100000);
	if (write(orphan_fd, cbuf, 100000) != 100000)
		unexpected("write orphan", rel, errno);
	if (unlink(p) != 0)
		unexpected("unlink orphan", rel, errno);
}

static void workload(uint64_t wseed)
{
	rng = wseed;
	cbuf = malloc(BUFCAP);
	if (!cbuf)
		_exit(1);
	long long end = now_ms() + 3000;
	while (now_ms() < end) {
		unsigned c = (unsigned)fst_rand_below(&rng, 100);
		if (c < 22)
			op_create(fst_chance(&rng, 75));
		else if (c < 45)
			op_overwrite(fst_chance(&rng, 60));
		else if (c < 60)
			op_rename();
		else if (c < 66)
			op_link();
		else if (c < 78)
			op_unlink();
		else if (c < 88)
			op_mkdir();
		else if (c < 93)
			op_rmdir();
		else
			op_orphan();
	}
	_exit(0);
}

/* ---- the parent: what must have survived ---- */

enum fact { UNKNOWN, FILE_IS, DIR_IS, ABSENT };

struct expect {
	char path[PATHCAP];
	enum fact fact;
	unsigned long long ino;
	long long size;
	unsigned long long hash;
};

#define MAXEXPECT 4096
static struct expect expects[MAXEXPECT];
static int nexpects;
static struct fst fs;
static unsigned long seed;
static int round_no;
static int failures;

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void failf(const char *fmt, ...)
{
	failures++;
	fprintf(stderr, "test_crash: FAIL (seed %lu, round %d): ", seed, round_no);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static struct expect *expect_at(const char *path)
{
	for (int i = 0; i < nexpects; i++)
		if (!strcmp(expects[i].path, path))
			return &expects[i];
	if (nexpects == MAXEXPECT)
		return NULL;
	struct expect *e = &expects[nexpects++];
	memset(e, 0, sizeof(*e));
	fst_fmt(e->path, sizeof(e->path), "%s", path);
	return e;
}

static void forget_under(const char *path)
{
	size_t l = strlen(path);
	for (int i = 0; i < nexpects; i++)
		if (!strcmp(expects[i].path, path) ||
		    (!strncmp(expects[i].path, path, l) && expects[i].path[l] == '/'))
			expects[i].fact = UNKNOWN;
}

/* Apply one report line; before_kill says it was read before the kill. */
static void apply(char *line, bool before_kill)
{
	char a[PATHCAP], b[PATHCAP];
	unsigned long long ino, hash;
	long long size;
	struct expect *e;
	switch (line[0]) {
	case 'W':
		if (sscanf(line, "W %llu %511[^\n]", &ino, a) != 2)
			break;
		forget_under(a);
		for (int i = 0; ino && i < nexpects; i++)
			if (expects[i].fact == FILE_IS && expects[i].ino == ino)
				expects[i].fact = UNKNOWN;
		return;
	case 'R':
		if (sscanf(line, "R %511s %511s", a, b) != 2)
			break;
		forget_under(a);
		forget_under(b);
		return;
	case 'F':
		if (sscanf(line, "F %llu %lld %llx %511[^\n]", &ino, &size, &hash, a) != 4)
			break;
		if ((e = expect_at(a)))
			*e = (struct expect){.fact = FILE_IS, .ino = ino, .size = size, .hash = hash};
		if (e)
			fst_fmt(e->path, sizeof(e->path), "%s", a);
		return;
	case 'D':
	case 'N':
		if (sscanf(line + 2, "%511[^\n]", a) != 1)
			break;
		if (line[0] == 'N')
			forget_under(a);
		if ((e = expect_at(a)))
			e->fact = line[0] == 'D' ? DIR_IS : ABSENT;
		return;
	case 'E':
		if (before_kill)
			failf("the workload met an error before the crash: %s", line + 2);
		return;
	}
	failf("bad report line \"%s\"", line);
}

static char pending[1 << 16];
static size_t npending;

/* Read what the pipe has (waiting up to ms); apply whole lines.  Returns
 * false at end of file. */
static bool pump(int fd, int ms, bool before_kill)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, ms) <= 0)
		return true;
	ssize_t n = read(fd, pending + npending, sizeof(pending) - 1 - npending);
	if (n <= 0)
		return n < 0 && errno == EINTR;
	npending += (size_t)n;
	char *start = pending, *nl;
	while ((nl = memchr(start, '\n', (size_t)(pending + npending - start)))) {
		*nl = 0;
		apply(start, before_kill);
		start = nl + 1;
	}
	npending = (size_t)(pending + npending - start);
	memmove(pending, start, npending);
	return true;
}

static void verify_expectations(void)
{
	int files = 0, ndirs = 0, absent = 0;
	static unsigned char buf[BUFCAP];
	for (int i = 0; i < nexpects; i++) {
		struct expect *e = &expects[i];
		char p[PATHCAP * 2];
		fst_fmt(p, sizeof(p), "%s/w/%s", fs.mnt, e->path);
		struct stat st;
		int rc = lstat(p, &st);
		int err = errno;
		switch (e->fact) {
		case UNKNOWN:
			break;
		case ABSENT:
			absent++;
			if (rc == 0 || err != ENOENT)
				failf("%s was removed and its directory synced, but after the crash "
				      "lstat gives %s",
				      e->path, rc == 0 ? "an entry" : strerror(err));
			break;
		case DIR_IS:
			ndirs++;
			if (rc != 0 || !S_ISDIR(st.st_mode))
				failf("%s was made and synced as a directory; after the crash: %s",
				      e->path, rc ? strerror(err) : "not a directory");
			break;
		case FILE_IS: {
			files++;
			if (rc != 0 || !S_ISREG(st.st_mode)) {
				failf("%s was fsynced (inode %llu, %lld bytes); after the crash: %s",
				      e->path, e->ino, e->size,
				      rc ? strerror(err) : "not a regular file");
				break;
			}
			if (st.st_ino != e->ino || st.st_size != e->size)
				failf("%s was fsynced as inode %llu with %lld bytes; after the crash "
				      "inode %llu with %lld bytes",
				      e->path, e->ino, e->size, (unsigned long long)st.st_ino,
				      (long long)st.st_size);
			int fd = open(p, O_RDONLY);
			if (fd < 0) {
				failf("%s: open after the crash: %s", e->path, strerror(errno));
				break;
			}
			long long len = 0;
			ssize_t n;
			while ((n = read(fd, buf + len, BUFCAP - (size_t)len)) > 0)
				len += n;
			if (n < 0)
				failf("%s: read after the crash: %s", e->path, strerror(errno));
			close(fd);
			if (len != e->size || tree_hash(buf, (size_t)len) != e->hash)
				failf("%s: content after the crash (%lld bytes, hash %016llx) is not "
				      "the fsynced one (%lld bytes, hash %016llx)",
				      e->path, len, (unsigned long long)tree_hash(buf, (size_t)len),
				      e->size, e->hash);
			break;
		}
		}
	}
	fprintf(stderr, "test_crash: round %d: checked %d fsynced files, %d dirs, %d removals\n",
		round_no, files, ndirs, absent);
}

static void check_tree(void)
{
	struct tree_stats ts;
	char tag[64];
	fst_fmt(tag, sizeof(tag), "test_crash round %d (seed %lu)", round_no, seed);
	int n = tree_check(fs.mnt, tag, NULL, NULL, &ts);
	if (n)
		failf("the tree is inconsistent after the crash (%d problems, above)", n);
	char lf[PATHCAP * 2];
	fst_fmt(lf, sizeof(lf), "%s/lost+found", fs.mnt);
	struct stat st;
	if (lstat(lf, &st) != 0 || !S_ISDIR(st.st_mode))
		failf("lost+found is missing after the crash");
	fprintf(stderr, "test_crash: round %d: tree ok: %ld files, %ld dirs, %lld bytes\n",
		round_no, ts.files, ts.dirs, ts.bytes);
}

static void finish(int rc)
{
	if (rc && getenv("FSTEST_KEEP")) {
		if (fs.daemon)
			(void)fst_kill(&fs);
		fprintf(stderr, "test_crash: keeping %s (FSTEST_KEEP)\n", fs.root);
	} else {
		fst_cleanup(&fs);
	}
	if (rc)
		fprintf(stderr, "test_crash: FAIL (seed %lu; replay with LSMFS_SEED=%lu)\n", seed,
			seed);
	else
		fprintf(stderr, "test_crash: PASS (seed %lu)\n", seed);
	exit(rc);
}

int main(void)
{
	fst_require_fuse();
	setvbuf(stderr, NULL, _IOLBF, 0);
	seed = fst_seed("test_crash");
	rng = seed;
	int rounds = fst_soak() ? 100 : 20;
	if (getenv("LSMFS_CRASH_ROUNDS"))
		rounds = atoi(getenv("LSMFS_CRASH_ROUNDS"));
	signal(SIGPIPE, SIG_IGN);

	const char *mk[] = {"--chunk-size", "65536", "--inline-max", "4096", NULL};
	if (fst_init(&fs, "crash", 3) != 0 || fst_mkfs(&fs, mk) != 0 || fst_mount(&fs, NULL) != 0)
		finish(1);
	fst_fmt(wroot, sizeof(wroot), "%s/w", fs.mnt);
	if (mkdir(wroot, 0755) != 0) {
		fprintf(stderr, "test_crash: mkdir %s: %s\n", wroot, strerror(errno));
		finish(1);
	}
	{ /* make the top directory durable before the first crash */
		int fd = open(fs.mnt, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || fsync(fd) != 0) {
			fprintf(stderr, "test_crash: fsync %s: %s\n", fs.mnt, strerror(errno));
			finish(1);
		}
		close(fd);
	}

	for (round_no = 1; round_no <= rounds; round_no++) {
		int pfd[2];
		if (pipe(pfd) != 0)
			finish(1);
		uint64_t wseed = fst_rand(&rng);
		int delay = 10 + (int)fst_rand_below(&rng, 391);
		pid_t child = fork();
		if (child < 0)
			finish(1);
		if (child == 0) {
			close(pfd[0]);
			report_fd = pfd[1];
			workload(wseed);
		}
		close(pfd[1]);
		long long kill_at = now_ms() + delay;
		npending = 0;
		for (long long t; (t = now_ms()) < kill_at;)
			if (!pump(pfd[0], (int)(kill_at - t), true))
				break;
		if (fst_kill(&fs) != 0)
			finish(1);
		kill(child, SIGKILL);
		int st;
		waitpid(child, &st, 0);
		while (pump(pfd[0], 1000, false))
			;
		close(pfd[0]);
		if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
			failf("the workload exited with status %d", WEXITSTATUS(st));

		/* odd rounds run without the kernel's writeback cache: fsync then
		 * meets data the daemon already has rather than dirty pages */
		if (fst_mount(&fs, round_no % 2 ? "no_writeback" : NULL) != 0) {
			failf("remount after the crash (killed at %d ms) fails", delay);
			finish(1);
		}
		fprintf(stderr, "test_crash: round %d: daemon killed at %d ms, remounted\n", round_no,
			delay);
		verify_expectations();
		check_tree();
		if (failures)
			finish(1);
	}

	round_no = rounds + 1;
	if (fst_umount(&fs) != 0) {
		failf("clean unmount after the last round");
		finish(1);
	}
	if (fst_mount(&fs, NULL) != 0) {
		failf("mount after the clean unmount");
		finish(1);
	}
	verify_expectations();
	check_tree();
	if (!failures && fst_umount(&fs) != 0)
		failf("final unmount");
	finish(failures ? 1 : 0);
}
