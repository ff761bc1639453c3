"""The arguments of Group.create_dataset, checked and turned into the
engine's dataset options (dtype, shape, max shape, chunks, fill, filter
pipeline, sparse, index kind)."""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

__all__ = ["DTYPES", "SCALAR_ATTR", "normalize_dtype", "dataset_options", "parse_filters"]

# The element types slabfs stores, numpy spelling, little-endian.
DTYPES = ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8")
_NUMPY = {name: np.dtype("<" + name) for name in DTYPES}

# The attribute that marks a dataset of fixed shape (1) as a scalar (shape
# ()), as `slab import` marks an HDF5, netCDF or Zarr scalar and `slab
# export` writes it back (docs/interop.md). The binding hides it.
SCALAR_ATTR = "_SLAB_SCALAR"

# h5py's default gzip level.
DEFAULT_GZIP_LEVEL = 4


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The numpy dtype of an engine dtype name ("f4" -> dtype('<f4'))."""
    return _NUMPY[name]


def normalize_dtype(dtype: DTypeLike) -> str:
    """The engine name of a numpy dtype ("f4"), for any byte order. Other
    types (bool, float16, complex, strings, objects) are TypeError."""
    dt = np.dtype(dtype)
    name = f"{dt.kind}{dt.itemsize}"
    if dt.kind not in "iuf" or name not in _NUMPY or dt.fields is not None or dt.shape:
        raise TypeError(f"dtype {dt} is not supported: slabfs stores {' '.join(DTYPES)} "
                        "(convert bool to u1, float16 to f4)")
    return name


def _dims(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, numbers.Integral):
        value = (value,)
    try:
        dims = tuple(value)
    except TypeError:
        raise TypeError(f"{what} must be a tuple of integers, not {value!r}") from None
    out = []
    for d in dims:
        if not isinstance(d, numbers.Integral) or isinstance(d, bool):
            raise TypeError(f"{what} must be a tuple of integers, not {value!r}")
        if d < 0:
            raise ValueError(f"{what} {dims} has a negative dimension")
        out.append(int(d))
    return tuple(out)


def filters_string(compression: Any, compression_opts: Any, shuffle: bool, fletcher32: bool) -> str:
    """The engine's filter pipeline for h5py's compression arguments."""
    if isinstance(compression, numbers.Integral) and not isinstance(compression, bool):
        # h5py's shorthand: compression=N is gzip level N; a second level
        # beside it is a conflict (h5py's TypeError), not silently dropped.
        if compression_opts is not None:
            raise TypeError("Conflict in compression options")
        compression, compression_opts = "gzip", int(compression)
    parts = []
    if shuffle:
        parts.append("shuffle")
    if compression in (None, False):
        if compression_opts is not None:
            raise ValueError("compression_opts needs compression='gzip'")
    elif compression in ("gzip", "deflate", "zlib"):
        level = DEFAULT_GZIP_LEVEL if compression_opts is None else compression_opts
        if not isinstance(level, numbers.Integral) or not 1 <= int(level) <= 9:
            raise ValueError(f"gzip level must be an integer from 1 to 9, not {level!r}")
        parts.append(f"deflate={int(level)}")
    else:
        raise ValueError(f'compression filter "{compression}" is unavailable: slabfs has gzip '
                         "(plus shuffle=True and fletcher32=True, a CRC-32C checksum)")
    if fletcher32:
        parts.append("checksum")
    return ",".join(parts)


def parse_filters(filters: str | None) -> tuple[str | None, int | None, bool, bool]:
    """(compression, compression_opts, shuffle, fletcher32) of a pipeline
    such as "shuffle,deflate=6,checksum"."""
    compression = opts = None
    shuffle = fletcher32 = False
    for f in filter(None, (filters or "").split(",")):
        name, _, arg = f.partition("=")
        if name == "deflate":
            compression, opts = "gzip", int(arg) if arg else 6
        elif name == "shuffle":
            shuffle = True
        elif name == "checksum":
            fletcher32 = True
    return compression, opts, shuffle, fletcher32


def dataset_options(shape: Any = None, dtype: DTypeLike = None, data: Any = None, chunks: Any = None,
                    maxshape: Any = None, compression: Any = None, compression_opts: Any = None,
                    shuffle: bool = False, fletcher32: bool = False, fillvalue: Any = None, sparse: bool = False,
                    index: str | None = "auto",
                    scaleoffset: Any = None) -> tuple[dict[str, Any], NDArray[Any] | None, bool]:
    """Checks create_dataset's arguments. Returns (options, data, scalar):
    options are the keyword arguments of the engine's create_dataset, data a
    numpy array of the dataset's shape and dtype (or None), and scalar
    whether the dataset is a scalar (shape ()), which the engine stores as
    a fixed shape (1) marked with SCALAR_ATTR."""
    if scaleoffset is not None:
        raise ValueError("the scale-offset filter is not available in slabfs")
    if data is not None:
        if dtype is None:
            data = np.asarray(data)
            if data.dtype.kind in "iu" and data.dtype.itemsize > 8:
                raise TypeError(f"dtype {data.dtype} is not supported")
            dtype = data.dtype
        name = normalize_dtype(dtype)
        data = np.asarray(data, dtype=numpy_dtype(name))
        if shape is None:
            shape = data.shape
        else:
            shape = _dims(shape, "shape")
            if int(np.prod(shape, dtype=object)) != data.size:
                raise ValueError(f"shape {shape} does not fit the data's {data.shape}")
            data = data.reshape(shape)
    else:
        if shape is None:
            raise TypeError("create_dataset needs a shape or data")
        name = normalize_dtype("f4" if dtype is None else dtype)
    shape = _dims(shape, "shape")
    if len(shape) > 32:
        raise ValueError(f"a dataset has at most 32 dimensions, not {len(shape)}")
    scalar = len(shape) == 0
    if scalar:
        if (chunks not in (None, ()) or compression not in (None, False) or compression_opts is not None
                or shuffle or fletcher32):
            raise TypeError("scalar datasets take no chunk or filter options")
        if maxshape not in (None, ()):
            raise ValueError(f"maxshape {maxshape!r} does not fit a scalar dataset")
        chunks, maxshape, shape = (1,), (1,), (1,)
        index = "auto"
    if maxshape is None:
        maxshape = shape
    else:
        if isinstance(maxshape, numbers.Integral) or maxshape is None:
            maxshape = (maxshape,)
        maxshape = tuple(maxshape)
        if len(maxshape) != len(shape):
            raise ValueError(f"maxshape {maxshape} and shape {shape} differ in rank")
        for m, s in zip(maxshape, shape):
            if m is not None and (not isinstance(m, numbers.Integral) or m < s):
                raise ValueError(f"maxshape {maxshape} is below shape {shape}")
        maxshape = tuple(None if m is None else int(m) for m in maxshape)
    # A dimension fixed at length 0 can grow in slabfs (the engine needs a
    # positive maximum), as `slab import` makes such an HDF5 dimension.
    maxshape = tuple(None if m == 0 else m for m in maxshape)
    chunk_dims: tuple[int, ...] = ()  # chunks None or True: the engine chooses
    if chunks is False:
        raise ValueError("slabfs datasets are always chunked: give chunks=None (automatic) or a tuple")
    if chunks is not None and chunks is not True:
        chunk_dims = _dims(chunks, "chunks")
        if len(chunk_dims) != len(shape):
            raise ValueError(f"chunks {chunk_dims} and shape {shape} differ in rank")
        if any(c == 0 for c in chunk_dims):
            raise ValueError(f"chunks {chunk_dims} has a zero dimension")
        if any(m is not None and c > m for c, m in zip(chunk_dims, maxshape)):
            raise ValueError(f"chunks {chunk_dims} are larger than the fixed maxshape {maxshape}")
    if fillvalue is None:
        fill = b""
    else:
        fv = np.asarray(fillvalue)
        if fv.ndim != 0:
            raise ValueError(f"fillvalue must be a scalar, not {fillvalue!r}")
        fill = np.asarray(fillvalue, dtype=numpy_dtype(name)).tobytes()
    options = dict(dtype=name, shape=list(shape), maxshape=list(maxshape), chunks=list(chunk_dims),
                   fill=fill, filters=filters_string(compression, compression_opts, shuffle, fletcher32),
                   sparse=bool(sparse), index=index or "auto")
    return options, data, scalar
