#!/bin/bash
# test_backup.sh BUILD_DIR: online backups of the metadata store and their
# restore (fs/SCHEMA.md "Backups").
#
# BACKUP_FILES files (default 20000; 1000000 with LSMFS_SOAK=1) in 100
# directories, then a workload that makes w/<i> and removes w/<i-50> in
# turn while `lsmfs-disk MNT backup DIR` runs.  Then:
#   - lsmfs-inspect --backup and fsck.lsmfs -n --backup read the backup;
#   - peak RSS of lsmfs-disk during the backup, and the daemon's growth,
#     each under 256 MiB (reported);
#   - after more changes (files removed and made, every section moved off
#     disk 0), `lsmfs-disk DISKS restore DIR` offline, first killed part
#     way (no mount takes the store until it is run again), then whole:
#     every base file is there with its bytes (the sections found where
#     they moved), w/ is a cut of the workload (contiguous, 50 or 51 files,
#     each but the newest with its bytes), what came after the backup is
#     gone, files removed since (one of them in flux, unsynced, at the
#     backup) are listed lost and read EIO, never zeros; fsck -n clean; a
#     second backup into the same directory is refused, and one into a
#     directory holding anything else (exit 8, nothing written); a backup
#     into an empty directory is root's alone; a backup of another
#     filesystem is refused;
#   - a backup with a table cut short, or a byte of one flipped: the
#     restore is refused before it touches the store, which still mounts
#     with the tree of now; a restore cut short (killed under gdb at its
#     open) and run again from a damaged backup puts the old store back.
NAME=test_backup
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
if [[ ${LSMFS_SOAK:-0} == 1 ]]; then N=${BACKUP_FILES:-1000000}; else N=${BACKUP_FILES:-20000}; fi

# Peak of VmHWM (KiB) of PID while it lives, into FILE.
hwm() { # PID FILE
	local peak=0 v
	while alive "$1"; do
		v=$(awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null)
		[[ -n $v && $v -gt $peak ]] && peak=$v
		sleep 0.02
	done
	echo "$peak" > "$2"
}
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

D0=$T/d0 D1=$T/d1
mkdir -p "$D0" "$D1" "$M"
"$MKFS" -q --sections 64 --chunk-size 65536 "$D0" "$D1" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1
"$LSMFS" "$L" "$M" || { echo "mount failed" >&2; exit 1; }
start=$(date +%s)
for d in $(seq 0 99); do mkdir "$M/b$d"; done
for ((i = 0; i < N; i++)); do echo "base $i" > "$M/b$((i % 100))/f$i"; done
head -c 1000000 /dev/urandom > "$M/large"
head -c 500000 /dev/urandom > "$M/kept"
sha256sum "$M/kept" | cut -d' ' -f1 > "$T/kept.sum"
mkdir "$M/w"
sync "$M/large"
# A file in flux at the backup: written and closed, then reopened and
# appended to without fsync, still open while the backup runs.
head -c 200000 /dev/urandom > "$M/influx"
exec 9>>"$M/influx"
head -c 100000 /dev/urandom >&9
say "$N files made in $(($(date +%s) - start)) s"

