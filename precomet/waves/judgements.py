"""Judgements of a campaign in waves: where they come from (a registry of readers: canonical files, Pearmut's and
Appraise's exports) and the pool's ``N × S`` matrix of human scores they make."""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError

log = logging.getLogger(__name__)

ALL_SYSTEMS = "*"
"""The manifest's name for every system (cells drawn from a pool of sources, before its systems are known)."""
MAX_SCORE = 1e12
"""The largest human score (in absolute value) a judgement may hold: far beyond every rating scale, and small
enough that the estimates' sums of squares stay finite."""


@dataclass(frozen=True)
class Judgements:
    """Human scores of the pool's cells (``N × S``, NaN = not judged) and the systems they name."""

    systems: tuple[str, ...]
    scores: np.ndarray


@dataclass(frozen=True)
class _Score:
    item: int  # pool position
    system: str
    score: float


@dataclass(frozen=True)
class JudgementReader:
    """One source of judgements: its name, the command's option, a help line, and the function that reads one file
    into scored cells of the pool (``rows(path, pool, campaigns)``; ``campaigns``: the annotation tool's campaign ids
    the campaign in waves wrote, ``None`` where none is known — a reader whose records name their campaign reads only
    those). A file's repeated judgements of a cell (several annotators) are averaged; a cell judged in two files is an
    error."""

    name: str
    flag: str
    help: str
    rows: Callable[[Path, Campaign, frozenset[str] | None], list[_Score]]


def read_judgements(
    sources: dict[str, list[Path]],
    pool: Campaign,
    systems: tuple[str, ...] | None,
    *,
    campaigns: frozenset[str] | None = None,
) -> Judgements:
    """The human scores of the files in ``sources`` (reader name → files, :data:`JUDGEMENT_READERS`) on the pool's
    items. Items the pool does not hold, systems outside ``systems`` (when fixed), a source text that differs from
    the pool's, and a cell judged in two files are errors naming the file. ``campaigns``: the annotation tool's
    campaign ids this campaign wrote (:meth:`precomet.waves.live.Manifest.pearmut_campaigns`): an export's records of
    other campaigns are left out and counted, an export with none of them refused."""
    unknown = sorted(set(sources) - set(JUDGEMENT_READERS))
    if unknown:
        raise PrecometError(f"unknown judgement reader {unknown[0]!r}; choose among {', '.join(JUDGEMENT_READERS)}")
    cells: dict[tuple[int, str], tuple[float, Path]] = {}
    order: list[str] = list(systems or ())
    for name, reader in JUDGEMENT_READERS.items():
        for path in sources.get(name, []):
            collected: dict[tuple[int, str], list[float]] = {}
            for judgement in reader.rows(path, pool, campaigns):
                if systems is not None and judgement.system not in systems:
                    raise PrecometError(
                        f"{path}: system {judgement.system!r} is not one of the pool's ({', '.join(systems)})",
                        param="judgements",
                    )
                _check_score(path, pool.ids[judgement.item], judgement.system, judgement.score)
                collected.setdefault((judgement.item, judgement.system), []).append(judgement.score)
            if not collected:
                raise PrecometError(
                    f"{path}: not a single judgement of the pool's cells in it (every row dropped or unscored): the"
                    " wrong file? give the one of this campaign's waves, or leave the file out"
                )
            for key, values in collected.items():
                if key in cells:
                    raise PrecometError(
                        f"{path}: item {pool.ids[key[0]]!r}, system {key[1]!r} is judged again (also in"
                        f" {cells[key][1]}); give every cell once (average repeated judgements first)"
                    )
                cells[key] = (float(np.mean(values)), path)
                if key[1] not in order:
                    order.append(key[1])
    scores = np.full((len(pool), len(order)), np.nan)
    for (row, system), (value, _) in cells.items():
        scores[row, order.index(system)] = value
    return Judgements(tuple(order), scores)


def _canonical_rows(path: Path, pool: Campaign, campaigns: frozenset[str] | None = None) -> list[_Score]:
    index = {str(i): k for k, i in enumerate(pool.ids)}
    from precomet.io import load

    judged = load(path, complete=False)
    if HUMAN not in judged.scores:
        raise PrecometError(f"{path}: no human scores (expected judgements with a 'human' score per system)")
    unknown = [str(i) for i in judged.ids if str(i) not in index]
    if unknown:
        raise PrecometError(
            f"{path}: {len(unknown)} judged item(s) are not in the pool, e.g. {unknown[0]!r}: judgements of"
            " another campaign? (items are matched by id)"
        )
    rows = np.array([index[str(i)] for i in judged.ids], dtype=int)
    differs = [str(judged.ids[k]) for k, r in enumerate(rows) if judged.src[k] and judged.src[k] != pool.src[r]]
    if differs:
        raise PrecometError(
            f"{path}: item {differs[0]!r} has another source text than the pool's: judgements of another campaign?"
        )
    matrix = judged.score(HUMAN)
    if np.isnan(matrix).all():
        raise PrecometError(
            f"{path}: not a single human score in it (every one empty): give the judgements of the waves' cells"
        )
    return [
        _Score(int(rows[k]), system, float(matrix[k, column]))
        for column, system in enumerate(judged.systems)
        for k in np.flatnonzero(~np.isnan(matrix[:, column]))
    ]


def _check_score(path: Path, item: Any, system: str, score: float) -> None:
    """A judgement's system and score as a campaign in waves can use them, or an error naming the file."""
    if system == ALL_SYSTEMS:
        raise PrecometError(
            f"{path}: a system named {ALL_SYSTEMS!r}, which the waves manifest reads as every system: rename it"
        )
    check_score_range(path, item, system, score)


