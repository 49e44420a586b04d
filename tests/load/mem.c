/*
 * mem.c: the daemon's memory under load, and the bound its options set
 * (load.h).
 *
 * Samples come from /proc/PID/status (VmHWM, VmRSS, Threads) and from the
 * metadata store's tables: every open table reader keeps its index and
 * filter blocks in memory, outside the block cache (store/sst_open.c,
 * struct sst_reader), so their sizes, read from each table's footer
 * (store/FORMAT.md, "Footer": filter handle, index handle), are a term of
 * the bound that grows with the store, as STYLE.md allows when documented.
 *
 * The bound, in the order mem_bound_kib prints its terms:
 *   base     the resident set just after mounting: code, libraries, the
 *            opened store and the daemon's fixed tables;
 *   cache    -o cache_mib (fs/daemon/main.c, default 64) is the store's
 *            block_cache_bytes (fs/life/mount.c), charged each block's decoded
 *            size (store/cache.c); 1/8 more for entries and malloc;
 *   memtab   the active memtable and one immutable one being flushed
 *            (store/db_write.c: a writer waits while one is immutable),
 *            each write_buffer_size (8 MiB: store_options_init, which
 *            fs/life/mount.c keeps) and one 1 MiB arena block over, and one more
 *            such memtable that an iterator may still hold after its flush;
 *   tables   index + filter blocks of every table (the peak sampled;
 *            at most max_open_files tables stay open);
 *   threads  per thread (peak sampled; libfuse 3.14's loop starts at most
 *            10 workers for fs/daemon/main.c's loop config, the rest are the
 *            daemon's own: the store's background work, reclaim, stats
 *            and the like; 14 to 16 measured): libfuse's
 *            request buffer, max_write (1 MiB, fs/daemon/ops.c) + a page, and
 *            1 MiB of touched stack and malloc arena;
 *   bounce   O_DIRECT bounce buffers kept: BOUNCE_KEEP x BOUNCE_SIZE
 *            (8 x 1 MiB, fs/engine/core/core.h);
 *   slack    32 MiB for what the options do not size: in-memory inodes
 *            (struct fs_inode and inode_data, under 1 KiB each, one per
 *            inode the kernel holds: a few thousand here), directory
 *            listings in flight, and glibc's per-thread arenas keeping
 *            freed memory.
 */
#include "load.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KIB 1024ull
#define MIB (1024ull * 1024)

/* "Key:   123 kB" lines of /proc/PID/status. */
static int status_field(const char *buf, const char *key, uint64_t *v)
{
	size_t kl = strlen(key);
	for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ':') {
			*v = strtoull(p + kl + 1, NULL, 10);
			return 0;
		}
	}
	return -ENOENT;
}

static int get_varint64(const uint8_t **p, const uint8_t *limit, uint64_t *v)
{
	uint64_t r = 0;
	for (int shift = 0; shift <= 63 && *p < limit; shift += 7) {
		uint8_t b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EUCLEAN;
}

/* Index + filter bytes of one table, from its footer. */
static int table_meta(int dfd, const char *name, uint64_t *bytes, char *err, size_t errlen)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) { /* compacted away since readdir */
			*bytes = 0;
			return 0;
		}
		int e = errno;
		snprintf(err, errlen, "%s: %s", name, strerror(e));
		return -e;
	}
	uint8_t f[48];
	off_t end = lseek(fd, 0, SEEK_END);
	ssize_t n = end >= 48 ? pread(fd, f, sizeof(f), end - 48) : 0;
	close(fd);
	/* A table being written has no footer yet: its last bytes are
	 * data, not version 1 and the magic "TMSL". */
	if (n != 48 || memcmp(f + 40, "\x01\x00\x00\x00TMSL", 8) != 0) {
		*bytes = 0;
		return 0;
	}
	const uint8_t *p = f;
	uint64_t h[4];
	for (int i = 0; i < 4; i++) {
		if (get_varint64(&p, f + 40, &h[i])) {
			snprintf(err, errlen, "%s: offset %lld: footer handle %d does not decode", name,
				 (long long)(end - 48 + (p - f)), i);
			return -EUCLEAN;
		}
	}
	/* Each block is its payload and a 5-byte trailer (FORMAT.md). */
	if (h[1] > (uint64_t)end || h[3] > (uint64_t)end) {
		snprintf(err, errlen, "%s: footer: a block of %llu bytes in a file of %lld", name,
			 (unsigned long long)(h[1] > h[3] ? h[1] : h[3]), (long long)end);
		return -EUCLEAN;
	}
	*bytes = h[1] + 5 + h[3] + 5;
	return 0;
}

int mem_sample(pid_t pid, const char *store_dir, struct mem_sample *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		snprintf(err, errlen, "%s: nothing to read", path);
		return -EIO;
	}
	buf[n] = 0;
	uint64_t threads = 0;
	if (status_field(buf, "VmHWM", &s->hwm_kib) || status_field(buf, "VmRSS", &s->rss_kib) ||
	    status_field(buf, "Threads", &threads)) {
		snprintf(err, errlen, "%s: no VmHWM, VmRSS or Threads line", path);
		return -EUCLEAN;
	}
	s->threads = (unsigned)threads;

	DIR *d = opendir(store_dir);
	if (!d) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", store_dir, strerror(e));
		return -e;
	}
	int rc = 0;
	struct dirent *de;
	while (!rc && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".sst") != 0)
			continue;
		uint64_t b;
		rc = table_meta(dirfd(d), de->d_name, &b, err, errlen);
		if (!rc && b) {
			s->table_bytes += b;
			s->tables++;
		}
	}
	closedir(d);
	return rc;
}

void mem_peak(struct mem_sample *peak, const struct mem_sample *s)
{
#define UP(f) if (s->f > peak->f) peak->f = s->f
	UP(hwm_kib);
	UP(rss_kib);
	UP(threads);
	UP(table_bytes);
	UP(tables);
#undef UP
}

uint64_t mem_bound_kib(unsigned cache_mib, uint64_t base_kib, const struct mem_sample *peak,
		       FILE *out)
{
	const uint64_t write_buffer = 8 * MIB, arena_block = 1 * MIB;
	uint64_t cache = (uint64_t)cache_mib * MIB;
	uint64_t t_cache = cache + cache / 8;
	uint64_t t_memtab = 3 * (write_buffer + arena_block);
	uint64_t t_tables = peak->table_bytes;
	uint64_t t_threads = (uint64_t)peak->threads * ((1 * MIB + 4 * KIB) + 1 * MIB);
	uint64_t t_bounce = 8 * MIB;
	uint64_t t_slack = 32 * MIB;
	uint64_t total = base_kib * KIB + t_cache + t_memtab + t_tables + t_threads + t_bounce + t_slack;
	fprintf(out,
		"  RSS bound %.1f MiB = base %.1f + cache %.1f (cache_mib=%u) + memtables %.1f"
		" + tables %.1f (%u tables) + threads %.1f (%u threads) + bounce %.1f + slack %.1f\n",
		(double)total / MIB, (double)base_kib / 1024, (double)t_cache / MIB, cache_mib,
		(double)t_memtab / MIB, (double)t_tables / MIB, peak->tables,
		(double)t_threads / MIB, peak->threads, (double)t_bounce / MIB,
		(double)t_slack / MIB);
	return total / KIB;
}
