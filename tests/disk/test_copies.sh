#!/bin/bash
# test_copies.sh BUILD_DIR: the metadata store kept in several copies
# (fs/SCHEMA.md "Store copies").
#
#   - mkfs with three disks keeps two copies (disks 0 and 1), identical;
#   - under an appending+fsyncing writer, a random writer and a reader, one
#     copy's files are removed: no error to them, no byte lost, the copy is
#     dropped and the filesystem says DEGRADED (status, statistics, log);
#     `lsmfs-disk copy add` restores the count online, `copy remove` drops
#     the failed one; fsck clean after;
#   - a flipped byte in copy 0's table and in copy 0's commit log: every
#     file reads right, the log says what was rewritten, fsck clean after;
#   - a copy away (its directory gone) while the other moves on is marked
#     stale: mounted again with it back, it is brought up to date, never
#     read as current; mounted with only the stale copy, the mount is
#     refused;
#   - every read of a copy's files failing (eiofs) under an appender and a
#     reader: no error to them, reads answered from the other copy, the
#     copy dropped; copy add and remove restore the count; fsck clean;
#   - SIGKILL of the daemon during `copy add`: the next mount finds every
#     file, fsck clean;
#   - each disk of two mounted alone (-o degraded): read-write only when
#     the copy states here show the missing copy behind, else refused (ro
#     works) until -o force_degraded; two forced sides get inode numbers
#     apart, and with both disks back the mount and fsck name the two
#     copies that diverged; fsck --use-copy 0 says what copy 1 holds, and
#     with -y keeps copy 0 (its files, not copy 1's);
#   - copy 1's commit log cut to half after a SIGKILL (what a power cut
#     may leave): fsck -n clean, naming the crash's tail; the next mount
#     brings it over, and copy 1 alone then serves every file;
#   - copy 1 put back from an old image after a clean unmount: fsck -n
#     calls it behind (LSMFS-0109), -y rewrites it, and copy 1 alone then
#     serves every file.
NAME=test_copies
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

D0=$T/d0 D1=$T/d1 D2=$T/d2
mkdir -p "$D0" "$D1" "$D2" "$M"
"$MKFS" -q --sections 32 --chunk-size 65536 "$D0" "$D1" "$D2" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1:$D2
for c in 0 1; do [[ -f ${T}/d$c/.lsmfs/meta/CURRENT ]] || fail "mkfs: no copy of the store on disk $c"; done
[[ ! -e $D2/.lsmfs/meta ]] || fail "mkfs: a third copy on disk 2"
mount_fg "$T/daemon.log" "$L" || { echo "mount failed" >&2; exit 1; }
mkdir -p "$M/a/b"
for i in $(seq 40); do head -c $((i * 3000)) /dev/urandom > "$M/a/f$i"; done
head -c 3000000 /dev/urandom > "$M/static"
sums > "$T/sums"

# ---- a copy's files removed under load ----
rm -f "$T/stop"
"$CHURN" append "$M/appended" "$T/stop" > "$T/append.out" 2>&1 & P1=$!
"$CHURN" randwrite "$M/random" "$T/stop" > "$T/random.out" 2>&1 & P2=$!
"$CHURN" read "$M/static" "$T/stop" > "$T/read.out" 2>&1 & P3=$!
sleep 0.5
rm -rf "$D1/.lsmfs/meta/"*
for _ in $(seq 100); do
	out=$("$DISK" "$M" status 2>&1)
	grep -q DEGRADED <<<"$out" && break
	sleep 0.1
done
grep -q DEGRADED <<<"$out" && grep -q "copy 1: disk 1, .*: failed" <<<"$out" ||
	fail "copy files removed: not said degraded: $out"
for _ in $(seq 60); do
	grep -q '"degraded":true' "$D0/.lsmfs/meta/stats.json" 2>/dev/null && break
	sleep 0.1
done
grep -q '"degraded":true' "$D0/.lsmfs/meta/stats.json" ||
	fail "copy files removed: the statistics do not say degraded"
out=$("$DISK" "$M" copy add 2 2>&1); rc=$?
[[ $rc == 0 ]] || fail "copy add under load: exit $rc: $out"
out=$("$DISK" "$M" copy remove 1 2>&1); rc=$?
[[ $rc == 0 ]] || fail "copy remove of the failed copy: exit $rc: $out"
out=$("$DISK" "$M" status 2>&1)
grep -q "metadata store: 2 copies" <<<"$out" && ! grep -q DEGRADED <<<"$out" &&
	grep -q "copy 1: disk 2, .*: in-sync" <<<"$out" || fail "after copy add and remove: $out"
