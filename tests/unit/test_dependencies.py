"""The declared dependencies are honest: every third-party module the package imports is declared, nothing
declared goes unused, and pyproject pins no exact version (the pin belongs in constraints.txt)."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _requirements() -> list[str]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported_top_levels() -> set[str]:
    found = set()
    for path in (REPO / "precomet").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"precomet", "__future__"}


def test_every_imported_third_party_module_is_declared():
    declared = {_name(r) for r in _requirements()}
    owners = packages_distributions()
    undeclared = {}
    for module in _imported_top_levels():
        distributions = {d.lower().replace("_", "-") for d in owners.get(module, [module])}
        if not distributions & declared:
            undeclared[module] = sorted(distributions)
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_every_declared_dependency_is_imported():
    owners = packages_distributions()
    imported = {d.lower().replace("_", "-") for m in _imported_top_levels() for d in owners.get(m, [m])}
    unused = {_name(r) for r in _requirements()} - imported
    assert not unused, f"declared but never imported by precomet: {sorted(unused)}"


def test_pyproject_pins_ranges_and_constraints_pin_torch():
    exact = [r for r in _requirements() if "==" in r]
    assert not exact, f"exact pins belong in constraints.txt, not [project]: {exact}"
    assert re.search(r"^torch==\d", (REPO / "constraints.txt").read_text(), flags=re.M)
