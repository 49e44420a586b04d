#!/bin/bash
# elastic-vs-bloom.sh BUILD_DIR [NUM] [READS] [ROUNDS]: the filter policies
# under one filter memory budget (store/FILTERS.md "Filter memory").
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
# the medians of data block reads and of filter false positives per
# lookup, and the ratios
# to bloom:4, the standard Bloom filter that fits the budget.
# DIR (default /var/tmp/elastic-vs-bloom) holds the stores; KEEP=1 keeps
# them and reuses them on the next run.
set -euo pipefail
B=$(cd "${1:?usage: elastic-vs-bloom.sh BUILD_DIR [NUM] [READS] [ROUNDS]}" && pwd)
num=${2:-10000000} reads=${3:-2000000} rounds=${4:-3}
sb=$B/tools/storebench
dir=${DIR:-/var/tmp/elastic-vs-bloom}
budget=$((num / 2))
common=(--num="$num" --key_size=16 --value_size=100 --cache_size=8388608)
policies=(elastic:6x2 bloom:4 bloom:10)
runs=("${policies[@]}" unbounded)
mkdir -p "$dir"
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$dir"' EXIT

for p in "${policies[@]}"; do
	d=$dir/${p/:/-}-$num
	[[ -f $d/.filled ]] && continue
	rm -rf "$d"
	echo "fill $p: $("$sb" "${common[@]}" --benchmarks=fillseq,overwrite,waitforcompaction \
		--seed=1 --db="$d" --filter="$p" | grep -E '^overwrite' | tr -s ' ')"
	touch "$d/.filled"
done

declare -A ops blocks fps
for ((r = 0; r < rounds; r++)); do
	for run in $(printf '%s\n' "${runs[@]}" | shuf); do
		p=$run fm=$budget
		[[ $run == unbounded ]] && p=elastic:6x2 fm=0
		out=$("$sb" "${common[@]}" --benchmarks=readrandom --use_existing_db=1 \
			--reads="$reads" --db="$dir/${p/:/-}-$num" --filter="$p" \
			--filter_memory="$fm" --read_dist=zipf:0.99 --absent_ratio=0.5 --seed=$((r + 7))) ||
			{ echo "elastic-vs-bloom: storebench failed (exit $?) on $run" >&2; exit 1; }
		o=$(awk '/^readrandom/ { print $5 }' <<<"$out")
		b=$(awk '/data block reads per lookup/ { print $(NF - 5) }' <<<"$out")
		f=$(awk -v n="$reads" '/false positives/ { print $(NF - 13) / n }' <<<"$out")
		echo "round $((r + 1)) $run: $o ops/s, $b block reads, $f false positives per lookup"
		ops[$run]+="$o " blocks[$run]+="$b " fps[$run]+="$f "
	done
done

best() { tr ' ' '\n' <<<"$1" | grep . | sort -g | tail -1; }
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "$num keys, $reads lookups (half absent, zipf 0.99), 8 MiB block cache, filter budget $budget bytes; best of $rounds rounds (median)"
printf '%-22s %20s %12s %14s %12s %14s\n' policy ops/s vs_bloom:4 "block reads/op" vs_bloom:4 "false pos/op"
base_o=$(best "${ops[bloom:4]}") base_b=$(median "${blocks[bloom:4]}")
for run in "${runs[@]}"; do
	o=$(best "${ops[$run]}") om=$(median "${ops[$run]}") b=$(median "${blocks[$run]}")
	f=$(median "${fps[$run]}")
	label=$run
	[[ $run == unbounded ]] && label="elastic:6x2 no budget"
	awk -v l="$label" -v o="$o" -v om="$om" -v bo="$base_o" -v b="$b" -v bb="$base_b" -v f="$f" \
		'BEGIN { printf "%-22s %9s (%8s) %11.2fx %14s %11.2fx %14.4f\n", l, o, om, o / bo, b, b / bb, f }' 
done
