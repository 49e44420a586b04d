/*
 * admin.h: the administration of a filesystem in use (fs/ARCHITECTURE.md):
 * section moves, disks added, detached and lost, online backups, the
 * store's copies added and removed, and the control socket that
 * lsmfs-disk speaks to (SCHEMA.md "Control requests").  Above the engine,
 * below the lifecycle; struct fs is opaque here, so that the tools that
 * include this (through fs.h) see none of the engine.
 */
#ifndef LSMFS_ADMIN_H
#define LSMFS_ADMIN_H

#include "disks.h"

struct fs;
struct move_progress;
struct store_options;

/* ---- Disk management (control.c; SCHEMA.md "Control requests") ----
 * A mounted daemon answers lsmfs-disk's requests on the Unix socket
 * <store>/FS_CONTROL_SOCKET (root only); without a daemon, lsmfs-disk
 * opens the filesystem itself (fs_offline_open, holding the disks' locks)
 * and asks fs_control directly.  out(ctx, line) takes each line of the
 * answer (without newline), the last `ok` or `error <errno> <message>`;
 * a non-zero return from it means the asker went away (a move goes on).
 * fs_control returns 0 or the request's negative errno. */
#define FS_CONTROL_SOCKET "control"
struct sockaddr_un;
/* The address of the control socket of the store in store_dir, into *sa:
 * the path, or, when it is too long for sun_path, /proc/self/fd/N/control
 * with *dirfd (else -1) the directory opened for it (close it once bound
 * or connected). */
int fs_control_address(const char *store_dir, struct sockaddr_un *sa, int *dirfd);
int fs_control(struct fs *fs, const char *request, int (*out)(void *ctx, const char *line),
	       void *ctx);

/* members.c: one change to the disks or the store's copies at a time,
 * and none while a section moves or mounted read-only: begin takes
 * fs->move_lock (EBUSY, EROFS with the reason in err), end releases it. */
int members_change_begin(struct fs *fs, char *err, size_t errlen);
void members_change_end(struct fs *fs);

/* copies.c (SCHEMA.md "Store copies") */
/* Before the store opens: copies missing marked stale (a disk's copy
 * whose directory went is made again, to be filled), and so's copies
 * set (dirs: LSMFS_MAX_META_COPIES entries, dirs[0] the one to open). */
int copies_prepare(struct fs *fs, struct store_options *so, const char **dirs, char *err,
		   size_t errlen);
/* After it opened read-write: the stale copies it brought up to date
 * are marked so. */
void copies_opened(struct fs *fs);
/* store_options.copy_failed: the copy marked stale on the disks. */
int copies_failed(void *ctx, size_t k, int err, const char *what);

/* A new copy of the store on disk d (control request copy-add), filled
 * while in use; *copy: its number. */
int copies_add(struct fs *fs, uint32_t d, uint32_t *copy, char *err, size_t errlen);
/* Copy c removed (copy-remove): refused for the last up-to-date copy. */
int copies_remove(struct fs *fs, uint32_t c, char *err, size_t errlen);

/* move.c: move a section's chunk files to disk `to`, online (SCHEMA.md,
 * "Moving a section"); report (may be NULL) hears of the progress a few
 * times a second and at the start and end.  -EBUSY while another section
 * moves; a failure rolls back (the section stays where it was) and says
 * why in err.  move_recover, at a read-write mount: finishes or rolls
 * back the move a crash interrupted. */
typedef void (*move_report_fn)(void *ctx, const struct move_progress *p);
/* A chunk an evacuating move could not read: its bytes below `bytes` (the
 * durable length its record now has) read as EIO. */
struct move_lost {
	uint64_t ino, chunk, bytes;
	int err;   /* why it could not be read */
	bool kept; /* its file is in the failing disk's .lsmfs/evacuated/ */
	char name[48]; /* ... under this name */
};
struct move_opts {
	/* The source disk is failing (`lsmfs-disk remove --evacuate`): a
	 * chunk file that cannot be read is lost rather than fatal, a
	 * directory that cannot be listed is listed from the store, an old
	 * copy that cannot be removed stays. */
	bool evacuate;
	move_report_fn report;
	/* Evacuating: the chunks lost, once the section has switched. */
	void (*lost)(void *ctx, const struct move_lost *l, size_t n);
	void *ctx;
};
int move_section(struct fs *fs, uint32_t section, uint32_t to, const struct move_opts *o,
		 char *err, size_t errlen);
/* leaving: a disk on its way out (or UINT32_MAX), whose leftover copy
 * may stay when it cannot be removed. */
int move_recover(struct fs *fs, uint32_t leaving);

/* members.c: the disk set changing while open (SCHEMA.md, "Adding and
 * removing disks").  members_add: path becomes a disk (empty, but for
 * lost+found, unless force), *index its index; members_detach: disk d,
 * holding no section and not the store, leaves, its superblock retired.
 * Both -EBUSY while a section moves.  members_reconcile, at a read-write
 * open: superblocks a crash left behind rewritten, the store's disk
 * records and count set from the superblocks.  members_free at close. */
int members_add(struct fs *fs, const char *path, bool force, uint32_t *index, char *err,
		size_t errlen);
/* The same inside members_change_begin/end (replace.c), the new disk's
 * UUID given (uuid: the one a record names) or made (NULL); dry: only the
 * checks, *index the slot it would take (the lock not needed). */
