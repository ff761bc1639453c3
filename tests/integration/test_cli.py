"""Integration tests for the `slab` command-line tool: every command, import
and export round trips against numpy, and bad input of every kind, which
must give exit status 1 (2 for usage errors), one message on stderr, and an
unchanged container."""
import hashlib
import json
import os
import io
import subprocess
import time

import numpy as np
import pytest

from conftest import bin_path, fails, slab

DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"]
COMMANDS = ["create", "mkgroup", "mkdset", "ls", "info", "import", "export", "rm", "mv",
            "attr"]


# ---------------------------------------------------------------- helpers

def slab_bytes(*args, input=None, check=True, timeout=120):
    """Runs slab with binary stdin/stdout."""
    cp = subprocess.run([bin_path("slab"), *map(str, args)], capture_output=True,
                        input=input, timeout=timeout)
    if check and cp.returncode != 0:
        raise AssertionError(f"slab {args} exited {cp.returncode}: {cp.stderr!r}")
    return cp


def random_array(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


def shape_arg(shape):
    return ",".join(str(d) for d in shape)


def tree_paths(c):
    """Every object path in the container, depth first."""
    out = slab("ls", "-r", c).stdout.splitlines()
    return ["/" + line.rstrip("/") for line in out]


def snapshot(c):
    """Everything a user can observe about a container: the long listing, every
    object's description, and a digest of every dataset's elements."""
    state = {"ls": slab("ls", "-l", "-r", c).stdout,
             "/": slab("info", "--json", c, "/").stdout}
    for p in tree_paths(c):
        info = json.loads(slab("info", "--json", c, p).stdout)
        state[p] = info
        if info["kind"] == "dataset":
            data = slab_bytes("export", c, p, "-").stdout
            state[p + "#data"] = hashlib.sha256(data).hexdigest()
    return state


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def box(tmp_path):
    """An empty container."""
    c = tmp_path / "box.slab"
    slab("create", c)
    return c


@pytest.fixture
def filled(tmp_path):
    """A container with groups, datasets with data, and attributes."""
    c = tmp_path / "filled.slab"
    slab("create", c)
    slab("mkgroup", "-p", c, "/g/sub")
    slab("mkdset", c, "/g/ds", "--dtype", "f4", "--shape", "10,20", "--chunks", "4,6",
         "--fill", "-1")
    slab("mkdset", c, "/bytes", "--dtype", "u1", "--shape", "100")
    a = random_array("f4", (10, 20), seed=1)
    src = tmp_path / "ds.npy"
    np.save(src, a)
    slab("import", c, "/g/ds", src)
    slab("attr", c, "/g", "units", "m/s")
    slab("attr", c, "/g/ds", "scale", "2.5")
    return c


# ---------------------------------------------------------------- basics

def test_version():
    cp = slab("--version")
    assert "slab" in cp.stdout and "0.1.0" in cp.stdout


def test_help_lists_every_command():
    out = slab("--help").stdout
    for cmd in COMMANDS:
        assert cmd in out


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_has_help(cmd):
    cp = slab(cmd, "--help")
    assert cp.returncode == 0
    assert cmd in cp.stdout
    assert "FILE" in cp.stdout
    assert cp.stderr == ""


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["ls"],
    ["ls", "--bogus", "x.slab"],
    ["mkdset", "x.slab", "/d"],                        # no --dtype, --shape
    ["mkdset", "x.slab", "/d", "--dtype", "f4"],       # no --shape
    ["create"],
    ["create", "a.slab", "b.slab"],
    ["export", "x.slab", "/d", "o.npy", "--format", "zip"],
    ["attr", "x.slab", "/", "n", "v", "--delete"],
    ["attr", "x.slab", "/", "--delete"],
    ["attr", "x.slab", "/", "n", "--string"],
    ["info"],
    ["--log-level", "loud", "ls", "x.slab"],
])
def test_usage_errors_exit_2(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    fails(*args, code=2)
    assert not (tmp_path / "x.slab").exists()


def test_create_makes_empty_container(tmp_path):
    c = tmp_path / "new.slab"
    cp = slab("create", c)
    assert cp.stdout == "" and cp.stderr == ""
    assert c.exists()
    assert slab("ls", c).stdout == ""
    info = json.loads(slab("info", "--json", c, "/").stdout)
    assert info["kind"] == "group" and info["num_children"] == 0


def test_create_never_overwrites(box, tmp_path):
    slab("mkgroup", box, "/keep")
    before = file_digest(box)
    cp = fails("create", box)
    assert "exists" in cp.stderr
    assert file_digest(box) == before
    other = tmp_path / "notes.txt"
    other.write_text("precious\n")
    fails("create", other)
    assert other.read_text() == "precious\n"


def test_create_in_missing_directory(tmp_path):
    fails("create", tmp_path / "no" / "such" / "dir" / "x.slab")


# ---------------------------------------------------------------- groups

def test_mkgroup(box):
    slab("mkgroup", box, "/a")
    slab("mkgroup", box, "/a/b")
    slab("mkgroup", "-p", box, "/x/y/z")
    slab("mkgroup", "-p", box, "/x/y")          # existing is fine with -p
    assert slab("ls", box).stdout == "a/\nx/\n"
    assert slab("ls", "-r", box).stdout == "a/\na/b/\nx/\nx/y/\nx/y/z/\n"
    assert slab("ls", box, "/x/y").stdout == "z/\n"


def test_mkgroup_errors_leave_container_unchanged(box):
    slab("mkgroup", box, "/a")
    before = snapshot(box)
    assert "exists" in fails("mkgroup", box, "/a").stderr
    fails("mkgroup", box, "/missing/child")    # no -p
    fails("mkgroup", box, "/")
    assert snapshot(box) == before


def test_mkgroup_under_dataset_fails(box):
    slab("mkdset", box, "/d", "--dtype", "u1", "--shape", "4")
    before = snapshot(box)
    fails("mkgroup", box, "/d/g")
    fails("mkgroup", "-p", box, "/d/g")
    assert snapshot(box) == before


# ---------------------------------------------------------------- datasets

def test_mkdset_and_long_listing(box):
    slab("mkdset", box, "/ds", "--dtype", "f4", "--shape", "2000,2000", "--chunks", "100,100")
    slab("mkgroup", box, "/g")
    header, *lines = slab("ls", "-l", box).stdout.splitlines()
    assert header.split()[0] == "KIND"
    assert len(lines) == 2
    assert lines[0].split() == ["dataset", "f4", "2000,2000", "100,100", "16000000", "0", "-", "ds"]
    assert lines[1].split()[0] == "group" and lines[1].split()[-1] == "g/"
    # A dataset path lists the dataset itself.
    assert slab("ls", box, "/ds").stdout == "/ds\n"
    assert slab("ls", "-l", box, "/ds").stdout.splitlines()[1].split()[:3] == ["dataset", "f4", "2000,2000"]


def test_mkdset_chooses_chunks_when_not_given(box):
    slab("mkdset", box, "/ds", "--dtype", "i2", "--shape", "300,40,7")
    info = json.loads(slab("info", "--json", box, "/ds").stdout)
    assert len(info["chunks"]) == 3
    assert all(c >= 1 for c in info["chunks"])
    assert info["shape"] == [300, 40, 7]


def test_mkdset_parents(box):
    fails("mkdset", box, "/a/b/ds", "--dtype", "u1", "--shape", "3")
    slab("mkdset", "-p", box, "/a/b/ds", "--dtype", "u1", "--shape", "3")
    assert slab("ls", "-r", box).stdout == "a/\na/b/\na/b/ds\n"


@pytest.mark.parametrize("dtype,fill,expect", [
    ("f4", "-1.5", -1.5), ("f8", "=-inf", -np.inf), ("i1", "-128", -128),
    ("u8", "18446744073709551615", 2**64 - 1), ("i4", "0x10", 16), ("f4", "nan", np.nan),
])
def test_mkdset_fill_value(box, tmp_path, dtype, fill, expect):
    args = ["--fill" + fill] if fill.startswith("=") else ["--fill", fill]
    slab("mkdset", box, "/d", "--dtype", dtype, "--shape", "5,3", *args)
    out = tmp_path / "d.npy"
    slab("export", box, "/d", out)
    a = np.load(out)
    assert a.dtype == np.dtype(dtype) and a.shape == (5, 3)
    if isinstance(expect, float) and np.isnan(expect):
        assert np.isnan(a).all()
    else:
        assert (a == np.array(expect, dtype=dtype)).all()


def test_info_dataset_text_and_json(filled):
    text = slab("info", filled, "/g/ds").stdout
    for line in ["path: /g/ds", "kind: dataset", "dtype: f4", "shape: 10,20", "chunks: 4,6",
                 "fill: -1", "size_bytes: 800", "num_chunks: 12", "  scale = 2.5"]:
        assert line in text.splitlines(), f"{line!r} not in\n{text}"
    info = json.loads(slab("info", "--json", filled, "/g/ds").stdout)
    assert info["path"] == "/g/ds"
    assert info["kind"] == "dataset"
    assert isinstance(info["id"], int)
    assert info["dtype"] == "f4"
    assert info["shape"] == [10, 20]
    assert info["max_shape"] == [10, 20]
    assert info["chunks"] == [4, 6]
    assert info["fill"] == -1
    assert info["num_elements"] == 200
    assert info["size_bytes"] == 800
    assert info["num_chunks"] == 12
    assert info["allocated_chunks"] == 12
    assert 0 < info["stored_bytes"] <= 800 * 2
    assert "index" in info and "index_bytes" in info
    assert info["attributes"] == {"scale": 2.5}


def test_info_group_json(filled):
    info = json.loads(slab("info", "--json", filled, "/g").stdout)
    assert info["kind"] == "group"
    assert info["num_children"] == 2
    assert info["attributes"] == {"units": "m/s"}
    root = json.loads(slab("info", "--json", filled, "/").stdout)
    assert root["path"] == "/" and root["num_children"] == 2


def test_ls_long_recursive(filled):
    lines = [l.split() for l in slab("ls", "-l", "-r", filled).stdout.splitlines()[1:]]
    names = [l[-1] for l in lines]
    assert names == ["bytes", "g/", "g/ds", "g/sub/"]
    ds = lines[names.index("g/ds")]
    assert ds[:5] == ["dataset", "f4", "10,20", "4,6", "800"]
    assert int(ds[5]) > 0
    assert lines[names.index("bytes")][5] == "0"     # nothing written yet
    assert slab("ls", "-r", filled, "/g").stdout == "ds\nsub/\n"


def test_ls_missing_path(filled):
    assert "/nope" in fails("ls", filled, "/nope").stderr
    fails("info", filled, "/g/nope")


# ---------------------------------------------------------------- import / export

CASES = [
    ("u1", (1000,), (64,)),
    ("i1", (7, 9), (3, 4)),
    ("i2", (33, 17), (8, 8)),
    ("u2", (5, 6, 7), (2, 3, 4)),
    ("i4", (100, 3), (100, 3)),
    ("u4", (2, 3, 4, 5), (1, 2, 3, 4)),
    ("i8", (50,), (7,)),
    ("u8", (9, 11), (4, 5)),
    ("f4", (64, 48), (10, 10)),
    ("f8", (3, 1, 4, 1, 5), (2, 1, 3, 1, 2)),
]


@pytest.mark.parametrize("dtype,shape,chunks", CASES)
def test_raw_round_trip(box, tmp_path, dtype, shape, chunks):
    a = random_array(dtype, shape, seed=DTYPES.index(dtype))
    raw = tmp_path / "in.bin"
    a.tofile(raw)
    slab("mkdset", box, "/d", "--dtype", dtype, "--shape", shape_arg(shape),
         "--chunks", shape_arg(chunks))
    slab("import", box, "/d", raw)
    out = tmp_path / "out.bin"
    slab("export", box, "/d", out)
    assert out.read_bytes() == raw.read_bytes()
    assert slab_bytes("export", box, "/d", "-").stdout == raw.read_bytes()


@pytest.mark.parametrize("dtype,shape,chunks", CASES)
def test_npy_round_trip_matches_numpy_save(box, tmp_path, dtype, shape, chunks):
    a = random_array(dtype, shape, seed=7)
    src = tmp_path / "in.npy"
    np.save(src, a)
    slab("import", "--create", "--chunks", shape_arg(chunks), box, "/d", src)
    info = json.loads(slab("info", "--json", box, "/d").stdout)
    assert info["dtype"] == dtype and info["shape"] == list(shape)
    assert info["chunks"] == list(chunks)
    out = tmp_path / "out.npy"
    slab("export", box, "/d", out)
    b = np.load(out)
    assert b.dtype == a.dtype and b.shape == a.shape
    assert np.array_equal(a, b, equal_nan=True)
    # Byte for byte what numpy writes, header included.
    assert out.read_bytes() == src.read_bytes()


def test_import_npy_into_existing_dataset_of_other_shape(box, tmp_path):
    slab("mkdset", box, "/d", "--dtype", "i4", "--shape", "6,4")
    a = np.arange(24, dtype="<i4").reshape(3, 8)        # same count, other shape
    np.save(tmp_path / "a.npy", a)
    slab("import", box, "/d", tmp_path / "a.npy")
    out = tmp_path / "out.npy"
    slab("export", box, "/d", out)
    assert np.array_equal(np.load(out), a.reshape(6, 4))


def test_npy_is_detected_by_magic_not_extension(box, tmp_path):
    a = random_array("u2", (10, 10))
    with open(tmp_path / "data.bin", "wb") as f:
        np.save(f, a)
    slab("mkdset", box, "/d", "--dtype", "u2", "--shape", "10,10")
    slab("import", box, "/d", tmp_path / "data.bin")
    assert slab_bytes("export", box, "/d", "-").stdout == a.tobytes()


def test_import_create_raw_needs_dtype_and_shape(box, tmp_path):
    a = random_array("f8", (4, 5))
    a.tofile(tmp_path / "a.raw")
    before = snapshot(box)
    assert "--dtype" in fails("import", "--create", box, "/d", tmp_path / "a.raw").stderr
    assert snapshot(box) == before
    slab("import", "--create", "--dtype", "f8", "--shape", "4,5", "--fill", "7", box, "/d",
         tmp_path / "a.raw")
    assert slab_bytes("export", box, "/d", "-").stdout == a.tobytes()
    assert json.loads(slab("info", "--json", box, "/d").stdout)["fill"] == 7


def test_import_create_parents(box, tmp_path):
    np.save(tmp_path / "a.npy", np.ones((2, 2), dtype="f4"))
    slab("import", "--create", "-p", box, "/x/y/d", tmp_path / "a.npy")
    assert slab("ls", "-r", box).stdout == "x/\nx/y/\nx/y/d\n"


def test_import_from_stdin_and_export_to_stdout(box):
    a = random_array("i8", (20, 30))
    slab("mkdset", box, "/d", "--dtype", "i8", "--shape", "20,30", "--chunks", "7,7")
    slab_bytes("import", box, "/d", "-", input=a.tobytes())
    assert slab_bytes("export", box, "/d", "-").stdout == a.tobytes()
    # A .npy on stdin is recognised too.
    b = np.arange(600, dtype="<i8").reshape(20, 30)
    slab_bytes("import", box, "/d", "-", input=npy_bytes(b))
    assert slab_bytes("export", box, "/d", "-").stdout == b.tobytes()


def test_export_format_option(box, tmp_path):
    slab("mkdset", box, "/d", "--dtype", "u1", "--shape", "4", "--fill", "9")
    slab("export", "--format", "npy", box, "/d", tmp_path / "x.dat")
    assert np.array_equal(np.load(tmp_path / "x.dat"), np.full(4, 9, dtype="u1"))
    slab("export", "--format", "raw", box, "/d", tmp_path / "y.npy")
    assert (tmp_path / "y.npy").read_bytes() == bytes([9] * 4)
    out = slab_bytes("export", "--format", "npy", box, "/d", "-").stdout
    assert out.startswith(b"\x93NUMPY")
    slab("export", box, "/d", tmp_path / "upper.NPY")
    assert (tmp_path / "upper.NPY").read_bytes().startswith(b"\x93NUMPY")


def test_export_replaces_existing_output(box, tmp_path):
    slab("mkdset", box, "/d", "--dtype", "u1", "--shape", "3", "--fill", "1")
    out = tmp_path / "out.bin"
    out.write_bytes(b"old contents that are longer")
    slab("export", box, "/d", out)
    assert out.read_bytes() == b"\x01\x01\x01"
    slab("export", box, "/d", "/dev/null")


def test_large_import_and_export_stream_in_blocks(box, tmp_path):
    # 40 MiB: more than two 16 MiB transfer blocks, with a partial last block.
    n = 10 * 1024 * 1024 + 12345
    a = np.arange(n, dtype="<u4")
    src = tmp_path / "big.npy"
    np.save(src, a)
    slab("import", "--create", "--chunks", "1000000", box, "/big", src, timeout=600)
    out = tmp_path / "big_out.npy"
    slab("export", box, "/big", out, timeout=600)
    assert file_digest(out) == file_digest(src)
    raw = slab_bytes("export", box, "/big", "-", timeout=600).stdout
    assert len(raw) == 4 * n and raw == a.tobytes()


# ---------------------------------------------------------------- rm, mv

def test_rm(filled):
    slab("rm", filled, "/bytes")
    assert "bytes" not in slab("ls", filled).stdout
    slab("rm", filled, "/g/sub")
    assert slab("ls", filled, "/g").stdout == "ds\n"


def test_rm_non_empty_group_needs_r(filled):
    before = snapshot(filled)
    assert "-r" in fails("rm", filled, "/g").stderr
    assert snapshot(filled) == before
    slab("rm", "-r", filled, "/g")
    assert slab("ls", "-r", filled).stdout == "bytes\n"


def test_rm_errors(filled):
    before = snapshot(filled)
    fails("rm", filled, "/")
    fails("rm", "-r", filled, "/")
    fails("rm", filled, "/nope")
    fails("rm", filled, "/g/ds/x")
    assert snapshot(filled) == before


def test_mv(filled):
    slab("mv", filled, "/g/ds", "/moved")
    assert slab("ls", filled).stdout == "bytes\ng/\nmoved\n"
    info = json.loads(slab("info", "--json", filled, "/moved").stdout)
    assert info["shape"] == [10, 20] and info["attributes"] == {"scale": 2.5}
    before = snapshot(filled)
    fails("mv", filled, "/g", "/g/sub/inside")
    fails("mv", filled, "/nope", "/x")
    fails("mv", filled, "/", "/x")
    assert snapshot(filled) == before


# ---------------------------------------------------------------- attributes

def test_attr_set_get_list_delete(box):
    slab("mkdset", box, "/d", "--dtype", "f4", "--shape", "3")
    slab("attr", box, "/d", "units", "kelvin")
    slab("attr", box, "/d", "count", "42")
    slab("attr", box, "/d", "scale", "0.25")
    slab("attr", box, "/d", "dims", "1,2,3")
    slab("attr", box, "/d", "offset", "-3")
    slab("attr", box, "/d", "code", "007", "--string")
    slab("attr", box, "/d", "small", "1,2,250", "--dtype", "u1")
    slab("attr", box, "/d", "dash", "--", "-x")
    slab("attr", box, "/", "title", "a run with spaces")
    assert slab("attr", box, "/d", "units").stdout == "kelvin\n"
    assert slab("attr", box, "/d", "count").stdout == "42\n"
    assert slab("attr", box, "/d", "dims").stdout == "1,2,3\n"
    assert slab("attr", box, "/d", "code").stdout == "007\n"
    assert slab("attr", box, "/d", "dash").stdout == "-x\n"
    listing = slab("attr", box, "/d").stdout.splitlines()
    assert "units = kelvin" in listing and "scale = 0.25" in listing
    assert "small = 1,2,250" in listing and "offset = -3" in listing
    info = json.loads(slab("info", "--json", box, "/d").stdout)
    assert info["attributes"] == {"code": "007", "count": 42, "dash": "-x", "dims": [1, 2, 3],
                                  "offset": -3, "scale": 0.25, "small": [1, 2, 250],
                                  "units": "kelvin"}
    assert slab("attr", box, "/", "title").stdout == "a run with spaces\n"
    slab("attr", box, "/d", "units", "--delete")
    assert "units" not in slab("attr", box, "/d").stdout
    slab("attr", box, "/d", "count", "43")          # replace
    assert slab("attr", box, "/d", "count").stdout == "43\n"


def test_attr_errors(box):
    slab("mkgroup", box, "/g")
    slab("attr", box, "/g", "a", "1")
    before = snapshot(box)
    fails("attr", box, "/g", "missing")
    fails("attr", box, "/g", "missing", "--delete")
    fails("attr", box, "/nope", "a", "1")
    fails("attr", box, "/nope")
    fails("attr", box, "/g", "", "1")
    fails("attr", box, "/g", "a/b", "1")
    fails("attr", box, "/g", "..", "1")
    fails("attr", box, "/g", "n" * 256, "1")
    fails("attr", box, "/g", "big", "x" * (64 * 1024 + 1))
    fails("attr", box, "/g", "v", "1,300", "--dtype", "u1")
    fails("attr", box, "/g", "v", "1", "--dtype", "c8")
    assert snapshot(box) == before


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("path", ["", "relative", "a/b", "/a/..", "/a/.", "/..", "/.",
                                  "/" + "n" * 256, "/g/../x"])
def test_bad_names_are_refused(filled, path):
    before = snapshot(filled)
    fails("mkgroup", filled, path)
    fails("mkgroup", "-p", filled, path)
    fails("mkdset", filled, path, "--dtype", "u1", "--shape", "3")
    fails("rm", filled, path)
    fails("ls", filled, path)
    fails("info", filled, path)
    fails("attr", filled, path, "a", "1")
    assert snapshot(filled) == before


@pytest.mark.parametrize("dtype", ["f16", "complex64", "c8", "", "u3", "<f4x", "b1", "f4,f4"])
def test_unknown_dtype(filled, dtype):
    before = snapshot(filled)
    cp = fails("mkdset", filled, "/x", "--dtype", dtype, "--shape", "3")
    assert "dtype" in cp.stderr
    assert snapshot(filled) == before


@pytest.mark.parametrize("shape", ["0", "5,0", "-5", "=-5", "abc", "5,,5", "", "1.5", ",",
                                   "99999999999999999999", "1," * 32 + "1"])
def test_bad_shape(filled, shape):
    before = snapshot(filled)
    args = ["--shape" + shape] if shape.startswith("=") else ["--shape", shape]
    fails("mkdset", filled, "/x", "--dtype", "u1", *args)
    assert snapshot(filled) == before


@pytest.mark.parametrize("chunks", ["5", "5,5,5", "0,5", "5,-1", "x,y", ","])
def test_bad_chunks(filled, chunks):
    before = snapshot(filled)
    fails("mkdset", filled, "/x", "--dtype", "u1", "--shape", "10,10", "--chunks", chunks)
    assert snapshot(filled) == before


@pytest.mark.parametrize("dtype,fill", [("u1", "256"), ("u1", "-1"), ("i1", "-129"),
                                        ("i1", "128"), ("u4", "4294967296"), ("i4", "abc"),
                                        ("i2", "1.5"), ("u8", "1e30"), ("f4", "1e39"),
                                        ("i8", "9223372036854775808")])
def test_fill_out_of_range(filled, dtype, fill):
    before = snapshot(filled)
    cp = fails("mkdset", filled, "/x", "--dtype", dtype, "--shape", "3", f"--fill={fill}")
    assert "--fill" in cp.stderr
    assert snapshot(filled) == before


def test_existing_dataset_name(filled):
    before = snapshot(filled)
    cp = fails("mkdset", filled, "/g/ds", "--dtype", "u1", "--shape", "3")
    assert "/g/ds" in cp.stderr and "exists" in cp.stderr
    fails("mkdset", filled, "/g", "--dtype", "u1", "--shape", "3")
    fails("mkdset", filled, "/", "--dtype", "u1", "--shape", "3")
    fails("mkdset", filled, "/g/ds/x", "--dtype", "u1", "--shape", "3")
    assert snapshot(filled) == before


@pytest.mark.parametrize("args", [
    ["ls"], ["ls", "-l", "-r"], ["info", "/"], ["attr", "/"], ["mkgroup", "/a"],
    ["mkdset", "/d", "--dtype", "u1", "--shape", "3"], ["rm", "/a"],
    ["export", "/d", "out.bin"],
])
def test_missing_container(tmp_path, monkeypatch, args):
    c = tmp_path / "missing.slab"
    monkeypatch.chdir(tmp_path)
    cmd, rest = args[0], args[1:]
    flags = [a for a in rest if a.startswith("-l") or a == "-r"]
    positional = [a for a in rest if a not in flags]
    cp = fails(cmd, *flags, c, *positional)
    assert "missing.slab" in cp.stderr
    assert not c.exists()
    assert not (tmp_path / "out.bin").exists()


@pytest.mark.parametrize("content", [b"", b"hello, I am not a container\n", b"\0" * 100000,
                                     os.urandom(50000)],
                         ids=["empty", "text", "zeros", "random"])
def test_not_a_container(tmp_path, content):
    f = tmp_path / "fake.slab"
    f.write_bytes(content)
    for args in (["ls", f], ["ls", "-l", "-r", f], ["info", f, "/"], ["mkgroup", f, "/a"],
                 ["mkdset", f, "/d", "--dtype", "u1", "--shape", "3"], ["attr", f, "/", "a", "1"],
                 ["export", f, "/d", tmp_path / "o.bin"]):
        fails(*args)
    assert f.read_bytes() == content
    assert not (tmp_path / "o.bin").exists()


def test_directory_as_container(tmp_path):
    fails("ls", tmp_path)
    fails("mkgroup", tmp_path, "/a")


def test_truncated_container(filled, tmp_path):
    data = filled.read_bytes()
    for size in [0, 1, 100, 4096, 8192, len(data) // 2, len(data) - 1]:
        t = tmp_path / f"trunc{size}.slab"
        t.write_bytes(data[:size])
        cp = slab("ls", "-l", "-r", t, check=False)
        assert cp.returncode == 1, (size, cp.returncode, cp.stderr)
        assert cp.stderr.startswith("slab: ls: ")
        cp = slab("mkgroup", t, "/new", check=False)
        assert cp.returncode == 1, (size, cp.returncode, cp.stderr)
        assert t.read_bytes() == data[:size]


def test_corrupted_container_gives_clear_error(filled, tmp_path):
    data = bytearray(filled.read_bytes())
    # Garbage over everything after the superblocks and lock record: every
    # metadata block fails its checksum.
    bad = bytearray(data)
    for i in range(12288, len(bad)):
        bad[i] ^= 0x5A
    t = tmp_path / "garbled.slab"
    t.write_bytes(bytes(bad))
    for args in (["ls", t], ["ls", "-l", "-r", t], ["info", "--json", t, "/g/ds"]):
        cp = slab(*args, check=False)
        assert cp.returncode == 1, (args, cp.returncode, cp.stderr)
        assert cp.stderr.startswith("slab: ")
    # Both superblocks damaged.
    bad = bytearray(data)
    for off in (0, 4096):
        for i in range(off + 16, off + 64):
            bad[i] ^= 0xFF
    t.write_bytes(bytes(bad))
    cp = slab("ls", t, check=False)
    assert cp.returncode == 1 and cp.stderr.startswith("slab: ls: ")


def test_random_byte_flips_never_crash(filled, tmp_path):
    data = filled.read_bytes()
    rng = np.random.default_rng(1234)
    t = tmp_path / "flipped.slab"
    for trial in range(40):
        bad = bytearray(data)
        lo, hi = len(bad) // 4, 3 * len(bad) // 4
        if trial % 4 == 0:
            lo, hi = 0, len(bad)
        for off in rng.integers(lo, hi, size=8):
            bad[off] ^= int(rng.integers(1, 256))
        t.write_bytes(bytes(bad))
        for args in (["ls", "-l", "-r", t], ["info", "--json", t, "/g/ds"],
                     ["export", t, "/g/ds", tmp_path / "o.bin"], ["attr", t, "/g"]):
            cp = slab(*args, check=False)
            assert cp.returncode in (0, 1), (trial, args, cp.returncode, cp.stderr)
            if cp.returncode == 1:
                assert cp.stderr.startswith("slab: "), cp.stderr


# ---------------------------------------------------------------- bad import input

def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def header_v1(d):
    d = d.encode("latin1")
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d


HOSTILE_NPY = {
    "bad_version": b"\x93NUMPY\x09\x00" + npy_bytes(np.zeros(12, "f4"))[8:],
    "bad_dict": header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4}\n"),
    "not_a_dict": header_v1("[1, 2, 3]\n"),
    "extra_key": header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), "
                           "'evil': 1}\n"),
    "missing_shape": header_v1("{'descr': '<f4', 'fortran_order': False}\n"),
    "huge_shape": header_v1("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (4294967296, 4294967296, 4294967296)}\n") + b"\0" * 48,
    "huge_count": header_v1("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (3000000000000000000,)}\n") + b"\0" * 48,
    "negative_shape": header_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-12,)}\n"),
    "header_too_long": b"\x93NUMPY\x02\x00" + (1 << 30).to_bytes(4, "little") + b"{" * 100,
    "truncated_header": npy_bytes(np.zeros(12, "f4"))[:40],
    "truncated_data": npy_bytes(np.zeros((3, 4), "f4"))[:-5],
    "extra_data": npy_bytes(np.zeros((3, 4), "f4")) + b"\0\0\0\0",
    "fortran_order": npy_bytes(np.asfortranarray(np.zeros((3, 4), "f4"))),
    "dtype_mismatch": npy_bytes(np.zeros((3, 4), "f8")),
    "big_endian": npy_bytes(np.zeros((3, 4), ">f4")),
    "complex": npy_bytes(np.zeros((3, 4), "c8")),
    "bool": npy_bytes(np.zeros((3, 4), "?")),
    "structured": npy_bytes(np.zeros(12, dtype=[("a", "<f4")])),
    "count_mismatch": npy_bytes(np.zeros((3, 5), "f4")),
    "zero_d": npy_bytes(np.float32(1.0)),
    "empty": npy_bytes(np.zeros((0, 4), "f4")),
}


