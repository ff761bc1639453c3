"""slabfs.File(path, 'r') of HDF5 and netCDF-4 files, read in place through
the HDF5 store: every dataset's values against h5py's, attributes, the
listing, what is skipped, scalars, slicing, pickling, xarray, and bad
input (not HDF5, truncated, a directory, write modes and changes refused).

The files are made in the test with h5py and netCDF4, by the HDF5 store's
fixture maker (tests/stores/hdf5/make_fixtures.py)."""
import errno
import pickle

import numpy as np
import pytest
from store_fixtures import make_store_fixtures

import slabfs
from slabfs import _slabfs

h5py = pytest.importorskip("h5py")

pytestmark = pytest.mark.skipif(not _slabfs.has_hdf5_store(), reason="the module was built without the HDF5 store")


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    d = tmp_path_factory.mktemp("hdf5_files")
    return d, make_store_fixtures("hdf5", d)


def h5_names(g, prefix=""):
    """Every object h5py shows under a group, as paths."""
    out = []
    for k, v in g.items():
        out.append(prefix + k)
        if isinstance(v, h5py.Group):
            out += h5_names(v, prefix + k + "/")
    return out


def test_every_dataset_reads_as_h5py_reads_it(fx):
    d, lines = fx
    for ln in lines:
        if ln[0] != "read":
            continue
        fname, path = ln[1], ln[2]
        source = path if fname != "netcdf.nc" or path != "/x" else "/_nc4_non_coord_x"
        with slabfs.File(d / fname, "r") as f, h5py.File(d / fname, "r") as h:
            ds, hd = f[path], h[source]
            assert ds.shape == hd.shape, (fname, path)
            assert ds.dtype == hd.dtype.newbyteorder("<") or ds.dtype == hd.dtype, (fname, path)
            np.testing.assert_array_equal(ds[()], hd[()], err_msg=f"{fname}{path}")
            if ds.ndim >= 1 and ds.size:
                key = tuple(slice(1, None, 2) for _ in range(ds.ndim))
                np.testing.assert_array_equal(ds[key], hd[key], err_msg=f"{fname}{path}")
                np.testing.assert_array_equal(ds[..., -1], hd[..., -1], err_msg=f"{fname}{path}")
            if ds.chunks is not None and hd.chunks is not None:
                assert ds.chunks == hd.chunks
            if hd.fillvalue is not None and ds.ndim:
                assert ds.fillvalue == hd.fillvalue


def test_listing_attributes_and_skipped(fx):
    d, lines = fx
    with slabfs.File(d / "basic.h5") as f, h5py.File(d / "basic.h5", "r") as h:
        assert f.format == "hdf5" and f.mode == "r"
        skipped = {p for p, _ in f.skipped()}
        expect_skipped = {ln[3] for ln in lines if ln[0] == "skip" and ln[1] == "basic.h5"}
        assert expect_skipped <= skipped
        assert all(reason for _, reason in f.skipped())
        names = []
        f.visit(names.append)
        assert sorted(names) == sorted(n for n in h5_names(h) if "/" + n not in skipped)
        assert list(f) == sorted(f)
        assert f.attrs["title"] == "store fixtures"
        np.testing.assert_array_equal(f.attrs["numbers"], [1, 2, 3])
        assert f["deflate_shuffle"].attrs["units"] == "K"
        assert set(f["deflate_shuffle"].attrs) == set(h["deflate_shuffle"].attrs)
        assert "strings" not in f and "g/sub/r1" in f
        assert isinstance(f["g"], slabfs.Group) and isinstance(f["g/r3"], slabfs.Dataset)
        with pytest.raises(KeyError):
            f["strings"]
        assert f["deflate_shuffle"].compression == "gzip" and f["deflate_shuffle"].shuffle
        assert f["fletcher_only"].fletcher32


def test_scalars_and_defined(fx):
    d, _ = fx
    with slabfs.File(d / "basic.h5") as f:
        s = f["scalar"]
        assert s.shape == () and s[()] == 2.5
        assert s[...].shape == ()
        sp = f["sparse"]
        assert sp.defined() == [(slice(0, 10), slice(0, 10)), (slice(20, 30), slice(30, 40))]
        assert sp.count_defined() == 200
        assert sp.info()["defined_elements"] == 200


