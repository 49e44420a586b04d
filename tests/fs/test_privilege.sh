#!/bin/bash
# test_privilege.sh BUILD_DIR: privilege rules (issue 14) against ext4.
# Every case runs the same shell commands, as root and as unprivileged
# users (setpriv: nobody, and bare uids/gids 1000/5000), in a directory of
# an ext4 image mounted -o loop,acl and in one of an lsmfs mounted with
# allow_other; outputs and exit codes must be equal.  Cases: POSIX ACL
# enforcement (user entry ---, group entries, the mask), default ACL
# inheritance by files and directories, the umask with and without a
# default ACL, chmod rewriting the mask, setfacl -b, equivalent ACLs,
# setgid cleared by an ACL change, setgid directories with members and
# non-members, xattr namespace errors, trusted.* listed to root only (and
# not to a root without CAP_SYS_ADMIN), fallocate and punch hole clearing
# setuid/setgid and file capabilities; then everything again after a remount.  lsmfs only (ext4
# has no counterpart): user.lsmfs.stats is root's only, an xattr name list
# never passes 64 KiB, a 64 KiB value is stored; the backing disks are
# root's (no other user greps a 0600 file's bytes or a 0700 directory's
# names from them, lsmfs-inspect refuses, the locks a mount takes cannot
# be held by others, and a read-write mount narrows what an older
# version left 0644/0755).
# Needs root, mkfs.ext4, a loop device, setfacl/getfacl/getfattr/setfattr;
# exit 77 when one is missing.
set -u
B=$(cd "${1:?usage: test_privilege.sh BUILD_DIR}" && pwd)
MKFS=$B/mkfs/mkfs.lsmfs LSMFS=$B/fs/lsmfs
skip() { echo "test_privilege: SKIPPED: $*" >&2; exit 77; }
[[ -c /dev/fuse ]] || skip "no /dev/fuse here, so nothing to mount"
[[ $(id -u) == 0 ]] || skip "needs root (setpriv to other users, a loop mount)"
for p in mkfs.ext4 setfacl getfacl getfattr setfattr setpriv fallocate python3 flock; do
	command -v $p >/dev/null || skip "$p is not installed (scripts/deps.sh)"
done
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-priv.XXXXXX")
chmod 755 "$T"
E=$T/ext4 M=$T/mnt
fails=0 cases=0
holder=
cleanup() {
	[[ -n $holder ]] && kill "$holder" 2>/dev/null
	fusermount3 -u "$M" 2>/dev/null
	umount "$E" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "test_privilege: FAIL: $*" >&2; fails=$((fails + 1)); }
mkdir -p "$T/d0" "$T/d1" "$M" "$E"

# The reference: a small sparse ext4 image in the scratch dir (32 MiB).
truncate -s 32M "$T/ext4.img"
mkfs.ext4 -q -F "$T/ext4.img" >/dev/null 2>&1 || skip "mkfs.ext4 failed"
mount -o loop,acl "$T/ext4.img" "$E" 2>/dev/null || skip "cannot loop-mount an ext4 image"

"$MKFS" -q --chunk-size 65536 "$T/d0" "$T/d1" || { echo "mkfs failed" >&2; exit 1; }
# In the foreground, its stderr kept: a sanitizer report there is a failure.
mount_lsmfs() {
	"$LSMFS" -f -o allow_other "$T/d0:$T/d1" "$M" 2>>"$T/daemon.log" &
	for _ in $(seq 100); do
		mountpoint -q "$M" && return
		sleep 0.1
	done
	echo "mount failed: $(cat "$T/daemon.log")" >&2
	exit 1
}
# until the daemon has exited (it holds disk 0's lock till then)
wait_gone() { flock -w 10 "$T/d0/.lsmfs/lock" true || fail "the daemon did not exit within 10 s of unmount"; }
mount_lsmfs
chmod 755 "$E" "$M"
mkdir "$E/w" "$M/w"
chmod 777 "$E/w" "$M/w"

# Who runs the commands: nobody; uid 1000 in group 5000; uid 1000 alone;
# root without CAP_SYS_ADMIN.
export NOB="setpriv --reuid=65534 --regid=65534 --clear-groups"
export U5000="setpriv --reuid=1000 --regid=1000 --groups=5000"
export U1000="setpriv --reuid=1000 --regid=1000 --clear-groups"
export NOADMIN="setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin"
# A python3 the other users can run (root's may be a pyenv shim under
# /root), checked, so that no case passes by failing alike on both sides.
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)
[[ $($NOB "$PY" -c 'print("ran")' 2>&1) == ran ]] || skip "nobody cannot run $PY"
export PATH=$(dirname "$PY"):$PATH

