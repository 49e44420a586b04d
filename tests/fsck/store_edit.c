/*
 * store_edit: a test helper that damages a filesystem's metadata store on
 * purpose, for the fsck tests.  Keys and values are given in hex.
 *   store_edit DIR get KEY        print the value in hex (exit 1 if absent)
 *   store_edit DIR put KEY VALUE
 *   store_edit DIR del KEY
 *   store_edit DIR list PREFIX    "KEY VALUE" per key that starts so
 *   store_edit DIR delprefix PREFIX   delete every key that starts so
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

static int unhex(const char *s, unsigned char **out, size_t *len)
{
	size_t n = strlen(s);
	if (n % 2)
		return -EINVAL;
	unsigned char *b = malloc(n / 2 + 1);
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1) {
			free(b);
			return -EINVAL;
		}
		b[i] = (unsigned char)v;
	}
	*out = b;
	*len = n / 2;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: store_edit DIR get|put|del KEY [VALUE]\n");
		return 2;
	}
	unsigned char *k, *v = NULL;
	size_t kl, vl = 0;
	if (unhex(argv[3], &k, &kl) || (argc > 4 && unhex(argv[4], &v, &vl))) {
		fprintf(stderr, "store_edit: bad hex\n");
		return 2;
	}
	struct store_options so;
	store_options_init(&so);
	so.create_if_missing = false;
	struct store *st;
	int rc = store_open(argv[1], &so, &st);
	if (rc) {
		fprintf(stderr, "store_edit: %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	if (!strcmp(argv[2], "get")) {
		void *val;
		size_t len;
		rc = store_get(st, NULL, k, kl, &val, &len);
		if (!rc) {
			for (size_t i = 0; i < len; i++)
				printf("%02x", ((unsigned char *)val)[i]);
			printf("\n");
			free(val);
		}
	} else if (!strcmp(argv[2], "list")) {
		struct store_iter *it;
		struct store_iter_options io = {0};
		rc = store_iter_new(st, &io, &it);
		for (store_iter_seek_first(it); !rc && store_iter_valid(it); store_iter_next(it)) {
			size_t l1, l2;
			const unsigned char *key = store_iter_key(it, &l1);
			const unsigned char *val = store_iter_value(it, &l2);
			if (l1 < kl || memcmp(key, k, kl))
				continue;
			for (size_t i = 0; i < l1; i++)
				printf("%02x", key[i]);
			printf(" ");
			for (size_t i = 0; i < l2; i++)
				printf("%02x", val[i]);
			printf("\n");
		}
		if (!rc) {
			rc = store_iter_status(it);
			store_iter_free(it);
		}
	} else if (!strcmp(argv[2], "delprefix")) {
		/* Keys first (an iterator over a store being written is a
		 * snapshot), then one synced batch. */
		struct store_iter *it;
		struct store_iter_options io = {0};
		struct store_batch *b = store_batch_new();
		rc = b ? store_iter_new(st, &io, &it) : -ENOMEM;
		if (!rc) {
			for (store_iter_seek(it, k, kl); !rc && store_iter_valid(it);
			     store_iter_next(it)) {
				size_t l1;
				const unsigned char *key = store_iter_key(it, &l1);
				if (l1 < kl || memcmp(key, k, kl))
					break;
				rc = store_batch_delete(b, key, l1);
			}
			if (!rc)
				rc = store_iter_status(it);
			store_iter_free(it);
		}
		if (!rc)
			rc = store_write(st, b, STORE_WRITE_SYNC);
		store_batch_free(b);
	} else if (!strcmp(argv[2], "put") && argc > 4) {
		rc = store_put(st, k, kl, v, vl, STORE_WRITE_SYNC);
	} else if (!strcmp(argv[2], "del")) {
		rc = store_delete(st, k, kl, STORE_WRITE_SYNC);
	} else {
		fprintf(stderr, "store_edit: unknown command %s\n", argv[2]);
		rc = -EINVAL;
	}
	int rc2 = store_close(st);
	free(k);
	free(v);
	if (rc || rc2) {
		fprintf(stderr, "store_edit: %s\n", strerror(-(rc ? rc : rc2)));
		return 1;
	}
	return 0;
}
