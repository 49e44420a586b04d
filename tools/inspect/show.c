/*
 * show.c: the store's keys and records in words (fs/SCHEMA.md, "Keys of
 * the metadata store"), and the commands that walk them: keys, stat, ls.
 * A value that does not decode is printed in hex with "(does not
 * decode)"; nothing here trusts the store.
 */
#include "inspect.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void insp_escape(char *out, size_t cap, const void *p, size_t n)
{
	const unsigned char *s = p;
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
			out[o++] = (char)s[i];
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", s[i]);
	}
	out[o] = '\0';
}

static void hex(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 3 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", p[i]);
	out[o] = '\0';
}

static const char *type_word(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "chardev";
	case S_IFBLK: return "blockdev";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	default: return "no-type";
	}
}

static void describe_inode(const uint8_t *v, size_t vl, char *out, size_t cap)
{
	struct inode_rec r;
	if (inode_rec_decode(v, vl, &r)) {
		char h[2 * INODE_REC_LEN + 1];
		hex(h, sizeof(h), v, vl < INODE_REC_LEN ? vl : INODE_REC_LEN);
		snprintf(out, cap, "%s (does not decode, %zu bytes)", h, vl);
		return;
	}
	snprintf(out, cap,
		 "%s %04o uid %u gid %u nlink %u size %" PRIu64 " flags %s%s parent %" PRIu64
		 " gen %" PRIu64,
		 type_word(r.mode), (unsigned)(r.mode & 07777), r.uid, r.gid, r.nlink, r.size,
		 r.flags & INODE_FLAG_CHUNKED ? "chunked" : "inline",
		 r.flags & INODE_FLAG_XATTR ? ",xattr" : "", r.parent, r.generation);
}

void insp_describe(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl, char *out,
		   size_t cap)
{
	char a[600], b[700];
	uint64_t id = kl >= 9 ? sc_get_be64(k + 1) : 0;
	switch (kl ? k[0] : 0) {
	case KEY_INODE:
		if (kl != 9)
			break;
		describe_inode(v, vl, b, sizeof(b));
		snprintf(out, cap, "I %" PRIu64 " -> %s", id, b);
		return;
	case KEY_DIRENT: {
		uint64_t ino;
		uint8_t type;
		if (kl < 18)
			break;
		insp_escape(a, sizeof(a), k + 17, kl - 17);
		if (dirent_val_decode(v, vl, &ino, &type))
			snprintf(b, sizeof(b), "%zu bytes (does not decode)", vl);
		else
			snprintf(b, sizeof(b), "ino %" PRIu64 " type %s", ino,
				 type_word((uint32_t)type << 12));
		snprintf(out, cap, "D %" PRIu64 " %016" PRIx64 " \"%s\" -> %s", id, sc_get_be64(k + 9), a,
			 b);
		return;
	}
	case KEY_XATTR:
		if (kl < 10)
			break;
		insp_escape(a, sizeof(a), k + 9, kl - 9);
		snprintf(out, cap, "X %" PRIu64 " \"%s\" -> %zu bytes", id, a, vl);
		return;
	case KEY_DATA:
		if (kl != 9)
			break;
		snprintf(out, cap, "F %" PRIu64 " -> %zu bytes inline", id, vl);
		return;
	case KEY_CHUNK:
		if (kl != 17)
			break;
		snprintf(out, cap, "C %" PRIu64 " %" PRIu64 " -> chunk record%s", id, sc_get_be64(k + 9),
			 vl ? " (value not empty)" : "");
		return;
	case KEY_ORPHAN:
		if (kl != 9)
			break;
		snprintf(out, cap, "O %" PRIu64 " -> orphan", id);
		return;
	case KEY_SECTION:
		if (kl != 5)
			break;
		if (vl == 4)
			snprintf(out, cap, "P %u -> disk %u", sc_get_be32(k + 1), sc_get_le32(v));
		else
			snprintf(out, cap, "P %u -> %zu bytes (does not decode)", sc_get_be32(k + 1), vl);
		return;
	case KEY_DISK:
		if (kl != 5)
			break;
		if (vl >= 16) {
			char u[37];
			lsmfs_uuid_format(v, u);
			insp_escape(a, sizeof(a), v + 16, vl - 16);
			snprintf(out, cap, "K %u -> disk %s, last at %s", sc_get_be32(k + 1), u, a);
		} else {
			snprintf(out, cap, "K %u -> %zu bytes (does not decode)", sc_get_be32(k + 1), vl);
		}
		return;
	case KEY_META: {
		insp_escape(a, sizeof(a), k + 1, kl - 1);
		struct fs_info fi;
		if (kl == 1 + strlen(META_NEXT_INO) && !memcmp(k + 1, META_NEXT_INO, kl - 1) && vl == 8) {
			snprintf(out, cap, "M %s -> %" PRIu64, a, sc_get_le64(v));
		} else if (kl == 1 + strlen(META_FS) && !memcmp(k + 1, META_FS, kl - 1) &&
			   fs_info_decode(v, vl, &fi) == 0) {
			char u[37];
			lsmfs_uuid_format(fi.fs_uuid, u);
			snprintf(out, cap,
				 "M %s -> version %u uuid %s sections %u chunk %" PRIu64
				 " inline %u disks %u label \"%s\"",
				 a, fi.version, u, fi.sections, fi.chunk_size, fi.inline_max, fi.ndisks,
				 fi.label);
		} else {
			hex(b, sizeof(b), v, vl < 64 ? vl : 64);
			snprintf(out, cap, "M %s -> %s%s", a, b, vl > 64 ? "..." : "");
		}
		return;
	}
	}
	hex(a, sizeof(a), k, kl < 256 ? kl : 256);
	hex(b, sizeof(b), v, vl < 64 ? vl : 64);
	snprintf(out, cap, "%s -> %s%s (key does not parse)", a, b, vl > 64 ? "..." : "");
}

