#!/bin/bash
# test_replace.sh BUILD_DIR: `lsmfs-disk replace OLD NEWDISK` (fs/SCHEMA.md
# "Replacing a disk").
#
#   - online, disk 0 there, under an appender, a random writer and a
#     reader: no error, every file the same, disk 0 detached (a retired
#     superblock left), the new disk holds exactly disk 0's former
#     sections and its copy of the store, fsck -n clean;
#   - offline (the disks given), disk 1 replaced the same way, stopped by
#     SIGINT after a section (exit 1, status says so) and run again;
#   - a disk gone with --data-copies 2 (the disk of a copy of the store,
#     mounted -o degraded,force_degraded): `replace missing NEW` lists no
#     file, every chunk in two copies on two disks after, the store's
#     copy on the new disk, no under-replication in status --json, every
#     file byte-identical, fsck -n clean;
#   - a disk gone with one copy (offline, --lost 2): exactly the files that
#     had chunk files on it listed "lost: PATH", the others the same;
#   - SIGKILL of the tool (offline) or of the daemon (online) at random
#     points, then the command again: done, files the same, fsck clean;
#   - bad usage (exit 16), NEWDISK not empty without -f, NEWDISK already a
#     member (exit 8, nothing changed).
NAME=test_replace
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "seed $seed (replay with LSMFS_SEED)"

