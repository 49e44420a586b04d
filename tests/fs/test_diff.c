/*
 * test_diff.c: differential random-operation test of the filesystem.
 *
 * One seeded sequence of operations is applied twice: to side A, <mnt>/t on
 * an lsmfs mount over 3 disks (mkfs --chunk-size 65536 --inline-max 4096, so
 * that writes cross chunk boundaries and files move between inline and
 * chunked), and to side B, a plain directory under the scratch root (ext4
 * or whatever TMPDIR is on).  Every operation's return value, errno and any
 * bytes it returns must agree, and after it the lstat() of the paths it
 * touched must agree (type, mode, size, nlink).  Every 1000 operations, at
 * the end, and around a remount every 3000 operations, the whole trees are
 * compared: names, types, modes, owners, sizes, nlink, hard-link structure,
 * symlink targets, user.* xattrs, full file contents, and mtimes (see
 * check_mtime for what is compared).
 *
 * The operations work over a small namespace (about 50 names, a few
 * directories deep) so that names collide; paths are drawn from a sorted
 * walk of side B so a seed replays exactly.  A few file descriptors stay
 * open across operations (writes to unlinked-but-open files included) and
 * are closed before each remount.
 *
 * Each mount uses the next of several option sets (kernel attribute and
 * entry caching off, write-through instead of the writeback cache, a tiny
 * block cache).  After the random operations, readdir_resume() checks that
 * a readdir resumed across creates, unlinks and renames lists every name
 * that stayed in place exactly once.
 *
 * Environment: LSMFS_SEED replays a seed; LSMFS_SOAK=1 runs 50000 ops;
 * LSMFS_DIFF_OPS=n sets the count; LSMFS_DIFF_CHECK_EVERY=n compares the
 * trees every n ops (to bisect); LSMFS_DIFF_OPTS fixes the mount options;
 * FSTEST_KEEP keeps the scratch tree of a failed run; FSTEST_SELFTEST=1
 * points both sides at plain directories (no FUSE needed) to validate the
 * generator and the comparer: it must report no mismatch.
 *
 * The test stops at the first mismatch and prints the seed, the operation
 * number, the operation, both results and the last operations before it.
 */
#include "fstest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define NSIDES 2
#define SIDE_A 0 /* the filesystem under test */
#define SIDE_B 1 /* the reference directory */
#define NSLOTS 4
#define MAXIO (200 * 1024)
#define CHUNK 65536
#define INLINE_MAX 4096
#define FILE_CAP (6 << 20) /* writes and truncates keep files below this */
#define MAXENTS 1500
#define RELMAX 4096
#define MAXDEPTH 4 /* new names are made at most this deep */
#define COMPARE_EVERY 1000
#define REMOUNT_EVERY 3000
#define LOGN 24

/* ---- random numbers (splitmix64) ---- */

static uint64_t rng; /* fst_rand state, seeded from the test seed */

/* ---- state ---- */

static struct fst fs;
static bool selftest;
static unsigned long seed;
static char base[NSIDES][512];
static struct timespec start_time;
static long opno;

#define NNAMES 50
static char names[NNAMES][260];

struct ent {
	char path[RELMAX];
	mode_t mode;
	off_t size;
};
static struct ent ents[MAXENTS];
static int nents;
static long long ents_bytes;
static int ents_files, ents_dirs, ents_links;

struct slot {
	bool open;
	int fd[NSIDES];
	int flags;
	char path[RELMAX];
};
static struct slot slots[NSLOTS];

/* Reference inodes whose mtime the two sides may legitimately disagree on
 * (after fallocate, or a truncate that did not change the size: ext4 and
 * a FUSE filesystem need not agree on those).  Cleared when the time is
 * set again or the file is surely modified. */
#define MAXFUZZY 4096
static ino_t fuzzy[MAXFUZZY];
static int nfuzzy;

/* Paths where setxattr lately succeeded: getxattr and removexattr favour them. */
static char xpaths[8][RELMAX], xnames[8][300];
static int nxpaths;

static char oplog[LOGN][RELMAX * 2 + 256];

static unsigned char *wbuf;          /* data written, the same for both sides */
static unsigned char *rbuf[NSIDES];  /* data read back by each side */

/* ---- op kinds ---- */

enum kind {
	OP_CREATE, OP_WRITE, OP_READ, OP_TRUNC, OP_RENAME, OP_LINK, OP_UNLINK, OP_SYMLINK,
	OP_MKDIR, OP_RMDIR, OP_SETX, OP_REMX, OP_GETX, OP_LISTX, OP_CHMOD, OP_UTIME,
	OP_FSYNC, OP_FALLOC, OP_READDIR, OP_READLINK, OP_STAT, OP_HOPEN, OP_HWRITE,
	OP_HREAD, OP_HTRUNC, OP_HFSYNC, OP_HFALLOC, OP_HCLOSE, OP_HUNLINK, NKINDS
};

static const char *kind_name[NKINDS] = {
	"create", "write", "read", "truncate", "rename", "link", "unlink", "symlink",
	"mkdir", "rmdir", "setxattr", "removexattr", "getxattr", "listxattr", "chmod",
	"utimensat", "fsync", "fallocate", "readdir", "readlink", "stat", "h-open",
	"h-write", "h-read", "h-ftruncate", "h-fsync", "h-fallocate", "h-close",
	"h-unlink",
};

static const unsigned weight[NKINDS] = {
	[OP_CREATE] = 6, [OP_WRITE] = 12, [OP_READ] = 8, [OP_TRUNC] = 5, [OP_RENAME] = 8,
	[OP_LINK] = 3, [OP_UNLINK] = 5, [OP_SYMLINK] = 3, [OP_MKDIR] = 4, [OP_RMDIR] = 3,
	[OP_SETX] = 3, [OP_REMX] = 2, [OP_GETX] = 2, [OP_LISTX] = 1, [OP_CHMOD] = 2,
	[OP_UTIME] = 3, [OP_FSYNC] = 2, [OP_FALLOC] = 3, [OP_READDIR] = 2, [OP_READLINK] = 1,
	[OP_STAT] = 2, [OP_HOPEN] = 4, [OP_HWRITE] = 8, [OP_HREAD] = 4, [OP_HTRUNC] = 2,
	[OP_HFSYNC] = 1, [OP_HFALLOC] = 2, [OP_HCLOSE] = 2, [OP_HUNLINK] = 2,
};

static long count_ok[NKINDS], count_err[NKINDS];

struct op {
	enum kind kind;
	char p1[RELMAX], p2[RELMAX];
	int flags;
	mode_t mode;
	long long off, len; /* file offset and length (write, read, truncate, fallocate) */
	int slot;
	int how;            /* op-specific variant */
	char xname[300];
	size_t xlen;        /* xattr value length (value in wbuf) or getxattr buffer size */
	struct timespec ts[2];
};

struct res {
	long long ret;
	int err;
	int stage;          /* which step of a compound op failed (0: none) */
	size_t dlen;        /* bytes returned in rbuf[side] */
};

/* ---- failure ---- */

static void dump_log(void)
{
	fprintf(stderr, "test_diff: the last operations (seed %lu):\n", seed);
	for (long i = opno - LOGN + 1; i <= opno; i++)
		if (i >= 0)
			fprintf(stderr, "  %s\n", oplog[i % LOGN]);
}

static int compare_trees(const char *why);

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "\ntest_diff: FAIL (seed %lu, replay with LSMFS_SEED=%lu) at op #%ld: ",
		seed, seed, opno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	dump_log();
	for (int i = 0; i < NSLOTS; i++)
		if (slots[i].open)
			for (int s = 0; s < NSIDES; s++)
				close(slots[i].fd[s]);
	if (!selftest && fs.daemon) {
		siginfo_t si;
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)fs.daemon, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == fs.daemon)
			fprintf(stderr, "test_diff: the daemon has died (status %d)\n", si.si_status);
		else
			(void)compare_trees("state at the failure");
	}
	if (getenv("FSTEST_KEEP"))
		fprintf(stderr, "test_diff: keeping %s (FSTEST_KEEP)\n", fs.root);
	else
		fst_cleanup(&fs);
	exit(1);
}

static const char *side_label(int side)
{
	return side == SIDE_A ? (selftest ? "side A" : "lsmfs") : "ref";
}

/* ---- paths ---- */

static void full(int side, const char *rel, char *out, size_t cap)
{
	fst_fmt(out, cap, "%s%s%s", base[side], *rel ? "/" : "", rel);
}

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->path, ((const struct ent *)b)->path);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of a directory without . and ..; NULL on error. */
static char **list_dir(const char *path, int *n)
{
	DIR *d = opendir(path);
	if (!d)
		return NULL;
	char **v = NULL;
	int cap = 0;
	*n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			v = realloc(v, (size_t)cap * sizeof(*v));
			if (!v)
				abort();
		}
		v[(*n)++] = strdup(de->d_name);
	}
	closedir(d);
	if (*n)
		qsort(v, (size_t)*n, sizeof(*v), cmp_str);
	return v ? v : calloc(1, sizeof(*v));
}

