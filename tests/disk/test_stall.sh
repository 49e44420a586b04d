#!/bin/bash
# test_stall.sh BUILD_DIR: a request held up in the daemon by a backing
# disk that stopped answering holds up no other request (fs/daemon/loop.c).
#
# Disk 1 is an eiofs mount (tests/disk/eiofs.c) whose statfs() blocks for
# as long as a "stall statfs" rule is in its rule file, as a dead NFS
# server's would: lsmfs's statfs asks every disk, so three `stat -f` of
# the mount wait in the daemon, one after the other.  Meanwhile another
# process must get through a stat, a create, a write, a listing, a read
# and an unlink, each within seconds, and then 100 more creates and
# unlinks.  Then the rule goes and the three `stat -f` answer.  The daemon
# serves a serial client on one thread and puts more threads to reading
# only when every reader is held up (fs/daemon/loop.c): without that, the first
# stalled request would hold up everything here.  Last, the unmount, and
# fsck finds the filesystem clean.
#
# Second, a chunk read held up by the disk ("stall <chunk file>": read()
# of that file blocks) holds up nothing but itself: the daemon reads chunk
# files outside the inode's lock (fs/engine/core/iogate.c).  While a `dd` of the
# stalled chunk waits, a stat of the same file, a read of its chunks on the
# other disk, 300 creates (some share the file's lock stripe), a rename
# and an unlink of the file itself, and a listing must each finish within
# seconds; then the rule goes, the dd reads the right bytes, and fsck is
# clean.  Before, the read held the file's stripe lock across the read(2):
# the stat, any create landing on the stripe, and then (under the
# namespace lock) every create waited for the disk.  Third, the same for a
# chunk write held up by its disk ("stall-write").
NAME=test_stall
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
EIOFS=$B/tests/disk/eiofs
D0=$T/d0 D1=$T/d1 S1=$T/d1src RULES=$T/rules
cleanup_more() {
	rm -f "$RULES"
	fusermount3 -u "$D1" 2>/dev/null || umount -l "$D1" 2>/dev/null
	wait 2>/dev/null
}
mkdir -p "$D0" "$D1" "$S1" "$M"
: > "$RULES"
"$EIOFS" "$S1" "$D1" "$RULES" -f 2> "$T/eiofs.err" &
for _ in $(seq 100); do mountpoint -q "$D1" && break; sleep 0.05; done
mountpoint -q "$D1" || { echo "$NAME: eiofs did not mount: $(cat "$T/eiofs.err")" >&2; exit 1; }

"$MKFS" -q "$D0" "$D1" || { echo "$NAME: mkfs failed" >&2; exit 1; }
mount_fg "$T/lsmfs.log" "$D0:$D1" || { echo "$NAME: mount failed: $(cat "$T/lsmfs.log")" >&2; exit 1; }
printf 'small' > "$M/inline"
head -c 300000 /dev/urandom > "$T/big"
cp "$T/big" "$M/big"
stat -f "$M" > /dev/null || fail "stat -f before the stall"

echo "stall statfs" > "$RULES"
pids=()
for i in 1 2 3; do
	stat -f "$M" > "$T/df$i.out" 2>&1 &
	pids+=($!)
done
sleep 1
for i in 1 2 3; do
	alive "${pids[$((i - 1))]}" || fail "stat -f $i did not wait for the stalled disk"
done

# Everything else goes on, each step within seconds.
step() { # WHAT CMD...
	local what=$1
	shift
	timeout 10 "$@" > /dev/null 2>&1 || fail "$what: held up behind the stalled requests (or failed)"
}
step "stat" stat "$M/inline"
step "create" touch "$M/new"
step "write" sh -c "printf 'abc' > '$M/new2'"
step "listing" ls -l "$M"
step "read" cmp "$M/big" "$T/big"
step "unlink" rm "$M/new"
step "100 creates and unlinks" sh -c "for i in \$(seq 100); do echo \$i > '$M'/f\$i && rm '$M'/f\$i || exit 1; done"
[[ $(cat "$M/inline") == small ]] || fail "inline file reads wrong"
[[ $(cat "$M/new2") == abc ]] || fail "new file reads wrong"
for i in 1 2 3; do
	alive "${pids[$((i - 1))]}" || fail "stat -f $i answered while its disk was stalled"
done

# The disk answers again: so do the three.
: > "$RULES"
for i in 1 2 3; do
	wait "${pids[$((i - 1))]}" || fail "stat -f $i after the stall: $(cat "$T/df$i.out")"
done
umount_wait "$D0:$D1" || fail "unmount"
"$FSCK" -n "$D0:$D1" > "$T/fsck.out" 2>&1 || fail "fsck after the stall: $(cat "$T/fsck.out")"

# The first chunk of inode INO under disk directory DIR, and its path there.
first_chunk() { # DIR INO
	(cd "$1" && find .lsmfs/sections -type f -name "$2.*" | sed 's/.*\.//' | sort -n | head -n1)
}
chunk_path() { # DIR INO CHUNK
	(cd "$1" && find .lsmfs/sections -type f -name "$2.$3" | sed 's|^\./||')
}

