"""Selection, in one place: :func:`select_subset` builds the subset to annotate (top-k, or the certified 0-1 knapsack
with cost, domain balance and documents) and :func:`write_subset` writes its files.

The modules, by concern: :mod:`~precomet.selection.subset` (:func:`select_subset`, its options
:class:`SubsetPlan`, :class:`Selection`),
:mod:`~precomet.selection.units` (items or documents, budgets), :mod:`~precomet.selection.objective` (the cost-aware
objective), :mod:`~precomet.selection.knapsack` (the ILP), :mod:`~precomet.selection.strata` (source-embedding
strata), :mod:`~precomet.selection.selector` (top-k or the subset builder at a budget proportion, for benchmarks
and waves), :mod:`~precomet.selection.representatives` (weighted k-means and DiffUse representatives),
:mod:`~precomet.selection.random_fill` and :mod:`~precomet.selection.subset_file` (the subset JSONL, its manifest
and the annotation batch).
"""

from precomet.selection.subset import Selection, SubsetPlan, select_subset
from precomet.selection.subset_file import subset_manifest_path, write_subset

__all__ = ["Selection", "SubsetPlan", "select_subset", "subset_manifest_path", "write_subset"]
