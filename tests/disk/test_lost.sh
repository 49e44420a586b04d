#!/bin/bash
# test_lost.sh BUILD_DIR: a data disk dead for good (fs/SCHEMA.md "A disk
# lost").
#
#   - three disks; disk 2 goes away.  A mount without it is refused and
#     says -o degraded; with -o degraded the files that had chunk files on
#     it fail with EIO and every other file reads byte-identical; status
#     says MISSING and degraded;
#   - `lsmfs-disk MNT remove --lost missing` (online) lists exactly the
#     files that had chunk files on disk 2, by path; every other file is
#     byte-identical; a listed file reads and writes EIO in its lost
#     chunks, truncates (below and into a lost chunk), and reads right once
#     rewritten; new files go to every section; fsck -n clean after, and
#     it counts what is lost; the disk, brought back, is refused;
#   - the disk holding a copy of the store lost, dropped offline
#     (`lsmfs-disk DISKS remove --lost 1`): the copy count is restored on
#     the disk left, fsck clean, files as before;
#   - SIGKILL of the daemon during remove --lost (3 rounds, random delay):
#     run again when the disk is still a member; every kept file the same,
#     the lost ones EIO, fsck clean.
NAME=test_lost
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

# Fill $M: inline files, files of a few chunks, a sparse one.
fill() {
	mkdir -p "$M/a/b" "$M/c"
	for i in $(seq 60); do head -c $((i * 7000)) /dev/urandom > "$M/a/f$i"; done
	for i in $(seq 20); do echo "small $i" > "$M/a/b/s$i"; done
	head -c 2000000 /dev/urandom > "$M/c/big"
	truncate -s 10M "$M/c/sparse"
	printf 'tail' | dd of="$M/c/sparse" bs=1 seek=$((9 << 20)) conv=notrunc status=none
	sync -f "$M/c/big"
}
# After fill, with DISK about to be lost: $T/expect, the files with chunk
# files on it; $T/kept, the others, and their sums in $T/sums.kept.
note_files() { # DISK
	on_disk "$1" > "$T/expect"
	(cd "$M" && find . -type f -printf '/%P\n' | sort) > "$T/all"
	comm -23 "$T/all" "$T/expect" > "$T/kept"
	(cd "$M" && while read -r f; do sha256sum ".$f"; done < "$T/kept") > "$T/sums.kept"
}
# Every kept file reads as noted, and every file of the lost disk fails.
check_files() { # WHAT
	local bad=0 f
	(cd "$M" && sha256sum --quiet -c "$T/sums.kept") || fail "$1: a file not on the lost disk differs"
	while read -r f; do
		if cat "$M$f" > /dev/null 2>&1; then bad=$((bad + 1)); fi
	done < "$T/expect"
	[[ $bad == 0 ]] || fail "$1: $bad files with chunks on the lost disk read without error"
}
# The paths lsmfs-disk listed as lost (its output in OUT) against $T/expect.
check_listed() { # WHAT OUT
	grep '^lost: ' <<<"$2" | sed 's/^lost: \(.*\): [0-9]* chunks\{0,1\}, .*/\1/' | sort > "$T/listed"
	cmp -s "$T/listed" "$T/expect" ||
		fail "$1: other files listed than the lost disk held: $(diff "$T/listed" "$T/expect" | head)"
}

D0=$T/d0 D1=$T/d1 D2=$T/d2
mkdir -p "$D0" "$D1" "$D2" "$M"
"$MKFS" -q --sections 64 --chunk-size 65536 "$D0" "$D1" "$D2" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1:$D2 L2=$D0:$D1
mount_fg "$T/daemon.log" "$L" || { echo "mount failed" >&2; exit 1; }
fill
note_files "$D2"
[[ $(wc -l < "$T/expect") -ge 10 ]] || fail "setup: only $(wc -l < "$T/expect") files on disk 2"
umount_wait "$L" || fail "unmount"
mv "$D2" "$T/d2.gone"

