"""Datasets that grow, through a real mount: a stream of frames built with
`cat frame >> stream` and read back with dd, truncate(1) to fewer rows and
back (the cut rows read as fill), remounts in between, partial rows that
round up to a whole row of fill, EINVAL/EFBIG at the limits, O_TRUNC, appends
in pieces, and numpy fromfile/memmap of a grown file."""
import errno
import json
import os
import subprocess

import numpy as np
import pytest

from conftest import mpath, run, slab
from mounting import container, export, mounter  # noqa: F401

FRAME = (256, 256)
FRAME_BYTES = 256 * 256 * 2  # u2


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def ls_size(path):
    return int(run("ls", "-l", path).stdout.split()[4])


def shape_xattr(path):
    return run("getfattr", "--only-values", "-n", "user.slab.shape", path).stdout


def info(c, path):
    return json.loads(slab("info", "--json", c, path).stdout)


def mkstream(c, path, dtype, row_shape, fill=None, chunks=None, maxrows="unlimited"):
    """An empty dataset (0 rows) whose first dimension grows to maxrows."""
    args = ["mkdset", c, path, "--dtype", dtype,
            "--shape", ",".join(map(str, (0, *row_shape))),
            "--maxshape", ",".join(map(str, (maxrows, *row_shape)))]
    if fill is not None:
        args.append(f"--fill={fill}")
    if chunks is not None:
        args += ["--chunks", ",".join(map(str, chunks))]
    slab(*args)


def append_with_cat(src, target):
    run("sh", "-c", 'cat "$1" >> "$2"', "sh", src, target)


