"""The xarray backend: discovery through the entry point, groups as
Datasets, dimension names, laziness, Dask chunks, CF decoding, errors."""
import importlib.metadata
import json
import os
import pathlib
import pickle

import numpy as np
import pytest
import xarray as xr

import slabfs
from slabfs.xarray_backend import SlabfsBackendEntrypoint

TEMP = np.arange(4 * 3 * 5, dtype="<f4").reshape(4, 3, 5)


def make(path):
    with slabfs.File(path, "w") as f:
        f.attrs["title"] = "root"
        g = f.create_group("climate")
        g.attrs["title"] = "demo"
        g.attrs["version"] = 3
        t = g.create_dataset("temp", data=TEMP, chunks=(1, 3, 5))
        t.attrs["_ARRAY_DIMENSIONS"] = json.dumps(["time", "lat", "lon"])
        t.attrs["units"] = "K"
        lat = g.create_dataset("lat", data=[-45.0, 0.0, 45.0])
        lat.attrs["_ARRAY_DIMENSIONS"] = '["lat"]'
        time = g.create_dataset("time", data=[0, 1, 2, 3])
        time.attrs["_ARRAY_DIMENSIONS"] = '["time"]'
        time.attrs["units"] = "days since 2000-01-01"
        g.create_dataset("plain7", data=np.arange(7))
        g.create_dataset("plain6", data=np.arange(6))
        m = g.create_dataset("masked", data=np.array([1.0, -999.0, 3.0]))
        m.attrs["_FillValue"] = -999.0
        g.create_group("sub").create_dataset("hidden", data=[1])


def test_entry_point_is_registered():
    eps = [ep for ep in importlib.metadata.entry_points(group="xarray.backends") if ep.name == "slabfs"]
    assert len(eps) == 1 and eps[0].load() is SlabfsBackendEntrypoint
    assert "slabfs" in xr.backends.list_engines()


@pytest.mark.parametrize("engine", ["slabfs", SlabfsBackendEntrypoint, None])
def test_open_a_group(path, engine):
    make(path)
    with xr.open_dataset(path, engine=engine, group="climate") as ds:
        assert set(ds.data_vars) == {"temp", "plain7", "plain6", "masked"}
        assert set(ds.coords) == {"lat", "time"}
        assert ds.temp.dims == ("time", "lat", "lon") and ds.temp.attrs == {"units": "K"}
        assert ds.masked.dims == ("dim_0",)   # unnamed: dim_i, in name order; dim_i_N for another length
        assert ds.plain6.dims == ("dim_0_6",) and ds.plain7.dims == ("dim_0_7",)
        assert ds.attrs == {"title": "demo", "version": 3}
        assert ds.time.dtype.kind == "M" and str(ds.time.values[1])[:10] == "2000-01-02"   # CF times
        assert np.isnan(ds.masked.values[1]) and ds.masked.values[2] == 3.0                # _FillValue
        np.testing.assert_array_equal(ds.temp.values, TEMP)
        np.testing.assert_array_equal(ds.temp.isel(time=2, lon=[4, 0, 2]).values, TEMP[2][:, [4, 0, 2]])
        np.testing.assert_array_equal(ds.temp.sel(lat=0.0).values, TEMP[:, 1])
        enc = ds.temp.encoding
        assert enc["preferred_chunks"] == {"time": 1, "lat": 3, "lon": 5} and enc["chunks"] == (1, 3, 5)
        assert enc["fillvalue"] == 0 and enc["slabfs_path"] == "/climate/temp"
    with xr.open_dataset(path, engine="slabfs") as ds:
        assert ds.attrs == {"title": "root"} and len(ds.data_vars) == 0
    with xr.open_dataset(path, engine="slabfs", group="/climate/sub", drop_variables="hidden") as ds:
        assert len(ds.data_vars) == 0


