"""Pearmut campaign files of the drawn cells (checked against Pearmut 1.1.6's schema) and Pearmut's annotation
exports read back as judgements."""

from __future__ import annotations

import copy
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precomet.campaign import Campaign
from precomet.errors import DataError, PrecometError
from precomet.io.pearmut import (
    DEFAULT_ATTENTION_PROBABILITY,
    DEFAULT_TASK_SIZE,
    PEARMUT_VERSION,
    PROTOCOL_KEY,
    Judgement,
    TaskSize,
    check_pearmut_campaign,
    mqm_score,
    parse_task_size,
    pearmut_campaign,
    pearmut_campaign_id,
    read_pearmut_annotations,
    read_pearmut_documents,
    write_pearmut,
)

SYSTEMS = ("A", "B", "C")
TUTORIAL = [
    [
        {
            "src": "The cat sat.",
            "tgt": {"good": "Die Katze saß.", "bad": "Der Hund lief."},
            "validation": {"good": {"warning": "80-100", "score": [80, 100]}, "bad": {"score": [0, 30]}},
        },
        {"src": "Next.", "tgt": {"good": "Weiter."}},  # welcome documents are not shuffled: models may differ
    ]
]
ATTENTION = [[{"src": "Thanks.", "tgt": {"check": "Danke."}, "validation": {"check": {"score": [70, 100]}}}]]


def _campaign() -> Campaign:
    """Five items in three documents; item 'd' has no output of C."""
    return Campaign.build(
        ids=["a", "b", "c", "d", "e"],
        src=["src a", "src b", "src c", "src d", "src ë"],
        systems=SYSTEMS,
        outputs={s: [f"{s}:{i}" if (i, s) != ("d", "C") else None for i in "abcde"] for s in SYSTEMS},
        doc=["d1", "d2", "d1", "d3", "d2"],
        cost=[10.0, 20.0, 30.0, 40.0, 50.0],  # seconds to judge one output
    )


def _cells(*drawn: tuple[str, str]) -> np.ndarray:
    cells = np.zeros((5, 3), dtype=bool)
    for item, system in drawn:
        cells["abcde".index(item), SYSTEMS.index(system)] = True
    return cells


def _item(item: str, *systems: str, protocol: str = "ESA") -> dict[str, Any]:
    src = "src ë" if item == "e" else f"src {item}"
    return {"item_id": item, "src": src, "tgt": {s: f"{s}:{item}" for s in systems}, PROTOCOL_KEY: protocol}


def _drawn_cells(campaign_file: dict[str, Any]) -> list[tuple[str, str]]:
    data = campaign_file["data"]
    documents = [doc for task in data for doc in task] if campaign_file["info"]["assignment"] == "task-based" else data
    return [(item["item_id"], system) for doc in documents for item in doc for system in item["tgt"]]


# ------------------------------------------------------------------------------------------------ campaign file
def test_task_based_file_is_exactly_the_drawn_cells_grouped_by_document() -> None:
    cells = _cells(("a", "A"), ("a", "B"), ("b", "C"), ("c", "A"), ("c", "B"), ("e", "C"))
    got = pearmut_campaign(_campaign(), cells, campaign_id="wmt_x", task_size="4")
    # d1 = a, c (first seen: 4 judgements); d2 = b, e (2); item d has no drawn cell; tasks pack whole documents up
    # to 4 judgements
    assert got == {
        "info": {"assignment": "task-based", "protocol": "ESA", "shuffle": True},
        "campaign_id": "wmt_x",
        "data": [[[_item("a", "A", "B"), _item("c", "A", "B")]], [[_item("b", "C"), _item("e", "C")]]],
    }
    check_pearmut_campaign(got)
    assert sorted(_drawn_cells(got)) == sorted(
        (i, s) for i in "abcde" for s in SYSTEMS if cells["abcde".index(i), SYSTEMS.index(s)]
    )


def test_written_file_passes_the_validator_and_equals_the_object() -> None:
    campaign, cells = _campaign(), _cells(("a", "A"), ("b", "B"), ("e", "B"), ("d", "B"))
    handle = io.StringIO()
    count = write_pearmut(handle, campaign, cells, campaign_id="c1", protocol="MQM")
    text = handle.getvalue()
    assert count == 4 and "src ë" in text and text.endswith("}\n")  # ensure_ascii=False
    loaded = json.loads(text)
    check_pearmut_campaign(loaded)
    assert loaded == pearmut_campaign(campaign, cells, campaign_id="c1", protocol="MQM")
    assert PEARMUT_VERSION == "1.1.6"


