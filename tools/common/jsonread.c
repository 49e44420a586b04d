/*
 * jsonread.c: just enough JSON reading for the daemon's accounting: a
 * recursive-descent parser (RFC 8259) of a whole text into a tree of
 * values.  The text is not trusted: every read is checked against its end,
 * nesting is bounded (JSONREAD_MAX_DEPTH, so garbage cannot exhaust the
 * stack), and anything but exactly one value (with white space around it)
 * is an error naming the byte offset.  Numbers keep the text they were
 * written as, so 64-bit counters read back exactly.
 */
#include "jsonread.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSONREAD_MAX_DEPTH 64

struct parser {
	const char *p, *end, *start;
	char *err;
	size_t errlen;
};

static int fail(struct parser *ps, const char *what)
{
	snprintf(ps->err, ps->errlen, "%s at byte %zu", what, (size_t)(ps->p - ps->start));
	return -EINVAL;
}

static void skip_space(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hex4(struct parser *ps, uint32_t *out)
{
	if (ps->end - ps->p < 4)
		return fail(ps, "truncated \\u escape");
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		char c = *ps->p++;
		v <<= 4;
		if (is_digit(c))
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return fail(ps, "bad \\u escape");
	}
	*out = v;
	return 0;
}

/* One code point as UTF-8 into out (room for 4 bytes); its length. */
static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The length of the well-formed UTF-8 sequence at p (before end) whose
 * first byte, c >= 0x80, is already read; 0 if it is not one (RFC 3629:
 * no overlong forms, no surrogates, nothing past U+10FFFF). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n;
	uint32_t cp, min;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
		return 0;
	return n;
}

/* A string at ps->p (the opening quote), decoded into a new buffer: no
 * escape grows the text (\uXXXX is 6 bytes for at most 3, a surrogate
 * pair 12 for 4), so the raw length bounds it. */
static int parse_string(struct parser *ps, char **out, size_t *outlen)
{
	ps->p++;
	const char *q = ps->p;
	while (q < ps->end && *q != '"')
		q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
	if (q >= ps->end)
		return fail(ps, "unterminated string");
	char *s = malloc((size_t)(q - ps->p) + 5); /* + a code point's worth, to spare */
	if (!s)
		return -ENOMEM;
	size_t n = 0;
	int rc = 0;
	while (!rc && *ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p++;
		if (c < 0x20) {
			ps->p--;
			rc = fail(ps, "control character in a string");
		} else if (c >= 0x80) {
			/* JSON is UTF-8: anything else would break the readers
			 * --json hands the text to. */
			const unsigned char *u = (const unsigned char *)ps->p - 1;
			size_t k = utf8_len(u, (const unsigned char *)ps->end);
			if (!k) {
				ps->p--;
				rc = fail(ps, "not UTF-8 in a string");
			} else {
				memcpy(s + n, u, k);
				n += k;
				ps->p += k - 1;
			}
		} else if (c != '\\') {
			s[n++] = (char)c;
		} else {
			char e = *ps->p++; /* the scan above saw a byte after each backslash */
			uint32_t cp, lo;
			switch (e) {
			case '"': case '\\': case '/': s[n++] = e; break;
			case 'b': s[n++] = '\b'; break;
			case 'f': s[n++] = '\f'; break;
			case 'n': s[n++] = '\n'; break;
			case 'r': s[n++] = '\r'; break;
			case 't': s[n++] = '\t'; break;
			case 'u':
				if ((rc = hex4(ps, &cp)))
					break;
				if (cp >= 0xd800 && cp < 0xdc00) {
					if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
						rc = fail(ps, "lone surrogate in a \\u escape");
						break;
					}
					ps->p += 2;
					if ((rc = hex4(ps, &lo)))
						break;
					if (lo < 0xdc00 || lo >= 0xe000) {
						rc = fail(ps, "lone surrogate in a \\u escape");
						break;
					}
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else if (cp >= 0xdc00 && cp < 0xe000) {
					rc = fail(ps, "lone surrogate in a \\u escape");
					break;
				}
				n += put_utf8(s + n, cp);
				break;
			default:
				ps->p--;
				rc = fail(ps, "bad escape in a string");
			}
		}
		/* A \u escape may have read up to the closing quote's place. */
		if (!rc && ps->p >= ps->end)
			rc = fail(ps, "unterminated string");
	}
	if (rc) {
		free(s);
		return rc;
	}
	ps->p++; /* the closing quote */
	s[n] = '\0';
	*out = s;
	*outlen = n;
	return 0;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, kept as text. */
static int parse_number(struct parser *ps, struct jv *v)
{
	const char *b = ps->p;
	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p < ps->end && *ps->p == '0')
		ps->p++;
	else if (ps->p < ps->end && is_digit(*ps->p))
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	else
		return fail(ps, "bad number");
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (ps->p >= ps->end || !is_digit(*ps->p))
			return fail(ps, "bad number");
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || !is_digit(*ps->p))
			return fail(ps, "bad number");
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	}
	v->len = (size_t)(ps->p - b);
	v->str = malloc(v->len + 1);
	if (!v->str)
		return -ENOMEM;
	memcpy(v->str, b, v->len);
	v->str[v->len] = '\0';
	return 0;
}

