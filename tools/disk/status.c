/*
 * status.c: the `status` answer (fs/SCHEMA.md "Control requests") read
 * into struct status.  The text comes from the daemon: checked, never
 * trusted (sizes, indexes and counts are bounded before use).
 */
#include "disk.h"
#include "jsonread.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int u64_of(const struct jv *obj, const char *key, uint64_t *out)
{
	return jv_u64(jv_get(obj, key), out);
}

static int str_of(const struct jv *obj, const char *key, char *out, size_t cap)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type != JV_STRING || v->len >= cap || memchr(v->str, 0, v->len))
		return -EINVAL;
	memcpy(out, v->str, v->len);
	out[v->len] = '\0';
	return 0;
}

static int read_disks(const struct jv *arr, struct status *st)
{
	if (!arr || arr->type != JV_ARRAY)
		return -EINVAL;
	for (const struct jv *d = arr->kids; d; d = d->next) {
		if (st->ndisks == LSMFS_MAX_DISKS)
			return -EINVAL;
		struct disk_info *di = &st->disk[st->ndisks];
		uint64_t idx;
		char path[4096];
		if (u64_of(d, "index", &idx) || idx >= LSMFS_MAX_DISKS ||
		    str_of(d, "uuid", di->uuid, sizeof(di->uuid)) ||
		    str_of(d, "path", path, sizeof(path)) || u64_of(d, "capacity", &di->capacity) ||
		    u64_of(d, "used", &di->used) || u64_of(d, "available", &di->available) ||
		    u64_of(d, "device", &di->device) || u64_of(d, "sections", &di->sections) ||
		    u64_of(d, "bytes", &di->bytes))
			return -EINVAL;
		const struct jv *u = jv_get(d, "usable");
		di->usable = u && u->type == JV_BOOL && u->b;
		const struct jv *m = jv_get(d, "missing");
		di->missing = m && m->type == JV_BOOL && m->b;
		di->index = (uint32_t)idx;
		if (status_errors(jv_get(d, "errors"), di->errors))
			return -EINVAL;
		if (!(di->path = strdup(path)))
			return -ENOMEM;
		st->ndisks++;
	}
	return 0;
}

int status_errors(const struct jv *obj, uint64_t count[DEVSTAT_KINDS])
{
	memset(count, 0, DEVSTAT_KINDS * sizeof(*count));
	if (!obj)
		return 0; /* a daemon from before the counters */
	if (obj->type != JV_OBJECT)
		return -EINVAL;
	for (int i = 0; i < DEVSTAT_KINDS; i++) {
		const struct jv *v = jv_get(obj, devstat_names[i]);
		if (v && jv_u64(v, &count[i]))
			return -EINVAL;
	}
	return 0;
}

static int read_array(const struct jv *arr, uint32_t n, uint64_t *out, uint64_t max)
{
	if (!arr || arr->type != JV_ARRAY)
		return -EINVAL;
	uint32_t i = 0;
	for (const struct jv *v = arr->kids; v; v = v->next, i++)
		if (i >= n || jv_u64(v, &out[i]) || out[i] > max)
			return -EINVAL;
	return i == n ? 0 : -EINVAL;
}

int status_disk(const struct status *st, uint32_t d)
{
	for (uint32_t i = 0; i < st->ndisks; i++)
		if (st->disk[i].index == d)
			return (int)i;
	return -1;
}

