#!/usr/bin/env bash
# test.sh: install what is needed, build, and run every test suite twice:
# a normal build (build/) and an AddressSanitizer + UBSan build (build-asan/);
# then the fuzz suite (build-fuzz/: clang, libFuzzer + ASan/UBSan, each
# harness FUZZ_SECONDS, default 30, two at a time).
# Under CI (CI=true) warnings are errors.  Prints "N passed, N failed" last.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

werror=()
[ "${CI:-}" = true ] && werror=(-Dwerror=true)

setup() { # dir, extra meson args...
	local dir=$1; shift
	if [ -d "$dir" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

passed=0 failed=0 skipped=0
run_suites() { # dir [suite...]: default every suite but fuzz
	local dir=$1 log rc=0; shift
	local suites=("$@") args=()
	[ ${#suites[@]} -gt 0 ] || suites=(unit store fs tools)
	for s in "${suites[@]}"; do args+=(--suite "$s"); done
	log=$(mktemp)
	meson test -C "$dir" --print-errorlogs --num-processes 2 "${args[@]}" \
		2>&1 | tee "$log" || rc=$?
	local ok fail skip
	ok=$(awk '/^Ok:/{print $2}' "$log" | tail -1)
	fail=$(awk '/^Fail:/{print $2}' "$log" | tail -1)
	skip=$(awk '/^Skipped:/{print $2}' "$log" | tail -1)
	local to; to=$(awk '/^Timeout:/{print $2}' "$log" | tail -1)
	passed=$((passed + ${ok:-0}))
	failed=$((failed + ${fail:-0} + ${to:-0}))
	skipped=$((skipped + ${skip:-0}))
	rm -f "$log"
	[ "$rc" = 0 ] || failed=$((failed > 0 ? failed : 1))
}

setup build "${werror[@]}"
ninja -C build
run_suites build

setup build-asan -Db_sanitize=address,undefined -Db_lundef=false "${werror[@]}"
ninja -C build-asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# The normal build kills add/remove at 32 points; here 12 look for memory
# errors on the same paths, keeping CI under its time.  So for the kills of
# rebalances with two copies of file data: 4 here, 10 there.
export LSMFS_MEMBER_KILLS=12 LSMFS_REBALANCE_KILLS=4
run_suites build-asan

# The fuzz suite: a clang build of its own (libFuzzer), only the harnesses'
# suite.  Their ASan/UBSan options are set by tests/fuzz/run_fuzz.sh.
CC=clang setup build-fuzz -Dfuzz=true -Dtests=false -Db_sanitize=address,undefined \
	-Db_lundef=false "${werror[@]}"
ninja -C build-fuzz
run_suites build-fuzz fuzz

echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
