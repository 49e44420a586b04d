#!/bin/bash
# test_together.sh BUILD_DIR: the placement policy `together` (fs/SCHEMA.md
# "Placement"): a directory's user.lsmfs.placement.
#
#   - only "spread" and "together" are taken (EINVAL otherwise); the value
#     is copied to files and directories made below, and shown by getfattr;
#   - every file made below a `together` directory has all its chunk files
#     on one disk (several disks in use across files), a spread file on
#     several; files written whole, overwritten in part, grown sparse;
#   - disk 2 lost (`remove --lost`, online): exactly the files that lived
#     on it are listed, every other file is byte-identical to its plain
#     copy; fsck -n clean;
#   - a `together` file whose disk fills goes on on the others (a spill,
#     logged once), and reads back equal; fsck -n clean.
NAME=test_together
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

# The disks (by index) holding chunk files of inode INO.
disks_of() { # INO
	local d
	for d in 0 1 2; do
		[[ -d $T/d$d/.lsmfs/sections ]] || continue
		find "$T/d$d/.lsmfs/sections" -type f -name "$1.*" | grep -q . && printf '%s ' "$d"
	done
}

D0=$T/d0 D1=$T/d1 D2=$T/d2 P=$T/plain
mkdir -p "$D0" "$D1" "$D2" "$M" "$P"
"$MKFS" -q --sections 64 --chunk-size 65536 "$D0" "$D1" "$D2" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1:$D2 L2=$D0:$D1
mount_fg "$T/daemon.log" "$L" || { echo "mount failed" >&2; exit 1; }

# ---- the attribute ----
mkdir "$M/t" "$M/s"
setfattr -n user.lsmfs.placement -v bogus "$M/t" 2>/dev/null && fail "placement 'bogus' taken"
setfattr -n user.lsmfs.placement -v together "$M/t" || fail "setting placement together"
setfattr -n user.lsmfs.placement -v spread "$M/s" || fail "setting placement spread"
mkdir "$M/t/sub"
[[ $(getfattr --only-values -n user.lsmfs.placement "$M/t/sub" 2>/dev/null) == together ]] ||
	fail "a directory made below a together one does not show it"
getfattr -d "$M/t/sub" 2>/dev/null | grep -q 'user.lsmfs.placement="together"' ||
	fail "getfattr -d does not list the placement"

# ---- files below: one disk each ----
for i in $(seq 24); do
	head -c $((i * 50000 + 3000)) /dev/urandom > "$P/f$i"
	cp "$P/f$i" "$M/t/sub/f$i"
done
# overwritten in part, and grown sparse
printf 'middle' | dd of="$P/f7" bs=1 seek=100000 conv=notrunc status=none
printf 'middle' | dd of="$M/t/sub/f7" bs=1 seek=100000 conv=notrunc status=none
truncate -s 3M "$P/f9" "$M/t/sub/f9"
printf 'end' | dd of="$P/f9" bs=1 seek=$((3 << 20)) conv=notrunc status=none
printf 'end' | dd of="$M/t/sub/f9" bs=1 seek=$((3 << 20)) conv=notrunc status=none
head -c 3000000 /dev/urandom > "$P/spread"
cp "$P/spread" "$M/s/spread"
sync -f "$M/t/sub/f1"
used=""
for i in $(seq 24); do
	ino=$(stat -c %i "$M/t/sub/f$i")
	on=$(disks_of "$ino")
	[[ $(wc -w <<<"$on") == 1 ]] || fail "together file f$i has chunks on disks: $on"
	used="$used $on"
	cmp -s "$P/f$i" "$M/t/sub/f$i" || fail "f$i differs"
done
n=$(tr ' ' '\n' <<<"$used" | grep . | sort -u | wc -l)
[[ $n -ge 2 ]] || fail "all 24 together files on one disk ($used)"
on=$(disks_of "$(stat -c %i "$M/s/spread")")
[[ $(wc -w <<<"$on") -ge 2 ]] || fail "a spread file of 46 chunks on disks: $on"
say "24 together files, each on one disk, over $n disks; a spread file over disks $on"

# ---- disk 2 lost ----
(cd "$M/t/sub" && for i in $(seq 24); do
	[[ $(disks_of "$(stat -c %i "f$i")") == "2 " ]] && echo "/t/sub/f$i"
done | sort) > "$T/expect"
[[ -s $T/expect ]] || fail "setup: no together file on disk 2"
umount_wait "$L" || fail "unmount"
mv "$D2" "$T/d2.gone"
mount_fg "$T/daemon2.log" -o degraded "$L2" || fail "degraded mount"
out=$("$DISK" "$M" remove --lost 2 2>&1) || fail "remove --lost: $out"
grep '^lost: ' <<<"$out" | sed 's/^lost: \(.*\): [0-9]* chunks\{0,1\}, .*/\1/' | grep -v '^/s/' | sort > "$T/listed"
cmp -s "$T/listed" "$T/expect" ||
	fail "listed other files than disk 2 held: $(diff "$T/listed" "$T/expect" | head)"
