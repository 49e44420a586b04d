/*
 * main.c: the lsmfs daemon's command line.
 *
 *   lsmfs [-f] [-d] [-o OPTIONS] DISK[:DISK...] MOUNTPOINT
 *
 * Also the argument order mount.fuse3 uses from /etc/fstab (type
 * fuse.lsmfs): the options may come after the two paths.  Unless -f, the
 * daemon detaches, but only after the disks, the store and the mount are
 * all in place: until then the parent waits, and any refusal is printed by
 * the parent as one line with exit status 1.
 */
#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>
#include <syslog.h>
#include <unistd.h>

struct cmdline {
	char *disks;
	char *mountpoint;
	int foreground;
	int debug;
	int read_only;
	int remount;
	int help, version;
	int nowriteback;
	int nodirect;
	int nodircache;
	int degraded;
	int force_degraded;
	double attr_timeout, entry_timeout;
	double dircache_age;
	char *selinux_xattr;
	long cache_mib;
	long inode_cache;
	long log_delay_ms;
	long spin_us;
	int bdi_max_ratio;
	int readahead_kb;
	bool selinux_on; /* selinux_xattr, auto resolved */
};

/* selinux_xattr: on, off, or auto (the default): on when the kernel runs
 * SELinux (its filesystem is mounted, as libselinux's
 * is_selinux_enabled() finds it), which then labels files itself. */
static int selinux_choose(struct cmdline *c)
{
	const char *v = c->selinux_xattr ? c->selinux_xattr : "auto";
	if (strcmp(v, "on") == 0)
		c->selinux_on = true;
	else if (strcmp(v, "off") == 0)
		c->selinux_on = false;
	else if (strcmp(v, "auto") == 0)
		c->selinux_on = access("/sys/fs/selinux/enforce", F_OK) == 0;
	else
		return -EINVAL;
	return 0;
}

enum { KEY_FG, KEY_DEBUG, KEY_RO, KEY_RW, KEY_HELP, KEY_VERSION, KEY_DROP, KEY_REMOUNT };

/* Request threads at most: libfuse's default for its loop (3.14), which
 * the daemon used before loop.c. */
#define LOOP_WORKERS 10

