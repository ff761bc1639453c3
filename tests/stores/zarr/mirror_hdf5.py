#!/usr/bin/env python3
"""Makes with zarr-python a Zarr v2 store holding what one of
make_fixtures.py's HDF5 / netCDF-4 files holds, for the store conformance
suite (tests/stores/store_conformance_test.cc):

    mirror_hdf5.py FILE.h5 OUT.zarr

Every dataset the manifest (manifest.txt next to FILE) lists as read for
FILE becomes an array at its store path with the same dtype (big-endian
ones stay big-endian), shape, chunk shape (the shape for a contiguous
dataset) and fill value, and exactly the chunks the HDF5 file stores are
written (so the stored chunks agree). The codecs vary from array to array
(zlib, gzip, blosc with several compressors and shuffles, numcodecs'
shuffle filter, none), as do F order and nested chunk keys, so that the
suite reads each decoding path against h5py's bytes. Groups and plain
string and number attributes are copied too.

Exits 77 when zarr, numcodecs, h5py or numpy is missing.
"""
import os
import sys

try:
    import h5py
    import numcodecs
    import numpy as np
    import zarr
except ImportError as e:  # pragma: no cover
    print(f"mirror_hdf5.py: {e}", file=sys.stderr)
    sys.exit(77)

SRC, OUT = sys.argv[1], sys.argv[2]
NAME = os.path.basename(SRC)
HIDDEN = {"DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "_FillValue", "_Netcdf4Dimid",
          "_Netcdf4Coordinates", "_NCProperties"}

# How each array is encoded: (compressor, filters, order, dimension_separator).
ENCODINGS = {
    "/contiguous": (numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE), None, "C", "."),
    "/fletcher_only": (numcodecs.Blosc(cname="lz4", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE), None, "C", "."),
    "/fletcher_deflate": (numcodecs.GZip(level=6), None, "C", "."),
    "/shuffle_only": (None, [numcodecs.Shuffle(elementsize=8)], "C", "."),
    "/g/r3": (numcodecs.Zlib(level=9), None, "F", "."),
    "/g/r4": (numcodecs.Blosc(cname="zlib", clevel=4, shuffle=numcodecs.Blosc.SHUFFLE), None, "C", "/"),
    "/big_endian": (numcodecs.Blosc(cname="blosclz", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE), None, "F", "."),
    "/resizable": (None, None, "C", "/"),
}


def default_encoding(d):
    if d.compression == "gzip" and d.shuffle:
        return numcodecs.Blosc(cname="zlib", clevel=d.compression_opts, shuffle=numcodecs.Blosc.SHUFFLE), None
    if d.compression == "gzip":
        return numcodecs.Zlib(level=d.compression_opts), None
    return None, None


def plain_attrs(obj):
    out = {}
    for k, v in obj.attrs.items():
        if k in HIDDEN or k.startswith("_nc") or k.startswith("_Netcdf"):
            continue
        if isinstance(v, bytes):
            v = v.decode()
        if isinstance(v, str):
            out[k] = v
        elif isinstance(v, np.ndarray) and v.dtype.kind in "iuf":
            out[k] = v.tolist()
        elif isinstance(v, (np.integer, np.floating, int, float)):
            out[k] = v.item() if hasattr(v, "item") else v
    return out


def read_paths():
    paths = []
    with open(os.path.join(os.path.dirname(SRC), "manifest.txt")) as fh:
        for line in fh:
            f = line.rstrip("\n").split("\t")
            if f[0] == "read" and f[1] == NAME:
                paths.append(f[2])
    return paths


def source_of(f, store_path):
    # netCDF-4 keeps a variable named like a dimension it does not span as
    # _nc4_non_coord_NAME (NAME is then the dimension's own scale).
    parent, _, name = store_path.rpartition("/")
    hidden = f"{parent}/_nc4_non_coord_{name}"
    return f[hidden] if hidden in f else f[store_path]


def mirror(f, root, store_path):
    d = source_of(f, store_path)
    parent = store_path.rpartition("/")[0]
    group = root
    for part in [p for p in parent.split("/") if p]:
        group = group.require_group(part)
        group.attrs.update(plain_attrs(f[group.name]))
    compressor, filters = default_encoding(d)
    order, sep = "C", "."
    if NAME == "basic.h5" and store_path in ENCODINGS:
        compressor, filters, order, sep = ENCODINGS[store_path]
    shape = d.shape
    chunks = d.chunks or (tuple(max(n, 1) for n in shape) if shape else None)
    fill = d.fillvalue
    kwargs = dict(shape=shape, dtype=d.dtype, compressor=compressor, filters=filters, order=order,
                  fill_value=np.asarray(fill, dtype=d.dtype).item(), dimension_separator=sep,
                  write_empty_chunks=True)
    if chunks:
        kwargs["chunks"] = chunks
    z = group.create_dataset(store_path.rpartition("/")[2], **kwargs)
    z.attrs.update(plain_attrs(d))
    if shape == ():
        if d.id.get_offset() is not None:
            z[...] = d[()]
        return
    if not d.chunks:
        compact = d.id.get_create_plist().get_layout() == h5py.h5d.COMPACT  # its data is in the header
        if (compact or d.id.get_offset() is not None) and d.size:
            z[...] = d[...]
        return
    for i in range(d.id.get_num_chunks()):
        off = d.id.get_chunk_info(i).chunk_offset
        box = tuple(slice(o, min(o + c, n)) for o, c, n in zip(off, d.chunks, shape))
        if all(b.start < b.stop for b in box):
            z[box] = d[box]


def main():
    root = zarr.open_group(OUT, mode="w")
    with h5py.File(SRC, "r") as f:
        root.attrs.update(plain_attrs(f))
        for p in read_paths():
            mirror(f, root, p)


main()
