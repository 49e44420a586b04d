#!/bin/bash
# test_scrub.sh: the online scrub (`lsmfs-disk scrub`, fs/SCHEMA.md "Scrub")
# on two disks, a directory of copies=2 holding 30 files of many sizes
# (64 KiB chunks: most files have several), against plain copies:
#   - 100 bytes flipped in chunk files of both copies, each in a 4 KiB
#     block of its own, none in the same block of both copies: scrub
#     start -B finds and repairs exactly 100 errors, reads every chunk of
#     both copies (chunks and bytes as the chunk files say), exit 0; the
#     two copies of each chunk are equal again, the files equal their
#     plain copies, the disks' counters say 100 checksum errors and 100
#     repaired; a second scrub finds none; its status outlives a remount;
#   - the same block damaged in both copies of one file: exactly 2 errors,
#     both left, the file named by path (JSON and text), exit 4;
#   - a copy's chunk file deleted by hand: rebuilt (1 error, repaired);
#   - cancel, then resume: the run ends with every chunk counted once;
#     likewise an unmount part way (interrupted, shown after the remount);
#   - a rate limit: the scrub takes about bytes / rate;
#   - fsck.lsmfs -n --scrub clean at the end.
NAME=test_scrub
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"

seed=${LSMFS_SEED:-$$}
RANDOM=$seed
say "seed $seed (replay with LSMFS_SEED)"
CS=65536
D0=$T/d0 D1=$T/d1 P=$T/plain
mkdir -p "$D0" "$D1" "$M" "$P"
"$MKFS" -q --chunk-size $CS "$D0" "$D1" || { echo "mkfs failed" >&2; exit 1; }
L=$D0:$D1
LOG=$T/daemon.log

mount_fg "$LOG" "$L" || { echo "mount failed" >&2; exit 1; }
mkdir "$M/c" && setfattr -n user.lsmfs.copies -v 2 "$M/c" || fail "copies=2 on a directory"
for i in $(seq 30); do
	case $((i % 5)) in
	0) size=$((RANDOM % 4000 + 1)) ;;                  # within a block
	1) size=$((RANDOM % 60000 + 5000)) ;;              # within a chunk
	2) size=$((CS * (RANDOM % 4 + 1))) ;;              # whole chunks
	*) size=$((RANDOM * 12 + CS + 1)) ;;               # several chunks, the last in part
	esac
	head -c $size /dev/urandom > "$P/f$i"
	cp "$P/f$i" "$M/c/f$i"
done
umount_wait "$L" || fail "unmount"

