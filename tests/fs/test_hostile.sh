#!/bin/bash
# test_hostile.sh BUILD_DIR: what a hostile user or an unlucky
# administrator does to a mount (issue 14), each case on a real mount and,
# where ext4 has a behaviour, against it:
#   - punching a hole over a huge sparse range returns at once, and the
#     namespace and unmount are not held up meanwhile;
#   - fallocate of more than the disks hold is ENOSPC at once; one that
#     fails part way gives back what it took; fsck stays clean;
#   - fsync of a file with more dirty chunks than the daemon's fd limit;
#   - rm of a file with many chunks does not freeze the namespace;
#   - a comma in a disk path is no mount option;
#   - an immutable chunk file still reads;
#   - a chunk file cut short or removed after fsync reads as EIO (logged
#     with its path), its neighbours still read;
#   - a backing disk unmounted under the daemon: EIO, logged once; the
#     metadata store's disk: read-only (EROFS), logged once;
#   - renaming a directory into one 4,100 levels deep;
#   - "umount; mount" at once, while the old daemon still works;
#   - a buffered read after an O_DIRECT write (sync or io_submit) sees it;
#   - mount -o remount,ro makes everything durable and refuses writes;
#     remount,rw takes them again;
#   - df counts each backing filesystem once, and a fallocate of what it
#     says is free (less 512 KiB) on two disks succeeds (generic/103);
#   - file handles survive cache eviction, renames and remounts;
#   - SIGKILL mid-workload, then mount + clean unmount: fsck -n is clean;
#   - a data disk that fills leaves no chunk past a file's size.
# Needs root (tmpfs and loop mounts), /dev/fuse, python3.
# HOSTILE_ONLY=NAME runs one case (the name fresh is given, or small, comma);
# HOSTILE_CHUNKS=N the chunks of the file rm removes (default 21000).
set -u
B=$(cd "${1:?usage: test_hostile.sh BUILD_DIR}" && pwd)
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs FSCK=$B/tools/fsck/fsck.lsmfs
if [[ ! -c /dev/fuse || $(id -u) != 0 ]]; then
	echo "test_hostile: SKIPPED: needs root and /dev/fuse" >&2
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/var/tmp}/lsmfs-hostile.XXXXXX")
chmod 755 "$T"
fails=0
M=$T/mnt
cleanup() {
	fusermount3 -u "$M" 2>/dev/null
	for m in "$T"/small*; do umount "$m" 2>/dev/null; done
	pkill -KILL -f "lsmfs-hostile.*$(basename "$T")" 2>/dev/null
	chattr -R -i "$T" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "test_hostile: FAIL: $*" >&2; fails=$((fails + 1)); }
note() { echo "test_hostile: $*" >&2; }
mkdir -p "$M"

