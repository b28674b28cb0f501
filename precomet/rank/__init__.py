"""System ranking from human scores: the step after annotation ("close the loop").

:func:`rank_systems` turns an ``(items × systems)`` score matrix (typically the human scores of an annotated
subset) into a findings-paper ranking:

* **mean** score per system over the items rated for it (NaN = not rated, as every loader documents; with the
  loaders' default ``complete=True`` every kept item is rated for every system);
* **bootstrap confidence intervals**: items are resampled with replacement ``rounds`` times (seeded; one draw
  of item multiplicities per round shared by all systems, so the resampling is paired), a system's mean in a
  round is ``Σ count·score / Σ count·rated``; the interval is the percentile interval at ``confidence``;
* **significance clusters** (:func:`precomet.metaeval.clusters`): systems sorted by mean, one-sided Wilcoxon
  signed-rank tests on paired item differences (:func:`precomet.significance.wilcoxon_less`). ``cluster_rule``
  ``wmt`` (default) is what WMT findings papers print (mt-metrics-eval's ``AssignRanks``): a system opens a new
  cluster when any member of the current cluster is significantly better (``p ≤ alpha``); ``paper`` is the
  meta-evaluation's Algorithm 1: only the previous system is tested (``p < alpha``). With missing ratings each
  tested pair is compared on the items rated for both;
* **win probabilities**: ``win[a, b]`` = share of bootstrap rounds in which system ``a``'s mean is above
  ``b``'s, ties counted half (so ``win[a, b] + win[b, a] = 1``).

With ``test_set`` (the subset's test set), three additions that leave the numbers above untouched: the subset's
:class:`Composition` against it (domain shares, source length; material when the domain total variation exceeds
:data:`MAX_DOMAIN_TVD` or the mean-length ratio leaves :data:`LENGTH_RATIO_RANGE`), :class:`Reweighted`
post-stratified means (``reweight``: each stratum's subset mean weighted by its test-set share, bootstrap within
strata) and the :class:`FullAgreement` (Kendall τ-b and flipped system pairs) with the full-data ranking.

Vectorised: a chunk of rounds is one ``(rounds, N)`` count matrix (``bincount`` of uniform draws) times the
``(N, S)`` score matrix, so 1000 rounds on 100k items × 30 systems take about 1.7 s on 2 cores
(``benchmarks/bench_rank.py``).

The package, by concern: :mod:`~precomet.rank.bootstrap` (bootstrap means, win probabilities),
:mod:`~precomet.rank.clusters` (the Wilcoxon cluster tests, both rules), :mod:`~precomet.rank.ranking`
(:class:`Ranking`, :func:`rank_systems`), :mod:`~precomet.rank.composition`, :mod:`~precomet.rank.reweight`,
:mod:`~precomet.rank.agreement` (the full-data τ), :mod:`~precomet.rank.manifest` and
:mod:`~precomet.rank.report` (table, summary lines, figure).
"""

from precomet.rank.agreement import FullAgreement, full_data_agreement
from precomet.rank.bootstrap import bootstrap_means, win_probabilities
from precomet.rank.clusters import _cluster_tests as _cluster_tests
from precomet.rank.clusters import _pair_tests as _pair_tests
from precomet.rank.composition import LENGTH_RATIO_RANGE, MAX_DOMAIN_TVD, Composition, compare_composition
from precomet.rank.manifest import check_manifest, read_manifest
from precomet.rank.ranking import Ranking, rank_systems
from precomet.rank.report import plot_ranking, ranking_table, summary_lines
from precomet.rank.reweight import STRATIFIERS, Reweighted, reweighted_means

__all__ = [
    "LENGTH_RATIO_RANGE",
    "MAX_DOMAIN_TVD",
    "STRATIFIERS",
    "Composition",
    "FullAgreement",
    "Ranking",
    "Reweighted",
    "bootstrap_means",
    "check_manifest",
    "compare_composition",
    "full_data_agreement",
    "plot_ranking",
    "rank_systems",
    "ranking_table",
    "read_manifest",
    "reweighted_means",
    "summary_lines",
    "win_probabilities",
]
