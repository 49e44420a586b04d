#!/usr/bin/env bash
#
# store-vs-rocksdb.sh: run storebench (lsmfs store) and RocksDB's db_bench
# side by side with the same workload, and tabulate ops/sec.
#
# Each round runs two jobs per system, each on a fresh database directory:
#   seq:    --benchmarks=fillseq
#   random: --benchmarks=fillrandom,readrandom,readseq,overwrite
# so readrandom and readseq read what fillrandom wrote, and overwrite writes
# into a populated database.  The machine is noisy, so there are R rounds
# and in every round the four runs (2 systems x 2 jobs) go in a new random
# order.  The table gives, per benchmark, the best and the median ops/sec of
# each system and the ratios storebench/db_bench.
#
# Both systems get the same explicit flags (see COMMON below); everything
# else stays at each system's default (level shape, background threads).
# -m instead measures storebench's peak RSS during a fillrandom of 10M keys
# with default options, against the 1 GiB target.
#
# Exit: 0 ok, 1 a run failed, 2 usage.
set -euo pipefail

PROG=${0##*/}
ROUNDS=3
NUM=
BUILD=./build
WORK=${TMPDIR:-/tmp}
KEEP=
MEMORY=0
DB_BENCH=${DB_BENCH:-/usr/bin/db_bench}
CACHE=8388608
WBUF=8388608

usage() {
	cat <<EOF
usage: $PROG [-r ROUNDS] [-n NUM] [-w WORKDIR] [-o LOGDIR] [BUILD_DIR]
       $PROG -m [-n NUM] [-w WORKDIR] [BUILD_DIR]
       $PROG -h

Run storebench (BUILD_DIR/tools/storebench, BUILD_DIR default ./build) and
RocksDB's db_bench ($DB_BENCH, Debian package rocksdb-tools; set DB_BENCH to
use another) on the same workload and compare ops/sec.

  -r ROUNDS   rounds, each in a new interleaved order (default 3)
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

# getopts knows no long options: turn --num=N / --num N into -n N.
args=()
while (($#)); do
	case $1 in
	--num=*) args+=(-n "${1#--num=}") ;;
	--num) shift; args+=(-n "${1:-}") ;;
	--help) args+=(-h) ;;
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
	:) echo "$PROG: -$OPTARG needs a value" >&2; exit 2 ;;
	*) echo "$PROG: unknown option -$OPTARG (try -h)" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if (($# > 1)); then
	echo "$PROG: too many arguments (try -h)" >&2
	exit 2
fi
(($#)) && BUILD=$1
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "$PROG: -r: not a positive number: $ROUNDS" >&2; exit 2; }
if [[ -n $NUM && ! $NUM =~ ^[1-9][0-9]*$ ]]; then
	echo "$PROG: -n: not a positive number: $NUM" >&2
	exit 2
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
if [[ ! -x $DB_BENCH ]]; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		echo "$PROG: $DB_BENCH missing; installing rocksdb-tools" >&2
		apt-get install -y rocksdb-tools >&2 || die "apt-get install rocksdb-tools failed"
	fi
	[[ -x $DB_BENCH ]] || die "$DB_BENCH: not found; install it: apt-get install rocksdb-tools (as root)"
fi

COMMON=(--num="$NUM" --key_size=16 --value_size=100 --compression_type=lz4
	--compression_ratio=0.5 --bloom_bits=10 --threads=1 --sync=0
	"--cache_size=$CACHE" "--write_buffer_size=$WBUF" --use_existing_db=0
	--histogram=0)
DB_BENCH_ONLY=(--disable_wal=0)
BENCHES=(fillseq fillrandom overwrite readrandom readseq)
declare -A JOB=([seq]=fillseq [random]="fillrandom,readrandom,readseq,overwrite")

echo "storebench: $STOREBENCH"
echo "db_bench:   $DB_BENCH ($("$DB_BENCH" --version 2>/dev/null | head -n1 || echo '?'))"
echo "flags:      ${COMMON[*]}"
echo "            db_bench also ${DB_BENCH_ONLY[*]}; write buffer and block cache are"
echo "            set explicitly to 8 MiB for both (storebench's defaults); the level"
echo "            shape and background threads stay at each system's default"
echo "jobs:       seq = ${JOB[seq]}; random = ${JOB[random]} (fresh db each)"
echo "rounds:     $ROUNDS; logs in $LOGS"
if "$DB_BENCH" --benchmarks=fillseq --num=1 --db="$LOGS/probe.db" 2>&1 | grep -q 'Assertions are enabled'; then
	echo "note:       this db_bench build has assertions enabled, which slows it down"
fi
rm -rf -- "$LOGS/probe.db"
echo

# run SYSTEM JOB ROUND: one run on a fresh directory; append ops/sec per
# benchmark to $LOGS/SYSTEM.BENCH.
run() {
	local sys=$1 job=$2 round=$3 log out
	log=$LOGS/$sys.$job.$round.log
	DBDIR=$(mktemp -d "$WORK/$sys-$job.XXXXXX")
	local seed=$((round * 1000 + 7))
	sync
	if [[ $sys == storebench ]]; then
		"$STOREBENCH" "${COMMON[@]}" --seed=$seed --benchmarks="${JOB[$job]}" \
			--db="$DBDIR" >"$log" 2>&1 || die "storebench ${JOB[$job]} failed; see $log"
	else
		"$DB_BENCH" "${COMMON[@]}" "${DB_BENCH_ONLY[@]}" --seed=$seed \
			--benchmarks="${JOB[$job]}" --db="$DBDIR" >"$log" 2>&1 ||
			die "db_bench ${JOB[$job]} failed; see $log"
	fi
	rm -rf -- "$DBDIR"
	DBDIR=
	# db_bench writes "... finished N ops" progress with carriage returns
	# and no newline, so result lines may follow it on the same line.
	out=$(tr '\r' '\n' <"$log" | sed -n -E \
		's/^([a-z]+) +: +[0-9.]+ micros\/op ([0-9]+) ops\/sec.*/\1 \2/p')
	[[ -n $out ]] || die "$sys ${JOB[$job]}: no results; see $log"
	local name ops
	while read -r name ops; do
		echo "$ops" >>"$LOGS/$sys.$name"
		printf '  %-10s %-11s %12s ops/sec\n' "$sys" "$name" "$ops"
	done <<<"$out"
}

for ((round = 1; round <= ROUNDS; round++)); do
	mapfile -t order < <(printf '%s\n' storebench:seq storebench:random \
		db_bench:seq db_bench:random | shuf)
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
echo "ops/sec, $NUM keys, $ROUNDS round(s); ratio = storebench / db_bench"
printf '%-12s %12s %12s %12s %12s %8s %8s\n' benchmark "sb best" "sb median" \
	"rdb best" "rdb median" "r best" "r median"
for b in "${BENCHES[@]}"; do
	s=$LOGS/storebench.$b r=$LOGS/db_bench.$b
	if [[ ! -s $s || ! -s $r ]]; then
		printf '%-12s %12s\n' "$b" "(missing)"
		continue
	fi
	sb=$(best "$s") sm=$(median "$s") rb=$(best "$r") rmed=$(median "$r")
	printf '%-12s %12s %12s %12s %12s %8s %8s\n' "$b" "$sb" "$sm" "$rb" "$rmed" \
		"$(ratio "$sb" "$rb")" "$(ratio "$sm" "$rmed")"
done
[[ -z $KEEP ]] && rm -rf -- "$LOGS"
exit 0
