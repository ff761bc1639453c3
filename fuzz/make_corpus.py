#!/usr/bin/python3
"""Seed corpora for the fuzz targets, from real containers made by `slab`.

    make_corpus.py BIN_DIR OUT_DIR

BIN_DIR holds a normal build's `slab`. OUT_DIR gets one folder per target:
container/ and fsck/ (small whole containers of every index kind, filtered,
sparse, with groups and attributes, and the container of the first
fixed-array layout in tests/data/), blocks/ (their superblocks, blocks and
payloads, each behind the selector byte fuzz_blocks reads), chunk/ (stored
chunks, dense filtered and sparse), npy/ (headers numpy writes), slice/
(slices with a shape), index/ (empty: fuzz_index starts from nothing),
zarr_metadata/ (.zarray, .zattrs and v3 zarr.json documents written by
python3-zarr and by `slab export`, behind fuzz_zarr_metadata's selector
byte) and zarr_chunk/ (chunks python3-zarr compressed, and v3 chains with
CRC-32C, behind fuzz_zarr_chunk's header)."""
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

BLOCK_MAGIC = 0x4B424C53
DATA_START = 12288
# Containers earlier builds wrote, whose layouts the engine still reads
# (tests/data/README.md).
OLD_CONTAINERS = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                               "first_fixed_array_layout.slab")]


def slab(bin_dir, *args):
    subprocess.run([os.path.join(bin_dir, "slab"), *map(str, args)], check=True, capture_output=True)


def make_containers(bin_dir, work):
    """Small containers: each a few KiB to a few tens of KiB."""
    specs = {
        "kinds": [
            ("/single", "f4", "10", None, None, []),
            ("/g/compact", "u4", "20", None, "5", []),
            ("/g/h/fixed", "i2", "40,40", None, "4,4", []),
            ("/ext", "u1", "20,8", "unlimited,8", "2,2", []),
            ("/btree", "u1", "12,12", "unlimited,unlimited", "3,3", []),
        ],
        "filtered": [
            ("/f", "f8", "16,16", None, "8,8", ["--filters", "shuffle,deflate=1,checksum"]),
            ("/d", "u2", "64", "unlimited", "16", ["--filters", "deflate=6"]),
        ],
        "sparse": [
            ("/s", "i4", "32,32", None, "8,8", ["--sparse"]),
            ("/sf", "f4", "16,16", None, "8,8", ["--sparse", "--filters", "shuffle,deflate=1,checksum"]),
        ],
    }
    out = []
    rng = np.random.default_rng(1)
    for name, datasets in specs.items():
        c = os.path.join(work, name + ".slab")
        slab(bin_dir, "create", c)
        for path, dtype, shape, maxshape, chunks, extra in datasets:
            args = ["mkdset", "-p", c, path, "--dtype", dtype, "--shape", shape]
            if maxshape:
                args += ["--maxshape", maxshape]
            if chunks:
                args += ["--chunks", chunks]
            slab(bin_dir, *args, *extra)
            dims = tuple(int(x) for x in shape.split(","))
            arr = rng.integers(0, 50, dims).astype(np.dtype(dtype).newbyteorder("<"))
            raw = os.path.join(work, "x.bin")
            arr.tofile(raw)
            slab(bin_dir, "import", c, path, raw)
            if "--sparse" in extra:
                slab(bin_dir, "erase", c, path, "0:4")  # some elements undefined
            slab(bin_dir, "attr", c, path, "units", "m")
        slab(bin_dir, "attr", c, "/", "title", "fuzz seed")
        out.append(c)
    return out


def blocks_of(image):
    """(offset, total length) of every block in the image."""
    found = []
    off = DATA_START
    while off + 16 <= len(image):
        magic, btype, ver, _, plen = struct.unpack_from("<IBBHI", image, off)
        if magic == BLOCK_MAGIC and 1 <= btype <= 11 and ver in (1, 2) and off + 16 + plen <= len(image):
            found.append((off, 16 + plen, btype))
            off += 16
        else:
            off += 16 if off % 16 == 0 else 16 - off % 16
    return found


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


# fuzz_zarr_chunk's codec kinds and shuffle strides.
ZLIB, GZIP, BLOSC, CRC32C, SHUFFLE = range(5)
STRIDES = [1, 2, 4, 8, 3, 5, 16, 255]


