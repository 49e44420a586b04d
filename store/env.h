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
/* Read a whole (small) file into a malloc'd buffer. */
int env_read_file(struct store_env *env, const char *path, uint8_t **data,
		  size_t *len);

#endif
