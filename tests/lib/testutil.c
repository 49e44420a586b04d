/*
 * testutil: helpers shared by the store test suites (see testutil.h).
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- environment ---- */

bool tu_soak(void)
{
	const char *s = getenv("LSMFS_SOAK");
	return s && *s && strcmp(s, "0") != 0;
}

uint64_t tu_env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end) {
		fprintf(stderr, "testutil: bad %s=%s, using %llu\n", name, s,
			(unsigned long long)def);
		return def;
	}
	return v;
}

uint64_t tu_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t tu_seed(const char *what)
{
	uint64_t seed;
	const char *s = getenv("LSMFS_SEED");
	if (s && *s) {
		seed = tu_env_u64("LSMFS_SEED", 1);
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = tu_mix64((uint64_t)ts.tv_sec * 1000000000ull +
				(uint64_t)ts.tv_nsec) ^ (uint64_t)getpid();
		/* Keep it short enough to type. */
		seed %= 1000000000000ull;
	}
	fprintf(stderr, "%s%sseed=%llu (replay: LSMFS_SEED=%llu)\n",
		what ? what : "", what ? ": " : "", (unsigned long long)seed,
		(unsigned long long)seed);
	return seed;
}

/* ---- directories ---- */

char *tu_mkdtemp(const char *tag)
{
	char tmpl[256];
	snprintf(tmpl, sizeof(tmpl), "/tmp/lsmfs-%s-XXXXXX", tag ? tag : "test");
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		abort();
	}
	char *p = strdup(tmpl);
	if (!p)
		abort();
	return p;
}

int tu_rmrf(const char *path)
{
	struct stat sb;
	if (lstat(path, &sb) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(sb.st_mode))
		return unlink(path) == 0 ? 0 : -errno;
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char sub[4096];
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		int r = tu_rmrf(sub);
		if (r && !rc)
			rc = r;
	}
	closedir(d);
	if (rmdir(path) != 0 && !rc)
		rc = -errno;
	return rc;
}

static int copy_file(const char *from, const char *to)
{
	int rc = 0;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				rc = -errno;
				goto out;
			}
			off += w;
		}
	}
out:
	close(in);
	if (close(out) != 0 && !rc)
		rc = -errno;
	return rc;
}

int tu_copy_dir(const char *src, const char *dst)
{
	if (mkdir(dst, 0755) != 0 && errno != EEXIST)
		return -errno;
	DIR *d = opendir(src);
	if (!d)
		return -errno;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char from[4096], to[4096];
		snprintf(from, sizeof(from), "%s/%s", src, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", dst, de->d_name);
		struct stat sb;
		if (lstat(from, &sb) != 0 || !S_ISREG(sb.st_mode))
			continue;
		rc = copy_file(from, to);
		if (rc)
			break;
	}
	closedir(d);
	return rc;
}

/* ---- PRNG ---- */

uint64_t tu_mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void tu_rng_init(struct tu_rng *r, uint64_t seed)
{
	r->s = seed;
}

