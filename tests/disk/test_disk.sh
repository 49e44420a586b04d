#!/bin/bash
# test_disk.sh BUILD_DIR: lsmfs-disk moving sections (fs/SCHEMA.md "Moving
# a section"), online and offline.
#
# A filesystem over 2 disks holds checksummed files of every shape (inline,
# one chunk, many chunks, sparse, hard-linked).  Then:
#   - offline: rebalance with disk 1 weighing 3x, --dry-run first (which
#     must change nothing); every checksum equal, fsck clean, the moved
#     sections' old directories gone;
#   - online: rebalance back while a writer appends and fsyncs, a reader
#     checks a file again and again, and a process holding a file open
#     writes at random offsets: no error, no lost byte;
#   - SIGKILL of the daemon (online) and of lsmfs-disk (offline) at random
#     points of rebalances: after the next mount (or lsmfs-disk run), every
#     checksum equal and fsck clean; fsck -n before that recovery is clean
#     too, and says a move is under way;
#   - refusals: a non-root caller online, bad usage (16), an offline move
#     (and fsck -y) while the disks are mounted read-only;
#   - what a move says: the disk it came from, "1 file"; a daemon killed
#     mid-move said as such; a missing copy of the store named by its path;
#   - a disk full of other files: the default weights are the room lsmfs
#     can have on each disk, and no plan puts more on a disk than it has
#     free: rebalance succeeds, fsck clean.
NAME=test_disk
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
KILLS=${LSMFS_DISK_KILLS:-12}
D0=$T/d0 D1=$T/d1
DISKS=$D0:$D1

mkdir -p "$D0" "$D1" "$M"
"$MKFS" -q --sections 64 --chunk-size 65536 "$D0" "$D1" || { echo "mkfs failed" >&2; exit 1; }
"$LSMFS" "$DISKS" "$M" || { echo "mount failed" >&2; exit 1; }
mkdir -p "$M/a/b"
echo small > "$M/a/small"
head -c 3000 /dev/urandom > "$M/a/inline"
head -c 60000 /dev/urandom > "$M/a/one-chunk"
for i in $(seq 8); do head -c $((i * 700000)) /dev/urandom > "$M/a/b/many$i"; done
truncate -s 5000000 "$M/sparse"
printf 'middle' | dd of="$M/sparse" bs=1 seek=2500000 conv=notrunc status=none
head -c 200000 /dev/urandom > "$M/linked"
ln "$M/linked" "$M/a/linked.too"
head -c 8000000 /dev/urandom > "$M/static" # for the reader
fallocate -l 2000000 "$M/prealloc" # space reserved, nothing written
PINO=$(stat -c %i "$M/prealloc")
sums > "$T/sums"
umount_wait "$DISKS" || { echo "unmount failed" >&2; exit 1; }
# 512-byte blocks allocated to the preallocated file's chunk files.
prealloc_blocks() { find "$D0" "$D1" -name "$PINO.*" -printf '%b\n' | awk '{s += $1} END {print s + 0}'; }
pblocks=$(prealloc_blocks)

# ---- usage ----
"$DISK" >/dev/null 2>&1; [[ $? == 16 ]] || fail "no arguments: want exit 16"
"$DISK" "$DISKS" frobnicate >/dev/null 2>&1; [[ $? == 16 ]] || fail "unknown command: want exit 16"
"$DISK" "$DISKS" move 1 >/dev/null 2>&1; [[ $? == 16 ]] || fail "move without disk: want 16"
out=$("$DISK" "$DISKS" rebalance --weight x 2>&1); rc=$?; [[ $rc == 16 ]] || fail "bad --weight: exit $rc, want 16: $out"
"$DISK" "$T/nowhere" status >/dev/null 2>&1; [[ $? == 8 ]] || fail "missing disk: want exit 8"

