#!/bin/bash
# test_install.sh BUILD_DIR: `meson install` into a scratch DESTDIR, then
# the installed tools used the way people use e2fsprogs and mergerfs,
# through the system's own front ends and nothing else on PATH:
# mkfs -t lsmfs, mount -t fuse.lsmfs (mount.fuse3 runs lsmfs from
# /usr/local/bin), an fstab line mounted with mount -a (-T: a scratch fstab,
# not /etc/fstab), fsck -t lsmfs, umount; man finds every installed page;
# every completion file is installed and loads.  The mount half needs root,
# /dev/fuse, the default prefix and a private mount namespace; without one
# of them it is skipped, said on stderr, and the test exits 77 (skipped)
# unless the install half failed.
set -u

# in_namespace R T: the mount half, run in a private mount namespace where
# the installed tree R is bound over /usr/local:
# mount(8) runs mount.fuse3 with no PATH, so /bin/sh's default path, which
# has /usr/local/bin, must find lsmfs as on a machine where it is installed;
# the machine's own /usr/local is left as it was.
in_namespace() {
	local R=$1 T=$2 D
	fails=0
	fail() { echo "test_install: FAIL: $*" >&2; fails=$((fails + 1)); }
	mount --bind "$R" /usr/local || {
		echo "test_install: FAIL: bind mount over /usr/local" >&2
		return 1
	}
	# Whatever fails below, no daemon outlives the test in this namespace
	# (it would keep the namespace, and the disks being deleted, alive).
	# shellcheck disable=SC2064 # $T now: it is local, gone at exit
	trap "for m in '$T/mnt' '$T/mnt2'; do mountpoint -q \"\$m\" && fusermount3 -uz \"\$m\"; done" EXIT
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	mkdir -p "$T/d0" "$T/d1" "$T/mnt" "$T/mnt2"
	D=$T/d0:$T/d1
	mkfs -t lsmfs -q "$T/d0" "$T/d1" || fail "mkfs -t lsmfs: exit $?"
	if mount -t fuse.lsmfs "$D" "$T/mnt"; then
		findmnt -n -o FSTYPE "$T/mnt" | grep -qx fuse.lsmfs || fail "mount -t: $(findmnt -n "$T/mnt")"
		head -c 300000 /dev/urandom >"$T/file"
		cp "$T/file" "$T/mnt/file" && mkdir "$T/mnt/dir" && echo hello >"$T/mnt/dir/small"
		umount "$T/mnt" || fail "umount: exit $?"
	else
		fail "mount -t fuse.lsmfs $D: exit $?"
	fi
	mountpoint -q "$T/mnt" && fail "still mounted after umount"
	fsck -t lsmfs -n "$D" >"$T/fsck.log" 2>&1 && grep -q "^fsck.lsmfs: checking $D" "$T/fsck.log" ||
		fail "fsck -t lsmfs -n: exit $?: $(cat "$T/fsck.log")"
	# fsck -a (what fsck -A and preen pass on) is taken as -p.
	fsck -t lsmfs -a "$D" >"$T/fsck.log" 2>&1 || fail "fsck -t lsmfs -a: exit $?: $(cat "$T/fsck.log")"
	
	# An fstab line as doc/examples/fstab has it, mounted by mount -a.
	printf '%s %s fuse.lsmfs defaults,nofail,x-systemd.requires-mounts-for=%s 0 0\n' \
		"$D" "$T/mnt2" "$T/d0" >"$T/fstab"
	if mount -a -T "$T/fstab"; then
		cmp -s "$T/file" "$T/mnt2/file" || fail "mount -a: the file written before reads back different"
		[[ $(cat "$T/mnt2/dir/small" 2>/dev/null) == hello ]] || fail "mount -a: dir/small"
		umount "$T/mnt2" || fail "umount (fstab): exit $?"
	else
		fail "mount -a -T fstab: exit $?"
	fi
	fsck -t lsmfs -n "$D" >"$T/fsck.log" 2>&1 || fail "fsck -n after the fstab mount: exit $?: $(cat "$T/fsck.log")"
	# With the disks in fstab as fuse.lsmfs, fsck takes the type from
	# there and runs fsck.fuse.lsmfs; had it no such checker it would say
	# nothing and exit 0, so the output must show the check ran.
	for t in "" "-t fuse.lsmfs" "-t lsmfs"; do
		# shellcheck disable=SC2086 # $t: no option or one
		FSTAB_FILE=$T/fstab fsck $t -n "$D" >"$T/fsck.log" 2>&1
		rc=$?
		[[ $rc == 0 ]] && grep -q "^fsck.lsmfs: checking $D" "$T/fsck.log" ||
			fail "fsck $t -n with the disks in fstab: exit $rc: $(cat "$T/fsck.log")"
	done
	
	for m in "$T/mnt" "$T/mnt2"; do mountpoint -q "$m" && umount "$m"; done
	return $((fails > 0))
}
if [[ ${1:-} == --in-namespace ]]; then
	in_namespace "$2" "$3"
	exit $?
