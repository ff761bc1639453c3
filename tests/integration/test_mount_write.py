"""Writing through a real mount: dd conv=notrunc at unaligned offsets against a
reference computed with numpy, persistence across unmount and remount, EFBIG
past the end, truncate, cp over a dataset, numpy.memmap writes, and the
commits on close and on the timer (seen by `slab export` while mounted)."""
import errno
import os
import subprocess
import time

import numpy as np
import pytest

from conftest import mpath, run, slab
from mounting import container, export, make_dataset, make_empty_dataset, mounter  # noqa: F401

RNG = np.random.default_rng(777)


@pytest.fixture
def data(container):
    """Three datasets; returns (container, {path: reference uint8 array})."""
    arrays = {
        "/w/f4": (RNG.standard_normal((123, 77)).astype("<f4"), (10, 16)),
        "/w/i2": (RNG.integers(-999, 999, 1001).astype("<i2"), (64,)),
    }
    refs = {}
    for path, (array, chunks) in arrays.items():
        refs[path] = np.frombuffer(make_dataset(container, path, array, chunks),
                                   dtype=np.uint8).copy()
    make_empty_dataset(container, "/w/u1", np.uint8, (50, 60), (7, 9), fill=5)
    refs["/w/u1"] = np.full(50 * 60, 5, dtype=np.uint8)
    return container, refs


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def dd_write(target, payload, *operands):
    return subprocess.run(["dd", f"of={target}", "conv=notrunc", "iflag=fullblock",
                           "status=none", *operands],
                          input=payload, capture_output=True, timeout=60)


# (path, bs, seek, n bytes, extra dd operands): byte offset = bs * seek unless
# oflag=seek_bytes, where it is seek.
WRITES = [
    ("/w/f4", 7, 13, 35, ()),              # starts and ends inside elements
    ("/w/f4", 1, 0, 1, ()),                # first byte only
    ("/w/f4", 4096, 2, 10000, ()),         # crosses chunks, short last block
    ("/w/f4", 1000, 12347, 3333, ("oflag=seek_bytes",)),
    ("/w/f4", 5, 123 * 77 * 4 - 9, 9, ("oflag=seek_bytes",)),  # ends at the end
    ("/w/i2", 3, 1, 1999, ()),             # almost everything, odd offset
    ("/w/u1", 17, 11, 170, ()),            # into a never-written dataset
    ("/w/u1", 1, 2999, 1, ()),             # its last byte
]


def apply_writes(m, refs):
    for path, bs, seek, n, extra in WRITES:
        payload = RNG.integers(0, 256, n, dtype=np.uint8)
        off = seek if "oflag=seek_bytes" in extra else bs * seek
        assert off + n <= refs[path].size, (path, off, n)
        cp = dd_write(mpath(m, path), payload.tobytes(), f"bs={bs}", f"seek={seek}", *extra)
        assert cp.returncode == 0, cp.stderr
        refs[path][off:off + n] = payload


def test_dd_notrunc_writes_match_numpy_reference(data, mounter):
    c, refs = data
    m = mounter(c)
    apply_writes(m, refs)
    for path, ref in refs.items():
        assert read_all(mpath(m, path)) == ref.tobytes(), path
        assert os.path.getsize(mpath(m, path)) == ref.size
    # The element view agrees too.
    got = np.fromfile(mpath(m, "/w/f4"), dtype="<f4").reshape(123, 77)
    np.testing.assert_array_equal(got.view(np.uint8).ravel(), refs["/w/f4"])


def test_writes_survive_unmount_and_remount(data, mounter):
    c, refs = data
    m = mounter(c)
    apply_writes(m, refs)
    assert m.unmount() == 0, m.log()
    for path, ref in refs.items():
        assert export(c, path) == ref.tobytes(), path
    m2 = mounter(c)
    for path, ref in refs.items():
        assert read_all(mpath(m2, path)) == ref.tobytes(), path


