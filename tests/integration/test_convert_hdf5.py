"""HDF5 and netCDF-4 in and out of a container: `slab import FILE SOURCE.h5`
and `slab export FILE OUT.h5`.

The oracles are h5py, netCDF4/xarray, h5dump and ncdump: files made here
with h5py (nested groups, every dtype in both byte orders, unlimited,
contiguous and compact datasets, deflate+shuffle+fletcher32, fill values,
attributes of each kind) and python3-netcdf4 (unlimited dimension,
coordinate variables, _FillValue, a scalar variable, a dimension without a
variable, a subgroup) are imported and checked element by element through a
real mount (`cmp` of each dataset file against h5py's bytes) and through
`slab info`; exports are read back with h5py and xarray and compared with
the sources. Sources slabfs cannot hold fully are skipped with a note, or
refused with --strict; bad, hostile and interrupted runs fail with one line
and leave no destination, no temporary file, and an existing container
unchanged. The import's memory stays bounded on a dataset 32 times the
copy block."""
import hashlib
import json
import os
import signal
import subprocess
import time

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import bin_path, fails, info, run, slab
from mounting import mounter  # noqa: F401

DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"]


def le(dtype):
    return np.dtype(dtype).newbyteorder("<")


def values(dtype, shape, seed):
    """Values that use the whole range of the dtype (and negatives)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 1e3).astype(dt)
    info_ = np.iinfo(dt)
    return rng.integers(info_.min, info_.max, shape, dtype=le(dt), endpoint=True).astype(dt)


def temps(directory, name):
    """Temporary files a run left next to `name`."""
    return [f for f in os.listdir(directory) if f.startswith("." + name)]


def sha(path):
    with open(path, "rb") as f:
        return f.read()


def snapshot(c):
    """What a user can observe of a container (its bytes change with the
    writer lock's record even when nothing is committed): the listing,
    every object's description and a digest of every dataset's elements."""
    state = {"ls": slab("ls", "-l", "-r", c).stdout, "/": info(c, "/")}
    for line in slab("ls", "-r", c).stdout.split():
        p = "/" + line.rstrip("/")
        state[p] = info(c, p)
        if not line.endswith("/"):
            data = subprocess.run([bin_path("slab"), "export", str(c), p, "-"],
                                  capture_output=True, check=True).stdout
            state[p + "#data"] = hashlib.sha256(data).hexdigest()
    return state


# ---------------------------------------------------------------- sources


@pytest.fixture
def h5file(tmp_path):
    """An h5py file with every kind of thing slabfs holds."""
    path = tmp_path / "src.h5"
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "a test file"
        f.attrs["version"] = np.int16(3)
        for order in "<>":
            for t in DTYPES:
                dt = np.dtype(t).newbyteorder(order)
                f.create_dataset(f"types/{'le' if order == '<' else 'be'}_{t}",
                                 data=values(dt, (7, 13), DTYPES.index(t)), chunks=(3, 5))
        deep = f.create_dataset("a/b/c/deep", data=np.arange(24, dtype="u2").reshape(2, 3, 4))
        deep.attrs["note"] = "three levels down"
        a = f["a"]
        a.attrs["int"] = np.int64(-42)
        a.attrs["float"] = 2.5
        a.attrs["ints"] = np.arange(4, dtype="u4")
        a.attrs["floats_be"] = np.array([1.5, -2.25], dtype=">f4")
        a.attrs["fixed"] = np.bytes_(b"fixed width")
        a.attrs["vlen"] = "variable length"
        a.attrs["utf8"] = "Grüße, 世界"
        pad = h5py.h5t.C_S1.copy()  # a Fortran-style string: padded with spaces
        pad.set_size(8)
        pad.set_strpad(h5py.h5t.STR_SPACEPAD)
        h5py.h5a.create(a.id, b"spacepad", pad, h5py.h5s.create(h5py.h5s.SCALAR)).write(
            np.array(b"padded  ", dtype="S8"))
        grow = f.create_dataset("grow", shape=(10, 6), maxshape=(None, 6), chunks=(4, 6),
                                dtype="i2", fillvalue=7)
        grow[0:4] = np.arange(24, dtype="i2").reshape(4, 6)  # only the first chunk
        f.create_dataset("cont", data=np.linspace(0, 1, 2000, dtype="f4").reshape(50, 40))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((16,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32BE, space, dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(16, dtype=">i4"))
        filt = f.create_dataset("filt", data=values("i4", (100, 80), 11) % 1000, chunks=(16, 16),
                                compression="gzip", compression_opts=5, shuffle=True,
                                fletcher32=True, fillvalue=-5)
        filt.attrs["units"] = "K"
        f.create_dataset("scalar", data=np.float64(6.25))
    return path


@pytest.fixture
def ncfile(tmp_path):
    """A netCDF-4 file as netCDF users make them."""
    path = tmp_path / "src.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "netCDF test"
        ds.createDimension("time", None)
        ds.createDimension("lat", 4)
        ds.createDimension("lon", 5)
        ds.createDimension("nv", 2)  # a dimension without a variable
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = [0.0, 1.0, 2.0]
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat[:] = [-45, -15, 15, 45]
        lat.units = "degrees_north"
        lon = ds.createVariable("lon", "f4", ("lon",))
        lon[:] = np.arange(5) * 10
        temp = ds.createVariable("temp", "f4", ("time", "lat", "lon"), fill_value=-999.0,
                                 zlib=True, complevel=3, shuffle=True)
        temp[0:2] = np.arange(40, dtype="f4").reshape(2, 4, 5)  # time 2 left as fill
        temp.long_name = "temperature"
        temp.grid_mapping = "crs"
        crs = ds.createVariable("crs", "i4")
        crs.grid_mapping_name = "latitude_longitude"
        bnds = ds.createVariable("lat_bnds", "f4", ("lat", "nv"))
        bnds[:] = np.arange(8).reshape(4, 2)
        sub = ds.createGroup("sub")
        v = sub.createVariable("v", "i2", ("lat",))
        v[:] = [1, 2, 3, 4]
    return path


def h5_datasets(path):
    """{path: h5py dataset info} for every dataset in an HDF5 file."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out["/" + name] = {
                    "data": obj[()], "dtype": obj.dtype, "shape": obj.shape,
                    "maxshape": obj.maxshape, "chunks": obj.chunks,
                    "compression": obj.compression, "opts": obj.compression_opts,
                    "shuffle": obj.shuffle, "fletcher32": obj.fletcher32,
                    "fill": obj.fillvalue, "attrs": {k: obj.attrs[k] for k in obj.attrs}}
        f.visititems(visit)
    return out


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


