/*
 * fuzz_block: the block decoder (store/block.c, FORMAT.md "Block payload"),
 * under the checksum that guards it on disk, so that every mutation
 * reaches the parser.  The input is one block payload (data or index).
 * Runs block_init, then iterates forwards and backwards and seeks, as the
 * table reader does, in internal-key order; index blocks are walked again
 * decoding each value as a block handle.
 *
 * Promises checked: block_init answers 0 or -EUCLEAN; an iterator's status
 * is 0 or -EUCLEAN; a valid iterator's key and value lie inside the block
 * or its key buffer (ASan); walks end (bounded by the entry count a block
 * of this size can hold).
 */
#include <errno.h>

#include "block.h"
#include "dbformat.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned touch(const uint8_t *p, size_t n)
{
	unsigned s = 0;
	for (size_t i = 0; i < n; i++)
		s += p[i];
	return s;
}

/* Every entry is at least 3 bytes (three varints): more steps than that
 * means the iterator does not advance. */
static void walk(struct block_iter *it, size_t size, bool forward, unsigned *sum)
{
	size_t steps = 0;
	forward ? block_iter_seek_first(it) : block_iter_seek_last(it);
	while (block_iter_valid(it)) {
		fuzz_check(++steps <= size / 3 + 1, "%zu steps over a %zu-byte block", steps, size);
		*sum += touch(it->key, it->klen) + touch(it->val, it->vlen);
		struct block_handle h;
		(void)block_handle_decode(it->val, it->val + it->vlen, &h);
		forward ? block_iter_next(it) : block_iter_prev(it);
	}
	fuzz_check(it->status == 0 || it->status == -EUCLEAN, "status %d", it->status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	struct block b;
	int rc = block_init(&b, data, size);
	if (rc) {
		fuzz_check(rc == -EUCLEAN, "block_init: unexpected %d", rc);
		return 0;
	}
	fuzz_check(b.restarts <= size && b.num_restarts >= 1, "restart array outside");
	struct block_iter it;
	block_iter_init(&it, ikey_compare);
	block_iter_reset(&it, &b);
	unsigned sum = 0;
	walk(&it, size, true, &sum);
	block_iter_reset(&it, &b);
	walk(&it, size, false, &sum);

	/* Seek to keys cut from the input itself, then step both ways. */
	for (size_t off = 0; off + 1 < size && off < 64; off += 7) {
		size_t len = data[off] % 24;
		if (off + 1 + len > size)
			len = size - off - 1;
		block_iter_reset(&it, &b);
		block_iter_seek(&it, data + off + 1, len);
		for (int i = 0; i < 4 && block_iter_valid(&it); i++) {
			sum += touch(it.key, it.klen);
			(i & 1) ? block_iter_prev(&it) : block_iter_next(&it);
		}
		fuzz_check(it.status == 0 || it.status == -EUCLEAN, "status %d", it.status);
	}
	block_iter_release(&it);

	/* The heap iterator the table reader hands out. */
	struct iter *hi = block_iter_new(&b, ikey_compare);
	fuzz_check(hi != NULL, "block_iter_new");
	iter_seek_last(hi);
	if (iter_valid(hi)) {
		size_t kl;
		const uint8_t *k = iter_key(hi, &kl);
		sum += touch(k, kl);
	}
	iter_destroy(hi);
	(void)sum;
	return 0;
}
