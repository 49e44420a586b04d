/*
 * fsck.h: fsck.lsmfs internals.  The checker loads the whole metadata store
 * into an in-memory model (inodes, entries, chunks, orphans, section map),
 * then runs its passes over the model and the disks.  Every finding goes
 * through problem_fix() with a stable code and the row of the problem
 * table that code has (problem.h, problem.c), as in e2fsck.
 */
#ifndef LSMFS_FSCK_H
#define LSMFS_FSCK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs.h"
#include "problem.h"
#include "schema.h"
#include "store.h"

/* Exit codes, as e2fsck's. */
#define FSCK_EXIT_OK 0
#define FSCK_EXIT_FIXED 1
#define FSCK_EXIT_UNCORRECTED 4
#define FSCK_EXIT_OPERATIONAL 8
#define FSCK_EXIT_USAGE 16
#define FSCK_EXIT_CANCELLED 32

enum fsck_mode { FSCK_MODE_NO, FSCK_MODE_YES, FSCK_MODE_PREEN, FSCK_MODE_ASK };

/* One inode of the model. */
struct fsck_inode {
	uint64_t ino;
	struct inode_rec rec;
	bool rec_ok;            /* the record decoded */
	bool rec_bad;           /* a record is there but does not decode */
	bool orphan;            /* an O key names it */
	bool flux;              /* a G key names it: chunks changed at a crash */
	bool reached;           /* found by the walk from the root */
	uint32_t entries;       /* directory entries naming it */
	uint32_t subdirs;       /* directories: entries that are directories */
	uint64_t entry_parent;  /* directories: the directory whose entry names it */
	int64_t inline_len;     /* F value length, -1 when absent */
	uint64_t nchunks;       /* C records */
	bool xattrs;            /* X keys exist */
};

struct fsck_entry {
	uint64_t parent, ino, hash;
	uint8_t type;
	char *name;
};

struct fsck_ino_ref {
	uint64_t ino;
	size_t entry; /* index in entries */
};

struct fsck_chunk {
	uint64_t ino, chunk;
	uint64_t durable; /* the record's durable length; 0: not known */
	bool lost;        /* lost with a disk (lsmfs-disk remove --lost): no file, by design */
	/* The section its file belongs in: the one its record names, else
	 * chunk_section's (fs/SCHEMA.md "Chunk checksums", "Sharding"). */
	uint32_t section;
	/* A record naming a section past the count (LSMFS-0516): the number
	 * it names; section is then chunk_section's.  CHUNK_HASHED: none. */
	uint32_t bad_section;
	/* Its copies (SCHEMA.md "Copies"): copy i's file is in
	 * section_of_copy(section, i), those whose bit is set in stale lack
	 * data (their files, if any, are not read). */
	uint8_t copies, stale;
	/* A record giving copies its section cannot have (no partner,
	 * LSMFS-051A): the number it gives; copies is 1 then.  0: none. */
	uint8_t bad_copies;
};

/* One copy of a chunk as pass 5 finds it (copies.c). */
struct fsck_copy {
	unsigned index;          /* copy index */
	uint32_t section, disk;  /* disk: the section map's, UINT32_MAX when none */
	bool here;               /* its disk is present (not missing, --degraded) */
	bool stale;              /* the record says it lacks data */
	bool exists;             /* its file is there */
	bool good;               /* not stale, there, holding the record's durable length */
	bool read;               /* to be read by a scrub (scrub.c) */
	bool failed;             /* the scrub could not read it whole */
	uint64_t size;
	char file[LSMFS_META_PATH_MAX + 160];
};

struct store_options;
struct fsck;
/* The store to open: the backup's, or the disks' copies (so set). */
const char *fsck_store_dir(struct fsck *f, struct store_options *so, const char **dirs);