#define OPT(t, m) {t, offsetof(struct cmdline, m), 1}
static const struct fuse_opt opts[] = {
	FUSE_OPT_KEY("-f", KEY_FG),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("debug", KEY_DEBUG),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	/* fstab words that mean nothing to a FUSE mount */
	FUSE_OPT_KEY("defaults", KEY_DROP),
	FUSE_OPT_KEY("auto", KEY_DROP),
	FUSE_OPT_KEY("noauto", KEY_DROP),
	FUSE_OPT_KEY("user", KEY_DROP),
	FUSE_OPT_KEY("users", KEY_DROP),
	FUSE_OPT_KEY("nouser", KEY_DROP),
	FUSE_OPT_KEY("nofail", KEY_DROP),
	FUSE_OPT_KEY("_netdev", KEY_DROP),
	FUSE_OPT_KEY("comment=%s", KEY_DROP),
	FUSE_OPT_KEY("rw", KEY_RW),
	FUSE_OPT_KEY("remount", KEY_REMOUNT),
	/* what mount.fuse passes back from the kernel's options at a remount */
	FUSE_OPT_KEY("user_id=%s", KEY_DROP),
	FUSE_OPT_KEY("group_id=%s", KEY_DROP),
	OPT("attr_timeout=%lf", attr_timeout),
	OPT("entry_timeout=%lf", entry_timeout),
	OPT("dircache_age=%lf", dircache_age),
	OPT("selinux_xattr=%s", selinux_xattr),
	OPT("cache_mib=%ld", cache_mib),
	OPT("inode_cache=%ld", inode_cache),
	OPT("log_delay_ms=%ld", log_delay_ms),
	OPT("spin_us=%ld", spin_us),
	OPT("no_writeback", nowriteback),
	OPT("no_direct", nodirect),
	OPT("no_dircache", nodircache),
	OPT("degraded", degraded),
	OPT("force_degraded", force_degraded),
	OPT("bdi_max_ratio=%d", bdi_max_ratio),
	OPT("readahead_kb=%d", readahead_kb),
	FUSE_OPT_END,
};

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	(void)out;
	struct cmdline *c = data;
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (!c->disks) {
			c->disks = strdup(arg);
			return 0;
		}
		if (!c->mountpoint) {
			c->mountpoint = strdup(arg);
			return 0;
		}
		fprintf(stderr, "lsmfs: unexpected argument: %s\n", arg);
		return -1;
	case KEY_FG:
		c->foreground = 1;
		return 0;
	case KEY_DEBUG:
		c->debug = 1;
		c->foreground = 1;
		return 1; /* libfuse prints requests */
	case KEY_RO:
		c->read_only = 1;
		return 1; /* also a mount option */
	case KEY_RW:
		c->read_only = 0;
		return 0;
	case KEY_REMOUNT:
		c->remount = 1;
		return 0;
	case KEY_HELP:
		c->help = 1;
		return 0;
	case KEY_VERSION:
		c->version = 1;
		return 0;
	case KEY_DROP:
		return 0;
	case FUSE_OPT_KEY_OPT:
		/* x-systemd.requires-mounts-for=... and the like: fstab options
		 * for systemd and mount(8), which mount(8) strips but a direct
		 * mount.fuse3 run passes on; they mean nothing to the mount. */
		return strncmp(arg, "x-", 2) != 0;
	default:
		return 1;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: lsmfs [-f] [-d] [-o OPTIONS] DISK[:DISK...] MOUNTPOINT\n"
		"\n"
		"Mounts the lsmfs filesystem whose disks are listed (every disk, any order).\n"
		"  -f                 stay in the foreground\n"
		"  -d                 debug: foreground, print every request\n"
		"  -o ro              read-only\n"
		"  -o degraded        mount with disks missing: their chunks read (and write)\n"
		"                     as EIO; lsmfs-disk remove --lost drops one for good\n"
		"                     (read-write only where the copies of the store here\n"
		"                     are known to be the newest: else add ro, or see below)\n"
		"  -o force_degraded  as degraded, and take the copies of the store here for\n"
		"                     the newest although a missing one may hold writes they\n"
		"                     lack (it is then behind; fsck.lsmfs --use-copy chooses)\n"
		"  -o allow_other     let other users in (and the usual FUSE mount options)\n"
		"  -o attr_timeout=S  seconds the kernel caches attributes (default 86400)\n"
		"  -o entry_timeout=S seconds the kernel caches names (default 86400)\n"
		"  -o dircache_age=S  the kernel keeps the listing of a directory left\n"
		"                     alone for S seconds (default 30)\n"
		"  -o no_dircache     the kernel keeps no listing (a tree walked once\n"
		"                     per mount is walked faster)\n"
		"  -o selinux_xattr=auto|on|off  keep security.selinux labels (on), or\n"
		"                     answer EOPNOTSUPP for them (off: ls -l then asks\n"
		"                     once, not per file); auto (default): on when the\n"
		"                     kernel runs SELinux\n"
		"  -o cache_mib=N     metadata store block cache (default 64)\n"
		"  -o inode_cache=N   inodes kept in memory that nothing uses (default\n"
		"                     262144, ~190 bytes each); past it only the kernel's\n"
		"                     reference count stays (24 bytes)\n"
		"  -o log_delay_ms=N  a change not synced reaches the metadata store's\n"
		"                     commit log at most N ms later (default 5; 0: before\n"
		"                     the call returns); fsync(2) is not delayed\n"
		"  -o spin_us=N       after a reply, wait up to N us for the next request\n"
		"                     awake before sleeping, while requests come that\n"
		"                     close (default 100; 0: sleep at once)\n"
		"  -o no_writeback    disable the kernel writeback cache\n"
		"  -o no_direct       write chunk files through the backing page cache\n"
		"                     (default: page-aligned writes use O_DIRECT)\n"
		"  -o bdi_max_ratio=N share of the dirty page limit this mount may use\n"
		"                     (default 20; the kernel gives FUSE mounts 1)\n"
		"  -o readahead_kb=N  kernel readahead (default 1024)\n"
		"  -h, --help         this help\n"
		"  -V, --version      the version\n"
		"Unmount with: fusermount3 -u MOUNTPOINT\n"
		"In /etc/fstab: /d0:/d1  /mnt/lsmfs  fuse.lsmfs  defaults,allow_other  0 0\n"
		"Exit status: 0 after a clean unmount, 1 on any error.\n");
}

