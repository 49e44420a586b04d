/*
 * fsck.c: fsck.lsmfs: command line, e2fsck's exit codes, progress lines
 * and the order of the passes (problems and their repairs: problem.c).
 */
#include "fsck.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "fsck.lsmfs";

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-n|-y|-p|-a] [-f] [-v] [-C FD] [--scrub] [--backup DIR] [--degraded]\n"
		"       [--use-copy N] DISK[:DISK...]\n"
		"       %s --list-problems\n"
		"Check an lsmfs filesystem, offline, over its backing disks.\n"
		"  -n     open read-only, answer no to every repair (writes nothing)\n"
		"  -y     answer yes to every repair\n"
		"  -p     repair what is safe without asking (preen)\n"
		"  -a     the same as -p (fsck -a passes it)\n"
		"  -f     accepted as e2fsck takes it: every run checks everything\n"
		"  -v     verbose: a summary of files, directories, bytes and chunks per disk,\n"
		"         and every problem in full (not only the first %d of a kind in a pass)\n"
		"  -C FD  progress lines \"pass current max device\" on file descriptor FD\n"
		"  --scrub  also read every copy of every chunk file whole from its disk\n"
		"         (as e2fsck -c) and verify its checksums: a block bad in one copy\n"
		"         is rewritten from another (-y, -p); read errors and blocks no copy\n"
		"         holds good name the file's path and offset (LSMFS-050F, 0515)\n"
		"  --backup DIR  (with -n) check the metadata store of backup DIR\n"
		"         (lsmfs-disk backup) against the disks, as a restore would leave it\n"
		"  --degraded  (with -n) check with disks missing from the list: what is\n"
		"         there is checked, the missing disks' chunks and sections are not\n"
		"  --use-copy N  keep copy N of the metadata store over the others (copies\n"
		"         that diverged): says what each other copy holds, which is lost;\n"
		"         with -y marks copy N the one current copy and rewrites the others\n"
		"  -h, --help     this help\n"
		"  -V, --version  the version\n"
		"Without -n, -y or -p it asks per problem on a terminal, and acts as -n\n"
		"otherwise.  Passes: 1 store, 2 inodes, 3 directories, 4 link counts,\n"
		"5 data and disks.  Every problem prints with a stable code: LSMFS-PPNN.\n"
		"Of a kind that can come by the thousand (missing chunks, link counts...),\n"
		"the first %d of a pass print, then a count; asking, one question for all.\n"
		"Exit status (as e2fsck): 0 no errors, 1 errors corrected, 4 errors left\n"
		"uncorrected, 8 operational error, 16 usage error, 32 cancelled.\n"
		"Repairs (-y; -p makes those that need no judgement): salvage of damaged\n"
		"tables and commit logs, superblocks from the other disks' copies, store\n"
		"records from the superblocks, inode records from their keys, link\n"
		"counts, entries, /lost+found reconnection, orphans, chunk files\n"
		"(missing, overlong, misplaced, ownerless, stray, leftover), chunk copies\n"
		"(missing, short, stale: made again from a whole one), and a disk's\n"
		"superblock that is a copy of another disk's.\n"
		"--list-problems prints every problem: code, pass, severity, whether -p\n"
		"repairs it, message and repair.\n",
		prog, prog, PROBLEM_LATCH_SHOW, PROBLEM_LATCH_SHOW);
}

void fsck_progress(struct fsck *f, int pass, uint64_t cur, uint64_t max)
{
	if (f->progress_fd < 0)
		return;
	char line[256];
	int n = snprintf(line, sizeof(line), "%d %" PRIu64 " %" PRIu64 " %s\n", pass, cur, max,
			 f->spec);
	if (n > 0 && write(f->progress_fd, line, (size_t)n) < 0)
		f->progress_fd = -1; /* a closed progress pipe does not stop the check */
}

bool fsck_cancelled(const struct fsck *f)
{
	return f->cancel && *f->cancel;
}

/* The one piece of process state: set by SIGINT/SIGTERM, read between
 * steps of every pass. */
static volatile sig_atomic_t cancel_flag;

