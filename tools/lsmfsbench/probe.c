/*
 * probe.c: what the kernel and the daemon say about a run.
 *
 * - The daemon's accounting (fs/SCHEMA.md, "Statistics"): the JSON object
 *   of the root's user.lsmfs.stats xattr while mounted, and the same object
 *   in <store>/stats.json once the daemon has closed (its final figures,
 *   the store's last flush included).  The object is the daemon's own
 *   format, so members are looked up by name inside the span of their
 *   enclosing object rather than through a general JSON parser.
 * - A process's CPU time: utime + stime of /proc/PID/stat.
 * - What the kernel sent to each block device: /proc/diskstats (the
 *   kernel's Documentation/admin-guide/iostats.rst: field 8 writes
 *   completed, field 10 sectors written, in 512-byte units).
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

void probe_counters_free(struct lsmfs_counters *c)
{
	free(c->disk);
	c->disk = NULL;
	c->ndisks = 0;
}

/* The end of the object or array that opens at P ('{' or '['): the
 * matching bracket, strings skipped; NULL when it does not close. */
static const char *span_end(const char *p)
{
	int depth = 0;
	for (; *p; p++) {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
			if (!*p)
				return NULL;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return p;
		}
	}
	return NULL;
}

/* Where member NAME's value starts inside [FROM, TO), at this object's
 * own level only; NULL when absent. */
static const char *member(const char *from, const char *to, const char *name)
{
	size_t nl = strlen(name);
	int depth = 0;
	for (const char *p = from; p < to; p++) {
		if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			depth--;
		} else if (*p == '"') {
			const char *s = p + 1;
			for (p++; p < to && *p != '"'; p++)
				if (*p == '\\')
					p++;
			if (p >= to)
				return NULL;
			const char *v = p + 1;
			while (v < to && *v == ' ')
				v++;
			/* A key is a string followed by ':'; a value is not. */
			if (depth == 1 && v < to && *v == ':' && (size_t)(p - s) == nl &&
			    !memcmp(s, name, nl)) {
				for (v++; v < to && *v == ' '; v++)
					;
				return v < to ? v : NULL;
			}
		}
	}
	return NULL;
}

static int member_u64(const char *from, const char *to, const char *name, uint64_t *out)
{
	const char *v = member(from, to, name);
	if (!v || *v < '0' || *v > '9')
		return -EBADMSG;
	*out = strtoull(v, NULL, 10);
	return 0;
}

/* The object that is member NAME of [FROM, TO): its span. */
static int member_span(const char *from, const char *to, const char *name, const char **a,
		       const char **b)
{
	const char *v = member(from, to, name);
	const char *e = v && (*v == '{' || *v == '[') ? span_end(v) : NULL;
	if (!e || e >= to)
		return -EBADMSG;
	*a = v;
	*b = e + 1;
	return 0;
}

static int parse_stats(const char *json, struct lsmfs_counters *c, char **store_dir)
{
	const char *end = json[0] == '{' ? span_end(json) : NULL;
	const char *a, *b, *sa, *sb;
	memset(c, 0, sizeof(*c));
	if (!end || member_u64(json, end + 1, "app_bytes_written", &c->app_bytes) ||
	    member_span(json, end + 1, "disks", &a, &b) || member_span(json, end + 1, "store", &sa, &sb))
		return -EBADMSG;
	const char *mounted = member(json, end + 1, "mounted");
	c->mounted = !mounted || !strncmp(mounted, "true", 4);
	/* Each disk is one object inside the array [a, b). */
	for (const char *p = a + 1; p < b; p++) {
		if (*p != '{')
			continue;
		const char *e = span_end(p);
		if (!e || e >= b)
			return -EBADMSG;
		struct disk_counters *g = realloc(c->disk, (size_t)(c->ndisks + 1) * sizeof(*g));
		if (!g)
			return -ENOMEM;
		c->disk = g;
		struct disk_counters *d = &c->disk[c->ndisks++];
		if (member_u64(p, e + 1, "bytes", &d->bytes) || member_u64(p, e + 1, "writes", &d->writes) ||
		    member_u64(p, e + 1, "fsyncs", &d->fsyncs) ||
		    member_u64(p, e + 1, "sequential_writes", &d->sequential))
			return -EBADMSG;
		p = e;
	}
	const char *ma, *mb;
	if (member_span(sa, sb, "since_mount", &ma, &mb) || member_u64(ma, mb, "log_bytes", &c->log) ||
	    member_u64(ma, mb, "flush_bytes", &c->flush) ||
	    member_u64(ma, mb, "compaction_bytes", &c->compaction) ||
	    member_u64(ma, mb, "manifest_bytes", &c->manifest))
		return -EBADMSG;
	if (store_dir) {
		const char *v = member(sa, sb, "dir");
		const char *q = v && *v == '"' ? strchr(v + 1, '"') : NULL;
		/* Our own paths; a path with a quote or backslash in it is
		 * escaped in JSON and not worth undoing here. */
		if (!q || memchr(v + 1, '\\', (size_t)(q - v - 1)))
			return -EBADMSG;
		if (!(*store_dir = strndup(v + 1, (size_t)(q - v - 1))))
			return -ENOMEM;
	}
	return 0;
}

