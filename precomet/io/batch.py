"""The annotation batch: the chosen items with their texts, ready for annotators and annotation tools.

One record per chosen item: ``id``, ``doc``, ``domain``, ``src``, ``ref`` (when the input has references) and
the output of every system (when the input has outputs). The format follows the file's suffix
(:data:`BATCH_FORMATS`):

* ``.jsonl`` — canonical items without scores (``{"id", "doc", "domain", "src", "ref", "tgt": {system: text}}``),
  readable again by :func:`precomet.io.load`;
* ``.csv`` / ``.tsv`` — a header row ``id, doc, domain, src[, ref], tgt:SYSTEM…`` (the column names of the
  simple CSV input, so ``precomet info --data batch.csv`` reads it back), then one row per item; a missing
  reference or output is an empty cell. Quoting is RFC 4180 for both: a cell holding the delimiter, a double
  quote, a carriage return or a line break is enclosed in double quotes, a double quote inside it is doubled,
  rows end in ``\\r\\n``; text is UTF-8 without a byte-order mark. Spreadsheet-safe: a text starting with
  ``= + - @``, a tab, a carriage return or ``'`` gets a leading ``'`` (:func:`precomet.io.text.spreadsheet_cell`),
  so a spreadsheet shows it as text instead of running it as a formula; precomet reads the ``.csv`` back exactly,
  other CSV readers see the ``'``. The ``.jsonl`` batch is the exact copy for other tools;
* ``--batch-format appraise`` — the batches file Appraise's ``StartNewCampaign --batches-json`` imports for a
  document-level ESA campaign as WMT ran them (:func:`appraise_batches`; what it holds and which Appraise code it
  follows is said there). A ``.json`` suffix alone is refused: Appraise's batches and Pearmut's campaign files are
  both JSON, so the format is named, never guessed (:func:`batch_format`).

Order (:data:`BATCH_ORDERS`): ``input`` keeps the items in the input's order; ``doc`` groups them by document
(documents in the order they first appear in the input, items of a document in input order).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from precomet.errors import PrecometError
from precomet.io import jsonsafe
from precomet.io.text import spreadsheet_cell

if TYPE_CHECKING:
    from precomet.campaign import Campaign

BATCH_FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv"}
"""Suffix -> format of an annotation batch (the formats a suffix names; Appraise's is only ever named)."""
BATCH_KINDS = ("jsonl", "csv", "tsv", "appraise")
"""Every format of an annotation batch (``--batch-format``)."""
ISO_639_3 = {
    "ar": "ara", "bn": "ben", "cs": "ces", "da": "dan", "de": "deu", "en": "eng", "es": "spa", "et": "est",
    "fi": "fin", "fr": "fra", "gu": "guj", "ha": "hau", "he": "heb", "hi": "hin", "hr": "hrv", "id": "ind",
    "is": "isl", "it": "ita", "ja": "jpn", "kk": "kaz", "km": "khm", "ko": "kor", "lt": "lit", "lv": "lav",
    "mr": "mar", "nl": "nld", "no": "nor", "pl": "pol", "ps": "pus", "pt": "por", "ro": "ron", "ru": "rus",
    "sr": "srp", "sv": "swe", "ta": "tam", "th": "tha", "tr": "tur", "uk": "ukr", "vi": "vie", "zh": "zho",
}  # fmt: skip
"""Two-letter language codes -> the three-letter ones of Appraise's batches (others are kept as given)."""
BATCH_ORDERS = ("input", "doc")
"""Orders of an annotation batch: the input's, or grouped by document."""


def batch_format(path: str | Path, given: str | None = None) -> str:
    """The format of a batch written to ``path``: ``given`` (one of :data:`BATCH_KINDS`), else from the suffix
    (:data:`BATCH_FORMATS`). A ``.json`` name without ``given`` is refused: Appraise's batches and Pearmut's
    campaign files are both JSON, and a guess would hand one tool the other's file."""
    if given is not None:
        if given not in BATCH_KINDS:
            raise PrecometError(f"unknown batch format {given!r}; choose one of {', '.join(BATCH_KINDS)}")
        return given
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        raise PrecometError(
            f"{{batch}}{path}: Appraise and Pearmut both read JSON, and precomet does not guess which tool a"
            " .json batch is for: give --batch-format appraise for the batches Appraise's StartNewCampaign"
            " --batches-json imports; a Pearmut campaign file is written by 'precomet waves --pearmut PATH'; or name"
            " the batch *.jsonl, *.csv or *.tsv (one row per item or cell)",
            param="batch",
        )
    if suffix not in BATCH_FORMATS:
        raise PrecometError(
            f"{{batch}}{path}: cannot tell the annotation batch's format from {suffix or 'no suffix'!r}; name it "
            f"{' or '.join('*' + s for s in BATCH_FORMATS)}, or give --batch-format ({', '.join(BATCH_KINDS)})",
            param="batch",
        )
    return BATCH_FORMATS[suffix]


def batch_order(campaign: Campaign, indices: Sequence[int] | np.ndarray, order: str = "input") -> np.ndarray:
    """The item positions ``indices`` in batch ``order`` (see the module docstring)."""
    if order not in BATCH_ORDERS:
        raise PrecometError(f"unknown batch order {order!r}; choose one of {', '.join(BATCH_ORDERS)}")
    ordered = np.sort(np.asarray(indices, dtype=int))
    if order == "doc":
        first: dict[Any, int] = {}
        key = np.array([first.setdefault(doc, len(first)) for doc in campaign.doc[ordered]], dtype=int)
        ordered = ordered[np.argsort(key, kind="stable")]
    return ordered


def _systems(campaign: Campaign) -> list[str]:
    return [system for system in campaign.systems if system in campaign.outputs]


def batch_records(campaign: Campaign, indices: Sequence[int] | np.ndarray) -> Iterator[dict[str, Any]]:
    """One record per position of ``indices`` (in that order): id, doc, domain, src, ref (with references), tgt
    (with outputs; ``None`` = no output)."""
    systems = _systems(campaign)
    for i in indices:
        record: dict[str, Any] = {
            "id": campaign.ids[i],
            "doc": campaign.doc[i],
            "domain": campaign.domain[i],
            "src": campaign.src[i],
        }
        if campaign.ref is not None:
            record["ref"] = campaign.ref[i]
        if systems:
            record["tgt"] = {system: campaign.outputs[system][i] for system in systems}
        yield record


def write_batch(
    handle: IO[str], campaign: Campaign, indices: Sequence[int] | np.ndarray, *, format: str, order: str = "input"
) -> int:
    """Write the batch of the items at ``indices`` to ``handle`` (for CSV/TSV opened with ``newline=""``) in
    ``format`` (``jsonl``, ``csv``, ``tsv``) and ``order``; returns the number of items written."""
    if format not in BATCH_KINDS:
        raise PrecometError(f"unknown batch format {format!r}; choose one of {', '.join(BATCH_KINDS)}")
    ordered = batch_order(campaign, indices, order)
    if format == "appraise":  # its own order: one document per system, shuffled (appraise_batches)
        batches = appraise_batches(campaign, ordered)
        json.dump(batches, handle, ensure_ascii=False, indent=2)
        handle.write("\n")
        return len(ordered)
    records = batch_records(campaign, ordered)
    if format == "jsonl":
        jsonsafe.dump_lines(records, handle)
        return len(ordered)
    systems = _systems(campaign)
    header = ["id", "doc", "domain", "src"] + (["ref"] if campaign.ref is not None else [])
    writer = csv.writer(
        handle,
        delimiter="\t" if format == "tsv" else ",",
        quotechar='"',
        doublequote=True,
        quoting=csv.QUOTE_MINIMAL,
        lineterminator="\r\n",
    )
    writer.writerow(header + [f"tgt:{system}" for system in systems])
    for record in records:
        outputs = record.get("tgt", {})
        row = [record[key] for key in header] + [outputs[system] for system in systems]
        writer.writerow(["" if cell is None else spreadsheet_cell(str(cell)) for cell in row])
    return len(ordered)


def campaign_languages(name: str) -> tuple[str, str]:
    """``(source, target)`` language codes of a campaign named ``…/xx-yy`` (three-letter codes where known), else
    ``("und", "und")`` (undetermined, ISO 639-3)."""
    match = re.fullmatch(r"([a-z]{2,3})-([a-z]{2,3})", name.split("/")[-1].split(":")[-1])
    if not match:
        return "und", "und"
    return ISO_639_3.get(match[1], match[1]), ISO_639_3.get(match[2], match[2])


APPRAISE_TASK_SIZE = 100
"""Items in one Appraise task at most: Appraise counts a task done at ``requiredAnnotations × 100`` annotated items
(``DirectAssessmentDocumentTask.next_item_for_user``), its ESA page shows "segment N/100", and WMT's
``Scripts/create_wmt22_tasks.py`` refuses tasks over ``MAX_TASK_SIZE = 100``."""
APPRAISE_CONTROL_SHARE = 0.2
"""Share of a full task that is quality control: WMT's script fills 80 items (``REQUIRED_SEGS``) with documents and
pads the task to 100 with control documents."""
APPRAISE_MAX_DOCUMENT_ID = 100
"""``TextPairWithContext.documentID`` holds at most this many characters (``MAX_DOCUMENTID_LENGTH``)."""
APPRAISE_MAX_SEGMENT_ID = 1000
"""``TextPair.sourceID`` / ``targetID`` hold at most this many characters (``MAX_SEGMENTID_LENGTH``)."""
APPRAISE_MAX_ITEM_ID = 2**31 - 1
"""The largest ``itemID`` (a Django ``PositiveIntegerField``; ``EvalItem.is_valid`` wants it >= 1)."""
APPRAISE_ITEM_KEYS = (
    "sourceID", "sourceText", "targetID", "targetText", "itemID", "itemType", "documentID", "isCompleteDocument",
)  # fmt: skip
"""The item keys ``DirectAssessmentDocumentTask.import_from_json`` reads without a default (a missing one fails)."""
APPRAISE_ITEM_TYPES = ("SRC", "TGT", "REF", "BAD", "CHK")
"""``SET_ITEMTYPE_CHOICES`` of Appraise's ``EvalData/models/base_models.py``."""
CHARACTER_LANGUAGES = frozenset({"jpn", "zho", "kor", "tha", "yue", "mya", "khm", "lao", "bod"})
"""Target languages written without spaces between words: a control item's phrase is counted in characters."""
BAD_SUFFIX = "#bad"
"""Appended to a control document's ``documentID`` (as WMT24's ESA batches; its merge script drops them)."""


def appraise_item_id(item_id: Any) -> int:
    """The ``itemID`` of a precomet item in Appraise batches: a stable hash of its id in ``1 … 2**31 - 1``. The same
    item has the same number in every batch and in any copy of the pool, whatever its order, so Appraise's export
    (which keeps ``itemID`` and ``documentID``, not ``sourceID``) maps back to the item."""
    digest = hashlib.blake2b(str(item_id).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % APPRAISE_MAX_ITEM_ID + 1


def appraise_document_id(doc: Any, system: str) -> str:
    """The ``documentID`` of one system's version of document ``doc``: ``DOC#SYSTEM`` (as WMT23's ESA batches), the
    document part shortened to a prefix and a hash where the whole would pass Appraise's 100 characters."""
    whole = f"{doc}#{system}"
    if len(whole) <= APPRAISE_MAX_DOCUMENT_ID - len(BAD_SUFFIX):
        return whole
    digest = hashlib.blake2b(str(doc).encode("utf-8"), digest_size=5).hexdigest()
    room = APPRAISE_MAX_DOCUMENT_ID - len(BAD_SUFFIX) - len(system) - len(digest) - 2
    if room < 8:
        raise PrecometError(
            f"system name {system!r} ({len(system)} characters) leaves no room for the document in Appraise's"
            f" documentID (at most {APPRAISE_MAX_DOCUMENT_ID} characters): shorten the system's name"
        )
    return f"{str(doc)[:room]}~{digest}#{system}"


def _phrase_length(tokens: int) -> int:
    """Length of the phrase a control item replaces, by the segment's length in tokens (WMT's ``_create_bad_ref``:
    1–5 tokens -> 2, 6–8 -> 3, 9–15 -> 4, 16–20 -> 5, more -> 6)."""
    for upper, length in ((5, 2), (8, 3), (15, 4), (20, 5)):
        if tokens <= upper:
            return length
    return 6


def bad_text(text: str, donor: str, *, characters: bool, rng: np.random.Generator) -> str:
    """A control ("BAD") version of ``text``: a phrase of it replaced by a phrase of the same length from ``donor``
    (another segment's text), the phrase length by the segment's length (doubled and counted in characters for a
    language written without spaces), as ``create_bad_refs`` of WMT's ``Scripts/create_wmt22_tasks.py`` makes them."""
    split = list if characters else str.split
    join = "".join if characters else " ".join
    tokens, other = split(text), split(donor)
    length = _phrase_length(len(tokens)) * (2 if characters else 1)
    at = int(rng.integers(len(tokens) - length)) if len(tokens) > length else 0
    start = int(rng.integers(len(other) - length)) if len(other) > length else 0
    bad = join([*tokens[:at], *other[start : start + length], *tokens[at + length :]])
    return bad if bad != text else join([*other[start : start + length], *tokens])


def appraise_batches(
    campaign: Campaign,
    ordered: Sequence[int] | np.ndarray,
    *,
    seed: int = 0,
    quality_control: bool = True,
) -> list[dict[str, Any]]:
    """The Appraise batches (tasks) of the system outputs of the items at ``ordered``, for a document-level ESA
    campaign as WMT ran it, written to pass what Appraise does with them: ``StartNewCampaign`` (``Campaign/
    management/commands/StartNewCampaign.py``) uploads the file, ``_validate_campaign_data`` parses it, and
    ``DirectAssessmentDocumentTask.import_from_json`` (``EvalData/models/direct_assessment_document.py``) makes one
    task per batch and one ``TextPairWithContext`` per item (fields and limits of ``EvalData/models/
    base_models.py`` and ``direct_assessment_context.py``); the ESA page (``EvalView/views.py``,
    ``direct_assessment_document_mqmesa``) shows one document at a time. The batches (``tests/unit/
    test_appraise_batches.py`` re-runs those checks):

    * **one document per system**: a *block* is one document's chosen items, in the pool's order, with one system's
      outputs (``documentID`` = ``DOC#SYSTEM``, :func:`appraise_document_id`; ``targetID`` = the system), so an
      annotator reads one translation of a document at a time; blocks are shuffled with ``seed`` (as WMT's
      ``create_wmt22_tasks.py`` shuffles its documents and systems) and packed whole into tasks of at most
      :data:`APPRAISE_TASK_SIZE` items (first fit; a block longer than a task is cut into task-size parts);
    * **complete documents flagged**: ``isCompleteDocument`` is true on the last item of a block that holds every
      item of its document in ``campaign`` (Appraise's standard document layout, ``next_document_for_user``, ends a
      document at that item and counts documents by it); a part of a document is not flagged;
    * **quality control** (``quality_control``, on by default as in WMT's script): each task gets control documents
      worth :data:`APPRAISE_CONTROL_SHARE` of it (80 items + 20 in a full task): copies of the task's blocks, the
      last one cut short, every item ``itemType`` ``BAD`` with a phrase replaced from another segment
      (:func:`bad_text`; the donor is another item's reference, else another output), ``documentID`` ending in
      ``#bad`` (WMT24's batches), placed among the task's documents at random; Appraise reports annotators who
      score them like the originals, and precomet's reader drops and counts them. They are annotator time outside
      the selection's budget;
    * **ids that come back**: Appraise's score export (``ExportSystemScoresToCSV`` ->
      ``DirectAssessmentDocumentResult.get_system_data``) keeps ``targetID``, ``itemID``, ``itemType``,
      ``documentID`` and ``isCompleteDocument`` but not ``sourceID``; ``itemID`` is a stable hash of the precomet
      item id (:func:`appraise_item_id`), so the pair (``documentID``, ``itemID``) names a cell of any copy of the
      pool, in any order; ``sourceID`` holds the item id itself (kept in Appraise's database), ``_item``
      ``SYSTEM | ID | DOC`` (ignored by Appraise) says the same to a reader of the file;
    * each task: ``batchNo`` 1, 2, …, ``batchSize`` (its items), ``randomSeed`` (``seed``), ``requiredAnnotations``
      1 and the languages as three-letter codes (:func:`campaign_languages`).

    Refused: an input without outputs, a chosen item without any, a system name with ``+`` (the export splits
    ``targetID`` at ``+`` into several systems) or over Appraise's 1000 characters, and two items of one document
    whose ids hash alike (one in ~10⁹ for documents of a few dozen items)."""
    systems = _systems(campaign)
    if not systems:
        raise PrecometError(
            "an Appraise batch pairs each source with a system's output, and this input has no outputs; write the"
            " batch as .jsonl, .csv or .tsv, or select on the campaign with its outputs"
        )
    empty = [campaign.ids[i] for i in ordered if all(campaign.outputs[system][i] is None for system in systems)]
    if empty:
        raise PrecometError(
            f"{len(empty)} chosen item(s) have no system output, e.g. {empty[0]!r}: an Appraise batch pairs each source"
            " with an output and would leave them out; write the batch as .jsonl, .csv or .tsv, or drop them from"
            " the input"
        )
    for system in systems:
        if "+" in system or len(system) > APPRAISE_MAX_SEGMENT_ID:
            raise PrecometError(
                f"system {system!r}: Appraise's export splits a targetID at '+' into several systems and holds at most"
                f" {APPRAISE_MAX_SEGMENT_ID} characters; rename the system for the Appraise batch"
            )
    rng = np.random.default_rng(seed)
    whole_doc: dict[Any, list[int]] = {}
    for i, doc in enumerate(campaign.doc):
        whole_doc.setdefault(doc, []).append(i)
    chosen: dict[Any, list[int]] = {}
    for i in sorted(int(i) for i in ordered):
        chosen.setdefault(campaign.doc[i], []).append(i)
    _check_item_ids(campaign, chosen)
    capacity = APPRAISE_TASK_SIZE - (round(APPRAISE_TASK_SIZE * APPRAISE_CONTROL_SHARE) if quality_control else 0)
    blocks = []
    for doc, items in chosen.items():
        for system in systems:
            cells = [i for i in items if campaign.outputs[system][i] is not None]
            complete = cells == whole_doc[doc] and len(cells) <= capacity
            for start in range(0, len(cells), capacity):
                blocks.append(_Block(doc, system, cells[start : start + capacity], complete))
    tasks: list[list[_Block]] = []
    fills: list[int] = []
    first_open = 0  # tasks before it are full
    for k in rng.permutation(len(blocks)):
        block = blocks[k]
        size = len(block.items)
        while first_open < len(fills) and fills[first_open] == capacity:
            first_open += 1
        t = next((t for t in range(first_open, len(fills)) if fills[t] + size <= capacity), len(fills))
        if t == len(fills):
            tasks.append([])
            fills.append(0)
        tasks[t].append(block)
        fills[t] += size
    donors = _donor_texts(campaign) if quality_control else []
    source, target = campaign_languages(campaign.name)
    batches = []
    for number, task in enumerate(tasks, start=1):
        documents = [[_appraise_item(campaign, block, i, k == len(block.items) - 1) for k, i in enumerate(block.items)]
                     for block in task]  # fmt: skip
        if quality_control:
            _add_controls(documents, campaign, task, donors, characters=target in CHARACTER_LANGUAGES, rng=rng)
        written = [item for document in documents for item in document]
        info = {"batchNo": number, "batchSize": len(written), "randomSeed": seed, "requiredAnnotations": 1,
                "sourceLanguage": source, "targetLanguage": target}  # fmt: skip
        batches.append({"items": written, "task": info})
    return batches


@dataclass(frozen=True)
class _Block:
    doc: Any
    system: str
    items: list[int]
    complete: bool  # every item of the document in campaign


def _check_item_ids(campaign: Campaign, chosen: dict[Any, list[int]]) -> None:
    for doc, items in chosen.items():
        seen: dict[int, Any] = {}
        for i in items:
            number = appraise_item_id(campaign.ids[i])
            if number in seen:
                raise PrecometError(
                    f"items {seen[number]!r} and {campaign.ids[i]!r} of document {doc!r} get the same Appraise itemID"
                    f" {number} (a hash of the id): rename one of them"
                )
            seen[number] = campaign.ids[i]


def _appraise_item(campaign: Campaign, block: _Block, i: int, last: bool, *, text: str | None = None) -> dict[str, Any]:
    bad = text is not None
    return {
        "itemID": appraise_item_id(campaign.ids[i]),
        "itemType": "BAD" if bad else "TGT",
        "sourceID": str(campaign.ids[i])[:APPRAISE_MAX_SEGMENT_ID],
        "sourceText": campaign.src[i],
        "targetID": block.system,
        "targetText": text if bad else campaign.outputs[block.system][i],
        "documentID": appraise_document_id(block.doc, block.system) + (BAD_SUFFIX if bad else ""),
        "isCompleteDocument": bool(last and block.complete),
        "_item": f"{block.system} | {campaign.ids[i]} | {block.doc}",
    }


def _donor_texts(campaign: Campaign) -> list[tuple[int, str]]:
    """``(item, text)`` pairs a control phrase is taken from: the references, else every output."""
    if campaign.ref is not None and any(campaign.ref):
        return [(i, text) for i, text in enumerate(campaign.ref) if text]
    return [(i, text) for system in _systems(campaign) for i, text in enumerate(campaign.outputs[system]) if text]


def _add_controls(
    documents: list[list[dict[str, Any]]],
    campaign: Campaign,
    task: list[_Block],
    donors: list[tuple[int, str]],
    *,
    characters: bool,
    rng: np.random.Generator,
) -> None:
    """Insert the task's control documents among its ``documents`` (see :func:`appraise_batches`)."""
    real = sum(len(block.items) for block in task)
    controls = round(APPRAISE_TASK_SIZE * APPRAISE_CONTROL_SHARE)
    need = -(-real * controls // (APPRAISE_TASK_SIZE - controls))  # 20 per 80, rounded up
    for k in rng.permutation(len(task)):
        if need <= 0:
            break
        block = task[k]
        cut = _Block(block.doc, block.system, block.items[:need], block.complete and need >= len(block.items))
        control = []
        for position, i in enumerate(cut.items):
            picks = (donors[int(rng.integers(len(donors)))] for _ in range(20))
            original = campaign.outputs[block.system][i]
            donor = next((text for j, text in picks if j != i), original[::-1])
            text = bad_text(original, donor, characters=characters, rng=rng)
            control.append(_appraise_item(campaign, cut, i, position == len(cut.items) - 1, text=text))
        documents.insert(int(rng.integers(len(documents) + 1)), control)
        need -= len(cut.items)


WAVE_CELL_COLUMNS = ("id", "doc", "domain", "src", "system", "tgt")
"""The columns of a wave's batch of cells (one row per item × system to judge)."""


def write_wave_cells(handle: IO[str], pool: Campaign, drawn: np.ndarray, systems: tuple[str, ...], fmt: str) -> None:
    """The ``drawn`` cells (``N × S`` over ``systems``; no systems: one row per item) of a wave as ``fmt``: ``jsonl``,
    ``csv``, ``tsv`` (spreadsheet-safe) or ``appraise`` (Appraise batches of the drawn outputs,
    :func:`appraise_batches`)."""
    if fmt == "appraise":
        only_drawn = replace(  # pools with a missing output are refused on loading: every system has its column
            pool,
            outputs={
                name: np.where(drawn[:, k], np.asarray(pool.outputs[name], dtype=object), np.array(None))
                for k, name in enumerate(systems)
            },
        )
        jsonsafe.dump(appraise_batches(only_drawn, np.flatnonzero(drawn.any(axis=1))), handle,
                      ensure_ascii=False, indent=2)  # fmt: skip
        handle.write("\n")
        return
    rows = []
    for i in np.flatnonzero(drawn.any(axis=1)):
        for system in [systems[s] for s in np.flatnonzero(drawn[i])] if systems else [None]:
            tgt = pool.outputs[system][i] if system is not None and system in pool.outputs else None
            rows.append(
                dict(zip(WAVE_CELL_COLUMNS, (pool.ids[i], pool.doc[i], pool.domain[i], pool.src[i], system, tgt)))
            )
    if fmt == "jsonl":
        jsonsafe.dump_lines(iter(rows), handle)
        return
    writer = csv.writer(handle, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\r\n")
    writer.writerow(WAVE_CELL_COLUMNS)
    for row in rows:
        writer.writerow(["" if row[k] is None else spreadsheet_cell(str(row[k])) for k in WAVE_CELL_COLUMNS])