static void free_list(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void walk_ref(const char *rel, int depth)
{
	char path[RELMAX + 600];
	full(SIDE_B, rel, path, sizeof(path));
	int n;
	char **v = list_dir(path, &n);
	if (!v)
		return;
	for (int i = 0; i < n && nents < MAXENTS; i++) {
		struct ent *e = &ents[nents];
		int len = fst_fmt(e->path, sizeof(e->path), "%s%s%s", rel, *rel ? "/" : "", v[i]);
		if (len >= (int)sizeof(e->path))
			continue;
		char p[RELMAX + 600];
		full(SIDE_B, e->path, p, sizeof(p));
		struct stat st;
		if (lstat(p, &st) != 0)
			continue;
		e->mode = st.st_mode;
		e->size = st.st_size;
		if (S_ISREG(st.st_mode)) {
			ents_bytes += st.st_size;
			ents_files++;
		}
		ents_dirs += S_ISDIR(st.st_mode);
		ents_links += S_ISLNK(st.st_mode);
		nents++;
		if (S_ISDIR(st.st_mode) && depth < 8)
			walk_ref(e->path, depth + 1);
	}
	free_list(v, n);
}

/* Refresh the list of reference entries (sorted, so a seed replays). */
static void refresh(void)
{
	nents = ents_files = ents_dirs = ents_links = 0;
	ents_bytes = 0;
	walk_ref("", 0);
	qsort(ents, (size_t)nents, sizeof(ents[0]), cmp_ent);
}

static int depth_of(const char *rel)
{
	if (!*rel)
		return 0;
	int d = 1;
	for (; *rel; rel++)
		d += *rel == '/';
	return d;
}

static const char *pick_name(void)
{
	return names[fst_rand_below(&rng, NNAMES)];
}

/* An existing entry whose type matches want (0: any); "" when none. */
static const char *pick_existing(mode_t want)
{
	if (!nents)
		return "";
	int start = (int)fst_rand_below(&rng, (uint64_t)nents);
	for (int i = 0; i < nents; i++) {
		struct ent *e = &ents[(start + i) % nents];
		if (!want || (e->mode & S_IFMT) == want)
			return e->path;
	}
	return "";
}

/* An empty directory, or "" when there is none. */
static const char *pick_empty_dir(void)
{
	if (!nents)
		return "";
	int start = (int)fst_rand_below(&rng, (uint64_t)nents);
	for (int i = 0; i < nents; i++) {
		struct ent *e = &ents[(start + i) % nents];
		if (!S_ISDIR(e->mode))
			continue;
		size_t l = strlen(e->path);
		bool empty = true;
		for (int j = 0; j < nents && empty; j++)
			empty = !(strncmp(ents[j].path, e->path, l) == 0 && ents[j].path[l] == '/');
		if (empty)
			return e->path;
	}
	return "";
}

/* A directory (maybe the top one, ""), not too deep for new names. */
static const char *pick_dir(void)
{
	if (fst_chance(&rng, 25))
		return "";
	const char *d = pick_existing(S_IFDIR);
	return depth_of(d) < MAXDEPTH ? d : "";
}

/* A path for a new name: often free, sometimes taken, rarely below a file
 * (ENOTDIR) or with a name one byte too long. */
static void pick_new(char *out)
{
	const char *dir = pick_dir();
	const char *name = pick_name();
	if (fst_chance(&rng, 3)) {
		const char *f = pick_existing(S_IFREG);
		if (*f)
			dir = f;
	}
	if (fst_chance(&rng, 1))
		name = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		       "xxxxxxxxxxxxxxxxxxxxxx"; /* 256 bytes: ENAMETOOLONG */
	fst_fmt(out, RELMAX, "%s%s%s", dir, *dir ? "/" : "", name);
}

static void pick_any(char *out, mode_t want, unsigned existing_pct)
{
	const char *e = pick_existing(want);
	if (*e && fst_chance(&rng, existing_pct))
		fst_fmt(out, RELMAX, "%s", e);
	else
		pick_new(out);
}

/* ---- sizes and offsets ---- */

static long long pick_len(void)
{
	unsigned c = (unsigned)fst_rand_below(&rng, 100);
	if (c < 25)
		return (long long)fst_rand_below(&rng, 64);
	if (c < 45)
		return (long long)fst_rand_below(&rng, INLINE_MAX + 16);
	if (c < 55)
		return INLINE_MAX - 8 + (long long)fst_rand_below(&rng, 16);
	if (c < 80)
		return (long long)fst_rand_below(&rng, CHUNK + 200);
	return (long long)fst_rand_below(&rng, MAXIO + 1);
}

static long long pick_off(long long size)
{
	unsigned c = (unsigned)fst_rand_below(&rng, 100);
	long long off;
	if (c < 30)
		off = (long long)fst_rand_below(&rng, (uint64_t)size + 1);
	else if (c < 50)
		off = (long long)fst_rand_below(&rng, (uint64_t)size / CHUNK + 2) * CHUNK + (long long)fst_rand_below(&rng, 8192) - 4096;
	else if (c < 60)
		off = size;
	else if (c < 72)
		off = (long long)fst_rand_below(&rng, INLINE_MAX + 64);
	else if (c < 90)
		off = size + (long long)fst_rand_below(&rng, 256 * 1024);
	else
		off = size + (long long)fst_rand_below(&rng, 2 << 20);
	return off < 0 ? 0 : off;
}

static void cap_range(long long *off, long long len)
{
	if (*off + len > FILE_CAP)
		*off = (long long)fst_rand_below(&rng, (uint64_t)(FILE_CAP - len));
}

static long long pick_size(long long size)
{
	unsigned c = (unsigned)fst_rand_below(&rng, 100);
	long long s;
	if (c < 10)
		s = 0;
	else if (c < 35)
		s = (long long)fst_rand_below(&rng, (uint64_t)size + 1);
	else if (c < 50)
		s = INLINE_MAX - 4 + (long long)fst_rand_below(&rng, 9);
	else if (c < 65)
		s = (long long)(1 + fst_rand_below(&rng, 8)) * CHUNK + (long long)fst_rand_below(&rng, 5) - 2;
	else if (c < 90)
		s = size + (long long)fst_rand_below(&rng, 256 * 1024);
	else
		s = size + (long long)fst_rand_below(&rng, 2 << 20);
	if (s > FILE_CAP)
		s = (long long)fst_rand_below(&rng, FILE_CAP);
	return s;
}

static void fill(unsigned char *p, size_t n)
{
	unsigned c = (unsigned)fst_rand_below(&rng, 4);
	if (c == 0) {
		memset(p, 0, n); /* zeros written must not turn into holes that lose size */
	} else if (c == 1) {
		memset(p, (int)(1 + fst_rand_below(&rng, 255)), n);
	} else {
		size_t i = 0;
		for (; i + 8 <= n; i += 8) {
			uint64_t v = fst_rand(&rng);
			memcpy(p + i, &v, 8);
		}
		for (; i < n; i++)
			p[i] = (unsigned char)fst_rand(&rng);
	}
}

static long long ref_size(const char *rel)
{
	char p[RELMAX + 600];
	full(SIDE_B, rel, p, sizeof(p));
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : 0;
}

static void make_target(char *out)
{
	unsigned c = (unsigned)fst_rand_below(&rng, 100);
	if (c < 45)
		fst_fmt(out, RELMAX, "%s", pick_name());
	else if (c < 80)
		fst_fmt(out, RELMAX, "%s/%s", pick_name(), pick_name());
	else if (c < 95)
		fst_fmt(out, RELMAX, "no-such-dir/%s", pick_name());
	else
		fst_fmt(out, RELMAX, "%0*d", (int)(1 + fst_rand_below(&rng, 1000)), 7); /* long, dangling */
}

static void random_time(struct timespec *ts)
{
	/* Explicit times lie before 2016 so that check_mtime can tell them
	 * from times the kernel set during the test. */
	ts->tv_sec = 978307200 + (time_t)fst_rand_below(&rng, 15u * 365 * 86400);
	ts->tv_nsec = (long)fst_rand_below(&rng, 1000000000);
}

/* ---- generating an op ---- */

static enum kind pick_kind(void)
{
	unsigned total = 0;
	for (int k = 0; k < NKINDS; k++)
		total += weight[k];
	unsigned r = (unsigned)fst_rand_below(&rng, total);
	for (int k = 0; k < NKINDS; k++) {
		if (r < weight[k])
			return (enum kind)k;
		r -= weight[k];
	}
	return OP_STAT;
}

static int open_slot(void)
{
	int start = (int)fst_rand_below(&rng, NSLOTS);
	for (int i = 0; i < NSLOTS; i++)
		if (slots[(start + i) % NSLOTS].open)
			return (start + i) % NSLOTS;
	return -1;
}

static void gen(struct op *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = pick_kind();
	/* Keep the tree and its data bounded: lean on removals when big. */
	if (ents_bytes > (48ll << 20) && fst_chance(&rng, 30))
		o->kind = OP_TRUNC;
	if (o->kind == OP_MKDIR && ents_dirs > 30)
		o->kind = OP_RMDIR;
	if (o->kind == OP_SYMLINK && ents_links > 25)
		o->kind = OP_UNLINK;
	if (nents > 160 && fst_chance(&rng, 20))
		o->kind = OP_UNLINK;
	if (o->kind >= OP_HWRITE && o->kind <= OP_HUNLINK) {
		o->slot = open_slot();
		if (o->slot < 0)
			o->kind = OP_HOPEN;
	}
	switch (o->kind) {
	case OP_CREATE:
		pick_any(o->p1, S_IFREG, 30);
		o->flags = O_CREAT | O_WRONLY | (fst_chance(&rng, 50) ? O_EXCL : 0) | (fst_chance(&rng, 20) ? O_TRUNC : 0);
		o->mode = (mode_t)(fst_chance(&rng, 10) ? fst_rand_below(&rng, 01000) : 0644);
		break;
	case OP_WRITE:
		pick_any(o->p1, S_IFREG, 85);
		o->flags = (fst_chance(&rng, 50) ? O_WRONLY : O_RDWR) | (fst_chance(&rng, 15) ? O_APPEND : 0) |
			   (fst_chance(&rng, 5) ? O_TRUNC : 0) | (fst_chance(&rng, 20) ? O_CREAT : 0);
		o->mode = 0640;
		o->len = pick_len();
		o->off = pick_off(ref_size(o->p1));
		cap_range(&o->off, o->len);
		o->how = fst_chance(&rng, 10); /* 1: fsync before close */
		fill(wbuf, (size_t)o->len);
		break;
	case OP_READ:
		pick_any(o->p1, S_IFREG, 90);
		o->off = pick_off(ref_size(o->p1));
		o->len = fst_chance(&rng, 20) ? MAXIO : pick_len();
		break;
	case OP_TRUNC:
		pick_any(o->p1, S_IFREG, 90);
		o->off = fst_chance(&rng, 1) ? -1 : pick_size(ref_size(o->p1));
		break;
	case OP_RENAME: {
		unsigned c = (unsigned)fst_rand_below(&rng, 100);
		pick_any(o->p1, 0, 90);
		if (c < 12) {
			/* into its own subtree: EINVAL */
			const char *d = pick_existing(S_IFDIR);
			if (*d) {
				fst_fmt(o->p1, RELMAX, "%s", d);
				fst_fmt(o->p2, RELMAX, "%s/%s", d, pick_name());
				if (fst_chance(&rng, 50)) {
					for (int i = 0; i < nents; i++)
						if (!strncmp(ents[i].path, d, strlen(d)) &&
						    ents[i].path[strlen(d)] == '/' &&
						    S_ISDIR(ents[i].mode)) {
							fst_fmt(o->p2, RELMAX, "%s/%s", ents[i].path,
								 pick_name());
							break;
						}
				}
				break;
			}
		}
		if (c < 45)
			pick_any(o->p2, 0, 100); /* over an existing entry */
		else
			pick_new(o->p2);
		o->flags = fst_chance(&rng, 70) ? 0 : fst_chance(&rng, 50) ? RENAME_NOREPLACE : RENAME_EXCHANGE;
		break;
	}
	case OP_LINK:
		pick_any(o->p1, fst_chance(&rng, 90) ? S_IFREG : 0, 90);
		pick_new(o->p2);
		break;
	case OP_UNLINK:
		pick_any(o->p1, ents_links > 25 && fst_chance(&rng, 50) ? S_IFLNK : fst_chance(&rng, 80) ? S_IFREG : 0, 90);
		break;
	case OP_SYMLINK:
		make_target(o->p1);
		pick_new(o->p2);
		break;
	case OP_MKDIR:
		pick_new(o->p1);
		o->mode = (mode_t)(fst_chance(&rng, 10) ? fst_rand_below(&rng, 01000) : 0755);
		break;
	case OP_RMDIR:
		pick_any(o->p1, fst_chance(&rng, 80) ? S_IFDIR : 0, 90);
		if (fst_chance(&rng, 60) && *pick_empty_dir())
			fst_fmt(o->p1, RELMAX, "%s", pick_empty_dir());
		break;
	case OP_SETX:
	case OP_REMX:
	case OP_GETX: {
		static const char *xn[] = {"user.a", "user.b", "user.c",
					   "user.a-much-longer-attribute-name-0123456789"};
		pick_any(o->p1, 0, 90);
		int xi = -1;
		if (o->kind != OP_SETX && nxpaths && fst_chance(&rng, 70)) {
			xi = (int)fst_rand_below(&rng, (uint64_t)(nxpaths < 8 ? nxpaths : 8));
			fst_fmt(o->p1, RELMAX, "%s", xpaths[xi]);
		}
		if (xi >= 0 && fst_chance(&rng, 70)) {
			fst_fmt(o->xname, sizeof(o->xname), "%s", xnames[xi]);
		} else if (fst_chance(&rng, 2)) {
			memset(o->xname, 'n', 260);
			memcpy(o->xname, "user.", 5);
			o->xname[260] = 0; /* longer than XATTR_NAME_MAX: ERANGE */
		} else {
			fst_fmt(o->xname, sizeof(o->xname), "%s", xn[fst_rand_below(&rng, 4)]);
		}
		if (o->kind == OP_SETX) {
			o->xlen = (size_t)fst_rand_below(&rng, 201);
			fill(wbuf, o->xlen);
			o->flags = fst_chance(&rng, 60) ? 0 : fst_chance(&rng, 50) ? XATTR_CREATE : XATTR_REPLACE;
			o->how = fst_chance(&rng, 15); /* 1: lsetxattr */
		} else if (o->kind == OP_GETX) {
			unsigned c = (unsigned)fst_rand_below(&rng, 10);
			o->xlen = c < 2 ? 0 : c < 3 ? 1 + fst_rand_below(&rng, 8) : 4096;
		}
		break;
	}
	case OP_LISTX:
		pick_any(o->p1, 0, 90);
		break;
	case OP_CHMOD:
		pick_any(o->p1, 0, 90);
		o->mode = (mode_t)(fst_chance(&rng, 3) ? fst_rand_below(&rng, 010000) : fst_rand_below(&rng, 01000));
		break;
	case OP_UTIME:
		pick_any(o->p1, 0, 90);
		random_time(&o->ts[0]);
		random_time(&o->ts[1]);
		if (fst_chance(&rng, 20))
			o->ts[0].tv_nsec = UTIME_OMIT;
		if (fst_chance(&rng, 10))
			o->ts[1].tv_nsec = UTIME_NOW;
		else if (fst_chance(&rng, 5))
			o->ts[1].tv_nsec = UTIME_OMIT;
		o->flags = fst_chance(&rng, 20) ? AT_SYMLINK_NOFOLLOW : 0;
		break;
	case OP_FSYNC:
		pick_any(o->p1, 0, 90);
		o->how = fst_chance(&rng, 50);
		break;
	case OP_FALLOC:
	case OP_HFALLOC: {
		static const int modes[] = {0, FALLOC_FL_KEEP_SIZE,
					    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE};
		long long size;
		if (o->kind == OP_FALLOC) {
			pick_any(o->p1, S_IFREG, 90);
			size = ref_size(o->p1);
		} else {
			struct stat st;
			size = fstat(slots[o->slot].fd[SIDE_B], &st) == 0 ? st.st_size : 0;
		}
		o->flags = modes[fst_rand_below(&rng, 3)];
		o->off = pick_off(size);
		o->len = fst_chance(&rng, 2) ? 0 : 1 + (long long)fst_rand_below(&rng, fst_chance(&rng, 50) ? 8192 : 300 * 1024);
		cap_range(&o->off, o->len);
		break;
	}
	case OP_READDIR:
		pick_any(o->p1, S_IFDIR, 85);
		if (fst_chance(&rng, 15))
			o->p1[0] = 0;
		break;
	case OP_READLINK:
		pick_any(o->p1, fst_chance(&rng, 85) ? S_IFLNK : 0, 90);
		break;
	case OP_STAT:
		pick_any(o->p1, 0, 90);
		break;
	case OP_HOPEN:
		o->slot = (int)fst_rand_below(&rng, NSLOTS);
		pick_any(o->p1, S_IFREG, 85);
		o->flags = O_RDWR | (fst_chance(&rng, 20) ? O_APPEND : 0) | (fst_chance(&rng, 50) ? O_CREAT : 0) |
			   (fst_chance(&rng, 5) ? O_TRUNC : 0);
		o->mode = 0600;
		break;
	case OP_HWRITE: {
		struct stat st;
		long long size = fstat(slots[o->slot].fd[SIDE_B], &st) == 0 ? st.st_size : 0;
		o->len = pick_len();
		o->off = pick_off(size);
		cap_range(&o->off, o->len);
		o->how = fst_chance(&rng, 50); /* O_APPEND: 1 = write(), 0 = pwrite() (which appends too) */
		fill(wbuf, (size_t)o->len);
		break;
	}
	case OP_HREAD: {
		struct stat st;
		long long size = fstat(slots[o->slot].fd[SIDE_B], &st) == 0 ? st.st_size : 0;
		o->off = pick_off(size);
		o->len = fst_chance(&rng, 20) ? MAXIO : pick_len();
		break;
	}
	case OP_HTRUNC: {
		struct stat st;
		long long size = fstat(slots[o->slot].fd[SIDE_B], &st) == 0 ? st.st_size : 0;
		o->off = pick_size(size);
		break;
	}
	case OP_HFSYNC:
		o->how = fst_chance(&rng, 50);
		break;
	case OP_HCLOSE:
	case OP_HUNLINK:
	case NKINDS:
		break;
	}
	if (o->kind >= OP_HWRITE && o->kind <= OP_HUNLINK)
		fst_fmt(o->p1, RELMAX, "%s", slots[o->slot].path);
}

static void describe(const struct op *o, char *out, size_t cap)
{
	int n = fst_fmt(out, cap, "#%ld %s", opno, kind_name[o->kind]);
	char p1[80], p2[80];
	/* long names are shortened in the log; the seed replays them exactly */
	fst_fmt(p1, sizeof(p1), "%.60s%s", o->p1, strlen(o->p1) > 60 ? "..." : "");
	fst_fmt(p2, sizeof(p2), "%.60s%s", o->p2, strlen(o->p2) > 60 ? "..." : "");
	switch (o->kind) {
	case OP_CREATE:
		fst_fmt(out + n, cap - (size_t)n, " %s flags=%#o mode=%#o", p1, o->flags,
			 (unsigned)o->mode);
		break;
	case OP_WRITE:
		fst_fmt(out + n, cap - (size_t)n, " %s flags=%#o off=%lld len=%lld%s", p1, o->flags,
			 o->off, o->len, o->how ? " +fsync" : "");
		break;
	case OP_READ:
		fst_fmt(out + n, cap - (size_t)n, " %s off=%lld len=%lld", p1, o->off, o->len);
		break;
	case OP_TRUNC:
		fst_fmt(out + n, cap - (size_t)n, " %s size=%lld", p1, o->off);
		break;
	case OP_RENAME:
		fst_fmt(out + n, cap - (size_t)n, " %s -> %s flags=%s", p1, p2,
			 o->flags == RENAME_NOREPLACE  ? "NOREPLACE"
			 : o->flags == RENAME_EXCHANGE ? "EXCHANGE"
						       : "0");
		break;
	case OP_LINK:
		fst_fmt(out + n, cap - (size_t)n, " %s -> new name %s", p1, p2);
		break;
	case OP_SYMLINK:
		fst_fmt(out + n, cap - (size_t)n, " target=%s at %s", p1, p2);
		break;
	case OP_MKDIR:
	case OP_CHMOD:
		fst_fmt(out + n, cap - (size_t)n, " %s mode=%#o", p1, (unsigned)o->mode);
		break;
	case OP_SETX:
		fst_fmt(out + n, cap - (size_t)n, " %s %.40s len=%zu flags=%d%s", p1, o->xname,
			 o->xlen, o->flags, o->how ? " (l)" : "");
		break;
	case OP_REMX:
	case OP_GETX:
		fst_fmt(out + n, cap - (size_t)n, " %s %.40s size=%zu", p1, o->xname, o->xlen);
		break;
	case OP_UTIME:
		fst_fmt(out + n, cap - (size_t)n, " %s atime=%lld.%09ld mtime=%lld.%09ld flags=%#x",
			 p1, (long long)o->ts[0].tv_sec, o->ts[0].tv_nsec,
			 (long long)o->ts[1].tv_sec, o->ts[1].tv_nsec, o->flags);
		break;
	case OP_FALLOC:
	case OP_HFALLOC:
		fst_fmt(out + n, cap - (size_t)n, " %s slot=%d mode=%#x off=%lld len=%lld", p1,
			 o->kind == OP_HFALLOC ? o->slot : -1, o->flags, o->off, o->len);
		break;
	case OP_HOPEN:
		fst_fmt(out + n, cap - (size_t)n, " slot=%d %s flags=%#o", o->slot, p1, o->flags);
		break;
	case OP_HWRITE:
	case OP_HREAD:
		fst_fmt(out + n, cap - (size_t)n, " slot=%d (%s) off=%lld len=%lld%s", o->slot, p1,
			 o->off, o->len, o->kind == OP_HWRITE && o->how ? " write()" : "");
		break;
	case OP_HTRUNC:
		fst_fmt(out + n, cap - (size_t)n, " slot=%d (%s) size=%lld", o->slot, p1, o->off);
		break;
	case OP_HFSYNC:
	case OP_HCLOSE:
	case OP_HUNLINK:
		fst_fmt(out + n, cap - (size_t)n, " slot=%d (%s)", o->slot, p1);
		break;
	default:
		fst_fmt(out + n, cap - (size_t)n, " %s", p1);
		break;
	}
}

/* ---- executing an op on one side ---- */

#define STEP(st, expr)                                                                        \
	do {                                                                                  \
		errno = 0;                                                                    \
		long long rv_ = (long long)(expr);                                            \
		if (rv_ < 0) {                                                                \
			r->ret = rv_;                                                         \
			r->err = errno;                                                       \
			r->stage = (st);                                                      \
			goto out;                                                             \
		}                                                                             \
		r->ret = rv_;                                                                 \
	} while (0)

static int readdir_into(const char *path, unsigned char *buf, size_t cap, size_t *len)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	char *lines[4096];
	int n = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d)) && n < 4096) {
		char l[300];
		/* d_type DT_UNKNOWN is allowed; print it as '?' on both sides */
		fst_fmt(l, sizeof(l), "%s %c", de->d_name,
			 de->d_type == DT_UNKNOWN ? '?' : (char)('0' + de->d_type));
		lines[n++] = strdup(l);
	}
	int saved = errno;
	closedir(d);
	qsort(lines, (size_t)n, sizeof(char *), cmp_str);
	size_t used = 0;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(lines[i]);
		if (used + l + 1 < cap) {
			memcpy(buf + used, lines[i], l);
			buf[used + l] = '\n';
			used += l + 1;
		}
		free(lines[i]);
	}
	*len = used;
	errno = saved;
	return saved ? -1 : n;
}

