/*
 * problem.h: every problem fsck.lsmfs knows, and the one way to report one.
 *
 * As e2fsck's problem.h/problem.c: each problem has a stable code, printed
 * as LSMFS-PPNN (PP the pass, NN the problem), and one row in the table of
 * problem.c holding its message, its severity, whether -p (preen) may
 * repair it, and what the repair does.  The passes do not print findings:
 * they fill a struct problem_ctx with the facts the message names and call
 * problem_fix(), which prints the line, decides by the mode (-n, -y, -p or
 * asking) and the table whether to repair, and counts it.  Rows flagged
 * PR_LATCH are kinds that come by the thousand: past the first few of a
 * pass they are counted, not printed, and said in one line when the pass
 * ends (problem_pass_end), as e2fsck's latches; rows flagged PR_AFTER say
 * why a repair failed (problem_repair_failed).  A code keeps its number
 * and meaning for good; new problems take new numbers.
 * No state beyond struct fsck; single-threaded, as fsck is.
 */
#ifndef LSMFS_FSCK_PROBLEM_H
#define LSMFS_FSCK_PROBLEM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct fsck;

enum fsck_code {
	PR_STORE_DAMAGED = 0x0101,       /* pass 1: the store */
	PR_STORE_UNREADABLE = 0x0102,
	PR_INFO_BAD = 0x0103,
	PR_STORE_STILL_DAMAGED = 0x0104,
	PR_STORE_COPY_DAMAGED = 0x0105,  /* a copy damaged, another whole */
	PR_STORE_COPY_DIFFERS = 0x0106,  /* whole copies that disagree */
	PR_STORE_COPY_STALE = 0x0107,    /* a copy marked behind the others */
	PR_STORE_COPY_MISSING = 0x0108,  /* a copy gone from its disk */
	PR_STORE_COPY_BEHIND = 0x0109,   /* a whole copy lacking writes another has */
	PR_STORE_COPY_PLACE_GONE = 0x010a, /* a copy's --meta directory not there */
	PR_STORE_COPY_MAKE_FAILED = 0x010b,    /* repair failures (PR_AFTER) */
	PR_STORE_COPY_REWRITE_FAILED = 0x010c,
	PR_INODE_BAD_RECORD = 0x0201,    /* pass 2: inodes */
	PR_INODE_BAD_TYPE = 0x0202,
	PR_INODE_ABOVE_COUNTER = 0x0203,
	PR_INODE_BAD_FLAGS = 0x0204,
	PR_INLINE_TOO_LONG = 0x0205,
	PR_INLINE_OVER_LIMIT = 0x0206,
	PR_INLINE_AND_CHUNKS = 0x0207,
	PR_CHUNK_PAST_EOF = 0x0208,
	PR_SYMLINK_TARGET = 0x0209,
	PR_DATA_ON_NONFILE = 0x020a,
	PR_XATTR_FLAG = 0x020b,
	PR_KEY_NO_INODE = 0x020c,
	PR_ORPHAN_LINKED = 0x020d,
	PR_ORPHAN_PENDING = 0x020e,
	PR_BAD_KEY = 0x020f,
	PR_ROOT_MISSING = 0x0301,        /* pass 3: directories */
	PR_ENTRY_DANGLING = 0x0302,
	PR_ENTRY_IN_NONDIR = 0x0303,
	PR_ENTRY_BAD_HASH = 0x0304,
	PR_ENTRY_BAD_TYPE = 0x0305,
	PR_DIR_MULTIPLY_LINKED = 0x0306,
	PR_DIR_BAD_PARENT = 0x0307,
	PR_INODE_UNATTACHED = 0x0308,
	PR_LOST_FOUND_MISSING = 0x0309,
	PR_NLINK = 0x0401,               /* pass 4: link counts */
	PR_SECTION_UNMAPPED = 0x0501,    /* pass 5: data, sections, disks */
	PR_SECTION_BAD_DISK = 0x0502,
	PR_DISK_RECORD = 0x0503,
	PR_CHUNK_MISSING = 0x0504,
	PR_CHUNK_TOO_LONG = 0x0505,
	PR_CHUNK_MISPLACED = 0x0506,
	PR_CHUNK_OWNERLESS = 0x0507,
	PR_CHUNK_UNREADABLE = 0x0508,
	PR_STRAY_FILE = 0x0509,
	PR_SUPER_DAMAGED = 0x050a,       /* pass 5: superblocks */
	PR_SUPER_OTHER_DISK = 0x050b,
	PR_SUPER_WHICH_DISK = 0x050c,
	PR_SECTION_BEYOND = 0x050d,
	PR_CHUNK_SHORT = 0x050e,         /* pass 5: chunk files again */
	PR_CHUNK_READ_ERROR = 0x050f,    /* pass 5 with --scrub */
	PR_DISK_RECORD_GONE = 0x0510,    /* pass 5: disks added and removed */
	PR_SUPER_STALE = 0x0511,
	PR_DISK_COUNT = 0x0512,
	PR_SUPER_WRITE_FAILED = 0x0513,  /* a repair failure (PR_AFTER) */
	PR_DEVSTATS_GONE = 0x0514,       /* pass 5: error counters of no disk */
	PR_CHUNK_CHECKSUM = 0x0515,      /* pass 5 with --scrub */
	PR_CHUNK_BAD_SECTION = 0x0516,   /* pass 5: a record naming no section there is */
	PR_COPY_MISSING = 0x0517,        /* pass 5: chunk copies */
	PR_COPY_STALE = 0x0518,
	PR_COPIES_ONE_DISK = 0x0519,
	PR_CHUNK_BAD_COPIES = 0x051a,
	PR_COPY_CHECKSUM = 0x051b,       /* pass 5 with --scrub */
	PR_CHUNK_LEFTOVER = 0x051c,      /* pass 5: a relocation cut short */
};

