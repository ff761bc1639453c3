"""Zarr v2 and v3 directory stores, both ways: `slab import FILE store.zarr`
and `slab export FILE out.zarr [--format zarr2|zarr3]`.

The oracle is Debian's python3-zarr (2.13, which reads and writes v2 only)
with numcodecs: stores it writes are imported and compared element by
element (also through a mount with cmp), and stores slab writes are opened
by zarr and dask and compared with numpy. Zarr v3 stores are written here by
hand (zarr.json plus chunks encoded with numcodecs and a CRC-32C computed in
Python) and by slab, whose zarr.json is checked field by field against the
v3 spec and whose chunks are decoded here by hand. Hostile stores must give
one clear line and leave no container behind."""
import gzip
import json
import os
import subprocess
import zlib

import numcodecs
import numpy as np
import pytest
import zarr

from conftest import fails, info, mpath, slab
from mounting import container, export, make_dataset, mounted, mounter  # noqa: F401
from zarr_stores import (DTYPES, V3_CASES, check_same, crc32c, filters_of, le, no_leftovers,
                         snapshot, values, write_v3_array)


def test_crc32c_oracle():
    assert crc32c(b"123456789") == 0xE3069283


# ------------------------------------------------------------------ import v2

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["<", ">"])
def test_import_every_dtype_and_byte_order(tmp_path, dtype, order):
    dt = np.dtype(dtype).newbyteorder(order)
    store = tmp_path / "s.zarr"
    z = zarr.open_array(str(store), mode="w", shape=(37, 23), chunks=(10, 8), dtype=dt,
                        compressor=numcodecs.Zlib(level=4), fill_value=3)
    z[:] = values(dt, (37, 23))
    c = tmp_path / "c.slab"
    slab("import", c, store)
    i = info(c, "/s")
    assert (i["dtype"], i["shape"], i["chunks"], i["filters"]) == (dtype, [37, 23], [10, 8],
                                                                    "deflate=4")
    assert float(i["fill"]) == 3
    check_same(c, "/s", z)


BLOSC_CASES = [
    # (compressor, the filters the import chooses)
    (None, ""),
    (numcodecs.Zlib(level=1), "deflate=1"),
    (numcodecs.Zlib(level=9), "deflate=9"),
    (numcodecs.GZip(level=5), "deflate=5"),
    (numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE), "shuffle,deflate=1"),
    (numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.NOSHUFFLE), "deflate=1"),
    (numcodecs.Blosc(cname="lz4hc", clevel=3, shuffle=numcodecs.Blosc.NOSHUFFLE), "deflate=1"),
    (numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
     "shuffle,deflate=1"),
    (numcodecs.Blosc(cname="zlib", clevel=6, shuffle=numcodecs.Blosc.SHUFFLE), "shuffle,deflate=6"),
    (numcodecs.Blosc(cname="blosclz", clevel=9, shuffle=numcodecs.Blosc.AUTOSHUFFLE),
     "shuffle,deflate=1"),
    (numcodecs.Blosc(cname="lz4", clevel=0, shuffle=numcodecs.Blosc.SHUFFLE), ""),
]


@pytest.mark.parametrize("compressor,filters", BLOSC_CASES, ids=lambda x: repr(x)[:40])
def test_import_compressors(tmp_path, compressor, filters):
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w")
    for dtype in ("<f8", ">i4", "|u1"):
        z = root.create_dataset(f"a{np.dtype(dtype).name}", shape=(300, 50), chunks=(64, 32),
                                dtype=dtype, compressor=compressor)
        z[:] = values(dtype, (300, 50), seed=1)
    c = tmp_path / "c.slab"
    slab("import", c, store)
    for name, z in root.arrays():
        want = filters
        if z.dtype.itemsize == 1:
            want = ",".join(f for f in filters.split(",") if f != "shuffle")
        assert filters_of(c, f"/{name}") == want, name
        check_same(c, f"/{name}", z)


