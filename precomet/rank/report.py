"""A ranking for people: the terminal table, its footer lines about the subset, and the figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from precomet.metaeval import CLUSTER_ALPHA
from precomet.rank.composition import LENGTH_RATIO_RANGE, MAX_DOMAIN_TVD, _share_text
from precomet.rank.ranking import Ranking


def ranking_table(ranking: Ranking) -> str:
    """The terminal table: rank range, cluster, system, mean, CI, ratings, the p-value that placed the system (vs
    the previous system, or the smallest vs the current cluster under the WMT rule); with reweighting its means and
    CIs beside the raw ones; footer lines for the rule, the composition and the full-data τ."""
    width = max(12, *(len(s) for s in ranking.systems))
    pct = f"{ranking.confidence:.0%}"
    rw = ranking.reweighted
    wmt = ranking.cluster_rule == "wmt"
    p_header = "p(clus)" if wmt else "p(prev)"
    header = f"{'rank':>5} {'cl':>3} {'system':<{width}} {'mean':>9} {pct + ' CI':>21} {'n':>6} {p_header:>8}"
    if rw is not None:
        header += f" {'rw mean':>9} {'rw ' + pct + ' CI':>21}"
    lines = [header]
    cluster = ranking.cluster_of()
    for i, (name, rank) in enumerate(zip(ranking.systems, ranking.rank_ranges())):
        if i and cluster[i] != cluster[i - 1]:
            lines.append("-" * len(lines[0]))
        p = "" if i == 0 else f"{ranking.cluster_pvalues[i - 1]:.3g}"
        ci = f"[{ranking.ci_low[i]:.4g}, {ranking.ci_high[i]:.4g}]"
        line = (
            f"{rank:>5} {cluster[i]:>3} {name:<{width}} {ranking.means[i]:>9.4g} {ci:>21} {ranking.n_rated[i]:>6} "
            f"{p:>8}"
        )
        if rw is not None:
            line += f" {rw.means[i]:>9.4g} {f'[{rw.ci_low[i]:.4g}, {rw.ci_high[i]:.4g}]':>21}"
        lines.append(line)
    sig = ranking.signature
    alpha = sig.get("alpha", CLUSTER_ALPHA)
    rule = (
        f"WMT rule: one-sided Wilcoxon vs every member of the current cluster, p <= {alpha}"
        if wmt
        else f"Algorithm 1: one-sided Wilcoxon vs the previous system, p < {alpha}"
    )
    lines.append(
        f"{len(ranking.clusters)} cluster(s) ({rule}); {pct} bootstrap CI"
        f" from {ranking.rounds} rounds, seed {ranking.seed}; {sig.get('items', '?')} items, score "
        f"{sig.get('score', '?')!r}"
    )
    lines += summary_lines(ranking)
    return "\n".join(lines)


def summary_lines(ranking: Ranking) -> list[str]:
    """The footer lines about the subset: reweighting, composition against the test set, τ to the full data."""
    lines = []
    rw, comp, full = ranking.reweighted, ranking.composition, ranking.full_data
    if rw is not None:
        shares = ", ".join(f"{s} {_share_text(w)}" for s, w in zip(rw.strata, rw.test_share))
        lines.append(
            f"rw = reweighted: each {rw.by} stratum's subset mean weighted by its test-set share ({shares}); CI from "
            f"a bootstrap within strata"
        )
        lines += [f"  note: {note}" for note in rw.notes]
    if comp is not None:
        if comp.note:
            lines.append(f"composition: {comp.note}")
        else:
            verdict = "differs materially: subset means are not test-set means" if comp.material else "representative"
            lines.append(
                f"composition vs the test set's {comp.test_items} items: domain total variation {comp.domain_tvd:.2f}"
                f" (material above {MAX_DOMAIN_TVD:g}), mean source length ratio {comp.length_ratio:.2f} (material "
                f"outside [{LENGTH_RATIO_RANGE[0]:g}, {LENGTH_RATIO_RANGE[1]:g}]): {verdict}"
            )
    if full is not None:
        if full.tau is None:
            lines.append(f"full data: {full.note}")
        else:
            text = (
                f"full data ({full.items} scored items): Kendall tau {full.tau:.3f} between the subset's and the "
                f"full-data system order, {full.flipped} of {full.pairs} system pairs flipped"
            )
            if full.tau_reweighted is not None:
                text += f" (reweighted: tau {full.tau_reweighted:.3f}, {full.flipped_reweighted} flipped)"
            lines.append(text)
    return lines


def figure_title(ranking: Ranking) -> str:
    """``"wmt23/zh-en: a subset of 283 of 1,177 items, 7 significance clusters"`` (without "a subset of" and
    "of N" when the whole data is ranked)."""
    sig = ranking.signature
    items = f"{sig.get('items', '?')} items"
    if sig.get("test_items") is not None:
        items = f"a subset of {sig.get('items', '?')} of {sig['test_items']:,} items"
    return f"{sig.get('campaign', '')}: {items}, {len(ranking.clusters)} significance clusters"


def _means_with_intervals(ax, means, low, high, y, *, marker: str, color: str, label: str | None) -> None:
    """One marker per system at its mean, with its interval as a bar (the smaller diamonds: reweighted means)."""
    small = marker != "o"
    ax.errorbar(
        means,
        y,
        xerr=[means - low, high - means],
        fmt=marker,
        color=color,
        ecolor=color,
        capsize=2 if small else 3,
        markersize=3 if small else 4,
        zorder=2,
        label=label,
    )


def plot_ranking(ranking: Ranking, path: str | Path, *, title: str | None = None) -> None:
    """The findings-paper figure: one row per system (best on top), mean with its CI bar, clusters as
    alternating bands with their number; a reweighted ranking adds its post-stratified means (diamonds). Uses a
    bare :class:`matplotlib.figure.Figure` (no pyplot, no backend switch); the format follows the file suffix."""
    from matplotlib.figure import Figure

    s = len(ranking.systems)
    fig = Figure(figsize=(7, 0.9 + 0.32 * s))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(s)[::-1]  # best on top
    start = 0
    for c, members in enumerate(ranking.clusters, start=1):
        top, bottom = y[start] + 0.5, y[start + len(members) - 1] - 0.5
        ax.axhspan(bottom, top, color="0.92" if c % 2 else "0.82", zorder=0, linewidth=0)
        ax.text(1.01, (top + bottom) / 2, f"cluster {c}", transform=ax.get_yaxis_transform(), va="center", fontsize=8)
        start += len(members)
    raw = "subset means" if ranking.reweighted is not None else None
    _means_with_intervals(ax, ranking.means, ranking.ci_low, ranking.ci_high, y, marker="o", color="C0", label=raw)
    if ranking.reweighted is not None:  # --reweight: the post-stratified means beside the raw ones
        rw = ranking.reweighted
        label = f"reweighted by {rw.by}"
        _means_with_intervals(ax, rw.means, rw.ci_low, rw.ci_high, y - 0.22, marker="D", color="C1", label=label)
        ax.legend(fontsize=7, loc="lower right")
    ax.set_yticks(y)
    ax.set_yticklabels(list(ranking.systems), fontsize=8)
    ax.set_ylim(-0.5, s - 0.5)
    sig = ranking.signature
    ax.set_xlabel(f"mean {sig.get('score', 'score')} ({ranking.confidence:.0%} bootstrap CI, {ranking.rounds} rounds)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or figure_title(ranking), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
