"""Google MQM error-level TSV and avg_seg_scores loaders: hand-computed fixture, real TED data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precomet.campaign import HUMAN
from precomet.errors import DataError
from precomet.io import detect_format, load
from precomet.io.ted import load_mqm_avg, load_mqm_tsv, mqm_weight

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TSV = FIXTURES / "mqm_tiny_ende.tsv"
AVG = FIXTURES / "mqm_tiny_ende.avg_seg_scores.tsv"


@pytest.mark.parametrize(
    ("category", "severity", "weight"),
    [
        ("Accuracy/Mistranslation", "Major", 5.0),
        ("Accuracy/Mistranslation", "Minor", 1.0),
        ("Fluency/Punctuation", "Minor", 0.1),
        ("Fluency/Punctuation", "Major", 5.0),
        ("Non-translation!", "Major", 25.0),
        ("Non-translation", "Minor", 25.0),
        ("Style/Awkward", "Neutral", 0.0),
        ("No-error", "No-error", 0.0),
        ("Source error", "Major", 5.0),
    ],
)
def test_mqm_weights(category, severity, weight):
    assert mqm_weight(category, severity) == weight


def test_tiny_tsv_hand_computed():
    campaign = load_mqm_tsv(TSV)
    assert campaign.systems == ("sysA", "sysB")
    assert list(campaign.ids) == ["wmt21-ted/en-de/1", "wmt21-ted/en-de/2", "wmt21-ted/en-de/5"]
    assert campaign.lp == "en-de" and campaign.protocol == "mqm"
    # sysA: seg1 minor punct 0.1 + major 5; seg2 raters 0 and 1 -> mean 0.5; seg5 minor 1
    # sysB: seg1 non-translation 25; seg2 minor source error 1; seg5 neutral 0
    expected = np.array([[-5.1, -25.0], [-0.5, -1.0], [-1.0, 0.0]])
    np.testing.assert_array_equal(campaign.score(HUMAN), expected)
    assert list(campaign.src) == ['Hello "world".', "Bye.", "Next talk."]  # <v> tags stripped, raw quotes kept
    assert campaign.outputs["sysA"][0] == 'Hallo "Welt".'
    assert list(campaign.ref) == ["Hallo „Welt“.", "Auf Wiedersehen.", "Nächster Vortrag."]
    assert list(campaign.doc) == ["talk.1", "talk.1", "talk.2"]
    assert set(campaign.domain) == {"ted"}


def test_include_refs_adds_reference_pseudo_system():
    campaign = load_mqm_tsv(TSV, include_refs=True)
    assert campaign.systems == ("ref", "sysA", "sysB")
    np.testing.assert_array_equal(campaign.score(HUMAN)[:, 0], [0.0, 0.0, -5.0])
    assert campaign.ref is None


def test_avg_file_matches_error_level_scores():
    avg = load_mqm_avg(AVG, include_refs=True)
    tsv = load_mqm_tsv(TSV, include_refs=True)
    assert avg.systems == tsv.systems  # 'ref-A' in the avg file is 'ref' in the TSV
    assert list(avg.ids) == list(tsv.ids)  # segment 3 is 'None' for everyone -> not an item
    np.testing.assert_array_equal(avg.score(HUMAN), tsv.score(HUMAN))


def test_detect_and_load_dispatch():
    assert detect_format(TSV) == "mqm-tsv"
    assert detect_format(AVG) == "mqm-avg"
    assert len(load(TSV)) == 3


def test_bad_rows_name_file_and_line(tmp_path):
    lines = TSV.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.tsv"
    bad.write_text("\n".join(lines[:4] + [lines[4].replace("\tMinor\t", "\tSevere\t")]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.tsv:5: .*unknown severity 'Severe'"):
        load_mqm_tsv(bad)
    short = tmp_path / "short.tsv"
    short.write_text("\n".join(lines[:2] + ["sysA\ttalk.1\t1"]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"short.tsv:3: expected 10 tab-separated fields, got 3"):
        load_mqm_tsv(short)
    empty = tmp_path / "empty_src.tsv"
    empty.write_text("\n".join(lines[:1] + [lines[1].replace('Hello "world".', " ")]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"empty_src.tsv:2: segment 1: empty source"):
        load_mqm_tsv(empty)


def test_avg_needs_texts(tmp_path):
    lonely = tmp_path / "mqm_x_ende.avg_seg_scores.tsv"
    lonely.write_text(AVG.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(DataError, match="needs the error-level TSV"):
        load_mqm_avg(lonely)


@pytest.mark.realdata
@pytest.mark.parametrize(("lp", "n_systems", "n_refs"), [("ende", 13, 1), ("zhen", 13, 2)])
def test_real_ted(raw_data, lp, n_systems, n_refs):
    campaign = load(raw_data / "wmt-mqm-ted" / lp / f"mqm_ted_{lp}.tsv")
    assert (len(campaign), len(campaign.systems)) == (529, n_systems)
    assert (
        len(load_mqm_tsv(raw_data / "wmt-mqm-ted" / lp / f"mqm_ted_{lp}.tsv", include_refs=True).systems)
        == n_systems + n_refs
    )
    assert len(set(campaign.doc)) == 5
    assert campaign.info.get("dropped") is None  # every segment rated for every system


@pytest.mark.realdata
@pytest.mark.parametrize("lp", ["ende", "zhen"])
def test_real_ted_reproduces_published_averages_exactly(raw_data, lp):
    """Every published '%.6f' value, and every 'None', is reproduced from the error-level TSV."""
    from precomet.io.ted import AVG_REF_NAMES

    campaign = load_mqm_tsv(raw_data / "wmt-mqm-ted" / lp / f"mqm_ted_{lp}.tsv", include_refs=True)
    matrix = campaign.score(HUMAN)
    row = {int(i.rsplit("/", 1)[1]): k for k, i in enumerate(campaign.ids)}
    lines = (
        (raw_data / "wmt-mqm-ted" / lp / f"mqm_ted_{lp}.avg_seg_scores.tsv").read_text(encoding="utf-8").splitlines()
    )
    checked = 0
    for line in lines[1:]:
        system, value, seg = line.split()
        system = AVG_REF_NAMES.get(system, system)
        if value == "None":
            assert int(seg) not in row or np.isnan(matrix[row[int(seg)], campaign.systems.index(system)])
            continue
        assert f"{matrix[row[int(seg)], campaign.systems.index(system)]:.6f}" == value, (system, seg)
        checked += 1
    assert checked == 529 * len(campaign.systems)


@pytest.mark.parametrize("path", [AVG, FIXTURES / "mqm_tiny_ende.tsv"])
def test_human_may_name_the_only_protocol(path):
    from precomet.errors import PrecometError
    from precomet.io import load

    assert load(path, human="mqm").protocol == "mqm"
    assert load(path, human="human").systems == load(path).systems
    with pytest.raises(PrecometError, match=r"one human protocol \('mqm'\); human='esa' is not available"):
        load(path, human="esa")
