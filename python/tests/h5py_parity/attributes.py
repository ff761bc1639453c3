"""Attributes (.attrs) of groups and datasets."""
import numpy as np

from . import case


@case
def attribute_values(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        a = f.attrs
        for name, value in [("int", 3), ("float", 2.5), ("str", "text"), ("np f4", np.float32(2)),
                            ("np i2 0-d", np.array(5, "i2")), ("list", [1.5, 2]), ("array", np.arange(4, dtype="u2"))]:
            a[name] = value
            check(name, lambda: a[name])


@case
def attribute_mapping(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        g = f.create_group("g")
        check("empty", lambda: (len(g.attrs), list(g.attrs), "x" in g.attrs))
        g.attrs["b"] = 1
        g.attrs["a"] = 2
        check("sorted names", lambda: (len(g.attrs), sorted(g.attrs), sorted(g.attrs.keys())))
        check("contains", lambda: ("a" in g.attrs, "z" in g.attrs))
        check("get", lambda: (g.attrs.get("a"), g.attrs.get("z"), g.attrs.get("z", 3)))
        check("items", lambda: sorted(g.attrs.items()))
        check("missing", lambda: g.attrs["z"])
        del g.attrs["a"]
        check("deleted", lambda: list(g.attrs))
        check("delete missing", lambda: g.attrs.__delitem__("a"))


@case
def attribute_create_and_modify(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        f.attrs.create("c", [1, 2, 3, 4], shape=(4,), dtype="u1")
        check("create", lambda: f.attrs["c"])
        f.attrs.create("d", 7, dtype="i2")
        check("create scalar", lambda: f.attrs["d"])
        f.attrs.modify("d", 9)
        check("modify", lambda: f.attrs["d"])
        f.attrs.modify("e", 1.5)
        check("modify a new name", lambda: f.attrs["e"])


@case
def attributes_survive_reopen(h5, new_path, check):
    p = new_path()
    with h5.File(p, "w") as f:
        f.attrs["title"] = "t"
        f.create_dataset("d", (2,)).attrs["scale"] = np.float64(0.5)
        f.create_group("g").attrs["n"] = np.int32(3)
    with h5.File(p, "r") as f:
        check("root", lambda: dict(f.attrs))
        check("dataset", lambda: dict(f["d"].attrs))
        check("group", lambda: dict(f["g"].attrs))
        check("write refused", lambda: f.attrs.__setitem__("x", 1))


@case
def attribute_overwrite_modify_and_names(h5, new_path, check):
    with h5.File(new_path(), "w") as f:
        a = f.attrs
        a["a"] = 3
        a["a"] = 4
        check("overwrite", lambda: (list(a.keys()), a["a"]))
        a.modify("a", 5)
        a.modify("b", 6)
        check("modify", lambda: (list(a.keys()), a["a"], a["b"]))
        check("modify to another shape", lambda: a.modify("b", np.arange(5)))
        check("unchanged", lambda: a["b"])
        a["t"] = (4.0, 5.0)
        check("tuple", lambda: a["t"])
        a.create("c", 4.0)
        check("create", lambda: a["c"])
        a[b"ascii"] = 42
        check("bytes name", lambda: (a[b"ascii"], a["ascii"], b"ascii" in a))
        a["Omega\u03a9"] = 43
        check("unicode name", lambda: a["Omega\u03a9"])
        check("views", lambda: (sorted(a.keys()), len(a.values()), ("c", 4.0) in a.items()))