# ---------------------------------------------------------------- import


def test_import_copies_the_whole_tree(h5file, tmp_path, mounter):
    c = tmp_path / "c.slab"
    cp = slab("import", c, h5file)
    assert cp.stderr == ""
    assert cp.stdout.startswith("imported ") and "(HDF5)" in cp.stdout, cp.stdout
    src = h5_datasets(h5file)
    m = mounter(c, "-o", "ro")
    for path, d in src.items():
        j = info(c, path)
        assert j["dtype"] == le(d["dtype"]).str[1:], path
        if d["shape"] == ():
            # A scalar: shape (1) and the marker attribute.
            assert j["shape"] == [1] and j["max_shape"] == [1], path
            assert j["attributes"]["_SLAB_SCALAR"] == 1
        else:
            assert j["shape"] == list(d["shape"]), path
            assert j["max_shape"] == [None if n is None else n for n in d["maxshape"]], path
        if d["chunks"] is not None:
            assert j["chunks"] == list(d["chunks"]), path
        assert j["fill"] == d["fill"], path
        want = np.ascontiguousarray(d["data"], dtype=le(d["dtype"])).tobytes()
        # cmp of the mounted file against h5py's bytes, little-endian.
        ref = tmp_path / "ref.bin"
        ref.write_bytes(want)
        run("cmp", ref, str(m.path) + path)
    assert info(c, "/filt")["filters"] == "shuffle,deflate=5,checksum"
    assert info(c, "/types/be_f8")["filters"] == "none"
    # Only the chunk the source allocated is stored; the rest reads as fill.
    assert info(c, "/grow")["allocated_chunks"] == 1
    assert info(c, "/")["attributes"] == {"title": "a test file", "version": 3}
    a = info(c, "/a")["attributes"]
    assert a == {"int": -42, "float": 2.5, "ints": [0, 1, 2, 3], "floats_be": [1.5, -2.25],
                 "fixed": "fixed width", "vlen": "variable length", "utf8": "Grüße, 世界",
                 "spacepad": "padded"}
    assert info(c, "/a/b/c/deep")["attributes"] == {"note": "three levels down"}


