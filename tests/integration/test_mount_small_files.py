"""Small files stored small, through a real mount (issue 21, item 1): `tar x`
of a generated tree of 300 files of 10 B to 6 KB into a mount keeps the
container within 1.25 x the files' bytes + 4 KiB per file, each file's
`user.slab.stored` is its size and `du` its size rounded up to 512 bytes,
and the tree reads back byte for byte after a remount. Then files that grow
and shrink through the mount (`>>` after a commit, truncate up and down, a
cp of a file of several chunks) store what they hold, and `slab fsck` finds
every byte of the container accounted for."""
import json
import os
import subprocess
import tarfile
import time

import numpy as np

from conftest import run, slab
from mounting import container, mounter  # noqa: F401

FILES = 300


def make_tree(top, files=FILES, seed=2101):
    """`files` files of 10 to 6,000 bytes (log-uniform), 20 to a
    directory; returns {relative path: bytes}."""
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(np.log(10), np.log(6000), files)).astype(int)
    tree = {}
    for i, n in enumerate(sizes):
        rel = os.path.join("src", f"d{i // 20}", f"f{i}.c")
        body = rng.integers(1, 256, int(n), dtype=np.uint8).tobytes()
        os.makedirs(os.path.join(top, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(top, rel), "wb") as f:
            f.write(body)
        tree[rel] = body
    return tree


def stored(path):
    return int(os.getxattr(path, "user.slab.stored"))


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def fsck_clean(c):
    report = json.loads(slab("fsck", "--json", c).stdout)
    assert report["status"] == "clean", report
    assert report["leaked_bytes"] == 0, report
    return report


def test_tar_x_of_small_files_stays_small(tmp_path, container, mounter):  # noqa: F811
    src = tmp_path / "src-tree"
    tree = make_tree(src)
    total = sum(len(b) for b in tree.values())
    tar_path = tmp_path / "tree.tar"
    with tarfile.open(tar_path, "w") as t:
        t.add(src / "src", arcname="src")

    m = mounter(container)
    run("tar", "xf", tar_path, "-C", m.path)
    # tar sets times and modes on the open file, before its close commits
    # the bytes; the kernel keeps the attributes of those replies (st_blocks
    # 0) for attr_timeout, 1 s. Then it asks again.
    time.sleep(1.1)
    du_sum = 0
    for rel, body in tree.items():
        p = m / rel
        st = os.stat(p)
        assert st.st_size == len(body), rel
        # What is stored is the file's bytes: no whole chunk.
        assert stored(p) == len(body), rel
        assert st.st_blocks == (len(body) + 511) // 512, rel
        du_sum += st.st_blocks * 512
    # du of the tree says the same (the directories are groups of size 0).
    du = int(run("du", "-s", "-B1", m / "src").stdout.split()[0])
    assert du == du_sum, (du, du_sum)
    assert du < total + 512 * FILES
    assert m.unmount() == 0

    size = os.path.getsize(container)
    target = 1.25 * total + 4096 * FILES
    assert size <= target, f"container {size} bytes for {total} bytes in {FILES} files (target {target:.0f})"
    report = fsck_clean(container)
    assert report["chunk_bytes"] == total, report

    m = mounter(container, "-o", "ro")
    for rel, body in tree.items():
        assert read_all(m / rel) == body, rel


def test_files_that_grow_and_shrink_store_what_they_hold(tmp_path, container, mounter):  # noqa: F811
    m = mounter(container)
    log = m / "log"
    want = b""
    for i in range(20):
        line = f"line {i} ".encode() + b"x" * i + b"\n"
        with open(log, "ab") as f:  # each close commits
            f.write(line)
        want += line
        assert stored(log) == len(want)
    assert read_all(log) == want

    # truncate up: nothing more is stored, the new bytes read as zeros.
    run("truncate", "-s", "100000", log)
    assert stored(log) == len(want)
    assert os.stat(log).st_blocks == (len(want) + 511) // 512
    assert read_all(log) == want + bytes(100000 - len(want))
    # A write past a gap stores the chunk as far as the file now reaches.
    with open(log, "r+b") as f:
        f.seek(150000)
        f.write(b"tail")
    assert stored(log) == 150004
    # truncate down: the cut chunk is stored shorter.
    run("truncate", "-s", "1000", log)
    assert stored(log) == 1000
    assert read_all(log) == (want + bytes(1000))[:1000]

    # A file of several 1 MiB chunks: only the last one is short.
    big = np.random.default_rng(5).integers(0, 256, (5 << 20) // 2 + 123, dtype=np.uint8).tobytes()
    (tmp_path / "big").write_bytes(big)
    run("cp", tmp_path / "big", m / "big")
    assert stored(m / "big") == len(big)
    run("truncate", "-s", str(2 << 20), m / "big")
    assert stored(m / "big") == 2 << 20
    subprocess.run(["sync"], check=True)
    assert m.unmount() == 0

    fsck_clean(container)
    m = mounter(container, "-o", "ro")
    assert read_all(m / "log") == (want + bytes(1000))[:1000]
    assert read_all(m / "big") == big[:2 << 20]
    assert stored(m / "big") == 2 << 20
