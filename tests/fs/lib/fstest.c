/*
 * fstest.c: scratch filesystems for the 'fs' suite (see fstest.h).
 * The daemon runs in the foreground as our child so that tests can kill it.
 */
#include "fstest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *bin(const char *var)
{
	const char *b = getenv(var);
	return b && *b ? b : NULL;
}

void fst_require_fuse(void)
{
	if (access("/dev/fuse", R_OK | W_OK) != 0) {
		fprintf(stderr, "\n*** SKIPPED: /dev/fuse is not usable here (%s); "
			"the fs suite needs FUSE ***\n\n", strerror(errno));
		exit(77);
	}
	if (!bin("LSMFS_BIN") || !bin("MKFS_BIN")) {
		fprintf(stderr, "\n*** SKIPPED: LSMFS_BIN/MKFS_BIN not set; run "
			"through meson test ***\n\n");
		exit(77);
	}
}

bool fst_soak(void)
{
	const char *s = getenv("LSMFS_SOAK");
	return s && strcmp(s, "1") == 0;
}

unsigned long fst_seed(const char *test)
{
	const char *s = getenv("LSMFS_SEED");
	unsigned long seed = s ? strtoul(s, NULL, 0)
			       : (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
	fprintf(stderr, "%s: seed %lu (replay with LSMFS_SEED=%lu)\n", test, seed, seed);
	return seed;
}

int fst_init(struct fst *f, const char *tag, int ndisks)
{
	memset(f, 0, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	snprintf(f->root, sizeof(f->root), "%s/lsmfs-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
	if (!mkdtemp(f->root)) {
		fprintf(stderr, "fstest: mkdtemp %s: %s\n", f->root, strerror(errno));
		return -1;
	}
	f->ndisks = ndisks;
	for (int i = 0; i < ndisks; i++) {
		snprintf(f->disks[i], sizeof(f->disks[i]), "%s/disk%d", f->root, i);
		if (mkdir(f->disks[i], 0755) != 0)
			return -1;
		if (i)
			strcat(f->spec, ":");
		strcat(f->spec, f->disks[i]);
	}
	snprintf(f->mnt, sizeof(f->mnt), "%s/mnt", f->root);
	return mkdir(f->mnt, 0755);
}

int fst_run(const char *const *argv, char *out, size_t cap)
{
	int pfd[2];
	if (pipe(pfd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	size_t used = 0;
	char sink[4096];
	for (;;) {
		ssize_t n;
		if (out && used + 1 < cap)
			n = read(pfd[0], out + used, cap - 1 - used);
		else
			n = read(pfd[0], sink, sizeof(sink));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out && used + 1 < cap)
			used += (size_t)n;
	}
	if (out && cap)
		out[used] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int fst_mkfs(struct fst *f, const char *const *extra)
{
	const char *argv[64];
	int n = 0;
	argv[n++] = bin("MKFS_BIN");
	argv[n++] = "-q";
	for (int i = 0; extra && extra[i] && n < 40; i++)
		argv[n++] = extra[i];
	for (int i = 0; i < f->ndisks; i++)
		argv[n++] = f->disks[i];
	argv[n] = NULL;
	char out[4096];
	int rc = fst_run(argv, out, sizeof(out));
	if (rc != 0) {
		fprintf(stderr, "fstest: mkfs.lsmfs exited %d: %s\n", rc, out);
		return -1;
	}
	return 0;
}

/* Whether MNT is a mount point, from /proc/self/mountinfo: a stat of the
 * mount point would wait forever on a daemon that hangs. */
static bool mounted(const char *mnt)
{
	/* Resolve the parent only: resolving MNT itself would stat it. */
	const char *slash = strrchr(mnt, '/');
	const char *base = slash ? slash + 1 : mnt;
	char dir[PATH_MAX], parent[PATH_MAX], want[PATH_MAX];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == mnt)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - mnt), mnt);
	if (!realpath(dir, parent))
		return false;
	if ((size_t)snprintf(want, sizeof(want), "%s/%s", strcmp(parent, "/") ? parent : "", base) >= sizeof(want))
		return false;
	FILE *fp = fopen("/proc/self/mountinfo", "r");
	if (!fp)
		return false;
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof(line), fp)) {
		/* fields: id parent major:minor root mountpoint ... */
		char *f = line;
		for (int i = 0; i < 4 && f; i++) {
			f = strchr(f, ' ');
			if (f)
				f++;
		}
		if (!f)
			continue;
		char mp[PATH_MAX];
		size_t n = 0;
		for (; *f && *f != ' ' && n + 1 < sizeof(mp); f++) {
			if (f[0] == '\\' && f[1] >= '0' && f[1] <= '3' && f[2] && f[3]) {
				mp[n++] = (char)((f[1] - '0') * 64 + (f[2] - '0') * 8 + (f[3] - '0'));
				f += 3;
			} else {
				mp[n++] = *f;
			}
		}
		mp[n] = '\0';
		found = strcmp(mp, want) == 0;
	}
	fclose(fp);
	return found;
}

