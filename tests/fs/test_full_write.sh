#!/usr/bin/env bash
# test_full_write.sh BUILD_DIR (suite fs): a write past the pool's free
# space ends the file where the disks ran out, as on ext4.  Two 40 MiB
# tmpfs disks; a 100 MiB file copied in must fail with ENOSPC, and then
# (once the kernel let go of its cached size) the file is a prefix of what
# was written: shorter than 100 MiB, byte for byte the source's first bytes,
# no block of zeros; the same after a remount; fsck.lsmfs -n clean.  Writes
# go back out of order, so before this rule a later write that landed past
# a failed one left the file longer, with the failed range reading as zeros.
# Needs root and tmpfs (exit 77 otherwise).
set -u
B=$(cd "${1:?usage: test_full_write.sh BUILD_DIR}" && pwd)
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs FSCK=$B/tools/fsck/fsck.lsmfs
skip() { echo "test_full_write: SKIPPED: $*" >&2; exit 77; }
[[ -c /dev/fuse ]] || skip "no /dev/fuse"
[[ $(id -u) == 0 ]] || skip "needs root to mount tmpfs disks"
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-fullw.XXXXXX")
M=$T/m
cleanup() {
	fusermount3 -u "$M" 2>/dev/null
	umount "$T/d1" "$T/d2" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/d1" "$T/d2" "$M"
for d in d1 d2; do
	mount -t tmpfs -o size=40m tmpfs "$T/$d" 2>/dev/null || skip "cannot mount tmpfs"
done
fails=0
fail() { echo "test_full_write: FAIL: $*" >&2; fails=$((fails + 1)); }
umount_gone() {
	local pid; pid=$(head -n1 "$T/d1/.lsmfs/lock" 2>/dev/null)
	fusermount3 -u "$M"
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
}
# A file's zero MiB blocks, and its length.
zero_blocks() {
	python3 -c '
import sys
z = 0
with open(sys.argv[1], "rb") as f:
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        z += b.count(0) == len(b)
print(z)' "$1"
}
# The file as written: a prefix of the source, no zeros, under 100 MiB.
check_prefix() { # WHEN
	local before=$fails size; size=$(stat -c %s "$M/f")
	((size > 0 && size < 100 * 1048576)) || fail "$1: size $size, want more than 0 and less than 100 MiB"
	cmp -s -n "$size" "$M/f" "$T/src" || fail "$1: the file's $size bytes are not the first bytes written"
	local z; z=$(zero_blocks "$M/f")
	[[ $z == 0 ]] || fail "$1: $z MiB of zeros"
	((fails == before)) && echo "test_full_write: $1: $size bytes, the source's first, no zeros"
}

head -c 100M /dev/urandom > "$T/src"
"$MKFS" -q "$T/d1" "$T/d2" || { echo "mkfs failed" >&2; exit 1; }
"$LSMFS" "$T/d1:$T/d2" "$M" || { echo "mount failed" >&2; exit 1; }
err=$(cat "$T/src" 2>&1 > "$M/f"); rc=$?
[[ $rc != 0 ]] && grep -q "No space left on device" <<<"$err" || fail "copying 100 MiB onto 80 MiB: exit $rc, '$err'"
echo 2 > /proc/sys/vm/drop_caches # the kernel forgets its own idea of the size
check_prefix "after the failed copy"
size=$(stat -c %s "$M/f")
umount_gone
"$LSMFS" "$T/d1:$T/d2" "$M" || fail "remount on the full disks"
[[ $(stat -c %s "$M/f") == "$size" ]] || fail "the size changed across a remount: $size -> $(stat -c %s "$M/f")"
check_prefix "after a remount"
# Room again: the same file can be written to its end once space is freed
# (the failure held only while the file was open).
truncate -s 0 "$M/f" && head -c 10M "$T/src" > "$M/f" || fail "rewriting 10 MiB after freeing space"
cmp -s "$M/f" <(head -c 10M "$T/src") || fail "the rewritten file differs"
umount_gone
out=$("$FSCK" -n "$T/d1:$T/d2" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "fsck -n after the full write: exit $rc: $out"
if ((fails)); then
	echo "test_full_write: $fails failure(s)" >&2
	exit 1
fi
echo "test_full_write: all passed"
