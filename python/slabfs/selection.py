"""numpy indexing of a dataset, turned into hyperslabs.

A key (``ds[key]``) is resolved against the dataset's shape into one
hyperslab -- a start, stride and count per dimension -- that the engine
transfers in one call straight into (or out of) a C-contiguous buffer of
shape ``mshape``. What numpy does beyond a hyperslab is done on that buffer
without copying: negative steps reverse axes (``flip``), integers drop
their axis and ``None`` (``np.newaxis``) adds one (``out_shape``).

Supported, as numpy does them: integers (negative ones count from the end;
out of range is IndexError), slices with any non-zero step, ``...``,
``None``, and an integer or boolean array (or list) on at most one axis,
which becomes one hyperslab per run of indices (an evenly spaced set is one
strided hyperslab).
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Selection", "select"]

# fancy_index and fancy_unique of a selection without an index array (never read).
_NO_INDEX: NDArray[Any] = np.empty(0, dtype=np.int64)


class Selection:
    """A resolved key. ``start``/``stride``/``count`` describe the hyperslab
    (one entry per dataset dimension, stride >= 1); ``mshape`` is the shape
    of the buffer it fills; ``flip`` the axes of that buffer to reverse;
    ``out_shape`` the shape numpy would give the result. With an index array
    on axis ``fancy_axis``, ``fancy_index`` holds the indices in the caller's
    order, ``fancy_unique`` the distinct ones sorted (the buffer's extent on
    that axis, ``count``); ``runs()`` gives the hyperslabs that transfer them
    (``start``/``stride`` on that axis are unused). As in numpy, the index
    array's axis of the result is where the array was in the key
    (``fancy_pos``), unless integers and the array are apart in the key
    (``fancy_front``): then it is the first axis of the result."""

    __slots__ = ("shape", "start", "stride", "count", "flip", "out_shape",
                 "fancy_axis", "fancy_index", "fancy_unique", "fancy_pos", "fancy_front")

    def __init__(self, shape: Sequence[int]) -> None:
        self.shape = tuple(shape)
        self.start: list[int] = []
        self.stride: list[int] = []
        self.count: list[int] = []
        self.flip: list[int] = []
        self.out_shape: tuple[int, ...] = ()
        self.fancy_axis: int | None = None
        self.fancy_index = _NO_INDEX
        self.fancy_unique = _NO_INDEX
        self.fancy_pos = 0
        self.fancy_front = False

    @property
    def mshape(self) -> tuple[int, ...]:
        return tuple(self.count)

    @property
    def nselect(self) -> int:
        n = 1
        for c in self.count:
            n *= c
        return n

    @property
    def is_box(self) -> bool:
        """Whether the selection is a plain box (steps of 1, no index array)."""
        return self.fancy_axis is None and all(s == 1 or c <= 1 for s, c in zip(self.stride, self.count))

    def flip_key(self) -> tuple[slice, ...]:
        """The slices that reverse the flipped axes of an ``mshape`` array."""
        return tuple(slice(None, None, -1) if d in self.flip else slice(None)
                     for d in range(len(self.count)))

    def natural_shape(self) -> tuple[int, ...]:
        """out_shape with the index array's axis at fancy_pos."""
        if not self.fancy_front:
            return self.out_shape
        rest = list(self.out_shape[1:])
        rest.insert(self.fancy_pos, self.out_shape[0])
        return tuple(rest)

    def to_numpy_order(self, arr: NDArray[Any]) -> NDArray[Any]:
        """An array of natural_shape() in the axis order numpy gives."""
        return np.moveaxis(arr, self.fancy_pos, 0) if self.fancy_front else arr

    def from_numpy_order(self, arr: NDArray[Any]) -> NDArray[Any]:
        """The inverse of to_numpy_order."""
        return np.moveaxis(arr, 0, self.fancy_pos) if self.fancy_front else arr

    def runs(self) -> list[tuple[int, int, int, int]]:
        """For an index array: the hyperslabs along the fancy axis that
        transfer ``fancy_unique``, as (position in fancy_unique, start,
        stride, count). An evenly spaced set is one run."""
        uniq = self.fancy_unique
        if uniq.size == 0:
            return []
        if uniq.size == 1:
            return [(0, int(uniq[0]), 1, 1)]
        steps = np.diff(uniq)
        if np.all(steps == steps[0]):
            return [(0, int(uniq[0]), int(steps[0]), int(uniq.size))]
        edges = [0, *(np.flatnonzero(steps != 1) + 1).tolist(), int(uniq.size)]
        return [(a, int(uniq[a]), 1, b - a) for a, b in zip(edges[:-1], edges[1:])]


