#!/bin/bash
# test_stall.sh BUILD_DIR: a request held up in the daemon by a backing
# disk that stopped answering holds up no other request (fs/loop.c).
#
# Disk 1 is an eiofs mount (tests/disk/eiofs.c) whose statfs() blocks for
# as long as a "stall statfs" rule is in its rule file, as a dead NFS
# server's would: lsmfs's statfs asks every disk, so three `stat -f` of
# the mount wait in the daemon, one after the other.  Meanwhile another
# process must get through a stat, a create, a write, a listing, a read
# and an unlink, each within seconds, and then 100 more creates and
# unlinks.  Then the rule goes and the three `stat -f` answer.  The daemon
# serves a serial client on one thread and puts more threads to reading
# only when every reader is held up (fs/loop.c): without that, the first
# stalled request would hold up everything here.  Last, the unmount, and
# fsck finds the filesystem clean.
NAME=test_stall
# shellcheck source=tests/disk/lib.sh
source "$(dirname "$0")/lib.sh"
EIOFS=$B/tests/disk/eiofs
D0=$T/d0 D1=$T/d1 S1=$T/d1src RULES=$T/rules
cleanup_more() {
	rm -f "$RULES"
	fusermount3 -u "$D1" 2>/dev/null || umount -l "$D1" 2>/dev/null
	wait 2>/dev/null
}
mkdir -p "$D0" "$D1" "$S1" "$M"
: > "$RULES"
"$EIOFS" "$S1" "$D1" "$RULES" -f 2> "$T/eiofs.err" &
for _ in $(seq 100); do mountpoint -q "$D1" && break; sleep 0.05; done
mountpoint -q "$D1" || { echo "$NAME: eiofs did not mount: $(cat "$T/eiofs.err")" >&2; exit 1; }

"$MKFS" -q "$D0" "$D1" || { echo "$NAME: mkfs failed" >&2; exit 1; }
mount_fg "$T/lsmfs.log" "$D0:$D1" || { echo "$NAME: mount failed: $(cat "$T/lsmfs.log")" >&2; exit 1; }
printf 'small' > "$M/inline"
head -c 300000 /dev/urandom > "$T/big"
cp "$T/big" "$M/big"
stat -f "$M" > /dev/null || fail "stat -f before the stall"

echo "stall statfs" > "$RULES"
pids=()
for i in 1 2 3; do
	stat -f "$M" > "$T/df$i.out" 2>&1 &
	pids+=($!)
done
sleep 1
for i in 1 2 3; do
	kill -0 "${pids[$((i - 1))]}" 2>/dev/null || fail "stat -f $i did not wait for the stalled disk"
done

# Everything else goes on, each step within seconds.
step() { # WHAT CMD...
	local what=$1
	shift
	timeout 10 "$@" > /dev/null 2>&1 || fail "$what: held up behind the stalled requests (or failed)"
}
step "stat" stat "$M/inline"
step "create" touch "$M/new"
step "write" sh -c "printf 'abc' > '$M/new2'"
step "listing" ls -l "$M"
step "read" cmp "$M/big" "$T/big"
step "unlink" rm "$M/new"
step "100 creates and unlinks" sh -c "for i in \$(seq 100); do echo \$i > '$M'/f\$i && rm '$M'/f\$i || exit 1; done"
[[ $(cat "$M/inline") == small ]] || fail "inline file reads wrong"
[[ $(cat "$M/new2") == abc ]] || fail "new file reads wrong"
for i in 1 2 3; do
	kill -0 "${pids[$((i - 1))]}" 2>/dev/null || fail "stat -f $i answered while its disk was stalled"
done

# The disk answers again: so do the three.
: > "$RULES"
for i in 1 2 3; do
	wait "${pids[$((i - 1))]}" || fail "stat -f $i after the stall: $(cat "$T/df$i.out")"
done
umount_wait "$D0:$D1" || fail "unmount"
"$FSCK" -n "$D0:$D1" > "$T/fsck.out" 2>&1 || fail "fsck after the stall: $(cat "$T/fsck.out")"
((fails == 0)) || exit 1
say "ok"