# Well-formed files that only fail to fit the existing dataset /t.
VALID_FOR_CREATE = {"dtype_mismatch", "count_mismatch"}


@pytest.mark.parametrize("name", sorted(HOSTILE_NPY))
def test_hostile_npy_is_refused(filled, tmp_path, name):
    slab("mkdset", filled, "/t", "--dtype", "f4", "--shape", "3,4", "--fill", "5")
    src = tmp_path / f"{name}.npy"
    src.write_bytes(HOSTILE_NPY[name])
    before = snapshot(filled)
    fails("import", filled, "/t", src)
    if name not in VALID_FOR_CREATE:
        fails("import", "--create", filled, "/new", src)
    cp = slab_bytes("import", filled, "/t", "-", input=HOSTILE_NPY[name], check=False)
    assert cp.returncode == 1 and cp.stderr.startswith(b"slab: import: "), cp.stderr
    assert snapshot(filled) == before


def test_npy_messages_say_what_is_wrong(filled, tmp_path):
    slab("mkdset", filled, "/t", "--dtype", "f4", "--shape", "3,4")
    def msg(name):
        src = tmp_path / "x.npy"
        src.write_bytes(HOSTILE_NPY[name])
        return fails("import", filled, "/t", src).stderr
    assert "Fortran" in msg("fortran_order")
    assert "dtype" in msg("dtype_mismatch") and "f8" in msg("dtype_mismatch")
    assert "big-endian" in msg("big_endian")
    assert "truncated" in msg("truncated_data")
    assert "overflow" in msg("huge_shape")
    assert "12" in msg("count_mismatch") and "15" in msg("count_mismatch")


