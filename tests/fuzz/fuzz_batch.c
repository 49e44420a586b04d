/*
 * fuzz_batch: the write-batch decoder (store/batch.c, FORMAT.md "Write
 * batch"), the payload of every commit-log record that recovery replays.
 * The input is one record payload.
 *
 * Promises checked: batch_iterate accepts a batch only when it called the
 * visitor exactly `count` times with consecutive sequences; every key and
 * value it hands out lies inside the input (ASan); a rejection is -EUCLEAN.
 */
#include <errno.h>

#include "batch.h"
#include "coding.h"
#include "dbformat.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	uint64_t ops;
	uint64_t first_seq;
	uint64_t last_seq;
	unsigned sum;
};

static int visit(void *ctx, uint64_t seq, int type, const uint8_t *key,
		 size_t klen, const uint8_t *val, size_t vlen)
{
	struct seen *s = ctx;
	fuzz_check(type == KTYPE_VALUE || type == KTYPE_DELETE, "op type %d", type);
	fuzz_check(type == KTYPE_VALUE || vlen == 0, "a deletion with a value");
	if (s->ops == 0)
		s->first_seq = seq;
	else
		fuzz_check(seq == s->last_seq + 1, "sequence %llu after %llu",
			   (unsigned long long)seq, (unsigned long long)s->last_seq);
	s->last_seq = seq;
	s->ops++;
	for (size_t i = 0; i < klen; i++)
		s->sum += key[i];
	for (size_t i = 0; i < vlen; i++)
		s->sum += val[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	struct seen s = {0};
	int rc = batch_iterate(data, size, visit, &s);
	if (rc) {
		fuzz_check(rc == -EUCLEAN, "batch_iterate: unexpected %d", rc);
		return 0;
	}
	fuzz_check(size >= BATCH_HEADER_SIZE, "accepted a %zu-byte batch", size);
	fuzz_check(s.ops == get_le32(data + 8), "%llu ops for a count of %u",
		   (unsigned long long)s.ops, get_le32(data + 8));
	fuzz_check(s.ops == 0 || s.first_seq == get_le64(data), "first sequence");
	return 0;
}