@pytest.mark.parametrize("elementsize", [4, 8, 2])
def test_import_the_shuffle_filter(tmp_path, elementsize):
    """numcodecs' byte Shuffle filter before zlib: the data as zarr reads
    it, kept shuffled and deflated (any element size: the data decodes the
    same; slabfs's shuffle uses the dataset's element size)."""
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w")
    for dtype in ("<f4", ">i8", "|u1"):
        z = root.create_dataset(f"a{np.dtype(dtype).name}", shape=(301, 47), chunks=(64, 32),
                                dtype=dtype, compressor=numcodecs.Zlib(level=3),
                                filters=[numcodecs.Shuffle(elementsize=elementsize)])
        z[:] = values(dtype, (301, 47), seed=2)
    c = tmp_path / "c.slab"
    slab("import", c, store)
    for name, z in root.arrays():
        want = "deflate=3" if z.dtype.itemsize == 1 else "shuffle,deflate=3"
        assert filters_of(c, f"/{name}") == want, name
        check_same(c, f"/{name}", z)


def test_import_missing_chunks_nan_fill_and_nested_keys(tmp_path):
    store = tmp_path / "s.zarr"
    z = zarr.open_array(str(store), mode="w", shape=(20, 30, 7), chunks=(6, 8, 7), dtype="<f4",
                        fill_value=np.nan, dimension_separator="/",
                        compressor=numcodecs.Blosc("zstd", 5, numcodecs.Blosc.SHUFFLE))
    z[2:9, 10:21, :] = values("f4", (7, 11, 7), seed=2)
    stored = sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file()
                    and not p.name.startswith("."))
    assert "0/1/0" in stored and "3/3/0" not in stored  # nested keys, chunks missing
    c = tmp_path / "c.slab"
    slab("import", c, store)
    i = info(c, "/s")
    assert i["fill"] == "nan" and i["allocated_chunks"] == len(stored)
    check_same(c, "/s", z)


@pytest.mark.parametrize("fill", [0, -7, 250, None, np.inf, -np.inf, np.nan, 1.5e300])
def test_import_fill_values(tmp_path, fill):
    dtype = "<f8" if fill is None or isinstance(fill, float) else ("<i2" if fill == -7 else "|u1")
    store = tmp_path / "s.zarr"
    z = zarr.open_array(str(store), mode="w", shape=(10,), chunks=(4,), dtype=dtype,
                        fill_value=fill)
    z[4:8] = 1
    c = tmp_path / "c.slab"
    slab("import", c, store)
    got = np.frombuffer(export(c, "/s"), dtype=le(dtype))
    want = np.full(10, 0 if fill is None else fill, dtype=le(dtype))
    want[4:8] = 1
    np.testing.assert_array_equal(got, want)
    assert info(c, "/s")["allocated_chunks"] == 1


def test_import_f_order_is_transposed_to_c(tmp_path):
    store = tmp_path / "s.zarr"
    z = zarr.open_array(str(store), mode="w", shape=(9, 13, 5), chunks=(4, 5, 3), dtype="<i4",
                        order="F", compressor=numcodecs.Zlib(1))
    z[:] = values("i4", (9, 13, 5), seed=3)
    c = tmp_path / "c.slab"
    slab("import", c, store)
    check_same(c, "/s", z)


def test_import_tree_attributes_and_dimension_names(tmp_path):
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w")
    root.attrs.update({"title": "run 7", "count": 3, "scale": 0.5, "big": 2**63 + 5,
                       "flags": [True, False], "ints": [1, -2, 3], "mixed": [1, 2.5],
                       "names": ["a", "b"], "nested": {"a": {"b": [1, 2]}}, "none": None,
                       "missing": float("nan"), "yes": True})
    g = root.create_group("g1").create_group("g2")
    g.attrs["units"] = "K"
    t = g.create_dataset("temp", shape=(4, 5, 6), chunks=(2, 5, 6), dtype="<f4")
    t[:] = values("f4", (4, 5, 6))
    t.attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
    t.attrs["long_name"] = "air temperature"
    root.create_group("empty")
    c = tmp_path / "c.slab"
    slab("import", c, store)
    a = info(c, "/")["attributes"]
    assert a["title"] == "run 7" and a["count"] == 3 and a["scale"] == 0.5
    assert a["big"] == 2**63 + 5 and a["flags"] == [1, 0] and a["yes"] == 1
    assert a["ints"] == [1, -2, 3] and a["mixed"] == [1, 2.5] and a["missing"] == "nan"
    assert json.loads(a["names"]) == ["a", "b"]
    assert json.loads(a["nested"]) == {"a": {"b": [1, 2]}} and a["none"] == "null"
    assert info(c, "/g1/g2")["attributes"] == {"units": "K"}
    ta = info(c, "/g1/g2/temp")["attributes"]
    assert ta["_ARRAY_DIMENSIONS"] == '["time","lat","lon"]'
    assert ta["long_name"] == "air temperature"
    assert info(c, "/empty")["kind"] == "group"
    check_same(c, "/g1/g2/temp", t)


