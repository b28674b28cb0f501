"""Leave-one-campaign-out over the human-scored history: the development protocol of the source-based estimator.

History: the 14 crowd-DA campaigns of WMT21-22 into English (``wmt-news-systems-toen``, aligned through their
documents, SOURCES.md §9; sources in cs, de, ha, is, ja, ru, uk, zh, liv) and WMT22 zh-en MQM (mt-metrics-eval).
Campaigns that share sources (WMT22 zh-en DA and MQM) form one fold (:func:`precomet.benchmark.shared_item_groups`),
so no source crosses folds; every training row that shares a source, a sentence or a long run with the held-out
fold is dropped as well (the leak guard).

Per fold and target: the estimator (``configs/precomet-e5.yaml``: frozen multilingual-e5-small + MLP head) is
trained on the other folds' targets (z-scored per campaign, merged by source) with each seed, plus the length
model (the same head on the source length only); it predicts the held-out sources, and every selector is
benchmarked on the held-out campaign's real judgements with the verdict of ``run_benchmark`` (SPA gain against
100 random subsets and 200 random orderings): the estimator per seed and its ensemble (mean of z-scored
predictions), ``estimator - length``, ``strata``, and the controls ``longer first``, ``length model`` and
``k-means`` on the source vectors (``bench_source_suite.evaluate``).

Evaluation needs every system scored on every item; crowd DA is not. Every held-out campaign is evaluated on its
**core**: systems are dropped one at a time (the one whose removal completes the most items; on a complete matrix
the first ones) until ``CORE`` remain, then the items scored for all of them are kept — real judgements only,
56-95 % of a DA campaign's items; the MQM campaign keeps all its items on 6 of its systems.

Targets (``--targets``):

* ``metric_avg``: minus the mean DA z of the scored systems per item (items with ≥ 3 scored systems), the naive
  target of issue 31; on MQM the plain MetricAvg;
* ``item_effect``: the additive item + system model on the scored cells weighted by the judgements per cell,
  shrunk (:mod:`precomet.utilities.additive`);
* ``metric_cons``: MetricCons on the scored cells, :func:`sparse_consistency` (on MQM the plain MetricCons).

``--headroom`` benchmarks each target's *true* values on every campaign (and the paper's other utilities: the
five IRT ones on the human scores, output diversity): what distilling it could give at best.

Verdicts pool the folds (:func:`precomet.benchmark.pool_results`: each fold counts once) against the same pooling
of random orderings; each selector is compared with each control by the per-fold difference of SPA gains (an exact
sign-flip test over folds).

    .venv/bin/python benchmarks/bench_estimator_loco.py --targets item_effect metric_avg --seeds 0 1 2
    .venv/bin/python benchmarks/bench_estimator_loco.py --report
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_source_suite import CACHE, CONFIG, evaluate  # noqa: E402
from history_targets import history, raw_target, target_rows  # noqa: E402
from paths import RESULTS, SCRATCH  # noqa: E402
from report import invocation, p_text  # noqa: E402  (benchmarks/report.py)

from precomet.benchmark import BenchmarkPlan, pool_results, run_benchmark, shared_item_groups  # noqa: E402
from precomet.campaign import HUMAN, Campaign, source_length  # noqa: E402
from precomet.encoders import encode_cached, get_encoder  # noqa: E402
from precomet.estimator import predict_sources, train  # noqa: E402
from precomet.estimator.leakage import drop_sources  # noqa: E402
from precomet.estimator.targets import merge_by_source  # noqa: E402
from precomet.utilities import compute_utility  # noqa: E402
from precomet.utilities.irt import UTILITY_KINDS, fit_irt, irt_utilities  # noqa: E402

CORE = 6
"""Systems kept to evaluate a held-out crowd-DA campaign (fewer when it has fewer)."""
BACKBONE = "e5-small"
OUT = SCRATCH / "loco"
JSON = RESULTS / "estimator_loco.json"
HEADROOM = RESULTS / "estimator_loco_headroom.json"
CONTROLS = ("longer first", "length model", "k-means")
TARGETS = ("item_effect", "metric_avg", "metric_cons")


def split_half_reliability(campaign: Campaign, target: str, *, draws: int = 20) -> float:
    """Mean over ``draws`` random halves of the systems of the Pearson correlation between the target computed on
    one half and on the other (items with a target on both): how much of the target is the item, not the noise
    and not which systems were scored."""
    found = []
    for draw in range(draws):
        order = np.random.default_rng([draw, 31]).permutation(len(campaign.systems))
        halves = [[campaign.systems[j] for j in sorted(part)] for part in np.array_split(order, 2)]
        a, b = (raw_target(campaign.restrict_systems(half), target) for half in halves)
        both = np.isfinite(a) & np.isfinite(b)
        if both.sum() > 2:
            found.append(float(pearsonr(a[both], b[both])[0]))
    return float(np.mean(found))


def core(campaign: Campaign, size: int = CORE) -> Campaign:
    """The items scored for every system of the ``size``-system core (greedy, see the module docstring)."""
    scored = ~np.isnan(campaign.score(HUMAN))
    keep = list(range(len(campaign.systems)))
    while len(keep) > size:
        complete = [(int(scored[:, [k for k in keep if k != j]].all(axis=1).sum()), -j) for j in keep]
        keep.remove(-max(complete)[1])
    systems = [campaign.systems[j] for j in keep]
    restricted = campaign.restrict_systems(systems)
    complete_items, _ = restricted.complete(HUMAN)
    return complete_items


def fit(rows: list[dict], *, backbone: str, seed: int, out: Path) -> Path:
    if out.exists():
        import shutil

        shutil.rmtree(out)
    overrides = {"model.backbone": backbone, "data.cache_dir": str(CACHE), "seed_everything": seed}
    train(rows, out_dir=out, config=CONFIG, overrides=overrides, progress=False)
    return out


def run_fold(
    fold: list[str], campaigns: dict[str, Campaign], rows: list[dict], *, target: str, seeds: list[int]
) -> dict:
    """Train on every other fold, evaluate each campaign of ``fold`` on its core."""
    train_rows = [r for r in rows if r["campaign"] not in fold]
    dropped = 0
    for name in fold:
        train_rows, n = drop_sources(train_rows, campaigns[name].src)
        dropped += n
    train_rows = merge_by_source(train_rows)
    where = OUT / target / fold[0].replace("/", "_").replace(" ", "_")
    started = time.perf_counter()
    seeded = [fit(train_rows, backbone=BACKBONE, seed=s, out=where / f"seed{s}") for s in seeds]
    length_model = fit(train_rows, backbone="length", seed=seeds[0], out=where / "length")
    train_seconds = time.perf_counter() - started
    out = {}
    for name in fold:
        held = core(campaigns[name])
        sources = list(held.src)
        preds = {
            f"estimator s{c.name.removeprefix('seed')}": predict_sources(c, sources, progress=False) for c in seeded
        }
        z = [(p - p.mean()) / (p.std() or 1.0) for p in preds.values()]
        predictions = {**preds, "estimator": np.mean(z, axis=0)}  # the ensemble (one seed: that seed)
        predictions["length model"] = predict_sources(length_model, sources, progress=False)
        vectors = encode_cached(get_encoder(BACKBONE), sources, cache_dir=CACHE)
        result = evaluate(held, predictions, vectors, budget_unit="items")
        truth = raw_target(held, target)
        result["pearson_truth"] = {k: float(pearsonr(v, truth)[0]) for k, v in predictions.items()}
        out[name] = {
            **result,
            "core_systems": list(held.systems),
            "all_items": len(campaigns[name]),
            "training_rows": len(train_rows),
            "leak_guard_dropped_rows": dropped,
            "train_seconds": train_seconds,
        }
        print(
            f"{name} ({target}): {len(held)} items x {len(held.systems)} systems;",
            {k: f"{100 * v['spa_gain']:+.1f} p={v['p_value']:.2f}" for k, v in result["rows"].items()},
            flush=True,
        )
    return out


def headroom() -> dict:
    """What the targets would give if they were known: every true utility, computed on the held-out campaign's own
    judgements (``item_effect`` on all its scored cells, the others on its core), benchmarked on its core like the
    estimator. A target whose true values do not beat random cannot be distilled into a selector that does."""
    campaigns = history()
    out: dict = {"command": invocation(), "folds": shared_item_groups({n: c.src for n, c in campaigns.items()})}
    out["campaigns"] = {}
    out["reliability"] = {t: {n: split_half_reliability(c, t) for n, c in campaigns.items()} for t in TARGETS}
    for name, campaign in campaigns.items():
        held = core(campaign)
        index = campaign.index_of(list(held.ids))
        truths = {
            "true item_effect": compute_utility(campaign, "item_effect", metric=HUMAN)[index],
            **{
                f"true {m}": compute_utility(held, m, metric=HUMAN) for m in ("metric_avg", "metric_var", "metric_cons")
            },
            **other_true_utilities(held),
            "longer first": source_length(held.src),
        }
        result = run_benchmark(held, BenchmarkPlan(seeds=100, oracle=False), external=truths, progress=False)
        assert result.null is not None  # the default null of random orderings
        out["campaigns"][name] = {
            "rows": {
                k: {"spa_gain": r["spa_gain"], "parity": r["parity"], "p_value": r["p_value"]}
                for k, r in result.methods.items()
            },
            "null": {key: result.null[key] for key in ("spa_gain", "parity")},
        }
        print(
            name,
            {k: f"{100 * r['spa_gain']:+.1f} p={r['p_value']:.2f}" for k, r in result.methods.items()},
            flush=True,
        )
    HEADROOM.write_text(json.dumps(out, indent=1) + "\n")
    return out


def other_true_utilities(held: Campaign) -> dict[str, np.ndarray]:
    """The paper's other output-based utilities, true on ``held``: the five IRT ones (one 4PL fit on its human
    scores, the package defaults) and output diversity (English outputs: MiniLM embeddings, and chrF)."""
    params = fit_irt(held, metric=HUMAN, seed=0)
    return {
        **{f"true irt_{kind}": irt_utilities(params, kind) for kind in UTILITY_KINDS},
        "true diversity (embedding)": compute_utility(held, "diversity"),
        "true diversity (chrF)": compute_utility(held, "diversity", options={"similarity": "chrf"}),
    }


def run(targets: list[str], seeds: list[int], *, resume: bool) -> dict:
    campaigns = history()
    folds = shared_item_groups({name: c.src for name, c in campaigns.items()})
    found = json.loads(JSON.read_text()) if resume and JSON.exists() else {"reliability": {}, "runs": {}}
    found.setdefault("command", invocation())
    for target in targets:
        if target not in found["reliability"]:
            found["reliability"][target] = {n: split_half_reliability(c, target) for n, c in campaigns.items()}
        key = f"{target} seeds {','.join(map(str, seeds))}"
        rows = target_rows(campaigns, target)
        entry = found["runs"].setdefault(key, {"target": target, "seeds": seeds, "folds": folds, "campaigns": {}})
        entry.setdefault("command", invocation())
        for fold in folds:
            if all(name in entry["campaigns"] for name in fold):
                continue  # --resume: this fold is done
            entry["campaigns"].update(run_fold(fold, campaigns, rows, target=target, seeds=seeds))
            JSON.write_text(json.dumps(found, indent=1) + "\n")  # after every fold: --resume goes on from here
    return found


def pooled(entry: dict) -> dict:
    """:func:`precomet.benchmark.pool_results` over the folds of a run (or of the headroom)."""
    as_results = {n: {"methods": c["rows"], "controls": {}, "null": c["null"]} for n, c in entry["campaigns"].items()}
    return pool_results(as_results, groups=entry["folds"])


def paired(entry: dict, row: str, control: str) -> tuple[float, int, int, float]:
    """Mean over folds of (row's SPA gain - control's), folds where the row is ahead, folds, and the exact two-sided
    sign-flip p-value of the mean difference."""
    diffs = np.array(
        [
            np.mean(
                [
                    entry["campaigns"][n]["rows"][row]["spa_gain"] - entry["campaigns"][n]["rows"][control]["spa_gain"]
                    for n in fold
                ]
            )
            for fold in entry["folds"]
        ]
    )
    flips = np.array(list(itertools.product((1, -1), repeat=len(diffs))))
    null = np.abs((flips * diffs).mean(axis=1))
    p = float(np.mean(null >= abs(diffs.mean()) - 1e-15))
    return float(diffs.mean()), int((diffs > 0).sum()), len(diffs), p


def _campaign_header(first: str, names: list[str], last: list[str]) -> list[str]:
    """A Markdown table's header with one column per history campaign (``wmt21/cs-en``, ``… MQM``)."""
    columns = [n.split(" ", 1)[1] + (" MQM" if n.startswith("mqm") else "") for n in names]
    return ["| " + " | ".join([first, *columns, *last]) + " |", "|---|" + "---|" * (len(names) + len(last))]