def check_human_scores(scores: np.ndarray, ids: Any, systems: Any, source: Any) -> None:
    """The human scores (``N × S``, NaN = not judged) a replay reads, checked as a live call checks every judgement
    (:func:`check_score_range`): the first cell out of range is an error naming ``source``, its item and system."""
    matrix = np.asarray(scores, dtype=float)
    bad = np.argwhere(~np.isnan(matrix) & ~(np.abs(matrix) <= MAX_SCORE))
    if len(bad):
        row, column = bad[0]
        check_score_range(source, ids[row], systems[column], float(matrix[row, column]))


def check_score_range(path: Any, item: Any, system: str, score: float) -> None:
    """One human score as the waves' estimates can use it (finite, ``|score| <=`` :data:`MAX_SCORE`), or an error
    naming the file (``path``), the item and the system: the one check of a live call's judgements and a replay's."""
    if not abs(score) <= MAX_SCORE:
        raise PrecometError(
            f"{path}: item {item!r}, system {system!r}: human score {score!r} is out of range (|score| <="
            f" {MAX_SCORE:g} expected; the estimates would overflow)"
        )


def _pearmut_rows(path: Path, pool: Campaign, campaigns: frozenset[str] | None = None) -> list[_Score]:
    """The judgements of a Pearmut export, only those of ``campaigns`` when known
    (:func:`precomet.io.pearmut.read_pearmut_annotations`)."""
    from precomet.io.pearmut import read_pearmut_annotations

    index = {str(i): k for k, i in enumerate(pool.ids)}
    rows = []
    for judgement in read_pearmut_annotations(path, campaigns=campaigns):
        if judgement.item not in index:
            raise PrecometError(f"{path}: item {judgement.item!r} is not in the pool: annotations of another campaign?")
        rows.append(_Score(index[judgement.item], judgement.system, float(judgement.score)))
    return rows


def _appraise_rows(path: Path, pool: Campaign, campaigns: frozenset[str] | None = None) -> list[_Score]:
    """The scored cells of an Appraise export (``ExportSystemScoresToCSV``) of batches precomet wrote
    (:func:`precomet.io.batch.appraise_batches`): a row is matched to the pool by its ``documentID`` (``DOC#SYSTEM``)
    and ``itemID`` (a hash of the item id), so any copy of the pool reads it, in any order. Rows dropped are counted
    and logged by reason: quality control (``BAD``), tutorial and WMT's ``#bad/#dup/#incomplete`` documents, item
    types other than ``TGT``, and documents the pool does not hold (an export covers the whole Appraise campaign,
    e.g. its other language pairs). A row of a pool document whose item or system is none of the pool's is an
    error: batches written from another pool, or by an older precomet."""
    from precomet.io.batch import appraise_document_id, appraise_item_id
    from precomet.io.esa import drop_reason, read_appraise_csv

    systems = [system for system in pool.systems if system in pool.outputs] or list(pool.systems)
    by_doc: dict[Any, list[int]] = {}
    for position, doc in enumerate(pool.doc):
        by_doc.setdefault(doc, []).append(position)
    documents = {appraise_document_id(doc, system): (doc, system) for doc in by_doc for system in systems}
    numbers = {doc: {appraise_item_id(pool.ids[i]): i for i in items} for doc, items in by_doc.items()}
    rows = []
    dropped: Counter[str] = Counter()
    for row in read_appraise_csv(path):
        if row.kind == "BAD":
            dropped["quality-control (BAD)"] += 1
            continue
        if row.doc not in documents:
            reason = drop_reason(row)
            dropped[reason or "not this pool's documents"] += 1
            continue
        if row.kind != "TGT":
            dropped[f"itemType {row.kind}"] += 1
            continue
        doc, system = documents[row.doc]
        found = numbers[doc].get(row.item)
        if found is None or row.system != system:
            raise PrecometError(
                f"{path}:{row.line}: document {row.doc!r}, item {row.item}, system {row.system!r} is none of the"
                f" pool's cells of document {doc!r} (itemID = a hash of the item id, documentID = DOC#SYSTEM): scores"
                " of batches written from another pool, or by an older precomet (itemID = pool position + 1)?"
            )
        try:
            score = float(row.score)
        except ValueError:
            raise PrecometError(f"{path}:{row.line}: score {row.score!r} is not a number") from None
        if not math.isfinite(score):
            raise PrecometError(f"{path}:{row.line}: score {row.score!r} is not a finite number")
        rows.append(_Score(found, system, score))
    if dropped:
        log.warning(
            "%s: %d row(s) dropped: %s",
            path,
            sum(dropped.values()),
            ", ".join(f"{count} {reason}" for reason, count in sorted(dropped.items())),
        )
    return rows


JUDGEMENT_READERS: dict[str, JudgementReader] = {
    reader.name: reader
    for reader in (
        JudgementReader(
            "canonical",
            "--judgements",
            "judgements so far (any input rank reads, e.g. canonical JSONL with the judged cells' human scores)",
            _canonical_rows,
        ),
        JudgementReader(
            "pearmut",
            "--pearmut-annotations",
            "judgements exported by Pearmut (its annotation download or log; an MQM campaign written by --pearmut is"
            " scored from its error spans with the WMT weights); several annotators of a cell averaged",
            _pearmut_rows,
        ),
        JudgementReader(
            "appraise",
            "--appraise-annotations",
            "judgements exported by Appraise (ExportSystemScoresToCSV) for batches written by --batch-format appraise"
            " (matched by documentID and itemID, in any copy of the pool); several annotators of a cell averaged;"
            " quality-control, tutorial and other pools' rows dropped and counted",
            _appraise_rows,
        ),
    )
}
"""Where judgements come from: the command's options (and their ``dest``: the flag's words joined by ``_``)."""
