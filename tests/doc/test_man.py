#!/usr/bin/env python3
"""test_man.py BUILD_ROOT DOC_DIR [KEY_TYPES]: every command's man page against its --help.

For each command: the options its --help lists (the dashed options at the
start of each option line, and lsmfs's "-o NAME" mount options) must be
exactly the options in the page's .TP tags, so a page cannot miss an option
nor document one that is gone; every tool's --version prints the one
project version and format in one form, "NAME VERSION (format N...)"
(fs/format/release.c); and `man --warnings` has nothing to say about any page
(lsmfs(5) included; that check is skipped, said on stderr, without
man(1)).  With KEY_TYPES (tests/doc's key_types, printing fs/format/schema.c's
key table): the key types that lsmfs-inspect's --help and man page list
for `keys T N`, and the letters of fs/SCHEMA.md's key table, are the
table's, so that a type added to it and not to them fails.  Exit 0
pass, 1 fail."""
import os, re, shutil, subprocess, sys

build, doc = sys.argv[1], sys.argv[2]
key_types = sys.argv[3] if len(sys.argv) > 3 else None
COMMANDS = {  # command: (binary under the build root, page)
    'lsmfs': ('fs/lsmfs', 'lsmfs.8'),
    'mkfs.lsmfs': ('mkfs/mkfs.lsmfs', 'mkfs.lsmfs.8'),
    'fsck.lsmfs': ('tools/fsck/fsck.lsmfs', 'fsck.lsmfs.8'),
    'lsmfs-inspect': ('tools/inspect/lsmfs-inspect', 'lsmfs-inspect.8'),
    'lsmfs-disk': ('tools/disk/lsmfs-disk', 'lsmfs-disk.8'),
    'lsmfs-bench': ('tools/lsmfsbench/lsmfs-bench', 'lsmfs-bench.1'),
}
PAGES = [p for _, p in COMMANDS.values()] + ['lsmfs.5']
OPT = re.compile(r'(?<![\w-])(--?[A-Za-z][A-Za-z0-9_-]*)')
MOUNT_OPT = re.compile(r'-o ([a-z_]+)')


def options(text):
    """The options named in one option column or tag: '-o NAME' counts as
    one option (lsmfs's mount options), any other dashed word as itself."""
    found = set(MOUNT_OPT.findall(text))
    found = {'-o ' + name for name in found}
    rest = MOUNT_OPT.sub(' ', text)
    return found | set(OPT.findall(rest))


def help_options(binary):
    out = subprocess.run([binary, '--help'], capture_output=True, text=True)
    found = set()
    for line in (out.stdout + out.stderr).splitlines():
        s = line.strip()
        if not s.startswith('-'):
            continue
        found |= options(re.split(r'\s{2,}', s)[0])  # the option column
    return found


def roff_text(s):
    s = re.sub(r'\\f[BIRP]|\\f\(..|\\f\[[A-Za-z]*\]', '', s)
    return s.replace('\\-', '-').replace('\\ ', ' ').replace('\\(em', '-').replace('\\&', '')


def tag_options(page):
    found, lines = set(), open(page).read().splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith('.TP'):
            tag = lines[i + 1]
            if tag.startswith(('.B ', '.BI ', '.BR ', '.I ')):
                tag = tag.split(' ', 1)[1].replace('"', '')
            found |= options(roff_text(tag))
    return found


failures = []
versions = {}
formats = {}
# fs/format/release.c's line: "PROG RELEASE (format N)", the daemon adding ", libfuse X".
VERSION_LINE = re.compile(r'(?P<cmd>\S+) (?P<version>\S+) \(format (?P<format>\d+)(, [^)\n]*)?\)\n')
for cmd, (binary, page) in COMMANDS.items():
    path = os.path.join(build, binary)
    h, t = help_options(path), tag_options(os.path.join(doc, page))
    if not h:
        failures.append(f'{cmd}: --help lists no options')
    if h - t:
        failures.append(f'{cmd}: in --help but not in {page}: {" ".join(sorted(h - t))}')
    if t - h:
        failures.append(f'{cmd}: in {page} but not in --help: {" ".join(sorted(t - h))}')
    v = subprocess.run([path, '--version'], capture_output=True, text=True)
    m = VERSION_LINE.fullmatch(v.stdout)
    if v.returncode != 0 or not m or m['cmd'] != cmd:
        failures.append(f'{cmd}: --version printed {v.stdout!r} (exit {v.returncode}), '
                        f'not "{cmd} VERSION (format N[, ...])"')
    else:
        versions[cmd] = m['version']
        formats[cmd] = m['format']
