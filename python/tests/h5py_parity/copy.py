"""Group.copy: within a file and between files."""
import numpy as np

from . import case


def _tree(f):
    """A group foo with a dataset, an attribute and a subgroup."""
    foo = f.create_group("foo")
    foo["bar"] = [1, 2, 3]
    foo.attrs["a"] = 1
    foo["bar"].attrs["units"] = "m"
    foo.create_group("sub")["x"] = np.arange(4.0)
    return foo


def _listing(g):
    out = []
    g.visititems(lambda name, obj: out.append((name, obj.shape if hasattr(obj, "shape") else None)))
    return out


@case
def copy_path_to_path(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        _tree(f)
        check("copy", lambda: f.copy("foo", "baz"))
        check("a group", lambda: f["baz"])
        check("data", lambda: f["baz/bar"][...])
        check("listing", lambda: _listing(f["baz"]))
        check("source kept", lambda: _listing(f["foo"]))


@case
def copy_path_to_group(h5, new_path, check):
    with h5.File(new_path("a"), "w") as f1, h5.File(new_path("b"), "w") as f2:
        _tree(f1)
        baz = f1.create_group("baz")
        f1.copy("foo", baz)
        check("into baz", lambda: f1["baz/foo/bar"][...])
        f1.copy("foo", f2["/"])
        check("into the other file", lambda: (f2["foo"], f2["foo/bar"][...], _listing(f2)))


@case
def copy_group_to_path(h5, new_path, check):
    with h5.File(new_path("a"), "w") as f1, h5.File(new_path("b"), "w") as f2:
        foo = _tree(f1)
        f1.copy(foo, "baz")
        check("same file", lambda: _listing(f1["baz"]))
        f2.copy(foo, "foo")
        check("other file", lambda: (_listing(f2), f2["foo/sub/x"][...]))


@case
def copy_group_to_group(h5, new_path, check):
    with h5.File(new_path("a"), "w") as f1, h5.File(new_path("b"), "w") as f2:
        foo = _tree(f1)
        baz = f1.create_group("baz")
        f1.copy(foo, baz)
        check("same file", lambda: _listing(f1["baz"]))
        f1.copy(foo, f2["/"])
        check("other file", lambda: _listing(f2))


@case
def copy_dataset_every_way(h5, new_path, check):
    with h5.File(new_path("a"), "w") as f1, h5.File(new_path("b"), "w") as f2:
        f1["foo"] = [1, 2, 3]
        foo = f1["foo"]
        grp = f1.create_group("grp")
        f1.copy(foo, "bar")
        check("object to path", lambda: f1["bar"][...])
        f1.copy("foo", "baz")
        check("path to path", lambda: f1["baz"][...])
        f1.copy(foo, grp)
        check("object to group", lambda: f1["/grp/foo"][...])
        f1.copy("foo", f2)
        check("path to other file", lambda: f2["foo"][...])
        f2.copy(f1["foo"], f2, "bar")
        check("with a name", lambda: f2["bar"][...])
        check("listings", lambda: (sorted(f1), sorted(f2)))


@case
def copy_shallow(h5, new_path, check):
    with h5.File(new_path("a"), "w") as f1, h5.File(new_path("b"), "w") as f2:
        foo = f1.create_group("foo")
        bar = foo.create_group("bar")
        foo["qux"] = [1, 2, 3]
        bar["quux"] = [4, 5, 6]
        f1.copy(foo, "baz", shallow=True)
        check("baz", lambda: (f1["baz/bar"], len(f1["baz/bar"]), f1["baz/qux"][...]))
        f2.copy(foo, "foo", shallow=True)
        check("other file", lambda: (_listing(f2), len(f2["foo/bar"])))


@case
def copy_without_attrs(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        _tree(f)
        f.copy("foo", "with")
        f.copy("foo", "without", without_attrs=True)
        check("with", lambda: (dict(f["with"].attrs), dict(f["with/bar"].attrs)))
        check("without", lambda: (dict(f["without"].attrs), dict(f["without/bar"].attrs)))


@case
def copy_errors(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        foo = _tree(f)
        check("destination exists", lambda: f.copy("foo", "foo"))
        check("into a group that has the name", lambda: f.copy("foo", f))
        check("missing source", lambda: f.copy("nope", "x"))
        check("destination a dataset", lambda: f.copy("foo", foo["bar"]))
        check("empty name", lambda: f.copy("foo", ""))
        check("root without a name", lambda: f.copy(f, f))
        check("nothing new", lambda: sorted(f))


@case
def copy_creates_missing_groups(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        _tree(f)
        f.copy("foo/bar", "a/b/c")
        check("a/b/c", lambda: (f["a"], f["a/b"], f["a/b/c"][...]))
        f["foo"].copy("/foo/bar", "bar2")
        check("absolute source from a subgroup", lambda: f["foo/bar2"][...])
        f["foo"].copy("bar", "/top")
        check("absolute destination", lambda: f["top"][...])
        f.copy("foo", "tr/")
        check("trailing slash", lambda: "tr" in f)


@case
def copy_into_itself_is_a_snapshot(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        _tree(f)
        f.copy("foo", "foo/sub/inner")
        check("inner", lambda: _listing(f["foo/sub/inner"]))
        check("foo", lambda: _listing(f["foo"]))


@case
def copy_root_to_other_file(h5, new_path, check):
    with h5.File(new_path("a"), "w") as f1, h5.File(new_path("b"), "w") as f2:
        _tree(f1)
        f1.attrs["title"] = "root"
        f1.copy(f1, f2, "rootcopy")
        check("rootcopy", lambda: (_listing(f2["rootcopy"]), dict(f2["rootcopy"].attrs)))
        f1.copy("/", "whole")
        check("'/' into the same file", lambda: sorted(f1["whole"]))


@case
def copy_keeps_dataset_properties(h5, new_path, check):
    with h5.File(new_path("a"), "w") as f1, h5.File(new_path("b"), "w") as f2:
        ds = f1.create_dataset("d", shape=(10, 6), maxshape=(None, 6), dtype="i2", chunks=(4, 3),
                               fillvalue=-1, compression="gzip", compression_opts=6, shuffle=True,
                               fletcher32=True)
        ds[2:5] = 7
        f1.copy("d", f2)
        c = f2["d"]
        check("geometry", lambda: (c.shape, c.maxshape, c.chunks, c.dtype))
        check("filters", lambda: (c.compression, c.compression_opts, c.shuffle, c.fletcher32))
        check("fill", lambda: c.fillvalue)
        check("data", lambda: c[...])
        c.resize(12, axis=0)
        check("the copy grows", lambda: c[10:])


@case
def copy_scalar_and_empty_datasets(h5, new_path, check):
    with h5.File(new_path("a"), "w") as f1, h5.File(new_path("b"), "w") as f2:
        f1.create_dataset("g/s", data=np.float32(1.25))
        f1["g/s"].attrs["u"] = "K"
        f1.create_dataset("g/e", shape=(0, 3), dtype="u1")
        f1.copy("g", f2)
        check("scalar", lambda: (f2["g/s"].shape, f2["g/s"][()], dict(f2["g/s"].attrs)))
        check("empty", lambda: (f2["g/e"].shape, f2["g/e"][...]))
        check("empty maxshape", lambda: f2["g/e"].maxshape, slabfs_value=(None, 3))
        f1.copy("g/s", "s2", without_attrs=True)
        check("scalar without attrs", lambda: (f1["s2"].shape, len(f1["s2"].attrs)))


@case
def copy_from_a_read_only_file(h5, new_path, check):
    src = new_path("src")
    with h5.File(src, "w") as f:
        _tree(f)
    with h5.File(src, "r") as fr, h5.File(new_path("dst"), "w") as fw:
        fw.copy(fr["foo"], "foo")
        check("copied", lambda: (_listing(fw["foo"]), dict(fw["foo"].attrs)))
        # Not checked here: a copy into the read-only file crashes HDF5 1.10
        # later on (test_copy.py checks slabfs's OSError(EROFS)).


@case
def copy_between_groups_with_relative_paths(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        foo = _tree(f)
        foo.copy("sub", "sub2")
        check("sub2 beside sub", lambda: sorted(foo))
        foo.copy("sub/x", f["foo/sub2"], name="y")
        check("named copy", lambda: sorted(f["foo/sub2"]))
