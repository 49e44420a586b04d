/*
 * mkfs.lsmfs: make an lsmfs filesystem on one or more disks (directories,
 * normally mount points).  fs/SCHEMA.md describes what it writes.
 *
 * Order of work, chosen so that a crash at any point leaves nothing that
 * claims to be a filesystem:
 *   1. check every argument and every disk, refusing before any change;
 *   2. with -f, remove the old .lsmfs directories (and an old --meta store);
 *   3. create the metadata store and section directories (fs_format),
 *      durable when it returns;
 *   4. write the superblocks, last.
 * Until step 4 finishes on a disk, that disk has no superblock, so neither
 * the daemon nor fsck will take it for a (half-made) filesystem.
 *
 * Exit status follows mke2fs: 0 on success, 1 on any error (usage errors
 * included, after printing the usage).
 */
#include "fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "mkfs.lsmfs"
#define MAX_CHUNK_SIZE (1ull << 30)
#define MAX_INLINE 65536u
#define LOST_FOUND "lost+found"

struct options {
	const char *label;
	bool have_uuid;
	uint8_t uuid[16];
	uint32_t sections;
	uint64_t chunk_size;
	uint32_t inline_max;
	/* --meta DIR[,DIR...] as given, split (NULL: on the disks) */
	const char *meta[LSMFS_MAX_META_COPIES];
	uint32_t nmeta;
	char *meta_arg;              /* the split copy of --meta's argument */
	uint32_t copies;             /* --meta-copies, or 0: the default */
	struct store_filter filter;  /* --filter: the metadata store's table filter */
	uint32_t data_copies;        /* --data-copies: copies of each chunk (0: 1) */
	const char *placement;       /* --placement: spread or together (NULL: spread) */
	bool force;
	bool quiet;
	uint32_t ndisks;
	const char *disks[LSMFS_MAX_DISKS];
};

/* What we found on one disk before changing anything. */
struct disk {
	const char *given;
	char *real;
	dev_t dev;
	ino_t ino;
	bool old_super;              /* holds a readable lsmfs superblock */
	struct lsmfs_super old;
};

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr: "mkfs.lsmfs: <what>: <why>". */
static void fail(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " [-L LABEL] [-U UUID] [--sections N] "
		"[--chunk-size BYTES]\n"
		"                  [--inline-max BYTES] [--meta-copies K] [--meta DIR[,DIR...]]\n"
		"                  [--filter POLICY] [--data-copies K] [--placement POLICY]\n"
		"                  [-f] [-q] DISK [DISK...]\n"
		"\n"
		"Make an lsmfs filesystem spanning the given disks (directories, "
		"normally\nmount points).\n"
		"\n"
		"  -L, --label LABEL     volume label, at most %d bytes\n"
		"  -U, --uuid UUID       filesystem UUID (default: random)\n"
		"      --sections N      data sections, 1..%u (default %d)\n"
		"      --chunk-size B    chunk size, a power of two from 4K to 1G "
		"(default 4M)\n"
		"      --inline-max B    largest file kept in the metadata store, at "
		"most 64K\n"
		"                        and below the chunk size (default %u)\n"
		"      --meta-copies K   keep K whole copies of the metadata store, "
		"on disks\n"
		"                        0..K-1 (default 2 with two disks or more, "
		"else 1; at most %d)\n"
		"      --meta DIR[,DIR...]  keep the metadata store in these "
		"directories instead\n"
		"                        (one copy in each; default: DISK/.lsmfs/meta\n"
		"                        on disks 0..K-1)\n"
		"      --filter POLICY   the metadata store's table filter: bloom[:BITS],\n"
		"                        elastic[:UNITSxBITS], quotient[:BITS] or none\n"
		"                        (default bloom:10; store/FILTERS.md)\n"
		"      --data-copies K   copies of each chunk of file data, on K disks:\n"
		"                        1 (the default, as btrfs's single) or 2 (as\n"
		"                        raid1); directories may ask otherwise\n"
		"                        (user.lsmfs.copies)\n"
		"      --placement P     where a file's chunks go: spread (the default,\n"
		"                        over every disk) or together (each file on one\n"
		"                        disk); directories may ask otherwise\n"
		"                        (user.lsmfs.placement)\n"
		"  -f, --force           format disks that are not empty or hold an "
		"lsmfs\n"
		"  -q, --quiet           print nothing but errors\n"
		"  -h, --help            show this help\n"
		"  -V, --version         show the version\n"
		"\n"
		"Sizes take a K, M or G suffix (powers of 1024).\n"
		"\n"
		"Exit status: 0 on success; 1 on any error (bad usage, a refused "
		"disk or\nargument, or an I/O failure).\n",
		LSMFS_LABEL_MAX, LSMFS_MAX_SECTIONS, LSMFS_DEFAULT_SECTIONS,
		LSMFS_DEFAULT_INLINE_MAX, LSMFS_MAX_META_COPIES);
}

