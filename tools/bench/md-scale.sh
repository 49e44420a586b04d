#!/bin/bash
# md-scale.sh [OPTIONS]: metadata at scale (issue 18).  N small files (default
# 10,000,000 of 4 KiB, inline in the metadata store) in D directories
# (default 10,000) on one lsmfs, and the same tree on a plain ext4, one
# side after the other in one run, each through tools/bench/mdscale.c
# (built here with gcc: one process, one request in flight; file i is
# d<i mod D>/f<i>, so every directory grows all the time; each file's
# bytes are RANDPCT% pseudo-random and the rest a repeat of them, about
# 2:1 for LZ4 at the default 50, as db_bench's --compression_ratio 0.5,
# checked byte for byte on reading).
#
# Per side, in this order:
#   create  mkdir the D directories, then open(O_CREAT|O_EXCL)+write+close
#           each file; the rate of every successive slice of min(1M, N/10)
#           files, and the last slice's rate over the first's (the target:
#           lsmfs >= 0.7).  Then `sync -f`; on lsmfs also until the store's
#           flush and compaction bytes (user.lsmfs.stats) stop moving for
#           10 s (--settle; its compaction debt paid; at most 30 min), so
#           that the phases below do not race it; both timed ("settle";
#           lsmfs's to the last poll, every 2 s, that saw the bytes move).
#   stat    stat of COUNT (default 100,000) files chosen at random among all
#           N (seeded: the same files on both sides), size checked; p50/p99.
#   find    `find TREE | wc -l`, timed, the count checked (N + D + 1).
#   du      `du -s TREE`, timed.
#   read    open + read to end of file + close of COUNT random files (other
#           seed), bytes checked; p50/p99.
# Cache state, the same on both sides (--cache cold, the default): before
# each phase `sync; echo 3 > /proc/sys/vm/drop_caches`, so neither side is
# served from the kernel's page, dentry or inode caches: ext4 reads its
# inode tables and directory blocks from disk, lsmfs its store tables (the
# backing ext4's page cache is dropped too).  What stays warm is each side's
# own memory: the lsmfs daemon's block cache (cache_mib, default 64 MiB),
# table index and filter memory, all counted in its RSS below.  --cache warm
# drops nothing (both sides then read whatever the create phase left in
# RAM; at 10M files neither the ext4 tree, ~45 GiB, nor an lsmfs store
# copy, ~22 GiB, fits in a 24 GiB machine's page cache anyway).
#
# lsmfs: build/mkfs/mkfs.lsmfs over two directories of the work directory
# (defaults: two copies of the store, 4 KiB inline limit), mounted with
# build/fs/lsmfs and default options.  Also reported:
#   - the daemon's peak RSS, VmHWM of /proc/PID/status read before unmount
#     (a high-water mark; target < 1 GiB);
#   - store write amplification, store/store.h store_stats_write_amp():
#     (log + flush + compaction + MANIFEST bytes) / user bytes (the keys and
#     values the filesystem handed the store), counted once per store (each
#     copy gets the same bytes), since mount, from stats.json's final write
#     at unmount (the last flush included); beside it the store bytes that
#     reach the disks, all copies, per byte applications wrote;
#   - the store's size per copy, the time the unmount took (the last flush).
# ext4 (--baseline loop, the default): a sparse image file in the work
# directory, mkfs.ext4 -N N+D+... (a fresh ext4 of this size has too few
# inodes for 10M files), inode tables initialised at mkfs (no lazy init
# writing in the background), on a loop device with direct I/O (so the
# image's pages are not cached twice), on the same disk as lsmfs's
# directories.  --baseline dir: a plain directory in the work directory
# (its free inodes checked); none: lsmfs only.
# Disk space: lsmfs is measured, unmounted and removed before the ext4 tree
# is made (with --keep both stay), so the run needs the larger of the two,
# estimated and checked with df (bytes and inodes) before anything starts.
# At the defaults: lsmfs ~2 x 22 GiB plus compaction room, ext4 ~42 GiB
# (about 56 GiB checked for).
#
# Options:
#   -n N             files (default 10000000)
#   -d D             directories (default 10000)
#   -s SIZE          bytes per file (default 4096)
#   -r RANDPCT       percent of each file that is random (default 50; 100:
#                    incompressible)
#   -c COUNT         random stats and reads per side (default 100000)
#   -w DIR           work directory (default $TMPDIR, else /var/tmp)
#   -B BUILD_DIR     lsmfs build (default the build/ beside tools/)
#   --baseline loop|dir|none   (default loop)
#   --cache cold|warm          (default cold)
#   --settle S       seconds the lsmfs store must be still to count as
#                    settled (default 10; polled every 2 s)
#   --keep           leave the filesystems (unmounted) and the image in the
#                    work directory; by default everything made is removed
# Prints the phases as they run, then a table: per phase each side's rate
# and seconds, and lsmfs/ext4 of the rates (above 1: lsmfs faster).
# Exit 0 done (targets missed are reported, not failed), 1 a step failed,
# 2 usage or not enough room, 130 interrupted; mounts are undone on any exit.
# Needs root (drop_caches, loop mounts, the stats xattr), /dev/fuse, fuse3,
# gcc, python3, e2fsprogs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prog=md-scale
usage() { sed -n '/^# Options:/,/e2fsprogs\.$/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "$prog: $*" >&2; exit 1; }

N=10000000 D=10000 SIZE=4096 RANDPCT=50 COUNT=100000
WORK=${TMPDIR:-/var/tmp} B=$here/../../build BASELINE=loop CACHE=cold KEEP=0 SETTLE=10
while (($#)); do
	case $1 in
	-n) N=${2:?}; shift ;;
	-d) D=${2:?}; shift ;;
	-s) SIZE=${2:?}; shift ;;
	-r) RANDPCT=${2:?}; shift ;;
	-c) COUNT=${2:?}; shift ;;
	-w) WORK=${2:?}; shift ;;
	-B) B=${2:?}; shift ;;
	--baseline) BASELINE=${2:?}; shift ;;
	--cache) CACHE=${2:?}; shift ;;
	--settle) SETTLE=${2:?}; shift ;;
	--keep) KEEP=1 ;;
	-h | --help) usage ;;
	*) echo "$prog: unknown argument: $1" >&2; usage ;;
	esac
	shift
