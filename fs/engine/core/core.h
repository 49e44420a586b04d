/*
 * core.h: the engine's core (fs/ARCHITECTURE.md): struct fs and every type
 * it holds, the inode table and records, the I/O gate and write order of
 * an inode, the state questions (state.c), the log, the clock, the
 * statistics and the disks' error counters (devstats.c).  The engine's
 * other parts build on it; it uses none of them (fs->inode_ops is how the
 * inode table reaches them).
 *
 * Locking, outermost first:
 *   fs->ns_lock     every change to the namespace (dirents, nlink, rename,
 *                   orphans) is serialized here, so check-then-act is atomic;
 *   inode stripe    fs->ilock[ino % ILOCKS]: an inode's attributes, data and
 *                   chunk fds; taken after ns_lock, up to four at once
 *                   (a rename: both directories, the inode and the one it
 *                   replaces), each stripe once, in address order
 *                   (dir.c lockset_lock); a read or write lets it go
 *                   for each chunk's I/O (iogate.c);
 *   fs->itab_lock   the in-memory inode table and reference counts only;
 *                   held briefly, never across I/O.
 * Apart from these: fs->devstats_lock (devstats.c), held by the writers of
 * the disks' error counters across their store write, taken under none of
 * the above and by no request.
 * The store has its own locks; store calls are made under the above.
 *
 * Reference counting: an in-memory inode lives while the kernel holds
 * lookups on it (nlookup), files are open on it (nopen), or a handler is
 * using it (refs).  When all three reach 0 it is dropped; if its nlink is
 * 0 it is reclaimed (data, chunks, xattrs and record deleted).
 */
#ifndef LSMFS_ENGINE_CORE_H
#define LSMFS_ENGINE_CORE_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "disks.h"
#include "store.h"

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "disks.h"
#include "store.h"

#define ILOCKS 256
#define BOUNCE_KEEP 8
/* Set by wire.c in a WRITE's open flags (no O_ flag uses bit 30): the
 * kernel asks us to clear setuid/setgid (FUSE_WRITE_KILL_SUIDGID). */
#define WIRE_WRITE_KILL_SUIDGID (1 << 30)
#define DIRECT_ALIGN 4096u
#define BOUNCE_SIZE (1u << 20)
#define CHUNK_FDS 4         /* cached chunk fds per open inode */
#define FS_NAMED_QUEUE 32   /* messages waiting for their file's path (log.c) */
#define INO_RESERVE 1024    /* inode numbers reserved per store write */
/* A mount that took its copies of the store for the newest (force_degraded)
 * moves next_ino on by (1 + its copy) << INO_BRANCH_SHIFT (SCHEMA.md). */
#define INO_BRANCH_SHIFT 40
/* fs_options.inode_cache when 0: about 50 MB of inodes nothing holds. */
#define FS_INODE_CACHE 262144
/* Bytes the metadata store holds back for deletions, renames and the
 * unmount's inode records (store.h STORE_WRITE_RESERVE; SCHEMA.md "Full
 * metadata disk"). */
#define FS_STORE_RESERVE (2u << 20)

/* One copy of a chunk file, open (SCHEMA.md "Copies"). */
struct chunk_copy {
	int fd;                 /* -1: not open (stale, its disk unusable, or none) */
	int dfd;                /* O_DIRECT fd for aligned writes; -1: not open */
	uint32_t section;       /* where it is */
	uint32_t gen;           /* its section's generation when opened (gate.c) */
};

struct chunk_fd {
	uint64_t chunk;
	bool used;              /* false: slot empty */
	struct chunk_place place; /* where its files are: its record (SCHEMA.md "Placement") */
	uint32_t section;       /* place.section: the section of its first copy */
	struct chunk_copy copy[CHUNK_MAX_COPIES]; /* data/copies.c */
	uint8_t failed;         /* copies whose I/O failed since: made stale under the lock */
	/* space.c: bytes this new chunk was promised on each copy's disk and
	 * has not yet written (released as it writes, and when the slot goes). */
	uint64_t promised;
	uint32_t promised_disk[CHUNK_MAX_COPIES]; /* UINT32_MAX: none */
	uint64_t blocks;        /* st_blocks last seen, to keep rec.blocks */
	uint64_t next_off;      /* end of the last write (stats: sequential) */
	bool writable;          /* fds opened O_RDWR (reads open O_RDONLY) */
	uint64_t durable;       /* the record's length: bytes fsync made durable */
	uint64_t stamp;         /* LRU */
	uint32_t pins;          /* I/O on it outside the inode's lock (iogate.c):
				   not closed, evicted or reopened while > 0 */
	struct chunk_sums *sums; /* its blocks' checksums (data/sums.c); NULL: none yet */
};

