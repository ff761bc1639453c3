"""Scalars (rank-0 arrays) across the converters: HDF5 and Zarr both bring a
rank-0 array in as a dataset of fixed shape (1) with the attribute
`_SLAB_SCALAR = 1`, and both write such a dataset out as a rank-0 array
again without the attribute (tools/convert/scalar.h, docs/interop.md).

Oracles: Debian's python3-zarr 2.13 (0-d arrays with zarr.open_array(shape=()))
and h5py; Zarr v3 0-d arrays are written and read here by hand."""
import json
import os

import h5py
import numcodecs
import numpy as np
import pytest
import zarr

from conftest import fails, info, slab
from mounting import export
from zarr_stores import DTYPES, crc32c, no_leftovers, values, write_v3_array


def scalar_value(dtype, seed=0):
    """One value of `dtype` that is not zero (nor the fill values used here)."""
    return values(dtype, (9,), seed=seed)[-1]


def check_scalar(c, path, dtype, want, attrs=None):
    """`path` in container `c` is an imported scalar holding `want`."""
    i = info(c, path)
    assert (i["dtype"], i["shape"], i["max_shape"], i["chunks"]) == (dtype, [1], [1], [1]), i
    assert i["filters"] in ("", "none"), i
    assert i["attributes"] == {"_SLAB_SCALAR": 1, **(attrs or {})}, i["attributes"]
    got = np.frombuffer(export(c, path), dtype=np.dtype(dtype).newbyteorder("<"))
    np.testing.assert_array_equal(got, np.array([want], dtype=dtype))


def make_scalar(c, path, dtype, value=None, fill=None, growable=False, marker=True):
    """A shape-(1) dataset with the scalar marker, as an HDF5 import makes it."""
    args = ["mkdset", "-p", c, path, "--dtype", dtype, "--shape", "1", "--chunks", "1"]
    if growable:
        args += ["--maxshape", "unlimited"]
    if fill is not None:
        args += ["--fill", str(fill)]
    slab(*args)
    if value is not None:
        raw = np.array([value], dtype=np.dtype(dtype).newbyteorder("<")).tobytes()
        with open(f"{c}.bin", "wb") as f:
            f.write(raw)
        slab("import", c, path, f"{c}.bin")
        os.unlink(f"{c}.bin")
    if marker:
        slab("attr", c, path, "_SLAB_SCALAR", "1")


# ------------------------------------------------------------------ Zarr import

@pytest.mark.parametrize("dtype", DTYPES)
def test_zarr_v2_0d_arrays_import_as_scalars(tmp_path, dtype):
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w")
    big = root.create_dataset("big", shape=(), dtype=np.dtype(dtype).newbyteorder(">"),
                              compressor=numcodecs.Zlib(level=3))
    big[...] = scalar_value(dtype, 1)
    blosc = root.create_dataset("blosc", shape=(), dtype=dtype,
                                compressor=numcodecs.Blosc(cname="lz4", clevel=5,
                                                           shuffle=numcodecs.Blosc.SHUFFLE))
    blosc[...] = scalar_value(dtype, 2)
    root.create_dataset("unset", shape=(), dtype=dtype, fill_value=5, compressor=None)
    c = tmp_path / "c.slab"
    slab("import", c, store)
    assert sorted(os.listdir(store / "big")) == [".zarray", "0"]
    check_scalar(c, "/big", dtype, big[...])
    check_scalar(c, "/blosc", dtype, blosc[...])
    # Never written: no chunk in the store, the fill value in the container.
    assert "0" not in os.listdir(store / "unset")
    check_scalar(c, "/unset", dtype, 5)
    assert float(info(c, "/unset")["fill"]) == 5
    assert info(c, "/unset")["allocated_chunks"] == 0


def test_zarr_v2_0d_attributes(tmp_path):
    store = tmp_path / "crs.zarr"
    z = zarr.open_array(str(store), mode="w", shape=(), dtype="<i4", dimension_separator="/")
    z[...] = -7
    # What xarray writes for a 0-d variable, and a marker of the store's own.
    z.attrs.update({"_ARRAY_DIMENSIONS": [], "grid_mapping_name": "latitude_longitude",
                    "_SLAB_SCALAR": "not ours", "scale": [1.5, 2]})
    c = tmp_path / "c.slab"
    slab("import", c, store)
    # zarr's default fill_value 0, in a store xarray reads, is the marker
    # xarray masks: kept as _FillValue.
    check_scalar(c, "/crs", "i4", -7,
                 {"grid_mapping_name": "latitude_longitude", "scale": [1.5, 2.0], "_FillValue": 0})
    # A non-empty dimension list is kept as it is.
    z.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    c2 = tmp_path / "c2.slab"
    slab("import", c2, store)
    assert info(c2, "/crs")["attributes"]["_ARRAY_DIMENSIONS"] == '["x"]'


