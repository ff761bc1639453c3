"""The mount conventions: `slabfs --help/--version`, clear refusals of bad
options and containers, the daemon returning only once the mount is live,
`mount -t fuse.slabfs` and /etc/fstab lines through mount(8) and
mount.fuse3, `umount`, the systemd units (systemd-analyze verify), and the
container complete and free for `slab` the moment an unmount returns.

mount(8) runs mount.fuse3, which finds `slabfs` on the shell's default PATH
(/usr/local/bin is on it: mount_scripts/install.sh installs there). So as
not to install anything on the machine, those tests run in a private mount
namespace (`unshare -m`) in which the build's binaries are bind-mounted over
/usr/local/bin and a temporary fstab over /etc/fstab; every mount made there
goes away with the namespace, and each script unmounts and waits for its
daemon on the way out."""
import mmap
import os
import pathlib
import shutil
import subprocess
import textwrap

import numpy as np
import pytest

from conftest import ROOT, bin_path, run, slab
from mounting import is_mounted

SLABFS_OPTIONS = ("ro", "rw", "cache_size=", "cache_max=", "commit_interval=", "log_level=")


def slabfs(*args, timeout=60):
    return subprocess.run([bin_path("slabfs"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def reap(mountpoint):
    """Unmounts and kills whatever daemon serves `mountpoint` (cleanup)."""
    if is_mounted(mountpoint):
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True)
    subprocess.run(["pkill", "-KILL", "-f", f"slabfs .*{mountpoint}"], capture_output=True)


@pytest.fixture
def data(tmp_path):
    c = tmp_path / "run.slab"
    slab("create", c)
    a = np.arange(64 * 64, dtype="<f4").reshape(64, 64)
    slab("mkdset", c, "/temp", "--dtype", "f4", "--shape", "64,64", "--chunks", "16,64")
    np.save(tmp_path / "a.npy", a)
    slab("import", c, "/temp", tmp_path / "a.npy")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    yield c, mnt, a.tobytes()
    reap(mnt)


def test_help_lists_every_option_and_version(tmp_path):
    cp = slabfs("--help")
    assert cp.returncode == 0
    for opt in SLABFS_OPTIONS:
        assert f"-o {opt}" in cp.stdout, opt
    for word in ("noauto", "user", "nofail", "_netdev", "x-*", "allow_other"):
        assert word in cp.stdout, word
    cp = slabfs("--version")
    assert cp.returncode == 0 and cp.stdout.startswith("slabfs ")


def test_bad_options_and_containers_are_refused_before_mounting(data, tmp_path):
    c, mnt, _ = data
    for args, words in (
            (["-o", "bogus"], "unknown option"),
            (["-o", "cache_size=lots"], "cache_size"),
            (["-o", "commit_interval=-1"], "commit_interval"),
            (["-o", "log_level=loud"], "log_level"),
    ):
        cp = slabfs(c, mnt, *args)
        assert cp.returncode == 2, (args, cp)
        assert words in cp.stderr and "--help" in cp.stderr, (args, cp.stderr)
        assert not is_mounted(mnt)
    for bad in (tmp_path / "missing.slab", tmp_path / "junk.slab"):
        if bad.name == "junk.slab":
            bad.write_bytes(b"not a container" * 1000)
        cp = slabfs(bad, mnt)
        assert cp.returncode == 1, cp
        assert "cannot open the container" in cp.stderr, cp.stderr
        assert not is_mounted(mnt)
    cp = slabfs(c)
    assert cp.returncode == 2 and "MOUNTPOINT" in cp.stderr


def test_the_daemon_returns_once_the_mount_is_live(data):
    c, mnt, want = data
    for _ in range(3):
        cp = slabfs(c, mnt, "-o", "fsname=x,noauto,user,nofail,_netdev,x-systemd.automount,comment=ok")
        assert cp.returncode == 0, cp.stderr
        # The next line of a script can use the mount.
        assert os.path.ismount(mnt)
        assert open(mnt / "temp", "rb").read() == want
        run(ROOT / "mount_scripts" / "umount-slabfs", mnt)
        assert not is_mounted(mnt)
        assert subprocess.run(["pgrep", "-f", f"slabfs .*{mnt}"], capture_output=True).returncode == 1


def test_slab_right_after_an_unmount_sees_every_change(data, tmp_path):
    """fusermount3 -u returns before the daemon's last commit: the next
    open waits for it (engine/io/writer_lock.h)."""
    c, mnt, _ = data
    slab("mkdset", c, "/big", "--dtype", "u1", "--shape", str(64 << 20), "--chunks", str(1 << 20))
    rng = np.random.default_rng(4)
    for i in range(5):
        cp = slabfs(c, mnt, "-o", "cache_size=512M,commit_interval=0")
        assert cp.returncode == 0, cp.stderr
        payload = rng.integers(0, 255, 32 << 20, dtype="u1").tobytes()
        # Through a shared mapping: the bytes reach the daemon at the
        # unmount, and stay in its cache until the last commit.
        fd = os.open(mnt / "big", os.O_RDWR)
        m = mmap.mmap(fd, 64 << 20)
        m[:len(payload)] = payload
        m.close()
        os.close(fd)
        run("fusermount3", "-u", mnt)
        # A writer at once: not Busy.
        slab("mkgroup", c, f"/after{i}")
        # A reader at once: the last commit.
        out = tmp_path / "big.bin"
        slab("export", c, "/big", out)
        assert out.read_bytes()[:len(payload)] == payload
        out.unlink()
    assert "after4/" in slab("ls", c, "/").stdout


def in_namespace(script, tmp_path, timeout=120):
    """Runs a bash script in a private mount namespace where the build's
    slabfs is /usr/local/bin/slabfs."""
    binds = tmp_path / "usrlocalbin"
    binds.mkdir(exist_ok=True)
    for name in ("slabfs", "slab"):
        shutil.copy(bin_path(name), binds / name)
    shutil.copy(ROOT / "mount_scripts" / "umount-slabfs", binds / "umount-slabfs")
    full = textwrap.dedent(f"""\
        set -euo pipefail
        mount --make-rprivate /
        mount --bind {binds} /usr/local/bin
        """) + textwrap.dedent(script)
    cp = subprocess.run(["unshare", "-m", "bash", "-c", full], capture_output=True, text=True, timeout=timeout)
    return cp


def test_mount_t_fuse_slabfs_and_umount(data, tmp_path):
    c, mnt, want = data
    out = tmp_path / "read.bin"
    cp = in_namespace(f"""
        trap 'umount -l {mnt} 2>/dev/null || true' EXIT
        mount -t fuse.slabfs -o cache_size=16M,commit_interval=1,log_level=warn {c} {mnt}
        findmnt -n -o FSTYPE,OPTIONS {mnt}
        cat {mnt}/temp > {out}
        mkdir {mnt}/made_by_mount
        umount-slabfs {mnt}
        """, tmp_path)
    assert cp.returncode == 0, cp.stderr
    assert "fuse.slabfs" in cp.stdout
    assert out.read_bytes() == want
    assert "made_by_mount/" in slab("ls", c, "/").stdout


def test_fstab_lines(data, tmp_path):
    c, mnt, want = data
    ro = tmp_path / "ro"
    ro.mkdir()
    fstab = tmp_path / "fstab"
    fstab.write_text(
        f"# slabfs test fstab\n"
        f"{c}  {mnt}  fuse.slabfs  noauto,user,nofail,_netdev,cache_size=8M,commit_interval=2,log_level=info,"
        f"x-systemd.automount  0 0\n"
        f"{c}  {ro}  fuse.slabfs  noauto,ro,allow_other  0 0\n")
    out = tmp_path / "read.bin"
    cp = in_namespace(f"""
        mount --bind {fstab} /etc/fstab
        trap 'umount -l {mnt} 2>/dev/null || true; umount -l {ro} 2>/dev/null || true' EXIT
        mount {mnt}
        cat {mnt}/temp > {out}
        setfattr -n user.origin -v fstab {mnt}/temp
        umount {mnt}
        # umount returns before the last commit; the read-only mount waits
        # for it and sees the attribute.
        mount {ro}
        getfattr --only-values -n user.origin {ro}/temp; echo
        if touch {ro}/new 2>/dev/null; then echo "read-only mount accepted a write"; exit 1; fi
        findmnt -n -o OPTIONS {ro}
        umount-slabfs {ro}
        """, tmp_path)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert out.read_bytes() == want
    assert "fstab" in cp.stdout.splitlines()[0]
    assert "ro" in cp.stdout.splitlines()[1].split(",")
    assert "allow_other" in cp.stdout.splitlines()[1]
    assert slab("attr", c, "/temp", "origin").stdout.strip() == "fstab"


def test_systemd_units_verify(tmp_path):
    """systemd-analyze verify on the shipped units, with the paths pointed
    at this build; and it does fail on a broken unit, so the check means
    something."""
    units = tmp_path / "units"
    units.mkdir()
    src = ROOT / "mount_scripts" / "systemd"
    service = (src / "slabfs@.service").read_text()
    service = service.replace("/usr/local/bin/umount-slabfs", str(ROOT / "mount_scripts" / "umount-slabfs"))
    service = service.replace("/usr/local/bin/slabfs", bin_path("slabfs"))
    (units / "slabfs@test.service").write_text(service)
    shutil.copy(src / "mnt-data.mount", units / "mnt-data.mount")
    # verify runs `man` on Documentation=man:slabfs(1): the page the build
    # made (cmake/install.cmake installs it beside the unit), else no man check.
    page = pathlib.Path(bin_path("slabfs")).parent.parent / "man" / "slabfs.1.gz"
    env, man = dict(os.environ), []
    if page.exists():
        (tmp_path / "man" / "man1").mkdir(parents=True)
        shutil.copy(page, tmp_path / "man" / "man1" / page.name)
        env["MANPATH"] = str(tmp_path / "man")
    else:
        man = ["--man=no"]
    for unit in ("slabfs@test.service", "mnt-data.mount"):
        cp = subprocess.run(["systemd-analyze", "verify", *man, str(units / unit)], capture_output=True,
                            text=True, cwd=units, env=env, timeout=60)
        assert cp.returncode == 0, (unit, cp.stdout + cp.stderr)
    (units / "mnt-other.mount").write_text((src / "mnt-data.mount").read_text())
    cp = subprocess.run(["systemd-analyze", "verify", str(units / "mnt-other.mount")], capture_output=True,
                        text=True, cwd=units, timeout=60)
    assert cp.returncode != 0
    assert "example.conf" in [p.name for p in src.iterdir()]
    conf = (src / "example.conf").read_text()
    assert "CONTAINER=" in conf and "MOUNTPOINT=" in conf and "OPTIONS=" in conf


def test_install_script_installs_where_mount_finds_it(tmp_path):
    prefix = tmp_path / "prefix"
    env = dict(os.environ, SLABFS_BUILD_DIR=str(pathlib.Path(bin_path("slabfs")).parent.parent))
    cp = subprocess.run(["bash", str(ROOT / "mount_scripts" / "install.sh"), str(prefix)], capture_output=True,
                        text=True, env=env, timeout=900)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    for p in ("bin/slabfs", "bin/slab", "bin/umount-slabfs", "share/slabfs/systemd/slabfs@.service",
              "share/slabfs/systemd/mnt-data.mount"):
        assert (prefix / p).exists(), p
    assert os.access(prefix / "bin" / "umount-slabfs", os.X_OK)
    # Installed programs are stripped (the build's keep their symbols).
    for prog in ("slabfs", "slab"):
        sections = subprocess.run(["readelf", "-S", "-W", str(prefix / "bin" / prog)], capture_output=True,
                                  text=True).stdout
        assert ".symtab" not in sections and ".debug_info" not in sections, prog
    assert subprocess.run([str(prefix / "bin" / "slabfs"), "--version"], capture_output=True).returncode == 0
    # The Python package, where it is built: importable from PREFIX/lib/python3.X/dist-packages,
    # typed (py.typed, _slabfs.pyi), with the xarray entry point beside it.
    packages = list(prefix.glob("lib/python3*/*-packages/slabfs/__init__.py"))
    if list(pathlib.Path(bin_path("slabfs")).parent.parent.glob("python/slabfs/_slabfs*.so")):
        assert len(packages) == 1, packages
        site = packages[0].parent.parent
        assert (site / "slabfs" / "py.typed").exists() and (site / "slabfs" / "_slabfs.pyi").exists()
        assert list(site.glob("slabfs-*.dist-info/entry_points.txt"))
        code = "import slabfs, sys; sys.exit(0 if slabfs.__file__.startswith(sys.argv[1]) else 1)"
        env = dict(os.environ, PYTHONPATH=str(site))
        assert subprocess.run(["/usr/bin/python3", "-c", code, str(site)], env=env).returncode == 0
