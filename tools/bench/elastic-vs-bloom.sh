#!/bin/bash
# elastic-vs-bloom.sh [-c MiB] BUILD_DIR [NUM] [READS] [ROUNDS]: the filter
# policies under one filter memory budget (store/FILTERS.md "Filter memory").
# One store per policy, each filled the same way (fillseq then overwrite of
# NUM keys of 16 bytes with 100-byte values, then waitforcompaction, so
# that every key is present and older versions lie under newer ones in
# deeper levels), then per round, the policies in a new random order:
# readrandom of READS lookups, half of them for absent keys, zipf 0.99,
# an 8 MiB block cache and a filter budget of 4 bits per key (NUM / 2
# bytes).  Besides the budgeted policies, one store is read with every
# unit of its ElasticBF filter loaded and no budget ("unbounded"): its
# data block reads are what the present keys alone cost, the floor no
# filter can go under.  Prints per policy the best round's ops/s (a
# shared machine only ever slows a run down) with the median beside it,
# the medians of data block reads, of filter false positives and of the
# KiB read from the device per lookup (storebench's getrusage figure),
# and the ratios to bloom:4, the standard Bloom filter that fits the
# budget.
#
# -c MiB: the page cache held below the store, where ElasticBF pays (a
# data block read a filter saves is then a read from the disk, not a copy
# from memory).  Each readrandom runs alone in a new memory cgroup
# limited to MiB (its page cache, storebench's own memory, its filters and
# block cache all count), after the store's files have been evicted from
# the page cache (sync, then dd iflag=nocache: POSIX_FADV_DONTNEED per
# file; the other files of the machine are left alone).  cgroup v2 (a
# cgroup2 mount whose cgroup.controllers has memory) is used if there is
# one, else cgroup v1's memory hierarchy; the script says which, and
# exits 2 if neither is there or it cannot make a cgroup (run it as
# root).  Per run it prints the page cache the cgroup held at the end and
# its peak memory use; the store's size on disk and the limit head the
# table.  Without -c the page cache is not limited: each store is read
# whole once before the rounds, so that every round reads it from memory.  storebench killed by the
# limit (exit 137, the OOM killer) means MiB is below its own memory.
#
# DIR (default /var/tmp/elastic-vs-bloom) holds the stores; KEEP=1 keeps
# them and reuses them on the next run.
set -euo pipefail
usage="usage: elastic-vs-bloom.sh [-c MiB] BUILD_DIR [NUM] [READS] [ROUNDS]"
limit_mib=
while getopts c: o; do
	case $o in
	c) limit_mib=$OPTARG ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ -z $limit_mib || $limit_mib =~ ^[1-9][0-9]*$ ]] ||
	{ echo "elastic-vs-bloom: -c '$limit_mib' is not a number of MiB" >&2; exit 2; }
