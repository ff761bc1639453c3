"""slabfs.File(path, 'r') of Zarr v2 and v3 directory stores, read in place
through the Zarr store: every array's values against what zarr-python (or
numpy, for the hand-written v3 arrays) holds, attributes, the listing, what
is skipped, chunks never written, a damaged chunk, and bad input (write
modes and changes refused, the store left as it was).

The stores are made in the test by the Zarr store's fixture maker
(tests/stores/zarr/make_fixtures.py, zarr-python 2.13 from Debian)."""
import errno
import hashlib
import os
import pathlib

import numpy as np
import pytest
from store_fixtures import make_store_fixtures

import slabfs
from slabfs import _slabfs


pytestmark = pytest.mark.skipif(not _slabfs.has_zarr_store(), reason="the module was built without the Zarr store")


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    d = tmp_path_factory.mktemp("zarr_files")
    return d, make_store_fixtures("zarr", d)


def tree_digest(root):
    h = hashlib.sha256()
    for dirpath, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        h.update(dirpath.encode())
        for name in sorted(files):
            h.update(name.encode())
            h.update(pathlib.Path(dirpath, name).read_bytes())
    return h.hexdigest()


def test_every_array_reads_as_zarr_reads_it(fx):
    d, lines = fx
    checked = 0
    for ln in lines:
        if ln[0] != "read" or ln[1] == "root.zarr":
            continue
        store, path, dtype, shape, binfile = ln[1], ln[2], ln[3], ln[4], ln[5]
        expect = np.fromfile(d / binfile, dtype="<" + dtype)
        with slabfs.File(d / store, "r") as f:
            assert f.format == "zarr"
            ds = f[path]
            want_shape = tuple(int(x) for x in shape.split(","))
            assert ds.shape == (want_shape if want_shape != (1,) or path != "/more/scalar" else ()), path
            got = np.asarray(ds[()]).astype("<" + dtype).reshape(-1)
            np.testing.assert_array_equal(got, expect, err_msg=f"{store}{path}")
            if ds.ndim == 2 and ds.shape[0] > 3 and ds.shape[1] > 3:
                full = expect.reshape(ds.shape)
                np.testing.assert_array_equal(ds[1:4, 2:], full[1:4, 2:], err_msg=f"{store}{path} slice")
        checked += 1
    assert checked > 80


def test_listing_attributes_and_skipped(fx):
    d, lines = fx
    with slabfs.File(d / "v2.zarr") as f:
        assert f.attrs["title"] == "zarr fixtures"
        assert f.attrs["version"] == 3
        np.testing.assert_array_equal(f.attrs["flags"], [1, 2, 3])
        assert f["dtypes"].attrs["what"] == "every dtype under every codec"
        assert f["more/xr"].attrs["units"] == "K"
        assert f["more/xr"].attrs["_FillValue"] == -999
        assert "i4_zlib" in f["dtypes"] and "skip" in f
        skipped = {p for p, _ in f.skipped()}
        want = {ln[2] for ln in lines if ln[0] == "skip" and ln[1] == "v2.zarr"}
        assert want <= skipped, (want, skipped)
        assert all(reason for _, reason in f.skipped())
        assert sorted(f["skip"]) == []
        assert sorted(f["a/b/c"]) == ["d"]
    with slabfs.File(d / "v3.zarr") as f:
        assert f.format == "zarr" and f.attrs["title"] == "v3 fixtures"


def test_chunks_never_written_are_the_fill_and_not_defined(fx):
    d, _ = fx
    with slabfs.File(d / "v2.zarr") as f:
        ds = f["more/sparse_neg"]
        assert ds[0] == -7 and ds[25] == 3
        assert ds.fillvalue == -7
        nan = f["more/sparse_nan"]
        assert nan[0, 0] == 1.5 and np.isnan(nan[20, 20])


def test_changes_are_refused(fx):
    d, _ = fx
    p = d / "v2.zarr"
    before = tree_digest(p)
    with slabfs.File(p) as f:
        for fn in (lambda: f.create_group("new"),
                   lambda: f.create_dataset("new", shape=(3,), dtype="i4"),
                   lambda: f.attrs.__setitem__("x", 1),
                   lambda: f.attrs.__delitem__("title"),
                   lambda: f.__delitem__("more"),
                   lambda: f["more/one_chunk"].__setitem__((0, 0), 1),
                   lambda: f["more/big_i4"].resize((60,))):
            with pytest.raises(OSError) as e:
                fn()
            assert e.value.errno == errno.EROFS, e.value
            assert "Zarr" in str(e.value)
    for mode in ("r+", "a", "w"):
        with pytest.raises(OSError) as e:
            slabfs.File(p, mode)
        assert e.value.errno == errno.EROFS and "Zarr" in str(e.value), (mode, e.value)
    assert tree_digest(p) == before


def test_damaged_chunk_is_an_error_and_the_rest_reads(fx):
    d, _ = fx
    data = np.arange(4096, dtype="i4").reshape(64, 64)
    with slabfs.File(d / "damaged.zarr") as f:
        np.testing.assert_array_equal(f["good"][()], data)
        ds = f["zlib"]
        np.testing.assert_array_equal(ds[0:16, 0:16], data[0:16, 0:16])
        with pytest.raises(OSError) as e:
            ds[()]
        assert e.value.errno == errno.EIO, e.value


def test_a_directory_that_is_no_store_is_refused(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(IsADirectoryError):
        slabfs.File(tmp_path / "plain", "r")
    bad = tmp_path / "bad.zarr"
    bad.mkdir()
    (bad / ".zarray").write_text("{not json")
    with pytest.raises(OSError) as e:
        slabfs.File(bad, "r")
    assert e.value.errno in (errno.EIO, errno.EINVAL, errno.ENOTSUP), e.value


def test_copy_into_a_container(fx, tmp_path):
    d, _ = fx
    with slabfs.File(d / "v2.zarr") as src, slabfs.File(tmp_path / "c.slab", "w") as dst:
        src.copy("more", dst)
        np.testing.assert_array_equal(dst["more/nested"][()], src["more/nested"][()])
        assert dst["more/xr"].attrs["units"] == "K"