# ---- the workload, and the backup meanwhile ----
rm -f "$T/stop"
(
	i=0
	while [[ ! -e $T/stop ]]; do
		echo "w $i" > "$M/w/$i" || break
		if ((i >= 50)); then rm "$M/w/$((i - 50))" || break; fi
		i=$((i + 1))
	done
	echo "$i" > "$T/w.count"
) &
W=$!
sleep 1
pid=$(daemon_pid "$L")
before=$(rss "$pid")
( peak=$before; while [[ ! -e $T/bdone ]]; do v=$(rss "$pid"); ((v > peak)) && peak=$v; sleep 0.02; done; echo "$peak" > "$T/daemon.peak" ) &
S=$!
t0=$(date +%s.%N)
"$DISK" "$M" backup "$T/bk" > "$T/backup.out" 2>&1 &
BP=$!
hwm "$BP" "$T/tool.peak"
wait "$BP"; rc=$?
t1=$(date +%s.%N)
touch "$T/bdone"
wait "$S"
[[ $rc == 0 ]] || fail "backup: exit $rc: $(cat "$T/backup.out")"
sleep 0.5
touch "$T/stop"
wait "$W"
tool_kib=$(cat "$T/tool.peak") daemon_kib=$(($(cat "$T/daemon.peak") - before))
say "backup of $N files: $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s," \
	"lsmfs-disk peak RSS $((tool_kib / 1024)) MiB, daemon RSS +$((daemon_kib / 1024)) MiB," \
	"$(grep 'backup of the metadata store' "$T/backup.out"), workload ops $(cat "$T/w.count")"
((tool_kib < 256 * 1024)) || fail "lsmfs-disk backup: peak RSS $tool_kib KiB"
((daemon_kib < 256 * 1024)) || fail "the daemon grew $daemon_kib KiB during the backup"
out=$("$DISK" "$M" backup "$T/bk" 2>&1) && fail "a second backup into the same directory: $out"
# A directory holding anything else is refused (exit 8, lsmfs-disk(8)),
# nothing written into it; an empty one is taken, and what goes into it
# is root's alone, whatever the directory's own mode.
mkdir -m 755 "$T/full" "$T/empty"
echo mine > "$T/full/notes"
out=$("$DISK" "$M" backup "$T/full" 2>&1); rc=$?
[[ $rc == 8 && $out == *"$T/full: not empty"* && $(wc -l <<<"$out") == 1 ]] ||
	fail "a backup into a non-empty directory: want one line 'not empty' and exit 8, got exit $rc: $out"
[[ $(ls "$T/full") == notes && $(cat "$T/full/notes") == mine ]] ||
	fail "a refused backup changed the directory: $(ls -l "$T/full")"
out=$("$DISK" "$M" backup "$T/empty" 2>&1) || fail "a backup into an empty directory: $out"
out=$(find "$T/empty" -mindepth 1 -perm /077 -printf '%m %p\n' | head -5)
[[ -z $out && -f $T/empty/lsmfs-backup ]] || fail "a backup that others may read: $out"

# ---- the backup read by inspect and fsck ----
out=$("$INSPECT" --backup "$T/bk" "$L" stat /b7 2>&1) || fail "inspect --backup: $out"
out=$("$INSPECT" --backup "$T/bk" "$L" ls /b7 2>&1) || fail "inspect --backup ls: $out"
[[ $(grep -c "f" <<<"$out") -ge $((N / 100)) ]] || fail "inspect --backup ls /b7: $(head -3 <<<"$out")"

# ---- changes after the backup ----
exec 9>&-
for i in $(seq 0 99); do rm -f "$M/b$((i % 100))/f$i"; done
mkdir "$M/after"
echo after > "$M/after/x"
rm "$M/large" "$M/influx"
# Every section moved off disk 0: the backup's map no longer says where.
out=$("$DISK" "$M" rebalance --weight 0=0 2>&1) || fail "rebalance off disk 0: $out"
umount_wait "$L" || fail "unmount"
out=$("$FSCK" -n --backup "$T/bk" "$L" 2>&1); rc=$?
grep -q "store in $T/bk/store" <<<"$out" || fail "fsck --backup did not read the backup: $(head -2 <<<"$out")"
grep -q "LSMFS-0504.*/large" <<<"$out" || fail "fsck --backup: the large file gone since is not said missing: $(grep LSMFS <<<"$out" | head -3)"

