/*
 * data.h: the engine's data path (fs/ARCHITECTURE.md): chunk files and
 * their records, making them durable, the repair of files in flux, the
 * layout of a file, reads and writes, setattr, fallocate, the section
 * gates and free space.  Uses the core and the attributes.
 */
#ifndef LSMFS_ENGINE_DATA_H
#define LSMFS_ENGINE_DATA_H

#include "attr.h"
#include "chunk_iter.h"

/* data.c: change the size of a regular file (under its lock, drained):
 * a truncate cuts or drops chunks, a growth leaves a hole; rec updated in
 * memory. */
int data_set_size(struct fs *fs, struct fs_inode *in, uint64_t nsize);

/* data.c, read.c, setattr.c */
int fs_open_file(struct fs *fs, uint64_t ino, int flags);

int fs_release(struct fs *fs, uint64_t ino);

int fs_read(struct fs *fs, uint64_t ino, char *buf, size_t size, off_t off,
	    size_t *got);

/* kill: the kernel asks to clear setuid/setgid with this write, for
 * this caller (NULL: it does not). */
/* cached: the kernel's writeback of its page cache (fi->writepage), whose
 * short writes would be taken as done, so a failure part way answers the
 * error; other writes answer what reached the disk. */
int fs_write(struct fs *fs, uint64_t ino, const char *buf, size_t size,
	     off_t off, const struct fs_caller *kill, bool cached);

int fs_write_bufv(struct fs *fs, uint64_t ino, struct fuse_bufvec *src,
		  off_t off, const struct fs_caller *kill, bool cached);

/* caller: used when to_set carries FUSE_SET_ATTR_KILL_SUID. */
int fs_setattr(struct fs *fs, uint64_t ino, const struct stat *attr,
	       int to_set, const struct fs_caller *caller, struct stat *out);

/* falloc.c; caller: who asks (an unprivileged one loses setuid). */
int fs_fallocate(struct fs *fs, uint64_t ino, int mode, off_t off,
		 off_t len, const struct fs_caller *caller);

/* Make [off, end) of the file read as zeros (under its lock, drained). */
int data_punch(struct fs *fs, struct fs_inode *in, uint64_t off, uint64_t end);

int fs_fsync(struct fs *fs, uint64_t ino, bool datasync);

/* space.c (SCHEMA.md "Free space"): statfs, with f_bavail what the
 * placement of chunks can take in the copies the root asks for; and can
 * the disks take the chunks of in's [off, end) in its copies, less the
 * `have` bytes the file holds (on all its copies' disks): 0 or -ENOSPC.
 * Under in's lock. */
int fs_statfs(struct fs *fs, struct statvfs *out);

int space_check(struct fs *fs, struct fs_inode *in, uint64_t off, uint64_t end, uint64_t have);

/* The section for new chunk of in (SCHEMA.md "Placement"), by its policy
 * (policy.c), under its lock: 0 and *section, or -ENOSPC when no usable
 * disk has room for a chunk. */
int space_place(struct fs *fs, struct fs_inode *in, uint64_t chunk, struct chunk_place *place);
/* Where chunk (placed at pl) goes when its file's chunks are made to
 * follow placement p (`lsmfs-disk convert --placement`, chunk_relocate.c):
 * the section of the file's first chunk (together) or its hash section
 * (spread), for two copies that section's pair.  0 and *target; 1 when it
 * is there already; -ENOSPC when a copy's new disk is not usable, cannot
 * take a chunk (a copy on its own disk needs no room: a link) or would be
 * the other copy's; or -errno.  Under in's lock. */
int space_relocation(struct fs *fs, struct fs_inode *in, uint64_t chunk, enum placement p,
		     const struct chunk_place *pl, uint32_t *target);
/* A chunk just made (slot c) is promised its size on each live copy's
 * disk, which placement counts as taken; space_keep: it wrote (or
 * allocated) written bytes of it, or (UINT64_MAX) its slot goes. */
