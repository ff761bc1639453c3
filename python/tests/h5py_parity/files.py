"""Opening, closing and naming files (the behaviour h5py's test_file.py
expects)."""
import pathlib
import pickle

from . import case


@case
def file_default_mode_and_foreign_files(h5, new_path, check):
    p = new_path()
    check("missing", lambda: h5.File(p))
    with h5.File(p, "w"):
        pass
    with h5.File(p) as f:
        check("opened read-only", lambda: (bool(f), f.mode))
    with open(p, "wb") as raw:
        raw.write(b"\x00")
    check("not a container", lambda: h5.File(p))
    check("a directory", lambda: h5.File(str(pathlib.Path(p).parent)))


@case
def file_create_append_exclusive(h5, new_path, check):
    p = new_path()
    f = h5.File(p, "w")
    f.create_group("foo")
    f.close()
    with h5.File(p, "w") as f:
        check("w replaces", lambda: "foo" in f)
    with h5.File(p, "a") as f:
        f.create_group("bar")
    with h5.File(p, "a") as f:
        check("a keeps and adds", lambda: sorted(f))
    q = new_path("new")
    with h5.File(q, "a") as f:
        check("a creates", lambda: (bool(f), f.mode))
    check("w- on an existing file", lambda: h5.File(q, "w-"))
    with h5.File(p, "r+") as f:
        f.create_group("baz")
        check("r+ writes", lambda: sorted(f))


@case
def file_read_only_refuses_changes(h5, new_path, check):
    p = new_path()
    with h5.File(p, "w") as f:
        f["d"] = [1, 2]
    with h5.File(p, "r") as f:
        check("create_group", lambda: f.create_group("foo"), slabfs_raises=OSError)
        check("create_dataset", lambda: f.create_dataset("x", (1,)), slabfs_raises=OSError)
        check("write data", lambda: f["d"].__setitem__(0, 5))
        check("unchanged", lambda: f["d"][...])


@case
def file_close_flush_repr(h5, new_path, check):
    f = h5.File(new_path(), "w")
    g = f.create_group("foo")
    other = g.file
    check("bool open", lambda: bool(f))
    f.flush()
    check("repr open", lambda: isinstance(repr(f), str))
    other.close()
    check("closed through another handle", lambda: (bool(f), bool(other), bool(g)))
    check("repr closed", lambda: isinstance(repr(f), str))
    check("modify closed", lambda: f.create_group("bar"))
    check("close again", lambda: f.close())


@case
def file_names_and_paths(h5, new_path, check):
    p = new_path()
    with h5.File(p, "w") as f:
        check("filename", lambda: (f.filename == p, type(f.filename)))
        check("root's file", lambda: f["/"].file == f)
        check("a group's file mode", lambda: f.create_group("foo").file.mode == f.mode)
    with h5.File(pathlib.Path(p), "r") as f:
        check("pathlib accepted", lambda: (f.filename == p, f.name))
    check("unicode name", lambda: h5.File(new_path("\u201cunicode\u201d"), "w").close())


@case
def file_two_readers(h5, new_path, check):
    p = new_path()
    with h5.File(p, "w") as f:
        f.create_group("foo")
    f1, f2 = h5.File(p), h5.File(p)
    g1, g2 = f1["foo"], f2["foo"]
    f1.close()
    check("closing one reader leaves the other", lambda: (bool(g1), bool(g2), list(f2)))
    f2.close()


@case
def file_and_group_do_not_pickle(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("file", lambda: pickle.dumps(f))
        check("group", lambda: pickle.dumps(f.create_group("g")))


@case
def file_keywords_of_h5py(h5, new_path, check):
    p = new_path()
    check("libver", lambda: h5.File(p, "w", libver="latest").close())
    check("libver pair", lambda: h5.File(p, "w", libver=("earliest", "latest")).close())
    check("driver sec2", lambda: h5.File(p, "w", driver="sec2").close())
    check("chunk cache", lambda: h5.File(p, "r", rdcc_nbytes=1 << 20, rdcc_w0=0.5, rdcc_nslots=521).close())
    check("track_order, locking", lambda: h5.File(p, "r", track_order=True, locking=True).close())
    check("swmr reader", lambda: h5.File(p, "r", swmr=True).close())
    check("positional mode", lambda: h5.File(p, "r").mode)
    # Left out (docs/python.md): HDF5's other drivers and the user block.
    check("driver core", lambda: h5.File(new_path("core"), "w", driver="core").close(), slabfs_raises=ValueError)
    check("userblock", lambda: h5.File(new_path("ub"), "w", userblock_size=512).close(), slabfs_raises=ValueError)


@case
def create_dataset_keywords_of_h5py(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("allow_unknown_filter", lambda: f.create_dataset("a", (2,), allow_unknown_filter=True).shape)
        check("efile_prefix", lambda: f.create_dataset("b", (2,), efile_prefix="/tmp").shape)
        check("virtual_prefix", lambda: f.create_dataset("c", (2,), virtual_prefix="/tmp").shape)
        check("track_order", lambda: f.create_dataset("d", (2,), track_order=True).shape)
        check("external", lambda: f.create_dataset("e", (2,), external=[(new_path("raw"), 0, 8)]).shape,
              slabfs_raises=ValueError)
