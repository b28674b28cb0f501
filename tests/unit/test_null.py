"""The null of random orderings: scored exactly as a method, calibrated p-values and intervals, and pooled verdicts
over campaigns that share items."""

from __future__ import annotations

import numpy as np
import pytest

from precomet import benchmark as bm
from precomet.errors import PrecometError
from precomet.metaeval import full_reference
from precomet.selection.random_fill import make_random_selector
from precomet.simulate import simulate_campaign

PROPS = [0.1, 0.2, 0.3, 0.4, 0.5]


@pytest.fixture(scope="module")
def campaign():
    return simulate_campaign(n_items=150, n_systems=6, seed=11)


def test_p_value_by_hand():
    null = [0.1, 0.2, 0.3, 0.4]
    assert bm.p_value(0.35, null) == pytest.approx(2 / 5)  # 0.4 does as well, +1
    assert bm.p_value(0.5, null) == pytest.approx(1 / 5)  # none: the smallest p-value, never 0
    assert bm.p_value(0.0, null) == 1.0
    assert bm.p_value(0.2, null, higher_is_better=False) == pytest.approx(3 / 5)  # parity: lower is better
    assert bm.p_value(0.3, null) == pytest.approx(3 / 5)  # ties count as "at least as well"


def test_parity_interval_by_hand():
    null = np.linspace(0.5, 1.5, 101)  # p05 = 0.55, p95 = 1.45
    assert bm.parity_interval(0.8, null) == pytest.approx([0.35, 1.25])
    assert bm.parity_interval(0.2, null) == pytest.approx([0.0, 0.65])  # clipped at 0
    # a random ordering's interval lies wholly below 100 % exactly when its parity is below the null's p05
    assert bm.parity_interval(0.549, null)[1] < 1 <= bm.parity_interval(0.551, null)[1]


def test_null_orderings_are_scored_exactly_like_methods(campaign):
    """Every null draw's SPA gain and parity equal evaluate_method's row for the same utility (top-k and random
    subsets of equal cost), and the count of workers does not change them."""
    ref = full_reference(campaign, permutations=200)
    for budget_unit in ("items", "cost"):
        select = (
            None
            if budget_unit == "items"
            else make_random_selector(campaign, budget_unit="cost", balance=None, level="item")
        )
        runs = bm.random_runs(ref, select, PROPS, seeds=8)[:, :, 0]
        kw = dict(random_spa_runs=runs, props=PROPS, select=select, budget_unit=budget_unit)
        null = bm.score_null(ref, campaign, orderings=30, seed=4, **kw)
        assert len(null["parity"]) == len(null["spa_gain"]) == 30
        utilities = bm.null_utilities(len(campaign), 30, seed=4)
        for r in (0, 7, 29):
            row = bm.evaluate_method(ref, campaign, lambda k, u=utilities[r]: u, **kw)
            assert null["spa_gain"][r] == pytest.approx(row["spa_gain"], abs=1e-12), (budget_unit, r)
            assert null["parity"][r] == pytest.approx(row["parity"], abs=1e-12), (budget_unit, r)
        forked = bm.score_null(ref, campaign, orderings=30, seed=4, workers=2, **kw)
        np.testing.assert_array_equal(forked["parity"], null["parity"])
    # the null's seeds are not random baseline's: no null ordering is one of random's
    baseline = [np.random.default_rng([4, r]).random(len(campaign)) for r in range(30)]
    assert not any(np.array_equal(u, b) for u in utilities for b in baseline)


def test_random_utilities_are_called_significant_about_five_percent_of_the_time(campaign):
    """200 random utilities benchmarked as methods (the public path) against a null of 200 other random orderings:
    p < 0.05 in at most 8 % of them, and a parity interval wholly below 100 % in at most 8 %."""
    utilities = {f"u{r}": np.random.default_rng([r, 99]).random(len(campaign)) for r in range(200)}
    result = bm.run_benchmark(
        campaign,
        bm.BenchmarkPlan(props=PROPS, seeds=20, permutations=200, oracle=False, controls=False),
        external=utilities,
    )
    rows = result.methods.values()
    significant = np.mean([row["p_value"] < 0.05 for row in rows])
    below = np.mean([row["parity_ci90"][1] < 1 for row in rows])
    old_style = np.mean([row["parity"] < 0.9 for row in rows])  # what a point value below 100 % "showed" before
    assert significant <= 0.08 and below <= 0.08, (significant, below)
    assert old_style > 0.25  # the point value alone flatters random orderings: the test above is not trivial
    assert all(0 < row["p_value"] <= 1 for row in rows)


def test_a_utility_that_knows_the_answer_gets_a_small_p_value(campaign):
    result = bm.run_benchmark(
        campaign,
        bm.BenchmarkPlan(
            methods=["metric_var"],
            metric="human",
            allow_circular=True,
            props=PROPS,
            seeds=20,
            permutations=200,
            oracle=True,
            controls=False,
        ),
    )
    assert result.oracle["p_value"] < 0.01  # the greedy oracle on the human scores themselves
    assert result.methods["metric_var"]["null"] == result.oracle["null"]
    assert result.null_orderings == bm.NULL_ORDERINGS and len(result.null["parity"]) == bm.NULL_ORDERINGS