def test_tasks_hold_whole_documents_up_to_a_task_size_in_judgements_or_time() -> None:
    cells = _cells(*[(i, "A") for i in "abce"])  # d1 = a, c (10 + 30 s); d2 = b, e (20 + 50 s)

    def tasks(size: str) -> list[list[list[str]]]:
        got = pearmut_campaign(_campaign(), cells, campaign_id="x", task_size=size)
        return [[[item["item_id"] for item in doc] for doc in task] for task in got["data"]]

    assert tasks(DEFAULT_TASK_SIZE) == [[["a", "c"], ["b", "e"]]]  # 110 s of work: one task of an hour
    assert tasks("1") == [[["a", "c"]], [["b", "e"]]]  # a document longer than a task is a task of its own
    assert tasks("4 judgements") == [[["a", "c"], ["b", "e"]]]
    assert tasks("1m") == [[["a", "c"]], [["b", "e"]]]  # 40 s, then 40 + 70 > 60
    assert tasks("110s") == [[["a", "c"], ["b", "e"]]]  # exactly full


def test_task_size_is_judgements_or_a_duration() -> None:
    assert parse_task_size("300") == TaskSize("judgements", 300.0, "300")
    assert parse_task_size(" 300 judgements") == TaskSize("judgements", 300.0, " 300 judgements")
    assert parse_task_size("1h").amount == 3600.0 and parse_task_size("1h").kind == "seconds"
    assert parse_task_size("1h30m").amount == 5400.0
    for bad, message in (("0", "expected a size > 0"), ("ten", "give judgements"), ("1.5", "give judgements")):
        with pytest.raises(PrecometError, match=message) as err:
            parse_task_size(bad)
        assert err.value.param == "task_size"


@pytest.mark.parametrize("assignment", ["single-stream", "dynamic"])
def test_shared_pool_is_a_list_of_documents(assignment: str) -> None:
    cells = _cells(*[(i, s) for i in "abe" for s in "AB"])  # 6 judgements, 2 · (10 + 20 + 50) = 160 s
    got = pearmut_campaign(_campaign(), cells, campaign_id="x", assignment=assignment, protocol="DA")
    assert got["data"] == [
        [_item("a", "A", "B", protocol="DA")],
        [_item("b", "A", "B", protocol="DA"), _item("e", "A", "B", protocol="DA")],
    ]
    dynamic = {"dynamic_models": 2} if assignment == "dynamic" else {}  # every model shown: nothing left to choose
    assert got["info"] == {"assignment": assignment, "protocol": "DA", "shuffle": True, "users": 1} | dynamic
    check_pearmut_campaign(got)
    for size in ("2", "1m"):  # one annotator link per task size of work: 6 / 2 and 160 / 60, rounded up
        sized = pearmut_campaign(_campaign(), cells, campaign_id="x", assignment=assignment, task_size=size)
        assert sized["info"]["users"] == 3


def test_dynamic_needs_every_item_with_the_same_systems() -> None:
    cells = _cells(("a", "A"), ("a", "B"), ("b", "A"))
    with pytest.raises(PrecometError, match=r"item 'b' lacks systems \['B'\].*inclusion probabilities") as err:
        pearmut_campaign(_campaign(), cells, campaign_id="x", assignment="dynamic", shuffle=False)
    assert err.value.param == "assignment"


def test_mixed_systems_in_a_document_turn_shuffling_off_or_are_refused() -> None:
    cells = _cells(("a", "A"), ("c", "B"))  # one document, two different systems
    got = pearmut_campaign(_campaign(), cells, campaign_id="x")
    assert got["info"]["shuffle"] is False
    check_pearmut_campaign(got)
    with pytest.raises(PrecometError, match=r"document 'd1'.*shuffle=False") as err:
        pearmut_campaign(_campaign(), cells, campaign_id="x", shuffle=True)
    assert err.value.param == "shuffle"


