"""Pearmut (https://github.com/zouharvi/pearmut), the annotation tool of WMT25/26: campaign files to annotate the
drawn cells of a campaign, and the annotations it exports read back as judgements.

The format follows Pearmut :data:`PEARMUT_VERSION` (1.1.6): the README's "Campaign Configuration" section and the
code that enforces it (``pearmut/cli.py``: ``_add_single_campaign``, ``_validate_item_structure``,
``_validate_document_models``; ``pearmut/constants.py`` for the protocols; ``pearmut/utils.py``,
``pearmut/results_export.py`` and ``pearmut/app.py`` ``/download-annotations`` for the annotation log), read in
the wheel ``pearmut-1.1.6-py3-none-any.whl`` from PyPI (sha256 ``24662e3d…beea4``).

**Campaign file** (:func:`pearmut_campaign`, :func:`write_pearmut`, checked by :func:`check_pearmut_campaign`)::

    {"info": {"assignment": "task-based", "protocol": "ESA", "shuffle": true},
     "campaign_id": "wmt25_en-cs_1f3a9c0e_wave1",
     "data": [                          # task-based: one task per annotator (URL)
       [                                #   a task: a list of documents
         [                              #     a document: a list of items, shown together
           {"item_id": "wmt25/en-cs/17", "src": "…", "tgt": {"sysA": "…", "sysB": "…"},
            "precomet_protocol": "ESA"}, …
         ], …
       ], …
     ],
     "data_welcome": [[…], …],          # optional: tutorial documents every annotator does first
     "data_random": [[…], …]}           # optional: attention checks, info.data_random_prob per document

Items are precomet's items that have at least one drawn cell; ``item_id`` is precomet's item id (Pearmut has no
document id field: a document is the list itself), ``tgt`` holds the outputs of the drawn systems only, in the
campaign's system order, and ``precomet_protocol`` (:data:`PROTOCOL_KEY`) the protocol, which Pearmut keeps in every
annotation record (it stores an item's extra keys) so the reader knows an MQM item. Items are grouped by
``campaign.doc`` (documents in the order they first appear, items in input order, as
:func:`precomet.io.batch.batch_order` with ``"doc"``).

*Assignment.* ``task-based`` packs whole documents in order into tasks of at most one task size of work
(:func:`parse_task_size`: judgements, or annotator time counted as the pool's ``cost`` per judgement, i.e. seconds to
judge one output; default :data:`DEFAULT_TASK_SIZE`); a longer document is a task of its own; one task is one
annotator link. ``single-stream`` has one shared pool (``data`` is the list of documents; Pearmut hands each link a
random unfinished document) and ``info.users`` = the total work over the task size, rounded up. ``dynamic`` is written
only in the form that keeps the wave's inclusion probabilities: every model of every document shown
(``info.dynamic_models`` = the number of systems; see :func:`_check_dynamic` for why anything else is refused), which
needs the same systems drawn for every item. Pearmut shuffles the order of the models of a document
(``info.shuffle``, default true) only when all items of the document show the same models and refuses the file
otherwise; with ``shuffle=None`` the file shuffles when that holds and writes ``"shuffle": false`` when it does not.

*Tutorial and attention checks* (Pearmut's README, "Tutorial and Attention Checks"): ``data_welcome`` documents are
shown to every annotator before the first document (``item_i`` ``welcome_0``, …); ``data_random`` documents are
shown instead of the next document with probability ``info.data_random_prob`` (``random_0``, …), each at most once
per annotator. Their items carry ``validation`` rules (a score range, expected error spans, ``score_greaterthan``);
with a ``warning`` the annotator must fix the answer, without one a failure is only logged and the dashboard marks
the annotator against ``info.validation_threshold``. Neither kind is a judgement of the pool.

**Annotations** (:func:`read_pearmut_annotations`): Pearmut appends one record per submitted document to
``data/annotations/<campaign_id>.jsonl`` on the server; the dashboard's "download annotations" gives
``{campaign_id: [record, …]}`` as one JSON document (``annotations.json``). A record is::

    {"user_id": "alice", "item_i": 3, "item": [item, …], "actions": […], "comment": "…",
     "annotation": [{"sysA": {"score": 85, "error_spans": […], "textfield": null}, …}, …]}

with ``annotation`` parallel to ``item`` (``null`` for a skipped item), or ``"annotation": "__RESET__"`` when an
administrator reset that user (every earlier record of the user is void). Records of tutorial, attention-check and
goodbye documents (``item_i`` ``welcome_*``, ``random_*``, ``goodbye_*``) are not judgements, nor are form items; a
``null`` score (a skipped item) is no judgement; with custom sliders the score is the mean of the slider values, as
Pearmut's own model ranking computes it. An item precomet wrote for an MQM campaign (``"precomet_protocol": "MQM"``)
is scored from its error spans with the WMT weights (:func:`mqm_score`), not from the slider. Pearmut's dashboard
ranks models by the plain mean of their scores over the judged items (``results_export.py``,
``compute_model_scores``): it ignores the waves' inclusion probabilities, so it is not the waves ranking.
When one user submits a document again, the later score of an (item, model) replaces the earlier one, as Pearmut
shows it to them; different users' scores are all returned.

Appraise's CSV exports are read by :mod:`precomet.io.esa` (:func:`~precomet.io.esa.read_appraise_csv`); their item
ids are Appraise segment numbers, not precomet item ids, so they are not read here.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, NoReturn

import numpy as np

from precomet.errors import DataError, PrecometError
from precomet.io import jsonsafe
from precomet.io.batch import batch_order
from precomet.io.text import parse_json, read_text, split_lines
from precomet.values import finite_number

if TYPE_CHECKING:
    from precomet.campaign import Campaign

logger = logging.getLogger(__name__)

PEARMUT_VERSION = "1.1.6"
"""The Pearmut release whose campaign and annotation formats this module follows."""
PEARMUT_ASSIGNMENTS = ("task-based", "single-stream", "dynamic")
"""Values of ``info.assignment`` (Pearmut's default when absent: ``single-stream``)."""
PEARMUT_PROTOCOLS = ("DA", "ESA", "cESA", "MQM")
"""Values of ``info.protocol`` (the keys of Pearmut's ``PROTOCOL_INSTRUCTIONS``; its default: ``cESA``)."""
PEARMUT_FORMS = (None, "number", "string", "choices", "script")
"""Values of ``form`` in a form item (``{"text": …, "form": …}``)."""
DEFAULT_TASK_SIZE = "1h"
"""The work of one annotator link when not given: about an hour of judgements (:func:`parse_task_size`)."""
DEFAULT_ATTENTION_PROBABILITY = 0.1
"""``info.data_random_prob`` when attention checks are given without it: before each document, the chance that
Pearmut shows an attention-check document instead."""
PROTOCOL_KEY = "precomet_protocol"
"""The key precomet adds to every item it writes: the campaign's protocol, read back by
:func:`read_pearmut_annotations` from the log (Pearmut keeps an item's extra keys in every record), so an MQM
campaign's score is computed from its error spans."""
PEARMUT_RESET = "__RESET__"
"""The ``annotation`` of a log record that voids the user's earlier records."""
PEARMUT_EXTRA_DOCUMENTS = ("welcome_", "random_", "goodbye_")
"""Prefixes of ``item_i`` of tutorial, attention-check and goodbye documents (not judgements)."""
MQM_PUNCTUATION = ("fluency/punctuation", "linguistic conventions/punctuation")
"""Categories weighted as WMT's minor ``Fluency/Punctuation`` (0.1): its own name, and the name of the same error in
the MQM core typology that Pearmut's default ``mqm_categories`` follow."""


class Judgement(NamedTuple):
    """One score of one annotator for one system's output of one item."""

    item: str
    system: str
    score: float


@dataclass(frozen=True)
class TaskSize:
    """The work of one annotator link: ``amount`` judgements (``kind`` ``"judgements"``) or seconds of annotator
    time (``"seconds"``, counted as the pool's ``cost`` of every judgement: seconds to judge one output), as
    ``text`` spelled it."""

    kind: str
    amount: float
    text: str


def parse_task_size(text: str) -> TaskSize:
    """``300`` or ``300 judgements`` (judgements), or a duration (``1h``, ``45m``, ``1h30m``:
    :func:`precomet.costs.parse_duration`) of annotator time."""
    from precomet.costs import parse_duration

    spelled = str(text).strip().lower()
    match = re.fullmatch(r"([0-9]+)\s*(judgements?|j)?", spelled)
    if match:
        size = TaskSize("judgements", float(match.group(1)), str(text))
    else:
        try:
            size = TaskSize("seconds", parse_duration(spelled), str(text))
        except ValueError:
            raise PrecometError(
                f"{{task_size}}{text!r}: give judgements (300, 300judgements) or a duration of annotator time (1h,"
                " 45m, 1h30m)",
                param="task_size",
            ) from None
    if size.amount <= 0:
        raise PrecometError(f"{{task_size}}{text!r}: expected a size > 0", param="task_size")
    return size


def pearmut_campaign_id(name: str, identity: Any, wave: int) -> str:
    """A campaign id unique per campaign and wave: the pool's ``name`` (characters Pearmut and file systems take),
    8 hex digits of the SHA-256 of ``identity`` (JSON: anything that tells this campaign from another one on the
    same pool, e.g. its first wave's record), and the wave number — so two waves, or two campaigns of one pool,
    load side by side on one server."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:8]
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', str(name)) or 'pool'}_{key}_wave{int(wave)}"


# ------------------------------------------------------------------------------------------------ campaign file
def pearmut_campaign(
    campaign: Campaign,
    cells: np.ndarray,
    *,
    campaign_id: str,
    assignment: str = "task-based",
    protocol: str = "ESA",
    task_size: str | TaskSize = DEFAULT_TASK_SIZE,
    shuffle: bool | None = None,
    welcome: list[list[dict[str, Any]]] | None = None,
    attention: list[list[dict[str, Any]]] | None = None,
    attention_probability: float | None = None,
) -> dict[str, Any]:
    """The Pearmut campaign file (see the module docstring) that annotates the cells of ``campaign`` marked in
    ``cells``, a boolean ``(N items, S systems)`` array aligned with ``campaign.systems``.

    ``task_size`` (:func:`parse_task_size`) is the work of one annotator link: a task-based campaign packs whole
    documents into tasks up to it; a single-stream or dynamic one gets as many links (``info.users``) as its work
    needs at that size. ``shuffle`` is ``info.shuffle`` (``None``: shuffle when every document shows the same
    systems in all its items). ``welcome`` are tutorial documents every annotator does first (``data_welcome``),
    ``attention`` attention-check documents shown at random with ``attention_probability`` before a document
    (``data_random``, ``info.data_random_prob``); both lists of documents as :func:`read_pearmut_documents` returns
    them. A drawn cell without an output raises naming the item and system."""
    _choice(assignment, PEARMUT_ASSIGNMENTS, "assignment")
    _choice(protocol, PEARMUT_PROTOCOLS, "protocol")
    problem = _campaign_id_problem(campaign_id)
    if problem:
        raise PrecometError(f"{{campaign_id}}{campaign_id!r}: {problem}", param="campaign_id")
    size = task_size if isinstance(task_size, TaskSize) else parse_task_size(task_size)
    drawn = _drawn(campaign, cells)
    rows = np.flatnonzero(drawn.any(axis=1))
    if not len(rows):
        raise PrecometError("no cell is drawn ({cells}): a Pearmut campaign needs at least one item", param="cells")
    cost = np.asarray(campaign.cost, dtype=float)
    documents: list[list[dict[str, Any]]] = []
    names: list[Any] = []
    work: list[list[float]] = []  # per document: [judgements, seconds]
    for i in batch_order(campaign, rows, "doc"):
        if not names or campaign.doc[i] != names[-1]:
            documents.append([])
            names.append(campaign.doc[i])
            work.append([0.0, 0.0])
        outputs = _outputs(campaign, drawn, int(i))
        documents[-1].append(
            {"item_id": str(campaign.ids[i]), "src": str(campaign.src[i]), "tgt": outputs, PROTOCOL_KEY: protocol}
        )
        work[-1][0] += len(outputs)
        work[-1][1] += len(outputs) * float(cost[i])
    mixed = _mixed_document(documents, names)
    if shuffle is None:
        shuffle = mixed is None
        if not shuffle:
            logger.info('Pearmut campaign %r: %s; writing "shuffle": false', campaign_id, mixed)
    elif shuffle and mixed is not None:
        raise PrecometError(
            f"{mixed}: Pearmut shuffles the systems of a document only when every item of it shows the same ones;"
            " draw the same systems for a whole document, or pass {shuffle}False",
            param="shuffle",
        )
    amounts = [w[0] if size.kind == "judgements" else w[1] for w in work]
    info: dict[str, Any] = {"assignment": assignment, "protocol": protocol, "shuffle": bool(shuffle)}
    data: list[Any] = documents
    if assignment == "task-based":
        data = _tasks(documents, amounts, size.amount)
    else:
        info["users"] = max(1, math.ceil(math.fsum(amounts) / size.amount - 1e-9))
    if assignment == "dynamic":
        info["dynamic_models"] = _check_dynamic(documents)
    campaign_file: dict[str, Any] = {"info": info, "campaign_id": campaign_id, "data": data}
    if welcome:
        campaign_file["data_welcome"] = _extra_documents(welcome, "welcome")
    if attention:
        campaign_file["data_random"] = _extra_documents(attention, "attention")
        probability = DEFAULT_ATTENTION_PROBABILITY if attention_probability is None else attention_probability
        info["data_random_prob"] = _probability(probability)
    elif attention_probability is not None:
        raise PrecometError(
            f"{{attention_probability}}{attention_probability!r}: the chance of an attention check needs attention-"
            "check documents ({attention})",
            param=("attention_probability", "attention"),
        )
    return campaign_file


def write_pearmut(
    handle: IO[str],
    campaign: Campaign,
    cells: np.ndarray,
    *,
    campaign_id: str,
    assignment: str = "task-based",
    protocol: str = "ESA",
    task_size: str | TaskSize = DEFAULT_TASK_SIZE,
    shuffle: bool | None = None,
    welcome: list[list[dict[str, Any]]] | None = None,
    attention: list[list[dict[str, Any]]] | None = None,
    attention_probability: float | None = None,
) -> int:
    """Write :func:`pearmut_campaign` to ``handle`` as JSON (UTF-8 text, indented); returns the number of cells
    (item × system outputs) it asks to annotate."""
    campaign_file = pearmut_campaign(
        campaign,
        cells,
        campaign_id=campaign_id,
        assignment=assignment,
        protocol=protocol,
        task_size=task_size,
        shuffle=shuffle,
        welcome=welcome,
        attention=attention,
        attention_probability=attention_probability,
    )
    check_pearmut_campaign(campaign_file)
    jsonsafe.dump(campaign_file, handle, ensure_ascii=False, indent=2)
    handle.write("\n")
    return sum(len(item["tgt"]) for document in _documents(campaign_file) for item in document)


def read_pearmut_documents(path: str | Path, *, attention: bool = False) -> list[list[dict[str, Any]]]:
    """Tutorial (``attention=False``) or attention-check documents from a JSON file: a list of documents (each a
    list of items, as Pearmut's ``data_welcome`` and ``data_random``), or a Pearmut campaign file whose documents
    are taken in order (every task's, for a task-based one), as Pearmut's README has its tutorial
    ``examples/tutorial/esa_deen.json`` used. Each document is checked as Pearmut checks it; an attention check
    needs a ``validation`` rule in at least one of its items (else it checks nothing)."""
    path = Path(path)
    loaded = parse_json(read_text(path), path)
    if isinstance(loaded, dict) and "data" in loaded:
        data, info = loaded["data"], loaded.get("info")
        assignment = info.get("assignment", "single-stream") if isinstance(info, dict) else "single-stream"
        if assignment == "task-based" and isinstance(data, (list, dict)):  # tasks of documents
            tasks = list(data.values()) if isinstance(data, dict) else data
            if all(isinstance(task, list) for task in tasks):
                data = [document for task in tasks for document in task]
        loaded = data
    if not isinstance(loaded, list) or not loaded:
        raise DataError(
            path,
            f"expected a list of documents (each a list of items) or a Pearmut campaign file, got {_kind(loaded)}"
            + (" (empty)" if loaded == [] else ""),
        )
    for d, document in enumerate(loaded):
        try:
            _check_document(document, f"document {d}", shuffle=False)
        except PrecometError as err:
            raise DataError(path, str(err)) from None
        if attention and not any(isinstance(item, dict) and item.get("validation") for item in document):
            raise DataError(
                path,
                f"document {d}: an attention check needs a 'validation' rule in an item (Pearmut's README, 'Tutorial"
                ' and Attention Checks\': e.g. {"validation": {"modelA": {"score": [0, 30]}}}); without one it'
                " checks nothing",
            )
    return loaded


def _extra_documents(documents: Any, param: str) -> list[list[dict[str, Any]]]:
    if not isinstance(documents, list):
        raise PrecometError(f"{{{param}}}: expected a list of documents, got {_kind(documents)}", param=param)
    for d, document in enumerate(documents):
        try:
            _check_document(document, f"document {d}", shuffle=False)
        except PrecometError as err:
            raise PrecometError(f"{{{param}}}: {err}", param=param) from None
    return copy.deepcopy(documents)


def _probability(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise PrecometError(
            f"{{attention_probability}}{value!r}: the chance of an attention check before a document must be a"
            " number in (0, 1]",
            param="attention_probability",
        )
    return float(value)


def _choice(value: str, valid: tuple[str, ...], param: str) -> None:
    if value not in valid:
        raise PrecometError(
            f"unknown Pearmut {param} {{{param}}}{value!r}; choose one of {', '.join(valid)}", param=param
        )


def _campaign_id_problem(campaign_id: Any) -> str | None:
    """Why Pearmut refuses ``campaign_id`` (it names the files ``data/campaigns/<campaign_id>.json`` and
    ``data/annotations/<campaign_id>.jsonl``), or ``None``."""
    if not isinstance(campaign_id, str):
        return f"must be text, got {type(campaign_id).__name__}"
    if not campaign_id or campaign_id in (".", "..") or "/" in campaign_id or "\\" in campaign_id:
        return "must name a file: not empty, '.' or '..', without '/' or '\\'"
    return None


def _drawn(campaign: Campaign, cells: Any) -> np.ndarray:
    drawn = np.asarray(cells)
    if drawn.dtype != np.bool_:
        raise PrecometError(
            f"{{cells}} must be a boolean array (items × systems), got dtype {drawn.dtype}", param="cells"
        )
    expected = (len(campaign.ids), len(campaign.systems))
    if drawn.shape != expected:
        raise PrecometError(
            f"{{cells}} has shape {drawn.shape}; the campaign has {expected[0]} items × {expected[1]} systems",
            param="cells",
        )
    return drawn


def _outputs(campaign: Campaign, drawn: np.ndarray, i: int) -> dict[str, str]:
    tgt = {}
    for j in np.flatnonzero(drawn[i]):
        system = campaign.systems[j]
        if system.isdigit():
            raise PrecometError(
                f"system {system!r}: Pearmut refuses model names of digits only (they reorder in JavaScript)"
            )
        texts = campaign.outputs.get(system)
        if texts is None:
            raise PrecometError(f"system {system!r} is drawn for annotation but the campaign has no outputs of it")
        if texts[i] is None:
            raise PrecometError(f"item {campaign.ids[i]!r}, system {system!r}: drawn for annotation but has no output")
        tgt[system] = str(texts[i])
    return tgt


def _mixed_document(documents: list[list[dict[str, Any]]], names: list[Any]) -> str | None:
    """Where a document shows different systems in two items (a message), or ``None``."""
    for name, document in zip(names, documents):
        first = document[0]
        for item in document[1:]:
            if item["tgt"].keys() != first["tgt"].keys():
                return (
                    f"document {name!r}: item {first['item_id']!r} shows systems {sorted(first['tgt'])} but item"
                    f" {item['item_id']!r} shows {sorted(item['tgt'])}"
                )
    return None


def _check_dynamic(documents: list[list[dict[str, Any]]]) -> int:
    """The number of systems every item shows (``info.dynamic_models``), or an error saying why a dynamic campaign
    would lose the wave's inclusion probabilities.

    Pearmut's dynamic assignment (``assignment.py``, ``get_next_item_dynamic``) shows ``dynamic_models`` of the
    campaign's models per document: at random until each model has ``dynamic_coldstart`` annotations, then drawn
    with weights ``1/(rank+1)`` by their running mean score, and a user stops after ``docs_per_user``. Which drawn
    cells are judged then depends on the scores, and the probabilities the waves are weighted with no longer hold.
    Showing every model of every document (``dynamic_models`` = all of them, no ``docs_per_user``) leaves nothing
    to choose: every drawn cell is judged, documents in order, so that is what precomet writes, and only where
    every item shows the same systems (Pearmut requires that of a dynamic campaign)."""
    systems = {system for document in documents for item in document for system in item["tgt"]}
    for document in documents:
        for item in document:
            missing = sorted(systems - item["tgt"].keys())
            if missing:
                raise PrecometError(
                    f"item {item['item_id']!r} lacks systems {missing}: Pearmut's dynamic assignment needs every item"
                    " with every model, and choosing among them by their running scores would make which drawn cells"
                    " are judged depend on the scores (the wave's inclusion probabilities would no longer hold);"
                    " choose {assignment}task-based or single-stream",
                    param="assignment",
                )
    return len(systems)


def _tasks(documents: list[list[dict[str, Any]]], amounts: list[float], cap: float) -> list[list[list[dict[str, Any]]]]:
    """Whole documents in order, packed into tasks of at most ``cap`` work (``amounts``: each document's); a longer
    document is a task of its own."""
    tasks: list[list[list[dict[str, Any]]]] = []
    size = 0.0
    for document, amount in zip(documents, amounts):
        if tasks and size + amount <= cap * (1 + 1e-9):
            tasks[-1].append(document)
            size += amount
        else:
            tasks.append([document])
            size = amount
    return tasks


def _documents(campaign_file: Mapping[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """The documents of a checked campaign file, whatever its assignment."""
    if campaign_file.get("info", {}).get("assignment", "single-stream") == "task-based":
        data = campaign_file["data"]
        for task in data.values() if isinstance(data, dict) else data:
            yield from task
    else:
        yield from campaign_file["data"]


# ------------------------------------------------------------------------------------------------ validator
def check_pearmut_campaign(obj: Any) -> None:
    """Raise :class:`PrecometError` at the first place where ``obj`` breaks the campaign-file schema Pearmut
    :data:`PEARMUT_VERSION` accepts (``pearmut add``), naming its path (``data[0][1][2]: 'tgt' must be …``)."""
    if not isinstance(obj, dict):
        _bad("campaign", f"must be an object with 'campaign_id', 'info' and 'data', got {_kind(obj)}")
    for key in ("campaign_id", "data"):
        if key not in obj:
            _bad("campaign", f"missing {key!r}")
    problem = _campaign_id_problem(obj["campaign_id"])
    if problem:
        _bad("campaign_id", problem)
    info = obj.get("info", {})
    if not isinstance(info, dict):
        _bad("info", f"must be an object, got {_kind(info)}")
    assignment = info.get("assignment", "single-stream")
    if assignment not in PEARMUT_ASSIGNMENTS:
        _bad("info.assignment", f"must be one of {', '.join(PEARMUT_ASSIGNMENTS)}, got {assignment!r}")
    if "protocol" in info and info["protocol"] not in PEARMUT_PROTOCOLS:
        _bad("info.protocol", f"must be one of {', '.join(PEARMUT_PROTOCOLS)}, got {info['protocol']!r}")
    shuffle = info.get("shuffle", True)
    if not isinstance(shuffle, bool):
        _bad("info.shuffle", f"must be true or false, got {shuffle!r}")
    _check_sliders(info)
    data = obj["data"]
    if assignment == "task-based":
        if isinstance(data, dict) and all(isinstance(task, list) for task in data.values()):
            tasks = [(f"data[{user!r}]", task) for user, task in data.items()]  # a running campaign's user -> task
        elif isinstance(data, list):
            tasks = [(f"data[{t}]", task) for t, task in enumerate(data)]
        else:
            _bad("data", f"a task-based campaign's data must be a list of tasks, got {_kind(data)}")
        for where, task in tasks:
            if not isinstance(task, list):
                _bad(where, f"a task must be a list of documents, got {_kind(task)}")
        documents = [(f"{where}[{d}]", document) for where, task in tasks for d, document in enumerate(task)]
        annotators = len(tasks)
    else:
        if not isinstance(data, list):
            _bad("data", f"a {assignment} campaign's data must be a list of documents, got {_kind(data)}")
        documents = [(f"data[{d}]", document) for d, document in enumerate(data)]
        annotators = None
    _check_users(info, annotators)
    for where, document in documents:
        _check_document(document, where, shuffle=shuffle)
    if assignment == "dynamic":
        _check_dynamic_file(documents)
    for key in ("data_welcome", "data_goodbye", "data_random"):
        extra = obj.get(key, [])
        if not isinstance(extra, list):
            _bad(key, f"must be a list of documents, got {_kind(extra)}")
        for d, document in enumerate(extra):  # Pearmut shuffles only ``data``: these may mix models
            _check_document(document, f"{key}[{d}]", shuffle=False)
    if obj.get("data_random"):
        if "data_random_prob" not in info:
            _bad("info", "missing 'data_random_prob' (the campaign has data_random)")
        probability = info["data_random_prob"]
        if not isinstance(probability, float) or not 0 <= probability <= 1:
            _bad("info.data_random_prob", f"must be a decimal number in [0, 1], got {probability!r}")


def _bad(path: str, message: str) -> NoReturn:
    raise PrecometError(f"{path}: {message}")


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _check_sliders(info: dict[str, Any]) -> None:
    sliders = info.get("sliders")
    if sliders is None:
        return
    if not isinstance(sliders, list):
        _bad("info.sliders", f"must be a list of sliders, got {_kind(sliders)}")
    for s, slider in enumerate(sliders):
        if not isinstance(slider, dict) or any(key not in slider for key in ("name", "min", "max", "step")):
            _bad(f"info.sliders[{s}]", "must be an object with 'name', 'min', 'max' and 'step'")
        low, high, step = slider["min"], slider["max"], slider["step"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high, step)):
            _bad(f"info.sliders[{s}]", "'min', 'max' and 'step' must be numbers")
        if low > high or step <= 0:
            _bad(f"info.sliders[{s}]", f"needs min <= max and step > 0, got min {low}, max {high}, step {step}")


def _check_users(info: dict[str, Any], annotators: int | None) -> None:
    users = info.get("users", 1)
    if isinstance(users, int) and not isinstance(users, bool):
        if users < 0:
            _bad("info.users", f"must not be negative, got {users}")
        return
    if not isinstance(users, list):
        _bad("info.users", f"must be a number of annotators or a list of them, got {_kind(users)}")
    if all(isinstance(user, dict) for user in users):
        for u, user in enumerate(users):
            if "user_id" not in user:
                _bad(f"info.users[{u}]", "missing 'user_id'")
    elif not all(isinstance(user, str) for user in users):
        _bad("info.users", "must list only user ids (text) or only objects with 'user_id'")
    if annotators is not None and len(users) != annotators:
        _bad("info.users", f"lists {len(users)} users but data has {annotators} tasks (one per user)")


def _check_document(document: Any, where: str, *, shuffle: bool) -> None:
    if not isinstance(document, list):
        _bad(where, f"a document must be a list of items, got {_kind(document)}")
    if not document:
        _bad(where, "a document must have at least one item")
    is_form = isinstance(document[0], dict) and "text" in document[0] and "form" in document[0]
    for k, item in enumerate(document):
        path = f"{where}[{k}]"
        if not isinstance(item, dict):
            _bad(path, f"an item must be an object, got {_kind(item)}")
        if ("text" in item and "form" in item) != is_form:
            _bad(path, "a document cannot mix form items ('text', 'form') and evaluation items ('tgt')")
        if is_form:
            if not isinstance(item["text"], str):
                _bad(path, "'text' must be text")
            if item["form"] not in PEARMUT_FORMS:
                _bad(path, f"'form' must be one of {PEARMUT_FORMS}, got {item['form']!r}")
            continue
        _check_item(item, path)
        if shuffle and item["tgt"].keys() != document[0]["tgt"].keys():
            _bad(
                path,
                f"shows models {sorted(item['tgt'])} but item 0 of the document shows {sorted(document[0]['tgt'])};"
                " Pearmut refuses that unless info.shuffle is false",
            )


def _check_item(item: dict[str, Any], path: str) -> None:
    if "tgt" not in item:
        _bad(path, "missing 'tgt' (an object of model -> text)")
    tgt = item["tgt"]
    if not isinstance(tgt, dict) or not all(isinstance(text, str) for text in tgt.values()):
        _bad(path, "'tgt' must be an object of model -> text")
    for model in tgt:
        if model.isdigit():
            _bad(path, f"model name {model!r} in 'tgt' must not be digits only")
    for key in ("src", "ref"):
        if key in item and not isinstance(item[key], str):
            _bad(path, f"{key!r} must be text, got {_kind(item[key])}")
    if "error_spans" in item and not (
        isinstance(item["error_spans"], dict) and all(isinstance(v, list) for v in item["error_spans"].values())
    ):
        _bad(path, "'error_spans' must be an object of model -> list of spans")
    if "validation" in item and not (
        isinstance(item["validation"], dict) and all(isinstance(v, dict) for v in item["validation"].values())
    ):
        _bad(path, "'validation' must be an object of model -> rule object")


def _check_dynamic_file(documents: list[tuple[str, Any]]) -> None:
    items = [(f"{where}[{k}]", item) for where, document in documents for k, item in enumerate(document)]
    models = {model for _, item in items if "tgt" in item for model in item["tgt"]}
    for path, item in items:
        missing = sorted(models - item.get("tgt", {}).keys())
        if missing:
            _bad(path, f"lacks models {missing}: a dynamic campaign shows every item with every model")


# ------------------------------------------------------------------------------------------------ annotations
def read_pearmut_annotations(path: str | Path, *, campaigns: Collection[str] | None = None) -> list[Judgement]:
    """The judgements ``(item id, model, score)`` in a Pearmut annotation export (see the module docstring): the
    dashboard's download (``{campaign_id: [record, …]}``), a JSON list of records, or the server's JSONL log. Every
    annotator's score is returned (several for one item and model when several annotated it). A malformed record
    raises :class:`DataError` naming the file and line (JSONL) or campaign and record (JSON).

    ``campaigns``: the campaign ids whose records are read (those a campaign in waves wrote; ``None``: every record).
    A record's campaign is its key in the download, and a JSONL log's file name (Pearmut writes
    ``data/annotations/<campaign_id>.jsonl``). Records of other campaigns are left out, counted and named in a
    warning; an export with none of ``campaigns``' records, or whose records carry no campaign id at all (a JSON
    list of records), is an error naming the file and the ids expected: a stale campaign with the same users and
    items would otherwise be read as more annotators of this one."""
    path = Path(path)
    text = read_text(path)
    records: list[tuple[str, int | None, str, Any]] = []  # (where, line, campaign, record)
    try:
        document = parse_json(text, path)
    except DataError as whole:
        document = None
        lines = [(number, line) for number, line in enumerate(split_lines(text), start=1) if line.strip()]
        try:
            first = parse_json(lines[0][1], path, line=lines[0][0]) if len(lines) > 1 else None
        except DataError:
            first = None
        if not isinstance(first, dict):  # not JSON Lines either: the error of the whole document stands
            raise whole from None
        records.extend(("", number, path.stem, parse_json(line, path, line=number)) for number, line in lines)
    if document is not None:
        if isinstance(document, dict) and "annotation" in document:  # a JSONL log of one record
            records.append(("", 1, path.stem, document))
        elif isinstance(document, dict):
            for campaign_id, rows in document.items():
                if not isinstance(rows, list):
                    raise DataError(
                        path, f"campaign {campaign_id!r}: expected a list of annotation records, got {_kind(rows)}"
                    )
                records.extend(
                    (f"campaign {campaign_id!r}, record {k}: ", None, campaign_id, row) for k, row in enumerate(rows)
                )
        elif isinstance(document, list):
            records.extend((f"record {k}: ", None, "", row) for k, row in enumerate(document))
        else:
            raise DataError(
                path,
                f"unknown shape ({_kind(document)}): expected Pearmut's annotation download ({{campaign_id:"
                " [record, …]}), a JSON list of records, or its JSONL log (one record per line)",
            )
    if campaigns is not None:
        records = _of_campaigns(path, records, frozenset(campaigns))
    return _judgements(path, records)


def _of_campaigns(
    path: Path, records: list[tuple[str, int | None, str, Any]], campaigns: frozenset[str]
) -> list[tuple[str, int | None, str, Any]]:
    """The records of ``campaigns`` (see :func:`read_pearmut_annotations`); the others counted in a warning."""
    expected = ", ".join(sorted(campaigns)) or "none (this campaign wrote no Pearmut campaign)"
    if any(not campaign_id for _, _, campaign_id, _ in records):
        raise DataError(
            path,
            "its records carry no campaign id (a JSON list of records), so they cannot be told from another"
            " campaign's: give Pearmut's annotation download (annotations.json, {campaign_id: [record, …]}) or its"
            f" log data/annotations/<campaign_id>.jsonl under its own name; this campaign's ids: {expected}",
            param="campaigns",
        )
    others = Counter(campaign_id for _, _, campaign_id, _ in records if campaign_id not in campaigns)
    ours = [record for record in records if record[2] in campaigns]
    held = ", ".join(f"{name!r} ({count} record(s))" for name, count in sorted(others.items()))
    if not ours:
        log_hint = " (a Pearmut log is read under its file name, <campaign_id>.jsonl)" if records and records[
            0][1] is not None else ""  # fmt: skip
        raise DataError(
            path,
            f"not a record of this campaign in it: it holds campaign(s) {held or 'none'}{log_hint}, and this"
            f" campaign wrote {expected}: an export of another campaign (last week's?); give this campaign's",
            param="campaigns",
        )
    if others:
        logger.warning(
            "%s: ignored %d record(s) of campaign(s) %s (not this campaign's, which wrote %s)",
            path,
            sum(others.values()),
            ", ".join(sorted(others)),
            expected,
        )
    return ours


def _judgements(path: Path, records: list[tuple[str, int | None, str, Any]]) -> list[Judgement]:
    last_reset: dict[tuple[str, str], int] = {}
    for position, (where, line, campaign_id, record) in enumerate(records):
        if not isinstance(record, dict):
            raise DataError(path, f"{where}expected an annotation record (an object), got {_kind(record)}", line=line)
        for key in ("user_id", "annotation"):
            if key not in record:
                raise DataError(path, f"{where}annotation record without {key!r}", line=line)
        if not isinstance(record["user_id"], str):
            raise DataError(path, f"{where}'user_id' must be text, got {_kind(record['user_id'])}", line=line)
        if record["annotation"] == PEARMUT_RESET:
            last_reset[(campaign_id, record["user_id"])] = position
    latest: dict[tuple[Any, ...], Judgement] = {}
    for position, (where, line, campaign_id, record) in enumerate(records):
        user = record["user_id"]
        if position <= last_reset.get((campaign_id, user), -1):
            continue
        if "item_i" not in record:
            raise DataError(path, f"{where}annotation record without 'item_i'", line=line)
        item_i = record["item_i"]
        if isinstance(item_i, bool) or not isinstance(item_i, (int, str)):
            raise DataError(path, f"{where}'item_i' must be a number or text, got {_kind(item_i)}", line=line)
        if isinstance(item_i, str) and item_i.startswith(PEARMUT_EXTRA_DOCUMENTS):
            continue
        items, annotations = record.get("item"), record["annotation"]
        if not isinstance(items, list) or not isinstance(annotations, list) or len(items) != len(annotations):
            raise DataError(
                path,
                f"{where}'annotation' must be a list with one entry per item of 'item' (a list); got"
                f" {_kind(annotations)} for {_kind(items)}",
                line=line,
            )
        for k, (item, annotation) in enumerate(zip(items, annotations)):
            if annotation is None or (isinstance(item, dict) and "form" in item and "text" in item):
                continue  # a skipped item; a form's answer
            for judgement in _item_judgements(path, where, k, line, item, annotation):
                latest[(campaign_id, user, item_i, k, judgement.system)] = judgement
    return list(latest.values())


def _item_judgements(
    path: Path, where: str, k: int, line: int | None, item: Any, annotation: Any
) -> Iterator[Judgement]:
    """The judgements of the ``k``-th item of a record (``where`` names the record in a JSON document)."""
    if not isinstance(item, dict) or "item_id" not in item:
        raise DataError(path, f"{where}item {k} of 'item': no 'item_id' to map its annotation back", line=line)
    item_id = item["item_id"]
    if isinstance(item_id, bool) or not isinstance(item_id, (str, int)):
        raise DataError(
            path, f"{where}item {k} of 'item': 'item_id' must be text or a number, got {_kind(item_id)}", line=line
        )
    if not isinstance(annotation, dict):
        raise DataError(
            path, f"{where}item {item_id!r}: the annotation must be an object of model -> scores", line=line
        )
    mqm = item.get(PROTOCOL_KEY) == "MQM"
    for model, scores in annotation.items():
        what = f"{where}item {item_id!r}, model {model!r}"
        if mqm:
            if not isinstance(scores, dict) or not isinstance(scores.get("error_spans"), list):
                raise DataError(path, f"{what}: an MQM campaign's annotation needs 'error_spans' (a list)", line=line)
            yield Judgement(str(item_id), str(model), mqm_score(scores["error_spans"], what=what, path=path, line=line))
            continue
        if not isinstance(scores, dict) or ("score" not in scores and "sliders" not in scores):
            raise DataError(path, f"{what}: expected an object with 'score'", line=line)
        score = scores.get("score")
        if score is None and scores.get("sliders") is not None:
            if not isinstance(scores["sliders"], dict):
                raise DataError(path, f"{what}: 'sliders' must be an object of slider -> value", line=line)
            values = [
                finite_number(v, what=f"{what}, slider {name!r}", path=path, line=line, text=False)
                for name, v in scores["sliders"].items()
                if v is not None
            ]
            score = math.fsum(values) / len(values) if values else None
        if score is None:
            continue  # skipped, not scored
        value = finite_number(score, what=f"{what}, 'score'", path=path, line=line, text=False)
        yield Judgement(str(item_id), str(model), value)


def mqm_score(
    spans: list[Any], *, what: str = "error spans", path: str | Path = "<spans>", line: int | None = None
) -> float:
    """The MQM score of one output from the error spans Pearmut exports (``{"start_i", "end_i", "severity",
    "category"}``): minus the sum of the WMT weights (Freitag et al. 2021, "Experts, Errors, and Context", as
    :func:`precomet.io.ted.mqm_weight` applies them to Google's MQM data): major 5, minor 1, a minor punctuation
    error 0.1 (:data:`MQM_PUNCTUATION`), neutral 0, a ``Non-translation`` 25 whatever its severity. No span is a
    perfect 0. A span without a severity, or with one the WMT weights do not define (Pearmut lets a campaign set
    its own ``mqm_severities``, e.g. ``Critical``), raises :class:`DataError` naming it."""
    from precomet.io.ted import mqm_weight

    weights = []
    for k, span in enumerate(spans):
        if not isinstance(span, dict):
            raise DataError(path, f"{what}: error span {k} must be an object, got {_kind(span)}", line=line)
        severity, category = span.get("severity"), span.get("category") or ""
        if not isinstance(category, str):
            raise DataError(path, f"{what}: error span {k} has category {category!r}, not text", line=line)
        if category.lower() in MQM_PUNCTUATION:
            category = "Fluency/Punctuation"
        if not isinstance(severity, str):
            raise DataError(
                path, f"{what}: error span {k} has no severity ({severity!r}): MQM weighs major and minor", line=line
            )
        try:
            weights.append(mqm_weight(category, severity))
        except KeyError:
            raise DataError(
                path,
                f"{what}: error span {k} has severity {severity!r}, which the WMT MQM weights do not define (major 5,"
                " minor 1, neutral 0)",
                line=line,
            ) from None
    return -math.fsum(weights) if weights else 0.0