struct fsck {
	/* options */
	enum fsck_mode mode;
	bool force, verbose;
	bool degraded;          /* --degraded: disks missing (ds->missing) are not checked */
	bool scrub;             /* --scrub: read every chunk file whole (scrub.c) */
	bool yes_all;           /* answered (a)ll at a question */
	int progress_fd;        /* -C FD, -1 when not given */
	const char *spec;
	/* --backup DIR (with -n): the backup's store is checked against the
	 * disks instead of theirs (fs/SCHEMA.md "Backups"); else NULL */
	const char *backup_store;
	/* the filesystem */
	struct lsmfs_diskset *ds;
	struct store *st;
	struct fs_info info;
	bool info_ok;
	uint64_t next_ino;
	bool mounted_mark;      /* `M mounted`: mounted read-write, or a crash */
	bool has_move;          /* `M move`: a section move under way (or cut short) */
	struct section_move move;
	uint32_t *section_disk; /* UINT32_MAX: no entry */
	char disk_why[512];     /* a clash: why the disk at clash_spare is that disk */
	/* the model */
	struct fsck_inode *inodes; /* open addressing on ino; ino 0 = empty */
	size_t icap, icount;
	struct fsck_entry *entries;
	size_t nentries, capentries; /* sorted by parent (key order) */
	struct fsck_ino_ref *by_ino; /* entries by child inode, built on demand */
	struct fsck_chunk *chunks;
	size_t nchunks, capchunks;
	/* latches (problem.h PR_LATCH): this pass's latched kinds, and the
	 * latch of the last problem when it was not printed (the failure
	 * of its repair is counted there), else NULL */
	struct problem_latch latches[PROBLEM_LATCHES];
	struct problem_latch *hidden_last;
	/* results */
	unsigned problems, fixed, left;
	uint64_t files, dirs, others, bytes;
	uint64_t *chunks_per_disk;
	uint64_t lost_chunks, lost_files; /* records marked lost with their disk (pass 5) */
	uint64_t scrub_bytes, scrub_files, scrub_ns;
	uint64_t scrub_summed, scrub_bad; /* files with checksums; blocks failing them */
	/* scrub errors (a block failing its sum in a copy, a read error):
	 * found, and of them rewritten from a good copy */
	uint64_t scrub_errors, scrub_repaired;
	uint64_t *scrub_left_inos; /* files with scrub errors left, in inode order */
	size_t scrub_nleft, scrub_capleft;
	uint8_t *scrub_buf;       /* SCRUB_READ bytes per copy */
	uint64_t stale_copies, stale_rebuilt; /* copies marked stale (pass 5), and rebuilt */
	uint32_t *pair_one_disk;  /* by section pair: two-copy chunks with both on one disk */
	volatile sig_atomic_t *cancel;
};

/* fsck.c */
void fsck_progress(struct fsck *f, int pass, uint64_t cur, uint64_t max);
/* Open the store copy in dir on its own, read-only (its tables and commit
 * logs, recovered as a read-only open does): *st, and the last write it
 * holds in *seq (pass1.c).  0 or the open's error. */
struct store;
int fsck_copy_open(const char *dir, struct store **st, uint64_t *seq);
/* --use-copy N (choose.c): say what the other copies of the store hold;
 * with -y make copy N the one current copy.  0 when done, 1 when only
 * said (not -y), -errno on failure (said on stderr). */
int fsck_choose_copy(struct fsck *f, uint32_t n);
bool fsck_cancelled(const struct fsck *f);

/* repair.c: store edits, each one synced batch. */
int fsck_put_inode(struct fsck *f, const struct fsck_inode *in);
int fsck_del_key(struct fsck *f, const uint8_t *k, size_t kl);
int fsck_put_entry(struct fsck *f, uint64_t parent, const char *name, uint64_t ino,
		   uint8_t type);
int fsck_del_entry(struct fsck *f, const struct fsck_entry *e);
/* Move an entry stored under a wrong hash to its own key (one batch). */
int fsck_rehash_entry(struct fsck *f, struct fsck_entry *e);
/* Cut an inline file's data to its size. */
int fsck_trim_inline(struct fsck *f, uint64_t ino, uint64_t size);
/* Rewrite `M fs` from disk 0's superblock (the superblocks agree: the disk
 * set was opened), and the model's copy with it. */
int fsck_put_info(struct fsck *f);
/* Rewrite disk d's record: its UUID from the superblocks, its path now. */
int fsck_put_disk_record(struct fsck *f, uint32_t disk);
/* Map section to disk, in the store and the model. */
int fsck_put_section(struct fsck *f, uint32_t section, uint32_t disk);
/* Remove an inode whole: its chunk files, then in one batch its record,
 * inline data, chunk records, xattrs and orphan mark (as the daemon
 * reclaims one).  The model forgets it. */
int fsck_clear_inode(struct fsck *f, struct fsck_inode *in);
/* Delete an inode's inline data and/or chunk records (not the files). */
int fsck_drop_data(struct fsck *f, struct fsck_inode *in, bool inline_data, bool chunks);
/* Move an inline file's bytes to chunk files (durable first), then switch
 * the record over in one batch. */
int fsck_inline_to_chunks(struct fsck *f, struct fsck_inode *in);
/* Set the inode counter `M next_ino`. */
int fsck_put_next_ino(struct fsck *f, uint64_t next);
/* Rewrite chunk (ino, chunk)'s record with durable length len (the
 * section it names kept). */
int fsck_put_chunk_len(struct fsck *f, uint64_t ino, uint64_t chunk, uint64_t len);
/* Rewrite chunk (ino, chunk)'s record naming section, its length, flags,
 * copies and sums as they were. */
int fsck_put_chunk_section(struct fsck *f, uint64_t ino, uint64_t chunk, uint32_t section);
/* Rewrite chunk (ino, chunk)'s record at place (section, copies, stale),
 * its length, flags and sums as they were. */
int fsck_put_chunk_place(struct fsck *f, uint64_t ino, uint64_t chunk,
			 const struct chunk_place *place);

/* scrub.c: read the copies of chunk c marked read (cp[0..n), each its
 * file whole), reporting read errors (LSMFS-050F) and each block that
 * fails its sum in a copy: rewritten from a copy where it is good
 * (LSMFS-051B), or left when no copy holds it good (LSMFS-0515).  A copy
 * that could not be read whole is marked failed.  Then the figures, once. */
