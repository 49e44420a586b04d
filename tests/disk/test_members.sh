#!/bin/bash
# test_members.sh BUILD_DIR: lsmfs-disk add and remove (fs/SCHEMA.md
# "Adding and removing disks"), online and offline.
#
#   - add a third disk offline: it ends up with its share of the bytes
#     (within a section's), every checksum equal, fsck clean;
#   - online, under an appending+fsyncing writer, a random writer and a
#     reader: add a fourth disk, remove a disk, no error and no lost byte;
#     the removed directory keeps only a retired superblock, which the
#     daemon and the tools then refuse as a member;
#   - remove the disk holding the metadata store: refused online (up front),
#     done offline (the store moves); a retired disk added again;
#   - refusals: a non-empty directory (taken with -f), another
#     filesystem's disk, a member twice, the last disk, too little room;
#     a disk on the mount itself or below it, inside a member's .lsmfs or
#     inside a --meta store directory (with -f too, by a symlink too);
#   - SIGKILL of lsmfs-disk (offline) and of the daemon (online) at random
#     points of adds and removes: fsck -n finds at most superblocks behind,
#     the next mount of the disks that are members finds every file whole,
#     and fsck is clean after it.
NAME=test_members
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
KILLS=${LSMFS_MEMBER_KILLS:-32}
cleanup_more() { umount "$T/small" 2>/dev/null; }
# Of the directories given, those that are members now: every one with a
# superblock, less those the tools refuse as removed (the message names
# the directory), as a user would find out.
members() { # DIR...
	local list=() d out
	for d in "$@"; do [[ -f $d/.lsmfs/super ]] && list+=("$d"); done
	for _ in 1 2 3 4; do
		local IFS=:
		out=$("$DISK" "${list[*]}" status 2>&1) && { echo "${list[*]}"; return 0; }
		unset IFS
		local drop=""
		for d in "${list[@]}"; do
			grep -q "^lsmfs-disk: $d: \(removed\|no longer\)" <<<"$out" && drop=$d
		done
		[[ -n $drop ]] || { echo "members: $out" >&2; return 1; }
		local keep=()
		for d in "${list[@]}"; do [[ $d != "$drop" ]] && keep+=("$d"); done
		list=("${keep[@]}")
	done
	return 1
}

D0=$T/d0 D1=$T/d1 D2=$T/d2 D3=$T/d3
mkdir -p "$D0" "$D1" "$D2" "$D3" "$M"
"$MKFS" -q --sections 64 --chunk-size 65536 "$D0" "$D1" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1
"$LSMFS" "$L" "$M" || { echo "mount failed" >&2; exit 1; }
mkdir -p "$M/a/b"
head -c 3000 /dev/urandom > "$M/a/inline"
for i in $(seq 6); do head -c $((i * 500000)) /dev/urandom > "$M/a/b/many$i"; done
truncate -s 3000000 "$M/sparse"
printf 'middle' | dd of="$M/sparse" bs=1 seek=1500000 conv=notrunc status=none
head -c 200000 /dev/urandom > "$M/linked"
ln "$M/linked" "$M/a/linked.too"
head -c 4000000 /dev/urandom > "$M/static"
sums > "$T/sums"
umount_wait "$L" || { echo "unmount failed" >&2; exit 1; }

