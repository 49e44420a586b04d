/*
 * control.c: the requests lsmfs-disk makes (SCHEMA.md, "Control
 * requests"), answered by a mounted daemon on its control socket
 * <store>/control, or by lsmfs-disk itself, offline, through
 * fs_control().  Either way the answer is the same lines.
 *
 * A request is one line; the answer is lines, the last of them `ok` or
 * `error <errno number> <message>`:
 *   status             one line of JSON: the disks, the section map, the
 *                      bytes each section holds and the move under way;
 *   move <s> <disk>    move section s to disk (move.c), answering
 *                      `progress <json>` lines as it goes;
 *   devstats [reset]   one line of JSON: each disk's error counters
 *                      (devstats.c), reset as they are read on request;
 *   scrub start|resume [rate], scrub status, scrub cancel
 *                      the online scrub (scrub.c);
 *   replace <old> [-n ][-f ]<path>, replace-end <old>
 *                      a disk replaced (replace.c);
 *   and the others SCHEMA.md lists.
 *
 * The socket is made mode 0600 by the daemon (root, normally), and every
 * connection is checked with SO_PEERCRED: a caller that is not root (uid 0)
 * is answered `error 1 ...` (EPERM) and nothing else.  Each connection has
 * its thread; unmount refuses new ones, cancels a move under way (it rolls
 * back) and waits for them.
 */
#include "engine.h"
#include "admin.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Bytes allocated to the chunk files of every section (by the map's disk),
 * into bytes[sections]. */
