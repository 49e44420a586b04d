#!/bin/bash
# test_place.sh BUILD_DIR: new chunks go where there is room (issue 36,
# "Placement that uses the pool's free space"), each case a differential
# check against a plain directory ($P) holding the same bytes:
#   - unequal disks, a 64 MiB and a 1 GiB tmpfs (the store in a directory
#     of its own): files of 8 MiB are written until ENOSPC, which must not
#     come before the pool as a whole is full (each disk left with less
#     than two chunks); every file written whole reads back equal after a
#     remount; once half of them are removed a 32 MiB file can be written;
#     fsck -n clean;
#   - a disk holding 200 MiB of other data beside its .lsmfs, two tmpfs of
#     300 MiB: statfs's f_bavail is the two disks' free space (each
#     backing filesystem once), a 100 MiB write succeeds and reads back
#     equal; fsck -n clean;
#   - a degraded mount (disk 2 of three missing, -o degraded): 40 new
#     files of 4 MiB, each fsync'd, no error; a clean unmount; mounted
#     whole, every file equal to its plain copy; fsck -n clean;
#   - two copies over a 96 MiB and a 256 MiB tmpfs: f_bavail is what two
#     copies can take (as btrfs raid1: no more than the smaller disk), and
#     fallocate past it is ENOSPC;
#   - two copies of the store, one on a disk filled from outside: 200
#     mkdirs and small files succeed (the full copy is dropped, said), the
#     mount after room came back brings it up to date, fsck clean.
# Needs root (tmpfs mounts) and /dev/fuse; exit 77 without them.
NAME=test_place
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

