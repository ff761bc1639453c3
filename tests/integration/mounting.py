"""Real mounts for the integration tests.

`mounted(container, ...)` is a context manager that starts `slabfs -f` on a
temporary mount point, waits until the mount is live and yields a Mount. On
the way out, whatever happened inside, it unmounts (fusermount3 -u, then
umount -l), reaps the daemon (SIGTERM, then SIGKILL) and removes the mount
point it made. The `mounter` fixture does the same for mounts a test opens
itself, so that a failing assertion never leaves a mount or a daemon behind.

    def test_something(mounter, container):
        m = mounter(container, "-o", "ro")
        assert os.path.getsize(m / "a" / "ds") == 240000
"""
import contextlib
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

import numpy as np
import pytest

from conftest import bin_path, slab

MOUNT_TIMEOUT = 20    # seconds for a mount to become live
UNMOUNT_TIMEOUT = 30  # seconds for the daemon to commit and exit
# Extra daemon arguments for every mount, to run the whole suite another
# way: SLABFS_MOUNT_ARGS="-s" or "-o clone_fd,max_threads=2".
EXTRA_ARGS = shlex.split(os.environ.get("SLABFS_MOUNT_ARGS", ""))


class MountFailed(Exception):
    """The daemon exited (or never mounted) instead of serving."""

    def __init__(self, returncode, log):
        super().__init__(f"slabfs exited with {returncode} before mounting:\n{log}")
        self.returncode = returncode
        self.log = log


def _unescape_mount_field(field):
    # /proc/self/mounts escapes space, tab, newline and backslash as \ooo.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def is_mounted(path):
    """Whether path is a mount point, live or dead (a dead FUSE mount fails
    stat with ENOTCONN, so os.path.ismount cannot see it)."""
    path = os.path.realpath(path) if os.path.exists(path) else os.path.abspath(path)
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 1 and _unescape_mount_field(fields[1]) == path:
                return True
    return False


class Mount:
    """A live slabfs mount: the mount point, the daemon and its log."""

    def __init__(self, container, mountpoint, proc, log_path, owns_mountpoint):
        self.container = pathlib.Path(container)
        self.path = pathlib.Path(mountpoint)
        self.proc = proc
        self.log_path = log_path
        self._owns_mountpoint = owns_mountpoint
        self.returncode = None

    def __truediv__(self, other):
        return self.path / other

    def __fspath__(self):
        return str(self.path)

    def log(self):
        """Everything the daemon has written to stdout/stderr so far."""
        try:
            return pathlib.Path(self.log_path).read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def unmount(self):
        """Unmounts and waits for the daemon to exit; returns its exit
        status. Safe to call more than once."""
        if self.returncode is None:
            self.returncode = _teardown(self.path, self.proc)
        if self._owns_mountpoint:
            shutil.rmtree(self.path, ignore_errors=True)
            self._owns_mountpoint = False
        return self.returncode


