"""HDF5 and netCDF-4 files mounted in place (`slabfs data.h5 mnt`): the same
file view as a container's, read-only, through the HDF5 store
(stores/hdf5/). Files are made here with Debian's h5py and netCDF4; every
dataset read through the mount (read(2), numpy memmap, slice and .npy
views, SEEK_DATA) is compared byte for byte with what h5py / netCDF4 read.
"""
import errno
import hashlib
import os

import numpy as np
import pytest

from conftest import run
from mounting import mounter, try_mount  # noqa: F401

h5py = pytest.importorskip("h5py")
netCDF4 = pytest.importorskip("netCDF4")


def le_bytes(arr):
    arr = np.asarray(arr)
    if arr.shape == ():
        arr = arr.reshape(1)
    return np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"))).tobytes()


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def getfattr(path, name):
    return os.getxattr(path, name).decode()


@pytest.fixture
def h5file(tmp_path):
    """An HDF5 file with the layouts, filters, types and attributes the
    store reads, and two datasets it cannot (skipped by name)."""
    path = tmp_path / "data.h5"
    rng = np.random.default_rng(3)
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "detector run"
        f.attrs["gain"] = np.array([1.5, 2.5], dtype="f8")
        g = f.create_group("run1")
        g.attrs["operator"] = "ada"
        d = g.create_dataset("frames", data=rng.standard_normal((6, 40, 50)).astype("f4"), chunks=(1, 16, 16),
                             compression="gzip", compression_opts=4, shuffle=True)
        d.attrs["units"] = "counts"
        g.create_dataset("big_endian", data=np.arange(300, dtype=">i2").reshape(20, 15), chunks=(7, 4))
        g.create_dataset("checked", data=rng.integers(0, 1 << 40, (33, 17)).astype("u8"), chunks=(10, 10),
                         fletcher32=True)
        f.create_dataset("contiguous", data=np.arange(1000, dtype="f8"))
        f.create_dataset("bytes", data=np.frombuffer(b"hello, mount\n" * 10, dtype="u1"))
        f.create_dataset("scalar", data=np.float32(7.25))
        sparse = f.create_dataset("sparse", shape=(64, 64), dtype="i4", chunks=(16, 16), fillvalue=0)
        sparse[16:32, 32:48] = 5
        sparse[48:64, 0:16] = 9
        f.create_dataset("texts", data=["a", "bb"], dtype=h5py.string_dtype())
        f.create_dataset("records", data=np.zeros(3, dtype=[("x", "i4"), ("y", "f4")]))
    return path


