/*
 * test_concurrency.c: several processes working in the same directories.
 *
 * NPROC forked workers run for a few seconds (5; 30 with LSMFS_SOAK=1;
 * LSMFS_CONC_SECS=n) in <mnt>/c/s0..s2 at once.  Worker P:
 *   - publishes versions of its files pP_k: writes a temporary tP_k whole,
 *     then renames it over pP_k, often into another directory;
 *   - reads files anyone published (pP_k, links lP_k, shared names xJ):
 *     open may fail with ENOENT, but an opened file must hold one whole
 *     valid content (never garbage, never a torn mix);
 *   - renames its files to shared names and shared names to shared names
 *     across directories (so processes rename over each other's files),
 *     unlinks, hard-links, makes and removes subdirectories;
 *   - rewrites its private files qP_k in place and checks each read-back
 *     against its own model;
 *   - checks that a readdir never lists a name twice and lists only names
 *     the workload makes.
 * A valid content is a 64-byte header "LSMFS-CONC p=P k=K v=V len=L" and a
 * body whose every byte is a function of (P, K, V, offset), L bytes in all.
 * At the end the filesystem is unmounted (the daemon must exit 0), mounted
 * again and walked: every file holds valid content (the private ones
 * exactly their model), nlink and readdir agree (tree_check).
 */
#include "fstest.h"
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#define NPROC 4
#define NKEYS 8
#define NSHARED 8
#define NDIRS 3
#define HDR 64
#define MAXLEN (200 * 1024)
#define QMAX (256 * 1024)
#define PATHCAP 512

