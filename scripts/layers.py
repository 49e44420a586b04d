#!/usr/bin/env python3
"""Check that fs/ keeps its layers (fs/ARCHITECTURE.md).

Reads the C files of fs/ and of the programs that use it, and fails
(exit 1, one line per breach) when:
  - a file of fs/ calls a function defined in a file of a layer above its
    own (the table LAYERS, bottom first);
  - the files of fs/ call each other in a cycle, within a layer too;
  - a file includes the header of a layer above its own, or a program
    outside fs/ (mkfs, tools) includes engine.h or ops.h.
`--graph` prints the calls between files as well.  Needs only Python.
"""
import collections
import os
import re
import sys

LAYERS = ['base', 'format', 'disks', 'engine/core', 'engine/attr', 'engine/data',
          'engine/names', 'engine/background', 'admin', 'life', 'daemon']
HEADERS = {'base.h': 'base', 'format.h': 'format', 'schema.h': 'format',
           'disks.h': 'disks', 'engine.h': 'engine/core', 'acl.h': 'engine/core',
           'admin.h': 'admin', 'life.h': 'life', 'ops.h': 'daemon', 'fs.h': 'life'}
OUTSIDE_FORBIDDEN = {'engine.h', 'ops.h', 'acl.h'}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DEFINITION = re.compile(r'^(?!static\b)[A-Za-z_][\w \t\*]*?\b(\w+)\s*\([^;{}]*?\)\s*\n\{',
                        re.M | re.S)
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    """The layer of fs/<rel>: the longest entry of LAYERS it lies under."""
    if rel.startswith('engine/') and rel.count('/') == 1:
        return 'engine/core'  # engine.h, acl.h: the engine's headers
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


def main():
    graph = '--graph' in sys.argv
    breaches = []
    files = {}
    for path in sources('fs'):
        rel = os.path.relpath(path, os.path.join(ROOT, 'fs'))
        lay = layer_of(rel)
        if lay is None and rel.count('/'):
            breaches.append(f'fs/{rel}: in no layer of scripts/layers.py')
            continue
        files[rel] = (lay, open(path).read())
    # Includes.
    rank = {name: i for i, name in enumerate(LAYERS)}
    for rel, (lay, text) in files.items():
        if lay is None:
            continue
        for h in INCLUDE.findall(text):
            hl = HEADERS.get(os.path.basename(h))
            if hl is not None and rank[hl] > rank[lay] and not (
                    hl.startswith('engine') and lay.startswith('engine')):
                breaches.append(f'fs/{rel}: includes {h}, of layer {hl} above its own ({lay})')
    for top in ('mkfs', 'tools'):
        for path in sources(top):
            for h in INCLUDE.findall(open(path).read()):
                if os.path.basename(h) in OUTSIDE_FORBIDDEN:
                    breaches.append(f'{os.path.relpath(path, ROOT)}: includes {h}: programs '
                                    'outside fs/ use fs.h')
    # Calls.
    defined = {}
    for rel, (lay, text) in files.items():
        if rel.endswith('.c'):
            for m in DEFINITION.finditer(NOISE.sub(' ', text)):
                defined.setdefault(m.group(1), rel)
    calls = collections.defaultdict(set)
    for rel, (lay, text) in files.items():
        if not rel.endswith('.c'):
            continue
        for m in CALL.finditer(NOISE.sub(' ', text)):
            to = defined.get(m.group(1))
            if to and to != rel:
                calls[(rel, to)].add(m.group(1))
    for (a, b), names in sorted(calls.items()):
        la, lb = files[a][0], files[b][0]
        if la and lb and rank[lb] > rank[la]:
            breaches.append(f'fs/{a} ({la}) calls up into fs/{b} ({lb}): {", ".join(sorted(names))}')
        if graph:
            print(f'{a} -> {b}: {", ".join(sorted(names))}')
    # Cycles (Tarjan's strongly connected components).
    adj = collections.defaultdict(set)
    for a, b in calls:
        adj[a].add(b)
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

    for v in sorted(files):
        if v.endswith('.c') and v not in index:
            strong(v)
    for comp in comps:
        if len(comp) > 1:
            breaches.append('a cycle of calls between ' + ' '.join('fs/' + c for c in sorted(comp)))
    nfiles = sum(1 for r in files if r.endswith('.c'))
    for b in breaches:
        print('layers: ' + b)
    print(f'layers: {nfiles} files of fs/, {len(calls)} calls between files, '
          f'{len(breaches)} breach{"es" if len(breaches) != 1 else ""}')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main())