# Every chunk file: NAME (ino.chunk) -> its two copies.
declare -A copy0=() copy1=()
chunk_files() {
	copy0=() copy1=()
	local f base
	while read -r f; do
		base=${f##*/}
		if [[ -z ${copy0[$base]:-} ]]; then copy0[$base]=$f; else copy1[$base]=$f; fi
	done < <(find "$D0/.lsmfs/sections" "$D1/.lsmfs/sections" -type f -name '*.*' | sort)
}
chunk_files
nchunks=${#copy0[@]}
for base in "${!copy0[@]}"; do
	[[ -n ${copy1[$base]:-} ]] || fail "chunk $base has one copy: ${copy0[$base]}"
done
total=$(find "$D0/.lsmfs/sections" "$D1/.lsmfs/sections" -type f -name '*.*' -printf '%s\n' |
	awk '{ s += $1 } END { print s + 0 }')
say "$nchunks chunks, $total bytes in their two copies"
((nchunks >= 60)) || fail "only $nchunks chunks: the files should span many"

# status FIELD: a field of `scrub status --json` (numbers; the files as
# one path a line).
status_json() { "$DISK" "$M" scrub status --json; }
field() { # FIELD [JSON]
	python3 -c 'import json, sys
j = json.loads(sys.argv[2])
v = j[sys.argv[1]]
print("\n".join(v) if isinstance(v, list) else v)' "$1" "${2:-$(status_json)}"
}
expect() { # WHAT JSON FIELD=VALUE...
	local what=$1 json=$2 kv got
	shift 2
	for kv in "$@"; do
		got=$(field "${kv%%=*}" "$json")
		[[ $got == "${kv#*=}" ]] || fail "$what: ${kv%%=*} is $got, not ${kv#*=}: $json"
	done
}
compare_all() { # WHAT
	local f
	for f in "$P"/*; do
		cmp -s "$f" "$M/c/${f##*/}" || fail "$1: ${f##*/} differs from its plain copy"
	done
}
copies_equal() { # WHAT: the two copies of each chunk hold the same bytes
	local base
	chunk_files
	for base in "${!copy0[@]}"; do
		cmp -s "${copy0[$base]}" "${copy1[$base]:-/dev/null}" ||
			fail "$1: the copies of chunk $base differ"
	done
}
counter() { # NAME: the disks' error counter NAME, added up
	"$DISK" "$M" stats 2>&1 | awk -v n="$1" '$1 ~ "\\]\\." n "$" { s += $2 } END { print s + 0 }'
}

# ---- 100 flips, none in the same block of both copies ----
# Each flip in a 4 KiB block (of a chunk) of its own, in one of its two
# copies at random: 100 errors, each repairable from the other copy.
for base in "${!copy0[@]}"; do echo "${copy0[$base]} ${copy1[$base]:-}"; done | sort > "$T/pairs"
python3 - "$seed" "$T/pairs" "$T/flips" <<'PY' || fail "flipping bytes"
import os, random, sys
r = random.Random(int(sys.argv[1]))
pairs = [line.split() for line in open(sys.argv[2])]
blocks = [(p, b) for p in pairs for b in range((os.path.getsize(p[0]) + 4095) // 4096)]
with open(sys.argv[3], "w") as out:
    for p, b in r.sample(blocks, 100):
        target = r.choice(p)
        size = os.path.getsize(target)
        off = b * 4096 + r.randrange(min(4096, size - b * 4096))
        with open(target, "r+b") as f:
            f.seek(off)
            old = f.read(1)[0]
            f.seek(off)
            f.write(bytes([old ^ r.randrange(1, 256)]))
        print(target, off, file=out)
PY
[[ $(wc -l < "$T/flips") == 100 ]] || fail "100 flips planned, $(wc -l < "$T/flips") made"

: > "$LOG"
mount_fg "$LOG" "$L" || fail "mount after the flips"
[[ $(field state) == none ]] || fail "a new filesystem has a scrub already: $(status_json)"
out=$("$DISK" "$M" scrub start -B 2>&1); rc=$?
if [[ $rc != 0 ]]; then
	fail "scrub start -B: exit $rc, not 0: $out"
	umount_wait "$L"
	finish
fi
json=$(status_json)
expect "the scrub of 100 flips" "$json" state=finished errors=100 repaired=100 unrepaired=0 \
	rebuilt=0 unrebuilt=0 skipped=0 chunks="$nchunks" bytes="$total" total_chunks="$nchunks"
grep -q "Error summary: *100 found" <<<"$out" && grep -q "Corrected: *100" <<<"$out" &&
	grep -q "Uncorrectable: *0" <<<"$out" || fail "scrub -B's summary: $out"
n=$(grep -c "checksum mismatch, rewritten by scrub" "$LOG")
[[ $n == 100 ]] || fail "$n repairs logged, not 100"
[[ $(counter checksum_errs) == 100 && $(counter repaired_errs) == 100 ]] ||
	fail "the disks' counters: $("$DISK" "$M" stats 2>&1)"
copies_equal "after the scrub"
compare_all "after the scrub"
out=$("$DISK" "$M" scrub start -B 2>&1) || fail "a second scrub: exit $?: $out"
expect "a second scrub" "$(status_json)" state=finished errors=0 chunks="$nchunks" bytes="$total"
umount_wait "$L" || fail "unmount"
mount_fg "$LOG" "$L" || fail "mount again"
expect "the status after a remount" "$(status_json)" state=finished errors=0 chunks="$nchunks"
"$DISK" "$M" scrub status | grep -q "^Status: *finished" || fail "scrub status: $("$DISK" "$M" scrub status)"
umount_wait "$L"
say "100 flips found and repaired, both copies equal, a second scrub clean"

# ---- one block bad in both copies ----
big=$(ls -S "$P" | head -1)
mount_fg "$LOG" "$L" || fail "mount to find $big"
ino=$(stat -c %i "$M/c/$big")
umount_wait "$L"
chunk_files
for f in "${copy0[$ino.1]}" "${copy1[$ino.1]}"; do
	off=$((2 * 4096 + RANDOM % 4096))
	printf '\x5a\xa5' | dd of="$f" bs=1 seek=$off conv=notrunc status=none
done
: > "$LOG"
mount_fg "$LOG" "$L" || fail "mount after damaging both copies"
out=$("$DISK" "$M" scrub start -B 2>&1); rc=$?
[[ $rc == 4 ]] || fail "both copies bad: scrub start -B exit $rc, not 4: $out"
json=$(status_json)
expect "both copies bad" "$json" state=finished errors=2 repaired=0 unrepaired=2 \
	unrepaired_files="/c/$big" chunks="$nchunks"
grep -q "^  /c/$big\$" <<<"$out" || fail "scrub -B does not name /c/$big: $out"
"$DISK" "$M" scrub status | grep -q "^  /c/$big\$" || fail "scrub status does not name /c/$big"
grep -q "/c/$big (inode $ino): bytes $((CS + 8192))\.\.$((CS + 12287)) of the file .*no good copy: scrub left it" "$LOG" ||
	fail "the log does not name the bytes left: $(grep scrub "$LOG")"
grep -q "scrub: errors left in /c/$big " "$LOG" || fail "the log's summary does not name /c/$big"
cat "$M/c/$big" > /dev/null 2>&1 && fail "/c/$big read whole with a block bad in both copies"
rm "$M/c/$big" "$P/$big"
umount_wait "$L"
say "a block bad in both copies: 2 errors left, /c/$big named, exit 4"

# ---- a copy's chunk file deleted ----
chunk_files
nchunks=${#copy0[@]}
total=$(find "$D0/.lsmfs/sections" "$D1/.lsmfs/sections" -type f -name '*.*' -printf '%s\n' |
	awk '{ s += $1 } END { print s + 0 }')
victim=$(printf '%s\n' "${!copy1[@]}" | sort | head -1)
gone=${copy1[$victim]}
rm "$gone"
mount_fg "$LOG" "$L" || fail "mount after deleting $gone"
out=$("$DISK" "$M" scrub start -B 2>&1) || fail "a copy deleted: scrub exit $?: $out"
expect "a copy deleted" "$(status_json)" errors=1 repaired=1 unrepaired=0 rebuilt=1 unrebuilt=0 \
	chunks="$nchunks" bytes=$((total - $(stat -c %s "${copy0[$victim]}")))
cmp -s "$gone" "${copy0[$victim]}" || fail "the deleted copy $gone is not rebuilt equal to the other"
compare_all "after the rebuild"
umount_wait "$L"
say "a deleted copy rebuilt"

# ---- cancel, resume; an unmount, resume ----
rate=$((total / 4))
mount_fg "$LOG" "$L" || fail "mount to cancel"
"$DISK" "$M" scrub start -r $rate > /dev/null || fail "scrub start -r $rate"
out=$("$DISK" "$M" scrub start 2>&1) && fail "a second scrub started beside the first: $out"
grep -q "a scrub is running" <<<"$out" || fail "a second scrub: $out"
sleep 1
"$DISK" "$M" scrub cancel > /dev/null || fail "scrub cancel"
json=$(status_json)
done_chunks=$(field chunks "$json")
[[ $(field state "$json") == cancelled ]] && ((done_chunks > 0 && done_chunks < nchunks)) ||
	fail "cancelled after 1 s of 4: $json"
"$DISK" "$M" scrub cancel > /dev/null 2>&1 && fail "a cancel with no scrub running succeeded"
out=$("$DISK" "$M" scrub resume -r 0 -B 2>&1) || fail "scrub resume -B: exit $?: $out"
expect "cancelled, resumed" "$(status_json)" state=finished chunks="$nchunks" bytes="$total" errors=0
"$DISK" "$M" scrub resume > /dev/null 2>&1 && fail "a finished scrub resumed"

"$DISK" "$M" scrub start -r $rate > /dev/null || fail "scrub start -r $rate (to unmount)"
sleep 1
umount_wait "$L" || fail "unmount under a scrub"
grep -q "scrub interrupted at inode" "$LOG" || fail "the unmount did not stop the scrub: $(grep scrub "$LOG" | tail -2)"
mount_fg "$LOG" "$L" || fail "mount after the interruption"
json=$(status_json)
done_chunks=$(field chunks "$json")
[[ $(field state "$json") == interrupted ]] && ((done_chunks > 0 && done_chunks < nchunks)) ||
	fail "interrupted by an unmount after 1 s of 4: $json"
out=$("$DISK" "$M" scrub resume -r 0 -B 2>&1) || fail "resume after the unmount: exit $?: $out"
expect "interrupted, resumed" "$(status_json)" state=finished chunks="$nchunks" bytes="$total"
say "cancel + resume and unmount + resume cover every chunk once"

# ---- the rate ----
rate=$((total / 3))
t0=$(date +%s.%N)
out=$("$DISK" "$M" scrub start -r $rate -B 2>&1) || fail "scrub -r $rate -B: exit $?: $out"
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
json=$(status_json)
expect "at a rate" "$json" rate=$rate bytes="$total" chunks="$nchunks"
awk -v s="$secs" 'BEGIN { exit !(s >= 2.4 && s <= 8) }' ||
	fail "$total bytes at $rate bytes/s took $secs s, not about 3"
compare_all "at the end"
umount_wait "$L" || fail "the last unmount"
out=$("$FSCK" -n --scrub "$L" 2>&1) || fail "fsck -n --scrub after the scrubs: exit $?: $(grep -E 'LSMFS-|Scrub' <<<"$out" | head -5)"
say "$total bytes at $rate bytes/s: $secs s"
finish
