#!/bin/bash
# test_evacuate.sh BUILD_DIR: lsmfs-disk remove --evacuate, for a failing
# disk (fs/SCHEMA.md "Moving a section", "Evacuating").  Disk 1 is an
# eiofs mount (tests/disk/eiofs.c) whose reads of chosen chunk files, or
# of every file of a chosen section directory (which cannot be listed
# either), fail with EIO.
#
#   - a plain move of a section holding an unreadable chunk fails, names
#     the file, and changes nothing;
#   - offline, remove --evacuate moves everything else and lists by path
#     exactly the chunks it could not read, their files kept in the
#     disk's .lsmfs/evacuated/; the disk is detached; those
#     chunks read as EIO (the rest of each file as before, every other
#     file whole); fsck -n reports each (LSMFS-0504), fsck -y makes them
#     holes, and the files then read as zeros there;
#   - SIGKILL of the offline evacuation at random points first: fsck -n
#     finds nothing but lost chunks, and the run that ends it (or the
#     last killed one) leaves every unreadable chunk recorded;
#   - online, under an appending+fsyncing writer, a random writer and a
#     reader: the same, with no error and no lost byte for them.
NAME=test_evacuate
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
EIOFS=$B/tests/disk/eiofs
KILLS=${LSMFS_EVACUATE_KILLS:-6}
CH=65536
D0=$T/d0 D1=$T/d1 D2=$T/d2 S1=$T/d1src RULES=$T/rules
cleanup_more() { fusermount3 -u "$D1" 2>/dev/null || umount -l "$D1" 2>/dev/null; }
mkdir -p "$D0" "$D1" "$D2" "$S1" "$M" "$T/orig"
: > "$RULES"
"$EIOFS" "$S1" "$D1" "$RULES" -f 2> "$T/eiofs.err" &
for _ in $(seq 100); do mountpoint -q "$D1" && break; sleep 0.05; done
mountpoint -q "$D1" || { echo "$NAME: eiofs did not mount: $(cat "$T/eiofs.err")" >&2; exit 1; }

