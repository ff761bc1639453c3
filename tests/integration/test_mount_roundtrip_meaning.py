"""Meaning kept across copies through the xattr view (docs/mount.md,
"Extended attributes" and "New files and replacing files").

Attribute types: each numeric attribute shows user.slab.type.NAME next to
user.NAME, and cp -a, tar --xattrs (create, then extract) and rsync -aX
(to a new name in the mount, and mount -> plain directory -> another
container) copy both back, in their own orders. Checked with the Python
binding (the attribute's numpy type) and with xarray's CF decoding
(scale_factor, add_offset, _FillValue) through engine="slabfs".

Layouts: an exported copy of a growable typed dataset that gained rows,
brought back with rsync -aX or mv, keeps its dtype with the new row count,
and the user.slab.* layout names apply in any order."""
import errno
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from conftest import BIN, info, mpath, run, slab
from mounting import container, export, mounter  # noqa: F401

PYTHON_DIR = pathlib.Path(os.environ.get("SLABFS_PYTHON_DIR", BIN.parent / "python")).resolve()
if not (PYTHON_DIR / "slabfs" / "__init__.py").exists():
    raise RuntimeError(f"{PYTHON_DIR}/slabfs is not built (build the _slabfs target, or set SLABFS_PYTHON_DIR)")
sys.path.insert(0, str(PYTHON_DIR))

import slabfs  # noqa: E402

ROWS, COLS = 40, 16
RAW = (np.arange(ROWS * COLS, dtype="<i2").reshape(ROWS, COLS) * 3 - 500).astype("<i2")
RAW[3, 4] = RAW[17, 0] = -9999
TYPES = {"scale_factor": ("f8", "f8"), "add_offset": ("f4", "f4"), "_FillValue": ("i2", "i2"),
         "valid_range": ("i2", "i2[2]")}


def refusals(m):
    """The daemon's refusals, but for the ACLs cp and tar try to copy
    (system.posix_acl_*: not supported, and they say nothing)."""
    return [line for line in m.log().splitlines()
            if "refused (" in line and "setxattr system." not in line]


def quiet(*argv, cwd=None):
    """Runs a tool that must exit 0 and print nothing on stderr."""
    cp = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert cp.returncode == 0, f"{argv[0]} exited {cp.returncode}: {cp.stderr}"
    assert cp.stderr == "", f"{argv[0]}: {cp.stderr}"
    return cp


def make_cf_dataset(c, path="/g/temp"):
    """RAW as a growable i2 dataset with CF attributes of four numeric
    types and two strings; the group has a string and a number too."""
    slab("mkdset", "-p", c, path, "--dtype", "i2", "--shape", f"{ROWS},{COLS}", "--maxshape",
         f"unlimited,{COLS}", "--chunks", f"8,{COLS}")
    npy = pathlib.Path(str(c) + ".npy")
    np.save(npy, RAW)
    slab("import", c, path, npy)
    npy.unlink()
    slab("attr", "--dtype", "f8", c, path, "scale_factor", "0.5")
    slab("attr", "--dtype", "f4", c, path, "add_offset", "10.25")
    slab("attr", "--dtype", "i2", c, path, "_FillValue", "--", "-9999")
    slab("attr", "--dtype", "i2", c, path, "valid_range", "--", "-2000,30000")
    slab("attr", c, path, "units", "K")
    slab("attr", c, path, "_ARRAY_DIMENSIONS", '["time","x"]')
    group = path.rsplit("/", 1)[0]
    slab("attr", c, group, "title", "a run")
    slab("attr", "--dtype", "i4", c, group, "version", "3")


def expected_decoded(rows=RAW):
    want = rows.astype("f8") * 0.5 + np.float32(10.25)
    want[rows == -9999] = np.nan
    return want


def check_types(c, path, rows=RAW):
    """The dataset's attributes have their numpy types, and xarray decodes
    it as CF says."""
    with slabfs.File(c, "r") as f:
        attrs = f[path].attrs
        for name, (dtype, _) in TYPES.items():
            assert isinstance(attrs[name], (np.generic, np.ndarray)), (path, name, attrs[name])
            assert attrs[name].dtype == np.dtype(dtype), (path, name, attrs[name].dtype)
        assert attrs["scale_factor"] == 0.5 and attrs["_FillValue"] == -9999
        assert list(attrs["valid_range"]) == [-2000, 30000]
        assert attrs["units"] == "K"
        group = path.rsplit("/", 1)[0] or "/"
        assert f[group].attrs["version"].dtype == np.dtype("i4")
        assert f[group].attrs["title"] == "a run"
    name = path.rsplit("/", 1)[1]
    with xr.open_dataset(str(c), engine="slabfs", group=path.rsplit("/", 1)[0]) as ds:
        v = ds[name]
        assert v.dims == ("time", "x")
        assert v.dtype.kind == "f"  # decoded: scaled and masked
        np.testing.assert_array_equal(v.values.astype("f8"), expected_decoded(rows))
        assert v.attrs["units"] == "K"
        assert ds.attrs["version"] == 3


