#!/bin/bash
# scrub-vs-cat.sh BUILD_DIR [MIB] [ROUNDS]: how fast `lsmfs-disk scrub`
# reads and checks data kept in two copies (issue 36: at least 0.8x of
# `cat` of the same files to /dev/null, cold caches).  Root (it drops the
# page cache); two disk directories under ${TMPDIR:-/var/tmp}, one backing
# filesystem, MIB MiB (default 1024) of files in a directory of copies=2,
# so 2 x MIB MiB of chunk files.  Each round, in a new random order, caches
# dropped before each:
#   - cat of the files through the mount (reads one copy: MIB MiB);
#   - cat of every chunk file of both copies, on the disks (2 x MIB MiB);
#   - lsmfs-disk MNT scrub start -B (reads both copies: 2 x MIB MiB), its
#     rate as the daemon measured it (scrub status: bytes / elapsed), and
#     the wall time of the command beside it.
# Rates are bytes read per second; best of ROUNDS with the median beside
# (a shared machine only ever slows a run down), and the ratios of the
# medians.
set -eu
B=$(cd "${1:?usage: scrub-vs-cat.sh BUILD_DIR [MIB] [ROUNDS]}" && pwd)
MIB=${2:-1024} ROUNDS=${3:-3}
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs DISK=$B/tools/disk/lsmfs-disk
T=$(mktemp -d "${TMPDIR:-/var/tmp}/lsmfs-scrubbench.XXXXXX")
M=$T/mnt
cleanup() {
	fusermount3 -u "$M" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/d0" "$T/d1" "$M"
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
rate() { awk -v b="$1" -v a="$2" -v c="$3" 'BEGIN { printf "%.1f\n", b / 1048576 / (c - a) }'; }
best_median() { sort -g | awk '{ v[NR] = $1 } END { printf "best %s, median %s", v[NR], v[int((NR + 1) / 2)] }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

"$MKFS" -q "$T/d0" "$T/d1"
"$LSMFS" "$T/d0:$T/d1" "$M"
mkdir "$M/c"
setfattr -n user.lsmfs.copies -v 2 "$M/c"
for i in $(seq 16); do head -c $((MIB * 1048576 / 16)) /dev/urandom > "$M/c/f$i"; done
fusermount3 -u "$M"; sleep 1 # every chunk's sums recorded, none in write
"$LSMFS" "$T/d0:$T/d1" "$M"
files=$((MIB * 1048576 / 16 * 16))
chunks=$(find "$T/d0/.lsmfs/sections" "$T/d1/.lsmfs/sections" -type f -printf '%s\n' |
	awk '{ s += $1 } END { printf "%.0f\n", s }')

: > "$T/cat" : > "$T/raw" : > "$T/scrub" : > "$T/wall"
for r in $(seq "$ROUNDS"); do
	for what in $(printf '%s\n' cat raw scrub | shuf); do
		drop
		t0=$(now)
		case $what in
		cat) cat "$M"/c/* > /dev/null ;;
		raw) find "$T/d0/.lsmfs/sections" "$T/d1/.lsmfs/sections" -type f -exec cat {} + > /dev/null ;;
		scrub) "$DISK" "$M" scrub start -B > /dev/null ;;
		esac
		t1=$(now)
		case $what in
		cat) rate "$files" "$t0" "$t1" >> "$T/cat" ;;
		raw) rate "$chunks" "$t0" "$t1" >> "$T/raw" ;;
		scrub)
			"$DISK" "$M" scrub status --json | python3 -c 'import json, sys
j = json.load(sys.stdin)
assert j["state"] == "finished" and j["errors"] == 0, j
print("%.1f" % (j["bytes"] / 1048576 / j["elapsed"]))' >> "$T/scrub"
			rate "$chunks" "$t0" "$t1" >> "$T/wall" ;;
		esac
	done
	echo "round $r: cat $(tail -1 "$T/cat") MiB/s, chunk files $(tail -1 "$T/raw") MiB/s," \
		"scrub $(tail -1 "$T/scrub") MiB/s ($(tail -1 "$T/wall") MiB/s with the tool)"
done
echo "cat via the mount ($MIB MiB, one copy):     $(best_median < "$T/cat") MiB/s"
echo "cat of both copies' chunk files:            $(best_median < "$T/raw") MiB/s"
echo "scrub ($((chunks / 1048576)) MiB, both copies):             $(best_median < "$T/scrub") MiB/s"
echo "scrub, wall time of scrub start -B:         $(best_median < "$T/wall") MiB/s"
awk -v s="$(median < "$T/scrub")" -v c="$(median < "$T/cat")" -v r="$(median < "$T/raw")" \
	'BEGIN { printf "medians: scrub / cat %.2fx, scrub / chunk files %.2fx\n", s / c, s / r }'