/* Where reports go: stderr in the foreground, syslog once detached. */
struct logger {
	int use_syslog;
};

static void log_line(void *ctx, const char *msg)
{
	struct logger *lg = ctx;
	if (lg->use_syslog)
		syslog(LOG_WARNING, "%s", msg);
	else
		fprintf(stderr, "lsmfs: %s\n", msg);
}

/* Tell the waiting parent how it went: "" for success, else the reason. */
static void notify(int fd, const char *msg)
{
	if (fd < 0)
		return;
	size_t n = strlen(msg) + 1;
	if (write(fd, msg, n) != (ssize_t)n)
		(void)0; /* the parent died: nobody to tell */
	close(fd);
}

static int fail(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int fd, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (fd >= 0)
		notify(fd, msg);
	else
		fprintf(stderr, "lsmfs: %s\n", msg);
	return 1;
}

/* Fork; the parent waits for the child's verdict and exits with it. */
static int detach(void)
{
	int p[2];
	if (pipe(p) != 0) {
		perror("lsmfs: pipe");
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("lsmfs: fork");
		exit(1);
	}
	if (pid > 0) {
		close(p[1]);
		char msg[2048];
		size_t used = 0;
		ssize_t n;
		while (used < sizeof(msg) - 1 && (n = read(p[0], msg + used, sizeof(msg) - 1 - used)) > 0)
			used += (size_t)n;
		msg[used] = 0;
		if (used == 0) {
			fprintf(stderr, "lsmfs: the daemon died while starting\n");
			exit(1);
		}
		if (msg[0]) {
			fprintf(stderr, "lsmfs: %s\n", msg);
			exit(1);
		}
		exit(0);
	}
	close(p[0]);
	setsid();
	return p[1];
}

/*
 * The kernel limits a FUSE mount to 1% of the dirty page budget and 128 KiB
 * of readahead, which throttles large sequential writes and reads long
 * before the disks do.  As root we raise both for this mount's bdi
 * (/sys/class/bdi/MAJ:MIN); elsewhere the defaults stay, with a note.
 */
/* The device number of the filesystem mounted at mnt, from mountinfo:
 * a stat() of our own mount point would wait for a loop not yet running. */
static int mount_dev(const char *mnt, unsigned *maj, unsigned *min)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char line[4096];
	int rc = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		unsigned a, b;
		char point[PATH_MAX];
		/* id parent maj:min root mountpoint ... (octal escapes in paths) */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &a, &b, point) == 3 &&
		    strcmp(point, mnt) == 0) {
			*maj = a;
			*min = b;
			rc = 0; /* keep going: the last mount on the point wins */
		}
	}
	fclose(f);
	return rc;
}

static void tune_bdi(const char *mnt, const struct cmdline *c, struct logger *lg,
		     void (*log)(void *, const char *))
{
	unsigned maj = 0, min = 0;
	if (mount_dev(mnt, &maj, &min) != 0)
		return;
	char path[128], msg[256], val[32];
	struct { const char *file; int v; } knobs[] = {
		{"max_ratio", c->bdi_max_ratio}, {"read_ahead_kb", c->readahead_kb}};
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		if (knobs[i].v <= 0)
			continue;
		snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/%s", maj, min, knobs[i].file);
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		int n = snprintf(val, sizeof(val), "%d", knobs[i].v);
		if (fd < 0 || write(fd, val, (size_t)n) != n) {
			snprintf(msg, sizeof(msg), "note: cannot set %s to %d (%s); kernel default kept",
				 path, knobs[i].v, strerror(errno));
			log(lg, msg);
		}
		if (fd >= 0)
			close(fd);
	}
}

