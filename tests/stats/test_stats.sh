#!/bin/bash
# test_stats.sh BUILD_DIR: the daemon's accounting (user.lsmfs.stats on the
# root) against known workloads: a file written sequentially shows its
# bytes on exactly the disks that hold its chunk files, every write
# sequential; scattered writes are not all sequential; the store's bytes
# are there by kind; the xattr is read-only and not listed.
set -u
B=$(cd "${1:?usage: test_stats.sh BUILD_DIR}" && pwd)
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs
if [[ ! -c /dev/fuse ]]; then
	echo "test_stats: SKIPPED: no /dev/fuse here, so nothing to mount" >&2
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-stats.XXXXXX")
fails=0
cleanup() { fusermount3 -u "$T/mnt" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "test_stats: FAIL: $*" >&2; fails=$((fails + 1)); }
M=$T/mnt
mkdir -p "$T/d1" "$T/d2" "$M"
"$MKFS" -q --chunk-size 65536 "$T/d1" "$T/d2" || { echo "mkfs failed" >&2; exit 1; }
"$LSMFS" "$T/d1:$T/d2" "$M" || { echo "mount failed" >&2; exit 1; }

stats() { python3 -c 'import os, sys; sys.stdout.write(os.getxattr(sys.argv[1], "user.lsmfs.stats").decode())' "$M"; }
# field FILE EXPR: a value out of a stats snapshot, by a Python expression on s
field() { python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

stats > "$T/s0" || fail "getxattr user.lsmfs.stats"
python3 -m json.tool "$T/s0" >/dev/null || fail "stats do not parse: $(cat "$T/s0")"

# ---- a sequential file of 1 MiB + 4 KiB: 17 chunks ----
dd if=/dev/urandom of="$M/seq" bs=64k count=16 conv=fsync status=none
head -c 4096 /dev/urandom >> "$M/seq"
sync "$M/seq"
stats > "$T/s1"
ino=$(stat -c %i "$M/seq")
total=0
for d in 0 1; do
	want=$(find "$T/d$((d + 1))/.lsmfs/sections" -name "$ino.*" -printf '%s\n' | awk '{s += $1} END {print s + 0}')
	got=$(( $(field "$T/s1" "s['disks'][$d]['bytes']") - $(field "$T/s0" "s['disks'][$d]['bytes']") ))
	[[ $got == "$want" ]] || fail "disk $d: stats grew by $got bytes, its chunk files of the file hold $want"
	w=$(( $(field "$T/s1" "s['disks'][$d]['writes']") - $(field "$T/s0" "s['disks'][$d]['writes']") ))
	q=$(( $(field "$T/s1" "s['disks'][$d]['sequential_writes']") - $(field "$T/s0" "s['disks'][$d]['sequential_writes']") ))
	[[ $w -ge 1 && $q == "$w" ]] || fail "disk $d: $q of $w writes sequential, want all (and at least one)"
	f=$(( $(field "$T/s1" "s['disks'][$d]['fsyncs']") - $(field "$T/s0" "s['disks'][$d]['fsyncs']") ))
	[[ $want == 0 || $f -ge 1 ]] || fail "disk $d: no fsync counted for fsynced chunks"
	total=$((total + got))
done
[[ $total == 1052672 ]] || fail "the disks got $total bytes for a 1052672-byte file"
app=$(( $(field "$T/s1" "s['app_bytes_written']") - $(field "$T/s0" "s['app_bytes_written']") ))
[[ $app == 1052672 ]] || fail "app_bytes_written grew by $app, want 1052672"
[[ $(field "$T/s1" "s['store']['since_mount']['log_bytes'] > 0 and s['store']['lifetime']['user_bytes'] > 0") == True ]] ||
	fail "store bytes by kind missing: $(cat "$T/s1")"

# ---- scattered writes into one chunk: not every write sequential ----
python3 - "$M/scat" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.pwrite(fd, b"a" * 70000, 0)        # into chunk 1 as well: a chunked file
os.fsync(fd)
for off in (40960, 8192, 24576):      # back and forth inside chunk 0
    os.pwrite(fd, b"b" * 4096, off)
    os.fsync(fd)
os.close(fd)
PY
stats > "$T/s2"
w=0 q=0
for d in 0 1; do
	w=$((w + $(field "$T/s2" "s['disks'][$d]['writes']") - $(field "$T/s1" "s['disks'][$d]['writes']")))
	q=$((q + $(field "$T/s2" "s['disks'][$d]['sequential_writes']") - $(field "$T/s1" "s['disks'][$d]['sequential_writes']")))
done
[[ $w -ge 5 && $q -lt $w ]] || fail "scattered writes: $q of $w counted sequential"

# ---- read-only and hidden ----
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.lsmfs.stats", b"x")' "$M" 2>/dev/null &&
	fail "setxattr user.lsmfs.stats succeeded"
python3 -c 'import os, sys; sys.exit("user.lsmfs.stats" in os.listxattr(sys.argv[1]))' "$M" ||
	fail "user.lsmfs.stats is listed"
python3 -c 'import os, sys; os.getxattr(sys.argv[1] + "/seq", "user.lsmfs.stats")' "$M" 2>/dev/null &&
	fail "user.lsmfs.stats answers on a file, not only the root"

fusermount3 -u "$M"
if ((fails)); then
	echo "test_stats: $fails failure(s)" >&2
	exit 1
fi
echo "test_stats: all passed"
