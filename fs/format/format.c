/*
 * format.c: the initial contents of a new filesystem (fs.h, fs_format;
 * fs/SCHEMA.md, "Keys of the metadata store" and "Sharding").
 *
 * Everything the store must hold goes in one synced batch, so the store is
 * either empty or complete: filesystem info, the inode counter, the disk
 * table, the section map, the root directory and /lost+found.  The section
 * directories are made (and their parents fsynced) before that batch
 * commits.  Superblocks are not written here: mkfs writes them after this
 * returns, so no superblock ever points at a half-made store.
 */
#include "format.h"
#include "schema.h"
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOST_FOUND "lost+found"

/* The store reports corruption and refusals through options.log; keep the
 * last line so our caller can print the store's own reason. */
struct log_sink {
	char msg[512];
};

static void keep_log(void *ctx, const char *msg)
{
	struct log_sink *sink = ctx;
	snprintf(sink->msg, sizeof(sink->msg), "%s", msg);
}

static int check_params(const struct fs_format_params *p, char *err,
			size_t errlen)
{
	if (p->ndisks == 0 || p->ndisks > LSMFS_MAX_DISKS) {
		(void)fs_set_err(err, errlen, 0, "disk count %u out of range 1..%d",
			p->ndisks, LSMFS_MAX_DISKS);
		return -EINVAL;
	}
	if (p->sections == 0) {
		(void)fs_set_err(err, errlen, 0, "section count is 0");
		return -EINVAL;
	}
	if (store_filter_check(&p->filter)) {
		(void)fs_set_err(err, errlen, 0, "table filter out of range");
		return -EINVAL;
	}
	if (p->chunk_size < 4096 || (p->chunk_size & (p->chunk_size - 1))) {
		(void)fs_set_err(err, errlen, 0, "chunk size %llu is not a power of two >= 4096",
			(unsigned long long)p->chunk_size);
		return -EINVAL;
	}
	if (p->data_copies > CHUNK_MAX_COPIES) {
		(void)fs_set_err(err, errlen, 0, "data copies %u: at most %d", p->data_copies,
				 CHUNK_MAX_COPIES);
		return -EINVAL;
	}
	if (p->placement && strcmp(p->placement, "spread") && strcmp(p->placement, "together")) {
		(void)fs_set_err(err, errlen, 0, "placement '%s': spread or together", p->placement);
		return -EINVAL;
	}
	if (p->inline_max >= p->chunk_size) {
		(void)fs_set_err(err, errlen, 0, "inline limit %u is not below the chunk size",
			p->inline_max);
		return -EINVAL;
	}
	if (p->label && strlen(p->label) > LSMFS_LABEL_MAX) {
		(void)fs_set_err(err, errlen, 0, "label longer than %d bytes", LSMFS_LABEL_MAX);
		return -EINVAL;
	}
	return 0;
}

static int make_dir(const char *path, char *err, size_t errlen)
{
	if (mkdir(path, 0700) != 0 && errno != EEXIST) {
		int rc = -errno;
		(void)fs_set_err(err, errlen, 0, "%s: cannot create: %s", path, strerror(-rc));
		return rc;
	}
	return 0;
}

static int sync_dir(const char *path, char *err, size_t errlen)
{
	int rc = lsmfs_fsync_dir(path);
	if (rc)
		(void)fs_set_err(err, errlen, 0, "%s: fsync: %s", path, strerror(-rc));
	return rc;
}

/* <disk>/.lsmfs/sections/<s>/ for each section s the map puts on disk i. */
static int make_section_dirs(const struct fs_format_params *p, uint32_t i,
			     char *err, size_t errlen)
{
	char top[4096], sections[4200], dir[4300], name[SECTION_NAME_MAX];
	snprintf(top, sizeof(top), "%s/" LSMFS_DIR, p->disk_paths[i]);
	section_disk_dir(p->disk_paths[i], sections, sizeof(sections));
	int rc = make_dir(top, err, errlen);
	if (rc == 0)
		rc = make_dir(sections, err, errlen);
	for (uint32_t s = 0; rc == 0 && s < p->sections; s++) {
		if (section_first_disk(s, p->ndisks) != i)
			continue;
		section_dir_name(s, name);
		snprintf(dir, sizeof(dir), "%s/%s", sections, name);
		rc = make_dir(dir, err, errlen);
	}
	/* New entries are durable only once their parents are synced. */
	if (rc == 0)
		rc = sync_dir(sections, err, errlen);
	if (rc == 0)
		rc = sync_dir(top, err, errlen);
	if (rc == 0)
		rc = sync_dir(p->disk_paths[i], err, errlen);
	return rc;
}

