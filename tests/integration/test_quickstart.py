"""mount_scripts/quickstart.sh: it checks its arguments, the container and
the mount point before it installs or builds anything, and its hints name
the mounted container's own datasets with programs that exist.

The build itself is not run here (SLABFS_BIN names the built programs);
test_readme_tour runs quickstart the README's way."""
import os
import pathlib
import shlex
import subprocess

import numpy as np
import pytest

from conftest import BIN, ROOT, slab
from mounting import is_mounted

QUICKSTART = ROOT / "mount_scripts" / "quickstart.sh"


def quickstart(*args, cwd, build_dir, timeout=120):
    env = dict(os.environ, SLABFS_BUILD_DIR=str(build_dir), LC_ALL="C")
    env.pop("SLABFS_BIN", None)
    return subprocess.run(["bash", str(QUICKSTART), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("case", ["missing", "not_a_container", "directory", "busy_mountpoint",
                                  "nonempty_mountpoint", "too_many"])
def test_bad_arguments_are_refused_before_building(tmp_path, case):
    build_dir = tmp_path / "build"  # never made: nothing is configured or built
    c = tmp_path / "c.slab"
    slab("create", c)
    mnt = tmp_path / "m"
    mnt.mkdir()
    args, code, message = {
        "missing": ([tmp_path / "nope.slab"], 1, "does not exist"),
        "not_a_container": (["/etc/passwd"], 1, "is not a slabfs container"),
        "directory": ([tmp_path], 1, "is not a regular file"),
        "busy_mountpoint": ([c, "/proc"], 1, "is already a mount point"),
        "nonempty_mountpoint": ([c, tmp_path], 1, "is not empty"),
        "too_many": ([c, mnt, "x"], 2, "usage:"),
    }[case]
    cp = quickstart(*args, cwd=tmp_path, build_dir=build_dir, timeout=30)
    assert cp.returncode == code, cp
    assert message in cp.stderr, cp.stderr
    assert len(cp.stderr.strip().splitlines()) <= 2, cp.stderr
    assert not build_dir.exists()
    assert not is_mounted(mnt)


def test_hints_name_the_containers_own_datasets(tmp_path):
    c = tmp_path / "mine.slab"
    slab("create", c)
    slab("mkgroup", c, "/scan")
    np.save(tmp_path / "img.npy", np.arange(12, dtype="<i2").reshape(3, 4))
    slab("import", "--create", c, "/scan/img", tmp_path / "img.npy")
    slab("import", "--create", c, "/scan/packed", tmp_path / "img.npy", "--deflate", "4")
    mnt = tmp_path / "view"
    env = dict(os.environ, SLABFS_BIN=str(pathlib.Path(BIN).resolve()), LC_ALL="C")
    try:
        cp = subprocess.run(["bash", str(QUICKSTART), str(c), str(mnt)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
        assert cp.returncode == 0, cp
        hints = [l.strip() for l in cp.stdout.splitlines() if l.startswith("  ")]
        ds = f"{mnt}/scan/img"
        assert f"getfattr -d -m - {ds}" in hints, cp.stdout
        assert f"od -A d -t d2 -N 64 {ds}" in hints, cp.stdout
        assert any(h.startswith(f"du -h --apparent-size {mnt}/scan/packed") for h in hints), cp.stdout
        assert "climate" not in cp.stdout
        # Every hint runs as printed: the programs exist and numpy is Debian's.
        for h in hints:
            if h.startswith(("fusermount3", "tail ")):
                continue
            r = subprocess.run(h, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, (h, r.stderr)
            first = shlex.split(h)[0]
            assert first != "python3" and first != "slab", h
        out = subprocess.run(f"/usr/bin/python3 -c \"import numpy as np; print(np.fromfile('{ds}', '<i2').sum())\"",
                             shell=True, capture_output=True, text=True).stdout
        assert out.strip() == "66"
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True)
    assert not is_mounted(mnt)