int fst_mount(struct fst *f, const char *opts)
{
	return fst_mount_log(f, opts, NULL);
}

int fst_mount_log(struct fst *f, const char *opts, const char *log)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (log) {
			int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (fd < 0 || dup2(fd, 2) < 0) {
				fprintf(stderr, "fstest: %s: %s\n", log, strerror(errno));
				_exit(127);
			}
		}
		const char *argv[8];
		int n = 0;
		argv[n++] = bin("LSMFS_BIN");
		argv[n++] = "-f";
		if (opts && *opts) {
			argv[n++] = "-o";
			argv[n++] = opts;
		}
		argv[n++] = f->spec;
		argv[n++] = f->mnt;
		argv[n] = NULL;
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	for (int i = 0; i < 2000; i++) { /* up to 20 s */
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			fprintf(stderr, "fstest: lsmfs exited (status %d) before mounting %s\n",
				WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), f->mnt);
			return -1;
		}
		if (mounted(f->mnt)) {
			f->daemon = pid;
			return 0;
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fprintf(stderr, "fstest: %s not mounted after 20 s\n", f->mnt);
	return -1;
}

static int reap(struct fst *f, int timeout_ms, int *status)
{
	for (int i = 0; i < timeout_ms / 10; i++) {
		if (waitpid(f->daemon, status, WNOHANG) == f->daemon) {
			f->daemon = 0;
			return 0;
		}
		usleep(10000);
	}
	return -1;
}

int fst_umount(struct fst *f)
{
	if (!f->daemon)
		return 0;
	const char *argv[] = {"fusermount3", "-u", f->mnt, NULL};
	char out[1024];
	int rc = -1;
	for (int tries = 0; tries < 100; tries++) { /* EBUSY while files close */
		rc = fst_run(argv, out, sizeof(out));
		if (rc == 0)
			break;
		usleep(50000);
	}
	if (rc != 0) {
		fprintf(stderr, "fstest: fusermount3 -u %s: %s\n", f->mnt, out);
		return -1;
	}
	int st = 0;
	if (reap(f, 60000, &st) != 0) {
		fprintf(stderr, "fstest: lsmfs did not exit after unmount\n");
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fstest: lsmfs exited with status %d after unmount\n",
			WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		return -1;
	}
	return 0;
}

int fst_kill(struct fst *f)
{
	if (!f->daemon)
		return 0;
	kill(f->daemon, SIGKILL);
	int st;
	waitpid(f->daemon, &st, 0);
	f->daemon = 0;
	const char *argv[] = {"fusermount3", "-u", "-z", f->mnt, NULL};
	char out[1024];
	if (fst_run(argv, out, sizeof(out)) != 0) {
		const char *argv2[] = {"umount", "-l", f->mnt, NULL};
		if (fst_run(argv2, out, sizeof(out)) != 0) {
			fprintf(stderr, "fstest: cannot detach %s: %s\n", f->mnt, out);
			return -1;
		}
	}
	return 0;
}

int fst_fmt(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	return n;
}

uint64_t fst_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t fst_rand_below(uint64_t *state, uint64_t n)
{
	return n ? fst_rand(state) % n : 0;
}

bool fst_chance(uint64_t *state, unsigned pct)
{
	return fst_rand_below(state, 100) < pct;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p) == 0 || errno == ENOENT ? 0 : -1;
}

int fst_rmtree(const char *path)
{
	return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

void fst_cleanup(struct fst *f)
{
	if (f->daemon && fst_umount(f) != 0)
		(void)fst_kill(f); /* a test already failing; detach anyway */
	if (f->root[0])
		(void)fst_rmtree(f->root); /* best effort: a leftover temp dir is harmless */
}
