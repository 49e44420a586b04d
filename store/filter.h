/*
 * filter: the filter policies of SSTables.  FILTERS.md (the policies and
 * their math), FORMAT.md "Filter block" (the bytes).
 *
 * A table's filter answers "may this table hold user key k?" from one
 * 64-bit hash of k (filter_hash), which the table builder computes once per
 * distinct user key.  A policy builds a filter as one or more **parts**,
 * each its own checksummed block in the table, described by a small
 * descriptor block (the policy, its parameters, the parts' handles).  A
 * reader may hold any subset of the parts in memory: a key is absent when
 * any loaded part says so, and "maybe" when no part is loaded.  So a part
 * that is damaged or not loaded costs reads, never an answer.
 *
 * Policies: STORE_FILTER_BLOOM (one Bloom filter, the default), STORE_FILTER_ELASTIC
 * (ElasticBF: several small Bloom units with independent probes, loaded
 * and evicted by hotness), STORE_FILTER_QUOTIENT (a quotient filter: mergeable,
 * resizable from its fingerprints).
 *
 * No locking: pure functions over caller-owned memory.
 */
#ifndef LSMFS_STORE_FILTER_H
#define LSMFS_STORE_FILTER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "coding.h"
#include "store.h"

/* The policies and their parameters (struct store_filter) are declared in
 * store.h, with store_filter_parse/format/check. */
#define FILTER_MAX_PARTS STORE_FILTER_MAX_UNITS

/* Parts a table of this policy has. */
unsigned filter_parts(const struct store_filter *p);
/* Bytes the parts of a filter over n keys take, in all. */
uint64_t filter_size_estimate(const struct store_filter *p, uint64_t n);

/* The hash every policy works from: XXH3-64 of the user key, seed 0. */
uint64_t filter_hash(const void *key, size_t len);

/* Append part `part` of the filter over the n hashes to out (out->oom on
 * allocation failure).  hashes may repeat only for repeated keys. */
void filter_build_part(const struct store_filter *p, const uint64_t *hashes,
		       size_t n, unsigned part, struct buf *out);
/* May the set hold the key of hash h, by loaded part `part`?  A part whose
 * bytes do not parse answers true. */
bool filter_part_may_contain(const struct store_filter *p, unsigned part,
			     const uint8_t *bytes, size_t len, uint64_t h);
/* NULL when the part's bytes parse, else why not (for reports). */
const char *filter_part_problem(const struct store_filter *p, unsigned part,
				const uint8_t *bytes, size_t len);

/*
 * The descriptor block's payload (FORMAT.md "Filter block"): the policy,
 * its parameters, the number of keys and the parts' handles.
 */
struct filter_desc {
	struct store_filter params;
	uint64_t keys;
	unsigned nparts;
	struct block_handle parts[FILTER_MAX_PARTS];
};
void filter_desc_encode(const struct filter_desc *d, struct buf *out);
/* NULL, or why the bytes are not a descriptor (checked: policy known,
 * parameters in range, nparts = filter_parts(), the parts consecutive
 * blocks ending at `before`, the descriptor's offset). */
const char *filter_desc_decode(const uint8_t *p, size_t len, uint64_t before,
			       struct filter_desc *d);

/*
 * The filter of one open table (filter.c): its descriptor and the parts
 * held in memory.  A table of format 1 has one Bloom part and no
 * descriptor (desc.params.bits is then 0: not recorded).
 */
struct table_filter {
	bool present;   /* a filter the reader understood */
	struct filter_desc desc;
	uint32_t loaded; /* bit i: part i in memory */
	void *mem[FILTER_MAX_PARTS];
	const uint8_t *data[FILTER_MAX_PARTS];
	size_t len[FILTER_MAX_PARTS];
	uint64_t bytes; /* of the parts in memory */
	/* Managed by a filter_cache (filter_cache.c) once attached. */
	bool attached, managed, loading, detaching;
	uint32_t bad; /* bit i: part i failed to load (reported) */
	pthread_rwlock_t lock; /* lookups read, the cache's thread writes */
	atomic_uint_least64_t accesses; /* since the last heat fold */
	double heat;
	struct table_filter *next, *prev; /* the cache's queue */
	int (*loader)(void *ctx, unsigned part, void **mem, const uint8_t **data,
		      size_t *len);
	void *loader_ctx;
};
/* May the table hold the key of hash h?  Any loaded part saying no is
 * "no"; with no part loaded, "maybe". */
bool table_filter_may_contain(const struct table_filter *f, uint64_t h);
/* Keep part i's bytes (mem: the allocation to free; data/len inside it). */
void table_filter_keep(struct table_filter *f, unsigned i, void *mem,
		       const uint8_t *data, size_t len);
void table_filter_free(struct table_filter *f);

/*
 * The store-wide filter memory (filter_cache.c; FILTERS.md "Filter
 * memory"): a byte budget over the parts in memory of every open table
 * (0: no bound, every part loaded), and ElasticBF's hotness-driven
 * loading and dropping of parts in a background thread.
 */
struct filter_cache;
#define FILTER_VICTIMS_MAX 64
struct filter_cache_stats {
	uint64_t bytes, budget;
	uint64_t loads, drops, load_errors;
	uint64_t tables_by_parts[FILTER_MAX_PARTS + 1];
};
int filter_cache_new(uint64_t budget, struct filter_cache **out);
/* REQUIRES: every table detached. */
void filter_cache_free(struct filter_cache *fc);
/* Manage f (its descriptor read): loader(ctx, i, ...) reads part i, 0 or
 * a negative errno (reported by the loader).  Loads what the budget
 * allows now (no budget: every part). */
