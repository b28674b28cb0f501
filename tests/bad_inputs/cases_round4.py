"""Round four (issue 51): the features of 0.8–0.15 under bad input — one case per failure the matrix found, each
failing without its fix."""

from __future__ import annotations

import json

from tests.bad_inputs import Case

NO_OUTPUT = "".join(
    json.dumps({"id": f"x{i}", "src": f"source {i} " + "y" * i, **({} if i == 3 else {"tgt": {"A": f"a{i}"}})}) + "\n"
    for i in range(10)
)

CASES = {
    "select-appraise-batch-of-an-item-without-outputs": Case(
        "select --data nout.jsonl --method length --budget 8 -o {d}/s.jsonl --batch {d}/b.json".split(),
        {"nout.jsonl": NO_OUTPUT},
        ("'x3'", "no system output", ".jsonl"),
    ),
}
