/*
 * base.h: the bottom layer of fs/ (fs/ARCHITECTURE.md): one-line error
 * messages, durable small files and directories, UUIDs, JSON text.  It
 * knows nothing of lsmfs's formats; every layer above may use it.
 *
 * Every function returns 0 or a negative errno unless it says otherwise.
 */
#ifndef LSMFS_BASE_H
#define LSMFS_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>

/* The reason into err (when given), formatted; returns rc. */
int fs_set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* fsync a directory by path (its entries made durable): 0 or -errno. */
int lsmfs_fsync_dir(const char *path);
/* 0 if the directory path holds nothing, -ENOTEMPTY if it holds anything,
 * else -errno (not a directory, unreadable). */
int lsmfs_dir_empty(const char *path);
/* dir/name = data, atomically and durably (dir/name.tmp written and
 * synced, renamed over, dir synced): 0 or -errno. */
int lsmfs_write_file(const char *dir, const char *name, const void *data, size_t len);
/* Format a UUID as 36 characters plus NUL into out[37]; parse one back. */
void lsmfs_uuid_format(const uint8_t uuid[16], char out[37]);
int lsmfs_uuid_parse(const char *s, uint8_t uuid[16]);
/* 16 random bytes shaped as a version 4 UUID (getrandom). */
int lsmfs_uuid_generate(uint8_t uuid[16]);

/* files.c: remove the files of a flat directory, then the directory
 * (0 when it is gone, or was). */
int fs_remove_flat(const char *dir);
/* files.c: up to n bytes at off of fd into buf: *got, fewer only at the
 * end of the file (EINTR retried).  0 or -errno (*got: what came before). */
int lsmfs_pread_full(int fd, void *buf, size_t n, off_t off, size_t *got);
/* All n bytes of buf at off of fd (EINTR retried): 0 or -errno. */
int lsmfs_pwrite_full(int fd, const void *buf, size_t n, off_t off);

/* jsonout.c: JSON text in a growing buffer (buf malloc'd, the caller's
 * to free); the first error stays in err. */
struct json_out {
	char *buf;
	size_t len, cap;
	int err;
};
void json_put(struct json_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string, quoted and escaped. */
void json_put_str(struct json_out *o, const char *s);


#endif
