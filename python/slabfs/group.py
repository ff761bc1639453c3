"""slabfs.Group: a group of a container as a mapping of names to groups
and datasets, like an h5py Group."""
from __future__ import annotations

import posixpath
from collections.abc import Callable, ItemsView, Iterator, KeysView, MutableMapping, Sequence, ValuesView
from typing import Any, TypeVar, Union

import numpy as np
from numpy.typing import DTypeLike

from . import _slabfs
from .attrs import encode
from .base import ROOT_ID, Node
from .creation import SCALAR_ATTR, dataset_options, normalize_dtype
from .dataset import Dataset
from .errors import CopyExistsError, CopySourceError

__all__ = ["Group"]

T = TypeVar("T")


class Group(Node, MutableMapping[str, Union["Group", Dataset]]):
    """A group: a mapping from names to groups and datasets.

    ``g['a/b']`` (relative, or absolute from the root with a leading '/'),
    ``'a/b' in g``, ``g.keys()``, iteration (names, sorted), ``len(g)``,
    ``del g['x']`` (a group with everything in it), ``g['x'] = array``
    (creates a dataset), create_group, require_group, create_dataset,
    require_dataset, copy, move, visit, visititems, ``.attrs``, ``.name``,
    ``.parent``, ``.file``; keys(), values() and items() are views that
    follow the group and reverse.

    A missing name is KeyError; creating a name that exists ValueError;
    a change to a read-only file OSError(EROFS)."""

    # ------------------------------------------------------------ names
    def _lookup(self, name: object) -> int:
        """The id a name (relative to this group, or absolute) refers to."""
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        if not isinstance(name, str):
            raise TypeError(f"group members are named by strings, not {type(name).__name__}")
        oid = ROOT_ID if name.startswith("/") else self._id
        for part in name.split("/"):
            if part in ("", "."):
                continue
            oid = self._c.lookup(oid, part)
        return oid

    def _group(self, oid: int) -> Group:
        """The group with object id `oid` in this group's file."""
        return Group(self._file, oid)

    def _object(self, oid: int) -> Group | Dataset:
        if self._c.stat(oid)["kind"] == "group":
            return Group(self._file, oid)
        return Dataset(self._file, self._c.open_dataset(oid))

    def _split(self, name: object) -> tuple[int, str]:
        """(parent id, last name) of a path to create or remove; the parent
        must exist."""
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        if not isinstance(name, str):
            raise TypeError(f"group members are named by strings, not {type(name).__name__}")
        head, _, last = name.rstrip("/").rpartition("/")
        if last in ("", ".", ".."):
            raise ValueError(f"{name!r} does not name a new member")
        if name.startswith("/") and not head:
            head = "/"
        return (self._lookup(head) if head else self._id), last

    def __getitem__(self, name: str | bytes) -> Group | Dataset:
        return self._object(self._lookup(name))

    def get(self, name: str | bytes, default: Any = None, getclass: bool = False) -> Any:
        """The member `name`, or `default` if there is none; with getclass,
        its class (Group or Dataset) instead."""
        try:
            oid = self._lookup(name)
        except KeyError:
            return default
        if getclass:
            return Group if self._c.stat(oid)["kind"] == "group" else Dataset
        return self._object(oid)

    def __contains__(self, name: object) -> bool:
        # h5py: the empty name is no member (it is not this group either).
        if name in ("", b""):
            return False
        try:
            self._lookup(name)
            return True
        except (KeyError, ValueError, TypeError):
            return False

    def __iter__(self) -> Iterator[str]:
        for name, _, _ in self._c.list(self._id):
            yield name

    def __len__(self) -> int:
        return self._c.stat(self._id)["num_children"]

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self))

    def keys(self) -> _Keys:
        return _Keys(self)

    def values(self) -> _Values:
        return _Values(self)

    def items(self) -> _Items:
        return _Items(self)

    def __setitem__(self, name: str | bytes, value: Any) -> None:
        """``g[name] = array`` creates a dataset holding the array."""
        if isinstance(value, (Group, Dataset)):
            raise TypeError("slabfs has no hard or soft links: copy the data, or move() the object")
        self.create_dataset(name, data=value)

    def __delitem__(self, name: str | bytes) -> None:
        """Removes a dataset, or a group with everything in it (as h5py does)."""
        parent, last = self._split(name)
        oid = self._c.lookup(parent, last)
        if self._c.stat(oid)["kind"] == "group":
            self._remove_children(oid)
        self._c.remove(parent, last)

    def _remove_children(self, oid: int) -> None:
        for child, cid, kind in self._c.list(oid):
            if kind == "group":
                self._remove_children(cid)
            self._c.remove(oid, child)

    # ------------------------------------------------------------ creating
    def create_group(self, name: str | bytes, track_order: bool | None = None) -> Group:
        """Creates group `name` (with any missing groups on its path) and
        returns it. ValueError if the name exists."""
        del track_order  # names are always listed sorted
        parent, last = self._split_creating(name)
        oid = self._c.create_group(parent, last)
        return Group(self._file, oid)

    def require_group(self, name: str | bytes) -> Group:
        """The group `name`, created (with its path) if missing. TypeError if
        a dataset has that name."""
        oid = self._lookup_or_none(name)
        if oid is None:
            return self.create_group(name)
        if self._c.stat(oid)["kind"] != "group":
            raise TypeError(f"incompatible object (Dataset) already exists at {name!r}")
        return Group(self._file, oid)

    def _lookup_or_none(self, name: object) -> int | None:
        try:
            return self._lookup(name)
        except KeyError:
            return None

    def _split_creating(self, name: object) -> tuple[int, str]:
        """(parent id, last name) for a new member, creating the groups on
        its path that are missing."""
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        if not isinstance(name, str):
            raise TypeError(f"group members are named by strings, not {type(name).__name__}")
        head, _, last = name.rstrip("/").rpartition("/")
        if last in ("", ".", ".."):
            raise ValueError(f"{name!r} does not name a new member")
        if name.startswith("/") and not head:
            head = "/"
        return (self.require_group(head).id if head else self._id), last

    def create_dataset(self, name: str | bytes, shape: int | Sequence[int] | None = None,
                       dtype: DTypeLike = None, data: Any = None, *,
                       chunks: bool | int | Sequence[int] | None = None,
                       maxshape: int | Sequence[int | None] | None = None,
                       compression: str | int | None = None, compression_opts: int | None = None,
                       shuffle: bool = False, fletcher32: bool = False, fillvalue: Any = None,
                       sparse: bool = False, index: str = "auto", scaleoffset: Any = None,
                       track_times: bool | None = None, track_order: bool | None = None, external: Any = None,
                       efile_prefix: Any = None, virtual_prefix: Any = None,
                       allow_unknown_filter: bool = False) -> Dataset:
        """Creates dataset `name` and returns it (h5py's arguments).

        shape     -- tuple (or int); from `data` if omitted
        dtype     -- i1 i2 i4 i8 u1 u2 u4 u8 f4 f8 (any numpy spelling);
                     default f4, or data's dtype
        data      -- array-like written to the new dataset
        chunks    -- chunk shape; None or True: chosen automatically
        maxshape  -- maximum shape, None in a dimension for unlimited;
                     default: the shape (fixed)
        compression='gzip' (or an int 1-9), compression_opts=level (default 4)
        shuffle   -- byte shuffle before compression
        fletcher32 -- a checksum on every chunk (CRC-32C), verified on read
        fillvalue -- what unwritten elements read as (default 0)
        sparse    -- keep only the elements written (see erase, defined)
        index     -- the chunk index kind ("auto", "single", "compact",
                     "fixed", "extensible", "btree")
        track_times, track_order, efile_prefix, virtual_prefix,
        allow_unknown_filter -- h5py's, accepted (nothing to set); external
                     storage (`external`) is ValueError: chunks live in the
                     container

        ValueError if the name exists or an argument is bad (nothing is
        created then, and a failed write of `data` removes the dataset)."""
        del track_order, efile_prefix, virtual_prefix, allow_unknown_filter
        if external not in (None, False, ()):
            raise ValueError("slabfs datasets have no external storage: their chunks live in the container")
        if track_times not in (None, True, False):
            raise TypeError("track_times must be True or False")
        options, data, scalar = dataset_options(shape, dtype, data, chunks, maxshape, compression,
                                                compression_opts, shuffle, fletcher32, fillvalue, sparse,
                                                index, scaleoffset)
        parent, last = self._split_creating(name)
        handle = self._c.create_dataset(parent, last, **options)
        try:
            if scalar:
                self._c.set_attr(handle.id, SCALAR_ATTR, *encode(np.int64(1)))
            ds = Dataset(self._file, handle)
            if data is not None:
                ds[...] = data.reshape(ds.shape)
        except BaseException:
            # No partial dataset: remove what was created.
            self._c.remove(parent, last)
            raise
        return ds

    def require_dataset(self, name: str | bytes, shape: int | Sequence[int], dtype: DTypeLike,
                        exact: bool = False, **kwds: Any) -> Dataset:
        """The dataset `name` if it exists with this shape and a dtype that
        `dtype` converts to losslessly (exactly `dtype` with exact=True);
        otherwise created. TypeError if what exists does not fit."""
        oid = self._lookup_or_none(name)
        if oid is None:
            return self.create_dataset(name, shape, dtype, **kwds)
        obj = self._object(oid)
        if not isinstance(obj, Dataset):
            raise TypeError(f"incompatible object (Group) already exists at {name!r}")
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if obj.shape != shape:
            raise TypeError(f"shapes do not match (existing {obj.shape} vs new {shape})")
        want = normalize_dtype(dtype)
        have = normalize_dtype(obj.dtype)
        if exact and want != have:
            raise TypeError(f"datatypes do not exactly match (existing {have} vs new {want})")
        if not np.can_cast(np.dtype(want), obj.dtype):
            raise TypeError(f"datatypes cannot be safely cast (existing {have} vs new {want})")
        return obj

    def create_dataset_like(self, name: str | bytes, other: Dataset, **kwds: Any) -> Dataset:
        """Creates a dataset with the shape, dtype, chunks, maxshape, fill
        value, filters and sparseness of `other`; keywords override."""
        args: dict[str, Any] = dict(shape=other.shape, dtype=other.dtype, chunks=other.chunks, maxshape=other.maxshape,
                    fillvalue=other.fillvalue, compression=other.compression,
                    compression_opts=other.compression_opts, shuffle=other.shuffle,
                    fletcher32=other.fletcher32, sparse=getattr(other, "sparse", False))
        args.update(kwds)
        return self.create_dataset(name, **args)

    def copy(self, source: str | bytes | Group | Dataset, dest: str | bytes | Group, name: str | bytes | None = None,
             shallow: bool = False, expand_soft: bool = False, expand_external: bool = False,
             expand_refs: bool = False, without_attrs: bool = False) -> None:
        """Copies a group (with everything in it) or a dataset, as h5py's
        Group.copy; the source and destination may be in different files.

        source -- a path (relative to this group, or absolute) or a Group or
                  Dataset of any open file
        dest   -- a path relative to this group (missing groups on it are
                  created), or a Group: the copy is made in it, named `name`
                  or else as the source is named
        shallow -- copy a group's immediate members only (its subgroups
                  come out empty)
        without_attrs -- leave attributes behind

        A dataset keeps its dtype, shape, max shape, chunks, fill value,
        filters, sparseness and index kind; only its stored chunks (or, if
        sparse, its defined elements) are copied, so never-written ones stay
        unallocated. A copy of a group into itself copies what it held before
        the copy began. The expand_* flags concern HDF5 links and references,
        which slabfs has not: they are accepted and change nothing. A copy
        that fails part way (a full disk, a damaged chunk) leaves what it
        made so far; the file's next commit keeps it.

        A missing source: KeyError (also a RuntimeError, as h5py); a
        destination that exists: ValueError (also a RuntimeError); a Dataset
        as the destination: TypeError; no name to give the copy: ValueError;
        a read-only destination file: OSError(EROFS)."""
        del expand_soft, expand_external, expand_refs
        if isinstance(source, (Group, Dataset)):
            src = source
        elif isinstance(source, (str, bytes)):
            try:
                src = self[source]
            except KeyError:
                raise CopySourceError(f"cannot copy {source!r}: no such object in {self.name}") from None
        else:
            raise TypeError(f"the source is a path, a Group or a Dataset, not {type(source).__name__}")
        if isinstance(dest, Group):
            target = dest
            dest_path = posixpath.basename(src.name) if name is None else name
        elif isinstance(dest, Dataset):
            raise TypeError("the destination is a path or a Group, not a Dataset")
        elif isinstance(dest, (str, bytes)):
            target, dest_path = self, dest
        else:
            raise TypeError(f"the destination is a path or a Group, not {type(dest).__name__}")
        if isinstance(dest_path, bytes):
            dest_path = dest_path.decode("utf-8")
        if not dest_path.strip("/"):
            raise ValueError("no destination name: give `name`, or copy to a path")
        if target._lookup_or_none(dest_path) is not None:
            raise CopyExistsError(f"cannot copy to {dest_path!r} in {target.name}: it exists")
        # The whole source is listed before anything is made, so a copy into
        # the source itself does not copy the copy.
        plan: list[tuple[str, Group | Dataset]] = [("", src)]
        if isinstance(src, Group):
            if shallow:
                plan += [(n, src[n]) for n in src]
            else:
                src.visititems(lambda n, o: plan.append((n, o)))
        parent, last = target._split_creating(dest_path)
        made: dict[str, int] = {}
        for rel, obj in plan:
            if rel:
                p_id, leaf = made[posixpath.dirname(rel)], posixpath.basename(rel)
            else:
                p_id, leaf = parent, last
            if isinstance(obj, Group):
                made[rel] = target._c.create_group(p_id, leaf)
            else:
                made[rel] = _copy_dataset(obj, target._c, p_id, leaf)
            _copy_attrs(obj, target._c, made[rel], without_attrs)

    def move(self, source: str | bytes, dest: str | bytes) -> None:
        """Moves or renames `source` to `dest` (paths relative to this group).
        ValueError if `dest` exists."""
        sp, sn = self._split(source)
        dp, dn = self._split_creating(dest)
        self._c.rename(sp, sn, dp, dn, True)

    # ------------------------------------------------------------ walking
    def visit(self, func: Callable[[str], T | None]) -> T | None:
        """Calls func(name) for every object below this group (names relative
        to it, parents before children, sorted); stops and returns the first
        value that is not None."""
        return self.visititems(lambda name, obj: func(name))

    def visititems(self, func: Callable[[str, Group | Dataset], T | None]) -> T | None:
        """Calls func(name, object) for every object below this group, as
        visit() does."""
        def walk(oid: int, prefix: str) -> T | None:
            for child, cid, kind in self._c.list(oid):
                name = prefix + child
                obj: Group | Dataset
                obj = Group(self._file, cid) if kind == "group" else Dataset(self._file, self._c.open_dataset(cid))
                r = func(name, obj)
                if r is not None:
                    return r
                if kind == "group":
                    r = walk(cid, name + "/")
                    if r is not None:
                        return r
            return None
        return walk(self._id, "")

    # ------------------------------------------------------------ Python protocols
    def __reduce__(self) -> Any:
        raise TypeError("slabfs groups and files do not pickle: pickle a Dataset, or reopen with "
                        "slabfs.File(path, 'r')")

    def __repr__(self) -> str:
        if self._c.closed:
            return "<Closed slabfs group>"
        return f'<slabfs Group "{self.name}" ({len(self)} members)>'


