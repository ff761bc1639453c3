"""Datasets that grow, through the `slab` CLI: mkdset and import --create with
--maxshape and --index (the automatic choice, each kind working end to end,
refusals that create nothing), `slab resize` growing and shrinking (cut
elements read as fill when grown again, freed chunks), and every bad resize
leaving the container unchanged."""
import hashlib
import subprocess

import numpy as np
import pytest

from conftest import bin_path, fails, info, slab

KINDS = ["single", "compact", "fixed", "extensible", "btree"]


# ---------------------------------------------------------------- helpers


def export(c, path, tmp_path):
    out = tmp_path / "out.npy"
    slab("export", c, path, out)
    return np.load(out)


def snapshot(c):
    """What a user can observe: the listing, every object's description and
    a digest of every dataset's bytes. (Not the file's bytes: a read-write
    open rewrites the informational lock record.)"""
    state = {"ls": slab("ls", "-l", "-r", c).stdout, "/": info(c, "/")}
    for line in slab("ls", "-r", c).stdout.splitlines():
        p = "/" + line.rstrip("/")
        state[p] = info(c, p)
        if state[p]["kind"] == "dataset":
            raw = subprocess.run([bin_path("slab"), "export", str(c), p, "-"],
                                 capture_output=True, check=True).stdout
            state[p + "#data"] = hashlib.sha256(raw).hexdigest()
    return state


def mkdset(c, path, dtype, shape, maxshape=None, chunks=None, index=None, fill=None):
    args = ["mkdset", c, path, "--dtype", dtype, "--shape", shape]
    if maxshape is not None:
        args += ["--maxshape", maxshape]
    if chunks is not None:
        args += ["--chunks", chunks]
    if index is not None:
        args += ["--index", index]
    if fill is not None:
        args.append(f"--fill={fill}")
    return slab(*args)


@pytest.fixture
def box(tmp_path):
    c = tmp_path / "box.slab"
    slab("create", c)
    return c


# ---------------------------------------------------------------- mkdset

@pytest.mark.parametrize("shape,maxshape,chunks,kind", [
    ("10,10", None, "10,10", "single"),                   # one chunk
    ("5", "10", "10", "single"),                          # one chunk even when grown
    ("10,10", None, "5,5", "compact"),                    # 4 chunks
    ("16,8", None, "4,4", "compact"),                     # 8 chunks, the limit
    ("10,10", "40,10", "10,10", "compact"),               # at most 4 chunks when grown
    ("12,12", None, "4,4", "fixed"),                      # 9 chunks
    ("100,100", None, "10,10", "fixed"),
    ("10,10", "200,10", "10,10", "fixed"),                # bounded growth: 20 chunks
    ("0,256,256", "unlimited,256,256", None, "extensible"),
    ("4,4", "4,unlimited", "2,2", "extensible"),          # the unlimited dim is not first
    ("4,4", "unlimited,unlimited", "2,2", "btree"),
    ("0,0,3", "unlimited,unlimited,3", "2,2,3", "btree"),
])
def test_mkdset_chooses_the_index(box, shape, maxshape, chunks, kind):
    mkdset(box, "/d", "u2", shape, maxshape, chunks)
    i = info(box, "/d")
    assert i["index"] == kind
    dims = [int(x) for x in shape.split(",")]
    assert i["shape"] == dims
    want_max = dims if maxshape is None else [
        None if x == "unlimited" else int(x) for x in maxshape.split(",")]
    assert i["max_shape"] == want_max
    assert i["allocated_chunks"] == 0 and i["stored_bytes"] == 0
    # Explicit --index auto chooses the same.
    mkdset(box, "/auto", "u2", shape, maxshape, chunks, index="auto")
    assert info(box, "/auto")["index"] == kind


def test_info_text_shows_max_shape_and_index(box):
    mkdset(box, "/s", "u2", "0,256,256", "unlimited,256,256")
    text = slab("info", box, "/s").stdout.splitlines()
    for line in ["shape: 0,256,256", "max_shape: unlimited,256,256", "index: extensible",
                 "size_bytes: 0", "num_chunks: 0", "allocated_chunks: 0", "stored_bytes: 0"]:
        assert line in text, f"{line!r} not in {text}"
    i = info(box, "/s")
    assert i["max_shape"] == [None, 256, 256]
    assert i["num_elements"] == 0 and i["size_bytes"] == 0
    assert isinstance(i["index_bytes"], int)