/* A command's end: the store error it met, if any. */
static int command_end(struct insp *in, int rc)
{
	if (!rc)
		return INSPECT_EXIT_OK;
	fprintf(stderr, "lsmfs-inspect: %s: reading the store: %s\n", in->ds->meta_dir,
		strerror(-rc));
	return INSPECT_EXIT_OPERATIONAL;
}

/* "I", "C 12", "D 1", "P 5", "M fs": the bytes every key it names starts
 * with.  -EINVAL for anything else. */
static int parse_prefix(int argc, char **argv, uint8_t *out, size_t *len)
{
	*len = 0;
	if (argc == 0)
		return 0;
	const char *t = argv[0];
	if (strlen(t) != 1 || !strchr("MKPIDXFCO", t[0]) || argc > 2)
		return -EINVAL;
	out[(*len)++] = (uint8_t)t[0];
	if (argc == 1)
		return 0;
	if (t[0] == KEY_META) {
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
	if (*end || errno || argv[1][0] == '-')
		return -EINVAL;
	if (t[0] == KEY_SECTION || t[0] == KEY_DISK) {
		if (n > UINT32_MAX)
			return -EINVAL;
		sc_put_be32(out + 1, (uint32_t)n);
		*len += 4;
	} else {
		sc_put_be64(out + 1, n);
		*len += 8;
	}
	return 0;
}

int insp_keys(struct insp *in, int argc, char **argv)
{
	uint8_t prefix[KEY_MAX];
	size_t plen;
	if (parse_prefix(argc, argv, prefix, &plen)) {
		fprintf(stderr, "lsmfs-inspect: keys: PREFIX is a key type (M K P I D X F C O), "
				"optionally followed by a number (or a name after M)\n");
		return INSPECT_EXIT_USAGE;
	}
	struct store_iter *it;
	struct store_iter_options io = {.lower = plen ? prefix : NULL, .lower_len = plen};
	int rc = store_iter_new(in->st, &io, &it);
	if (rc)
		goto out;
	uint64_t n = 0;
	char line[2048];
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		if (kl < plen || memcmp(k, prefix, plen))
			break;
		insp_describe(k, kl, v, vl, line, sizeof(line));
		fprintf(in->out, "%s\n", line);
		n++;
	}
	rc = store_iter_status(it);
	store_iter_free(it);
out:
	return command_end(in, rc);
}