touch "$T/stop"
for p in $P1 $P2 $P3; do wait "$p" || fail "churn $p: $(cat "$T"/*.out)"; done
say "a copy lost under load: $(cat "$T/append.out" "$T/random.out" | tr '\n' ' ')"
rm -f "$M/appended" "$M/random"
check_sums "a copy lost under load"
umount_wait "$L" || fail "unmount after the copy was lost"
grep -q "metadata store copy 1 .* failed .*DEGRADED" "$T/daemon.log" ||
	fail "the daemon's log does not say the copy failed: $(tail -5 "$T/daemon.log")"
[[ ! -e $D1/.lsmfs/meta ]] || fail "the removed copy's directory stayed"
fsck_clean "$L" "a copy lost under load"
cmp -s <(cd "$D0/.lsmfs/meta" && ls *.sst CURRENT MANIFEST-* | xargs sha256sum) \
	<(cd "$D2/.lsmfs/meta" && ls *.sst CURRENT MANIFEST-* | xargs sha256sum) ||
	fail "the copies on disks 0 and 2 differ after a clean unmount"

# ---- a flipped byte in copy 0's table and in its commit log ----
mount_fg "$T/daemon.log" "$L" || fail "mount for the log"
for i in $(seq 41 60); do head -c 700 /dev/urandom > "$M/a/f$i"; done
sync -f "$M/a/f60" # the store's commit log synced: its records are durable
sums > "$T/sums"
# A crash keeps them in the commit log (a clean unmount would flush it).
pid=$(daemon_pid "$L")
kill -9 "$pid"
fusermount3 -u -z "$M" 2>/dev/null
for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
log=$(ls -S "$D0/.lsmfs/meta/"*.log | head -1)
sst=$(ls -S "$D0/.lsmfs/meta/"*.sst | head -1)
[[ $(stat -c %s "$log") -gt 200 ]] || fail "no commit log with records to damage: $(ls -l "$D0/.lsmfs/meta")"
printf '\xff\xff' | dd of="$log" bs=1 seek=40 conv=notrunc status=none
printf '\xff\xff\xff\xff' | dd of="$sst" bs=1 seek=100 conv=notrunc status=none
mount_fg "$T/daemon.log" "$L" || fail "mount with a damaged copy"
check_sums "damaged copy 0"
umount_wait "$L" || fail "unmount after the damage"
grep -q "$(basename "$log"): .*rewritten from" "$T/daemon.log" ||
	fail "the damaged commit log is not said rewritten: $(cat "$T/daemon.log")"
grep -q "$(basename "$sst"): .*checksum; read from .*rewritten from" "$T/daemon.log" ||
	fail "the damaged table is not said healed: $(cat "$T/daemon.log")"
fsck_clean "$L" "damaged copy 0 healed"

# ---- a copy away while the other moves on (--meta directories) ----
P=$T/p
mkdir -p "$P/d0" "$P/d1" "$P/m1" "$P/m2"
"$MKFS" -q --sections 8 --meta "$P/m1,$P/m2" "$P/d0" "$P/d1" || fail "mkfs --meta m1,m2"
PL=$P/d0:$P/d1
"$LSMFS" "$PL" "$M" || fail "mount m1+m2"
echo one > "$M/one"
umount_wait "$PL"
mv "$P/m2" "$P/m2.away"
mount_fg "$T/daemon.log" "$PL" || fail "mount without m2 (degraded)"
grep -q "DEGRADED" "$T/daemon.log" || fail "mount without m2: not said degraded: $(cat "$T/daemon.log")"
echo two > "$M/two"
umount_wait "$PL"
out=$("$DISK" "$PL" status 2>&1)
grep -q "copy 1: $P/m2: missing" <<<"$out" || fail "status without m2: $out"
# Only the stale copy there: refused.
mv "$P/m1" "$P/m1.away"
mv "$P/m2.away" "$P/m2"
out=$("$LSMFS" "$PL" "$M" 2>&1); rc=$?
mounted && { fusermount3 -u "$M"; fail "mounted with only the stale copy"; }
grep -q "no other copy of the store that is up to date" <<<"$out" ||
	fail "only the stale copy: refused without saying why: $out"
