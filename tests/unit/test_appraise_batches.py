"""Issue 60, part 3: Appraise batches as Appraise imports them, and their export read back against any copy of the
pool.

:func:`appraise_import_checks` re-implements what Appraise does with a batches file, read from its public source
(github.com/AppraiseDev/Appraise):

* ``Campaign/management/commands/StartNewCampaign.py`` uploads each ``--batches-json`` file, then
  ``Campaign/management/commands/validatecampaigndata.py`` (``_validate_campaign_data``) parses it as UTF-8 JSON;
* ``EvalData/models/direct_assessment_document.py``, ``DirectAssessmentDocumentTask.import_from_json``: one task per
  batch from ``task['batchNo']`` and ``task['requiredAnnotations']``; one ``TextPairWithContext`` per item from
  ``sourceID``, ``sourceText``, ``targetID``, ``targetText``, ``itemID``, ``itemType``, ``documentID``,
  ``isCompleteDocument`` (indexed without a default: a missing key fails) and the optional contexts and ``mqm``;
  ``len(item['targetID'])`` and ``len(item['targetText'])`` (strings);
* the fields they fill (``EvalData/models/base_models.py``: ``EvalItem.itemID`` a ``PositiveIntegerField``, 1-based
  by ``is_valid``; ``itemType`` one of ``SET_ITEMTYPE_CHOICES``; ``TextPair.sourceID`` / ``targetID`` at most
  ``MAX_SEGMENTID_LENGTH`` = 1000 characters; ``EvalData/models/direct_assessment_context.py``:
  ``TextPairWithContext.documentID`` at most ``MAX_DOCUMENTID_LENGTH`` = 100, ``isCompleteDocument`` a boolean;
  ``requiredAnnotations`` in 1..``MAX_REQUIREDANNOTATIONS_VALUE`` = 50; ``batchNo`` 1-based);
* how the ESA page uses them (``EvalView/views.py``, ``direct_assessment_document_mqmesa``; the task's
  ``next_document_for_user_mqmesa`` and ``next_document_for_user``): a page is the task's items of one
  ``documentID`` and ``targetID``; a result is saved by ``items.filter(itemID=…, id=…)`` and the template names each
  item ``item-{{ item.itemID }}``, so an ``itemID`` appears once per page; the standard layout ends a document at its
  ``isCompleteDocument`` item (at most one, the last); ``next_item_for_user`` completes a task at
  ``requiredAnnotations × 100`` items, the page counts "segment N/100" (tasks of at most 100 items);
* its export (``ExportSystemScoresToCSV`` -> ``DirectAssessmentDocumentResult.get_system_data``, ``expand_multi_sys``)
  splits ``targetID`` at ``+`` into several systems.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precomet.campaign import Campaign
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io import load
from precomet.io.batch import (
    APPRAISE_TASK_SIZE,
    appraise_batches,
    appraise_document_id,
    bad_text,
)
from precomet.waves.judgements import read_judgements

ITEM_TYPES = ("SRC", "TGT", "REF", "BAD", "CHK")  # SET_ITEMTYPE_CHOICES
REQUIRED_ITEM_KEYS = (
    "sourceID", "sourceText", "targetID", "targetText", "itemID", "itemType", "documentID", "isCompleteDocument",
)  # fmt: skip


def appraise_import_checks(text: str) -> list[str]:
    """What Appraise's import of a batches file (``text``) would refuse or mishandle (module docstring), as a list
    of problems (empty: it imports and shows as documents)."""
    problems = []
    batches = json.loads(text)  # _validate_campaign_data
    if not isinstance(batches, list):
        return ["the file is not a JSON list of batches"]
    for b, batch in enumerate(batches):
        task, items = batch.get("task"), batch.get("items")
        if not isinstance(task, dict) or not isinstance(items, list):
            problems.append(f"batch {b}: needs 'task' and 'items'")
            continue
        if not (isinstance(task.get("batchNo"), int) and task["batchNo"] >= 1):
            problems.append(f"batch {b}: batchNo {task.get('batchNo')!r} is not a 1-based integer")
        if not (isinstance(task.get("requiredAnnotations"), int) and 1 <= task["requiredAnnotations"] <= 50):
            problems.append(f"batch {b}: requiredAnnotations {task.get('requiredAnnotations')!r} outside 1..50")
        if len(items) > APPRAISE_TASK_SIZE:
            problems.append(f"batch {b}: {len(items)} items, more than a task of 100")
        pages: dict[str, list[int]] = {}
        for k, item in enumerate(items):
            where = f"batch {b}, item {k}"
            missing = [key for key in REQUIRED_ITEM_KEYS if key not in item]
            if missing:
                problems.append(f"{where}: missing {missing}")
                continue
            if not all(isinstance(item[key], str) for key in ("sourceID", "sourceText", "targetID", "targetText")):
                problems.append(f"{where}: sourceID, sourceText, targetID and targetText must be strings")
                continue
            if not (isinstance(item["itemID"], int) and 1 <= item["itemID"] <= 2**31 - 1):
                problems.append(f"{where}: itemID {item['itemID']!r} is not a positive 32-bit integer")
            if item["itemType"] not in ITEM_TYPES:
                problems.append(f"{where}: itemType {item['itemType']!r}")
            if len(item["sourceID"]) > 1000 or len(item["targetID"]) > 1000:
                problems.append(f"{where}: sourceID or targetID over 1000 characters")
            if not isinstance(item["documentID"], str) or len(item["documentID"]) > 100:
                problems.append(f"{where}: documentID {item['documentID']!r} is not a string of at most 100")
            if not isinstance(item["isCompleteDocument"], bool):
                problems.append(f"{where}: isCompleteDocument {item['isCompleteDocument']!r} is not a boolean")
            if "+" in item["targetID"]:
                problems.append(f"{where}: targetID {item['targetID']!r} is split at '+' by the export")
            pages.setdefault(item["documentID"], []).append(k)
        for document, positions in pages.items():
            page = [items[k] for k in positions]
            if positions != list(range(positions[0], positions[0] + len(positions))):
                problems.append(f"batch {b}: document {document!r} is not one block")
            if len({item["targetID"] for item in page}) != 1:
                problems.append(f"batch {b}: document {document!r} mixes systems")
            if len({item["itemID"] for item in page}) != len(page):
                problems.append(f"batch {b}: document {document!r} repeats an itemID")
            flags = [item["isCompleteDocument"] for item in page]
            if any(flags[:-1]):
                problems.append(f"batch {b}: document {document!r} is flagged complete before its last item")
    return problems


def _pool(n_docs: int = 6, per_doc: int = 5, systems: tuple[str, ...] = ("A", "B", "C"), **extra: Any) -> Campaign:
    n = n_docs * per_doc
    return Campaign.build(
        ids=[f"item-{i}" for i in range(n)],
        src=[f"source {i} with a few words in it" for i in range(n)],
        systems=list(systems),
        outputs={s: [f"{s} says output {i} with a few words" for i in range(n)] for s in systems},
        scores={"m": np.zeros((n, len(systems)))},
        ref=[f"reference {i} of words written by a translator" for i in range(n)],
        doc=[f"doc{i // per_doc}" for i in range(n)],
        name="wmt23/en-de",
        **extra,
    )


def test_the_checks_catch_what_appraise_refuses():
    good = appraise_batches(_pool(), range(10))
    assert appraise_import_checks(json.dumps(good)) == []
    broken = json.loads(json.dumps(good))
    item = broken[0]["items"][0]
    del item["isCompleteDocument"]
    broken[0]["items"][1]["itemType"] = "GOOD"
    broken[0]["items"][2]["documentID"] = "x" * 101
    broken[0]["task"]["requiredAnnotations"] = 0
    problems = appraise_import_checks(json.dumps(broken))
    assert any("missing ['isCompleteDocument']" in p for p in problems)
    assert any("itemType 'GOOD'" in p for p in problems)
    assert any("at most 100" in p for p in problems)
    assert any("requiredAnnotations 0" in p for p in problems)


@pytest.mark.parametrize("chosen", [range(30), range(0, 30, 2), [3], range(7, 23)])
@pytest.mark.parametrize("quality_control", [True, False])
def test_batches_pass_appraises_import_with_one_document_per_system(chosen, quality_control):
    pool = _pool()
    batches = appraise_batches(pool, list(chosen), quality_control=quality_control)
    assert appraise_import_checks(json.dumps(batches, ensure_ascii=False)) == []
    items = [item for batch in batches for item in batch["items"]]
    real = [item for item in items if item["itemType"] == "TGT"]
    assert sorted((item["sourceID"], item["targetID"]) for item in real) == sorted(
        (f"item-{i}", s) for i in chosen for s in ("A", "B", "C")
    )
    for batch in batches:
        documents: dict[str, list[dict]] = {}
        for item in batch["items"]:
            documents.setdefault(item["documentID"], []).append(item)
        for document, block in documents.items():
            doc, system = document.removesuffix("#bad").split("#")
            assert all(item["targetID"] == system for item in block)
            positions = [int(item["sourceID"].split("-")[1]) for item in block]
            assert positions == sorted(positions) and {p // 5 for p in positions} == {int(doc[3:])}  # in order
            whole = positions == [p for p in range(30) if p // 5 == int(doc[3:])]
            assert block[-1]["isCompleteDocument"] is whole
        controls = [item for item in batch["items"] if item["itemType"] == "BAD"]
        tgt = len(batch["items"]) - len(controls)
        if quality_control:  # a fifth of a full task (20 of 100), never less than one item
            assert len(controls) == -(-tgt // 4)
            assert all(item["documentID"].endswith("#bad") for item in controls)
        else:
            assert not controls


def test_blocks_are_packed_whole_and_a_document_longer_than_a_task_is_cut_unflagged():
    pool = _pool(n_docs=3, per_doc=90, systems=("A", "B"))
    batches = appraise_batches(pool, range(len(pool)))
    assert appraise_import_checks(json.dumps(batches)) == []
    for batch in batches:
        real = [item for item in batch["items"] if item["itemType"] == "TGT"]
        assert len(real) <= 80 and len(batch["items"]) <= APPRAISE_TASK_SIZE
    assert not any(item["isCompleteDocument"] for batch in batches for item in batch["items"])  # 90 > 80: parts
    small = appraise_batches(_pool(n_docs=20, per_doc=7), range(140), quality_control=False)
    sizes = [len(batch["items"]) for batch in small]
    assert sum(sizes) == 420 and all(size <= 100 for size in sizes) and len(small) == 5  # 60 blocks of 7, 14 per task


def test_the_order_is_shuffled_by_the_seed_and_written_into_the_task():
    pool = _pool()
    first, again, other = (appraise_batches(pool, range(30), seed=s) for s in (3, 3, 4))
    assert first == again and first != other
    assert {batch["task"]["randomSeed"] for batch in first} == {3}


def test_control_text_replaces_a_phrase_and_differs():
    rng = np.random.default_rng(0)
    text = "one two three four five six seven eight nine ten"
    donor = "alpha beta gamma delta epsilon zeta eta theta"
    bad = bad_text(text, donor, characters=False, rng=rng)
    assert bad != text and len(bad.split()) == 10 and len(set(bad.split()) & set(donor.split())) == 4
    japanese = bad_text("今日は良い天気です", "明日は雨が降るでしょう", characters=True, rng=rng)
    assert japanese != "今日は良い天気です" and " " not in japanese


def test_long_document_names_fit_appraise_and_still_read_back():
    long = "https://example.org/" + "a-very-long-document-name/" * 6
    assert len(appraise_document_id(long, "SYSTEM")) <= 96 and appraise_document_id("d1", "S") == "d1#S"
    assert appraise_document_id(long, "SYSTEM") != appraise_document_id(long + "2", "SYSTEM")
    with pytest.raises(PrecometError, match="no room"):
        appraise_document_id(long, "S" * 95)
    with pytest.raises(PrecometError, match="splits a targetID at"):
        appraise_batches(_pool(systems=("A+B", "C")), range(3))


def _export(batches: list[dict], path: Path) -> dict[tuple[str, str], float]:
    """Appraise's export of every item scored (``get_system_data(extended_csv=True)``: username, targetID, itemID,
    itemType, languages, score, documentID, isCompleteDocument, mqm, start, end), in Appraise's row order (by its own
    keys, not the batch's); returns the score given to each (sourceID, system) of a TGT item."""
    rows, given = [], {}
    for k, item in enumerate(item for batch in batches for item in batch["items"]):
        score = float((k * 37) % 101)
        rows.append([f"engdeu{k % 3}", item["targetID"], item["itemID"], item["itemType"], "eng", "deu", int(score),
                     item["documentID"], item["isCompleteDocument"], "[]", 1.5, 2.5])  # fmt: skip
        if item["itemType"] == "TGT":
            given[(item["sourceID"], item["targetID"])] = score
    random.Random(1).shuffle(rows)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([[str(x) for x in row] for row in rows])
    return given