def test_import_path_and_into(tmp_path):
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w")
    a = root.create_group("g").create_dataset("a", shape=(5,), chunks=(2,), dtype="<i8")
    a[:] = np.arange(5)
    root.create_dataset("b", shape=(3,), dtype="<u2")
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("import", c, store, "--path", "/g", "--into", "/x/y")
    check_same(c, "/x/y/g/a", a)
    # One array alone, and the existing container is added to.
    slab("import", c, store, "--path", "/g/a", "--into", "/z")
    check_same(c, "/z/a", a)
    assert [e.split()[-1] for e in slab("ls", c, "/").stdout.split("\n") if e] == ["x/", "z/"]
    # The same import again would overwrite: refused, nothing changes.
    before = snapshot(c)
    cp = fails("import", c, store, "--path", "/g/a", "--into", "/z")
    assert "/z/a" in cp.stderr and "exists" in cp.stderr
    assert snapshot(c) == before
    fails("import", c, store, "--path", "/nope")
    # A store whose root is an array: the dataset takes the store's name.
    arr = tmp_path / "solo.zarr"
    z = zarr.open_array(str(arr), mode="w", shape=(4, 4), chunks=(3, 3), dtype="<f4")
    z[:] = 2.5
    slab("import", c, arr)
    check_same(c, "/solo", z)


def test_import_through_a_mount(tmp_path, mounter):
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w")
    arrays = {}
    for k, dtype in enumerate([">f8", "<i2", "|u1"]):
        z = root.create_dataset(f"d{k}", shape=(101, 33), chunks=(25, 10), dtype=dtype,
                                compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
                                fill_value=5)
        z[: 60 + k] = values(dtype, (60 + k, 33), seed=k)
        arrays[f"d{k}"] = z
    c = tmp_path / "c.slab"
    slab("import", c, store)
    m = mounter(c, "-o", "ro")
    for name, z in arrays.items():
        want = tmp_path / f"{name}.bin"
        want.write_bytes(np.ascontiguousarray(z[...]).astype(le(z.dtype)).tobytes())
        subprocess.run(["cmp", str(want), mpath(m, f"/{name}")], check=True)


def test_import_skips_what_slabfs_cannot_hold(tmp_path):
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w")
    ok = root.create_dataset("ok", shape=(4,), dtype="<i4")
    ok[:] = [1, 2, 3, 4]
    root.create_dataset("flag", shape=(4,), dtype="bool")
    root.create_dataset("cplx", shape=(4,), dtype="<c8")
    root.create_dataset("half", shape=(4,), dtype="<f2")
    root.create_dataset("when", shape=(4,), dtype="<M8[s]")
    root.create_dataset("text", shape=(4,), dtype="<U5")
    root.create_dataset("rec", shape=(4,), dtype=[("a", "<i4"), ("b", "<f8")])
    root.create_dataset("delta", shape=(4,), dtype="<i4", filters=[numcodecs.Delta("<i4")])
    root.create_dataset("lzma", shape=(4,), dtype="<i4", compressor=numcodecs.LZMA())
    c = tmp_path / "c.slab"
    cp = slab("import", c, store)
    for name, why in [("flag", "bool"), ("cplx", "complex"), ("half", "f2"), ("when", "datetime"),
                      ("text", "string"), ("rec", "structured"), ("delta", "filters delta"),
                      ("lzma", "compressor 'lzma'")]:
        line = [ln for ln in cp.stdout.splitlines() if ln.startswith(f"skipped /{name}:")]
        assert len(line) == 1 and why in line[0], (name, cp.stdout)
    assert slab("ls", c, "/").stdout.split() == ["ok"]
    check_same(c, "/ok", ok)
    # --strict refuses, naming the first one, and creates nothing.
    c2 = tmp_path / "c2.slab"
    cp = fails("import", c2, store, "--strict")
    assert "--strict" in cp.stderr
    no_leftovers(tmp_path, "c2.slab")
    # Asked for by --path, an array slabfs cannot hold is an error.
    cp = fails("import", c2, store, "--path", "/cplx")
    assert "complex" in cp.stderr
    no_leftovers(tmp_path, "c2.slab")


# ------------------------------------------------------------------ import v3

