"""Real annotation cost from Appraise timestamps: hand-computed durations, alignment and fallback."""

from __future__ import annotations

import numpy as np
import pytest

from precomet.campaign import Campaign, estimate_cost
from precomet.errors import PrecometError
from precomet.io.annotation_times import (
    annotation_cost,
    durations,
    list_esa_protocols,
    load_wmt23_esa,
    segment_times,
)
from precomet.io.esa import read_appraise_csv

DOCS = ["d1", "d1", "d1", "d2"]
ROWS = """\
a1,ende-tutorial1,1000001,TGT,eng,deu,0,ende-tutorial1,False,[],0,5
a1,wmt23.S1,1,TGT,eng,deu,80,d1#S1,False,[],5,15
a1,wmt23.S1,2,TGT,eng,deu,70,d1#S1,False,[],15,15
a1,wmt23.S1,3,BAD,eng,deu,10,d1#S1#bad1,False,[],15,40
a1,wmt23.S1,4,TGT,eng,deu,60,d2#S1,False,[],40,2000
a2,wmt23.S2,7,TGT,eng,deu,90,d1#S2,False,[],100,130
a2,wmt23.S2,8,TGT,eng,deu,95,d1#S2,False,"[{""start_i"":1,""end_i"":2,""severity"":""minor""}]",130,150
a2,wmt23.S2,8,TGT,eng,deu,95,d1#S2,False,"[{""start_i"":1,""end_i"":2,""severity"":""minor""}]",130,150
a2,wmt23.S2,9,TGT,eng,deu,99,d2#S2,False,[],150,160
a3,wmt23.S3,1,TGT,eng,deu,50,d1#S3,False,[],0,40
"""
# line 2 of d1 was not part of the campaign (None everywhere)
SEG_SCORE = "".join(f"{s}\t{v}\n" for s in ("S1", "S2") for v in ("80", "70", "None", "60"))


@pytest.fixture
def times_dir(tmp_path):
    (tmp_path / "240101rc1ESA.scores.csv").write_text(ROWS, encoding="utf-8")
    (tmp_path / "en-de.ESA-1.seg.score").write_text(SEG_SCORE, encoding="utf-8")
    return tmp_path


def test_durations_since_previous_submission(times_dir):
    rows = read_appraise_csv(times_dir / "240101rc1ESA.scores.csv")
    assert durations(rows) == {
        ("a1", 1000001): 5.0,  # first item of a1: end - start
        ("a1", 1): 10.0,
        # ("a1", 2): 0 s (submitted with the previous item) -> unknown
        ("a1", 3): 25.0,
        # ("a1", 4): 1960 s > max_gap -> a break, unknown
        ("a2", 7): 30.0,
        ("a2", 8): 20.0,  # the duplicated row counts once
        ("a2", 9): 10.0,
        ("a3", 1): 40.0,
    }
    assert ("a1", 4) in durations(rows, max_gap=5000)


def test_segment_times_hand_computed(times_dir):
    times = segment_times(times_dir, DOCS)
    np.testing.assert_array_equal(times.seconds, [20.0, 20.0, np.nan, 10.0])  # line 0: median(10, 30)
    np.testing.assert_array_equal(times.n_annotations, [2, 1, 0, 1])
    assert (times.aligned_groups, times.skipped_groups) == (4, 1)  # a3 rated 1 of d1's 2 campaign lines


def test_without_seg_score_files_documents_align_to_all_lines(times_dir):
    (times_dir / "en-de.ESA-1.seg.score").unlink()
    times = segment_times(times_dir / "240101rc1ESA.scores.csv", DOCS)
    np.testing.assert_array_equal(times.seconds, [np.nan, np.nan, np.nan, 10.0])
    assert (times.aligned_groups, times.skipped_groups) == (2, 3)


def _campaign(lines=range(4)):
    src = ["one", "two words", "three little words", "four"]
    return Campaign.build(
        ids=[f"t/{i}" for i in lines], src=[src[i] for i in lines], systems=["S1"], doc=[DOCS[i] for i in lines]
    )


def test_annotation_cost_with_fallback(times_dir):
    campaign = _campaign()
    priced = annotation_cost(campaign, times_dir)
    # the untimed line gets the length model fitted on the three timed ones (tests/unit/test_cost_scale.py)
    np.testing.assert_allclose(priced.cost, [20.0, 20.0, 770 / 31, 10.0])
    assert "for 3 items; 1 untimed items get the length model calibrated on them" in priced.info["cost"]
    np.testing.assert_array_equal(campaign.cost, estimate_cost(campaign.src))  # input untouched


def test_annotation_cost_of_a_subset_needs_the_document_list(times_dir):
    subset = _campaign([0, 3])
    priced = annotation_cost(subset, times_dir, docs=DOCS)
    np.testing.assert_allclose(priced.cost, [20.0, 10.0])


def test_annotation_cost_errors(times_dir):
    with pytest.raises(PrecometError, match=r"item 't/0': line 0 is in document 'd1' in the campaign but 'd2'"):
        annotation_cost(_campaign(), times_dir, docs=["d2", "d1", "d1", "d2"])
    plain = Campaign.build(ids=["x"], src=["text"], systems=["S1"])
    with pytest.raises(PrecometError, match="must end in the test-set line number"):
        annotation_cost(plain, times_dir)


def test_unknown_protocol_lists_the_available_ones(times_dir):
    assert list_esa_protocols(times_dir) == ["ESA-1"]
    with pytest.raises(PrecometError, match=r"unknown protocol 'ESA-9'; available: \['ESA-1'\]"):
        load_wmt23_esa(times_dir, times_dir, protocol="ESA-9")


@pytest.mark.realdata
def test_real_wmt23_esa_times(raw_data):
    mtme, esa = raw_data / "mt-metrics-eval-v2", raw_data / "wmt23-esa-campaign"
    docs = mtme / "wmt23" / "documents" / "en-de.docs"
    doc_ids = [line.split("\t")[1] for line in docs.read_text(encoding="utf-8").splitlines()]
    times = segment_times(esa, doc_ids)
    known = np.isfinite(times.seconds)
    assert known.sum() == 207  # every line of the ESA campaign gets a time
    assert 10 < np.median(times.seconds[known]) < 120
    assert times.skipped_groups < 0.05 * times.aligned_groups

    from precomet.io import load

    campaign = load(mtme, campaign="wmt23/en-de", human="mqm")
    priced = annotation_cost(campaign, esa, docs=docs)
    assert "for 156 items; 304 untimed items get the length model calibrated" in priced.info["cost"]

    esa_campaign, dropped = load_wmt23_esa(mtme, esa, protocol="ESA-1").complete()
    assert (len(esa_campaign), len(esa_campaign.systems), dropped) == (207, 12, 350)
    assert esa_campaign.protocol == "ESA-1" and "MetricX-23-c" in esa_campaign.scores
