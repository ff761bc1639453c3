"""What a newcomer reads: counts that agree with their number ("1 chunk"),
one note for all the datasets `repack --chunks` leaves alone, a header over
`slab ls -l`, import/export summaries that name HDF5, netCDF and Zarr, Python
errors that name the file once, and an installed systemd service whose
Documentation= names installed files."""
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import BIN, ROOT, slab

BUILD = BIN.parent


def test_one_chunk_is_singular(tmp_path):
    h5py = pytest.importorskip("h5py")
    h5 = tmp_path / "one.h5"
    with h5py.File(h5, "w") as f:
        f["x"] = np.arange(6, dtype="<f4")
    c = tmp_path / "c.slab"
    out = slab("import", c, h5).stdout
    assert re.search(r"imported \S+ \S+ in 1 chunk from ", out), out
    out = slab("export", c, tmp_path / "out.h5").stdout
    assert re.search(r"exported \S+ \S+ in 1 chunk to ", out), out
    out = slab("repack", c, tmp_path / "r.slab").stdout
    assert "copied 0 groups, 1 dataset and 0 attributes" in out, out


def test_repack_chunks_notes_datasets_of_another_rank_once(tmp_path):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/img", "--dtype", "u1", "--shape", "8,8")
    for i in range(5):
        slab("mkdset", c, f"/v{i}", "--dtype", "u1", "--shape", "10")
    out = slab("repack", c, tmp_path / "r.slab", "--chunks", "4,4").stdout
    notes = [line for line in out.splitlines() if "--chunks" in line]
    assert notes == ["--chunks 4,4 is for datasets of rank 2: 5 datasets of another rank kept their "
                     "chunks (/v0, /v1, /v2 and 2 more)"], out
    assert '"chunks": [\n    4,\n    4\n  ]' in slab("info", "--json", tmp_path / "r.slab", "/img").stdout
    slab("rm", c, "/v1")
    slab("rm", c, "/v2")
    slab("rm", c, "/v3")
    slab("rm", c, "/v4")
    out = slab("repack", c, tmp_path / "r2.slab", "--chunks", "4,4").stdout
    assert "1 dataset of another rank kept its chunks (/v0)" in out, out


def test_ls_long_has_a_header(tmp_path):
    c = tmp_path / "c.slab"
    slab("create", c)
    assert slab("ls", "-l", c).stdout == ""
    slab("mkgroup", c, "/g")
    slab("mkdset", c, "/g/temperature", "--dtype", "f4", "--shape", "180,360")
    lines = slab("ls", "-l", "-r", c).stdout.splitlines()
    assert lines[0].split() == ["KIND", "DTYPE", "SHAPE", "CHUNKS", "SIZE", "STORED", "RATIO", "NAME"]
    assert [l.split()[-1] for l in lines[1:]] == ["g/", "g/temperature"]
    # The columns line up under their names; numbers align right.
    assert lines[0].index("NAME") == lines[2].index("g/temperature")
    assert lines[0].index("SIZE") + len("SIZE") == lines[2].index("259200") + len("259200")
    # Without -l there is no header.
    assert slab("ls", c).stdout == "g/\n"


def test_import_and_export_summaries_name_the_formats():
    top = slab("--help").stdout
    for cmd in ("import", "export"):
        line = next(l for l in top.splitlines() if l.strip().startswith(cmd + " "))
        for fmt in ("HDF5", "netCDF", "Zarr", ".npy", "raw"):
            assert fmt in line, line
        assert all(fmt in slab(cmd, "--help").stdout.splitlines()[0] for fmt in ("HDF5", "netCDF", "Zarr"))


def python_error(code, *args):
    site = BUILD / "python"
    if not list((site / "slabfs").glob("_slabfs*.so")):
        pytest.skip("the Python binding is not built")
    cp = subprocess.run(["/usr/bin/python3", "-c", code, *map(str, args)], capture_output=True, text=True,
                        env=dict(os.environ, PYTHONPATH=str(site)), timeout=60)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout.strip()


def test_python_open_errors_name_the_file_once(tmp_path):
    code = ("import sys, slabfs\n"
            "try:\n    slabfs.File(sys.argv[1], sys.argv[2])\n"
            "except OSError as e:\n    print(type(e).__name__, str(e))\n")
    missing = tmp_path / "missing.slab"
    assert python_error(code, missing, "r") == f"FileNotFoundError [Errno 2] No such file or directory: '{missing}'"
    junk = tmp_path / "junk.slab"
    junk.write_bytes(b"not a container" * 1000)
    out = python_error(code, junk, "r")
    assert out.startswith("OSError [Errno 95] not a slabfs container") and out.count(str(junk)) == 1, out
    out = python_error(code, tmp_path / "no" / "dir.slab", "w")
    assert out.count("dir.slab") == 1, out


def test_installed_systemd_service_documentation_is_installed(tmp_path):
    prefix = tmp_path / "prefix"
    cp = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix, "--component", "Unspecified"],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    for unit in (prefix / "lib/systemd/system/slabfs@.service", prefix / "share/slabfs/systemd/slabfs@.service"):
        text = unit.read_text()
        assert f"ExecStart={prefix}/bin/slabfs " in text
        docs = re.search(r"^Documentation=(.*)$", text, re.M).group(1).split()
        assert "man:slabfs(1)" in docs
        assert (prefix / "share/man/man1/slabfs.1.gz").exists()
        files = [d[len("file://"):] for d in docs if d.startswith("file://")]
        assert files and all(os.path.exists(f) for f in files), docs
    # The unit in the source tree names the default prefix's copy, which
    # `cmake --install` (and mount_scripts/install.sh) puts there.
    src = (ROOT / "mount_scripts/systemd/slabfs@.service").read_text()
    assert "file:///usr/local/share/doc/slabfs/docs/mount.md" in src
    assert (prefix / "share/doc/slabfs/docs/mount.md").exists()