@pytest.mark.parametrize(
    ("options", "message", "param"),
    [
        ({"assignment": "round-robin"}, "unknown Pearmut assignment.*task-based, single-stream, dynamic", "assignment"),
        ({"protocol": "SQM"}, "unknown Pearmut protocol.*DA, ESA, cESA, MQM", "protocol"),
        ({"campaign_id": "a/b"}, "must name a file", "campaign_id"),
        ({"campaign_id": ""}, "must name a file", "campaign_id"),
        ({"task_size": "0"}, "expected a size > 0", "task_size"),
        ({"task_size": "an hour"}, "give judgements", "task_size"),
        ({"attention_probability": 0.2}, "needs attention-check documents", "attention_probability"),
        ({"attention": ATTENTION, "attention_probability": 1.5}, r"number in \(0, 1\]", "attention_probability"),
        ({"attention": ATTENTION, "attention_probability": True}, r"number in \(0, 1\]", "attention_probability"),
        ({"welcome": [[{"src": "no tgt"}]]}, r"document 0\[0\]: missing 'tgt'", "welcome"),
        ({"attention": {"not": "a list"}}, "expected a list of documents", "attention"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str, param: str) -> None:
    kwargs = {"campaign_id": "x"} | options
    with pytest.raises(PrecometError, match=message) as err:
        pearmut_campaign(_campaign(), _cells(("a", "A")), **kwargs)
    assert err.value.param == param


def test_a_drawn_cell_without_output_is_refused() -> None:
    with pytest.raises(PrecometError, match=r"item 'd', system 'C': drawn for annotation but has no output"):
        pearmut_campaign(_campaign(), _cells(("a", "A"), ("d", "C")), campaign_id="x")
    no_outputs = Campaign.build(ids=["a"], src=["s"], systems=["A"], doc=["d"])
    with pytest.raises(PrecometError, match="system 'A' is drawn.*no outputs"):
        pearmut_campaign(no_outputs, np.ones((1, 1), dtype=bool), campaign_id="x")


def test_bad_cells_and_digit_system_names_are_refused() -> None:
    with pytest.raises(PrecometError, match="boolean array"):
        pearmut_campaign(_campaign(), np.ones((5, 3)), campaign_id="x")
    with pytest.raises(PrecometError, match=r"shape \(5, 2\).*5 items × 3 systems"):
        pearmut_campaign(_campaign(), np.ones((5, 2), dtype=bool), campaign_id="x")
    with pytest.raises(PrecometError, match="no cell is drawn"):
        pearmut_campaign(_campaign(), _cells(), campaign_id="x")
    digits = Campaign.build(ids=["a"], src=["s"], systems=["2024"], outputs={"2024": ["t"]})
    with pytest.raises(PrecometError, match="system '2024'.*digits only"):
        pearmut_campaign(digits, np.ones((1, 1), dtype=bool), campaign_id="x")


def test_the_callers_cells_are_not_changed() -> None:
    cells = _cells(("a", "A"))
    before = cells.copy()
    pearmut_campaign(_campaign(), cells, campaign_id="x")
    assert np.array_equal(cells, before)


# ------------------------------------------------------------------------------------------------ validator
def _valid() -> dict[str, Any]:
    return {
        "info": {"assignment": "task-based", "protocol": "ESA"},
        "campaign_id": "x",
        "data": [[[{"item_id": "a", "src": "s", "tgt": {"A": "t", "B": "u"}}, {"tgt": {"A": "t", "B": "u"}}]]],
    }


def _broken(change: Any) -> dict[str, Any]:
    campaign_file = copy.deepcopy(_valid())
    change(campaign_file)
    return campaign_file


def _set(path: list[Any], value: Any) -> Any:
    def change(campaign_file: dict[str, Any]) -> None:
        target = campaign_file
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (["not", "an", "object"], "campaign: must be an object"),
        (_broken(lambda c: c.pop("campaign_id")), "campaign: missing 'campaign_id'"),
        (_broken(lambda c: c.pop("data")), "campaign: missing 'data'"),
        (_broken(_set(["campaign_id"], "..")), "campaign_id: must name a file"),
        (_broken(_set(["info", "assignment"], "pairwise")), "info.assignment: must be one of task-based"),
        (_broken(_set(["info", "protocol"], "SQM")), "info.protocol: must be one of DA, ESA, cESA, MQM"),
        (_broken(_set(["info", "shuffle"], "yes")), "info.shuffle: must be true or false"),
        (_broken(_set(["data"], {"a": 1})), "data: a task-based campaign's data must be a list of tasks"),
        (_broken(_set(["data", 0], "task")), r"data\[0\]: a task must be a list of documents"),
        (_broken(_set(["data", 0, 0], [])), r"data\[0\]\[0\]: a document must have at least one item"),
        (_broken(_set(["data", 0, 0, 1], "item")), r"data\[0\]\[0\]\[1\]: an item must be an object"),
        (_broken(lambda c: c["data"][0][0][1].pop("tgt")), r"data\[0\]\[0\]\[1\]: missing 'tgt'"),
        (
            _broken(_set(["data", 0, 0, 1, "tgt"], "t")),
            r"data\[0\]\[0\]\[1\]: 'tgt' must be an object of model -> text",
        ),
        (_broken(_set(["data", 0, 0, 0, "tgt", "B"], 7)), r"data\[0\]\[0\]\[0\]: 'tgt' must be an object"),
        (_broken(_set(["data", 0, 0, 0, "src"], None)), r"data\[0\]\[0\]\[0\]: 'src' must be text"),
        (_broken(_set(["data", 0, 0, 1, "tgt"], {"A": "t", "B": "u", "7": "v"})), "must not be digits only"),
        (_broken(_set(["data", 0, 0, 1, "tgt"], {"A": "t"})), r"data\[0\]\[0\]\[1\]: shows models \['A'\]"),
        (_broken(_set(["data", 0, 0, 1], {"text": "Age?", "form": "number"})), "cannot mix form items"),
        (_broken(_set(["data", 0, 0, 0, "error_spans"], {"A": {}})), "'error_spans' must be an object of model"),
        (_broken(_set(["info", "users"], ["u1", "u2"])), "info.users: lists 2 users but data has 1 tasks"),
        (_broken(_set(["info", "sliders"], [{"name": "F", "min": 5, "max": 1, "step": 1}])), r"info.sliders\[0\]"),
        (_broken(_set(["data_random"], [[{"tgt": {"A": "t"}}]])), "info: missing 'data_random_prob'"),
        (_broken(_set(["data_welcome"], [[{"text": "Age?", "form": "date"}]])), r"data_welcome\[0\]\[0\]: 'form'"),
    ],
)
def test_validator_rejects_broken_files_with_a_path(broken: Any, message: str) -> None:
    with pytest.raises(PrecometError, match=message):
        check_pearmut_campaign(broken)


