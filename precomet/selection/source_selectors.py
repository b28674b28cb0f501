"""How the utilities of sources become a subset (``select --selector``, ``benchmark --selector``): one registry of
selectors, extended with :func:`register_selector` (docs/extending.md).

A selector is ``selector(utility, sources, *, seed, options) -> (budget -> utility)``: called once per ranking, it
returns, for each item budget, the utility whose ``budget`` highest items are selected. Built in: ``top`` (the
utility as it is) and ``strata`` (:func:`~precomet.selection.strata.stratified_utility` over source embeddings;
option ``encoder``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from precomet.errors import PrecometError
from precomet.registration import register
from precomet.selection.strata import strata_selector

SourceSelector = Callable[..., Callable[[int], np.ndarray]]
"""``selector(utility, sources, *, seed, options) -> (budget -> utility)``."""


def top(
    utility: np.ndarray, sources: Sequence[str], *, seed: int, options: Mapping[str, Any]
) -> Callable[[int], np.ndarray]:
    """The utility as it is, at every budget: its highest items are selected."""
    values = np.asarray(utility, dtype=float)
    return lambda budget: values


def strata(
    utility: np.ndarray, sources: Sequence[str], *, seed: int, options: Mapping[str, Any]
) -> Callable[[int], np.ndarray]:
    """The best of each k-means stratum of the sources' embeddings first (k = budget; option ``encoder``, default
    :data:`~precomet.selection.strata.DEFAULT_ENCODER`)."""
    return strata_selector(utility, sources, encoder=options.get("encoder"), seed=seed)


SELECTORS: dict[str, SourceSelector] = {"top": top, "strata": strata}
"""Every selector by name; the command line offers the built-in ones."""

DEFAULT_SELECTOR = "top"
"""Chosen on the dev campaign (WMT22 zh-en MQM, two halves by document; BENCHMARKS.md, "Source-based selection"):
for the shipped MetricAvg^src estimator top-k needs 35 % of random's budget, the strata 59 % (for MetricVar^src
the strata won, 49 % vs 56 %)."""


def register_selector(name: str, selector: SourceSelector, *, replace: bool = False) -> None:
    """Make ``selector`` available as ``name`` (the rule of :mod:`precomet.registration`)."""
    register(SELECTORS, name, selector, kind="selector", replace=replace)


def get_selector(name: str) -> SourceSelector:
    """The selector registered as ``name``."""
    if name not in SELECTORS:
        raise PrecometError(f"unknown selector {name!r}; registered: {', '.join(sorted(SELECTORS))}")
    return SELECTORS[name]
