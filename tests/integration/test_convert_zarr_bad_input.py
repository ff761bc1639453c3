"""Zarr imports of damaged and hostile stores, and interrupted imports and
exports: each ends with exit status 1 and one line (never a signal), and
leaves no container, store or temporary file behind; an existing container
keeps exactly what it held."""
import json
import os
import signal
import subprocess
import time

import numcodecs
import numpy as np
import pytest
import zarr

from conftest import bin_path, fails, slab
from mounting import container, make_dataset  # noqa: F401
from zarr_stores import V3_CASES, no_leftovers, snapshot, values, write_v3_array


# ------------------------------------------------------------------ hostile stores

def v2_store(tmp_path, name="h.zarr", **kw):
    store = tmp_path / name
    z = zarr.open_array(str(store), mode="w", shape=(20, 20), chunks=(10, 10), dtype="<f8", **kw)
    z[:] = values("f8", (20, 20), seed=12)
    return store


def edit_json(path, **changes):
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))


HOSTILE = {
    "bad_json": lambda s: (s / ".zarray").write_text('{"zarr_format": 2, "shape": [20,'),
    "deep_json": lambda s: (s / ".zattrs").write_text("[" * 100000 + "]" * 100000),
    "attrs_not_object": lambda s: (s / ".zattrs").write_text("[1, 2]"),
    "lying_chunks": lambda s: edit_json(s / ".zarray", chunks=[10, 5]),
    "lying_dtype": lambda s: edit_json(s / ".zarray", dtype="<f4"),
    "negative_shape": lambda s: edit_json(s / ".zarray", shape=[-20, 20]),
    "float_shape": lambda s: edit_json(s / ".zarray", shape=[20.5, 20]),
    "rank_mismatch": lambda s: edit_json(s / ".zarray", chunks=[10]),
    "zero_chunk": lambda s: edit_json(s / ".zarray", chunks=[0, 10]),
    "absurd_shape": lambda s: edit_json(s / ".zarray", shape=[2**62, 2**62]),
    "huge_chunks": lambda s: edit_json(s / ".zarray", chunks=[2**20, 2**20]),
    "bad_order": lambda s: edit_json(s / ".zarray", order="Z"),
    "bad_fill": lambda s: edit_json(s / ".zarray", fill_value="lots"),
    "bad_separator": lambda s: edit_json(s / ".zarray", dimension_separator=":"),
    "truncated_chunk": lambda s: (s / "1.1").write_bytes((s / "1.1").read_bytes()[:-9]),
    "garbage_chunk": lambda s: (s / "0.1").write_bytes(b"\x78\x9c" + os.urandom(300)),
    "empty_chunk": lambda s: (s / "0.0").write_bytes(b""),
    "trailing_bytes": lambda s: (s / "0.0").write_bytes((s / "0.0").read_bytes() + b"xx"),
    "chunk_is_dir": lambda s: ((s / "0.0").unlink(), (s / "0.0").mkdir(), (s / "0.0" / "x").write_bytes(b"")),
    "chunk_is_fifo": lambda s: ((s / "0.0").unlink(), os.mkfifo(s / "0.0")),
}


@pytest.mark.parametrize("damage", sorted(HOSTILE))
def test_hostile_v2_store(tmp_path, damage):
    store = v2_store(tmp_path, compressor=numcodecs.Zlib(5))
    HOSTILE[damage](store)
    c = tmp_path / "c.slab"
    cp = slab("import", c, store, check=False, timeout=60)
    if damage == "chunk_is_dir":
        # A directory is not a chunk of a "."-separated array: that chunk
        # reads as the fill value.
        assert cp.returncode == 0, cp.stderr
        return
    if damage == "huge_chunks":
        assert "1 GiB" in cp.stderr, cp.stderr
    assert cp.returncode == 1, (cp.returncode, cp.stdout, cp.stderr)
    err = cp.stderr.strip()
    assert err.startswith("slab") and len(err.splitlines()) == 1, err
    for bad in ("terminate called", "Aborted", "Segmentation", "runtime error"):
        assert bad not in cp.stderr
    no_leftovers(tmp_path, "c.slab")
    # An existing container is left exactly as it was.
    c2 = tmp_path / "c2.slab"
    slab("create", c2)
    make_dataset(c2, "/keep", np.arange(10, dtype="<i4"), (4,))
    before = snapshot(c2)
    cp = slab("import", c2, store, check=False, timeout=60)
    assert cp.returncode == 1
    assert snapshot(c2) == before


