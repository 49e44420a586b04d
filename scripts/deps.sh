#!/usr/bin/env bash
# deps.sh: install the Debian 12 packages lsmfs needs to build and test.
# As root it runs apt-get; otherwise it prints the command to run.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config libfuse3-dev fuse3 libxxhash-dev
      liblz4-dev check python3 mergerfs clang libclang-rt-14-dev acl attr procps e2fsprogs
      util-linux man-db groff-base bash-completion gdb)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing packages: ${missing[*]}" >&2
	echo "deps.sh: run as root: apt-get install -y ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
