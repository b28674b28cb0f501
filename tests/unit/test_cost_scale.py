"""One cost scale (issue 22): untimed items get the length model calibrated on the timed ones, a per-item record
of where each cost came from, the refusal, degenerate fits and the benchmark signature."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from precomet.campaign import Campaign, estimate_cost, source_length
from precomet.cli import main
from precomet.costs import (
    CALIBRATED,
    ESTIMATED,
    GIVEN,
    MEASURED,
    calibrate_length_model,
    cost_codes,
    cost_signature,
    cost_source,
    cost_sources_per_item,
)
from precomet.errors import PrecometError
from precomet.io import write_jsonl
from precomet.io.annotation_times import annotation_cost
from tests.unit.test_io_annotation_times import DOCS, ROWS, SEG_SCORE

SRC = ["one", "two words", "three little words", "four"]  # 3, 9, 18, 4 characters
# the fixture's times: lines 0, 1, 3 measured (20, 20, 10 s), line 2 untimed. Least squares on (3, 20), (9, 20),
# (4, 10): mean length 16/3, mean time 50/3, Sxy = 40/3, Sxx = 62/3 -> a = 20/31, b = 50/3 - a·16/3 = 410/31
A, B = 20 / 31, 410 / 31


@pytest.fixture
def times_dir(tmp_path):
    (tmp_path / "240101rc1ESA.scores.csv").write_text(ROWS, encoding="utf-8")
    (tmp_path / "en-de.ESA-1.seg.score").write_text(SEG_SCORE, encoding="utf-8")
    return tmp_path


def _campaign(lines=range(4), systems=("S1",), scores=None):
    return Campaign.build(
        ids=[f"t/{i}" for i in lines],
        src=[SRC[i] for i in lines],
        systems=list(systems),
        doc=[DOCS[i] for i in lines],
        scores=scores,
    )


def test_least_squares_by_hand():
    fit = calibrate_length_model(np.array([10.0, 20.0, 30.0, 40.0]), np.array([12.0, 14.0, 19.0, np.nan]))
    # mean length 20, mean time 15, Sxy = 30 + 0 + 40 = 70, Sxx = 200 -> a = 0.35, b = 15 - 7 = 8
    assert (fit.a, fit.b, fit.method) == (pytest.approx(0.35), pytest.approx(8.0), "least squares")
    # fitted 11.5, 15, 18.5: residuals 0.5, -1, 0.5 -> R² = 1 - 1.5 / 26
    assert fit.r2 == pytest.approx(1 - 1.5 / 26) and fit.median_ratio == pytest.approx(
        19 / 18.5
    )  # of 12/11.5, 14/15, 19/18.5
    np.testing.assert_allclose(fit(np.array([40.0])), [22.0])


def test_untimed_items_get_the_calibrated_model(times_dir):
    priced = annotation_cost(_campaign(), times_dir)
    np.testing.assert_allclose(priced.cost, [20.0, 20.0, A * 18 + B, 10.0])
    assert priced.cost[2] != pytest.approx(estimate_cost([SRC[2]])[0])  # not the uncalibrated model
    note = priced.info["cost"]
    assert note.startswith("median annotation seconds from 1 Appraise file(s) for 3 items; 1 untimed items get")
    assert "0.6452·chars + 13.23 s (least squares" in note and cost_source(priced) == MEASURED
    record = priced.info["cost record"]
    assert dict(record.measured) == {"t/0": 20.0, "t/1": 20.0, "t/3": 10.0}
    assert (record.fit.a, record.fit.b) == (pytest.approx(A), pytest.approx(B))
    # least squares keeps the mean: measured and calibrated seconds of the timed items agree on average
    timed = np.array([0, 1, 3])
    assert record.fit(source_length(priced.src[timed])).mean() == pytest.approx(priced.cost[timed].mean(), rel=1e-12)


def test_refuse_names_the_untimed_items(times_dir):
    refused = r"1 of 4 items of campaign 'campaign' have no annotation time \(first: 't/2'\); restrict the campaign"
    with pytest.raises(PrecometError, match=refused + " to its 3 timed items"):
        annotation_cost(_campaign(), times_dir, untimed="refuse")
    with pytest.raises(PrecometError, match=r"untimed='mix': expected one of calibrate, refuse"):
        annotation_cost(_campaign(), times_dir, untimed="mix")
    timed = annotation_cost(_campaign([0, 1, 3]), times_dir, docs=DOCS, untimed="refuse")  # nothing to refuse
    np.testing.assert_allclose(timed.cost, [20.0, 20.0, 10.0])
    assert timed.info["cost"].endswith("for 3 items (every item)") and timed.info["cost record"].fit is None
    assert cost_signature(timed)["model"] is None and cost_codes(timed) == "mmm"


@pytest.mark.parametrize(
    ("length", "seconds", "reason"),
    [
        ([10.0, 50.0], [20.0, np.nan], "fewer than 2 measured items"),
        ([10.0, 10.0, 30.0], [20.0, 30.0, np.nan], "every measured item has 10 characters"),
        ([10.0, 20.0, 40.0], [30.0, 20.0, np.nan], "the least-squares slope is negative (-1 s per character)"),
        ([100.0, 200.0, 5.0], [10.0, 60.0, np.nan], "the least-squares line gives -37.5 s at 5 characters"),
    ],
)
def test_degenerate_fits_scale_the_default_model(length, seconds, reason):
    length, seconds = np.array(length), np.array(seconds)
    fit = calibrate_length_model(length, seconds)
    known = np.isfinite(seconds)
    scale = seconds[known].mean() / estimate_cost(["x" * int(n) for n in length[known]]).mean()
    assert (fit.method, fit.reason) == ("scaled length model", reason)
    assert (fit.a, fit.b) == (pytest.approx(0.15 * scale), pytest.approx(33.7 * scale))
    assert (fit(length) > 0).all() and np.isnan(fit.r2)
    assert reason in fit.describe()


def test_no_measured_item_is_an_error():
    with pytest.raises(ValueError, match="at least one measured item"):
        calibrate_length_model(np.array([3.0]), np.array([np.nan]))


def test_one_timed_item_is_explained_in_the_note(times_dir):
    priced = annotation_cost(_campaign([2, 3]), times_dir, docs=DOCS)  # line 3 timed (10 s), line 2 not
    scale = 10.0 / estimate_cost(["four"])[0]
    np.testing.assert_allclose(priced.cost, [scale * estimate_cost([SRC[2]])[0], 10.0])
    assert "(scaled length model: fewer than 2 measured items" in priced.info["cost"]


def test_per_item_sources_survive_subsets_and_reordering(times_dir):
    priced = annotation_cost(_campaign(), times_dir)
    assert list(cost_sources_per_item(priced)) == [MEASURED, MEASURED, CALIBRATED, MEASURED]
    assert cost_codes(priced) == "mmcm"
    assert cost_codes(priced.take([2, 0])) == "cm" and cost_codes(priced.take_ids(["t/3", "t/2", "t/1"])) == "mcm"
    # costs replaced afterwards are no longer what the record says
    assert cost_codes(priced.with_cost([1.0, 20.0, A * 18 + B, 2.0])) == "gmcg"
    # without a record: the default length model per item, or the input's cost
    plain = Campaign.build(src=SRC[:3], systems=["S1"], cost=[None, 99.0, None])
    assert list(cost_sources_per_item(plain)) == [ESTIMATED, GIVEN, ESTIMATED] and cost_codes(plain) == "ege"


def test_cost_signature(times_dir):
    priced = annotation_cost(_campaign(), times_dir)
    sig = cost_signature(priced)
    assert sig == {
        "source": MEASURED,
        "per_item": {MEASURED: 3, CALIBRATED: 1},
        "per_item_sha": hashlib.sha256(b"mmcm").hexdigest()[:16],
        "model": {"a": pytest.approx(A), "b": pytest.approx(B), "method": "least squares"},
    }
    timed_only = priced.take([0, 3])  # no calibrated item left: no model to record
    assert cost_signature(timed_only)["model"] is None and cost_signature(timed_only)["per_item"] == {MEASURED: 2}
    json.dumps(sig)


def test_benchmark_signature_records_the_cost_sources(times_dir):
    from precomet.benchmark import BenchmarkPlan, run_benchmark

    human = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 3.0], [3.0, 2.0, 1.0], [1.0, 3.0, 2.0]])
    campaign = annotation_cost(_campaign(systems=("A", "B", "C"), scores={"human": human}), times_dir)
    result = run_benchmark(
        campaign,
        BenchmarkPlan(props=[0.5], seeds=2, permutations=10, budget_unit="cost"),
        external={"x": np.arange(4.0)},
    )
    assert result.signature["cost"] == cost_signature(campaign)
    assert result.signature["cost"]["per_item"] == {MEASURED: 3, CALIBRATED: 1}


def test_cli_untimed_refuse_and_misuse(times_dir, tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    write_jsonl(_campaign(systems=("A", "B"), scores={"human": np.arange(8.0).reshape(4, 2)}), data)
    base = ["select", "--data", str(data), "--method", "random", "--proportion", "0.5", "-o", str(tmp_path / "s.jsonl")]
    assert main([*base, "--cost-from-times", str(times_dir), "--untimed", "refuse"]) == 2
    err = capsys.readouterr().err
    assert f"--cost-from-times {times_dir} --untimed refuse: 1 of 4 items" in err and len(err.strip().splitlines()) == 1
    assert main([*base, "--untimed", "refuse"]) == 2
    assert "--untimed applies to --cost-from-times" in capsys.readouterr().err
    assert main([*base, "--cost-from-times", str(times_dir)]) == 0
    assert "measured annotation times" in capsys.readouterr().out


@pytest.mark.realdata
def test_real_wmt23_en_de_times_on_one_scale(raw_data):
    """WMT23 en-de MQM with the ESA seconds: 156 timed, 304 calibrated; on one scale, a 10 % cost knapsack of
    constant utility (rank-length) no longer fills its budget with timed items."""
    from precomet.io import load
    from precomet.selection import SubsetPlan, select_subset

    campaign = load(raw_data / "mt-metrics-eval-v2", campaign="wmt23/en-de", human="mqm")
    priced = annotation_cost(campaign, raw_data / "wmt23-esa-campaign")
    timed = cost_sources_per_item(priced) == MEASURED
    assert (int(timed.sum()), cost_signature(priced)["per_item"]) == (156, {MEASURED: 156, CALIBRATED: 304})
    fit = priced.info["cost record"].fit
    length = source_length(priced.src)
    assert fit.method == "least squares" and 0 < fit.a < 0.15 and 0 < fit.b < 33.7
    assert priced.cost[timed].mean() / fit(length[timed]).mean() == pytest.approx(1, abs=1e-9)
    uncalibrated = np.where(timed, priced.cost, estimate_cost(priced.src))

    def timed_share(cost):
        chosen = select_subset(np.ones(len(priced)), SubsetPlan(proportion=0.1), cost=cost, length=length).indices
        return timed[chosen].mean()

    assert timed_share(uncalibrated) > 0.9 and timed_share(priced.cost) < 0.9
