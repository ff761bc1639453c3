"""Reading datasets through a real mount: sizes in ls -l and stat, cat, dd,
od, cmp, md5sum, numpy.fromfile and numpy.memmap, many readers at once.
Every expectation is the array the test built with numpy, and `slab export`
must agree with it too."""
import concurrent.futures
import hashlib
import os
import random
import stat
import subprocess

import numpy as np
import pytest

from conftest import mpath, run, slab
from mounting import export, make_dataset, make_empty_dataset, mounted, mounter  # noqa: F401

RNG = np.random.default_rng(20240601)

# path -> (array, chunks, fill)
DATASETS = {
    "/a/ds": (RNG.standard_normal((200, 300)).astype("<f4"), (64, 64), None),
    "/a/b/small": (RNG.integers(-30000, 30000, (37, 53)).astype("<i2"), (8, 16), None),
    "/bytes": (RNG.integers(0, 256, 1000).astype("u1"), (77,), None),
    "/cube": (RNG.standard_normal((5, 7, 11)), (2, 3, 4), None),
    "/big": (RNG.standard_normal((1024, 1024)).astype("<f4"), (256, 256), None),
}
EMPTY = ("/empty", np.dtype("<i4"), (100, 100), (32, 32), -7)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """A container with the datasets above; returns (container, {path: bytes})."""
    c = tmp_path_factory.mktemp("read") / "c.slab"
    slab("create", c)
    expected = {}
    for path, (array, chunks, fill) in DATASETS.items():
        expected[path] = make_dataset(c, path, array, chunks, fill)
    path, dtype, shape, chunks, fill = EMPTY
    make_empty_dataset(c, path, dtype, shape, chunks, fill)
    expected[path] = np.full(shape, fill, dtype).tobytes()
    return c, expected


@pytest.fixture(scope="module")
def mnt(sample):
    with mounted(sample[0]) as m:
        yield m


def read_cmd(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, check=True,
                          timeout=120).stdout


def test_export_agrees_with_the_reference(sample):
    c, expected = sample
    for path, data in expected.items():
        assert export(c, path) == data, path


def test_sizes_in_stat(mnt, sample):
    _, expected = sample
    for path, data in expected.items():
        st = os.stat(mpath(mnt, path))
        assert stat.S_ISREG(st.st_mode), path
        assert st.st_size == len(data), path
        assert st.st_ino > 1
        assert st.st_uid == os.getuid()
    for group in ("", "/a", "/a/b"):
        st = os.stat(mpath(mnt, group) or str(mnt.path))
        assert stat.S_ISDIR(st.st_mode)
    assert os.stat(mnt.path).st_ino == 1


def test_st_blocks_count_stored_bytes(mnt, sample):
    assert os.stat(mpath(mnt, "/empty")).st_blocks == 0
    assert os.stat(mpath(mnt, "/big")).st_blocks * 512 >= 1024 * 1024 * 4


def test_sizes_in_ls_l(mnt, sample):
    _, expected = sample
    out = run("ls", "-l", mpath(mnt, "/a")).stdout
    lines = {line.split()[-1]: line.split() for line in out.splitlines()[1:]}
    assert set(lines) == {"b", "ds"}
    assert lines["ds"][0] == "-rw-r--r--"
    assert int(lines["ds"][4]) == len(expected["/a/ds"])
    assert lines["b"][0].startswith("d")
    out = run("ls", "-ln", str(mnt.path)).stdout
    names = [line.split()[-1] for line in out.splitlines()[1:]]
    assert names == sorted(["a", "big", "bytes", "cube", "empty"])


def test_cat_equals_export(mnt, sample):
    _, expected = sample
    for path, data in expected.items():
        assert read_cmd("cat", mpath(mnt, path)) == data, path


@pytest.mark.parametrize("bs,skip,count", [
    (1, 0, 10),
    (7, 13, 100),
    (512, 1, 3),
    (4096, 3, 5),
    (4096, 58, None),        # runs off the end: a short last block
    (65536, 0, None),
    ("1M", 0, None),
    (1000, 239, 5),          # starts 1000 bytes before the end of /a/ds
    (3, 79999, 2),           # the last 3 bytes exactly, then nothing
])
def test_dd_reads_any_block_size_and_offset(mnt, sample, bs, skip, count):
    _, expected = sample
    data = expected["/a/ds"]
    args = ["dd", f"if={mpath(mnt, '/a/ds')}", f"bs={bs}", f"skip={skip}", "status=none"]
    if count is not None:
        args.append(f"count={count}")
    got = read_cmd(*args)
    nbs = 1 << 20 if bs == "1M" else bs
    start = nbs * skip
    end = len(data) if count is None else min(len(data), start + nbs * count)
    assert got == data[start:end]


