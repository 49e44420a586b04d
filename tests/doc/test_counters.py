#!/usr/bin/env python3
"""test_counters.py STORE_COUNTERS DOC_DIR README: the store's counter keys
in the documents against store.h's list (tests/doc's store_counters prints
it).

lsmfs(8) STATISTICS and lsmfs-inspect(8) levels list the write totals' JSON
keys (the TOTAL counters) after "lifetime", in the list's order; lsmfs(8)
also names every other counter that has a key (log_syncs); README's example
of the statistics shows the since_mount object with exactly those keys.  So
a counter added to the list, or a key renamed, and not to the documents
fails.  Exit 0 pass, 1 fail."""
import json, os, re, subprocess, sys

prog, doc, readme = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [line.split('\t') for line in
        subprocess.run([prog], capture_output=True, text=True, check=True).stdout.splitlines()]
totals = [key for kind, _, key, _ in rows if kind == 'TOTAL']
others = [key for kind, _, key, _ in rows if kind != 'TOTAL' and key != '-']
failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg, file=sys.stderr)


def bold_list_after(page, anchor):
    """The bold words of the .RB/.BR list that follows the line `anchor`."""
    lines = open(os.path.join(doc, page)).read().splitlines()
    if anchor not in lines:
        return None
    words = []
    for line in lines[lines.index(anchor) + 1:]:
        m = re.match(r'\.(?:RB \(|BR) (\S+)', line)
        if not m:
            break
        words.append(m.group(1))
    return words


for page in ('lsmfs.8', 'lsmfs-inspect.8'):
    got = bold_list_after(page, '.B lifetime')
    if got is None or got[:len(totals)] != totals:
        fail(f'{page}: the keys after .B lifetime are {got}, want {totals} first')
text = open(os.path.join(doc, 'lsmfs.8')).read()
for key in others:
    if not re.search(r'^\.BR? ' + re.escape(key) + r'\b', text, re.M):
        fail(f'lsmfs.8 does not name the counter key {key}')

m = re.search(r'"since_mount":(\{[^}]*\})', open(readme).read())
if not m or list(json.loads(m.group(1))) != totals:
    fail(f'README: the since_mount example has {m and list(json.loads(m.group(1)))}, want {totals}')

if not failures:
    print(f'test_counters: {len(totals)} write totals and {len(others)} other keyed counters '
          'documented as store.h lists them')
sys.exit(1 if failures else 0)