V3_FILTERS = {"bytes": "", "big_gzip": "deflate=7", "blosc_crc": "shuffle,deflate=1,checksum",
              "transpose": "deflate=1", "blosc_gzip": "deflate=2"}


@pytest.mark.parametrize("case", sorted(V3_CASES))
@pytest.mark.parametrize("separator", ["/", "."])
def test_import_v3_codecs(tmp_path, case, separator):
    store = tmp_path / "s.zarr"
    os.makedirs(store)
    (store / "zarr.json").write_text(json.dumps(
        {"zarr_format": 3, "node_type": "group", "attributes": {"source": "hand-made"}}))
    a = values("i4", (11, 9, 6), seed=4)
    write_v3_array(str(store / "a"), a, (4, 4, 6), V3_CASES[case], fill=-1, separator=separator,
                   dimension_names=["t", "y", None], attributes={"units": "m"},
                   skip={(2, 2, 0)})
    c = tmp_path / "c.slab"
    slab("import", c, store)
    i = info(c, "/a")
    assert filters_of(c, "/a") == V3_FILTERS[case] and i["fill"] == -1
    assert i["attributes"] == {"units": "m", "_ARRAY_DIMENSIONS": '["t","y",null]'}
    assert info(c, "/")["attributes"] == {"source": "hand-made"}
    want = a.copy()
    want[8:, 8:, :] = -1  # the chunk left out reads as the fill value
    assert export(c, "/a") == want.astype("<i4").tobytes()


def test_import_v3_v2_key_encoding_and_float_fills(tmp_path):
    a = values("f4", (10, 10), seed=5)
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    for k, (fill, want) in enumerate([("NaN", np.nan), ("-Infinity", -np.inf),
                                      ("0x3fc00000", 1.5), (2.25, 2.25)]):
        store = tmp_path / f"s{k}.zarr"
        write_v3_array(str(store), a, (3, 4), codecs, fill=fill, encoding="v2", separator=".",
                       skip={(0, 0)})
        assert (store / "1.2").exists()
        c = tmp_path / f"c{k}.slab"
        slab("import", c, store)
        got = np.frombuffer(export(c, f"/s{k}"), "<f4").reshape(10, 10)
        exp = a.copy()
        exp[:3, :4] = want
        np.testing.assert_array_equal(got, exp)


