"""The base of every object of a container -- Group, Dataset and File (the
root group) -- as h5py's HLObject: an object id in the container of a File,
with what every object has: id, file, name, parent, attrs, equality (the
same object of the same open container) and truth (False once the file is
closed)."""
from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from . import _slabfs
from .attrs import AttributeManager

if TYPE_CHECKING:
    # For annotations only: files and group are layers above this one, and
    # their classes reach this module as the objects it is given.
    from .files import File
    from .group import Group

__all__ = ["Node", "ROOT_ID"]

# The object id of the root group.
ROOT_ID = 1


class Node:
    """An object of a container: a group, a dataset or the File itself.

    ``id`` is the object id (stable across renames and moves, never reused),
    ``name`` its path, ``file`` its File, ``parent`` the group holding it,
    ``attrs`` its attributes. Two objects are equal when they are the same
    object of the same open File. Once the file is closed ``bool(obj)`` is
    False and everything else raises ValueError."""

    def __init__(self, file: File, oid: int) -> None:
        self._file = file
        self._id = oid

    @property
    def _c(self) -> _slabfs.AnyContainer:
        """The File's open container (or foreign file, read-only)."""
        return self._file._container

    @property
    def _scalar(self) -> bool:
        """Whether this is a scalar dataset (whose marker attribute the
        attributes hide); Dataset overrides it."""
        return False

    @property
    def id(self) -> int:
        """The object id (the root group's is 1): stable across renames and
        moves, never reused."""
        return self._id

    @property
    def file(self) -> File:
        """The File this object belongs to."""
        return self._file

    @property
    def name(self) -> str:
        """The path of the object in its container ("/a/b"; "/" for the root)."""
        return self._c.path_of(self._id)

    @property
    def parent(self) -> Group:
        """The group holding this object; the root's parent is the root (a
        Group, also for a File, as in h5py)."""
        if self._id == ROOT_ID:
            return self._file._group(ROOT_ID)
        return self._file._group(self._c.resolve(posixpath.dirname(self.name) or "/"))

    @property
    def attrs(self) -> AttributeManager:
        """The attributes, a mutable mapping (see AttributeManager)."""
        return AttributeManager(self)

    def __eq__(self, other: object) -> bool:
        # Against anything else, let the other side decide (as h5py): a
        # numpy scalar compares with a Dataset element by element through
        # its __array__.
        if not isinstance(other, Node):
            return NotImplemented
        return other._c is self._c and other._id == self._id

    def __hash__(self) -> int:
        return hash((id(self._c), self._id))

    def __bool__(self) -> bool:
        return not self._c.closed