static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl); /* best effort: fds are cached, not required */
	}
}

/* "-ofsname=SPEC,subtype=lsmfs,default_permissions" with every comma and
 * backslash of SPEC escaped as libfuse's option parser wants; malloc'd. */
static char *fsname_option(const char *spec)
{
	static const char head[] = "-ofsname=", tail[] = ",subtype=lsmfs,default_permissions";
	size_t n = strlen(spec);
	char *o = malloc(sizeof(head) + 2 * n + sizeof(tail));
	if (!o)
		return NULL;
	char *p = stpcpy(o, head);
	for (size_t i = 0; i < n; i++) {
		if (spec[i] == ',' || spec[i] == '\\')
			*p++ = '\\';
		*p++ = spec[i];
	}
	strcpy(p, tail);
	return o;
}

/* The daemon holding disk 0 of spec, from its lock file; 0 if none. */
static long lock_holder(const char *spec, char *state, size_t cap)
{
	char path[PATH_MAX + 64];
	size_t n = strcspn(spec, ":");
	snprintf(path, sizeof(path), "%.*s/%s/%s", (int)n, spec, LSMFS_DIR, LSMFS_LOCK_FILE);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	/* A lock nobody holds exclusively (a shared lock we can take): no
	 * read-write daemon, whatever pid a killed one left in the file. */
	if (flock(fileno(f), LOCK_SH | LOCK_NB) == 0) {
		(void)flock(fileno(f), LOCK_UN);
		fclose(f);
		return 0;
	}
	long pid = 0;
	char line[64] = "";
	if (fscanf(f, "%ld\n", &pid) != 1)
		pid = 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	line[strcspn(line, "\n")] = 0;
	snprintf(state, cap, "%s", line);
	fclose(f);
	return pid;
}

/*
 * lsmfs -o remount[,ro|rw] DISKS MOUNTPOINT (what mount -o remount runs,
 * through mount.fuse): switch the mounted superblock with mount(2), keeping
 * its other flags, then tell the daemon (SIGUSR1, rdonly.c) and, going
 * read-only, wait until it says everything is durable.
 */
static int remount(const struct cmdline *c)
{
	char mnt[PATH_MAX];
	if (!realpath(c->mountpoint, mnt)) {
		fprintf(stderr, "lsmfs: %s: %s\n", c->mountpoint, strerror(errno));
		return 1;
	}
	struct statvfs sv;
	if (statvfs(mnt, &sv) != 0) {
		fprintf(stderr, "lsmfs: %s: %s\n", mnt, strerror(errno));
		return 1;
	}
	unsigned long flags = MS_REMOUNT | (c->read_only ? MS_RDONLY : 0);
	static const struct { unsigned long st, ms; } keep[] = {
		{ST_NOSUID, MS_NOSUID}, {ST_NODEV, MS_NODEV}, {ST_NOEXEC, MS_NOEXEC},
		{ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME}};
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (sv.f_flag & keep[i].st)
			flags |= keep[i].ms;
	char state[64];
	long pid = lock_holder(c->disks, state, sizeof(state));
	if (pid <= 0) {
		fprintf(stderr, "lsmfs: %s: no read-write daemon holds the disks %s (one mounted "
			"read-only from the start stays so: unmount it and mount it again)\n", mnt,
			c->disks);
		return 1;
	}
	if (mount(NULL, mnt, NULL, flags, NULL) != 0) {
		fprintf(stderr, "lsmfs: remount %s %s: %s\n", mnt, c->read_only ? "ro" : "rw",
			strerror(errno));
		return 1;
	}
	if (kill((pid_t)pid, SIGUSR1) != 0) {
		fprintf(stderr, "lsmfs: remount %s: telling daemon %ld: %s\n", mnt, pid, strerror(errno));
		return 1;
	}
	for (int ms = 0; ms < 60000; ms += 20) {
		lock_holder(c->disks, state, sizeof(state));
		if (!strcmp(state, DISKSET_READ_ONLY) == !!c->read_only)
			return 0;
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "lsmfs: remount %s: daemon %ld did not confirm within 60 s\n", mnt, pid);
	return 1;
}

