/*
 * log.c: the daemon's log lines (fs->log, set by whoever opened the
 * filesystem: syslog or stderr for the daemon, the caller's for the
 * tools) and the one-line error messages of functions that take an
 * err/errlen buffer.
 */
#include "fs_int.h"

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

int fs_set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}
