"""Google MQM error-level TSV (``wmt-mqm-human-evaluation``, e.g. ``ted/ende/mqm_ted_ende.tsv``) and the
rater-averaged ``*.avg_seg_scores.tsv`` files published beside it.

The TSV has a header (``system doc doc_id seg_id rater source target category severity [comment]``) and one
row per marked error, or one ``No-error`` row per rated (system, segment, rater). Text fields contain raw
``"`` characters, so it is parsed with quoting disabled. Error spans are marked ``<v>…</v>`` in ``source``
and ``target``; removing the tags recovers the source and the system output.

Per-segment score (Freitag et al. 2021, the repository README): each error weighs

* ``Non-translation`` (category ``Non-translation`` or ``Non-translation!``): 25, whatever its severity;
* ``Major``: 5;  ``Minor``: 1, except ``Minor`` ``Fluency/Punctuation``: 0.1;
* ``Neutral`` and ``No-error``: 0.

A rater's score of a (system, segment) is minus the sum of the weights; the segment score is the mean over
the raters who rated it. Every other category (``Source error``, ``Other``, …) takes the severity weight:
this reproduces the published ``avg_seg_scores.tsv`` exactly.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import DataError
from precomet.io.text import read_csv_rows, read_lines
from precomet.values import finite_number

_TAG = re.compile(r"</?v>")
_REQUIRED = ("system", "doc", "seg_id", "rater", "source", "target", "category", "severity")
SEVERITY_WEIGHTS = {"major": 5.0, "minor": 1.0, "neutral": 0.0, "no-error": 0.0}
AVG_REF_NAMES = {"ref-A": "ref", "ref-B": "refB"}
"""Reference names in ``avg_seg_scores.tsv`` -> their names in the error-level TSV."""


def mqm_weight(category: str, severity: str) -> float:
    """The weight of one marked error (see the module docstring); unknown severities raise ``KeyError``."""
    if category.lower().startswith("non-translation"):
        return 25.0
    sev = severity.lower()
    if sev == "minor" and category.lower() == "fluency/punctuation":
        return 0.1
    return SEVERITY_WEIGHTS[sev]


def is_reference(system: str) -> bool:
    """``ref``, ``refB``, ``ref-A``, … are human references, not MT systems."""
    return system.lower().startswith("ref")


def language_pair(path: Path) -> str | None:
    """``mqm_ted_ende.tsv`` -> ``en-de`` (``None`` when the name has no 4-letter pair)."""
    match = re.search(r"_([a-z]{2})([a-z]{2})(?:\.|$)", path.name)
    return f"{match.group(1)}-{match.group(2)}" if match else None


def read_mqm_tsv(path: str | Path) -> dict:
    """Parse the error-level TSV into ``{"src": {seg: text}, "doc": {seg: doc}, "out": {(system, seg): text},
    "ratings": {(system, seg): {rater: weight sum in tenths}}}`` with integer ``seg`` ids."""
    path = Path(path)
    rows = iter(read_csv_rows(path, delimiter="\t", quotes=False))
    _, header = next(rows, (1, []))
    if not header:
        raise DataError(path, "empty file; expected an MQM TSV header", line=1)
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise DataError(path, f"header lacks column(s) {missing}; expected {list(_REQUIRED)}", line=1)
    col = {name: header.index(name) for name in _REQUIRED}
    src: dict[int, str] = {}
    doc: dict[int, str] = {}
    out: dict[tuple[str, int], str] = {}
    ratings: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for number, row in rows:
        if len(row) != len(header):
            raise DataError(path, f"expected {len(header)} tab-separated fields, got {len(row)}", line=number)
        system, rater = row[col["system"]], row[col["rater"]]
        try:
            seg = int(row[col["seg_id"]])
        except ValueError:
            raise DataError(path, f"seg_id must be an integer, got {row[col['seg_id']]!r}", line=number) from None
        try:
            weight = mqm_weight(row[col["category"]], row[col["severity"]])
        except KeyError:
            raise DataError(
                path,
                f"system {system!r}, segment {seg}: unknown severity {row[col['severity']]!r};"
                f" expected one of {sorted(SEVERITY_WEIGHTS)}",
                line=number,
            ) from None
        source = _TAG.sub("", row[col["source"]])
        if not source.strip():
            raise DataError(path, f"segment {seg}: empty source", line=number)
        _agree(path, number, src, seg, source, f"segment {seg}: source")
        _agree(path, number, doc, seg, row[col["doc"]], f"segment {seg}: doc")
        _agree(
            path,
            number,
            out,
            (system, seg),
            _TAG.sub("", row[col["target"]]),
            f"system {system!r}, segment {seg}: target",
        )
        per_rater = ratings[(system, seg)]  # tenths of a weight point: integer sums, no float drift
        per_rater[rater] = per_rater.get(rater, 0) + round(weight * 10)
    if not src:
        raise DataError(path, "no rows after the header")
    return {"src": src, "doc": doc, "out": out, "ratings": dict(ratings)}


def _agree(path: Path, line: int, table: dict, key, value: str, what: str) -> None:
    previous = table.setdefault(key, value)
    if previous != value:
        raise DataError(path, f"{what} differs from an earlier row ({previous[:40]!r} vs {value[:40]!r})", line=line)


def mqm_segment_scores(ratings: dict[tuple[str, int], dict[str, int]]) -> dict[tuple[str, int], float]:
    """Minus the rater-averaged weight sum per (system, segment) (``ratings`` in tenths of a point)."""
    return {key: -(sum(per_rater.values()) / 10) / len(per_rater) for key, per_rater in ratings.items()}


def load_mqm_tsv(path: str | Path, *, include_refs: bool = False, name: str | None = None) -> Campaign:
    """Items = segments (sorted by ``seg_id``), systems = MT systems (references ``ref*`` only with
    ``include_refs``), ``human`` = MQM score (higher is better, 0 = perfect); docs = talks, domain ``ted``;
    ``ref`` = the output of the ``ref`` pseudo-system when present."""
    path = Path(path)
    parsed = read_mqm_tsv(path)
    scores = mqm_segment_scores(parsed["ratings"])
    return _campaign(path, parsed, scores, include_refs=include_refs, name=name)


def _campaign(path: Path, parsed: dict, scores: dict, *, include_refs: bool, name: str | None) -> Campaign:
    segs = sorted(parsed["src"])
    position = {seg: i for i, seg in enumerate(segs)}
    all_systems = sorted({system for system, _ in parsed["out"]})
    systems = [s for s in all_systems if include_refs or not is_reference(s)]
    if not systems:
        raise DataError(path, f"no MT systems (found only references {all_systems})")
    outputs = {s: [None] * len(segs) for s in all_systems}
    for (system, seg), text in parsed["out"].items():
        outputs[system][position[seg]] = text
    matrix = np.full((len(segs), len(systems)), np.nan)
    column = {s: j for j, s in enumerate(systems)}
    for (system, seg), value in scores.items():
        if system in column:
            matrix[position[seg], column[system]] = value
    lp = language_pair(path)
    name = name or (f"wmt21-ted/{lp}" if lp else path.stem)
    ref_name = next((r for r in ("ref", "ref-A", "refA") if r in outputs), None)
    return Campaign.build(
        ids=[f"{name}/{seg}" for seg in segs],
        src=[parsed["src"][seg] for seg in segs],
        systems=systems,
        outputs={s: outputs[s] for s in systems},
        scores={HUMAN: matrix},
        ref=None if ref_name is None or ref_name in systems else outputs[ref_name],
        doc=[parsed["doc"][seg] for seg in segs],
        domain=["ted"] * len(segs),
        name=name,
        lp=lp,
        protocol="mqm",
    )


def read_avg_seg_scores(path: str | Path) -> dict[tuple[str, int], float]:
    """``system mqm_avg_score seg_id`` rows (any whitespace between fields); ``None`` rows are left out.
    Reference names are mapped to the error-level TSV's (:data:`AVG_REF_NAMES`)."""
    path = Path(path)
    lines = read_lines(path)
    if not lines or lines[0].split() != ["system", "mqm_avg_score", "seg_id"]:
        raise DataError(path, "expected the header 'system mqm_avg_score seg_id'", line=1)
    scores = {}
    first: dict[tuple[str, int], int] = {}
    for number, line in enumerate(lines[1:], start=2):
        parts = line.split()
        if len(parts) != 3:
            raise DataError(path, f"expected 'system score seg_id', got {line[:60]!r}", line=number)
        system, value, seg = parts
        if value == "None":
            continue
        try:
            seg_id = int(seg)
        except ValueError:
            raise DataError(path, f"system {system!r}: seg_id {seg!r} is not an integer", line=number) from None
        key = (AVG_REF_NAMES.get(system, system), seg_id)
        if key in first:
            raise DataError(
                path, f"duplicate row for system {system!r}, seg_id {seg_id} (first on line {first[key]})", line=number
            )
        first[key] = number
        what = f"segment {seg_id}, system {system!r}, field 'mqm_avg_score'"
        scores[key] = finite_number(value, what=what, path=path, line=number)
    return scores


