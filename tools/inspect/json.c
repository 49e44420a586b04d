/*
 * json.c: just enough JSON writing for lsmfs-inspect --json: objects,
 * arrays, strings (escaped per RFC 8259; bytes that are not UTF-8 text go
 * out as \u00NN so the output always parses), integers and doubles.
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

void json_bytes(struct json *j, const char *key, const void *p, size_t n)
{
	sep(j, key);
	fputc('"', j->out);
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		unsigned c = s[i];
		if (c == '"' || c == '\\')
			fprintf(j->out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(j->out, "\\u%04x", c);
		else
			fputc((int)c, j->out);
	}
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
