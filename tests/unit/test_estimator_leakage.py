"""Leak-free training data: source identity, fingerprints, and build-targets over many campaigns."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precomet.cli import main
from precomet.errors import PrecometError
from precomet.estimator.leakage import SourceFingerprint, drop_sources, normalise_source
from precomet.estimator.targets import build_targets, merge_by_source

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "wmt_release_tiny"


@pytest.fixture
def release(tmp_path) -> Path:
    """The tiny release with one WMT22 source made the same text as a WMT21 one ("Bye." -> "it  rained.")."""
    import shutil

    root = shutil.copytree(FIXTURE, tmp_path / "release")
    src = root / "wmt22" / "txt" / "sources" / "generaltest2022.en-de.src.en"
    src.write_text(src.read_text().replace("Bye.", "it  rained."))
    return root


def test_normalised_sources_ignore_case_spacing_and_compatibility_forms():
    assert normalise_source("  The\tCAT  sat.\n") == normalise_source("the cat sat.") == "the cat sat."
    assert normalise_source("ﬁne") == normalise_source("fine")  # NFKC ligature
    assert normalise_source("the cat sat") != normalise_source("the cat sat.")


def test_fingerprint_round_trip_and_membership():
    fingerprint = SourceFingerprint.of(["One.", "two", "ONE."])
    assert len(fingerprint) == 2
    again = SourceFingerprint.from_json(json.loads(json.dumps(fingerprint.to_json())), where="x")
    assert np.array_equal(again.hashes, fingerprint.hashes)
    assert again.contains([" one. ", "Two", "three"]).tolist() == [True, True, False]
    assert SourceFingerprint.of([]).contains(["a"]).tolist() == [False]
    with pytest.raises(ValueError):
        fingerprint.hashes[0] = 1  # read-only


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: {**d, "scheme": "md5"}, "not of scheme"),
        (lambda d: {**d, "hashes": "@@@"}, "not valid base64"),
        (lambda d: {**d, "count": 5}, "corrupt"),
        (lambda d: {**d, "hashes": d["hashes"][:-4] + "AAA="}, "bytes, not a multiple of 4|corrupt"),
    ],
)
def test_damaged_fingerprints_are_refused(damage, message):
    data = SourceFingerprint.of(["a", "b", "c"]).to_json()
    with pytest.raises(PrecometError, match=message):
        SourceFingerprint.from_json(damage(data), where="ckpt/precomet.json")


def test_drop_sources_and_merge_by_source():
    rows = [
        {"src": "A b", "target": 1.0, "campaign": "x", "id": "0", "doc": "0", "lp": "en-de"},
        {"src": "a  B", "target": 3.0, "campaign": "y", "id": "0", "doc": "0", "lp": "en-cs"},
        {"src": "c", "target": -1.0, "campaign": "y", "id": "1", "doc": "1", "lp": "en-cs"},
    ]
    merged = merge_by_source(rows)
    assert [(r["src"], r["target"], r["count"], r["campaigns"], r["lp"]) for r in merged] == [
        ("A b", 2.0, 2, ["x", "y"], None),
        ("c", -1.0, 1, ["y"], "en-cs"),
    ]
    kept, dropped = drop_sources(rows, ["A B"])
    assert dropped == 2 and [r["src"] for r in kept] == ["c"]
    assert rows[0]["target"] == 1.0 and "count" not in rows[0]  # inputs untouched


def _targets(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_build_targets_glob_merges_repeated_sources(tmp_path, release):
    from precomet.io import load

    out = tmp_path / "t.jsonl"
    assert (
        main(
            [
                "build-targets",
                "--data",
                f"{release}:wmt2[12]/*",
                "--method",
                "diversity",
                "--option",
                "similarity=chrf",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    rows = {normalise_source(r["src"]): r for r in _targets(out)}
    assert sorted(rows) == ["a new day.", "good night.", "hello.", "it rained.", "the cat sat."]
    assert rows["it rained."]["count"] == 3 and rows["it rained."]["campaigns"] == [
        "wmt21/en-de",
        "wmt21/en-ja",
        "wmt22/en-de",
    ]
    assert rows["the cat sat."]["count"] == 2 and rows["hello."]["count"] == 1
    per = {}  # oracle: per-campaign z-scored targets, averaged by hand
    for name in ("wmt21/en-de", "wmt21/en-ja", "wmt22/en-de"):
        for r in build_targets([load(release, campaign=name)], method="diversity", options={"similarity": "chrf"}):
            per.setdefault(normalise_source(r["src"]), []).append(r["target"])
    for src, values in per.items():
        assert rows[src]["target"] == pytest.approx(np.mean(values))
    assert (
        main(
            [
                "build-targets",
                "--data",
                f"{release}:wmt2[12]/*",
                "--method",
                "diversity",
                "--option",
                "similarity=chrf",
                "--per-campaign",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert len(_targets(out)) == 3 + 3 + 3


@pytest.mark.parametrize("exclude", ["wmt22/*", "wmt22/en-de"])
def test_excluded_campaign_takes_its_sources_out_of_the_others(tmp_path, release, capsys, exclude):
    out = tmp_path / "t.jsonl"
    assert (
        main(
            [
                "build-targets",
                "--data",
                f"{release}:wmt21/*",
                f"{release}:wmt22/*",
                "--exclude",
                exclude,
                "--method",
                "diversity",
                "--option",
                "similarity=chrf",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert sorted(r["src"] for r in _targets(out)) == ["Good night.", "The cat sat."]  # "It rained." is in wmt22 too
    assert "dropped 2 row(s)" in capsys.readouterr().out  # from wmt21/en-de and wmt21/en-ja


def test_holdout_drops_test_sources(tmp_path, release, capsys):
    out = tmp_path / "t.jsonl"
    assert (
        main(
            [
                "build-targets",
                "--data",
                f"{release}:wmt21/*",
                "--holdout",
                f"{release}:wmt22/en-de",
                "--method",
                "diversity",
                "--option",
                "similarity=chrf",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert "It rained." not in {r["src"] for r in _targets(out)} and "dropped 2 row(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--data", f"{FIXTURE}:wmt21/*", "--exclude", "nosuch"], "--exclude 'nosuch' matches no input campaign"),
        (["--data", f"{FIXTURE}:wmt19/*"], "pattern 'wmt19/\\*' matches no campaign"),
        (["--data", f"{FIXTURE}:wmt21/*", "--exclude", "wmt21/*"], "every input campaign was excluded"),
        (["--data", f"{FIXTURE}:wmt21/*", "--data", f"{FIXTURE}:wmt21/en-de"], "comes from both"),
    ],
)
def test_build_targets_errors_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "t.jsonl"
    assert main(["build-targets", *args, "--method", "diversity", "--option", "similarity=chrf", "-o", str(out)]) == 2
    assert message.replace("\\", "") in capsys.readouterr().err and not out.exists()


def test_reference_chrf_equals_sacrebleu_and_enables_metric_targets(tmp_path):
    import sacrebleu

    from precomet.io import load
    from precomet.utilities.reference import reference_scores, with_reference_score

    campaign = load(FIXTURE, campaign="wmt21/en-de")
    scores = reference_scores(campaign)
    for i in range(len(campaign)):
        for j, system in enumerate(campaign.systems):
            expected = sacrebleu.sentence_chrf(campaign.outputs[system][i], [campaign.ref[i]]).score
            assert scores[i, j] == pytest.approx(expected, abs=1e-9)
    assert with_reference_score(campaign).score("chrF").tolist() == scores.tolist()
    out = tmp_path / "t.jsonl"
    assert (
        main(
            [
                "build-targets",
                "--data",
                f"{FIXTURE}:wmt21/*",
                "--reference-metric",
                "chrf",
                "--metric",
                "chrF",
                "--method",
                "metric_avg",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    rows = {r["src"]: r for r in _targets(out)}
    per = [
        with_reference_score(load(FIXTURE, campaign=n)).score("chrF").mean(axis=1)
        for n in ("wmt21/en-de", "wmt21/en-ja")
    ]
    # metric_avg: a low average chrF = annotate first; z-scored per campaign, then averaged over the two campaigns
    expected = np.mean([-(v - v.mean()) / v.std() for v in per], axis=0)
    assert [rows[s]["target"] for s in ("The cat sat.", "It rained.", "Good night.")] == pytest.approx(expected)


def test_reference_metric_needs_a_reference():
    from precomet.campaign import Campaign
    from precomet.utilities.reference import reference_scores

    campaign = Campaign.build(
        src=["a", "b"], systems=["x", "y"], outputs={"x": ["a", "b"], "y": ["a", "c"]}, name="noref"
    )
    with pytest.raises(PrecometError, match="campaign 'noref' has no reference"):
        reference_scores(campaign)
    with pytest.raises(PrecometError, match="unknown reference metric 'ter'"):
        reference_scores(campaign, "ter")


def test_build_targets_takes_campaign_as_the_other_commands_do(tmp_path, release):
    argv = ["build-targets", "--method", "diversity", "--option", "similarity=chrf"]
    assert main([*argv, "--data", f"{release}:wmt2[12]/*", "-o", str(tmp_path / "a.jsonl")]) == 0
    assert main([*argv, "--data", str(release), "--campaign", "wmt2[12]/*", "-o", str(tmp_path / "b.jsonl")]) == 0
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()
