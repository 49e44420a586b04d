#!/usr/bin/env bash
#
# store-vs-rocksdb.sh: run storebench (lsmfs store) against release builds
# of RocksDB's and LevelDB's db_bench (the "anchors") on the same workload,
# interleaved in one run, and tabulate ops/sec.
#
# The anchors are given by path (--rocksdb / ROCKSDB_BENCH, --leveldb /
# LEVELDB_BENCH), at least one of them; this project does not build them
# (README, "Tools", says how to get release builds).  Before the runs the
# script prints, for each, the path, the version line it prints and
# whether it is a release build: db_bench of both projects prints
# "WARNING: Assertions are enabled" when built without NDEBUG and
# "WARNING: Optimization is disabled" without -O; Debian's rocksdb-tools
# db_bench is such an assertions build, slower than a release build, which
# flatters storebench.  storebench's own build type comes from meson-info.
#
# Each round runs three jobs per system, each on a fresh database directory:
#   seq:     --benchmarks=fillseq
#   leveldb: --benchmarks=fillrandom,overwrite,readrandom,readseq
#            (LevelDB's default order: the reads see the tree the two
#            random fills leave, with its compaction debt)
#   script:  --benchmarks=fillrandom,readrandom,readseq,overwrite
#            (the reads see what fillrandom alone wrote, and overwrite
#            writes into a populated database)
# The table gives every benchmark of the two random jobs once per order,
# named "benchmark/order".  The machine is noisy, so there are R rounds
# and in every round all runs (systems x jobs) go in a new random order.
# The table gives, per benchmark, the best and the median ops/sec of each
# system and the ratios storebench/rocksdb and storebench/leveldb.
#
# Same workload for all (flags below): NUM keys of 16 bytes, 100-byte
# values that compress to half, 10 Bloom bits per key, 8 MiB block cache and
# 8 MiB write buffer (storebench's defaults), one thread, no sync, commit
# log on; everything else (level shape, file sizes, background threads)
# stays at each system's default.  Where LevelDB 1.23's db_bench differs
# (benchmarks/db_bench.cc):
#  - compression is snappy (LevelDB has no LZ4); storebench and RocksDB
#    use LZ4;
#  - keys are always 16 bytes, the number in decimal ("%016d"); storebench
#    and RocksDB put it big-endian in 8 bytes and pad with '0';
#  - there is no --seed: thread i of the run gets seed 1000 + i, so every
#    round replays the same keys; storebench and RocksDB get
#    --seed=ROUND*1000+7, the same for both;
#  - it prints micros/op only ("name : 1.234 micros/op;"), three decimals;
#    ops/sec is derived as 1e6 / micros_per_op (one thread, so the same as
#    the others' wall-clock ops/sec);
#  - fillrandom/overwrite/readrandom draw uniform keys in [0, NUM) with
#    repetition and readseq reads from the first key up to NUM entries or
#    the end, as storebench and RocksDB do.
# -m instead measures storebench's peak RSS during a fillrandom of 10M keys
# with default options, against the 1 GiB target.
#
# Exit: 0 ok, 1 a run failed, 2 usage.
set -euo pipefail

