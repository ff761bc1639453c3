"""The package's modules form the stack its docstring declares
(python/slabfs/__init__.py): read from the sources with `ast`, every import
of one slabfs module by another goes to an earlier layer, so the import
graph has no cycle; no import hides inside a function (a late import is a
cycle put off until run time); an import under ``if TYPE_CHECKING:`` (for
annotations only, never run) sits in a module whose annotations are not
evaluated."""
import ast
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "slabfs"


def declared_layers(package):
    """{module: layer number} from the numbered list in the package docstring."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
    layers = {}
    for m in re.finditer(r"^\s*(\d+)\. ([\w, ]+?)(?:\s{2,}|$)", doc, re.MULTILINE):
        for name in m.group(2).split(","):
            assert name.strip() not in layers, f"{name.strip()} is listed twice"
            layers[name.strip()] = int(m.group(1))
    return layers


def module_sources(package):
    """{module: path}: the .py files, and the extension module's stub."""
    mods = {p.stem: p for p in package.glob("*.py")}
    mods.update({p.stem: p for p in package.glob("*.pyi") if p.stem not in mods})
    return mods


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node, module, modules):
    """The slabfs modules an import statement in `module` imports."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
        return {n.split(".")[1] if "." in n else "__init__" for n in names if n.split(".")[0] == "slabfs"}
    if node.level == 0 and (node.module or "").split(".")[0] != "slabfs":
        return set()
    if node.level > 1:
        raise AssertionError(f"{module}: `from {'.' * node.level}{node.module or ''}` leaves the package")
    parts = (node.module or "").split(".")
    sub = parts[1] if node.level == 0 and len(parts) > 1 else (parts[0] if node.level and node.module else None)
    if sub is not None:
        return {sub}
    # from . import x / from slabfs import x: modules, or names of __init__.
    return {a.name if a.name in modules else "__init__" for a in node.names}


def import_graph(package):
    """(runtime edges, typing-only edges, problems) of the package's modules."""
    modules = module_sources(package)
    runtime, typing_only, problems = set(), set(), []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        top = set()
        future_annotations = False
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                top.add(stmt)
                if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
                    future_annotations |= any(a.name == "annotations" for a in stmt.names)
                runtime.update((module, t) for t in _targets(stmt, module, modules))
            elif isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
                for inner in stmt.body:
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        top.add(inner)
                        targets = _targets(inner, module, modules)
                        typing_only.update((module, t) for t in targets)
                        if targets and not future_annotations and path.suffix == ".py":
                            problems.append(f"{module}: imports {sorted(targets)} under TYPE_CHECKING "
                                            "without `from __future__ import annotations`")
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node not in top:
                problems.append(f"{module}:{node.lineno}: an import that is not at the module's top level")
    runtime.discard(("__init__", "__init__"))
    return runtime, typing_only, problems


def cycle(edges):
    """A cycle of the directed graph as a list of nodes, or None."""
    succ = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    state, path = {}, []

    def visit(n):
        state[n] = "open"
        path.append(n)
        for m in sorted(succ.get(n, ())):
            if state.get(m) == "open":
                return path[path.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        path.pop()
        state[n] = "done"
        return None

    for n in sorted(succ):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def layer_violations(layers, runtime):
    return [f"{a} (layer {layers[a]}) imports {b} (layer {layers[b]})"
            for a, b in sorted(runtime) if layers[b] >= layers[a]]


def test_every_module_is_in_one_declared_layer():
    layers = declared_layers(PACKAGE)
    modules = set(module_sources(PACKAGE))
    assert set(layers) == modules, (f"not in the docstring's layers: {sorted(modules - set(layers))}; "
                                    f"listed but missing: {sorted(set(layers) - modules)}")


def test_imports_follow_the_layers_and_form_no_cycle():
    layers = declared_layers(PACKAGE)
    runtime, typing_only, problems = import_graph(PACKAGE)
    assert problems == []
    assert cycle(runtime) is None
    assert layer_violations(layers, runtime) == []
    # The stack is real: the graph has the edges the layers describe.
    assert {("base", "attrs"), ("dataset", "base"), ("group", "dataset"), ("files", "group"),
            ("xarray_backend", "files")} <= runtime
    # Annotations only may look up the stack (Node.file is a File).
    assert {("base", "files"), ("base", "group")} <= typing_only


def write_package(root, files):
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_the_checks_catch_a_late_import_an_upward_import_and_a_cycle(tmp_path):
    pkg = write_package(tmp_path / "slabfs", {
        "__init__.py": '"""x\n\n    1. low\n    2. high\n    3. __init__\n"""\nfrom . import high\n',
        "low.py": "from .high import H\n\n\ndef f():\n    from . import high\n    return high\n",
        "high.py": "from typing import TYPE_CHECKING\nfrom .low import f\nif TYPE_CHECKING:\n    from .low import g\n",
    })
    layers = declared_layers(pkg)
    assert layers == {"low": 1, "high": 2, "__init__": 3}
    runtime, typing_only, problems = import_graph(pkg)
    assert runtime == {("low", "high"), ("high", "low"), ("__init__", "high")}
    assert typing_only == {("high", "low")}
    assert any("low:5: an import that is not at the module's top level" in p for p in problems)
    assert any("high: imports ['low'] under TYPE_CHECKING without" in p for p in problems)
    assert cycle(runtime) in (["low", "high", "low"], ["high", "low", "high"])
    assert layer_violations(layers, runtime) == ["low (layer 1) imports high (layer 2)"]


@pytest.mark.parametrize("stmt, want", [
    ("import slabfs.group", {"group"}),
    ("import numpy", set()),
    ("from slabfs import group", {"group"}),
    ("from slabfs.group import Group", {"group"}),
    ("from . import group, File", {"group", "__init__"}),
    ("from .group import Group", {"group"}),
])
def test_import_targets(stmt, want):
    node = ast.parse(stmt).body[0]
    assert _targets(node, "files", {"group", "files", "__init__"}) == want
