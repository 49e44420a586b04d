/*
 * memtable: a skiplist of internal keys in an arena.  FORMAT.md "Memtable".
 *
 * Memory.  Everything a memtable holds comes from an arena of BLOCK_SIZE
 * blocks; an allocation larger than a quarter block gets a block of its own
 * so that a big value does not waste the tail of the current one.  The
 * arena fills two blocks at a time: one for skiplist nodes, one for the
 * encoded entries.  Keeping nodes apart makes them dense, so a search (which
 * nearly always decides on the node alone) touches far fewer cache lines
 * than if every node sat next to its value.  Nothing is freed until the last
 * reference goes, when every block is released at once.  memory_usage is
 * the bytes of blocks malloc'd (with their headers) plus the head node: what
 * the write buffer trigger must count.
 *
 * Skiplist.  Each entry is a node and an encoded entry (FORMAT.md):
 *
 *     node:  next[height-1] .. next[1] next[0] | header
 *     entry: varint32 ikey_len | ikey | varint32 vlen | value
 *
 * A node pointer points at the header; its links lie just below it, level
 * 0 nearest, so the link a search follows and the key it compares share a
 * cache line.  The header caches what comparisons need (pointer and length
 * of the user key in the entry, the tag, and the first 16 user-key bytes
 * as two big-endian integers) so that a search never decodes a varint and
 * usually decides on the cached prefix without touching the entry: the
 * filesystem's keys share their first 8 bytes within a directory (type
 * byte and parent inode), and bytes 8..15 hold an inode's last byte or a
 * name's first seven.  Order is
 * ikey_compare's: user key ascending (memcmp, shorter first), then tag
 * descending; the comparison is inlined here rather than called through a
 * pointer because inserts are the hot path of every write.  Heights are 1..12 with
 * P(h > n) = 4^-n, drawn from a per-memtable xorshift generator.
 *
 * Invariants: at level i the list is sorted and is a sublist of level i-1;
 * (user key, tag) pairs are unique (the caller never reuses a sequence);
 * a node's header, entry and own next pointers are fully written before
 * the node is linked anywhere, and it is linked bottom-up, so a reader that
 * can reach a node sees all of it.
 *
 * Concurrency: one writer at a time (callers serialize memtable_add), any
 * number of readers without locks.  next pointers are _Atomic: the writer
 * publishes with release stores, readers load with acquire.  max_height is
 * read relaxed: a reader that sees a new height early finds NULL (or the
 * new node) in the head's upper levels, which is still a correct list.
 * count and memory_usage are relaxed counters written only by the writer.
 * The reference count is atomic; the final unref frees the arena, so an
 * iterator or a value from memtable_get is valid while a reference is held.
 */
#include "memtable.h"

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "coding.h"
#include "dbformat.h"

#define MAX_HEIGHT 12
/* Small blocks keep memory_usage close to the bytes held, so that small
 * write buffers (tests use 64 KiB) still hold many entries. */
#define BLOCK_SIZE 4096
/* Allocations above this get a block of their own. */
#define BIG_ALLOC (BLOCK_SIZE / 4)
/* The two current blocks of the arena. */
enum { ARENA_NODES, ARENA_ENTRIES };

struct node {
	uint64_t prefix; /* first 8 user-key bytes, big-endian, zero padded */
	uint64_t prefix2; /* the next 8, likewise */
	uint64_t tag;	 /* seq << 8 | type */
	const uint8_t *ukey; /* the user key inside the entry; tag follows */
	uint32_t ulen;
	uint32_t vlen;
};

/* A node's links sit below its header: level 0 at n[-1], level i at
 * n[-1-i]. */
typedef _Atomic(struct node *) link_t;

static inline link_t *link_of(const struct node *n, int level)
{
	return (link_t *)n - 1 - level;
}

struct block {
	struct block *next;
	size_t size; /* of the whole malloc, header included */
	alignas(max_align_t) unsigned char data[];
};

struct memtable {
	_Atomic int refs;
	_Atomic int max_height;
	_Atomic uint64_t count;
	_Atomic size_t usage;
	struct node *head; /* MAX_HEIGHT next pointers, no key */

