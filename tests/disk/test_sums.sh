#!/bin/bash
# test_sums.sh: the checksums of chunk data (fs/SCHEMA.md "Chunk checksums"),
# against a plain directory holding the same files:
#   - files written whole, overwritten in part at odd offsets (blocks
#     covered in part), cut and grown, read back equal after a remount,
#     every chunk record holding its sums after the unmount, fsck clean;
#   - bytes flipped at random in the chunk files: a read never returns a
#     wrong byte: each 4 KiB block holding a flip reads EIO (O_DIRECT, one
#     block at a time), every other block reads as the plain copy, a whole
#     read of a damaged file fails, the log names the chunk file, the disk
#     and the offset; undamaged files read whole; fsck --scrub reports
#     each damaged block (LSMFS-0515) and no other;
#   - the daemon killed while files are overwritten and cut without fsync:
#     the next mount reports no checksum mismatch, reads every file, and
#     after its unmount every record has its sums and fsck is clean.
NAME=test_sums
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "seed $seed (replay with LSMFS_SEED)"
CS=65536
D0=$T/d0 D1=$T/d1 P=$T/plain
mkdir -p "$D0" "$D1" "$M" "$P"
"$MKFS" -q --sections 16 --chunk-size $CS "$D0" "$D1" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1

# Every file of $P against the mount, byte for byte.
compare_all() { # WHAT
	local f
	for f in "$P"/*; do
		cmp -s "$f" "$M/${f##*/}" || fail "$1: ${f##*/} differs from the plain copy"
	done
}
# The records after a clean unmount: each with sums, none in write.
records_summed() { # WHAT
	local out
	out=$("$INSPECT" "$L" keys C 2>&1 | grep "^C ") || { fail "$1: no chunk records: $out"; return; }
	grep -v "checksums of 4096 bytes" <<<"$out" | grep -q . &&
		fail "$1: chunk records without sums: $(grep -v 'checksums of' <<<"$out" | head -3)"
	grep -q "in write" <<<"$out" && fail "$1: records still in write: $(grep 'in write' <<<"$out" | head -3)"
}

mount_fg "$T/daemon.log" "$L" || { echo "mount failed" >&2; exit 1; }
for i in $(seq 12); do
	head -c $((RANDOM * 7 + i * 1000)) /dev/urandom > "$P/f$i"
	cp "$P/f$i" "$M/f$i"
done
# Writes that cover blocks in part, at odd offsets, some past the end.
for i in $(seq 12); do
	for _ in 1 2 3; do
		off=$((RANDOM * 5)) len=$((RANDOM % 9000 + 1))
		head -c $len /dev/urandom > "$T/piece"
		dd if="$T/piece" of="$P/f$i" bs=1 seek=$off conv=notrunc status=none
		dd if="$T/piece" of="$M/f$i" bs=1 seek=$off conv=notrunc status=none
	done
done
# A file written and synced in turn, as a database does (the fsyncs keep
# the in-write mark; the last close records the sums without it).
python3 - "$P/f13" "$M/f13" <<'PY' || fail "writing f13 with fsyncs"
import os, random, sys
r = random.Random(13)
fds = [os.open(p, os.O_CREAT | os.O_RDWR, 0o644) for p in sys.argv[1:]]
for fd in fds:
    os.pwrite(fd, bytes(300000), 0)
for i in range(60):
    off, data = r.randrange(70) * 4096 + (r.randrange(2) * r.randrange(4096)), os.urandom(r.randrange(1, 9000))
    for fd in fds:
        os.pwrite(fd, data, off)
    os.fsync(fds[1])
for fd in fds:
    os.close(fd)
PY
truncate -s 100001 "$P/f1" "$M/f1"
truncate -s 300007 "$P/f2" "$M/f2"
compare_all "written"
umount_wait "$L" || fail "unmount"
records_summed "after a clean unmount"
fsck_clean "$L" "after writing"
mount_fg "$T/daemon.log" "$L" || fail "mount again"
compare_all "after a remount"
grep -q "checksum mismatch" "$T/daemon.log" && fail "mismatch reported on good data: $(grep mismatch "$T/daemon.log")"
umount_wait "$L"