static struct fst fs;
static unsigned long seed;
static char croot[PATHCAP];
static int me = -1; static uint64_t rng; /* fst_rand state, seeded from the test seed */

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt_, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt_, ...)
{
	fprintf(stderr, "test_concurrency: FAIL (seed %lu) worker %d: ", seed, me);
	va_list ap;
	va_start(ap, fmt_);
	vfprintf(stderr, fmt_, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(1);
}

/* ---- contents ---- */

static void body_bytes(unsigned char *p, size_t from, size_t to, int P, int K, uint64_t V)
{
	uint64_t key = mix(((uint64_t)P << 56) ^ ((uint64_t)K << 48) ^ V);
	for (size_t i = from; i < to; i++) {
		uint64_t w = mix(key ^ (i >> 3));
		p[i] = (unsigned char)(w >> ((i & 7) * 8));
	}
}

static size_t make_content(unsigned char *p, int P, int K, uint64_t V)
{
	size_t c = (size_t)fst_rand_below(&rng, 100);
	size_t len = c < 40 ? HDR + fst_rand_below(&rng, 4096) : c < 60 ? 4000 + fst_rand_below(&rng, 200) : HDR + fst_rand_below(&rng, MAXLEN - HDR);
	char h[HDR + 1];
	int n = fst_fmt(h, sizeof(h), "LSMFS-CONC p=%d k=%d v=%llu len=%zu", P, K,
		    (unsigned long long)V, len);
	memset(h + n, ' ', (size_t)(HDR - 1 - n));
	h[HDR - 1] = '\n';
	memcpy(p, h, HDR);
	body_bytes(p, HDR, len, P, K, V);
	return len;
}

/* Check that p[0..len) is one whole valid content; want_p >= 0 demands its
 * writer.  Returns NULL or what is wrong. */
static const char *check_content(const unsigned char *p, size_t len, int want_p, char *why,
				 size_t cap)
{
	if (len < HDR)
		return fst_fmt(why, cap, "only %zu bytes (a content has at least %d)", len, HDR), why;
	char h[HDR + 1];
	memcpy(h, p, HDR);
	h[HDR] = 0;
	int P, K;
	unsigned long long V;
	size_t L;
	if (sscanf(h, "LSMFS-CONC p=%d k=%d v=%llu len=%zu", &P, &K, &V, &L) != 4)
		return fst_fmt(why, cap, "no valid header: \"%.40s\"", h), why;
	if (want_p >= 0 && P != want_p)
		return fst_fmt(why, cap, "written by p=%d, the name says %d", P, want_p), why;
	if (L != len)
		return fst_fmt(why, cap, "%zu bytes but the header says %zu (p=%d k=%d v=%llu)", len, L,
			   P, K, V),
		       why;
	static unsigned char want[MAXLEN];
	body_bytes(want, HDR, len, P, K, V);
	for (size_t i = HDR; i < len; i++)
		if (p[i] != want[i])
			return fst_fmt(why, cap, "byte %zu is %#x, expected %#x (p=%d k=%d v=%llu len=%zu)",
				   i, p[i], want[i], P, K, V, len),
			       why;
	return NULL;
}

/* ---- worker ---- */

static unsigned char *wbuf, *rbuf;
static unsigned char *qmodel[NKEYS];
static long qlen[NKEYS]; /* -1: the file does not exist */
static uint64_t version;
static long nops, nreads, nvalid;

static void path_of(char *out, int d, const char *name)
{
	fst_fmt(out, PATHCAP, "%s/s%d/%s", croot, d, name);
}

static void check_err(const char *what, const char *path, int e, int ok1, int ok2, int ok3)
{
	if (e == ok1 || e == ok2 || e == ok3)
		return;
	die("%s %s: %s", what, path, strerror(e));
}

static void op_publish(void)
{
	int k = (int)fst_rand_below(&rng, NKEYS), d = (int)fst_rand_below(&rng, NDIRS), d2 = fst_chance(&rng, 50) ? d : (int)fst_rand_below(&rng, NDIRS);
	char tmp[PATHCAP], dst[PATHCAP], name[32];
	fst_fmt(name, sizeof(name), "t%d_%d", me, k);
	path_of(tmp, d, name);
	fst_fmt(name, sizeof(name), "p%d_%d", me, k);
	path_of(dst, d2, name);
	size_t len = make_content(wbuf, me, k, ++version);
	int fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		die("create %s: %s", tmp, strerror(errno));
	size_t done = 0;
	while (done < len) {
		size_t n = fst_chance(&rng, 60) ? len - done : 1 + fst_rand_below(&rng, len - done);
		ssize_t w = write(fd, wbuf + done, n);
		if (w != (ssize_t)n)
			die("write %s: %zd of %zu: %s", tmp, w, n, strerror(errno));
		done += n;
	}
	if (fst_chance(&rng, 20) && fsync(fd) != 0)
		die("fsync %s: %s", tmp, strerror(errno));
	if (close(fd) != 0)
		die("close %s: %s", tmp, strerror(errno));
	if (rename(tmp, dst) != 0)
		die("rename %s -> %s: %s", tmp, dst, strerror(errno));
}

/* What the name says about the writer: P for pP_k and lP_k, -1 for shared
 * names, -2 for names readers must skip. */
static int name_owner(const char *name)
{
	int P, K;
	if ((name[0] == 'p' || name[0] == 'l') && sscanf(name + 1, "%d_%d", &P, &K) == 2)
		return P;
	if (name[0] == 'x')
		return -1;
	return -2;
}

static bool known_name(const char *name)
{
	int a, b;
	char c;
	if (!strcmp(name, "sub"))
		return true;
	if (strchr("pltq", name[0]) && sscanf(name + 1, "%d_%d%c", &a, &b, &c) == 2)
		return a >= 0 && a < NPROC && b >= 0 && b < NKEYS;
	if (name[0] == 'x' && sscanf(name + 1, "%d%c", &a, &c) == 1)
		return a >= 0 && a < NSHARED;
	return false;
}

/* Readdir of s<d>: no name twice, no unknown names; pick a readable one. */
static bool scan_dir(int d, char *pick, size_t cap)
{
	char dir[PATHCAP];
	fst_fmt(dir, sizeof(dir), "%s/s%d", croot, d);
	DIR *dh = opendir(dir);
	if (!dh)
		die("opendir %s: %s", dir, strerror(errno));
	char seen[256][32];
	int n = 0, candidates = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!known_name(de->d_name))
			die("readdir %s lists an unknown name \"%.60s\"", dir, de->d_name);
		for (int i = 0; i < n; i++)
			if (!strcmp(seen[i], de->d_name))
				die("readdir %s lists \"%s\" twice", dir, de->d_name);
		if (n < 256)
			fst_fmt(seen[n++], sizeof(seen[0]), "%s", de->d_name);
		if (name_owner(de->d_name) >= -1 && fst_rand_below(&rng, (uint64_t)++candidates) == 0)
			fst_fmt(pick, cap, "%s", de->d_name);
		errno = 0;
	}
	if (errno)
		die("readdir %s: %s", dir, strerror(errno));
	closedir(dh);
	return candidates > 0;
}