def test_netcdf(fx):
    d, _ = fx
    with slabfs.File(d / "netcdf.nc", "r") as f:
        assert set(f) == {"lat", "temp", "bounds", "x"}
        t = f["temp"]
        assert t.attrs["units"] == "K"
        assert t.fillvalue == np.float32(-999.0)
        np.testing.assert_array_equal(t[0:3], np.arange(3 * 6 * 8, dtype="f4").reshape(3, 6, 8))


def test_changes_are_refused(fx):
    d, _ = fx
    p = d / "basic.h5"
    before = p.read_bytes()
    with slabfs.File(p) as f:
        for fn in (lambda: f.create_group("new"),
                   lambda: f.create_dataset("new", shape=(3,), dtype="i4"),
                   lambda: f.attrs.__setitem__("x", 1),
                   lambda: f.attrs.__delitem__("title"),
                   lambda: f.__delitem__("contiguous"),
                   lambda: f.move("contiguous", "moved"),
                   lambda: f["contiguous"].__setitem__((0, 0), 1.0),
                   lambda: f["resizable"].resize((20, 8)),
                   lambda: f["sparse"].erase(np.s_[0:2, 0:2])):
            with pytest.raises(OSError) as e:
                fn()
            assert e.value.errno == errno.EROFS, e.value
        with pytest.raises(OSError) as e:
            f.refresh()
        assert e.value.errno == errno.ENOTSUP
    for mode in ("r+", "a", "w", "w-", "x"):
        with pytest.raises(OSError) as e:
            slabfs.File(p, mode)
        assert e.value.errno in (errno.EROFS, errno.EEXIST), (mode, e.value)
        assert "HDF5" in str(e.value) or mode in ("w-", "x")
    assert p.read_bytes() == before


def test_bad_input(fx, tmp_path):
    d, _ = fx
    with pytest.raises(OSError) as e:
        slabfs.File(d / "not_hdf5.h5", "r")
    assert e.value.errno == errno.ENOTSUP  # neither HDF5 nor a container
    with pytest.raises(OSError) as e:
        slabfs.File(d / "truncated.h5", "r")
    assert e.value.errno == errno.EIO and e.value.filename == str(d / "truncated.h5")
    with pytest.raises(IsADirectoryError):
        slabfs.File(tmp_path, "r")
    with pytest.raises(FileNotFoundError):
        slabfs.File(tmp_path / "missing.h5", "r")
    for name in ("bad_inflate.h5", "bad_fletcher.h5"):
        with slabfs.File(d / name) as f:
            ds = f["d"]
            np.testing.assert_array_equal(ds[0:16, 0:16], np.arange(4096, dtype="i4").reshape(64, 64)[0:16, 0:16])
            with pytest.raises(OSError) as e:
                ds[()]
            assert e.value.errno == errno.EIO and "chunk" in str(e.value), e.value


def test_closed_file_and_handles(fx):
    d, _ = fx
    f = slabfs.File(d / "basic.h5")
    ds = f["contiguous"]
    f.close()
    assert not f and not ds
    with pytest.raises(ValueError):
        ds[0]
    f.close()


def test_copy_into_a_container(fx, tmp_path):
    d, _ = fx
    with slabfs.File(d / "basic.h5") as src, slabfs.File(tmp_path / "c.slab", "w") as dst:
        src.copy("g", dst)
        src.copy(src["deflate_shuffle"], dst, "ds")
        src.copy("scalar", dst, "sc")
        assert sorted(dst["g"]) == ["r3", "r4", "sub"]
        np.testing.assert_array_equal(dst["g/sub/r1"][()], src["g/sub/r1"][()])
        assert dst["ds"].attrs["units"] == "K" and dst["ds"].filters == "shuffle,deflate=4"
        assert dst["sc"].shape == () and dst["sc"][()] == 2.5


def test_datasets_pickle_and_reopen(fx):
    d, _ = fx
    with slabfs.File(d / "basic.h5") as f:
        ds = f["g/r3"]
        back = pickle.loads(pickle.dumps(ds))
        np.testing.assert_array_equal(back[()], ds[()])


def test_xarray_engine_opens_a_netcdf_file(fx):
    xr = pytest.importorskip("xarray")
    d, _ = fx
    with xr.open_dataset(d / "netcdf.nc", engine="slabfs") as x:
        assert x["temp"].dims == ("time", "lat", "lon")
        assert x["temp"].shape == (3, 6, 8)
        with h5py.File(d / "netcdf.nc", "r") as h:
            np.testing.assert_array_equal(x["lat"].values, h["lat"][()])
