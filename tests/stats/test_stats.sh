#!/bin/bash
# test_stats.sh BUILD_DIR: the daemon's accounting (user.lsmfs.stats on the
# root) against known workloads: a file written sequentially shows its
# bytes on exactly the disks that hold its chunk files, every write
# sequential; scattered writes are not all sequential; the store's bytes
# are there by kind; the xattr is read-only and not listed.  The same
# figures in <store>/stats.json through lsmfs-inspect stats: equal to the
# xattr's while mounted, final (mounted false, nothing smaller) after
# unmount, kept by fsck -n and the next mount; a damaged file is exit 8, a
# missing one exit 1, never a sanitizer report.
NAME=test_stats
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
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

# ---- <store>/stats.json through lsmfs-inspect, while mounted ----
DISKS=$T/d1:$T/d2 SJ=$T/d1/.lsmfs/meta/stats.json
# sanitized FILE: fail if a sanitizer spoke in FILE (a tool's stderr)
sanitized() { grep -q -e 'Sanitizer' -e 'runtime error' "$1" && fail "sanitizer report: $(head -c 2000 "$1")"; }
# wait_final: until stats.json says the daemon unmounted (the daemon
# finishes its close after fusermount3 returns)
wait_final() {
	for _ in $(seq 100); do
		[[ $(field "$SJ" "s['mounted']" 2>/dev/null) == False ]] && return 0
		sleep 0.1
	done
	return 1
}
# wait_gone: until the daemon has exited (it holds disk 1's lock till then),
# so the next mount or fsck does not meet its last store writes
wait_gone() { flock -w 10 "$T/d1/.lsmfs/lock" true || fail "the daemon did not exit within 10 s of unmount"; }
dd if=/dev/urandom of="$M/known" bs=64k count=3 conv=fsync status=none
sleep 3 # the daemon refreshes the file every 2 s while a counter moves
"$INSPECT" --json "$DISKS" stats > "$T/i1" 2> "$T/i1.err" || fail "lsmfs-inspect --json stats: exit $? $(cat "$T/i1.err")"
read_at=$(date +%s.%N) # the checks below take seconds on a slow python
stats > "$T/x1" # right after, nothing written between
sanitized "$T/i1.err"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/i1" ||
	fail "lsmfs-inspect --json stats does not parse: $(head -c 2000 "$T/i1")"
for d in 0 1; do
	for k in bytes writes fsyncs sequential_writes path; do
		a=$(field "$T/i1" "s['disks'][$d]['$k']") b=$(field "$T/x1" "s['disks'][$d]['$k']")
		[[ $a == "$b" ]] || fail "disk $d: stats.json says $k $a, the xattr right after $b"
	done
done
[[ $(field "$T/i1" "s['app_bytes_written']") == $(field "$T/x1" "s['app_bytes_written']") ]] ||
	fail "stats.json and the xattr disagree on app_bytes_written"
[[ $(field "$T/i1" "s['version'] == 1 and s['mounted'] is True and s['daemon_pid'] > 1") == True ]] ||
	fail "stats.json while mounted: $(head -c 2000 "$T/i1")"
pid=$(field "$T/i1" "s['daemon_pid']")
[[ $(cat "/proc/$pid/comm" 2>/dev/null) == lsmfs ]] || fail "daemon_pid $pid is not the lsmfs daemon"
[[ $(field "$T/i1" "abs($read_at - s['written_at']) < 10") == True ]] ||
	fail "stats.json written_at is not recent: $(field "$T/i1" "s['written_at']")"
"$INSPECT" "$DISKS" stats > "$T/t1" 2> "$T/t1.err" || fail "lsmfs-inspect stats (text): exit $?"
sanitized "$T/t1.err"
for p in "$T/d1" "$T/d2"; do
	grep -qF "$p" "$T/t1" || fail "lsmfs-inspect stats text does not name disk $p: $(cat "$T/t1")"
