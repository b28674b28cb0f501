"""How far scored sources lie from an estimator's training sources, so that it can say where it extrapolates.

At training time an estimator on a registered sentence encoder (``model.backbone``) summarises where its training
and dev sources lie in the encoder's space: :data:`CLUSTERS` k-means centres of their unit vectors and a ``radius``,
the cosine distance to the nearest centre within which :data:`QUANTILE` (99 %) of them lie. Both are written into
the checkpoint's ``head.safetensors`` as ``coverage.centroids`` and ``coverage.radius`` (:func:`write_coverage`;
optional: a checkpoint without them loads as before; checkpoints before 0.14 kept them in a ``coverage.safetensors``
beside the head, which is still read). ``predict`` and ``select --checkpoint`` measure the same distance for a
sample of the sources they score (:func:`report_coverage`; their vectors were just computed for the prediction, so
this costs nothing but the distances) and warn when at least :data:`FAR_SHARE` of them lie beyond the radius:
farther from every training cluster than 99 % of the training sources, where the estimator's utilities are
extrapolations. By construction about 1 % of sources like the training ones lie beyond it, hence a threshold of 5 %.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch

from precomet.encoders import SentenceEncoder, encode_cached
from precomet.errors import PrecometError
from precomet.estimator.checkpoint import COVERAGE_PREFIX, HEAD
from precomet.estimator.estimator import Estimator
from precomet.progress import progress

logger = logging.getLogger(__name__)

LEGACY = "coverage.safetensors"
"""Where checkpoints before 0.14 kept ``centroids`` (K x dim, float32) and ``radius`` (1 value)."""

CLUSTERS = 32
"""k-means centres that summarise the training sources (fewer when there are fewer distinct vectors)."""

QUANTILE = 0.99
"""Share of the training sources that lie within ``radius`` of their nearest centre."""

RADIUS_FLOOR = 1e-4
"""The smallest radius: cosine distances below it are float rounding, not distance (float32 centres; a source encoded
in another batch differs in its last digits). With no more distinct training sources than :data:`CLUSTERS`, each is
its own centre and the 99 % radius would be 0: every source, the training ones included, would lie "far"."""

FAR_SHARE = 0.05
"""The warning is given when at least this share of the scored sources lie beyond the radius."""

SAVED_EVERY = 250
"""Sampled sources encoded between two saves to the encoder cache: the sample comes before the first chunk of a
``predict``, so an interrupt then keeps what was encoded, as ``--chunk-size`` promises."""


def fit_coverage(vectors: np.ndarray, *, clusters: int = CLUSTERS, seed: int = 0) -> dict[str, np.ndarray]:
    """``{"centroids", "radius"}`` of the training vectors (rows; any scale: they are L2-normalised first)."""
    from precomet.utilities.cluster import fit_kmeans

    unit = _unit(np.asarray(vectors, dtype=np.float64))
    distinct = np.unique(unit, axis=0)
    if len(distinct) == 0:
        raise PrecometError("coverage: no training vectors")
    k = min(clusters, len(distinct))
    _, centres = fit_kmeans(distinct, k=k, seed=seed, n_init=1)
    centroids = _unit(centres)
    radius = max(float(np.quantile(nearest_distance(unit, centroids), QUANTILE)), RADIUS_FLOOR)
    return {"centroids": centroids.astype(np.float32), "radius": np.array([radius], dtype=np.float32)}


def nearest_distance(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Cosine distance of each vector (row) to its nearest centroid (unit rows)."""
    return 1.0 - (_unit(np.asarray(vectors, dtype=np.float64)) @ np.asarray(centroids, dtype=np.float64).T).max(axis=1)


def write_coverage(directory: Path, coverage: dict[str, np.ndarray]) -> None:
    """Add ``coverage`` to ``directory``'s ``head.safetensors`` (made if there is none) under ``coverage.``."""
    from safetensors.torch import load_file, save_file

    path = directory / HEAD
    tensors = load_file(str(path)) if path.is_file() else {}
    tensors = {k: v for k, v in tensors.items() if not k.startswith(COVERAGE_PREFIX)}
    tensors |= {COVERAGE_PREFIX + k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in coverage.items()}
    save_file(tensors, str(path))


