"""Issue 52: the import graph has no circle — between modules, between precomet's packages, and among the scripts of
benchmarks/ and training/ — counting imports inside functions too. With no circle between packages, every arrow
points down one order of them (printed by the test: ``pytest -s``)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tests.conftest import REPO


def _modules() -> dict[str, Path]:
    """Every module of precomet/ (dotted name) and every script of benchmarks/ and training/ (``folder/name``)."""
    found = {}
    for path in (REPO / "precomet").rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    for folder in ("benchmarks", "training"):
        for path in (REPO / folder).glob("*.py"):
            found[f"{folder}/{path.stem}"] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports (anywhere in its body); a script's bare import of a sibling is that script.
    ``from P import m`` of a submodule ``m`` is an arrow to ``m``, as ``from P.m import x`` is: both run ``P``'s
    ``__init__`` first, which is no circle of the code's own."""

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        folder = name.partition("/")[0] if "/" in name else None
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:  # a submodule, or the module
                targets = [
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                    for alias in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                sibling = f"{folder}/{target.partition('.')[0]}" if folder else None
                found = sibling if sibling in modules else resolve(target) if target.startswith("precomet") else None
                if found and found != name:
                    graph[name].add(found)
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as err:
        return list(err.args[1])
    return None


def test_no_module_imports_itself_through_others():
    assert _circle(_imports(_modules())) is None


def test_precomets_packages_form_layers():
    graph = _imports(_modules())
    packages: dict[str, set[str]] = {}

    def package(name: str) -> str:
        return name.split(".")[1] if name.startswith("precomet.") else name

    for name, targets in graph.items():
        packages.setdefault(package(name), set())
        packages[package(name)] |= {package(t) for t in targets if package(t) != package(name)}
    assert _circle(packages) is None
    layers = list(TopologicalSorter(packages).static_order())
    print("precomet's packages, lowest first:", ", ".join(p for p in layers if "/" not in p))


def test_the_check_sees_a_circle():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) is not None
    assert _circle({"a": {"b"}, "b": set()}) is None