/* Everything after the command line: open, mount, serve, unmount.
 * Returns the exit status. */
static int serve(const struct cmdline *c, struct fuse_args *args)
{
	char mnt[PATH_MAX];
	if (!realpath(c->mountpoint, mnt)) {
		fprintf(stderr, "lsmfs: %s: %s\n", c->mountpoint, strerror(errno));
		return 1;
	}
	raise_fd_limit();

	int fd = c->foreground ? -1 : detach();
	struct logger lg = {0};
	char err[1024] = "";
	struct lsmfs_diskset *ds = NULL;
	/* Read-only: shared locks, so that nothing changes the disks under
	 * it (lsmfs-disk offline, fsck repairing, a read-write mount). */
	int rc = diskset_open(c->disks,
			      DISKSET_LOCK | DISKSET_LOCK_WAIT | (c->read_only ? DISKSET_LOCK_SHARED : 0) |
			      (c->degraded || c->force_degraded ? DISKSET_DEGRADED : 0) |
			      (c->force_degraded ? DISKSET_FORCE : 0),
			      &ds, err, sizeof(err));
	if (rc)
		return fail(fd, "%s", err);
	struct fs_options fo = {
		.read_only = c->read_only,
		.writeback = !c->nowriteback,
		.direct = !c->nodirect,
		.attr_timeout = c->attr_timeout,
		.entry_timeout = c->entry_timeout,
		.dircache = !c->nodircache,
		.dircache_age = c->dircache_age,
		.selinux_xattr = c->selinux_on,
		.cache_bytes = (size_t)c->cache_mib << 20,
		.inode_cache = (size_t)c->inode_cache,
		.log_delay_us = (uint64_t)c->log_delay_ms * 1000,
	};
	struct fs *fs = NULL;
	rc = fs_open(ds, &fo, log_line, &lg, &fs, err, sizeof(err));
	if (rc) {
		diskset_close(ds);
		return fail(fd, "%s", err);
	}

	/* fsname shows the disks in mount(8) and df, as mergerfs does.  The
	 * paths are the user's: escaped, so that a comma in one never
	 * becomes a mount option. */
	char *fsname = fsname_option(c->disks);
	if (!fsname || fuse_opt_add_arg(args, fsname) != 0) {
		free(fsname);
		fs_close(fs);
		diskset_close(ds);
		return fail(fd, "out of memory");
	}
	free(fsname);
	struct fuse_session *se = fuse_session_new(args, &lsmfs_ops, sizeof(lsmfs_ops), fs);
	if (!se) {
		fs_close(fs);
		diskset_close(ds);
		return fail(fd, "bad mount options (see lsmfs --help)");
	}
	if (fuse_set_signal_handlers(se) != 0) {
		fuse_session_destroy(se);
		fs_close(fs);
		diskset_close(ds);
		return fail(fd, "cannot install signal handlers");
	}
	if (fuse_session_mount(se, mnt) != 0) {
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
		fs_close(fs);
		diskset_close(ds);
		return fail(fd, "%s: cannot mount (is it an empty directory, and /dev/fuse usable?)",
			    mnt);
	}
	if (!c->read_only && (rc = control_start(fs)))
		log_line(&lg, "cannot open the control socket in the store's directory: lsmfs-disk "
			 "works only offline");
	if (!c->read_only && (rc = rdonly_start(fs, mnt)))
		log_line(&lg, "cannot follow remounts (mount -o remount,ro will not make the store durable)");
	if (fs_wire_attach(fs, se) != 0)
		log_line(&lg, "cannot hook the FUSE channel: every write will ask for security.capability");
	if (!c->read_only && geteuid() == 0)
		tune_bdi(mnt, c, &lg, log_line);
	if (fd >= 0) {
		openlog("lsmfs", LOG_PID, LOG_DAEMON);
		lg.use_syslog = 1;
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
		if (chdir("/") != 0)
			(void)0; /* "/" always exists */
		notify(fd, "");
	}

	int lrc = fs_loop(se, LOOP_WORKERS, (uint64_t)c->spin_us * 1000);
	diskset_mark(ds, DISKSET_CLOSING); /* a new mount of these disks waits for us now */
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	rc = fs_close(fs);
	if (rc)
		log_line(&lg, "unmount: the metadata store did not close cleanly");
	diskset_close(ds);
	return (lrc < 0 || rc) ? 1 : 0;
}

