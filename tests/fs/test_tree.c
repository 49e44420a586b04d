/* test_tree: the tree checker the crash and power-cut tests use, on the
 * trees a crash can leave that a workload never makes: an empty directory
 * (a daemon killed before the first file) and one empty subdirectory.
 * tree_check must find them consistent, and under UBSan touch no null
 * pointer (it once passed its empty list to qsort). */
#include "tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
	char root[] = "/tmp/lsmfs-tree.XXXXXX", sub[64];
	if (!mkdtemp(root)) {
		perror("test_tree: mkdtemp");
		return 1;
	}
	int fails = 0;
	struct tree_stats st;
	memset(&st, 0, sizeof(st));
	if (tree_check(root, "test_tree", NULL, NULL, &st) != 0) {
		fprintf(stderr, "test_tree: FAIL: an empty directory is not a consistent tree\n");
		fails++;
	}
	snprintf(sub, sizeof(sub), "%s/d", root);
	if (mkdir(sub, 0755) != 0) {
		fprintf(stderr, "test_tree: mkdir %s: %s\n", sub, strerror(errno));
		fails++;
	} else if (tree_check(root, "test_tree", NULL, NULL, &st) != 0) {
		fprintf(stderr, "test_tree: FAIL: one empty subdirectory is not a consistent tree\n");
		fails++;
	}
	rmdir(sub);
	rmdir(root);
	fprintf(stderr, "test_tree: %s\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}
