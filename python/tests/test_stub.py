"""python/slabfs/_slabfs.pyi, the types of the extension module, against the
built module: the same functions, classes, methods and properties, each
function with the parameters pybind11 gives it (names, defaults, and the
unnamed ones positional only), so a change to python/src/ that the stub
does not follow fails here rather than misleading the type checks."""
import ast
import pathlib
import re

import pytest

from slabfs import _slabfs

STUB = pathlib.Path(__file__).resolve().parents[1] / "slabfs" / "_slabfs.pyi"


def stub_tree():
    return ast.parse(STUB.read_text())


def _is_typeddict(cls):
    """A TypedDict, or a class derived from one of the stub's TypedDicts."""
    typeddicts = {"TypedDict"}
    for node in stub_tree().body:  # in order: a base comes before the classes derived from it
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in typeddicts for b in node.bases):
            typeddicts.add(node.name)
    return any(isinstance(b, ast.Name) and b.id in typeddicts for b in cls.bases)


def stub_api():
    """{name: FunctionDef} of the module's functions and {class: {member:
    FunctionDef}} of its classes, from the stub (TypedDicts, which exist
    only there, left out)."""
    functions, classes = {}, {}
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            functions[node.name] = node
        elif isinstance(node, ast.ClassDef) and not _is_typeddict(node):
            classes[node.name] = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    return functions, classes


def runtime_signature(obj):
    """[(name, has default)] of a pybind11 function, from the signature on
    the first line of its docstring, without `self`."""
    doc = obj.__doc__ or ""
    m = re.match(r"\w*\((.*)\) ->", doc.splitlines()[0] if doc else "")
    assert m, f"no signature in the docstring of {obj!r}: {doc!r}"
    params, depth, cur = [], 0, ""
    for ch in m.group(1):  # split at the commas outside brackets (List[int], ...)
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(cur)
            cur = ""
        else:
            cur += ch
    params = [p.strip() for p in params + [cur] if p.strip()]
    out = [(p.split(":")[0].strip(), "=" in p) for p in params]
    return out[1:] if out and out[0][0] == "self" else out


def stub_signature(fn, is_method):
    """[(name, has default, positional only)] of a stub function, without `self`."""
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
    out = [(p.arg, d, i < len(a.posonlyargs)) for i, (p, d) in enumerate(zip(positional, defaults))]
    return out[1:] if is_method and not _is_static(fn) else out


def _is_static(fn):
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def _is_property(fn):
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def without_dunders(names):
    return {n for n in names if not (n.startswith("__") and n.endswith("__"))}


def test_stub_names_what_the_module_has():
    functions, classes = stub_api()
    assert set(functions) | set(classes) == without_dunders(dir(_slabfs))
    for name, members in classes.items():
        assert set(members) == without_dunders(vars(getattr(_slabfs, name))), name


def check_parameters(where, runtime, stub):
    assert len(stub) == len(runtime), f"{where}: the stub has {len(stub)} parameters, the module {len(runtime)}"
    for (name, default), (stub_name, stub_default, positional_only) in zip(runtime, stub):
        if re.fullmatch(r"arg\d+", name):
            assert positional_only, f"{where}: {stub_name} has no name in the module: put it before a `/`"
        else:
            assert (stub_name, positional_only) == (name, False), f"{where}: the module calls it {name}"
        assert stub_default == default, f"{where}: {stub_name} has a default in only one of them"


@pytest.mark.parametrize("name", sorted(stub_api()[0]))
def test_module_function_parameters(name):
    check_parameters(name, runtime_signature(getattr(_slabfs, name)), stub_signature(stub_api()[0][name], False))


@pytest.mark.parametrize("cls, member", sorted((c, m) for c, ms in stub_api()[1].items() for m in ms))
def test_member_parameters(cls, member):
    fn = stub_api()[1][cls][member]
    runtime = vars(getattr(_slabfs, cls))[member]
    assert _is_property(fn) == isinstance(runtime, property), f"{cls}.{member}: a property in only one of them"
    assert _is_static(fn) == isinstance(runtime, staticmethod), f"{cls}.{member}: static in only one of them"
    if isinstance(runtime, staticmethod):
        runtime = runtime.__func__
    if not _is_property(fn):
        check_parameters(f"{cls}.{member}", runtime_signature(runtime), stub_signature(fn, True))


def typeddict_keys(name):
    for node in stub_tree().body:
        if isinstance(node, ast.ClassDef) and node.name == name and _is_typeddict(node):
            return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)]
    raise AssertionError(f"no TypedDict {name} in the stub")


def test_dicts_have_the_keys_of_their_typeddicts(tmp_path):
    """The dicts the module builds from DatasetInfo, CacheStats and SpaceInfo
    (with VisitFields, python/src) have the stub's keys."""
    import slabfs

    with slabfs.File(str(tmp_path / "a.slab"), "w") as f:
        d = f.create_dataset("d", shape=(4,), dtype="u1")
        assert sorted(d.info()) == sorted(typeddict_keys("DatasetInfo"))
        assert list(f.cache_stats()) == typeddict_keys("CacheStats")
        assert list(f.space()) == typeddict_keys("SpaceInfo")
