/*
 * filter: the policies' common part: parameters, their text form, the
 * descriptor block, and the dispatch from a part to its policy.
 * FILTERS.md, FORMAT.md "Filter block".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "filter.h"

uint64_t filter_hash(const void *key, size_t len)
{
	return XXH3_64bits(key, len);
}

void store_filter_default(struct store_filter *p)
{
	*p = (struct store_filter){.kind = STORE_FILTER_BLOOM, .bits = 10, .units = 1};
}

int store_filter_check(const struct store_filter *p)
{
	switch (p->kind) {
	case STORE_FILTER_NONE:
		return 0;
	case STORE_FILTER_BLOOM:
		return p->bits >= 1 && p->bits <= 64 ? 0 : -EINVAL;
	case STORE_FILTER_ELASTIC:
		return p->bits >= 1 && p->bits <= 64 && p->units >= 2 &&
			       p->units <= FILTER_MAX_PARTS
		       ? 0
		       : -EINVAL;
	case STORE_FILTER_QUOTIENT:
		return p->bits >= 2 && p->bits <= 32 ? 0 : -EINVAL;
	}
	return -EINVAL;
}

/* An unsigned decimal that is all of s, in [1, 1000]; 0 otherwise. */
static unsigned small_number(const char *s, const char *end)
{
	unsigned v = 0;
	if (s == end)
		return 0;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9' || v > 1000)
			return 0;
		v = v * 10 + (unsigned)(*s - '0');
	}
	return v <= 1000 ? v : 0;
}

int store_filter_parse(const char *s, struct store_filter *out)
{
	struct store_filter p = {0};
	const char *colon = strchr(s, ':');
	size_t nlen = colon ? (size_t)(colon - s) : strlen(s);
	const char *arg = colon ? colon + 1 : NULL, *end = arg ? arg + strlen(arg) : NULL;
	if (nlen == 4 && !memcmp(s, "none", 4) && !arg) {
		p.kind = STORE_FILTER_NONE;
	} else if (nlen == 5 && !memcmp(s, "bloom", 5)) {
		p = (struct store_filter){STORE_FILTER_BLOOM, arg ? small_number(arg, end) : 10, 1};
	} else if (nlen == 7 && !memcmp(s, "elastic", 7)) {
		p = (struct store_filter){STORE_FILTER_ELASTIC, 2, 6};
		if (arg) {
			const char *x = strchr(arg, 'x');
			if (!x)
				return -EINVAL;
			p.units = small_number(arg, x);
			p.bits = small_number(x + 1, end);
		}
	} else if (nlen == 8 && !memcmp(s, "quotient", 8)) {
		p = (struct store_filter){STORE_FILTER_QUOTIENT, arg ? small_number(arg, end) : 8, 1};
	} else {
		return -EINVAL;
	}
	if (store_filter_check(&p))
		return -EINVAL;
	*out = p;
	return 0;
}

void store_filter_format(const struct store_filter *p, char *buf, size_t len)
{
	switch (p->kind) {
	case STORE_FILTER_NONE:
		snprintf(buf, len, "none");
		return;
	case STORE_FILTER_BLOOM:
		snprintf(buf, len, "bloom:%u", p->bits);
		return;
	case STORE_FILTER_ELASTIC:
		snprintf(buf, len, "elastic:%ux%u", p->units, p->bits);
		return;
	case STORE_FILTER_QUOTIENT:
		snprintf(buf, len, "quotient:%u", p->bits);
		return;
	}
	snprintf(buf, len, "policy %u", (unsigned)p->kind);
}

unsigned filter_parts(const struct store_filter *p)
{
	switch (p->kind) {
	case STORE_FILTER_NONE:
		return 0;
	case STORE_FILTER_ELASTIC:
		return p->units;
	default:
		return 1;
	}
}

uint64_t filter_size_estimate(const struct store_filter *p, uint64_t n)
{
	switch (p->kind) {
	case STORE_FILTER_NONE:
		return 0;
	case STORE_FILTER_BLOOM:
		return n * p->bits / 8 + 9;
	case STORE_FILTER_ELASTIC:
		return (n * p->bits / 8 + 9) * p->units;
	case STORE_FILTER_QUOTIENT:
		return quotient_size_estimate(p->bits, n);
	}
	return 0;
}