/* The chunks an inode wrote whose lengths are not yet recorded, kept when
 * the inode is dropped from memory (chunk.c). */
struct unsynced_inode {
	uint64_t ino;
	uint64_t *dirty, *new_sections;
	size_t ndirty, capdirty, nnew, capnew;
};

/* Data state of an inode that has been opened: fds and unsynced chunks. */
struct inode_data {
	struct chunk_fd fds[CHUNK_FDS];
	uint64_t stamp;
	uint64_t *dirty;        /* chunks written since the last fsync */
	size_t ndirty, capdirty;
	uint64_t *new_sections; /* sections whose dirs got a new chunk file */
	size_t nnew, capnew;
	uint64_t *marked;       /* chunks an fsync left marked in write (data/sums.c) */
	size_t nmarked, capmarked;
};

/* Writes in flight, by inode and offset, so that writes to one file reach
 * its chunk files in offset order (order.c). */
#define ORDER_SLOTS 128
struct write_order {
	pthread_mutex_t lock;
	pthread_cond_t cv[ILOCKS]; /* by inode stripe */
	int wait_ms;               /* the bound of one wait (tests change it) */
	struct {
		uint64_t ino; /* 0: free */
		uint64_t off, len;
	} slot[ORDER_SLOTS];
};

/* gate.c: a chunk changed while its section moves. */
struct gate_change {
	uint64_t ino, chunk;
	uint32_t busy;          /* threads changing it now */
	bool dirty;             /* changed since the mover last took it */
	struct gate_change *next;
};
struct gate_chunk {
	uint64_t ino, chunk;
};
#define GATE_BUCKETS 1024
struct section_gates {
	uint32_t *inflight;     /* by section: threads inside its gate (atomics) */
	uint32_t *gen;          /* by section: bumped when it moves (atomics) */
	uint32_t frozen;        /* the section frozen by the mover; UINT32_MAX: none */
	uint32_t moving;        /* the section whose changes are recorded; UINT32_MAX: none */
	pthread_mutex_t lock;   /* the waits, and the change set below */
	pthread_cond_t cv;
	struct gate_change *bucket[GATE_BUCKETS];
	size_t nchanges;
	bool lost;              /* a change could not be recorded (no memory) */
	bool initialized;
};

/* kref.c: lookup counts of inodes let go from the inode table. */
struct kref_slot {
	uint64_t ino;           /* 0: empty */
	uint64_t n;
	uint64_t until;         /* its cached_until_ns */
};
struct kref_table {
	struct kref_slot *v;
	size_t cap, count;      /* cap: 0 or a power of two */
};
/* All under fs->itab_lock.  add: -ENOMEM; take: the count (0: none) and
 * *until, removed; until: its cached_until_ns (0: none); forget: lower
 * the count by n (false: not here). */
int kref_add(struct kref_table *t, uint64_t ino, uint64_t n, uint64_t until);
uint64_t kref_take(struct kref_table *t, uint64_t ino, uint64_t *until);
uint64_t kref_until(const struct kref_table *t, uint64_t ino);
bool kref_forget(struct kref_table *t, uint64_t ino, uint64_t n);
size_t kref_count(const struct kref_table *t);
void kref_free(struct kref_table *t);

/* dcache.c: directory entries lately read or written, as the store has
 * them (ino 0: the store has no such name).  Changes (under ns_lock) call
 * set or forget once their batch's write returned, forget when it failed;
 * a reader outside ns_lock takes a stamp before its store read and fills
 * with it (dropped if a change to a name near it came between).  A failed
 * init leaves a cache that holds nothing. */
