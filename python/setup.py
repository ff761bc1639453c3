"""The build step of python/pyproject.toml: the extension module
slabfs._slabfs is built by the project's CMake (target _slabfs, which builds
the engine it links), then copied where setuptools packs it with the .py
files.

SLABFS_CMAKE_BUILD_DIR=DIR uses an existing, configured build directory (for
example the project's build/) instead of configuring a new one under
setuptools' build/temp: only what is out of date is rebuilt there.
SLABFS_CMAKE_JOBS sets the build's parallelism (default: every core)."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
VERSION = re.search(r"project\(slabfs VERSION (\S+)", (ROOT / "CMakeLists.txt").read_text()).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("SLABFS_CMAKE_BUILD_DIR")
        if not build_dir:
            build_dir = str(pathlib.Path(self.build_temp).resolve() / "cmake")
            subprocess.check_call([
                "cmake", "-S", str(ROOT), "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                f"-DPython3_EXECUTABLE={sys.executable}", "-DSLABFS_BUILD_TESTS=OFF",
                "-DSLABFS_BUILD_BENCH=OFF", "-DSLABFS_BUILD_PYTHON=ON"])
        jobs = os.environ.get("SLABFS_CMAKE_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_slabfs", "-j", jobs])
        built = sorted((pathlib.Path(build_dir) / "python" / "slabfs").glob("_slabfs*.so"))
        if not built:
            sys.exit(f"slabfs: {build_dir} built no Python module (pybind11-dev and python3-dev are needed)")
        dest = pathlib.Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], dest)


setup(version=VERSION,
      ext_modules=[Extension("slabfs._slabfs", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