static void dir_inode(struct inode_rec *r, uint32_t perm, uint32_t nlink,
		      const struct timespec *now)
{
	memset(r, 0, sizeof(*r));
	r->mode = S_IFDIR | perm;
	r->parent = LSMFS_ROOT_INO; /* the root is its own parent */
	r->uid = (uint32_t)getuid();
	r->gid = (uint32_t)getgid();
	r->nlink = nlink;
	r->atime_sec = r->mtime_sec = r->ctime_sec = r->btime_sec = now->tv_sec;
	r->atime_nsec = r->mtime_nsec = r->ctime_nsec = r->btime_nsec =
		(uint32_t)now->tv_nsec;
}

/* Every key of a new filesystem, in one batch. */
static int fill_batch(struct store_batch *b, const struct fs_format_params *p)
{
	uint8_t key[KEY_MAX], val[FS_INFO_MAX + LSMFS_META_PATH_MAX + 4096];
	size_t klen;
	int rc;

	struct fs_info fi;
	memset(&fi, 0, sizeof(fi));
	fi.version = LSMFS_VERSION;
	memcpy(fi.fs_uuid, p->fs_uuid, 16);
	fi.sections = p->sections;
	fi.chunk_size = p->chunk_size;
	fi.inline_max = p->inline_max;
	fi.ndisks = p->ndisks;
	fi.created = p->created;
	snprintf(fi.label, sizeof(fi.label), "%s", p->label ? p->label : "");
	klen = key_meta(key, META_FS);
	rc = store_batch_put(b, key, klen, val, fs_info_encode(&fi, val));
	if (rc)
		return rc;

	/* The table filter (SCHEMA.md "Metadata store options"). */
	char text[64];
	store_filter_format(&p->filter, text, sizeof(text));
	klen = key_meta(key, META_FILTER);
	rc = store_batch_put(b, key, klen, text, strlen(text));
	if (rc)
		return rc;

	/* Inodes 1 and 2 exist; the daemon starts handing out 3. */
	klen = key_meta(key, META_NEXT_INO);
	put_le64(val, LSMFS_LOST_FOUND_INO + 1);
	rc = store_batch_put(b, key, klen, val, 8);
	if (rc)
		return rc;

	for (uint32_t i = 0; i < p->ndisks; i++) {
		size_t vlen = disk_rec_encode(p->disk_uuids[i], p->disk_paths[i], val);
		if (!vlen)
			return -ENAMETOOLONG;
		klen = key_disk(key, i);
		rc = store_batch_put(b, key, klen, val, vlen);
		if (rc)
			return rc;
	}

	for (uint32_t s = 0; s < p->sections; s++) {
		section_value_encode(section_first_disk(s, p->ndisks), val);
		klen = key_section(key, s);
		rc = store_batch_put(b, key, klen, val, SECTION_VAL_LEN);
		if (rc)
			return rc;
	}

	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct inode_rec r;
	uint8_t rec[INODE_REC_LEN];
	/* The root's links: its own ".", its name (the root's ".." is
	 * itself), and lost+found's "..". */
	dir_inode(&r, 0755, 3, &now);
	/* The filesystem's data policy: the root's attributes, inherited by
	 * what is made below (fs/engine/attr/policy.c). */
	char copies[2] = {(char)('0' + p->data_copies), 0};
	const struct {
		const char *name, *value;
	} policy[] = {
		{"user.lsmfs.copies", p->data_copies > 1 ? copies : NULL},
		{"user.lsmfs.placement", p->placement},
	};
	for (size_t i = 0; i < sizeof(policy) / sizeof(policy[0]); i++) {
		if (!policy[i].value)
			continue;
		r.flags |= INODE_FLAG_XATTR;
		uint8_t xk[KEY_MAX + 32];
		size_t xl = key_xattr(xk, LSMFS_ROOT_INO, policy[i].name, strlen(policy[i].name));
		rc = store_batch_put(b, xk, xl, policy[i].value, strlen(policy[i].value));
		if (rc)
			return rc;
	}
	inode_rec_encode(&r, rec);
	klen = key_inode(key, LSMFS_ROOT_INO);
	rc = store_batch_put(b, key, klen, rec, sizeof(rec));
	if (rc)
		return rc;
	/* fsck reconnects orphans here, so it must not be world-readable. */
	dir_inode(&r, 0700, 2, &now);
	inode_rec_encode(&r, rec);
	klen = key_inode(key, LSMFS_LOST_FOUND_INO);
	rc = store_batch_put(b, key, klen, rec, sizeof(rec));
	if (rc)
		return rc;

	uint8_t dv[DIRENT_VAL_LEN];
	dirent_val_encode(LSMFS_LOST_FOUND_INO, DT_DIR, dv);
	klen = key_dirent(key, LSMFS_ROOT_INO, LOST_FOUND, strlen(LOST_FOUND));
	return store_batch_put(b, key, klen, dv, sizeof(dv));
}

