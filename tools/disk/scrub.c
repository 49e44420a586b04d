/*
 * scrub.c: `lsmfs-disk scrub`, as `btrfs scrub`: start, resume, status and
 * cancel of the daemon's online scrub (fs/SCHEMA.md "Scrub", control
 * requests `scrub ...`).  status prints what the daemon's `scrub status`
 * answers (one line of JSON, printed as it is with --json), in the manner
 * of `btrfs scrub status`.  start -B (and resume -B) asks for the scrub,
 * then asks its status until it ends, the progress on stderr when that is
 * a terminal; SIGINT then cancels it (resume goes on).  Offline (no daemon
 * mounted), this program opens the filesystem and scrubs it in the
 * foreground, as with -B.
 */
#include "disk.h"
#include "jsonread.h"
#include "sizes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int scrub_rate_parse(const char *text, uint64_t *rate)
{
	char *end;
	errno = 0;
	if (!(*text >= '0' && *text <= '9'))
		return -1;
	unsigned long long n = strtoull(text, &end, 10);
	static const char units[] = "KMGT";
	const char *u = *end ? strchr(units, *end >= 'a' ? *end - 'a' + 'A' : *end) : NULL;
	unsigned shift = 0;
	if (u && *u) {
		shift = 10 * (unsigned)(u - units + 1);
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B')
			end++;
	} else if (*end == 'B') {
		end++;
	}
	if (*end || errno || (shift && n > (UINT64_MAX >> shift)))
		return -1;
	*rate = (uint64_t)n << shift;
	return 0;
}

/* The daemon's answer to `scrub status`. */
struct scrub_status {
	struct jv *j;
	char state[16];
	uint64_t started, ended, ino, chunk, rate, bytes_per_second, more;
	bool ended_known;
	double elapsed;
	uint64_t count[10]; /* chunks, bytes, errors, repaired, unrepaired, rebuilt, unrebuilt,
			     * skipped, total_chunks, total_bytes */
	const struct jv *files, *error;
};
static const char *const count_names[10] = {
	"chunks", "bytes", "errors", "repaired", "unrepaired", "rebuilt", "unrebuilt", "skipped",
	"total_chunks", "total_bytes",
};
enum { C_CHUNKS, C_BYTES, C_ERRORS, C_REPAIRED, C_UNREPAIRED, C_REBUILT, C_UNREBUILT, C_SKIPPED,
       C_TOTAL_CHUNKS, C_TOTAL_BYTES };

/* 0, or -1 when text is not what this program understands. */
static int status_parse(const char *text, struct scrub_status *st)
{
	char err[128];
	memset(st, 0, sizeof(*st));
	if (jv_parse(text, strlen(text), &st->j, err, sizeof(err)))
		return -1;
	const struct jv *state = jv_get(st->j, "state"), *pos = jv_get(st->j, "position"),
			*ended = jv_get(st->j, "ended"), *el = jv_get(st->j, "elapsed");
	if (!state || state->type != JV_STRING || state->len >= sizeof(st->state) ||
	    jv_u64(jv_get(st->j, "started"), &st->started) || jv_u64(jv_get(pos, "ino"), &st->ino) ||
	    jv_u64(jv_get(pos, "chunk"), &st->chunk) || jv_u64(jv_get(st->j, "rate"), &st->rate) ||
	    jv_u64(jv_get(st->j, "bytes_per_second"), &st->bytes_per_second) ||
	    jv_u64(jv_get(st->j, "unrepaired_files_more"), &st->more) || !el ||
	    el->type != JV_NUMBER)
		return -1;
	for (int i = 0; i < 10; i++)
		if (jv_u64(jv_get(st->j, count_names[i]), &st->count[i]))
			return -1;
	memcpy(st->state, state->str, state->len);
	st->ended_known = !jv_u64(ended, &st->ended);
	st->elapsed = strtod(el->str, NULL);
	st->files = jv_get(st->j, "unrepaired_files");
	st->error = jv_get(st->j, "error");
	if (!st->files || st->files->type != JV_ARRAY)
		return -1;
	return 0;
}

