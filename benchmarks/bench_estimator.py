"""Estimator speed on CPU with the MiniLM config: prediction sources/s, and training time on ~5k targets
with a frozen encoder (cached features).

    .venv/bin/python benchmarks/bench_estimator.py [--threads 1] [--n-predict 2000] [--n-train 5000]

Sources are real WMT23 en-de sources (repeated to reach the size) when ../shared/data/raw is present,
simulated sentences otherwise. Targets are random normal (speed only, not quality).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

RAW = Path(os.environ.get("PRECOMET_RAW_DATA", Path(__file__).resolve().parents[2] / "shared" / "data" / "raw"))


def sources(n: int) -> tuple[list[str], str]:
    mtme = RAW / "mt-metrics-eval-v2"
    if mtme.exists():
        from precomet.io import load

        src = list(load(mtme, campaign="wmt23/en-de", human="mqm", complete=False).src)
        what = f"WMT23 en-de sources ({len(src)} unique, mean {np.mean([len(s) for s in src]):.0f} chars)"
    else:
        from precomet.simulate import simulate_campaign

        src = list(simulate_campaign(n_items=500, seed=0).src)
        what = "simulated sources"
    return [src[i % len(src)] for i in range(n)], what


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-predict", type=int, default=2000)
    parser.add_argument("--n-train", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from precomet.estimator import load_estimator, predict_sources, train

    config = Path(__file__).resolve().parents[1] / "configs" / "precomet-minilm.yaml"
    src, what = sources(max(args.n_predict, args.n_train))
    rng = np.random.default_rng(0)
    rows = [
        {"src": s, "target": float(rng.normal()), "campaign": f"c{i % 4}", "doc": f"d{i // 8}", "id": str(i), "method": "bench"}
        for i, s in enumerate(src[: args.n_train])
    ]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result = train(rows, out_dir=Path(tmp) / "ckpt", config=config, overrides={"trainer.accelerator": "cpu"}, progress=False)
        train_s = time.perf_counter() - t0
        epochs = len(result.history)
        estimator = load_estimator(result.checkpoint_dir)
        predict_sources(estimator, src[:64], progress=False)  # warm-up
        t0 = time.perf_counter()
        predict_sources(estimator, src[: args.n_predict], batch_size=args.batch_size, progress=False)
        predict_s = time.perf_counter() - t0
    print(f"data: {what}; torch threads {args.threads}; cores visible {os.cpu_count()}")
    print(f"train (frozen MiniLM, cached features): {args.n_train} targets, {epochs} epochs: {train_s:.1f} s")
    print(f"predict: {args.n_predict} sources in {predict_s:.1f} s = {args.n_predict / predict_s:.0f} sources/s (batch {args.batch_size})")


if __name__ == "__main__":
    main()
