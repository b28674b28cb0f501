"""item_effect: the additive item + system model on sparse, weighted score cells."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.utilities import compute_utility
from precomet.utilities.additive import fit_item_effects


def _campaign(scores: np.ndarray, counts: np.ndarray | None = None) -> Campaign:
    n, s = scores.shape
    matrices = {"human": scores} if counts is None else {"human": scores, "human_n": counts}
    return Campaign.build(
        ids=[f"i{i}" for i in range(n)],
        src=[f"source {i}" for i in range(n)],
        systems=[f"s{j}" for j in range(s)],
        scores=matrices,
    )


def test_on_complete_equal_weight_scores_it_ranks_as_metric_avg():
    scores = np.random.default_rng(0).normal(size=(40, 6))
    campaign = _campaign(scores)
    avg = compute_utility(campaign, "metric_avg", metric="human")
    for shrinkage in (None, "auto", 0, 3.5):
        effect = compute_utility(campaign, "item_effect", metric="human", options={"shrinkage": shrinkage})
        assert spearmanr(effect, avg).statistic == pytest.approx(1.0)
    unshrunk = compute_utility(campaign, "item_effect", metric="human", options={"shrinkage": 0})
    assert np.allclose(unshrunk, avg - avg.mean())  # a = row mean - grand mean exactly


def test_hand_computed_two_by_two_with_a_missing_cell():
    # y = mu + a + b on three cells: (0,0)=1, (0,1)=3, (1,0)=2; unpenalised: b1 - b0 = 2, a1 - a0 = 1
    scores = np.array([[1.0, 3.0], [2.0, np.nan]])
    effects = fit_item_effects(scores, np.ones_like(scores), shrinkage=0)
    assert effects[1] - effects[0] == pytest.approx(1.0)
    # the NaN-mean says item 1 is the easier one by 0 (2 vs 2): it ignores that only the weak system scored it
    assert np.nanmean(scores[1]) == np.nanmean(scores[0])


def test_it_undoes_which_systems_happened_to_be_scored():
    rng = np.random.default_rng(1)
    n, s = 400, 10
    item = rng.normal(size=n)
    system = np.linspace(-2, 2, s)
    scores = item[:, None] + system[None, :] + rng.normal(scale=0.5, size=(n, s))
    # strong systems are scored mostly on the first half of the items, weak ones on the second half
    keep = rng.random((n, s)) < np.where((np.arange(n)[:, None] < n // 2) == (system[None, :] > 0), 0.9, 0.2)
    sparse = np.where(keep, scores, np.nan)
    effect = compute_utility(_campaign(sparse), "item_effect", metric="human")
    nanmean = -np.nanmean(sparse, axis=1)
    assert np.corrcoef(effect, -item)[0, 1] > 0.9
    assert np.corrcoef(effect, -item)[0, 1] > np.corrcoef(nanmean, -item)[0, 1] + 0.15


def test_cells_with_more_judgements_weigh_more():
    # item 0: a noisy single judgement says 0, ten judgements say 10 on the same system pair
    scores = np.array([[0.0, 10.0], [5.0, 5.0], [5.0, 5.0]])
    heavy_second = np.array([[1.0, 10.0], [1.0, 1.0], [1.0, 1.0]])
    heavy_first = np.array([[10.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    light = compute_utility(_campaign(scores, heavy_first), "item_effect", metric="human")
    heavy = compute_utility(_campaign(scores, heavy_second), "item_effect", metric="human")
    unweighted = compute_utility(
        _campaign(scores, heavy_second), "item_effect", metric="human", options={"weights": "none"}
    )
    assert heavy[0] < unweighted[0] < light[0]  # utility = minus the effect: the 10s make item 0 easy


def test_auto_shrinkage_pulls_thinly_scored_items_to_the_middle():
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(300, 8))
    scores[:150, 1:] = np.nan  # half the items scored by one system only
    shrunk = fit_item_effects(scores, np.ones_like(scores), shrinkage="auto")
    raw = fit_item_effects(scores, np.ones_like(scores), shrinkage=0)
    assert np.abs(shrunk[:150]).mean() < 0.5 * np.abs(raw[:150]).mean()
    assert np.abs(shrunk[150:]).mean() > 0.5 * np.abs(raw[150:]).mean()


def test_items_without_a_score_get_nan_and_bad_options_are_named():
    scores = np.array([[1.0, 2.0], [np.nan, np.nan], [3.0, np.nan]])
    effect = compute_utility(_campaign(scores), "item_effect", metric="human")
    assert np.isnan(effect[1]) and np.isfinite(effect[[0, 2]]).all()
    with pytest.raises(PrecometError, match="shrinkage must be"):
        compute_utility(_campaign(scores), "item_effect", metric="human", options={"shrinkage": "-1"})
    with pytest.raises(PrecometError, match="weights must be"):
        compute_utility(_campaign(scores), "item_effect", metric="human", options={"weights": "N"})
    with pytest.raises(PrecometError, match="no scored cell"):
        fit_item_effects(np.full((2, 2), np.nan), np.ones((2, 2)))


@pytest.mark.realdata
@pytest.mark.slow
def test_build_targets_on_crowd_da_where_no_item_is_complete(raw_data, tmp_path, capsys):
    from precomet.cli import main
    from precomet.io.jsonl import read_jsonl

    root = raw_data / "wmt-news-systems-toen"
    if not root.exists():
        pytest.skip(f"WMT to-English release data not found at {root}")
    out = tmp_path / "targets.jsonl"
    assert main(["build-targets", "--data", f"{root}:wmt21/de-en", "--method", "item_effect", "-o", str(out)]) == 0
    rows = list(read_jsonl(out))
    assert len(rows) == 1000 and all(np.isfinite(r["target"]) for r in rows)  # 19 systems, no item complete
    assert abs(np.mean([r["target"] for r in rows])) < 1e-9  # z-scored per campaign
    capsys.readouterr()
    assert main(["build-targets", "--data", f"{root}:wmt21/de-en", "--method", "metric_avg", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "wmt21/de-en have none" in err and "--method item_effect" in err


def test_build_targets_leaves_out_the_items_no_system_scored():
    from precomet.estimator.targets import build_targets

    scores = np.array([[1.0, 2.0], [np.nan, np.nan], [3.0, np.nan], [0.0, 1.0]])
    rows = build_targets([_campaign(scores)], method="item_effect", progress=False)
    assert [r["id"] for r in rows] == ["i0", "i2", "i3"]
    with pytest.raises(PrecometError, match="missing"):  # a complete-matrix utility still refuses the gap
        build_targets([_campaign(scores)], method="metric_avg", progress=False)
