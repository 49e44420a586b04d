/*
 * store.h: the public API of the lsmfs LSM key-value store.  The only store
 * header that fs/, mkfs/ and tools/ include.
 *
 * Keys and values are byte strings (the empty key is a key like any
 * other), ordered by memcmp (shorter first on a common prefix).  Every function that can fail returns 0 or a negative
 * errno: -ENOENT (no such key), -ENOMEM, -EIO, -ENOSPC, -EINVAL (bad
 * argument or options), -EBUSY (store locked by another user), -EEXIST
 * (error_if_exists), -EUCLEAN (corruption; the message names file and
 * offset and is passed to options.log and kept for store_errmsg()).
 *
 * Errors that pass and errors that stay (FORMAT.md "Full disk").  A
 * write(2) error (-ENOSPC, -EDQUOT, -EIO, ...) while appending to the
 * commit log fails the writes of that group only: the log is cut back to
 * the end of the last whole record (ftruncate + fdatasync) and the next
 * write goes to a new log.  Errors of a flush, a compaction or a MANIFEST
 * write fail nothing acknowledged: the background thread retries them
 * (50 ms, doubling to 2 s); meanwhile a write that needs the flush (the
 * memtable is full) fails with that error instead of waiting, and no file
 * is deleted after a failed MANIFEST write until a new MANIFEST is in
 * place.  Sticky until the store is closed and opened again (every write
 * then fails with it, and store_close returns it): a failed fsync of the
 * commit log (fsyncgate: the kernel may have dropped acknowledged pages,
 * and a retried fsync can report success over the hole; reopening replays
 * what really reached the disk), a commit log whose torn tail cannot be
 * cut, a write that reached the log but not the memtable, and corruption.
 *
 * Thread safety: a struct store may be used by any number of threads at
 * once.  A batch or an iterator belongs to one thread at a time.
 * On-disk format: store/FORMAT.md.
 */
#ifndef LSMFS_STORE_H
#define LSMFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct store_batch;
struct store_iter;
struct store_snapshot;
struct store_env; /* file I/O layer; NULL means the real filesystem */

#define STORE_MAX_LEVELS 7
#define STORE_MAX_COPIES 8 /* directories one store may be kept in */

enum store_compression {
	STORE_COMPRESSION_NONE = 0,
	STORE_COMPRESSION_LZ4 = 1,
};

enum store_filter_kind {
	STORE_FILTER_NONE = 0,
	STORE_FILTER_BLOOM = 1,
	STORE_FILTER_ELASTIC = 2,
	STORE_FILTER_QUOTIENT = 3,
};

#define STORE_FILTER_MAX_UNITS 16

/*
 * A table filter policy and its parameters (store/FILTERS.md), as the
 * store options name them and each table records them.
 *   bloom:    bits = bits per key (1..64)
 *   elastic:  bits = bits per key of each unit (1..64), units = 2..16
 *   quotient: bits = remainder bits per fingerprint (2..32)
 */
struct store_filter {
	enum store_filter_kind kind;
	unsigned bits;
	unsigned units;
};

/* The store's default: bloom, 10 bits per key. */
void store_filter_default(struct store_filter *p);
/* 0 when p names a policy with parameters in range, else -EINVAL. */
int store_filter_check(const struct store_filter *p);
/* Parse "none", "bloom[:BITS]", "elastic[:UNITSxBITS]", "quotient[:BITS]";
 * 0 or -EINVAL. */
int store_filter_parse(const char *s, struct store_filter *out);
/* The same text form into buf (always terminated). */
void store_filter_format(const struct store_filter *p, char *buf, size_t len);

