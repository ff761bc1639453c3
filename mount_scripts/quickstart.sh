#!/usr/bin/env bash
# Installs what is missing, builds slabfs, and mounts a container.
#
#   mount_scripts/quickstart.sh                      # demo container ./demo.slab at ./mnt
#   mount_scripts/quickstart.sh FILE.slab [MOUNTPOINT]
#
# The daemon logs to ./slabfs.log (SLABFS_LOG=PATH to change it).
#
# Unmount with:  fusermount3 -u MOUNTPOINT
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${SLABFS_BUILD_DIR:-$ROOT/build}

bash "$ROOT/mount_scripts/install_deps.sh"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
TARGETS=(slabfs slab)
# The Python package (build/python), when pybind11 is there: docs/python.md.
if cmake --build "$BUILD_DIR" --target help | grep 'slabfs_python' >/dev/null; then TARGETS+=(slabfs_python); fi
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${TARGETS[@]}"
SLAB="$BUILD_DIR/bin/slab"
SLABFS="$BUILD_DIR/bin/slabfs"

if [ $# -ge 1 ]; then
  CONTAINER=$1
  if [ ! -f "$CONTAINER" ]; then
    echo "quickstart: $CONTAINER does not exist" >&2
    exit 1
  fi
else
  CONTAINER=$PWD/demo.slab
  if [ ! -f "$CONTAINER" ]; then
    echo "quickstart: creating the demo container $CONTAINER"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    /usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
lat = np.linspace(-90, 90, 180)[:, None]
lon = np.linspace(0, 360, 360, endpoint=False)[None, :]
t = (273.15 + 30 * np.cos(np.radians(lat)) + 5 * np.sin(np.radians(3 * lon))).astype('<f4')
np.save(f"{d}/temperature.npy", t)
y, x = np.mgrid[0:256, 0:256]
frames = np.stack([((np.hypot(x - 128, y - 128) + 8 * k) % 64 * 1000).astype('<u2') for k in range(10)])
np.save(f"{d}/frames.npy", frames)
g = np.linspace(0, 2 * np.pi, 64)
field = np.sin(g)[:, None, None] * np.cos(g)[None, :, None] * np.sin(2 * g)[None, None, :]
np.save(f"{d}/field.npy", field.astype('<f8'))
PY
    "$SLAB" create "$CONTAINER"
    "$SLAB" mkgroup -p "$CONTAINER" /climate
    "$SLAB" mkgroup -p "$CONTAINER" /detector
    "$SLAB" mkgroup -p "$CONTAINER" /sim
    "$SLAB" import --create "$CONTAINER" /climate/temperature "$tmp/temperature.npy" --chunks 45,90
    "$SLAB" import --create "$CONTAINER" /detector/frames "$tmp/frames.npy" --chunks 1,256,256 --shuffle --deflate 6 --checksum
    "$SLAB" import --create "$CONTAINER" /sim/field "$tmp/field.npy" --chunks 16,16,16
    "$SLAB" attr "$CONTAINER" /climate/temperature units K
    "$SLAB" attr "$CONTAINER" /climate/temperature description "surface air temperature, 1 degree grid"
    "$SLAB" attr "$CONTAINER" /detector/frames exposure_s 0.25
  fi
fi

MNT=${2:-$PWD/mnt}
# The daemon's log: every refused operation with its reason.
LOG=${SLABFS_LOG:-$PWD/slabfs.log}
mkdir -p "$MNT"
if mountpoint -q "$MNT"; then
  echo "quickstart: $MNT is already a mount point; unmount it first: fusermount3 -u $MNT" >&2
  exit 1
fi
"$SLABFS" "$CONTAINER" "$MNT" -o "log_file=$LOG"
for _ in $(seq 50); do mountpoint -q "$MNT" && break; sleep 0.1; done
if ! mountpoint -q "$MNT"; then
  echo "quickstart: mounting $CONTAINER at $MNT failed" >&2
  exit 1
fi

cat <<MSG
Mounted $CONTAINER at $MNT. Try:

  ls -lR $MNT
  getfattr -d -m - $MNT/climate/temperature
  od -A d -t f4 -N 64 $MNT/climate/temperature
  dd if=$MNT/detector/frames bs=131072 skip=3 count=1 | od -t u2 | head
  du -h --apparent-size $MNT/detector/frames; du -h $MNT/detector/frames   # compressed: shuffle,deflate=6,checksum
  python3 -c "import numpy as np; a = np.fromfile('$MNT/climate/temperature', '<f4').reshape(180, 360); print(a.mean())"
  printf '\\x00\\x00\\x80\\x3f' | dd of=$MNT/climate/temperature bs=1 seek=4 conv=notrunc

When a command fails (Permission denied, File too large, ...), the reason is
in the daemon's log, $LOG, and the last one is on the mount:

  tail $LOG
  getfattr -n user.slab.last_error $MNT

Unmount (changes are committed on unmount, fsync, close, and every 5 s):

  fusermount3 -u $MNT
MSG