done
for v in N D SIZE RANDPCT COUNT SETTLE; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "$prog: $v: not a number: ${!v}" >&2; exit 2; }
done
((N >= 10 && D >= 1 && COUNT >= 1 && RANDPCT <= 100)) ||
	{ echo "$prog: need N >= 10, D >= 1, COUNT >= 1, RANDPCT <= 100" >&2; exit 2; }
[[ $BASELINE =~ ^(loop|dir|none)$ ]] || { echo "$prog: --baseline loop|dir|none" >&2; exit 2; }
[[ $CACHE =~ ^(cold|warm)$ ]] || { echo "$prog: --cache cold|warm" >&2; exit 2; }
B=$(cd "$B" && pwd) || die "no build directory $B"
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs
[[ -x $MKFS && -x $LSMFS ]] || die "no $MKFS or $LSMFS (ninja -C $B)"
[[ $(id -u) == 0 ]] || die "needs root (drop_caches, loop mounts, the stats xattr)"
[[ -c /dev/fuse ]] || die "no /dev/fuse"
for t in gcc python3 getfattr fusermount3; do
	command -v "$t" >/dev/null || die "needs $t"
done
if [[ $BASELINE == loop ]]; then
	for t in mkfs.ext4 losetup; do command -v "$t" >/dev/null || die "needs $t"; done
fi
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)

# The client, rebuilt when its source is newer.
bin=${BENCH_BIN:-/tmp/lsmfs-bench-tools}
mkdir -p "$bin"
MD=$bin/mdscale
if [[ ! -x $MD || $here/mdscale.c -nt $MD ]]; then
	gcc -O2 -std=gnu11 -Wall -Wextra -o "$MD.new" "$here/mdscale.c" && mv "$MD.new" "$MD"
fi

# Room, before anything is made.  Estimates (bytes): lsmfs keeps a file of
# up to 4 KiB (the default inline limit) in the store, LZ4-compressed, with
# its inode record and directory entry (~300 bytes), in 2 copies, x1.25 for
# the tables a compaction writes before it drops its inputs, obsolete
# tables and the commit log (the 1M-file run at the defaults peaked at
# 4.1 GiB for both copies, 2,200 bytes a file a copy; this says 5.5 GiB);
# a larger file is a chunk file (one copy) and the metadata.  ext4: a 4 KiB
# block per 4 KiB, a 256-byte inode, ~32 bytes of directory entry per file,
# 1 GiB for the journal and bitmaps (the 1M run: 4.1 GiB; this says 5.1).
GiB=$((1 << 30))
blocks=$(((SIZE + 4095) / 4096 * 4096))
if ((SIZE <= 4096)); then
	lsm_need=$((N * (SIZE * (RANDPCT > 5 ? RANDPCT : 5) / 100 + 300) * 2 * 5 / 4))
