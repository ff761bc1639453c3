#!/usr/bin/env bash
# Builds what the Debian package holds and makes it:
#
#   packaging/build_deb.sh [OUTDIR]      # OUTDIR/slabfs_VERSION_ARCH.deb (default: build/)
#
# then, on Debian 12:  apt-get install ./build/slabfs_*.deb   (apt-get remove slabfs removes it)
# The package is laid out by cmake/install.cmake and described in cmake/package.cmake.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${SLABFS_BUILD_DIR:-$ROOT/build}
OUT=$(realpath -m "${1:-$BUILD_DIR}")
bash "$ROOT/mount_scripts/install_deps.sh"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
TARGETS=(slabfs slab)
for t in slabfs_shared slabfs_man slabfs_python; do
  if cmake --build "$BUILD_DIR" --target help | grep -w "$t" >/dev/null; then TARGETS+=("$t"); fi
done
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${TARGETS[@]}"
mkdir -p "$OUT"
cpack -G DEB -B "$OUT" --config "$BUILD_DIR/CPackConfig.cmake" >/dev/null
rm -rf "$OUT/_CPack_Packages"
ls "$OUT"/slabfs_*.deb
