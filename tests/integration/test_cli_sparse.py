"""Sparse datasets through the `slab` CLI: mkdset and import --create with
--sparse; `slab erase` and `slab defined` (text and JSON) checked against a
numpy reference mask built with numpy's own indexing of the same SLICE
text; `slab export` showing the fill value where elements were erased;
`slab info`'s sparse and defined_elements; dense datasets; and every bad
slice, path or file refused with one clear line and the container
unchanged."""
import hashlib
import json
import re
import subprocess

import numpy as np
import pytest

from conftest import bin_path, fails, info, slab


# ---------------------------------------------------------------- helpers


def np_index(text):
    """numpy's own reading of a SLICE text (what `a[text]` means)."""
    return eval(f"np.s_[{text}]", {"np": np})  # test input only


def selection(shape, text):
    sel = np.zeros(shape, dtype=bool)
    sel[np_index(text)] = True
    return sel


def defined_json(c, path, *slice_):
    return json.loads(slab("defined", "--json", c, path, *slice_).stdout)


def mask_of(j, shape):
    """The defined mask a `defined --json` answer describes; checks that its
    boxes are non-empty, disjoint and in C order of their first element."""
    mask = np.zeros(shape, dtype=bool)
    starts = []
    total = 0
    for b in j["boxes"]:
        step = b.get("step", [1] * len(shape))
        assert all(n >= 1 for n in b["count"]), b
        idx = tuple(slice(s, s + (n - 1) * t + 1, t)
                    for s, n, t in zip(b["start"], b["count"], step))
        assert not mask[idx].any(), f"overlapping box {b}"
        mask[idx] = True
        starts.append(tuple(b["start"]))
        total += int(np.prod(b["count"]))
    assert starts == sorted(starts), starts
    assert j["elements"] == total == int(mask.sum())
    return mask


def export_array(c, path, tmp_path):
    out = tmp_path / "export.npy"
    slab("export", c, path, out)
    return np.load(out)


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def export_bytes(c, path):
    return subprocess.run([bin_path("slab"), "export", str(c), path, "-"],
                          capture_output=True, check=True).stdout


def snapshot(c):
    """What a user can observe: the listing, every object's description, the
    defined boxes and a digest of the bytes of every dataset."""
    state = {"ls": slab("ls", "-l", "-r", c).stdout, "/": info(c, "/")}
    for line in slab("ls", "-r", c).stdout.splitlines():
        p = "/" + line.rstrip("/")
        state[p] = info(c, p)
        if state[p]["kind"] == "dataset":
            state[p + "#data"] = hashlib.sha256(export_bytes(c, p)).hexdigest()
            state[p + "#defined"] = slab("defined", c, p).stdout
    return state


@pytest.fixture
def box(tmp_path):
    c = tmp_path / "box.slab"
    slab("create", c)
    return c


SHAPE = (24, 30, 7)
FILL = -1