int fs_format(const char *store_dir, const struct fs_format_params *p,
	      char *err, size_t errlen)
{
	int rc = check_params(p, err, errlen);
	if (rc)
		return rc;

	struct log_sink sink = { .msg = "" };
	struct store_options opt;
	store_options_init(&opt);
	opt.create_if_missing = true;
	opt.error_if_exists = true;
	opt.log = keep_log;
	opt.log_ctx = &sink;
	opt.copies = p->nstore_copies ? p->store_copies : NULL;
	opt.filter = p->filter;
	opt.ncopies = p->nstore_copies;
	struct store *st = NULL;
	struct store_batch *b = NULL;

	/* Open first: error_if_exists refuses an existing store before we
	 * touch the disks. */
	rc = store_open(store_dir, &opt, &st);
	if (rc) {
		if (rc == -EEXIST)
			(void)fs_set_err(err, errlen, 0, "%s: a metadata store already exists "
				"there", store_dir);
		else
			(void)fs_set_err(err, errlen, 0, "%s: cannot create the metadata store: "
				"%s", store_dir, sink.msg[0] ? sink.msg
							     : strerror(-rc));
		return rc;
	}

	for (uint32_t i = 0; i < p->ndisks; i++) {
		rc = make_section_dirs(p, i, err, errlen);
		if (rc)
			goto out;
	}

	b = store_batch_new();
	if (!b) {
		rc = -ENOMEM;
		(void)fs_set_err(err, errlen, 0, "out of memory");
		goto out;
	}
	rc = fill_batch(b, p);
	if (rc) {
		(void)fs_set_err(err, errlen, 0, "%s: cannot build the initial batch: %s",
			store_dir, strerror(-rc));
		goto out;
	}
	rc = store_write(st, b, STORE_WRITE_SYNC);
	if (rc) {
		char msg[512];
		store_errmsg(st, msg, sizeof(msg));
		(void)fs_set_err(err, errlen, 0, "%s: write: %s", store_dir,
			msg[0] ? msg : strerror(-rc));
	}
out:
	store_batch_free(b);
	int crc = store_close(st);
	if (rc == 0 && crc) {
		rc = crc;
		(void)fs_set_err(err, errlen, 0, "%s: close: %s", store_dir,
			sink.msg[0] ? sink.msg : strerror(-rc));
	}
	return rc;
}

/* The filesystem info as a mount reads it: its record, and that it belongs
 * to the disks whose superblock is sb (fs.h). */
int fs_info_load(struct store *st, const struct lsmfs_super *sb, const char *where,
		 struct fs_info *fi, char *err, size_t errlen)
{
	uint8_t k[KEY_MAX];
	size_t kl = key_meta(k, META_FS);
	void *val;
	size_t vl;
	int rc = store_get(st, NULL, k, kl, &val, &vl);
	if (rc) {
		snprintf(err, errlen, "%s: no filesystem information in the metadata store (%s)",
			 where, strerror(-rc));
		return rc == -ENOENT ? -EUCLEAN : rc;
	}
	rc = fs_info_decode(val, vl, fi);
	free(val);
	if (rc) {
		snprintf(err, errlen, "%s: filesystem information is damaged", where);
		return rc;
	}
	if (memcmp(fi->fs_uuid, sb->fs_uuid, 16) || fi->sections != sb->sections ||
	    fi->chunk_size != sb->chunk_size) {
		snprintf(err, errlen, "%s: metadata store belongs to another filesystem than the disks' superblocks",
			 where);
		return -EXDEV;
	}
	return 0;
}
