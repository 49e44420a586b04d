#!/bin/bash
# md-builds.sh ROUNDS NFILES NAME=BUILD_DIR...: mdbench (../shared/bench/
# mdbench.c: create, stat, readdir, read, unlink of NFILES 4 KiB files) on
# one lsmfs per build, each over two disk directories with the default
# store copies, all mounted at once under one scratch directory; per
# round the builds run in a new random order, each in a new directory.
# Prints per phase and build the best round (a shared machine only ever
# slows a run down) with the median beside it.  For comparing versions
# of the daemon side by side, e.g. a commit against its parent:
#   git worktree add /tmp/old HEAD~1 && meson setup /tmp/old/build /tmp/old && ninja -C /tmp/old/build
#   tools/bench/md-builds.sh 5 20000 old=/tmp/old/build new=build
# Needs root (or user_allow_other), fuse3, gcc, python3.
set -euo pipefail
rounds=${1:?usage: md-builds.sh ROUNDS NFILES NAME=BUILD_DIR...} n=${2:?NFILES}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
shared=$(cd "$here/../../../shared/bench" 2>/dev/null && pwd || true)
bin=${BENCH_BIN:-/tmp/lsmfs-bench-tools}
mkdir -p "$bin"
if [[ ! -x $bin/mdbench ]]; then
	[[ -f $shared/mdbench.c ]] || { echo "md-builds: no mdbench.c" >&2; exit 2; }
	gcc -O2 -Wall -o "$bin/mdbench" "$shared/mdbench.c"
fi
declare -A B
for kv in "$@"; do B[${kv%%=*}]=$(cd "${kv#*=}" && pwd); done
S=$(mktemp -d "${TMPDIR:-/var/tmp}/md-builds.XXXXXX")
cleanup() {
	for v in "${!B[@]}"; do fusermount3 -u "$S/$v/mnt" 2>/dev/null || true; done
	sleep 1
	rm -rf "$S"
}
trap cleanup EXIT
for v in "${!B[@]}"; do
	mkdir -p "$S/$v/d0" "$S/$v/d1" "$S/$v/mnt"
	"${B[$v]}/mkfs/mkfs.lsmfs" -q "$S/$v/d0" "$S/$v/d1"
	"${B[$v]}/fs/lsmfs" "$S/$v/d0:$S/$v/d1" "$S/$v/mnt"
done
for ((r = 0; r < rounds; r++)); do
	for v in $(printf '%s\n' "${!B[@]}" | shuf); do
		mkdir "$S/$v/mnt/r$r"
		"$bin/mdbench" "$S/$v/mnt/r$r" "$n" 4096 | awk -v v="$v" '{ print v, $1, $3 }'
	done
done >"$S/results"
python3 - "$S/results" "$rounds" "$n" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    v, phase, ops = line.split()
    d[(phase, v)].append(float(ops))
builds = sorted({k[1] for k in d})
print(f"{sys.argv[3]} files, {sys.argv[2]} rounds; ops/s, best (median)")
print("%-8s" % "phase" + "".join("%24s" % b for b in builds))
for phase in ["create", "stat", "readdir", "read", "unlink"]:
    print("%-8s" % phase + "".join("%12.0f (%9.0f)" % (max(d[(phase, b)]), statistics.median(d[(phase, b)])) for b in builds))
PY
