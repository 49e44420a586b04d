/*
 * version: the set of live tables per level (a version), the edits that
 * move from one version to the next, and the MANIFEST that logs those edits
 * (records in the wal.h format).  CURRENT names the live MANIFEST and is
 * replaced atomically (temp file, fsync, rename, fsync dir).
 * FORMAT.md "MANIFEST".
 *
 * Locking: the version set is guarded by the store mutex, passed in as mu;
 * version_set_log_and_apply() drops it while it writes and syncs the
 * MANIFEST (only one caller at a time: the store's background thread, or
 * open).  Versions are reference counted; a file stays on disk while any
 * version that lists it is alive.
 */
#ifndef LSMFS_STORE_VERSION_H
#define LSMFS_STORE_VERSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coding.h"
#include "env.h"
#include "iter.h"
#include "sst.h"
#include "store.h"

#define NUM_LEVELS STORE_MAX_LEVELS

struct file_meta {
	uint64_t number;
	uint64_t size;
	struct buf smallest; /* internal key */
	struct buf largest;  /* internal key */
	int refs;            /* versions listing it (under mu) */
	bool being_compacted;
};

struct version {
	struct version_set *vset;
	struct version *prev, *next; /* live versions list (under mu) */
	int refs;
	struct file_meta **files[NUM_LEVELS]; /* L0 newest first; others by key */
	size_t nfiles[NUM_LEVELS];
	/* Filled by version_set when installed: best level to compact. */
	double compaction_score;
	int compaction_level;
};

struct version_edit {
	bool has_totals;
	struct store_totals totals; /* FORMAT.md "Version edit record", tag 7 */
	bool has_log_number;
	uint64_t log_number;
	bool has_next_file;
	uint64_t next_file_number;
	bool has_last_sequence;
	uint64_t last_sequence;
	/* Per-level round-robin compaction pointers (internal keys). */
	struct {
		int level;
		struct buf key;
	} *compact_pointers;
	size_t ncompact_pointers;
	struct {
		int level;
		uint64_t number;
	} *deleted;
	size_t ndeleted;
	struct {
		int level;
		struct file_meta *meta; /* owned by the edit until applied */
	} *added;
	size_t nadded;
};

void version_edit_init(struct version_edit *e);
void version_edit_free(struct version_edit *e);
void version_edit_set_log_number(struct version_edit *e, uint64_t n);
void version_edit_set_next_file(struct version_edit *e, uint64_t n);
void version_edit_set_last_sequence(struct version_edit *e, uint64_t s);
void version_edit_set_compact_pointer(struct version_edit *e, int level,
				      const uint8_t *ikey, size_t len);
void version_edit_delete_file(struct version_edit *e, int level,
			      uint64_t number);
/* Copies the keys. */
int version_edit_add_file(struct version_edit *e, int level, uint64_t number,
			  uint64_t size, const uint8_t *smallest, size_t slen,
			  const uint8_t *largest, size_t llen);
void version_edit_encode(const struct version_edit *e, struct buf *out);
/* -EUCLEAN on a malformed record (nothing leaks). */
int version_edit_decode(struct version_edit *e, const uint8_t *p, size_t len);

struct version_set;

struct version_set_options {
	struct store_env *env;
	const char *dir;
	const struct store_options *opt; /* level sizes, triggers */
	struct table_cache *tables;
	/* Bytes appended to the MANIFEST are added here (under mu). */
	uint64_t *manifest_bytes;
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
	/* Bytes written since open, by kind (mu held); NULL: edits carry no
	 * totals (offline tools). */
	void (*session_totals)(void *ctx, struct store_totals *out);
	void *totals_ctx;
};
struct version_set *version_set_new(const struct version_set_options *o);
void version_set_free(struct version_set *vs);

/*
 * Read CURRENT and the MANIFEST it names and build the current version.
 * -ENOENT if there is no CURRENT; -EUCLEAN (message naming file and offset
 * through o->log) if they are damaged.
 */
int version_set_recover(struct version_set *vs);
/* For a new store: an empty version; the first log_and_apply writes a
 * MANIFEST and CURRENT. */
int version_set_create(struct version_set *vs);

/*
 * Fill in the edit's next_file and last_sequence, write it to the MANIFEST
 * (starting a new MANIFEST with a full snapshot first if none is open),
 * sync it, point CURRENT at it if new, and install the resulting version.
 * mu must be held; it is dropped during I/O.  On error the current version
 * is unchanged and the MANIFEST is treated as unusable (a new one is
 * started next time).
 */
int version_set_log_and_apply(struct version_set *vs, struct version_edit *e,
			      pthread_mutex_t *mu);

/* Start a new MANIFEST (a snapshot of the current state) and point
 * CURRENT at it: every directory the env writes then holds the whole
 * MANIFEST (a copy joining, db_copies.c).  mu as for log_and_apply. */