else
	lsm_need=$((N * blocks + N * 300 * 2 * 5 / 4))
fi
ext_need=0 ext_inodes=0
[[ $BASELINE != none ]] && ext_need=$((N * (blocks + 256 + 32) + GiB))
[[ $BASELINE == dir ]] && ext_inodes=$((N + D + 1000))
if ((KEEP)); then need=$((lsm_need + ext_need)); else need=$((lsm_need > ext_need ? lsm_need : ext_need)); fi
need=$((need + GiB))
avail=$(df -B1 --output=avail "$WORK" | tail -1 | tr -d ' ')
iavail=$(df --output=iavail "$WORK" | tail -1 | tr -d ' ')
gib() { awk -v b="$1" 'BEGIN { if (b >= 2^30) printf "%.1f GiB", b / 2^30; else printf "%.1f MiB", b / 2^20 }'; }
if ((avail < need)); then
	echo "$prog: $WORK has $(gib "$avail") free, the run needs about $(gib "$need")" \
		"(lsmfs $(gib "$lsm_need"), ext4 $(gib "$ext_need"), $([[ $KEEP == 1 ]] && echo both kept || echo one after the other) + 1 GiB);" \
		"use -w DIR elsewhere or a smaller -n" >&2
	exit 2
fi
if ((ext_inodes > 0 && iavail < ext_inodes + 10000)); then
	echo "$prog: $WORK has $iavail free inodes, a plain directory of $N files needs $ext_inodes;" \
		"use --baseline loop (an ext4 image made with enough) or a smaller -n" >&2
	exit 2
fi