def dd_read(path, bs, skip, count=1):
    cp = subprocess.run(["dd", f"if={path}", f"bs={bs}", f"skip={skip}", f"count={count}",
                         "iflag=fullblock", "status=none"], capture_output=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout


def dd_append(target, payload, bs):
    """dd oflag=append conv=notrunc: one write of `payload` at the end."""
    return subprocess.run(["dd", f"of={target}", f"bs={bs}", "oflag=append", "conv=notrunc",
                           "iflag=fullblock", "status=none"],
                          input=payload, capture_output=True, timeout=60)


def export_npy(c, path, tmp_path):
    out = tmp_path / "export.npy"
    slab("export", c, path, out)
    return np.load(out)


# ------------------------------------------------------------ frame stream

@pytest.fixture
def frames(tmp_path):
    """200 different u2 frames, as an array and as one file per frame."""
    rng = np.random.default_rng(20240611)
    array = rng.integers(0, 1 << 16, (200, *FRAME), dtype="<u2")
    array[:, 0, 0] = np.arange(200)  # no two alike, whatever the generator gives
    files = []
    for k in range(len(array)):
        f = tmp_path / f"frame{k:03d}.bin"
        array[k].tofile(f)
        files.append(f)
    return array, files


def check_stream(path, expected):
    """Size by stat and ls -l, every frame by dd, nothing past the end, the
    shape attribute."""
    n = len(expected)
    assert os.stat(path).st_size == n * FRAME_BYTES
    assert ls_size(path) == n * FRAME_BYTES
    for k in range(n):
        assert dd_read(path, FRAME_BYTES, k) == expected[k].tobytes(), f"frame {k}"
    assert dd_read(path, FRAME_BYTES, n) == b""
    assert shape_xattr(path) == f"{n},256,256"


def test_stream_of_frames_appended_with_cat_then_truncated_and_grown(
        container, frames, mounter, tmp_path):
    array, files = frames
    c = container
    slab("mkdset", c, "/stream", "--dtype", "u2", "--shape", "0,256,256",
         "--maxshape", "unlimited,256,256")

    m = mounter(c)
    stream = mpath(m, "/stream")
    assert os.path.getsize(stream) == 0
    assert read_all(stream) == b""
    for k, f in enumerate(files):
        append_with_cat(f, stream)
        assert os.stat(stream).st_size == (k + 1) * FRAME_BYTES, f"after frame {k}"
    check_stream(stream, array)
    assert os.getxattr(stream, "user.slab.index") == b"extensible"
    assert int(os.getxattr(stream, "user.slab.stored")) >= 200 * FRAME_BYTES

    assert m.unmount() == 0, m.log()
    i = info(c, "/stream")
    assert i["shape"] == [200, 256, 256] and i["max_shape"] == [None, 256, 256]
    m = mounter(c)
    stream = mpath(m, "/stream")
    check_stream(stream, array)

    # 117 cuts chunk 14 (8 frames a chunk) in the middle: frames 117..119
    # stay stored in a live chunk but must read as fill once grown again.
    run("truncate", "-s", str(117 * FRAME_BYTES), stream)
    assert os.stat(stream).st_size == 117 * FRAME_BYTES
    assert ls_size(stream) == 117 * FRAME_BYTES
    assert dd_read(stream, FRAME_BYTES, 116) == array[116].tobytes()
    assert dd_read(stream, FRAME_BYTES, 117) == b""
    run("truncate", "-s", str(150 * FRAME_BYTES), stream)
    expected = array[:150].copy()
    expected[117:] = 0  # fill
    check_stream(stream, expected)

    assert m.unmount() == 0, m.log()
    i = info(c, "/stream")
    assert i["shape"] == [150, 256, 256]
    assert i["num_chunks"] == 19                # ceil(150 / 8)
    assert i["allocated_chunks"] == 15          # ceil(117 / 8): growing writes nothing
    np.testing.assert_array_equal(export_npy(c, "/stream", tmp_path), expected)

    m = mounter(c)
    stream = mpath(m, "/stream")
    check_stream(stream, expected)
    got = np.fromfile(stream, dtype="<u2").reshape(-1, *FRAME)
    np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------ partial rows

def test_partial_row_append_rounds_up_to_a_row_of_fill(container, mounter):
    c = container
    mkstream(c, "/s", "u2", (100,), fill=7, chunks=(4, 100))
    row = 200
    fill_row = np.full(100, 7, dtype="<u2").tobytes()
    m = mounter(c)
    s = mpath(m, "/s")

    # 51 bytes: 25 elements and the low byte of the 26th.
    first = bytes(range(1, 52))
    cp = dd_append(s, first, 51)
    assert cp.returncode == 0, cp.stderr
    assert os.stat(s).st_size == row
    expected = first + fill_row[51:]
    assert read_all(s) == expected

    # The next append starts a new row.
    with open(s, "ab") as f:
        f.write(b"\xee" * 10)
    expected += b"\xee" * 10 + fill_row[10:]
    assert os.stat(s).st_size == 2 * row
    assert read_all(s) == expected

    # The page holding the old end is cached now; an append through it must
    # not show the kernel's zeros past the old end.
    fd = os.open(s, os.O_RDWR | os.O_APPEND)
    try:
        assert os.pread(fd, 4096, 0) == expected
        os.write(fd, b"\x05\x06\x07")
        # While the writer has it open, the size ends where its appends end,
        # so that its next append continues the row.
        assert os.fstat(fd).st_size == 2 * row + 3
        assert os.pread(fd, 4096, 0) == expected + b"\x05\x06\x07"
        os.write(fd, b"\x08")
        assert os.stat(s).st_size == 2 * row + 4
        expected += b"\x05\x06\x07\x08" + fill_row[4:]
    finally:
        os.close(fd)
    # Closed, the row is padded with fill.
    assert os.stat(s).st_size == 3 * row
    assert read_all(s) == expected

    assert m.unmount() == 0, m.log()
    assert info(c, "/s")["shape"] == [3, 100]
    assert export(c, "/s") == expected
    m = mounter(c)
    assert os.path.getsize(mpath(m, "/s")) == 3 * row
    assert read_all(mpath(m, "/s")) == expected


def test_write_far_past_the_end_grows_by_whole_rows(container, mounter):
    c = container
    mkstream(c, "/s", "i4", (5, 3), fill=-2)  # a row is 60 bytes
    m = mounter(c)
    s = mpath(m, "/s")
    fd = os.open(s, os.O_WRONLY)
    try:
        assert os.pwrite(fd, b"\x01\x02\x03\x04", 60 * 9 + 8) == 4  # into row 9
    finally:
        os.close(fd)
    assert os.path.getsize(s) == 600
    ref = np.full((10, 5, 3), -2, dtype="<i4")
    ref[9].reshape(-1)[2] = 0x04030201
    assert read_all(s) == ref.tobytes()
    assert shape_xattr(s) == "10,5,3"
    assert m.unmount() == 0, m.log()
    assert export(c, "/s") == ref.tobytes()


def test_append_a_row_in_pieces_one_write_at_a_time(container, mounter):
    c = container
    mkstream(c, "/s", "u2", FRAME)
    rng = np.random.default_rng(5)
    rows = rng.integers(0, 256, 2 * FRAME_BYTES, dtype=np.uint8).tobytes()
    m = mounter(c)
    s = mpath(m, "/s")
    with open(s, "ab", buffering=0) as f:
        for off in range(0, FRAME_BYTES, 4096):
            assert f.write(rows[off:off + 4096]) == 4096
            # A stat between pieces (ls -l, watch) sees the bytes written so
            # far and does not move the next append to a new row.
            assert os.stat(s).st_size == off + 4096
    assert os.path.getsize(s) == FRAME_BYTES
    assert read_all(s) == rows[:FRAME_BYTES]
    # Pieces that cross pages and elements unaligned; the last is short.
    with open(s, "ab", buffering=0) as f:
        for off in range(FRAME_BYTES, 2 * FRAME_BYTES, 3001):
            piece = rows[off:min(off + 3001, 2 * FRAME_BYTES)]
            assert f.write(piece) == len(piece)
    assert os.path.getsize(s) == 2 * FRAME_BYTES
    assert read_all(s) == rows
    assert m.unmount() == 0, m.log()
    assert export(c, "/s") == rows


# ------------------------------------------------------------ limits

def test_truncate_to_a_partial_row_is_einval_and_changes_nothing(container, mounter):
    c = container
    mkstream(c, "/s", "u2", (16, 16))  # a row is 512 bytes
    payload = np.arange(3 * 256, dtype="<u2").tobytes()
    m = mounter(c)
    s = mpath(m, "/s")
    with open(s, "ab") as f:
        f.write(payload)
    assert os.path.getsize(s) == 3 * 512
    for bad in (1, 511, 513, 3 * 512 - 2, 3 * 512 + 1, 10 * 512 + 100):
        with pytest.raises(OSError) as e:
            os.truncate(s, bad)
        assert e.value.errno == errno.EINVAL, bad
        assert os.path.getsize(s) == 3 * 512
    cp = run("truncate", "-s", "+1", s, check=False)
    assert cp.returncode != 0 and "Invalid argument" in cp.stderr
    os.truncate(s, 3 * 512)  # the current size: nothing to do
    assert os.path.getsize(s) == 3 * 512
    assert read_all(s) == payload
    assert shape_xattr(s) == "3,16,16"


def test_growth_past_a_bounded_max_is_efbig(container, mounter):
    c = container
    slab("mkdset", c, "/b", "--dtype", "u1", "--shape", "2,16", "--maxshape", "10,16")
    m = mounter(c)
    b = mpath(m, "/b")
    assert os.path.getsize(b) == 32
    with pytest.raises(OSError) as e:
        os.truncate(b, 11 * 16)
    assert e.value.errno == errno.EFBIG
    cp = run("truncate", "-s", str(11 * 16), b, check=False)
    assert cp.returncode != 0 and "File too large" in cp.stderr
    fd = os.open(b, os.O_WRONLY)
    try:
        for off, n in [(160, 1), (1000, 5)]:
            with pytest.raises(OSError) as e:
                os.pwrite(fd, b"\x7f" * n, off)
            assert e.value.errno == errno.EFBIG, (off, n)
    finally:
        os.close(fd)
    assert os.path.getsize(b) == 32
    assert read_all(b) == bytes(32)

    # Up to the max is fine, one row at a time.
    rows = bytes(range(32, 160))
    with open(b, "ab", buffering=0) as f:
        for r in range(8):
            f.write(rows[16 * r:16 * r + 16])
    assert os.path.getsize(b) == 160
    cp = dd_append(b, b"z" * 16, 16)
    assert cp.returncode != 0 and "File too large" in cp.stderr.decode()
    assert os.path.getsize(b) == 160
    # A write that reaches past the maximum stores what fits (a short count).
    fd = os.open(b, os.O_WRONLY)
    try:
        assert os.pwrite(fd, b"\x7f" * 20, 150) == 10
    finally:
        os.close(fd)
    assert read_all(b)[150:] == b"\x7f" * 10
    rows = rows[:118] + b"\x7f" * 10
    assert read_all(b) == bytes(32) + rows
    assert shape_xattr(b) == "10,16"
    assert m.unmount() == 0, m.log()
    assert export(c, "/b") == bytes(32) + rows


@pytest.mark.parametrize("op", ["grow-past-max", "shrink", "o-trunc"])
def test_stream_at_its_bounded_max_still_changes_length(container, mounter, op):
    # Grown to its max shape of 10 rows, the dataset is still one whose first
    # dimension can change: past the max is EFBIG, fewer rows or O_TRUNC work
    # as they did at 9 rows.
    c = container
    slab("mkdset", c, "/b", "--dtype", "u1", "--shape", "0,16", "--maxshape", "10,16",
         "--fill", "9")
    rows = bytes(range(160))
    m = mounter(c)
    b = mpath(m, "/b")
    with open(b, "ab") as f:
        f.write(rows)
    assert os.path.getsize(b) == 160  # now at the max shape
    if op == "grow-past-max":
        with pytest.raises(OSError) as e:
            os.truncate(b, 11 * 16)
        assert e.value.errno == errno.EFBIG
        expected = rows
    elif op == "shrink":
        os.truncate(b, 5 * 16)
        assert os.path.getsize(b) == 80
        assert read_all(b) == rows[:80]
        os.truncate(b, 6 * 16)
        expected = rows[:80] + b"\x09" * 16
    else:
        run("sh", "-c", ': > "$1"', "sh", b)
        assert os.path.getsize(b) == 0
        expected = b""
    assert os.path.getsize(b) == len(expected)
    assert read_all(b) == expected
    assert m.unmount() == 0, m.log()
    assert info(c, "/b")["shape"] == [len(expected) // 16, 16]
    assert export(c, "/b") == expected


def test_only_a_later_dimension_unlimited_keeps_the_size_fixed(container, mounter):
    c = container
    slab("mkdset", c, "/col", "--dtype", "u1", "--shape", "4,4", "--maxshape", "4,unlimited",
         "--fill", "3")
    m = mounter(c)
    col = mpath(m, "/col")
    assert os.path.getsize(col) == 16
    data = bytes(range(100, 116))
    fd = os.open(col, os.O_RDWR)
    try:
        assert os.pwrite(fd, data, 0) == 16
        for off, n in [(16, 1), (64, 4)]:
            with pytest.raises(OSError) as e:
                os.pwrite(fd, b"\x01" * n, off)
            assert e.value.errno == errno.EFBIG, (off, n)
        # Reaching past the end: what fits is stored.
        assert os.pwrite(fd, b"\x01" * 8, 10) == 6
        assert os.pwrite(fd, data[10:], 10) == 6
    finally:
        os.close(fd)
    with pytest.raises(OSError) as e:
        with open(col, "ab") as f:
            f.write(b"\x01" * 4)
    assert e.value.errno == errno.EFBIG
    cp = dd_append(col, b"\x01" * 4, 4)
    assert cp.returncode != 0 and "File too large" in cp.stderr.decode()
    for bad in (4, 8, 17, 20, 32):
        with pytest.raises(OSError) as e:
            os.truncate(col, bad)
        assert e.value.errno == errno.EINVAL, bad
    assert os.path.getsize(col) == 16
    assert read_all(col) == data
    assert shape_xattr(col) == "4,4"

    # 0 resets it to the fill value, and so does O_TRUNC.
    os.truncate(col, 0)
    assert os.path.getsize(col) == 16
    assert read_all(col) == b"\x03" * 16
    with open(col, "r+b") as f:
        f.write(data)
    run("sh", "-c", ': > "$1"', "sh", col)
    assert os.path.getsize(col) == 16
    assert read_all(col) == b"\x03" * 16
    assert m.unmount() == 0, m.log()
    assert info(c, "/col")["shape"] == [4, 4]
    assert export(c, "/col") == b"\x03" * 16


def test_o_trunc_empties_a_stream(container, mounter, tmp_path):
    c = container
    mkstream(c, "/s", "u2", (16, 16), fill=1)
    rows = np.arange(4 * 256, dtype="<u2").tobytes()
    m = mounter(c)
    s = mpath(m, "/s")
    with open(s, "ab") as f:
        f.write(rows)
    assert os.path.getsize(s) == 4 * 512
    run("sh", "-c", ': > "$1"', "sh", s)
    assert os.path.getsize(s) == 0
    assert read_all(s) == b""
    assert shape_xattr(s) == "0,16,16"

    # `cat frame > stream` leaves exactly that frame; a grown row reads fill.
    src = tmp_path / "one.bin"
    src.write_bytes(rows[512:1024])
    run("sh", "-c", 'cat "$1" > "$2"', "sh", src, s)
    assert os.path.getsize(s) == 512
    assert read_all(s) == rows[512:1024]
    os.truncate(s, 1024)
    expected = rows[512:1024] + np.ones(256, dtype="<u2").tobytes()
    assert read_all(s) == expected
    assert m.unmount() == 0, m.log()
    assert info(c, "/s")["shape"] == [2, 16, 16]
    assert export(c, "/s") == expected


def test_ftruncate_grows_and_the_new_rows_take_writes(container, mounter):
    c = container
    mkstream(c, "/s", "f4", (8,), fill=0.5)  # a row is 32 bytes
    m = mounter(c)
    s = mpath(m, "/s")
    ref = np.full((6, 8), 0.5, dtype="<f4")
    with open(s, "r+b") as f:
        f.truncate(6 * 32)
        assert os.fstat(f.fileno()).st_size == 6 * 32
        f.seek(4 * 32 + 4)
        f.write(np.array([1.25, -3.0], dtype="<f4").tobytes())
    ref[4, 1:3] = [1.25, -3.0]
    assert os.path.getsize(s) == 6 * 32
    assert read_all(s) == ref.tobytes()
    assert m.unmount() == 0, m.log()
    m = mounter(c)
    assert read_all(mpath(m, "/s")) == ref.tobytes()


# ------------------------------------------------------------ numpy

def test_numpy_fromfile_and_memmap_of_a_grown_stream(container, mounter):
    c = container
    mkstream(c, "/s", "i2", (32, 16), chunks=(3, 32, 16))
    rng = np.random.default_rng(11)
    ref = rng.integers(-30000, 30000, (7, 32, 16), dtype="<i2")
    m = mounter(c)
    s = mpath(m, "/s")
    for r in range(len(ref)):
        with open(s, "ab") as f:
            f.write(ref[r].tobytes())
    got = np.fromfile(s, dtype="<i2").reshape(-1, 32, 16)
    np.testing.assert_array_equal(got, ref)

    mm = np.memmap(s, dtype="<i2", mode="r")
    assert mm.shape == (7 * 32 * 16,)
    np.testing.assert_array_equal(mm.reshape(7, 32, 16), ref)
    del mm

    # Writes through a shared mapping of the grown rows.
    mm = np.memmap(s, dtype="<i2", mode="r+", shape=(7, 32, 16))
    mm[5:7, 3, :] = -1
    mm.flush()
    del mm
    ref[5:7, 3, :] = -1
    np.testing.assert_array_equal(np.fromfile(s, dtype="<i2").reshape(-1, 32, 16), ref)
    assert m.unmount() == 0, m.log()
    assert export(c, "/s") == ref.tobytes()


def od_i4(path):
    """The file's bytes as little-endian i4, read by od(1)."""
    out = run("od", "-An", "-v", "-t", "d4", "--endian=little", path).stdout.split()
    return [int(v) for v in out]


def test_a_gap_past_the_cached_end_reads_as_fill_and_survives_a_memmap_flush(container, mounter):
    """The kernel caches a file's last page with zeros past its end. A write
    past the end that leaves a gap, and fallocate growing the file, make the
    gap the fill value in the dataset; the daemon must have the kernel drop
    that page, or od reads zeros there and a memmap flush of the page stores
    them (an exploratory tester's find)."""
    c = container
    mkstream(c, "/u", "i4", (2,), fill=-1, chunks=(4, 2))
    mkstream(c, "/v", "i4", (2,), fill=-1, chunks=(4, 2))
    m = mounter(c)
    u, v = mpath(m, "/u"), mpath(m, "/v")
    for p in (u, v):
        with open(p, "ab") as f:
            f.write(np.array([5, 6], "<i4").tobytes())
        assert od_i4(p) == [5, 6]  # the kernel now caches page 0, zeros past byte 8
    cp = subprocess.run(["dd", f"of={u}", "bs=4", "seek=7", "conv=notrunc", "status=none"],
                        input=np.array([9], "<i4").tobytes(), capture_output=True)
    assert cp.returncode == 0, cp.stderr
    assert od_i4(u) == [5, 6, -1, -1, -1, -1, -1, 9]
    mm = np.memmap(u, dtype="<i4", mode="r+")
    mm[0] = 42
    mm.flush()
    del mm
    assert od_i4(u) == [42, 6, -1, -1, -1, -1, -1, 9]
    assert run("fallocate", "-l", "32", v).returncode == 0
    assert od_i4(v) == [5, 6, -1, -1, -1, -1, -1, -1]
    assert m.unmount() == 0, m.log()
    assert export(c, "/u") == np.array([42, 6, -1, -1, -1, -1, -1, 9], "<i4").tobytes()
    assert export(c, "/v") == np.array([5, 6, -1, -1, -1, -1, -1, -1], "<i4").tobytes()