def test_import_v3_refuses_sharding_and_unknown_codecs_by_name(tmp_path):
    for name, codecs in [
        ("sharding", [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2], "codecs": [{"name": "bytes"}], "index_codecs": []}}]),
        ("zstd", [{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "zstd", "configuration": {"level": 1}}]),
        ("frobnicate", [{"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "frobnicate"}]),
    ]:
        store = tmp_path / f"{name}.zarr"
        os.makedirs(store)
        meta = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs}
        (store / "zarr.json").write_text(json.dumps(meta))
        cp = fails("import", tmp_path / "c.slab", store)
        assert name in cp.stderr, cp.stderr
        no_leftovers(tmp_path, "c.slab")


# ------------------------------------------------------------------ export

def test_export_v2_read_by_zarr_and_dask(tmp_path, container):
    c = container
    arrays = {}
    for k, dtype in enumerate(DTYPES):
        a = values(dtype, (45, 31), seed=k)
        make_dataset(c, f"/g/{dtype}", a, (10, 8), fill=7)
        arrays[f"g/{dtype}"] = a
    # Filters of each kind on datasets of their own.
    specs = {"none": [], "deflate": ["--deflate", "6"], "shuf": ["--shuffle", "--deflate", "3"],
             "crc": ["--checksum"], "all": ["--shuffle", "--deflate", "1", "--checksum"]}
    f8 = values("f8", (64, 50), seed=9)
    for name, flags in specs.items():
        slab("mkdset", "-p", c, f"/f/{name}", "--dtype", "f8", "--shape", "64,50",
             "--chunks", "16,16", *flags)
        npy = tmp_path / "f8.npy"
        np.save(npy, f8)
        slab("import", c, f"/f/{name}", npy)
    slab("attr", c, "/", "title", "exported")
    slab("attr", c, "/g/f4", "units", "K")
    slab("attr", c, "/g/f4", "scale", "0.5,2")
    slab("attr", c, "/g/f4", "_ARRAY_DIMENSIONS", '["y","x"]')
    temp = values("f4", (6, 5), seed=13)
    make_dataset(c, "/xr/temp", temp, (3, 5))
    make_dataset(c, "/xr/lat", np.linspace(-60, 60, 6), (6,))
    slab("attr", c, "/xr/temp", "_ARRAY_DIMENSIONS", '["y","x"]')
    slab("attr", c, "/xr/lat", "_ARRAY_DIMENSIONS", '["y"]')
    out = tmp_path / "out.zarr"
    cp = slab("export", c, out)
    assert "exported" in cp.stdout and "Zarr v2" in cp.stdout
    assert "/f/crc: its CRC-32C checksum is not written" in cp.stdout
    root = zarr.open_group(str(out), mode="r")
    assert dict(root.attrs) == {"title": "exported"}
    for name, a in arrays.items():
        z = root[name]
        assert z.dtype == le(a.dtype) and z.shape == a.shape and z.chunks == (10, 8)
        # The storage fill value is no missing-value marker: fill_value
        # stays null (xarray would mask 7s), and every chunk is written.
        assert z.fill_value is None and z.order == "C"
        np.testing.assert_array_equal(z[...], a)
    assert dict(root["g/f4"].attrs) == {"units": "K", "scale": [0.5, 2.0],
                                        "_ARRAY_DIMENSIONS": ["y", "x"]}
    comp = {n: root[f"f/{n}"].compressor for n in specs}
    assert comp["none"] is None and comp["crc"] is None
    assert comp["deflate"] == numcodecs.Zlib(level=6)
    assert comp["shuf"] == numcodecs.Blosc(cname="zlib", clevel=3,
                                           shuffle=numcodecs.Blosc.SHUFFLE, blocksize=0)
    assert comp["all"] == numcodecs.Blosc(cname="zlib", clevel=1,
                                          shuffle=numcodecs.Blosc.SHUFFLE, blocksize=0)
    for n in specs:
        np.testing.assert_array_equal(root[f"f/{n}"][...], f8)
    # dask computes on the exported store.
    import dask.array as da
    total = da.from_zarr(str(out), component="f/all").sum().compute()
    assert total == f8.sum()
    # xarray reads the dimension names.
    import xarray as xr
    ds = xr.open_zarr(str(out / "xr"), consolidated=False)
    assert ds["temp"].dims == ("y", "x") and ds["lat"].dims == ("y",)
    np.testing.assert_array_equal(ds["temp"].values, temp)


def test_export_writes_only_stored_chunks_padded_edges(tmp_path, container):
    c = container
    slab("mkdset", c, "/p", "--dtype", "i2", "--shape", "100,70", "--chunks", "30,30",
         "--fill", "-5", "--deflate", "1")
    blk = np.arange(20 * 15, dtype="<i2").reshape(20, 15)
    with_data = np.full((100, 70), -5, "<i2")
    raw = tmp_path / "b.bin"
    raw.write_bytes(blk.tobytes())
    # Write one block at the far corner (an edge chunk) with the mount-free
    # CLI: import into a view is not possible, so create the full array.
    with_data[80:100, 55:70] = blk
    full = tmp_path / "full.npy"
    np.save(full, with_data)
    slab("import", c, "/p", full)
    # Erase everything but the corner chunk: only it stays stored.
    slab("erase", c, "/p", "0:90,0:60")
    slab("erase", c, "/p", "0:90,60:70")
    slab("erase", c, "/p", "90:100,0:60")
    assert info(c, "/p")["allocated_chunks"] == 1
    kept = np.full((100, 70), -5, "<i2")
    kept[90:, 60:] = with_data[90:, 60:]
    out = tmp_path / "o.zarr"
    # With a _FillValue that is the storage fill value, fill_value says it
    # and unstored chunks need not be written.
    slab("attr", c, "/p", "_FillValue", "-5", "--dtype", "i2")
    slab("export", c, out, "--path", "/p")
    z = zarr.open_array(str(out), mode="r")
    assert z.fill_value == -5
    np.testing.assert_array_equal(z[...], kept)
    files = sorted(f for f in os.listdir(out) if not f.startswith("."))
    assert files == ["3.2"]
    # The edge chunk is stored full-size, padded with the fill value.
    chunk = np.frombuffer(zlib.decompress((out / "3.2").read_bytes()), "<i2").reshape(30, 30)
    assert (chunk[10:, :] == -5).all() and (chunk[:, 10:] == -5).all()
    np.testing.assert_array_equal(chunk[:10, :10], kept[90:, 60:])


def test_export_pads_short_record_variables_with_their_marker(tmp_path, container):
    """Datasets of one group that share a growable named dimension are
    exported at the longest length. The rows a shorter one gains read as its
    _FillValue where it has one, so xarray masks them as missing (an
    exploratory tester found them written as the storage fill value, 0,
    which xarray showed as data beside fill_value -5); without one, as its
    fill value, as netCDF reads a short record variable."""
    xarray = pytest.importorskip("xarray")
    c = container
    rows = np.arange(16, dtype="<i4").reshape(2, 8)
    npy = tmp_path / "p.npy"
    np.save(npy, rows)
    for name in ("marked", "plain"):
        slab("mkdset", c, f"/{name}", "--dtype", "i4", "--shape", "2,8", "--maxshape", "unlimited,8",
             "--chunks", "2,8")
        slab("import", c, f"/{name}", npy)
        slab("attr", c, f"/{name}", "_ARRAY_DIMENSIONS", '["t","x"]')
    slab("attr", c, "/marked", "_FillValue", "-5", "--dtype", "i4")
    slab("mkdset", c, "/long", "--dtype", "i2", "--shape", "5,8", "--fill", "-99")
    slab("attr", c, "/long", "_ARRAY_DIMENSIONS", '["t","x"]')
    out = tmp_path / "o.zarr"
    slab("export", c, out)
    marked = zarr.open_array(str(out / "marked"), mode="r")
    assert marked.shape == (5, 8) and marked.fill_value == -5
    np.testing.assert_array_equal(marked[:2], rows)
    assert (marked[2:] == -5).all()
    plain = zarr.open_array(str(out / "plain"), mode="r")
    assert plain.shape == (5, 8)
    assert (plain[2:] == 0).all()  # its fill value
    ds = xarray.open_zarr(str(out))
    assert np.isnan(ds["marked"].values[2:]).all()
    np.testing.assert_array_equal(ds["marked"].values[:2], rows)
    # v3: fill_value is the storage fill value, and _FillValue an attribute;
    # the padded rows hold the marker all the same (chunks written).
    out3 = tmp_path / "o3.zarr"
    slab("export", c, out3, "--format", "zarr3")
    back = tmp_path / "back.slab"
    slab("create", back)
    slab("import", back, out3)
    marked3 = export(back, "/marked")
    want = np.full((5, 8), -5, "<i4")
    want[:2] = rows
    assert marked3 == want.tobytes()
    plain3 = np.frombuffer(export(back, "/plain"), "<i4").reshape(5, 8)
    assert (plain3[2:] == 0).all()


def test_export_sparse_only_defined_chunks(tmp_path, container):
    c = container
    slab("mkdset", c, "/s", "--dtype", "f4", "--shape", "64,64", "--chunks", "16,16",
         "--sparse", "--fill", "-1")
    with mounted(c) as m:
        with open(mpath(m, "/s[3:5,40:42]"), "r+b") as f:
            f.write(np.full((2, 2), 9, "<f4").tobytes())
    slab("attr", c, "/s", "_FillValue", "-1", "--dtype", "f4")
    out = tmp_path / "o.zarr"
    cp = slab("export", c, out, "--path", "/s")
    assert "sparse; 1 chunk written" in cp.stdout
    assert sorted(f for f in os.listdir(out) if not f.startswith(".")) == ["0.2"]
    want = np.full((64, 64), -1, "<f4")
    want[3:5, 40:42] = 9
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], want)


