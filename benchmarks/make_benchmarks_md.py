"""Regenerate the meta-evaluation tables: writes benchmarks/results/metaeval.md (pasted into BENCHMARKS.md).

Usage: .venv/bin/python benchmarks/make_benchmarks_md.py [--seeds 100] [--variant-seeds 100] [--peer-seeds 100]
       [--only wmt23,variants,ted,esa,summeval] [--irt-epochs 1000] [--no-peer] [--cache DIR]

Runs :func:`precomet.benchmark.run_benchmark` on every campaign in ../shared/data/raw with human scores
(JSON + figures under benchmarks/results/metaeval/), the cost-aware / domain-balanced / document-level
variants on WMT23 en-de (paper Tables 1–3), and subset2evaluate 1.0.27 (benchmarks/.peer-venv, via
subprocess) on WMT23 with its own MetricAvg/MetricVar/MetricCons/Diversity(BLEU) and random selection.
The markdown is rendered from every JSON under benchmarks/results/metaeval/ and rewritten after each
campaign, so an interrupted run keeps the finished tables and groups can run in separate processes.
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
import torch
from assemble_benchmarks_md import main as assemble_benchmarks_md  # sibling script (benchmarks/ is on sys.path)
from paths import REPO  # benchmarks/paths.py (the script's folder is on sys.path)
from report import null_line, verdict_cell  # benchmarks/report.py
from threadpoolctl import threadpool_limits

from precomet.benchmark import DEFAULT_PROPS, BenchmarkPlan, plot_benchmark, run_benchmark
from precomet.io import load
from precomet.utilities import UTILITY_METHODS, compute_utility

OUT = REPO / "benchmarks" / "results"
WMT_METHODS = ["metric_avg", "metric_var", "metric_cons", "diversity", "irt_diffdisc", "kmeans"]
OUTPUT_METHODS = ["diversity", "kmeans"]
LENGTH = "length (control)"  # run_benchmark's length control row: longer source first
MISSING = {"spa": None, "clusters": None, "parity": None}
LABEL = {
    **{name: spec.label for name, spec in UTILITY_METHODS.items()},
    LENGTH: "Length (control)",
    "diversity_bleu": "Diversity (BLEU, as the peer)",
    "metric_cons_kendall": "MetricCons (Kendall, as the peer)",
}
PAPER_SPA = {
    "random": 91.6,
    "metric_avg": 92.5,
    "metric_var": 93.0,
    "metric_cons": 93.3,
    "diversity": 93.0,
    "irt_diffdisc": 92.7,
}
PAPER_PARITY = {"metric_cons": 71.4, "diversity": 76.8}
PEER_METHODS = {
    "metric_avg": ("metric_avg", "MetricX-23-c"),
    "metric_var": ("metric_var", "MetricX-23-c"),
    "metric_cons": ("metric_cons", "MetricX-23-c"),
    "diversity": ("diversity", "bleu"),
}
PEER_ROWS = ["metric_cons_kendall", "diversity_bleu"]
PEER_ROW_OF = {
    "random": "random",
    "metric_avg": "metric_avg",
    "metric_var": "metric_var",
    "metric_cons_kendall": "metric_cons",
    "diversity_bleu": "diversity",
}
"""Table row -> the peer's result shown beside it (its MetricCons is Kendall, its Diversity sentence BLEU)."""
SUMMEVAL_PROPS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
VARIANTS: dict[str, dict] = {"cost": {"budget_unit": "cost"}, "domain": {"balance": "domain"}, "doc": {"level": "doc"}}
VARIANT_TITLE = {
    "cost": "cost-aware (budget = share of annotation time, ILP)",
    "domain": "domain-balanced (equal items per domain)",
    "doc": "document-level (whole documents)",
}

