/*
 * release.c: the version line every lsmfs program prints for -V and
 * --version (and mkfs.lsmfs atop its plan, as mke2fs does): the program,
 * the release meson gives (LSMFS_RELEASE, the man pages' too) and the
 * format of the filesystem info it writes (LSMFS_VERSION, SCHEMA.md
 * "Filesystem info").  tests/doc/test_man.py checks every program's line.
 */
#include "format.h"

#include <stdio.h>

void lsmfs_print_version(const char *prog, const char *extra)
{
	printf("%s " LSMFS_RELEASE " (format %d%s%s)\n", prog, LSMFS_VERSION, extra ? ", " : "",
	       extra ? extra : "");
}