struct dcache_slot;
struct dcache {
	pthread_mutex_t lock;
	struct dcache_slot *slots;  /* nsets * WAYS; NULL: no cache */
	size_t nsets;               /* a power of two */
	uint64_t *stripe;           /* change counts, by hash */
	uint64_t *complete;         /* directories whose every name is here */
	uint32_t tick;
};
int dcache_init(struct dcache *dc, size_t capacity);
void dcache_free(struct dcache *dc);
bool dcache_get(struct dcache *dc, uint64_t parent, const char *name, uint64_t *ino,
		uint8_t *type);
uint64_t dcache_stamp(struct dcache *dc, uint64_t parent, const char *name);
void dcache_fill(struct dcache *dc, uint64_t stamp, uint64_t parent, const char *name,
		 uint64_t ino, uint8_t type);
void dcache_set(struct dcache *dc, uint64_t parent, const char *name, uint64_t ino,
		uint8_t type);
void dcache_forget(struct dcache *dc, uint64_t parent, const char *name);
/* Directory dir was just made (empty, and every name it gets is set
 * here): until one is evicted, a name not held is absent.  ns_lock. */
void dcache_dir_made(struct dcache *dc, uint64_t dir);

struct fs_inode {
	uint64_t ino;
	uint64_t nlookup;       /* kernel references (lookup/create - forget) */
	uint64_t cached_until_ns; /* CLOCK_MONOTONIC: the kernel's name and
				   * attributes from the last lookup stay
				   * valid until then (itab_lock) */
	uint32_t nopen;
	uint32_t refs;          /* handlers using it right now */
	bool dirty;             /* rec differs from the store */
	bool loaded;            /* rec is valid */
	bool gone;              /* reclaimed: nothing more may be written */
	bool in_flux;           /* its `G` mark is in the store (chunk.c) */
	bool spilled;           /* a `together` file's chunk went elsewhere: said (space.c) */
	bool fresh;             /* made by this mount and never given a chunk
				   record (create_chunk clears it): it has
				   none, so its unlink need not look */
	/* A directory's live entries, -1 when not known (dir.c, ns_lock):
	 * known from its mkdir in this mount, or from a scan that found it
	 * empty, and kept by every change of its names since, so that an
	 * rmdir after its files went need not step over their deletions in
	 * the store.  Any other inode: -1. */
	int64_t nentries;
	uint32_t io_ops;        /* reads and chunk writes under way (iogate.c) */
	uint32_t io_writes;     /* the writes of them */
	uint32_t io_wwait;      /* writes waiting to begin */
	uint32_t io_rwait;      /* reads waiting to begin */
	bool io_turn_read;      /* both waiting: the reads go next */
	uint32_t io_drain;      /* layout changes waiting for them */
	uint64_t io_end;        /* the end of the writes under way (data.c) */
	/* A write that would have made the file longer failed at write_floor
	 * (data.c): until a truncate or the last close, writes that reach
	 * past it fail with write_err, so that the file never ends past a
	 * failed write nor holds zeros where one failed. */
	bool write_failed;
	int write_err;
	uint64_t write_floor;
	struct inode_rec rec;
	struct inode_data *data;
	struct fs_inode *hnext;
};

struct fs_options {
	bool read_only;
	bool writeback;         /* kernel writeback cache */
	bool direct;            /* aligned chunk writes with O_DIRECT */
	double attr_timeout, entry_timeout;
	bool dircache;          /* the kernel may keep listings */
	double dircache_age;    /* seconds a directory is left alone before the
				 * kernel keeps its listing (fs/daemon/dircache.c) */
	bool selinux_xattr;     /* security.selinux kept; else EOPNOTSUPP (xattr.c) */
	size_t cache_bytes;     /* store block cache */
	size_t inode_cache;     /* inodes kept in memory that nothing holds
				 * (past it, kref.c keeps their counts) */
	uint64_t log_delay_us;  /* store_options.log_delay_us: how long a
				 * write not synced may stay in the daemon's
				 * memory; 0: none */
	/* backup.c, a restore: before any crash repair, the section map
	 * follows the section directories on the disks and every chunk record
	 * whose file is gone is marked lost, each such file told to
	 * restoring(restoring_ctx, "lost {json}"); NULL: a mount. */
	int (*restoring)(void *ctx, const char *line);
	void *restoring_ctx;
};