static int get_inode(struct insp *in, uint64_t ino, struct inode_rec *r)
{
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	int rc = store_get(in->st, NULL, k, key_inode(k, ino), &v, &vl);
	if (rc)
		return rc;
	rc = inode_rec_decode(v, vl, r);
	free(v);
	return rc;
}

int insp_resolve(struct insp *in, const char *what, uint64_t *ino, char *err, size_t errlen)
{
	struct inode_rec r;
	if (what[0] != '/') {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(what, &end, 10);
		if (*end || errno || !n || what[0] == '-') {
			snprintf(err, errlen, "%s: neither an absolute path nor an inode number", what);
			return -EINVAL;
		}
		*ino = n;
		if (get_inode(in, n, &r)) {
			snprintf(err, errlen, "inode %llu: no such inode (or its record does not decode)", n);
			return -ENOENT;
		}
		return 0;
	}
	uint64_t cur = LSMFS_ROOT_INO;
	const char *p = what;
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (!n)
			break;
		if (n > NAME_MAX_BYTES) {
			snprintf(err, errlen, "%s: a name longer than %d bytes", what, NAME_MAX_BYTES);
			return -ENOENT;
		}
		uint8_t k[KEY_MAX];
		void *v;
		size_t vl;
		uint64_t child;
		uint8_t type;
		int rc = store_get(in->st, NULL, k, key_dirent(k, cur, p, n), &v, &vl);
		if (rc == 0) {
			rc = dirent_val_decode(v, vl, &child, &type);
			free(v);
		}
		if (rc) {
			snprintf(err, errlen, "%s: no entry '%.*s' in directory %" PRIu64, what, (int)n, p,
				 cur);
			return -ENOENT;
		}
		cur = child;
		p += n;
	}
	*ino = cur;
	if (get_inode(in, cur, &r)) {
		snprintf(err, errlen, "%s: inode %" PRIu64 " has no readable record", what, cur);
		return -ENOENT;
	}
	return 0;
}

static void fmt_time(char *out, size_t cap, int64_t sec, uint32_t nsec)
{
	struct tm tm;
	time_t t = (time_t)sec;
	if (!gmtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(out, cap, "%" PRId64, sec);
		return;
	}
	size_t n = strlen(out);
	snprintf(out + n, cap - n, ".%09uZ", nsec);
}

/* A prefix scan: call fn for every key under prefix. */
static int scan(struct insp *in, const uint8_t *prefix, size_t plen,
		void (*fn)(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
			   void *ctx),
		void *ctx)
{
	struct store_iter *it;
	struct store_iter_options io = {.lower = prefix, .lower_len = plen};
	int rc = store_iter_new(in->st, &io, &it);
	if (rc)
		return rc;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = store_iter_key(it, &kl);
		const uint8_t *v = store_iter_value(it, &vl);
		if (kl < plen || memcmp(k, prefix, plen))
			break;
		fn(in, k, kl, v, vl, ctx);
	}
	rc = store_iter_status(it);
	store_iter_free(it);
	return rc;
}

struct stat_ctx {
	struct json *j;
	uint64_t n, bytes_on_disk;
};

