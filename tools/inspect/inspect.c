/*
 * inspect.c: lsmfs-inspect, the read-only inspector (as debugfs is to
 * ext4): the command line, and opening the disks and the store without
 * taking a lock or writing a byte, as fsck.lsmfs -n does, so that it runs
 * beside the daemon.  The commands live in disks.c (super, sections),
 * show.c (stat, ls, keys), levels.c (levels) and stats.c (stats).
 */
#include "inspect.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " INSPECT_PROG " [--json] [--backup DIR] DISK[:DISK...] COMMAND [ARGS]\n"
		"  --backup DIR  read the metadata store of backup DIR (lsmfs-disk backup)\n"
		"                instead of the disks'\n"
		"Look inside an lsmfs filesystem, read-only: on its disks unmounted, or\n"
		"beside the running daemon (then as of its last commit-log write).\n"
		"Commands:\n"
		"  super           every disk's superblock (UUIDs, index, label, sections,\n"
		"                  chunk size, inline limit, creation time, metadata store),\n"
		"                  and the store's filesystem info and next inode number\n"
		"  sections        the section map; chunk records (C keys), chunk files and\n"
		"                  their bytes under DISK/.lsmfs/sections, per disk, in\n"
		"                  total and per section\n"
		"  stat PATH|INO   an inode's record, its inline data or its chunks (section,\n"
		"                  disk, file, length or \"missing\"), and its xattrs; PATH is\n"
		"                  absolute (\"/a/b\"), INO a decimal inode number\n"
		"  ls PATH|INO     a directory's entries in the store's (hash) order: inode,\n"
		"                  type, size, name\n"
		"  levels          the LSM levels: tables, sizes, key ranges, and the write\n"
		"                  amplification over the store's life\n"
		"  keys [T [N]]    every key and value, decoded, in key order; T, a key type\n"
		"                  (M K E P I D X F C O G), keeps only that type; N keeps\n"
		"                  only the keys of that inode (I D X F C O G), section (P)\n"
		"                  or disk (K E), or the M key of that name (e.g. keys C 12,\n"
		"                  keys M fs)\n"
		"  stats           the daemon's accounting as it last wrote it to the store's\n"
		"                  stats.json (every 2 s while mounted, and at unmount): when,\n"
		"                  whether still mounted, bytes, writes, fsyncs and sequential\n"
		"                  writes per disk, the store's bytes by kind, the write\n"
		"                  amplification; with --json the file as it is\n"
		"Options (anywhere):\n"
		"  -j, --json      one JSON object on stdout (every command)\n"
		"  --raw HEX       keys: only the keys that start with these bytes\n"
		"  -h, --help      this help\n"
		"  -V, --version   the version\n"
		"Exit status: 0 done, 1 the path or inode does not exist (or ls of a\n"
		"non-directory, or stats with no stats.json), 8 operational error (disks or\n"
		"store unreadable, stats.json damaged), 16 usage error.  A record that\n"
		"does not decode is shown in hex, not an error.\n");
}

void insp_store_log(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, INSPECT_PROG ": store: %s\n", line);
}

static int skip_entry(void *ctx, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	(void)ctx, (void)k, (void)kl, (void)v, (void)vl;
	return 0;
}

/* The section map, from the P keys (one scan: N point reads would cost as
 * much and trust N more).  A damaged P key, or one for a section beyond
 * N, is skipped here; keys P shows it. */
static int read_section_map(struct insp *in)
{
	in->section_disk = malloc((size_t)in->info.sections * sizeof(uint32_t));
	if (!in->section_disk)
		return -ENOMEM;
	return section_map_read(in->st, in->info.sections, in->section_disk, skip_entry, NULL);
}

/* Open the disks, without a lock.  Says why on stderr when it fails. */
static int open_disks(struct insp *in, const char *spec)
{
	char err[1024];
	/* DISKSET_TOLERANT: one damaged superblock is shown by super, not a
	 * reason to show nothing.  No DISKSET_LOCK: the daemon may hold it. */
	int rc = diskset_open(spec, DISKSET_TOLERANT, &in->ds, err, sizeof(err));
	if (rc)
		fprintf(stderr, INSPECT_PROG ": %s\n", err);
	return rc;
}

/* Open the disks (no lock) and the store (read-only), and read the
 * filesystem info and section map.  Says why on stderr when it fails. */