static void section_bytes(struct fs *fs, uint64_t *bytes)
{
	for (uint32_t s = 0; s < fs->info.sections; s++) {
		bytes[s] = 0;
		uint32_t d = section_disk_of(fs, s);
		char name[SECTION_NAME_MAX];
		section_dir_name(s, name);
		int fd = openat(fs->sections_fd[d], name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *dir = fd < 0 ? NULL : fdopendir(fd);
		if (!dir) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct dirent *de;
		while ((de = readdir(dir))) {
			struct stat st;
			if (de->d_name[0] != '.' &&
			    fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISREG(st.st_mode))
				bytes[s] += (uint64_t)st.st_blocks * 512;
		}
		closedir(dir);
	}
}

/* The path disk d had when last mounted (its `K` record), or "". */
static void last_path(struct fs *fs, uint32_t d, char path[DISK_REC_MAX])
{
	uint8_t k[KEY_MAX];
	void *v = NULL;
	size_t vl = 0;
	path[0] = 0;
	if (store_get(fs->st, NULL, k, key_disk(k, d), &v, &vl) == 0 && vl > 16 &&
	    vl - 16 < DISK_REC_MAX && !memchr((char *)v + 16, 0, vl - 16)) {
		memcpy(path, (char *)v + 16, vl - 16);
		path[vl - 16] = 0;
	}
	free(v);
}

/* status: a disk missing from a degraded mount, by the path it had when
 * last mounted. */
static void missing_disk(struct fs *fs, uint32_t d, bool first, struct json_out *o)
{
	uint64_t nsec = 0;
	for (uint32_t s = 0; s < fs->info.sections; s++)
		nsec += section_disk_of(fs, s) == d;
	char path[DISK_REC_MAX];
	last_path(fs, d, path);
	char u[37];
	lsmfs_uuid_format(fs->ds->sb.disk_uuids[d], u);
	json_put(o, "%s{\"index\":%" PRIu32 ",\"uuid\":\"%s\",\"path\":", first ? "" : ",", d, u);
	json_put_str(o, path);
	json_put(o, ",\"capacity\":0,\"used\":0,\"available\":0,\"device\":0,\"sections\":%" PRIu64
		 ",\"bytes\":0,\"usable\":false,\"missing\":true,", nsec);
	devstats_json(fs, d, o);
	json_put(o, "}");
}

/* The filesystem's data policy, the root's (SCHEMA.md "Copies",
 * "Placement"), and whether its disks can hold the copies it asks:
 * {"copies":K,"placement":"spread","usable_disks":N,"under_replicated":B}. */
static void data_policy_json(struct fs *fs, struct json_out *o)
{
	unsigned copies = 1;
	enum placement p = PLACE_SPREAD;
	int rc;
	struct fs_inode *root = inode_get(fs, LSMFS_ROOT_INO, &rc);
	if (root) {
		inode_lock(fs, root);
		(void)policy_copies(fs, root, &copies); /* unreadable: the default */
		(void)policy_placement(fs, root, &p);
		inode_unlock(fs, root);
		inode_put(fs, root);
	}
	uint32_t usable = 0;
	for (uint32_t d = 0; d < fs->ds->ndisks; d++)
		usable += diskset_present(fs->ds, d) && disk_usable(fs, d);
	json_put(o, "{\"copies\":%u,\"placement\":\"%s\",\"usable_disks\":%" PRIu32
		 ",\"under_replicated\":%s}", copies, p == PLACE_TOGETHER ? "together" : "spread",
		 usable, usable < copies ? "true" : "false");
}

static int status(struct fs *fs, int (*out)(void *, const char *), void *ctx)
{
	uint32_t n = fs->info.sections;
	uint64_t *bytes = malloc(n * sizeof(*bytes));
	if (!bytes)
		return -ENOMEM;
	section_bytes(fs, bytes);
	struct json_out o = {0};
	char u[37];
	lsmfs_uuid_format(fs->info.fs_uuid, u);
	json_put(&o, "{\"version\":1,\"fs_uuid\":\"%s\",\"sections\":%" PRIu32 ",\"chunk_size\":%" PRIu64
		   ",\"online\":%s,\"generation\":%" PRIu64 ",\"store\":",
		u, n, fs->info.chunk_size, fs->se ? "true" : "false", fs->ds->sb.generation);
	char home[sizeof(fs->ds->meta_dir)];
	copies_home(fs, home, sizeof(home));
	json_put_str(&o, home);
	uint32_t mp = fs->ds->meta_primary;
	uint32_t sd = mp < fs->ds->sb.meta_count ? fs->ds->sb.meta[mp].disk : LSMFS_META_ON_DIR;
	if (sd == LSMFS_META_ON_DIR)
		json_put(&o, ",\"store_disk\":null,");
	else
		json_put(&o, ",\"store_disk\":%" PRIu32 ",", sd);
	stats_copies_json(fs, &o);
	json_put(&o, ",\"disks\":[");
	bool first = true;
	for (uint32_t d = 0; d < fs->ds->ndisks; d++) {
		const char *path = __atomic_load_n(&fs->ds->paths[d], __ATOMIC_ACQUIRE);
		bool missing = __atomic_load_n(&fs->ds->missing, __ATOMIC_ACQUIRE) >> d & 1;
		if (missing) {
			missing_disk(fs, d, first, &o);
			first = false;
			continue;
		}
		if (!path || !diskset_present(fs->ds, d))
			continue;
		uint64_t held = 0, nsec = 0;
		for (uint32_t s = 0; s < n; s++)
			if (section_disk_of(fs, s) == d) {
				held += bytes[s];
				nsec++;
			}
		struct statvfs sv;
		uint64_t cap = 0, used = 0, avail = 0;
		if (fstatvfs(fs->sections_fd[d], &sv) == 0) {
			cap = (uint64_t)sv.f_blocks * sv.f_frsize;
			used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
			avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		}
		struct stat st;
		uint64_t dev = fstat(fs->sections_fd[d], &st) == 0 ? (uint64_t)st.st_dev : 0;
		lsmfs_uuid_format(fs->ds->sb.disk_uuids[d], u);
		json_put(&o, "%s{\"index\":%" PRIu32 ",\"uuid\":\"%s\",\"path\":", first ? "" : ",", d, u);
		json_put_str(&o, path);
		json_put(&o, ",\"capacity\":%" PRIu64 ",\"used\":%" PRIu64 ",\"available\":%" PRIu64
			   ",\"device\":%" PRIu64 ",\"sections\":%" PRIu64 ",\"bytes\":%" PRIu64
			   ",\"usable\":%s,",
			cap, used, avail, dev, nsec, held, disk_usable(fs, d) ? "true" : "false");
		devstats_json(fs, d, &o);
		json_put(&o, "}");
		first = false;
	}
	json_put(&o, "],\"data\":");
	data_policy_json(fs, &o);
	json_put(&o, ",\"section_disk\":[");
	for (uint32_t s = 0; s < n; s++)
		json_put(&o, "%s%" PRIu32, s ? "," : "", section_disk_of(fs, s));
	json_put(&o, "],\"section_bytes\":[");
	for (uint32_t s = 0; s < n; s++)
		json_put(&o, "%s%" PRIu64, s ? "," : "", bytes[s]);
	json_put(&o, "],\"replace\":");
	replace_json(fs, &o);
	json_put(&o, ",\"move\":");
	pthread_mutex_lock(&fs->ctl.lock);
	struct move_progress p = fs->ctl.now;
	bool moving = fs->ctl.moving;
	pthread_mutex_unlock(&fs->ctl.lock);
	struct section_move m;
	if (moving)
		json_put(&o, "{\"section\":%" PRIu32 ",\"from\":%" PRIu32 ",\"to\":%" PRIu32
			   ",\"bytes_done\":%" PRIu64 ",\"bytes_total\":%" PRIu64 ",\"state\":\"copying\"}",
			p.section, p.from, p.to, p.bytes_done, p.bytes_total);
	else if (section_move_get(fs->st, &m) == 1)
		json_put(&o, "{\"section\":%" PRIu32 ",\"from\":%" PRIu32 ",\"to\":%" PRIu32
			   ",\"bytes_done\":0,\"bytes_total\":0,\"state\":\"interrupted\"}",
			m.section, m.from, m.to);
	else
		json_put(&o, "null");
	json_put(&o, "}");
	free(bytes);
	int rc = o.err ? o.err : out(ctx, o.buf);
	free(o.buf);
	return rc;
}

/* devstats [reset]: every member's error counters, one line of JSON; with
 * reset they are zeroed as they are read and stored, synced, before `ok`
 * (SCHEMA.md "Error counters"). */
static int devstats(struct fs *fs, bool reset, int (*out)(void *, const char *), void *ctx,
		    char *err, size_t errlen)
{
	if (reset && !fs_writable(fs))
		return fs_set_err(err, errlen, -EROFS, "the filesystem is read-only: the error "
				  "counters cannot be reset");
	struct json_out o = {0};
	json_put(&o, "{\"version\":1,\"reset\":%s,\"disks\":[", reset ? "true" : "false");
	bool first = true;
	uint64_t missing = __atomic_load_n(&fs->ds->missing, __ATOMIC_ACQUIRE);
	for (uint32_t d = 0; d < fs->ds->ndisks && d < LSMFS_MAX_DISKS; d++) {
		const char *path = __atomic_load_n(&fs->ds->paths[d], __ATOMIC_ACQUIRE);
		bool gone = missing >> d & 1;
		if (!gone && (!path || !diskset_present(fs->ds, d)))
			continue;
		uint64_t c[DEVSTAT_KINDS];
		devstats_get(fs, d, c, reset);
		json_put(&o, "%s{\"index\":%" PRIu32 ",\"path\":", first ? "" : ",", d);
		first = false;
		char last[DISK_REC_MAX];
		if (gone)
			last_path(fs, d, last);
		json_put_str(&o, gone ? last : path);
		json_put(&o, ",\"missing\":%s,\"errors\":{", gone ? "true" : "false");
		for (int i = 0; i < DEVSTAT_KINDS; i++)
			json_put(&o, "%s\"%s\":%" PRIu64, i ? "," : "", devstat_names[i], c[i]);
		json_put(&o, "}}");
	}
	json_put(&o, "]}");
	/* The counters as they were, even when the store fails below: they
	 * are zero in memory now. */
	int rc = o.err;
	if (!rc)
		(void)out(ctx, o.buf); /* an asker gone: the reset stands */
	free(o.buf);
	if (!rc && reset) {
		rc = devstats_store(fs, STORE_WRITE_SYNC);
		if (rc)
			fs_set_err(err, errlen, rc, "the counters were reset, but storing them failed: "
				   "%s (tried again every 2 seconds while mounted)", strerror(-rc));
		else if (fs->se)
			fs_logf(fs, "the disks' error counters were reset (lsmfs-disk stats -z)");
	}
	return rc;
}

struct report_ctx {
	struct fs *fs;
	int (*out)(void *, const char *);
	void *ctx;
	bool gone; /* the caller went away: the move goes on */
	uint32_t section, from;
};

static void report(void *arg, const struct move_progress *p)
{
	struct report_ctx *r = arg;
	pthread_mutex_lock(&r->fs->ctl.lock);
	r->fs->ctl.now = *p;
	pthread_mutex_unlock(&r->fs->ctl.lock);
	if (r->gone)
		return;
	char line[256];
	snprintf(line, sizeof(line),
		 "progress {\"section\":%" PRIu32 ",\"from\":%" PRIu32 ",\"to\":%" PRIu32
		 ",\"files_done\":%" PRIu64 ",\"files_total\":%" PRIu64 ",\"bytes_done\":%" PRIu64
		 ",\"bytes_total\":%" PRIu64 "}",
		 p->section, p->from, p->to, p->files_done, p->files_total, p->bytes_done,
		 p->bytes_total);
	if (r->out(r->ctx, line))
		r->gone = true;
}

/* Evacuating: each chunk that could not be read, by path, in the log and
 * to the asker as `lost {json}`. */
static void lost(void *arg, const struct move_lost *l, size_t n)
{
	struct report_ctx *r = arg;
	struct fs *fs = r->fs;
	uint64_t *inos = malloc(n * sizeof(*inos));
	char **paths = calloc(n, sizeof(*paths));
	for (size_t i = 0; inos && i < n; i++)
		inos[i] = l[i].ino;
	int rc = !inos || !paths ? -ENOMEM : ipath_find(fs, inos, n, paths);
	if (rc)
		fs_logf(fs, "evacuating: naming the files of the lost chunks: %s (their inodes are "
			"given)", strerror(-rc));
	char root[LSMFS_META_PATH_MAX + 64], kept[LSMFS_META_PATH_MAX + 64];
	section_disk_dir(fs->ds->paths[r->from], root, sizeof(root));
	section_evacuated_dir(fs->ds->paths[r->from], kept, sizeof(kept));
	for (size_t i = 0; i < n; i++) {
		char ino[32], file[LSMFS_META_PATH_MAX + 160], rel[96];
		snprintf(ino, sizeof(ino), "inode %" PRIu64, l[i].ino);
		const char *path = paths && paths[i] ? paths[i] : ino;
		section_chunk_name(l[i].ino, l[i].chunk, r->section, rel, sizeof(rel));
		if (l[i].kept)
			snprintf(file, sizeof(file), "%s/%s", kept, l[i].name);
		else
			snprintf(file, sizeof(file), "%s/%s", root, rel);
		uint64_t off = l[i].chunk * fs->info.chunk_size;
		/* The kernel's cache may still hold the bytes: reads must
		 * fail now as they will after it lets go of them. */
		if (fs->se)
			(void)fuse_lowlevel_notify_inval_inode(fs->se, l[i].ino, (off_t)off,
							       (off_t)l[i].bytes);
		fs_logf(fs, "evacuating disk %" PRIu32 ": %s: bytes %" PRIu64 "..%" PRIu64 " lost (%s: "
			"%s); they read as EIO until fsck.lsmfs -y makes them a hole", r->from, path,
			off, off + l[i].bytes, file, strerror(l[i].err));
		if (r->gone)
			continue;
		struct json_out o = {0};
		json_put(&o, "lost {\"section\":%" PRIu32 ",\"ino\":%" PRIu64 ",\"chunk\":%" PRIu64
			     ",\"offset\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"path\":",
			 r->section, l[i].ino, l[i].chunk, off, l[i].bytes);
		json_put_str(&o, path);
		json_put(&o, ",\"file\":");
		json_put_str(&o, file);
		json_put(&o, ",\"error\":");
		json_put_str(&o, strerror(l[i].err));
		json_put(&o, "}");
		if (o.err || r->out(r->ctx, o.buf))
			r->gone = true;
		free(o.buf);
	}
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
	free(inos);
}

static int move(struct fs *fs, uint32_t s, uint32_t d, bool evacuate,
		int (*out)(void *, const char *), void *ctx, char *err, size_t errlen)
{
	struct report_ctx r = {.fs = fs, .out = out, .ctx = ctx, .section = s,
			       .from = section_disk_of(fs, s)};
	struct move_opts mo = {.evacuate = evacuate, .report = report, .lost = lost, .ctx = &r};
	pthread_mutex_lock(&fs->ctl.lock);
	fs->ctl.moving = true;
	fs->ctl.now = (struct move_progress){.section = s, .from = section_disk_of(fs, s), .to = d};
	pthread_mutex_unlock(&fs->ctl.lock);
	int rc = move_section(fs, s, d, &mo, err, errlen);
	pthread_mutex_lock(&fs->ctl.lock);
	fs->ctl.moving = false;
	pthread_mutex_unlock(&fs->ctl.lock);
	if (!rc && fs->se) /* offline, lsmfs-disk says it itself */
		fs_logf(fs, "section %" PRIu32 " moved to disk %" PRIu32 " (%s)", s, d, fs->ds->paths[d]);
	return rc;
}

/* scrub start|resume [RATE], scrub status, scrub cancel (a is what
 * follows "scrub "). */
static int scrub_request(struct fs *fs, const char *a, int (*out)(void *, const char *), void *ctx,
			 char *err, size_t errlen)
{
	if (!strcmp(a, "status"))
		return scrub_status(fs, out, ctx, err, errlen);
	if (!strcmp(a, "cancel"))
		return scrub_cancel(fs, err, errlen);
	bool resume = !strncmp(a, "resume", 6);
	if (resume || !strncmp(a, "start", 5)) {
		const char *r = a + (resume ? 6 : 5);
		unsigned long long rate;
		int used = 0;
		if (!*r)
			return scrub_start(fs, resume, false, 0, err, errlen);
		if (r[0] == ' ' && r[1] >= '0' && r[1] <= '9' &&
		    sscanf(r + 1, "%llu%n", &rate, &used) == 1 && !r[1 + used])
			return scrub_start(fs, resume, true, rate, err, errlen);
	}
	return fs_set_err(err, errlen, -EINVAL, "scrub takes start [RATE], resume [RATE], status "
			  "or cancel (RATE: bytes per second, 0 for no limit)");
}

int fs_control(struct fs *fs, const char *req, int (*out)(void *ctx, const char *line), void *ctx)
{
	char err[1024] = "";
	int rc;
	unsigned long s, d;
	char tail, pname[16];
	int used = 0;
	if (!strcmp(req, "status")) {
		rc = status(fs, out, ctx);
	} else if (!strcmp(req, "devstats") || !strcmp(req, "devstats reset")) {
		rc = devstats(fs, req[8] != '\0', out, ctx, err, sizeof(err));
	} else if (sscanf(req, "move %lu %lu%c", &s, &d, &tail) == 2 ||
		   sscanf(req, "evacuate %lu %lu%c", &s, &d, &tail) == 2) {
		if (s >= fs->info.sections || !diskset_present(fs->ds, d)) {
			snprintf(err, sizeof(err), "no section %lu or no disk %lu", s, d);
			rc = -EINVAL;
		} else {
			rc = move(fs, (uint32_t)s, (uint32_t)d, req[0] == 'e', out, ctx, err,
				  sizeof(err));
		}
	} else if (!strncmp(req, "add ", 4)) {
		bool force = !strncmp(req + 4, "-f ", 3);
		const char *path = req + 4 + (force ? 3 : 0);
		uint32_t k;
		if (*path != '/') {
			snprintf(err, sizeof(err), "add: the disk's path must be absolute");
			rc = -EINVAL;
		} else if (!(rc = members_add(fs, path, force, &k, err, sizeof(err)))) {
			char line[64];
			if (fs->se) /* offline, lsmfs-disk says it itself */
				fs_logf(fs, "disk %" PRIu32 " added (%s)", k, fs->ds->paths[k]);
			snprintf(line, sizeof(line), "disk %" PRIu32, k);
			(void)out(ctx, line); /* the asker may have gone: the disk stays */
		}
	} else if (sscanf(req, "copy-add %lu%c", &d, &tail) == 1) {
		uint32_t c;
		rc = d < LSMFS_MAX_DISKS ? copies_add(fs, (uint32_t)d, &c, err, sizeof(err)) : -EINVAL;
		if (!rc) {
			char line[64];
			snprintf(line, sizeof(line), "copy %" PRIu32, c);
			(void)out(ctx, line);
		}
	} else if (sscanf(req, "copy-remove %lu%c", &d, &tail) == 1) {
		rc = d < LSMFS_MAX_META_COPIES ? copies_remove(fs, (uint32_t)d, err, sizeof(err))
					       : -EINVAL;
	} else if (!strncmp(req, "scrub ", 6)) {
		rc = scrub_request(fs, req + 6, out, ctx, err, sizeof(err));
	} else if (!strncmp(req, "backup ", 7)) {
		rc = backup_write(fs, req + 7, out, ctx, err, sizeof(err));
	} else if (sscanf(req, "drop-lost %lu%c", &d, &tail) == 1) {
		rc = d < LSMFS_MAX_DISKS ? lost_drop_disk(fs, (uint32_t)d, out, ctx, err, sizeof(err))
					 : -EINVAL;
	} else if (sscanf(req, "convert %lu %lu %15s%c", &s, &d, pname, &tail) == 3) {
		/* convert INO COPIES PLACEMENT: COPIES 0 and PLACEMENT "-"
		 * leave that as it is. */
		enum placement p = PLACE_SPREAD;
		rc = d <= CHUNK_MAX_COPIES && (!strcmp(pname, "-") || !policy_parse(pname, &p))
			     ? convert_file(fs, s, (unsigned)d, strcmp(pname, "-") ? (int)p : -1, out,
					    ctx, err, sizeof(err))
			     : -EINVAL;
	} else if (!strncmp(req, "replace ", 8) && req[8] >= '0' && req[8] <= '9' &&
		   sscanf(req + 8, "%lu%n", &d, &used) == 1 && req[8 + used] == ' ') {
		/* replace <old> [-n ][-f ]<absolute path> */
		const char *a = req + 8 + used + 1;
		bool dry = !strncmp(a, "-n ", 3);
		a += dry ? 3 : 0;
		bool force = !strncmp(a, "-f ", 3);
		a += force ? 3 : 0;
		rc = d < LSMFS_MAX_DISKS ? replace_begin(fs, (uint32_t)d, a, force, dry, out, ctx, err,
							 sizeof(err))
					 : -EINVAL;
	} else if (sscanf(req, "replace-end %lu%c", &d, &tail) == 1 ||
		   sscanf(req, "replace-end %lu lost%c", &d, &tail) == 1) {
		/* replace-end <old> [lost]: lost, it may be dropped as dead */
		bool lost = strstr(req, " lost") != NULL;
		rc = d < LSMFS_MAX_DISKS ? replace_end(fs, (uint32_t)d, lost, out, ctx, err, sizeof(err))
					 : -EINVAL;
	} else if (sscanf(req, "detach %lu%c", &d, &tail) == 1) {
		rc = d < LSMFS_MAX_DISKS ? members_detach(fs, (uint32_t)d, err, sizeof(err)) : -EINVAL;
		if (!rc && fs->se)
			fs_logf(fs, "disk %lu detached", d);
	} else {
		snprintf(err, sizeof(err), "unknown request");
		rc = -EINVAL;
	}
	char line[1200];
	if (rc)
		snprintf(line, sizeof(line), "error %d %s", -rc, err[0] ? err : strerror(-rc));
	else
		snprintf(line, sizeof(line), "ok");
	(void)out(ctx, line); /* a caller that went away learns nothing more */
	return rc;
}

/* ---- the socket ---- */

struct conn {
	struct fs *fs;
	int fd;
};

static int send_line(void *ctx, const char *line)
{
	int fd = *(int *)ctx;
	size_t n = strlen(line);
	struct iovec iov[2] = {{(void *)line, n}, {"\n", 1}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	size_t want = n + 1;
	while (want) {
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EPIPE;
		want -= (size_t)w;
		while (w > 0 && mh.msg_iovlen) {
			size_t k = (size_t)w < mh.msg_iov[0].iov_len ? (size_t)w : mh.msg_iov[0].iov_len;
			mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + k;
			mh.msg_iov[0].iov_len -= k;
			w -= (ssize_t)k;
			if (mh.msg_iov[0].iov_len == 0) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	return 0;
}

static void *serve_conn(void *arg)
{
	struct conn *c = arg;
	struct fs *fs = c->fs;
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	char req[256];
	size_t n = 0;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0 || cr.uid != 0) {
		send_line(&c->fd, "error 1 only root may manage the disks of a mounted lsmfs");
		goto out;
	}
	/* One line, at most sizeof(req) - 1 bytes, within 10 s; and an
	 * asker that stops reading is dropped after 5 s (the move goes on). */
	struct timeval tv = {.tv_sec = 10}, tv_out = {.tv_sec = 5};
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv_out, sizeof(tv_out));
	while (n < sizeof(req) - 1) {
		ssize_t k = recv(c->fd, req + n, sizeof(req) - 1 - n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
		if (memchr(req, '\n', n))
			break;
	}
	req[n] = '\0';
	char *nl = strchr(req, '\n');
	if (!nl) {
		send_line(&c->fd, "error 22 the request is one line");
		goto out;
	}
	*nl = '\0';
	(void)fs_control(fs, req, send_line, &c->fd);
out:
	close(c->fd);
	free(c);
	pthread_mutex_lock(&fs->ctl.lock);
	fs->ctl.active--;
	pthread_cond_broadcast(&fs->ctl.cv);
	pthread_mutex_unlock(&fs->ctl.lock);
	return NULL;
}

static void *acceptor(void *arg)
{
	struct fs *fs = arg;
	for (;;) {
		struct pollfd pf[2] = {{.fd = fs->ctl.listen_fd, .events = POLLIN},
				       {.fd = fs->ctl.stop_pipe[0], .events = POLLIN}};
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents) {
			char b = 'x';
			if (read(fs->ctl.stop_pipe[0], &b, 1) != 1 || b != 'r')
				break;
			/* control_rehome: the new socket replaces the old. */
			pthread_mutex_lock(&fs->ctl.lock);
			int old = fs->ctl.listen_fd;
			fs->ctl.listen_fd = fs->ctl.next_fd;
			fs->ctl.next_fd = -1;
			pthread_mutex_unlock(&fs->ctl.lock);
			close(old);
			continue;
		}
		int fd = accept4(fs->ctl.listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			/* Out of fds or memory: the connection stays queued
			 * (poll says ready again at once); wait, never spin. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
			continue;
		}
		struct conn *c = malloc(sizeof(*c));
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_mutex_lock(&fs->ctl.lock);
		fs->ctl.active++;
		pthread_mutex_unlock(&fs->ctl.lock);
		if (c) {
			c->fs = fs;
			c->fd = fd;
		}
		if (!c || pthread_create(&t, &attr, serve_conn, c) != 0) {
			close(fd);
			free(c);
			pthread_mutex_lock(&fs->ctl.lock);
			fs->ctl.active--;
			pthread_mutex_unlock(&fs->ctl.lock);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

int fs_control_address(const char *store_dir, struct sockaddr_un *sa, int *dirfd_out)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	*dirfd_out = -1;
	int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", store_dir, FS_CONTROL_SOCKET);
	if (n > 0 && (size_t)n < sizeof(sa->sun_path))
		return 0;
	int dfd = open(store_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dfd, FS_CONTROL_SOCKET);
	*dirfd_out = dfd;
	return 0;
}

/* A listening socket at <dir>/control, mode 0600; -errno. */
static int bind_in(const char *dir, char *bound, size_t cap)
{
	struct sockaddr_un sa;
	int dfd;
	int rc = fs_control_address(dir, &sa, &dfd);
	if (rc)
		return rc;
	/* A socket a killed daemon left: we hold the disks' locks, so it is
	 * nobody's now. */
	(void)unlink(sa.sun_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* 0600 after bind (no process-wide umask change: other threads make
	 * files meanwhile).  Until then it has the umask's mode, which lets
	 * no other user connect under any usual umask; and every request is
	 * checked with SO_PEERCRED anyway. */
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    chmod(sa.sun_path, 0600) != 0 || listen(fd, 8) != 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		fd = rc;
	}
	if (dfd >= 0)
		close(dfd);
	snprintf(bound, cap, "%s", dir);
	return fd;
}

static void control_rehome(struct fs *fs);

int control_start(struct fs *fs)
{
	fs->ctl.next_fd = -1;
	fs->home_moved = control_rehome;
	int fd = bind_in(fs->ds->meta_dir, fs->ctl.path, sizeof(fs->ctl.path));
	if (fd < 0)
		return fd;
	if (pipe2(fs->ctl.stop_pipe, O_CLOEXEC) != 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	fs->ctl.listen_fd = fd;
	int rc;
	if ((rc = pthread_create(&fs->ctl.thread, NULL, acceptor, fs)) != 0) {
		control_stop(fs);
		return -rc;
	}
	fs->ctl.running = true;
	return 0;
}

/* fs->home_moved: the store's primary copy changed (copies.c): the socket
 * is bound in the new one and the old one closed. */
static void control_rehome(struct fs *fs)
{
	if (!fs->ctl.running)
		return;
	char home[sizeof(fs->ds->meta_dir)], bound[sizeof(fs->ctl.path)];
	copies_home(fs, home, sizeof(home));
	int fd = bind_in(home, bound, sizeof(bound));
	if (fd < 0) {
		fs_logf(fs, "%s: cannot bind the control socket there (%s): lsmfs-disk cannot reach "
			"this daemon until it is mounted again", home, strerror(-fd));
		return;
	}
	pthread_mutex_lock(&fs->ctl.lock);
	if (fs->ctl.next_fd >= 0)
		close(fs->ctl.next_fd);
	fs->ctl.next_fd = fd;
	memcpy(fs->ctl.path, bound, sizeof(bound));
	pthread_mutex_unlock(&fs->ctl.lock);
	if (write(fs->ctl.stop_pipe[1], "r", 1) != 1)
		(void)0; /* a pipe with room: cannot fail */
}

void control_stop(struct fs *fs)
{
	if (fs->ctl.running) {
		if (write(fs->ctl.stop_pipe[1], "x", 1) != 1)
			(void)0; /* a pipe with room: cannot fail */
		pthread_join(fs->ctl.thread, NULL);
		fs->ctl.running = false;
	}
	/* A move under way rolls back; the connections end. */
	__atomic_store_n(&fs->move_cancel, true, __ATOMIC_RELEASE);
	pthread_mutex_lock(&fs->ctl.lock);
	while (fs->ctl.active)
		pthread_cond_wait(&fs->ctl.cv, &fs->ctl.lock);
	pthread_mutex_unlock(&fs->ctl.lock);
	if (fs->ctl.next_fd >= 0)
		close(fs->ctl.next_fd);
	fs->ctl.next_fd = -1;
	if (fs->ctl.listen_fd >= 0) {
		struct sockaddr_un sa;
		int dfd;
		if (fs_control_address(fs->ctl.path, &sa, &dfd) == 0)
			(void)unlink(sa.sun_path);
		if (dfd >= 0)
			close(dfd);
		close(fs->ctl.listen_fd);
		fs->ctl.listen_fd = -1;
	}
	for (int i = 0; i < 2; i++)
		if (fs->ctl.stop_pipe[i] >= 0)
			close(fs->ctl.stop_pipe[i]);
	fs->ctl.stop_pipe[0] = fs->ctl.stop_pipe[1] = -1;
}
