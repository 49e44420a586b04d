#!/usr/bin/env python3
"""Check that fs/ keeps its layers (fs/ARCHITECTURE.md).

Reads the C files and headers of fs/ and the programs that use it, and
fails (exit 1, one line per breach) when:
  - a file of fs/ names a function defined in a file of a layer above its
    own (the table LAYERS, bottom first): a call, its address taken, a
    prototype, a static inline or a macro in a header alike;
  - the files of fs/ use each other in a cycle, within a layer too;
  - a file includes a header of a layer above its own (each include is
    resolved to its file under fs/), or a program outside fs/ (mkfs,
    tools) includes one of the engine's or the daemon's headers;
  - a file of fs/ lies in no layer (directly in fs/, but fs.h).
`--graph` prints the uses between files as well.  Needs only Python.
"""
import collections
import os
import re
import sys

LAYERS = ['base', 'format', 'disks', 'engine/core', 'engine/attr', 'engine/data',
          'engine/names', 'engine/background', 'admin', 'life', 'daemon']
# Headers that gather others: fs.h what the programs outside fs/ may use
# (the layers up to life), engine.h the engine's parts for the layers above.
UMBRELLA = {'fs.h': 'life', 'engine/engine.h': 'engine/background'}
OUTSIDE_FORBIDDEN = ('engine', 'daemon')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DEFINITION = re.compile(r'^(static\s+)?[A-Za-z_][\w \t\*]*?\b(\w+)\s*\([^;{}]*?\)\s*\n\{',
                        re.M | re.S)
# Any name, but a member (after . or ->) or a label (goto NAME, NAME:): a
# call, an address, a prototype.
USE = re.compile(r'(?<![\w.>])(?<!->)(?<!goto )([A-Za-z_]\w*)\b(?!\s*:(?!:))')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    """The layer of fs/<rel>: the longest entry of LAYERS it lies under."""
    if rel.startswith('engine/') and rel.count('/') == 1:
        return 'engine/core'  # chunk_iter.h: a header any part may use
    best = None
    for name in LAYERS:
        if rel.startswith(name + '/') and (best is None or len(name) > len(best)):
            best = name
    return best


def sources(top):
    for d, _, names in os.walk(os.path.join(ROOT, top)):
        for n in sorted(names):
            if n.endswith('.c') or n.endswith('.h'):
                yield os.path.join(d, n)


def resolve(rel, h, names):
    """The file under fs/ that `#include "h"` in fs/<rel> reaches, or None
    (a header outside fs/: the store's, the system's)."""
    here = os.path.normpath(os.path.join(os.path.dirname(rel), h))
    if here in names:
        return here
    hits = [n for n in names if n == h or n.endswith('/' + h)]
    return hits[0] if len(hits) == 1 else None


def strongly_connected(nodes, adj):
    """Tarjan's strongly connected components of the graph adj."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return comps


def main():
    graph = '--graph' in sys.argv
    breaches = []
    files = {}
    for path in sources('fs'):
        rel = os.path.relpath(path, os.path.join(ROOT, 'fs'))
        lay = UMBRELLA.get(rel) or layer_of(rel)
        if lay is None:
            breaches.append(f'fs/{rel}: in no layer of scripts/layers.py')
            continue
        files[rel] = (lay, NOISE.sub(' ', open(path).read()), open(path).read())
    rank = {name: i for i, name in enumerate(LAYERS)}

    def above(upper, lower):
        return rank[upper] > rank[lower]

    # Includes, each resolved to the file it reaches.
    for rel, (lay, _, raw) in files.items():
        for h in INCLUDE.findall(raw):
            to = resolve(rel, h, files)
            if to and above(files[to][0], lay):
                breaches.append(f'fs/{rel}: includes {h} (fs/{to}, layer {files[to][0]}) '
                                f'above its own ({lay})')
    for top in ('mkfs', 'tools'):
        for path in sources(top):
            rel = os.path.relpath(path, ROOT)
            for h in INCLUDE.findall(open(path).read()):
                to = resolve(os.path.join('..', rel), h, files)
                if to and files[to][0].split('/')[0] in OUTSIDE_FORBIDDEN:
                    breaches.append(f'{rel}: includes {h} (fs/{to}): programs outside fs/ '
                                    'use fs.h')
    # Uses of functions: where each global one is defined, and who names it.
    defined, statics = {}, collections.defaultdict(set)
    for rel, (lay, text, _) in files.items():
        if rel.endswith('.c'):
            for m in DEFINITION.finditer(text):
                if m.group(1):
                    statics[rel].add(m.group(2))
                else:
                    defined.setdefault(m.group(2), rel)
    uses = collections.defaultdict(set)
    for rel, (lay, text, _) in files.items():
        for m in USE.finditer(text):
            name = m.group(1)
            to = defined.get(name)
            if to and to != rel and name not in statics[rel]:
                uses[(rel, to)].add(name)
    for (a, b), names in sorted(uses.items()):
        la, lb = files[a][0], files[b][0]
        if above(lb, la):
            breaches.append(f'fs/{a} ({la}) uses fs/{b} ({lb}) above it: '
                            f'{", ".join(sorted(names))}')
        if graph:
            print(f'{a} -> {b}: {", ".join(sorted(names))}')
    # Cycles between the C files (headers declare; their uses point one way).
    adj = collections.defaultdict(set)
    for a, b in uses:
        if a.endswith('.c'):
            adj[a].add(b)
    for comp in strongly_connected([r for r in files if r.endswith('.c')], adj):
        if len(comp) > 1:
            breaches.append('a cycle of uses between ' + ' '.join('fs/' + c for c in sorted(comp)))
    nfiles = sum(1 for r in files if r.endswith('.c'))
    for line in breaches:
        print('layers: ' + line)
    print(f'layers: {nfiles} C files of fs/, {len(uses)} uses between files, '
          f'{len(breaches)} breach{"es" if len(breaches) != 1 else ""}')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main())
