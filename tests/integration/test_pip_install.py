"""`pip install ./python` (python/pyproject.toml: Debian's setuptools, the
extension built by the project's CMake through python/setup.py), offline and
without build isolation, into a temporary directory; then `import slabfs`
from there with /usr/bin/python3, its metadata and the xarray entry point.
SLABFS_CMAKE_BUILD_DIR points setup.py at this build, so nothing is rebuilt
that is up to date."""
import os
import subprocess
import textwrap

import pytest

from conftest import BIN, ROOT

BUILD = BIN.parent


def test_pip_install_builds_and_installs_the_package(tmp_path):
    for module in ("pip", "setuptools", "wheel"):
        if subprocess.run(["/usr/bin/python3", "-c", f"import {module}"], capture_output=True).returncode:
            pytest.skip(f"python3-{module} is not installed (mount_scripts/install_deps.sh installs it)")
    if not list((BUILD / "python" / "slabfs").glob("_slabfs*.so")):
        pytest.skip("the Python binding is not built in this build (pybind11-dev, python3-dev)")
    target = tmp_path / "site"
    env = dict(os.environ, SLABFS_CMAKE_BUILD_DIR=str(BUILD), PIP_NO_CACHE_DIR="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore")
    cp = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--no-build-isolation", "--no-index",
                         "--no-deps", "--target", str(target), str(ROOT / "python")],
                        capture_output=True, text=True, env=env, timeout=1200)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert (target / "slabfs" / "py.typed").exists() and (target / "slabfs" / "_slabfs.pyi").exists()
    code = textwrap.dedent("""\
        import sys, importlib.metadata as md, numpy as np, slabfs
        assert slabfs.__file__.startswith(sys.argv[1]), slabfs.__file__
        with slabfs.File(sys.argv[2], "w") as f:
            f.create_dataset("t", data=np.arange(6, dtype="<u2"))
        with slabfs.File(sys.argv[2]) as f:
            print(int(f["t"][5]))
        m = md.metadata("slabfs")
        print(m["Version"], m["License"])
        eps = md.entry_points(group="xarray.backends")
        print([e.value for e in eps if e.name == "slabfs"])
        """)
    out = subprocess.run(["/usr/bin/python3", "-c", code, str(target), str(tmp_path / "p.slab")],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(target)),
                         timeout=120)
    assert out.returncode == 0, out.stderr
    version = (ROOT / "CMakeLists.txt").read_text().split("project(slabfs VERSION ")[1].split()[0]
    assert out.stdout.splitlines() == ["5", f"{version} MIT", "['slabfs.xarray_backend:SlabfsBackendEntrypoint']"]