# ---- a damaged backup is refused whole, and the store stays ----
# A table cut short, and a byte flipped in one: each refused before the
# store is touched; the filesystem mounts with the tree of now.
now_ok() { # WHAT: the disks mount with the tree of now, fsck clean
	if "$LSMFS" "$L" "$M"; then
		[[ $(< "$M/after/x") == after && $(< "$M/b7/f107") == "base 107" ]] ||
			fail "$1: the tree of now is not there: $(ls "$M" | head -5 | tr '\n' ' ')"
		umount_wait "$L" || fail "$1: unmount"
	else
		fail "$1: the filesystem no longer mounts"
	fi
	fsck_clean "$L" "$1"
}
big=$(ls -S "$T/bk/store/"*.sst | head -1)
cp -a "$T/bk" "$T/bk-cut" && cp -a "$T/bk" "$T/bk-flip"
truncate -s -100 "$T/bk-cut/store/${big##*/}"
size=$(stat -c %s "$big")
printf '\xff' | dd of="$T/bk-flip/store/${big##*/}" bs=1 seek=$((size / 2)) conv=notrunc status=none
for bad in cut flip; do
	out=$("$DISK" "$L" restore "$T/bk-$bad" 2>&1); rc=$?
	[[ $rc == 8 ]] && grep -q "damaged.*refused, nothing changed" <<<"$out" ||
		fail "restore from a backup with a table ${bad}: exit $rc: $out"
	now_ok "restore from a backup with a table ${bad}, refused"
done
# Cut short after the backup's store went in (killed at the open that
# follows): no mount takes the store; run again from a damaged backup,
# the restore puts the store as it was back.
if command -v gdb > /dev/null; then
	gdb -q -batch -ex 'break fs_open' -ex run -ex kill \
		--args "$DISK" "$L" restore "$T/bk" > "$T/gdb.out" 2>&1
	out=$("$LSMFS" "$L" "$M" 2>&1) && { fusermount3 -u "$M"; fail "a restore cut short at its open: the store mounts: $(cat "$T/gdb.out")"; }
	grep -q "cut short: run it again" <<<"$out" || fail "a restore cut short at its open: mount says: $out"
	out=$("$DISK" "$L" restore "$T/bk-cut" 2>&1); rc=$?
	[[ $rc == 8 ]] && grep -q "as it was before the restore" <<<"$out" ||
		fail "a restore cut short, run again from a damaged backup: exit $rc: $out"
	now_ok "a restore cut short, rolled back"
	# Killed while it saved the store's files aside (step 1, at its first
	# link): the store is as it was and mounts whole, every copy of it
	# (the part saved is no file of the store's), and a read-write mount
	# removes the part from every copy.
	gdb -q -batch -ex 'set breakpoint pending on' -ex 'break linkat' -ex run -ex kill \
		--args "$DISK" "$L" restore "$T/bk" > "$T/gdb.out" 2>&1
	compgen -G "$D0/.lsmfs/meta/restore.old.*" > /dev/null ||
		compgen -G "$D1/.lsmfs/meta/restore.old.*" > /dev/null ||
		fail "a restore killed while saving the store aside: nothing left part way: $(cat "$T/gdb.out")"
	# ... and the part an earlier version gave such a restore (named as
	# the store names its temporary files), in every copy.
	for c in "$D0" "$D1"; do
		mkdir -p "$c/.lsmfs/meta/restore.old.tmp" && touch "$c/.lsmfs/meta/restore.old.tmp/CURRENT"
	done
	"$LSMFS" "$L" "$M" 2> "$T/mount.err" || fail "a restore killed while saving: mount: $(cat "$T/mount.err")"
	grep -q "dropped\|failed" "$T/mount.err" && fail "a restore killed while saving: a store copy dropped: $(cat "$T/mount.err")"
	umount_wait "$L"
	for left in "$D0"/.lsmfs/meta/restore.old* "$D1"/.lsmfs/meta/restore.old*; do
		[[ -e $left ]] && fail "a restore killed while saving: $left left after a read-write mount"
	done
	fsck_clean "$L" "a restore killed while saving, then mounted"
	now_ok "a restore killed while saving the store aside"