/* What reached one backing disk's chunk files (stats.c). */
struct fs_disk_stats {
	atomic_uint_least64_t bytes, writes, fsyncs, sequential;
};

/* A disk's error counters (devstats.c; SCHEMA.md "Error counters"), by
 * enum devstat (schema.h). */
struct devstats_disk {
	atomic_uint_least64_t count[DEVSTAT_KINDS];
	atomic_bool dirty;      /* moved since its `E` record was last stored */
};

/* move.c: how far a section move is. */
struct move_progress {
	uint32_t section, from, to;
	uint64_t files_done, files_total, bytes_done, bytes_total;
};

struct fs {
	const struct inode_ops *inode_ops; /* set by fs_open, before any inode */
	/* The store's primary copy changed (admin/copies.c calls it, NULL: nobody
	 * to tell): set by control_start, which moves its socket there. */
	void (*home_moved)(struct fs *fs);
	struct lsmfs_diskset *ds;
	struct store *st;
	struct fs_options opt;
	struct fs_info info;
	uint32_t *section_disk;   /* section -> disk index (atomics: gate.c section_disk_of) */
	struct section_gates gates;
	pthread_mutex_t move_lock; /* move.c: one section moves at a time */
	bool move_cancel;          /* atomics: unmount; a move under way rolls back */
	/* control.c: the control socket; lock guards active, moving, now. */
	struct {
		pthread_mutex_t lock;
		pthread_cond_t cv;
		int listen_fd, stop_pipe[2];
		int next_fd;              /* home_moved: the socket to take (lock) */
		char path[LSMFS_META_PATH_MAX + 80]; /* where listen_fd is bound (lock) */
		pthread_t thread;
		bool running, moving;
		int active;               /* connections being served */
		struct move_progress now; /* of the move under way */
	} ctl;
	/* admin/scrub.c: the online scrub (opaque here): made by the first
	 * scrub request (under ctl.lock), freed at fs_close. */
	struct scrub *scrub;
	uint8_t *section_changed; /* bitmap: a chunk file made or removed there (atomics) */
	int *sections_fd;         /* disk index -> fd of <disk>/.lsmfs/sections */
	bool under_copied_said;   /* space.c: a chunk got fewer copies than asked (atomic) */
	/* space.c: by disk, bytes promised to new chunks not yet written
	 * (atomics): the room placement sees is the disk's free space less. */
	uint64_t space_promised[LSMFS_MAX_DISKS];
	/* space.c: promises of chunks whose slot went before they were
	 * written whole (their writes go on through a new slot), kept a
	 * little longer; under space_lock. */
	pthread_mutex_t space_lock;
	struct space_late {
		uint32_t disk;
		uint64_t bytes, until_ns;
	} space_late[64];
	int clock_fd;             /* clock.c: an unnamed file beside the store, or -1 */
	/* members.c: paths and fds of disks detached (or replaced) while
	 * open, freed at fs_close: a reader may still hold them. */
	struct fs_gone { char *path; int fd; } *gone;
	size_t ngone;

	pthread_mutex_t ns_lock;
	pthread_mutex_t ilock[ILOCKS];
	pthread_cond_t iocv[ILOCKS]; /* by stripe, with ilock (iogate.c) */
	int io_delay_us;             /* tests: a pause before each I/O outside it */
	struct write_order order;

	pthread_mutex_t itab_lock;
	struct fs_inode **itab;
	size_t itab_size, itab_count;
	struct kref_table kref; /* (itab_lock) */
	struct dcache dcache;

	pthread_mutex_t ino_lock;
	uint64_t next_ino, reserved_to;
	uint64_t generation;

	/* Aligned bounce buffers for direct writes of data that arrived at an
	 * unaligned address (libfuse's read buffer). */
	pthread_mutex_t bounce_lock;
	void *bounce[BOUNCE_KEEP];
	int nbounce;
	/* Per disk: 1 once it refused O_DIRECT (tmpfs, some network
	 * filesystems); its chunks are written through the page cache. */
	unsigned char *no_direct;