/* Decimal bytes with an optional K/M/G suffix. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 0:
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (shift && end[1] != 0)
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

enum { OPT_SECTIONS = 256, OPT_CHUNK, OPT_INLINE, OPT_META, OPT_COPIES, OPT_FILTER,
       OPT_DATA_COPIES, OPT_PLACEMENT };

/* 0 to go on, 1 to exit with an error, -1 to exit 0 (help, version). */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "label", required_argument, NULL, 'L' },
		{ "uuid", required_argument, NULL, 'U' },
		{ "sections", required_argument, NULL, OPT_SECTIONS },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK },
		{ "inline-max", required_argument, NULL, OPT_INLINE },
		{ "meta", required_argument, NULL, OPT_META },
		{ "meta-copies", required_argument, NULL, OPT_COPIES },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "data-copies", required_argument, NULL, OPT_DATA_COPIES },
		{ "placement", required_argument, NULL, OPT_PLACEMENT },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t chunk = LSMFS_DEFAULT_CHUNK_SIZE, inl = LSMFS_DEFAULT_INLINE_MAX;
	uint64_t sections = LSMFS_DEFAULT_SECTIONS;
	const char *chunk_arg = NULL, *inline_arg = NULL;
	int c;

	memset(o, 0, sizeof(*o));
	store_filter_default(&o->filter);
	opterr = 0; /* our own messages, named PROG rather than argv[0] */
	while ((c = getopt_long(argc, argv, ":L:U:fqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'L':
			if (strlen(optarg) > LSMFS_LABEL_MAX) {
				fail("label '%s': longer than %d bytes", optarg,
				     LSMFS_LABEL_MAX);
				return 1;
			}
			o->label = optarg;
			break;
		case 'U':
			if (lsmfs_uuid_parse(optarg, o->uuid) != 0) {
				fail("UUID '%s': not a valid UUID "
				     "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", optarg);
				return 1;
			}
			o->have_uuid = true;
			break;
		case OPT_SECTIONS:
			if (parse_count(optarg, &sections) != 0 || sections < 1 ||
			    sections > LSMFS_MAX_SECTIONS) {
				fail("sections '%s': must be a number from 1 to %u",
				     optarg, LSMFS_MAX_SECTIONS);
				return 1;
			}
			break;
		case OPT_CHUNK:
			chunk_arg = optarg;
			if (parse_size(optarg, &chunk) != 0 || chunk < 4096 ||
			    chunk > MAX_CHUNK_SIZE || (chunk & (chunk - 1))) {
				fail("chunk size '%s': must be a power of two from "
				     "4096 to 1G", optarg);
				return 1;
			}
			break;
		case OPT_INLINE:
			inline_arg = optarg;
			if (parse_size(optarg, &inl) != 0 || inl > MAX_INLINE) {
				fail("inline limit '%s': must be a size of at most "
				     "%u bytes", optarg, MAX_INLINE);
				return 1;
			}
			break;
		case OPT_FILTER:
			if (store_filter_parse(optarg, &o->filter) != 0) {
				fail("filter '%s': not bloom[:BITS] (1-64), elastic[:UNITSxBITS] "
				     "(2-16 units of 1-64 bits), quotient[:BITS] (2-32) or none",
				     optarg);
				return 1;
			}
			break;
		case OPT_META: {
			free(o->meta_arg);
			o->meta_arg = strdup(optarg);
			o->nmeta = 0;
			char *save = NULL;
			for (char *t = o->meta_arg ? strtok_r(o->meta_arg, ",", &save) : NULL; t;
			     t = strtok_r(NULL, ",", &save)) {
				if (o->nmeta == LSMFS_MAX_META_COPIES) {
					fail("--meta '%s': more than %d directories", optarg,
					     LSMFS_MAX_META_COPIES);
					return 1;
				}
				o->meta[o->nmeta++] = t;
			}
			if (!o->nmeta) {
				fail("--meta '%s': no directory", optarg);
				return 1;
			}
			break;
		}
		case OPT_COPIES: {
			uint64_t k;
			if (parse_count(optarg, &k) != 0 || k < 1 || k > LSMFS_MAX_META_COPIES) {
				fail("--meta-copies '%s': must be a number from 1 to %d", optarg,
				     LSMFS_MAX_META_COPIES);
				return 1;
			}
			o->copies = (uint32_t)k;
			break;
		}
		case OPT_DATA_COPIES: {
			uint64_t k;
			if (parse_count(optarg, &k) != 0 || k < 1 || k > CHUNK_MAX_COPIES) {
				fail("--data-copies '%s': must be a number from 1 to %d", optarg,
				     CHUNK_MAX_COPIES);
				return 1;
			}
			o->data_copies = (uint32_t)k;
			break;
		}
		case OPT_PLACEMENT:
			if (strcmp(optarg, "spread") && strcmp(optarg, "together")) {
				fail("--placement '%s': must be spread or together", optarg);
				return 1;
			}
			o->placement = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		case 'V':
			lsmfs_print_version(PROG, NULL);
			return -1;
		case ':':
			fail("option '%s' needs an argument", argv[optind - 1]);
			usage(stderr);
			return 1;
		default:
			if (optopt)
				fail("unknown option '-%c'", optopt);
			else
				fail("unknown option '%s'", argv[optind - 1]);
			usage(stderr);
			return 1;
		}
	}
	/* Checked after the loop: the two options may come in either order. */
	if (inl >= chunk) {
		fail("inline limit %s: must be below the chunk size %s",
		     inline_arg ? inline_arg : "4096",
		     chunk_arg ? chunk_arg : "4M");
		return 1;
	}
	if (optind == argc) {
		fail("no disk given");
		usage(stderr);
		return 1;
	}
	if (argc - optind > LSMFS_MAX_DISKS) {
		fail("%d disks given: at most %d", argc - optind, LSMFS_MAX_DISKS);
		return 1;
	}
	o->ndisks = (uint32_t)(argc - optind);
	for (uint32_t i = 0; i < o->ndisks; i++)
		o->disks[i] = argv[optind + (int)i];
	if (sections < o->ndisks) {
		fail("sections %llu: fewer than the %u disks (a disk would hold "
		     "no data)", (unsigned long long)sections, o->ndisks);
		return 1;
	}
	if (o->nmeta) {
		if (o->copies && o->copies != o->nmeta) {
			fail("--meta-copies %u: --meta names %u director%s (one copy in each)",
			     o->copies, o->nmeta, o->nmeta == 1 ? "y" : "ies");
			return 1;
		}
		o->copies = o->nmeta;
	} else if (o->copies > o->ndisks) {
		fail("--meta-copies %u: only %u disk%s given (each copy on a disk of its own)",
		     o->copies, o->ndisks, o->ndisks == 1 ? "" : "s");
		return 1;
	} else if (!o->copies) {
		o->copies = o->ndisks >= 2 ? 2 : 1;
	}
	o->sections = (uint32_t)sections;
	o->chunk_size = chunk;
	o->inline_max = (uint32_t)inl;
	return 0;
}

