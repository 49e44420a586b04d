/*
 * db_files: the files of a store's directory: their names, the numbers of
 * files being written (pending outputs), and the deletion of what no live
 * version needs.  LevelDB's filename.cc and DBImpl::RemoveObsoleteFiles.
 * FORMAT.md "Directory".
 *
 * A file is obsolete when the MANIFEST no longer names it (a table no live
 * version holds, a MANIFEST older than the current one), when its writes
 * are all in tables (a commit log older than the MANIFEST's log number),
 * or when it is the leftover of an interrupted atomic write (*.tmp).  A
 * table being written is in no version yet: its number is in the pending
 * outputs from before its file is made until the edit that adds it is
 * applied, so that no deletion pass takes it.  Nothing is deleted when
 * what is live cannot be known (after a hard background error, or while a
 * MANIFEST write is in doubt).
 *
 * A leaf: it calls no other db*.c file.  Locking: the pending outputs are
 * under mu; db_delete_obsolete_files is called with mu held and drops it
 * while it lists and unlinks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"

void db_log_file_name(char *out, size_t len, const char *dir, uint64_t number)
{
	snprintf(out, len, "%s/%06" PRIu64 ".log", dir, number);
}

int db_pending_add(struct store *st, uint64_t number)
{
	if (st->npending == st->cap_pending) {
		size_t cap = st->cap_pending ? st->cap_pending * 2 : 8;
		uint64_t *p = realloc(st->pending_outputs, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		st->pending_outputs = p;
		st->cap_pending = cap;
	}
	st->pending_outputs[st->npending++] = number;
	return 0;
}

void db_pending_remove(struct store *st, uint64_t number)
{
	for (size_t i = 0; i < st->npending; i++) {
		if (st->pending_outputs[i] == number) {
			st->pending_outputs[i] = st->pending_outputs[--st->npending];
			return;
		}
	}
}

/* Classify a directory entry and extract its number. */
enum file_kind db_parse_file_name(const char *name, uint64_t *number)
{
	char *end;
	size_t n = strlen(name);
	if (n > 4 && strcmp(name + n - 4, ".tmp") == 0)
		return FK_TEMP;
	if (strncmp(name, "MANIFEST-", 9) == 0) {
		*number = strtoull(name + 9, &end, 10);
		return (*end == '\0' && end != name + 9) ? FK_MANIFEST : FK_OTHER;
	}
	if (name[0] < '0' || name[0] > '9')
		return FK_OTHER;
	*number = strtoull(name, &end, 10);
	if (strcmp(end, ".log") == 0)
		return FK_LOG;
	if (strcmp(end, ".sst") == 0)
		return FK_SST;
	return FK_OTHER;
}

int db_cmp_file_numbers(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void db_delete_obsolete_files(struct store *st)
{
	uint64_t *live = NULL;
	size_t nlive = 0;
	if (st->bg_error || version_set_manifest_in_doubt(st->vs) ||
	    version_set_live_files(st->vs, &live, &nlive)) {
		/* After a hard error, or a MANIFEST write that failed, we cannot
		 * be sure what is live: keep all. */
		free(live);
		return;
	}
	for (size_t i = 0; i < st->npending; i++) {
		uint64_t *p = realloc(live, (nlive + 1) * sizeof(*p));
		if (!p) {
			free(live);
			return;
		}
		live = p;
		live[nlive++] = st->pending_outputs[i];
	}
	qsort(live, nlive, sizeof(*live), db_cmp_file_numbers);
	uint64_t log_number = version_set_log_number(st->vs);
	uint64_t manifest_number = version_set_manifest_number(st->vs);
	/* The writer may be syncing it right now (db_write.c sync_old_log):
	 * a copy that lost it first would be dropped as failing. */
	uint64_t old_log = st->old_log_number;

	pthread_mutex_unlock(&st->mu);
	char **names = NULL;
	size_t count = 0;
	if (st->env->ops->list_dir(st->env, st->dir, &names, &count) == 0) {
		for (size_t i = 0; i < count; i++) {
			uint64_t number = 0;
			bool keep = true;
			switch (db_parse_file_name(names[i], &number)) {
			case FK_LOG:
				keep = number >= log_number || number == old_log;
				break;
			case FK_SST:
				keep = bsearch(&number, live, nlive, sizeof(*live),
					       db_cmp_file_numbers) != NULL;
				if (!keep)
					table_cache_evict(st->tables, number);
				break;
			case FK_MANIFEST:
				keep = number >= manifest_number;
				break;
			case FK_TEMP:
				keep = false;
				break;
			case FK_OTHER:
				break;
			}
			if (!keep) {
				char path[4096];
				snprintf(path, sizeof(path), "%s/%s", st->dir, names[i]);
				/* A file we fail to delete is only wasted space;
				 * the next pass tries again. */
				(void)st->env->ops->unlink(st->env, path);
			}
		}
		env_free_names(names, count);
	}
	free(live);
	pthread_mutex_lock(&st->mu);
}
