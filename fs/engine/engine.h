/*
 * engine.h: the engine layer of fs/ (fs/ARCHITECTURE.md), as the layers
 * above it (admin, life, daemon) and the engine's unit tests see it: all
 * of its parts.  Inside the engine a file includes its own part's header
 * (core.h, attr.h, data.h, names.h, background.h), each of which brings
 * the parts below it, so that a part cannot reach one above it.
 */
#ifndef LSMFS_ENGINE_H
#define LSMFS_ENGINE_H

#include "background.h"

#endif
