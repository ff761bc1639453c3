#!/usr/bin/env python3
"""Makes the HDF5 store's test files with h5py and netCDF4, and what h5py
reads from each dataset, for tests/stores/hdf5/hdf5_store_test.cc.

    make_fixtures.py OUTDIR

writes OUTDIR/*.h5, *.nc, one .bin per readable dataset (its elements as
h5py reads them, little-endian, C order) and OUTDIR/manifest.txt, one line
per check, fields separated by tabs:

    read  FILE  STORE_PATH  DTYPE  SHAPE  BINFILE  STORED_CHUNKS
    skip  FILE  SOURCE_PATH  STORE_PATH
    gone  FILE  STORE_PATH          (not shown, not skipped: not data)

Exits 77 when h5py, netCDF4 or numpy is missing.
"""
import os
import sys

try:
    import h5py
    import netCDF4
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"make_fixtures.py: {e}", file=sys.stderr)
    sys.exit(77)

OUT = sys.argv[1]
LINES = []
COUNTER = [0]


def le(arr):
    arr = np.asarray(arr)
    return arr.astype(arr.dtype.newbyteorder("<")).tobytes()


def expect_read(fname, ds, store_path=None):
    arr = ds[()]
    if ds.shape == ():
        arr = np.asarray(arr).reshape(1)
    COUNTER[0] += 1
    binname = f"expect{COUNTER[0]}.bin"
    with open(os.path.join(OUT, binname), "wb") as f:
        f.write(le(arr))
    compact = ds.id.get_create_plist().get_layout() == h5py.h5d.COMPACT  # its data is in the header
    stored = ds.id.get_num_chunks() if ds.chunks else (1 if (compact or ds.id.get_offset() is not None) and ds.size
                                                        else 0)
    shape = ",".join(str(n) for n in (ds.shape or (1,)))
    LINES.append(["read", fname, store_path or ds.name, arr.dtype.newbyteorder("<").str[1:], shape, binname,
                  str(stored)])


def basic():
    fname = "basic.h5"
    rng = np.random.default_rng(7)
    with h5py.File(os.path.join(OUT, fname), "w") as f:
        f.attrs["title"] = "store fixtures"
        f.attrs["numbers"] = np.array([1, 2, 3], dtype="i4")
        d = f.create_dataset("deflate_shuffle", data=rng.standard_normal((100, 70)).astype("f4"),
                             chunks=(32, 16), compression="gzip", compression_opts=4, shuffle=True)
        d.attrs["units"] = "K"
        f.create_dataset("fletcher_deflate", data=np.arange(50, dtype="i4") * 3 - 70, chunks=(7,),
                         compression="gzip", fletcher32=True)
        f.create_dataset("fletcher_only", data=rng.integers(0, 65535, (33, 5)).astype("u2"), chunks=(8, 5),
                         fletcher32=True)
        f.create_dataset("shuffle_only", data=rng.integers(-2**40, 2**40, (9, 10)).astype("i8"), chunks=(4, 4),
                         shuffle=True)
        f.create_dataset("contiguous", data=rng.standard_normal((20, 30)))
        f.create_dataset("contiguous_unwritten", shape=(10,), dtype="i2", fillvalue=-7)
        sp = f.create_dataset("sparse", shape=(40, 40), dtype="i2", chunks=(10, 10), fillvalue=-3,
                              compression="gzip")
        sp[0:10, 0:10] = 5
        sp[25, 37] = 9  # one chunk in the last row of chunks
        f.create_dataset("big_endian", data=rng.standard_normal((17, 9)).astype(">f8"), chunks=(5, 4),
                         compression="gzip", shuffle=True)
        f.create_dataset("big_endian_contiguous", data=(np.arange(24, dtype=">i4") - 12).reshape(4, 6))
        f.create_dataset("big_endian_fill", shape=(6,), dtype=">u2", chunks=(2,), fillvalue=0x1234)
        f["big_endian_fill"][0:2] = [1, 2]
        f.create_dataset("resizable", data=np.arange(80, dtype="u4").reshape(10, 8), maxshape=(None, 8),
                         chunks=(4, 8))
        f.create_dataset("scalar", data=np.float64(2.5))
        f.create_dataset("g/sub/r1", data=np.arange(1000, dtype="u1"), chunks=(64,), compression="gzip")
        f.create_dataset("g/r3", data=rng.integers(-9, 9, (5, 6, 7)).astype("i8"), chunks=(2, 3, 4),
                         compression="gzip", compression_opts=9)
        f.create_dataset("g/r4", data=rng.integers(0, 2**60, (3, 4, 5, 6)).astype("u8"), chunks=(2, 2, 2, 5),
                         compression="gzip", shuffle=True)
        f.create_dataset("empty_dim", shape=(0, 4), maxshape=(None, 4), dtype="f4", chunks=(8, 4))
        # Compact: the data inside the object header, read when the store opens.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((4,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32LE, space, dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(4, dtype="i4"))
        # Skipped by name, with a reason.
        f.create_dataset("strings", data=np.array(["a", "bc", "def"], dtype=h5py.string_dtype()))
        f.create_dataset("lzf", data=np.arange(100, dtype="i4"), chunks=(10,), compression="lzf")
        f.create_dataset("compound", data=np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]))
        f["soft"] = h5py.SoftLink("/contiguous")
    with h5py.File(os.path.join(OUT, fname), "r") as f:
        for name in ["deflate_shuffle", "fletcher_deflate", "fletcher_only", "shuffle_only", "contiguous",
                     "contiguous_unwritten", "sparse", "big_endian", "big_endian_contiguous", "big_endian_fill",
                     "resizable", "scalar", "g/sub/r1", "g/r3", "g/r4", "empty_dim", "compact"]:
            expect_read(fname, f[name])
    for name in ["strings", "lzf", "compound", "soft"]:
        LINES.append(["skip", fname, "/" + name, "/" + name])


