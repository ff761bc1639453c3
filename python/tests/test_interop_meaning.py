"""Interop that never changes what the data means (issue 22, items 1-3).

netCDF-4 files made here with xarray and netCDF4 (integer, unsigned and
float variables with and without _FillValue, zeros where a marker would
hide them, packed variables, times in five calendars, record variables of
unequal length) go netCDF -> slab -> Zarr v2, and every step must read in
xarray exactly as the source does: ``xr.open_dataset(slab,
engine="slabfs")`` and ``xr.open_zarr(export)`` are ``.identical()`` to
``xr.open_dataset(nc, engine="netcdf4")``. Before, the export wrote the
storage fill value as Zarr's fill_value, which xarray takes for a missing
value marker: zeros became NaN, integers floats, time[0] NaT.

Also: a store xarray wrote (fill_value is its _FillValue) imports with the
marker kept; a Zarr v3 store with an array slabfs cannot hold (vlen-utf8
strings) imports the rest with a note, and refuses with --strict.
"""
import json
import os
import pathlib
import subprocess
import warnings

import netCDF4
import numpy as np
import pytest
import xarray as xr

import slabfs

SLAB = pathlib.Path(os.environ.get("SLABFS_BIN", pathlib.Path(slabfs.__file__).resolve().parents[2] / "bin")) / "slab"

CALENDARS = ["standard", "noleap", "360_day", "julian", "all_leap"]


def slab(*args, check=True):
    cp = subprocess.run([str(SLAB), *map(str, args)], capture_output=True, text=True, timeout=300)
    if check:
        assert cp.returncode == 0, (args, cp.stdout, cp.stderr)
    return cp


def typed_file(path, calendar, seed):
    rng = np.random.default_rng(seed)
    ds = xr.Dataset(attrs={"title": f"typed {calendar}", "version": np.int32(3)})
    n = 12
    for dt in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"):
        values = rng.integers(0, 100, (n, 4)).astype(dt)
        values[0, 0] = 0  # a zero where a marker 0 would hide it
        ds[f"v_{dt}"] = (("time", "x"), values, {"units": "1"})
        if dt.startswith("f"):
            # floats: NaN as missing (xarray writes _FillValue NaN)
            ds[f"v_{dt}"].values[3, 1] = np.nan
    # An integer variable with a real marker.
    marked = rng.integers(-50, 50, (n, 4)).astype("i4")
    marked[5, 2] = -9999
    ds["marked"] = (("time", "x"), marked)
    ds["marked"].encoding["_FillValue"] = np.int32(-9999)
    # A packed variable.
    ds["packed"] = (("time",), np.round(rng.normal(10, 3, n), 1))
    ds["packed"].values[7] = np.nan
    ds["packed"].encoding.update({"dtype": "i2", "scale_factor": 0.1, "add_offset": 10.0, "_FillValue": -32767})
    ds["time"] = ("time", np.arange(n) * 31, {"units": "days since 2001-01-01", "calendar": calendar})
    ds["x"] = ("x", np.array([10, 20, 30, 40], "i4"))
    ds.to_netcdf(path, engine="netcdf4", unlimited_dims=["time"])


def records_file(path):
    """Record variables of unequal length along the unlimited dimension,
    written with netCDF4 directly (xarray cannot make them)."""
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 3)
        a = nc.createVariable("a", "f4", ("time", "x"), fill_value=-1.0)
        b = nc.createVariable("b", "i4", ("time",))          # netCDF's default fill
        c = nc.createVariable("c", "u2", ("time", "x"), fill_value=0)
        a[0:4] = np.arange(12, dtype="f4").reshape(4, 3)
        b[0:2] = [7, 0]
        c[0:1] = [[1, 2, 3]]


def open_all(nc, container, store):
    ref = xr.open_dataset(nc, engine="netcdf4").load()
    via_slab = xr.open_dataset(container, engine="slabfs").load()
    via_zarr = xr.open_zarr(store).load()
    return ref, via_slab, via_zarr


