#!/usr/bin/env bash
# run.sh: the quickstart.  Installs what is needed, builds, makes a demo
# lsmfs over two backing directories and mounts it:
#   backing disks  ${LSMFS_DEMO_DIR:-~/.local/share/lsmfs}/disk0, disk1
#   mount point    ${LSMFS_DEMO_DIR:-~/.local/share/lsmfs}/mnt
# Running it again remounts the same filesystem (its files are kept).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
demo=${LSMFS_DEMO_DIR:-$HOME/.local/share/lsmfs}
mkdir -p "$demo/disk0" "$demo/disk1" "$demo/mnt"
if mountpoint -q "$demo/mnt"; then
	echo "lsmfs is already mounted on $demo/mnt"
else
	if [ ! -e "$demo/disk0/.lsmfs/super" ]; then
		./build/mkfs/mkfs.lsmfs -L demo "$demo/disk0" "$demo/disk1"
	fi
	./build/fs/lsmfs "$demo/disk0:$demo/disk1" "$demo/mnt"
fi
echo
df -h "$demo/mnt"
cat <<EOT

lsmfs is mounted on $demo/mnt (data spread over $demo/disk0 and $demo/disk1).
Use it like any directory:   cp -r /etc "$demo/mnt/" && ls "$demo/mnt"
Unmount it with:             fusermount3 -u "$demo/mnt"
Mount it again with:         ./build/fs/lsmfs "$demo/disk0:$demo/disk1" "$demo/mnt"
EOT
