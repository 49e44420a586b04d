/*
 * test_iogate.c: reads and writes outside the inode's lock (fs/engine/core/iogate.c)
 * against truncates, fsyncs and each other, on one file, with no kernel
 * between.
 *
 * A filesystem over two directories (chunks of 4 KiB, so that one read
 * spans more chunks than an inode caches fds for, and readers evict each
 * other's slots) is opened in this process as the daemon opens it.  For a
 * few seconds, on one file of 64 chunks:
 *   - 3 readers read random ranges of 1 to 12 chunks at random offsets;
 *   - 2 writers, one in each half of the file, write groups of 3 whole
 *     chunks, each write with one new version's bytes;
 *   - a truncater cuts the file to a random whole number of chunks, or
 *     makes it longer (a hole), now and then;
 *   - an fsync every few milliseconds (it records the chunks' durable
 *     lengths, which a write under way must not run ahead of);
 *   - a scrub of each chunk in turn (chunk_scrub.c), the file having two
 *     copies of each chunk: it must find no error (the sums it checks are
 *     the file's as written, in write or not) and rewrite nothing a read
 *     could then see torn.
 * Every chunk a read returns must be one version's bytes for that chunk or
 * zeros, never a mix, and the chunks of a group one version or zeros (a
 * read sees a write whole or not at all), and no read may fail: a truncate or write meeting a
 * read in flight would show as torn chunks, or as a read failing on an fd
 * closed under it, or as EIO (a chunk shorter than the length an fsync
 * recorded as durable).  Each read outside the lock pauses 200 us first
 * (fs->io_delay_us), as on a slow disk, so that such meetings happen.  The kernel serializes most of this itself
 * (FUSE truncates wait for writes); the daemon must not depend on it.
 *
 * usage: test_iogate MKFS
 */
#include "engine.h"
#include "life.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CS 4096u
#define NCHUNKS 60u
#define GROUP 3u /* chunks a write covers: one version */
#define READERS 3
#define SECS 5

static struct fs *fs;
static uint64_t ino;
static atomic_bool stop;
static atomic_uint version = 1;
static atomic_ulong nreads, nwrites, ntruncs, nscrubs;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "test_iogate: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

/* A chunk's bytes in version v: byte j is v * (2j + 1) + 7 chunk (mod 256),
 * so that no other chunk's or version's bytes agree with them for long. */
static unsigned char byte_of(uint32_t v, uint64_t chunk, uint32_t j)
{
	return (unsigned char)(v * (2 * j + 1) + chunk * 7u);
}

static unsigned char inverse(unsigned char a) /* of an odd a, mod 256 */
{
	unsigned char x = a;
	for (int i = 0; i < 3; i++)
		x = (unsigned char)(x * (2 - a * x));
	return x;
}

/* p[0..n) (offsets j0.. of chunk): -1 for zeros, the version mod 256 of
 * its bytes, or -2 for neither (torn). */
static int chunk_version(const unsigned char *p, size_t n, uint64_t chunk, uint32_t j0)
{
	bool zeros = true;
	for (size_t i = 0; i < n && zeros; i++)
		zeros = p[i] == 0;
	if (zeros)
		return -1;
	/* The first byte gives v mod 256 (2 j0 + 1 is odd); the rest must
	 * agree with it. */
	unsigned char base = (unsigned char)(p[0] - chunk * 7u);
	uint32_t v = (unsigned char)(base * inverse((unsigned char)(2 * j0 + 1)));
	for (size_t i = 0; i < n; i++)
		if (p[i] != byte_of(v, chunk, j0 + (uint32_t)i))
			return -2;
	return (int)v;
}

static uint64_t rnd(unsigned *seed, uint64_t n)
{
	return (uint64_t)rand_r(seed) % n;
}