def test_validator_accepts_the_documented_variants() -> None:
    check_pearmut_campaign(_valid())
    unshuffled = _broken(_set(["data", 0, 0, 1, "tgt"], {"A": "t"}))
    unshuffled["info"]["shuffle"] = False
    check_pearmut_campaign(unshuffled)
    stream = {"campaign_id": "y", "data": [[{"tgt": {"A": "t"}}]]}  # info may be left out: single-stream
    check_pearmut_campaign(stream)
    check_pearmut_campaign(stream | {"data_random": [[{"tgt": {"A": "r"}}]], "info": {"data_random_prob": 0.1}})
    dynamic: dict[str, Any] = {"info": {"assignment": "dynamic"}, "campaign_id": "z", "data": [[{"tgt": {"A": "t"}}]]}
    check_pearmut_campaign(dynamic)
    dynamic["data"].append([{"tgt": {"B": "t"}}])
    with pytest.raises(PrecometError, match=r"data\[0\]\[0\]: lacks models \['B'\]"):
        check_pearmut_campaign(dynamic)


# ------------------------------------------------------------------------------------------------ annotations
def _record(user: str, item_i: Any, items: list[str], scores: list[dict[str, Any] | None]) -> dict[str, Any]:
    """A log record as Pearmut 1.1.6's annotate page submits it (plus the server's user_id and item_i)."""
    annotation = [
        None if s is None else {m: {"score": v, "error_spans": [], "textfield": None} for m, v in s.items()}
        for s in scores
    ]
    return {
        "annotation": annotation,
        "actions": [{"time": 1771315367.4, "action": "load"}, {"time": 1771315377.4, "action": "submit"}],
        "item": [{"item_id": i, "src": f"src {i}", "tgt": {"A": "t", "B": "u"}} for i in items],
        "user_id": user,
        "item_i": item_i,
    }


