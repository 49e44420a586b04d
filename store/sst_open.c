/*
 * sst_open: opening and closing a table (LevelDB's Table::Open): the
 * footer, the filter, the index.  FORMAT.md "Footer", "Filter block",
 * "Index block" and "Reading rules".
 *
 * sst_open reads the footer and checks it whole (magic, version, the
 * handles inside the file and in order, zero padding), loads the filter
 * and reads the index block, then walks the whole index once: every data
 * block handle used later is then known to lie inside the data area, in
 * order, and every restart point of the index to start a whole-key entry.
 * The reader keeps the index block and the filter in memory for its whole
 * life.  A filter block or part that does not read is reported
 * (counters->report) and left out: the table is read without it; only
 * damage to the footer or the index, a missing file or a lack of memory
 * fails the open.  With the store's filter cache (counters->filters) the
 * parts are loaded as its budget allows, through part_loader, at any time
 * the cache chooses.
 *
 * Locking: a reader is built by one thread and immutable once sst_open
 * returns it; sst_close must not race any other use of it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sst_int.h"

static int check_index(struct sst_reader *r, char **msg)
{
	struct block_iter it;
	block_iter_init(&it, ikey_compare);
	block_iter_reset(&it, r->index);
	uint64_t n = 0, next_off = 0;
	int rc = 0;
	for (block_iter_seek_first(&it); block_iter_valid(&it);
	     block_iter_next(&it)) {
		struct block_handle h;
		const uint8_t *end = block_handle_decode(it.val, it.val + it.vlen, &h);
		/* Blocks follow each other in key order. */
		if (!end || end != it.val + it.vlen || it.klen < IKEY_TAG_LEN ||
		    !handle_within(&h, r->data_end) || h.offset < next_off) {
			rc = -EUCLEAN;
			break;
		}
		next_off = h.offset + h.size + BLOCK_TRAILER_SIZE;
		n++;
	}
	if (rc == 0)
		rc = it.status;
	block_iter_release(&it);
	if (rc == -EUCLEAN)
		give_msg(msg, sst_msgf("%s: index block at offset %" PRIu64
				       ": bad entry %" PRIu64, r->path,
				       r->index_handle.offset, n));
	/* Lookups binary-search the index's restart points: each must start
	 * a whole-key entry (one walk of the index, once per open). */
	if (rc == 0 && block_check_restarts(r->index)) {
		give_msg(msg, sst_msgf("%s: index block at offset %" PRIu64
				       ": a restart point is not the start of a whole-key entry",
				       r->path, r->index_handle.offset));
		rc = -EUCLEAN;
	}
	r->data_blocks = n;
	return rc;
}

/* What is wrong with the footer f (got bytes read), or NULL; fills r's
 * handles. */
static const char *footer_problem(struct sst_reader *r, const uint8_t *f, size_t got)
{
	uint64_t foot = r->size - SST_FOOTER_SIZE;
	const char *why = NULL;
	const uint8_t *p = f, *limit = f + 40;
	if (got != SST_FOOTER_SIZE)
		why = "short read (file truncated?)";
	else if (get_le32(f + 44) != SST_MAGIC)
		why = "bad magic number";
	else if (get_le32(f + 40) < 1 || get_le32(f + 40) > SST_FORMAT_VERSION)
		why = "unsupported format version";
	else if (!(p = block_handle_decode(p, limit, &r->filter_handle)) ||
		 !(p = block_handle_decode(p, limit, &r->index_handle)))
		why = "bad block handles";
	if (!why) {
		while (p < limit && *p == 0)
			p++;
		if (p != limit)
			why = "nonzero padding";
	}
	if (!why && !handle_within(&r->index_handle, foot))
		why = "index handle out of range";
	if (!why && r->filter_handle.size == 0 && r->filter_handle.offset != 0)
		why = "bad filter handle";
	if (!why && r->filter_handle.size &&
	    !handle_within(&r->filter_handle, r->index_handle.offset))
		why = "filter handle out of range";
	/* Blocks follow each other without gaps: the filter block ends
	 * where the index block starts.  A damaged filter block is read
	 * around; a damaged handle to it is damage to the footer. */
	if (!why && r->filter_handle.size &&
	    r->filter_handle.offset + r->filter_handle.size + BLOCK_TRAILER_SIZE !=
		    r->index_handle.offset)
		why = "the filter block does not end at the index block";
	if (!why)
		r->version = get_le32(f + 40);
	return why;
}