# Files of every shape, their originals kept in $T/orig.
make_files() {
	head -c 3000 /dev/urandom > "$T/orig/inline"
	for i in 1 2 3 4 5 6; do head -c $((i * 150000 + 7)) /dev/urandom > "$T/orig/f$i"; done
	truncate -s 900000 "$T/orig/sparse"
	printf 'middle' | dd of="$T/orig/sparse" bs=1 seek=450000 conv=notrunc status=none
	head -c 1000000 /dev/urandom > "$T/orig/static"
	cp -a "$T/orig/." "$M/"
	ln "$M/f3" "$M/f3.link"
	cp "$T/orig/f3" "$T/orig/f3.link"
	sync -f "$M"
	stat -c '%i %n' "$M"/* | sed "s|$M/||" | sort > "$T/inodes"
}
# The name of inode $1 (one of them, for a hard link).
names_of() { awk -v i="$1" '$1 == i {print $2}' "$T/inodes"; }
# "ino.chunk" of the chunk files on disk 1 that the rules make unreadable
# and that hold data (an all-hole file is never read).
expected_lost() {
	local r f
	while read -r r; do
		if [[ $r == */+ ]]; then
			continue # only its listing fails: every file is read
		elif [[ $r == */ ]]; then
			find "$S1/$r" -type f
		else
			echo "$S1/$r"
		fi
	done < "$RULES" | while read -r f; do
		[[ $(stat -c %b "$f") -gt 0 ]] && basename "$f"
	done | sort
}
# "ino.chunk" of every `unreadable:` line of lsmfs-disk's output in $1,
# and each line's path checked against the inode's names.
listed_lost() {
	local line ino chunk path
	grep '^unreadable: ' "$1" | while read -r line; do
		ino=$(sed -n 's/.*(inode \([0-9]*\), chunk \([0-9]*\)).*/\1/p' <<<"$line")
		chunk=$(sed -n 's/.*(inode \([0-9]*\), chunk \([0-9]*\)).*/\2/p' <<<"$line")
		path=$(sed -n 's/^unreadable: \/\([^:]*\): bytes .*/\1/p' <<<"$line")
		names_of "$ino" | grep -qx "$path" || echo "BADPATH:$path:$ino"
		echo "$ino.$chunk"
	done | sort
}
# Check every file: lost chunks as $1 says (eio: reads fail; zero: read
# as zeros), every other byte as the original.
check_files() { # eio|zero WHAT
	local f ino size c n lostc got
	for f in $(cd "$T/orig" && ls); do
		ino=$(awk -v n="$f" '$2 == n {print $1}' "$T/inodes")
		lostc=$(tr ' ' '\n' <<<"$LOST" | awk -F. -v i="$ino" '$1 == i {print $2}')
		if [[ -z $lostc ]]; then
			cmp -s "$M/$f" "$T/orig/$f" || fail "$2: $f differs"
			continue
		fi
		size=$(stat -c %s "$T/orig/$f")
		for ((c = 0; c * CH < size; c++)); do
			n=$((size - c * CH < CH ? size - c * CH : CH))
			if grep -qx "$c" <<<"$lostc"; then
				if [[ $1 == eio ]]; then
					got=$(dd if="$M/$f" bs=$CH skip=$c count=1 status=none 2>&1 > /dev/null)
					grep -q "Input/output error" <<<"$got" ||
						fail "$2: $f chunk $c (lost) does not read as EIO: $got"
				else
					cmp -s <(dd if="$M/$f" bs=$CH skip=$c count=1 status=none) \
						<(head -c "$n" /dev/zero) || fail "$2: $f chunk $c (lost) is not a hole"
				fi
			else
				cmp -s <(dd if="$M/$f" bs=$CH skip=$c count=1 status=none) \
					<(dd if="$T/orig/$f" bs=$CH skip=$c count=1 status=none) ||
					fail "$2: $f chunk $c differs"
			fi
		done
	done
}
# Chunk files on disk 1 (relative to its root) holding data, of inodes
# of the files given.
chunks_of() { # FILE...
	local f ino
	for f in "$@"; do
		ino=$(awk -v n="$f" '$2 == n {print $1}' "$T/inodes")
		(cd "$S1" && find .lsmfs/sections -type f -name "$ino.*" -size +0 | sed 's|^\./||')
	done
}