RECORDS = [
    _record("ann1", "welcome_0", ["tutorial"], [{"A": 80}]),  # a tutorial: no judgement
    _record("ann1", 0, ["a", "c"], [{"A": 70, "B": 40}, {"A": 90, "B": None}]),  # B of c left unscored
    _record("ann2", 0, ["a", "c"], [{"A": 10, "B": 20}, None]),  # voided by the reset below; c skipped
    {"user_id": "ann2", "annotation": "__RESET__"},
    _record("ann2", 0, ["a", "c"], [{"A": 60, "B": 50}, None]),
    _record("ann1", 0, ["a", "c"], [{"A": 75}, {"B": 30}]),  # ann1 resubmits: A of a and B of c replaced/added
    _record("ann2", 1, ["b"], [{"A": 55.5}]),
]
SLIDERS = {
    "annotation": [{"A": {"score": None, "sliders": {"Fluency": 4, "Adequacy": 80, "Style": None}}}],
    "item": [{"item_id": "e", "tgt": {"A": "t"}}],
    "user_id": "ann3",
    "item_i": 2,
}
EXPECTED = [
    Judgement("a", "A", 75.0),
    Judgement("a", "B", 40.0),
    Judgement("c", "A", 90.0),
    Judgement("a", "A", 60.0),
    Judgement("a", "B", 50.0),
    Judgement("c", "B", 30.0),
    Judgement("b", "A", 55.5),
    Judgement("e", "A", 42.0),  # the mean of the answered sliders
]


def test_reads_the_dashboard_download_and_the_server_log(tmp_path: Path) -> None:
    download = tmp_path / "annotations.json"
    download.write_text(json.dumps({"wmt_x": RECORDS + [SLIDERS]}, ensure_ascii=False), encoding="utf-8")
    assert read_pearmut_annotations(download) == EXPECTED
    log = tmp_path / "wmt_x.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in RECORDS + [SLIDERS]), encoding="utf-8")
    assert read_pearmut_annotations(log) == EXPECTED
    listed = tmp_path / "records.json"
    listed.write_text(json.dumps(RECORDS), encoding="utf-8")
    assert read_pearmut_annotations(listed) == EXPECTED[:-1]
    assert all(type(j.score) is float for j in EXPECTED)


def test_a_reset_is_per_campaign(tmp_path: Path) -> None:
    path = tmp_path / "annotations.json"
    one = _record("ann", 0, ["a"], [{"A": 10}])
    path.write_text(json.dumps({"c1": [one], "c2": [{"user_id": "ann", "annotation": "__RESET__"}]}), "utf-8")
    assert read_pearmut_annotations(path) == [Judgement("a", "A", 10.0)]


def _bad_score(record: dict[str, Any]) -> None:
    record["annotation"][0]["A"]["score"] = "high"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_bad_score, r"item 'a', model 'A', 'score': must be a finite number, got 'high'"),
        (lambda r: r.pop("user_id"), "annotation record without 'user_id'"),
        (lambda r: r.pop("item_i"), "annotation record without 'item_i'"),
        (lambda r: r.__setitem__("annotation", {"A": {"score": 1}}), "'annotation' must be a list with one entry"),
        (lambda r: r["item"][0].pop("item_id"), "item 0 of 'item': no 'item_id'"),
        (lambda r: r["annotation"][0]["A"].pop("score"), r"model 'A': expected an object with 'score'"),
    ],
)
def test_malformed_records_name_the_file_and_line(tmp_path: Path, change: Any, message: str) -> None:
    good, bad = _record("u", 0, ["z"], [{"A": 1}]), _record("u", 1, ["a", "b"], [{"A": 1}, {"A": 2}])
    change(bad)
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=message) as err:
        read_pearmut_annotations(log)
    assert err.value.path == log and err.value.line == 2
    download = tmp_path / "annotations.json"
    download.write_text(json.dumps({"wmt_x": [good, bad]}), encoding="utf-8")
    with pytest.raises(DataError, match="campaign 'wmt_x', record 1: .*" + message):
        read_pearmut_annotations(download)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("42", r"unknown shape \(a number\)"),
        ('{"wmt_x": {"user_id": "u"}}', "campaign 'wmt_x': expected a list of annotation records"),
        ('["record"]', "record 0: expected an annotation record"),
        ('{"annotation": [], "item": [], "user_id": "u", "item_i": 0}\n{"broken": ', r"invalid JSON"),
        ('{\n  "wmt_x": [\n', "invalid JSON"),
    ],
)
def test_unknown_shapes_and_broken_json_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "annotations.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_pearmut_annotations(path)


