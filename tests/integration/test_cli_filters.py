"""Filters through the `slab` CLI: mkdset and import --create with --shuffle,
--deflate N, --checksum and --filters; the pipeline, stored bytes and ratio
in `slab info` and `slab ls -l`; `slab chunks` (the JSON other tests use to
damage a chunk); `slab repack` copying a container exactly with new chunks
or filters; and every bad option or input leaving every file unchanged."""
import hashlib
import json
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import bin_path, fails, info, slab


# ---------------------------------------------------------------- helpers


def chunks(c, path):
    return json.loads(slab("chunks", "--json", c, path).stdout)


def export_bytes(c, path):
    return subprocess.run([bin_path("slab"), "export", str(c), path, "-"],
                          capture_output=True, check=True).stdout


def tree(c):
    return ["/" + line.rstrip("/") for line in slab("ls", "-r", c).stdout.splitlines()]


def snapshot(c):
    """What a user can observe: the listing, every object's description and
    a digest of every dataset's bytes."""
    state = {"ls": slab("ls", "-l", "-r", c).stdout, "/": info(c, "/")}
    for p in tree(c):
        state[p] = info(c, p)
        if state[p]["kind"] == "dataset":
            state[p + "#data"] = hashlib.sha256(export_bytes(c, p)).hexdigest()
    return state


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def smooth(shape, dtype="<f8"):
    """Data deflate shrinks: a slow wave plus a ramp."""
    i, j = np.indices(shape)
    return (np.sin(i / 25.0) * 100 + j / 10.0).astype(dtype)


def save(tmp_path, a, name="a.npy"):
    p = tmp_path / name
    np.save(p, a)
    return p


@pytest.fixture
def box(tmp_path):
    c = tmp_path / "box.slab"
    slab("create", c)
    return c


# ---------------------------------------------------------------- mkdset / import

FLAG_CASES = [
    ([], "none"),
    (["--shuffle"], "shuffle"),
    (["--deflate", "1"], "deflate=1"),
    (["--checksum"], "checksum"),
    (["--shuffle", "--deflate", "9"], "shuffle,deflate=9"),
    (["--shuffle", "--checksum"], "shuffle,checksum"),
    (["--deflate", "6", "--checksum"], "deflate=6,checksum"),
    (["--shuffle", "--deflate", "6", "--checksum"], "shuffle,deflate=6,checksum"),
    # The flags' order on the command line does not matter.
    (["--checksum", "--deflate", "3", "--shuffle"], "shuffle,deflate=3,checksum"),
    (["--deflate=4"], "deflate=4"),
    (["--filters", "none"], "none"),
    (["--filters", "deflate"], "deflate=6"),
    (["--filters", "checksum,deflate=2,shuffle"], "checksum,deflate=2,shuffle"),
    (["--filters", "shuffle, checksum"], "shuffle,checksum"),
]


@pytest.mark.parametrize("args,pipeline", FLAG_CASES)
def test_mkdset_filter_options(box, tmp_path, args, pipeline):
    slab("mkdset", box, "/d", "--dtype", "f8", "--shape", "60,50", "--chunks", "16,16", *args)
    i = info(box, "/d")
    assert i["filters"] == pipeline
    assert f"filters: {pipeline}" in slab("info", box, "/d").stdout.splitlines()
    a = smooth((60, 50))
    slab("import", box, "/d", save(tmp_path, a))
    assert export_bytes(box, "/d") == a.tobytes()
    i = info(box, "/d")
    assert i["allocated_chunks"] == 16
    assert [c["coords"] for c in chunks(box, "/d")] == [[r, k] for r in range(4) for k in range(4)]


@pytest.mark.parametrize("args,pipeline", FLAG_CASES[:9])
def test_import_create_filter_options(box, tmp_path, args, pipeline):
    a = smooth((40, 30), "<f4")
    slab("import", "--create", box, "/d", save(tmp_path, a), "--chunks", "10,10", *args)
    assert info(box, "/d")["filters"] == pipeline
    assert export_bytes(box, "/d") == a.tobytes()
    # Raw input with --dtype and --shape takes them too.
    raw = tmp_path / "a.raw"
    a.tofile(raw)
    slab("import", "--create", box, "/r", raw, "--dtype", "f4", "--shape", "40,30", *args)
    assert info(box, "/r")["filters"] == pipeline
    assert export_bytes(box, "/r") == a.tobytes()


