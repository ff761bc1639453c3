"""slab import copies chunks that are encoded as the container stores them
(issue 22, item 6): HDF5 chunks deflated after a shuffle or not, Zarr v2
zlib chunks. Whole chunks are stored as they are after a decode that checks
them; edge chunks, big-endian sources, fletcher32, incompressible chunks
that libhdf5 stored larger than raw, and --recompress take the decoding
path. Either way the data read back equals the source's, and a damaged
source chunk is an error, never stored."""

import h5py
import numpy as np
import pytest
import zarr
from numcodecs import Zlib

from conftest import info, slab
from mounting import export


def values(shape, seed):
    return np.round(np.random.default_rng(seed).normal(size=shape), 2).astype("<f4")


@pytest.fixture
def source(tmp_path):
    p = tmp_path / "src.h5"
    a = values((300, 250), 1)
    with h5py.File(p, "w") as f:
        f.create_dataset("sd", data=a, chunks=(50, 50), shuffle=True, compression="gzip", compression_opts=4)
        f.create_dataset("whole", data=a[:256, :200], chunks=(64, 50), shuffle=True, compression="gzip")
        f.create_dataset("d", data=(a * 100).astype("<i2"), chunks=(64, 64), compression="gzip",
                         compression_opts=1)
        f.create_dataset("be", data=a.astype(">f8"), chunks=(64, 64), shuffle=True, compression="gzip")
        f.create_dataset("f32", data=a, chunks=(64, 64), compression="gzip", fletcher32=True)
        f.create_dataset("rand", data=np.random.default_rng(2).integers(0, 255, (256, 256), dtype="u1"),
                         chunks=(64, 64), compression="gzip")
        s = f.create_dataset("sparse", (300, 250), "f4", chunks=(64, 64), shuffle=True, compression="gzip")
        s[0:64, 0:64] = 1
        s[200:260, 100:128] = 2
    return p


def read_all(path):
    out = {}
    with h5py.File(path) as f:
        for name in f:
            out[name] = f[name][...]
    return out


@pytest.mark.parametrize("recompress", [False, True])
def test_imported_data_equals_the_source(tmp_path, source, recompress):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("import", "-q", *(["--recompress"] if recompress else []), c, source)
    for name, a in read_all(source).items():
        got = np.frombuffer(export(c, "/" + name), dtype=a.dtype.newbyteorder("<")).reshape(a.shape)
        np.testing.assert_array_equal(got, a, err_msg=name)
    assert slab("fsck", "-q", c, check=False).returncode == 0


def test_whole_chunks_are_stored_as_the_source_stored_them(tmp_path, source):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("import", "-q", c, source)
    with h5py.File(source) as f:
        d = f["whole"]
        n = d.id.get_num_chunks()
        src_bytes = sum(d.id.get_chunk_info(i).size for i in range(n))
    # Every chunk of "whole" is whole: the container holds the same bytes.
    assert info(c, "/whole")["stored_bytes"] == src_bytes
    assert info(c, "/whole")["filters"] == "shuffle,deflate=4"
    # Recompressed at level 4 by libdeflate, the size differs.
    r = tmp_path / "r.slab"
    slab("create", r)
    slab("import", "-q", "--recompress", r, source)
    assert info(r, "/whole")["stored_bytes"] != src_bytes


def test_a_damaged_source_chunk_is_an_error(tmp_path):
    p = tmp_path / "bad.h5"
    a = values((128, 128), 3)
    with h5py.File(p, "w") as f:
        d = f.create_dataset("x", data=a, chunks=(64, 64), shuffle=True, compression="gzip")
        good = d.id.read_direct_chunk((0, 0))[1]
        d.id.write_direct_chunk((64, 64), good[: len(good) // 2], 0)  # a truncated stream
    c = tmp_path / "c.slab"
    slab("create", c)
    cp = slab("import", c, p, check=False)
    assert cp.returncode == 1, cp
    assert "chunk" in cp.stderr and cp.stderr.count("\n") == 1, cp.stderr
    assert "/x" not in slab("ls", c, "/").stdout


def test_zarr_zlib_chunks_are_copied(tmp_path):
    store = tmp_path / "z.zarr"
    a = values((300, 200), 4)
    root = zarr.open_group(str(store), mode="w")
    root.create_dataset("a", data=a, chunks=(64, 50), dtype="<f4", compressor=Zlib(level=3))
    # Every chunk whole: 256 x 200 of it.
    root.create_dataset("w", data=a[:256], chunks=(64, 50), dtype="<f4", compressor=Zlib(level=3))
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("import", "-q", c, store)
    for name, want in (("a", a), ("w", a[:256])):
        got = np.frombuffer(export(c, "/" + name), dtype="<f4").reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert info(c, "/w")["filters"] == "deflate=3"
    src_bytes = sum(f.stat().st_size for f in (store / "w").iterdir() if not f.name.startswith("."))
    assert info(c, "/w")["stored_bytes"] == src_bytes, "the zlib streams are stored as they are"
    r = tmp_path / "r.slab"
    slab("create", r)
    slab("import", "-q", "--recompress", r, store)
    np.testing.assert_array_equal(np.frombuffer(export(r, "/w"), dtype="<f4").reshape(256, 200), a[:256])