def differences(a, b):
    out = []
    for v in sorted(set(a.variables) | set(b.variables)):
        if v not in a.variables or v not in b.variables:
            out.append(f"{v}: only in one")
        elif not a[v].identical(b[v]):
            out.append(f"{v}: {a[v].dtype} {dict(a[v].attrs)} {a[v].values.ravel()[:4]} vs "
                       f"{b[v].dtype} {dict(b[v].attrs)} {b[v].values.ravel()[:4]}")
    if a.attrs != b.attrs:
        out.append(f"attrs {a.attrs} vs {b.attrs}")
    return out


def roundtrip(tmp_path, nc):
    container = tmp_path / (nc.stem + ".slab")
    store = tmp_path / (nc.stem + ".zarr")
    slab("create", container)
    slab("import", "-q", container, nc)
    slab("export", "-q", container, "/", store)
    return container, store


@pytest.mark.parametrize("calendar", CALENDARS)
def test_netcdf_slab_zarr_xarray_keeps_meaning(tmp_path, calendar):
    warnings.simplefilter("ignore")
    nc = tmp_path / f"typed_{calendar}.nc"
    typed_file(nc, calendar, seed=len(calendar))
    container, store = roundtrip(tmp_path, nc)
    ref, via_slab, via_zarr = open_all(nc, container, store)
    assert not differences(ref, via_slab), differences(ref, via_slab)
    assert not differences(ref, via_zarr), differences(ref, via_zarr)
    # The integer variables stay integers, their zeros zeros.
    assert via_zarr["v_i2"].dtype == np.int16 and via_zarr["v_i2"].values[0, 0] == 0
    assert via_zarr["marked"].dtype == np.float64 and np.isnan(via_zarr["marked"].values[5, 2])
    # What the store says: fill_value is the marker or null, never the
    # storage fill; consolidated metadata holds every document.
    meta = json.loads((store / "v_i2" / ".zarray").read_text())
    assert meta["fill_value"] is None
    assert json.loads((store / "marked" / ".zarray").read_text())["fill_value"] == -9999
    assert "_FillValue" not in json.loads((store / "marked" / ".zattrs").read_text())
    consolidated = json.loads((store / ".zmetadata").read_text())
    assert consolidated["zarr_consolidated_format"] == 1
    assert "v_i2/.zarray" in consolidated["metadata"] and ".zgroup" in consolidated["metadata"]
    xr.open_zarr(store, consolidated=True).load()


def test_record_variables_of_unequal_length(tmp_path):
    warnings.simplefilter("ignore")
    nc = tmp_path / "records.nc"
    records_file(nc)
    container, store = roundtrip(tmp_path, nc)
    ref, via_slab, via_zarr = open_all(nc, container, store)
    assert ref.sizes["time"] == 4
    assert not differences(ref, via_slab), differences(ref, via_slab)
    assert not differences(ref, via_zarr), differences(ref, via_zarr)
    # Past b's two records: netCDF's default int fill, as netCDF reads it.
    assert list(via_slab["b"].values) == [7, 0, -2147483647, -2147483647]
    # Lazily, a slice that lies wholly past the end reads as fill too.
    lazy = xr.open_dataset(container, engine="slabfs")
    assert list(lazy["b"][3:].values) == [-2147483647]
    assert np.isnan(lazy["c"].isel(time=2, x=1).values)  # fill_value 0 is c's marker
    lazy.close()


