"""Results carry the data they belong to (issue 34): a score file or a subset made from other source texts is
refused by the commands that read it, or used with a warning under ``--force``; one made from the same texts in
another format passes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precomet.cli import main
from precomet.errors import PrecometError
from precomet.estimator.pool import scan_pool
from precomet.provenance import (
    check_scores_belong,
    check_subset_sources,
    items_hash,
    signed_sources_hash,
    sources_hash,
)
from precomet.selection import SubsetPlan, select_subset
from precomet.selection.knapsack import Problem, solve


def test_sources_hash_is_what_predict_signs():
    sources = ["one", "two words", "三"]
    scan = scan_pool([(["1", "2"], sources[:2]), (["3"], sources[2:])], meta={}, strict=False, what="x", where="x")
    assert scan.data_hash == sources_hash(sources)
    assert sources_hash(["ab", "c"]) != sources_hash(["a", "bc"])  # the separator counts
    assert signed_sources_hash({"tool": "precomet predict", "data_hash": "0123456789abcdef"}) == "0123456789abcdef"
    assert signed_sources_hash({"tool": "precomet utilities", "data_hash": "abc"}) is None  # another scheme
    assert signed_sources_hash({"sources_hash": "fedcba9876543210"}) == "fedcba9876543210"


@pytest.mark.parametrize(
    "signature",
    [
        {"sources_hash": 12},
        {"sources_hash": "abc"},
        {"tool": "precomet predict", "data_hash": 5},
    ],
)
def test_a_malformed_sources_hash_is_refused_not_ignored(signature):
    with pytest.raises(PrecometError, match="u.jsonl: the signature's '(sources|data)_hash' must be 16 hex digits"):
        check_scores_belong("u.jsonl", ["1"], signature, {"1": "a"})


def test_scores_of_other_texts_refused_or_warned_under_force(caplog):
    source_of = {"1": "a", "2": "b"}
    signature = {"sources_hash": sources_hash(["a", "other"])}
    with pytest.raises(PrecometError, match="p.jsonl was computed on other sources than --data.*--force"):
        check_scores_belong("p.jsonl", ["1", "2"], signature, source_of)
    check_scores_belong("p.jsonl", ["1", "2"], signature, source_of, force=True)
    assert "used anyway: --force" in caplog.text
    check_scores_belong("p.jsonl", ["2", "1"], {"sources_hash": sources_hash(["b", "a"])}, source_of)  # file order
    check_scores_belong("p.jsonl", ["1", "2"], {}, source_of)  # no signature: nothing to check


def test_a_signed_file_sorted_since_passes_one_with_ids_data_lacks_or_relabelled_does_not(caplog):
    source_of = {"1": "a", "2": "b", "3": "c"}
    signed = {"items_hash": items_hash(["1", "2", "3"], ["a", "b", "c"])}
    check_scores_belong("p.jsonl", ["3", "1", "2"], signed, source_of)  # sorted by utility after it was written
    with pytest.raises(PrecometError, match="other sources.*items hash"):
        check_scores_belong("p.jsonl", ["3", "1", "2"], signed, {"1": "a", "2": "b", "3": "C"})
    with pytest.raises(PrecometError, match="relabelled"):  # the same texts in the same order under swapped ids
        check_scores_belong("p.jsonl", ["1", "2", "3"], signed, {"1": "b", "2": "a", "3": "c"})
    with pytest.raises(PrecometError, match="other data than --data: 1 of its 4 ids are not in --data.*'9'"):
        check_scores_belong("p.jsonl", ["1", "2", "3", "9"], signed, source_of)
    check_scores_belong("p.jsonl", ["1", "2", "3", "9"], signed, source_of, force=True)
    assert "used anyway: --force" in caplog.text
    old = {"sources_hash": sources_hash(["a", "b", "c"])}  # before items_hash: the texts in file order
    check_scores_belong("p.jsonl", ["1", "2", "3"], old, source_of)
    with pytest.raises(PrecometError, match="sources hash"):
        check_scores_belong("p.jsonl", ["3", "1", "2"], old, source_of)
    with pytest.raises(PrecometError, match="'items_hash' must be 32 hex digits"):
        check_scores_belong("p.jsonl", ["1"], {"items_hash": "abc"}, source_of)


def test_items_hash_is_the_pairs_in_any_order_and_predict_signs_it():
    assert items_hash(["1", "2"], ["a", "b"]) == items_hash(["2", "1"], ["b", "a"])
    assert items_hash(["1", "2"], ["a", "b"]) != items_hash(["1", "2"], ["b", "a"])
    scan = scan_pool([(["1", "2"], ["a", "b"]), (["3"], ["c"])], meta={}, strict=False, what="x", where="x")
    assert scan.items_hash == items_hash(["1", "2", "3"], ["a", "b", "c"])


def test_subset_rows_compared_by_id_and_old_subsets_pass():
    source_of = {"a": "one", "b": "two"}
    check_subset_sources("s.jsonl", [("a", "one"), ("b", None)], source_of)  # None: written before 0.8.0
    with pytest.raises(PrecometError, match="1 of 2 item.*id 'b': the subset has 'zwei', --data has 'two'"):
        check_subset_sources("s.jsonl", [("a", "one"), ("b", "zwei")], source_of)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cli_predicted_text_selects_and_ranks_round_trip(tmp_path, capsys):
    """A score file signed for the same texts passes in another format; the subset then ranks its campaign."""
    from tests.bad_inputs import items, jsonl

    data = tmp_path / "items.jsonl"
    data.write_text(jsonl(items()), encoding="utf-8")
    src = [row["src"] for row in items()]
    scores = tmp_path / "u.jsonl"
    rows = [{"signature": {"tool": "precomet predict", "data_hash": sources_hash(src)}}]
    scores.write_text(
        "".join(json.dumps(r) + "\n" for r in rows + [{"id": i, "utility": 1.0 * n} for n, i in enumerate("abcd")])
    )
    subset = tmp_path / "sub.jsonl"
    assert main(["select", "--data", str(data), "--utility-file", str(scores), "--budget", "2", "-o", str(subset)]) == 0
    chosen = _lines(subset)
    assert [(r["id"], r["src"]) for r in chosen] == [("d", src[3]), ("c", src[2])]
    manifest = json.loads(subset.with_name("sub.manifest.json").read_text())
    assert manifest["sources_hash"] == sources_hash(src)
    assert main(["rank", "--data", str(data), "--subset", str(subset), "--rounds", "20"]) == 0
    capsys.readouterr()


def test_extreme_utilities_keep_their_order():
    utility = np.array([1e308, -1e308, 0.0, 1e308, 5.0, -1e308])
    chosen = select_subset(utility, SubsetPlan(budget=3)).indices
    assert sorted(chosen.tolist()) == [0, 3, 4]
    assert sorted(
        select_subset(
            utility, SubsetPlan(budget_cost=30.0, cost_objective="rank-cost"), cost=np.full(6, 10.0)
        ).indices.tolist()
    ) == [
        0,
        3,
        4,
    ]


def test_a_unit_heavier_than_the_budget_does_not_make_the_knapsack_infeasible():
    weight = np.r_[np.full(29, 10.0), 1e308]
    value = np.r_[np.linspace(0.1, 0.6, 29), 0.6]
    solution = solve(Problem(value=value, weight=weight, capacity=5e307))
    assert solution.chosen[:29].all() and not solution.chosen[29] and solution.status == "optimal"
    solution = solve(Problem(value=value, weight=weight, capacity=95.0))
    assert solution.chosen.sum() == 9 and solution.chosen[20:29].all()
    assert not solve(Problem(value=value[-1:], weight=weight[-1:], capacity=5.0)).chosen.any()
    assert solve(Problem(value=value, weight=weight, capacity=1e308)).chosen.all()  # everything fits, even 1e308


def test_rank_refuses_the_manifest_of_another_subset_or_of_other_data(tmp_path, capsys, caplog):
    from tests.bad_inputs import items, jsonl

    data = tmp_path / "items.jsonl"
    data.write_text(jsonl(items()), encoding="utf-8")
    select = ["select", "--data", str(data), "--method", "random", "--budget", "2"]
    assert main([*select, "--seed", "1", "-o", str(tmp_path / "one.jsonl")]) == 0
    assert main([*select, "--seed", "2", "-o", str(tmp_path / "two.jsonl")]) == 0
    one, two = tmp_path / "one.manifest.json", tmp_path / "two.manifest.json"
    assert json.loads(one.read_text())["ids_hash"] != json.loads(two.read_text())["ids_hash"]
    rank = ["rank", "--data", str(data), "--subset", str(tmp_path / "one.jsonl"), "--rounds", "20"]
    assert main(rank) == 0  # its own manifest, found beside it
    assert main([*rank, "--manifest", str(two)]) == 2
    assert "two.manifest.json: the manifest describes another subset" in capsys.readouterr().err
    assert main([*rank, "--manifest", str(two), "--force"]) == 0
    assert "used anyway: --force" in caplog.text
    other = json.loads(one.read_text())
    other["sources_hash"] = sources_hash(["other", "texts"])
    (tmp_path / "other.manifest.json").write_text(json.dumps(other))
    assert main([*rank, "--manifest", str(tmp_path / "other.manifest.json")]) == 2
    assert "the selection ran on other sources than --data" in capsys.readouterr().err


def test_a_manifest_of_the_fully_rated_items_belongs_to_the_data_that_holds_them():
    from precomet.provenance import check_manifest_belongs

    every, rated = ["a", "b", "c"], ["a", "c"]  # select drew from the rated items, rank reads every item
    manifest = {"file": "s.manifest.json", "sources_hash": sources_hash(rated), "ids_hash": sources_hash(["1"])}
    check_manifest_belongs(manifest, ["1"], [every, rated])
    with pytest.raises(PrecometError, match="s.manifest.json: the selection ran on other sources"):
        check_manifest_belongs(manifest, ["1"], [every])


def test_match_by_source_finds_each_row_by_its_text_document_or_line():
    from precomet.provenance import match_by_source

    data_ids, src, doc = ["x0", "x1", "x2", "x3"], ["a", "dup", "dup", "b"], ["d0", "d0", "d1", "d1"]
    match = match_by_source("s.jsonl", [("4", "b", None), ("x0", "a", "d0")], data_ids, src, doc)
    assert (match.ids, match.by_text, match.guessed) == (["x3", "x0"], 1, 0)
    assert match_by_source("s", [("9", "dup", "d1")], data_ids, src, doc).ids == ["x2"]  # its document
    assert match_by_source("s", [("3", "dup", None)], data_ids, src, doc).ids == ["x2"]  # line 3 of a text file
    guess = match_by_source("s", [("9", "dup", None), ("8", "dup", None)], data_ids, src, doc)
    assert (guess.ids, guess.guessed) == (["x1", "x2"], 1) and "1 of them by a text --data holds" in guess.note("s")
    with pytest.raises(PrecometError, match="1 of its 2 item.*neither ids of --data nor matched.*'9'"):
        match_by_source("s", [("x0", "a", None), ("9", "zzz", None)], data_ids, src, doc)
    with pytest.raises(PrecometError, match="carry no 'src'.*select again"):
        match_by_source("s", [("9", None, None)], data_ids, src, doc)
    with pytest.raises(PrecometError, match="neither ids"):  # one item cannot stand for two rows
        match_by_source("s", [("x0", "a", None), ("7", "a", None)], data_ids, src, doc)


def test_a_subset_selected_from_plain_text_ranks_against_its_campaign(tmp_path, capsys, caplog):
    from precomet.io.jsonl import write_jsonl
    from precomet.simulate import simulate_campaign

    campaign = simulate_campaign(n_items=40, n_systems=4, seed=3)
    human = campaign.score("human").copy()
    human[30:] = np.nan  # the last ten items were never annotated
    campaign = campaign.with_scores("human", human)
    write_jsonl(campaign, tmp_path / "c.jsonl")
    (tmp_path / "s.txt").write_text("".join(text + "\n" for text in campaign.src), encoding="utf-8")
    select = ["select", "--data", str(tmp_path / "s.txt"), "--method", "random", "--budget", "20"]
    assert main([*select, "-o", str(tmp_path / "sub.jsonl")]) == 0
    chosen = [json.loads(line)["id"] for line in (tmp_path / "sub.jsonl").read_text().splitlines()]
    expected = sorted(str(campaign.ids[int(i) - 1]) for i in chosen if int(i) <= 30)
    rank = ["rank", "--data", str(tmp_path / "c.jsonl"), "--subset", str(tmp_path / "sub.jsonl"), "--rounds", "20"]
    assert main([*rank, "-o", str(tmp_path / "r.json")]) == 0
    assert "20 of its 20 ids are not ids of --data" in caplog.text and "matched by source text" in caplog.text
    assert f"using the {len(expected)} that are" in caplog.text
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["signature"]["items"] == len(expected)
    capsys.readouterr()


def test_the_same_texts_composed_otherwise_belong_to_the_same_data(tmp_path, capsys):
    """ "café" with U+00E9 (NFC) or with e + U+0301 (NFD) is one text: subsets, manifests and score files pass."""
    import unicodedata

    from tests.bad_inputs import items, jsonl

    def data(form):
        rows = items(i0={"src": unicodedata.normalize(form, "café one two")})
        path = tmp_path / f"{form}.jsonl"
        path.write_text(jsonl(rows), encoding="utf-8")
        return str(path)

    nfc, nfd = data("NFC"), data("NFD")
    for picked, other in ((nfc, nfd), (nfd, nfc)):
        out = str(tmp_path / "sub.jsonl")
        assert main(["select", "--data", picked, "--method", "random", "--budget", "4", "-o", out]) == 0
        assert main(["rank", "--data", other, "--subset", out, "--rounds", "20"]) == 0
        scores = str(tmp_path / "u.jsonl")
        assert main(["utilities", "--data", picked, "--method", "metric_avg", "--metric", "m", "-o", scores]) == 0
        assert main(["select", "--data", other, "--utility-file", scores, "--budget", "1", "-o", out]) == 0
    capsys.readouterr()


def test_scores_of_unrated_items_too_select_on_the_rated_ones(tmp_path, capsys):
    from tests.bad_inputs import items, jsonl

    rows = items()
    del rows[2]["scores"]["A"]["human"]  # item c lacks one human score: select leaves it out
    (tmp_path / "d.jsonl").write_text(jsonl(rows), encoding="utf-8")
    data, scores = str(tmp_path / "d.jsonl"), str(tmp_path / "u.jsonl")
    util = ["utilities", "--data", data, "--keep-incomplete", "--method", "metric_avg", "--metric", "m", "-o", scores]
    assert main(util) == 0
    subset = str(tmp_path / "s.jsonl")
    assert main(["select", "--data", data, "--utility-file", scores, "--budget", "1", "-o", subset]) == 0
    capsys.readouterr()
