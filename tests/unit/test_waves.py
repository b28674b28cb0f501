"""Waves: inclusion probabilities, unbiased weighted estimates, the stop rules, the replay and the command."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest

from precomet.campaign import source_length
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io import load
from precomet.waves.choosers import make_chooser, vector_features
from precomet.waves.design import inclusion_probabilities
from precomet.waves.estimate import combine, fit_predictor, pair_contrasts, plain_estimates, wave_result
from precomet.waves.plan import WaveSize, draw_wave, parse_wave_size
from precomet.waves.replay import fewer_than, realised_agreement, replay
from precomet.waves.step import WaveSettings
from precomet.waves.stop import holm_decided, verdict, wave_level
from precomet.waves.target import Target


def test_inclusion_probabilities_meet_the_budget_and_keep_the_floor():
    scores = np.array([0.0, 0.0, 1.0, 5.0, 50.0])
    weights = np.array([1.0, 2.0, 1.0, 1.0, 1.0])
    pi = inclusion_probabilities(scores, weights, 3.0, floor=0.2)
    assert (pi * weights).sum() == pytest.approx(3.0, abs=1e-9)
    assert (pi > 0).all() and (pi <= 1).all()
    assert pi[0] == pytest.approx(pi[1], abs=1e-12)  # equal scores, equal probabilities
    assert pi[4] == 1.0  # capped, the rest redistributed
    assert (inclusion_probabilities(scores, weights, 100.0) == 1).all()
    with pytest.raises(PrecometError):
        inclusion_probabilities(np.array([-1.0, 1.0]), np.ones(2), 1.0)


def test_wave_sizes_parse_items_shares_cells_and_durations():
    assert parse_wave_size("200").amount == 200 and parse_wave_size("200").kind == "items"
    assert parse_wave_size("5%", 1000).amount == pytest.approx(50, abs=1e-12)
    assert parse_wave_size("300cells").kind == "cells"
    assert parse_wave_size("10h").amount == 36000 and parse_wave_size("10h").kind == "seconds"
    with pytest.raises(PrecometError, match="wave size"):
        parse_wave_size("lots")


def _pool(n=60, s=4, seed=1):
    rng = np.random.default_rng(seed)
    spread = rng.gamma(1.0, 1.0, n)
    truth = rng.normal(size=(n, 1)) + np.array([0.0, 0.3, 0.5, 1.2])[:s] + spread[:, None] * rng.normal(size=(n, s))
    return truth, spread


@pytest.mark.slow
def test_weighted_estimates_are_unbiased_under_an_adaptive_chooser_with_system_allocation():
    """Two waves drawn with unequal probabilities (the second from a chooser that reads the first's judgements) and
    system shares q < 1: the weighted pair differences average to the full pool's over many draws, the plain means of
    the judged cells do not, and the variance estimate matches the draws' variance; a predictor that reads a metric
    correlated with the human scores (fitted on the first wave only) keeps them unbiased and shrinks their variance."""
    truth, spread = _pool()
    metric = truth + np.random.default_rng(7).normal(scale=0.5, size=truth.shape)
    n, s = truth.shape
    pairs, contrasts = pair_contrasts(s)
    full = truth.mean(axis=0)
    target = full[pairs[:, 0]] - full[pairs[:, 1]]
    prior = spread + 0.1  # a chooser that knows which items spread: the plain mean over-weights them
    estimates: dict[str, list] = {"means": [], "metric": []}
    variances: dict[str, list] = {"means": [], "metric": []}
    plain = []
    size = WaveSize("items", 10.0, "10")
    units = np.arange(n)
    for r in range(3000):
        rng = np.random.default_rng(r)
        known = np.zeros((n, s), dtype=bool)
        judged = np.full((n, s), np.nan)
        results: dict[str, list] = {"means": [], "metric": []}
        for number, q in ((1, np.ones(s)), (2, np.array([1.0, 0.5, 0.7, 0.4]))):
            scores = prior if number == 1 else prior * (1 + known.any(axis=1))
            wave = draw_wave(
                number=number, item_scores=scores, judged=judged, known=known, units=units, cost=np.ones(n),
                size=size, q=q, rng=rng,
            )  # fmt: skip
            with_metric = replace(wave, predictor=fit_predictor(judged, known, metric).values(metric, n))
            known = known | wave.drawn
            judged = np.where(known, truth, np.nan)
            results["means"].append(wave_result(wave, judged, contrasts))
            results["metric"].append(wave_result(with_metric, judged, contrasts))
        for name, waves in results.items():
            estimate = combine(waves, judged, pairs)
            estimates[name].append(estimate.differences)
            variances[name].append(estimate.difference_se**2)
        plain.append(plain_estimates(judged, pairs, 2).differences)
    for name in ("means", "metric"):
        drawn = np.array(estimates[name])
        mc_se = drawn.std(axis=0) / np.sqrt(len(drawn))
        error = np.abs(drawn.mean(axis=0) - target)
        assert (error < 4 * mc_se).all(), (name, error, mc_se)
        ratio = np.mean(variances[name], axis=0) / drawn.var(axis=0)
        assert ((ratio > 0.8) & (ratio < 1.25)).all(), (name, ratio)
    mc_se = np.array(estimates["means"]).std(axis=0) / np.sqrt(3000)
    assert np.max(np.abs(np.nanmean(np.array(plain), axis=0) - target) / mc_se) > 6  # the plain mean is biased here
    assert np.array(estimates["metric"]).var(axis=0).mean() < 0.75 * np.array(estimates["means"]).var(axis=0).mean()


def test_the_stop_rule_spends_its_level_over_the_looks_and_stops_when_every_cell_is_judged():
    assert sum(wave_level(0.9, t, 20) for t in range(1, 5000)) <= 0.1 + 1e-12
    p = np.array([0.001, 0.02, 0.0001, 0.5])
    assert holm_decided(p, 0.01).tolist() == [True, False, True, False]
    truth, _ = _pool(n=20)
    pairs, _ = pair_contrasts(truth.shape[1])
    exact = combine([], truth, pairs)
    reading = verdict(exact, target=Target(), confidence=0.9)
    assert reading.stop and reading.expected == 1.0 and reading.lower_bound == 1.0
    assert realised_agreement(exact.means, truth.mean(axis=0)) == 1.0


@pytest.mark.parametrize("kind", ["separated", "all-pairs"])
def test_a_replay_of_the_guaranteed_rule_reaches_the_target_in_nine_runs_of_ten(kind):
    truth, spread = _pool(n=300, s=4, seed=3)
    settings = WaveSettings(size=parse_wave_size("10%", 300), target=Target(kind), confidence=0.9)
    result = replay(
        truth,
        lambda: make_chooser("random", spread),
        settings,
        doc=np.arange(300).astype(str),
        cost=np.ones(300),
        runs=40,
    )
    summary = result.summary()
    assert summary["reached_target"] >= 0.9
    assert 0 < summary["cells_share"]["median"] <= 1


@pytest.fixture
def pool_files(tmp_path):
    sources = tmp_path / "sources.txt"
    sources.write_text("".join(f"source sentence number {i} {'x' * i}\n" for i in range(1, 41)), encoding="utf-8")
    return sources


def test_a_plain_text_pool_without_judgements_gets_a_first_wave_and_is_told_what_it_needs(pool_files, capsys):
    tmp = pool_files.parent
    status = main(
        ["waves", "--data", str(pool_files), "--size", "8", "--manifest", str(tmp / "m.json"),
         "--batch", str(tmp / "w1.jsonl"), "--report", str(tmp / "r.json")]
    )  # fmt: skip
    assert status == 0
    out = capsys.readouterr().out
    assert "unknown until the first wave's judgements are in" in out
    rows = [json.loads(line) for line in (tmp / "w1.jsonl").read_text().splitlines()]
    assert rows and all(row["system"] is None for row in rows)
    report = json.loads((tmp / "r.json").read_text())
    assert report["stop"] is False and report["next_wave"]["items"] == len(rows)
    manifest = json.loads((tmp / "m.json").read_text())
    assert len(manifest["waves"]) == 1 and len(manifest["waves"][0]["unit_probability"]) == 40


def _judge(rows, path, *, value=lambda i, s: float((i * 37 + s * 11) % 17) + 0.01 * s):
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            item = int(row["id"])
            scores = {name: {"human": value(item, k)} for k, name in enumerate(["A", "B", "C"])}
            handle.write(json.dumps({"id": row["id"], "src": row["src"], "scores": scores}) + "\n")


def test_judgements_of_another_campaign_and_duplicates_are_refused_and_nothing_written_is_lost(pool_files, capsys):
    tmp = pool_files.parent
    base = ["waves", "--data", str(pool_files), "--size", "8", "--manifest", str(tmp / "m.json")]
    assert main([*base, "--batch", str(tmp / "w1.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp / "w1.jsonl").read_text().splitlines()]
    _judge(rows, tmp / "j1.jsonl")
    before = (tmp / "m.json").read_bytes()
    other = tmp / "other.jsonl"
    other.write_text(json.dumps({"id": "999", "src": "elsewhere", "scores": {"A": {"human": 1.0}}}) + "\n")
    capsys.readouterr()
    assert main([*base, "--judgements", str(other), "--batch", str(tmp / "w2.jsonl")]) == 2
    assert "not in the pool" in capsys.readouterr().err
    assert (
        main([*base, "--judgements", str(tmp / "j1.jsonl"), str(tmp / "j1.jsonl"), "--batch", str(tmp / "w2.jsonl")])
        == 2
    )
    assert "judged again" in capsys.readouterr().err
    assert (tmp / "m.json").read_bytes() == before and not (tmp / "w2.jsonl").exists()
    assert (
        main(
            [
                *base,
                "--judgements",
                str(tmp / "j1.jsonl"),
                "--batch",
                str(tmp / "w2.jsonl"),
                "--report",
                str(tmp / "r2.json"),
            ]
        )
        == 0
    )
    report = json.loads((tmp / "r2.json").read_text())
    assert report["waves"] == 1 and report["judged_items"] == len(rows)
    assert sorted(r["system"] for r in report["ranking"]) == ["A", "B", "C"] and report["stop"] is False
    assert len(json.loads((tmp / "m.json").read_text())["waves"]) == 2
    capsys.readouterr()
    assert main([*base, "--batch", str(tmp / "w3.jsonl")]) == 2  # the first wave's judgements left out
    assert "give every judgement file" in capsys.readouterr().err


def test_a_prior_from_a_utilities_file_chooses_the_wave_and_the_batch_is_a_csv_of_cells(pool_files, capsys):
    tmp = pool_files.parent
    utilities = tmp / "u.jsonl"
    utilities.write_text("".join(json.dumps({"id": str(i), "utility": float(i)}) + "\n" for i in range(1, 41)))
    argv = ["waves", "--data", str(pool_files), "--chooser", "prior", "--utility-file", str(utilities), "--size", "8"]
    assert main([*argv, "--batch", str(tmp / "w.csv"), "--manifest", str(tmp / "m.json")]) == 0
    lines = (tmp / "w.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id,doc,domain,src,system,tgt"
    probabilities = json.loads((tmp / "m.json").read_text())["waves"][0]["unit_probability"]
    assert probabilities[-1] > probabilities[0] > 0  # higher utility, likelier; the floor keeps the lowest drawable
    assert main([*argv[:3], "--chooser", "prior", "--size", "8", "--batch", str(tmp / "x.csv")]) == 2
    assert "needs --utility" in capsys.readouterr().err


def test_an_appraise_batch_holds_exactly_the_drawn_cells(tmp_path):
    pool = tmp_path / "pool.jsonl"
    with open(pool, "w", encoding="utf-8") as handle:
        for i in range(30):
            outputs = {name: f"{name} output {i}" for name in ("A", "B", "C")}
            handle.write(json.dumps({"id": f"s{i}", "src": f"source {i}", "tgt": outputs}) + "\n")
    argv = ["waves", "--data", str(pool), "--size", "6", "--chooser", "random", "--manifest", str(tmp_path / "m.json")]
    batch = ["--batch", str(tmp_path / "w.json"), "--batch-format", "appraise"]
    assert main([*argv, *batch, "--report", str(tmp_path / "r.json")]) == 0
    batches = json.loads((tmp_path / "w.json").read_text(encoding="utf-8"))
    items = [item for batch in batches for item in batch["items"] if item["itemType"] == "TGT"]  # BAD: controls
    drawn = json.loads((tmp_path / "m.json").read_text())["waves"][0]["drawn"]
    assert sorted((i["_item"].split(" | ")[1], i["targetID"]) for i in items) == sorted(
        (item, system) for item, systems in drawn.items() for system in systems
    )
    assert json.loads((tmp_path / "r.json").read_text())["next_wave"]["cells"] == len(items)


def test_the_replay_command_reports_each_chooser_beside_random_waves_with_a_paired_p_value(tmp_path, capsys):
    rng = np.random.default_rng(5)
    pool = tmp_path / "judged.jsonl"
    with open(pool, "w", encoding="utf-8") as handle:
        for i in range(80):
            spread = 0.1 + 2.0 * (i % 2)  # odd items separate the systems, even ones barely
            scores = {
                name: {"human": float(effect + spread * rng.normal())}
                for name, effect in (("A", 0.0), ("B", 0.8), ("C", 1.6))
            }
            handle.write(json.dumps({"id": f"s{i}", "src": "x" * (5 + 40 * (i % 2)), "scores": scores}) + "\n")
    out = tmp_path / "replay.json"
    argv = [
        "--no-progress",
        "waves",
        "replay",
        "--data",
        str(pool),
        "--chooser",
        "length",
        "--runs",
        "15",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    results = json.loads(out.read_text())["results"]
    assert [r["chooser"] for r in results] == ["random", "length"]
    # the command's p-value is the paired test of the two choosers' runs, as the library replays them
    campaign = load(pool)
    settings = WaveSettings(size=parse_wave_size("5%", len(campaign)))
    common = {"doc": campaign.doc, "cost": campaign.cost, "runs": 15}
    length = source_length(campaign.src)
    truth = campaign.score("human")
    shares = [
        replay(truth, lambda name=name: make_chooser(name, length), settings, **common).cell_shares()
        for name in ("random", "length")
    ]
    assert results[1]["p_fewer_cells_than_random"] == fewer_than(shares[1], shares[0])
    assert results[1]["cells_share"]["median"] == np.median(shares[1])
    assert "p_fewer_cells_than_random" not in results[0]
    assert "fewer cells than random waves" in capsys.readouterr().out


def test_appraise_scores_of_a_wave_come_back_as_judgements_and_dropped_rows_are_counted(tmp_path, capsys, caplog):
    from precomet.io.batch import appraise_item_id

    pool = tmp_path / "pool.jsonl"
    with open(pool, "w", encoding="utf-8") as handle:
        for i in range(30):
            outputs = {name: f"{name} output {i}" for name in ("A", "B")}
            handle.write(json.dumps({"id": f"s{i}", "src": f"source {i}", "doc": f"d{i // 3}", "tgt": outputs}) + "\n")
    argv = ["waves", "--data", str(pool), "--size", "6", "--chooser", "random", "--manifest", str(tmp_path / "m.json")]
    assert main([*argv, "--batch", str(tmp_path / "w.json"), "--batch-format", "appraise"]) == 0
    items = [item for batch in json.loads((tmp_path / "w.json").read_text()) for item in batch["items"]]
    assert all(item["itemID"] == appraise_item_id(item["sourceID"]) for item in items)  # a hash of the item id
    controls = [item for item in items if item["itemType"] == "BAD"]
    assert controls and all(item["documentID"].endswith("#bad") for item in controls)
    export = tmp_path / "scores.csv"
    rows = [
        f"ann1,{item['targetID']},{item['itemID']},{item['itemType']},eng,deu,{10 * k},{item['documentID']},False,"
        "[],1.0,2.0"
        for k, item in enumerate(items)
    ]
    tutorial = "ann1,A,1,TGT,eng,deu,99,ende-tutorial1#A,False,[],1.0,2.0"
    other_pair = "ann1,A,3,TGT,eng,ces,50,elsewhere#A,False,[],1.0,2.0"
    export.write_text("\n".join([*rows, tutorial, other_pair]) + "\n", encoding="utf-8")
    report = tmp_path / "r.json"
    batch = ["--batch", str(tmp_path / "w2.json"), "--batch-format", "appraise"]
    assert main([*argv, "--appraise-annotations", str(export), "--report", str(report), *batch]) == 0
    assert json.loads(report.read_text())["judged_cells"] == len(items) - len(controls)
    logged = caplog.text  # the CLI's log handler writes it to standard error
    assert f"{len(controls) + 2} row(s) dropped: 1 not this pool's documents, {len(controls)} quality-control" in logged
    assert "1 tutorial" in logged
    capsys.readouterr()
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("ann1,A,3,TGT,eng,deu,50,elsewhere#A,False,[],1.0,2.0\n", encoding="utf-8")
    assert main([*argv, "--appraise-annotations", str(foreign), "--batch", str(tmp_path / "w3.jsonl")]) == 2
    assert "not a single judgement" in capsys.readouterr().err
    stale = tmp_path / "stale.csv"  # a pool document, but an item number no item of it has (itemID = position + 1)
    stale.write_text(f"ann1,A,1,TGT,eng,deu,50,{items[0]['documentID']},False,[],1.0,2.0\n", encoding="utf-8")
    assert main([*argv, "--appraise-annotations", str(stale), "--batch", str(tmp_path / "w4.jsonl")]) == 2
    assert "another pool, or by an older precomet" in capsys.readouterr().err


def test_vector_features_are_the_leading_principal_components():
    rng = np.random.default_rng(2)
    direction = rng.normal(size=8)
    vectors = rng.normal(size=(50, 1)) * 10 * direction + rng.normal(scale=0.1, size=(50, 8))
    features = vector_features(vectors, components=3)
    assert features.shape == (50, 3)
    assert np.abs(features.mean(axis=0)).max() < 1e-9
    assert features[:, 0].var() > 100 * features[:, 1].var()  # the first component carries the planted direction
    assert vector_features(vectors[:2], components=16).shape == (2, 2)


def test_a_judgement_the_manifest_counted_on_cannot_go_missing(tmp_path, capsys):
    pool = tmp_path / "pool.jsonl"
    with open(pool, "w", encoding="utf-8") as handle:
        for i in range(30):
            outputs = {name: f"{name} output {i}" for name in ("A", "B")}
            handle.write(json.dumps({"id": f"s{i}", "src": f"source {i}", "tgt": outputs}) + "\n")
    argv = ["waves", "--data", str(pool), "--size", "6", "--chooser", "random", "--manifest", str(tmp_path / "m.json")]
    assert main([*argv, "--batch", str(tmp_path / "w1.jsonl")]) == 0
    cells = [json.loads(line) for line in (tmp_path / "w1.jsonl").read_text().splitlines()]
    first, rest = tmp_path / "j1.jsonl", tmp_path / "j2.jsonl"
    noise = np.random.default_rng(3).normal(size=len(cells))  # the systems alike: the ranking stays undecided
    for path, part in ((first, range(1)), (rest, range(1, len(cells)))):
        items: dict[str, dict] = {}
        for k in part:
            c = cells[k]
            item = items.setdefault(c["id"], {"id": c["id"], "src": c["src"], "scores": {}})
            item["scores"][c["system"]] = {"human": float(noise[k])}
        path.write_text("".join(json.dumps(item) + "\n" for item in items.values()))
    report = tmp_path / "r.json"
    argv2 = [
        *argv,
        "--judgements",
        str(first),
        str(rest),
        "--batch",
        str(tmp_path / "w2.jsonl"),
        "--report",
        str(report),
    ]
    assert main(argv2) == 0
    assert json.loads(report.read_text())["stop"] is False and (tmp_path / "w2.jsonl").exists()
    capsys.readouterr()
    assert main([*argv, "--judgements", str(rest), "--batch", str(tmp_path / "w3.jsonl")]) == 2
    error = capsys.readouterr().err
    assert f"item '{cells[0]['id']}', system '{cells[0]['system']}' was judged when wave 2 was drawn" in error
    assert not (tmp_path / "w3.jsonl").exists()


def test_an_unanswered_wave_is_left_out_and_no_new_wave_is_drawn_on_top_of_it(tmp_path, capsys):
    """A wave none of whose cells came back, or one with a system none of whose drawn cells came back, knows nothing
    of them: it must not narrow the intervals (it used to, with the whole weight of its design), and a call before
    its judgements arrive draws no further wave."""
    truth, spread = _pool(n=40)
    n, s = truth.shape
    pairs, contrasts = pair_contrasts(s)
    known = np.zeros((n, s), dtype=bool)
    judged = np.full((n, s), np.nan)
    results = []
    for number in (1, 2):
        wave = draw_wave(
            number=number, item_scores=spread, judged=judged, known=known, units=np.arange(n), cost=np.ones(n),
            size=WaveSize("items", 10.0, "10"), q=np.ones(s), rng=np.random.default_rng(number),
        )  # fmt: skip
        if number == 1:
            known = known | wave.drawn
            judged = np.where(known, truth, np.nan)
        results.append(wave_result(wave, judged, contrasts))
    assert results[1].weight == 0.0  # nothing of wave 2 came back
    assert (
        combine(results, judged, pairs).difference_se.tolist()
        == combine(results[:1], judged, pairs).difference_se.tolist()
    )
    partial = np.where(wave.drawn & (np.arange(s) != 2)[None, :], truth, judged)  # wave 2 back, but not system 2
    assert wave_result(wave, partial, contrasts).weight == 0.0

    pool = tmp_path / "pool.jsonl"
    with open(pool, "w", encoding="utf-8") as handle:
        for i in range(30):
            handle.write(json.dumps({"id": f"s{i}", "src": f"source {i}", "tgt": {"A": "a", "B": "b"}}) + "\n")
    argv = ["waves", "--data", str(pool), "--size", "6", "--chooser", "random", "--manifest", str(tmp_path / "m.json")]
    assert main([*argv, "--batch", str(tmp_path / "w1.jsonl")]) == 0
    capsys.readouterr()
    assert main([*argv, "--batch", str(tmp_path / "w2.jsonl")]) == 0  # wave 1's judgements not given
    assert "wave 1 has no judgement yet: no new wave drawn" in capsys.readouterr().err
    assert not (tmp_path / "w2.jsonl").exists() and len(json.loads((tmp_path / "m.json").read_text())["waves"]) == 1


def test_a_pool_with_pilot_human_scores_keeps_every_item(tmp_path):
    """The pool's own human scores are not judgements: items without them are the ones still to draw, and loading
    the pool as a scored campaign used to drop them (the report then spoke of the pilot items only)."""
    pool = tmp_path / "pool.jsonl"
    with open(pool, "w", encoding="utf-8") as handle:
        for i in range(40):
            scores = {"scores": {"A": {"human": 1.0}, "B": {"human": 2.0}}} if i < 10 else {}
            handle.write(
                json.dumps({"id": f"s{i}", "src": f"source {i}", "tgt": {"A": "a", "B": "b"}, **scores}) + "\n"
            )
    report = tmp_path / "r.json"
    assert (
        main(["waves", "--data", str(pool), "--size", "5", "--report", str(report), "--batch", str(tmp_path / "w.csv")])
        == 0
    )
    assert json.loads(report.read_text())["pool_items"] == 40


# --- the fault matrix (issue 51, benchmarks/waves_matrix.py): results that were wrong, refused or misreported


def _outputs_pool(path, n, systems=("A", "B", "C")):
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            outputs = {name: f"{name} output {i}" for name in systems}
            handle.write(json.dumps({"id": f"s{i}", "src": f"source {i}", "tgt": outputs}) + "\n")
    return path


def test_a_share_of_the_pool_may_be_spelled_with_a_space_as_cells_may():
    assert parse_wave_size(" 10 %", 30).amount == pytest.approx(3.0, abs=1e-12)
    assert parse_wave_size("10 cells").amount == 10


def test_a_wave_that_drew_no_cell_knows_nothing_and_the_campaign_goes_on(tmp_path, capsys):
    """Four items, waves of two: seed 0's first wave draws none. It used to be awaited for ever (no new wave on top
    of it) and, read as a census, its zero variance made the stop rule stop on an all-zero ranking."""
    pool = _outputs_pool(tmp_path / "pool.jsonl", 4)
    argv = ["waves", "--data", str(pool), "--size", "2", "--chooser", "random", "--manifest", str(tmp_path / "m.json")]
    assert main([*argv, "--batch", str(tmp_path / "w1.jsonl"), "--pearmut", str(tmp_path / "p1.json")]) == 0
    assert json.loads((tmp_path / "m.json").read_text())["waves"][0]["drawn"] == {}  # the premise
    assert "wave 1 drew no cell" in capsys.readouterr().err and not (tmp_path / "p1.json").exists()
    report = tmp_path / "r.json"
    assert main([*argv, "--batch", str(tmp_path / "w2.jsonl"), "--report", str(report)]) == 0
    assert json.loads(report.read_text())["stop"] is False
    assert json.loads(report.read_text())["ranking"] == []
    assert len(json.loads((tmp_path / "m.json").read_text())["waves"]) == 2


def test_annotations_exported_by_pearmut_are_not_reported_missing(tmp_path, capsys):
    pool = _outputs_pool(tmp_path / "pool.jsonl", 30)
    argv = ["waves", "--data", str(pool), "--size", "6", "--chooser", "random", "--manifest", str(tmp_path / "m.json")]
    assert main([*argv, "--batch", str(tmp_path / "w1.jsonl"), "--pearmut", str(tmp_path / "w1.pearmut.json")]) == 0
    campaign_id = json.loads((tmp_path / "w1.pearmut.json").read_text())["campaign_id"]
    cells = [json.loads(line) for line in (tmp_path / "w1.jsonl").read_text().splitlines()]
    items: dict[str, dict] = {}
    for k, cell in enumerate(cells):
        items.setdefault(cell["id"], {})[cell["system"]] = {"score": float(k % 5)}
    records = [
        {"user_id": "u", "item_i": k, "item": [{"item_id": item}], "annotation": [annotation]}
        for k, (item, annotation) in enumerate(items.items())
    ]
    export = tmp_path / "p.json"
    export.write_text(json.dumps({campaign_id: records}))
    capsys.readouterr()
    report = tmp_path / "r.json"
    assert (
        main(
            [
                *argv,
                "--pearmut-annotations",
                str(export),
                "--report",
                str(report),
                "--batch",
                str(tmp_path / "w2.jsonl"),
            ]
        )
        == 0
    )
    assert "count as unanswered" not in capsys.readouterr().err
    assert json.loads(report.read_text())["judged_cells"] == len(cells)


def test_judgements_of_some_systems_only_are_not_reported_as_no_judgements(tmp_path, capsys):
    pool = _outputs_pool(tmp_path / "pool.jsonl", 30)
    argv = ["waves", "--data", str(pool), "--size", "6", "--chooser", "random", "--manifest", str(tmp_path / "m.json")]
    assert main([*argv, "--batch", str(tmp_path / "w1.jsonl")]) == 0
    cells = [json.loads(line) for line in (tmp_path / "w1.jsonl").read_text().splitlines()]
    judged = tmp_path / "j.jsonl"
    judged.write_text(
        "".join(
            json.dumps({"id": c["id"], "src": c["src"], "scores": {"A": {"human": 1.0}}}) + "\n"
            for c in cells
            if c["system"] == "A"
        )
    )
    capsys.readouterr()
    assert main([*argv, "--judgements", str(judged), "--batch", str(tmp_path / "w2.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "no judgements yet" not in out and "some systems have no judgement" in out


def test_two_calls_on_one_manifest_at_once_run_one_after_the_other_whatever_the_pool_file_is_called(tmp_path):
    """A call holds the campaign's lock (on its manifest, by the manifest's real path) while it reads the manifest,
    draws and writes: a second call waits, then reads the first's wave (unanswered: it draws none), instead of drawing
    another wave 1 whose batch the manifest would not know. The lock was on the pool file: two identical copies of the
    pool with one manifest both drew a wave 1, and the manifest kept one (issue 61)."""
    import shutil
    import threading

    from precomet.waves.live import campaign_lock, manifest_lock_path

    first = tmp_path / "first"
    first.mkdir()
    _outputs_pool(first / "pool.jsonl", 30)  # the same pool: the first call's wave, made beforehand
    assert main(["waves", "--data", str(first / "pool.jsonl"), "--size", "6", "--chooser", "random", "--seed", "1",
                 "--manifest", str(first / "m.json"), "--batch", str(first / "a.jsonl")]) == 0  # fmt: skip
    _outputs_pool(tmp_path / "pool.jsonl", 30)
    copy = tmp_path / "copy-of-the-pool.jsonl"  # the second terminal's copy of the same pool
    shutil.copy(tmp_path / "pool.jsonl", copy)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    spelled = tmp_path / "sub" / ".." / "link" / "m.json"  # the first call's spelling of the same manifest
    assert manifest_lock_path(spelled) == manifest_lock_path(tmp_path / "m.json")
    statuses = []
    argv = ["waves", "--data", str(copy), "--size", "6", "--chooser", "random", "--seed", "2",
            "--manifest", str(tmp_path / "m.json"), "--batch", str(tmp_path / "b.jsonl")]  # fmt: skip
    second = threading.Thread(target=lambda: statuses.append(main(argv)))
    with campaign_lock(spelled):  # the first call, on pool.jsonl, still running
        second.start()
        second.join(timeout=1.5)
        assert second.is_alive() and not (tmp_path / "m.json").exists()  # waiting for the first call
        shutil.copy(first / "m.json", tmp_path / "m.json")  # the first call commits its wave 1 ... and ends
    second.join(timeout=60)
    assert statuses == [0]
    assert (tmp_path / "m.json").read_bytes() == (first / "m.json").read_bytes()  # wave 1 kept, no other drawn
    assert not (tmp_path / "b.jsonl").exists()
    assert not manifest_lock_path(tmp_path / "m.json").exists()  # the lock file goes with the call


def test_a_manifest_in_a_new_folder_is_locked_and_the_folder_kept_only_when_written(tmp_path):
    from precomet.waves.live import campaign_lock, manifest_lock_path

    manifest = tmp_path / "new" / "deeper" / "m.json"
    with campaign_lock(manifest):
        assert manifest_lock_path(manifest).exists()
    assert not (tmp_path / "new" / "deeper").exists()


def test_a_csv_batch_of_cells_is_spreadsheet_safe(tmp_path):
    sources = tmp_path / "sources.txt"
    sources.write_text("".join(f'=HYPERLINK("x") {i}\n' for i in range(40)), encoding="utf-8")
    assert main(["waves", "--data", str(sources), "--size", "40", "--batch", str(tmp_path / "w.csv")]) == 0
    with open(tmp_path / "w.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and all(row["src"].startswith("'=HYPERLINK") for row in rows)


def test_a_tie_estimated_with_no_spread_is_a_coin_flip_in_the_guaranteed_bound_too():
    """Degenerate judgements (every B − A exactly 10, C = A): the pair (A, C) is an estimated tie with standard error
    0. The expected agreement counts it as a coin flip; the guaranteed bound counted it as agreeing and came out 1.000,
    above the expected agreement it bounds (the waves matrix of issue 51 found it)."""
    from precomet.waves.estimate import Estimates

    pairs = np.array([[0, 1], [0, 2], [1, 2]])
    estimates = Estimates(
        means=np.array([0.0, 10.0, 0.0]),
        mean_se=np.zeros(3),
        pairs=pairs,
        differences=np.array([-10.0, 0.0, 10.0]),
        difference_se=np.zeros(3),
        exact=False,
        waves=1,
    )
    reading = verdict(estimates, target=Target("all-pairs"), confidence=0.9)
    assert reading.expected == pytest.approx(1 - 0.5 / 3)
    assert reading.lower_bound <= reading.expected and not reading.stop


@pytest.mark.slow  # reading every look in turn takes seconds: what the grid saves
@pytest.mark.parametrize("shift", [-1.0, 0.0, 1.0])
@pytest.mark.parametrize("target_kind", ["separated", "all-pairs"])
def test_the_forecast_on_a_grid_then_bisected_stops_where_every_look_read_in_turn_stops(
    monkeypatch, shift, target_kind
):
    """A small wave on a pool whose verdict turns once over the looks: the grid and its bracket find the same first
    stop as every look in turn (where the verdict turns back and forth the grid can miss a stop:
    benchmarks/bench_forecast_grid.py)."""
    import precomet.waves.stop as stop
    from precomet.waves.target import Target

    rng = np.random.default_rng(3)
    scores = rng.normal(size=(2000, 5)) + np.array([0.0, 0.08, 0.16, 0.4, 0.44])
    scores[rng.random(len(scores)) > 0.04] = np.nan  # about 4 % of the items judged, every system
    pairs = np.array([(a, b) for a in range(5) for b in range(a + 1, 5)])
    estimates = plain_estimates(scores, pairs, 1)
    assert not np.isnan(estimates.differences).any()
    target = Target(target_kind, share=0.95)
    common = dict(judged_fraction=0.04, step=6 / 2000, target=target, confidence=0.9, rule="guaranteed", planned=350)
    fast = stop.projected_fraction(estimates, shift=shift, **common)
    monkeypatch.setattr(stop, "FORECAST_GRID", 10**6)  # every look, in turn
    assert stop.projected_fraction(estimates, shift=shift, **common) == fast
    assert 0.04 < fast <= 1.0
    if shift >= 0:
        assert fast < 1.0  # a stop before the pool is judged: the search had looks to find
