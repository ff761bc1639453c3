"""Zarr directory stores mounted in place (`slabfs store.zarr mnt`): the same
file view as a container's, read through the Zarr store
(stores/zarr/). Stores are made here with Debian's zarr (v2) and with the
hand-written v3 writer of zarr_stores.py (Debian's zarr 2.13 writes no v3
stores); every array read through the mount (read(2), numpy memmap, slice
and .npy views, SEEK_DATA) is compared byte for byte with what zarr-python
(or numpy, for v3) holds; reading leaves the store as it was, and a
read-only mount (-o ro) refuses every change with EROFS. Writing through the
mount is test_mount_zarr_write.py's.
"""
import errno
import os

import numpy as np
import pytest

from conftest import run
from mounting import mounter  # noqa: F401

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

from zarr_stores import (V3_CASES, arrays_of, le_bytes, make_v2_store, tree_digest,  # noqa: E402
                         values, write_v3_array)


def getfattr(path, name):
    return os.getxattr(path, name).decode()


@pytest.fixture
def store(tmp_path):
    """The v2 store the Zarr mount tests share (zarr_stores.make_v2_store)."""
    return make_v2_store(tmp_path / "data.zarr")


def test_every_array_reads_as_zarr_python_reads_it(store, mounter):
    before = tree_digest(store)
    m = mounter(store)
    want = arrays_of(store)
    assert set(want) == {"run1/frames", "run1/big_endian", "run1/fortran", "run1/nested", "bytes", "scalar",
                         "sparse"}
    for name, arr in want.items():
        p = m.path / name
        got = p.read_bytes()
        assert got == le_bytes(arr), name
        assert os.stat(p).st_size == len(got)
        with open(p, "rb") as f:
            for off, n in ((1, 7), (len(got) // 3, 1001), (len(got) - 3, 10)):
                f.seek(off)
                assert f.read(n) == got[off:off + n], (name, off, n)
    frames = np.memmap(m.path / "run1" / "frames", dtype="<f4", mode="r", shape=(6, 40, 50))
    assert np.array_equal(frames[4], want["run1/frames"][4])
    del frames
    assert np.array_equal(np.fromfile(m.path / "run1" / "big_endian", dtype="<i2").reshape(20, 15),
                          want["run1/big_endian"])
    m.unmount()
    assert tree_digest(store) == before  # never written


def test_tree_attributes_and_layout_xattrs(store, mounter):
    m = mounter(store)
    assert sorted(os.listdir(m.path)) == ["bytes", "run1", "scalar", "sparse"]
    assert sorted(os.listdir(m.path / "run1")) == ["big_endian", "fortran", "frames", "nested"]
    assert run("ls", "-lR", m.path).returncode == 0
    assert getfattr(m.path, "user.title") == "detector run"
    assert getfattr(m.path, "user.gain") == "1.5,2.5"
    assert getfattr(m.path / "run1", "user.operator") == "ada"
    frames = m.path / "run1" / "frames"
    assert getfattr(frames, "user.units") == "counts"
    assert getfattr(frames, "user.slab.dtype") == "f4"
    assert getfattr(frames, "user.slab.shape") == "6,40,50"
    assert getfattr(frames, "user.slab.chunks") == "1,16,16"
    assert getfattr(m.path / "run1" / "big_endian", "user.slab.dtype") == "i2"
    # The root says what is mounted and what could not be shown, by name.
    assert getfattr(m.path, "user.slab.format") == "zarr"
    skipped = getfattr(m.path, "user.slab.skipped")
    for name in ("/flags", "/texts", "/lzma"):
        assert name in skipped
        assert not os.path.exists(m.path / name.lstrip("/"))


def test_views_and_holes(store, mounter):
    m = mounter(store)
    want = arrays_of(store)
    frames = want["run1/frames"]
    assert (m.path / "run1" / "frames[2]").read_bytes() == le_bytes(frames[2])
    assert (m.path / "run1" / "frames[1:5:2,3,10:20]").read_bytes() == le_bytes(frames[1:5:2, 3, 10:20])
    assert np.array_equal(np.load(m.path / "run1" / "frames[0].npy"), frames[0:1])
    fortran = want["run1/fortran"]
    assert (m.path / "run1" / "fortran[5:25,3:16]").read_bytes() == le_bytes(fortran[5:25, 3:16])
    text = (m.path / "run1" / "big_endian[0:2].txt").read_text().split()
    assert [int(v) for v in text] == list(range(30))
    sparse = m.path / "sparse"
    fd = os.open(sparse, os.O_RDONLY)
    try:
        first = os.lseek(fd, 0, os.SEEK_DATA)
        assert first == 16 * 64 * 4 // 4096 * 4096
        assert os.lseek(fd, first, os.SEEK_HOLE) > first
    finally:
        os.close(fd)
    assert getfattr(sparse, "user.slab.defined") == str(2 * 16 * 16)


def test_a_read_only_mount_refuses_changes_and_leaves_the_store(store, mounter):
    before = tree_digest(store)
    m = mounter(store, "-o", "ro")
    for fn in (lambda: open(m.path / "bytes", "r+b"),
               lambda: open(m.path / "new", "wb"),
               lambda: os.mkdir(m.path / "g"),
               lambda: os.unlink(m.path / "bytes"),
               lambda: os.rename(m.path / "bytes", m.path / "b2"),
               lambda: os.setxattr(m.path / "bytes", "user.note", b"x"),
               lambda: os.truncate(m.path / "bytes", 0)):
        with pytest.raises(OSError) as e:
            fn()
        assert e.value.errno == errno.EROFS
    assert os.stat(m.path / "bytes").st_mode & 0o222 == 0
    m.unmount()
    assert tree_digest(store) == before


def test_v3_stores_read_as_written(tmp_path, mounter):
    path = tmp_path / "v3.zarr"
    path.mkdir()
    (path / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", "attributes": {"title": "v3"}}')
    want = {}
    for i, (case, codecs) in enumerate(V3_CASES.items()):
        shape, chunks = ((6, 7, 5), (4, 3, 2)) if case == "transpose" else ((33, 20), (8, 6))
        a = values("i4", shape, seed=60 + i)
        write_v3_array(str(path / case), a, chunks, codecs, fill=-1)
        want[case] = a
    m = mounter(path)
    assert getfattr(m.path, "user.slab.format") == "zarr"
    assert getfattr(m.path, "user.title") == "v3"
    for case, a in want.items():
        assert (m.path / case).read_bytes() == le_bytes(a), case


def test_a_damaged_chunk_is_eio_and_the_rest_reads(tmp_path, mounter):
    path = tmp_path / "d.zarr"
    root = zarr.open_group(str(path), mode="w")
    data = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    root.create_dataset("d", data=data, chunks=(16, 16), compressor=numcodecs.Zlib(level=1))
    with open(path / "d" / "1.2", "r+b") as fh:
        fh.seek(10)
        fh.write(b"\xde\xad\xbe\xef\x55\xaa")
    m = mounter(path)
    with pytest.raises(OSError) as e:
        (m.path / "d").read_bytes()
    assert e.value.errno == errno.EIO
    assert (m.path / "d[0:16]").read_bytes() == le_bytes(data[0:16])
    assert "1.2" in m.log()


def test_an_empty_group_mounts(tmp_path, mounter):
    path = tmp_path / "s.zarr"
    path.mkdir()
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    m = mounter(path, "-o", "format=zarr")
    assert os.listdir(m.path) == []
    assert getfattr(m.path, "user.slab.format") == "zarr"
