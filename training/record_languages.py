"""Record the training languages (and domains) in a checkpoint written before precomet recorded them.

``precomet train`` writes ``training_languages`` and ``training_domains`` into ``precomet.json`` since they exist;
an older checkpoint (the shipped ``checkpoints/metric-avg-e5``) lacks them, so ``predict`` / ``select --checkpoint``
cannot say which languages it was trained on. Given the targets file it was trained on, this script adds both
fields, computed exactly as training computes them, after checking that the file's sources *are* the checkpoint's
training sources: their fingerprint must equal ``training_sources`` in ``precomet.json`` (else nothing is written).
Nothing else in the checkpoint changes (the head, its predictions and every other field stay as they are).

    .venv/bin/python training/record_languages.py CHECKPOINT_DIR TARGETS.jsonl

``training/ship_estimator.sh`` needs no such step: the checkpoints it trains record their languages.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from precomet.estimator.checkpoint import check_meta
from precomet.estimator.fitting import training_domains
from precomet.estimator.languages import training_profile
from precomet.estimator.leakage import SourceFingerprint
from precomet.estimator.targets import read_targets
from precomet.io.atomic import atomic_write


def record(checkpoint: Path, targets: Path) -> dict:
    meta_path = checkpoint / "precomet.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    rows = read_targets(targets)
    sources = [r["src"] for r in rows]
    recorded = SourceFingerprint.from_json(meta.get("training_sources"), where=str(meta_path))
    given = SourceFingerprint.of(sources)
    if given.to_json() != recorded.to_json():
        raise SystemExit(
            f"{targets}: its {len(given)} distinct sources are not the {len(recorded)} this checkpoint was trained on"
            f" (training_sources in {meta_path}); nothing written"
        )
    meta["training_languages"] = training_profile(sources)
    meta["training_domains"] = training_domains(rows)
    check_meta(meta, where=meta_path)
    with atomic_write(meta_path) as handle:
        handle.write(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("targets", type=Path)
    args = parser.parse_args()
    meta = record(args.checkpoint, args.targets)
    print(f"{args.checkpoint}: training_languages {meta['training_languages']['shares']}")


if __name__ == "__main__":
    main()
