#!/usr/bin/env python3
"""Makes the Zarr store's test stores, and what zarr-python reads from each
array, for tests/stores/zarr/zarr_store_test.cc.

    make_fixtures.py OUTDIR

writes Zarr v2 stores made by zarr-python (v2.zarr, a root-array store
root.zarr, damaged.zarr) and Zarr v3 stores written by hand with
tests/integration/zarr_stores.py's writer (Debian's zarr 2.13 writes no v3
stores: v3.zarr), one .bin per readable array (its elements as zarr-python
reads them, or as numpy holds them for v3, little-endian, C order) and
OUTDIR/manifest.txt, one line per check, fields separated by tabs:

    read  STORE  PATH  DTYPE  SHAPE  BINFILE  STORED_CHUNKS
    skip  STORE  PATH
    bad   STORE  PATH  KEY     (reading it whole is Corruption naming KEY)
    attr  STORE  PATH  NAME  TEXT

Exits 77 when zarr, numcodecs or numpy is missing.
"""
import os
import shutil
import sys

try:
    import numcodecs
    import numpy as np
    import zarr
except ImportError as e:  # pragma: no cover
    print(f"make_fixtures.py: {e}", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
from zarr_stores import V3_CASES, values, write_v3_array  # noqa: E402

OUT = sys.argv[1]
LINES = []
COUNTER = [0]


def le(arr):
    arr = np.asarray(arr)
    return arr.astype(arr.dtype.newbyteorder("<")).tobytes()


def stored_chunks(path):
    n = 0
    for _, dirs, files in os.walk(path):
        n += len([f for f in files if not f.startswith(".") and f != "zarr.json"])
    return n


def expect(store, path, arr, chunk_dir):
    arr = np.asarray(arr)
    if arr.shape == ():
        arr = arr.reshape(1)
    COUNTER[0] += 1
    binname = f"expect{COUNTER[0]}.bin"
    with open(os.path.join(OUT, binname), "wb") as f:
        f.write(le(arr))
    LINES.append(["read", store, path, arr.dtype.newbyteorder("<").str[1:], ",".join(map(str, arr.shape)), binname,
                  str(stored_chunks(chunk_dir))])


def v2():
    name = "v2.zarr"
    path = os.path.join(OUT, name)
    root = zarr.open_group(path, mode="w")
    root.attrs.update({"title": "zarr fixtures", "version": 3, "scale": 0.5, "flags": [1, 2, 3],
                       "nested": {"a": 1}})
    codecs = {
        "zlib": (numcodecs.Zlib(level=5), None),
        "gzip": (numcodecs.GZip(level=3), None),
        "lz4_shuffle": (numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE), None),
        "zstd_bitshuffle": (numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE), None),
        "zlib_noshuffle": (numcodecs.Blosc(cname="zlib", clevel=1, shuffle=numcodecs.Blosc.NOSHUFFLE), None),
        "shuffle_zlib": (numcodecs.Zlib(level=1), [numcodecs.Shuffle(elementsize=0)]),
        "raw": (None, None),
    }
    dtypes = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"]
    g = root.create_group("dtypes")
    for i, dt in enumerate(dtypes):
        for j, (cname, (comp, filters)) in enumerate(codecs.items()):
            if filters:
                filters = [numcodecs.Shuffle(elementsize=np.dtype(dt).itemsize)]
            a = values(dt, (37, 23), seed=i * 10 + j)
            z = g.create_dataset(f"{dt}_{cname}", data=a, chunks=(10, 8), compressor=comp, filters=filters)
            expect(name, f"/dtypes/{dt}_{cname}", z[...], os.path.join(path, "dtypes", f"{dt}_{cname}"))
    g.attrs["what"] = "every dtype under every codec"
    more = root.create_group("more")
    cases = {
        "big_i4": dict(data=values(">i4", (50,), 1), chunks=(7,), compressor=numcodecs.Zlib(level=2)),
        "big_f8": dict(data=values(">f8", (9, 11), 2), chunks=(4, 4),
                       compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)),
        "fortran": dict(data=values("i2", (6, 7, 8), 3), chunks=(4, 3, 5), order="F",
                        compressor=numcodecs.GZip(level=1)),
        "fortran_big": dict(data=values(">u4", (13, 5), 4), chunks=(5, 5), order="F", compressor=None),
        "nested": dict(data=values("f4", (20, 30), 5), chunks=(6, 7), dimension_separator="/",
                       compressor=numcodecs.Zlib(level=4)),
        "one_chunk": dict(data=values("u8", (5, 5), 6), chunks=(5, 5)),
        "chunks_larger_than_shape": dict(data=values("i4", (3, 4), 7), chunks=(10, 10)),
    }
    for n, kw in cases.items():
        z = more.create_dataset(n, **kw)
        expect(name, f"/more/{n}", z[...], os.path.join(path, "more", n))
    # Chunks never written read as the fill value (NaN, negative, ...).
    z = more.create_dataset("sparse_nan", shape=(40, 40), chunks=(10, 10), dtype="f4", fill_value=np.nan,
                            compressor=numcodecs.Zlib(level=1))
    z[0:10, 0:10] = 1.5
    z[35, 38] = -2
    expect(name, "/more/sparse_nan", z[...], os.path.join(path, "more", "sparse_nan"))
    z = more.create_dataset("sparse_neg", shape=(100,), chunks=(16,), dtype="i2", fill_value=-7)
    z[20:40] = 3
    expect(name, "/more/sparse_neg", z[...], os.path.join(path, "more", "sparse_neg"))
    z = more.create_dataset("unwritten", shape=(10, 3), chunks=(4, 3), dtype=">i8", fill_value=123456789)
    expect(name, "/more/unwritten", z[...], os.path.join(path, "more", "unwritten"))
    z = more.create_dataset("empty", shape=(0, 4), chunks=(8, 4), dtype="f4")
    expect(name, "/more/empty", np.zeros((0, 4), "f4"), os.path.join(path, "more", "empty"))
    z = zarr.open_array(os.path.join(path, "more", "scalar"), mode="w", shape=(), dtype="<f8")
    z[...] = 2.5
    expect(name, "/more/scalar", z[...], os.path.join(path, "more", "scalar"))
    # xarray's conventions: the fill value is also the _FillValue attribute.
    z = more.create_dataset("xr", data=values("f4", (4, 6), 8), chunks=(2, 3), fill_value=-999.0)
    z.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    z.attrs["units"] = "K"
    expect(name, "/more/xr", z[...], os.path.join(path, "more", "xr"))
    LINES.append(["attr", name, "/more/xr", "_FillValue", "-999"])
    LINES.append(["attr", name, "/more/xr", "units", "K"])
    LINES.append(["attr", name, "/", "title", "zarr fixtures"])
    LINES.append(["attr", name, "/", "flags", "1,2,3"])
    LINES.append(["attr", name, "/", "nested", '{"a":1}'])
    LINES.append(["attr", name, "/dtypes", "what", "every dtype under every codec"])
    deep = root.create_group("a/b/c")
    z = deep.create_dataset("d", data=np.arange(10, dtype="u1"), chunks=(3,))
    expect(name, "/a/b/c/d", z[...], os.path.join(path, "a", "b", "c", "d"))
    # What the store cannot hold: skipped by name, never guessed.
    skip = root.create_group("skip")
    skip.create_dataset("bool", data=np.array([True, False]))
    skip.create_dataset("complex", data=np.arange(4, dtype="c16"))
    skip.create_dataset("strings", data=np.array(["a", "bc"], dtype="U2"))
    skip.create_dataset("lzma", data=np.arange(10, dtype="i4"), compressor=numcodecs.LZMA())
    skip.create_dataset("delta", data=np.arange(10, dtype="i4"), filters=[numcodecs.Delta(dtype="i4")])
    for n in ["bool", "complex", "strings", "lzma", "delta"]:
        LINES.append(["skip", name, f"/skip/{n}"])
    os.makedirs(os.path.join(path, "not_a_node"))  # neither group nor array
    LINES.append(["skip", name, "/not_a_node"])