/* The kernel's names and attributes: every change to them passes through
 * this kernel, or the daemon tells it (notify_inval), so they need not
 * time out; a day bounds what a missed invalidation could cost. */
#define TIMEOUT_DEFAULT 86400
#define TIMEOUT_MAX (365 * 86400)
/* fs/daemon/dircache.c says why. */
#define DIRCACHE_AGE_DEFAULT 30

static bool timeout_valid(double s)
{
	return s >= 0 && s <= TIMEOUT_MAX; /* false for NaN */
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct cmdline c = {.attr_timeout = TIMEOUT_DEFAULT, .entry_timeout = TIMEOUT_DEFAULT,
			    .dircache_age = DIRCACHE_AGE_DEFAULT,
			    .cache_mib = 64,
			    .log_delay_ms = 5, .spin_us = 100, .bdi_max_ratio = 20,
			    .readahead_kb = 1024};
	int status;
	if (fuse_opt_parse(&args, &c, opts, opt_proc) != 0) {
		usage(stderr);
		status = 1;
	} else if (c.help) {
		usage(stdout);
		status = 0;
	} else if (c.version) {
		char libfuse[64];
		snprintf(libfuse, sizeof(libfuse), "libfuse %s", fuse_pkgversion());
		lsmfs_print_version("lsmfs", libfuse);
		status = 0;
	} else if (!c.disks || !c.mountpoint) {
		usage(stderr);
		status = 1;
	} else if (c.inode_cache < 0 || c.cache_mib < 0) {
		fprintf(stderr, "lsmfs: %s must not be negative\n",
			c.inode_cache < 0 ? "inode_cache" : "cache_mib");
		status = 1;
	} else if (!timeout_valid(c.attr_timeout) || !timeout_valid(c.entry_timeout) ||
		   !timeout_valid(c.dircache_age)) {
		fprintf(stderr, "lsmfs: %s must be 0..%d seconds\n",
			!timeout_valid(c.attr_timeout)	  ? "attr_timeout"
			: !timeout_valid(c.entry_timeout) ? "entry_timeout"
							  : "dircache_age",
			TIMEOUT_MAX);
		status = 1;
	} else if (selinux_choose(&c) != 0) {
		fprintf(stderr, "lsmfs: selinux_xattr must be auto, on or off\n");
		status = 1;
	} else if (c.log_delay_ms < 0 || c.log_delay_ms > 60000) {
		fprintf(stderr, "lsmfs: log_delay_ms must be 0..60000\n");
		status = 1;
	} else if (c.spin_us < 0 || c.spin_us > 10000) {
		fprintf(stderr, "lsmfs: spin_us must be 0..10000\n");
		status = 1;
	} else if (c.remount) {
		status = remount(&c);
	} else {
		status = serve(&c, &args);
	}
	fuse_opt_free_args(&args);
	free(c.disks);
	free(c.mountpoint);
	free(c.selinux_xattr);
	return status;
}