PROG=${0##*/}
ROUNDS=2
NUM=
BUILD=./build
WORK=${TMPDIR:-/tmp}
KEEP=
MEMORY=0
ROCKSDB=${ROCKSDB_BENCH:-}
LEVELDB=${LEVELDB_BENCH:-}
CACHE=8388608
WBUF=8388608
# The releases the README names; another version runs, with a note.
ROCKSDB_WANT=9.11.2
LEVELDB_WANT=1.23

usage() {
	cat <<EOF
usage: $PROG [-r ROUNDS] [-n NUM] [-w WORKDIR] [-o LOGDIR]
           [--rocksdb PATH] [--leveldb PATH] [BUILD_DIR]
       $PROG -m [-n NUM] [-w WORKDIR] [BUILD_DIR]
       $PROG -h

Run storebench (BUILD_DIR/tools/storebench, BUILD_DIR default ./build)
against RocksDB's and LevelDB's db_bench on the same workload, interleaved,
and compare ops/sec.  At least one of the two is needed; use release
builds (README, "Tools"): an assertions build such as Debian's
rocksdb-tools is slower and flatters storebench.

  --rocksdb PATH  RocksDB db_bench ($ROCKSDB_WANT; default \$ROCKSDB_BENCH)
  --leveldb PATH  LevelDB db_bench ($LEVELDB_WANT; default \$LEVELDB_BENCH)
  -r ROUNDS   rounds, each in a new interleaved order (default 2)
  -n NUM      keys (default 1000000; with -m 10000000); also --num=NUM
  -w WORKDIR  where the fresh database directories go (default \$TMPDIR or /tmp)
  -o LOGDIR   keep every run's output there (default: a temporary directory,
              removed at the end unless a run failed)
  -m          memory mode: peak RSS of storebench during a 10M-key
              fillrandom with default options, against the 1 GiB target
  -h          this help

Exit: 0 ok, 1 a run failed, 2 usage.
EOF
}

die() { echo "$PROG: $*" >&2; exit 1; }
usage_error() { echo "$PROG: $* (try -h)" >&2; exit 2; }

# getopts knows no long options: take --rocksdb/--leveldb PATH (or =PATH)
# here and turn --num=N / --num N into -n N.
args=()
while (($#)); do
	case $1 in
	--rocksdb=*) ROCKSDB=${1#--rocksdb=} ;;
	--leveldb=*) LEVELDB=${1#--leveldb=} ;;
	--rocksdb | --leveldb)
		(($# >= 2)) || usage_error "$1 needs a path"
		if [[ $1 == --rocksdb ]]; then ROCKSDB=$2; else LEVELDB=$2; fi
		shift ;;
	--num=*) args+=(-n "${1#--num=}") ;;
	--num) shift; args+=(-n "${1:-}") ;;
	--help) args+=(-h) ;;
	--) args+=("$@"); break ;;
	*) args+=("$1") ;;
	esac
	shift
done
set -- ${args[@]+"${args[@]}"}

while getopts ":r:n:w:o:mh" opt; do
	case $opt in
	r) ROUNDS=$OPTARG ;;
	n) NUM=$OPTARG ;;
	w) WORK=$OPTARG ;;
	o) KEEP=$OPTARG ;;
	m) MEMORY=1 ;;
	h) usage; exit 0 ;;
	:) usage_error "-$OPTARG needs a value" ;;
	*) usage_error "unknown option -$OPTARG" ;;
	esac
