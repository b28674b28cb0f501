"""The scripts of benchmarks/ and training/ run: every one answers ``--help`` (argparse, so it parsed its
arguments and ran nothing), and the cheap ones run for real, writing only under a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precomet.io.utility_files import read_utilities, write_utilities

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    path.relative_to(REPO).as_posix()
    for folder in ("benchmarks", "training")
    for path in (REPO / folder).glob("*.py")
    if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
)
SLOW_HELP = {  # import the estimator (torch) or the benchmark before parsing: 2-8 s
    "benchmarks/bench_source_suite.py",
    "benchmarks/bench_estimator_loco.py",
    "benchmarks/bench_estimator_loco_cost.py",
    "benchmarks/bench_ensemble_stability.py",
    "training/record_training_profile.py",
    "benchmarks/make_benchmarks_md.py",
}


def run_script(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python SCRIPT ARGS`` from ``cwd`` with this checkout's precomet importable, as the scripts are run."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, str(REPO / script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_every_script_is_found():
    assert len(SCRIPTS) >= 20
    assert {"benchmarks/regenerate.py", "training/protocol.py"} <= set(SCRIPTS)
    assert "benchmarks/paths.py" not in SCRIPTS  # a module the scripts import, not a script


@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW_HELP else s for s in SCRIPTS])
def test_script_answers_help(script, tmp_path):
    done = run_script(script, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: "), done.stdout[:300]
    assert list(tmp_path.iterdir()) == []


def test_check_numbers_finds_every_number_traced(tmp_path):
    done = run_script("benchmarks/check_numbers.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "every number traces to a results file"


def test_regenerate_lists_the_registry_and_runs_nothing(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from regenerate import REGISTRY
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    done = run_script("benchmarks/regenerate.py", "--list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if line and not line.startswith(" ")}
    assert {b.name for b in REGISTRY} <= listed
    assert "cheap benchmarks: ~" in done.stdout


def test_assembler_writes_benchmarks_md_where_told(tmp_path):
    out = tmp_path / "BENCHMARKS.md"
    done = run_script("benchmarks/assemble_benchmarks_md.py", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == (REPO / "BENCHMARKS.md").read_text(encoding="utf-8")


def test_ensemble_averages_z_scored_members(tmp_path):
    ids = ["a", "b", "c", "d"]
    first, second = np.array([1.0, 2.0, 3.0, 4.0]), np.array([8.0, 2.0, 4.0, 6.0])
    write_utilities(tmp_path / "one.jsonl", ids, first, {"method": "x", "data_hash": "h"})
    write_utilities(tmp_path / "two.jsonl", ids, second, {"method": "y", "data_hash": "h"})
    done = run_script("training/ensemble.py", "mean.jsonl", "one.jsonl", "two.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got_ids, values, signed = read_utilities(tmp_path / "mean.jsonl")
    expected = np.mean([(v - v.mean()) / v.std() for v in (first, second)], axis=0)
    assert got_ids == ids
    np.testing.assert_allclose(values, expected, atol=1e-12)
    assert signed["method"] == "ensemble" and signed["data_hash"] == "h"
    assert [m["file"] for m in signed["members"]] == ["one.jsonl", "two.jsonl"]


def test_ensemble_refuses_a_single_member(tmp_path):
    done = run_script("training/ensemble.py", "mean.jsonl", "one.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert "two or more utility files" in done.stderr


@pytest.mark.slow
def test_source_suite_report_stage_runs_on_a_tiny_stand_in(tmp_path):
    """The suite's evaluate() on two tiny simulated campaigns (one a twin of the other: they share their items),
    written as the test stage writes its JSON, then the report stage: parity with p-values, pooled verdicts."""
    import json

    from precomet.simulate import simulate_campaign

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_source_suite as suite
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    campaigns = {"a": simulate_campaign(n_items=60, n_systems=4, seed=1)}
    campaigns["a-twin"] = campaigns["a"]
    campaigns["b"] = simulate_campaign(n_items=50, n_systems=4, seed=2)
    result = {"stage": "test", "history": "human", "target": "metric_avg", "backbone": "stand-in", "seconds": 1.0}
    result["command"] = "stand-in"
    result["groups"] = suite.shared_item_groups({name: c.src for name, c in campaigns.items()})
    assert result["groups"] == [["a", "a-twin"], ["b"]]
    result["campaigns"] = {}
    for name, campaign in campaigns.items():
        rng = np.random.default_rng(0)
        predictions = {"estimator": rng.random(len(campaign)), "length model": rng.random(len(campaign))}
        vectors = rng.normal(size=(len(campaign), 8))
        result["campaigns"][name] = {
            budget: suite.evaluate(campaign, predictions, vectors, budget_unit=budget) for budget in ("items", "cost")
        }
        result["campaigns"][name]["pearson_truth"] = {"estimator": 0.1}
    (tmp_path / "source_suite_test.json").write_text(json.dumps(result))  # plain json: everything serialisable
    done = run_script("benchmarks/bench_source_suite.py", "--stage", "report", "--results", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "source-suite.md").read_text()
    assert "| estimator |" in report and "pooled p" in report and "a + a-twin; b" in report
    assert "random orderings" in report and "Budgets in annotation cost" in report


def _loco():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_estimator_loco as loco
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return loco


@pytest.mark.slow
def test_loco_core_sign_flip_and_sparse_targets():
    """The leave-one-campaign-out protocol's pieces on a sparse simulated campaign: the core is complete, the
    sign-flip test is exact, and the targets exist where enough systems scored an item."""
    from dataclasses import replace

    from precomet.campaign import HUMAN
    from precomet.simulate import simulate_campaign

    loco = _loco()
    campaign = simulate_campaign(n_items=80, n_systems=9, seed=3)
    scores = campaign.score(HUMAN).copy()
    rng = np.random.default_rng(0)
    scores[rng.random(scores.shape) < 0.15] = np.nan  # crowd-DA-like gaps
    sparse = replace(campaign.with_scores(HUMAN, scores), name="sparse")
    core = loco.core(sparse, size=5)
    assert len(core.systems) == 5 and not np.isnan(core.score(HUMAN)).any() and 0 < len(core) <= 80
    for target in ("item_effect", "metric_avg", "metric_cons"):
        values = loco.raw_target(sparse, target)
        assert values.shape == (80,) and np.isfinite(values).sum() >= 70, target
    ahead = {"folds": [["a"], ["b"], ["c"]], "campaigns": {}}
    for name, diff in zip("abc", (0.01, 0.02, 0.03)):
        ahead["campaigns"][name] = {"rows": {"x": {"spa_gain": diff}, "y": {"spa_gain": 0.0}}}
    mean, folds_ahead, folds, p = loco.paired(ahead, "x", "y")
    assert (round(mean, 6), folds_ahead, folds) == (0.02, 3, 3) and p == pytest.approx(2 / 8)  # all + or all -
