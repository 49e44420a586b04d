/*
 * key_types: prints fs/format/schema.c's key table, one type a line, in its order:
 * letter, what its number names (none, inode, section, disk), name and
 * layout, tab-separated.  test_man.py checks lsmfs-inspect's help and man
 * page against it, test_completion.sh its completion: a key type added to
 * the table and not to them fails.
 */
#include <stdio.h>

#include "schema.h"

int main(void)
{
	static const char *const ids[] = {[KEY_ID_NONE] = "none", [KEY_ID_INODE] = "inode",
					  [KEY_ID_SECTION] = "section", [KEY_ID_DISK] = "disk"};
	for (size_t i = 0; i < key_types_count; i++)
		printf("%c\t%s\t%s\t%s\n", key_types[i].letter, ids[key_types[i].id], key_types[i].name,
		       key_types[i].layout);
	return fflush(stdout) ? 1 : 0;
}
