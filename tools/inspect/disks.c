/*
 * disks.c: the commands about the backing disks: super (every disk's
 * superblock, fs/SCHEMA.md "Superblock", beside the store's filesystem
 * info and inode counter) and sections (the section map, `P` keys, with
 * the chunk records of each section: the one a record names, else the
 * hash's, fs/SCHEMA.md "Sharding" and "Chunk checksums", and the partner
 * of that one for a second copy ("Copies"),
 * and the chunk files and bytes actually under <disk>/.lsmfs/sections/).
 */
#include "inspect.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- super ---- */

static void super_json(struct json *j, const struct lsmfs_super *sb)
{
	char u[37], created[64];
	json_u64(j, "version", sb->version);
	lsmfs_uuid_format(sb->fs_uuid, u);
	json_str(j, "fs_uuid", u);
	lsmfs_uuid_format(sb->disk_uuid, u);
	json_str(j, "disk_uuid", u);
	json_u64(j, "disk_index", sb->disk_index);
	json_u64(j, "disk_count", sb->disk_count);
	json_str(j, "label", sb->label);
	json_u64(j, "sections", sb->sections);
	json_u64(j, "chunk_size", sb->chunk_size);
	json_u64(j, "inline_max", sb->inline_max);
	json_u64(j, "created", sb->created);
	insp_format_time(created, sizeof(created), (int64_t)sb->created, -1);
	json_str(j, "created_utc", created);
	json_arr(j, "meta_copies"); /* where the store's copies are */
	for (uint32_t c = 0; c < sb->meta_count; c++) {
		json_obj(j, NULL);
		if (sb->meta[c].disk == LSMFS_META_ON_DIR)
			json_str(j, "dir", sb->meta[c].dir);
		else
			json_u64(j, "disk", sb->meta[c].disk);
		json_close_obj(j);
	}
	json_close_arr(j);
	json_u64(j, "generation", sb->generation);
	json_u64(j, "retired", !!(sb->flags & SUPER_RETIRED));
	json_arr(j, "disk_uuids"); /* all zero: a removed disk's slot */
	for (uint32_t d = 0; d < sb->disk_count && d < LSMFS_MAX_DISKS; d++) {
		lsmfs_uuid_format(sb->disk_uuids[d], u);
		json_str(j, NULL, u);
	}
	json_close_arr(j);
}

static void super_text(FILE *out, const struct lsmfs_super *sb)
{
	char fs[37], du[37], created[64];
	lsmfs_uuid_format(sb->fs_uuid, fs);
	lsmfs_uuid_format(sb->disk_uuid, du);
	insp_format_time(created, sizeof(created), (int64_t)sb->created, -1);
	uint32_t members = 0; /* slots in use */
	for (uint32_t d = 0; d < sb->disk_count; d++)
		members += !super_slot_empty(sb, d);
	char meta[LSMFS_MAX_META_COPIES * (LSMFS_META_PATH_MAX + 32)] = "";
	size_t ml = 0;
	for (uint32_t c = 0; c < sb->meta_count; c++) {
		if (sb->meta[c].disk == LSMFS_META_ON_DIR)
			ml += (size_t)snprintf(meta + ml, sizeof(meta) - ml, "%s%s", c ? ", " : "",
					       sb->meta[c].dir);
		else
			ml += (size_t)snprintf(meta + ml, sizeof(meta) - ml, "%son disk %u", c ? ", " : "",
					       sb->meta[c].disk);
	}
	fprintf(out,
		"  filesystem UUID %s, label \"%s\", format version %u, created %s\n"
		"  disk UUID %s, disk %u of %u%s, disk set generation %" PRIu64 "%s\n"
		"  sections %u, chunk size %" PRIu64 ", inline limit %u\n"
		"  metadata store: %u cop%s: %s\n",
		fs, sb->label, sb->version, created, du, sb->disk_index, sb->disk_count,
		members == sb->disk_count ? "" : " (some slots empty: disks removed)", sb->generation, sb->flags & SUPER_RETIRED ? ", RETIRED (removed from the filesystem)" : "",
		sb->sections, sb->chunk_size, sb->inline_max, sb->meta_count,
		sb->meta_count == 1 ? "y" : "ies", meta);
}

/* Each copy of the store: where, and whether it is up to date (the copy
 * states, fs/SCHEMA.md "Store copies"). */