def test_an_export_reads_back_against_a_reconverted_reordered_copy_of_the_pool(tmp_path):
    """The batch is written from a JSONL pool; the export is read against a CSV copy of it with the items in
    another order (a re-conversion), and every score lands on its item and system."""
    rows = [
        {"id": f"seg/{i}", "doc": f"news-{i // 4}", "src": f"source {i} of the news", "ref": f"reference {i}",
         "tgt": {s: f"{s} translates {i}" for s in ("A", "B")}}
        for i in range(24)
    ]  # fmt: skip
    original = tmp_path / "pool.jsonl"
    original.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    batch = tmp_path / "batch.txt"
    argv = ["select", "--data", str(original), "--method", "random", "--budget", "10", "--batch", str(batch)]
    assert main([*argv, "--batch-format", "appraise"]) == 0
    batches = json.loads(batch.read_text(encoding="utf-8"))
    assert appraise_import_checks(batch.read_text(encoding="utf-8")) == []
    given = _export(batches, tmp_path / "export.csv")
    assert len(given) == 20
    copy = tmp_path / "copy.csv"  # the simple CSV input, items shuffled
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    with open(copy, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "doc", "src", "ref", "tgt:A", "tgt:B"])
        writer.writerows([[r["id"], r["doc"], r["src"], r["ref"], r["tgt"]["A"], r["tgt"]["B"]] for r in shuffled])
    for pool in (load(original, complete=False), load(copy, complete=False)):
        judgements = read_judgements({"appraise": [tmp_path / "export.csv"]}, pool, None)
        read = {
            (str(pool.ids[i]), system): judgements.scores[i, s]
            for s, system in enumerate(judgements.systems)
            for i in np.flatnonzero(~np.isnan(judgements.scores[:, s]))
        }
        assert read == given