# same DESC SCRIPT [ARG0 ARGS...]: run SCRIPT with bash in $E/w and in
# $M/w; the output (stdout and stderr) and the exit code must be equal.
same() {
	local desc=$1 script=$2 a b
	shift 2
	cases=$((cases + 1))
	a=$(cd "$E/w" && umask 022 && bash -c "$script" "$@" 2>&1; echo "exit $?")
	b=$(cd "$M/w" && umask 022 && bash -c "$script" "$@" 2>&1; echo "exit $?")
	[[ $a == "$b" ]] || fail "$desc: ext4 and lsmfs differ
--- ext4:
$a
--- lsmfs:
$b
---"
}

# ---- ACL enforcement ----
same "user entry ---" '
echo hi > f; chmod 644 f
$NOB cat f
setfacl -m u:65534:--- f
$NOB cat f; stat -c %A f; getfacl -n f'
same "group entries" '
echo hi > g; chmod 640 g
setfacl -m g:5000:rw- g
$U5000 sh -c "echo more >> g"; $U1000 cat g; cat g; $NOB cat g
setfacl -m g:65534:r-- g; $NOB cat g; getfacl -n g; stat -c %A g'
same "the mask limits named entries" '
echo hi > m; chmod 600 m
setfacl -m u:65534:rw-,m::r-- m
$NOB sh -c "echo x >> m"; $NOB cat m; stat -c %A m; getfacl -n m'
same "chmod rewrites the mask" '
echo hi > c; setfacl -m u:65534:rwx c; stat -c %a c
chmod 604 c; getfacl -n c; stat -c %a c; $NOB cat c
chmod 644 c; $NOB cat c; getfacl -n c'
same "chmod without a mask rewrites the group entry" '
touch c2; setfacl -m g::rwx c2; stat -c %a c2; chmod 600 c2; getfacl -n c2'
same "setfacl -b" '
touch b; setfacl -m u:65534:rwx,g:5000:r-- b; ls -l b | cut -c1-11
setfacl -b b; getfacl -n b; stat -c %A b; getfattr -d -m- b; ls -l b | cut -c1-11'
same "an ACL the mode says all of is not stored" '
touch e; setfacl -m u::rwx,g::r-x,o::--- e; getfattr -d -m- e; stat -c %a e
setfattr -x system.posix_acl_access e; echo removed $?'
same "an ACL set by an owner outside the group clears setgid" '
touch s; chown 65534:5000 s; chmod 2770 s
$NOB setfacl -m u:1000:r s; stat -c %a s; getfacl -n s
touch s2; chown 1000:5000 s2; chmod 2770 s2
$U5000 setfacl -m u:65534:r s2; stat -c %a s2'
same "a default ACL on a file is refused" '
touch df; setfacl -d -m u::rwx df; getfacl -n df'
same "garbage ACLs are refused" '
touch ga
setfattr -n system.posix_acl_access -v 0sAAAA ga
setfattr -n system.posix_acl_access -v 0sAgAAAAEABgD/////BAAEAP////8gAAQA/////w== ga
getfacl -n ga'

# ---- inheritance and the umask ----
same "default ACL inheritance" '
mkdir d; setfacl -d -m u:65534:rwx,g:5000:r-x,m::rwx,o::--- d
touch d/f; mkdir d/s; mkdir d/s/t; touch d/s/t/g; mknod d/p p; ln -s f d/l
python3 -c "import os; os.close(os.open(\"d/x\", os.O_CREAT | os.O_WRONLY, 0o640))"
$NOB cat d/f; $U5000 ls d/s
for f in d d/f d/s d/s/t d/s/t/g d/p d/x; do getfacl -n $f; stat -c "%n %a" $f; done
stat -c "%n %A" d/l'
same "the umask without a default ACL" '
umask 027; touch u1; mkdir u2; mknod u3 p
python3 -c "import os; os.close(os.open(\"u4\", os.O_CREAT | os.O_WRONLY, 0o777))"
umask 0; touch u5; mkdir u6
stat -c "%n %a" u1 u2 u3 u4 u5 u6; getfattr -d -m- u1 u2'
same "no umask under a default ACL" '
mkdir ud; setfacl -d -m o::r-x ud
umask 077; touch ud/a; mkdir ud/b
python3 -c "import os; os.close(os.open(\"ud/c\", os.O_CREAT | os.O_WRONLY, 0o600))"
stat -c "%n %a" ud/a ud/b ud/c; getfacl -n ud/a ud/b'
same "a setgid directory and a non-member" '
mkdir sg; chown 0:5000 sg; chmod 2777 sg
$NOB python3 -c "import os; os.close(os.open(\"sg/f\", os.O_CREAT | os.O_WRONLY, 0o2755)); os.mkdir(\"sg/d\", 0o755)"
$U5000 python3 -c "import os; os.close(os.open(\"sg/m\", os.O_CREAT | os.O_WRONLY, 0o2755))"
stat -c "%n %a %u %g" sg/f sg/d sg/m'
same "a setgid directory with a default ACL" '
mkdir sa; chown 0:5000 sa; chmod 2777 sa; setfacl -d -m g:5000:rwx sa
$NOB python3 -c "import os; os.close(os.open(\"sa/f\", os.O_CREAT | os.O_WRONLY, 0o2775)); os.mkdir(\"sa/d\", 0o775)"
stat -c "%n %a %u %g" sa/f sa/d; getfacl -n sa/f sa/d'

