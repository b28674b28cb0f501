"""The three first-hour stories of issue 21, end to end through the command line on small real data, without a
file written by hand:

1. "New sources, no outputs yet: give me the 20 % to annotate" — plain-text sources in, a subset and an
   annotation batch with the texts out.
2. "Which method should I use on my finished campaign, and how much can I save?" — a recommendation in the
   user's units (annotation time), with an interval.
3. "I annotated my subset: rank the systems" — a ranking of the subset that says how the subset differs from
   the test set and offers reweighted means.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.realdata]


def precomet(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "precomet", "--no-progress", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_new_sources_to_an_annotation_batch(raw_data, tmp_path):
    lines = (raw_data / "mt-metrics-eval-v2" / "wmt23" / "sources" / "zh-en.txt").read_text().splitlines()[:200]
    (tmp_path / "sources.txt").write_text("\n".join(lines) + "\n")  # what a user has: one source per line
    done = precomet(
        "select",
        "--data",
        "sources.txt",
        "--checkpoint",
        str(REPO / "checkpoints" / "metric-avg-e5"),
        "--proportion",
        "0.2",
        "-o",
        "subset.jsonl",
        "--batch",
        "batch.csv",
        cwd=tmp_path,
    )
    subset = [json.loads(line) for line in (tmp_path / "subset.jsonl").read_text().splitlines()]
    assert len(subset) == 40 and "selected 40 of 200 items" in done.stdout
    with open(tmp_path / "batch.csv", newline="", encoding="utf-8") as handle:
        batch = list(csv.DictReader(handle))
    assert sorted(row["id"] for row in batch) == sorted(row["id"] for row in subset)
    assert all(row["src"] == lines[int(row["id"]) - 1] for row in batch)  # ids are line numbers, texts intact
    assert (tmp_path / "subset.manifest.json").is_file()


def test_which_method_and_how_much_time_it_saves(raw_data, tmp_path):
    done = precomet(
        "benchmark",
        "--data",
        str(raw_data / "mt-metrics-eval-v2"),
        "--campaign",
        "wmt23/en-de",
        "--human",
        "mqm",
        "--methods",
        "metric_avg,metric_var",
        "--metric",
        "MetricX-23-c",
        "--budget-unit",
        "cost",
        "--seeds",
        "10",
        "--no-oracle",
        "-o",
        "bench.json",
        cwd=tmp_path,
    )
    assert "recommendation:" in done.stdout and "annotation time" in done.stdout
    assert " h " in done.stdout or " min" in done.stdout  # the budget in the user's units
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["recommendation"]


def test_rank_an_annotated_subset(raw_data, tmp_path):
    data = ["--data", str(raw_data / "mt-metrics-eval-v2"), "--campaign", "wmt23/zh-en", "--human", "mqm"]
    precomet("select", *data, "--method", "random", "--proportion", "0.2", "--balance", "domain", "-o", "s.jsonl",
             cwd=tmp_path)  # fmt: skip
    done = precomet("rank", *data, "--subset", "s.jsonl", "--reweight", "domain", "--rounds", "100", "-o", "r.json",
                    cwd=tmp_path)  # fmt: skip
    assert "differ from the test set" in done.stderr  # a domain-balanced subset is not the test set's mix
    ranking = json.loads((tmp_path / "r.json").read_text())
    assert ranking["full_data"]["kendall_tau"] is not None
    assert all("reweighted_mean" in row for row in ranking["systems"])