uint64_t tu_rng_next(struct tu_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t tu_rng_below(struct tu_rng *r, uint64_t n)
{
	if (n <= 1)
		return 0;
	/* Rejection sampling keeps it exactly uniform. */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;
	do
		x = tu_rng_next(r);
	while (x >= lim);
	return x % n;
}

uint64_t tu_rng_range(struct tu_rng *r, uint64_t lo, uint64_t hi)
{
	return lo + tu_rng_below(r, hi - lo + 1);
}

bool tu_rng_chance(struct tu_rng *r, uint64_t num, uint64_t den)
{
	return tu_rng_below(r, den) < num;
}

/* ---- data ---- */

uint64_t tu_hash(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void tu_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *b = buf;
	struct tu_rng r;
	tu_rng_init(&r, seed);
	size_t i = 0;
	while (i + 8 <= len) {
		uint64_t x = tu_rng_next(&r);
		memcpy(b + i, &x, 8);
		i += 8;
	}
	if (i < len) {
		uint64_t x = tu_rng_next(&r);
		memcpy(b + i, &x, len - i);
	}
}

size_t tu_key(uint8_t *buf, uint64_t idx)
{
	uint64_t g = idx / 4;
	uint64_t h = tu_mix64(g ^ 0x5bd1e995ull);
	size_t n = 0;
	/* The first byte spreads groups over the whole byte range (binary
	 * keys, 0x00 and 0xff included); bytes 1..3 name the group, so keys of
	 * different groups always differ. */
	buf[n++] = (uint8_t)h;
	buf[n++] = (uint8_t)(g >> 16);
	buf[n++] = (uint8_t)(g >> 8);
	buf[n++] = (uint8_t)g;
	size_t tail = (size_t)((h >> 8) % 31);
	tu_fill(buf + n, tail, h);
	n += tail;
	switch (idx % 4) {
	case 0: /* the base: a prefix of the other three */
		break;
	case 1: /* base + NUL: sorts right after the base */
		buf[n++] = 0;
		break;
	case 2:
		buf[n++] = 'a';
		break;
	default: { /* base + "a" + a long tail */
		buf[n++] = 'a';
		size_t t2 = 1 + (size_t)((h >> 16) % 100);
		tu_fill(buf + n, t2, h ^ 0xabcdefull);
		n += t2;
		break;
	}
	}
	return n;
}

size_t tu_probe_key(struct tu_rng *r, uint8_t *buf, uint64_t nkeys)
{
	size_t n = tu_key(buf, tu_rng_below(r, nkeys));
	switch (tu_rng_below(r, 8)) {
	case 0: /* append a byte */
		buf[n++] = (uint8_t)tu_rng_next(r);
		break;
	case 1: /* drop bytes */
		n -= (size_t)tu_rng_below(r, n + 1);
		break;
	case 2: /* change the last byte */
		if (n)
			buf[n - 1] = (uint8_t)(buf[n - 1] + (tu_rng_chance(r, 1, 2) ? 1 : 255));
		break;
	case 3: /* a short random key */
		n = (size_t)tu_rng_range(r, 0, 3);
		tu_fill(buf, n, tu_rng_next(r));
		break;
	default: /* the key itself */
		break;
	}
	return n;
}

size_t tu_value_len(struct tu_rng *r, size_t max)
{
	uint64_t c = tu_rng_below(r, 10);
	size_t hi;
	if (c < 6)
		hi = 64;
	else if (c < 9)
		hi = 512;
	else
		hi = max;
	if (hi > max)
		hi = max;
	return (size_t)tu_rng_range(r, 0, hi);
}

int tu_keycmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

char *tu_fmtkey(char *buf, size_t cap, const void *key, size_t len)
{
	const uint8_t *k = key;
	size_t o = 0;
	if (cap == 0)
		return buf;
	buf[0] = 0;
	o += (size_t)snprintf(buf, cap, "[%zu]", len);
	for (size_t i = 0; i < len && o + 5 < cap; i++) {
		if (k[i] >= 0x21 && k[i] < 0x7f && k[i] != '\\')
			buf[o++] = (char)k[i];
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", k[i]);
	}
	if (o >= cap)
		o = cap - 1;
	buf[o] = 0;
	return buf;
}

/* ---- log collector ---- */

void tu_log_init(struct tu_log *l, bool echo)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	l->echo = echo;
}

void tu_log_clear(struct tu_log *l)
{
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->n; i++)
		free(l->lines[i]);
	l->n = 0;
	pthread_mutex_unlock(&l->mu);
}

void tu_log_free(struct tu_log *l)
{
	tu_log_clear(l);
	free(l->lines);
	l->lines = NULL;
	l->cap = 0;
	pthread_mutex_destroy(&l->mu);
}

void tu_log_fn(void *ctx, const char *msg)
{
	struct tu_log *l = ctx;
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	if (l->echo)
		fprintf(stderr, "  store: %s\n", msg);
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 16;
		char **nl = realloc(l->lines, nc * sizeof(*nl));
		if (!nl) {
			pthread_mutex_unlock(&l->mu);
			return;
		}
		l->lines = nl;
		l->cap = nc;
	}
	char *s = strdup(msg ? msg : "(null)");
	if (s)
		l->lines[l->n++] = s;
	pthread_mutex_unlock(&l->mu);
}

