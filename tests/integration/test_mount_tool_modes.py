"""Tools that set modes and owners on what they make: tar x, cp -a, rsync
-a and unzip restore the modes of directories and files, and tar --xattrs
sets every extended attribute it archived, the figures user.slab.stored
and user.slab.defined among them. Modes and owners are not kept by a
container: slabfs accepts chmod and chown on groups and datasets and
ignores them (docs/mount.md), so each tool exits 0 and prints nothing, and
the data arrives whole."""
import os
import stat
import subprocess
import time

import numpy as np

from conftest import mpath, run, slab
from mounting import container, export, make_dataset, mounter  # noqa: F401


def tree_with_modes(root):
    """A tree with the modes tools like to restore: private directories,
    a read-only file, an executable."""
    (root / "g" / "sub").mkdir(parents=True)
    (root / "g" / "data.bin").write_bytes(bytes(range(256)) * 16)
    (root / "g" / "sub" / "notes").write_bytes(b"written by hand\n")
    (root / "g" / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(root / "g" / "sub" / "notes", 0o400)
    os.chmod(root / "g" / "run.sh", 0o755)
    os.chmod(root / "g" / "sub", 0o700)
    os.chmod(root / "g", 0o750)


def check_tree(m, top):
    assert open(mpath(m, f"/{top}/g/data.bin"), "rb").read() == bytes(range(256)) * 16
    assert open(mpath(m, f"/{top}/g/sub/notes"), "rb").read() == b"written by hand\n"
    # The modes stay the fixed ones: directories 0755, files 0644.
    assert stat.S_IMODE(os.stat(mpath(m, f"/{top}/g/sub")).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(mpath(m, f"/{top}/g/run.sh")).st_mode) == 0o644


def refusals(m):
    """The daemon's refusals, but for the ACLs cp and tar try to copy
    (system.posix_acl_*: not supported, and they say nothing)."""
    return [line for line in m.log().splitlines()
            if "refused (" in line and "setxattr system." not in line]


def quiet(*argv, cwd=None):
    cp = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert cp.returncode == 0, f"{argv[0]} exited {cp.returncode}: {cp.stderr}"
    assert cp.stderr == "", f"{argv[0]}: {cp.stderr}"
    return cp


def test_tar_cp_rsync_and_unzip_restore_modes_quietly(container, mounter, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    tree_with_modes(src)
    run("tar", "-cf", tmp_path / "a.tar", "-C", src, "g")
    subprocess.run(["zip", "-qr", str(tmp_path / "a.zip"), "g"], cwd=src, check=True)
    m = mounter(container)
    for top in ("tar", "cp", "rsync", "unzip"):
        os.mkdir(mpath(m, "/" + top))
    quiet("tar", "-xf", tmp_path / "a.tar", "-C", mpath(m, "/tar"))
    quiet("cp", "-a", src / "g", mpath(m, "/cp/"))
    quiet("rsync", "-a", str(src / "g"), mpath(m, "/rsync/"))
    quiet("unzip", "-q", tmp_path / "a.zip", "-d", mpath(m, "/unzip"))
    for top in ("tar", "cp", "rsync", "unzip"):
        check_tree(m, top)
    assert refusals(m) == []
    assert m.unmount() == 0
    assert export(container, "/tar/g/sub/notes") == b"written by hand\n"


def test_chmod_and_chown_are_accepted_and_ignored(container, mounter):
    make_dataset(container, "/g/ds", np.arange(10, dtype="u1"), (5,))
    m = mounter(container, "-o", "log_level=debug")
    g, ds = mpath(m, "/g"), mpath(m, "/g/ds")
    for path, mode in ((g, 0o700), (ds, 0o600), (ds, 0o4755)):
        os.chmod(path, mode)
    os.chown(g, 1234, 5678)
    os.chown(ds, 1234, -1)
    run("chmod", "-R", "go-rwx", g)
    assert stat.S_IMODE(os.stat(g).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(ds).st_mode) == 0o644
    assert (os.stat(ds).st_uid, os.stat(ds).st_gid) == (os.getuid(), os.getgid())
    assert "chmod /g to 700: ignored" in m.log()
    assert "chown /g/ds to 1234:" in m.log()
    assert m.unmount() == 0
    assert export(container, "/g/ds") == bytes(range(10))


def test_tar_xattrs_extracts_figures_quietly(container, mounter, tmp_path):
    """An archive made from the mount with --xattrs holds user.slab.stored and
    user.slab.defined; extracting it onto the mount sets them on the new
    files (ignored: they are figures) without a word, and the datasets come
    back typed."""
    a = np.arange(12 * 5, dtype="<i2").reshape(12, 5)
    make_dataset(container, "/g/ds", a, (4, 5))
    slab("mkdset", container, "/g/sparse", "--dtype", "u2", "--shape", "64", "--chunks", "16", "--sparse")
    m = mounter(container)
    with open(mpath(m, "/g/sparse"), "r+b") as f:
        f.seek(20)
        f.write(b"\x01\x00\x02\x00")
    archive = tmp_path / "x.tar"
    quiet("tar", "--xattrs", "--xattrs-include=user.*", "-cf", archive, "-C", m.path, "g")
    os.mkdir(mpath(m, "/copy"))
    quiet("tar", "--xattrs", "--xattrs-include=user.*", "-xf", archive, "-C", mpath(m, "/copy"))
    assert os.getxattr(mpath(m, "/copy/g/ds"), "user.slab.dtype") == b"i2"
    assert os.getxattr(mpath(m, "/copy/g/ds"), "user.slab.shape") == b"12,5"
    assert open(mpath(m, "/copy/g/ds"), "rb").read() == a.tobytes()
    assert refusals(m) == []
    assert m.unmount() == 0
    assert export(container, "/copy/g/ds") == a.tobytes()


def test_a_new_group_shows_its_creation_time(container, mounter):
    slab("mkgroup", container, "/old")
    m = mounter(container)
    old = os.stat(mpath(m, "/old")).st_mtime  # the time the mount started
    time.sleep(1.5)
    before = time.time()
    os.mkdir(mpath(m, "/fresh"))
    st = os.stat(mpath(m, "/fresh"))
    assert st.st_mtime >= before - 0.5, (st.st_mtime, before)
    assert st.st_mtime - old >= 1, (st.st_mtime, old)
    # atime and ctime read as mtime.
    assert st.st_atime == st.st_mtime and st.st_ctime == st.st_mtime
    # A group untouched through this mount keeps its time.
    assert os.stat(mpath(m, "/old")).st_mtime == old
