/*
 * load.c: one scan of the whole metadata store, in key order, into the
 * checker's model.  Keys that do not parse are problems (PR_BAD_KEY), not
 * errors: the scan goes on.
 */
#include "fsck.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t ino, size_t cap)
{
	return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static struct fsck_inode *lookup(struct fsck *f, uint64_t ino, bool add)
{
	if (!ino)
		return NULL;
	if (add && (f->icount + 1) * 2 > f->icap) {
		size_t ncap = f->icap ? f->icap * 2 : 4096;
		struct fsck_inode *n = calloc(ncap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < f->icap; i++) {
			if (!f->inodes[i].ino)
				continue;
			size_t s = slot_of(f->inodes[i].ino, ncap);
			while (n[s].ino)
				s = (s + 1) & (ncap - 1);
			n[s] = f->inodes[i];
		}
		free(f->inodes);
		f->inodes = n;
		f->icap = ncap;
	}
	if (!f->icap)
		return NULL;
	size_t s = slot_of(ino, f->icap);
	while (f->inodes[s].ino) {
		if (f->inodes[s].ino == ino)
			return &f->inodes[s];
		s = (s + 1) & (f->icap - 1);
	}
	if (!add)
		return NULL;
	struct fsck_inode *in = &f->inodes[s];
	memset(in, 0, sizeof(*in));
	in->ino = ino;
	in->inline_len = -1;
	f->icount++;
	return in;
}

struct fsck_inode *fsck_inode(struct fsck *f, uint64_t ino)
{
	return lookup(f, ino, false);
}

struct fsck_inode *fsck_inode_add(struct fsck *f, uint64_t ino)
{
	return lookup(f, ino, true);
}

/* Keys other than I may come before their inode's record in key order:
 * their facts wait in a stub that the record fills in (rec_ok false until
 * then, and a stub never filled is "a key without an inode"). */
static struct fsck_inode *stub(struct fsck *f, uint64_t ino)
{
	return lookup(f, ino, true);
}

static int push_entry(struct fsck *f, uint64_t parent, uint64_t hash, const uint8_t *name,
		      size_t nlen, uint64_t ino, uint8_t type)
{
	if (f->nentries == f->capentries) {
		size_t nc = f->capentries ? f->capentries * 2 : 4096;
		struct fsck_entry *g = realloc(f->entries, nc * sizeof(*g));
		if (!g)
			return -ENOMEM;
		f->entries = g;
		f->capentries = nc;
	}
	char *n = malloc(nlen + 1);
	if (!n)
		return -ENOMEM;
	memcpy(n, name, nlen);
	n[nlen] = '\0';
	f->entries[f->nentries++] =
		(struct fsck_entry){.parent = parent, .ino = ino, .hash = hash, .type = type, .name = n};
	return 0;
}

static int push_chunk(struct fsck *f, const struct fsck_chunk *c)
{
	if (f->nchunks == f->capchunks) {
		size_t nc = f->capchunks ? f->capchunks * 2 : 4096;
		struct fsck_chunk *g = realloc(f->chunks, nc * sizeof(*g));
		if (!g)
			return -ENOMEM;
		f->chunks = g;
		f->capchunks = nc;
	}
	f->chunks[f->nchunks++] = *c;
	return 0;
}

int fsck_cmp_chunk(const void *a, const void *b)
{
	const struct fsck_chunk *x = a, *y = b;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->chunk < y->chunk ? -1 : x->chunk > y->chunk;
}

struct fsck_chunk *fsck_find_chunk(const struct fsck *f, uint64_t ino, uint64_t chunk)
{
	struct fsck_chunk key = {.ino = ino, .chunk = chunk};
	if (!f->nchunks) /* no array at all when there are none */
		return NULL;
	return bsearch(&key, f->chunks, f->nchunks, sizeof(key), fsck_cmp_chunk);
}

bool fsck_has_chunk(const struct fsck *f, uint64_t ino, uint64_t chunk)
{
	return fsck_find_chunk(f, ino, chunk) != NULL;
}

int fsck_model_add_chunk(struct fsck *f, uint64_t ino, uint64_t chunk, uint32_t section)
{
	int rc = push_chunk(f, &(struct fsck_chunk){.ino = ino, .chunk = chunk, .section = section,
						     .bad_section = CHUNK_HASHED, .copies = 1});
	if (rc == 0)
		qsort(f->chunks, f->nchunks, sizeof(*f->chunks), fsck_cmp_chunk);
	return rc;
}

void fsck_model_drop_chunk(struct fsck *f, uint64_t ino, uint64_t chunk)
{
	struct fsck_chunk *c = fsck_find_chunk(f, ino, chunk);
	if (!c)
		return;
	/* Moved down, not swapped with the last: the array stays sorted. */
	size_t i = (size_t)(c - f->chunks);
	memmove(c, c + 1, (f->nchunks - i - 1) * sizeof(*c));
	f->nchunks--;
	struct fsck_inode *in = fsck_inode(f, ino);
	if (in && in->nchunks)
		in->nchunks--;
}

void fsck_model_drop_chunks(struct fsck *f, uint64_t ino)
{
	size_t o = 0;
	for (size_t i = 0; i < f->nchunks; i++)
		if (f->chunks[i].ino != ino)
			f->chunks[o++] = f->chunks[i];
	f->nchunks = o;
	struct fsck_inode *in = fsck_inode(f, ino);
	if (in)
		in->nchunks = 0;
}

static void hexkey(const uint8_t *k, size_t kl, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < kl && o + 3 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", k[i]);
	out[o] = '\0';
}

size_t fsck_first_child(const struct fsck *f, uint64_t parent)
{
	size_t lo = 0, hi = f->nentries;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->entries[mid].parent < parent)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool fsck_has_children(const struct fsck *f, uint64_t dir)
{
	size_t i = fsck_first_child(f, dir);
	return i < f->nentries && f->entries[i].parent == dir;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct fsck_ino_ref *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The first index in by_ino of an entry naming ino (nentries when none,
 * or out of memory); by_ino is built once, when first asked. */
static size_t first_ref(struct fsck *f, uint64_t ino)
{
	if (!f->by_ino) {
		f->by_ino = malloc((f->nentries ? f->nentries : 1) * sizeof(*f->by_ino));
		if (!f->by_ino)
			return f->nentries;
		for (size_t i = 0; i < f->nentries; i++)
			f->by_ino[i] = (struct fsck_ino_ref){.ino = f->entries[i].ino, .entry = i};
		if (f->nentries)
			qsort(f->by_ino, f->nentries, sizeof(*f->by_ino), cmp_ref);
	}
	size_t lo = 0, hi = f->nentries;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->by_ino[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void fsck_entries_changed(struct fsck *f)
{
	free(f->by_ino);
	f->by_ino = NULL;
}

const char *fsck_path_of(struct fsck *f, uint64_t ino, char *out, size_t cap)
{
	/* Built backwards from the end of out: name, then its parent's. */
	if (cap < 2)
		return "";
	size_t at = cap - 1;
	out[at] = '\0';
	for (size_t depth = 0; ino != LSMFS_ROOT_INO; depth++) {
		size_t i = first_ref(f, ino);
		if (depth > f->nentries || i >= f->nentries || f->by_ino[i].ino != ino ||
		    f->entries[f->by_ino[i].entry].ino != ino) {
			snprintf(out, cap, "inode %" PRIu64 " has no path from the root", ino);
			return out;
		}
		const struct fsck_entry *e = &f->entries[f->by_ino[i].entry];
		size_t n = strlen(e->name);
		if (n + 1 > at) {
			snprintf(out, cap, "a path longer than %zu bytes", cap);
			return out;
		}
		at -= n;
		memcpy(out + at, e->name, n);
		out[--at] = '/';
		ino = e->parent;
	}
	if (at == cap - 1)
		out[--at] = '/';
	return out + at;
}

uint8_t fsck_entries_type(struct fsck *f, uint64_t ino)
{
	size_t lo = first_ref(f, ino);
	if (!f->by_ino)
		return 0;
	uint8_t t = 0;
	for (size_t i = lo; i < f->nentries && f->by_ino[i].ino == ino; i++) {
		uint8_t et = f->entries[f->by_ino[i].entry].type;
		if (t && et != t)
			return 0;
		t = et;
	}
	return t;
}

void fsck_key_describe(const uint8_t *k, size_t kl, char *out, size_t cap)
{
	if (!k) {
		snprintf(out, cap, "(the table's edge)");
		return;
	}
	uint64_t a = kl >= 9 ? get_be64(k + 1) : 0;
	switch (kl ? k[0] : 0) {
	case KEY_INODE:
		snprintf(out, cap, "the record of inode %" PRIu64, a);
		return;
	case KEY_DIRENT:
		if (kl > 17) {
			snprintf(out, cap, "entry '%.*s' in directory %" PRIu64, (int)(kl - 17),
				 (const char *)k + 17, a);
			return;
		}
		if (kl >= 9) { /* an index separator: part of a key */
			snprintf(out, cap, "an entry in directory %" PRIu64, a);
			return;
		}
		break;
	case KEY_DATA:
		snprintf(out, cap, "the inline data of inode %" PRIu64, a);
		return;
	case KEY_CHUNK:
		if (kl == 17) {
			snprintf(out, cap, "chunk %" PRIu64 " of inode %" PRIu64, get_be64(k + 9), a);
			return;
		}
		break;
	case KEY_XATTR:
		snprintf(out, cap, "an xattr of inode %" PRIu64, a);
		return;
	case KEY_ORPHAN:
		snprintf(out, cap, "the orphan mark of inode %" PRIu64, a);
		return;
	case KEY_FLUX:
		snprintf(out, cap, "the chunks-in-flux mark of inode %" PRIu64, a);
		return;
	case KEY_SECTION:
		if (kl == 5) {
			snprintf(out, cap, "the map entry of section %u", get_be32(k + 1));
			return;
		}
		break;
	case KEY_DISK:
		snprintf(out, cap, "a disk record");
		return;
	case KEY_DEVSTATS:
		snprintf(out, cap, "a disk's error counters");
		return;
	case KEY_META:
		snprintf(out, cap, "filesystem info '%.*s'", (int)(kl - 1), (const char *)k + 1);
		return;
	}
	char hx[2 * KEY_MAX + 1];
	hexkey(k, kl < KEY_MAX ? kl : KEY_MAX, hx, sizeof(hx));
	snprintf(out, cap, "key %s", hx);
}

static int take(struct fsck *f, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	char hx[2 * KEY_MAX + 1];
	struct key_parts kp;
	struct fsck_inode *in = NULL;
	if (key_parse(k, kl, &kp) != 0)
		goto bad;
	/* Keys of an inode other than D: their facts go to its stub. */
	if (kp.type->id == KEY_ID_INODE && kp.type->letter != KEY_DIRENT) {
		in = stub(f, kp.id);
		if (!in)
			return -ENOMEM;
	}
	switch (kp.type->letter) {
	case KEY_INODE:
		in->rec_ok = inode_rec_decode(v, vl, &in->rec) == 0;
		in->rec_bad = !in->rec_ok; /* pass 2 reports it */
		return 0;
	case KEY_DIRENT: {
		uint64_t ino;
		uint8_t type;
		if (dirent_val_decode(v, vl, &ino, &type))
			break;
		return push_entry(f, kp.id, kp.sub, kp.tail, kp.tail_len, ino, type);
	}
	case KEY_DATA:
		in->inline_len = (int64_t)vl;
		return 0;
	case KEY_CHUNK: {
		struct chunk_value cv;
		if (chunk_value_parse(v, vl, &cv))
			break; /* a value of none of the forms SCHEMA.md gives */
		in->nchunks++;
		struct fsck_chunk c = {.ino = kp.id, .chunk = kp.sub, .durable = cv.durable,
				       .lost = chunk_value_lost(v, vl), .bad_section = CHUNK_HASHED};
		/* The value parses: -EUCLEAN is a section past the count, which
		 * pass 5 reports (LSMFS-0516; c.section is the hash's then), or
		 * copies the named section has no partner for (LSMFS-051A; one
		 * copy then, in the section it names). */
		struct chunk_place pl;
		if (chunk_value_place(v, vl, c.ino, c.chunk, f->info.sections, &pl)) {
			if (cv.section >= f->info.sections)
				c.bad_section = cv.section;
			else
				c.bad_copies = cv.copies;
		}
		c.section = pl.section;
		c.copies = pl.copies;
		c.stale = pl.stale;
		return push_chunk(f, &c);
	}
	case KEY_XATTR:
		in->xattrs = true;
		return 0;
	case KEY_ORPHAN:
		in->orphan = true;
		return 0;
	case KEY_FLUX: /* the daemon's crash repair is pending (SCHEMA.md) */
		in->flux = true;
		return 0;
	case KEY_SECTION: {
		uint32_t s = (uint32_t)kp.id, d;
		if (section_value_decode(v, vl, &d))
			break;
		if (s < f->info.sections)
			f->section_disk[s] = d;
		else
			problem_fix(f, PR_SECTION_BEYOND,
				    &(struct problem_ctx){.section = s, .num = f->info.sections});
		return 0;
	}
	case KEY_META:
		if (kl == 1 + strlen(META_NEXT_INO) && !memcmp(k + 1, META_NEXT_INO, kl - 1) && vl == 8)
			f->next_ino = get_le64(v);
		if (kl == 1 + strlen(META_MOUNTED) && !memcmp(k + 1, META_MOUNTED, kl - 1))
			f->mounted_mark = true;
		if (kl == 1 + strlen(META_MOVE) && !memcmp(k + 1, META_MOVE, kl - 1))
			f->has_move = section_move_decode(v, vl, &f->move) == 0;
		if (kl == 1 + strlen(META_FILTER) && !memcmp(k + 1, META_FILTER, kl - 1)) {
			char text[64];
			struct store_filter pol;
			if (filter_record_decode(v, vl, &pol, text) == 0)
				return 0;
			break; /* a filter record the mount refuses: a bad key */
		}
		return 0;
	case KEY_DISK:
		return 0; /* checked in pass 5 with point reads */
	case KEY_DEVSTATS: {
		uint64_t count[DEVSTAT_KINDS];
		if (kp.id >= LSMFS_MAX_DISKS || devstats_rec_decode(v, vl, count))
			break;
		return 0; /* a slot no disk holds: pass 5 */
	}
	}
bad:
	hexkey(k, kl, hx, sizeof(hx));
	problem_fix(f, PR_BAD_KEY, &(struct problem_ctx){.str = hx, .num = vl});
	return 0;
}

static void store_log(void *ctx, const char *line)
{
	struct fsck *f = ctx;
	if (f->verbose)
		fprintf(stderr, "fsck.lsmfs: store: %s\n", line);
}

int fsck_load(struct fsck *f)
{
	struct store_options so;
	store_options_init(&so);
	so.read_only = f->mode == FSCK_MODE_NO; /* else the disks are locked: ours */
	so.create_if_missing = false;
	so.log = store_log;
	so.log_ctx = f;
	const char *dirs[LSMFS_MAX_META_COPIES];
	int rc = store_open(fsck_store_dir(f, &so, dirs), &so, &f->st);
	if (rc) {
		problem_fix(f, PR_STORE_UNREADABLE,
			    &(struct problem_ctx){.str = "the metadata store does not open", .err = rc});
		f->st = NULL;
		return rc;
	}
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, META_FS);
	void *val;
	size_t vl;
	rc = store_get(f->st, NULL, k, kl, &val, &vl);
	if (rc == 0) {
		f->info_ok = fs_info_decode(val, vl, &f->info) == 0;
		free(val);
	}
	if (!f->info_ok) {
		if (problem_fix(f, PR_INFO_BAD,
				&(struct problem_ctx){.str = rc ? "missing" : "damaged"}))
			fsck_repaired(f, fsck_put_info(f));
		if (!f->info_ok) { /* check against disk 0's superblock anyway */
			f->info.sections = f->ds->sb.sections;
			f->info.chunk_size = f->ds->sb.chunk_size;
			f->info.inline_max = f->ds->sb.inline_max;
			f->info.ndisks = f->ds->sb.disk_count;
			memcpy(f->info.fs_uuid, f->ds->sb.fs_uuid, 16);
		}
	}
	f->section_disk = malloc(f->info.sections * sizeof(uint32_t));
	f->chunks_per_disk = calloc(f->ds->ndisks, sizeof(uint64_t));
	if (!f->section_disk || !f->chunks_per_disk)
		return -ENOMEM;
	for (uint32_t s = 0; s < f->info.sections; s++)
		f->section_disk[s] = UINT32_MAX;

	struct store_iter *it;
	struct store_iter_options io = {0};
	if ((rc = store_iter_new(f->st, &io, &it)))
		return rc;
	uint64_t n = 0;
	for (store_iter_seek_first(it); store_iter_valid(it) && !fsck_cancelled(f);
	     store_iter_next(it)) {
		size_t kl2, vl2;
		const uint8_t *key = store_iter_key(it, &kl2);
		const uint8_t *v = store_iter_value(it, &vl2);
		if (kl2 == 0)
			continue;
		if ((rc = take(f, key, kl2, v, vl2)))
			break;
		if (++n % 65536 == 0)
			fsck_progress(f, 2, n, 0);
	}
	if (!rc)
		rc = store_iter_status(it);
	store_iter_free(it);
	if (rc)
		problem_fix(f, PR_STORE_UNREADABLE,
			    &(struct problem_ctx){.str = "reading the metadata store", .err = rc});
	return rc;
}

void fsck_unload(struct fsck *f)
{
	free(f->by_ino);
	f->by_ino = NULL;
	for (size_t i = 0; i < f->nentries; i++)
		free(f->entries[i].name);
	free(f->entries);
	free(f->chunks);
	free(f->inodes);
	free(f->section_disk);
	free(f->chunks_per_disk);
	free(f->pair_one_disk);
	free(f->scrub_left_inos);
	free(f->scrub_buf); /* a scrub cancelled before its report */
	f->scrub_buf = NULL;
	if (f->st)
		store_close(f->st);
	f->st = NULL;
}

void fsck_entry_path(struct fsck *f, const struct fsck_entry *e, char *out, size_t cap)
{
	/* Walk up through the directories' parent pointers (bounded: a cycle
	 * stops after 64 steps). */
	const char *parts[64];
	size_t np = 0;
	parts[np++] = e->name;
	uint64_t p = e->parent;
	bool rooted = false;
	while (np < 64) {
		if (p == LSMFS_ROOT_INO) {
			rooted = true;
			break;
		}
		struct fsck_inode *pin = fsck_inode(f, p);
		if (!pin || !pin->rec_ok || !pin->entry_parent)
			break;
		const char *nm = NULL;
		for (size_t i = 0; i < f->nentries; i++) /* rare path: only for messages */
			if (f->entries[i].ino == p && f->entries[i].parent == pin->entry_parent) {
				nm = f->entries[i].name;
				break;
			}
		if (!nm)
			break;
		parts[np++] = nm;
		p = pin->entry_parent;
	}
	size_t o = 0;
	out[0] = '\0';
	if (!rooted)
		o += (size_t)snprintf(out, cap, "<inode %" PRIu64 ">", p);
	for (size_t i = np; i-- > 0 && o < cap;)
		o += (size_t)snprintf(out + o, cap - o, "/%s", parts[i]);
}