void filter_build_part(const struct store_filter *p, const uint64_t *hashes,
		       size_t n, unsigned part, struct buf *out)
{
	switch (p->kind) {
	case STORE_FILTER_BLOOM:
		bloom_build_seeded(out, hashes, n, p->bits, 0);
		return;
	case STORE_FILTER_ELASTIC:
		/* Unit u probes with seed u + 1: independent of the standard
		 * filter's probes and of every other unit's. */
		bloom_build_seeded(out, hashes, n, p->bits, part + 1);
		return;
	case STORE_FILTER_QUOTIENT:
		quotient_build(out, hashes, n, p->bits);
		return;
	case STORE_FILTER_NONE:
		return;
	}
}

bool filter_part_may_contain(const struct store_filter *p, unsigned part,
			     const uint8_t *bytes, size_t len, uint64_t h)
{
	switch (p->kind) {
	case STORE_FILTER_BLOOM:
		return bloom_test_seeded(bytes, len, h, 0);
	case STORE_FILTER_ELASTIC:
		return bloom_test_seeded(bytes, len, h, part + 1);
	case STORE_FILTER_QUOTIENT:
		return quotient_may_contain(bytes, len, h);
	case STORE_FILTER_NONE:
		return true;
	}
	return true;
}

const char *filter_part_problem(const struct store_filter *p, unsigned part,
				const uint8_t *bytes, size_t len)
{
	(void)part;
	switch (p->kind) {
	case STORE_FILTER_BLOOM:
	case STORE_FILTER_ELASTIC:
		return bloom_problem(bytes, len);
	case STORE_FILTER_QUOTIENT:
		return quotient_problem(bytes, len);
	case STORE_FILTER_NONE:
		return NULL;
	}
	return "unknown policy";
}

/* ---- the descriptor block: FORMAT.md "Filter block" ---- */

void filter_desc_encode(const struct filter_desc *d, struct buf *out)
{
	buf_put_u8(out, (uint8_t)d->params.kind);
	buf_put_varint32(out, d->params.bits);
	buf_put_varint32(out, d->params.units);
	buf_put_varint64(out, d->keys);
	buf_put_varint32(out, d->nparts);
	for (unsigned i = 0; i < d->nparts; i++)
		block_handle_encode(out, &d->parts[i]);
}

const char *filter_desc_decode(const uint8_t *p, size_t len, uint64_t before,
			       struct filter_desc *d)
{
	const uint8_t *limit = p + len;
	uint32_t bits, units, nparts;
	memset(d, 0, sizeof(*d));
	if (len < 1)
		return "empty descriptor";
	d->params.kind = (enum store_filter_kind)*p++;
	if (!(p = get_varint32(p, limit, &bits)) || !(p = get_varint32(p, limit, &units)) ||
	    !(p = get_varint64(p, limit, &d->keys)) || !(p = get_varint32(p, limit, &nparts)))
		return "truncated descriptor";
	d->params.bits = bits;
	d->params.units = units;
	if (d->params.kind == STORE_FILTER_NONE || store_filter_check(&d->params))
		return "unknown policy or parameters out of range";
	if (nparts != filter_parts(&d->params))
		return "wrong number of parts for the policy";
	d->nparts = nparts;
	uint64_t end = 0;
	for (unsigned i = 0; i < nparts; i++) {
		struct block_handle *h = &d->parts[i];
		if (!(p = block_handle_decode(p, limit, h)))
			return "truncated part handle";
		if ((i > 0 && h->offset != end) || h->size > before ||
		    before - h->size < BLOCK_TRAILER_SIZE ||
		    h->offset > before - h->size - BLOCK_TRAILER_SIZE)
			return "part handles not consecutive or out of range";
		end = h->offset + h->size + BLOCK_TRAILER_SIZE;
	}
	if (p != limit)
		return "trailing bytes";
	if (nparts && end != before)
		return "the parts do not end at the descriptor";
	return NULL;
}

/* ---- the filter of an open table ---- */

bool table_filter_may_contain(const struct table_filter *f, uint64_t h)
{
	for (uint32_t m = f->loaded; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctz(m);
		if (!filter_part_may_contain(&f->desc.params, i, f->data[i], f->len[i], h))
			return false;
	}
	return true;
}

void table_filter_keep(struct table_filter *f, unsigned i, void *mem,
		       const uint8_t *data, size_t len)
{
	f->mem[i] = mem;
	f->data[i] = data;
	f->len[i] = len;
	f->loaded |= 1u << i;
	f->bytes += len;
}

void table_filter_free(struct table_filter *f)
{
	for (unsigned i = 0; i < FILTER_MAX_PARTS; i++)
		free(f->mem[i]);
	memset(f, 0, sizeof(*f));
}
