"""The first-hour stories of issue 21 and the WMT-organiser stories of issue 32, end to end through the command
line on small real data, without a file written by hand.

Issue 21:

1. "New sources, no outputs yet: give me the 20 % to annotate" — plain-text sources in, a subset and an
   annotation batch with the texts out.
2. "Which method should I use on my finished campaign, and how much can I save?" — a recommendation in the
   user's units (annotation time), with an interval.
3. "I annotated my subset: rank the systems" — a ranking of the subset that says how the subset differs from
   the test set and offers reweighted means.

Issue 32 (the organiser's workflow):

4. "I have ten hours of annotators": a budget in hours on plain-text sources, the batch without a subset file,
   the cost printed in hours and kept in seconds with its unit.
5. "Rank the subset I picked from the plain-text file against the campaign it came from": ids matched by source
   text, then the ranking as a LaTeX table.
6. "Was my subset a good one?": the fixed subset judged against random subsets of its size.
7. "Nothing is encoded twice": a second predict of the same file, and a select on it, encode nothing.
8. "My long run was interrupted": the message says what was kept and gives the command that resumes, which
   finishes the run; and the batch as Appraise imports it.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.realdata]


SHIPPED = REPO / "checkpoints" / "metric-avg-e5"


def precomet(*argv: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "precomet", "--no-progress", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "PRECOMET_CACHE": str(cwd / "encoder-cache")},
        timeout=900,
    )
    assert done.returncode == 0 or not check, done.stderr
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


def _zh_sources(raw_data: Path, tmp_path: Path, n: int | None = None) -> list[str]:
    lines = (raw_data / "mt-metrics-eval-v2" / "wmt23" / "sources" / "zh-en.txt").read_text().splitlines()
    lines = lines if n is None else lines[:n]
    (tmp_path / "sources.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


def test_a_budget_in_hours_on_plain_text_sources(raw_data, tmp_path):
    _zh_sources(raw_data, tmp_path, 200)
    refused = precomet("select", "--data", "sources.txt", "--checkpoint", str(SHIPPED), "--budget-time", "20m",
                       "-o", "subset.jsonl", cwd=tmp_path, check=False)  # fmt: skip
    assert refused.returncode == 2 and "--outputs-per-item N" in refused.stderr  # sources alone: how many outputs?
    done = precomet("select", "--data", "sources.txt", "--checkpoint", str(SHIPPED), "--budget-time", "20m",
                    "--outputs-per-item", "3", "-o", "subset.jsonl", "--batch", "b.csv", cwd=tmp_path)  # fmt: skip
    assert " min" in done.stdout and "judgements of" in done.stdout
    manifest = json.loads((tmp_path / "subset.manifest.json").read_text())
    assert manifest["budget"]["cost_unit"] == "seconds" and manifest["budget"]["budget_cost"] == 1200
    subset = [json.loads(line) for line in (tmp_path / "subset.jsonl").read_text().splitlines()]
    assert 0 < 3 * sum(row["cost"] for row in subset) <= 1200  # each row's cost is per output; 3 outputs an item
    alone = precomet("select", "--data", "sources.txt", "--checkpoint", str(SHIPPED), "--budget-time", "1h30m",
                     "--outputs-per-item", "3", "--batch", "only.csv", cwd=tmp_path)  # fmt: skip
    assert (tmp_path / "only.csv").is_file() and "annotation batch" in alone.stdout
    manifest = json.loads((tmp_path / "only.csv.manifest.json").read_text())
    assert manifest["budget"]["cost_unit"] == "seconds" and manifest["budget"]["budget_cost"] == 5400


def test_a_subset_of_the_plain_text_file_is_ranked_and_judged_against_its_campaign(raw_data, tmp_path):
    _zh_sources(raw_data, tmp_path)
    precomet("select", "--data", "sources.txt", "--method", "random", "--proportion", "0.2", "-o", "zh-subset.jsonl",
             cwd=tmp_path)  # fmt: skip
    data = ["--data", str(raw_data / "mt-metrics-eval-v2"), "--campaign", "wmt23/zh-en", "--human", "mqm"]
    ranked = precomet("rank", *data, "--subset", "zh-subset.jsonl", "--keep-incomplete", "--rounds", "50",
                      "--table", "ranking.tex", "-o", "r.json", cwd=tmp_path)  # fmt: skip
    assert "matched" in ranked.stderr + ranked.stdout
    assert "\\begin{tabular}" in (tmp_path / "ranking.tex").read_text()
    judged = precomet("benchmark", *data, "--subset", "zh-subset.jsonl", "--null-orderings", "20", "-o", "j.json",
                      cwd=tmp_path)  # fmt: skip
    result = json.loads((tmp_path / "j.json").read_text())
    assert "percentile" in json.dumps(result) and "percentile" in judged.stdout


def test_a_second_predict_and_a_select_on_the_same_file_encode_nothing(raw_data, tmp_path):
    _zh_sources(raw_data, tmp_path, 120)
    first = precomet("predict", "--checkpoint", str(SHIPPED), "--data", "sources.txt", "-o", "p1.jsonl", cwd=tmp_path)
    distinct = len(set(_zh_sources(raw_data, tmp_path, 120)))
    assert f"encoder cache: {distinct} text(s) encoded" in first.stderr and "sources/s)" in first.stdout
    again = precomet("predict", "--checkpoint", str(SHIPPED), "--data", "sources.txt", "-o", "p2.jsonl", cwd=tmp_path)
    assert "encoder cache: 0 text(s) encoded" in again.stderr
    chosen = precomet("select", "--data", "sources.txt", "--checkpoint", str(SHIPPED), "--budget", "10",
                      "-o", "s.jsonl", cwd=tmp_path)  # fmt: skip
    assert "encoder cache: 0 text(s) encoded" in chosen.stderr


def test_an_interrupted_predict_says_how_to_resume_and_the_batch_goes_to_appraise(raw_data, tmp_path):
    _zh_sources(raw_data, tmp_path, 400)
    # Without the coverage nothing is encoded before the pool (the coverage check would encode all 400 sources up
    # front, and the chunks after the first would then take milliseconds): every chunk encodes its own 40 sources,
    # so the interrupt sent after the first lands with seconds of chunks still to go.
    from safetensors.torch import load_file, save_file

    from precomet.estimator.checkpoint import COVERAGE_PREFIX

    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(SHIPPED, checkpoint)
    head = load_file(str(checkpoint / "head.safetensors"))
    save_file(
        {k: v for k, v in head.items() if not k.startswith(COVERAGE_PREFIX)}, str(checkpoint / "head.safetensors")
    )
    argv = ["predict", "--checkpoint", str(checkpoint), "--data", "sources.txt", "--chunk-size", "40",
            "--resume-dir", "kept", "-o", "p.jsonl"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "PRECOMET_CACHE": str(tmp_path / "encoder-cache")}
    child = subprocess.Popen([sys.executable, "-m", "precomet", *argv], cwd=tmp_path, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 600
    while not list((tmp_path / "kept").glob("*.npz")) and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=300)
    if child.returncode == 0:
        pytest.skip("the run finished before the interrupt arrived (a fast machine)")
    assert child.returncode == 130, err
    assert "predicted chunk(s)" in err and "kept in kept" in err
    command = shlex.split(err.split("to resume, run the same command: ")[1].strip())
    assert command[0] == "precomet" and command[1:] == argv
    done = precomet(*command[1:], cwd=tmp_path)
    assert "chunks were read back from kept" in done.stdout
    assert len((tmp_path / "p.jsonl").read_text().splitlines()) == 401  # signature + every source
    data = ["--data", str(raw_data / "mt-metrics-eval-v2"), "--campaign", "wmt23/zh-en", "--human", "mqm"]
    precomet("select", *data, "--method", "random", "--budget", "5", "--batch", "batch.json",
             "--batch-format", "appraise", cwd=tmp_path)  # fmt: skip
    batches = json.loads((tmp_path / "batch.json").read_text(encoding="utf-8"))
    items = [item for batch in batches for item in batch["items"]]
    assert batches[0]["task"]["sourceLanguage"] == "zho" and batches[0]["task"]["targetLanguage"] == "eng"
    assert len({item["_item"].split(" | ")[1] for item in items}) == 5 and all(item["targetText"] for item in items)
