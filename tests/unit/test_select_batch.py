"""The annotation batch of ``select --batch`` (issue 21): the chosen items with their texts as JSONL, CSV or TSV,
texts surviving a round trip through a CSV reader, input or document order, written with the subset as one set."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from precomet.cli import main
from precomet.io import load
from precomet.io.text import csv_rows, spreadsheet_cell
from tests.bad_inputs import shipped_checkpoint

TRICKY = [
    'comma, "quotes" and a\ttab',
    "two\nlines",
    "windows\r\nline end and a lone \r return",
    '  spaces around  ; a trailing quote"',
    "=SUM(A1) ünïcödé 中文 🙂",
    "plain",
]
SYSTEMS = ("sys,A", 'sys"B', "C")


def _items(path: Path) -> Path:
    rows = []
    for i, text in enumerate(TRICKY):
        rows.append(
            {
                "id": f"s{i}",
                "src": text,
                "ref": None if i == 5 else f"ref {text}",
                "doc": f"d{i % 2}",
                "domain": "news" if i < 3 else "chat",
                "tgt": {s: (None if (i == 1 and s == "C") else f"{s}: {text}") for s in SYSTEMS},
                "scores": {s: {"m": float((i * 7 + j * 3) % 5)} for j, s in enumerate(SYSTEMS)},
            }
        )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _select(tmp_path: Path, batch: str, *extra: str) -> tuple[list[dict], Path]:
    data = _items(tmp_path / "items.jsonl")
    out = tmp_path / "subset.jsonl"
    argv = ["select", "--data", str(data), "--method", "metric_var", "--metric", "m", "--budget", "6"]
    assert main([*argv, "-o", str(out), "--batch", str(tmp_path / batch), *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()], tmp_path / batch


@pytest.mark.parametrize("name, delimiter", [("batch.csv", ","), ("batch.tsv", "\t"), ("batch.CSV", ",")])
def test_csv_and_tsv_batches_round_trip_tricky_texts(tmp_path, name, delimiter):
    subset, batch = _select(tmp_path, name)
    with open(batch, encoding="utf-8", newline="") as handle:
        header, *rows = list(csv.reader(handle, delimiter=delimiter))
    assert header == ["id", "doc", "domain", "src", "ref"] + [f"tgt:{s}" for s in SYSTEMS]
    assert [row[0] for row in rows] == [f"s{i}" for i in range(6)]  # input order, not the subset's utility order
    assert {r["id"] for r in subset} == {row[0] for row in rows}
    for i, row in enumerate(rows):
        record = dict(zip(header, row))
        assert record["src"] == ("'" + TRICKY[i] if TRICKY[i].startswith("=") else TRICKY[i])  # spreadsheet-safe
        assert record["ref"] == ("" if i == 5 else f"ref {TRICKY[i]}")
        assert record["doc"] == f"d{i % 2}" and record["domain"] == ("news" if i < 3 else "chat")
        for s in SYSTEMS:
            assert record[f"tgt:{s}"] == ("" if (i == 1 and s == "C") else f"{s}: {TRICKY[i]}")
    assert batch.read_bytes().count(b"\r\n") >= len(rows) + 1  # RFC 4180 row ends


def test_spreadsheet_cell_escapes_formulas_and_unescapes_exactly():
    texts = ["=1+1", "+cmd", "-x", "@SUM(A1)", "\tTab", "\rCR", "'quoted", "''", "-0.5", "+3", "'=", "'", "1e5", "a=b"]
    escaped = [spreadsheet_cell(text) for text in texts]
    assert escaped[:10] == ["'" + text for text in texts[:10]] and escaped[-2:] == texts[-2:]
    assert escaped[10:12] == ["''=", "''"]
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator="\r\n").writerow(escaped)
    assert [row for _, row in csv_rows("t.csv", buffer.getvalue(), unescape=True)] == [texts]


def test_csv_batch_is_read_back_by_precomet(tmp_path):
    _, batch = _select(tmp_path, "batch.csv")
    again = load(batch)
    assert list(again.src) == TRICKY and list(again.systems) == list(SYSTEMS)
    assert again.outputs["C"][1] is None and again.outputs['sys"B'][2] == 'sys"B: ' + TRICKY[2]


def test_jsonl_batch_holds_the_texts_and_loads_as_items(tmp_path):
    _, batch = _select(tmp_path, "batch.jsonl")
    rows = [json.loads(line) for line in batch.read_text(encoding="utf-8").splitlines()]
    assert [r["src"] for r in rows] == TRICKY
    assert rows[1]["tgt"] == {"sys,A": "sys,A: two\nlines", 'sys"B': 'sys"B: two\nlines', "C": None}
    assert rows[5]["ref"] is None and "scores" not in rows[0] and "utility" not in rows[0]
    assert list(load(batch).ids) == [f"s{i}" for i in range(6)]


def test_batch_order_doc_groups_by_document(tmp_path):
    _, batch = _select(tmp_path, "batch.jsonl", "--batch-order", "doc")
    rows = [json.loads(line) for line in batch.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["s0", "s2", "s4", "s1", "s3", "s5"]
    assert [r["doc"] for r in rows] == ["d0"] * 3 + ["d1"] * 3
    manifest = json.loads((tmp_path / "subset.manifest.json").read_text())
    assert manifest["parameters"]["batch"] == str(batch) and manifest["parameters"]["batch_order"] == "doc"


def test_batch_holds_only_the_chosen_items(tmp_path):
    data = _items(tmp_path / "items.jsonl")
    out, batch = tmp_path / "subset.jsonl", tmp_path / "b.tsv"
    argv = ["select", "--data", str(data), "--method", "metric_var", "--metric", "m", "--budget", "2"]
    assert main([*argv, "-o", str(out), "--batch", str(batch)]) == 0
    chosen = {json.loads(line)["id"] for line in out.read_text().splitlines()}
    with open(batch, encoding="utf-8", newline="") as handle:
        ids = [row[0] for row in list(csv.reader(handle, delimiter="\t"))[1:]]
    assert set(ids) == chosen and len(ids) == 2 and ids == sorted(ids, key=lambda i: int(i[1:]))


@pytest.mark.slow  # encodes with the shipped e5-small: about 6 s when it runs alone (torch import, model load)
def test_select_checkpoint_on_plain_text_end_to_end(tmp_path, capsys):
    ckpt = shipped_checkpoint(tmp_path)
    sources = [
        "The committee approved the budget on Tuesday.",
        "Er sagte: „Das ist, ehrlich gesagt, zu teuer.“",
        "Restart the router, then wait thirty seconds.",
        "这本书非常有趣，我推荐给大家。",
        "Thanks!",
    ]
    text = tmp_path / "sources.txt"
    text.write_text("\n".join(sources) + "\n", encoding="utf-8")
    docs = tmp_path / "docs.txt"
    docs.write_text("a\nb\na\nc\nb\n", encoding="utf-8")
    out, batch = tmp_path / "subset.jsonl", tmp_path / "batch.csv"
    argv = ["select", "--data", str(text), "--docs", str(docs), "--checkpoint", str(ckpt), "--proportion", "0.6"]
    assert main([*argv, "-o", str(out), "--batch", str(batch), "--batch-order", "doc"]) == 0
    printed = capsys.readouterr().out
    assert "selected 3 of 5 items" in printed and "annotation batch (source; doc order)" in printed
    subset = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(subset) == 3 and all(r["id"] in {"1", "2", "3", "4", "5"} for r in subset)
    with open(batch, encoding="utf-8", newline="") as handle:
        header, *rows = list(csv.reader(handle))
    assert header == ["id", "doc", "domain", "src"]
    assert {row[0] for row in rows} == {r["id"] for r in subset}
    assert all(row[3] == sources[int(row[0]) - 1] for row in rows)
    first = {}
    for row in rows:
        first.setdefault(row[1], len(first))
    assert [first[row[1]] for row in rows] == sorted(first[row[1]] for row in rows)  # grouped by document
    manifest = json.loads((tmp_path / "subset.manifest.json").read_text())
    assert manifest["method"] == "checkpoint" and manifest["parameters"]["batch"] == str(batch)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "items.jsonl")


@pytest.mark.parametrize("failure", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_failed_batch_leaves_neither_subset_nor_batch(tmp_path, monkeypatch, failure):
    import precomet.io.batch

    real = precomet.io.batch.write_batch

    def half_then_fail(handle, *args, **kwargs):
        real(handle, *args, **kwargs)
        handle.flush()
        raise failure

    monkeypatch.setattr(precomet.selection.subset_file, "write_batch", half_then_fail)
    data = _items(tmp_path / "items.jsonl")
    argv = ["select", "--data", str(data), "--method", "metric_var", "--metric", "m", "--budget", "3"]
    status = main([*argv, "-o", str(tmp_path / "subset.jsonl"), "--batch", str(tmp_path / "batch.csv")])
    assert status == (130 if isinstance(failure, KeyboardInterrupt) else 1)
    assert _leftovers(tmp_path) == []


def test_existing_outputs_kept_when_select_fails(tmp_path, monkeypatch):
    import precomet.io.batch

    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    data = _items(tmp_path / "items.jsonl")
    for name in ("subset.jsonl", "subset.manifest.json", "batch.tsv"):
        (tmp_path / name).write_text("old\n")
    monkeypatch.setattr(precomet.selection.subset_file, "write_batch", fail)
    argv = ["select", "--data", str(data), "--method", "metric_var", "--metric", "m", "--budget", "3"]
    assert main([*argv, "-o", str(tmp_path / "subset.jsonl"), "--batch", str(tmp_path / "batch.tsv")]) == 1
    assert _leftovers(tmp_path) == ["batch.tsv", "subset.jsonl", "subset.manifest.json"]
    assert all((tmp_path / name).read_text() == "old\n" for name in _leftovers(tmp_path))


def test_batch_writer_library_api():
    from precomet.campaign import Campaign
    from precomet.io.batch import batch_order, write_batch

    campaign = Campaign.build(ids=["x", "y", "z"], src=["a", "b", "c"], systems=[], doc=["d2", "d1", "d2"])
    assert list(batch_order(campaign, [2, 1, 0], "doc")) == [0, 2, 1]
    handle = io.StringIO(newline="")
    assert write_batch(handle, campaign, [2, 0], format="tsv") == 2
    assert handle.getvalue() == "id\tdoc\tdomain\tsrc\r\nx\td2\tall\ta\r\nz\td2\tall\tc\r\n"


def test_a_budget_that_covers_every_item_says_so(tmp_path, monkeypatch, capsys):
    from precomet.cli import main
    from tests.bad_inputs import GOOD

    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.jsonl").write_text(GOOD)
    argv = ["select", "--data", "items.jsonl", "--method", "metric_var", "--metric", "m", "-o", "s.jsonl"]
    assert main([*argv, "--budget", "9"]) == 0
    assert "covers all 4 items" in capsys.readouterr().err
    assert main([*argv, "--budget", "2"]) == 0
    assert "covers all" not in capsys.readouterr().err


def test_exclude_missing_never_selects_items_without_a_utility(tmp_path, monkeypatch, capsys):
    """Items lacking the metric for some system (or null in a --utility-file file) are an error that names
    --exclude-missing, and with it they are left out of the selection, counted in a note and in the manifest."""
    monkeypatch.chdir(tmp_path)
    scores = {"a": (0.9, None), "b": (0.1, "absent"), "c": (None, 0.6), "d": (0.2, 1.0), "e": (0.3, 0.1)}
    rows = []
    for item, values in scores.items():
        per_system = {s: ({} if v == "absent" else {"m": v}) for s, v in zip("XY", values)}
        rows.append({"id": item, "src": f"source {item}", "tgt": {"X": "x", "Y": "y"}, "scores": per_system})
    Path("items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    argv = ["select", "--data", "items.jsonl", "--budget", "1", "-o", "s.jsonl"]
    assert main([*argv, "--method", "metric_avg", "--metric", "m"]) == 2
    assert "pass --exclude-missing" in capsys.readouterr().err
    assert main([*argv, "--method", "metric_avg", "--metric", "m", "--exclude-missing"]) == 0
    assert "3 of 5 items have no utility and are never selected" in capsys.readouterr().err
    assert [json.loads(line)["id"] for line in Path("s.jsonl").read_text().splitlines()] == ["e"]  # lower m first
    assert json.loads(Path("s.manifest.json").read_text())["parameters"]["excluded_missing"] == 3
    assert (
        main(
            ["utilities", "--data", "items.jsonl", "--method", "metric_avg", "--metric", "m"]
            + ["--exclude-missing", "-o", "u.jsonl"]
        )
        == 0
    )
    assert main([*argv, "--utility-file", "u.jsonl"]) == 2
    assert main([*argv, "--utility-file", "u.jsonl", "--exclude-missing"]) == 0
    assert [json.loads(line)["id"] for line in Path("s.jsonl").read_text().splitlines()] == ["e"]
    shipped = ["select", "--data", "items.jsonl", "--checkpoint", "ckpt", "--exclude-missing", "--budget", "1"]
    assert main([*shipped, "-o", "t.jsonl"]) == 2
    assert "--exclude-missing applies to --method and --utility-file" in capsys.readouterr().err


@pytest.mark.slow  # loads the sentence encoder
def test_a_budget_that_covers_every_item_selects_them_all_with_a_method_that_needs_a_budget(
    tmp_path, monkeypatch, capsys
):
    """kmeans (and diffuse) take the budget in items: one that covers the campaign is the whole campaign, as for
    every other method, not an error about a number of items the user never gave."""
    from tests.bad_inputs import GOOD

    monkeypatch.chdir(tmp_path)
    (tmp_path / "items.jsonl").write_text(GOOD)
    argv = ["select", "--data", "items.jsonl", "--method", "kmeans", "-o", "s.jsonl"]
    assert main([*argv, "--budget", "9"]) == 0
    assert "covers all 4 items" in capsys.readouterr().err
    assert main([*argv, "--budget-cost", "100000"]) == 0
    assert "covers the whole campaign" in capsys.readouterr().err
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 4


def test_the_batch_alone_needs_no_subset_file(tmp_path, capsys):
    data = _items(tmp_path / "items.jsonl")
    argv = ["select", "--data", str(data), "--method", "metric_var", "--metric", "m", "--budget", "6"]
    assert main([*argv, "--batch", str(tmp_path / "only.csv")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.jsonl", "only.csv", "only.csv.manifest.json"]
    manifest = json.loads((tmp_path / "only.csv.manifest.json").read_text())
    assert manifest["n_selected"] == 6 and manifest["parameters"]["batch"] == str(tmp_path / "only.csv")
    assert len(list(csv.DictReader((tmp_path / "only.csv").open(encoding="utf-8", newline="")))) == 6
    assert main([*argv, "-o", str(tmp_path / "s.jsonl"), "--batch", str(tmp_path / "both.csv")]) == 0
    same = [row["id"] for row in csv.DictReader((tmp_path / "both.csv").open(encoding="utf-8", newline=""))]
    alone = [row["id"] for row in csv.DictReader((tmp_path / "only.csv").open(encoding="utf-8", newline=""))]
    assert same == alone
    capsys.readouterr()
    assert main(argv) == 2
    assert "give -o PATH (the subset), --batch PATH (the annotation batch), or both" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["batch.json", "batch.txt"])
def test_appraise_batch_reads_back_with_every_output_of_the_chosen_items(tmp_path, name, capsys):
    """Issues 32 and 60: ``--batch-format appraise`` writes the batches JSON Appraise imports: one TGT item per
    chosen source and system output, each text exact, one document per system (a ``DOC#SYSTEM`` block together),
    the last item of a whole document flagged, quality-control documents beside them, item ids that come back."""
    from precomet.io.batch import appraise_item_id

    subset, path = _select(tmp_path, name, "--batch-format", "appraise")
    batches = json.loads(path.read_text(encoding="utf-8"))
    assert "Appraise batches JSON" in capsys.readouterr().out
    items = [item for batch in batches for item in batch["items"]]
    real = [item for item in items if item["itemType"] == "TGT"]
    expected = sorted((f"s{i}", s) for i in range(6) for s in SYSTEMS if not (i == 1 and s == "C"))
    assert sorted((item["sourceID"], item["targetID"]) for item in real) == expected
    assert [batch["task"]["batchNo"] for batch in batches] == list(range(1, len(batches) + 1))
    assert [batch["task"]["batchSize"] for batch in batches] == [len(batch["items"]) for batch in batches]
    for item in real:
        i = int(item["sourceID"][1:])
        assert item["sourceText"] == TRICKY[i] and item["targetText"] == f"{item['targetID']}: {TRICKY[i]}"
        assert item["documentID"] == f"d{i % 2}#{item['targetID']}" and item["itemID"] == appraise_item_id(f"s{i}")
    blocks: dict[str, list[dict]] = {}
    for item in real:
        blocks.setdefault(item["documentID"], []).append(item)
    for document, block in blocks.items():  # the document's items in order; flagged when the whole document is in
        assert [item["sourceID"] for item in block] == sorted(item["sourceID"] for item in block)
        whole = document != "d1#C"  # system C has no output for s1
        assert [item["isCompleteDocument"] for item in block] == [False] * (len(block) - 1) + [whole]
    controls = [item for item in items if item["itemType"] == "BAD"]
    assert controls and all(item["documentID"].removesuffix("#bad") in blocks for item in controls)
    originals = {(item["documentID"], item["itemID"]): item["targetText"] for item in real}
    assert all(originals[(item["documentID"][:-4], item["itemID"])] != item["targetText"] for item in controls)
    task = batches[0]["task"]
    assert set(task) == {
        "batchNo",
        "batchSize",
        "randomSeed",
        "requiredAnnotations",
        "sourceLanguage",
        "targetLanguage",
    }


def test_a_json_batch_names_its_tool(tmp_path, capsys):
    """Issue 60: Appraise and Pearmut both read JSON, so ``--batch x.json`` alone is refused, naming both."""
    data = _items(tmp_path / "items.jsonl")
    argv = ["select", "--data", str(data), "--method", "random", "--budget", "1", "--batch", str(tmp_path / "b.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Appraise and Pearmut both read JSON" in err and "--batch-format appraise" in err
    assert not (tmp_path / "b.json").exists()


def test_appraise_batch_of_sources_without_outputs_is_refused_and_nothing_written(tmp_path, capsys):
    sources = tmp_path / "sources.txt"
    sources.write_text("one source\nanother source\n", encoding="utf-8")
    argv = [
        "select",
        "--data",
        str(sources),
        "--method",
        "random",
        "--budget",
        "1",
        "--batch",
        str(tmp_path / "b.json"),
        "--batch-format",
        "appraise",
    ]
    assert main(argv) == 2
    assert "Appraise batch pairs each source with a system's output" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()


def test_batch_format_without_batch_is_refused(tmp_path, capsys):
    data = _items(tmp_path / "items.jsonl")
    argv = ["select", "--data", str(data), "--method", "random", "--budget", "1", "-o", str(tmp_path / "s.jsonl")]
    assert main([*argv, "--batch-format", "appraise"]) == 2
    assert "--batch-format applies to --batch" in capsys.readouterr().err


def test_campaign_languages_are_appraises_three_letter_codes():
    from precomet.io.batch import campaign_languages

    assert campaign_languages("wmt23/zh-en") == ("zho", "eng")
    assert campaign_languages("mt-metrics-eval-v2:wmt24/en-ja") == ("eng", "jpn")
    assert campaign_languages("wmt23/en-liv") == ("eng", "liv")
    assert campaign_languages("campaign") == ("und", "und")


NUMBER_LIKE = ["-inf", "-nan", "-1_000", "+Infinity"]
"""Texts Python's ``float()`` reads as numbers: a spreadsheet still runs them as formulas (issue 61)."""


def test_the_escape_decides_by_the_first_character_and_only_precomets_own_numbers_pass():
    assert [spreadsheet_cell(text) for text in NUMBER_LIKE] == ["'" + text for text in NUMBER_LIKE]
    assert spreadsheet_cell(-0.5) == "-0.5" and spreadsheet_cell(-3) == "-3"  # numbers precomet computed


@pytest.mark.parametrize("name, delimiter", [("batch.csv", ","), ("batch.tsv", "\t")])
def test_select_batch_escapes_texts_that_read_as_numbers(tmp_path, name, delimiter):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"id": text, "src": text}) + "\n" for text in NUMBER_LIKE), encoding="utf-8")
    batch = tmp_path / name
    argv = ["select", "--data", str(data), "--method", "random", "--budget", "4", "-o", str(tmp_path / "s.jsonl")]
    assert main([*argv, "--batch", str(batch)]) == 0
    with open(batch, encoding="utf-8", newline="") as handle:
        header, *rows = list(csv.reader(handle, delimiter=delimiter))
    cells = {row[header.index("src")] for row in rows} | {row[header.index("id")] for row in rows}
    assert cells == {"'" + text for text in NUMBER_LIKE}
    back = csv_rows(batch, batch.read_text(encoding="utf-8"), delimiter=delimiter, unescape=True)
    assert {row[header.index("src")] for _, row in back[1:]} == set(NUMBER_LIKE)  # the exact texts again


@pytest.mark.parametrize("name, delimiter", [("w.csv", ","), ("w.tsv", "\t")])
def test_waves_batch_escapes_texts_that_read_as_numbers(tmp_path, name, delimiter):
    sources = tmp_path / "sources.txt"
    lines = NUMBER_LIKE + [f"{NUMBER_LIKE[i % 4]} {i}" for i in range(4, 40)]
    sources.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    batch = tmp_path / name
    assert main(["waves", "--data", str(sources), "--size", "40", "--batch", str(batch)]) == 0
    with open(batch, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter=delimiter))
    texts = {row["src"] for row in rows}
    assert {"'" + text for text in NUMBER_LIKE} <= texts and not set(NUMBER_LIKE) & texts
    back = csv_rows(batch, batch.read_text(encoding="utf-8"), delimiter=delimiter, unescape=True)
    assert set(NUMBER_LIKE) <= {row[3] for _, row in back[1:]}