void space_promise(struct fs *fs, struct chunk_fd *c);
void space_keep(struct fs *fs, struct chunk_fd *c, uint64_t written);
/* Its slot goes: the promise ends, or (late: the slot was evicted while
 * the file may still write the chunk) is kept a few seconds more. */
void space_unpromise(struct fs *fs, struct chunk_fd *c, bool late);

/* Inline data of ino (NULL, 0 when none); malloc'd. */
int data_inline_get(struct fs *fs, uint64_t ino, char **buf, size_t *len);

/* Move an inline file's bytes to chunk 0 and flag it chunked. */
int data_to_chunked(struct fs *fs, struct fs_inode *in);

/* Make [from, to) of a chunked file read as zeros; from is its size. */
int data_zero_gap(struct fs *fs, struct fs_inode *in, uint64_t from, uint64_t to);

/* gate.c: every use of a chunk file is inside its section's gate (see
 * there).  section_enter waits while the section is frozen; change: the
 * thread will change chunk (ino, chunk) (write, truncate, create, remove).
 * section_mark says where the thread's stack of gates stands, and
 * section_release(fs, mark) leaves every gate entered since (0: all). */
int gate_init(struct fs *fs);

void gate_free(struct fs *fs);

void section_enter(struct fs *fs, uint32_t section, uint64_t ino, uint64_t chunk, bool change);

int section_mark(void);

void section_release(struct fs *fs, int mark);

uint32_t section_gen(struct fs *fs, uint32_t section);

/* The mover (move.c), one section at a time: */
void section_freeze(struct fs *fs, uint32_t section); /* returns once nobody is inside */
void section_thaw(struct fs *fs);

/* Frozen: the section is on disk from now on; cached fds on it go stale. */
void section_switch(struct fs *fs, uint32_t section, uint32_t disk);

/* Start and stop recording the changes to section's chunks. */
void section_track(struct fs *fs, uint32_t section);

void section_untrack(struct fs *fs);

/* The chunks changed and no longer being changed since the last call
 * (malloc'd, *n of them), taken out of the set; returns 1 when changes
 * are still under way, 0 when not, or -ENOMEM.  *lost: a change went
 * unrecorded (no memory): the set cannot be trusted. */
int section_take_changes(struct fs *fs, struct gate_chunk **out, size_t *n, bool *lost);

/* chunk.c, chunk_sync.c, chunk_recover.c: chunk files and records;
 * under the inode's lock, but where they say otherwise. */
enum chunk_access {
	CHUNK_READ,   /* an existing chunk, opened read-only */
	CHUNK_WRITE,  /* an existing chunk, opened read-write */
	CHUNK_CREATE, /* read-write, made (record, then file) if missing */
};
/* Inside the section's gate: the fd of the sections directory of the disk
 * that holds it. */
int chunk_dirfd(struct fs *fs, uint32_t section);
/* 1 and where chunk's files are (its record's: SCHEMA.md "Placement",
 * "Copies"), 0 and one copy in chunk_section's when it has no record, or
 * -errno.  *crashed (may be NULL): the record is in write since a mount
 * before this one (a crash: its copies may differ, sums.c). */
int chunk_where(struct fs *fs, uint64_t ino, uint64_t chunk, struct chunk_place *place,
		bool *crashed);
struct inode_data *chunk_data_of(struct fs_inode *in);
/* The fd of a chunk from the inode's cache, or opened; -ENOENT: a hole
 * (no record, or a record without file).  *created (may be NULL) says
 * whether CHUNK_CREATE made it.  Enters the chunk's section gate (gate.c)
 * whatever it returns: the caller uses the fd, then calls
 * section_release with a mark taken before. */
int chunk_open(struct fs *fs, struct fs_inode *in, uint64_t chunk, enum chunk_access access,
	       struct chunk_fd **out, bool *created);
