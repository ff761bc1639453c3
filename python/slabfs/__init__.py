"""slabfs: containers of n-dimensional chunked arrays, from Python.

An h5py-like binding of the slabfs C++ library::

    import numpy as np, slabfs

    with slabfs.File("run.slab", "w") as f:
        t = f.create_dataset("climate/temp", shape=(365, 180, 360), dtype="f4",
                             chunks=(1, 180, 360), compression="gzip", shuffle=True)
        t[0] = np.random.rand(180, 360)
        t.attrs["units"] = "K"

    with slabfs.File("run.slab") as f:
        print(f["climate/temp"][0, ::10, ::10].mean())

Dask: ``dask.array.from_array(ds, chunks=ds.chunks)`` (datasets pickle by
path, so process schedulers work). xarray: ``xr.open_dataset("run.slab",
engine="slabfs", group="climate")``. See docs/python.md.
"""
from . import _slabfs
from .attrs import AttributeManager
from .dataset import Dataset
from .files import File
from .group import Group

__all__ = ["File", "Group", "Dataset", "AttributeManager", "version", "set_log_level"]

__version__ = _slabfs.version()


def version():
    """The slabfs library version."""
    return _slabfs.version()


def set_log_level(level):
    """Routes the engine's log lines (refused operations, corruption found,
    commits) to stderr at this level: "trace", "debug", "info", "warn",
    "error", "off"."""
    _slabfs.set_log_level(level)