static int footer_check(void *ctx, const void *buf, size_t got)
{
	return footer_problem(ctx, buf, got) ? -EUCLEAN : 0;
}

static int read_footer(struct sst_reader *r, char **msg)
{
	if (r->size < SST_FOOTER_SIZE) {
		give_msg(msg, sst_msgf("%s: %" PRIu64 " bytes: too short for a table",
				       r->path, r->size));
		return -EUCLEAN;
	}
	uint64_t foot = r->size - SST_FOOTER_SIZE;
	uint8_t f[SST_FOOTER_SIZE];
	size_t got = 0;
	int rc = env_pread_checked(r->env, r->file, f, sizeof(f), foot, &got, footer_check, r);
	if (rc && rc != -EUCLEAN) {
		give_msg(msg, sst_msgf("%s: footer at offset %" PRIu64 ": read failed: %s",
				       r->path, foot, strerror(-rc)));
		return rc;
	}
	const char *why = footer_problem(r, f, got);
	if (why) {
		give_msg(msg, sst_msgf("%s: footer at offset %" PRIu64 ": %s", r->path,
				       foot, why));
		return -EUCLEAN;
	}
	r->data_end = r->filter_handle.size ? r->filter_handle.offset
					    : r->index_handle.offset;
	return 0;
}

/* Damage that does not fail the open: reported, one line. */
__attribute__((format(printf, 2, 3)))
static void report_damage(struct sst_reader *r, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (r->counters && r->counters->report)
		r->counters->report(r->counters->report_ctx, s);
	free(s);
}

/* Read part i of the filter into memory, or report why not (a damaged
 * part is left out: only a lack of memory fails). */
static int part_loader(void *ctx, unsigned i, void **mem, const uint8_t **data, size_t *len);
static int load_part(struct sst_reader *r, unsigned i)
{
	void *mem;
	const uint8_t *data;
	size_t len;
	int rc = part_loader(r, i, &mem, &data, &len);
	if (rc == -ENOMEM)
		return rc;
	if (!rc)
		table_filter_keep(&r->filter, i, mem, data, len);
	return 0;
}

/* filter_cache's loader: part i's bytes, checked; damage is reported and
 * is an error (the cache never tries that part again). */
static int part_loader(void *ctx, unsigned i, void **mem, const uint8_t **data, size_t *len)
{
	struct sst_reader *r = ctx;
	const struct block_handle *h = &r->filter.desc.parts[i];
	char *msg = NULL, what[32];
	if (r->version == 1)
		snprintf(what, sizeof(what), "filter block");
	else
		snprintf(what, sizeof(what), "filter part %u", i);
	int rc = sst_read_block_alloc(r, what, h, mem, data, len, &msg);
	if (rc == -ENOMEM)
		return rc;
	const char *why = rc ? NULL : filter_part_problem(&r->filter.desc.params, i, *data, *len);
	if (rc || why) {
		if (why)
			report_damage(r, "%s: filter part %u at offset %" PRIu64 ": %s; the table "
				      "is read without it", r->path, i, h->offset, why);
		else
			report_damage(r, "%s; the table is read without this filter part",
				      msg ? msg : r->path);
		free(msg);
		if (!rc)
			free(*mem);
		*mem = NULL;
		return -EUCLEAN;
	}
	return 0;
}

/* The parts go in memory: through the store's filter cache (which loads
 * what its budget allows), or all of them now. */