# ------------------------------------------------------------------ the view

def test_numeric_attributes_show_their_types(container, mounter):
    make_cf_dataset(container)
    m = mounter(container)
    ds, g = mpath(m, "/g/temp"), mpath(m, "/g")
    for name, (_, shown) in TYPES.items():
        assert os.getxattr(ds, "user." + name) != b""
        assert os.getxattr(ds, "user.slab.type." + name) == shown.encode(), name
    assert os.getxattr(ds, "user.scale_factor") == b"0.5"        # still text
    assert os.getxattr(ds, "user.valid_range") == b"-2000,30000"
    names = os.listxattr(ds)
    assert names.index("user.slab.type.scale_factor") == names.index("user.scale_factor") + 1
    for string_attr in ("units", "_ARRAY_DIMENSIONS"):
        assert "user.slab.type." + string_attr not in names
        with pytest.raises(OSError) as e:
            os.getxattr(ds, "user.slab.type." + string_attr)
        assert e.value.errno == errno.ENODATA
    assert os.getxattr(g, "user.slab.type.version") == b"i4"
    assert "user.slab.type.version" in os.listxattr(g)
    assert 'user.slab.type.valid_range="i2[2]"' in run("getfattr", "-d", ds).stdout


def test_setting_and_removing_a_type(container, mounter):
    make_cf_dataset(container)
    m = mounter(container)
    ds = mpath(m, "/g/temp")
    # Type after value: the text is read as the type.
    run("setfattr", "-n", "user.count", "-v", "7", ds)
    assert os.getxattr(ds, "user.count") == b"7"
    with pytest.raises(OSError):
        os.getxattr(ds, "user.slab.type.count")                  # a string so far
    run("setfattr", "-n", "user.slab.type.count", "-v", "u2", ds)
    assert os.getxattr(ds, "user.slab.type.count") == b"u2"
    # Type before value: the type waits for the value.
    run("setfattr", "-n", "user.slab.type.weights", "-v", "f4[3]", ds)
    run("setfattr", "-n", "user.weights", "-v", "0.25,0.5,1", ds)
    assert os.getxattr(ds, "user.slab.type.weights") == b"f4[3]"
    # A new value keeps the type the attribute has when it reads as it.
    run("setfattr", "-n", "user.scale_factor", "-v", "0.125", ds)
    assert os.getxattr(ds, "user.slab.type.scale_factor") == b"f8"
    run("setfattr", "-n", "user.count", "-v", "many", ds)        # not a u2: a string
    with pytest.raises(OSError):
        os.getxattr(ds, "user.slab.type.count")
    # Removing the type makes the value a string.
    run("setfattr", "-x", "user.slab.type.add_offset", ds)
    assert os.getxattr(ds, "user.add_offset") == b"10.25"
    with pytest.raises(OSError) as e:
        os.getxattr(ds, "user.slab.type.add_offset")
    assert e.value.errno == errno.ENODATA
    # Bad types, and values that do not read as a type set for them.
    for bad in (b"c8", b"f4[0]", b"f4[x]", b"i2[2"):
        with pytest.raises(OSError) as e:
            os.setxattr(ds, "user.slab.type.x", bad)
        assert e.value.errno == errno.EINVAL, bad
    os.setxattr(ds, "user.slab.type.y", b"i1")
    with pytest.raises(OSError) as e:
        os.setxattr(ds, "user.y", b"300")
    assert e.value.errno == errno.EINVAL
    os.setxattr(ds, "user.y", b"-3")
    assert m.unmount() == 0
    with slabfs.File(container, "r") as f:
        a = f["/g/temp"].attrs
        assert a["count"] == "many"
        assert a["weights"].dtype == np.float32 and list(a["weights"]) == [0.25, 0.5, 1.0]
        assert a["scale_factor"] == 0.125 and a["scale_factor"].dtype == np.float64
        assert a["add_offset"] == "10.25"
        assert a["y"] == -3 and a["y"].dtype == np.int8


# ------------------------------------------------------------------ the tools

def test_cp_a_to_a_new_name_keeps_types(container, mounter):
    make_cf_dataset(container)
    m = mounter(container)
    quiet("cp", "-a", mpath(m, "/g/temp"), mpath(m, "/g/temp_cp"))
    quiet("cp", "-a", mpath(m, "/g"), mpath(m, "/g2"))
    assert m.unmount() == 0
    check_types(container, "/g/temp_cp")
    check_types(container, "/g2/temp")
    assert info(container, "/g2/temp")["dtype"] == "i2"


def test_tar_xattrs_create_and_extract_keeps_types(container, mounter, tmp_path):
    make_cf_dataset(container)
    m = mounter(container)
    archive = tmp_path / "g.tar"
    quiet("tar", "--xattrs", "--xattrs-include=user.*", "-cf", archive, "-C", m.path, "g")
    os.mkdir(mpath(m, "/back"))
    quiet("tar", "--xattrs", "--xattrs-include=user.*", "-xf", archive, "-C", mpath(m, "/back"))
    assert m.unmount() == 0
    check_types(container, "/back/g/temp")
    j = info(container, "/back/g/temp")
    assert (j["dtype"], j["shape"], j["max_shape"]) == ("i2", [ROWS, COLS], [None, COLS])


