"""Groups as mappings (h5py's behaviour) and attributes of every kind."""
import numpy as np
import pytest

import slabfs


def test_groups_behave_like_h5py(path):
    with slabfs.File(path, "w") as f:
        a = f.create_group("a")
        b = a.create_group("b/c")           # intermediate groups are created
        assert b.name == "/a/b/c" and b.parent.name == "/a/b" and b.parent.parent == a
        assert f.parent == f and f.name == "/"
        a.create_dataset("x", data=[1, 2, 3])
        a["y"] = np.ones((2, 2))            # assignment creates a dataset
        assert isinstance(a["y"], slabfs.Dataset) and a["y"].dtype == np.float64
        assert sorted(a) == ["b", "x", "y"] and len(a) == 3
        assert list(a.keys()) == ["b", "x", "y"]
        assert [type(v).__name__ for v in a.values()] == ["Group", "Dataset", "Dataset"]
        assert "b/c" in a and "/a/b/c" in f and "a/b/c" in f and "nope" not in a and "x/y" not in a
        assert a["/a/x"] == a["x"] and f["a"]["./b/c"] == b
        assert a.get("x", getclass=True) is slabfs.Dataset and a.get("b", getclass=True) is slabfs.Group
        assert f.require_group("a") == a and f.require_group("new/deep").name == "/new/deep"
        assert a["x"].parent == a and a["x"].file is f
        with pytest.raises(TypeError):
            a["z"] = a["x"]                   # no links
        # visit / visititems: parents first, names sorted, relative.
        seen = []
        f.visit(seen.append)
        assert seen == ["a", "a/b", "a/b/c", "a/x", "a/y", "new", "new/deep"]
        items = []
        a.visititems(lambda n, o: items.append((n, type(o).__name__)))
        assert items == [("b", "Group"), ("b/c", "Group"), ("x", "Dataset"), ("y", "Dataset")]
        assert f.visit(lambda n: n if n.endswith("x") else None) == "a/x"
        # move keeps identity and handles.
        x = a["x"]
        f.move("a/x", "new/deep/x2")
        assert x.name == "/new/deep/x2" and "a/x" not in f
        np.testing.assert_array_equal(x[...], [1, 2, 3])
        # del removes a dataset, or a group with everything in it.
        del f["a"]
        assert "a" not in f and list(f) == ["new"]
        del f["new/deep/x2"]
        assert len(f["new/deep"]) == 0
        assert repr(f["new"]) == '<slabfs Group "/new" (1 members)>'
    with slabfs.File(path) as f:
        assert list(f) == ["new"]


def test_attributes_round_trip(path):
    values = {
        "s": "m/s",
        "unicode": "température ✓",
        "i": 42,
        "f": 2.5,
        "neg": -7,
        "big": 2**62,
        "arr": np.array([1.5, 2.5, 3.5]),
        "u2": np.array([1, 2, 65535], dtype=">u2"),   # big-endian in, little-endian stored
        "list": [1, 2, 3],
        "np_i1": np.int8(-3),
        "f4": np.float32(0.5),
        "bool": True,
        "half": np.float16(1.5),
        "dims": '["time", "lat", "lon"]',
    }
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("d", shape=(2,))
        for k, v in values.items():
            ds.attrs[k] = v
            f.attrs[k] = v
        f.attrs.create("created", [1, 2], dtype="u1")
        f.attrs.modify("s", "km/h")
    with slabfs.File(path) as f:
        for obj in (f, f["d"]):
            a = obj.attrs
            assert a["s"] == ("km/h" if obj is f else "m/s")
            assert a["unicode"] == "température ✓"
            assert a["i"] == 42 and a["i"].dtype == np.int64 and isinstance(a["i"], np.generic)
            assert a["f"] == 2.5 and a["f"].dtype == np.float64
            assert a["big"] == 2**62 and a["neg"] == -7
            np.testing.assert_array_equal(a["arr"], [1.5, 2.5, 3.5])
            assert a["u2"].dtype == np.dtype("<u2") and list(a["u2"]) == [1, 2, 65535]
            np.testing.assert_array_equal(a["list"], [1, 2, 3])
            assert a["np_i1"] == -3 and a["np_i1"].dtype == np.int8
            assert a["f4"].dtype == np.float32
            assert a["bool"] == 1 and a["half"] == 1.5 and a["half"].dtype == np.float32
            assert a["dims"] == '["time", "lat", "lon"]'
            assert "s" in a and "nope" not in a and 3 not in a
        assert f.attrs["created"].dtype == np.uint8
        assert sorted(f["d"].attrs) == sorted(values)
        assert len(f["d"].attrs) == len(values)
        assert dict(f["d"].attrs).keys() == values.keys()


def test_attribute_errors_change_nothing(path):
    with slabfs.File(path, "w") as f:
        a = f.attrs
        a["keep"] = 1
        for bad, exc in [(np.ones((2, 2)), ValueError), (np.array([]), ValueError), (1 + 2j, TypeError),
                         (["a", "b"], TypeError), (None, TypeError), (object(), TypeError),
                         (np.zeros(70000, dtype="u1"), ValueError)]:
            with pytest.raises(exc):
                a["x"] = bad
            assert "x" not in a
        with pytest.raises(TypeError):
            a[3] = 1
        with pytest.raises(ValueError):
            a["bad/name"] = 1
        del a["keep"]
        assert len(a) == 0


def test_attribute_bytes_that_are_not_utf8_read_as_bytes(path):
    with slabfs.File(path, "w") as f:
        f.attrs["raw"] = b"\xff\xfe"
        f.attrs["text"] = b"plain"
        assert f.attrs["raw"] == b"\xff\xfe" and f.attrs["text"] == "plain"