done
grep -q 'while mounted' "$T/t1" || fail "lsmfs-inspect stats text does not say mounted: $(cat "$T/t1")"
grep -q 'write amplification.*data [0-9]' "$T/t1" || fail "no write amplification in: $(cat "$T/t1")"

stats > "$T/x2" # the last xattr read before unmount
fusermount3 -u "$M"
# ---- after unmount: the final figures, none below the last xattr read ----
wait_final || fail "stats.json does not say mounted false after unmount: $(head -c 2000 "$SJ")"
wait_gone
python3 - "$T/x2" "$SJ" <<'PY' || fail "stats.json after unmount is behind the last xattr read"
import json, sys
last, final = (json.load(open(f)) for f in sys.argv[1:3])
bad = []
def walk(a, b, path):
    if isinstance(a, bool) or isinstance(a, str):
        return
    if isinstance(a, (int, float)):
        if not isinstance(b, (int, float)) or b < a:
            bad.append(f"{path}: {b} < {a}")
    elif isinstance(a, dict):
        for k in a:
            walk(a[k], b.get(k), f"{path}.{k}") if isinstance(b, dict) else bad.append(path)
    elif isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            bad.append(path)
        else:
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}[{i}]")
walk(last, final, "")
if final["daemon_pid"] != last["daemon_pid"]:
    bad.append("daemon_pid changed")
for b in bad:
    print("test_stats:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
"$INSPECT" "$DISKS" stats > "$T/t2" 2>&1 || fail "lsmfs-inspect stats after unmount: exit $?"
grep -q 'at unmount' "$T/t2" || fail "lsmfs-inspect stats after unmount does not say so: $(cat "$T/t2")"

# ---- the store's tools and the next mount keep the file ----
"$FSCK" -n "$DISKS" > "$T/fsck.out" 2>&1 || fail "fsck.lsmfs -n with stats.json present: exit $?: $(cat "$T/fsck.out")"
[[ -f $SJ ]] || fail "fsck.lsmfs -n removed stats.json"
"$LSMFS" "$DISKS" "$M" || { echo "remount failed" >&2; exit 1; }
for _ in $(seq 50); do
	[[ $(field "$SJ" "s['mounted'] and s['daemon_pid'] != $pid" 2>/dev/null) == True ]] && break
	sleep 0.1
done
[[ $(field "$SJ" "s['mounted'] and s['daemon_pid'] != $pid") == True ]] ||
	fail "the next mount does not write stats.json: $(head -c 2000 "$SJ")"
fusermount3 -u "$M"
wait_final || fail "stats.json does not say mounted false after the second unmount"
wait_gone
ls "$T/d1/.lsmfs/meta" | grep -q '\.new$' && fail "a temporary stats file is left: $(ls "$T/d1/.lsmfs/meta")"

# ---- damaged and missing files: exit 8 and 1, no sanitizer report ----
cp "$SJ" "$T/good.json"
for bad in garbage truncated; do
	if [[ $bad == garbage ]]; then printf 'garbage{"\x01[' > "$SJ"; else head -c 120 "$T/good.json" > "$SJ"; fi
	for j in --json ""; do
		"$INSPECT" $j "$DISKS" stats > "$T/b.out" 2> "$T/b.err"
		rc=$?
		[[ $rc == 8 ]] || fail "lsmfs-inspect $j stats on a $bad stats.json: exit $rc, want 8"
		grep -qF "$SJ" "$T/b.err" || fail "the $bad stats.json's error does not name it: $(cat "$T/b.err")"
		sanitized "$T/b.err"
	done
done
rm -f "$SJ"
"$INSPECT" --json "$DISKS" stats > "$T/b.out" 2> "$T/b.err"
rc=$?
[[ $rc == 1 ]] || fail "lsmfs-inspect stats without stats.json: exit $rc, want 1"
grep -qF "no statistics: $SJ does not exist" "$T/b.err" || fail "missing stats.json: $(cat "$T/b.err")"
sanitized "$T/b.err"

finish
