"""Cost-aware selection speed and quality: precomet vs subset2evaluate 1.0.27 ``costaware`` on the same data.

Usage: .venv/bin/python benchmarks/bench_select.py [--n 1000] [--large 50000] [--plain-cbc] [--peer-large] [--real]
       [--out benchmarks/results/knapsack.md]
       .venv/bin/python benchmarks/bench_select.py --pool [--pool-sizes 1000000 10000000]

1. ``--n`` items (synthetic campaign: sources -> cost = 0.15·len + 33.7, utility ~ N(0, 1)); every budget
   from 5 % to 50 % of the total cost. Both tools get identical utilities/costs; the peer runs in
   benchmarks/.peer-venv via subprocess (its own clock, import excluded). Quality = the normalised objective
   (both tools use the same [0.1, 0.6] map) and whether the peer's subset respects the budget.
2. ``--large`` items with a cost budget (20 %) alone and with 5 equal-count domain constraints; precomet's
   certified gap is printed. ``--plain-cbc`` also solves the 5-domain case with the straightforward pulp/CBC
   model (the ~30 s baseline); ``--peer-large`` runs the peer on the plain large case (60 s time limit).
3. ``--real``: the default objective (rank-length) on real campaigns in ../shared/data/raw (WMT22/23 zh-en,
   WMT23 en-de with real ESA seconds), MetricX utilities, budgets 5 %..50 % of the cost: slowest solve and
   whether every one was certified optimal.
4. ``--pool`` (alone; writes benchmarks/results/knapsack-pool.md): selection at pool size. Per size, in a fresh
   process: ``select_subset`` with a cost budget (20 %) and 5 equal-count domains under the default objective
   (wall time, peak RSS of the process, status, gap), then top-k (20 % of the items, count budget) in another.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from paths import REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)
from report import results_file  # benchmarks/report.py

from precomet.campaign import source_length
from precomet.selection import SubsetPlan, select_subset
from precomet.selection.units import normalise
from precomet.simulate import simulate_campaign

PROPS = np.linspace(0.05, 0.5, 10)

PEER_SCRIPT = r"""
import json, sys, time
from subset2evaluate.select_subset import costaware
spec = json.load(open(sys.argv[1]))
data = [
    {"i": i, "subset2evaluate_utility": u, "cost": c} for i, (u, c) in enumerate(zip(spec["utility"], spec["cost"]))
]
out = []
for budget in spec["budgets"]:
    start = time.perf_counter()
    chosen = costaware([dict(x) for x in data], budget, time_limit=spec["time_limit"])
    out.append({"seconds": time.perf_counter() - start, "indices": [x["i"] for x in chosen]})