def root_array():
    name = "root.zarr"
    z = zarr.open_array(os.path.join(OUT, name), mode="w", shape=(25, 4), chunks=(10, 4), dtype="i4",
                        compressor=numcodecs.Zlib(level=1))
    z[...] = np.arange(100, dtype="i4").reshape(25, 4)
    expect(name, "/root", z[...], os.path.join(OUT, name))


def v3():
    name = "v3.zarr"
    path = os.path.join(OUT, name)
    os.makedirs(path)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        f.write('{"zarr_format": 3, "node_type": "group", "attributes": {"title": "v3 fixtures"}}')
    LINES.append(["attr", name, "/", "title", "v3 fixtures"])
    for i, (case, codecs) in enumerate(V3_CASES.items()):
        shape, chunks = ((6, 7, 5), (4, 3, 2)) if case == "transpose" else ((33, 20), (8, 6))
        a = values("i4", shape, seed=40 + i)
        write_v3_array(os.path.join(path, case), a, chunks, codecs, fill=-1, skip={(1, 1)})
        expect(name, f"/{case}", np.where(missing_mask(shape, chunks, (1, 1)), -1, a).astype("i4"),
               os.path.join(path, case))
    a = values("f8", (10, 10), 50)
    write_v3_array(os.path.join(path, "dotted"), a, (4, 4), V3_CASES["bytes"], separator=".", encoding="default")
    expect(name, "/dotted", a, os.path.join(path, "dotted"))
    write_v3_array(os.path.join(path, "bools"), np.array([True, False]), (2,), V3_CASES["bytes"], fill=False,
                   data_type="bool")
    LINES.append(["skip", name, "/bools"])