@pytest.mark.parametrize("case", ["bytes", "gzip_crc", "v2_keys"])
def test_zarr_v3_0d_arrays_import_as_scalars(tmp_path, case):
    codecs = [{"name": "bytes", "configuration": {"endian": "big"}}]
    if case == "gzip_crc":
        codecs += [{"name": "gzip", "configuration": {"level": 5}}, {"name": "crc32c"}]
    a = np.array(2.75, dtype=">f8")
    store = tmp_path / "v.zarr"
    write_v3_array(store, a, (), codecs, fill=1.0, dimension_names=[],
                   encoding="v2" if case == "v2_keys" else "default", separator=".")
    assert sorted(os.listdir(store)) == ["0" if case == "v2_keys" else "c", "zarr.json"]
    c = tmp_path / "c.slab"
    slab("import", c, store)
    check_scalar(c, "/v", "f8", 2.75)


def test_zarr_0d_bad_chunks_are_refused(tmp_path):
    store = tmp_path / "s.zarr"
    z = zarr.open_array(str(store), mode="w", shape=(), dtype="<f8", compressor=None)
    z[...] = 1.0
    c = tmp_path / "c.slab"
    # Too short, too long, and a FIFO where the chunk should be.
    for bad in (b"abc", b"0123456789"):
        (store / "0").write_bytes(bad)
        cp = fails("import", c, store)
        assert "s.zarr: array /s chunk 0" in cp.stderr and "takes 8" in cp.stderr, cp.stderr
        no_leftovers(tmp_path, "c.slab")
    os.unlink(store / "0")
    os.mkfifo(store / "0")
    cp = fails("import", c, store)
    assert "not a regular file" in cp.stderr, cp.stderr
    no_leftovers(tmp_path, "c.slab")
    # A directory under the key is not a chunk: the fill value.
    os.unlink(store / "0")
    os.mkdir(store / "0")
    slab("import", c, store)
    check_scalar(c, "/s", "f8", 0.0)


# ------------------------------------------------------------------ Zarr export

def test_zarr_v2_export_writes_scalars_as_0d(tmp_path):
    c = tmp_path / "c.slab"
    slab("create", c)
    for dtype in DTYPES:
        make_scalar(c, f"/s/{dtype}", dtype, scalar_value(dtype, 3), fill=3)
    make_scalar(c, "/unset", "f4", fill=1.5)
    slab("attr", c, "/s/f8", "units", "m")
    # Not scalars: no marker; growable; two elements.
    make_scalar(c, "/plain", "i2", 9, marker=False)
    make_scalar(c, "/grow", "i2", 9, growable=True)
    slab("mkdset", c, "/two", "--dtype", "i2", "--shape", "2")
    slab("attr", c, "/two", "_SLAB_SCALAR", "1")
    out = tmp_path / "out.zarr"
    slab("export", c, out)
    root = zarr.open_group(str(out), mode="r")
    for dtype in DTYPES:
        z = root[f"s/{dtype}"]
        assert z.shape == () and z.chunks == () and z.dtype == np.dtype(dtype).newbyteorder("<")
        assert z[...] == scalar_value(dtype, 3) and z[...].dtype == z.dtype, dtype
        # The storage fill is no missing-value marker (no _FillValue).
        assert z.fill_value is None
        assert sorted(os.listdir(out / "s" / dtype)) == [".zarray", ".zattrs", "0"]
        assert json.loads((out / "s" / dtype / ".zarray").read_text())["shape"] == []
    assert dict(root["s/f8"].attrs) == {"units": "m", "_ARRAY_DIMENSIONS": []}
    assert dict(root["s/i1"].attrs) == {"_ARRAY_DIMENSIONS": []}
    # A scalar never written reads as its fill value: with fill_value null,
    # from a chunk the export writes.
    assert root["unset"].shape == () and root["unset"][...] == np.float32(1.5)
    assert "0" in os.listdir(out / "unset")
    assert root["plain"].shape == (1,) and "_SLAB_SCALAR" not in root["plain"].attrs
    assert root["grow"].shape == (1,) and root["grow"].attrs["_SLAB_SCALAR"] == 1
    assert root["two"].shape == (2,) and root["two"].attrs["_SLAB_SCALAR"] == 1
    # And back: the same scalars.
    c2 = tmp_path / "c2.slab"
    slab("import", c2, out)
    for dtype in DTYPES[:-1]:
        check_scalar(c2, f"/s/{dtype}", dtype, scalar_value(dtype, 3))
    check_scalar(c2, "/s/f8", "f8", scalar_value("f8", 3), {"units": "m"})
    check_scalar(c2, "/unset", "f4", 1.5)


