/*
 * show.c: the commands that walk the store's keys: keys (every key in
 * words), stat (one inode: its record, inline data, chunks and xattrs) and
 * ls (a directory's entries), with the path resolution they share (from
 * the root, one directory entry per component, fs/SCHEMA.md "Directory
 * entries").  An inode whose record does not decode is still shown: its
 * bytes in hex, then whatever else it has.
 */
#include "inspect.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int insp_command_end(struct insp *in, int rc)
{
	if (!rc)
		return INSPECT_EXIT_OK;
	fprintf(stderr, INSPECT_PROG ": %s: reading the store: %s\n", in->ds->meta_dir,
		strerror(-rc));
	return INSPECT_EXIT_OPERATIONAL;
}

int insp_scan(struct insp *in, const uint8_t *prefix, size_t plen, insp_scan_fn *fn, void *ctx)
{
	struct store_iter *it;
	struct store_iter_options io = {.lower = plen ? prefix : NULL, .lower_len = plen};
	int rc = store_iter_new(in->st, &io, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		if (kl < plen || (plen && memcmp(k, prefix, plen)))
			break;
		fn(in, k, kl, v, vl, ctx);
	}
	rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

/* ---- keys ---- */

static int unhex(const char *s, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = strlen(s);
	if (n % 2 || n / 2 > cap)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int c = s[i], d = c >= '0' && c <= '9'   ? c - '0'
				  : c >= 'a' && c <= 'f' ? c - 'a' + 10
				  : c >= 'A' && c <= 'F' ? c - 'A' + 10
							 : -1;
		if (d < 0)
			return -EINVAL;
		if (i % 2 == 0)
			out[i / 2] = (uint8_t)(d << 4);
		else
			out[i / 2] |= (uint8_t)d;
	}
	*len = n / 2;
	return 0;
}

/* "I", "C 12", "D 1", "P 5", "M fs": the bytes every key it names starts
 * with; or the bytes of --raw HEX.  -EINVAL for anything else. */