else
	say "no gdb here: a restore cut short at a set point is not checked (the kill below is)"
fi

# ---- restore ----
P=$T/other
mkdir -p "$P"
"$MKFS" -q "$P" || fail "mkfs other"
out=$("$DISK" "$P" restore "$T/bk" 2>&1) && fail "a backup restored onto another filesystem: $out"
# Killed part way, the restore leaves a store no mount takes, and runs again.
"$DISK" "$L" restore "$T/bk" > "$T/restore.out" 2>&1 &
rp=$!
sleep "0.0$((RANDOM % 10))"
kill -9 "$rp" 2>/dev/null
wait "$rp" 2>/dev/null
out=$("$LSMFS" "$L" "$M" 2>&1)
if mounted; then
	# Either the restore had not begun (the kill came first: the tree of
	# now) or it had ended (the backup's tree); nothing in between mounts.
	if [[ -e $M/after/x ]]; then
		say "the restore was killed before it began"
	elif [[ ! -e $M/after && -e $M/b7 ]]; then
		grep -q "^restored the metadata store" "$T/restore.out" ||
			say "the restore was killed after it ended, before its last words"
	else
		fail "a restore killed part way left a store that mounts, neither the tree of now nor the backup's: $(ls "$M" | head -5 | tr '\n' ' '); $(cat "$T/restore.out")"
	fi
	umount_wait "$L"
elif ! grep -q "cut short: run it again" <<<"$out" && grep -q "^restored the" "$T/restore.out"; then
	fail "after a restore, the mount is refused: $out"
fi
out=$("$DISK" "$L" restore "$T/bk" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "restore: exit $rc: $out"
grep -q "^lost: /large: " <<<"$out" || fail "restore: /large not listed lost: $out"
grep -q "^lost: /influx: " <<<"$out" || fail "restore: /influx (in flux at the backup) not listed lost: $out"
for c in "$D0" "$D1"; do
	for left in "$c"/.lsmfs/meta/restore.old*; do
		[[ -e $left ]] && fail "restore: $left left behind"
	done
done
fsck_clean "$L" "after the restore"
"$LSMFS" "$L" "$M" || fail "mount after the restore"
missing=0
for ((i = 0; i < N; i++)); do
	[[ $(< "$M/b$((i % 100))/f$i") == "base $i" ]] || missing=$((missing + 1))
done 2>/dev/null
[[ $missing == 0 ]] || fail "restore: $missing base files missing or wrong"
[[ ! -e $M/after ]] || fail "restore: a directory made after the backup is there"
cat "$M/large" > /dev/null 2>&1 && fail "restore: /large, removed since the backup, reads"
cat "$M/influx" > /dev/null 2>&1 && fail "restore: /influx, removed since the backup, reads"
[[ $(sha256sum "$M/kept" | cut -d' ' -f1) == $(cat "$T/kept.sum") ]] || fail "restore: /kept differs"
ws=$(ls "$M/w" | sort -n)
lo=$(head -1 <<<"$ws") hi=$(tail -1 <<<"$ws") n=$(wc -l <<<"$ws")
[[ $n == $((hi - lo + 1)) ]] || fail "restore: w/ is not contiguous: $lo..$hi, $n files"
((hi < 50 && lo == 0 || n == 50 || n == 51)) || fail "restore: w/ holds $n files ($lo..$hi)"
for ((i = lo; i < hi; i++)); do
	[[ $(< "$M/w/$i") == "w $i" ]] || fail "restore: w/$i reads '$(< "$M/w/$i")'"
done
say "restored: w/$lo..w/$hi (the workload had made $(cat "$T/w.count"))"
umount_wait "$L" || fail "unmount after the restore"
fsck_clean "$L" "mounted once after the restore"

[[ $fails == 0 ]] || { echo "$NAME: $fails failure(s)" >&2; exit 1; }
say "PASS"