struct store_options {
	bool create_if_missing;     /* default true */
	bool error_if_exists;       /* default false */
	bool read_only;             /* default false: no writes, no compaction */
	bool paranoid_checks;       /* default false: a torn log tail is an error */
	bool sync;                  /* default false: fsync the log on every write */
	/*
	 * Delayed commit-log writes (FORMAT.md "Delayed log writes"): a write
	 * that is not synced returns with its record still in the store's
	 * memory, and its record reaches the OS (write(2)) at most this many
	 * microseconds later, or sooner: when ENV_WRITE_UNIT bytes are
	 * waiting, at a synced write, store_sync(), a memtable switch or
	 * store_close().  Records reach the log in order, so a crash of the
	 * process keeps a prefix of the writes, as a power cut already may.
	 * Default 0: every write reaches the OS before it returns.
	 */
	uint64_t log_delay_us;
	size_t write_buffer_size;   /* memtable bytes before a flush; default 8 MiB */
	size_t block_size;          /* uncompressed data block target; default 4 KiB */
	size_t block_restart_interval; /* keys between restart points; default 16 */
	size_t block_cache_bytes;   /* LRU cache of data blocks; default 8 MiB */
	struct store_filter filter; /* new tables' filter; default bloom:10 */
	/* Bytes of filter parts held in memory, over every open table
	 * (FILTERS.md "Filter memory"); default 0: no bound. */
	uint64_t filter_memory;
	enum store_compression compression; /* default lz4 */
	int max_open_files;         /* table cache bound; default 1000 */
	uint64_t target_file_size;  /* SSTable split size; default 4 MiB */
	uint64_t level_base_bytes;  /* L1 target size; default 16 MiB */
	int level_multiplier;       /* each level's target x this; default 10 */
	int l0_compaction_trigger;  /* default 4 */
	int l0_slowdown_trigger;    /* default 8: writers sleep 1 ms per write */
	int l0_stop_trigger;        /* default 12: writers wait for compaction */
	/* Space held back for STORE_WRITE_RESERVE writes, as a preallocated
	 * file RESERVE in the store's directory (FORMAT.md "Full disk").
	 * Default 0: none. */
	uint64_t reserve_bytes;
	struct store_env *env;      /* default NULL: real files */
	/*
	 * Copies (FORMAT.md "Copies"): the store is kept whole in dir (copy
	 * 0) and in each of these ncopies directories (copy 1, 2, ...; at
	 * most STORE_MAX_COPIES in all).  A write is durable once every
	 * live copy has it; reads are answered by any, and a damaged or
	 * missing table in one copy is read from another and rewritten.  A
	 * copy that fails where the others work is dropped and
	 * copy_failed() called (before anything it lacks is acknowledged; a
	 * non-zero return fails that write).  copies_stale: bit i for a copy
	 * known to be behind (its disk was away): never read, brought up to
	 * date at a read-write open.  Default: none.
	 */
	const char *const *copies;
	size_t ncopies;
	unsigned copies_stale;
	int (*copy_failed)(void *ctx, size_t copy, int err, const char *what);
	void *copy_ctx;
	/* Reports (a torn log tail that was cut, background errors, corruption),
	 * one line each without a newline.  NULL: reports are dropped.  It may
	 * be called with the store's locks held: it must not call the store. */
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
};

/* Fill *opt with the defaults above. */
void store_options_init(struct store_options *opt);

/*
 * Open (or create) the store in directory dir.  Recovers from the commit
 * log; a torn tail of the newest log is cut and reported through opt->log.
 * When the replayed writes cannot be written to a table (the disk is full)
 * they stay in the memtable and in their logs, and the flush waits for
 * space (reported): open needs no free space beyond a new empty log file.
 * Returns 0 and *out, or a negative errno; on -EUCLEAN the message naming
 * file and offset went to opt->log.
 */
int store_open(const char *dir, const struct store_options *opt,
	       struct store **out);
/* Stop background work and release everything.  Unflushed memtable data
 * stays in the commit log.  Returns the first background error, if any. */
int store_close(struct store *st);

/* Write flags. */
#define STORE_WRITE_SYNC 1u /* make this write durable before returning */
/*
 * The write frees or keeps space (a deletion, a rename): it may draw on
 * the reserve.  When its log append meets -ENOSPC or -EDQUOT, part of the
 * RESERVE file is given back and the append retried (while RESERVE has
 * bytes left); when the memtable is full and cannot be flushed it may fill
 * a second write_buffer_size of memory.  A write without this flag first re-makes
 * a reserve that was drawn on, and fails with -ENOSPC while it cannot:
 * once the disk is full only reserve writes go on, as only root may use
 * ext4's reserved blocks.
 */
#define STORE_WRITE_RESERVE 2u

int store_put(struct store *st, const void *key, size_t klen,
	      const void *val, size_t vlen, unsigned flags);
int store_delete(struct store *st, const void *key, size_t klen,
		 unsigned flags);
/* Apply every operation of the batch atomically (all or none, also across
 * a crash).  The batch is left unchanged. */
int store_write(struct store *st, const struct store_batch *b, unsigned flags);
/* Make every write acknowledged so far durable. */
int store_sync(struct store *st);

/*
 * Point read at snap (NULL: the latest).  On success *val is a malloc'd
 * copy (free() it; it is NUL-terminated for convenience) and *vlen its
 * length.  -ENOENT if absent.
 */
int store_get(struct store *st, const struct store_snapshot *snap,
	      const void *key, size_t klen, void **val, size_t *vlen);

