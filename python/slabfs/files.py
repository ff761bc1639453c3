"""slabfs.File: a container file opened like an h5py File."""
from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from typing import Any, Literal

from . import _slabfs
from .base import ROOT_ID
from .dataset import Dataset
from .group import Group
from .reopen import register_writer, shared_reader

__all__ = ["File"]

_MODES = {"r", "r+", "w", "w-", "x", "a"}


class File(Group):
    """A slabfs container (``.slab`` file), opened like ``h5py.File``; it is
    also its root group.

    mode:
      'r'        read only, the file must exist (default)
      'r+'       read and write, the file must exist
      'w'        create, replacing any existing file
      'w-', 'x'  create, FileExistsError if the file exists
      'a'        read and write if the file exists, create it otherwise

    Writing takes an exclusive lock on the container: a second writer (a
    mount, `slab`, another File) gets OSError(EBUSY) naming the holder.
    A read-only File reads the last commit made before it opened (refresh()
    moves it to the newest). Changes become durable and visible to others
    atomically at flush() (a commit) and at close(); discard() closes without
    committing. ``with slabfs.File(...) as f:`` closes (and so commits) on
    the way out, as h5py does, even after an exception.

    cache_bytes     -- the chunk cache's budget (default 64 MiB)
    cache_max_bytes -- how far the cache may grow when the working set does
                       not fit (default: it does not grow)
    swmr            -- accepted for h5py compatibility and ignored: readers
                       follow writers without a special mode
    driver          -- None or 'sec2' (HDF5's other drivers: ValueError)
    libver, rdcc_nslots, rdcc_nbytes, rdcc_w0, track_order, locking --
                       h5py's HDF5 tuning, accepted and ignored (the chunk
                       cache is cache_bytes; writers always take the lock)

    HDF5 and netCDF-4 files (found by their signature, whatever their name)
    and Zarr v2 and v3 directory stores (found by .zgroup, .zarray or
    zarr.json) open read-only, mode 'r' only: groups, datasets, attrs and
    slicing work as for a container, read through slabfs's HDF5 or Zarr
    store (its chunk cache is cache_bytes). What the store cannot show (variable-length strings,
    compound types, filters other than deflate, shuffle and fletcher32, ...)
    is absent and listed by skipped(). Any change is OSError(EROFS); another
    mode is OSError(EROFS) before anything is touched; refresh() and space()
    are OSError(ENOTSUP). ``slab import`` copies such a file into a
    container.

    Errors: FileNotFoundError, FileExistsError, OSError(EBUSY),
    OSError(EIO) for a damaged file, OSError(ENOTSUP) for a file that is
    neither a container nor HDF5 nor Zarr (or for HDF5 or Zarr when this
    module was built without libhdf5 or blosc).
    """

    def __init__(self, name: str | bytes | os.PathLike[str] | os.PathLike[bytes], mode: str = "r",
                 driver: str | None = None, libver: Any = None, userblock_size: int | None = None,
                 swmr: bool = False, rdcc_nslots: int | None = None, rdcc_nbytes: int | None = None,
                 rdcc_w0: float | None = None, track_order: bool | None = None, locking: Any = None, *,
                 cache_bytes: int = 64 << 20, cache_max_bytes: int = 0, holder: str = "python") -> None:
        # h5py's tuning of HDF5 (format versions, its per-dataset chunk
        # caches, creation order, file locking) has nothing to set here.
        del swmr, libver, rdcc_nslots, rdcc_nbytes, rdcc_w0, track_order, locking
        if driver not in (None, "sec2"):
            raise ValueError(f"driver {driver!r}: slabfs files have no HDF5 drivers (only None or 'sec2')")
        if userblock_size not in (None, 0):
            raise ValueError("slabfs files have no user block")
        path = os.fsdecode(os.fspath(name))
        if mode not in _MODES:
            raise ValueError(f"invalid mode {mode!r}; must be one of r, r+, w, w-, x, a")
        file_format = _slabfs.file_format(path)
        if os.path.isdir(path) and file_format != "zarr":
            raise IsADirectoryError(errno.EISDIR, "a container is a file, not a directory", path)

        def open_(read_only: bool, create: bool) -> _slabfs.Container:
            return _slabfs.Container.open(path, read_only, create, int(cache_bytes), int(cache_max_bytes),
                                          holder)

        c: _slabfs.AnyContainer
        if file_format in ("hdf5", "zarr"):
            what = "a Zarr store" if file_format == "zarr" else "an HDF5 file"
            if mode != "r":
                raise OSError(errno.EROFS, f"{what}: slabfs opens HDF5 and netCDF-4 files and Zarr stores "
                              f"read-only (mode 'r', not {mode!r}); `slab import` copies one into a container",
                              path)
            c = _slabfs.Store.open(path, int(cache_bytes))
        elif mode == "r":
            c = open_(True, False)
        elif mode == "r+":
            c = open_(False, False)
        elif mode in ("w-", "x"):
            c = open_(False, True)
        elif mode == "w":
            c = _replace(path, open_)
        else:  # "a"
            try:
                c = open_(False, False)
            except FileNotFoundError:
                try:
                    c = open_(False, True)
                except FileExistsError:  # created meanwhile by someone else
                    c = open_(False, False)
        self._container = c
        self._filename = path
        self._realpath = os.path.realpath(path)
        super().__init__(self, ROOT_ID)
        if not c.read_only:
            register_writer(self._realpath, self)

    @property
    def filename(self) -> str:
        """The path the file was opened with."""
        return self._filename

    @property
    def mode(self) -> Literal["r", "r+"]:
        """'r' for a read-only file, 'r+' for a writable one (as h5py)."""
        return "r" if self._container.read_only else "r+"

    @property
    def closed(self) -> bool:
        return self._container.closed

    @property
    def format(self) -> str:
        """What the file is: "slab" (a container), "hdf5" (an HDF5 or
        netCDF-4 file, read-only) or "zarr" (a Zarr v2 or v3 directory
        store, read-only)."""
        return self._container.format if isinstance(self._container, _slabfs.Store) else "slab"

    def skipped(self) -> list[tuple[str, str]]:
        """What an HDF5 or netCDF-4 file or a Zarr store holds that slabfs
        does not show, as (path, reason) pairs ("/a/b attribute 'c'" for an attribute); empty
        for a container, which holds nothing it cannot show."""
        if isinstance(self._container, _slabfs.Store):
            return list(self._container.skipped())
        return []

    def flush(self) -> None:
        """Commits: every change so far becomes durable and visible to
        readers that open or refresh afterwards, atomically. A no-op when
        nothing changed or the file is read-only."""
        if not self._container.read_only:
            self._container.commit()

    commit = flush

    def refresh(self) -> _slabfs.RefreshInfo:
        """Moves a read-only file to the newest commit: existing Dataset
        objects see new shapes and contents, names and attributes are those
        of the new commit. Returns a dict (generation, changed,
        changed_objects, removed_objects). A writable file always sees its
        own newest state."""
        return self._container.refresh()

    def close(self) -> None:
        """Commits (when writable) and closes. Every Group and Dataset of the
        file is unusable afterwards (ValueError). Closing twice is fine."""
        self._container.close(True)

    def discard(self) -> None:
        """Closes without committing: changes since the last commit are
        dropped, and the file stays as that commit left it."""
        self._container.close(False)

    def cache_stats(self) -> _slabfs.CacheStats:
        """The chunk cache's counters (hits, misses, bytes read and written, ...)."""
        return self._container.cache_stats()

    def space(self) -> _slabfs.SpaceInfo:
        """File size, free space inside it, objects and commits so far."""
        return self._container.space()

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def _reduce_dataset(self, name: str) -> tuple[Callable[[str, str], Group | Dataset], tuple[str, str]]:
        """How dataset `name` of this file pickles: by (container path,
        dataset path), reopened by _reopen_dataset."""
        return _reopen_dataset, (self._realpath, name)

    def __repr__(self) -> str:
        if self._container.closed:
            return "<Closed slabfs file>"
        return f'<slabfs File "{os.path.basename(self._filename)}" (mode {self.mode})>'