def test_export_v3_follows_the_spec_and_round_trips(tmp_path, container):
    c = container
    a = values("u2", (50, 40), seed=11)
    make_dataset(c, "/g/plain", a, (16, 16), fill=3)
    for name, flags in [("gz", ["--deflate", "4"]),
                        ("bl", ["--shuffle", "--deflate", "2", "--checksum"])]:
        slab("mkdset", "-p", c, f"/g/{name}", "--dtype", "u2", "--shape", "50,40",
             "--chunks", "16,16", "--fill", "3", *flags)
        npy = tmp_path / "a.npy"
        np.save(npy, a)
        slab("import", c, f"/g/{name}", npy)
    slab("attr", c, "/g/gz", "_ARRAY_DIMENSIONS", '["row","col"]')
    slab("attr", c, "/g", "kind", "group attr")
    out = tmp_path / "o3.zarr"
    slab("export", c, out, "--format", "zarr3")
    root = json.loads((out / "zarr.json").read_text())
    assert root == {"zarr_format": 3, "node_type": "group", "attributes": {}}
    g = json.loads((out / "g" / "zarr.json").read_text())
    assert g == {"zarr_format": 3, "node_type": "group", "attributes": {"kind": "group attr"}}
    for name in ("plain", "gz", "bl"):
        meta = json.loads((out / "g" / name / "zarr.json").read_text())
        assert meta["zarr_format"] == 3 and meta["node_type"] == "array"
        assert meta["shape"] == [50, 40] and meta["data_type"] == "uint16"
        assert meta["chunk_grid"] == {"name": "regular",
                                      "configuration": {"chunk_shape": [16, 16]}}
        assert meta["chunk_key_encoding"] == {"name": "default",
                                              "configuration": {"separator": "/"}}
        assert meta["fill_value"] == 3
        codecs = meta["codecs"]
        assert codecs[0] == {"name": "bytes", "configuration": {"endian": "little"}}
        # Decode every chunk by hand and compare.
        for i in range(4):
            for j in range(3):
                data = (out / "g" / name / "c" / str(i) / str(j)).read_bytes()
                for codec in reversed(codecs[1:]):
                    if codec["name"] == "crc32c":
                        body, crc = data[:-4], int.from_bytes(data[-4:], "little")
                        assert crc == crc32c(body)
                        data = body
                    elif codec["name"] == "gzip":
                        data = gzip.decompress(data)
                    elif codec["name"] == "blosc":
                        data = numcodecs.Blosc().decode(data)
                    else:
                        raise AssertionError(codec)
                chunk = np.frombuffer(data, "<u2").reshape(16, 16)
                want = np.full((16, 16), 3, "<u2")
                part = a[i * 16:(i + 1) * 16, j * 16:(j + 1) * 16]
                want[:part.shape[0], :part.shape[1]] = part
                np.testing.assert_array_equal(chunk, want)
    gz = json.loads((out / "g" / "gz" / "zarr.json").read_text())
    assert gz["codecs"][1] == {"name": "gzip", "configuration": {"level": 4}}
    assert gz["dimension_names"] == ["row", "col"] and gz["attributes"] == {}
    bl = json.loads((out / "g" / "bl" / "zarr.json").read_text())
    assert bl["codecs"][1:] == [
        {"name": "blosc", "configuration": {"cname": "zlib", "clevel": 2, "shuffle": "shuffle",
                                            "typesize": 2, "blocksize": 0}},
        {"name": "crc32c"}]
    # Round trip: the same datasets, filters and attributes come back.
    back = tmp_path / "back.slab"
    slab("import", back, out)
    for name, filters in [("plain", ""), ("gz", "deflate=4"),
                          ("bl", "shuffle,deflate=2,checksum")]:
        i = info(back, f"/g/{name}")
        assert filters_of(back, f"/g/{name}") == filters
        assert i["chunks"] == [16, 16] and i["fill"] == 3
        assert export(back, f"/g/{name}") == a.astype("<u2").tobytes()
    assert info(back, "/g/gz")["attributes"] == {"_ARRAY_DIMENSIONS": '["row","col"]'}
    assert info(back, "/g")["attributes"] == {"kind": "group attr"}


def test_export_keeps_max_shape_for_the_round_trip(tmp_path, container):
    c = container
    slab("mkdset", c, "/grow", "--dtype", "i4", "--shape", "10,4", "--maxshape", "unlimited,8",
         "--chunks", "5,4")
    out = tmp_path / "o.zarr"
    slab("export", c, out)
    z = zarr.open_group(str(out), mode="r")["grow"]
    # In .zarray, where xarray does not show it as an attribute.
    assert "_slab_max_shape" not in z.attrs
    assert json.loads((out / "grow" / ".zarray").read_text())["_slab_max_shape"] == [None, 8]
    back = tmp_path / "b.slab"
    slab("import", back, out)
    i = info(back, "/grow")
    assert i["max_shape"] == [None, 8]
    assert "_slab_max_shape" not in i["attributes"]


def test_export_refuses_an_existing_output(tmp_path, container):
    make_dataset(container, "/a", np.arange(4, dtype="<i4"), (2,))
    out = tmp_path / "o.zarr"
    out.mkdir()
    fails("export", container, out)
    assert os.listdir(out) == []