static int load_parts(struct sst_reader *r)
{
	if (r->counters && r->counters->filters) {
		filter_cache_attach(r->counters->filters, &r->filter, part_loader, r);
		return 0;
	}
	for (unsigned i = 0; i < r->filter.desc.nparts; i++) {
		int rc = load_part(r, i);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The filter (FORMAT.md "Filter block"): format 1 has one Bloom filter
 * block; format 2 a descriptor naming the parts, which end the data area.
 * Damage is reported and the table read without what does not read; only
 * a lack of memory fails.
 */
static int load_filter(struct sst_reader *r)
{
	if (!r->filter_handle.size)
		return 0;
	struct table_filter *f = &r->filter;
	if (r->version == 1) {
		f->desc = format1_desc(r);
		f->present = true;
		return load_parts(r);
	}
	void *mem;
	const uint8_t *data;
	size_t len;
	char *msg = NULL;
	int rc = sst_read_block_alloc(r, "filter block", &r->filter_handle, &mem, &data, &len,
				      &msg);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		report_damage(r, "%s; the table is read without its filter", msg ? msg : r->path);
		free(msg);
		return 0;
	}
	const char *why = filter_desc_decode(data, len, r->filter_handle.offset, &f->desc);
	free(mem);
	if (why) {
		report_damage(r, "%s: filter block at offset %" PRIu64 ": %s; the table is read "
		       "without its filter", r->path, r->filter_handle.offset, why);
		memset(&f->desc, 0, sizeof(f->desc));
		return 0;
	}
	f->present = true;
	if (f->desc.nparts)
		r->data_end = f->desc.parts[0].offset;
	return load_parts(r);
}

int sst_open(struct store_env *env, const char *path, uint64_t file_number,
	     uint64_t file_size, struct block_cache *cache,
	     struct sst_counters *counters, struct sst_reader **out,
	     char **errmsg)
{
	*out = NULL;
	struct sst_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->path = strdup(path);
	if (!r->path || pthread_mutex_init(&r->mu, NULL)) {
		free(r->path);
		free(r);
		return -ENOMEM;
	}
	r->env = env;
	r->number = file_number;
	r->size = file_size;
	r->cache = cache;
	r->counters = counters;

	int rc = env->ops->open_readable(env, path, &r->file);
	if (rc == -ENOENT) {
		/* The MANIFEST names this table: its absence is damage, and
		 * must never read as "no such key". */
		give_msg(errmsg, sst_msgf("%s: missing (named by the MANIFEST)", path));
		r->file = NULL;
		rc = -EUCLEAN;
		goto out;
	}
	if (rc) {
		give_msg(errmsg, sst_msgf("%s: cannot open: %s", path, strerror(-rc)));
		r->file = NULL;
		goto out;
	}
	rc = read_footer(r, errmsg);
	if (rc)
		goto out;

	void *mem;
	const uint8_t *data;
	size_t len;
	rc = load_filter(r);
	if (rc)
		goto out;
	rc = sst_read_block_alloc(r, "index block", &r->index_handle, &mem, &data,
				  &len, errmsg);
	if (rc)
		goto out;
	r->index = mem;
	if (block_init(r->index, data, len)) {
		rc = sst_bad_block(r, "index block", &r->index_handle, errmsg);
		goto out;
	}
	rc = check_index(r, errmsg);
	if (rc)
		goto out;
	*out = r;
out:
	if (rc)
		sst_close(r);
	return rc;
}

void sst_close(struct sst_reader *r)
{
	if (!r)
		return;
	/* First: the filter memory's thread may be reading a part of the
	 * filter through r->file; detaching waits for that read to end. */
	if (r->filter.attached)
		filter_cache_detach(r->counters->filters, &r->filter);
	if (r->file)
		r->env->ops->close_readable(r->file);
	free(r->index);
	table_filter_free(&r->filter);
	free(r->iter_errmsg);
	free(r->path);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

void sst_reader_set_owner(struct sst_reader *r, void *owner)
{
	r->owner = owner;
}

void *sst_reader_owner(const struct sst_reader *r)
{
	return r->owner;
}

void sst_describe(struct sst_reader *r, uint64_t *data_blocks,
		  uint64_t *filter_bytes, uint64_t *index_bytes)
{
	if (data_blocks)
		*data_blocks = r->data_blocks;
	if (filter_bytes)
		*filter_bytes = r->filter.bytes;
	if (index_bytes)
		*index_bytes = r->index->size;
}

uint64_t sst_filter_part_offset(struct sst_reader *r, unsigned part)
{
	return part < r->filter.desc.nparts ? r->filter.desc.parts[part].offset : 0;
}

void sst_describe_filter(struct sst_reader *r, unsigned *format_version,
			 struct store_filter *policy, unsigned *parts,
			 unsigned *loaded)
{
	*format_version = r->version;
	*policy = r->filter.desc.params;
	*parts = r->filter.desc.nparts;
	*loaded = (unsigned)__builtin_popcount(r->filter.loaded);
}