static void on_signal(int sig)
{
	(void)sig;
	cancel_flag = 1;
}

int main(int argc, char **argv)
{
	struct fsck f = {.mode = FSCK_MODE_ASK, .progress_fd = -1, .cancel = &cancel_flag};
	const char *backup = NULL;
	uint32_t use_copy = UINT32_MAX;
	char backup_store[LSMFS_META_PATH_MAX + 32];
	int nmodes = 0, opt;
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
						 {"version", no_argument, NULL, 'V'},
						 {"list-problems", no_argument, NULL, 'L'},
						 {"scrub", no_argument, NULL, 'S'},
						 {"backup", required_argument, NULL, 'B'},
						 {"degraded", no_argument, NULL, 'D'},
						 {"use-copy", required_argument, NULL, 'U'},
						 {0}};
	while ((opt = getopt_long(argc, argv, "nyapfvC:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n': f.mode = FSCK_MODE_NO; nmodes++; break;
		case 'y': f.mode = FSCK_MODE_YES; nmodes++; break;
		case 'p': case 'a': f.mode = FSCK_MODE_PREEN; nmodes++; break;
		case 'f': f.force = true; break;
		case 'v': f.verbose = true; break;
		case 'C': {
			char *end;
			long fd = strtol(optarg, &end, 10);
			if (*end || fd < 0) {
				fprintf(stderr, "%s: -C wants a file descriptor number, not '%s'\n", prog,
					optarg);
				return FSCK_EXIT_USAGE;
			}
			f.progress_fd = (int)fd;
			break;
		}
		case 'h': usage(stdout); return FSCK_EXIT_OK;
		case 'V': lsmfs_print_version(prog, NULL); return FSCK_EXIT_OK;
		case 'L': return problem_list(stdout) ? FSCK_EXIT_OPERATIONAL : FSCK_EXIT_OK;
		case 'S': f.scrub = true; break;
		case 'B': backup = optarg; break;
		case 'D': f.degraded = true; break;
		case 'U': {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);
			if (*end || end == optarg || n >= LSMFS_MAX_META_COPIES) {
				fprintf(stderr, "%s: --use-copy wants a copy number (0-%d), not '%s'\n",
					prog, LSMFS_MAX_META_COPIES - 1, optarg);
				return FSCK_EXIT_USAGE;
			}
			use_copy = (uint32_t)n;
			break;
		}
		default: usage(stderr); return FSCK_EXIT_USAGE;
		}
	}
	if (nmodes > 1) {
		fprintf(stderr, "%s: only one of -n, -y and -p\n", prog);
		return FSCK_EXIT_USAGE;
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return FSCK_EXIT_USAGE;
	}
	if (backup && f.mode != FSCK_MODE_NO) {
		fprintf(stderr, "%s: --backup checks a backup: with -n only (restore it with "
			"lsmfs-disk DISKS restore DIR)\n", prog);
		return FSCK_EXIT_USAGE;
	}
	if (use_copy != UINT32_MAX && (backup || f.degraded)) {
		fprintf(stderr, "%s: --use-copy chooses among the copies of the store on the disks: "
			"not with --backup or --degraded\n", prog);
		return FSCK_EXIT_USAGE;
	}
	if (f.degraded && f.mode != FSCK_MODE_NO) {
		/* A repair would write the store without the missing disks'
		 * copies, and remap what they hold. */
		fprintf(stderr, "%s: --degraded checks what is there: with -n only (repairs need "
			"every disk, or lsmfs-disk remove --lost first)\n", prog);
		return FSCK_EXIT_USAGE;
	}
	f.spec = argv[optind];
	if (f.mode == FSCK_MODE_ASK && !isatty(STDIN_FILENO))
		f.mode = FSCK_MODE_NO; /* as e2fsck: no terminal, no questions, no changes */

	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	char err[1024] = "";
	/* Repairs need the disks to themselves.  -n writes nothing: it takes
	 * the locks shared, as a read-only mount does, so no daemon mounts
	 * the disks while it reads; with a daemon serving it reads beside it,
	 * unlocked (a best effort, as of the daemon's last writes).  A daemon
	 * still closing after its unmount (writing its last tables) is waited
	 * for either way, as the daemon's own mount does: "umount; fsck". */
	unsigned flags = DISKSET_TOLERANT | DISKSET_CLASH | DISKSET_LOCK | DISKSET_LOCK_WAIT |
			 (f.mode == FSCK_MODE_NO ? DISKSET_LOCK_SHARED : 0) |
			 (f.degraded ? DISKSET_DEGRADED : 0) |
			 (use_copy != UINT32_MAX ? DISKSET_DIVERGED : 0);
	int rc = diskset_open(f.spec, flags, &f.ds, err, sizeof(err));
	if (rc == -EBUSY && f.mode == FSCK_MODE_NO) {
		char busy[sizeof(err)];
		snprintf(busy, sizeof(busy), "%s", err);
		rc = diskset_open(f.spec, DISKSET_TOLERANT | DISKSET_CLASH |
				  (f.degraded ? DISKSET_DEGRADED : 0) |
				  (use_copy != UINT32_MAX ? DISKSET_DIVERGED : 0), &f.ds, err, sizeof(err));
		if (!rc)
			fprintf(stderr, "%s: %s: checking beside it, unlocked, as of its last writes "
				"(what it has not written yet may show as damage)\n", prog, busy);
	}
	if (rc == -EBUSY && f.mode != FSCK_MODE_NO) {
		fprintf(stderr, "%s: %s\n%s: the filesystem is mounted or in use; refusing to change it (try -n)\n",
			prog, err, prog);
		return FSCK_EXIT_OPERATIONAL;
	}
	if (rc) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return FSCK_EXIT_OPERATIONAL;
	}
	if (backup) {
		struct lsmfs_super bsb;
		rc = backup_read(backup, &f.ds->sb, &bsb, backup_store, sizeof(backup_store), err,
				 sizeof(err));
		if (rc) {
			fprintf(stderr, "%s: %s\n", prog, err);
			diskset_close(f.ds);
			return FSCK_EXIT_OPERATIONAL;
		}
		f.backup_store = backup_store;
	}
	printf("%s: checking %s (%u disk%s, store in %s)\n", prog, f.spec, f.ds->ndisks,
	       f.ds->ndisks == 1 ? "" : "s", f.backup_store ? f.backup_store : f.ds->meta_dir);
	for (uint32_t d = 0; d < f.ds->ndisks; d++)
		if (f.ds->missing >> d & 1)
			printf("%s: disk %u is missing (--degraded): its sections, chunks and any copy "
			       "of the store on it are not checked\n", prog, d);
	int status = FSCK_EXIT_OK;
	if (use_copy != UINT32_MAX) {
		rc = fsck_choose_copy(&f, use_copy);
		if (rc) {
			status = rc > 0 ? FSCK_EXIT_UNCORRECTED : FSCK_EXIT_OPERATIONAL;
			goto out;
		}
	}
	printf("Pass 1: Checking the metadata store\n");
	fflush(stdout);
	rc = fsck_pass1_store(&f);
	/* Two disks with one superblock: the passes below read chunk files
	 * by disk index, so which is which must be settled first (from a
	 * read-only look at the store), or they would see every chunk of the
	 * two as misplaced. */
	if ((rc == 0 || rc == -EUCLEAN) && fsck_identify_disks(&f)) {
		status = FSCK_EXIT_UNCORRECTED;
		goto out;
	}
	if (rc == 0 || rc == -EUCLEAN)
		rc = fsck_load(&f);
	problem_pass_end(&f);
	if (rc) {
		/* Without the whole store there is no model to check: passes 2-5
		 * would report what is merely unread.  The damage is reported
		 * (pass 1); salvaging the readable keys is a repair. */
		fprintf(stderr, "%s: %s: cannot read the whole metadata store (%s); passes 2-5 skipped\n",
			prog, f.ds->meta_dir, strerror(-rc));
		status = rc == -EUCLEAN ? FSCK_EXIT_UNCORRECTED : FSCK_EXIT_OPERATIONAL;
		goto out;
	}
	if (f.mounted_mark)
		/* As e2fsck says a journal needs recovery: what a crash leaves
		 * (chunk files without record, orphans) is the mount's to
		 * clean up, and is reported below until it has. */
		printf("%s: not cleanly unmounted (or mounted read-write now): mount and unmount "
		       "it once to finish the crash recovery before repairing\n", prog);
	if (f.has_move && f.move.section < f.info.sections)
		/* Its copy on the other disk is the move's, not stray: the
		 * mount (or lsmfs-disk) finishes it or rolls it back. */
		printf("%s: section %u was moving from disk %u to disk %u: the next mount or "
		       "lsmfs-disk run finishes or rolls back the move; its copy on disk %u is left "
		       "alone\n", prog, f.move.section, f.move.from, f.move.to,
		       f.section_disk[f.move.section] == f.move.to ? f.move.from : f.move.to);
	if (!fsck_cancelled(&f)) {
		printf("Pass 2: Checking inodes, sizes and data keys\n");
		fflush(stdout);
		fsck_pass2_inodes(&f);
		problem_pass_end(&f);
	}
	if (!fsck_cancelled(&f)) {
		printf("Pass 3: Checking directory structure\n");
		fflush(stdout);
		fsck_pass3_dirs(&f);
		problem_pass_end(&f);
	}
	if (!fsck_cancelled(&f)) {
		printf("Pass 4: Checking link counts\n");
		fflush(stdout);
		fsck_pass4_links(&f);
		problem_pass_end(&f);
	}
	if (!fsck_cancelled(&f)) {
		printf("Pass 5: Checking chunks, sections and disks\n");
		fflush(stdout);
		fsck_pass5_data(&f);
		problem_pass_end(&f);
		if (f.lost_chunks)
			printf("%s: %" PRIu64 " chunk%s of %" PRIu64 " file%s marked lost (a disk "
			       "removed with --lost, or gone since a restored backup) read%s as EIO "
			       "until truncated or removed\n",
			       prog, f.lost_chunks, f.lost_chunks == 1 ? "" : "s", f.lost_files,
			       f.lost_files == 1 ? "" : "s", f.lost_chunks == 1 ? "s" : "");
		if (f.stale_copies)
			/* Each is a problem (LSMFS-0518) too, latched: the sum here. */
			printf("%s: %" PRIu64 " chunk cop%s stale (a write missed %s: under-replicated, "
			       "not damaged), %" PRIu64 " made again\n", prog, f.stale_copies,
			       f.stale_copies == 1 ? "y" : "ies", f.stale_copies == 1 ? "it" : "them",
			       f.stale_rebuilt);
	}
	if (fsck_cancelled(&f)) {
		printf("%s: cancelled\n", prog);
		status = FSCK_EXIT_CANCELLED;
		goto out;
	}
	if (f.verbose) {
		printf("\n%12" PRIu64 " regular files\n%12" PRIu64 " directories\n%12" PRIu64
		       " other inodes\n%12" PRIu64 " bytes in regular files\n%12zu chunks\n",
		       f.files, f.dirs, f.others, f.bytes, f.nchunks);
		for (uint32_t d = 0; d < f.ds->ndisks; d++)
			if (diskset_present(f.ds, d))
				printf("%12" PRIu64 " chunks on disk %u (%s)\n", f.chunks_per_disk[d], d,
			       f.ds->paths[d]);
	}
	printf("%s: %s: %" PRIu64 " files, %" PRIu64 " directories, %u problem%s%s\n", prog,
	       f.spec, f.files, f.dirs, f.problems, f.problems == 1 ? "" : "s",
	       f.left ? " left uncorrected" : "");
	status = f.left ? FSCK_EXIT_UNCORRECTED : (f.fixed ? FSCK_EXIT_FIXED : FSCK_EXIT_OK);
out:
	fsck_unload(&f);
	diskset_close(f.ds);
	return status;
}

const char *fsck_store_dir(struct fsck *f, struct store_options *so, const char **dirs)
{
	return f->backup_store ? f->backup_store : diskset_store_options(f->ds, so, dirs);
}