def test_close_after_write_commits(data, mounter):
    c, refs = data
    m = mounter(c, "-o", "commit_interval=0")
    payload = bytes(range(200))
    assert dd_write(mpath(m, "/w/i2"), payload, "bs=1", "seek=333").returncode == 0
    refs["/w/i2"][333:533] = np.frombuffer(payload, np.uint8)
    # Still mounted: a read-only open sees the last commit, made at close.
    assert export(c, "/w/i2") == refs["/w/i2"].tobytes()


def test_fsync_commits_while_the_file_stays_open(data, mounter):
    c, refs = data
    m = mounter(c, "-o", "commit_interval=0")
    fd = os.open(mpath(m, "/w/u1"), os.O_WRONLY)
    try:
        os.pwrite(fd, b"\x01\x02\x03", 100)
        os.fsync(fd)
        refs["/w/u1"][100:103] = [1, 2, 3]
        assert export(c, "/w/u1") == refs["/w/u1"].tobytes()
    finally:
        os.close(fd)


def test_periodic_commit_while_dirty(data, mounter):
    c, refs = data
    m = mounter(c, "-o", "commit_interval=0.5")
    fd = os.open(mpath(m, "/w/u1"), os.O_WRONLY)
    try:
        os.pwrite(fd, b"\xaa" * 10, 2000)
        refs["/w/u1"][2000:2010] = 0xAA
        deadline = time.monotonic() + 15
        while export(c, "/w/u1") != refs["/w/u1"].tobytes():
            assert time.monotonic() < deadline, "no periodic commit within 15 s"
            time.sleep(0.25)
    finally:
        os.close(fd)


def test_write_past_the_end_stores_what_fits_then_is_efbig(data, mounter):
    """As write(2) at a file size limit: a write that starts inside a fixed
    dataset and reaches past its end stores the bytes that fit and returns
    their count; one that starts at or past the end is EFBIG and changes
    nothing."""
    c, refs = data
    m = mounter(c)
    path = mpath(m, "/w/i2")
    size = refs["/w/i2"].size
    expect = bytearray(refs["/w/i2"].tobytes())
    fd = os.open(path, os.O_WRONLY)
    try:
        for off, n in [(size, 1), (size + 4096, 100)]:
            with pytest.raises(OSError) as e:
                os.pwrite(fd, b"\x7f" * n, off)
            assert e.value.errno == errno.EFBIG, (off, n)
        assert os.pwrite(fd, b"\x7f" * 10, size - 5) == 5
        expect[size - 5:] = b"\x7f" * 5
        assert os.pwrite(fd, b"\x7e" * (size + 1), 0) == size
        expect[:] = b"\x7e" * size
    finally:
        os.close(fd)
    # dd stores what fits and fails on the rest.
    start = size // 512 * 512
    cp = dd_write(path, b"z" * 512, "bs=512", f"seek={size // 512}")
    assert cp.returncode != 0
    assert "File too large" in cp.stderr.decode()
    expect[start:] = b"z" * (size - start)
    assert os.path.getsize(path) == size
    assert read_all(path) == bytes(expect)
    assert m.unmount() == 0
    assert export(c, "/w/i2") == bytes(expect)


def test_truncate_to_zero_resets_to_fill(data, mounter):
    c, refs = data
    m = mounter(c)
    path = mpath(m, "/w/f4")
    size = refs["/w/f4"].size
    assert read_all(path) == refs["/w/f4"].tobytes()  # now in the page cache
    os.truncate(path, 0)
    assert os.path.getsize(path) == size  # the shape is fixed
    assert read_all(path) == bytes(size)  # fill 0

    # Through an open descriptor whose pages are cached: ftruncate.
    path = mpath(m, "/w/u1")
    with open(path, "r+b") as f:
        f.write(b"\x09" * 3000)
        f.flush()
        assert os.pread(f.fileno(), 3000, 0) == b"\x09" * 3000
        f.truncate(0)
        assert os.pread(f.fileno(), 3000, 0) == b"\x05" * 3000  # fill 5

    # truncate(1) and the shell's O_TRUNC.
    run("truncate", "-s", "0", mpath(m, "/w/i2"))
    assert read_all(mpath(m, "/w/i2")) == bytes(2002)
    dd_write(mpath(m, "/w/i2"), b"\x11" * 10, "bs=10")
    run("sh", "-c", f": > '{mpath(m, '/w/i2')}'")
    assert read_all(mpath(m, "/w/i2")) == bytes(2002)

    assert m.unmount() == 0
    assert export(c, "/w/f4") == bytes(size)
    assert export(c, "/w/u1") == b"\x05" * 3000