# ---- offline ----
"$MKFS" -q --sections 16 --chunk-size $CH "$D0" "$D1" "$D2" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1:$D2
"$LSMFS" "$L" "$M" || { echo "mount failed" >&2; exit 1; }
make_files
umount_wait "$L" || { echo "unmount failed" >&2; exit 1; }
# A section directory with two chunk files at least, unreadable whole;
# another whose listing fails (its files read); one chunk file of each of
# two files elsewhere.
bad_dir="" unlisted=""
for d in "$S1"/.lsmfs/sections/*/; do
	(($(find "$d" -type f -size +0 | wc -l) >= 2)) || continue
	if [[ -z $bad_dir ]]; then bad_dir=${d#"$S1"/}; else unlisted=${d#"$S1"/}; break; fi
done
[[ -n $unlisted ]] || { echo "$NAME: too few section directories on disk 1 with 2 chunk files" >&2; exit 1; }
mapfile -t cand < <(chunks_of f5 f6 | grep -v "^$bad_dir\|^$unlisted")
((${#cand[@]} >= 2)) || { echo "$NAME: too few chunk files of f5/f6 on disk 1" >&2; exit 1; }
# First only the listing: a plain move must not take an unlisted
# directory for an empty one (the files would be lost with the old copy).
echo "$unlisted+" > "$RULES"
out=$("$DISK" "$L" move "${unlisted//[^0-9]/}" 0 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "listing" <<<"$out" ||
	fail "plain move of a section whose listing fails: exit $rc: $out"
n=$(find "$S1/$unlisted" -type f -size +0 | wc -l)
((n >= 2)) || fail "plain move of a section whose listing fails: $n chunk files left on disk 1"
printf '%s\n' "$bad_dir" "$unlisted+" "${cand[0]}" "${cand[-1]}" > "$RULES"
want=$(expected_lost)
say "offline: unreadable: $(tr '\n' ' ' < "$RULES")($(wc -l <<<"$want") chunks)"

# A plain move of a section with an unreadable chunk fails and says which.
bad_sec=$(basename "$(dirname "${cand[0]}")")
out=$("$DISK" "$L" move "$bad_sec" 0 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "$(basename "${cand[0]}")\|Input/output" <<<"$out" ||
	fail "plain move of a section with an unreadable chunk: exit $rc: $out"
[[ -f $S1/${cand[0]} ]] || fail "plain move: the unreadable chunk's file went"
out=$("$DISK" "$L" move "${bad_dir//[^0-9]/}" 0 2>&1); rc=$?
[[ $rc == 8 ]] || fail "plain move of an unreadable section directory: exit $rc: $out"

# SIGKILLed part way a few times first: each run goes on from where the
# last stopped; in the end every lost chunk is recorded, whichever run
# found it.
seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "offline: $KILLS SIGKILLs of the evacuation (seed $seed, replay with LSMFS_SEED)"
: > "$T/all.out"
cut=0
for i in $(seq "$KILLS"); do
	kill_during tool "$L" "$(printf '0.%03d' $((RANDOM % 30)))" remove --evacuate "$D1"
	cat "$T/kill.out" >> "$T/all.out"
	out=$("$FSCK" -n "$L" 2>&1)
	# 0508: disk 1 (a member until the end) has a directory it cannot read;
	# 0107, 0511: its copy of the store moving off it was cut short (a
	# copy not filled yet, a superblock behind), settled by the next run
	bad=$(grep -E "^LSMFS-" <<<"$out" | grep -v -E "^LSMFS-(0503|0504|0508|0107|0511)")
	[[ -z $bad ]] || fail "kill $i: fsck -n: $(head -c 600 <<<"$bad")"
	grep -q "^removed disk" "$T/kill.out" && break
	cut=$((cut + 1))
done
say "offline: $cut runs cut short, $(grep -c "^moved section" "$T/all.out") sections moved by them"
if ! grep -q "^removed disk" "$T/all.out"; then
	"$DISK" "$L" remove --evacuate "$D1" > "$T/evac.out" 2>&1; rc=$?
	if ((rc)) && grep -q "$D1: \(removed\|no longer\)" "$T/evac.out"; then
		say "offline: the last run killed had detached the disk"
	else
		[[ $rc == 0 ]] || fail "offline evacuate: exit $rc: $(tail -5 "$T/evac.out")"
	fi
	cat "$T/evac.out" >> "$T/all.out"
fi
got=$(listed_lost "$T/all.out" | sort -u)
grep -q BADPATH <<<"$got" && fail "offline evacuate: a listed path is not the inode's: $(grep BADPATH <<<"$got")"
got=$(grep -v BADPATH <<<"$got")
[[ -z $got ]] || [[ -z $(comm -23 <(echo "$got") <(echo "$want")) ]] ||
	fail "offline evacuate: listed $(echo $got), want at most $(echo $want): $(cat "$T/all.out")"
((KILLS)) || [[ $got == "$want" ]] || fail "offline evacuate: listed $(echo $got), want $(echo $want): $(cat "$T/all.out")"
((KILLS)) || grep -q "could not be read" "$T/all.out" || fail "offline evacuate: no summary: $(cat "$T/all.out")"
LOST=$(echo $want)
# The unreadable files are kept on the failing disk, for recovery tries.
for x in $want; do
	[[ -n $(find "$S1/.lsmfs/evacuated" -name "$x" 2>/dev/null) ]] ||
		fail "offline evacuate: lost chunk file $x not kept in .lsmfs/evacuated"
done
L=$D0:$D2
out=$("$FSCK" -n "$L" 2>&1); rc=$?
got=$(sed -n 's/^LSMFS-0504.*inode \([0-9]*\) (.*) chunk \([0-9]*\):.*/\1.\2/p' <<<"$out" | sort)
[[ $rc == 4 && $got == "$want" ]] ||
	fail "fsck -n after the evacuation: exit $rc, LSMFS-0504 for $(echo $got), want 4 and $(echo $want): $(head -c 800 <<<"$out")"