bool tu_log_contains(struct tu_log *l, const char *needle)
{
	bool found = false;
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->n && !found; i++)
		found = strstr(l->lines[i], needle) != NULL;
	pthread_mutex_unlock(&l->mu);
	return found;
}

size_t tu_log_count(struct tu_log *l)
{
	pthread_mutex_lock(&l->mu);
	size_t n = l->n;
	pthread_mutex_unlock(&l->mu);
	return n;
}

void tu_log_dump(struct tu_log *l, const char *prefix)
{
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->n; i++)
		fprintf(stderr, "%s%s\n", prefix ? prefix : "", l->lines[i]);
	pthread_mutex_unlock(&l->mu);
}

/* ---- self-describing values ---- */

void tu_val_make(uint8_t *buf, uint64_t opid, uint32_t sub, uint32_t vlen)
{
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)(opid >> (8 * i));
	for (int i = 0; i < 4; i++) {
		buf[8 + i] = (uint8_t)(sub >> (8 * i));
		buf[12 + i] = (uint8_t)(vlen >> (8 * i));
	}
	tu_fill(buf + TU_VAL_HDR, vlen - TU_VAL_HDR,
		tu_mix64(opid * 1024 + sub) ^ 0x7c3u);
}

bool tu_val_decode(const void *v, size_t len, uint64_t *opid, uint32_t *sub)
{
	const uint8_t *b = v;
	if (len < TU_VAL_HDR || len > (1u << 20))
		return false;
	uint64_t o = 0;
	uint32_t s = 0, l = 0;
	for (int i = 0; i < 8; i++)
		o |= (uint64_t)b[i] << (8 * i);
	for (int i = 0; i < 4; i++) {
		s |= (uint32_t)b[8 + i] << (8 * i);
		l |= (uint32_t)b[12 + i] << (8 * i);
	}
	if (l != len)
		return false;
	uint8_t *want = malloc(len);
	if (!want)
		abort();
	tu_val_make(want, o, s, l);
	bool ok = memcmp(want, b, len) == 0;
	free(want);
	if (ok) {
		*opid = o;
		*sub = s;
	}
	return ok;
}

/* ---- durability model ---- */

enum dm_state { DM_ISSUED, DM_ACKED, DM_FAILED };

struct dm_sub {
	uint32_t key;
	int32_t vlen; /* < 0: delete */
};

struct dm_op {
	struct dm_sub *subs;
	uint32_t nsub;
	uint8_t state;
	bool durable;
};

struct dm_event {
	uint64_t opid;
	uint32_t sub;
};

struct dm_key {
	struct dm_event *ev;
	size_t n, cap;
};

struct tu_dm {
	uint32_t nkeys;
	struct dm_op *ops;
	uint64_t nops, ops_cap;
	struct dm_key *keys;
	uint64_t sync_from; /* the next store_sync covers acked ops from here */
	bool lossy;         /* a power cut happened: current values unknown */
	uint64_t nfailed;
	uint64_t *cuts;     /* tu_dm_next_op() at each power cut, ascending */
	size_t ncuts;
	bool no_prefix;     /* tu_dm_check_prefix(dm, false) */
};

void tu_dm_check_prefix(struct tu_dm *dm, bool on)
{
	dm->no_prefix = !on;
}

struct tu_dm *tu_dm_new(uint32_t nkeys)
{
	struct tu_dm *dm = calloc(1, sizeof(*dm));
	if (!dm)
		abort();
	dm->nkeys = nkeys;
	dm->keys = calloc(nkeys, sizeof(*dm->keys));
	if (!dm->keys)
		abort();
	return dm;
}

void tu_dm_free(struct tu_dm *dm)
{
	if (!dm)
		return;
	for (uint64_t i = 0; i < dm->nops; i++)
		free(dm->ops[i].subs);
	free(dm->ops);
	for (uint32_t k = 0; k < dm->nkeys; k++)
		free(dm->keys[k].ev);
	free(dm->keys);
	free(dm->cuts);
	free(dm);
}

