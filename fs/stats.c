/*
 * stats.c: accounting of what the daemon sends to its backing disks
 * (fs/SCHEMA.md, "Statistics"): per disk the bytes written to chunk files,
 * the write calls, the fsyncs, and how many writes continued at the end of
 * the previous write to the same chunk file (sequential); the bytes
 * applications wrote; and the store's own bytes by file kind.  Counters are
 * relaxed atomics: a reader sees each exact, not all at one instant.
 * Read as JSON through the root's `user.lsmfs.stats` xattr (xattr.c).
 */
#include "fs_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int stats_init(struct fs *fs)
{
	fs->dstats = calloc(fs->ds->ndisks, sizeof(*fs->dstats));
	return fs->dstats ? 0 : -ENOMEM;
}

void stats_free(struct fs *fs)
{
	free(fs->dstats);
	fs->dstats = NULL;
}

void stats_write(struct fs *fs, uint32_t disk, struct chunk_fd *c, uint64_t off, size_t n)
{
	if (!fs->dstats || disk >= fs->ds->ndisks)
		return;
	struct fs_disk_stats *s = &fs->dstats[disk];
	atomic_fetch_add_explicit(&s->bytes, n, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->writes, 1, memory_order_relaxed);
	if (off == c->next_off)
		atomic_fetch_add_explicit(&s->sequential, 1, memory_order_relaxed);
	c->next_off = off + n;
}

void stats_fsync(struct fs *fs, uint32_t disk)
{
	if (fs->dstats && disk < fs->ds->ndisks)
		atomic_fetch_add_explicit(&fs->dstats[disk].fsyncs, 1, memory_order_relaxed);
}

struct out {
	char *buf;
	size_t len, cap;
	int err;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->err = -EINVAL;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = (o->cap + (size_t)n + 1) * 2;
		char *g = realloc(o->buf, cap);
		if (!g) {
			o->err = -ENOMEM;
			return;
		}
		o->buf = g;
		o->cap = cap;
	}
}

/* A path as a JSON string: our own paths, but escape what JSON needs. */
static void put_path(struct out *o, const char *p)
{
	put(o, "\"");
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\')
			put(o, "\\%c", c);
		else if (c < 0x20)
			put(o, "\\u%04x", c);
		else
			put(o, "%c", c);
	}
	put(o, "\"");
}

static void put_totals(struct out *o, const char *name, uint64_t user, uint64_t wal,
		       uint64_t flush, uint64_t compaction, uint64_t manifest)
{
	put(o,
	    "\"%s\":{\"user_bytes\":%" PRIu64 ",\"log_bytes\":%" PRIu64 ",\"flush_bytes\":%" PRIu64
	    ",\"compaction_bytes\":%" PRIu64 ",\"manifest_bytes\":%" PRIu64 "}",
	    name, user, wal, flush, compaction, manifest);
}

int stats_json(struct fs *fs, char **json, size_t *len)
{
	struct out o = {.cap = 1024};
	o.buf = malloc(o.cap);
	if (!o.buf)
		return -ENOMEM;
	put(&o, "{\"version\":1,\"app_bytes_written\":%" PRIu64 ",\"disks\":[",
	    atomic_load_explicit(&fs->app_bytes, memory_order_relaxed));
	for (uint32_t d = 0; d < fs->ds->ndisks; d++) {
		const struct fs_disk_stats *s = &fs->dstats[d];
		put(&o, "%s{\"index\":%u,\"path\":", d ? "," : "", d);
		put_path(&o, fs->ds->paths[d]);
		put(&o,
		    ",\"bytes\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"fsyncs\":%" PRIu64
		    ",\"sequential_writes\":%" PRIu64 "}",
		    atomic_load_explicit(&s->bytes, memory_order_relaxed),
		    atomic_load_explicit(&s->writes, memory_order_relaxed),
		    atomic_load_explicit(&s->fsyncs, memory_order_relaxed),
		    atomic_load_explicit(&s->sequential, memory_order_relaxed));
	}
	struct store_stats ss;
	store_get_stats(fs->st, &ss);
	put(&o, "],\"store\":{\"dir\":");
	put_path(&o, fs->ds->meta_dir);
	put(&o, ",");
	put_totals(&o, "since_mount", ss.user_bytes_written, ss.wal_bytes_written,
		   ss.flush_bytes_written, ss.compaction_bytes_written, ss.manifest_bytes_written);
	put(&o, ",");
	put_totals(&o, "lifetime", ss.lifetime.user_bytes_written, ss.lifetime.wal_bytes_written,
		   ss.lifetime.flush_bytes_written, ss.lifetime.compaction_bytes_written,
		   ss.lifetime.manifest_bytes_written);
	put(&o, ",\"log_syncs\":%" PRIu64 "}}\n", ss.wal_syncs);
	if (o.err) {
		free(o.buf);
		return o.err;
	}
	*json = o.buf;
	*len = o.len;
	return 0;
}
