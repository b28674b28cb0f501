"""precomet.costs: durations in hours and minutes, and where a campaign's cost came from."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from precomet.campaign import Campaign
from precomet.costs import (
    ESTIMATED,
    GIVEN,
    MEASURED,
    calibrate_length_model,
    cost_source,
    cost_unit,
    format_duration,
    parse_duration,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10h", 36000), ("90m", 5400), ("3600s", 3600), ("1h30m", 5400), ("1.5 hours", 5400), ("2h 15min", 8100),
     (" 1d ", 86400), (".5h", 1800), ("1H30M", 5400), ("45 sec", 45)],
)  # fmt: skip
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text", ["10", "h", "10x", "1h 2", "-1h", "1e400h", "", "10 hx", "inf h", "9" * 400 + "h", "\uff11h"]
)
def test_parse_duration_refuses_numbers_without_a_unit_and_other_text(text):
    with pytest.raises(ValueError, match="not a duration.*give a unit"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (38, "38 s"),
        (38.4, "38 s"),
        (59.4, "59 s"),
        (59.6, "1 min"),  # rounds to a whole minute
        (60, "1 min"),
        (89, "1 min"),
        (91, "2 min"),
        (2700, "45 min"),
        (150, "3 min"),  # halves round up
        (3540, "59 min"),
        (3570, "1 h 00 min"),
        (3599, "1 h 00 min"),
        (3600, "1 h 00 min"),
        (7500, "2 h 05 min"),
        (36000 + 59 * 60, "10 h 59 min"),
        (100 * 3600, "100 h 00 min"),
    ],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_format_duration_refuses_non_durations(bad):
    with pytest.raises(ValueError, match="seconds="):
        format_duration(bad)


def _campaign(cost=None, info=None):
    src = ["a short source", "a somewhat longer source sentence", "x"]
    scores = {"human": np.arange(6.0).reshape(3, 2)}
    return Campaign.build(src=src, systems=["s1", "s2"], scores=scores, cost=cost, info=info)


def test_cost_source_estimated_given_measured():
    estimated = _campaign()
    assert cost_source(estimated) == ESTIMATED == "estimated from source length"
    given = _campaign(cost=[10.0, 20.0, 30.0])
    assert cost_source(given) == GIVEN == "given in the input"
    # one given value among estimated ones is still the input's cost
    assert cost_source(_campaign(cost=[None, 99.0, None])) == GIVEN
    # what annotation_cost leaves behind: new costs and its note in campaign.info["cost"]
    measured = replace(
        given, info={"cost": "median annotation seconds from 3 Appraise file(s) for 3 items; 0 items keep ..."}
    )
    assert cost_source(measured) == MEASURED == "measured annotation times"
    assert cost_unit(ESTIMATED) == cost_unit(MEASURED) == "annotation time" and cost_unit(GIVEN) == "annotation cost"


def test_cost_source_of_annotation_cost(tmp_path):
    """The real path: annotation_cost (here on the Appraise rows of test_io_annotation_times) marks its campaign as
    measured; the campaign it started from stays estimated."""
    from precomet.io.annotation_times import annotation_cost
    from tests.unit.test_io_annotation_times import ROWS, SEG_SCORE
    from tests.unit.test_io_annotation_times import _campaign as esa_campaign

    (tmp_path / "240101rc1ESA.scores.csv").write_text(ROWS, encoding="utf-8")
    (tmp_path / "en-de.ESA-1.seg.score").write_text(SEG_SCORE, encoding="utf-8")
    campaign = esa_campaign()
    assert cost_source(campaign) == ESTIMATED
    assert cost_source(annotation_cost(campaign, tmp_path)) == MEASURED


def test_times_near_the_largest_float_fit_without_overflow():
    """Issue 34: the least-squares sums overflowed to NaN for times near 1e308 s; the fit is scale-free now."""
    length = np.array([10.0, 20.0, 30.0, 40.0])
    small = calibrate_length_model(length, np.array([10.0, 15.0, 10.0, 17.0]))
    huge = calibrate_length_model(length, np.array([10.0, 15.0, 10.0, 17.0]) * 1e307)
    assert huge.method == small.method == "least squares"
    assert huge.a == pytest.approx(small.a * 1e307) and huge.b == pytest.approx(small.b * 1e307)
    assert huge.r2 == pytest.approx(small.r2) and huge.median_ratio == pytest.approx(small.median_ratio)


@pytest.mark.parametrize("text", ["1h1h", "30m1h", "1h 2h", "5s 1m"])
def test_parse_duration_takes_each_unit_once_largest_first(text):
    with pytest.raises(ValueError, match="each unit once, largest first"):
        parse_duration(text)
