"""The report of a benchmark result: the recommendation, the plain-text summary table and the figure."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from precomet.benchmark.null import PRIMARY, PRIMARY_MEANING, SIGNIFICANCE, null_band_text
from precomet.benchmark.parity import PARITY_MEANING
from precomet.benchmark.plan import LENGTH_CONTROL
from precomet.costs import cost_unit, describe_time, format_duration
from precomet.record import Record, as_json
from precomet.selection.units import budget_items


def budgets_by_cost(signature: Mapping[str, Any]) -> bool:
    """Whether a benchmark result's budgets are shares of the annotation cost (``budget_unit``; results written
    by precomet 0.4 and earlier say ``budget_cost: true``)."""
    return signature.get("budget_unit") == "cost" or bool(signature.get("budget_cost"))


def recommendation(result: Record | Mapping[str, Any]) -> dict[str, Any]:
    """The one-line answer to "how much can I save?", in words that match the evidence: the usable method with the
    highest SPA gain, judged against random orderings scored the same way (:mod:`precomet.benchmark.null`). Only
    ``p_value < SIGNIFICANCE`` earns "saves X %" (X = 100 % − its parity, with the null-calibrated 90 % interval);
    otherwise the method is "indistinguishable from random orderings (p = …)" and the advice is a random sample. The
    ``random`` utility method (one random draw) is never recommended; without a null (``null_orderings=0``) no saving
    is claimed. When the length control does at least as well, the text says so (the utility adds nothing beyond
    length). Returns ``{"method", "parity", "parity_ci90", "p_value", "unit", "text", "length_parity",
    "length_p_value"}`` (``method`` ``None`` unless it beats random orderings)."""
    result = as_json(result)
    by_cost = budgets_by_cost(result["signature"])
    unit = cost_unit(result.get("cost", {}).get("source", "")) if by_cost else "items"
    rows = {  # the "random" utility is a random sample: its parity is the luck of one draw, not a method to advise
        name: m for name, m in result["methods"].items() if np.isfinite(m["parity"]) and name != "random"
    }
    control = result.get("controls", {}).get(LENGTH_CONTROL)
    length = float(control["parity"]) if control else None
    length_p = control.get("p_value") if control else None
    empty = {"method": None, "parity": None, "parity_ci90": None, "p_value": None, "unit": unit}
    if not rows:
        return {**empty, "text": "no method to recommend", "length_parity": length, "length_p_value": length_p}
    best = max(rows, key=lambda name: rows[name][PRIMARY])
    row = rows[best]
    parity, p = float(row["parity"]), row.get("p_value")
    answer = {
        "parity": parity,
        "parity_ci90": row.get("parity_ci90"),
        "p_value": p,
        "unit": unit,
        "length_parity": length,
        "length_p_value": length_p,
    }
    needs = f"{best} needs {_percent(parity)} of the {unit} to match random"
    if p is None:
        text = f"{needs}; not tested against random orderings (null_orderings=0), so no saving is claimed"
        return {"method": None, "text": text, **answer}
    low, high = row["parity_ci90"]
    against = f"p = {_p(p)} against {row['null']['orderings']} random orderings"
    if p >= SIGNIFICANCE:
        null = row["null"]  # its band is missing only from results built by hand
        band = ""
        if {"parity_p05", "parity_p95"} <= set(null):
            band = f"; random orderings alone reach {_percent(null['parity_p05'])}–{_percent(null['parity_p95'])}"
        text = f"indistinguishable from random orderings ({against}): annotate a random sample ({needs}{band})"
        if length_p is not None and length_p < SIGNIFICANCE and length is not None and length < 1.0:
            text += (
                f"; source length does beat them: select by length (method {LENGTH_CONTROL!r} needs"
                f" {_percent(length)}, p = {_p(length_p)})"
            )
        return {"method": None, "text": text, **answer}
    if parity >= 1.0:
        text = f"{best} beats random orderings on accuracy ({against}) but saves nothing: it needs {_percent(parity)}"
        text += f" of the {unit} to match random"
    else:
        text = (
            f"{best} saves {_percent(1.0 - parity)} of the {unit}: random's accuracy with {_percent(parity)}"
            f" (90 % interval {_percent(low)}–{_percent(high)}; {against})"
        )
        if by_cost and unit == "annotation time":
            text += f", i.e. {round(60 * parity)} min per hour of random annotation"
    if control is not None and control[PRIMARY] >= row[PRIMARY]:
        text += (
            f"; the length control alone does as well (needs {_percent(length or 0.0)}, p = {_p(length_p)}):"
            " the utility adds nothing beyond length here"
        )
    return {"method": best, "text": text, **answer}


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def summary_table(result: Record | Mapping[str, Any]) -> str:
    """A plain-text summary: the annotation cost and budgets (hours and minutes, with the cost's source), mean SPA,
    clusters, Kendall, parity with its 90 % interval per method (random first, then the control rows), what parity
    means, and the recommendation."""
    result = as_json(result)
    width = max(20, *(len(name) + 1 for name in result["methods"]))
    lines = []
    cost = result.get("cost")
    if cost:
        judged = cost.get("judgements")
        whole = describe_time(cost["total_seconds"], judged) if judged else format_duration(cost["total_seconds"])
        lines.append(f"annotation cost: {whole} for {result['items']} items ({cost['source']})")
        props = result["props"]
        if budgets_by_cost(result["signature"]):
            spent = [format_duration(p * cost["total_seconds"]) for p in (min(props), max(props))]
            lines.append(f"budgets: {_percent(min(props))}–{_percent(max(props))} of it ({spent[0]} – {spent[1]})")
        else:
            items = [budget_items(p, result["items"]) for p in (min(props), max(props))]
            spent = [format_duration(p * cost["total_seconds"]) for p in (min(props), max(props))]
            lines.append(
                f"budgets: {items[0]}–{items[1]} items ({_percent(min(props))}–{_percent(max(props))} of the items;"
                f" about {spent[0]} – {spent[1]} at the mean item cost)"
            )
    lines.append(
        f"{'method':<{width}} {'SPA':>7} {'gain':>6} {'clusters':>8} {'kendall':>8} {'parity':>7} {'90% interval':>13} "
        f"{'p':>6} {'seconds':>8}"
    )
    r = result["random"]
    lines.append(
        f"{'random':<{width}} {r['spa']:>7.2%} {'':>6} {r['clusters']:>8.2f} {r['corr']:>8.3f} {'':>7} {'':>13} "
        f"{'':>6} {r['seconds']:>8.1f}"
    )
    rows = [(f"{name} (control)", row) for name, row in result.get("controls", {}).items()]
    rows += list(result["methods"].items())
    if result.get("oracle"):
        rows.append(("oracle (not usable)", result["oracle"]))
    for name, m in rows:
        interval = m.get("parity_ci90")
        shown = f"{interval[0]:.0%}–{interval[1]:.0%}" if interval else "–"
        gain = f"{100 * m[PRIMARY]:+.1f}" if PRIMARY in m else ""
        lines.append(
            f"{name:<{width}} {m['spa']:>7.2%} {gain:>6} {m['clusters']:>8.2f} {m['corr']:>8.3f} {m['parity']:>7.1%} "
            f"{shown:>13} {_p(m.get('p_value')):>6} {m['seconds']:>8.1f}"
        )
    for name, reason in result.get("controls_skipped", {}).items():
        lines.append(f"{name} control: left out ({reason})")
    if result.get("oracle"):
        lines.append(f"  {result['oracle']['description']}")
    lines.append(f"{PARITY_MEANING}")
    null = next((m["null"] for _, m in rows if m.get("null")), None)
    if null:
        lines.append(f"null: {null['orderings']} random orderings scored like a method: {null_band_text(null)}")
        lines.append(
            f"gain: {PRIMARY_MEANING}, in SPA points; p: the share of random orderings that gain as much;"
            " 90 % interval: the parity with a random ordering's luck taken out"
        )
    else:
        lines.append("no null of random orderings (null_orderings=0): no p-values, no intervals, no saving claimed")
    if result.get("recommendation"):
        lines.append(f"recommendation: {result['recommendation']['text']}")
    return "\n".join(lines)


def plot_benchmark(result: Record | Mapping[str, Any], path: str | Path) -> None:
    """Paper Figure 4: SPA vs budget per method with random's 90 % band, a cluster-count panel, and a parity panel
    (each method's parity per budget, its mean with the 90 % interval and p-value; 100 % = random; the grey band is
    where random orderings scored as methods land, 5th–95th percentile, with their median). Control rows are grey
    dash-dotted lines labelled ``(control)``."""
    result = as_json(result)
    from matplotlib.figure import Figure  # a bare Figure: no pyplot state, no backend switch

    x = 100 * np.asarray(result["props"])
    random = result["random"]
    fig = Figure(figsize=(16, 4.4))
    ax_spa, ax_clu, ax_par = fig.subplots(1, 3)
    rows = [
        (f"{name} (control)", m, dict(color="0.55", linestyle="-.", linewidth=1.4), "")
        for name, m in result.get("controls", {}).items()
    ]
    rows += [(name, m, dict(marker="o", markersize=3), "") for name, m in result["methods"].items()]
    if result.get("oracle"):
        rows.append(
            (
                "oracle",
                result["oracle"],
                dict(color="black", linestyle=":", linewidth=1.2),
                " (human scores; not a selector)",
            )
        )
    unit = "annotation cost" if budgets_by_cost(result["signature"]) else "items"
    for ax, key in ((ax_spa, "spa"), (ax_clu, "clusters")):
        scale = 100 if key == "spa" else 1
        band = np.asarray(random[f"{key}_ci90_by_prop"]) * scale
        ax.fill_between(x, band[:, 0], band[:, 1], color="0.8", alpha=0.6, linewidth=0)
        ax.plot(
            x,
            np.asarray(random[f"{key}_by_prop"]) * scale,
            color="0.3",
            linestyle="--",
            label=f"Random {_mean(random, key)}",
        )
        for name, m, style, note in rows:
            ax.plot(x, np.asarray(m[f"{key}_by_prop"]) * scale, label=f"{name} {_mean(m, key)}{note}", **style)
        ax.set_xlabel(f"budget (% of {unit})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    ax_par.axhline(100, color="0.3", linestyle="--", label="Random (100 %)")
    span = float(x.max() - x.min()) or 10.0
    null = next((m["null"] for _, m, _, _ in rows if m.get("null")), None)
    if null:
        ax_par.axhspan(100 * null["parity_p05"], 100 * null["parity_p95"], color="0.85", alpha=0.7, linewidth=0)
        ax_par.axhline(
            100 * null["parity_median"],
            color="0.6",
            linewidth=1,
            label=f"{null['orderings']} random orderings: median, 5–95 % band",
        )
    for i, (name, m, style, _) in enumerate(rows):
        (line,) = ax_par.plot(x, 100 * np.asarray(m["parity_by_prop"]), alpha=0.45, **style)
        mean = 100 * m["parity"]
        low, high = (100 * v for v in (m.get("parity_ci90") or (m["parity"], m["parity"])))
        ax_par.errorbar(
            float(x.max()) + span * 0.07 * (i + 1),
            mean,
            yerr=[[max(mean - low, 0.0)], [max(high - mean, 0.0)]],
            fmt="D",
            markersize=5,
            capsize=3,
            color=line.get_color(),
        )
        p = f", p={m['p_value']:.3f}" if m.get("p_value") is not None else ""
        line.set_label(f"{name} {mean:.0f}% ({low:.0f}–{high:.0f}%{p})")
    ax_par.set_xlabel(f"budget (% of {unit})")
    ax_par.set_ylabel("parity: % of the budget to match random")
    ax_par.set_title("lines: parity per budget; ◆ right: mean with 90% interval; grey: random orderings", fontsize=8)
    ax_par.grid(alpha=0.3)
    ax_par.legend(fontsize=8, loc="best")
    ax_spa.set_ylabel("soft pairwise accuracy (%)")
    ax_clu.set_ylabel("cluster count")
    fig.suptitle(
        f"{result['campaign']}: {result['items']} items × {len(result['systems'])} systems; random band = 90% "
        f"t-interval ({random['seeds']} runs)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _mean(row: Mapping[str, Any], key: str) -> str:
    return f"{row[key] * 100:.1f}%" if key == "spa" else f"{row[key]:.2f}"