	/* wire.c: the unique of a pending INIT that offered
	 * FUSE_HANDLE_KILLPRIV_V2, and whether our reply took it: then
	 * clearing setuid/setgid and capabilities on write, truncate and
	 * chown is ours to do. */
	uint64_t wire_init_unique;
	bool killpriv_v2;
	struct fuse_session *se; /* for attribute invalidations; NULL in tests */
	/* The kernel took FUSE_CAP_POSIX_ACL: it enforces the ACLs acl.c
	 * keeps (and leaves the umask to us); without it ACLs are refused. */
	bool posix_acl;

	/* stats.c: per disk, by disk index; bytes applications wrote. */
	struct fs_disk_stats *dstats;
	atomic_uint_least64_t app_bytes;
	/* stats.c: the thread that copies the counters to <store>/stats.json.
	 * stats_lock guards stats_stopping; the rest is the thread's alone
	 * while it runs, then fs_close's. */
	pthread_t stats_thread;
	bool stats_running;
	pthread_mutex_t stats_lock;
	pthread_cond_t stats_cv;
	bool stats_stopping;
	bool stats_written;        /* stats_sum holds what the file shows */
	bool stats_write_failed;   /* said once in the log; not again */
	uint64_t stats_sum;        /* every counter added up, as last written */

	/* devstats.c: by disk index (LSMFS_MAX_DISKS), atomics; devstats_lock
	 * serialises the writers of the `E` records (never taken to count)
	 * and guards devstats_write_failed. */
	struct devstats_disk *devstats;
	atomic_uint_least64_t devstats_moves; /* counts, resets, drops: the statistics' sum */
	pthread_mutex_t devstats_lock;
	bool devstats_write_failed; /* said once in the log; again after a success */

	/* chunk.c: the chunks of inodes dropped from memory that were
	 * written since their lengths were last recorded ("Chunk lengths"). */
	pthread_mutex_t unsynced_lock;
#define UNSYNCED_MAX 4096            /* inodes, then they are recorded */
#define UNSYNCED_CHUNKS_MAX (1 << 20) /* chunks (8 MiB), likewise */
	struct unsynced_inode *unsynced;
	size_t nunsynced, capunsynced;
	uint64_t unsynced_chunks;

	/* admin/copies.c: the store's copies (SCHEMA.md "Store copies").  Store
	 * copy k (store_options numbering) is the superblock's copy
	 * store_which[k]; copies_lock serialises the copy states file. */
	uint32_t store_which[STORE_MAX_COPIES]; /* UINT32_MAX: none (removed, or an add that failed) */
	uint32_t store_ncopies;
	pthread_mutex_t copies_lock;
	bool copies_lock_init;
	/* A mount that took the copies here for the newest (force_degraded):
	 * 1 + the copy it opened by, the run of inode numbers it moves
	 * next_ino by (copies_prepare, fs_mount); 0 otherwise. */
	uint32_t ino_branch;
	bool copies_degraded;     /* atomics: a copy is missing or failed */

	/* diskwatch.c: per disk, 1 once it is no longer the disk opened. */
	unsigned char *disk_lost;
	int meta_fd[STORE_MAX_COPIES]; /* each store copy's directory (store
				   * numbering), as opened at mount; -1: none */
	bool meta_lost;           /* atomics: the store's disk went: no more writes */
	pthread_t watch_thread;
	pthread_mutex_t watch_lock;
	pthread_cond_t watch_cv;
	bool watch_stopping, watch_running, watch_initialized;

	/* rdonly.c: mount -o remount,ro|rw, told by SIGUSR1. */
	char *mountpoint;
	int rdonly_pipe[2];
	pthread_t rdonly_thread;
	bool rdonly_running, rdonly_stopping;
	bool remounted_ro;        /* atomics */

	/* reclaim.c */
	struct reclaim {
		pthread_mutex_t lock;
		pthread_cond_t cv, idle;
		uint64_t *queue;
		size_t n, cap;
		uint64_t done;
		bool busy, stopping, running, initialized;
		pthread_t thread;
	} reclaim;

	/* sweep.c: done is the reclaim thread's until it is joined. */
	struct {
		bool armed;   /* `M mounted` is in the store */
		bool pending; /* it was there at mount: a crash */
		bool ran, done;
	} sweep;

