/*
 * oplog.c: encoding and decoding of cutfs's operation log (oplog.h has the
 * record layout).  Test-only code: no locking, one writer (cutfs is
 * single-threaded), readers load the whole log after cutfs exited.
 */
#include "oplog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HDR_LEN (1 + 8 * 3 + 2 + 2 + 4)

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int oplog_put(FILE *fp, const struct oplog_rec *r)
{
	uint8_t h[HDR_LEN];
	h[0] = r->type;
	put_le(h + 1, r->a, 8);
	put_le(h + 9, r->b, 8);
	put_le(h + 17, r->c, 8);
	put_le(h + 25, r->len1, 2);
	put_le(h + 27, r->len2, 2);
	put_le(h + 29, r->dlen, 4);
	if (fwrite(h, 1, sizeof(h), fp) != sizeof(h) ||
	    (r->len1 && fwrite(r->name1, 1, r->len1, fp) != r->len1) ||
	    (r->len2 && fwrite(r->name2, 1, r->len2, fp) != r->len2) ||
	    (r->dlen && fwrite(r->data, 1, r->dlen, fp) != r->dlen))
		return -EIO;
	return 0;
}

int oplog_load(const char *path, struct oplog *log)
{
	memset(log, 0, sizeof(*log));
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "oplog: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	int rc = 0;
	size_t cap = 1 << 20;
	log->buf = malloc(cap);
	for (;;) {
		if (!log->buf) {
			rc = -ENOMEM;
			break;
		}
		size_t n = fread(log->buf + log->size, 1, cap - log->size, fp);
		log->size += n;
		if (log->size < cap)
			break;
		cap *= 2;
		uint8_t *g = realloc(log->buf, cap);
		if (!g)
			free(log->buf);
		log->buf = g;
	}
	if (!rc && ferror(fp))
		rc = -EIO;
	fclose(fp);
	if (rc)
		goto out;
	if (log->size < 8 || memcmp(log->buf, OPLOG_MAGIC, 8) != 0) {
		fprintf(stderr, "oplog: %s: no %s magic at offset 0\n", path, OPLOG_MAGIC);
		rc = -EUCLEAN;
		goto out;
	}
	size_t ncap = 0;
	for (size_t off = 8; off < log->size;) {
		const uint8_t *p = log->buf + off;
		if (log->size - off < HDR_LEN) {
			fprintf(stderr, "oplog: %s: record %zu at offset %zu: header cut short\n",
				path, log->n, off);
			rc = -EUCLEAN;
			goto out;
		}
		struct oplog_rec r = {
			.type = p[0], .a = get_le(p + 1, 8), .b = get_le(p + 9, 8),
			.c = get_le(p + 17, 8), .len1 = (uint16_t)get_le(p + 25, 2),
			.len2 = (uint16_t)get_le(p + 27, 2), .dlen = (uint32_t)get_le(p + 29, 4),
		};
		size_t body = (size_t)r.len1 + r.len2 + r.dlen;
		if (r.type < OPLOG_MKNODE || r.type > OPLOG_MARK || log->size - off - HDR_LEN < body) {
			fprintf(stderr, "oplog: %s: record %zu at offset %zu: bad type %u or "
				"length past the end\n", path, log->n, off, r.type);
			rc = -EUCLEAN;
			goto out;
		}
		r.name1 = (const char *)p + HDR_LEN;
		r.name2 = r.name1 + r.len1;
		r.data = (const uint8_t *)r.name2 + r.len2;
		if (log->n == ncap) {
			ncap = ncap ? ncap * 2 : 4096;
			struct oplog_rec *g = realloc(log->recs, ncap * sizeof(*g));
			if (!g) {
				rc = -ENOMEM;
				goto out;
			}
			log->recs = g;
		}
		log->recs[log->n++] = r;
		off += HDR_LEN + body;
	}
out:
	if (rc)
		oplog_free(log);
	return rc;
}

void oplog_free(struct oplog *log)
{
	free(log->buf);
	free(log->recs);
	memset(log, 0, sizeof(*log));
}

void oplog_describe(const struct oplog_rec *r, char *out, size_t cap)
{
	static const char *const names[] = {
		"?", "MKNODE", "LINK", "UNLINK", "RENAME", "WRITE", "TRUNC", "PUNCH",
		"FSYNC", "FSYNCDIR", "MARK",
	};
	const char *t = r->type <= OPLOG_MARK ? names[r->type] : "?";
	switch (r->type) {
	case OPLOG_MKNODE:
		snprintf(out, cap, "%s ino %llu %s", t, (unsigned long long)r->a,
			 r->b == OPLOG_DIR ? "dir" : "file");
		break;
	case OPLOG_LINK:
		snprintf(out, cap, "%s dir %llu '%.*s' -> ino %llu", t, (unsigned long long)r->a,
			 (int)r->len1, r->name1, (unsigned long long)r->b);
		break;
	case OPLOG_UNLINK:
		snprintf(out, cap, "%s dir %llu '%.*s'", t, (unsigned long long)r->a,
			 (int)r->len1, r->name1);
		break;
	case OPLOG_RENAME:
		snprintf(out, cap, "%s dir %llu '%.*s' -> '%.*s'", t, (unsigned long long)r->a,
			 (int)r->len1, r->name1, (int)r->len2, r->name2);
		break;
	case OPLOG_WRITE:
		snprintf(out, cap, "%s ino %llu off %llu len %u", t, (unsigned long long)r->a,
			 (unsigned long long)r->b, r->dlen);
		break;
	case OPLOG_TRUNC:
		snprintf(out, cap, "%s ino %llu size %llu", t, (unsigned long long)r->a,
			 (unsigned long long)r->b);
		break;
	case OPLOG_PUNCH:
		snprintf(out, cap, "%s ino %llu off %llu len %llu", t, (unsigned long long)r->a,
			 (unsigned long long)r->b, (unsigned long long)r->c);
		break;
	case OPLOG_FSYNC:
		snprintf(out, cap, "%s ino %llu%s", t, (unsigned long long)r->a,
			 r->b ? " (fdatasync)" : "");
		break;
	case OPLOG_FSYNCDIR:
		snprintf(out, cap, "%s dir %llu", t, (unsigned long long)r->a);
		break;
	default:
		snprintf(out, cap, "%s '%.*s'", t, (int)r->len1, r->name1);
		break;
	}
}