@pytest.mark.parametrize("size", [0, 1, 47, 49, 96])
def test_raw_input_of_wrong_size(filled, tmp_path, size):
    src = tmp_path / "in.raw"
    src.write_bytes(b"\x01" * size)
    before = snapshot(filled)
    cp = fails("import", filled, "/g/ds", src)
    assert "800" in cp.stderr
    cp = slab_bytes("import", filled, "/g/ds", "-", input=b"\x01" * size, check=False)
    assert cp.returncode == 1 and b"slab: import: " in cp.stderr
    assert snapshot(filled) == before


def test_import_errors(filled, tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, np.zeros((10, 20), "f4"))
    before = snapshot(filled)
    fails("import", filled, "/g/ds", tmp_path / "missing.npy")
    fails("import", filled, "/g/ds", tmp_path)                  # a directory
    fails("import", filled, "/g", good)                         # a group
    fails("import", filled, "/nope", good)
    fails("import", "--create", filled, "/g/ds", good)          # exists
    fails("import", "--chunks", "2,2", filled, "/g/ds", good, code=2)  # without --create
    fails("import", "--dtype", "f4", filled, "/g/ds", good, code=2)
    fails("import", "--create", "--chunks", "2", filled, "/n", good)
    fails("import", "--create", "--fill", "x", filled, "/n", good)
    fails("import", "--create", "--dtype", "f4", filled, "/n", good)
    fails("import", filled, "/g/ds", filled)                    # the container itself
    assert snapshot(filled) == before