fi

B=$(cd "${1:?usage: test_install.sh BUILD_DIR}" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-install.XXXXXX")
fails=0
trap 'rm -rf "$T"' EXIT
fail() { echo "test_install: FAIL: $*" >&2; fails=$((fails + 1)); }

prefix=$(meson introspect --buildoptions "$B" |
	python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
if ! meson install -C "$B" --no-rebuild --quiet --destdir "$T/root" >"$T/install.log" 2>&1; then
	cat "$T/install.log" >&2
	echo "test_install: FAIL: meson install" >&2
	exit 1
fi
R=$T/root$prefix

# Where e2fsprogs and mergerfs put theirs: the admin tools in sbin, the
# daemon (run by mount.fuse3 from PATH) and the benchmark in bin.
for f in sbin/mkfs.lsmfs sbin/fsck.lsmfs sbin/fsck.fuse.lsmfs sbin/lsmfs-inspect sbin/lsmfs-disk bin/lsmfs \
	bin/lsmfs-bench; do
	[[ -x $R/$f ]] || fail "not installed: $prefix/$f"
done
for f in share/man/man8/lsmfs.8 share/man/man5/lsmfs.5 share/man/man8/mkfs.lsmfs.8 \
	share/man/man8/fsck.lsmfs.8 share/man/man8/fsck.fuse.lsmfs.8 share/man/man8/lsmfs-inspect.8 share/man/man8/lsmfs-disk.8 \
	share/man/man1/lsmfs-bench.1 share/doc/lsmfs/FORMAT.md share/doc/lsmfs/SCHEMA.md \
	share/doc/lsmfs/examples/fstab share/doc/lsmfs/examples/srv-pool.mount; do
	[[ -f $R/$f ]] || fail "not installed: $prefix/$f"
done
for c in lsmfs mkfs.lsmfs fsck.lsmfs lsmfs-inspect lsmfs-disk lsmfs-bench; do
	f=$R/share/bash-completion/completions/$c
	if [[ ! -f $f ]]; then
		fail "not installed: completion for $c"
	elif ! bash -c 'source "$1" 2>&1 && complete -p "$2" >/dev/null' _ "$f" "$c" >"$T/c.log" 2>&1; then
		fail "completion for $c does not load or register: $(cat "$T/c.log")"
	fi
done
# The build's developer tools stay out of the install.
for f in bin/storebench bin/store-tool; do [[ -e $R/$f ]] && fail "installed, but should not be: $f"; done
if command -v man >/dev/null; then
	for p in lsmfs.8 mkfs.lsmfs.8 fsck.lsmfs.8 lsmfs-inspect.8 lsmfs-disk.8 lsmfs.5 lsmfs-bench.1; do
		name=${p%.*} sec=${p##*.}
		MANPATH=$R/share/man man -w "$sec" "$name" >/dev/null 2>&1 || fail "man $sec $name: not found"
	done
fi

# skip_mounts WHY: the install half is done; the mount half cannot run
# here.  A failure above still fails; else the test is a skip (77), not a
# pass: mkfs, mount, fstab and fsck through the front ends went unchecked.
skip_mounts() {
	echo "test_install: mount checks SKIPPED: $*" >&2
	((fails)) && exit 1
	exit 77
}
if [[ $(id -u) != 0 || ! -c /dev/fuse ]] || ! command -v mount.fuse3 >/dev/null; then
	skip_mounts "they need root, /dev/fuse and mount.fuse3"
fi
[[ $prefix == /usr/local ]] || skip_mounts "prefix $prefix: they stand in for /usr/local"
if ! unshare -m --propagation private true 2>"$T/unshare.log"; then
	# e.g. in a chroot, where / is no mount point to make private
	skip_mounts "no private mount namespace here: $(cat "$T/unshare.log")"
fi
unshare -m --propagation private bash "$0" --in-namespace "$R" "$T" || fail "the mount checks (above)"
((fails)) && exit 1
echo "test_install: ok"
