"""WMT24 ESA human evaluation (``wmt24-news-systems``): Appraise CSV exports in ``humeval/*.csv`` plus the
line-aligned texts in ``txt/{sources,references,documents,system-outputs}``.

Appraise CSV rows have 12 columns and no header: annotator, system, segment id, item type (``TGT`` or
``BAD``), source and target language (ISO 639-3), score, document id, a flag, error spans (JSON), start and
end unix time. The segment id is the 0-based line index into ``txt/*/<lp>.txt`` (line 0 is a canary line).

Filtering, as in the official ``humeval/merge_to_jsonl.py``: drop ``BAD`` rows (quality-control
perturbations), document ids ending in ``#bad``, ``#dup`` or ``#incomplete``, and ``tutorial`` documents.
Several ratings of the same (segment, system) are averaged. A campaign is one language pair (``en-cs``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import DataError, PrecometError
from precomet.io.text import read_csv_rows, read_lines, safe_name
from precomet.values import finite_number

ISO3_TO_2 = {
    "eng": "en",
    "deu": "de",
    "ces": "cs",
    "hrv": "hr",
    "plk": "pl",
    "pol": "pl",
    "rus": "ru",
    "zho": "zh",
    "jpn": "ja",
    "spa": "es",
    "hin": "hi",
    "isl": "is",
    "ukr": "uk",
}
DROPPED_SUFFIXES = ("#bad", "#dup", "#incomplete")


class AppraiseRow(NamedTuple):
    annotator: str
    system: str
    item: int
    kind: str
    src_lang: str
    tgt_lang: str
    score: str
    doc: str
    start: float
    end: float
    line: int


def read_appraise_csv(path: str | Path) -> list[AppraiseRow]:
    """Every row of an Appraise ``*.csv`` export (no filtering); malformed rows raise naming file and line. The 12
    columns are what Appraise's ``ExportSystemScoresToCSV`` writes (``get_system_data(extended_csv=True)``); with its
    ``--batch-info`` two more (batch number, Appraise's own item key) follow, and are read past."""
    path = Path(path)
    rows = []
    for number, fields in read_csv_rows(path):
        if not any(fields):
            continue
        if len(fields) not in (12, 14):
            raise DataError(
                path,
                f"expected 12 comma-separated Appraise fields (14 with --batch-info), got {len(fields)}",
                line=number,
            )
        try:
            item = int(fields[2])
        except ValueError:
            raise DataError(path, f"segment/item id must be an integer, got {fields[2]!r}", line=number) from None
        start, end = (
            finite_number(fields[k], what=f"field '{name}'", path=path, line=number)
            for k, name in ((10, "start"), (11, "end"))
        )
        annotator, system, _, kind, src_lang, tgt_lang, score, doc = fields[:8]
        rows.append(AppraiseRow(annotator, system, item, kind, src_lang, tgt_lang, score, doc, start, end, number))
    return rows


def drop_reason(row: AppraiseRow) -> str | None:
    """Why the official filtering drops a row (``None`` = kept)."""
    if row.kind == "BAD":
        return "BAD"
    if "tutorial" in row.doc or "tutorial" in row.system:
        return "tutorial"
    for suffix in DROPPED_SUFFIXES:
        if row.doc.endswith(suffix):
            return suffix
    return None


def is_wmt24_esa_root(path: Path) -> bool:
    return path.is_dir() and (path / "txt" / "sources").is_dir() and any((path / "humeval").glob("*.csv"))


def _pair(path: Path, row: AppraiseRow) -> str:
    try:
        return f"{ISO3_TO_2[row.src_lang]}-{ISO3_TO_2[row.tgt_lang]}"
    except KeyError:
        raise DataError(
            path,
            f"unknown language code in {row.src_lang!r}/{row.tgt_lang!r}; known: {sorted(ISO3_TO_2)}",
            line=row.line,
        ) from None


def _rows(root: Path) -> list[tuple[Path, AppraiseRow]]:
    return [(path, row) for path in sorted((root / "humeval").glob("*.csv")) for row in read_appraise_csv(path)]


def list_esa_campaigns(root: str | Path) -> list[str]:
    """Language pairs with kept ratings and a source file under ``root``."""
    root = Path(root)
    pairs = {_pair(path, row) for path, row in _rows(root) if drop_reason(row) is None}
    return sorted(p for p in pairs if (root / "txt" / "sources" / f"{p}.txt").exists())


def load_wmt24_esa(root: str | Path, campaign: str, *, include_refs: bool = False) -> Campaign:
    """Load one language pair. Items = rated lines (id ``wmt24/<lp>/<line>``), systems = rated systems
    (``refA`` only with ``include_refs``; it is the reference ``ref`` otherwise), ``human`` = mean ESA score."""
    root = Path(root)
    if not is_wmt24_esa_root(root):
        raise DataError(root, "not a WMT24 ESA directory (needs humeval/*.csv and txt/sources/)")
    all_rows = _rows(root)
    kept: list[tuple[Path, AppraiseRow]] = []
    dropped: Counter = Counter()
    found = set()
    for path, row in all_rows:
        reason = drop_reason(row)
        if reason is None:
            pair = _pair(path, row)
            found.add(pair)
            if pair == campaign:
                kept.append((path, row))
        elif _pair(path, row) == campaign:
            dropped[reason] += 1
    if campaign not in found:
        raise PrecometError(f"{root}: unknown campaign {campaign!r}; found {sorted(found) or 'none'}")
    txt = root / "txt"
    src = read_lines(txt / "sources" / f"{campaign}.txt")
    docs_path = txt / "documents" / f"{campaign}.docs"
    doc_rows = [line.split("\t") for line in read_lines(docs_path)]
    if len(doc_rows) != len(src) or any(len(r) != 2 for r in doc_rows):
        raise DataError(docs_path, f"expected {len(src)} lines of 'domain<TAB>doc'")
    ratings: dict[tuple[int, str], list[float]] = defaultdict(list)
    for path, row in kept:
        safe_name(
            row.system, what="system name", path=path, line=row.line
        )  # it names txt/system-outputs/<lp>/<system>.txt
        if not 0 < row.item < len(src):
            raise DataError(
                path, f"segment id {row.item} outside 1..{len(src) - 1} (lines of {campaign}.txt)", line=row.line
            )
        if doc_rows[row.item][1] != row.doc:
            raise DataError(
                path,
                f"system {row.system!r}: document {row.doc!r} does not match line {row.item} of {docs_path}"
                f" ({doc_rows[row.item][1]!r})",
                line=row.line,
            )
        what = f"segment {row.item}, system {row.system!r}, field 'score'"
        score = finite_number(row.score, what=what, path=path, line=row.line)
        if not 0 <= score <= 100:  # the ESA slider's range
            raise DataError(path, f"{what}: must lie in [0, 100], got {row.score!r}", line=row.line)
        ratings[(row.item, row.system)].append(score)

    refs = {p.name[len(campaign) + 1 : -len(".txt")]: p for p in (txt / "references").glob(f"{campaign}.*.txt")}
    rated = sorted({system for _, system in ratings})
    systems = [s for s in rated if include_refs or s not in refs]
    texts: dict[str | None, list[str]] = {}  # looked up with main_ref, which may be None
    for system in rated:
        path = refs.get(system, txt / "system-outputs" / campaign / f"{system}.txt")
        if not path.exists():
            raise DataError(path, f"no output file for rated system {system!r}")
        texts[system] = read_lines(path)
        if len(texts[system]) != len(src):
            raise DataError(
                path, f"{len(texts[system])} lines, but {txt / 'sources' / (campaign + '.txt')} has {len(src)}"
            )
    lines = sorted({line for line, _ in ratings})
    row_of = {line: i for i, line in enumerate(lines)}
    column = {s: j for j, s in enumerate(systems)}
    matrix = np.full((len(lines), len(systems)), np.nan)
    for (line, system), values in ratings.items():
        if system in column:
            matrix[row_of[line], column[system]] = np.mean(values)
    repeated = sum(len(v) > 1 for v in ratings.values())
    main_ref = "refA" if "refA" in refs else (sorted(refs)[0] if refs else None)
    ref_texts = texts.get(main_ref) or (read_lines(refs[main_ref]) if main_ref else None)
    name = f"wmt24/{campaign}"
    return Campaign.build(
        ids=[f"{name}/{line}" for line in lines],
        src=[src[line] for line in lines],
        systems=systems,
        outputs={s: [texts[s][line] for line in lines] for s in systems},
        scores={HUMAN: matrix},
        ref=None if ref_texts is None else [ref_texts[line] for line in lines],
        doc=[doc_rows[line][1] for line in lines],
        domain=[doc_rows[line][0] for line in lines],
        name=name,
        lp=campaign,
        protocol="esa",
        info={
            "filtered": ", ".join(f"{n} {reason}" for reason, n in sorted(dropped.items())) + " rows dropped"
            if dropped
            else "no rows dropped",
            "repeated": f"{repeated} (segment, system) pairs with several ratings averaged",
        },
    )