def test_export_errors_leave_no_output(filled, tmp_path):
    out = tmp_path / "out.npy"
    fails("export", filled, "/g", out)                           # a group
    fails("export", filled, "/nope", out)
    fails("export", filled, "/g/ds", tmp_path / "no" / "dir" / "o.npy")
    fails("export", filled, "/g/ds", tmp_path)                   # a directory
    assert not out.exists()
    before = file_digest(filled)
    fails("export", filled, "/g/ds", filled)                     # onto the container
    assert file_digest(filled) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds.npy", "filled.slab"]


def test_read_only_commands_do_not_touch_the_file(filled, tmp_path):
    before = file_digest(filled)
    slab("ls", "-l", "-r", filled)
    slab("info", "--json", filled, "/g/ds")
    slab("attr", filled, "/g")
    slab("attr", filled, "/g", "units")
    slab("export", filled, "/g/ds", tmp_path / "o.npy")
    fails("info", filled, "/nope")
    assert file_digest(filled) == before


# ---------------------------------------------------------------- atomicity and locking

def start_stdin_import(c, path, first_bytes, extra=()):
    """Starts `slab import` reading stdin, feeds it first_bytes, and leaves it
    blocked on stdin holding the container's writer lock."""
    proc = subprocess.Popen([bin_path("slab"), "import", *extra, str(c), path, "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(first_bytes)
    proc.stdin.flush()
    return proc


def has_open(pid, path):
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            if os.path.realpath(os.path.join(fd_dir, fd)) == os.path.realpath(path):
                return True
        except OSError:
            pass
    return False


def wait_until_reading_stdin(proc, container):
    """Waits until the process blocks in read(0, ...): an import reads stdin
    past its first bytes only once it holds the container open for writing.
    (Probing with another writer instead could take the lock first and make
    the import itself fail as busy.) Where /proc/PID/syscall is unreadable,
    waits for the container to be open and then a little longer."""
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"import exited early: {proc.stderr.read()!r}")
        try:
            with open(f"/proc/{proc.pid}/syscall") as f:
                fields = f.read().split()
            if len(fields) >= 2 and fields[0] == "0" and int(fields[1], 16) == 0:
                return
        except (OSError, ValueError):
            if has_open(proc.pid, container):
                time.sleep(1)
                return
        time.sleep(0.02)
    raise AssertionError("the import never blocked reading stdin")


def test_second_writer_is_refused_naming_the_holder(filled):
    a = random_array("f4", (10, 20), seed=5)
    proc = start_stdin_import(filled, "/g/ds", a.tobytes()[:100])
    try:
        wait_until_reading_stdin(proc, filled)
        cp = fails("mkgroup", filled, "/probe")
        assert "slab import" in cp.stderr and str(proc.pid) in cp.stderr, cp.stderr
        assert len(cp.stderr.strip().splitlines()) == 1
        fails("attr", filled, "/g", "x", "1")
        # Readers are not blocked.
        slab("ls", "-l", "-r", filled)
        proc.stdin.write(a.tobytes()[100:])
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert slab_bytes("export", filled, "/g/ds", "-").stdout == a.tobytes()
    slab("mkgroup", filled, "/after")     # the lock is released


def test_failed_streaming_import_commits_nothing(box):
    # 40 MiB dataset: the first 16 MiB block reaches the engine before the
    # input turns out short.
    n = 10 * 1024 * 1024
    slab("mkdset", box, "/d", "--dtype", "u4", "--shape", str(n), "--fill", "7")
    first = np.arange(n, dtype="<u4")
    slab_bytes("import", box, "/d", "-", input=first.tobytes(), timeout=600)
    before = snapshot(box)
    second = np.full(n // 2, 99, dtype="<u4")
    cp = slab_bytes("import", box, "/d", "-", input=second.tobytes(), check=False, timeout=600)
    assert cp.returncode == 1 and b"truncated" in cp.stderr, cp.stderr
    assert snapshot(box) == before
    # Too much input is refused too, after the whole dataset was written.
    cp = slab_bytes("import", box, "/d", "-", input=first.tobytes() + b"\0" * 4, check=False,
                    timeout=600)
    assert cp.returncode == 1, cp.stderr
    assert snapshot(box) == before
    # The container is still writable: no stale lock.
    slab("mkgroup", box, "/ok")


def test_failed_create_import_leaves_no_dataset(box, tmp_path):
    header = npy_bytes(np.zeros((1000, 1000), "f8"))
    cp = slab_bytes("import", "--create", box, "/new", "-", input=header[:-4000], check=False)
    assert cp.returncode == 1, cp.stderr
    assert slab("ls", box).stdout == ""


def test_log_level_option(filled):
    cp = slab("--log-level", "off", "ls", filled)
    assert cp.stderr == ""
    slab("ls", "--log-level", "error", filled)
