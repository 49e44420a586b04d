#!/bin/bash
# test_dircache.sh BUILD_DIR: the kernel's copy of a listing
# (fs/daemon/dircache.c), against a plain directory:
#   - with -o dircache_age=0, a directory of 2,000 names listed again sends
#     the daemon no READDIR (counted in its -d log);
#   - after each change made through the mount (create, mkdir, symlink,
#     hard link, rename within a directory, across directories and over an
#     existing name, unlink, rmdir), the next listing is the plain
#     directory's (names and types), each listed inode number is the one
#     lstat gives, and it was read from the daemon again;
#   - at the default age (30 s), a directory made a moment ago is read from
#     the daemon at every listing;
#   - with -o dircache_age=2, a directory is kept once left alone 2 s;
#   - with -o no_dircache, none is (dircache_age=0 beside it);
#   - fsck clean at the end.
NAME=test_dircache
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
P=$T/plain D=$T/d
mkdir -p "$P" "$D" "$M"
"$MKFS" -q "$D" || { echo "$NAME: mkfs failed" >&2; exit 1; }
LOG=$T/debug.log
reads() { grep -c 'opcode: READDIR' "$LOG"; }
# DIR: "name type" of each entry, sorted, types from the listing (d_type);
# on the mount also checks that each listed inode is the one lstat gives.
listing() {
	python3 - "$1" <<'PY'
import os, sys
out = []
for e in os.scandir(sys.argv[1]):
    t = "d" if e.is_dir(follow_symlinks=False) else "l" if e.is_symlink() else "f"
    ino = os.lstat(e.path).st_ino
    if e.inode() != ino:
        out.append("%s listed as inode %d, lstat gives %d" % (e.name, e.inode(), ino))
    out.append(e.name + " " + t)
print("\n".join(sorted(out)))
PY
}
same() { # WHAT
	local a b
	a=$(listing "$P/e") b=$(listing "$M/e")
	[[ $a == "$b" ]] || fail "$1: the listing differs from the plain directory's: $(diff <(echo "$a") <(echo "$b") | head -5)"
}

mount_fg "$LOG" -d -o dircache_age=0 "$D" || fail "mount -o dircache_age=0"
for root in "$P" "$M"; do
	mkdir "$root/e" "$root/other"
	for i in $(seq 2000); do : > "$root/e/file-with-a-longer-name-$i"; done
	mkdir "$root/e/sub"
	: > "$root/other/away"
done
same "first listing"
n0=$(reads)
same "second listing"
n1=$(reads)
say "2,000 names: the second listing sent $((n1 - n0)) READDIR requests"
((n1 == n0)) || fail "a listing kept by the kernel (dircache_age=0) sent $((n1 - n0)) READDIR requests again"

change() { # WHAT CMD... (CMD runs in each root, as \$r)
	local what=$1
	shift
	local before
	before=$(reads)
	for r in "$P" "$M"; do
		eval "$*" || fail "$what: failed in $r"
	done
	same "after $what"
	(($(reads) > before)) || fail "after $what the listing was not read from the daemon again"
	same "after $what, listed again"
}
change create ': > "$r/e/new"'
change mkdir 'mkdir "$r/e/newdir"'
change symlink 'ln -s new "$r/e/link"'
change "hard link" 'ln "$r/e/new" "$r/e/hard"'
change rename 'mv "$r/e/new" "$r/e/renamed"'
change "rename over a name" 'mv "$r/e/renamed" "$r/e/file-with-a-longer-name-7"'
change "rename out" 'mv "$r/e/file-with-a-longer-name-8" "$r/other/"'
change "rename in" 'mv "$r/other/away" "$r/e/"'
change "directory renamed in" 'mkdir "$r/other/d" && mv "$r/other/d" "$r/e/"'
change unlink 'rm "$r/e/file-with-a-longer-name-1999"'
change rmdir 'rmdir "$r/e/sub"'
change "1,000 removed" 'rm "$r"/e/file-with-a-longer-name-1??? '
umount_wait "$D" || fail "unmount"

# The default age: a directory made a moment ago is not kept.
mount_fg "$LOG" -d "$D" || fail "mount"
mkdir "$M/fresh" && touch "$M"/fresh/f{1..100}
ls "$M/fresh" > /dev/null
n0=$(reads)
ls "$M/fresh" > /dev/null
((($(reads) > n0))) || fail "at the default dircache_age a directory changed a moment ago was kept by the kernel"
umount_wait "$D" || fail "unmount"

# dircache_age=2: kept once left alone for 2 s.
mount_fg "$LOG" -d -o dircache_age=2 "$D" || fail "mount -o dircache_age=2"
mkdir "$M/aged" && touch "$M"/aged/f{1..100}
ls "$M/aged" > /dev/null
n0=$(reads)
ls "$M/aged" > /dev/null
n1=$(reads)
((n1 > n0)) || fail "with dircache_age=2 a directory changed a moment ago was kept"
sleep 2.5
ls "$M/aged" > /dev/null
n2=$(reads)
ls "$M/aged" > /dev/null
n3=$(reads)
say "dircache_age=2: listings read from the daemon: $((n1 - n0)) then $((n2 - n1)) when changed a moment ago and 2.5 s later, $((n3 - n2)) after"
((n3 == n2)) || fail "with dircache_age=2 a directory left alone 2.5 s was not kept ($((n3 - n2)) READDIR requests)"
touch "$M/aged/f101"
[[ $(ls "$M/aged" | wc -l) == 101 ]] || fail "a name made in a kept directory is not listed"
umount_wait "$D" || fail "unmount"

# no_dircache: nothing kept, whatever the age says.
mount_fg "$LOG" -d -o no_dircache,dircache_age=0 "$D" || fail "mount -o no_dircache"
ls "$M/aged" > /dev/null
n0=$(reads)
ls "$M/aged" > /dev/null
n1=$(reads)
say "no_dircache: a second listing sent $((n1 - n0)) READDIR requests"
((n1 > n0)) || fail "with no_dircache the kernel kept a listing"
umount_wait "$D" || fail "unmount"
fsck_clean "$D" "after the listings"
finish
