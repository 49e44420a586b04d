/*
 * sizes.h: byte counts for people, as the tools print them.
 */
#ifndef LSMFS_SIZES_H
#define LSMFS_SIZES_H

#include <stddef.h>
#include <stdint.h>

/* n in binary units, "512 B", "1.5 MiB", ... up to PiB. */
void size_format(uint64_t n, char *buf, size_t len);

#endif
