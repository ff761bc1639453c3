#!/usr/bin/env bash
# Installs every Debian package slabfs needs to build, test and mount.
# Both README commands (mount_scripts/quickstart.sh and tests/run.sh) call this;
# it does nothing when everything is already present.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  fuse3 libfuse3-dev
  zlib1g-dev libdeflate-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev
  libboost-filesystem-dev libcli11-dev nlohmann-json3-dev
  attr coreutils util-linux mount procps tar rsync vim git
  systemd  # systemd-analyze verify of the units in mount_scripts/systemd
  libhdf5-dev hdf5-tools  # slab import/export of HDF5; the peer the benchmarks compare against
  libblosc-dev  # Zarr stores compressed with blosc
  libpng-dev python3-pil  # the .png views of the mount; the tests decode them with Pillow too
  clang-16 libclang-rt-16-dev  # the libFuzzer targets (fuzz/run.sh)
  clang-format-14  # the format stage of tests/run.sh: the C++ layout (.clang-format)
  python3 python3-numpy python3-pytest
  python3-h5py python3-netcdf4 python3-zarr python3-numcodecs python3-dask  # interop tests
  netcdf-bin  # ncdump reads exported netCDF-4 files in the tests
  bindfs  # a FUSE fs that only passes through to a directory: bench/files_bench.py's FUSE floor
  time  # /usr/bin/time measures the peak memory of an import in the tests
  help2man  # the man pages slabfs(1) and slab(1), from --help
  lintian  # checks the .deb that cpack builds (tests/integration/test_package_deb.py)
  python3-pip python3-setuptools python3-wheel  # pip install ./python (tests/integration/test_pip_install.py)
  pybind11-dev python3-pybind11 python3-dev python3-xarray python3-distributed  # the Python binding, Dask, xarray
  pyflakes3 python3-mypy  # the pycheck stage of tests/run.sh: lint and type checks of python/slabfs
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "slabfs: installing missing packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "slabfs: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