static void show_chunk(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
		       void *ctx)
{
	(void)v, (void)vl;
	struct stat_ctx *c = ctx;
	if (kl != 17)
		return;
	uint64_t ino = sc_get_be64(k + 1), chunk = sc_get_be64(k + 9);
	uint32_t s = chunk_section(ino, chunk, in->info.sections);
	uint32_t d = in->section_disk[s];
	char path[LSMFS_META_PATH_MAX + 200] = "";
	struct stat st;
	int64_t len = -1;
	if (d < in->ds->ndisks) {
		snprintf(path, sizeof(path), "%s/%s/%s/%u/%" PRIu64 ".%" PRIu64, in->ds->paths[d],
			 LSMFS_DIR, LSMFS_SECTIONS_DIR, s, ino, chunk);
		if (stat(path, &st) == 0)
			len = st.st_size;
	}
	c->n++;
	if (len > 0)
		c->bytes_on_disk += (uint64_t)len;
	if (c->j) {
		json_obj(c->j, NULL);
		json_u64(c->j, "chunk", chunk);
		json_u64(c->j, "section", s);
		if (d < in->ds->ndisks)
			json_u64(c->j, "disk", d);
		json_str(c->j, "path", path);
		json_i64(c->j, "length", len);
		json_close_obj(c->j);
		return;
	}
	if (d >= in->ds->ndisks)
		fprintf(in->out, "  chunk %" PRIu64 ": section %u, which has no disk\n", chunk, s);
	else if (len < 0)
		fprintf(in->out, "  chunk %" PRIu64 ": section %u, disk %u: %s missing (a hole)\n",
			chunk, s, d, path);
	else
		fprintf(in->out, "  chunk %" PRIu64 ": section %u, disk %u: %s %" PRId64 " bytes\n",
			chunk, s, d, path, len);
}

static void show_xattr(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
		       void *ctx)
{
	(void)v;
	struct stat_ctx *c = ctx;
	char name[600];
	insp_escape(name, sizeof(name), k + 9, kl - 9);
	c->n++;
	if (c->j) {
		json_obj(c->j, NULL);
		json_bytes(c->j, "name", k + 9, kl - 9);
		json_u64(c->j, "bytes", vl);
		json_close_obj(c->j);
	} else {
		fprintf(in->out, "  xattr %s: %zu bytes\n", name, vl);
	}
}

/* The inode a command names, with its record; else the exit code, after
 * saying why. */
static int command_inode(struct insp *in, const char *what, uint64_t *ino, struct inode_rec *r)
{
	char err[1200];
	int rc = insp_resolve(in, what, ino, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "lsmfs-inspect: %s\n", err);
		return rc == -EINVAL ? INSPECT_EXIT_USAGE : INSPECT_EXIT_NOT_FOUND;
	}
	return get_inode(in, *ino, r) ? INSPECT_EXIT_NOT_FOUND : INSPECT_EXIT_OK;
}

