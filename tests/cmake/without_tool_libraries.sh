#!/usr/bin/env bash
# The engine and the daemon need none of the slab tool's libraries (HDF5,
# blosc, CLI11, nlohmann_json): configures a second build directory with
# them hidden (pkg-config sees only fuse3 and libdeflate; find_package of
# CLI11 and nlohmann_json is disabled) and checks that it configures, that
# it has the engine's and the daemon's targets and not the tool's, that no
# source of the engine, the daemon or the public headers includes those
# libraries, and that the daemon's link line in that build names none of
# them. Configure only (a few seconds): building the engine again
# would take minutes.
#
#   without_tool_libraries.sh SOURCE_DIR BUILD_DIR WORK_DIR GENERATOR
set -euo pipefail
src=$1 build=$2 work=$3 generator=$4

fail() { echo "without_tool_libraries: $*" >&2; exit 1; }

# 1. No engine, daemon or public header includes them.
if grep -rnE '#include <(hdf5|H5[A-Za-z]*\.h|blosc|CLI/|nlohmann/)' "$src/engine" "$src/fusefs" "$src/include"; then
  fail "the lines above include a library of the slab tool"
fi

# 2. A configure with them hidden.
rm -rf "$work"
mkdir -p "$work/pkgconfig"
for pc in fuse3 libdeflate; do
  f=$(pkg-config --variable=pcfiledir "$pc")/$pc.pc
  ln -s "$f" "$work/pkgconfig/$pc.pc"
done
log=$work/configure.log
if ! PKG_CONFIG_LIBDIR=$work/pkgconfig PKG_CONFIG_PATH= cmake -S "$src" -B "$work/build" -G "$generator" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON \
    -DSLABFS_BUILD_TESTS=OFF -DSLABFS_BUILD_BENCH=OFF -DSLABFS_BUILD_PYTHON=OFF >"$log" 2>&1; then
  cat "$log" >&2
  fail "the build does not configure without the slab tool's libraries"
fi
grep -q "the slab tool.* are not built; missing: HDF5.*blosc.*CLI11.*nlohmann_json" "$log" ||
  { cat "$log" >&2; fail "no message naming the missing libraries"; }
targets=$(cmake --build "$work/build" --target help 2>/dev/null)
for t in slabfs_engine slabfs_fuse slabfs; do
  grep -qE "(^|[ .])$t(:| |$)" <<<"$targets" || fail "no target $t without the tool's libraries"
done
if grep -qE "(^|[ .])slab(:| |$)" <<<"$targets"; then fail "target slab exists without its libraries"; fi

# 3. That build's daemon links none of them. (The regular build's daemon
# links the HDF5 and Zarr stores when their libraries are there: it mounts
# HDF5 files and Zarr stores in place, docs/mount.md.)
link=$work/build/CMakeFiles/slabfs.dir/link.txt
if [ -f "$link" ]; then
  if grep -qE 'hdf5|blosc' "$link"; then fail "the daemon's link line names HDF5 or blosc: $(cat "$link")"; fi
elif [ -f "$work/build/build.ninja" ]; then
  if sed -n '/^build bin\/slabfs:/,/^$/p' "$work/build/build.ninja" | grep -qE 'hdf5|blosc'; then
    fail "the daemon's link line names HDF5 or blosc"
  fi
else
  fail "no link line for the daemon in $work/build"
fi
rm -rf "$work"
echo "without_tool_libraries: the engine and the daemon configure without HDF5, blosc, CLI11 and nlohmann_json"