class _Keys(KeysView[str]):
    """Group.keys(): a view of the member names that follows the group."""

    _mapping: Group

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._mapping))


class _Values(ValuesView[Union[Group, Dataset]]):
    _mapping: Group

    def __reversed__(self) -> Iterator[Group | Dataset]:
        return (self._mapping[k] for k in reversed(list(self._mapping)))


class _Items(ItemsView[str, Union[Group, Dataset]]):
    _mapping: Group

    def __reversed__(self) -> Iterator[tuple[str, Group | Dataset]]:
        return ((k, self._mapping[k]) for k in reversed(list(self._mapping)))


# Group.copy moves data this many bytes at a time.
_COPY_BLOCK_BYTES = 64 << 20


def _copy_dataset(src: Dataset, dest_c: _slabfs.AnyContainer, parent: int, name: str) -> int:
    """Creates a copy of Dataset `src` as `name` in group `parent` of
    container `dest_c`; returns its id. The stored chunks (the defined
    elements of a sparse dataset) are copied a block at a time."""
    i = src._info()
    handle = dest_c.create_dataset(parent, name, dtype=i["dtype"], shape=list(i["shape"]),
                                   maxshape=list(i["maxshape"]), chunks=list(i["chunks"]), fill=i["fill"],
                                   filters=i["filters"], sparse=i["sparse"], index=i["index"])
    shape = list(i["shape"])
    if all(shape):
        dt = np.dtype("<" + i["dtype"])
        for start, count in src._h.defined([0] * len(shape), shape):
            row = max(1, int(np.prod(count[1:], dtype=np.int64)) * dt.itemsize)
            step = max(1, _COPY_BLOCK_BYTES // row)
            for a in range(0, count[0], step):
                s, c = list(start), list(count)
                s[0], c[0] = start[0] + a, min(step, count[0] - a)
                buf = np.empty(c, dt)
                src._h.read(s, [1] * len(s), c, buf)
                handle.write(s, [1] * len(s), c, buf)
    return handle.id


def _copy_attrs(src: Node, dest_c: _slabfs.AnyContainer, oid: int, without_attrs: bool) -> None:
    """Copies the attributes of `src` to object `oid` of `dest_c`: all of
    them, or with without_attrs only the marker that makes a scalar."""
    c = src._c
    if src._scalar and SCALAR_ATTR not in c.attr_names(src.id):
        # A scalar of an HDF5 file (StoreDatasetInfo.scalar) has no marker of its own.
        dest_c.set_attr(oid, SCALAR_ATTR, *encode(np.int64(1)))
    for n in c.attr_names(src.id):
        if without_attrs and n != SCALAR_ATTR:
            continue
        kind, dtype, data = c.get_attr(src.id, n)
        dest_c.set_attr(oid, n, kind, dtype or "", data)
