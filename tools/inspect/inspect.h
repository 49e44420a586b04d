/*
 * inspect.h: lsmfs-inspect internals.  The tool opens the disk set without
 * locks and the store read-only (as fsck -n), so it runs on an unmounted
 * filesystem and beside a mounted one, and never writes a byte.  Beside a
 * mount it sees the store as of the daemon's last commit-log write.
 *
 * Output is text, or one JSON object with --json (json.c writes it).
 */
#ifndef LSMFS_INSPECT_H
#define LSMFS_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fs.h"
#include "schema.h"
#include "store.h"

/* Exit codes, as fsck.lsmfs's where they overlap. */
#define INSPECT_EXIT_OK 0
#define INSPECT_EXIT_NOT_FOUND 1 /* the path or inode asked for does not exist */
#define INSPECT_EXIT_OPERATIONAL 8
#define INSPECT_EXIT_USAGE 16

struct insp {
	struct lsmfs_diskset *ds;
	struct store *st;
	struct fs_info info;      /* from the store, else disk 0's superblock */
	bool info_from_store;
	uint32_t *section_disk;   /* UINT32_MAX: unmapped */
	bool json;
	FILE *out;
};

/* ---- json.c: a small JSON writer (one object, nested by hand) ---- */
struct json {
	FILE *out;
	int depth;
	bool first[32]; /* no comma before the next member at this depth */
};
void json_begin(struct json *j, FILE *out);
void json_end(struct json *j); /* closes the top object and ends the line */
void json_obj(struct json *j, const char *key);   /* key NULL inside arrays */
void json_arr(struct json *j, const char *key);
void json_close_obj(struct json *j);
void json_close_arr(struct json *j);
void json_str(struct json *j, const char *key, const char *val);
void json_bytes(struct json *j, const char *key, const void *p, size_t n);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_dbl(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);

/* ---- show.c: keys, records and the commands built on them ---- */
/* Printable rendering of bytes: text as is, other bytes as \xNN. */
void insp_escape(char *out, size_t cap, const void *p, size_t n);
/* One key and its value in words, e.g. "I 12 -> dir 0755 ..." */
void insp_describe(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl, char *out,
		   size_t cap);
/* Resolve "/a/b" (or a decimal inode number) to an inode; -ENOENT. */
int insp_resolve(struct insp *in, const char *what, uint64_t *ino, char *err, size_t errlen);
int insp_keys(struct insp *in, int argc, char **argv);
int insp_stat(struct insp *in, const char *what);
int insp_ls(struct insp *in, const char *what);

/* ---- inspect.c ---- */
int insp_super(struct insp *in);
int insp_sections(struct insp *in);
int insp_levels(struct insp *in);

#endif