/* Entries of dir other than "lost+found" (which mke2fs makes in every new
 * ext4) and those of skip; -errno if dir cannot be read. */
static int count_entries(const char *dir, const char *skip, int *count)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, LOST_FOUND) ||
		    (skip && !strcmp(e->d_name, skip)))
			continue;
		n++;
	}
	closedir(d);
	*count = n;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	return remove(path) == 0 ? 0 : -1;
}

/* rm -rf: never follows symlinks out of the tree. */
static int remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (nftw(path, remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

/* Empty dir, keeping lost+found: dir may be a mount point we cannot
 * remove, and lost+found belongs to the filesystem beneath. */
static int clear_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, LOST_FOUND))
			continue;
		char path[PATH_MAX + 256];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		rc = remove_tree(path);
	}
	closedir(d);
	return rc;
}

/* A running daemon holds an flock on the disk's lock file; overwriting
 * its disks under it would be worse than anything -f is meant for. */
static int check_unlocked(const char *real, const char *given)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/" LSMFS_DIR "/" LSMFS_LOCK_FILE, real);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int rc = 0;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
		char pid[32] = "";
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = 0;
		pid[strcspn(pid, "\n")] = 0;
		fail("%s: in use by process %s; unmount it first", given,
		     *pid ? pid : "(unknown)");
		rc = -EBUSY;
	}
	close(fd);
	return rc;
}

