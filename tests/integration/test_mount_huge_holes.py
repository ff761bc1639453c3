"""Holes cost nothing, through a real mount: a u1 dataset of 2^62 bytes
(chunks of 1 MiB: 2^42 chunks, a b-tree index) holding a few bytes far
apart. lseek SEEK_DATA/SEEK_HOLE walked over the whole file finds exactly
the 4 KiB regions of those bytes, user.slab.defined counts them, and
`slab defined` and `slab info` list them, and a punch over all but the
last byte leaves only that byte; each call has a generous timeout (run in
a child process that is killed past it), where walking the empty chunk grid
took 0.07-0.7 s per TiB, days to a month for 2^62 bytes. A long walk is
interruptible: a SEEK_HOLE through tens of thousands of stored chunks,
pestered by a timer signal, ends with EINTR instead of finishing first."""
import json
import os
import subprocess
import sys
import textwrap
import time

from conftest import mpath, slab
from mounting import container, mounter  # noqa: F401

HUGE = 1 << 62
REGION = 4096
TIMEOUT = 60  # seconds for a walk over the whole file; it takes milliseconds


def mkdset(c, path, *extra, shape=HUGE, chunks=1 << 20):
    slab("mkdset", c, path, "--dtype", "u1", "--shape", str(shape), "--chunks", str(chunks), *extra)


# A child process walks the data regions with SEEK_DATA/SEEK_HOLE until
# ENXIO and prints them as JSON: a walk that hangs is killed at the timeout
# instead of hanging the test run.
WALK = textwrap.dedent("""
    import errno, json, os, sys
    fd = os.open(sys.argv[1], os.O_RDONLY)
    regions, pos = [], 0
    while True:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            assert e.errno == errno.ENXIO, e
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        regions.append([start, end])
        pos = end
    # And from inside a region, and inside a hole.
    extra = []
    for start, end in regions:
        extra.append([os.lseek(fd, start + 1, os.SEEK_DATA), os.lseek(fd, start + 1, os.SEEK_HOLE)])
    print(json.dumps({"regions": regions, "inside": extra}))
""")


def walk_regions(path):
    t0 = time.monotonic()
    cp = subprocess.run([sys.executable, "-c", WALK, path], capture_output=True, text=True,
                        timeout=TIMEOUT)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout), time.monotonic() - t0


