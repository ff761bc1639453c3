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

The modules form a stack: each imports only from the layers above its own
line, so there is no import cycle and no import inside a function
(python/tests/test_layers.py checks both against this list):

    1. _slabfs, errors              the C++ binding (python/src); exceptions
    2. creation, selection, reopen  dataset options and dtypes; numpy keys
                                    as hyperslabs; one File per container
                                    and process (pickling)
    3. attrs                        AttributeManager
    4. base                         Node: id, file, name, parent, attrs
    5. dataset                      Dataset(Node)
    6. group                        Group(Node), which makes Datasets
    7. files                        File(Group)
    8. __init__                     the package: File, Group, Dataset, ...
    9. xarray_backend               the xarray engine (xarray imports it)

An annotation may name a class of a later layer (``Node.file`` is a File)
through an import under ``typing.TYPE_CHECKING``, which never runs.
"""
from __future__ import annotations

from . import _slabfs
from .attrs import AttributeManager
from .dataset import Dataset
from .files import File
from .group import Group

__all__ = ["File", "Group", "Dataset", "AttributeManager", "version", "set_log_level"]

__version__ = _slabfs.version()


def version() -> str:
    """The slabfs library version."""
    return _slabfs.version()


def set_log_level(level: str) -> None:
    """Routes the engine's log lines (refused operations, corruption found,
    commits) to stderr at this level: "trace", "debug", "info", "warn",
    "error", "off"."""
    _slabfs.set_log_level(level)