static void exec_side(int s, const struct op *o, struct res *r)
{
	char p1[RELMAX + 600], p2[RELMAX + 600];
	full(s, o->p1, p1, sizeof(p1));
	full(s, o->p2, p2, sizeof(p2));
	memset(r, 0, sizeof(*r));
	int fd = -1;
	struct slot *sl = &slots[o->slot];

	switch (o->kind) {
	case OP_CREATE:
		STEP(1, fd = open(p1, o->flags, o->mode));
		r->ret = 0; /* descriptor numbers differ between the sides */
		break;
	case OP_WRITE:
		STEP(1, fd = open(p1, o->flags, o->mode));
		if (o->flags & O_APPEND)
			STEP(2, write(fd, wbuf, (size_t)o->len));
		else
			STEP(2, pwrite(fd, wbuf, (size_t)o->len, o->off));
		if (o->how)
			STEP(3, fsync(fd));
		break;
	case OP_READ:
		STEP(1, fd = open(p1, O_RDONLY));
		STEP(2, pread(fd, rbuf[s], (size_t)o->len, o->off));
		r->dlen = (size_t)r->ret;
		break;
	case OP_TRUNC:
		STEP(1, truncate(p1, o->off));
		break;
	case OP_RENAME:
		STEP(1, renameat2(AT_FDCWD, p1, AT_FDCWD, p2, (unsigned)o->flags));
		break;
	case OP_LINK:
		STEP(1, link(p1, p2));
		break;
	case OP_UNLINK:
		STEP(1, unlink(p1));
		break;
	case OP_SYMLINK:
		STEP(1, symlink(o->p1, p2));
		break;
	case OP_MKDIR:
		STEP(1, mkdir(p1, o->mode));
		break;
	case OP_RMDIR:
		STEP(1, rmdir(p1));
		break;
	case OP_SETX:
		if (o->how)
			STEP(1, lsetxattr(p1, o->xname, wbuf, o->xlen, o->flags));
		else
			STEP(1, setxattr(p1, o->xname, wbuf, o->xlen, o->flags));
		break;
	case OP_REMX:
		STEP(1, removexattr(p1, o->xname));
		break;
	case OP_GETX:
		STEP(1, getxattr(p1, o->xname, o->xlen ? rbuf[s] : NULL, o->xlen));
		r->dlen = o->xlen ? (size_t)r->ret : 0;
		break;
	case OP_LISTX: {
		char buf[8192];
		STEP(1, listxattr(p1, buf, sizeof(buf)));
		/* only user.* names, sorted: other namespaces are the backing fs's business */
		char *v[256];
		int n = 0;
		for (char *q = buf; q < buf + r->ret && n < 256; q += strlen(q) + 1)
			if (!strncmp(q, "user.", 5))
				v[n++] = q;
		qsort(v, (size_t)n, sizeof(*v), cmp_str);
		size_t used = 0;
		for (int i = 0; i < n; i++) {
			size_t l = strlen(v[i]) + 1;
			memcpy(rbuf[s] + used, v[i], l);
			used += l;
		}
		r->dlen = used;
		r->ret = n;
		break;
	}
	case OP_CHMOD:
		STEP(1, chmod(p1, o->mode));
		break;
	case OP_UTIME:
		STEP(1, utimensat(AT_FDCWD, p1, o->ts, o->flags));
		break;
	case OP_FSYNC:
		STEP(1, fd = open(p1, O_RDONLY));
		STEP(2, o->how ? fdatasync(fd) : fsync(fd));
		break;
	case OP_FALLOC:
		STEP(1, fd = open(p1, O_RDWR));
		STEP(2, fallocate(fd, o->flags, o->off, o->len));
		break;
	case OP_READDIR: {
		STEP(1, readdir_into(p1, rbuf[s], MAXIO, &r->dlen));
		break;
	}
	case OP_READLINK:
		STEP(1, readlink(p1, (char *)rbuf[s], 8192));
		r->dlen = (size_t)r->ret;
		break;
	case OP_STAT: {
		struct stat st;
		STEP(1, stat(p1, &st));
		break;
	}
	case OP_HOPEN:
		if (sl->open) {
			/* closing is part of this op: both sides close */
			int c = close(sl->fd[s]);
			sl->fd[s] = -1;
			if (c != 0) {
				r->ret = -1;
				r->err = errno;
				r->stage = 9;
			}
		}
		errno = 0;
		sl->fd[s] = open(p1, o->flags, o->mode);
		if (sl->fd[s] < 0 && !r->stage) {
			r->ret = -1;
			r->err = errno;
			r->stage = 1;
		}
		break;
	case OP_HWRITE:
		if ((sl->flags & O_APPEND) && o->how)
			STEP(1, write(sl->fd[s], wbuf, (size_t)o->len));
		else
			STEP(1, pwrite(sl->fd[s], wbuf, (size_t)o->len, o->off));
		break;
	case OP_HREAD:
		STEP(1, pread(sl->fd[s], rbuf[s], (size_t)o->len, o->off));
		r->dlen = (size_t)r->ret;
		break;
	case OP_HTRUNC:
		STEP(1, ftruncate(sl->fd[s], o->off));
		break;
	case OP_HFSYNC:
		STEP(1, o->how ? fdatasync(sl->fd[s]) : fsync(sl->fd[s]));
		break;
	case OP_HFALLOC:
		STEP(1, fallocate(sl->fd[s], o->flags, o->off, o->len));
		break;
	case OP_HCLOSE:
		STEP(1, close(sl->fd[s]));
		break;
	case OP_HUNLINK:
		STEP(1, unlink(p1));
		break;
	case NKINDS:
		break;
	}
out:
	if (fd >= 0) {
		errno = 0;
		if (close(fd) != 0 && !r->stage) {
			r->ret = -1;
			r->err = errno;
			r->stage = 8;
		}
	}
}

