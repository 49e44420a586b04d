/*
 * json.c: just enough JSON writing for lsmfs-inspect --json: objects,
 * arrays, strings (escaped per RFC 8259; well-formed UTF-8 goes out as
 * is, any other byte as \u00NN, so the output always parses), hex strings,
 * integers and doubles.  Member names are the caller's identifiers.
 */
#include "inspect.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static void sep(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
	if (key) {
		fputc('"', j->out);
		for (const char *p = key; *p; p++)
			fputc(*p, j->out); /* keys are our own identifiers */
		fputs("\":", j->out);
	}
}

static void open(struct json *j, const char *key, char c)
{
	sep(j, key);
	fputc(c, j->out);
	if (j->depth < 31)
		j->depth++;
	j->first[j->depth] = true;
}

void json_begin(struct json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->first[0] = true;
	fputc('{', out);
	j->depth = 1;
	j->first[1] = true;
}

void json_end(struct json *j)
{
	fputs("}\n", j->out);
	j->depth = 0;
}

void json_obj(struct json *j, const char *key)
{
	open(j, key, '{');
}

void json_arr(struct json *j, const char *key)
{
	open(j, key, '[');
}

void json_close_obj(struct json *j)
{
	fputc('}', j->out);
	j->depth--;
}

void json_close_arr(struct json *j)
{
	fputc(']', j->out);
	j->depth--;
}

/* Length of the well-formed UTF-8 sequence (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF) that starts at s, or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned lo = 0x80, hi = 0xbf;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void json_bytes(struct json *j, const char *key, const void *p, size_t n)
{
	sep(j, key);
	fputc('"', j->out);
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		unsigned c = s[i];
		size_t u = c >= 0x80 ? utf8_len(s + i, n - i) : 0;
		if (u) {
			fwrite(s + i, 1, u, j->out);
			i += u - 1;
		} else if (c == '"' || c == '\\') {
			fprintf(j->out, "\\%c", c);
		} else if (c < 0x20 || c >= 0x7f) {
			/* Not text: the byte's value as a code point, so the
			 * output always parses (a reader wanting the bytes
			 * exactly uses a _hex member where there is one). */
			fprintf(j->out, "\\u%04x", c);
		} else {
			fputc((int)c, j->out);
		}
	}
	fputc('"', j->out);
}

void json_hex(struct json *j, const char *key, const void *p, size_t n)
{
	sep(j, key);
	fputc('"', j->out);
	for (size_t i = 0; i < n; i++)
		fprintf(j->out, "%02x", ((const unsigned char *)p)[i]);
	fputc('"', j->out);
}

void json_str(struct json *j, const char *key, const char *val)
{
	json_bytes(j, key, val, strlen(val));
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
	sep(j, key);
	fprintf(j->out, "%" PRIu64, v);
}

void json_i64(struct json *j, const char *key, int64_t v)
{
	sep(j, key);
	fprintf(j->out, "%" PRId64, v);
}

void json_dbl(struct json *j, const char *key, double v)
{
	sep(j, key);
	if (isfinite(v))
		fprintf(j->out, "%.4f", v);
	else
		fputs("null", j->out);
}

void json_bool(struct json *j, const char *key, bool v)
{
	sep(j, key);
	fputs(v ? "true" : "false", j->out);
}