# ------------------------------------------------------------------------------------------------ tutorial, checks
def test_tutorial_and_attention_checks_go_where_pearmut_reads_them() -> None:
    got = pearmut_campaign(_campaign(), _cells(("a", "A")), campaign_id="x", welcome=TUTORIAL, attention=ATTENTION)
    assert got["data_welcome"] == TUTORIAL and got["data_random"] == ATTENTION
    assert got["info"]["data_random_prob"] == DEFAULT_ATTENTION_PROBABILITY
    check_pearmut_campaign(got)  # a welcome document may show other models than the next item: not shuffled
    rate = pearmut_campaign(
        _campaign(), _cells(("a", "A")), campaign_id="x", attention=ATTENTION, attention_probability=1
    )
    assert rate["info"]["data_random_prob"] == 1.0 and isinstance(rate["info"]["data_random_prob"], float)
    got["data_welcome"][0][0]["tgt"]["good"] = "changed"
    assert TUTORIAL[0][0]["tgt"]["good"] == "Die Katze saß."  # copied, not shared


def test_tutorial_and_attention_files_are_documents_or_a_campaign_file(tmp_path: Path) -> None:
    listed = tmp_path / "attention.json"
    listed.write_text(json.dumps(ATTENTION))
    assert read_pearmut_documents(listed, attention=True) == ATTENTION
    campaign_file = tmp_path / "esa_deen.json"  # as Pearmut's examples/tutorial: a task-based campaign file
    campaign_file.write_text(
        json.dumps({"info": {"assignment": "task-based"}, "campaign_id": "t", "data": [TUTORIAL, ATTENTION]})
    )
    assert read_pearmut_documents(campaign_file) == TUTORIAL + ATTENTION
    stream = tmp_path / "stream.json"
    stream.write_text(json.dumps({"campaign_id": "t", "data": TUTORIAL}))
    assert read_pearmut_documents(stream) == TUTORIAL


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"no": "data"}, "expected a list of documents.*got an object"),
        ([], r"expected a list of documents.*\(empty\)"),
        ([[{"src": "s"}]], r"document 0\[0\]: missing 'tgt'"),
        ([["item"]], r"document 0\[0\]: an item must be an object"),
        ([[{"tgt": {"A": "t"}}]], "document 0: an attention check needs a 'validation' rule"),
    ],
)
def test_bad_tutorial_and_attention_files_name_the_file(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "checks.json"
    path.write_text(json.dumps(content))
    with pytest.raises(DataError, match=message) as err:
        read_pearmut_documents(path, attention=True)
    assert str(path) in str(err.value)


# ------------------------------------------------------------------------------------------------ campaign ids
def test_campaign_ids_are_unique_per_campaign_and_wave() -> None:
    first = {"drawn": {"A": ["a", "b"]}, "number": 1}
    one = pearmut_campaign_id("WMT23 zh→en", {"pool": "h", "first_wave": first}, 1)
    assert re.fullmatch(r"WMT23_zh_en_[0-9a-f]{8}_wave1", one)
    assert pearmut_campaign_id("WMT23 zh→en", {"pool": "h", "first_wave": dict(first)}, 1) == one  # stable
    assert pearmut_campaign_id("WMT23 zh→en", {"pool": "h", "first_wave": first}, 2) == one[: -len("1")] + "2"
    other = pearmut_campaign_id("WMT23 zh→en", {"pool": "h", "first_wave": {**first, "drawn": {"A": ["c"]}}}, 1)
    assert other != one and other.endswith("_wave1")
    assert pearmut_campaign_id("", {}, 1).startswith("pool_")


# ------------------------------------------------------------------------------------------------ MQM
def test_mqm_score_takes_the_wmt_weights() -> None:
    def span(severity: Any, category: Any = "Accuracy/Mistranslation") -> dict[str, Any]:
        return {"start_i": 0, "end_i": 3, "severity": severity, "category": category}

    assert mqm_score([]) == 0.0
    spans = [
        span("major"),
        span("minor", "Style/Awkward style"),
        span("minor", "Linguistic conventions/Punctuation"),  # Pearmut's default taxonomy's punctuation: 0.1
        span("minor", "Fluency/Punctuation"),  # WMT's own name: 0.1
        span("major", "Fluency/Punctuation"),  # a major one weighs 5
        span("neutral"),
        span("minor", "Non-translation"),  # 25 whatever the severity
        span("minor", None),  # no category (ESA-like span in an MQM campaign): the severity's weight
    ]
    assert mqm_score(spans) == pytest.approx(-(5 + 1 + 0.1 + 0.1 + 5 + 0 + 25 + 1), abs=1e-12)
    with pytest.raises(DataError, match="error span 0 has severity 'critical'.*major 5, minor 1"):
        mqm_score([span("critical")])
    with pytest.raises(DataError, match="error span 0 has no severity"):
        mqm_score([span(None)])
    with pytest.raises(DataError, match="error span 0 must be an object"):
        mqm_score(["major"])


def test_an_mqm_campaign_is_read_from_its_error_spans(tmp_path: Path) -> None:
    written = pearmut_campaign(_campaign(), _cells(("a", "A"), ("a", "B")), campaign_id="x", protocol="MQM")
    item = written["data"][0][0][0]
    assert item[PROTOCOL_KEY] == "MQM"
    major = {"start_i": 0, "end_i": 1, "severity": "major", "category": "Accuracy/Omission"}
    record = {
        "user_id": "u",
        "item_i": 0,
        "item": [item],
        "annotation": [
            {
                "A": {"score": 90, "error_spans": [major, major], "textfield": None},
                "B": {"score": 10, "error_spans": []},
            }
        ],
    }
    path = tmp_path / "mqm.json"
    path.write_text(json.dumps({"x": [record]}))
    assert read_pearmut_annotations(path) == [Judgement("a", "A", -10.0), Judgement("a", "B", 0.0)]  # not the slider
    record["annotation"][0]["A"] = {"score": 90}
    path.write_text(json.dumps({"x": [record]}))
    with pytest.raises(DataError, match="item 'a', model 'A': an MQM campaign's annotation needs 'error_spans'"):
        read_pearmut_annotations(path)


# ------------------------------------------------------------------------------------------------ the command
def _pool(path: Path) -> Path:
    rows = [
        {"id": f"s{i}", "doc": f"d{i // 3}", "src": f"source {i}", "tgt": {s: f"{s} out {i}" for s in SYSTEMS}}
        for i in range(30)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _waves(tmp_path: Path, *options: str) -> int:
    from precomet.cli import main

    pool = _pool(tmp_path / "pool.jsonl")
    return main(["waves", "--data", str(pool), "--size", "9", "--chooser", "random", *options])


def test_waves_writes_the_options_into_the_campaign_file(tmp_path: Path) -> None:
    tutorial, attention = tmp_path / "tutorial.json", tmp_path / "attention.json"
    tutorial.write_text(json.dumps(TUTORIAL))
    attention.write_text(json.dumps(ATTENTION))
    out = tmp_path / "p.json"
    options = ["--pearmut", str(out), "--pearmut-assignment", "single-stream", "--pearmut-protocol", "MQM"]
    options += ["--pearmut-task-size", "5", "--pearmut-tutorial", str(tutorial), "--pearmut-attention", str(attention)]
    assert _waves(tmp_path, *options, "--pearmut-attention-rate", "0.25") == 0
    written = json.loads(out.read_text())
    check_pearmut_campaign(written)
    cells = sum(len(item["tgt"]) for document in written["data"] for item in document)
    assert written["info"] | {"shuffle": None} == {
        "assignment": "single-stream",
        "protocol": "MQM",
        "shuffle": None,
        "users": -(-cells // 5),
        "data_random_prob": 0.25,
    }
    assert written["data_welcome"] == TUTORIAL and written["data_random"] == ATTENTION
    assert re.fullmatch(r"pool_[0-9a-f]{8}_wave1", written["campaign_id"])
    default = tmp_path / "default.json"
    assert _waves(tmp_path, "--pearmut", str(default), "--seed", "1") == 0
    plain = json.loads(default.read_text())
    assert plain["info"]["assignment"] == "task-based" and plain["info"]["protocol"] == "ESA"
    assert plain["campaign_id"] != written["campaign_id"]  # another draw, another campaign
    assert len(plain["data"]) == 1  # 9 items × 3 systems of ~35 s: under an hour, one task


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--pearmut-protocol", "MQM"], "--pearmut-protocol: an option of the Pearmut campaign file; add --pearmut"),
        (["--pearmut-task-size", "1h"], "--pearmut-task-size: an option of the Pearmut campaign file"),
        (["--pearmut", "{d}/p.json", "--pearmut-task-size", "0"], "argument --pearmut-task-size: '0': expected a"),
        (["--pearmut", "{d}/p.json", "--pearmut-task-size", "soon"], "--pearmut-task-size: 'soon': give judgements"),
        (["--pearmut", "{d}/p.json", "--pearmut-protocol", "SQM"], "--pearmut-protocol: invalid choice: 'SQM'"),
        (["--pearmut", "{d}/p.json", "--pearmut-assignment", "x"], "--pearmut-assignment: invalid choice: 'x'"),
        (["--pearmut", "{d}/p.json", "--pearmut-attention-rate", "0"], r"--pearmut-attention-rate: '0': a chance in"),
        (["--pearmut", "{d}/p.json", "--pearmut-attention-rate", "x"], r"--pearmut-attention-rate: 'x': a chance in"),
        (
            ["--pearmut", "{d}/p.json", "--pearmut-attention-rate", "0.2"],
            "--pearmut-attention-rate 0.2: the chance of an attention check needs attention-check documents",
        ),
        (["--pearmut", "{d}/p.json", "--pearmut-tutorial", "{d}/missing.json"], "missing.json"),
        (["--pearmut", "{d}/p.json", "--pearmut-attention", "{d}/plain.json"], "attention check needs a 'validation'"),
        (["replay", "--pearmut-protocol", "DA"], "--pearmut-protocol: a live campaign's option"),
    ],
)
def test_bad_pearmut_options_name_the_option(tmp_path: Path, capsys, options: list[str], message: str) -> None:
    (tmp_path / "plain.json").write_text(json.dumps([[{"tgt": {"A": "t"}}]]))
    status = 2
    try:
        got = _waves(tmp_path, *(option.replace("{d}", str(tmp_path)) for option in options))
    except SystemExit as exit_:  # argparse's own errors
        got = exit_.code
    assert got == status
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "p.json").exists()