@pytest.fixture
def imported(box, tmp_path):
    """A sparse i2 dataset /s, imported whole (every element defined), and
    the array imported."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 1000, size=SHAPE, dtype="<i2")
    src = tmp_path / "a.npy"
    np.save(src, a)
    slab("import", "--create", "--sparse", box, "/s", src, "--chunks", "5,8,7",
         f"--fill={FILL}")
    return box, a


# ---------------------------------------------------------------- creating


def test_mkdset_sparse_starts_with_nothing_defined(box, tmp_path):
    slab("mkdset", box, "/s", "--dtype", "f4", "--shape", "100,200", "--chunks", "10,20",
         "--sparse", "--fill", "2.5")
    slab("mkdset", box, "/d", "--dtype", "f4", "--shape", "100,200")
    i = info(box, "/s")
    assert i["sparse"] is True
    assert i["defined_elements"] == 0
    assert i["allocated_chunks"] == 0 and i["stored_bytes"] == 0
    assert info(box, "/d")["sparse"] is False
    text = slab("info", box, "/s").stdout.splitlines()
    assert "sparse: yes" in text and "defined_elements: 0" in text
    assert "sparse: no" in slab("info", box, "/d").stdout.splitlines()
    assert slab("defined", box, "/s").stdout == "0 elements defined in 0 boxes\n"
    assert defined_json(box, "/s") == {"boxes": [], "elements": 0}
    assert (export_array(box, "/s", tmp_path) == 2.5).all()


def test_import_into_existing_sparse_dataset_defines_everything(box, tmp_path):
    slab("mkdset", box, "/s", "--dtype", "u1", "--shape", "6,9", "--chunks", "4,4", "--sparse")
    a = np.arange(54, dtype="u1").reshape(6, 9)
    np.save(tmp_path / "a.npy", a)
    slab("import", box, "/s", tmp_path / "a.npy")
    assert info(box, "/s")["defined_elements"] == 54
    assert slab("defined", box, "/s").stdout == "[0:6, 0:9]\n54 elements defined in 1 box\n"
    assert (export_array(box, "/s", tmp_path) == a).all()


def test_import_sparse_needs_create(box, tmp_path):
    slab("mkdset", box, "/s", "--dtype", "u1", "--shape", "4")
    np.save(tmp_path / "a.npy", np.zeros(4, dtype="u1"))
    before = snapshot(box)
    cp = fails("import", "--sparse", box, "/s", tmp_path / "a.npy", code=2)
    assert "--create" in cp.stderr
    assert snapshot(box) == before


# ---------------------------------------------------------------- erase and defined

ERASE_SEQUENCES = [
    ["3:9, 10:20"],
    ["5"],
    ["...,0", ":, -1"],
    ["::2", "1::4, ::3"],
    ["2:22:5, 4:29:6, 1:6:2"],
    ["-5:, :-25", "0:24:23, ..., 3"],
    [":"],
    ["...", "5:5"],
    ["100:", "-100:2, 28:100"],
]


@pytest.mark.parametrize("erases", ERASE_SEQUENCES, ids=" then ".join)
def test_erase_then_defined_matches_numpy(imported, tmp_path, erases):
    c, a = imported
    defined = np.ones(SHAPE, dtype=bool)
    assert info(c, "/s")["defined_elements"] == a.size
    for text in erases:
        slab("erase", c, "/s", text)
        defined[np_index(text)] = False
        assert (mask_of(defined_json(c, "/s"), SHAPE) == defined).all(), text
    assert info(c, "/s")["defined_elements"] == int(defined.sum())
    # Erased elements read as the fill value, the others as imported.
    assert (export_array(c, "/s", tmp_path) == np.where(defined, a, FILL)).all()
    # A query with a slice sees the defined elements it selects.
    for query in ["3:9, 10:20", "::2, 1::3, -1", "...,2:5", "7", "0:0", "::5, ::7, ::3"]:
        want = defined & selection(SHAPE, query)
        got = mask_of(defined_json(c, "/s", query), SHAPE)
        assert (got == want).all(), query


def test_erase_frees_chunks_left_with_nothing(imported):
    c, _ = imported
    before = info(c, "/s")
    # Chunks are 5x8x7: rows 0:10 and columns 0:16 are 4 whole chunks.
    slab("erase", c, "/s", "0:10, 0:16")
    after = info(c, "/s")
    assert after["allocated_chunks"] == before["allocated_chunks"] - 4
    assert after["stored_bytes"] < before["stored_bytes"]
    slab("erase", c, "/s", "...")
    assert info(c, "/s")["allocated_chunks"] == 0
    assert info(c, "/s")["stored_bytes"] == 0


def test_defined_text_lists_half_open_boxes(box, tmp_path):
    slab("mkdset", box, "/s", "--dtype", "u2", "--shape", "20,30", "--chunks", "8,8", "--sparse")
    a = np.zeros((20, 30), dtype="<u2")
    np.save(tmp_path / "a.npy", a)
    slab("import", box, "/s", tmp_path / "a.npy")
    slab("erase", box, "/s", "0:10")
    slab("erase", box, "/s", "10:, 5:")
    out = slab("defined", box, "/s").stdout
    assert out == "[10:20, 0:5]\n50 elements defined in 1 box\n"
    # Each line reads back as a SLICE selecting that box.
    line = out.splitlines()[0]
    assert re.fullmatch(r"\[\d+:\d+, \d+:\d+\]", line)
    j = defined_json(box, "/s", line[1:-1])
    assert j == {"boxes": [{"start": [10, 0], "count": [10, 5]}], "elements": 50}
    # With steps, each box shows them, and JSON boxes carry "step".
    assert slab("defined", box, "/s", "::2, 1").stdout == (
        "[10:19:2, 1:2]\n5 elements defined in 1 box\n")
    assert defined_json(box, "/s", "::3, ::2") == {
        "boxes": [{"start": [12, 0], "count": [3, 3], "step": [3, 2]}], "elements": 9}
    assert slab("defined", box, "/s", "19, 4").stdout == (
        "[19:20, 4:5]\n1 element defined in 1 box\n")


def test_negative_slices_need_no_double_dash(imported):
    c, _ = imported
    slab("erase", c, "/s", "-3:")
    slab("erase", c, "/s", "-1")
    defined = np.ones(SHAPE, dtype=bool)
    defined[-3:] = False
    assert (mask_of(defined_json(c, "/s", "-5:-1"), SHAPE) == defined & selection(SHAPE, "-5:-1")).all()
    assert info(c, "/s")["defined_elements"] == int(defined.sum())


def test_dense_datasets(box, tmp_path):
    slab("mkdset", box, "/d", "--dtype", "i4", "--shape", "20,30", "--chunks", "8,8",
         "--fill=-7")
    assert slab("defined", box, "/d").stdout == "0 elements defined in 0 boxes\n"
    a = np.arange(600, dtype="<i4").reshape(20, 30)
    np.save(tmp_path / "a.npy", a)
    slab("import", box, "/d", tmp_path / "a.npy")
    i = info(box, "/d")
    assert i["sparse"] is False and i["allocated_chunks"] == 12
    # Dense: defined means in a stored chunk.
    assert mask_of(defined_json(box, "/d"), (20, 30)).all()
    # Rows 8:16, columns 8:16 are chunk (1, 1) exactly: freed. Row 0 cuts
    # chunks: written with the fill value, still stored.
    slab("erase", box, "/d", "8:16, 8:16")
    slab("erase", box, "/d", "0")
    assert info(box, "/d")["allocated_chunks"] == 11
    want = np.ones((20, 30), dtype=bool)
    want[8:16, 8:16] = False
    assert (mask_of(defined_json(box, "/d"), (20, 30)) == want).all()
    expect = a.copy()
    expect[8:16, 8:16] = -7
    expect[0] = -7
    assert (export_array(box, "/d", tmp_path) == expect).all()


# ---------------------------------------------------------------- refusals


BAD_SLICES = [
    ("1,,2", "item 2 is empty"),
    ("1,", "item 2 is empty"),
    ("", "the slice is empty"),
    ("::0", "step cannot be zero"),
    ("::-1", "negative steps are not supported"),
    ("5:1:-2", "negative steps are not supported"),
    ("24", "index '24' is out of range for dimension 0 of extent 24"),
    ("0,-31", "index '-31' is out of range for dimension 1 of extent 30"),
    ("1,2,3,4", "4 items for a dataset of rank 3"),
    ("...,1,...", "'...' may appear only once"),
    ("x", "'x' is not an index or a range"),
    ("1.5", "'1.5' is not an index or a range"),
    ("1:2:3:4", "has 3 colons"),
    ("1:b", "the stop 'b' is not a whole number"),
    ("[1:2]", "'[1:2]'"),
]


@pytest.mark.parametrize("text,reason", BAD_SLICES)
def test_bad_slices_change_nothing(imported, text, reason):
    c, _ = imported
    slab("erase", c, "/s", "0:3")
    before = snapshot(c)
    digest_before = digest(c)
    for cmd in (["erase"], ["defined"], ["defined", "--json"]):
        cp = fails(*cmd, c, "/s", text)
        assert f"slab: {cmd[0]}: slice '{text}'" in cp.stderr, cp.stderr
        assert reason in cp.stderr, cp.stderr
        assert cp.stdout == ""
    assert digest(c) == digest_before
    assert snapshot(c) == before


def test_bad_paths_and_files(imported, tmp_path):
    c, _ = imported
    slab("mkgroup", c, "/g")
    before = snapshot(c)
    for cmd in (["erase"], ["defined"]):
        cp = fails(*cmd, c, "/g", ":")
        assert "/g" in cp.stderr and "not a dataset" in cp.stderr, cp.stderr
        cp = fails(*cmd, c, "/missing", ":")
        assert "/missing" in cp.stderr, cp.stderr
        cp = fails(*cmd, c, "s", ":")
        assert "absolute" in cp.stderr, cp.stderr
        missing = tmp_path / "missing.slab"
        cp = fails(*cmd, missing, "/s", ":")
        assert "missing.slab" in cp.stderr, cp.stderr
        assert not missing.exists()
        not_a_container = tmp_path / "text.slab"
        not_a_container.write_text("hello\n")
        cp = fails(*cmd, not_a_container, "/s", ":")
        assert "text.slab" in cp.stderr, cp.stderr
        assert not_a_container.read_text() == "hello\n"
    # A malformed slice is refused before the file is even opened.
    cp = fails("erase", tmp_path / "missing.slab", "/s", "1,,2")
    assert "item 2 is empty" in cp.stderr
    assert snapshot(c) == before


def test_usage_errors(imported):
    c, _ = imported
    before = snapshot(c)
    fails("erase", c, "/s", code=2)
    fails("erase", c, "/s", ":", "extra", code=2)
    fails("defined", c, "/s", ":", "extra", code=2)
    fails("defined", "--bogus", c, "/s", code=2)
    assert snapshot(c) == before


def test_empty_selection_erases_nothing(imported):
    c, _ = imported
    before = snapshot(c)
    for text in ("5:5", "3, 30:", "...,7:", "0:24:100, 29:1"):
        slab("erase", c, "/s", text)
    assert snapshot(c) == before