def test_import_path_and_into(h5file, tmp_path):
    c = tmp_path / "c.slab"
    slab("import", c, h5file, "--path", "/a/b", "--into", "/x/y")
    assert slab("ls", "-r", c).stdout.split() == ["x/", "x/y/", "x/y/b/", "x/y/b/c/",
                                                  "x/y/b/c/deep"]
    slab("import", c, h5file, "--path", "/filt", "--into", "/x")
    assert info(c, "/x/filt")["filters"] == "shuffle,deflate=5,checksum"
    # The second form: import FILE GROUP SOURCE.
    slab("import", c, "/z", h5file, "--path", "/cont")
    assert info(c, "/z/cont")["shape"] == [50, 40]
    before = snapshot(c)
    cp = fails("import", c, h5file, "--path", "/filt", "--into", "/x")
    assert "/x/filt already exists" in cp.stderr
    cp = fails("import", c, h5file, "--path", "/nope")
    assert "--path /nope: no such group or dataset" in cp.stderr
    assert snapshot(c) == before


def test_import_netcdf4(ncfile, tmp_path, mounter):
    c = tmp_path / "c.slab"
    slab("import", c, ncfile)
    # The dimension without a variable is not data.
    assert slab("ls", "-r", c).stdout.split() == ["crs", "lat", "lat_bnds", "lon", "sub/",
                                                  "sub/v", "temp", "time"]
    dims = {p: json.loads(info(c, p)["attributes"]["_ARRAY_DIMENSIONS"])
            for p in ["/temp", "/time", "/lat", "/lon", "/lat_bnds", "/sub/v"]}
    assert dims == {"/temp": ["time", "lat", "lon"], "/time": ["time"], "/lat": ["lat"],
                    "/lon": ["lon"], "/lat_bnds": ["lat", "nv"], "/sub/v": ["lat"]}
    temp = info(c, "/temp")
    assert temp["fill"] == -999 and temp["attributes"]["_FillValue"] == -999
    # netCDF wrote two records of temp; its third reads as _FillValue
    # through netCDF because time has three.
    assert temp["max_shape"] == [None, 4, 5] and temp["shape"] == [2, 4, 5]
    assert temp["filters"] == "shuffle,deflate=3"
    assert set(temp["attributes"]) == {"_ARRAY_DIMENSIONS", "_FillValue", "long_name",
                                       "grid_mapping"}
    # netCDF's bookkeeping is not copied.
    for p in ["/time", "/lat", "/lat_bnds", "/"]:
        for name in info(c, p)["attributes"]:
            assert name not in ("CLASS", "NAME", "DIMENSION_LIST", "REFERENCE_LIST",
                                "_Netcdf4Dimid", "_Netcdf4Coordinates", "_NCProperties",
                                "_nc3_strict"), (p, name)
    crs = info(c, "/crs")
    assert crs["shape"] == [1] and crs["attributes"] == {
        "_SLAB_SCALAR": 1, "grid_mapping_name": "latitude_longitude"}
    m = mounter(c, "-o", "ro")
    with netCDF4.Dataset(ncfile) as ds:
        ds.set_auto_mask(False)
        for path in ["/temp", "/time", "/lat", "/lon", "/lat_bnds", "/sub/v"]:
            v = ds[path.lstrip("/")]
            got = np.fromfile(str(m.path) + path, dtype=le(v.dtype))
            n = got.size // int(np.prod(v.shape[1:], dtype=int))
            assert np.array_equal(got, np.asarray(v[:n]).ravel()), path
        assert np.asarray(ds["crs"][...]) == \
            np.fromfile(str(m.path) + "/crs", "<i4")[0] == -2147483647


