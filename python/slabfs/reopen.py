"""Datasets that travel between processes.

A pickled Dataset is (container path, dataset path). Unpickling it in a
process that has the container open for writing (a File in this process)
gives a handle on that File. Anywhere else it opens the container read-only,
once per process and path, and keeps that File for every dataset unpickled
later -- the Dask workers' case. When the container file has changed since
(a writer committed: its size, mtime or inode differ), the cached File
moves to the newest commit (File.refresh) or is
reopened, so a new computation sees what the writer committed.
"""
import os
import threading
import weakref


__all__ = ["reopen_dataset", "shared_reader", "register_writer"]

_lock = threading.Lock()
_writers = {}  # realpath -> weakref to a writable File of this process
_readers = {}  # realpath -> (pid, signature, File)


def register_writer(f):
    with _lock:
        _writers[f._realpath] = weakref.ref(f)


def _signature(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def shared_reader(path):
    """This process's File for `path`: its writable File if it has one,
    else a read-only File opened once and kept (moved to the newest commit
    when the file changed)."""
    from .files import File
    path = os.path.realpath(path)
    with _lock:
        ref = _writers.get(path)
        w = ref() if ref is not None else None
        if w is not None and not w.closed:
            return w
        sig = _signature(path)
        entry = _readers.get(path)
        if entry is not None:
            pid, old_sig, f = entry
            if pid == os.getpid() and not f.closed:
                if old_sig == sig:
                    return f
                if old_sig[:2] == sig[:2]:
                    f.refresh()
                    _readers[path] = (pid, sig, f)
                    return f
        # First use, a forked copy or a replaced file: open it. A File dropped here closes once its datasets go.
        f = File(path, "r")
        _readers[path] = (os.getpid(), sig, f)
        return f


def reopen_dataset(path, name):
    """Unpickles a Dataset: dataset `name` of the container at `path`."""
    return shared_reader(path)[name]
