"""IRT: sign conventions, Fisher information, JSON round trip, global-state scoping, divergence, recovery."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
import pytest

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.utilities import compute_utility
from precomet.utilities.irt import IrtParams, fit_irt, irt_utilities, rescale_scores

PARAMS = IrtParams(
    item_ids=("a", "b"),
    systems=("s1", "s2"),
    difficulty=np.array([1.0, -0.5]),
    discrimination=np.array([2.0, 0.5]),
    feasibility=np.array([0.9, 1.0]),
    ability=np.array([0.0, 1.0]),
)


def test_sign_conventions_hand_computed():
    assert np.allclose(irt_utilities(PARAMS, "diff"), [1.0, -0.5])
    assert np.allclose(irt_utilities(PARAMS, "disc"), [2.0, 0.5])
    assert np.allclose(irt_utilities(PARAMS, "feas"), [0.9, 1.0])
    assert np.allclose(irt_utilities(PARAMS, "diffdisc"), [2.0, -0.25])
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    fic_a = sum(4 * sig(2 * (t - 1)) * (1 - sig(2 * (t - 1))) for t in (0.0, 1.0))
    fic_b = sum(0.25 * sig(0.5 * (t + 0.5)) * (1 - sig(0.5 * (t + 0.5))) for t in (0.0, 1.0))
    assert np.allclose(irt_utilities(PARAMS, "fic"), [fic_a, fic_b])
    # subset2evaluate's form of Eq. 15 gives the same numbers
    peer = [
        sum(a**2 * np.exp(a * (t + b)) / (np.exp(a * b) + np.exp(a * t)) ** 2 for t in (0.0, 1.0))
        for a, b in ((2.0, 1.0), (0.5, -0.5))
    ]
    assert np.allclose(irt_utilities(PARAMS, "fic"), peer)
    with pytest.raises(PrecometError, match="diffdisc"):
        irt_utilities(PARAMS, "nope")


def test_params_json_round_trip_and_reuse(tmp_path, tiny_campaign):
    path = tmp_path / "irt.json"
    PARAMS.to_json(path)
    loaded = IrtParams.from_json(path)
    assert loaded.item_ids == PARAMS.item_ids and np.allclose(loaded.predict(), PARAMS.predict())
    params = IrtParams(
        item_ids=("d", "c", "b", "a"),
        systems=tiny_campaign.systems,
        difficulty=np.array([4.0, 3.0, 2.0, 1.0]),
        discrimination=np.ones(4),
        feasibility=np.ones(4),
        ability=np.zeros(3),
    )
    params.to_json(path)
    u = compute_utility(tiny_campaign, "irt_diff", metric=HUMAN, options={"params": str(path)})
    assert np.allclose(u, [1, 2, 3, 4])
    with pytest.raises(PrecometError, match="lack 1 item"):
        compute_utility(
            tiny_campaign.take([0]),
            "irt_diff",
            metric=HUMAN,
            options={
                "params": IrtParams(("x",), tiny_campaign.systems, np.ones(1), np.ones(1), np.ones(1), np.ones(3))
            },
        )
    with pytest.raises(PrecometError, match=r"fitted on systems \['s1'\]"):
        compute_utility(
            tiny_campaign.take([0]),
            "irt_diff",
            metric=HUMAN,
            options={"params": IrtParams(("a",), ("s1",), np.ones(1), np.ones(1), np.ones(1), np.ones(1))},
        )


def test_rescale():
    m = np.array([[0.0, 5.0], [10.0, 5.0]])
    assert np.allclose(rescale_scores(m, "minmax"), [[0, 0.5], [1, 0.5]])
    assert np.allclose(rescale_scores(m, "rank"), [[0.125, 0.5], [0.875, 0.5]])
    with pytest.raises(PrecometError, match="all scores equal"):
        rescale_scores(np.ones((2, 2)))


def test_fit_is_seeded_and_restores_global_state(tiny_campaign):
    import pyro
    import pyro.infer.util
    import torch

    pyro.clear_param_store()
    pyro.param("caller_param", torch.tensor(3.0))
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    np_state, py_state = np.random.get_state()[1][:5].copy(), random.getstate()
    validation = pyro.infer.util.is_validation_enabled()

    first = fit_irt(tiny_campaign, metric=HUMAN, seed=5, epochs=30)
    second = fit_irt(tiny_campaign, metric=HUMAN, seed=5, epochs=30)
    assert np.allclose(first.difficulty, second.difficulty) and np.allclose(first.ability, second.ability)
    assert first.discrimination.min() > 0 and ((first.feasibility >= 0) & (first.feasibility <= 1)).all()

    assert list(pyro.get_param_store().keys()) == ["caller_param"]
    assert torch.get_num_threads() == threads
    assert pyro.infer.util.is_validation_enabled() == validation
    assert torch.equal(torch.rand(1), expected_next)
    assert np.array_equal(np.random.get_state()[1][:5], np_state) and random.getstate() == py_state
    pyro.clear_param_store()


def test_divergence_gives_clear_error(tiny_campaign):
    with pytest.raises(PrecometError, match="lower learning rate"):
        fit_irt(tiny_campaign, metric=HUMAN, lr=1e6, epochs=30)


def test_bad_options(tiny_campaign):
    with pytest.raises(PrecometError, match="valid: .*epochs"):
        compute_utility(tiny_campaign, "irt_diff", metric=HUMAN, options={"epoch": 3})
    with pytest.raises(PrecometError, match="4pl"):
        fit_irt(tiny_campaign, metric=HUMAN, model="5pl")


@pytest.mark.slow
def test_recovery_on_synthetic_data():
    rng = np.random.default_rng(0)
    n, s = 400, 15
    theta, b, a = rng.normal(0, 1, s), rng.normal(0, 1, n), rng.lognormal(0, 0.3, n)
    p = 1 / (1 + np.exp(-a[:, None] * (theta[None] - b[:, None])))
    responses = np.clip(p + rng.normal(0, 0.05, p.shape), 0, 1)
    campaign = Campaign.build(
        src=[f"x{i}" for i in range(n)], systems=[f"m{j}" for j in range(s)], scores={"r": responses}
    )
    fitted = fit_irt(campaign, metric="r", seed=0, epochs=600)
    assert np.corrcoef(fitted.difficulty, b)[0, 1] >= 0.8
    assert np.corrcoef(fitted.ability, theta)[0, 1] >= 0.9


def test_parameters_of_another_score_or_a_model_without_the_parameter_are_refused(tiny_campaign, monkeypatch):
    """Parameters fitted on one score were used for another without a word; irt_feas on 2pl gave 1.0 everywhere;
    device=cuda on a CPU-only torch ended in an internal error."""
    fitted = IrtParams(
        tuple(tiny_campaign.ids), tiny_campaign.systems, *(np.ones(len(tiny_campaign)),) * 3, np.zeros(3),
        info={"metric": "MetricX", "model": "4pl"},
    )  # fmt: skip
    with pytest.raises(PrecometError, match="fitted on the score 'MetricX', not on 'human'"):
        compute_utility(tiny_campaign, "irt_diff", metric=HUMAN, options={"params": fitted})
    two_pl = replace(fitted, info={"metric": HUMAN, "model": "2pl"})  # the same, as a 2pl fit on human scores
    with pytest.raises(PrecometError, match="irt_feas on the 2pl model"):
        compute_utility(tiny_campaign, "irt_feas", metric=HUMAN, options={"params": two_pl})
    assert len(compute_utility(tiny_campaign, "irt_diff", metric=HUMAN, options={"params": two_pl})) == 4
    for kind in ("disc", "diffdisc", "feas"):
        with pytest.raises(PrecometError, match="model=4pl"):
            compute_utility(tiny_campaign, f"irt_{kind}", metric=HUMAN, options={"model": "1pl"})
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(PrecometError, match="no CUDA device"):
        fit_irt(tiny_campaign, metric=HUMAN, device="cuda", epochs=1)


@pytest.mark.slow  # py-irt's import and a fit: ~5 s
def test_the_command_never_writes_over_its_params_file_and_refuses_a_second_source_of_parameters(tmp_path):
    from precomet.cli import main

    campaign = tmp_path / "c.jsonl"
    rows = [
        {"id": f"i{k}", "src": f"s{k}", "scores": {"A": {"human": k % 3}, "B": {"human": k % 2}, "C": {"human": 1}}}
        for k in range(6)
    ]
    campaign.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    params = tmp_path / "p.json"
    base = ["utilities", "--data", str(campaign), "--method", "irt_diff", "--metric", "human"]
    assert main([*base, "--option", "epochs=2", "--save-irt", str(params), "-o", str(tmp_path / "u.jsonl")]) == 0
    kept = params.read_bytes()
    assert main([*base, "--option", f"params={params}", "-o", str(params)]) == 2  # an input: never overwritten
    assert (
        main(
            [
                *base,
                "--option",
                f"params={params}",
                "--save-irt",
                str(tmp_path / "q.json"),
                "-o",
                str(tmp_path / "v.jsonl"),
            ]
        )
        == 2
    )
    assert main([*base, "--option", "epochs=2", "--option", "epochs=3", "-o", str(tmp_path / "w.jsonl")]) == 2
    assert params.read_bytes() == kept and sorted(p.name for p in tmp_path.iterdir()) == [
        "c.jsonl",
        "p.json",
        "u.jsonl",
    ]
