#!/usr/bin/env bash
#
# walk.sh: walking a large tree on lsmfs against ext4 and mergerfs, in one
# run: FILES files of 100 bytes in DIRS directories are made on each, then
# timed, cold (the filesystem remounted and the page cache dropped before
# each command) and warm (the same command again at once):
#   ls -lR    every name with its attributes (and, with SELinux support in
#             ls, a getxattr of security.selinux per name)
#   du -s     every name's blocks
#   find      find . -type f, counted
#   stat      lstat of STATS paths drawn at random (the same for all)
# and the creation itself (python: open, write, close per file).
#
# The systems, all under one scratch directory on the same disk (TMPDIR,
# default /var/tmp):
#   lsmfs     mkfs.lsmfs defaults over two disk directories (the build's)
#   ext4      a loop image (mkfs.ext4 -N for the inodes), mounted
#   mergerfs  over two plain directories (cache.files=off, as compare.sh)
# ROUNDS rounds of the timed commands, the systems in a new random order
# each round; the table gives each figure's best round (seconds, lower is
# better) with the median beside it, and the speed of lsmfs against each
# (their seconds over lsmfs's: above 1, lsmfs is faster).
#
# -x NAME=BUILD_DIR adds another lsmfs, from another build, as system NAME
# (repeatable), to compare versions side by side in the same run.
# -O NAME=OPTIONS mounts the lsmfs system NAME (lsmfs or a -x name) of
# the run with -o OPTIONS (repeatable; the options of one NAME add up), to
# compare settings in the same run: -x with the same build and -O give a
# second lsmfs that differs only in them.
#
# Usage: walk.sh [-n FILES] [-d DIRS] [-s STATS] [-r ROUNDS] [-o SYSTEMS]
#        [-x NAME=BUILD_DIR]... [-O NAME=OPTIONS]... [BUILD_DIR]
#   defaults: 1000000 files, 1000 directories, 100000 stats, 3 rounds,
#   systems lsmfs,ext4,mergerfs, build ./build.  Needs root (mounts,
#   drop_caches), fuse3, mergerfs for its column, e2fsprogs.
# Exit: 0 ok, 1 a step failed, 2 usage.
set -euo pipefail

PROG=${0##*/}
FILES=1000000 DIRS=1000 STATS=100000 ROUNDS=3 SYSTEMS=lsmfs,ext4,mergerfs
declare -A BUILDOF=() # lsmfs systems: their build directories
declare -A OPTSOF=()  # lsmfs systems: their mount options (-O)
EXTRA=()
usage() { sed -n 's/^# \{0,1\}//; /^Usage:/,/^Exit:/p' "$0" >&2; exit 2; }
while getopts n:d:s:r:o:x:O:h o; do
	case $o in
	n) FILES=$OPTARG ;;
	d) DIRS=$OPTARG ;;
	s) STATS=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	o) SYSTEMS=$OPTARG ;;
	x) [[ $OPTARG == [a-z]*=* && ${OPTARG%%=*} =~ ^[a-z][a-z0-9]*$ ]] || usage
	   BUILDOF[${OPTARG%%=*}]=$(cd "${OPTARG#*=}" && pwd) || usage
	   EXTRA+=("${OPTARG%%=*}") ;;
	O) [[ $OPTARG =~ ^[a-z][a-z0-9]*=. ]] || usage
	   OPTSOF[${OPTARG%%=*}]=${OPTSOF[${OPTARG%%=*}]:+${OPTSOF[${OPTARG%%=*}]},}${OPTARG#*=} ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
BUILD=$(cd "${1:-./build}" && pwd) || usage
[[ $FILES =~ ^[1-9][0-9]*$ && $DIRS =~ ^[1-9][0-9]*$ && $STATS =~ ^[0-9]+$ &&
   $ROUNDS =~ ^[1-9][0-9]*$ ]] || usage
[[ $(id -u) == 0 ]] || { echo "$PROG: needs root (mounts, drop_caches)" >&2; exit 1; }
IFS=, read -r -a SYS <<<"$SYSTEMS"
BUILDOF[lsmfs]=$BUILD
SYS+=(${EXTRA[@]+"${EXTRA[@]}"})
for s in "${!OPTSOF[@]}"; do
	[[ -n ${BUILDOF[$s]:-} && " ${SYS[*]} " == *" $s "* ]] ||
		{ echo "$PROG: -O $s: no lsmfs system $s in this run" >&2; exit 2; }
done
for s in "${SYS[@]}"; do
	[[ -n ${BUILDOF[$s]:-} ]] && continue
	case $s in
	ext4) ;;
	mergerfs) command -v mergerfs >/dev/null || { echo "$PROG: no mergerfs here" >&2; exit 1; } ;;
	*) echo "$PROG: unknown system $s" >&2; exit 2 ;;
	esac