# ---- mounting without it ----
out=$("$LSMFS" "$L2" "$M" 2>&1); rc=$?
mounted && { fusermount3 -u "$M"; fail "mounted with disk 2 missing, without -o degraded"; }
grep -q "missing from the list.*-o degraded" <<<"$out" || fail "refusal does not say -o degraded: $out"
mount_fg "$T/daemon.log" -o degraded "$L2" || fail "mount -o degraded"
check_files "degraded"
cat "$M$(head -1 "$T/expect")" > /dev/null 2> "$T/err"
grep -q "Input/output error" "$T/err" || fail "degraded: not EIO: $(cat "$T/err")"
out=$("$DISK" "$M" status 2>&1)
grep -q "MISSING" <<<"$out" || fail "status does not say MISSING: $out"
"$DISK" "$M" status --json | grep -q '"degraded":true' || fail "status --json: not degraded"
grep -q "DEGRADED: disk 2 is missing" "$T/daemon.log" || fail "the log does not say degraded: $(cat "$T/daemon.log")"
echo "made degraded" > "$M/a/b/new-small" || fail "degraded: an inline file cannot be made"
out=$("$DISK" "$M" rebalance 2>&1) && fail "rebalance with a disk missing succeeded: $out"

# ---- remove --lost, online ----
out=$("$DISK" "$M" remove --lost missing 2>&1); rc=$?
[[ $rc == 0 ]] || fail "remove --lost: exit $rc: $out"
check_listed "remove --lost" "$out"
check_files "after --lost"
out=$("$DISK" "$M" status 2>&1)
grep -q "MISSING\|DEGRADED" <<<"$out" && fail "status after --lost: $out"
[[ $(grep -c '^[0-9]' <<<"$out") == 2 ]] || fail "status after --lost: not two disks: $out"
# A lost file: rewritten whole (O_TRUNC), it reads right.
f=$(head -1 "$T/expect")
head -c 300000 /dev/urandom > "$T/new"
cp "$T/new" "$M$f" || fail "rewriting a lost file"
cmp -s "$T/new" "$M$f" || fail "a lost file rewritten reads wrong"
# Another: a write into a lost chunk fails; a truncation into one works and
# what is left of the chunk still fails.
g=$(sed -n 2p "$T/expect")
size=$(stat -c %s "$M$g")
lost_off=-1
for ((o = 0; o < size; o += 65536)); do
	if ! dd if="$M$g" of=/dev/null bs=65536 skip=$((o / 65536)) count=1 status=none 2>/dev/null; then
		lost_off=$o
		break
	fi
done
if [[ $lost_off -ge 0 ]]; then
	printf 'x' | dd of="$M$g" bs=1 seek=$((lost_off + 10)) conv=notrunc status=none 2>/dev/null &&
		fail "a write into a lost chunk of $g succeeded"
	truncate -s $((lost_off + 100)) "$M$g" || fail "truncating $g into its lost chunk"
	[[ $(stat -c %s "$M$g") == $((lost_off + 100)) ]] || fail "truncate into a lost chunk: size"
	dd if="$M$g" of=/dev/null bs=100 skip=$((lost_off / 100)) count=1 status=none 2>/dev/null &&
		[[ $((lost_off % 100)) == 0 ]] && fail "the rest of a lost chunk reads after truncation"
	truncate -s "$lost_off" "$M$g" || fail "truncating $g to its lost chunk's start"
	cat "$M$g" > /dev/null || fail "$g cut before its first lost chunk does not read"
else
	fail "no lost chunk found in $g"
