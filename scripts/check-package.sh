#!/usr/bin/env bash
# check-package.sh: install this tree with meson (prefix /usr/local) and use
# it, uninstall it; then build the Debian package, check it with lintian,
# install it with apt and use it the same way: mkfs -t lsmfs,
# an /etc/fstab line mounted by mount -a, mount -t fuse.lsmfs, fsck -t
# lsmfs, man pages, then remove the package.  It changes the machine it runs
# on (installs packages, edits /etc/fstab for the run): run it in a fresh
# root, as root:
#   ../shared/tools/fresh-debian.sh 'bash scripts/check-package.sh'
# Prints "check-package: ok" last; exits non-zero at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "check-package: run as root, in a fresh root" >&2; exit 2; }
say() { echo "check-package: $*" >&2; }
die() { say "FAIL: $*"; exit 1; }
export DEBIAN_FRONTEND=noninteractive
# root's PATH on Debian (login.defs ENV_SUPATH), whatever called us
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say "build dependencies"
apt-get update -qq
apt-get install -y -qq --no-install-recommends build-essential dpkg-dev debhelper lintian fakeroot meson \
	ninja-build pkg-config libfuse3-dev libxxhash-dev liblz4-dev man-db fuse3 >/dev/null
dpkg-checkbuilddeps || die "dpkg-checkbuilddeps"

W=$(mktemp -d /tmp/check-package.XXXXXX)
ver=$(dpkg-parsechangelog -S Version)
mkdir "$W/lsmfs-$ver"
tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$W/lsmfs-$ver"
say "dpkg-buildpackage -us -uc -b"
(cd "$W/lsmfs-$ver" && dpkg-buildpackage -us -uc -b >"$W/build.log" 2>&1) ||
	{ tail -40 "$W/build.log"; die "dpkg-buildpackage"; }
deb=$(ls "$W"/lsmfs_"$ver"_*.deb)
say "lintian $(basename "$deb")"
lintian --fail-on error,warning "$W"/lsmfs_"$ver"_*.changes || die "lintian"

use_it() { # PREFIX: the installed tools, as a user runs them
	local P=$1
	command -v fsck.fuse.lsmfs >/dev/null || die "no fsck.fuse.lsmfs"
	for c in lsmfs mkfs.lsmfs fsck.lsmfs lsmfs-inspect lsmfs-disk lsmfs-bench; do
		p=$(command -v "$c") || die "$c not on PATH"
		case $p in "$P"/*) ;; *) die "$c is $p, not under $P" ;; esac
		"$c" --version | grep -q "^$c $ver" || die "$c --version: $("$c" --version)"
		say "  $p: $("$c" --version)"
	done
	for page in 8:lsmfs 5:lsmfs 8:mkfs.lsmfs 8:fsck.lsmfs 8:fsck.fuse.lsmfs 8:lsmfs-inspect 8:lsmfs-disk 1:lsmfs-bench; do
		man -w "${page%%:*}" "${page#*:}" >/dev/null || die "man ${page%%:*} ${page#*:}: not found"
	done
	[ -f "$P/share/doc/lsmfs/examples/srv-pool.mount" ] || die "no systemd mount unit example"
	[ -f "$P/share/bash-completion/completions/lsmfs-disk" ] || die "no bash completion"

	say "mkfs -t lsmfs, fstab + mount -a, mount -t, fsck -t"
	D0=/srv/check-disk0 D1=/srv/check-disk1 M=/srv/check-pool
	rm -rf "$D0" "$D1"
	mkdir -p "$D0" "$D1" "$M"
	cp /etc/fstab "$W/fstab.orig"
	cleanup() {
		mountpoint -q "$M" && umount "$M"
		cp "$W/fstab.orig" /etc/fstab
	}
	trap cleanup EXIT
	mkfs -t lsmfs -q "$D0" "$D1" || die "mkfs -t lsmfs"
	echo "$D0:$D1 $M fuse.lsmfs defaults,allow_other,nofail,x-systemd.requires-mounts-for=$D0 0 0" >>/etc/fstab
	mount -a || die "mount -a"
	[ "$(findmnt -n -o FSTYPE "$M")" = fuse.lsmfs ] || die "mount -a did not mount $M"
	head -c 5000000 /dev/urandom >"$W/big"
	cp "$W/big" "$M/big" && echo small >"$M/small" && mkdir "$M/dir" || die "writing through the mount"
	umount "$M" || die "umount"
	# The disks are in fstab as fuse.lsmfs: fsck runs fsck.fuse.lsmfs.  (A
	# missing checker would be skipped in silence, exit 0: look for its output.)
	fsck -n "$D0:$D1" | tee "$W/fsck.out" || die "fsck -n (fstab)"
	grep -q '^fsck.lsmfs: checking' "$W/fsck.out" || die "fsck -n (fstab) did not run fsck.lsmfs"
	cp "$W/fstab.orig" /etc/fstab
	fsck -t lsmfs -n "$D0:$D1" | tee "$W/fsck.out" || die "fsck -t lsmfs -n"
	grep -q '^fsck.lsmfs: checking' "$W/fsck.out" || die "fsck -t lsmfs -n did not run fsck.lsmfs"
	mount -t fuse.lsmfs "$D0:$D1" "$M" || die "mount -t fuse.lsmfs"
	cmp "$W/big" "$M/big" || die "big reads back different"
	[ "$(cat "$M/small")" = small ] || die "small reads back different"
	umount "$M" || die "umount (2)"
	fsck -t lsmfs -n "$D0:$D1" >"$W/fsck.out" && grep -q '^fsck.lsmfs: checking' "$W/fsck.out" ||
		die "fsck -t lsmfs -n (2)"
	trap - EXIT
	cleanup
	rm -rf "$D0" "$D1" "$M"
}

say "meson install (prefix /usr/local)"
meson setup "$W/meson" -Dtests=false --prefix=/usr/local >/dev/null
ninja -C "$W/meson" >/dev/null
meson install -C "$W/meson" --quiet >/dev/null || die "meson install"
use_it /usr/local
ninja -C "$W/meson" uninstall >/dev/null || die "ninja uninstall"
hash -r
command -v lsmfs >/dev/null && die "lsmfs still on PATH after ninja uninstall"

say "apt-get install $(basename "$deb")"
apt-get install -y -qq "$deb" >/dev/null || die "apt-get install"
use_it /usr
say "apt-get remove lsmfs"
apt-get remove -y -qq lsmfs >/dev/null || die "apt-get remove"
hash -r
command -v lsmfs >/dev/null && die "lsmfs still on PATH after remove"
rm -rf "$W"
say "ok"