def _teardown(mountpoint, proc):
    """Unmount and reap, escalating: fusermount3 -u, umount -l, SIGTERM,
    SIGKILL. Returns the daemon's exit status (negative for a signal)."""
    mountpoint = str(mountpoint)
    if is_mounted(mountpoint):
        cp = subprocess.run(["fusermount3", "-u", mountpoint], capture_output=True,
                            text=True, timeout=UNMOUNT_TIMEOUT)
        if cp.returncode != 0 and is_mounted(mountpoint):
            # Busy (a test process still inside) or a dead daemon.
            subprocess.run(["umount", "-l", mountpoint], capture_output=True,
                           timeout=UNMOUNT_TIMEOUT)
    try:
        return proc.wait(timeout=UNMOUNT_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait(timeout=10)
    if is_mounted(mountpoint):
        subprocess.run(["umount", "-l", mountpoint], capture_output=True,
                       timeout=UNMOUNT_TIMEOUT)
    return rc


def start(container, *args, mountpoint=None, wrapper=()):
    """Starts `slabfs CONTAINER MOUNTPOINT -f ARGS...` and waits until the
    mount is live. Returns a Mount; raises MountFailed if the daemon exits
    first (after cleaning up). The caller must call unmount(). wrapper is
    a command put before the daemon's (setpriv ..., to drop a capability)."""
    owns = mountpoint is None
    if owns:
        mountpoint = tempfile.mkdtemp(prefix="slabfs-mnt-")
    fd, log_path = tempfile.mkstemp(prefix="slabfs-log-", suffix=".txt")
    with os.fdopen(fd, "w") as log:
        proc = subprocess.Popen([*wrapper, bin_path("slabfs"), str(container), str(mountpoint), "-f",
                                 *EXTRA_ARGS, *map(str, args)],
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    m = Mount(container, mountpoint, proc, log_path, owns)
    deadline = time.monotonic() + MOUNT_TIMEOUT
    try:
        while not os.path.ismount(mountpoint):
            if proc.poll() is not None:
                raise MountFailed(proc.returncode, m.log())
            if time.monotonic() > deadline:
                raise MountFailed(None, "timed out waiting for the mount\n" + m.log())
            time.sleep(0.02)
    except BaseException:
        m.unmount()
        # The exception carries the log; the file is not needed any more.
        try:
            os.unlink(log_path)
        except OSError:
            pass
        raise
    return m


@contextlib.contextmanager
def mounted(container, *args, mountpoint=None, wrapper=()):
    """with mounted(container, "-o", "ro") as m: ... -- always unmounts."""
    m = start(container, *args, mountpoint=mountpoint, wrapper=wrapper)
    try:
        yield m
    finally:
        rc = m.unmount()
        log = m.log()
        try:
            os.unlink(m.log_path)
        except OSError:
            pass
    if rc != 0:
        pytest.fail(f"slabfs for {m.path} exited with {rc}:\n{log}")


def try_mount(container, *args, mountpoint=None, timeout=MOUNT_TIMEOUT):
    """Runs a mount that is expected to fail. Returns (returncode, output).
    If it mounts after all, it is unmounted and the test fails."""
    try:
        m = start(container, *args, mountpoint=mountpoint)
    except MountFailed as e:
        return e.returncode, e.log
    log = m.log()
    m.unmount()
    os.unlink(m.log_path)
    pytest.fail(f"slabfs mounted {container} but should have refused:\n{log}")


@pytest.fixture
def mounter():
    """mounter(container, *args) -> Mount; every mount is unmounted when the
    test ends, passed or failed."""
    mounts = []

    def mount(container, *args, mountpoint=None):
        m = start(container, *args, mountpoint=mountpoint)
        mounts.append(m)
        return m

    yield mount
    errors = []
    for m in reversed(mounts):
        try:
            # A clean unmount exits 0; anything else (a failed final commit,
            # a crash, a sanitizer report) fails the test.
            rc = m.unmount()
            if rc != 0:
                errors.append(f"slabfs for {m.path} exited with {rc}:\n{m.log()}")
        except Exception as e:  # keep unmounting the others
            errors.append(f"{m.path}: {e}")
    for m in mounts:
        # Shown by pytest only when the test failed.
        print(f"---- slabfs log for {m.path} (exit {m.returncode}) ----\n{m.log()}")
        try:
            os.unlink(m.log_path)
        except OSError:
            pass
    if errors:
        pytest.fail("unmount failed: " + "; ".join(errors))


# ------------------------------------------------------------ building data

@pytest.fixture
def container(tmp_path):
    """An empty container file, made by `slab create`."""
    path = tmp_path / "c.slab"
    slab("create", path)
    return path


def dtype_name(dtype):
    """numpy dtype -> the slab spelling: '<f4' -> 'f4', '|u1' -> 'u1'."""
    return np.dtype(dtype).str[1:]


def make_dataset(container, path, array, chunks, fill=None):
    """Creates dataset `path` (and missing parent groups) in `container`
    with `array`'s dtype and shape, and imports `array` into it, through
    the slab CLI. Returns the bytes the mount should show (C order, LE)."""
    array = np.ascontiguousarray(array, dtype=np.dtype(array.dtype).newbyteorder("<"))
    args = ["mkdset", "-p", container, path, "--dtype", dtype_name(array.dtype),
            "--shape", ",".join(map(str, array.shape)),
            "--chunks", ",".join(map(str, chunks))]
    if fill is not None:
        args += ["--fill", str(fill)]
    slab(*args)
    with tempfile.TemporaryDirectory() as d:
        npy = os.path.join(d, "data.npy")
        np.save(npy, array)
        slab("import", container, path, npy)
    return array.tobytes()


def make_empty_dataset(container, path, dtype, shape, chunks, fill=None):
    """Creates a dataset that holds only its fill value."""
    args = ["mkdset", "-p", container, path, "--dtype", dtype_name(dtype),
            "--shape", ",".join(map(str, shape)), "--chunks", ",".join(map(str, chunks))]
    if fill is not None:
        args += ["--fill", str(fill)]
    slab(*args)


def export(container, path):
    """The dataset's bytes as `slab export` writes them (raw)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.bin")
        slab("export", container, path, out)
        with open(out, "rb") as f:
            return f.read()
