/*
 * pass4.c: pass 4, link counts: every inode's nlink against what pass 3
 * counted.  A directory has 2 + its subdirectories (its name, its ".", and
 * each child's ".."); any other inode one link per entry naming it.
 * Skipped: orphans (nlink 0, still open when the daemon stopped: pass 2
 * reclaims them) and unattached inodes pass 3 could not reconnect (it
 * reported them).  The repair sets the count to what was counted.
 */
#include "fsck.h"

#include <sys/stat.h>

void fsck_pass4_links(struct fsck *f)
{
	for (size_t i = 0; i < f->icap && !fsck_cancelled(f); i++) {
		struct fsck_inode *in = &f->inodes[i];
		if (!in->ino || !in->rec_ok || (in->orphan && in->rec.nlink == 0))
			continue;
		if (!in->reached && in->entries == 0)
			continue; /* unattached: pass 3 said so */
		uint64_t want = S_ISDIR(in->rec.mode) ? 2 + (uint64_t)in->subdirs : in->entries;
		if (in->rec.nlink != want &&
		    problem_fix(f, PR_NLINK,
				&(struct problem_ctx){.ino = in->ino, .mode = in->rec.mode,
						      .num = in->rec.nlink, .num2 = want})) {
			in->rec.nlink = (uint32_t)want;
			fsck_repaired(f, fsck_put_inode(f, in));
		}
	}
}
