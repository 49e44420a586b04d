/*
 * quotient: quotient filters (Bender et al., "Don't thrash: how to cache
 * your hash on flash", 2012).  FILTERS.md "Quotient filter", FORMAT.md
 * "Quotient filter bytes".
 *
 * A key's fingerprint is the top p = q + r bits of its 64-bit hash: the
 * top q bits are its quotient fq (its canonical slot among 2^q), the next
 * r bits its remainder.  Each slot holds a remainder and three bits:
 *   occupied      this slot is the canonical slot of some stored key;
 *   continuation  this slot continues the run of the slot before;
 *   shifted       the remainder here is not in its canonical slot.
 * All remainders of one quotient lie in consecutive slots (a run), sorted;
 * runs lie in quotient order, each starting at its canonical slot or, when
 * the run before reaches it, right after that run.  A slot with all three
 * bits clear is empty.  The table does not wrap: runs pushed past slot
 * 2^q - 1 go on in overflow slots after it.
 *
 * Memory: a struct qf owns (or, for a table's filter part, views) one byte
 * array of `slots` packed (3 + r)-bit slots.  No locking.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

#define QF_HEADER 20 /* u8 version | u8 q | u8 r | u8 0 | le64 entries | le64 slots */
#define QF_VERSION 1

/* ---- slot access ---- */

static unsigned slot_bits(const struct qf *f)
{
	return f->r + 3;
}

/* The bytes holding slot i (at most 7: 43 bits from a bit offset < 8),
 * as a little-endian word. */
static uint64_t load(const struct qf *f, size_t byte, size_t n)
{
	if (f->bytes - byte >= 8)
		return get_le64(f->bits + byte); /* the compiler makes it one load */
	uint64_t w = 0;
	for (size_t j = 0; j < n; j++)
		w |= (uint64_t)f->bits[byte + j] << (8 * j);
	return w;
}

static uint64_t get_slot(const struct qf *f, uint64_t i)
{
	uint64_t bit = i * slot_bits(f);
	size_t byte = (size_t)(bit >> 3);
	size_t n = (size_t)(((bit & 7) + slot_bits(f) + 7) / 8);
	return (load(f, byte, n) >> (bit & 7)) & ((1ULL << slot_bits(f)) - 1);
}

static void put_slot(struct qf *f, uint64_t i, uint64_t v)
{
	uint64_t bit = i * slot_bits(f);
	size_t byte = (size_t)(bit >> 3);
	size_t n = (size_t)(((bit & 7) + slot_bits(f) + 7) / 8);
	uint64_t mask = ((1ULL << slot_bits(f)) - 1) << (bit & 7);
	uint64_t w = (load(f, byte, n) & ~mask) | ((v << (bit & 7)) & mask);
	if (f->bytes - byte >= 8) {
		put_le64(f->bits + byte, w); /* bytes past the slot: written back as read */
		return;
	}
	for (size_t j = 0; j < n; j++)
		f->bits[byte + j] = (uint8_t)(w >> (8 * j));
}

#define OCCUPIED 1u
#define CONTINUATION 2u
#define SHIFTED 4u

static bool occupied(const struct qf *f, uint64_t i)
{
	return get_slot(f, i) & OCCUPIED;
}

static bool continuation(const struct qf *f, uint64_t i)
{
	return get_slot(f, i) & CONTINUATION;
}

static bool shifted(const struct qf *f, uint64_t i)
{
	return get_slot(f, i) & SHIFTED;
}

static bool empty(const struct qf *f, uint64_t i)
{
	return (get_slot(f, i) & 7u) == 0;
}

static uint64_t remainder_of(const struct qf *f, uint64_t i)
{
	return get_slot(f, i) >> 3;
}

/* Slot i's remainder and its continuation and shifted bits replaced; its
 * occupied bit (a property of the slot, not of its entry) stays. */
static void set_entry(struct qf *f, uint64_t i, uint64_t rem, unsigned meta)
{
	uint64_t v = get_slot(f, i);
	put_slot(f, i, (rem << 3) | (v & OCCUPIED) | (meta & (CONTINUATION | SHIFTED)));
}

static void set_occupied(struct qf *f, uint64_t i, bool on)
{
	uint64_t v = get_slot(f, i);
	put_slot(f, i, on ? v | OCCUPIED : v & ~(uint64_t)OCCUPIED);
}

/* ---- the table ---- */

static uint64_t bytes_for(uint64_t slots, unsigned r)
{
	return (slots * (r + 3) + 7) / 8;
}

int qf_init(struct qf *f, unsigned q, unsigned r, uint64_t extra_slots)
{
	memset(f, 0, sizeof(*f));
	if (q < 1 || q > 40 || r < 1 || r > 40 || q + r > 64)
		return -EINVAL;
	f->q = q;
	f->r = r;
	f->slots = (1ULL << q) + extra_slots;
	f->bytes = (size_t)bytes_for(f->slots, r);
	f->bits = calloc(1, f->bytes);
	f->owned = true;
	return f->bits ? 0 : -ENOMEM;
}

