"""Does every published number trace to a results file? Lists every problem; exit status 1 when there is one.

    .venv/bin/python benchmarks/check_numbers.py

Checked (tests/unit/test_benchmarks_md.py runs the same functions):

* BENCHMARKS.md is what ``assemble_benchmarks_md.py`` makes of benchmarks/results/ (nobody edits it by hand);
* every section file exists, is either hand-written (``FINDINGS``) or written by a benchmark of
  ``regenerate.REGISTRY``, and every results file is a section;
* every script-written ``.md`` has a ``Command:`` line naming a script that exists;
* every findings file starts with ``Reads:`` naming the script-written results it interprets (files, or folders
  for every ``.md`` / ``.json`` below them), and so does every claims paragraph of README.md, docs/*.md and
  checkpoints/README.md (``<!-- claims: benchmarks/results/... -->`` ... ``<!-- /claims -->``);
* every number of a findings file or claims paragraph is in the results it reads. A number is a decimal, a
  percentage or an integer of at least 10, outside code, and not part of a name (wmt23, MetricX-23), a version, a
  date, a year, an issue, table or equation number, or a goal ("goal ≤ 30 s"). It traces when a results file
  shows it, shows it with more decimals (half up), or holds it as a JSON value (as such or × 100, at the same
  decimals).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from assemble_benchmarks_md import FINDINGS, SECTIONS, render  # sibling scripts (benchmarks/ is on sys.path)
from paths import REPO, RESULTS
from regenerate import REGISTRY

CODE = re.compile(r"```.*?```|`[^`\n]*`|<!--.*?-->|\]\([^)]*\)", re.DOTALL)
NUMBER = re.compile(r"(?<![\w.\-/^])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w.]*\d|[A-Za-z_])(\s*%)?")
ANY_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
NOT_A_QUANTITY = re.compile(
    r"(?:issues?|tables?|eq\.|equations?|algorithm|§|#|seed|section|app\.|figure|run|runs|step|stage|pr)\s*$",
    re.IGNORECASE,
)
GOAL = re.compile(r"\bgoal[^.;]{0,30}$", re.IGNORECASE)  # a requirement (goal ≤ 30 s), not a measurement
SCRIPT = re.compile(r"(?:benchmarks|training)/[\w./-]+\.py")
CLAIMS = re.compile(r"<!-- claims:([^>]*)-->(.*?)<!-- /claims -->", re.DOTALL)
READ = re.compile(r"benchmarks/results/[\w./-]*")


def numbers(text: str) -> list[tuple[str, str]]:
    """``(number, context)`` for every number of ``text`` that must trace (see the module docstring)."""
    prose = CODE.sub(lambda m: " " * len(m.group()), text)
    found = []
    for match in NUMBER.finditer(prose):
        whole, decimals, percent = match.group(1).replace(",", ""), match.group(2), match.group(3)
        before = prose[max(0, match.start() - 40) : match.start()]
        if NOT_A_QUANTITY.search(before[-12:]) or GOAL.search(before):
            continue
        if not decimals and not percent and (int(whole) < 10 or 1900 <= int(whole) <= 2100):
            continue
        context = " ".join(prose[max(0, match.start() - 40) : match.end() + 20].split())
        found.append((whole + (decimals or ""), context))
    return found


def _roundings(token: str) -> set[str]:
    """A shown number and every rounding of it to fewer decimals (half up, as people round)."""
    value = Decimal(token)
    places = len(token.partition(".")[2])
    return {str(value.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)) for d in range(places + 1)}


def _json_values(value) -> list[float]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _json_values(v)]
    if isinstance(value, list):
        return [x for v in value for x in _json_values(v)]
    return [float(value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def script_written(results: Path = RESULTS) -> list[Path]:
    """Every results file (``.md`` and ``.json``, any depth) that is not a hand-written findings file."""
    return sorted(
        p for p in results.rglob("*") if p.suffix in (".md", ".json") and p.relative_to(results).name not in FINDINGS
    )


def read_paths(text: str, results: Path = RESULTS) -> list[Path]:
    """The results files named in ``text`` (``benchmarks/results/NAME``; a folder stands for the files below it)."""
    named = [results / m.removeprefix("benchmarks/results/").rstrip("/.") for m in READ.findall(text)]
    return [p for path in named for p in (sorted(path.rglob("*")) if path.is_dir() else [path])]


def known_numbers(paths: list[Path]) -> set[str]:
    """Every way the files ``paths`` show a number (see the module docstring), signs and thousands commas dropped."""
    known: set[str] = set()
    for path in paths:
        if path.suffix not in (".md", ".json") or not path.is_file() or path.name in FINDINGS:
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".md":
            for token in ANY_NUMBER.findall(text):
                known |= _roundings(token.replace(",", "").rstrip("."))
            continue
        for value in _json_values(json.loads(text)):
            for shown in (abs(value), abs(100 * value)):
                if shown == shown and shown != float("inf"):  # not NaN or infinite
                    known |= {f"{shown:.{d}f}" for d in range(5)}
    return known


def documents() -> list[Path]:
    """The documents whose claims paragraphs are checked: README.md, docs/*.md and checkpoints/README.md."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "checkpoints" / "README.md"]


def readings(results: Path = RESULTS, docs: list[Path] | None = None) -> dict[str, tuple[str, str]]:
    """``{label: (reads line, text)}`` of every findings file and every claims paragraph of ``docs`` (default:
    :func:`documents`)."""
    out = {}
    for name in sorted(FINDINGS):
        if (results / name).exists():
            text = (results / name).read_text(encoding="utf-8")
            out[f"benchmarks/results/{name}"] = (text.splitlines()[0] if text.startswith("Reads:") else "", text)
    for doc in documents() if docs is None else docs:
        label = doc.relative_to(REPO) if doc.is_relative_to(REPO) else doc.name
        for k, (reads, text) in enumerate(CLAIMS.findall(doc.read_text(encoding="utf-8"))):
            out[f"{label} claims {k + 1}"] = (reads, text)
    return out


def untraced(results: Path = RESULTS, docs: list[Path] | None = None) -> list[str]:
    """``label: number (context)`` for every number of a findings file or claims paragraph that the results it
    reads do not show."""
    out = []
    for label, (reads, text) in readings(results, docs).items():
        known = known_numbers(read_paths(reads, results))
        out += [f"{label}: {n} ({c})" for n, c in numbers(text) if n not in known]
    return out


def structure_problems(
    results: Path = RESULTS, benchmarks_md: Path = REPO / "BENCHMARKS.md", docs: list[Path] | None = None
) -> list[str]:
    """Everything but the numbers: BENCHMARKS.md assembled, every section accounted for, Command and Reads lines."""
    problems = []
    if not benchmarks_md.exists() or benchmarks_md.read_text(encoding="utf-8") != render(results):
        problems.append("BENCHMARKS.md differs from what benchmarks/assemble_benchmarks_md.py makes: run it")
    written = {name for bench in REGISTRY for name in bench.writes}
    sections = {name for name, _ in SECTIONS}
    for name in sorted(sections):
        if name not in FINDINGS and name not in written:
            problems.append(f"{name}: a section no benchmark of benchmarks/regenerate.py writes")
        if not (results / name).exists():
            problems.append(f"{name}: not generated yet (make benchmarks)")
    for path in sorted(results.glob("*.md")):
        if path.name not in sections:
            problems.append(f"{path.name}: a results file that is no section of BENCHMARKS.md")
    for path in script_written(results):
        if path.suffix == ".md":
            problems += _command_problems(path, results)
    for label, (reads, _) in readings(results, docs).items():
        problems += _reads_problems(label, reads, results, written - FINDINGS)
    return problems


def _command_problems(path: Path, results: Path) -> list[str]:
    label = path.relative_to(results)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("Command:")]
    if not lines:
        return [f"{label}: no 'Command:' line"]
    scripts = [s for line in lines for s in SCRIPT.findall(line)]
    if not scripts:
        return [f"{label}: its Command line names no benchmarks/ or training/ script"]
    return [f"{label}: its Command line names {s}, which does not exist" for s in scripts if not (REPO / s).exists()]


def _reads_problems(label: str, reads: str, results: Path, readable: set[str]) -> list[str]:
    named = READ.findall(reads)
    if not named:
        return [f"{label}: names no results it reads ('Reads: benchmarks/results/...' / '<!-- claims: ... -->')"]
    top = {n.removeprefix("benchmarks/results/").split("/")[0] for n in named}
    return [
        f"{label}: reads {n}, which no benchmark writes"
        for n in sorted(top)
        if n not in readable and not (results / n).is_dir()
    ]


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    problems = structure_problems() + [f"untraced number: {line}" for line in untraced()]
    print("\n".join(problems) if problems else "every number traces to a results file")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