	/* Writer-only state. */
	uint64_t rng;
	struct arena_cursor {
		unsigned char *ptr; /* free space in a current block */
		size_t left;
	} cursor[2]; /* ARENA_NODES, ARENA_ENTRIES */
	struct block *blocks; /* all blocks, newest first */
	/* The last node added and, per level below splice_height, a node
	 * < every key after it (itself below its height, else its
	 * predecessor there): where the next add starts when its key comes
	 * after (RocksDB's splice), so that keys added in order (a
	 * sequential fill, a compaction's output replayed) cost one
	 * comparison per level instead of a search from the head. */
	struct node *last;
	struct node *splice[MAX_HEIGHT];
	int splice_height;
};

/* ---- arena ---- */

static struct block *block_new(struct memtable *m, size_t bytes)
{
	size_t size = sizeof(struct block) + bytes;
	struct block *b = malloc(size);
	if (!b)
		return NULL;
	b->size = size;
	b->next = m->blocks;
	m->blocks = b;
	atomic_store_explicit(&m->usage,
			      atomic_load_explicit(&m->usage, memory_order_relaxed) + size,
			      memory_order_relaxed);
	return b;
}

/* Memory for the writer from one of the arena's current blocks, 8-byte
 * aligned for nodes, unaligned for entries; NULL on allocation failure
 * (with nothing changed but possibly a new, still empty block). */
static void *arena_alloc(struct memtable *m, int which, size_t bytes)
{
	struct arena_cursor *c = &m->cursor[which];
	if (which == ARENA_NODES)
		bytes = (bytes + 7) & ~(size_t)7;
	if (bytes <= c->left) {
		void *p = c->ptr;
		c->ptr += bytes;
		c->left -= bytes;
		return p;
	}
	if (bytes > BIG_ALLOC) {
		/* The current block keeps its free tail for later entries. */
		struct block *b = block_new(m, bytes);
		return b ? b->data : NULL;
	}
	struct block *b = block_new(m, BLOCK_SIZE);
	if (!b)
		return NULL;
	c->ptr = b->data + bytes;
	c->left = BLOCK_SIZE - bytes;
	return b->data;
}

/* ---- keys ---- */

/* The first 8 bytes of k as a big-endian integer, zero padded.  Padding
 * keeps the order: if two prefixes differ, the first differing byte is
 * either a real difference or the end of the shorter key, which memcmp
 * order also puts first. */