# ---- flipped bytes ----
# Flip bytes at random offsets inside chunk files (within their length):
# remember which file blocks hold a flip.
declare -A bad=()
declare -A badfile=()
mapfile -t chunks < <(find "$D0/.lsmfs/sections" "$D1/.lsmfs/sections" -type f -name '*.*' -size +0)
declare -A ino_name=()
mount_fg "$T/daemon.log" "$L" || fail "mount for inode numbers"
for f in "$P"/*; do ino_name[$(stat -c %i "$M/${f##*/}")]=${f##*/}; done
umount_wait "$L"
f13=$(for i in "${!ino_name[@]}"; do [[ ${ino_name[$i]} == f13 ]] && echo "$i"; done)
for n in $(seq 20); do
	c=${chunks[$((RANDOM % ${#chunks[@]}))]}
	# The first in the file the fsyncs wrote: its sums came from the slot.
	((n == 1)) && c=$(find "$D0/.lsmfs/sections" "$D1/.lsmfs/sections" -name "$f13.1")
	size=$(stat -c %s "$c")
	off=$(( (RANDOM * 32768 + RANDOM) % size ))
	byte=$(od -An -tu1 -j "$off" -N1 "$c" | tr -d ' ')
	printf "\\x$(printf %02x $(( (byte + 1 + RANDOM % 255) % 256 )))" |
		dd of="$c" bs=1 seek="$off" conv=notrunc status=none
	base=${c##*/} ino=${base%%.*} chunk=${base##*.}
	name=${ino_name[$ino]:-}
	[[ -n $name ]] || { fail "chunk file $c of no known file"; continue; }
	bad[$name:$(( (chunk * CS + off) / 4096 ))]=1
	badfile[$name]=1
done
say "${#bad[@]} damaged blocks in ${#badfile[@]} files"
: > "$T/daemon.log"
mount_fg "$T/daemon.log" "$L" || fail "mount after the flips"
for f in "$P"/*; do
	name=${f##*/}
	if [[ -z ${badfile[$name]:-} ]]; then
		cmp -s "$f" "$M/$name" || fail "undamaged $name differs"
		continue
	fi
	cat "$M/$name" > /dev/null 2>&1 && fail "damaged $name read whole without an error"
	size=$(stat -c %s "$f")
	for ((blk = 0; blk * 4096 < size; blk++)); do
		got=$(dd if="$M/$name" bs=4096 skip=$blk count=1 iflag=direct status=none 2>/dev/null | od -An -tx1 | tr -d ' \n')
		rc=${PIPESTATUS[0]}
		want=$(dd if="$f" bs=4096 skip=$blk count=1 status=none | od -An -tx1 | tr -d ' \n')
		if [[ -n ${bad[$name:$blk]:-} ]]; then
			[[ $got != "$want" || -z $want ]] || fail "$name block $blk: damaged, yet read as the plain copy"
			[[ -z $got ]] || fail "$name block $blk: damaged, returned ${#got} hex digits, not EIO"
		else
			[[ $got == "$want" ]] || fail "$name block $blk: undamaged, read wrong (dd exit $rc)"
		fi
	done
done
umount_wait "$L"
n=$(grep -c "checksum mismatch, read as EIO" "$T/daemon.log")
[[ $n -ge 1 ]] || fail "no mismatch logged"
grep -q "/f[0-9]* (inode [0-9]*): bytes [0-9]*\.\.[0-9]* of the file (offset [0-9]* of chunk file $T/d[01]/.lsmfs/sections/[0-9]*/[0-9]*\.[0-9]* on disk [01])" "$T/daemon.log" ||
	fail "the log does not name the file, the chunk file, offset and disk: $(grep mismatch "$T/daemon.log" | head -2)"
for key in "${!bad[@]}"; do
	name=${key%%:*} blk=${key##*:}
	n=$(grep -c "/$name (inode [0-9]*): bytes $((blk * 4096))\.\." "$T/daemon.log")
	[[ $n == 1 ]] || fail "$name block $blk: logged $n times, not once"
done

# Each damaged block counted once against its disk (lsmfs-disk stats).
n=$("$DISK" "$L" stats 2>&1 | awk '/\.checksum_errs/ { n += $2 } END { print n + 0 }')
[[ $n == "${#bad[@]}" ]] || fail "checksum_errs add up to $n, not ${#bad[@]}: $("$DISK" "$L" stats 2>&1)"

# fsck --scrub finds each damaged block, and nothing else.
out=$("$FSCK" -n --scrub "$L" 2>&1); rc=$?
n=$(grep -c "LSMFS-0515" <<<"$out")
[[ $rc == 4 && $n == "${#bad[@]}" ]] ||
	fail "fsck -n --scrub: exit $rc, $n blocks said damaged, not ${#bad[@]}: $(grep -E 'LSMFS|Scrub' <<<"$out" | head -5)"
grep -q "blocks failed them" <<<"$out" || fail "fsck --scrub: no summary: $(tail -2 <<<"$out")"

# ---- a crash while files change without fsync ----
R=$T/r
mkdir -p "$R/d0" "$R/d1"
"$MKFS" -q --sections 16 --chunk-size $CS "$R/d0" "$R/d1" || fail "mkfs r"
RL=$R/d0:$R/d1
for round in 1 2 3; do
	mount_fg "$T/daemon.log" "$RL" || { fail "mount r, round $round"; break; }
	if [[ $round == 1 ]]; then
		for i in $(seq 8); do head -c $((RANDOM * 9)) /dev/urandom > "$M/g$i"; done
		sync -f "$M/g1"
		for i in $(seq 8); do python3 -c "import os,sys; fd=os.open(sys.argv[1],os.O_RDWR); os.fsync(fd)" "$M/g$i"; done
	fi
	# Overwrites and cuts, never synced, under way when the daemon dies.
	(
		for _ in $(seq 400); do
			i=$((RANDOM % 8 + 1))
			off=$((RANDOM * 7)) len=$((RANDOM % 20000 + 1))
			head -c $len /dev/urandom | dd of="$M/g$i" bs=1k seek=$((off / 1024)) conv=notrunc status=none 2>/dev/null
			((RANDOM % 10)) || truncate -s $((RANDOM * 5)) "$M/g$i" 2>/dev/null
		done
	) &
	w=$!
	sleep "0.$((RANDOM % 9 + 1))"
	pid=$(daemon_pid "$RL")
	kill -9 "$pid"
	wait "$w" 2>/dev/null
	fusermount3 -u -z "$M" 2>/dev/null
	for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
	: > "$T/daemon.log"
	mount_fg "$T/daemon.log" "$RL" || { fail "mount r after the kill, round $round"; break; }
	for i in $(seq 8); do
		cat "$M/g$i" > /dev/null || fail "round $round: g$i does not read after the crash"
	done
	umount_wait "$RL" || fail "unmount r, round $round"
	grep -q "checksum mismatch" "$T/daemon.log" &&
		fail "round $round: a crash's unsynced blocks reported as damage: $(grep mismatch "$T/daemon.log" | head -2)"
	L=$RL records_summed "round $round, after the crash's mount and unmount"
	fsck_clean "$RL" "round $round"
done
finish
