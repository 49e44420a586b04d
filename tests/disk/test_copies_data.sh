#!/bin/bash
# test_copies_data.sh BUILD_DIR: chunks kept in two copies (user.lsmfs.copies
# = 2; fs/SCHEMA.md "Copies", "Chunk checksums", "A disk lost"), against a
# plain directory holding the same files:
#   - 40 bytes flipped in the chunk files of 20 files, in both copies, never
#     in the same 4 KiB block of both: every block read with O_DIRECT, one
#     at a time, is the plain copy's (never EIO, never other bytes); each
#     flip of the copy read first (copy 0) is counted once by checksum_errs
#     and once by repaired_errs against its disk, and logged once with the
#     file's path, the chunk file and the disk; after the unmount those
#     blocks of copy 0 hold the plain bytes again, and a remount reads all
#     without a checksum error; a file with copies=1 reads its flipped
#     block as EIO, the log naming its path and offset;
#   - three disks, copies=2: disk 2's sections directory removed while a
#     writer appends and fsyncs (noting what was acknowledged) and a reader
#     checks with O_DIRECT what was acknowledged: neither sees an error,
#     no acknowledged byte is lost, the filesystem says degraded (status,
#     statistics, the log once); files written before it went, never
#     synced, fsync without error; `lsmfs-disk remove --lost 2` lists no
#     file lost, every file reads as written, and every chunk record has
#     its two chunk files again, on two disks (synced or not before); fsck
#     -n clean, and every file reads as written after a remount; the same
#     when every copy on the lost disk is stale already (written after it
#     went);
#   - files never synced, SIGKILL, and one copy's file of some chunks cut
#     short or removed (what a power cut may leave), two of them read and
#     one written at once after the next mount: every chunk has its two
#     files again with the same bytes, fsck -n clean.
NAME=test_copies_data
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "seed $seed (replay with LSMFS_SEED)"
CS=65536