def chunk_seed(kinds, stride, expected, body, blosc_shuffle=0, cname=0):
    code = sum(k * 5 ** i for i, k in enumerate(kinds))
    head = bytes([len(kinds), code, STRIDES.index(stride) | blosc_shuffle << 3 | cname << 5,
                  expected & 255, expected >> 8])
    return head + body


def zarr_seeds(bin_dir, work, out):
    """Metadata documents and chunks of real Zarr stores."""
    import numcodecs
    import zarr

    meta, chunks = os.path.join(out, "zarr_metadata"), os.path.join(out, "zarr_chunk")
    n = 0

    def put_meta(selector, text):
        nonlocal n
        data = text if isinstance(text, bytes) else text.encode()
        open(os.path.join(meta, f"m{n}"), "wb").write(bytes([selector]) + data)
        n += 1

    rng = np.random.default_rng(3)
    a = rng.integers(0, 40, (16, 12)).astype("<i4")
    stores = os.path.join(work, "zarr")
    root = zarr.open_group(stores, mode="w")
    root.attrs.update({"title": "fuzz seed", "missing": float("nan"), "inf": float("inf"),
                       "nested": {"a": [1, 2, {"b": None}]}, "flags": [True, False],
                       "big": 2 ** 64 - 1, "neg": -5, "units": "\u00b0C", "names": ["x", "y"]})
    arrays = {
        "none": dict(compressor=None),
        "zlib": dict(compressor=numcodecs.Zlib(level=1)),
        "gzip": dict(compressor=numcodecs.GZip(level=5)),
        "lz4": dict(compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)),
        "zstd": dict(compressor=numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE)),
        "bzlib": dict(compressor=numcodecs.Blosc("zlib", 1, numcodecs.Blosc.NOSHUFFLE)),
        "shuffle": dict(compressor=numcodecs.Zlib(level=4), filters=[numcodecs.Shuffle(4)]),
        "fortran": dict(compressor=numcodecs.Zlib(level=1), order="F"),
        "nested": dict(compressor=None, dimension_separator="/"),
    }
    blosc_modes = {"lz4": 1, "zstd": 2, "bzlib": 0}
    kinds_of = {"none": [], "zlib": [ZLIB], "gzip": [GZIP], "lz4": [BLOSC], "zstd": [BLOSC],
                "bzlib": [BLOSC], "shuffle": [SHUFFLE, ZLIB], "fortran": [ZLIB], "nested": []}
    for name, kw in arrays.items():
        z = root.create_dataset(name, shape=a.shape, chunks=(8, 8), dtype="<i4", fill_value=-1, **kw)
        z[:] = a
        z.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
        d = os.path.join(stores, name)
        put_meta(0, open(os.path.join(d, ".zarray"), "rb").read())
        key = "0/1" if name == "nested" else "0.1"
        body = open(os.path.join(d, *key.split("/")), "rb").read()
        open(os.path.join(chunks, f"v2-{name}"), "wb").write(
            chunk_seed(kinds_of[name], 4, 8 * 8 * 4, body, blosc_modes.get(name, 0)))
    for k, (dt, fill, shape) in enumerate([(">f8", float("nan"), (5, 7)), ("|u1", 255, (300,)),
                                           ("<f4", float("-inf"), ()), (">i2", None, (2, 3, 4)),
                                           ("|b1", False, (4,)), ("<c8", 0, (4,))]):
        z = zarr.open_array(os.path.join(work, f"t{k}"), mode="w", shape=shape, dtype=dt,
                            fill_value=fill)
        put_meta(0, open(os.path.join(work, f"t{k}", ".zarray"), "rb").read())
    put_meta(0, json.dumps({"zarr_format": 2, "shape": [10], "chunks": [5], "dtype": "<i4",
                            "fill_value": 0, "order": "C", "compressor": {"id": "lzma"},
                            "filters": [{"id": "delta", "dtype": "<i4"}]}))
    put_meta(3, open(os.path.join(stores, ".zattrs"), "rb").read())
    put_meta(3, open(os.path.join(stores, "zlib", ".zattrs"), "rb").read())

    # v3 documents as slab writes them.
    c = os.path.join(work, "v3.slab")
    slab(bin_dir, "create", c)
    slab(bin_dir, "mkdset", "-p", c, "/g/f", "--dtype", "f8", "--shape", "10,10", "--chunks", "5,5",
         "--maxshape", "unlimited,10", "--filters", "shuffle,deflate=3,checksum", "--fill", "nan")
    slab(bin_dir, "mkdset", "-p", c, "/g/u", "--dtype", "u2", "--shape", "7", "--filters", "deflate=1")
    for path, arr in (("/g/f", rng.normal(size=(10, 10))), ("/g/u", np.arange(7, dtype="<u2"))):
        arr.tofile(os.path.join(work, "x.bin"))
        slab(bin_dir, "import", c, path, os.path.join(work, "x.bin"))
    slab(bin_dir, "attr", c, "/g/f", "_ARRAY_DIMENSIONS", '["y","x"]')
    slab(bin_dir, "attr", c, "/g", "title", "v3")
    v3 = os.path.join(work, "v3.zarr")
    slab(bin_dir, "export", c, v3, "--format", "zarr3")
    for path, selector in (("zarr.json", 2), ("g/zarr.json", 2), ("g/f/zarr.json", 1),
                           ("g/u/zarr.json", 1)):
        put_meta(selector, open(os.path.join(v3, path), "rb").read())
    # And as other writers may: transpose, big endian, crc32c, v2 keys, sharding, extensions.
    base = {"zarr_format": 3, "node_type": "array", "shape": [6, 4, 2], "data_type": "int16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3, 4, 2]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}},
            "fill_value": -7, "attributes": {"a": 1}, "dimension_names": ["t", None, "z"]}
    for codecs, extra in (
            ([{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
              {"name": "bytes", "configuration": {"endian": "big"}},
              {"name": "gzip", "configuration": {"level": 7}}, {"name": "crc32c"}], {}),
            ([{"name": "bytes", "configuration": {"endian": "little"}},
              {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 4, "shuffle": "shuffle",
                                                  "typesize": 2, "blocksize": 0}}],
             {"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
              "ext": {"must_understand": False}}),
            ([{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 4, 2]}}],
             {"storage_transformers": []}),
            ([{"name": "bytes", "configuration": {"endian": "little"}}],
             {"shape": [], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}},
              "dimension_names": [], "data_type": "float32", "fill_value": "0x7fc00001"})):
        doc = dict(base, codecs=codecs, **extra)
        put_meta(1, json.dumps(doc))
    put_meta(2, json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {"x": [1.5, None]},
                            "consolidated_metadata": {"kind": "inline", "metadata": {}}}))
    for key in ("0", "17", "18446744073709551615"):
        put_meta(4, key)

    # v3 chunk chains: the chunks slab wrote, and some made here.
    raw = a[:8, :8].tobytes()
    body = open(os.path.join(v3, "g", "u", "c", "0"), "rb").read()
    open(os.path.join(chunks, "v3-gzip"), "wb").write(chunk_seed([GZIP], 2, 14, body))
    z = numcodecs.GZip(level=2).encode(raw)
    open(os.path.join(chunks, "v3-gzip-crc"), "wb").write(
        chunk_seed([GZIP, CRC32C], 4, len(raw), z + crc32c(z).to_bytes(4, "little")))
    b = numcodecs.Blosc("lz4", 5, numcodecs.Blosc.NOSHUFFLE).encode(raw)
    open(os.path.join(chunks, "v3-blosc-gzip"), "wb").write(
        chunk_seed([BLOSC, GZIP], 4, len(raw), numcodecs.GZip(level=1).encode(b)))
    open(os.path.join(chunks, "v3-crc"), "wb").write(
        chunk_seed([CRC32C], 1, len(raw), raw + crc32c(raw).to_bytes(4, "little")))
    # Untranspose: bit 7, rank-1 and item size, dimensions, permutation, data.
    for k, (rank, item, dims, perm) in enumerate([(3, 2, [3, 4, 2], 5), (2, 3, [6, 5], 1),
                                                    (4, 0, [2, 3, 2, 2], 23), (1, 1, [6], 0)]):
        head = bytes([0x80, (rank - 1) | item << 2, *dims, perm])
        open(os.path.join(chunks, f"transpose-{k}"), "wb").write(head + bytes(range(96)))


