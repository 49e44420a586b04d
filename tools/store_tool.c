/*
 * store-tool: offline inspection of an lsmfs store directory, through
 * store.h alone.
 *
 *   store-tool verify DIR            check every checksum (store_verify)
 *   store-tool dump DIR [WHAT ...]   WHAT: manifest tables keys logs
 *                                    (default: manifest tables)
 *   store-tool stats DIR             open read-only, print counters and
 *                                    the per-level table
 *
 * verify and dump open nothing for writing; stats opens the store with
 * read_only set (no log replay writes, no compaction).  Output lines from
 * the store (findings, dumped items) go to stdout as they come; errors are
 * one line on stderr, "store-tool: what: why".
 *
 * Exit codes: 0 clean, 1 corruption found, 2 usage, 3 any other error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define PROG "store-tool"
#define MIB (1024.0 * 1024.0)

enum { EXIT_CLEAN = 0, EXIT_CORRUPT = 1, EXIT_USAGE = 2, EXIT_ERROR = 3 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " verify DIR\n"
		"       " PROG " dump DIR [manifest|tables|keys|logs ...]\n"
		"       " PROG " stats DIR\n"
		"       " PROG " --help\n"
		"\n"
		"verify  read every file the MANIFEST names and every commit log,\n"
		"        checking every checksum; print each problem, then\n"
		"        \"DIR: OK\" or \"DIR: N problems\"\n"
		"dump    print the MANIFEST, the tables, every key, or the commit\n"
		"        logs (default: manifest tables)\n"
		"stats   open the store read-only and print its counters and levels\n"
		"\n"
		"Exit: 0 clean, 1 corruption, 2 usage, 3 other error.\n");
}

static int usage_error(const char *msg)
{
	fprintf(stderr, PROG ": %s (try --help)\n", msg);
	return EXIT_USAGE;
}

/* Reports from the store while opening (a cut log tail, corruption). */
static void log_line(void *ctx, const char *msg)
{
	(void)ctx; /* the store's messages already name the file */
	fprintf(stderr, PROG ": %s\n", msg);
}

struct report_ctx {
	unsigned long lines;
	long summary_problems; /* from the summary line; -1 if none seen */
};

/*
 * Print one line from the store.  store_verify() reports progress lines as
 * well as problems and ends with "DIR: T tables checked, P problems"; store.h
 * gives no count, so P is taken from that line when it is there, and the
 * number of lines otherwise.
 */
static void report_line(void *ctx, const char *line)
{
	struct report_ctx *rc = ctx;
	const char *tail = strrchr(line, ':');
	unsigned long long tables;
	long problems;
	char word[16];
	rc->lines++;
	if (tail && sscanf(tail, ": %llu tables checked, %ld %15s", &tables,
			   &problems, word) == 3 && !strncmp(word, "problem", 7))
		rc->summary_problems = problems;
	printf("%s\n", line);
}

/* Map a store error to the exit code, printing "store-tool: what: why". */
static int fail(const char *what, const char *dir, int rc)
{
	fprintf(stderr, PROG ": %s %s: %s\n", what, dir, strerror(-rc));
	return rc == -EUCLEAN ? EXIT_CORRUPT : EXIT_ERROR;
}

static void offline_options(struct store_options *opt, const char *dir)
{
	store_options_init(opt);
	opt->create_if_missing = false;
	opt->read_only = true;
	opt->log = log_line;
	opt->log_ctx = (void *)dir;
}

static int cmd_verify(const char *dir)
{
	struct store_options opt;
	struct report_ctx ctx = { .summary_problems = -1 };
	offline_options(&opt, dir);
	int rc = store_verify(dir, &opt, report_line, &ctx);
	fflush(stdout);
	if (rc == 0) {
		printf("%s: OK\n", dir);
		return EXIT_CLEAN;
	}
	if (rc == -EUCLEAN) {
		unsigned long n = ctx.summary_problems > 0 ?
			(unsigned long)ctx.summary_problems : ctx.lines;
		if (n == 0)
			n = 1;
		printf("%s: %lu problem%s\n", dir, n, n == 1 ? "" : "s");
		return EXIT_CORRUPT;
	}
	return fail("verify", dir, rc);
}

