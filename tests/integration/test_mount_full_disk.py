"""A full disk under a real mount and under `slab import`: the container
lives on a small tmpfs; writers get ENOSPC (not EIO, not a hang), the
daemon stays up and keeps serving, the container opens afterwards with
every committed byte, a write that failed leaves the size it found, and
once space is freed writing works again. The engine's side of the same is
tests/engine/full_disk_test.cc."""
import errno
import os
import tempfile
import time

import numpy as np
import pytest

from conftest import slab
from mounting import export, mounter  # noqa: F401

MiB = 1 << 20


def append_until_enospc(path, block_size, most, seed, pause_after=None):
    """Appends blocks of noise to path until a write fails, which must be
    with ENOSPC; then fsync and close must succeed. Returns the bytes the
    writes accepted (a short write counts what it took)."""
    rng = np.random.default_rng(seed)
    written = bytearray()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    err = None
    for i in range(most):
        block = rng.integers(0, 255, block_size, dtype="u1").tobytes()
        try:
            n = os.write(fd, block)
        except OSError as e:
            err = e
            break
        written += block[:n]
        if i == pause_after:
            time.sleep(1.5)
    os.fsync(fd)
    os.close(fd)
    assert err is not None and err.errno == errno.ENOSPC, err
    return written


def test_writes_through_the_mount_get_enospc_and_lose_nothing(small_fs, mounter):
    c = os.path.join(small_fs, "c.slab")
    keep = np.random.default_rng(1).integers(0, 255, 2 * MiB, dtype="u1")
    slab("create", c)
    slab("mkdset", c, "/keep", "--dtype", "u1", "--shape", str(keep.size), "--chunks", "65536")
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "k.npy"), keep)
        slab("import", c, "/keep", os.path.join(d, "k.npy"))
    slab("mkdset", c, "/s", "--dtype", "u1", "--shape", "0,65536", "--maxshape", "unlimited,65536",
         "--chunks", "16,65536")
    slab("mkdset", c, "/d", "--dtype", "u1", "--shape", "64,65536", "--chunks", "16,65536")
    m = mounter(c)
    # Append 1 MiB blocks of noise to the stream until the disk is full.
    written = append_until_enospc(m / "s", MiB, 64, seed=2)
    # The failed write took back the rows it grew.
    assert os.path.getsize(m / "s") == len(written)
    # Overwriting whole chunks of the fixed dataset fails too, and the
    # daemon keeps serving: reads, stat, listing.
    with open(m / "d", "r+b") as f:
        with pytest.raises(OSError) as e:
            f.write(b"\x01" * (4 * MiB))
            f.flush()
        assert e.value.errno == errno.ENOSPC
    assert open(m / "keep", "rb").read() == keep.tobytes()
    assert sorted(os.listdir(m.path)) == ["d", "keep", "s"]
    assert "ENOSPC" in m.log() and "EIO" not in m.log()
    assert m.unmount() == 0
    # The container opens, with every byte that was acknowledged.
    assert export(c, "/keep") == keep.tobytes()
    assert export(c, "/s") == bytes(written)
    got = export(c, "/d")
    assert len(got) == 4 * MiB and set(got) <= {0, 1}
    # Space comes back (a dataset removed frees its chunks inside the
    # container): the next mount writes again.
    slab("rm", c, "/keep")
    m = mounter(c)
    with open(m / "s", "ab") as f:
        f.write(b"\x07" * MiB)
    assert os.path.getsize(m / "s") == len(written) + MiB
    assert m.unmount() == 0
    assert export(c, "/s") == bytes(written) + b"\x07" * MiB


def test_slab_import_on_a_full_disk(small_fs, tmp_path):
    c = os.path.join(small_fs, "c.slab")
    slab("create", c)
    slab("mkdset", c, "/keep", "--dtype", "u1", "--shape", "1000", "--chunks", "1000")
    big = tmp_path / "big.bin"
    big.write_bytes(np.random.default_rng(3).integers(0, 255, 32 * MiB, dtype="u1").tobytes())
    slab("mkdset", c, "/big", "--dtype", "u1", "--shape", str(32 * MiB), "--chunks", str(MiB))
    before = slab("ls", "-l", c, "/").stdout
    cp = slab("import", c, "/big", big, check=False)
    assert cp.returncode == 1, cp
    assert "No space left on device" in cp.stderr or "no space" in cp.stderr, cp.stderr
    assert cp.stderr.count("\n") == 1, cp.stderr
    # The import committed nothing: the container is as it was, and opens.
    assert slab("ls", "-l", c, "/").stdout == before
    assert export(c, "/big") == b"\x00" * (32 * MiB)
    # With room again (a smaller dataset), importing works.
    slab("rm", c, "/big")
    slab("mkdset", c, "/small", "--dtype", "u1", "--shape", str(4 * MiB), "--chunks", str(MiB))
    small = tmp_path / "small.bin"
    small.write_bytes(big.read_bytes()[:4 * MiB])
    slab("import", c, "/small", small)
    assert export(c, "/small") == small.read_bytes()


def test_small_writes_get_enospc_when_made_not_at_the_commit(small_fs, mounter):
    """Appends smaller than a chunk are held in the chunk cache until
    write-back; on a disk that cannot take them the write itself is refused
    (engine/space/dirty_room.h), so fsync and close succeed and every byte a
    write accepted is in the container after the unmount."""
    c = os.path.join(small_fs, "c.slab")
    slab("create", c)
    slab("mkdset", c, "/s", "--dtype", "u1", "--shape", "0,65536", "--maxshape", "unlimited,65536",
         "--chunks", "16,65536")  # 1 MiB chunks, written in 64 KiB pieces
    m = mounter(c, "-o", "commit_interval=1")
    # A periodic commit runs after the 101st block, with a chunk half written.
    written = append_until_enospc(m / "s", 65536, 1024, seed=4, pause_after=100)
    assert len(written) > 8 * MiB
    assert os.path.getsize(m / "s") == len(written)
    assert "no space for" in m.log()
    assert m.unmount() == 0
    assert export(c, "/s") == bytes(written)