fill() {
	mkdir -p "$M/a/b"
	for i in $(seq 40); do head -c $((i * 9000)) /dev/urandom > "$M/a/f$i"; done
	for i in $(seq 10); do echo "small $i" > "$M/a/b/s$i"; done
	head -c 1500000 /dev/urandom > "$M/big"
	truncate -s 3M "$M/sparse"
	printf 'tail' | dd of="$M/sparse" bs=1 seek=$((2 << 20)) conv=notrunc status=none
	sums > "$T/sums"
}
# The section map of status --json on one line per section: "s disk".
section_map() { # TARGET
	"$DISK" "$1" status --json | python3 -c '
import json, sys
for s, d in enumerate(json.load(sys.stdin)["section_disk"]): print(s, d)'
}
# A value of status --json: python expression on j.
status_get() { # TARGET EXPR
	"$DISK" "$1" status --json | python3 -c "import json, sys; j = json.load(sys.stdin); print($2)"
}
# Every section disk 0 held (in $T/before) is on NEW now, every other
# where it was.
check_map() { # WHAT TARGET OLD NEW
	section_map "$2" > "$T/after"
	local bad
	bad=$(join "$T/before" "$T/after" | awk -v o="$3" -v n="$4" '($2 == o && $3 != n) || ($2 != o && $3 != $2)')
	[[ -z $bad ]] || fail "$1: sections not where they should be (section before after): $(head -3 <<<"$bad")"
	grep -q " $3\$" "$T/after" && fail "$1: disk $3 still holds sections"
	[[ $(awk -v n="$4" '$2 == n' "$T/after" | wc -l) == $(awk -v o="$3" '$2 == o' "$T/before" | wc -l) ]] ||
		fail "$1: disk $4 holds other sections than disk $3 held"
}
# Only a retired superblock is left on DISK.
check_retired() { # WHAT DISK
	local left
	left=$(cd "$2" && find . -mindepth 1 | sort | tr '\n' ' ')
	[[ $left == "./.lsmfs ./.lsmfs/super " ]] || fail "$1: the old disk keeps more than its superblock: $left"
}
# Every chunk record of LIST (unmounted) against the chunk files: a line
# "ino chunk" for each chunk whose files are not two on two disks.
not_two() { # LIST
	local d
	for d in ${1//:/ }; do
		find "$d/.lsmfs/sections" -type f -name '*.*' -printf "%f $d\n" 2>/dev/null
	done | awk '{ split($1, a, "."); k = a[1] " " a[2]; n[k]++; if (!((k, $2) in seen)) { seen[k, $2] = 1; m[k]++ } }
		END { for (k in n) print k, n[k], m[k] }' | sort > "$T/files.per.chunk"
	"$INSPECT" "$1" keys C 2>&1 |
		sed -n 's/^C \([0-9]*\) \([0-9]*\) -> chunk record: section.*/\1 \2/p' |
		awk -v f="$T/files.per.chunk" 'BEGIN { while ((getline l < f) > 0) { split(l, a, " "); n[a[1] " " a[2]] = a[3] " " a[4] } }
			n[$1 " " $2] != "2 2" { print $1, $2, n[$1 " " $2] }'
}

# ---- online, disk 0 there, under load ----
D0=$T/d0 D1=$T/d1 D2=$T/d2 D3=$T/d3
mkdir -p "$D0" "$D1" "$D2" "$D3" "$M"
"$MKFS" -q --sections 32 --chunk-size 65536 "$D0" "$D1" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1
mount_fg "$T/daemon.log" "$L" || { echo "mount failed" >&2; exit 1; }
fill
head -c 3000000 /dev/urandom > "$M/static"
sums > "$T/sums"
section_map "$M" > "$T/before"
rm -f "$T/stop"
"$CHURN" append "$M/appended" "$T/stop" > "$T/append.out" 2>&1 & P1=$!
"$CHURN" randwrite "$M/random" "$T/stop" > "$T/random.out" 2>&1 & P2=$!
"$CHURN" read "$M/static" "$T/stop" > "$T/read.out" 2>&1 & P3=$!
sleep 0.3
out=$("$DISK" "$M" replace -n 0 "$D2" 2>&1); rc=$?
[[ $rc == 0 ]] && grep -q "^move section" <<<"$out" && grep -q "then disk 0 is detached" <<<"$out" ||
	fail "replace -n: exit $rc: $out"
[[ -e $D2/.lsmfs ]] && fail "replace -n wrote to the new disk"
out=$("$DISK" "$M" replace 0 "$D2" 2>&1); rc=$?
[[ $rc == 0 ]] && grep -q "replaced disk 0 ($D0) by disk 2 ($D2)" <<<"$out" || fail "online replace: exit $rc: $out"
grep -q "a new copy of the metadata store on disk 2" <<<"$out" || fail "online replace: the store's copy did not go to the new disk: $out"
touch "$T/stop"
for p in $P1 $P2 $P3; do wait "$p" || fail "churn $p: $(cat "$T"/*.out)"; done
rm -f "$M/appended" "$M/random"
check_sums "online replace"
check_map "online replace" "$M" 0 2
[[ $(status_get "$M" '[d["index"] for d in j["disks"]]') == "[1, 2]" ]] || fail "online replace: disks: $(status_get "$M" 'j["disks"]')"
[[ $(status_get "$M" 'sorted(c["disk"] for c in j["copies"])') == "[1, 2]" ]] || fail "online replace: store copies: $(status_get "$M" 'j["copies"]')"
[[ $(status_get "$M" 'j["replace"]') == None ]] || fail "online replace: a replace still recorded"
L=$D1:$D2
umount_wait "$L" || fail "unmount after the online replace"
check_retired "online replace" "$D0"
fsck_clean "$L" "online replace"
say "online replace under load: $(cat "$T/append.out" "$T/random.out" "$T/read.out" | tr '\n' ' ')"

# ---- offline, stopped by SIGINT after a section, then again ----
mount_fg "$T/daemon.log" "$L" || fail "mount for the offline replace"
head -c 20000000 /dev/urandom > "$M/bigger"
sums > "$T/sums"
umount_wait "$L"
section_map "$L" > "$T/before"
"$DISK" "$L" replace "$D1" "$D3" > "$T/int.out" 2>&1 &
tool=$!
for _ in $(seq 500); do grep -q "^moved section" "$T/int.out" && break; sleep 0.01; done
kill -INT "$tool"
wait "$tool"; rc=$?
[[ $rc == 1 ]] && grep -q "stopped" "$T/int.out" || fail "SIGINT during replace: exit $rc: $(cat "$T/int.out")"
out=$("$DISK" "$L:$D3" status 2>&1)
grep -q "disk 1 is being replaced by disk 0 ($D3)" <<<"$out" || fail "status after SIGINT: $out"
out=$("$DISK" "$L" replace "$D1" "$D3" 2>&1); rc=$?
[[ $rc == 0 ]] && grep -q "going on with the replace of disk 1 by disk 0" <<<"$out" &&
	grep -q "replaced disk 1 ($D1) by disk 0 ($D3)" <<<"$out" || fail "offline replace again: exit $rc: $out"
L=$D2:$D3
check_map "offline replace" "$L" 1 0
check_retired "offline replace" "$D1"
fsck_clean "$L" "offline replace"
mount_fg "$T/daemon.log" "$L" || fail "mount after the offline replace"
check_sums "offline replace"

# ---- bad usage, a new disk not empty, one a member already ----
N=$T/n && mkdir -p "$N" && echo x > "$N/other"
for args in "replace 0" "replace 0 $N x" "replace --weight 1 0 $N" "replace --lost --evacuate 0 $N" \
	"replace --copies 2 0 $N" "replace -z 0 $N"; do
	# shellcheck disable=SC2086 # the words of args
	out=$("$DISK" "$M" $args 2>&1); rc=$?
	[[ $rc == 16 ]] || fail "$args: exit $rc, not 16: $out"
done
out=$("$DISK" "$M" replace 0 "$N" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "not empty" <<<"$out" || fail "a new disk not empty: exit $rc: $out"
out=$("$DISK" "$M" replace 0 "$D2" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "already disk 2" <<<"$out" || fail "a member as the new disk: exit $rc: $out"
out=$("$DISK" "$M" replace 1 "$D2" 2>&1); rc=$?
[[ $rc == 8 ]] || fail "replace 1 (no such disk): exit $rc: $out"
[[ ! -e $N/.lsmfs && $(status_get "$M" '[d["index"] for d in j["disks"]]') == "[0, 2]" &&
	$(status_get "$M" 'j["replace"]') == None ]] || fail "a refused replace changed something"
umount_wait "$L"
fsck_clean "$L" "refused replaces"

# ---- a disk gone, two copies of the data ----
C=$T/c
mkdir -p "$C/d0" "$C/d1" "$C/d2" "$C/d3"
"$MKFS" -q --sections 32 --chunk-size 65536 --data-copies 2 "$C/d0" "$C/d1" "$C/d2" || fail "mkfs c"
mount_fg "$T/daemon.log" "$C/d0:$C/d1:$C/d2" || fail "mount c"
fill
umount_wait "$C/d0:$C/d1:$C/d2"
[[ -d $C/d1/.lsmfs/meta ]] || fail "c: disk 1 holds no copy of the store"
rm -rf "$C/d1"
CL=$C/d0:$C/d2
mount_fg "$T/daemon.log" -o degraded,force_degraded "$CL" || fail "c: mount -o degraded"
# Not usable here is not dead for good: without --lost (or `missing`)
# nothing is dropped.
out=$("$DISK" "$M" replace 1 "$C/d3" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "not usable here" <<<"$out" && [[ ! -e $C/d3/.lsmfs ]] ||
	fail "c: replace 1 of a missing disk without --lost: exit $rc (want 8, nothing added): $out"
out=$("$DISK" "$M" replace missing "$C/d3" 2>&1); rc=$?
[[ $rc == 0 ]] && grep -q "replaced disk 1 ($C/d1) by disk 3 ($C/d3)" <<<"$out" || fail "c: replace missing: exit $rc: $out"
grep -q "^lost: " <<<"$out" && fail "c: files listed lost with two copies: $(grep '^lost: ' <<<"$out" | head -3)"
[[ $(status_get "$M" 'j["data"]["under_replicated"], j["degraded"], sorted(c["disk"] for c in j["copies"])') == "False False [0, 3]" ]] ||
	fail "c: status after: $(status_get "$M" 'j["data"], j["degraded"], j["copies"]')"
check_sums "c: two copies, disk 1 gone"
CL=$C/d0:$C/d2:$C/d3
umount_wait "$CL" || fail "c: unmount"
bad=$(not_two "$CL")
[[ -z $bad ]] || fail "c: $(wc -l <<<"$bad") chunks not in two copies on two disks after: $(head -3 <<<"$bad" | tr '\n' ',')"
fsck_clean "$CL" "c: two copies, disk 1 gone"
mount_fg "$T/daemon.log" "$CL" || fail "c: remount"
check_sums "c: remounted"
umount_wait "$CL"

# ---- a disk gone, one copy: its files listed, offline ----
O=$T/o
mkdir -p "$O/d0" "$O/d1" "$O/d2" "$O/d3"
"$MKFS" -q --sections 32 --chunk-size 65536 "$O/d0" "$O/d1" "$O/d2" || fail "mkfs o"
mount_fg "$T/daemon.log" "$O/d0:$O/d1:$O/d2" || fail "mount o"
fill
on_disk "$O/d2" > "$T/expect"
(cd "$M" && find . -type f -printf '/%P\n' | sort) | comm -23 - "$T/expect" > "$T/kept"
(cd "$M" && while read -r f; do sha256sum ".$f"; done < "$T/kept") > "$T/sums.kept"
umount_wait "$O/d0:$O/d1:$O/d2"
[[ -s $T/expect && -s $T/kept ]] || fail "o: setup: $(wc -l < "$T/expect") files on disk 2, $(wc -l < "$T/kept") not"
rm -rf "$O/d2"
out=$("$DISK" "$O/d0:$O/d1" replace --lost 2 "$O/d3" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "o: replace --lost 2 offline: exit $rc: $out"
grep '^lost: ' <<<"$out" | sed 's/^lost: \(.*\): [0-9]* chunks\{0,1\}, .*/\1/' | sort > "$T/listed"
cmp -s "$T/listed" "$T/expect" || fail "o: other files listed than disk 2 held: $(diff "$T/listed" "$T/expect" | head -5)"
OL=$O/d0:$O/d1:$O/d3
fsck_clean "$OL" "o: one copy, disk 2 gone"
mount_fg "$T/daemon.log" "$OL" || fail "o: mount after"
(cd "$M" && sha256sum --quiet -c "$T/sums.kept") || fail "o: a file not on the lost disk differs"
umount_wait "$OL"
say "disks gone: two copies rebuilt, one copy: $(wc -l < "$T/listed") files listed"

# ---- SIGKILL at random points, then again ----
for round in 1 2 3; do
	K=$T/k$round
	mkdir -p "$K/d0" "$K/d1" "$K/n"
	"$MKFS" -q --sections 32 --chunk-size 65536 "$K/d0" "$K/d1" || { fail "mkfs k$round"; continue; }
	mount_fg "$T/daemon.log" "$K/d0:$K/d1" || { fail "mount k$round"; continue; }
	fill
	head -c 12000000 /dev/urandom > "$M/more"
	sums > "$T/sums"
	umount_wait "$K/d0:$K/d1"
	who=tool
	((round % 2 == 0)) && who=daemon
	delay=$(printf '0.%03d' $((RANDOM % 300)))
	kill_during "$who" "$K/d0:$K/d1" "$delay" replace 0 "$K/n" || { fail "k$round: mount"; continue; }
	# Again, offline, with the disks given before: NEWDISK joins the list
	# when it became a member; once disk 0 left, it is named without it.
	KL=$K/d1:$K/n
	out=$("$DISK" "$K/d0:$K/d1" replace 0 "$K/n" 2>&1); rc=$?
	if [[ $rc != 0 ]] && grep -q "no longer a disk\|retired" <<<"$out"; then
		# Disk 0 left before the kill: the replace is over, or all but
		# its record, which the command run again deletes.
		if [[ $(status_get "$KL" 'j["replace"]') == None ]]; then
			out="replaced disk 0 before the kill" rc=0
		else
			out=$("$DISK" "$KL" replace 0 "$K/n" 2>&1); rc=$?
		fi
	fi
	[[ $rc == 0 ]] && grep -q "replaced disk 0" <<<"$out" ||
		fail "k$round ($who killed after ${delay}s): again: exit $rc: $out"
	[[ $(status_get "$KL" '[d["index"] for d in j["disks"]], j["replace"]') == "[1, 2] None" ]] ||
		fail "k$round: after: $(status_get "$KL" 'j["disks"], j["replace"]')"
	fsck_clean "$KL" "k$round ($who killed after ${delay}s)"
	mount_fg "$T/daemon.log" "$KL" || { fail "k$round: mount after"; continue; }
	check_sums "k$round ($who killed after ${delay}s)"
	umount_wait "$KL"
	say "k$round: $who killed after ${delay}s, $(grep -c '^moved section' "$T/kill.out") sections moved; again: $(head -1 <<<"$out")"
done

# ---- SIGKILL while a disk gone is replaced (two copies), then again ----
for round in 1 2; do
	K=$T/g$round
	mkdir -p "$K/d0" "$K/d1" "$K/d2" "$K/n"
	"$MKFS" -q --sections 32 --chunk-size 65536 --data-copies 2 "$K/d0" "$K/d1" "$K/d2" ||
		{ fail "mkfs g$round"; continue; }
	mount_fg "$T/daemon.log" "$K/d0:$K/d1:$K/d2" || { fail "mount g$round"; continue; }
	fill
	head -c 10000000 /dev/urandom > "$M/more"
	sums > "$T/sums"
	umount_wait "$K/d0:$K/d1:$K/d2"
	rm -rf "$K/d1"
	delay=$(printf '0.%03d' $((RANDOM % 200)))
	if ((round == 1)); then
		who=tool
		kill_during tool "$K/d0:$K/d2" "$delay" replace --lost 1 "$K/n"
	else
		# kill_during mounts without options: this one needs degraded.
		who=daemon
		"$LSMFS" -o degraded,force_degraded "$K/d0:$K/d2" "$M" 2>> "$T/daemon.log" || { fail "g$round: mount"; continue; }
		pid=$(daemon_pid "$K/d0:$K/d2")
		"$DISK" "$M" replace missing "$K/n" > "$T/kill.out" 2>&1 &
		tool=$!
		sleep "$delay"
		kill -9 "$pid"
		wait "$tool"
		fusermount3 -u -z "$M" 2>/dev/null
		for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
	fi
	KL=$K/d0:$K/d2:$K/n
	out=$("$DISK" "$K/d0:$K/d2" replace --lost 1 "$K/n" 2>&1); rc=$?
	if [[ $rc != 0 ]] && grep -q "not a disk\|no disk is missing" <<<"$out"; then
		if [[ $(status_get "$KL" 'j["replace"]') == None ]]; then
			out="replaced disk 1 before the kill" rc=0
		else
			out=$("$DISK" "$KL" replace 1 "$K/n" 2>&1); rc=$?
		fi
	fi
	[[ $rc == 0 ]] && grep -q "replaced disk 1" <<<"$out" ||
		fail "g$round ($who killed after ${delay}s): again: exit $rc: $out"
	[[ $(status_get "$KL" '[d["index"] for d in j["disks"]], j["replace"], j["degraded"]') == "[0, 2, 3] None False" ]] ||
		fail "g$round: after: $(status_get "$KL" 'j["disks"], j["replace"], j["degraded"]')"
	bad=$(not_two "$KL")
	[[ -z $bad ]] || fail "g$round: $(wc -l <<<"$bad") chunks not in two copies on two disks: $(head -3 <<<"$bad" | tr '\n' ',')"
	fsck_clean "$KL" "g$round ($who killed after ${delay}s)"
	mount_fg "$T/daemon.log" "$KL" || { fail "g$round: mount after"; continue; }
	check_sums "g$round ($who killed after ${delay}s)"
	umount_wait "$KL"
	say "g$round: $who killed after ${delay}s; again: $(head -1 <<<"$out")"
done

finish