def test_scalars_imported_from_netcdf_are_0d(path, tmp_path):
    """A netCDF scalar variable (a CF grid mapping, say) imported by
    `slab import` is a shape-(1) dataset marked _SLAB_SCALAR: xarray sees a
    0-d variable with its attributes, as it does in the netCDF file."""
    import subprocess
    import netCDF4

    nc = tmp_path / "in.nc"
    with netCDF4.Dataset(nc, "w") as d:
        d.createDimension("x", 3)
        v = d.createVariable("v", "f4", ("x",))
        v[:] = [1, 2, 3]
        crs = d.createVariable("crs", "i4")
        crs.grid_mapping_name = "latitude_longitude"
        crs.assignValue(7)
    slab = pathlib.Path(os.environ.get("SLABFS_BIN", pathlib.Path(slabfs.__file__).resolve().parents[2] / "bin")) / "slab"
    subprocess.run([str(slab), "import", "-q", path, str(nc)], check=True)
    with xr.open_dataset(path, engine="slabfs") as ds, xr.open_dataset(nc) as ref:
        assert ds.crs.dims == () and int(ds.crs.values) == 7
        assert ds.crs.attrs == {"grid_mapping_name": "latitude_longitude"}
        assert ref.crs.dims == ()
        np.testing.assert_array_equal(ds.v.values, ref.v.values)
    # Only the marker makes a scalar: a plain shape-(1) dataset stays 1-d.
    with slabfs.File(path, "a") as f:
        f.create_dataset("one", data=[5])
    with xr.open_dataset(path, engine="slabfs") as ds:
        assert ds.one.dims == ("dim_0",)


def test_lazy_loading(path):
    make(path)
    with slabfs.File(path) as f:
        ds = xr.open_dataset(f, engine="slabfs", group="climate")
        before = f.cache_stats()["bytes_read"]
        ds.temp.attrs, ds.temp.shape
        assert f.cache_stats()["bytes_read"] == before          # nothing read yet
        ds.temp[1].values
        assert f.cache_stats()["bytes_read"] > before
        ds.close()
        assert not f.closed                                       # an open File is left open


def test_dask_chunks_and_pickling(path):
    make(path)
    with xr.open_dataset(path, engine="slabfs", group="climate", chunks={}) as ds:
        assert ds.temp.chunks == ((1, 1, 1, 1), (3,), (5,))
        assert float(ds.temp.mean().compute(scheduler="threads")) == pytest.approx(TEMP.mean())
        back = pickle.loads(pickle.dumps(ds))     # by path; its close is a no-op
        np.testing.assert_array_equal(back.temp.values, TEMP)
        back.close()
        np.testing.assert_array_equal(ds.temp[0].values, TEMP[0])
        closer = ds._close
    assert closer._file.closed                    # closing the Dataset closed its File


def test_bad_dimension_attributes(path):
    make(path)
    with slabfs.File(path, "r+") as f:
        f["climate/temp"].attrs["_ARRAY_DIMENSIONS"] = '["time", "lat"]'
    with pytest.raises(ValueError, match="_ARRAY_DIMENSIONS"):
        xr.open_dataset(path, engine="slabfs", group="climate")
    for bad in ("not json", '{"a": 1}', '["a", 2, "c"]', "[]"):
        with slabfs.File(path, "r+") as f:
            f["climate/temp"].attrs["_ARRAY_DIMENSIONS"] = bad
        with pytest.raises(ValueError, match="_ARRAY_DIMENSIONS"):
            xr.open_dataset(path, engine="slabfs", group="climate")
    with slabfs.File(path, "r+") as f:
        f["climate/temp"].attrs["_ARRAY_DIMENSIONS"] = '["time", "lat", "lat2"]'
        f["climate/lat"].attrs["_ARRAY_DIMENSIONS"] = '["time"]'      # time is 4 long, lat 3
    with pytest.raises(ValueError, match="dimension 'time'"):
        xr.open_dataset(path, engine="slabfs", group="climate")


def test_bad_groups(path):
    make(path)
    with pytest.raises(KeyError):
        xr.open_dataset(path, engine="slabfs", group="nope")
    with pytest.raises(ValueError, match="not a group"):
        xr.open_dataset(path, engine="slabfs", group="climate/temp")
    with pytest.raises(FileNotFoundError):
        xr.open_dataset(path + ".missing", engine="slabfs")


def test_guess_can_open(path, tmp_path):
    make(path)
    entry = SlabfsBackendEntrypoint()
    assert entry.guess_can_open(path)
    renamed = tmp_path / "data.bin"
    renamed.write_bytes(open(path, "rb").read())
    assert entry.guess_can_open(str(renamed))            # by the magic number
    other = tmp_path / "x.nc"
    other.write_bytes(b"CDF\x01")
    assert not entry.guess_can_open(str(other)) and not entry.guess_can_open(123)
