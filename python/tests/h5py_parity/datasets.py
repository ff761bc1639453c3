"""create_dataset's keyword arguments, reading, writing, resizing."""
import numpy as np

from . import case


@case
def create_shapes(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("tuple", lambda: f.create_dataset("a", (10, 3)).shape)
        check("int", lambda: f.create_dataset("b", 4).shape)
        check("default dtype", lambda: f["a"].dtype)
        check("positional dtype", lambda: f.create_dataset("c", (4,), "i2").dtype)
        check("dtype object", lambda: f.create_dataset("d", (4,), np.dtype("u8")).dtype)
        check("dtype name", lambda: f.create_dataset("e", (4,), "float64").dtype)
        check("missing shape", lambda: f.create_dataset("f"), slabfs_raises=TypeError)
        check("bytes name", lambda: f.create_dataset(b"g", (1,)).name)
        check("intermediate group", lambda: f.create_dataset("h/i/j", (1,)).name)
        check("exists", lambda: f.create_dataset("a", (1,)))


@case
def create_from_data(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("list of ints", lambda: (f.create_dataset("a", data=[1, 2]).dtype, f["a"][...]))
        check("nested list", lambda: f.create_dataset("b", data=[[1.5], [2]])[...])
        check("data and dtype", lambda: f.create_dataset("c", data=[1, 2], dtype="f4")[...])
        check("reshape", lambda: f.create_dataset("d", shape=(2, 3), data=np.arange(6))[...])
        check("incompatible", lambda: f.create_dataset("e", shape=(2, 3), data=np.arange(5)))
        check("nothing left behind", lambda: "e" in f)


@case
def create_chunks(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("tuple", lambda: f.create_dataset("a", (10, 3), chunks=(5, 3)).chunks)
        check("int", lambda: f.create_dataset("b", (8,), chunks=2).chunks)
        check("rank mismatch", lambda: f.create_dataset("c", (4,), chunks=(1, 1)))
        check("True", lambda: f.create_dataset("d", (100, 100), chunks=True).chunks is not None)
        check("larger than a fixed shape", lambda: f.create_dataset("e", (2,), chunks=(4,)))
        check("larger than a growable one", lambda: f.create_dataset("g", (2,), chunks=(4,),
                                                                     maxshape=(None,)).chunks)
        check("made", lambda: sorted(f))


@case
def create_maxshape(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("int", lambda: f.create_dataset("a", (2,), maxshape=4).maxshape)
        check("None", lambda: f.create_dataset("b", (2, 3), maxshape=(None, 3)).maxshape)
        check("below shape", lambda: f.create_dataset("c", (5,), maxshape=(4,)))
        check("rank mismatch", lambda: f.create_dataset("d", (5,), maxshape=(5, 5)))
        check("default is the shape", lambda: f.create_dataset("e", (5, 2)).maxshape)


@case
def create_fillvalue(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("int", lambda: f.create_dataset("a", (4,), dtype="i2", fillvalue=7)[...])
        check("property", lambda: f["a"].fillvalue)
        check("default", lambda: f.create_dataset("b", (4,), dtype="f8").fillvalue)
        check("float into int", lambda: f.create_dataset("c", (2,), dtype="i4", fillvalue=2.0).fillvalue)
        check("with data", lambda: f.create_dataset("d", data=[1, 2], fillvalue=9).fillvalue)


@case
def create_gzip_and_filters(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        d = f.create_dataset("a", (20, 30), compression="gzip", compression_opts=9)
        check("gzip 9", lambda: (d.compression, d.compression_opts))
        d = f.create_dataset("b", (20, 30), compression="gzip")
        check("gzip default level", lambda: (d.compression, d.compression_opts))
        d = f.create_dataset("c", (20, 30), compression=7)
        check("compression=7", lambda: (d.compression, d.compression_opts))
        check("compression=1 and opts", lambda: f.create_dataset("d", (4,), compression=1, compression_opts=7))
        check("unknown filter", lambda: f.create_dataset("e", (4,), compression="blah"))
        check("level 10", lambda: f.create_dataset("g", (4,), compression="gzip", compression_opts=10))
        d = f.create_dataset("h", (4,), shuffle=True, fletcher32=True)
        check("shuffle, fletcher32", lambda: (d.compression, d.shuffle, d.fletcher32))
        d = f.create_dataset("i", (4,))
        check("none", lambda: (d.compression, d.compression_opts, d.shuffle, d.fletcher32, d.scaleoffset))
        d[...] = [1, 2, 3, 4]
        check("data through filters", lambda: f["a"][0, :3])


@case
def create_track_times(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("False", lambda: f.create_dataset("a", (2,), track_times=False).shape)
        check("True", lambda: f.create_dataset("b", (2,), track_times=True).shape)
        check("not a bool", lambda: f.create_dataset("c", (2,), track_times="no"))


@case
def create_like(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        src = f.create_dataset("a", (10, 4), dtype="u2", maxshape=(None, 4), chunks=(5, 2), fillvalue=3)
        like = f.create_dataset_like("b", src)
        check("like", lambda: (like.shape, like.maxshape, like.chunks, like.dtype, like.fillvalue))
        check("override", lambda: f.create_dataset_like("c", src, shape=(2, 4)).shape)


@case
def len_iter_and_sizes(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("a", data=np.arange(12, dtype="i4").reshape(4, 3))
        check("len", lambda: (len(ds), ds.len()))
        check("rows", lambda: list(ds))
        check("size, ndim, nbytes", lambda: (int(ds.size), ds.ndim, int(ds.nbytes)))
        check("astype len", lambda: len(ds.astype("f8")))


@case
def reading(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        data = np.arange(60, dtype="f8").reshape(6, 10)
        ds = f.create_dataset("a", data=data)
        for key in [(), Ellipsis, 0, -1, (1, 2), slice(1, 4), (slice(None), 3), np.s_[::2, 1:9:3],
                    np.s_[..., 0], np.s_[2, ...], [0, 2, 5], np.s_[:, [1, 3]],
                    np.array([True, False] * 3), np.s_[4:2], np.s_[0, 20:30]]:
            check(f"ds[{key!r}]", lambda: ds[key])
        # slabfs takes numpy's None (np.newaxis) too.
        check("ds[None, 1]", lambda: ds[None, 1], slabfs_returns=True)


@case
def reading_errors(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("a", data=[1, 2, 3])
        check("out of range", lambda: ds[5])
        check("negative out of range", lambda: ds[-4])
        # slabfs raises what numpy raises for a bad index.
        check("two indices on one axis", lambda: ds[0, 0], slabfs_raises=IndexError)
        check("a string", lambda: ds["x"], slabfs_raises=TypeError)
        check("a float", lambda: ds[1.5])
        check("negative step", lambda: ds[::-1], slabfs_returns=True)


@case
def writing(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("a", (4, 5), dtype="i4")
        ds[0] = 1
        ds[1, ::2] = [7, 8, 9]
        ds[2:4, 4] = np.array([5.9, 6.1])
        ds[:, 0] = -1
        ds[[0, 3], 1] = [10, 30]
        check("result", lambda: ds[...])
        check("does not broadcast", lambda: ds.__setitem__(np.s_[0:2, 0], [1, 2, 3]))
        check("out of range", lambda: ds.__setitem__(9, 0))
        check("unchanged", lambda: ds[...])


@case
def read_and_write_direct(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("a", data=np.arange(20, dtype="f8").reshape(4, 5))
        out = np.zeros((4, 5))
        ds.read_direct(out)
        check("whole", lambda: out)
        out2 = np.zeros((3, 3))
        ds.read_direct(out2, np.s_[1:3, 0:2], np.s_[0:2, 1:3])
        check("selections", lambda: out2)
        ds.write_direct(np.ones((2, 2)), None, np.s_[2:4, 3:5])
        check("write_direct", lambda: ds[...])
        check("wrong dtype", lambda: ds.read_direct(np.zeros((4, 5), "f4")))


@case
def resize_variants(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("a", (4, 2), maxshape=(8, None), dtype="i2")
        ds[...] = 1
        ds.resize((6, 3))
        check("both axes", lambda: ds[...])
        ds.resize(2, axis=0)
        check("axis 0", lambda: ds[...])
        check("past maxshape", lambda: ds.resize((9, 3)))
        check("bad axis", lambda: ds.resize(3, axis=2))
        check("rank mismatch", lambda: ds.resize((3,)))
        ds.resize((4, 3))
        check("cut rows come back as fill", lambda: ds[...])


@case
def iter_chunks(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("a", (5, 4), chunks=(2, 3))
        check("all", lambda: list(ds.iter_chunks()))
        check("selection", lambda: list(ds.iter_chunks(np.s_[1:4, 2:4])))


@case
def dataset_attributes_and_names(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("g/a", (2,))
        check("name", lambda: ds.name)
        check("parent", lambda: ds.parent)
        check("file", lambda: ds.file == f)
        check("attrs empty", lambda: (len(ds.attrs), list(ds.attrs)))


@case
def closed_objects(h5, new_path, check):
    f = h5.File(new_path(), "w")
    ds = f.create_dataset("a", data=[1, 2])
    g = f.create_group("g")
    f.close()
    check("bool", lambda: (bool(f), bool(ds), bool(g)))
    check("read", lambda: ds[0], slabfs_raises=ValueError)
    check("repr is a str", lambda: all(isinstance(repr(o), str) for o in (f, ds, g)))


@case
def read_and_write_direct_errors(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("a", (100,), dtype="i8")
        check("read into a longer array", lambda: ds.read_direct(np.ones((200,))))
        check("write a longer array", lambda: ds.write_direct(np.ones((200,))))
        d2 = f.create_dataset("b", (10, 10), dtype="i8")
        check("read into a Fortran-ordered array", lambda: d2.read_direct(np.ones((10, 10), order="F")))
        # slabfs copies a source in any memory layout.
        check("write a Fortran-ordered array", lambda: d2.write_direct(np.ones((10, 10), order="F")),
              slabfs_returns=True)


@case
def comparisons_with_numbers(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        ds = f.create_dataset("a", data=np.array([[0.5], [1.5], [0.5]]))
        val = np.float64(0.5)
        check("numpy scalar == ds", lambda: val == ds)
        check("ds == numpy scalar", lambda: ds == val)
        check("ds != numpy scalar", lambda: ds != val)
        check("float == ds", lambda: (0.5 == ds, ds == 0.5, ds != 0.5))
        check("ds == ds, group == group", lambda: (ds == f["a"], f == f["/"], f != ds, ds == f))