@pytest.fixture
def mixed(tmp_path):
    """A file with one of everything slabfs cannot hold, and one dataset it can."""
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["d"] = np.arange(3)
    path = tmp_path / "mixed.h5"
    # The 1.8 format: attributes larger than 64 KiB are possible there.
    with h5py.File(path, "w", libver=("v108", "latest")) as f:
        f["ok"] = np.arange(10, dtype="i4")
        f["ok"].attrs["strings"] = ["a", "b"]
        f["ok"].attrs["huge"] = np.zeros(9000)
        f["ok"].attrs["keep"] = 1
        f["cmp"] = np.zeros(3, dtype=[("a", "i4"), ("b", "f4")])
        f["complex"] = np.zeros(3, dtype="c8")
        f["bool"] = np.array([True, False])
        f["half"] = np.zeros(4, dtype="f2")
        f["strs"] = ["x", "yy"]
        f.create_dataset("lzf", data=np.arange(100), compression="lzf")
        f["empty"] = h5py.Empty("f4")
        f["soft"] = h5py.SoftLink("/ok")
        f["ext"] = h5py.ExternalLink(str(other), "/d")
        f["zz_hard"] = f["ok"]
        f["t"] = np.dtype("i4")
        f.create_dataset("huge", shape=(2 ** 40, 2 ** 40), chunks=(64, 64), dtype="f8")
        # Data in other files is never read: a hostile file could name any.
        raw = tmp_path / "raw.bin"
        raw.write_bytes(bytes(range(16)))
        f.create_dataset("extdata", shape=(16,), dtype="u1", external=[(str(raw), 0, 16)])
        layout = h5py.VirtualLayout(shape=(3,), dtype="i8")
        layout[:] = h5py.VirtualSource(str(other), "d", shape=(3,))
        f.create_virtual_dataset("vds", layout)
    return path


def test_import_skips_what_slabfs_cannot_hold(mixed, tmp_path):
    c = tmp_path / "c.slab"
    cp = slab("import", c, mixed)
    lines = cp.stdout.splitlines()
    # The lines are the HDF5 store's Skipped() (the same `slab ls` shows).
    expect = [
        "skipped /bool: enum (or bool) data",
        "skipped /cmp: compound data",
        "skipped /complex: compound data",
        "skipped /empty: a dataset with no elements",
        "skipped /ext: an external link",
        "skipped /half: 16-bit float data",
        "skipped /zz_hard: the same object as /ok",
        "skipped /huge: larger than 2^63 bytes",
        "skipped /lzf: filter lzf (id 32000)",
        "skipped /ok attribute 'huge': 9000 values of f8",
        "skipped /ok attribute 'strings': array of 2 strings",
        "skipped /soft: a soft link",
        "skipped /strs: variable-length string data",
        "skipped /t: a named datatype",
        "skipped /extdata: its data lives in external files, which are not read",
        "skipped /vds: a virtual dataset (its source files are not read)",
    ]
    for e in expect:
        assert any(line.startswith(e) for line in lines), (e, cp.stdout)
    assert lines[-1].startswith("imported 40 B"), cp.stdout
    assert slab("ls", c).stdout.split() == ["ok"]
    assert info(c, "/ok")["attributes"] == {"keep": 1}