def test_zarr_v3_export_writes_scalars_as_0d(tmp_path):
    c = tmp_path / "c.slab"
    slab("create", c)
    make_scalar(c, "/t", "i8", -(2 ** 40), fill=4)
    slab("attr", c, "/t", "long_name", "a count")
    make_scalar(c, "/crc", "u2", 513)
    slab("mkdset", c, "/crc2", "--dtype", "u2", "--shape", "1", "--chunks", "1",
         "--filters", "deflate=2,checksum")
    slab("attr", c, "/crc2", "_SLAB_SCALAR", "1")
    raw = np.array([4242], dtype="<u2").tobytes()
    (tmp_path / "v.bin").write_bytes(raw)
    slab("import", c, "/crc2", tmp_path / "v.bin")
    out = tmp_path / "out.zarr"
    slab("export", c, out, "--format", "zarr3")
    meta = json.loads((out / "t" / "zarr.json").read_text())
    assert meta["shape"] == [] and meta["chunk_grid"]["configuration"]["chunk_shape"] == []
    assert meta["attributes"] == {"long_name": "a count"}
    assert meta["dimension_names"] == [] and meta["fill_value"] == 4
    assert sorted(os.listdir(out / "t")) == ["c", "zarr.json"]
    assert np.frombuffer((out / "t" / "c").read_bytes(), "<i8")[0] == -(2 ** 40)
    # The filters still encode the one chunk: gzip, then the CRC-32C.
    meta = json.loads((out / "crc2" / "zarr.json").read_text())
    assert [x["name"] for x in meta["codecs"]] == ["bytes", "gzip", "crc32c"]
    data = (out / "crc2" / "c").read_bytes()
    assert int.from_bytes(data[-4:], "little") == crc32c(data[:-4])
    import gzip
    assert gzip.decompress(data[:-4]) == raw
    c2 = tmp_path / "c2.slab"
    slab("import", c2, out)
    check_scalar(c2, "/t", "i8", -(2 ** 40), {"long_name": "a count"})
    check_scalar(c2, "/crc2", "u2", 4242)


def test_xarray_opens_an_exported_store_with_a_scalar(tmp_path):
    xr = pytest.importorskip("xarray")
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/temp", "--dtype", "f4", "--shape", "3,2")
    slab("attr", c, "/temp", "_ARRAY_DIMENSIONS", '["y","x"]')
    slab("attr", c, "/temp", "grid_mapping", "crs")
    make_scalar(c, "/crs", "i4", 7)
    slab("attr", c, "/crs", "grid_mapping_name", "latitude_longitude")
    out = tmp_path / "out.zarr"
    slab("export", c, out)
    ds = xr.open_zarr(str(out), consolidated=False, decode_coords=False)
    assert ds["crs"].dims == () and int(ds["crs"].values) == 7
    assert ds["crs"].attrs["grid_mapping_name"] == "latitude_longitude"
    assert ds["temp"].dims == ("y", "x")


# ------------------------------------------------------------------ across formats

@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_hdf5_scalar_through_zarr_stays_scalar(tmp_path, fmt):
    h5 = tmp_path / "in.h5"
    want = {"f8": np.float64(6.25), "i2": np.int16(-300), "u8": np.uint64(2 ** 63 + 5)}
    with h5py.File(h5, "w") as f:
        for name, v in want.items():
            d = f.create_dataset(name, data=v)
            d.attrs["units"] = "K"
        f.create_dataset("g/vec", data=np.arange(4, dtype="<i4"))
    c = tmp_path / "c.slab"
    slab("import", c, h5)
    store = tmp_path / "mid.zarr"
    slab("export", c, store, "--format", fmt)
    if fmt == "zarr2":
        root = zarr.open_group(str(store), mode="r")
        for name, v in want.items():
            assert root[name].shape == () and root[name][...] == v, name
            assert "_SLAB_SCALAR" not in root[name].attrs
    c2 = tmp_path / "c2.slab"
    slab("import", c2, store)
    out = tmp_path / "out.h5"
    slab("export", c2, out)
    with h5py.File(out, "r") as f:
        for name, v in want.items():
            d = f[name]
            assert d.shape == () and d.dtype == v.dtype and d[()] == v, name
            assert dict(d.attrs) == {"units": b"K"} or dict(d.attrs) == {"units": "K"}, dict(d.attrs)
        assert f["g/vec"].shape == (4,)


def test_zarr_0d_through_hdf5_stays_scalar(tmp_path):
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w")
    z = root.create_dataset("pi", shape=(), dtype="<f4", fill_value=-1)
    z[...] = 3.25
    z.attrs["units"] = "rad"
    root.create_dataset("unset", shape=(), dtype="<u1", fill_value=17)
    c = tmp_path / "c.slab"
    slab("import", c, store)
    h5 = tmp_path / "out.h5"
    slab("export", c, h5)
    with h5py.File(h5, "r") as f:
        assert f["pi"].shape == () and f["pi"].dtype == np.float32 and f["pi"][()] == 3.25
        assert set(f["pi"].attrs) == {"units"}
        assert f["unset"].shape == () and f["unset"][()] == 17
    # And back into Zarr through a second container.
    c2 = tmp_path / "c2.slab"
    slab("import", c2, h5)
    back = tmp_path / "back.zarr"
    slab("export", c2, back)
    r = zarr.open_group(str(back), mode="r")
    assert r["pi"].shape == () and r["pi"][...] == np.float32(3.25)
    assert r["unset"].shape == () and r["unset"][...] == 17