static void op_read(void)
{
	int d = (int)fst_rand_below(&rng, NDIRS);
	char name[64], path[PATHCAP];
	if (!scan_dir(d, name, sizeof(name)))
		return;
	path_of(path, d, name);
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		check_err("open", path, errno, ENOENT, ENOENT, ENOENT);
		return;
	}
	size_t len = 0;
	for (;;) {
		ssize_t n = read(fd, rbuf + len, MAXLEN + 1 - len);
		if (n < 0)
			die("read %s: %s", path, strerror(errno));
		if (n == 0 || (len += (size_t)n) > MAXLEN)
			break;
	}
	struct stat st;
	if (fstat(fd, &st) != 0)
		die("fstat %s: %s", path, strerror(errno));
	close(fd);
	char why[256];
	nreads++;
	if (check_content(rbuf, len, name_owner(name), why, sizeof(why)))
		die("%s (inode %llu, st_size %lld): read %zu bytes that are not one whole content: %s",
		    path, (unsigned long long)st.st_ino, (long long)st.st_size, len, why);
	if ((long long)len != (long long)st.st_size)
		die("%s: read %zu bytes, st_size %lld", path, len, (long long)st.st_size);
	nvalid++;
}

static void op_rename_shared(void)
{
	char a[PATHCAP], b[PATHCAP], name[32];
	bool own = fst_chance(&rng, 50);
	if (own)
		fst_fmt(name, sizeof(name), "p%d_%d", me, (int)fst_rand_below(&rng, NKEYS));
	else
		fst_fmt(name, sizeof(name), "x%d", (int)fst_rand_below(&rng, NSHARED));
	path_of(a, (int)fst_rand_below(&rng, NDIRS), name);
	fst_fmt(name, sizeof(name), "x%d", (int)fst_rand_below(&rng, NSHARED));
	path_of(b, (int)fst_rand_below(&rng, NDIRS), name);
	/* exchanging would put a shared content under one of our own names */
	unsigned flags = fst_chance(&rng, 15)	       ? RENAME_NOREPLACE
			 : !own && fst_chance(&rng, 15) ? RENAME_EXCHANGE
					      : 0;
	if (renameat2(AT_FDCWD, a, AT_FDCWD, b, flags) != 0)
		check_err("rename", a, errno, ENOENT, flags == RENAME_NOREPLACE ? EEXIST : ENOENT,
			  ENOENT);
}

static void op_unlink(void)
{
	char p[PATHCAP], name[32];
	unsigned c = (unsigned)fst_rand_below(&rng, 3);
	if (c == 0)
		fst_fmt(name, sizeof(name), "p%d_%d", me, (int)fst_rand_below(&rng, NKEYS));
	else if (c == 1)
		fst_fmt(name, sizeof(name), "l%d_%d", me, (int)fst_rand_below(&rng, NKEYS));
	else
		fst_fmt(name, sizeof(name), "x%d", (int)fst_rand_below(&rng, NSHARED));
	path_of(p, (int)fst_rand_below(&rng, NDIRS), name);
	if (unlink(p) != 0)
		check_err("unlink", p, errno, ENOENT, ENOENT, ENOENT);
}

static void op_link(void)
{
	char a[PATHCAP], b[PATHCAP], name[32];
	int k = (int)fst_rand_below(&rng, NKEYS);
	fst_fmt(name, sizeof(name), "p%d_%d", me, k);
	path_of(a, (int)fst_rand_below(&rng, NDIRS), name);
	fst_fmt(name, sizeof(name), "l%d_%d", me, k);
	path_of(b, (int)fst_rand_below(&rng, NDIRS), name);
	if (link(a, b) != 0)
		check_err("link", a, errno, ENOENT, EEXIST, ENOENT);
}

static void op_subdir(void)
{
	char p[PATHCAP], q[PATHCAP];
	path_of(p, (int)fst_rand_below(&rng, NDIRS), "sub");
	unsigned c = (unsigned)fst_rand_below(&rng, 3);
	if (c == 0 && mkdir(p, 0755) != 0)
		check_err("mkdir", p, errno, EEXIST, EEXIST, EEXIST);
	if (c == 1 && rmdir(p) != 0)
		check_err("rmdir", p, errno, ENOENT, ENOTEMPTY, ENOENT);
	if (c == 2) {
		path_of(q, (int)fst_rand_below(&rng, NDIRS), "sub");
		if (rename(p, q) != 0)
			check_err("rename", p, errno, ENOENT, ENOTEMPTY, EEXIST);
	}
}