(($# >= 1 && $# <= 4)) || { echo "$usage" >&2; exit 2; }
B=$(cd "$1" && pwd) || { echo "elastic-vs-bloom: no build directory $1" >&2; exit 2; }
[[ -x $B/tools/storebench ]] || { echo "elastic-vs-bloom: no $B/tools/storebench" >&2; exit 2; }
num=${2:-10000000} reads=${3:-2000000} rounds=${4:-3}
sb=$B/tools/storebench
dir=${DIR:-/var/tmp/elastic-vs-bloom}
budget=$((num / 2))
common=(--num="$num" --key_size=16 --value_size=100 --cache_size=8388608)
policies=(elastic:6x2 bloom:4 bloom:10)
runs=("${policies[@]}" unbounded)

# The memory cgroups: cg_kind v1 or v2, cg_root the hierarchy's root,
# cg the current run's cgroup (removed on exit).
cg_kind='' cg_root='' cg=''
cg_find() {
	local v1='' v2='' _ mnt type opts
	while read -r _ mnt type opts _; do
		if [[ $type == cgroup2 && -z $v2 ]] &&
			grep -qw memory "$mnt/cgroup.controllers" 2>/dev/null; then
			v2=$mnt
		elif [[ $type == cgroup && ,$opts, == *,memory,* && -z $v1 ]]; then
			v1=$mnt
		fi
	done </proc/mounts
	if [[ -n $v2 ]]; then
		cg_kind=v2 cg_root=$v2
		grep -qw memory "$v2/cgroup.subtree_control" ||
			echo +memory >"$v2/cgroup.subtree_control" ||
			{ echo "elastic-vs-bloom: cannot enable the memory controller in $v2" >&2; exit 2; }
	elif [[ -n $v1 ]]; then
		cg_kind=v1 cg_root=$v1
	else
		echo "elastic-vs-bloom: -c needs a memory cgroup: no cgroup2 mount with the memory" \
			"controller and no cgroup v1 memory hierarchy in /proc/mounts" >&2
		exit 2
	fi
}

# -c without a memory cgroup is refused before anything is made or
# removed (the stores in DIR stay as they are).
[[ -z $limit_mib ]] || cg_find
mkdir -p "$dir"
cleanup() {
	[[ -n $cg && -d $cg ]] && rmdir "$cg" 2>/dev/null
	[[ ${KEEP:-0} == 1 ]] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# cg_new: a fresh cgroup limited to limit_mib (its peak starts at zero).
cg_new() {
	cg=$cg_root/elastic-vs-bloom.$$
	[[ -d $cg ]] && rmdir "$cg"
	mkdir "$cg" || { echo "elastic-vs-bloom: cannot make the cgroup $cg (not root?)" >&2; exit 2; }
	local bytes=$((limit_mib * 1048576))
	if [[ $cg_kind == v2 ]]; then
		echo "$bytes" >"$cg/memory.max"
		[[ ! -e $cg/memory.swap.max ]] || echo 0 >"$cg/memory.swap.max"
	else
		echo "$bytes" >"$cg/memory.limit_in_bytes"
		[[ ! -e $cg/memory.memsw.limit_in_bytes ]] || echo "$bytes" >"$cg/memory.memsw.limit_in_bytes"
	fi
}

# cg_report: the page cache the cgroup holds and its peak use, in MiB.
cg_report() {
	local cache peak
	if [[ $cg_kind == v2 ]]; then
		cache=$(awk '$1 == "file" { print $2 }' "$cg/memory.stat")
		peak=$(cat "$cg/memory.peak" 2>/dev/null || echo 0)
	else
		cache=$(awk '$1 == "cache" { print $2 }' "$cg/memory.stat")
		peak=$(cat "$cg/memory.max_usage_in_bytes")
	fi
	awk -v c="$cache" -v p="$peak" 'BEGIN { printf "%.0f %.0f", c / 1048576, p / 1048576 }'
}

# evict DIR: the store's files out of the page cache.
evict() {
	sync
	local f
	for f in "$1"/*; do
		[[ -f $f ]] && dd if="$f" iflag=nocache count=0 status=none
	done
}

# resident DIR: MiB of the store in the page cache (fincore, util-linux-extra), or "?".
resident() {
	command -v fincore >/dev/null || { echo "?"; return; }
	fincore -b -n -o RES "$1"/* | awk '{ r += $1 } END { printf "%.0f", r / 1048576 }'
}

for p in "${policies[@]}"; do
	d=$dir/${p/:/-}-$num
	[[ -f $d/.filled ]] && continue
	rm -rf "$d"
	echo "fill $p: $("$sb" "${common[@]}" --benchmarks=fillseq,overwrite,waitforcompaction \
		--seed=1 --db="$d" --filter="$p" | grep -E '^overwrite' | tr -s ' ')"
	touch "$d/.filled"
done

sizes=
for p in "${policies[@]}"; do
	sizes+="$p $(du -sm "$dir/${p/:/-}-$num" | cut -f1) MiB, "
done
if [[ -n $limit_mib ]]; then
	echo "page cache limit: $limit_mib MiB, a memory cgroup ($cg_kind) under $cg_root;" \
		"stores on disk: ${sizes%, }"
else
	for p in "${policies[@]}"; do
		cat "$dir/${p/:/-}-$num"/* >/dev/null
	done
fi

declare -A ops blocks fps disk
for ((r = 0; r < rounds; r++)); do
	for run in $(printf '%s\n' "${runs[@]}" | shuf); do
		p=$run fm=$budget
		[[ $run == unbounded ]] && p=elastic:6x2 fm=0
		d=$dir/${p/:/-}-$num
		args=("$sb" "${common[@]}" --benchmarks=readrandom --use_existing_db=1
			--reads="$reads" --db="$d" --filter="$p" --filter_memory="$fm"
			--read_dist=zipf:0.99 --absent_ratio=0.5 --seed=$((r + 7)))
		extra=
		if [[ -n $limit_mib ]]; then
			evict "$d"
			extra=", store cached before $(resident "$d") MiB"
			cg_new
			rc=0
			out=$(bash -c 'echo $$ >"$1/cgroup.procs" && exec "${@:2}"' _ "$cg" "${args[@]}") ||
				rc=$?
			read -r cache peak <<<"$(cg_report)"
			extra+=" after $(resident "$d") MiB, cgroup page cache $cache MiB, peak $peak MiB"
			rmdir "$cg"
			cg=
			if ((rc == 137)); then
				echo "elastic-vs-bloom: storebench killed (exit 137) on $run: the limit" \
					"$limit_mib MiB is below its own memory, raise -c" >&2
				exit 1
			fi
		else
			rc=0
			out=$("${args[@]}") || rc=$?
		fi
		((rc == 0)) || { echo "elastic-vs-bloom: storebench failed (exit $rc) on $run" >&2; exit 1; }
		o=$(awk '/^readrandom/ { print $5 }' <<<"$out")
		b=$(awk '/data block reads per lookup/ { print $(NF - 5) }' <<<"$out")
		f=$(awk -v n="$reads" '/false positives/ { print $(NF - 13) / n }' <<<"$out")
		k=$(awk '/^device/ { print $(NF - 6) }' <<<"$out")
		echo "round $((r + 1)) $run: $o ops/s, $b block reads, $f false positives," \
			"$k KiB from the device per lookup$extra"
		ops[$run]+="$o " blocks[$run]+="$b " fps[$run]+="$f " disk[$run]+="$k "
	done
done

best() { tr ' ' '\n' <<<"$1" | grep . | sort -g | tail -1; }
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "$num keys, $reads lookups (half absent, zipf 0.99), 8 MiB block cache, filter budget $budget bytes; best of $rounds rounds (median)"
if [[ -n $limit_mib ]]; then
	echo "page cache limit $limit_mib MiB (cgroup $cg_kind), store files evicted before each run; stores on disk: ${sizes%, }"
else
	echo "page cache not limited; stores on disk: ${sizes%, }"
fi
printf '%-22s %20s %12s %14s %12s %14s %12s\n' policy ops/s vs_bloom:4 "block reads/op" vs_bloom:4 \
	"false pos/op" "disk KiB/op"
base_o=$(best "${ops[bloom:4]}") base_b=$(median "${blocks[bloom:4]}")
for run in "${runs[@]}"; do
	o=$(best "${ops[$run]}") om=$(median "${ops[$run]}") b=$(median "${blocks[$run]}")
	f=$(median "${fps[$run]}") k=$(median "${disk[$run]}")
	label=$run
	[[ $run == unbounded ]] && label="elastic:6x2 no budget"
	awk -v l="$label" -v o="$o" -v om="$om" -v bo="$base_o" -v b="$b" -v bb="$base_b" -v f="$f" -v k="$k" \
		'BEGIN { printf "%-22s %9s (%8s) %11.2fx %14s %11.2fx %14.4f %12s\n", l, o, om, o / bo, b, b / bb, f, k }'
done