def test_short_record_variables_read_their_marker_past_their_end(tmp_path):
    """A growable dataset shorter than another that shares its named
    dimension reads past its end as its _FillValue, where it has one that
    is not its storage fill value (xarray masks it), in engine=slabfs and
    in the Zarr export alike; without one, as its fill value."""
    container = tmp_path / "r.slab"
    slab("create", container)
    rows = np.arange(16, dtype="<i4").reshape(2, 8)
    npy = tmp_path / "p.npy"
    np.save(npy, rows)
    for name in ("marked", "plain"):
        slab("mkdset", container, f"/{name}", "--dtype", "i4", "--shape", "2,8", "--maxshape", "unlimited,8",
             "--chunks", "2,8")
        slab("import", container, f"/{name}", npy)
        slab("attr", container, f"/{name}", "_ARRAY_DIMENSIONS", '["t","x"]')
    slab("attr", container, "/marked", "_FillValue", "-5", "--dtype", "i4")
    slab("mkdset", container, "/long", "--dtype", "i2", "--shape", "5,8")
    slab("attr", container, "/long", "_ARRAY_DIMENSIONS", '["t","x"]')
    store = tmp_path / "r.zarr"
    slab("export", "-q", container, store)
    for ds in (xr.open_dataset(container, engine="slabfs").load(), xr.open_zarr(store).load()):
        assert np.isnan(ds["marked"].values[2:]).all()
        np.testing.assert_array_equal(ds["marked"].values[:2], rows)
        assert (ds["plain"].values[2:] == 0).all()
    raw = xr.open_dataset(container, engine="slabfs", mask_and_scale=False).load()
    assert (raw["marked"].values[2:] == -5).all()


def test_an_xarray_zarr_store_keeps_its_fill_value_as_the_marker(tmp_path):
    warnings.simplefilter("ignore")
    src = xr.Dataset({"v": (("t",), np.array([1.5, np.nan, 3.0, -0.999]))})
    src["v"].encoding["_FillValue"] = -0.999
    store = tmp_path / "src.zarr"
    src.to_zarr(store, mode="w")
    container = tmp_path / "c.slab"
    slab("create", container)
    slab("import", "-q", container, store)
    ref = xr.open_zarr(store).load()
    got = xr.open_dataset(container, engine="slabfs").load()
    assert not differences(ref, got), differences(ref, got)
    assert np.isnan(got["v"].values[1]) and np.isnan(got["v"].values[3])
    with slabfs.File(str(container), "r") as f:
        assert float(f["v"].attrs["_FillValue"]) == -0.999


def test_an_unsupported_v3_array_is_skipped_not_fatal(tmp_path):
    store = tmp_path / "v3.zarr"
    (store / "names").mkdir(parents=True)
    (store / "data").mkdir()
    (store / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    # What zarr-python 3 writes for every string array.
    (store / "names" / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "string",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "", "codecs": [{"name": "vlen-utf8", "configuration": {}}, {"name": "zstd", "configuration": {"level": 0}}],
        "attributes": {}}))
    (store / "data" / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {"units": "m"}}))
    (store / "data" / "c").mkdir()
    (store / "data" / "c" / "0").write_bytes(np.array([1, 2, 3, 4], "<i2").tobytes())
    container = tmp_path / "c.slab"
    slab("create", container)
    cp = slab("import", container, store)
    assert "skipped" in cp.stdout and "names" in cp.stdout, cp.stdout
    with slabfs.File(str(container), "r") as f:
        assert list(f["data"][:]) == [1, 2, 3, 4]
        assert "names" not in f
    strict = tmp_path / "strict.slab"
    slab("create", strict)
    cp = slab("import", "--strict", strict, store, check=False)
    assert cp.returncode == 1 and "names" in cp.stderr, cp


# ----------------------------------------------------------- item 4: smaller

def test_netcdf_non_coordinate_variable_keeps_its_name(tmp_path):
    warnings.simplefilter("ignore")
    nc = tmp_path / "nc4.nc"
    with netCDF4.Dataset(nc, "w") as f:
        f.createDimension("x", 3)
        f.createDimension("y", 2)
        f.createVariable("x", "f4", ("y",))[:] = [1, 2]      # named like x, spans y
        f.createVariable("data", "i4", ("x",))[:] = [5, 6, 7]
    container = tmp_path / "c.slab"
    slab("create", container)
    slab("import", "-q", container, nc)
    with slabfs.File(str(container), "r") as f:
        assert sorted(f) == ["data", "x"]  # not _nc4_non_coord_x
    ref = xr.open_dataset(nc, engine="netcdf4").load()
    assert not differences(ref, xr.open_dataset(container, engine="slabfs").load())
    back = tmp_path / "back.nc"
    slab("export", "-q", container, "/", back)
    assert not differences(ref, xr.open_dataset(back, engine="netcdf4").load())