/* Are a chunk's live copies (at place) on as many disks (SCHEMA.md
 * "Copies": never two on one)?  Only stable inside the gates of their
 * sections. */
bool chunk_copies_apart(struct fs *fs, const struct chunk_place *place);
/* Enter the gates of every copy's section (place), the lowest first. */
void chunk_enter(struct fs *fs, const struct chunk_place *place, uint64_t ino, uint64_t chunk,
		 bool write);
/* The cached slot of chunk goes, its changed sums into the record (under
 * in's lock, drained). */
void chunk_let_go(struct fs *fs, struct fs_inode *in, uint64_t chunk);
/* The stale copies of chunk's record: set ones added, clear ones taken
 * away, the rest of the record kept (its cached slot too), into b or (b
 * NULL) synced.  -ENODATA when no copy would be left (nothing done); 0
 * for no record or a lost one.  Under in's lock. */
int chunk_restale(struct fs *fs, struct fs_inode *in, uint64_t chunk, uint8_t set, uint8_t clear,
		  struct store_batch *b);
/* The record of chunk at place (the rest of it kept; synced), its cached
 * slot closed when its files move.  Under in's lock. */
int chunk_set_place(struct fs *fs, struct fs_inode *in, uint64_t chunk,
		    const struct chunk_place *place);
/* chunk_scrub.c: scrub chunk (ino, chunk) (see there), taking ino's lock;
 * what it found added to *n (struct scrub_count: schema.h);
 * *unrepaired: it has errors left (the caller names the file).  0,
 * -EROFS when the filesystem is read-only, or -errno of the scrub itself. */
int chunk_scrub(struct fs *fs, uint64_t ino, uint64_t chunk, struct scrub_count *n,
		bool *unrepaired);
/* chunk_scrub.c: chunk (ino, chunk) to `copies` copies (SCHEMA.md
 * "Copies"; 0: as many as it has), then (placement >= 0: an enum
 * placement) moved where that placement puts it (chunk_relocate), taking
 * ino's lock: *outcome says what came of it (LEFT: a step it needs could
 * not be taken now: no disk or no room for it, or a copy unreadable). */
enum { CONVERT_SAME, CONVERT_DONE, CONVERT_LEFT, CONVERT_BUSY };
int chunk_convert(struct fs *fs, uint64_t ino, uint64_t chunk, unsigned copies, int placement,
		  struct scrub_count *n, int *outcome);
/* chunk_relocate.c: chunk's copies (at pl) moved to the same copies of
 * section target, crash-safe (see there); the bytes copied added to
 * *bytes.  Under in's lock, drained, its slot let go, its record not in
 * write; the caller's section mark releases the gates entered.  0 or
 * -errno (nothing moved; logged). */
int chunk_relocate(struct fs *fs, struct fs_inode *in, uint64_t chunk,
		   const struct chunk_place *pl, uint32_t target, uint64_t *bytes);
/* Keep rec.blocks in step with what the chunk file holds now (its
 * st_blocks, read by the caller outside the lock: _blocks). */
void chunk_account(struct fs_inode *in, struct chunk_fd *c);
void chunk_account_blocks(struct fs_inode *in, struct chunk_fd *c, uint64_t st_blocks);
/* Remember that chunk was written since the last fsync. */
int chunk_mark_dirty(struct fs_inode *in, uint64_t chunk);
/* Shared by chunk.c, chunk_sync.c and chunk_recover.c: append v to the
 * growing array *a (-ENOMEM); the cached slot of chunk learns its durable
 * length; a failed use of a chunk file logged with its disk and path, and
 * counted against the disk as kind (devstats.c). */
int chunk_list_append(uint64_t **a, size_t *n, size_t *cap, uint64_t v);
void chunk_set_durable(struct fs_inode *in, uint64_t chunk, uint64_t len);
void chunk_log_error(struct fs *fs, uint32_t section, enum devstat kind, const char *rel,
		     const char *what, int err);