def test_strict_refuses_and_leaves_nothing(mixed, h5file, tmp_path):
    c = tmp_path / "c.slab"
    cp = fails("import", "--strict", c, mixed)
    assert "--strict" in cp.stderr and "mixed.h5" in cp.stderr
    assert not c.exists() and temps(tmp_path, "c.slab") == []
    slab("import", c, h5file, "--path", "/cont")
    before = snapshot(c)
    fails("import", "--strict", c, mixed, "--into", "/m")
    assert snapshot(c) == before
    # --strict accepts a source that holds only what slabfs can hold.
    slab("import", "--strict", c, h5file, "--into", "/all")


def test_import_sparse_sources_stay_sparse(tmp_path):
    """Chunks the source never allocated are not stored, and finding them
    costs no walk over an enormous chunk grid."""
    src = tmp_path / "sparse.h5"
    with h5py.File(src, "w") as f:
        big = f.create_dataset("big", shape=(2 ** 20, 2 ** 20), chunks=(1024, 1024),
                               dtype="u1", fillvalue=3)  # 1 TiB, 2^20 chunks
        big[5000:5010, 7000:7010] = 9
        many = f.create_dataset("many", shape=(6400, 64), chunks=(1, 64), dtype="i4")
        rows = np.arange(0, 6400, 4)  # 1600 chunks, above the listing limit with the next
        rows = np.union1d(rows, np.arange(1, 6400, 2))  # 4800 chunks
        for r in rows:
            many[r] = r
    c = tmp_path / "c.slab"
    start = time.monotonic()
    slab("import", c, src)
    assert time.monotonic() - start < 60
    j = info(c, "/big")
    assert j["allocated_chunks"] == 1 and j["fill"] == 3
    assert info(c, "/many")["allocated_chunks"] == len(rows)
    out = tmp_path / "many.npy"
    slab("export", c, "/many", out)
    want = np.zeros((6400, 64), "i4")
    want[rows] = rows[:, None]
    assert np.array_equal(np.load(out), want)


# ---------------------------------------------------------------- export


def test_export_round_trip(h5file, tmp_path):
    c = tmp_path / "c.slab"
    slab("import", c, h5file)
    out = tmp_path / "out.h5"
    cp = slab("export", c, out)
    assert cp.stdout.startswith("exported ") and "(HDF5)" in cp.stdout
    assert temps(tmp_path, "out.h5") == []
    src, got = h5_datasets(h5file), h5_datasets(out)
    assert set(got) == set(src)
    for path, s in src.items():
        g = got[path]
        assert g["dtype"] == le(s["dtype"]), path
        assert g["shape"] == s["shape"] and g["maxshape"] == s["maxshape"], path
        assert np.array_equal(g["data"], s["data"]), path
        if s["chunks"] is not None:
            assert g["chunks"] == s["chunks"], path
        elif s["shape"] != ():
            assert list(g["chunks"]) == info(c, path)["chunks"], path
        for key in ("compression", "opts", "shuffle", "fletcher32", "fill"):
            assert g[key] == s[key], (path, key)
        assert set(g["attrs"]) == set(s["attrs"]), path
    with h5py.File(out) as f, h5py.File(h5file) as s:
        for name, v in s["a"].attrs.items():
            w = f["a"].attrs[name]
            if isinstance(v, (str, bytes)) or getattr(v, "dtype", None) is not None and \
                    v.dtype.kind in "SO":
                assert text(w) == text(v).rstrip(), name
            else:
                assert np.array_equal(w, v) and np.asarray(w).dtype == le(np.asarray(v).dtype), name
        assert f["grow"].id.get_num_chunks() == 1  # unstored chunks stay unallocated
        assert "_SLAB_SCALAR" not in f["scalar"].attrs
    run("h5dump", "-H", out)
    run("ncdump", "-h", out)


