"""Filtered datasets (shuffle, deflate, checksum) through a real mount: du
shows the bytes stored and du --apparent-size the logical size, the
user.slab.filters and user.slab.stored attributes, writes into compressed
chunks with dd conv=notrunc, incompressible data, and damaged chunks: EIO for
every read that touches one (a failed checksum or a broken deflate stream),
correct data everywhere else, a log line naming the dataset and the chunk,
and a daemon that stays up. Datasets are made with `slab mkdset --filters`
(or --shuffle --deflate N) and chunks are found with `slab chunks --json`.
A partial write into a damaged chunk fails at once with EIO and does not
stop later commits."""
import errno
import json
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import mpath, run, slab
from mounting import container, mounted, mounter  # noqa: F401

RNG = np.random.default_rng(4040)
N = 1024      # the smooth datasets are N x N f4 (4 MiB)
CHUNK = 128   # in CHUNK x CHUNK chunks: 64 of them
ROW = N * 4   # bytes per row


def smooth(n=N):
    """sin(i/100) + cos(j/70), to 1/1024 like a 16-bit instrument: shuffle
    and deflate shrink it about six times."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return (np.round((np.sin(i / 100) + np.cos(j / 70)) * 1024) / 1024).astype("<f4")


def mkdset(c, path, dtype, shape, chunks, filters):
    """filters: the --filters text, or a list of mkdset's filter flags."""
    args = ["--filters", filters] if isinstance(filters, str) else list(filters)
    slab("mkdset", "-p", c, path, "--dtype", dtype, "--shape", ",".join(map(str, shape)),
         "--chunks", ",".join(map(str, chunks)), *args)


def import_array(c, path, array, tmp_path):
    npy = tmp_path / "import.npy"
    np.save(npy, array)
    slab("import", c, path, npy)
    npy.unlink()


def stored_chunks(c, path):
    """{tuple(coords): {"offset", "bytes", "filter_mask"}} from slab chunks --json."""
    out = json.loads(slab("chunks", c, path, "--json").stdout)
    return {tuple(ch["coords"]): ch for ch in out}


def du(path, *flags):
    return int(run("du", "-B1", *flags, path).stdout.split()[0])


def getfattr(path, name):
    return run("getfattr", "--only-values", "-n", name, path).stdout


def tool(*args, input=None):
    """Runs a command on binary data: CompletedProcess with bytes stdout
    and text stderr."""
    cp = subprocess.run([str(a) for a in args], input=input, capture_output=True, timeout=120)
    cp.stderr = cp.stderr.decode(errors="replace")
    return cp


def dd_rows(path, first, count):
    """Rows [first, first+count) of an N-column f4 dataset, read with dd."""
    cp = tool("dd", f"if={path}", f"bs={ROW}", f"skip={first}", f"count={count}", "status=none")
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


def damage(c, offset, nbytes):
    """Inverts nbytes of the container file at offset (XOR 0xFF: every byte
    changes)."""
    with open(c, "r+b") as f:
        f.seek(offset)
        old = f.read(nbytes)
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in old))


def chunk_named(line, coords):
    """Whether a log line names the chunk at these grid coordinates, in any
    of the usual spellings: (3,5), [3, 5], 3,5."""
    pattern = r"\s*,\s*".join(str(x) for x in coords)
    return re.search(r"chunk\D{0,4}" + pattern + r"\b", line) is not None


# ------------------------------------------------------------ size and xattrs