def _reopen_dataset(path: str, name: str) -> Group | Dataset:
    """Unpickles a Dataset: dataset `name` of the container at `path`, from
    this process's File for that container (slabfs.reopen.shared_reader)."""
    return shared_reader(path, _open_read_only)[name]


def _open_read_only(path: str) -> File:
    return File(path, "r")


def _replace(path: str, open_: Callable[[bool, bool], _slabfs.Container]) -> _slabfs.Container:
    """mode 'w': a new empty container at `path`. An existing container is
    replaced only if no one writes to it (its lock is taken first, so a
    mounted container is OSError(EBUSY), not pulled from under the mount);
    any other file is replaced. The new file is created beside it and
    renamed over it, so readers of the old one keep reading it."""
    if not os.path.lexists(path):
        try:
            return open_(False, True)
        except FileExistsError:
            pass
    old = None
    try:
        old = open_(False, False)
    except OSError as e:
        if getattr(e, "slabfs_code", None) not in ("corruption", "not supported"):
            raise  # busy, permission, I/O: leave the file alone
    try:
        d, base = os.path.split(os.path.abspath(path))
        tmp = os.path.join(d, f".{base}.new-{secrets.token_hex(4)}")
        open_tmp = _slabfs.Container.open(tmp, False, True, 1 << 20, 0, "python")
        open_tmp.close(True)
        try:
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    finally:
        if old is not None:
            old.close(False)
    return open_(False, False)
