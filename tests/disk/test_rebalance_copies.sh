#!/bin/bash
# test_rebalance_copies.sh BUILD_DIR: sections moved among three disks,
# SIGKILLed at random points, never leave the two copies of a chunk on one
# disk (fs/SCHEMA.md "Copies", "Keeping them apart"; "Moving a section";
# "Adding and removing disks").
#
# mkfs --data-copies 2 over two disks, small chunks and 64 sections; files
# of every shape (inline, one chunk, many chunks, sparse, preallocated,
# hard-linked), checksummed.  First, on a copy of those disks, what the
# checks below must catch:
#   - `lsmfs-disk DISKS move S D` onto the disk of S's partner is refused
#     (exit 8, the section stays, nothing else changes, fsck clean);
#   - a section put on its partner's disk by hand (the map entry and the
#     directory): fsck -n says LSMFS-0519, and the walk of the disks
#     (layout.py) finds the chunk files of both copies on that disk.
# Then `add D2 --no-balance`, and KILLS operations, each SIGKILLed after a
# random delay: a rebalance online (the daemon killed) and offline
# (lsmfs-disk killed) with random --weight choices (some drain a disk, some
# pile everything on one, which every section holding chunks must refuse),
# a `remove` of a random disk (online and offline; finished afterwards,
# unkilled), and the `add` of that disk back with its own rebalance.  After
# each: fsck -n clean before anything recovers (a move may be under way),
# no chunk file in a section and its partner on one disk (the disks walked,
# beside fsck); then a mount recovers, every checksum is equal, and after
# the unmount fsck is clean and the walk strict: every chunk file exactly
# twice, in the two sections of a pair, on two member disks, each where
# the section map puts its section.  Once, with two disks left, `remove`
# of one: exit 8, the disk still a member, the store still in two copies.
# At the end one rebalance unkilled, and another finds nothing to move.
#
# Last, a chunk placed while its section moves onto its partner's disk
# (a writer held up in the placement by a disk's statfs, eiofs): placed
# again, never both copies on one disk.
#
# Then a pair moved onto one disk while its chunks have one live copy (a
# degraded mount wrote them): fsck says stale copies (0518), not 0519.
#
# LSMFS_SEED replays a run (the seed is printed); LSMFS_REBALANCE_KILLS
# sets the number of kills (default 10).
NAME=test_rebalance_copies
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
EDIT=$B/tests/fsck/store_edit
KILLS=${LSMFS_REBALANCE_KILLS:-10}
seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "seed $seed (replay with LSMFS_SEED), $KILLS kills"
D0=$T/d0 D1=$T/d1 D2=$T/d2
ALL=("$D0" "$D1" "$D2")

# The chunk files of the disks given as INDEX=PATH (INDEX "-" for a disk
# that is no member), against the section map MAP (lsmfs-inspect's `keys
# P` lines).  Prints one line per problem, nothing when all is well:
#   raw     a chunk file in a section and in its partner (s ^ 1) on one
#           disk: both copies there;
#   strict  that, and every chunk file exactly twice, in the two sections
#           of one pair, on two disks, each a member the map puts its
#           section on (no leftover of a move, no copy missing).
cat > "$T/layout.py" <<'PY'
import os, re, sys
mode, mapfile, disks = sys.argv[1], sys.argv[2], sys.argv[3:]
chunk = re.compile(r"^[0-9]+\.[0-9]+$")
where = {}  # chunk file name -> [(disk index or "-", section, path)]
for arg in disks:
    idx, path = arg.split("=", 1)
    top = os.path.join(path, ".lsmfs", "sections")
    if not os.path.isdir(top):
        continue
    for s in os.listdir(top):
        if not s.isdigit() or not os.path.isdir(os.path.join(top, s)):
            continue
        for f in os.listdir(os.path.join(top, s)):
            if chunk.match(f):
                where.setdefault(f, []).append((idx, int(s), path))
secmap = {}
if mapfile != "-":
    for line in open(mapfile):
        m = re.match(r"^P ([0-9]+) -> disk ([0-9]+)$", line.strip())
        if m:
            secmap[int(m.group(1))] = m.group(2)