def headroom_table(found: dict) -> list[str]:
    """The true utilities per campaign (SPA gain, points) and pooled over the folds (p against random orderings)."""
    pool = pooled(found)
    names = list(found["campaigns"])
    lines = [
        "### Headroom: the targets' true values on each held-out campaign",
        "",
        f"`{found['command']}`. Each target computed on the campaign's own judgements (circular for the"
        " score-based ones: an upper bound of what distilling it could give, not a selector), benchmarked on its core.",
        "",
        *_campaign_header("true utility", names, ["pooled", "p"]),
    ]
    for row, values in pool["rows"].items():
        cells = [f"{100 * found['campaigns'][n]['rows'][row]['spa_gain']:+.1f}" for n in names]
        lines.append(
            f"| {row} | " + " | ".join(cells) + f" | {100 * values['spa_gain']:+.2f} | {p_text(values['p_value'])} |"
        )
    return [*lines, ""]


def report(found: dict) -> list[str]:
    runs = found["runs"]
    lines = [
        "# Source-based estimator: leave-one-campaign-out over the human-scored history (issue 31)",
        "",
        f"Command: `{found['command']}`",
        "",
        "Development protocol (issue 31): 15 human-scored campaigns (14 crowd-DA WMT21-22 into English, WMT22 zh-en"
        " MQM), one fold per group of campaigns sharing sources (WMT22 zh-en DA + MQM are one), so"
        f" {len(next(iter(runs.values()))['folds']) if runs else 0} folds. Each fold's estimator is trained on the"
        " others, and judged on the held-out campaign's real judgements (its"
        f" {CORE}-system core, MQM too). Pooled = mean over folds of the SPA gain (points of SPA over random's"
        " mean curve), p against 200 random orderings pooled the same way; parity = pooled share of random's budget."
        " `vs control` = mean per-fold gain difference, folds ahead, exact sign-flip p over folds.",
        "",
    ]
    reliability = {
        **found["reliability"],
        **(json.loads(HEADROOM.read_text())["reliability"] if HEADROOM.exists() else {}),
    }
    if reliability:
        names = list(next(iter(reliability.values())))
        lines += [
            "### How much of each target is the item: split-half reliability",
            "",
            "Pearson between the target computed on one random half of the systems and on the other (20 halves;"
            " items with a target on both), per history campaign.",
            "",
            *_campaign_header("target", names, ["mean (DA)"]),
        ]
        for target, by_campaign in reliability.items():
            da = [v for n, v in by_campaign.items() if n.startswith("da ")]
            lines.append(
                f"| {target} | " + " | ".join(f"{by_campaign[n]:.3f}" for n in names) + f" | {np.mean(da):.3f} |"
            )
        lines.append("")
    if HEADROOM.exists():
        lines += headroom_table(json.loads(HEADROOM.read_text()))
    for key, entry in runs.items():
        pool = pooled(entry)
        rows = pool["rows"]
        lines += [f"### target {key.replace(' seeds ', ', seeds ')}", ""]
        lines += [f"`{entry.get('command', found['command'])}`", ""]
        lines += ["| selector | pooled gain | p | parity | p(parity) | mean Pearson with the fold's target |"]
        lines += ["|---|---|---|---|---|---|"]
        for name, row in rows.items():
            pears = [c["pearson_truth"].get(name) for c in entry["campaigns"].values()]
            pear = f"{np.mean(pears):.3f}" if all(p is not None for p in pears) else ""
            lines.append(
                f"| {name} | {100 * row['spa_gain']:+.2f} | {p_text(row['p_value'])} | {row['parity']:.0%} |"
                f" {p_text(row['parity_p_value'])} | {pear} |"
            )
        lines += ["", "| selector vs control | " + " | ".join(CONTROLS) + " |", "|---|" + "---|" * len(CONTROLS)]
        for name in rows:
            if name in CONTROLS:
                continue
            cells = []
            for control in CONTROLS:
                diff, ahead, n, p = paired(entry, name, control)
                cells.append(f"{100 * diff:+.2f} ({ahead}/{n}, {p_text(p)})")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=["item_effect", "metric_avg"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--resume", action="store_true", help="keep the folds already in the JSON (else start anew)")
    parser.add_argument("--report", action="store_true", help="only rewrite the report from the JSON")
    parser.add_argument("--headroom", action="store_true", help="only benchmark the true utilities of every campaign")
    args = parser.parse_args()
    if args.headroom:
        headroom()
        return
    found = json.loads(JSON.read_text()) if args.report else run(args.targets, args.seeds, resume=args.resume)
    out = RESULTS / "estimator_loco.md"
    out.write_text("\n".join(report(found)) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
