#!/usr/bin/env bash
# Makes the input files of the README's tour and the docs' examples, in the
# current directory (or DIR), with Debian's /usr/bin/python3 (numpy, h5py,
# netCDF4, zarr: mount_scripts/install_deps.sh installs them).
#
#   mount_scripts/make_examples.sh [DIR]            # every input below
#   mount_scripts/make_examples.sh --demo FILE      # only the demo container (quickstart.sh)
#
# What it makes (existing files are left alone, so a rerun is cheap):
#   demo.slab       the demo container quickstart.sh mounts: /climate/temperature
#                   (180 x 360 f4), /detector/frames (10 x 256 x 256 u2, shuffle,
#                   deflate 6, checksum), /sim/field (64 x 64 x 64 f8)
#   frame000.bin .. frame199.bin   256 x 256 u2 frames, 128 KiB each
#   patch.bin       a 64 x 64 u2 window
#   temp.bin        1024 x 1024 f4, a smooth field in steps of 1/64 (compresses about 8:1)
#   roi.bin         10 rows of 2048 u2
#   frames.raw      4 x 2048 x 2048 u2, raw bytes
#   field.npy       64 x 64 x 64 f8
#   frame1.raw frame2.raw          512 x 512 u2 frames
#   climate.nc      netCDF-4: time, lat, lon and tas(time, lat, lon) in K
#   climate.zarr    Zarr v2: /surface/temp (4 x 90 x 180 f4), /surface/pressure
#   run.h5          HDF5: /entry/data (8 x 64 x 64 u2), /entry/exposure
#
# slab is taken from $SLABFS_BIN, else the build (build/bin), else PATH.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3

find_slab() {
  if [ -n "${SLABFS_BIN:-}" ] && [ -x "$SLABFS_BIN/slab" ]; then echo "$SLABFS_BIN/slab"
  elif [ -x "$ROOT/build/bin/slab" ]; then echo "$ROOT/build/bin/slab"
  elif command -v slab >/dev/null; then command -v slab
  else echo "make_examples: no slab program: build it (mount_scripts/quickstart.sh) or set SLABFS_BIN" >&2; exit 1
  fi
}

# The demo container: the arrays come from numpy, the container from slab.
make_demo() {
  local container=$1 slab
  slab=$(find_slab)
  tmp=$(mktemp -d)  # global: the EXIT trap removes it
  trap 'rm -rf "${tmp:-}"' EXIT
  "$PY" - "$tmp" <<'PY'
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
  "$slab" create "$container"
  "$slab" mkgroup -p "$container" /climate
  "$slab" mkgroup -p "$container" /detector
  "$slab" mkgroup -p "$container" /sim
  "$slab" import --create "$container" /climate/temperature "$tmp/temperature.npy" --chunks 45,90 >/dev/null
  "$slab" import --create "$container" /detector/frames "$tmp/frames.npy" --chunks 1,256,256 --shuffle --deflate 6 --checksum >/dev/null
  "$slab" import --create "$container" /sim/field "$tmp/field.npy" --chunks 16,16,16 >/dev/null
  "$slab" attr "$container" /climate/temperature units K
  "$slab" attr "$container" /climate/temperature description "surface air temperature, 1 degree grid"
  "$slab" attr "$container" /detector/frames exposure_s 0.25
  rm -rf "$tmp"
}

if [ "${1:-}" = --demo ]; then
  [ $# -eq 2 ] || { echo "usage: make_examples.sh --demo FILE" >&2; exit 2; }
  make_demo "$2"
  exit 0
fi
if [ $# -gt 1 ] || [[ "${1:-}" == -* ]]; then
  echo "usage: make_examples.sh [DIR] | --demo FILE" >&2; exit 2
fi
DIR=${1:-.}
mkdir -p "$DIR"
cd "$DIR"

[ -e demo.slab ] || make_demo "$PWD/demo.slab"

"$PY" - <<'PY'
import os
import numpy as np

def save(name, a):
    if not os.path.exists(name):
        a.tofile(name)

y, x = np.mgrid[0:256, 0:256]
for k in range(200):
    save(f"frame{k:03d}.bin", ((x * 7 + y * 13 + k * 101) % 4096).astype('<u2'))
save("patch.bin", np.full((64, 64), 4242, '<u2'))
g = np.linspace(0, 4 * np.pi, 1024, dtype='f8')
temp = 280 + 10 * np.sin(g)[:, None] * np.cos(g)[None, :]
save("temp.bin", (np.round(temp * 64) / 64).astype('<f4'))  # to 1/64 K, as a sensor records
save("roi.bin", np.arange(10 * 2048, dtype='<u2').reshape(10, 2048) % 1000 + 1)
if not os.path.exists("frames.raw"):
    with open("frames.raw", "wb") as f:
        yy, xx = np.mgrid[0:2048, 0:2048]
        for k in range(4):
            ((xx + yy + 512 * k) % 65536).astype('<u2').tofile(f)
if not os.path.exists("field.npy"):
    g = np.linspace(0, 2 * np.pi, 64)
    np.save("field.npy", np.sin(g)[:, None, None] * np.cos(g)[None, :, None] * np.sin(2 * g)[None, None, :])
y, x = np.mgrid[0:512, 0:512]
save("frame1.raw", ((x + y) % 1024).astype('<u2'))
save("frame2.raw", ((x * y) % 1024).astype('<u2'))

lat = np.linspace(-89.5, 89.5, 90, dtype='f4')
lon = np.linspace(0, 358, 180, dtype='f4')
tas = (273.15 + 30 * np.cos(np.radians(lat))[None, :, None]
       + np.arange(4, dtype='f4')[:, None, None] + 0 * lon[None, None, :]).astype('f4')

if not os.path.exists("climate.nc"):
    import netCDF4
    with netCDF4.Dataset("climate.nc", "w", format="NETCDF4") as nc:
        nc.title = "a small climate file"
        for name, values in (("time", np.arange(4, dtype='f8')), ("lat", lat), ("lon", lon)):
            nc.createDimension(name, len(values))
            v = nc.createVariable(name, values.dtype, (name,))
            v[:] = values
        nc["time"].units = "days since 2026-01-01"
        nc["lat"].units = "degrees_north"
        nc["lon"].units = "degrees_east"
        v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                              chunksizes=(1, 90, 180))
        v.units = "K"
        v.long_name = "near-surface air temperature"
        v[:] = tas

if not os.path.exists("climate.zarr"):
    import zarr
    root = zarr.open_group("climate.zarr", mode="w")
    s = root.create_group("surface")
    t = s.create_dataset("temp", data=tas, chunks=(1, 90, 180))
    t.attrs["units"] = "K"
    t.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
    p = s.create_dataset("pressure", data=np.full((4, 90, 180), 1013.25, 'f4'), chunks=(1, 90, 180))
    p.attrs["units"] = "hPa"
    p.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]

if not os.path.exists("run.h5"):
    import h5py
    with h5py.File("run.h5", "w") as f:
        d = f.create_dataset("entry/data", data=(np.arange(8 * 64 * 64) % 4096).astype('<u2').reshape(8, 64, 64),
                             chunks=(1, 64, 64), compression="gzip")
        d.attrs["units"] = "counts"
        f["entry/exposure"] = np.full(8, 0.25)
PY
echo "make_examples: the tour's inputs are in $PWD"
