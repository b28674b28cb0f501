"""The simple CSV format: hand-written fixture and every bad-input error."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from precomet.campaign import HUMAN
from precomet.errors import DataError
from precomet.io import detect_format, load
from precomet.io.csvfile import load_csv

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny.csv"
HEADER = "id,src,cost,tgt:A,score:human:A"


def test_tiny_csv_hand_computed():
    campaign = load(TINY, complete=False)
    assert detect_format(TINY) == "csv"
    assert list(campaign.ids) == ["s1", "s2", "s3"]
    assert campaign.systems == ("A", "B")
    assert list(campaign.src) == ["Hello, world", "Bye", "Third"]
    np.testing.assert_array_equal(campaign.score(HUMAN), [[90, 70], [80, np.nan], [10, 20]])
    np.testing.assert_array_equal(campaign.score("chrF"), [[0.8, np.nan], [0.5, np.nan], [np.nan, np.nan]])
    np.testing.assert_allclose(campaign.cost, [12.5, 0.15 * 3 + 33.7, 7.0])
    assert list(campaign.doc) == ["d1", "d1", "s3"]
    assert list(campaign.domain) == ["news", "news", "all"]
    assert list(campaign.outputs["B"]) == ["Hallo", None, "Dritte"]
    assert list(campaign.ref) == ["Hallo Welt", "Tschüss", "Drittens"]
    assert campaign.name == "tiny"


def test_complete_drops_item_without_human_score():
    campaign = load(TINY)
    assert list(campaign.ids) == ["s1", "s3"]
    assert campaign.info["dropped"].startswith("1 items")


def test_system_name_may_contain_colons(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("id,src,tgt:org:model,score:human:org:model\n1,a,x,3\n", encoding="utf-8")
    campaign = load_csv(path)
    assert campaign.systems == ("org:model",)
    assert campaign.score(HUMAN)[0, 0] == 3


def _csv(tmp_path, body: str, header: str = HEADER) -> Path:
    path = tmp_path / "bad.csv"
    path.write_text(header + "\n" + body, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("header", "body", "message"),
    [
        (
            HEADER,
            "a,x,10,y,1\nb,z,20,w,abc\n",
            r"bad.csv:3: item 'b', system 'A', score 'human': must be a finite number, got 'abc'",
        ),
        (HEADER, "a,x,10,y,1\na,z,20,w,2\n", r"bad.csv:3: duplicate id 'a' \(first on line 2\)"),
        (HEADER, "a, ,10,y,1\n", r"bad.csv:2: item 'a': empty source 'src'"),
        (HEADER, "a,x,nan,y,1\n", r"bad.csv:2: item 'a', field 'cost': must be a positive finite number, got 'nan'"),
        (HEADER, "a,x,-3,y,1\n", r"bad.csv:2: item 'a', field 'cost': must be a positive finite number, got '-3'"),
        (
            HEADER,
            "a,x,cheap,y,1\n",
            r"bad.csv:2: item 'a', field 'cost': must be a positive finite number, got 'cheap'",
        ),
        (HEADER, "a,x,10\n", r"bad.csv:2: expected 5 fields as in the header, got 3"),
        ("id,text", "a,x\n", r"bad.csv:1: unknown column 'text'"),
        ("src,tgt:A", "x,y\n", r"bad.csv:1: missing required column 'id'"),
        (HEADER, "", r"bad.csv: no item rows"),
    ],
)
def test_bad_csv(tmp_path, header, body, message):
    with pytest.raises(DataError, match=message):
        load_csv(_csv(tmp_path, body, header))


def test_invalid_utf8(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(HEADER.encode() + b"\na,ok,1,y,1\nb,\xff\xfe,1,y,1\n")
    with pytest.raises(DataError, match=r"bad.csv:3: invalid UTF-8"):
        load_csv(path)


def test_quoted_multiline_field(tmp_path):
    path = _csv(tmp_path, 'a,"two\nlines",10,y,1\nb,x,20,w,2\n')
    campaign = load_csv(path)
    assert campaign.src[0] == "two\nlines" and math.isclose(campaign.cost[1], 20.0)
