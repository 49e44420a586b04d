/* ops.h: the FUSE operation table of the lsmfs daemon (ops.c). */
#ifndef LSMFS_OPS_H
#define LSMFS_OPS_H

#include "fs_int.h"

extern const struct fuse_lowlevel_ops lsmfs_ops;

#endif
