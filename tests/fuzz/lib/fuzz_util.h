/*
 * fuzz_util: what the libFuzzer harnesses of tests/fuzz/ share.
 *
 * fuzz_memenv: a store_env whose every readable file is one byte buffer
 * (the fuzz input), so a reader runs through the same env calls it makes
 * on real files, with no file system in the way.  Only the read side is
 * there; anything else answers -ENOSYS.
 *
 * fuzz_check: the harness's own assertion.  A broken promise of a reader
 * (an error without its message, a decoded value that re-encodes
 * differently) aborts, which libFuzzer reports as a crash with the input.
 *
 * Locking: none; a harness is one thread.
 */
#ifndef LSMFS_FUZZ_UTIL_H
#define LSMFS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "env.h"

struct fuzz_memenv {
	struct store_env env; /* first: &memenv.env is what the store gets */
	const uint8_t *data;
	size_t size;
};
/* Every path opened for reading reads [data, data + size). */
void fuzz_memenv_init(struct fuzz_memenv *m, const uint8_t *data, size_t size);

/* libFuzzer may hand an empty input as a NULL pointer; the store's callers
 * never pass NULL (an empty record is a pointer into a block), and
 * NULL + 0 is undefined behaviour, so an empty input gets a real pointer. */
#define FUZZ_NONNULL(data) ((data) ? (data) : (const uint8_t *)"")

/* Abort with the message (file and line, written straight to fd 2, which
 * harnesses keep for the sanitizers) when cond is false. */
#define fuzz_check(cond, ...) \
	((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__))
void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

/* A fresh empty directory of this process's, under $TMPDIR (default /tmp)
 * or /dev/shm when it exists; made once, emptied with fuzz_dir_clear. */
const char *fuzz_dir(void);
/* Remove every file in fuzz_dir() (it holds no subdirectories). */
void fuzz_dir_clear(void);
/* Write a whole file under fuzz_dir(); the path goes to path[PATH_MAX]. */
void fuzz_write_file(const char *name, const void *data, size_t len, char *path);

#endif
