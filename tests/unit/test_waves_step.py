"""One step for live and replay; the separated target's tie widths; manifests of 0.16–0.19 keep their target."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from precomet.agreement import pair_differences
from precomet.cli import main
from precomet.waves.choosers import make_chooser
from precomet.waves.estimate import Wave, pair_contrasts, pair_spread
from precomet.waves.plan import parse_wave_size
from precomet.waves.replay import RunOutcome, run_once
from precomet.waves.step import PoolArrays, WaveSettings, take_step
from precomet.waves.target import Target, full_set_se


def _campaign(n=120, seed=4):
    rng = np.random.default_rng(seed)
    effects = np.array([0.0, 0.05, 0.6, 1.5])  # A ~ B tied, the rest separated
    spread = rng.gamma(2.0, 0.5, n)
    return rng.normal(size=(n, 1)) + effects + spread[:, None] * rng.normal(size=(n, len(effects))), spread


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_the_tie_width_is_z_full_set_standard_errors_of_the_per_item_differences():
    truth, _ = _campaign()
    d = truth[:, 0] - truth[:, 1]
    se = np.std(d, ddof=1) / np.sqrt(len(d))
    target = Target("separated", z=1.96)
    assert target.true_widths(truth)[0] == pytest.approx(1.96 * se, abs=1e-12)
    assert full_set_se(d[:, None])[0] == pytest.approx(se, abs=1e-12)
    ties = target.true_ties(truth)
    assert ties.tolist() == (np.abs(pair_differences(truth.mean(axis=0))) <= target.true_widths(truth)).tolist()
    assert ties[0] and not ties[-1]  # A ~ B tied, A vs the best separated
    assert not Target("all-pairs").true_ties(truth).any()
    assert Target("zone", zone=10.0).true_ties(truth).all()


def test_the_weighted_spread_is_exact_when_every_cell_is_judged_and_hajek_weighted_otherwise():
    truth, _ = _campaign(n=6)
    pairs, _ = pair_contrasts(4)
    exact = pair_spread(truth, [], pairs)
    assert exact == pytest.approx(full_set_se(truth[:, pairs[:, 0]] - truth[:, pairs[:, 1]]), abs=1e-12)
    judged = truth.copy()
    judged[3:] = np.nan  # items 0-2 judged; item 0 drawn with probability 1/2, items 1-2 with certainty
    wave = Wave(
        number=1, units=np.arange(6), open_units=np.arange(6), unit_probability=np.array([0.5, 1, 1, 0.2, 0.2, 0.2]),
        system_probability=np.ones(4), known=np.zeros((6, 4), dtype=bool), drawn=~np.isnan(judged),
        predictor=np.zeros((6, 4)),
    )  # fmt: skip
    d = truth[:3, 0] - truth[:3, 1]
    w = np.array([2.0, 1.0, 1.0])  # Horvitz-Thompson: the inverse probabilities of the items the wave completed
    total, square = (w * d).sum(), (w * d**2).sum()
    variance = (square - total**2 / 6) / 5
    assert pair_spread(judged, [wave], pairs)[0] == pytest.approx(np.sqrt(variance / 6), abs=1e-12)


def test_the_weighted_spread_is_unbiased_under_a_chooser_that_prefers_spread_out_items():
    rng = np.random.default_rng(0)
    n = 300
    spread = rng.gamma(1.0, 1.0, n)
    truth = np.array([0.0, 0.2]) + spread[:, None] * rng.normal(size=(n, 2))
    pairs, _ = pair_contrasts(2)
    true_se = full_set_se(truth[:, [0]] - truth[:, [1]])[0]
    ratios = []
    for run in range(150):
        settings = WaveSettings(size=parse_wave_size("10%", n), target=Target("all-pairs", share=1.0), rule="expected")
        chooser = make_chooser("prior", np.ones(n), prior=spread)
        arrays = PoolArrays(np.arange(n), np.ones(n), None, 10)
        judged, waves = np.full(truth.shape, np.nan), []
        for _ in range(7):  # seven waves of an adaptive chooser, then the spread estimated from them
            wave = take_step(judged, waves, settings, chooser, arrays, seed=(run,)).wave
            waves.append(wave)
            judged = np.where(~np.isnan(judged) | wave.drawn, truth, np.nan)
        ratios.append(pair_spread(judged, waves, pairs)[0] / true_se)
    plain = np.nanstd(judged[:, 0] - judged[:, 1], ddof=1) / np.sqrt(n) / true_se  # the last run, unweighted
    assert abs(np.mean(ratios) - 1) < 0.05, np.mean(ratios)
    assert plain > 1.1  # what the weights correct: the chooser drew the spread-out items first


@pytest.mark.parametrize("kind", ["separated", "all-pairs"])
def test_live_calls_with_the_same_seed_draw_the_waves_of_a_replay_run_and_stop_where_it_stops(tmp_path, kind):
    truth, spread = _campaign()
    n, systems = len(truth), ("A", "B", "C", "D")
    sources = [f"source {i} " + "x" * int(10 * spread[i]) for i in range(n)]
    pool = tmp_path / "pool.jsonl"
    _write(pool, [{"id": f"s{i}", "src": sources[i], "tgt": {s: f"out {s}" for s in systems}} for i in range(n)])
    settings = WaveSettings(size=parse_wave_size("10%", n), target=Target(kind))
    length = np.array([len(s) for s in sources], dtype=float)
    outcome = run_once(
        truth, make_chooser("length", length), settings, doc=np.array([f"s{i}" for i in range(n)]), cost=np.ones(n),
        seed=(7,),
    )  # fmt: skip
    assert isinstance(outcome, RunOutcome) and outcome.waves >= 3  # several looks, not a first-wave stop
    judged: dict[int, dict[str, float]] = {}
    argv = ["--no-progress", "waves", "--data", str(pool), "--size", "10%", "--chooser", "length", "--seed", "7",
            "--target-pairs", kind, "--manifest", str(tmp_path / "m.json"), "--batch", str(tmp_path / "w.jsonl"),
            "--report", str(tmp_path / "r.json")]  # fmt: skip
    for _ in range(60):
        extra = ["--judgements", str(tmp_path / "j.jsonl")] if judged else []
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            assert main(argv + extra) == 0
        report = json.loads((tmp_path / "r.json").read_text())
        if report["stop"]:
            break
        for row in map(json.loads, (tmp_path / "w.jsonl").read_text().splitlines()):
            i = int(row["id"][1:])
            judged.setdefault(i, {})[row["system"]] = float(truth[i, systems.index(row["system"])])
        _write(
            tmp_path / "j.jsonl",
            [{"id": f"s{i}", "src": sources[i], "scores": {s: {"human": v} for s, v in c.items()}}
             for i, c in sorted(judged.items())],
        )  # fmt: skip
    assert report["stop"], "the live campaign never stopped"
    assert report["waves"] == outcome.waves
    assert report["judged_cells"] == outcome.cells
    assert report["agreement_lower_bound"] == pytest.approx(outcome.lower_bound, abs=1e-12)
    assert report["expected_agreement"] == pytest.approx(outcome.expected, abs=1e-12)
    assert json.loads((tmp_path / "m.json").read_text())["settings"]["target"]["kind"] == kind


def test_a_manifest_of_version_1_keeps_its_all_pairs_target(tmp_path):
    pool = tmp_path / "pool.jsonl"
    _write(pool, [{"id": f"s{i}", "src": f"source {i}", "tgt": {"A": "a", "B": "b"}} for i in range(40)])
    argv = ["--no-progress", "waves", "--data", str(pool), "--size", "8", "--manifest", str(tmp_path / "m.json"),
            "--report", str(tmp_path / "r.json"), "--chooser", "random"]  # fmt: skip
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(argv) == 0
    manifest = json.loads((tmp_path / "m.json").read_text())
    settings = manifest.pop("settings")
    manifest.update(version=1, level=settings["level"], size=settings["size"], target=0.9, confidence=0.9)
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    wave = manifest["waves"][0]["drawn"]
    _write(
        tmp_path / "j.jsonl",
        [{"id": i, "src": f"source {i[1:]}", "scores": {"A": {"human": 1.0}, "B": {"human": 0.0}}} for i in wave],
    )
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        status = main(
            [*argv, "--target", "0.9", "--target-pairs", "all-pairs", "--judgements", str(tmp_path / "j.jsonl")]
        )
    assert status == 0, err.getvalue()
    assert json.loads((tmp_path / "r.json").read_text())["target"]["kind"] == "all-pairs"
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # no --target-pairs: the campaign's
        assert main([*argv, "--target", "0.9", "--judgements", str(tmp_path / "j.jsonl")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["target"]["kind"] == "all-pairs"
    with redirect_stdout(io.StringIO()), redirect_stderr(err):  # another target is refused, naming its option
        assert main([*argv, "--target", "0.9", "--target-pairs", "separated"]) == 2
    assert "--target-pairs separated: the manifest's campaign runs with all-pairs" in err.getvalue()


def test_the_waves_command_is_thin_no_function_over_40_lines_but_its_option_declarations():
    """Option declarations are ``add_arguments`` and the ``_add_*_arguments`` it calls."""
    import ast
    from pathlib import Path

    import precomet.commands.waves as command

    tree = ast.parse(Path(command.__file__).read_text(encoding="utf-8"))
    long = {
        node.name: node.end_lineno - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 40
    }
    declarations = {name for name in long if name == "add_arguments" or re.fullmatch(r"_add_\w+_arguments", name)}
    assert set(long) <= declarations, long
