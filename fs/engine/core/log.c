/*
 * log.c: the daemon's log lines (fs->log, set by whoever opened the
 * filesystem: syslog or stderr for the daemon, the caller's for the
 * tools).  The one-line error messages of err/errlen are base/err.c's.
 */
#include "core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fs_logf(struct fs *fs, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (fs->log)
		fs->log(fs->log_ctx, line);
}


void fs_log_named(struct fs *fs, uint64_t ino, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	bool queued = false;
	if (fs->namer.initialized) {
		pthread_mutex_lock(&fs->namer.lock);
		if (fs->namer.running && !fs->namer.stopping && fs->namer.n < FS_NAMED_QUEUE) {
			char *copy = strdup(line);
			if (copy) {
				fs->namer.q[fs->namer.n++] = (struct fs_named_msg){.ino = ino, .msg = copy};
				pthread_cond_signal(&fs->namer.cv);
				queued = true;
			}
		}
		pthread_mutex_unlock(&fs->namer.lock);
	}
	if (!queued)
		fs_logf(fs, "inode %llu: %s", (unsigned long long)ino, line);
}
