"""Scalar and zero-length datasets made with the Python binding
(docs/python.md, "Scalar datasets" and "Zero-length dimensions"), through
the mount: a scalar is a file of one element's bytes that takes a write in
place and refuses to grow; a zero-length dataset is an empty file, and one
whose first dimension had length 0 grows when bytes are appended."""
import errno
import os
import pathlib
import sys

import numpy as np
import pytest

from conftest import BIN
from mounting import mounter  # noqa: F401

PYTHON_DIR = pathlib.Path(os.environ.get("SLABFS_PYTHON_DIR", BIN.parent / "python")).resolve()
if not (PYTHON_DIR / "slabfs" / "__init__.py").exists():
    raise RuntimeError(f"{PYTHON_DIR}/slabfs is not built (build the _slabfs target, or set SLABFS_PYTHON_DIR)")
sys.path.insert(0, str(PYTHON_DIR))

import slabfs  # noqa: E402


@pytest.fixture
def shapes(tmp_path):
    path = tmp_path / "shapes.slab"
    with slabfs.File(path, "w") as f:
        f.create_dataset("s", data=np.float64(2.5))
        f.create_dataset("g/i", data=np.int16(-3))
        f.create_dataset("e", shape=(0,), dtype="f8")
        f.create_dataset("e2", shape=(3, 0), dtype="u2")
    return path


def test_a_scalar_is_one_element_and_an_empty_dataset_an_empty_file(shapes, mounter):
    m = mounter(shapes, "-o", "ro")
    assert os.path.getsize(m / "s") == 8 and os.path.getsize(m / "g" / "i") == 2
    assert (m / "s").read_bytes() == np.float64(2.5).tobytes()
    assert (m / "g" / "i").read_bytes() == np.int16(-3).tobytes()
    assert np.fromfile(m / "s", dtype="<f8").tolist() == [2.5]
    for name in ("e", "e2"):
        assert os.path.getsize(m / name) == 0 and (m / name).read_bytes() == b""


def test_writes_through_the_mount_read_back_in_python(shapes, mounter):
    m = mounter(shapes)
    fd = os.open(m / "s", os.O_WRONLY)
    try:
        assert os.pwrite(fd, np.float64(-7.25).tobytes(), 0) == 8
        with pytest.raises(OSError) as e:       # a scalar cannot grow
            os.pwrite(fd, b"\0" * 8, 8)
        assert e.value.errno == errno.EFBIG
    finally:
        os.close(fd)
    with open(m / "e", "ab") as out:            # length 0, so it can grow
        out.write(np.array([1.5, 2.5], dtype="<f8").tobytes())
    assert os.path.getsize(m / "e") == 16
    m.unmount()
    with slabfs.File(shapes) as f:
        assert f["s"].shape == () and f["s"][()] == -7.25
        assert f["e"].shape == (2,) and f["e"][...].tolist() == [1.5, 2.5]
        assert f["e2"].shape == (3, 0)