/* Snapshots pin a sequence number: reads through them see the store as it
 * was.  Release each exactly once.  NULL only when out of memory. */
const struct store_snapshot *store_snapshot_new(struct store *st);
void store_snapshot_release(struct store *st, const struct store_snapshot *snap);
uint64_t store_snapshot_seq(const struct store_snapshot *snap);

/* Write batches. */
struct store_batch *store_batch_new(void);
void store_batch_free(struct store_batch *b);
void store_batch_clear(struct store_batch *b);
int store_batch_put(struct store_batch *b, const void *key, size_t klen,
		    const void *val, size_t vlen);
int store_batch_delete(struct store_batch *b, const void *key, size_t klen);
size_t store_batch_count(const struct store_batch *b);

/*
 * Iterators see one consistent snapshot (snap, or the store when created).
 * Bounds: keys in [lower, upper); NULL means unbounded.  The bound bytes are
 * copied.
 */
struct store_iter_options {
	const struct store_snapshot *snap;
	const void *lower;
	size_t lower_len;
	const void *upper;
	size_t upper_len;
};
int store_iter_new(struct store *st, const struct store_iter_options *opt,
		   struct store_iter **out);
void store_iter_free(struct store_iter *it);
void store_iter_seek_first(struct store_iter *it);
void store_iter_seek_last(struct store_iter *it);
/* First key >= key (and >= the lower bound). */
void store_iter_seek(struct store_iter *it, const void *key, size_t klen);
/* Last key <= key. */
void store_iter_seek_for_prev(struct store_iter *it, const void *key, size_t klen);
bool store_iter_valid(const struct store_iter *it);
/* REQUIRES: valid. */
void store_iter_next(struct store_iter *it);
void store_iter_prev(struct store_iter *it);
/* REQUIRES: valid.  Pointers stay good until the iterator moves; an
 * empty key or value may come back as a NULL pointer with length 0. */
const void *store_iter_key(const struct store_iter *it, size_t *len);
const void *store_iter_value(const struct store_iter *it, size_t *len);
/* 0, or the first error the iterator met (sticky). */
int store_iter_status(const struct store_iter *it);

/* Write the memtable to an L0 table and wait for it. */
int store_flush(struct store *st);
/* The filter policy of the tables written from now on (flushes and
 * compactions); the tables already written keep theirs, and are read
 * by it, until compaction rewrites them.  0 or -EINVAL. */
int store_set_filter(struct store *st, const struct store_filter *f);
/* Wait until the background thread has nothing left to do: no memtable
 * to flush, no level over its target.  0, the background error (a soft
 * one, such as a full disk, included), or -ECANCELED when the store is
 * closing.  A read-only store returns at
 * once. */
int store_wait_compactions(struct store *st);
/* Compact every level over [begin, end] (NULL: open end) down to the
 * bottom, and wait. */
int store_compact_range(struct store *st, const void *begin, size_t blen,
			const void *end, size_t elen);

/*
 * The store's counters, one line each: the one list (an X-macro) from which
 * the fields of struct store_stats and struct store_totals, the names
 * store-tool and storebench print, and the JSON keys of the daemon's
 * statistics (lsmfs(8) STATISTICS) and of lsmfs-inspect's stats and levels
 * are made.  tests/doc/test_counters.py checks the man pages and README
 * against it.  Each entry is X(kind, field, key, word):
 *
 *   kind   TOTAL: bytes written of one kind, counted since open and over
 *          the store's whole life (struct store_totals: FORMAT.md "Version
 *          edit record", tag 7, in this order); WRITE: the write side's
 *          other counts, READ: the block cache's and the filters' answers,
 *          FILTER: data blocks read and the filters' memory, all since
 *          open; NOW: the state at the call
 *   field  its name in struct store_stats (and struct store_totals), as the
 *          tools print it
 *   key    its JSON key in the daemon's statistics, "" when it has none
 *   word   a TOTAL's kind in one word, as lsmfs-inspect stats prints it
 *          ("" for the others)
 *
 * Add a counter here, fill it in store_get_stats (db_read.c); a TOTAL
 * also needs a place in the MANIFEST's tag 7 (a format change).
 */