def load_mqm_avg(
    path: str | Path, *, texts: str | Path | None = None, include_refs: bool = False, name: str | None = None
) -> Campaign:
    """The published rater-averaged scores as ``human``; sources, outputs and docs come from the error-level
    TSV ``texts`` (default: the sibling ``<name>.tsv``). Items = segments with at least one score."""
    path = Path(path)
    texts = Path(texts) if texts else path.with_name(path.name.replace(".avg_seg_scores.tsv", ".tsv"))
    if not texts.exists():
        raise DataError(
            path, f"needs the error-level TSV with the texts beside it; {texts} not found (in Python: texts=PATH)"
        )
    scores = read_avg_seg_scores(path)
    parsed = read_mqm_tsv(texts)
    unknown = sorted({seg for _, seg in scores} - set(parsed["src"]))
    if unknown:
        raise DataError(path, f"{len(unknown)} scored segment(s) not in {texts}: {unknown[:5]}")
    missing = sorted({system for system, _ in scores} - {system for system, _ in parsed["out"]})
    if missing:
        raise DataError(path, f"system(s) {missing} have scores but no outputs in {texts}")
    rated = {seg for _, seg in scores}
    parsed = {**parsed, "src": {s: t for s, t in parsed["src"].items() if s in rated}}
    parsed["out"] = {k: v for k, v in parsed["out"].items() if k[1] in rated}
    return _campaign(texts, parsed, scores, include_refs=include_refs, name=name)