int insp_stat(struct insp *in, const char *what)
{
	uint64_t ino;
	struct inode_rec r;
	int rc = command_inode(in, what, &ino, &r);
	if (rc)
		return rc;
	uint8_t k[KEY_MAX];
	void *v = NULL;
	size_t vl = 0;
	int64_t inline_len = -1;
	if (store_get(in->st, NULL, k, key_data(k, ino), &v, &vl) == 0)
		inline_len = (int64_t)vl;
	char target[600] = "";
	if (S_ISLNK(r.mode) && v)
		insp_escape(target, sizeof(target), v, vl);
	free(v);
	static const char *tn[4] = {"atime", "mtime", "ctime", "btime"};
	int64_t secs[4] = {r.atime_sec, r.mtime_sec, r.ctime_sec, r.btime_sec};
	uint32_t nsecs[4] = {r.atime_nsec, r.mtime_nsec, r.ctime_nsec, r.btime_nsec};
	char times[4][64];
	for (int i = 0; i < 4; i++)
		fmt_time(times[i], sizeof(times[i]), secs[i], nsecs[i]);

	struct json j;
	struct stat_ctx chunks = {0}, xattrs = {0};
	if (in->json) {
		json_begin(&j, in->out);
		json_u64(&j, "inode", ino);
		json_str(&j, "type", type_word(r.mode));
		json_u64(&j, "mode", r.mode);
		json_u64(&j, "uid", r.uid);
		json_u64(&j, "gid", r.gid);
		json_u64(&j, "nlink", r.nlink);
		json_u64(&j, "size", r.size);
		json_u64(&j, "blocks", r.blocks);
		json_u64(&j, "rdev", r.rdev);
		json_u64(&j, "generation", r.generation);
		json_u64(&j, "parent", r.parent);
		json_u64(&j, "flags", r.flags);
		for (int i = 0; i < 4; i++)
			json_str(&j, tn[i], times[i]);
		json_i64(&j, "inline_bytes", inline_len);
		if (S_ISLNK(r.mode))
			json_str(&j, "target", target);
		chunks.j = xattrs.j = &j;
		json_arr(&j, "chunks");
	} else {
		fprintf(in->out,
			"inode %" PRIu64 ": %s, mode %04o, uid %u, gid %u, nlink %u\n"
			"  size %" PRIu64 ", blocks %" PRIu64 ", rdev %" PRIu64 ", generation %" PRIu64
			", parent %" PRIu64 ", flags %u (%s%s)\n",
			ino, type_word(r.mode), (unsigned)(r.mode & 07777), r.uid, r.gid, r.nlink,
			r.size, r.blocks, r.rdev, r.generation, r.parent, r.flags,
			r.flags & INODE_FLAG_CHUNKED ? "chunked" : "inline",
			r.flags & INODE_FLAG_XATTR ? ", xattrs" : "");
		for (int i = 0; i < 4; i++)
			fprintf(in->out, "  %s %s\n", tn[i], times[i]);
		if (S_ISLNK(r.mode))
			fprintf(in->out, "  target \"%s\"\n", target);
		else if (inline_len >= 0)
			fprintf(in->out, "  inline data: %" PRId64 " bytes\n", inline_len);
	}
	rc = scan(in, k, key_chunk_prefix(k, ino), show_chunk, &chunks);
	if (in->json) {
		json_close_arr(&j);
		json_arr(&j, "xattrs");
	} else if (chunks.n) {
		fprintf(in->out, "  %" PRIu64 " chunk%s, %" PRIu64 " bytes on the disks\n", chunks.n,
			chunks.n == 1 ? "" : "s", chunks.bytes_on_disk);
	}
	if (rc == 0)
		rc = scan(in, k, key_xattr_prefix(k, ino), show_xattr, &xattrs);
	if (in->json) {
		json_close_arr(&j);
		json_end(&j);
	}
	return command_end(in, rc);
}

static void show_entry(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
		       void *ctx)
{
	struct stat_ctx *c = ctx;
	uint64_t ino;
	uint8_t type;
	if (kl < 18 || dirent_val_decode(v, vl, &ino, &type))
		return;
	struct inode_rec r;
	bool ok = get_inode(in, ino, &r) == 0;
	char name[1100];
	insp_escape(name, sizeof(name), k + 17, kl - 17);
	c->n++;
	if (c->j) {
		json_obj(c->j, NULL);
		json_bytes(c->j, "name", k + 17, kl - 17);
		json_u64(c->j, "inode", ino);
		json_str(c->j, "type", type_word((uint32_t)type << 12));
		if (ok)
			json_u64(c->j, "size", r.size);
		json_close_obj(c->j);
		return;
	}
	char size[32] = "?";
	if (ok)
		snprintf(size, sizeof(size), "%" PRIu64, r.size);
	fprintf(in->out, "%10" PRIu64 " %-8s %12s %s\n", ino, type_word((uint32_t)type << 12), size,
		name);
}

int insp_ls(struct insp *in, const char *what)
{
	uint64_t ino;
	struct inode_rec r;
	int rc = command_inode(in, what, &ino, &r);
	if (rc)
		return rc;
	if (!S_ISDIR(r.mode)) {
		fprintf(stderr, "lsmfs-inspect: %s: inode %" PRIu64 " is not a directory\n", what, ino);
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
	rc = scan(in, k, key_dirent_prefix(k, ino), show_entry, &c);
	if (in->json) {
		json_close_arr(&j);
		json_end(&j);
	}
	return command_end(in, rc);
}