def _is_index_array(k: object) -> bool:
    return isinstance(k, (list, np.ndarray)) and not isinstance(k, np.generic)


def _fancy(k: Any, n: int, axis: int) -> NDArray[Any]:
    arr = np.asarray(k)
    if arr.dtype == bool:
        if arr.ndim != 1:
            raise IndexError("a boolean index must be one-dimensional here (one axis at a time)")
        if arr.shape[0] != n:
            raise IndexError(f"boolean index did not match indexed array along dimension {axis}; "
                             f"dimension is {n} but corresponding boolean dimension is {arr.shape[0]}")
        return np.flatnonzero(arr)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if arr.ndim != 1:
        raise TypeError("an index array must be one-dimensional (slabfs reads one index array, on one axis)")
    arr = arr.astype(np.int64)
    bad = (arr < -n) | (arr >= n)
    if bad.any():
        raise IndexError(f"index {int(arr[bad][0])} is out of bounds for axis {axis} with size {n}")
    return np.where(arr < 0, arr + n, arr)


def select(shape: Sequence[int], key: Any) -> Selection:
    """Resolves ``key`` against ``shape``; raises IndexError or TypeError as
    numpy would for a bad key."""
    if not isinstance(key, tuple):
        key = (key,)
    rank = len(shape)
    ellipses = sum(1 for k in key if k is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if real > rank:
        raise IndexError(f"too many indices for dataset: dataset is {rank}-dimensional, "
                         f"but {real} were indexed")
    # (position in the key, item): numpy decides where an index array's axis
    # goes by positions in the key as written, where even an Ellipsis that
    # stands for no dimension separates two items.
    items = []
    for pos, k in enumerate(key):
        if k is Ellipsis:
            items.extend([(pos, slice(None))] * (rank - real))
        else:
            items.append((pos, k))
    if not ellipses:
        items.extend([(len(key), slice(None))] * (rank - real))

    sel = Selection(shape)
    dim = 0
    advanced: list[int] = []  # positions in items of integers and the index array
    shape_out: list[int] = []  # the result's shape, in key order
    for pos, k in items:
        if k is None:
            shape_out.append(1)
            continue
        n = shape[dim]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            r = range(start, stop, step)
            c = len(r)
            if c == 0:
                first, stride = 0, 1
            elif step > 0:
                first, stride = r[0], step
            else:
                first, stride = r[-1], -step
                if c > 1:
                    sel.flip.append(dim)
            sel.start.append(first)
            sel.stride.append(stride if c > 1 else 1)
            sel.count.append(c)
            shape_out.append(c)
        elif isinstance(k, (bool, np.bool_)):
            raise TypeError("a boolean scalar is not a valid dataset index")
        elif isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
            k = int(k)
            if k < -n or k >= n:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {n}")
            sel.start.append(k + n if k < 0 else k)
            sel.stride.append(1)
            sel.count.append(1)
            advanced.append(pos)
        elif _is_index_array(k):
            if sel.fancy_axis is not None:
                raise TypeError("slabfs datasets take at most one index array (like h5py); "
                                "read a hyperslab and index the numpy array")
            idx = _fancy(k, n, dim)
            sel.fancy_axis = dim
            sel.fancy_index = idx
            sel.fancy_unique = np.unique(idx)
            sel.fancy_pos = len(shape_out)
            advanced.append(pos)
            sel.start.append(0)
            sel.stride.append(1)
            sel.count.append(int(sel.fancy_unique.size))
            shape_out.append(int(idx.size))
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise TypeError(f"dataset indices must be integers, slices, '...', None or one "
                                f"integer/boolean array, not {type(k).__name__}") from None
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            sel.start.append(i + n if i < 0 else i)
            sel.stride.append(1)
            sel.count.append(1)
            advanced.append(pos)
        dim += 1
    out = tuple(shape_out)
    if sel.fancy_axis is not None and advanced[-1] - advanced[0] + 1 != len(advanced):
        # numpy: advanced indices (integers count, next to an array) that are
        # apart in the key put their axis first.
        sel.fancy_front = True
        out = (out[sel.fancy_pos],) + out[:sel.fancy_pos] + out[sel.fancy_pos + 1:]
    sel.out_shape = out
    return sel