@pytest.mark.parametrize("cname", ["lz4", "zstd", "zlib"])
def test_hostile_blosc_chunks(tmp_path, cname):
    store = v2_store(tmp_path, compressor=numcodecs.Blosc(cname, 5, numcodecs.Blosc.SHUFFLE))
    good = (store / "1.1").read_bytes()
    # Truncated; shorter than a header; a header claiming another size
    # (nbytes at 4..8) or more stored bytes than there are (cbytes at 12..16).
    for damaged in [good[:-10], good[:15],
                    good[:4] + (10**9).to_bytes(4, "little") + good[8:],
                    good[:12] + (2**31 - 1).to_bytes(4, "little") + good[16:]]:
        (store / "1.1").write_bytes(damaged)
        cp = fails("import", tmp_path / "c.slab", store)
        assert "1.1" in cp.stderr, cp.stderr
        no_leftovers(tmp_path, "c.slab")


def test_hostile_v3_store(tmp_path):
    a = values("f4", (8, 8))
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    store = tmp_path / "v3.zarr"
    write_v3_array(str(store), a, (4, 4), codecs, fill="NaN")
    key = store / "c" / "1" / "0"
    data = bytearray(key.read_bytes())
    data[5] ^= 0x40
    key.write_bytes(bytes(data))
    cp = fails("import", tmp_path / "c.slab", store)
    assert "CRC-32C" in cp.stderr
    no_leftovers(tmp_path, "c.slab")
    for change in [{"fill_value": None}, {"node_type": "tree"}, {"codecs": []},
                   {"chunk_key_encoding": {"name": "fancy"}}, {"data_type": 7},
                   {"codecs": [{"name": "gzip", "configuration": {"level": 1}}, codecs[0]]},
                   {"codecs": [{"name": "transpose", "configuration": {"order": [0, 0]}},
                               codecs[0]]},
                   {"dimension_names": ["a"]}, {"unknown_extension": {"x": 1}}]:
        store = tmp_path / "h3.zarr"
        if store.exists():
            subprocess.run(["rm", "-rf", str(store)], check=True)
        write_v3_array(str(store), a, (4, 4), codecs, fill=0)
        edit_json(store / "zarr.json", **change)
        cp = fails("import", tmp_path / "c.slab", store)
        no_leftovers(tmp_path, "c.slab")


# ------------------------------------------------------------------ interrupts

