/*
 * test_mkfs.c: mkfs.lsmfs end to end, the superblock codec and disk sets.
 * No FUSE needed: mkfs only writes files, and the checks read them back
 * through super_read, diskset_open and the metadata store itself.
 * Each test makes its own scratch tree (fstest.h) and removes it.
 */
#include "fs.h"
#include "fstest.h"
#include "schema.h"
#include "store.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#define OUT_CAP 8192

/* Run mkfs.lsmfs with the NULL-terminated arguments; output into out. */
static int mkfs(char *out, ...)
{
	const char *argv[64];
	int n = 0;
	argv[n++] = getenv("MKFS_BIN");
	va_list ap;
	va_start(ap, out);
	const char *a;
	while ((a = va_arg(ap, const char *)) && n < 63)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	char sink[OUT_CAP];
	return fst_run(argv, out ? out : sink, OUT_CAP);
}

static bool exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static bool exists(const char *fmt, ...)
{
	char path[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	struct stat st;
	return lstat(path, &st) == 0;
}

static void touch(const char *dir, const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void read_super(const char *disk, struct lsmfs_super *sb)
{
	char err[512] = "";
	int rc = super_read(disk, sb, err, sizeof(err));
	ck_assert_msg(rc == 0, "super_read %s: %d %s", disk, rc, err);
}

static void flip_byte(const char *disk, off_t off)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/.lsmfs/super", disk);
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	uint8_t b;
	ck_assert_int_eq(pread(fd, &b, 1, off), 1);
	b ^= 0x10;
	ck_assert_int_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static int open_set(const char *spec, unsigned flags, struct lsmfs_diskset **ds,
		    char *err, size_t errlen)
{
	err[0] = 0;
	return diskset_open(spec, flags, ds, err, errlen);
}

/* The metadata store holds what fs_format promised. */
static void check_store(const char *dir, uint32_t ndisks, uint32_t sections)
{
	struct store_options opt;
	store_options_init(&opt);
	opt.create_if_missing = false;
	opt.read_only = true;
	struct store *st;
	ck_assert_int_eq(store_open(dir, &opt, &st), 0);
	uint8_t key[KEY_MAX];
	void *v;
	size_t vlen;

	ck_assert_int_eq(store_get(st, NULL, key, key_meta(key, META_NEXT_INO),
				   &v, &vlen), 0);
	ck_assert_uint_eq(vlen, 8);
	ck_assert_uint_eq(get_le64(v), 3);
	free(v);

	struct fs_info fi;
	ck_assert_int_eq(store_get(st, NULL, key, key_meta(key, META_FS), &v,
				   &vlen), 0);
	ck_assert_int_eq(fs_info_decode(v, vlen, &fi), 0);
	ck_assert_uint_eq(fi.ndisks, ndisks);
	ck_assert_uint_eq(fi.sections, sections);
	free(v);

	struct inode_rec r;
	ck_assert_int_eq(store_get(st, NULL, key, key_inode(key, 1), &v, &vlen), 0);
	ck_assert_int_eq(inode_rec_decode(v, vlen, &r), 0);
	ck_assert_uint_eq(r.mode, S_IFDIR | 0755);
	ck_assert_uint_eq(r.nlink, 3);
	ck_assert_uint_eq(r.uid, getuid());
	ck_assert_uint_eq(r.parent, 1);
	free(v);
	ck_assert_int_eq(store_get(st, NULL, key, key_inode(key, 2), &v, &vlen), 0);
	ck_assert_int_eq(inode_rec_decode(v, vlen, &r), 0);
	ck_assert_uint_eq(r.mode, S_IFDIR | 0700);
	ck_assert_uint_eq(r.nlink, 2);
	ck_assert_uint_eq(r.parent, 1);
	free(v);

	uint64_t ino;
	uint8_t type;
	ck_assert_int_eq(store_get(st, NULL, key,
				   key_dirent(key, 1, "lost+found", 10), &v,
				   &vlen), 0);
	ck_assert_int_eq(dirent_val_decode(v, vlen, &ino, &type), 0);
	ck_assert_uint_eq(ino, 2);
	ck_assert_uint_eq(type, DT_DIR);
	free(v);

	for (uint32_t s = 0; s < sections; s += sections / 7 + 1) {
		ck_assert_int_eq(store_get(st, NULL, key, key_section(key, s), &v,
					   &vlen), 0);
		uint32_t disk;
		ck_assert_int_eq(section_value_decode(v, vlen, &disk), 0);
		ck_assert_uint_eq(disk, s % ndisks);
		free(v);
	}
	for (uint32_t i = 0; i < ndisks; i++) {
		ck_assert_int_eq(store_get(st, NULL, key, key_disk(key, i), &v,
					   &vlen), 0);
		ck_assert_uint_gt(vlen, 16);
		free(v);
	}
	ck_assert_int_eq(store_close(st), 0);
}

START_TEST(one_disk_defaults)
{
	struct fst f;
	ck_assert_int_eq(fst_init(&f, "mkfs1", 1), 0);
	char out[OUT_CAP];
	ck_assert_int_eq(mkfs(out, f.disks[0], NULL), 0);
	/* The plan opens with the version line, as mkfs.lsmfs -V prints it. */
	char banner[80];
	snprintf(banner, sizeof(banner), "mkfs.lsmfs %s (format %d)\n", LSMFS_RELEASE, LSMFS_VERSION);
	ck_assert_msg(!strncmp(out, banner, strlen(banner)), "mkfs's first line: %.80s", out);
	ck_assert_ptr_nonnull(strstr(out, "Creating lsmfs filesystem with 1 disk, "
				     "1024 sections, 4 MiB chunks, 4096-byte"));
	ck_assert_ptr_nonnull(strstr(out, "Writing superblocks and filesystem "
				     "accounting information: done"));

	struct lsmfs_super sb;
	read_super(f.disks[0], &sb);
	ck_assert_uint_eq(sb.version, LSMFS_SUPER_VERSION);
	ck_assert_uint_eq(sb.generation, 0);
	ck_assert_uint_eq(sb.meta_count, 1); /* one disk: one copy */
	ck_assert_uint_eq(sb.meta[0].disk, 0);
	ck_assert_uint_eq(sb.disk_index, 0);
	ck_assert_uint_eq(sb.disk_count, 1);
	ck_assert_uint_eq(sb.sections, 1024);
	ck_assert_uint_eq(sb.chunk_size, 4u << 20);
	ck_assert_uint_eq(sb.inline_max, 4096);
	ck_assert_str_eq(sb.meta[0].dir, "");
	ck_assert_str_eq(sb.label, "");
	ck_assert_mem_eq(sb.disk_uuid, sb.disk_uuids[0], 16);
	ck_assert_uint_eq(sb.fs_uuid[6] >> 4, 4); /* version 4 UUID */
	for (int s = 0; s < 1024; s++)
		ck_assert(exists("%s/.lsmfs/sections/%d", f.disks[0], s));
	ck_assert(!exists("%s/.lsmfs/sections/1024", f.disks[0]));
	ck_assert(exists("%s/.lsmfs/meta/CURRENT", f.disks[0]));

	char meta[1024];
	snprintf(meta, sizeof(meta), "%s/.lsmfs/meta", f.disks[0]);
	check_store(meta, 1, 1024);
	fst_cleanup(&f);
}
END_TEST

/* --meta-copies and --meta DIR,DIR: where the copies go, and what is
 * refused. */
START_TEST(meta_copies)
{
	struct fst f;
	ck_assert_int_eq(fst_init(&f, "mkfsc", 3), 0);
	char out[OUT_CAP];
	ck_assert_int_eq(mkfs(out, "-q", "--meta-copies", "3", f.disks[0], f.disks[1], f.disks[2],
			      NULL), 0);
	struct lsmfs_super sb;
	read_super(f.disks[2], &sb);
	ck_assert_uint_eq(sb.meta_count, 3);
	for (int c = 0; c < 3; c++) {
		char meta[1024];
		snprintf(meta, sizeof(meta), "%s/.lsmfs/meta", f.disks[c]);
		check_store(meta, 3, 1024);
	}
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta-copies", "1", f.disks[0], f.disks[1],
			      NULL), 0);
	read_super(f.disks[1], &sb);
	ck_assert_uint_eq(sb.meta_count, 1);
	ck_assert(!exists("%s/.lsmfs/meta", f.disks[1]));
	/* Refused: more copies than disks, none, past the most, a count
	 * that disagrees with --meta, one directory twice. */
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta-copies", "3", f.disks[0], f.disks[1],
			      NULL), 1);
	ck_assert_ptr_nonnull(strstr(out, "only 2 disks given"));
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta-copies", "0", f.disks[0], NULL), 1);
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta-copies", "5", f.disks[0], NULL), 1);
	ck_assert_ptr_nonnull(strstr(out, "from 1 to 4"));
	char m1[1024], m2[1024], both[2100];
	snprintf(m1, sizeof(m1), "%s/m1", f.root);
	snprintf(m2, sizeof(m2), "%s/m2", f.root);
	snprintf(both, sizeof(both), "%s,%s", m1, m2);
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta-copies", "1", "--meta", both, f.disks[0],
			      NULL), 1);
	ck_assert_ptr_nonnull(strstr(out, "names 2 directories"));
	snprintf(both, sizeof(both), "%s,%s", m1, m1);
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta", both, f.disks[0], NULL), 1);
	ck_assert_ptr_nonnull(strstr(out, "given twice"));
	/* Two directories: a copy in each, none on the disks. */
	snprintf(both, sizeof(both), "%s,%s", m1, m2);
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta", both, f.disks[0], f.disks[1], NULL), 0);
	read_super(f.disks[0], &sb);
	ck_assert_uint_eq(sb.meta_count, 2);
	ck_assert_uint_eq(sb.meta[0].disk, LSMFS_META_ON_DIR);
	ck_assert_uint_eq(sb.meta[1].disk, LSMFS_META_ON_DIR);
	check_store(m1, 2, 1024);
	check_store(m2, 2, 1024);
	ck_assert(exists("%s/lsmfs-meta", m2));
	ck_assert(!exists("%s/.lsmfs/meta", f.disks[0]));
	fst_cleanup(&f);
}
END_TEST