void filter_cache_attach(struct filter_cache *fc, struct table_filter *f,
			 int (*loader)(void *ctx, unsigned part, void **mem,
				       const uint8_t **data, size_t *len),
			 void *ctx);
/* Stop managing f (waits for a load of f under way); before its parts
 * are freed. */
void filter_cache_detach(struct filter_cache *fc, struct table_filter *f);
/* May the table hold the key of hash h?  Counts the access.  *consulted:
 * some part was in memory to ask. */
bool filter_cache_may_contain(struct filter_cache *fc, struct table_filter *f, uint64_t h,
			      bool *consulted);
void filter_cache_stats(struct filter_cache *fc, struct filter_cache_stats *s);

/* ---- Bloom filters (bloom.c): FILTERS.md "Bloom" ---- */

/* The standard filter over n keys (appended to out), bits_per_key >= 1
 * (< 1 is taken as 1); from precomputed hashes; probes. */
void bloom_build(struct buf *out, const uint8_t *const *keys,
		 const size_t *lens, size_t n, int bits_per_key);
void bloom_build_hashes(struct buf *out, const uint64_t *hashes, size_t n,
			int bits_per_key);
uint64_t bloom_hash(const void *key, size_t len);
/* true if key may be in the set; a malformed filter answers true. */
bool bloom_may_contain(const uint8_t *filter, size_t flen, const void *key,
		       size_t klen);
bool bloom_may_contain_hash(const uint8_t *filter, size_t flen, uint64_t h);
/* Append a Bloom filter over the n hashes with bits_per_key to out.
 * seed 0 is the standard filter (FORMAT.md "Bloom filter bytes"); an
 * ElasticBF unit uses its unit number as seed. */
void bloom_build_seeded(struct buf *out, const uint64_t *hashes, size_t n,
			unsigned bits_per_key, unsigned seed);
bool bloom_test_seeded(const uint8_t *filter, size_t flen, uint64_t h,
		       unsigned seed);
/* NULL when filter is a well-formed Bloom filter, else why not. */
const char *bloom_problem(const uint8_t *filter, size_t flen);
/* The false-positive rate of a Bloom filter with this many bits per key
 * and its probe count (FILTERS.md). */
double bloom_fpr(double bits_per_key);


/* ---- quotient filters (quotient.c): FILTERS.md "Quotient filter" ---- */

/* A table's most fingerprints per slot: 2^q >= n / QF_MAX_LOAD. */
#define QF_MAX_LOAD 0.75

/* A quotient filter of 2^q canonical slots (+ overflow) of r-bit
 * remainders: fingerprints are p = q + r bits. */
struct qf {
	unsigned q, r;
	uint64_t slots;   /* 2^q + overflow slots */
	uint64_t entries; /* distinct fingerprints stored */
	uint8_t *bits;    /* slots packed, (3 + r) bits each, little-endian */
	size_t bytes;
	bool owned;       /* bits is ours to free (not a view) */
};
struct qf_iter {
	const struct qf *f;
	uint64_t fq, slot;
	bool started;
};

/* An empty filter with extra_slots overflow slots. */
int qf_init(struct qf *f, unsigned q, unsigned r, uint64_t extra_slots);
void qf_free(struct qf *f);
/* The p-bit fingerprint of hash h (its top p bits). */
uint64_t qf_fingerprint(unsigned p, uint64_t h);
/* Insert fp (a set: stored once); -ENOSPC when the overflow is full. */
int qf_insert(struct qf *f, uint64_t fp);
/* Remove fp; -ENOENT when absent. */
int qf_remove(struct qf *f, uint64_t fp);
bool qf_contains(const struct qf *f, uint64_t fp);
/* Every fingerprint, in increasing order. */
void qf_iter_init(struct qf_iter *it, const struct qf *f);
bool qf_iter_next(struct qf_iter *it, uint64_t *fp);
/* The filter of n hashes with r remainder bits (q from n and
 * QF_MAX_LOAD), built from its sorted fingerprints in one pass. */
int qf_build(struct qf *f, const uint64_t *hashes, size_t n, unsigned r);
/* The union of a and b (equal q + r), sized for both: from their
 * fingerprints alone, in one merge pass. */
int qf_merge(const struct qf *a, const struct qf *b, struct qf *out);
/* The same fingerprints with q quotient bits (q + 1: doubled). */
int qf_resize(const struct qf *f, unsigned q, struct qf *out);
/* Serialized (FORMAT.md "Quotient filter bytes"), and a read-only view
 * of such bytes (-EUCLEAN when they do not parse). */
void qf_encode(const struct qf *f, struct buf *out);
int qf_view(struct qf *f, const uint8_t *p, size_t len);

/* The policy's part: build, test, check, size. */
void quotient_build(struct buf *out, const uint64_t *hashes, size_t n, unsigned r);
bool quotient_may_contain(const uint8_t *p, size_t len, uint64_t h);
const char *quotient_problem(const uint8_t *p, size_t len);
uint64_t quotient_size_estimate(unsigned r, uint64_t n);

#endif