def test_export_netcdf_round_trip(ncfile, tmp_path):
    c = tmp_path / "c.slab"
    slab("import", c, ncfile)
    out = tmp_path / "out.nc"
    slab("export", c, out)
    header = run("ncdump", "-h", out).stdout
    for line in ["time = UNLIMITED ; // (3 currently)", "lat = 4 ;", "lon = 5 ;", "nv = 2 ;",
                 "float temp(time, lat, lon) ;", "temp:_FillValue = -999.f ;",
                 "float lat_bnds(lat, nv) ;", "int crs ;", "short v(lat) ;"]:
        assert line in header, (line, header)
    assert "phony_dim" not in header and "_ARRAY_DIMENSIONS" not in header
    for group in (None, "sub"):
        with xr.open_dataset(ncfile, group=group) as a, xr.open_dataset(out, group=group) as b:
            assert a.identical(b), (group, a, b)
            for v in a.variables:
                assert a[v].encoding.get("_FillValue") == b[v].encoding.get("_FillValue"), v
    # And back again: the same container.
    c2 = tmp_path / "c2.slab"
    slab("import", c2, out)
    assert slab("ls", "-r", c2).stdout == slab("ls", "-r", c).stdout
    for p in ["/temp", "/lat_bnds", "/crs", "/time", "/sub/v"]:
        a, b = info(c, p), info(c2, p)
        for k in ("dtype", "shape", "max_shape", "chunks", "fill", "filters", "attributes"):
            assert a[k] == b[k], (p, k)


def test_export_names_dimensions_only_when_consistent(tmp_path):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/x", "--dtype", "f8", "--shape", "4")
    slab("mkdset", c, "/data", "--dtype", "i4", "--shape", "4,3")
    slab("mkdset", c, "/bad", "--dtype", "i4", "--shape", "5")
    slab("mkdset", "-p", c, "/g/sub", "--dtype", "u1", "--shape", "4")
    slab("mkdset", c, "/z1", "--dtype", "u1", "--shape", "2")
    slab("mkdset", c, "/z2", "--dtype", "u1", "--shape", "3")
    for path, dims in [("/x", '["x"]'), ("/data", '["x","y"]'), ("/bad", '["x"]'),
                       ("/g/sub", '["x"]'), ("/z1", '["z"]'), ("/z2", '["z"]')]:
        slab("attr", c, path, "_ARRAY_DIMENSIONS", dims)
    out = tmp_path / "out.nc"
    slab("export", c, out)
    header = run("ncdump", "-h", out).stdout
    assert "int data(x, y) ;" in header and "double x(x) ;" in header, header
    assert "ubyte sub(x) ;" in header, header
    with xr.open_dataset(out) as ds:
        assert ds["data"].dims == ("x", "y") and ds["x"].dims == ("x",)
    with h5py.File(out) as f:
        assert "y" in f and "DIMENSION_LIST" in f["data"].attrs
        assert "_ARRAY_DIMENSIONS" not in f["data"].attrs and "_ARRAY_DIMENSIONS" not in f["x"].attrs
        # Inconsistent: /bad's length is not x's, /z1 and /z2 disagree on
        # z. They keep the attribute (which netCDF hides) and no scales.
        for name, dims in [("bad", '["x"]'), ("z1", '["z"]'), ("z2", '["z"]')]:
            assert "DIMENSION_LIST" not in f[name].attrs, name
            assert f[name].attrs["_ARRAY_DIMENSIONS"] == dims.encode(), name
        assert "z" not in f
    # Re-imported, the placeholder y is not data and the names come back.
    c2 = tmp_path / "c2.slab"
    slab("import", c2, out)
    assert "y" not in slab("ls", c2).stdout.split()
    for path, dims in [("/data", ["x", "y"]), ("/x", ["x"]), ("/bad", ["x"]),
                       ("/g/sub", ["x"]), ("/z1", ["z"])]:
        assert json.loads(info(c2, path)["attributes"]["_ARRAY_DIMENSIONS"]) == dims, path


