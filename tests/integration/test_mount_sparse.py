"""Sparse datasets through a real mount, with the Unix sparse-file tools:
lseek SEEK_DATA/SEEK_HOLE walked from Python and compared with `slab defined
--json` (sparse: undefined elements are holes) and with `slab chunks --json`
(dense: chunks not stored are holes); `cp --sparse=always` and `tar -S` copy
only the data regions and give the same bytes, and `rsync -S` makes a
sparse copy; `fallocate --punch-hole`
erases the elements wholly inside the range (user.slab.defined drops by
exactly that many, reads give the fill value, a dense dataset frees whole
chunks and fills the rest); `fallocate --zero-range` defines elements with
the fill value; a dataset whose fill value is not zero has no holes; plain
fallocate changes nothing; a read-only mount refuses punch-hole (EROFS).
Datasets are made with `slab mkdset --sparse` and written through the
mount."""
import ctypes
import errno
import json
import os
import subprocess

import numpy as np
import pytest

from conftest import mpath, run, slab
from mounting import container, make_dataset, mounter  # noqa: F401

RNG = np.random.default_rng(5005)

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_ZERO_RANGE = 0x10

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def fallocate(fd, mode, offset, length):
    """fallocate(2); raises OSError with the errno."""
    if _libc.fallocate(fd, mode, offset, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def mkdset(c, path, dtype, shape, chunks, *extra):
    slab("mkdset", "-p", c, path, "--dtype", dtype, "--shape", ",".join(map(str, shape)),
         "--chunks", ",".join(map(str, chunks)), *extra)


def defined(c, path, *slice_):
    """`slab defined --json` (read-only: works while the mount holds the
    container, and shows its last commit)."""
    return json.loads(slab("defined", "--json", c, path, *slice_).stdout)


def defined_xattr(path):
    return int(os.getxattr(path, "user.slab.defined"))


def du(path, *flags):
    return int(run("du", "-B1", *flags, path).stdout.split()[0])


def data_regions(path):
    """The data regions of a file as [(start, end)] byte ranges, walked with
    SEEK_DATA and SEEK_HOLE until ENXIO."""
    regions = []
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while True:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                assert e.errno == errno.ENXIO, e
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            assert end > start
            regions.append((start, end))
            pos = end
    finally:
        os.close(fd)
    return regions


def mask_regions(mask, item):
    """The byte ranges of the runs of True in a C-order element mask."""
    flat = np.concatenate(([False], mask.ravel(), [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(flat))
    return [(int(a) * item, int(b) * item) for a, b in zip(edges[::2], edges[1::2])]


def block_regions(byte_regions, size, block=4096):
    """Byte regions rounded out to whole 4 KiB blocks and merged, as
    SEEK_DATA and SEEK_HOLE report them (fusefs/seek.h)."""
    out = []
    for a, b in byte_regions:
        a = a // block * block
        b = min(-(-b // block) * block, size)
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def boxes_mask(shape, boxes):
    """An element mask with every box of `slab defined --json` set."""
    mask = np.zeros(shape, dtype=bool)
    for b in boxes:
        mask[tuple(slice(s, s + n) for s, n in zip(b["start"], b["count"]))] = True
    return mask


def write_box(fd, shape, array, start):
    """Writes `array` (same rank as the dataset) at `start` through the mount,
    one pwrite per contiguous run of its last dimension."""
    item = array.dtype.itemsize
    strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    for idx in np.ndindex(*array.shape[:-1]):
        pos = sum((s + i) * st for s, i, st in zip(start, idx, strides)) + start[-1]
        row = np.ascontiguousarray(array[idx]).tobytes()
        assert os.pwrite(fd, row, pos * item) == len(row)


# ------------------------------------------------------------ a sparse frame

SHAPE = (256, 1024)   # u2: 512 KiB, rows of 2 KiB
CHUNKS = (32, 128)


@pytest.fixture
def frame(container):
    """A sparse u2 dataset with fill 0 and a few defined regions: whole rows
    (which merge into one byte range), a rectangle (one range per row), a
    few scattered elements and the last element. Returns (container, the
    reference array, the defined mask)."""
    mkdset(container, "/s/frame", "u2", SHAPE, CHUNKS, "--sparse")
    ref = np.zeros(SHAPE, dtype="<u2")
    mask = np.zeros(SHAPE, dtype=bool)
    regions = [
        ((10, 0), RNG.integers(1, 60000, (6, SHAPE[1]))),    # rows 10..15 whole
        ((100, 300), RNG.integers(1, 60000, (20, 200))),     # a rectangle across chunks
        ((200, 5), RNG.integers(1, 60000, (1, 1))),
        ((200, 700), RNG.integers(1, 60000, (1, 3))),
        ((255, 1023), RNG.integers(1, 60000, (1, 1))),       # the last element
    ]
    return container, ref, mask, regions


def fill_frame(m, ref, mask, regions):
    with open(mpath(m, "/s/frame"), "r+b") as f:
        for (r, c), values in regions:
            values = values.astype("<u2")
            write_box(f.fileno(), SHAPE, values, (r, c))
            ref[r:r + values.shape[0], c:c + values.shape[1]] = values
            mask[r:r + values.shape[0], c:c + values.shape[1]] = True


def test_seek_walk_matches_slab_defined(frame, mounter):
    c, ref, mask, regions = frame
    m = mounter(c)
    fill_frame(m, ref, mask, regions)  # the close commits
    ds = mpath(m, "/s/frame")
    out = defined(c, "/s/frame")
    assert out["elements"] == int(mask.sum()) == defined_xattr(ds)
    expected = mask_regions(boxes_mask(SHAPE, out["boxes"]), 2)
    assert expected == mask_regions(mask, 2)
    walked = data_regions(ds)
    size = SHAPE[0] * SHAPE[1] * 2
    assert walked == block_regions(expected, size)
    # Rows 10..15 are one region (4 KiB aligned); the rectangle's rows lie
    # closer than 4 KiB apart, so they make one region too, and so do the
    # two runs in row 200; the last element is the fourth.
    assert (10 * 2048, 16 * 2048) in walked
    assert len(walked) == 4
    assert all(a % 4096 == 0 and (b % 4096 == 0 or b == size) for a, b in walked)
    with open(ds, "rb") as f:
        assert f.read() == ref.tobytes()


def test_seek_data_past_the_last_data_is_enxio(frame, mounter):
    c, ref, mask, regions = frame
    # Without the last element: the end of the file is a hole.
    regions = regions[:-1]
    m = mounter(c)
    fill_frame(m, ref, mask, regions)
    size = SHAPE[0] * SHAPE[1] * 2
    last_end = (200 * 1024 + 703) * 2
    hole = -(-last_end // 4096) * 4096  # data is reported in whole 4 KiB blocks
    fd = os.open(mpath(m, "/s/frame"), os.O_RDONLY)
    try:
        assert os.lseek(fd, last_end - 1, os.SEEK_DATA) == last_end - 1
        assert os.lseek(fd, last_end, os.SEEK_DATA) == last_end  # same block
        assert os.lseek(fd, last_end - 1, os.SEEK_HOLE) == hole
        for off in (hole, hole + 1, size - 1, size, size + 4096):
            with pytest.raises(OSError) as e:
                os.lseek(fd, off, os.SEEK_DATA)
            assert e.value.errno == errno.ENXIO, off
        # SEEK_HOLE inside the file finds the hole at once; at the end, ENXIO.
        assert os.lseek(fd, hole, os.SEEK_HOLE) == hole
        assert os.lseek(fd, hole + 5, os.SEEK_HOLE) == hole + 5
        for off in (size, size + 1):
            with pytest.raises(OSError) as e:
                os.lseek(fd, off, os.SEEK_HOLE)
            assert e.value.errno == errno.ENXIO
        # An offset inside an element of data is data itself.
        assert os.lseek(fd, 10 * 2048 + 1, os.SEEK_DATA) == 10 * 2048 + 1
        # The kernel keeps SEEK_SET/CUR/END.
        assert os.lseek(fd, 0, os.SEEK_END) == size
        assert os.lseek(fd, 7, os.SEEK_SET) == 7
    finally:
        os.close(fd)


def test_seek_sees_writes_and_erases_at_once(container, mounter):
    mkdset(container, "/s/v", "f8", (100000,), (4096,), "--sparse")
    m = mounter(container)
    fd = os.open(mpath(m, "/s/v"), os.O_RDWR)
    try:
        with pytest.raises(OSError) as e:
            os.lseek(fd, 0, os.SEEK_DATA)
        assert e.value.errno == errno.ENXIO
        assert os.lseek(fd, 0, os.SEEK_HOLE) == 0
        os.pwrite(fd, np.arange(10, dtype="<f8").tobytes(), 50000 * 8)  # not committed yet
        # Bytes 400000..400080, in the 4 KiB block from 397312 to 401408.
        assert os.lseek(fd, 0, os.SEEK_DATA) == 397312
        assert os.lseek(fd, 50000 * 8, os.SEEK_HOLE) == 401408
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 50000 * 8, 5 * 8)
        assert os.lseek(fd, 0, os.SEEK_DATA) == 397312
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 50005 * 8, 5 * 8)
        with pytest.raises(OSError) as e:
            os.lseek(fd, 0, os.SEEK_DATA)
        assert e.value.errno == errno.ENXIO
        assert defined_xattr(mpath(m, "/s/v")) == 0
    finally:
        os.close(fd)


# ------------------------------------------------------------ copying

def test_cp_sparse_always_copies_only_the_data(frame, mounter, tmp_path):
    c, ref, mask, regions = frame
    m = mounter(c)
    fill_frame(m, ref, mask, regions)
    ds = mpath(m, "/s/frame")
    copy = tmp_path / "frame.bin"
    run("cp", "--sparse=always", ds, copy)
    assert run("cmp", ds, copy).returncode == 0
    assert copy.read_bytes() == ref.tobytes()
    apparent = SHAPE[0] * SHAPE[1] * 2
    assert du(copy, "--apparent-size") == apparent
    # 12 KiB of rows, 20 rows of the rectangle in a block each, and three
    # blocks for the scattered elements: far below the 512 KiB.
    assert du(copy) <= apparent // 4, du(copy)
    # The source is sparse too: du shows the stored chunks only.
    assert du(ds) < apparent // 2


def test_tar_sparse_archives_only_the_data(frame, mounter, tmp_path):
    c, ref, mask, regions = frame
    m = mounter(c)
    fill_frame(m, ref, mask, regions)
    archive = tmp_path / "frame.tar"
    run("tar", "-S", "-C", mpath(m, "/s"), "-cf", archive, "frame")
    assert archive.stat().st_size < SHAPE[0] * SHAPE[1] * 2 // 4
    out = tmp_path / "x"
    out.mkdir()
    run("tar", "-C", out, "-xf", archive)
    assert (out / "frame").read_bytes() == ref.tobytes()


def test_rsync_sparse_makes_a_sparse_copy(frame, mounter, tmp_path):
    # rsync -S reads every byte and turns runs of zeros into holes: the
    # undefined elements read as the fill value 0.
    c, ref, mask, regions = frame
    m = mounter(c)
    fill_frame(m, ref, mask, regions)
    copy = tmp_path / "frame.bin"
    run("rsync", "-S", mpath(m, "/s/frame"), copy)
    assert copy.read_bytes() == ref.tobytes()
    assert du(copy) <= SHAPE[0] * SHAPE[1] * 2 // 4, du(copy)


def test_nonzero_fill_has_no_holes_so_copies_keep_it(container, mounter, tmp_path):
    """A hole reads as zeros wherever a tool recreates it: a dataset whose
    fill value is not zero is all data to lseek."""
    mkdset(container, "/s/nan", "f4", (300, 400), (100, 100), "--sparse", "--fill", "nan")
    m = mounter(container)
    ds = mpath(m, "/s/nan")
    with open(ds, "r+b") as f:
        f.seek(1000 * 4)
        f.write(np.ones(10, dtype="<f4").tobytes())
    size = 300 * 400 * 4
    assert data_regions(ds) == [(0, size)]
    copy = tmp_path / "nan.bin"
    run("cp", "--sparse=always", ds, copy)
    got = np.fromfile(copy, dtype="<f4")
    assert np.isnan(got[:1000]).all() and (got[1000:1010] == 1).all() and np.isnan(got[1010:]).all()


# ------------------------------------------------------------ dense datasets

def test_seek_on_a_dense_dataset_finds_the_chunks_not_stored(container, mounter):
    shape, chunks = (300, 400), (100, 100)
    mkdset(container, "/d/grid", "f4", shape, chunks)
    m = mounter(container)
    ds = mpath(m, "/d/grid")
    with open(ds, "r+b") as f:
        # One element stores the whole chunk (0, 1); a write of rows 200..299
        # stores the chunk row (2, *).
        f.seek((5 * 400 + 150) * 4)
        f.write(np.float32(1).tobytes())
        f.seek(200 * 400 * 4)
        f.write(np.ones((100, 400), dtype="<f4").tobytes())
    stored = json.loads(slab("chunks", container, "/d/grid", "--json").stdout)
    coords = sorted(tuple(ch["coords"]) for ch in stored)
    assert coords == [(0, 1), (2, 0), (2, 1), (2, 2), (2, 3)]
    mask = np.zeros(shape, dtype=bool)
    for (i, j) in coords:
        mask[i * 100:(i + 1) * 100, j * 100:(j + 1) * 100] = True
    walked = data_regions(ds)
    size = 300 * 1600
    assert walked == block_regions(mask_regions(mask, 4), size)
    # The rows of chunk (0, 1) lie closer than 4 KiB: one region; then rows 200..299.
    assert walked == [(0, 159744), (319488, size)]
    # slab defined answers the same for a dense dataset.
    assert mask_regions(boxes_mask(shape, defined(container, "/d/grid")["boxes"]), 4) == mask_regions(mask, 4)


def test_punch_hole_on_a_dense_dataset_frees_whole_chunks_and_fills_the_rest(container, mounter):
    shape, chunks = (400, 500), (100, 100)
    array = RNG.standard_normal(shape).astype("<f4")
    make_dataset(container, "/d/full", array, chunks, fill=2.5)
    m = mounter(container)
    ds = mpath(m, "/d/full")
    stored_before = int(os.getxattr(ds, "user.slab.stored"))
    du_before = du(ds)
    assert stored_before == 20 * 100 * 100 * 4
    # Elements (100, 100) up to (300, 100): chunks (1, 1..4) and (2, 0..4)
    # lie wholly inside; (1, 0) and (3, 0) only in part.
    start, end = (100 * 500 + 100) * 4, (300 * 500 + 100) * 4
    with open(ds, "rb") as f:
        f.read()  # the kernel caches every page
    run("fallocate", "--punch-hole", "--offset", str(start), "--length", str(end - start), ds)
    expected = array.copy().ravel()
    expected[start // 4:end // 4] = 2.5
    with open(ds, "rb") as f:
        assert np.array_equal(np.frombuffer(f.read(), dtype="<f4"), expected)
        os.fsync(f.fileno())
    assert int(os.getxattr(ds, "user.slab.stored")) == stored_before - 9 * 100 * 100 * 4
    assert du(ds) < du_before - 8 * 100 * 100 * 4
    stored = json.loads(slab("chunks", container, "/d/full", "--json").stdout)
    coords = {tuple(ch["coords"]) for ch in stored}
    assert (1, 0) in coords and (3, 0) in coords and (1, 1) not in coords and (2, 4) not in coords
    assert len(coords) == 11


# ------------------------------------------------------------ punch and zero

def test_punch_hole_erases_whole_elements_and_defined_drops_exactly(container, mounter):
    shape = (64, 256)
    mkdset(container, "/s/i4", "i4", shape, (16, 64), "--sparse", "--fill", "-1")
    values = RNG.integers(0, 1 << 30, shape).astype("<i4")
    m = mounter(container)
    ds = mpath(m, "/s/i4")
    with open(ds, "r+b") as f:
        f.write(values[:40].tobytes())  # rows 0..39 defined
    assert defined_xattr(ds) == 40 * 256
    with open(ds, "rb") as f:
        assert f.read(40 * 1024) == values[:40].tobytes()  # cached by the kernel
    # Bytes [4002, 16002): element 1000 and element 4000 are cut and stay.
    run("fallocate", "--punch-hole", "--offset", "4002", "--length", "12000", ds)
    assert defined_xattr(ds) == 40 * 256 - 2999
    expected = values.copy().ravel()
    expected[40 * 256:] = -1
    expected[1001:4000] = -1
    with open(ds, "rb") as f:
        got = np.frombuffer(f.read(), dtype="<i4")
    assert np.array_equal(got, expected)
    # The engine agrees after a remount.
    assert m.unmount() == 0
    out = defined(container, "/s/i4")
    assert out["elements"] == 40 * 256 - 2999
    mask = boxes_mask(shape, out["boxes"]).ravel()
    assert mask[:1001].all() and not mask[1001:4000].any() and mask[4000:40 * 256].all()
    m = mounter(container)
    with open(mpath(m, "/s/i4"), "rb") as f:
        assert np.array_equal(np.frombuffer(f.read(), dtype="<i4"), expected)


def test_punch_hole_frees_the_chunks_of_a_sparse_dataset(container, mounter):
    mkdset(container, "/s/u1", "u1", (1 << 20,), (1 << 16,), "--sparse")
    m = mounter(container)
    ds = mpath(m, "/s/u1")
    with open(ds, "r+b") as f:
        f.write(b"\x05" * (1 << 20))
    assert du(ds) >= 1 << 20
    run("fallocate", "--punch-hole", "--offset", str(1 << 16), "--length", str(6 << 16), ds)
    with open(ds, "rb") as f:
        os.fsync(f.fileno())
    assert du(ds) <= (1 << 20) - (6 << 16) + 4096
    assert defined_xattr(ds) == (1 << 20) - (6 << 16)
    assert data_regions(ds) == [(0, 1 << 16), (7 << 16, 1 << 20)]


def test_zero_range_defines_the_elements_with_the_fill_value(container, mounter):
    mkdset(container, "/s/z", "u2", (4096,), (512,), "--sparse", "--fill", "5")
    m = mounter(container)
    ds = mpath(m, "/s/z")
    with open(ds, "r+b") as f:
        f.write(np.full(100, 9, dtype="<u2").tobytes())  # elements 0..99
    assert defined_xattr(ds) == 100
    # Bytes [101, 401): elements 51..199 whole; 50 is cut and stays 9.
    run("fallocate", "--zero-range", "--keep-size", "--offset", "101", "--length", "300", ds)
    assert defined_xattr(ds) == 200
    expected = np.full(4096, 5, dtype="<u2")
    expected[:51] = 9
    with open(ds, "rb") as f:
        assert np.array_equal(np.frombuffer(f.read(), dtype="<u2"), expected)
    with open(ds, "rb") as f:
        os.fsync(f.fileno())
    assert defined(container, "/s/z")["boxes"] == [{"start": [0], "count": [200]}]
    # Without --keep-size but inside the file: the same.
    run("fallocate", "--zero-range", "--offset", "1000", "--length", "200", ds)
    assert defined_xattr(ds) == 300
    assert os.path.getsize(ds) == 8192


def test_plain_fallocate_inside_the_file_changes_nothing(container, mounter):
    mkdset(container, "/s/p", "u2", (4096,), (512,), "--sparse")
    m = mounter(container)
    ds = mpath(m, "/s/p")
    with open(ds, "r+b") as f:
        f.write(b"\x01\x00" * 10)
    before = open(ds, "rb").read()
    run("fallocate", "--offset", "0", "--length", "8192", ds)
    run("fallocate", "--keep-size", "--offset", "4096", "--length", "100000", ds)
    assert open(ds, "rb").read() == before
    assert defined_xattr(ds) == 10
    assert os.path.getsize(ds) == 8192
    # A fixed dataset cannot grow: EFBIG (not EOPNOTSUPP, which makes
    # glibc's posix_fallocate write a byte into every 4 KiB block).
    cp = run("fallocate", "--offset", "8192", "--length", "4096", ds, check=False)
    assert cp.returncode != 0 and "File too large" in cp.stderr
    fd = os.open(ds, os.O_RDWR)
    try:
        with pytest.raises(OSError) as e:
            os.posix_fallocate(fd, 8192, 4096)
        assert e.value.errno == errno.EFBIG
    finally:
        os.close(fd)
    assert os.path.getsize(ds) == 8192
    assert defined_xattr(ds) == 10


def test_posix_fallocate_grows_a_growable_dataset_without_writing(container, mounter):
    # The dataset grows by whole rows, as for a write past the end, and
    # nothing is stored or defined: the new rows read as the fill value.
    mkdset(container, "/s/rows", "u2", (4, 1000), (2, 1000), "--sparse",
           "--maxshape", "unlimited,1000")
    m = mounter(container)
    ds = mpath(m, "/s/rows")
    fd = os.open(ds, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 8000, 5000)
    finally:
        os.close(fd)
    assert os.path.getsize(ds) == 7 * 2000
    with open(ds, "rb") as f:
        assert f.read() == bytes(7 * 2000)
    assert defined_xattr(ds) == 0
    assert os.getxattr(ds, "user.slab.stored") == b"0"


def test_other_fallocate_modes_are_not_supported(container, mounter):
    mkdset(container, "/s/o", "u1", (4096,), (512,), "--sparse")
    m = mounter(container)
    fd = os.open(mpath(m, "/s/o"), os.O_RDWR)
    try:
        for mode in (0x08, 0x20, 0x40):  # collapse, insert, unshare
            with pytest.raises(OSError) as e:
                fallocate(fd, mode, 0, 512)
            assert e.value.errno in (errno.EOPNOTSUPP, errno.EINVAL), mode
    finally:
        os.close(fd)


def test_a_read_only_mount_refuses_punch_hole(frame, mounter):
    c, ref, mask, regions = frame
    m = mounter(c)
    fill_frame(m, ref, mask, regions)
    assert m.unmount() == 0
    m = mounter(c, "-o", "ro")
    ds = mpath(m, "/s/frame")
    cp = run("fallocate", "--punch-hole", "--offset", "0", "--length", "65536", ds, check=False)
    assert cp.returncode != 0 and "Read-only file system" in cp.stderr, cp.stderr
    with pytest.raises(OSError) as e:
        os.open(ds, os.O_RDWR)
    assert e.value.errno == errno.EROFS
    # Seeking works on a read-only mount.
    assert data_regions(ds)[0] == (10 * 2048, 16 * 2048)
    assert defined_xattr(ds) == int(mask.sum())
    with open(ds, "rb") as f:
        assert f.read() == ref.tobytes()
