/*
 * fs.h: the public face of fs/ for the programs outside it: mkfs.lsmfs,
 * fsck.lsmfs, lsmfs-inspect and lsmfs-disk.  It gathers the headers of the
 * layers they may use (fs/ARCHITECTURE.md): base.h (errors, durable files,
 * UUIDs), format.h (superblocks, the formatter, sections), disks.h (disk
 * sets, the store copies' states, backups' checks), admin.h (control
 * requests) and life.h (opening a filesystem offline, restoring).  The
 * engine (struct fs, inodes, data, names) stays inside fs/: these programs
 * hold a struct fs only as an opaque pointer.
 */
#ifndef LSMFS_FS_H
#define LSMFS_FS_H

#include "base.h"
#include "format.h"
#include "schema.h"
#include "disks.h"
#include "admin.h"
#include "life.h"

#endif
