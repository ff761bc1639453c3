"""Reads answered by splicing the container file's bytes (fusefs/splice_reply.h).
The daemon splices only where it may make pipes for whole 1 MiB replies,
so these tests raise fs.pipe-max-size to 2 MiB while they run (root; the
old value is put back) unless the process may already: then everything read
through the mount (dd, cmp, pread at odd offsets, numpy.fromfile and
memmap) matches numpy, with row-shaped, square, 3-d and filtered chunks,
also around chunks being rewritten through a read-write mount. With the
default limit the daemon copies, as it does with -o nosplice."""
import contextlib
import fcntl
import os
import random
import re

import numpy as np
import pytest

from conftest import bin_path, mpath, run, slab
from mounting import make_dataset, mounted, mounter  # noqa: F401

F_SETPIPE_SZ = 1031
RNG = np.random.default_rng(20261125)


def can_make_pipe(nbytes):
    """Whether this process may make a pipe of nbytes (what the daemon probes)."""
    r, w = os.pipe()
    try:
        return fcntl.fcntl(r, F_SETPIPE_SZ, nbytes) >= nbytes
    except OSError:
        return False
    finally:
        os.close(r)
        os.close(w)


PIPE_MAX = "/proc/sys/fs/pipe-max-size"
WANT = (1 << 20) + 19 * 4096  # a whole reply and a page per piece (splice_reply.cc)


@contextlib.contextmanager
def pipe_max_size(nbytes):
    """fs.pipe-max-size set to nbytes inside the block, put back after;
    yields False (and changes nothing) where it cannot be set."""
    try:
        with open(PIPE_MAX) as f:
            old = f.read().strip()
        with open(PIPE_MAX, "w") as f:
            f.write(str(nbytes))
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        with open(PIPE_MAX, "w") as f:
            f.write(old)


@pytest.fixture
def splicing():
    """A daemon started inside may splice whole replies (or the test skips)."""
    if can_make_pipe(WANT):
        yield
        return
    with pipe_max_size(2 << 20) as raised:
        if not raised or not can_make_pipe(WANT):
            pytest.skip("this process may not make 1 MiB pipes and cannot raise fs.pipe-max-size")
        yield


def reply_mode(m):
    found = re.findall(r"max_write (\d+), max_readahead \d+, (spliced|copied) reads", m.log())
    assert found, m.log()
    return int(found[-1][0]), found[-1][1]


def cache_counter(m, name):
    out = run("getfattr", "--only-values", "-n", "user.slab.cache", m.path).stdout
    return int(re.search(rf"\b{name}=(\d+)", out).group(1))


