"""Zarr stores for the import/export and mount tests: data, a hand-written
Zarr v3 array writer and reader (zarr.json plus chunks encoded with
numcodecs and a CRC-32C written out here), the v2 store the mount tests
share (make_v2_store), and checks of what a container or a store holds."""
import gzip
import hashlib
import json
import os

import numcodecs
import numpy as np

from conftest import info, slab
from mounting import export

DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"]

V3_CASES = {
    "bytes": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "big_gzip": [{"name": "bytes", "configuration": {"endian": "big"}},
                 {"name": "gzip", "configuration": {"level": 7}}],
    "blosc_crc": [{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 4,
                                                      "shuffle": "shuffle", "typesize": 4,
                                                      "blocksize": 0}},
                  {"name": "crc32c"}],
    # Two compressors, valid in v3: the gzip stream holds a blosc chunk.
    "blosc_gzip": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                       "shuffle": "noshuffle", "typesize": 4,
                                                       "blocksize": 0}},
                   {"name": "gzip", "configuration": {"level": 2}}],
    "transpose": [{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                  {"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": "gzip", "configuration": {"level": 1}}],
}


def le(dtype):
    return np.dtype(dtype).newbyteorder("<")


def values(dtype, shape, seed=0):
    """Data spanning the dtype's range (negative, large) that compresses."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = rng.integers(-1000, 1000, n).astype(dt) / 8
    else:
        info_ = np.iinfo(dt)
        a = rng.integers(info_.min, info_.max, n, dtype=dt.newbyteorder("="), endpoint=True)
        a[: n // 2] = a[: n // 2] % 7  # a compressible half
    return a.reshape(shape).astype(dt)


def check_same(c, path, z):
    """The dataset `path` of container `c` holds exactly z[...]."""
    want = np.ascontiguousarray(z[...]).astype(le(z.dtype))
    got = export(c, path)
    assert len(got) == want.nbytes, (path, len(got), want.nbytes)
    if want.dtype.kind == "f":
        g = np.frombuffer(got, dtype=want.dtype).reshape(want.shape)
        np.testing.assert_array_equal(g, want)  # NaN == NaN here
    else:
        assert got == want.tobytes(), path


def filters_of(c, path):
    """The dataset's filters as `slab info` names them, "" for none."""
    f = info(c, path)["filters"]
    return "" if f == "none" else f


def snapshot(c):
    """What a container holds (tree, layouts, attributes, data), to show
    that a refused command changed nothing. The file's bytes are not
    compared: opening for writing records the lock holder in it."""
    tree = slab("ls", "-l", "-r", c).stdout
    paths = [ln.split()[-1].rstrip("/") for ln in tree.splitlines()[1:] if ln.strip()]
    out = [tree, json.dumps(info(c, "/"))]
    for p in paths:
        p = "/" + p.lstrip("/")
        i = info(c, p)
        out.append(json.dumps(i))
        if i["kind"] == "dataset":
            out.append(export(c, p))
    return out