def test_import_filter_options_need_create(box, tmp_path):
    slab("mkdset", box, "/d", "--dtype", "f4", "--shape", "40,30")
    src = save(tmp_path, smooth((40, 30), "<f4"))
    before = snapshot(box)
    for args in (["--shuffle"], ["--deflate", "5"], ["--checksum"], ["--filters", "none"]):
        cp = fails("import", box, "/d", src, *args, code=2)
        assert "--create" in cp.stderr, cp.stderr
    assert snapshot(box) == before


@pytest.mark.parametrize("args,reason,code", [
    (["--deflate", "0"], "--deflate '0'", 1),
    (["--deflate", "10"], "--deflate '10'", 1),
    (["--deflate", "x"], "--deflate 'x'", 1),
    (["--deflate", "-1"], "--deflate", 1),
    (["--deflate", "5.5"], "1 to 9", 1),
    (["--filters", "zstd"], "unknown filter 'zstd'", 1),
    (["--filters", "shuffle,gzip"], "unknown filter 'gzip'", 1),
    (["--filters", "shuffle,shuffle"], "twice", 1),
    (["--filters", "deflate=0"], "1 to 9", 1),
    (["--filters", "deflate=10,checksum"], "1 to 9", 1),
    (["--filters", "shuffle,,checksum"], "empty", 1),
    (["--filters", "none,checksum"], "none", 1),
    (["--filters", "shuffle", "--shuffle"], "excludes", 2),
    (["--filters", "none", "--deflate", "3"], "excludes", 2),
    (["--checksum", "--filters", "checksum"], "excludes", 2),
    (["--deflate"], "--deflate", 2),
])
def test_bad_filter_options_create_nothing(box, tmp_path, args, reason, code):
    slab("mkdset", box, "/keep", "--dtype", "u1", "--shape", "3", "--deflate", "2")
    before = snapshot(box)
    cp = fails("mkdset", box, "/x", "--dtype", "u1", "--shape", "10", *args, code=code)
    assert reason in cp.stderr, cp.stderr
    src = save(tmp_path, np.arange(10, dtype="u1"))
    cp = fails("import", "--create", box, "/x", src, *args, code=code)
    assert reason in cp.stderr, cp.stderr
    assert snapshot(box) == before
    fails("info", box, "/x")


# ---------------------------------------------------------------- info / ls -l

def test_info_shows_pipeline_stored_bytes_and_ratio(box, tmp_path):
    slab("mkdset", box, "/z", "--dtype", "f8", "--shape", "200,100", "--chunks", "50,50",
         "--shuffle", "--deflate", "6", "--checksum")
    text = slab("info", box, "/z").stdout.splitlines()
    for line in ["filters: shuffle,deflate=6,checksum", "stored_bytes: 0",
                 "compression_ratio: -"]:
        assert line in text, f"{line!r} not in {text}"
    assert info(box, "/z")["compression_ratio"] is None

    slab("import", box, "/z", save(tmp_path, smooth((200, 100))))
    i = info(box, "/z")
    assert i["stored_bytes"] > 0
    assert i["compression_ratio"] == pytest.approx(i["size_bytes"] / i["stored_bytes"])
    assert i["stored_bytes"] == sum(c["bytes"] for c in chunks(box, "/z"))
    text = slab("info", box, "/z").stdout.splitlines()
    assert f"stored_bytes: {i['stored_bytes']}" in text
    assert f"compression_ratio: {i['size_bytes'] / i['stored_bytes']:.2f}x" in text

    slab("mkdset", box, "/plain", "--dtype", "u2", "--shape", "10")
    assert "filters: none" in slab("info", box, "/plain").stdout.splitlines()
    assert info(box, "/plain")["filters"] == "none"


def test_ls_long_shows_stored_bytes_and_ratio(box, tmp_path):
    slab("mkgroup", box, "/g")
    slab("mkdset", box, "/g/empty", "--dtype", "f4", "--shape", "100,100")
    slab("import", "--create", box, "/g/z", save(tmp_path, smooth((100, 100))), "--chunks",
         "50,50", "--deflate", "6")
    rows = {r.split()[-1]: r.split() for r in slab("ls", "-l", "-r", box).stdout.splitlines()[1:]}
    assert rows["g/"] == ["group", "-", "-", "-", "-", "-", "-", "g/"]
    assert rows["g/empty"] == ["dataset", "f4", "100,100", "100,100", "40000", "0", "-",
                               "g/empty"]
    z = rows["g/z"]
    i = info(box, "/g/z")
    assert z[:5] == ["dataset", "f8", "100,100", "50,50", "80000"]
    assert z[5] == str(i["stored_bytes"])
    assert z[6] == f"{80000 / i['stored_bytes']:.2f}x"
    # Ratios and byte counts line up on the right.
    lines = slab("ls", "-l", box, "/g").stdout.splitlines()[1:]
    ends = {line.index(line.split()[6]) + len(line.split()[6]) for line in lines}
    assert len(ends) == 1, lines