"$LSMFS" "$L" "$M" || fail "mount after the evacuation"
check_files eio "offline evacuate"
umount_wait "$L" || fail "unmount after the evacuation"
out=$("$FSCK" -y "$L" 2>&1); rc=$?
[[ $rc == 1 ]] || fail "fsck -y: exit $rc: $(head -c 600 <<<"$out")"
fsck_clean "$L" "after fsck -y"
"$LSMFS" "$L" "$M" || fail "mount after fsck -y"
check_files zero "after fsck -y"
umount_wait "$L" || fail "unmount after fsck -y"
out=$("$LSMFS" "$D0:$D1:$D2" "$M" 2>&1); rc=$?
[[ $rc != 0 ]] && grep -q "retired\|no longer" <<<"$out" || fail "mount with the evacuated disk: exit $rc: $out"
mounted && fusermount3 -u "$M"

# ---- online, under load ----
: > "$RULES"
rm -rf "$D0" "$D2" "$S1"/.lsmfs "$T/orig"
mkdir -p "$D0" "$D2" "$T/orig"
"$MKFS" -q --sections 16 --chunk-size $CH "$D0" "$D1" "$D2" || fail "mkfs (online)"
L=$D0:$D1:$D2
"$LSMFS" "$L" "$M" || { echo "mount failed" >&2; exit 1; }
make_files
rm -f "$T/stop"
"$CHURN" append "$M/appended" "$T/stop" > "$T/append.out" 2>&1 & P1=$!
"$CHURN" randwrite "$M/random" "$T/stop" > "$T/random.out" 2>&1 & P2=$!
"$CHURN" read "$M/static" "$T/stop" > "$T/read.out" 2>&1 & P3=$!
sleep 0.5
mapfile -t cand < <(chunks_of f4 f5 f6)
((${#cand[@]} >= 3)) || fail "online: too few chunk files of f4..f6 on disk 1"
printf '%s\n' "${cand[0]}" "${cand[$((${#cand[@]} / 2))]}" "${cand[-1]}" | sort -u > "$RULES"
want=$(expected_lost)
say "online: unreadable: $(tr '\n' ' ' < "$RULES")"
"$DISK" "$M" remove --evacuate "$D1" > "$T/evac.out" 2>&1; rc=$?
[[ $rc == 0 ]] || fail "online evacuate: exit $rc: $(tail -5 "$T/evac.out")"
touch "$T/stop"
for p in $P1 $P2 $P3; do wait "$p" || fail "churn $p: $(cat "$T"/*.out)"; done
say "online evacuate under load: $(cat "$T/append.out" "$T/random.out" "$T/read.out" | tr '\n' ' ')"
got=$(listed_lost "$T/evac.out")
[[ $got == "$want" ]] || fail "online evacuate: listed $(echo $got), want $(echo $want): $(cat "$T/evac.out")"
LOST=$(echo $want)
sed -n 's/^unreadable: .*chunk [0-9]*): \(.*\): [^:]*$/\1/p' "$T/evac.out" | while read -r f; do
	[[ -f ${f/#$D1/$S1} ]] || echo "$f"
done > "$T/missing"
[[ ! -s $T/missing ]] || fail "online evacuate: listed files not kept: $(cat "$T/missing")"
n=$(grep -c "chunk [0-9]*): $D1/.lsmfs/evacuated/" "$T/evac.out")
[[ $n == $(wc -l <<<"$want") ]] || fail "online evacuate: $n files listed as kept: $(cat "$T/evac.out")"
check_files eio "online evacuate"
rm -f "$M/appended" "$M/random"
L=$D0:$D2
umount_wait "$L" || fail "unmount after the online evacuation"
out=$("$FSCK" -n "$L" 2>&1); rc=$?
n=$(grep -c "^LSMFS-0504" <<<"$out")
[[ $rc == 4 && $n == $(wc -l <<<"$want") ]] ||
	fail "fsck -n after the online evacuation: exit $rc, $n LSMFS-0504: $(head -c 800 <<<"$out")"
finish