	/* log.c, background/namer.c: messages that name a file by its path,
	 * which only a scan of the directory entries finds: queued here,
	 * logged by the namer thread (lock guards the rest). */
	struct {
		pthread_mutex_t lock;
		pthread_cond_t cv;
		struct fs_named_msg { uint64_t ino; char *msg; } q[FS_NAMED_QUEUE];
		unsigned n;
		bool running, stopping, initialized;
		pthread_t thread;
	} namer;

	/* data/sums.c: this mount's mark in the chunk records it writes
	 * (SCHEMA.md "Chunk checksums"), random, never 0. */
	uint32_t mount_gen;

	/* Reports from the store and the daemon go to log(ctx, line). */
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
};

/* iogate.c, all under the inode's lock: a read is under way from
 * iogate_begin_read, a chunk write from iogate_try_begin (it counts itself
 * in io_wwait until then, and takes itself out with iogate_unwait), each
 * until iogate_end; it lets the lock go for a chunk's I/O between
 * iogate_out and iogate_back (slot c pinned).  A change of the file's
 * layout calls iogate_drain first; iogate_wait waits for a pin, a turn or
 * a drain to go.  iogate_drain_read drains, then begins a read at once,
 * taking no turn: the caller is alone in the file's gate (no slot pinned)
 * for what needs it quiet, and its I/O then runs beside other reads, with
 * the lock let go, until iogate_end (a chunk's scrub, chunk_scrub.c). */
bool iogate_try_begin(struct fs *fs, struct fs_inode *in, bool write);
void iogate_unwait(struct fs *fs, struct fs_inode *in);
void iogate_begin_read(struct fs *fs, struct fs_inode *in);
void iogate_end(struct fs *fs, struct fs_inode *in, bool write);
void iogate_drain(struct fs *fs, struct fs_inode *in);
void iogate_drain_read(struct fs *fs, struct fs_inode *in);
void iogate_out(struct fs *fs, struct fs_inode *in, struct chunk_fd *c);
void iogate_back(struct fs *fs, struct fs_inode *in, struct chunk_fd *c);
void iogate_wait(struct fs *fs, struct fs_inode *in);

/* order.c: order_enter at a write's start (returns a slot or -1),
 * order_wait under the inode's lock, order_leave(slot) still under it. */
int order_init(struct fs *fs);
void order_free(struct fs *fs);
int order_enter(struct fs *fs, uint64_t ino, uint64_t off, uint64_t len);
void order_wait(struct fs *fs, uint64_t ino, uint64_t off);
void order_leave(struct fs *fs, int slot, uint64_t ino);

/* state.c: a store copy is missing, stale or failed. */
bool copies_degraded(struct fs *fs);
/* state.c: the superblock's copy that is store copy k (store_options
 * numbering), or UINT32_MAX (being removed). */
uint32_t fs_sb_copy(const struct fs *fs, size_t k);
/* The directory the daemon keeps its socket and statistics in (the
 * store's primary copy; it changes when that copy is removed). */
void copies_home(struct fs *fs, char *out, size_t cap);

/* stats.c */
int stats_init(struct fs *fs);
void stats_free(struct fs *fs);
/* n bytes written at off of chunk file c on disk. */
void stats_write(struct fs *fs, uint32_t disk, struct chunk_fd *c, uint64_t off, size_t n);
void stats_fsync(struct fs *fs, uint32_t disk);
/* The counters as one JSON object (malloc'd, newline-terminated), taken
 * now by a mounted daemon. */
int stats_json(struct fs *fs, char **json, size_t *len);
/* <store>/FS_STATS_FILE (fs.h): every FS_STATS_INTERVAL_S seconds while a counter
 * moves (SCHEMA.md, "Statistics").  stats_start starts the writer thread
 * (0 or a negative errno); stats_stop stops it, promptly, and is a no-op
 * when it never started; stats_write_final writes the file once more with
 * "mounted": false (after the store's last flush, before it closes). */
#define FS_STATS_INTERVAL_S 2
int stats_start(struct fs *fs);
void stats_stop(struct fs *fs);
/* "copies":[...],"degraded":bool, for status and the statistics. */
void stats_copies_json(struct fs *fs, struct json_out *o);
void stats_write_final(struct fs *fs);