/* ---- per-op checks ---- */

static bool is_fuzzy(ino_t ino)
{
	for (int i = 0; i < nfuzzy; i++)
		if (fuzzy[i] == ino)
			return true;
	return false;
}

static void set_fuzzy(ino_t ino, bool on)
{
	for (int i = 0; i < nfuzzy; i++)
		if (fuzzy[i] == ino) {
			if (!on)
				fuzzy[i] = fuzzy[--nfuzzy];
			return;
		}
	if (on && nfuzzy < MAXFUZZY)
		fuzzy[nfuzzy++] = ino;
}

static void compare_stat(const char *what, int ra, int ea, const struct stat *a, int rb, int eb,
			 const struct stat *b)
{
	if (ra != rb || (ra && ea != eb))
		fail("%s: lsmfs %d (%s), ref %d (%s)", what, ra, ra ? strerror(ea) : "ok", rb,
		     rb ? strerror(eb) : "ok");
	if (ra)
		return;
	if ((a->st_mode & S_IFMT) != (b->st_mode & S_IFMT))
		fail("%s: type %#o vs ref %#o", what, a->st_mode & S_IFMT, b->st_mode & S_IFMT);
	if (a->st_mode != b->st_mode)
		fail("%s: mode %#o vs ref %#o", what, a->st_mode, b->st_mode);
	if (a->st_nlink != b->st_nlink)
		fail("%s: nlink %lu vs ref %lu", what, (unsigned long)a->st_nlink,
		     (unsigned long)b->st_nlink);
	if (!S_ISDIR(a->st_mode) && a->st_size != b->st_size)
		fail("%s: size %lld vs ref %lld", what, (long long)a->st_size, (long long)b->st_size);
}