static const char *copy_state(const struct lsmfs_diskset *ds, uint32_t c)
{
	if (ds->meta_absent & (1u << c))
		return "missing";
	return ds->sb.meta[c].flags & LSMFS_META_STALE ? "stale" : "in-sync";
}

/* The store's table filter (`M filter`, SCHEMA.md "Metadata store
 * options") as text: "bloom:10 (the default)" when absent. */
static void table_filter(struct insp *in, char *out, size_t len)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, META_FILTER);
	void *v;
	size_t vl;
	int rc = in->st ? store_get(in->st, NULL, k, kl, &v, &vl) : -ENOENT;
	if (rc == -ENOENT) {
		snprintf(out, len, "bloom:10 (not recorded: the default)");
	} else if (rc) {
		snprintf(out, len, "unreadable: %s", strerror(-rc));
	} else {
		snprintf(out, len, "%.*s", (int)(vl < len - 1 ? vl : len - 1), (const char *)v);
		free(v);
	}
}

int insp_super(struct insp *in)
{
	struct json j;
	const struct lsmfs_diskset *ds = in->ds;
	char filter[96];
	table_filter(in, filter, sizeof(filter));
	if (in->json) {
		json_begin(&j, in->out);
		json_str(&j, "store", ds->meta_dir);
		json_str(&j, "table_filter", filter);
		json_arr(&j, "copies");
		for (uint32_t c = 0; c < ds->sb.meta_count; c++) {
			json_obj(&j, NULL);
			json_u64(&j, "copy", c);
			json_str(&j, "path", ds->meta_paths[c]);
			json_str(&j, "state", copy_state(ds, c));
			json_close_obj(&j);
		}
		json_close_arr(&j);
		json_u64(&j, "copies_epoch", ds->copies_epoch);
		json_arr(&j, "disks");
	} else {
		fprintf(in->out, "metadata store table filter: %s\n", filter);
		for (uint32_t c = 0; c < ds->sb.meta_count; c++)
			fprintf(in->out, "metadata store copy %u of %u: %s: %s%s\n", c + 1,
				ds->sb.meta_count, ds->meta_paths[c][0] ? ds->meta_paths[c] : "(its disk "
				"is missing)", copy_state(ds, c), c == ds->meta_primary ? " (read)" : "");
	}
	for (uint32_t d = 0; d < in->ds->ndisks; d++) {
		if (!diskset_present(in->ds, d))
			continue;
		struct lsmfs_super sb;
		char err[600] = "";
		int rc = super_read(in->ds->paths[d], &sb, err, sizeof(err));
		if (in->json) {
			json_obj(&j, NULL);
			json_str(&j, "path", in->ds->paths[d]);
			json_u64(&j, "index", d);
			if (rc)
				json_str(&j, "error", err);
			else
				super_json(&j, &sb);
			json_close_obj(&j);
			continue;
		}
		fprintf(in->out, "disk %u: %s\n", d, in->ds->paths[d]);
		if (rc)
			fprintf(in->out, "  superblock: %s\n", err);
		else
			super_text(in->out, &sb);
	}
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	int64_t next_ino = -1; /* absent or does not decode */
	if (store_get(in->st, NULL, k, key_meta(k, META_NEXT_INO), &v, &vl) == 0) {
		if (vl == 8)
			next_ino = (int64_t)get_le64(v);
		free(v);
	}
	const struct fs_info *fi = &in->info;
	char fs[37], created[64];
	lsmfs_uuid_format(fi->fs_uuid, fs);
	insp_format_time(created, sizeof(created), (int64_t)fi->created, -1);
	if (in->json) {
		json_close_arr(&j);
		json_obj(&j, "store_info");
		json_bool(&j, "present", in->info_from_store);
		if (in->info_from_store) {
			json_u64(&j, "version", fi->version);
			json_str(&j, "fs_uuid", fs);
			json_u64(&j, "sections", fi->sections);
			json_u64(&j, "chunk_size", fi->chunk_size);
			json_u64(&j, "inline_max", fi->inline_max);
			json_u64(&j, "disk_count", fi->ndisks);
			json_u64(&j, "created", fi->created);
			json_str(&j, "created_utc", created);
			json_str(&j, "label", fi->label);
		}
		json_i64(&j, "next_ino", next_ino);
		json_close_obj(&j);
		json_end(&j);
		return INSPECT_EXIT_OK;
	}
	char next[32] = "absent or does not decode";
	if (next_ino >= 0)
		snprintf(next, sizeof(next), "%" PRId64, next_ino);
	if (in->info_from_store)
		fprintf(in->out,
			"store %s:\n"
			"  filesystem UUID %s, label \"%s\", format version %u, created %s\n"
			"  %u sections, chunk size %" PRIu64 ", inline limit %u, %u disks\n"
			"  next inode %s\n",
			in->ds->meta_dir, fs, fi->label, fi->version, created, fi->sections,
			fi->chunk_size, fi->inline_max, fi->ndisks, next);
	else
		fprintf(in->out, "store %s:\n  no filesystem info that decodes (M fs)\n"
			"  next inode %s\n", in->ds->meta_dir, next);
	return INSPECT_EXIT_OK;
}

