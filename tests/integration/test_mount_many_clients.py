"""Many readers and writers through one mount: 8 reader and 2 writer
processes for a while (SLABFS_STRESS_SECONDS, default 8; set it to 300 for
the long version) on shared and separate datasets, dense and filtered.

Every element a writer writes encodes where it is and which version of its
row it belongs to (row << 48 | version << 16 | column), so every read can be
checked without locks: each element must be 0 (never written) or encode
exactly its own row and column and a version that its writer has already
started. Writers own alternate rows of the shared datasets and one dataset
each; they fsync now and then. After the run, and after a remount, every
row holds its writer's last version."""
import multiprocessing as mp
import os
import random
import time

import numpy as np

from conftest import slab
from mounting import container, export, mounter  # noqa: F401

ROWS, COLS = 256, 512  # u8: a row is 4 KiB
DATASETS = ("/shared", "/g/shared_filtered", "/w0", "/w1")
SECONDS = float(os.environ.get("SLABFS_STRESS_SECONDS", "8"))


def encode(row, version, cols=COLS):
    return (np.uint64(row) << np.uint64(48)) | (np.uint64(version) << np.uint64(16)) | np.arange(cols, dtype="<u8")


def check_row(name, row, data, started):
    """Raises if a row read back holds anything but zeros or its own
    elements of a version its writer has begun."""
    if not data.any():
        return 0
    got_row = data >> np.uint64(48)
    version = (data >> np.uint64(16)) & np.uint64(0xFFFFFFFF)
    col = data & np.uint64(0xFFFF)
    zero = data == 0
    bad = ~zero & ((got_row != row) | (col != np.arange(COLS, dtype="<u8")) | (version > started) | (version == 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise AssertionError(f"{name} row {row} col {i}: {int(data[i]):#x} (writer at version {started})")
    return int(version.max())


def writer(mnt, k, stop, versions, fsyncs):
    rng = random.Random(k)
    fds = {n: os.open(mnt + n, os.O_WRONLY) for n in DATASETS}
    mine = [n for n in DATASETS if n in ("/shared", "/g/shared_filtered", f"/w{k}")]
    version = 0
    while not stop.is_set():
        version += 1
        versions[k] = version  # announced before any of its bytes are written
        for _ in range(8):
            name = rng.choice(mine)
            row = rng.randrange(ROWS)
            if name != f"/w{k}" and row % 2 != k:
                row = row ^ 1  # shared datasets: writer k owns rows with row % 2 == k
            os.pwrite(fds[name], encode(row, version).tobytes(), row * COLS * 8)
        if version % 20 == 0:
            os.fsync(fds[mine[0]])
            fsyncs[k] += 1
    for fd in fds.values():
        os.fsync(fd)
        os.close(fd)


def reader(mnt, seed, stop, versions, counts, errors):
    rng = random.Random(seed)
    fds = {n: os.open(mnt + n, os.O_RDONLY) for n in DATASETS}
    n = 0
    try:
        while not stop.is_set():
            name = rng.choice(DATASETS)
            row = rng.randrange(ROWS)
            owner = int(name[-1]) if name.startswith("/w") else row % 2
            data = np.frombuffer(os.pread(fds[name], COLS * 8, row * COLS * 8), dtype="<u8")
            # Read after the data: a writer announces a version before it
            # writes any of it, so no element may be newer than this.
            started = versions[owner]
            check_row(name, row, data, started)
            n += 1
    except Exception as e:  # noqa: BLE001 -- reported to the test
        errors.put(f"reader {seed}: {e}")
    finally:
        counts[seed] = n
        for fd in fds.values():
            os.close(fd)


def last_versions(c):
    out = {}
    for name in DATASETS:
        a = np.frombuffer(export(c, name), dtype="<u8").reshape(ROWS, COLS)
        for row in range(ROWS):
            out[(name, row)] = check_row(name, row, a[row], 1 << 31)
    return out


def test_eight_readers_and_two_writers(container, mounter):
    for name in DATASETS:
        args = ["mkdset", "-p", container, name, "--dtype", "u8", "--shape", f"{ROWS},{COLS}", "--chunks",
                f"16,{COLS}"]
        if "filtered" in name:
            args += ["--filters", "shuffle,deflate=1,checksum"]
        slab(*args)
    m = mounter(container, "-o", "cache_size=4M,commit_interval=1")
    mnt = str(m.path)
    ctx = mp.get_context("fork")
    stop = ctx.Event()
    versions = ctx.Array("q", 2)
    fsyncs = ctx.Array("q", 2)
    counts = ctx.Array("q", 8)
    errors = ctx.Queue()
    procs = [ctx.Process(target=writer, args=(mnt, k, stop, versions, fsyncs)) for k in range(2)]
    procs += [ctx.Process(target=reader, args=(mnt, s, stop, versions, counts, errors)) for s in range(8)]
    for p in procs:
        p.start()
    time.sleep(SECONDS)
    stop.set()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0, (p.name, p.exitcode)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert not problems, "\n".join(problems)
    assert min(counts) > 50, list(counts)      # every reader checked plenty
    assert min(versions) > 20, list(versions)  # and both writers got far
    assert min(fsyncs) > 0
    print(f"{SECONDS:.0f} s: reads checked {list(counts)}, writer versions {list(versions)}, fsyncs {list(fsyncs)}")
    # What the mount shows now is every writer's work; after the unmount
    # and a remount, the same.
    through_mount = {}
    for name in DATASETS:
        a = np.frombuffer(open(mnt + name, "rb").read(), dtype="<u8").reshape(ROWS, COLS)
        for row in range(ROWS):
            through_mount[(name, row)] = check_row(name, row, a[row], 1 << 31)
    assert m.unmount() == 0
    assert last_versions(container) == through_mount
    m = mounter(container, "-o", "ro")
    for name in ("/shared", "/w1"):
        a = np.frombuffer(open(str(m.path) + name, "rb").read(), dtype="<u8").reshape(ROWS, COLS)
        for row in range(ROWS):
            assert check_row(name, row, a[row], 1 << 31) == through_mount[(name, row)]
    assert m.unmount() == 0
