"""What slabfs adds around h5py's scalar datasets, zero-length dimensions
and Group.copy (h5py's own behaviour is checked in test_h5py_parity.py):
how a scalar is stored and crosses `slab export`/`slab import`, and what a
copy keeps that h5py has no word for (sparseness, defined elements, index
kind, chunks never written)."""
import errno
import os
import pathlib
import subprocess

import h5py
import numpy as np
import pytest

import slabfs
import slabfs.group

SLAB = pathlib.Path(os.environ.get("SLABFS_BIN", pathlib.Path(slabfs.__file__).resolve().parents[2] / "bin")) / "slab"


def slab(*args):
    cp = subprocess.run([str(SLAB), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, (args, cp.stdout, cp.stderr)
    return cp


def test_a_scalar_is_one_marked_element_in_the_container(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("s", data=np.float32(2.5))
        ds.attrs["units"] = "K"
        info = ds.info()
        assert info["shape"] == (1,) and info["maxshape"] == (1,) and info["chunks"] == (1,)
        assert sorted(f._c.attr_names(ds.id)) == ["_SLAB_SCALAR", "units"]
        assert list(ds.attrs) == ["units"] and "_SLAB_SCALAR" not in ds.attrs
        with pytest.raises(KeyError):
            ds.attrs["_SLAB_SCALAR"]
        with pytest.raises(ValueError):
            ds.attrs["_SLAB_SCALAR"] = 0
        assert repr(ds).startswith('<slabfs Dataset "/s": shape ()')
    # The marker makes a fixed shape-(1) dataset a scalar (as `slab export`
    # reads it); a growable one stays 1-d.
    with slabfs.File(path, "a") as f:
        one = f.create_dataset("one", data=[1])
        assert one.shape == (1,)
        one.attrs["_SLAB_SCALAR"] = 1
        grows = f.create_dataset("grows", shape=(1,), maxshape=(None,), dtype="i4")
        grows.attrs["_SLAB_SCALAR"] = 1
        assert f["one"].shape == () and f["one"][()] == 1 and f["grows"].shape == (1,)
        assert f["s"].shape == () and f["s"][()] == np.float32(2.5)


def test_scalars_and_empty_datasets_cross_hdf5_both_ways(path, tmp_path):
    with slabfs.File(path, "w") as f:
        f.create_dataset("g/s", data=np.int16(-7)).attrs["units"] = "m"
        f.create_dataset("g/e", shape=(0, 3), dtype="f8")
    h5 = tmp_path / "out.h5"
    slab("export", "-q", path, h5)
    with h5py.File(h5, "r") as h:
        assert h["g/s"].shape == () and h["g/s"][()] == -7 and h["g/s"].dtype == np.int16
        assert h["g/s"].attrs["units"] in ("m", b"m") and list(h["g/s"].attrs) == ["units"]
        assert h["g/e"].shape == (0, 3)
    back = tmp_path / "back.slab"
    slab("create", back)
    slab("import", "-q", back, h5)
    with slabfs.File(back) as f:
        assert f["g/s"].shape == () and f["g/s"][()] == np.int16(-7) and dict(f["g/s"].attrs) == {"units": "m"}
        assert f["g/e"].shape == (0, 3) and f["g/e"][...].shape == (0, 3)


def test_copy_keeps_sparseness_defined_elements_and_unwritten_chunks(path, tmp_path):
    other = str(tmp_path / "other.slab")
    with slabfs.File(path, "w") as f, slabfs.File(other, "w") as g:
        sp = f.create_dataset("d/sparse", shape=(100, 100), dtype="u2", chunks=(10, 10), sparse=True,
                              fillvalue=9, index="btree")
        sp[5:8, 40:60] = 3
        dense = f.create_dataset("d/dense", shape=(1000,), dtype="f8", chunks=(100,), compression="gzip")
        dense[250:260] = 1.5
        f.copy("d", g)
        f.flush()
        g.flush()
        for name in ("d/sparse", "d/dense"):
            a, b = f[name], g[name]
            ia, ib = a.info(), b.info()
            for key in ("dtype", "shape", "maxshape", "chunks", "fill", "filters", "sparse", "index",
                        "allocated_chunks"):
                assert ia[key] == ib[key], (name, key)
            assert a.defined() == b.defined()
            np.testing.assert_array_equal(a[...], b[...])
        assert g["d/sparse"].count_defined() == 60
        assert g["d/dense"].info()["allocated_chunks"] == 1


def test_copy_moves_large_data_a_block_at_a_time(path, monkeypatch):
    monkeypatch.setattr(slabfs.group, "_COPY_BLOCK_BYTES", 4096)
    data = np.arange(300 * 70, dtype="i4").reshape(300, 70)
    with slabfs.File(path, "w") as f:
        f.create_dataset("a", data=data, chunks=(64, 32))
        f.copy("a", "b")
        np.testing.assert_array_equal(f["b"][...], data)


def test_copy_into_a_read_only_file_is_erofs_and_changes_nothing(path, tmp_path):
    src = str(tmp_path / "src.slab")
    with slabfs.File(src, "w") as f:
        f.create_group("g")["x"] = [1, 2]
    with slabfs.File(path, "w") as f:
        pass
    with slabfs.File(src) as s, slabfs.File(path) as ro:
        with pytest.raises(OSError) as e:
            ro.copy(s["g"], ro)
        assert e.value.errno == errno.EROFS
        with pytest.raises(OSError):
            s.copy("g", "h")
        assert list(ro) == [] and list(s) == ["g"]


def test_copy_errors_are_both_slabfs_and_h5py_classes(path):
    with slabfs.File(path, "w") as f:
        f.create_group("a")
        with pytest.raises(KeyError) as e:
            f.copy("missing", "b")
        assert isinstance(e.value, RuntimeError)
        with pytest.raises(ValueError) as e:
            f.copy("a", "a")
        assert isinstance(e.value, RuntimeError)
        with pytest.raises(TypeError):
            f.copy(3, "b")
        with pytest.raises(TypeError):
            f.copy("a", 3)
        ds = f.create_dataset("d", (2,))
        with pytest.raises(TypeError) as e:
            ds[...] = [1, 2, 3]
        assert isinstance(e.value, ValueError)   # as numpy says
