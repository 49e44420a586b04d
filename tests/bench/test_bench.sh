#!/bin/bash
# test_bench.sh BUILD_DIR: lsmfs-bench seqwrite end to end.
#  1. A small matrix (bs x files x jobs x fsync, lsmfs + raw + mergerfs when
#     installed) over two given DIRs exits 0; results.csv has the documented
#     header and one row per cell and system, each with the bytes the
#     workload writes (workload.c plan()), the fsyncs it does, write
#     amplification 1 for raw and mergerfs and [1, 1.1) for lsmfs, shares
#     summing to 1, per-disk bytes summing to data_bytes, sequential
#     fractions in [0, 1] for lsmfs, fsync p50 <= p99 where there were fsyncs.
#  2. results.json: the same runs (system, cell, mib_s, bytes), no member
#     twice in an object, timelines of non-negative numbers, the DIRs' names.
#  3. report.svg: well-formed SVG, one polyline per system per cell.
#  4. Nothing left: DIRs empty, no mount under the temp dir, no daemon.
#  5. SIGINT and SIGTERM in the middle of a run: exit 130, nothing left, the
#     results of what finished written.
#  6. Usage errors exit 2 (and make no --out directory).
#  7. Errors exit 1 and leave nothing: a daemon that will not mount, a DIR
#     with too little space (refused before any run), a DIR that runs out of
#     inodes in the middle of a run.
set -u
B=$(cd "${1:?usage: test_bench.sh BUILD_DIR}" && pwd)
BENCH=$B/tools/lsmfsbench/lsmfs-bench MKFS=$B/mkfs/mkfs.lsmfs
if [[ ! -c /dev/fuse ]]; then
	echo "test_bench: SKIPPED: no /dev/fuse here, so lsmfs-bench cannot mount anything" >&2
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-benchtest.XXXXXX")
# lsmfs-bench's mount points and temp directories go under $TMPDIR: keep
# them under $T so the leftover checks see them.
export TMPDIR=$T/tmp
D1=$T/d1 D2=$T/d2 SMALL=$T/small
mkdir -p "$TMPDIR" "$D1" "$D2" "$SMALL"
fails=0
bgpid=
cleanup() {
	[[ -n $bgpid ]] && kill -KILL "$bgpid" 2>/dev/null
	# Deepest first: anything still mounted under $T.
	awk -v t="$T/" 'index($5, t) == 1 {print $5}' /proc/self/mountinfo | sort -r |
		while read -r m; do fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "test_bench: FAIL: $*" >&2; fails=$((fails + 1)); }
note() { echo "test_bench: $*" >&2; }
# want_exit WHAT WANT ERRFILE: $rc is WANT and no sanitizer spoke in ERRFILE
# (in build-asan a leak at exit changes the status: say so, once).
want_exit() {
	local s
	s=$(grep -m1 -E 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined)' "$3")
	if [[ -n $s ]]; then
		fail "$1: a sanitizer report (exit $rc): $s $(grep -m1 -E '^    #[0-9]+ .* in [a-z_]+ .*tools/lsmfsbench/' "$3")"
	elif [[ $rc != "$2" ]]; then
		fail "$1: exit $rc, want $2; stderr: $(grep -v '^\[' "$3" | tail -8)"
	fi
}

# mounts_under DIR: mount points under DIR (fstype too), one per line.
mounts_under() { awk -v t="$1/" 'index($5, t) == 1 {print $5 " " $(NF - 2)}' /proc/self/mountinfo; }

