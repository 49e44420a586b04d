#!/bin/bash
# test_convert.sh BUILD_DIR: `lsmfs-disk MNT convert [--copies K] [--placement P]
# [PATH]`
# (fs/SCHEMA.md "Copies"), against a plain directory.
#
#   - a tree of files written with one copy, converted to two: every chunk
#     then has two files on two disks, the files read as written, the
#     attribute is set on every directory and file (new files get two
#     copies), files outside PATH keep one;
#   - converted back to one: one file per chunk again, the files the same;
#   - SIGKILL of the daemon during a conversion to two copies (3 rounds, a
#     random delay): after a remount every file reads as written, a second
#     conversion finishes, and fsck.lsmfs -n is clean;
#   - --placement together: every file's chunks in one section (two copies:
#     one pair, two disks), files the same; --placement spread back over
#     every disk; a leftover of a relocation cut short reported by fsck -n
#     (LSMFS-051C) and removed by the mount after a crash; SIGKILLs during
#     placement conversions.
NAME=test_convert
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

D0=$T/d0 D1=$T/d1 D2=$T/d2 P=$T/plain
mkdir -p "$D0" "$D1" "$D2" "$M" "$P"
L=$D0:$D1:$D2
"$MKFS" -q --sections 64 --chunk-size 65536 "$D0" "$D1" "$D2" || { echo "mkfs failed" >&2; exit 1; }
mount_fg "$T/daemon.log" "$L" || { echo "mount failed" >&2; exit 1; }

# Chunk files per (ino, chunk) of the files under DIR of $M: "N: M" lines
# counting the chunks with N files; and whether two files of one chunk are
# on one disk (printed "same disk").
copies_of() { # DIR
	local inos
	inos=$(find "$M/$1" -type f -size +4k -printf '%i\n' | sort -u | tr '\n' ' ')
	for d in "$D0" "$D1" "$D2"; do
		find "$d/.lsmfs/sections" -type f -printf "%f $d\n"
	done | awk -v list="$inos" 'BEGIN { n = split(list, a, " "); for (i = 1; i <= n; i++) w[a[i]] = 1 }
		{ split($1, p, "."); if (p[1] in w) { c[$1]++; if (seen[$1 " " $2]++) same++ } }
		END { for (k in c) h[c[k]]++; for (k in h) print k ": " h[k]; if (same) print "same disk" }' | sort
}
check_files() { # WHAT
	local f bad=0
	while read -r f; do
		cmp -s "$P/$f" "$M/$f" || bad=$((bad + 1))
	done < "$T/list"
	[[ $bad == 0 ]] || fail "$1: $bad files differ from their plain copies"
}

mkdir -p "$M/t/a/b" "$M/t/c" "$M/out" "$P/t/a/b" "$P/t/c" "$P/out"
for i in $(seq 30); do
	f=t/$([[ $((i % 3)) == 0 ]] && echo a/b || { [[ $((i % 3)) == 1 ]] && echo a || echo c; })/f$i
	head -c $((i * 23000 + 5000)) /dev/urandom > "$P/$f"
	cp "$P/$f" "$M/$f"
done
head -c 500000 /dev/urandom > "$P/out/o"
cp "$P/out/o" "$M/out/o"
(cd "$P" && find . -type f -printf '%P\n') > "$T/list"
[[ $(copies_of t) == "1: "* ]] || fail "before: $(copies_of t)"

# ---- one copy to two ----
out=$("$DISK" "$M" convert --copies 2 "$M/t" 2>&1) || fail "convert --copies 2: $out"
say "$out"
got=$(copies_of t)
[[ $got =~ ^2:\ [0-9]+$ ]] || fail "after convert --copies 2: chunks by files: $got"
[[ $(copies_of out) == "1: "* ]] || fail "a file outside PATH changed: $(copies_of out)"
[[ $(getfattr --only-values -n user.lsmfs.copies "$M/t/a/b" 2>/dev/null) == 2 &&
   $(getfattr --only-values -n user.lsmfs.copies "$M/t/c/f2" 2>/dev/null) == 2 ]] ||
	fail "the attribute is not on the tree's directories and files"
