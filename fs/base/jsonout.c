/*
 * jsonout.c: JSON text built in memory, for what the daemon reports: the
 * statistics (stats.c) and the answers to control requests (control.c).
 * The first error sticks in out->err; the caller checks it once at the end.
 */
#include "base.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void json_put(struct json_out *o, const char *fmt, ...)
{
	if (o->err)
		return;
	if (!o->buf) {
		o->cap = 1024;
		if (!(o->buf = malloc(o->cap))) {
			o->err = -ENOMEM;
			return;
		}
	}
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->err = -EINVAL;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = (o->cap + (size_t)n + 1) * 2;
		char *g = realloc(o->buf, cap);
		if (!g) {
			o->err = -ENOMEM;
			return;
		}
		o->buf = g;
		o->cap = cap;
	}
}

void json_put_str(struct json_out *o, const char *s)
{
	json_put(o, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			json_put(o, "\\%c", c);
		else if (c < 0x20)
			json_put(o, "\\u%04x", c);
		else
			json_put(o, "%c", c);
	}
	json_put(o, "\"");
}