print(json.dumps(out))
"""


def peer_costaware(utility: np.ndarray, cost: np.ndarray, budgets: list[float], time_limit: float = 60.0) -> list[dict]:
    python = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "peer_env.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(
            json.dumps(
                {"utility": utility.tolist(), "cost": cost.tolist(), "budgets": budgets, "time_limit": time_limit}
            )
        )
        script = Path(tmp) / "peer.py"
        script.write_text(PEER_SCRIPT)
        done = subprocess.run([python, str(script), str(spec)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def plain_cbc(value: np.ndarray, cost: np.ndarray, codes: np.ndarray, capacity: float) -> tuple[float, float, str]:
    """The straightforward pulp model (x binary, one budget row, k integer, one row per domain)."""
    import pulp

    start = time.perf_counter()
    model = pulp.LpProblem("plain", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(len(value))]
    k = pulp.LpVariable("k", 0, len(value), cat="Integer")
    model += pulp.lpDot(value.tolist(), x)
    model += pulp.lpDot(cost.tolist(), x) <= capacity
    for g in np.unique(codes):
        model += pulp.lpSum(x[i] for i in np.flatnonzero(codes == g)) == k
    model.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=120, gapRel=1e-4))
    return time.perf_counter() - start, float(pulp.value(model.objective)), pulp.LpStatus[model.status]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--large", type=int, default=50000)
    parser.add_argument("--plain-cbc", action="store_true")
    parser.add_argument("--peer-large", action="store_true")
    parser.add_argument("--real", action="store_true", help="rank-length solves on real campaigns (needs ../shared)")
    parser.add_argument("--out", type=Path, default=None, help="the printed tables (default by mode)")
    parser.add_argument("--pool", action="store_true", help="selection at pool size (1M and 10M items)")
    parser.add_argument("--pool-sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--pool-child", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pool_child:
        print(json.dumps(pool_case(args.pool_child[0], int(args.pool_child[1]))))
        return
    if args.pool:
        title = "Subset building at pool size: knapsack + 5 domains and top-k on millions of items"
        with results_file(args.out or RESULTS / "knapsack-pool.md", title, fenced=True):
            pool(args.pool_sizes)
        return
    args.out = args.out or RESULTS / "knapsack.md"
    with results_file(args.out, "Subset building: the knapsack vs subset2evaluate 1.0.27 costaware", fenced=True):
        measure(args)


def measure(args: argparse.Namespace) -> None:

    campaign = simulate_campaign(n_items=args.n, n_systems=4, seed=0)
    cost = campaign.cost
    utility = np.random.default_rng(0).normal(size=args.n)
    value = normalise(utility)
    budgets = [float(p * cost.sum()) for p in PROPS]
    ours = []
    for budget in budgets:
        sel = select_subset(
            utility, SubsetPlan(budget_cost=budget, cost_objective="paper"), cost=cost
        )  # the peer's objective
        ours.append(sel)
    peer = peer_costaware(utility, cost, budgets)
    print(f"== {args.n} items, cost budget 5%..50% (cost = 0.15*len+33.7, utility ~ N(0,1)) ==")
    print(
        f"{'budget':>7} {'ours s':>8} {'peer s':>8} {'ratio':>7} {'ours obj':>10} {'peer obj':>10} {'gap':>9} "
        f"{'peer over':>9}"
    )
    for p, budget, sel, theirs in zip(PROPS, budgets, ours, peer):
        idx = np.array(theirs["indices"], dtype=int)
        over = cost[idx].sum() - budget
        print(
            f"{p:7.0%} {sel.seconds:8.3f} {theirs['seconds']:8.3f} {theirs['seconds'] / sel.seconds:6.1f}x "
            f"{sel.objective:10.4f} {value[idx].sum():10.4f} {sel.gap:9.1e} {'yes' if over > 1e-9 else 'no':>9}"
        )
    ours_s = np.array([s.seconds for s in ours])
    peer_s = np.array([t["seconds"] for t in peer])
    print(
        f"max ours {ours_s.max():.3f} s, max peer {peer_s.max():.3f} s; total ratio {peer_s.sum() / ours_s.sum():.1f}x"
    )
    default = [
        select_subset(utility, SubsetPlan(budget_cost=b), cost=cost, length=source_length(campaign.src))
        for b in budgets
    ]
    print(
        f"default objective rank-length, same budgets: max {max(s.seconds for s in default):.3f} s, "
        f"statuses {sorted({s.status for s in default})}, max gap {max(s.gap for s in default):.1e}"
    )

    rng = np.random.default_rng(1)
    big = simulate_campaign(n_items=args.large, n_systems=2, seed=1)
    big_u = rng.normal(size=args.large)
    domain = rng.choice(["news", "social", "speech", "literary", "user_review"], args.large)
    print(f"\n== {args.large} items, budget 20% of cost ==")
    length = source_length(big.src)
    cases = [
        (f"{objective}, {label}", SubsetPlan(proportion=0.2, cost_objective=objective, balance=balance), by_domain)
        for objective in ("paper", "rank-length")
        for label, balance, by_domain in (("budget only", None, None), ("+ 5 domains", "domain", domain))
    ]
    found = {}
    for label, plan, by_domain in cases:
        sel = found[label] = select_subset(big_u, plan, cost=big.cost, domain=by_domain, length=length)
        print(
            f"{label:28} {sel.seconds:7.2f} s  {sel.status}  gap {sel.gap:.1e}  core {sel.details['core_size']}"
            f"  calls {sel.details['solver_calls']}  items {len(sel)}  domains {dict(sel.domains) or '-'}"
        )
    if args.plain_cbc:
        _, codes = np.unique(domain, return_inverse=True)
        seconds, objective, status = plain_cbc(normalise(big_u), big.cost, codes, 0.2 * big.cost.sum())
        print(
            f"{'plain pulp/CBC 5 domains':24} {seconds:7.2f} s  {status}  objective {objective:.4f} "
            f"(ours {found['paper, + 5 domains'].objective:.4f})"
        )
    if args.peer_large:
        theirs = peer_costaware(big_u, big.cost, [0.2 * float(big.cost.sum())])[0]
        idx = np.array(theirs["indices"], dtype=int)
        print(
            f"{'peer costaware (plain)':24} {theirs['seconds']:7.2f} s  items {len(idx)}  "
            f"objective {normalise(big_u)[idx].sum():.4f}"
        )
    if args.real:
        real_campaigns()


def pool_case(case: str, n: int) -> dict:
    """One pool-size selection in this process: wall seconds of ``select_subset``, peak RSS, outcome."""
    rng = np.random.default_rng(1)
    length = rng.integers(10, 400, n).astype(float)
    utility = rng.normal(size=n)
    domain = rng.choice(np.array(["news", "social", "speech", "literary", "user_review"], dtype=object), n)
    start = time.perf_counter()
    if case == "knapsack":
        cost = 0.15 * length + 33.7
        sel = select_subset(
            utility, SubsetPlan(proportion=0.2, balance="domain"), cost=cost, domain=domain, length=length
        )
    else:
        sel = select_subset(utility, SubsetPlan(budget=n // 5))
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "status": sel.status,
        "gap": sel.gap,
        "items": len(sel),
        "core": sel.details.get("core_size", 0),
    }


def pool(sizes: list[int]) -> None:
    print("synthetic pool: utility ~ N(0,1), length ~ U{10..399} chars, cost = 0.15*len+33.7, 5 random domains")
    print("knapsack: 20% of the cost, 5 equal-count domains, default objective rank-length; top-k: 20% of the items")
    print("peak = the process's maximum RSS (data, inputs and selection); one fresh process per line")
    print(f"{'case':10} {'items':>10} {'seconds':>8} {'peak GB':>8} {'status':>8} {'gap':>8} {'core':>6} {'chosen':>9}")
    for n in sizes:
        for case in ("knapsack", "top-k"):
            done = subprocess.run(
                [sys.executable, __file__, "--pool-child", case, str(n)], capture_output=True, text=True, check=True
            )
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{case:10} {n:>10} {r['seconds']:8.2f} {r['peak_gb']:8.2f} {r['status']:>8} {r['gap']:8.1e} "
                f"{r['core']:>6} {r['items']:>9}"
            )


def real_campaigns() -> None:
    from precomet.io import load
    from precomet.io.annotation_times import annotation_cost
    from precomet.utilities import compute_utility

    raw = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "raw"
    mtme = raw / "mt-metrics-eval-v2"
    cases = {
        "WMT22 zh-en": (lambda: load(mtme, campaign="wmt22/zh-en", human="mqm"), "metricx_xxl_MQM_2020"),
        "WMT23 zh-en": (lambda: load(mtme, campaign="wmt23/zh-en", human="mqm"), "MetricX-23-c"),
        "WMT23 en-de, ESA seconds": (
            lambda: annotation_cost(load(mtme, campaign="wmt23/en-de", human="mqm"), raw / "wmt23-esa-campaign"),
            "MetricX-23-c",
        ),
    }
    print("\n== rank-length on real campaigns, budgets 5%..50% of the cost ==")
    for name, (loader, metric) in cases.items():
        campaign = loader()
        for method in ("metric_avg", "metric_var", "metric_cons"):
            utility = compute_utility(campaign, method, metric=metric)
            sels = [
                select_subset(utility, SubsetPlan(proportion=p), cost=campaign.cost, length=source_length(campaign.src))
                for p in np.arange(1, 11) / 20
            ]
            print(
                f"{name:26} {method:11} max {max(s.seconds for s in sels):.2f} s  {sorted({s.status for s in sels})}"
                f"  max gap {max(s.gap for s in sels):.1e}"
            )


if __name__ == "__main__":
    main()
