/*
 * log.c: the daemon's log lines (fs->log, set by whoever opened the
 * filesystem: syslog or stderr for the daemon, the caller's for the
 * tools).  The one-line error messages of err/errlen are base/err.c's.
 */
#include "core.h"

#include <stdarg.h>
#include <stdio.h>

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