enum problem_severity {
	/* Nothing lost or at risk: bookkeeping off, or bytes never read. */
	PR_SEV_MINOR,
	/* The filesystem is inconsistent: names, counts or data disagree,
	 * and the daemon would misbehave on them. */
	PR_SEV_ERROR,
	/* The check cannot go on as it should, or the filesystem does not
	 * mount (the store unreadable, a disk not known for which it is). */
	PR_SEV_FATAL,
};

/* The facts a message names.  The table's messages take them with
 * %-fields, e2fsck's way (no printf format at the call sites):
 *   %i ino      %c chunk    %n num      %N num2     %z snum (signed)
 *   %o num in octal         %x num in hex (0x...)   %S section
 *   %d disk     %D disk's path             %U disk's UUID (superblocks)
 *   %e disk2    %E disk2's path            %T type name of mode
 *   %s str      %t str2     %f file (a path on a disk)
 *   %p path (in the filesystem)            %m strerror(err), err an errno
 *   %M the metadata store's directory      %% a percent sign
 * A NULL string prints as "". */
struct problem_ctx {
	uint64_t ino, chunk, num, num2;
	int64_t snum;
	uint32_t section, disk, disk2, mode;
	int err;
	const char *str, *str2, *file, *path;
};

/* A row's flags, as e2fsck's PR_PREEN_OK and its kin. */
enum problem_flag {
	/* -p repairs it: loses nothing, needs no judgement. */
	PR_PREEN = 1u << 0,
	/* Not a problem of its own: why the repair of the problem reported
	 * just before failed (problem_repair_failed), as e2fsck's error rows
	 * (PR_1_RELOC_WRITE_ERR).  Never a repair, never counted again. */
	PR_AFTER = 1u << 1,
	/* A latch, as e2fsck's PR_LATCH_* groups: a kind that can come by
	 * the thousand (one per chunk file, inode, entry or section).  In a
	 * pass, the first PROBLEM_LATCH_SHOW of the kind print in full and
	 * the rest are counted, said in one line when the pass ends
	 * (problem_pass_end); asking, the first is asked once for all of
	 * them.  With -v every one prints.  The answers, repairs, counts
	 * and exit code are those of each problem on its own. */
	PR_LATCH = 1u << 2,
};

/* Problems of one latched kind printed in full in a pass. */
#define PROBLEM_LATCH_SHOW 20
/* Latched kinds one pass keeps count of: at least the rows with PR_LATCH
 * (problem_list checks). */
#define PROBLEM_LATCHES 32

/* One latched kind in this pass (struct fsck latches[]); all zero when
 * free, and again at each pass's end. */
struct problem_latch {
	enum fsck_code code;    /* the kind; 0: slot free */
	unsigned seen;          /* its problems this pass */
	unsigned hidden;        /* of those, not printed (past PROBLEM_LATCH_SHOW) */
	unsigned failed;        /* of the hidden, repairs that failed */
	int answer;             /* asking: 0 not asked yet, 1 yes, -1 no */
	const char *said;       /* the answer the hidden ones got */
};

/* One row of the table. */
struct problem {
	enum fsck_code code;
	const char *message;   /* %-fields above */
	enum problem_severity severity;
	unsigned flags;        /* enum problem_flag */
	const char *repair;    /* what "yes" does; NULL: fsck.lsmfs cannot repair it */
};

/* The row of code, or NULL when the table has none (a bug: the test of
 * --list-problems checks that every code has its row). */
const struct problem *problem_find(enum fsck_code code);

/* Report a problem: print "LSMFS-PPNN message.  Fix? answer".  Returns
 * true when the caller should repair it now: with -y, with -p for the rows
 * marked preen, or when the user says yes; never with -n, and never for a
 * row without a repair.  A problem counts as left uncorrected until the
 * caller reports the repair done (fsck_repaired). */
bool problem_fix(struct fsck *f, enum fsck_code code, const struct problem_ctx *pc);

/* The repair of the last problem: rc 0 done, else why not (printed). */
void fsck_repaired(struct fsck *f, int rc);

/* The repair of the last problem failed, and code, a PR_AFTER row whose
 * message names the step and why, says so: printed indented under the
 * problem, with no question.  The problem stays uncorrected, as with
 * fsck_repaired(f, rc) for rc nonzero, which it replaces. */
void problem_repair_failed(struct fsck *f, enum fsck_code code, const struct problem_ctx *pc);

/* The end of a pass: for each latched kind with problems not printed,
 * "... and N more problems of this kind (LSMFS-PPNN).  Fix? answer"
 * (with the repairs of them that failed); then the latches start over. */
void problem_pass_end(struct fsck *f);

/* Print the whole table, one problem per paragraph (fsck.lsmfs
 * --list-problems).  Returns 0, or -EUCLEAN (with a line on stderr) when
 * the table is not sorted by code, has a code twice, or a row that fails
 * its own rules (a preen row without a repair). */
int problem_list(FILE *out);

#endif
