/*
 * describe.c: the metadata store's keys and records in words, exactly as
 * fs/SCHEMA.md ("Keys of the metadata store") lays them out, one line per
 * key: "I 12 -> dir 0755 uid 0 ...", "D 1 <hash> "name" -> ino 12 type dir".
 * A value that does not decode is shown in hex with "(does not decode)", a
 * key that does not parse likewise; every length is checked before a byte
 * is read, so damaged data prints and never crashes.  Pure functions.
 */
#include "inspect.h"

#include <inttypes.h>
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
	if (cap)
		out[o] = '\0';
}

void insp_hex(char *out, size_t cap, const void *p, size_t n)
{
	const uint8_t *s = p;
	size_t o = 0;
	for (size_t i = 0; i < n && o + 3 <= cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", s[i]);
	if (cap)
		out[o] = '\0';
}

const char *insp_type_word(uint32_t mode)
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

void insp_format_time(char *out, size_t cap, int64_t sec, int64_t nsec)
{
	struct tm tm;
	time_t t = (time_t)sec;
	if (!gmtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(out, cap, "%" PRId64 "s", sec);
		return;
	}
	size_t n = strlen(out);
	if (nsec >= 0)
		snprintf(out + n, cap - n, ".%09" PRId64 "Z", nsec);
	else
		snprintf(out + n, cap - n, "Z");
}

static void describe_inode(const uint8_t *v, size_t vl, char *out, size_t cap)
{
	struct inode_rec r;
	if (inode_rec_decode(v, vl, &r)) {
		char h[2 * INODE_REC_LEN + 1];
		insp_hex(h, sizeof(h), v, vl < INODE_REC_LEN ? vl : INODE_REC_LEN);
		snprintf(out, cap, "%s%s (does not decode, %zu bytes)", h,
			 vl > INODE_REC_LEN ? "..." : "", vl);
		return;
	}
	snprintf(out, cap,
		 "%s %04o uid %u gid %u nlink %u size %" PRIu64 " blocks %" PRIu64
		 " flags %s%s parent %" PRIu64 " gen %" PRIu64,
		 insp_type_word(r.mode), (unsigned)(r.mode & 07777), r.uid, r.gid, r.nlink, r.size,
		 r.blocks, r.flags & INODE_FLAG_CHUNKED ? "chunked" : "inline",
		 r.flags & INODE_FLAG_XATTR ? ",xattr" : "", r.parent, r.generation);
}

static void describe_dirent(const struct key_parts *kp, const uint8_t *v, size_t vl, char *out,
			    size_t cap)
{
	char name[4 * NAME_MAX_BYTES + 1], val[200];
	uint64_t ino;
	uint8_t type;
	insp_escape(name, sizeof(name), kp->tail, kp->tail_len);
	if (!v)
		val[0] = '\0';
	else if (dirent_val_decode(v, vl, &ino, &type))
		snprintf(val, sizeof(val), "%zu bytes (does not decode)", vl);
	else
		snprintf(val, sizeof(val), "ino %" PRIu64 " type %s", ino,
			 insp_type_word((uint32_t)type << 12));
	/* A hash that is not the name's hides the entry from lookups. */
	char bad[64] = "";
	uint64_t want = dirent_hash((const char *)kp->tail, kp->tail_len);
	if (kp->sub != want)
		snprintf(bad, sizeof(bad), " (the name hashes to %016" PRIx64 ")", want);
	snprintf(out, cap, "D %" PRIu64 " %016" PRIx64 " \"%s\" -> %s%s", kp->id, kp->sub, name,
		 val, bad);
}

static void describe_meta(const uint8_t *k, size_t kl, const uint8_t *v, size_t vl, char *out,
			  size_t cap)
{
	char name[600], b[200];
	struct fs_info fi;
	insp_escape(name, sizeof(name), k + 1, kl - 1);
	bool is_fs = kl == 1 + strlen(META_FS) && !memcmp(k + 1, META_FS, kl - 1);
	bool is_next = kl == 1 + strlen(META_NEXT_INO) && !memcmp(k + 1, META_NEXT_INO, kl - 1);
	bool is_move = kl == 1 + strlen(META_MOVE) && !memcmp(k + 1, META_MOVE, kl - 1);
	bool is_scrub = kl == 1 + strlen(META_SCRUB) && !memcmp(k + 1, META_SCRUB, kl - 1);
	bool is_replace = kl == 1 + strlen(META_REPLACE) && !memcmp(k + 1, META_REPLACE, kl - 1);
	struct section_move m;
	struct replace_record rr;
	struct scrub_record sr;
	if (is_scrub && scrub_record_decode(v, vl, &sr) == 0) {
		const struct scrub_count *c = &sr.count;
		snprintf(out, cap, "M %s -> %s at inode %" PRIu64 " chunk %" PRIu64 ": %" PRIu64
			 " chunks, %" PRIu64 " bytes, %" PRIu64 " errors (%" PRIu64 " repaired, %"
			 PRIu64 " left), %" PRIu64 " copies rebuilt, %" PRIu64 " skipped, %" PRIu32
			 " files with errors left", name, scrub_state_names[sr.state], sr.ino, sr.chunk,
			 c->chunks, c->bytes, c->errors, c->repaired, c->unrepaired, c->rebuilt,
			 c->skipped, sr.files);
		scrub_record_free(&sr);
	} else if (is_replace && replace_record_decode(v, vl, &rr) == 0) {
		char ou[37], nu[37];
		lsmfs_uuid_format(rr.old_uuid, ou);
		lsmfs_uuid_format(rr.new_uuid, nu);
		snprintf(out, cap, "M %s -> disk %u (UUID %s) being replaced by the disk of UUID %s",
			 name, rr.old, ou, nu);
	} else if (is_move && section_move_decode(v, vl, &m) == 0) {
		snprintf(out, cap, "M %s -> section %u moving from disk %u to disk %u", name, m.section,
			 m.from, m.to);
	} else if (is_next && vl == 8) {
		snprintf(out, cap, "M %s -> %" PRIu64, name, get_le64(v));
	} else if (is_fs && fs_info_decode(v, vl, &fi) == 0) {
		char u[37], created[64];
		lsmfs_uuid_format(fi.fs_uuid, u);
		insp_format_time(created, sizeof(created), (int64_t)fi.created, -1);
		snprintf(out, cap,
			 "M %s -> version %u uuid %s sections %u chunk %" PRIu64
			 " inline %u disks %u created %s label \"%s\"",
			 name, fi.version, u, fi.sections, fi.chunk_size, fi.inline_max, fi.ndisks,
			 created, fi.label);
	} else {
		insp_hex(b, sizeof(b), v, vl < 64 ? vl : 64);
		snprintf(out, cap, "M %s -> %s%s%s", name, b, vl > 64 ? "..." : "",
			 is_fs || is_next || is_move || is_scrub || is_replace ? " (does not decode)" : "");
	}
}

/* " on disk D", or ", which has no disk", for section s. */
static void on_disk(const struct insp *in, uint32_t s, char *out, size_t cap)
{
	if (in->section_disk[s] == UINT32_MAX)
		snprintf(out, cap, ", which has no disk");
	else
		snprintf(out, cap, " on disk %u", in->section_disk[s]);
}

/* The section and disk of a chunk, by its record's value v (SCHEMA.md
 * "Chunk checksums": the section it names, else the hash's), as
 * ": section S on disk D", then its other copy's (SCHEMA.md "Copies")
 * and which are stale.  A value naming one past the count says so; one
 * that does not decode gets the hash's (the caller says it is damaged). */
static void chunk_place(const struct insp *in, uint64_t ino, uint64_t chunk, const uint8_t *v,
			size_t vl, char *out, size_t cap)
{
	*out = '\0';
	if (!in || !in->info.sections)
		return;
	struct chunk_place pl;
	struct chunk_value cv;
	bool decodes = chunk_value_parse(v, vl, &cv) == 0;
	bool damaged = chunk_value_place(v, vl, ino, chunk, in->info.sections, &pl) != 0;
	if (damaged && decodes && cv.section >= in->info.sections) {
		snprintf(out, cap, ": names section %u, past the %u sections", cv.section,
			 in->info.sections);
		return;
	}
	const char *named = decodes && cv.section != CHUNK_HASHED ? " (named)" : "";
	char d0[48], d1[48] = "", more[128] = "";
	on_disk(in, pl.section, d0, sizeof(d0));
	if (damaged && decodes)
		snprintf(more, sizeof(more), ", %u copies but no partner section", cv.copies);
	else if (pl.copies > 1) {
		uint32_t t = section_of_copy(pl.section, 1, in->info.sections);
		on_disk(in, t, d1, sizeof(d1));
		snprintf(more, sizeof(more), "%s, copy 1 in section %u%s%s",
			 pl.stale & 1 ? " (stale)" : "", t, d1, pl.stale & 2 ? " (stale)" : "");
	}
	snprintf(out, cap, ": section %u%s%s%s", pl.section, named, d0, more);
}

void insp_describe(const struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v,
		   size_t vl, char *out, size_t cap)
{
	char a[700], b[300];
	struct key_parts kp;
	uint64_t id = 0;
	if (key_parse(k, kl, &kp) != 0)
		goto bad;
	id = kp.id;
	switch (kp.type->letter) {
	case KEY_INODE:
		describe_inode(v, vl, a, sizeof(a));
		snprintf(out, cap, "I %" PRIu64 " -> %s", id, a);
		return;
	case KEY_DIRENT:
		describe_dirent(&kp, v, vl, out, cap);
		return;
	case KEY_XATTR:
		insp_escape(a, sizeof(a), kp.tail, kp.tail_len);
		snprintf(out, cap, "X %" PRIu64 " \"%s\" -> %zu bytes", id, a, vl);
		return;
	case KEY_DATA:
		snprintf(out, cap, "F %" PRIu64 " -> %zu bytes inline", id, vl);
		return;
	case KEY_CHUNK: {
		uint64_t chunk = kp.sub;
		chunk_place(in, id, chunk, v, vl, b, sizeof(b));
		/* The value: the length a sync made durable, nothing (not
		 * known), or that length lost with its disk (SCHEMA.md
		 * "Chunk lengths", "A disk lost"). */
		char lb[160] = "";
		struct chunk_value cv;
		if (chunk_value_parse(v, vl, &cv) != 0)
			snprintf(lb, sizeof(lb), " (value does not decode, %zu bytes)", vl);
		else if (cv.flags & CHUNK_LOST)
			snprintf(lb, sizeof(lb), ", lost with its disk (%" PRIu64 " bytes)", cv.durable);
		else if (cv.flags & CHUNK_SUMS)
			/* and its checksums (SCHEMA.md "Chunk checksums") */
			snprintf(lb, sizeof(lb), ", length %" PRIu64 ", %u checksums of %u bytes%s",
				 cv.durable, cv.nsums, 1u << cv.shift,
				 (cv.flags & CHUNK_INWRITE) ? ", in write" : "");
		else if (cv.flags & CHUNK_INWRITE)
			snprintf(lb, sizeof(lb), ", length %" PRIu64 ", in write, no checksums",
				 cv.durable);
		else if (vl)
			snprintf(lb, sizeof(lb), ", length %" PRIu64, cv.durable);
		snprintf(out, cap, "C %" PRIu64 " %" PRIu64 " -> chunk record%s%s", id, chunk, b, lb);
		return;
	}
	case KEY_ORPHAN:
		snprintf(out, cap, "O %" PRIu64 " -> orphan%s", id, vl ? " (value not empty)" : "");
		return;
	case KEY_FLUX:
		snprintf(out, cap, "G %" PRIu64 " -> chunks in flux%s", id,
			 vl ? " (value not empty)" : "");
		return;
	case KEY_SECTION: {
		uint32_t disk;
		if (section_value_decode(v, vl, &disk) == 0)
			snprintf(out, cap, "P %u -> disk %u", (uint32_t)id, disk);
		else
			snprintf(out, cap, "P %u -> %zu bytes (does not decode)", (uint32_t)id, vl);
		return;
	}
	case KEY_DISK:
		if (vl >= 16) {
			char u[37];
			lsmfs_uuid_format(v, u);
			insp_escape(a, sizeof(a), v + 16, vl - 16);
			snprintf(out, cap, "K %u -> disk %s, last at %s", (uint32_t)id, u, a);
		} else {
			snprintf(out, cap, "K %u -> %zu bytes (does not decode)", (uint32_t)id, vl);
		}
		return;
	case KEY_DEVSTATS: {
		uint64_t c[DEVSTAT_KINDS];
		if (devstats_rec_decode(v, vl, c) == 0) {
			size_t o = (size_t)snprintf(out, cap, "E %u -> error counters:", (uint32_t)id);
			for (int i = 0; i < DEVSTAT_KINDS && o < cap; i++)
				o += (size_t)snprintf(out + o, cap - o, " %s %" PRIu64, devstat_names[i],
						      c[i]);
		} else {
			snprintf(out, cap, "E %u -> %zu bytes (does not decode)", (uint32_t)id, vl);
		}
		return;
	}
	case KEY_META:
		describe_meta(k, kl, v, vl, out, cap);
		return;
	}
bad:
	insp_hex(a, sizeof(a), k, kl < 256 ? kl : 256);
	insp_hex(b, sizeof(b), v, vl < 64 ? vl : 64);
	snprintf(out, cap, "%s%s -> %s%s (key does not parse)", a, kl > 256 ? "..." : "", b,
		 vl > 64 ? "..." : "");
}

void insp_key_words(const void *k, size_t kl, char *out, size_t cap)
{
	insp_describe(NULL, k, kl, NULL, 0, out, cap);
	char *arrow = strstr(out, " -> ");
	if (arrow)
		*arrow = '\0';
}