int version_set_new_manifest(struct version_set *vs, pthread_mutex_t *mu);
/* Under the store's mu: the whole state as one edit (what a new MANIFEST
 * begins with) into out, and the current version, referenced, into
 * *pinned (its tables stay until version_unref). */
int version_set_snapshot(struct version_set *vs, struct buf *out, struct version **pinned);
struct version *version_set_current(struct version_set *vs);
/* Lifetime totals as of the last edit recovered or written (zeros for a
 * MANIFEST that never recorded any). */
void version_set_totals(const struct version_set *vs, struct store_totals *out);
/* The totals recovered at open: add this session's counters for now. */
void version_set_base_totals(const struct version_set *vs, struct store_totals *out);
uint64_t version_set_new_file_number(struct version_set *vs);
/* Give back a number that was not used (a failed flush). */
void version_set_reuse_file_number(struct version_set *vs, uint64_t n);
uint64_t version_set_last_sequence(const struct version_set *vs);
void version_set_set_last_sequence(struct version_set *vs, uint64_t s);
uint64_t version_set_log_number(const struct version_set *vs);
uint64_t version_set_manifest_number(const struct version_set *vs);
/* true after a failed MANIFEST write, until a new MANIFEST (a snapshot of
 * the state in memory) is in place: the failed edit may be on disk, naming
 * tables no version in memory holds, so no file may be deleted. */
bool version_set_manifest_in_doubt(const struct version_set *vs);
/* Raise next_file_number above n (numbers seen in the directory). */
void version_set_mark_file_number_used(struct version_set *vs, uint64_t n);
/* Add every file number referenced by any live version to *nums
 * (malloc'd/realloc'd array; *n updated). */
int version_set_live_files(struct version_set *vs, uint64_t **nums, size_t *n);

void version_ref(struct version *v);
/* mu must be held. */
void version_unref(struct version *v);

/* Files of level overlapping the user-key range [begin, end] (NULL: open);
 * for level 0 the range is widened to a closure as LevelDB does.  *out is a
 * malloc'd array. */
int version_overlapping_files(struct version *v, int level,
			      const uint8_t *begin, size_t blen,
			      const uint8_t *end, size_t elen,
			      struct file_meta ***out, size_t *n);
/* In a sorted level (>= 1), the index of the first file whose largest key
 * is >= ikey (nfiles if none). */
size_t version_find_file(struct version *v, int level, const uint8_t *ikey,
			 size_t len);

/*
 * Iterators for reads: append to *its one iterator per L0 file and one
 * concatenating iterator per non-empty deeper level (opening tables lazily
 * through the table cache).
 */
int version_add_iterators(struct version *v, bool fill_cache,
			  struct iter ***its, size_t *n);

/* ---- compaction picking ---- */

struct compaction {
	int level;                 /* inputs[0] level; outputs go to level + 1 */
	struct version *input_version; /* referenced */
	struct file_meta **inputs[2];
	size_t ninputs[2];
	/* Files of level + 2 overlapping the output, to bound overlap. */
	struct file_meta **grandparents;
	size_t ngrandparents;
	uint64_t max_output_file_size;
	struct version_edit edit; /* inputs deletion is added by the caller */
	/* Private state for should_stop_before / is_base_level_for_key. */
	size_t grandparent_index;
	bool seen_key;
	uint64_t overlapped_bytes;
	size_t level_ptrs[NUM_LEVELS];
};

/* The compaction the current version needs most, or NULL.  Marks inputs
 * being_compacted.  mu held. */
struct compaction *version_set_pick_compaction(struct version_set *vs);
/* A manual compaction of level over [begin, end] (NULL ends open), or NULL
 * if nothing overlaps. */
struct compaction *version_set_compact_range(struct version_set *vs, int level,
					     const uint8_t *begin, size_t blen,
					     const uint8_t *end, size_t elen);
/* One input file, nothing to merge with, little grandparent overlap: the
 * file can be moved down by an edit alone. */
bool compaction_is_trivial_move(const struct compaction *c);
/* Record deletion of every input in c->edit. */
void compaction_add_input_deletions(struct compaction *c);
/* true if no level deeper than the output can hold user key ukey (a
 * tombstone for it can be dropped).  Calls must come in key order. */
bool compaction_is_base_level_for_key(struct compaction *c, const uint8_t *ukey,
				      size_t ulen);
/* true if the current output should be closed before ikey (too much
 * grandparent overlap).  Calls must come in key order. */
bool compaction_should_stop_before(struct compaction *c, const uint8_t *ikey,
				   size_t len);
/* Clear being_compacted, drop the version reference, free.  mu held. */
void compaction_free(struct compaction *c);

/* true if the current version needs a compaction. */
bool version_set_needs_compaction(struct version_set *vs);
/* Bytes and files of a level in the current version. */
uint64_t version_level_bytes(struct version *v, int level);

#endif
