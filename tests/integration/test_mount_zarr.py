"""Zarr directory stores mounted in place (`slabfs store.zarr mnt`): the same
file view as a container's, read-only, through the Zarr store
(stores/zarr/). Stores are made here with Debian's zarr (v2) and with the
hand-written v3 writer of zarr_stores.py (Debian's zarr 2.13 writes no v3
stores); every array read through the mount (read(2), numpy memmap, slice
and .npy views, SEEK_DATA) is compared byte for byte with what zarr-python
(or numpy, for v3) holds; every change is refused with EROFS and the store
is left as it was.
"""
import errno
import hashlib
import os

import numpy as np
import pytest

from conftest import run
from mounting import mounter  # noqa: F401

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

from zarr_stores import V3_CASES, values, write_v3_array  # noqa: E402


def le_bytes(arr):
    arr = np.asarray(arr)
    if arr.shape == ():
        arr = arr.reshape(1)
    return np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"))).tobytes()


def tree_digest(root):
    """Every file's name, size and bytes under root, and every directory."""
    h = hashlib.sha256()
    for dirpath, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        h.update(dirpath.encode())
        for name in sorted(files):
            p = os.path.join(dirpath, name)
            h.update(name.encode())
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def getfattr(path, name):
    return os.getxattr(path, name).decode()


@pytest.fixture
def store(tmp_path):
    """A Zarr v2 store made by zarr-python: codecs, byte orders, F order,
    nested keys, missing chunks, a 0-d array, attributes, and arrays the
    store cannot hold (skipped by name)."""
    path = tmp_path / "data.zarr"
    root = zarr.open_group(str(path), mode="w")
    root.attrs["title"] = "detector run"
    root.attrs["gain"] = [1.5, 2.5]
    g = root.create_group("run1")
    g.attrs["operator"] = "ada"
    d = g.create_dataset("frames", data=values("f4", (6, 40, 50), 1), chunks=(1, 16, 16),
                         compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    d.attrs["units"] = "counts"
    g.create_dataset("big_endian", data=np.arange(300, dtype=">i2").reshape(20, 15), chunks=(7, 4),
                     compressor=numcodecs.Zlib(level=3))
    g.create_dataset("fortran", data=values("u8", (33, 17), 2), chunks=(10, 10), order="F",
                     compressor=numcodecs.GZip(level=2))
    g.create_dataset("nested", data=values("i4", (30, 20), 3), chunks=(8, 8), dimension_separator="/")
    root.create_dataset("bytes", data=np.frombuffer(b"hello, mount\n" * 10, dtype="u1"), chunks=(32,),
                        compressor=None)
    z = zarr.open_array(str(path / "scalar"), mode="w", shape=(), dtype="<f4")
    z[...] = 7.25
    sparse = root.create_dataset("sparse", shape=(64, 64), dtype="i4", chunks=(16, 16), fill_value=0)
    sparse[16:32, 32:48] = 5
    sparse[48:64, 0:16] = 9
    root.create_dataset("flags", data=np.array([True, False]))
    root.create_dataset("texts", data=np.array(["a", "bb"], dtype="U2"))
    root.create_dataset("lzma", data=np.arange(10, dtype="i4"), compressor=numcodecs.LZMA())
    return path


SKIPPED = {"lzma"}  # numbers, but under a codec the store does not decode


def arrays_of(path):
    """name -> array for every array zarr-python reads that the store shows."""
    out = {}
    root = zarr.open_group(str(path), mode="r")

    def visit(name, obj):
        if isinstance(obj, zarr.Array) and obj.dtype.kind in "iuf" and name not in SKIPPED:
            out[name] = obj[...]
    root.visititems(visit)
    return out


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


def test_changes_are_refused_and_the_store_is_unchanged(store, mounter):
    before = tree_digest(store)
    m = mounter(store)
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