static void compare_path(const char *rel)
{
	char a[RELMAX + 600], b[RELMAX + 600];
	full(SIDE_A, rel, a, sizeof(a));
	full(SIDE_B, rel, b, sizeof(b));
	struct stat sa, sb;
	errno = 0;
	int ra = lstat(a, &sa);
	int ea = errno;
	errno = 0;
	int rb = lstat(b, &sb);
	int eb = errno;
	char what[RELMAX + 64];
	fst_fmt(what, sizeof(what), "lstat after the op of \"%.200s\"", rel);
	compare_stat(what, ra, ea, &sa, rb, eb, &sb);
}

static void compare_fd(int slot)
{
	struct stat sa, sb;
	errno = 0;
	int ra = fstat(slots[slot].fd[SIDE_A], &sa);
	int ea = errno;
	errno = 0;
	int rb = fstat(slots[slot].fd[SIDE_B], &sb);
	int eb = errno;
	char what[64];
	fst_fmt(what, sizeof(what), "fstat of slot %d after the op", slot);
	compare_stat(what, ra, ea, &sa, rb, eb, &sb);
}

/* Track which reference inodes have an mtime the sides may disagree on. */
static void track_mtime(const struct op *o, const struct res *r, long long size_before)
{
	if (r->stage)
		return;
	struct stat st;
	char p[RELMAX + 600];
	int rc;
	if (o->kind >= OP_HWRITE && o->kind <= OP_HUNLINK) {
		rc = fstat(slots[o->slot].fd[SIDE_B], &st);
	} else {
		full(SIDE_B, o->p1, p, sizeof(p));
		rc = o->kind == OP_UTIME && (o->flags & AT_SYMLINK_NOFOLLOW) ? lstat(p, &st)
									      : stat(p, &st);
	}
	if (rc != 0)
		return;
	switch (o->kind) {
	case OP_UTIME:
		if (o->ts[1].tv_nsec != UTIME_OMIT)
			set_fuzzy(st.st_ino, false);
		break;
	case OP_FALLOC:
	case OP_HFALLOC:
		set_fuzzy(st.st_ino, true);
		break;
	case OP_TRUNC:
	case OP_HTRUNC:
		set_fuzzy(st.st_ino, o->off == size_before);
		break;
	case OP_WRITE:
	case OP_HWRITE:
		if (r->ret > 0)
			set_fuzzy(st.st_ino, false);
		else if (o->kind == OP_WRITE && (o->flags & O_TRUNC) && size_before == 0)
			set_fuzzy(st.st_ino, true);
		break;
	case OP_CREATE:
	case OP_HOPEN:
		/* O_TRUNC of an empty file: ext4 sets mtime, FUSE leaves it to
		 * the filesystem */
		if ((o->flags & O_TRUNC) && size_before == 0)
			set_fuzzy(st.st_ino, true);
		break;
	default:
		break;
	}
}

/* Run o on both sides and compare; true when the namespace of the
 * reference side may have changed (then the entry list is refreshed). */
