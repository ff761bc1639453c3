"""Zarr stores written through the mount (`slabfs store.zarr mnt`, read-write
unless -o ro): dd conv=notrunc at odd offsets across chunk edges, numpy
memmap writes, truncate and `>>` along the first dimension, setfattr and
mkdir, then the mount is gone and zarr-python (v2) or the hand-written v3
reader of zarr_stores.py opens the store, and every array must equal a
numpy model of the writes byte for byte. Two processes writing one chunk at
once lose nothing. What the mount does not change is refused by name: an
HDF5 file stays EROFS, a ro mount is EROFS, creating, removing and renaming
files in a Zarr mount is ENOTSUP, a size that is not whole rows is EINVAL,
an array under a codec the store does not read is not there to write.
"""
import errno
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import run
from mounting import mounter  # noqa: F401

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

from zarr_stores import (V3_CASES, arrays_of, le_bytes, make_v2_store, read_v3_array,  # noqa: E402
                         tree_digest, values, write_v3_array)


@pytest.fixture
def store(tmp_path):
    return make_v2_store(tmp_path / "data.zarr")


def dd_patch(path, offset, data):
    """Writes `data` at byte `offset` of `path` with one dd write."""
    cp = subprocess.run(["dd", f"of={path}", "bs=%d" % len(data), "count=1", f"seek={offset}",
                         "oflag=seek_bytes", "conv=notrunc", "status=none"],
                        input=data, capture_output=True)
    assert cp.returncode == 0, cp.stderr.decode()


def patch_model(arr, offset, data):
    """The model of a byte write: the array's little-endian C-order bytes
    patched, read back in its dtype (native byte order) and shape."""
    shape = arr.shape if arr.shape != () else (1,)
    raw = bytearray(le_bytes(arr))
    raw[offset:offset + len(data)] = data
    out = np.frombuffer(bytes(raw), dtype=arr.dtype.newbyteorder("<")).reshape(shape)
    return out.astype(arr.dtype.newbyteorder("=")).reshape(arr.shape)


def assert_store_holds(path, model):
    got = arrays_of(path)
    assert set(got) == set(model)
    for name, want in model.items():
        assert got[name].shape == want.shape, name
        assert le_bytes(got[name]) == le_bytes(want), name


