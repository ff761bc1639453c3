"""A differential harness: the same script runs against h5py and against
slabfs, and what each step returned or raised must agree, so h5py's
behaviour is the oracle.

A case is a function ``case(h5, new_path, check)``:

- ``h5`` is the module under test (``h5py`` or ``slabfs``), used as a user
  would: ``h5.File``, ``h5.Group``, ``h5.Dataset``;
- ``new_path(stem)`` gives a path for a new file (``stem.h5`` or
  ``stem.slab`` in a directory of the run's own);
- ``check(label, fn)`` calls ``fn()`` and records what it returned or the
  class of what it raised. Each step that matters goes through ``check``.

The two records are compared step by step: values after ``normal`` (numpy
arrays by dtype, shape and elements; numpy scalars by dtype and value;
groups and datasets by class and name), exceptions by class (slabfs's must
be an instance of h5py's). An intended difference is declared where it is
checked, with ``check(label, fn, slabfs_raises=Cls)`` (slabfs raises
``Cls`` where h5py raises another class or returns: what slabfs leaves
out), ``slabfs_returns=True`` (h5py refuses what slabfs
does, such as a negative step) or ``slabfs_value=v`` (slabfs returns `v`,
such as None in maxshape for a dimension fixed at 0); docs/python.md lists
each of them.
"""
import collections.abc
import numbers

import numpy as np

CASES = []


def case(fn):
    """Registers a case (see the module docstring)."""
    CASES.append(fn)
    return fn


class Raised:
    """A recorded exception."""

    def __init__(self, exc):
        self.exc = exc

    def __repr__(self):
        return f"raises {type(self.exc).__name__}({self.exc})"


_UNSET = object()


class Step:
    __slots__ = ("label", "result", "slabfs_raises", "slabfs_returns", "slabfs_value")

    def __init__(self, label, result, slabfs_raises=None, slabfs_returns=False, slabfs_value=_UNSET):
        self.label = label
        self.result = result
        self.slabfs_raises = slabfs_raises
        self.slabfs_returns = slabfs_returns
        self.slabfs_value = slabfs_value


def _name(obj):
    try:
        return obj.name
    except Exception:  # noqa: BLE001 -- a removed object has no name (h5py: None)
        return None


def normal(v, h5):
    """A comparable form of a value returned by either module."""
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.tolist())
    if isinstance(v, np.generic):
        return ("numpy scalar", v.dtype.str, v.item())
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, type):
        for name in ("File", "Group", "Dataset"):
            if isinstance(v, type) and issubclass(v, getattr(h5, name)):
                return ("class", name)
        return ("class", v.__name__)
    if isinstance(v, h5.File):
        return ("File", _name(v))
    if isinstance(v, h5.Group):
        return ("Group", _name(v))
    if isinstance(v, h5.Dataset):
        return ("Dataset", _name(v))
    if isinstance(v, (bool, str, bytes, type(None))):
        return (type(v).__name__, v)
    if isinstance(v, numbers.Integral):
        return ("int", int(v))
    if isinstance(v, numbers.Real):
        return ("float", float(v))
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    if isinstance(v, dict):
        return ("dict", sorted((k, normal(x, h5)) for k, x in v.items()))
    if isinstance(v, tuple):
        return ("tuple", [normal(x, h5) for x in v])
    if isinstance(v, (list, collections.abc.KeysView, collections.abc.ValuesView,
                      collections.abc.ItemsView)):
        return ("list", [normal(x, h5) for x in v])
    return ("object", type(v).__name__)


def run(case_fn, h5, new_path):
    """The steps of one case run against module `h5`."""
    steps = []

    def check(label, fn, *, slabfs_raises=None, slabfs_returns=False, slabfs_value=_UNSET):
        try:
            result = normal(fn(), h5)
        except Exception as e:  # noqa: BLE001 -- recording is the point
            result = Raised(e)
        if slabfs_value is not _UNSET:
            slabfs_value = normal(slabfs_value, h5)
        steps.append(Step(label, result, slabfs_raises, slabfs_returns, slabfs_value))

    try:
        case_fn(h5, new_path, check)
    except Exception as e:  # noqa: BLE001
        steps.append(Step("(the case itself)", Raised(e)))
    return steps


def compare(want, got):
    """The differences between h5py's steps (`want`) and slabfs's (`got`)."""
    problems = []
    for i in range(max(len(want), len(got))):
        if i >= len(want) or i >= len(got):
            extra = (want if i < len(want) else got)[i]
            problems.append(f"step {i} ({extra.label}) ran only under "
                            f"{'h5py' if i < len(want) else 'slabfs'}: {extra.result!r}")
            continue
        w, g = want[i], got[i]
        label = w.label if w.label == g.label else f"{w.label} / {g.label}"
        if w.slabfs_raises and isinstance(g.result, Raised) and isinstance(g.result.exc, w.slabfs_raises):
            continue  # declared: slabfs refuses with this class (h5py may not refuse)
        if w.slabfs_value is not _UNSET:
            if isinstance(g.result, Raised) or g.result != w.slabfs_value:
                problems.append(f"{label}: slabfs {g.result!r}, want {w.slabfs_value!r} (h5py {w.result!r})")
        elif isinstance(w.result, Raised):
            if w.slabfs_returns and not isinstance(g.result, Raised):
                continue
            cls = w.slabfs_raises or type(w.result.exc)
            if isinstance(g.result, Raised) and isinstance(g.result.exc, cls):
                continue
            problems.append(f"{label}: h5py {w.result!r}, slabfs {g.result!r} (want {cls.__name__})")
        elif isinstance(g.result, Raised) or w.result != g.result:
            problems.append(f"{label}: h5py {w.result!r}, slabfs {g.result!r}")
    return problems
