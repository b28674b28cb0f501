"""Preference records, loaders, Elo / Bradley-Terry, bootstrap, position bias, agreement, CLI."""

import json
import math

import numpy as np
import pytest

from precomet.cli import main
from precomet.errors import DataError, PrecometError
from precomet.pairwise.preference import (
    Preferences,
    from_scores,
    likert_labels,
    load_alpacaeval,
    load_preferences,
    save_preferences,
)
from precomet.pairwise.ratings import agreement, bootstrap_ratings, bt_ratings, elo_ratings, position_bias


def prefs(rows, first_known=True):
    item, a, b, label = zip(*rows)
    return Preferences.build(item=item, model_a=a, model_b=b, label=label, first_known=first_known)


def test_likert_mapping_and_ties():
    assert likert_labels([1, 4, 5, 8]) == ["a", "a", "b", "b"]
    assert likert_labels([1, 4, 5, 8], likert_ties=True) == ["a", "tie", "tie", "b"]
    for bad in (0, 9, 4.5, "x"):
        with pytest.raises(PrecometError, match="Likert"):
            likert_labels([bad])


def test_from_scores_with_margin(tiny_campaign):
    c = tiny_campaign
    p = from_scores(c, margin=0.0)
    assert len(p) == 3 * len(c)  # 3 systems -> 3 pairs per item
    first = c.score("human")[0]
    s0, s1 = c.systems[0], c.systems[1]
    row = np.flatnonzero((p.item == c.ids[0]) & (p.model_a == s0) & (p.model_b == s1))[0]
    expected = "a" if first[0] > first[1] else "b" if first[0] < first[1] else "tie"
    assert p.label[row] == expected
    wide = from_scores(c, margin=1e9)
    assert set(wide.label) == {"tie"}


def test_elo_hand_computed():
    p = prefs([("1", "x", "y", "a"), ("2", "y", "x", "tie")])
    # game 1: expected 0.5, x +2, y -2 (K=4); game 2: y (998) vs x (1002): e_y = 1/(1+10^(4/400))
    e_y = 1 / (1 + 10 ** (4 / 400))
    r = elo_ratings(p, k=4)
    assert r["y"] == pytest.approx(998 + 4 * (0.5 - e_y))
    assert r["x"] == pytest.approx(1002 - 4 * (0.5 - e_y))
    assert elo_ratings(p, ties="drop")["x"] == pytest.approx(1002)


def test_bradley_terry_matches_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    models = ["m0", "m1", "m2", "m3"]
    strength = np.array([0.0, 0.5, 1.0, -0.5])
    rows = []
    for n in range(400):
        i, j = rng.choice(4, 2, replace=False)
        win = rng.random() < 1 / (1 + np.exp(strength[j] - strength[i]))
        rows.append((str(n), models[i], models[j], "a" if win else "b"))
    p = prefs(rows)
    ours = bt_ratings(p, ridge=1e-4)
    x = np.zeros((len(rows), 4))
    for r, (_, a, b, _) in enumerate(rows):
        x[r, models.index(a)], x[r, models.index(b)] = 1, -1
    y = np.array([lab == "a" for *_, lab in rows])
    coef = LogisticRegression(C=1e4, fit_intercept=False, tol=1e-10, max_iter=10000).fit(x, y).coef_[0]
    coef -= coef.mean()
    expected = 1000 + 400 / math.log(10) * coef
    np.testing.assert_allclose([ours[m] for m in models], expected, atol=0.05)


def test_bootstrap_intervals_and_unknown_models():
    rows = [(str(n), "good", "bad", "a" if n % 4 else "b") for n in range(200)]
    for method in ("elo", "bt"):
        table = bootstrap_ratings(prefs(rows), method=method, rounds=200, seed=1)
        assert table.models[0] == "good"
        assert (table.low <= table.median).all() and (table.median <= table.high).all()
        assert table.games.tolist() == [200, 200] and table.win_rate[0] == pytest.approx(0.75)
    same = bootstrap_ratings(prefs(rows), method="bt", rounds=50, seed=3)
    again = bootstrap_ratings(prefs(rows), method="bt", rounds=50, seed=3)
    np.testing.assert_array_equal(same.median, again.median)
    with pytest.raises(PrecometError, match="unknown model"):
        bootstrap_ratings(prefs(rows), models=["good"])
    with pytest.raises(PrecometError, match="unknown rating method"):
        bootstrap_ratings(prefs(rows), method="glicko")


def test_record_validation():
    with pytest.raises(PrecometError, match="itself"):
        prefs([("1", "x", "x", "a")])
    with pytest.raises(PrecometError, match="label"):
        prefs([("1", "x", "y", "maybe")])


def test_position_bias_and_flip_rate():
    p = prefs(
        [
            ("1", "x", "y", "a"),
            ("1", "y", "x", "a"),  # judge always picks the first: a flip
            ("2", "x", "y", "a"),
            ("2", "y", "x", "b"),  # consistent: x wins both times
            ("3", "x", "y", "a"),
        ]
    )
    report = position_bias(p)
    assert report["first_wins"] == 4 and report["second_wins"] == 1 and report["first_win_rate"] == pytest.approx(0.8)
    assert report["pairs_both_orders"] == 2 and report["flips"] == 1 and report["flip_rate"] == 0.5