def test_dynamic_assignment_refused_where_the_systems_differ_says_why(tmp_path: Path) -> None:
    """A wave that draws some systems only on some items (``--allocation`` after the first wave) cannot go to
    Pearmut's dynamic assignment: the command's error names its option."""
    import argparse
    import contextlib
    from types import SimpleNamespace

    from precomet.commands.waves import _write_pearmut

    pool = _campaign()
    drawn = _cells(("a", "A"), ("a", "B"), ("b", "A"))[:, :2]
    outcome = SimpleNamespace(
        wave=SimpleNamespace(drawn=drawn, number=2),
        systems=("A", "B"),
        manifest=SimpleNamespace(pearmut_identity=lambda: {"pool": "h", "first_wave": {"number": 1}}),
    )
    args = argparse.Namespace(
        pearmut=tmp_path / "p.json",
        **{f"pearmut_{name}": None for name in ("protocol", "task_size", "tutorial", "attention", "attention_rate")},
        pearmut_assignment="dynamic",
    )
    out = SimpleNamespace(open=lambda path: contextlib.nullcontext(io.StringIO()))
    with pytest.raises(PrecometError, match=r"item 'b' lacks systems \['B'\].*inclusion probabilities") as err:
        _write_pearmut(out, args, pool, outcome)
    assert "choose --pearmut-assignment task-based or single-stream" in str(err.value)
    args.pearmut_assignment = "task-based"
    _write_pearmut(out, args, pool, outcome)  # the same wave as a task-based campaign
