"""Metric moments, consistency, random, mixture and the registry's bad-input handling."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.simulate import simulate_campaign
from precomet.utilities import UTILITY_METHODS, compute_utility
from precomet.utilities.metric import kendall_rows, pairwise_rows, spearman_rows
from tests.conftest import assert_unchanged

# tiny human scores: [1,2,3], [4,4,4], [0,10,5], [3,1,2]; system means s1=2, s2=4.25, s3=3.5


def test_metric_avg_and_var_hand_computed(tiny_campaign):
    assert np.allclose(compute_utility(tiny_campaign, "metric_avg", metric=HUMAN), [-2, -4, -5, -2])
    assert np.allclose(compute_utility(tiny_campaign, "metric_var", metric=HUMAN), [2 / 3, 0, 50 / 3, 2 / 3])
    assert np.allclose(compute_utility(tiny_campaign, "metric_avg", metric="metric"), [-0.5, -0.6, -0.6, -0.4])


THREE = Campaign.build(
    ids=["i0", "i1", "i2"],
    src=["x", "y", "z"],
    systems=["A", "B", "C"],
    scores={"m": [[1.0, 2.0, 9.0], [5.0, 1.0, 0.0], [0.0, 6.0, 3.0]]},
)
# 3 items x 3 systems; system means A 2, B 3, C 4 (target ranks 1, 2, 3)


def test_three_by_three_hand_computed():
    # MetricAvg = -row mean: -(12/3), -(6/3), -(9/3)
    assert compute_utility(THREE, "metric_avg", metric="m").tolist() == pytest.approx([-4.0, -2.0, -3.0])
    # MetricVar, population (ddof 0): i0 (9+4+25)/3, i1 (9+1+4)/3, i2 (9+9+0)/3
    assert compute_utility(THREE, "metric_var", metric="m").tolist() == pytest.approx([38 / 3, 14 / 3, 6.0])
    # MetricCons against the system means (2, 3, 4): i0 orders A<B<C like the means, i1 reverses them, i2 has
    # ranks (1, 3, 2): Spearman 1 - 6·2/(3·8) = 1/2; Kendall (2 concordant - 1 discordant)/3; pairwise 2 of 3
    cons = {
        name: compute_utility(THREE, "metric_cons", metric="m", options={"correlation": name}).tolist()
        for name in ("spearman", "kendall", "pairwise")
    }
    assert cons["spearman"] == pytest.approx([1.0, -1.0, 0.5])
    assert cons["kendall"] == pytest.approx([1.0, -1.0, 1 / 3])
    assert cons["pairwise"] == pytest.approx([1.0, 0.0, 2 / 3])


@pytest.mark.parametrize(
    "correlation, expected",
    [("spearman", [0.5, 0.0, 1.0, -1.0]), ("kendall", [1 / 3, 0.0, 1.0, -1.0]), ("pairwise", [2 / 3, 0.0, 1.0, 0.0])],
)
def test_metric_cons_hand_computed(tiny_campaign, correlation, expected):
    u = compute_utility(tiny_campaign, "metric_cons", metric=HUMAN, options={"correlation": correlation})
    assert np.allclose(u, expected)


def test_artificial_crowd_uses_only_the_given_systems(tiny_campaign):
    u = compute_utility(tiny_campaign, "metric_var", metric=HUMAN, systems=["s1", "s3"])
    assert np.allclose(u, [1.0, 0.0, 6.25, 0.25])
    sub = tiny_campaign.restrict_systems(["s3", "s1"])
    assert np.allclose(
        compute_utility(sub, "metric_cons", metric=HUMAN),
        compute_utility(tiny_campaign, "metric_cons", metric=HUMAN, systems=["s3", "s1"]),
    )


def test_agreement_with_scipy_on_random_data():
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(200, 7))
    matrix[:20, 3] = matrix[:20, 4]  # ties
    matrix[20] = 1.0  # constant row
    target = rng.normal(size=7)
    rho = spearman_rows(matrix, target)
    tau = kendall_rows(matrix, target)
    for i in range(200):
        if i == 20:
            assert rho[i] == 0 and tau[i] == 0
            continue
        assert rho[i] == pytest.approx(spearmanr(matrix[i], target).statistic, abs=1e-12)
        assert tau[i] == pytest.approx(kendalltau(matrix[i], target).statistic, abs=1e-12)
    brute = [
        np.mean(
            [(matrix[i, a] - matrix[i, b]) * (target[a] - target[b]) > 0 for a in range(7) for b in range(a + 1, 7)]
        )
        for i in range(200)
    ]
    assert np.allclose(pairwise_rows(matrix, target), brute)


@pytest.mark.parametrize("method", ["metric_avg", "metric_var", "metric_cons", "random"])
def test_order_invariance(method):
    campaign = simulate_campaign(n_items=60, n_systems=5, seed=1)
    perm = np.random.default_rng(0).permutation(len(campaign))
    full = compute_utility(campaign, method, metric=HUMAN, seed=4)
    permuted = compute_utility(campaign.take(perm), method, metric=HUMAN, seed=4)
    assert np.allclose(permuted, full[perm])


def test_random_is_seeded_and_uniform(tiny_campaign):
    a = compute_utility(tiny_campaign, "random", seed=1)
    assert np.array_equal(a, compute_utility(tiny_campaign, "random", seed=1))
    assert not np.array_equal(a, compute_utility(tiny_campaign, "random", seed=2))
    big = compute_utility(simulate_campaign(n_items=2000, n_systems=2, seed=0), "random", seed=0)
    assert 0 <= big.min() and big.max() < 1 and abs(big.mean() - 0.5) < 0.03


def test_mixture_is_weighted_mean_of_ranks(tiny_campaign):
    weights = {"metric_var": 3.0, "metric_avg": 1.0}
    u = compute_utility(tiny_campaign, "mixture", metric=HUMAN, options={"weights": weights})
    var_ranks = np.array([2.5, 1, 4, 2.5]) / 4  # var [2/3, 0, 50/3, 2/3]
    avg_ranks = np.array([3.5, 2, 1, 3.5]) / 4  # avg [-2, -4, -5, -2]
    assert np.allclose(u, (3 * var_ranks + avg_ranks) / 4)
    with pytest.raises(PrecometError, match="weights"):
        compute_utility(tiny_campaign, "mixture", metric=HUMAN)


@pytest.mark.slow  # MiniLM embeds the outputs: ~5 s
def test_the_command_gives_a_mixture_with_a_budgeted_component_its_budget(tmp_path, capsys):
    """``--budget`` was refused for ``--method mixture`` while its component ``kmeans_outputs`` needed one."""
    from precomet.cli import main
    from precomet.io import write_jsonl
    from precomet.io.utility_files import read_utilities

    data = tmp_path / "c.jsonl"
    write_jsonl(simulate_campaign(n_items=12, n_systems=3, seed=1), data)
    out = tmp_path / "u.jsonl"
    mixture = ["utilities", "--data", str(data), "--method", "mixture", "--metric", "MetricSim", "-o", str(out)]
    weights = ["--option", 'weights={"metric_var": 1, "kmeans_outputs": 1}']
    assert main([*mixture, *weights]) == 2 and "needs a budget" in capsys.readouterr().err
    assert main([*mixture, *weights, "--budget", "3"]) == 0
    assert len(read_utilities(out)[1]) == 12
    assert main([*mixture, "--option", 'weights={"metric_var": 1}', "--budget", "3"]) == 2
    assert "or a mixture of one" in capsys.readouterr().err


def test_unknown_method_score_option_and_systems(tiny_campaign):
    with pytest.raises(PrecometError, match="metric_var"):
        compute_utility(tiny_campaign, "nope", metric=HUMAN)
    with pytest.raises(PrecometError, match="available"):
        compute_utility(tiny_campaign, "metric_var", metric="nope")
    with pytest.raises(PrecometError, match="valid: .*correlation"):
        compute_utility(tiny_campaign, "metric_cons", metric=HUMAN, options={"corr": "kendall"})
    with pytest.raises(PrecometError, match="spearman"):
        compute_utility(tiny_campaign, "metric_cons", metric=HUMAN, options={"correlation": "pearson"})
    with pytest.raises(PrecometError, match="unknown system"):
        compute_utility(tiny_campaign, "metric_var", metric=HUMAN, systems=["s1", "zz"])
    with pytest.raises(PrecometError, match="at least 2 systems"):
        compute_utility(tiny_campaign, "metric_var", metric=HUMAN, systems=["s1"])
    with pytest.raises(PrecometError, match=r"needs the score it reads \(metric=NAME\)") as err:
        compute_utility(tiny_campaign, "metric_var")
    assert err.value.param == "metric"
    with pytest.raises(PrecometError, match="budget"):
        compute_utility(tiny_campaign, "kmeans")
    assert UTILITY_METHODS["kmeans"].needs_budget and not UTILITY_METHODS["metric_var"].needs_budget


def test_missing_score_error_or_exclude(tiny_campaign):
    matrix = np.array(tiny_campaign.score(HUMAN))
    matrix[2, 1] = np.nan
    campaign = tiny_campaign.with_scores(HUMAN, matrix)
    with pytest.raises(PrecometError, match="item 'c', system 's2'"):
        compute_utility(campaign, "metric_var", metric=HUMAN)
    u = compute_utility(campaign, "metric_var", metric=HUMAN, options={"missing": "exclude"})
    assert np.isnan(u[2]) and np.allclose(u[[0, 1, 3]], [2 / 3, 0, 2 / 3])


@pytest.mark.parametrize("method", ["metric_avg", "metric_var", "metric_cons", "mixture"])
def test_inputs_not_mutated(tiny_campaign, method):
    before = copy.deepcopy(tiny_campaign._columns())
    scores = {name: tiny_campaign.score(name) for name in tiny_campaign.scores}
    options = {"weights": {"metric_var": 1.0, "metric_avg": 2.0}} if method == "mixture" else {}
    options_before = copy.deepcopy(options)
    u = compute_utility(tiny_campaign, method, metric=HUMAN, options=options)
    assert_unchanged(before, tiny_campaign._columns())
    assert_unchanged(options_before, options)
    for name, matrix in scores.items():  # the same read-only arrays, not replaced or unlocked
        assert tiny_campaign.score(name) is matrix and not matrix.flags.writeable
    # the result is a new array the caller owns
    assert u.flags.writeable and not any(np.shares_memory(u, m) for m in scores.values())


def _raw_segment_scores(path, systems):
    """(segments, systems) matrix read straight from an mt-metrics-eval ``*.seg.score`` file (None -> NaN)."""
    by_system = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        system, value = line.split("\t")
        by_system.setdefault(system, []).append(np.nan if value == "None" else float(value))
    return np.array([by_system[s] for s in systems]).T


@pytest.mark.realdata
def test_real_wmt23(raw_data):
    """Against the raw files, read here without precomet: MQM and MetricX-23-c segment scores of WMT23 en-de,
    items rated by MQM for every system, NumPy moments and scipy's Spearman against the system means."""
    from precomet.io import load

    root = raw_data / "mt-metrics-eval-v2"
    campaign = load(root, campaign="wmt23/en-de", human="mqm")
    rows = np.array([int(i.rsplit("/", 1)[1]) for i in campaign.ids])
    scores = root / "wmt23"
    raw = {
        HUMAN: _raw_segment_scores(scores / "human-scores" / "en-de.mqm.seg.score", campaign.systems),
        "MetricX-23-c": _raw_segment_scores(
            scores / "metric-scores" / "en-de" / "MetricX-23-c-refA.seg.score", campaign.systems
        ),
    }
    rated = np.flatnonzero(~np.isnan(raw[HUMAN]).any(axis=1))
    assert rows.tolist() == rated.tolist() and len(rows) == 460
    for score, matrix in raw.items():
        matrix = matrix[rows]
        np.testing.assert_allclose(
            compute_utility(campaign, "metric_avg", metric=score), -matrix.mean(axis=1), atol=1e-12
        )
        np.testing.assert_allclose(
            compute_utility(campaign, "metric_var", metric=score), matrix.var(axis=1), atol=1e-12
        )
        means = matrix.mean(axis=0)
        expected = [spearmanr(row, means).statistic if np.ptp(row) > 0 else 0.0 for row in matrix]
        np.testing.assert_allclose(compute_utility(campaign, "metric_cons", metric=score), expected, atol=1e-12)


