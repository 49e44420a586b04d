/*
 * scratch.c: the systems a run writes into, and leaving nothing behind.
 *
 * Each backing disk is a private directory: DIR/lsmfs-bench.PID for a
 * given DIR, or TMPDIR (else /var/tmp, which is on disk where /tmp may be
 * tmpfs)/lsmfs-bench.XXXXXX/dN.  Under it each system has its own
 * subdirectory (lsmfs, raw, mergerfs), made fresh for every run and removed
 * after it, so no run pays for the previous one's files.  Mount points and
 * temp directory; the daemons' and mkfs's logs go to the --out directory.
 *
 * Daemons run in the foreground as our children, in their own process
 * group: a Ctrl-C on the terminal reaches only us, and we unmount them in
 * order (fusermount3 -u, then waiting for the daemon, whose clean exit
 * flushes the store and writes its final accounting).  scratch_close
 * undoes whatever exists: it is the one cleanup path for success, error
 * and interruption.  Removal never crosses into a mount (FTW_MOUNT), so a
 * mount that would not go cannot lose a user's files (a bind mount of the
 * same filesystem would be crossed; nothing here makes one).
 */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct scratch {
	const struct bench_opts *o;
	char tmp[PATH_MAX]; /* mount points and logs */
	char own_root[PATH_MAX]; /* the fresh disks' parent when we made them */
	int ndisks;
	char **disks;
	char mnt[SYS_COUNT][PATH_MAX];
	bool mounted[SYS_COUNT];
	pid_t daemon[SYS_COUNT];
	off_t log_from[SYS_COUNT]; /* where this setup's lines start in its log */
	char *tdirs[64]; /* the current target's directories */
	int ntdirs;
};

static const char *const sys_sub[SYS_COUNT] = {"lsmfs", "raw", "mergerfs"};

const char *bench_system_name(enum bench_system s)
{
	return s < SYS_COUNT ? sys_sub[s] : "?";
}

char **scratch_disks(struct scratch *s, int *n)
{
	*n = s->ndisks;
	return s->disks;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) && errno != ENOENT)
		bench_err("cannot remove %s: %s", path, strerror(errno));
	return 0;
}

/* rm -rf PATH, staying on PATH's filesystem. */
static void remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st))
		return;
	(void)nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Fork and exec ARGV with stdin from /dev/null and stdout/stderr appended
 * to LOG, in a process group of its own. */