bad = []
for f in sorted(where):
    places = where[f]
    pairs = {}
    for idx, s, path in places:
        pairs.setdefault((path, s // 2), set()).add(s)
    for (path, p), secs in sorted(pairs.items()):
        if len(secs) == 2:
            bad.append(f"{f}: both copies on {path}, in sections {2 * p} and {2 * p + 1}")
    if mode != "strict":
        continue
    secs = sorted(s for _, s, _ in places)
    if len(places) != 2 or secs[0] // 2 != secs[1] // 2 or secs[0] == secs[1] or \
            places[0][2] == places[1][2]:
        bad.append(f"{f}: not two copies in a pair of sections on two disks: " +
                   ", ".join(f"section {s} on {path}" for _, s, path in places))
    for idx, s, path in places:
        if idx == "-":
            bad.append(f"{f}: in section {s} on {path}, no member disk")
        elif secmap.get(s) != idx:
            bad.append(f"{f}: in section {s} on disk {idx} ({path}), which the map puts on "
                       f"disk {secmap.get(s)}")
print("\n".join(bad[:10]) + (f"\n... {len(bad)} problems in all" if len(bad) > 10 else ""))
PY
# The member disks: L, their list (in ALL's order), and IDX, "index=path"
# of each, from the first of the full list or a list without one disk
# whose status names no disk missing (a status without a disk that is a
# member shows it missing; one with a disk that is not is refused).  1 when
# none is.
members() {
	local cand out d skip
	for skip in "" "${ALL[@]}"; do
		cand=
		for d in "${ALL[@]}"; do
			[[ $d == "$skip" ]] || cand=${cand:+$cand:}$d
		done
		out=$("$DISK" "$cand" status 2>/dev/null) || continue
		grep -q MISSING <<<"$out" && continue
		L=$cand
		mapfile -t IDX < <(awk '$1 ~ /^[0-9]+$/ && NF >= 7 { print $1 "=" $NF }' <<<"$out")
		return 0
	done
	return 1
}
# Every disk of ALL as INDEX=PATH, "-" for one no member.
all_disks() {
	local d e i
	for d in "${ALL[@]}"; do
		i=-
		for e in "${IDX[@]}"; do [[ ${e#*=} == "$d" ]] && i=${e%%=*}; done
		echo "$i=$d"
	done
}
layout() { # raw|strict LIST
	local map=-
	if [[ $1 == strict ]]; then
		map=$T/map
		"$INSPECT" "$2" keys P > "$map" 2>&1 || { echo "lsmfs-inspect keys P: $(head -3 "$map")"; return; }
	fi
	local -a disks
	mapfile -t disks < <(all_disks)
	python3 "$T/layout.py" "$1" "$map" "${disks[@]}"
}
# Sections per disk, as "index:count ...", from the map.
spread() { # LIST
	"$INSPECT" "$1" keys P 2>/dev/null | awk '{ n[$5]++ } END { for (d in n) printf "%s:%d ", d, n[d] }' |
		tr ' ' '\n' | sort | tr '\n' ' '
}

mkdir -p "$D0" "$D1" "$D2" "$M"
"$MKFS" -q --data-copies 2 --sections 64 --chunk-size 65536 "$D0" "$D1" ||
	{ echo "$NAME: mkfs failed" >&2; exit 1; }
L=$D0:$D1
"$LSMFS" "$L" "$M" || { echo "$NAME: mount failed" >&2; exit 1; }
[[ $(getfattr --only-values -n user.lsmfs.copies "$M" 2>/dev/null) == 2 ]] ||
	fail "mkfs --data-copies 2: the root does not say copies=2"
mkdir -p "$M/a/b"
echo small > "$M/a/small"
head -c 3000 /dev/urandom > "$M/a/inline"
head -c 60000 /dev/urandom > "$M/a/one-chunk"
for i in $(seq 8); do head -c $((i * 700000 + RANDOM)) /dev/urandom > "$M/a/b/many$i"; done
truncate -s 5000000 "$M/sparse"
printf 'middle' | dd of="$M/sparse" bs=1 seek=2500000 conv=notrunc status=none
printf 'end' | dd of="$M/sparse" bs=1 seek=4999997 conv=notrunc status=none
fallocate -l 300000 "$M/prealloc"
head -c 200000 /dev/urandom > "$M/linked"
ln "$M/linked" "$M/a/linked.too"
sums > "$T/sums"
umount_wait "$L" || { echo "$NAME: unmount failed" >&2; exit 1; }
members || { echo "$NAME: no status of the new filesystem" >&2; exit 1; }
fsck_clean "$L" "after writing"
out=$(layout strict "$L")
[[ -z $out ]] || fail "after writing, before any move: $out"
nfiles=$(find "$D0" "$D1" -path '*/.lsmfs/sections/*' -type f | wc -l)
say "$nfiles chunk files, two copies of each on the two disks"

# ---- what the checks must catch, on a copy of the disks ----
X=$T/x
mkdir -p "$X"
cp -a "$D0" "$D1" "$X/"
XL=$X/d0:$X/d1
# A section holding chunk files, and its partner's disk.
read -r s sd < <("$INSPECT" "$XL" keys P | awk '{ print $2, $5 }' | while read -r sec d; do
	[[ -n $(ls "$X/d$d/.lsmfs/sections/$sec" 2>/dev/null) ]] && { echo "$sec $d"; break; }
done)
p=$((s ^ 1)) pd=$((1 - sd))
before=$(find "$X" -path '*/.lsmfs/sections/*' -printf '%p %s\n' | sort | sha256sum)
out=$("$DISK" "$XL" move "$s" "$pd" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "section $s stays on disk $sd: section $s holds a copy of inode [0-9]* chunk [0-9]* whose other copy is on disk $pd (its partner section's): the two copies would be on one disk" <<<"$out" ||
	fail "move of section $s onto disk $pd, its partner's: exit $rc, want 8 and the reason: $out"
after=$(find "$X" -path '*/.lsmfs/sections/*' -printf '%p %s\n' | sort | sha256sum)
[[ $after == "$before" ]] || fail "the refused move changed the chunk files"
"$INSPECT" "$XL" keys P "$s" | grep -qx "P $s -> disk $sd" || fail "the refused move changed the map: $("$INSPECT" "$XL" keys P "$s")"
fsck_clean "$XL" "after the refused move"
# By hand: the map entry of the partner and its directory onto disk sd.
le32() { printf '%08x' "$1" | sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/'; }
for d in 0 1; do
	"$EDIT" "$X/d$d/.lsmfs/meta" put "50$(printf '%08x' "$p")" "$(le32 "$sd")" > /dev/null ||
		fail "store_edit: section $p onto disk $sd in copy $d of the store"
done
mv "$X/d$pd/.lsmfs/sections/$p" "$X/d$sd/.lsmfs/sections/" || fail "moving section $p's directory by hand"
out=$("$FSCK" -n "$XL" 2>&1); rc=$?
[[ $rc == 4 ]] && grep -q "^LSMFS-0519 sections $((s & ~1)) and $((s | 1)) are both on disk $sd ($X/d$sd): [1-9][0-9]* chunks\{0,1\} with two copies there ha[sv]e\{0,1\} both copies on that one disk" <<<"$out" ||
	fail "sections $s and $p on disk $sd by hand: fsck -n exit $rc, want 4 and LSMFS-0519: $(grep -E 'LSMFS-|problems' <<<"$out")"
out=$(python3 "$T/layout.py" raw - "0=$X/d0" "1=$X/d1")
grep -q "both copies on $X/d$sd, in sections $((s & ~1)) and $((s | 1))$" <<<"$out" ||
	fail "sections $s and $p on disk $sd by hand: the walk of the disks does not see it: $out"
say "the checks catch it: section $p put by hand beside $s on disk $sd: fsck says LSMFS-0519, the walk $(wc -l <<<"$out") chunk file(s) in both"
rm -rf "$X"

# ---- disk 2 added, nothing moved ----
"$LSMFS" "$L" "$M" || fail "mount to add disk 2"
out=$("$DISK" "$M" add "$D2" --no-balance 2>&1) || fail "add $D2 --no-balance: $out"
umount_wait "$L" || fail "unmount after the add"
members || fail "no status after the add"
[[ $L == "$D0:$D1:$D2" ]] || fail "after the add, the members are $L"
[[ -z $(find "$D2/.lsmfs/sections" -type f 2>/dev/null) ]] || fail "--no-balance moved some onto disk 2"
say "disk 2 added; sections per disk: $(spread "$L")"

# ---- SIGKILL at random points ----
# After a kill: the checks before any recovery, then a mount recovers,
# the files are whole, the checks again.
moving=0 moved=0 refused=0
# A kill of `add` or `remove` may leave, before that mount, what it
# finishes, as in test_members.sh: a copy of the store being added, stale
# (0107), a change of the disk set cut short (0503, 0510-0512); nothing
# else, and nothing at all after a rebalance.
after_kill() { # WHAT [members]
	local what=$1 out rc bad
	members || { fail "$what: no list of disks has a status"; return 1; }
	moved=$((moved + $(grep -c '^moved section' "$T/kill.out")))
	refused=$((refused + $(grep -c 'would be on one disk' "$T/kill.out")))
	out=$("$FSCK" -n "$L" 2>&1); rc=$?
	bad=$(grep -E "^LSMFS-" <<<"$out")
	[[ ${2-} == members ]] && bad=$(grep -v -E "^LSMFS-(0107|0503|0510|0511|0512) " <<<"$bad")
	[[ $rc == 0 || ($rc == 4 && -z $bad) ]] ||
		fail "$what: fsck -n before recovery: exit $rc: $(grep -E -A3 'LSMFS-' <<<"$out" | head -8)"
	grep -q "was moving" <<<"$out" && moving=$((moving + 1))
	out=$(layout raw "$L")
	[[ -z $out ]] || fail "$what: before recovery: $out"
	"$LSMFS" "$L" "$M" || { fail "$what: mount after"; return 1; }
	check_sums "$what"
	umount_wait "$L" || { fail "$what: unmount"; return 1; }
	fsck_clean "$L" "$what"
	out=$(layout strict "$L")
	[[ -z $out ]] || fail "$what: after recovery: $out"
	say "$what: $(grep -c '^moved section' "$T/kill.out") moved; disks ${L//$T\//}; sections $(spread "$L")"
}
# Weights for the members: 0..3 each at random, not all 0; or, with
# `pile`, 1 for one of them and 0 for the others: everything onto one
# disk, which every section holding chunks must refuse (its partner is
# there or goes there).
weights() { # [pile]
	local e w any=0 out=() one=$((RANDOM % ${#IDX[@]})) k=0
	for e in "${IDX[@]}"; do
		w=$((RANDOM % 4))
		[[ ${1-} == pile ]] && w=$((k++ == one))
		((w)) && any=1
		out+=(--weight "${e%%=*}=$w")
	done
	((any)) || out[1]=${out[1]%=*}=1
	echo "${out[@]}"
}
# With two disks left, removing one of them cannot keep the copies
# apart: every section holding chunks stays, and the removal stops there,
# exit 8, the disk still a member with its copy of the store.  Before, it
# went on to move that copy off (no disk to take one: the count dropped
# to 1) and then failed to detach.
refused_remove=0
remove_refused() {
	local other out rc before_refusal=$L
	for other in "${ALL[@]}"; do [[ :$L: == *":$other:"* ]] && break; done
	out=$("$DISK" "$L" remove "$other" 2>&1); rc=$?
	[[ $rc == 8 ]] && grep -q "disk [0-9]* stays a member" <<<"$out" ||
		fail "remove $other with two disks left: exit $rc, want 8: $(tail -3 <<<"$out")"
	echo "$out" > "$T/kill.out"
	after_kill "remove ${other#"$T"/} with two disks left, refused" || return
	[[ $L == "$before_refusal" ]] || fail "remove $other with two disks left: the disks are now $L"
	out=$("$DISK" "$L" status 2>&1)
	grep -q "^metadata store: 2 copies" <<<"$out" ||
		fail "remove $other with two disks left: the store lost a copy: $(grep -A2 '^metadata store' <<<"$out")"
	refused_remove=1
}
victim='' step=0 rebalances=0 t0=$SECONDS
for i in $(seq "$KILLS"); do
	members || { fail "kill $i: no list of disks has a status"; break; }
	delay=$(printf '0.%03d' $((RANDOM % 250)))
	who=tool
	if ((${#IDX[@]} < 3)); then
		# The victim back, with the rebalance onto it.
		((i % 2)) && who=daemon
		what="add ${victim#"$T"/}, $who killed after ${delay}s"
		kill_during "$who" "$L" "$delay" add "$victim" || { fail "$what: mount"; break; }
		after_kill "$what" members || break
		continue
	fi
	case $((step++ % 3)) in
	0 | 1)
		((step % 3 == 1)) && who=daemon
		pile=
		((rebalances++ % 3 == 2)) && pile=pile
		w=$(weights $pile)
		what="rebalance $w, $who killed after ${delay}s"
		# shellcheck disable=SC2086
		kill_during "$who" "$L" "$delay" rebalance $w || { fail "$what: mount"; break; }
		after_kill "$what" || break
		;;
	2)
		victim=${ALL[$((RANDOM % 3))]}
		((i % 2)) && who=daemon
		what="remove ${victim#"$T"/}, $who killed after ${delay}s"
		kill_during "$who" "$L" "$delay" remove "$victim" || { fail "$what: mount"; break; }
		after_kill "$what" members || break
		if [[ :$L: == *":$victim:"* ]]; then
			# Finished, unkilled: it must drain onto the two others.
			out=$("$DISK" "$L" remove "$victim" 2>&1) || fail "remove $victim after the kill: $out"
			echo "$out" > "$T/kill.out"
			after_kill "remove ${victim#"$T"/} finished" || break
		fi
		((refused_remove)) || remove_refused
		;;
	esac
done
# The last state settled: the victim back if out, then one rebalance
# unkilled, which must leave nothing to do.
members || fail "no status at the end"
if ((${#IDX[@]} < 3)); then
	out=$("$DISK" "$L" add "$victim" 2>&1) || fail "add $victim at the end: $out"
	members || fail "no status after the last add"
fi
out=$("$DISK" "$L" rebalance 2>&1) || fail "the last rebalance: $out"
echo "$out" > "$T/kill.out"
after_kill "the last rebalance"
out=$("$DISK" "$L" rebalance 2>&1)
grep -q "nothing to move" <<<"$out" || fail "a rebalance after the last still moves: $out"
say "$KILLS kills in $((SECONDS - t0)) s: $moved sections moved, $refused moves refused (a section onto its partner's disk), $moving kills left a move under way"
((moved > 0)) || fail "no section ever moved"

# ---- a chunk placed while its section moves ----
# A new chunk's place comes from the map, read outside the gates of its
# sections.  Three disks, 4 sections: pairs (0,1) on disks 0 and 1, (2,3)
# on disks 2 and 0; disk 2 an eiofs mount whose statfs blocks ("stall
# statfs"), so that a writer placing a chunk in pair (2,3) is held up in
# the placement (the room of disk 2) after it read the map.  Meanwhile
# section 2, empty, moves to disk 0, beside section 3 (allowed: no chunk
# of it has two copies), through the control socket (lsmfs-disk's status
# would wait for the statfs too).  Then the writer goes on: the chunk
# must be placed again, in pair (0,1), not written as two copies on disk
# 0 (it was, before: fsck said LSMFS-0519).
EIOFS=$B/tests/disk/eiofs
R=$T/r RA=$T/r/a RB=$T/r/b RC=$T/r/c RULES=$T/r/rules
cleanup_more() {
	fusermount3 -u "$M" 2>/dev/null
	fusermount3 -u "$RA" 2>/dev/null || umount -l "$RA" 2>/dev/null
}
mkdir -p "$R/asrc" "$RA" "$RB" "$RC"
: > "$RULES"
"$EIOFS" "$R/asrc" "$RA" "$RULES" -f 2> "$R/eiofs.err" &
for _ in $(seq 100); do mountpoint -q "$RA" && break; sleep 0.05; done
RL=$RB:$RC:$RA
if ! mountpoint -q "$RA"; then
	fail "eiofs did not mount: $(cat "$R/eiofs.err")"
elif ! "$MKFS" -q --data-copies 2 --sections 4 --chunk-size 65536 "$RB" "$RC" "$RA" ||
	! mount_fg "$R/daemon.log" "$RL"; then
	fail "mkfs or mount of the race's disks"
elif [[ $("$INSPECT" "$RL" keys P | tr '\n' ' ') != "P 0 -> disk 0 P 1 -> disk 1 P 2 -> disk 2 P 3 -> disk 0 " ]]; then
	fail "the race's map is not as planned: $("$INSPECT" "$RL" keys P | tr '\n' ' ')"
else
	echo "stall statfs" > "$RULES.new" && mv "$RULES.new" "$RULES"
	# Files of one chunk until one is held up: its chunk hashes to pair
	# (2,3) (one in (0,1) never asks disk 2's room).
	W=
	for i in $(seq 20); do
		head -c 60000 /dev/urandom > "$R/data$i"
		cp "$R/data$i" "$M/f$i" & W=$!
		sleep 0.3
		alive "$W" && break
		wait "$W" || fail "f$i: written with the statfs of disk 2 stalled"
		W=
	done
	if [[ -z $W ]]; then
		fail "no write of 20 was held up by disk 2's statfs"
		: > "$RULES.new" && mv "$RULES.new" "$RULES"
	else
		out=$(python3 - "$RB/.lsmfs/meta/control" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"move 2 0\n")
buf = b""
while not buf.endswith(b"ok\n") and b"\nerror" not in b"\n" + buf:
    d = s.recv(4096)
    if not d:
        break
    buf += d
print(buf.decode().strip().splitlines()[-1])
PY
)
		[[ $out == ok ]] || fail "moving section 2 to disk 0 under the held-up writer: $out"
		alive "$W" || fail "f$i: the writer was not held up until the move ended"
		: > "$RULES.new" && mv "$RULES.new" "$RULES"
		wait "$W" || fail "f$i: the write held up during the move failed"
		cmp -s "$R/data$i" "$M/f$i" || fail "f$i: reads other bytes"
		umount_wait "$RL" || fail "unmount of the race's disks"
		fsck_clean "$RL" "a chunk placed while its section moved"
		"$INSPECT" "$RL" keys P > "$R/map"
		out=$(python3 "$T/layout.py" strict "$R/map" "0=$RB" "1=$RC" "2=$RA")
		if [[ -n $out ]]; then
			fail "a chunk placed while its section moved: $out"
		else
			say "a chunk placed while its section moved onto its partner's disk: placed again, in sections $(find "$RB" "$RC" "$RA" -path '*/sections/*' -name "*.*" -type f -printf '%h\n' | sed 's|.*/||' | sort | tr '\n' ' ')"
		fi
	fi
fi

# ---- a pair on one disk whose chunks have one live copy ----
# Written by a mount without disk 1 (each chunk one copy, the other stale),
# then sections 1 and 3 (disk 1's) moved beside their partners on disk 0:
# the mover allows it (no chunk there has two live copies), and fsck says
# the stale copies (LSMFS-0518), not two copies on one disk (0519: it did,
# exit 4, for chunks that were never on two disks).
Q0=$T/q0 Q1=$T/q1
mkdir -p "$Q0" "$Q1"
if ! "$MKFS" -q --meta-copies 1 --data-copies 2 --sections 4 --chunk-size 65536 "$Q0" "$Q1" ||
	! mount_fg "$T/q.log" -o degraded "$Q0"; then
	fail "mkfs or degraded mount of the stale pair's disks"
else
	head -c 300000 /dev/urandom > "$T/qdata"
	cp "$T/qdata" "$M/q" && sync -f "$M/q" || fail "writing with disk 1 missing"
	umount_wait "$Q0" || fail "unmount of the degraded mount"
	for sec in 1 3; do
		out=$("$DISK" "$Q0:$Q1" move "$sec" 0 2>&1) || fail "moving section $sec (stale copies only) beside its partner: $out"
	done
	before=$fails
	out=$("$FSCK" -n "$Q0:$Q1" 2>&1)
	# 0518 is said in one line for all the stale copies.
	grep -q "[1-9][0-9]* chunk cop[a-z]* stale" <<<"$out" || fail "a pair on one disk with stale copies: fsck -n does not say the stale copies: $out"
	grep -q "LSMFS-0519" <<<"$out" && fail "a pair on one disk with stale copies: fsck -n says two copies on one disk: $(grep LSMFS-0519 <<<"$out")"
	mount_fg "$T/q.log" "$Q0:$Q1" && cmp -s "$T/qdata" "$M/q" || fail "the stale pair's file after the moves"
	umount_wait "$Q0:$Q1"
	((fails > before)) || say "a pair on one disk, its chunks with a stale copy: stale copies said (0518), not 0519"
fi
finish
