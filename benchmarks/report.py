"""For the benchmark scripts that print their tables: what they print also goes to their results file, under the
``Command:`` line of the very invocation that printed it."""

from __future__ import annotations

import io
import shlex
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any

from paths import REPO  # benchmarks/paths.py


class _Tee(io.TextIOBase):
    """A text stream writing to several streams."""

    def __init__(self, *streams) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def invocation() -> str:
    """This process's command as the results files write it: ``.venv/bin/python benchmarks/SCRIPT ARGS``."""
    script = Path(sys.argv[0]).resolve().relative_to(REPO)
    return " ".join([".venv/bin/python", str(script), *map(shlex.quote, sys.argv[1:])])


@contextmanager
def results_file(path: Path, title: str, *, fenced: bool = False) -> Iterator[None]:
    """Everything printed inside the block is also written to ``path`` (when the block ends without an error):
    ``# title``, the ``Command:`` line, then the printed text (in a code block when ``fenced``: plain-text tables)."""
    printed = io.StringIO()
    with redirect_stdout(_Tee(sys.stdout, printed)):
        yield
    body = printed.getvalue().strip("\n")
    body = f"```\n{body}\n```" if fenced else body
    path.write_text(f"# {title}\n\nCommand: `{invocation()}`\n\n{body}\n", encoding="utf-8")
    print(f"wrote {path}")


def p_text(p: float) -> str:
    """``"p 0.005"``, or ``"n.s., p 0.190"`` when not below 0.05: indistinguishable from random orderings."""
    return f"p {p:.3f}" if p < 0.05 else f"n.s., p {p:.3f}"


def verdict_cell(row: Mapping[str, Any]) -> str:
    """A result row's parity with its verdict against random orderings (:func:`p_text`, on the SPA gain):
    ``"71.4% (p 0.005)"``, ``"83.0% (n.s., p 0.190)"``."""
    parity = f"{100 * row['parity']:.1f}%"
    p = row.get("p_value")
    return f"{parity} (no null)" if p is None else f"{parity} ({p_text(p)})"


def parity_band(null: Mapping[str, Any]) -> str:
    """A null summary's parity (:func:`precomet.benchmark.null_summary`) as ``"93 % (64–146 %)"``: median (5–95 %)."""
    return f"{100 * null['parity_median']:.0f} % ({100 * null['parity_p05']:.0f}–{100 * null['parity_p95']:.0f} %)"


def null_line(results: Mapping[str, Mapping[str, Any]]) -> str:
    """One line naming each result's null of random orderings: parity median and 5–95 % band."""
    parts = []
    for key, result in results.items():
        row = next((m for m in result["methods"].values() if m.get("null")), None)
        if row:
            parts.append(f"{key} {parity_band(row['null'])}")
    orderings = next(iter(results.values())).get("null_orderings", 0) if results else 0
    return (
        f"Null: {orderings} random orderings scored exactly as a method; their parity, median (5–95 %): "
        + "; ".join(parts)
        + ". p = share of them whose SPA gain over random is at least the row's (+1 correction); n.s. = p ≥ 0.05,"
        " indistinguishable from random orderings whatever the parity's point value."
    )