/* s on stdout, control bytes as \xNN: a hostile name keeps to its line. */
static void put_name(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static void put_time(const char *label, uint64_t t)
{
	char buf[64];
	time_t tt = (time_t)t;
	struct tm tm;
	if (localtime_r(&tt, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S %z", &tm))
		printf("%-18s%s\n", label, buf);
}

/* As btrfs scrub status prints it. */
static void status_print(const struct scrub_status *st)
{
	const uint64_t *c = st->count;
	if (!strcmp(st->state, "none")) {
		printf("no scrub has run on this filesystem (" PROG " ... scrub start begins one)\n");
		return;
	}
	put_time("Scrub started:", st->started);
	printf("%-18s%s", "Status:", st->state);
	if (!strcmp(st->state, "failed") && st->error && st->error->type == JV_STRING) {
		printf(" (");
		put_name(st->error->str, st->error->len);
		printf(")");
	} else if (!strcmp(st->state, "interrupted")) {
		printf(" (by an unmount, a remount read-only or a crash: scrub resume goes on)");
	} else if (!strcmp(st->state, "cancelled")) {
		printf(" (scrub resume goes on)");
	}
	printf("\n");
	if (st->ended_known && strcmp(st->state, "running"))
		put_time("Scrub ended:", st->ended);
	unsigned secs = (unsigned)st->elapsed;
	printf("%-18s%u:%02u:%02u\n", "Duration:", secs / 3600, secs / 60 % 60, secs % 60);
	if (strcmp(st->state, "finished"))
		printf("%-18sinode %" PRIu64 ", chunk %" PRIu64 "\n", "Position:", st->ino, st->chunk);
	char done[32], total[32], rate[32], limit[32] = "none";
	size_format(c[C_BYTES], done, sizeof(done));
	size_format(c[C_TOTAL_BYTES], total, sizeof(total));
	size_format(st->bytes_per_second, rate, sizeof(rate));
	if (st->rate) {
		size_format(st->rate, limit, sizeof(limit));
		strcat(limit, "/s");
	}
	printf("%-18s%" PRIu64 " of about %" PRIu64 " (skipped: %" PRIu64 ")\n", "Chunks scrubbed:",
	       c[C_CHUNKS], c[C_TOTAL_CHUNKS], c[C_SKIPPED]);
	if (c[C_TOTAL_BYTES])
		printf("%-18s%s of about %s (%.0f%%)\n", "Bytes scrubbed:", done, total,
		       100.0 * (double)c[C_BYTES] / (double)c[C_TOTAL_BYTES]);
	else
		printf("%-18s%s\n", "Bytes scrubbed:", done);
	printf("%-18s%s/s (limit: %s)\n", "Rate:", rate, limit);
	if (!c[C_ERRORS])
		printf("%-18sno errors found\n", "Error summary:");
	else
		printf("%-18s%" PRIu64 " found\n  %-16s%" PRIu64 "\n  %-16s%" PRIu64 "\n",
		       "Error summary:", c[C_ERRORS], "Corrected:", c[C_REPAIRED], "Uncorrectable:",
		       c[C_UNREPAIRED]);
	if (c[C_REBUILT] || c[C_UNREBUILT])
		printf("%-18s%" PRIu64 " (not rebuilt: %" PRIu64 ")\n", "Copies rebuilt:",
		       c[C_REBUILT], c[C_UNREBUILT]);
	size_t n = 0;
	for (const struct jv *f = st->files->kids; f; f = f->next)
		n++;
	if (!n && !st->more)
		return;
	printf("Files with errors left (%" PRIu64 "):\n", (uint64_t)n + st->more);
	for (const struct jv *f = st->files->kids; f; f = f->next) {
		if (f->type != JV_STRING)
			continue;
		printf("  ");
		put_name(f->str, f->len);
		printf("\n");
	}
	if (st->more)
		printf("  and %" PRIu64 " more (the daemon's log names every one)\n", st->more);
}

/* Ask `scrub status`: 0 and *st, or an exit code, said. */
static int status_get(struct session *s, struct scrub_status *st, char **raw)
{
	char *answer = NULL, err[1200];
	int rc = session_ask(s, "scrub status", session_first_line, &answer, err, sizeof(err));
	if (rc) {
		free(answer);
		fprintf(stderr, PROG ": %s: scrub status: %s\n", s->where, err);
		return EXIT_FAILED;
	}
	if (!answer || status_parse(answer, st)) {
		fprintf(stderr, PROG ": %s: the scrub's status is not what this " PROG
			" understands: %.200s\n", s->where, answer ? answer : "(nothing)");
		if (st->j)
			jv_free(st->j);
		free(answer);
		return EXIT_FAILED;
	}
	if (raw)
		*raw = answer;
	else
		free(answer);
	return 0;
}

/* The exit code of a scrub that ended as st says. */
static int verdict(const struct scrub_status *st)
{
	if (!strcmp(st->state, "finished"))
		return st->count[C_UNREPAIRED] || st->count[C_UNREBUILT] ? EXIT_ERRORS_LEFT : EXIT_DONE;
	if (!strcmp(st->state, "failed"))
		return EXIT_FAILED;
	return EXIT_STOPPED; /* cancelled, interrupted */
}

/* Wait for the scrub to end (start -B), the progress on stderr. */
static int wait_end(struct session *s, volatile sig_atomic_t *stop, bool json)
{
	bool tty = isatty(2), cancelled = false;
	unsigned pause_ms = 50;
	for (;;) {
		struct scrub_status st;
		char *raw = NULL;
		int rc = status_get(s, &st, &raw);
		if (rc)
			return rc;
		if (strcmp(st.state, "running")) {
			if (tty)
				fputc('\n', stderr);
			if (json)
				printf("%s\n", raw);
			else
				status_print(&st);
			rc = verdict(&st);
			jv_free(st.j);
			free(raw);
			if (cancelled && rc == EXIT_STOPPED)
				fprintf(stderr, PROG ": scrub cancelled; scrub resume goes on from where it "
					"stopped\n");
			return rc;
		}
		if (tty) {
			char done[32], total[32];
			size_format(st.count[C_BYTES], done, sizeof(done));
			size_format(st.count[C_TOTAL_BYTES], total, sizeof(total));
			fprintf(stderr, "\rscrub: %s of about %s, %" PRIu64 " errors, %" PRIu64
				" corrected   ", done, total, st.count[C_ERRORS], st.count[C_REPAIRED]);
			fflush(stderr);
		}
		jv_free(st.j);
		free(raw);
		if (*stop && !cancelled) {
			char err[1200];
			cancelled = true;
			if (session_ask(s, "scrub cancel", NULL, NULL, err, sizeof(err)) && *err)
				fprintf(stderr, PROG ": scrub cancel: %s\n", err);
			continue;
		}
		struct timespec t = {.tv_sec = pause_ms / 1000,
				     .tv_nsec = (long)(pause_ms % 1000) * 1000000};
		nanosleep(&t, NULL);
		if (pause_ms < 200)
			pause_ms *= 2; /* then 5 asks a second: each is a line of JSON */
	}
}

int cmd_scrub(struct session *s, const char *what, bool rate_given, uint64_t rate, bool wait,
	      bool json, volatile sig_atomic_t *stop)
{
	char err[1200], req[64];
	if (!strcmp(what, "status")) {
		struct scrub_status st;
		char *raw = NULL;
		int rc = status_get(s, &st, &raw);
		if (rc)
			return rc;
		if (json)
			printf("%s\n", raw);
		else
			status_print(&st);
		jv_free(st.j);
		free(raw);
		return EXIT_DONE;
	}
	if (!strcmp(what, "cancel")) {
		if (session_ask(s, "scrub cancel", NULL, NULL, err, sizeof(err))) {
			fprintf(stderr, PROG ": %s: scrub cancel: %s\n", s->where, err);
			return EXIT_FAILED;
		}
		struct scrub_status st;
		if (status_get(s, &st, NULL) == 0) {
			printf("scrub cancelled at inode %" PRIu64 ", chunk %" PRIu64 ": scrub resume goes "
			       "on from there\n", st.ino, st.chunk);
			jv_free(st.j);
		}
		return EXIT_DONE;
	}
	bool resume = !strcmp(what, "resume");
	if (rate_given)
		snprintf(req, sizeof(req), "scrub %s %" PRIu64, resume ? "resume" : "start", rate);
	else
		snprintf(req, sizeof(req), "scrub %s", resume ? "resume" : "start");
	if (session_ask(s, req, NULL, NULL, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: scrub %s: %s\n", s->where, resume ? "resume" : "start", err);
		return EXIT_FAILED;
	}
	/* Offline the scrub runs in this process: it waits. */
	if (wait || s->fs)
		return wait_end(s, stop, json);
	printf("scrub %s on %s: " PROG " %s scrub status shows its progress\n",
	       resume ? "resumed" : "started", s->target, s->target);
	return EXIT_DONE;
}
