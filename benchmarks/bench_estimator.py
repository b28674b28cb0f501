"""Estimator speed on CPU with the MiniLM config, in one run: training on ~5k distinct targets with a frozen
encoder (cached features), and prediction sources/s on short (TED en-de sentences) and long (WMT23 en-de
paragraphs) sources, fp32 and dynamic int8, with the int8-vs-fp32 correlation.

    .venv/bin/python benchmarks/bench_estimator.py [--threads 2] [--n-predict 1000] [--n-train 5000]
        [--checkpoint DIR]   # predict with a trained checkpoint (int8 fidelity on real predictions)

Wall-clock sources/s depend on how much CPU the (shared) machine gives the process, so each line also
reports the CPU cores actually used and sources per CPU-second (``time.process_time``). Training targets
are random normal (speed only); the training sources are TED en-de sentences, repeated copies made
distinct by a counter suffix so that every one is encoded.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from paths import RAW  # benchmarks/paths.py (the script's folder is on sys.path)


def source_sets() -> dict[str, list[str]]:
    """``{"short": TED en-de sentences, "long": WMT23 en-de paragraphs}`` (simulated when the data is absent)."""
    if not RAW.exists():
        from precomet.simulate import simulate_campaign

        src = list(simulate_campaign(n_items=500, seed=0).src)
        return {"short (simulated)": src, "long (simulated x4)": [" ".join([s] * 4) for s in src]}
    from precomet.io import load

    ted = list(load(RAW / "wmt-mqm-ted" / "ende" / "mqm_ted_ende.tsv", complete=False).src)
    wmt = list(load(RAW / "mt-metrics-eval-v2", campaign="wmt23/en-de", human="mqm", complete=False).src)
    return {"short: TED en-de": ted, "long: WMT23 en-de": wmt}


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-predict", type=int, default=1000, help="sources per prediction run (cycled)")
    parser.add_argument("--n-train", type=int, default=5000, help="0 skips the training run (needs --checkpoint)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--checkpoint", help="predict with this checkpoint instead of the one trained here")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from precomet.estimator import load_estimator, predict_sources, train

    config = Path(__file__).resolve().parents[1] / "configs" / "precomet-minilm.yaml"
    sets = source_sets()
    short = next(iter(sets.values()))
    rng = np.random.default_rng(0)
    train_src = [
        s if i < len(short) else f"{s} ({i // len(short)})"
        for i, s in ((i, short[i % len(short)]) for i in range(args.n_train))
    ]
    rows = [
        {
            "src": s,
            "target": float(rng.normal()),
            "campaign": f"c{i % 4}",
            "doc": f"d{i // 8}",
            "id": str(i),
            "method": "bench",
        }
        for i, s in enumerate(train_src)
    ]
    print(f"torch threads {args.threads}; cores visible {os.cpu_count()}; load average {os.getloadavg()[0]:.1f}")
    if args.n_train == 0 and not args.checkpoint:
        parser.error("--n-train 0 needs --checkpoint")
    with tempfile.TemporaryDirectory() as tmp:
        if args.n_train:
            result, wall, cpu = timed(
                lambda: train(
                    rows,
                    out_dir=Path(tmp) / "ckpt",
                    config=config,
                    overrides={"trainer.accelerator": "cpu"},
                    progress=False,
                )
            )
            print(
                f"train: {args.n_train} distinct TED-length targets, frozen MiniLM, {len(result.history)} epochs: "
                f"{wall:.1f} s wall, {cpu:.1f} CPU-s ({cpu / wall:.2f} cores)"
            )
        estimator = load_estimator(args.checkpoint or result.checkpoint_dir)
    print(
        f"predict with {args.checkpoint or 'the checkpoint trained above'} ({estimator.meta.pooling} pooling), "
        f"batch {args.batch_size}, max_length {estimator.meta.max_length}"
    )
    print(
        "| sources | mean chars | precision | sources/s wall | cores used | sources per CPU-s | Pearson int8 vs fp32 |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, src in sets.items():
        batch = [src[i % len(src)] for i in range(args.n_predict)]
        reference = None
        for precision in ("fp32", "int8"):
            predict_sources(estimator, batch[:64], precision=precision, progress=False)  # warm-up
            values, wall, cpu = timed(
                lambda batch=batch, precision=precision: predict_sources(
                    estimator, batch, batch_size=args.batch_size, precision=precision, progress=False
                )
            )
            corr = "" if reference is None else f"{np.corrcoef(reference, values)[0, 1]:.4f}"
            reference = values if reference is None else reference
            print(
                f"| {name} | {np.mean([len(s) for s in src]):.0f} | {precision} | {len(batch) / wall:.0f} | "
                f"{cpu / wall:.2f} | {len(batch) / cpu:.0f} | {corr} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