uint64_t tu_dm_next_op(const struct tu_dm *dm)
{
	return dm->nops;
}

uint64_t tu_dm_issue(struct tu_dm *dm, uint32_t nsub, const uint32_t *keys,
		     const int32_t *vlens)
{
	if (dm->nops == dm->ops_cap) {
		dm->ops_cap = dm->ops_cap ? dm->ops_cap * 2 : 1024;
		dm->ops = realloc(dm->ops, dm->ops_cap * sizeof(*dm->ops));
		if (!dm->ops)
			abort();
	}
	uint64_t id = dm->nops++;
	struct dm_op *op = &dm->ops[id];
	op->subs = calloc(nsub ? nsub : 1, sizeof(*op->subs));
	if (!op->subs)
		abort();
	op->nsub = nsub;
	op->state = DM_ISSUED;
	op->durable = false;
	for (uint32_t i = 0; i < nsub; i++) {
		op->subs[i].key = keys[i];
		op->subs[i].vlen = vlens[i];
		struct dm_key *k = &dm->keys[keys[i]];
		if (k->n == k->cap) {
			k->cap = k->cap ? k->cap * 2 : 8;
			k->ev = realloc(k->ev, k->cap * sizeof(*k->ev));
			if (!k->ev)
				abort();
		}
		k->ev[k->n].opid = id;
		k->ev[k->n].sub = i;
		k->n++;
	}
	return id;
}

void tu_dm_ack(struct tu_dm *dm, uint64_t opid, bool durable)
{
	dm->ops[opid].state = DM_ACKED;
	dm->ops[opid].durable = durable;
}

void tu_dm_fail(struct tu_dm *dm, uint64_t opid)
{
	dm->ops[opid].state = DM_FAILED;
	dm->nfailed++;
}

void tu_dm_sync_all(struct tu_dm *dm)
{
	for (uint64_t i = dm->sync_from; i < dm->nops; i++)
		if (dm->ops[i].state == DM_ACKED)
			dm->ops[i].durable = true;
	dm->sync_from = dm->nops;
}

void tu_dm_power_cut(struct tu_dm *dm)
{
	/* What was not durable before the cut may be gone: a later sync does
	 * not bring it back. */
	dm->sync_from = dm->nops;
	dm->lossy = true;
	if (dm->ncuts && dm->cuts[dm->ncuts - 1] == dm->nops)
		return; /* no op since the last cut: the same run of ops */
	dm->cuts = realloc(dm->cuts, (dm->ncuts + 1) * sizeof(*dm->cuts));
	if (!dm->cuts)
		abort();
	dm->cuts[dm->ncuts++] = dm->nops;
}

uint64_t tu_dm_failed(const struct tu_dm *dm)
{
	return dm->nfailed;
}

int tu_dm_expected(const struct tu_dm *dm, uint32_t key, uint64_t *opid,
		   uint32_t *sub, uint32_t *vlen)
{
	if (dm->nfailed || dm->lossy)
		return -1;
	const struct dm_key *k = &dm->keys[key];
	if (k->n == 0)
		return 0;
	const struct dm_event *e = &k->ev[k->n - 1];
	const struct dm_sub *s = &dm->ops[e->opid].subs[e->sub];
	if (s->vlen < 0)
		return 0;
	*opid = e->opid;
	*sub = e->sub;
	*vlen = (uint32_t)s->vlen;
	return 1;
}

static bool dm_event_durable(const struct tu_dm *dm, const struct dm_event *e,
			     bool all_acked)
{
	const struct dm_op *op = &dm->ops[e->opid];
	if (op->state != DM_ACKED)
		return false;
	return all_acked || op->durable;
}

/* true if a later sub of the same op writes the same key: the event can
 * never be seen. */
static bool dm_event_superseded(const struct tu_dm *dm, const struct dm_key *k,
				size_t i)
{
	return i + 1 < k->n && k->ev[i + 1].opid == k->ev[i].opid;
}