int members_add_locked(struct fs *fs, const char *path, bool force, const uint8_t *uuid, bool dry,
		       uint32_t *index, char *err, size_t errlen);
int members_detach(struct fs *fs, uint32_t d, char *err, size_t errlen);
/* The same inside members_change_begin/end; also a disk missing from a
 * degraded mount, once it holds no section (lost.c). */
int members_detach_locked(struct fs *fs, uint32_t d, char *err, size_t errlen);
int members_reconcile(struct fs *fs);

/* lost.c: drop disk d, dead for good (SCHEMA.md "A disk lost"): missing
 * from a degraded mount, or found gone while mounted.  Its sections go to
 * the other disks, empty; every chunk record it held inside its file's
 * size is marked lost (EIO until truncated or removed); then it is
 * detached.  out hears a line `lost {json}` per file that lost bytes
 * (ino, path, chunks, bytes), then `dropped {json}` (sections, chunks,
 * files).  Refused (EBUSY) while d is usable or holds a copy of the
 * store. */
int lost_drop_disk(struct fs *fs, uint32_t d, int (*out)(void *ctx, const char *line), void *ctx,
		   char *err, size_t errlen);
/* The same inside members_change_begin/end, every section going to disk
 * `to` (usable, not d: a replace's new disk), or, UINT32_MAX, spread as
 * above. */
int lost_drop_disk_locked(struct fs *fs, uint32_t d, uint32_t to,
			  int (*out)(void *ctx, const char *line), void *ctx, char *err,
			  size_t errlen);
/* replace.c: a disk replaced by a new one (SCHEMA.md "Replacing a disk").
 * replace_begin: `M replace` recorded, then path added as a disk (empty
 * but for lost+found, unless force), out hearing `replace {json}` (old,
 * new: its index, resumed: the replace was under way already, done: and
 * is over but for its record, dry); dry: only checked, nothing written.
 * -EBUSY while another replace is under way.  Between the two, lsmfs-disk
 * moves old's sections and copy of the store to the new disk.
 * replace_end: old detached, or, gone and lost (the caller says it is dead
 * for good; else -ENODEV), dropped as lost with its sections given to the
 * new disk (out hears lost_drop_disk's lines), then the
 * record deleted; `replaced {json}` (old, new).  replace_json: the record
 * for the status: null, or {old, old_member, new (null: no member)}. */
struct json_out;
int replace_begin(struct fs *fs, uint32_t old, const char *path, bool force, bool dry,
		  int (*out)(void *ctx, const char *line), void *ctx, char *err, size_t errlen);
int replace_end(struct fs *fs, uint32_t old, bool lost, int (*out)(void *ctx, const char *line),
		void *ctx, char *err, size_t errlen);
void replace_json(struct fs *fs, struct json_out *o);

/* convert.c: the chunks of ino to `copies` copies (SCHEMA.md "Copies";
 * 0: as many as each has) and (placement >= 0, an enum placement) where
 * that placement puts them ("Placement"), one at a time; one line
 * `converted {json}` to out. */
int convert_file(struct fs *fs, uint64_t ino, unsigned copies, int placement,
		 int (*out)(void *ctx, const char *line), void *ctx, char *err, size_t errlen);
/* backup.c: an online backup of the store into dir (absolute, empty or
 * made; SCHEMA.md "Backups"); out hears `backup {json}` (tables, bytes,
 * sequence, dir). */
int backup_write(struct fs *fs, const char *dir, int (*out)(void *ctx, const char *line), void *ctx,
		 char *err, size_t errlen);
/* backup.c: what fs_open does for a restore (fs_options.restoring). */
int backup_settle(struct fs *fs, char *err, size_t errlen);
/* After a restore (backup.c): every chunk record inside its file's size
 * whose file is missing is marked lost the same way, and out hears the
 * same `lost {json}` lines; *files and *chunks: how many. */
int lost_mark_missing(struct fs *fs, int (*out)(void *ctx, const char *line), void *ctx,
		      uint64_t *files, uint64_t *chunks);
void members_free(struct fs *fs);

/* scrub.c: the online scrub (SCHEMA.md "Scrub", `lsmfs-disk scrub`): a
 * thread that scrubs every chunk (every copy read and checked, bad blocks
 * rewritten from a good copy, stale or damaged copies rebuilt), no faster
 * than rate bytes/s (0: no limit), its progress in `M scrub`.
 * scrub_start: a new scrub, or (resume) the last one going on from where
 * it stopped with its counts and, unless rate_given, its rate; -EBUSY
 * while one runs, -EROFS read-only, -ENOENT nothing to resume.
 * scrub_cancel: the one running stops after its chunk, saved as
 * cancelled, before it returns; -ENOENT when none runs.  scrub_status:
 * one line of JSON to out: this mount's scrub, else the store's record.
 * scrub_stop, at fs_close: a scrub running stops, saved as interrupted;
 * its memory goes. */
int scrub_start(struct fs *fs, bool resume, bool rate_given, uint64_t rate, char *err,
		size_t errlen);
int scrub_cancel(struct fs *fs, char *err, size_t errlen);
int scrub_status(struct fs *fs, int (*out)(void *ctx, const char *line), void *ctx, char *err,
		 size_t errlen);
void scrub_stop(struct fs *fs);

/* control.c: the control socket <store>/control, for lsmfs-disk, while
 * mounted read-write (fs_control, above, answers each request). */
int control_start(struct fs *fs);
void control_stop(struct fs *fs);

#endif