def expected_regions(offsets):
    """The 4 KiB regions holding the given bytes, merged, as [start, end]."""
    out = []
    for r in sorted({o // REGION for o in offsets}):
        if out and out[-1][1] == r * REGION:
            out[-1][1] += REGION
        else:
            out.append([r * REGION, r * REGION + REGION])
    return out


def test_seek_walks_a_2_to_62_byte_sparse_file_in_a_few_calls(container, mounter):
    c = container
    mkdset(c, "/huge", "--sparse")
    mkdset(c, "/dense")
    offsets = [3 * (1 << 20) + 7, 1 << 40, (1 << 61) + 5, HUGE - 1]
    m = mounter(c)
    for name in ("huge", "dense"):
        p = mpath(m, "/" + name)
        assert os.path.getsize(p) == HUGE
        fd = os.open(p, os.O_WRONLY)
        try:
            for o in offsets:
                assert os.pwrite(fd, b"\x2a", o) == 1
            os.fsync(fd)
        finally:
            os.close(fd)

    got, seconds = walk_regions(mpath(m, "/huge"))
    assert got["regions"] == expected_regions(offsets)
    for (start, end), (data, hole) in zip(got["regions"], got["inside"]):
        assert data == start + 1 and hole == end
    print(f"sparse: {len(got['regions'])} regions of a 2^62-byte file in {seconds:.3f} s")
    assert int(os.getxattr(mpath(m, "/huge"), "user.slab.defined")) == len(offsets)

    # Dense: the holes are the chunks not stored; each written byte stored
    # its whole 1 MiB chunk.
    chunk = 1 << 20
    got, seconds = walk_regions(mpath(m, "/dense"))
    assert got["regions"] == [[o // chunk * chunk, o // chunk * chunk + chunk] for o in offsets]
    print(f"dense: {len(got['regions'])} regions in {seconds:.3f} s")
    assert int(os.getxattr(mpath(m, "/dense"), "user.slab.defined")) == len(offsets) * chunk

    # The CLI (read-only, beside the mount, as of the last commit).
    d = json.loads(slab("defined", "--json", c, "/huge", timeout=TIMEOUT).stdout)
    assert d["elements"] == len(offsets)
    assert [b["start"][0] for b in d["boxes"]] == offsets
    info = json.loads(slab("info", "--json", c, "/dense", timeout=TIMEOUT).stdout)
    assert info["defined_elements"] == len(offsets) * chunk

    # Punching a hole over all of it but the last byte erases the stored
    # chunks in it, not the 2^42 chunks of the grid. (The dense dataset
    # keeps its last chunk stored, the rest of it set to the fill value.)
    for name, last in (("huge", REGION), ("dense", chunk)):
        p = mpath(m, "/" + name)
        subprocess.run([sys.executable, "-c", PUNCH, p, str(HUGE - 1)], check=True, timeout=TIMEOUT)
        got, _ = walk_regions(p)
        assert got["regions"] == [[HUGE - last, HUGE]], name
    assert int(os.getxattr(mpath(m, "/huge"), "user.slab.defined")) == 1


PUNCH = textwrap.dedent("""
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fd = os.open(sys.argv[1], os.O_RDWR)
    # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
    if libc.fallocate(fd, 0x02 | 0x01, 0, int(sys.argv[2])) != 0:
        raise OSError(ctypes.get_errno(), "fallocate")
    os.fsync(fd)
""")


# A child that calls lseek(SEEK_HOLE) with a timer signal every 2 ms (a
# handler installed, so the call is interrupted, not the process) and
# reports how many calls ended with EINTR before one answered.
INTERRUPTED = textwrap.dedent("""
    import ctypes, errno, json, os, signal, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    libc.lseek.restype = ctypes.c_int64
    libc.lseek.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int]
    fd = os.open(sys.argv[1], os.O_RDONLY)
    t0 = time.monotonic()
    quiet = libc.lseek(fd, 0, os.SEEK_HOLE)
    quiet_s = time.monotonic() - t0
    signal.signal(signal.SIGALRM, lambda *a: None)
    signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
    eintr, answer = 0, -1
    while eintr < 1000:
        r = libc.lseek(fd, 0, os.SEEK_HOLE)
        if r >= 0:
            answer = r
            break
        e = ctypes.get_errno()
        assert e == errno.EINTR, os.strerror(e)
        eintr += 1
    signal.setitimer(signal.ITIMER_REAL, 0)
    print(json.dumps({"quiet": quiet, "quiet_s": quiet_s, "eintr": eintr, "answer": answer}))
""")


def test_a_long_seek_is_interrupted_by_a_signal(container, mounter):
    c = container
    # 64 Ki sparse chunks of 256 bytes, every byte defined: SEEK_HOLE from 0
    # walks all of them (each a read of its defined set) to the end.
    n = 1 << 24
    mkdset(c, "/many", "--sparse", shape=n, chunks=256)
    m = mounter(c)
    p = mpath(m, "/many")
    with open(p, "r+b") as f:
        block = b"\x01" * (1 << 20)
        for off in range(0, n, len(block)):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    cp = subprocess.run([sys.executable, "-c", INTERRUPTED, p], capture_output=True, text=True,
                        timeout=TIMEOUT * 5)
    assert cp.returncode == 0, cp.stderr
    r = json.loads(cp.stdout)
    print(r)
    assert r["quiet"] == n  # no hole before the end
    if r["quiet_s"] < 0.05:
        # Too fast for a 2 ms timer to catch reliably on this machine.
        assert r["answer"] in (n, -1)
        return
    assert r["eintr"] >= 1, r
    # The daemon keeps serving.
    fd = os.open(p, os.O_RDONLY)
    try:
        assert os.lseek(fd, 5, os.SEEK_DATA) == 5
    finally:
        os.close(fd)