struct dm_obs {
	bool present;
	uint64_t opid;
	uint32_t sub;
};

#define DM_ERR(...)                                                     \
	do {                                                            \
		snprintf(err, errlen, __VA_ARGS__);                     \
		rc = -1;                                                \
		goto out;                                               \
	} while (0)

int tu_dm_verify(struct tu_dm *dm, struct store *st, bool all_acked_durable,
		 char *err, size_t errlen)
{
	int rc = 0;
	struct dm_obs *obs = calloc(dm->nkeys, sizeof(*obs));
	struct store_iter *it = NULL;
	if (!obs)
		abort();
	uint8_t key[TU_KEY_MAX];
	char kb[256];
	size_t npresent = 0;
	for (uint32_t k = 0; k < dm->nkeys; k++) {
		size_t kl = tu_key(key, k);
		void *v = NULL;
		size_t vl = 0;
		int r = store_get(st, NULL, key, kl, &v, &vl);
		if (r == -ENOENT)
			continue;
		if (r != 0)
			DM_ERR("get key #%u: %d", k, r);
		bool ok = tu_val_decode(v, vl, &obs[k].opid, &obs[k].sub);
		free(v);
		if (!ok)
			DM_ERR("key #%u %s holds garbage (%zu bytes)", k,
			       tu_fmtkey(kb, sizeof(kb), key, kl), vl);
		if (obs[k].opid >= dm->nops ||
		    obs[k].sub >= dm->ops[obs[k].opid].nsub ||
		    dm->ops[obs[k].opid].subs[obs[k].sub].key != k ||
		    dm->ops[obs[k].opid].subs[obs[k].sub].vlen != (int32_t)vl)
			DM_ERR("key #%u holds op %" PRIu64 "/%u, which never wrote it",
			       k, obs[k].opid, obs[k].sub);
		obs[k].present = true;
		npresent++;
	}

	/* Per key: the last durable value or a later one. */
	for (uint32_t k = 0; k < dm->nkeys; k++) {
		const struct dm_key *dk = &dm->keys[k];
		size_t from = 0; /* candidates: events [from, n) */
		bool absent_ok = true;
		for (size_t i = dk->n; i-- > 0;) {
			if (dm_event_durable(dm, &dk->ev[i], all_acked_durable)) {
				from = i;
				absent_ok = false;
				break;
			}
		}
		bool ok = false;
		for (size_t i = from; i < dk->n && !ok; i++) {
			if (dm_event_superseded(dm, dk, i))
				continue;
			const struct dm_event *e = &dk->ev[i];
			bool del = dm->ops[e->opid].subs[e->sub].vlen < 0;
			if (!obs[k].present)
				ok = del;
			else
				ok = !del && obs[k].opid == e->opid && obs[k].sub == e->sub;
		}
		if (!obs[k].present && absent_ok)
			ok = true;
		if (!ok) {
			char want[128] = "absent (never durably written)";
			if (!absent_ok) {
				const struct dm_event *e = &dk->ev[from];
				snprintf(want, sizeof(want), "op %" PRIu64 "/%u (%s) or later",
					 e->opid, e->sub,
					 dm->ops[e->opid].subs[e->sub].vlen < 0 ? "delete" : "put");
			}
			if (obs[k].present)
				DM_ERR("key #%u: store has op %" PRIu64 "/%u, last durable "
				       "write is %s (%zu writes to the key)", k,
				       obs[k].opid, obs[k].sub, want, dk->n);
			DM_ERR("key #%u: store has it absent, last durable write is %s "
			       "(%zu writes to the key)", k, want, dk->n);
		}
	}

	/* Recovery keeps a prefix of the writes (FORMAT.md "Recovery"): of
	 * the ops issued between two power cuts, those up to the newest one
	 * seen (h) are all there, but for keys a later op may have deleted
	 * unseen, and ops that failed (they may or may not be there). */
	if (dm->ncuts && !dm->no_prefix) {
		uint64_t h = 0;
		bool any = false;
		for (uint32_t k = 0; k < dm->nkeys; k++)
			if (obs[k].present && (!any || obs[k].opid > h))
				h = obs[k].opid, any = true;
		uint64_t from = 0; /* the first op of h's run */
		for (size_t c = 0; c < dm->ncuts; c++)
			if (dm->cuts[c] <= h)
				from = dm->cuts[c];
		for (uint32_t k = 0; any && k < dm->nkeys; k++) {
			const struct dm_key *dk = &dm->keys[k];
			size_t i = dk->n;
			while (i > 0 && dk->ev[i - 1].opid > h)
				i--;
			bool later_delete = false;
			/* A later delete, failed or not, may be there unseen. */
			for (size_t j = i; j < dk->n; j++) {
				const struct dm_event *e = &dk->ev[j];
				if (dm->ops[e->opid].subs[e->sub].vlen < 0)
					later_delete = true;
			}
			if (i == 0 || later_delete)
				continue;
			const struct dm_event *e = &dk->ev[i - 1];
			if (e->opid < from || dm->ops[e->opid].state != DM_ACKED)
				continue;
			bool del = dm->ops[e->opid].subs[e->sub].vlen < 0;
			if (del ? !obs[k].present
				: obs[k].present && obs[k].opid == e->opid &&
				  obs[k].sub == e->sub)
				continue;
			if (obs[k].present)
				DM_ERR("not a prefix: op %" PRIu64 " is there, but key #%u "
				       "holds op %" PRIu64 "/%u, not the later op %" PRIu64
				       "/%u (%s, acked, issued since the cut before it)",
				       h, k, obs[k].opid, obs[k].sub, e->opid, e->sub,
				       del ? "delete" : "put");
			DM_ERR("not a prefix: op %" PRIu64 " is there, but key #%u is "
			       "absent, not op %" PRIu64 "/%u (put, acked, issued since "
			       "the cut before it)", h, k, e->opid, e->sub);
		}
	}

	/* No batch half applied. */
	for (uint64_t b = 0; b < dm->nops; b++) {
		const struct dm_op *op = &dm->ops[b];
		if (op->nsub < 2)
			continue;
		int applied = -1, not_applied = -1;
		for (uint32_t i = 0; i < op->nsub; i++) {
			uint32_t k = op->subs[i].key;
			bool last = true;
			for (uint32_t j = i + 1; j < op->nsub; j++)
				if (op->subs[j].key == k)
					last = false;
			if (!last)
				continue;
			const struct dm_obs *o = &obs[k];
			if (op->subs[i].vlen >= 0) {
				if (o->present && o->opid == b && o->sub == i)
					applied = (int)i;
				else if (o->present && o->opid < b)
					not_applied = (int)i;
				else if (!o->present) {
					bool later_delete = false;
					const struct dm_key *dk = &dm->keys[k];
					for (size_t e = 0; e < dk->n; e++)
						if (dk->ev[e].opid > b &&
						    dm->ops[dk->ev[e].opid].subs[dk->ev[e].sub].vlen < 0)
							later_delete = true;
					if (!later_delete)
						not_applied = (int)i;
				}
			} else if (o->present && o->opid < b) {
				not_applied = (int)i;
			}
		}
		if (applied >= 0 && not_applied >= 0)
			DM_ERR("batch op %" PRIu64 " is half applied: sub %d (key #%u) "
			       "is there, sub %d (key #%u) is not", b, applied,
			       op->subs[applied].key, not_applied,
			       op->subs[not_applied].key);
	}

	/* A full scan agrees with the gets. */
	int r = store_iter_new(st, NULL, &it);
	if (r)
		DM_ERR("store_iter_new: %d", r);
	size_t seen = 0;
	for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
		size_t kl, vl;
		const void *kp = store_iter_key(it, &kl);
		const void *vp = store_iter_value(it, &vl);
		uint64_t o;
		uint32_t s;
		if (!tu_val_decode(vp, vl, &o, &s) || o >= dm->nops ||
		    s >= dm->ops[o].nsub)
			DM_ERR("scan: key %s holds garbage",
			       tu_fmtkey(kb, sizeof(kb), kp, kl));
		uint32_t k = dm->ops[o].subs[s].key;
		size_t wl = tu_key(key, k);
		if (tu_keycmp(key, wl, kp, kl) != 0)
			DM_ERR("scan: key %s holds the value of key #%u",
			       tu_fmtkey(kb, sizeof(kb), kp, kl), k);
		if (!obs[k].present || obs[k].opid != o || obs[k].sub != s)
			DM_ERR("scan: key #%u shows op %" PRIu64 "/%u, get disagreed",
			       k, o, s);
		seen++;
	}
	r = store_iter_status(it);
	if (r)
		DM_ERR("scan: iterator status %d", r);
	if (seen != npresent)
		DM_ERR("scan saw %zu keys, gets found %zu", seen, npresent);
