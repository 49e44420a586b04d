#!/bin/bash
# copies-vs-one.sh BUILD_DIR [ROUNDS] [NFILES] [SEQ_MIB]: what keeping the
# metadata store in two copies costs (fs/SCHEMA.md "Store copies").  Two
# filesystems on two disk directories each, side by side under one scratch
# directory (on the same disk): `one` made with --meta-copies 1, `two` with
# --meta-copies 2.  Per round, in a new random order each time:
#   md   mdbench (../shared/bench/mdbench.c: create, stat, readdir, read,
#        unlink of NFILES 4 KiB files), every phase in ops/s;
#   seq  fio, 1 MiB sequential writes of SEQ_MIB with an fsync at the end,
#        page cache written back and dropped before each run (as root).
# Prints per phase the best round of each (the least disturbed: a shared
# machine only ever slows a run down) with the median beside it, and the
# ratio two/one of the best rounds.  Needs root, fuse3, gcc, fio.
set -euo pipefail
B=$(cd "${1:?usage: copies-vs-one.sh BUILD_DIR [ROUNDS] [NFILES] [SEQ_MIB]}" && pwd)
rounds=${2:-5} nfiles=${3:-20000} seqmib=${4:-1024}
here=$(cd "$(dirname "$0")" && pwd)
shared=$(cd "$here/../../../shared/bench" 2>/dev/null && pwd || true)
bin=${BENCH_BIN:-/tmp/lsmfs-bench-tools}
mkdir -p "$bin"
if [[ ! -x $bin/mdbench ]]; then
	[[ -f $shared/mdbench.c ]] || { echo "copies-vs-one: no mdbench.c" >&2; exit 2; }
	gcc -O2 -Wall -o "$bin/mdbench" "$shared/mdbench.c"
fi
S=$(mktemp -d "${TMPDIR:-/var/tmp}/copies-bench.XXXXXX")
cleanup() {
	for s in one two; do fusermount3 -u "$S/$s/mnt" 2>/dev/null || true; done
	sleep 1
	rm -rf "$S"
}
trap cleanup EXIT
for s in one two; do
	mkdir -p "$S/$s/d0" "$S/$s/d1" "$S/$s/mnt"
	k=1; [[ $s == two ]] && k=2
	"$B/mkfs/mkfs.lsmfs" -q --meta-copies "$k" "$S/$s/d0" "$S/$s/d1"
	"$B/fs/lsmfs" "$S/$s/d0:$S/$s/d1" "$S/$s/mnt"
done
declare -A all
phases=(create stat readdir read unlink seqwrite_MiBps)
for ((r = 0; r < rounds; r++)); do
	for s in $(shuf -e one two); do
		d=$S/$s/mnt/md.$r
		mkdir -p "$d"
		while read -r phase _ rate; do
			all[$phase,$s]+="$rate "
		done < <("$bin/mdbench" "$d" "$nfiles" 4096)
		rm -rf "$d"
	done
	for s in $(shuf -e one two); do
		d=$S/$s/mnt/seq.$r
		mkdir -p "$d"
		sync
		[[ $(id -u) == 0 ]] && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
		sleep 1
		all[seqwrite_MiBps,$s]+="$(fio --name=seq --directory="$d" --rw=write --bs=1M \
			--size="${seqmib}M" --end_fsync=1 --ioengine=psync --output-format=terse \
			--terse-version=3 | awk -F';' '{printf "%.0f", $48/1024}') "
		rm -rf "$d"
	done
done
best() { tr ' ' '\n' <<<"$1" | grep . | sort -g | tail -1; }
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
printf "%-15s %12s %12s %12s %12s %8s\n" phase one_best one_median two_best two_median two/one
minr=999
for p in "${phases[@]}"; do
	ob=$(best "${all[$p,one]}") om=$(median "${all[$p,one]}")
	tb=$(best "${all[$p,two]}") tm=$(median "${all[$p,two]}")
	ratio=$(awk -v a="$tb" -v b="$ob" 'BEGIN{printf "%.2f", a/b}')
	minr=$(awk -v a="$minr" -v b="$ratio" 'BEGIN{print (b<a)?b:a}')
	printf "%-15s %12s %12s %12s %12s %8s\n" "$p" "$ob" "$om" "$tb" "$tm" "$ratio"
done
echo "rounds $rounds, $nfiles files, ${seqmib} MiB sequential; min two/one $minr"