static void *reader(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	size_t max = 12 * CS;
	unsigned char *buf = malloc(max);
	while (!atomic_load(&stop)) {
		uint64_t off = rnd(&seed, NCHUNKS * CS);
		size_t len = 1 + rnd(&seed, max);
		size_t got;
		int rc = fs_read(fs, ino, (char *)buf, len, (off_t)off, &got);
		if (rc)
			die("read of %zu at %llu: %s", len, (unsigned long long)off, strerror(-rc));
		/* Each chunk zeros or one version's bytes; the chunks of one
		 * group that are not zeros, one version (a write covers a
		 * group whole; a truncate leaves zeros at a group's end). */
		int group_v = -1;
		for (size_t done = 0; done < got;) {
			uint64_t pos = off + done;
			uint32_t j0 = (uint32_t)(pos % CS);
			uint64_t chunk = pos / CS;
			size_t n = CS - j0 < got - done ? CS - j0 : got - done;
			int v = chunk_version(buf + done, n, chunk, j0);
			if (v == -2)
				die("read at %llu: chunk %llu is torn (bytes %u..%zu)",
				    (unsigned long long)off, (unsigned long long)chunk, j0, j0 + n);
			if (chunk % GROUP == 0 || done == 0)
				group_v = -1;
			if (v >= 0 && group_v >= 0 && v != group_v)
				die("read at %llu: chunk %llu has version %d, its group's first %d: "
				    "a write seen half done", (unsigned long long)off,
				    (unsigned long long)chunk, v, group_v);
			if (v >= 0)
				group_v = v;
			done += n;
		}
		atomic_fetch_add(&nreads, 1);
	}
	free(buf);
	return NULL;
}

/* Writer 0 writes in the first half of the file, writer 1 in the second:
 * writes of one file go on together, as the kernel's do, never on the
 * same bytes at once. */
static void *writer(void *arg)
{
	int id = (int)(uintptr_t)arg;
	unsigned seed = 100u + (unsigned)id;
	uint64_t base = id * (NCHUNKS / 2);
	unsigned char *buf = malloc(GROUP * CS);
	while (!atomic_load(&stop)) {
		uint64_t first = base + GROUP * rnd(&seed, NCHUNKS / 2 / GROUP), n = GROUP;
		uint32_t v = atomic_fetch_add(&version, 1);
		for (uint64_t c = 0; c < n; c++)
			for (uint32_t j = 0; j < CS; j++)
				buf[c * CS + j] = byte_of(v, first + c, j);
		int rc = fs_write(fs, ino, (char *)buf, n * CS, (off_t)(first * CS), NULL, false);
		if (rc != (int)(n * CS))
			die("write of chunks %llu+%llu: %d", (unsigned long long)first,
			    (unsigned long long)n, rc);
		atomic_fetch_add(&nwrites, 1);
	}
	free(buf);
	return NULL;
}

static void *syncer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		int rc = fs_fsync(fs, ino, false);
		if (rc)
			die("fsync: %s", strerror(-rc));
		usleep(3000);
	}
	return NULL;
}

static void *truncater(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!atomic_load(&stop)) {
		struct stat a = {.st_size = (off_t)(rnd(&seed, NCHUNKS + 1) * CS)}, out;
		int rc = fs_setattr(fs, ino, &a, FUSE_SET_ATTR_SIZE, NULL, &out);
		if (rc)
			die("truncate to %lld: %s", (long long)a.st_size, strerror(-rc));
		atomic_fetch_add(&ntruncs, 1);
		usleep(300); /* the writer fills the file between truncates */
	}
	return NULL;
}