def main():
    bin_dir, out = sys.argv[1], sys.argv[2]
    for t in ("container", "fsck", "blocks", "chunk", "npy", "slice", "index", "zarr_metadata",
              "zarr_chunk"):
        os.makedirs(os.path.join(out, t), exist_ok=True)
    work = tempfile.mkdtemp(prefix="slabfs-corpus-")
    try:
        containers = make_containers(bin_dir, work) + OLD_CONTAINERS
        n = 0
        for c in containers:
            image = open(c, "rb").read()
            for t in ("container", "fsck"):
                shutil.copy(c, os.path.join(out, t, os.path.basename(c)))
            for slot in (0, 4096):
                open(os.path.join(out, "blocks", f"sb{n}-{slot}"), "wb").write(b"\x00" + image[slot:slot + 128])
            for off, length, btype in blocks_of(image):
                blk = image[off:off + length]
                open(os.path.join(out, "blocks", f"b{n}-{off}"), "wb").write(bytes([1]) + blk)
                if btype == 1:
                    # Inline groups go to the version 1 decoder, paged ones to
                    # version 2, ones with page tables to version 3.
                    sel = {2: 6, 3: 9}.get(blk[5], 2)
                    open(os.path.join(out, "blocks", f"g{n}-{off}"), "wb").write(bytes([sel]) + blk[16:])
                if btype == 10:
                    open(os.path.join(out, "blocks", f"fd{n}-{off}"), "wb").write(bytes([8]) + blk[16:])
                if btype == 11:
                    open(os.path.join(out, "blocks", f"gp{n}-{off}"), "wb").write(bytes([7]) + blk[16:])
                if btype == 12:
                    open(os.path.join(out, "blocks", f"gt{n}-{off}"), "wb").write(bytes([10]) + blk[16:])
                if btype == 2:
                    open(os.path.join(out, "blocks", f"d{n}-{off}"), "wb").write(bytes([3]) + blk[16:])
                    open(os.path.join(out, "blocks", f"db{n}-{off}"), "wb").write(bytes([5]) + blk)
                if btype == 5:
                    open(os.path.join(out, "blocks", f"f{n}-{off}"), "wb").write(bytes([4]) + blk[16:])
            n += 1
        # Stored chunks, behind fuzz_chunk's header: format byte, elements - 1, mask.
        filt = [c for c in containers if c.endswith("filtered.slab")][0]
        sp = [c for c in containers if c.endswith("sparse.slab")][0]
        for c, path, fmt_byte, elems in ((filt, "/f", (6 << 1) | (3 << 4), 64),
                                          (sp, "/s", 1 | (0 << 1) | (2 << 4), 64),
                                          (sp, "/sf", 1 | (6 << 1) | (2 << 4), 64)):
            image = open(c, "rb").read()
            cp = subprocess.run([os.path.join(bin_dir, "slab"), "chunks", "--json", c, path],
                                check=True, capture_output=True, text=True)
            for i, ch in enumerate(json.loads(cp.stdout)[:6]):
                body = image[ch["offset"]:ch["offset"] + ch["bytes"]]
                head = bytes([fmt_byte, (elems - 1) & 255, (elems - 1) >> 8, ch["filter_mask"]])
                open(os.path.join(out, "chunk", f"{path[1:]}-{i}"), "wb").write(head + body)
        for i, (dt, shape) in enumerate([("<f4", (3, 4)), ("|u1", (7,)), (">i8", (2, 3, 4)), ("<u2", ())]):
            buf = io.BytesIO()
            np.save(buf, np.zeros(shape, dt))
            open(os.path.join(out, "npy", f"h{i}"), "wb").write(buf.getvalue()[:256])
        for i, (shape, text) in enumerate([((100, 50), "10:20, ::2"), ((8,), "-3:"), ((4, 4, 4), "1, :, 0:4:3"),
                                           ((30,), "::-1"), ((5, 5), "...")]):
            head = bytes([len(shape) - 1]) + b"".join(struct.pack("<H", d) for d in shape)
            open(os.path.join(out, "slice", f"s{i}"), "wb").write(head + text.encode())
        zarr_seeds(bin_dir, work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
