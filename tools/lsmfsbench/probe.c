/*
 * probe.c: what the kernel and the daemon say about a run.
 *
 * - The daemon's accounting (fs/SCHEMA.md, "Statistics"): the JSON object
 *   of the root's user.lsmfs.stats xattr while mounted, and the same object
 *   in <store>/stats.json once the daemon has closed (its final figures,
 *   the store's last flush included), read with the tools' JSON reader.
 * - A process's CPU time: utime + stime of /proc/PID/stat.
 * - What the kernel sent to each block device: /proc/diskstats (the
 *   kernel's Documentation/admin-guide/iostats.rst: field 8 writes
 *   completed, field 10 sectors written, in 512-byte units).
 */
#include "bench.h"
#include "fs.h"
#include "jsonread.h"

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

static int stats_u64(const struct jv *obj, const char *name, uint64_t *out)
{
	return jv_u64(jv_get(obj, name), out);
}

/* The counters this tool uses out of the daemon's object TEXT. */
static int parse_stats(const char *text, size_t len, struct lsmfs_counters *c, char **store_dir)
{
	struct jv *root = NULL;
	char err[128];
	memset(c, 0, sizeof(*c));
	int rc = jv_parse(text, len, &root, err, sizeof(err));
	if (rc)
		return rc == -ENOMEM ? rc : -EBADMSG;
	rc = -EBADMSG;
	const struct jv *disks = jv_get(root, "disks"), *store = jv_get(root, "store");
	const struct jv *since = jv_get(store, "since_mount"), *mounted = jv_get(root, "mounted");
	if (stats_u64(root, "app_bytes_written", &c->app_bytes) || !disks ||
	    disks->type != JV_ARRAY || stats_u64(since, "log_bytes", &c->log) ||
	    stats_u64(since, "flush_bytes", &c->flush) ||
	    stats_u64(since, "compaction_bytes", &c->compaction) ||
	    stats_u64(since, "manifest_bytes", &c->manifest))
		goto out;
	/* Absent in daemons older than stats.json: they are mounted. */
	c->mounted = !mounted || mounted->type != JV_BOOL || mounted->b;
	for (const struct jv *d = disks->kids; d; d = d->next) {
		struct disk_counters *g = realloc(c->disk, (size_t)(c->ndisks + 1) * sizeof(*g));
		if (!g) {
			rc = -ENOMEM;
			goto out;
		}
		c->disk = g;
		struct disk_counters *k = &c->disk[c->ndisks++];
		if (stats_u64(d, "bytes", &k->bytes) || stats_u64(d, "writes", &k->writes) ||
		    stats_u64(d, "fsyncs", &k->fsyncs) ||
		    stats_u64(d, "sequential_writes", &k->sequential))
			goto out;
	}
	if (store_dir) {
		const struct jv *dir = jv_get(store, "dir");
		if (!dir || dir->type != JV_STRING || memchr(dir->str, 0, dir->len))
			goto out;
		if (!(*store_dir = strdup(dir->str))) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = 0;
out:
	jv_free(root);
	return rc;
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
		n = getxattr(mnt, FS_STATS_XATTR, buf, cap);
		if (n >= 0 || errno != ERANGE || cap > (1u << 24))
			break;
	}
	if (n < 0) {
		int e = errno;
		bench_err("%s: cannot read the " FS_STATS_XATTR " xattr: %s", mnt, strerror(e));
		free(buf);
		return -e;
	}
	buf[n] = 0;
	int rc = parse_stats(buf, (size_t)n, out, store_dir);
	if (rc == -EBADMSG)
		bench_err("%s: " FS_STATS_XATTR " does not hold the accounting this tool knows: %.200s",
			  mnt, buf);
	if (rc)
		probe_counters_free(out);
	free(buf);
	return rc;
}

int probe_lsmfs_file(const char *store_dir, struct lsmfs_counters *out)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/" FS_STATS_FILE, store_dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[1 << 16];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	int rc = parse_stats(buf, (size_t)n, out, NULL);
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