def test_dd_and_memmap_writes_read_back_by_zarr_python(store, mounter):
    model = {k: v.copy() for k, v in arrays_of(store).items()}
    m = mounter(store)
    rng = np.random.default_rng(7)
    # Odd offsets and lengths that start and end inside elements and span
    # chunk edges, into every codec and layout of the store.
    for name in ("run1/frames", "run1/big_endian", "run1/fortran", "run1/nested", "bytes", "sparse", "scalar"):
        size = len(le_bytes(model[name]))
        for offset, length in ((1, 5), (size // 3 + 3, min(3001, size // 2)), (size - 7, 7)):
            if not 0 <= offset < size:
                continue
            length = min(length, size - offset)
            data = rng.integers(0, 256, length, dtype=np.uint8).tobytes()
            dd_patch(m.path / name, offset, data)
            model[name] = patch_model(model[name], offset, data)
        assert (m.path / name).read_bytes() == le_bytes(model[name]), name
    # A numpy memmap write, flushed (msync: the kernel writes the pages back).
    mm = np.memmap(m.path / "run1" / "frames", dtype="<f4", mode="r+", shape=(6, 40, 50))
    mm[2:4, 10:30, 5:45] = np.arange(2 * 20 * 40, dtype="<f4").reshape(2, 20, 40)
    mm.flush()
    del mm
    model["run1/frames"][2:4, 10:30, 5:45] = np.arange(2 * 20 * 40, dtype="f4").reshape(2, 20, 40)
    # Whole chunks of the fill value are removed (fill_value 0 here).
    sparse = np.zeros((16, 16), dtype="<i4")
    fd = os.open(m.path / "sparse", os.O_WRONLY)
    try:
        for r in range(16):  # rows 16..31, columns 32..47: chunk (1, 2)
            os.pwrite(fd, sparse[r].tobytes(), ((16 + r) * 64 + 32) * 4)
        os.fsync(fd)
    finally:
        os.close(fd)
    model["sparse"][16:32, 32:48] = 0
    assert m.unmount() == 0
    assert not (store / "sparse" / "1.2").exists()
    assert not [p for p in store.rglob("*") if ".tmp." in p.name]
    assert_store_holds(store, model)


def test_truncate_and_append_resize_the_first_dimension(tmp_path, mounter):
    path = tmp_path / "r.zarr"
    root = zarr.open_group(str(path), mode="w")
    a = np.arange(10 * 7, dtype="<i4").reshape(10, 7)
    root.create_dataset("a", data=a, chunks=(4, 3), fill_value=-1, compressor=numcodecs.Zlib(level=1))
    m = mounter(path)
    f = m.path / "a"
    row = 7 * 4
    os.truncate(f, 5 * row)  # cuts chunk row 1 and drops chunk row 2
    assert os.path.getsize(f) == 5 * row
    assert not (path / "a" / "2.0").exists()
    assert (path / "a" / "1.0").exists()
    os.truncate(f, 9 * row)  # the cut rows come back as the fill value
    model = np.full((9, 7), -1, dtype="<i4")
    model[:5] = a[:5]
    assert f.read_bytes() == model.tobytes()
    extra = np.arange(100, 100 + 2 * 7, dtype="<i4").reshape(2, 7)
    (tmp_path / "rows.bin").write_bytes(extra.tobytes())
    assert run("sh", "-c", f"cat {tmp_path / 'rows.bin'} >> {f}").returncode == 0
    model = np.concatenate([model, extra])
    assert os.path.getsize(f) == model.nbytes
    with pytest.raises(OSError) as e:
        os.truncate(f, 3 * row + 4)  # not whole rows
    assert e.value.errno == errno.EINVAL
    # cp over the array: O_TRUNC empties it (no rows), the copy appends.
    rows = np.arange(3 * 7, dtype="<i4").reshape(3, 7) * -5
    (tmp_path / "b.bin").write_bytes(rows.tobytes())
    root.create_dataset("b", data=a, chunks=(4, 3), fill_value=-1, compressor=numcodecs.Zlib(level=1))
    cp = subprocess.run(["cp", tmp_path / "b.bin", m.path / "b"], capture_output=True)
    assert cp.returncode != 0  # made after the mount started: not shown, and new files are refused
    assert m.unmount() == 0
    z = zarr.open_array(str(path / "a"), mode="r")
    assert z.shape == (11, 7)
    assert np.array_equal(z[...], model)
    m = mounter(path)
    assert run("cp", tmp_path / "b.bin", m.path / "b").returncode == 0
    assert m.unmount() == 0
    b = zarr.open_array(str(path / "b"), mode="r")
    assert b.shape == (3, 7)
    assert np.array_equal(b[...], rows)
    assert not (path / "b" / "2.0").exists()


def test_appends_that_end_inside_a_row_continue_it(tmp_path, mounter):
    """While a handle appends, the size ends where its appends end (not at
    the row of fill padding them), so the next O_APPEND write continues the
    row, as on a container; closed, the row is padded with the fill value."""
    path = tmp_path / "p.zarr"
    root = zarr.open_group(str(path), mode="w")
    root.create_dataset("s", data=np.zeros((2, 50), dtype="<u2"), chunks=(4, 50), fill_value=7,
                        compressor=numcodecs.Zlib(level=1))
    row = 100
    m = mounter(path)
    s = m.path / "s"
    expected = bytes(2 * row)
    fd = os.open(s, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"\x05\x06\x07")
        assert os.fstat(fd).st_size == 2 * row + 3
        assert os.stat(s).st_size == 2 * row + 3
        os.write(fd, b"\x08")
        assert os.fstat(fd).st_size == 2 * row + 4
    finally:
        os.close(fd)
    fill_row = np.full(50, 7, dtype="<u2").tobytes()
    expected += b"\x05\x06\x07\x08" + fill_row[4:]
    assert os.stat(s).st_size == 3 * row
    assert s.read_bytes() == expected
    assert m.unmount() == 0
    z = zarr.open_array(str(path / "s"), mode="r")
    assert z.shape == (3, 50)
    assert le_bytes(z[...]) == expected


def test_a_gap_past_the_cached_end_reads_as_fill_and_survives_a_memmap_flush(tmp_path, mounter):
    """As on a container (test_mount_grow.py): the kernel's cached last page
    holds zeros past the old end, and a write past the end leaves a gap that
    reads as the fill value (NaN here): the page is dropped, so od, a memmap
    flush and zarr-python see the fill value there."""
    path = tmp_path / "g.zarr"
    root = zarr.open_group(str(path), mode="w")
    root.create_dataset("g", data=np.array([5, 6], dtype="<f4"), chunks=(4,), fill_value=np.nan,
                        compressor=numcodecs.Zlib(level=1))
    m = mounter(path)
    g = m.path / "g"
    assert np.array_equal(np.fromfile(g, dtype="<f4"), [5, 6])  # page 0 cached, zeros past byte 8
    dd_patch(g, 28, np.array([9], "<f4").tobytes())
    want = np.array([5, 6] + [np.nan] * 5 + [9], dtype="<f4")
    assert g.read_bytes() == want.tobytes()
    mm = np.memmap(g, dtype="<f4", mode="r+")
    mm[0] = 42
    mm.flush()
    del mm
    want[0] = 42
    assert g.read_bytes() == want.tobytes()
    assert m.unmount() == 0
    assert zarr.open_array(str(path / "g"), mode="r")[...].tobytes() == want.tobytes()


def test_attributes_set_back_to_the_text_they_show_keep_their_json(tmp_path, mounter):
    """cp -a, rsync -X and tar --xattrs set every attribute back to the text
    it shows: a JSON true, null, object or nested list must stay what it is
    in .zattrs, not become the number or string its text reads as."""
    path = tmp_path / "j.zarr"
    root = zarr.open_group(str(path), mode="w")
    a = root.create_dataset("a", data=np.arange(4, dtype="<i2"), chunks=(4,))
    attrs = {"valid": True, "missing": None, "meta": {"k": "v", "n": [1, 2]}, "grid": [[1, 2], [3, 4]],
             "mixed": [1, "two"], "units": "m", "scale": 0.5, "count": 3}
    a.attrs.update(attrs)
    before = json.loads((path / "a" / ".zattrs").read_text())
    m = mounter(path)
    f = m.path / "a"
    for name in attrs:
        os.setxattr(f, f"user.{name}", os.getxattr(f, f"user.{name}"))
    # A changed value still changes.
    os.setxattr(f, "user.units", b"cm")
    assert m.unmount() == 0
    after = json.loads((path / "a" / ".zattrs").read_text())
    assert after == dict(before, units="cm")


def test_setfattr_and_mkdir_reach_the_metadata(store, mounter):
    m = mounter(store)
    assert run("setfattr", "-n", "user.note", "-v", "hello", m.path).returncode == 0
    assert run("setfattr", "-n", "user.units", "-v", "kelvin", m.path / "run1" / "frames").returncode == 0
    assert run("setfattr", "-x", "user.operator", m.path / "run1").returncode == 0
    os.mkdir(m.path / "new")
    os.mkdir(m.path / "new" / "deeper")
    assert run("setfattr", "-n", "user.level", "-v", "2", m.path / "new" / "deeper").returncode == 0
    assert os.getxattr(m.path / "run1" / "frames", "user.units") == b"kelvin"
    assert sorted(os.listdir(m.path / "new")) == ["deeper"]
    with pytest.raises(OSError) as e:
        os.mkdir(m.path / "run1")
    assert e.value.errno == errno.EEXIST
    with pytest.raises(OSError) as e:
        os.mkdir(m.path / "lzma")  # taken by an array the mount does not show
    assert e.value.errno == errno.EEXIST
    with pytest.raises(OSError) as e:
        open(m.path / "run1" / "nested[0:2]", "r+b")  # views stay read-only
    assert e.value.errno == errno.ENOTSUP
    assert m.unmount() == 0
    root = zarr.open_group(str(store), mode="r")
    assert root.attrs["note"] == "hello"
    assert root.attrs["title"] == "detector run"  # the others are kept
    assert root["run1/frames"].attrs["units"] == "kelvin"
    assert "operator" not in root["run1"].attrs
    assert isinstance(root["new/deeper"], zarr.Group)
    assert root["new/deeper"].attrs["level"] == "2"


def test_v3_stores_written_read_back(tmp_path, mounter):
    path = tmp_path / "v3.zarr"
    path.mkdir()
    (path / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", "attributes": {"title": "v3"}}')
    model = {}
    for i, (case, codecs) in enumerate(V3_CASES.items()):
        shape, chunks = ((6, 7, 5), (4, 3, 2)) if case == "transpose" else ((33, 20), (8, 6))
        a = values("i4", shape, seed=80 + i)
        write_v3_array(str(path / case), a, chunks, codecs, fill=-1, skip={(0, 0)} if len(shape) == 2 else ())
        if len(shape) == 2:
            a[0:8, 0:6] = -1
        model[case] = a
    m = mounter(path)
    rng = np.random.default_rng(3)
    for case in model:
        size = model[case].nbytes
        for offset in (2, size // 2 - 5, size - 9):
            data = rng.integers(0, 256, 9, dtype=np.uint8).tobytes()
            dd_patch(m.path / case, offset, data)
            model[case] = patch_model(model[case], offset, data)
    os.truncate(m.path / "bytes", 40 * 20 * 4)
    model["bytes"] = np.concatenate([model["bytes"], np.full((7, 20), -1, dtype="i4")])
    assert run("setfattr", "-n", "user.note", "-v", "written", m.path / "bytes").returncode == 0
    os.mkdir(m.path / "g")
    assert m.unmount() == 0
    for case, want in model.items():
        got = read_v3_array(str(path / case))
        assert got.shape == want.shape, case
        assert np.array_equal(got, want), case
    meta = json.loads((path / "bytes" / "zarr.json").read_text())
    assert meta["shape"] == [40, 20]
    assert meta["attributes"]["note"] == "written"
    assert json.loads((path / "g" / "zarr.json").read_text())["node_type"] == "group"
    # And the mount reads back what it wrote.
    m = mounter(path, "-o", "ro")
    for case, want in model.items():
        assert (m.path / case).read_bytes() == le_bytes(want), case


WRITER = r"""
import os, sys
path, parity, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_WRONLY)
for r in range(rounds):
    for i in range(parity, 16 * 16, 2):  # every other element of chunk (0, 0)
        row, col = divmod(i, 16)
        value = (1000 * (parity + 1) + r).to_bytes(4, "little")
        os.pwrite(fd, value, (row * 64 + col) * 4)
os.close(fd)
"""


def test_two_processes_writing_one_chunk_lose_nothing(store, mounter):
    # The kernel serialises write(2)s to one file (the inode lock), so this
    # checks the whole path end to end; two writers racing inside the
    # store are zarr_writer_test's TwoThreadsWritingOneChunkLoseNothing.
    m = mounter(store)
    target = m.path / "sparse"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(p), "6"]) for p in (0, 1)]
    for p in procs:
        assert p.wait(timeout=600) == 0
    assert m.unmount() == 0
    got = zarr.open_array(str(store / "sparse"), mode="r")[0:16, 0:16].reshape(-1)
    want = np.array([1000 * (i % 2 + 1) + 5 for i in range(256)], dtype="i4")
    assert np.array_equal(got, want)


def write_at(path, offset, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


def test_refusals_name_what_is_refused(store, mounter):
    m = mounter(store)
    refused = {
        "create": (lambda: open(m.path / "new", "wb"), errno.ENOTSUP),
        "unlink": (lambda: os.unlink(m.path / "bytes"), errno.ENOTSUP),
        "rmdir": (lambda: os.rmdir(m.path / "run1"), errno.ENOTSUP),
        "rename": (lambda: os.rename(m.path / "bytes", m.path / "b2"), errno.ENOTSUP),
        "layout": (lambda: os.setxattr(m.path / "bytes", "user.slab.dtype", b"i2"), errno.EPERM),
        "skipped array": (lambda: open(m.path / "lzma", "r+b"), errno.ENOENT),
        "scalar length": (lambda: os.truncate(m.path / "scalar", 8), errno.EINVAL),
        "past a fixed end": (lambda: write_at(m.path / "scalar", 4, b"abcd"), errno.EFBIG),
    }
    for what, (fn, err) in refused.items():
        with pytest.raises(OSError) as e:
            fn()
        assert e.value.errno == err, what
    assert "lzma" in os.getxattr(m.path, "user.slab.skipped").decode()
    log = m.log()
    for op in ("create", "unlink", "rmdir", "rename", "setxattr user.slab.dtype", "truncate"):
        assert op in log, op


def test_everyday_tools_that_need_new_files_change_nothing(store, mounter, tmp_path):
    """The tools that write a new file and rename it over the old one (sed
    -i, rsync, an editor's atomic save), tar x (which unlinks before it
    creates) and mv from another file system all need a create, unlink or
    rename, which a Zarr mount refuses: each fails, and leaves every array's
    bytes, dtype and the store's files as they were. Reading out with
    rsync -a and tar c gives each array's bytes."""
    m = mounter(store)
    arrays = {p.name: p.read_bytes() for p in [m.path / "bytes", m.path / "run1" / "frames"]}
    dtypes = {n: os.getxattr(m.path / ("run1/frames" if n == "frames" else n), "user.slab.dtype") for n in arrays}
    before = tree_digest(store)
    src = tmp_path / "src"
    (src / "run1").mkdir(parents=True)
    (src / "bytes").write_bytes(b"\x01" * len(arrays["bytes"]))
    (src / "run1" / "frames").write_bytes(b"\x02" * 64)
    (src / "new.txt").write_text("new\n")
    assert run("sed", "-i", "s/a/b/", m.path / "bytes", check=False).returncode != 0
    assert run("rsync", "-a", f"{src}/", f"{m.path}/", check=False).returncode != 0
    assert run("tar", "-C", src, "-cf", tmp_path / "a.tar", ".").returncode == 0
    assert run("tar", "-C", m.path, "-xf", tmp_path / "a.tar", check=False).returncode != 0
    assert run("mv", src / "new.txt", m.path / "new.txt", check=False).returncode != 0
    assert (src / "new.txt").exists()  # mv keeps its source when the copy fails
    with pytest.raises(OSError) as e:  # an editor's save: a temporary file, then a rename over the array
        with open(m.path / ".bytes.swp", "wb") as f:
            f.write(b"x")
    assert e.value.errno == errno.ENOTSUP
    for name, data in arrays.items():
        path = m.path / ("run1/frames" if name == "frames" else name)
        assert path.read_bytes() == data, name
        assert os.getxattr(path, "user.slab.dtype") == dtypes[name], name
    out = tmp_path / "out"
    assert run("rsync", "-a", f"{m.path}/", f"{out}/").returncode == 0
    assert (out / "bytes").read_bytes() == arrays["bytes"]
    assert (out / "run1" / "frames").read_bytes() == arrays["frames"]
    assert m.unmount() == 0
    assert tree_digest(store) == before


def test_a_read_only_zarr_mount_refuses_writes(store, mounter):
    before = tree_digest(store)
    m = mounter(store, "-o", "ro")
    for fn in (lambda: open(m.path / "bytes", "r+b"),
               lambda: os.mkdir(m.path / "g"),
               lambda: os.setxattr(m.path / "bytes", "user.note", b"x"),
               lambda: os.truncate(m.path / "bytes", 0)):
        with pytest.raises(OSError) as e:
            fn()
        assert e.value.errno == errno.EROFS
    assert m.unmount() == 0
    assert tree_digest(store) == before


def test_an_hdf5_file_stays_read_only(tmp_path, mounter):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(10, dtype="i4"))
    m = mounter(path)
    for fn in (lambda: open(m.path / "d", "r+b"), lambda: os.mkdir(m.path / "g"),
               lambda: os.setxattr(m.path / "d", "user.note", b"x")):
        with pytest.raises(OSError) as e:
            fn()
        assert e.value.errno == errno.EROFS


def test_consolidated_metadata_follows_the_writes(tmp_path, mounter):
    path = tmp_path / "c.zarr"
    root = zarr.open_group(str(path), mode="w")
    a = np.arange(10 * 7, dtype="<i4").reshape(10, 7)
    arr = root.create_dataset("a", data=a, chunks=(4, 3), fill_value=-1, compressor=numcodecs.Zlib(level=1))
    arr.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    zarr.consolidate_metadata(str(path))
    m = mounter(path)
    f = m.path / "a"
    extra = np.arange(100, 100 + 2 * 7, dtype="<i4").reshape(2, 7)
    (tmp_path / "rows.bin").write_bytes(extra.tobytes())
    assert run("sh", "-c", f"cat {tmp_path / 'rows.bin'} >> {f}").returncode == 0
    assert run("setfattr", "-n", "user.units", "-v", "kelvin", f).returncode == 0
    os.mkdir(m.path / "g")
    assert m.unmount() == 0
    want = np.concatenate([a, extra])
    meta = json.loads((path / ".zmetadata").read_text())["metadata"]
    assert meta["a/.zarray"]["shape"] == [12, 7]
    assert meta["a/.zattrs"]["units"] == "kelvin"
    assert "g/.zgroup" in meta
    c = zarr.open_consolidated(str(path), mode="r")
    assert c["a"].shape == (12, 7)
    assert c["a"].attrs["units"] == "kelvin"
    assert np.array_equal(c["a"][:], want)
    assert "g" in c
    try:
        import xarray
    except ImportError:
        return
    ds = xarray.open_zarr(str(path), consolidated=True, mask_and_scale=False)
    assert ds["a"].shape == (12, 7)
    assert ds["a"].attrs["units"] == "kelvin"
    assert np.array_equal(ds["a"].values, want)


def test_special_attributes_keep_their_meaning_for_xarray(tmp_path, mounter):
    """What the mount shows as _FillValue of a v2 array xarray reads is its
    .zarray fill_value (xarray's missing-value marker, and what a chunk never
    written reads as): setfattr changes it there, so the mount, zarr-python
    and xarray agree. An array that stores nothing then reads the new value
    everywhere; one that holds data keeps every element's value (the chunks
    it does not store, left out for holding only the old value or never
    written, are stored first), so cp -a of an array over another gives it
    the source's fill value and the copy means what the source meant (an
    exploratory tester found xarray swapping missing and valid values when
    the copied _FillValue was refused). Removing it is refused.
    _ARRAY_DIMENSIONS goes in as the list xarray wants (v2) or as
    dimension_names (v3)."""
    xarray = pytest.importorskip("xarray")
    path = tmp_path / "x.zarr"
    temp = np.arange(8 * 6, dtype="<f4").reshape(8, 6)
    temp[4:] = -1  # data, where -9999 marks missing values
    xarray.Dataset({"temp": (("y", "x"), temp)}).to_zarr(
        str(path), encoding={"temp": {"chunks": (4, 6), "_FillValue": -9999.0}})
    root = zarr.open_group(str(path))
    root.create_dataset("raw", data=np.arange(5, dtype="<i2"), chunks=(5,))
    other = root.create_dataset("other", shape=(8, 6), chunks=(4, 6), dtype="<f4", fill_value=-1.0)
    other[:] = 5
    other.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    empty = root.create_dataset("empty", shape=(8, 6), chunks=(4, 6), dtype="<f4", fill_value=-9999.0)
    empty.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    for name in ("zeros", "zeros2"):  # store nothing; zeros read as their fill value
        z = root.create_dataset(name, shape=(8, 6), chunks=(4, 6), dtype="<f4", fill_value=0.0)
        z.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    src = root.create_dataset("zero_src", data=np.zeros((8, 6), dtype="<f4"), chunks=(4, 6), fill_value=-9999.0)
    src.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    # -99 marks missing values; a chunk row of them, and one of valid 5s.
    marked = np.full((4, 6), 5, dtype="<i2")
    marked[:2] = -99
    src = root.create_dataset("marked", data=marked, chunks=(2, 6), fill_value=-99)
    src.attrs["_ARRAY_DIMENSIONS"] = ["r", "c"]
    fives = root.create_dataset("fives", shape=(4, 6), chunks=(2, 6), dtype="<i2", fill_value=5)
    fives.attrs["_ARRAY_DIMENSIONS"] = ["r", "c"]
    big = root.create_dataset("big", shape=(4200, 1), chunks=(1, 1), dtype="<i2", fill_value=0)
    big.attrs["_ARRAY_DIMENSIONS"] = ["b", "one"]
    scalar = root.create_dataset("scalar", shape=(), dtype="<f4", fill_value=-9999.0)  # a 0-d variable
    scalar.attrs["_ARRAY_DIMENSIONS"] = []
    zarr.consolidate_metadata(str(path))
    m = mounter(path)
    f = m.path / "temp"
    assert float(os.getxattr(f, "user._FillValue")) == -9999
    cp = run("setfattr", "-x", "user._FillValue", f, check=False)
    assert cp.returncode != 0 and "not supported" in cp.stderr
    # An array that stores nothing takes a new fill value.
    e = m.path / "empty"
    cp = run("setfattr", "-n", "user._FillValue", "-v", "none", e, check=False)
    assert cp.returncode != 0 and "Invalid argument" in cp.stderr
    assert (np.frombuffer(e.read_bytes(), dtype="<f4") == -9999).all()  # now in the kernel's page cache
    assert run("setfattr", "-n", "user._FillValue", "-v", "-1", e).returncode == 0
    assert float(os.getxattr(e, "user._FillValue")) == -1
    assert (np.frombuffer(e.read_bytes(), dtype="<f4") == -1).all()
    assert run("setfattr", "-n", "user._FillValue", "-v", "7", m.path / "scalar").returncode == 0
    # cp -a of temp over other (fill value -1): other's chunk of -1s is left
    # out, then stored when the copied -9999 arrives.
    assert run("cp", "-a", f, m.path / "other").returncode == 0
    assert (m.path / "other").read_bytes() == temp.tobytes()
    assert float(os.getxattr(m.path / "other", "user._FillValue")) == -9999
    # The same over an array that stores nothing, with zeros, its fill
    # value: every chunk is left out, then stored.
    zeros = m.path / "zeros"
    assert run("cp", "-a", m.path / "zero_src", zeros).returncode == 0
    assert (np.frombuffer(zeros.read_bytes(), dtype="<f4") == 0).all()
    assert float(os.getxattr(zeros, "user._FillValue")) == -9999
    assert run("cp", "-a", m.path / "marked", m.path / "fives").returncode == 0
    # dd of the fill value over part of an array that stores nothing, then
    # a new fill value: what dd wrote and what it did not keep their zeros.
    assert run("dd", "if=/dev/zero", f"of={m.path / 'zeros2'}", "bs=96", "count=1", "conv=notrunc,fsync",
               "status=none").returncode == 0
    assert run("setfattr", "-n", "user._FillValue", "-v", "-9999", m.path / "zeros2").returncode == 0
    assert (np.frombuffer((m.path / "zeros2").read_bytes(), dtype="<f4") == 0).all()
    # Too many chunks to store first: the fill value stays.
    assert run("dd", "if=/dev/urandom", f"of={m.path / 'big'}", "bs=2", "count=1", "conv=notrunc",
               "status=none").returncode == 0
    cp = run("setfattr", "-n", "user._FillValue", "-v", "3", m.path / "big", check=False)
    assert cp.returncode != 0 and "not permitted" in cp.stderr
    # A v2 array's _ARRAY_DIMENSIONS names each dimension, as xarray needs.
    for bad in ('["a"]', "y,x", '["y","x","z"]', '["y","y"]'):
        cp = run("setfattr", "-n", "user._ARRAY_DIMENSIONS", "-v", bad, m.path / "other", check=False)
        assert cp.returncode != 0 and "Invalid argument" in cp.stderr, bad
    assert run("setfattr", "-n", "user._ARRAY_DIMENSIONS", "-v", '["n"]', m.path / "raw").returncode == 0
    assert m.unmount() == 0
    for name in ("zeros", "zeros2", "other", "temp"):
        assert json.loads((path / name / ".zarray").read_text())["fill_value"] == -9999, name
    assert json.loads((path / "big" / ".zarray").read_text())["fill_value"] == 0
    assert json.loads((path / "empty" / ".zarray").read_text())["fill_value"] == -1
    assert json.loads((path / "scalar" / ".zarray").read_text())["fill_value"] == 7
    assert "_FillValue" not in json.loads((path / "scalar" / ".zattrs").read_text())
    assert json.loads((path / "raw" / ".zattrs").read_text())["_ARRAY_DIMENSIONS"] == ["n"]
    assert np.array_equal(zarr.open_array(str(path / "other"), mode="r")[:], temp)
    assert np.array_equal(zarr.open_array(str(path / "fives"), mode="r")[:], marked)
    ds = xarray.open_zarr(str(path))
    assert ds["empty"].encoding["_FillValue"] == -1
    for name in ("zeros", "zeros2"):
        assert (zarr.open_array(str(path / name), mode="r")[:] == 0).all(), name
        assert (ds[name].values == 0).all(), name
    assert np.isnan(ds["empty"].values).all()
    assert np.array_equal(ds["temp"].values, temp)
    assert np.array_equal(ds["other"].values, temp)
    # The copy means what the source meant: -99 missing, 5 a value.
    assert np.array_equal(ds["fives"].values, ds["marked"].values, equal_nan=True)
    assert np.isnan(ds["fives"].values[:2]).all() and (ds["fives"].values[2:] == 5).all()
    assert ds["raw"].dims == ("n",)
    m = mounter(path, "-o", "ro")
    assert float(os.getxattr(m.path / "empty", "user._FillValue")) == -1
    assert m.unmount() == 0

    v3 = tmp_path / "v3.zarr"
    v3.mkdir()
    (v3 / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", "attributes": {}}')
    write_v3_array(str(v3 / "a"), values("i4", (6, 4)), (3, 4), V3_CASES["bytes"], dimension_names=["y", "x"],
                   attributes={"_ARRAY_DIMENSIONS": ["stale", "names"]})
    m = mounter(v3)
    a = m.path / "a"
    assert json.loads(os.getxattr(a, "user._ARRAY_DIMENSIONS")) == ["y", "x"]
    assert run("setfattr", "-n", "user._ARRAY_DIMENSIONS", "-v", '["time","z"]', a).returncode == 0
    cp = run("setfattr", "-n", "user._ARRAY_DIMENSIONS", "-v", '["time"]', a, check=False)  # one name for two dimensions
    assert cp.returncode != 0 and "Invalid argument" in cp.stderr
    assert m.unmount() == 0
    meta = json.loads((v3 / "a" / "zarr.json").read_text())
    assert meta["dimension_names"] == ["time", "z"]
    assert "_ARRAY_DIMENSIONS" not in meta["attributes"]


def test_rsync_xattrs_in_place_round_trip(tmp_path, mounter):
    """rsync -aX out of a Zarr mount and --inplace back in after the copy
    changed: the copy's user.slab.* are set back with the rest. Figures
    (stored, defined) are accepted and ignored and layout fields equal to
    what the array has change nothing, as on a container, so rsync exits 0;
    so does the chunk index a copy through a container reports (a store
    has none to choose). A layout field that differs stays EPERM."""
    path = tmp_path / "r.zarr"
    root = zarr.open_group(str(path), mode="w")
    a = root.create_dataset("a", data=np.arange(64 * 16, dtype="<f4").reshape(64, 16), chunks=(16, 16),
                            compressor=numcodecs.Zlib(level=1))
    a.attrs["units"] = "m"
    m = mounter(path)
    out = tmp_path / "out"
    assert run("rsync", "-aX", f"{m.path}/", f"{out}/").returncode == 0
    assert os.getxattr(out / "a", "user.slab.chunks") == b"16,16"
    noise = np.random.default_rng(5).random((64, 16), dtype=np.float32)  # compresses worse: `stored` changes
    with open(out / "a", "r+b") as f:
        f.write(noise.tobytes())
    os.setxattr(out / "a", "user.units", b"cm")
    # As a copy that went through a container says: its own chunk index. A
    # store has none to choose: the index is ignored.
    layout = os.getxattr(out / "a", "user.slab.layout").decode()
    assert ";index=auto" in layout
    os.setxattr(out / "a", "user.slab.index", b"extensible")
    os.setxattr(out / "a", "user.slab.layout", layout.replace(";index=auto", ";index=extensible").encode())
    # rsync's quick check compares whole seconds: the copy is newer by more.
    was = os.stat(m.path / "a").st_mtime_ns
    os.utime(out / "a", ns=(was + 5 * 10**9, was + 5 * 10**9))
    cp = run("rsync", "-aX", "--inplace", f"{out}/", f"{m.path}/", check=False)
    assert cp.returncode == 0, cp.stderr
    assert (m.path / "a").read_bytes() == noise.tobytes()
    assert os.getxattr(m.path / "a", "user.units") == b"cm"
    cp = run("setfattr", "-n", "user.slab.chunks", "-v", "8,16", m.path / "a", check=False)
    assert cp.returncode != 0 and "not permitted" in cp.stderr
    cp = run("setfattr", "-n", "user.slab.layout", "-v", layout.replace("chunks=16,16", "chunks=8,16"), m.path / "a",
             check=False)
    assert cp.returncode != 0 and "not permitted" in cp.stderr
    # A layout that says nothing new, the index aside, changes nothing.
    for same in ("index=btree", "dtype=f4; chunks=16,16", "shape=64,16;index=extensible"):
        assert run("setfattr", "-n", "user.slab.layout", "-v", same, m.path / "a").returncode == 0, same
    cp = run("setfattr", "-n", "user.slab.layout", "-v", "dtype=f8", m.path / "a", check=False)
    assert cp.returncode != 0 and "not permitted" in cp.stderr
    assert m.unmount() == 0
    z = zarr.open_array(str(path / "a"), mode="r")
    assert z.chunks == (16, 16)
    assert np.array_equal(z[:], noise)
    assert z.attrs["units"] == "cm"
