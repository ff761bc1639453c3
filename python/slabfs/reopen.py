"""Datasets that travel between processes: this process's File for each
container.

A pickled Dataset is (container path, dataset path). Unpickling it in a
process that has the container open for writing (a File in this process)
gives a handle on that File. Anywhere else it opens the container read-only,
once per process and path, and keeps that File for every dataset unpickled
later -- the Dask workers' case. When the container file has changed since
(a writer committed: its size, mtime or inode differ), the cached File
moves to the newest commit (File.refresh) or is
reopened, so a new computation sees what the writer committed.

This module holds the registry only; the File (slabfs.files) registers
itself as a writer and says how to open a reader, so nothing here imports
the layers above.
"""
from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

__all__ = ["shared_reader", "register_writer"]


class OpenFile(Protocol):
    """What the registry needs of a File."""

    @property
    def closed(self) -> bool: ...

    def refresh(self) -> object: ...


F = TypeVar("F", bound=OpenFile)

_lock = threading.Lock()
_writers: dict[str, weakref.ref[Any]] = {}  # realpath -> weakref to a writable File of this process
_readers: dict[str, tuple[int, tuple[int, int, int, int], Any]] = {}  # realpath -> (pid, signature, File)


def register_writer(realpath: str, f: OpenFile) -> None:
    """Records `f`, open for writing, as this process's File for the
    container at `realpath` (kept as a weak reference)."""
    with _lock:
        _writers[realpath] = weakref.ref(f)


def _signature(path: str) -> tuple[int, int, int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def shared_reader(path: str, open_read_only: Callable[[str], F]) -> F:
    """This process's File for `path`: its writable File if it has one,
    else a read-only File opened once (with `open_read_only`) and kept,
    moved to the newest commit when the file changed."""
    path = os.path.realpath(path)
    with _lock:
        ref = _writers.get(path)
        w = ref() if ref is not None else None
        if w is not None and not w.closed:
            return cast(F, w)
        sig = _signature(path)
        entry = _readers.get(path)
        if entry is not None:
            pid, old_sig, f = entry
            if pid == os.getpid() and not f.closed:
                if old_sig == sig:
                    return cast(F, f)
                if old_sig[:2] == sig[:2]:
                    f.refresh()
                    _readers[path] = (pid, sig, f)
                    return cast(F, f)
        # First use, a forked copy or a replaced file: open it. A File dropped here closes once its datasets go.
        opened = open_read_only(path)
        _readers[path] = (os.getpid(), sig, opened)
        return opened
