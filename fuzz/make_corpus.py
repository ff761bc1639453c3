#!/usr/bin/python3
"""Seed corpora for the fuzz targets, from real containers made by `slab`.

    make_corpus.py BIN_DIR OUT_DIR

BIN_DIR holds a normal build's `slab`. OUT_DIR gets one folder per target:
container/ and fsck/ (small whole containers of every index kind, filtered,
sparse, with groups and attributes), blocks/ (their superblocks, blocks and
payloads, each behind the selector byte fuzz_blocks reads), chunk/ (stored
chunks, dense filtered and sparse), npy/ (headers numpy writes), slice/
(slices with a shape) and index/ (empty: fuzz_index starts from nothing)."""
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
        if magic == BLOCK_MAGIC and 1 <= btype <= 9 and ver == 1 and off + 16 + plen <= len(image):
            found.append((off, 16 + plen, btype))
            off += 16
        else:
            off += 16 if off % 16 == 0 else 16 - off % 16
    return found


def main():
    bin_dir, out = sys.argv[1], sys.argv[2]
    for t in ("container", "fsck", "blocks", "chunk", "npy", "slice", "index"):
        os.makedirs(os.path.join(out, t), exist_ok=True)
    work = tempfile.mkdtemp(prefix="slabfs-corpus-")
    try:
        containers = make_containers(bin_dir, work)
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
                    open(os.path.join(out, "blocks", f"g{n}-{off}"), "wb").write(bytes([2]) + blk[16:])
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
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