NOTES = [
    "### Reading the output-only tables",
    "",
    "- k-means refits for every budget, so its subsets are not nested and its SPA is not monotone in the budget; the",
    "  parity search reports the first budget whose SPA reaches random's, which can be a lucky small budget. Every",
    "  ordering has that luck (the null line): only a p-value below 0.05 says a row beats random orderings.",
    "- Judged against random orderings, no output-only row (length, Diversity, k-means) beats them on TED or the ESA",
    "  pairs: parities below 100 % there are within the null band. Diversity beats them only on SummEval consistency;",
    "  its parities below 100 % on TED en-de and SummEval fluency are indistinguishable from random orderings. It is",
    "  below random on TED zh-en and WMT23 zh-en, whose outputs are English (so not an encoder problem), and on the",
    "  ESA pairs, whose Czech/Hindi/Japanese outputs the English encoder also embeds poorly.",
    "- TED MQM separates few systems at any budget (about one significance cluster), so SPA is low for every method.",
    "- Peer numbers only on WMT23 (time on this shared machine); its meta-evaluation code is the same for every",
    "  campaign, and the WMT23 comparison above checks it.",
    "",
]

PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
import torch
from threadpoolctl import threadpool_limits
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
out["random"] = {"spa": float(runs[:, 0].mean()), "clusters": float(runs[:, 1].mean()),
                 "corr": float(runs[:, 2].mean()), "seconds": time.perf_counter() - start}
json.dump(out, open(sys.argv[4], "w"))
"""


def cases(raw: Path) -> list[dict]:
    """Every benchmarked campaign: group, key (file stem), loader arguments, methods, metric, props, options."""
    mtme, ted, esa = raw / "mt-metrics-eval-v2", raw / "wmt-mqm-ted", raw / "wmt24-esa"
    wmt = {"path": mtme, "methods": WMT_METHODS, "metric": "MetricX-23-c", "props": DEFAULT_PROPS}
    out = [
        {**wmt, "group": "wmt23", "key": f"wmt23-{lp}", "load": {"campaign": f"wmt23/{lp}", "human": "mqm"}}
        for lp in ("en-de", "zh-en")
    ]
    out += [
        {
            **wmt,
            "group": "variants",
            "key": f"wmt23-en-de-{name}",
            "load": {"campaign": "wmt23/en-de", "human": "mqm"},
            "variant": name,
        }
        for name in VARIANTS
    ]
    out += [
        {
            "group": "ted",
            "key": f"ted-{lp}",
            "path": ted / lp.replace("-", "") / f"mqm_ted_{lp.replace('-', '')}.tsv",
            "load": {},
            "methods": OUTPUT_METHODS,
            "metric": None,
            "props": DEFAULT_PROPS,
        }
        for lp in ("en-de", "zh-en")
    ]
    out += [
        {
            "group": "esa",
            "key": f"wmt24-esa-{lp}",
            "path": esa,
            "load": {"campaign": lp},
            "methods": OUTPUT_METHODS,
            "metric": None,
            "props": DEFAULT_PROPS,
        }
        for lp in ("en-cs", "en-hi", "en-ja")
    ]
    out += [
        {
            "group": "summeval",
            "key": f"summeval-{dim}",
            "path": raw / "summeval" / "SummEval.data.pkl",
            "load": {},
            "target": dim,
            "methods": ["diversity"],
            "metric": None,
            "props": SUMMEVAL_PROPS,
        }
        for dim in ("coherence", "consistency", "fluency", "relevance")
    ]
    return out


def run_peer(campaign, seeds: int) -> dict:
    """subset2evaluate 1.0.27 on the same items: its own utilities and meta-evaluation."""
    peer = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "peer_env.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
    human, metric = campaign.score("human"), campaign.score("MetricX-23-c")
    data = [
        {
            "src": campaign.src[i],
            "tgt": {s: campaign.outputs[s][i] for s in campaign.systems},
            "scores": {
                s: {"human": float(human[i, j]), "MetricX-23-c": float(metric[i, j])}
                for j, s in enumerate(campaign.systems)
            },
        }
        for i in range(len(campaign))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp, name) for name in ("data.json", "methods.json", "out.json")]
        files[0].write_text(json.dumps(data))
        files[1].write_text(json.dumps(PEER_METHODS))
        subprocess.run([peer, "-c", PEER_SCRIPT, str(files[0]), str(files[1]), str(seeds), str(files[2])], check=True)
        return json.loads(files[2].read_text())


def peer_like_utilities(campaign) -> dict[str, np.ndarray]:
    """Our MetricCons with Kendall τ-b and our Diversity with sentence BLEU: the peer's choices, for the comparison."""
    return {
        "metric_cons_kendall": compute_utility(
            campaign, "metric_cons", metric="MetricX-23-c", options={"correlation": "kendall"}
        ),
        "diversity_bleu": compute_utility(campaign, "diversity", options={"similarity": "bleu"}),
    }


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def count(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=REPO.parent / "shared" / "data" / "raw")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--variant-seeds", type=int, default=100)
    parser.add_argument("--peer-seeds", type=int, default=100)
    parser.add_argument("--irt-epochs", type=int, default=1000)
    parser.add_argument("--only", default="wmt23,variants,ted,esa,summeval")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--render-only", action="store_true", help="only rebuild the markdown from the JSONs")
    parser.add_argument(
        "--cache", type=Path, default=REPO / "benchmarks" / "out" / "embed-cache", help="shared embedding cache"
    )
    args = parser.parse_args()
    only = args.only.split(",")
    (OUT / "metaeval").mkdir(parents=True, exist_ok=True)
    if args.render_only:
        (OUT / "metaeval.md").write_text(render(args))
    else:
        torch.set_num_threads(1)
        with threadpool_limits(
            limits=1
        ):  # sklearn's k-means was 40-80x slower with threads on this busy 2-core machine
            run_cases(args, [case for case in cases(args.raw) if case["group"] in only])
    assemble_benchmarks_md()  # BENCHMARKS.md = every benchmarks/results/*.md, this one first


