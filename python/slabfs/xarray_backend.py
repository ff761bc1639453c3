"""The xarray backend: ``xr.open_dataset("run.slab", engine="slabfs",
group="/climate")``.

A group opens as an xarray Dataset: each dataset directly in it is a
variable (subgroups are not read, as with netCDF groups), its attributes
are the variable's attrs and the group's attributes the Dataset's attrs.
Dimension names come from each dataset's ``_ARRAY_DIMENSIONS`` attribute, a
JSON list such as ``["time", "lat", "lon"]`` (the Zarr convention, which
slab's HDF5/Zarr importers write); without it, axis i is ``dim_i`` (or
``dim_i_N`` when ``dim_i`` already has another length N in the group).
Data is read lazily, through numpy indexing of the slabfs dataset (one
index array per read goes to slabfs; xarray does the rest), and
``chunks={}`` gives Dask arrays chunked as the datasets are.

CF decoding (``mask_and_scale``, ``decode_times``, ...) is xarray's: a
``_FillValue`` attribute masks its value as NaN. The slabfs fill value
(what unwritten elements read as) is in each variable's
``encoding["fillvalue"]``; it is not a missing-value marker unless a
``_FillValue`` attribute says so.

The entry point is registered in the ``xarray.backends`` group of the
package's dist-info; ``engine=SlabfsBackendEntrypoint`` works as well.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from xarray import Dataset as XDataset
from xarray import Variable
from xarray import conventions
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from .dataset import Dataset
from .files import File
from .group import Group

__all__ = ["SlabfsBackendEntrypoint", "SlabfsBackendArray", "DIMENSIONS_ATTR"]

DIMENSIONS_ATTR = "_ARRAY_DIMENSIONS"
_MAGIC = b"\x89SLABFS\n"


class SlabfsBackendArray(BackendArray):
    """A slabfs dataset as xarray's lazily indexed array. Thread-safe
    without a lock (the engine is), and picklable (the dataset pickles by
    path), so Dask's threaded, process and distributed schedulers all work.

    `shape` may be longer than the dataset's along dimensions that can grow:
    a netCDF record variable shorter than its unlimited dimension reads past
    its end as its ``_FillValue`` where it has one that its type holds (a
    netCDF variable's storage fill is its _FillValue; xarray masks it), else
    as the fill value, as netCDF reads it."""

    __slots__ = ("dataset", "shape", "dtype", "pad")

    def __init__(self, dataset: Dataset, shape: tuple[int, ...] | None = None) -> None:
        self.dataset = dataset
        self.shape = tuple(shape) if shape is not None else dataset.shape
        self.dtype = dataset.dtype
        self.pad = _pad_value(dataset)

    def __getitem__(self, key: Any) -> Any:
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER_1VECTOR,
                                                  self._getitem)

    def _getitem(self, key: tuple[Any, ...]) -> NDArray[Any]:
        if self.shape == self.dataset.shape:
            return np.asarray(self.dataset[key])
        return self._padded(key)

    def _padded(self, key: tuple[Any, ...]) -> NDArray[Any]:
        # One index array per axis (an integer drops its axis at the end);
        # the part inside the dataset is read as a box and placed, the rest
        # is the fill value.
        picks: list[NDArray[Any]] = []
        drop: list[int] = []
        for axis, (k, n) in enumerate(zip(key, self.shape)):
            if isinstance(k, (int, np.integer)):
                picks.append(np.array([k % n if k < 0 else k]))
                drop.append(axis)
            else:
                picks.append(np.arange(n)[k])
        out = np.full(tuple(len(p) for p in picks), self.pad, dtype=self.dtype)
        inside = [p < n for p, n in zip(picks, self.dataset.shape)]
        if all(m.any() for m in inside):
            boxes = tuple(slice(int(p[m].min()), int(p[m].max()) + 1) for p, m in zip(picks, inside))
            block = np.asarray(self.dataset[boxes])
            where = np.ix_(*[np.flatnonzero(m) for m in inside])
            out[where] = block[np.ix_(*[p[m] - b.start for p, m, b in zip(picks, inside, boxes)])]
        return out.reshape(tuple(len(p) for a, p in enumerate(picks) if a not in drop))


def _pad_value(dataset: Dataset) -> Any:
    """The _FillValue of `dataset` as its dtype, if it holds it exactly;
    else its fill value."""
    marker = dataset.attrs.get("_FillValue")
    if marker is not None:
        try:
            m = np.asarray(marker).reshape(-1)
            if m.size == 1:
                v = m.astype(dataset.dtype)
                if v[0] == m[0] or (np.isnan(v[0]) and np.isnan(m[0])):
                    return v[0]
        except (TypeError, ValueError, OverflowError):
            pass
    return dataset.fillvalue


class _FileCloser:
    """Closes the File an xarray Dataset was opened from. Pickles as a no-op:
    an unpickled copy must not close the file its process shares."""

    def __init__(self, f: File) -> None:
        self._file = f

    def __call__(self) -> None:
        self._file.close()

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _noop, ()


def _noop() -> None:
    return None


def dimension_names(dataset: Dataset, used: dict[str, int],
                    lengths: dict[str, list[tuple[int, bool, str]]] | None = None) -> list[str]:
    """The dimension names of a slabfs dataset; `used` maps names to lengths
    already taken in the group (and is updated). With `lengths`, a dict that
    collects (length, can grow) per name and axis, a named dimension whose
    length differs is left for the caller to settle (record variables)."""
    shape = dataset.shape
    names: Any = None
    if DIMENSIONS_ATTR in dataset.attrs:
        raw = dataset.attrs[DIMENSIONS_ATTR]
        try:
            names = json.loads(raw) if isinstance(raw, (str, bytes)) else None
        except ValueError:
            names = None
        if (not isinstance(names, list) or len(names) != len(shape)
                or not all(isinstance(n, str) and n for n in names)):
            raise ValueError(f"{dataset.name}: attribute {DIMENSIONS_ATTR} must be a JSON list of "
                             f"{len(shape)} names, not {raw!r}")
    else:
        names = []
        for axis, n in enumerate(shape):
            name = f"dim_{axis}"
            if used.get(name, n) != n:
                name = f"dim_{axis}_{n}"
            names.append(name)
    for axis, (name, n) in enumerate(zip(names, shape)):
        if lengths is not None:
            m = dataset.maxshape[axis]
            grows = m is None or m > n
            lengths.setdefault(name, []).append((n, grows, dataset.name))
            used[name] = max(used.get(name, n), n)
            continue
        if used.get(name, n) != n:
            raise ValueError(f"{dataset.name}: dimension {name!r} has length {n} here and "
                             f"{used[name]} in another dataset of the group")
        used[name] = n
    return names


def _settle_lengths(lengths: dict[str, list[tuple[int, bool, str]]]) -> dict[str, int]:
    """Each named dimension's length: the longest, when every dataset that
    is shorter can grow along it (netCDF record variables of unequal length
    along the unlimited dimension); else ValueError, as for unrelated
    dimensions that share a name."""
    out = {}
    for name, seen in lengths.items():
        longest = max(n for n, _, _ in seen)
        for n, grows, where in seen:
            if n != longest and not grows:
                raise ValueError(f"{where}: dimension {name!r} has length {n} here and "
                                 f"{longest} in another dataset of the group")
        out[name] = longest
    return out


def _variable(ds: Dataset, dims: list[str], shape: tuple[int, ...] | None = None) -> Variable:
    attrs = {k: v for k, v in ds.attrs.items() if k != DIMENSIONS_ATTR}
    info = ds.info()
    encoding = {
        "chunks": info["chunks"],
        "preferred_chunks": dict(zip(dims, info["chunks"])),
        "dtype": ds.dtype,
        "fillvalue": ds.fillvalue,
        "compression": ds.compression,
        "compression_opts": ds.compression_opts,
        "shuffle": ds.shuffle,
        "fletcher32": ds.fletcher32,
        "sparse": info["sparse"],
        "source": ds.file.filename,
        "slabfs_path": ds.name,
    }
    data = indexing.LazilyIndexedArray(SlabfsBackendArray(ds, shape))
    return Variable(dims, data, attrs, encoding)


def is_scalar(ds: Dataset) -> bool:
    """Whether a dataset is a scalar (shape (): a fixed shape (1) marked
    _SLAB_SCALAR in the container, as `slab import` makes an HDF5, netCDF
    or Zarr scalar; docs/interop.md)."""
    return ds.shape == ()


def _scalar_variable(ds: Dataset) -> Variable:
    attrs = {k: v for k, v in ds.attrs.items() if k != DIMENSIONS_ATTR}
    return Variable((), ds[()], attrs, {"dtype": ds.dtype, "source": ds.file.filename,
                                        "slabfs_path": ds.name})


def group_variables(group: Group, drop_variables: Iterable[str] = ()) -> dict[str, Variable]:
    """The datasets directly in `group` as xarray Variables, by name; a
    dataset marked as a scalar is a 0-d variable."""
    drop = set(drop_variables)
    datasets = [(name, obj) for name, obj in group.items()
                if isinstance(obj, Dataset) and name not in drop]
    scalars = {name: _scalar_variable(ds) for name, ds in datasets if is_scalar(ds)}
    datasets = [(name, ds) for name, ds in datasets if name not in scalars]
    used: dict[str, int] = {}
    dims: dict[str, list[str]] = {}
    lengths: dict[str, list[tuple[int, bool, str]]] = {}
    # Named dimensions first, so that a default name never takes one.
    named = [(name, ds) for name, ds in datasets if DIMENSIONS_ATTR in ds.attrs]
    for name, ds in named:
        dims[name] = dimension_names(ds, used, lengths)
    settled = _settle_lengths(lengths)
    used = dict(settled)
    for name, ds in datasets:
        if name not in dims:
            dims[name] = dimension_names(ds, used)
    variables = {}
    for name, ds in datasets:
        shape = tuple(settled.get(d, n) for d, n in zip(dims[name], ds.shape))
        variables[name] = _variable(ds, dims[name], shape if shape != ds.shape else None)
    variables.update(scalars)
    return variables


class SlabfsBackendEntrypoint(BackendEntrypoint):
    """Opens a group of a slabfs container as an xarray Dataset:
    ``xr.open_dataset(path, engine="slabfs", group="/a/b")`` (group: a path,
    default the root). ``filename_or_obj`` may also be an open slabfs File or
    Group (left open when the Dataset closes)."""

    description = "Open groups of slabfs containers (.slab) in xarray"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "group", "mask_and_scale",
                               "decode_times", "concat_characters", "decode_coords", "use_cftime",
                               "decode_timedelta", "cache_bytes")

    def open_dataset(self, filename_or_obj: Any, *, drop_variables: str | Iterable[str] | None = None,
                     group: str | None = None, mask_and_scale: bool = True, decode_times: bool = True,
                     concat_characters: bool = True, decode_coords: bool = True, use_cftime: bool | None = None,
                     decode_timedelta: bool | None = None, cache_bytes: int = 64 << 20) -> XDataset:
        close: _FileCloser | None
        base: Group
        if isinstance(filename_or_obj, Group):
            close = None
            base = filename_or_obj
        else:
            f = File(filename_or_obj, "r", cache_bytes=cache_bytes)
            close = _FileCloser(f)
            base = f
        try:
            g = base[group] if group else base
            if not isinstance(g, Group):
                raise ValueError(f"{group!r} is a dataset, not a group")
            drop = set([drop_variables] if isinstance(drop_variables, str) else (drop_variables or ()))
            variables = group_variables(g, drop)
            attrs = dict(g.attrs)
            ds = XDataset(variables, attrs=attrs)
            ds = conventions.decode_cf(ds, mask_and_scale=mask_and_scale, decode_times=decode_times,
                                       concat_characters=concat_characters, decode_coords=decode_coords,
                                       use_cftime=use_cftime, decode_timedelta=decode_timedelta)
        except BaseException:
            if close is not None:
                close()
            raise
        if close is not None:
            ds.set_close(close)
        return ds

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, Group):
            return True
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if path.endswith(".slab"):
            return True
        try:
            with open(path, "rb") as fh:
                return fh.read(len(_MAGIC)) == _MAGIC
        except OSError:
            return False