done
shift $((OPTIND - 1))
(($# <= 1)) || usage_error "too many arguments"
(($#)) && BUILD=$1
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || usage_error "-r: not a positive number: $ROUNDS"
if [[ -n $NUM && ! $NUM =~ ^[1-9][0-9]*$ ]]; then
	usage_error "-n: not a positive number: $NUM"
fi

if ((!MEMORY)); then
	[[ -n $ROCKSDB || -n $LEVELDB ]] ||
		usage_error "no anchor: give --rocksdb PATH and/or --leveldb PATH (release db_bench builds)"
	for anchor in "$ROCKSDB" "$LEVELDB"; do
		[[ -z $anchor || -x $anchor ]] || usage_error "$anchor: not an executable file"
	done
fi

STOREBENCH=$BUILD/tools/storebench
[[ -x $STOREBENCH ]] || die "$STOREBENCH: not found (build first: meson setup $BUILD && ninja -C $BUILD)"
mkdir -p "$WORK"

if [[ -n $KEEP ]]; then
	mkdir -p "$KEEP"
	LOGS=$KEEP
else
	LOGS=$(mktemp -d "$WORK/store-vs-rocksdb.XXXXXX")
fi
DBDIR=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	[[ -n $DBDIR ]] && rm -rf -- "$DBDIR"
	return 0
}
trap cleanup EXIT

# ---- -m: peak resident set size ----
if ((MEMORY)); then
	NUM=${NUM:-10000000}
	DBDIR=$(mktemp -d "$WORK/storebench-rss.XXXXXX")
	log=$LOGS/rss.log
	echo "storebench fillrandom, $NUM keys, default options, db $DBDIR"
	if [[ -x /usr/bin/time ]]; then
		/usr/bin/time -v -o "$LOGS/rss.time" "$STOREBENCH" --benchmarks=fillrandom \
			--num="$NUM" --db="$DBDIR" >"$log" 2>&1 || die "storebench failed; see $log"
		kib=$(awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$LOGS/rss.time")
		how="/usr/bin/time -v"
	else
		# Sample VmHWM (the kernel's own high-water mark) until the
		# process ends; the last sample misses at most the final 0.2 s.
		"$STOREBENCH" --benchmarks=fillrandom --num="$NUM" --db="$DBDIR" >"$log" 2>&1 &
		pid=$!
		kib=0
		while kill -0 "$pid" 2>/dev/null; do
			v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
			[[ -n $v ]] && kib=$v
			sleep 0.2
		done
		wait "$pid" || die "storebench failed; see $log"
		how="sampled /proc/PID/status VmHWM"
	fi
	grep -E '^fillrandom|write-amp' "$log" || true
	target=$((1024 * 1024))
	verdict=OVER
	((kib <= target)) && verdict=within
	printf 'peak RSS: %d KiB (%s MiB); target 1024 MiB: %s (%s)\n' \
		"$kib" "$(awk -v k="$kib" 'BEGIN { printf "%.1f", k / 1024 }')" "$verdict" "$how"
	[[ -z $KEEP ]] && rm -rf -- "$LOGS"
	exit 0
fi

# ---- comparison ----
NUM=${NUM:-1000000}

# Flags every db_bench takes (LevelDB's parser knows only a few), then
# those of storebench and RocksDB, then RocksDB's own.
COMMON=(--num="$NUM" --value_size=100 --compression_ratio=0.5 --bloom_bits=10
	--threads=1 "--cache_size=$CACHE" "--write_buffer_size=$WBUF"
	--use_existing_db=0 --histogram=0)
DBBENCH=(--key_size=16 --compression_type=lz4 --sync=0)
ROCKSDB_ONLY=(--disable_wal=0)
declare -A JOB=([seq]=fillseq [leveldb]="fillrandom,overwrite,readrandom,readseq"
	[script]="fillrandom,readrandom,readseq,overwrite")
JOBS=(seq leveldb script)
# The table's rows: the seq job's one, then each order's in its own order.
BENCHES=(fillseq/seq)
for j in leveldb script; do
	IFS=, read -r -a bs <<<"${JOB[$j]}"
	for b in "${bs[@]}"; do BENCHES+=("$b/$j"); done
done
SYSTEMS=(storebench)
[[ -n $ROCKSDB ]] && SYSTEMS+=(rocksdb)
[[ -n $LEVELDB ]] && SYSTEMS+=(leveldb)

# meson_option NAME: the value of a meson option of $BUILD, or "?".
meson_option() {
	local v
	v=$(sed -n -E "s/.*\"name\": \"$1\", \"value\": \"([^\"]*)\".*/\1/p" \
		"$BUILD/meson-info/intro-buildoptions.json" 2>/dev/null || true)
	echo "${v:-?}"
}

# yes_if / no_if PATTERN FILE: "yes" / "no" if FILE has a line matching
# PATTERN, else the other.
yes_if() { if grep -q -- "$1" "$2"; then echo yes; else echo no; fi; }
no_if() { if grep -q -- "$1" "$2"; then echo no; else echo yes; fi; }

# probe SYSTEM PATH NAME: run PATH once on one key and print which build it
# is; NAME is what its version line must start with.  Sets SLOW when the
# build has assertions on or optimization off.
SLOW=
probe() {
	local sys=$1 bin=$2 name=$3 log=$LOGS/$1.probe.log version asserts opt
	local flags=() comp=Snappy
	[[ $sys == rocksdb ]] && flags=(--compression_type=lz4) comp=LZ4
	DBDIR=$(mktemp -d "$WORK/$sys-probe.XXXXXX")
	"$bin" --benchmarks=fillseq --num=1 "${flags[@]}" --db="$DBDIR" >"$log" 2>&1 ||
		die "$bin: a one-key fillseq failed; see $log"
	rm -rf -- "$DBDIR"
	DBDIR=
	version=$(grep -m1 -E "^$name: +version" "$log" | tr -s ' ' || true)
	[[ -n $version ]] || die "$bin: prints no '$name: version' line: not $name's db_bench? (see $log)"
	asserts=$(yes_if 'Assertions are enabled' "$log")
	opt=$(no_if 'Optimization is disabled' "$log")
	printf '%-12s%s\n' "$sys:" "$bin"
	printf '%-12s%s; assertions enabled: %s; optimized: %s; %s compiled in: %s\n' \
		"" "$version" "$asserts" "$opt" "$comp" "$(no_if "$comp compression is not" "$log")"
	[[ $asserts == yes || $opt == no ]] && SLOW+=" $sys"
	local want=$ROCKSDB_WANT
	[[ $sys == leveldb ]] && want=$LEVELDB_WANT
	[[ $version == "$name: version $want" ]] ||
		printf '%-12s%s\n' "" "note: not version $want, the release the README names"
	return 0
}

sb_type=$(meson_option buildtype) sb_ndebug=$(meson_option b_ndebug)
sb_asserts=yes
[[ $sb_ndebug == true || ($sb_ndebug == if-release && $sb_type == release) ]] && sb_asserts=no
[[ $sb_ndebug == '?' ]] && sb_asserts='?'
printf '%-12s%s\n' "storebench:" "$STOREBENCH"
printf '%-12s%s\n' "" "meson buildtype $sb_type; assertions enabled: $sb_asserts (b_ndebug=$sb_ndebug)"
[[ -n $ROCKSDB ]] && probe rocksdb "$ROCKSDB" RocksDB
[[ -n $LEVELDB ]] && probe leveldb "$LEVELDB" LevelDB
echo "workload:   $NUM keys of 16 B, 100 B values (compression_ratio 0.5), 10 Bloom"
echo "            bits/key, 8 MiB block cache and write buffer, 1 thread, no sync, log on"
echo "flags:      all: ${COMMON[*]}"
echo "            storebench, rocksdb: ${DBBENCH[*]} --seed=ROUND*1000+7"
[[ -n $ROCKSDB ]] && echo "            rocksdb: ${ROCKSDB_ONLY[*]}"
if [[ -n $LEVELDB ]]; then
	echo "            leveldb: snappy compression (LevelDB 1.23 has no LZ4), keys \"%016d\","
	echo "            no --seed (the same keys every round), ops/sec = 1e6 / micros/op"
fi
echo "            level shape and background threads: each system's default"
echo "jobs:       seq = ${JOB[seq]}; leveldb (LevelDB's default order) ="
echo "            ${JOB[leveldb]}; script = ${JOB[script]} (fresh db each)"
echo "rounds:     $ROUNDS; logs in $LOGS"
if [[ -n $SLOW ]]; then
	echo "WARNING:   $SLOW: assertions on or optimization off: slower than a release"
	echo "            build, which flatters storebench"
fi
echo

# run SYSTEM JOB ROUND: one run on a fresh directory; append ops/sec per
# benchmark to $LOGS/SYSTEM.BENCH.JOB.
run() {
	local sys=$1 job=$2 round=$3 log out cmd
	local seed=$((round * 1000 + 7))
	log=$LOGS/$sys.$job.$round.log
	case $sys in
	storebench) cmd=("$STOREBENCH" "${COMMON[@]}" "${DBBENCH[@]}" "--seed=$seed") ;;
	rocksdb) cmd=("$ROCKSDB" "${COMMON[@]}" "${DBBENCH[@]}" "${ROCKSDB_ONLY[@]}" "--seed=$seed") ;;
	leveldb) cmd=("$LEVELDB" "${COMMON[@]}") ;;
	esac
	DBDIR=$(mktemp -d "$WORK/$sys-$job.XXXXXX")
	sync
	"${cmd[@]}" --benchmarks="${JOB[$job]}" --db="$DBDIR" >"$log" 2>&1 ||
		die "$sys ${JOB[$job]} failed; see $log"
	rm -rf -- "$DBDIR"
	DBDIR=
	# Progress ("... finished N ops") ends in a carriage return.  Result
	# lines: "name : M micros/op N ops/sec ..." (storebench, RocksDB) or
	# "name : M micros/op; ..." (LevelDB: ops/sec = 1e6 / M).
	out=$(tr '\r' '\n' <"$log" | awk '
		$1 ~ /^[a-z]+$/ && $2 == ":" && $4 ~ /^micros\/op;?$/ {
			if ($6 == "ops/sec") print $1, $5
			else if ($3 > 0) printf "%s %.0f\n", $1, 1e6 / $3
		}')
	[[ -n $out ]] || die "$sys ${JOB[$job]}: no results; see $log"
	local name ops
	while read -r name ops; do
		echo "$ops" >>"$LOGS/$sys.$name.$job"
		printf '  %-10s %-19s %12s ops/sec\n' "$sys" "$name/$job" "$ops"
	done <<<"$out"
}

for ((round = 1; round <= ROUNDS; round++)); do
	mapfile -t order < <(for s in "${SYSTEMS[@]}"; do
		for j in "${JOBS[@]}"; do printf '%s\n' "$s:$j"; done; done | shuf)
	echo "round $round: ${order[*]}"
	for item in "${order[@]}"; do
		run "${item%%:*}" "${item#*:}" "$round"
	done
done

# best FILE / median FILE: of the numbers in FILE, one per line.
best() { sort -n "$1" | tail -n1; }
median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

echo
echo "ops/sec, $NUM keys, $ROUNDS round(s): best and median per system;"
echo "sb/X = storebench / X (best over best, median over median)"
line=$(printf '%-19s' "")
for s in "${SYSTEMS[@]}"; do line+=$(printf ' %-19s' " $s"); done
for s in "${SYSTEMS[@]:1}"; do line+=$(printf ' %-15s' " sb/$s"); done
echo "${line%"${line##*[! ]}"}"
line=$(printf '%-19s' benchmark/order)
for _ in "${SYSTEMS[@]}"; do line+=$(printf ' %9s %9s' best median); done
for _ in "${SYSTEMS[@]:1}"; do line+=$(printf ' %7s %7s' best median); done
echo "$line"
for b in "${BENCHES[@]}"; do
	line=$(printf '%-19s' "$b")
	declare -A B=() M=()
	for s in "${SYSTEMS[@]}"; do
		f=$LOGS/$s.${b%/*}.${b#*/}
		if [[ -s $f ]]; then
			B[$s]=$(best "$f") M[$s]=$(median "$f")
		else
			B[$s]=- M[$s]=-
		fi
		line+=$(printf ' %9s %9s' "${B[$s]}" "${M[$s]}")
	done
	for s in "${SYSTEMS[@]:1}"; do
		if [[ ${B[$s]} == - || ${B[storebench]} == - ]]; then
			line+=$(printf ' %7s %7s' - -)
		else
			line+=$(printf ' %7s %7s' "$(ratio "${B[storebench]}" "${B[$s]}")" \
				"$(ratio "${M[storebench]}" "${M[$s]}")")
		fi
	done
	echo "$line"
done
[[ -z $KEEP ]] && rm -rf -- "$LOGS"
exit 0
