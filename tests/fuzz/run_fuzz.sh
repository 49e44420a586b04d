#!/usr/bin/env bash
# run_fuzz.sh: one harness of the `fuzz` suite.
#   run_fuzz.sh NAME HARNESS SEEDS_EXE MKFS REGRESS_DIR WORK_DIR
# 1. Makes the seed corpora (SEEDS_EXE: files the real code writes).
# 2. Replays every input in REGRESS_DIR/NAME (each once crashed it).
# 3. Fuzzes for $FUZZ_SECONDS (default $FUZZ_DEFAULT_SECONDS, else 30)
#    under ASan/UBSan with leak detection, hang detection at 10 s an input
#    and a 2 GiB memory limit.  New inputs go to WORK_DIR/NAME/corpus,
#    crashes to WORK_DIR/NAME/crashes/ (crash-*, leak-*, timeout-*, oom-*),
#    which this prints and keeps.
# Exit 0 when nothing crashed, leaked or hung, else 1.
set -euo pipefail
name=$1 exe=$2 seeds_exe=$3 mkfs=$4 regress=$5/$1 work=$6/$1
secs=${FUZZ_SECONDS:-${FUZZ_DEFAULT_SECONDS:-30}}
mkdir -p "$work/corpus" "$work/crashes"
rm -rf "$work/seeds"
"$seeds_exe" "$work/seeds" "$mkfs"
[ -d "$work/seeds/$name" ] || { echo "run_fuzz: no seeds for $name" >&2; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
flags=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -detect_leaks=1
       -artifact_prefix="$work/crashes/")

inputs=()
if [ -d "$regress" ]; then
	while IFS= read -r -d '' f; do inputs+=("$f"); done \
		< <(find "$regress" -type f -print0 | sort -z)
fi
if [ ${#inputs[@]} -gt 0 ]; then
	echo "run_fuzz: $name: replaying ${#inputs[@]} regression inputs"
	"$exe" "${flags[@]}" "${inputs[@]}"
fi

echo "run_fuzz: $name: fuzzing for $secs s (seeds: $(ls "$work/seeds/$name" | wc -l))"
dirs=("$work/corpus" "$work/seeds/$name")
[ -d "$regress" ] && dirs+=("$regress")
rc=0
# Harnesses' stdout would fill the log: closed (stderr stays, for the
# sanitizers' reports).
"$exe" "${flags[@]}" -max_total_time="$secs" -close_fd_mask=1 -print_final_stats=1 \
	"${dirs[@]}" || rc=$?
if [ "$rc" != 0 ] || [ -n "$(ls -A "$work/crashes")" ]; then
	echo "run_fuzz: $name: FAILED (exit $rc); inputs kept in $work/crashes:" >&2
	ls -l "$work/crashes" >&2
	exit 1
fi
echo "run_fuzz: $name: clean"