S=$(mktemp -d "$WORK/md-scale.XXXXXX")
daemon='' loopdev='' child='' sampler=''
cleanup() {
	local rc=$?
	set +e # every step of the cleanup is tried
	trap - EXIT INT TERM
	[[ -n $child ]] && { kill "$child" 2>/dev/null; wait "$child" 2>/dev/null; }
	[[ -n $sampler ]] && unsample
	if mountpoint -q "$S/lsmfs/mnt" 2>/dev/null; then
		fusermount3 -u "$S/lsmfs/mnt" 2>/dev/null || umount -l "$S/lsmfs/mnt" 2>/dev/null || true
	fi
	# The daemon flushes its store after the unmount; the disks are busy until it exits.
	if [[ -n $daemon ]]; then
		for _ in $(seq 600); do kill -0 "$daemon" 2>/dev/null || break; sleep 1; done
	fi
	if mountpoint -q "$S/ext4/mnt" 2>/dev/null; then
		umount "$S/ext4/mnt" 2>/dev/null || umount -l "$S/ext4/mnt" 2>/dev/null || true
	fi
	[[ -n $loopdev ]] && { losetup -d "$loopdev" 2>/dev/null || true; }
	if ((KEEP)); then
		echo "$prog: kept $S"
	else
		rm -rf "$S"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "$prog: interrupted" >&2; exit 130' INT TERM

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
drop() {
	[[ $CACHE == cold ]] || return 0
	sync
	echo 3 >/proc/sys/vm/drop_caches
}
# run OUT CMD...: CMD in the background (so INT and TERM are taken at once),
# its lines on stdout and in OUT; fails unless CMD exits 0.
run() {
	local out=$1 rc=0
	shift
	: >"$out" # before tail looks for it
	"$@" >"$out" &
	child=$!
	tail -n +1 -f --pid="$child" "$out" | sed -u 's/^/    /' &
	wait "$child" || rc=$?
	wait $! 2>/dev/null || true
	child=
	((rc == 0)) || die "$* failed (exit $rc)"
}
# sample OUT PATH...: the bytes the PATHs take on disk, every 10 s, into OUT
# (the peak goes in the report: what a run of this size needs).  du -x: never
# into a mount below them.
# It stops at the file $S/unsample (within a second; no signal, so no
# job message and nothing left running).
sample() {
	local out=$1
	shift
	rm -f "$S/unsample"
	(
		while [[ ! -e $S/unsample ]]; do
			du -scxB1 "$@" 2>/dev/null | tail -1 | cut -f1 || true
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				[[ -e $S/unsample ]] && break
				sleep 1
			done
		done >"$out"
	) &
	sampler=$!
}
unsample() {
	touch "$S/unsample"
	wait "$sampler" || true
	sampler=''
}
peak() { sort -n "$1" | tail -1; }
stats() { getfattr -n user.lsmfs.stats --only-values "$1" 2>/dev/null; }
# json FILE EXPR: a Python expression over the JSON object j.
json() { python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

declare -A R # R[phase,side]: "rate seconds" (and p50 p99 for stat, read)
declare -A SLICES
# phases SIDE TREE: the measured phases over a made tree.
phases() {
	local side=$1 tree=$2 t f cnt p50 p99
	echo "== $side: stat of $COUNT random files ($CACHE cache)"
	drop
	run "$S/$side.stat" "$MD" stat "$tree" "$N" "$D" "$SIZE" "$COUNT" 1
	read -r _ _ t f p50 p99 <"$S/$side.stat"
	R[stat,$side]="$f $t $p50 $p99"

	echo "== $side: find | wc -l ($CACHE cache)"
	drop
	t=$(now)
	(find "$tree" | wc -l >"$S/$side.find") &
	child=$!
	wait "$child"
	child=
	t=$(since "$t")
	cnt=$(<"$S/$side.find")
	echo "    $cnt entries in $t s"
	((cnt == N + D + 1)) || die "$side: find saw $cnt entries, want $((N + D + 1))"
	R[find,$side]="$(awk -v n="$cnt" -v t="$t" 'BEGIN { printf "%.0f", n / t }') $t"

	echo "== $side: du -s ($CACHE cache)"
	drop
	t=$(now)
	(du -s "$tree" >"$S/$side.du") &
	child=$!
	wait "$child"
	child=
	t=$(since "$t")
	DU[$side]=$(cut -f1 "$S/$side.du")
	echo "    ${DU[$side]} KiB in $t s"
	R[du,$side]="$(awk -v n="$cnt" -v t="$t" 'BEGIN { printf "%.0f", n / t }') $t"

	echo "== $side: read of $COUNT random files ($CACHE cache)"
	drop
	run "$S/$side.read" "$MD" read "$tree" "$N" "$D" "$SIZE" "$RANDPCT" "$COUNT" 2
	read -r _ _ t f p50 p99 <"$S/$side.read"
	R[read,$side]="$f $t $p50 $p99"
}
declare -A DU
# create SIDE TREE: mkdir + create phase, slices kept.
create() {
	local side=$1 tree=$2 slice
	slice=$((N / 10 < 1000000 ? N / 10 : 1000000))
	echo "== $side: create $N files of $SIZE bytes in $D directories (slices of $slice)"
	mkdir "$tree"
	drop
	run "$S/$side.create" "$MD" create "$tree" "$N" "$D" "$SIZE" "$RANDPCT" "$slice"
	R[mkdir,$side]=$(awk '$1 == "mkdir" { print $4, $3 }' "$S/$side.create")
	R[create,$side]=$(awk '$1 == "create" { print $4, $3 }' "$S/$side.create")
	SLICES[$side]=$(awk '$1 == "slice" { printf "%s ", $6 }' "$S/$side.create")
}

t_start=$(now)
echo "md-scale: N=$N D=$D size=$SIZE random=$RANDPCT% count=$COUNT cache=$CACHE baseline=$BASELINE"
echo "  work $S ($(df -h --output=source,fstype,avail "$WORK" | tail -1 | tr -s ' ')), need ~$(gib "$need")"
echo "  load average $(cut -d' ' -f1-3 /proc/loadavg) (a busy machine slows every phase)"
# The daemon measured is the build's: say when the build is behind its source.
behind=$(ninja -C "$B" -n 2>/dev/null | grep -c '^\[' || true)
echo "  lsmfs $(git -C "$here" describe --always --dirty 2>/dev/null || echo '?') build $B$( ((behind > 0)) &&
	echo " (BEHIND its source: ninja -n has $behind steps)"); kernel $(uname -r); $(nproc) cpus, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 2^20 }' /proc/meminfo) RAM"

