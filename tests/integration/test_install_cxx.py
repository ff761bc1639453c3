"""C++ users of an installed slabfs: `cmake --install` of this build into a
temporary prefix, then a program outside the tree (tests/install/consumer)
built against it with find_package(slabfs) and with pkg-config, and the
README's C++ example built with the README's own command line. Nothing of
the project is rebuilt: the install copies the build as it is."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BIN, ROOT, slab

BUILD = BIN.parent
CONSUMER = ROOT / "tests" / "install" / "consumer"


def sh(*args, env=None, cwd=None, timeout=300):
    cp = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, cwd=cwd,
                        timeout=timeout)
    assert cp.returncode == 0, f"{' '.join(map(str, args))}: exit {cp.returncode}\n{cp.stdout}\n{cp.stderr}"
    return cp


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if not list((BUILD / "lib").glob("libslabfs.so*")):
        pytest.fail(f"{BUILD}/lib/libslabfs.so is not built (cmake --build {BUILD} --target slabfs_shared)")
    p = tmp_path_factory.mktemp("prefix")
    sh("cmake", "--install", BUILD, "--prefix", p, "--component", "Unspecified")
    return p


def pkg_env(prefix):
    return dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"),
                LD_LIBRARY_PATH=str(prefix / "lib"))


def test_installs_headers_library_and_config_files(prefix):
    assert sorted(p.name for p in (prefix / "include" / "slabfs").iterdir()) == sorted(
        p.name for p in (ROOT / "include" / "slabfs").glob("*.h"))
    lib = prefix / "lib"
    assert (lib / "libslabfs.so").is_symlink()
    real = (lib / "libslabfs.so").resolve()
    soname = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", sh("readelf", "-d", real).stdout).group(1)
    assert soname == "libslabfs.so.0.1" and (lib / soname).exists()
    assert (lib / "cmake" / "slabfs" / "slabfsConfig.cmake").exists()
    assert (lib / "cmake" / "slabfs" / "slabfsConfigVersion.cmake").exists()
    pc = (lib / "pkgconfig" / "slabfs.pc").read_text()
    assert f"prefix={prefix}\n" in pc
    # The headers include nothing but the standard library and each other.
    for h in (prefix / "include" / "slabfs").iterdir():
        for inc in re.findall(r'#include [<"]([^>"]+)[>"]', h.read_text()):
            assert inc.startswith("slabfs/") or "/" not in inc and "." not in inc, (h.name, inc)


def test_find_package_consumer_builds_and_runs(prefix, tmp_path):
    build = tmp_path / "build"
    sh("cmake", "-S", CONSUMER, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}")
    sh("cmake", "--build", build)
    # The build tree's run path finds libslabfs in the prefix without LD_LIBRARY_PATH.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = sh(build / "consumer", tmp_path / "c.slab", env=env).stdout
    assert out == "ok 23896\n"
    # What it wrote is a container like any other.
    assert "dataset" in slab("ls", "-l", tmp_path / "c.slab", "/detector").stdout


def test_find_package_refuses_another_minor_version(prefix, tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(p LANGUAGES CXX)\nfind_package(slabfs 0.2 REQUIRED)\n")
    cp = subprocess.run(["cmake", "-S", project, "-B", tmp_path / "b", f"-DCMAKE_PREFIX_PATH={prefix}"],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode != 0 and "slabfs" in cp.stderr


def test_pkg_config_consumer_builds_and_runs(prefix, tmp_path):
    env = pkg_env(prefix)
    flags = sh("pkg-config", "--cflags", "--libs", "slabfs", env=env).stdout.split()
    assert f"-I{prefix}/include" in flags and "-lslabfs" in flags
    assert sh("pkg-config", "--modversion", "slabfs", env=env).stdout.strip() == "0.1.0"
    sh("g++", "-std=c++23", "-o", tmp_path / "consumer", CONSUMER / "main.cc", *flags, env=env)
    assert sh(tmp_path / "consumer", tmp_path / "c.slab", env=env).stdout == "ok 23896\n"


def readme_cpp_example():
    """The README's C++ program and the command line it says builds it."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"```cpp\n(.*?)```\s*\n.*?```sh\n(g\+\+ [^\n]*)\n", text, re.S)
    assert m, "README.md: no ```cpp block followed by a ```sh block with the g++ line"
    return m.group(1), m.group(2)


def test_readme_cpp_example_builds_with_the_documented_line(prefix, tmp_path):
    code, line = readme_cpp_example()
    (tmp_path / "app.cc").write_text(code)
    env = pkg_env(prefix)
    sh("bash", "-c", line.split("#")[0], env=env, cwd=tmp_path)
    slab("create", tmp_path / "run.slab")
    slab("mkgroup", "-p", tmp_path / "run.slab", "/detector")
    slab("mkdset", tmp_path / "run.slab", "/detector/frames", "--dtype", "u2", "--shape", "100,2048,2048",
         "--chunks", "1,512,512")
    cp = subprocess.run([tmp_path / "app"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    # A missing dataset is reported, not a crash.
    slab("rm", tmp_path / "run.slab", "/detector/frames")
    cp = subprocess.run([tmp_path / "app"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert cp.returncode == 1 and "/detector/frames" in cp.stderr, cp.stdout + cp.stderr
