"""h5py as the oracle (issue 22, item 5): every case in h5py_parity/ runs
once against Debian's h5py and once against slabfs, and each step must
return the same thing or raise the same class of exception (see
h5py_parity/__init__.py; intended differences are declared in the cases
and listed in docs/python.md)."""
import importlib

import h5py
import pytest

import slabfs
from h5py_parity import CASES, compare, run

# Importing a module of cases registers them.
for _module in ("scalars", "empty", "getitem", "copy", "groups", "datasets", "attributes", "files"):
    importlib.import_module(f"h5py_parity.{_module}")


def _paths(root, ext):
    root.mkdir()

    def new_path(stem="f"):
        return str(root / f"{stem}{ext}")
    return new_path


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_same_as_h5py(case, tmp_path):
    want = run(case, h5py, _paths(tmp_path / "h5py", ".h5"))
    got = run(case, slabfs, _paths(tmp_path / "slabfs", ".slab"))
    problems = compare(want, got)
    assert not problems, "\n".join(problems)


def test_the_oracle_is_h5py_and_the_cases_are_many():
    assert h5py.__name__ == "h5py" and len(CASES) >= 60
    assert len({c.__name__ for c in CASES}) == len(CASES)


def test_the_harness_sees_differences(tmp_path):
    """A value, an exception class and a missing step that differ are each
    reported; a declared difference is not."""
    def differing(h5, new_path, check):
        check("module", lambda: h5.__name__)
        check("raises", lambda: {"h5py": 1, "slabfs": {}}[h5.__name__]["x"])
        check("declared", lambda: [][0] if h5 is h5py else {}["x"], slabfs_raises=KeyError)
        check("value declared", lambda: h5.__name__, slabfs_value="slabfs")
        if h5 is h5py:
            check("only in h5py", lambda: None)

    want = run(differing, h5py, _paths(tmp_path / "a", ".h5"))
    got = run(differing, slabfs, _paths(tmp_path / "b", ".slab"))
    problems = compare(want, got)
    assert [p.split(":")[0] for p in problems] == ["module", "raises", "step 4 (only in h5py) ran only under h5py"]
