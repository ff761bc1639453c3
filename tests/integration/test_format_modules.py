"""Format modules (stores/modules/format_module.h): `slab` and `slabfs` do
not link libhdf5; they load build/lib/slabfs/slabfs-hdf5.so (the HDF5
store) and slabfs-hdf5-export.so (the HDF5 export) the first time a file
needs them. Checked here: neither program needs libhdf5 to start, an HDF5
file is read, mounted and written through the modules, and a program whose
module directory is missing says so by name for HDF5 work while everything
else goes on working."""
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import BIN, run, slab
from mounting import mounted

h5py = pytest.importorskip("h5py")
MODULES = BIN.parent / "lib" / "slabfs"


def needed(path):
    out = run("readelf", "-d", "-W", path).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


@pytest.fixture
def h5file(tmp_path):
    p = tmp_path / "in.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("g/x", data=np.arange(60, dtype="<i4").reshape(6, 10), chunks=(3, 5),
                         compression="gzip", shuffle=True)
    return p


@pytest.fixture
def lone_bin(tmp_path):
    """Copies of slab and slabfs with no module directory beside them."""
    d = tmp_path / "lone" / "bin"
    d.mkdir(parents=True)
    for p in ("slab", "slabfs"):
        shutil.copy2(BIN / p, d / p)
    return d


def test_the_programs_do_not_link_libhdf5():
    for prog in ("slab", "slabfs"):
        libs = needed(BIN / prog)
        assert not [lib for lib in libs if "hdf5" in lib], (prog, libs)
    for module in ("slabfs-hdf5.so", "slabfs-hdf5-export.so"):
        assert [lib for lib in needed(MODULES / module) if lib.startswith("libhdf5")], module


def test_hdf5_is_read_mounted_and_written_through_the_modules(h5file, tmp_path):
    info = slab("info", h5file, "/g/x").stdout
    assert "shape: 6,10" in info and "deflate" in info
    with mounted(h5file, "-o", "ro") as m:
        got = np.fromfile(os.path.join(m.path, "g", "x"), dtype="<i4")
    assert (got == np.arange(60)).all()
    c = tmp_path / "c.slab"
    slab("import", c, h5file)
    out = tmp_path / "out.h5"
    slab("export", c, out)
    with h5py.File(out, "r") as f:
        assert (f["g/x"][...] == np.arange(60).reshape(6, 10)).all()


def test_a_missing_module_is_named_and_nothing_else_is_lost(h5file, lone_bin, tmp_path):
    lone_slab, lone_slabfs = lone_bin / "slab", lone_bin / "slabfs"
    missing = os.path.normpath(lone_bin / ".." / "lib" / "slabfs" / "slabfs-hdf5.so")
    # Reading HDF5 needs the store module: one clear line, exit 1.
    cp = run(lone_slab, "info", h5file, "/g/x", check=False)
    assert cp.returncode == 1, cp
    assert missing in cp.stderr and "HDF5" in cp.stderr, cp.stderr
    assert "Segmentation" not in cp.stderr and "terminate" not in cp.stderr
    # A container works as ever, and an HDF5 export is refused before
    # anything is written.
    c = tmp_path / "c.slab"
    run(lone_slab, "create", c)
    run(lone_slab, "mkdset", c, "/d", "--dtype", "u1", "--shape", "4")
    assert run(lone_slab, "ls", c).stdout.split() == ["d"]
    out = tmp_path / "out.h5"
    cp = run(lone_slab, "export", c, out, check=False)
    assert cp.returncode == 1, cp
    assert "slabfs-hdf5-export.so" in cp.stderr, cp.stderr
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith("out.h5")]
    # The daemon refuses to mount the HDF5 file, naming the module, and
    # leaves no mount behind.
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run([str(lone_slabfs), str(h5file), str(mnt), "-f"], capture_output=True, text=True,
                          timeout=60)
    try:
        assert proc.returncode != 0, proc
        assert "slabfs-hdf5.so" in proc.stderr, proc.stderr
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True)
    assert not os.path.ismount(mnt)


def test_a_damaged_module_is_refused_with_the_loaders_reason(h5file, lone_bin, tmp_path):
    """Bytes on disk are untrusted: a module file that is not a shared object
    (a copy cut short at several places, which the loader would map past
    its end and die of SIGBUS; garbage) is refused with the reason, never
    run, and the program goes on with containers."""
    modules = lone_bin.parent / "lib" / "slabfs"
    modules.mkdir(parents=True)
    real = (MODULES / "slabfs-hdf5.so").read_bytes()
    # Where the loaded segments end (the rest is debug information, which
    # the loader never maps: a module cut there still loads).
    loads = [line.split() for line in run("readelf", "-lW", MODULES / "slabfs-hdf5.so").stdout.splitlines()
             if line.split()[:1] == ["LOAD"]]
    mapped = max(int(f[1], 16) + int(f[4], 16) for f in loads)
    for damaged in (real[:40], real[:4096], real[:mapped - 100], b"not a shared object\n" * 100):
        (modules / "slabfs-hdf5.so").write_bytes(damaged)
        cp = run(lone_bin / "slab", "info", h5file, "/g/x", check=False)
        assert cp.returncode == 1, cp
        assert str(modules / "slabfs-hdf5.so") in cp.stderr and "does not load" in cp.stderr, cp.stderr
        assert len(cp.stderr.strip().splitlines()) == 1, cp.stderr
    c = tmp_path / "c.slab"
    run(lone_bin / "slab", "create", c)
    assert run(lone_bin / "slab", "ls", c).returncode == 0