def test_deflate_makes_smooth_data_smaller(box, tmp_path):
    a = smooth((256, 256))
    src = save(tmp_path, a)
    slab("import", "--create", box, "/raw", src, "--chunks", "64,64")
    slab("import", "--create", box, "/z", src, "--chunks", "64,64", "--shuffle", "--deflate", "6")
    raw, z = info(box, "/raw"), info(box, "/z")
    assert raw["stored_bytes"] == a.nbytes
    assert z["stored_bytes"] < a.nbytes // 2, z
    assert z["compression_ratio"] > 2
    assert export_bytes(box, "/z") == a.tobytes()
    # A level-1 and a level-9 copy both decode to the same data.
    slab("import", "--create", box, "/z1", src, "--chunks", "64,64", "--deflate", "1")
    slab("import", "--create", box, "/z9", src, "--chunks", "64,64", "--deflate", "9")
    assert export_bytes(box, "/z1") == export_bytes(box, "/z9") == a.tobytes()
    assert info(box, "/z9")["stored_bytes"] <= info(box, "/z1")["stored_bytes"]


# ---------------------------------------------------------------- chunks

def test_chunks_lists_every_stored_chunk_sorted(box, tmp_path):
    slab("mkdset", box, "/d", "--dtype", "u1", "--shape", "10,7", "--chunks", "4,4")
    assert chunks(box, "/d") == []
    assert slab("chunks", box, "/d").stdout.split() == ["coords", "offset", "bytes",
                                                          "filter_mask"]
    a = np.arange(70, dtype="u1").reshape(10, 7)
    slab("import", box, "/d", save(tmp_path, a))
    got = chunks(box, "/d")
    assert [c["coords"] for c in got] == [[r, k] for r in range(3) for k in range(2)]
    for c in got:
        assert list(c) == ["coords", "offset", "bytes", "filter_mask"]
        # Unfiltered chunks are stored whole, trimmed to the max shape, raw.
        r, k = c["coords"]
        block = a[r * 4:r * 4 + 4, k * 4:k * 4 + 4]
        assert c["bytes"] == block.size and c["filter_mask"] == 0
        with open(box, "rb") as f:
            f.seek(c["offset"])
            on_disk = np.frombuffer(f.read(c["bytes"]), dtype="u1").reshape(block.shape)
        np.testing.assert_array_equal(on_disk, block)
    assert len({c["offset"] for c in got}) == len(got)

    text = slab("chunks", box, "/d").stdout.splitlines()
    assert text[0].split() == ["coords", "offset", "bytes", "filter_mask"]
    assert [line.split() for line in text[1:]] == [
        [",".join(map(str, c["coords"])), str(c["offset"]), str(c["bytes"]), "0"] for c in got]


def test_chunks_of_a_sparse_filtered_dataset(box, tmp_path):
    slab("mkdset", box, "/s", "--dtype", "i4", "--shape", "100,100", "--chunks", "10,10",
         "--deflate", "6", "--checksum")
    a = np.zeros((100, 100), dtype="<i4")
    a[55:57, 30:45] = 9
    slab("import", box, "/s", save(tmp_path, a))
    got = chunks(box, "/s")
    assert [c["coords"] for c in got] == sorted(c["coords"] for c in got)
    assert len(got) == info(box, "/s")["allocated_chunks"]
    assert all(c["bytes"] > 0 for c in got)
    assert all(isinstance(c["filter_mask"], int) for c in got)


