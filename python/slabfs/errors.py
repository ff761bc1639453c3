"""Exceptions raised by the pure-Python layer where h5py and slabfs's own
conventions name different classes: each is an instance of both, so code
written for either catches it."""

__all__ = ["ArrayError", "BroadcastError", "CopyExistsError", "CopySourceError", "MaxShapeError",
           "RankError"]


class ArrayError(ValueError, TypeError):
    """An array argument of the wrong shape or memory layout (read_direct's
    destination): ValueError as numpy says, TypeError as h5py says."""


class BroadcastError(ArrayError):
    """A value that does not broadcast to the selection (or a selection
    that does not fit read_direct's destination)."""


class RankError(ValueError, TypeError):
    """A new shape of another rank than the dataset's (resize): ValueError
    as slabfs says for a bad shape, TypeError as h5py says."""


class MaxShapeError(ValueError, RuntimeError):
    """A resize past the max shape: ValueError as slabfs says, RuntimeError
    as h5py (HDF5's H5Dset_extent) says."""


class CopyExistsError(ValueError, RuntimeError):
    """Group.copy onto a name that exists: ValueError as slabfs says for any
    existing name, RuntimeError as h5py (HDF5's H5Ocopy) says."""


class CopySourceError(KeyError, RuntimeError):
    """Group.copy of a name that does not exist: KeyError as slabfs says for
    any missing name, RuntimeError as h5py says."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