/*
 * devstats.c: each disk's error counters, kept across mounts (SCHEMA.md
 * "Error counters").  count and count_error: from any thread, under any
 * lock (atomics only).  count_error counts err (either sign) when it is
 * an error of the medium or the file, not ENOSPC and its kin, and only
 * for a disk that is there and usable.  get: the counters, zeroed as
 * they are read when reset (each by an exchange: none lost).  json:
 * "errors":{"read_io_errs":N,...}.  moves: grows at every change.
 *
 * init (-ENOMEM) at open, before load; load after the disk set is
 * settled (members_reconcile): the `E` records of the members, those of
 * slots no disk holds deleted (logged; a read-only open leaves them).
 * store: the records of the disks whose counters moved, in one write
 * with wflags (0 or a negative errno; on failure they stay to store, and
 * the first failure is logged); nothing on a read-only open or once the
 * store's disk is lost.  drop: disk's counters zeroed, and its record's
 * deletion put into b (NULL: none), for a disk detached or a slot taken
 * by a new disk, under devstats_lock so that no store of older counters
 * comes after.
 */
int devstats_init(struct fs *fs);
void devstats_free(struct fs *fs);
int devstats_load(struct fs *fs);
void devstats_count(struct fs *fs, uint32_t disk, enum devstat kind);
void devstats_count_error(struct fs *fs, uint32_t disk, enum devstat kind, int err);
/* Is err (either sign) a fault of the disk or file, not of a full disk or
 * of the daemon short of something?  What counts, and what makes a copy
 * of a chunk stale (chunk_copies.c). */
bool devstats_disk_fault(int err);
void devstats_get(struct fs *fs, uint32_t disk, uint64_t count[DEVSTAT_KINDS], bool reset);
uint64_t devstats_moves(struct fs *fs);
void devstats_json(struct fs *fs, uint32_t disk, struct json_out *o);
int devstats_store(struct fs *fs, unsigned wflags);
int devstats_drop(struct fs *fs, uint32_t disk, struct store_batch *b);

/* state.c */
int fs_alloc_ino(struct fs *fs, uint64_t *ino);
/* 1 if the store holds key, 0 if not, or a negative errno. */
int fs_key_exists(struct fs *fs, const uint8_t *key, size_t klen);
/* fn(ino) for every key `type` be64(ino) (orphans, in-flux marks), in
 * order, until fn returns non-zero (returned). */
int fs_each_ino_key(struct fs *fs, uint8_t type, int (*fn)(struct fs *fs, uint64_t ino, void *ctx),
		    void *ctx);