def test_chunks_json_finds_a_chunk_to_damage(box, tmp_path):
    """What the mount tests do with `slab chunks --json`: damage one chunk and
    see the checksum catch it."""
    slab("mkdset", box, "/d", "--dtype", "f8", "--shape", "64,64", "--chunks", "32,32",
         "--shuffle", "--deflate", "6", "--checksum")
    slab("import", box, "/d", save(tmp_path, smooth((64, 64))))
    victim = chunks(box, "/d")[1]
    with open(box, "r+b") as f:
        f.seek(victim["offset"] + victim["bytes"] // 2)
        b = f.read(1)
        f.seek(victim["offset"] + victim["bytes"] // 2)
        f.write(bytes([b[0] ^ 0xFF]))
    cp = fails("export", box, "/d", tmp_path / "out.npy")
    assert "/d" in cp.stderr, cp.stderr
    # And repack refuses to copy it, leaving nothing behind.
    out = tmp_path / "out.slab"
    fails("repack", box, out)
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "box.slab"]


def test_chunks_errors(box, tmp_path):
    slab("mkgroup", box, "/g")
    assert "group" in fails("chunks", box, "/g").stderr
    assert "/nope" in fails("chunks", box, "/nope").stderr
    assert "missing.slab" in fails("chunks", tmp_path / "missing.slab", "/d").stderr
    fails("chunks", box, "relative")
    fails("chunks", box, code=2)


# ---------------------------------------------------------------- repack

def observable(c):
    """A snapshot without object ids (a copy numbers its objects afresh)."""
    state = snapshot(c)
    for v in state.values():
        if isinstance(v, dict):
            v.pop("id", None)
    return state


def summary(cp):
    """The numbers of repack's summary lines."""
    out = {}
    for line in cp.stdout.splitlines():
        m = re.fullmatch(r"([a-z ]+): (\d+) -> (\d+)", line)
        if m:
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return out


@pytest.fixture
def rich(tmp_path):
    """Groups, attributes of every kind, and datasets: dense, filtered,
    sparse, never written, growable; and free space from a removed dataset."""
    c = tmp_path / "rich.slab"
    slab("create", c)
    slab("mkgroup", "-p", c, "/g/sub")
    slab("mkgroup", c, "/empty")
    slab("attr", c, "/", "title", "run 1")
    slab("attr", c, "/g", "n", "-3")
    slab("attr", c, "/g", "scale", "0.25")
    slab("attr", c, "/g", "ids", "1,2,3", "--dtype", "u2")
    slab("attr", c, "/g", "label", "42", "--string")
    slab("import", "--create", c, "/g/dense", save(tmp_path, smooth((120, 80), "<f4"), "d.npy"),
         "--chunks", "25,30", "--fill=-1")
    slab("attr", c, "/g/dense", "units", "K")
    slab("import", "--create", c, "/filtered", save(tmp_path, smooth((64, 64)), "f.npy"),
         "--chunks", "16,16", "--shuffle", "--deflate", "4", "--checksum")
    # Sparse: one row of 10 chunks stored out of 100.
    slab("import", "--create", c, "/g/sub/sparse",
         save(tmp_path, np.arange(1000, dtype="<i4").reshape(10, 100), "s.npy"),
         "--chunks", "10,10", "--maxshape", "100,100")
    slab("resize", c, "/g/sub/sparse", "100,100")
    slab("mkdset", c, "/never", "--dtype", "u8", "--shape", "1000", "--chunks", "100")
    slab("import", "--create", c, "/stream", save(tmp_path, np.arange(40, dtype="<u2")
                                                   .reshape(5, 8), "t.npy"),
         "--maxshape", "unlimited,8", "--chunks", "2,8", "--index", "btree")
    slab("import", "--create", c, "/gone", save(tmp_path, smooth((100, 100)), "x.npy"))
    slab("rm", c, "/gone")
    for name in ("d.npy", "f.npy", "s.npy", "t.npy", "x.npy"):
        (tmp_path / name).unlink()
    return c


DATASETS = ["/filtered", "/g/dense", "/g/sub/sparse", "/never", "/stream"]


def test_repack_copies_everything_exactly(rich, tmp_path):
    out = tmp_path / "out.slab"
    before = digest(rich)
    cp = slab("repack", rich, out)
    assert digest(rich) == before
    assert observable(out) == observable(rich)
    for p in DATASETS:
        assert export_bytes(out, p) == export_bytes(rich, p)
        assert [c["coords"] for c in chunks(out, p)] == [c["coords"] for c in chunks(rich, p)]
    assert chunks(out, "/never") == []
    # The sparse dataset stays sparse: the ten chunks written, no more.
    assert info(out, "/g/sub/sparse")["allocated_chunks"] == 10
    assert slab("attr", out, "/g", "label").stdout == "42\n"
    assert slab("attr", out, "/g", "ids").stdout == "1,2,3\n"
    assert "copied 3 groups, 5 datasets and 6 attributes" in cp.stdout.splitlines()
    s = summary(cp)
    assert s["file bytes"] == (os.path.getsize(rich), os.path.getsize(out))
    total = sum(info(out, p)["stored_bytes"] for p in DATASETS)
    assert s["stored chunk bytes"] == (total, total)
    assert sorted(os.listdir(tmp_path)) == ["out.slab", "rich.slab"]


def test_repack_drops_the_free_space_of_removed_data(rich, tmp_path):
    out = tmp_path / "out.slab"
    s = summary(slab("repack", rich, out))
    free_before, free_after = s["free bytes inside"]
    assert free_before >= 80000  # the removed 100x100 f8 dataset
    assert free_after < free_before
    assert os.path.getsize(out) < os.path.getsize(rich)


def test_repack_leaves_no_free_space(rich, tmp_path):
    out = tmp_path / "out.slab"
    s = summary(slab("repack", rich, out))
    assert s["free bytes inside"][1] == 0, s


@pytest.mark.parametrize("args,pipeline", [
    (["--deflate", "6"], "deflate=6"),
    (["--shuffle", "--deflate", "9", "--checksum"], "shuffle,deflate=9,checksum"),
    (["--checksum"], "checksum"),
    (["--filters", "checksum,shuffle"], "checksum,shuffle"),
    (["--filters", "none"], "none"),
])
def test_repack_sets_every_pipeline(rich, tmp_path, args, pipeline):
    out = tmp_path / "out.slab"
    slab("repack", rich, out, *args)
    for p in DATASETS:
        assert info(out, p)["filters"] == pipeline, p
        assert export_bytes(out, p) == export_bytes(rich, p), p
        assert info(out, p)["chunks"] == info(rich, p)["chunks"]
    assert info(rich, "/filtered")["filters"] == "shuffle,deflate=4,checksum"


def test_repack_without_filter_options_keeps_each_pipeline(rich, tmp_path):
    out = tmp_path / "out.slab"
    slab("repack", rich, out, "--chunks", "8,8")
    assert info(out, "/filtered")["filters"] == "shuffle,deflate=4,checksum"
    assert info(out, "/g/dense")["filters"] == "none"


def test_repack_deflate_shrinks_smooth_data(box, tmp_path):
    a = smooth((300, 200))
    slab("import", "--create", box, "/d", save(tmp_path, a), "--chunks", "50,50")
    out = tmp_path / "out.slab"
    s = summary(slab("repack", box, out, "--shuffle", "--deflate", "6"))
    assert s["stored chunk bytes"][0] == a.nbytes
    assert s["stored chunk bytes"][1] < a.nbytes // 2
    assert info(out, "/d")["stored_bytes"] == s["stored chunk bytes"][1]
    assert os.path.getsize(out) < os.path.getsize(box)
    assert export_bytes(out, "/d") == a.tobytes()


def test_repack_new_chunks_for_datasets_of_that_rank(rich, tmp_path):
    out = tmp_path / "out.slab"
    cp = slab("repack", rich, out, "--chunks", "7,9")
    for p in ["/filtered", "/g/dense", "/g/sub/sparse", "/stream"]:
        assert info(out, p)["chunks"] == [7, 9], p
        assert export_bytes(out, p) == export_bytes(rich, p), p
    assert info(out, "/never")["chunks"] == [100]
    assert "--chunks 7,9 is for datasets of rank 2: 1 dataset of another rank kept its chunks (/never)" in \
        cp.stdout.splitlines()
    # A growable dataset still grows after a new chunking.
    assert info(out, "/stream")["max_shape"] == [None, 8]
    slab("resize", out, "/stream", "20,8")
    assert info(out, "/stream")["shape"] == [20, 8]
    # The sparse dataset: its stored rows 0-9 meet 2 rows of 12 new chunks.
    assert info(out, "/g/sub/sparse")["allocated_chunks"] == 24


def test_repack_round_trip_through_export(rich, tmp_path):
    """Repack twice, changing chunks and filters and back: the data never
    changes."""
    one, two = tmp_path / "one.slab", tmp_path / "two.slab"
    slab("repack", rich, one, "--chunks", "13,5", "--deflate", "1")
    slab("repack", one, two, "--filters", "none")
    for p in DATASETS:
        data = export_bytes(rich, p)
        assert export_bytes(one, p) == data
        assert export_bytes(two, p) == data
        npy = tmp_path / "x.npy"
        slab("export", two, p, npy)
        assert np.load(npy).tobytes() == data


def test_repack_of_empty_and_shrunk_datasets(box, tmp_path):
    """A dataset with no elements, and one shrunk through a chunk: the copy
    reads the same, and grown back it shows the fill value where the
    original does."""
    slab("mkdset", box, "/frames", "--dtype", "u2", "--shape", "0,4,4", "--maxshape",
         "unlimited,4,4")
    a = np.arange(240, dtype="<i4").reshape(20, 12)
    slab("import", "--create", box, "/shrunk", save(tmp_path, a), "--chunks", "4,4",
         "--maxshape", "unlimited,12", "--fill", "-5")
    slab("resize", box, "/shrunk", "9,12")
    out = tmp_path / "out.slab"
    slab("repack", box, out, "--chunks", "3,5", "--deflate", "2")
    assert info(out, "/frames")["shape"] == [0, 4, 4]
    assert info(out, "/frames")["allocated_chunks"] == 0
    assert export_bytes(out, "/shrunk") == a[:9].tobytes()
    for c in (box, out):
        slab("resize", c, "/shrunk", "20,12")
    assert export_bytes(out, "/shrunk") == export_bytes(box, "/shrunk")
    ref = np.full((20, 12), -5, dtype="<i4")
    ref[:9] = a[:9]
    assert export_bytes(out, "/shrunk") == ref.tobytes()


def test_repack_refuses_an_existing_output(rich, tmp_path):
    other = tmp_path / "other.slab"
    slab("create", other)
    slab("mkgroup", other, "/mine")
    text = tmp_path / "notes.txt"
    text.write_text("precious\n")
    before = {p: digest(p) for p in (rich, other, text)}
    assert "exists" in fails("repack", rich, other).stderr
    assert "exists" in fails("repack", rich, text).stderr
    assert {p: digest(p) for p in before} == before
    assert sorted(os.listdir(tmp_path)) == ["notes.txt", "other.slab", "rich.slab"]


def test_repack_refuses_to_write_over_its_input(rich, tmp_path):
    (tmp_path / "sub").mkdir()
    os.symlink(rich, tmp_path / "link.slab")
    os.link(rich, tmp_path / "hard.slab")
    before = digest(rich)
    for same in (rich, tmp_path / "sub" / ".." / "rich.slab", tmp_path / "link.slab",
                 tmp_path / "hard.slab"):
        cp = fails("repack", rich, same)
        assert "input" in cp.stderr, cp.stderr
    assert digest(rich) == before


def test_repack_of_a_missing_or_bad_input_creates_nothing(tmp_path):
    out = tmp_path / "out.slab"
    assert "missing.slab" in fails("repack", tmp_path / "missing.slab", out).stderr
    junk = tmp_path / "junk.slab"
    junk.write_bytes(b"not a container\n" * 1000)
    fails("repack", junk, out)
    fails("repack", tmp_path, out)
    assert "does not exist" in fails("repack", junk, tmp_path / "no" / "out.slab").stderr
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["junk.slab"]


def test_repack_of_a_damaged_container_creates_nothing(rich, tmp_path):
    bad = tmp_path / "bad.slab"
    data = bytearray(rich.read_bytes())
    for i in range(12288, len(data)):
        data[i] ^= 0x5A
    bad.write_bytes(bytes(data))
    out = tmp_path / "out.slab"
    fails("repack", bad, out)
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["bad.slab", "rich.slab"]


@pytest.mark.parametrize("args,reason,code", [
    (["--deflate", "0"], "--deflate '0'", 1),
    (["--deflate", "10"], "--deflate '10'", 1),
    (["--filters", "lz4"], "unknown filter 'lz4'", 1),
    (["--chunks", "0,4"], "--chunks", 1),
    (["--chunks", "x"], "--chunks", 1),
    (["--filters", "none", "--checksum"], "excludes", 2),
    # Too big a chunk for the engine: fails half way through the copy.
    (["--chunks", "100000,100000"], "larger than", 1),
])
def test_repack_bad_options_create_nothing(rich, tmp_path, args, reason, code):
    out = tmp_path / "out.slab"
    before = digest(rich)
    cp = fails("repack", rich, out, *args, code=code)
    assert reason in cp.stderr, cp.stderr
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["rich.slab"]
    assert digest(rich) == before


def test_new_commands_have_help():
    top = slab("--help").stdout
    for cmd in ("chunks", "repack"):
        assert cmd in top
        cp = slab(cmd, "--help")
        assert "FILE" in cp.stdout and cp.stderr == ""
    for cmd in ("mkdset", "import", "repack"):
        text = slab(cmd, "--help").stdout
        for opt in ("--shuffle", "--deflate", "--checksum", "--filters"):
            assert opt in text, (cmd, opt)
