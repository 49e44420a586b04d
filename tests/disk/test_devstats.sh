#!/bin/bash
# test_devstats.sh BUILD_DIR: each disk's error counters, as btrfs device
# stats (fs/SCHEMA.md "Error counters").  Disk 1 is an eiofs mount
# (tests/disk/eiofs.c) whose rules make read() of a chosen chunk file
# fail with EIO, or write() and fsync() of one.  The store has one copy,
# on disk 0, so that store_edit can change it.
#
#   - a read of a chunk that fails moves disk 1's read_io_errs, and no
#     other counter; lsmfs-disk stats (btrfs's "[PATH].NAME VALUE"
#     lines), status (text and --json) and the statistics show it; it is
#     in the store (key E) within seconds while mounted; stats -c exits 64;
#   - it survives the unmount (offline stats) and the next mount, and
#     counts on from there; fsck -n is clean with the record there;
#   - stats -z prints the counters and zeroes them, for good (the record
#     goes), and stats -c then exits 0;
#   - a write (and fsync) that fails moves write_io_errs; offline, stats
#     -z resets it;
#   - remove of disk 1 drops its record; a disk added in its slot starts
#     from 0;
#   - a record of a slot no disk holds: fsck -n says LSMFS-0514, a mount
#     deletes it and says so; a record that does not decode: LSMFS-020F,
#     a mount counts from 0 and rewrites it.
NAME=test_devstats
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
EIOFS=$B/tests/disk/eiofs EDIT=$B/tests/fsck/store_edit
CH=65536
D0=$T/d0 D1=$T/d1 D2=$T/d2 S1=$T/d1src RULES=$T/rules
META=$D0/.lsmfs/meta
cleanup_more() {
	rm -f "$RULES"
	fusermount3 -u "$D1" 2>/dev/null || umount -l "$D1" 2>/dev/null
	wait 2>/dev/null
}
mkdir -p "$D0" "$D1" "$D2" "$S1" "$M"
: > "$RULES"
"$EIOFS" "$S1" "$D1" "$RULES" -f 2> "$T/eiofs.err" &
for _ in $(seq 100); do mountpoint -q "$D1" && break; sleep 0.05; done
mountpoint -q "$D1" || { echo "$NAME: eiofs did not mount: $(cat "$T/eiofs.err")" >&2; exit 1; }

L=$D0:$D1
"$MKFS" -q --sections 16 --chunk-size $CH --meta-copies 1 "$D0" "$D1" ||
	{ echo "$NAME: mkfs failed" >&2; exit 1; }
mount_fg "$T/m1.log" "$L" || { echo "$NAME: mount failed: $(cat "$T/m1.log")" >&2; exit 1; }
for f in f g; do head -c $((16 * CH)) /dev/urandom > "$M/$f"; done
sync -f "$M"
ino_f=$(stat -c %i "$M/f") ino_g=$(stat -c %i "$M/g")
umount_wait "$L" || { echo "$NAME: unmount failed" >&2; exit 1; }

# A chunk file of FILE on disk 1 that holds data: "REL CHUNK".
chunk_on_d1() { # INO
	local rel
	rel=$(cd "$S1" && find .lsmfs/sections -type f -name "$1.*" -size +0 | sed 's|^\./||' | sort | head -1)
	[[ -n $rel ]] && echo "$rel ${rel##*.}"
}
# The value of one counter of one disk, from `lsmfs-disk TARGET stats`.
counter() { # TARGET DISKPATH NAME
	"$DISK" "$1" stats | awk -v k="[$2].$3" '$1 == k {print $2}'
}
read -r rel_f chunk_f < <(chunk_on_d1 "$ino_f")
read -r rel_g chunk_g < <(chunk_on_d1 "$ino_g")
[[ -n $rel_f && -n $rel_g ]] || { echo "$NAME: no chunk of f or g on disk 1" >&2; exit 1; }
say "unreadable: $rel_f (chunk $chunk_f of f); unwritable: $rel_g (chunk $chunk_g of g)"

# ---- reads ----
echo "$rel_f" > "$RULES"
mount_fg "$T/m2.log" "$L" || { echo "$NAME: mount failed: $(cat "$T/m2.log")" >&2; exit 1; }
[[ $(counter "$M" "$D1" read_io_errs) == 0 ]] || fail "disk 1 has read errors before any read"
out=$(dd if="$M/f" of=/dev/null bs=$CH skip="$chunk_f" count=1 2>&1) &&
	fail "reading the unreadable chunk worked: $out"
grep -q "Input/output error" <<<"$out" || fail "reading the unreadable chunk: $out"
"$DISK" "$M" stats > "$T/stats1" || fail "stats: exit $?"
n=$(awk -v k="[$D1].read_io_errs" '$1 == k {print $2}' "$T/stats1")
((n >= 1)) || fail "disk 1 read_io_errs is '$n' after a failed read: $(cat "$T/stats1")"
[[ $(grep -c "^\[$D0\]\.[a-z_]* *0$" "$T/stats1") == 4 ]] || fail "disk 0 counters moved: $(cat "$T/stats1")"
for k in write_io_errs checksum_errs repaired_errs; do
	grep -q "^\[$D1\]\.$k *0$" "$T/stats1" || fail "disk 1 $k moved: $(cat "$T/stats1")"