/* Step 1 for one disk: it exists, and no other name given is the same
 * directory. */
static int locate_disk(struct disk *dk, const struct disk *seen,
		       uint32_t nseen)
{
	struct stat st;
	if (stat(dk->given, &st) != 0) {
		fail("%s: %s", dk->given, errno == ENOENT ? "no such directory"
							  : strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fail("%s: not a directory", dk->given);
		return -1;
	}
	dk->real = realpath(dk->given, NULL);
	if (!dk->real) {
		fail("%s: %s", dk->given, strerror(errno));
		return -1;
	}
	dk->dev = st.st_dev;
	dk->ino = st.st_ino;
	for (uint32_t j = 0; j < nseen; j++) {
		if (!strcmp(seen[j].real, dk->real) ||
		    (seen[j].dev == dk->dev && seen[j].ino == dk->ino)) {
			fail("%s: given twice (same directory as %s)", dk->given,
			     seen[j].given);
			return -1;
		}
	}
	if (strlen(dk->real) > PATH_MAX - 256) {
		fail("%s: path too long", dk->given);
		return -1;
	}
	return 0;
}

/* Step 1, once every disk is located: refuse a disk in use, one holding
 * data or a filesystem (unless -f), and remember what -f must remove. */
static int inspect_disk(const struct options *o, struct disk *dk)
{
	if (check_unlocked(dk->real, dk->given) != 0)
		return -1;

	char why[512];
	int rc = super_read(dk->real, &dk->old, why, sizeof(why));
	if (rc == 0) {
		char uuid[37];
		lsmfs_uuid_format(dk->old.fs_uuid, uuid);
		dk->old_super = true;
		if (!o->force) {
			fail("%s: already holds an lsmfs filesystem (UUID %s); "
			     "use -f to overwrite", dk->given, uuid);
			return -1;
		}
		return 0;
	}
	if (rc == -EUCLEAN) {
		if (!o->force) {
			fail("%s: holds a damaged lsmfs superblock (%s); use -f to "
			     "overwrite", dk->given, why);
			return -1;
		}
		return 0;
	}
	if (rc != -ENOENT) {
		fail("%s", why);
		return -1;
	}
	int n;
	rc = count_entries(dk->real, NULL, &n);
	if (rc) {
		fail("%s: %s", dk->given, strerror(-rc));
		return -1;
	}
	if (n && !o->force) {
		fail("%s: directory is not empty (use -f to override)", dk->given);
		return -1;
	}
	return 0;
}

/* The store directory named by --meta, as an absolute path; it need not
 * exist yet, but its parent must. */
static int absolute_meta(const char *given, char *out, size_t cap)
{
	char *real = realpath(given, NULL);
	if (!real && errno == ENOENT) {
		char *a = strdup(given), *b = strdup(given);
		char *parent = NULL;
		if (a && b) {
			parent = realpath(dirname(a), NULL);
			if (parent)
				snprintf(out, cap, "%s%s%s", parent,
					 strcmp(parent, "/") ? "/" : "",
					 basename(b));
		}
		int err = errno;
		free(parent);
		free(a);
		free(b);
		if (!parent) {
			fail("--meta %s: %s", given, strerror(err));
			return -1;
		}
		return 0;
	}
	if (!real) {
		fail("--meta %s: %s", given, strerror(errno));
		return -1;
	}
	snprintf(out, cap, "%s", real);
	free(real);
	return 0;
}

static int read_mark(const char *dir, uint8_t uuid[16])
{
	char path[PATH_MAX + 64], line[64] = "";
	snprintf(path, sizeof(path), "%s/" LSMFS_META_MARK, dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	bool got = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	return got && lsmfs_uuid_parse(line, uuid) == 0 ? 0 : -EUCLEAN;
}

/* Step 1 for --meta DIR: empty or absent, or (with -f) an old store. */
static int inspect_meta(const struct options *o, const char *given, char *abs, size_t cap,
			bool *clear)
{
	*clear = false;
	if (absolute_meta(given, abs, cap) != 0)
		return -1;
	if (strlen(abs) >= LSMFS_META_PATH_MAX) {
		fail("--meta %s: path longer than %d bytes", given,
		     LSMFS_META_PATH_MAX - 1);
		return -1;
	}
	struct stat st;
	if (stat(abs, &st) != 0)
		return 0; /* made in step 3 */
	if (!S_ISDIR(st.st_mode)) {
		fail("--meta %s: not a directory", given);
		return -1;
	}
	uint8_t uuid[16];
	if (read_mark(abs, uuid) == 0) {
		char u[37];
		lsmfs_uuid_format(uuid, u);
		if (!o->force) {
			fail("%s: already holds an lsmfs metadata store (UUID %s); "
			     "use -f to overwrite", given, u);
			return -1;
		}
		*clear = true;
		return 0;
	}
	int n, rc = count_entries(abs, NULL, &n);
	if (rc) {
		fail("%s: %s", given, strerror(-rc));
		return -1;
	}
	/* Even -f does not help: the store's files would land among files
	 * we do not own, and we never delete what is not ours. */
	if (n) {
		fail("%s: directory is not empty and holds no lsmfs metadata "
		     "store; --meta needs an empty directory", given);
		return -1;
	}
	return 0;
}

/* Step 3 for --meta DIR: the directory and its mark, durably. */
static int make_meta(const char *dir, const uint8_t fs_uuid[16])
{
	bool made = false;
	if (mkdir(dir, 0700) == 0)
		made = true;
	else if (errno != EEXIST) {
		fail("%s: cannot create: %s", dir, strerror(errno));
		return -1;
	}
	char path[PATH_MAX + 64], text[40];
	snprintf(path, sizeof(path), "%s/" LSMFS_META_MARK, dir);
	lsmfs_uuid_format(fs_uuid, text);
	strcat(text, "\n");
	/* Root's alone, as everything the store's directories hold. */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (!f || fputs(text, f) == EOF || fflush(f) != 0 ||
	    fsync(fileno(f)) != 0) {
		fail("%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	if (fclose(f) != 0) {
		fail("%s: %s", path, strerror(errno));
		return -1;
	}
	char parent[PATH_MAX + 8];
	snprintf(parent, sizeof(parent), "%s/..", dir);
	int rc = lsmfs_fsync_dir(dir);
	if (!rc && made)
		rc = lsmfs_fsync_dir(parent);
	if (rc) {
		fail("%s: fsync: %s", dir, strerror(-rc));
		return -1;
	}
	return 0;
}

/* Step 2: everything the old filesystem left, now that nothing refused. */
static int remove_old(const struct options *o, const struct disk *disks,
		      char (*meta_abs)[PATH_MAX], const bool *clear_meta)
{
	for (uint32_t i = 0; i < o->ndisks; i++) {
		const struct disk *dk = &disks[i];
		/* The old store may live outside the disks (--meta); clear it
		 * only if its mark proves it is that filesystem's. */
		uint8_t uuid[16];
		for (uint32_t c = 0; dk->old_super && c < dk->old.meta_count; c++) {
			const char *md = dk->old.meta[c].dir;
			if (!md[0] || read_mark(md, uuid) != 0 || memcmp(uuid, dk->old.fs_uuid, 16))
				continue;
			int rc = clear_dir(md);
			if (rc) {
				fail("%s: cannot remove the old metadata store: %s", md,
				     strerror(-rc));
				return -1;
			}
		}
		char path[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s/" LSMFS_DIR, dk->real);
		int rc = remove_tree(path);
		if (rc) {
			fail("%s: cannot remove: %s", path, strerror(-rc));
			return -1;
		}
	}
	for (uint32_t c = 0; c < o->nmeta; c++) {
		if (!clear_meta[c])
			continue;
		int rc = clear_dir(meta_abs[c]);
		if (rc) {
			fail("%s: cannot remove the old metadata store: %s",
			     meta_abs[c], strerror(-rc));
			return -1;
		}
	}
	return 0;
}

static void format_size(uint64_t bytes, char *out, size_t cap)
{
	if (bytes % (1u << 30) == 0)
		snprintf(out, cap, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes % (1u << 20) == 0)
		snprintf(out, cap, "%llu MiB", (unsigned long long)(bytes >> 20));
	else
		snprintf(out, cap, "%llu KiB", (unsigned long long)(bytes >> 10));
}

static void print_plan(const struct options *o, const struct disk *disks,
		       const struct fs_format_params *p, char (*store_dirs)[PATH_MAX + 64])
{
	char size[32], uuid[37];
	format_size(o->chunk_size, size, sizeof(size));
	lsmfs_print_version(PROG, NULL); /* as mkfs.lsmfs -V, as mke2fs does */
	printf("Creating lsmfs filesystem with %u disk%s, %u sections, %s chunks, "
	       "%u-byte inline limit\n", o->ndisks, o->ndisks == 1 ? "" : "s",
	       o->sections, size, o->inline_max);
	lsmfs_uuid_format(p->fs_uuid, uuid);
	printf("Filesystem UUID: %s\n", uuid);
	if (o->label && *o->label)
		printf("Label: %s\n", o->label);
	if (o->copies == 1)
		printf("Metadata store: %s\n", store_dirs[0]);
	else
		for (uint32_t c = 0; c < o->copies; c++)
			printf("Metadata store, copy %u of %u: %s\n", c + 1, o->copies, store_dirs[c]);
	for (uint32_t i = 0; i < o->ndisks; i++) {
		uint32_t mine = o->sections / o->ndisks +
				(i < o->sections % o->ndisks ? 1 : 0);
		lsmfs_uuid_format(p->disk_uuids[i], uuid);
		printf("Disk %u: %s (UUID %s, %u section%s)\n", i, disks[i].real,
		       uuid, mine, mine == 1 ? "" : "s");
	}
	char filter[64];
	store_filter_format(&o->filter, filter, sizeof(filter));
	printf("Metadata store table filter: %s\n", filter);
	printf("File data: %u cop%s of each chunk, placement %s\n",
	       o->data_copies ? o->data_copies : 1, o->data_copies > 1 ? "ies" : "y",
	       o->placement ? o->placement : "spread");
	if (o->data_copies > o->ndisks)
		printf("Warning: %u copies asked of %u disk%s: each chunk has %u until disks are "
		       "added (a scrub then makes the others)\n", o->data_copies, o->ndisks,
		       o->ndisks == 1 ? "" : "s", o->ndisks);
	fflush(stdout);
}

/* Steps 3 and 4. */
static int make_fs(const struct options *o, struct disk *disks,
		   char (*meta_abs)[PATH_MAX])
{
	struct fs_format_params p;
	memset(&p, 0, sizeof(p));
	int rc = 0;
	if (o->have_uuid)
		memcpy(p.fs_uuid, o->uuid, 16);
	else
		rc = lsmfs_uuid_generate(p.fs_uuid);
	for (uint32_t i = 0; rc == 0 && i < o->ndisks; i++)
		rc = lsmfs_uuid_generate(p.disk_uuids[i]);
	if (rc) {
		fail("getrandom: %s", strerror(-rc));
		return -1;
	}
	p.sections = o->sections;
	p.chunk_size = o->chunk_size;
	p.inline_max = o->inline_max;
	p.ndisks = o->ndisks;
	for (uint32_t i = 0; i < o->ndisks; i++)
		p.disk_paths[i] = disks[i].real;
	p.label = o->label ? o->label : "";
	p.created = (uint64_t)time(NULL);
	p.filter = o->filter;
	p.data_copies = o->data_copies;
	p.placement = o->placement;

	/* Copy c on disk c (SCHEMA.md "Store copies"), or in the c-th
	 * --meta directory. */
	char store_dir[LSMFS_MAX_META_COPIES][PATH_MAX + 64];
	for (uint32_t c = 0; c < o->copies; c++) {
		if (o->nmeta)
			snprintf(store_dir[c], sizeof(store_dir[c]), "%s", meta_abs[c]);
		else
			snprintf(store_dir[c], sizeof(store_dir[c]), "%s/" LSMFS_DIR "/"
				 LSMFS_META_DIR, disks[c].real);
		if (c)
			p.store_copies[p.nstore_copies++] = store_dir[c];
	}
	if (!o->quiet)
		print_plan(o, disks, &p, store_dir);

	/* .lsmfs/ on the store's disks must exist before the store can be
	 * made in it; fs_format makes the others' along with their sections. */
	for (uint32_t c = 0; c < (o->nmeta ? 1 : o->copies); c++) {
		char dir[PATH_MAX + 64];
		snprintf(dir, sizeof(dir), "%s/" LSMFS_DIR, disks[c].real);
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			fail("%s: cannot create: %s", dir, strerror(errno));
			return -1;
		}
	}
	for (uint32_t c = 0; c < o->nmeta; c++)
		if (make_meta(meta_abs[c], p.fs_uuid) != 0)
			return -1;

	char err[1024];
	rc = fs_format(store_dir[0], &p, err, sizeof(err));
	if (rc) {
		fail("%s", err);
		return -1;
	}

	if (!o->quiet) {
		printf("Writing superblocks and filesystem accounting "
		       "information: ");
		fflush(stdout);
	}
	struct lsmfs_super sb;
	memset(&sb, 0, sizeof(sb));
	sb.version = LSMFS_VERSION;
	memcpy(sb.fs_uuid, p.fs_uuid, 16);
	sb.disk_count = o->ndisks;
	sb.sections = o->sections;
	sb.chunk_size = o->chunk_size;
	sb.inline_max = o->inline_max;
	sb.created = p.created;
	snprintf(sb.label, sizeof(sb.label), "%s", p.label);
	sb.meta_count = o->copies;
	for (uint32_t c = 0; c < o->copies; c++) {
		sb.meta[c].disk = o->nmeta ? LSMFS_META_ON_DIR : c;
		snprintf(sb.meta[c].dir, sizeof(sb.meta[c].dir), "%s", o->nmeta ? meta_abs[c] : "");
	}
	memcpy(sb.disk_uuids, p.disk_uuids, 16u * o->ndisks);
	for (uint32_t i = 0; i < o->ndisks; i++) {
		sb.disk_index = i;
		memcpy(sb.disk_uuid, p.disk_uuids[i], 16);
		rc = super_write(disks[i].real, &sb, err, sizeof(err));
		if (rc) {
			if (!o->quiet)
				printf("failed\n");
			fail("%s", err);
			return -1;
		}
	}
	if (!o->quiet)
		printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	int rc = parse_args(argc, argv, &o);
	if (rc) {
		free(o.meta_arg); /* parse_args zeroed o first: NULL or ours */
		return rc < 0 ? 0 : 1;
	}

	struct disk disks[LSMFS_MAX_DISKS];
	memset(disks, 0, sizeof(disks));
	char meta_abs[LSMFS_MAX_META_COPIES][PATH_MAX];
	bool clear_meta[LSMFS_MAX_META_COPIES] = { false };
	int status = 1;
	uint32_t n = 0;
	for (; n < o.ndisks; n++) {
		disks[n].given = o.disks[n];
		if (locate_disk(&disks[n], disks, n) != 0) {
			n++; /* its realpath, if any, is freed below */
			goto out;
		}
	}
	/* Contents only once the names are sorted out: "given twice" is the
	 * more useful message when both apply. */
	for (uint32_t i = 0; i < n; i++)
		if (inspect_disk(&o, &disks[i]) != 0)
			goto out;
	for (uint32_t c = 0; c < o.nmeta; c++) {
		if (inspect_meta(&o, o.meta[c], meta_abs[c], sizeof(meta_abs[c]), &clear_meta[c]))
			goto out;
		for (uint32_t e = 0; e < c; e++)
			if (!strcmp(meta_abs[e], meta_abs[c])) {
				fail("--meta %s: given twice (each copy needs a directory of its own)",
				     o.meta[c]);
				goto out;
			}
	}
	if (o.force && remove_old(&o, disks, meta_abs, clear_meta) != 0)
		goto out;
	if (make_fs(&o, disks, meta_abs) != 0)
		goto out;
	status = 0;
out:
	for (uint32_t i = 0; i < n; i++)
		free(disks[i].real);
	free(o.meta_arg);
	return status;
}
