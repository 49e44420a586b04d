/*
 * stats.c: lsmfs-inspect stats: the daemon's accounting as it last wrote
 * it to <store>/stats.json (fs/SCHEMA.md, "Statistics"): every 2 seconds
 * while mounted and a counter moves, and once more at unmount.  --json
 * prints the file as it is, once it parses as one JSON object; text is the
 * same figures in aligned columns, with the write amplification.  The file
 * is not trusted: anything that does not parse, or lacks a member version 1
 * has, is exit 8 naming the file, never a crash.
 */
#include "inspect.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Far above what 64 disks write (about 200 bytes each): bounds memory. */
#define STATS_FILE_MAX (1u << 20)

/* The whole file, NUL-terminated; 0, or a negative errno (-EFBIG: too
 * large to be ours). */
static int read_file(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = 0;
	char *buf = NULL;
	size_t n = 0;
	if (fstat(fd, &st)) {
		rc = -errno;
		goto out;
	}
	if (st.st_size > STATS_FILE_MAX) {
		rc = -EFBIG;
		goto out;
	}
	/* Read to the end, not to st_size: the daemon's rename may land
	 * between the two, but we hold the file we opened. */
	buf = malloc(STATS_FILE_MAX + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	while (n < STATS_FILE_MAX) {
		ssize_t r = read(fd, buf + n, STATS_FILE_MAX - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

/* Members a version 1 file always has; the first one missing is named. */
struct reader {
	const char *missing;
};

static uint64_t get_u64(struct reader *r, const struct jv *obj, const char *key)
{
	uint64_t v = 0;
	if (jv_u64(jv_get(obj, key), &v) && !r->missing)
		r->missing = key;
	return v;
}

static const struct jv *get_type(struct reader *r, const struct jv *obj, const char *key,
				 enum jv_type type)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type != type) {
		if (!r->missing)
			r->missing = key;
		return NULL;
	}
	return v;
}

static int digits(uint64_t v)
{
	int n = 1;
	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static int max_int(int a, int b)
{
	return a > b ? a : b;
}

struct disk_row {
	uint64_t index, bytes, writes, fsyncs, sequential;
	char path[1024];
};

/* The store's bytes by kind: the TOTAL counters of store.h's
 * STORE_COUNTERS, user first. */
#define KIND_NAME(kind, field, key, word) STORE_IF_TOTAL(kind, word, )
#define KIND_KEY(kind, field, key, word) STORE_IF_TOTAL(kind, key, )
static const char *const kind_names[] = {STORE_COUNTERS(KIND_NAME)};
static const char *const kind_keys[] = {STORE_COUNTERS(KIND_KEY)};
#undef KIND_NAME
#undef KIND_KEY
#define KINDS ((int)(sizeof(kind_names) / sizeof(kind_names[0])))

/* The file's figures as text; -EUCLEAN (said by the caller) when a member
 * is missing, with r->missing naming it.  Nothing is printed then. */
static int print_text(struct insp *in, const char *path, const struct jv *root,
		      struct reader *r)
{
	int64_t sec = 0, nsec = 0;
	if (jv_time(jv_get(root, "written_at"), &sec, &nsec) && !r->missing)
		r->missing = "written_at";
	const struct jv *mounted = get_type(r, root, "mounted", JV_BOOL);
	uint64_t pid = get_u64(r, root, "daemon_pid");
	uint64_t app = get_u64(r, root, "app_bytes_written");
	const struct jv *disks = get_type(r, root, "disks", JV_ARRAY);
	const struct jv *store = get_type(r, root, "store", JV_OBJECT);
	const struct jv *since = store ? get_type(r, store, "since_mount", JV_OBJECT) : NULL;
	const struct jv *life = store ? get_type(r, store, "lifetime", JV_OBJECT) : NULL;
	const struct jv *dir = store ? get_type(r, store, "dir", JV_STRING) : NULL;
	uint64_t log_syncs = store ? get_u64(r, store, "log_syncs") : 0;
	uint64_t ks[KINDS] = {0}, kl[KINDS] = {0};
	for (int k = 0; k < KINDS && since && life; k++) {
		ks[k] = get_u64(r, since, kind_keys[k]);
		kl[k] = get_u64(r, life, kind_keys[k]);
	}
	size_t nd = 0;
	for (const struct jv *d = disks ? disks->kids : NULL; d; d = d->next)
		nd++;
	struct disk_row *rows = calloc(nd ? nd : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	size_t i = 0;
	for (const struct jv *d = disks ? disks->kids : NULL; d; d = d->next, i++) {
		struct disk_row *w = &rows[i];
		const struct jv *p = get_type(r, d, "path", JV_STRING);
		if (p)
			insp_escape(w->path, sizeof(w->path), p->str, p->len);
		w->index = get_u64(r, d, "index");
		w->bytes = get_u64(r, d, "bytes");
		w->writes = get_u64(r, d, "writes");
		w->fsyncs = get_u64(r, d, "fsyncs");
		w->sequential = get_u64(r, d, "sequential_writes");
	}
	if (r->missing || !mounted || !dir) {
		free(rows);
		return -EUCLEAN;
	}

	FILE *o = in->out;
	char when[64];
	insp_format_time(when, sizeof(when), sec, nsec);
	fprintf(o, "statistics   %s\n", path);
	fprintf(o, "written      %s", when);
	time_t now = time(NULL);
	if ((int64_t)now >= sec)
		fprintf(o, " (%" PRId64 " s ago)", (int64_t)now - sec);
	fprintf(o, ", %s, daemon pid %" PRIu64 "\n",
		mounted->b ? "while mounted" : "at unmount (final)", pid);
	fprintf(o, "app bytes    %" PRIu64 " written since mount\n\n", app);

	/* The disks: column widths from the widest entry. */
	int wi = 4, wp = 4, wb = 5, ww = 6, wf = 6, ws = 10;
	uint64_t disk_bytes = 0;
	for (i = 0; i < nd; i++) {
		wi = max_int(wi, digits(rows[i].index));
		wp = max_int(wp, (int)strlen(rows[i].path));
		wb = max_int(wb, digits(rows[i].bytes));
		ww = max_int(ww, digits(rows[i].writes));
		wf = max_int(wf, digits(rows[i].fsyncs));
		ws = max_int(ws, digits(rows[i].sequential));
		disk_bytes += rows[i].bytes;
	}
	fprintf(o, "%*s  %-*s  %*s  %*s  %*s  %*s  %7s\n", wi, "disk", wp, "path", wb, "bytes",
		ww, "writes", wf, "fsyncs", ws, "sequential", "seq %");
	for (i = 0; i < nd; i++) {
		const struct disk_row *w = &rows[i];
		char pct[16] = "-";
		if (w->writes)
			snprintf(pct, sizeof(pct), "%.1f%%", 100.0 * (double)w->sequential /
				 (double)w->writes);
		fprintf(o, "%*" PRIu64 "  %-*s  %*" PRIu64 "  %*" PRIu64 "  %*" PRIu64 "  %*" PRIu64
			"  %7s\n", wi, w->index, wp, w->path, wb, w->bytes, ww, w->writes, wf,
			w->fsyncs, ws, w->sequential, pct);
	}
	free(rows);

	char sdir[1024];
	insp_escape(sdir, sizeof(sdir), dir->str, dir->len);
	int wk = 10, wm = 11, wl = 8;
	for (int k = 0; k < KINDS; k++) {
		wm = max_int(wm, digits(ks[k]));
		wl = max_int(wl, digits(kl[k]));
	}
	fprintf(o, "\nstore %s, bytes by kind\n", sdir);
	fprintf(o, "  %-*s  %*s  %*s\n", wk, "kind", wm, "since mount", wl, "lifetime");
	for (int k = 0; k < KINDS; k++)
		fprintf(o, "  %-*s  %*" PRIu64 "  %*" PRIu64 "\n", wk, kind_names[k], wm, ks[k], wl,
			kl[k]);
	fprintf(o, "  %-*s  %*" PRIu64 "\n\n", wk, "log syncs", wm, log_syncs);

	if (app) {
		double meta = (double)(ks[1] + ks[2] + ks[3] + ks[4]);
		fprintf(o, "write amplification since mount: data %.2f (disk bytes / app bytes),"
			" metadata %.2f (store log+flush+compaction+manifest / app bytes)\n",
			(double)disk_bytes / (double)app, meta / (double)app);
	} else {
		fprintf(o, "write amplification since mount: none (applications wrote nothing)\n");
	}
	return 0;
}

int insp_stats(struct insp *in)
{
	char path[sizeof(in->ds->meta_dir) + sizeof(FS_STATS_FILE) + 1];
	snprintf(path, sizeof(path), "%s/" FS_STATS_FILE, in->ds->meta_dir);
	char *text = NULL;
	size_t len = 0;
	int rc = read_file(path, &text, &len);
	if (rc == -ENOENT) {
		fprintf(stderr, INSPECT_PROG ": no statistics: %s does not exist (the filesystem was"
			" never mounted by a daemon that writes them)\n", path);
		return INSPECT_EXIT_NOT_FOUND;
	}
	if (rc) {
		fprintf(stderr, INSPECT_PROG ": %s: %s\n", path,
			rc == -EFBIG ? "larger than any statistics we write" : strerror(-rc));
		return INSPECT_EXIT_OPERATIONAL;
	}
	struct jv *root = NULL;
	char err[128] = "";
	int status = INSPECT_EXIT_OK;
	rc = jv_parse(text, len, &root, err, sizeof(err));
	if (rc) {
		fprintf(stderr, INSPECT_PROG ": %s: not JSON: %s\n", path, err);
		status = INSPECT_EXIT_OPERATIONAL;
	} else if (root->type != JV_OBJECT) {
		fprintf(stderr, INSPECT_PROG ": %s: not a JSON object\n", path);
		status = INSPECT_EXIT_OPERATIONAL;
	} else if (in->json) {
		/* As written: the daemon's members, including any newer ones. */
		fwrite(text, 1, len, in->out);
		if (len && text[len - 1] != '\n')
			fputc('\n', in->out);
	} else {
		struct reader r = {0};
		rc = print_text(in, path, root, &r);
		if (rc) {
			if (rc == -EUCLEAN)
				fprintf(stderr, INSPECT_PROG ": %s: not lsmfs statistics (no valid"
					" \"%s\")\n", path, r.missing ? r.missing : "mounted");
			else
				fprintf(stderr, INSPECT_PROG ": %s: %s\n", path, strerror(-rc));
			status = INSPECT_EXIT_OPERATIONAL;
		}
	}
	jv_free(root);
	free(text);
	return status;
}