void qf_free(struct qf *f)
{
	if (f->owned)
		free(f->bits);
	memset(f, 0, sizeof(*f));
}

uint64_t qf_fingerprint(unsigned p, uint64_t h)
{
	return p >= 64 ? h : h >> (64 - p);
}

/* The slot where the run of quotient fq starts (fq is occupied). */
static uint64_t run_start(const struct qf *f, uint64_t fq)
{
	uint64_t b = fq;
	while (b > 0 && shifted(f, b))
		b--;
	uint64_t s = b;
	while (b != fq) {
		/* Past the run that starts at s, to the next run's start. */
		do
			s++;
		while (s < f->slots && continuation(f, s));
		/* The next occupied canonical slot: that run's quotient. */
		do
			b++;
		while (b < fq && !occupied(f, b));
	}
	return s;
}

bool qf_contains(const struct qf *f, uint64_t fp)
{
	uint64_t fq = fp >> f->r, fr = fp & ((1ULL << f->r) - 1);
	if (fq >= (1ULL << f->q) || !occupied(f, fq))
		return false;
	uint64_t s = run_start(f, fq);
	while (s < f->slots) {
		uint64_t rem = remainder_of(f, s);
		if (rem == fr)
			return true;
		if (rem > fr) /* remainders are sorted within the run */
			return false;
		s++;
		if (s >= f->slots || !continuation(f, s))
			return false;
	}
	return true; /* a run that ran off the table: damage; "maybe" */
}

/*
 * Re-encode the sorted fingerprints fps[0..n) into slots from `from` on,
 * whose slots are all clear: each run starts at max(its quotient, the
 * slot after the run before).  The end slot, or -ENOSPC when the table
 * has too few slots.  Repeated fingerprints are stored once.
 */
static int64_t encode_runs(struct qf *f, uint64_t from, const uint64_t *fps, size_t n)
{
	uint64_t pos = from, rmask = (1ULL << f->r) - 1;
	uint64_t last_q = UINT64_MAX, last = 0;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && fps[i] == last)
			continue;
		last = fps[i];
		uint64_t fq = fps[i] >> f->r;
		unsigned meta = 0;
		if (fq != last_q) {
			if (pos < fq)
				pos = fq;
			last_q = fq;
			set_occupied(f, fq, true);
		} else {
			meta |= CONTINUATION;
		}
		if (pos >= f->slots)
			return -ENOSPC;
		if (pos != fq)
			meta |= SHIFTED;
		set_entry(f, pos, fps[i] & rmask, meta);
		pos++;
	}
	return (int64_t)pos;
}

/* The fingerprints of the cluster that holds slot i (i not empty), in
 * order, appended to *fps; *start and *end: the cluster's slots. */
static int decode_cluster(const struct qf *f, uint64_t i, uint64_t **fps, size_t *n,
			  size_t *cap, uint64_t *start, uint64_t *end)
{
	uint64_t b = i;
	while (b > 0 && shifted(f, b))
		b--;
	*start = b;
	uint64_t fq = b, s = b;
	bool first = true;
	for (; s < f->slots && !empty(f, s); s++) {
		if (!continuation(f, s) && !first) {
			do
				fq++;
			while (fq < s && !occupied(f, fq));
		}
		first = false;
		if (*n == *cap) {
			size_t c = *cap ? 2 * *cap : 64;
			uint64_t *p = realloc(*fps, c * sizeof(*p));
			if (!p)
				return -ENOMEM;
			*fps = p;
			*cap = c;
		}
		(*fps)[(*n)++] = (fq << f->r) | remainder_of(f, s);
	}
	*end = s;
	return 0;
}

/* Clear slots [start, end) and the occupied bits of their quotients. */
static void clear_range(struct qf *f, uint64_t start, uint64_t end)
{
	for (uint64_t s = start; s < end; s++)
		put_slot(f, s, 0);
}

