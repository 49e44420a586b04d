/*
 * levels.c: the levels command: the store's LSM tree as its MANIFEST
 * describes it (store/FORMAT.md "MANIFEST"), through store_list_tables:
 * every level's tables with their sizes and user-key ranges (in words, as
 * keys prints them), and the lifetime write totals the MANIFEST carries
 * (tag 7), from which the write amplification over the store's whole life.
 */
#include "inspect.h"

#include <inttypes.h>
#include <string.h>

static void totals_json(struct json *j, const struct store_totals *t)
{
	json_obj(j, "lifetime");
	/* The TOTAL counters of store.h's STORE_COUNTERS, by their keys. */
#define PUT(kind, field, key, word) STORE_IF_TOTAL(kind, json_u64(j, key, t->field);)
	STORE_COUNTERS(PUT)
#undef PUT
	json_dbl(j, "write_amplification", store_totals_write_amp(t));
	json_close_obj(j);
}

static void totals_text(FILE *out, const struct store_totals *t)
{
	char wa[32] = "n/a (nothing written yet)";
	if (t->user_bytes_written)
		snprintf(wa, sizeof(wa), "%.2f", store_totals_write_amp(t));
	fprintf(out,
		"write amplification so far: %s (user %" PRIu64 " bytes; log %" PRIu64
		", flush %" PRIu64 ", compaction %" PRIu64 ", manifest %" PRIu64 ")\n"
		"  as of the store's last flush, compaction or close\n",
		wa, t->user_bytes_written, t->wal_bytes_written, t->flush_bytes_written,
		t->compaction_bytes_written, t->manifest_bytes_written);
}

static void table_line(struct insp *in, struct json *j, const struct store_table_info *t)
{
	char a[1100], b[1100];
	insp_key_words(t->smallest, t->smallest_len, a, sizeof(a));
	insp_key_words(t->largest, t->largest_len, b, sizeof(b));
	if (!j) {
		fprintf(in->out, "  %06" PRIu64 ".sst %10" PRIu64 " bytes  %s .. %s\n", t->number,
			t->size, a, b);
		return;
	}
	json_obj(j, NULL);
	json_u64(j, "number", t->number);
	json_u64(j, "size", t->size);
	json_str(j, "smallest", a);
	json_str(j, "largest", b);
	json_hex(j, "smallest_hex", t->smallest, t->smallest_len);
	json_hex(j, "largest_hex", t->largest, t->largest_len);
	json_close_obj(j);
}

int insp_levels(struct insp *in)
{
	struct store_table_info *t;
	size_t n;
	struct store_totals tot;
	struct store_options so;
	store_options_init(&so);
	so.log = insp_store_log;
	int rc = store_list_tables(in->ds->meta_dir, &so, &t, &n, &tot);
	if (rc)
		return insp_command_end(in, rc);
	struct json j, *jp = NULL;
	if (in->json) {
		jp = &j;
		json_begin(&j, in->out);
		json_str(&j, "store", in->ds->meta_dir);
		totals_json(&j, &tot);
		json_arr(&j, "levels");
	}
	size_t i = 0;
	for (int l = 0; l < STORE_MAX_LEVELS; l++) {
		size_t first = i;
		uint64_t bytes = 0;
		while (i < n && t[i].level == l)
			bytes += t[i++].size;
		if (jp) {
			json_obj(&j, NULL);
			json_u64(&j, "level", (uint64_t)l);
			json_u64(&j, "tables", i - first);
			json_u64(&j, "bytes", bytes);
			json_arr(&j, "files");
		} else {
			fprintf(in->out, "level %d: %zu table%s, %" PRIu64 " bytes\n", l, i - first,
				i - first == 1 ? "" : "s", bytes);
		}
		for (size_t x = first; x < i; x++)
			table_line(in, jp, &t[x]);
		if (jp) {
			json_close_arr(&j);
			json_close_obj(&j);
		}
	}
	if (jp) {
		json_close_arr(&j);
		json_end(&j);
	} else {
		totals_text(in->out, &tot);
	}
	store_tables_free(t, n);
	return INSPECT_EXIT_OK;
}