def drop_pages(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


@pytest.fixture(scope="module")
def rows_container(tmp_path_factory):
    """Mostly row-shaped chunks, and a square-chunked and a filtered dataset."""
    c = tmp_path_factory.mktemp("splice") / "rows.slab"
    slab("create", c)
    data = {
        "/rows": (RNG.standard_normal((1024, 2048)).astype("<f4"), (16, 2048)),
        "/g/cube": (RNG.integers(0, 1 << 30, (64, 32, 128)).astype("<i4"), (3, 32, 128)),
        "/square": (RNG.standard_normal((256, 256)).astype("<f4"), (32, 32)),
    }
    expected = {p: make_dataset(c, p, a, ch) for p, (a, ch) in data.items()}
    slab("mkdset", c, "/packed", "--dtype", "f8", "--shape", "512,512", "--chunks", "8,512",
         "--filters", "shuffle,deflate=1")
    packed = RNG.standard_normal((512, 512))
    npy = c.parent / "packed.npy"
    np.save(npy, packed)
    slab("import", c, "/packed", npy)
    expected["/packed"] = packed.astype("<f8").tobytes()
    return c, expected


def test_reads_are_spliced_and_match(rows_container, tmp_path, splicing):
    c, expected = rows_container
    with mounted(c, "-o", "ro") as m:
        assert reply_mode(m) == (1 << 20, "spliced")
        before = cache_counter(m, "extent_reads")
        for path, want in expected.items():
            out = tmp_path / "out.bin"
            run("dd", f"if={mpath(m, path)}", f"of={out}", "bs=1M", "status=none")
            assert out.read_bytes() == want, path
            ref = tmp_path / "ref.bin"
            ref.write_bytes(want)
            run("cmp", mpath(m, path), ref)
        spliced = cache_counter(m, "extent_reads")
        assert spliced > before, "no read was spliced"
        # pread at any offset and length, the kernel's pages dropped first
        # so the daemon answers each time.
        rnd = random.Random(5)
        for path in ("/rows", "/g/cube", "/square"):
            want = expected[path]
            drop_pages(mpath(m, path))
            fd = os.open(mpath(m, path), os.O_RDONLY)
            try:
                for _ in range(200):
                    off = rnd.randrange(len(want))
                    n = rnd.choice([1, 3, 4, 4096, 65536, 300000, 1 << 20])
                    assert os.pread(fd, n, off) == want[off:off + n], (path, off, n)
            finally:
                os.close(fd)
        got = np.fromfile(mpath(m, "/rows"), dtype="<f4")
        assert got.tobytes() == expected["/rows"]
        drop_pages(mpath(m, "/g/cube"))
        mm = np.memmap(mpath(m, "/g/cube"), dtype="<i4", mode="r", shape=(64, 32, 128))
        want = np.frombuffer(expected["/g/cube"], dtype="<i4").reshape(64, 32, 128)
        assert np.array_equal(mm[5:40, 3:30, 7:100], want[5:40, 3:30, 7:100])
        del mm


def test_rewritten_chunks_read_back_through_a_splicing_mount(rows_container, tmp_path, splicing):
    c, expected = rows_container
    work = tmp_path / "w.slab"
    work.write_bytes(c.read_bytes())
    model = bytearray(expected["/rows"])
    rnd = random.Random(9)
    with mounted(work) as m:
        assert reply_mode(m) == (1 << 20, "spliced")
        path = mpath(m, "/rows")
        fd = os.open(path, os.O_RDWR)
        try:
            for i in range(40):
                off = rnd.randrange(len(model) - 70000)
                blob = os.urandom(rnd.choice([4, 1000, 65536]))
                assert os.pwrite(fd, blob, off) == len(blob)
                model[off:off + len(blob)] = blob
                if i % 10 == 9:
                    os.fsync(fd)  # a commit: the chunks are clean again
                drop_pages(path)
                start = max(0, off - 300000)
                got = os.pread(fd, 1 << 20, start)
                assert got == bytes(model[start:start + (1 << 20)]), (i, off)
        finally:
            os.close(fd)
        run("dd", f"if={path}", f"of={tmp_path / 'all.bin'}", "bs=1M", "status=none")
        assert (tmp_path / "all.bin").read_bytes() == bytes(model)
    with mounted(work, "-o", "ro") as m:
        assert open(mpath(m, "/rows"), "rb").read() == bytes(model)


def test_nosplice_copies_every_reply(rows_container, tmp_path, splicing):
    c, expected = rows_container
    with mounted(c, "-o", "ro,nosplice") as m:
        assert reply_mode(m) == (1 << 20, "copied")
        for path, want in expected.items():
            assert open(mpath(m, path), "rb").read() == want, path
        assert cache_counter(m, "extent_reads") == 0


def test_without_room_for_whole_replies_the_daemon_copies(rows_container):
    c, expected = rows_container
    # CAP_SYS_RESOURCE (root's, in CI) passes any pipe limit: the daemon runs
    # without it, as an ordinary user's would.
    wrapper = ("setpriv", "--bounding-set", "-sys_resource") if can_make_pipe(WANT) else ()
    with pipe_max_size(1 << 20) as set_:
        if not set_ and int(open(PIPE_MAX).read()) >= WANT:
            pytest.skip("cannot lower fs.pipe-max-size below a whole reply")
        with mounted(c, "-o", "ro", wrapper=wrapper) as m:
            assert reply_mode(m) == (1 << 20, "copied")
            assert open(mpath(m, "/rows"), "rb").read() == expected["/rows"]
            assert cache_counter(m, "extent_reads") == 0


def test_nosplice_is_in_the_help():
    out = run(bin_path("slabfs"), "--help", check=False)
    assert "-o nosplice" in out.stdout + out.stderr