# ---- offline rebalance, with disk 1 weighing 3x ----
find "$D0" "$D1" -printf '%p %s\n' | sort > "$T/before"
before=$(sha256sum < "$T/before")
out=$("$DISK" "$DISKS" rebalance --dry-run --weight 0=1 --weight 1=3 2>&1); rc=$?
[[ $rc == 0 ]] || fail "dry run: exit $rc: $out"
grep -q '^plan: [1-9]' <<<"$out" || fail "dry run: no plan in: $out"
after=$(find "$D0" "$D1" -printf '%p %s\n' | sort); [[ $(sha256sum <<<"$after") == "$before" ]] || fail "dry run changed the disks: $(diff <(echo "$after") "$T/before" | head -5)"
out=$("$DISK" "$DISKS" rebalance --weight 0=1 --weight 1=3 2>&1); rc=$?
[[ $rc == 0 ]] || fail "offline rebalance: exit $rc: $out"
h0=$(held "$D0") h1=$(held "$D1")
say "offline rebalance 1:3: disk 0 holds $h0 bytes, disk 1 $h1"
# Within one section's bytes of a 1:3 split (the biggest section holds
# at most a few chunks of 64 KiB: 8 files of up to 5.6 MB over 64 sections).
total=$((h0 + h1))
((h1 * 4 >= total * 3 - 4 * 1500000 && h1 * 4 <= total * 3 + 4 * 1500000)) ||
	fail "offline rebalance: disk 1 holds $h1 of $total bytes, not about 3/4"
fsck_clean "$DISKS" "offline rebalance"
# What fallocate reserved stays reserved where its sections went.
[[ $(prealloc_blocks) -ge $pblocks ]] ||
	fail "offline rebalance: the preallocated file holds $(prealloc_blocks) blocks, had $pblocks"
out=$("$DISK" "$DISKS" rebalance --weight 0=1 --weight 1=3 2>&1)
grep -q "nothing to move" <<<"$out" || fail "second rebalance still moves: $out"
"$LSMFS" "$DISKS" "$M" || fail "mount after the offline rebalance"
check_sums "offline rebalance"
# A section lives on one disk only.
for s in "$D0"/.lsmfs/sections/*; do
	[[ -d $D1/.lsmfs/sections/${s##*/} ]] && fail "section ${s##*/} has a directory on both disks"
done

# ---- online rebalance, back to even, under load ----
rm -f "$T/stop"
"$CHURN" append "$M/appended" "$T/stop" > "$T/append.out" 2>&1 & P1=$!
"$CHURN" randwrite "$M/random" "$T/stop" > "$T/random.out" 2>&1 & P2=$!
"$CHURN" read "$M/static" "$T/stop" > "$T/read.out" 2>&1 & P3=$!
sleep 0.5
out=$("$DISK" "$M" rebalance 2>&1); rc=$?
[[ $rc == 0 ]] || fail "online rebalance: exit $rc: $out"
moves=$(grep -c '^moved section' <<<"$out")
# Move the sections of the files in use to and fro while they are used.
for s in $(seq 0 63); do
	d=$(( (s + 1) % 2 ))
	"$DISK" "$M" move "$s" "$d" > /dev/null 2>&1 || fail "online move of section $s to disk $d"
done
touch "$T/stop"
for p in $P1 $P2 $P3; do wait "$p" || fail "churn $p: $(cat "$T"/*.out)"; done
say "online: $moves rebalance moves and 64 more under load: $(cat "$T/append.out" "$T/random.out" "$T/read.out" | tr '\n' ' ')"
rm -f "$M/appended" "$M/random"
check_sums "online rebalance"
umount_wait "$DISKS" || fail "unmount after the online moves"
fsck_clean "$DISKS" "online rebalance"

# ---- a non-root caller is refused online ----
"$LSMFS" "$DISKS" "$M" || fail "mount for the refusal"
if id nobody >/dev/null 2>&1; then
	# A copy nobody can run wherever the build lives (a build under
	# /root is out of its reach).
	cp "$DISK" "$T/lsmfs-disk" && chmod 755 "$T/lsmfs-disk"
	out=$(runuser -u nobody -- "$T/lsmfs-disk" "$DISKS" rebalance 2>&1); rc=$?
	[[ $rc == 8 ]] || fail "non-root online: exit $rc, want 8: $out"
	grep -q "only root" <<<"$out" || fail "non-root online: no reason given: $out"