/* Insert (add) or remove fp through its cluster: decode, change, re-encode. */
static int change(struct qf *f, uint64_t fp, bool add)
{
	uint64_t fq = fp >> f->r;
	if (fq >= (1ULL << f->q) || fp >> f->r >> f->q)
		return -EINVAL;
	if (add && empty(f, fq)) {
		set_occupied(f, fq, true);
		set_entry(f, fq, fp & ((1ULL << f->r) - 1), 0);
		f->entries++;
		return 0;
	}
	if (!add && !qf_contains(f, fp))
		return -ENOENT;
	if (add && qf_contains(f, fp))
		return 0; /* a set: stored once */
	uint64_t *fps = NULL, start, end;
	size_t n = 0, cap = 0;
	int rc = decode_cluster(f, fq, &fps, &n, &cap, &start, &end);
	if (rc)
		goto out;
	/* The new fingerprint's place, or the old one's. */
	size_t at = 0;
	while (at < n && fps[at] < fp)
		at++;
	if (add) {
		if (end >= f->slots) {
			rc = -ENOSPC;
			goto out;
		}
		if (n == cap) {
			uint64_t *p = realloc(fps, (cap + 1) * sizeof(*p));
			if (!p) {
				rc = -ENOMEM;
				goto out;
			}
			fps = p;
		}
		memmove(fps + at + 1, fps + at, (n - at) * sizeof(*fps));
		fps[at] = fp;
		n++;
	} else {
		memmove(fps + at, fps + at + 1, (n - at - 1) * sizeof(*fps));
		n--;
	}
	clear_range(f, start, end);
	int64_t e = encode_runs(f, start, fps, n);
	rc = e < 0 ? (int)e : 0;
	if (!rc)
		f->entries += add ? 1 : (uint64_t)-1;
out:
	free(fps);
	return rc;
}

int qf_insert(struct qf *f, uint64_t fp)
{
	return change(f, fp, true);
}

int qf_remove(struct qf *f, uint64_t fp)
{
	return change(f, fp, false);
}

void qf_iter_init(struct qf_iter *it, const struct qf *f)
{
	memset(it, 0, sizeof(*it));
	it->f = f;
	it->fq = 0;
	it->slot = 0;
	it->started = false;
}

bool qf_iter_next(struct qf_iter *it, uint64_t *fp)
{
	const struct qf *f = it->f;
	uint64_t v = 0;
	while (it->slot < f->slots && ((v = get_slot(f, it->slot)) & 7u) == 0)
		it->slot++;
	if (it->slot >= f->slots)
		return false;
	uint64_t s = it->slot;
	if (!(v & CONTINUATION)) {
		/* A run starts: its quotient is the slot itself at a cluster's
		 * start, else the next occupied slot after the last quotient. */
		uint64_t q = s;
		if (v & SHIFTED) {
			q = it->started ? it->fq + 1 : 0;
			while (q < s && !occupied(f, q))
				q++;
		}
		it->fq = q;
		it->started = true;
	}
	*fp = (it->fq << f->r) | (v >> 3);
	it->slot++;
	return true;
}

/* The smallest q with n fingerprints at most QF_MAX_LOAD of 2^q slots. */
static unsigned q_for(uint64_t n)
{
	unsigned q = 1;
	while (q < 40 && (double)n > QF_MAX_LOAD * (double)(1ULL << q))
		q++;
	return q;
}