head -c 300000 /dev/urandom > "$P/t/c/new"
cp "$P/t/c/new" "$M/t/c/new"
echo t/c/new >> "$T/list"
sync -f "$M/t/c/new"
check_files "after convert --copies 2"
[[ $(copies_of t) =~ ^2:\ [0-9]+$ ]] || fail "a new file below did not get two copies: $(copies_of t)"

# ---- two to one ----
out=$("$DISK" "$M" convert --copies 1 "$M/t" 2>&1) || fail "convert --copies 1: $out"
[[ $(copies_of t) =~ ^1:\ [0-9]+$ ]] || fail "after convert --copies 1: $(copies_of t)"
check_files "after convert --copies 1"
umount_wait "$L" || fail "unmount"
fsck_clean "$L" "after converting up and down"

# ---- SIGKILL during a conversion ----
for round in 1 2 3; do
	kill_during daemon "$L" "0.$((RANDOM % 4))$((RANDOM % 10))" convert --copies 2 "$M/t" ||
		{ fail "mount, round $round"; break; }
	mount_fg "$T/daemon.$round.b.log" "$L" || { fail "mount after SIGKILL, round $round"; break; }
	check_files "after SIGKILL during convert, round $round"
	out=$("$DISK" "$M" convert --copies 2 "$M/t" 2>&1) || fail "convert again, round $round: $out"
	[[ $(copies_of t) =~ ^2:\ [0-9]+$ ]] || fail "round $round: not every chunk has two copies: $(copies_of t)"
	check_files "after convert again, round $round"
	out=$("$DISK" "$M" convert --copies 1 "$M/t" 2>&1) || fail "convert back, round $round: $out"
	umount_wait "$L" || fail "unmount, round $round"
	fsck_clean "$L" "after SIGKILL during convert, round $round"
done
say "3 SIGKILLs during convert --copies 2: files as written, convert finished, fsck clean"

# ---- placement ----
# Sections per file under DIR of $M: "N: M" lines counting the files whose
# chunk files are in N sections; "disks K" the most disks one file is on.
sections_of() { # DIR
	local inos
	inos=$(find "$M/$1" -type f -size +4k -printf '%i\n' | sort -u | tr '\n' ' ')
	for d in "$D0" "$D1" "$D2"; do
		find "$d/.lsmfs/sections" -type f -printf "%f %h $d\n"
	done | awk -v list="$inos" 'BEGIN { n = split(list, a, " "); for (i = 1; i <= n; i++) w[a[i]] = 1 }
		{ split($1, p, "."); if (!(p[1] in w)) next
		  if (!seen[p[1] " " $2]++) s[p[1]]++
		  if (!dseen[p[1] " " $3]++) dk[p[1]]++ }
		END { for (k in s) h[s[k]]++; for (k in h) print k ": " h[k]
		      m = 0; for (k in dk) if (dk[k] > m) m = dk[k]; print "disks " m }' | sort
}
mount_fg "$T/daemon.place.log" "$L" || fail "mount for placement"
out=$("$DISK" "$M" convert "$M/t" 2>&1); rc=$?
[[ $rc == 16 ]] || fail "convert with neither --copies nor --placement: exit $rc (want 16): $out"
out=$("$DISK" "$M" convert --placement apart "$M/t" 2>&1); rc=$?
[[ $rc == 16 ]] || fail "convert --placement apart: exit $rc (want 16): $out"
# A sparse file, 8 chunks with 4 KiB written at each end of each (a hole of
# 56 KiB inside every chunk file): its holes stay holes when its chunks
# move.
for c in $(seq 0 7); do
	for b in 0 15; do
		dd if=/dev/urandom of="$P/t/sparse" bs=4096 count=1 seek=$((c * 16 + b)) conv=notrunc \
			status=none
	done