for i in $(seq 24); do
	grep -qx "/t/sub/f$i" "$T/expect" && continue
	cmp -s "$P/f$i" "$M/t/sub/f$i" || fail "f$i, not on the lost disk, differs"
done
say "disk 2 lost: $(wc -l < "$T/expect") together files listed, the other $((24 - $(wc -l < "$T/expect"))) byte-identical"
umount_wait "$L2" || fail "unmount after remove --lost"
fsck_clean "$L2" "after remove --lost"

# ---- a together file outgrows its disk ----
S0=$T/s0 S1=$T/s1
mkdir -p "$S0" "$S1"
cleanup_more() { umount "$S0" "$S1" 2>/dev/null; }
mount -t tmpfs -o size=24m tmpfs "$S0" && mount -t tmpfs -o size=96m tmpfs "$S1" || {
	echo "$NAME: SKIPPED: cannot mount tmpfs" >&2
	exit 77
}
mkdir "$S0/d" "$S1/d" "$T/meta"
"$MKFS" -q --sections 64 --chunk-size 1M --meta "$T/meta" "$S0/d" "$S1/d" || fail "mkfs on tmpfs"
LS=$S0/d:$S1/d
mount_fg "$T/daemon3.log" "$LS" || fail "mount on tmpfs"
setfattr -n user.lsmfs.placement -v together "$M"
# its first chunk goes to the disk with most room (96 MiB), which cannot
# take 100 MiB: the rest spills to the other
head -c $((100 << 20)) /dev/urandom > "$P/grow"
cp "$P/grow" "$M/grow" || fail "a together file of 100 MiB over a 24 MiB and a 96 MiB disk"
cmp -s "$P/grow" "$M/grow" || fail "the grown file differs"
umount_wait "$LS" || fail "unmount tmpfs"
n=$(grep -c 'placement together' "$T/daemon3.log")
[[ $n == 1 ]] || fail "the spill was logged $n times"
out=$("$FSCK" -n "$LS" 2>&1) || fail "fsck after a spill: $(grep LSMFS- <<<"$out" | head -3)"
say "a 100 MiB together file over 24 + 96 MiB disks: read back equal (spill logged $n times)"
# ---- mkfs --data-copies 2 --placement together: the root's policy ----
E0=$T/e0 E1=$T/e1
mkdir -p "$E0" "$E1"
"$MKFS" -q --sections 64 --chunk-size 65536 --data-copies 2 --placement together "$E0" "$E1" ||
	fail "mkfs --data-copies 2 --placement together"
"$MKFS" -q --data-copies 3 "$T/e2" 2>/dev/null && fail "mkfs --data-copies 3 taken"
"$MKFS" -q --placement bogus "$T/e2" 2>/dev/null && fail "mkfs --placement bogus taken"
mount_fg "$T/daemon4.log" "$E0:$E1" || fail "mount of the 2-copy filesystem"
[[ $(getfattr --only-values -n user.lsmfs.copies "$M" 2>/dev/null) == 2 &&
   $(getfattr --only-values -n user.lsmfs.placement "$M" 2>/dev/null) == together ]] ||
	fail "the root does not show the policy mkfs was given"
mkdir "$M/d"
head -c 700000 /dev/urandom > "$P/two"
cp "$P/two" "$M/d/two"
sync -f "$M/d/two"
ino=$(stat -c %i "$M/d/two")
n0=$(find "$E0/.lsmfs/sections" -type f -name "$ino.*" | wc -l)
n1=$(find "$E1/.lsmfs/sections" -type f -name "$ino.*" | wc -l)
[[ $n0 == 11 && $n1 == 11 ]] || fail "a 2-copy file of 11 chunks has $n0 chunk files on disk 0, $n1 on disk 1"
# together: copy 0 of every chunk in one section
s0=$(find "$E0/.lsmfs/sections" "$E1/.lsmfs/sections" -type f -name "$ino.*" -printf '%h\n' | sort -u | wc -l)
[[ $s0 == 2 ]] || fail "a together file with 2 copies spans $s0 section directories, not 2"
cmp -s "$P/two" "$M/d/two" || fail "the 2-copy file differs"
umount_wait "$E0:$E1" || fail "unmount of the 2-copy filesystem"
say "mkfs --data-copies 2 --placement together: the root shows both, a file of 11 chunks has 11 files on each disk in 2 sections"
finish