mv "$P/m1.away" "$P/m1"
mount_fg "$T/daemon.log" "$PL" || fail "mount with m2 back"
[[ $(cat "$M/two" 2>/dev/null) == two ]] || fail "m2 back: the write made without it is gone"
umount_wait "$PL"
grep -q "copy 1 ($P/m2) was stale: brought up to date" "$T/daemon.log" ||
	fail "m2 back: not said brought up to date: $(cat "$T/daemon.log")"
# Now m2 alone has everything.
mv "$P/m1" "$P/m1.away"
mount_fg "$T/daemon.log" "$PL" || fail "mount with m2 alone"
[[ $(cat "$M/two" 2>/dev/null) == two && $(cat "$M/one" 2>/dev/null) == one ]] ||
	fail "m2 alone, brought up to date: files missing"
umount_wait "$PL"
mv "$P/m1.away" "$P/m1"
out=$("$FSCK" -n "$PL" 2>&1)
grep -q "LSMFS-0107 copy 0 " <<<"$out" || fail "m1 away for a mount: fsck does not call it stale: $out"
"$LSMFS" "$PL" "$M" || fail "mount with m1 back"
umount_wait "$PL"
fsck_clean "$PL" "a copy away and back"

# ---- a copy's files unreadable (a failing disk, eiofs) under load ----
E=$T/eio ES=$T/eiosrc RULES=$T/rules Q=$T/q
mkdir -p "$E" "$ES" "$Q/d0" "$Q/d1" "$T/m1"
: > "$RULES"
"$B/tests/disk/eiofs" "$ES" "$E" "$RULES" -f 2> "$T/eiofs.err" &
for _ in $(seq 100); do mountpoint -q "$E" && break; sleep 0.05; done
if ! mountpoint -q "$E"; then
	fail "eiofs did not mount: $(cat "$T/eiofs.err")"