out:
	if (it)
		store_iter_free(it);
	free(obs);
	return rc;
}

/* ---- workload ---- */

void tu_wl_init(struct tu_wl *wl, const struct tu_wl_config *cfg)
{
	memset(wl, 0, sizeof(*wl));
	wl->cfg = *cfg;
	tu_rng_init(&wl->rng, cfg->seed);
	wl->dm = tu_dm_new(cfg->nkeys);
	wl->last_op = "none";
}

void tu_wl_free(struct tu_wl *wl)
{
	tu_dm_free(wl->dm);
	wl->dm = NULL;
}

static int wl_note(struct tu_wl *wl, const char *what, int rc)
{
	wl->last_op = what;
	if (rc && rc != -ENOENT) {
		if (!wl->first_error) {
			wl->first_error = rc;
			wl->first_error_op = what;
		}
		wl->nerrors++;
	}
	return rc;
}

int tu_wl_open(struct tu_wl *wl)
{
	if (wl->st)
		return 0;
	int rc = store_open(wl->cfg.dir, &wl->cfg.opt, &wl->st);
	if (rc)
		wl->st = NULL;
	return wl_note(wl, "open", rc);
}

int tu_wl_close(struct tu_wl *wl)
{
	if (!wl->st)
		return 0;
	int rc = store_close(wl->st);
	wl->st = NULL;
	return wl_note(wl, "close", rc);
}

