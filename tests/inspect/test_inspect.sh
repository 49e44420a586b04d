#!/bin/bash
# test_inspect.sh BUILD_DIR: lsmfs-inspect on a real filesystem, beside the
# mount and unmounted.  Every figure it prints is checked against the
# mounted tree or the disks (sizes, chunk files and their lengths, entry
# names, inode count, bytes per disk); --json output must parse; and the
# commands must not change one byte of the disks.
set -u
B=$(cd "${1:?usage: test_inspect.sh BUILD_DIR}" && pwd)
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs INSPECT=$B/tools/inspect/lsmfs-inspect
if [[ ! -c /dev/fuse ]]; then
	echo "test_inspect: SKIPPED: no /dev/fuse here, so no filesystem to inspect" >&2
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-inspect.XXXXXX")
fails=0
cleanup() { fusermount3 -u "$T/mnt" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "test_inspect: FAIL: $*" >&2; fails=$((fails + 1)); }
D="$T/d1:$T/d2"
M=$T/mnt
mkdir -p "$T/d1" "$T/d2" "$M"
mkfs_out=$("$MKFS" --chunk-size 65536 "$T/d1" "$T/d2") || { echo "mkfs failed" >&2; exit 1; }
uuid=$(grep -oE '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' <<<"$mkfs_out" | head -1)
[[ -n $uuid ]] || fail "mkfs printed no UUID: $mkfs_out"
"$LSMFS" "$D" "$M" || { echo "mount failed" >&2; exit 1; }
mkdir -p "$M/a/b" "$M/c"
echo hello > "$M/a/small"
head -c 300000 /dev/urandom > "$M/a/b/big"
ln -s ../small "$M/a/sym"
mkfifo "$M/a/fifo"
for i in $(seq 30); do echo "$i" > "$M/c/f$i"; done
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.colour", b"green")' "$M/a/small" ||
	fail "setxattr through the mount"
sync