def test_rsync_ax_within_the_mount_and_to_another_container(container, mounter, tmp_path):
    make_cf_dataset(container)
    other = tmp_path / "other.slab"
    slab("create", other)
    plain = tmp_path / "plain"
    m = mounter(container)
    quiet("rsync", "-aX", mpath(m, "/g/temp"), mpath(m, "/g/temp_rs"))     # a new name
    quiet("rsync", "-aX", mpath(m, "/g/"), str(plain) + "/")              # out to a plain dir
    assert os.getxattr(plain / "temp", "user.slab.type.scale_factor") == b"f8"
    m2 = mounter(other)
    quiet("rsync", "-aX", str(plain) + "/", mpath(m2, "/g/"))             # into another container
    quiet("cp", "-a", str(plain), mpath(m2, "/cp"))                       # and with cp -a
    assert m.unmount() == 0 and m2.unmount() == 0
    check_types(container, "/g/temp_rs")
    check_types(other, "/g/temp")
    check_types(other, "/cp/temp")
    assert export(other, "/g/temp") == RAW.tobytes()


# ---------------------------------------------------- growable types come back

def grown_copy(c, m, tmp_path, extra_rows=2):
    """rsync -aX the mount out, append rows to the copy of /g/temp."""
    tree = tmp_path / "tree"
    quiet("rsync", "-aX", mpath(m, "/"), str(tree) + "/")
    more = (np.arange(extra_rows * COLS, dtype="<i2").reshape(extra_rows, COLS) + 7).astype("<i2")
    with open(tree / "g" / "temp", "ab") as f:
        f.write(more.tobytes())
    return tree, np.concatenate([RAW, more])


@pytest.mark.parametrize("how", ["rsync over", "rsync after rm", "mv over", "mv after rm"])
def test_a_grown_copy_comes_back_typed(container, mounter, tmp_path, how):
    make_cf_dataset(container)
    m = mounter(container)
    tree, rows = grown_copy(container, m, tmp_path)
    assert os.getxattr(tree / "g" / "temp", "user.slab.shape") == f"{ROWS},{COLS}".encode()
    if how.endswith("after rm"):
        os.unlink(mpath(m, "/g/temp"))
    if how.startswith("rsync"):
        quiet("rsync", "-aX", str(tree) + "/", mpath(m, "/"))
    else:
        quiet("mv", tree / "g" / "temp", mpath(m, "/g/temp"))
    assert os.getxattr(mpath(m, "/g/temp"), "user.slab.dtype") == b"i2"
    assert os.getxattr(mpath(m, "/g/temp"), "user.slab.shape") == f"{ROWS + 2},{COLS}".encode()
    assert refusals(m) == [] and "byte stream" not in m.log()
    assert m.unmount() == 0
    j = info(container, "/g/temp")
    assert (j["dtype"], j["shape"], j["max_shape"], j["chunks"]) == ("i2", [ROWS + 2, COLS], [None, COLS],
                                                                     [8, COLS])
    assert export(container, "/g/temp") == rows.tobytes()
    check_types(container, "/g/temp", rows)


def test_layout_names_apply_in_any_order(container, mounter):
    """rsync sorts names (chunks before shape), ext4 lists them as stored:
    a new file holding data takes its fields in whatever order they come,
    set by path after the close or through the descriptor before it."""
    m = mounter(container)
    data = np.arange(6 * 4, dtype="<u2").reshape(6, 4).tobytes()
    fields = [("chunks", "3,4"), ("fill", "9"), ("maxshape", "unlimited,4"), ("shape", "5,4"),
              ("dtype", "u2"), ("filters", "shuffle,deflate=1")]
    p = mpath(m, "/closed")
    with open(p, "wb") as f:
        f.write(data)
    for name, value in fields:                      # by path, the file closed
        os.setxattr(p, "user.slab." + name, value.encode())
    q = mpath(m, "/open")
    fd = os.open(q, os.O_WRONLY | os.O_CREAT)
    os.write(fd, data)
    for name, value in reversed(fields):            # through the descriptor
        os.setxattr(fd, "user.slab." + name, value.encode())
    os.close(fd)
    for path in (p, q):
        assert os.getxattr(path, "user.slab.dtype") == b"u2"
        assert os.getxattr(path, "user.slab.shape") == b"6,4"   # the bytes hold 6 rows
    assert refusals(m) == []
    assert m.unmount() == 0
    for path in ("/closed", "/open"):
        j = info(container, path)
        assert (j["dtype"], j["shape"], j["max_shape"], j["chunks"], j["fill"], j["filters"]) == (
            "u2", [6, 4], [None, 4], [3, 4], 9, "shuffle,deflate=1"), path
        assert export(container, path) == data