# --- lsmfs ---
L=$S/lsmfs
mkdir -p "$L/d0" "$L/d1" "$L/mnt"
"$MKFS" -q "$L/d0" "$L/d1"
"$LSMFS" "$L/d0:$L/d1" "$L/mnt" || die "lsmfs did not mount"
stats "$L/mnt" >"$S/stats.mount" || die "cannot read user.lsmfs.stats"
daemon=$(json "$S/stats.mount" 'j["daemon_pid"]')
copies=$(json "$S/stats.mount" 'len(j["store"]["copies"])')
echo "== lsmfs: mounted, daemon pid $daemon, $copies store copies"
sample "$S/du.lsmfs" "$L/d0" "$L/d1"
create lsmfs "$L/mnt/tree"
echo "== lsmfs: settle (sync -f, then until the store's flush and compaction bytes stop for $SETTLE s)"
t=$(now)
sync -f "$L/mnt"
last='' still=0 settle_lsmfs=$(since "$t")
for _ in $(seq 900); do
	stats "$L/mnt" >"$S/stats.now"
	cur=$(json "$S/stats.now" 'j["store"]["since_mount"]["flush_bytes"] + j["store"]["since_mount"]["compaction_bytes"]')
	if [[ $cur == "$last" ]]; then
		still=$((still + 1))
		((still * 2 >= SETTLE)) && break
	else
		# Settled at the last poll that saw the bytes move (2 s resolution).
		still=0 settle_lsmfs=$(since "$t")
	fi
	last=$cur
	sleep 2
done
echo "    $settle_lsmfs s (then $SETTLE s still)"
phases lsmfs "$L/mnt/tree"
unsample
rss_hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$daemon/status")
rss_now=$(awk '/^VmRSS/ { print $2 }' "/proc/$daemon/status")
echo "== lsmfs: daemon VmHWM $rss_hwm KiB, VmRSS $rss_now KiB; unmount"
t=$(now)
for i in $(seq 10); do
	fusermount3 -u "$L/mnt" 2>"$S/umount.err" && break
	((i < 10)) || die "lsmfs: cannot unmount: $(<"$S/umount.err") (held by: $(fuser -m "$L/mnt" 2>&1 | tr -s ' '))"
	sleep 1
done
while kill -0 "$daemon" 2>/dev/null; do sleep 0.2; done
daemon=
umount_lsmfs=$(since "$t")
echo "    daemon gone after $umount_lsmfs s"
SF=$L/d0/.lsmfs/meta/stats.json
[[ $(json "$SF" 'j["mounted"]') == False ]] || die "$SF: no final write at unmount"
read -r user logb flushb compb manb app < <(json "$SF" \
	'" ".join(str(x) for x in [j["store"]["since_mount"][k] for k in ["user_bytes", "log_bytes", "flush_bytes", "compaction_bytes", "manifest_bytes"]] + [j["app_bytes_written"]])')
store_bytes=$(du -sb "$L/d0/.lsmfs/meta" | cut -f1)
if ((!KEEP)); then rm -rf "$L"; fi

# --- ext4 ---
if [[ $BASELINE != none ]]; then
	E=$S/ext4
	mkdir -p "$E/mnt"
	if [[ $BASELINE == loop ]]; then
		inodes=$((N + D + 10000))
		imgsize=$(((ext_need + GiB) * 5 / 4 >> 20 << 20))
		truncate -s "$imgsize" "$E/img"
		mkfs.ext4 -q -F -m 0 -N "$inodes" -E lazy_itable_init=0,lazy_journal_init=0 "$E/img"
		loopdev=$(losetup -f --show --direct-io=on "$E/img")
		mount "$loopdev" "$E/mnt"
		echo "== ext4: image $(gib "$imgsize") sparse, $inodes inodes, on $loopdev (direct I/O)"
		sample "$S/du.ext4" "$E/img"
	else
		echo "== ext4: plain directory $E/mnt on $WORK"
	fi
	create ext4 "$E/mnt/tree"
	echo "== ext4: settle (sync -f)"
	t=$(now)
	sync -f "$E/mnt"
	settle_ext4=$(since "$t")
	echo "    $settle_ext4 s"
	phases ext4 "$E/mnt/tree"
	ext_used=$(df -B1 --output=used "$E/mnt" | tail -1 | tr -d ' ')
	[[ -n $sampler ]] && unsample
	if [[ $BASELINE == loop ]]; then
		umount "$E/mnt"
		losetup -d "$loopdev"
		loopdev=
		if ((!KEEP)); then rm -f "$E/img"; fi
	fi
fi

