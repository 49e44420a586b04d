/*
 * env: the one layer through which the store touches files (the lsm_env
 * idea).  store_env_posix() is the real one; tests substitute their own
 * (tests/lib/fault_env.c) to inject EIO, ENOSPC, short writes and power cuts.
 *
 * Every function returns 0 or a negative errno.  Paths are full paths.
 * Writable files are append-only: the store never rewrites a byte in place.
 * A writable file buffers appends; env_flush() hands them to the OS (a
 * process crash then loses nothing), env_sync() also makes them durable.
 * Appends reach the OS in writes that start where the last flush ended or
 * a multiple of ENV_WRITE_UNIT bytes after it (the buffer filling up): the
 * commit-log reader tells a power cut's stale page by that (wal.c).
 * Thread safety: an env may be used from many threads; one file handle is
 * used by one thread at a time, except that pread on a readable file may be
 * called concurrently.
 */
#ifndef LSMFS_STORE_ENV_H
#define LSMFS_STORE_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define ENV_WRITE_UNIT (64 * 1024)

struct env_wfile; /* writable, append-only */
struct env_rfile; /* readable, random access */
struct env_lock;

struct store_env_ops {
	/* Create (or truncate) path for appending. */
	int (*open_writable)(struct store_env *env, const char *path,
			     struct env_wfile **out);
	int (*append)(struct env_wfile *f, const void *data, size_t len);
	int (*flush)(struct env_wfile *f);
	/* flush + fdatasync: what was appended is durable. */
	int (*sync)(struct env_wfile *f);
	/* Closes even on error; returns the error of a final flush if any. */
	int (*close_writable)(struct env_wfile *f);

	int (*open_readable)(struct store_env *env, const char *path,
			     struct env_rfile **out);
	/* Read up to len bytes at off; *got < len only at end of file. */
	int (*pread)(struct env_rfile *f, void *buf, size_t len, uint64_t off,
		     size_t *got);
	/* Optional (NULL: pread, then check): read as pread does and pass the
	 * bytes to check(ctx, buf, got), which says 0 or -EUCLEAN.  An env
	 * that keeps copies (env_mirror.c) answers a read error or a failed
	 * check from another copy, and heals the bad one. */
	int (*pread_checked)(struct env_rfile *f, void *buf, size_t len, uint64_t off,
			     size_t *got, int (*check)(void *ctx, const void *buf, size_t got),
			     void *ctx);
	void (*close_readable)(struct env_rfile *f);

	int (*file_size)(struct store_env *env, const char *path, uint64_t *size);
	/* -ENOENT if path does not exist. */
	int (*exists)(struct store_env *env, const char *path);
	/* Atomically replace to with from (durable only after sync_dir). */
	int (*rename)(struct store_env *env, const char *from, const char *to);
	int (*unlink)(struct store_env *env, const char *path);
	/* Cut a file to size, durably: when it returns 0 the new size and
	 * every byte below it survive a power cut (ftruncate + fdatasync).
	 * Used to drop a torn commit-log tail and to shrink the reserve. */
	int (*truncate)(struct store_env *env, const char *path, uint64_t size);
	/* Create path if missing and give it `size` bytes of allocated space
	 * (fallocate: the file is then `size` bytes long).  -ENOSPC when the
	 * space is not there; the file may then be longer than before (the
	 * caller cuts it back).  NULL in an env that cannot: no reserve. */
	int (*preallocate)(struct store_env *env, const char *path, uint64_t size);
	/* -EEXIST if it exists. */
	int (*mkdir)(struct store_env *env, const char *path);
	/* Names in dir (no "." or ".."); *names is a malloc'd array of malloc'd
	 * strings, freed by the caller with env_free_names(). */
	int (*list_dir)(struct store_env *env, const char *dir, char ***names,
			size_t *count);
	/* fsync the directory itself: creations, renames and unlinks in it are
	 * durable after this. */
	int (*sync_dir)(struct store_env *env, const char *dir);
	/* Exclusive lock on path (created if missing); -EBUSY if held by
	 * another process or another open store. */
	int (*lock)(struct store_env *env, const char *path, struct env_lock **out);
	void (*unlock)(struct env_lock *l);
};