def test_export_sparse_dataset(tmp_path):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/s", "--dtype", "f4", "--shape", "100,100", "--chunks", "10,10",
         "--sparse", "--fill", "-1")
    data = np.arange(10000, dtype="<f4").reshape(100, 100)
    npy = tmp_path / "d.npy"
    np.save(npy, data)
    slab("import", c, "/s", npy)
    slab("erase", c, "/s", "0:50,:")
    slab("erase", c, "/s", "55:57,3:4")
    out = tmp_path / "out.h5"
    cp = slab("export", c, out, "--path", "/s")
    assert "note: /s is sparse: its undefined elements are written as the fill value -1" in \
        cp.stdout
    want = data.copy()
    want[0:50] = -1
    want[55:57, 3:4] = -1
    with h5py.File(out) as f:
        assert np.array_equal(f["s"][...], want)
        assert f["s"].fillvalue == -1
        assert f["s"].id.get_num_chunks() == info(c, "/s")["allocated_chunks"] == 50


def test_export_path_of_a_group_and_of_a_dataset(h5file, tmp_path):
    c = tmp_path / "c.slab"
    slab("import", c, h5file)
    slab("export", c, tmp_path / "a.h5", "--path", "/a")
    with h5py.File(tmp_path / "a.h5") as f:
        assert list(f) == ["b"] and f.attrs["int"] == -42
        assert np.array_equal(f["b/c/deep"][...], np.arange(24).reshape(2, 3, 4))
    slab("export", c, "/filt", tmp_path / "f.h5")  # the second form
    with h5py.File(tmp_path / "f.h5") as f:
        assert list(f) == ["filt"] and f["filt"].compression_opts == 5


# ---------------------------------------------------------------- bad input


