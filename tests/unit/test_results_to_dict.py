"""Issue 33 (names): every result a user gets back has ``to_dict()``, its JSON form, and precomet's JSON writer
writes the result itself as that form."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from precomet.estimator.training import TrainResult
from precomet.io import jsonsafe
from precomet.pairwise.diffuse import iterate_order
from precomet.pairwise.preference import Preferences
from precomet.pairwise.protocol import evaluate_pairwise
from precomet.pairwise.ratings import bootstrap_ratings
from precomet.simulate import simulate_campaign


def _written(result) -> dict:
    handle = io.StringIO()
    jsonsafe.dump(result, handle)
    written = json.loads(handle.getvalue())
    assert written == jsonsafe.json_safe(result.to_dict(), float)  # NaN written as null, like every result
    return written


def test_train_result():
    result = TrainResult(Path("ckpt"), Path("ckpt/best.ckpt"), {"pearson": 0.5}, [{"epoch": 0.0}], 1.5)
    assert _written(result) == {
        "checkpoint_dir": "ckpt",
        "best_ckpt": "ckpt/best.ckpt",
        "dev_metrics": {"pearson": 0.5},
        "history": [{"epoch": 0.0}],
        "seconds": 1.5,
        "main_process": True,
    }


def test_iterative_result_keeps_the_order_labels_were_asked():
    labels = {3: "a", 0: "a", 2: "b", 1: "a", 4: "a", 5: "a", 6: "a"}
    result = iterate_order(list(labels), labels.__getitem__, p=0.2, n_min=5)
    written = _written(result)
    assert [row["item"] for row in written["labels"]] == list(labels)[: result.n_annotations]
    assert written["winner"] == result.winner and written["n_annotations"] == result.n_annotations
    assert written["decision_items"] == [int(i) for i in result.decision_items]


def test_rating_table():
    prefs = Preferences.build(
        item=list(range(8)), model_a=["x"] * 8, model_b=["y"] * 8, label=["a", "a", "a", "b", "a", "tie", "a", "b"]
    )
    table = bootstrap_ratings(prefs, rounds=20, seed=1)
    written = _written(table)
    assert written["method"] == "elo" and written["rounds"] == 20 and written["seed"] == 1
    assert [row["model"] for row in written["ratings"]] == list(table.models) == ["x", "y"]


def test_pairwise_evaluation():
    campaign = simulate_campaign(n_items=60, n_systems=3, seed=0)
    result = evaluate_pairwise(campaign, systems=list(campaign.systems[:2]), budgets=[10], seeds=2, max_budget=30)
    written = _written(result)
    assert written["success"] == jsonsafe.json_safe(result.success, float)
    assert written["signature"]["tool"].startswith("precomet") and written["iterative"]
    assert np.isfinite([row["success"] for row in written["success"]]).all()
