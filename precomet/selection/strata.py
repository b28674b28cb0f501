"""Coverage plus utility, for source-based selection: k-means strata of the source embeddings, the best
predicted item of each stratum first. A selector that spreads the budget over the kinds of source cannot
do much worse than random even when the predicted utility is weak (seed 002 App. A's k-means is the
coverage-only case; top-k on the prediction the utility-only case)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from precomet.errors import PrecometError
from precomet.stats import rankdata
from precomet.utilities.embed import DEFAULT_ENCODERS, Encoder, embed_texts

DEFAULT_PER_STRATUM = 1
"""Items taken from each stratum (k = ceil(budget / per_stratum) strata); chosen on dev, BENCHMARKS.md."""


def stratified_utility(
    predicted: np.ndarray,
    vectors: np.ndarray,
    *,
    budget: int,
    per_stratum: int = DEFAULT_PER_STRATUM,
    seed: int = 0,
    n_init: int = 3,
) -> np.ndarray:
    """A utility whose top-``budget`` items are the ``per_stratum`` best-predicted items of each of
    ``ceil(budget / per_stratum)`` k-means strata of ``vectors`` (``N × d``), best strata representatives
    first; the remaining items follow in order of ``predicted``. Values: chosen ``1 + r``, others ``r``, with
    ``r`` = the predicted utility's rank scaled to [0, 1)."""
    predicted = np.asarray(predicted, dtype=float)
    vectors = np.asarray(vectors, dtype=float)
    n = len(predicted)
    if vectors.ndim != 2 or len(vectors) != n:
        raise PrecometError(f"strata: {n} predicted utilities but vectors of shape {vectors.shape}")
    if not np.isfinite(predicted).all():
        raise PrecometError("strata: predicted utilities must be finite")
    if not 1 <= int(budget) <= n:
        raise PrecometError(f"strata: budget must be in 1..{n}, got {budget}")
    if int(per_stratum) < 1:
        raise PrecometError(f"strata: per_stratum must be >= 1, got {per_stratum}")
    from precomet.utilities.cluster import fit_kmeans

    k = min(n, math.ceil(int(budget) / int(per_stratum)))
    labels, _ = fit_kmeans(vectors, k=k, seed=seed, n_init=n_init)
    r = (rankdata(predicted) - 1) / n
    chosen = np.zeros(n, dtype=bool)
    for c in range(k):
        members = np.flatnonzero(labels == c)
        chosen[members[np.argsort(-r[members], kind="stable")[:per_stratum]]] = True
    extra = int(chosen.sum()) - int(budget)  # ceil may give a few too many: drop the lowest predicted of them
    if extra > 0:
        picked = np.flatnonzero(chosen)
        chosen[picked[np.argsort(r[picked], kind="stable")[:extra]]] = False
    return r + chosen


DEFAULT_ENCODER = DEFAULT_ENCODERS["strata"]
"""Source embeddings for the strata: multilingual, offline (declared in
:data:`precomet.utilities.embed.DEFAULT_ENCODERS`)."""


def strata_selector(
    predicted: np.ndarray,
    sources: Sequence[str],
    *,
    encoder: Encoder = None,
    per_stratum: int = DEFAULT_PER_STRATUM,
    cache_dir: str | Path | None = None,
    seed: int = 0,
    progress: bool | None = None,
) -> Callable[[int], np.ndarray]:
    """``budget -> utility`` of :func:`stratified_utility` with the sources embedded once through
    :func:`~precomet.utilities.embed.embed_texts` (``encoder=None``: :data:`DEFAULT_ENCODER`)."""
    vectors = embed_texts(list(sources), encoder=encoder, use="strata", cache_dir=cache_dir, progress=progress)
    if len(vectors) != len(predicted):
        raise PrecometError(f"strata: {len(predicted)} predicted utilities for {len(vectors)} sources")
    return lambda budget: stratified_utility(predicted, vectors, budget=budget, per_stratum=per_stratum, seed=seed)