def test_one_system_campaign_for_metric_avg():
    campaign = Campaign.build(src=["a", "b"], systems=["x"], scores={"m": [[1.0], [2.0]]})
    assert np.allclose(compute_utility(campaign, "metric_avg", metric="m"), [-1, -2])


@pytest.mark.slow  # MiniLM embeds the sources: ~5 s
def test_the_signature_names_the_default_encoder_and_the_saved_parameters(tmp_path):
    """``utilities --method kmeans`` recorded ``"encoder": null`` for the encoder it used (MiniLM)."""
    from precomet.cli import main
    from precomet.io import write_jsonl
    from precomet.io.utility_files import read_utilities

    data = tmp_path / "c.jsonl"
    write_jsonl(simulate_campaign(n_items=12, n_systems=3, seed=1), data)
    out = tmp_path / "u.jsonl"
    assert main(["utilities", "--data", str(data), "--method", "kmeans", "--budget", "3", "-o", str(out)]) == 0
    assert read_utilities(out)[2]["options"]["encoder"].startswith("all-MiniLM-L6-v2")
    chrf = ["--method", "diversity", "--option", "similarity=chrf"]
    assert main(["utilities", "--data", str(data), *chrf, "-o", str(out)]) == 0
    assert read_utilities(out)[2]["options"]["encoder"] is None  # chrF reads no encoder
