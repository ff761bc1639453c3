"""The daemon's life: the command line, mounts that must fail (missing file,
not a container, truncated, corrupted, locked by another writer) and leave
the file as it was, read-only mounts, background mode, and the commit at
unmount and on SIGTERM."""
import errno
import hashlib
import os
import signal
import subprocess
import tempfile
import time

import numpy as np
import pytest

from conftest import bin_path, expect_errno, mpath, run, slab
from mounting import (MountFailed, container, export, is_mounted, make_dataset,  # noqa: F401
                      mounted, mounter, start, try_mount)


def start_ro(c):
    return start(c, "-o", "ro")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def filled(container):
    make_dataset(container, "/g/ds", np.arange(4096, dtype="<i4").reshape(64, 64), (16, 16))
    return container


# ------------------------------------------------------------ refused mounts

def test_second_read_write_mount_is_refused_naming_the_holder(filled, mounter):
    first = mounter(filled)
    before = sha256(filled)
    rc, log = try_mount(filled)
    assert rc not in (0, None)
    assert "busy" in log.lower()
    assert "slabfs" in log.split("busy", 1)[-1]  # the holder, after the code
    assert f"pid {first.proc.pid}" in log, log
    # The first mount is unharmed.
    assert os.listdir(first.path) == ["g"]
    assert sha256(filled) == before


def test_writing_cli_command_is_refused_while_mounted(filled, mounter):
    m = mounter(filled)
    cp = slab("attr", filled, "/g", "k", "v", check=False)
    assert cp.returncode != 0
    assert "slabfs" in cp.stderr, cp.stderr
    # Reading is fine: read-only opens take no lock.
    assert export(filled, "/g/ds") == np.arange(4096, dtype="<i4").tobytes()
    assert os.path.ismount(m.path)


def test_read_only_mount_next_to_a_writer(filled, mounter):
    rw = mounter(filled)
    ro = mounter(filled, "-o", "ro")
    assert open(mpath(ro, "/g/ds"), "rb").read() == open(mpath(rw, "/g/ds"), "rb").read()


def corrupt_superblocks(path):
    # Both superblock slots (at 0 and 4096, 128 bytes each): keep the magic,
    # break the rest, so that no valid superblock remains.
    with open(path, "r+b") as f:
        for slot in (0, 4096):
            f.seek(slot + 16)
            block = bytearray(f.read(64))
            f.seek(slot + 16)
            f.write(bytes(b ^ 0x5A for b in block))


@pytest.mark.parametrize("kind", ["missing", "empty", "not_a_container", "truncated",
                                  "corrupted", "directory"])