static int spawn(char *const argv[], const char *log, pid_t *pid)
{
	pid_t p = fork();
	if (p < 0)
		return -errno;
	if (p == 0) {
		setpgid(0, 0);
		int in = open("/dev/null", O_RDONLY);
		int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (in >= 0)
			dup2(in, 0);
		if (out >= 0) {
			dup2(out, 1);
			dup2(out, 2);
		}
		execvp(argv[0], argv);
		fprintf(stderr, BENCH_PROG ": cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	/* In both, so that the child is in its group before either goes on:
	 * a Ctrl-C right after the fork must not reach it. */
	(void)setpgid(p, p);
	*pid = p;
	return 0;
}

/* Wait for PID at most TIMEOUT seconds; its exit status or -ETIMEDOUT. */
static int wait_child(pid_t pid, double timeout, int *status)
{
	double end = bench_now() + timeout;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (bench_now() > end)
			return -ETIMEDOUT;
		usleep(20000);
	}
}

/* Run ARGV to its end; 0 when it exited 0.  Its output goes to LOG. */
static int run(char *const argv[], const char *log)
{
	pid_t pid = 0;
	int rc = spawn(argv, log, &pid), st;
	if (rc)
		return rc;
	rc = wait_child(pid, 600, &st);
	if (rc) {
		kill(pid, SIGKILL);
		(void)waitpid(pid, &st, 0);
		return rc;
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
}

/* The last lines a daemon or mkfs wrote to its log since FROM, to show
 * with its failure (earlier runs' lines are not this failure's). */
static void show_log(const char *log, off_t from)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	if (fseeko(f, from, SEEK_SET))
		rewind(f);
	char line[512], last[8][512];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		snprintf(last[n++ % 8], sizeof(last[0]), "%s", line);
	fclose(f);
	for (int i = n > 8 ? n - 8 : 0; i < n; i++)
		fprintf(stderr, "  %s: %s", log, last[i % 8]);
}

static int check_space(struct scratch *s)
{
	uint64_t need = s->o->size + (512ull << 20);
	for (int d = 0; d < s->ndisks; d++) {
		struct statvfs v;
		if (statvfs(s->disks[d], &v)) {
			bench_err("%s: %s", s->disks[d], strerror(errno));
			return -errno;
		}
		uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
		if (free_bytes < need) {
			char a[32], b[32];
			size_format(free_bytes, a, sizeof(a));
			size_format(need, b, sizeof(b));
			bench_err("%s: %s free, a run may need %s there (--size plus 512 MiB); "
				  "give a smaller --size or other directories", s->disks[d], a, b);
			return -ENOSPC;
		}
	}
	return 0;
}

int scratch_open(const struct bench_opts *o, struct scratch **out)
{
	struct scratch *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = o;
	s->ndisks = o->ndisks;
	s->disks = calloc((size_t)s->ndisks, sizeof(char *));
	int rc = -ENOMEM;
	if (!s->disks)
		goto fail;
	const char *tmpdir = getenv("TMPDIR");
	snprintf(s->tmp, sizeof(s->tmp), "%s/lsmfs-bench.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(s->tmp)) {
		rc = -errno;
		bench_err("cannot make a temp directory %s: %s", s->tmp, strerror(errno));
		s->tmp[0] = 0;
		goto fail;
	}
	/* Mount points are compared with /proc/self/mountinfo, which has
	 * them without symlinks or "..": make ours so too. */
	char real[PATH_MAX];
	if (realpath(s->tmp, real))
		snprintf(s->tmp, sizeof(s->tmp), "%s", real);
	if (!o->dirs) {
		snprintf(s->own_root, sizeof(s->own_root), "%s/lsmfs-bench.XXXXXX",
			 tmpdir && *tmpdir ? tmpdir : "/var/tmp");
		if (!mkdtemp(s->own_root)) {
			rc = -errno;
			bench_err("cannot make %s: %s", s->own_root, strerror(errno));
			s->own_root[0] = 0;
			goto fail;
		}
	}
	for (int d = 0; d < s->ndisks; d++) {
		char p[PATH_MAX];
		int l = o->dirs ? snprintf(p, sizeof(p), "%s/lsmfs-bench.%d", o->dirs[d], (int)getpid())
				: snprintf(p, sizeof(p), "%s/d%d", s->own_root, d);
		if (l >= (int)sizeof(p)) {
			rc = -ENAMETOOLONG;
			bench_err("%s: path too long", o->dirs ? o->dirs[d] : s->own_root);
			goto fail;
		}
		if (mkdir(p, 0700)) {
			rc = -errno;
			bench_err("cannot make %s: %s", p, strerror(errno));
			goto fail;
		}
		if (!(s->disks[d] = strdup(p)))
			goto fail;
	}
	for (int k = 0; k < SYS_COUNT; k++) {
		if (snprintf(s->mnt[k], sizeof(s->mnt[k]), "%s/mnt-%s", s->tmp, sys_sub[k]) >=
		    (int)sizeof(s->mnt[k])) {
			rc = -ENAMETOOLONG;
			bench_err("%s: path too long", s->tmp);
			goto fail;
		}
		if (mkdir(s->mnt[k], 0755)) {
			rc = -errno;
			bench_err("cannot make %s: %s", s->mnt[k], strerror(errno));
			goto fail;
		}
	}
	if ((rc = check_space(s)))
		goto fail;
	*out = s;
	return 0;
fail:
	scratch_close(s);
	return rc;
}

/* Is MNT a mount point now?  Read from /proc/self/mountinfo rather than
 * by stat: a FUSE mount whose daemon died answers stat with ENOTCONN but
 * is still there to be removed. */
static bool is_mounted(const char *mnt)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return false;
	char line[8192], point[PATH_MAX];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		/* Field 5 is the mount point, with space, tab, newline and
		 * backslash written as \ooo. */
		char *p = line;
		for (int field = 1; field < 5 && p; field++)
			p = strchr(p, ' '), p = p ? p + 1 : NULL;
		if (!p)
			continue;
		size_t n = 0;
		for (; *p && *p != ' ' && n + 1 < sizeof(point); p++) {
			if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] && p[3]) {
				point[n++] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
				p += 3;
			} else {
				point[n++] = *p;
			}
		}
		point[n] = 0;
		found = !strcmp(point, mnt);
	}
	fclose(f);
	return found;
}

