#!/bin/bash
# test_elastic_vs_bloom.sh BUILD_DIR: tools/bench/elastic-vs-bloom.sh at a
# toy size (20,000 keys, 5,000 lookups, one round):
#  1. without -c: exits 0, the table has a row of numbers per policy and
#     says the page cache is not limited;
#  2. with -c 64: exits 0, says which memory cgroup it used and the limit,
#     every run starts with none of its store in the page cache (when
#     fincore is there), a run reads from the device (disk KiB per
#     lookup above 0: the store's files were evicted), its cgroup's page cache
#     and peak stay within the limit, and no cgroup of its own is left;
#  3. the stores go at the end, or stay with KEEP=1;
#  4. usage errors (-c not a number, -c 0, no BUILD_DIR) exit 2.
# Skips (77) without root or without a memory cgroup (then -c's refusal,
# exit 2 with a message naming the missing cgroup, is checked instead).
set -u
B=$(cd "${1:?usage: test_elastic_vs_bloom.sh BUILD_DIR}" && pwd)
EVB=$(cd "$(dirname "$0")/../../tools/bench" && pwd)/elastic-vs-bloom.sh
skip() { echo "test_elastic_vs_bloom: SKIPPED: $*" >&2; exit 77; }
[[ $(id -u) == 0 ]] || skip "not root (-c makes a memory cgroup)"
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-evbtest.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "test_elastic_vs_bloom: FAIL: $*" >&2; fails=$((fails + 1)); }
num='[0-9]+(\.[0-9]+)?'
rows() { # the table's four rows, each with its numbers
	local row
	for row in "elastic:6x2" "bloom:4" "bloom:10" "elastic:6x2 no budget"; do
		grep -Eq "^$row +$num \( *$num\) +${num}x +$num +${num}x +$num +$num$" "$1" ||
			fail "no row '$row' with numbers"
	done
}

# 1. No limit, the stores kept for 2.
KEEP=1 DIR=$T/stores "$EVB" "$B" 20000 5000 1 >"$T/out1" 2>&1
rc=$?
((rc == 0)) || fail "no -c: exit $rc"
rows "$T/out1"
grep -q "^page cache not limited; stores on disk: elastic:6x2 [0-9]* MiB" "$T/out1" ||
	fail "no -c: no 'page cache not limited' line"
# 3. KEEP=1 kept them.
[[ -f $T/stores/bloom-4-20000/.filled ]] || fail "KEEP=1 did not keep the stores"
((fails == 0)) || sed 's/^/  | /' "$T/out1" >&2

# 2. -c 64 on the kept stores.
cgroups() { # this script's cgroups in every memory hierarchy
	awk '$3 == "cgroup2" || ($3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/) { print $2 }' /proc/mounts |
		while read -r m; do ls -d "$m"/elastic-vs-bloom.* 2>/dev/null; done
}
before=$(cgroups) device=0
DIR=$T/stores "$EVB" -c 64 "$B" 20000 5000 1 >"$T/out2" 2>&1
rc=$?
if ((rc == 2)) && grep -q "needs a memory cgroup" "$T/out2"; then
	[[ -d $T/stores ]] || fail "-c refused, but the stores went"
	# What ran before the refusal counts: a failure there is no skip.
	((fails == 0)) || { echo "test_elastic_vs_bloom: $fails failure(s)" >&2; exit 1; }
	skip "no memory cgroup here (-c refused with exit 2, as it should)"
fi
((rc == 0)) || fail "-c 64: exit $rc"
rows "$T/out2"
grep -Eq "^page cache limit 64 MiB \(cgroup v[12]\), store files evicted before each run" "$T/out2" ||
	fail "-c 64: no limit line"
[[ $(grep -c "^round 1 " "$T/out2") == 4 ]] || fail "-c 64: not 4 runs"
while read -r line; do
	[[ $line =~ KiB\ from\ the\ device\ per\ lookup ]] || continue
	k=$(sed -E 's/.* ([0-9.]+) KiB from the device.*/\1/' <<<"$line")
	awk -v k="$k" 'BEGIN { exit !(k > 0) }' && device=1
	if command -v fincore >/dev/null; then
		[[ $line == *"store cached before 0 MiB"* ]] || fail "store in the page cache: $line"
	fi
	c=$(sed -E 's/.*cgroup page cache ([0-9]+) MiB, peak ([0-9]+) MiB$/\1 \2/' <<<"$line")
	read -r cache peak <<<"$c"
	[[ $cache =~ ^[0-9]+$ && $peak =~ ^[0-9]+$ ]] || fail "no cgroup figures: $line"
	((${cache:-99} <= 64 && ${peak:-99} <= 64)) || fail "over the limit: $line"
done <"$T/out2"
((device)) || fail "-c 64: no run read from the device"
[[ $(cgroups) == "$before" ]] || fail "a cgroup left: $(cgroups)"
# 3. Without KEEP the stores go.
[[ -e $T/stores ]] && fail "the stores were left without KEEP=1"
((fails == 0)) || sed 's/^/  | /' "$T/out2" >&2

# 4. Usage errors.
for args in "-c abc $B" "-c 0 $B" "-c" ""; do
	# shellcheck disable=SC2086 # the words of args
	"$EVB" $args >"$T/out4" 2>&1
	rc=$?
	((rc == 2)) || { fail "'$args': exit $rc, not 2"; sed 's/^/  | /' "$T/out4" >&2; }
done

((fails == 0)) || exit 1
echo "test_elastic_vs_bloom: ok"
