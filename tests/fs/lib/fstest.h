/*
 * fstest.h: what every 'fs' suite test needs: scratch directories, mkfs,
 * mounting the daemon in the foreground as a child process, unmounting,
 * and killing it.  Binaries come from the environment meson sets:
 * LSMFS_BIN (the daemon), MKFS_BIN (mkfs.lsmfs).
 *
 * Functions return 0 or -1 after printing why to stderr.
 */
#ifndef LSMFS_FSTEST_H
#define LSMFS_FSTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FST_MAX_DISKS 8

struct fst {
	char root[256];                    /* scratch dir, removed by fst_cleanup */
	int ndisks;
	char disks[FST_MAX_DISKS][300];    /* root/diskN */
	char spec[FST_MAX_DISKS * 301];    /* "d0:d1:..." for the daemon */
	char mnt[300];                     /* root/mnt */
	pid_t daemon;                      /* 0 when not mounted */
};

/* Exit 77 with a loud message when /dev/fuse or the binaries are missing. */
void fst_require_fuse(void);
/* Make the scratch tree: root, ndisks empty disk dirs, mnt. */
int fst_init(struct fst *f, const char *tag, int ndisks);
/* Run mkfs.lsmfs -q [extra args...] on the disks.  extra may be NULL. */
int fst_mkfs(struct fst *f, const char *const *extra);
/* Start `lsmfs -f [-o opts] spec mnt` and wait until it is mounted. */
int fst_mount(struct fst *f, const char *opts);
/* The same, the daemon's stderr (its log) appended to the file log. */
int fst_mount_log(struct fst *f, const char *opts, const char *log);
/* fusermount3 -u and wait for the daemon to exit with status 0. */
int fst_umount(struct fst *f);
/* SIGKILL the daemon, detach the dead mount, reap the child. */
int fst_kill(struct fst *f);
/* Unmount if needed and remove the scratch tree. */
void fst_cleanup(struct fst *f);
/* Run argv (NULL-terminated), capture stdout+stderr into out (cap bytes,
 * NUL-terminated); return the exit status, or 128+signal. */
int fst_run(const char *const *argv, char *out, size_t cap);
/* snprintf for paths and names whose truncation the caller accepts (keeps
 * -Wformat-truncation quiet); returns what snprintf returns. */
int fst_fmt(char *out, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* splitmix64 over *state.  fst_rand_below(s, n) is uniform enough in
 * [0, n) (0 when n is 0) and always draws when n > 0, so a seed replays
 * the same sequence whatever n is; fst_chance is true pct% of the time. */
uint64_t fst_rand(uint64_t *state);
uint64_t fst_rand_below(uint64_t *state, uint64_t n);
bool fst_chance(uint64_t *state, unsigned pct);
/* rm -rf path. */
int fst_rmtree(const char *path);
/* Seed from LSMFS_SEED or the clock, printed to stderr. */
unsigned long fst_seed(const char *test);
/* True when LSMFS_SOAK=1. */
bool fst_soak(void);

#endif
