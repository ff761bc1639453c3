"""slab import and export are copies between two stores through one driver
(issue 23): any store (container, HDF5, Zarr) is a source, chunks the
source never stored are never written (holes stay holes through
slab -> HDF5 -> slab -> Zarr -> slab), and a bad destination is refused
without leaving anything half-written."""

import json
import os

import h5py
import numpy as np
import zarr

from conftest import fails, slab
from zarr_stores import no_leftovers

SHAPE, CHUNKS = (100, 90), (10, 30)
# The chunks written: three of the 30 in the grid, one of them an edge chunk.
WRITTEN = [(0, 0), (4, 1), (9, 2)]


def expected():
    a = np.full(SHAPE, -1, dtype="<f4")
    rng = np.random.default_rng(7)
    for i, j in WRITTEN:
        a[i * 10:(i + 1) * 10, j * 30:(j + 1) * 30] = rng.normal(size=(10, 30)).astype("<f4")
    return a


def defined_boxes(c, path):
    d = json.loads(slab("defined", "--json", c, path).stdout)
    return sorted((tuple(b["start"]), tuple(b["count"])) for b in d["boxes"])


def raw(c, path, tmp_path):
    out = tmp_path / "raw.bin"
    if out.exists():
        out.unlink()
    slab("export", c, path, out)
    return np.fromfile(out, dtype="<f4").reshape(SHAPE)


def written_boxes():
    return sorted(((i * 10, j * 30), (10, 30)) for i, j in WRITTEN)


def test_holes_stay_holes_through_every_store(tmp_path):
    want = expected()
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        d = f.create_dataset("d", SHAPE, "<f4", chunks=CHUNKS, fillvalue=-1, compression="gzip", shuffle=True)
        # The missing-value marker equals the fill value: a Zarr reader then
        # reads a missing chunk as the fill value, so none needs writing.
        d.attrs["_FillValue"] = np.float32(-1)
        for i, j in WRITTEN:
            d[i * 10:(i + 1) * 10, j * 30:(j + 1) * 30] = want[i * 10:(i + 1) * 10, j * 30:(j + 1) * 30]
    c1 = tmp_path / "c1.slab"
    slab("import", "-q", c1, src)
    assert defined_boxes(c1, "/d") == written_boxes()
    np.testing.assert_array_equal(raw(c1, "/d", tmp_path), want)

    # slab -> HDF5: three chunks allocated, the rest never written.
    h5 = tmp_path / "out.h5"
    slab("export", "-q", c1, h5)
    with h5py.File(h5) as f:
        d = f["d"]
        assert d.id.get_num_chunks() == len(WRITTEN)
        assert sorted(d.id.get_chunk_info(k).chunk_offset for k in range(len(WRITTEN))) == \
            sorted((i * 10, j * 30) for i, j in WRITTEN)
        assert d.chunks == CHUNKS and d.fillvalue == -1 and d.compression == "gzip" and d.shuffle
        np.testing.assert_array_equal(d[...], want)

    # HDF5 -> slab.
    c2 = tmp_path / "c2.slab"
    slab("import", "-q", c2, h5)
    assert defined_boxes(c2, "/d") == written_boxes()
    np.testing.assert_array_equal(raw(c2, "/d", tmp_path), want)

    # slab -> Zarr: only the written chunks have keys.
    z = tmp_path / "out.zarr"
    slab("export", "-q", c2, z)
    keys = sorted(k for k in os.listdir(z / "d") if not k.startswith("."))
    assert keys == sorted(f"{i}.{j}" for i, j in WRITTEN)
    arr = zarr.open_array(str(z / "d"), mode="r")
    assert arr.chunks == CHUNKS
    np.testing.assert_array_equal(arr[...], want)

    # Zarr -> slab.
    c3 = tmp_path / "c3.slab"
    slab("import", "-q", c3, z)
    assert defined_boxes(c3, "/d") == written_boxes()
    np.testing.assert_array_equal(raw(c3, "/d", tmp_path), want)
    assert slab("fsck", "-q", c3, check=False).returncode == 0


def test_a_foreign_store_exports_straight_to_another_format(tmp_path):
    want = expected()
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        d = f.create_dataset("g/d", SHAPE, "<f4", chunks=CHUNKS, fillvalue=-1)
        for i, j in WRITTEN:
            d[i * 10:(i + 1) * 10, j * 30:(j + 1) * 30] = want[i * 10:(i + 1) * 10, j * 30:(j + 1) * 30]
        d.attrs["units"] = "K"
        f.create_dataset("contig", data=np.arange(12, dtype="<i2").reshape(3, 4))
    # HDF5 -> Zarr v3, no container in between.
    z = tmp_path / "z3.zarr"
    slab("export", "-q", "--format", "zarr3", src, z)
    chunk_files = sorted(os.path.relpath(os.path.join(r, n), z / "g" / "d" / "c")
                         for r, _, ns in os.walk(z / "g" / "d" / "c") for n in ns)
    assert chunk_files == sorted(f"{i}/{j}" for i, j in WRITTEN)
    doc = json.loads((z / "g" / "d" / "zarr.json").read_text())
    assert doc["attributes"]["units"] == "K" and doc["shape"] == list(SHAPE)
    # Zarr -> HDF5, read back by h5py.
    h5 = tmp_path / "back.h5"
    slab("export", "-q", z, h5)
    with h5py.File(h5) as f:
        assert f["g/d"].id.get_num_chunks() == len(WRITTEN)
        np.testing.assert_array_equal(f["g/d"][...], want)
        np.testing.assert_array_equal(f["contig"][...], np.arange(12, dtype="<i2").reshape(3, 4))
        units = f["g/d"].attrs["units"]
        assert (units.decode() if isinstance(units, bytes) else units) == "K"


def test_a_bad_destination_is_refused_and_nothing_is_left(tmp_path):
    c = tmp_path / "c.slab"
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("d", data=np.arange(1000, dtype="<f8").reshape(10, 100), chunks=(5, 50),
                         compression="gzip")
    slab("import", "-q", c, src)
    # An existing output is never replaced (there is no --force).
    for name in ("taken.h5", "taken.zarr"):
        out = tmp_path / name
        out.write_bytes(b"precious")
        cp = fails("export", c, out)
        assert "already exists" in cp.stderr, cp.stderr
        assert out.read_bytes() == b"precious"
    # A directory that does not exist, one nobody may write in (/proc).
    cp = fails("export", c, tmp_path / "nowhere" / "o.h5")
    assert "does not exist" in cp.stderr, cp.stderr
    for out in ("/proc/slab-export-test.h5", "/proc/slab-export-test.zarr"):
        cp = fails("export", c, out)
        assert out in cp.stderr and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
        assert not os.path.exists(out)
    # A source chunk damaged halfway through: no output, no temporary name.
    with h5py.File(src) as f:
        info = f["d"].id.get_chunk_info(2)
    data = bytearray(src.read_bytes())
    for k in range(info.byte_offset + 2, info.byte_offset + 20):
        data[k] ^= 0x5A
    src.write_bytes(bytes(data))
    for name in ("half.h5", "half.zarr"):
        cp = fails("export", src, tmp_path / name)
        assert "chunk" in cp.stderr, cp.stderr
        assert [f for f in os.listdir(tmp_path) if "half" in f] == [], os.listdir(tmp_path)
    # Nor into a container: an import of it creates nothing.
    fails("import", tmp_path / "new.slab", src)
    no_leftovers(tmp_path, "new.slab")
