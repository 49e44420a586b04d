#!/bin/bash
# test_selinux_xattr.sh BUILD_DIR: the selinux_xattr mount option
# (fs/engine/attr/xattr.c).
#   - off: get, set and remove of security.selinux fail with EOPNOTSUPP
#     (python names it ENOTSUP: the same number on Linux),
#     listxattr leaves it out; other security.* names and user.* work;
#   - on: security.selinux is kept like any attribute, listed, removed;
#   - a label kept under on stays on the disks under off (hidden) and
#     shows again under on;
#   - auto follows the kernel: on when /sys/fs/selinux/enforce exists;
#   - a bad value is refused with a message and exit 1, nothing mounted;
#   - fsck clean at the end.
NAME=test_selinux_xattr
# shellcheck source=tests/lib/lib.sh
source "$(dirname "$0")/../lib/lib.sh"
command -v python3 >/dev/null || { echo "$NAME: SKIPPED: no python3" >&2; exit 77; }
D=$T/d
mkdir -p "$D" "$M"
"$MKFS" -q "$D" || { echo "$NAME: mkfs failed" >&2; exit 1; }
up() { "$LSMFS" -o "selinux_xattr=$1" "$D" "$M" || { echo "$NAME: mount ($1) failed" >&2; exit 1; }; }
down() { umount_wait "$D"; }
# xa OP NAME [VALUE]: get/set/remove/list on $M/f through the syscalls;
# prints the value, the names, "ok", or the errno's name.
xa() {
	python3 - "$M/f" "$@" <<'PY'
import errno, os, sys
p, op = sys.argv[1], sys.argv[2]
try:
    if op == "get":
        print(os.getxattr(p, sys.argv[3], follow_symlinks=False).decode())
    elif op == "set":
        os.setxattr(p, sys.argv[3], sys.argv[4].encode(), follow_symlinks=False); print("ok")
    elif op == "remove":
        os.removexattr(p, sys.argv[3], follow_symlinks=False); print("ok")
    else:
        print(" ".join(sorted(os.listxattr(p, follow_symlinks=False))))
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}
expect() { # WHAT WANT GOT
	[[ $3 == "$2" ]] || fail "$1: got '$3', want '$2'"
}

up off
touch "$M/f"
expect "off: get" ENOTSUP "$(xa get security.selinux)"
expect "off: set" ENOTSUP "$(xa set security.selinux system_u:object_r:x_t:s0)"
expect "off: remove" ENOTSUP "$(xa remove security.selinux)"
expect "off: another security name" ok "$(xa set security.other v)"
expect "off: user name" ok "$(xa set user.a v)"
expect "off: list" "security.other user.a" "$(xa list)"
down

up on
expect "on: get, none yet" ENODATA "$(xa get security.selinux)"
expect "on: set" ok "$(xa set security.selinux system_u:object_r:x_t:s0)"
expect "on: get" system_u:object_r:x_t:s0 "$(xa get security.selinux)"
expect "on: list" "security.other security.selinux user.a" "$(xa list)"
down

up off
expect "off again: get" ENOTSUP "$(xa get security.selinux)"
expect "off again: list" "security.other user.a" "$(xa list)"
down

up on
expect "on again: the label stayed" system_u:object_r:x_t:s0 "$(xa get security.selinux)"
expect "on again: remove" ok "$(xa remove security.selinux)"
expect "on again: list" "security.other user.a" "$(xa list)"
down

up auto
want=ENOTSUP
[[ -e /sys/fs/selinux/enforce ]] && want=ENODATA
expect "auto (SELinux $([[ $want == ENODATA ]] && echo on || echo off) here)" "$want" "$(xa get security.selinux)"
down

out=$("$LSMFS" -o selinux_xattr=maybe "$D" "$M" 2>&1)
rc=$?
expect "a bad value: exit" 1 "$rc"
[[ $out == *"selinux_xattr must be auto, on or off"* ]] || fail "a bad value: message '$out'"
mounted && fail "a bad value: mounted anyway"

fsck_clean "$D" "at the end"
finish
