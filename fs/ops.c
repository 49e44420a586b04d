/* FUSE handlers: being written. */
#include "fs.h"