done

W=$(mktemp -d "${TMPDIR:-/var/tmp}/walk.XXXXXX")
declare -A MNT=([ext4]=$W/ext4 [mergerfs]=$W/merg)
for s in "${!BUILDOF[@]}"; do MNT[$s]=$W/$s; done
cleanup() {
	for s in "${!BUILDOF[@]}" mergerfs; do fusermount3 -u "${MNT[$s]}" 2>/dev/null || true; done
	umount "${MNT[ext4]}" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

# ---- mounting, cold ----
lsmfs_pid() { head -n1 "$W/$1-d0/.lsmfs/lock" 2>/dev/null; }
up() { # SYSTEM
	if [[ -n ${BUILDOF[$1]:-} ]]; then
		"${BUILDOF[$1]}/fs/lsmfs" ${OPTSOF[$1]:+-o "${OPTSOF[$1]}"} \
			"$W/$1-d0:$W/$1-d1" "${MNT[$1]}"
		return
	fi
	case $1 in
	ext4) mount -o loop "$W/ext4.img" "${MNT[ext4]}" ;;
	mergerfs) mergerfs -o cache.files=off,dropcacheonclose=true,category.create=mfs \
		"$W/m1:$W/m2" "${MNT[mergerfs]}" ;;
	esac
}
down() { # SYSTEM: unmounted, its daemon gone
	if [[ -n ${BUILDOF[$1]:-} ]]; then
		local pid; pid=$(lsmfs_pid "$1")
		fusermount3 -u "${MNT[$1]}"
		while [[ -n $pid && -e /proc/$pid && $(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null) != Z ]]; do
			sleep 0.05
		done
		return
	fi
	case $1 in
	ext4) umount "${MNT[ext4]}" ;;
	mergerfs) fusermount3 -u "${MNT[mergerfs]}"; sleep 0.2 ;;
	esac
}
cold() { down "$1"; sync; echo 3 > /proc/sys/vm/drop_caches; up "$1"; }

mkdir -p "${MNT[ext4]}" "$W/m1" "$W/m2" "${MNT[mergerfs]}"
for s in "${SYS[@]}"; do
	if [[ -n ${BUILDOF[$s]:-} ]]; then
		mkdir -p "$W/$s-d0" "$W/$s-d1" "${MNT[$s]}"
		"${BUILDOF[$s]}/mkfs/mkfs.lsmfs" -q "$W/$s-d0" "$W/$s-d1"
	fi
	case $s in
	ext4)
		# 4 KiB per file and per directory, twice over, and the inodes.
		truncate -s $(( (FILES + DIRS) * 8192 + (1 << 30) )) "$W/ext4.img"
		mkfs.ext4 -q -F -N $((FILES + DIRS + 1000)) "$W/ext4.img" ;;
	esac
	up "$s"
done

