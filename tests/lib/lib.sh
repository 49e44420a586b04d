# lib.sh: what the shell tests that mount lsmfs share (tests/disk, fsck,
# inspect, stats), sourced after setting NAME (the test's name, for
# messages) with the build directory as $1.  Sets B, the binaries (MKFS
# LSMFS FSCK DISK INSPECT CHURN), T (a temporary directory, 755, removed at
# exit), M (the mount point, $T/mnt), fails; skips (77) without /dev/fuse.
# A test may define cleanup_more, run at exit before T goes, and ends with
# finish.
set -u
B=$(cd "${1:?usage: $NAME.sh BUILD_DIR}" && pwd)
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs FSCK=$B/tools/fsck/fsck.lsmfs
DISK=$B/tools/disk/lsmfs-disk INSPECT=$B/tools/inspect/lsmfs-inspect CHURN=$B/tests/disk/churn
if [[ ! -c /dev/fuse ]]; then
	echo "$NAME: SKIPPED: no /dev/fuse here" >&2
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-$NAME.XXXXXX")
chmod 755 "$T"
M=$T/mnt
fails=0
cleanup() {
	touch "$T/stop" 2>/dev/null
	fusermount3 -u "$M" 2>/dev/null
	if declare -F cleanup_more >/dev/null; then cleanup_more; fi
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "$NAME: FAIL: $*" >&2; fails=$((fails + 1)); }
say() { echo "$NAME: $*"; }
mounted() { grep -q " $M " /proc/self/mountinfo; }
# The daemon's pid, from the lock file of the first disk of LIST.
daemon_pid() { head -n1 "${1%%:*}/.lsmfs/lock" 2>/dev/null; }
# Is process PID running?  A zombie is not: it has exited, only its parent
# has not reaped it yet (a daemon's parent is init, which may take seconds,
# where kill -0 still succeeds).
alive() { # PID
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[[ ${st%% *} != Z ]]
}
# Unmount, and wait for the daemon to have finished closing (its last
# writes come after the kernel let go of the mount).
umount_wait() { # LIST
	local pid
	pid=$(daemon_pid "$1")
	fusermount3 -u "$M" || return 1
	for _ in $(seq 300); do
		if ! mounted && { [[ -z $pid ]] || ! alive "$pid"; }; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}
# Mount in the foreground, the daemon's log (stderr) into LOG, ARGS (options
# and the disk list) before $M; 1 when it does not come up.
mount_fg() { # LOG ARGS...
	local log=$1
	shift
	"$LSMFS" -f "$@" "$M" 2> "$log" &
	local pid=$!
	# Up to 30 s: a sanitizer build on a loaded machine can take over 10
	# to open its store (the loop ends as soon as the mount is there).
	for _ in $(seq 600); do
		mounted && return 0
		alive "$pid" || return 1
		sleep 0.05
	done
	return 1
}
sums() { (cd "$M" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
check_sums() { # WHAT: every file as $T/sums says
	local got
	got=$(sums)
	[[ $got == "$(cat "$T/sums")" ]] || fail "$1: checksums differ: $(diff <(echo "$got") "$T/sums" | head -5)"
}
fsck_clean() { # LIST WHAT
	local out rc
	out=$("$FSCK" -n "$1" 2>&1); rc=$?
	[[ $rc == 0 ]] || fail "$2: fsck -n exit $rc: $(grep -E 'LSMFS-|error|fsck' <<<"$out" | head -5)"
}
# The files under $M whose inode has chunk files in DISK's sections.
on_disk() { # DISK
	local inos
	inos=$(find "$1/.lsmfs/sections" -type f -printf '%f\n' | cut -d. -f1 | sort -u)
	(cd "$M" && find . -type f -printf '%i %P\n') |
		awk -v list="$(tr '\n' ' ' <<<"$inos")" \
			'BEGIN { n = split(list, a, " "); for (i = 1; i <= n; i++) w[a[i]] = 1 }
			 ($1 in w) { print "/" substr($0, index($0, " ") + 1) }' | sort
}
held() { # DISK: bytes of chunk files under DISK's sections
	find "$1/.lsmfs/sections" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}'
}
# SIGKILL part way through lsmfs-disk ARGS...: `daemon` runs it on LIST
# mounted and kills the daemon, `tool` runs it on LIST offline and kills
# it, DELAY seconds in; its output goes to $T/kill.out.  No mount is left.
# 1 when LIST would not mount.
kill_during() { # daemon|tool LIST DELAY ARGS...
	local who=$1 list=$2 delay=$3 pid tool
	shift 3
	if [[ $who == daemon ]]; then
		"$LSMFS" "$list" "$M" || return 1
		pid=$(daemon_pid "$list")
		"$DISK" "$M" "$@" > "$T/kill.out" 2>&1 &
		tool=$!
		sleep "$delay"
		kill -9 "$pid" 2>/dev/null
		wait "$tool"
		fusermount3 -u -z "$M" 2>/dev/null
		for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
	else
		"$DISK" "$list" "$@" > "$T/kill.out" 2>&1 &
		tool=$!
		sleep "$delay"
		kill -9 "$tool" 2>/dev/null
		wait "$tool"
	fi
	return 0
}
# The end: the count of failures, and the exit status.
finish() {
	if ((fails)); then
		echo "$NAME: $fails failure(s)" >&2
		exit 1
	fi
	say "all passed"
}
