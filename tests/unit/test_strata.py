"""The robust source-based selector: the top-budget items are the best-predicted item of each k-means stratum."""

from __future__ import annotations

import numpy as np
import pytest

from precomet.errors import PrecometError
from precomet.selection.strata import stratified_utility


def _three_clusters():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    vectors = np.concatenate([c + rng.normal(scale=0.1, size=(5, 2)) for c in centres])
    # predicted utility: cluster 0 holds the 5 best items, then cluster 1, then cluster 2
    predicted = np.array([15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1], dtype=float)
    return vectors, predicted


def test_one_item_per_stratum_the_best_predicted_of_each():
    vectors, predicted = _three_clusters()
    utility = stratified_utility(predicted, vectors, budget=3, seed=0)
    top = set(np.argsort(-utility)[:3].tolist())
    assert top == {0, 5, 10}  # top-k on the prediction alone would take 0, 1, 2 (all from one stratum)
    assert (utility >= 0).all() and (utility[list(top)] >= 1).all() and (np.delete(utility, list(top)) < 1).all()


def test_the_rest_follow_the_prediction():
    vectors, predicted = _three_clusters()
    utility = stratified_utility(predicted, vectors, budget=3, seed=0)
    rest = np.argsort(-utility)[3:]
    assert list(rest) == sorted(rest, key=lambda i: -predicted[i])


def test_several_items_per_stratum():
    vectors, predicted = _three_clusters()
    utility = stratified_utility(predicted, vectors, budget=6, per_stratum=2, seed=0)
    assert set(np.argsort(-utility)[:6].tolist()) == {0, 1, 5, 6, 10, 11}


def test_budget_is_exact_when_strata_times_per_stratum_overshoot():
    vectors, predicted = _three_clusters()
    utility = stratified_utility(predicted, vectors, budget=5, per_stratum=2, seed=0)
    assert (utility >= 1).sum() == 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": 0}, "budget must be in 1..15"),
        ({"budget": 16}, "budget must be in 1..15"),
        ({"budget": 3, "per_stratum": 0}, "per_stratum must be >= 1"),
    ],
)
def test_bad_arguments(kwargs, message):
    vectors, predicted = _three_clusters()
    with pytest.raises(PrecometError, match=message):
        stratified_utility(predicted, vectors, **kwargs)


def test_misaligned_or_non_finite_input_is_refused():
    vectors, predicted = _three_clusters()
    with pytest.raises(PrecometError, match="vectors of shape"):
        stratified_utility(predicted[:-1], vectors, budget=3)
    predicted[0] = np.nan
    with pytest.raises(PrecometError, match="finite"):
        stratified_utility(predicted, vectors, budget=3)


def _files(tmp_path):
    import json

    from precomet.simulate import simulate_campaign

    campaign = simulate_campaign(n_items=40, n_systems=4, seed=1)
    data = tmp_path / "c.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in campaign.iter_items()))
    scores = tmp_path / "s.jsonl"
    utility = np.arange(len(campaign), dtype=float)  # a ranking that the strata must override
    scores.write_text("".join(json.dumps({"id": i, "utility": u}) + "\n" for i, u in zip(campaign.ids, utility)))
    return campaign, data, scores


def test_select_with_the_strata_selector(tmp_path):
    import json

    from precomet.cli import main

    campaign, data, scores = _files(tmp_path)
    common = ["select", "--data", str(data), "--keep-incomplete", "--utility-file", str(scores), "--budget", "5"]
    assert main([*common, "-o", str(tmp_path / "top.jsonl")]) == 0
    args = [*common, "--selector", "strata", "--strata-encoder", "surface", "-o", str(tmp_path / "strata.jsonl")]
    assert main(args) == 0
    top = [json.loads(line)["id"] for line in (tmp_path / "top.jsonl").read_text().splitlines()]
    strata = [json.loads(line)["id"] for line in (tmp_path / "strata.jsonl").read_text().splitlines()]
    assert top == list(campaign.ids[-5:][::-1]) or set(top) == set(campaign.ids[-5:])
    assert len(strata) == 5 and set(strata) != set(top)
    manifest = json.loads((tmp_path / "strata.manifest.json").read_text())
    assert "strata" in json.dumps(manifest)


def test_select_refuses_options_it_would_ignore(tmp_path, capsys):
    """A reviewer found these silently ignored, while --selector with --method was refused."""
    from precomet.cli import main

    _, data, scores = _files(tmp_path)
    common = ["select", "--data", str(data), "--keep-incomplete", "--utility-file", str(scores), "--budget", "5"]
    assert main([*common, "--strata-encoder", "surface", "-o", str(tmp_path / "a.jsonl")]) == 2
    assert "--strata-encoder applies to --selector strata (the selector here is top)" in capsys.readouterr().err
    assert main([*common, "--metric", "chrF", "-o", str(tmp_path / "b.jsonl")]) == 2
    assert "--metric names the score --method reads" in capsys.readouterr().err
    assert not list(tmp_path.glob("[ab].*"))


def test_selector_does_not_apply_to_method(tmp_path):
    from precomet.cli import main

    _, data, _ = _files(tmp_path)
    args = ["select", "--data", str(data), "--keep-incomplete", "--method", "random", "--budget", "5"]
    assert main([*args, "--selector", "strata", "-o", str(tmp_path / "x.jsonl")]) == 2


def test_benchmark_with_the_strata_selector(tmp_path):
    import json

    from precomet.cli import main

    _, data, scores = _files(tmp_path)
    out = tmp_path / "bench.json"
    args = ["benchmark", "--data", str(data), "--keep-incomplete", "--utility-file", f"u={scores}", "--seeds", "5"]
    args += ["--selector", "strata", "--strata-encoder", "surface", "--no-oracle", "-o", str(out)]
    assert main(args) == 0
    result = json.loads(out.read_text())
    assert result["signature"]["selector"] == {"name": "strata", "encoder": "surface"}
    assert np.isfinite(result["methods"]["u"]["parity"])


def test_benchmark_strata_needs_scores(tmp_path, capsys):
    from precomet.cli import main

    _, data, _ = _files(tmp_path)
    args = ["benchmark", "--data", str(data), "--keep-incomplete", "--methods", "random", "--selector", "strata"]
    assert main([*args, "-o", str(tmp_path / "b.json")]) == 2
    assert "--selector strata applies to --utility-file" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()