def test_bad_sources_leave_nothing(h5file, tmp_path):
    c = tmp_path / "c.slab"
    truncated = tmp_path / "trunc.h5"
    truncated.write_bytes(sha(h5file)[: os.path.getsize(h5file) // 2])
    cp = fails("import", c, truncated)
    assert "trunc.h5" in cp.stderr and "truncated" in cp.stderr
    notes = tmp_path / "notes.h5"
    notes.write_bytes(b"not an HDF5 file at all\n" * 100)
    cp = fails("import", c, notes)
    assert "not an HDF5 or netCDF-4 file" in cp.stderr
    # A chunk whose bytes changed fails its Fletcher-32 check.
    damaged = tmp_path / "damaged.h5"
    damaged.write_bytes(sha(h5file))
    with h5py.File(damaged) as f:
        chunk = f["filt"].id.get_chunk_info(17)
    raw = bytearray(sha(damaged))
    for i in range(chunk.byte_offset + 4, chunk.byte_offset + 40):
        raw[i] ^= 0xA5
    damaged.write_bytes(raw)
    cp = fails("import", c, damaged)
    assert "dataset /filt chunk [" in cp.stderr and "Fletcher-32" in cp.stderr, cp.stderr
    assert not c.exists() and temps(tmp_path, "c.slab") == []
    # Into an existing container: unchanged by any of them.
    slab("import", c, h5file, "--path", "/cont")
    before = snapshot(c)
    for bad in (truncated, notes, damaged):
        fails("import", c, bad, "--into", "/new")
    assert snapshot(c) == before and temps(tmp_path, "c.slab") == []


def test_export_refuses_an_existing_output(h5file, tmp_path):
    c = tmp_path / "c.slab"
    slab("import", c, h5file, "--path", "/cont")
    out = tmp_path / "out.h5"
    out.write_bytes(b"precious")
    cp = fails("export", c, out)
    assert "already exists" in cp.stderr
    assert out.read_bytes() == b"precious"
    fails("export", c, tmp_path / "no" / "such" / "dir.h5")
    cp = fails("export", c, tmp_path / "x.h5", "--path", "/nope")
    assert not (tmp_path / "x.h5").exists() and temps(tmp_path, "x.h5") == []


# ---------------------------------------------------------------- big copies


@pytest.fixture(scope="module")
def big_h5(tmp_path_factory):
    """256 MiB of i4 in 256x256 chunks, shuffle+deflate-1: seconds to copy."""
    path = tmp_path_factory.mktemp("big") / "big.h5"
    rng = np.random.default_rng(5)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(4096, 16384), chunks=(256, 256), dtype="i4",
                             compression="gzip", compression_opts=1, shuffle=True)
        for r in range(0, 4096, 256):
            d[r:r + 256] = rng.integers(0, 1 << 20, (256, 16384), dtype="i4")
    return path


def interrupt_when(args, ready, sig=signal.SIGTERM):
    """Runs slab ARGS, sends `sig` once ready() holds, returns (code, stderr)."""
    p = subprocess.Popen([bin_path("slab"), *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ready() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert p.poll() is None, "the copy ended before it could be interrupted"
    p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    return p.returncode, err


def test_interrupted_import_leaves_nothing(big_h5, tmp_path):
    c = tmp_path / "c.slab"
    code, err = interrupt_when(["import", c, big_h5], lambda: temps(tmp_path, "c.slab"))
    assert code == 1 and "interrupted" in err and len(err.strip().splitlines()) == 1, err
    assert not c.exists() and temps(tmp_path, "c.slab") == []
    # Into an existing container: unchanged.
    slab("create", c)
    slab("mkgroup", c, "/kept")
    before = snapshot(c)
    # Once chunks are being written (chunks that need no encoding copy in
    # well under a second, so a timer would often come too late).
    initial = os.path.getsize(c)
    code, err = interrupt_when(["import", c, big_h5],
                               lambda: os.path.getsize(c) > initial, signal.SIGINT)
    assert code == 1 and "interrupted" in err, err
    assert snapshot(c) == before


def test_interrupted_export_leaves_nothing(big_h5, tmp_path):
    c = tmp_path / "c.slab"
    slab("import", "-q", c, big_h5)
    out = tmp_path / "out.h5"
    code, err = interrupt_when(["export", c, out], lambda: temps(tmp_path, "out.h5"))
    assert code == 1 and "interrupted" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() and temps(tmp_path, "out.h5") == []


def test_import_shows_progress_on_a_terminal(big_h5, tmp_path):
    c = tmp_path / "c.slab"
    cmd = " ".join([bin_path("slab"), "import", str(c), str(big_h5)])
    cp = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True,
                        timeout=300, env={**os.environ, "SLAB_PROGRESS_AFTER": "0"})
    assert cp.returncode == 0, cp.stdout
    assert "importing [" in cp.stdout and "chunks" in cp.stdout, cp.stdout
    assert "imported 256.0 MiB in 1024 chunks" in cp.stdout


def peak_rss_mib(*args):
    """slab's peak resident memory, as /usr/bin/time measures it (the
    child's own rusage: a child forked from this Python process would count
    Python's pages too)."""
    cp = subprocess.run(["/usr/bin/time", "-f", "%M", bin_path("slab"), *map(str, args)],
                        capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stderr
    return int(cp.stderr.strip().splitlines()[-1]) / 1024


def test_memory_stays_bounded(tmp_path):
    """A 512 MiB dataset (32 copy blocks) goes through a fraction of that."""
    src = tmp_path / "large.h5"
    with h5py.File(src, "w") as f:
        d = f.create_dataset("x", shape=(8192, 16384), chunks=(128, 1024), dtype="f4",
                             compression="gzip", compression_opts=1)
        row = np.arange(16384, dtype="f4")
        for r in range(0, 8192, 512):
            d[r:r + 512] = row + np.arange(r, r + 512, dtype="f4")[:, None]
    c = tmp_path / "c.slab"
    assert peak_rss_mib("import", c, src) < 128
    assert info(c, "/x")["size_bytes"] == 512 << 20
    assert peak_rss_mib("export", c, tmp_path / "out.h5") < 192
    with h5py.File(tmp_path / "out.h5") as f:
        assert f["x"][8191, 16383] == 8191 + 16383 and f["x"][4000, 5] == 4005