START_TEST(three_disks_uuid_label_order)
{
	struct fst f;
	ck_assert_int_eq(fst_init(&f, "mkfs3", 3), 0);
	const char *uuid = "0123abcd-4567-89ab-cdef-0123456789AB";
	char out[OUT_CAP];
	ck_assert_int_eq(mkfs(out, "-U", uuid, "-L", "backup", "--sections",
			      "100", "--chunk-size", "64K", "--inline-max", "1K",
			      f.disks[0], f.disks[1], f.disks[2], NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "3 disks, 100 sections, 64 KiB chunks, "
				     "1024-byte inline limit"));
	ck_assert_ptr_nonnull(strstr(out, "Label: backup"));
	ck_assert_ptr_nonnull(strstr(out, "Filesystem UUID: "
				     "0123abcd-4567-89ab-cdef-0123456789ab"));
	ck_assert_ptr_nonnull(strstr(out, "34 sections)"));
	ck_assert_ptr_nonnull(strstr(out, "33 sections)"));

	uint8_t want[16];
	ck_assert_int_eq(lsmfs_uuid_parse(uuid, want), 0);
	struct lsmfs_super sb[3];
	for (uint32_t i = 0; i < 3; i++) {
		read_super(f.disks[i], &sb[i]);
		ck_assert_uint_eq(sb[i].disk_index, i);
		ck_assert_uint_eq(sb[i].disk_count, 3);
		ck_assert_uint_eq(sb[i].sections, 100);
		ck_assert_uint_eq(sb[i].chunk_size, 65536);
		ck_assert_uint_eq(sb[i].inline_max, 1024);
		ck_assert_str_eq(sb[i].label, "backup");
		ck_assert_mem_eq(sb[i].fs_uuid, want, 16);
		ck_assert_mem_eq(sb[i].disk_uuid, sb[0].disk_uuids[i], 16);
		ck_assert_mem_eq(sb[i].disk_uuids, sb[0].disk_uuids, 48);
	}
	ck_assert_mem_ne(sb[0].disk_uuid, sb[1].disk_uuid, 16);
	ck_assert_mem_ne(sb[1].disk_uuid, sb[2].disk_uuid, 16);
	ck_assert_mem_ne(sb[0].disk_uuid, sb[2].disk_uuid, 16);
	for (uint32_t s = 0; s < 100; s++)
		for (uint32_t i = 0; i < 3; i++)
			ck_assert(exists("%s/.lsmfs/sections/%u", f.disks[i], s) ==
				  (s % 3 == i));
	/* Two copies of the store by default, on disks 0 and 1. */
	ck_assert_ptr_nonnull(strstr(out, "Metadata store, copy 2 of 2: "));
	for (uint32_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(sb[i].meta_count, 2);
		ck_assert_uint_eq(sb[i].meta[0].disk, 0);
		ck_assert_uint_eq(sb[i].meta[1].disk, 1);
	}
	ck_assert(!exists("%s/.lsmfs/meta", f.disks[2]));
	char meta[1024];
	for (int c = 0; c < 2; c++) {
		snprintf(meta, sizeof(meta), "%s/.lsmfs/meta", f.disks[c]);
		check_store(meta, 3, 100);
	}

	/* Any order in, sorted by index out. */
	char spec[1024], err[512];
	snprintf(spec, sizeof(spec), "%s:%s:%s", f.disks[2], f.disks[0],
		 f.disks[1]);
	struct lsmfs_diskset *ds;
	ck_assert_msg(open_set(spec, 0, &ds, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(ds->ndisks, 3);
	for (int i = 0; i < 3; i++) {
		char *real = realpath(f.disks[i], NULL);
		ck_assert_str_eq(ds->paths[i], real);
		ck_assert_int_eq(ds->lock_fds[i], -1);
		free(real);
	}
	ck_assert_uint_eq(ds->sb.disk_index, 0);
	char *real0 = realpath(f.disks[0], NULL);
	snprintf(meta, sizeof(meta), "%s/.lsmfs/meta", real0);
	ck_assert_str_eq(ds->meta_dir, meta);
	free(real0);
	diskset_close(ds);
	fst_cleanup(&f);
}
END_TEST

START_TEST(meta_elsewhere)
{
	struct fst f;
	ck_assert_int_eq(fst_init(&f, "mkfsmeta", 2), 0);
	char meta[512], want[1024], mark[1100], err[512];
	snprintf(meta, sizeof(meta), "%s/meta", f.root);
	ck_assert_int_eq(mkfs(NULL, "-q", "--meta", meta, f.disks[0], f.disks[1],
			      NULL), 0);
	char *root = realpath(f.root, NULL);
	snprintf(want, sizeof(want), "%s/meta", root);
	free(root);

	struct lsmfs_super sb;
	read_super(f.disks[1], &sb);
	ck_assert_uint_eq(sb.meta_count, 1);
	ck_assert_uint_eq(sb.meta[0].disk, LSMFS_META_ON_DIR);
	ck_assert_str_eq(sb.meta[0].dir, want);
	ck_assert(!exists("%s/.lsmfs/meta", f.disks[0]));
	ck_assert(exists("%s/CURRENT", meta));
	check_store(meta, 2, 1024);

	char uuid[37], text[64] = "";
	lsmfs_uuid_format(sb.fs_uuid, uuid);
	snprintf(mark, sizeof(mark), "%s/lsmfs-meta", meta);
	FILE *fp = fopen(mark, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(fgets(text, sizeof(text), fp));
	fclose(fp);
	ck_assert_uint_eq(strlen(text), 37);
	ck_assert_int_eq(strncmp(text, uuid, 36), 0);
	ck_assert_int_eq(text[36], '\n');

	struct lsmfs_diskset *ds;
	ck_assert_msg(open_set(f.spec, 0, &ds, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(ds->meta_dir, want);
	diskset_close(ds);

	/* A store with another filesystem's mark is not ours. */
	fp = fopen(mark, "w");
	fputs("00000000-0000-4000-8000-000000000000\n", fp);
	fclose(fp);
	ck_assert_int_eq(open_set(f.spec, 0, &ds, err, sizeof(err)), -EXDEV);
	ck_assert_ptr_nonnull(strstr(err, "another filesystem"));

	/* An existing store in --meta DIR is refused, then overwritten by -f. */
	char out[OUT_CAP];
	fst_rmtree(f.disks[0]);
	fst_rmtree(f.disks[1]);
	mkdir(f.disks[0], 0755);
	mkdir(f.disks[1], 0755);
	ck_assert_int_eq(mkfs(out, "-q", "--meta", meta, f.disks[0], f.disks[1],
			      NULL), 1);
	ck_assert_ptr_nonnull(strstr(out, "already holds an lsmfs metadata store"));
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta", meta, f.disks[0],
			      f.disks[1], NULL), 0);
	ck_assert_msg(open_set(f.spec, 0, &ds, err, sizeof(err)) == 0, "%s", err);
	diskset_close(ds);

	/* -f back to the default store clears the old one it named. */
	ck_assert_int_eq(mkfs(out, "-q", "-f", f.disks[0], f.disks[1], NULL), 0);
	ck_assert(!exists("%s/CURRENT", meta));
	ck_assert(!exists("%s/lsmfs-meta", meta));
	ck_assert(exists("%s/.lsmfs/meta/CURRENT", f.disks[0]));

	/* A --meta directory holding foreign files is refused even with -f. */
	touch(meta, "precious");
	ck_assert_int_eq(mkfs(out, "-q", "-f", "--meta", meta, f.disks[0],
			      f.disks[1], NULL), 1);
	ck_assert_ptr_nonnull(strstr(out, "directory is not empty"));
	ck_assert(exists("%s/precious", meta));
	fst_cleanup(&f);
}
END_TEST

/* One refused invocation: exit status 1 and the one-line reason. */
static void refused(const char *want, ...)
{
	const char *argv[32];
	int n = 0;
	argv[n++] = getenv("MKFS_BIN");
	va_list ap;
	va_start(ap, want);
	const char *a;
	while ((a = va_arg(ap, const char *)) && n < 31)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	char out[OUT_CAP];
	int rc = fst_run(argv, out, sizeof(out));
	ck_assert_msg(rc == 1, "exit %d, want 1 (%s): %s", rc, want, out);
	ck_assert_msg(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
}

START_TEST(refusals)
{
	struct fst f;
	ck_assert_int_eq(fst_init(&f, "mkfsref", 3), 0);
	const char *d0 = f.disks[0], *d1 = f.disks[1], *d2 = f.disks[2];
	char line[1024], missing[512], twice[512];

	touch(d1, "data");
	snprintf(line, sizeof(line), "mkfs.lsmfs: %s: directory is not empty "
		 "(use -f to override)\n", d1);
	refused(line, "-q", d0, d1, NULL);
	ck_assert(!exists("%s/.lsmfs", d0)); /* nothing made before refusing */

	snprintf(missing, sizeof(missing), "%s/nope", f.root);
	refused("nope: no such directory", d0, missing, NULL);
	snprintf(twice, sizeof(twice), "%s/../disk0/.", d0);
	refused("given twice (same directory as", d0, twice, NULL);
	refused("given twice", d0, d0, NULL);

	refused("chunk size '5000'", "--chunk-size", "5000", d0, NULL);
	refused("chunk size '2K'", "--chunk-size", "2K", d0, NULL);
	refused("chunk size '2G'", "--chunk-size", "2G", d0, NULL);
	refused("chunk size '4X'", "--chunk-size", "4X", d0, NULL);
	refused("sections '0'", "--sections", "0", d0, NULL);
	refused("sections '1048577'", "--sections", "1048577", d0, NULL);
	refused("sections 'ten'", "--sections", "ten", d0, NULL);
	refused("fewer than the 2 disks", "--sections", "1", d0, d2, NULL);
	refused("inline limit '65537'", "--inline-max", "65537", d0, NULL);
	refused("must be below the chunk size", "--chunk-size", "4K",
		"--inline-max", "4K", d0, NULL);
	refused("label '0123456789abcdefg': longer than 16 bytes", "-L",
		"0123456789abcdefg", d0, NULL);
	refused("UUID 'not-a-uuid': not a valid UUID", "-U", "not-a-uuid", d0,
		NULL);
	refused("Usage:", NULL);
	refused("Usage:", "--frobnicate", d0, NULL);
	refused("needs an argument", d0, "--sections", NULL);
	ck_assert(!exists("%s/.lsmfs", d0));

	/* An existing filesystem, then -f over it. */
	char out[OUT_CAP];
	ck_assert_int_eq(mkfs(out, "-q", d0, d2, NULL), 0);
	struct lsmfs_super old, now;
	read_super(d0, &old);
	char uuid[37];
	lsmfs_uuid_format(old.fs_uuid, uuid);
	snprintf(line, sizeof(line), "mkfs.lsmfs: %s: already holds an lsmfs "
		 "filesystem (UUID %s); use -f to overwrite\n", d0, uuid);
	refused(line, "-q", d0, NULL);
	snprintf(line, sizeof(line), "%s/.lsmfs/sections/0", d0);
	touch(line, "1.0"); /* a chunk file of the old filesystem */
	ck_assert_int_eq(mkfs(out, "-q", "-f", d0, NULL), 0);
	read_super(d0, &now);
	ck_assert_mem_ne(old.fs_uuid, now.fs_uuid, 16);
	ck_assert_uint_eq(now.disk_count, 1);
	ck_assert(!exists("%s/.lsmfs/sections/0/1.0", d0));

	/* -f on a directory with someone else's files keeps them. */
	ck_assert_int_eq(mkfs(out, "-q", "-f", d1, NULL), 0);
	ck_assert(exists("%s/data", d1));
	read_super(d1, &now);

	/* A mke2fs mount point: only lost+found, which counts as empty. */
	fst_rmtree(d2);
	mkdir(d2, 0755);
	snprintf(line, sizeof(line), "%s/lost+found", d2);
	mkdir(line, 0700);
	ck_assert_int_eq(mkfs(out, "-q", d2, NULL), 0);
	read_super(d2, &now);
	fst_cleanup(&f);
}
END_TEST

START_TEST(damaged_superblock)
{
	struct fst f;
	ck_assert_int_eq(fst_init(&f, "mkfsbad", 2), 0);
	ck_assert_int_eq(mkfs(NULL, "-q", "-L", "x", f.disks[0], f.disks[1],
			      NULL), 0);
	struct lsmfs_super sb;
	char err[512], out[OUT_CAP];

	flip_byte(f.disks[1], 40); /* inside the disk UUID: checksum catches it */
	ck_assert_int_eq(super_read(f.disks[1], &sb, err, sizeof(err)), -EUCLEAN);
	ck_assert_msg(strstr(err, "offset") && strstr(err, "checksum"), "%s", err);
	ck_assert_msg(strstr(err, ".lsmfs/super"), "%s", err);
	struct lsmfs_diskset *ds;
	ck_assert_int_eq(open_set(f.spec, 0, &ds, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "checksum"));
	ck_assert_int_eq(mkfs(out, "-q", f.disks[1], NULL), 1);
	ck_assert_ptr_nonnull(strstr(out, "damaged lsmfs superblock"));
	flip_byte(f.disks[1], 40);
	ck_assert_int_eq(super_read(f.disks[1], &sb, err, sizeof(err)), 0);

	flip_byte(f.disks[1], 0);
	ck_assert_int_eq(super_read(f.disks[1], &sb, err, sizeof(err)), -EUCLEAN);
	ck_assert_msg(strstr(err, "offset 0: bad magic"), "%s", err);
	flip_byte(f.disks[1], 0);
	flip_byte(f.disks[1], 8);
	ck_assert_int_eq(super_read(f.disks[1], &sb, err, sizeof(err)), -EUCLEAN);
	ck_assert_msg(strstr(err, "offset 8: unsupported format version"), "%s",
		      err);
	flip_byte(f.disks[1], 8);
	flip_byte(f.disks[1], 12);
	ck_assert_int_eq(super_read(f.disks[1], &sb, err, sizeof(err)), -EUCLEAN);
	ck_assert_msg(strstr(err, "offset 12: length"), "%s", err);
	flip_byte(f.disks[1], 12);
	ck_assert_int_eq(super_read(f.disks[1], &sb, err, sizeof(err)), 0);

	/* -f overwrites a damaged disk. */
	flip_byte(f.disks[1], 50);
	ck_assert_int_eq(mkfs(out, "-q", "-f", f.disks[1], NULL), 0);
	ck_assert_int_eq(super_read(f.disks[1], &sb, err, sizeof(err)), 0);
	fst_cleanup(&f);
}
END_TEST

/* Field checks that only a well-checksummed but wrong block reaches. */
START_TEST(codec_ranges)
{
	struct lsmfs_super sb, back;
	memset(&sb, 0, sizeof(sb));
	sb.version = LSMFS_VERSION;
	sb.disk_count = 2;
	sb.disk_index = 1;
	sb.sections = 8;
	sb.chunk_size = 8192;
	sb.inline_max = 100;
	sb.created = 1234567890123ull;
	memcpy(sb.label, "sixteen-bytes-ok", 16);
	sb.meta_count = 2;
	sb.meta[0].disk = LSMFS_META_ON_DIR;
	strcpy(sb.meta[0].dir, "/srv/meta");
	sb.meta[1].disk = 1;
	for (int i = 0; i < 16; i++) {
		sb.fs_uuid[i] = (uint8_t)i;
		sb.disk_uuids[0][i] = (uint8_t)(i + 1);
		sb.disk_uuids[1][i] = (uint8_t)(i + 2);
	}
	memcpy(sb.disk_uuid, sb.disk_uuids[1], 16);
	sb.generation = 0x123456789aull;
	uint8_t buf[LSMFS_SUPER_MAX];
	size_t len;
	char err[256];
	ck_assert_int_eq(super_encode(&sb, buf, sizeof(buf), &len), 0);
	/* fixed part, copy count, two copies (6 + 9, 6 + 0), two UUIDs, checksum */
	ck_assert_uint_eq(len, 108 + 4 + 15 + 6 + 32 + 8);
	ck_assert_int_eq(super_encode(&sb, buf, len - 1, &len), -ENOSPC);
	ck_assert_int_eq(super_encode(&sb, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(super_decode(buf, len, &back, err, sizeof(err)), 0);
	ck_assert_str_eq(back.label, "sixteen-bytes-ok");
	ck_assert_uint_eq(back.meta_count, 2);
	ck_assert_uint_eq(back.meta[0].disk, LSMFS_META_ON_DIR);
	ck_assert_str_eq(back.meta[0].dir, "/srv/meta");
	ck_assert_uint_eq(back.meta[1].disk, 1);
	ck_assert_str_eq(back.meta[1].dir, "");
	ck_assert_uint_eq(back.created, 1234567890123ull);
	ck_assert_mem_eq(back.disk_uuids, sb.disk_uuids, 32);
	ck_assert_uint_eq(back.generation, 0x123456789aull);
	ck_assert_uint_eq(back.flags, 0);
	ck_assert_int_eq(super_decode(buf, len - 1, &back, err, sizeof(err)),
			 -EUCLEAN);

	/* Versions 1 and 2 (one copy; version 1 without generation, flags or
	 * store disk) are read forever: written here by hand. */
	for (uint32_t version = 1; version <= 2; version++) {
		uint8_t old[LSMFS_SUPER_MAX];
		size_t fixed = version == 1 ? 98 : 114, ml = strlen("/srv/meta");
		size_t olen = fixed + ml + 32 + 8;
		memset(old, 0, sizeof(old));
		memcpy(old, buf, 96);
		put_le32(old + 8, version);
		put_le32(old + 12, (uint32_t)olen);
		if (version == 2) {
			put_le64(old + 96, 7);
			put_le32(old + 108, 1); /* store disk, ignored with a path */
		}
		old[fixed - 2] = (uint8_t)ml;
		memcpy(old + fixed, "/srv/meta", ml);
		memcpy(old + fixed + ml, sb.disk_uuids, 32);
		put_le64(old + olen - 8, XXH3_64bits(old, olen - 8));
		ck_assert_int_eq(super_decode(old, olen, &back, err, sizeof(err)), 0);
		ck_assert_uint_eq(back.version, version);
		ck_assert_uint_eq(back.generation, version == 1 ? 0 : 7);
		ck_assert_uint_eq(back.meta_count, 1);
		ck_assert_uint_eq(back.meta[0].disk, LSMFS_META_ON_DIR);
		ck_assert_str_eq(back.meta[0].dir, "/srv/meta");
		ck_assert_mem_eq(back.disk_uuids, sb.disk_uuids, 32);
		/* Without a path: the store on the store disk (version 1: 0). */
		olen -= ml;
		old[fixed - 2] = 0;
		put_le32(old + 12, (uint32_t)olen);
		memcpy(old + fixed, sb.disk_uuids, 32);
		put_le64(old + olen - 8, XXH3_64bits(old, olen - 8));
		ck_assert_int_eq(super_decode(old, olen, &back, err, sizeof(err)), 0);
		ck_assert_uint_eq(back.meta[0].disk, version == 1 ? 0 : 1);
		ck_assert_str_eq(back.meta[0].dir, "");
	}
	/* A disk whose own slot is empty, a copy on an empty slot or two
	 * copies on one disk, or unknown flags, are refused. */
	struct lsmfs_super e = sb;
	memset(e.disk_uuids[1], 0, 16);
	ck_assert_int_eq(super_encode(&e, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(super_decode(buf, len, &back, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "empty slot in the disk list"));
	e = sb;
	e.meta[0].disk = 1; /* two copies on disk 1 */
	e.meta[0].dir[0] = 0;
	ck_assert_int_eq(super_encode(&e, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(super_decode(buf, len, &back, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "both on disk 1"));
	e = sb;
	e.meta[1].disk = 0;
	memset(e.disk_uuids[0], 0, 16); /* the copy on disk 0, whose slot is empty */
	ck_assert_int_eq(super_encode(&e, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(super_decode(buf, len, &back, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "offset 108"));
	e = sb;
	e.flags = 6;
	ck_assert_int_eq(super_encode(&e, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(super_decode(buf, len, &back, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "offset 104"));

	struct { uint32_t index, count, sections; uint64_t chunk; const char *msg; }
	bad[] = {
		{ 2, 2, 8, 8192, "offset 48" },
		{ 0, 0, 8, 8192, "offset 52" },
		{ 0, 2, 0, 8192, "offset 56" },
		{ 0, 2, 8, 12288, "offset 64" },
		{ 0, 2, 8, 2048, "offset 64" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* Encode a valid block, then patch the field and re-seal it. */
		ck_assert_int_eq(super_encode(&sb, buf, sizeof(buf), &len), 0);
		put_le32(buf + 48, bad[i].index);
		put_le32(buf + 52, bad[i].count);
		put_le32(buf + 56, bad[i].sections);
		put_le64(buf + 64, bad[i].chunk);
		put_le64(buf + len - 8, XXH3_64bits(buf, len - 8));
		ck_assert_int_eq(super_decode(buf, len, &back, err, sizeof(err)),
				 -EUCLEAN);
		ck_assert_msg(strstr(err, bad[i].msg), "%zu: %s", i, err);
	}

	uint8_t u[16];
	char text[37];
	ck_assert_int_eq(lsmfs_uuid_generate(u), 0);
	lsmfs_uuid_format(u, text);
	ck_assert_uint_eq(strlen(text), 36);
	uint8_t back_u[16];
	ck_assert_int_eq(lsmfs_uuid_parse(text, back_u), 0);
	ck_assert_mem_eq(u, back_u, 16);
	ck_assert_int_eq(lsmfs_uuid_parse("0123abcd-4567-89ab-cdef-0123456789a", u),
			 -EINVAL);
	ck_assert_int_eq(lsmfs_uuid_parse("0123abcd-4567-89ab-cdef+0123456789ab",
					  u), -EINVAL);
	ck_assert_int_eq(lsmfs_uuid_parse("0123abcd-4567-89ab-cdef-0123456789ag",
					  u), -EINVAL);
}
END_TEST

START_TEST(diskset_refusals)
{
	struct fst f;
	ck_assert_int_eq(fst_init(&f, "mkfsset", 5), 0);
	char spec[4096], err[512], out[OUT_CAP];
	struct lsmfs_diskset *ds = NULL;
	const char **d = (const char *[]){ f.disks[0], f.disks[1], f.disks[2],
					   f.disks[3], f.disks[4] };

	ck_assert_int_eq(mkfs(out, "-q", d[0], d[1], d[2], NULL), 0);
	ck_assert_int_eq(mkfs(out, "-q", d[3], NULL), 0);

	snprintf(spec, sizeof(spec), "%s:%s:%s/gone", d[0], d[1], f.root);
	ck_assert_int_eq(open_set(spec, 0, &ds, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "gone"));

	snprintf(spec, sizeof(spec), "%s:%s:%s", d[0], d[1], d[4]);
	ck_assert_int_eq(open_set(spec, 0, &ds, err, sizeof(err)), -EMEDIUMTYPE);
	ck_assert_ptr_nonnull(strstr(err, "disk4"));

	snprintf(spec, sizeof(spec), "%s:%s:%s:%s", d[0], d[1], d[2], d[3]);
	ck_assert_int_eq(open_set(spec, 0, &ds, err, sizeof(err)), -EXDEV);
	ck_assert_ptr_nonnull(strstr(err, "another filesystem"));

	snprintf(spec, sizeof(spec), "%s:%s:%s:%s/.", d[0], d[1], d[2], d[1]);
	ck_assert_int_eq(open_set(spec, 0, &ds, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "given twice"));

	/* A copy of disk 1's superblock elsewhere: same index twice. */
	char path[1100];
	snprintf(path, sizeof(path), "%s/.lsmfs", d[4]);
	mkdir(path, 0755);
	struct lsmfs_super sb;
	read_super(d[1], &sb);
	ck_assert_int_eq(super_write(d[4], &sb, err, sizeof(err)), 0);
	snprintf(spec, sizeof(spec), "%s:%s:%s:%s", d[0], d[1], d[2], d[4]);
	ck_assert_int_eq(open_set(spec, 0, &ds, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "disk 1 of the filesystem given twice"));

	snprintf(spec, sizeof(spec), "%s:%s", d[2], d[0]);
	ck_assert_int_eq(open_set(spec, 0, &ds, err, sizeof(err)), -ENODEV);
	ck_assert_msg(strstr(err, "disk 1 of 3") && strstr(err, "missing"),
		      "%s", err);

	snprintf(spec, sizeof(spec), "%s::%s", d[0], d[1]);
	ck_assert_int_eq(open_set(spec, 0, &ds, err, sizeof(err)), -EINVAL);

	/* Locks: flock conflicts between open file descriptions, so a second
	 * open in this process and one in a child are both refused. */
	snprintf(spec, sizeof(spec), "%s:%s:%s", d[1], d[2], d[0]);
	ck_assert_msg(open_set(spec, DISKSET_LOCK, &ds, err, sizeof(err)) == 0,
		      "%s", err);
	for (int i = 0; i < 3; i++)
		ck_assert_int_ge(ds->lock_fds[i], 0);
	char pid[32], lock[1100], text[64] = "";
	snprintf(pid, sizeof(pid), "process %ld", (long)getpid());
	snprintf(lock, sizeof(lock), "%s/.lsmfs/lock", d[2]);
	FILE *fp = fopen(lock, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(fgets(text, sizeof(text), fp));
	fclose(fp);
	ck_assert_int_eq(atol(text), (long)getpid());

	struct lsmfs_diskset *ds2 = NULL;
	ck_assert_int_eq(open_set(spec, DISKSET_LOCK, &ds2, err, sizeof(err)),
			 -EBUSY);
	ck_assert_msg(strstr(err, pid), "%s", err);
	ck_assert_ptr_null(ds2);
	ck_assert_int_eq(open_set(spec, 0, &ds2, err, sizeof(err)), 0);
	diskset_close(ds2);

	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct lsmfs_diskset *c = NULL;
		char e[512];
		_exit(diskset_open(spec, DISKSET_LOCK, &c, e, sizeof(e)) == -EBUSY
		      ? 0 : 1);
	}
	int st;
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* mkfs -f refuses a disk in use. */
	ck_assert_int_eq(mkfs(out, "-q", "-f", d[0], NULL), 1);
	ck_assert_ptr_nonnull(strstr(out, "in use by process"));

	diskset_close(ds);
	ck_assert_msg(open_set(spec, DISKSET_LOCK, &ds, err, sizeof(err)) == 0,
		      "%s", err);
	diskset_close(ds);
	fst_cleanup(&f);
}
END_TEST

static Suite *mkfs_suite(void)
{
	Suite *s = suite_create("mkfs");
	TCase *tc = tcase_create("mkfs");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, one_disk_defaults);
	tcase_add_test(tc, three_disks_uuid_label_order);
	tcase_add_test(tc, meta_copies);
	tcase_add_test(tc, meta_elsewhere);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, damaged_superblock);
	tcase_add_test(tc, codec_ranges);
	tcase_add_test(tc, diskset_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *bin = getenv("MKFS_BIN");
	if (!bin || !*bin) {
		fprintf(stderr, "\n*** SKIPPED: MKFS_BIN not set; run through "
			"meson test ***\n\n");
		return 77;
	}
	SRunner *sr = srunner_create(mkfs_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