fi
# New files reach every section.
for i in $(seq 30); do head -c 200000 /dev/urandom > "$M/c/n$i"; done
(cd "$M/c" && sha256sum n*) > "$T/sums.new"
umount_wait "$L2" || fail "unmount after --lost"
out=$("$FSCK" -n "$L2" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "fsck -n after --lost: exit $rc: $(grep LSMFS- <<<"$out" | head -5)"
grep -q "marked lost (a disk removed with --lost" <<<"$out" || fail "fsck does not count the lost chunks: $out"
mount_fg "$T/daemon.log" "$L2" || fail "mount (not degraded) after --lost"
(cd "$M" && sha256sum --quiet -c "$T/sums.kept") || fail "remounted: a kept file differs"
(cd "$M/c" && sha256sum --quiet -c "$T/sums.new") || fail "remounted: a new file differs"
cmp -s "$T/new" "$M$f" || fail "remounted: the rewritten file differs"
umount_wait "$L2"
mv "$T/d2.gone" "$D2"
out=$("$LSMFS" "$L" "$M" 2>&1)
mounted && { fusermount3 -u "$M"; fail "the lost disk, back, was taken as a member"; }
grep -q "no longer a disk of this filesystem" <<<"$out" || fail "the lost disk back: $out"
say "disk 2 lost: $(wc -l < "$T/expect") files listed, $(wc -l < "$T/kept") kept"

# ---- the disk of a store copy lost, dropped offline ----
P=$T/p
mkdir -p "$P/d0" "$P/d1" "$P/d2"
"$MKFS" -q --sections 32 --chunk-size 65536 "$P/d0" "$P/d1" "$P/d2" || fail "mkfs p"
PL=$P/d0:$P/d1:$P/d2
mount_fg "$T/daemon.log" "$PL" || fail "mount p"
fill
note_files "$P/d1"
umount_wait "$PL"
rm -rf "$P/d1"
out=$("$DISK" "$P/d0:$P/d2" remove --lost 1 2>&1); rc=$?
[[ $rc == 0 ]] || fail "remove --lost 1 offline: exit $rc: $out"
grep -q "a new copy of the metadata store on disk 2" <<<"$out" || fail "copy not restored: $out"
check_listed "offline --lost" "$out"
fsck_clean "$P/d0:$P/d2" "store copy's disk lost"
out=$("$DISK" "$P/d0:$P/d2" status 2>&1)
grep -q "metadata store: 2 copies" <<<"$out" && ! grep -q DEGRADED <<<"$out" ||
	fail "status after the copy's disk was lost: $out"
mount_fg "$T/daemon.log" "$P/d0:$P/d2" || fail "mount p after --lost"
(cd "$M" && sha256sum --quiet -c "$T/sums.kept") || fail "store copy's disk lost: a kept file differs"
umount_wait "$P/d0:$P/d2"

# ---- SIGKILL of the daemon during remove --lost, then run again ----
seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "SIGKILL during remove --lost: seed $seed"
for round in 1 2 3; do
	K=$T/k$round
	mkdir -p "$K/d0" "$K/d1" "$K/d2"
	"$MKFS" -q --sections 64 --chunk-size 65536 "$K/d0" "$K/d1" "$K/d2" || fail "mkfs k$round"
	mount_fg "$T/daemon.log" "$K/d0:$K/d1:$K/d2" || { fail "mount k$round"; continue; }
	fill
	note_files "$K/d2"
	umount_wait "$K/d0:$K/d1:$K/d2"
	rm -rf "$K/d2"
	KL=$K/d0:$K/d1
	"$LSMFS" -o degraded "$KL" "$M" || { fail "mount -o degraded k$round"; continue; }
	pid=$(daemon_pid "$KL")
	"$DISK" "$M" remove --lost missing > "$T/kill.out" 2>&1 &
	tool=$!
	sleep "$(printf '0.%03d' $((RANDOM % 60)))"
	kill -9 "$pid"
	wait "$tool"
	fusermount3 -u -z "$M" 2>/dev/null
	for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
	out=$("$DISK" "$KL" status 2>&1)
	if grep -q MISSING <<<"$out"; then # not finished: mount degraded, run again
		mount_fg "$T/daemon.log" -o degraded "$KL" || { fail "k$round: remount degraded"; continue; }
		out=$("$DISK" "$M" remove --lost missing 2>&1) || fail "k$round: remove --lost again: $out"
	else
		mount_fg "$T/daemon.log" "$KL" || { fail "k$round: mount after the kill"; continue; }
	fi
	check_files "k$round"
	umount_wait "$KL" || fail "k$round: unmount"
	fsck_clean "$KL" "k$round: killed during remove --lost"
done

[[ $fails == 0 ]] || { echo "$NAME: $fails failure(s)" >&2; exit 1; }
say "PASS"
