"""Do checkpoints written by an earlier precomet read the same now, and does training give the same checkpoints?

The earlier commit (default 6c64227, precomet 0.18.0) runs from a temporary git worktree in its own process: on a
tiny random-init XLM-R it writes two Hugging Face encoder checkpoints without a Trainer (``mean`` and ``mix`` heads)
and trains three (fine-tuned ``mix``, frozen ``mix``, frozen ``mean``; configs/tiny.yaml, one epoch, the 0.18 keys
``model.encoder``/``model.freeze_encoder``), and predicts 20 sources with each. This checkout then loads the five
checkpoints and predicts the same sources, and trains the three runs again (the same settings in the keys of 0.19 and
later, ``model.backbone`` and ``model.fine_tune``: 0.20 refuses 0.18's), and prints the largest difference of the
predictions (0 = bit for bit) and their Pearson correlation.

    .venv/bin/python benchmarks/check_checkpoint_compat.py [--old 6c64227]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAINED = {"trained-mix-ft": ("mix", False), "trained-mix-frozen": ("mix", True), "trained-mean-frozen": ("mean", True)}

ROWS = """
from precomet.campaign import HUMAN
from precomet.simulate import simulate_history


def history_rows():
    rows = []
    for campaign in simulate_history(n_campaigns=2, n_items=16, n_systems=3, seed=5):
        human = campaign.score(HUMAN).mean(axis=1)
        rows += [
            {"src": campaign.src[i], "target": float(-human[i]), "campaign": campaign.name, "doc": campaign.doc[i],
             "lp": campaign.lp, "id": campaign.ids[i], "method": "neg_avg", "normalisation": "zscore"}
            for i in range(len(campaign))
        ]
    return rows


def train_run(train, out, encoder, pooling, frozen):
    overrides = {"model.encoder": str(encoder), "model.pooling": pooling, "model.freeze_encoder": frozen,
                 "trainer.max_epochs": 1}
    train(history_rows(), out_dir=out, config="configs/tiny.yaml", progress=False, overrides=overrides)


def train_run_now(train, out, encoder, pooling, frozen):  # this checkout: 0.18's keys are refused since 0.20.0
    overrides = {"model.backbone": str(encoder), "model.pooling": pooling, "model.fine_tune": not frozen,
                 "trainer.max_epochs": 1}
    train(history_rows(), out_dir=out, config="configs/tiny.yaml", progress=False, overrides=overrides)
"""

WRITER = (
    ROWS
    + """
import json, sys, torch
from pathlib import Path
from precomet.estimator import predict_sources, train
from precomet.estimator.checkpoint import save_checkpoint
from precomet.estimator.model import UtilityEstimator, load_encoder
from precomet.estimator.tiny import build_tiny_encoder

out = Path(sys.argv[1])
texts = [r["src"] for r in history_rows()]
encoder = build_tiny_encoder(out / "enc", texts=texts, seed=0)
predicted = {}
for pooling in ("mean", "mix"):
    model, tokenizer = load_encoder(str(encoder))
    torch.manual_seed(0)
    network = UtilityEstimator(model, pooling=pooling, hidden_sizes=(16, 8), dropout=0.1).eval()
    meta = {"target": {"method": "neg_avg"}, "direction": "higher_first", "standardisation": {"mean": 0.5, "std": 2.0},
            "pooling": pooling, "hidden_sizes": [16, 8], "max_length": 32}
    save_checkpoint(out / f"saved-{pooling}", model=network, tokenizer=tokenizer, meta=meta)
    predicted[f"saved-{pooling}"] = predict_sources(out / f"saved-{pooling}", texts[:20]).tolist()
for name, (pooling, frozen) in json.loads(sys.argv[2]).items():
    train_run(train, out / name, encoder, pooling, frozen)
    predicted[name] = predict_sources(out / name, texts[:20]).tolist()
(out / "predictions.json").write_text(json.dumps(predicted))
"""
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="6c64227", help="the earlier commit that writes the checkpoints")
    args = parser.parse_args()

    import numpy as np

    from precomet.estimator import predict_sources, train

    namespace: dict = {}
    exec(ROWS, namespace)  # noqa: S102 -- the same rows and training call on both sides
    texts = [r["src"] for r in namespace["history_rows"]()]
    with tempfile.TemporaryDirectory(prefix="precomet-compat-") as temp:
        work, old_tree = Path(temp), Path(temp) / "old"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(old_tree), args.old], check=True
        )
        try:
            env = {**os.environ, "PYTHONPATH": str(old_tree), "PRECOMET_CACHE": str(work / "cache-old")}
            subprocess.run(
                [sys.executable, "-c", WRITER, str(work / "out"), json.dumps(TRAINED)],
                cwd=old_tree,
                env=env,
                check=True,
                capture_output=True,
            )
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old_tree)], check=True)
        os.environ["PRECOMET_CACHE"] = str(work / "cache-new")
        old = json.loads((work / "out" / "predictions.json").read_text())
        print(f"Predictions of 20 sources: {args.old} vs this checkout\n")
        print(
            "| checkpoint | read by this checkout: max abs difference | trained by this checkout: max abs "
            "difference | Pearson |"
        )
        print("|---|---:|---:|---:|")
        for name, values in old.items():
            then = np.asarray(values)
            read = float(np.max(np.abs(predict_sources(work / "out" / name, texts[:20]) - then)))
            retrained, pearson = "–", "–"
            if name in TRAINED:
                namespace["train_run_now"](train, work / "new" / name, work / "out" / "enc", *TRAINED[name])
                again = predict_sources(work / "new" / name, texts[:20])
                retrained = f"{float(np.max(np.abs(again - then))):.3g}"
                pearson = f"{float(np.corrcoef(again, then)[0, 1]):.4f}"
            print(f"| {name} | {read:.3g} | {retrained} | {pearson} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
