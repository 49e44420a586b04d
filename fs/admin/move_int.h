/*
 * move_int.h: what the parts of a section move share (move.c runs the
 * move, move_copy.c copies one chunk file and keeps what an evacuation
 * could not read).  Internal to admin/.
 */
#ifndef LSMFS_MOVE_INT_H
#define LSMFS_MOVE_INT_H

#include "engine.h"
#include "admin.h"

#define COPY_BUF (1u << 20)

struct mover {
	struct fs *fs;
	struct section_move m;
	int src_dir, dst_dir;   /* the section's directory on each disk */
	struct move_progress p;
	move_report_fn report;
	void *ctx;
	char *buf;              /* COPY_BUF, for copies copy_file_range refuses */
	char *err;
	size_t errlen;
	uint64_t last_report_ns;
	bool tracking; /* the section's changes recorded (gate.c section_track) */
	bool frozen; /* no progress reports then: a slow reader must not hold the freeze */
	bool evacuate;
	bool doubles; /* to is the disk of the section's partner: chunks with two copies refuse it */
	struct move_lost *lost; /* evacuating: the chunks that could not be read */
	size_t nlost, caplost;
};

/* A progress report, at most every 200 ms unless always (none while frozen). */
void move_say(struct mover *mv, bool always);
/* The first reason a move fails, into mv->err. */
void move_set_err(struct mover *mv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* <disk>/.lsmfs/sections/<s> of section s on disk d, for messages. */
void move_dir_path(struct fs *fs, uint32_t d, uint32_t s, char *out, size_t cap);
/* "disk D: <what> <its copy of chunk file name>: <err>" into mv->err. */
void move_file_err(struct mover *mv, uint32_t d, const char *what, const char *name, int err);
/* Copy chunk file name to the target (holes kept; fdatasynced when sync);
 * evacuating, a chunk that cannot be read is recorded lost instead. */
int move_copy_chunk(struct mover *mv, const char *name, bool sync);
/* An error of the medium (or of the filesystem or server behind it),
 * which an evacuation takes as the chunk lost. */
bool move_media_error(int err);
/* Evacuating: the lost chunks' files linked into the failing disk's
 * .lsmfs/evacuated/ (kept), or a kept one taken back (unkeep). */
void move_keep_lost(struct mover *mv);
void move_unkeep(struct mover *mv, struct move_lost *l);
/* A copy that cannot be removed is renamed aside (SCHEMA.md "Moving a
 * section"), err saying why. */
void move_put_aside(struct fs *fs, uint32_t d, uint32_t s, int err);

#endif
