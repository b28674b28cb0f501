"""Record what a checkpoint written before precomet recorded it knows of its training sources: their languages and
domains, and (for an estimator on a registered sentence encoder) where they lie in the encoder's space.

``precomet train`` writes ``training_languages`` and ``training_domains`` into ``precomet.json`` and the coverage
into ``head.safetensors`` (``coverage.*``) since they exist; an older checkpoint (the shipped
``checkpoints/metric-avg-e5``) lacks them, so ``predict`` / ``select --checkpoint`` cannot say which languages it
was trained on or which sources lie far from its training ones. Given the targets file it was trained on, this
script adds them, computed by the functions training uses, after checking that the file's sources *are* the
checkpoint's training sources: their fingerprint must equal ``training_sources`` in ``precomet.json`` (else nothing
is written). The head, its predictions and every other field stay as they are (the head file gains the
``coverage.*`` tensors only).

    .venv/bin/python training/record_training_profile.py CHECKPOINT_DIR TARGETS.jsonl [--cache-dir DIR]

``training/ship_estimator.sh`` needs no such step: the checkpoints it trains record all of it.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from precomet.encoders import encode_cached
from precomet.estimator.backbone import backbone_encoder
from precomet.estimator.checkpoint import HEAD
from precomet.estimator.coverage import fit_coverage, write_coverage
from precomet.estimator.fitting import training_domains
from precomet.estimator.languages import training_profile
from precomet.estimator.leakage import SourceFingerprint
from precomet.estimator.metadata import check_meta
from precomet.estimator.targets import read_targets
from precomet.outputs.atomic import output_set


def record(checkpoint: Path, targets: Path, *, cache_dir: Path | None = None) -> dict:
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
    typed = check_meta(meta, where=meta_path)
    coverage = None
    if typed.backbone:  # the training sources' vectors, as training computes them (seed: the checkpoint's)
        encoder = backbone_encoder(typed.backbone, where=meta_path)
        vectors = encode_cached(encoder, sources, cache_dir=cache_dir)
        coverage = fit_coverage(vectors, seed=int(meta.get("seed", 0)))
    head = checkpoint / HEAD
    # both files replaced together, or neither
    with output_set(meta_path, head if coverage is not None else None) as out:
        if coverage is not None:
            staged = out.path(head)
            shutil.copyfile(head, staged)
            write_coverage(staged.parent, coverage)  # staged under its own name: the head file plus coverage.*
        with out.open(meta_path) as handle:
            handle.write(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("targets", type=Path)
    parser.add_argument("--cache-dir", type=Path, help="the encoder's vector cache (as training's data.cache_dir)")
    args = parser.parse_args()
    meta = record(args.checkpoint, args.targets, cache_dir=args.cache_dir)
    print(f"{args.checkpoint}: training_languages {meta['training_languages']['shares']}")


if __name__ == "__main__":
    main()
