"""``rank --subset`` says what the ranking represents: the subset's composition against the test set (warning),
post-stratified (reweighted) means, Kendall τ to the full-data ranking; ``--confidence`` / ``-o`` spellings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precomet.campaign import HUMAN, Campaign
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.rank import (
    compare_composition,
    full_data_agreement,
    rank_systems,
    ranking_table,
    reweighted_means,
)


def _campaign(matrix, domains, src=None) -> Campaign:
    matrix = np.asarray(matrix, dtype=float)
    n, s = matrix.shape
    return Campaign.build(
        ids=[f"i{i}" for i in range(n)],
        src=src or ["x" * 20] * n,
        systems=[f"m{j}" for j in range(s)],
        scores={HUMAN: matrix},
        domain=domains,
        name="t",
    )


def _two_domains(n_a=5, n_b=5, seed=0) -> Campaign:
    rng = np.random.default_rng(seed)
    return _campaign(rng.normal(size=(n_a + n_b, 3)), ["A"] * n_a + ["B"] * n_b)


# --------------------------------------------------------------------------- composition
def test_skewed_subset_warns_naming_the_domains():
    test = _two_domains()
    subset = test.take([0, 1, 2, 3, 5])  # 4 of A, 1 of B: 80 % / 20 % vs 50 % / 50 %
    comp = compare_composition(subset, test)
    assert comp.domain_tvd == pytest.approx(0.3)
    assert comp.material and len(comp.warnings) == 1
    assert "A 80 % vs 50 %" in comp.warnings[0] and "B 20 % vs 50 %" in comp.warnings[0]
    assert "0.300 > 0.1" in comp.warnings[0]  # three decimals: 0.1045 is not printed as "0.10 > 0.1"


def test_representative_subset_does_not_warn():
    test = _two_domains()
    comp = compare_composition(test.take([0, 1, 5, 6]), test)
    assert comp.domain_tvd == 0.0 and comp.length_ratio == 1.0
    assert not comp.material and comp.warnings == () and comp.note is None


def test_long_subset_warns_about_length():
    src = ["x" * 10] * 6 + ["x" * 40] * 2  # test mean 17.5; the two long ones: 40 / 17.5 = 2.29
    test = _campaign(np.zeros((8, 2)), ["A"] * 8, src=src)
    comp = compare_composition(test.take([6, 7]), test)
    assert comp.domain_tvd == 0.0 and comp.length_ratio == pytest.approx(40 / 17.5)
    assert len(comp.warnings) == 1 and "2.29x as long" in comp.warnings[0]
    np.testing.assert_allclose(comp.subset_quartile_share, [0, 0, 0, 1])


def test_subset_equal_to_data_gets_a_note():
    test = _two_domains()
    comp = compare_composition(test, test)
    assert not comp.material and "only the subset's items" in (comp.note or "")


# --------------------------------------------------------------------------- reweighting
def test_reweighted_means_equal_hand_computation():
    # test set: 2 A (25 %), 6 B (75 %); subset A: m0 1, 3 (mean 2), m1 0, 0; B: m0 10, m1 4
    matrix = np.zeros((8, 2))
    matrix[[0, 1, 2], 0] = [1, 3, 10]
    matrix[[0, 1, 2], 1] = [0, 0, 4]
    test = _campaign(matrix, ["A", "A", "B", "B", "B", "B", "B", "B"])
    subset = test.take([0, 1, 2])
    rw = reweighted_means(subset, test, by="domain", rounds=200, seed=1)
    np.testing.assert_allclose(rw.means, [0.25 * 2 + 0.75 * 10, 0.25 * 0 + 0.75 * 4])
    np.testing.assert_allclose(rw.test_share, [0.25, 0.75])
    np.testing.assert_array_equal(rw.subset_items, [2, 1])
    assert rw.missing == () and len(rw.notes) == 1 and "A (2 item(s), 25 % of the weight)" in rw.notes[0]
    # B has one item in the subset: every within-stratum resample is that item; A's resamples vary
    assert np.all(rw.ci_low <= rw.means) and np.all(rw.means <= rw.ci_high)
    assert rw.ci_low[0] == pytest.approx(0.25 * 1 + 7.5) and rw.ci_high[0] == pytest.approx(0.25 * 3 + 7.5)
    ranking = rank_systems(subset, test_set=test, reweight="domain", rounds=200, seed=1)
    assert ranking.systems == ("m0", "m1")
    np.testing.assert_allclose(ranking.means, [14 / 3, 4 / 3])  # raw means next to the reweighted ones
    np.testing.assert_allclose(ranking.reweighted.means, [8.0, 3.0])
    assert "rw mean" in ranking_table(ranking)


def test_the_figure_of_a_reweighted_ranking_shows_the_reweighted_means(tmp_path, monkeypatch):
    from matplotlib.axes import Axes

    from precomet.rank import plot_ranking

    drawn = []
    errorbar = Axes.errorbar

    def recording(ax, x, *args, **kwargs):
        drawn.append(np.asarray(x))
        return errorbar(ax, x, *args, **kwargs)

    monkeypatch.setattr(Axes, "errorbar", recording)
    subset = _campaign([[4, 1], [5, 2], [5, 1]], ["A", "A", "B"])
    test = _campaign([[0, 0]] * 4, ["A", "B", "B", "B"])
    plot_ranking(rank_systems(subset, test_set=test, reweight="domain", rounds=50, seed=1), tmp_path / "r.png")
    assert len(drawn) == 2 and drawn[1].tolist() == pytest.approx([5 * 0.75 + 4.5 * 0.25, 1 * 0.75 + 1.5 * 0.25])
    drawn.clear()
    plot_ranking(rank_systems(subset, rounds=50, seed=1), tmp_path / "p.png")
    assert len(drawn) == 1


def test_reweighting_says_when_a_domain_is_missing_or_there_is_one():
    test = _two_domains()
    rw = reweighted_means(test.take([0, 1]), test, by="domain", rounds=50)
    assert rw.missing == ("B",) and "no rated item in B (50 % of the test set)" in rw.notes[0]
    np.testing.assert_allclose(rw.means, np.nanmean(test.score(HUMAN)[[0, 1]], axis=0), atol=1e-12)
    single = _campaign(np.arange(12.0).reshape(4, 3), ["A"] * 4)
    rw = reweighted_means(single.take([0, 2]), single, rounds=50)
    assert "one domain stratum" in rw.notes[0]
    np.testing.assert_allclose(rw.means, single.score(HUMAN)[[0, 2]].mean(axis=0))


def test_reweight_by_length_quartiles():
    src = [f"{'x' * (10 * (i + 1))}" for i in range(8)]  # quartiles of 2 items each
    matrix = np.c_[np.arange(8.0), np.zeros(8)]
    test = _campaign(matrix, ["A"] * 8, src=src)
    rw = reweighted_means(test.take([0, 7]), test, by="length", rounds=50)
    assert rw.missing == ("Q2", "Q3")
    assert rw.means[0] == pytest.approx((0 + 7) / 2)


def test_new_numbers_leave_the_raw_ranking_bit_identical():
    test = _two_domains(12, 4, seed=3)
    subset = test.take([0, 1, 2, 3, 4, 5, 12])
    plain = rank_systems(subset, rounds=300, seed=4)
    more = rank_systems(subset, rounds=300, seed=4, test_set=test, reweight="domain")
    for name in ("means", "ci_low", "ci_high", "adjacent_pvalues", "win_probability"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(more, name))
    assert plain.clusters == more.clusters and plain.systems == more.systems
    plain_dict, more_dict = plain.to_dict(), more.to_dict()
    assert set(more_dict) - set(plain_dict) == {"composition", "reweighting", "full_data"}
    assert "composition" not in plain_dict and "reweighted_mean" not in plain_dict["systems"][0]


def test_reweight_needs_a_test_set_and_a_known_name():
    test = _two_domains()
    with pytest.raises(PrecometError, match="needs the test set"):
        rank_systems(test, reweight="domain")
    with pytest.raises(PrecometError, match="unknown reweighting 'topic'"):
        rank_systems(test, test_set=test, reweight="topic")


# --------------------------------------------------------------------------- Kendall τ to the full data
def test_tau_and_flipped_pairs_on_a_known_case():
    # full means m0 3 > m1 2 > m2 1; the subset (items 0, 1) swaps m1 and m2: 1 discordant of 3 pairs, τ = 1/3
    full = _campaign([[3, 1, 2], [3, 1, 2], [3, 4, -1], [3, 2, 1]], ["A"] * 4)
    subset = full.take([0, 1])
    ranking = rank_systems(subset, test_set=full, rounds=50)
    assert ranking.systems == ("m0", "m2", "m1")
    agreement = ranking.full_data
    assert agreement.tau == pytest.approx(1 / 3) and agreement.flipped == 1 and agreement.pairs == 3
    assert agreement.items == 4 and agreement.outside == 2
    data = ranking.to_dict()["full_data"]
    assert data["full_order"] == ["m0", "m1", "m2"] and data["kendall_tau"] == pytest.approx(1 / 3)
    assert "1 of 3 system pairs flipped" in ranking_table(ranking)


def test_no_tau_when_only_the_subset_is_scored():
    full = _campaign([[3, 1], [2, 1], [np.nan, np.nan], [np.nan, np.nan]], ["A"] * 4)
    agreement = full_data_agreement(("m0", "m1"), np.array([2.5, 1.0]), full, subset_ids=["i0", "i1"])
    assert agreement.tau is None and agreement.flipped is None and "no scored item outside" in agreement.note


# --------------------------------------------------------------------------- CLI
def _write(tmp_path, campaign: Campaign, subset_ids):
    from precomet.io.jsonl import write_jsonl

    data = tmp_path / "items.jsonl"
    write_jsonl(campaign, data)
    subset = tmp_path / "subset.jsonl"
    subset.write_text("".join(json.dumps({"id": i}) + "\n" for i in subset_ids), encoding="utf-8")
    return data, subset


def test_cli_skewed_subset_warns_and_json_carries_the_new_fields(tmp_path, capsys, caplog):
    test = _two_domains(8, 8, seed=5)
    data, subset = _write(tmp_path, test, ["i0", "i1", "i2", "i3", "i4", "i8"])
    out = tmp_path / "r.json"
    args = ["rank", "--data", str(data), "--subset", str(subset), "--rounds", "100", "--reweight", "domain"]
    assert main([*args, "-o", str(out)]) == 0
    captured = capsys.readouterr()
    warning = [line for line in (captured.err + caplog.text).splitlines() if "subset's domains differ" in line]
    assert len(warning) == 1 and "A 83 % vs 50 %" in warning[0]
    assert "rw mean" in captured.out and "Kendall tau" in captured.out
    result = json.loads(out.read_text())
    assert result["composition"]["material"] is True and result["composition"]["warnings"]
    assert result["composition"]["test_set"].startswith("the scored items")
    assert result["composition"]["domains"]["A"]["subset_share"] == pytest.approx(5 / 6)
    assert result["reweighting"]["by"] == "domain"
    assert result["reweighting"]["strata"]["B"]["test_share"] == 0.5
    assert {"reweighted_mean", "reweighted_ci_low", "reweighted_ci_high"} <= set(result["systems"][0])
    assert result["full_data"]["pairs"] == 3 and -1 <= result["full_data"]["kendall_tau"] <= 1
    assert result["signature"]["reweight"] == "domain" and result["signature"]["test_items"] == 16


def test_cli_representative_subset_is_quiet(tmp_path, capsys, caplog):
    test = _two_domains(8, 8, seed=5)
    data, subset = _write(tmp_path, test, ["i0", "i1", "i8", "i9"])
    assert main(["rank", "--data", str(data), "--subset", str(subset), "--rounds", "50"]) == 0
    captured = capsys.readouterr()
    assert "differ" not in captured.err + caplog.text and "representative" in captured.out


def test_cli_confidence_and_the_removed_old_spellings(tmp_path, capsys):
    test = _two_domains()
    data, _ = _write(tmp_path, test, [])
    new = tmp_path / "new.json"
    assert main(["rank", "--data", str(data), "--rounds", "50", "--confidence", "0.8", "-o", str(new)]) == 0
    assert json.loads(new.read_text())["confidence"] == 0.8
    for old in (["--level", "0.8"], ["--json", str(tmp_path / "old.json")]):  # removed in 0.6.0
        with pytest.raises(SystemExit):
            main(["rank", "--data", str(data), "--rounds", "50", *old])
        assert f"unrecognized arguments: {old[0]}" in capsys.readouterr().err


def test_cli_reweight_without_subset_is_refused(tmp_path, capsys):
    data, _ = _write(tmp_path, _two_domains(), [])
    assert main(["rank", "--data", str(data), "--reweight", "domain"]) == 2
    assert "--reweight domain needs --subset" in capsys.readouterr().err


def test_every_rank_option_has_help():
    import argparse

    from precomet.commands import rank

    parser = argparse.ArgumentParser()
    rank.add_arguments(parser)
    for action in parser._actions:
        if action.option_strings and action.help is not argparse.SUPPRESS:
            assert action.help, action.option_strings


# --------------------------------------------------------------------------- real data
@pytest.mark.realdata
def test_domain_balanced_subset_on_wmt23_zh_en(raw_data):
    from precomet.io import load

    root = raw_data / "mt-metrics-eval-v2"
    if not (root / "wmt23").exists():
        pytest.skip(f"WMT23 mt-metrics-eval data not found under {root}")
    full = load(root, campaign="wmt23/zh-en", human="mqm")  # 1177 scored items: manuals 10 %
    picks = np.concatenate([np.flatnonzero(full.domain == d)[:60] for d in sorted(set(full.domain))])
    ranking = rank_systems(full.take(picks), test_set=full, reweight="domain", rounds=200)
    comp = ranking.composition
    assert comp.material and "manuals 33 % vs 10 %" in comp.warnings[0]
    assert ranking.reweighted is not None and ranking.reweighted.missing == ()
    assert ranking.full_data.tau is not None and 0 < ranking.full_data.tau <= 1
    assert ranking.full_data.flipped is not None and ranking.full_data.pairs == 105


def test_a_stratum_with_few_subset_items_is_named_when_it_keeps_its_weight():
    from precomet.rank.reweight import reweighted_means

    rng = np.random.default_rng(1)
    test_set = Campaign.build(
        ids=[str(i) for i in range(100)],
        src=[f"source {i}" for i in range(100)],
        systems=["A", "B"],
        domain=["news"] * 50 + ["chat"] * 50,
        scores={"human": rng.normal(size=(100, 2))},
    )
    subset = test_set.take(np.r_[np.arange(20), 50, 51])  # 20 news items, 2 chat items
    notes = reweighted_means(subset, test_set, by="domain", rounds=20).notes
    assert any(
        "fewer than 10 subset items" in note and "chat (2 item(s), 50 % of the weight)" in note for note in notes
    )
    balanced = test_set.take(np.r_[np.arange(20), np.arange(50, 70)])
    notes = reweighted_means(balanced, test_set, by="domain", rounds=20).notes
    assert not any("fewer than" in note for note in notes)


def test_reweighting_is_advised_by_the_difference_and_not_when_it_moves_away_from_the_full_data(caplog):
    from types import SimpleNamespace

    from precomet.commands.rank import _warn_about_subset

    length = "the subset's sources are 1.40x as long as the test set's on average (90 vs 64 characters)"
    comp = SimpleNamespace(note=None, warnings=(length,))
    agreement = SimpleNamespace(tau=0.924, tau_reweighted=0.867)
    _warn_about_subset(SimpleNamespace(composition=comp, reweighted=None, full_data=None), None)
    assert "(--reweight length post-stratifies them)" in caplog.text and "--reweight domain" not in caplog.text
    caplog.clear()
    reweighted = SimpleNamespace(notes=())
    _warn_about_subset(SimpleNamespace(composition=comp, reweighted=reweighted, full_data=agreement), "length")
    assert "agrees less with the full data's than the raw one (Kendall tau 0.924 -> 0.867)" in caplog.text
    assert "see the reweighted (length) means" in caplog.text
    caplog.clear()
    _warn_about_subset(SimpleNamespace(composition=comp, reweighted=reweighted, full_data=None), "domain")
    assert "(--reweight domain does not correct this; --reweight length does)" in caplog.text
    caplog.clear()
    better = SimpleNamespace(tau=0.867, tau_reweighted=0.924)
    _warn_about_subset(SimpleNamespace(composition=comp, reweighted=reweighted, full_data=better), "length")
    assert "agrees less" not in caplog.text