# leftovers WHAT: nothing of lsmfs-bench's may remain after a run.
leftovers() {
	local what=$1 d m p
	for d in "$D1" "$D2"; do
		[[ -z $(ls -A "$d") ]] || fail "$what: $d is not empty afterwards: $(ls -A "$d" | head -5 | tr '\n' ' ')"
	done
	[[ -z $(ls -A "$TMPDIR") ]] || fail "$what: temp directory left in $TMPDIR: $(ls -A "$TMPDIR" | tr '\n' ' ')"
	m=$(mounts_under "$T" | grep -v "^$SMALL ")
	[[ -z $m ]] || fail "$what: still mounted under $T: $m"
	p=$(python3 - "$T" <<'PY'
import os, sys
t = sys.argv[1]
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        argv = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
    except OSError:
        continue
    argv = [a.decode(errors="replace") for a in argv if a]
    if argv and os.path.basename(argv[0]) in ("lsmfs", "mergerfs", "mkfs.lsmfs", "lsmfs-bench") \
            and any(t in a for a in argv):
        print(pid, " ".join(argv))
PY
)
	[[ -z $p ]] || fail "$what: processes left: $p"
}

# check_results OUT SIZE BS FILES JOBS FSYNC SYSTEMS: results.csv,
# results.json and report.svg in OUT against the workload of those lists.
check_results() {
	python3 - "$@" "$D1" "$D2" <<'PY'
import csv, json, math, os, sys, xml.etree.ElementTree as ET
out, size = sys.argv[1], int(sys.argv[2])
def sz(s):
    m = {"k": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s)
bss = [sz(x) for x in sys.argv[3].split(",")]
filesl = [int(x) for x in sys.argv[4].split(",")]
jobsl = [int(x) for x in sys.argv[5].split(",")]
fsyncl = sys.argv[6].split(",")
systems = sys.argv[7].split(",")
dirs = sys.argv[8:]
bad = []
def err(msg):
    bad.append(msg)
    print("test_bench: FAIL: " + msg, file=sys.stderr)
MiB = 1048576.0

def streams(bs, files, jobs):
    """workload.c plan(): the (file, length) of every stream."""
    parts = (jobs + files - 1) // files if jobs > files else 1
    per_file = size // files // bs * bs
    per_file = max(per_file, bs * parts)
    per_part = per_file // parts // bs * bs
    return [per_file - per_part * p if p == parts - 1 else per_part
            for p in range(parts) for f in range(files)]
def fsyncs(lens, bs, fs):
    if fs == "end":
        return len(lens)
    if fs == "none":
        return 0
    n = int(fs.split(":")[1])
    return sum((l + bs - 1) // bs // n for l in lens)

# ---- results.csv ----
head = ("bs,files,jobs,fsync,system,rounds,mib_s,mib_s_median,vs_raw,seconds,app_bytes,"
        "data_bytes,data_wa,meta_bytes,meta_log_bytes,meta_flush_bytes,meta_compaction_bytes,"
        "meta_manifest_bytes,meta_ratio,fsyncs,fsync_p50_ms,fsync_p99_ms,cpu_seconds,"
        "cpu_s_per_gib").split(",")
for d in range(len(dirs)):
    head += ["disk%d_%s" % (d, k) for k in ("bytes", "share", "writes", "seq_fraction")]
head.append("dev_written_bytes")
# One column per distinct block device under the DIRs, as /proc/diskstats
# names it, in the DIRs' order.
stats = {}
for line in open("/proc/diskstats"):
    f = line.split()
    stats[(int(f[0]), int(f[1]))] = f[2]
devnames = []
for d in dirs:
    st = os.stat(d)
    name = stats.get((os.major(st.st_dev), os.minor(st.st_dev)))
    if name and name not in devnames:
        devnames.append(name)
head += ["dev_%s_written_bytes" % n for n in devnames]
with open(out + "/results.csv", newline="") as f:
    rows = list(csv.reader(f))
if not rows or rows[0] != head:
    err("results.csv header is %s, want %s" % (rows[0] if rows else None, head))
    sys.exit(1)
rows = [dict(zip(head, r)) for r in rows[1:] if len(r) == len(head) or err("csv row of %d fields: %s" % (len(r), r))]
for r in rows:
    per = [int(r["dev_%s_written_bytes" % n] or 0) for n in devnames]
    if devnames and sum(per) != int(r["dev_written_bytes"]):
        err("csv: the devices' bytes %s do not add up to dev_written_bytes %s" % (per, r["dev_written_bytes"]))
want = {(str(b), str(f), str(j), fs, s) for b in bss for f in filesl for j in jobsl for fs in fsyncl for s in systems}
got = [(r["bs"], r["files"], r["jobs"], r["fsync"], r["system"]) for r in rows]
if sorted(got) != sorted(want):
    err("results.csv rows: missing %s, extra or repeated %s" % (
        sorted(want - set(got)), sorted(k for k in got if k not in want or got.count(k) > 1)))
raw_mib = {(r["bs"], r["files"], r["jobs"], r["fsync"]): float(r["mib_s"]) for r in rows if r["system"] == "raw"}
def num(r, k):
    try:
        return float(r[k])
    except ValueError:
        err("%s: %s is %r, not a number" % (r["_id"], k, r[k]))
        return float("nan")
for r in rows:
    bs, files, jobs, fs, s = int(r["bs"]), int(r["files"]), int(r["jobs"]), r["fsync"], r["system"]
    r["_id"] = "csv %s bs=%d files=%d jobs=%d fsync=%s" % (s, bs, files, jobs, fs)
    lens = streams(bs, files, jobs)
    app = int(r["app_bytes"])
    if app != sum(lens):
        err("%s: app_bytes %d, the workload writes %d" % (r["_id"], app, sum(lens)))
    if r["rounds"] != "1":
        err("%s: rounds %s, want 1" % (r["_id"], r["rounds"]))
    mib, sec = num(r, "mib_s"), num(r, "seconds")
    if not sec > 0 or not mib > 0:
        err("%s: seconds %s mib_s %s, want both > 0" % (r["_id"], r["seconds"], r["mib_s"]))
    elif not app / MiB / (sec + 6e-5) * 0.999 - 0.001 <= mib <= app / MiB / max(sec - 6e-5, 1e-9) * 1.001 + 0.001:
        err("%s: mib_s %s is not app_bytes / seconds (%s)" % (r["_id"], r["mib_s"], r["seconds"]))
    if abs(num(r, "mib_s_median") - mib) > 0.0011:
        err("%s: one round, but median %s != mib_s %s" % (r["_id"], r["mib_s_median"], r["mib_s"]))
    vr = num(r, "vs_raw")
    rm = raw_mib.get((r["bs"], r["files"], r["jobs"], r["fsync"]))
    if rm and abs(vr - mib / rm) > 2e-4 + 1e-3 * mib / rm:
        err("%s: vs_raw %s, want %.4f" % (r["_id"], r["vs_raw"], mib / rm))
    data = int(r["data_bytes"])
    db = [int(r["disk%d_bytes" % d]) for d in range(len(dirs))]
    if sum(db) != data:
        err("%s: disk bytes %s sum to %d, data_bytes is %d" % (r["_id"], db, sum(db), data))
    wa = num(r, "data_wa")
    if app and abs(wa - data / app) > 1.5e-6:
        err("%s: data_wa %s, data_bytes / app_bytes is %.6f" % (r["_id"], r["data_wa"], data / app))
    if s == "lsmfs":
        if not 1.0 <= wa < 1.1:
            err("%s: data_wa %s, want [1, 1.1)" % (r["_id"], r["data_wa"]))
    elif abs(wa - 1.0) > 1e-6 or data != app:
        err("%s: data_wa %s (data %d, app %d), want exactly 1" % (r["_id"], r["data_wa"], data, app))
    shares = [num(r, "disk%d_share" % d) for d in range(len(dirs))]
    if abs(sum(shares) - 1) > 1e-5:
        err("%s: disk shares %s sum to %.6f" % (r["_id"], shares, sum(shares)))
    for d in range(len(dirs)):
        if data and abs(shares[d] - db[d] / data) > 1e-6:
            err("%s: disk%d_share %s, bytes say %.6f" % (r["_id"], d, shares[d], db[d] / data))
        w, q = r["disk%d_writes" % d], r["disk%d_seq_fraction" % d]
        if s == "lsmfs":
            if not w.isdigit():
                err("%s: disk%d_writes %r, want a count" % (r["_id"], d, w))
            elif int(w) > 0 and not (q and 0 <= float(q) <= 1):
                err("%s: disk%d_seq_fraction %r with %s writes, want [0, 1]" % (r["_id"], d, q, w))
            elif int(w) == 0 and (q or db[d]):
                err("%s: disk %d: no writes, but %d bytes, seq_fraction %r" % (r["_id"], d, db[d], q))
        elif w or q:
            err("%s: disk%d writes %r seq_fraction %r, want both empty (not known for %s)" % (r["_id"], d, w, q, s))
    meta = [r[k] for k in ("meta_bytes", "meta_log_bytes", "meta_flush_bytes", "meta_compaction_bytes",
                           "meta_manifest_bytes", "meta_ratio")]
    if s == "lsmfs":
        if not all(meta) or int(meta[0]) != sum(int(x) for x in meta[1:5]) or int(meta[0]) <= 0:
            err("%s: meta bytes %s: want the sum of log, flush, compaction, manifest (> 0)" % (r["_id"], meta))
        if not r["cpu_seconds"]:
            err("%s: no daemon cpu_seconds" % r["_id"])
    elif any(meta) or (s == "raw" and r["cpu_seconds"]):
        err("%s: meta %s cpu %r, want empty" % (r["_id"], meta, r["cpu_seconds"]))
    nf = fsyncs(lens, bs, fs)
    if r["fsyncs"] != str(nf):
        err("%s: fsyncs %s, the workload does %d" % (r["_id"], r["fsyncs"], nf))
    p50, p99 = r["fsync_p50_ms"], r["fsync_p99_ms"]
    if nf:
        if not p50 or not p99 or not 0 <= float(p50) <= float(p99):
            err("%s: fsync p50 %r p99 %r, want 0 <= p50 <= p99" % (r["_id"], p50, p99))
    elif p50 or p99:
        err("%s: no fsync, but p50 %r p99 %r" % (r["_id"], p50, p99))

# ---- results.json ----
dups = []
def pairs(kv):
    keys = [k for k, v in kv]
    for k in set(keys):
        if keys.count(k) > 1:
            dups.append((k, [v for kk, v in kv if kk == k]))
    return {k: v for k, v in kv}
# The first of a repeated member, to go on checking past it.
def pairs_first(kv):
    d = {}
    for k, v in kv:
        d.setdefault(k, v)
    return d
try:
    text = open(out + "/results.json").read()
    json.loads(text, object_pairs_hook=pairs)
    j = json.loads(text, object_pairs_hook=pairs_first)
except ValueError as e:
    err("results.json does not parse: %s" % e)
    sys.exit(1)
if dups:
    err("results.json: %d objects name a member twice (a reader keeps only the last), e.g. %r with values %s"
        % (len(dups), dups[0][0], dups[0][1][:2]))
for k, v in (("tool", "lsmfs-bench"), ("version", 1), ("workload", "seqwrite"), ("size", size),
             ("rounds", 1), ("disks", dirs)):
    if j.get(k) != v:
        err("results.json: %s is %r, want %r" % (k, j.get(k), v))
runs = j.get("runs")
if not isinstance(runs, list) or len(runs) != len(rows):
    err("results.json: %s runs, results.csv has %d rows" % (len(runs) if isinstance(runs, list) else runs, len(rows)))
    runs = []
for r, c in zip(runs, rows):
    cid = c["_id"]
    for k in ("system", "bs", "files", "jobs", "fsync", "app_bytes", "data_bytes"):
        if str(r.get(k)) != c[k]:
            err("%s: json %s is %r, csv has %r" % (cid, k, r.get(k), c[k]))
    m, cm = r.get("mib_s"), float(c["mib_s"])
    if not isinstance(m, (int, float)) or abs(m - cm) > 0.0006 + 1e-5 * cm:
        err("%s: json mib_s %r, csv %s" % (cid, m, c["mib_s"]))
    tl = r.get("timeline_mib_s")
    sec = r.get("seconds") or 0
    if not isinstance(tl, list) or not all(isinstance(x, (int, float)) and x >= 0 and math.isfinite(x) for x in tl):
        err("%s: timeline_mib_s %r, want a list of non-negative numbers" % (cid, tl))
    elif (sec >= 0.15 and not tl) or len(tl) > sec + 2:
        err("%s: timeline of %d samples for a %.3f s run" % (cid, len(tl), sec))
    ds = r.get("disks") or []
    if [d.get("dir") for d in ds] != dirs:
        err("%s: json disks %s, want %s" % (cid, [d.get("dir") for d in ds], dirs))
    for i, d in enumerate(ds):
        if str(d.get("bytes")) != c.get("disk%d_bytes" % i):
            err("%s: json disk %d bytes %r, csv %r" % (cid, i, d.get("bytes"), c.get("disk%d_bytes" % i)))

# ---- report.svg ----
SVG = "{http://www.w3.org/2000/svg}"
try:
    root = ET.parse(out + "/report.svg").getroot()
except ET.ParseError as e:
    err("report.svg is not well-formed XML: %s" % e)
    sys.exit(1)
if root.tag != SVG + "svg":
    err("report.svg: root is %s, want %ssvg" % (root.tag, SVG))
lines = root.iter(SVG + "polyline")
npts = []
for p in lines:
    pts = p.get("points", "").split()
    try:
        xy = [tuple(float(v) for v in q.split(",")) for q in pts]
        if any(len(v) != 2 or not all(math.isfinite(a) for a in v) for v in xy):
            raise ValueError(pts)
    except ValueError:
        err("report.svg: polyline points %r are not x,y pairs" % p.get("points"))
    npts.append(len(pts))
if len(npts) != len(rows):
    err("report.svg: %d polylines, want %d (one per system per cell)" % (len(npts), len(rows)))
elif sorted(npts) != sorted(2 * len(r.get("timeline_mib_s") or []) for r in runs):
    # A step per sample: two points each.
    err("report.svg: polylines of %s points, the timelines have %s samples (two points each)" % (
        sorted(npts), sorted(len(r.get("timeline_mib_s") or []) for r in runs)))
ncells = len(bss) * len(filesl) * len(jobsl) * len(fsyncl)
titles = [t for t in root.iter(SVG + "text") if t.get("font-weight") == "bold"]
if len(titles) != ncells:
    err("report.svg: %d cell titles, want %d" % (len(titles), ncells))
print("test_bench: matrix: %d rows, %d runs, %d polylines checked; longest run %.3f s" % (
    len(rows), len(runs), len(npts), max([r.get("seconds") or 0 for r in runs] or [0])), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# ---- 1-4: a small matrix ----
# 30 MiB does not split evenly over 4 files of 1 MiB blocks: plan() rounds
# each file down to whole blocks.
SYSTEMS=lsmfs,raw
command -v mergerfs >/dev/null && SYSTEMS=lsmfs,raw,mergerfs
start=$SECONDS
"$BENCH" seqwrite "$D1" "$D2" --size 30M --bs 64k,1M --files 1,4 --jobs 1,2 --fsync end,every:4 \
	--compare raw,mergerfs --out "$T/out" > "$T/out.txt" 2> "$T/out.err"
rc=$?
note "matrix run: exit $rc in $((SECONDS - start)) s"
want_exit "matrix run" 0 "$T/out.err"
grep -q "MiB/s" "$T/out.txt" || fail "matrix run: no table on stdout"
for f in results.csv results.json report.svg; do
	[[ -s $T/out/$f ]] || fail "matrix run: $T/out/$f missing or empty"
done
check_results "$T/out" $((30 << 20)) 64k,1M 1,4 1,2 end,every:4 $SYSTEMS || fail "matrix run: results (above)"
leftovers "matrix run"

# Less than a block per file: each file (each part, with more jobs than
# files) still gets a block; every write fsynced.
"$BENCH" seqwrite "$D1" "$D2" --size 1M --bs 1M --files 1,3 --jobs 2 --fsync every:1 --compare raw \
	--out "$T/out2" > "$T/out2.txt" 2> "$T/out2.err"
rc=$?
want_exit "1 MiB run" 0 "$T/out2.err"
check_results "$T/out2" $((1 << 20)) 1M 1,3 2 every:1 lsmfs,raw || fail "1 MiB run: results (above)"
leftovers "1 MiB run"

# ---- 5: interrupted ----
# run_bg OUT ARGS...: lsmfs-bench in the background, its pid in bgpid.
run_bg() {
	local out=$1
	shift
	: > "$out.err" # before the grep of a progress line in it
	"$BENCH" seqwrite "$D1" "$D2" "$@" --compare none --out "$out" > "$out.txt" 2> "$out.err" &
	bgpid=$!
}
# wait_mount SECONDS: until a FUSE mount shows under $TMPDIR (1) or the
# bench exited or time ran out (0).
wait_mount() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		mounts_under "$TMPDIR" | grep -q ' fuse' && return 0
		kill -0 "$bgpid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# stop_bg SIG: send SIG, wait at most 60 s; the exit status in rc.
stop_bg() {
	local i
	kill -"$1" "$bgpid"
	for ((i = 0; i < 600; i++)); do
		kill -0 "$bgpid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$bgpid" 2>/dev/null; then
		fail "SIG$1: lsmfs-bench still running 60 s after the signal"
		kill -KILL "$bgpid"
	fi
	wait "$bgpid"
	rc=$?
	bgpid=
}
# empty_results OUT N: the results files in OUT parse, with N runs.
empty_results() {
	python3 - "$1" "$2" <<'PY'
import csv, json, sys, xml.etree.ElementTree as ET
out, n = sys.argv[1], int(sys.argv[2])
rows = list(csv.reader(open(out + "/results.csv")))
runs = json.load(open(out + "/results.json"))["runs"]
lines = list(ET.parse(out + "/report.svg").getroot().iter("{http://www.w3.org/2000/svg}polyline"))
if not rows or rows[0][:2] != ["bs", "files"] or len(rows) - 1 != n or len(runs) != n or len(lines) != n:
    sys.exit("%d csv rows, %d json runs, %d polylines, want %d of each" % (len(rows) - 1, len(runs), len(lines), n))
PY
}

# SIGINT in the middle of a single run: nothing of it is reported.
start=$SECONDS
run_bg "$T/int" --size 2G --bs 4k --files 1 --jobs 1 --fsync every:256
if ! wait_mount 30; then
	if grep -q "a run may need" "$T/int.err"; then
		note "SIGINT: not tested: too little space for --size 2G here: $(cat "$T/int.err")"
	else
		fail "SIGINT: no mount of lsmfs-bench's within 30 s; stderr: $(tail -5 "$T/int.err")"
	fi
	kill -KILL "$bgpid" 2>/dev/null
	wait "$bgpid"
	bgpid=
else
	sleep 1
	stop_bg INT
	note "SIGINT: exit $rc, $((SECONDS - start)) s in all"
	want_exit SIGINT 130 "$T/int.err"
	grep -q interrupted "$T/int.err" || fail "SIGINT: no word of the interruption on stderr"
	e=$(empty_results "$T/int" 0 2>&1) || fail "SIGINT: results after the interruption: $e"
fi
leftovers "SIGINT"

# SIGTERM in the second cell: the first one's results are written.
start=$SECONDS
run_bg "$T/term" --size 512M --bs 1M,4k --files 1 --jobs 1 --fsync every:16
for ((i = 0; i < 1200; i++)); do
	grep -q '^\[1/2\]' "$T/term.err" && break
	kill -0 "$bgpid" 2>/dev/null || break
	sleep 0.1
done
if grep -q "a run may need" "$T/term.err"; then
	note "SIGTERM: not tested: too little space for --size 512M here: $(cat "$T/term.err")"
	wait "$bgpid"
	bgpid=
elif ! grep -q '^\[1/2\]' "$T/term.err" || ! wait_mount 30; then
	fail "SIGTERM: the first run did not finish or the second did not mount; stderr: $(tail -5 "$T/term.err")"
	kill -KILL "$bgpid" 2>/dev/null
	wait "$bgpid"
	bgpid=
else
	sleep 0.5
	stop_bg TERM
	note "SIGTERM: exit $rc, $((SECONDS - start)) s in all"
	want_exit SIGTERM 130 "$T/term.err"
	e=$(empty_results "$T/term" 1 2>&1) || fail "SIGTERM: results after the interruption: $e"
	python3 - "$T/term" <<'PY' || fail "SIGTERM: the finished run's results (above)"
import csv, json, sys
out = sys.argv[1]
r = list(csv.DictReader(open(out + "/results.csv")))[0]
j = json.load(open(out + "/results.json"))["runs"][0]
want = {"bs": "1048576", "system": "lsmfs", "app_bytes": str(512 << 20), "fsyncs": "32"}
got = {k: r[k] for k in want}
if got != want:
    sys.exit("test_bench: FAIL: the finished run in results.csv is %s, want %s" % (got, want))
if j["seconds"] >= 0.15 and not j["timeline_mib_s"]:
    sys.exit("test_bench: FAIL: a %.3f s run has an empty timeline" % j["seconds"])
print("test_bench: SIGTERM: the finished run took %.3f s, %d timeline samples" % (
    j["seconds"], len(j["timeline_mib_s"])), file=sys.stderr)
PY
fi
leftovers "SIGTERM"

# SIGINT at scattered moments (during mkfs, the mount, the writes, the
# unmount, between runs, in raw and mergerfs runs): each time exit 130 and
# nothing left.  A signal that lands while a daemon is still mounting is the
# case that once left a mount behind.
for delay in 0.05 0.3 0.7 1.1 1.6 2.2; do
	: > "$T/loop.err"
	rm -rf "$T/loop"
	"$BENCH" seqwrite "$D1" "$D2" --size 96M --bs 64k,1M --files 1,2 --jobs 1 --out "$T/loop" \
		> /dev/null 2> "$T/loop.err" &
	bgpid=$!
	# The delay counts from the --out directory, made once the signal
	# handlers are in place: a SIGINT before that is ignored, as the
	# shell starts a background job with SIGINT ignored.
	for ((i = 0; i < 3000; i++)); do
		[[ -d $T/loop ]] || ! kill -0 "$bgpid" 2>/dev/null && break
		sleep 0.01
	done
	sleep "$delay"
	if kill -0 "$bgpid" 2>/dev/null; then
		stop_bg INT
		want_exit "SIGINT after $delay s" 130 "$T/loop.err"
	else
		wait "$bgpid"
		rc=$?
		bgpid=
		want_exit "run (finished before its SIGINT at $delay s)" 0 "$T/loop.err"
	fi
	leftovers "SIGINT after $delay s"
	rm -rf "$T/loop"
done

# ---- 6: usage errors ----
# usage WANT_IN_MESSAGE ARGS...: exit 2, WANT on stderr, no --out made.
usage() {
	local want=$1 rc
	shift
	"$BENCH" "$@" --out "$T/uout" > "$T/u.out" 2> "$T/u.err"
	rc=$?
	want_exit "lsmfs-bench $* (usage)" 2 "$T/u.err"
	grep -qF -- "$want" "$T/u.err" || fail "lsmfs-bench $*: stderr does not say '$want': $(head -3 "$T/u.err")"
	[[ ! -e $T/uout ]] || fail "lsmfs-bench $*: a usage error made the --out directory"
	rm -rf "$T/uout"
}
usage "unknown workload: seqread" seqread "$D1" "$D2"
usage "no workload" --size 16M
usage "bad --bs: 0" seqwrite "$D1" "$D2" --bs 0
usage "bad --bs: abc" seqwrite "$D1" "$D2" --bs abc
usage "bad --bs: 64k,x" seqwrite "$D1" "$D2" --bs 64k,x
usage "bad --fsync: every:" seqwrite "$D1" "$D2" --fsync every:
usage "bad --fsync: sometimes" seqwrite "$D1" "$D2" --fsync sometimes
usage "bad --files: 0" seqwrite "$D1" "$D2" --files 0
usage "bad --compare: nfs" seqwrite "$D1" "$D2" --compare nfs
usage "bad value for an option: 12Q" seqwrite "$D1" "$D2" --size 12Q
usage "--disks 3 but 2 directories" seqwrite "$D1" "$D2" --disks 3
usage "$T/no-such-dir" seqwrite "$D1" "$T/no-such-dir"
leftovers "usage errors"

# ---- 7: errors: exit 1, nothing left ----
# A daemon that will not mount.
"$BENCH" seqwrite "$D1" "$D2" --size 16M --bs 1M --files 1 --jobs 1 --compare none -o no_such_option_xyz \
	--out "$T/e1" > "$T/e1.txt" 2> "$T/e1.err"
rc=$?
want_exit "lsmfs that will not mount" 1 "$T/e1.err"
grep -q "did not mount" "$T/e1.err" || fail "lsmfs that will not mount: stderr does not say so: $(head -5 "$T/e1.err")"
leftovers "lsmfs that will not mount"

# Too little space on a DIR: refused before any run, naming it.
if mount -t tmpfs -o size=8m tmpfs "$SMALL" 2>/dev/null; then
	"$BENCH" seqwrite "$SMALL" "$D2" --size 16M --bs 1M --files 1 --jobs 1 --out "$T/e2" > "$T/e2.txt" 2> "$T/e2.err"
	rc=$?
	want_exit "8 MiB DIR" 1 "$T/e2.err"
	grep -qF "$SMALL/" "$T/e2.err" && grep -q "free" "$T/e2.err" ||
		fail "8 MiB DIR: the message does not name $SMALL and its free space: $(head -5 "$T/e2.err")"
	[[ -z $(ls -A "$SMALL") ]] || fail "8 MiB DIR: left in it: $(ls -A "$SMALL")"
	e=$(empty_results "$T/e2" 0 2>&1) || fail "8 MiB DIR: results: $e"
	umount "$SMALL" || fail "umount $SMALL"
	leftovers "8 MiB DIR"

	# A DIR that runs out of inodes in the middle of the lsmfs run: a
	# tmpfs with room for mkfs.lsmfs's files and about a dozen more.
	# What mkfs.lsmfs makes on the first of two disks, as the bench's mkfs
	# will on $SMALL; then the tmpfs root, lsmfs-bench.PID, a dozen more.
	mkdir -p "$T/mk/a" "$T/mk/b"
	if "$MKFS" -q "$T/mk/a" "$T/mk/b" > /dev/null 2>&1; then
		n=$(( $(find "$T/mk/a" | wc -l) + 14 ))
		rm -rf "$T/mk"
		if mount -t tmpfs -o size=1g,nr_inodes=$n tmpfs "$SMALL" 2>/dev/null; then
			"$BENCH" seqwrite "$SMALL" "$D2" --size 16M --bs 64k --files 64 --jobs 1 --compare none \
				--out "$T/e3" > "$T/e3.txt" 2> "$T/e3.err"
			rc=$?
			want_exit "DIR out of inodes" 1 "$T/e3.err"
			grep -q "No space left on device" "$T/e3.err" ||
				fail "DIR out of inodes: stderr does not say ENOSPC: $(head -5 "$T/e3.err")"
			[[ -z $(ls -A "$SMALL") ]] || fail "DIR out of inodes: left in it: $(ls -A "$SMALL")"
			umount "$SMALL" || fail "umount $SMALL"
			leftovers "DIR out of inodes"
		else
			note "DIR out of inodes: not tested: cannot mount a tmpfs here"
		fi
	else
		fail "mkfs.lsmfs on $T/mk failed"
	fi
else
	note "too little space and running out of inodes: not tested: cannot mount a tmpfs here (not root?)"
fi

if ((fails)); then
	echo "test_bench: $fails failure(s)" >&2
	exit 1
fi
echo "test_bench: all passed"