def missing_mask(shape, chunks, coords):
    m = np.zeros(shape, bool)
    if len(coords) == len(shape):
        m[tuple(slice(c * k, (c + 1) * k) for c, k in zip(coords, chunks))] = True
    return m


def damaged():
    """Chunk files damaged after zarr-python wrote them."""
    name = "damaged.zarr"
    path = os.path.join(OUT, name)
    root = zarr.open_group(path, mode="w")
    data = np.arange(4096, dtype="i4").reshape(64, 64)
    root.create_dataset("zlib", data=data, chunks=(16, 16), compressor=numcodecs.Zlib(level=1))
    root.create_dataset("blosc", data=data, chunks=(16, 16),
                        compressor=numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.SHUFFLE))
    root.create_dataset("raw", data=data, chunks=(16, 16), compressor=None)
    root.create_dataset("fifo", data=data, chunks=(16, 16), compressor=None)
    root.create_dataset("good", data=data, chunks=(16, 16), compressor=numcodecs.Zlib(level=1))
    expect(name, "/good", data, os.path.join(path, "good"))
    with open(os.path.join(path, "zlib", "1.2"), "r+b") as fh:
        fh.seek(20)
        fh.write(b"\xde\xad\xbe\xef\x55\xaa")
    LINES.append(["bad", name, "/zlib", "1.2"])
    blosc = os.path.join(path, "blosc", "2.0")
    with open(blosc, "rb") as fh:
        whole = fh.read()
    with open(blosc, "wb") as fh:
        fh.write(whole[: len(whole) // 2])
    LINES.append(["bad", name, "/blosc", "2.0"])
    with open(os.path.join(path, "raw", "3.3"), "ab") as fh:
        fh.write(b"extra")
    LINES.append(["bad", name, "/raw", "3.3"])
    os.remove(os.path.join(path, "fifo", "0.1"))
    os.mkfifo(os.path.join(path, "fifo", "0.1"))
    LINES.append(["bad", name, "/fifo", "0.1"])


def main():
    os.makedirs(OUT, exist_ok=True)
    v2()
    root_array()
    v3()
    damaged()
    with open(os.path.join(OUT, "manifest.txt"), "w") as fh:
        for line in LINES:
            fh.write("\t".join(line) + "\n")


if __name__ == "__main__":
    shutil.rmtree(OUT, ignore_errors=True)
    main()
