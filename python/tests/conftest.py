"""Shared setup for the Python binding's tests: import slabfs from the
build tree (build/python, or SLABFS_PYTHON_DIR), also in worker processes
that Dask starts, and give each test a fresh container path."""
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON_DIR = pathlib.Path(os.environ.get("SLABFS_PYTHON_DIR", ROOT / "build" / "python")).resolve()

if not (PYTHON_DIR / "slabfs" / "__init__.py").exists():
    raise RuntimeError(f"{PYTHON_DIR}/slabfs is not built (build first, or set SLABFS_PYTHON_DIR)")
sys.path.insert(0, str(PYTHON_DIR))
# Worker processes (multiprocessing spawn, dask.distributed) import it too.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH")]))

import slabfs  # noqa: E402

assert pathlib.Path(slabfs.__file__).resolve().parent == PYTHON_DIR / "slabfs", slabfs.__file__


@pytest.fixture
def path(tmp_path):
    """A container path that does not exist yet."""
    return str(tmp_path / "test.slab")
