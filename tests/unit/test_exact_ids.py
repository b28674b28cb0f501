"""Ids are read exactly by every reader (issue 61): an id with a leading space, a leading carriage return or a trailing
tab, kept by the JSONL pool and every batch, is the same id in a judgements CSV naming it."""

from __future__ import annotations

import csv
import json

import numpy as np

from precomet.io import load
from precomet.waves.judgements import read_judgements

ODD_IDS = [" a", "\rb", "c\t", "d"]


def test_a_judgements_csv_naming_ids_with_spaces_tabs_and_returns_is_read_exactly(tmp_path):
    pool_path = tmp_path / "pool.jsonl"
    rows = [{"id": i, "src": f"source {k}", "tgt": {"A": f"a{k}", "B": f"b{k}"}} for k, i in enumerate(ODD_IDS)]
    pool_path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    pool = load(pool_path, complete=False)
    assert list(pool.ids) == ODD_IDS
    judged = tmp_path / "judgements.csv"
    with open(judged, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "src", "score:human:A", "score:human:B"])
        for k, item in enumerate(ODD_IDS[:3]):
            writer.writerow([item, f"source {k}", 10 * k, 10 * k + 1])
    assert list(load(judged, complete=False).ids) == ODD_IDS[:3]  # the CSV reader strips nothing
    judgements = read_judgements({"canonical": [judged]}, pool, ("A", "B"))
    expected = np.array([[0.0, 1.0], [10.0, 11.0], [20.0, 21.0], [np.nan, np.nan]])
    np.testing.assert_array_equal(judgements.scores, expected)