static inline uint64_t key_prefix(const uint8_t *k, size_t len)
{
	uint64_t v = 0;
	if (len >= 8) {
		memcpy(&v, k, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		v = __builtin_bswap64(v);
#endif
		return v;
	}
	for (size_t i = 0; i < len; i++)
		v |= (uint64_t)k[i] << (56 - 8 * i);
	return v;
}

/* Bytes 8..15 of k, as key_prefix. */
static inline uint64_t key_prefix2(const uint8_t *k, size_t len)
{
	return len > 8 ? key_prefix(k + 8, len - 8) : 0;
}

/* A search key, decoded once. */
struct skey {
	uint64_t prefix, prefix2;
	uint64_t tag;
	const uint8_t *ukey;
	size_t ulen;
};

static inline void skey_init(struct skey *s, const uint8_t *ukey, size_t ulen,
			     uint64_t tag)
{
	s->prefix = key_prefix(ukey, ulen);
	s->prefix2 = key_prefix2(ukey, ulen);
	s->tag = tag;
	s->ukey = ukey;
	s->ulen = ulen;
}

/* <0, 0, >0 as node n orders before, equal to, after s (ikey_compare). */
static inline int node_cmp(const struct node *n, const struct skey *s)
{
	if (n->prefix != s->prefix)
		return n->prefix < s->prefix ? -1 : 1;
	if (n->ulen > 8 || s->ulen > 8) {
		if (n->prefix2 != s->prefix2)
			return n->prefix2 < s->prefix2 ? -1 : 1;
		/* Equal prefixes: both keys share their first min(len, 16)
		 * bytes, so only the rest can differ. */
		size_t a = n->ulen, b = s->ulen, len = a < b ? a : b;
		if (len > 16) {
			int r = memcmp(n->ukey + 16, s->ukey + 16, len - 16);
			if (r)
				return r;
		}
		if (a != b)
			return a < b ? -1 : 1;
	} else if (n->ulen != s->ulen) {
		return n->ulen < s->ulen ? -1 : 1;
	}
	/* Newer (larger tag) first. */
	return n->tag > s->tag ? -1 : n->tag < s->tag ? 1 : 0;
}

static inline struct node *next_of(const struct node *n, int level)
{
	return atomic_load_explicit(link_of(n, level), memory_order_acquire);
}

static inline const uint8_t *node_value(const struct node *n)
{
	const uint8_t *p = n->ukey + n->ulen + IKEY_TAG_LEN;
	return p + varint_len(n->vlen);
}

/* ---- skiplist ---- */

static inline int height_now(const struct memtable *m)
{
	return atomic_load_explicit(&m->max_height, memory_order_relaxed);
}

/*
 * The first node >= s, or NULL.  With prev, also the last node < s at
 * every level below the current height (what an insert links after).
 */
static struct node *find_ge(const struct memtable *m, const struct skey *s,
			    struct node **prev)
{
	struct node *x = m->head;
	struct node *last_bigger = NULL; /* known >= s: skip comparing again */
	int level = height_now(m) - 1;
	for (;;) {
		struct node *next = next_of(x, level);
		if (next && next != last_bigger) {
			/* The search descends from x sooner or later: start
			 * fetching the nodes it would meet there while next
			 * is compared, so that the cache misses overlap. */
			if (level > 0)
				__builtin_prefetch(next_of(x, level - 1));
			if (level > 1)
				__builtin_prefetch(next_of(x, level - 2));
			if (node_cmp(next, s) < 0) {
				x = next;
				continue;
			}
		}
		if (prev)
			prev[level] = x;
		if (level == 0)
			return next;
		last_bigger = next;
		level--;
	}
}

/* find_ge's prev for s, the writer's, when s orders after m->last. */
static void find_prev_after_last(const struct memtable *m, const struct skey *s,
				 struct node **prev)
{
	struct node *x = m->head;
	bool moved = false;
	for (int level = height_now(m) - 1; level >= 0; level--) {
		/* Every start is < s: the splice's nodes are <= last < s.
		 * Until the walk moves, the splice's node at this level is
		 * at or after x (a lower level's predecessor of last is
		 * never before a higher level's); after, x may be further. */
		if (!moved)
			x = level < m->splice_height ? m->splice[level] : m->head;
		for (;;) {
			struct node *next = next_of(x, level);
			if (!next || node_cmp(next, s) >= 0)
				break;
			x = next;
			moved = true;
		}
		prev[level] = x;
	}
}

/* The last node < s, or the head. */
static struct node *find_lt(const struct memtable *m, const struct skey *s)
{
	struct node *x = m->head;
	int level = height_now(m) - 1;
	for (;;) {
		struct node *next = next_of(x, level);
		if (next && node_cmp(next, s) < 0) {
			x = next;
		} else {
			if (level == 0)
				return x;
			level--;
		}
	}
}

/* The last node, or the head when empty. */
static struct node *find_last(const struct memtable *m)
{
	struct node *x = m->head;
	int level = height_now(m) - 1;
	for (;;) {
		struct node *next = next_of(x, level);
		if (next) {
			x = next;
		} else {
			if (level == 0)
				return x;
			level--;
		}
	}
}

static int random_height(struct memtable *m)
{
	/* xorshift64 */
	uint64_t r = m->rng;
	r ^= r << 13;
	r ^= r >> 7;
	r ^= r << 17;
	m->rng = r;
	/* Use the high bits, the better mixed ones: 2 bits per level, so
	 * each extra level has probability 1/4. */
	r >>= 32;
	int h = 1;
	while (h < MAX_HEIGHT && (r & 3) == 0) {
		h++;
		r >>= 2;
	}
	return h;
}

/* ---- public ---- */

struct memtable *memtable_new(void)
{
	struct memtable *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	size_t head_size = sizeof(struct node) + MAX_HEIGHT * sizeof(link_t);
	link_t *head_links = calloc(1, head_size);
	if (!head_links) {
		free(m);
		return NULL;
	}
	m->head = (struct node *)(head_links + MAX_HEIGHT);
	for (int i = 0; i < MAX_HEIGHT; i++)
		atomic_init(link_of(m->head, i), NULL);
	atomic_init(&m->refs, 1);
	atomic_init(&m->max_height, 1);
	atomic_init(&m->count, 0);
	atomic_init(&m->usage, head_size);
	/* Any nonzero seed will do; a fixed one keeps runs reproducible. */
	m->rng = 0x9e3779b97f4a7c15ULL;
	return m;
}

void memtable_ref(struct memtable *m)
{
	atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void memtable_unref(struct memtable *m)
{
	if (!m)
		return;
	if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1)
		return;
	struct block *b = m->blocks;
	while (b) {
		struct block *next = b->next;
		free(b);
		b = next;
	}
	free(link_of(m->head, MAX_HEIGHT - 1));
	free(m);
}

int memtable_add(struct memtable *m, uint64_t seq, int type, const void *key,
		 size_t klen, const void *val, size_t vlen)
{
	if (klen > UINT32_MAX - IKEY_TAG_LEN || vlen > UINT32_MAX)
		return -EINVAL; /* not encodable as varint32 lengths */
	uint32_t ilen = (uint32_t)klen + IKEY_TAG_LEN;
	int height = random_height(m);
	size_t node_size = sizeof(struct node) + (size_t)height * sizeof(link_t);
	size_t entry_size = (size_t)varint_len(ilen) + ilen +
			    (size_t)varint_len(vlen) + vlen;
	/* Nothing is linked until the memory is ours: a failure leaves the
	 * list as it was. */
	uint8_t *p = arena_alloc(m, ARENA_ENTRIES, entry_size);
	if (!p)
		return -ENOMEM;
	link_t *links = arena_alloc(m, ARENA_NODES, node_size);
	if (!links)
		return -ENOMEM;
	struct node *x = (struct node *)(links + height);

	p = put_varint32(p, ilen);
	x->ukey = p;
	if (klen)
		memcpy(p, key, klen);
	p += klen;
	x->tag = ikey_pack_tag(seq, type);
	put_le64(p, x->tag);
	p += IKEY_TAG_LEN;
	p = put_varint32(p, (uint32_t)vlen);
	if (vlen)
		memcpy(p, val, vlen);
	x->ulen = (uint32_t)klen;
	x->vlen = (uint32_t)vlen;
	x->prefix = key_prefix(key, klen);
	x->prefix2 = key_prefix2(key, klen);

	struct skey s = { x->prefix, x->prefix2, x->tag, x->ukey, klen };
	struct node *prev[MAX_HEIGHT];
	if (m->last && node_cmp(m->last, &s) < 0)
		find_prev_after_last(m, &s, prev);
	else
		find_ge(m, &s, prev);
	int cur = height_now(m);
	if (height > cur) {
		for (int i = cur; i < height; i++)
			prev[i] = m->head;
		atomic_store_explicit(&m->max_height, height, memory_order_relaxed);
	}
	for (int i = 0; i < height; i++) {
		/* The writer is alone: its own loads need no ordering. */
		struct node *succ = atomic_load_explicit(link_of(prev[i], i),
							 memory_order_relaxed);
		atomic_store_explicit(link_of(x, i), succ, memory_order_relaxed);
		atomic_store_explicit(link_of(prev[i], i), x, memory_order_release);
	}
	int top = height > cur ? height : cur;
	for (int i = 0; i < top; i++)
		m->splice[i] = i < height ? x : prev[i];
	m->splice_height = top;
	m->last = x;
	atomic_store_explicit(&m->count,
			      atomic_load_explicit(&m->count, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	return 0;
}

enum memtable_lookup memtable_get(struct memtable *m, const void *key,
				  size_t klen, uint64_t seq,
				  const uint8_t **val, size_t *vlen)
{
	struct skey s;
	skey_init(&s, key, klen, ikey_pack_tag(seq, KTYPE_SEEK));
	struct node *n = find_ge(m, &s, NULL);
	if (!n || n->prefix != s.prefix || n->ulen != klen ||
	    (klen > 8 && memcmp(n->ukey + 8, (const uint8_t *)key + 8, klen - 8)))
		return MEMTABLE_MISSING;
	if ((n->tag & 0xff) == KTYPE_DELETE)
		return MEMTABLE_DELETED;
	*val = node_value(n);
	*vlen = n->vlen;
	return MEMTABLE_FOUND;
}

size_t memtable_memory_usage(const struct memtable *m)
{
	return atomic_load_explicit(&m->usage, memory_order_relaxed);
}

uint64_t memtable_count(const struct memtable *m)
{
	return atomic_load_explicit(&m->count, memory_order_relaxed);
}

/* ---- iterator ---- */

struct mt_iter {
	struct iter base;
	struct memtable *m;
	struct node *node; /* NULL when not valid */
};

static struct node *real_node(const struct memtable *m, struct node *n)
{
	return n == m->head ? NULL : n;
}

static bool mi_valid(struct iter *it)
{
	return ((struct mt_iter *)it)->node != NULL;
}

static void mi_seek_first(struct iter *it)
{
	struct mt_iter *i = (struct mt_iter *)it;
	i->node = next_of(i->m->head, 0);
}

static void mi_seek_last(struct iter *it)
{
	struct mt_iter *i = (struct mt_iter *)it;
	i->node = real_node(i->m, find_last(i->m));
}

/* The target as a search key; short targets order as ikey_compare orders
 * them (empty user key, tag 0). */
static void target_skey(struct skey *s, const uint8_t *t, size_t len)
{
	if (len < IKEY_TAG_LEN)
		skey_init(s, t, 0, 0);
	else
		skey_init(s, t, len - IKEY_TAG_LEN, get_le64(t + len - IKEY_TAG_LEN));
}

static void mi_seek(struct iter *it, const uint8_t *t, size_t len)
{
	struct mt_iter *i = (struct mt_iter *)it;
	struct skey s;
	target_skey(&s, t, len);
	i->node = find_ge(i->m, &s, NULL);
}

static void mi_next(struct iter *it)
{
	struct mt_iter *i = (struct mt_iter *)it;
	i->node = next_of(i->node, 0);
}

static void mi_prev(struct iter *it)
{
	/* No back pointers: search for the last node before this one. */
	struct mt_iter *i = (struct mt_iter *)it;
	struct node *n = i->node;
	struct skey s = { n->prefix, n->prefix2, n->tag, n->ukey, n->ulen };
	i->node = real_node(i->m, find_lt(i->m, &s));
}

static const uint8_t *mi_key(struct iter *it, size_t *len)
{
	struct node *n = ((struct mt_iter *)it)->node;
	*len = (size_t)n->ulen + IKEY_TAG_LEN;
	return n->ukey;
}

static const uint8_t *mi_value(struct iter *it, size_t *len)
{
	struct node *n = ((struct mt_iter *)it)->node;
	*len = n->vlen;
	return node_value(n);
}

static int mi_status(struct iter *it)
{
	(void)it;
	return 0;
}

static void mi_destroy(struct iter *it)
{
	struct mt_iter *i = (struct mt_iter *)it;
	memtable_unref(i->m);
	free(i);
}

static const struct iter_ops memtable_iter_ops = {
	.valid = mi_valid,
	.seek_first = mi_seek_first,
	.seek_last = mi_seek_last,
	.seek = mi_seek,
	.next = mi_next,
	.prev = mi_prev,
	.key = mi_key,
	.value = mi_value,
	.status = mi_status,
	.destroy = mi_destroy,
};

struct iter *memtable_iter_new(struct memtable *m)
{
	struct mt_iter *i = calloc(1, sizeof(*i));
	if (!i)
		return NULL;
	i->base.ops = &memtable_iter_ops;
	memtable_ref(m);
	i->m = m;
	i->node = NULL;
	return &i->base;
}
