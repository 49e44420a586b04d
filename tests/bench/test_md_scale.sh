#!/bin/bash
# test_md_scale.sh BUILD_DIR: tools/bench/md-scale.sh at a toy size (1,000
# files in 10 directories, lsmfs and the ext4 loop image, cold caches):
#  1. exits 0 and prints every row of its table with numbers, the create
#     slices, last/first, the daemon's VmHWM and the write amplification
#     with its formula;
#  2. leaves nothing: no mount or loop device on its work directory, which
#     is empty, no daemon;
#  3. a usage error and a work directory with too little room exit 2 and
#     make nothing.
# Skips (77) without root, /dev/fuse, mkfs.ext4 or a free loop device.
set -u
B=$(cd "${1:?usage: test_md_scale.sh BUILD_DIR}" && pwd)
MDS=$(cd "$(dirname "$0")/../../tools/bench" && pwd)/md-scale.sh
skip() { echo "test_md_scale: SKIPPED: $*" >&2; exit 77; }
[[ $(id -u) == 0 ]] || skip "not root (md-scale drops caches and mounts a loop image)"
[[ -c /dev/fuse ]] || skip "no /dev/fuse"
command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4"
losetup -f >/dev/null 2>&1 || skip "no free loop device"
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-mdscaletest.XXXXXX")
export BENCH_BIN=$T/bin
W=$T/work
mkdir -p "$W"
fails=0
cleanup() {
	awk -v t="$T/" 'index($5, t) == 1 {print $5}' /proc/self/mountinfo | sort -r |
		while read -r m; do fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	losetup -j "$W" 2>/dev/null | cut -d: -f1 | while read -r d; do losetup -d "$d"; done
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "test_md_scale: FAIL: $*" >&2; fails=$((fails + 1)); }

# 1. A run.
"$MDS" -B "$B" -w "$W" -n 1000 -d 10 -c 200 --settle 2 >"$T/out" 2>&1
rc=$?
((rc == 0)) || fail "md-scale exit $rc"
num='[0-9]+(\.[0-9]+)?'
for row in mkdir create "stat \(random\)" "find \| wc -l" "du -s" "read \(random, whole\)"; do
	grep -Eq "^$row +[a-z/]+ +$num +$num +$num +$num +$num$" "$T/out" ||
		fail "no row '$row' with numbers"
done
[[ $(grep -Ec "^  slice +[0-9]+ +$num +$num$" "$T/out") == 10 ]] || fail "not 10 create slices"
grep -Eq "^lsmfs create rate: first slice $num files/s, last $num files/s, last/first $num" "$T/out" ||
	fail "no last/first"
grep -Eq "^lsmfs daemon peak RSS \(VmHWM before unmount\): [0-9]+ MiB" "$T/out" || fail "no VmHWM"
grep -q "write amplification = (log + flush + compaction + manifest bytes) / user bytes" "$T/out" ||
	fail "no write amplification formula"
grep -Eq "^  \([0-9]+ \+ [0-9]+ \+ [0-9]+ \+ [0-9]+\) / [0-9]+ = $num$" "$T/out" ||
	fail "no write amplification figure"
((fails == 0)) || sed 's/^/  | /' "$T/out" >&2

# 2. Nothing left.
[[ -z $(ls -A "$W") ]] || fail "left in the work directory: $(ls -A "$W")"
awk -v t="$T/" 'index($5, t) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo &&
	fail "a mount left under $T"
[[ -z $(losetup -j "$W" 2>/dev/null) ]] || fail "a loop device left on $W"
pgrep -f "^$B/fs/lsmfs $W/" >/dev/null && fail "a daemon left"

# 3. Refusals make nothing.
"$MDS" -B "$B" -w "$W" -n 1000 --cache lukewarm >/dev/null 2>&1
rc=$?
((rc == 2)) || fail "usage error: exit $rc, want 2"
mkdir -p "$T/small"
mount -t tmpfs -o size=64m tmpfs "$T/small" || fail "cannot mount a tmpfs"
"$MDS" -B "$B" -w "$T/small" -n 1000000 -d 1000 >"$T/out2" 2>&1
rc=$?
((rc == 2)) || fail "too little room: exit $rc, want 2"
grep -q "free, the run needs about" "$T/out2" || fail "too little room: no message"
[[ -z $(ls -A "$T/small") ]] || fail "a refused run made $(ls -A "$T/small")"
umount "$T/small"
[[ -z $(ls -A "$W") ]] || fail "a refused run made $(ls -A "$W")"

((fails == 0)) && echo "test_md_scale: ok"
((fails == 0))