static int cmd_dump(const char *dir, int nwhat, char **what)
{
	static const char *const kinds[] = { "manifest", "tables", "keys", "logs" };
	static char *const defaults[] = { "manifest", "tables" };
	if (nwhat == 0) {
		nwhat = 2;
		what = (char **)defaults;
	}
	for (int i = 0; i < nwhat; i++) {
		bool known = false;
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			known |= strcmp(what[i], kinds[k]) == 0;
		if (!known) {
			fprintf(stderr, PROG ": dump: unknown item '%s' "
				"(manifest, tables, keys, logs)\n", what[i]);
			return EXIT_USAGE;
		}
	}
	struct store_options opt;
	offline_options(&opt, dir);
	for (int i = 0; i < nwhat; i++) {
		struct report_ctx ctx = { .summary_problems = -1 };
		int rc = store_dump(dir, &opt, what[i], report_line, &ctx);
		fflush(stdout);
		if (rc) {
			char label[64];
			snprintf(label, sizeof(label), "dump %s", what[i]);
			return fail(label, dir, rc);
		}
	}
	return EXIT_CLEAN;
}

static int cmd_stats(const char *dir)
{
	struct store_options opt;
	struct store *st;
	offline_options(&opt, dir);
	int rc = store_open(dir, &opt, &st);
	if (rc)
		return fail("open", dir, rc);
	struct store_stats s;
	store_get_stats(st, &s);
	printf("%s:\n", dir);
	/* The state first, then the counters (store.h STORE_COUNTERS) but
	 * the state and the filters' (storebench stats shows those). */
#define P(field) printf("  %-26s %" PRIu64 "\n", #field, s.field)
	P(last_sequence);
	P(memtable_bytes);
#define C(kind, field, key, word)                             \
	if (STORE_COUNTER_##kind != STORE_COUNTER_FILTER &&   \
	    STORE_COUNTER_##kind != STORE_COUNTER_NOW)        \
		P(field);
	STORE_COUNTERS(C)
#undef C
#undef P
	if (s.user_bytes_written)
		printf("  %-26s %.2f\n", "write_amp", store_stats_write_amp(&s));
	uint64_t files = 0, bytes = 0;
	printf("  %-5s %7s %12s %10s\n", "level", "files", "bytes", "MiB");
	for (int l = 0; l < STORE_MAX_LEVELS; l++) {
		printf("  L%-4d %7" PRIu64 " %12" PRIu64 " %10.1f\n", l,
		       s.level_files[l], s.level_bytes[l], s.level_bytes[l] / MIB);
		files += s.level_files[l];
		bytes += s.level_bytes[l];
	}
	printf("  %-5s %7" PRIu64 " %12" PRIu64 " %10.1f\n", "total", files,
	       bytes, bytes / MIB);
	rc = store_close(st);
	if (rc)
		return fail("close", dir, rc);
	return EXIT_CLEAN;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return EXIT_CLEAN;
	}
	if (argc < 3)
		return usage_error(argc < 2 ? "missing command" : "missing DIR");
	const char *cmd = argv[1], *dir = argv[2];
	if (!strcmp(cmd, "verify")) {
		if (argc != 3)
			return usage_error("verify takes only DIR");
		return cmd_verify(dir);
	}
	if (!strcmp(cmd, "dump"))
		return cmd_dump(dir, argc - 3, argv + 3);
	if (!strcmp(cmd, "stats")) {
		if (argc != 3)
			return usage_error("stats takes only DIR");
		return cmd_stats(dir);
	}
	fprintf(stderr, PROG ": unknown command '%s' (try --help)\n", cmd);
	return EXIT_USAGE;
}
