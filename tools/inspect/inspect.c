/*
 * inspect.c: lsmfs-inspect, the read-only inspector (as debugfs is to
 * ext4): command line, opening the disks and the store without locks, and
 * the commands about disks and the store as a whole: super, sections,
 * levels.  show.c has keys, stat and ls.
 */
#include "inspect.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *prog = "lsmfs-inspect";

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [--json] DISK[:DISK...] COMMAND [ARGS]\n"
		"Look inside an lsmfs filesystem, read-only: on its disks unmounted, or\n"
		"beside the running daemon (then as of its last commit-log write).\n"
		"Commands:\n"
		"  super           every disk's superblock, and the store's filesystem info\n"
		"  sections        the section map; chunk records, files and bytes per\n"
		"                  section and per disk\n"
		"  stat PATH|INO   an inode's record, inline data, chunks (section, disk,\n"
		"                  file, length) and xattrs; PATH is absolute (\"/a/b\")\n"
		"  ls PATH|INO     a directory's entries, in the store's (hash) order\n"
		"  levels          the LSM levels: tables, sizes, key ranges, and the write\n"
		"                  amplification over the store's life\n"
		"  keys [T [N]]    every key and value, decoded; T a key type (M K P I D X F\n"
		"                  C O) limits them, N (a number, or a name after M) too\n"
		"  --json          one JSON object (super, sections, stat, ls, levels)\n"
		"Exit status: 0 done, 1 the path or inode does not exist, 8 operational\n"
		"error (disks or store unreadable), 16 usage error.\n",
		prog);
}

static void store_log(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "%s: store: %s\n", prog, line);
}

static int open_all(struct insp *in, const char *spec)
{
	char err[1024];
	/* Tolerant: a damaged superblock is shown, not a reason to see nothing. */
	int rc = diskset_open(spec, DISKSET_TOLERANT, &in->ds, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return rc;
	}
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	so.create_if_missing = false;
	so.log = store_log;
	rc = store_open(in->ds->meta_dir, &so, &in->st);
	if (rc) {
		fprintf(stderr, "%s: %s: the metadata store does not open: %s\n", prog,
			in->ds->meta_dir, strerror(-rc));
		return rc;
	}
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	if (store_get(in->st, NULL, k, key_meta(k, META_FS), &v, &vl) == 0) {
		in->info_from_store = fs_info_decode(v, vl, &in->info) == 0;
		free(v);
	}
	if (!in->info_from_store) {
		const struct lsmfs_super *sb = &in->ds->sb;
		in->info.sections = sb->sections;
		in->info.chunk_size = sb->chunk_size;
		in->info.inline_max = sb->inline_max;
		in->info.ndisks = sb->disk_count;
	}
	in->section_disk = malloc((in->info.sections ? in->info.sections : 1) * sizeof(uint32_t));
	if (!in->section_disk)
		return -ENOMEM;
	for (uint32_t s = 0; s < in->info.sections; s++) {
		in->section_disk[s] = UINT32_MAX;
		if (store_get(in->st, NULL, k, key_section(k, s), &v, &vl) == 0) {
			if (vl == 4)
				in->section_disk[s] = sc_get_le32(v);
			free(v);
		}
	}
	return 0;
}

static void fmt_created(char *out, size_t cap, uint64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (!gmtime_r(&tt, &tm) || !strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, cap, "%" PRIu64, t);
}