void fs_logf(struct fs *fs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A message about inode ino, logged as "PATH: message" once the namer
 * thread found its path (background/namer.c), soon and in order; at once
 * as "inode N: message" when no thread runs or the queue is full. */
void fs_log_named(struct fs *fs, uint64_t ino, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* clock.c: the time inode times are stamped with, from the kernel's clock
 * for files (clock_open at mount, after the disks; never fails: without
 * its file the coarse clock is read). */
void clock_open(struct fs *fs);
void clock_close(struct fs *fs);
void fs_now(struct fs *fs, int64_t *sec, uint32_t *nsec);
/* CLOCK_MONOTONIC in nanoseconds: for intervals and deadlines, never for
 * inode times. */
uint64_t fs_mono_ns(void);

/*
 * What the inode table asks of the layers above it when it lets an inode
 * go from memory (inode_put's drop) and at unmount (fs_persist_all): the
 * data path's fds, dirty chunks and memory (chunk.c), and the reclaim of
 * an inode whose last name went (reclaim.c).  fs_open sets fs->inode_ops
 * before any inode exists; the table never changes after.  Each is called
 * where inode.c's comments say, under the locks they name.
 */
struct inode_ops {
	void (*close_fds)(struct fs *fs, struct fs_inode *in);    /* data_close_fds */
	void (*free)(struct fs *fs, struct fs_inode *in);         /* data_free */
	/* Keep the lengths it has not recorded past its drop; true: the
	 * kept set is full, record them now (record_unsynced). */
	bool (*keep_unsynced)(struct fs *fs, struct fs_inode *in);
	void (*forget_unsynced)(struct fs *fs, uint64_t ino);
	int (*record_unsynced)(struct fs *fs, unsigned wflags);
	int (*sync_dirty)(struct fs *fs, struct fs_inode *in, unsigned wflags);
	/* Its last name is gone: delete it, in the background if it can. */
	int (*orphaned)(struct fs *fs, uint64_t ino);
};

/* inode.c */
struct fs_inode *inode_get(struct fs *fs, uint64_t ino, int *err);
/* ino in memory, or NULL; no reference taken: valid while the caller
 * holds ino's stripe lock (an inode leaves memory under it). */
struct fs_inode *inode_peek(struct fs *fs, uint64_t ino);
struct fs_inode *inode_ref(struct fs *fs, struct fs_inode *in);
void inode_put(struct fs *fs, struct fs_inode *in);
pthread_mutex_t *inode_lock_of(struct fs *fs, uint64_t ino);
void inode_lock(struct fs *fs, struct fs_inode *in);
void inode_unlock(struct fs *fs, struct fs_inode *in);
/* A new inode (not yet in the store): rec filled by the caller. */
struct fs_inode *inode_new(struct fs *fs, uint64_t ino,
			   const struct inode_rec *rec);
int inode_load_rec(struct fs *fs, uint64_t ino, struct inode_rec *rec);
void inode_rec_put(struct store_batch *b, uint64_t ino,
		   const struct inode_rec *rec);
/* Delete into b the keys an inode owns besides its attributes and its
 * orphan key: record, inline data, in-flux mark (the last name's purge in
 * dir.c, and reclaim_inode). */
void inode_keys_delete(struct store_batch *b, uint64_t ino);
/* Write rec if dirty (under the inode lock). */
int inode_persist(struct fs *fs, struct fs_inode *in, bool sync);
void inode_stat(const struct fs *fs, const struct fs_inode *in,
		struct stat *st);
void inode_touch(struct fs *fs, struct inode_rec *r, bool mtime, bool ctime);
/* The same with the ctime stamp holds: one operation's records share one
 * time (fs_now asks the kernel, clock.c), as the kernel's do. */
void inode_touch_as(struct inode_rec *r, const struct inode_rec *stamp, bool mtime, bool ctime);
/* Clear setuid, and setgid when group-executable or when the caller is
 * neither in the file's group nor privileged, as the VFS does on write,
 * truncate and chown of a non-directory (caller NULL: privileged). */
struct fs_caller;
void inode_kill_suidgid(struct inode_rec *r, const struct fs_caller *caller);
/* The caller is root or in group gid (NULL: privileged). */
bool inode_caller_in_group(const struct fs_caller *caller, gid_t gid);
void fs_forget(struct fs *fs, uint64_t ino, uint64_t n);
/* One more lookup the kernel holds, handed out now with the inode's name
 * and attributes under the mount's timeouts (fs_kernel_has_attrs). */
void fs_lookup_given(struct fs *fs, struct fs_inode *in);
/* Does the kernel hold ino with a name and attributes that have not timed
 * out?  A hint: it may forget them at any moment (an inode let go from the
 * inode table answers from kref.c, without being loaded). */
bool fs_kernel_has_attrs(struct fs *fs, uint64_t ino);
/* The inode is deleted (reclaim.c): nothing more may be written to it. */
void inode_mark_gone(struct fs *fs, uint64_t ino);
int fs_persist_all(struct fs *fs);

/* Who asks, for the setgid rule: uid 0 stands for CAP_FSETID.  pid
 * (0: unknown) lets xattr.c look up CAP_SYS_ADMIN.  groups: the
 * supplementary groups, read only for the requests that may change a
 * mode or an ACL (ops.c caller_of); fs_getxattr and fs_listxattr get
 * none. */
struct fs_caller {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	int ngroups;
	gid_t groups[32];
};

/* The disk a section is on now (a moment later it may have moved, unless
 * the caller is inside its gate). */
uint32_t section_disk_of(struct fs *fs, uint32_t section);

/* False once disk has been found replaced (its chunks then fail, EIO). */
bool disk_usable(struct fs *fs, uint32_t disk);

/* False on a read-only mount, or one remounted read-only. */
bool fs_writable(struct fs *fs);

#endif
