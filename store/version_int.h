/*
 * version_int: what version_edit.c, version.c and compaction_pick.c share
 * and nobody else needs: the version set itself and file_meta helpers.
 * Locking as in version.h: every field of struct version_set is guarded by
 * the store mutex, except that the one caller of log_and_apply owns
 * `manifest` while it has dropped the mutex.
 */
#ifndef LSMFS_STORE_VERSION_INT_H
#define LSMFS_STORE_VERSION_INT_H

#include "version.h"
#include "wal.h"

struct version_set {
	struct store_env *env;
	char *dir;
	const struct store_options *opt;
	struct table_cache *tables;
	uint64_t *manifest_bytes;
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;

	uint64_t next_file;
	uint64_t manifest_number;
	uint64_t last_sequence;
	uint64_t log_number;
	/* The open MANIFEST; NULL: the next log_and_apply starts a new one. */
	struct wal_writer *manifest;
	/* A MANIFEST write failed since the last new MANIFEST took over: the
	 * failed edit may be on disk though not in memory (FORMAT.md "Full
	 * disk"). */
	bool manifest_in_doubt;

	struct version live;      /* sentinel of the live versions list */
	struct version *current;  /* one reference held by the set */
	/* Where the next size compaction of each level starts (internal
	 * key; empty: at the start of the level). */
	struct buf compact_pointer[NUM_LEVELS];
	/* Lifetime write totals: as of the last edit read or written, and as
	 * recovered at open (the base this session's counters add to). */
	bool has_totals;
	struct store_totals totals, base;
	void (*session_totals)(void *ctx, struct store_totals *out);
	void *totals_ctx;
};

/* A new file_meta with copies of the keys (refs 0), or NULL. */
struct file_meta *file_meta_new(uint64_t number, uint64_t size,
				const uint8_t *smallest, size_t slen,
				const uint8_t *largest, size_t llen);
void file_meta_free(struct file_meta *f);
/* true if a setter failed to allocate (the edit must not be applied). */
bool version_edit_poisoned(const struct version_edit *e);

/* Send one formatted line to the version set's log. */
void version_set_logf(struct version_set *vs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Target bytes of level >= 1. */
double version_max_bytes_for_level(const struct store_options *opt, int level);

#endif