int insp_super(struct insp *in)
{
	struct json j;
	if (in->json) {
		json_begin(&j, in->out);
		json_str(&j, "store", in->ds->meta_dir);
		json_arr(&j, "disks");
	}
	for (uint32_t d = 0; d < in->ds->ndisks; d++) {
		struct lsmfs_super sb;
		char err[600] = "", fs[37], du[37], created[64];
		int rc = super_read(in->ds->paths[d], &sb, err, sizeof(err));
		if (in->json) {
			json_obj(&j, NULL);
			json_str(&j, "path", in->ds->paths[d]);
			json_u64(&j, "index", d);
		}
		if (rc) {
			if (in->json) {
				json_str(&j, "error", err);
				json_close_obj(&j);
			} else {
				fprintf(in->out, "disk %u: %s\n  superblock: %s\n", d, in->ds->paths[d],
					err);
			}
			continue;
		}
		lsmfs_uuid_format(sb.fs_uuid, fs);
		lsmfs_uuid_format(sb.disk_uuid, du);
		fmt_created(created, sizeof(created), sb.created);
		if (in->json) {
			json_u64(&j, "version", sb.version);
			json_str(&j, "fs_uuid", fs);
			json_str(&j, "disk_uuid", du);
			json_u64(&j, "disk_count", sb.disk_count);
			json_str(&j, "label", sb.label);
			json_u64(&j, "sections", sb.sections);
			json_u64(&j, "chunk_size", sb.chunk_size);
			json_u64(&j, "inline_max", sb.inline_max);
			json_str(&j, "created", created);
			json_str(&j, "meta_dir", sb.meta_dir);
			json_close_obj(&j);
			continue;
		}
		fprintf(in->out,
			"disk %u: %s\n"
			"  filesystem UUID %s, label \"%s\", format version %u, created %s\n"
			"  disk UUID %s, disk %u of %u\n"
			"  sections %u, chunk size %" PRIu64 ", inline limit %u\n"
			"  metadata store %s\n",
			d, in->ds->paths[d], fs, sb.label, sb.version, created, du, sb.disk_index,
			sb.disk_count, sb.sections, sb.chunk_size, sb.inline_max,
			sb.meta_dir[0] ? sb.meta_dir : "on disk 0 (.lsmfs/meta)");
	}
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	uint64_t next_ino = 0;
	if (store_get(in->st, NULL, k, key_meta(k, META_NEXT_INO), &v, &vl) == 0) {
		if (vl == 8)
			next_ino = sc_get_le64(v);
		free(v);
	}
	char fs[37];
	lsmfs_uuid_format(in->info.fs_uuid, fs);
	if (in->json) {
		json_close_arr(&j);
		json_obj(&j, "store_info");
		json_bool(&j, "present", in->info_from_store);
		if (in->info_from_store) {
			json_str(&j, "fs_uuid", fs);
			json_u64(&j, "sections", in->info.sections);
			json_u64(&j, "chunk_size", in->info.chunk_size);
			json_u64(&j, "inline_max", in->info.inline_max);
			json_u64(&j, "disk_count", in->info.ndisks);
			json_str(&j, "label", in->info.label);
		}
		json_u64(&j, "next_ino", next_ino);
		json_close_obj(&j);
		json_end(&j);
	} else if (in->info_from_store) {
		fprintf(in->out,
			"store %s: filesystem %s, %u sections, chunk size %" PRIu64
			", inline limit %u, %u disks, next inode %" PRIu64 "\n",
			in->ds->meta_dir, fs, in->info.sections, in->info.chunk_size,
			in->info.inline_max, in->info.ndisks, next_ino);
	} else {
		fprintf(in->out, "store %s: no readable filesystem info (M fs); next inode %" PRIu64 "\n",
			in->ds->meta_dir, next_ino);
	}
	return INSPECT_EXIT_OK;
}

struct per_section {
	uint64_t records, files, bytes;
};

/* The files under every <disk>/.lsmfs/sections/<s>/, counted per section
 * (wherever they sit) and per disk. */
