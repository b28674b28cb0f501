"""Pairwise preference records ``(item, model_a, model_b, label)`` and where they come from.

Labels are ``a`` (model_a's output is better), ``b`` or ``tie``. Likert 1–8 judgments (1 = strong
preference for the first output, 8 = for the second; Hugging Face H4 blog) map 1–4 to ``a`` and 5–8 to ``b``,
or 4/5 to ``tie`` with ``likert_ties=True``. ``model_a`` is the output shown first when ``first_known`` is
true, which the position-bias report needs. Sources: per-item scores of systems in a campaign (tie margin),
AlpacaEval ``annotations.json`` files (LLM judge), CSV and JSONL files.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import DataError, PrecometError
from precomet.io import jsonsafe
from precomet.io.text import parse_json, read_csv_rows, read_json, read_lines, spreadsheet_cell
from precomet.outputs.atomic import atomic_write
from precomet.pairwise.diffuse import LABELS

log = logging.getLogger(__name__)

LIKERT = range(1, 9)


def _column(values: Iterable[object]) -> np.ndarray:
    values = list(values)
    column = np.empty(len(values), dtype=object)
    column[:] = [str(v) for v in values]
    return column


@dataclass(frozen=True, eq=False)
class Preferences:
    """Columnar preference records; build with :meth:`build`, which validates and copies."""

    item: np.ndarray
    model_a: np.ndarray
    model_b: np.ndarray
    label: np.ndarray
    first_known: np.ndarray
    source: str = "preferences"

    @classmethod
    def build(
        cls,
        *,
        item: Sequence[object] | np.ndarray,
        model_a: Sequence[object] | np.ndarray,
        model_b: Sequence[object] | np.ndarray,
        label: Sequence[object] | np.ndarray,
        first_known: bool | Sequence[bool] = True,
        source: str = "preferences",
    ) -> Preferences:
        item, a, b, lab = _column(item), _column(model_a), _column(model_b), _column(label)
        if not len(item) == len(a) == len(b) == len(lab):
            raise PrecometError(f"{source}: columns differ in length ({len(item)}, {len(a)}, {len(b)}, {len(lab)})")
        for i in np.flatnonzero(a == b)[:1]:
            raise PrecometError(f"{source}: record {i} (item {item[i]!r}) compares model {a[i]!r} with itself")
        for i in np.flatnonzero(~np.isin(lab, LABELS))[:1]:
            raise PrecometError(
                f"{source}: record {i} (item {item[i]!r}) has label {lab[i]!r}; expected {list(LABELS)}"
            )
        known = np.broadcast_to(np.asarray(first_known, dtype=bool), (len(item),)).copy()
        return cls(item, a, b, lab, known, source)

    def __len__(self) -> int:
        return len(self.item)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.model_a) | set(self.model_b)))

    def take(self, indices: np.ndarray) -> Preferences:
        idx = np.asarray(indices)
        return Preferences(
            self.item[idx], self.model_a[idx], self.model_b[idx], self.label[idx], self.first_known[idx], self.source
        )

    def check_models(self, models: Sequence[str]) -> None:
        """Raise if a record names a model outside ``models``."""
        unknown = sorted(set(self.models) - set(models))
        if unknown:
            raise PrecometError(f"{self.source}: records name unknown model(s) {unknown}; known: {sorted(models)}")

    def score_a(self) -> np.ndarray:
        """1 when model_a wins, 0 when model_b wins, 0.5 for a tie."""
        return np.select([self.label == "a", self.label == "b"], [1.0, 0.0], 0.5)


def likert_labels(
    values: Sequence[Any], *, likert_ties: bool = False, items: Sequence[object] | None = None
) -> list[str]:
    """Likert 1–8 -> ``a`` (1–4) / ``b`` (5–8); 4 and 5 become ``tie`` with ``likert_ties``."""
    labels = []
    for position, value in enumerate(values):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            number = float("nan")
        if not number.is_integer() or int(number) not in LIKERT:
            where = items[position] if items is not None else position
            raise PrecometError(f"item {where!r}: Likert value {value!r} is not an integer from 1 to 8")
        number = int(number)
        labels.append("tie" if likert_ties and number in (4, 5) else "a" if number <= 4 else "b")
    return labels


def from_scores(
    campaign: Campaign,
    *,
    score: str = HUMAN,
    systems: Sequence[str] | None = None,
    margin: float = 0.0,
    higher_is_better: bool = True,
) -> Preferences:
    """Records for every item and pair of ``systems`` (default all): the higher score wins, |Δ| <= margin ties.
    Items where either score is NaN are skipped."""
    systems = list(campaign.systems if systems is None else systems)
    columns = campaign.system_index(systems)
    if len(systems) < 2:
        raise PrecometError(f"preferences need at least two systems, got {systems}")
    if margin < 0:
        raise PrecometError(f"tie margin must be >= 0, got {margin}")
    matrix = campaign.score(score)[:, columns] * (1.0 if higher_is_better else -1.0)
    parts: dict[str, list[np.ndarray]] = {key: [] for key in ("item", "model_a", "model_b", "label")}
    for i, j in combinations(range(len(systems)), 2):
        delta = matrix[:, i] - matrix[:, j]
        keep = ~np.isnan(delta)
        parts["item"].append(campaign.ids[keep])
        parts["model_a"].append(np.full(keep.sum(), systems[i], dtype=object))
        parts["model_b"].append(np.full(keep.sum(), systems[j], dtype=object))
        parts["label"].append(np.where(delta[keep] > margin, "a", np.where(delta[keep] < -margin, "b", "tie")))
    return Preferences.build(
        **{key: np.concatenate(values) for key, values in parts.items()},
        first_known=False,
        source=f"{campaign.name}:{score}",
    )


# ------------------------------------------------------------------------------------------ AlpacaEval
def _alpaca_first_shown(record: dict, baseline_wins: bool) -> bool | None:
    """Whether output_1 was shown first. The weighted GPT-4-turbo judge answers ``m`` for the output shown
    first and ``M`` for the second; AlpacaEval shuffles the order and un-flips the preference afterwards."""
    raw: Any = record.get("raw_completion")
    try:
        token = raw["logprobs"]["content"][0]["token"]
    except (TypeError, KeyError, IndexError):
        return None
    if token not in ("m", "M"):
        return None
    return (token == "m") == baseline_wins


def load_alpacaeval(path: str | Path, *, margin: float = 0.0) -> Preferences:
    """AlpacaEval ``annotations.json`` (a file, or a directory searched recursively): ``preference`` in [1, 2]
    is the judge's probability-weighted preference for ``output_2``; > 1.5 + margin = generator_2 wins,
    < 1.5 − margin = generator_1 (the reference model) wins, otherwise a tie. ``model_a`` is the output the
    judge saw first when recoverable from ``raw_completion`` (else generator_1, with ``first_known`` false).
    Items are identified by a hash of the instruction so files of different models line up."""
    path = Path(path)
    files = sorted(path.rglob("annotations.json")) if path.is_dir() else [path]
    if not files:
        raise DataError(path, "no annotations.json below this directory")
    columns: dict[str, list] = {key: [] for key in ("item", "model_a", "model_b", "label", "first_known")}
    for file in files:
        records = read_json(file)
        if not isinstance(records, list):
            raise DataError(file, "expected a JSON list of AlpacaEval annotations")
        for n, record in enumerate(records):
            try:
                instruction, g1, g2 = record["instruction"], record["generator_1"], record["generator_2"]
                preference = record["preference"]
            except (KeyError, TypeError):
                raise DataError(file, f"record {n} lacks instruction/generator_1/generator_2/preference") from None
            for key, value in (("instruction", instruction), ("generator_1", g1), ("generator_2", g2)):
                if not isinstance(value, str) or not value.strip():
                    raise DataError(file, f"record {n}: field {key!r} must be a non-empty text, got {value!r:.40}")
            if preference is None:
                log.warning("%s: record %d has no preference; skipped", file, n)
                continue
            try:
                value = float(preference)
            except (TypeError, ValueError, OverflowError):
                value = float("nan")
            if isinstance(preference, (bool, str)) or not math.isfinite(value):
                raise DataError(file, f"record {n}: preference {preference!r:.40} is not a finite number") from None
            if not 1.0 <= value <= 2.0:
                raise DataError(file, f"record {n}: preference {value} outside [1, 2]")
            winner = "b" if value > 1.5 + margin else "a" if value < 1.5 - margin else "tie"
            first = _alpaca_first_shown(record, winner == "a") if winner != "tie" else None
            swap = first is False
            columns["item"].append(hashlib.sha1(instruction.encode("utf-8")).hexdigest()[:12])
            columns["model_a"].append(g2 if swap else g1)
            columns["model_b"].append(g1 if swap else g2)
            columns["label"].append({"a": "b", "b": "a"}.get(winner, winner) if swap else winner)
            columns["first_known"].append(first is not None)
    return Preferences.build(**columns, source=str(path))


# ------------------------------------------------------------------------------------------ CSV / JSONL
def _from_rows(rows: Iterable[tuple[int, dict]], path: Path, likert_ties: bool) -> Preferences:
    columns: dict[str, list] = {key: [] for key in ("item", "model_a", "model_b", "label")}
    for line, row in rows:
        try:
            item, model_a, model_b = row["item"], row["model_a"], row["model_b"]
        except (KeyError, TypeError):
            raise DataError(path, "a record needs item, model_a, model_b and label (or likert)", line=line) from None
        for key, value in (("model_a", model_a), ("model_b", model_b), ("item", item)):
            if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
                raise DataError(path, f"item {item!r}: field {key!r} must be a name (text), got {value!r}", line=line)
        if row.get("likert") not in (None, "") and row.get("label") not in (None, ""):
            raise DataError(path, f"item {item!r}: give 'label' or 'likert', not both", line=line)
        if row.get("likert") not in (None, ""):
            try:
                (label,) = likert_labels([row["likert"]], likert_ties=likert_ties, items=[item])
            except PrecometError as err:
                raise DataError(path, str(err), line=line) from None
        elif str(row.get("label", "")).strip().lower() in LABELS:
            label = str(row["label"]).strip().lower()
        else:
            raise DataError(path, f"label {row.get('label')!r} is not one of {list(LABELS)}", line=line)
        for key, value in zip(columns, (item, model_a, model_b, label)):
            columns[key].append(value)
    try:
        return Preferences.build(**columns, source=str(path))
    except PrecometError as err:
        raise DataError(path, str(err)) from None


def _csv_records(path: Path) -> list[tuple[int, dict[str, str]]]:
    """``(line, {column: cell})`` of a CSV file with a header row; blank rows are skipped, a row with another
    number of cells than the header raises."""
    rows = read_csv_rows(path, unescape=True)
    if not rows:
        raise DataError(path, "empty file; expected a header row item,model_a,model_b,label (or likert)", line=1)
    header = rows[0][1]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise DataError(path, f"column(s) {repeated} appear more than once in the header", line=rows[0][0])
    records = []
    for line, cells in rows[1:]:
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise DataError(path, f"expected {len(header)} fields as in the header, got {len(cells)}", line=line)
        records.append((line, dict(zip(header, cells))))
    return records


def load_preferences(path: str | Path, *, likert_ties: bool = False, margin: float = 0.0) -> Preferences:
    """Preferences from a CSV (header ``item,model_a,model_b,label|likert``), a JSONL file with those keys,
    or AlpacaEval annotations (an ``annotations.json`` file or a directory holding them)."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file or directory")
    if path.is_dir() or path.suffix == ".json":
        return load_alpacaeval(path, margin=margin)
    if path.suffix == ".csv":
        return _from_rows(_csv_records(path), path, likert_ties)
    if path.suffix == ".jsonl":
        lines = enumerate(read_lines(path), start=1)
        return _from_rows([(n, parse_json(text, path, line=n)) for n, text in lines if text.strip()], path, likert_ties)
    raise DataError(path, "unknown preference format; use .csv, .jsonl, AlpacaEval .json or a directory")


PREFERENCE_SUFFIXES = (".csv", ".jsonl")
"""The formats :func:`save_preferences` writes (suffixes compared case-insensitively, as output checks do)."""


def save_preferences(prefs: Preferences, path: str | Path) -> None:
    """Write records as CSV or JSONL (by suffix), readable by :func:`load_preferences`."""
    path = Path(path)
    rows = [
        dict(item=i, model_a=a, model_b=b, label=lab)
        for i, a, b, lab in zip(prefs.item, prefs.model_a, prefs.model_b, prefs.label)
    ]
    suffix = path.suffix.lower()
    if suffix not in PREFERENCE_SUFFIXES:
        raise PrecometError(f"{path}: preferences are written as .csv or .jsonl")
    with atomic_write(path, "w") as handle:
        if suffix == ".csv":
            writer = csv.DictWriter(handle, fieldnames=["item", "model_a", "model_b", "label"], lineterminator="\n")
            writer.writeheader()
            writer.writerows({key: spreadsheet_cell(str(value)) for key, value in row.items()} for row in rows)
        else:
            jsonsafe.dump_lines(rows, handle)