/* Private files: in-place writes and truncates, each checked against the
 * model right after, while the others work in the same directory. */
static void op_private(void)
{
	int k = (int)fst_rand_below(&rng, NKEYS);
	char p[PATHCAP], name[32];
	fst_fmt(name, sizeof(name), "q%d_%d", me, k);
	path_of(p, k % NDIRS, name);
	int fd = open(p, O_CREAT | O_RDWR, 0600);
	if (fd < 0)
		die("open %s: %s", p, strerror(errno));
	if (qlen[k] < 0)
		qlen[k] = 0;
	if (fst_chance(&rng, 20)) {
		long size = (long)fst_rand_below(&rng, QMAX);
		if (size > qlen[k])
			memset(qmodel[k] + qlen[k], 0, (size_t)(size - qlen[k]));
		if (ftruncate(fd, size) != 0)
			die("ftruncate %s: %s", p, strerror(errno));
		qlen[k] = size;
	} else {
		long off = (long)fst_rand_below(&rng, (uint64_t)qlen[k] + 8192);
		long n = 1 + (long)fst_rand_below(&rng, fst_chance(&rng, 50) ? 5000 : 70000);
		if (off + n > QMAX)
			off = QMAX - n;
		if (off > qlen[k])
			memset(qmodel[k] + qlen[k], 0, (size_t)(off - qlen[k]));
		for (long i = 0; i < n; i++)
			qmodel[k][off + i] = (unsigned char)fst_rand(&rng);
		if (pwrite(fd, qmodel[k] + off, (size_t)n, off) != n)
			die("pwrite %s: %s", p, strerror(errno));
		if (off + n > qlen[k])
			qlen[k] = off + n;
	}
	ssize_t got = pread(fd, rbuf, QMAX + 1, 0);
	if (got != qlen[k] || memcmp(rbuf, qmodel[k], (size_t)qlen[k]) != 0) {
		long i = 0;
		while (i < got && i < qlen[k] && rbuf[i] == qmodel[k][i])
			i++;
		die("%s: read back %zd bytes, model %ld, first difference at %ld", p, got, qlen[k], i);
	}
	if (close(fd) != 0)
		die("close %s: %s", p, strerror(errno));
}

static void worker(int id, double secs, int out)
{
	me = id;
	rng = seed * 1000003u + (uint64_t)id;
	wbuf = malloc(MAXLEN + 1);
	rbuf = malloc(QMAX + MAXLEN + 2);
	for (int k = 0; k < NKEYS; k++) {
		qmodel[k] = malloc(QMAX);
		qlen[k] = -1;
		if (!qmodel[k])
			_exit(1);
	}
	if (!wbuf || !rbuf)
		_exit(1);
	double end = now() + secs;
	while (now() < end) {
		unsigned c = (unsigned)fst_rand_below(&rng, 100);
		if (c < 28)
			op_publish();
		else if (c < 60)
			op_read();
		else if (c < 74)
			op_rename_shared();
		else if (c < 80)
			op_unlink();
		else if (c < 85)
			op_link();
		else if (c < 88)
			op_subdir();
		else
			op_private();
		nops++;
	}
	for (int k = 0; k < NKEYS; k++) {
		char line[128];
		int n = fst_fmt(line, sizeof(line), "q%d_%d %ld %016llx\n", me, k, qlen[k],
			    (unsigned long long)(qlen[k] >= 0 ? tree_hash(qmodel[k], (size_t)qlen[k])
							      : 0));
		if (write(out, line, (size_t)n) != n)
			_exit(1);
	}
	fprintf(stderr, "test_concurrency: worker %d: %ld ops, %ld reads of whole valid contents\n",
		me, nops, nvalid);
	_exit(0);
}

/* ---- parent: the final walk ---- */

struct qexpect {
	char name[32];
	long len;
	unsigned long long hash;
	bool found;
};
static struct qexpect qexp[NPROC * NKEYS];
static int nqexp;