def read_coverage(directory: Path | None) -> dict[str, np.ndarray] | None:
    """The checkpoint's coverage, or ``None`` when it has none; a damaged file is an error naming it."""
    if directory is None:
        return None
    from safetensors import safe_open

    path = directory / HEAD
    found: dict[str, np.ndarray] = {}
    try:
        if path.is_file():
            with safe_open(str(path), framework="numpy") as tensors:
                names = [k for k in tensors.keys() if k.startswith(COVERAGE_PREFIX)]  # noqa: SIM118 -- no __iter__
                found = {k.removeprefix(COVERAGE_PREFIX): tensors.get_tensor(k) for k in names}
        if not found and (directory / LEGACY).is_file():
            path = directory / LEGACY
            with safe_open(str(path), framework="numpy") as tensors:
                found = {k: tensors.get_tensor(k) for k in tensors.keys()}  # noqa: SIM118 -- no __iter__
    except Exception as err:  # safetensors raises its own error types for a damaged file
        raise PrecometError(f"{path}: not a readable safetensors file ({err}); the checkpoint is damaged") from None
    if not found:
        return None
    centroids, radius = found.get("centroids"), found.get("radius")
    if (
        centroids is None
        or radius is None
        or centroids.ndim != 2
        or radius.shape != (1,)
        or not np.isfinite(centroids).all()
        or not (np.isfinite(radius).all() and 0 <= float(radius[0]) <= 2)
    ):
        raise PrecometError(f"{path}: expected 'centroids' (K x dim) and 'radius' (one distance in [0, 2])")
    return {"centroids": centroids, "radius": radius}


def far_share(vectors: np.ndarray, coverage: dict[str, np.ndarray]) -> float:
    """Share of ``vectors`` farther from every training centre than ``radius``."""
    if len(vectors) == 0:
        return 0.0
    return float((nearest_distance(vectors, coverage["centroids"]) > float(coverage["radius"][0])).mean())


def coverage_warning(share: float, scored: int, *, what: str = "the estimator") -> str | None:
    """The warning line when ``share`` (of ``scored`` sources, a sample when there are more) reaches
    :data:`FAR_SHARE`, else ``None``."""
    if share < FAR_SHARE:
        return None
    return (
        f"{100 * share:.0f} % of the sources scored by {what} (of {scored:,} measured) lie farther from its training"
        f" sources than {100 * QUANTILE:.0f} % of those do (cosine distance to the nearest of its training clusters):"
        " its utilities there are extrapolations"
    )


def report_coverage(estimator: Estimator, sources: list[str], *, what: str) -> dict[str, Any] | None:
    """Measure and, where it applies, warn (see the module docstring) for ``sources`` (a sample of the scored
    ones); ``None`` for an estimator without a coverage (one trained before coverages, or whose encoder was
    fine-tuned)."""
    coverage = read_coverage(estimator.path)
    if coverage is None or not sources:
        return None
    vectors = encode_sample(estimator.reader.encoder, sources)
    if vectors.shape[1] != coverage["centroids"].shape[1]:
        raise PrecometError(
            f"{estimator.path}/{HEAD}: centroids of dimension {coverage['centroids'].shape[1]}, but the encoder"
            f" gives {vectors.shape[1]}"
        )
    share = far_share(vectors, coverage)
    message = coverage_warning(share, len(sources), what=what)
    if message:
        logger.warning(message)
    return {"far_share": round(share, 4), "measured": len(sources), "radius": float(coverage["radius"][0])}


def encode_sample(encoder: SentenceEncoder, sources: list[str]) -> np.ndarray:
    """The vectors of ``sources``, saved to the encoder cache every :data:`SAVED_EVERY` of them, with a bar counted
    in sources."""
    parts = []
    bar = progress(total=len(sources), desc="embedding sources to compare with the training sources", unit="source")
    with bar:
        for start in range(0, len(sources), SAVED_EVERY):
            parts.append(encode_cached(encoder, sources[start : start + SAVED_EVERY], progress=False))
            bar.update(len(parts[-1]))
    return np.concatenate(parts) if parts else np.empty((0, encoder.dim), dtype=np.float32)


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)