def wait_for_temp(directory, name, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(f.startswith(f".{name}.slab") for f in os.listdir(directory)):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_import_leaves_nothing(tmp_path, sig):
    store = tmp_path / "big.zarr"
    z = zarr.open_array(str(store), mode="w", shape=(3000, 4000), chunks=(250, 500), dtype="<f8",
                        compressor=numcodecs.Blosc("lz4", 1, numcodecs.Blosc.SHUFFLE))
    z[:] = np.random.default_rng(0).integers(0, 1000, (3000, 4000)).astype("f8")
    p = subprocess.Popen([bin_path("slab"), "import", str(tmp_path / "c.slab"), str(store)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_for_temp(tmp_path, "c.slab", p), "the import ended before it could be stopped"
    p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, (p.returncode, err)
    assert "interrupted" in err and len(err.strip().splitlines()) == 1, err
    no_leftovers(tmp_path, "c.slab")


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_interrupted_export_leaves_nothing(tmp_path, container, fmt):
    a = np.random.default_rng(1).integers(0, 1000, (3000, 4000)).astype("<f8")
    make_dataset(container, "/big", a, (250, 500))
    p = subprocess.Popen([bin_path("slab"), "export", str(container), str(tmp_path / "o.zarr"),
                          "--format", fmt],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_for_temp(tmp_path, "o.zarr", p), "the export ended before it could be stopped"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, (p.returncode, err)
    assert "interrupted" in err, err
    no_leftovers(tmp_path, "o.zarr")


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_export_of_attributes_that_are_not_utf8(tmp_path, fmt):
    """A container attribute holds bytes; JSON holds Unicode text. The export
    writes U+FFFD for the other bytes and says so (it used to end with an
    exception from the JSON writer and leave its temporary store behind).
    Metadata is ASCII with \\u escapes, which zarr-python 2 requires."""
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/t", "--dtype", "u1", "--shape", "3")
    # subprocess passes these surrogate escapes as the raw bytes 0xff / 0xfe.
    slab("attr", c, "/t", "text", "a\udcffb")
    slab("attr", c, "/", "n\udcfeame", "v")
    slab("attr", c, "/t", "units", "\u00b0C")  # well-formed, not ASCII: no note
    out = tmp_path / "o.zarr"
    cp = slab("export", c, out, "--format", fmt)
    assert cp.stdout.count("not UTF-8") == 2, cp.stdout
    assert 'note: attribute "text" of /t is not UTF-8' in cp.stdout, cp.stdout
    assert 'note: attribute "n\ufffdame" of / is not UTF-8' in cp.stdout, cp.stdout
    if fmt == "zarr2":
        root = zarr.open_group(str(out), mode="r")
        assert dict(root["t"].attrs) == {"text": "a\ufffdb", "units": "\u00b0C"}
        assert dict(root.attrs) == {"n\ufffdame": "v"}
    else:
        meta = json.loads((out / "t" / "zarr.json").read_text())
        assert meta["attributes"] == {"text": "a\ufffdb", "units": "\u00b0C"}
        assert json.loads((out / "zarr.json").read_text())["attributes"] == {"n\ufffdame": "v"}
    assert sorted(os.listdir(tmp_path)) == ["c.slab", "o.zarr"]  # no temporary store


def test_mutated_stores_never_crash(tmp_path):
    """Random byte damage to metadata and chunks of real stores: every
    import ends with status 0 or 1 (one line), never a signal. Set
    SLABFS_ZARR_MUTATIONS for a longer run (e.g. against an ASan build)."""
    rounds = int(os.environ.get("SLABFS_ZARR_MUTATIONS", "40"))
    rng = np.random.default_rng(2024)
    a = values("i4", (12, 10), seed=6)
    stores = []
    for k, comp in enumerate([numcodecs.Zlib(3), numcodecs.GZip(1),
                              numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
                              numcodecs.Blosc("zstd", 5, numcodecs.Blosc.BITSHUFFLE)]):
        s = tmp_path / f"v2_{k}.zarr"
        zarr.open_array(str(s), mode="w", shape=a.shape, chunks=(5, 4), dtype="<i4",
                        compressor=comp)[:] = a
        stores.append(s)
    s3 = tmp_path / "v3.zarr"
    write_v3_array(str(s3), a, (5, 4), V3_CASES["blosc_crc"][:2] + [
        {"name": "gzip", "configuration": {"level": 2}}, {"name": "crc32c"}], fill=0)
    stores.append(s3)
    for r in range(rounds):
        src = stores[r % len(stores)]
        work = tmp_path / "work.zarr"
        subprocess.run(["rm", "-rf", str(work)], check=True)
        subprocess.run(["cp", "-r", str(src), str(work)], check=True)
        files = sorted(p for p in work.rglob("*") if p.is_file())
        for _ in range(1 + r % 3):
            f = files[rng.integers(len(files))]
            data = bytearray(f.read_bytes())
            how = rng.integers(3)
            if how == 0 and data:
                for _ in range(1 + rng.integers(4)):
                    data[rng.integers(len(data))] = int(rng.integers(256))
            elif how == 1:
                data = data[: rng.integers(len(data) + 1)]
            else:
                at = rng.integers(len(data) + 1)
                data[at:at] = bytes(rng.integers(0, 256, rng.integers(1, 20), dtype=np.uint8))
            f.write_bytes(bytes(data))
        c = tmp_path / "m.slab"
        cp = slab("import", c, work, check=False, timeout=60)
        assert cp.returncode in (0, 1), (r, cp.returncode, cp.stderr)
        for bad in ("terminate called", "Aborted", "Segmentation", "runtime error",
                    "AddressSanitizer"):
            assert bad not in cp.stderr, (r, cp.stderr)
        if cp.returncode == 1:
            assert len(cp.stderr.strip().splitlines()) == 1, cp.stderr
            no_leftovers(tmp_path, "m.slab")
        else:
            c.unlink()