def run_cases(args: argparse.Namespace, todo: list[dict]) -> None:
    options = {
        "irt_diffdisc": {"epochs": args.irt_epochs},
        "diversity": {"cache_dir": str(args.cache)},
        "kmeans": {"cache_dir": str(args.cache)},
    }
    for case in todo:
        try:
            campaign = load(case["path"], **case["load"])
        except Exception as err:  # noqa: BLE001 - report what could not be loaded and go on
            print(f"{case['key']}: not run: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            continue
        start = time.perf_counter()
        external = peer_like_utilities(campaign) if case["group"] == "wmt23" else {}
        plan = BenchmarkPlan(
            methods=case["methods"],
            metric=case["metric"],
            score=case.get("target", "human"),
            props=case["props"],
            seeds=args.variant_seeds if "variant" in case else args.seeds,
            method_options={m: options[m] for m in case["methods"] if m in options},
            **(VARIANTS[case["variant"]] if "variant" in case else {}),
        )
        benchmark = run_benchmark(campaign, plan, external=external)
        result = {**benchmark.to_dict(), "wall_seconds": time.perf_counter() - start}
        print(f"{case['key']}: {result['wall_seconds']:.0f} s", file=sys.stderr, flush=True)
        (OUT / "metaeval" / f"{case['key']}.json").write_text(json.dumps(result, indent=1))
        plot_benchmark(result, OUT / "metaeval" / f"{case['key']}.png")
        if case["group"] == "wmt23" and not args.no_peer:
            start = time.perf_counter()
            peer = run_peer(campaign, args.peer_seeds)
            print(f"{case['key']} peer: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
            (OUT / "metaeval" / f"{case['key']}.peer.json").write_text(json.dumps(peer, indent=1))
        (OUT / "metaeval.md").write_text(render(args))


def render(args: argparse.Namespace) -> str:
    """The markdown tables from every result JSON under benchmarks/results/metaeval/."""
    results, peers = {}, {}
    for path in sorted((OUT / "metaeval").glob("*.json")):
        if path.name.endswith(".peer.json"):
            peers[path.name.removesuffix(".peer.json")] = json.loads(path.read_text())
        else:
            results[path.stem] = json.loads(path.read_text())
    seconds = {k: r["wall_seconds"] for k, r in results.items() if "wall_seconds" in r}
    command = (
        f"`.venv/bin/python benchmarks/make_benchmarks_md.py --seeds {args.seeds} --variant-seeds {args.variant_seeds}"
        f" --peer-seeds {args.peer_seeds} --irt-epochs {args.irt_epochs}{' --no-peer' if args.no_peer else ''}`"
        " (groups may run as separate processes with `--only wmt23,variants` / `--only ted,esa,summeval`;"
        " `--render-only` rebuilds this file from the JSONs)"
    )
    lines = [
        "# Output-based meta-evaluation (precomet benchmark)",
        "",
        f"Command: {command}",
        "",
        "SPA = soft pairwise accuracy (%) averaged over budgets; clusters = "
        "mean cluster count; parity = budget needed to",
        "reach random's mean SPA, as a share of random's budget (Eq. 12, lower "
        f"is better), with its p-value against random orderings. Random = mean of {args.seeds} seeds.",
        "JSON and figures: benchmarks/results/metaeval/. Wall time per campaign (whole benchmark, incl. utilities): "
        + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
        + ".",
        f"DiffDisc = py-irt 4PL on the metric, {args.irt_epochs} epochs; "
        "Diversity = 1 − mean cosine of all-MiniLM-L6-v2",
        "output embeddings (English vocabulary, so Czech/Hindi/Japanese/German outputs are embedded poorly); "
        "k-means on",
        "source embeddings, k = budget (its parity search refits per budget: the slowest method here). Output",
        "embeddings come from the shared cache benchmarks/out/embed-cache. Length (control) = `benchmark`'s control",
        "row: longer source first (under a cost budget the same knapsack with a constant utility); a method that does",
        "not beat it adds nothing beyond source length.",
        "",
    ]
    lines += wmt_section(results, peers)
    lines += variant_section(results, args)
    for title, prefix in (
        ("WMT21 TED, Google MQM (outputs only, no metrics)", "ted-"),
        ("WMT24 ESA (outputs only)", "wmt24-esa-"),
        ("SummEval, one row per human dimension (--target; budgets 25–75 %)", "summeval-"),
    ):
        keys = [k for k in results if k.startswith(prefix)]
        if keys:
            lines += plain_table(title, prefix, keys, results)
    if any(k.startswith(("ted-", "wmt24-esa-", "summeval-")) for k in results):
        lines += NOTES
    return "\n".join(lines)


def row_of(result: dict, name: str) -> dict:
    """A benchmark result's row: random, the length control (``LENGTH``) or a method."""
    if name == "random":
        return result["random"]
    if name != LENGTH:
        return result["methods"][name]
    return result.get("controls", {}).get("length", MISSING)  # a JSON from before the control row: "–"


def wmt_section(results: dict, peers: dict) -> list[str]:
    wmt = [k for k in ("wmt23-en-de", "wmt23-zh-en") if k in results]
    if not wmt:
        return []
    lp = [k[6:] for k in wmt]
    lines = [
        "## WMT23 (human = MQM, metric = MetricX-23-c, budgets 5–50 %)",
        "",
        "| method | "
        + " | ".join(f"{x} SPA | {x} clusters | {x} parity" for x in lp)
        + " | mean SPA | "
        + " | ".join(f"peer {x} SPA | peer {x} clusters" for x in lp)
        + " | paper SPA (9 WMT23 pairs) | paper parity |",
        "|---" * (1 + 3 * len(wmt) + 1 + 2 * len(wmt) + 2) + "|",
    ]
    for name in ["random", LENGTH, *WMT_METHODS, *PEER_ROWS]:
        cells, spas = [], []
        for key in wmt:
            m = row_of(results[key], name)
            spas.append(m["spa"])
            cells += [pct(m["spa"]), count(m["clusters"]), "–" if name == "random" else verdict_cell(m)]
        peer_cells = []
        for key in wmt:
            p = peers.get(key, {}).get(PEER_ROW_OF.get(name, ""))
            peer_cells += [pct(p["spa"]), f"{p['clusters']:.2f}"] if p else ["–", "–"]
        paper_parity = f"{PAPER_PARITY[name]}%" if name in PAPER_PARITY else "–"
        lines.append(
            f"| {LABEL[name]} | "
            + " | ".join(cells)
            + f" | {pct(None if None in spas else float(np.mean(spas)))} | "
            + " | ".join(peer_cells)
            + f" | {PAPER_SPA.get(name, '–')} | {paper_parity} |"
        )
    peer_seconds = {k: sum(v["seconds"] for v in p.values()) for k, p in peers.items()}
    if peer_seconds:
        lines += [
            "",
            "subset2evaluate wall time (utilities + eval_spa/eval_clucor, 10 budgets, "
            "random seeds; its BLAS threads on, busy machine;"
            " the like-for-like speed comparison is benchmarks/results/metaeval_speed.md): "
            + ", ".join(f"{k} {v:.0f} s" for k, v in peer_seconds.items())
            + ".",
        ]
    return [*lines, "", null_line({key: results[key] for key in wmt}), "", *peer_differences(results, peers, wmt)]


def peer_differences(results: dict, peers: dict, wmt: list[str]) -> list[str]:
    """Where our numbers differ from subset2evaluate's, measured, and why."""
    gaps = [
        (
            abs(results[k]["methods"][row]["spa"] - peers[k][theirs]["spa"]),
            abs(results[k]["methods"][row]["clusters"] - peers[k][theirs]["clusters"]),
        )
        for k in wmt
        if k in peers
        for row, theirs in PEER_ROW_OF.items()
        if row in ("metric_avg", "metric_var", "diversity_bleu")
    ]
    if not gaps:
        return []
    spa_gap, cluster_gap = np.max(gaps, axis=0)
    random_gap = max(abs(results[k]["random"]["spa"] - peers[k]["random"]["spa"]) for k in wmt if k in peers)
    return [
        "### Differences from subset2evaluate 1.0.27, and why",
        "",
        (
            "- **Same utility, same subsets → same numbers.** Where both tools rank items identically (MetricAvg, "
            f"MetricVar, Diversity with sentence BLEU) mean SPA differs by at most {100 * spa_gap:.2f} points and mean "
            f"clusters by at most {cluster_gap:.2f}. The SPA residue is permutation noise: both draw 1000 sign flips, "
            "but the peer matches its mask to items *by position* (so its SPA changes when a subset is reordered), "
            "ours ties each item's flips to its id (order-invariant); see benchmarks/results/metaeval_speed.md for the "
            "subset-by-subset check."
        ),
        (
            f"- **Random** differs by {100 * random_gap:.2f} points: different random orderings (ours "
            "`default_rng([seed, r])`, the peer's own `random` method with seeds 0..99) — within the spread of 100 "
            "runs."
        ),
        (
            "- **MetricCons**: our default is Spearman ρ of each item's system scores with the system means (the peer: "
            "Kendall τ-c); the *Kendall* row uses our τ-b, which normalises ties differently from τ-c, and 85 % "
            "(en-de) / 97 % (zh-en) of items have tied MetricX scores (identical outputs), so its subsets differ "
            "slightly from the peer's (zh-en clusters 5.9 vs 6.1). **Diversity**: our default is 1 − mean cosine of "
            "sentence embeddings (offline all-MiniLM-L6-v2, cache benchmarks/out/embed-cache); the peer's is negated "
            "sentence BLEU over all |M|² pairs incl. self-pairs, which ranks items like our *BLEU* row. On WMT23 the "
            "embedding variant is clearly better than BLEU (see the table)."
        ),
        (
            "- **Clusters**: the peer opens a new cluster for two systems with identical scores; we keep them "
            "together. No WMT23 system pair has identical MQM scores, so the counts agree on identical subsets (on "
            "1059 of 1060 subsets in the speed benchmark)."
        ),
        (
            "- **Parity** is ours only (the peer's `eval_spa_par` scans budgets linearly in a 10-worker pool; not run "
            "on this 2-core machine). Ours: coarse grid + bisection on the same SPA, Eq. 12 without the peer's random "
            "normalisation."
        ),
        (
            "- **The paper** averages 9 WMT23 language pairs; we have the two with MQM in ../shared (en-de 12 systems, "
            "zh-en 15). Absolute SPA is higher on these two than the paper's 9-pair mean, so compare the order of "
            "methods and the gain over random rather than the absolute values."
        ),
        "",
    ]


def variant_section(results: dict, args: argparse.Namespace) -> list[str]:
    keys = [f"wmt23-en-de-{name}" for name in VARIANTS if f"wmt23-en-de-{name}" in results]
    if not keys:
        return []
    plain = results.get("wmt23-en-de")
    lines = [
        f"## WMT23 en-de selection variants (paper Tables 1–3; random = {args.variant_seeds} seeds)",
        "",
        "Each subset is chosen by the subset builder (precomet.selection.subset) at "
        "every budget; cost-aware budgets are shares of",
        "the total estimated annotation time (0.15·len(src)+33.7 s) and "
        "parity is measured in cost. Domain quotas round",
        "down to equal counts per domain (20 instead of 23 items at 5 %, 4 domains); document-level subsets take whole",
        'documents up to the same item count. "plain" = the item-level table above.',
        "**Random** in these variants is a random subset that fits the "
        "budget (precomet.selection.random_fill: units in",
        "random order, skipped when they do not fit, domains filled a round at a time), not the knapsack over random",
        "utilities: that knapsack prefers many cheap items (cost-aware) and one-item documents (document level), which",
        "made an earlier version of this table's random baseline biased. "
        "The methods still choose through the knapsack,",
        "which by design prefers cheap units: compare methods with the random row of their own variant.",
        "Knapsacks not certified optimal within 10 s are used as found (3 solves in the last run, gaps 0.02–0.04 %).",
        "",
        "| method | "
        + ("plain SPA | " if plain else "")
        + " | ".join(f"{VARIANT_TITLE[k.rsplit('-', 1)[1]]} SPA | clusters | parity" for k in keys)
        + " |",
        "|---" * (1 + (1 if plain else 0) + 3 * len(keys)) + "|",
    ]
    for name in ["random", LENGTH, *WMT_METHODS]:
        cells = [pct(row_of(plain, name)["spa"])] if plain else []
        for key in keys:
            m = row_of(results[key], name)
            cells += [pct(m["spa"]), count(m["clusters"]), "–" if name == "random" else verdict_cell(m)]
        lines.append(f"| {LABEL[name]} | " + " | ".join(cells) + " |")
    return [*lines, "", null_line({key: results[key] for key in keys}), ""]


def plain_table(title: str, prefix: str, keys: list[str], results: dict) -> list[str]:
    methods = [LENGTH, *results[keys[0]]["methods"]]
    lines = [
        f"## {title}",
        "",
        "| campaign | items × systems | Random SPA | Random clusters | "
        + " | ".join(f"{LABEL.get(m, m)} SPA | {LABEL.get(m, m)} clusters | {LABEL.get(m, m)} parity" for m in methods)
        + " |",
        "|---" * (4 + 3 * len(methods)) + "|",
    ]
    for key in keys:
        r = results[key]
        cells = [
            f"{pct(row_of(r, m)['spa'])} | {count(row_of(r, m)['clusters'])} | {verdict_cell(row_of(r, m))}"
            for m in methods
        ]
        lines.append(
            f"| {key[len(prefix) :]} | {r['items']} × {len(r['systems'])} | {pct(r['random']['spa'])} | "
            f"{r['random']['clusters']:.2f} | " + " | ".join(cells) + " |"
        )
    return [*lines, "", null_line({key: results[key] for key in keys}), ""]


if __name__ == "__main__":
    main()
