"""slabfs.Dataset: an n-dimensional chunked array in a container, read and
written with numpy indexing."""
from __future__ import annotations

import itertools
import os
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

from . import _slabfs
from .base import Node
from .creation import SCALAR_ATTR, numpy_dtype, parse_filters
from .errors import ArrayError, BroadcastError, MaxShapeError, RankError
from .selection import Selection, select

if TYPE_CHECKING:
    from .files import File  # for annotations only: a layer above this one

__all__ = ["Dataset"]

# Writes whose source must be copied (broadcast, strided, another dtype)
# are copied and written this many bytes at a time.
_WRITE_BLOCK_BYTES = 64 << 20


class Dataset(Node):
    """A dataset of a slabfs container, like an h5py Dataset.

    Read and write with numpy basic indexing -- ``ds[10:20, ::2]``,
    ``ds[..., -1]``, ``ds[5] = row``, ``ds[:, 0] = 0`` -- plus one integer
    or boolean index array on one axis. Each read goes into a numpy array
    allocated here, straight from the chunk cache (a strided slice is one
    hyperslab transfer), with the GIL released, so Python threads read in
    parallel. Elements never written read as the fill value.

    Properties: shape, dtype, chunks, maxshape, fillvalue, compression,
    compression_opts, shuffle, fletcher32 (the CRC-32C checksum filter),
    sparse, size, ndim, nbytes, attrs, name, parent, file.

    A scalar dataset (shape ()) reads with ``ds[()]`` (a numpy scalar) or
    ``ds[...]`` (a 0-d array) and is written the same way; other keys are
    ValueError and len() TypeError, as in h5py. The container stores it as
    a fixed shape (1) marked with the attribute _SLAB_SCALAR, which `slab
    export` writes as an HDF5 or Zarr scalar.

    Errors: IndexError for an index out of range, TypeError for an index
    slabfs does not take, ValueError for a value that does not broadcast or
    a bad shape, OSError(EIO) for damaged data, OSError(EROFS) for a write
    to a read-only file, ValueError once the file is closed.

    A Dataset pickles as (container path, dataset path): unpickled in another
    process it reopens the container read-only (once per process) and reads
    its last commit -- what Dask's process schedulers need.
    """

    def __init__(self, file: File, handle: _slabfs.AnyDatasetHandle) -> None:
        super().__init__(file, handle.id)
        self._h = handle
        self._scalar_known: bool | None = None

    @property
    def _scalar(self) -> bool:
        """Whether this is a scalar: a fixed shape (1) with SCALAR_ATTR."""
        if self._scalar_known is None:
            if isinstance(self._h, _slabfs.StoreDatasetHandle):  # an HDF5 scalar
                self._scalar_known = self._h.info()["scalar"]
                return self._scalar_known
            i = self._info()
            self._scalar_known = (tuple(i["shape"]) == (1,) and tuple(i["maxshape"]) == (1,)
                                  and SCALAR_ATTR in self._c.attr_names(self._id))
        return self._scalar_known

    # ------------------------------------------------------------ description
    def _info(self) -> _slabfs.DatasetInfo:
        return self._h.info()

    @property
    def shape(self) -> tuple[int, ...]:
        return () if self._scalar else self._info()["shape"]

    @property
    def dtype(self) -> np.dtype[Any]:
        return numpy_dtype(self._info()["dtype"])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def chunks(self) -> tuple[int, ...] | None:
        """The chunk shape; None for a scalar (one element, as h5py's contiguous one)."""
        return None if self._scalar else self._info()["chunks"]

    @property
    def maxshape(self) -> tuple[int | None, ...]:
        """The maximum shape; None for an unlimited dimension."""
        return () if self._scalar else self._info()["maxshape"]

    @property
    def fillvalue(self) -> np.generic:
        i = self._info()
        return np.frombuffer(i["fill"], dtype=numpy_dtype(i["dtype"]))[0]

    @property
    def filters(self) -> str:
        """The filter pipeline as slabfs spells it ("shuffle,deflate=6,checksum"), "" for none."""
        return self._info()["filters"]

    @property
    def compression(self) -> str | None:
        return parse_filters(self.filters)[0]

    @property
    def compression_opts(self) -> int | None:
        return parse_filters(self.filters)[1]

    @property
    def shuffle(self) -> bool:
        return parse_filters(self.filters)[2]

    @property
    def fletcher32(self) -> bool:
        """Whether chunks carry a checksum (slabfs's is CRC-32C, verified on every read)."""
        return parse_filters(self.filters)[3]

    @property
    def scaleoffset(self) -> None:
        return None

    @property
    def sparse(self) -> bool:
        return self._info()["sparse"]

    @property
    def index_kind(self) -> str:
        """The chunk index: "single", "compact", "fixed", "extensible" or "btree"."""
        return self._info()["index"]

    @property
    def stored_bytes(self) -> int:
        """Bytes of chunk data stored in the container (h5py: id.get_storage_size())."""
        return self._info()["stored_bytes"]

    def info(self) -> _slabfs.DatasetInfo:
        """Everything the engine says about the dataset, as a dict;
        ``defined_elements`` counts the defined elements of a sparse
        dataset and the elements of a dense one's stored chunks, as
        ``slab info`` does (count_defined)."""
        i = self._info().copy()
        if not i["sparse"]:
            i["defined_elements"] = self._h.count_defined()
        return i

    # ------------------------------------------------------------ reading
    def __getitem__(self, key: Any) -> Any:
        i = self._info()
        if self._scalar:
            return self._read_scalar(key, numpy_dtype(i["dtype"]))
        return self._read(select(i["shape"], key), numpy_dtype(i["dtype"]))

    def _read_scalar(self, key: Any, dt: np.dtype[Any]) -> Any:
        whole = _scalar_key(key)
        buf = np.empty(1, dt)
        self._h.read([0], [1], [1], buf)
        return buf[0] if whole == "value" else buf.reshape(())

    def _read(self, sel: Selection, dt: np.dtype[Any]) -> Any:
        buf = np.empty(sel.mshape, dt)
        if buf.size:
            if sel.fancy_axis is None:
                self._h.read(sel.start, sel.stride, sel.count, buf)
            else:
                for fs, fst, fc, ms, mc in _fancy_runs(sel):
                    self._h.read(fs, fst, fc, buf, ms, [1] * len(ms), mc)
        if sel.flip:
            buf = buf[sel.flip_key()]
        if sel.fancy_axis is not None:
            inverse = np.searchsorted(sel.fancy_unique, sel.fancy_index)
            buf = np.take(buf, inverse, axis=sel.fancy_axis)
        out = sel.to_numpy_order(buf.reshape(sel.natural_shape()))
        return out[()] if out.ndim == 0 else out

    def astype(self, dtype: DTypeLike) -> AstypeWrapper:
        """A view that reads this dataset converted to `dtype`, as h5py's
        ``ds.astype('f8')[0:10]``: slicing it reads and converts; a type
        numpy cannot convert the elements to is TypeError."""
        return AstypeWrapper(self, dtype)

    def __array__(self, dtype: DTypeLike = None, copy: bool | None = None) -> NDArray[Any]:
        arr = self[()]
        arr = np.asarray(arr)
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("a scalar dataset has no len()")
        return shape[0]

    def len(self) -> int:
        """len(ds), as h5py's Dataset.len()."""
        return len(self)

    def __iter__(self) -> Iterator[Any]:
        shape = self.shape
        if not shape:
            raise TypeError("a scalar dataset cannot be iterated over")
        for i in range(shape[0]):
            yield self[i]

    def iter_chunks(self, sel: Any = None) -> Iterator[tuple[slice, ...]]:
        """The parts of ``sel`` (a box: slices with step 1; default all)
        that each chunk holds, as tuples of slices in C order of the
        chunks, as h5py's iter_chunks."""
        shape, chunks = self.shape, self.chunks
        if chunks is None:
            raise TypeError("a scalar dataset has no chunks")
        s = select(shape, () if sel is None else sel)
        if not s.is_box or s.flip:
            raise ValueError("iter_chunks takes a box: slices with step 1")
        if not s.nselect:
            return
        ranges: list[list[slice]] = []
        for a, c, ch in zip(s.start, s.count, chunks):
            parts: list[slice] = []
            pos, end = a, a + c
            while pos < end:
                nxt = min(end, (pos // ch + 1) * ch)
                parts.append(slice(pos, nxt, 1))
                pos = nxt
            ranges.append(parts)
        yield from itertools.product(*ranges)

    def read_direct(self, dest: NDArray[Any], source_sel: Any = None, dest_sel: Any = None) -> None:
        """Reads ``self[source_sel]`` into ``dest[dest_sel]`` (h5py's
        signature; a selection is a numpy index such as ``np.s_[0:10, ::2]``).
        ``dest`` is a C-contiguous numpy array, written in place: when it has
        the dataset's dtype and both selections have the dataset's rank and
        the same extents, with positive steps, the engine writes into it
        directly; another numeric dtype is converted to, as h5py does."""
        _check_direct(dest, None, writeable=True)
        if self._scalar or dest.dtype != self.dtype:
            _assign(dest, () if dest_sel is None else dest_sel, self[() if source_sel is None else source_sel])
            return
        i = self._info()
        src = select(i["shape"], () if source_sel is None else source_sel)
        dst = select(dest.shape, () if dest_sel is None else dest_sel)
        if _direct(src, dst):
            if src.nselect:
                self._h.read(src.start, src.stride, src.count, dest, dst.start, dst.stride, dst.count)
        else:
            _assign(dest, () if dest_sel is None else dest_sel, self._read(src, numpy_dtype(i["dtype"])))

    # ------------------------------------------------------------ writing
    def __setitem__(self, key: Any, value: Any) -> None:
        i = self._info()
        dt = numpy_dtype(i["dtype"])
        if self._scalar:
            _scalar_key(key)
            val = np.asarray(value, dtype=dt)
            if val.size != 1:
                raise BroadcastError(f"cannot write a value of shape {val.shape} to a scalar dataset")
            self._h.write([0], [1], [1], np.ascontiguousarray(val.reshape(1)))
            return
        sel = select(i["shape"], key)
        val = np.asarray(value, dtype=dt)
        if sel.fancy_axis is None:
            v = _broadcast(val, sel.out_shape).reshape(sel.mshape)
            if sel.flip:
                v = v[sel.flip_key()]
            self._write_blocks(sel, v)
        else:
            ax = sel.fancy_axis
            full = list(sel.mshape)
            full[ax] = sel.fancy_index.size
            v = sel.from_numpy_order(_broadcast(val, sel.out_shape)).reshape(full)
            if sel.flip:
                v = v[sel.flip_key()]
            if v.size == 0:
                return
            # numpy's rule for repeated indices: the last assignment wins.
            rev = sel.fancy_index[::-1]
            _, first = np.unique(rev, return_index=True)
            vbuf = np.ascontiguousarray(np.take(v, rev.size - 1 - first, axis=ax))
            for fs, fst, fc, ms, mc in _fancy_runs(sel):
                self._h.write(fs, fst, fc, vbuf, ms, [1] * len(ms), mc)

    def _write_blocks(self, sel: Selection, v: NDArray[Any]) -> None:
        if v.size == 0:
            return
        if v.flags.c_contiguous:
            self._h.write(sel.start, sel.stride, sel.count, v)
            return
        # A broadcast or strided source: copy it a block of rows at a time.
        row_bytes = max(1, v[0].size * v.itemsize)
        rows = max(1, _WRITE_BLOCK_BYTES // row_bytes)
        start, count = list(sel.start), list(sel.count)
        for a in range(0, sel.count[0], rows):
            b = min(a + rows, sel.count[0])
            start[0] = sel.start[0] + a * sel.stride[0]
            count[0] = b - a
            self._h.write(start, sel.stride, count, np.ascontiguousarray(v[a:b]))

    def write_direct(self, source: Any, source_sel: Any = None, dest_sel: Any = None) -> None:
        """Writes ``source[source_sel]`` to ``self[dest_sel]`` (h5py's
        signature). A C-contiguous source of the dataset's dtype, with both
        selections of the dataset's rank and the same extents, is written by
        the engine without a copy."""
        i = self._info()
        dt = numpy_dtype(i["dtype"])
        source = np.asarray(source)
        if self._scalar:
            self[() if dest_sel is None else dest_sel] = source[() if source_sel is None else source_sel]
            return
        dst = select(i["shape"], () if dest_sel is None else dest_sel)
        src = select(source.shape, () if source_sel is None else source_sel)
        if source.dtype == dt and source.flags.c_contiguous and _direct(dst, src):
            if dst.nselect:
                self._h.write(dst.start, dst.stride, dst.count, source, src.start, src.stride, src.count)
        else:
            self[() if dest_sel is None else dest_sel] = source[() if source_sel is None else source_sel]

    def resize(self, size: int | Sequence[int], axis: int | None = None) -> None:
        """Changes the shape within maxshape: ``resize((n, m))``, or
        ``resize(n, axis=0)`` for one axis. New elements read as the fill
        value; elements cut off are forgotten (they read as fill if the
        dataset grows again). ValueError past maxshape; TypeError for a
        scalar dataset."""
        if self._scalar:
            raise TypeError("a scalar dataset cannot be resized")
        shape: list[Any] = list(self.shape)
        if axis is None:
            new: list[Any] = [size] if isinstance(size, (int, np.integer)) else list(size)
            if len(new) != len(shape):
                raise RankError(f"new shape {tuple(new)} has rank {len(new)}, the dataset {len(shape)}")
        else:
            if not -len(shape) <= axis < len(shape):
                raise ValueError(f"axis {axis} is out of range for a {len(shape)}-dimensional dataset")
            new = shape
            new[axis] = size
        for d in new:
            if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
                raise ValueError(f"invalid shape {tuple(new)}: dimensions are non-negative integers")
        past = any(m is not None and d > m for d, m in zip(new, self.maxshape))
        try:
            self._h.resize([int(d) for d in new])
        except ValueError as e:
            if past:
                raise MaxShapeError(str(e)) from None
            raise

    def clear(self) -> None:
        """Resets every element to the fill value and frees all chunks."""
        self._h.clear()

    # ------------------------------------------------------------ defined elements
    def erase(self, sel: Any = ()) -> None:
        """Makes the selected elements undefined: they read as the fill value
        and (in a sparse dataset) take no space; whole chunks inside the
        selection are freed. A dense dataset stores the fill value in partly
        erased chunks. ``sel`` is a numpy index (``np.s_[0:100, ::2]``)."""
        s = select(self._info()["shape"], sel)
        if s.fancy_axis is not None:
            raise TypeError("erase takes a hyperslab, not an index array")
        if s.nselect:
            self._h.erase(s.start, s.stride, s.count)

    def defined(self, sel: Any = ()) -> list[tuple[slice, ...]]:
        """The defined elements inside a box ``sel`` (steps of 1), as a list
        of disjoint boxes in C order, each a tuple of slices (so
        ``ds[box]`` reads it): for a sparse dataset the elements written and
        not erased, for a dense one the elements of its stored chunks."""
        s = select(self._info()["shape"], sel)
        if not s.is_box or s.flip:
            raise ValueError("defined() takes a box: slices with step 1 and integers")
        if not s.nselect:
            return []
        return [tuple(slice(a, a + c) for a, c in zip(start, count))
                for start, count in self._h.defined(s.start, s.count)]

    def defined_mask(self, sel: Any = ()) -> Any:
        """A boolean array shaped like ``ds[sel]``: True where the element is
        defined (see defined()). Any basic index works; the work follows the
        stored chunks inside the selection's bounding box."""
        s = select(self._info()["shape"], sel)
        if s.fancy_axis is not None:
            raise TypeError("defined_mask takes a hyperslab, not an index array")
        span = [(c - 1) * st + 1 if c else 0 for c, st in zip(s.count, s.stride)]
        mask = np.zeros(span, dtype=bool)
        if mask.size:
            for start, count in self._h.defined(s.start, span):
                mask[tuple(slice(a - o, a - o + c) for a, o, c in zip(start, s.start, count))] = True
        mask = mask[tuple(slice(None, None, st) for st in s.stride)]
        if s.flip:
            mask = mask[s.flip_key()]
        out = mask.reshape(s.out_shape)
        return out[()] if out.ndim == 0 else out

    def count_defined(self) -> int:
        """How many elements are defined (see defined())."""
        return self._h.count_defined()

    # ------------------------------------------------------------ following a writer
    def refresh(self) -> _slabfs.RefreshInfo:
        """Moves the whole file to its newest commit (File.refresh); this
        handle then sees the new shape and contents."""
        return self._file.refresh()

    def flush(self) -> None:
        """Commits the file (File.flush)."""
        self._file.flush()

    # ------------------------------------------------------------ Python protocols
    def __reduce__(self) -> tuple[Callable[[str, str], Node], tuple[str, str]]:
        f = self._file
        if not self._c.read_only and self._c.dirty:
            warnings.warn(f"slabfs: pickling {self.name} of {f.filename} with uncommitted changes: "
                          "another process that unpickles it reads the last commit (call flush() first)",
                          RuntimeWarning, stacklevel=2)
        # The File knows how to come back in another process (slabfs.reopen).
        return f._reduce_dataset(self.name)

    def __dask_tokenize__(self) -> object:
        f = self._file
        if not self._c.read_only:
            # Its contents change under the same name: never reuse a result.
            return uuid.uuid4().hex
        i = self._info()
        # A foreign file is read as it was when opened: its size and mtime then say which state it is.
        c = self._c
        gen = c.space()["generation"] if isinstance(c, _slabfs.Container) else _stat_signature(f._realpath)
        return ("slabfs.Dataset", f._realpath, self._id, gen, i["shape"], i["dtype"])

    def __repr__(self) -> str:
        if self._c.closed:
            return "<Closed slabfs dataset>"
        i = self._info()
        return f'<slabfs Dataset "{self.name}": shape {self.shape}, type "<{i["dtype"]}">'


class AstypeWrapper:
    """Dataset.astype(dtype): reads convert to dtype (h5py's AstypeWrapper)."""

    def __init__(self, dataset: Dataset, dtype: DTypeLike) -> None:
        self._dataset = dataset
        self._dtype = np.dtype(dtype)
        if self._dtype.kind not in "biuf":
            raise TypeError(f"cannot read {dataset.dtype} elements as {self._dtype}: slabfs converts "
                            "between numeric types only")

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._dtype

    def __getitem__(self, key: Any) -> Any:
        # A numpy scalar stays one (ds.astype("f4")[()] of a scalar dataset).
        return _convert(self._dataset[key], self._dtype)

    def __len__(self) -> int:
        return len(self._dataset)

    def __array__(self, dtype: DTypeLike = None, copy: bool | None = None) -> NDArray[Any]:
        arr = self[()]
        return arr if dtype is None else arr.astype(dtype, copy=False)


def _convert(values: Any, dt: np.dtype[Any]) -> Any:
    """`values` (an array or numpy scalar) as dtype `dt`, as HDF5 converts:
    integers out of the target's range saturate at its ends instead of
    wrapping (h5py's astype('u1') of 300 is 255)."""
    was = values
    if dt.kind in "iu" and values.dtype.kind in "iu":
        to, src = np.iinfo(dt), np.iinfo(values.dtype)
        lo, hi = max(to.min, src.min), min(to.max, src.max)  # both fit the source dtype
        if lo > src.min or hi < src.max:
            values = np.clip(values, np.array(lo, values.dtype), np.array(hi, values.dtype))
    elif dt.kind in "iu" and values.dtype.kind == "f":
        to = np.iinfo(dt)
        values = np.clip(values, to.min, to.max)
    out = values.astype(dt)
    # np.clip makes a numpy scalar of a 0-d array: ds[...] stays an array.
    return out if isinstance(was, np.generic) else np.asarray(out)


def _stat_signature(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _scalar_key(key: Any) -> str:
    """What a key of a scalar dataset reads: "value" for () (a numpy
    scalar), "array" for ... (a 0-d array); anything else is ValueError, as
    in h5py."""
    if isinstance(key, tuple) and len(key) == 0:
        return "value"
    if key is Ellipsis or (isinstance(key, tuple) and len(key) == 1 and key[0] is Ellipsis):
        return "array"
    raise ValueError(f"a scalar dataset is read and written with [()] or [...], not [{key!r}]")


def _broadcast(val: NDArray[Any], shape: Sequence[int]) -> NDArray[Any]:
    try:
        return np.broadcast_to(val, shape)
    except ValueError:
        raise BroadcastError(f"cannot broadcast a value of shape {val.shape} to the selection's "
                             f"{tuple(shape)}") from None


def _fancy_runs(sel: Selection) -> Iterator[tuple[list[int], list[int], list[int], list[int], list[int]]]:
    """(file start, stride, count, memory start, memory count) of each
    hyperslab that transfers an index-array selection, the memory side being
    the (unique indices)-shaped buffer."""
    ax = sel.fancy_axis
    assert ax is not None  # the callers' case: an index array
    for pos, start, stride, count in sel.runs():
        fs, fst, fc = list(sel.start), list(sel.stride), list(sel.count)
        fs[ax], fst[ax], fc[ax] = start, stride, count
        ms, mc = [0] * len(fc), list(sel.count)
        ms[ax], mc[ax] = pos, count
        yield fs, fst, fc, ms, mc


def _direct(file_sel: Selection, mem_sel: Selection) -> bool:
    """Whether two selections can be one engine transfer with a memory space."""
    return (file_sel.fancy_axis is None and mem_sel.fancy_axis is None
            and not file_sel.flip and not mem_sel.flip
            and len(file_sel.count) == len(mem_sel.count) and file_sel.count == mem_sel.count)


def _check_direct(arr: object, dt: np.dtype[Any] | None, writeable: bool) -> None:
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"read_direct needs a numpy array, not {type(arr).__name__}")
    if dt is not None and arr.dtype != dt:
        raise TypeError(f"the destination has dtype {arr.dtype}, the dataset {dt}")
    if not arr.flags.c_contiguous:
        raise ArrayError("the destination array must be C-contiguous")
    if writeable and not arr.flags.writeable:
        raise ValueError("the destination array is read-only")


def _assign(dest: NDArray[Any], key: Any, values: Any) -> None:
    """dest[key] = values, a BroadcastError when the shapes do not fit."""
    try:
        dest[key] = values
    except ValueError as e:
        raise BroadcastError(f"the selection read does not fit the destination: {e}") from None

