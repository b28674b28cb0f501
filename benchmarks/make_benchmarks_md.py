"""Regenerate the meta-evaluation tables: writes benchmarks/results/metaeval.md (pasted into BENCHMARKS.md).

Usage: .venv/bin/python benchmarks/make_benchmarks_md.py [--seeds 100] [--peer-seeds 100] [--only wmt23,ted,esa,summeval]
       [--irt-epochs 1000] [--no-peer]

Runs :func:`precomet.benchmark.run_benchmark` on every campaign in ../shared/data/raw with human scores
(JSON + figures under benchmarks/results/metaeval/), and subset2evaluate 1.0.27 (benchmarks/.peer-venv, via
subprocess) on WMT23 with its own MetricAvg/MetricVar/MetricCons/Diversity(BLEU) and random selection.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from precomet.benchmark import DEFAULT_PROPS, plot_benchmark, run_benchmark
from precomet.io import load

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results"
WMT_METHODS = ["metric_avg", "metric_var", "metric_cons", "diversity", "irt_diffdisc"]
OUTPUT_METHODS = ["diversity", "kmeans"]
LABEL = {"metric_avg": "MetricAvg", "metric_var": "MetricVar", "metric_cons": "MetricCons", "diversity": "Diversity",
         "irt_diffdisc": "DiffDisc", "kmeans": "k-means", "random": "Random"}
PAPER_SPA = {"random": 91.6, "metric_avg": 92.5, "metric_var": 93.0, "metric_cons": 93.3, "diversity": 93.0, "irt_diffdisc": 92.7}
PAPER_PARITY = {"metric_cons": 71.4, "diversity": 76.8}
PEER_METHODS = {"metric_avg": ("metric_avg", "MetricX-23-c"), "metric_var": ("metric_var", "MetricX-23-c"),
                "metric_cons": ("metric_cons", "MetricX-23-c"), "diversity": ("diversity", "bleu")}
SUMMEVAL_PROPS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)

PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
import subset2evaluate.select_subset as sel
import subset2evaluate.evaluate as ev
data, methods, seeds = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
out = {}
def run(ordered):
    spa = ev.eval_spa(ordered, data)
    clu, cor = ev.eval_clucor(ordered, data)
    return float(np.mean(spa)), float(np.mean(clu)), float(np.mean(cor))
for name, (method, metric) in methods.items():
    start = time.perf_counter()
    spa, clu, cor = run(sel.basic(data, method=method, metric=metric))
    out[name] = {"spa": spa, "clusters": clu, "corr": cor, "seconds": time.perf_counter() - start}
start = time.perf_counter()
runs = np.array([run(sel.basic(data, method="random", seed=s)) for s in range(seeds)])
out["random"] = {"spa": float(runs[:, 0].mean()), "clusters": float(runs[:, 1].mean()), "corr": float(runs[:, 2].mean()), "seconds": time.perf_counter() - start}
json.dump(out, open(sys.argv[4], "w"))
"""


def cases(raw: Path) -> list[dict]:
    mtme, ted, esa = raw / "mt-metrics-eval-v2", raw / "wmt-mqm-ted", raw / "wmt24-esa"
    out = [dict(group="wmt23", key=f"wmt23-{lp}", path=mtme, load=dict(campaign=f"wmt23/{lp}", human="mqm"),
                methods=WMT_METHODS, metric="MetricX-23-c", props=DEFAULT_PROPS) for lp in ("en-de", "zh-en")]
    out += [dict(group="ted", key=f"ted-{lp}", path=ted / lp.replace("-", "") / f"mqm_ted_{lp.replace('-', '')}.tsv", load={},
                 methods=OUTPUT_METHODS, metric=None, props=DEFAULT_PROPS) for lp in ("en-de", "zh-en")]
    out += [dict(group="esa", key=f"wmt24-esa-{lp}", path=esa, load=dict(campaign=lp), methods=OUTPUT_METHODS,
                 metric=None, props=DEFAULT_PROPS) for lp in ("en-cs", "en-hi", "en-ja")]
    out += [dict(group="summeval", key=f"summeval-{dim}", path=raw / "summeval" / "SummEval.data.pkl", load={}, target=dim,
                 methods=OUTPUT_METHODS, metric=None, props=SUMMEVAL_PROPS) for dim in ("coherence", "consistency", "fluency", "relevance")]
    return out