def test_shared_item_groups():
    sources = {
        "en-cs": ["a", "b", "c", "d"],
        "de-en": ["w", "x", "y", "z"],
        "en-hi": ["a", "b", "c", "d"],
        "en-ja": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"],
        "zh-en": ["p", "q", "r", "s", "w"],  # one line shared with de-en: 25 % of the smaller, above 10 %
    }
    assert bm.shared_item_groups(sources) == [["en-cs", "en-hi", "en-ja"], ["de-en", "zh-en"]]
    assert bm.shared_item_groups(sources, min_shared=0.5) == [["en-cs", "en-hi", "en-ja"], ["de-en"], ["zh-en"]]


def _fake(gain, parity, null_gain, null_parity):
    row = {"spa_gain": gain, "parity": parity, "p_value": None}
    return {"methods": {"m": row}, "controls": {}, "null": {"spa_gain": null_gain, "parity": null_parity}}


def test_pooled_verdict_by_hand_counts_shared_campaigns_once():
    results = {
        "a": _fake(0.03, 0.6, [0.0, 0.01, -0.01, 0.02], [1.0, 0.9, 1.1, 0.8]),
        "a-twin": _fake(0.01, 0.8, [0.0, 0.01, -0.01, 0.02], [1.0, 0.9, 1.1, 0.8]),
        "b": _fake(-0.01, 1.2, [0.01, 0.0, 0.02, -0.02], [0.9, 1.0, 0.7, 1.3]),
    }
    pooled = bm.pool_results(results, groups=[["a", "a-twin"], ["b"]])
    row = pooled["rows"]["m"]
    assert row["spa_gain"] == pytest.approx((0.02 + -0.01) / 2)  # the twins' mean counts once
    assert row["parity"] == pytest.approx((0.7 + 1.2) / 2)
    null_gain = [(0.0 + 0.01) / 2, (0.01 + 0.0) / 2, (-0.01 + 0.02) / 2, (0.02 - 0.02) / 2]
    assert row["p_value"] == pytest.approx((1 + sum(g >= 0.005 for g in null_gain)) / 5)
    null_parity = [(1.0 + 0.9) / 2, (0.9 + 1.0) / 2, (1.1 + 0.7) / 2, (0.8 + 1.3) / 2]
    assert row["parity_p_value"] == pytest.approx((1 + sum(p <= 0.95 for p in null_parity)) / 5)
    assert pooled["null_orderings"] == 4 and pooled["groups"] == [["a", "a-twin"], ["b"]]
    alone = bm.pool_results(results)  # every campaign alone: the twin counts twice
    assert alone["rows"]["m"]["spa_gain"] == pytest.approx((0.03 + 0.01 - 0.01) / 3)
    assert "m" in bm.pooled_table(pooled) and "a + a-twin" in bm.pooled_table(pooled)
    with pytest.raises(PrecometError, match="once"):
        bm.pool_results(results, groups=[["a"], ["b"]])
    with pytest.raises(PrecometError, match="no null"):
        bm.pool_results({"a": {**results["a"], "null": None}})


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
def test_pooled_random_utilities_are_not_significant(campaign):
    """Pooled over three simulated campaigns, 40 random utilities reach p < 0.05 no more often than chance allows."""
    campaigns = {f"c{k}": simulate_campaign(n_items=100, n_systems=5, seed=20 + k) for k in range(3)}
    utilities = {f"u{r}": None for r in range(40)}
    results = {
        name: bm.run_benchmark(
            c,
            bm.BenchmarkPlan(props=PROPS, seeds=10, permutations=100, oracle=False, controls=False, null_orderings=100),
            external={u: np.random.default_rng([r, k]).random(len(c)) for r, u in enumerate(utilities)},
        )  # fmt: skip
        for k, (name, c) in enumerate(campaigns.items())
    }
    pooled = bm.pool_results(results)
    share = np.mean([row["p_value"] < 0.05 for row in pooled["rows"].values()])
    assert share <= 0.15  # 40 draws, 5 % expected: 7 or more happen with probability ≈ 1.4 %


@pytest.fixture
def wmt23_en_de(raw_data):
    from precomet.io import load

    return load(raw_data / "mt-metrics-eval-v2", campaign="wmt23/en-de", human="mqm")


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
def test_interval_and_p_value_calibration_on_a_real_campaign(wmt23_en_de):
    """WMT23 en-de MQM: 200 random orderings benchmarked as methods against the default null of 200 others. At most
    ~5 % get an interval wholly below 100 % or p < 0.05; more than a third have a point parity below 90 %."""
    n = len(wmt23_en_de)
    utilities = {f"u{r}": np.random.default_rng([r, 2024]).random(n) for r in range(200)}
    result = bm.run_benchmark(wmt23_en_de, bm.BenchmarkPlan(oracle=False, controls=False), external=utilities)
    rows = list(result.methods.values())
    below = np.mean([row["parity_ci90"][1] < 1 for row in rows])
    significant = np.mean([row["p_value"] < 0.05 for row in rows])
    assert below <= 0.08 and significant <= 0.08, (below, significant)
    assert np.mean([row["parity"] < 0.9 for row in rows]) > 1 / 3  # the flattering point value, for contrast


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
def test_the_true_per_item_metric_avg_beats_random_orderings_on_a_real_campaign(wmt23_en_de):
    """MetricAvg on the human scores themselves (circular: an upper bound) is called a saving with p < 0.01."""
    result = bm.run_benchmark(
        wmt23_en_de,
        bm.BenchmarkPlan(methods=["metric_avg"], metric="human", allow_circular=True, oracle=False, controls=False),
    )
    row = result.methods["metric_avg"]
    assert row["p_value"] < 0.01 and row["parity_ci90"][1] < 1
    assert result.recommendation["method"] == "metric_avg"
    assert result.recommendation["text"].startswith("metric_avg saves ")
