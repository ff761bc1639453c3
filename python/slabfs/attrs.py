"""Attributes of groups and datasets: ``obj.attrs`` as a MutableMapping."""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any, Protocol, Union

import numpy as np
from numpy.typing import DTypeLike, NDArray

from . import _slabfs
from .creation import SCALAR_ATTR, normalize_dtype, numpy_dtype

__all__ = ["AttributeManager", "AttributeOwner"]

# What an attribute reads as: str (bytes if not UTF-8), a numpy scalar for
# one number, a 1-D numpy array for several.
AttributeValue = Union[str, bytes, np.generic, NDArray[Any]]


class AttributeOwner(Protocol):
    """What the attributes of an object need of it (slabfs.base.Node has it)."""

    @property
    def id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def _c(self) -> _slabfs.AnyContainer: ...

    @property
    def _scalar(self) -> bool: ...


def encode(value: object) -> tuple[str, str, bytes]:
    """(kind, dtype, bytes) of an attribute value: a str or bytes is a
    string; a number, a sequence of numbers or a 0-/1-D numpy array of
    i1..i8, u1..u8, f4, f8 (bool is stored as u1, float16 as f4) is numeric."""
    if isinstance(value, str):
        return "string", "", value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "string", "", bytes(value)
    arr = np.asarray(value)
    if arr.dtype.kind == "U" and arr.ndim == 0:
        return encode(str(arr))
    if arr.dtype.kind == "S" and arr.ndim == 0:
        return encode(bytes(arr))
    if arr.dtype.kind == "b":
        arr = arr.astype("u1")
    elif arr.dtype.kind == "f" and arr.dtype.itemsize == 2:
        arr = arr.astype("f4")
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"attribute values are strings, numbers or arrays of numbers, not {arr.dtype} "
                        f"({type(value).__name__})")
    name = normalize_dtype(arr.dtype)
    if arr.ndim > 1:
        raise ValueError(f"attribute arrays are one-dimensional, not of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("an attribute array cannot be empty")
    return "numeric", name, np.ascontiguousarray(arr, dtype=numpy_dtype(name)).reshape(-1).tobytes()


def decode(kind: str, dtype: str | None, data: bytes) -> AttributeValue:
    """The Python value of an attribute: str (bytes if it is not UTF-8), a
    numpy scalar for one number, a 1-D numpy array for several."""
    if kind == "string":
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data
    assert dtype is not None  # a numeric attribute has one
    arr = np.frombuffer(data, dtype=numpy_dtype(dtype)).copy()
    return arr[0] if arr.size == 1 else arr


class AttributeManager(MutableMapping[str, Any]):
    """The attributes of one group or dataset, like h5py's ``.attrs``.

    Values are strings, numbers and 1-D arrays of numbers (up to 64 KiB
    each). A single number reads back as a numpy scalar, several as a 1-D
    array. Changes are durable at the file's next commit (``flush``/close).
    A missing name is KeyError; a bad name or value ValueError or TypeError;
    a read-only file OSError(EROFS).

    The marker _SLAB_SCALAR of a scalar dataset is not listed: it belongs
    to the dataset's shape, not to its attributes."""

    def __init__(self, parent: AttributeOwner) -> None:
        self._parent = parent

    @property
    def _c(self) -> _slabfs.AnyContainer:
        return self._parent._c

    def _hidden(self, name: str) -> bool:
        return name == SCALAR_ATTR and self._parent._scalar

    def _names(self) -> list[str]:
        names = self._c.attr_names(self._parent.id)
        if SCALAR_ATTR in names and self._hidden(SCALAR_ATTR):
            names = [n for n in names if n != SCALAR_ATTR]
        return names

    def __getitem__(self, name: str | bytes) -> AttributeValue:
        name = _name(name)
        if self._hidden(name):
            raise KeyError(f"{self._parent.name} has no attribute {name!r}")
        return decode(*self._c.get_attr(self._parent.id, name))

    def __setitem__(self, name: str | bytes, value: Any) -> None:
        name = _name(name)
        if self._hidden(name):
            raise ValueError(f"{name} is slabfs's marker of a scalar dataset")
        self._c.set_attr(self._parent.id, name, *encode(value))

    def __delitem__(self, name: str | bytes) -> None:
        name = _name(name)
        if self._hidden(name):
            raise KeyError(f"{self._parent.name} has no attribute {name!r}")
        self._c.del_attr(self._parent.id, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, (str, bytes)):
            return False
        return _name(name) in self._names()

    def create(self, name: str | bytes, data: Any, shape: Sequence[int] | None = None,
               dtype: DTypeLike = None) -> None:
        """Creates or replaces attribute `name` with `data` converted to
        `dtype` and reshaped to `shape` (h5py's signature)."""
        if dtype is not None or shape is not None:
            data = np.asarray(data, dtype=dtype)
            if shape is not None:
                data = data.reshape(shape)
        self[name] = data

    def modify(self, name: str | bytes, value: Any) -> None:
        """Sets `name` to `value`; an existing numeric attribute keeps its
        dtype (the value is converted to it) and its number of elements
        (another is TypeError), as in h5py."""
        if name in self:
            kind, dtype, data = self._c.get_attr(self._parent.id, _name(name))
            if kind == "numeric" and not isinstance(value, (str, bytes)):
                assert dtype is not None  # a numeric attribute has one
                dt = numpy_dtype(dtype)
                value = np.asarray(value, dtype=dt)
                if value.size != len(data) // dt.itemsize:
                    raise TypeError(f"attribute {name!r} has {len(data) // dt.itemsize} elements; "
                                    f"modify cannot give it {value.size}")
        self[name] = value

    def __repr__(self) -> str:
        try:
            return f"<Attributes of slabfs object {self._parent.name!r}: {list(self)}>"
        except (ValueError, OSError):
            return "<Attributes of a closed slabfs object>"


def _name(name: object) -> str:
    if isinstance(name, bytes):
        name = name.decode("utf-8")
    if not isinstance(name, str):
        raise TypeError(f"attribute names are strings, not {type(name).__name__}")
    return name