# ---- refusals ----
mkdir -p "$T/full" && echo x > "$T/full/file"
out=$("$DISK" "$L" add "$T/full" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "not empty" <<<"$out" || fail "non-empty directory: exit $rc: $out"
out=$("$DISK" "$L" add "$D1" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "already disk 1" <<<"$out" || fail "a member again: exit $rc: $out"
mkdir -p "$T/o0" && "$MKFS" -q "$T/o0"
out=$("$DISK" "$L" add "$T/o0" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "another lsmfs" <<<"$out" || fail "another filesystem's disk: exit $rc: $out"
out=$("$DISK" "$T/o0" remove 0 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "last disk" <<<"$out" || fail "the last disk: exit $rc: $out"
out=$("$DISK" "$L" add 2>&1); rc=$?; [[ $rc == 16 ]] || fail "add without a disk: exit $rc, want 16"
out=$("$DISK" "$L" remove 0 --weight 2 2>&1); rc=$?; [[ $rc == 16 ]] || fail "remove --weight: exit $rc, want 16"
out=$("$DISK" "$L" remove 7 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "not a disk" <<<"$out" || fail "remove a disk it lacks: exit $rc: $out"
# Too little room: a 2 MiB disk cannot take what disk 1 holds.
mkdir -p "$T/small"
if mount -t tmpfs -o size=2m tmpfs "$T/small" 2>/dev/null; then
	out=$("$DISK" "$L" add "$T/small" --no-balance 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "add a small disk: exit $rc: $out"
	before=$(find "$D0" "$D1" -type f | sort | sha256sum)
	out=$("$DISK" "$L:$T/small" remove "$D1" 2>&1); rc=$?
	# d0 shares /tmp with d1: the room is there.  Make d0 full for this
	# check by asking to remove both, one after the other: the second
	# has only the tmpfs left.
	[[ $rc == 0 ]] || fail "remove disk 1 with room on disk 0: exit $rc: $out"
	out=$("$DISK" "$D0:$T/small" remove 0 2>&1); rc=$?
	[[ $rc == 8 ]] && grep -q "other disks have" <<<"$out" || fail "too little room: exit $rc: $out"
	grep -q "nothing moved" <<<"$out" || fail "too little room: no 'nothing moved': $out"
	# Back as before: disk 1 again (retired: taken without -f), the small one out.
	out=$("$DISK" "$D0:$T/small" add "$D1" --no-balance 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "a retired disk added again: exit $rc: $out"
	out=$("$DISK" "$D0:$T/small:$D1" remove "$T/small" 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "remove the small disk: exit $rc: $out"
	L=$D0:$D1
	fsck_clean "$L" "small disk added and removed"
	umount "$T/small"
else
	say "no tmpfs mount here: the room refusal is not tried"
fi
# An add cut short before its superblock leaves an empty .lsmfs/sections:
# taken again, no -f needed.
mkdir -p "$T/half/.lsmfs/sections"
out=$("$DISK" "$L" add "$T/half" --no-balance 2>&1); rc=$?
[[ $rc == 0 ]] || fail "an add cut short before its superblock, again: exit $rc: $out"
out=$("$DISK" "$L:$T/half" remove "$T/half" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "remove the half-added disk: exit $rc: $out"
out=$("$DISK" "$L" add "$T/full" -f --no-balance 2>&1); rc=$?
[[ $rc == 0 ]] || fail "non-empty directory with -f: exit $rc: $out"
[[ -f $T/full/file ]] || fail "-f: the directory's own file went"
out=$("$DISK" "$L:$T/full" remove "$T/full" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "remove the -f disk: exit $rc: $out"
L=$D0:$D1

# ---- offline add: a third disk takes its share ----
out=$("$DISK" "$L" add "$D2" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "offline add: exit $rc: $out"
L=$D0:$D1:$D2
h0=$(held "$D0") h1=$(held "$D1") h2=$(held "$D2")
total=$((h0 + h1 + h2))
say "offline add: disks hold $h0, $h1, $h2 bytes"
# Within the biggest section's bytes of a third (sections hold a few 64 KiB chunks).
((h2 * 3 >= total - 3 * 700000 && h2 * 3 <= total + 3 * 700000)) ||
	fail "offline add: disk 2 holds $h2 of $total bytes, not about a third"
fsck_clean "$L" "offline add"
out=$("$DISK" "$L" rebalance 2>&1)
grep -q "nothing to move" <<<"$out" || fail "rebalance right after add still moves: $out"

# ---- refused: a disk on the mount, or inside the filesystem's own files ----
# (online: the daemon refuses; a disk on its own mount deadlocked it, so a
# hang is cut short by aborting the FUSE connection).  A filesystem of its
# own, its store in a --meta directory.
G0=$T/g0 G1=$T/g1 GM=$T/gmeta
mkdir -p "$G0" "$G1" "$GM"
"$MKFS" -q --sections 4 --meta "$GM" "$G0" "$G1" && "$LSMFS" "$G0:$G1" "$M" ||
	fail "mount of the --meta filesystem"
conn=$(stat -c %d "$M")
mkdir -p "$M/inner" "$GM/sub"
ln -s "$G1/.lsmfs" "$T/g1-own"
for c in "$M/inner" "$M" "$M/inner/../inner" "$G0/.lsmfs/sections/0" "-f $G1/.lsmfs" \
	"-f $T/g1-own/sections" "-f $GM/sub" "-f $GM"; do
	# shellcheck disable=SC2086
	"$DISK" "$M" add $c --no-balance > "$T/add.out" 2>&1 &
	tool=$!
	for _ in $(seq 200); do alive "$tool" || break; sleep 0.05; done
	if alive "$tool"; then
		# Hung in the kernel, waiting on the daemon: only an abort of
		# the FUSE connection lets either go.
		fail "add $c: hung"
		[[ -d /sys/fs/fuse/connections/$conn ]] ||
			mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
		echo 1 > "/sys/fs/fuse/connections/$conn/abort"
		wait "$tool"
		fusermount3 -u -z "$M"
		break
	fi
	wait "$tool"; rc=$? out=$(cat "$T/add.out")
	[[ $rc == 8 ]] && grep -q "a disk must lie outside" <<<"$out" || fail "add $c: exit $rc: $out"
done
[[ ! -e $M/inner/.lsmfs && ! -e $GM/sub/.lsmfs && ! -e $G0/.lsmfs/sections/0/.lsmfs ]] ||
	fail "a refused add left a .lsmfs behind"
out=$(timeout 20 "$DISK" "$M" status 2>&1)
[[ $(grep -c "^[0-9] " <<<"$out") == 2 ]] || fail "after the refused adds: $out"
umount_wait "$G0:$G1" || fail "unmount after the refused adds"
"$FSCK" -n "$G0:$G1" > /dev/null 2>&1 || fail "fsck after the refused adds"

# ---- online: add a fourth disk, remove disk 1, under load ----
"$LSMFS" "$L" "$M" || fail "mount for online add"
rm -f "$T/stop"
"$CHURN" append "$M/appended" "$T/stop" > "$T/append.out" 2>&1 & P1=$!
"$CHURN" randwrite "$M/random" "$T/stop" > "$T/random.out" 2>&1 & P2=$!
"$CHURN" read "$M/static" "$T/stop" > "$T/read.out" 2>&1 & P3=$!
sleep 0.5
out=$("$DISK" "$M" add "$D3" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "online add: exit $rc: $out"
out=$("$DISK" "$M" status --json 2>&1)
grep -q "\"path\":\"$D3\"" <<<"$out" || fail "online add: disk 3 not in the status: $out"
# The small disk's part above left one copy of the store (no room for a
# second): a second copy, made while in use; then disk 1 goes.
out=$("$DISK" "$M" copy add "$D2" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "online copy add: exit $rc: $out"
out=$("$DISK" "$M" status 2>&1)
grep -q "metadata store: 2 copies" <<<"$out" && ! grep -q DEGRADED <<<"$out" ||
	fail "online copy add: status: $out"
out=$("$DISK" "$M" remove "$D1" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "online remove: exit $rc: $out"
df "$M" > /dev/null || fail "statfs after the online remove"
touch "$T/stop"
for p in $P1 $P2 $P3; do wait "$p" || fail "churn $p: $(cat "$T"/*.out)"; done
say "online add and remove under load: $(cat "$T/append.out" "$T/random.out" "$T/read.out" | tr '\n' ' ')"
rm -f "$M/appended" "$M/random"
check_sums "online add and remove"
L=$D0:$D2:$D3
umount_wait "$L" || fail "unmount after the online add and remove"
left=$(cd "$D1" && find . -mindepth 1 | sort | tr '\n' ' ')
[[ $left == "./.lsmfs ./.lsmfs/super " ]] || fail "the removed disk keeps more than its superblock: $left"
fsck_clean "$L" "online add and remove"
out=$("$LSMFS" "$D0:$D1:$D2:$D3" "$M" 2>&1); rc=$?
[[ $rc != 0 ]] && grep -q "retired" <<<"$out" || fail "mount with the removed disk: exit $rc: $out"
mounted && fusermount3 -u "$M"

# ---- the store's disk (copy 0, the one the daemon serves from), online ----
"$LSMFS" "$L" "$M" || fail "mount for the store's disk"
out=$("$DISK" "$M" remove 0 2>&1); rc=$?
[[ $rc == 0 ]] && grep -q "a new copy of the metadata store on disk 3" <<<"$out" &&
	grep -q "removed copy 0" <<<"$out" || fail "online remove of the store's disk: exit $rc: $out"
out=$("$DISK" "$M" status 2>&1); rc=$?
[[ $rc == 0 ]] && grep -q "metadata store: 2 copies" <<<"$out" ||
	fail "status after the store's disk went (the control socket moved): exit $rc: $out"
check_sums "store's disk removed online"
L=$D2:$D3
umount_wait "$L" || fail "unmount after the store's disk went"
[[ ! -e $D0/.lsmfs/meta ]] || fail "the old store stayed on disk 0"
fsck_clean "$L" "store moved"
"$LSMFS" "$L" "$M" || fail "mount after the store moved"
check_sums "store moved"
umount_wait "$L"

# ---- SIGKILL at random points of adds and removes ----
seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "SIGKILL: seed $seed (replay with LSMFS_SEED)"
ALL=("$D0" "$D1" "$D2" "$D3")
rm -rf "$T/full"
cut=0 changed=0
for i in $(seq "$KILLS"); do
	L=$(members "${ALL[@]}") || { fail "kill $i: cannot tell the members"; break; }
	IFS=: read -r -a mem <<<"$L"
	# Add a disk that is not a member (its leftovers taken again), or
	# remove one; the store's disk too, offline.
	if ((${#mem[@]} < 3 || (${#mem[@]} < 4 && RANDOM % 2))); then
		for d in "${ALL[@]}"; do [[ ":$L:" != *":$d:"* ]] && new=$d; done
		op=(add "$new")
	else
		op=(remove "${mem[$((RANDOM % ${#mem[@]}))]}")
	fi
	delay=$(printf '0.%03d' $((RANDOM % 150)))
	who=tool what="lsmfs-disk killed ${delay}s into ${op[*]}"
	((i % 2)) && who=daemon what="daemon killed ${delay}s into ${op[*]}"
	kill_during "$who" "$L" "$delay" "${op[@]}" || { fail "kill $i: mount"; break; }
	before=$L
	L=$(members "${ALL[@]}") || { fail "kill $i ($what): cannot tell the members"; break; }
	grep -q "^added\|^removed" "$T/kill.out" || cut=$((cut + 1))
	[[ $L != "$before" ]] && changed=$((changed + 1))
	out=$("$FSCK" -n "$L" 2>&1); rc=$?
	bad=$(grep -E "^LSMFS-" <<<"$out" | grep -v -E "^LSMFS-(0503|0510|0511|0512|0107)")
	[[ -z $bad ]] || fail "kill $i ($what): fsck -n before recovery: exit $rc: $(head -c 600 <<<"$bad")"
	"$LSMFS" "$L" "$M" || { fail "kill $i ($what): mount of $L after"; break; }
	check_sums "kill $i ($what)"
	umount_wait "$L" || fail "kill $i: unmount"
	fsck_clean "$L" "kill $i ($what)"
done
say "SIGKILL: $KILLS kills, $cut before the command said it was done, $changed changed the disk set"

finish
