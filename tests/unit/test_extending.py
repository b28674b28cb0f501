"""Extension points (issue 23): register_utility / register_format / register_encoder, the examples of
docs/extending.md run on tiny data, and the facts read from the one utility record."""

from __future__ import annotations

import numpy as np
import pytest

import precomet.io as pio
from precomet.benchmark import crowd as cr
from precomet.encoders.registry import ENCODERS, register_encoder
from precomet.errors import DataError, PrecometError
from precomet.selection.source_selectors import SELECTORS, get_selector, register_selector
from precomet.simulate import simulate_campaign
from precomet.utilities import UTILITY_METHODS, UtilitySpec, compute_utility, register_utility
from precomet.waves.choosers import CHOOSERS, Chooser, register_chooser
from tests.conftest import REPO
from tests.integration.test_docs_examples import extract_blocks

PAGE = REPO / "docs" / "extending.md"


@pytest.fixture(autouse=True)
def registries():
    """Every registry as it was before the test."""
    tables = [UTILITY_METHODS, pio.LOADERS, pio.DETECTORS, ENCODERS, SELECTORS, CHOOSERS]
    saved = [dict(table) for table in tables]
    yield
    for table, before in zip(tables, saved):
        table.clear()
        table.update(before)


def test_the_five_examples_of_the_page_run(tmp_path, monkeypatch):
    blocks = [block for block in extract_blocks(PAGE) if block.lang == "python"]
    assert len(blocks) == 5 and not any(block.skip for block in blocks)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    for block in blocks:
        exec(compile(block.code, block.id, "exec"), namespace)
    assert UTILITY_METHODS["score_range"].label == "Range"
    assert pio.detect_format(tmp_path / "tiny.long.tsv") == "long-tsv"
    assert "word-shape" in ENCODERS
    assert "one-per-text" in SELECTORS
    assert CHOOSERS["metric-spread"].reads == {"metric"}
    (tmp_path / "bad.long.tsv").write_text("1\tA\tsrc\tout\t0\nonly\ttwo\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.long.tsv:2: expected 5"):
        pio.load(tmp_path / "bad.long.tsv")


def _constant(campaign, *, metric, budget, seed, options):
    return np.ones(len(campaign))


def test_register_utility_checks_the_name_and_refuses_a_duplicate():
    spec = UtilitySpec(_constant, "ones", needs_score=False, min_systems=0)
    register_utility("ones", spec)
    assert UTILITY_METHODS["ones"].label == "ones"  # the label defaults to the name
    with pytest.raises(PrecometError, match="utility 'ones' is already registered; pass replace=True"):
        register_utility("ones", spec)
    with pytest.raises(PrecometError, match="utility 'metric_avg' is already registered"):
        register_utility("metric_avg", spec)
    register_utility(
        "ones", UtilitySpec(_constant, "ones", needs_score=False, min_systems=0, label="One"), replace=True
    )
    assert UTILITY_METHODS["ones"].label == "One"
    for bad in ("", "Ones", "a,b", "a b", "hf:x", "-x", "x=1"):
        with pytest.raises(PrecometError, match="invalid utility name"):
            register_utility(bad, spec)
    assert compute_utility(simulate_campaign(n_items=10, n_systems=3, seed=0), "ones").tolist() == [1.0] * 10


def test_a_registered_utility_is_checked_when_registered_and_when_it_answers():
    """A bare function, a spec whose fn is not callable, or values that cannot rank the items (text, all NaN,
    infinity) are PrecometErrors naming the utility, not AttributeError/TypeError/ValueError from deep inside."""
    with pytest.raises(PrecometError, match="spec must be a UtilitySpec.*got a function"):
        register_utility("bare", _constant)  # type: ignore[arg-type]
    with pytest.raises(PrecometError, match="whose fn is a int"):
        register_utility("number", UtilitySpec(42, "x"))  # type: ignore[arg-type]
    campaign = simulate_campaign(n_items=6, n_systems=3, seed=0)
    answers = {
        "text": (lambda c, **_: ["a"] * len(c), "not numbers"),
        "nan": (lambda c, **_: np.full(len(c), np.nan), "all NaN"),
        "inf": (lambda c, **_: np.r_[np.inf, np.ones(len(c) - 1)], "infinite"),
        "short": (lambda c, **_: np.ones(2), r"shape \(2,\)"),
    }
    for name, (fn, message) in answers.items():
        register_utility(name, UtilitySpec(fn, name, needs_score=False, min_systems=0))
        with pytest.raises(PrecometError, match=f"utility '{name}' returned.*{message}|{message}"):
            compute_utility(campaign, name)


def test_register_format_and_encoder_refuse_a_taken_name():
    with pytest.raises(PrecometError, match="input format 'csv' is already registered"):
        pio.register_format("csv", lambda path: None, detect=lambda path: False)
    assert "csv" not in pio.DETECTORS
    with pytest.raises(PrecometError, match="encoder 'length' is already registered"):
        register_encoder("length", ENCODERS["surface"])
    with pytest.raises(PrecometError, match="invalid encoder name 'hf:x'"):
        register_encoder("hf:x", ENCODERS["surface"])