if len(set(versions.values())) > 1:
    failures.append(f'tools print different versions: {versions}')
if len(set(formats.values())) > 1:
    failures.append(f'tools print different formats: {formats}')
for page in PAGES:
    th = open(os.path.join(doc, page)).read().splitlines()
    th = next((l for l in th if l.startswith('.TH')), '')
    want = set(versions.values())
    if want and not any(v in th for v in want):
        failures.append(f'{page}: .TH line does not carry the version {want}: {th}')



def letters(text):
    return text.split()


def check_key_types():
    """lsmfs-inspect's help and man page, and SCHEMA.md, against the key table."""
    table = [l.split('\t') for l in subprocess.run([key_types], capture_output=True, text=True,
                                                    check=True).stdout.splitlines()]
    every = [t[0] for t in table]
    by_id = {kind: [t[0] for t in table if t[1] == kind] for kind in ('inode', 'section', 'disk')}
    if not every:
        failures.append(f'{key_types}: printed no key types')
        return
    binary = os.path.join(build, COMMANDS['lsmfs-inspect'][0])
    text = ' '.join(subprocess.run([binary, '--help'], capture_output=True,
                                   text=True).stdout.split())
    m = re.search(r'T, a key type \(([A-Z ]+)\)', text)
    if not m or letters(m[1]) != every:
        failures.append(f'lsmfs-inspect --help: keys T lists {m and m[1]!r}, the key table {every}')
    m = re.search(r'keys of that inode \(([A-Z ]+)\), section \(([A-Z ]+)\) or disk \(([A-Z ]+)\)',
                  text)
    want = [by_id['inode'], by_id['section'], by_id['disk']]
    if not m or [letters(g) for g in m.groups()] != want:
        failures.append(f'lsmfs-inspect --help: keys N by type says {m and m.groups()}, '
                        f'the key table {want}')
    page = open(os.path.join(doc, COMMANDS['lsmfs-inspect'][1])).read()
    block = re.search(r'keeps only the keys of one type:\n\.RS\n(.*?)\n\.RE', page, re.S)
    tags = re.findall(r'^\.TP\n\.B ([A-Z])$', block[1] if block else '', re.M)
    if tags != every:
        failures.append(f'lsmfs-inspect.8: keys T lists {tags}, the key table {every}')
    flat = ' '.join(roff_text(page).split())
    m = re.search(r'one inode \(types ([A-Z ]+)\), one section \(([A-Z ]+)\), one disk \(([A-Z ]+)\)',
                  flat)
    if not m or [letters(g) for g in m.groups()] != want:
        failures.append(f'lsmfs-inspect.8: keys N by type says {m and m.groups()}, '
                        f'the key table {want}')
    schema = open(os.path.join(os.path.dirname(os.path.abspath(doc)), 'fs', 'SCHEMA.md')).read()
    keys = re.search(r'^## Keys of the metadata store\n(.*?)^##', schema, re.S | re.M)
    rows = re.findall(r'^\| `([A-Z])`', keys[1] if keys else '', re.M)
    if list(dict.fromkeys(rows)) != every:
        failures.append(f'fs/SCHEMA.md: the keys table has {list(dict.fromkeys(rows))}, '
                        f'the key table {every}')


if key_types:
    check_key_types()
else:
    print('test_man: no KEY_TYPES: the key types check skipped', file=sys.stderr)

if shutil.which('man') is None:
    print('test_man: no man(1): the --warnings check skipped', file=sys.stderr)
else:
    for page in PAGES:
        r = subprocess.run(['man', '--warnings', '-E', 'UTF-8', '-l', os.path.join(doc, page)],
                           capture_output=True, text=True, env=dict(os.environ, MANWIDTH='80'))
        if r.returncode != 0 or r.stderr.strip():
            failures.append(f'{page}: man --warnings: {r.stderr.strip()} (exit {r.returncode})')

for f in failures:
    print('FAIL', f)
print(f'test_man: {len(COMMANDS)} commands, {len(PAGES)} pages, {len(failures)} failures')
sys.exit(1 if failures else 0)