def test_compression_and_membership_corners_match_h5py(tmp_path):
    import h5py
    with h5py.File(tmp_path / "a.h5", "w") as h, slabfs.File(str(tmp_path / "a.slab"), "w") as s:
        for f in (h, s):
            with pytest.raises(TypeError):
                f.create_dataset("x", (4,), "i4", compression=1, compression_opts=7)
            assert ("" in f) is False
            f.create_dataset("y", (4,), "i4", compression=5)
            assert f["y"].compression == "gzip" and f["y"].compression_opts == 5


def test_info_counts_the_elements_a_dense_dataset_stores(tmp_path):
    with slabfs.File(str(tmp_path / "a.slab"), "w") as f:
        d = f.create_dataset("d", (100,), "u1", chunks=(10,))
        d[5:25] = 1  # chunks 0, 1 and 2 stored
        assert d.info()["defined_elements"] == 30 == d.count_defined()
    info = json.loads(slab("info", "--json", tmp_path / "a.slab", "/d").stdout)
    assert info["defined_elements"] == 30


def test_other_formats_are_named(tmp_path):
    container = tmp_path / "c.slab"
    slab("create", container)
    h4 = tmp_path / "old.hdf"
    h4.write_bytes(b"\x0e\x03\x13\x01" + bytes(100))
    cp = slab("import", container, h4, check=False)
    assert cp.returncode == 1 and "an HDF4 file" in cp.stderr, cp.stderr
    c3 = tmp_path / "old.nc"
    c3.write_bytes(b"CDF\x01" + bytes(100))
    cp = slab("import", container, c3, check=False)
    assert cp.returncode == 1 and "netCDF-3 classic" in cp.stderr, cp.stderr
    pre = tmp_path / "pre.zarr"
    (pre / "meta" / "root").mkdir(parents=True)
    (pre / "zarr.json").write_text(json.dumps({
        "zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0",
        "metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0",
        "metadata_key_suffix": ".json", "extensions": []}))
    cp = slab("import", container, pre, check=False)
    assert cp.returncode == 1 and "before the 3.0 specification" in cp.stderr, cp.stderr


def test_a_group_dimension_that_shadows_its_parents_keeps_its_name(tmp_path):
    warnings.simplefilter("ignore")
    nc = tmp_path / "groups.nc"
    with netCDF4.Dataset(nc, "w") as f:
        f.createDimension("x", 3)
        f.createVariable("x", "i4", ("x",))[:] = [1, 2, 3]
        sub = f.createGroup("sub")
        sub.createDimension("x", 5)  # same name, another length: shadows the root's
        sub.createVariable("a", "f4", ("x",))[:] = np.arange(5)
        inh = f.createGroup("inh")
        inh.createVariable("c", "f4", ("x",))[:] = np.arange(3)  # the root's x
    container, back = tmp_path / "c.slab", tmp_path / "back.nc"
    slab("create", container)
    slab("import", "-q", container, nc)
    slab("export", "-q", container, "/", back)
    for group in ("sub", "inh"):
        ref = xr.open_dataset(nc, group=group, engine="netcdf4").load()
        assert not differences(ref, xr.open_dataset(container, engine="slabfs", group="/" + group).load())
        assert not differences(ref, xr.open_dataset(back, group=group, engine="netcdf4").load()), group


def test_astype_reads_converted_as_h5py(tmp_path):
    import h5py
    with h5py.File(tmp_path / "a.h5", "w") as h, slabfs.File(str(tmp_path / "a.slab"), "w") as s:
        for f in (h, s):
            f.create_dataset("x", data=np.arange(10, dtype="i4"))
        for key in (np.s_[2:4], np.s_[...], np.s_[3], ()):
            want, got = h["x"].astype("f8")[key], s["x"].astype("f8")[key]
            assert np.asarray(got).dtype == np.asarray(want).dtype == np.float64
            np.testing.assert_array_equal(got, want)
        assert len(s["x"].astype("i2")) == len(h["x"].astype("i2")) == 10
        np.testing.assert_array_equal(np.asarray(s["x"].astype("u1")), np.asarray(h["x"].astype("u1")))
        with pytest.raises(TypeError):
            s["x"].astype("S4")
