"""``precomet demo``: the main job end to end on simulated (SYNTHETIC) campaigns — no download.

history -> output-based utilities -> training targets -> trained estimator -> predicted utilities of unseen
sources -> cost-aware, domain-balanced subset -> meta-evaluation against random (with a figure) -> a short
pairwise example.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from precomet.campaign import HUMAN, source_length
from precomet.commands.common import Paths, add_output_argument, seed, share
from precomet.costs import describe_time, format_duration, item_seconds

HELP = "run the main job end to end on a seeded simulator of historical campaigns (synthetic data)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_output_argument(
        parser,
        "folder for the demo's outputs (default demo-output)",
        required=False,
        default="demo-output",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the simulator and of every step (default 0)")
    parser.add_argument(
        "--proportion", type=share, default=0.25, help="share in (0, 1] of the blind set's cost to annotate"
    )


def _step(title: str) -> float:
    print(f"\n== {title}")
    return time.perf_counter()


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=[], outputs=[args.output])


def run(args: argparse.Namespace) -> int:
    """Every output is written into a temporary folder beside ``--out`` and moved there only when all seven
    steps succeeded: a failed or interrupted demo leaves nothing (see :func:`precomet.outputs.atomic.output_set`)."""
    from precomet.outputs.atomic import output_set

    with output_set() as outputs:
        work = outputs.directory(args.output)
        return _run(args, work)


def _run(args: argparse.Namespace, work: Path) -> int:
    from scipy.stats import kendalltau, pearsonr

    from precomet.benchmark import NULL_ORDERINGS, BenchmarkPlan, plot_benchmark, run_benchmark, summary_table
    from precomet.estimator import predict_campaign
    from precomet.estimator.training import train_on_campaigns
    from precomet.io import jsonsafe, write_jsonl
    from precomet.pairwise.demo import demo_pairwise
    from precomet.provenance import sources_hash
    from precomet.selection import SubsetPlan, select_subset, write_subset
    from precomet.simulate import METRIC, simulate_campaign, simulate_history
    from precomet.utilities import compute_utility

    out = Path(args.output)  # where the outputs appear at the end (named in messages); written into ``work``
    print("precomet demo — SYNTHETIC campaigns from precomet.simulate (no real data, no download)")

    started = _step("1. historical campaigns (items × systems with human scores and a noisy metric)")
    history = simulate_history(n_campaigns=6, n_items=400, seed=args.seed)
    blind = simulate_campaign(n_items=400, n_systems=8, seed=args.seed + 999, name="sim/blind")
    for campaign in history:
        write_jsonl(campaign, work / f"{campaign.name.replace('/', '_')}.jsonl")
    print(history[0].summary())
    print(f"{len(history)} campaigns written to {out}/sim_year*.jsonl")

    _step("2. output-based utilities on sim/year0 (higher = annotate first)")
    year0 = history[0]
    human_var = compute_utility(year0, "metric_var", metric=HUMAN)
    for method, options in (("metric_var", None), ("metric_cons", None), ("diversity", {"similarity": "chrf"})):
        utility = compute_utility(year0, method, metric=METRIC, seed=args.seed, options=options)
        top = int(np.argmax(utility))
        print(
            f"{method:<12} Kendall τ with human-score variance {kendalltau(utility, human_var)[0]:+.2f}; "
            f"top item {year0.ids[top]!r}: {year0.src[top][:60]!r}"
        )

    _step("3. train a source-based estimator (PreCOMET) on the history: target = metric_var on human scores")
    result = train_on_campaigns(
        history, out_dir=work / "estimator", method="metric_var", seed=args.seed, progress=False
    )
    print(
        f"checkpoint {out / 'estimator'} in {result.seconds:.1f} s; on held-out documents: "
        + ", ".join(f"{k.removeprefix('val_')} {v:.3f}" for k, v in result.dev_metrics.items() if k.startswith("val_"))
    )

    _step("4. predict utilities of the unseen sources of sim/blind (no outputs, no scores used)")
    predicted = predict_campaign(result.checkpoint_dir, blind)
    true_var = compute_utility(blind, "metric_var", metric=HUMAN)
    print(
        f"{len(blind)} sources; Pearson with the true (hidden) human-score variance "
        f"{pearsonr(predicted, true_var)[0]:+.3f}, Kendall {kendalltau(predicted, true_var)[0]:+.3f}"
    )

    _step(f"5. cost-aware, domain-balanced subset: {args.proportion:.0%} of the blind set's annotation cost")
    selection = select_subset(
        predicted,
        SubsetPlan(proportion=args.proportion, balance="domain", seed=args.seed),
        cost=item_seconds(blind),
        domain=blind.domain,
        ids=blind.ids,
        length=source_length(blind.src),
    )
    manifest = selection.manifest(
        method="estimator",
        parameters={
            "proportion": args.proportion,
            "balance": "domain",
            "cost_objective": selection.budget["objective"],
        },
        data_hash=blind.data_hash(),
        sources_hash=sources_hash(blind.src),
    )
    subset_path = out / "blind-subset.jsonl"
    write_subset(work / subset_path.name, blind, selection, predicted, manifest)
    judged = int(blind.judgements()[selection.indices].sum())
    print(
        f"{len(selection)} of {len(blind)} items ({describe_time(selection.total_cost or 0.0, judged)}; of"
        f" {format_duration(float(item_seconds(blind).sum()))}); per domain {dict(selection.domains)};"
        f" {selection.solver} {selection.status} (gap {selection.gap:.1e})"
    )
    print(f"-> {subset_path} (+ manifest)")

    _step(
        "6. meta-evaluation on sim/blind: does the subset rank systems like the full set? (vs 20 random subsets;"
        f" p-values against {NULL_ORDERINGS} random orderings scored the same way)"
    )
    plan = BenchmarkPlan(
        methods=["metric_var", "diversity"],
        metric=METRIC,
        props=[0.1, 0.2, 0.3, 0.4, 0.5],
        seeds=20,
        seed=args.seed,
        method_options={"diversity": {"similarity": "chrf"}},
    )
    bench = run_benchmark(blind, plan, external={"estimator (sources only)": predicted}, progress=False)
    print(summary_table(bench))
    (work / "benchmark.json").write_text(jsonsafe.dumps(bench, indent=2, default=str) + "\n", encoding="utf-8")
    plot_benchmark(bench, work / "benchmark.png")
    print(f"-> {out}/benchmark.json, {out}/benchmark.png")

    _step("7. pairwise: DiffUse vs random for two systems, annotate-until-decided, Bradley-Terry ratings")
    print(demo_pairwise(seed=args.seed))

    print(f"\ndone in {time.perf_counter() - started:.0f} s; outputs in {out.resolve()}")
    return 0
