"""A simple CSV input: one row per item, a header naming the columns.

Columns: ``id`` and ``src`` (required); optional ``ref``, ``doc``, ``domain``, ``cost``; then any number of
``tgt:SYSTEM`` (the output of SYSTEM) and ``score:NAME:SYSTEM`` (score NAME of SYSTEM; ``human`` for the
human judgement, anything else e.g. ``score:chrF:sysA``) columns. NAME stops at the second colon, so SYSTEM may
contain colons. Empty cells mean "missing": no output, NaN score, ``doc`` = the id, ``domain`` = ``all``,
``cost`` = ``0.15 · len(src) + 33.7``. Systems are listed in the order of their first column. Ids are read exactly,
spaces, tabs and carriage returns included (as the JSONL input and every batch keep them); a blank id is refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import DataError
from precomet.io.text import read_csv_rows
from precomet.values import finite_number, is_blank

FIXED_COLUMNS = ("id", "src", "ref", "doc", "domain", "cost")


def _columns(
    path: Path, header: list[str]
) -> tuple[dict[str, int], dict[str, int], dict[tuple[str, str], int], list[str]]:
    fixed: dict[str, int] = {}
    outputs: dict[str, int] = {}
    scores: dict[tuple[str, str], int] = {}
    systems: dict[str, None] = {}
    for position, column in enumerate(header):
        if column in fixed or column in FIXED_COLUMNS:
            if column in fixed:
                raise DataError(path, f"duplicate column {column!r}", line=1)
            fixed[column] = position
        elif column.startswith("tgt:") and len(column) > 4:
            if column[4:] in outputs:
                raise DataError(
                    path, f"duplicate column {column!r} (columns {outputs[column[4:]] + 1} and {position + 1})", line=1
                )
            outputs[column[4:]] = position
            systems[column[4:]] = None
        elif column.startswith("score:") and column.count(":") >= 2 and all(column.split(":", 2)[1:]):
            _, name, system = column.split(":", 2)
            if (name, system) in scores:
                raise DataError(path, f"duplicate column {column!r}", line=1)
            scores[(name, system)] = position
            systems[system] = None
        else:
            raise DataError(
                path,
                f"unknown column {column!r}; expected {', '.join(FIXED_COLUMNS)}, tgt:SYSTEM or score:NAME:SYSTEM",
                line=1,
            )
    for required in ("id", "src"):
        if required not in fixed:
            raise DataError(path, f"missing required column {required!r}", line=1)
    return fixed, outputs, scores, list(systems)


def load_csv(path: str | Path, *, name: str | None = None) -> Campaign:
    """Load the simple CSV format (see the module docstring)."""
    path = Path(path)
    rows = read_csv_rows(path, unescape=True)
    if not rows:
        raise DataError(path, "empty file; expected a header row")
    header = rows[0][1]
    fixed, out_cols, score_cols, systems = _columns(path, header)
    body = [(number, row) for number, row in rows[1:] if any(cell.strip() for cell in row)]
    if not body:
        raise DataError(path, "no item rows after the header")
    n = len(body)
    column = {s: j for j, s in enumerate(systems)}
    score_names = list(dict.fromkeys(score for score, _ in score_cols))
    matrices = {score: np.full((n, len(systems)), np.nan) for score in score_names}
    outputs: dict[str, list[str | None]] = {s: [None] * n for s in out_cols}
    ids, src, ref, doc, domain, cost = [], [], [], [], [], []
    seen: dict[str, int] = {}
    for i, (number, row) in enumerate(body):
        if len(row) != len(header):
            raise DataError(path, f"expected {len(header)} fields as in the header, got {len(row)}", line=number)
        item_id = row[fixed["id"]]  # kept exactly, as the JSONL input and every batch keep it (" a" is not "a")
        if not item_id.strip():
            raise DataError(path, "empty id", line=number)
        if item_id in seen:
            raise DataError(path, f"duplicate id {item_id!r} (first on line {seen[item_id]})", line=number)
        seen[item_id] = number
        if is_blank(row[fixed["src"]]):
            raise DataError(path, f"item {item_id!r}: empty source 'src'", line=number)
        ids.append(item_id)
        src.append(row[fixed["src"]])
        ref.append(row[fixed["ref"]] if "ref" in fixed else None)
        doc.append(row[fixed["doc"]] or item_id if "doc" in fixed else item_id)
        domain.append(row[fixed["domain"]] or "all" if "domain" in fixed else "all")
        cost.append(_cost(path, number, item_id, row[fixed["cost"]]) if "cost" in fixed else None)
        for system, position in out_cols.items():
            outputs[system][i] = row[position] or None
        for (score, system), position in score_cols.items():
            cell = row[position].strip()
            if cell:
                matrices[score][i, column[system]] = finite_number(
                    cell, what=f"item {item_id!r}, system {system!r}, score {score!r}", path=path, line=number
                )
    return Campaign.build(
        ids=ids,
        src=src,
        systems=systems,
        outputs=outputs,
        scores=matrices,
        ref=ref if "ref" in fixed else None,
        doc=doc,
        domain=domain,
        cost=cost,
        name=name or path.stem,
    )


def _cost(path: Path, line: int, item_id: str, cell: str) -> float | None:
    if not cell.strip():
        return None
    return finite_number(cell, what=f"item {item_id!r}, field 'cost'", path=path, line=line, positive=True)
