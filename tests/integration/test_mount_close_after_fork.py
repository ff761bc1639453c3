"""close(2) after fork(2): a descriptor and its inherited copy share one open
file, and each close of either flushes it. Every close of a written file
must return only once the writes made through it are committed, whichever
process's close took the commit (docs/mount.md, "Commits and durability").

The checks read the container with `slab` (a read-only open sees only the
last commit) right after the parent's close returns, with the daemon
killed (SIGKILL) first, so that only what was committed can show. The
child's commit is made slow (24 MiB through deflate level 9), so that it
is still running when the parent closes."""
import os
import signal
import time

import numpy as np

from conftest import slab
from mounting import container, export, start  # noqa: F401

SIZE = 32 << 20
WRITTEN = 24 << 20


def slow_dataset(c):
    slab("mkdset", c, "/ds", "--dtype", "u1", "--shape", str(SIZE), "--chunks", str(1 << 20),
         "--filters", "shuffle,deflate=9,checksum")


def pattern(seed, n):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def kill_and_reap(m):
    """SIGKILL the daemon right away, then clear the dead mount."""
    m.proc.send_signal(signal.SIGKILL)
    m.proc.wait(timeout=30)
    assert m.unmount() == -signal.SIGKILL


def fork_child_that_closes(fd):
    """Forks a child that closes its copy of fd and exits. Returns its pid
    once the child is about to close (it tells through a pipe)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no Python cleanup, no pytest
        try:
            os.close(r)
            os.write(w, b"x")
            os.close(fd)
        finally:
            os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"x"
    os.close(r)
    return pid


def run_forking_writer(c, more):
    """The parent writes, a child closes its inherited descriptor, the
    parent (optionally) writes more and closes; then the daemon is killed.
    Returns what the parent wrote, by offset."""
    m = start(c, "-o", "commit_interval=0")
    try:
        a = pattern(1, WRITTEN)
        b = pattern(2, 4096)
        fd = os.open(m / "ds", os.O_RDWR)
        os.pwrite(fd, a, 0)
        pid = fork_child_that_closes(fd)
        time.sleep(0.1)  # the child's close is committing now
        if more:
            os.pwrite(fd, b, WRITTEN)
        os.close(fd)
        # Nothing may be lost from here on: close has returned.
        kill_and_reap(m)
        _, status = os.waitpid(pid, 0)
        assert status == 0
    finally:
        m.unmount()
        os.unlink(m.log_path)
    return {0: a, WRITTEN: b} if more else {0: a}


def test_parent_close_after_the_childs_close_commits_its_writes(container):
    slow_dataset(container)
    want = run_forking_writer(container, more=False)
    got = export(container, "/ds")
    for off, data in want.items():
        assert got[off:off + len(data)] == data, f"the parent's write at {off} was not committed at its close"


def test_parent_writes_after_the_childs_close_are_committed_at_its_close(container):
    slow_dataset(container)
    want = run_forking_writer(container, more=True)
    got = export(container, "/ds")
    for off, data in want.items():
        assert got[off:off + len(data)] == data, f"the parent's write at {off} was not committed at its close"