#define STORE_COUNTERS(X)                                                                       \
	X(TOTAL, user_bytes_written, "user_bytes", "user") /* keys + values handed to writes */ \
	X(TOTAL, wal_bytes_written, "log_bytes", "log") /* commit logs */                       \
	X(WRITE, wal_syncs, "log_syncs", "")                                                    \
	X(TOTAL, flush_bytes_written, "flush_bytes", "flush")                                   \
	X(WRITE, compaction_bytes_read, "", "")                                                 \
	X(TOTAL, compaction_bytes_written, "compaction_bytes", "compaction")                    \
	X(TOTAL, manifest_bytes_written, "manifest_bytes", "manifest")                          \
	X(WRITE, flushes, "", "")                                                               \
	X(WRITE, compactions, "", "")                                                           \
	X(READ, block_cache_hits, "", "")                                                       \
	X(READ, block_cache_misses, "", "")                                                     \
	X(READ, block_cache_bytes, "", "")    /* in use now */                                  \
	X(READ, bloom_checked, "", "")        /* filter consulted */                            \
	X(READ, bloom_useful, "", "")         /* filter said "absent": a read avoided */        \
	X(READ, bloom_false_positive, "", "") /* filter said "maybe", key absent */             \
	X(FILTER, data_block_reads, "", "")   /* data blocks read from table files */           \
	X(FILTER, filter_bytes, "", "")       /* filter parts in memory, now */                 \
	X(FILTER, filter_budget, "", "")      /* store_options.filter_memory */                 \
	X(FILTER, filter_loads, "", "")       /* parts loaded by the budget's thread */         \
	X(FILTER, filter_drops, "", "")       /* parts dropped for hotter tables */             \
	X(WRITE, write_stall_micros, "", "")  /* writers slowed or stopped */                   \
	X(NOW, memtable_bytes, "", "")        /* active + immutable */                          \
	X(NOW, last_sequence, "", "")

/* The kinds, as values: STORE_COUNTER_##kind inside an X. */
enum store_counter_kind {
	STORE_COUNTER_TOTAL,
	STORE_COUNTER_WRITE,
	STORE_COUNTER_READ,
	STORE_COUNTER_FILTER,
	STORE_COUNTER_NOW,
};
/* STORE_IF_TOTAL(kind, text...): the text for a TOTAL counter, nothing for
 * the others: the totals alone, from STORE_COUNTERS, where a test of
 * STORE_COUNTER_##kind will not do (struct members, initializers). */
#define STORE_IF_TOTAL(kind, ...) STORE_IF_TOTAL_##kind(__VA_ARGS__)
#define STORE_IF_TOTAL_TOTAL(...) __VA_ARGS__
#define STORE_IF_TOTAL_WRITE(...)
#define STORE_IF_TOTAL_READ(...)
#define STORE_IF_TOTAL_FILTER(...)
#define STORE_IF_TOTAL_NOW(...)

#define STORE_COUNTER_FIELD_(kind, field, key, word) uint64_t field;
#define STORE_TOTAL_FIELD_(kind, field, key, word) STORE_IF_TOTAL(kind, uint64_t field;)

/* Bytes written over a store's whole life, by kind (the TOTAL counters):
 * kept in every MANIFEST edit, so as of now for an open store and as of
 * the last flush or compaction for store_list_tables. */
struct store_totals {
	STORE_COUNTERS(STORE_TOTAL_FIELD_)
};
/* (log + flush + compaction + manifest) / user; 0 when nothing was written. */
double store_totals_write_amp(const struct store_totals *t);

/* Counters since this open, except `lifetime`. */
struct store_stats {
	STORE_COUNTERS(STORE_COUNTER_FIELD_)
	uint64_t level_files[STORE_MAX_LEVELS];
	uint64_t level_bytes[STORE_MAX_LEVELS];
	struct store_totals lifetime;  /* since the store was created */
};
#undef STORE_COUNTER_FIELD_
#undef STORE_TOTAL_FIELD_
void store_get_stats(struct store *st, struct store_stats *out);
/* Write amplification: (wal + flush + compaction + manifest) / user bytes. */
double store_stats_write_amp(const struct store_stats *s);

/* A store's copies (store_options.copies): how many, and each one's state. */
struct store_copy_info {
	const char *dir;        /* valid while the store is open */
	bool live;              /* false: dropped (written no more) */
	uint64_t healed;        /* files rewritten from another copy */
	uint64_t read_errors;   /* reads answered by another copy instead */
};
size_t store_copy_count(struct store *st);
/* 0, or -EINVAL for a copy past the count. */
int store_copy_info(struct store *st, size_t copy, struct store_copy_info *out);

/*
 * A new copy of the store in dir (an empty directory, made if missing),
 * while the store is in use: every file written from now on goes there
 * too; then a new commit log and MANIFEST are started and every table
 * is copied in; *copy is its number once it is whole (FORMAT.md
 * "Copies").  Until then it is never read.  Writers wait for the flush
 * only.  On failure the copy is given up (not written any more).
 */