check_all() { # WHEN: every command against the tree in $M (mounted) or the manifest
	local when=$1 out rc
	# super
	out=$("$INSPECT" "$D" super 2>&1) || fail "$when: super: exit $?: $out"
	[[ $(grep -c "filesystem UUID $uuid" <<<"$out") == 2 ]] || fail "$when: super does not show $uuid on both disks: $out"
	grep -q "disk 1 of 2" <<<"$out" || fail "$when: super: no 'disk 1 of 2': $out"
	grep -q "chunk size 65536" <<<"$out" || fail "$when: super: chunk size: $out"
	# stat of the chunked file: size, chunk count, every chunk file and length
	out=$("$INSPECT" "$D" stat /a/b/big 2>&1) || fail "$when: stat: exit $?: $out"
	grep -q "size $size_big," <<<"$out" || fail "$when: stat /a/b/big: size is not $size_big: $out"
	local n=0 sum=0 path len
	while read -r path len; do
		n=$((n + 1)); sum=$((sum + len))
		[[ -f $path && $(stat -c %s "$path") == "$len" ]] || fail "$when: chunk file $path is not $len bytes"
	done < <(sed -nE 's/^  chunk [0-9]+: section [0-9]+, disk [0-9]+: (.*) ([0-9]+) bytes$/\1 \2/p' <<<"$out")
	[[ $n == $(((size_big + 65535) / 65536)) ]] || fail "$when: stat shows $n chunks for $size_big bytes: $out"
	[[ $sum == "$size_big" ]] || fail "$when: chunk lengths sum to $sum, not $size_big"
	# stat by inode number, symlink target, xattr
	out=$("$INSPECT" "$D" stat "$ino_small" 2>&1) || fail "$when: stat by inode: exit $?"
	grep -q "inline data: 6 bytes" <<<"$out" && grep -q "xattr user.colour: 5 bytes" <<<"$out" ||
		fail "$when: stat $ino_small (a/small): $out"
	"$INSPECT" "$D" stat /a/sym | grep -q 'target "../small"' || fail "$when: symlink target not shown"
	# ls: the names the mount listed
	out=$("$INSPECT" "$D" ls /a 2>&1) || fail "$when: ls: exit $?"
	[[ $(awk '{print $4}' <<<"$out" | sort | tr '\n' ' ') == "$names_a" ]] ||
		fail "$when: ls /a shows '$(awk '{print $4}' <<<"$out" | sort | tr '\n' ' ')', want '$names_a'"
	# keys: one I per inode
	[[ $("$INSPECT" "$D" keys I | grep -c '^I ') == "$inodes" ]] || fail "$when: keys I does not list $inodes inodes"
	"$INSPECT" "$D" keys C "$ino_big" | grep -c "^C $ino_big " | grep -qx 5 || fail "$when: keys C $ino_big: not 5 chunk records"
	"$INSPECT" "$D" keys M | grep -q "^M fs -> .*uuid $uuid" || fail "$when: keys M: no fs info"
	# sections: bytes per disk are the chunk files' bytes on that disk
	out=$("$INSPECT" "$D" sections 2>&1) || fail "$when: sections: exit $?"
	local d want got
	for d in 1 2; do
		want=$(find "$T/d$d/.lsmfs/sections" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
		got=$(sed -nE "s/^disk $((d - 1)) .* ([0-9]+) bytes$/\1/p" <<<"$out")
		[[ $got == "$want" ]] || fail "$when: sections says disk $((d - 1)) holds $got bytes, the disk has $want"
	done
	[[ $(grep -cE '^ +[0-9]+ +[01] ' <<<"$out") == 1024 ]] || fail "$when: sections does not list 1024 mapped sections"
	# levels
	out=$("$INSPECT" "$D" levels 2>&1) || fail "$when: levels: exit $?"
	grep -qE '^level [0-9]: [0-9]+ tables?, [0-9]+ bytes' <<<"$out" &&
		grep -qE '^write amplification so far: [0-9]+\.[0-9]+ \(user [1-9]' <<<"$out" || fail "$when: levels: $out"
	# --json parses, and says the same
	local c
	for c in super sections "stat /a/b/big" "ls /a" levels; do
		# shellcheck disable=SC2086
		"$INSPECT" --json "$D" $c > "$T/j" || fail "$when: --json $c: exit $?"
		python3 -m json.tool "$T/j" >/dev/null 2>&1 || fail "$when: --json $c does not parse: $(head -c 300 "$T/j")"
	done
	"$INSPECT" --json "$D" stat /a/b/big | python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(0 if d["size"] == int(sys.argv[1]) and len(d["chunks"]) == 5 else 1)' "$size_big" ||
		fail "$when: --json stat disagrees"
}

size_big=$(stat -c %s "$M/a/b/big")
ino_small=$(stat -c %i "$M/a/small")
ino_big=$(stat -c %i "$M/a/b/big")
names_a=$(ls -A "$M/a" | sort | tr '\n' ' ')
inodes=$(( $(find "$M" | wc -l) ))
check_all mounted

fusermount3 -u "$M" || { echo "unmount failed" >&2; exit 1; }
for _ in $(seq 50); do grep -q " $M " /proc/self/mountinfo || break; sleep 0.1; done
hash_disks() { (cd "$T" && find d1 d2 -print0 | sort -z | xargs -0 -n 64 sh -c 'for f; do if [ -f "$f" ]; then sha256sum "$f"; else echo "d $f"; fi; done' sh) | sha256sum; }
before=$(hash_disks)
check_all unmounted
after=$(hash_disks)
[[ $before == "$after" ]] || fail "lsmfs-inspect changed the disks"

# ---- errors ----
"$INSPECT" >/dev/null 2>&1; [[ $? == 16 ]] || fail "no argument: want exit 16"
"$INSPECT" "$D" frobnicate >/dev/null 2>&1; [[ $? == 16 ]] || fail "unknown command: want exit 16"
"$INSPECT" "$D" stat >/dev/null 2>&1; [[ $? == 16 ]] || fail "stat without a path: want exit 16"
"$INSPECT" "$D" keys Q >/dev/null 2>&1; [[ $? == 16 ]] || fail "keys Q: want exit 16"
"$INSPECT" "$D" stat /a/nothing >/dev/null 2>&1; [[ $? == 1 ]] || fail "a missing path: want exit 1"
"$INSPECT" "$D" stat 999999 >/dev/null 2>&1; [[ $? == 1 ]] || fail "a missing inode: want exit 1"
"$INSPECT" "$D" ls /a/small >/dev/null 2>&1; [[ $? == 1 ]] || fail "ls of a file: want exit 1"
mkdir "$T/plain"
out=$("$INSPECT" "$T/plain" super 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "$T/plain" <<<"$out" || fail "a plain directory: exit $rc, want 8 naming it: $out"

if ((fails)); then
	echo "test_inspect: $fails failure(s)" >&2
	exit 1
fi
echo "test_inspect: all passed"
