/*
 * jsonread.h: a JSON text read into a tree, for the tools that read the
 * daemon's accounting (lsmfs-inspect stats, lsmfs-bench).  The text is not
 * trusted: see jsonread.c.
 */
#ifndef LSMFS_JSONREAD_H
#define LSMFS_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };
struct jv {
	enum jv_type type;
	char *key;       /* a member of an object: its name; else NULL */
	char *str;       /* JV_STRING: decoded (may hold \0s); JV_NUMBER: as written */
	size_t len;      /* bytes in str */
	bool b;          /* JV_BOOL */
	struct jv *kids; /* JV_ARRAY, JV_OBJECT: elements or members, in order */
	struct jv *next;
};
/* Parse exactly one value (white space around it allowed).  0 and *out (free
 * with jv_free), or -EINVAL with the reason and byte offset in err, or
 * -ENOMEM.  Never reads outside text[0..len). */
int jv_parse(const char *text, size_t len, struct jv **out, char *err, size_t errlen);
void jv_free(struct jv *v);
/* An object's member by name (the last of duplicates); NULL if obj is not
 * an object or has none. */
const struct jv *jv_get(const struct jv *obj, const char *key);
/* A number written as a non-negative integer that fits 64 bits; -EINVAL
 * for anything else (v may be NULL). */
int jv_u64(const struct jv *v, uint64_t *out);
/* Non-negative decimal seconds with an optional fraction (as stats.json's
 * written_at): the seconds and nanoseconds; -EINVAL otherwise. */
int jv_time(const struct jv *v, int64_t *sec, int64_t *nsec);

#endif