# Every file of DIR (plain) against the same path under $M, read with
# O_DIRECT one 4 KiB block at a time: a line per block that failed (EIO,
# other bytes, short), nothing when all is well.
direct_compare() { # PLAIN_DIR [FILES...]
	python3 - "$M" "$@" <<'PY'
import mmap, os, sys
mnt, plain, names = sys.argv[1], sys.argv[2], sys.argv[3:]
if not names:
    names = sorted(os.listdir(plain))
buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
for name in names:
    want = open(os.path.join(plain, name), "rb").read()
    fd = os.open(os.path.join(mnt, name), os.O_RDONLY | os.O_DIRECT)
    for blk in range((len(want) + 4095) // 4096):
        exp = want[blk * 4096:(blk + 1) * 4096]
        try:
            n = os.preadv(fd, [buf], blk * 4096)
        except OSError as e:
            print(f"{name} block {blk}: {e.strerror}")
            continue
        if n != len(exp) or buf[:n] != exp:
            print(f"{name} block {blk}: {n} bytes read, not the plain copy's {len(exp)}")
    os.close(fd)
PY
}
# The chunk records of LIST (unmounted): "ino chunk section" lines.
records() { # LIST
	"$INSPECT" "$1" keys C 2>&1 | sed -n 's/^C \([0-9]*\) \([0-9]*\) -> chunk record: section \([0-9]*\).*/\1 \2 \3/p'
}
# Each record of LIST against the chunk files of its disks: "ino chunk
# files disks" per record, where files is how many chunk files it has and
# disks how many distinct disks hold them.
copies_of() { # LIST
	local d
	for d in ${1//:/ }; do
		find "$d/.lsmfs/sections" -type f -name '*.*' -printf "%f $d\n" 2>/dev/null
	done | awk '{ split($1, a, "."); k = a[1] " " a[2]; n[k]++; if (!((k, $2) in seen)) { seen[k, $2] = 1; m[k]++ } }
		END { for (k in n) print k, n[k], m[k] }' | sort > "$T/files.per.chunk"
	records "$1" | sort | while read -r ino chunk _; do
		got=$(grep "^$ino $chunk " "$T/files.per.chunk")
		echo "${got:-$ino $chunk 0 0}"
	done
}

# ---- flipped bytes, K = 2 ----
D0=$T/d0 D1=$T/d1 P=$T/plain
mkdir -p "$D0" "$D1" "$M" "$P/k1"
"$MKFS" -q --sections 16 --chunk-size $CS "$D0" "$D1" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1
mount_fg "$T/daemon.log" "$L" || { echo "mount failed" >&2; exit 1; }
setfattr -n user.lsmfs.copies -v 2 "$M" || fail "setfattr copies=2 on the root"
mkdir "$M/k1"
setfattr -n user.lsmfs.copies -v 1 "$M/k1" || fail "setfattr copies=1 on k1"
[[ $(getfattr --only-values -n user.lsmfs.copies "$M" 2>/dev/null) == 2 ]] ||
	fail "the root does not say copies=2"
for i in $(seq 20); do
	# 5 KiB to 1 MiB and a bit: tails inside a block, files of one chunk
	# and of many.
	size=$(( (RANDOM * 32768 + RANDOM) % (1 << 20) + 5000 ))
	((i <= 3)) && size=$((i * 4096)) # whole blocks
	head -c $size /dev/urandom > "$P/f$i"
	cp "$P/f$i" "$M/f$i" || fail "writing f$i"
done
head -c 200000 /dev/urandom > "$P/k1/one"
cp "$P/k1/one" "$M/k1/one" || fail "writing k1/one"
declare -A ino_name=()
for f in "$P"/f* "$P"/k1/one; do
	name=${f#"$P"/}
	ino_name[$(stat -c %i "$M/$name")]=$name
done
k1ino=$(stat -c %i "$M/k1/one")
umount_wait "$L" || fail "unmount after writing"
fsck_clean "$L" "after writing"
# Two copies of every chunk of f*, on the two disks; one of k1/one's.
copies_of "$L" > "$T/copies"
[[ -s $T/copies ]] || fail "no chunk records: $("$INSPECT" "$L" keys C 2>&1 | head -3)"
awk -v k1="$k1ino" '$1 != k1 && ($3 != 2 || $4 != 2)' "$T/copies" | grep -q . &&
	fail "chunks of copies=2 files not in two copies on two disks: $(awk -v k1="$k1ino" '$1 != k1 && ($3 != 2 || $4 != 2)' "$T/copies" | head -3)"
awk -v k1="$k1ino" '$1 == k1 && $3 != 1' "$T/copies" | grep -q . &&
	fail "chunks of the copies=1 file not in one copy: $(awk -v k1="$k1ino" '$1 == k1' "$T/copies" | head -3)"

# 40 flips over the chunk files of f*, both copies, never the same block
# of both (nor twice the same block): one line per flip in $T/flips, "ino
# chunk block-of-chunk copy disk chunk-file offset-in-it".
records "$L" > "$T/records"
python3 - "$seed" "$D0" "$D1" "$T/records" "$k1ino" > "$T/flips" <<'PY' || fail "flipping bytes"
import os, random, sys
seed, disks, recs, k1 = int(sys.argv[1]), sys.argv[2:4], sys.argv[4], sys.argv[5]
r = random.Random(seed)
section = {}
for line in open(recs):
    ino, chunk, s = line.split()
    section[ino, chunk] = int(s)
files = []  # (path, disk, ino, chunk, copy, size)
for d, top in enumerate(disks):
    top = os.path.join(top, ".lsmfs", "sections")
    for s in os.listdir(top):
        for f in os.listdir(os.path.join(top, s)):
            ino, chunk = f.split(".")
            p = os.path.join(top, s, f)
            if ino == k1 or os.path.getsize(p) == 0:
                continue
            files.append((p, d, ino, chunk, 0 if int(s) == section[ino, chunk] else 1,
                          os.path.getsize(p)))
files.sort()
flipped = set()  # (ino, chunk, block): one flip per block, whichever copy
while len(flipped) < 40:
    p, d, ino, chunk, copy, size = r.choice(files)
    off = r.randrange(size)
    key = (ino, chunk, off // 4096)
    if key in flipped:
        continue
    flipped.add(key)
    with open(p, "r+b") as f:
        f.seek(off)
        b = f.read(1)[0]
        f.seek(off)
        f.write(bytes([b ^ r.randrange(1, 256)]))
    print(ino, chunk, off // 4096, copy, d, p, off)
PY
# In $T/flipped, by file: "name block-of-file copy disk chunk-file
# offset-of-the-block-in-it offset-of-the-block-in-the-file".
while read -r ino chunk blk copy d path _; do
	echo "${ino_name[$ino]} $((chunk * CS / 4096 + blk)) $copy $d $path $((blk * 4096)) $((chunk * CS + blk * 4096))"
done < "$T/flips" > "$T/flipped"
n0=$(awk '$3 == 0' "$T/flipped" | wc -l)
n1=$(awk '$3 == 1' "$T/flipped" | wc -l)
say "40 flips: $n0 in copy 0, $n1 in copy 1"
((n0 > 0 && n1 > 0)) || fail "the flips did not reach both copies ($n0, $n1)"

: > "$T/daemon.log"
mount_fg "$T/daemon.log" "$L" || fail "mount after the flips"
out=$(cd "$P" && direct_compare "$P" f*)
[[ -z $out ]] || fail "a block read with a copy good is not the plain copy's: $(head -5 <<<"$out")"
stats=$("$DISK" "$M" stats 2>&1)
for d in 0 1; do
	want=$(awk -v d=$d '$3 == 0 && $4 == d' "$T/flipped" | wc -l)
	for what in checksum_errs repaired_errs; do
		got=$(awk -v k="[$T/d$d].$what" '$1 == k { print $2 }' <<<"$stats")
		[[ $got == "$want" ]] || fail "disk $d: $what $got, not $want (the flips of copy 0 there): $stats"
	done
done
# Each flip of copy 0 logged once, as answered from the other disk and
# rewritten; none of copy 1 (never read: copy 0 was good there).
while read -r name blk copy d path within off; do
	n=$(grep -cF "/$name (inode " <(grep -F "): bytes $off..$((off + 4095)) of the file (offset $within of chunk file $path on disk $d): checksum mismatch, answered from the copy on disk $((1 - d)), and rewritten from it" "$T/daemon.log"))
	want=$((copy == 0 ? 1 : 0))
	[[ $n == "$want" ]] || fail "$name block $blk (copy $copy, $path): logged $n times, not $want: $(grep -F "bytes $off.." "$T/daemon.log")"
done < "$T/flipped"
[[ $(grep -c "checksum mismatch" "$T/daemon.log") == "$n0" ]] ||
	fail "$(grep -c "checksum mismatch" "$T/daemon.log") mismatches logged, not $n0: $(grep mismatch "$T/daemon.log" | head -3)"

umount_wait "$L" || fail "unmount after the reads"
# Copy 0's flipped blocks hold the plain bytes again.
while read -r name blk copy d path within off; do
	((copy == 0)) || continue
	cmp -s <(dd if="$path" bs=4096 skip=$((within / 4096)) count=1 status=none) \
		<(dd if="$P/$name" bs=4096 skip=$((off / 4096)) count=1 status=none) ||
		fail "$name block $blk: copy 0 ($path) not healed after the read"
done < "$T/flipped"
# K = 1: a flipped block of k1/one reads EIO, the log naming it.
k1file=$(find "$D0/.lsmfs/sections" "$D1/.lsmfs/sections" -name "$k1ino.1")
k1disk=${k1file#"$T"/d}
k1disk=${k1disk%%/*}
printf '\x5a' | dd of="$k1file" bs=1 seek=5000 conv=notrunc status=none # block 1 of chunk 1
cmp -s <(dd if="$k1file" bs=1 skip=5000 count=1 status=none) \
	<(dd if="$P/k1/one" bs=1 skip=$((CS + 5000)) count=1 status=none) &&
	{ printf '\xa5' | dd of="$k1file" bs=1 seek=5000 conv=notrunc status=none; }
: > "$T/daemon.log"
mount_fg "$T/daemon.log" "$L" || fail "mount again"
out=$(cd "$P" && direct_compare "$P" f*)
[[ -z $out ]] || fail "remounted: a block is not the plain copy's: $(head -5 <<<"$out")"
grep -q "checksum mismatch" "$T/daemon.log" &&
	fail "remounted: copy 0 was healed, yet: $(grep mismatch "$T/daemon.log" | head -3)"
out=$(direct_compare "$P" k1/one)
bad=$(( (CS + 4096) / 4096 ))
[[ $out == "k1/one block $bad: Input/output error" ]] ||
	fail "copies=1: the flipped block $bad did not read EIO alone: $out"
grep -q "/k1/one (inode $k1ino): bytes $((CS + 4096))\.\.$((CS + 8191)) of the file (offset 4096 of chunk file $k1file on disk $k1disk): checksum mismatch, read as EIO (no other copy)" "$T/daemon.log" ||
	fail "copies=1: the log does not name the file and offset: $(grep mismatch "$T/daemon.log")"
stats=$("$DISK" "$M" stats 2>&1)
got=$(awk '/\.checksum_errs/ { n += $2 } END { print n + 0 }' <<<"$stats")
[[ $got == $((n0 + 1)) ]] || fail "checksum_errs: $got after the copies=1 flip, not $((n0 + 1)): $stats"
umount_wait "$L" || fail "unmount after copies=1"


# ---- a disk's sections removed under a writer and a reader, K = 2 ----
# The writer appends pieces of 1..40000 bytes to 6 files, each a stream
# its name seeds, fsyncs, then notes "file size" in the acknowledged list;
# the reader reads, with O_DIRECT, what the list says was acknowledged and
# each file of $Q (written before) against the stream and the plain copies.
cat > "$T/load.py" <<'PY'
import mmap, os, random, sys, time
mode, mnt, acks, stop, plain = sys.argv[1:6]
MAX = 2 << 20
streams = {}  # the writer's open files'
def stream(name):
    if name in streams:
        return streams[name]
    b = random.Random(name).randbytes(MAX)
    if mode == "write":
        streams[name] = b
    return b
def done():
    return os.path.exists(stop)
if mode == "write":
    # 6 files at a time; one that reached MAX is closed and another begun.
    fds, size, made = {}, {}, 0
    r = random.Random(mnt)
    log = open(acks, "a")
    n = 0
    while not done():
        while len(fds) < 6:
            f = f"w{made}"
            made += 1
            fds[f] = os.open(os.path.join(mnt, f), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            size[f] = 0
        f = r.choice(sorted(fds))
        k = min(r.randrange(1, 40000), MAX - size[f])
        try:
            os.pwrite(fds[f], stream(f)[size[f]:size[f] + k], size[f])
            os.fsync(fds[f])
        except OSError as e:
            sys.exit(f"writer: {f}: {k} bytes at {size[f]}: {e.strerror}")
        size[f] += k
        log.write(f"{f} {size[f]}\n")
        log.flush()
        n += 1
        if size[f] == MAX:
            os.close(fds.pop(f))
            del streams[f]
    print(f"writer: {n} appends acknowledged, {sum(size.values())} bytes in {made} files")
    sys.exit(0)
buf = mmap.mmap(-1, 1 << 16)
def check(path, exp):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        for off in range(0, len(exp), 1 << 16):
            n = os.preadv(fd, [buf], off)
            part = exp[off:off + (1 << 16)]
            if n < len(part) or buf[:len(part)] != part:
                return f"bytes {off}..{off + len(part)}: {n} read, not as written"
    except OSError as e:
        return f"at {off}: {e.strerror}"
    finally:
        os.close(fd)
    return None
static = {n: open(os.path.join(plain, n), "rb").read() for n in sorted(os.listdir(plain))}
passes = 0
while True:
    last = done()
    size = {}
    for line in open(acks):
        if line.endswith("\n"):  # the writer may be part way through one
            f, s = line.split()
            size[f] = int(s)
    for f, s in size.items():
        err = check(os.path.join(mnt, f), stream(f)[:s])
        if err:
            sys.exit(f"reader: {f}, acknowledged up to {s}: {err}")
    for f, b in static.items():
        err = check(os.path.join(mnt, f), b)
        if err:
            sys.exit(f"reader: {f}: {err}")
    passes += 1
    if mode == "check" or last:
        break
print(f"reader: {passes} passes")
PY
E0=$T/e0 E1=$T/e1 E2=$T/e2 Q=$T/q
mkdir -p "$E0" "$E1" "$E2" "$Q"
"$MKFS" -q --sections 48 --chunk-size $CS "$E0" "$E1" "$E2" || fail "mkfs e"
EL=$E0:$E1:$E2 EL2=$E0:$E1
mount_fg "$T/e.log" "$EL" || fail "mount e"
setfattr -n user.lsmfs.copies -v 2 "$M" || fail "setfattr copies=2 on e's root"
for i in $(seq 30); do
	head -c $(( (RANDOM * 32768 + RANDOM) % 600000 + 1 )) /dev/urandom > "$Q/s$i"
	cp "$Q/s$i" "$M/s$i" # not synced
done
on2=$(find "$E2/.lsmfs/sections" -type f | wc -l)
((on2 > 0)) || fail "no chunk file on disk 2 before it goes"
rm -f "$T/stop" "$T/acks"
: > "$T/acks"
python3 "$T/load.py" write "$M" "$T/acks" "$T/stop" "$Q" > "$T/writer.out" 2>&1 & W=$!
python3 "$T/load.py" read "$M" "$T/acks" "$T/stop" "$Q" > "$T/reader.out" 2>&1 & R=$!
sleep 2
# rm -rf may find a file made in a section after it read the directory:
# again until the directory is gone.
for _ in $(seq 20); do
	rm -rf "$E2/.lsmfs/sections" 2>/dev/null && break
done
[[ ! -e $E2/.lsmfs/sections ]] || fail "rm -rf left disk 2's sections"
say "disk 2's sections removed ($on2 chunk files) under the writer and the reader"
for _ in $(seq 100); do
	out=$("$DISK" "$M" status 2>&1)
	grep -q "MISSING\|DEGRADED\|degraded" <<<"$out" && break
	sleep 0.1
done
grep -q "MISSING\|DEGRADED\|degraded" <<<"$out" || fail "disk 2's sections gone: status does not say degraded: $out"
"$DISK" "$M" status --json 2>&1 | grep -q '"degraded":true' ||
	fail "disk 2's sections gone: status --json does not say degraded: $("$DISK" "$M" status --json 2>&1)"
grep -q "^2 .*\(unusable\|MISSING\)" <<<"$out" || fail "status does not name disk 2: $out"
for _ in $(seq 50); do
	grep -q '"degraded":true' "$E0/.lsmfs/meta/stats.json" 2>/dev/null && break
	sleep 0.1
done
grep -q '"degraded":true' "$E0/.lsmfs/meta/stats.json" || fail "disk 2's sections gone: the statistics do not say degraded"
# Files written before, never synced: an fsync now makes them durable on
# the disks left (half of them; the others stay unsynced for remove --lost).
for i in $(seq 15); do
	python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$M/s$i" 2> "$T/fsync.err" ||
		fail "fsync of s$i (written before disk 2 went): $(tail -1 "$T/fsync.err")"
done
sleep 2
touch "$T/stop"
wait "$W" || fail "the writer saw an error: $(cat "$T/writer.out")"
wait "$R" || fail "the reader saw an error: $(cat "$T/reader.out")"
say "$(cat "$T/writer.out" "$T/reader.out" | tr '\n' ' ')"
python3 "$T/load.py" check "$M" "$T/acks" "$T/stop" "$Q" || fail "acknowledged bytes lost with disk 2's sections gone"
n=$(grep -c "disk 2: .* is no longer the disk" "$T/e.log")
[[ $n == 1 ]] || fail "disk 2 gone: said $n times in the log, not once: $(grep "disk 2" "$T/e.log" | head -5)"

# remove --lost: no file lost, the copy count back.
out=$("$DISK" "$M" remove --lost 2 2>&1); rc=$?
[[ $rc == 0 ]] || fail "remove --lost 2: exit $rc: $out"
grep -q "^lost: " <<<"$out" && fail "remove --lost 2: files listed lost with a copy left: $(grep '^lost: ' <<<"$out" | head -3)"
say "remove --lost 2: $(tr '\n' ' ' <<<"$out")"
python3 "$T/load.py" check "$M" "$T/acks" "$T/stop" "$Q" || fail "after remove --lost 2: a file reads other bytes"
out=$("$DISK" "$M" status 2>&1)
grep -q "MISSING\|DEGRADED" <<<"$out" && fail "status after remove --lost 2: $out"
umount_wait "$EL2" || fail "unmount e"
grep -q "checksum mismatch" "$T/e.log" && fail "a checksum mismatch reported on e: $(grep mismatch "$T/e.log" | head -3)"
copies_of "$EL2" > "$T/copies"
[[ -s $T/copies ]] || fail "e: no chunk records"
awk '$3 != 2 || $4 != 2' "$T/copies" | grep -q . &&
	fail "after remove --lost 2: $(awk '$3 != 2 || $4 != 2' "$T/copies" | wc -l) of $(wc -l < "$T/copies") chunks not in two copies on two disks, as \"ino chunk files disks\": $(awk '$3 != 2 || $4 != 2' "$T/copies" | head -5 | tr '\n' ',')"
out=$("$FSCK" -n "$EL2" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "after remove --lost 2: fsck -n exit $rc: $(grep -E 'LSMFS-|error' <<<"$out" | head -5)"
grep -q "marked lost" <<<"$out" && fail "after remove --lost 2: fsck counts lost chunks: $(grep 'marked lost' <<<"$out")"
mount_fg "$T/e2.log" "$EL2" || fail "mount e after remove --lost"
python3 "$T/load.py" check "$M" "$T/acks" "$T/stop" "$Q" || fail "remounted after remove --lost 2: a file reads other bytes"
umount_wait "$EL2"

# ---- copies a crash left apart ----
# Files written, never synced, then SIGKILL: a power cut may leave one
# copy's file shorter than the other's, or not there at all.  The next
# mount brings every copy in step with the other (also for a chunk a read
# held open while the crash sweep synced it), none left stale, fsck clean.
C=$T/c
mkdir -p "$C/d0" "$C/d1"
"$MKFS" -q --sections 16 --chunk-size $CS "$C/d0" "$C/d1" || fail "mkfs c"
CL=$C/d0:$C/d1
mount_fg "$T/c.log" "$CL" || fail "mount c"
setfattr -n user.lsmfs.copies -v 2 "$M" || fail "setfattr copies=2 on c's root"
python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$M"
for i in $(seq 300); do head -c 70000 /dev/urandom > "$M/g$i"; done
declare -A gino=()
for i in 1 2 3 298 299 300; do gino[$i]=$(stat -c %i "$M/g$i"); done
sleep 0.5 # the store's writes of the records reach its log (no sync)
pid=$(daemon_pid "$CL")
kill -9 "$pid"
fusermount3 -u -z "$M" 2>/dev/null
for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
# Copy I's file of chunk 0 of inode INO.
copy_file() { # INO I
	local s
	s=$("$INSPECT" "$CL" keys C "$1" | sed -n "s/^C $1 0 -> chunk record: section \([0-9]*\).*/\1/p")
	[[ -n $s ]] || return
	find "$C/d0/.lsmfs/sections/$((s ^ $2))" "$C/d1/.lsmfs/sections/$((s ^ $2))" \
		-name "$1.0" 2>/dev/null
}
for what in "1 1 cut" "2 0 rm" "3 1 rm" "298 1 rm" "299 1 cut" "300 1 cut"; do
	read -r i c how <<<"$what"
	f=$(copy_file "${gino[$i]}" "$c")
	if [[ ! -f $f ]]; then
		fail "g$i: no file of copy $c: $("$INSPECT" "$CL" keys C "${gino[$i]}" 2>&1 | head -2)"
	elif [[ $how == cut ]]; then
		truncate -s 40000 "$f"
	else
		rm "$f"
	fi
done
: > "$T/c.log"
mount_fg "$T/c.log" "$CL" || fail "mount c after the kill"
# g299 written at once (a byte, not synced), g298 and g300 read and held
# open: the sweep, walking 300 files, comes to their chunks after that.
printf 'x' | dd of="$M/g299" bs=1 seek=10 conv=notrunc status=none || fail "writing g299"
exec 3< "$M/g300" 4< "$M/g298"
head -c 70000 <&3 > /dev/null
head -c 70000 <&4 > /dev/null
sleep 3
exec 3<&- 4<&-
umount_wait "$CL" || fail "unmount c"
copies_of "$CL" > "$T/copies"
awk '$3 != 2 || $4 != 2' "$T/copies" | grep -q . &&
	fail "after a crash: chunks not in two copies on two disks: $(awk '$3 != 2 || $4 != 2' "$T/copies" | head -5 | tr '\n' ',')"
n=0
while read -r ino chunk _; do
	mapfile -t two < <(find "$C/d0/.lsmfs/sections" "$C/d1/.lsmfs/sections" -name "$ino.$chunk")
	if [[ ${#two[@]} != 2 ]] || ! cmp -s "${two[0]}" "${two[1]}"; then
		n=$((n + 1))
		((n > 1)) || fail "after a crash: the copies of chunk $chunk of inode $ino differ: $(ls -l "${two[@]}")"
	fi
done < <(records "$CL")
[[ $n -le 1 ]] || fail "after a crash: $n chunks whose copies differ"
out=$("$FSCK" -n "$CL" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "after a crash: fsck -n exit $rc: $(grep -E 'LSMFS-' <<<"$out" | head -5)"

# ---- remove --lost when the copies on the lost disk are stale already ----
# Single-chunk files, synced; disk 2's sections go; each file is then
# appended to and synced, so its copy on disk 2 is stale before remove
# --lost runs: the copy count is back after it all the same.
F=$T/f
mkdir -p "$F/d0" "$F/d1" "$F/d2"
"$MKFS" -q --sections 48 --chunk-size $CS "$F/d0" "$F/d1" "$F/d2" || fail "mkfs f"
FL=$F/d0:$F/d1:$F/d2 FL2=$F/d0:$F/d1
mount_fg "$T/f.log" "$FL" || fail "mount f"
setfattr -n user.lsmfs.copies -v 2 "$M" || fail "setfattr copies=2 on f's root"
mkdir -p "$T/fplain"
for i in $(seq 12); do
	head -c 30000 /dev/urandom > "$T/fplain/h$i"
	cp "$T/fplain/h$i" "$M/h$i"
	python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$M/h$i"
done
on2=$(find "$F/d2/.lsmfs/sections" -type f | wc -l)
((on2 > 0)) || fail "f: no chunk file on disk 2"
rm -rf "$F/d2/.lsmfs/sections"
for _ in $(seq 100); do
	"$DISK" "$M" status 2>&1 | grep -q "^2 .*\(unusable\|MISSING\)" && break
	sleep 0.1
done
for i in $(seq 12); do
	head -c 1000 /dev/urandom | tee -a "$T/fplain/h$i" >> "$M/h$i"
	python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$M/h$i" 2> "$T/fsync.err" ||
		fail "f: fsync of h$i after disk 2 went: $(tail -1 "$T/fsync.err")"
done
out=$("$DISK" "$M" remove --lost 2 2>&1) || fail "f: remove --lost 2: $out"
grep -q "^lost: " <<<"$out" && fail "f: files listed lost: $out"
for i in $(seq 12); do cmp -s "$T/fplain/h$i" "$M/h$i" || fail "f: h$i differs after remove --lost"; done
umount_wait "$FL2" || fail "unmount f"
copies_of "$FL2" > "$T/copies"
awk '$3 != 2 || $4 != 2' "$T/copies" | grep -q . &&
	fail "f: after remove --lost 2, $(awk '$3 != 2 || $4 != 2' "$T/copies" | wc -l) of $(wc -l < "$T/copies") chunks not in two copies on two disks (their copy on disk 2 was stale before): $(grep "dropped as lost" "$T/f.log")"
out=$("$FSCK" -n "$FL2" 2>&1); rc=$?
[[ $rc == 0 ]] || fail "f: fsck -n exit $rc: $(grep -E 'LSMFS-' <<<"$out" | head -3)"
finish