void fsck_scrub_copies(struct fsck *f, const struct fsck_chunk *c, struct fsck_copy *cp,
		       unsigned n);
void fsck_scrub_report(struct fsck *f);

/* copies.c: a chunk's copies (SCHEMA.md "Copies").  The index of the copy
 * of c whose file belongs in section s, or -1. */
int fsck_copy_in(const struct fsck *f, const struct fsck_chunk *c, uint32_t s);
/* Records giving copies their section cannot have (LSMFS-051A): before
 * pass 5 walks the disks. */
void fsck_check_copy_records(struct fsck *f);
/* Chunk c's record against its copies' files (missing, short, too long,
 * stale; with --scrub read and verified), each repaired as -y or -p says;
 * *last_lost: the inode of the last chunk counted lost. */
void fsck_check_chunk(struct fsck *f, struct fsck_chunk *c, uint64_t *last_lost);
/* After every chunk: section pairs holding two-copy chunks on one disk
 * (LSMFS-0519). */
void fsck_check_copy_disks(struct fsck *f);
/* Remove every copy's file of chunk c (those not there are no error). */
int fsck_unlink_chunk(struct fsck *f, const struct fsck_chunk *c);
/* Copy src to a new file dst and make it durable (the directory not). */
int fsck_copy_file(const char *src, const char *dst);

/* load.c: open the store (read-only with -n) and build the model. */
int fsck_load(struct fsck *f);
void fsck_unload(struct fsck *f);
struct fsck_inode *fsck_inode(struct fsck *f, uint64_t ino);
/* The model's inode ino, added (empty, rec_ok false) if absent; NULL only
 * when out of memory.  Adding may move every other inode of the model:
 * pointers taken before are stale. */
struct fsck_inode *fsck_inode_add(struct fsck *f, uint64_t ino);
/* The first entry of directory parent (entries are sorted by parent), and
 * whether it has any. */
size_t fsck_first_child(const struct fsck *f, uint64_t parent);
/* A path of ino from the root through the model's entries ("/a/b"), in
 * out[cap] (the result points into out), or words saying why there is
 * none: for messages. */
const char *fsck_path_of(struct fsck *f, uint64_t ino, char *out, size_t cap);
/* Entries were reordered or dropped: forget the index by inode. */
void fsck_entries_changed(struct fsck *f);
bool fsck_has_children(const struct fsck *f, uint64_t dir);
/* The DT_* type every entry naming ino agrees on; 0 if none or they
 * disagree.  O(log n) after the first call builds an index; entries must
 * not be added after that. */
uint8_t fsck_entries_type(struct fsck *f, uint64_t ino);
/* Chunks of the model, sorted by (ino, chunk) once loaded. */
int fsck_cmp_chunk(const void *a, const void *b);
bool fsck_has_chunk(const struct fsck *f, uint64_t ino, uint64_t chunk);
/* The model's chunk (ino, chunk), or NULL. */
struct fsck_chunk *fsck_find_chunk(const struct fsck *f, uint64_t ino, uint64_t chunk);
/* Add a chunk whose file is in section (kept sorted); drop one chunk, or
 * every chunk of ino (and the inode's count with them). */
int fsck_model_add_chunk(struct fsck *f, uint64_t ino, uint64_t chunk, uint32_t section);
void fsck_model_drop_chunk(struct fsck *f, uint64_t ino, uint64_t chunk);
void fsck_model_drop_chunks(struct fsck *f, uint64_t ino);
/* A store key in words ("the record of inode 12", "entry 'a' in
 * directory 1"); k NULL: an open end of a range. */
void fsck_key_describe(const uint8_t *k, size_t kl, char *out, size_t cap);
/* The path of directory entry e, "/a/b/c", or "<ino N>/name" where the
 * parents are not reachable; into out. */
void fsck_entry_path(struct fsck *f, const struct fsck_entry *e, char *out, size_t cap);

/* pass5.c: the path of chunk (ino, chunk)'s file in section (the model's
 * fsck_chunk.section for a chunk that has a record) on the disk the
 * section map gives it; -ENOENT when that section has no disk here. */
int fsck_chunk_file(const struct fsck *f, uint64_t ino, uint64_t chunk, uint32_t section,
		    char *out, size_t cap);
/* pass2.c: "regular file", "directory", ... for messages. */
const char *fsck_type_name(uint32_t mode);

/* superblocks.c: which disk is which when two carry the same superblock
 * (diskset clash): decided from the disks and a read-only look at the store
 * after pass 1 and before fsck_load, the paths put in order; -EUCLEAN
 * (reported) when nothing decides it.  Pass 5 then rewrites the
 * superblocks that are damaged or another disk's. */
int fsck_identify_disks(struct fsck *f);
void fsck_check_superblocks(struct fsck *f);

/* pass1.c .. pass5.c, one file each */
int fsck_pass1_store(struct fsck *f);
void fsck_pass2_inodes(struct fsck *f);
void fsck_pass3_dirs(struct fsck *f);
void fsck_pass4_links(struct fsck *f);
void fsck_pass5_data(struct fsck *f);

#endif