# Each kind on a geometry where it works: import, grow, shrink, grow back.
KIND_CASES = {
    "single": ("6,10", "8,12", "8,12", (8, 12)),
    "compact": ("6,10", "12,12", "4,4", (9, 12)),
    "fixed": ("6,10", "12,12", "4,4", (9, 12)),
    "extensible": ("6,10", "unlimited,12", "4,4", (9, 12)),
    "btree": ("6,10", "unlimited,unlimited", "4,4", (9, 13)),
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_index_kind_imports_grows_and_shrinks(box, tmp_path, kind):
    shape, maxshape, chunks, grown = KIND_CASES[kind]
    mkdset(box, "/d", "i4", shape, maxshape, chunks, index=kind, fill=-5)
    a = np.random.default_rng(KINDS.index(kind)).integers(-1000, 1000, (6, 10), dtype="<i4")
    src = tmp_path / "a.npy"
    np.save(src, a)
    slab("import", box, "/d", src)
    np.testing.assert_array_equal(export(box, "/d", tmp_path), a)

    slab("resize", box, "/d", ",".join(map(str, grown)))
    ref = np.full(grown, -5, dtype="<i4")
    ref[:6, :10] = a
    np.testing.assert_array_equal(export(box, "/d", tmp_path), ref)

    slab("resize", box, "/d", "3,4")
    np.testing.assert_array_equal(export(box, "/d", tmp_path), a[:3, :4])
    slab("resize", box, "/d", ",".join(map(str, grown)))
    ref = np.full(grown, -5, dtype="<i4")
    ref[:3, :4] = a[:3, :4]
    np.testing.assert_array_equal(export(box, "/d", tmp_path), ref)
    i = info(box, "/d")
    assert i["index"] == kind and i["shape"] == list(grown)


def test_compact_holds_64_chunks_explicitly(box):
    mkdset(box, "/d", "u1", "8,8", chunks="1,1", index="compact")
    assert info(box, "/d")["index"] == "compact"


def test_btree_and_fixed_work_for_fixed_datasets(box):
    mkdset(box, "/b", "u1", "10,10", chunks="5,5", index="btree")
    mkdset(box, "/f", "u1", "10,10", chunks="10,10", index="fixed")
    assert info(box, "/b")["index"] == "btree"
    assert info(box, "/f")["index"] == "fixed"


@pytest.mark.parametrize("args,reason", [
    (["--shape", "10,10", "--maxshape", "unlimited,10", "--index", "fixed"], "unlimited"),
    (["--shape", "10,10", "--chunks", "5,5", "--index", "single"], "more than one chunk"),
    (["--shape", "10", "--maxshape", "20", "--chunks", "10", "--index", "single"],
     "more than one chunk"),
    (["--shape", "10,10", "--chunks", "5,5", "--index", "extensible"], "exactly one unlimited"),
    (["--shape", "4,4", "--maxshape", "unlimited,unlimited", "--index", "extensible"],
     "exactly one unlimited"),
    (["--shape", "8,9", "--chunks", "1,1", "--index", "compact"], "64"),
    (["--shape", "10,10", "--maxshape", "unlimited,10", "--index", "compact"], "unlimited"),
    (["--shape", "10,10", "--index", "bogus"], "bogus"),
    (["--shape", "0,10"], "maxshape"),
    (["--shape", "0,10", "--maxshape", "0,10"], "zero"),
    (["--shape", "10,10", "--maxshape", "5,10"], "smaller"),
    (["--shape", "10,10", "--maxshape", "20"], "rank"),
    (["--shape", "10,10", "--maxshape", "unlimted,10"], "unlimted"),
    (["--shape", "10,10", "--maxshape", "-1,10"], "negative"),
    (["--shape", "unlimited,10", "--maxshape", "unlimited,10"], "unlimited"),
])
def test_mkdset_refusals_create_nothing(box, args, reason):
    mkdset(box, "/keep", "u1", "3", "unlimited")
    before = snapshot(box)
    cp = fails("mkdset", box, "/x", "--dtype", "u1", *args)
    assert reason in cp.stderr, cp.stderr
    assert slab("ls", "-r", box).stdout == "keep\n"
    fails("info", box, "/x")
    assert snapshot(box) == before


@pytest.mark.parametrize("args,reason", [
    (["--maxshape", "unlimited,8", "--index", "fixed"], "unlimited"),
    (["--maxshape", "unlimited,8", "--index", "single"], "more than one chunk"),
    (["--maxshape", "20,8"], "smaller"),
    (["--maxshape", "unlimited"], "rank"),
])
def test_import_create_refusals_create_nothing(box, tmp_path, args, reason):
    src = tmp_path / "a.npy"
    np.save(src, np.arange(240, dtype="<i4").reshape(30, 8))
    mkdset(box, "/keep", "u1", "3", "unlimited")
    before = snapshot(box)
    cp = fails("import", "--create", box, "/x", src, "--chunks", "4,8", *args)
    assert reason in cp.stderr, cp.stderr
    assert slab("ls", "-r", box).stdout == "keep\n"
    fails("info", box, "/x")
    assert snapshot(box) == before


# ---------------------------------------------------------------- resize

def test_import_create_with_maxshape_then_resize(box, tmp_path):
    a = np.arange(30 * 8, dtype="<i4").reshape(30, 8)
    src = tmp_path / "a.npy"
    np.save(src, a)
    slab("import", "--create", box, "/a", src, "--maxshape", "unlimited,8", "--chunks", "4,8")
    i = info(box, "/a")
    assert i["shape"] == [30, 8] and i["max_shape"] == [None, 8]
    assert i["index"] == "extensible"
    assert i["num_chunks"] == 8 and i["allocated_chunks"] == 8

    slab("resize", box, "/a", "1000,8")
    i = info(box, "/a")
    assert i["shape"] == [1000, 8] and i["size_bytes"] == 1000 * 8 * 4
    assert i["num_chunks"] == 250 and i["allocated_chunks"] == 8
    got = export(box, "/a", tmp_path)
    assert got.shape == (1000, 8)
    np.testing.assert_array_equal(got[:30], a)
    assert not got[30:].any()

    # The grown dataset takes a full import of its new shape.
    b = np.arange(1000 * 8, dtype="<i4").reshape(1000, 8) * 3
    np.save(src, b)
    slab("import", box, "/a", src)
    np.testing.assert_array_equal(export(box, "/a", tmp_path), b)
    assert info(box, "/a")["allocated_chunks"] == 250

    # --index on import --create.
    slab("import", "--create", box, "/bt", src, "--maxshape", "unlimited,8", "--index", "btree")
    assert info(box, "/bt")["index"] == "btree"
    np.testing.assert_array_equal(export(box, "/bt", tmp_path), b)


def test_shrink_frees_chunks_and_grown_back_reads_fill(box, tmp_path):
    mkdset(box, "/d", "f8", "20,12", "unlimited,12", "4,4", fill=2.5)
    a = np.random.default_rng(3).standard_normal((20, 12))
    src = tmp_path / "a.npy"
    np.save(src, a)
    slab("import", box, "/d", src)
    i = info(box, "/d")
    assert i["num_chunks"] == 15 and i["allocated_chunks"] == 15
    stored = i["stored_bytes"]

    # 9 rows: chunk rows 0-1 whole, row 2 (rows 8-11) cut; rows 3-4 freed.
    slab("resize", box, "/d", "9,12")
    i = info(box, "/d")
    assert i["shape"] == [9, 12] and i["size_bytes"] == 9 * 12 * 8
    assert i["num_chunks"] == 9 and i["allocated_chunks"] == 9
    assert i["stored_bytes"] < stored
    np.testing.assert_array_equal(export(box, "/d", tmp_path), a[:9])

    slab("resize", box, "/d", "20,12")
    i = info(box, "/d")
    assert i["shape"] == [20, 12] and i["allocated_chunks"] == 9
    ref = np.full((20, 12), 2.5)
    ref[:9] = a[:9]
    np.testing.assert_array_equal(export(box, "/d", tmp_path), ref)

    # Down to no rows at all and back.
    slab("resize", box, "/d", "0,12")
    i = info(box, "/d")
    assert i["shape"] == [0, 12] and i["size_bytes"] == 0 and i["allocated_chunks"] == 0
    assert export(box, "/d", tmp_path).shape == (0, 12)
    slab("resize", box, "/d", "5,12")
    np.testing.assert_array_equal(export(box, "/d", tmp_path), np.full((5, 12), 2.5))


def test_resize_both_dimensions_of_a_btree_dataset(box, tmp_path):
    mkdset(box, "/d", "u2", "5,5", "unlimited,unlimited", "2,3", fill=11)
    a = np.arange(25, dtype="<u2").reshape(5, 5)
    src = tmp_path / "a.npy"
    np.save(src, a)
    slab("import", box, "/d", src)
    slab("resize", box, "/d", "3,40")
    ref = np.full((3, 40), 11, dtype="<u2")
    ref[:, :5] = a[:3]
    np.testing.assert_array_equal(export(box, "/d", tmp_path), ref)
    slab("resize", box, "/d", "50,2")
    ref = np.full((50, 2), 11, dtype="<u2")
    ref[:3] = a[:3, :2]
    np.testing.assert_array_equal(export(box, "/d", tmp_path), ref)
    line = slab("ls", "-l", box).stdout.splitlines()[1].split()
    assert line[:5] == ["dataset", "u2", "50,2", "2,3", "200"]


def test_dataset_without_maxshape_shrinks_but_grows_only_back_to_its_shape(box, tmp_path):
    mkdset(box, "/f", "u1", "8,8", chunks="4,4", fill=1)
    a = np.arange(64, dtype="u1").reshape(8, 8)
    src = tmp_path / "a.npy"
    np.save(src, a)
    slab("import", box, "/f", src)
    assert "maximum" in fails("resize", box, "/f", "9,8").stderr
    assert "maximum" in fails("resize", box, "/f", "8,9").stderr
    slab("resize", box, "/f", "4,8")
    i = info(box, "/f")
    assert i["shape"] == [4, 8] and i["max_shape"] == [8, 8] and i["allocated_chunks"] == 2
    slab("resize", box, "/f", "8,8")
    ref = np.ones((8, 8), dtype="u1")
    ref[:4] = a[:4]
    np.testing.assert_array_equal(export(box, "/f", tmp_path), ref)
    slab("resize", box, "/f", "8,8")  # the same shape: nothing to do
    np.testing.assert_array_equal(export(box, "/f", tmp_path), ref)


@pytest.mark.parametrize("shape,reason", [
    ("10", "rank"),
    ("10,6,1", "rank"),
    ("41,6", "maximum"),
    ("x,6", "'x'"),
    ("-1,6", "negative"),
    ("10,,6", "empty"),
    ("1e3,6", "'1e3'"),
    ("10,6x", "'6x'"),
    ("", "empty"),
    ("unlimited,6", "unlimited"),
    ("18446744073709551616,6", "18446744073709551616"),
])
def test_bad_resize_changes_nothing(box, tmp_path, shape, reason):
    mkdset(box, "/d", "i4", "10,6", "40,unlimited", "4,4", fill=-3)
    a = np.arange(60, dtype="<i4").reshape(10, 6)
    src = tmp_path / "a.npy"
    np.save(src, a)
    slab("import", box, "/d", src)
    before = snapshot(box)
    cp = fails("resize", box, "/d", shape)
    assert reason in cp.stderr, cp.stderr
    assert snapshot(box) == before
    assert info(box, "/d")["shape"] == [10, 6]
    np.testing.assert_array_equal(export(box, "/d", tmp_path), a)


def test_resize_of_a_group_a_missing_path_or_a_missing_file(box, tmp_path):
    slab("mkgroup", box, "/g")
    before = snapshot(box)
    assert "group" in fails("resize", box, "/g", "1,1").stderr
    assert "/nope" in fails("resize", box, "/nope", "1,1").stderr
    assert "/g/nope" in fails("resize", box, "/g/nope", "1").stderr
    fails("resize", box, "/", "1")
    assert snapshot(box) == before
    missing = tmp_path / "missing.slab"
    assert "missing.slab" in fails("resize", missing, "/d", "1,1").stderr
    assert not missing.exists()
    fails("resize", box, "/g", code=2)  # no SHAPE: a usage error