int status_read(struct session *s, struct status *st, char *err, size_t errlen)
{
	memset(st, 0, sizeof(*st));
	char *json = NULL;
	int rc = session_ask(s, "status", session_first_line, &json, err, errlen);
	if (rc) {
		free(json);
		return rc;
	}
	if (!json) {
		snprintf(err, errlen, "the status came without its text");
		return -EIO;
	}
	st->json = json;
	struct jv *j;
	char perr[256];
	if ((rc = jv_parse(json, strlen(json), &j, perr, sizeof(perr)))) {
		snprintf(err, errlen, "the status does not parse: %s", perr);
		return -EIO;
	}
	uint64_t n, cs;
	rc = -EINVAL;
	const struct jv *on = jv_get(j, "online");
	/* Newer daemons: the data policy (absent from older ones). */
	const struct jv *data = jv_get(j, "data");
	uint64_t dc, ud;
	if (data && u64_of(data, "copies", &dc) == 0 && u64_of(data, "usable_disks", &ud) == 0) {
		st->data_copies = (uint32_t)dc;
		st->usable_disks = (uint32_t)ud;
		if (str_of(data, "placement", st->placement, sizeof(st->placement)))
			st->placement[0] = 0;
	}
	if (u64_of(j, "sections", &n) || n == 0 || n > LSMFS_MAX_SECTIONS ||
	    u64_of(j, "chunk_size", &cs) || str_of(j, "fs_uuid", st->fs_uuid, sizeof(st->fs_uuid)) ||
	    !on || on->type != JV_BOOL)
		goto out;
	st->online = on->b;
	const struct jv *copies = jv_get(j, "copies");
	st->store_disks = 0;
	st->ncopies = 0;
	for (const struct jv *c = copies && copies->type == JV_ARRAY ? copies->kids : NULL;
	     c && st->ncopies < LSMFS_MAX_META_COPIES; c = c->next) {
		uint64_t sd;
		int i = (int)st->ncopies++;
		st->copy[i].disk = -1;
		if (u64_of(c, "disk", &sd) == 0 && sd < LSMFS_MAX_DISKS) {
			st->store_disks |= 1ull << sd;
			st->copy[i].disk = (int64_t)sd;
		}
		if (str_of(c, "path", st->copy[i].path, sizeof(st->copy[i].path)))
			st->copy[i].path[0] = 0;
		if (str_of(c, "state", st->copy[i].state, sizeof(st->copy[i].state)))
			snprintf(st->copy[i].state, sizeof(st->copy[i].state), "?");
	}
	const struct jv *dg = jv_get(j, "degraded");
	st->degraded = dg && dg->type == JV_BOOL && dg->b;
	st->sections = (uint32_t)n;
	st->chunk_size = cs;
	uint64_t *map = malloc(n * sizeof(*map));
	st->section_disk = malloc(n * sizeof(*st->section_disk));
	st->section_bytes = malloc(n * sizeof(*st->section_bytes));
	if (!map || !st->section_disk || !st->section_bytes) {
		free(map);
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = read_disks(jv_get(j, "disks"), st)) ||
	    (rc = read_array(jv_get(j, "section_disk"), st->sections, map, LSMFS_MAX_DISKS - 1)) ||
	    (rc = read_array(jv_get(j, "section_bytes"), st->sections, st->section_bytes,
			     UINT64_MAX))) {
		free(map);
		goto out;
	}
	for (uint32_t i = 0; i < st->sections; i++)
		st->section_disk[i] = (uint32_t)map[i];
	free(map);
	const struct jv *r = jv_get(j, "replace");
	if (r && r->type == JV_OBJECT) { /* absent from older daemons */
		uint64_t o, nw;
		const struct jv *om = jv_get(r, "old_member");
		if (u64_of(r, "old", &o) || o >= LSMFS_MAX_DISKS || !om || om->type != JV_BOOL) {
			rc = -EINVAL;
			goto out;
		}
		st->replacing = true;
		st->replace_old = (uint32_t)o;
		st->replace_old_member = om->b;
		st->replace_new = u64_of(r, "new", &nw) == 0 && nw < LSMFS_MAX_DISKS ? (int64_t)nw : -1;
	}
	const struct jv *m = jv_get(j, "move");
	if (m && m->type == JV_OBJECT) {
		uint64_t sec, from, to;
		if (u64_of(m, "section", &sec) || u64_of(m, "from", &from) || u64_of(m, "to", &to) ||
		    u64_of(m, "bytes_done", &st->move_done) || u64_of(m, "bytes_total", &st->move_total) ||
		    str_of(m, "state", st->move_state, sizeof(st->move_state))) {
			rc = -EINVAL;
			goto out;
		}
		st->moving = true;
		st->move_section = (uint32_t)sec;
		st->move_from = (uint32_t)from;
		st->move_to = (uint32_t)to;
	}
	rc = 0;
out:
	jv_free(j);
	if (rc == -EINVAL)
		snprintf(err, errlen, "the status is not what this lsmfs-disk understands");
	else if (rc)
		snprintf(err, errlen, "reading the status: %s", strerror(-rc));
	return rc;
}

void status_free(struct status *st)
{
	for (uint32_t i = 0; i < st->ndisks; i++)
		free(st->disk[i].path);
	free(st->section_disk);
	free(st->section_bytes);
	free(st->json);
	memset(st, 0, sizeof(*st));
}

int status_find_disk(const struct status *st, const char *disk)
{
	char *end;
	errno = 0;
	unsigned long i = strtoul(disk, &end, 10);
	if (*disk && !*end && !errno)
		return i < LSMFS_MAX_DISKS ? status_disk(st, (uint32_t)i) : -1;
	char *path = realpath(disk, NULL);
	int found = -1;
	for (uint32_t j = 0; j < st->ndisks; j++)
		if (!strcmp(st->disk[j].path, path ? path : disk) ||
		    (st->disk[j].missing && !strcmp(st->disk[j].path, disk)))
			found = (int)j;
	free(path);
	return found;
}

int status_find_gone(const struct status *st, const char *disk, const char *cmd)
{
	int at = -1;
	if (!strcmp(disk, "missing")) {
		for (uint32_t i = 0; i < st->ndisks; i++)
			if (st->disk[i].missing) {
				if (at >= 0) {
					fprintf(stderr, PROG ": more than one disk is missing: name one\n");
					return -1;
				}
				at = (int)i;
			}
		if (at < 0)
			fprintf(stderr, PROG ": no disk is missing\n");
		return at;
	}
	if ((at = status_find_disk(st, disk)) < 0) {
		fprintf(stderr, PROG ": %s: not a disk of this filesystem\n", disk);
		return -1;
	}
	if (st->disk[at].usable) {
		fprintf(stderr, PROG ": disk %u (%s) is there: --lost is for a disk that is gone "
			"(mount -o degraded without it); %s it without --lost%s\n", st->disk[at].index,
			st->disk[at].path, cmd, " (with --evacuate when it fails)");
		return -1;
	}
	return at;
}