def test_agreement_accuracy_and_kappa():
    from sklearn.metrics import cohen_kappa_score

    judge = prefs([("1", "x", "y", "a"), ("2", "y", "x", "a"), ("3", "x", "y", "tie"), ("4", "x", "y", "b")])
    human = prefs([("1", "x", "y", "a"), ("2", "x", "y", "b"), ("3", "x", "y", "a"), ("5", "x", "y", "b")])
    result = agreement(judge, human)
    assert result["pairs"] == 3 and result["accuracy"] == pytest.approx(2 / 3)
    assert result["kappa"] == pytest.approx(
        cohen_kappa_score(["a", "b", "tie"], ["a", "b", "a"], labels=["a", "b", "tie"])
    )
    with pytest.raises(PrecometError, match="share no"):
        agreement(judge, prefs([("9", "x", "y", "a")]))


def test_csv_preferences_are_spreadsheet_safe_and_read_back_exactly(tmp_path):
    p = prefs([("=1+1", "@x", "-y", "a"), ("'2", "-y", "+z", "tie")])
    save_preferences(p, tmp_path / "p.csv")
    assert "'=1+1,'@x,'-y,a" in (tmp_path / "p.csv").read_text(encoding="utf-8")
    back = load_preferences(tmp_path / "p.csv")
    assert back.item.tolist() == ["=1+1", "'2"] and back.models == ("+z", "-y", "@x")


def test_csv_jsonl_round_trip_and_bad_files(tmp_path):
    p = prefs([("1", "x", "y", "a"), ("2", "y", "z", "tie")])
    for suffix in (".csv", ".jsonl"):
        save_preferences(p, tmp_path / f"p{suffix}")
        back = load_preferences(tmp_path / f"p{suffix}")
        assert back.label.tolist() == ["a", "tie"] and back.models == ("x", "y", "z")
    (tmp_path / "l.csv").write_text("item,model_a,model_b,likert\n1,x,y,2\n2,x,y,5\n3,x,y,9\n")
    with pytest.raises(DataError, match="l.csv:4"):
        load_preferences(tmp_path / "l.csv")
    (tmp_path / "t.csv").write_text("item,model_a,model_b,likert\n1,x,y,4\n2,x,y,5\n")
    assert load_preferences(tmp_path / "t.csv", likert_ties=True).label.tolist() == ["tie", "tie"]
    (tmp_path / "bad.jsonl").write_text('{"item": 1, "model_a": "x", "model_b": "y", "label": "win"}\n')
    with pytest.raises(DataError, match="bad.jsonl:1"):
        load_preferences(tmp_path / "bad.jsonl")


def _alpaca_record(instruction, preference, token):
    raw = {"logprobs": {"content": [{"token": token}]}}
    return dict(
        instruction=instruction,
        generator_1="base",
        generator_2="model",
        output_1="o1",
        output_2="o2",
        preference=preference,
        raw_completion=raw,
    )


def test_alpacaeval_loader_recovers_display_order(tmp_path):
    records = [
        _alpaca_record("q1", 1.01, "m"),  # base wins, judge said first -> base was shown first
        _alpaca_record("q2", 1.98, "m"),  # model wins, judge said first -> model was shown first
        _alpaca_record("q3", 1.02, "M"),  # base wins, judge said second -> model shown first
        _alpaca_record("q4", 1.5, "m"),  # tie, order unknown
    ]
    (tmp_path / "annotations.json").write_text(json.dumps(records))
    p = load_alpacaeval(tmp_path)
    assert p.model_a.tolist() == ["base", "model", "model", "base"]
    assert p.label.tolist() == ["a", "a", "b", "tie"]
    assert p.first_known.tolist() == [True, True, True, False]
    assert position_bias(p)["first_win_rate"] == pytest.approx(2 / 3)
    (tmp_path / "annotations.json").write_text(json.dumps([dict(records[0], preference=2.5)]))
    with pytest.raises(DataError, match="outside"):
        load_alpacaeval(tmp_path)


def test_elo_cli_on_csv(tmp_path, capsys):
    rows = "\n".join(f"{n},good,bad,{'a' if n % 3 else 'b'}" for n in range(60))
    (tmp_path / "p.csv").write_text("item,model_a,model_b,label\n" + rows + "\n")
    code = main(
        [
            "elo",
            "--prefs",
            str(tmp_path / "p.csv"),
            "--rounds",
            "50",
            "--plot",
            str(tmp_path / "f.png"),
            "-o",
            str(tmp_path / "r.json"),
        ]
    )
    assert code == 0 and (tmp_path / "f.png").stat().st_size > 1000
    assert json.loads((tmp_path / "r.json").read_text())["ratings"][0]["model"] == "good"
    assert main(["elo", "--prefs", str(tmp_path / "p.csv"), "--models", "good"]) == 2
    assert "unknown model" in capsys.readouterr().err


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
@pytest.mark.realdata
def test_alpacaeval_real_files(raw_data):
    p = load_alpacaeval(raw_data / "alpacaeval")
    assert len(p) == 8 * 805 and "gpt4_1106_preview" in p.models and len(p.models) == 9
    report = position_bias(p)
    assert report["records"] > 5000 and 0.3 < report["first_win_rate"] < 0.6


def test_the_old_spellings_are_gone(tmp_path, capsys):
    (tmp_path / "p.csv").write_text("item,model_a,model_b,label\n1,good,bad,a\n2,bad,good,b\n")
    argv = ["elo", "--prefs", str(tmp_path / "p.csv"), "--rounds", "5"]
    assert main([*argv, "-o", str(tmp_path / "r.json"), "--plot", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "r.json").is_file() and (tmp_path / "f.png").is_file()
    for old in ("--json", "--figure"):  # removed in 0.6.0
        with pytest.raises(SystemExit) as refused:
            main([*argv, old, str(tmp_path / "b.out")])
        assert refused.value.code == 2 and f"unrecognized arguments: {old}" in capsys.readouterr().err
