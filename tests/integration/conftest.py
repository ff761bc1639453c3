"""Shared fixtures for the integration tests: the built binaries and a
helper to run them. Tests that mount use the `mounted` fixtures in
mounting.py, which always unmount."""
import json
import os
import pathlib
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("SLABFS_BIN", ROOT / "build" / "bin"))


def bin_path(name):
    p = BIN / name
    if not p.exists():
        pytest.fail(f"{p} is not built (set SLABFS_BIN or build first)")
    return str(p)


def run(*args, check=True, input=None, timeout=120):
    """Runs a command, returns CompletedProcess with text output."""
    cp = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                        input=input, timeout=timeout)
    if check and cp.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, args))} exited {cp.returncode}\n"
            f"stdout: {cp.stdout}\nstderr: {cp.stderr}")
    return cp


def slab(*args, check=True, input=None, timeout=120):
    return run(bin_path("slab"), *args, check=check, input=input, timeout=timeout)


def fails(*args, code=1, input=None):
    """Runs slab expecting failure: the exit status (never a signal) and one
    clear message on stderr (usage errors, exit 2, add a hint)."""
    cp = slab(*args, check=False, input=input)
    assert cp.returncode == code, (
        f"slab {args}: expected exit {code}, got {cp.returncode}\n"
        f"stdout: {cp.stdout}\nstderr: {cp.stderr}")
    err = cp.stderr.strip()
    assert err, f"slab {args}: no message on stderr"
    assert err.startswith("slab"), err
    for bad in ("terminate called", "Aborted", "Segmentation", "AddressSanitizer",
                "runtime error"):
        assert bad not in cp.stderr, cp.stderr
    if code == 1:
        assert len(err.splitlines()) == 1, f"expected one line, got:\n{err}"
    return cp


def mpath(m, path):
    """The path of `path` ("/g/ds") inside the mount m."""
    return str(m.path) + path


def expect_errno(code, fn, *args):
    """fn(*args) raises OSError with errno `code`."""
    with pytest.raises(OSError) as e:
        fn(*args)
    assert e.value.errno == code, (fn.__name__, args, e.value)


def info(c, path):
    """`slab info --json` of one object, parsed."""
    return json.loads(slab("info", "--json", c, path).stdout)


@pytest.fixture
def slab_bin():
    return bin_path("slab")


@pytest.fixture
def slabfs_bin():
    return bin_path("slabfs")


@pytest.fixture
def small_fs():
    """A 24 MiB tmpfs (a disk that fills up), always unmounted at the end."""
    d = tempfile.mkdtemp(prefix="slabfs-smallfs-")
    cp = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24M", "tmpfs", d], capture_output=True, text=True)
    assert cp.returncode == 0, f"mount tmpfs: {cp.stderr}"
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", d], capture_output=True)
        os.rmdir(d)
