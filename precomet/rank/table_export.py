"""A ranking as a table people paste (``rank --table FILE``): CSV for spreadsheets, LaTeX (booktabs) for the
findings paper, the format chosen by the file's suffix. Rows follow the ranking; clusters are separated by a rule
in LaTeX and numbered in CSV; with reweighting, the reweighted mean and interval follow the raw ones."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from precomet.errors import PrecometError
from precomet.io.text import spreadsheet_cell
from precomet.rank.ranking import Ranking

TABLE_SUFFIXES = (".csv", ".tex")
"""The suffixes ``rank --table`` writes."""

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def check_table_path(path: str | Path) -> None:
    """Refuse a table path whose suffix names no format :func:`ranking_as_table` writes."""
    if Path(path).suffix.lower() not in TABLE_SUFFIXES:
        raise PrecometError(
            f"{{table}}{path}: the suffix says the format; give a .csv or .tex file name", param="table"
        )


def ranking_as_table(ranking: Ranking, path: str | Path) -> str:
    """The text of the table file ``path`` (its suffix picks CSV or LaTeX)."""
    check_table_path(path)
    return ranking_csv(ranking) if Path(path).suffix.lower() == ".csv" else ranking_latex(ranking)


def ranking_csv(ranking: Ranking) -> str:
    """One row per system: rank range, cluster, system (spreadsheet-safe: :func:`~precomet.io.text.spreadsheet_cell`),
    mean, interval, items rated (and the reweighted ones)."""
    reweighted = ranking.reweighted
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["rank", "cluster", "system", "mean", "ci_low", "ci_high", "n_rated"]
    if reweighted is not None:
        header += ["reweighted_mean", "reweighted_ci_low", "reweighted_ci_high"]
    writer.writerow(header)
    clusters = ranking.cluster_of()
    for i, (system, rank) in enumerate(zip(ranking.systems, ranking.rank_ranges())):
        row = [rank, int(clusters[i]), spreadsheet_cell(system), _number(ranking.means[i]), _number(ranking.ci_low[i])]
        row += [_number(ranking.ci_high[i]), int(ranking.n_rated[i])]
        if reweighted is not None:
            row += [_number(reweighted.means[i]), _number(reweighted.ci_low[i]), _number(reweighted.ci_high[i])]
        writer.writerow(row)
    return buffer.getvalue()


def ranking_latex(ranking: Ranking) -> str:
    """A booktabs ``table`` environment: rank, system, mean and interval (and the reweighted ones), a
    ``\\midrule`` between clusters, a caption saying the items, the interval and the cluster rule."""
    reweighted = ranking.reweighted
    level = f"{ranking.confidence:.0%}".replace("%", r"\%")
    columns = "rlrc" + ("rc" if reweighted is not None else "")
    head = ["Rank", "System", "Mean", f"{level} CI"] + (["Rew.\\ mean", f"Rew.\\ {level} CI"] if reweighted else [])
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\begin{{tabular}}{{{columns}}}",
        r"\toprule",
        " & ".join(head) + r" \\",
        r"\midrule",
    ]
    clusters = ranking.cluster_of()
    for i, (system, rank) in enumerate(zip(ranking.systems, ranking.rank_ranges())):
        if i and clusters[i] != clusters[i - 1]:
            lines.append(r"\midrule")
        cells = [
            rank,
            _latex(system),
            f"{ranking.means[i]:.3f}",
            f"[{ranking.ci_low[i]:.3f}, {ranking.ci_high[i]:.3f}]",
        ]
        if reweighted is not None:
            cells += [f"{reweighted.means[i]:.3f}", f"[{reweighted.ci_low[i]:.3f}, {reweighted.ci_high[i]:.3f}]"]
        lines.append(" & ".join(cells) + r" \\")
    signature = ranking.signature
    rule = "every member of the current cluster (WMT)" if ranking.cluster_rule == "wmt" else "the previous system"
    caption = (
        f"{len(ranking.systems)} systems ranked on {signature.get('items', '?')} items by mean"
        f" {_latex(str(signature.get('score', 'score')))}; {level} bootstrap intervals from {ranking.rounds} rounds;"
        f" clusters (separated by rules) by one-sided Wilcoxon tests against {rule}."
    )
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _latex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(char, char) for char in text)


def _number(value: float) -> str:
    return repr(float(value))