static bool run_op(struct op *o)
{
	char desc[RELMAX * 2 + 256];
	describe(o, desc, sizeof(desc));
	fst_fmt(oplog[opno % LOGN], sizeof(oplog[0]), "%s", desc);

	long long size_before = -1;
	if (o->kind >= OP_HWRITE && o->kind <= OP_HUNLINK) {
		struct stat st;
		if (fstat(slots[o->slot].fd[SIDE_B], &st) == 0)
			size_before = st.st_size;
	} else {
		char p[RELMAX + 600];
		full(SIDE_B, o->p1, p, sizeof(p));
		struct stat st;
		if (stat(p, &st) == 0)
			size_before = st.st_size;
	}

	struct res r[NSIDES];
	for (int s = 0; s < NSIDES; s++)
		exec_side(s, o, &r[s]);

	if (r[0].stage != r[1].stage || r[0].ret != r[1].ret ||
	    (r[0].stage && r[0].err != r[1].err)) {
		fail("%s\n  lsmfs: ret %lld errno %d (%s) at step %d\n  ref:   ret %lld errno %d "
		     "(%s) at step %d",
		     desc, r[0].ret, r[0].err, r[0].stage ? strerror(r[0].err) : "-", r[0].stage,
		     r[1].ret, r[1].err, r[1].stage ? strerror(r[1].err) : "-", r[1].stage);
	}
	if (r[0].dlen != r[1].dlen || memcmp(rbuf[0], rbuf[1], r[0].dlen) != 0) {
		size_t i = 0;
		while (i < r[0].dlen && i < r[1].dlen && rbuf[0][i] == rbuf[1][i])
			i++;
		fail("%s\n  returned data differ: lsmfs %zu bytes, ref %zu bytes, first difference "
		     "at byte %zu (lsmfs %#x, ref %#x)",
		     desc, r[0].dlen, r[1].dlen, i, i < r[0].dlen ? rbuf[0][i] : 0,
		     i < r[1].dlen ? rbuf[1][i] : 0);
	}
	if (r[0].stage)
		count_err[o->kind]++;
	else
		count_ok[o->kind]++;

	/* slot bookkeeping: both sides agree here */
	struct slot *sl = &slots[o->slot];
	if (o->kind == OP_HOPEN) {
		sl->open = r[0].stage == 0;
		if (sl->open) {
			sl->flags = o->flags;
			fst_fmt(sl->path, sizeof(sl->path), "%s", o->p1);
		} else {
			for (int s = 0; s < NSIDES; s++)
				if (sl->fd[s] >= 0)
					close(sl->fd[s]);
		}
	} else if (o->kind == OP_HCLOSE) {
		sl->open = false;
	}

	track_mtime(o, &r[1], size_before);
	if (o->kind == OP_SETX && !r[1].stage)
	{
		fst_fmt(xpaths[nxpaths % 8], RELMAX, "%s", o->p1);
		fst_fmt(xnames[nxpaths++ % 8], sizeof(xnames[0]), "%s", o->xname);
	}

	if (o->kind != OP_SYMLINK)
		compare_path(o->p1);
	if (o->p2[0])
		compare_path(o->p2);
	if (o->kind >= OP_HOPEN && o->kind != OP_HCLOSE && sl->open)
		compare_fd(o->slot);
	switch (o->kind) {
	case OP_CREATE: case OP_WRITE: case OP_RENAME: case OP_LINK: case OP_UNLINK:
	case OP_SYMLINK: case OP_MKDIR: case OP_RMDIR: case OP_HOPEN: case OP_HUNLINK:
	case OP_TRUNC: case OP_FALLOC: case OP_HWRITE: case OP_HTRUNC: case OP_HFALLOC:
		return r[1].stage == 0; /* sizes count towards the data bound */
	default:
		return false;
	}
}

/* ---- whole-tree comparison ---- */

struct inopair {
	ino_t b, a;
};
static struct inopair *inomap;
static size_t ninomap, capinomap;
static int problems;
static const char *compare_why;

static void tproblem(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tproblem(const char *rel, const char *fmt, ...)
{
	if (++problems > 30)
		return;
	fprintf(stderr, "test_diff: tree compare (%s, op #%ld, seed %lu): %.300s: ", compare_why,
		opno, seed, *rel ? rel : ".");
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void check_ino(const char *rel, ino_t a, ino_t b)
{
	for (size_t i = 0; i < ninomap; i++) {
		if (inomap[i].b == b && inomap[i].a != a) {
			tproblem(rel, "hard links differ: ref inode is linked elsewhere, lsmfs inode is "
				      "not the same as at that other name");
			return;
		}
		if (inomap[i].a == a && inomap[i].b != b) {
			tproblem(rel, "hard links differ: lsmfs inode shared with a name that ref "
				      "does not link to it");
			return;
		}
		if (inomap[i].a == a && inomap[i].b == b)
			return;
	}
	if (ninomap == capinomap) {
		capinomap = capinomap ? capinomap * 2 : 256;
		inomap = realloc(inomap, capinomap * sizeof(*inomap));
		if (!inomap)
			abort();
	}
	inomap[ninomap++] = (struct inopair){b, a};
}

/*
 * mtime: a reference time before the test started was set explicitly
 * (utimensat with a time in 2001..2015), so lsmfs must hold exactly that
 * (seconds and nanoseconds); a later reference time was set by the kernel,
 * so lsmfs must also show a time from during the test.  Inodes where the
 * sides may legitimately disagree (fuzzy) are skipped.
 */
static void check_mtime(const char *rel, const struct stat *a, const struct stat *b)
{
	if (is_fuzzy(b->st_ino))
		return;
	if (b->st_mtim.tv_sec < start_time.tv_sec - 1) {
		if (a->st_mtim.tv_sec != b->st_mtim.tv_sec || a->st_mtim.tv_nsec != b->st_mtim.tv_nsec)
			tproblem(rel, "mtime %lld.%09ld, ref %lld.%09ld (set explicitly)",
				 (long long)a->st_mtim.tv_sec, a->st_mtim.tv_nsec,
				 (long long)b->st_mtim.tv_sec, b->st_mtim.tv_nsec);
	} else if (a->st_mtim.tv_sec < start_time.tv_sec - 1) {
		tproblem(rel, "mtime %lld.%09ld is from before the test, ref %lld.%09ld (the ref "
			      "side updated it)",
			 (long long)a->st_mtim.tv_sec, a->st_mtim.tv_nsec,
			 (long long)b->st_mtim.tv_sec, b->st_mtim.tv_nsec);
	}
}

static void compare_xattrs(const char *rel, const char *pa, const char *pb)
{
	char la[8192], lb[8192];
	ssize_t na = llistxattr(pa, la, sizeof(la));
	ssize_t nb = llistxattr(pb, lb, sizeof(lb));
	if (na < 0 || nb < 0) {
		if ((na < 0) != (nb < 0))
			tproblem(rel, "llistxattr: lsmfs %zd, ref %zd (%s)", na, nb, strerror(errno));
		return;
	}
	char *va[256], *vb[256];
	int ca = 0, cb = 0;
	for (char *q = la; q < la + na && ca < 256; q += strlen(q) + 1)
		if (!strncmp(q, "user.", 5))
			va[ca++] = q;
	for (char *q = lb; q < lb + nb && cb < 256; q += strlen(q) + 1)
		if (!strncmp(q, "user.", 5))
			vb[cb++] = q;
	qsort(va, (size_t)ca, sizeof(*va), cmp_str);
	qsort(vb, (size_t)cb, sizeof(*vb), cmp_str);
	if (ca != cb) {
		tproblem(rel, "%d user xattrs, ref %d", ca, cb);
		return;
	}
	for (int i = 0; i < ca; i++) {
		if (strcmp(va[i], vb[i])) {
			tproblem(rel, "xattr name %s, ref %s", va[i], vb[i]);
			return;
		}
		char xa[4096], xb[4096];
		ssize_t ga = lgetxattr(pa, va[i], xa, sizeof(xa));
		ssize_t gb = lgetxattr(pb, vb[i], xb, sizeof(xb));
		if (ga != gb || (ga > 0 && memcmp(xa, xb, (size_t)ga)))
			tproblem(rel, "xattr %s: lsmfs %zd bytes, ref %zd bytes, or contents differ",
				 va[i], ga, gb);
	}
}

static void compare_content(const char *rel, const char *pa, const char *pb, off_t size)
{
	int fa = open(pa, O_RDONLY | O_NOFOLLOW);
	int fb = open(pb, O_RDONLY | O_NOFOLLOW);
	if (fa < 0 || fb < 0) {
		tproblem(rel, "open for compare: lsmfs %d, ref %d (%s)", fa, fb, strerror(errno));
		goto out;
	}
	off_t off = 0;
	for (;;) {
		ssize_t na = pread(fa, rbuf[0], MAXIO, off);
		ssize_t nb = pread(fb, rbuf[1], MAXIO, off);
		if (na != nb) {
			tproblem(rel, "read at %lld: lsmfs %zd (%s), ref %zd", (long long)off, na,
				 na < 0 ? strerror(errno) : "", nb);
			goto out;
		}
		if (na <= 0)
			break;
		if (memcmp(rbuf[0], rbuf[1], (size_t)na)) {
			ssize_t i = 0;
			while (rbuf[0][i] == rbuf[1][i])
				i++;
			ssize_t j = i;
			while (j < na && rbuf[0][j] != rbuf[1][j])
				j++;
			tproblem(rel, "contents differ from byte %lld (lsmfs %#x, ref %#x; run of "
				      "%zd bytes; file size %lld; chunk %lld)",
				 (long long)(off + i), rbuf[0][i], rbuf[1][i], j - i, (long long)size,
				 (long long)((off + i) / CHUNK));
			goto out;
		}
		off += na;
	}
	if (off != size)
		tproblem(rel, "read %lld bytes, st_size %lld", (long long)off, (long long)size);
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
}

static void compare_dir(const char *rel, int depth)
{
	char pa[RELMAX + 600], pb[RELMAX + 600];
	full(SIDE_A, rel, pa, sizeof(pa));
	full(SIDE_B, rel, pb, sizeof(pb));
	int na, nb;
	char **va = list_dir(pa, &na);
	char **vb = list_dir(pb, &nb);
	if (!va || !vb) {
		tproblem(rel, "opendir: lsmfs %s, ref %s", va ? "ok" : "fails", vb ? "ok" : "fails");
		goto out;
	}
	int i = 0, j = 0;
	while (i < na || j < nb) {
		int c = i >= na ? 1 : j >= nb ? -1 : strcmp(va[i], vb[j]);
		char crel[RELMAX + 300];
		if (c < 0) {
			fst_fmt(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "", va[i]);
			tproblem(crel, "exists on lsmfs only");
			i++;
			continue;
		}
		if (c > 0) {
			fst_fmt(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "", vb[j]);
			tproblem(crel, "missing on lsmfs");
			j++;
			continue;
		}
		fst_fmt(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "", va[i]);
		i++;
		j++;
		char ca[RELMAX + 600], cb[RELMAX + 600];
		full(SIDE_A, crel, ca, sizeof(ca));
		full(SIDE_B, crel, cb, sizeof(cb));
		struct stat sa, sb;
		if (lstat(ca, &sa) != 0) {
			tproblem(crel, "listed but lstat fails on lsmfs: %s", strerror(errno));
			continue;
		}
		if (lstat(cb, &sb) != 0) {
			tproblem(crel, "listed but lstat fails on ref: %s", strerror(errno));
			continue;
		}
		if (sa.st_mode != sb.st_mode) {
			tproblem(crel, "mode %#o, ref %#o", sa.st_mode, sb.st_mode);
			if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT))
				continue;
		}
		if (sa.st_uid != sb.st_uid || sa.st_gid != sb.st_gid)
			tproblem(crel, "owner %u:%u, ref %u:%u", sa.st_uid, sa.st_gid, sb.st_uid,
				 sb.st_gid);
		if (sa.st_nlink != sb.st_nlink)
			tproblem(crel, "nlink %lu, ref %lu", (unsigned long)sa.st_nlink,
				 (unsigned long)sb.st_nlink);
		if (!S_ISDIR(sa.st_mode) && sa.st_size != sb.st_size)
			tproblem(crel, "size %lld, ref %lld", (long long)sa.st_size,
				 (long long)sb.st_size);
		check_mtime(crel, &sa, &sb);
		if (!S_ISDIR(sa.st_mode))
			check_ino(crel, sa.st_ino, sb.st_ino);
		compare_xattrs(crel, ca, cb);
		if (S_ISLNK(sa.st_mode)) {
			char ta[8192], tb[8192];
			ssize_t la = readlink(ca, ta, sizeof(ta));
			ssize_t lb = readlink(cb, tb, sizeof(tb));
			if (la != lb || (la > 0 && memcmp(ta, tb, (size_t)la)))
				tproblem(crel, "symlink target \"%.*s\", ref \"%.*s\"",
					 (int)(la > 0 ? la : 0), ta, (int)(lb > 0 ? lb : 0), tb);
		} else if (S_ISREG(sa.st_mode)) {
			compare_content(crel, ca, cb, sb.st_size);
		} else if (S_ISDIR(sa.st_mode) && depth < 16 && strlen(crel) < RELMAX - 300) {
			compare_dir(crel, depth + 1);
		}
	}
out:
	if (va)
		free_list(va, na);
	if (vb)
		free_list(vb, nb);
}

