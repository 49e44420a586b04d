/*
 * db_error: how a store reports and remembers errors: the last message
 * (sent to opt.log and kept for store_errmsg), the hard background error
 * every later write fails with, and which errors are soft (worth trying
 * again).  store.h, "Errors that pass and errors that stay", is the
 * contract; FORMAT.md "Full disk".
 *
 * The hard error (bg_error) is sticky until the store is closed:
 * db_set_bg_error keeps the first one and wakes every waiter.  A failed
 * write or background step whose error is soft (every error but
 * corruption) left nothing half done and is tried again; the background
 * thread's back-off is db_bg_failed's, in db_compact.c.
 *
 * A leaf: it calls no other db*.c file.  Locking: the message is under
 * errmu, a lock of its own, because reports come from threads that may or
 * may not hold mu; bg_error is under mu.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "db_int.h"

void db_report(struct store *st, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&st->errmu);
	snprintf(st->errmsg, sizeof(st->errmsg), "%s", msg);
	pthread_mutex_unlock(&st->errmu);
	if (st->opt.log)
		st->opt.log(st->opt.log_ctx, msg);
}

void store_errmsg(struct store *st, char *buf, size_t len)
{
	pthread_mutex_lock(&st->errmu);
	snprintf(buf, len, "%s", st->errmsg);
	pthread_mutex_unlock(&st->errmu);
}

void db_set_bg_error(struct store *st, int err)
{
	if (!st->bg_error && err) {
		st->bg_error = err;
		pthread_cond_broadcast(&st->bg_cv);
	}
}

bool db_error_is_soft(int err)
{
	return err != -EUCLEAN;
}
