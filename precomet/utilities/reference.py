"""Reference-based sentence scores computed in-house, for campaigns that ship outputs and a reference but
no metric scores (e.g. the WMT release layout): sentence chrF or BLEU of every output against the
reference, equal to sacrebleu's ``sentence_chrf`` / ``sentence_bleu`` (same vectorised n-gram statistics
as the diversity utility). With such a score, the metric utilities (metric_avg, metric_var, metric_cons)
run on output-only history, so source-based estimators can distil them."""

from __future__ import annotations

from typing import cast

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.utilities.diversity import output_matrix
from precomet.utilities.ngrams import pairwise_similarity

REFERENCE_METRICS = {"chrf": "chrF", "bleu": "BLEU"}
"""Metric kind -> the score name it is stored under (the mt-metrics-eval names of the same metrics)."""


def reference_scores(campaign: Campaign, kind: str = "chrf") -> np.ndarray:
    """``(N, S)`` sentence scores (0-100) of every system's output against ``campaign.ref``."""
    if kind not in REFERENCE_METRICS:
        raise PrecometError(f"unknown reference metric {kind!r}; valid: {', '.join(REFERENCE_METRICS)}")
    if campaign.ref is None:
        raise PrecometError(
            f"campaign {campaign.name!r} has no reference: {REFERENCE_METRICS[kind]} cannot be computed"
        )
    texts = np.concatenate([output_matrix(campaign), np.asarray(campaign.ref, dtype=object)[:, None]], axis=1)
    sim = pairwise_similarity(texts, kind)  # sim[i, a, b]: a as hypothesis, b as reference
    return 100.0 * sim[:, :-1, -1]


def with_reference_score(campaign: Campaign, kind: str = "chrf") -> Campaign:
    """The campaign with :func:`reference_scores` added under ``REFERENCE_METRICS[kind]``; a campaign that
    already has that score (e.g. from mt-metrics-eval) is returned unchanged."""
    name = REFERENCE_METRICS.get(kind)
    if name in campaign.scores:
        return campaign
    # an unknown kind (name None) is rejected by reference_scores before with_scores runs
    return campaign.with_scores(cast(str, name), reference_scores(campaign, kind))
