"""Groups as mappings: in, len, get, keys, iteration, the dict methods."""
import numpy as np

from . import case


@case
def contains_spellings(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        f.create_group("a")
        for name in [b"a", "a", b"/a", "/a", "mongoose", b"mongoose", "", b"", ".", b".", "/", b"/"]:
            check(f"{name!r} in f", lambda: name in f)


@case
def contains_trailing_slashes_and_oddball_paths(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        f.create_group("group")
        f.create_group("x/y/z")
        f["dataset"] = 42
        grp = f["x"]
        for name in ["/group/", "group/", "/dataset/", "dataset/", "//", "///", ".///", "././/",
                     ".//x/y/z", "x///", "./x///", "dataset///", "/dataset//", "dataset/x", "x/y/z/q"]:
            check(f"{name!r} in f", lambda: name in f)
        check("'.//x/y/z' in f['x']", lambda: ".//x/y/z" in grp)
        check("'y/z' in f['x']", lambda: "y/z" in grp)
        check("'/group' in f['x']", lambda: "/group" in grp)


@case
def contains_on_a_closed_file(h5, new_path, check):
    f = h5.File(new_path(), "w")
    f.create_group("a")
    f.close()
    check("'a' in closed", lambda: "a" in f)
    check("b'a' in closed", lambda: b"a" in f)
    check("bool", lambda: bool(f))


@case
def len_and_iteration(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("empty", lambda: (len(f), list(f), list(f.keys())))
        for name in "dbca":
            f.create_group(name)
        f["e"] = [1]
        check("len", lambda: len(f))
        check("iter", lambda: list(f))
        check("reversed", lambda: list(reversed(f)))
        check("len of a subgroup", lambda: len(f["a"]))


@case
def keys_values_items_views(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        for name in "abc":
            f.create_group(name)
        f["d"] = [1, 2]
        kv, vv, iv = f.keys(), f.values(), f.items()
        check("keys", lambda: (list(kv), len(kv), "a" in kv, "z" in kv))
        check("reversed keys", lambda: list(reversed(kv)))
        check("values", lambda: (list(vv), len(vv), f["a"] in vv))
        check("items", lambda: (list(iv), len(iv), ("a", f["a"]) in iv))
        f.create_group("e")
        check("views follow the group", lambda: (len(kv), list(kv)))


@case
def get_variants(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        grp = f.create_group("a")
        f.create_dataset("bar", (4,))
        f.create_group("x/y")
        check("missing", lambda: f.get("mongoose"))
        check("missing with default", lambda: f.get("mongoose", 42))
        check("bytes name", lambda: f.get(b"a") == grp)
        check("nested", lambda: f.get("x/y"))
        check("nested missing", lambda: f.get("a/b/c"))
        check("getclass group", lambda: f.get("a", getclass=True))
        check("getclass dataset", lambda: f.get("bar", getclass=True))
        check("getclass missing", lambda: f.get("zz", getclass=True))
        check("an int", lambda: f.get(3))


@case
def getitem_errors(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        f.create_group("group")
        check("f[0]", lambda: f[0])
        check("f[...]", lambda: f[...])
        check("missing", lambda: f["foo"])
        check("through a dataset", lambda: (f.__setitem__("d", [1]), f["d/x"]))
        check("root", lambda: (f["/"], f["/group"] == f["group"]))


@case
def dict_methods(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        for x in ("/test/a", "/test/b", "/test/c", "/test/d"):
            f.create_group(x)
        g = f["test"]
        check("pop", lambda: (g.pop("a"), "a" in g))
        check("pop default", lambda: g.pop("e", None))
        check("pop missing", lambda: g.pop("e"))
        check("popitem", lambda: (g.popitem()[0], sorted(g)))
        g.update({"e": np.array([42])})
        g.update([("f", np.array([43])), ("h", np.array([44]))])
        g.update(i=np.array([45]))
        check("after updates", lambda: (sorted(g), g["f"][...]))
        check("setdefault existing", lambda: g.setdefault("e") == g["e"])
        check("setdefault new", lambda: g.setdefault("j", np.array([42]))[...])
        check("setdefault None", lambda: g.setdefault("k"))
        g.clear()
        check("clear", lambda: (len(g), list(g)))


@case
def delete(h5, new_path, check):
    p = new_path()
    with h5.File(p, "w") as f:
        f.create_group("foo/bar")
        f["foo/d"] = [1]
        del f["foo/d"]
        check("dataset gone", lambda: sorted(f["foo"]))
        del f["foo"]
        check("group gone", lambda: "foo" in f)
        check("missing", lambda: f.__delitem__("foo"))
        f.create_group("keep")
    with h5.File(p, "r") as f:
        check("read-only", lambda: f.__delitem__("keep"), slabfs_raises=OSError)


@case
def create_group_variants(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        check("plain", lambda: f.create_group("foo"))
        check("intermediate", lambda: f.create_group("a/b/c").name)
        check("exists", lambda: f.create_group("foo"))
        check("unicode", lambda: f.create_group("\u201ccurly\u201d").name)
        check("bytes", lambda: f.create_group(b"bytes").name)
        check("absolute from a subgroup", lambda: f["foo"].create_group("/abs").name)
        check("track_order", lambda: f.create_group("t", track_order=False).name)


@case
def require_group_and_dataset(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        g = f.create_group("foo")
        f.create_dataset("d", (3,), "i8")
        check("require existing", lambda: f.require_group("foo") == g)
        check("require new", lambda: f.require_group("bar").name)
        check("require intermediate", lambda: f.require_group("x/y/z").name)
        check("dataset in the way", lambda: f.require_group("d"))
        check("require_dataset existing", lambda: f.require_dataset("d", (3,), "i8"))
        check("shape conflict", lambda: f.require_dataset("d", (4,), "i8"))
        check("group in the way", lambda: f.require_dataset("foo", (3,), "i8"))
        check("dtype exact", lambda: f.require_dataset("d", (3,), "i4", exact=True))
        check("dtype close", lambda: f.require_dataset("d", (3,), "i4").dtype)
        check("dtype wider", lambda: f.require_dataset("d", (3,), "f8"))
        check("new with kwargs", lambda: f.require_dataset("n", (2, 2), "u1", fillvalue=9)[...])
        check("intermediate", lambda: f.require_dataset("p/q", (2,), "f4").name)


@case
def move_variants(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        f.create_group("a")
        f["d"] = [1, 2, 3]
        check("onto an existing name", lambda: f.move("a", "d"))
        check("onto itself", lambda: f.move("a", "a"))
        check("missing source", lambda: f.move("zz", "yy"), slabfs_raises=KeyError)
        f.move("d", "a/d2")
        check("moved", lambda: (sorted(f), f["a/d2"][...]))


@case
def visit_and_bailout(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        for name in ("grp1/sub1/sub2", "grp2"):
            f.create_group(name)
        f["grp1/d"] = [1]
        names = []
        f.visit(names.append)
        check("visit", lambda: names)
        check("bailout", lambda: f.visit(lambda n: n if n.endswith("sub1") else None))
        items = []
        f["grp1"].visititems(lambda n, o: items.append((n, o)))
        check("visititems below grp1", lambda: items)


@case
def names_parents_and_equality(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        a = f.create_group("a")
        f["a/d"] = [1]
        check("names", lambda: (f.name, a.name, f["a/d"].name))
        check("parents", lambda: (f.parent, a.parent, f["a/d"].parent))
        check("equality", lambda: (f["a"] == a, f["a/d"] == f["a/d"], f["a"] == f["a/d"], a != f))
        check("hashable", lambda: len({f["a"], a, f["a/d"], f["a/d"]}))
        check("file", lambda: (a.file == f, f["a/d"].file == f))
        check("mode", lambda: f.mode)


@case
def file_modes(h5, new_path, check):
    p = new_path()
    check("r on a missing file", lambda: h5.File(p, "r"))
    check("r+ on a missing file", lambda: h5.File(p, "r+"))
    with h5.File(p, "w-") as f:
        f.create_group("a")
    check("w- on an existing file", lambda: h5.File(p, "w-"))
    check("x on an existing file", lambda: h5.File(p, "x"))
    check("bad mode", lambda: h5.File(p, "q"))
    with h5.File(p, "a") as f:
        check("a keeps", lambda: (list(f), f.mode))
    with h5.File(p, "r") as f:
        check("r mode", lambda: f.mode)
        check("create in r", lambda: f.create_group("b"), slabfs_raises=OSError)
    with h5.File(p, "w") as f:
        check("w empties", lambda: list(f))


@case
def setitem_values(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        f["a"] = np.arange(6, dtype="u2").reshape(2, 3)
        f["b"] = [1.5, 2]
        f[b"c"] = [[1, 2], [3, 4]]
        f["g/h"] = [7]
        check("a", lambda: (f["a"].dtype, f["a"][...]))
        check("b", lambda: (f["b"].dtype, f["b"][...]))
        check("c", lambda: (f["c"].dtype, f["c"][...]))
        check("intermediate", lambda: f["g/h"][...])
        check("exists", lambda: f.__setitem__("a", [1]), slabfs_raises=ValueError)
