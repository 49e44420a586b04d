/*
 * err.c: the one-line error messages of functions that take an err/errlen
 * buffer (base.h fs_set_err), ready to print after "prog: ".
 */
#include "base.h"

#include <stdarg.h>
#include <stdio.h>

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
