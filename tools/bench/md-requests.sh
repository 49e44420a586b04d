#!/bin/bash
# md-requests.sh [-n NFILES] [-B BUILD_DIR] [--cposix]: where a metadata
# workload's time goes inside the daemon, request by request.
#
# Runs mdbench (../shared/bench/mdbench.c: create, stat, readdir, read,
# unlink of NFILES 4 KiB files, then rmdir of their directories) on a fresh
# lsmfs over two disk directories (or, with --cposix, on ceilingfs under
# the kernel options a POSIX filesystem needs: the fair FUSE ceiling), and
# times with bpftrace every request from the read(2) of /dev/fuse that
# returned it to the writev(2) of its reply, in the daemon's threads.
# Prints per FUSE opcode the count, the mean time in the daemon and the
# total, largest total first.  A request without a reply (FORGET) is not
# counted.  The time is the daemon's alone: what the kernel does around a
# request (the client's syscall, the wakeups) is the same for any daemon
# the kernel sends the same requests, which cposix is made to get.
#
# This found that mdbench's rmdir took 25.8 ms a directory (a store scan
# over the deletions of its 1000 entries) where cposix took 3 us.
# Needs root, bpftrace (Debian package bpftrace), tracefs (mounted here if
# it is not), /dev/fuse, gcc, python3.
set -euo pipefail
n=50000 build= cposix=0
while (($#)); do
	case $1 in
	-n) n=$2; shift 2 ;;
	-B) build=$2; shift 2 ;;
	--cposix) cposix=1; shift ;;
	*) echo "usage: md-requests.sh [-n NFILES] [-B BUILD_DIR] [--cposix]" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
build=${build:-$here/../../build}
shared=$(cd "$here/../../../shared/bench" 2>/dev/null && pwd || true)
bin=${BENCH_BIN:-/tmp/lsmfs-bench-tools}
command -v bpftrace >/dev/null || { echo "md-requests: needs bpftrace (apt-get install bpftrace)" >&2; exit 2; }
[[ -d /sys/kernel/tracing/events ]] || mount -t tracefs nodev /sys/kernel/tracing
mkdir -p "$bin"
for t in mdbench ceilingfs; do
	if [[ ! -x $bin/$t ]]; then
		[[ -f $shared/$t.c ]] || { echo "md-requests: no $t.c" >&2; exit 2; }
		if [[ $t = ceilingfs ]]; then
			gcc -O2 -Wall -o "$bin/$t" "$shared/$t.c" $(pkg-config --cflags --libs fuse3) -lpthread
		else
			gcc -O2 -Wall -o "$bin/$t" "$shared/$t.c"
		fi
	fi
done
S=$(mktemp -d "${TMPDIR:-/var/tmp}/md-requests.XXXXXX")
cleanup() {
	[[ -n ${bp:-} ]] && kill -INT "$bp" 2>/dev/null || true
	fusermount3 -u "$S/mnt" 2>/dev/null || true
	sleep 1
	rm -rf "$S"
}
trap cleanup EXIT
mkdir -p "$S/d0" "$S/d1" "$S/mnt"
if ((cposix)); then
	CEIL_POSIX=1 CEIL_TTL=60 "$bin/ceilingfs" "$S/mnt"
	pid=$(pgrep -n -f "ceilingfs $S/mnt")
else
	"$build/mkfs/mkfs.lsmfs" -q "$S/d0" "$S/d1"
	"$build/fs/lsmfs" "$S/d0:$S/d1" "$S/mnt"
	pid=$(pgrep -n -f "lsmfs $S/d0")
fi
mkdir "$S/mnt/t"
cat > "$S/req.bt" <<'EOF'
tracepoint:syscalls:sys_enter_read /pid == $1/ { @b[tid] = args->buf; }
tracepoint:syscalls:sys_exit_read /pid == $1 && @b[tid] != 0/ {
  if (args->ret >= 40) { @t[tid] = nsecs; @op[tid] = *(uint32 *)uptr(@b[tid] + 4); }
  delete(@b[tid]);
}
tracepoint:syscalls:sys_enter_writev /pid == $1 && @t[tid] != 0/ {
  @ns[@op[tid]] = sum(nsecs - @t[tid]); @n[@op[tid]] = count();
  delete(@t[tid]);
}
END { clear(@b); clear(@t); clear(@op); }
EOF
bpftrace "$S/req.bt" "$pid" > "$S/req.out" 2>&1 &
bp=$!
for _ in $(seq 100); do grep -q Attaching "$S/req.out" 2>/dev/null && break; sleep 0.1; done
sleep 1
echo "mdbench $n files: $("$bin/mdbench" "$S/mnt/t" "$n" 4096 | awk '{printf "%s %s/s  ", $1, $3}')"
kill -INT "$bp"
wait "$bp" || true
bp=
python3 - "$S/req.out" <<'PY'
import re, sys
names = {1: 'LOOKUP', 3: 'GETATTR', 4: 'SETATTR', 9: 'MKDIR', 10: 'UNLINK', 11: 'RMDIR',
         12: 'RENAME', 14: 'OPEN', 15: 'READ', 16: 'WRITE', 18: 'RELEASE', 20: 'FSYNC',
         22: 'GETXATTR', 25: 'FLUSH', 27: 'OPENDIR', 28: 'READDIR', 29: 'RELEASEDIR',
         35: 'CREATE', 44: 'READDIRPLUS'}
ns, n = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r'@(ns|n)\[(\d+)\]: (\d+)', line)
    if m:
        (ns if m.group(1) == 'ns' else n)[int(m.group(2))] = int(m.group(3))
if not n:
    sys.exit('md-requests: bpftrace counted nothing:\n' + open(sys.argv[1]).read())
print(f"{'request':12s} {'count':>8s} {'mean us':>9s} {'total s':>8s}")
for op in sorted(n, key=lambda o: -ns.get(o, 0)):
    print(f"{names.get(op, str(op)):12s} {n[op]:8d} {ns.get(op, 0) / n[op] / 1e3:9.2f} {ns.get(op, 0) / 1e9:8.2f}")
PY