else
	mkdir "$E/m0"
	"$MKFS" -q --sections 16 --meta "$E/m0,$T/m1" "$Q/d0" "$Q/d1" || fail "mkfs --meta eio/m0,m1"
	QL=$Q/d0:$Q/d1
	mount_fg "$T/daemon.log" -o cache_mib=1 "$QL" || fail "mount with copy 0 on eiofs"
	mkdir "$M/s"
	for i in $(seq 3000); do echo "small file $i of the store" > "$M/s/f$i"; done
	sums > "$T/sums"
	umount_wait "$QL" # the files in tables, the block cache cold after
	mount_fg "$T/daemon.log" -o cache_mib=1 "$QL" || fail "mount again with copy 0 on eiofs"
	rm -f "$T/stop"
	"$CHURN" append "$M/appended" "$T/stop" > "$T/append.out" 2>&1 & P1=$!
	( while [[ ! -e $T/stop ]]; do cat "$M"/s/* > /dev/null || echo "read error" >> "$T/reader.err"
	  done ) & P2=$!
	sleep 0.5
	echo "m0/" > "$RULES.new" && mv "$RULES.new" "$RULES" # every read of copy 0 fails
	for _ in $(seq 150); do
		out=$("$DISK" "$M" status 2>&1)
		grep -q "copy 0: .*: failed" <<<"$out" && break
		sleep 0.1
	done
	grep -q "copy 0: .*: failed" <<<"$out" && grep -q DEGRADED <<<"$out" ||
		fail "copy 0 unreadable: not dropped: $out"
	out=$("$DISK" "$M" copy add 0 2>&1) || fail "copy add after copy 0 failed reads: $out"
	out=$("$DISK" "$M" copy remove 0 2>&1) || fail "copy remove of the unreadable copy: $out"
	touch "$T/stop"
	wait "$P1" || fail "append under an unreadable copy: $(cat "$T/append.out")"
	wait "$P2"
	[[ ! -s $T/reader.err ]] || fail "the reader saw errors with copy 0 unreadable"
	rm -f "$M/appended"
	check_sums "copy 0 unreadable"
	umount_wait "$QL" || fail "unmount after copy 0 went unreadable"
	grep -q "$E/m0: .*failed: Input/output error.*$T/m1" "$T/daemon.log" ||
		fail "the log does not say copy 0's reads failed and copy 1 answered: $(tail -5 "$T/daemon.log")"
	: > "$RULES"
	fsck_clean "$QL" "copy 0 unreadable, replaced"
	fusermount3 -u "$E"
fi

# ---- SIGKILL of the daemon during copy add ----
"$LSMFS" "$L" "$M" || fail "mount for the kills"
sums > "$T/sums"
umount_wait "$L"
seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "SIGKILL during copy add: seed $seed"
for i in 1 2 3 4 5 6; do
	# Which disk has no copy: add one there, then remove it again.
	free=""
	for d in 0 1 2; do [[ -d $T/d$d/.lsmfs/meta ]] || free=$d; done
	[[ -n $free ]] || { fail "kill $i: every disk holds a copy"; break; }
	delay=$(printf '0.%03d' $((RANDOM % 120)))
	kill_during daemon "$L" "$delay" copy add "$free" || { fail "kill $i: mount"; break; }
	"$LSMFS" "$L" "$M" || { fail "kill $i: mount after the kill"; break; }
	check_sums "kill $i"
	out=$("$DISK" "$M" status 2>&1)
	n=$(grep -c "^  copy " <<<"$out")
	if ((n == 3)); then
		c=$(grep "^  copy .*disk $free," <<<"$out" | sed 's/^  copy \([0-9]\).*/\1/')
		"$DISK" "$M" copy remove "$c" > /dev/null 2>&1 || fail "kill $i: copy remove $c: $out"
	fi
	umount_wait "$L" || fail "kill $i: unmount"
	fsck_clean "$L" "kill $i (copy add, ${delay}s)"
done
# ---- each disk mounted alone: the copies diverge only when told ----
V=$T/v
mkdir -p "$V/d0" "$V/d1"
"$MKFS" -q --sections 8 "$V/d0" "$V/d1" || fail "mkfs v"
VL=$V/d0:$V/d1
"$LSMFS" "$VL" "$M" && echo base > "$M/base" && umount_wait "$VL" || fail "mount v"
out=$("$LSMFS" -o degraded "$V/d0" "$M" 2>&1); rc=$?
mounted && { umount_wait "$V/d0"; fail "d0 alone: mounted read-write with copy 1 not known behind"; }
grep -q "copy 1 of the metadata store (on disk 1, missing) is not known to be behind.*force_degraded" \
	<<<"$out" || fail "d0 alone, read-write: refused without saying why (exit $rc): $out"
mount_fg "$T/daemon.log" -o degraded,ro "$V/d0" || fail "d0 alone, read-only"
ro=$!
[[ $(cat "$M/base" 2>/dev/null) == base ]] || fail "d0 alone, read-only: base unreadable"
touch "$M/w" 2>/dev/null && fail "d0 alone, read-only: written"
umount_wait "$V/d0"
wait "$ro" # a read-only daemon leaves no pid in the lock files for umount_wait
mount_fg "$T/daemon.log" -o degraded,force_degraded "$V/d0" || fail "d0 alone, forced"
for i in $(seq 21); do echo "$i" > "$M/f$i"; done
out=$("$DISK" "$M" status 2>&1)
grep -q "^  copy 1: disk 1, .*/.lsmfs/meta: missing$" <<<"$out" || fail "d0 alone, forced: status of copy 1: $out"
ls -i "$M" | awk '{print $1}' | sort > "$T/inos0"
umount_wait "$V/d0"
# Copy 1 is now behind in d0's own states: read-write needs no word.
mount_fg "$T/daemon.log" -o degraded "$V/d0" || fail "d0 alone again, copy 1 marked behind"
echo x > "$M/x" || fail "d0 alone again: not writable"
ls -i "$M/x" | awk '{print $1}' >> "$T/inos0"
umount_wait "$V/d0"
"$LSMFS" -o degraded "$V/d1" "$M" 2>/dev/null
mounted && { umount_wait "$V/d1"; fail "d1 alone: mounted read-write, copy 0 not known behind"; }
mount_fg "$T/daemon.log" -o force_degraded "$V/d1" || fail "d1 alone, forced"
echo new > "$M/new"
ino=$(stat -c %i "$M/new")
grep -qx "$ino" "$T/inos0" && fail "d1 alone, forced: inode $ino handed out on d0's side too"
umount_wait "$V/d1"
out=$("$LSMFS" "$VL" "$M" 2>&1)
mounted && { umount_wait "$VL"; fail "diverged copies: mounted"; }
grep -q "diverged: copy 0 ($V/d0/.lsmfs/meta) and copy 1 ($V/d1/.lsmfs/meta)" <<<"$out" ||
	fail "diverged copies: the mount does not name them: $out"
out=$("$FSCK" -n "$VL" 2>&1); rc=$?
[[ $rc == 8 ]] && grep -q "diverged: copy 0 .* and copy 1 .*--use-copy" <<<"$out" ||
	fail "diverged copies: fsck -n exit $rc: $out"
out=$("$FSCK" -n --use-copy 0 "$VL" 2>&1); rc=$?
[[ $rc == 4 ]] && grep -q "copy 1 ($V/d1/.lsmfs/meta), diverged from it: .*, 4 inodes: .* is lost" <<<"$out" ||
	fail "fsck -n --use-copy 0: exit $rc: $out"
out=$("$FSCK" -y --use-copy 0 "$VL" 2>&1); rc=$?
[[ $rc == 1 ]] || fail "fsck -y --use-copy 0: exit $rc: $out"
fsck_clean "$VL" "copy 0 kept"
mount_fg "$T/daemon.log" "$VL" || fail "mount v after --use-copy 0"
[[ $(cat "$M/f21" "$M/x" 2>/dev/null) == $'21\nx' && ! -e $M/new ]] ||
	fail "copy 0 kept: not its files: $(ls "$M" | tr '\n' ' ')"
umount_wait "$VL"

# ---- a copy whose commit log lost its second half in a crash ----
# The writes were never synced: a power cut may drop them from one disk
# and not the other, so this is what a crash leaves, not damage.  fsck -n
# says so and stays clean (the mounted mark tells it a crash happened);
# the next mount takes the longer log into both copies.
R=$T/r
mkdir -p "$R/d0" "$R/d1"
"$MKFS" -q --sections 8 "$R/d0" "$R/d1" || fail "mkfs r"
RL=$R/d0:$R/d1
mount_fg "$T/daemon.log" -o log_delay_ms=0 "$RL" || fail "mount r"
for i in $(seq 200); do echo "file $i" > "$M/f$i"; done
sums > "$T/sums"
pid=$(daemon_pid "$RL")
kill -9 "$pid"
fusermount3 -u -z "$M" 2>/dev/null
for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
log=$(ls -S "$R/d1/.lsmfs/meta/"*.log | head -1)
truncate -s $(($(stat -c %s "$log") / 2)) "$log"
out=$("$FSCK" -n "$RL" 2>&1); rc=$?
[[ $rc == 0 ]] && grep -q "copy 1 of the metadata store holds writes up to .*: a crash's unsynced tail" <<<"$out" ||
	fail "copy 1's log cut to half by a crash: fsck -n exit $rc: $(grep -E 'LSMFS|problem|copy' <<<"$out")"
mount_fg "$T/daemon.log" "$RL" || fail "mount r after the crash"
check_sums "copy 1's log cut short by a crash"
umount_wait "$RL" || fail "unmount r"
fsck_clean "$RL" "copy 1's crash tail brought over"
mount_fg "$T/daemon.log" -o degraded,ro "$R/d1" || fail "mount r with copy 1 alone"
check_sums "copy 1 alone, after the mount brought its tail"
umount_wait "$R/d1"

# ---- a copy behind after a clean unmount ----
# Every copy has every write after a clean unmount, so a copy holding
# older writes (an old image of its disk put back) is damage: fsck -n calls
# copy 1 behind (LSMFS-0109), -y rewrites it, and copy 1 alone then serves
# every file.
cp -a "$R/d1/.lsmfs/meta" "$T/meta1.old"
mount_fg "$T/daemon.log" "$RL" || fail "mount r for more files"
for i in $(seq 201 260); do echo "file $i" > "$M/f$i"; done
sums > "$T/sums"
umount_wait "$RL" || fail "unmount r after more files"
rm -rf "$R/d1/.lsmfs/meta" && cp -a "$T/meta1.old" "$R/d1/.lsmfs/meta"
out=$("$FSCK" -n "$RL" 2>&1); rc=$?
[[ $rc == 4 ]] && grep -q "LSMFS-0109 copy 1 .* is behind copy 0" <<<"$out" ||
	fail "copy 1 put back old: fsck -n exit $rc, not said behind: $(grep -E 'LSMFS|problem' <<<"$out")"
out=$("$FSCK" -y "$RL" 2>&1); rc=$?
[[ $rc == 1 ]] || fail "copy 1 behind: fsck -y exit $rc: $(grep -E 'LSMFS|problem|fsck' <<<"$out")"
fsck_clean "$RL" "copy 1 rewritten"
mount_fg "$T/daemon.log" -o degraded,ro "$R/d1" || fail "mount r with copy 1 alone"
check_sums "copy 1 alone, after fsck rewrote it"
umount_wait "$R/d1"
finish
