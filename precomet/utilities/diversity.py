"""Output diversity (paper Eq. 6): how different the systems' outputs for an item are.

``diversity(i) = 1 - mean over distinct ordered system pairs (a ≠ b) of sim(out_a, out_b)``, with
similarities in [0, 1]. This is Eq. 6 negated and shifted by the constant 1, so the ranking is the
paper's and identical outputs give exactly 0. Similarities (``similarity`` option):

* ``embedding`` (default) — cosine of sentence embeddings (offline all-MiniLM-L6-v2, or ``encoder``);
* ``chrf`` / ``bleu`` — sacrebleu sentence chrF / BLEU divided by 100 (exact, vectorised: :mod:`.ngrams`);
  both directions of each pair are averaged, as the metrics are asymmetric;
* ``unigram`` — Dice–Sørensen coefficient of the whitespace-token multisets.

Differences from subset2evaluate 1.0.27: it averages over all |M|² pairs including the a = b self-pairs
(its value = ``((S-1)·ours_sim + self_sim) / S`` with self_sim = 100 for non-empty outputs) and
negates without the shift; its unigram Dice gives 1 when either output is empty (ours: 1 only when both are).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.utilities.embed import EMBED_OPTIONS, embed_texts
from precomet.utilities.ngrams import SIMILARITIES, pairwise_similarity

log = logging.getLogger(__name__)

SIMILARITY_NAMES = ("embedding", *SIMILARITIES)
OPTIONS = {"similarity": "embedding", **EMBED_OPTIONS}


def diversity(
    campaign: Campaign, *, metric: str | None, budget: int | None, seed: int, options: Mapping[str, Any]
) -> np.ndarray:
    """``1 - mean pairwise similarity`` of the outputs of every item (see the module docstring)."""
    kind = options["similarity"]
    if kind not in SIMILARITY_NAMES:
        raise PrecometError(f"diversity: unknown similarity {kind!r}; valid: {', '.join(SIMILARITY_NAMES)}")
    outputs = output_matrix(campaign)
    if kind == "embedding":
        vectors = embed_texts(
            list(outputs.ravel()),
            encoder=options["encoder"],
            cache_dir=options["cache_dir"],
            batch_size=options["batch_size"],
            device=options["device"],
        ).reshape(*outputs.shape, -1)
        return 1.0 - mean_pairwise_cosine(vectors)
    sim = pairwise_similarity(outputs, kind)
    n = outputs.shape[1]
    off_diagonal = sim.sum(axis=(1, 2)) - np.trace(sim, axis1=1, axis2=2)
    return 1.0 - off_diagonal / (n * (n - 1))


def mean_pairwise_cosine(vectors: np.ndarray) -> np.ndarray:
    """Mean over distinct pairs of the dot products of unit vectors ``(N, S, d)``:
    ``(|Σ v|² - Σ |v|²) / (S (S - 1))`` (identical texts: 1 up to rounding)."""
    n = vectors.shape[1]
    total = vectors.sum(axis=1)
    self_dots = (vectors**2).sum(axis=(1, 2))
    mean = ((total**2).sum(axis=1) - self_dots) / (n * (n - 1))
    return np.clip(mean, -1.0, 1.0)


def output_matrix(campaign: Campaign) -> np.ndarray:
    """``N × S`` object array of outputs; raises naming the systems without outputs or the first missing one."""
    absent = [s for s in campaign.systems if s not in campaign.outputs]
    if absent:
        raise PrecometError(f"diversity needs outputs; campaign {campaign.name!r} has none for system(s) {absent}")
    matrix = np.empty((len(campaign), len(campaign.systems)), dtype=object)
    for j, system in enumerate(campaign.systems):
        matrix[:, j] = campaign.outputs[system]
    missing = matrix == None  # noqa: E711 -- element-wise on an object array
    if missing.any():
        item, system = np.argwhere(missing)[0]
        raise PrecometError(
            f"diversity: item {campaign.ids[item]!r} has no output for system {campaign.systems[system]!r}"
            f" ({int(missing.any(axis=1).sum())} item(s) lack an output, of system(s)"
            f" {[s for s, gap in zip(campaign.systems, missing.any(axis=0)) if gap]}); restrict the systems to those"
            " with every output, or leave those items out of the input"
        )
    return matrix
