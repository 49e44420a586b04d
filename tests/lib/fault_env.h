/*
 * fault_env: an in-memory store_env for tests, with fault injection and a
 * power-cut model.
 *
 * Model: every file has its current bytes and its durable bytes; every
 * directory has its current entries and its durable entries.  sync() of a
 * file makes its current bytes durable; sync_dir() makes the directory's
 * current entries (creations, renames, unlinks) durable.  A power cut throws
 * away everything not durable: each directory's entries become its durable
 * entries, and each file's bytes its durable bytes.  Files that are then no
 * longer named anywhere are freed.
 *
 * Faults: after a countdown of mutating operations (open_writable, append,
 * flush, sync, rename, unlink, truncate, mkdir, sync_dir), the chosen fault
 * strikes.  Thread safe (one mutex).
 */
#ifndef LSMFS_TESTS_FAULT_ENV_H
#define LSMFS_TESTS_FAULT_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "env.h"

struct fault_env;

enum fault_kind {
	FAULT_NONE = 0,
	FAULT_EIO_WRITE,   /* appends/flushes fail with -EIO from then on */
	FAULT_ENOSPC,      /* appends fail with -ENOSPC from then on (a short
			    * write first: part of the data lands) */
	FAULT_EIO_SYNC,    /* sync/sync_dir fail with -EIO from then on */
	FAULT_POWER_CUT,   /* the machine dies: this op and every later one
			    * fail with -EIO until fault_env_power_cut() */
};

struct fault_env *fault_env_new(void);
void fault_env_free(struct fault_env *fe);
/* The env to put in store_options.env. */
struct store_env *fault_env_env(struct fault_env *fe);

/* Arm: after `after` more mutating ops succeed, `kind` strikes.  A
 * FAULT_NONE arm disarms.  Persistent faults stay until fault_env_clear(). */
void fault_env_arm(struct fault_env *fe, enum fault_kind kind, uint64_t after);
/* Stop failing (after a fault), without changing any file. */
void fault_env_clear(struct fault_env *fe);
/* true if an armed fault has struck. */
bool fault_env_struck(struct fault_env *fe);
/* Mutating ops performed so far (to choose cut points). */
uint64_t fault_env_ops(struct fault_env *fe);

/* Simulate the power cut now: drop everything not durable, then clear
 * faults so the store can be reopened.  Open handles of the dead store
 * keep failing with -EIO (they belong to the dead process). */
void fault_env_power_cut(struct fault_env *fe);
/* The same, but first each directory change not yet synced (a name made,
 * repointed by a rename, or removed) reaches the disk or not, at random
 * (seed): a filesystem may write its directory updates in any order, so a
 * rename can be durable while a creation before it is not.  And each file
 * keeps, or not, a random prefix of the bytes appended to it since its last
 * sync (write-back happens file by file, in no order). */
void fault_env_power_cut_any_order(struct fault_env *fe, uint64_t seed);

/* A disk of `bytes` (0: unlimited): an append or preallocate that would
 * make the files named in the directories hold more fails with -ENOSPC
 * (an append writes what fits first), until files shrink or go. */
void fault_env_set_capacity(struct fault_env *fe, uint64_t bytes);
/* Bytes the named files hold now, and appends refused for capacity. */
uint64_t fault_env_used(struct fault_env *fe);
uint64_t fault_env_nospace(struct fault_env *fe);

/* Test helpers working on current (not durable) state: */
int fault_env_corrupt(struct fault_env *fe, const char *path, uint64_t off,
		      uint8_t xor_mask);
int fault_env_file_size(struct fault_env *fe, const char *path, uint64_t *size);

#endif
