"""Names through a real mount: mkdir, rmdir (ENOTEMPTY), mv (rename(2) and
renameat2 flags), rm with its space reclaimed, statfs, missing paths, bad
names. New files and replacing files: test_mount_replace.py."""
import ctypes
import errno
import os
import time

import numpy as np
import pytest

from conftest import expect_errno, mpath, run, slab
from mounting import container, export, make_dataset, mounter  # noqa: F401

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


def renameat2(old, new, flags):
    if libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), str(old))


def commit(m):
    """fsync on a directory commits the container."""
    fd = os.open(m.path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def slab_ls(c, path="/"):
    return slab("ls", "-r", c, path).stdout


def test_mkdir_and_rmdir(container, mounter):
    m = mounter(container)
    os.mkdir(mpath(m, "/g1"))
    os.makedirs(mpath(m, "/x/y/z"))
    assert sorted(os.listdir(m.path)) == ["g1", "x"]
    assert os.path.isdir(mpath(m, "/x/y/z"))
    expect_errno(errno.EEXIST, os.mkdir, mpath(m, "/g1"))
    expect_errno(errno.ENOTEMPTY, os.rmdir, mpath(m, "/x"))
    cp = run("rmdir", mpath(m, "/x/y"), check=False)
    assert cp.returncode != 0 and "Directory not empty" in cp.stderr
    os.rmdir(mpath(m, "/x/y/z"))
    os.rmdir(mpath(m, "/x/y"))
    assert os.listdir(mpath(m, "/x")) == []
    os.rmdir(mpath(m, "/g1"))
    assert m.unmount() == 0
    listing = slab_ls(container)
    assert "x" in listing and "g1" not in listing


def test_rmdir_and_unlink_check_the_kind(container, mounter):
    make_dataset(container, "/g/ds", np.arange(10, dtype="u1"), (4,))
    m = mounter(container)
    expect_errno(errno.ENOTDIR, os.rmdir, mpath(m, "/g/ds"))
    expect_errno(errno.EISDIR, os.unlink, mpath(m, "/g"))
    assert os.path.exists(mpath(m, "/g/ds"))


def test_mv_renames_and_moves(container, mounter):
    a = np.arange(1000, dtype="<i4")
    b = np.arange(50, dtype="<f8")
    make_dataset(container, "/src/a", a, (64,))
    make_dataset(container, "/src/b", b, (7,))
    slab("mkgroup", "-p", container, "/dst/sub")
    m = mounter(container)
    run("mv", mpath(m, "/src/a"), mpath(m, "/dst/a2"))
    assert not os.path.exists(mpath(m, "/src/a"))
    assert open(mpath(m, "/dst/a2"), "rb").read() == a.tobytes()
    run("mv", mpath(m, "/dst/sub"), mpath(m, "/src/sub"))
    assert os.path.isdir(mpath(m, "/src/sub"))
    # rename(2) replaces a dataset with a dataset.
    os.rename(mpath(m, "/src/b"), mpath(m, "/dst/a2"))
    assert open(mpath(m, "/dst/a2"), "rb").read() == b.tobytes()
    assert m.unmount() == 0
    assert export(container, "/dst/a2") == b.tobytes()
    listing = slab_ls(container)
    assert "sub" in listing


def test_rename_flags(container, mounter):
    make_dataset(container, "/g/a", np.zeros(10, "u1"), (5,))
    make_dataset(container, "/g/b", np.ones(10, "u1"), (5,))
    m = mounter(container)
    expect_errno(errno.EEXIST, renameat2, mpath(m, "/g/a"), mpath(m, "/g/b"), RENAME_NOREPLACE)
    expect_errno(errno.EINVAL, renameat2, mpath(m, "/g/a"), mpath(m, "/g/b"), RENAME_EXCHANGE)
    renameat2(mpath(m, "/g/a"), mpath(m, "/g/c"), RENAME_NOREPLACE)
    assert sorted(os.listdir(mpath(m, "/g"))) == ["b", "c"]
    # mv -n uses RENAME_NOREPLACE and must not clobber.
    run("mv", "-n", mpath(m, "/g/c"), mpath(m, "/g/b"), check=False)
    assert open(mpath(m, "/g/b"), "rb").read() == b"\x01" * 10


def test_rename_refusals(container, mounter):
    make_dataset(container, "/g/ds", np.zeros(10, "u1"), (5,))
    slab("mkgroup", "-p", container, "/h/inner")
    slab("mkgroup", "-p", container, "/empty")
    m = mounter(container)
    # A group over a dataset, a dataset over a group, a non-empty group.
    expect_errno(errno.ENOTDIR, os.rename, mpath(m, "/h"), mpath(m, "/g/ds"))
    expect_errno(errno.EISDIR, os.rename, mpath(m, "/g/ds"), mpath(m, "/empty"))
    expect_errno(errno.ENOTEMPTY, os.rename, mpath(m, "/empty"), mpath(m, "/h"))
    expect_errno(errno.EINVAL, os.rename, mpath(m, "/h"), mpath(m, "/h/inner/x"))
    # An empty group can be replaced by a group.
    os.rename(mpath(m, "/h/inner"), mpath(m, "/empty"))
    assert sorted(os.listdir(m.path)) == ["empty", "g", "h"]


def test_rm_deletes_and_reclaims_space(container, mounter):
    data = np.random.default_rng(1).standard_normal((512, 512)).astype("<f4")
    make_dataset(container, "/big", data, (128, 128))
    make_dataset(container, "/keep", np.arange(100, dtype="<i8"), (10,))
    m = mounter(container)

    def used():
        st = os.statvfs(m.path)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    before = used()
    assert before >= data.nbytes
    fd = os.open(mpath(m, "/big"), os.O_RDONLY)  # a reader keeps the data alive
    try:
        run("rm", mpath(m, "/big"))
        assert not os.path.exists(mpath(m, "/big"))
        assert "big" not in os.listdir(m.path)
        assert os.pread(fd, 4096, 8192) == data.tobytes()[8192:8192 + 4096]
        assert os.fstat(fd).st_size == data.nbytes
    finally:
        os.close(fd)
    # The space is free once the last handle is gone (the kernel releases
    # the descriptor asynchronously) and a commit has made the removal
    # durable.
    deadline = time.monotonic() + 10
    while True:
        commit(m)
        after = used()
        if before - after >= data.nbytes * 0.9:
            break
        assert time.monotonic() < deadline, (before, after)
        time.sleep(0.2)
    expect_errno(errno.ENOENT, os.unlink, mpath(m, "/big"))
    assert m.unmount() == 0
    assert "big" not in slab_ls(container)
    assert export(container, "/keep") == np.arange(100, dtype="<i8").tobytes()


def test_statfs_and_df(container, mounter):
    m = mounter(container)
    st = os.statvfs(m.path)
    assert st.f_namemax == 255
    assert st.f_blocks > 0 and st.f_bfree <= st.f_blocks and st.f_bavail > 0
    assert st.f_frsize > 0
    out = run("df", "-P", m.path).stdout
    assert str(m.path) in out


def test_missing_paths_are_enoent(container, mounter):
    slab("mkgroup", container, "/g")
    m = mounter(container)
    missing = mpath(m, "/g/nope")
    expect_errno(errno.ENOENT, os.stat, missing)
    expect_errno(errno.ENOENT, os.open, missing, os.O_RDONLY)
    expect_errno(errno.ENOENT, os.rmdir, missing)
    expect_errno(errno.ENOENT, os.unlink, missing)
    expect_errno(errno.ENOENT, os.rename, missing, mpath(m, "/g/x"))
    expect_errno(errno.ENOENT, os.listdir, missing)
    expect_errno(errno.ENOENT, os.getxattr, missing, "user.x")
    expect_errno(errno.ENOENT, os.mkdir, mpath(m, "/no/such/parent"))
    expect_errno(errno.ENOENT, os.stat, mpath(m, "/no/such/parent"))
    cp = run("cat", missing, check=False)
    assert cp.returncode != 0 and "No such file or directory" in cp.stderr


def lookups_of(m, path):
    """How many lookups of `path` (a mount path like /g/x) that found nothing
    the daemon logged at debug level."""
    return sum(1 for line in m.log().splitlines() if f"lookup {path} refused (ENOENT)" in line)


def test_missing_names_are_remembered_until_made_through_the_mount(container, mounter):
    """A missing name is a negative entry for the kernel (entry_timeout):
    the lstat before a create and the create's own lookup reach the daemon
    once. Making the name through the mount (a file, a directory, a
    rename) replaces the negative entry at once. A view's name
    is never remembered missing: it appears when its dataset is made."""
    m = mounter(container, "-o", "log_level=debug")
    for name in ("f", "d", "r"):
        t0 = time.monotonic()
        for _ in range(3):
            expect_errno(errno.ENOENT, os.stat, mpath(m, "/" + name))
        # The negative entry lasts the mount's entry timeout (1 s).
        if time.monotonic() - t0 < 1.0:
            assert lookups_of(m, "/" + name) == 1, m.log()[-2000:]
    with open(mpath(m, "/f"), "wb") as f:
        f.write(b"made\n")
    assert open(mpath(m, "/f"), "rb").read() == b"made\n"
    os.mkdir(mpath(m, "/d"))
    assert os.path.isdir(mpath(m, "/d"))
    with open(mpath(m, "/tmp"), "wb") as f:
        f.write(b"renamed\n")
    os.rename(mpath(m, "/tmp"), mpath(m, "/r"))
    assert open(mpath(m, "/r"), "rb").read() == b"renamed\n"
    # Removed again: missing again, at once.
    os.unlink(mpath(m, "/f"))
    expect_errno(errno.ENOENT, os.stat, mpath(m, "/f"))
    # A view of a dataset made later.
    for _ in range(2):
        expect_errno(errno.ENOENT, os.stat, mpath(m, "/later.npy"))
    assert lookups_of(m, "/later.npy") == 2
    with open(mpath(m, "/later"), "wb") as f:
        f.write(bytes(range(8)))
    assert open(mpath(m, "/later.npy"), "rb").read().startswith(b"\x93NUMPY")
    assert m.unmount() == 0
    assert slab_ls(container).split() == ["d/", "later", "r"]


def test_bad_names(container, mounter):
    m = mounter(container)
    long_ok = "n" * 255
    os.mkdir(mpath(m, "/" + long_ok))
    assert long_ok in os.listdir(m.path)
    expect_errno(errno.ENAMETOOLONG, os.mkdir, mpath(m, "/" + "n" * 256))
    expect_errno(errno.ENAMETOOLONG, os.stat, mpath(m, "/" + "n" * 256))
    expect_errno(errno.ENAMETOOLONG, os.rename, mpath(m, "/" + long_ok),
                 mpath(m, "/" + "n" * 256))
    # Unusual but valid names.
    for name in ("with space", "ünïcödé", "dash-and.dot", "...", ".hidden"):
        os.mkdir(mpath(m, "/" + name))
        assert os.path.isdir(mpath(m, "/" + name)), name
    assert m.unmount() == 0
    listing = slab_ls(container)
    assert "with space" in listing and "ünïcödé" in listing


def test_listing_large_directories(container, mounter):
    m = mounter(container)
    names = [f"group{i:04d}" for i in range(300)]
    for n in names:
        os.mkdir(mpath(m, "/" + n))
    assert sorted(os.listdir(m.path)) == names
    out = run("ls", "-l", m.path).stdout
    assert len(out.splitlines()) == 301
    out = run("find", m.path, "-type", "d").stdout
    assert len(out.splitlines()) == 301


def test_concurrent_listings_and_changes(container, mounter):
    """Many threads list, create and remove at once (directory handles come
    and go while others are being read)."""
    import concurrent.futures
    m = mounter(container)
    for i in range(50):
        os.mkdir(mpath(m, f"/d{i:02d}"))

    def lister(_):
        for _ in range(40):
            names = os.listdir(m.path)
            assert all(n.startswith(("d", "t")) for n in names)
            cp = run("ls", "-l", m.path, check=False)
            # A name listed a moment before may be gone by the time ls stats it.
            assert cp.returncode == 0 or all("No such file" in line
                                             for line in cp.stderr.splitlines()), cp.stderr
        return True

    def churner(k):
        for j in range(40):
            p = mpath(m, f"/t{k}_{j}")
            os.mkdir(p)
            os.rmdir(p)
        return True

    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(lister, i) for i in range(4)]
        futures += [pool.submit(churner, k) for k in range(2)]
        assert all(f.result(timeout=300) for f in futures)
    assert sorted(os.listdir(m.path)) == [f"d{i:02d}" for i in range(50)]