/* Compare the whole trees; returns the number of problems (printed). */
static int compare_trees(const char *why)
{
	compare_why = why;
	problems = 0;
	ninomap = 0;
	struct stat sa, sb;
	if (lstat(base[SIDE_A], &sa) != 0 || lstat(base[SIDE_B], &sb) != 0) {
		tproblem("", "lstat of the top directory fails: %s", strerror(errno));
		return problems;
	}
	if (sa.st_nlink != sb.st_nlink)
		tproblem("", "nlink %lu, ref %lu", (unsigned long)sa.st_nlink,
			 (unsigned long)sb.st_nlink);
	if (sa.st_mode != sb.st_mode)
		tproblem("", "mode %#o, ref %#o", sa.st_mode, sb.st_mode);
	check_mtime("", &sa, &sb);
	compare_xattrs("", base[SIDE_A], base[SIDE_B]);
	compare_dir("", 0);
	if (problems > 30)
		fprintf(stderr, "test_diff: ... %d problems in all\n", problems);
	return problems;
}

/* ---- driver ---- */

static void close_slots(void)
{
	for (int i = 0; i < NSLOTS; i++) {
		if (!slots[i].open)
			continue;
		int ra = close(slots[i].fd[SIDE_A]);
		int ea = errno;
		int rb = close(slots[i].fd[SIDE_B]);
		slots[i].open = false;
		if (ra != rb)
			fail("close of slot %d (%s) before a remount: lsmfs %d (%s), ref %d", i,
			     slots[i].path, ra, ra ? strerror(ea) : "ok", rb);
	}
}

static void checkpoint(const char *why)
{
	if (compare_trees(why))
		fail("the trees differ (%s)", why);
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0)
		return; /* not root or no procfs: the remounts still drop caches */
	(void)!write(fd, "3", 1); /* best effort */
	close(fd);
}

/* Mount options, one per mount in turn: attributes and entries not cached
 * by the kernel (every lstat reaches the daemon), write-through instead of
 * the writeback cache with every listing kept by the kernel (dircache_age=0:
 * fs/daemon/dircache.c), the defaults, all of it with a tiny block cache and
 * almost no inodes kept in memory (every inode the kernel holds but no
 * request uses is let go: fs/engine/core/kref.c), and chunk writes through the backing
 * page cache instead of O_DIRECT, and every listing kept with the writeback
 * cache on.  20,000 ops mount 8 times: the last mount, the one
 * readdir_resume() runs under, keeps listings.
 * LSMFS_DIFF_OPTS fixes one string instead. */
static const char *const mount_opts[] = {
	"attr_timeout=0,entry_timeout=0",
	"no_writeback,dircache_age=0",
	"",
	"no_writeback,attr_timeout=0,entry_timeout=0,cache_mib=1,inode_cache=4",
	"no_direct",
	"dircache_age=0",
};
static int nmounts;

static const char *next_opts(void)
{
	const char *o = getenv("LSMFS_DIFF_OPTS");
	if (!o)
		o = mount_opts[nmounts % (sizeof(mount_opts) / sizeof(mount_opts[0]))];
	nmounts++;
	fprintf(stderr, "test_diff: mounting with -o \"%s\"\n", o);
	return o;
}

static void remount(void)
{
	close_slots();
	checkpoint("before remount");
	if (selftest)
		return;
	if (fst_umount(&fs) != 0)
		fail("unmount failed (daemon exit status above)");
	if (fst_mount(&fs, next_opts()) != 0)
		fail("remount failed");
	checkpoint("after remount");
}

/*
 * readdir resumed across changes: in a directory of 600 names, read with
 * getdents64 and a 1 KiB buffer (so the kernel asks the daemon again at
 * each offset) and create, unlink and rename other names between the
 * calls.  On both sides, a name present throughout and never touched must
 * be listed exactly once, no name twice, and nothing that never existed.
 * (Both sides must pass: the reference side checks the check.)
 */
struct dent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void readdir_resume(void)
{
	enum { N = 600, MAXN = 4000 };
	static unsigned char state[MAXN]; /* 0 absent, 1 present untouched, 2 touched */
	for (int side = 0; side < NSIDES; side++) {
		char dir[600], p[800], q[800];
		fst_fmt(dir, sizeof(dir), "%s/readdir-resume", base[side]);
		if (mkdir(dir, 0755) != 0)
			fail("mkdir %s: %s", dir, strerror(errno));
		memset(state, 0, sizeof(state));
		uint64_t saved = rng;
		rng = seed ^ 0x5eed;
		for (int i = 0; i < N; i++) {
			fst_fmt(p, sizeof(p), "%s/n%d", dir, i);
			int fd = open(p, O_CREAT | O_WRONLY, 0644);
			if (fd < 0)
				fail("create %s: %s", p, strerror(errno));
			close(fd);
			state[i] = 1;
		}
		int next = N;
		for (int round = 0; round < 10; round++) {
			int dfd = open(dir, O_RDONLY | O_DIRECTORY);
			if (dfd < 0)
				fail("open %s: %s", dir, strerror(errno));
			static int seen[MAXN * 2];
			int nseen = 0;
			char buf[1024];
			for (;;) {
				long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
				if (n < 0)
					fail("getdents64 %s: %s", dir, strerror(errno));
				if (n == 0)
					break;
				for (long o = 0; o < n;) {
					struct dent64 *d = (struct dent64 *)(buf + o);
					int k;
					if (d->name[0] == 'n' && sscanf(d->name + 1, "%d", &k) == 1 &&
					    k >= 0 && k < MAXN && nseen < MAXN * 2)
						seen[nseen++] = k;
					else if (strcmp(d->name, ".") && strcmp(d->name, ".."))
						fail("%s readdir: unexpected name \"%s\"", side_label(side),
						     d->name);
					o += d->reclen;
				}
				/* change other names between the calls */
				for (int c = 0; c < 3 && next < MAXN - 2; c++) {
					int k = (int)fst_rand_below(&rng, (uint64_t)next);
					fst_fmt(p, sizeof(p), "%s/n%d", dir, k);
					if (state[k] && fst_chance(&rng, 50)) {
						if (unlink(p) != 0)
							fail("unlink %s: %s", p, strerror(errno));
						state[k] = 0;
					} else if (state[k]) {
						fst_fmt(q, sizeof(q), "%s/n%d", dir, next);
						if (rename(p, q) != 0)
							fail("rename %s: %s", p, strerror(errno));
						state[k] = 0;
						state[next++] = 2;
					} else {
						fst_fmt(q, sizeof(q), "%s/n%d", dir, next);
						int fd = open(q, O_CREAT | O_WRONLY, 0644);
						if (fd < 0)
							fail("create %s: %s", q, strerror(errno));
						close(fd);
						state[next++] = 2;
					}
				}
			}
			close(dfd);
			qsort(seen, (size_t)nseen, sizeof(int), cmp_int);
			for (int i = 0; i < nseen; i++) {
				if (i && seen[i] == seen[i - 1])
					fail("%s readdir (resumed across changes, pass %d) lists n%d twice",
					     side_label(side), round, seen[i]);
				if (seen[i] >= next)
					fail("%s readdir lists n%d, a name never made", side_label(side),
					     seen[i]);
			}
			for (int k = 0; k < next; k++) {
				if (state[k] != 1)
					continue;
				if (!bsearch(&k, seen, (size_t)nseen, sizeof(int), cmp_int))
					fail("%s readdir (resumed across changes, pass %d) misses n%d, "
					     "which stayed in place",
					     side_label(side), round, k);
			}
			for (int k = 0; k < next; k++)
				if (state[k] == 2)
					state[k] = 1; /* untouched from the next pass on */
		}
		rng = saved;
		/* leave the directory out of the compared trees */
		for (int k = 0; k < next; k++) {
			fst_fmt(p, sizeof(p), "%s/n%d", dir, k);
			if (state[k] && unlink(p) != 0)
				fail("unlink %s: %s", p, strerror(errno));
		}
		if (rmdir(dir) != 0)
			fail("rmdir %s: %s", dir, strerror(errno));
	}
	fprintf(stderr, "test_diff: readdir resumed across changes: ok on both sides\n");
}

