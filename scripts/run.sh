#!/usr/bin/env bash
# run.sh: the quickstart.  Installs what is needed, builds, and runs a short
# storebench on ${LSMFS_DEMO_DIR:-$HOME/.local/share/lsmfs/storebench}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
db=${LSMFS_DEMO_DIR:-$HOME/.local/share/lsmfs/storebench}
mkdir -p "$db"
./build/tools/storebench --db="$db" --num=200000 \
	--benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq,seekrandom,stats
echo
echo "The store is in $db; inspect it with: ./build/tools/store-tool stats $db"
