"""Readers that follow a writer, through real mounts: a read-only mount
keeps reading its commit, whole, while a read-write mount of the same
container rewrites everything; with `-o ro,follow` it shows each new
commit -- new bytes in files it has open and mapped, new sizes, names,
groups and attributes, names that went away -- within its interval, to
real tools (dd, cp, mv, rm, setfattr on the writer; cat, tail -f, np.memmap,
getfattr on the reader)."""
import errno
import os
import subprocess
import time

import numpy as np
import pytest

from conftest import bin_path, expect_errno, mpath, run, slab
from mounting import container, export, make_dataset, mounter, try_mount  # noqa: F401


def wait_for(what, check, timeout=8.0):
    """Polls check() until it is true; fails naming `what` after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"the follow mount never showed {what}")
        time.sleep(0.05)


def read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture
def pair(container, mounter):
    """A container with a 2-D u2 dataset and a growable u1 stream, a
    read-write mount W and a read-only following mount R of it."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 60000, (128, 128)).astype("<u2")
    make_dataset(container, "/d", a, (32, 32))
    slab("mkdset", container, "/s", "--dtype", "u1", "--shape", "0,256",
         "--maxshape", "unlimited,256", "--chunks", "4,256")
    w = mounter(container, "-o", "commit_interval=0")
    r = mounter(container, "-o", "ro,follow=0.1")
    return a, w, r


def test_follow_shows_new_bytes_in_open_and_mapped_files(pair):
    a, w, r = pair
    assert read(mpath(r, "/d")) == a.tobytes()
    fd = os.open(mpath(r, "/d"), os.O_RDONLY)
    mm = np.memmap(mpath(r, "/d"), dtype="<u2", mode="r", shape=(128, 128))
    try:
        assert os.pread(fd, 8, 0) == a.tobytes()[:8]
        assert mm[100, 7] == a[100, 7]
        b = (a + 1).astype("<u2")
        # dd into the writer's file; conv=fsync commits before dd returns.
        subprocess.run(["dd", f"of={mpath(w, '/d')}", "bs=64K", "conv=notrunc,fsync", "status=none"],
                       input=b.tobytes(), check=True)
        wait_for("the new bytes through an open descriptor",
                 lambda: os.pread(fd, len(b.tobytes()), 0) == b.tobytes())
        # The mapping's pages were dropped too: it reads the new values.
        wait_for("the new bytes through np.memmap", lambda: mm[100, 7] == b[100, 7])
        assert np.array_equal(np.asarray(mm), b)
        assert read(mpath(r, "/d")) == b.tobytes()
    finally:
        del mm
        os.close(fd)


def test_follow_shows_growth_to_tail_f(pair):
    _, w, r = pair
    assert os.path.getsize(mpath(r, "/s")) == 0
    tail = subprocess.Popen(["tail", "-c", "+1", "-f", "-s", "0.1", mpath(r, "/s")],
                            stdout=subprocess.PIPE)
    try:
        rows = bytes(range(256)) * 3  # three rows of the stream
        with open(mpath(w, "/s"), "ab") as f:  # >> through the writer
            f.write(rows)
        # close() committed; the reader's size follows.
        wait_for("the stream's new size", lambda: os.path.getsize(mpath(r, "/s")) == len(rows))
        assert read(mpath(r, "/s")) == rows
        # tail -f prints the rows it saw appear.
        got = b""
        deadline = time.monotonic() + 8
        os.set_blocking(tail.stdout.fileno(), False)
        while len(got) < len(rows) and time.monotonic() < deadline:
            chunk = tail.stdout.read()
            if chunk:
                got += chunk
            time.sleep(0.05)
        assert got == rows
    finally:
        tail.kill()
        tail.wait()


def test_follow_shows_names_groups_and_attributes(pair, tmp_path):
    a, w, r = pair
    assert sorted(os.listdir(r.path)) == ["d", "s"]
    os.stat(mpath(r, "/d"))  # the kernel caches this name now
    src = tmp_path / "f.bin"
    src.write_bytes(b"hello follower\n" * 100)
    os.mkdir(mpath(w, "/g"))
    run("cp", src, mpath(w, "/g/f"))
    run("setfattr", "-n", "user.note", "-v", "hi", mpath(w, "/g"))
    wait_for("a new group and file", lambda: read(mpath(r, "/g/f")) == src.read_bytes())
    wait_for("a new attribute", lambda: run("getfattr", "--only-values", "-n", "user.note",
                                            mpath(r, "/g"), check=False).stdout == "hi")
    # mv on the writer: the old name goes at once (not after the kernel's
    # entry timeout), the new one holds the same bytes.
    run("mv", mpath(w, "/d"), mpath(w, "/g/d2"))
    wait_for("a moved dataset", lambda: os.path.exists(mpath(r, "/g/d2")))
    expect_errno(errno.ENOENT, os.stat, mpath(r, "/d"))
    assert read(mpath(r, "/g/d2")) == a.tobytes()
    run("rm", mpath(w, "/g/f"))
    wait_for("a removed file", lambda: not os.path.exists(mpath(r, "/g/f")))
    assert sorted(os.listdir(r.path)) == ["g", "s"]
    assert sorted(os.listdir(mpath(r, "/g"))) == ["d2"]
    # What the reader shows is what the container holds.
    w.unmount()
    assert export(r.container, "/g/d2") == a.tobytes()
    assert "refresh failed" not in r.log()


def test_follow_with_slab_as_the_writer(container, mounter):
    make_dataset(container, "/v", np.arange(1000, dtype="<f8"), (100,))
    r = mounter(container, "-o", "ro,follow=0.1")
    assert os.path.getsize(mpath(r, "/v")) == 8000
    slab("mkdset", container, "/w", "--dtype", "i4", "--shape", "10", "--fill", "7")
    wait_for("a dataset made by slab", lambda: read(mpath(r, "/w")) == np.full(10, 7, "<i4").tobytes())
    slab("rm", container, "/v")
    wait_for("a dataset removed by slab", lambda: not os.path.exists(mpath(r, "/v")))


def test_a_plain_read_only_mount_keeps_its_commit(container, mounter):
    """Without follow, the reader keeps the commit it mounted, whole, while
    the writer rewrites every chunk many times (the space that commit uses
    is never reused while the mount lives)."""
    a = np.arange(512 * 512, dtype="<u4").reshape(512, 512)
    make_dataset(container, "/d", a, (64, 64))
    # A small reader cache, so its reads go to the file.
    r = mounter(container, "-o", "ro,cache_size=1M")
    w = mounter(container, "-o", "commit_interval=0")
    for v in range(1, 16):
        with open(mpath(w, "/d"), "r+b") as f:
            f.write(np.full((512, 512), v, "<u4").tobytes())
            f.flush()
            os.fsync(f.fileno())
        assert read(mpath(r, "/d")) == a.tobytes(), f"after rewrite {v}"
    # The writer reuses the space once the reader is gone.
    r.unmount()
    w.unmount()
    rep = slab("fsck", container).stdout
    assert rep.rstrip().endswith("clean"), rep


def test_follow_needs_a_read_only_mount(container):
    code, out = try_mount(container, "-o", "follow")
    assert code == 2, out
    assert "follow needs ro" in out, out
    code, out = try_mount(container, "-o", "ro,follow=soon")
    assert code == 2 and "bad follow" in out, out
    code, out = try_mount(container, "-o", "reuse_delay=-3")
    assert code == 2 and "bad reuse_delay" in out, out