@pytest.mark.parametrize("mode", [[], ["-s"]], ids=["multi-threaded", "single-threaded"])
def test_truncate_with_a_dirty_shared_mapping_does_not_hang(data, mounter, mode):
    c, refs = data
    m = mounter(c, *mode)
    path = mpath(m, "/w/u1")
    mm = np.memmap(path, dtype=np.uint8, mode="r+", shape=(3000,))
    try:
        mm[:100] = 7  # dirty pages, not written back yet
        cp = subprocess.run(["timeout", "20", "truncate", "-s", "0", path], capture_output=True)
        assert cp.returncode == 0, cp  # 124 would mean it hung
    finally:
        del mm
    # Like any truncate, it discards what the mapping had not written back.
    assert read_all(path) == b"\x05" * 3000


def test_truncate_to_another_size_is_einval(data, mounter):
    c, refs = data
    m = mounter(c)
    path = mpath(m, "/w/f4")
    size = refs["/w/f4"].size
    for bad in (1, 5, size - 1, size + 1, 10 * size):
        with pytest.raises(OSError) as e:
            os.truncate(path, bad)
        assert e.value.errno == errno.EINVAL, bad
    os.truncate(path, size)  # the current size: nothing to do
    assert read_all(path) == refs["/w/f4"].tobytes()
    cp = run("truncate", "-s", "+1", path, check=False)
    assert cp.returncode != 0 and "Invalid argument" in cp.stderr


def test_cp_over_a_dataset(data, mounter, tmp_path):
    c, refs = data
    m = mounter(c)
    src = tmp_path / "src.bin"
    payload = RNG.integers(0, 256, refs["/w/f4"].size, dtype=np.uint8).tobytes()
    src.write_bytes(payload)
    run("cp", src, mpath(m, "/w/f4"))
    assert read_all(mpath(m, "/w/f4")) == payload
    run("cmp", src, mpath(m, "/w/f4"))

    # A shorter file: the rest is the fill value (cp truncated first).
    src.write_bytes(b"\x42" * 1000)
    run("cp", src, mpath(m, "/w/u1"))
    assert read_all(mpath(m, "/w/u1")) == b"\x42" * 1000 + b"\x05" * 2000

    # A longer file does not fit.
    src.write_bytes(b"\x01" * 2003)
    cp = run("cp", src, mpath(m, "/w/i2"), check=False)
    assert cp.returncode != 0 and "File too large" in cp.stderr

    assert m.unmount() == 0
    assert export(c, "/w/f4") == payload


def test_numpy_memmap_writes(data, mounter):
    c, refs = data
    m = mounter(c)
    ref = refs["/w/f4"].view("<f4").reshape(123, 77)
    mm = np.memmap(mpath(m, "/w/f4"), dtype="<f4", mode="r+", shape=(123, 77))
    mm[10:20, 5:50] = 3.25
    mm[-1, -1] = -1.0
    mm.flush()
    del mm
    ref[10:20, 5:50] = 3.25
    ref[-1, -1] = -1.0
    got = np.fromfile(mpath(m, "/w/f4"), dtype="<f4").reshape(123, 77)
    np.testing.assert_array_equal(got, ref)
    assert m.unmount() == 0
    assert export(c, "/w/f4") == refs["/w/f4"].tobytes()


def test_writer_sees_its_writes_through_read_and_mmap(data, mounter):
    c, refs = data
    m = mounter(c)
    path = mpath(m, "/w/i2")
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, b"\x01\x02\x03\x04\x05", 7)
        assert os.pread(fd, 5, 7) == b"\x01\x02\x03\x04\x05"
        mm = np.memmap(path, dtype=np.uint8, mode="r", shape=(refs["/w/i2"].size,))
        assert mm[7:12].tobytes() == b"\x01\x02\x03\x04\x05"
        del mm
    finally:
        os.close(fd)
