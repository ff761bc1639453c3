"""The stores' fixture files, made for a test module by the fixture makers
the C++ store tests use (tests/stores/hdf5/make_fixtures.py with h5py and
netCDF4, tests/stores/zarr/make_fixtures.py with zarr-python), so that the
Python, CLI and mount tests check the same files the same way.

    lines = make_store_fixtures("hdf5", directory)

returns the manifest's lines, each split at its tabs (the makers' docstrings
say what each kind of line holds). A maker that exits 77 (a Python package
it needs is missing) skips the calling test, which ctest then reports as
skipped (skips_as_ctest_skips.py); any other failure fails it."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAKERS = {kind: ROOT / "tests" / "stores" / kind / "make_fixtures.py" for kind in ("hdf5", "zarr")}


def make_store_fixtures(kind, directory):
    cp = subprocess.run([sys.executable, str(MAKERS[kind]), str(directory)], capture_output=True, text=True)
    if cp.returncode == 77:
        pytest.skip(f"the {kind} fixtures need a Python package that is missing: {cp.stderr.strip()}")
    assert cp.returncode == 0, f"{MAKERS[kind]} failed: {cp.stderr}"
    return [ln.split("\t") for ln in (pathlib.Path(directory) / "manifest.txt").read_text().splitlines()]
