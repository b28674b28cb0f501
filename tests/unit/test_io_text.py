"""Legitimate inputs the strict readers (``precomet.io.text``) must read correctly (issue 20): a UTF-8 byte-order
mark at the start of any text input is removed, and CSV/TSV cells longer than the csv module's default 128 KiB
limit (a whole document) are read in full, without changing that limit for anyone else."""

from __future__ import annotations

import codecs
import csv
import json
import shutil

import pytest

from precomet.io import load
from precomet.io.esa import load_wmt24_esa
from precomet.io.text import read_lines
from precomet.io.utility_files import read_utilities
from precomet.pairwise.preference import load_preferences
from precomet.rank import read_manifest
from tests.bad_inputs import CSV_HEADER, FIXTURES, GOOD, PREFS, UTILITIES
from tests.bad_inputs.cases_readers import TED_HEADER, _mtme

BOM = codecs.BOM_UTF8
LONG = "word " * 40_000  # 200,000 characters: over csv's default field limit of 131,072


def test_read_lines_strips_the_bom_and_crlf(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(BOM + b"first\r\nsecond\r\n")
    assert read_lines(path) == ["first", "second"]


def test_mtme_sources_with_bom_item_0_has_no_bom(tmp_path):
    _mtme(tmp_path, sources=BOM + b"Hello\nBye\n", A=BOM + b"Hallo\nTschau\n", mqm=BOM + b"A\t-1\nA\t-2\nB\t0\nB\t-1\n")
    campaign = load(tmp_path / "mtme", campaign="wmt23/en-de")
    assert list(campaign.src) == ["Hello", "Bye"]
    assert campaign.outputs["A"][0] == "Hallo"
    assert campaign.systems == ("A", "B")
    assert campaign.score("human")[0].tolist() == [-1.0, 0.0]


def test_jsonl_with_bom(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_bytes(BOM + GOOD.encode())
    campaign = load(path)
    assert list(campaign.ids) == ["a", "b", "c", "d"]
    assert campaign.src[0] == "one two"


def test_csv_with_bom_and_a_cell_over_128_kib(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(BOM + (CSV_HEADER + f'a,"{LONG}",,h,1,2\nb,bye,,b,3,4\n').encode())
    limit = csv.field_size_limit()
    campaign = load(path)
    assert csv.field_size_limit() == limit  # the raised limit does not leak out of the reader
    assert list(campaign.ids) == ["a", "b"]
    assert campaign.src[0] == LONG
    assert campaign.score("human").tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_esa_csv_with_bom_and_a_long_error_span_cell(tmp_path):
    shutil.copytree(FIXTURES / "esa_tiny", tmp_path / "esa")
    wave = tmp_path / "esa" / "humeval" / "wave1.csv"
    before = load_wmt24_esa(tmp_path / "esa", "en-cs")
    spans = json.dumps([{"note": LONG}]).replace('"', '""')
    wave.write_bytes(BOM + wave.read_text().replace(",False,[],100.0,110.0", f',False,"{spans}",100.0,110.0').encode())
    after = load_wmt24_esa(tmp_path / "esa", "en-cs")
    assert list(after.ids) == list(before.ids)
    assert after.score("human").tolist() == before.score("human").tolist()


def test_mtme_documents_and_metric_scores_with_bom(tmp_path):
    _mtme(tmp_path)
    base = tmp_path / "mtme" / "wmt23"
    (base / "documents").mkdir()
    (base / "documents" / "en-de.docs").write_bytes(BOM + b"news\tdoc1\nnews\tdoc2\n")
    (base / "metric-scores" / "en-de").mkdir(parents=True)
    (base / "metric-scores" / "en-de" / "chrF-refA.seg.score").write_bytes(BOM + b"A\t0.5\nA\t0.25\nB\t1\nB\t0\n")
    campaign = load(tmp_path / "mtme", campaign="wmt23/en-de")
    assert list(campaign.domain) == ["news", "news"]
    assert list(campaign.doc) == ["doc1", "doc2"]
    assert campaign.score("chrF").tolist() == [[0.5, 1.0], [0.25, 0.0]]


def test_mqm_tsv_with_bom_and_a_long_target(tmp_path):
    path = tmp_path / "t_ende.tsv"
    row = f"A\td\t1\t1\tr\thello\t{LONG}\tNo-error\tNo-error\nref\td\t1\t1\tr\thello\thallo\tNo-error\tNo-error\n"
    path.write_bytes(BOM + (TED_HEADER + row).encode())
    campaign = load(path)
    assert campaign.systems == ("A",)
    assert campaign.outputs["A"][0] == LONG
    assert campaign.src[0] == "hello"


def test_preference_csv_with_bom_and_a_long_item(tmp_path):
    path = tmp_path / "prefs.csv"
    path.write_bytes(BOM + (PREFS + f'"{LONG}",A,B,b\n').encode())
    prefs = load_preferences(path)
    assert list(prefs.label) == ["a", "b", "tie", "b"]
    assert prefs.item[3] == LONG


def test_preference_jsonl_and_alpaca_with_bom(tmp_path):
    jsonl = tmp_path / "prefs.jsonl"
    jsonl.write_bytes(BOM + b'{"item": 1, "model_a": "A", "model_b": "B", "likert": 7}\n')
    assert list(load_preferences(jsonl).label) == ["b"]
    alpaca = tmp_path / "annotations.json"
    record = {"instruction": "hi", "generator_1": "A", "generator_2": "B", "preference": 1.9}
    alpaca.write_bytes(BOM + json.dumps([record]).encode())
    assert list(load_preferences(alpaca).label) == ["b"]


def test_manifest_and_utilities_with_bom(tmp_path):
    manifest = tmp_path / "m.json"
    manifest.write_bytes(BOM + json.dumps({"method": "random", "n_selected": 2}).encode())
    assert read_manifest(manifest)["method"] == "random"
    utilities = tmp_path / "u.jsonl"
    utilities.write_bytes(BOM + UTILITIES.encode())
    ids, values, _ = read_utilities(utilities)
    assert ids == ["a", "b", "c", "d"]
    assert values.tolist() == [0.1, 0.2, 0.3, 0.4]


def test_parse_json_accepts_ordinary_nesting_and_brackets_in_strings():
    from precomet.io.text import parse_json

    assert parse_json('{"a": [[{"b": "[[[[{{{{"}]]}', "x.json") == {"a": [[{"b": "[[[[{{{{"}]]}
    nested = "[" * 100 + "]" * 100
    assert parse_json(nested, "x.json") is not None
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_json("[" * 101 + "]" * 101, "x.json")