# ---- xattr names ----
long250=$(printf 'a%.0s' {1..250})
same "xattr namespaces" '
touch x
for n in user. trusted. security. system.foo system. foo.bar foo user.$0 user.${0}b \
	 user.ok trusted.ok; do
	setfattr -n $n -v v x; echo "set $n: $?"
	getfattr -n $n --only-values x; echo " get $n: $?"
	setfattr -x $n x; echo "remove $n: $?"
done 2>&1 | sed "s/$0/<250>/g"
python3 -c "
import os
for n in (65536, 65537):
    try:
        os.setxattr(\"x\", \"user.v\", b\"v\" * n); print(n, \"stored\")
    except OSError as e:
        print(n, e.strerror)
" | grep -v "^65536"
setfattr -x user.v x 2>/dev/null; true' "$long250"
same "trusted.* is root'\''s" '
touch t; setfattr -n trusted.t -v 1 t; setfattr -n user.u -v 2 t
getfattr -d -m- t
$NOB getfattr -d -m- t; $NOB getfattr -n trusted.t t
$NOB setfattr -n trusted.z -v 1 t; $NOB setfattr -x trusted.t t
$NOADMIN getfattr -d -m- t; $NOADMIN getfattr -n trusted.t t; getfattr -d -m- t'

# ---- setuid/setgid and fallocate ----
same "fallocate clears setuid/setgid" '
for op in "fallocate -l 8192" "fallocate -p -o 0 -l 10" "fallocate -n -l 20000" \
	  "fallocate -p -o 100000 -l 10"; do
	for m in 6755 6745 2745; do
		rm -f g; echo data > g; chown 65534:65534 g; chmod $m g
		$NOB $op g; echo "$op $m: nobody $(stat -c %a g)"
		chmod $m g; $U1000 $op g 2>&1 | cut -d: -f3; echo "$op $m: other $(stat -c %a g)"
		chmod $m g; $op g; echo "$op $m: root $(stat -c %a g)"
	done
done'

same "fallocate drops file capabilities" '
for op in "fallocate -l 8192" "fallocate -p -o 0 -l 10" "fallocate -n -l 100"; do
	rm -f cap; echo x > cap
	setfattr -n security.capability -v 0x0100000200200000000000000000000000000000 cap
	getfattr -m- -d -e hex cap; $op cap; echo "$op:"; getfattr -m- -d -e hex cap
done'

# ---- lsmfs only ----
cases=$((cases + 1))
out=$($NOB getfattr --absolute-names -n user.lsmfs.stats --only-values "$M" 2>&1)
[[ $out == *"Operation not permitted"* ]] || fail "nobody read user.lsmfs.stats: $out"
getfattr --absolute-names -n user.lsmfs.stats --only-values "$M" | python3 -m json.tool >/dev/null ||
	fail "root cannot read user.lsmfs.stats"
cases=$((cases + 1))
out=$(cd "$M/w" && python3 - <<'PY' 2>&1
import errno, os
open("many", "w").close()
n = 0
while True:
    # 255-byte names: 256 bytes each in the list, 256 of them fill 64 KiB
    name = "user.%05d" % n + "n" * 245
    try:
        os.setxattr("many", name, b"")
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
        break
    n += 1
names = os.listxattr("many")
size = sum(len(x) + 1 for x in names)
print(n, len(names), size)
os.setxattr("many", "user.00000" + "n" * 245, b"replaced")  # an existing name: no new room needed
open("big", "w").close()
os.setxattr("big", "user.v", b"v" * 65536)
print(len(os.getxattr("big", "user.v")))
PY
)
[[ $out == $'256 256 65536\n65536' ]] || fail "64 KiB list / 64 KiB value: want 256 names in 65536 bytes and a 65536-byte value, got: $out"

# ---- after a remount: what was stored ----
listing() { # everything under w but the lsmfs-only files, in name order
	cd "$1/w" && find . -mindepth 1 ! -name many ! -name big | sort | while read -r f; do
		stat -c "%n %a %u %g" "$f"
		[[ -L $f ]] || getfacl -n "$f" 2>&1
		getfattr -d -m- -e hex "$f" 2>&1
	done
}
before=$(listing "$E")
[[ $(listing "$M") == "$before" ]] || fail "ext4 and lsmfs trees differ before the remount:
$(diff <(echo "$before") <(listing "$M") | head -40 | cut -c1-200)"
fusermount3 -u "$M"
wait_gone
mount_lsmfs
cases=$((cases + 1))
after=$(listing "$M")
[[ $after == "$before" ]] || fail "after a remount, lsmfs differs from ext4:
$(diff <(echo "$before") <(echo "$after") | head -40 | cut -c1-200)"
same "enforced after a remount" '$NOB cat f; $NOB cat m; $U5000 cat g; $NOB ls d/s; $NOB getfattr -d -m- t'


# ---- the backing disks are root's (issue 34) ----
# A root-owned 0600 file of a few bytes (inline, in the store's log and
# tables) and a name inside a 0700 directory: no other user reads either
# from the disks, nor through lsmfs-inspect, nor holds a lock that a mount
# needs, even one opened when an older version left the files 0644.
cases=$((cases + 1))
SECRET=lsmfs-secret-$RANDOM$RANDOM NAME=lsmfs-name-$RANDOM$RANDOM
echo "$SECRET" > "$M/secret"; chmod 600 "$M/secret"
mkdir -m 700 "$M/hidden"; touch "$M/hidden/$NAME"
fusermount3 -u "$M"
wait_gone
grep -q -a -r -e "$SECRET" -e "$NAME" "$T/d0" "$T/d1" ||
	fail "the secret is not on the disks as root sees them: the test checks nothing"
out=$($NOB grep -a -r -l -e "$SECRET" -e "$NAME" "$T/d0" "$T/d1" 2>/dev/null)
[[ -z $out ]] || fail "nobody reads a 0600 file's bytes or a 0700 directory's names from: $out"
out=$(find "$T"/d[01]/.lsmfs ! -type l -perm /077 -printf '%m %p\n' | head -5)
[[ -z $out ]] || fail "files under .lsmfs that others may read: $out"
out=$($NOB "$B/tools/inspect/lsmfs-inspect" "$T/d0:$T/d1" ls /hidden 2>&1; echo "exit $?")
[[ $out == *"Permission denied"*"exit 8" && $out != *"$NAME"* && $(wc -l <<<"$out") == 2 ]] ||
	fail "lsmfs-inspect as nobody: want one line (Permission denied) and exit 8, got: $out"
cases=$((cases + 1))
# What an older version left: everything 0755/0644.  Nobody opens both
# locks then, the next read-write mount narrows the modes, and the locks
# nobody takes on what it opened stop no mount.
find "$T"/d[01]/.lsmfs -maxdepth 2 -type d -exec chmod 755 {} +
find "$T"/d[01]/.lsmfs -maxdepth 2 -type f -exec chmod 644 {} +
mkfifo "$T/go"
$NOB bash -c 'exec 3<"$1" 4<"$2" || exit 1; echo opened; read -r _ <"$3"
	flock -n -s 3 && flock -n -s 4 && echo held; exec sleep 60' _ \
	"$T/d0/.lsmfs/lock" "$T/d0/.lsmfs/meta/LOCK" "$T/go" >"$T/holder.out" 2>&1 &
holder=$!
for _ in $(seq 50); do [[ -s $T/holder.out ]] && break; sleep 0.1; done
[[ $(cat "$T/holder.out") == opened ]] || fail "nobody could not open the 0644 locks: $(cat "$T/holder.out")"
mount_lsmfs
out=$(find "$T"/d[01]/.lsmfs ! -type l -perm /077 -printf '%m %p\n' | head -5)
[[ -z $out ]] || fail "a read-write mount left what an older version made readable to others: $out"
fusermount3 -u "$M"
wait_gone
echo go >"$T/go"
for _ in $(seq 50); do [[ $(cat "$T/holder.out") == *held* ]] && break; sleep 0.1; done
[[ $(cat "$T/holder.out") == *held* ]] || fail "nobody's locks on the old files: $(cat "$T/holder.out")"
$NOB flock -n -s "$T/d0/.lsmfs/lock" true 2>/dev/null && fail "nobody took a shared lock on .lsmfs/lock"
$NOB flock -n -s "$T/d0/.lsmfs/meta/LOCK" true 2>/dev/null && fail "nobody took a shared lock on meta/LOCK"
"$LSMFS" -o allow_other "$T/d0:$T/d1" "$M" 2>"$T/mount.err" ||
	fail "nobody's shared locks stopped root's mount: $(cat "$T/mount.err")"
kill "$holder"
wait "$holder" 2>/dev/null
fusermount3 -u "$M"
wait_gone
# A user holding a shared lock on an older version's 0644 lock file when
# the first mount comes: the lock is taken from them (no root process has
# the file open); root holding one (a reader of an older version, say)
# still refuses the mount, saying the lock file is open to all.
cases=$((cases + 1))
chmod 755 "$T/d0/.lsmfs"; chmod 644 "$T/d0/.lsmfs/lock"
$NOB bash -c 'exec 3<"$1" && flock -s 3 && echo held && exec sleep 60' _ "$T/d0/.lsmfs/lock" \
	>"$T/holder.out" 2>&1 &
holder=$!
for _ in $(seq 50); do [[ -s $T/holder.out ]] && break; sleep 0.1; done
[[ $(cat "$T/holder.out") == held ]] || fail "nobody could not lock the old lock: $(cat "$T/holder.out")"
"$LSMFS" -o allow_other "$T/d0:$T/d1" "$M" 2>"$T/mount.err" ||
	fail "nobody's shared lock, held since before, stopped root's mount: $(cat "$T/mount.err")"
[[ $(stat -c %a "$T/d0/.lsmfs/lock") == 600 ]] || fail "the old lock file held by nobody was not replaced"
kill "$holder"
wait "$holder" 2>/dev/null
holder=
fusermount3 -u "$M"
wait_gone
chmod 644 "$T/d0/.lsmfs/lock"
bash -c 'exec 3<"$1" && flock -s 3 && echo held && exec sleep 60' _ "$T/d0/.lsmfs/lock" >"$T/holder.out" 2>&1 &
holder=$!
for _ in $(seq 50); do [[ -s $T/holder.out ]] && break; sleep 0.1; done
out=$("$LSMFS" "$T/d0:$T/d1" "$M" 2>&1) && fail "a mount while root holds an old lock shared: $out"
[[ $out == *"open to all: fuser -v names its holders"* ]] ||
	fail "a mount refused by an old lock held shared does not say the file is open to all: $out"
kill "$holder"
wait "$holder" 2>/dev/null
holder=
mount_lsmfs
[[ $(stat -c %a "$T/d0/.lsmfs/lock") == 600 ]] || fail "the old lock file was not replaced once root let go"

fusermount3 -u "$M"
wait_gone
# A --meta directory holds the store as meta/ does: what mkfs makes there
# is root's, and one that existed (0755) is narrowed by the first
# read-write mount.
cases=$((cases + 1))
mkdir -m 755 "$T/e0" "$T/meta"
"$MKFS" -q --meta "$T/meta" "$T/e0" || fail "mkfs --meta"
out=$(find "$T/meta" -mindepth 1 ! -type l -perm /077 -printf '%m %p\n' | head -5)
[[ -z $out ]] || fail "mkfs --meta made files others may read: $out"
"$LSMFS" "$T/e0" "$M" || fail "mount of the --meta filesystem"
echo "$SECRET" > "$M/s"; chmod 600 "$M/s"
fusermount3 -u "$M"
flock -w 10 "$T/e0/.lsmfs/lock" true || fail "the --meta daemon did not exit within 10 s of unmount"
out=$(find "$T/meta" "$T/e0/.lsmfs" ! -type l -perm /077 -printf '%m %p\n' | head -5)
[[ -z $out ]] || fail "a --meta filesystem others may read after a mount: $out"
out=$($NOB grep -a -r -l -e "$SECRET" "$T/meta" 2>/dev/null)
[[ -z $out ]] || fail "nobody reads a 0600 file's bytes from the --meta directory: $out"
grep -q -a -r -e "$SECRET" "$T/meta" || fail "the secret is not in the --meta directory: the test checks nothing"

grep -q -E "Sanitizer|runtime error" "$T/daemon.log" &&
	fail "the daemon's sanitizer report: $(grep -E -A20 "Sanitizer|runtime error" "$T/daemon.log" | head -40)"
echo "test_privilege: $cases cases, $fails failed"
[[ $fails == 0 ]]