/* ---- sections ---- */

struct counts {
	uint64_t records, files, bytes;
};

/* The files under every <disk>/.lsmfs/sections/<s>/, counted per section
 * (wherever they sit) and per disk (where they sit). */
static void count_files(struct insp *in, struct counts *sec, struct counts *disk)
{
	for (uint32_t d = 0; d < in->ds->ndisks; d++) {
		if (!diskset_present(in->ds, d))
			continue;
		char root[LSMFS_META_PATH_MAX + 64];
		section_disk_dir(in->ds->paths[d], root, sizeof(root));
		DIR *top = opendir(root);
		if (!top) {
			fprintf(stderr, INSPECT_PROG ": %s: %s\n", root, strerror(errno));
			continue;
		}
		struct dirent *de;
		while ((de = readdir(top))) {
			uint32_t s;
			if (!section_dir_parse(de->d_name, in->info.sections, &s))
				continue;
			char dir[LSMFS_META_PATH_MAX + 400];
			snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
			DIR *sd = opendir(dir);
			if (!sd)
				continue;
			struct dirent *ce;
			while ((ce = readdir(sd))) {
				char file[LSMFS_META_PATH_MAX + 700];
				struct stat st;
				snprintf(file, sizeof(file), "%s/%s", dir, ce->d_name);
				if (!strcmp(ce->d_name, ".") || !strcmp(ce->d_name, "..") ||
				    lstat(file, &st) || !S_ISREG(st.st_mode))
					continue;
				sec[s].files++;
				sec[s].bytes += (uint64_t)st.st_size;
				disk[d].files++;
				disk[d].bytes += (uint64_t)st.st_size;
			}
			closedir(sd);
		}
		closedir(top);
	}
}

struct record_counts {
	struct counts *sec, *disk;
};

static void count_record(struct insp *in, const uint8_t *k, size_t kl, const uint8_t *v,
			 size_t vl, void *ctx)
{
	struct record_counts *rc = ctx;
	struct key_parts kp;
	if (key_parse(k, kl, &kp) != 0 || kp.type->letter != KEY_CHUNK)
		return; /* not a chunk key: keys shows it */
	/* A damaged value (keys and fsck say so) counts where the hash puts
	 * it, or with copies its section has no partner for, once. */
	struct chunk_place pl;
	(void)chunk_value_place(v, vl, kp.id, kp.sub, in->info.sections, &pl);
	for (unsigned i = 0; i < pl.copies; i++) {
		uint32_t s = section_of_copy(pl.section, i, in->info.sections);
		if (pl.stale >> i & 1)
			continue; /* lacks data: a file of it may be there or not */
		rc->sec[s].records++;
		if (diskset_present(in->ds, in->section_disk[s]))
			rc->disk[in->section_disk[s]].records++;
	}
}

/* Chunk records, by the section they name (else hash to) and its disk;
 * a record with two copies in each copy's section (SCHEMA.md "Copies"). */
static int count_records(struct insp *in, struct counts *sec, struct counts *disk)
{
	uint8_t prefix[1] = {KEY_CHUNK};
	struct record_counts ctx = {.sec = sec, .disk = disk};
	return insp_scan(in, prefix, 1, count_record, &ctx);
}

static void counts_json(struct json *j, const struct counts *c)
{
	json_u64(j, "records", c->records);
	json_u64(j, "files", c->files);
	json_u64(j, "bytes", c->bytes);
}

