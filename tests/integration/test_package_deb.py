"""The Debian package: `cpack -G DEB` from this build (cmake/package.cmake;
nothing is rebuilt), inspected with dpkg-deb (name, control fields and
dependencies, contents, stripped binaries, lintian when installed), then
unpacked into a scratch root (dpkg-deb -x) and used from there: `slab
--help`, HDF5 through the packaged modules, `man -l` of both pages, `import slabfs` with /usr/bin/python3, a
C++ program through the packaged CMake config, the bash completion, and
`mount -t fuse.slabfs` running the packaged daemon (through mount.fuse3, in
a private mount namespace, always unmounted)."""
import os
import re
import shutil
import subprocess
import textwrap

import pytest

from conftest import BIN, ROOT, slab

BUILD = BIN.parent
VERSION = re.search(r"project\(slabfs VERSION (\S+)", (ROOT / "CMakeLists.txt").read_text()).group(1)


def sh(*args, env=None, cwd=None, timeout=300, check=True):
    cp = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, cwd=cwd,
                        timeout=timeout)
    if check:
        assert cp.returncode == 0, f"{' '.join(map(str, args))}: exit {cp.returncode}\n{cp.stdout}\n{cp.stderr}"
    return cp


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    if not (BUILD / "CPackConfig.cmake").exists():
        pytest.fail(f"{BUILD}/CPackConfig.cmake is missing (configure the build)")
    for built in ("lib/libslabfs.so", "man/slab.1.gz", "man/slabfs.1.gz"):
        if not (BUILD / built).exists():
            pytest.fail(f"{BUILD}/{built} is not built (cmake --build {BUILD})")
    out = tmp_path_factory.mktemp("deb")
    sh("cpack", "-G", "DEB", "-B", out, "--config", BUILD / "CPackConfig.cmake")
    debs = list(out.glob("*.deb"))
    assert len(debs) == 1, debs
    return debs[0]


@pytest.fixture(scope="module")
def root(deb, tmp_path_factory):
    r = tmp_path_factory.mktemp("root")
    sh("dpkg-deb", "-x", deb, r)
    return r


def arch():
    return sh("dpkg", "--print-architecture").stdout.strip()


def multiarch():
    return sh("dpkg-architecture", "-qDEB_HOST_MULTIARCH").stdout.strip()


def test_name_and_control_fields(deb):
    assert deb.name == f"slabfs_{VERSION}_{arch()}.deb"
    field = lambda name: sh("dpkg-deb", "-f", deb, name).stdout.strip()
    assert field("Package") == "slabfs"
    assert field("Version") == VERSION
    depends = [d.strip() for d in field("Depends").split(",")]
    names = {d.split()[0] for d in depends}
    # From dpkg-shlibdeps (each library the programs and the module link)
    # and the ones it cannot see.
    for want in ("fuse3", "libfuse3-3", "libdeflate0", "libblosc1", "libfmt9", "libstdc++6",
                 "python3", "python3-numpy"):
        assert want in names, (want, depends)
    assert any(n.startswith("libhdf5-") for n in names), depends
    assert any(n.startswith("libhdf5-hl-") for n in names), depends
    assert any(n.startswith("libspdlog") for n in names), depends
    py = "{}.{}".format(*map(int, sh("/usr/bin/python3", "-c",
                                     "import sys; print(*sys.version_info[:2])").stdout.split()))
    assert f"python3 (>= {py}~)" in depends, depends
    assert "bash-completion" in field("Recommends")
    info = sh("dpkg-deb", "-I", deb).stdout
    for script in ("postinst", "prerm", "shlibs"):
        assert re.search(rf"\b{script}\b", info), info