# --- report ---
echo
echo "md-scale results: $N files of $SIZE bytes in $D directories, $COUNT random stats/reads, $CACHE cache before each phase"
printf "%-22s %-10s %12s %10s %12s %10s %10s\n" phase unit lsmfs "s" ext4 "s" lsmfs/ext4
row() { # PHASE UNIT KEY
	local l=${R[$3,lsmfs]:-} e=${R[$3,ext4]:--}
	read -r lr lt _ <<<"$l"
	read -r er et _ <<<"$e"
	printf "%-22s %-10s %12s %10s %12s %10s %10s\n" "$1" "$2" "$lr" "$lt" "$er" "${et:--}" \
		"$(awk -v a="$lr" -v b="$er" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "-" }')"
}
row mkdir dirs/s mkdir
row create files/s create
printf "%-22s %-10s %12s %10s %12s %10s %10s\n" "settle after create" s "" "$settle_lsmfs" "" "${settle_ext4:--}" ""
row "stat (random)" ops/s stat
row "find | wc -l" entries/s find
row "du -s" entries/s du
row "read (random, whole)" files/s read
for p in stat read; do
	read -r _ _ lp50 lp99 <<<"${R[$p,lsmfs]}"
	read -r _ _ ep50 ep99 <<<"${R[$p,ext4]:-- - - -}"
	printf "%-22s %-10s %12s %10s %12s %10s\n" "$p latency p50 / p99" us "$lp50" "$lp99" "$ep50" "$ep99"
done
printf "%-22s %-10s %12s %10s %12s\n" "du -s reports" KiB "${DU[lsmfs]}" "" "${DU[ext4]:--}"
echo
echo "create rate per slice of $((N / 10 < 1000000 ? N / 10 : 1000000)) files (files/s):"
read -ra lsl <<<"${SLICES[lsmfs]}"
read -ra es <<<"${SLICES[ext4]:-}"
for i in "${!lsl[@]}"; do
	printf "  slice %3d  %12s %12s\n" "$i" "${lsl[$i]}" "${es[$i]:--}"
done
first=${lsl[0]} lastr=${lsl[-1]}
# A last slice shorter than the others (N not a multiple) is too noisy to judge by.
if ((N % (N / 10 < 1000000 ? N / 10 : 1000000) != 0 && ${#lsl[@]} > 2)); then lastr=${lsl[-2]}; fi
ratio=$(awk -v a="$lastr" -v b="$first" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.7) ? "met" : "MISSED" }')
echo "lsmfs create rate: first slice $first files/s, last $lastr files/s, last/first $ratio (target >= 0.70: $verdict)"
if [[ -n ${es[0]:-} ]]; then
	echo "ext4 create rate:  first slice ${es[0]} files/s, last ${es[-1]} files/s, last/first $(awk -v a="${es[-1]}" -v b="${es[0]}" 'BEGIN { printf "%.2f", a / b }')"
fi
echo "lsmfs daemon peak RSS (VmHWM before unmount): $(awk -v k="$rss_hwm" 'BEGIN { printf "%.0f MiB", k / 1024 }')" \
	"(target < 1024 MiB: $( ((rss_hwm < 1048576)) && echo met || echo MISSED)); VmRSS then $(awk -v k="$rss_now" 'BEGIN { printf "%.0f MiB", k / 1024 }')"
echo "lsmfs store write amplification = (log + flush + compaction + manifest bytes) / user bytes, one copy, since mount, at unmount:"
echo "  ($logb + $flushb + $compb + $manb) / $user = $(awk -v a=$((logb + flushb + compb + manb)) -v b="$user" 'BEGIN { printf "%.2f", a / b }')"
echo "  store bytes to the disks, $copies copies, per application byte: $copies x $((logb + flushb + compb + manb)) / $app = $(awk -v a=$((copies * (logb + flushb + compb + manb))) -v b="$app" 'BEGIN { printf "%.2f", a / b }')"
echo "lsmfs store per copy $(gib "$store_bytes") after unmount; ext4 used $(gib "${ext_used:-0}") (df); unmount (last flush) $umount_lsmfs s"
echo "disk taken at the peak (sampled every 10 s): lsmfs $(gib "$(peak "$S/du.lsmfs")") (its two directories)$(
	[[ -s $S/du.ext4 ]] && echo ", ext4 image $(gib "$(peak "$S/du.ext4")")"); the run needed $(gib "$need") by estimate"
echo "total $(since "$t_start") s; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