def test_the_export_of_a_wave_reads_back_on_a_copy_of_the_pool(tmp_path):
    pool = tmp_path / "pool.jsonl"
    rows = [{"id": f"s{i}", "src": f"source {i}", "doc": f"d{i // 3}", "tgt": {"A": f"a {i}", "B": f"b {i}"}}
            for i in range(30)]  # fmt: skip
    pool.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    argv = ["waves", "--data", str(pool), "--size", "6", "--chooser", "random", "--manifest", str(tmp_path / "m.json")]
    assert main([*argv, "--batch", str(tmp_path / "w.json"), "--batch-format", "appraise"]) == 0
    text = (tmp_path / "w.json").read_text(encoding="utf-8")
    assert appraise_import_checks(text) == []
    given = _export(json.loads(text), tmp_path / "export.csv")
    reordered = tmp_path / "reordered.jsonl"
    reordered.write_text("".join(json.dumps(row) + "\n" for row in reversed(rows)), encoding="utf-8")
    copy = load(reordered, complete=False)
    judgements = read_judgements({"appraise": [tmp_path / "export.csv"]}, copy, None)
    read = {
        (str(copy.ids[i]), system): judgements.scores[i, s]
        for s, system in enumerate(judgements.systems)
        for i in np.flatnonzero(~np.isnan(judgements.scores[:, s]))
    }
    assert read == given