static int wl_write(struct tu_wl *wl)
{
	uint32_t keys[16];
	int32_t vlens[16];
	uint64_t k = tu_rng_below(&wl->rng, 100);
	uint32_t nsub = k < 70 ? 1 : (uint32_t)tu_rng_range(&wl->rng, 2, 16);
	bool single_delete = k >= 55 && k < 70;
	for (uint32_t i = 0; i < nsub; i++) {
		if (i > 0 && tu_rng_chance(&wl->rng, 1, 8))
			keys[i] = keys[tu_rng_below(&wl->rng, i)];
		else
			keys[i] = (uint32_t)tu_rng_below(&wl->rng, wl->cfg.nkeys);
		bool del = single_delete || (nsub > 1 && tu_rng_chance(&wl->rng, 1, 4));
		vlens[i] = del ? -1
			: (int32_t)(TU_VAL_HDR +
				    tu_value_len(&wl->rng, wl->cfg.max_value - TU_VAL_HDR));
	}
	unsigned flags = tu_rng_below(&wl->rng, 100) < wl->cfg.sync_write_pct
		? STORE_WRITE_SYNC : 0;
	uint64_t opid = tu_dm_issue(wl->dm, nsub, keys, vlens);
	uint8_t key[TU_KEY_MAX];
	uint8_t *val = malloc(wl->cfg.max_value);
	if (!val)
		abort();
	int rc;
	const char *what;
	if (nsub == 1 && !single_delete) {
		size_t kl = tu_key(key, keys[0]);
		tu_val_make(val, opid, 0, (uint32_t)vlens[0]);
		rc = store_put(wl->st, key, kl, val, (size_t)vlens[0], flags);
		what = "put";
	} else if (single_delete) {
		size_t kl = tu_key(key, keys[0]);
		rc = store_delete(wl->st, key, kl, flags);
		what = "delete";
	} else {
		struct store_batch *b = store_batch_new();
		if (!b)
			abort();
		rc = 0;
		for (uint32_t i = 0; i < nsub && !rc; i++) {
			size_t kl = tu_key(key, keys[i]);
			if (vlens[i] < 0) {
				rc = store_batch_delete(b, key, kl);
			} else {
				tu_val_make(val, opid, i, (uint32_t)vlens[i]);
				rc = store_batch_put(b, key, kl, val, (size_t)vlens[i]);
			}
		}
		if (!rc)
			rc = store_write(wl->st, b, flags);
		store_batch_free(b);
		what = "write";
	}
	free(val);
	if (rc == 0)
		tu_dm_ack(wl->dm, opid, (flags & STORE_WRITE_SYNC) || wl->cfg.opt.sync);
	else
		tu_dm_fail(wl->dm, opid);
	return wl_note(wl, what, rc);
}