MiB=1048576
CS=$((4 * MiB)) # the chunk size: mkfs.lsmfs's default
P=$T/plain
mkdir -p "$M" "$P"
TMPFS=()
cleanup_more() {
	local t
	for t in "${TMPFS[@]}"; do
		umount "$t" 2>/dev/null || umount -l "$t" 2>/dev/null
	done
}
skip() { echo "$NAME: SKIPPED: $*" >&2; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root to mount tmpfs disks"
tmpfs() { # DIR SIZE
	mkdir -p "$1"
	mount -t tmpfs -o "size=$2" tmpfs "$1" 2>/dev/null || skip "cannot mount a tmpfs of $2 on $1"
	TMPFS+=("$1")
}
avail() { stat -f -c '%a %S' "$1" | awk '{ printf "%d\n", $1 * $2 }'; } # bytes free to users
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
# The daemon's log, when a step failed.
log_tail() { tail -n 5 "$T/daemon.log" 2>/dev/null | sed 's/^/    log: /' >&2; }
# dd'ing from $P/src: the COUNT 64 KiB blocks from block SKIP on to DEST,
# synced (with the writeback cache a write's error shows at fsync).
# Blocks shifted by one per file make every file's chunks differ from every
# other's, so a chunk read from the wrong place cannot pass for the right one.
put() { # SKIP COUNT DEST
	dd if="$P/src" of="$3" bs=65536 skip="$1" count="$2" conv=fsync status=none
}
head -c $((32 * MiB)) /dev/urandom > "$P/src"

# ---- 1. disks of unequal size ----
tmpfs "$T/small" 64m
tmpfs "$T/large" 1g
A0=$T/small/d A1=$T/large/d
mkdir -p "$A0" "$A1" "$T/meta1"
"$MKFS" -q --meta "$T/meta1" "$A0" "$A1" || { echo "mkfs (unequal disks) failed" >&2; exit 1; }
L=$A0:$A1
mount_fg "$T/daemon.log" "$L" || { echo "mount (unequal disks) failed" >&2; exit 1; }
free0=$(($(avail "$T/small") + $(avail "$T/large")))
say "unequal disks: $(mib "$(avail "$T/small")") + $(mib "$(avail "$T/large")") MiB free, df on the mount $(mib "$(avail "$M")") MiB"
n=0 err="never"
for i in $(seq 200); do # 1600 MiB, more than the pool holds
	if ! err=$(put "$i" 128 "$M/f$i" 2>&1); then
		break
	fi
	put "$i" 128 "$P/f$i"
	n=$i err="never"
done
written=$((n * 8 * MiB))
left0=$(avail "$T/small") left1=$(avail "$T/large")
say "unequal disks: $n files of 8 MiB ($(mib $written) MiB) before ENOSPC; then $((left0 / 1024)) and $((left1 / 1024)) KiB left on the disks"
[[ $err == *"No space left on device"* ]] || fail "unequal disks: the writes ended with '$err', not ENOSPC"
# What the pool held and what was written differ by at most: the file that
# failed (8 MiB, not counted), less than a chunk on each disk that cannot
# take one more (2 x 4 MiB), a chunk per disk for where the daemon draws
# the line (2 x 4 MiB), and 8 MiB for lsmfs's own files on the disks (the
# section directories, the lock) and tmpfs's rounding: 32 MiB.  The rule
# before placement stopped at a tenth of the pool (ENOSPC after ~108 MiB
# of ~1080 MiB).
tol=$((8 * MiB + 4 * CS + 8 * MiB))
((written >= free0 - tol)) ||
	fail "unequal disks: ENOSPC after $(mib $written) MiB with $(mib "$free0") MiB free at the start (at most $(mib $tol) MiB short allowed)"
for d in "$left0" "$left1"; do
	((d < 2 * CS)) || fail "unequal disks: ENOSPC with $(mib "$d") MiB left on a disk (a chunk is 4 MiB)"
done
rm -f "$M/f$((n + 1))" || fail "unequal disks: rm of the file that failed"
umount_wait "$L" || fail "unequal disks: unmount"
fsck_clean "$L" "unequal disks, full"
mount_fg "$T/daemon.log" "$L" || { fail "unequal disks: remount"; log_tail; }
bad=0
for i in $(seq "$n"); do
	cmp -s "$P/f$i" "$M/f$i" || bad=$((bad + 1))
done
[[ $bad == 0 ]] || fail "unequal disks: $bad of $n files differ from their plain copies after a remount"
# Half the files removed; their chunk files go in the background.
before=$(($(avail "$T/small") + $(avail "$T/large")))
for ((i = 1; i <= n; i += 2)); do
	rm "$M/f$i" "$P/f$i" || fail "unequal disks: rm f$i"
done
want=$((before + ((n + 1) / 2) * 8 * MiB - 2 * CS))
for _ in $(seq 100); do
	freed=$(($(avail "$T/small") + $(avail "$T/large")))
	((freed >= want)) && break
	sleep 0.1
done
say "unequal disks: $(((n + 1) / 2)) files removed, $(mib $((freed - before))) MiB freed"
if err=$(put 100 512 "$M/after" 2>&1); then
	put 100 512 "$P/after"
	cmp -s "$P/after" "$M/after" || fail "unequal disks: the 32 MiB file written after rm differs"
else
	fail "unequal disks: a 32 MiB file after removing half the files: $err"
	log_tail
fi
umount_wait "$L" || fail "unequal disks: unmount after rm"
fsck_clean "$L" "unequal disks, after rm"
rm -f "$P"/f* "$P/after"

# ---- 2. a disk with other data on it ----
tmpfs "$T/other" 300m
tmpfs "$T/empty" 300m
B0=$T/other/d B1=$T/empty/d
mkdir -p "$B0" "$B1"
head -c $((200 * MiB)) /dev/zero > "$T/other/not-lsmfs" || fail "pre-fill: 200 MiB on disk 0"
"$MKFS" -q "$B0" "$B1" || { echo "mkfs (a disk with other data) failed" >&2; exit 1; }
L=$B0:$B1
mount_fg "$T/daemon.log" "$L" || { echo "mount (a disk with other data) failed" >&2; exit 1; }
# f_bavail is the free space of the two tmpfs, each once, within a chunk per
# disk (where the daemon draws the line for a disk that cannot take one
# more chunk) and 4 MiB for what the store writes between the readings:
# 12 MiB.  The rule before placement gave what the fuller disk could take
# for its share of the sections (~160 MiB of ~400 MiB).
tol=$((2 * CS + 4 * MiB))
df_check() { # WHEN
	local sum bavail
	sum=$(($(avail "$T/other") + $(avail "$T/empty")))
	bavail=$(avail "$M")
	say "other data, $1: disks $(mib "$(avail "$T/other")") + $(mib "$(avail "$T/empty")") = $(mib "$sum") MiB free, f_bavail $(mib "$bavail") MiB"
	((bavail >= sum - tol && bavail <= sum + tol)) ||
		fail "other data, $1: f_bavail $(mib "$bavail") MiB, the disks have $(mib "$sum") MiB free (within $(mib $tol) MiB)"
}
df_check "before writing"
head -c $((100 * MiB)) /dev/urandom > "$P/big"
if ! err=$(dd if="$P/big" of="$M/big" bs=1M conv=fsync status=none 2>&1); then
	fail "other data: writing 100 MiB with $(mib "$(avail "$M")") MiB free on the mount: $err"
	log_tail
fi
df_check "after 100 MiB"
umount_wait "$L" || fail "other data: unmount"
fsck_clean "$L" "other data"
mount_fg "$T/daemon.log" "$L" || fail "other data: remount"
cmp -s "$P/big" "$M/big" || fail "other data: the 100 MiB file differs from its plain copy after a remount"
umount_wait "$L" || fail "other data: unmount after reading"
rm -f "$P/big"

# ---- 3. a degraded mount takes new files ----
C0=$T/c0 C1=$T/c1 C2=$T/c2
mkdir -p "$C0" "$C1" "$C2"
"$MKFS" -q "$C0" "$C1" "$C2" || { echo "mkfs (three disks) failed" >&2; exit 1; }
mv "$C2" "$T/c2.away"
L=$C0:$C1
mount_fg "$T/daemon.log" -o degraded "$L" || { echo "mount -o degraded failed" >&2; exit 1; }
bad=0 first=""
for i in $(seq 40); do
	if ! err=$(put "$i" 64 "$M/g$i" 2>&1); then
		bad=$((bad + 1))
		[[ -n $first ]] || first="g$i: $err"
	fi
	put "$i" 64 "$P/g$i"
done
say "degraded: $bad of 40 new files of 4 MiB failed${first:+ (first: $first)}"
[[ $bad == 0 ]] || { fail "degraded: $bad of 40 new files of 4 MiB failed; $first"; log_tail; }
umount_wait "$L" || fail "degraded: unmount"
mv "$T/c2.away" "$C2"
L=$C0:$C1:$C2
mount_fg "$T/daemon.log" "$L" || { echo "mount of the three disks failed" >&2; log_tail; exit 1; }
bad=0
for i in $(seq 40); do
	cmp -s "$P/g$i" "$M/g$i" 2>/dev/null || bad=$((bad + 1))
done
say "degraded: mounted whole, $((40 - bad)) of 40 files equal to their plain copies"
[[ $bad == 0 ]] || fail "degraded: $bad of 40 files differ from their plain copies, mounted whole"
umount_wait "$L" || fail "degraded: unmount of the three disks"
fsck_clean "$L" "degraded, then whole"

# ---- 4. two copies: each byte takes room on two disks ----
tmpfs "$T/k0" 96m
tmpfs "$T/k1" 256m
K0=$T/k0/d K1=$T/k1/d
mkdir -p "$K0" "$K1" "$T/meta4"
"$MKFS" -q --data-copies 2 --meta "$T/meta4" "$K0" "$K1" || { echo "mkfs (two copies) failed" >&2; exit 1; }
L=$K0:$K1
mount_fg "$T/daemon.log" "$L" || { echo "mount (two copies) failed" >&2; exit 1; }
# As btrfs raid1: half the room, and no more than the smaller disk holds
# (every chunk has a copy there): the 96 MiB disk's free space.
a0=$(avail "$T/k0") a1=$(avail "$T/k1")
want=$(( (a0 + a1) / 2 < a0 + a1 - (a0 > a1 ? a0 : a1) ? (a0 + a1) / 2 : a0 + a1 - (a0 > a1 ? a0 : a1) ))
bavail=$(avail "$M")
say "two copies: disks $(mib "$a0") + $(mib "$a1") MiB free, f_bavail $(mib "$bavail") MiB (for two copies: $(mib "$want"))"
((bavail >= want - tol && bavail <= want + tol)) ||
	fail "two copies: f_bavail $(mib "$bavail") MiB, two copies fit in $(mib "$want") MiB"
# fallocate counts the two copies: more than f_bavail is ENOSPC, at once;
# what fits, fits.
if fallocate -l $((bavail + 3 * CS)) "$M/too-big" 2>/dev/null; then
	fail "two copies: fallocate of $(mib $((bavail + 3 * CS))) MiB succeeded with $(mib "$bavail") MiB for two copies"
fi
rm -f "$M/too-big"
fallocate -l $((bavail / 2)) "$M/fits" || fail "two copies: fallocate of half of f_bavail failed"
# The small disk filled from outside: new chunks get one copy (the other
# stale), so f_bavail is the large disk's room, and fallocate works.
head -c $((200 * MiB)) /dev/zero > "$T/k0/fill" 2>/dev/null
a1=$(avail "$T/k1") bavail=$(avail "$M")
say "two copies, the small disk full: $(mib "$a1") MiB free on the other, f_bavail $(mib "$bavail") MiB"
((bavail >= a1 - tol && bavail <= a1 + tol)) ||
	fail "two copies, the small disk full: f_bavail $(mib "$bavail") MiB, one copy fits in $(mib "$a1") MiB"
fallocate -l $MiB "$M/one-copy" || fail "two copies, the small disk full: fallocate of 1 MiB failed"
rm -f "$T/k0/fill" "$M/one-copy"
umount_wait "$L" || fail "two copies: unmount"
fsck_clean "$L" "two copies, fallocate"

# ---- 5. a copy of the store on a full disk ----
# Two copies of the store, one on a disk filled from outside: directories
# and small files are still made (the full copy is dropped, stale, said);
# the mount after room came back brings it up to date; fsck clean.
tmpfs "$T/s0" 64m
tmpfs "$T/s1" 256m
S0=$T/s0/d S1=$T/s1/d
mkdir -p "$S0" "$S1"
"$MKFS" -q --meta-copies 2 "$S0" "$S1" || { echo "mkfs (store copies) failed" >&2; exit 1; }
L=$S0:$S1
mount_fg "$T/daemon.log" "$L" || { echo "mount (store copies) failed" >&2; exit 1; }
head -c $((100 * MiB)) /dev/zero > "$T/s0/filler" 2>/dev/null
bad=0 first=""
for i in $(seq 200); do
	if ! err=$( { mkdir "$M/d$i" && echo "$i" > "$M/d$i/f"; } 2>&1); then
		bad=$((bad + 1))
		[[ -n $first ]] || first="d$i: $err"
	fi
done
say "store copy on a full disk: $bad of 200 mkdirs (and small files) failed${first:+ (first: $first)}"
[[ $bad == 0 ]] || { fail "store copy on a full disk: $bad of 200 mkdirs failed; $first"; log_tail; }
out=$("$DISK" "$M" status 2>&1)
grep -q "DEGRADED" <<<"$out" || fail "store copy on a full disk: status does not say DEGRADED: $out"
grep -q "No space left" "$T/daemon.log" || fail "store copy on a full disk: the log does not say why the copy was dropped"
rm -f "$T/s0/filler"
umount_wait "$L" || fail "store copy on a full disk: unmount"
mount_fg "$T/daemon.log" "$L" || fail "store copy on a full disk: mount with room again"
out=$("$DISK" "$M" status 2>&1)
grep -q "DEGRADED" <<<"$out" && fail "store copy on a full disk: still DEGRADED with room again: $out"
[[ $(cat "$M/d200/f" 2>/dev/null) == 200 ]] || fail "store copy on a full disk: d200/f after the remount"
umount_wait "$L" || fail "store copy on a full disk: unmount after"
fsck_clean "$L" "store copy on a full disk"

finish