def test_contents(deb):
    listing = sh("dpkg-deb", "-c", deb).stdout
    paths = {line.split()[5].lstrip(".") for line in listing.splitlines()}
    ma = multiarch()
    want = ["/usr/bin/slabfs", "/usr/bin/slab", "/usr/bin/umount-slabfs",
            "/usr/share/man/man1/slabfs.1.gz", "/usr/share/man/man1/slab.1.gz",
            "/usr/share/bash-completion/completions/slab",
            "/usr/lib/systemd/system/slabfs@.service",
            "/usr/share/slabfs/systemd/mnt-data.mount", "/usr/share/slabfs/systemd/example.conf",
            "/usr/share/doc/slabfs/copyright", "/usr/share/doc/slabfs/README.md",
            "/usr/share/doc/slabfs/docs/mount.md", "/usr/share/doc/slabfs/docs/cli.md",
            "/usr/share/doc/slabfs/docs/python.md",
            "/usr/include/slabfs/slabfs.h", "/usr/include/slabfs/container.h",
            f"/usr/lib/{ma}/libslabfs.so", f"/usr/lib/{ma}/libslabfs.so.0.1",
            f"/usr/lib/{ma}/cmake/slabfs/slabfsConfig.cmake",
            f"/usr/lib/{ma}/pkgconfig/slabfs.pc",
            # The HDF5 store and export, loaded by the programs on first use
            # (stores/modules/format_module.h): ../lib/slabfs from /usr/bin.
            "/usr/lib/slabfs/slabfs-hdf5.so", "/usr/lib/slabfs/slabfs-hdf5-export.so",
            "/usr/lib/python3/dist-packages/slabfs/__init__.py",
            "/usr/lib/python3/dist-packages/slabfs/xarray_backend.py",
            "/usr/lib/python3/dist-packages/slabfs/py.typed",  # PEP 561: typed, with _slabfs.pyi
            "/usr/lib/python3/dist-packages/slabfs/_slabfs.pyi",
            f"/usr/lib/python3/dist-packages/slabfs-{VERSION}.dist-info/entry_points.txt"]
    for p in want:
        assert p in paths, p
    assert any(re.fullmatch(r"/usr/lib/python3/dist-packages/slabfs/_slabfs\.cpython-3\d+-.*\.so", p)
               for p in paths)
    # Everything under /usr, owned by root, nothing compiled or cached.
    assert all(p.startswith("/usr/") or p in ("/", "/usr") for p in paths if p != "/"), paths
    assert "__pycache__" not in listing and ".pyc" not in listing
    assert all(line.split()[1] == "root/root" for line in listing.splitlines())


def is_stripped(path):
    sections = sh("readelf", "-S", "-W", path).stdout
    return ".symtab" not in sections and ".debug_info" not in sections


def test_binaries_are_stripped_and_small(root):
    ma = multiarch()
    objects = [root / "usr/bin/slabfs", root / "usr/bin/slab", root / f"usr/lib/{ma}/libslabfs.so.0.1"]
    objects += list((root / "usr/lib/python3/dist-packages/slabfs").glob("_slabfs*.so"))
    objects += [root / "usr/lib/slabfs/slabfs-hdf5.so", root / "usr/lib/slabfs/slabfs-hdf5-export.so"]
    assert len(objects) == 6
    for o in objects:
        assert is_stripped(o), o
        assert o.stat().st_size < 12 << 20, (o, o.stat().st_size)
    # The build's own programs keep their symbols (for debuggers): the
    # package strips its copies.
    assert not is_stripped(BIN / "slab")


def test_lintian_finds_no_error(deb):
    if not shutil.which("lintian"):
        pytest.skip("lintian is not installed (mount_scripts/install_deps.sh installs it)")
    # A package built outside a Debian source tree has no changelog; the
    # library shares one package with the programs.
    cp = sh("lintian", "--no-tag-display-limit", "--suppress-tags",
            "no-changelog,package-name-doesnt-match-sonames,no-manual-page,"
            "initial-upload-closes-no-bugs,non-dev-pkg-with-shlib-symlink",
            deb, check=False)
    errors = [line for line in cp.stdout.splitlines() if line.startswith("E:")]
    assert not errors, cp.stdout


def test_programs_and_man_pages_from_the_unpacked_tree(root, tmp_path):
    out = sh(root / "usr/bin/slab", "--help").stdout
    assert "Subcommands:" in out and "import" in out
    assert sh(root / "usr/bin/slab", "--version").stdout.strip().endswith(VERSION)
    assert sh(root / "usr/bin/slabfs", "--version").stdout.startswith(f"slabfs {VERSION}")
    c = tmp_path / "a.slab"
    sh(root / "usr/bin/slab", "create", c)
    sh(root / "usr/bin/slab", "mkdset", c, "/x", "--dtype", "f4", "--shape", "4,4")
    assert "/x" in slab("info", c, "/x").stdout
    # HDF5 through the packaged modules (/usr/lib/slabfs, found from the
    # packaged program's own place): an export, then reading it back.
    h5 = tmp_path / "a.h5"
    sh(root / "usr/bin/slab", "export", c, h5)
    assert "shape: 4,4" in sh(root / "usr/bin/slab", "info", h5, "/x").stdout
    env = dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="100")
    for page, words in (("slab", ["slab - create, inspect", "SUBCOMMAND", "repack", "EXAMPLES"]),
                        ("slabfs", ["slabfs - mount a slabfs container", "cache_size", "fuse.slabfs",
                                    "SEE ALSO"])):
        text = sh("man", "-l", root / f"usr/share/man/man1/{page}.1.gz", env=env).stdout
        text = re.sub(r".\x08", "", text)
        for w in words:
            assert w in text, (page, w)