static int wl_get(struct tu_wl *wl)
{
	uint32_t k = (uint32_t)tu_rng_below(&wl->rng, wl->cfg.nkeys);
	uint8_t key[TU_KEY_MAX];
	size_t kl = tu_key(key, k);
	void *v = NULL;
	size_t vl = 0;
	int rc = store_get(wl->st, NULL, key, kl, &v, &vl);
	uint64_t eo = 0, go = 0;
	uint32_t es = 0, ev = 0, gs = 0;
	int want = tu_dm_expected(wl->dm, k, &eo, &es, &ev);
	if (want >= 0 && !wl->mismatch[0] && (rc == 0 || rc == -ENOENT)) {
		bool ok;
		if (want == 0)
			ok = rc == -ENOENT;
		else
			ok = rc == 0 && tu_val_decode(v, vl, &go, &gs) && go == eo &&
			     gs == es;
		if (!ok)
			snprintf(wl->mismatch, sizeof(wl->mismatch),
				 "step %" PRIu64 ": get key #%u: rc=%d (%zu bytes, op %"
				 PRIu64 "/%u), model: %s op %" PRIu64 "/%u", wl->steps,
				 k, rc, vl, go, gs, want ? "value of" : "absent", eo, es);
	}
	if (rc == 0)
		free(v);
	return wl_note(wl, "get", rc == -ENOENT ? 0 : rc);
}

int tu_wl_step(struct tu_wl *wl)
{
	wl->steps++;
	if (!wl->st) {
		int rc = tu_wl_open(wl);
		if (rc)
			return rc;
	}
	uint64_t k = tu_rng_below(&wl->rng, 1000);
	unsigned a = wl->cfg.store_sync_permille;
	unsigned b = a + wl->cfg.flush_permille;
	unsigned c = b + wl->cfg.compact_permille;
	unsigned d = c + wl->cfg.reopen_permille;
	if (k < a) {
		int rc = store_sync(wl->st);
		if (rc == 0)
			tu_dm_sync_all(wl->dm);
		return wl_note(wl, "sync", rc);
	}
	if (k < b)
		return wl_note(wl, "flush", store_flush(wl->st));
	if (k < c) {
		uint8_t lo[TU_KEY_MAX], hi[TU_KEY_MAX];
		if (tu_rng_chance(&wl->rng, 1, 3))
			return wl_note(wl, "compact",
				       store_compact_range(wl->st, NULL, 0, NULL, 0));
		size_t ll = tu_probe_key(&wl->rng, lo, wl->cfg.nkeys);
		size_t hl = tu_probe_key(&wl->rng, hi, wl->cfg.nkeys);
		if (tu_keycmp(lo, ll, hi, hl) > 0)
			return wl_note(wl, "compact",
				       store_compact_range(wl->st, hi, hl, lo, ll));
		return wl_note(wl, "compact", store_compact_range(wl->st, lo, ll, hi, hl));
	}
	if (k < d) {
		int rc = tu_wl_close(wl);
		if (rc)
			return rc;
		return tu_wl_open(wl);
	}
	if (k < d + 150)
		return wl_get(wl);
	return wl_write(wl);
}
