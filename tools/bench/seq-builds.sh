#!/bin/bash
# seq-builds.sh ROUNDS SIZE_MIB NAME=BUILD_DIR...: sequential write and read
# of one file of SIZE_MIB MiB on one lsmfs per build, each over two disk
# directories (mkfs defaults; MKFS_OPTS adds options, e.g. "--chunk-size
# 1048576"), all mounted at once under one scratch directory ($TMPDIR or
# /var/tmp).  Per round the builds run in a new random order: write (dd,
# 1 MiB blocks, fsync at the end, the page cache written back and dropped
# before), then read it back cold (the page cache dropped: both the
# mount's and the disks') to /dev/null, then remove it.  Prints per phase
# and build the best round in MiB/s (a shared machine only ever slows a
# run down) with the median beside it, and each build against the first.
# For comparing versions of the daemon side by side:
#   git worktree add /tmp/old HEAD~1 && meson setup /tmp/old/build /tmp/old && ninja -C /tmp/old/build
#   tools/bench/seq-builds.sh 5 2048 old=/tmp/old/build new=build
# A build may be followed by mkfs options of its own, after commas
# (NAME=BUILD_DIR,OPT,OPT...): one copy against two of the same build,
#   tools/bench/seq-builds.sh 5 2048 one=build two=build,--data-copies,2
# Needs root (drop_caches), fuse3, python3.
set -euo pipefail
rounds=${1:?usage: seq-builds.sh ROUNDS SIZE_MIB NAME=BUILD_DIR...} mib=${2:?SIZE_MIB}
shift 2
[[ $(id -u) == 0 ]] || { echo "seq-builds: needs root (to drop the page cache)" >&2; exit 2; }
declare -A B O
order=()
for kv in "$@"; do
	v=${kv#*=}
	B[${kv%%=*}]=$(cd "${v%%,*}" && pwd)
	O[${kv%%=*}]=$([[ $v == *,* ]] && tr ',' ' ' <<<"${v#*,}" || true)
	order+=("${kv%%=*}")
done
S=$(mktemp -d "${TMPDIR:-/var/tmp}/seq-builds.XXXXXX")
cleanup() {
	for v in "${!B[@]}"; do fusermount3 -u "$S/$v/mnt" 2>/dev/null || true; done
	sleep 1
	rm -rf "$S"
}
trap cleanup EXIT
for v in "${!B[@]}"; do
	mkdir -p "$S/$v/d0" "$S/$v/d1" "$S/$v/mnt"
	# shellcheck disable=SC2086
	"${B[$v]}/mkfs/mkfs.lsmfs" -q ${MKFS_OPTS:-} ${O[$v]} "$S/$v/d0" "$S/$v/d1"
	"${B[$v]}/fs/lsmfs" "$S/$v/d0:$S/$v/d1" "$S/$v/mnt"
done
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# MiB/s of a dd run: its own figure, from bytes and seconds.
rate() { awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print $1 / $(i - 1) / 1048576 }'; }
for ((r = 0; r < rounds; r++)); do
	for v in $(printf '%s\n' "${!B[@]}" | shuf); do
		f=$S/$v/mnt/f
		drop
		w=$(dd if=/dev/zero of="$f" bs=1M count="$mib" conv=fsync 2>&1 | rate)
		drop
		rd=$(dd if="$f" of=/dev/null bs=1M 2>&1 | rate)
		rm -f "$f"
		echo "$v write $w"
		echo "$v read $rd"
	done
done >"$S/results"
python3 - "$S/results" "${order[@]}" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    v, phase, rate = line.split()
    d[(phase, v)].append(float(rate))
builds = sys.argv[2:]
for phase in ("write", "read"):
    base = max(d[(phase, builds[0])])
    cells = []
    for v in builds:
        best, med = max(d[(phase, v)]), statistics.median(d[(phase, v)])
        cells.append(f"{v}={best:.0f} (median {med:.0f}, {best / base:.2f}x)")
    print(f"{phase} MiB/s: " + "  ".join(cells))
PY