def userblock():
    fname = "userblock.h5"
    with h5py.File(os.path.join(OUT, fname), "w", userblock_size=512) as f:
        f.create_dataset("chunked", data=np.arange(300, dtype="f4").reshape(30, 10), chunks=(8, 8),
                         compression="gzip")
        f.create_dataset("contiguous", data=np.arange(50, dtype="i8"))
    with h5py.File(os.path.join(OUT, fname), "r") as f:
        expect_read(fname, f["chunked"])
        expect_read(fname, f["contiguous"])


def netcdf():
    fname = "netcdf.nc"
    path = os.path.join(OUT, fname)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "netcdf fixture"
        nc.createDimension("time", None)
        nc.createDimension("lat", 6)
        nc.createDimension("lon", 8)
        nc.createDimension("nv", 2)  # a dimension without a variable
        nc.createDimension("x", 3)
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat[:] = np.linspace(-50, 50, 6)
        t = nc.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, complevel=3, fill_value=-999.0)
        t.units = "K"
        t[0:3, :, :] = np.arange(3 * 6 * 8, dtype="f4").reshape(3, 6, 8)
        bounds = nc.createVariable("bounds", "f8", ("lat", "nv"))
        bounds[:] = np.arange(12, dtype="f8").reshape(6, 2)
        # A variable named like a dimension it does not span: stored as
        # _nc4_non_coord_x.
        xv = nc.createVariable("x", "i4", ("lat",))
        xv[:] = np.arange(6, dtype="i4")
    with h5py.File(path, "r") as f:
        expect_read(fname, f["lat"], "/lat")
        expect_read(fname, f["temp"], "/temp")
        expect_read(fname, f["bounds"], "/bounds")
        assert "_nc4_non_coord_x" in f, list(f)
        expect_read(fname, f["_nc4_non_coord_x"], "/x")
    LINES.append(["gone", fname, "/nv"])


def damaged():
    """Files whose chunks are damaged after libhdf5 wrote them."""
    data = np.arange(4096, dtype="i4").reshape(64, 64)
    for fname, kwargs in [("bad_inflate.h5", dict(compression="gzip")),
                          ("bad_fletcher.h5", dict(fletcher32=True))]:
        path = os.path.join(OUT, fname)
        with h5py.File(path, "w") as f:
            f.create_dataset("d", data=data, chunks=(16, 16), **kwargs)
        with h5py.File(path, "r") as f:
            info = f["d"].id.get_chunk_info(1)
        with open(path, "r+b") as fh:
            fh.seek(info.byte_offset + info.size // 2)
            fh.write(b"\xde\xad\xbe\xef\x55\xaa")
    # Cut short: libhdf5 notices its end-of-allocation mark past the end.
    with open(os.path.join(OUT, "basic.h5"), "rb") as fh:
        whole = fh.read()
    with open(os.path.join(OUT, "truncated.h5"), "wb") as fh:
        fh.write(whole[: len(whole) // 2])
    with open(os.path.join(OUT, "not_hdf5.h5"), "wb") as fh:
        fh.write(b"this is not an HDF5 file\n" * 40)


def main():
    os.makedirs(OUT, exist_ok=True)
    basic()
    userblock()
    netcdf()
    damaged()
    with open(os.path.join(OUT, "manifest.txt"), "w") as fh:
        for line in LINES:
            fh.write("\t".join(line) + "\n")


main()
