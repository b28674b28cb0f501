"""Selectors that return representatives rather than a ranking: :func:`weighted_kmeans` (k-means centres' nearest
items with their cluster sizes as weights) and :func:`diffuse_select` (DiffUse's representatives of the Ward tree of
output differences, largest cluster first). Their utilities and trees live in :mod:`precomet.utilities`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.utilities.cluster import KMEANS_OPTIONS, item_vectors, kmeans_representatives
from precomet.utilities.diffuse import campaign_tree
from precomet.utilities.embed import Encoder


def weighted_kmeans(
    campaign: Campaign, *, budget: int, on: str = "src", seed: int = 0, options: Mapping[str, Any] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted k-means selection (seed 002 App. A): ``budget`` representatives and their weights (cluster sizes,
    summing to N), on source (``on="src"``) or output (``on="tgt"``) embeddings. The weights belong to the
    evaluation (each representative's scores count as many times as its cluster has items; see
    :func:`precomet.metaeval.evaluate_weighted`), so this is a selector, not a utility."""
    opts = {**KMEANS_OPTIONS, **dict(options or {})}
    if on not in ("src", "tgt"):
        raise PrecometError(f"weighted k-means: on must be 'src' or 'tgt', got {on!r}")
    if not 1 <= int(budget) <= len(campaign):
        raise PrecometError(f"weighted k-means: budget must be in 1..{len(campaign)}, got {budget}")
    vectors = item_vectors(campaign, on, opts)
    chosen, weights, _ = kmeans_representatives(vectors, budget=int(budget), seed=seed, n_init=int(opts["n_init"]))
    return chosen, weights


def diffuse_select(
    campaign: Campaign,
    *,
    budget: int,
    systems: Sequence[str] | None = None,
    encoder: Encoder = None,
    cache_dir: str | Path | None = None,
    embeddings: np.ndarray | None = None,
) -> np.ndarray:
    """Indices of the ``budget`` DiffUse representatives (largest cluster first) for ``systems`` (default all)."""
    if not 1 <= budget <= len(campaign):
        raise PrecometError(f"budget must be between 1 and the item count {len(campaign)}, got {budget}")
    tree = campaign_tree(campaign, systems=systems, encoder=encoder, cache_dir=cache_dir, embeddings=embeddings)
    return tree.select(budget)