/* Put the inode's `G` mark into b, or at once (b NULL), unless there. */
int chunk_mark_flux(struct fs *fs, struct fs_inode *in, struct store_batch *b);
/* Remove the chunks [from, to) that exist (to UINT64_MAX: all); with
 * new_size (not UINT64_MAX) the inode's size becomes that, durably, before
 * any file goes (a truncation). */
int chunk_drop(struct fs *fs, struct fs_inode *in, uint64_t from, uint64_t to, uint64_t new_size);
/* Call fn for every chunk record of ino in [from, to), in order; stops
 * at fn's first non-zero return, which it returns. */
int chunk_scan(struct fs *fs, uint64_t ino, uint64_t from, uint64_t to,
	       int (*fn)(void *ctx, uint64_t chunk, uint64_t durable,
			 const struct chunk_place *place),
	       void *ctx);
/* An iterator over every chunk record of every inode, from (ino, chunk)
 * on ((0, 0): all of them), in key order. */
int chunk_records_from(struct fs *fs, uint64_t ino, uint64_t chunk, struct store_iter **it);
/* 1 when ino has a chunk record (whatever its flags say), 0 when it has
 * none, or -errno: one store seek. */
int chunk_any(struct fs *fs, uint64_t ino);
/* 1 and the recorded durable length (0: unknown) when chunk has a record,
 * 0 when it has none, or a negative errno.  *lost (may be NULL): the
 * record says its bytes were lost with their disk (lost.c). */
int chunk_record_get(struct fs *fs, uint64_t ino, uint64_t chunk, uint64_t *durable, bool *lost);
/* chunk_record_get's, with the record's value (malloc'd into *val, *vl;
 * NULL when there is none). */
int chunk_record_fetch(struct fs *fs, uint64_t ino, uint64_t chunk, void **val, size_t *vl,
		       uint64_t *durable, bool *lost);
/* A truncation to len bytes into chunk: when its record says it was lost
 * with its disk, the lost length is lowered to len (durably) and 1
 * returned; 0 when it is not such a record. */
int chunk_lost_cut(struct fs *fs, uint64_t ino, uint64_t chunk, uint64_t len);
/* Before a chunk file is cut to len: lower its record's length, durably. */
int chunk_record_lower(struct fs *fs, struct chunk_fd *c, uint64_t ino, uint64_t len);
/* fdatasync every chunk written since the last call (also those kept when
 * in was last dropped from memory), with a bounded number of descriptors,
 * record their lengths (store_write with wflags), then fsync the
 * directories of new chunk files.  Under in's lock, with no I/O under way
 * (iogate_drain). */
int chunk_sync_dirty(struct fs *fs, struct fs_inode *in, unsigned wflags);
/* chunk_sync_dirty for fsync: the chunks keep their in-write marks (sums.c). */
int chunk_fsync(struct fs *fs, struct fs_inode *in);

/* in is dropped from memory with chunks written since their lengths were
 * last recorded: keep them (taken from in->data).  Under in's lock.
 * Returns true when the kept set is past its bound: the caller then calls
 * chunk_record_unsynced, holding no lock. */
bool chunk_remember_unsynced(struct fs *fs, struct fs_inode *in);
/* Chunk chunk of ino, whose length the store lacks, joins the kept set
 * (the crash sweep); returns as chunk_remember_unsynced does. */
bool chunk_keep_unsynced(struct fs *fs, uint64_t ino, uint64_t chunk);
/* The chunks kept for ino go: its last name is gone (under its lock). */
void chunk_forget_unsynced(struct fs *fs, uint64_t ino);
/* fdatasync every kept chunk and record its length, inode by inode under
 * its lock (wflags: store_write's, STORE_WRITE_RESERVE at unmount); the
 * kept set is then empty.  Holding no lock. */
int chunk_record_unsynced(struct fs *fs, unsigned wflags);

