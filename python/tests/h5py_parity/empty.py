"""Datasets with a dimension of length zero."""
import numpy as np

from . import case


@case
def zero_length_1d(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(0,), dtype="i4")
        check("shape", lambda: ds.shape)
        check("maxshape", lambda: ds.maxshape, slabfs_value=(None,))
        check("size, nbytes, len", lambda: (int(ds.size), int(ds.nbytes), len(ds)))
        for key in [Ellipsis, (), slice(None), slice(0, 0), slice(5, 9)]:
            check(f"ds[{key!r}]", lambda: ds[key])
        check("list(ds)", lambda: list(ds))
        check("np.asarray", lambda: np.asarray(ds))


@case
def zero_length_index_errors(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(0,), dtype="u1")
        check("ds[0]", lambda: ds[0])
        check("ds[-1]", lambda: ds[-1])
        ds2 = f.create_dataset("z2", shape=(3, 0), dtype="f8")
        check("ds2[1, 0]", lambda: ds2[1, 0])
        check("ds2[3]", lambda: ds2[3])


@case
def zero_length_second_axis(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(3, 0), dtype="f8")
        check("shape, len", lambda: (ds.shape, len(ds)))
        check("maxshape", lambda: ds.maxshape, slabfs_value=(3, None))
        check("ds[1]", lambda: ds[1])
        check("ds[...]", lambda: ds[...])
        check("ds[:, 0:0]", lambda: ds[:, 0:0])
        check("ds[::2]", lambda: ds[::2])
        check("rows", lambda: list(ds))


@case
def zero_by_zero(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(0, 0))
        check("shape, dtype", lambda: (ds.shape, ds.dtype))
        check("read", lambda: ds[...])


@case
def zero_length_writes(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(0,), dtype="f4")
        check("ds[:] = []", lambda: ds.__setitem__(slice(None), []))
        check("ds[...] = zeros(0)", lambda: ds.__setitem__(Ellipsis, np.zeros(0)))
        check("ds[...] = 1 (broadcast to nothing)", lambda: ds.__setitem__(Ellipsis, 1))
        check("still empty", lambda: ds[...])


@case
def zero_length_from_data(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", data=np.zeros((0, 3), "u2"))
        check("shape, dtype, read", lambda: (ds.shape, ds.dtype, ds[...]))
        check("maxshape", lambda: ds.maxshape, slabfs_value=(None, 3))
        f["e"] = np.array([], dtype="i8")
        check("f['e'] = []", lambda: (f["e"].shape, f["e"][...]))


@case
def zero_length_grows(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(0,), maxshape=(None,), dtype="f8")
        check("maxshape", lambda: ds.maxshape)
        check("chunked", lambda: ds.chunks is not None)
        ds.resize((5,))
        check("after resize 5", lambda: ds[...])
        ds[2:4] = [1, 2]
        ds.resize((0,))
        check("back to 0", lambda: (ds.shape, ds[...]))
        ds.resize((3,))
        check("cut elements are forgotten", lambda: ds[...])


@case
def zero_length_grows_along_axis(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(0, 4), maxshape=(None, 4), dtype="i2", chunks=(2, 2))
        check("chunks", lambda: ds.chunks)
        ds.resize(3, axis=0)
        ds[1] = [1, 2, 3, 4]
        check("after resize", lambda: ds[...])
        check("len", lambda: len(ds))


@case
def zero_length_fixed_axis_stays_zero(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(2, 0), maxshape=(None, 0), dtype="i4")
        check("maxshape", lambda: ds.maxshape, slabfs_value=(None, None))
        ds.resize(4, axis=0)
        check("grows along axis 0", lambda: (ds.shape, ds[...]))
        # slabfs: a dimension fixed at 0 can grow (docs/python.md).
        check("grows along axis 1", lambda: ds.resize((4, 1)), slabfs_returns=True)
        check("shape after", lambda: ds.shape, slabfs_value=(4, 1))


@case
def zero_length_astype_and_fancy(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(0,), dtype="i2")
        check("astype", lambda: ds.astype("f8")[...])
        check("astype len", lambda: len(ds.astype("f8")))
        d3 = f.create_dataset("d3", data=[1, 2, 3])
        check("empty index list", lambda: d3[[]])
        check("all-false mask", lambda: d3[np.zeros(3, bool)])


@case
def zero_length_survives_reopen(h5, new_path, check):
    p = new_path()
    with h5.File(p, "w") as f:
        f.create_dataset("a", shape=(0,), dtype="f8")
        f.create_dataset("b", shape=(4, 0, 2), dtype="u1")
        f.create_dataset("c", shape=(0,), maxshape=(None,), dtype="i8")
        f["b"].attrs["n"] = 3
    with h5.File(p, "r") as f:
        for name in "abc":
            check(name, lambda: (f[name].shape, f[name].dtype, f[name][...]))
        check("maxshape", lambda: [f[n].maxshape for n in "abc"],
              slabfs_value=[(None,), (4, None, 2), (None,)])
        check("attrs", lambda: dict(f["b"].attrs))


@case
def zero_length_require_and_like(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("z", shape=(0, 2), dtype="f4")
        check("require", lambda: f.require_dataset("z", (0, 2), "f4").shape)
        check("like", lambda: f.create_dataset_like("y", ds).shape)
        check("like maxshape", lambda: f["y"].maxshape, slabfs_value=(None, 2))