def run_peer(campaign, seeds: int) -> dict:
    """subset2evaluate 1.0.27 on the same items: its own utilities and meta-evaluation."""
    peer = subprocess.run(["bash", str(REPO / "benchmarks" / "peer_env.sh")], capture_output=True, text=True, check=True).stdout.strip()
    human, metric = campaign.score("human"), campaign.score("MetricX-23-c")
    data = [{"src": campaign.src[i], "tgt": {s: campaign.outputs[s][i] for s in campaign.systems},
             "scores": {s: {"human": float(human[i, j]), "MetricX-23-c": float(metric[i, j])} for j, s in enumerate(campaign.systems)}}
            for i in range(len(campaign))]
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp, name) for name in ("data.json", "methods.json", "out.json")]
        files[0].write_text(json.dumps(data))
        files[1].write_text(json.dumps(PEER_METHODS))
        subprocess.run([peer, "-c", PEER_SCRIPT, str(files[0]), str(files[1]), str(seeds), str(files[2])], check=True)
        return json.loads(files[2].read_text())


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=REPO.parent / "shared" / "data" / "raw")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--peer-seeds", type=int, default=100)
    parser.add_argument("--irt-epochs", type=int, default=1000)
    parser.add_argument("--only", default="wmt23,ted,esa,summeval")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "precomet-embeddings")
    args = parser.parse_args()
    only = args.only.split(",")
    (OUT / "metaeval").mkdir(parents=True, exist_ok=True)
    results, peers, missing = {}, {}, []
    options = {"irt_diffdisc": {"epochs": args.irt_epochs}, "diversity": {"cache_dir": str(args.cache)},
               "kmeans": {"cache_dir": str(args.cache)}}
    for case in cases(args.raw):
        if case["group"] not in only:
            continue
        try:
            campaign = load(case["path"], **case["load"])
        except Exception as err:  # noqa: BLE001 - report what could not be loaded and go on
            missing.append(f"{case['key']}: {type(err).__name__}: {err}")
            continue
        start = time.perf_counter()
        result = run_benchmark(campaign, methods=case["methods"], metric=case["metric"], score=case.get("target", "human"),
                               props=case["props"], seeds=args.seeds,
                               method_options={m: options[m] for m in case["methods"] if m in options})
        print(f"{case['key']}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
        results[case["key"]] = result
        (OUT / "metaeval" / f"{case['key']}.json").write_text(json.dumps(result, indent=1))
        plot_benchmark(result, OUT / "metaeval" / f"{case['key']}.png")
        if case["group"] == "wmt23" and not args.no_peer:
            peers[case["key"]] = run_peer(campaign, args.peer_seeds)
    (OUT / "metaeval.md").write_text(render(results, peers, missing, args))


def render(results: dict, peers: dict, missing: list[str], args: argparse.Namespace) -> str:
    command = (f"`.venv/bin/python benchmarks/make_benchmarks_md.py --seeds {args.seeds} --peer-seeds {args.peer_seeds}"
               f" --irt-epochs {args.irt_epochs} --only {args.only}{' --no-peer' if args.no_peer else ''}`")
    lines = ["# Output-based meta-evaluation (precomet benchmark)", "", f"Command: {command}", "",
             "SPA = soft pairwise accuracy (%) averaged over budgets; clusters = mean cluster count; parity = budget needed to",
             "reach random's mean SPA, as a share of random's budget (Eq. 12, lower is better). Random = mean of "
             f"{args.seeds} seeds. JSON and figures: benchmarks/results/metaeval/.", ""]
    wmt = [k for k in ("wmt23-en-de", "wmt23-zh-en") if k in results]
    if wmt:
        lines += ["## WMT23 (human = MQM, metric = MetricX-23-c, budgets 5–50 %)", "",
                  "| method | " + " | ".join(f"{k[6:]} SPA | {k[6:]} clusters | {k[6:]} parity" for k in wmt)
                  + " | mean SPA | subset2evaluate SPA (same data) | subset2evaluate clusters | paper SPA (9 WMT23 pairs) | paper parity |",
                  "|---" * (1 + 3 * len(wmt) + 5) + "|"]
        for name in ["random", *WMT_METHODS]:
            cells, spas = [], []
            for key in wmt:
                m = results[key]["random"] if name == "random" else results[key]["methods"][name]
                spas.append(m["spa"])
                cells += [pct(m["spa"]), f"{m['clusters']:.2f}", "–" if name == "random" else pct(m["parity"]) + "%"]
            peer = [peers[k].get(name) for k in wmt if k in peers]
            peer_spa = pct(np.mean([p["spa"] for p in peer])) if peer and all(peer) else "–"
            peer_clu = f"{np.mean([p['clusters'] for p in peer]):.2f}" if peer and all(peer) else "–"
            paper_parity = f"{PAPER_PARITY[name]}%" if name in PAPER_PARITY else "–"
            lines.append(f"| {LABEL[name]} | " + " | ".join(cells) + f" | {pct(np.mean(spas))} | {peer_spa} | {peer_clu} | {PAPER_SPA.get(name, '–')} | {paper_parity} |")
        lines.append("")
    for title, prefix in (("WMT21 TED, Google MQM (outputs only)", "ted-"), ("WMT24 ESA (outputs only)", "wmt24-esa-"),
                          ("SummEval, one table row per human dimension (budgets 25–75 %)", "summeval-")):
        keys = [k for k in results if k.startswith(prefix)]
        if not keys:
            continue
        methods = list(results[keys[0]]["methods"])
        lines += [f"## {title}", "", "| campaign | items × systems | Random SPA | Random clusters | "
                  + " | ".join(f"{LABEL.get(m, m)} SPA | {LABEL.get(m, m)} clusters | {LABEL.get(m, m)} parity" for m in methods) + " |",
                  "|---" * (4 + 3 * len(methods)) + "|"]
        for key in keys:
            r = results[key]
            cells = [f"{pct(r['methods'][m]['spa'])} | {r['methods'][m]['clusters']:.2f} | {pct(r['methods'][m]['parity'])}%" for m in methods]
            lines.append(f"| {key[len(prefix):]} | {r['items']} × {len(r['systems'])} | {pct(r['random']['spa'])} | {r['random']['clusters']:.2f} | " + " | ".join(cells) + " |")
        lines.append("")
    if missing:
        lines += ["## Not run", ""] + [f"- {m}" for m in missing] + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
