"""Does the training seed decide the verdict? Single heads against ensembles of heads, on dev (issue 31, part 4).

The shipped configuration (configs/precomet-e5.yaml: frozen e5-small, MetricAvg on human scores) is trained on one
half of the dev campaign (WMT22 zh-en MQM, two halves by document, as ``bench_source_suite.py --stage dev
--history human``) and judged on the other, both ways; the two halves are pooled against random orderings
(:func:`precomet.benchmark.pool_results`). Selectors: single heads with seeds 0…8, and three ensemble
checkpoints (``model.ensemble 3``; seeds 0-2, 3-5, 6-8: the members are those single heads), beside "longer
source first" and k-means on the sources. The spread of the pooled SPA gain over single seeds against the spread
over ensembles is the measure of stability; the test suite is not read.

    .venv/bin/python benchmarks/bench_ensemble_stability.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_source_suite import CACHE, CONFIG, DEV, dev_folds, evaluate, load_human  # noqa: E402
from paths import RESULTS, SCRATCH  # noqa: E402

from precomet.benchmark import pool_results  # noqa: E402
from precomet.encoders import encode_cached, get_encoder  # noqa: E402
from precomet.estimator import build_targets, predict_sources, train  # noqa: E402
from precomet.utilities import compute_utility  # noqa: E402

SINGLE = list(range(9))
ENSEMBLES = [(0, 1, 2), (3, 4, 5), (6, 7, 8)]
TARGET = "metric_avg"


def _fit(rows: list[dict], out: Path, *, seed: int, members: int = 1) -> Path:
    if out.exists():
        shutil.rmtree(out)
    overrides = {"model.backbone": "e5-small", "data.cache_dir": str(CACHE), "seed_everything": seed}
    train(rows, out_dir=out, config=CONFIG, overrides={**overrides, "model.ensemble": members}, progress=False)
    return out


def main() -> None:
    started = time.perf_counter()
    (dev,) = load_human(DEV).values()
    folds = dev_folds(dev)
    results, pearson = {}, {}
    for fold in folds:
        others = [o for o in folds if o is not fold]
        rows = build_targets(others, method=TARGET, metric="human", progress=False)
        where = SCRATCH / "ensemble-stability" / fold.name.replace("/", "_").replace(" ", "_")
        checkpoints = {f"seed {s}": _fit(rows, where / f"seed-{s}", seed=s) for s in SINGLE}
        for seeds in ENSEMBLES:
            name = f"ensemble {seeds[0]}-{seeds[-1]}"
            checkpoints[name] = _fit(rows, where / name.replace(" ", "-"), seed=seeds[0], members=len(seeds))
        sources = list(fold.src)
        predictions = {name: predict_sources(path, sources, progress=False) for name, path in checkpoints.items()}
        vectors = encode_cached(get_encoder("e5-small"), sources, cache_dir=CACHE)
        results[fold.name] = evaluate(fold, predictions, vectors, budget_unit="items")
        truth = compute_utility(fold, TARGET, metric="human", seed=0)
        pearson[fold.name] = {name: float(pearsonr(p, truth)[0]) for name, p in predictions.items()}
        print(fold.name, {n: round(r["spa_gain"], 2) for n, r in results[fold.name]["rows"].items()}, flush=True)
    as_results = {n: {"methods": r["rows"], "controls": {}, "null": r["null"]} for n, r in results.items()}
    pooled = pool_results(as_results)
    out = {
        "config": str(CONFIG),
        "target": TARGET,
        "single_seeds": SINGLE,
        "ensembles": [list(e) for e in ENSEMBLES],
        "folds": results,
        "pearson_truth": pearson,
        "pooled": pooled,
        "seconds": time.perf_counter() - started,
        "command": "benchmarks/bench_ensemble_stability.py",
    }
    path = RESULTS / "ensemble_stability.json"
    path.write_text(json.dumps(out, indent=1, default=float) + "\n", encoding="utf-8")
    print(f"wrote {path} ({out['seconds']:.0f} s)")
    write_report(out)


def write_report(out: dict) -> Path:
    """benchmarks/results/ensemble-stability.md from the JSON."""
    rows = out["pooled"]["rows"]
    single = [100 * rows[f"seed {s}"]["spa_gain"] for s in out["single_seeds"]]
    ensembles = [100 * rows[f"ensemble {e[0]}-{e[-1]}"]["spa_gain"] for e in out["ensembles"]]
    single_parity = [rows[f"seed {s}"]["parity"] for s in out["single_seeds"]]
    ensemble_parity = [rows[f"ensemble {e[0]}-{e[-1]}"]["parity"] for e in out["ensembles"]]
    lines = [
        "# The training seed against the verdict: single heads and ensembles on dev (issue 31)",
        "",
        f"Command: `.venv/bin/python {out['command']}` ({out['seconds']:.0f} s)",
        "",
        "The shipped configuration trained on one half of WMT22 zh-en"
        " MQM (by document) and judged on the other, both ways, pooled against random orderings. Pooled gain ="
        " SPA points over random's mean curve; p against the same pooling of random orderings; Pearson = mean over"
        " the two halves of the correlation with the true MetricAvg.",
        "",
        "| selector | pooled gain | p | parity | Pearson with the truth |",
        "|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        r = (
            np.mean([out["pearson_truth"][f][name] for f in out["pearson_truth"]])
            if name in next(iter(out["pearson_truth"].values()))
            else None
        )
        p, verdict = row["p_value"], "p" if row["p_value"] < 0.05 else "n.s., p"
        lines.append(
            f"| {name} | {100 * row['spa_gain']:+.2f} | {verdict} {p:.3f} | {row['parity']:.0%} |"
            f" {'' if r is None else f'{r:.3f}'} |"
        )
    lines += [
        "",
        f"Spread of the pooled gain: single seeds sd {np.std(single, ddof=1):.2f} (range {min(single):+.2f} to"
        f" {max(single):+.2f}, {len(single)} seeds); ensembles of 3 sd {np.std(ensembles, ddof=1):.2f} (range"
        f" {min(ensembles):+.2f} to {max(ensembles):+.2f}, {len(ensembles)} ensembles). Parity: single seeds"
        f" {min(single_parity):.0%} to {max(single_parity):.0%}, ensembles {min(ensemble_parity):.0%} to"
        f" {max(ensemble_parity):.0%}.",
        "",
    ]
    path = RESULTS / "ensemble-stability.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="store_true", help="only rewrite the report from the JSON")
    if parser.parse_args().report:
        write_report(json.loads((RESULTS / "ensemble_stability.json").read_text()))
    else:
        main()
