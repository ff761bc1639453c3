"""Dataset creation options, properties, resize, read_direct/write_direct,
dense erase/defined, and the documentation help() shows."""
import pydoc

import numpy as np
import pytest

import slabfs


def test_creation_options_and_properties(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("t", shape=(100, 50), dtype=">f4", chunks=(10, 25), maxshape=(None, 50),
                              compression="gzip", compression_opts=6, shuffle=True, fletcher32=True,
                              fillvalue=-1.5)
        assert ds.shape == (100, 50) and ds.dtype == np.dtype("<f4") and ds.chunks == (10, 25)
        assert ds.maxshape == (None, 50) and ds.fillvalue == -1.5 and ds.fillvalue.dtype == np.float32
        assert (ds.compression, ds.compression_opts, ds.shuffle, ds.fletcher32) == ("gzip", 6, True, True)
        assert ds.filters == "shuffle,deflate=6,checksum" and ds.scaleoffset is None
        assert (ds.size, ds.ndim, ds.nbytes, len(ds)) == (5000, 2, 20000, 100)
        assert not ds.sparse and ds.index_kind == "extensible"
        assert ds.stored_bytes == 0 and ds[0, 0] == -1.5
        ds[...] = 1.0
        f.flush()
        assert 0 < ds.stored_bytes < 20000        # compressed
        plain = f.create_dataset("p", shape=(10,), dtype="i8")
        assert plain.compression is None and not plain.shuffle and not plain.fletcher32
        assert plain.maxshape == (10,) and plain.fillvalue == 0
        assert f.create_dataset("c", shape=(10,), compression=3).compression_opts == 3   # h5py's shorthand
        assert f.create_dataset("dflt", shape=(10,), compression="gzip").compression_opts == 4
        auto = f.create_dataset("auto", shape=(1000, 1000), dtype="u1")
        assert len(auto.chunks) == 2 and all(c >= 1 for c in auto.chunks)
        sp = f.create_dataset("s", data=np.arange(6).reshape(2, 3), sparse=True, index="btree", maxshape=(None, None))
        assert sp.sparse and sp.index_kind == "btree" and sp.dtype == np.int64
        assert repr(sp) == '<slabfs Dataset "/s": shape (2, 3), type "<i8">'
        assert f.create_dataset("shaped", shape=(2, 3), data=np.arange(6)).shape == (2, 3)
        assert f.create_dataset("i", shape=7, dtype="u2").shape == (7,)


def test_resize_grows_with_fill_and_shrinking_forgets(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("x", shape=(4, 3), maxshape=(None, 5), dtype="i4", chunks=(2, 2), fillvalue=9)
        ds[...] = np.arange(12).reshape(4, 3)
        ds.resize((6, 5))
        want = np.full((6, 5), 9)
        want[:4, :3] = np.arange(12).reshape(4, 3)
        np.testing.assert_array_equal(ds[...], want)
        ds.resize(2, axis=0)
        ds.resize(4, axis=0)
        want[2:] = 9
        np.testing.assert_array_equal(ds[...], want[:4])
        x = f["x"]                                # other handles see the new shape
        assert x.shape == (4, 5)
    with slabfs.File(path) as f:
        np.testing.assert_array_equal(f["x"][...], want[:4])


def test_read_direct_and_write_direct(path):
    data = np.arange(200, dtype="<f8").reshape(10, 20)
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("x", data=data, chunks=(3, 7))
        dest = np.zeros((10, 20))
        ds.read_direct(dest)
        np.testing.assert_array_equal(dest, data)
        dest = np.zeros((6, 30))
        ds.read_direct(dest, np.s_[2:8:2, 1:11], np.s_[1:4, 20:30])   # engine memory space
        want = np.zeros((6, 30))
        want[1:4, 20:30] = data[2:8:2, 1:11]
        np.testing.assert_array_equal(dest, want)
        dest = np.zeros(10)
        ds.read_direct(dest, np.s_[3, 5:15])                            # other rank: via numpy
        np.testing.assert_array_equal(dest, data[3, 5:15])
        dest = np.zeros((10, 20), dtype="f4")                            # another dtype: converted, as h5py
        ds.read_direct(dest)
        np.testing.assert_array_equal(dest, data.astype("f4"))
        with pytest.raises(ValueError):
            ds.read_direct(np.zeros((20, 10)).T)
        with pytest.raises(TypeError):
            ds.read_direct([0] * 200)
        src = np.arange(100.0).reshape(10, 10) * -1
        ds.write_direct(src, np.s_[0:10:3, 2:6], np.s_[5:9, 10:14])
        data[5:9, 10:14] = src[0:10:3, 2:6]
        ds.write_direct(np.ones(5, dtype="i4"), dest_sel=np.s_[0, 0:5])  # converted, via numpy
        data[0, 0:5] = 1
        np.testing.assert_array_equal(ds[...], data)


def test_array_protocol_len_and_iteration(path):
    data = np.arange(12, dtype="u2").reshape(4, 3)
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("x", data=data)
        np.testing.assert_array_equal(np.asarray(ds), data)
        assert np.asarray(ds, dtype="f8").dtype == np.float64
        assert np.array(ds).sum() == data.sum()
        assert len(ds) == 4 and [r.tolist() for r in ds] == data.tolist()
        assert ds[()].shape == (4, 3) and ds[1, 2] == 5 and isinstance(ds[1, 2], np.uint16)


def test_dense_erase_and_defined(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("x", shape=(20, 20), dtype="i2", chunks=(5, 5), fillvalue=3)
        assert ds.defined() == [] and ds.count_defined() == 0
        ds[0:5, 0:10] = 1
        assert ds.defined() == [(slice(0, 5), slice(0, 10))]   # the stored chunks
        assert ds.defined(np.s_[2:4, 8:20]) == [(slice(2, 4), slice(8, 10))]
        ds.erase(np.s_[0:5, 0:5])          # a whole chunk: freed
        ds.erase(np.s_[0:2, 5:7])          # part of one: set to the fill value
        assert ds.defined() == [(slice(0, 5), slice(5, 10))]
        want = np.full((20, 20), 3)
        want[0:5, 5:10] = 1
        want[0:2, 5:7] = 3
        np.testing.assert_array_equal(ds[...], want)
        with pytest.raises(ValueError):
            ds.defined(np.s_[::2])
        with pytest.raises(TypeError):
            ds.erase(np.s_[[1, 2]])
        ds.clear()
        assert ds.count_defined() == 0 and (ds[...] == 3).all()


def test_help_documents_the_api():
    text = pydoc.render_doc(slabfs.File, renderer=pydoc.plaintext)
    for word in ("mode", "'w-'", "flush", "refresh", "create_dataset", "EBUSY", "visititems"):
        assert word in text, word
    text = pydoc.render_doc(slabfs.Dataset, renderer=pydoc.plaintext)
    for word in ("read_direct", "resize", "erase", "defined", "pickles", "GIL", "fillvalue"):
        assert word in text, word
