#!/usr/bin/python3
"""How much of h5py's own test suite passes when its File, Group, Dataset
and AttributeManager are slabfs's?

Runs Debian's h5py tests (python3-h5py ships them) twice in the same run:
as they are, and with a pytest plugin that puts slabfs's classes in place
of h5py's before the tests import them; prints passed/failed/errors per
run, and with --failures the failing tests of the slabfs run grouped by
test class. Many of h5py's tests exercise what slabfs leaves out (links,
references, strings, drivers, `.id`; docs/python.md, "What stays out and
why"), so the slabfs column is not expected to reach h5py's.

    bench/h5py_suite.py [--python-dir build/python] [--failures]
"""
import argparse
import collections
import os
import pathlib
import re
import subprocess
import sys
import tempfile

from bench_common import machine

ROOT = pathlib.Path(__file__).resolve().parents[1]

PLUGIN = '''
import os, sys
sys.path.insert(0, os.environ["SLABFS_PYTHON_DIR"])
import h5py, slabfs
for name in ("File", "Group", "Dataset", "AttributeManager"):
    setattr(h5py, name, getattr(slabfs, name))
'''


def h5py_tests():
    out = subprocess.run([sys.executable, "-c", "import h5py, os; print(os.path.dirname(h5py.__file__))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    found = sorted(pathlib.Path(out).glob("**/tests/test_dataset.py"))
    if not found:
        sys.exit(f"no h5py tests under {out} (Debian's python3-h5py ships them)")
    return found[0].parent


def run(tests, plugin_dir=None, python_dir=None):
    """(counts, failing test ids) of one pytest run over h5py's tests."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    args = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "--rootdir", plugin_dir or ".",
            "-o", "faulthandler_timeout=120", str(tests)]
    if plugin_dir:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [plugin_dir, env.get("PYTHONPATH")]))
        env["SLABFS_PYTHON_DIR"] = str(python_dir)
        args[3:3] = ["-p", "slabfs_h5py_shim"]
    cp = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    last = cp.stdout.strip().splitlines()[-1] if cp.stdout.strip() else cp.stderr
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", last)}
    failing = [line.split()[1] for line in cp.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    return counts, failing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python-dir", default=str(ROOT / "build" / "python"),
                    help="the directory holding the slabfs package (default build/python)")
    ap.add_argument("--failures", action="store_true", help="list the slabfs run's failures by test class")
    a = ap.parse_args()
    tests = h5py_tests()
    with tempfile.TemporaryDirectory() as d:
        (pathlib.Path(d) / "slabfs_h5py_shim.py").write_text(PLUGIN)
        alone, _ = run(tests, plugin_dir=None)
        shim, failing = run(tests, plugin_dir=d, python_dir=pathlib.Path(a.python_dir).resolve())
    print(f"# {machine()}")
    print(f"# h5py's tests: {tests}")
    print(f"{'run':<28}{'passed':>8}{'failed':>8}{'errors':>8}{'skipped':>9}")
    for name, c in (("h5py", alone), ("slabfs in h5py's place", shim)):
        errors = c.get("errors", c.get("error", 0))
        print(f"{name:<28}{c.get('passed', 0):>8}{c.get('failed', 0):>8}{errors:>8}{c.get('skipped', 0):>9}")
    if a.failures:
        by_class = collections.Counter("::".join(t.split("::")[:2]) for t in failing)
        for name, n in by_class.most_common():
            print(f"{n:>5}  {name}")


if __name__ == "__main__":
    main()
