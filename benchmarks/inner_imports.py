"""Why each import inside a function of precomet/ stays there (issue 33: imports at module level unless measured
start-up cost says otherwise). Writes benchmarks/results/inner-imports.md.

Usage: .venv/bin/python benchmarks/inner_imports.py [--repeats 5] [--out benchmarks/results/inner-imports.md]

For every module with imports inside functions, each in a fresh interpreter: the modules ``import M`` loads, and
for each inner import its target; an import is *free* when its target is already loaded by ``import M`` (it costs
nothing at module level), a *circle* when importing the target loads ``M`` (at module level it would run while ``M``
is half initialised). The others defer work: the table gives, per module, the median wall time of ``import M`` and
of ``import M`` followed by all its deferred targets (``--repeats`` runs each, alternated), so the start-up they
save is measured, not assumed.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from paths import REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def inner_imports() -> list[tuple[str, str]]:
    """``(module, target)`` of every import statement inside a function of precomet/."""
    found = []
    for path in sorted((REPO / "precomet").rglob("*.py")):
        module = module_name(path)
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, ast.Import):
                        found += [(module, alias.name) for alias in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                        found += [
                            (module, t) for t in dict.fromkeys(target_of(node.module, a.name) for a in node.names)
                        ]
    return found


def target_of(package: str, name: str) -> str:
    """``from package import name`` imports the submodule ``package.name`` when there is one, else ``package``."""
    folder = REPO.joinpath(*package.split("."))
    is_module = (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()
    return f"{package}.{name}" if package.startswith("precomet") and is_module else package


def loaded_by(module: str) -> set[str]:
    code = f"import importlib, json, sys; importlib.import_module({module!r}); print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return set(json.loads(out.stdout))


def seconds(statements: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", statements], cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "inner-imports.md")
    args = parser.parse_args()
    pairs = inner_imports()
    loaded: dict[str, set[str]] = {}
    for name in sorted({m for m, _ in pairs} | {t for _, t in pairs if t.startswith("precomet")}):
        loaded[name] = loaded_by(name)
    kinds: dict[str, int] = defaultdict(int)
    deferred: dict[str, set[str]] = defaultdict(set)
    for module, target in pairs:
        if target in loaded[module]:
            kinds["circle" if module in loaded.get(target, set()) else "free"] += 1
        else:
            kinds["deferred"] += 1
            deferred[module].add(target)
    rows = []
    for module, targets in sorted(deferred.items()):
        alone = f"import {module}"
        hoisted = f"import {module}; " + "; ".join(f"import {t}" for t in sorted(targets))
        times: dict[str, list[float]] = {"alone": [], "hoisted": []}
        for _ in range(args.repeats):
            times["alone"].append(seconds(alone))
            times["hoisted"].append(seconds(hoisted))
        a, h = statistics.median(times["alone"]), statistics.median(times["hoisted"])
        heavy = sorted({t.split(".")[0] for t in targets if not t.startswith("precomet")})
        rows.append((module, len(targets), a, h, heavy))
    lines = [
        "# Imports inside functions, measured",
        "",
        f"Command: `.venv/bin/python benchmarks/inner_imports.py --repeats {args.repeats}`; {len(pairs)} imports inside"
        f" functions of precomet/: {kinds['free']} free (target already loaded by the module: would cost nothing at"
        f" module level), {kinds['circle']} in a circle (the target's import loads the module), {kinds['deferred']}"
        " deferred. Per module with deferred imports: median wall time of a fresh `python -c 'import M'` and of the"
        " same with every deferred target imported too (what the module would cost at module level).",
        "",
        "| module | deferred targets | import M (s) | with them (s) | saved (s) | third-party among them |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for module, n, a, h, heavy in sorted(rows, key=lambda r: r[3] - r[2], reverse=True):
        lines.append(f"| `{module}` | {n} | {a:.2f} | {h:.2f} | {h - a:.2f} | {', '.join(heavy) or '–'} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