def test_import_slabfs_from_the_unpacked_tree(root, tmp_path):
    site = root / "usr/lib/python3/dist-packages"
    code = textwrap.dedent("""\
        import sys, importlib.metadata as md, numpy as np, slabfs
        assert slabfs.__file__.startswith(sys.argv[1]), slabfs.__file__
        with slabfs.File(sys.argv[2], "w") as f:
            f.create_dataset("g/t", data=np.arange(12, dtype="f4").reshape(3, 4))
        with slabfs.File(sys.argv[2]) as f:
            print(float(f["g/t"][2, 3]))
        print(md.version("slabfs"))
        """)
    env = dict(os.environ, PYTHONPATH=str(site))
    out = sh("/usr/bin/python3", "-c", code, site, tmp_path / "p.slab", env=env).stdout.split()
    assert out == ["11.0", VERSION]


def test_cxx_program_through_the_packaged_cmake_config(root, tmp_path):
    # The config file finds the tree from its own place, so the unpacked
    # /usr works as a prefix.
    build = tmp_path / "build"
    sh("cmake", "-S", ROOT / "tests/install/consumer", "-B", build, f"-DCMAKE_PREFIX_PATH={root}/usr")
    sh("cmake", "--build", build)
    env = dict(os.environ, LD_LIBRARY_PATH=str(root / f"usr/lib/{multiarch()}"))
    assert sh(build / "consumer", tmp_path / "c.slab", env=env).stdout == "ok 23896\n"
    pc = (root / f"usr/lib/{multiarch()}/pkgconfig/slabfs.pc").read_text()
    assert "prefix=/usr\n" in pc and f"libdir=${{prefix}}/lib/{multiarch()}" in pc


def test_systemd_service_points_at_installed_files(root):
    unit = (root / "usr/lib/systemd/system/slabfs@.service").read_text()
    assert "ExecStart=/usr/bin/slabfs " in unit and "ExecStop=/usr/bin/umount-slabfs " in unit
    assert "/usr/local" not in unit
    docs = re.search(r"^Documentation=(.*)$", unit, re.M).group(1).split()
    assert "man:slabfs(1)" in docs
    files = [d[len("file://"):] for d in docs if d.startswith("file://")]
    assert files
    for f in files:
        assert (root / f.lstrip("/")).exists(), f
    assert (root / "usr/share/slabfs/systemd/slabfs@.service").read_text() == unit


def test_bash_completion_from_the_package(root):
    script = textwrap.dedent(f"""\
        source {root}/usr/share/bash-completion/completions/slab
        COMP_WORDS=(slab imp); COMP_CWORD=1; _slab; echo "${{COMPREPLY[*]}}"
        COMP_WORDS=(slab export --fo); COMP_CWORD=2; _slab; echo "${{COMPREPLY[*]}}"
        """)
    env = dict(os.environ, PATH=f"{root}/usr/bin:{os.environ['PATH']}")
    assert sh("bash", "-c", script, env=env).stdout.splitlines() == ["import", "--format"]


def test_mount_t_fuse_slabfs_runs_the_packaged_daemon(root, tmp_path):
    """mount(8) runs mount.fuse3 (package fuse3), which runs `slabfs` found
    on PATH: here the packaged one, bound over /usr/local/bin in a private
    mount namespace (the package puts it in /usr/bin)."""
    if not os.path.exists("/dev/fuse") or not shutil.which("mount.fuse3"):
        pytest.skip("needs /dev/fuse and mount.fuse3")
    c = tmp_path / "m.slab"
    slab("create", c)
    slab("mkdset", c, "/t", "--dtype", "u1", "--shape", "5")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = textwrap.dedent(f"""\
        set -euo pipefail
        mount --make-rprivate /
        mount --bind {root}/usr/bin /usr/local/bin
        trap 'umount -l {mnt} 2>/dev/null || true' EXIT
        mount -t fuse.slabfs -o log_level=warn {c} {mnt}
        for p in $(pgrep -x slabfs); do
          if tr '\\0' ' ' < /proc/$p/cmdline | grep -qF -- "{c}"; then readlink /proc/$p/exe; fi
        done
        printf 'hello' > {mnt}/t
        umount-slabfs {mnt}
        """)
    cp = subprocess.run(["unshare", "-m", "bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert cp.stdout.strip().endswith("/usr/local/bin/slabfs"), cp.stdout
    out = tmp_path / "t.bin"
    slab("export", c, "/t", out)
    assert out.read_bytes() == b"hello"