int probe_lsmfs_xattr(const char *mnt, struct lsmfs_counters *out, char **store_dir)
{
	char *buf = NULL;
	ssize_t n = 0;
	for (size_t cap = 4096;; cap *= 2) {
		char *g = realloc(buf, cap + 1);
		if (!g) {
			free(buf);
			return -ENOMEM;
		}
		buf = g;
		n = getxattr(mnt, "user.lsmfs.stats", buf, cap);
		if (n >= 0 || errno != ERANGE || cap > (1u << 24))
			break;
	}
	if (n < 0) {
		int e = errno;
		bench_err("%s: cannot read the user.lsmfs.stats xattr: %s", mnt, strerror(e));
		free(buf);
		return -e;
	}
	buf[n] = 0;
	int rc = parse_stats(buf, out, store_dir);
	if (rc == -EBADMSG)
		bench_err("%s: user.lsmfs.stats does not hold the accounting this tool knows: %.200s", mnt,
			  buf);
	if (rc)
		probe_counters_free(out);
	free(buf);
	return rc;
}

int probe_lsmfs_file(const char *store_dir, struct lsmfs_counters *out)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/stats.json", store_dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[1 << 16];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	int rc = parse_stats(buf, out, NULL);
	if (rc == -EBADMSG)
		bench_err("%s: not the accounting this tool knows", path);
	if (rc)
		probe_counters_free(out);
	return rc;
}

int probe_cpu_seconds(pid_t pid, double *out)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	/* The command name may hold spaces and parentheses: fields are
	 * counted after its last ')'. utime and stime are fields 14 and 15. */
	const char *p = strrchr(buf, ')');
	if (!p)
		return -EBADMSG;
	unsigned long long ut, stt;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) != 2)
		return -EBADMSG;
	*out = (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

/* A directory's st_dev names the device that holds its filesystem, and
 * /proc/diskstats lists partitions and device-mapper devices under their
 * own numbers, so the two match exactly; a filesystem with no block device
 * (tmpfs, NFS) has a number diskstats does not list. */
int probe_devices(char **dirs, int ndirs, struct dev_counters *devs, int *n)
{
	*n = 0;
	for (int i = 0; i < ndirs; i++) {
		struct stat st;
		if (stat(dirs[i], &st))
			return -errno;
		unsigned ma = major(st.st_dev), mi = minor(st.st_dev);
		bool seen = false;
		for (int k = 0; k < *n; k++)
			seen |= devs[k].major == ma && devs[k].minor == mi;
		if (seen || *n >= 8)
			continue;
		devs[*n] = (struct dev_counters){.major = ma, .minor = mi};
		if (!probe_diskstats(&devs[*n], 1) && devs[*n].name[0])
			(*n)++;
	}
	return 0;
}

int probe_diskstats(struct dev_counters *devs, int n)
{
	FILE *f = fopen("/proc/diskstats", "r");
	if (!f)
		return -errno;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		unsigned ma, mi;
		char name[64];
		unsigned long long wr, sect;
		if (sscanf(line, "%u %u %63s %*u %*u %*u %*u %llu %*u %llu", &ma, &mi, name, &wr, &sect) != 5)
			continue;
		for (int k = 0; k < n; k++)
			if (devs[k].major == ma && devs[k].minor == mi) {
				snprintf(devs[k].name, sizeof(devs[k].name), "%s", name);
				devs[k].writes = wr;
				devs[k].sectors = sect;
			}
	}
	fclose(f);
	return 0;
}