done
[[ $(wc -l < "$T/stats1") == 8 ]] || fail "stats: not 4 lines per disk: $(cat "$T/stats1")"
"$DISK" "$M" stats -c > /dev/null; rc=$?
[[ $rc == 64 ]] || fail "stats -c with a counter not 0: exit $rc, want 64"
"$DISK" "$M" status > "$T/status1" || fail "status: exit $?"
grep -q "^disk 1 errors: read_io_errs $n, write_io_errs 0, checksum_errs 0, repaired_errs 0$" "$T/status1" ||
	fail "status does not show disk 1's counters: $(cat "$T/status1")"
grep -q "^disk 0 errors" "$T/status1" && fail "status shows disk 0's zeros: $(cat "$T/status1")"
json_errors() { # FILE DISK: read,write,checksum,repaired of disk index DISK
	python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
e = [d for d in s["disks"] if d["index"] == int(sys.argv[2])][0]["errors"]
print(",".join(str(e[k]) for k in ("read_io_errs", "write_io_errs", "checksum_errs", "repaired_errs")))' "$1" "$2"
}
"$DISK" "$M" status --json > "$T/status1.json" || fail "status --json: exit $?"
[[ $(json_errors "$T/status1.json" 1) == "$n,0,0,0" ]] ||
	fail "status --json: disk 1 errors $(json_errors "$T/status1.json" 1), want $n,0,0,0"
getfattr -n user.lsmfs.stats --only-values "$M" > "$T/xattr1" 2>/dev/null || fail "the statistics xattr"
[[ $(json_errors "$T/xattr1" 1) == "$n,0,0,0" && $(json_errors "$T/xattr1" 0) == "0,0,0,0" ]] ||
	fail "statistics: disk 1 errors $(json_errors "$T/xattr1" 1), disk 0 $(json_errors "$T/xattr1" 0)"
# Stored by the statistics thread (every 2 s) while mounted.
want="E 1 -> error counters: read_io_errs $n write_io_errs 0 checksum_errs 0 repaired_errs 0"
for _ in $(seq 50); do
	got=$("$INSPECT" "$L" keys E 2>/dev/null)
	[[ $got == "$want" ]] && break
	sleep 0.2
done
[[ $got == "$want" ]] || fail "keys E while mounted: '$got', want '$want'"
umount_wait "$L" || fail "unmount"

# ---- across the unmount and the next mount ----
[[ $(counter "$L" "$D1" read_io_errs) == "$n" ]] || fail "offline: read_io_errs $(counter "$L" "$D1" read_io_errs), want $n"
: > "$RULES"
fsck_clean "$L" "with an E record"
echo "$rel_f" > "$RULES"
mount_fg "$T/m3.log" "$L" || { echo "$NAME: mount failed: $(cat "$T/m3.log")" >&2; exit 1; }
[[ $(counter "$M" "$D1" read_io_errs) == "$n" ]] || fail "remounted: read_io_errs $(counter "$M" "$D1" read_io_errs), want $n"
grep -q "disk 1 ($D1): error counters read_io_errs $n, write_io_errs 0" "$T/m3.log" ||
	fail "the mount does not say disk 1's counters: $(cat "$T/m3.log")"
cat "$M/f" > /dev/null 2>&1 && fail "reading f whole worked"
n2=$(counter "$M" "$D1" read_io_errs)
((n2 > n)) || fail "after the remount, read_io_errs does not count on from $n: $n2"

# ---- reset ----
"$DISK" "$M" stats -z > "$T/reset1" || fail "stats -z: exit $?"
grep -q "^\[$D1\]\.read_io_errs *$n2$" "$T/reset1" || fail "stats -z does not print what it reset: $(cat "$T/reset1")"
[[ $(counter "$M" "$D1" read_io_errs) == 0 ]] || fail "stats -z: read_io_errs $(counter "$M" "$D1" read_io_errs) after"
"$DISK" "$M" stats -c > /dev/null; rc=$?
[[ $rc == 0 ]] || fail "stats -c after -z: exit $rc"
"$DISK" "$M" status | grep -q "^error counters: all 0$" || fail "status after -z: $("$DISK" "$M" status)"
got=$("$INSPECT" "$L" keys E 2>/dev/null)
[[ -z $got ]] || fail "keys E after the reset (synced before it answered): $got"
: > "$RULES"
umount_wait "$L" || fail "unmount"
[[ $(counter "$L" "$D1" read_io_errs) == 0 ]] || fail "after the reset and an unmount: read_io_errs $(counter "$L" "$D1" read_io_errs)"

