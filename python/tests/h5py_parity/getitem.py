"""Reading with every kind of key, on a scalar, an empty and a 1-D dataset
(the keys h5py's own test_dataset_getitem.py tries)."""
import numpy as np

from . import case


@case
def getitem_scalar_float(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("x", data=np.array(42.5, dtype="f"))
        check("ndim, size, nbytes, shape", lambda: (ds.ndim, int(ds.size), int(ds.nbytes), ds.shape))
        check("[...]", lambda: ds[...])
        check("[()]", lambda: ds[()])
        for key in [np.s_[0:4], 0, [1, 2, 5], np.array(True), "field"]:
            check(f"[{key!r}]", lambda: ds[key])


@case
def getitem_1d_zero_length(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("x", data=np.ones((0,), dtype="f"))
        check("ndim, shape", lambda: (ds.ndim, ds.shape))
        for key in [Ellipsis, (), np.s_[0:4], np.s_[7:5], [], np.ones((0,), dtype=bool)]:
            check(f"[{key!r}]", lambda: ds[key])
        check("[0]", lambda: ds[0])
        check("['field']", lambda: ds["field"], slabfs_raises=TypeError)


@case
def getitem_1d_keys_as_numpy(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        data = np.arange(13, dtype="f")
        ds = f.create_dataset("x", data=data)
        for key in [np.s_[0:4], np.s_[4:4], np.s_[1:7:3], np.s_[-8:-2:3], np.s_[7:5], np.s_[100:400:3],
                    3, -4, [1, 2, 5], np.array([1, 2, 5]), np.s_[[0], ...], np.s_[np.array([1, 2, 5]), ...],
                    [], [0, 2, -2], data > -100, data > 100, data > 5]:
            check(f"[{key!r}]", lambda: ds[key])


@case
def getitem_1d_refusals(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("x", data=np.arange(13, dtype="f"))
        check("[{}]", lambda: ds[{}])
        check("[100]", lambda: ds[100])
        check("[[100]]", lambda: ds[[100]])
        check("[::0]", lambda: ds[::0])
        # numpy's IndexError for a mask of another length.
        check("mask of length 2", lambda: ds[np.ones((2,), dtype=bool)], slabfs_raises=IndexError)
        # slabfs takes what numpy takes here: indices in any order, repeated.
        check("[[1, 3, 2]]", lambda: ds[[1, 3, 2]], slabfs_returns=True)
        check("[[1, 1, 2]]", lambda: ds[[1, 1, 2]], slabfs_returns=True)
        check("[[-2, -3]]", lambda: ds[[-2, -3]], slabfs_returns=True)


@case
def getitem_2d_zero_and_index_lists(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        z = f.create_dataset("z", data=np.ones((0, 3), dtype="f"))
        check("zero rows, index list on axis 1", lambda: z[:, [0, 1, 2]])
        d = f.create_dataset("d", data=np.ones((5, 3), dtype="f"))
        check("ndim, size, nbytes, shape", lambda: (d.ndim, int(d.size), int(d.nbytes), d.shape))
        check("index list", lambda: d[:, [0, 1, 2]])
        check("empty index list", lambda: d[:, []])
        check("mask on axis 0", lambda: d[np.array([True, False, True, False, False])])
