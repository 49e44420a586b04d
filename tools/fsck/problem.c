/*
 * problem.c: the table of problems (problem.h) and problem_fix(), the one
 * place findings are printed and repairs decided, as e2fsck's problem.c.
 *
 * Invariants: the table is sorted by code, each code once; a row -p may
 * repair has a repair.  problem_list checks both (the tools suite runs it).
 * Preen (-p) repairs only what loses nothing and needs no judgement: a
 * count recomputed, a flag set, a file put where its section says.  What
 * removes a name, moves data to /lost+found or chooses between two stories
 * waits for -y or a person.
 */
#include "fsck.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct problem table[] = {
	/* pass 1: the store */
	{PR_STORE_DAMAGED, "%M: the metadata store is damaged:\n%s    Salvage what reads",
	 PR_SEV_FATAL, 0,
	 "salvage: rewrite the store from every entry that reads, naming each key range lost; "
	 "passes 2-5 then mend what the loss left"},
	{PR_STORE_UNREADABLE, "%M: %s: %m", PR_SEV_FATAL, 0, NULL},
	{PR_INFO_BAD, "%M: filesystem information (key M fs) is %s; rebuild it from the superblocks",
	 PR_SEV_ERROR, PR_PREEN, "rewrite M fs from disk 0's superblock"},
	{PR_STORE_STILL_DAMAGED,
	 "%M: still damaged after salvage (the check after it still finds damage); restore "
	 "a backup (lsmfs-disk restore)",
	 PR_SEV_FATAL, 0, NULL},
	{PR_STORE_COPY_DAMAGED,
	 "copy %n of the metadata store (%f) is damaged, copy %N (%p) is whole:\n%s    Rewrite "
	 "copy %n from copy %N", PR_SEV_ERROR, PR_PREEN,
	 "mark the copy stale, replace its files with the whole copy's (each synced), mark it "
	 "up to date"},
	{PR_STORE_COPY_DIFFERS,
	 "copy %n of the metadata store (%f) differs from copy %N (%p): %s; rewrite copy %n from "
	 "copy %N", PR_SEV_ERROR, PR_PREEN,
	 "mark the copy stale, replace its files with the other copy's (each synced), mark it "
	 "up to date"},
	{PR_STORE_COPY_STALE,
	 "copy %n of the metadata store (%f) is stale (its disk was away, or a write to it "
	 "failed); rewrite it from copy %N (%p)", PR_SEV_MINOR, PR_PREEN,
	 "replace its files with the up-to-date copy's (each synced), mark it up to date (a "
	 "read-write mount does the same)"},
	{PR_STORE_COPY_MISSING,
	 "copy %n of the metadata store (%f) is missing; make it again from copy %N (%p)",
	 PR_SEV_ERROR, PR_PREEN,
	 "make the directory, copy the up-to-date copy's files into it (each synced), mark it "
	 "up to date"},
	{PR_STORE_COPY_BEHIND,
	 "copy %n of the metadata store (%f) is behind copy %N (%p): %s; rewrite copy %n from "
	 "copy %N", PR_SEV_ERROR, PR_PREEN,
	 "mark the copy stale, replace its files with the newest copy's (each synced), mark it "
	 "up to date"},
	/* A copy in a directory of its own (mkfs --meta): that directory may
	 * be a mount point not mounted, or hold another filesystem's files,
	 * so fsck never fills it (0108 makes again a copy on a disk). */
	{PR_STORE_COPY_PLACE_GONE,
	 "copy %n of the metadata store is missing: its directory %f (--meta) is not there, or "
	 "not this filesystem's (not mounted?), and is not made again; mount it, or drop the copy "
	 "(lsmfs-disk copy remove %n)", PR_SEV_ERROR, 0, NULL},
	{PR_STORE_COPY_MAKE_FAILED, "making copy %n of the metadata store (%f) again from copy %N "
	 "failed: %s", PR_SEV_ERROR, PR_AFTER, NULL},
	{PR_STORE_COPY_REWRITE_FAILED, "rewriting copy %n of the metadata store (%f) from copy %N "
	 "failed: %s", PR_SEV_ERROR, PR_AFTER, NULL},
	/* pass 2: inodes */
	{PR_INODE_BAD_RECORD, "inode %i: the record does not decode; %s", PR_SEV_ERROR, 0,
	 "a new record of the type the inode's keys show (owned by root, private), or, with "
	 "nothing to show one, the inode and its keys removed"},
	{PR_INODE_BAD_TYPE, "inode %i: mode %o has no valid file type; %s", PR_SEV_ERROR, 0,
	 "the type the inode's entries or data show, or the inode cleared when nothing shows one"},
	{PR_INODE_ABOVE_COUNTER,
	 "the inode counter (key M next_ino) is %s (%n, the highest inode in use %i); set it to %N",
	 PR_SEV_ERROR, PR_PREEN, "set M next_ino above every inode in use"},
	{PR_INODE_BAD_FLAGS, "inode %i: unknown flags %x", PR_SEV_MINOR, PR_PREEN,
	 "clear the unknown flag bits"},
	{PR_INLINE_TOO_LONG, "inode %i: size %n but %z bytes of inline data", PR_SEV_MINOR, PR_PREEN,
	 "cut the inline data to the size (bytes past it are never read)"},
	{PR_INLINE_OVER_LIMIT,
	 "inode %i: inline file of %n bytes, over the inline limit %N; move it to chunks",
	 PR_SEV_ERROR, PR_PREEN, "write the bytes to chunk files, then switch the record over"},
	{PR_INLINE_AND_CHUNKS, "inode %i: %s file with %t as well (never read); drop them",
	 PR_SEV_MINOR, 0,
	 "drop the kind of data the record's flag does not name (chunk files left go to "
	 "/lost+found)"},
	{PR_CHUNK_PAST_EOF,
	 "inode %i: chunk %c lies past the file's size %n (never read); remove it", PR_SEV_MINOR,
	 PR_PREEN | PR_LATCH, "remove the chunk file, then its record"},
	{PR_SYMLINK_TARGET, "inode %i: symlink of size %n with a %z-byte target; %s",
	 PR_SEV_ERROR, 0, "set the size to the target's, or clear a symlink with no target"},
	{PR_DATA_ON_NONFILE, "inode %i (%T) has %s", PR_SEV_MINOR, 0,
	 "drop the data keys (chunk files left go to /lost+found)"},
	{PR_XATTR_FLAG, "inode %i (%T) has xattrs but not the xattr flag", PR_SEV_ERROR, PR_PREEN,
	 "set the flag"},
	{PR_KEY_NO_INODE,
	 "inode %i: data, chunk, xattr or orphan keys without an inode record; %s", PR_SEV_ERROR,
	 PR_LATCH,
	 "a new record of the type the keys show (owned by root, private), or the keys removed"},
	{PR_ORPHAN_LINKED, "inode %i is on the orphan list but has %n links", PR_SEV_MINOR,
	 PR_PREEN | PR_LATCH, "remove the orphan mark"},
	{PR_ORPHAN_PENDING, "inode %i (%T) is an orphan a crash left behind; reclaim it",
	 PR_SEV_MINOR, PR_PREEN | PR_LATCH, "remove the inode and its data, as the daemon's mount would"},
	{PR_BAD_KEY, "store key %s (%n-byte value) does not parse", PR_SEV_ERROR, PR_LATCH, NULL},
	/* pass 3: directories */
	{PR_ROOT_MISSING, "the root directory (inode 1) is %s; make a new one", PR_SEV_ERROR, PR_PREEN,
	 "a new empty root record (its entries are keys of their own and come back with it)"},
	{PR_ENTRY_DANGLING, "entry %p -> inode %i: no such inode%s", PR_SEV_ERROR, PR_LATCH,
	 "remove the entry; or, when entries name the inode as their directory, make it a "
	 "directory again"},
	{PR_ENTRY_IN_NONDIR,
	 "entry '%s' -> inode %i belongs to inode %n, which is not a directory", PR_SEV_ERROR,
	 PR_LATCH, NULL},
	{PR_ENTRY_BAD_HASH, "entry '%s' in directory %n is stored under the wrong hash",
	 PR_SEV_ERROR, PR_PREEN | PR_LATCH, "move the entry to its own hash's key"},
	{PR_ENTRY_BAD_TYPE, "entry %p says type %n, inode %i is a %T", PR_SEV_MINOR, PR_PREEN | PR_LATCH,
	 "rewrite the entry with the inode's type"},
	{PR_DIR_MULTIPLY_LINKED, "directory inode %i has a second entry %p", PR_SEV_ERROR, 0,
	 "remove the entry that is not in the directory the record calls its parent"},
	{PR_DIR_BAD_PARENT, "directory inode %i records parent %n but is named in directory %N",
	 PR_SEV_MINOR, PR_PREEN, "set the record's parent to the directory naming it"},
	{PR_INODE_UNATTACHED, "inode %i (%T, %n bytes) is not reachable from the root",
	 PR_SEV_ERROR, PR_LATCH, "name it /lost+found/#ino (its subtree comes with a directory)"},
	{PR_LOST_FOUND_MISSING, "/lost+found (inode 2) is %s; make it again", PR_SEV_MINOR, PR_PREEN,
	 "a new /lost+found, or the old one named again from the root"},
	/* pass 4: link counts */
	{PR_NLINK, "inode %i (%T): link count %n, counted %N", PR_SEV_ERROR, PR_PREEN | PR_LATCH,
	 "set the link count to the entries counted (directories: 2 + subdirectories)"},
	/* pass 5: sections, disks, chunk files */
	{PR_SECTION_UNMAPPED, "section %S has no disk in the section map; map it to disk %d (%D)",
	 PR_SEV_ERROR, PR_PREEN | PR_LATCH,
	 "map it to the one disk holding its directory (mkfs's s mod disks when none or several)"},
	{PR_SECTION_BAD_DISK, "section %S maps to disk %n of %N; map it to disk %d (%D)",
	 PR_SEV_ERROR, PR_PREEN | PR_LATCH,
	 "map it to the one disk holding its directory (mkfs's s mod disks when none or several)"},
	{PR_DISK_RECORD, "disk %d (%D): the store's disk record %s (its UUID is %U); rewrite it",
	 PR_SEV_MINOR, PR_PREEN, "write the disk record from the superblocks and the path given now"},
	/* Only a chunk whose record has a length (bytes fsync made durable,
	 * or an evacuation could not read): without one a missing file is a
	 * hole the schema allows. */
	{PR_CHUNK_MISSING,
	 "inode %i (%p) chunk %c: %f is missing: the %n bytes its record holds durable are lost "
	 "(reads fail with EIO)", PR_SEV_ERROR, PR_LATCH,
	 "remove the chunk record (the lost bytes read as a hole)"},
	{PR_CHUNK_TOO_LONG, "%f: %n bytes, longer than a chunk (%N)", PR_SEV_MINOR,
	 PR_PREEN | PR_LATCH, "cut the file to the chunk size (bytes past it are never read)"},
	/* Where its record says: the section it names, else the hash's; for
	 * a chunk with two copies, or that section's partner (copies.c). */
	{PR_CHUNK_MISPLACED, "disk %d: %f belongs in section %S on disk %n", PR_SEV_ERROR,
	 PR_PREEN | PR_LATCH, "move the file to its section's directory (a durable copy across disks)"},
	{PR_CHUNK_OWNERLESS, "disk %d: %f: chunk %c of inode %i has no chunk record; %s",
	 PR_SEV_ERROR, PR_LATCH,
	 "give it back a record naming the section it is in when its file reaches it, else make it "
	 "/lost+found/#ino.chunk (its record naming that section too)"},
	{PR_CHUNK_UNREADABLE, "%f: %m", PR_SEV_ERROR, 0, NULL},
	{PR_STRAY_FILE, "disk %d: %f is not a %s; move it to /lost+found/#%t", PR_SEV_MINOR, PR_LATCH,
	 "make it a file in /lost+found (one chunk's worth at most; an empty one is removed)"},
	{PR_SUPER_DAMAGED,
	 "disk %d: superblock damaged (%s); rebuild it from the other disks' copies",
	 PR_SEV_FATAL, 0, "write the superblock from the other disks' copies"},
	/* Not preen: a superblock copied over another is no crash's doing,
	 * and naming the wrong disk the impostor would make pass 5 move
	 * every chunk file between the two. */
	{PR_SUPER_OTHER_DISK,
	 "disk %d (%D): its superblock is a copy of disk %n's, but it is disk %d (%s); "
	 "rewrite it as disk %d's (UUID %U)",
	 PR_SEV_FATAL, 0,
	 "write the superblock with the disk's own index and UUID (the files are not touched)"},
	{PR_SUPER_WHICH_DISK,
	 "%D and %E both carry the superblock of disk %n, and nothing tells which of them is "
	 "disk %N (%s); passes 2-5 skipped",
	 PR_SEV_FATAL, 0, NULL},
	{PR_SECTION_BEYOND, "section map entry for section %S, beyond the %n sections",
	 PR_SEV_MINOR, 0, NULL},
	{PR_CHUNK_SHORT,
	 "inode %i (%p) chunk %c: %f holds %n bytes, its record says fsync made %N durable: "
	 "the bytes from %n on are lost (reads fail with EIO)", PR_SEV_ERROR, PR_LATCH,
	 "set the record's length to what the file holds (the lost bytes read as a hole)"},

	{PR_CHUNK_READ_ERROR,
	 "inode %i (%p) chunk %c: %f: reading at offset %n: %m (reads of these bytes fail)",
	 PR_SEV_ERROR, 0, NULL},
	{PR_DISK_RECORD_GONE, "disk %n: the store has a disk record for a slot no disk holds "
	 "(a disk removed); remove it", PR_SEV_MINOR, PR_PREEN, "delete the disk record"},
	/* A crash between the superblock writes of a disk added or removed,
	 * or of the store moved: the disks of the highest generation are
	 * the truth, and the next read-write mount does the same. */
	{PR_SUPER_STALE, "disk %d (%D): superblock of disk set generation %n, behind the other "
	 "disks' %N (a change to the disks was cut short); rewrite it",
	 PR_SEV_MINOR, PR_PREEN, "write the superblock from the other disks' copies"},
	{PR_DISK_COUNT, "the store's disk count (key M fs) is %n, the superblocks say %N (a change "
	 "to the disks was cut short); set it", PR_SEV_MINOR, PR_PREEN,
	 "rewrite M fs with the superblocks' count"},
	{PR_SUPER_WRITE_FAILED, "disk %d (%D): writing its superblock failed: %s", PR_SEV_ERROR,
	 PR_AFTER, NULL},
	/* Deleted with the disk record when a disk is detached; a crash
	 * between leaves it, and the next read-write mount deletes it too. */
	{PR_DEVSTATS_GONE, "disk %n: the store has error counters (key E) for a slot no disk "
	 "holds (a disk removed); remove them", PR_SEV_MINOR, PR_PREEN,
	 "delete the error counters record"},
	/* No copy holds the block good (one copy, or every copy damaged
	 * there): nothing to repair it from (the daemon reads it as EIO). */
	{PR_CHUNK_CHECKSUM,
	 "inode %i (%p) chunk %c: %f: the block of %N bytes at offset %n does not match its "
	 "checksum, and no copy holds it good (silent damage: reads of it fail with EIO)",
	 PR_SEV_ERROR, 0, NULL},
	/* Not preen: the record may go.  Why it goes rather than being
	 * pointed at a file found elsewhere: pass5.c check_named_sections. */
	{PR_CHUNK_BAD_SECTION,
	 "inode %i (%p) chunk %c: its record names section %n, past the %N sections; %s",
	 PR_SEV_ERROR, PR_LATCH,
	 "name the section the hash gives when the file is there (length and sums kept), else remove "
	 "the record (the walk of the disks then gives a file found elsewhere a record naming its "
	 "section; with none, the bytes read as a hole)"},
	/* Copies (fs/SCHEMA.md "Copies"): copy i of a chunk in
	 * section_of_copy(its section, i).  A copy the record calls whole
	 * whose file is gone or short: redundancy lost behind the daemon's
	 * back (reads fall back to the other).  Preen: made from a copy that
	 * is whole, nothing is lost.  Without a whole copy, the chunk's loss
	 * is 0504 or 050E, as with one copy. */
	{PR_COPY_MISSING,
	 "inode %i (%p) chunk %c: copy %n, %f, is %s; make it again from copy %N (%t)",
	 PR_SEV_ERROR, PR_PREEN | PR_LATCH,
	 "copy the whole copy's file to a new file beside it, synced, and rename it into place"},
	/* A stale copy is no damage: a write missed it (its disk away or
	 * failing) and the record says so, so nothing reads it; the chunk
	 * has one copy fewer than it should (btrfs: "missing"). */
	{PR_COPY_STALE,
	 "inode %i (%p) chunk %c: copy %n, in section %S on disk %d, is stale (a write missed "
	 "it): under-replicated; make it again from copy %N (%f)",
	 PR_SEV_MINOR, PR_PREEN | PR_LATCH,
	 "copy the whole copy's file into its place (synced, renamed into place), then mark the "
	 "copy whole in the record (synced)"},
	/* The section map puts a section and its partner on one disk: the
	 * chunks with two copies there lose both with that disk.  fsck does
	 * not move sections (a move is lsmfs-disk's, online or offline). */
	{PR_COPIES_ONE_DISK,
	 "sections %S and %n are both on disk %d (%D): %N chunk%s with two copies there %t both "
	 "copies on that one disk; move one of the two to another disk (lsmfs-disk DISKS move %n "
	 "DISK)", PR_SEV_ERROR, PR_LATCH, NULL},
	/* Not preen: a record damaged; nothing is lost by the repair (no
	 * second copy can exist without a partner section). */
	{PR_CHUNK_BAD_COPIES,
	 "inode %i (%p) chunk %c: its record gives %n copies, but its section %S has no partner "
	 "(the last of an odd count): one copy, in section %S",
	 PR_SEV_ERROR, PR_LATCH,
	 "rewrite the record with one copy, not stale (length and sums kept)"},
	/* With --scrub: a block bad in one copy and good in another. */
	{PR_COPY_CHECKSUM,
	 "inode %i (%p) chunk %c: %f: the block of %N bytes at offset %n does not match its "
	 "checksum; the copy %t holds it good: rewrite it from there",
	 PR_SEV_ERROR, PR_PREEN | PR_LATCH,
	 "write the good copy's block over the bad one (synced)"},
	/* A chunk's file in a section none of its copies is in, while each
	 * copy the record names has its file: what a relocation (convert
	 * --placement) cut short by a crash leaves, before the mount's sweep
	 * removes it; reads never see it. */
	{PR_CHUNK_LEFTOVER,
	 "disk %d: %f: the record of inode %i chunk %c puts it in section %S, and every copy of it "
	 "is in its place: this file is the leftover of a relocation cut short; remove it",
	 PR_SEV_MINOR, PR_PREEN | PR_LATCH, "remove the file (its directory synced)"},
};