# ---- writes; reset offline ----
echo "write $rel_g" > "$RULES"
mount_fg "$T/m4.log" "$L" || { echo "$NAME: mount failed: $(cat "$T/m4.log")" >&2; exit 1; }
out=$(dd if=/dev/urandom of="$M/g" bs=$CH seek="$chunk_g" count=1 conv=notrunc,fsync 2>&1) &&
	fail "writing the unwritable chunk worked: $out"
w=$(counter "$M" "$D1" write_io_errs)
((w >= 1)) || fail "disk 1 write_io_errs is '$w' after a failed write: $("$DISK" "$M" stats)"
[[ $(counter "$M" "$D1" read_io_errs) == 0 ]] || fail "a failed write counted as a read error"
: > "$RULES"
umount_wait "$L" || fail "unmount"
"$DISK" "$L" stats -z -c > "$T/reset2"; rc=$?
[[ $rc == 64 ]] || fail "offline stats -z -c: exit $rc, want 64 (the counters before the reset)"
grep -q "^\[$D1\]\.write_io_errs *$w$" "$T/reset2" || fail "offline stats -z: $(cat "$T/reset2")"
"$DISK" "$L" stats -c > "$T/after2"; rc=$?
[[ $rc == 0 ]] || fail "offline stats -c after -z: exit $rc: $(cat "$T/after2")"
[[ -z $("$INSPECT" "$L" keys E 2>/dev/null) ]] || fail "keys E after the offline reset: $("$INSPECT" "$L" keys E)"

# ---- a disk removed takes its record; one added in its slot starts at 0 ----
echo "$rel_f" > "$RULES"
mount_fg "$T/m5.log" "$L" || { echo "$NAME: mount failed: $(cat "$T/m5.log")" >&2; exit 1; }
cat "$M/f" > /dev/null 2>&1
: > "$RULES"
for _ in $(seq 50); do
	[[ -n $("$INSPECT" "$L" keys E 2>/dev/null) ]] && break
	sleep 0.2
done
[[ -n $("$INSPECT" "$L" keys E 2>/dev/null) ]] || fail "no E record for disk 1 before its removal"
"$DISK" "$M" remove "$D1" > "$T/remove.out" 2>&1 || fail "remove disk 1: exit $?: $(tail -3 "$T/remove.out")"
got=$("$INSPECT" "$D0" keys E 2>/dev/null)
[[ -z $got ]] || fail "disk 1 removed, its record stays: $got"
"$DISK" "$M" add "$D2" > "$T/add.out" 2>&1 || fail "add: exit $?: $(tail -3 "$T/add.out")"
"$DISK" "$M" status --json > "$T/status2.json" || fail "status --json after the add"
idx=$(python3 -c 'import json, sys
print([d["index"] for d in json.load(open(sys.argv[1]))["disks"] if d["path"] == sys.argv[2]][0])' "$T/status2.json" "$D2")
[[ $idx == 1 ]] || fail "the disk added took slot $idx, not the removed disk's 1"
[[ $(json_errors "$T/status2.json" 1) == "0,0,0,0" ]] || fail "the disk added in slot 1: errors $(json_errors "$T/status2.json" 1)"
umount_wait "$D0:$D2" || fail "unmount"
L=$D0:$D2
fsck_clean "$L" "after remove and add"

# ---- records a crash or damage may leave ----
# Slot 5: read 0, write 7, checksum 0, repaired 0 (four le64).
"$EDIT" "$META" put 4500000005 "0000000000000000070000000000000000000000000000000000000000000000" \
	> /dev/null || fail "store_edit put E 5"
out=$("$FSCK" -n "$L" 2>&1); rc=$?
[[ $rc != 0 ]] && grep -q "LSMFS-0514 disk 5" <<<"$out" || fail "fsck -n with E of slot 5: exit $rc: $out"
"$EDIT" "$META" put 4500000000 010203 > /dev/null || fail "store_edit put E 0"
out=$("$FSCK" -n "$L" 2>&1); rc=$?
[[ $rc != 0 ]] && grep -q "LSMFS-020F store key 4500000000 (3-byte value)" <<<"$out" ||
	fail "fsck -n with a short E of disk 0: exit $rc: $out"
mount_fg "$T/m6.log" "$L" || { echo "$NAME: mount failed: $(cat "$T/m6.log")" >&2; exit 1; }
grep -q "disk 5: no disk holds this slot: its error counters (read_io_errs 0, write_io_errs 7" "$T/m6.log" ||
	fail "the mount does not say it deleted slot 5's counters: $(cat "$T/m6.log")"
grep -q "disk 0: its error counters (key E, 3 bytes) do not decode: counting from 0" "$T/m6.log" ||
	fail "the mount does not say disk 0's record is damaged: $(cat "$T/m6.log")"
for _ in $(seq 50); do
	[[ -z $("$INSPECT" "$L" keys E 2>/dev/null) ]] && break
	sleep 0.2
done
[[ -z $("$INSPECT" "$L" keys E 2>/dev/null) ]] || fail "keys E after the mount: $("$INSPECT" "$L" keys E)"
umount_wait "$L" || fail "unmount"
fsck_clean "$L" "after the mount settled the E records"
finish