# Part two: a stalled chunk read.  Small chunks, so that the file has
# chunks on both disks; mounted again, so that nothing of it is cached.
rm -rf "${D0:?}"/* "${D0:?}"/.lsmfs "${S1:?}"/.lsmfs
"$MKFS" -q --sections 16 --chunk-size 65536 "$D0" "$D1" || { echo "$NAME: mkfs 2 failed" >&2; exit 1; }
mount_fg "$T/lsmfs2.log" "$D0:$D1" || { echo "$NAME: mount 2 failed: $(cat "$T/lsmfs2.log")" >&2; exit 1; }
head -c 2621440 /dev/urandom > "$T/f1"
cp "$T/f1" "$M/f1"
umount_wait "$D0:$D1" || fail "unmount 2"
mount_fg "$T/lsmfs3.log" "$D0:$D1" || { echo "$NAME: mount 3 failed: $(cat "$T/lsmfs3.log")" >&2; exit 1; }
ino=$(stat -c %i "$M/f1")
# The first chunk of f1 on the eiofs disk, and one on the other disk.
c1=$(first_chunk "$S1" "$ino") c0=$(first_chunk "$D0" "$ino")
[[ -n $c1 && -n $c0 ]] || fail "f1 has no chunk on one of the disks (d1: '$c1', d0: '$c0')"
rel=$(chunk_path "$S1" "$ino" "$c1")
# A request the daemon has taken cannot be interrupted (the kernel waits
# for its answer), so each step runs in the background and is given up
# on after 10 s; the rule's removal at the end lets the stragglers finish.
bstep() { # WHAT CMD...
	local what=$1 pid
	shift
	"$@" > /dev/null 2>&1 &
	pid=$!
	for _ in $(seq 200); do
		alive "$pid" || break
		sleep 0.05
	done
	if alive "$pid"; then
		fail "$what: held up behind the stalled chunk I/O"
		stragglers+=("$pid")
	elif ! wait "$pid"; then
		fail "$what: failed"
	fi
}
# RULE in place, CMD in the background (its pid in $held), still waiting a
# second later; unstall takes the rule away and waits for everything.
stall() { # RULE WHAT CMD...
	local rule=$1 what=$2
	shift 2
	stragglers=()
	echo "$rule" > "$RULES"
	"$@" &
	held=$!
	sleep 1
	alive "$held" || fail "$what did not wait for the stalled disk"
}
unstall() { # WHAT
	alive "$held" || fail "$1 finished while its disk was stalled"
	: > "$RULES"
	for p in "${stragglers[@]}"; do wait "$p"; done
	wait "$held" || fail "$1 after the stall"
}
stall "stall $rel" "the read of chunk $c1" \
	dd if="$M/f1" of="$T/c1.got" bs=65536 skip="$c1" count=1 iflag=direct status=none
bstep "stat of the file being read" stat "$M/f1"
bstep "read of its chunk on the other disk" sh -c \
	"dd if='$M/f1' of='$T/c0.got' bs=65536 skip=$c0 count=1 iflag=direct status=none"
cmp -s "$T/c0.got" <(dd if="$T/f1" bs=65536 skip="$c0" count=1 status=none) ||
	fail "chunk $c0 read wrong while chunk $c1 was stalled"
bstep "300 creates" sh -c "for i in \$(seq 300); do : > '$M'/g\$i || exit 1; done"
bstep "rename of the file being read" mv "$M/f1" "$M/f1b"
bstep "listing" ls -l "$M"
bstep "unlink of the file being read" rm "$M/f1b"
bstep "unlink of 300" sh -c "rm '$M'/g*"
unstall "the read of chunk $c1"
cmp -s "$T/c1.got" <(dd if="$T/f1" bs=65536 skip="$c1" count=1 status=none) ||
	fail "chunk $c1 read wrong after the stall"
umount_wait "$D0:$D1" || fail "unmount 3"
"$FSCK" -n "$D0:$D1" > "$T/fsck.out" 2>&1 || fail "fsck after the chunk stall: $(cat "$T/fsck.out")"

# Part three: a stalled chunk write ("stall-write <chunk file>").  While a
# direct write of f2's chunk on the eiofs disk waits, a stat of f2, 300
# creates, a 1 MiB file written and read back, a rename and a listing must
# each finish within seconds; then the write is in f2.  (The kernel itself
# holds f2's inode lock across a direct write, so other writes and renames
# of f2 wait for the disk in the kernel, as on any filesystem.)
mount_fg "$T/lsmfs4.log" "$D0:$D1" || { echo "$NAME: mount 4 failed: $(cat "$T/lsmfs4.log")" >&2; exit 1; }
cp "$T/f1" "$M/f2"
ino=$(stat -c %i "$M/f2")
c1=$(first_chunk "$S1" "$ino")
[[ -n $c1 ]] || fail "f2 has no chunk on the eiofs disk"
rel=$(chunk_path "$S1" "$ino" "$c1")
head -c 65536 /dev/urandom > "$T/w1"
head -c 1048576 /dev/urandom > "$T/g"
stall "stall-write $rel" "the write of chunk $c1" \
	dd if="$T/w1" of="$M/f2" bs=65536 seek="$c1" count=1 oflag=direct conv=notrunc status=none
bstep "stat of the file being written" stat "$M/f2"
bstep "300 creates" sh -c "for i in \$(seq 300); do : > '$M'/h\$i || exit 1; done"
bstep "a 1 MiB file written and read back" sh -c "cp '$T/g' '$M/g' && cmp '$T/g' '$M/g'"
bstep "rename of another file" mv "$M/g" "$M/g2"
bstep "listing" ls -l "$M"
bstep "unlink of 300" sh -c "rm '$M'/h*"
unstall "the write of chunk $c1"
cmp -s "$T/w1" <(dd if="$M/f2" bs=65536 skip="$c1" count=1 status=none) ||
	fail "chunk $c1 of f2 does not hold the stalled write"
cmp -s "$T/g" "$M/g2" || fail "g2 reads wrong after the stall"
umount_wait "$D0:$D1" || fail "unmount 4"
"$FSCK" -n "$D0:$D1" > "$T/fsck.out" 2>&1 || fail "fsck after the write stall: $(cat "$T/fsck.out")"
((fails == 0)) || exit 1
say "ok"