/* chunk_copies.c: the copies of a chunk file (SCHEMA.md "Copies"), in its slot.
 * copies_live: copy i takes I/O (open, not stale, not failed);
 * copies_first: the first that does (-1: none).  copies_each applies op to
 * every live copy: 0 when all took it; when some did, those that failed
 * become stale at the next copies_settle (under the lock) and 0 is
 * returned, or the error of a full disk; when none did, the first error.
 * copies_heal rewrites n bytes at off of copy i from a good copy's buf. */
bool copies_live(const struct chunk_fd *c, unsigned i);
unsigned copies_count_live(const struct chunk_fd *c);
int copies_first(const struct chunk_fd *c);
void copies_close(struct chunk_fd *c);
/* Copy i failed with err (a negative errno) while another took the
 * change: logged, counted, flagged (stale once settled). */
void copies_fail(struct fs *fs, uint64_t ino, struct chunk_fd *c, unsigned i, const char *what,
		 int err);
int copies_each(struct fs *fs, uint64_t ino, struct chunk_fd *c, const char *what,
		int (*op)(int fd, int dfd, void *arg), void *arg);
int copies_truncate(struct fs *fs, uint64_t ino, struct chunk_fd *c, uint64_t len);
int copies_fallocate(struct fs *fs, uint64_t ino, struct chunk_fd *c, int mode, uint64_t off,
		     uint64_t len);
int copies_pwrite(struct fs *fs, uint64_t ino, struct chunk_fd *c, const void *buf, size_t n,
		  uint64_t off);
/* The st_blocks of the open copies together (UINT64_MAX: not known). */
uint64_t copies_blocks(const struct chunk_fd *c);
void copies_writeback(const struct chunk_fd *c);
void copies_settle(struct chunk_fd *c);
/* After a crash, the copies of a chunk its record has in write may differ
 * where no fsync reached: copy from (fds[from], open) is copied over each
 * other copy open in fds[] (written by name); one that cannot be written
 * is stale in *pl, its fd closed.  0, or the error reading from. */
int copies_resync(struct fs *fs, uint64_t ino, uint64_t chunk, struct chunk_place *pl,
		  int fds[CHUNK_MAX_COPIES], unsigned from);
int copies_heal(struct fs *fs, uint64_t ino, const struct chunk_fd *c, unsigned i,
		const char *buf, size_t n, uint64_t off);
/* The first size bytes of file in into out, piece bytes at a time through
 * buf: 0, or the first error, *src_failed saying whether reading in
 * failed (in coming short of size is such a failure, -EIO, unless
 * short_ok: then what it has is copied).  sparse: out is new and empty,
 * and only in's data is copied (SEEK_DATA), its holes left holes, out's
 * length set to size. */
int copies_copy_body(int in, int out, uint64_t size, char *buf, size_t piece, bool short_ok,
		     bool sparse,
		     bool *src_failed);

/* sums.c: the checksums of chunk blocks (SCHEMA.md "Chunk checksums"),
 * kept with each chunk slot.  sums_init_mount: this mount's number.
 * sums_attach: a slot opened on the chunk, its record's value (val, vl;
 * NULL: none) or created new; sums_detach forgets them, sums_retire first
 * writes changed ones into the record (the slot is let go).  Before any
 * change of a chunk file: sums_mark_inwrite (durable), done by
 * sums_write_begin (a write of [off, off + n); sums_compute from its
 * buffer, with the lock let go, into out[sums_blocks_of]; sums_write_end
 * after it) and sums_change (a truncation, a hole punched or zeros
 * written: [from, to) reads as zeros when zero).  sums_check: n bytes at
 * the block-aligned off were read into buf, got of them before the file's
 * end; -EIO and the first *bad block on a mismatch (nothing said:
 * sums_report says it of copy, counts it against its disk, with what came
 * of it; once: not again for the same block).  sums_final: the record value, in out
 * (CHUNK_VALUE_MAX), of a chunk synced at size bytes, its blocks not known
 * read back from fd; sums_recorded once it is written. */