#define NPROBLEMS (sizeof(table) / sizeof(table[0]))

const struct problem *problem_find(enum fsck_code code)
{
	size_t lo = 0, hi = NPROBLEMS;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (table[mid].code < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < NPROBLEMS && table[lo].code == code ? &table[lo] : NULL;
}

static const char *disk_path(const struct fsck *f, uint32_t d)
{
	return f->ds && d < f->ds->ndisks && f->ds->paths[d] ? f->ds->paths[d] : "?";
}

static const char *disk_uuid(const struct fsck *f, uint32_t d, char out[37])
{
	if (!f->ds || d >= f->ds->sb.disk_count)
		return "?";
	lsmfs_uuid_format(f->ds->sb.disk_uuids[d], out);
	return out;
}

/* Append to out (cap bytes, o used) printf-style, never past the end. */
static size_t add(char *out, size_t cap, size_t o, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static size_t add(char *out, size_t cap, size_t o, const char *fmt, ...)
{
	if (o + 1 >= cap)
		return o;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out + o, cap - o, fmt, ap);
	va_end(ap);
	if (n < 0)
		return o;
	return o + (size_t)n < cap ? o + (size_t)n : cap - 1;
}

/* The message of row p with the facts of pc, into out. */
static void expand(const struct fsck *f, const char *msg, const struct problem_ctx *pc,
		   char *out, size_t cap)
{
	static const struct problem_ctx none;
	char uuid[37];
	size_t o = 0;
	if (!pc)
		pc = &none;
	out[0] = '\0';
	for (const char *m = msg; *m && o + 1 < cap; m++) {
		if (*m != '%' || !m[1]) {
			out[o++] = *m;
			out[o] = '\0';
			continue;
		}
		switch (*++m) {
		case 'i': o = add(out, cap, o, "%" PRIu64, pc->ino); break;
		case 'c': o = add(out, cap, o, "%" PRIu64, pc->chunk); break;
		case 'n': o = add(out, cap, o, "%" PRIu64, pc->num); break;
		case 'N': o = add(out, cap, o, "%" PRIu64, pc->num2); break;
		case 'z': o = add(out, cap, o, "%" PRId64, pc->snum); break;
		case 'o': o = add(out, cap, o, "%" PRIo64, pc->num); break;
		case 'x': o = add(out, cap, o, "%#" PRIx64, pc->num); break;
		case 'S': o = add(out, cap, o, "%u", pc->section); break;
		case 'd': o = add(out, cap, o, "%u", pc->disk); break;
		case 'D': o = add(out, cap, o, "%s", disk_path(f, pc->disk)); break;
		case 'U': o = add(out, cap, o, "%s", disk_uuid(f, pc->disk, uuid)); break;
		case 'e': o = add(out, cap, o, "%u", pc->disk2); break;
		case 'E': o = add(out, cap, o, "%s", disk_path(f, pc->disk2)); break;
		case 'T': o = add(out, cap, o, "%s", fsck_type_name(pc->mode)); break;
		case 's': o = add(out, cap, o, "%s", pc->str ? pc->str : ""); break;
		case 't': o = add(out, cap, o, "%s", pc->str2 ? pc->str2 : ""); break;
		case 'f': o = add(out, cap, o, "%s", pc->file ? pc->file : ""); break;
		case 'p': o = add(out, cap, o, "%s", pc->path ? pc->path : ""); break;
		case 'm': o = add(out, cap, o, "%s", strerror(abs(pc->err))); break;
		case 'M': o = add(out, cap, o, "%s", f->ds ? f->ds->meta_dir : "?"); break;
		case '%': o = add(out, cap, o, "%%"); break;
		default: o = add(out, cap, o, "%%%c", *m); break; /* shows the table's typo */
		}
	}
}

/* Ask on the terminal; latch: the answer holds for every later problem of
 * its kind in this pass (e2fsck's latch question). */
static bool ask(struct fsck *f, const struct problem_latch *latch)
{
	if (f->yes_all)
		return true;
	for (;;) {
		if (latch)
			printf("Fix this and every later LSMFS-%04X of this pass<y>? ",
			       (unsigned)latch->code);
		else
			printf("Fix<y>? ");
		fflush(stdout);
		char line[64];
		if (!fgets(line, sizeof(line), stdin))
			return false;
		if (line[0] == 'y' || line[0] == 'Y' || line[0] == '\n')
			return true;
		if (line[0] == 'n' || line[0] == 'N')
			return false;
		if (line[0] == 'a' || line[0] == 'A') {
			f->yes_all = true;
			return true;
		}
		printf("(y)es, (n)o or (a)ll\n");
	}
}

/* The latch of row p's kind this pass, taking a free slot at its first
 * problem; NULL for a row without PR_LATCH. */
static struct problem_latch *latch_of(struct fsck *f, const struct problem *p)
{
	if (!p || !(p->flags & PR_LATCH))
		return NULL;
	for (size_t i = 0; i < PROBLEM_LATCHES; i++) {
		struct problem_latch *l = &f->latches[i];
		if (!l->code)
			l->code = p->code;
		if (l->code == p->code)
			return l;
	}
	return NULL; /* more latched rows than slots: problem_list rules it out */
}

bool problem_fix(struct fsck *f, enum fsck_code code, const struct problem_ctx *pc)
{
	const struct problem *p = problem_find(code);
	char msg[4096];
	if (p)
		expand(f, p->message, pc, msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "(no row in the problem table: a bug of fsck.lsmfs)");
	f->problems++;
	f->left++;
	struct problem_latch *l = latch_of(f, p);
	bool show = !l || f->verbose || l->seen < PROBLEM_LATCH_SHOW;
	if (l)
		l->seen++;
	f->hidden_last = show ? NULL : l;
	const char *answer;
	bool fix = false;
	if (f->mode == FSCK_MODE_NO) {
		answer = "no";
	} else if (!p || !p->repair) {
		answer = "not repaired (fsck.lsmfs cannot repair this yet)";
	} else if (f->mode == FSCK_MODE_YES) {
		fix = true;
		answer = "yes";
	} else if (f->mode == FSCK_MODE_PREEN) {
		fix = p->flags & PR_PREEN;
		answer = fix ? "yes" : "no (not safe without asking: run fsck.lsmfs -y)";
	} else if (l && l->answer) {
		fix = l->answer > 0; /* asked at the first of its kind */
		answer = fix ? "yes" : "no";
	} else {
		/* The first of a latched kind is always shown (seen was 0). */
		printf("LSMFS-%04X %s.  ", (unsigned)code, msg);
		fix = ask(f, l);
		if (l)
			l->answer = fix ? 1 : -1;
		printf("\n");
		return fix;
	}
	if (show) {
		printf("LSMFS-%04X %s.  Fix? %s\n", (unsigned)code, msg, answer);
	} else {
		l->hidden++;
		l->said = answer;
	}
	return fix;
}

void fsck_repaired(struct fsck *f, int rc)
{
	if (rc) {
		if (f->hidden_last)
			f->hidden_last->failed++; /* said in its latch's count */
		else
			printf("    the repair failed: %s\n", strerror(-rc));
		return;
	}
	f->left--;
	f->fixed++;
}

void problem_pass_end(struct fsck *f)
{
	for (size_t i = 0; i < PROBLEM_LATCHES && f->latches[i].code; i++) {
		const struct problem_latch *l = &f->latches[i];
		if (!l->hidden)
			continue;
		printf("... and %u more problem%s of this kind (LSMFS-%04X).  Fix? %s", l->hidden,
		       l->hidden == 1 ? "" : "s", (unsigned)l->code, l->said);
		if (l->failed)
			printf(" (%u of these repairs failed)", l->failed);
		printf("\n");
	}
	memset(f->latches, 0, sizeof(f->latches));
	f->hidden_last = NULL;
}

void problem_repair_failed(struct fsck *f, enum fsck_code code, const struct problem_ctx *pc)
{
	if (f->hidden_last) {
		f->hidden_last->failed++; /* its problem was not printed either */
		return;
	}
	const struct problem *p = problem_find(code);
	char msg[4096];
	if (p)
		expand(f, p->message, pc, msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "(no row in the problem table: a bug of fsck.lsmfs)");
	printf("    LSMFS-%04X %s\n", (unsigned)code, msg);
}

static const char *severity_name(enum problem_severity s)
{
	switch (s) {
	case PR_SEV_MINOR: return "minor";
	case PR_SEV_ERROR: return "error";
	case PR_SEV_FATAL: return "fatal";
	}
	return "?";
}

int problem_list(FILE *out)
{
	int rc = 0;
	size_t latched = 0;
	for (size_t i = 0; i < NPROBLEMS; i++) {
		const struct problem *p = &table[i];
		if (i && table[i - 1].code >= p->code) {
			fprintf(stderr, "fsck.lsmfs: problem table: LSMFS-%04X after LSMFS-%04X: "
				"not sorted, or twice\n", (unsigned)p->code, (unsigned)table[i - 1].code);
			rc = -EUCLEAN;
		}
		if ((p->flags & PR_PREEN) && !p->repair) {
			fprintf(stderr, "fsck.lsmfs: problem table: LSMFS-%04X: preen without a repair\n",
				(unsigned)p->code);
			rc = -EUCLEAN;
		}
		if ((p->flags & PR_LATCH) && ++latched > PROBLEM_LATCHES) {
			fprintf(stderr, "fsck.lsmfs: problem table: LSMFS-%04X: more latched rows than "
				"PROBLEM_LATCHES\n", (unsigned)p->code);
			rc = -EUCLEAN;
		}
		if ((p->flags & PR_AFTER) && (p->repair || (p->flags & ~PR_AFTER))) {
			fprintf(stderr, "fsck.lsmfs: problem table: LSMFS-%04X: a repair failure with a "
				"repair or other flags\n", (unsigned)p->code);
			rc = -EUCLEAN;
		}
		fprintf(out, "LSMFS-%04X  pass %u  %s  %s%s\n    ", (unsigned)p->code,
			(unsigned)p->code >> 8, severity_name(p->severity),
			(p->flags & PR_AFTER) ? "repair failure"
			: !p->repair ? "no repair" : (p->flags & PR_PREEN) ? "-p repairs" : "-y repairs",
			(p->flags & PR_LATCH) ? "  latch" : "");
		for (const char *m = p->message; *m; m++)
			fputs(*m == '\n' ? "\n    " : (char[]){*m, 0}, out);
		fprintf(out, "\n    repair: %s\n", p->repair ? p->repair : "none");
	}
	return rc;
}