/* Build f (q, r) from sorted fingerprints; overflow slots as needed. */
static int build_sorted(struct qf *f, unsigned q, unsigned r, const uint64_t *fps, size_t n)
{
	/* Runs never spill further past 2^q than the number of entries;
	 * they rarely spill more than a few slots. */
	uint64_t slack = (1ULL << q) / 16 + 64;
	int rc = qf_init(f, q, r, slack < n + 1 ? slack : n + 1);
	if (rc)
		return rc;
	int64_t end = encode_runs(f, 0, fps, n);
	if (end == -ENOSPC) {
		/* Rare: grow the overflow area to the bound and encode again. */
		qf_free(f);
		rc = qf_init(f, q, r, n + 1);
		if (rc)
			return rc;
		end = encode_runs(f, 0, fps, n);
	}
	if (end < 0) {
		qf_free(f);
		return (int)end;
	}
	uint64_t entries = 0;
	for (size_t i = 0; i < n; i++)
		entries += i == 0 || fps[i] != fps[i - 1];
	f->entries = entries;
	/* Trim the overflow slots to what the runs use. */
	if ((uint64_t)end > (1ULL << q)) {
		f->slots = (uint64_t)end;
		f->bytes = (size_t)bytes_for(f->slots, r);
	} else {
		f->slots = 1ULL << q;
		f->bytes = (size_t)bytes_for(f->slots, r);
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int qf_build(struct qf *f, const uint64_t *hashes, size_t n, unsigned r)
{
	unsigned q = q_for(n);
	if (q + r > 64)
		return -EINVAL;
	uint64_t *fps = malloc((n ? n : 1) * sizeof(*fps));
	if (!fps)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		fps[i] = qf_fingerprint(q + r, hashes[i]);
	qsort(fps, n, sizeof(*fps), cmp_u64);
	int rc = build_sorted(f, q, r, fps, n);
	free(fps);
	return rc;
}

/* All fingerprints of f, in order, into a new array. */
static int collect(const struct qf *f, uint64_t **out, size_t *n)
{
	uint64_t *fps = malloc((f->entries ? f->entries : 1) * sizeof(*fps));
	if (!fps)
		return -ENOMEM;
	struct qf_iter it;
	qf_iter_init(&it, f);
	size_t k = 0;
	uint64_t fp;
	while (k < f->entries && qf_iter_next(&it, &fp))
		fps[k++] = fp;
	*out = fps;
	*n = k;
	return 0;
}

int qf_merge(const struct qf *a, const struct qf *b, struct qf *out)
{
	unsigned p = a->q + a->r;
	if (b->q + b->r != p)
		return -EINVAL;
	unsigned q = q_for(a->entries + b->entries);
	if (q >= p)
		return -EINVAL; /* no remainder bit left */
	uint64_t *fps = malloc((a->entries + b->entries + 1) * sizeof(*fps));
	if (!fps)
		return -ENOMEM;
	struct qf_iter ia, ib;
	qf_iter_init(&ia, a);
	qf_iter_init(&ib, b);
	uint64_t x, y;
	bool hx = qf_iter_next(&ia, &x), hy = qf_iter_next(&ib, &y);
	size_t n = 0, cap = a->entries + b->entries;
	while ((hx || hy) && n < cap) {
		if (hx && (!hy || x <= y)) {
			fps[n++] = x;
			if (hy && x == y)
				hy = qf_iter_next(&ib, &y);
			hx = qf_iter_next(&ia, &x);
		} else {
			fps[n++] = y;
			hy = qf_iter_next(&ib, &y);
		}
	}
	int rc = build_sorted(out, q, p - q, fps, n);
	free(fps);
	return rc;
}

int qf_resize(const struct qf *f, unsigned q, struct qf *out)
{
	unsigned p = f->q + f->r;
	if (q < 1 || q >= p)
		return -EINVAL;
	uint64_t *fps;
	size_t n;
	int rc = collect(f, &fps, &n);
	if (rc)
		return rc;
	rc = build_sorted(out, q, p - q, fps, n);
	free(fps);
	return rc;
}

/* ---- the filter part's bytes: FORMAT.md "Quotient filter bytes" ---- */

void qf_encode(const struct qf *f, struct buf *out)
{
	buf_put_u8(out, QF_VERSION);
	buf_put_u8(out, (uint8_t)f->q);
	buf_put_u8(out, (uint8_t)f->r);
	buf_put_u8(out, 0);
	buf_put_le64(out, f->entries);
	buf_put_le64(out, f->slots);
	buf_append(out, f->bits, (size_t)bytes_for(f->slots, f->r));
}

const char *quotient_problem(const uint8_t *p, size_t len)
{
	if (len < QF_HEADER)
		return "shorter than its header";
	unsigned q = p[1], r = p[2];
	uint64_t entries = get_le64(p + 4), slots = get_le64(p + 12);
	if (p[0] != QF_VERSION || p[3] != 0)
		return "unknown quotient filter version";
	if (q < 1 || q > 40 || r < 1 || r > 40 || q + r > 64)
		return "quotient or remainder bits out of range";
	if (slots < (1ULL << q) || slots - (1ULL << q) > entries + 1 || entries > slots)
		return "slot count out of range";
	/* Before bytes_for: slots * (r + 3) must not wrap (a wrapped product
	 * could match a short length and send reads past the bytes). */
	if (slots > (uint64_t)(len - QF_HEADER) * 8 / (r + 3) + 1)
		return "length does not match the slot count";
	if (len - QF_HEADER != bytes_for(slots, r))
		return "length does not match the slot count";
	return NULL;
}

int qf_view(struct qf *f, const uint8_t *p, size_t len)
{
	memset(f, 0, sizeof(*f));
	if (quotient_problem(p, len))
		return -EUCLEAN;
	f->q = p[1];
	f->r = p[2];
	f->entries = get_le64(p + 4);
	f->slots = get_le64(p + 12);
	f->bits = (uint8_t *)(uintptr_t)(p + QF_HEADER); /* read only: never written */
	f->bytes = len - QF_HEADER;
	f->owned = false;
	return 0;
}

void quotient_build(struct buf *out, const uint64_t *hashes, size_t n, unsigned r)
{
	struct qf f;
	if (qf_build(&f, hashes, n, r)) {
		out->oom = true;
		return;
	}
	qf_encode(&f, out);
	qf_free(&f);
}

bool quotient_may_contain(const uint8_t *p, size_t len, uint64_t h)
{
	struct qf f;
	if (qf_view(&f, p, len))
		return true;
	return qf_contains(&f, qf_fingerprint(f.q + f.r, h));
}

uint64_t quotient_size_estimate(unsigned r, uint64_t n)
{
	unsigned q = q_for(n);
	return QF_HEADER + bytes_for(1ULL << q, r);
}