static int check_final(void *arg, const char *rel, const struct stat *st, const unsigned char *data,
		       size_t len)
{
	(void)arg;
	(void)st;
	if (strncmp(rel, "c/", 2) != 0)
		return 0; /* lost+found */
	const char *name = strrchr(rel, '/') + 1;
	char why[256];
	if (name[0] == 'q') {
		for (int i = 0; i < nqexp; i++)
			if (!strcmp(qexp[i].name, name)) {
				qexp[i].found = true;
				if ((long)len != qexp[i].len ||
				    tree_hash(data, len) != qexp[i].hash) {
					fprintf(stderr, "test_concurrency: %s: %zu bytes, model %ld, or "
							"the content differs\n",
						rel, len, qexp[i].len);
					return 1;
				}
				return 0;
			}
		fprintf(stderr, "test_concurrency: %s: unexpected private file\n", rel);
		return 1;
	}
	if (name[0] == 't') {
		fprintf(stderr, "test_concurrency: %s: a temporary file left behind\n", rel);
		return 1;
	}
	if (check_content(data, len, name_owner(name), why, sizeof(why))) {
		fprintf(stderr, "test_concurrency: %s: after remount, not a valid content: %s\n", rel,
			why);
		return 1;
	}
	return 0;
}

static void finish(int rc)
{
	if (rc && getenv("FSTEST_KEEP")) {
		if (fs.daemon)
			(void)fst_kill(&fs);
		fprintf(stderr, "test_concurrency: keeping %s (FSTEST_KEEP)\n", fs.root);
	} else {
		fst_cleanup(&fs);
	}
	fprintf(stderr, "test_concurrency: %s (seed %lu%s)\n", rc ? "FAIL" : "PASS", seed,
		rc ? "; timing makes a replay approximate" : "");
	exit(rc);
}

int main(void)
{
	fst_require_fuse();
	setvbuf(stderr, NULL, _IOLBF, 0);
	seed = fst_seed("test_concurrency");
	double secs = fst_soak() ? 30 : 5;
	if (getenv("LSMFS_CONC_SECS"))
		secs = atof(getenv("LSMFS_CONC_SECS"));

	const char *mk[] = {"--chunk-size", "65536", "--inline-max", "4096", NULL};
	if (fst_init(&fs, "conc", 3) != 0 || fst_mkfs(&fs, mk) != 0 || fst_mount(&fs, NULL) != 0)
		finish(1);
	fst_fmt(croot, sizeof(croot), "%s/c", fs.mnt);
	if (mkdir(croot, 0755) != 0)
		finish(1);
	for (int d = 0; d < NDIRS; d++) {
		char p[PATHCAP];
		fst_fmt(p, sizeof(p), "%s/s%d", croot, d);
		if (mkdir(p, 0755) != 0)
			finish(1);
	}

	int pfd[2];
	if (pipe(pfd) != 0)
		finish(1);
	pid_t pids[NPROC];
	for (int i = 0; i < NPROC; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			finish(1);
		if (pids[i] == 0) {
			close(pfd[0]);
			worker(i, secs, pfd[1]);
		}
	}
	close(pfd[1]);
	int rc = 0;
	for (int i = 0; i < NPROC; i++) {
		int st;
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "test_concurrency: worker %d failed (status %#x)\n", i, st);
			rc = 1;
		}
	}
	FILE *res = fdopen(pfd[0], "r");
	char line[128];
	while (res && fgets(line, sizeof(line), res) && nqexp < NPROC * NKEYS) {
		struct qexpect *q = &qexp[nqexp];
		if (sscanf(line, "%31s %ld %llx", q->name, &q->len, &q->hash) == 3 && q->len >= 0)
			nqexp++;
	}
	if (res)
		fclose(res);
	if (rc)
		finish(1);

	if (fst_umount(&fs) != 0) {
		fprintf(stderr, "test_concurrency: the unmount after the workers is not clean\n");
		finish(1);
	}
	if (fst_mount(&fs, NULL) != 0)
		finish(1);
	struct tree_stats ts;
	char tag[64];
	fst_fmt(tag, sizeof(tag), "test_concurrency (seed %lu)", seed);
	int problems = tree_check(fs.mnt, tag, check_final, NULL, &ts);
	for (int i = 0; i < nqexp; i++)
		if (!qexp[i].found) {
			fprintf(stderr, "test_concurrency: private file %s (%ld bytes) is missing\n",
				qexp[i].name, qexp[i].len);
			problems++;
		}
	fprintf(stderr, "test_concurrency: after remount: %ld files, %ld dirs, %lld bytes, %d problems\n",
		ts.files, ts.dirs, ts.bytes, problems);
	if (problems)
		finish(1);
	if (fst_umount(&fs) != 0)
		finish(1);
	finish(0);
}