static int wait_mount(struct scratch *s, enum bench_system sys, const char *log)
{
	double end = bench_now() + 60;
	while (!is_mounted(s->mnt[sys])) {
		int st;
		if (waitpid(s->daemon[sys], &st, WNOHANG) == s->daemon[sys]) {
			s->daemon[sys] = 0;
			bench_err("%s did not mount %s: it exited (status %d); its log:", sys_sub[sys],
				  s->mnt[sys], WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
			show_log(log, s->log_from[sys]);
			return -EIO;
		}
		if (bench_now() > end || bench_interrupted) {
			if (!bench_interrupted)
				bench_err("%s did not mount %s within 60 s", sys_sub[sys], s->mnt[sys]);
			return bench_interrupted ? -EINTR : -ETIMEDOUT;
		}
		usleep(20000);
	}
	s->mounted[sys] = true;
	return 0;
}

/* Split a space-separated option string into ARGV at *N. */
static void add_words(char **argv, int *n, int max, char *words)
{
	for (char *save = NULL, *w = strtok_r(words, " \t", &save); w && *n < max - 1;
	     w = strtok_r(NULL, " \t", &save))
		argv[(*n)++] = w;
}

static int setup_lsmfs(struct scratch *s, const char *log)
{
	const struct bench_opts *o = s->o;
	char *argv[96], words[1024], disklist[PATH_MAX * 2] = "";
	int n = 0, rc;
	argv[n++] = (char *)o->mkfs_bin;
	argv[n++] = "-q";
	snprintf(words, sizeof(words), "%s", o->mkfs_opts ? o->mkfs_opts : "");
	add_words(argv, &n, 64, words);
	for (int d = 0; d < s->ntdirs && n < 94; d++)
		argv[n++] = s->tdirs[d];
	argv[n] = NULL;
	if ((rc = run(argv, log))) {
		bench_err("%s failed; its log:", o->mkfs_bin);
		show_log(log, s->log_from[SYS_LSMFS]);
		return rc == -ECHILD ? -EIO : rc;
	}
	for (int d = 0; d < s->ntdirs; d++) {
		size_t l = strlen(disklist);
		snprintf(disklist + l, sizeof(disklist) - l, "%s%s", d ? ":" : "", s->tdirs[d]);
	}
	n = 0;
	argv[n++] = (char *)o->lsmfs_bin;
	argv[n++] = "-f";
	if (o->mount_opts) {
		argv[n++] = "-o";
		argv[n++] = (char *)o->mount_opts;
	}
	argv[n++] = disklist;
	argv[n++] = s->mnt[SYS_LSMFS];
	argv[n] = NULL;
	if ((rc = spawn(argv, log, &s->daemon[SYS_LSMFS])))
		return rc;
	return wait_mount(s, SYS_LSMFS, log);
}

static int setup_mergerfs(struct scratch *s, const char *log)
{
	char branches[PATH_MAX * 2] = "";
	for (int d = 0; d < s->ntdirs; d++) {
		size_t l = strlen(branches);
		snprintf(branches + l, sizeof(branches) - l, "%s%s", d ? ":" : "", s->tdirs[d]);
	}
	/* As users run it for media disks: no page cache of its own, new
	 * files on the branch with the most free space. */
	char *argv[] = {(char *)s->o->mergerfs_bin, "-f", "-o",
			"cache.files=off,dropcacheonclose=true,category.create=mfs,minfreespace=0", branches,
			s->mnt[SYS_MERGERFS], NULL};
	int rc = spawn(argv, log, &s->daemon[SYS_MERGERFS]);
	return rc ? rc : wait_mount(s, SYS_MERGERFS, log);
}

static void free_tdirs(struct scratch *s)
{
	for (int d = 0; d < s->ntdirs; d++)
		free(s->tdirs[d]);
	s->ntdirs = 0;
}

int scratch_setup(struct scratch *s, enum bench_system sys, struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->sys = sys;
	char log[PATH_MAX];
	snprintf(log, sizeof(log), "%s/%s.log", s->o->out, sys_sub[sys]);
	struct stat lst;
	s->log_from[sys] = stat(log, &lst) ? 0 : lst.st_size;
	free_tdirs(s);
	for (int d = 0; d < s->ndisks && d < 64; d++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", s->disks[d], sys_sub[sys]);
		remove_tree(p);
		if (mkdir(p, 0755)) {
			bench_err("cannot make %s: %s", p, strerror(errno));
			return -errno;
		}
		if (!(s->tdirs[s->ntdirs++] = strdup(p)))
			return -ENOMEM;
	}
	int rc = 0;
	switch (sys) {
	case SYS_LSMFS:
		rc = setup_lsmfs(s, log);
		break;
	case SYS_MERGERFS:
		rc = setup_mergerfs(s, log);
		break;
	default:
		break;
	}
	if (rc)
		return rc;
	if (sys == SYS_RAW) {
		t->ndirs = s->ntdirs;
		t->dirs = s->tdirs;
	} else {
		t->ndirs = 1;
		t->mntv[0] = s->mnt[sys];
		t->dirs = t->mntv;
		t->mnt = s->mnt[sys];
		t->daemon = s->daemon[sys];
	}
	return 0;
}

int scratch_usage(struct scratch *s, uint64_t *bytes)
{
	/* The files of a run lie flat in each disk's subdirectory (raw) or
	 * branch (mergerfs). */
	for (int d = 0; d < s->ntdirs; d++) {
		bytes[d] = 0;
		DIR *dir = opendir(s->tdirs[d]);
		if (!dir) {
			bench_err("%s: %s", s->tdirs[d], strerror(errno));
			return -errno;
		}
		struct dirent *e;
		while ((e = readdir(dir))) {
			struct stat st;
			if (!fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
				bytes[d] += (uint64_t)st.st_size;
		}
		closedir(dir);
	}
	return 0;
}

static int unmount_one(struct scratch *s, enum bench_system sys, double *cpu)
{
	int rc = 0;
	char log[PATH_MAX];
	snprintf(log, sizeof(log), "%s/%s.log", s->o->out, sys_sub[sys]);
	char *umount_argv[] = {"fusermount3", "-u", s->mnt[sys], NULL};
	/* Until the daemon is gone: unmount it whenever it is mounted; one
	 * we never saw mounted (interrupted while it mounted) is asked to
	 * stop with SIGTERM, which libfuse daemons take as "unmount and
	 * exit", and unmounted if it mounts meanwhile.  One that was mounted
	 * is only waited for once unmounted: it is flushing its store. */
	bool seen = s->mounted[sys];
	double deadline = bench_now() + 300, last_term = 0;
	while (s->daemon[sys] > 0) {
		int st;
		struct rusage ru;
		pid_t r = wait4(s->daemon[sys], &st, WNOHANG, &ru);
		if (r == s->daemon[sys]) {
			if (cpu)
				*cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
				       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				bench_err("%s exited with status %d; its log:", sys_sub[sys],
					  WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
				show_log(log, s->log_from[sys]);
				rc = -EIO;
			}
			s->daemon[sys] = 0;
			break;
		}
		if (is_mounted(s->mnt[sys])) {
			seen = true;
			if (run(umount_argv, log))
				usleep(250000); /* busy: a file still closing */
		} else if (!seen && bench_now() - last_term > 1) {
			kill(s->daemon[sys], SIGTERM);
			last_term = bench_now();
		}
		if (bench_now() > deadline) {
			bench_err("%s (pid %d) did not exit after its unmount; killing it", sys_sub[sys],
				  (int)s->daemon[sys]);
			kill(s->daemon[sys], SIGKILL);
			(void)waitpid(s->daemon[sys], &st, 0);
			s->daemon[sys] = 0;
			rc = -ETIMEDOUT;
			break;
		}
		usleep(20000);
	}
	s->mounted[sys] = false;
	/* What is left: a mount whose daemon died or would not go. */
	if (is_mounted(s->mnt[sys])) {
		bench_err("%s would not unmount; detaching it", s->mnt[sys]);
		if (umount2(s->mnt[sys], MNT_DETACH)) {
			char *argv[] = {"fusermount3", "-u", "-z", s->mnt[sys], NULL};
			(void)run(argv, log);
		}
		rc = rc ? rc : -EBUSY;
	}
	return rc;
}

int scratch_unmount(struct scratch *s, struct target *t, double *cpu)
{
	return unmount_one(s, t->sys, cpu);
}

void scratch_remove(struct scratch *s, struct target *t)
{
	for (int d = 0; d < s->ndisks; d++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", s->disks[d], sys_sub[t->sys]);
		remove_tree(p);
	}
}

void scratch_close(struct scratch *s)
{
	if (!s)
		return;
	for (int k = 0; k < SYS_COUNT; k++)
		(void)unmount_one(s, k, NULL);
	for (int d = 0; d < s->ndisks; d++)
		if (s->disks && s->disks[d]) {
			remove_tree(s->disks[d]);
			free(s->disks[d]);
		}
	free(s->disks);
	if (s->own_root[0])
		remove_tree(s->own_root);
	if (s->tmp[0])
		remove_tree(s->tmp);
	free_tdirs(s);
	free(s);
}