static void count_files(struct insp *in, struct per_section *sec, struct per_section *disk)
{
	for (uint32_t d = 0; d < in->ds->ndisks; d++) {
		char root[LSMFS_META_PATH_MAX + 64];
		snprintf(root, sizeof(root), "%s/%s/%s", in->ds->paths[d], LSMFS_DIR,
			 LSMFS_SECTIONS_DIR);
		DIR *top = opendir(root);
		if (!top) {
			fprintf(stderr, "%s: %s: %s\n", prog, root, strerror(errno));
			continue;
		}
		struct dirent *de;
		while ((de = readdir(top))) {
			char *end;
			unsigned long s = strtoul(de->d_name, &end, 10);
			if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || s >= in->info.sections)
				continue;
			char dir[LSMFS_META_PATH_MAX + 100];
			snprintf(dir, sizeof(dir), "%s/%lu", root, s);
			DIR *sd = opendir(dir);
			if (!sd)
				continue;
			struct dirent *ce;
			while ((ce = readdir(sd))) {
				char file[LSMFS_META_PATH_MAX + 400];
				struct stat st;
				snprintf(file, sizeof(file), "%s/%s", dir, ce->d_name);
				if (ce->d_name[0] == '.' || lstat(file, &st) || !S_ISREG(st.st_mode))
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

int insp_sections(struct insp *in)
{
	uint32_t ns = in->info.sections, nd = in->ds->ndisks;
	struct per_section *sec = calloc(ns ? ns : 1, sizeof(*sec));
	struct per_section *disk = calloc(nd, sizeof(*disk));
	uint64_t *mapped = calloc(nd, sizeof(*mapped));
	if (!sec || !disk || !mapped) {
		free(sec), free(disk), free(mapped);
		fprintf(stderr, "%s: out of memory\n", prog);
		return INSPECT_EXIT_OPERATIONAL;
	}
	/* Chunk records, by the section they hash to. */
	struct store_iter *it;
	uint8_t lo[1] = {KEY_CHUNK}, hi[1] = {KEY_CHUNK + 1};
	struct store_iter_options io = {.lower = lo, .lower_len = 1, .upper = hi, .upper_len = 1};
	int rc = store_iter_new(in->st, &io, &it);
	if (rc == 0) {
		for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
			size_t kl;
			const uint8_t *k = store_iter_key(it, &kl);
			if (kl != 17)
				continue;
			uint32_t s = chunk_section(sc_get_be64(k + 1), sc_get_be64(k + 9), ns);
			sec[s].records++;
			if (in->section_disk[s] < nd)
				disk[in->section_disk[s]].records++;
		}
		rc = store_iter_status(it);
		store_iter_free(it);
	}
	if (rc) {
		fprintf(stderr, "%s: %s: reading the store: %s\n", prog, in->ds->meta_dir,
			strerror(-rc));
		free(sec), free(disk), free(mapped);
		return INSPECT_EXIT_OPERATIONAL;
	}
	count_files(in, sec, disk);
	uint64_t unmapped = 0;
	for (uint32_t s = 0; s < ns; s++) {
		if (in->section_disk[s] < nd)
			mapped[in->section_disk[s]]++;
		else
			unmapped++;
	}
	struct json j;
	if (in->json) {
		json_begin(&j, in->out);
		json_u64(&j, "sections", ns);
		json_u64(&j, "unmapped", unmapped);
		json_arr(&j, "disks");
		for (uint32_t d = 0; d < nd; d++) {
			json_obj(&j, NULL);
			json_u64(&j, "index", d);
			json_str(&j, "path", in->ds->paths[d]);
			json_u64(&j, "sections", mapped[d]);
			json_u64(&j, "records", disk[d].records);
			json_u64(&j, "files", disk[d].files);
			json_u64(&j, "bytes", disk[d].bytes);
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
			json_u64(&j, "records", sec[s].records);
			json_u64(&j, "files", sec[s].files);
			json_u64(&j, "bytes", sec[s].bytes);
			json_close_obj(&j);
		}
		json_close_arr(&j);
		json_end(&j);
	} else {
		fprintf(in->out, "%u sections over %u disks%s\n", ns, nd,
			unmapped ? " (some have no disk: see below)" : "");
		for (uint32_t d = 0; d < nd; d++)
			fprintf(in->out,
				"disk %u %s: %" PRIu64 " sections, %" PRIu64 " chunk records, %" PRIu64
				" files, %" PRIu64 " bytes\n",
				d, in->ds->paths[d], mapped[d], disk[d].records, disk[d].files,
				disk[d].bytes);
		fprintf(in->out, "%8s %5s %10s %10s %14s\n", "section", "disk", "records", "files",
			"bytes");
		for (uint32_t s = 0; s < ns; s++) {
			char d[16] = "-";
			if (in->section_disk[s] != UINT32_MAX)
				snprintf(d, sizeof(d), "%u", in->section_disk[s]);
			fprintf(in->out, "%8u %5s %10" PRIu64 " %10" PRIu64 " %14" PRIu64 "\n", s, d,
				sec[s].records, sec[s].files, sec[s].bytes);
		}
	}
	free(sec), free(disk), free(mapped);
	return INSPECT_EXIT_OK;
}

/* A key alone in words: what insp_describe says before " -> ". */
static void key_words(const void *k, size_t kl, char *out, size_t cap)
{
	insp_describe(k, kl, NULL, 0, out, cap);
	char *arrow = strstr(out, " -> ");
	if (arrow)
		*arrow = '\0';
}

int insp_levels(struct insp *in)
{
	struct store_table_info *t;
	size_t n;
	struct store_totals tot;
	struct store_options so;
	store_options_init(&so);
	so.log = store_log;
	int rc = store_list_tables(in->ds->meta_dir, &so, &t, &n, &tot);
	if (rc) {
		fprintf(stderr, "%s: %s: reading the MANIFEST: %s\n", prog, in->ds->meta_dir,
			strerror(-rc));
		return INSPECT_EXIT_OPERATIONAL;
	}
	double wa = store_totals_write_amp(&tot);
	struct json j;
	if (in->json) {
		json_begin(&j, in->out);
		json_str(&j, "store", in->ds->meta_dir);
		json_obj(&j, "lifetime");
		json_u64(&j, "user_bytes", tot.user_bytes_written);
		json_u64(&j, "log_bytes", tot.wal_bytes_written);
		json_u64(&j, "flush_bytes", tot.flush_bytes_written);
		json_u64(&j, "compaction_bytes", tot.compaction_bytes_written);
		json_u64(&j, "manifest_bytes", tot.manifest_bytes_written);
		json_dbl(&j, "write_amplification", wa);
		json_close_obj(&j);
		json_arr(&j, "levels");
	}
	size_t i = 0;
	for (int l = 0; l < STORE_MAX_LEVELS; l++) {
		size_t first = i;
		uint64_t bytes = 0;
		while (i < n && t[i].level == l)
			bytes += t[i++].size;
		if (in->json) {
			json_obj(&j, NULL);
			json_u64(&j, "level", (uint64_t)l);
			json_u64(&j, "tables", i - first);
			json_u64(&j, "bytes", bytes);
			json_arr(&j, "files");
		} else if (i > first) {
			fprintf(in->out, "level %d: %zu table%s, %" PRIu64 " bytes\n", l, i - first,
				i - first == 1 ? "" : "s", bytes);
		}
		for (size_t x = first; x < i; x++) {
			char a[700], b[700];
			key_words(t[x].smallest, t[x].smallest_len, a, sizeof(a));
			key_words(t[x].largest, t[x].largest_len, b, sizeof(b));
			if (in->json) {
				json_obj(&j, NULL);
				json_u64(&j, "number", t[x].number);
				json_u64(&j, "size", t[x].size);
				json_str(&j, "smallest", a);
				json_str(&j, "largest", b);
				json_close_obj(&j);
			} else {
				fprintf(in->out, "  %06" PRIu64 ".sst %10" PRIu64 " bytes  %s .. %s\n",
					t[x].number, t[x].size, a, b);
			}
		}
		if (in->json) {
			json_close_arr(&j);
			json_close_obj(&j);
		}
	}
	if (in->json) {
		json_close_arr(&j);
		json_end(&j);
	} else {
		char was[32] = "n/a";
		if (tot.user_bytes_written)
			snprintf(was, sizeof(was), "%.2f", wa);
		fprintf(in->out,
			"write amplification so far: %s (user %" PRIu64 " bytes; log %" PRIu64
			", flush %" PRIu64 ", compaction %" PRIu64 ", manifest %" PRIu64
			"; as of the last flush, compaction or close)\n",
			was, tot.user_bytes_written, tot.wal_bytes_written, tot.flush_bytes_written,
			tot.compaction_bytes_written, tot.manifest_bytes_written);
	}
	store_tables_free(t, n);
	return INSPECT_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct insp in = {.out = stdout};
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'}, {"json", no_argument, NULL, 'j'}, {0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "+hj", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h': usage(stdout); return INSPECT_EXIT_OK;
		case 'j': in.json = true; break;
		default: usage(stderr); return INSPECT_EXIT_USAGE;
		}
	}
	if (argc - optind < 2) {
		usage(stderr);
		return INSPECT_EXIT_USAGE;
	}
	const char *spec = argv[optind], *cmd = argv[optind + 1];
	int nargs = argc - optind - 2;
	char **args = argv + optind + 2;
	static const struct {
		const char *name;
		int min, max;
	} cmds[] = {{"super", 0, 0}, {"sections", 0, 0}, {"stat", 1, 1},
		    {"ls", 1, 1},    {"levels", 0, 0},   {"keys", 0, 2}};
	size_t c = 0;
	while (c < sizeof(cmds) / sizeof(cmds[0]) && strcmp(cmds[c].name, cmd))
		c++;
	if (c == sizeof(cmds) / sizeof(cmds[0])) {
		fprintf(stderr, "%s: unknown command '%s' (try --help)\n", prog, cmd);
		return INSPECT_EXIT_USAGE;
	}
	if (nargs < cmds[c].min || nargs > cmds[c].max) {
		fprintf(stderr, "%s: %s: wrong number of arguments (try --help)\n", prog, cmd);
		return INSPECT_EXIT_USAGE;
	}
	int status;
	if (open_all(&in, spec)) {
		status = INSPECT_EXIT_OPERATIONAL;
	} else if (!strcmp(cmd, "super")) {
		status = insp_super(&in);
	} else if (!strcmp(cmd, "sections")) {
		status = insp_sections(&in);
	} else if (!strcmp(cmd, "stat")) {
		status = insp_stat(&in, args[0]);
	} else if (!strcmp(cmd, "ls")) {
		status = insp_ls(&in, args[0]);
	} else if (!strcmp(cmd, "levels")) {
		status = insp_levels(&in);
	} else {
		status = insp_keys(&in, nargs, args);
	}
	if (fflush(stdout) && status == INSPECT_EXIT_OK)
		status = INSPECT_EXIT_OPERATIONAL;
	if (in.st)
		store_close(in.st);
	free(in.section_disk);
	diskset_close(in.ds);
	return status;
}