@pytest.mark.parametrize("skip,count", [(1, 1), (12345, 6789), (239999, 1), (3, 240000)])
def test_dd_reads_unaligned_byte_ranges(mnt, sample, skip, count):
    _, expected = sample
    for path in ("/a/ds", "/a/b/small", "/cube", "/bytes"):
        data = expected[path]
        got = read_cmd("dd", f"if={mpath(mnt, path)}", "bs=4096", f"skip={skip}",
                       f"count={count}", "iflag=skip_bytes,count_bytes", "status=none")
        assert got == data[skip:skip + count], path


def test_od_matches_od_of_the_reference(mnt, sample, tmp_path):
    _, expected = sample
    ref = tmp_path / "ref.bin"
    ref.write_bytes(expected["/a/b/small"])
    args = ["-A", "d", "-t", "d2", "-j", "1001", "-N", "333"]
    assert read_cmd("od", *args, mpath(mnt, "/a/b/small")) == read_cmd("od", *args, ref)
    ref.write_bytes(expected["/a/ds"])
    args = ["-A", "x", "-t", "f4", "-N", "4096"]
    assert read_cmd("od", *args, mpath(mnt, "/a/ds")) == read_cmd("od", *args, ref)


def test_cmp_and_md5sum(mnt, sample, tmp_path):
    _, expected = sample
    for path, data in expected.items():
        ref = tmp_path / "ref.bin"
        ref.write_bytes(data)
        run("cmp", ref, mpath(mnt, path))
        out = run("md5sum", mpath(mnt, path)).stdout
        assert out.split()[0] == hashlib.md5(data).hexdigest(), path


def test_cmp_notices_a_difference(mnt, sample, tmp_path):
    _, expected = sample
    data = bytearray(expected["/bytes"])
    data[500] ^= 1
    ref = tmp_path / "ref.bin"
    ref.write_bytes(bytes(data))
    cp = run("cmp", ref, mpath(mnt, "/bytes"), check=False)
    assert cp.returncode == 1
    assert "byte 501" in cp.stdout


def test_numpy_fromfile(mnt):
    for path, (array, _, _) in DATASETS.items():
        got = np.fromfile(mpath(mnt, path), dtype=array.dtype).reshape(array.shape)
        np.testing.assert_array_equal(got, array, err_msg=path)


def test_numpy_memmap(mnt):
    array = DATASETS["/big"][0]
    mm = np.memmap(mpath(mnt, "/big"), dtype="<f4", mode="r", shape=array.shape)
    try:
        np.testing.assert_array_equal(mm[100:300, 7:900:3], array[100:300, 7:900:3])
        np.testing.assert_array_equal(mm[:, 1000], array[:, 1000])
        np.testing.assert_array_equal(mm, array)
    finally:
        del mm


def test_unwritten_dataset_reads_its_fill_value(mnt):
    got = np.fromfile(mpath(mnt, "/empty"), dtype="<i4")
    assert got.size == 100 * 100
    assert (got == -7).all()


def test_reads_at_and_past_the_end(mnt, sample):
    _, expected = sample
    data = expected["/cube"]
    fd = os.open(mpath(mnt, "/cube"), os.O_RDONLY)
    try:
        assert os.pread(fd, 100, len(data)) == b""
        assert os.pread(fd, 100, len(data) + 12345) == b""
        assert os.pread(fd, 100, len(data) - 10) == data[-10:]
    finally:
        os.close(fd)


def test_concurrent_readers_get_correct_data(sample, mounter):
    # A fresh (read-only, so lock-free) mount: nothing is in its page cache
    # yet, so the reads reach the daemon.
    c, expected = sample
    m = mounter(c, "-o", "ro")
    data = expected["/big"]
    path = mpath(m, "/big")
    rnd = random.Random(7)
    ranges = [(rnd.randrange(len(data)), rnd.randrange(1, 3 << 20)) for _ in range(64)]

    def read_range(r):
        off, n = r
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.pread(fd, n, off) == data[off:off + n]
        finally:
            os.close(fd)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(read_range, ranges))

    # And several processes streaming the same file at once.
    procs = [subprocess.Popen(["md5sum", path], stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    procs += [subprocess.Popen(["dd", f"if={path}", "bs=1M", "status=none"],
                               stdout=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    want = hashlib.md5(data).hexdigest()
    assert all(o.split()[0] == want for o in outs[:4])
    assert all(o == data for o in outs[4:])
