"""What every prediction checks about its sources, in one order, for ``predict`` and ``select``: sources the
estimator was trained on (a warning, or with ``strict`` an error, before any model is loaded), languages it was not
trained on, and sources far from its training sources (coverage). :func:`screen_sources` does the first two from the
metadata alone over chunks of a pool; :func:`predict_utilities` does all three and predicts sources in memory."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from precomet.estimator.coverage import report_coverage
from precomet.estimator.estimator import Estimator
from precomet.estimator.languages import SourceSample, report_languages
from precomet.estimator.metadata import CheckpointMeta
from precomet.estimator.pool import Chunk, PoolScan, predict_in_chunks, scan_pool


@dataclass(frozen=True)
class Screening:
    """The sources' checks: the pool scan (count, hashes, sources seen in training), the language profile of a
    sample of them, that sample, and (once an estimator is loaded) how many of the sample lie far from training."""

    scan: PoolScan
    languages: dict[str, Any]
    sample: list[str]
    coverage: dict[str, Any] | None = None

    def report(self) -> dict[str, Any]:
        """The checks as a command's signature records them."""
        return {
            "seen_in_training": self.scan.seen_in_training,
            "source_languages": self.languages,
            "source_coverage": self.coverage,
        }


def screen_sources(chunks: Iterable[Chunk], *, meta: CheckpointMeta, strict: bool, what: str, where: str) -> Screening:
    """One pass over ``chunks``: count and hash the sources, check them against the training-source fingerprint of
    ``meta`` (read at ``where``; seen sources warn, or with ``strict`` raise) and profile the languages of a sample
    (languages ``what`` was not trained on warn)."""
    sample = SourceSample()
    scan = scan_pool(sample.follow(chunks), meta=meta, strict=strict, what=what, where=where)
    languages = sample.profile()
    report_languages(meta.as_dict(), languages, what=what)
    return Screening(scan=scan, languages=languages, sample=sample.sources)


def with_coverage(screening: Screening, estimator: Estimator, *, what: str) -> Screening:
    """``screening`` with the coverage of its sample by ``estimator`` (a warning from 5 % far; the sample's vectors
    are then in the in-process cache for the prediction)."""
    return replace(screening, coverage=report_coverage(estimator, screening.sample, what=what))


def predict_utilities(
    estimator: Estimator,
    ids: Sequence[Any] | np.ndarray,
    sources: Sequence[str] | np.ndarray,
    *,
    strict: bool,
    what: str,
    where: str,
) -> tuple[np.ndarray, Screening]:
    """The utilities of ``sources`` (in memory) after every check of :func:`screen_sources` and the coverage."""
    chunk = (list(ids), [str(source) for source in sources])
    screening = screen_sources([chunk], meta=estimator.meta, strict=strict, what=what, where=where)
    screening = with_coverage(screening, estimator, what=what)
    return predict_in_chunks(estimator, chunk[1]), screening
