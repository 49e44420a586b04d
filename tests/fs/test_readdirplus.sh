#!/bin/bash
# test_readdirplus.sh BUILD_DIR: directory listings through READDIRPLUS
# (fs/daemon/ops.c), against a plain directory:
#   - a directory of 3000 files (each a chunk) and 20 subdirectories, the
#     caches dropped: `ls -l` gives the plain directory's names, types,
#     modes, sizes and link counts; `du` its block count within the
#     chunk files' rounding;
#   - every entry READDIRPLUS handed out is a lookup the kernel holds: once
#     the files are removed and the kernel's caches dropped, the daemon
#     holds no inode in memory and every chunk file goes (none leaks);
#   - again with the kernel's caches warm (entries whose inode the kernel
#     holds come without attributes), after a chmod, a hard link and a
#     size change made through the mount;
#   - a name made, renamed or removed after a listing shows in the next
#     one;
#   - once the kernel's names and attributes time out (a mount with 1 s
#     timeouts), the next `ls -l` gets them again through READDIRPLUS and
#     sends no LOOKUP per name (counted in the daemon's -d log);
#   - `du` of five directories, cold, sends the LOOKUPs of the first only
#     (fs/daemon/plus.c: the listings after it carry the attributes); so
#     does a walk that lists in one thread and looks up in another; a cold
#     `find` of them loads the inodes of its first two listings' first
#     replies only;
#   - fsck clean at the end.
NAME=test_readdirplus
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
P=$T/plain D=$T/d
mkdir -p "$P" "$D" "$M"
"$MKFS" -q --chunk-size 65536 "$D" || { echo "$NAME: mkfs failed" >&2; exit 1; }
"$LSMFS" "$D" "$M" || { echo "$NAME: mount failed" >&2; exit 1; }
in_memory() {
	getfattr --only-values -n user.lsmfs.stats "$M" 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["inodes"]["in_memory"])'
}
listing() { # DIR: type and mode, links, size, name of each entry
	(cd "$1" && LC_ALL=C ls -l --time-style=+ . | awk 'NR > 1 { print $1, $2, $5, $NF }')
}

for root in "$P" "$M"; do
	mkdir "$root/a"
	for i in $(seq 20); do mkdir "$root/a/dir$i"; done
	for i in $(seq 3000); do head -c $((1000 + i * 20)) /dev/zero > "$root/a/f$i"; done
	chmod 640 "$root/a/f7"
	ln "$root/a/f9" "$root/a/link9"
	ln -s f1 "$root/a/sym"
done
sync -f "$M"
echo 3 > /proc/sys/vm/drop_caches
[[ $(listing "$M/a") == "$(listing "$P/a")" ]] ||
	fail "ls -l differs from the plain directory's: $(diff <(listing "$P/a") <(listing "$M/a") | head -5)"
n=$(in_memory)
say "ls -l of 3022 entries, caches dropped: the same as the plain directory's; $n inodes in memory"
[[ $(ls "$M/a" | wc -l) == 3022 ]] || fail "ls counts $(ls "$M/a" | wc -l) names, not 3022"

# Warm: the kernel holds every inode now, so READDIRPLUS sends them
# without attributes, and what it shows comes from its own cache.
for root in "$P" "$M"; do
	chmod 600 "$root/a/f8"
	ln "$root/a/f10" "$root/a/link10"
	head -c 777 /dev/zero > "$root/a/f11"
done
[[ $(listing "$M/a") == "$(listing "$P/a")" ]] ||
	fail "warm ls -l differs from the plain directory's: $(diff <(listing "$P/a") <(listing "$M/a") | head -5)"
[[ $(ls "$M/a" | wc -l) == 3023 ]] || fail "ls counts $(ls "$M/a" | wc -l) names, not 3023"

# A listing follows every change made through the mount.
ls "$M/a" > /dev/null
touch "$M/a/new"
ls "$M/a" | grep -qx new || fail "a name made after a listing is not in the next one"
mv "$M/a/new" "$M/a/renamed"
out=$(ls "$M/a")
grep -qx renamed <<<"$out" && ! grep -qx new <<<"$out" || fail "a rename after a listing is not in the next one"
rm "$M/a/renamed"
ls "$M/a" | grep -qx renamed && fail "a name removed after a listing is still in the next one"

