"""`slab fsck` from the command line: a container that real tools worked on
(the CLI, a read-write mount with cp, dd, mv, rm, truncate, setfattr) is
clean; each kind of damage gives exit 4 and names what is damaged; a file
that cannot be read at all is exit 1 with one line; --json, --quiet and
--no-data do what they say. The checker's own cases (overlaps, leaks, every
index kind) are tests/engine/fsck/fsck_test.cc; slab fsck also runs on every
killed container of test_kill9.py and every damaged copy of
test_byteflip.py."""
import json
import os
import shutil
import subprocess

import numpy as np

from conftest import bin_path, fails, slab
from mounting import container, make_dataset, mounted  # noqa: F401


def fsck(*args):
    cp = subprocess.run([bin_path("slab"), "fsck", *map(str, args)], capture_output=True, text=True,
                        timeout=300)
    assert "Segmentation" not in cp.stderr and "terminate" not in cp.stderr, cp.stderr
    return cp


def build(c):
    rng = np.random.default_rng(5)
    make_dataset(c, "/a/dense", rng.integers(0, 1 << 30, (300, 200), dtype="<u4"), (64, 64))
    slab("mkdset", "-p", c, "/a/filtered", "--dtype", "f8", "--shape", "100,100", "--chunks", "10,10",
         "--filters", "shuffle,deflate=1,checksum")
    slab("mkdset", "-p", c, "/b/sparse", "--dtype", "i2", "--shape", "50,50", "--chunks", "8,8", "--sparse")
    slab("mkdset", c, "/grow", "--dtype", "u1", "--shape", "0,16", "--maxshape", "unlimited,16")
    with mounted(c) as m:
        with open(m / "a" / "filtered", "r+b") as f:
            f.write(rng.random(10000).tobytes())
        subprocess.run(["dd", "if=/dev/urandom", f"of={m / 'b' / 'sparse'}", "bs=100", "count=7",
                        "seek=3", "conv=notrunc", "status=none"], check=True)
        with open(m / "grow", "ab") as f:
            f.write(os.urandom(16 * 1000))
        os.truncate(m / "grow", 16 * 700)
        shutil.copy(m / "a" / "dense", m / "copy")
        os.rename(m / "copy", m / "b" / "moved")
        os.remove(m / "b" / "moved")
        subprocess.run(["setfattr", "-n", "user.note", "-v", "hello", m / "a"], check=True)
    slab("resize", c, "/a/dense", "200,200")
    slab("erase", c, "/b/sparse", "0:4,0:4")


def test_worked_on_container_is_clean(container):
    build(container)
    cp = fsck(container)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert cp.stdout.strip().endswith("clean"), cp.stdout
    report = json.loads(fsck("--json", container).stdout)
    assert report["status"] == "clean" and report["findings"] == []
    assert report["datasets"] == 4 and report["groups"] == 3
    assert report["chunks"] > 0 and report["chunks_verified"] == report["chunks"]
    assert report["leaked_bytes"] == 0
    assert report["file_bytes"] == report["file_end"] == os.path.getsize(container)
    # --quiet: nothing at all when clean.
    q = fsck("-q", container)
    assert q.returncode == 0 and q.stdout == "" and q.stderr == ""


def test_repacked_container_is_clean(container, tmp_path):
    build(container)
    out = tmp_path / "packed.slab"
    slab("repack", container, out, "--filters", "deflate=9")
    cp = fsck("--json", out)
    assert cp.returncode == 0, cp.stdout
    assert json.loads(cp.stdout)["free_bytes"] == 0  # repack leaves no free space inside


def test_damaged_chunk_exit_4_names_it(container):
    build(container)
    chunks = json.loads(slab("chunks", "--json", container, "/a/filtered").stdout)
    victim = chunks[len(chunks) // 2]
    with open(container, "r+b") as f:
        f.seek(victim["offset"] + victim["bytes"] // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    cp = fsck(container)
    assert cp.returncode == 4, cp.stdout
    coords = ",".join(map(str, victim["coords"]))
    assert f"damage: /a/filtered chunk [{coords}]" in cp.stdout, cp.stdout
    assert cp.stdout.strip().endswith("DAMAGED")
    report = json.loads(fsck("--json", container).stdout)
    assert report["status"] == "damaged"
    assert [f["where"] for f in report["findings"]] == [f"/a/filtered chunk [{coords}]"]
    assert report["findings"][0]["addr"] == victim["offset"]
    # --no-data does not read chunks, so it cannot see this.
    assert fsck("--no-data", container).returncode == 0


def test_truncated_container_exit_4(container):
    build(container)
    size = os.path.getsize(container)
    os.truncate(container, size - 5000)
    cp = fsck(container)
    assert cp.returncode == 4 and "truncated" in cp.stdout, cp.stdout


def test_not_a_container_could_not_be_checked_exit_1(tmp_path):
    # Not damage (exit 4): there is no container to check.
    p = tmp_path / "x.slab"
    p.write_bytes(os.urandom(50000))
    cp = fsck(p)
    assert cp.returncode == 1 and "not a slabfs container" in cp.stderr, (cp.stdout, cp.stderr)
    assert "DAMAGED" not in cp.stdout


def test_unreadable_inputs_exit_1(tmp_path):
    fails("fsck", tmp_path / "missing.slab")
    fails("fsck", tmp_path)  # a directory
    fails("fsck", code=2)  # no FILE


def test_check_while_a_writer_holds_it_says_so(container):
    build(container)
    with mounted(container) as m:
        with open(m / "a" / "dense", "r+b") as f:
            f.write(b"\x01" * 4096)
            f.flush()
            os.fsync(f.fileno())
        cp = fsck(container)
    assert cp.returncode == 0, cp.stdout
    assert "warning: lock: a writer holds the container" in cp.stdout, cp.stdout
    assert fsck("-q", container).stdout == ""


def test_summary_counts_say_one_thing_in_the_singular(tmp_path):
    c = tmp_path / "one.slab"
    slab("create", c)
    slab("mkdset", c, "/d", "--dtype", "u1", "--shape", "4", "--chunks", "4")
    slab("attr", c, "/d", "units", "m")
    cp = fsck(c)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    out = cp.stdout
    assert "  1 group, 1 dataset, 1 attribute in " in out, out
    assert " 1 groups" not in out and " 1 datasets" not in out and " 1 attributes" not in out, out
    assert "leaked: 0 bytes" in out, out
