/*
 * store_counters: prints store.h's counter list (STORE_COUNTERS), one
 * counter a line, in its order: kind, field, JSON key and word,
 * tab-separated ("-" for an empty key or word).  test_counters.py checks
 * the man pages and README against it: a counter added to the list, or a
 * key renamed, and not to them fails.
 */
#include <stdio.h>

#include "store.h"

#define OR_DASH(s) ((s)[0] ? (s) : "-")

int main(void)
{
#define PRINT(kind, field, key, word) \
	printf("%s\t%s\t%s\t%s\n", #kind, #field, OR_DASH(key), OR_DASH(word));
	STORE_COUNTERS(PRINT)
#undef PRINT
	return fflush(stdout) ? 1 : 0;
}