static void sections_print(struct insp *in, const struct counts *sec, const struct counts *disk,
			   const uint64_t *mapped, uint64_t unmapped, const struct counts *total)
{
	uint32_t ns = in->info.sections, nd = in->ds->ndisks;
	if (in->json) {
		struct json j;
		json_begin(&j, in->out);
		json_u64(&j, "sections", ns);
		json_u64(&j, "unmapped", unmapped);
		struct section_move m;
		if (section_move_get(in->st, &m) == 1) {
			json_obj(&j, "move");
			json_u64(&j, "section", m.section);
			json_u64(&j, "from", m.from);
			json_u64(&j, "to", m.to);
			json_close_obj(&j);
		}
		json_obj(&j, "total");
		counts_json(&j, total);
		json_close_obj(&j);
		json_arr(&j, "disks");
		for (uint32_t d = 0; d < nd; d++) {
			if (!diskset_present(in->ds, d))
				continue;
			json_obj(&j, NULL);
			json_u64(&j, "index", d);
			json_str(&j, "path", in->ds->paths[d]);
			json_u64(&j, "sections", mapped[d]);
			counts_json(&j, &disk[d]);
			json_close_obj(&j);
		}
		json_close_arr(&j);
		json_arr(&j, "map");
		for (uint32_t s = 0; s < ns; s++) {
			json_obj(&j, NULL);
			json_u64(&j, "section", s);
			if (in->section_disk[s] == UINT32_MAX)
				json_i64(&j, "disk", -1);
			else
				json_u64(&j, "disk", in->section_disk[s]);
			counts_json(&j, &sec[s]);
			json_close_obj(&j);
		}
		json_close_arr(&j);
		json_end(&j);
		return;
	}
	fprintf(in->out, "%u sections over %u disks", ns, nd);
	if (unmapped)
		fprintf(in->out, "; %" PRIu64 " with no disk (shown as -)", unmapped);
	fprintf(in->out, "\n");
	struct section_move m;
	if (section_move_get(in->st, &m) == 1)
		/* Its files may be on both disks: counted by directory here. */
		fprintf(in->out, "section %u is moving from disk %u to disk %u; the map says %s: the "
			"next mount or lsmfs-disk run %s\n", m.section, m.from, m.to,
			m.section < ns && in->section_disk[m.section] == m.to ? "the new disk" : "the old disk",
			m.section < ns && in->section_disk[m.section] == m.to ? "removes the old copy"
									   : "removes the partial copy");
	for (uint32_t d = 0; d < nd; d++)
		if (diskset_present(in->ds, d))
			fprintf(in->out,
			"disk %u %s: %" PRIu64 " sections, %" PRIu64 " chunk records, %" PRIu64
			" files, %" PRIu64 " bytes\n",
			d, in->ds->paths[d], mapped[d], disk[d].records, disk[d].files, disk[d].bytes);
	fprintf(in->out, "total: %" PRIu64 " chunk records, %" PRIu64 " files, %" PRIu64 " bytes\n",
		total->records, total->files, total->bytes);
	fprintf(in->out, "%8s %5s %10s %10s %14s\n", "section", "disk", "records", "files", "bytes");
	for (uint32_t s = 0; s < ns; s++) {
		char d[16] = "-";
		if (in->section_disk[s] != UINT32_MAX)
			snprintf(d, sizeof(d), "%u", in->section_disk[s]);
		fprintf(in->out, "%8u %5s %10" PRIu64 " %10" PRIu64 " %14" PRIu64 "\n", s, d,
			sec[s].records, sec[s].files, sec[s].bytes);
	}
}

int insp_sections(struct insp *in)
{
	uint32_t ns = in->info.sections, nd = in->ds->ndisks;
	struct counts *sec = calloc(ns, sizeof(*sec));
	struct counts *disk = calloc(nd, sizeof(*disk));
	uint64_t *mapped = calloc(nd, sizeof(*mapped));
	int rc = sec && disk && mapped ? 0 : -ENOMEM;
	if (rc == 0)
		rc = count_records(in, sec, disk);
	if (rc == 0) {
		count_files(in, sec, disk);
		uint64_t unmapped = 0;
		struct counts total = {0};
		for (uint32_t s = 0; s < ns; s++) {
			if (diskset_present(in->ds, in->section_disk[s]))
				mapped[in->section_disk[s]]++;
			else
				unmapped++;
			total.records += sec[s].records;
			total.files += sec[s].files;
			total.bytes += sec[s].bytes;
		}
		sections_print(in, sec, disk, mapped, unmapped, &total);
	}
	free(sec);
	free(disk);
	free(mapped);
	return insp_command_end(in, rc);
}
