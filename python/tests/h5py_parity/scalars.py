"""Scalar (shape ()) datasets."""
import numpy as np

from . import case


def _describe(check, ds):
    check("shape", lambda: ds.shape)
    check("maxshape", lambda: ds.maxshape)
    check("ndim, size, nbytes", lambda: (ds.ndim, int(ds.size), int(ds.nbytes)))
    check("dtype", lambda: ds.dtype)
    check("chunks", lambda: ds.chunks)


@case
def scalar_from_python_int(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=5)
        _describe(check, ds)
        check("ds[()] is a numpy scalar", lambda: ds[()])
        check("ds[...] is a 0-d array", lambda: ds[...])


@case
def scalar_from_shape_and_dtype(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", shape=(), dtype="f4")
        _describe(check, ds)
        check("never written reads 0", lambda: ds[()])
        ds2 = f.create_dataset("t", (), "i2", fillvalue=3)
        check("fill value", lambda: (ds2.fillvalue, ds2[()]))


@case
def scalar_from_numpy_scalars(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        for i, v in enumerate([np.uint8(3), np.int16(-2), np.float32(2.5), np.float64(1e300), np.int64(-1)]):
            ds = f.create_dataset(f"s{i}", data=v)
            check(f"{v!r}", lambda: (ds.shape, ds.dtype, ds[()]))


@case
def scalar_from_0d_array_with_dtype(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=np.array(7, dtype="u4"), dtype="f8")
        check("converted", lambda: (ds.shape, ds[()]))
        check("shape () and a one-element list", lambda: f.create_dataset("l", shape=(), data=[9])[()])
        check("shape (1,) and a number", lambda: f.create_dataset("n", shape=(1,), data=3)[...])


@case
def scalar_by_assignment(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        f["x"] = 3.0
        check("f['x'] = 3.0", lambda: (f["x"].shape, f["x"].dtype, f["x"][()]))
        f["y"] = np.int8(-5)
        check("f['y'] = np.int8", lambda: (f["y"].shape, f["y"][()]))


@case
def scalar_keys_that_are_refused(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=5)
        for key in [0, -1, slice(None), slice(0, 1), None, (Ellipsis, None), (0, 0), [0]]:
            check(f"ds[{key!r}]", lambda: ds[key])


@case
def scalar_has_no_len_or_iteration(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=5)
        check("len", lambda: len(ds))
        check("iter", lambda: list(ds))
        check("astype len", lambda: len(ds.astype("f8")))


@case
def scalar_writes(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", shape=(), dtype="i4")
        ds[()] = 7
        check("after ds[()] = 7", lambda: ds[()])
        ds[...] = np.float64(8.9)
        check("after ds[...] = 8.9", lambda: ds[()])
        ds[()] = np.array([11])
        check("after ds[()] = [11]", lambda: ds[()])
        check("ds[0] = 1", lambda: ds.__setitem__(0, 1))
        check("ds[()] = [1, 2]", lambda: ds.__setitem__((), [1, 2]))
        check("unchanged", lambda: ds[...])


@case
def scalar_astype_and_asarray(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=np.int16(300))
        check("astype f4 [()]", lambda: ds.astype("f4")[()])
        check("astype u1 [...]", lambda: ds.astype("u1")[...])
        check("np.asarray", lambda: np.asarray(ds))
        check("np.array f8", lambda: np.array(ds, dtype="f8"))


@case
def scalar_read_direct(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=np.float64(4.5))
        out = np.zeros((), "f8")
        ds.read_direct(out)
        check("read_direct", lambda: out)
        ds.write_direct(np.array(6.0))
        check("write_direct", lambda: ds[()])


@case
def scalar_is_not_resizable(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=5)
        check("resize((2,))", lambda: ds.resize((2,)))
        check("resize(())", lambda: ds.resize(()))
        check("shape after", lambda: ds.shape)


@case
def scalar_refuses_chunks_and_filters(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("chunks=True", lambda: f.create_dataset("a", shape=(), dtype="f4", chunks=True))
        check("chunks=(2,)", lambda: f.create_dataset("b", shape=(), dtype="f4", chunks=(2,)))
        check("gzip", lambda: f.create_dataset("c", shape=(), dtype="f4", compression="gzip"))
        check("shuffle", lambda: f.create_dataset("d", data=1, shuffle=True))
        check("fletcher32", lambda: f.create_dataset("e", data=1, fletcher32=True))
        check("maxshape=()", lambda: f.create_dataset("g", shape=(), dtype="f4", maxshape=()).maxshape)
        check("nothing was made but g", lambda: sorted(f))


@case
def scalar_properties(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=1.5)
        check("filters", lambda: (ds.compression, ds.compression_opts, ds.shuffle, ds.fletcher32))
        check("fillvalue", lambda: ds.fillvalue)
        check("name, parent", lambda: (ds.name, ds.parent))


@case
def scalar_attributes(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=5)
        check("no attributes", lambda: (len(ds.attrs), list(ds.attrs), "units" in ds.attrs))
        ds.attrs["units"] = "m"
        ds.attrs["scale"] = 2.5
        check("two attributes", lambda: (len(ds.attrs), sorted(ds.attrs), dict(ds.attrs)))
        del ds.attrs["units"]
        check("one left", lambda: list(ds.attrs))


@case
def scalar_survives_reopen(h5, new_path, check):
    p = new_path()
    with h5.File(p, "w") as f:
        f.create_dataset("g/s", data=np.uint16(513))
        f["g/s"].attrs["a"] = 1
    with h5.File(p, "r") as f:
        ds = f["g/s"]
        check("shape, maxshape", lambda: (ds.shape, ds.maxshape))
        check("value", lambda: ds[()])
        check("attrs", lambda: dict(ds.attrs))
        check("write refused", lambda: ds.__setitem__((), 1))


@case
def scalar_require_and_like(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("s", data=np.int32(4))
        check("require same", lambda: f.require_dataset("s", (), "i4"))
        check("require (1,)", lambda: f.require_dataset("s", (1,), "i4"))
        check("like", lambda: f.create_dataset_like("t", ds).shape)
        check("like reads fill", lambda: f["t"][()])


@case
def scalar_in_visit_and_listing(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        f.create_dataset("a/s", data=1)
        f.create_dataset("a/v", data=[1, 2])
        seen = []
        f.visititems(lambda name, obj: seen.append((name, obj.shape)))
        check("visititems", lambda: seen)
        check("values", lambda: [v.shape for v in f["a"].values()])