def crc32c(data):
    """CRC-32C (Castagnoli), written out here as the oracle."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def write_v3_array(path, array, chunks, codecs, fill=0, separator="/", encoding="default",
                   attributes=None, dimension_names=None, data_type=None, skip=()):
    """A Zarr v3 array store written by hand. `codecs` is the zarr.json list;
    chunks are encoded here with the same codecs (bytes, transpose, gzip,
    blosc, crc32c). Chunk coordinates in `skip` are left out."""
    os.makedirs(path)
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": list(array.shape),
        "data_type": data_type or np.dtype(array.dtype).newbyteorder("=").name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": {"name": encoding, "configuration": {"separator": separator}},
        "fill_value": fill, "codecs": codecs, "attributes": attributes or {},
    }
    if dimension_names is not None:
        meta["dimension_names"] = dimension_names
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(meta, f)
    grid = [-(-s // c) for s, c in zip(array.shape, chunks)]
    for coords in np.ndindex(*grid):
        if coords in skip:
            continue
        block = np.full(chunks, fill if not isinstance(fill, str) else np.nan, dtype=array.dtype)
        sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, chunks, array.shape))
        block[tuple(slice(0, x.stop - x.start) for x in sl)] = array[sl]
        data = None
        for codec in codecs:
            name, cfg = codec["name"], codec.get("configuration", {})
            if name == "transpose":
                block = np.transpose(block, cfg["order"])
            elif name == "bytes":
                order = ">" if cfg.get("endian") == "big" else "<"
                data = np.ascontiguousarray(block).astype(block.dtype.newbyteorder(order)).tobytes()
            elif name == "gzip":
                data = gzip.compress(data, compresslevel=cfg["level"])
            elif name == "blosc":
                shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[cfg["shuffle"]]
                data = numcodecs.Blosc(cname=cfg["cname"], clevel=cfg["clevel"],
                                       shuffle=shuffle).encode(
                    np.frombuffer(data, dtype=f"u{cfg['typesize']}"))
            elif name == "crc32c":
                data = data + crc32c(data).to_bytes(4, "little")
            else:
                raise AssertionError(name)
        if encoding == "default":
            key = separator.join(["c", *map(str, coords)])
        else:
            key = separator.join(map(str, coords)) or "0"  # a 0-d array's one chunk
        full = os.path.join(path, *key.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)


def no_leftovers(directory, name):
    """Neither `name` nor a temporary `.name.slab-*` is in `directory`."""
    left = [f for f in os.listdir(directory) if f == name or f.startswith(f".{name}.slab")]
    assert left == [], left


def read_v3_array(path):
    """The array of a Zarr v3 array directory written with the codecs of
    V3_CASES (default key encoding), decoded here with numcodecs, gzip and
    the CRC-32C above: the oracle for v3 stores that zarr-python 2.13
    cannot read. Missing chunks read as the fill value; every CRC-32C is
    checked."""
    with open(os.path.join(path, "zarr.json")) as f:
        meta = json.load(f)
    shape = tuple(meta["shape"])
    chunks = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    dtype = np.dtype(meta["data_type"])
    sep = meta["chunk_key_encoding"].get("configuration", {}).get("separator", "/")
    out = np.full(shape, meta["fill_value"], dtype=dtype)
    codecs = meta["codecs"]
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    for coords in np.ndindex(*grid):
        key = sep.join(["c", *map(str, coords)])
        full = os.path.join(path, *key.split("/"))
        if not os.path.exists(full):
            continue
        with open(full, "rb") as f:
            data = f.read()
        order, perm = "<", None
        for codec in reversed(codecs):
            name, cfg = codec["name"], codec.get("configuration", {})
            if name == "crc32c":
                data, crc = data[:-4], int.from_bytes(data[-4:], "little")
                assert crc32c(data) == crc, key
            elif name == "gzip":
                data = gzip.decompress(data)
            elif name == "blosc":
                data = bytes(numcodecs.Blosc().decode(data))
            elif name == "bytes":
                order = ">" if cfg.get("endian") == "big" else "<"
            elif name == "transpose":
                perm = cfg["order"]
            else:
                raise AssertionError(name)
        stored = chunks if perm is None else tuple(chunks[i] for i in perm)
        block = np.frombuffer(data, dtype=dtype.newbyteorder(order)).reshape(stored)
        if perm is not None:
            block = np.transpose(block, np.argsort(perm))
        sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, chunks, shape))
        out[sl] = block[tuple(slice(0, x.stop - x.start) for x in sl)]
    return out


def le_bytes(arr):
    """An array's elements as the mount shows them: little-endian, C order
    (a 0-d array as one element)."""
    arr = np.asarray(arr)
    if arr.shape == ():
        arr = arr.reshape(1)
    return np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"))).tobytes()


def tree_digest(root):
    """Every file's name, size and bytes under root, and every directory."""
    h = hashlib.sha256()
    for dirpath, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        h.update(dirpath.encode())
        for name in sorted(files):
            p = os.path.join(dirpath, name)
            h.update(name.encode())
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def make_v2_store(path):
    """A Zarr v2 store made by zarr-python: codecs, byte orders, F order,
    nested keys, missing chunks, a 0-d array, attributes, and arrays the
    store cannot hold (skipped by name: V2_SKIPPED and the non-numbers)."""
    import zarr
    root = zarr.open_group(str(path), mode="w")
    root.attrs["title"] = "detector run"
    root.attrs["gain"] = [1.5, 2.5]
    g = root.create_group("run1")
    g.attrs["operator"] = "ada"
    d = g.create_dataset("frames", data=values("f4", (6, 40, 50), 1), chunks=(1, 16, 16),
                         compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    d.attrs["units"] = "counts"
    g.create_dataset("big_endian", data=np.arange(300, dtype=">i2").reshape(20, 15), chunks=(7, 4),
                     compressor=numcodecs.Zlib(level=3))
    g.create_dataset("fortran", data=values("u8", (33, 17), 2), chunks=(10, 10), order="F",
                     compressor=numcodecs.GZip(level=2))
    g.create_dataset("nested", data=values("i4", (30, 20), 3), chunks=(8, 8), dimension_separator="/")
    root.create_dataset("bytes", data=np.frombuffer(b"hello, mount\n" * 10, dtype="u1"), chunks=(32,),
                        compressor=None)
    z = zarr.open_array(str(path / "scalar"), mode="w", shape=(), dtype="<f4")
    z[...] = 7.25
    sparse = root.create_dataset("sparse", shape=(64, 64), dtype="i4", chunks=(16, 16), fill_value=0)
    sparse[16:32, 32:48] = 5
    sparse[48:64, 0:16] = 9
    root.create_dataset("flags", data=np.array([True, False]))
    root.create_dataset("texts", data=np.array(["a", "bb"], dtype="U2"))
    root.create_dataset("lzma", data=np.arange(10, dtype="i4"), compressor=numcodecs.LZMA())
    return path


V2_SKIPPED = {"lzma"}  # numbers, but under a codec the store does not decode


def arrays_of(path):
    """name -> array for every array zarr-python reads that the store shows."""
    import zarr
    out = {}
    root = zarr.open_group(str(path), mode="r")

    def visit(name, obj):
        if isinstance(obj, zarr.Array) and obj.dtype.kind in "iuf" and name not in V2_SKIPPED:
            out[name] = obj[...]
    root.visititems(visit)
    return out
