/*
 * fuzz_version_edit: the MANIFEST record decoder (store/version_edit.c,
 * FORMAT.md "MANIFEST", "Version edit record").  The input is one record
 * payload, as the commit-log framing hands it over.
 *
 * Promises checked: a record that decodes re-encodes to a record that
 * decodes to the same encoding again (the decoder keeps every field it
 * accepts); a rejected record leaves nothing allocated (LeakSanitizer).
 */
#include <errno.h>
#include <string.h>

#include "coding.h"
#include "fuzz_util.h"
#include "version.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	data = FUZZ_NONNULL(data);
	struct version_edit e;
	int rc = version_edit_decode(&e, data, size);
	if (rc) {
		fuzz_check(rc == -EUCLEAN, "version_edit_decode: unexpected %d", rc);
		return 0;
	}
	struct buf a, b;
	buf_init(&a);
	buf_init(&b);
	version_edit_encode(&e, &a);
	version_edit_free(&e);
	fuzz_check(buf_ok(&a) == 0, "encode: out of memory");
	rc = version_edit_decode(&e, FUZZ_NONNULL(a.data), a.len);
	fuzz_check(rc == 0, "a re-encoded edit does not decode: %d", rc);
	version_edit_encode(&e, &b);
	version_edit_free(&e);
	fuzz_check(a.len == b.len && (a.len == 0 || !memcmp(a.data, b.data, a.len)),
		   "re-encoding changed the edit (%zu vs %zu bytes)", a.len, b.len);
	buf_free(&a);
	buf_free(&b);
	return 0;
}
