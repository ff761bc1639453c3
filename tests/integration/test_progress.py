"""Long copies and checks on a terminal: `slab repack` and `slab fsck`
draw a progress bar on stderr (bytes, chunks, rate, time left) only when
stderr is a terminal and the work lasts more than a second, and Ctrl-C
(SIGINT) or SIGTERM stops them cleanly: exit 1 with one line, no output
file and no temporary file left, the input unchanged."""
import os
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import bin_path, slab
from mounting import container, make_dataset  # noqa: F401


@pytest.fixture
def big(container):
    """32 MiB of compressible doubles: a deflate-9 repack takes seconds."""
    rng = np.random.default_rng(3)
    make_dataset(container, "/g/a", rng.integers(0, 1000, (2000, 2000)).astype("<f8"), (250, 250))
    return container


def on_terminal(*args, after="0"):
    """Runs slab under a pseudo-terminal (script(1)); returns (status,
    output). The bar shows after `after` seconds (SLAB_PROGRESS_AFTER; by
    default at once, so that a copy that is quick on an idle machine draws
    it too)."""
    cmd = " ".join([bin_path("slab"), *map(str, args)])
    cp = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True,
                        timeout=300, env={**os.environ, "SLAB_PROGRESS_AFTER": after})
    return cp.returncode, cp.stdout


def test_repack_shows_progress_on_a_terminal_only(big, tmp_path):
    code, out = on_terminal("repack", big, tmp_path / "r1.slab", "--deflate", "9")
    assert code == 0, out
    assert "repacking [" in out and "% " in out and "chunks" in out and "/s" in out, out
    # Not a terminal: nothing but the summary.
    cp = slab("repack", big, tmp_path / "r2.slab", "--deflate", "9")
    assert "repacking" not in cp.stderr and cp.stderr == ""
    # --quiet on a terminal: no bar.
    code, out = on_terminal("repack", "-q", big, tmp_path / "r3.slab", "--deflate", "9")
    assert code == 0 and "repacking [" not in out, out
    # A copy shorter than the wait (by default a second) shows no bar.
    code, out = on_terminal("repack", big, tmp_path / "r4.slab", "--deflate", "9", after="3600")
    assert code == 0 and "repacking [" not in out, out
    # A wait that is not a non-negative number is ignored (the default
    # second applies): the copy still runs and summarises.
    for i, bad in enumerate(["junk", "-1", "1e9", "5s"]):
        code, out = on_terminal("repack", big, tmp_path / f"bad{i}.slab", after=bad)
        assert code == 0 and "copied 1 group, 1 dataset" in out, (bad, out)


def test_fsck_shows_progress_on_a_terminal(big):
    code, out = on_terminal("fsck", big)
    assert code == 0, out
    assert out.rstrip().endswith("clean"), out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_repack_leaves_nothing(big, tmp_path, sig):
    before = open(big, "rb").read()
    out = tmp_path / "out.slab"
    p = subprocess.Popen([bin_path("slab"), "repack", str(big), str(out), "--deflate", "9"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.7)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1, (p.returncode, err)
    assert "interrupted" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    assert [f for f in os.listdir(tmp_path) if f.startswith(".out.slab")] == []
    assert open(big, "rb").read() == before
