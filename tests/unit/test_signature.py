"""One signature helper: every result carries tool, method, version, data hash and seed the same way."""

import json

import numpy as np
import pytest

from precomet import __version__
from precomet.benchmark import BenchmarkPlan, run_benchmark
from precomet.io.utility_files import utility_signature
from precomet.provenance import items_hash, sources_hash
from precomet.rank import rank_systems
from precomet.selection import SubsetPlan, select_subset
from precomet.signature import jsonable, signature

COMMON = ("tool", "method", "precomet_version", "data_hash", "sources_hash", "seed")


def test_signature_names_campaign_and_data(tiny_campaign):
    sig = signature("precomet test", method="m", campaign=tiny_campaign, seed=3, alpha=0.5)
    assert sig == {
        "tool": "precomet test",
        "method": "m",
        "precomet_version": __version__,
        "campaign": "tiny",
        "lp": tiny_campaign.lp,
        "protocol": tiny_campaign.protocol,
        "n_items": 4,
        "data_hash": tiny_campaign.data_hash(),
        "sources_hash": sources_hash(tiny_campaign.src),
        "items_hash": items_hash(map(str, tiny_campaign.ids), tiny_campaign.src),
        "seed": 3,
        "alpha": 0.5,
    }
    assert signature("t", data_hash="abc")["data_hash"] == "abc"
    assert "data_hash" not in signature("t")


def test_parameters_become_json():
    class Opaque:
        def __repr__(self):
            return "Opaque()"

    assert jsonable({"a": Opaque(), "b": [1, 2]}) == {"a": "Opaque()", "b": [1, 2]}
    assert json.loads(json.dumps(signature("t", options={"x": Opaque()}).to_dict()))["options"] == {"x": "Opaque()"}


def test_every_result_uses_the_same_fields(tiny_campaign):
    selection = select_subset(np.arange(4.0), SubsetPlan(budget=2))
    results = {
        "select": selection.manifest(
            method="m",
            parameters={},
            data_hash=tiny_campaign.data_hash(),
            sources_hash=sources_hash(tiny_campaign.src),
        ),
        "utilities": utility_signature(
            tiny_campaign, method="metric_var", metric="metric", systems=None, budget=None, seed=0, options={}
        ),
        "rank": rank_systems(tiny_campaign, rounds=20).signature,
        "benchmark": run_benchmark(
            tiny_campaign,
            BenchmarkPlan(
                methods=["metric_var"], metric="metric", props=(0.5,), seeds=2, permutations=20, oracle=False
            ),
            progress=False,
        ).signature,
    }
    for name, sig in results.items():
        missing = [key for key in COMMON if key not in sig]
        assert not missing, f"{name} signature lacks {missing}"
        assert sig["precomet_version"] == __version__ and sig["tool"].startswith("precomet")
        assert sig["data_hash"] == tiny_campaign.data_hash()


def test_campaign_may_be_a_name_and_data_hash_is_kept_for_results_without_a_campaign():
    sig = signature("precomet predict", campaign="wmt23/en-de", data_hash="0123")
    assert sig["campaign"] == "wmt23/en-de" and sig["data_hash"] == "0123" and sig["seed"] is None


def test_a_signature_is_immutable_and_reads_like_its_json(tiny_campaign):
    sig = signature("t", campaign=tiny_campaign, seed=3, options={"k": 1})
    as_dict = sig.to_dict()
    assert list(as_dict)[:4] == ["tool", "method", "precomet_version", "campaign"] and list(as_dict)[-1] == "options"
    assert sig == as_dict and sig["options"] == {"k": 1} and dict(sig) == as_dict
    as_dict["options"]["k"] = 2  # editing the dict, or what indexing returns, never edits the signature
    sig["options"]["k"] = 3
    with pytest.raises(TypeError):
        sig.parameters["seed"] = 9  # type: ignore[index]
    with pytest.raises(AttributeError):
        sig.seed = 9  # type: ignore[misc]
    assert sig["options"] == {"k": 1}
    more = sig.with_parameters(data="x.jsonl", options={"k": 4})
    assert more["data"] == "x.jsonl" and more["options"] == {"k": 4} and "data" not in sig
    assert more["n_items"] == sig["n_items"] == len(tiny_campaign)
