#!/usr/bin/env bash
# Installs slabfs so that `mount -t fuse.slabfs`, /etc/fstab lines of type
# fuse.slabfs and the systemd units work: builds (installing what is
# missing), then `cmake --install --strip` into PREFIX (default /usr/local:
# slabfs, slab and umount-slabfs in PREFIX/bin, libslabfs with its headers,
# CMake and pkg-config files, the man pages, bash completion, the systemd
# service in PREFIX/lib/systemd/system and the examples in
# PREFIX/share/slabfs/systemd, the docs in PREFIX/share/doc/slabfs, and the
# Python package, when it is built, in PREFIX/lib/python3.X/dist-packages,
# where Debian's python3 finds it for /usr/local). A Debian package instead:
# packaging/build_deb.sh.
#
#   mount_scripts/install.sh [PREFIX]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${1:-/usr/local}
BUILD_DIR=${SLABFS_BUILD_DIR:-$ROOT/build}
bash "$ROOT/mount_scripts/install_deps.sh"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
TARGETS=(slabfs slab)
for t in slabfs_shared slabfs_man; do
  if cmake --build "$BUILD_DIR" --target help | grep -w "$t" >/dev/null; then TARGETS+=("$t"); fi
done
PYTHON=0
if cmake --build "$BUILD_DIR" --target help | grep 'slabfs_python' >/dev/null; then
  TARGETS+=(slabfs_python)
  PYTHON=1
fi
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${TARGETS[@]}"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" --component Unspecified --strip >/dev/null
if [ "$PYTHON" = 1 ]; then
  cmake --install "$BUILD_DIR" --prefix "$PREFIX" --component python --strip >/dev/null
fi
echo "slabfs: installed into $PREFIX (try: mount -t fuse.slabfs FILE.slab /mnt/point)"