fi
umount_wait "$DISKS"

# ---- a read-only mount keeps writers off the disks ----
# Its map of the sections must not change under it: an offline move would
# leave it reading holes where the files are.
"$LSMFS" "$DISKS" "$M" -o ro || fail "read-only mount"
out=$("$DISK" "$DISKS" move 0 1 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "in use" <<<"$out" || fail "offline move under a read-only mount: exit $rc: $out"
t0=$(date +%s)
out=$("$FSCK" -y "$DISKS" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "in use" <<<"$out" || fail "fsck -y under a read-only mount: exit $rc: $out"
(($(date +%s) - t0 < 10)) || fail "fsck -y under a read-only mount waited $(($(date +%s) - t0)) s to be refused"
check_sums "read-only mount"
umount_wait "$DISKS" || fail "unmount of the read-only mount"
# The same for disks never mounted read-write (no lock file yet).
mkdir -p "$T/fresh" "$T/mnt2"
"$MKFS" -q "$T/fresh" && "$LSMFS" "$T/fresh" "$M" -o ro || fail "read-only mount of a new filesystem"
out=$("$LSMFS" "$T/fresh" "$T/mnt2" 2>&1); rc=$?
[[ $rc != 0 ]] && grep -q "in use" <<<"$out" || fail "read-write mount beside a read-only one: exit $rc: $out"
grep -q " $T/mnt2 " /proc/self/mountinfo && fusermount3 -u "$T/mnt2"
umount_wait "$T/fresh" || fail "unmount of the new read-only mount"

# ---- what lsmfs-disk says of a move ----
# A filesystem of 2 sections, one per disk, one file of one chunk: each
# move names the disk the section was on, and counts "1 file" / "0 files".
E0=$T/e0 E1=$T/e1
mkdir -p "$E0" "$E1"
"$MKFS" -q --sections 2 --chunk-size 65536 "$E0" "$E1" && "$LSMFS" "$E0:$E1" "$M" ||
	fail "mount of the 2-section filesystem"
head -c 60000 /dev/urandom > "$M/one"
out=$("$DISK" "$M" move 0 1 2>&1; "$DISK" "$M" move 1 0 2>&1)
grep -q "^moved section 0 from disk 0 to disk 1: " <<<"$out" &&
	grep -q "^moved section 1 from disk 1 to disk 0: " <<<"$out" ||
	fail "move: the source disk is not named: $out"
[[ $(grep -c ": 1 file, " <<<"$out") == 1 && $(grep -c ": 0 files, " <<<"$out") == 1 ]] ||
	fail "move: the file count is not said as 1 file / 0 files: $out"
# The daemon killed mid-move: said as such, not as an "unexpected answer".
head -c 60000000 /dev/urandom > "$M/big"
said=
for try in 1 2 3; do
	pid=$(daemon_pid "$E0:$E1") to=$((try % 2))
	"$DISK" "$M" move 0 "$to" > "$T/move.out" 2>&1 &
	tool=$!
	for _ in $(seq 300); do
		"$DISK" "$M" status 2>/dev/null | grep -q "^moving section" && break
		sleep 0.005
	done
	if "$DISK" "$M" status 2>/dev/null | grep -q "^moving section"; then
		kill -9 "$pid"
		wait "$tool"
		said=$(cat "$T/move.out")
		fusermount3 -u -z "$M"
		for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
		break
	fi
	wait "$tool"
done
if [[ -z $said ]]; then
	fail "the move always ended before the daemon could be killed during it"
else
	grep -q "the daemon closed the connection before it answered" <<<"$said" &&
		! grep -q "unexpected answer" <<<"$said" ||
		fail "a daemon death mid-move: $said"
fi
# A copy of the store whose disk is missing (forced: nothing says it is
# behind): named by its disk's path.
"$LSMFS" -o degraded,force_degraded "$E0" "$M" || fail "degraded mount without disk 1"
out=$("$DISK" "$M" status 2>&1)
grep -q "^  copy 1: disk 1, $E1/.lsmfs/meta: missing$" <<<"$out" ||
	fail "status of a missing copy: $(grep "copy 1" <<<"$out")"
umount_wait "$E0"
"$LSMFS" "$E0:$E1" "$M" && umount_wait "$E0:$E1" || fail "mount of both disks again"

# ---- a disk full of other files: rebalance by the room there ----
# Two 300 MiB tmpfs, A and B.  lsmfs's 60 MiB all go to B (rebalance
# --weight 0=0, as a user making room on A would), then 280 MiB of other
# files fill A (a plain file beside .lsmfs): about 18 MiB left there.
# Weighed by capacity, A was due half of lsmfs's bytes, more than it had
# free, and every rebalance was refused ("would take ... but has ...
# free"): never balanced.  Weighed by the room lsmfs can have on each
# disk (free space plus what lsmfs holds there), A is due a little; asked
# with --weight for half, it gets what fits, a chunk kept free; never more
# than it has free; asked to take everything, refused before anything
# moves.  The file reads back as its plain copy, fsck clean.
FA=$T/fa FB=$T/fb
mkdir -p "$FA" "$FB"
cleanup_more() { for d in "$FA" "$FB"; do umount "$d" 2>/dev/null || umount -l "$d" 2>/dev/null; done; }
# The bytes the moves of a plan (lsmfs-disk's "move section S from disk F
# to disk T (SIZE)" lines) copy onto disk D.
planned_onto() { # D OUTPUT
	awk -v d="$1" '$1 == "move" && $9 == d {
		u = $11; sub(/\)/, "", u)
		m = u == "B" ? 1 : u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : -1
		if (m < 0) { print "unit?" u; exit }
		s += substr($10, 2) * m
	} END { printf "%d\n", s }' <<<"$2"
}
free_on() { df -B1 --output=avail "$1" | tail -n1 | tr -d ' '; }
if mount -t tmpfs -o size=300m tmpfs "$FA" 2>/dev/null &&
	mount -t tmpfs -o size=300m tmpfs "$FB" 2>/dev/null; then
	"$MKFS" -q "$FA" "$FB" && "$LSMFS" "$FA:$FB" "$M" || fail "mount over the two tmpfs"
	head -c 60M /dev/urandom > "$T/plain"
	cp "$T/plain" "$M/data" || fail "60 MiB into the two tmpfs"
	out=$("$DISK" "$M" rebalance --weight 0=0 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "tmpfs: everything onto B: exit $rc: $out"
	[[ $(held "$FA") == 0 ]] || fail "tmpfs: A still holds $(held "$FA") bytes"
	head -c 280M /dev/zero > "$FA/other" || fail "280 MiB of other files on A"
	room=$(free_on "$FA")
	out=$("$DISK" "$M" rebalance --dry-run 2>&1); rc=$?
	onto=$(planned_onto 0 "$out")
	say "disk A with 280 MiB of other files, $room bytes free: the plan puts $onto on it"
	[[ $rc == 0 ]] || fail "tmpfs: dry run: exit $rc: $out"
	((onto <= room)) || fail "tmpfs: dry run: $onto bytes onto A, which has $room free: $out"
	# Weighed 1:1, as by capacity: A is due 30 MiB, gets what fits, a
	# chunk (4 MiB) kept free: no more than its room, less than two
	# chunks short of it.
	out=$("$DISK" "$M" rebalance --dry-run --weight 0=1 --weight 1=1 2>&1); rc=$?
	onto=$(planned_onto 0 "$out")
	say "the same, weighed 1:1: the plan puts $onto on it"
	[[ $rc == 0 ]] || fail "tmpfs: dry run 1:1: exit $rc: $out"
	((onto <= room - 4194304 && onto >= room - 3 * 4194304)) ||
		fail "tmpfs: dry run 1:1: $onto bytes onto A, which has $room free: $out"
	# Everything off B: it does not fit on A, refused up front.
	hb=$(held "$FB")
	out=$("$DISK" "$M" rebalance --weight 1=0 2>&1); rc=$?
	[[ $rc == 8 ]] && grep -q "no other disk has the room for: nothing moved" <<<"$out" ||
		fail "tmpfs: everything onto the full disk: exit $rc: $out"
	[[ $(held "$FB") == "$hb" && $(held "$FA") == 0 ]] || fail "tmpfs: the refused plan moved some"
	out=$("$DISK" "$M" rebalance --weight 0=1 --weight 1=1 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "tmpfs: rebalance 1:1: exit $rc: $out"
	# By default A is due lsmfs's bytes in proportion to its room (free
	# space plus what lsmfs holds there) to B's: within a chunk of it.
	ra=$(($(free_on "$FA") + $(held "$FA"))) rb=$(($(free_on "$FB") + $(held "$FB")))
	due=$(((62914560 * ra) / (ra + rb)))
	out=$("$DISK" "$M" rebalance 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "tmpfs: rebalance: exit $rc: $out"
	ha=$(held "$FA")
	((ha <= due + 4194304 && ha + 4194304 >= due)) ||
		fail "tmpfs: rebalance: A holds $ha bytes, due $due by its room ($ra bytes to B's $rb)"
	out=$("$DISK" "$M" rebalance 2>&1)
	grep -q "nothing to move" <<<"$out" || fail "tmpfs: second rebalance still moves: $out"
	say "after the rebalances: A holds $(held "$FA") bytes, $(free_on "$FA") free; B $(held "$FB")"
	cmp "$T/plain" "$M/data" || fail "tmpfs: the file differs from its plain copy"
	umount_wait "$FA:$FB" || fail "tmpfs: unmount"
	fsck_clean "$FA:$FB" "tmpfs rebalance"
	"$LSMFS" "$FA:$FB" "$M" && cmp "$T/plain" "$M/data" || fail "tmpfs: the file after a mount"
	umount_wait "$FA:$FB"
	cleanup_more
	rm -f "$T/plain"
else
	say "no tmpfs mount here: the rebalance beside other files is not tried"
fi

# ---- SIGKILL at random points ----
# kill_daemon: a rebalance running online; the daemon dies at a random
# moment of it.  kill_tool: lsmfs-disk offline dies.  Then fsck -n (a
# move may be under way: still clean), the next mount recovers, and the
# files are whole.
seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "SIGKILL: seed $seed (replay with LSMFS_SEED)"
weights=("--weight 0=1 --weight 1=3" "--weight 0=3 --weight 1=1")
for i in $(seq "$KILLS"); do
	w=${weights[$((i % 2))]}
	delay=$(printf '0.%03d' $((RANDOM % 400)))
	who=tool what="lsmfs-disk killed after ${delay}s"
	((i % 2)) && who=daemon what="daemon killed after ${delay}s"
	# shellcheck disable=SC2086
	kill_during "$who" "$DISKS" "$delay" rebalance $w || { fail "kill $i: mount"; break; }
	out=$("$FSCK" -n "$DISKS" 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "kill $i ($what): fsck -n before recovery: exit $rc: $(grep -E -A3 "LSMFS-" <<<"$out" | head -8)"
	grep -q "was moving" <<<"$out" && say "kill $i ($what): a move was under way; fsck -n clean"
	"$LSMFS" "$DISKS" "$M" || { fail "kill $i ($what): mount after"; break; }
	check_sums "kill $i ($what)"
	umount_wait "$DISKS" || fail "kill $i: unmount"
	fsck_clean "$DISKS" "kill $i ($what)"
done

finish