def test_an_export_with_batch_info_columns_reads(tmp_path):
    """``ExportSystemScoresToCSV --batch-info`` appends the batch number and Appraise's item key."""
    pool = _pool()
    batches = appraise_batches(pool, range(5))
    item = next(item for item in batches[0]["items"] if item["itemType"] == "TGT")
    export = tmp_path / "export.csv"
    export.write_text(
        f"u,{item['targetID']},{item['itemID']},TGT,eng,deu,70,{item['documentID']},False,[],1.0,2.0,1,4711\n",
        encoding="utf-8",
    )
    judgements = read_judgements({"appraise": [export]}, pool, None)
    assert np.nansum(judgements.scores) == 70.0


@pytest.mark.slow
def test_a_real_campaign_batch_passes_appraises_import(raw_data, tmp_path):
    """WMT23 en-de (mt-metrics-eval): paragraph-level documents with real document names and 12+ systems."""
    data = ["--data", str(raw_data / "mt-metrics-eval-v2"), "--campaign", "wmt23/en-de", "--human", "mqm"]
    batch = tmp_path / "b.json"
    assert main(["select", *data, "--method", "random", "--budget", "40", "--batch", str(batch),
                 "--batch-format", "appraise", "--level", "doc"]) == 0  # fmt: skip
    text = batch.read_text(encoding="utf-8")
    assert appraise_import_checks(text) == []
    items = [item for batch in json.loads(text) for item in batch["items"]]
    assert any(item["isCompleteDocument"] for item in items)  # whole documents chosen at document level
    assert {item["targetID"] for item in items} >= {"ONLINE-A", "GPT4-5shot"}
