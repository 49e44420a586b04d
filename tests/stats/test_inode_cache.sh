#!/bin/bash
# test_inode_cache.sh BUILD_DIR: inodes let go past -o inode_cache=N
# (fs/engine/core/kref.c).  With a cache of 8, a tree of 600 files in 6 directories is
# made, then stat'ed, read, chmod'ed, hard-linked, renamed and half
# removed, the same on a plain directory beside it; both trees must agree
# (names, modes, link counts, sizes, bytes) at each step.  The daemon's
# user.lsmfs.stats must show the inodes let go (in_memory small, let_go in
# the hundreds) while the kernel still holds them, and drop_caches (the
# kernel forgets them) must bring let_go down to what it still holds.  After
# an unmount fsck -n is clean, and a remount shows the same tree.
NAME=test_inode_cache
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
P=$T/plain
mkdir -p "$T/d1" "$T/d2" "$M" "$P"
"$MKFS" -q "$T/d1" "$T/d2" || { echo "mkfs failed" >&2; exit 1; }
"$LSMFS" -o inode_cache=8 "$T/d1:$T/d2" "$M" || { echo "mount failed" >&2; exit 1; }

stats() { python3 -c 'import os, sys; sys.stdout.write(os.getxattr(sys.argv[1], "user.lsmfs.stats").decode())' "$M"; }
inodes() { stats | python3 -c 'import json, sys; s = json.load(sys.stdin)["inodes"]; print(s["in_memory"], s["let_go"])'; }
# A listing of a tree: path, type, mode, links, size, content hash.
listing() {
	(cd "$1" && find . -printf '%p %y %m %n %s\n' | sort) > "$2.names"
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r md5sum) > "$2.sums"
	cat "$2.names" "$2.sums"
}
same() {
	listing "$M/t" "$T/l" > "$T/lm"
	listing "$P/t" "$T/p" > "$T/lp"
	cmp -s "$T/lm" "$T/lp" || fail "$1: the trees differ: $(diff "$T/lm" "$T/lp" | head -5)"
}

for root in "$M/t" "$P/t"; do
	mkdir "$root"
	for d in 0 1 2 3 4 5; do
		mkdir "$root/dir$d"
		for f in $(seq 0 99); do
			printf 'file %d/%d\n' "$d" "$f" > "$root/dir$d/f$f"
		done
	done
done
same "made"
read -r mem gone < <(inodes)
[[ $gone -ge 300 ]] || fail "after making 600 files with inode_cache=8: $mem in memory, $gone let go (want >= 300 let go)"
[[ $mem -le 64 ]] || fail "after making 600 files with inode_cache=8: $mem inodes in memory (want <= 64)"

# Every let-go inode comes back for each kind of request.
for root in "$M/t" "$P/t"; do
	for d in 0 1 2; do
		chmod 600 "$root/dir$d"/f1*
		for f in 2 3 4 5 6; do ln "$root/dir$d/f$f" "$root/dir$d/link$f"; done
		for f in 7 8; do mv "$root/dir$d/f$f" "$root/dir$((d + 3))/moved$d$f"; done
		rm -f "$root/dir$d"/f5*
		echo more >> "$root/dir$d/f9"
	done
done
same "changed"

# The kernel forgets: let_go falls to what it still references.
sync
echo 3 > /proc/sys/vm/drop_caches
read -r mem2 gone2 < <(inodes)
[[ $gone2 -lt $gone ]] || fail "drop_caches: let_go $gone -> $gone2, want it lower"
same "after drop_caches"

fusermount3 -u "$M" || fail "unmount"
for _ in $(seq 50); do mountpoint -q "$M" || break; sleep 0.1; done
"$FSCK" -n "$T/d1:$T/d2" > "$T/fsck.out" 2>&1 || fail "fsck -n: exit $?: $(tail -5 "$T/fsck.out")"
"$LSMFS" "$T/d1:$T/d2" "$M" || { fail "remount"; exit 1; }
same "remounted"

if [[ $fails -ne 0 ]]; then
	echo "test_inode_cache: $fails failure(s)" >&2
	exit 1
fi
echo "test_inode_cache: ok (inode_cache=8: $mem in memory, $gone let go; after drop_caches $mem2, $gone2)"
