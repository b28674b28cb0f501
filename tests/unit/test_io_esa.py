"""WMT24 ESA loader: hand-computed fixture (filtering, averaging) and the real waves 2–3."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from precomet.campaign import HUMAN
from precomet.errors import DataError, PrecometError
from precomet.io import detect_format, load
from precomet.io.esa import drop_reason, list_esa_campaigns, load_wmt24_esa, read_appraise_csv

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "esa_tiny"


def test_filtering_rules():
    reasons = [drop_reason(row) for row in read_appraise_csv(ROOT / "humeval" / "wave1.csv")]
    assert reasons.count("tutorial") == 1
    assert reasons.count("BAD") == 1
    assert reasons.count("#dup") == 1 and reasons.count("#incomplete") == 1
    assert reasons.count(None) == 10


def test_tiny_campaign_hand_computed():
    campaign = load_wmt24_esa(ROOT, "en-cs")
    assert list_esa_campaigns(ROOT) == ["en-cs"]
    assert campaign.systems == ("A", "B")
    assert list(campaign.ids) == ["wmt24/en-cs/1", "wmt24/en-cs/2", "wmt24/en-cs/3"]
    # A line 1 rated 80 and 60 -> 70; the #dup/#incomplete/BAD ratings of B are ignored
    np.testing.assert_array_equal(campaign.score(HUMAN), [[70, 70], [60, 50], [90, 40]])
    assert list(campaign.src) == ["The cat sat.", "It was happy.", "A new day began."]
    assert list(campaign.outputs["B"]) == ["Kocour seděl.", "Bylo to šťastné.", "Den."]
    assert list(campaign.ref) == ["Kočka seděla.", "Byla šťastná.", "Začal nový den."]
    assert list(campaign.doc) == ["doc1", "doc1", "doc2"]
    assert list(campaign.domain) == ["news", "news", "social"]
    assert campaign.protocol == "esa" and campaign.lp == "en-cs"
    assert "1 (segment, system) pairs" in campaign.info["repeated"]


def test_include_refs_and_dispatch():
    campaign = load_wmt24_esa(ROOT, "en-cs", include_refs=True)
    assert campaign.systems == ("A", "B", "refA")
    np.testing.assert_array_equal(campaign.score(HUMAN)[:, 2], [100, 95, 99])
    assert detect_format(ROOT) == "wmt24-esa"
    assert len(load(ROOT, campaign="en-cs")) == 3


def test_unknown_campaign_and_protocol_list_the_valid_ones():
    with pytest.raises(PrecometError, match=r"unknown campaign 'en-de'; found \['en-cs'\]"):
        load_wmt24_esa(ROOT, "en-de")
    with pytest.raises(PrecometError, match=r"needs campaign=NAME; found \['en-cs'\]"):
        load(ROOT)
    with pytest.raises(PrecometError, match=r"unknown human protocol 'mqm'; available: \['esa'\]"):
        load(ROOT, campaign="en-cs", human="mqm")


@pytest.fixture
def esa_copy(tmp_path) -> Path:
    root = tmp_path / "esa"
    shutil.copytree(ROOT, root)
    return root


def test_output_with_wrong_line_count(esa_copy):
    path = esa_copy / "txt" / "system-outputs" / "en-cs" / "B.txt"
    path.write_text("CANARY\nonly one\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"B.txt: 2 lines, but .*en-cs.txt has 4"):
        load_wmt24_esa(esa_copy, "en-cs")


def test_non_numeric_score_names_file_line_system(esa_copy):
    path = esa_copy / "humeval" / "wave1.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3].replace(",70,", ",seventy,")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"wave1.csv:4: segment 1, system 'B', field 'score': must be a finite number, got 'seventy'"
    ):
        load_wmt24_esa(esa_copy, "en-cs")


def test_misaligned_document_is_an_error(esa_copy):
    path = esa_copy / "humeval" / "wave1.csv"
    path.write_text(
        path.read_text(encoding="utf-8").replace("ann2,A,3,TGT,eng,ces,90,doc2", "ann2,A,3,TGT,eng,ces,90,doc1"),
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=r"wave1.csv:7: system 'A': document 'doc1' does not match line 3"):
        load_wmt24_esa(esa_copy, "en-cs")


def test_invalid_utf8(esa_copy):
    (esa_copy / "txt" / "sources" / "en-cs.txt").write_bytes(b"CANARY\nok\n\xff\xfe bad\nok\n")
    with pytest.raises(DataError, match=r"en-cs.txt:3: invalid UTF-8"):
        load_wmt24_esa(esa_copy, "en-cs")


@pytest.mark.realdata
@pytest.mark.parametrize(("lp", "n_items", "n_systems"), [("en-ja", 634, 12), ("en-hi", 297, 10), ("en-cs", 297, 15)])
def test_real_wmt24_esa(raw_data, lp, n_items, n_systems):
    root = raw_data / "wmt24-esa"
    campaign = load(root, campaign=lp)
    assert (len(campaign), len(campaign.systems)) == (n_items, n_systems)
    assert "dropped" not in campaign.info  # dense after the official filtering
    with_ref = load_wmt24_esa(root, lp, include_refs=True)
    assert len(with_ref.systems) == n_systems + 1 and "refA" in with_ref.systems
    assert not np.isnan(with_ref.score(HUMAN)).any()
    assert "canary" not in set(campaign.domain)