def test_bad_container_fails_cleanly_and_is_left_unchanged(kind, filled, tmp_path):
    target = tmp_path / "target.slab"
    if kind == "missing":
        pass
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "not_a_container":
        target.write_bytes(np.random.default_rng(3).integers(0, 256, 100000,
                                                             dtype=np.uint8).tobytes())
    elif kind == "truncated":
        data = filled.read_bytes()
        target.write_bytes(data[:len(data) // 2])
    elif kind == "corrupted":
        target.write_bytes(filled.read_bytes())
        corrupt_superblocks(target)
    elif kind == "directory":
        target.mkdir()
    before = sha256(target) if target.is_file() else None
    mp = tempfile.mkdtemp(prefix="slabfs-mnt-")
    try:
        rc, log = try_mount(target, mountpoint=mp)
        assert not is_mounted(mp)
    finally:
        os.rmdir(mp)
    assert rc not in (0, None), log
    assert "slabfs: " in log, log
    assert "cannot open the container" in log
    assert str(target) in log, log
    if kind == "missing":
        assert not target.exists()
        assert "not found" in log.lower() or "no such file" in log.lower()
    elif kind in ("empty", "not_a_container"):
        assert "not a slabfs container" in log
    elif kind == "truncated":
        assert "truncated" in log or "corruption" in log
    elif kind == "corrupted":
        assert "corruption" in log
    if before is not None:
        assert sha256(target) == before


@pytest.mark.parametrize("args,needle", [
    ([], "missing CONTAINER"),
    (["only.slab"], "MOUNTPOINT"),
    (["x.slab", "/nonexistent/mountpoint"], "nonexistent"),
    (["x.slab", "{mp}", "-o", "cache_size=lots"], "cache_size"),
    (["x.slab", "{mp}", "-o", "commit_interval=-1"], "commit_interval"),
    (["x.slab", "{mp}", "-o", "log_level=loud"], "log_level"),
    (["x.slab", "{mp}", "extra"], ""),
])
def test_bad_command_lines(args, needle, tmp_path):
    args = [a.replace("{mp}", str(tmp_path)) for a in args]
    cp = run(bin_path("slabfs"), *args, check=False, timeout=30)
    assert cp.returncode not in (0,), cp
    assert needle in cp.stderr, cp.stderr
    assert not is_mounted(tmp_path)


def test_unknown_mount_option_is_refused(filled, tmp_path):
    rc, log = try_mount(filled, "-o", "no_such_option=1", mountpoint=tmp_path)
    assert rc not in (0, None)
    assert "no_such_option" in log
    # The container was opened and closed again without a change.
    slab("attr", filled, "/g", "k", "v")


def test_help_and_version():
    cp = run(bin_path("slabfs"), "--help")
    for word in ("CONTAINER MOUNTPOINT", "cache_size", "commit_interval", "log_level", "-o ro"):
        assert word in cp.stdout, word
    cp = run(bin_path("slabfs"), "-V")
    assert "slabfs" in cp.stdout


# ------------------------------------------------------------ read-only mounts

def test_read_only_mount_refuses_every_change(filled, mounter):
    before = sha256(filled)
    m = mounter(filled, "-o", "ro")
    ds = mpath(m, "/g/ds")
    assert open(ds, "rb").read() == np.arange(4096, dtype="<i4").tobytes()
    assert os.stat(ds).st_mode & 0o777 == 0o444
    expect_errno(errno.EROFS, os.open, ds, os.O_WRONLY)
    expect_errno(errno.EROFS, os.open, ds, os.O_RDWR)
    expect_errno(errno.EROFS, os.truncate, ds, 0)
    expect_errno(errno.EROFS, os.mkdir, mpath(m, "/new"))
    expect_errno(errno.EROFS, os.unlink, ds)
    expect_errno(errno.EROFS, os.rmdir, mpath(m, "/g"))
    expect_errno(errno.EROFS, os.rename, ds, mpath(m, "/g/ds2"))
    cp = subprocess.run(["dd", f"of={ds}", "conv=notrunc", "status=none"], input=b"x",
                        capture_output=True)
    assert cp.returncode != 0 and b"Read-only file system" in cp.stderr
    assert m.unmount() == 0
    assert sha256(filled) == before


def test_read_only_mount_does_not_lock(filled, mounter):
    mounter(filled, "-o", "ro")
    slab("attr", filled, "/g", "k", "v")  # a writer may open the file meanwhile


# ------------------------------------------------------------ commits and endings

def test_unmount_commits(filled, mounter):
    m = mounter(filled, "-o", "commit_interval=0")
    os.mkdir(mpath(m, "/made_while_mounted"))
    os.setxattr(mpath(m, "/g"), "user.note", b"kept")
    assert m.unmount() == 0
    assert "made_while_mounted" in slab("ls", filled, "/").stdout
    assert "kept" in slab("attr", filled, "/g", "note").stdout


def test_sigterm_unmounts_and_commits(filled, mounter):
    m = mounter(filled, "-o", "commit_interval=0")
    os.mkdir(mpath(m, "/before_sigterm"))
    m.proc.send_signal(signal.SIGTERM)
    assert m.proc.wait(timeout=30) == 0
    assert not is_mounted(m.path)
    assert "before_sigterm" in slab("ls", filled, "/").stdout


def test_remount_shows_the_same_bytes(filled, mounter):
    m = mounter(filled)
    first = open(mpath(m, "/g/ds"), "rb").read()
    assert m.unmount() == 0
    m = mounter(filled)
    assert open(mpath(m, "/g/ds"), "rb").read() == first


def test_options_are_applied(filled, mounter):
    m = mounter(filled, "-o", "cache_size=1M,commit_interval=1,log_level=debug", "-s")
    assert open(mpath(m, "/g/ds"), "rb").read() == np.arange(4096, dtype="<i4").tobytes()
    with pytest.raises(OSError):
        os.stat(mpath(m, "/nope"))
    m.unmount()
    assert "lookup" in m.log()  # debug lines include quiet refusals


def test_log_level_error_silences_refusals(filled, mounter):
    m = mounter(filled, "-o", "log_level=error")
    expect_errno(errno.ENOTEMPTY, os.rmdir, mpath(m, "/g"))
    m.unmount()
    assert "ENOTEMPTY" not in m.log()


def test_refusals_are_logged_with_op_object_and_reason(filled, mounter):
    m = mounter(filled)
    expect_errno(errno.ENOTEMPTY, os.rmdir, mpath(m, "/g"))
    expect_errno(errno.EINVAL, os.truncate, mpath(m, "/g/ds"), 3)
    m.unmount()
    log = m.log()
    assert any("rmdir" in line and "/g" in line and "ENOTEMPTY" in line
               for line in log.splitlines()), log
    assert any("truncate" in line and "/g/ds" in line and "EINVAL" in line
               for line in log.splitlines()), log


# ------------------------------------------------------------ background mode

def find_daemon(container):
    """PIDs of slabfs processes serving `container` (from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"slabfs") and os.fsencode(str(container)) in argv:
            pids.append(int(entry))
    return pids


def wait_gone(pid, timeout=30):
    deadline = time.monotonic() + timeout
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return not os.path.exists(f"/proc/{pid}")


def test_background_mode_detaches_after_mounting(filled, tmp_path):
    mp = tmp_path / "mnt"
    mp.mkdir()
    cp = run(bin_path("slabfs"), filled, mp, "-o", "commit_interval=0", timeout=60)
    pids = []
    try:
        assert cp.returncode == 0
        assert os.path.ismount(mp)  # live by the time the parent exits
        pids = find_daemon(filled)
        assert len(pids) == 1
        os.mkdir(mp / "bg")
    finally:
        if is_mounted(mp):
            subprocess.run(["fusermount3", "-u", str(mp)], timeout=60)
        if is_mounted(mp):
            subprocess.run(["umount", "-l", str(mp)], timeout=60)
        for pid in pids or find_daemon(filled):
            if not wait_gone(pid):
                os.kill(pid, signal.SIGKILL)
                wait_gone(pid)
    assert "bg" in slab("ls", filled, "/").stdout


def test_background_mode_reports_failures(tmp_path):
    cp = run(bin_path("slabfs"), tmp_path / "missing.slab", tmp_path, check=False, timeout=60)
    assert cp.returncode != 0
    assert "cannot open the container" in cp.stderr
    assert not is_mounted(tmp_path)


@pytest.mark.parametrize("seed,flips", [(1, 40), (2, 40), (3, 3), (4, 3), (5, 1), (6, 1),
                                        (7, 1), (8, 1)])
def test_damaged_container_gives_errors_never_a_crash(container, seed, flips):
    """Bytes flipped anywhere past the superblocks: the mount either refuses
    the file or serves it, and then every read answers with data or EIO,
    never a crash, and the file is left as it was."""
    rng = np.random.default_rng(seed)
    for i in range(3):
        make_dataset(container, f"/g{i}/ds", rng.standard_normal((64, 48)).astype("<f4"),
                     (16, 16))
    slab("attr", container, "/g0", "note", "hello")
    data = bytearray(container.read_bytes())
    for off in rng.integers(12288, len(data), flips):
        data[off] ^= 0xFF
    container.write_bytes(bytes(data))
    before = sha256(container)
    try:
        m = start_ro(container)
    except MountFailed as e:
        assert e.returncode not in (0, None) and "slabfs: " in e.log
        assert sha256(container) == before
        return
    errors = []
    try:
        for dirpath, dirnames, filenames in os.walk(m.path, onerror=errors.append):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                try:
                    os.listxattr(p)
                    if name in filenames:
                        with open(p, "rb") as f:
                            f.read()
                except OSError as e:
                    errors.append(e)
        for e in errors:
            assert e.errno in (errno.EIO, errno.ENOENT, errno.ENODATA), e
        assert os.path.ismount(m.path)  # the daemon is still serving
        print(f"served, {len(errors)} errors: {errors[:3]}")
    finally:
        rc = m.unmount()
        log = m.log()
        os.unlink(m.log_path)
    assert rc == 0, log
    assert sha256(container) == before