def test_compressed_dataset_shows_its_stored_size_in_du(container, mounter, tmp_path):
    array = smooth()
    mkdset(container, "/f/smooth", "f4", array.shape, (CHUNK, CHUNK),
           ["--shuffle", "--deflate", "6"])
    src = tmp_path / "smooth.bin"
    src.write_bytes(array.tobytes())
    m = mounter(container)
    ds = mpath(m, "/f/smooth")
    cp = tool("dd", f"if={src}", f"of={ds}", "bs=1M", "conv=notrunc", "status=none")
    assert cp.returncode == 0, cp.stderr
    assert m.unmount() == 0

    m = mounter(container)
    ds = mpath(m, "/f/smooth")
    chunks = stored_chunks(container, "/f/smooth")
    assert len(chunks) == (N // CHUNK) ** 2
    assert all(ch["filter_mask"] == 0 for ch in chunks.values())  # deflate ran everywhere
    stored = sum(ch["bytes"] for ch in chunks.values())
    logical = N * N * 4
    assert os.path.getsize(ds) == logical
    assert du(ds, "--apparent-size") == logical
    # st_blocks is the bytes stored, rounded up to 512-byte units.
    assert os.stat(ds).st_blocks == (stored + 511) // 512
    assert du(ds) == (stored + 511) // 512 * 512
    assert du(ds) * 3 < logical
    assert getfattr(ds, "user.slab.filters") == "shuffle,deflate=6"
    assert int(getfattr(ds, "user.slab.stored")) == stored
    run("cmp", src, ds)
    np.testing.assert_array_equal(np.fromfile(ds, dtype="<f4").reshape(N, N), array)


def test_filters_attribute_is_listed_and_none_without_filters(container, mounter):
    mkdset(container, "/plain", "u2", (100,), (10,), "none")
    mkdset(container, "/all", "i4", (100,), (10,), "shuffle,deflate=9,checksum")
    mkdset(container, "/short", "f8", (100,), (10,), "deflate")
    m = mounter(container)
    assert getfattr(mpath(m, "/plain"), "user.slab.filters") == "none"
    assert getfattr(mpath(m, "/all"), "user.slab.filters") == "shuffle,deflate=9,checksum"
    assert getfattr(mpath(m, "/short"), "user.slab.filters") == "deflate=6"
    for path in ("/plain", "/all"):
        assert "user.slab.filters" in os.listxattr(mpath(m, path))
    dump = run("getfattr", "-d", "-m", "^user\\.slab\\.", mpath(m, "/all")).stdout
    assert 'user.slab.filters="shuffle,deflate=9,checksum"' in dump
    # A dataset that stores nothing yet may take other filters; once it
    # holds data they are fixed.
    os.setxattr(mpath(m, "/short"), "user.slab.filters", b"shuffle,deflate=1")
    assert getfattr(mpath(m, "/short"), "user.slab.filters") == "shuffle,deflate=1"
    with open(mpath(m, "/plain"), "r+b") as f:
        f.write(b"\x01\x02")
    with pytest.raises(OSError) as e:
        os.setxattr(mpath(m, "/plain"), "user.slab.filters", b"deflate")
    assert e.value.errno == errno.EPERM


@pytest.mark.parametrize("filters,overhead", [
    ("deflate=6", 0),
    ("shuffle,deflate=9,checksum", 4),
])
def test_incompressible_data_is_stored_no_larger_than_raw(container, mounter, tmp_path,
                                                          filters, overhead):
    # 500 x 300 in 128 x 128 chunks: partial edge chunks in both dimensions.
    shape, chunks = (500, 300), (128, 128)
    raw = RNG.integers(0, 2**32, shape, dtype=np.uint32).view("<f4")
    mkdset(container, "/noise", "f4", shape, chunks, filters)
    src = tmp_path / "noise.bin"
    src.write_bytes(raw.tobytes())
    m = mounter(container)
    cp = tool("dd", f"if={src}", f"of={mpath(m, '/noise')}", "bs=64K", "conv=notrunc",
              "status=none")
    assert cp.returncode == 0, cp.stderr
    assert m.unmount() == 0

    stored = stored_chunks(container, "/noise")
    grid = [(r, c) for r in range(4) for c in range(3)]
    assert sorted(stored) == grid
    deflate_bit = 1 << [f.split("=")[0] for f in filters.split(",")].index("deflate")
    for (r, c), ch in stored.items():
        rows = min(chunks[0], shape[0] - r * chunks[0])
        cols = min(chunks[1], shape[1] - c * chunks[1])
        assert ch["bytes"] <= rows * cols * 4 + overhead, (r, c)
        # Deflate made nothing smaller, so it was skipped.
        assert ch["filter_mask"] & deflate_bit, (r, c)
    total = sum(ch["bytes"] for ch in stored.values())
    assert total <= raw.nbytes + overhead * len(grid)

    m = mounter(container)
    ds = mpath(m, "/noise")
    assert int(getfattr(ds, "user.slab.stored")) == total
    assert du(ds, "--apparent-size") == raw.nbytes
    run("cmp", src, ds)


# ------------------------------------------------------------ writes

def test_dd_inside_a_compressed_chunk_survives_a_remount(container, mounter, tmp_path):
    array = smooth()
    mkdset(container, "/f/w", "f4", array.shape, (CHUNK, CHUNK), "shuffle,deflate=6,checksum")
    import_array(container, "/f/w", array, tmp_path)
    expected = bytearray(array.tobytes())
    # Starts inside an element of chunk (1, 2) and ends inside chunk (1, 3);
    # the second write is inside one chunk, in a row of chunk (7, 0).
    patches = [((200 * N + 300) * 4 + 2, RNG.integers(0, 256, 1000, dtype=np.uint8).tobytes()),
               ((1000 * N + 5) * 4, np.full(7, 42.5, dtype="<f4").tobytes())]
    m = mounter(container)
    ds = mpath(m, "/f/w")
    for offset, payload in patches:
        cp = tool("dd", f"of={ds}", f"bs={len(payload)}", "count=1", f"seek={offset}",
                  "oflag=seek_bytes", "conv=notrunc", "status=none", input=payload)
        assert cp.returncode == 0, cp.stderr
        expected[offset:offset + len(payload)] = payload
    with open(ds, "rb") as f:
        assert f.read() == expected
    assert m.unmount() == 0

    m = mounter(container)
    ds = mpath(m, "/f/w")
    with open(ds, "rb") as f:
        assert f.read() == expected
    # Still compressed and checksummed after the read-modify-write.
    chunks = stored_chunks(container, "/f/w")
    assert sum(ch["bytes"] for ch in chunks.values()) * 3 < N * N * 4
    assert getfattr(ds, "user.slab.filters") == "shuffle,deflate=6,checksum"


# ------------------------------------------------------------ damaged chunks

BAD = (3, 5)  # the damaged chunk: rows 384..511, columns 640..767


def make_damaged(c, tmp_path, filters, how):
    """A smooth dataset /f/bad with one chunk (BAD) damaged in the file:
    how="flip" inverts one byte in its middle, how="garbage" inverts 64
    bytes there. Returns the array."""
    array = smooth()
    mkdset(c, "/f/bad", "f4", array.shape, (CHUNK, CHUNK), filters)
    import_array(c, "/f/bad", array, tmp_path)
    ch = stored_chunks(c, "/f/bad")[BAD]
    if "deflate" in filters:
        assert ch["filter_mask"] == 0  # the chunk really is a deflate stream
    n = 1 if how == "flip" else 64
    damage(c, ch["offset"] + ch["bytes"] // 2 - n // 2, n)
    return array


def check_damaged_mount(m, array):
    """What a mount of make_damaged's container must do."""
    ds = mpath(m, "/f/bad")
    data = array.tobytes()
    # cat fails with EIO.
    cp = tool("cat", ds)
    assert cp.returncode != 0
    assert "Input/output error" in cp.stderr
    # So does a read of any byte of the damaged chunk.
    fd = os.open(ds, os.O_RDONLY)
    try:
        with pytest.raises(OSError) as e:
            os.pread(fd, 4, ((BAD[0] * CHUNK + 7) * N + BAD[1] * CHUNK + 9) * 4)
        assert e.value.errno == errno.EIO
    finally:
        os.close(fd)
    cp = tool("dd", f"if={ds}", f"bs={ROW}", f"skip={BAD[0] * CHUNK}", "count=1", "status=none")
    assert cp.returncode != 0 and "Input/output error" in cp.stderr
    # Rows above and below the damaged chunk's rows read correctly.
    first, end = BAD[0] * CHUNK, (BAD[0] + 1) * CHUNK
    assert dd_rows(ds, 0, first) == data[:first * ROW]
    assert dd_rows(ds, end, N - end) == data[end * ROW:]
    assert dd_rows(ds, first - 3, 3) == data[(first - 3) * ROW:first * ROW]
    # One error line names the dataset and the chunk.
    lines = [ln for ln in m.log().splitlines() if "/f/bad" in ln and "EIO" in ln]
    assert lines, m.log()
    assert any(chunk_named(ln, BAD) for ln in lines), lines
    assert all(": error: " in ln for ln in lines), lines
    # The daemon is still serving, and the error does not stick.
    assert m.proc.poll() is None
    assert os.path.getsize(ds) == len(data)
    cp = tool("cat", ds)
    assert cp.returncode != 0 and "Input/output error" in cp.stderr
    assert dd_rows(ds, N - 1, 1) == data[(N - 1) * ROW:]


@pytest.mark.parametrize("filters", ["checksum", "shuffle,deflate=6,checksum"])
def test_checksum_failure_is_eio_and_names_the_chunk(container, mounter, tmp_path, filters):
    array = make_damaged(container, tmp_path, filters, "flip")
    m = mounter(container)
    check_damaged_mount(m, array)


def test_damaged_deflate_stream_without_checksum_is_eio(container, mounter, tmp_path):
    array = make_damaged(container, tmp_path, "shuffle,deflate=6", "garbage")
    m = mounter(container)
    check_damaged_mount(m, array)


def test_damaged_chunk_on_a_read_only_mount(container, mounter, tmp_path):
    array = make_damaged(container, tmp_path, "deflate=1", "garbage")
    m = mounter(container, "-o", "ro")
    check_damaged_mount(m, array)


def test_write_over_a_whole_damaged_chunk_replaces_it(container, mounter, tmp_path):
    array = make_damaged(container, tmp_path, "shuffle,deflate=6,checksum", "flip")
    # Rows 384..511 cover chunk BAD and the seven others of its row of
    # chunks: every element of each is written, so none is read first.
    first, rows = BAD[0] * CHUNK, CHUNK
    fresh = np.full((rows, N), -2.25, dtype="<f4")
    m = mounter(container)
    ds = mpath(m, "/f/bad")
    cp = tool("dd", f"of={ds}", f"bs={ROW}", f"seek={first}", f"count={rows}", "conv=notrunc",
              "status=none", input=fresh.tobytes())
    assert cp.returncode == 0, cp.stderr
    assert m.unmount() == 0
    expected = array.copy()
    expected[first:first + rows] = fresh
    m = mounter(container)
    with open(mpath(m, "/f/bad"), "rb") as f:
        assert f.read() == expected.tobytes()


def test_partial_write_into_a_damaged_chunk_does_not_block_other_commits(container, tmp_path):
    array = make_damaged(container, tmp_path, "shuffle,deflate=6,checksum", "flip")
    mkdset(container, "/other", "u1", (100,), (10,), "none")
    with mounted(container) as m:
        ds = mpath(m, "/f/bad")
        # Four bytes inside the damaged chunk: the write needs the chunk's
        # other elements, which cannot be read, so it fails (at the latest
        # at close).
        offset = ((BAD[0] * CHUNK + 1) * N + BAD[1] * CHUNK + 1) * 4
        cp = tool("dd", f"of={ds}", "bs=4", "count=1", f"seek={offset}", "oflag=seek_bytes",
                  "conv=notrunc", "status=none", input=b"\0\0\0\0")
        assert cp.returncode != 0 and "Input/output error" in cp.stderr
        # A write elsewhere is committed at its close all the same.
        cp = tool("dd", f"of={mpath(m, '/other')}", "conv=notrunc", "status=none",
                  input=b"hello")
        assert cp.returncode == 0, cp.stderr
        assert slab("export", container, "/other", "-").stdout[:5] == "hello"
    with mounted(container, "-o", "ro") as m:
        with open(mpath(m, "/other"), "rb") as f:
            assert f.read(5) == b"hello"
        data = array.tobytes()
        assert dd_rows(mpath(m, "/f/bad"), 0, BAD[0] * CHUNK) == data[:BAD[0] * CHUNK * ROW]
