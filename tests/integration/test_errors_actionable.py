"""Errors a person can act on (issue 20, items 11-13), through the real
tools: where the daemon's log goes (-o log_file) and the last refusal's
reason on the mount (getfattr -n user.slab.last_error); "not a slabfs
container" from slabfs, slab and Python for a file that is not one;
messages that name paths, not internal ids; `slab frobnicate`; `slab
create` in a missing directory; mounts refused over a non-empty directory
(-o nonempty allows) or an existing mount; umount-slabfs given a relative
mount point waits for the daemon.

The tests that run the daemon in the background (as a user does, without
-f) find it by the container path in its command line and always unmount
and reap it."""
import errno
import fcntl
import json
import os
import pathlib
import re
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import ROOT, bin_path, fails, mpath, run, slab
from mounting import (container, is_mounted, make_dataset, make_empty_dataset,  # noqa: F401
                      mounter, try_mount)

UMOUNT_SLABFS = ROOT / "mount_scripts" / "umount-slabfs"
# "dataset 2: dimension 0 cannot grow": an id the user never sees.
DATASET_ID = re.compile(r"dataset \d")
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
F_GETPIPE_SZ = 1032  # fcntl.F_GETPIPE_SZ from Python 3.10


def last_error(mountpoint):
    return run("getfattr", "--only-values", "-n", "user.slab.last_error", mountpoint).stdout


def write_past_the_end(path, nbytes):
    """dd appending to a dataset that cannot grow: refused with EFBIG."""
    cp = run("dd", "if=/dev/zero", f"of={path}", f"bs={nbytes}", "count=1", "oflag=append",
             "conv=notrunc", check=False)
    assert cp.returncode != 0 and "File too large" in cp.stderr, cp
    return cp


# ------------------------------------------------- background daemons

