/*
 * fuzz_stats: the reader of the daemon's stats.json (tools/common/jsonread.c
 * jv_parse, and lsmfs-inspect's `stats` in tools/inspect/stats.c, which
 * reads <store>/stats.json and prints it; fs/SCHEMA.md "Statistics").  The
 * input is the file.  It is parsed and walked with every accessor, then
 * handed to insp_stats through a real file, as `lsmfs-inspect stats` and
 * `stats --json` do.
 *
 * Promises checked: jv_parse answers 0 or -EINVAL with a message naming a
 * byte offset (or -ENOMEM); nothing reads outside the text (ASan); nesting
 * never exhausts the stack; insp_stats exits 0 or 8 (damaged) and never
 * crashes or leaks.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "inspect.h"
#include "jsonread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

static void walk(const struct jv *v, int depth, unsigned *sum)
{
	for (; v; v = v->next) {
		if (v->key)
			*sum += (unsigned)strlen(v->key);
		if (v->str)
			for (size_t i = 0; i < v->len; i++)
				*sum += (uint8_t)v->str[i];
		uint64_t u;
		int64_t sec, nsec;
		if (jv_u64(v, &u) == 0)
			*sum += (unsigned)u;
		if (jv_time(v, &sec, &nsec) == 0) {
			fuzz_check(sec >= 0 && nsec >= 0 && nsec < 1000000000, "time %lld.%lld",
				   (long long)sec, (long long)nsec);
		}
		if (v->type == JV_OBJECT && v->kids && v->kids->key)
			(void)jv_get(v, v->kids->key);
		walk(v->kids, depth + 1, sum);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	struct jv *root = NULL;
	char err[128] = "";
	int rc = jv_parse((const char *)data, size, &root, err, sizeof(err));
	fuzz_check(rc == 0 || rc == -EINVAL || rc == -ENOMEM, "jv_parse: %d", rc);
	if (rc == -EINVAL)
		fuzz_check(strstr(err, "offset") || strstr(err, "byte"),
			   "a rejection without its offset: '%s'", err);
	if (rc == 0) {
		unsigned sum = 0;
		walk(root, 0, &sum);
		jv_free(root);
	}

	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		fuzz_check(devnull != NULL, "/dev/null");
		/* insp_stats says what is wrong on stderr, once an input: keep
		 * it out of the log.  The sanitizers write to fd 2 directly. */
		stderr = devnull;
	}
	char path[PATH_MAX];
	fuzz_write_file(FS_STATS_FILE, data, size, path);
	static struct lsmfs_diskset ds; /* only meta_dir is read */
	snprintf(ds.meta_dir, sizeof(ds.meta_dir), "%s", fuzz_dir());
	struct insp in = {0};
	in.ds = &ds;
	in.out = devnull;
	for (int json = 0; json < 2; json++) {
		in.json = json;
		int status = insp_stats(&in);
		fuzz_check(status == INSPECT_EXIT_OK || status == INSPECT_EXIT_OPERATIONAL,
			   "insp_stats: exit %d", status);
	}
	return 0;
}
