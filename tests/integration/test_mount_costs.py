"""Costs that grow with the change, not with the container (issue 21):
-o bulk (close and namespace changes do not wait for a commit) with tar
and git, and a read-only mount pinned on one commit while a read-write
mount rewrites a dataset (the space kept for it is one copy, not one per
rewrite)."""
import os
import subprocess
import tarfile

import numpy as np

from conftest import slab
from mounting import export, mounter  # noqa: F401

MiB = 1 << 20


def small_tree_tar(path, files=300, seed=5):
    rng = np.random.default_rng(seed)
    src = path.parent / "src"
    expect = {}
    for i in range(files):
        d = src / f"d{i // 40}"
        d.mkdir(parents=True, exist_ok=True)
        body = rng.integers(32, 127, int(rng.integers(10, 6000)), dtype="u1").tobytes()
        (d / f"f{i}.txt").write_bytes(body)
        expect[f"tree/d{i // 40}/f{i}.txt"] = body
    with tarfile.open(path, "w") as t:
        t.add(src, arcname="tree")
    return expect


def listed(container):
    return slab("ls", "-r", container, "/").stdout


def test_bulk_close_does_not_commit_but_fsync_and_unmount_do(tmp_path, mounter):
    c = tmp_path / "c.slab"
    slab("create", c)
    m = mounter(c, "-o", "bulk,commit_interval=0")
    tar = tmp_path / "t.tar"
    expect = small_tree_tar(tar)
    subprocess.run(["tar", "xf", str(tar), "-C", str(m.path)], check=True)
    for name, body in list(expect.items())[:20]:
        assert (m.path / name).read_bytes() == body
    # Nothing was committed: a reader of the container sees the empty root.
    assert "f0.txt" not in listed(c)
    # fsync of one file commits everything before it.
    fd = os.open(m.path / "tree" / "d0" / "f0.txt", os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    assert "f0.txt" in listed(c) and "f299.txt" in listed(c)
    # A later change is committed by the unmount.
    (m.path / "tree" / "late.txt").write_bytes(b"late\n")
    assert "late.txt" not in listed(c)
    assert m.unmount() == 0
    assert export(c, "/tree/late.txt") == b"late\n"
    for name, body in expect.items():
        assert export(c, "/" + name) == body


def test_bulk_git_clone_and_rm_rf(tmp_path, mounter):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for i in range(30):
        (repo / f"file{i}.txt").write_text(f"line {i}\n" * (i + 1))
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@e")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "one"], check=True, env=env)
    c = tmp_path / "c.slab"
    slab("create", c)
    m = mounter(c, "-o", "bulk")
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(repo), str(m.path / "clone")], check=True)
    st = subprocess.run(["git", "-C", str(m.path / "clone"), "status", "--porcelain"], capture_output=True,
                        text=True, check=True)
    assert st.stdout == ""
    assert (m.path / "clone" / "file7.txt").read_text() == "line 7\n" * 8
    subprocess.run(["rm", "-rf", str(m.path / "clone")], check=True)
    assert os.listdir(m.path) == []
    assert m.unmount() == 0
    assert "clone" not in listed(c)


def test_a_pinned_read_only_mount_costs_one_copy_while_a_writer_rewrites(tmp_path, mounter):
    c = tmp_path / "c.slab"
    n = 4 * MiB
    slab("create", c)
    slab("mkdset", c, "/d", "--dtype", "u1", "--shape", str(n), "--chunks", str(MiB))
    first = np.random.default_rng(1).integers(0, 255, n, dtype="u1").tobytes()
    (tmp_path / "first.bin").write_bytes(first)
    slab("import", c, "/d", tmp_path / "first.bin")
    reader = mounter(c, "-o", "ro")
    writer = mounter(c)
    before = os.path.getsize(c)
    block = np.random.default_rng(2).integers(0, 255, n, dtype="u1").tobytes()
    for i in range(60):
        with open(writer.path / "d", "r+b") as f:
            f.write(block[i:] + block[:i])
            f.flush()
            os.fsync(f.fileno())
    # One copy for the reader, one being written: not one per rewrite.
    assert os.path.getsize(c) <= before + 2 * n + MiB, (before, os.path.getsize(c))
    assert (reader.path / "d").read_bytes() == first
    assert writer.unmount() == 0
    assert reader.unmount() == 0