# fresh NAME [mkfs args...]: a filesystem over $T/NAME.0 and $T/NAME.1
fresh() {
	local n=$1; shift
	[[ -z ${HOSTILE_ONLY:-} || $HOSTILE_ONLY == "$n" ]] || return 1
	rm -rf "$T/$n.0" "$T/$n.1"
	mkdir -p "$T/$n.0" "$T/$n.1"
	"$MKFS" -q "$@" "$T/$n.0" "$T/$n.1" || { fail "mkfs $n"; return 1; }
	SPEC=$T/$n.0:$T/$n.1
}
mnt() { "$LSMFS" -o allow_other "$@" "$SPEC" "$M" || { fail "mount $SPEC $*"; return 1; }; }
umnt() {
	timeout 30 fusermount3 -u "$M" || { fail "unmount"; fusermount3 -u -z "$M"; return 1; }
	# the daemon is gone once the lock is free
	for _ in $(seq 900); do flock -n "${SPEC%%:*}/.lsmfs/lock" true && return 0; sleep 0.1; done
	fail "daemon still holds its disks 90 s after unmount"
}
fsck_clean() { # what
	local out rc
	out=$("$FSCK" -n "$SPEC" 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "$1: fsck -n exit $rc: $(grep LSMFS- <<<"$out" | head -5)"
}
# elapsed_ms CMD...: run it, print its wall time in ms (status in $?)
elapsed_ms() {
	local t0 t1 rc
	t0=$(date +%s%N); "$@"; rc=$?; t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
	return $rc
}

# ---- punch hole over 4 EiB of a sparse file, as nobody ----
fresh punch --chunk-size 65536 && mnt && {
	chmod 1777 "$M"
	runuser -u nobody -- sh -c "truncate -s 4611686018427387904 $M/f && printf hi | dd of=$M/f bs=1 seek=1000000 conv=notrunc status=none"
	runuser -u nobody -- timeout 20 fallocate -p -o 0 -l 4611686018427387904 "$M/f" &
	pid=$!
	sleep 0.3
	t=$(elapsed_ms timeout 10 mkdir "$M/other") || fail "mkdir beside a punch hole: exit $?"
	# bounded: a request stuck in the daemon leaves its caller unkillable
	for _ in $(seq 250); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	if kill -0 $pid 2>/dev/null; then
		fail "punch hole over 4 EiB still running after 25 s"
		pkill -KILL -f "lsmfs -o allow_other $SPEC"; fusermount3 -u -z "$M"
	fi
	wait $pid; rc=$?
	[[ $rc == 0 ]] || fail "punch hole over 4 EiB: exit $rc"
	[[ $t -lt 5000 ]] || fail "mkdir waited $t ms beside a punch hole"
	[[ $(runuser -u nobody -- timeout 10 python3 -c "import os; fd = os.open('$M/f', os.O_RDONLY); print(os.pread(fd, 2, 1000000))") == "b'\\x00\\x00'" ]] ||
		fail "punched bytes do not read as zeros"
	[[ $(timeout 10 stat -c %s "$M/f") == 4611686018427387904 ]] || fail "punch changed the size"
	# allocation of more than the disks hold: refused at once
	out=$(timeout 10 fallocate -l 4611686018427387904 "$M/g" 2>&1); rc=$?
	[[ $rc == 1 && $out == *"No space left"* ]] || fail "fallocate 4 EiB: exit $rc: $out"
	[[ $(stat -c %s "$M/g") == 0 && $(stat -c %b "$M/g") == 0 ]] || fail "a refused fallocate left size or blocks"
	umnt; fsck_clean "punch and fallocate"
}

# ---- a fallocate that fails part way gives everything back ----
mkdir -p "$T/small1" "$T/small2"
[[ -z ${HOSTILE_ONLY:-} || $HOSTILE_ONLY == small ]] && mount -t tmpfs -o size=2m tmpfs "$T/small1" && mount -t tmpfs -o size=64m tmpfs "$T/small2" && {
	rm -rf "$T/small1/d" "$T/small2/d"; mkdir "$T/small1/d" "$T/small2/d"
	rm -rf "$T/fameta"; mkdir -p "$T/fameta"
	"$MKFS" -q --chunk-size 65536 --meta "$T/fameta" "$T/small1/d" "$T/small2/d" || fail "mkfs --meta"
	SPEC=$T/small1/d:$T/small2/d
	mnt && {
		# chunks go where there is room: 32M fits a 2M and a 64M disk
		out=$(fallocate -l 32M "$M/big" 2>&1) || fail "fallocate 32M over a 2M and a 64M disk: $out"
		[[ $(stat -c %s "$M/big") == 33554432 ]] || fail "fallocate 32M: size $(stat -c %s "$M/big")"
		rm -f "$M/big"
		u1=$(df --output=used "$T/small1" | tail -1) u2=$(df --output=used "$T/small2" | tail -1)
		# two of 40M at once: one at least runs out part way (or is
		# refused before any work) and must give back all it took
		fallocate -l 40M "$M/f1" 2>"$T/fa1" & p1=$!
		fallocate -l 40M "$M/f2" 2>"$T/fa2"; r2=$?
		wait $p1; r1=$?
		[[ $r1 != 0 || $r2 != 0 ]] || fail "two fallocates of 40M both fit 66M of disks"
		for i in 1 2; do
			r=r$i
			if [[ ${!r} != 0 ]]; then
				grep -q "No space left" "$T/fa$i" || fail "fallocate $i: $(cat "$T/fa$i")"
				[[ $(stat -c %s "$M/f$i") == 0 && $(stat -c %b "$M/f$i") == 0 ]] ||
					fail "failed fallocate $i left size $(stat -c %s "$M/f$i"), blocks $(stat -c %b "$M/f$i")"
				rm -f "$M/f$i"
			else
				rm -f "$M/f$i"
			fi
		done
		# The chunk files of what rm removed go in the background
		# (reclaim.c): up to 20 s for the space to come back.
		for _ in $(seq 200); do
			v1=$(df --output=used "$T/small1" | tail -1) v2=$(df --output=used "$T/small2" | tail -1)
			[[ $((v1 - u1)) -le 64 && $((v2 - u2)) -le 64 ]] && break
			sleep 0.1
		done
		[[ $((v1 - u1)) -le 64 && $((v2 - u2)) -le 64 ]] ||
			fail "failed fallocate kept space: +$((v1 - u1)) KiB and +$((v2 - u2)) KiB (20 s after the rm)"
		out=$(fallocate -l 80M "$M/big" 2>&1); rc=$?
		[[ $rc == 1 && $out == *"No space left"* ]] || fail "fallocate 80M over 66M of disks: exit $rc: $out"
		[[ $(stat -c %s "$M/big") == 0 ]] || fail "a refused fallocate changed the size"
		# a data disk that fills: the write fails, nothing past the size
		python3 - "$M/fill" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
try:
    for i in range(4096):
        os.write(fd, b"x" * 65536)
        if i % 16 == 15:
            os.fsync(fd)  # with the writeback cache, errors show here
    sys.exit("the disk never filled")
except OSError as e:
    if e.errno != errno.ENOSPC:
        raise
try:
    os.close(fd)
except OSError:
    pass
PY
		[[ $? == 0 ]] || fail "filling a data disk"
		umnt
		fsck_clean "a data disk filled"
	}
	umount "$T/small1"; umount "$T/small2"
}

# ---- fsync of more dirty chunks than the daemon may open files ----
fresh fds --chunk-size 65536 && {
	prlimit --nofile=128:128 "$LSMFS" -o allow_other "$SPEC" "$M" || fail "mount with 128 fds"
	python3 - "$M/many" <<'PY' || fail "fsync with 1000 dirty chunks under a 128-fd daemon"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for c in range(1000):
    os.pwrite(fd, b"c", c * 65536)
os.fsync(fd)
os.close(fd)
PY
	umnt; fsck_clean "fsync of many chunks"
}

# ---- rm of a file with many chunks, with namespace work beside it ----
fresh rm --chunk-size 65536 && mnt && {
	mkdir "$M/busy"
	python3 - "$M/huge" "${HOSTILE_CHUNKS:-21000}" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for c in range(int(sys.argv[2])):
    os.pwrite(fd, b"c", c * 65536)
os.close(fd)
PY
	before=$(find "$T/rm.0" "$T/rm.1" -name '*.*' -path '*sections*' -type f | wc -l)
	t0=$(date +%s%N)
	rm "$M/huge" &
	worst=0
	for i in $(seq 40); do
		t=$(elapsed_ms mkdir "$M/busy/d$i")
		[[ $t -gt $worst ]] && worst=$t
	done
	wait
	# when the chunk files are all gone, the reclaim is over
	for _ in $(seq 600); do
		left=$(find "$T/rm.0" "$T/rm.1" -path '*sections*' -name '*.*' -type f | wc -l)
		[[ $left -le 1 ]] && break
		sleep 0.1
	done
	total=$((($(date +%s%N) - t0) / 1000000))
	note "rm of ${HOSTILE_CHUNKS:-21000} chunks ($before files): $total ms; slowest mkdir beside it $worst ms"
	[[ $left -le 1 ]] || fail "$left chunk files left a minute after rm"
	[[ $worst -lt 3000 ]] || fail "mkdir waited $worst ms while a file's chunks were removed"
	umnt; fsck_clean "rm of many chunks"
}

# ---- a comma in a disk path is part of the path ----
rm -rf "$T/c0" "$T/c1,allow_other"; mkdir -p "$T/c0" "$T/c1,allow_other"
[[ -z ${HOSTILE_ONLY:-} || $HOSTILE_ONLY == comma ]] && "$MKFS" -q "$T/c0" "$T/c1,allow_other" && {
	"$LSMFS" "$T/c0:$T/c1,allow_other" "$M" || fail "mount with a comma in a disk path"
	line=$(grep " $M " /proc/self/mountinfo)
	opts=$(awk '{print $NF}' <<<"$line") # the superblock's options, last
	[[ $opts != *allow_other* ]] || fail "a disk path's comma became a mount option: $line"
	[[ $line == *"c1,allow_other"* || $line == *'c1\054allow_other'* ]] || fail "fsname lost the path: $line"
	fusermount3 -u "$M"; sleep 0.5
}

# ---- an immutable chunk file still reads ----
fresh ro --chunk-size 65536 && mnt && {
	head -c 200000 /dev/urandom > "$T/ro.data"
	cp "$T/ro.data" "$M/f"; sync
	fusermount3 -u "$M"; sleep 0.5
	chattr +i $(find "$T/ro.0" "$T/ro.1" -path '*sections*' -type f) 2>/dev/null
	if lsattr $(find "$T/ro.0" "$T/ro.1" -path '*sections*' -type f | head -1) 2>/dev/null | awk '{print $1}' | grep -q i; then
		mnt && { cmp -s "$T/ro.data" "$M/f" || fail "an immutable chunk file does not read"; fusermount3 -u "$M"; sleep 0.5; }
		chattr -i $(find "$T/ro.0" "$T/ro.1" -path '*sections*' -type f)
	else
		note "chattr +i not supported under $T: immutable case not run"
	fi
}

# ---- a chunk file cut short or removed behind the daemon's back ----
fresh cut --chunk-size 65536 && mnt && {
	head -c 300000 /dev/urandom > "$T/cut.data"
	dd if="$T/cut.data" of="$M/f" bs=64k conv=fsync status=none
	umnt
	ino=$(find "$T/cut.0" "$T/cut.1" -path '*sections*' -name '*.0' -printf '%f\n' | cut -d. -f1)
	truncate -s 1000 "$(find "$T/cut.0" "$T/cut.1" -name "$ino.1")"
	rm "$(find "$T/cut.0" "$T/cut.1" -name "$ino.3")"
	"$LSMFS" -f -o allow_other "$SPEC" "$M" 2> "$T/cut.log" &
	for _ in $(seq 100); do grep -q " $M " /proc/self/mountinfo && break; sleep 0.1; done
	dd if="$M/f" bs=64k count=1 status=none | cmp -s - <(head -c 65536 "$T/cut.data") ||
		fail "a healthy chunk beside damaged ones does not read"
	for c in 1 3; do
		out=$(dd if="$M/f" bs=64k skip=$c count=1 status=none 2>&1 >/dev/null)
		[[ $out == *"Input/output error"* ]] || fail "chunk $c lost its data, yet reads: ${out:-no error}"
	done
	umnt
	grep -q "$ino.1 holds 1000 bytes, its record says 65536" "$T/cut.log" ||
		fail "the daemon did not log the truncated chunk's path: $(cat "$T/cut.log")"
}

# ---- a backing disk unmounted lazily under the daemon ----
if [[ -z ${HOSTILE_ONLY:-} || $HOSTILE_ONLY == lazy ]]; then
	rm -rf "$T/lazy0" "$T/lazy1"; mkdir -p "$T/lazy0" "$T/lazy1"
	mount -t tmpfs -o size=64m tmpfs "$T/lazy1" && {
		SPEC=$T/lazy0:$T/lazy1
		"$MKFS" -q --chunk-size 65536 "$T/lazy0" "$T/lazy1" || fail "mkfs lazy"
		"$LSMFS" -f -o allow_other "$SPEC" "$M" 2> "$T/lazy.log" &
		for _ in $(seq 100); do grep -q " $M " /proc/self/mountinfo && break; sleep 0.1; done
		dd if=/dev/urandom of="$M/f" bs=64k count=8 conv=fsync status=none || fail "writing before the disk went"
		umount -l "$T/lazy1"
		sleep 2.5 # the daemon looks every second
		out=$(dd if=/dev/urandom of="$M/f" bs=64k count=8 conv=fsync,notrunc status=none 2>&1)
		[[ $out == *"Input/output error"* ]] || fail "fsync to a disk that was unmounted: ${out:-no error}"
		dd if=/dev/urandom of="$M/f" bs=64k count=8 conv=fsync,notrunc status=none 2>/dev/null
		umnt
		n=$(grep -c "lazy1 is no longer the disk" "$T/lazy.log")
		[[ $n == 1 ]] || fail "the lost disk was logged $n times, want once: $(head -c 600 "$T/lazy.log")"
	}
fi

# ---- the metadata store's disk unmounted under the daemon: read-only ----
if [[ -z ${HOSTILE_ONLY:-} || $HOSTILE_ONLY == lazymeta ]]; then
	rm -rf "$T/lm0" "$T/lm1" "$T/lmeta"; mkdir -p "$T/lm0" "$T/lm1" "$T/lmeta"
	mount -t tmpfs -o size=64m tmpfs "$T/lmeta" && {
		SPEC=$T/lm0:$T/lm1
		"$MKFS" -q --chunk-size 65536 --meta "$T/lmeta/store" "$T/lm0" "$T/lm1" || fail "mkfs lazymeta"
		"$LSMFS" -f -o allow_other "$SPEC" "$M" 2> "$T/lazymeta.log" &
		for _ in $(seq 100); do grep -q " $M " /proc/self/mountinfo && break; sleep 0.1; done
		echo before > "$M/a" && sync "$M/a" || fail "writing before the store's disk went"
		umount -l "$T/lmeta"
		sleep 2.5 # the daemon looks every second
		out=$(touch "$M/b" 2>&1) && fail "a create after the store's disk went succeeded"
		[[ $out == *"Read-only file system"* ]] || fail "a create after the store's disk went: ${out:-no error}, want EROFS"
		[[ $(cat "$M/a" 2>&1) == before ]] || fail "a file no longer reads after the store's disk went"
		mkdir "$M/d" 2>/dev/null && fail "mkdir after the store's disk went succeeded"
		umnt
		n=$(grep -c "the metadata store's directory is no longer the one" "$T/lazymeta.log")
		[[ $n == 1 ]] || fail "the lost store was logged $n times, want once: $(head -c 600 "$T/lazymeta.log")"
	}
fi

# ---- rename a directory into one 4,100 levels deep (ext4: works) ----
fresh deep && mnt && {
	python3 - "$M" <<'PY' || fail "rename into a directory 4100 levels deep"
import os, sys
top = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.mkdir("moving", dir_fd=top)
fd = top
for i in range(4100):
    os.mkdir("d", dir_fd=fd)
    nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    if fd != top:
        os.close(fd)
    fd = nfd
os.rename("moving", "moved", src_dir_fd=top, dst_dir_fd=fd)
os.rename("moved", "moving", src_dir_fd=fd, dst_dir_fd=top)
try:  # a directory below itself is still refused
    os.rename("d", "loop", src_dir_fd=top, dst_dir_fd=fd)
    sys.exit("a directory moved below itself")
except OSError as e:
    if e.errno != 22:
        raise
PY
	umnt; fsck_clean "deep rename"
}

# ---- umount, then mount at once, while the old daemon still works ----
fresh again --chunk-size 65536 && mnt && {
	for round in 1 2 3; do
		python3 - "$M/f$round" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for c in range(3000):
    os.pwrite(fd, b"c", c * 65536)
os.close(fd)
os.unlink(sys.argv[1])
PY
		fusermount3 -u "$M" || fail "unmount, round $round"
		out=$("$LSMFS" -o allow_other "$SPEC" "$M" 2>&1) || fail "mount right after unmount, round $round: $out"
	done
	umnt; fsck_clean "umount; mount"
}

# ---- file handles survive cache eviction, renames and remounts ----
FH="python3 $(dirname "$0")/fhandle.py"
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
fresh fh && mnt && {
	mkdir "$M/dir"; echo hello > "$M/dir/a"; ln "$M/dir/a" "$M/b"
	$FH save "$M" "$T/h" "$M/dir/a" || fail "name_to_handle_at"
	drop_caches
	[[ $($FH read "$M" "$T/h") == hello ]] || fail "open_by_handle_at of a hard-linked file after the kernel dropped it"
	mv "$M/dir/a" "$M/c"; drop_caches
	[[ $($FH read "$M" "$T/h") == hello ]] || fail "open_by_handle_at after a rename"
	umnt; mnt
	[[ $($FH read "$M" "$T/h") == hello ]] || fail "open_by_handle_at after a remount"
	rm "$M/c" "$M/b"; drop_caches
	$FH stale "$M" "$T/h" || fail "the handle of a deleted file"
	# a small file deleted while the kernel still holds its inode: it
	# went with its name (SCHEMA.md "Orphans"), its handle is stale at once
	echo small > "$M/s"
	$FH save "$M" "$T/hs" "$M/s" || fail "name_to_handle_at of a small file"
	rm "$M/s"
	$FH stale "$M" "$T/hs" || fail "the handle of a small file deleted while cached"
	umnt; fsck_clean "file handles"
}

# ---- buffered, O_DIRECT (sync and asynchronous) and mmap I/O agree ----
for o in "" no_writeback; do
	fresh "dio$o" && mnt ${o:+-o $o} && {
		out=$(timeout 120 "$B/tests/fs/dio_coherence" "$M/f" 2>&1) ||
			fail "coherence${o:+ with $o}: $out"
		umnt
	}
done

# ---- mount -o remount,ro and remount,rw ----
# mount(8) runs mount.fuse, which runs "lsmfs" from a PATH of its own: a
# link in /usr/local/bin for the test's length, unless one is there.
if fresh remount --chunk-size 65536; then
	linked=
	if [[ ! -e /usr/local/bin/lsmfs ]] && ln -s "$LSMFS" /usr/local/bin/lsmfs; then
		linked=1
	fi
	remount() { # ro|rw
		if [[ $linked ]]; then mount -o "remount,$1" "$M"; else "$LSMFS" -o "remount,$1" "$SPEC" "$M"; fi
	}
	mnt && {
		echo kept > "$M/a"; head -c 300000 /dev/urandom > "$M/b" # no fsync
		out=$(remount ro 2>&1) || fail "remount,ro: $out"
		[[ $(grep " $M " /proc/self/mountinfo | awk '{print $NF}') == ro,* ]] || fail "not read-only after remount,ro"
		touch "$M/new" 2>/dev/null && fail "a create succeeded on a read-only remount"
		[[ $(cat "$M/a") == kept ]] || fail "reading after remount,ro"
		[[ $(sed -n 2p "${SPEC%%:*}/.lsmfs/lock") == read-only ]] || fail "the daemon did not confirm read-only"
		out=$("$FSCK" -n "$SPEC" 2>&1) || fail "fsck -n beside a read-only remount: $(grep LSMFS- <<<"$out" | head -3)"
		out=$(remount rw 2>&1) || fail "remount,rw: $out"
		touch "$M/new" || fail "a create after remount,rw"
		umnt; fsck_clean "remount"
	}
	[[ $linked ]] && rm -f /usr/local/bin/lsmfs
fi

# ---- fsync after the kernel dropped the inode still syncs its data ----
fresh evict --chunk-size 65536 && mnt && {
	fsyncs() { python3 -c 'import json, os, sys; s = json.loads(os.getxattr(sys.argv[1], "user.lsmfs.stats")); print(sum(d["fsyncs"] for d in s["disks"]))' "$M"; }
	head -c 300000 /dev/urandom > "$M/f" # written, closed, not synced
	drop_caches; sleep 0.5                # the kernel forgets the inode
	before=$(fsyncs)
	python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$M/f"
	after=$(fsyncs)
	[[ $after -gt $before ]] || fail "fsync of a file whose inode was evicted synced no disk ($before -> $after)"
	umnt
}

# ---- fallocate of what df says is free, less 512 KiB (xfstests generic/103) ----
# Chunks go where there is room: df's figure is the disks' free space in
# whole chunks, and a file can take it.
mkdir -p "$T/small3" "$T/small4"
[[ -z ${HOSTILE_ONLY:-} || $HOSTILE_ONLY == dfalloc ]] && mount -t tmpfs -o size=64m tmpfs "$T/small3" && mount -t tmpfs -o size=64m tmpfs "$T/small4" && {
	rm -rf "$T/small3/d" "$T/small4/d"; mkdir "$T/small3/d" "$T/small4/d"
	"$MKFS" -q --chunk-size 1M "$T/small3/d" "$T/small4/d" || fail "mkfs on two tmpfs"
	SPEC=$T/small3/d:$T/small4/d
	mnt && {
		avail=$(df -B1 --output=avail "$M" | tail -1)
		raw=$(($(df -B1 --output=avail "$T/small3" | tail -1) + $(df -B1 --output=avail "$T/small4" | tail -1)))
		[[ $avail -ge $((raw - 2 * 1048576)) ]] || fail "df says $avail bytes free of the disks' $raw (more than a chunk per disk less)"
		out=$(fallocate -l $((avail - 524288)) "$M/spc" 2>&1) ||
			fail "fallocate of df's $avail free bytes less 512 KiB: $out (disks: $(df -B1 --output=avail "$T/small3" "$T/small4" | tail -2 | tr '\n' ' '))"
		note "df: $avail of the disks' $raw bytes free; fallocate of it less 512 KiB: ${out:-ok}"
		rm -f "$M/spc"
		umnt
	}
	umount "$T/small3"; umount "$T/small4"
}

# ---- df: two disks on one filesystem count once ----
fresh df && mnt && {
	want=$(df -k --output=size "$T" | tail -1) got=$(df -k --output=size "$M" | tail -1)
	[[ $got -le $((want + want / 20)) ]] || fail "df shows $got KiB for disks on one $want KiB filesystem"
	umnt
}

# ---- SIGKILL mid-workload, mount + clean unmount: fsck -n clean ----
fresh kill --chunk-size 65536 --inline-max 1024 && {
	for round in $(seq 8); do
		mnt || break
		python3 - "$M" "$round" 2>/dev/null <<'PY' &
import os, random, sys
root, seed = sys.argv[1], int(sys.argv[2])
r = random.Random(seed)
while True:
    name = os.path.join(root, "f%d" % r.randrange(50))
    try:
        op = r.randrange(6)
        if op < 3:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644)
            os.pwrite(fd, os.urandom(r.randrange(1, 300000)), r.randrange(0, 2000000))
            if r.randrange(4) == 0:
                os.fsync(fd)
            os.close(fd)
        elif op == 3:
            os.truncate(name, r.randrange(0, 3000000))
        elif op == 4:
            os.unlink(name)
        else:
            os.rename(name, os.path.join(root, "f%d" % r.randrange(50)))
    except FileNotFoundError:
        pass
PY
		wl=$!
		sleep 0.$((RANDOM % 9 + 1))
		pkill -KILL -f "lsmfs -o allow_other $SPEC" ; kill $wl 2>/dev/null; wait $wl 2>/dev/null
		fusermount3 -u -z "$M" 2>/dev/null; sleep 0.3
		mnt && umnt
		fsck_clean "SIGKILL round $round"
	done
}

echo "test_hostile: $fails failure(s)"
[[ $fails == 0 ]]