# ---- the tree, and the paths to stat ----
now() { date +%s.%N; }
declare -A T # T[phase,system,round]
make_tree() { # DIR: FILES files of 100 bytes in DIRS directories
	python3 - "$1" "$FILES" "$DIRS" <<'PY'
import os, sys
root, files, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = b"x" * 99 + b"\n"
per, extra = divmod(files, dirs)
for d in range(dirs):
    p = os.path.join(root, "d%04d" % d)
    os.mkdir(p)
    for f in range(per + (d < extra)):
        with open(os.path.join(p, "f%07d" % f), "wb") as fh:
            fh.write(data)
PY
}
python3 - "$FILES" "$DIRS" "$STATS" > "$W/paths" <<'PY'
import random, sys
files, dirs, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
per, extra = divmod(files, dirs)
rnd = random.Random(37)
for _ in range(n):
    d = rnd.randrange(dirs)
    print("d%04d/f%07d" % (d, rnd.randrange(per + (d < extra))))
PY
for s in "${SYS[@]}"; do
	t0=$(now)
	make_tree "${MNT[$s]}"
	sync -f "${MNT[$s]}"
	T[create,$s,0]=$(echo "$(now) - $t0" | bc)
	echo "$PROG: $s: $FILES files in $DIRS directories made in ${T[create,$s,0]} s" >&2
done

# ---- the timed walks ----
PHASES=(ls-lR du find stat)
run() { # PHASE DIR
	case $1 in
	ls-lR) (cd "$2" && LC_ALL=C ls -lR > /dev/null) ;;
	du) (cd "$2" && du -s > /dev/null) ;;
	find) local n; n=$(cd "$2" && find . -type f | wc -l)
		[[ $n == "$FILES" ]] || { echo "$PROG: find counted $n files in $2" >&2; return 1; } ;;
	stat) python3 - "$2" "$W/paths" <<'PY'
import os, sys
root = sys.argv[1]
with open(sys.argv[2]) as f:
    for line in f:
        os.lstat(os.path.join(root, line.rstrip("\n")))
PY
	;;
	esac
}
for ((r = 1; r <= ROUNDS; r++)); do
	for s in $(printf '%s\n' "${SYS[@]}" | shuf); do
		for p in "${PHASES[@]}"; do
			cold "$s"
			t0=$(now); run "$p" "${MNT[$s]}"; T[$p-cold,$s,$r]=$(echo "$(now) - $t0" | bc)
			t0=$(now); run "$p" "${MNT[$s]}"; T[$p-warm,$s,$r]=$(echo "$(now) - $t0" | bc)
		done
		echo "$PROG: round $r: $s done" >&2
	done
done

# ---- the table ----
best_med() { # PHASE SYSTEM: "best median"
	local k=$1 s=$2 r v=()
	if [[ $k == create ]]; then echo "${T[create,$s,0]} ${T[create,$s,0]}"; return; fi
	for ((r = 1; r <= ROUNDS; r++)); do v+=("${T[$k,$s,$r]}"); done
	printf '%s\n' "${v[@]}" | sort -g | awk '{ a[NR] = $1 } END { printf "%s %s\n", a[1], a[int(NR / 2) + 1] }'
}
echo "walk.sh: $FILES files of 100 B in $DIRS directories, $STATS stats, $ROUNDS rounds; seconds, best (median)"
for s in "${SYS[@]}"; do
	[[ -n ${OPTSOF[$s]:-} ]] && echo "  $s: mounted with -o ${OPTSOF[$s]}"
done
printf '%-12s' phase
for s in "${SYS[@]}"; do printf ' %-22s' "$s"; done
for s in "${SYS[@]}"; do [[ $s == lsmfs ]] || printf ' %-14s' "speed vs $s"; done
echo
for k in create ls-lR-cold ls-lR-warm du-cold du-warm find-cold find-warm stat-cold stat-warm; do
	printf '%-12s' "$k"
	declare -A b=()
	for s in "${SYS[@]}"; do
		read -r best med < <(best_med "$k" "$s")
		b[$s]=$best
		printf ' %-22s' "$(printf '%.2f (%.2f)' "$best" "$med")"
	done
	for s in "${SYS[@]}"; do
		[[ $s == lsmfs ]] && continue
		[[ -n ${b[lsmfs]:-} ]] || { printf ' %-14s' -; continue; }
		printf ' %-14s' "$(echo "${b[$s]} / ${b[lsmfs]}" | bc -l | xargs printf '%.2f')"
	done
	echo
done
