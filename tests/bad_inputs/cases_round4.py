"""Round four (issue 51): the features of 0.8–0.15 under bad input — one case per failure the matrix found, each
failing without its fix."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bad_inputs import GOOD, Case, P, shipped_checkpoint

NO_OUTPUT = "".join(
    json.dumps({"id": f"x{i}", "src": f"source {i} " + "y" * i, **({} if i == 3 else {"tgt": {"A": f"a{i}"}})}) + "\n"
    for i in range(10)
)

NEGATIVE_COUNT = "".join(
    json.dumps(
        {
            "id": f"x{i}",
            "src": f"source {i}",
            "scores": {
                s: {"human": float((i * 7 + k * 3) % 11), "human_n": -2 if (i, s) == (2, "A") else 1}
                for k, s in enumerate("ABC")
            },
        }
    )
    + "\n"
    for i in range(12)
)


def _deep_meta(folder: Path) -> None:
    (shipped_checkpoint(folder) / "precomet.json").write_text("[" * 200_000 + "]" * 200_000)


CASES = {
    "predict-checkpoint-meta-nested-200k-deep": Case(
        P.split(), {"src.txt": "one source\n"}, ("ckpt/precomet.json", "nested too deeply"), _deep_meta
    ),
    "select-two-outputs-on-standard-output": Case(
        "select --data nout.jsonl --method length --budget 2 -o - --batch /dev/stdout".split(),
        {"nout.jsonl": NO_OUTPUT},
        ("- and /dev/stdout", "both standard output"),
    ),
    "benchmark-crowd-with-null-orderings": Case(
        "benchmark --data items.jsonl --methods metric_var --metric m --props 0.5 --crowd 2 --crowd-runs 3"
        " --null-orderings 50 -o {d}/b.json".split(),
        {"items.jsonl": GOOD},
        ("--crowd", "--null-orderings"),
    ),
    "select-appraise-batch-of-an-item-without-outputs": Case(
        "select --data nout.jsonl --method length --budget 8 -o {d}/s.jsonl --batch {d}/b.json"
        " --batch-format appraise".split(),
        {"nout.jsonl": NO_OUTPUT},
        ("'x3'", "no system output", ".jsonl"),
    ),
    "build-targets-item-effect-negative-judgement-count": Case(
        "build-targets --data neg.jsonl --method item_effect --normalise none -o {d}/t.jsonl".split(),
        {"neg.jsonl": NEGATIVE_COUNT},
        ("human_n", "'x2'", "'A'", "-2", "whole number"),
    ),
    "build-targets-item-effect-fractional-judgement-count": Case(
        "build-targets --data neg.jsonl --method item_effect --normalise none -o {d}/t.jsonl".split(),
        {"neg.jsonl": NEGATIVE_COUNT.replace('"human_n": -2', '"human_n": 1.5')},
        ("human_n", "'x2'", "1.5"),
    ),
}