struct store_env {
	const struct store_env_ops *ops;
};

/* The process-wide POSIX env (stateless, never freed). */
struct store_env *store_env_posix(void);

void env_free_names(char **names, size_t count);

/* Write a whole small file durably: write tmp, sync, rename over path, sync dir. */
int env_write_file_atomic(struct store_env *env, const char *dir,
			  const char *name, const void *data, size_t len);
/* pread through ops->pread_checked, or pread and then check. */
int env_pread_checked(struct store_env *env, struct env_rfile *f, void *buf, size_t len,
		      uint64_t off, size_t *got,
		      int (*check)(void *ctx, const void *buf, size_t got), void *ctx);
/* Copy the file from to the path to, atomically and durably: written as
 * "to.heal", synced, renamed over to, the directory synced. */
int env_copy_file(struct store_env *env, const char *from, const char *to);
/* Read a whole (small) file into a malloc'd buffer. */
int env_read_file(struct store_env *env, const char *path, uint8_t **data,
		  size_t *len);

/* ---- Copies (env_mirror.c; FORMAT.md "Copies") ----
 * An env that keeps the directory dirs[0] whole in each of dirs[0..n-1]
 * over the env inner: writes go to every live copy, reads to the first
 * that answers well (see the file's comment). */
struct env_mirror_hooks {
	/* Copy i was dropped (err, what: why).  Called before the operation
	 * that found it returns, serialised; a non-zero return fails that
	 * operation (the copy stays dropped).  May do blocking I/O; must not
	 * call the store. */
	int (*failed)(void *ctx, size_t copy, int err, const char *what);
	void (*log)(void *ctx, const char *msg); /* drops and heals, one line each */
	void *ctx;
	bool read_only; /* nothing is healed: a bad copy is only read around */
};
int env_mirror_new(struct store_env *inner, const char *const *dirs, size_t n,
		   const struct env_mirror_hooks *hooks, struct store_env **out);
void env_mirror_free(struct store_env *env);
size_t env_mirror_count(struct store_env *env);
struct store_env *env_mirror_inner(struct store_env *env);
const char *env_mirror_dir(struct store_env *env, size_t i);
bool env_mirror_live(struct store_env *env, size_t i);
/* path (under dirs[0]) in copy i; malloc'd, NULL when out of memory. */
char *env_mirror_path(struct store_env *env, size_t i, const char *path);
/* Drop copy i (as a failed write would): 0, or err when it is the last. */
int env_mirror_drop(struct store_env *env, size_t i, int err, const char *what);
/* Rewrite path in copy bad from copy good (env_copy_file). */
int env_mirror_heal(struct store_env *env, size_t good, size_t bad, const char *path);
/* Read path from copy first (before the env is shared: a read-only open
 * of copies that differ). */
int env_mirror_prefer(struct store_env *env, const char *path, size_t copy);
/* A new copy in dir (made if missing, its LOCK taken): from now on every
 * file created is written there too, but it is never read, and what it
 * lacks is no failure, until env_mirror_joined.  *k: its index. */
int env_mirror_join(struct store_env *env, const char *dir, size_t *k);
void env_mirror_joined(struct store_env *env, size_t k);
/* Stop writing copy k, without calling failed(): it is being removed. */
void env_mirror_retire(struct store_env *env, size_t k);
/* The same, atomically refused (-EBUSY) when k is the last current copy. */
int env_mirror_retire_unless_last(struct store_env *env, size_t k);
/* Copies in mask (stale) are written to but never read. */
void env_mirror_set_noread(struct store_env *env, unsigned mask);
void env_mirror_counts(struct store_env *env, size_t i, uint64_t *healed, uint64_t *read_errors);

#endif