def daemons_of(container):
    """PIDs of live slabfs processes whose command line names `container`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"slabfs" and str(container).encode() in argv:
            pids.append(int(entry))
    return pids


def exited(pid):
    """Whether the process is gone or a zombie (exited, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def stop_background(mountpoint, pids):
    """Cleanup for a daemon started without -f: unmount, then reap."""
    if is_mounted(mountpoint):
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True, timeout=60)
    for pid in pids:
        deadline = time.monotonic() + 30
        while not exited(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not exited(pid):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------ item 11

def test_the_last_refusal_is_on_the_root_and_in_the_log_file(container, mounter, tmp_path):
    make_empty_dataset(container, "/run/temp", "u1", (10,), (10,))
    log = tmp_path / "logs" / "slabfs.log"
    log.parent.mkdir()
    m = mounter(container, "-o", f"log_file={log}")
    assert last_error(m.path) == ""

    write_past_the_end(mpath(m, "/run/temp"), 20)
    reason = last_error(m.path)
    assert re.fullmatch(STAMP + r" write /run/temp \[10, \+20\) refused \(EFBIG\): .*", reason), reason
    assert "/run/temp: write of 20 bytes at offset 10 reaches past the end" in reason, reason
    # The same line, with its date and time, in the log file.
    text = log.read_text()
    assert re.search(r"^" + STAMP + r"\.\d{3} slabfs\[\d+\]: info: write /run/temp \[10, \+20\) refused "
                     r"\(EFBIG\): ", text, re.M), text

    # Ordinary answers do not hide it: a missing name, an absent attribute.
    assert run("ls", mpath(m, "/run/missing"), check=False).returncode != 0
    assert run("stat", mpath(m, "/nothing/here"), check=False).returncode != 0
    assert run("getfattr", "-n", "user.absent", mpath(m, "/run/temp"), check=False).returncode != 0
    assert last_error(m.path) == reason

    # Read by name, never listed (rsync -aX and cp -a would try to set it).
    assert "user.slab.last_error" not in os.listxattr(m.path)
    assert "last_error" not in run("getfattr", "-d", "-m", "-", m.path).stdout

    # The next refusal replaces it.
    assert run("truncate", "-s", "5", mpath(m, "/run/temp"), check=False).returncode != 0
    later = last_error(m.path)
    assert later != reason and "/run/temp" in later and "(EINVAL)" in later, later
    assert not DATASET_ID.search(later), later
    assert later.split(" ", 2)[2] in log.read_text()


def test_a_background_daemon_logs_to_its_log_file(container, tmp_path):
    make_empty_dataset(container, "/run/temp", "u1", (10,), (10,))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = tmp_path / "slabfs.log"
    cp = run(bin_path("slabfs"), container, mnt, "-o", f"log_file={log}", check=False, timeout=60)
    pids = daemons_of(container)
    try:
        assert cp.returncode == 0, cp.stderr
        assert len(pids) == 1
        write_past_the_end(mnt / "run" / "temp", 20)
        # Flushed line by line: there while the daemon still runs.
        assert "write /run/temp [10, +20) refused (EFBIG)" in log.read_text()
        assert "refused (EFBIG)" in last_error(mnt)
    finally:
        stop_background(mnt, pids)
    # The last lines too: the unmount's.
    assert log.read_text().count("slabfs[") >= 2


def test_help_says_where_the_log_goes():
    out = run(bin_path("slabfs"), "--help").stdout
    for words in ("-o log_file=PATH", "syslog", "journalctl", "user.slab.last_error", "-o nonempty"):
        assert words in out, words


def test_a_log_file_that_cannot_be_opened_is_refused_before_mounting(container, tmp_path):
    bad = tmp_path / "no" / "such" / "dir" / "slabfs.log"
    rc, out = try_mount(container, "-o", f"log_file={bad}")
    assert rc == 1, out
    assert f"cannot open the log file {bad}" in out, out


# ------------------------------------------------------------ item 12

@pytest.fixture
def junk(tmp_path):
    path = tmp_path / "notacontainer.bin"
    path.write_bytes(np.random.default_rng(12).bytes(20000))
    return path


def test_a_file_that_is_not_a_container_says_so(junk, tmp_path):
    mp = tmp_path / "mnt"
    mp.mkdir()
    rc, out = try_mount(junk, mountpoint=mp)
    assert rc == 1, out
    assert f"{junk} is not a slabfs container" in out, out
    assert "corruption" not in out.lower() and "damage" not in out.lower(), out
    assert not is_mounted(mp)
    for args in (["ls", junk], ["info", junk, "/"], ["export", junk, "/x", tmp_path / "x.npy"],
                 ["mkgroup", junk, "/g"]):
        cp = fails(*args)
        assert "not a slabfs container" in cp.stderr, (args, cp.stderr)
        assert "corruption" not in cp.stderr.lower(), (args, cp.stderr)


def python_with_binding(code, *args):
    """Runs Python code against the built binding (skips if not built)."""
    package = pathlib.Path(bin_path("slabfs")).parent.parent / "python"
    if not list(package.glob("slabfs/_slabfs*.so")):
        pytest.skip("the Python binding is not built")
    env = dict(os.environ, PYTHONPATH=str(package))
    cp = subprocess.run(["/usr/bin/python3", "-c", code, *map(str, args)], capture_output=True, text=True,
                        env=env, timeout=120)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def test_python_says_not_a_container_as_an_oserror(junk):
    code = """if True:
        import json, sys, slabfs
        try:
            slabfs.File(sys.argv[1])
        except Exception as e:
            print(json.dumps([type(e).__name__, isinstance(e, OSError), getattr(e, "errno", None), str(e)]))
        """
    name, is_oserror, code_, text = python_with_binding(code, junk)
    # As h5py for a file that is not HDF5: OSError; ENOTSUP, not EIO.
    assert is_oserror, name
    assert code_ == errno.ENOTSUP, (code_, text)
    assert "not a slabfs container" in text and "corruption" not in text, text


def test_messages_name_paths_not_ids(container, mounter):
    make_empty_dataset(container, "/run/temp", "i2", (4, 3), (2, 3))
    cp = fails("resize", container, "/run/temp", "8,3")
    assert "/run/temp: dimension 0 cannot grow to 8" in cp.stderr, cp.stderr
    assert not DATASET_ID.search(cp.stderr), cp.stderr

    m = mounter(container)
    write_past_the_end(mpath(m, "/run/temp"), 6)
    reason = last_error(m.path)
    assert "/run/temp: write of 6 bytes" in reason and not DATASET_ID.search(reason), reason
    # Renamed through the mount: the message follows the name.
    os.rename(mpath(m, "/run/temp"), mpath(m, "/run/t2"))
    write_past_the_end(mpath(m, "/run/t2"), 6)
    reason = last_error(m.path)
    assert "/run/t2: write of 6 bytes" in reason and not DATASET_ID.search(reason), reason


def test_python_messages_name_paths(tmp_path):
    code = """if True:
        import json, sys, slabfs
        with slabfs.File(sys.argv[1], "w") as f:
            d = f.create_dataset("run/temp", shape=(4, 3), dtype="i2", chunks=(2, 3))
            try:
                d.resize((8, 3))
            except Exception as e:
                print(json.dumps([isinstance(e, ValueError), str(e)]))
        """
    # The binding raises MaxShapeError, a ValueError (as h5py raises) that
    # is also the RuntimeError older slabfs code caught.
    is_value_error, text = python_with_binding(code, tmp_path / "p.slab")
    assert is_value_error
    assert text.startswith("/run/temp: dimension 0 cannot grow"), text


def test_an_unknown_command_says_so():
    cp = fails("frobnicate", code=2)
    assert cp.stderr.splitlines()[0] == "slab: unknown command 'frobnicate'", cp.stderr
    assert "slab --help" in cp.stderr
    cp = fails("--log-level", "warn", "lst", "x.slab", code=2)
    assert "slab: unknown command 'lst' (did you mean 'ls'?)" in cp.stderr, cp.stderr
    # Known commands keep CLI11's own usage errors.
    cp = fails("ls", code=2)
    assert "unknown command" not in cp.stderr and "FILE is required" in cp.stderr, cp.stderr


def test_create_in_a_missing_directory_names_the_users_path(tmp_path):
    target = tmp_path / "missing" / "x.slab"
    cp = fails("create", target)
    assert cp.stderr.strip() == f"slab: create: {target}: No such file or directory", cp.stderr
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------ item 13

def test_a_non_empty_mount_point_is_refused_unless_nonempty(container, mounter, tmp_path):
    make_dataset(container, "/a", np.arange(10, dtype="u1"), (10,))
    mp = tmp_path / "mnt"
    mp.mkdir()
    (mp / "notes.txt").write_text("mine")
    rc, out = try_mount(container, mountpoint=mp)
    assert rc == 1, out
    assert f"{mp} is not empty (it holds 'notes.txt')" in out and "-o nonempty" in out, out
    assert not is_mounted(mp)

    m = mounter(container, "-o", "nonempty", mountpoint=mp)
    assert os.listdir(mp) == ["a"]
    assert m.unmount() == 0
    assert (mp / "notes.txt").read_text() == "mine"


def test_an_existing_mount_point_is_refused(container, mounter, tmp_path):
    make_dataset(container, "/a", np.arange(10, dtype="u1"), (10,))
    other = tmp_path / "other.slab"
    slab("create", other)
    m = mounter(container)
    for extra in ([], ["-o", "nonempty"]):
        cp = run(bin_path("slabfs"), other, m.path, *extra, check=False, timeout=60)
        try:
            assert cp.returncode == 1, cp
            assert f"{m.path} is already a mount point (fuse.slabfs {container})" in cp.stderr, cp.stderr
            assert f"fusermount3 -u {m.path}" in cp.stderr, cp.stderr
        finally:
            if cp.returncode == 0:  # mounted on top: take that one off again
                run("fusermount3", "-u", m.path, check=False)
    # The first mount still serves.
    assert open(mpath(m, "/a"), "rb").read() == bytes(range(10))


def test_umount_slabfs_waits_for_a_daemon_mounted_by_a_relative_path(tmp_path):
    """`slabfs c.slab mnt` run in tmp_path, `umount-slabfs mnt` from there.
    To see whether the script waits, the daemon is held up on its way out:
    its stderr is a pipe the test has filled, so its last log line
    ("unmounted ...") blocks until the test reads."""
    c = tmp_path / "run.slab"
    slab("create", c)
    (tmp_path / "mnt").mkdir()
    r, w = os.pipe()
    proc = subprocess.Popen([bin_path("slabfs"), str(c), "mnt", "-f"], cwd=tmp_path, stdout=w, stderr=w,
                            stdin=subprocess.DEVNULL)
    script = None
    try:
        deadline = time.monotonic() + 20
        while not os.path.ismount(tmp_path / "mnt"):
            assert proc.poll() is None and time.monotonic() < deadline, "slabfs did not mount"
            time.sleep(0.02)
        os.set_blocking(r, False)  # the read end only: the daemon's stderr stays blocking
        try:
            while os.read(r, 65536):  # the mount's lines
                pass
        except BlockingIOError:
            pass
        os.write(w, b"x" * fcntl.fcntl(w, F_GETPIPE_SZ))  # now full
        script = subprocess.Popen([str(UMOUNT_SLABFS), "mnt"], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while is_mounted(tmp_path / "mnt") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not is_mounted(tmp_path / "mnt")
        time.sleep(1)
        assert proc.poll() is None  # held up, as intended
        assert script.poll() is None, f"umount-slabfs returned while the daemon lived: {script.communicate()}"
    finally:
        # Let the daemon write: drain the pipe until every writer is gone.
        os.close(w)
        os.set_blocking(r, True)
        drain = subprocess.Popen(["cat"], stdin=r, stdout=subprocess.DEVNULL)
        os.close(r)
        if script is not None:
            _, err = script.communicate(timeout=60)
        if is_mounted(tmp_path / "mnt"):
            subprocess.run(["fusermount3", "-u", "-z", str(tmp_path / "mnt")], capture_output=True)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        drain.wait(timeout=30)
    # The script returned once the daemon had exited, not before.
    assert script.returncode == 0, err
    assert proc.returncode == 0


def test_umount_slabfs_refuses_a_directory_that_is_not_mounted(tmp_path):
    cp = run(UMOUNT_SLABFS, tmp_path, check=False)
    assert cp.returncode == 1 and "is not a mount point" in cp.stderr, cp