/* Every chunk scrubbed in turn, over and over: never an error. */
static void *scrubber(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		for (uint64_t c = 0; c < NCHUNKS && !atomic_load(&stop); c++) {
			struct scrub_count n = {0};
			bool left = false;
			int rc = chunk_scrub(fs, ino, c, &n, &left);
			if (rc)
				die("scrub of chunk %llu: %s", (unsigned long long)c, strerror(-rc));
			if (n.errors || n.rebuilt || n.unrebuilt || left)
				die("scrub of chunk %llu beside writes, truncates and fsyncs: %llu errors, "
				    "%llu copies rebuilt, %llu not", (unsigned long long)c,
				    (unsigned long long)n.errors, (unsigned long long)n.rebuilt,
				    (unsigned long long)n.unrebuilt);
			atomic_fetch_add(&nscrubs, n.chunks);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_iogate MKFS\n");
		return 2;
	}
	char root[] = "/tmp/lsmfs-iogate.XXXXXX", d0[64], d1[64], spec[160], err[1024], cmd[512];
	if (!mkdtemp(root))
		die("mkdtemp: %s", strerror(errno));
	snprintf(d0, sizeof(d0), "%s/d0", root);
	snprintf(d1, sizeof(d1), "%s/d1", root);
	if (mkdir(d0, 0755) || mkdir(d1, 0755))
		die("mkdir: %s", strerror(errno));
	snprintf(cmd, sizeof(cmd), "'%s' -q --sections 8 --chunk-size %u --inline-max 256 %s %s",
		 argv[1], CS, d0, d1);
	if (system(cmd) != 0)
		die("%s: failed", cmd);
	snprintf(spec, sizeof(spec), "%s:%s", d0, d1);
	struct lsmfs_diskset *ds;
	if (diskset_open(spec, DISKSET_LOCK, &ds, err, sizeof(err)))
		die("%s", err);
	struct fs_options fo = {.attr_timeout = 1, .entry_timeout = 1, .cache_bytes = 1 << 20};
	if (fs_open(ds, &fo, NULL, NULL, &fs, err, sizeof(err)))
		die("fs_open: %s", err);
	struct stat st;
	struct fs_caller root_caller = {0};
	int rc = fs_setxattr(fs, LSMFS_ROOT_INO, "user.lsmfs.copies", "2", 1, 0, &root_caller);
	if (rc)
		die("copies=2 on the root: %s", strerror(-rc));
	rc = fs_mknod(fs, LSMFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, 022, NULL, &st);
	if (rc)
		die("mknod: %s", strerror(-rc));
	ino = st.st_ino;
	/* Each chunk read outside the lock takes this long, as on a slow
	 * disk: a write or truncate that did not wait for it would meet it. */
	fs->io_delay_us = 200;

	pthread_t t[READERS + 5];
	for (int i = 0; i < READERS; i++)
		pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)(i + 1));
	pthread_create(&t[READERS], NULL, writer, (void *)(uintptr_t)0);
	pthread_create(&t[READERS + 1], NULL, writer, (void *)(uintptr_t)1);
	pthread_create(&t[READERS + 2], NULL, truncater, (void *)(uintptr_t)200);
	pthread_create(&t[READERS + 3], NULL, syncer, NULL);
	pthread_create(&t[READERS + 4], NULL, scrubber, NULL);
	sleep(SECS);
	atomic_store(&stop, true);
	for (int i = 0; i < READERS + 5; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&nreads) < 100 || atomic_load(&nwrites) < 10 || atomic_load(&ntruncs) < 10 ||
	    atomic_load(&nscrubs) < 100)
		die("too little done to tell: %lu reads, %lu writes, %lu truncates, %lu chunks scrubbed",
		    atomic_load(&nreads), atomic_load(&nwrites), atomic_load(&ntruncs),
		    atomic_load(&nscrubs));
	if ((rc = fs_close(fs)))
		die("fs_close: %s", strerror(-rc));
	diskset_close(ds);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		die("%s: failed", cmd);
	printf("test_iogate: ok: %lu reads, %lu writes, %lu truncates, %lu chunks scrubbed\n",
	       atomic_load(&nreads), atomic_load(&nwrites), atomic_load(&ntruncs),
	       atomic_load(&nscrubs));
	return 0;
}
