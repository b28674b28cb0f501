"""Speed (and exactness) of the output-based utilities, side by side with subset2evaluate 1.0.27.

    .venv/bin/python benchmarks/bench_utilities.py [--peer benchmarks/.peer-venv/bin/python] [--items 1000]
        [--out benchmarks/results/utility-speed.md]

1. all non-embedding, non-IRT utilities on a synthetic 50,000 × 15 campaign (goal: ≤ 1 s each);
2. chrF / BLEU / unigram diversity on the first N items × 12 systems of WMT23 zh-en, ours vs the peer's
   implementation run in its own venv (same items), with the ratio and the max difference after mapping
   the peer's all-pairs-including-self average onto ours (see docs/utilities.md);
3. every utility on WMT23 en-de / zh-en with MetricX-23-c and human MQM (IRT and embeddings included),
   and on TED MQM when that loader exists.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from paths import RAW, REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)
from report import results_file  # benchmarks/report.py

sys.path.insert(0, str(REPO))

from precomet.campaign import HUMAN, Campaign  # noqa: E402
from precomet.utilities import compute_utility  # noqa: E402

PEER_SCRIPT = """
import json, sys, time
import subset2evaluate.methods as m
data = json.load(open(sys.argv[1]))
out = {}
for name, fn in (("chrf", m.diversity_chrf), ("bleu", m.diversity_bleu), ("unigram", m.diversity_unigram)):
    t = time.perf_counter()
    values = fn(data)
    out[name] = {"seconds": time.perf_counter() - t, "values": [float(v) for v in values]}
json.dump(out, open(sys.argv[2], "w"))
"""


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def synthetic(n: int, s: int) -> Campaign:
    rng = np.random.default_rng(0)
    words = np.array("the cat sat on a mat and dog ran to park where children play with red balls".split())
    base = [" ".join(rng.choice(words, 12)) for _ in range(n)]
    outputs = {}
    for j in range(s):
        outputs[f"m{j}"] = [b if rng.random() < 0.3 else b.replace(str(words[j % len(words)]), "x") for b in base]
    return Campaign.build(src=base, systems=list(outputs), outputs=outputs, scores={"m": rng.normal(size=(n, s))})


def part_speed() -> None:
    campaign = synthetic(50_000, 15)
    print("## 50,000 items × 15 systems (synthetic)\n\n| utility | seconds |\n|---|---|")
    runs = [
        ("metric_avg", {}),
        ("metric_var", {}),
        ("metric_cons", {"correlation": "spearman"}),
        ("metric_cons", {"correlation": "kendall"}),
        ("metric_cons", {"correlation": "pairwise"}),
        ("random", {}),
        ("mixture", {"weights": {"metric_var": 1, "metric_cons": 1}}),
        ("diversity", {"similarity": "unigram"}),
        ("diversity", {"similarity": "bleu"}),
    ]
    for method, options in runs:
        seconds, _ = timed(
            lambda method=method, options=options: compute_utility(campaign, method, metric="m", options=options)
        )
        print(f"| {method} {options or ''} | {seconds:.2f} |")


def part_peer(peer: str, n_items: int) -> None:
    from precomet.io import load

    campaign = load(RAW / "mt-metrics-eval-v2", campaign="wmt23/zh-en", human="mqm").take(np.arange(n_items))
    s = len(campaign.systems)
    print(f"\n## Diversity vs subset2evaluate 1.0.27: WMT23 zh-en, {len(campaign)} items × {s} systems\n")
    items = [{"tgt": {sys_: campaign.outputs[sys_][i] for sys_ in campaign.systems}} for i in range(len(campaign))]
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "items.json", Path(tmp) / "peer.json"
        src.write_text(json.dumps(items))
        subprocess.run([peer, "-c", PEER_SCRIPT, str(src), str(dst)], check=True)
        peer_out = json.loads(dst.read_text())
    print("| similarity | precomet s | subset2evaluate s | speed-up | max abs diff (mapped) |\n|---|---|---|---|---|")
    for kind in ("chrf", "bleu", "unigram"):
        seconds, ours = timed(lambda kind=kind: compute_utility(campaign, "diversity", options={"similarity": kind}))
        peer_values = -np.array(peer_out[kind]["values"])
        if kind == "unigram":  # peer: mean over distinct unordered pairs, negated
            mapped = 1 - peer_values
        else:  # peer: mean over all S² ordered pairs incl. self-pairs (100 for non-empty outputs), negated
            mapped = 1 - (peer_values * s - 100) / (100 * (s - 1))
        diff = np.abs(mapped - ours).max()
        peer_s = peer_out[kind]["seconds"]
        print(f"| {kind} | {seconds:.2f} | {peer_s:.2f} | {peer_s / seconds:.1f}× | {diff:.2e} |")


def part_real(names: list[str]) -> None:
    from precomet.io import load

    print("\n## All utilities on real campaigns (seconds; Spearman of the utility with metric_var on the same score)\n")
    print("| campaign | score | utility | seconds | ρ vs metric_var |\n|---|---|---|---|---|")
    from scipy.stats import spearmanr

    campaigns = [load(RAW / "mt-metrics-eval-v2", campaign=c, human="mqm") for c in names if c.startswith("wmt23/")]
    ted = sorted((RAW / "wmt-mqm-ted").glob("*/mqm_ted_????.tsv")) if "ted" in names else []
    campaigns += [load(path) for path in ted]  # TED MQM (WMT21): human scores only
    options: Mapping[str, object]  # utility options: their value types differ between the two loops below
    for campaign in campaigns:
        for score in [name for name in ("MetricX-23-c", HUMAN) if name in campaign.scores]:
            ref = compute_utility(campaign, "metric_var", metric=score)
            for method, options, budget in (
                ("metric_avg", {}, None),
                ("metric_var", {}, None),
                ("metric_cons", {}, None),
                ("irt_diffdisc", {"epochs": 500}, None),
                ("irt_fic", {"epochs": 500}, None),
            ):
                seconds, u = timed(
                    lambda campaign=campaign, method=method, score=score, budget=budget, options=options: (
                        compute_utility(campaign, method, metric=score, budget=budget, options=options)
                    )
                )
                print(f"| {campaign.name} | {score} | {method} | {seconds:.2f} | {spearmanr(u, ref).statistic:.2f} |")
        for method, options, budget in (
            ("diversity", {"similarity": "embedding"}, None),
            ("diversity", {"similarity": "chrf"}, None),
            ("kmeans", {}, 50),
        ):
            seconds, u = timed(
                lambda campaign=campaign, method=method, budget=budget, options=options: compute_utility(
                    campaign, method, budget=budget, options=options
                )
            )
            rho = spearmanr(u, compute_utility(campaign, "metric_var", metric=HUMAN)).statistic
            print(f"| {campaign.name} | - | {method} {options} | {seconds:.2f} | {rho:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", default=str(REPO / "benchmarks" / ".peer-venv" / "bin" / "python"))
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--parts", default="speed,peer,real")
    parser.add_argument("--campaigns", default="wmt23/en-de,wmt23/zh-en,ted", help="for --parts real")
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "utility-speed.md", help="the printed tables, as markdown"
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    parts = args.parts.split(",")
    with results_file(args.out, "Output-based utilities: speed, the peer's diversity, real campaigns"):
        if "speed" in parts:
            part_speed()
        if "peer" in parts:
            part_peer(args.peer, args.items)
        if "real" in parts:
            part_real(args.campaigns.split(","))


if __name__ == "__main__":
    main()