done
cp --sparse=always "$P/t/sparse" "$M/t/sparse"
echo t/sparse >> "$T/list"
sync -f "$M/t/sparse"
held() { # INO: bytes its chunk files hold on the disks
	find "$D0" "$D1" "$D2" -path '*/.lsmfs/sections/*' -name "$1.*" -printf '%b\n' |
		awk '{ b += $1 * 512 } END { print b + 0 }'
}
sino=$(stat -c %i "$M/t/sparse")
got=$(sections_of t)
[[ $got == *"disks 3"* ]] || fail "before: spread files are not over 3 disks: $got"
out=$("$DISK" "$M" convert --placement together "$M/t" 2>&1) || fail "convert --placement together: $out"
say "$out"
got=$(sections_of t)
[[ $got == $'1: 32\ndisks 1' ]] || fail "after convert --placement together: $got"
h=$(held "$sino")
((h <= 8 * 32768)) || fail "the sparse file's chunks hold $h bytes after they moved (64 KiB written): holes filled"
[[ $(getfattr --only-values -n user.lsmfs.placement "$M/t/a/b/f3" 2>/dev/null) == together ]] ||
	fail "the placement attribute is not on the tree"
check_files "after convert --placement together"
[[ $(copies_of t) =~ ^1:\ [0-9]+$ ]] || fail "together: chunks by files: $(copies_of t)"
# Two copies, together: each file on the two disks of one pair.
out=$("$DISK" "$M" convert --copies 2 --placement together "$M/t" 2>&1) || fail "convert --copies 2 --placement together: $out"
got=$(sections_of t)
[[ $got == $'2: 32\ndisks 2' ]] || fail "after --copies 2 --placement together: $got"
check_files "after --copies 2 --placement together"
out=$("$DISK" "$M" convert --copies 1 --placement spread "$M/t" 2>&1) || fail "convert --copies 1 --placement spread: $out"
got=$(sections_of t)
[[ $got == *"disks 3"* ]] || fail "after convert --placement spread: not over 3 disks: $got"
[[ $(copies_of t) =~ ^1:\ [0-9]+$ ]] || fail "spread: chunks by files: $(copies_of t)"
check_files "after convert --placement spread"
umount_wait "$L" || fail "unmount after placement"
fsck_clean "$L" "after converting placement"

# A leftover of a relocation cut short (a chunk file in another section,
# every copy in place): fsck -n reports it (LSMFS-051C); the mount after a
# crash removes it; fsck clean after.

mount_fg "$T/daemon.left.log" "$L" || fail "mount for the leftover"
ino=$(stat -c %i "$M/t/a/b/f3")
pid=$(daemon_pid "$L")
kill -KILL "$pid"
fusermount3 -u -z "$M" 2>/dev/null
for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
src=$(find "$D0/.lsmfs/sections" "$D1/.lsmfs/sections" "$D2/.lsmfs/sections" -type f -name "$ino.0" | head -1)
sec=$(basename "$(dirname "$src")")
other=$(( (sec + 2) % 64 ))
dst=$T/d$((other % 3))/.lsmfs/sections/$other/$ino.0 # mkfs's map: section s on disk s mod 3
mkdir -p "$(dirname "$dst")"
cp "$src" "$dst"
out=$("$FSCK" -n "$L" 2>&1)
grep -q "LSMFS-051C" <<<"$out" || fail "fsck -n did not report the leftover $dst: $out"
mount_fg "$T/daemon.left.b.log" "$L" || fail "mount after the leftover"
check_files "with a leftover"
umount_wait "$L" || fail "unmount after the leftover"
[[ ! -e $dst ]] || fail "the mount after a crash left the leftover $dst"
fsck_clean "$L" "after the leftover"

# ---- SIGKILL during a relocation ----
for round in 1 2 3; do
	p=together
	((round % 2)) || p=spread
	kill_during daemon "$L" "0.$((RANDOM % 4))$((RANDOM % 10))" convert --placement $p "$M/t" ||
		{ fail "mount, placement round $round"; break; }
	mount_fg "$T/daemon.p$round.b.log" "$L" || { fail "mount after SIGKILL, placement round $round"; break; }
	check_files "after SIGKILL during convert --placement $p, round $round"
	out=$("$DISK" "$M" convert --placement $p "$M/t" 2>&1) || fail "convert --placement $p again, round $round: $out"
	[[ $p == spread || $(sections_of t) == $'1: 32\ndisks 1' ]] ||
		fail "round $round: not every file together: $(sections_of t)"
	check_files "after convert --placement $p again, round $round"
	umount_wait "$L" || fail "unmount, placement round $round"
	fsck_clean "$L" "after SIGKILL during convert --placement $p, round $round"
done
say "3 SIGKILLs during convert --placement: files as written, convert finished, fsck clean"
finish