static int open_all(struct insp *in, const char *spec)
{
	int rc = open_disks(in, spec);
	if (rc)
		return rc;
	struct store_options so;
	store_options_init(&so);
	so.read_only = true;
	so.create_if_missing = false;
	so.log = insp_store_log;
	const char *dirs[LSMFS_MAX_META_COPIES];
	const char *dir = diskset_store_options(in->ds, &so, dirs);
	char backup[LSMFS_META_PATH_MAX + 32], err[1200];
	if (in->backup) {
		struct lsmfs_super bsb;
		rc = backup_read(in->backup, &in->ds->sb, &bsb, backup, sizeof(backup), err,
				 sizeof(err));
		if (rc) {
			fprintf(stderr, INSPECT_PROG ": %s\n", err);
			return rc;
		}
		so.copies = NULL;
		so.ncopies = 0;
		so.copies_stale = 0;
		dir = backup;
	}
	rc = store_open(dir, &so, &in->st);
	if (rc) {
		fprintf(stderr, INSPECT_PROG ": %s: the metadata store does not open: %s\n", dir,
			strerror(-rc));
		return rc;
	}
	uint8_t k[KEY_MAX];
	void *v;
	size_t vl;
	if (store_get(in->st, NULL, k, key_meta(k, META_FS), &v, &vl) == 0) {
		in->info_from_store = fs_info_decode(v, vl, &in->info) == 0;
		free(v);
	}
	/* The superblocks rule where they and the store disagree (the daemon
	 * refuses to mount then): the layout of the disks is theirs. */
	const struct lsmfs_super *sb = &in->ds->sb;
	if (!in->info_from_store || in->info.sections != sb->sections) {
		if (in->info_from_store)
			fprintf(stderr, INSPECT_PROG ": %s: the store says %u sections, the superblocks"
				" %u: using theirs\n", in->ds->meta_dir, in->info.sections,
				sb->sections);
		in->info.sections = sb->sections;
	}
	if (!in->info_from_store) {
		in->info.chunk_size = sb->chunk_size;
		in->info.inline_max = sb->inline_max;
		in->info.ndisks = sb->disk_count;
	}
	rc = read_section_map(in);
	if (rc)
		fprintf(stderr, INSPECT_PROG ": %s: reading the section map: %s\n", in->ds->meta_dir,
			strerror(-rc));
	return rc;
}

int main(int argc, char **argv)
{
	struct insp in = {.out = stdout};
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
						 {"version", no_argument, NULL, 'V'},
						 {"json", no_argument, NULL, 'j'},
						 {"raw", required_argument, NULL, 'r'},
						 {"backup", required_argument, NULL, 'b'},
						 {0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "hjV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h': usage(stdout); return INSPECT_EXIT_OK;
		case 'V': lsmfs_print_version(INSPECT_PROG, NULL); return INSPECT_EXIT_OK;
		case 'j': in.json = true; break;
		case 'r': in.raw_prefix = optarg; break;
		case 'b': in.backup = optarg; break;
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
	} cmds[] = {{"super", 0, 0}, {"sections", 0, 0}, {"stat", 1, 1}, {"ls", 1, 1},
		    {"levels", 0, 0}, {"keys", 0, 2},     {"stats", 0, 0}};
	size_t c = 0;
	while (c < sizeof(cmds) / sizeof(cmds[0]) && strcmp(cmds[c].name, cmd))
		c++;
	if (c == sizeof(cmds) / sizeof(cmds[0])) {
		fprintf(stderr, INSPECT_PROG ": unknown command '%s' (try --help)\n", cmd);
		return INSPECT_EXIT_USAGE;
	}
	if (nargs < cmds[c].min || nargs > cmds[c].max) {
		fprintf(stderr, INSPECT_PROG ": %s: wrong number of arguments (try --help)\n", cmd);
		return INSPECT_EXIT_USAGE;
	}
	if (in.raw_prefix && strcmp(cmd, "keys")) {
		fprintf(stderr, INSPECT_PROG ": --raw is for keys only\n");
		return INSPECT_EXIT_USAGE;
	}
	int status;
	/* stats reads a file the daemon writes: the store need not open. */
	if (!strcmp(cmd, "stats"))
		status = open_disks(&in, spec) ? INSPECT_EXIT_OPERATIONAL : insp_stats(&in);
	else if (open_all(&in, spec))
		status = INSPECT_EXIT_OPERATIONAL;
	else if (!strcmp(cmd, "super"))
		status = insp_super(&in);
	else if (!strcmp(cmd, "sections"))
		status = insp_sections(&in);
	else if (!strcmp(cmd, "stat"))
		status = insp_stat(&in, args[0]);
	else if (!strcmp(cmd, "ls"))
		status = insp_ls(&in, args[0]);
	else if (!strcmp(cmd, "levels"))
		status = insp_levels(&in);
	else
		status = insp_keys(&in, nargs, args);
	if ((fflush(stdout) || ferror(stdout)) && status == INSPECT_EXIT_OK) {
		fprintf(stderr, INSPECT_PROG ": writing the output: %s\n", strerror(errno));
		status = INSPECT_EXIT_OPERATIONAL;
	}
	if (in.st)
		(void)store_close(in.st); /* read-only: nothing to lose */
	free(in.section_disk);
	if (in.ds)
		diskset_close(in.ds);
	return status;
}
