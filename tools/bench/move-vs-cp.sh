#!/bin/bash
# move-vs-cp.sh BUILD_DIR [MIB] [ROUNDS]: how fast lsmfs-disk moves sections,
# against cp -a of the same section directories between the same two disks,
# and what a sequential reader loses while every section of its file moves.
# Root; two loop-mounted ext4 images under $TMPDIR (3 x MIB each).
#
#   1. Moves: lsmfs over disks A and B holds MIB MiB in 8 files.  Each round,
#      interleaved, caches dropped before each: `cp -a` of A's section
#      directories to a scratch directory on B (timed alone, and with the
#      `sync -f` that makes it durable, as each move is), then lsmfs-disk
#      (offline) moving all of A's sections to B, then (untimed) back.
#      Best of ROUNDS rounds, median beside it.
#   2. Reader: a MIB MiB file, all sections on A; `dd bs=1M` of it with
#      caches dropped, alone and while lsmfs-disk moves every section to B
#      online (each round moves them back first, untimed).
set -eu
B=$(cd "${1:?usage: move-vs-cp.sh BUILD_DIR [MIB] [ROUNDS]}" && pwd)
MIB=${2:-1024} ROUNDS=${3:-3}
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs DISK=$B/tools/disk/lsmfs-disk
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-movebench.XXXXXX")
A=$T/a BD=$T/b M=$T/mnt
cleanup() {
	fusermount3 -u "$M" 2>/dev/null || true
	umount "$A" "$BD" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$A" "$BD" "$M"
for d in a b; do
	truncate -s $((MIB * 3))M "$T/$d.img"
	mkfs.ext4 -q -F "$T/$d.img"
	mount -o loop "$T/$d.img" "$T/$d"
done
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
dt() { awk -v a="$1" -v b="$2" 'BEGIN { print b - a }'; }
rate() { awk -v b="$1" -v t="$2" 'BEGIN { printf "%.1f", b / 1048576 / t }'; }
best_median() { sort -g | awk '{ v[NR] = $1 } END { printf "best %s, median %s", v[NR], v[int((NR + 1) / 2)] }'; }
held() { find "$1/.lsmfs/sections" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

"$MKFS" -q --sections 64 "$A" "$BD"
"$LSMFS" "$A:$BD" "$M"
for i in $(seq 8); do head -c $((MIB * 1048576 / 8)) /dev/urandom > "$M/f$i"; done
fusermount3 -u "$M"; sleep 1
"$DISK" "$A:$BD" rebalance --weight 0=1 --weight 1=0 > /dev/null # all on A

: > "$T/cp" : > "$T/cpsync" : > "$T/move"
for r in $(seq "$ROUNDS"); do
	bytes=$(held "$A")
	drop
	t0=$(now)
	cp -a "$A/.lsmfs/sections" "$BD/scratch"
	t1=$(now)
	sync -f "$BD/scratch"
	t2=$(now)
	echo "$(rate "$bytes" "$(dt "$t0" "$t1")")" >> "$T/cp"
	echo "$(rate "$bytes" "$(dt "$t0" "$t2")")" >> "$T/cpsync"
	rm -rf "$BD/scratch"; sync -f "$BD"; fstrim "$BD" 2>/dev/null || true
	drop
	t0=$(now)
	"$DISK" "$A:$BD" rebalance --weight 0=0 --weight 1=1 > /dev/null
	t1=$(now)
	echo "$(rate "$bytes" "$(dt "$t0" "$t1")")" >> "$T/move"
	echo "round $r: $bytes bytes: cp -a $(tail -1 "$T/cp") MiB/s, cp -a + sync $(tail -1 "$T/cpsync") MiB/s, lsmfs-disk $(tail -1 "$T/move") MiB/s"
	"$DISK" "$A:$BD" rebalance --weight 0=1 --weight 1=0 > /dev/null
done
echo "cp -a:          $(best_median < "$T/cp") MiB/s"
echo "cp -a + sync:   $(best_median < "$T/cpsync") MiB/s"
echo "lsmfs-disk:     $(best_median < "$T/move") MiB/s"

# ---- 2. a reader while every section of its file moves ----
"$LSMFS" "$A:$BD" "$M"
rm -f "$M"/f*
head -c $((MIB * 1048576)) /dev/urandom > "$M/big"
sync -f "$M"
: > "$T/alone" : > "$T/moving"
read_rate() { # -> MiB/s of one dd of the whole file, caches dropped
	local out
	out=$(dd if="$M/big" of=/dev/null bs=1M 2>&1 | tail -1)
	awk '{ for (i = 1; i < NF; i++) if ($(i + 1) ~ /^s,/) t = $i } END { printf "%.1f\n", '"$MIB"' / t }' <<<"$out"
}
for r in $(seq "$ROUNDS"); do
	"$DISK" "$M" rebalance --weight 0=1 --weight 1=0 > /dev/null
	drop
	read_rate >> "$T/alone"
	drop
	"$DISK" "$M" rebalance --weight 0=0 --weight 1=1 > "$T/moves.out" 2>&1 &
	mover=$!
	read_rate >> "$T/moving"
	wait "$mover"
	echo "round $r: read alone $(tail -1 "$T/alone") MiB/s, while its sections move $(tail -1 "$T/moving") MiB/s ($(grep -c '^moved' "$T/moves.out") moves)"
done
echo "read alone:     $(best_median < "$T/alone") MiB/s"
echo "read, moving:   $(best_median < "$T/moving") MiB/s"
fusermount3 -u "$M"