# Every lookup READDIRPLUS handed out comes back: nothing left in memory,
# every chunk file reclaimed.
ls -lR "$M" > /dev/null
du -s "$M" > /dev/null
rm -rf "$M/a"
gone=0
for _ in $(seq 100); do
	echo 3 > /proc/sys/vm/drop_caches
	if [[ $(in_memory) == 0 && -z $(find "$D/.lsmfs/sections" -type f | head -1) ]]; then
		gone=1
		break
	fi
	sleep 0.1
done
((gone)) || fail "after rm -rf and the kernel's caches dropped: $(in_memory) inodes still in memory, $(find "$D/.lsmfs/sections" -type f | wc -l) chunk files left (lookups READDIRPLUS handed out not given back)"
umount_wait "$D" || fail "unmount"

# Timed-out attributes come again with the next listing, not one LOOKUP
# per name.
mount_fg "$T/debug.log" -d -o attr_timeout=1,entry_timeout=1 "$D" || fail "mount with -d"
mkdir "$M/b"
for i in $(seq 300); do : > "$M/b/f$i"; done
umount_wait "$D" || fail "unmount after making b"
echo 3 > /proc/sys/vm/drop_caches
mount_fg "$T/debug.log" -d -o attr_timeout=1,entry_timeout=1 "$D" || fail "mount with -d"
ls -l "$M/b" > /dev/null
first=$(grep -c 'opcode: LOOKUP' "$T/debug.log")
sleep 2.5
ls -l "$M/b" > /dev/null
again=$(( $(grep -c 'opcode: LOOKUP' "$T/debug.log") - first ))
say "ls -l of 300 names: $first LOOKUPs cold, $again once the attributes timed out"
((again <= 10)) || fail "ls -l after the attributes timed out sent $again LOOKUPs for 300 names"
umount_wait "$D" || fail "unmount"

# A reader that reads a whole directory before it looks at any name (du)
# gets the attributes with its later listings once it has looked: one
# directory's worth of LOOKUPs, not one per name of the tree.
mount_fg "$T/debug.log" "$D" || fail "mount"
for d in 1 2 3 4 5; do
	mkdir "$M/c$d"
	for i in $(seq 300); do : > "$M/c$d/f$i"; done
done
umount_wait "$D" || fail "unmount after making c"
echo 3 > /proc/sys/vm/drop_caches
mount_fg "$T/debug.log" -d "$D" || fail "mount with -d"
du -s "$M"/c? > /dev/null
n=$(grep -c 'opcode: LOOKUP' "$T/debug.log")
say "du of 5 directories of 300 files, cold: $n LOOKUPs"
((n <= 330)) || fail "du of 1,500 files sent $n LOOKUPs: its listings after the first carried no attributes"
umount_wait "$D" || fail "unmount"

# A program whose threads list and look up apart (gdu; Go runs a goroutine
# on any thread) is one reader: the same, one thread listing each
# directory and another lstat-ing its names.
echo 3 > /proc/sys/vm/drop_caches
mount_fg "$T/debug.log" -d "$D" || fail "mount with -d"
python3 - "$M" <<'PY' || fail "the two-thread walk failed"
import os, sys
from concurrent.futures import ThreadPoolExecutor
lister, looker = ThreadPoolExecutor(1), ThreadPoolExecutor(1)
for d in ["c1", "c2", "c3", "c4", "c5"]:
    path = os.path.join(sys.argv[1], d)
    names = lister.submit(os.listdir, path).result()
    looker.submit(lambda: [os.lstat(os.path.join(path, n)) for n in names]).result()
PY
n=$(grep -c 'opcode: LOOKUP' "$T/debug.log")
say "a walk of the same, listing in one thread and lstat-ing in another: $n LOOKUPs"
((n <= 330)) || fail "a walk listing in one thread and looking up in another sent $n LOOKUPs for 1,500 files: its threads were taken for two readers"
umount_wait "$D" || fail "unmount"

# A walk that never looks at the files (find) gets no attributes once two
# of its listings went unlooked at: the first replies of the listings after
# them load no inode (fs/daemon/plus.c, PLUS_BLIND).
echo 3 > /proc/sys/vm/drop_caches
mount_fg "$T/debug.log" "$D" || fail "mount"
before=$(in_memory)
[[ $(find "$M"/c? -type f | wc -l) == 1500 ]] || fail "find of the 5 directories did not list 1,500 files"
n=$(( $(in_memory) - before ))
say "find of 5 directories of 300 files, cold: $n inodes loaded"
((n <= 80)) || fail "find of 5 directories loaded $n inodes: the listings after two unlooked ones still carried attributes"
umount_wait "$D" || fail "unmount"
fsck_clean "$D" "after the listings"
finish
