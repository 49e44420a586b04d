/*
 * inspect.h: lsmfs-inspect internals.  The tool opens the disk set without
 * locks and the store read-only (as fsck -n), so it runs on an unmounted
 * filesystem and beside a mounted one, and never writes a byte.  Beside a
 * mount it sees the store as of the daemon's last commit-log write.
 *
 * Files: inspect.c (command line, opening), describe.c (keys and records in
 * words), disks.c (super, sections), show.c (keys, stat, ls), levels.c
 * (levels), stats.c (the daemon's stats.json), json.c (--json), jsonread.c
 * (reading JSON back, for stats).  Nothing trusts the store: a record that does
 * not decode is shown in hex, never a reason to stop.
 *
 * Output is text, or one JSON object with --json (json.c writes it).  The
 * JSON objects only ever gain members, so readers can rely on the ones
 * they know.
 */
#ifndef LSMFS_INSPECT_H
#define LSMFS_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fs.h"
#include "jsonread.h"
#include "schema.h"
#include "store.h"

/* Exit codes, as fsck.lsmfs's where they overlap. */
#define INSPECT_EXIT_OK 0
#define INSPECT_EXIT_NOT_FOUND 1 /* the path or inode asked for does not exist */
#define INSPECT_EXIT_OPERATIONAL 8
#define INSPECT_EXIT_USAGE 16

#define INSPECT_PROG "lsmfs-inspect"

struct insp {
	struct lsmfs_diskset *ds;
	struct store *st;
	struct fs_info info;      /* from the store, else disk 0's superblock */
	bool info_from_store;
	uint32_t *section_disk;   /* by section; UINT32_MAX: unmapped */
	bool json;
	const char *raw_prefix;   /* keys --raw HEX, or NULL */
	const char *backup;       /* --backup DIR: its store instead of the disks' */
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
/* Bytes as a string: UTF-8 text as is, any other byte as \u00NN. */
void json_bytes(struct json *j, const char *key, const void *p, size_t n);
void json_str(struct json *j, const char *key, const char *val);
void json_hex(struct json *j, const char *key, const void *p, size_t n);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_dbl(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);

/* ---- describe.c: keys and records in words (fs/SCHEMA.md) ---- */
/* Printable rendering of bytes: text as is, other bytes (and \) as \xNN.
 * Cut short, never overrun, when cap is too small. */
void insp_escape(char *out, size_t cap, const void *p, size_t n);
/* Lowercase hex of at most the bytes that fit in cap. */
void insp_hex(char *out, size_t cap, const void *p, size_t n);
/* "file", "dir", "symlink", ... for the type bits of a mode. */
const char *insp_type_word(uint32_t mode);
/* ISO 8601 UTC, with nanoseconds unless nsec < 0. */
void insp_format_time(char *out, size_t cap, int64_t sec, int64_t nsec);
/* One key and its value in words, e.g. "I 12 -> dir 0755 ...".  With in
 * (may be NULL), a chunk record also names its section and disk. */
void insp_describe(const struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v,
		   size_t vl, char *out, size_t cap);
/* A key alone in words: what insp_describe says before " -> ". */
void insp_key_words(const void *k, size_t kl, char *out, size_t cap);

/* ---- show.c: commands that walk the keys ---- */
int insp_keys(struct insp *in, int argc, char **argv);
int insp_stat(struct insp *in, const char *what);
int insp_ls(struct insp *in, const char *what);

/* ---- disks.c, levels.c ---- */
int insp_super(struct insp *in);
int insp_sections(struct insp *in);
int insp_levels(struct insp *in);

/* ---- stats.c: the daemon's <store>/stats.json (needs only in->ds) ---- */
int insp_stats(struct insp *in);

/* show.c: call fn for every key that starts with prefix (plen 0: every
 * key), in key order; 0 or the store's error. */
typedef void insp_scan_fn(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v,
			  size_t vl, void *ctx);
int insp_scan(struct insp *in, const uint8_t *prefix, size_t plen, insp_scan_fn *fn, void *ctx);

/* ---- inspect.c ---- */
/* store_options.log: the store's reports, on stderr. */
void insp_store_log(void *ctx, const char *line);
/* A command's end (show.c): 0, or the store error it met, said on stderr (exit 8). */
int insp_command_end(struct insp *in, int rc);

#endif