static int parse_prefix(struct insp *in, int argc, char **argv, uint8_t *out, size_t *len)
{
	*len = 0;
	if (in->raw_prefix)
		return argc ? -EINVAL : unhex(in->raw_prefix, out, KEY_MAX, len);
	if (argc == 0)
		return 0;
	const char *t = argv[0];
	const struct key_type_info *type = strlen(t) == 1 ? key_type_find(t[0]) : NULL;
	if (!type || argc > 2)
		return -EINVAL;
	out[(*len)++] = (uint8_t)t[0];
	if (argc == 1)
		return 0;
	if (type->id == KEY_ID_NONE) { /* M: a name */
		size_t n = strlen(argv[1]);
		if (n > KEY_MAX - 1)
			return -EINVAL;
		memcpy(out + 1, argv[1], n);
		*len += n;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long n = strtoull(argv[1], &end, 10);
	if (*end || errno || argv[1][0] < '0' || argv[1][0] > '9')
		return -EINVAL;
	if (type->id_len == 4) { /* P, K */
		if (n > UINT32_MAX)
			return -EINVAL;
		put_be32(out + 1, (uint32_t)n);
	} else {
		put_be64(out + 1, n);
	}
	*len += type->id_len;
	return 0;
}

struct keys_ctx {
	struct json *j;
	uint64_t n;
};

static void show_key(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
		     void *ctx)
{
	struct keys_ctx *c = ctx;
	char line[2048];
	insp_describe(in, k, kl, v, vl, line, sizeof(line));
	c->n++;
	if (!c->j) {
		fprintf(in->out, "%s\n", line);
		return;
	}
	json_obj(c->j, NULL);
	json_hex(c->j, "key", k, kl);
	json_u64(c->j, "value_bytes", vl);
	json_str(c->j, "text", line);
	json_close_obj(c->j);
}

int insp_keys(struct insp *in, int argc, char **argv)
{
	uint8_t prefix[KEY_MAX];
	size_t plen;
	if (parse_prefix(in, argc, argv, prefix, &plen)) {
		char letters[64];
		size_t o = 0;
		for (size_t i = 0; i < key_types_count && o + 3 <= sizeof(letters); i++)
			o += (size_t)snprintf(letters + o, sizeof(letters) - o, "%s%c", i ? " " : "",
					      key_types[i].letter);
		fprintf(stderr, INSPECT_PROG ": keys: the prefix is a key type (%s), "
				"optionally followed by a number (or a name after M), or --raw HEX "
				"alone\n", letters);
		return INSPECT_EXIT_USAGE;
	}
	struct json j;
	struct keys_ctx c = {0};
	if (in->json) {
		json_begin(&j, in->out);
		json_arr(&j, "keys");
		c.j = &j;
	}
	int rc = insp_scan(in, prefix, plen, show_key, &c);
	if (in->json) {
		json_close_arr(&j);
		json_u64(&j, "count", c.n);
		json_end(&j);
	}
	return insp_command_end(in, rc);
}

/* ---- resolving a path or an inode number ---- */

/* The record of ino: 0, -ENOENT (no record) or -EUCLEAN (one that does
 * not decode; *raw and *rawlen then hold its bytes, to free). */
static int get_inode(struct insp *in, uint64_t ino, struct inode_rec *r, void **raw,
		     size_t *rawlen)
{
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	if (raw)
		*raw = NULL;
	int rc = store_get(in->st, NULL, k, key_inode(k, ino), &v, &vl);
	if (rc)
		return rc;
	rc = inode_rec_decode(v, vl, r) ? -EUCLEAN : 0;
	if (rc && raw) {
		*raw = v;
		*rawlen = vl;
	} else {
		free(v);
	}
	return rc;
}

/*
 * Resolve an absolute path ("/a/b"; "." and ".." as usual, ".." of the
 * root is the root) or a decimal inode number to an inode that has a
 * record (which need not decode).  Errors: -EINVAL neither, -ENOENT none
 * (with the reason in err), other negative errnos from the store.
 */
static int resolve(struct insp *in, const char *what, uint64_t *ino, char *err, size_t errlen)
{
	struct inode_rec r;
	if (what[0] != '/') {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(what, &end, 10);
		if (*end || errno || !n || what[0] < '0' || what[0] > '9') {
			snprintf(err, errlen, "%s: neither an absolute path nor an inode number", what);
			return -EINVAL;
		}
		*ino = n;
		int rc = get_inode(in, n, &r, NULL, NULL);
		if (rc == -ENOENT)
			snprintf(err, errlen, "inode %llu: no such inode", n);
		return rc == -EUCLEAN ? 0 : rc;
	}
	uint64_t cur = LSMFS_ROOT_INO;
	const char *p = what;
	for (;;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (!n)
			break;
		int rc;
		if (n == 1 && p[0] == '.') {
			rc = 0;
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			rc = get_inode(in, cur, &r, NULL, NULL);
			if (rc == 0 && !S_ISDIR(r.mode))
				rc = -ENOENT;
			if (rc == -ENOENT || rc == -EUCLEAN) {
				snprintf(err, errlen, "%s: cannot go up from inode %" PRIu64
					 " (no directory record that decodes)", what, cur);
				return -ENOENT;
			}
			if (rc == 0)
				cur = r.parent;
		} else if (n > NAME_MAX_BYTES) {
			snprintf(err, errlen, "%s: a name longer than %d bytes", what, NAME_MAX_BYTES);
			return -ENOENT;
		} else {
			uint8_t k[KEY_MAX];
			void *v;
			size_t vl;
			uint64_t child = 0;
			uint8_t type;
			rc = store_get(in->st, NULL, k, key_dirent(k, cur, p, n), &v, &vl);
			if (rc == 0) {
				rc = dirent_val_decode(v, vl, &child, &type);
				free(v);
			}
			if (rc == -ENOENT || rc == -EUCLEAN) {
				snprintf(err, errlen, "%s: no entry '%.*s' %sin directory %" PRIu64, what,
					 (int)n, p, rc == -EUCLEAN ? "that decodes " : "", cur);
				return -ENOENT;
			}
			if (rc == 0)
				cur = child;
		}
		if (rc) {
			snprintf(err, errlen, "%s: %s", what, strerror(-rc));
			return rc;
		}
		p += n;
	}
	*ino = cur;
	int rc = get_inode(in, cur, &r, NULL, NULL);
	if (rc == -ENOENT)
		snprintf(err, errlen, "%s: its entry names inode %" PRIu64 ", which has no record",
			 what, cur);
	else if (rc && rc != -EUCLEAN)
		snprintf(err, errlen, "%s: %s", what, strerror(-rc));
	return rc == -EUCLEAN ? 0 : rc;
}

/* The inode a command names; its record (*decoded false, *raw its bytes
 * when it does not decode).  Else the exit code, after saying why. */
static int command_inode(struct insp *in, const char *what, uint64_t *ino, struct inode_rec *r,
			 bool *decoded, void **raw, size_t *rawlen)
{
	char err[1200];
	int rc = resolve(in, what, ino, err, sizeof(err));
	if (rc == 0) {
		rc = get_inode(in, *ino, r, raw, rawlen);
		*decoded = rc == 0;
		if (rc == -EUCLEAN) {
			fprintf(stderr, INSPECT_PROG ": inode %" PRIu64 ": its record does not decode\n",
				*ino);
			return INSPECT_EXIT_OK;
		}
		if (rc)
			snprintf(err, sizeof(err), "%s: %s", what, strerror(-rc));
	}
	if (!rc)
		return INSPECT_EXIT_OK;
	fprintf(stderr, INSPECT_PROG ": %s\n", err);
	if (rc == -EINVAL)
		return INSPECT_EXIT_USAGE;
	return rc == -ENOENT ? INSPECT_EXIT_NOT_FOUND : INSPECT_EXIT_OPERATIONAL;
}

/* ---- stat ---- */

struct stat_ctx {
	struct json *j;
	uint64_t n, bytes_on_disk, missing, copies_stale, copies_missing;
};

/* One copy of a chunk: where its file is, and its length (-1: missing). */
struct copy_at {
	uint32_t section, disk; /* disk UINT32_MAX: the section has no disk here */
	bool stale;             /* its record says it lacks data */
	char path[LSMFS_META_PATH_MAX + 200];
	int64_t len;
};

static void find_copy(const struct insp *in, uint64_t ino, uint64_t chunk, uint32_t s,
		      bool stale, struct copy_at *c)
{
	c->section = s;
	c->disk = in->section_disk[s];
	c->stale = stale;
	c->path[0] = '\0';
	c->len = -1;
	if (!diskset_present(in->ds, c->disk)) {
		c->disk = UINT32_MAX;
		return;
	}
	char root[LSMFS_META_PATH_MAX + 64], rel[96];
	struct stat st;
	section_disk_dir(in->ds->paths[c->disk], root, sizeof(root));
	section_chunk_name(ino, chunk, s, rel, sizeof(rel));
	snprintf(c->path, sizeof(c->path), "%s/%s", root, rel);
	if (stat(c->path, &st) == 0)
		c->len = st.st_size;
}

/* A copy in words: "section S, disk D: PATH N bytes". */
static void say_copy(struct insp *in, const struct copy_at *c, const char *note, bool one)
{
	if (c->disk == UINT32_MAX)
		fprintf(in->out, "section %u%s, which has no disk", c->section, note);
	else if (c->len < 0)
		fprintf(in->out, "section %u%s, disk %u: %s missing%s", c->section, note, c->disk,
			c->path, c->stale ? "" : one ? " (a hole)" : "");
	else
		fprintf(in->out, "section %u%s, disk %u: %s %" PRId64 " bytes", c->section, note,
			c->disk, c->path, c->len);
	if (c->stale)
		fprintf(in->out, " (stale: lacks data, not read)");
	fputc('\n', in->out);
}

/* A chunk: its files in the section its record names, else the hash's
 * (SCHEMA.md "Chunk checksums"), and with two copies copy 1's in that
 * section's partner ("Copies"); for a record that names a section past
 * the count, or does not decode, the hash's is looked at and the record
 * said to be damaged. */
static void show_chunk(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
		       void *ctx)
{
	struct stat_ctx *c = ctx;
	struct key_parts kp;
	if (key_parse(k, kl, &kp) != 0 || kp.type->letter != KEY_CHUNK)
		return;
	uint64_t ino = kp.id, chunk = kp.sub;
	struct chunk_value cv;
	struct chunk_place pl;
	bool decodes = chunk_value_parse(v, vl, &cv) == 0;
	bool damaged = chunk_value_place(v, vl, ino, chunk, in->info.sections, &pl) != 0;
	bool placed = decodes && cv.section != CHUNK_HASHED;
	bool past = damaged && decodes && cv.section >= in->info.sections;
	char note[120] = "";
	if (past)
		snprintf(note, sizeof(note), " (its record names section %u, past the %u; by the hash)",
			 cv.section, in->info.sections);
	else if (damaged && decodes)
		snprintf(note, sizeof(note), " (its record gives %u copies, but the section has no "
			 "partner)", cv.copies);
	else if (damaged)
		snprintf(note, sizeof(note), " (its record does not decode; by the hash)");
	struct copy_at cp[CHUNK_MAX_COPIES];
	unsigned n = pl.copies <= CHUNK_MAX_COPIES ? pl.copies : CHUNK_MAX_COPIES;
	bool any = false;
	for (unsigned i = 0; i < n; i++) {
		find_copy(in, ino, chunk, section_of_copy(pl.section, i, in->info.sections),
			  pl.stale >> i & 1, &cp[i]);
		if (cp[i].len >= 0)
			c->bytes_on_disk += (uint64_t)cp[i].len;
		any |= cp[i].len >= 0 && !cp[i].stale;
		c->copies_stale += cp[i].stale;
	}
	for (unsigned i = 0; i < n && any; i++)
		c->copies_missing += !cp[i].stale && cp[i].len < 0 && cp[i].disk != UINT32_MAX;
	c->n++;
	c->missing += !any;
	if (c->j) {
		json_obj(c->j, NULL);
		json_u64(c->j, "chunk", chunk);
		json_u64(c->j, "section", pl.section);
		json_bool(c->j, "placed", placed); /* the record names the section */
		if (past)
			json_u64(c->j, "section_named", cv.section); /* past the count */
		json_bool(c->j, "record_damaged", damaged);
		/* copy 0's, as before copies */
		if (cp[0].disk != UINT32_MAX)
			json_u64(c->j, "disk", cp[0].disk);
		else
			json_i64(c->j, "disk", -1);
		json_str(c->j, "path", cp[0].path);
		json_i64(c->j, "length", cp[0].len); /* -1: missing */
		if (damaged && decodes && !past)
			json_u64(c->j, "copies_named", cv.copies); /* no partner for them */
		json_arr(c->j, "copies");
		for (unsigned i = 0; i < n; i++) {
			json_obj(c->j, NULL);
			json_u64(c->j, "copy", i);
			json_u64(c->j, "section", cp[i].section);
			if (cp[i].disk != UINT32_MAX)
				json_u64(c->j, "disk", cp[i].disk);
			else
				json_i64(c->j, "disk", -1);
			json_str(c->j, "path", cp[i].path);
			json_i64(c->j, "length", cp[i].len);
			json_bool(c->j, "stale", cp[i].stale);
			json_close_obj(c->j);
		}
		json_close_arr(c->j);
		json_close_obj(c->j);
		return;
	}
	if (n == 1) {
		fprintf(in->out, "  chunk %" PRIu64 ": ", chunk);
		say_copy(in, &cp[0], note, true);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		fprintf(in->out, "  chunk %" PRIu64 " copy %u: ", chunk, i);
		say_copy(in, &cp[i], i ? "" : note, false);
	}
	if (n == 2 && cp[0].disk == cp[1].disk && cp[0].disk != UINT32_MAX)
		fprintf(in->out, "  chunk %" PRIu64 ": both copies on disk %u (fsck.lsmfs: LSMFS-0519)\n",
			chunk, cp[0].disk);
}

static void show_xattr(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
		       void *ctx)
{
	struct stat_ctx *c = ctx;
	char name[4 * NAME_MAX_BYTES + 1], val[4 * 32 + 1];
	insp_escape(name, sizeof(name), k + 9, kl - 9);
	/* lsmfs's own policies (user.lsmfs.copies, user.lsmfs.placement:
	 * fs/engine/attr/policy.c) say how the file's chunks are kept: their
	 * values are shown; anyone else's stay private. */
	static const char own[] = "user.lsmfs.";
	bool policy = kl - 9 > sizeof(own) - 1 && !memcmp(k + 9, own, sizeof(own) - 1) && vl <= 32;
	if (policy)
		insp_escape(val, sizeof(val), v, vl);
	c->n++;
	if (c->j) {
		json_obj(c->j, NULL);
		json_bytes(c->j, "name", k + 9, kl - 9);
		json_u64(c->j, "bytes", vl);
		if (policy)
			json_bytes(c->j, "value", v, vl);
		json_close_obj(c->j);
	} else if (policy) {
		fprintf(in->out, "  xattr %s: %zu bytes: %s\n", name, vl, val);
	} else {
		fprintf(in->out, "  xattr %s: %zu bytes\n", name, vl);
	}
}

static void stat_record(struct insp *in, struct json *j, uint64_t ino, const struct inode_rec *r,
			int64_t inline_len, const char *target)
{
	static const char *const tn[4] = {"atime", "mtime", "ctime", "btime"};
	int64_t secs[4] = {r->atime_sec, r->mtime_sec, r->ctime_sec, r->btime_sec};
	uint32_t nsecs[4] = {r->atime_nsec, r->mtime_nsec, r->ctime_nsec, r->btime_nsec};
	char times[4][64];
	for (int i = 0; i < 4; i++)
		insp_format_time(times[i], sizeof(times[i]), secs[i], nsecs[i]);
	if (j) {
		char mode[16];
		snprintf(mode, sizeof(mode), "%04o", (unsigned)(r->mode & 07777));
		json_str(j, "type", insp_type_word(r->mode));
		json_u64(j, "mode", r->mode);
		json_str(j, "permissions", mode);
		json_u64(j, "uid", r->uid);
		json_u64(j, "gid", r->gid);
		json_u64(j, "nlink", r->nlink);
		json_u64(j, "size", r->size);
		json_u64(j, "blocks", r->blocks);
		json_u64(j, "rdev", r->rdev);
		json_u64(j, "generation", r->generation);
		json_u64(j, "parent", r->parent);
		json_u64(j, "flags", r->flags);
		json_bool(j, "chunked", r->flags & INODE_FLAG_CHUNKED);
		for (int i = 0; i < 4; i++) {
			json_obj(j, tn[i]);
			json_i64(j, "sec", secs[i]);
			json_u64(j, "nsec", nsecs[i]);
			json_str(j, "utc", times[i]);
			json_close_obj(j);
		}
		json_i64(j, "inline_bytes", inline_len); /* -1: no F key */
		if (S_ISLNK(r->mode))
			json_str(j, "target", target);
		return;
	}
	fprintf(in->out,
		"inode %" PRIu64 ": %s, mode %04o, uid %u, gid %u, nlink %u\n"
		"  size %" PRIu64 ", blocks %" PRIu64 ", rdev %" PRIu64 ", generation %" PRIu64
		", parent %" PRIu64 ", flags %u (%s%s)\n",
		ino, insp_type_word(r->mode), (unsigned)(r->mode & 07777), r->uid, r->gid, r->nlink,
		r->size, r->blocks, r->rdev, r->generation, r->parent, r->flags,
		r->flags & INODE_FLAG_CHUNKED ? "chunked" : "inline",
		r->flags & INODE_FLAG_XATTR ? ", xattrs" : "");
	for (int i = 0; i < 4; i++)
		fprintf(in->out, "  %s %s\n", tn[i], times[i]);
	if (S_ISLNK(r->mode))
		fprintf(in->out, "  target \"%s\"\n", target);
	else if (inline_len >= 0)
		fprintf(in->out, "  inline data: %" PRId64 " bytes\n", inline_len);
}

int insp_stat(struct insp *in, const char *what)
{
	uint64_t ino;
	struct inode_rec r;
	bool decoded;
	void *raw = NULL;
	size_t rawlen = 0;
	int rc = command_inode(in, what, &ino, &r, &decoded, &raw, &rawlen);
	if (rc)
		return rc;
	uint8_t k[KEY_MAX];
	void *v = NULL;
	size_t vl = 0;
	int64_t inline_len = -1;
	rc = store_get(in->st, NULL, k, key_data(k, ino), &v, &vl);
	if (rc && rc != -ENOENT) {
		free(raw);
		return insp_command_end(in, rc);
	}
	if (rc == 0)
		inline_len = (int64_t)vl;
	char target[4 * 4096 + 1] = "";
	if (v && decoded && S_ISLNK(r.mode))
		insp_escape(target, sizeof(target), v, vl);
	free(v);

	struct json j;
	struct stat_ctx chunks = {0}, xattrs = {0};
	if (in->json) {
		json_begin(&j, in->out);
		json_u64(&j, "inode", ino);
		json_bool(&j, "record_decodes", decoded);
		chunks.j = xattrs.j = &j;
	}
	if (decoded) {
		stat_record(in, chunks.j, ino, &r, inline_len, target);
	} else {
		char h[2 * 512 + 1];
		insp_hex(h, sizeof(h), raw, rawlen);
		if (in->json) {
			json_hex(&j, "record", raw, rawlen);
			json_i64(&j, "inline_bytes", inline_len);
		} else {
			fprintf(in->out, "inode %" PRIu64 ": record of %zu bytes does not decode: %s%s\n",
				ino, rawlen, h, rawlen > 512 ? "..." : "");
			if (inline_len >= 0)
				fprintf(in->out, "  inline data (F key): %" PRId64 " bytes\n", inline_len);
		}
	}
	if (in->json)
		json_arr(&j, "chunks");
	rc = insp_scan(in, k, key_chunk_prefix(k, ino), show_chunk, &chunks);
	if (in->json) {
		json_close_arr(&j);
		json_u64(&j, "chunk_bytes_on_disks", chunks.bytes_on_disk);
		json_u64(&j, "chunks_missing", chunks.missing);
		json_u64(&j, "copies_stale", chunks.copies_stale);
		json_u64(&j, "copies_missing", chunks.copies_missing);
		json_arr(&j, "xattrs");
	} else if (chunks.n) {
		fprintf(in->out, "  %" PRIu64 " chunk%s, %" PRIu64 " bytes on the disks%s", chunks.n,
			chunks.n == 1 ? "" : "s", chunks.bytes_on_disk,
			chunks.missing ? ", some missing" : "");
		if (chunks.copies_stale || chunks.copies_missing)
			fprintf(in->out, "; copies: %" PRIu64 " stale, %" PRIu64 " missing",
				chunks.copies_stale, chunks.copies_missing);
		fputc('\n', in->out);
	}
	if (rc == 0)
		rc = insp_scan(in, k, key_xattr_prefix(k, ino), show_xattr, &xattrs);
	if (in->json) {
		json_close_arr(&j);
		json_end(&j);
	}
	free(raw);
	return insp_command_end(in, rc);
}

/* ---- ls ---- */

static void show_entry(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
		       void *ctx)
{
	struct stat_ctx *c = ctx;
	struct key_parts kp;
	if (key_parse(k, kl, &kp) != 0 || kp.type->letter != KEY_DIRENT)
		return; /* keys shows it */
	uint64_t ino = 0;
	uint8_t type = 0;
	bool entry_ok = dirent_val_decode(v, vl, &ino, &type) == 0;
	struct inode_rec r;
	bool rec_ok = entry_ok && get_inode(in, ino, &r, NULL, NULL) == 0;
	char name[4 * NAME_MAX_BYTES + 1];
	insp_escape(name, sizeof(name), kp.tail, kp.tail_len);
	c->n++;
	if (c->j) {
		json_obj(c->j, NULL);
		json_bytes(c->j, "name", kp.tail, kp.tail_len);
		json_bool(c->j, "entry_decodes", entry_ok);
		if (entry_ok) {
			json_u64(c->j, "inode", ino);
			json_str(c->j, "type", insp_type_word((uint32_t)type << 12));
		}
		if (rec_ok)
			json_u64(c->j, "size", r.size);
		json_close_obj(c->j);
		return;
	}
	char inos[24] = "?", size[24] = "?";
	if (entry_ok)
		snprintf(inos, sizeof(inos), "%" PRIu64, ino);
	if (rec_ok)
		snprintf(size, sizeof(size), "%" PRIu64, r.size);
	fprintf(in->out, "%10s %-8s %12s %s%s\n", inos,
		entry_ok ? insp_type_word((uint32_t)type << 12) : "?", size, name,
		entry_ok ? "" : "  (entry does not decode)");
}

int insp_ls(struct insp *in, const char *what)
{
	uint64_t ino;
	struct inode_rec r;
	bool decoded;
	int rc = command_inode(in, what, &ino, &r, &decoded, NULL, NULL);
	if (rc)
		return rc;
	if (decoded && !S_ISDIR(r.mode)) {
		fprintf(stderr, INSPECT_PROG ": %s: inode %" PRIu64 " is not a directory\n", what, ino);
		return INSPECT_EXIT_NOT_FOUND;
	}
	struct json j;
	struct stat_ctx c = {0};
	if (in->json) {
		json_begin(&j, in->out);
		json_u64(&j, "inode", ino);
		json_arr(&j, "entries");
		c.j = &j;
	}
	uint8_t k[KEY_MAX];
	rc = insp_scan(in, k, key_dirent_prefix(k, ino), show_entry, &c);
	if (in->json) {
		json_close_arr(&j);
		json_end(&j);
	}
	return insp_command_end(in, rc);
}