def test_builtin_records_carry_labels_and_system_free():
    assert {name for name, spec in UTILITY_METHODS.items() if spec.system_free} == {"kmeans", "random", "length"}
    assert UTILITY_METHODS["irt_diffdisc"].label == "DiffDisc" and UTILITY_METHODS["kmeans"].label == "k-means"
    assert all(spec.label and spec.description for spec in UTILITY_METHODS.values())


@pytest.mark.parametrize("system_free", [True, False])
def test_crowd_computes_a_system_free_utility_once(system_free):
    calls = []

    def counted(campaign, *, metric, budget, seed, options):
        calls.append(campaign.systems)
        return np.arange(len(campaign), dtype=float)

    register_utility("counted", UtilitySpec(counted, "item order", needs_score=False, system_free=system_free))
    campaign = simulate_campaign(n_items=30, n_systems=6, seed=1)
    cr.run_crowd_benchmark(
        campaign, methods=["counted"], crowd=3, runs=4, props=[0.2, 0.5], seeds=2, permutations=10, controls=False
    )
    distinct = len(set(cr.draw_crowds(campaign.systems, k=3, runs=4)))
    assert distinct > 1 and len(calls) == (1 if system_free else distinct)


@pytest.mark.parametrize("forwards_metric", [True, False])
def test_the_utilities_cli_hands_the_metric_to_a_utility_that_forwards_the_metric(tmp_path, forwards_metric):
    from precomet.cli import main
    from precomet.io.utility_files import read_utilities

    given = []

    def handed_on(campaign, *, metric, budget, seed, options):
        given.append(metric)
        return np.ones(len(campaign))

    spec = UtilitySpec(handed_on, "ones", needs_score=False, min_systems=0, forwards_metric=forwards_metric)
    register_utility("handed-on", spec)
    data, out = tmp_path / "sim.jsonl", tmp_path / "u.jsonl"
    pio.write_jsonl(simulate_campaign(n_items=6, n_systems=3, seed=0), data)
    argv = ["utilities", "--data", str(data), "--method", "handed-on", "--metric", "MetricSim", "-o", str(out)]
    assert main(argv) == 0
    expected = "MetricSim" if forwards_metric else None
    assert given == [expected] and read_utilities(out)[2]["metric"] == expected


def test_one_registered_encoder_serves_every_place_that_embeds_text(tmp_path):
    """Issue 33: diversity, k-means on outputs and DiffUse name their encoder from the one registry."""
    from precomet.encoders import SentenceEncoder
    from precomet.encoders.disk import no_disk_cache

    seen: set[str] = set()

    class Shape(SentenceEncoder):
        name = "shape"
        languages = "any"
        dim = 3

        def _encode_batch(self, texts: list[str]) -> np.ndarray:
            seen.update(texts)
            return np.array([[len(t), len(t.split()), t.count("a") + 1] for t in texts], dtype=np.float32)

    register_encoder("shape", Shape)
    campaign = simulate_campaign(n_items=10, n_systems=3, seed=0)
    outputs = {text for system in campaign.systems for text in campaign.outputs[system]}
    with no_disk_cache():
        for method, options in [("diversity", {}), ("kmeans_outputs", {}), ("diffuse", {})]:
            u = compute_utility(campaign, method, budget=3, seed=0, options={"encoder": "shape", **options})
            assert u.shape == (10,) and np.isfinite(u).all(), method
    assert outputs <= seen
    with pytest.raises(PrecometError, match="apply to a sentence-transformers model"):
        compute_utility(campaign, "diversity", options={"encoder": "shape", "device": "cuda"})
    with pytest.raises(PrecometError, match="unknown encoder 'nope'.*st:NAME"):
        compute_utility(campaign, "diversity", options={"encoder": "nope"})


def test_register_selector_checks_the_name_and_refuses_a_duplicate():
    def keep(utility, sources, *, seed, options):
        return lambda budget: np.asarray(utility, dtype=float)

    register_selector("keep", keep)
    assert get_selector("keep")([1.0, 2.0], ["a", "b"], seed=0, options={})(1).tolist() == [1.0, 2.0]
    with pytest.raises(PrecometError, match="selector 'top' is already registered; pass replace=True"):
        register_selector("top", keep)
    with pytest.raises(PrecometError, match="invalid selector name 'Keep'"):
        register_selector("Keep", keep)
    with pytest.raises(PrecometError, match="unknown selector 'nope'; registered: keep, strata, top"):
        get_selector("nope")


def test_register_chooser_follows_the_rule_and_refuses_what_no_chooser_reads():
    class Constant(Chooser):
        name = "constant"

        def scores(self, judged, known):
            return np.ones(len(self.length))

    register_chooser(Constant)
    with pytest.raises(PrecometError, match="chooser 'constant' is already registered; pass replace=True"):
        register_chooser(Constant)
    with pytest.raises(PrecometError, match="chooser 'learn' is already registered"):
        register_chooser(type("Learn", (Constant,), {"name": "learn"}))
    with pytest.raises(PrecometError, match="expected some of prior, metric, vectors"):
        register_chooser(type("Odd", (Constant,), {"name": "odd", "reads": frozenset({"weather"})}))
    with pytest.raises(PrecometError, match="invalid chooser name"):
        register_chooser(type("Bad", (Constant,), {"name": "Bad Name"}))