/* Flip one byte in the middle of the largest reference-listed file, on
 * side A only (for FSTEST_SELFTEST_CORRUPT). */
static void corrupt_side_a(void)
{
	int best = -1;
	for (int i = 0; i < nents; i++)
		if (S_ISREG(ents[i].mode) && (best < 0 || ents[i].size > ents[best].size))
			best = i;
	char p[RELMAX + 600];
	if (best < 0 || ents[best].size == 0) {
		full(SIDE_A, "extra-on-side-A", p, sizeof(p));
		fprintf(stderr, "test_diff: no data to corrupt; making %s\n", p);
		(void)!mknod(p, S_IFREG | 0644, 0); /* the checkpoint reports it either way */
		return;
	}
	full(SIDE_A, ents[best].path, p, sizeof(p));
	int fd = open(p, O_RDWR);
	unsigned char c;
	off_t off = ents[best].size / 2;
	if (fd < 0 || pread(fd, &c, 1, off) != 1)
		return;
	c ^= 0x5a;
	if (pwrite(fd, &c, 1, off) != 1)
		fprintf(stderr, "test_diff: corrupt %s: %s\n", p, strerror(errno));
	close(fd);
	fprintf(stderr, "test_diff: corrupted byte %lld of %s on side A\n", (long long)off,
		ents[best].path);
}

static void make_names(void)
{
	int i = 0;
	for (; i < 44; i++)
		fst_fmt(names[i], sizeof(names[i]), "%c%d", "abcdefgh"[i % 8], i / 8);
	fst_fmt(names[i++], sizeof(names[i]), "with space");
	fst_fmt(names[i++], sizeof(names[i]), "\xc3\xa9t\xc3\xa9-utf8");
	fst_fmt(names[i++], sizeof(names[i]), ".hidden");
	fst_fmt(names[i++], sizeof(names[i]), "%0100d", 0);
	memset(names[i], 'L', 255); /* the longest name allowed */
	names[i++][255] = 0;
	memset(names[i], 'M', 254);
	names[i++][254] = 0;
}

int main(void)
{
	selftest = getenv("FSTEST_SELFTEST") && !strcmp(getenv("FSTEST_SELFTEST"), "1");
	if (!selftest)
		fst_require_fuse();
	setvbuf(stderr, NULL, _IOLBF, 0);
	seed = fst_seed("test_diff");
	rng = seed;
	umask(0);

	long nops = fst_soak() ? 50000 : 20000;
	if (getenv("LSMFS_DIFF_OPS"))
		nops = strtol(getenv("LSMFS_DIFF_OPS"), NULL, 0);

	wbuf = malloc(MAXIO + 8192);
	rbuf[0] = malloc(MAXIO + 8192);
	rbuf[1] = malloc(MAXIO + 8192);
	if (!wbuf || !rbuf[0] || !rbuf[1])
		return 1;
	make_names();

	if (fst_init(&fs, "diff", 3) != 0)
		return 1;
	char refroot[400];
	fst_fmt(refroot, sizeof(refroot), "%s/ref", fs.root);
	if (mkdir(refroot, 0755) != 0)
		return 1;
	fst_fmt(base[SIDE_B], sizeof(base[SIDE_B]), "%s/t", refroot);
	if (selftest) {
		/* both sides plain: side A at root/mnt/t, no daemon */
		fst_fmt(base[SIDE_A], sizeof(base[SIDE_A]), "%s/t", fs.mnt);
	} else {
		const char *mk[] = {"--chunk-size", "65536", "--inline-max", "4096", NULL};
		if (fst_mkfs(&fs, mk) != 0 || fst_mount(&fs, next_opts()) != 0) {
			fst_cleanup(&fs);
			return 1;
		}
		fst_fmt(base[SIDE_A], sizeof(base[SIDE_A]), "%s/t", fs.mnt);
	}
	clock_gettime(CLOCK_REALTIME, &start_time);
	if (mkdir(base[SIDE_A], 0755) != 0 || mkdir(base[SIDE_B], 0755) != 0) {
		fprintf(stderr, "test_diff: mkdir of the top directories: %s\n", strerror(errno));
		fst_cleanup(&fs);
		return 1;
	}
	for (int i = 0; i < NSLOTS; i++)
		slots[i].fd[0] = slots[i].fd[1] = -1;
	fprintf(stderr, "test_diff: %ld ops, %s vs %s%s\n", nops, base[SIDE_A], base[SIDE_B],
		selftest ? " (selftest: both sides plain directories)" : "");

	struct op *o = malloc(sizeof(*o));
	if (!o)
		return 1;
	/* FSTEST_SELFTEST_CORRUPT=n (selftest only): after op n, flip a byte of
	 * a file on side A behind the test's back; the run must then fail,
	 * which proves the comparer sees such damage. */
	/* LSMFS_DIFF_CHECK_EVERY=n compares the trees every n ops too: to find
	 * the op that damaged a file the periodic comparison found. */
	long check_every = getenv("LSMFS_DIFF_CHECK_EVERY")
				   ? strtol(getenv("LSMFS_DIFF_CHECK_EVERY"), NULL, 0)
				   : 0;
	long corrupt_at = selftest && getenv("FSTEST_SELFTEST_CORRUPT")
				  ? strtol(getenv("FSTEST_SELFTEST_CORRUPT"), NULL, 0)
				  : -1;
	refresh();
	for (opno = 0; opno < nops; opno++) {
		gen(o);
		if (run_op(o))
			refresh();
		if (opno == corrupt_at) {
			corrupt_side_a();
			checkpoint("after the deliberate corruption");
		}
		if (check_every && opno % check_every == check_every - 1 &&
		    opno % COMPARE_EVERY != COMPARE_EVERY - 1)
			checkpoint("LSMFS_DIFF_CHECK_EVERY");
		if (opno % COMPARE_EVERY == COMPARE_EVERY - 1) {
			if (opno % REMOUNT_EVERY == REMOUNT_EVERY - 1) {
				remount();
			} else {
				checkpoint("periodic");
				if (!selftest && opno % 2000 == 1999)
					drop_caches();
			}
			fprintf(stderr,
				"test_diff: %ld ops, %d entries (%d files, %d dirs), %lld bytes: "
				"trees agree\n",
				opno + 1, nents, ents_files, ents_dirs, ents_bytes);
		}
	}
	remount();
	checkpoint("at the end");
	readdir_resume();

	fprintf(stderr, "test_diff: op counts (succeeded/failed):");
	for (int k = 0; k < NKINDS; k++)
		fprintf(stderr, "%s %s %ld/%ld", k % 6 ? "," : "\n ", kind_name[k], count_ok[k],
			count_err[k]);
	fputc('\n', stderr);
	if (!selftest && fst_umount(&fs) != 0) {
		fprintf(stderr, "test_diff: FAIL: final unmount (seed %lu)\n", seed);
		fst_cleanup(&fs);
		return 1;
	}
	fst_cleanup(&fs);
	free(o);
	fprintf(stderr, "test_diff: PASS (%ld ops, seed %lu)\n", nops, seed);
	return 0;
}