void sums_init_mount(struct fs *fs);
int sums_attach(struct fs *fs, uint64_t ino, struct chunk_fd *c, const void *val, size_t vl,
		bool created);
void sums_detach(struct chunk_fd *c);
int sums_retire(struct fs *fs, uint64_t ino, struct chunk_fd *c);
int sums_mark_inwrite(struct fs *fs, uint64_t ino, struct chunk_fd *c);
void sums_inwrite_set(struct chunk_fd *c);
int sums_write_begin(struct fs *fs, uint64_t ino, struct chunk_fd *c, uint64_t off, uint64_t n);
uint32_t sums_blocks_of(const struct chunk_fd *c, uint64_t off, uint64_t n);
void sums_compute(uint64_t ino, const struct chunk_fd *c, const char *buf, uint64_t off,
		  uint64_t n, uint32_t *out);
void sums_write_end(struct chunk_fd *c, uint64_t off, uint64_t n, const uint32_t *computed);
int sums_change(struct fs *fs, uint64_t ino, struct chunk_fd *c, uint64_t from, uint64_t to,
		bool zero);
uint64_t sums_block_size(const struct chunk_fd *c);
int sums_check(uint64_t ino, const struct chunk_fd *c, const char *buf, uint64_t off, uint64_t n,
	       uint64_t got, uint32_t *bad);
void sums_report(struct fs *fs, uint64_t ino, const struct chunk_fd *c, unsigned copy,
		 uint32_t block, bool once, const char *outcome);
int sums_final(struct fs *fs, uint64_t ino, uint64_t chunk, const struct chunk_place *place,
	       struct fs_inode *in, int fd, uint64_t size, bool keep_mark, uint8_t *out,
	       size_t *outlen);
void sums_recorded(struct fs_inode *in, uint64_t chunk, bool keep_mark);
/* An fsync keeps the in-write mark of the chunks it records (keep_mark),
 * so that the next write of a file written and synced in turn (a
 * database) needs no synced store write first; in->data->marked lists
 * them.  sums_unmark records them without the mark (no sync: their files
 * were synced and have not changed), but those written since: at the
 * file's last close, when it leaves memory, at unmount. */
int sums_unmark(struct fs *fs, struct fs_inode *in);

/* At mount: repair the chunks of every inode a crash left marked. */
int chunk_recover(struct fs *fs);
/* A chunk file was made or removed in section: chunk_sync_all covers it. */
void chunk_section_changed(struct fs *fs, uint32_t section);
/* Remove the file of chunk in section, which its record no longer names
 * there (it may be gone already).  One on a disk not usable stays, a
 * leftover for the mount that has the disk again (the sweep or fsck finds
 * it); a failure is logged as what ("removing a dropped copy ") and
 * counted against the disk. */
void chunk_file_remove(struct fs *fs, uint64_t ino, uint64_t chunk, uint32_t section,
		       const char *what);
/* At unmount and remount read-only: syncfs of every disk, then an fsync of
 * every section directory changed since the mount (a backing filesystem's
 * syncfs may not reach them: FUSE passes none on).  Logs each failure;
 * returns the first. */
int chunk_sync_all(struct fs *fs);
void data_close_fds(struct fs *fs, struct fs_inode *in);
/* Close the fds and free the data state of an inode being dropped. */
void data_free(struct fs *fs, struct fs_inode *in);
/* Remove the chunk files of ino from from_chunk on, at most limit of
 * them, their records into b; *resume: where to go on (UINT64_MAX: done). */
int data_drop_chunks(struct fs *fs, uint64_t ino, uint64_t from_chunk, uint64_t limit,
		     struct store_batch *b, uint64_t *freed_blocks, uint64_t *resume);

#endif