static int parse_word(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return fail(ps, "unexpected text");
	ps->p += n;
	return 0;
}

static int parse_value(struct parser *ps, int depth, struct jv *v);

/* The members of an object or the elements of an array, after the opening
 * bracket; close is '}' or ']'. */
static int parse_items(struct parser *ps, int depth, struct jv *v, char close)
{
	struct jv **tail = &v->kids;
	skip_space(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		struct jv *kid = calloc(1, sizeof(*kid));
		if (!kid)
			return -ENOMEM;
		*tail = kid; /* linked first, so jv_free reaches it whatever happens */
		tail = &kid->next;
		int rc;
		if (close == '}') {
			skip_space(ps);
			if (ps->p >= ps->end || *ps->p != '"')
				return fail(ps, "expected a member name");
			size_t klen;
			if ((rc = parse_string(ps, &kid->key, &klen)))
				return rc;
			skip_space(ps);
			if (ps->p >= ps->end || *ps->p != ':')
				return fail(ps, "expected ':'");
			ps->p++;
		}
		if ((rc = parse_value(ps, depth + 1, kid)))
			return rc;
		skip_space(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			return 0;
		}
		return fail(ps, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int parse_value(struct parser *ps, int depth, struct jv *v)
{
	if (depth > JSONREAD_MAX_DEPTH)
		return fail(ps, "nested too deep");
	skip_space(ps);
	if (ps->p >= ps->end)
		return fail(ps, "unexpected end");
	switch (*ps->p) {
	case '{':
		ps->p++;
		v->type = JV_OBJECT;
		return parse_items(ps, depth, v, '}');
	case '[':
		ps->p++;
		v->type = JV_ARRAY;
		return parse_items(ps, depth, v, ']');
	case '"':
		v->type = JV_STRING;
		return parse_string(ps, &v->str, &v->len);
	case 't':
		v->type = JV_BOOL;
		v->b = true;
		return parse_word(ps, "true");
	case 'f':
		v->type = JV_BOOL;
		return parse_word(ps, "false");
	case 'n':
		v->type = JV_NULL;
		return parse_word(ps, "null");
	default:
		if (*ps->p != '-' && !is_digit(*ps->p))
			return fail(ps, "expected a value");
		v->type = JV_NUMBER;
		return parse_number(ps, v);
	}
}

int jv_parse(const char *text, size_t len, struct jv **out, char *err, size_t errlen)
{
	struct parser ps = {.p = text, .end = text + len, .start = text, .err = err,
			    .errlen = errlen};
	struct jv *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	int rc = parse_value(&ps, 0, v);
	if (!rc) {
		skip_space(&ps);
		if (ps.p != ps.end)
			rc = fail(&ps, "text after the value");
	}
	if (rc == -ENOMEM)
		snprintf(err, errlen, "%s", strerror(ENOMEM));
	if (rc) {
		jv_free(v);
		return rc;
	}
	*out = v;
	return 0;
}

void jv_free(struct jv *v)
{
	while (v) {
		struct jv *next = v->next;
		jv_free(v->kids); /* depth is bounded by the parser */
		free(v->key);
		free(v->str);
		free(v);
		v = next;
	}
}

const struct jv *jv_get(const struct jv *obj, const char *key)
{
	if (!obj || obj->type != JV_OBJECT)
		return NULL;
	const struct jv *found = NULL;
	for (const struct jv *k = obj->kids; k; k = k->next)
		if (!strcmp(k->key, key))
			found = k; /* the last of duplicates, as most readers do */
	return found;
}

int jv_u64(const struct jv *v, uint64_t *out)
{
	if (!v || v->type != JV_NUMBER || v->str[0] == '-')
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long x = strtoull(v->str, &end, 10);
	if (errno || *end)
		return -EINVAL; /* a fraction, an exponent, or too big */
	*out = x;
	return 0;
}

int jv_time(const struct jv *v, int64_t *sec, int64_t *nsec)
{
	if (!v || v->type != JV_NUMBER || v->str[0] == '-')
		return -EINVAL;
	errno = 0;
	char *end;
	long long s = strtoll(v->str, &end, 10);
	if (errno)
		return -EINVAL;
	int64_t ns = 0;
	if (*end == '.') {
		int digits = 0;
		for (end++; is_digit(*end); end++, digits++)
			if (digits < 9)
				ns = ns * 10 + (*end - '0');
		for (; digits < 9; digits++)
			ns *= 10;
	}
	if (*end)
		return -EINVAL; /* an exponent: not how we write times */
	*sec = s;
	*nsec = ns;
	return 0;
}