def datasets_of(path):
    """name -> array for every dataset h5py reads that the store shows."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "iuf":
                out[name] = obj[()]
        f.visititems(visit)
    return out


def test_every_dataset_reads_as_h5py_reads_it(h5file, mounter):
    before = sha256(h5file)
    m = mounter(h5file)
    want = datasets_of(h5file)
    assert set(want) == {"run1/frames", "run1/big_endian", "run1/checked", "contiguous", "bytes", "scalar", "sparse"}
    for name, arr in want.items():
        p = m.path / name
        got = p.read_bytes()
        assert got == le_bytes(arr), name
        assert os.stat(p).st_size == len(got)
        # Reads at odd offsets and lengths, across chunk and element edges.
        with open(p, "rb") as f:
            for off, n in ((1, 7), (len(got) // 3, 1001), (len(got) - 3, 10)):
                f.seek(off)
                assert f.read(n) == got[off:off + n], (name, off, n)
    # numpy on the mount, as on any file.
    frames = np.memmap(m.path / "run1" / "frames", dtype="<f4", mode="r", shape=(6, 40, 50))
    assert np.array_equal(frames[4], want["run1/frames"][4])
    del frames  # the map holds the file open: let go before the unmount
    assert np.array_equal(np.fromfile(m.path / "run1" / "big_endian", dtype="<i2").reshape(20, 15),
                          want["run1/big_endian"])
    m.unmount()
    assert sha256(h5file) == before  # never written


def test_tree_attributes_and_layout_xattrs(h5file, mounter):
    m = mounter(h5file)
    assert sorted(os.listdir(m.path)) == ["bytes", "contiguous", "run1", "scalar", "sparse"]
    assert sorted(os.listdir(m.path / "run1")) == ["big_endian", "checked", "frames"]
    assert run("ls", "-lR", m.path).returncode == 0
    assert getfattr(m.path, "user.title") == "detector run"
    assert getfattr(m.path / "run1", "user.operator") == "ada"
    frames = m.path / "run1" / "frames"
    assert getfattr(frames, "user.units") == "counts"
    assert getfattr(frames, "user.slab.dtype") == "f4"
    assert getfattr(frames, "user.slab.shape") == "6,40,50"
    assert getfattr(frames, "user.slab.chunks") == "1,16,16"
    assert "deflate" in getfattr(frames, "user.slab.filters")
    assert getfattr(m.path / "run1" / "big_endian", "user.slab.dtype") == "i2"
    assert "user.units" in os.listxattr(frames)
    # The root says what is mounted and what could not be shown, by name.
    assert getfattr(m.path, "user.slab.format") == "hdf5"
    skipped = getfattr(m.path, "user.slab.skipped")
    assert "/texts" in skipped and "/records" in skipped
    assert not os.path.exists(m.path / "texts")
    log = m.log()
    assert "skipped /texts: variable-length string" in log and "skipped /records: compound" in log


def test_views_and_holes(h5file, mounter):
    m = mounter(h5file)
    want = datasets_of(h5file)
    frames = want["run1/frames"]
    # Slice and .npy views, as for a container's dataset.
    assert (m.path / "run1" / "frames[2]").read_bytes() == le_bytes(frames[2])
    assert (m.path / "run1" / "frames[1:5:2,3,10:20]").read_bytes() == le_bytes(frames[1:5:2, 3, 10:20])
    assert np.array_equal(np.load(m.path / "run1" / "frames[0].npy"), frames[0:1])
    text = (m.path / "run1" / "big_endian[0:2].txt").read_text().split()
    assert [int(v) for v in text] == list(range(30))
    # Chunks never written are holes (the fill value is zero).
    sparse = m.path / "sparse"
    fd = os.open(sparse, os.O_RDONLY)
    try:
        first = os.lseek(fd, 0, os.SEEK_DATA)
        assert first == 16 * 64 * 4 // 4096 * 4096  # the row of the first stored chunk, in whole 4 KiB
        assert os.lseek(fd, first, os.SEEK_HOLE) > first
    finally:
        os.close(fd)
    assert getfattr(sparse, "user.slab.defined") == str(2 * 16 * 16)
    copy = m.path.parent / (m.path.name + "-copy")
    try:
        run("cp", "--sparse=always", sparse, copy)
        assert copy.read_bytes() == le_bytes(want["sparse"])
    finally:
        copy.unlink(missing_ok=True)


def test_changes_are_refused_and_the_file_is_unchanged(h5file, mounter):
    before = sha256(h5file)
    m = mounter(h5file)
    for fn in (lambda: open(m.path / "contiguous", "r+b"),
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
    assert sha256(h5file) == before


def test_netcdf4_variables_read_as_netcdf4_reads_them(tmp_path, mounter):
    path = tmp_path / "climate.nc"
    rng = np.random.default_rng(5)
    temp = rng.standard_normal((4, 18, 36)).astype("f4")
    with netCDF4.Dataset(path, "w") as nc:
        nc.title = "test climate"
        nc.createDimension("time", None)
        nc.createDimension("lat", 18)
        nc.createDimension("lon", 36)
        t = nc.createVariable("time", "f8", ("time",))
        v = nc.createVariable("temperature", "f4", ("time", "lat", "lon"), zlib=True, complevel=3,
                              chunksizes=(1, 9, 12))
        v.units = "K"
        v[:] = temp
        t[:] = np.arange(4) * 6.0
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat[:] = np.linspace(-85, 85, 18)
    m = mounter(path)
    assert getfattr(m.path, "user.slab.format") == "hdf5"
    assert getfattr(m.path, "user.title") == "test climate"
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        for name in ("temperature", "time", "lat"):
            assert (m.path / name).read_bytes() == le_bytes(nc[name][:]), name
    assert getfattr(m.path / "temperature", "user.units") == "K"
    assert getfattr(m.path / "temperature", "user._ARRAY_DIMENSIONS") == '["time","lat","lon"]'


def test_format_option_and_what_is_refused(tmp_path, h5file, mounter):
    # Forced by name (netcdf is HDF5's spelling too).
    m = mounter(h5file, "-o", "format=netcdf")
    assert getfattr(m.path, "user.slab.format") == "hdf5"
    m.unmount()
    # A user block before the superblock is found too.
    ub = tmp_path / "userblock.h5"
    with h5py.File(ub, "w", userblock_size=1024) as f:
        f.create_dataset("x", data=np.arange(10, dtype="i4"))
    m = mounter(ub)
    assert (m.path / "x").read_bytes() == le_bytes(np.arange(10, dtype="i4"))
    m.unmount()
    # Not HDF5, forced as HDF5: a message, no mount.
    notes = tmp_path / "notes.txt"
    notes.write_text("just text\n" * 100)
    rc, log = try_mount(notes, "-o", "format=hdf5")
    assert rc != 0 and "notes.txt" in log
    rc, log = try_mount(h5file, "-o", "format=parquet")
    assert rc != 0 and "unknown format 'parquet'" in log
    rc, log = try_mount(h5file, "-o", "ro,follow")
    assert rc != 0 and "follow is for slab containers" in log
    # A Zarr store: opened by the Zarr store (test_mount_zarr.py), not
    # misread as a container.
    store = tmp_path / "s.zarr"
    store.mkdir()
    (store / ".zgroup").write_text('{"zarr_format": 2}')
    m = mounter(store)
    assert getfattr(m.path, "user.slab.format") == "zarr"
    m.unmount()
    # netCDF-3 (classic): named, with the way out.
    classic = tmp_path / "classic.nc"
    with netCDF4.Dataset(classic, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("x", 3)
        nc.createVariable("v", "f4", ("x",))[:] = [1, 2, 3]
    rc, log = try_mount(classic)
    assert rc != 0 and "netCDF-3" in log


def test_a_damaged_chunk_is_eio_and_the_rest_reads(h5file, mounter):
    with h5py.File(h5file, "r") as f:
        d = f["run1/frames"]
        info = d.id.get_chunk_info_by_coord((5, 0, 16))
        want = datasets_of(h5file)
    data = bytearray(h5file.read_bytes())
    for i in range(info.size // 2, info.size // 2 + 8):
        data[info.byte_offset + i] ^= 0x5A
    h5file.write_bytes(bytes(data))
    m = mounter(h5file)
    frames = m.path / "run1" / "frames"
    with pytest.raises(OSError) as e:
        frames.read_bytes()
    assert e.value.errno == errno.EIO
    # The chunks before it and every other dataset still read.
    with open(frames, "rb") as f:
        assert f.read(16 * 50 * 4) == le_bytes(want["run1/frames"][0, :16, :])
    assert (m.path / "contiguous").read_bytes() == le_bytes(want["contiguous"])
    assert "/run1/frames" in getfattr(m.path, "user.slab.last_error")