int store_copy_add(struct store *st, const char *dir, size_t *copy);
/* Stop writing copy k (it is being removed): -EBUSY for the last live
 * one.  Its files stay; the caller removes them. */
int store_copy_remove(struct store *st, size_t copy);
/* Stop using copy k (its directory went, say): as a failed write would,
 * through copy_failed.  0, or err when it is the last live copy (kept). */
int store_copy_drop(struct store *st, size_t copy, int err, const char *why);

/*
 * A checkpoint (FORMAT.md "Checkpoints"): the store as it stands, into
 * dir (made if missing; -ENOTEMPTY unless empty), while in use: the
 * memtable flushed, the tables of the current version copied, a MANIFEST
 * naming them, CURRENT last.  store_open(dir) opens it as a store.
 */
struct store_checkpoint_info {
	uint64_t tables, bytes; /* copied */
	uint64_t sequence;      /* the last write it may hold */
};
int store_checkpoint(struct store *st, const char *dir, struct store_checkpoint_info *info);

/*
 * store_lockfile: flock path, shared or exclusive, without waiting
 * (lockfile.c).  The file is made mode 0600 if missing (a shared locker
 * opens an existing one read-only); one with group or other bits (an older
 * version's) is replaced by an owner-only one when taken exclusively, even
 * from locks of other users' when no process of root's or ours has it
 * open, so that no other user can hold it.  0 with *fd the locked descriptor (the lock
 * lasts until it is closed); -EWOULDBLOCK with *fd open, unlocked, for the
 * caller to read and close; else -errno with *fd -1.
 */
int store_lockfile(const char *path, bool shared, int *fd);

/* Copy the last error message into buf (empty if none). */
void store_errmsg(struct store *st, char *buf, size_t len);

/*
 * Offline tools (used by store-tool and fsck).  They open nothing for
 * writing.  report() receives one line per finding or dumped item.
 *
 * store_verify: read every file the MANIFEST names and every commit log,
 * checking every checksum; 0 if all is whole, -EUCLEAN if anything is not
 * (each problem reported, naming file and offset).
 */
typedef void (*store_report_fn)(void *ctx, const char *line);
int store_verify(const char *dir, const struct store_options *opt,
		 store_report_fn report, void *ctx);
/* what: "manifest", "tables", "keys", "logs". */
int store_dump(const char *dir, const struct store_options *opt,
	       const char *what, store_report_fn report, void *ctx);

/*
 * store_salvage (fsck -y): rewrite every table that fails its checks from
 * the entries that still read, and drop tables that do not open at all
 * (or are missing), in one MANIFEST edit; rewrite every damaged commit log
 * from its whole records.  Each range lost goes to lost() (tables: user
 * keys, from NULL: from the table's first key, to NULL: to its end; logs:
 * level -1, no keys, the byte offset); report() gets one line per file
 * mended and a summary.  Takes the store's LOCK (-EBUSY if in use).  A
 * damaged MANIFEST is not mended (-EUCLEAN).  0 when the store now
 * checks whole, else an errno.
 */
struct store_salvage_loss {
	uint64_t table;      /* NNNNNN of NNNNNN.sst, or of NNNNNN.log */
	int level;           /* -1: a commit log */
	uint64_t offset;     /* of the lost block in the table */
	const void *from;
	size_t from_len;
	const void *to;
	size_t to_len;
	const char *why;     /* names the file and offset */
};
typedef void (*store_loss_fn)(void *ctx, const struct store_salvage_loss *loss);
int store_salvage(const char *dir, const struct store_options *opt,
		  store_loss_fn lost, store_report_fn report, void *ctx);

/*
 * store_list_tables (lsmfs-inspect): every live table from the MANIFEST,
 * level by level (level 0 newest first, deeper levels by key), with their
 * user-key ranges, and the lifetime write totals as of the last edit.
 * Reads only; works beside a running store (the MANIFEST is appended to,
 * never rewritten in place).  Free with store_tables_free.
 */
struct store_table_info {
	int level;
	uint64_t number;      /* NNNNNN.sst */
	uint64_t size;        /* bytes */
	void *smallest;       /* user keys (malloc'd) */
	size_t smallest_len;
	void *largest;
	size_t largest_len;
};
int store_list_tables(const char *dir, const struct store_options *opt,
		      struct store_table_info **tables, size_t *n,
		      struct store_totals *totals);
void store_tables_free(struct store_table_info *tables, size_t n);

#endif
