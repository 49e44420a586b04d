#!/bin/bash
# test_install_skip.sh BUILD_DIR: test_install.sh where no private mount
# namespace can be made (as in a chroot; here an unshare(1) first on PATH
# that fails as it does there): its mount half cannot run, so it must say
# SKIPPED and exit 77, never 0 (a pass that checked no mount).
set -u
B=$(cd "${1:?usage: test_install_skip.sh BUILD_DIR}" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/lsmfs-install-skip.XXXXXX")
trap 'rm -rf "$T"' EXIT
printf '#!/bin/sh\necho "unshare: cannot change root filesystem propagation: Invalid argument" >&2\nexit 1\n' \
	>"$T/unshare"
chmod +x "$T/unshare"
PATH=$T:$PATH bash "$(dirname "$0")/test_install.sh" "$B" 2>"$T/err"
rc=$?
if [[ $rc != 77 ]] || ! grep -q "mount checks SKIPPED" "$T/err"; then
	echo "test_install_skip: FAIL: want exit 77 and SKIPPED on stderr, got exit $rc: $(cat "$T/err")" >&2
	exit 1
fi
echo "test_install_skip: ok ($(grep SKIPPED "$T/err"))"
