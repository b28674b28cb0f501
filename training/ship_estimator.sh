#!/usr/bin/env bash
# Reproduces the shipped estimator checkpoints/metric-cons-minilm (a few minutes on 2 CPU cores):
# MetricCons^src distilled from all 22 English-source WMT21-WMT23 campaigns of ../shared: the consistency of
# each item's sentence chrF (every system's output against the reference) with the campaign's system ranking,
# z-scored per campaign, one row per distinct source; WMT24 test sources held out; frozen offline MiniLM
# encoder (named, not copied) + scalar mix + small MLP head. The target is the one training/protocol.py
# found most useful (BENCHMARKS.md). Only precomet.json and head.safetensors are kept (git tracks them).
#   bash training/ship_estimator.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
RAW=${PRECOMET_RAW_DATA:-../shared/data/raw}
OUT=${1:-checkpoints/metric-cons-minilm}
BIN=${PRECOMET_BIN:-.venv/bin}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$BIN/precomet" build-targets --data "$RAW/wmt-news-systems:wmt2[123]/*" --holdout "$RAW/wmt24-esa:en-*" \
    --reference-metric chrf --metric chrF --method metric_cons -o "$WORK/targets.jsonl"
"$BIN/precomet" train --config configs/precomet-minilm.yaml --train "$WORK/targets.jsonl" --out "$WORK/ckpt" \
    --trainer.accelerator cpu
rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
cp "$WORK/ckpt/precomet.json" "$WORK/ckpt/head.safetensors" "$OUT.tmp/"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
echo "wrote $OUT ($(du -sh "$OUT" | cut -f1))"
